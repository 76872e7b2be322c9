/* The Slurm executor: the worker is `srun --unbuffered --quiet
 * --job-name=taskfs-<id>.<attempt> [options] -- CMD...`, so the job's
 * stdout and stderr come back on the worker's pipes as a local command's
 * do, and everything above the executor (transcript, important lines,
 * follow, restarts) is unchanged. What srun does not tell, the controller
 * does (squeue while it runs, scontrol at its end); facts behind the
 * choices are in docs/scale.md.
 *
 * - spawn: srun and the clients on PATH, `scontrol ping` (an unreachable
 *   slurmctld is a clear failure, not a hang), srun's environment without
 *   an inherited allocation (SLURM_JOB_ID would make the task a step of
 *   the caller's job), and the sentinel's `scancel --name --user`.
 * - started: the task stays queued; squeue by job name every POLL_FIRST_MS
 *   until the job shows up, then every POLL_PENDING_MS while it pends
 *   (the record shows Slurm's reason), until it runs.
 * - stop: srun turns a SIGTERM into a SIGKILL of the step, so a running
 *   job gets `scancel --signal=TERM` (the task's own SIGTERM, the grace
 *   is ours); a pending one is revoked by SIGTERM to srun. After the
 *   grace: SIGTERM to srun and `scancel`; later SIGKILL and `scancel`.
 * - describe: `scontrol show job` for the job's end: its exit code or
 *   signal (srun folds a signal into 128+N), and a failure for an end
 *   Slurm chose (time limit, node failure, someone's scancel) even when
 *   srun said 0.
 *
 * The helpers block the loop for their few milliseconds (command.c),
 * bounded by HELPER_MS.
 */
#include "supervisor/sup.h"
#include "taskfs/text.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define POLL_FIRST_MS 100    /* until the job shows up in squeue */
#define POLL_PENDING_MS 1000 /* while it pends */
#define HELPER_MS 3000       /* the longest a client may take */
#define GONE_WAIT_MS 10000   /* after a stop: the job leaving squeue */
#define KILL_AFTER_ROUNDS 20 /* SIGKILL this many kill rounds after the grace */

/* One supervisor runs one task: its job's state lives here. */
static struct {
  char name[96]; /* taskfs-<id>.<attempt> */
  char uid[24];
  char srun[512], squeue[512], scancel[512], scontrol[512];
  char *argv_buf[4]; /* owned pieces of the argv */
  char **argv, **env;
  char *sentinel[5];
  char sentinel_name[112], sentinel_user[40];
  uv_timer_t poll;
  int poll_init;
  int seen;    /* squeue showed the job */
  int running; /* it started on a node */
} sl;

/* ---- options ------------------------------------------------------------ */

/* Options that would break the contract: output to files on the node
 * (nothing would stream), a pty or stdin, labels, our job name. */
static const char *const refused[] = {
    "-o", "--output", "-e", "--error", "-i", "--input", "--pty", "-l", "--label", "-J",
    "--job-name", "-u", "--unbuffered", "--test-only", "-Q", "--quiet", "--jobid", NULL};

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

/* ---- spawn -------------------------------------------------------------- */

/* srun's environment: ours (with the task's overrides) without the
 * SLURM_* variables of an allocation we may run in, keeping SLURM_CONF
 * and any the task set on purpose. */
static char **clean_env(sup_t *s) {
  char **from = s->worker_env ? s->worker_env : environ;
  size_t n = 0;
  while (from[n])
    n++;
  char **env = calloc(n + 1, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int keep = strncmp(from[i], "SLURM_", 6) || !strncmp(from[i], "SLURM_CONF=", 11);
    for (int j = 0; !keep && s->rec.env_names && s->rec.env_names[j]; j++) {
      size_t l = strlen(s->rec.env_names[j]);
      keep = !strncmp(from[i], s->rec.env_names[j], l) && from[i][l] == '=';
    }
    if (keep)
      env[k++] = from[i];
  }
  return env;
}

static void free_spawn(void) {
  free(sl.argv);
  free(sl.env);
  for (size_t i = 0; i < sizeof sl.argv_buf / sizeof *sl.argv_buf; i++)
    free(sl.argv_buf[i]);
  memset(sl.argv_buf, 0, sizeof sl.argv_buf);
  sl.argv = sl.env = NULL;
}

/* srun --unbuffered --quiet --job-name=NAME OPTIONS... -- CMD... */
static int make_argv(sup_t *s) {
  int nopt = s->rec.exec.noptions, n = 0;
  sl.argv = calloc((size_t)(nopt + s->rec.argc + 6), sizeof *sl.argv);
  if (!sl.argv || asprintf(&sl.argv_buf[0], "--job-name=%s", sl.name) < 0)
    return -ENOMEM;
  sl.argv[n++] = sl.srun;
  sl.argv[n++] = "--unbuffered";
  sl.argv[n++] = "--quiet";
  sl.argv[n++] = sl.argv_buf[0];
  for (int i = 0; i < nopt; i++)
    sl.argv[n++] = s->rec.exec.options[i];
  sl.argv[n++] = "--";
  for (int i = 0; i < s->rec.argc; i++)
    sl.argv[n++] = s->rec.argv[i];
  return 0;
}

/* The last non-empty line of a client's output, for a message (its last
 * word is its verdict: "fatal: ...", "... is DOWN"). */
static const char *last_line(char *text) {
  char *end = text + strlen(text);
  while (end > text && end[-1] == '\n')
    *--end = 0;
  char *nl = strrchr(text, '\n');
  return nl ? nl + 1 : text;
}

/* A controller that answered `scontrol ping` is trusted for PING_FRESH_MS
 * by every supervisor of the store: STORE/.slurm-checked holds what the
 * answer was for (the SLURM_CONF path, that file's inode and mtime), and
 * its own mtime says when. A start within that time skips the ping (a
 * client's fork and exec and a round trip to slurmctld); another SLURM_CONF,
 * or the file edited, asks again. A controller that went down meanwhile is
 * still told: srun fails, and the squeue that follows names it. */
#define PING_FRESH_MS 30000
#define PING_STAMP ".slurm-checked"

static void ping_key(char *const *env, char *key, size_t size) {
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

static int ping_fresh(sup_t *s, const char *key) {
  char path[PATH_MAX], got[PATH_MAX + 64];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", tfs_store_path(s->store), PING_STAMP);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int ok = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
           tfs_now_ms() - ((int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000) <
               PING_FRESH_MS &&
           fgets(got, sizeof got, f) && !strcmp(got, key);
  fclose(f);
  return ok;
}

/* Written whole (a temp file renamed over it): a reader never sees half. */
static void ping_remember(sup_t *s, const char *key) {
  char path[PATH_MAX], tmp[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", tfs_store_path(s->store), PING_STAMP);
  snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wxe");
  if (!f)
    return;
  int ok = fputs(key, f) >= 0;
  if (fclose(f) || !ok || rename(tmp, path))
    unlink(tmp);
}

static int slurm_spawn(sup_t *s, char *why, size_t whylen) {
  const char *cmd = s->rec.argv[0];
  char out[1024], opt_why[512];
  free_spawn();
  if (sup_slurm_options_check(s->rec.exec.options, opt_why, sizeof opt_why) < 0) {
    snprintf(why, whylen, "cannot start '%s' on slurm: %s", cmd, opt_why);
    return -1;
  }
  if (!(sl.env = clean_env(s)))
    return snprintf(why, whylen, "cannot start '%s' on slurm: out of memory", cmd), -1;
  const char *need[] = {"srun", "squeue", "scancel", "scontrol"};
  char *where[] = {sl.srun, sl.squeue, sl.scancel, sl.scontrol};
  for (int i = 0; i < 4; i++)
    if (sup_find_program(need[i], sl.env, where[i], sizeof sl.srun) < 0) {
      snprintf(why, whylen,
               "cannot start '%s' on slurm: Slurm is not installed here (no '%s' on PATH); "
               "install the Slurm client (slurm-client) or run it with --on local",
               cmd, need[i]);
      return -1;
    }
  char *ping[] = {sl.scontrol, "ping", NULL}, key[PATH_MAX + 64];
  ping_key(sl.env, key, sizeof key);
  int rc = 0;
  if (!ping_fresh(s, key) && (rc = sup_command(ping, sl.env, HELPER_MS, out, sizeof out)) == 0)
    ping_remember(s, key);
  if (rc != 0) {
    snprintf(why, whylen,
             "cannot start '%s' on slurm: slurmctld is unreachable (`scontrol ping`: %s); "
             "start it, or check SLURM_CONF",
             cmd, rc == -ETIMEDOUT ? "no answer within 3 s" : last_line(out));
    return -1;
  }
  snprintf(sl.name, sizeof sl.name, "taskfs-%s.%d", s->id, s->rec.restarts);
  snprintf(sl.uid, sizeof sl.uid, "%u", (unsigned)getuid());
  if (make_argv(s) < 0)
    return snprintf(why, whylen, "cannot start '%s' on slurm: out of memory", cmd), -1;
  snprintf(sl.sentinel_name, sizeof sl.sentinel_name, "--name=%s", sl.name);
  snprintf(sl.sentinel_user, sizeof sl.sentinel_user, "--user=%s", sl.uid);
  sl.sentinel[0] = sl.scancel;
  sl.sentinel[1] = sl.sentinel_name;
  sl.sentinel[2] = sl.sentinel_user;
  sl.sentinel[3] = NULL;
  s->spawn_argv = sl.argv;
  s->spawn_env = sl.env;
  s->sentinel_cmd = sl.sentinel;
  sl.seen = sl.running = 0;
  tfs_executor_clear_job(&s->rec.exec);
  s->rec.exec.job_name = strdup(sl.name);
  return 0;
}

/* ---- the job's state from squeue ---------------------------------------- */

/* Sets a record string; 1 if it changed. */
static int set_field(char **field, const char *v) {
  if (*field && v && !strcmp(*field, v))
    return 0;
  free(*field);
  *field = v && *v ? strdup(v) : NULL;
  return 1;
}

/* Slurm's local time "2026-12-01T18:25:12" in ms, or -1. */
static int64_t slurm_time(const char *t) {
  struct tm tm = {0};
  const char *end = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end)
    return -1;
  tm.tm_isdst = -1;
  time_t v = mktime(&tm);
  return v < 0 ? -1 : (int64_t)v * 1000;
}

/* The job started on a node: the task runs. */
static void job_started(sup_t *s, const char *submit, const char *start) {
  int64_t a = slurm_time(submit), b = slurm_time(start);
  sl.running = 1;
  if (a >= 0 && b >= a)
    s->rec.exec.queue_wait_ms = b - a;
  if (s->rec.state != TFS_RUNNING) {
    s->rec.state = TFS_RUNNING;
    s->rec.started_ms = tfs_now_ms();
  }
  sup_log(s, "job %s runs on %s", s->rec.exec.job_id, s->rec.exec.nodes ? s->rec.exec.nodes : "?");
}

/* One squeue by job name (every state, so a job that just ended is still
 * found): updates the record; 1 if it changed. */
static int poll_job(sup_t *s) {
  char out[2048];
  char *argv[] = {sl.squeue, "-h", "-t", "all", "-u", sl.uid, "-n", sl.name,
                  "-o", "%i|%T|%r|%P|%N|%V|%S", NULL};
  int rc = sup_command(argv, sl.env, HELPER_MS, out, sizeof out);
  tfs_executor_t *ex = &s->rec.exec;
  if (rc != 0) {
    /* slurmctld went away: a pending srun waits for it; so do we. */
    char why[300];
    snprintf(why, sizeof why, "slurmctld unreachable (squeue: %.200s)",
             rc == -ETIMEDOUT ? "no answer" : last_line(out));
    return !sl.running && set_field(&ex->job_reason, why);
  }
  char *f[7] = {0}, *p = out;
  out[strcspn(out, "\n")] = 0;
  for (int i = 0; i < 7 && p; i++) {
    f[i] = strsep(&p, "|");
  }
  if (!f[6] || !*f[0])
    return 0; /* not submitted yet */
  sl.seen = 1;
  int changed = set_field(&ex->job_id, f[0]);
  changed |= set_field(&ex->job_state, f[1]);
  changed |= set_field(&ex->job_reason, strcmp(f[2], "None") ? f[2] : NULL);
  changed |= set_field(&ex->partition, f[3]);
  changed |= set_field(&ex->nodes, f[4]);
  if (!sl.running && strcmp(f[1], "PENDING")) {
    job_started(s, f[5], f[6]);
    changed = 1;
  }
  return changed;
}

static void on_poll(uv_timer_t *t) {
  sup_t *s = t->data;
  if (s->phase != PH_RUNNING)
    return;
  if (poll_job(s))
    sup_save(s);
  if (!sl.running)
    uv_timer_start(&sl.poll, on_poll, sl.seen ? POLL_PENDING_MS : POLL_FIRST_MS, 0);
}

static int slurm_started(sup_t *s) {
  if (!sl.poll_init) {
    uv_timer_init(&s->loop, &sl.poll);
    sl.poll.data = s;
    sl.poll_init = 1;
  }
  uv_timer_start(&sl.poll, on_poll, POLL_FIRST_MS, 0);
  return 0;
}

/* ---- stop --------------------------------------------------------------- */

/* scancel [--signal=SIG] of the job, by id when known, else by name. */
static int scancel(const char *sig_opt) {
  char out[512], byname[112], user[40];
  snprintf(byname, sizeof byname, "--name=%s", sl.name);
  snprintf(user, sizeof user, "--user=%s", sl.uid);
  char *argv[6] = {sl.scancel, byname, user, NULL, NULL, NULL};
  if (sig_opt)
    argv[3] = (char *)sig_opt;
  return sup_command(argv, sl.env, HELPER_MS, out, sizeof out);
}

static void slurm_stop(sup_t *s) {
  if (!sl.running)
    poll_job(s); /* it may have started since the last look */
  if (sl.running && !s->worker_reaped) {
    /* The task's own SIGTERM; the grace is ours. */
    if (scancel("--signal=TERM") == 0) {
      sup_log(s, "stop: scancel --signal=TERM of job %s", s->rec.exec.job_id);
      return;
    }
  }
  /* Pending (or the signal did not go): srun revokes the allocation. */
  if (s->worker > 0 && !s->worker_reaped)
    kill(s->worker, SIGTERM);
  if (sl.seen && !sl.running)
    scancel(NULL);
}

static void slurm_kill(sup_t *s, int round) {
  if (s->worker_reaped) {
    sup_signal_tree(s, SIGKILL); /* what srun left here, if anything */
    return;
  }
  if (round == 1) {
    /* srun ends the step at once; scancel ends the job. */
    kill(s->worker, SIGTERM);
    scancel(NULL);
  } else if (round % KILL_AFTER_ROUNDS == 0) {
    sup_signal_tree(s, SIGKILL);
    scancel(NULL);
  }
}

/* ---- describe ----------------------------------------------------------- */

/* The value of KEY= in scontrol's one-line record, into buf. */
static const char *field(const char *rec, const char *key, char *buf, size_t len) {
  size_t n = strlen(key);
  for (const char *p = rec; (p = strstr(p, key)); p += n)
    if ((p == rec || p[-1] == ' ') && p[n] == '=') {
      p += n + 1;
      size_t l = strcspn(p, " \n");
      snprintf(buf, len, "%.*s", (int)(l < len ? l : len - 1), p);
      return buf;
    }
  buf[0] = 0;
  return buf;
}

/* srun's last own message in the transcript ("srun: error: ...",
 * "srun: unrecognized option ..."), for an end Slurm keeps no record of. */
static void srun_message(sup_t *s, char *buf, size_t len) {
  char *text = NULL;
  size_t n = 0;
  buf[0] = 0;
  if (tfs_transcript_tail_bytes(s->store, s->id, 16384, &text, &n, NULL) < 0 || !text)
    return;
  char *best = NULL;
  for (char *l = text; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl)
      *nl = 0;
    if (!strncmp(l, "srun: ", 6) && (!best || strncmp(best, "srun: error: ", 13) ||
                                     !strncmp(l, "srun: error: ", 13)))
      best = l;
    l = nl ? nl + 1 : NULL;
  }
  if (best)
    snprintf(buf, len, "%s", best);
  free(text);
}

/* After a stop: the job gone from the queue before the task says so. */
static void wait_gone(sup_t *s) {
  int64_t until = tfs_now_ms() + GONE_WAIT_MS;
  char out[256];
  char *argv[] = {sl.squeue, "-h", "-j", s->rec.exec.job_id, "-o", "%T", NULL};
  while (tfs_now_ms() < until) {
    int rc = sup_command(argv, sl.env, HELPER_MS, out, sizeof out);
    if (rc != 0 || !out[0])
      return; /* an ended job id is "invalid" to squeue */
    scancel(NULL);
    usleep(20 * 1000);
  }
  sup_log(s, "job %s still in squeue %d s after the stop", s->rec.exec.job_id,
          GONE_WAIT_MS / 1000);
}

/* An end that Slurm chose, in words, or NULL. */
static const char *slurm_end(const char *state, int stopped) {
  static const struct {
    const char *state, *words;
  } ends[] = {{"TIMEOUT", "time limit"},
              {"NODE_FAIL", "node failure"},
              {"PREEMPTED", "preempted"},
              {"OUT_OF_MEMORY", "out of memory"},
              {"DEADLINE", "deadline reached"},
              {"BOOT_FAIL", "node boot failure"},
              {"CANCELLED", "cancelled outside taskfs (scancel)"}};
  for (size_t i = 0; i < sizeof ends / sizeof *ends; i++)
    if (!strcmp(state, ends[i].state))
      return stopped && i == sizeof ends / sizeof *ends - 1 ? NULL : ends[i].words;
  return NULL;
}

/* scontrol's record of the job once it has its final state: right after
 * srun exits the job may still read COMPLETING (or RUNNING), its exit code
 * not set yet. 0, or -1 when Slurm has no record (purged, unreachable). */
static int final_record(const char *job_id, char *out, size_t len) {
  char *argv[] = {sl.scontrol, "show", "job", "-o", (char *)job_id, NULL};
  char v[64];
  int64_t until = tfs_now_ms() + GONE_WAIT_MS;
  for (;;) {
    if (sup_command(argv, sl.env, HELPER_MS, out, len) != 0)
      return -1;
    field(out, "JobState", v, sizeof v);
    if ((strcmp(v, "COMPLETING") && strcmp(v, "RUNNING") && strcmp(v, "CONFIGURING")) ||
        tfs_now_ms() >= until)
      return 0;
    usleep(20 * 1000);
  }
}

static void slurm_describe(sup_t *s) {
  char out[4096], v[256], code[64], msg[512];
  tfs_executor_t *ex = &s->rec.exec;
  uv_timer_stop(&sl.poll);
  if (!ex->job_id)
    poll_job(s);
  if (!ex->job_id) {
    /* srun never got a job: Slurm refused it (bad partition, options). */
    srun_message(s, msg, sizeof msg);
    if (s->stopping)
      return;
    set_field(&ex->job_state, "REFUSED");
    snprintf(s->end_note, sizeof s->end_note, "Slurm refused the job: %s",
             msg[0] ? msg : "srun gave no reason");
    set_field(&ex->job_reason, msg[0] ? msg : NULL);
    s->end_failed = 1;
    return;
  }
  if (s->stopping)
    wait_gone(s);
  if (final_record(ex->job_id, out, sizeof out) < 0) {
    srun_message(s, msg, sizeof msg);
    snprintf(s->end_note, sizeof s->end_note, "Slurm keeps no record of job %s any more%s%s",
             ex->job_id, msg[0] ? ": srun said " : "", msg);
    return;
  }
  const char *state = field(out, "JobState", v, sizeof v);
  set_field(&ex->job_state, state);
  char reason[256];
  field(out, "Reason", reason, sizeof reason);
  set_field(&ex->job_reason, strcmp(reason, "None") ? reason : NULL);
  int e = 0, sig = 0;
  if (sscanf(field(out, "ExitCode", code, sizeof code), "%d:%d", &e, &sig) == 2)
    s->worker_status = sig > 0 ? (sig & 0x7f) : (e & 0xff) << 8;
  const char *why = slurm_end(state, s->stopping);
  if (why) {
    snprintf(s->end_note, sizeof s->end_note, "Slurm ended job %s: %s (%s%s%s)", ex->job_id,
             why, state, ex->job_reason ? ", " : "", ex->job_reason ? ex->job_reason : "");
    s->end_failed = 1;
  }
}

const sup_executor_t sup_exec_slurm = {slurm_spawn, slurm_started, slurm_stop, slurm_kill,
                                       slurm_describe};
