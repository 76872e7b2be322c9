/* A task's limits in the supervisor: the resource limits each worker gets
 * (setrlimit in the forked worker, soft and hard, so that neither it nor
 * anything it starts can raise them; mem through the tree's memory cgroup
 * where one can be made, cgroup.c), the wall-clock limit of each worker
 * run (at the limit its tree is stopped as a stop request stops it, and
 * the task ends failed with exit code 124 unless the policy restarts
 * timed-out workers), and what each run used, from wait4() of every
 * process of the tree (the supervisor is their subreaper).
 */
#include "supervisor/sup.h"
#include "taskfs/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const int resources[TFS_LIMIT_COUNT] = {RLIMIT_DATA,  RLIMIT_CPU,   RLIMIT_NOFILE,
                                               RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE};

/* mem: the tree's memory cgroup, else RLIMIT_DATA; the record says which
 * and, without a cgroup, why. */
static void prepare_mem(sup_t *s, tfs_limit_val_t *v) {
  char why[1200];
  if (sup_cgroup_make(s, v->value, why, sizeof why) == 0) {
    v->via = TFS_VIA_CGROUP;
    free(s->rec.limits.cgroup);
    s->rec.limits.cgroup = strdup(s->cg_dir);
    sup_log(s, "limit mem: the memory cgroup %s%s%s", s->cg_dir, why[0] ? ", " : "", why);
  } else {
    v->via = TFS_VIA_RLIMIT;
    sup_log(s, "limit mem: RLIMIT_DATA per process (%s)", why);
  }
  free(v->note);
  v->note = why[0] ? strdup(why) : NULL;
}

void sup_limits_prepare(sup_t *s) {
  s->cg_procs_fd = -1;
  uv_timer_init(&s->loop, &s->timeout_timer);
  s->timeout_timer.data = s;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    tfs_limit_val_t *v = &s->rec.limits.v[i];
    s->rlim_set[i] = 0;
    if (v->value == TFS_LIMIT_NONE)
      continue;
    if (i == TFS_LIMIT_MEM)
      prepare_mem(s, v);
    else
      v->via = TFS_VIA_RLIMIT;
    if (v->via != TFS_VIA_RLIMIT)
      continue;
    /* The hard limit too, so the worker cannot raise it (CAP_SYS_RESOURCE
     * can). CPU: SIGXCPU at the soft limit, SIGKILL a second later. */
    rlim_t x = (rlim_t)v->value;
    s->rlim[i].rlim_cur = x;
    s->rlim[i].rlim_max = i == TFS_LIMIT_CPU ? x + 1 : x;
    s->rlim_set[i] = 1;
  }
}

int sup_limits_child(const sup_t *s) {
  if (s->cg_procs_fd >= 0 && write(s->cg_procs_fd, "0", 1) != 1)
    return TFS_LIMIT_COUNT;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    if (s->rlim_set[i] && setrlimit(resources[i], &s->rlim[i]) < 0)
      return i;
  return -1;
}

void sup_limits_describe(const sup_t *s, int which, int err, char *why, size_t len) {
  const char *cmd = s->rec.argv[0];
  if (which == TFS_LIMIT_COUNT) {
    snprintf(why, len, "cannot start '%s': cannot enter its memory cgroup %s (%s)", cmd, s->cg_dir,
             strerror(err));
    return;
  }
  char buf[256];
  tfs_limits_t one;
  tfs_limits_init(&one);
  one.v[which].value = s->rec.limits.v[which].value;
  snprintf(why, len, "cannot start '%s': cannot set its limit %s (%s): %s", cmd,
           tfs_limits_summary(&one, buf, sizeof buf), tfs_limit_rlimit_name((tfs_limit_t)which),
           strerror(err));
}

/* The wall-clock limit ran out: the tree is stopped as a stop request
 * stops it (SIGTERM, the grace, SIGKILL); the generation's end says how
 * the task ends. */
static void on_timeout(uv_timer_t *t) {
  sup_t *s = t->data;
  char d[TFS_DURATION_BUF];
  if (s->phase != PH_RUNNING || s->worker_reaped || s->stopping)
    return;
  s->timed_out = 1;
  sup_log(s, "timeout of %s reached: stopping the worker's tree",
          tfs_duration_format(s->rec.limits.timeout_ms, d));
  sup_stop_tree(s);
}

void sup_limits_worker_started(sup_t *s) {
  s->timed_out = 0;
  s->run_user_us = s->run_sys_us = s->run_maxrss_kb = s->worker_cpu_ms = 0;
  s->run_out_start = s->cap.bytes;
  s->live_at = s->live_cpu_ms = s->live_hwm_kb = 0;
  if (s->rec.restarts == 0 && s->rec.created_ms && s->rec.started_ms >= s->rec.created_ms)
    s->rec.queued_ms = s->rec.started_ms - s->rec.created_ms;
  if (s->rec.limits.timeout_ms > 0)
    uv_timer_start(&s->timeout_timer, on_timeout, (uint64_t)s->rec.limits.timeout_ms, 0);
}

void sup_usage_reaped(sup_t *s, pid_t pid, const struct rusage *ru) {
  int64_t user = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec;
  int64_t sys = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
  s->run_user_us += user;
  s->run_sys_us += sys;
  if (ru->ru_maxrss > s->run_maxrss_kb)
    s->run_maxrss_kb = ru->ru_maxrss;
  if (pid == s->worker)
    s->worker_cpu_ms = (user + sys) / 1000;
}

void sup_usage_run_end(sup_t *s, tfs_usage_t *run) {
  uv_timer_stop(&s->timeout_timer);
  tfs_usage_init(run);
  run->user_ms = s->run_user_us / 1000;
  run->sys_ms = s->run_sys_us / 1000;
  run->maxrss_kb = s->run_maxrss_kb;
  run->output_bytes = s->cap.bytes - s->run_out_start;
  tfs_usage_add(&s->rec.usage, run);
}

/* The CPU time (utime + stime and the same of its reaped children, in
 * ms) and peak RSS (VmHWM, kB) of one live process; 0 or -1. */
static int proc_use(pid_t pid, int64_t *cpu_ms, int64_t *hwm_kb) {
  tfs_proc_stat_t st;
  /* A zombie is about to be reaped: wait4 counts it then. */
  if (tfs_proc_stat(pid, &st) || st.state == 'Z')
    return -1;
  long hz = sysconf(_SC_CLK_TCK);
  *cpu_ms = (int64_t)(st.utime + st.stime + (uint64_t)st.cutime + (uint64_t)st.cstime) * 1000 /
            (hz > 0 ? hz : 100);
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0)
    close(fd);
  *hwm_kb = 0;
  if (n > 0) {
    buf[n] = 0;
    char *h = strstr(buf, "VmHWM:");
    if (h)
      *hwm_kb = strtoll(h + 6, NULL, 10);
  }
  return 0;
}

/* While a run goes on, what it used so far: its processes that ended
 * (wait4) and, sampled at most every LIVE_EVERY_MS, the live ones from
 * /proc (their CPU time split into user and system is only known once
 * they end: counted as user meanwhile). */
#define LIVE_EVERY_MS 2000
void sup_usage_live(sup_t *s, tfs_usage_t *total) {
  int64_t now = tfs_now_ms();
  if (now - s->live_at >= LIVE_EVERY_MS) {
    pid_t *v = NULL;
    size_t n = 0;
    s->live_cpu_ms = s->live_hwm_kb = 0;
    s->live_at = now;
    if (sup_descendants(&v, &n) == 0)
      for (size_t i = 0; i < n; i++) {
        int64_t cpu, hwm;
        if (v[i] == s->sentinel || proc_use(v[i], &cpu, &hwm))
          continue;
        s->live_cpu_ms += cpu;
        if (hwm > s->live_hwm_kb)
          s->live_hwm_kb = hwm;
      }
    free(v);
  }
  total->user_ms += s->run_user_us / 1000 + s->live_cpu_ms;
  total->sys_ms += s->run_sys_us / 1000;
  total->output_bytes += s->cap.bytes - s->run_out_start;
  int64_t rss = s->run_maxrss_kb > s->live_hwm_kb ? s->run_maxrss_kb : s->live_hwm_kb;
  if (rss > total->maxrss_kb)
    total->maxrss_kb = rss;
}

void sup_limits_finish(sup_t *s) {
  int64_t peak = sup_cgroup_peak_kb(s);
  if (peak >= 0)
    s->rec.usage.tree_peak_kb = peak;
  sup_cgroup_remove(s);
}
