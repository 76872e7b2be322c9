/* How listings look on a terminal (cli/ls_view.c). */
#ifndef TASKFS_CLI_LS_VIEW_H
#define TASKFS_CLI_LS_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "taskfs/taskfs.h"

enum { CLI_COLOR_AUTO = 0, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER };
#define CLI_COLOR_OFF "\033[0m"

/* --color=auto|always|never; 0 or -1. */
int cli_color_parse(const char *arg, int *mode);
/* The word of mode i ("auto", "always", "never"), "unknown" past the last:
 * what the completions offer. */
const char *cli_color_name(unsigned i);
/* Whether to colour what goes to fd. */
int cli_color_on(int mode, int fd);
/* The terminal's width, 0 when fd is no terminal. */
size_t cli_term_cols(int fd);
/* The colour a state is shown in. */
const char *cli_state_color(tfs_state_t s);
/* Columns s takes (one per code point). */
size_t cli_text_cols(const char *s);
/* s in width columns (0: no limit): cut with "…" when longer; with pad,
 * filled with spaces (on the left when right-aligned). */
void cli_put_cell(FILE *out, const char *s, size_t width, int pad, int right);
/* A row's time: "45s ago", "12m ago", "3h ago", "9d ago"; absolute: local
 * "2026-12-01 18:04:05"; "-" for none. */
void cli_fmt_when(int64_t ms, int64_t now, int absolute, char *buf, size_t len);

#endif
