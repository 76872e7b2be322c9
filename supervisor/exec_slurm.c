/* The Slurm executor: the worker is `srun --unbuffered --quiet
 * --job-name=taskfs-<id>.<attempt> --prolog=taskfs-slurm-prolog [options]
 * -- CMD...`, so the job's stdout and stderr come back on the worker's
 * pipes as a local command's do, and everything above the executor
 * (transcript, important lines, follow, restarts) is unchanged. What srun
 * does not tell, the controller does (squeue while it pends, scontrol at
 * its end); facts behind the choices are in docs/scale.md.
 *
 * - spawn: srun and the clients on PATH, the controller checked
 *   (slurm_check.c: an unreachable slurmctld is a clear failure, not a
 *   hang), srun's environment without an inherited allocation (SLURM_JOB_ID
 *   would make the task a step of the caller's job), and the sentinel's
 *   `scancel --name --user`.
 * - started: the task stays queued until srun's prolog
 *   (supervisor/bin/taskfs-slurm-prolog.c), run on this host once Slurm has
 *   allocated the job, writes "JOBID|PARTITION|NODES" on the pipe srun
 *   holds as fd 3: the loop wakes on it, and the task runs. No squeue is
 *   asked while that works; squeue by job name is for a job that pends
 *   (every POLL_PENDING_MS, so the record shows Slurm's reason), and, from
 *   POLL_FIRST_MS on, for an srun that runs without taskfs's prolog (the
 *   site has an SrunProlog of its own, which --prolog would replace, or the
 *   task gives --prolog, or the helper is not installed).
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
 * bounded by SUP_SLURM_HELPER_MS.
 */
#include "supervisor/slurm.h"
#include "supervisor/sup.h"
#include "taskfs/text.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define POLL_FIRST_MS 100    /* without our prolog: until the job shows up in squeue */
#define POLL_PENDING_MS 1000 /* while it pends (with our prolog: from the start) */
#define HELPER_MS SUP_SLURM_HELPER_MS
#define PROLOG "taskfs-slurm-prolog"
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
  char prolog[PATH_MAX + 16]; /* --prolog=ours, or "": squeue tells */
  struct report *report;      /* its pipe, while srun may still write */
  uv_timer_t poll;
  int poll_init;
  int seen;    /* squeue showed the job */
  int running; /* it started on a node */
} sl;

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

/* srun --unbuffered --quiet --job-name=NAME [--prolog=OURS] OPTIONS... -- CMD... */
static int make_argv(sup_t *s) {
  int nopt = s->rec.exec.noptions, n = 0;
  sl.argv = calloc((size_t)(nopt + s->rec.argc + 7), sizeof *sl.argv);
  if (!sl.argv || asprintf(&sl.argv_buf[0], "--job-name=%s", sl.name) < 0)
    return -ENOMEM;
  sl.argv[n++] = sl.srun;
  sl.argv[n++] = "--unbuffered";
  sl.argv[n++] = "--quiet";
  sl.argv[n++] = sl.argv_buf[0];
  if (sl.prolog[0])
    sl.argv[n++] = sl.prolog;
  for (int i = 0; i < nopt; i++)
    sl.argv[n++] = s->rec.exec.options[i];
  sl.argv[n++] = "--";
  for (int i = 0; i < s->rec.argc; i++)
    sl.argv[n++] = s->rec.argv[i];
  return 0;
}

/* ---- the job's id from srun's prolog ---------------------------------- */

/* The read end of the pipe srun holds as fd 3 (its prolog writes one
 * line there), watched by the loop; one per generation. */
struct report {
  uv_poll_t poll;
  sup_t *s;
  int fd;
  size_t len;
  char buf[512];
};

static void report_free(struct report *r) {
  close(r->fd);
  free(r);
}

static void report_closed(uv_handle_t *h) {
  report_free(h->data);
}

/* Done with the pipe: the line came, srun exited, or a new generation. */
static void report_close(void) {
  struct report *r = sl.report;
  sl.report = NULL;
  if (r && r->poll.data)
    uv_close((uv_handle_t *)&r->poll, report_closed);
  else if (r)
    report_free(r);
}

/* Our prolog's place in srun's argv, and the pipe it writes to (the
 * worker's fd 3): only where it replaces no other prolog. The site's
 * SrunProlog (site: "" none, "?" unknown), the task's --prolog (srun
 * keeps the last) and SLURM_PROLOG in its environment (srun's default for
 * --prolog) are left to run, and squeue tells the job's id instead. */
static void report_prepare(sup_t *s, const char *site) {
  char path[PATH_MAX];
  int p[2];
  sl.prolog[0] = 0;
  report_close();
  int theirs = site[0] != 0;
  for (int i = 0; !theirs && s->rec.exec.options && s->rec.exec.options[i]; i++)
    theirs = !strncmp(s->rec.exec.options[i], "--prolog", 8);
  for (int i = 0; !theirs && sl.env[i]; i++)
    theirs = !strncmp(sl.env[i], "SLURM_PROLOG=", 13);
  if (theirs || sup_libexec_find(PROLOG, path, sizeof path) < 0 ||
      snprintf(sl.prolog, sizeof sl.prolog, "--prolog=%s", path) >= (int)sizeof sl.prolog ||
      !(sl.report = calloc(1, sizeof *sl.report)) || pipe2(p, O_CLOEXEC) < 0) {
    free(sl.report);
    sl.report = NULL;
    sl.prolog[0] = 0;
    return;
  }
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  sl.report->fd = p[0];
  s->spawn_fd3 = p[1];
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
  char site[PATH_MAX];
  if (sup_slurm_check(s, sl.scontrol, sl.env, site, sizeof site, out, sizeof out) < 0) {
    snprintf(why, whylen,
             "cannot start '%s' on slurm: slurmctld is unreachable (`scontrol ping`: %s); "
             "start it, or check SLURM_CONF",
             cmd, out);
    return -1;
  }
  report_prepare(s, site);
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

/* The job started on a node: the task runs; waited is how long it was
 * queued (ms), or -1. */
static void job_started(sup_t *s, int64_t waited) {
  sl.running = 1;
  if (waited >= 0)
    s->rec.exec.queue_wait_ms = waited;
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
  char fmt[] = "%i|%T|%r|%P|%N|%V|%S";
  char *argv[] = {sl.squeue, "-h", "-t", "all", "-u", sl.uid, "-n", sl.name, "-o", fmt, NULL};
  int rc = sup_command(argv, sl.env, HELPER_MS, out, sizeof out);
  tfs_executor_t *ex = &s->rec.exec;
  if (rc != 0) {
    /* slurmctld went away: a pending srun waits for it; so do we. */
    char why[300];
    snprintf(why, sizeof why, "slurmctld unreachable (squeue: %.200s)",
             rc == -ETIMEDOUT ? "no answer" : sup_slurm_last_line(out));
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
    int64_t submit = slurm_time(f[5]), start = slurm_time(f[6]);
    job_started(s, submit >= 0 && start >= submit ? start - submit : -1);
    changed = 1;
  }
  return changed;
}

/* Reads what the prolog wrote, without waiting. On its line the job runs
 * (the allocation is granted, the step about to launch): the record gets
 * the id, partition and nodes, and the wait since srun started is the
 * queue wait. 1 if the record changed. At EOF (srun exited, or the line
 * came) the pipe is closed. */
static int report_read(sup_t *s) {
  struct report *r = sl.report;
  ssize_t n = 0;
  while (r && r->len < sizeof r->buf - 1 &&
         (n = read(r->fd, r->buf + r->len, sizeof r->buf - 1 - r->len)) > 0)
    r->len += (size_t)n;
  if (!r || (n < 0 && errno == EAGAIN && !memchr(r->buf, '\n', r->len)))
    return 0;
  r->buf[r->len] = 0;
  char line[sizeof r->buf], *p = line, *f[3] = {0};
  snprintf(line, sizeof line, "%.*s", (int)strcspn(r->buf, "\n"), r->buf);
  report_close();
  for (int i = 0; i < 3 && p; i++)
    f[i] = strsep(&p, "|");
  if (!f[2] || !*f[0] || sl.running)
    return 0; /* no line: the job never ran, or squeue told first */
  tfs_executor_t *ex = &s->rec.exec;
  sl.seen = 1;
  set_field(&ex->job_id, f[0]);
  set_field(&ex->job_state, "RUNNING");
  set_field(&ex->job_reason, NULL);
  set_field(&ex->partition, f[1]);
  set_field(&ex->nodes, f[2]);
  job_started(s, tfs_now_ms() - s->worker_started_ms);
  uv_timer_stop(&sl.poll);
  return 1;
}

static void on_report(uv_poll_t *h, int status, int events) {
  sup_t *s = ((struct report *)h->data)->s;
  if (report_read(s) && s->phase == PH_RUNNING)
    sup_save(s);
}

static void on_poll(uv_timer_t *t) {
  sup_t *s = t->data;
  if (s->phase != PH_RUNNING)
    return;
  if (poll_job(s))
    sup_save(s);
  if (!sl.running)
    uv_timer_start(&sl.poll, on_poll, sl.seen || sl.prolog[0] ? POLL_PENDING_MS : POLL_FIRST_MS, 0);
}

/* The loop wakes on the prolog's line; squeue is asked only after
 * POLL_PENDING_MS without it (the job pends), or from POLL_FIRST_MS on
 * when no prolog of ours runs. */
static int slurm_started(sup_t *s) {
  if (!sl.poll_init) {
    uv_timer_init(&s->loop, &sl.poll);
    sl.poll.data = s;
    sl.poll_init = 1;
  }
  struct report *r = sl.report;
  if (r) {
    r->s = s;
    r->poll.data = r;
    if (uv_poll_init(&s->loop, &r->poll, r->fd) < 0) {
      r->poll.data = NULL;
      report_close();
    } else {
      uv_poll_start(&r->poll, UV_READABLE, on_report);
    }
  }
  uv_timer_start(&sl.poll, on_poll, sl.report ? POLL_PENDING_MS : POLL_FIRST_MS, 0);
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
  report_read(s); /* it may have started since the last look */
  if (!sl.running)
    poll_job(s);
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
    if (!strncmp(l, "srun: ", 6) &&
        (!best || strncmp(best, "srun: error: ", 13) || !strncmp(l, "srun: error: ", 13)))
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
  sup_log(s, "job %s still in squeue %d s after the stop", s->rec.exec.job_id, GONE_WAIT_MS / 1000);
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
  report_read(s); /* srun has exited: its prolog's line is there, or none */
  report_close();
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
    snprintf(s->end_note, sizeof s->end_note, "Slurm ended job %s: %s (%s%s%s)", ex->job_id, why,
             state, ex->job_reason ? ", " : "", ex->job_reason ? ex->job_reason : "");
    s->end_failed = 1;
  }
}

const sup_executor_t sup_exec_slurm = {slurm_spawn, slurm_started, slurm_stop, slurm_kill,
                                       slurm_describe};
