/* What the Slurm executor checks before a job (exec_slurm.c):
 *
 * - the task's srun options: none that would break the contract;
 * - slurmctld answers `scontrol ping`: an unreachable controller is a
 *   clear failure at once, not a hang;
 * - the site's SrunProlog, from `scontrol show config` after a good ping
 *   (on a dead controller show config retries for ~9 s where ping answers
 *   at once). taskfs's own prolog (`srun --prolog`, which would replace the
 *   site's) hands the supervisor the job's id; a site that has a prolog of
 *   its own keeps it, and the supervisor asks squeue instead.
 *
 * Both answers are trusted for CHECK_FRESH_MS by every supervisor of the
 * store: STORE/.slurm-checked holds what they were for (the SLURM_CONF
 * path, that file's inode and mtime) and the site's SrunProlog, and its own
 * mtime says when. A start within that time skips both (a client's fork
 * and exec and a round trip to slurmctld each); another SLURM_CONF, or the
 * file edited, asks again. A controller that went down meanwhile is still
 * told: srun fails, and the squeue that follows names it.
 */
#include "supervisor/slurm.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Options that would break the contract: output to files on the node
 * (nothing would stream), a pty or stdin, labels, our job name. */
static const char *const refused[] = {
    "-o",           "--output",    "-e",      "--error", "-i",         "--input",
    "--pty",        "-l",          "--label", "-J",      "--job-name", "-u",
    "--unbuffered", "--test-only", "-Q",      "--quiet", "--jobid",    NULL};

int sup_slurm_options_check(char *const *opts, char *why, size_t whylen) {
  for (int i = 0; opts && opts[i]; i++) {
    const char *o = opts[i];
    if (o[0] != '-' || !strcmp(o, "-") || !strcmp(o, "--")) {
      snprintf(why, whylen,
               "'%.100s' is not an srun option: give each option with its value in one "
               "argument, as --partition=debug or -pdebug",
               o);
      return -EINVAL;
    }
    for (int r = 0; refused[r]; r++) {
      size_t n = strlen(refused[r]);
      int long_opt = refused[r][1] == '-';
      if (!strncmp(o, refused[r], n) && (o[n] == 0 || (long_opt ? o[n] == '=' : 1))) {
        snprintf(why, whylen,
                 "srun option '%.100s' is taskfs's to set: the output streams back, the "
                 "job is named after the task",
                 o);
        return -EINVAL;
      }
    }
  }
  return 0;
}

#define CHECK_FRESH_MS 30000
#define CHECK_STAMP ".slurm-checked"

const char *sup_slurm_last_line(char *text) {
  char *end = text + strlen(text);
  while (end > text && end[-1] == '\n')
    *--end = 0;
  char *nl = strrchr(text, '\n');
  return nl ? nl + 1 : text;
}

static void check_key(char *const *env, char *key, size_t size) {
  const char *conf = "/etc/slurm/slurm.conf";
  for (size_t i = 0; env[i]; i++)
    if (!strncmp(env[i], "SLURM_CONF=", 11))
      conf = env[i] + 11;
  struct stat st;
  if (stat(conf, &st))
    memset(&st, 0, sizeof st);
  snprintf(key, size, "%s %llu %lld.%09ld\n", conf, (unsigned long long)st.st_ino,
           (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/* 1 if the stamp is ours, fresh and for key; then prolog is the site's
 * SrunProlog it holds ("" for none). */
static int check_fresh(sup_t *s, const char *key, char *prolog, size_t len) {
  char path[PATH_MAX], got[PATH_MAX + 64], line[PATH_MAX + 16];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", tfs_store_path(s->store), CHECK_STAMP);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int ok = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
           tfs_now_ms() - ((int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000) <
               CHECK_FRESH_MS &&
           fgets(got, sizeof got, f) && !strcmp(got, key) && fgets(line, sizeof line, f) &&
           !strncmp(line, "SrunProlog=", 11);
  fclose(f);
  if (ok) {
    line[strcspn(line, "\n")] = 0;
    snprintf(prolog, len, "%s", line + 11);
  }
  return ok;
}

/* Written whole (a temp file renamed over it): a reader never sees half. */
static void check_remember(sup_t *s, const char *key, const char *prolog) {
  char path[PATH_MAX], tmp[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", tfs_store_path(s->store), CHECK_STAMP);
  snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wxe");
  if (!f)
    return;
  int ok = fprintf(f, "%sSrunProlog=%s\n", key, prolog) >= 0;
  if (fclose(f) || !ok || rename(tmp, path))
    unlink(tmp);
}

/* SrunProlog in `scontrol show config` ("SrunProlog   = /path", or
 * "(null)" for none) into prolog; -1 if the config does not say. */
static int site_prolog(const char *config, char *prolog, size_t len) {
  for (const char *l = config; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, "SrunProlog", 10) || (l[10] != ' ' && l[10] != '='))
      continue;
    const char *v = l + 10 + strspn(l + 10, " =");
    size_t n = strcspn(v, "\n");
    if (n == 6 && !strncmp(v, "(null)", 6))
      n = 0;
    snprintf(prolog, len, "%.*s", (int)n, v);
    return 0;
  }
  return -1;
}

int sup_slurm_check(sup_t *s, const char *scontrol, char *const *env, char *prolog, size_t len,
                    char *why, size_t whylen) {
  char key[PATH_MAX + 64];
  check_key(env, key, sizeof key);
  if (check_fresh(s, key, prolog, len))
    return 0;
  static char out[32768]; /* show config is ~7 KB */
  char *ping[] = {(char *)scontrol, "ping", NULL};
  int rc = sup_command(ping, env, SUP_SLURM_HELPER_MS, out, sizeof out);
  if (rc != 0) {
    snprintf(why, whylen, "%s",
             rc == -ETIMEDOUT ? "no answer within 3 s" : sup_slurm_last_line(out));
    return -1;
  }
  char *show[] = {(char *)scontrol, "show", "config", NULL};
  if (sup_command(show, env, SUP_SLURM_HELPER_MS, out, sizeof out) != 0 ||
      site_prolog(out, prolog, len) < 0) {
    /* Unknown: the site's prolog, if any, runs (no taskfs prolog); asked
     * again at the next start. */
    snprintf(prolog, len, "?");
    return 0;
  }
  check_remember(s, key, prolog);
  return 0;
}
