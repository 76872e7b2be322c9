/* taskfs: small text mechanisms every library shares (part of libtaskfs.a):
 * signal names, environment variable names, the worker's environment, and
 * boolean switches read from the environment. One definition each, so two
 * faces can never spell or check the same thing differently.
 */
#ifndef TASKFS_TEXT_H
#define TASKFS_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- UTF-8 (core/utf8.c) ---------------------------------------------- */

/* Returns a malloc'ed, NUL-terminated copy of s[0..len) that is valid UTF-8:
 * each invalid byte (and each NUL byte) becomes U+FFFD. *out_len (may be
 * NULL) gets the new length. NULL only when out of memory. */
char *tfs_utf8_sanitize(const char *s, size_t len, size_t *out_len);
/* Where to cut s[0..len) to keep at most max bytes without splitting a
 * character: len if it fits, else max, or the start of the valid UTF-8
 * character that max falls inside (invalid bytes are cut anywhere: each is
 * a U+FFFD of its own once sanitized). Reads s[0..len) only. */
size_t tfs_utf8_cut(const char *s, size_t len, size_t max);

/* ---- signal names (core/signame.c) ----------------------------------- */

/* Bytes a signal name needs, the NUL included. */
#define TFS_SIGNAME_MAX 32

/* The name of signal sig in buf, returned: "SIGTERM"; a real-time signal
 * as kill -l spells it ("SIGRTMIN", "SIGRTMIN+3", "SIGRTMAX-2",
 * "SIGRTMAX"); any other number "SIG<n>" ("SIG32", "SIG77"). Every result
 * is read back by tfs_signal_parse. */
const char *tfs_signal_name(int sig, char buf[TFS_SIGNAME_MAX]);

/* The number of the signal s names, in any case, with or without "SIG":
 * "TERM", "SIGTERM", "sigterm", "15", "SIG15", "RTMIN+3", and the aliases
 * IOT, CLD, IO, POLL. Returns 1 .. NSIG - 1, or -EINVAL (unknown name, 0,
 * a number out of range, trailing bytes). */
int tfs_signal_parse(const char *s);

/* ---- environment names (core/envname.c) ------------------------------ */

/* Length of NAME in the "NAME=VALUE" s, or 0 if s (may be NULL) is not of
 * that form. A name is a shell name: a letter or '_', then letters,
 * digits and '_'. */
size_t tfs_env_name_len(const char *s);

/* 1 if the whole of name is a shell name (as above, with no '='), else 0. */
int tfs_env_name_valid(const char *name);

/* A new NULL-terminated array of borrowed pointers (free the array only):
 * base with each "NAME=VALUE" of over replacing the entry of the same
 * name, or added; of two overrides of one name the later wins. base and
 * over may be NULL. Returns 0, -EINVAL if an override is not NAME=VALUE,
 * or -ENOMEM. */
int tfs_env_merge(char *const *base, char *const *over, char ***out);

/* An on/off switch in the environment: 1 if the variable is set to
 * anything but "" or "0", else 0 (TASKFS_NO_INOTIFY=1 is on, =0 is off). */
int tfs_env_flag(const char *name);

/* ---- base64 (core/base64.c) ------------------------------------------- */

/* Standard padded base64 of s[0..len) (malloc'ed), and its strict inverse:
 * padding required, no whitespace, a decoded NUL refused; NULL when
 * malformed (or out of memory). */
char *tfs_b64_encode(const char *s, size_t len);
char *tfs_b64_decode(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_TEXT_H */
