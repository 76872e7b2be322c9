/* Why a worker ended, in words: the wait status, what a shell's exit code
 * above 128 means (128 + the signal that killed the command it ran), and,
 * for a SIGKILL, whether the kernel's OOM killer did it.
 *
 * The kernel tells in the memory cgroup of the worker: cgroup v2 counts in
 * memory.events "oom" (the cgroup reached its memory.max and reclaim could
 * not make room) and "oom_kill" (processes of the cgroup the OOM killer
 * killed, whichever limit ran out); cgroup v1 keeps "oom_kill" in
 * memory.oom_control, and the times usage hit the limit in memory.failcnt
 * and the highest usage in memory.max_usage_in_bytes (some kernels leave
 * failcnt at 0: a peak at the limit says the same). The supervisor reads
 * them when the worker starts and when it is reaped (tfs_memcg_read); an
 * oom_kill that grew in between says the OOM killer acted, "oom" (v1: a
 * limit set and reached) that the cgroup's own limit was the reason, and
 * no growth that it did not act.
 * Only when neither could be read does the reason say "possibly out of
 * memory". */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"
#include "taskfs/text.h"

#define CGROOT "/sys/fs/cgroup"

/* Reads a small file (procfs, cgroupfs) whole into buf, NUL-terminated. */
static int slurp(const char *path, char *buf, size_t len) {
  char *text;
  size_t n;
  if (tfs__read_small(AT_FDCWD, path, len - 1, &text, &n))
    return -1;
  memcpy(buf, text, n + 1);
  free(text);
  return 0;
}

/* The value after "name " at the start of a line of text, or -1. */
static int64_t field(const char *text, const char *name) {
  size_t k = strlen(name);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, name, k) == 0 && p[k] == ' ')
      return strtoll(p + k + 1, NULL, 10);
  return -1;
}

int tfs_cgroup_of(pid_t pid, int v2, char *path, size_t len) {
  char file[64], buf[4096];
  snprintf(file, sizeof file, pid > 0 ? "/proc/%d/cgroup" : "/proc/self/cgroup", (int)pid);
  if (slurp(file, buf, sizeof buf))
    return -1;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH". */
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c1 = *c2 = '\0';
    const char *ctrl = c1 + 1, *where = c2 + 1;
    int match = 0;
    if (v2)
      match = strcmp(line, "0") == 0 && !*ctrl;
    for (const char *t = ctrl; !v2 && !match && t; t = strchr(t, ','), t = t ? t + 1 : NULL)
      match = strncmp(t, "memory", 6) == 0 && (t[6] == ',' || t[6] == '\0');
    if (match) {
      snprintf(path, len, "%s", where);
      return 0;
    }
  }
  return -1;
}

/* The worker's memory cgroup: the v1 "memory" hierarchy if there is one,
 * else the v2 one. */
static int cgroup_of(pid_t pid, tfs_memcg_t *m) {
  if (tfs_cgroup_of(pid, 0, m->path, sizeof m->path) == 0) {
    m->v2 = 0;
    return 0;
  }
  if (tfs_cgroup_of(pid, 1, m->path, sizeof m->path) == 0) {
    m->v2 = 1;
    return 0;
  }
  return -1;
}

void tfs_memcg_read(pid_t pid, tfs_memcg_t *m) {
  char dir[512], file[600], buf[2048];
  m->known = 0;
  m->oom = m->oom_kill = m->failcnt = m->peak = -1;
  m->limit = -1;
  if (!m->path[0] && cgroup_of(pid, m))
    return;
  if (m->v2) {
    snprintf(dir, sizeof dir, CGROOT "%s", m->path);
    snprintf(file, sizeof file, "%s/memory.events", dir);
    if (slurp(file, buf, sizeof buf)) {
      /* A hybrid layout mounts v2 at /sys/fs/cgroup/unified. */
      snprintf(dir, sizeof dir, CGROOT "/unified%s", m->path);
      snprintf(file, sizeof file, "%s/memory.events", dir);
      if (slurp(file, buf, sizeof buf))
        return;
    }
    m->oom = field(buf, "oom");
    m->oom_kill = field(buf, "oom_kill");
    snprintf(file, sizeof file, "%s/memory.max", dir);
    if (slurp(file, buf, sizeof buf) == 0 && strncmp(buf, "max", 3) != 0)
      m->limit = strtoll(buf, NULL, 10);
  } else {
    snprintf(dir, sizeof dir, CGROOT "/memory%s", m->path);
    snprintf(file, sizeof file, "%s/memory.oom_control", dir);
    if (slurp(file, buf, sizeof buf))
      return;
    m->oom_kill = field(buf, "oom_kill");
    snprintf(file, sizeof file, "%s/memory.failcnt", dir);
    if (slurp(file, buf, sizeof buf) == 0)
      m->failcnt = strtoll(buf, NULL, 10);
    snprintf(file, sizeof file, "%s/memory.max_usage_in_bytes", dir);
    if (slurp(file, buf, sizeof buf) == 0)
      m->peak = strtoll(buf, NULL, 10);
    snprintf(file, sizeof file, "%s/memory.limit_in_bytes", dir);
    /* v1 writes "no limit" as the largest page-aligned value. */
    if (slurp(file, buf, sizeof buf) == 0 && strtoll(buf, NULL, 10) < (INT64_C(1) << 62))
      m->limit = strtoll(buf, NULL, 10);
  }
  m->known = m->oom_kill >= 0;
}

/* "256 MiB", "1.5 GiB". */
static void size_words(int64_t b, char *out, size_t len) {
  if (b >= (INT64_C(1) << 30))
    snprintf(out, len, "%.1f GiB", (double)b / (double)(INT64_C(1) << 30));
  else
    snprintf(out, len, "%" PRId64 " MiB", b >> 20);
}

enum { OOM_UNKNOWN, OOM_NOT, OOM_LIMIT, OOM_SYSTEM };

/* What the memory events before and after say about a SIGKILL. */
static int oom_verdict(const tfs_memcg_t *a, const tfs_memcg_t *b) {
  if (!a || !b || !a->known || !b->known || strcmp(a->path, b->path) != 0)
    return OOM_UNKNOWN;
  if (b->oom_kill <= a->oom_kill)
    return OOM_NOT;
  int limit =
      b->v2 ? b->oom > a->oom : b->limit > 0 && (b->failcnt > a->failcnt || b->peak >= b->limit);
  return limit ? OOM_LIMIT : OOM_SYSTEM;
}

/* Appends "when its cgroup /x reached its memory limit of 256 MiB" or
 * ": the system ran out of memory". */
static void oom_cause(int verdict, const tfs_memcg_t *b, char *buf, size_t len) {
  size_t n = strlen(buf);
  if (verdict == OOM_SYSTEM) {
    snprintf(buf + n, len - n, ": the system ran out of memory");
    return;
  }
  char sz[32] = "";
  if (b->limit > 0)
    size_words(b->limit, sz, sizeof sz);
  snprintf(buf + n, len - n, " when its cgroup %s reached its memory limit%s%s", b->path,
           sz[0] ? " of " : "", sz);
}

/* What a signal that ended a process means, or NULL. */
static const char *signal_words(int sig) {
  switch (sig) {
  case SIGSEGV:
    return "segmentation fault: an invalid memory access";
  case SIGBUS:
    return "bus error: a bad memory access";
  case SIGABRT:
    return "aborted: abort(), a failed assertion or an uncaught C++ exception";
  case SIGFPE:
    return "arithmetic error, such as a division by zero";
  case SIGILL:
    return "illegal instruction";
  case SIGINT:
    return "interrupted";
  case SIGTERM:
    return "terminated";
  case SIGPIPE:
    return "broken pipe: the reader of its output went away";
  case SIGXCPU:
    return "CPU time limit exceeded";
  case SIGXFSZ:
    return "file size limit exceeded";
  default:
    return NULL;
  }
}

/* Appends fmt to buf. */
static void add(char *buf, size_t len, const char *fmt, const char *arg) {
  size_t n = strlen(buf);
  snprintf(buf + n, len - n, fmt, arg);
}

/* A worker killed by signal s. */
static void killed(int status, int s, const tfs_memcg_t *before, const tfs_memcg_t *after,
                   char *buf, size_t len) {
  char sig[TFS_SIGNAME_MAX];
  snprintf(buf, len, "killed by signal %s", tfs_signal_name(s, sig));
  if (s == SIGKILL) {
    int v = oom_verdict(before, after);
    if (v == OOM_UNKNOWN)
      add(buf, len, "%s", " (possibly out of memory)");
    else if (v == OOM_NOT)
      add(buf, len, "%s", " (not by the kernel's OOM killer: its cgroup counted no OOM kill)");
    else {
      add(buf, len, "%s", ": out of memory (the kernel's OOM killer ended it");
      oom_cause(v, after, buf, len);
      add(buf, len, "%s", ")");
    }
  } else if (signal_words(s)) {
    add(buf, len, " (%s)", signal_words(s));
  }
  if (WCOREDUMP(status))
    add(buf, len, "%s", "; core dumped");
}

char *tfs_exit_describe(int status, const tfs_memcg_t *before, const tfs_memcg_t *after, char *buf,
                        size_t len) {
  char sig[TFS_SIGNAME_MAX];
  if (WIFSIGNALED(status)) {
    killed(status, WTERMSIG(status), before, after, buf, len);
    return buf;
  }
  int code = WEXITSTATUS(status);
  snprintf(buf, len, "exited with code %d", code);
  /* A shell reports a command killed by signal N as exit code 128 + N. */
  if (code == 128 + SIGKILL) {
    int v = oom_verdict(before, after);
    if (v == OOM_LIMIT || v == OOM_SYSTEM) {
      add(buf, len, "%s",
          ": out of memory (a process it ran was killed by the kernel's OOM killer");
      oom_cause(v, after, buf, len);
      add(buf, len, "%s", ")");
    } else {
      add(buf, len, "%s",
          v == OOM_NOT ? " (128 + SIGKILL: a process it ran was killed, not by the kernel's OOM "
                         "killer)"
                       : " (128 + SIGKILL: a process it ran was killed, possibly out of memory)");
    }
  } else if (code > 128 && code < 128 + 65 && signal_words(code - 128)) {
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, " (128 + %s: a process it ran ended: %s)",
             tfs_signal_name(code - 128, sig), signal_words(code - 128));
  } else if (code == 127) {
    add(buf, len, "%s", " (command not found)");
  } else if (code == 126) {
    add(buf, len, "%s", " (a command could not run: not executable or permission denied)");
  }
  return buf;
}

/* The limit which as the task was given it: "cpu=10m", "mem=2G". */
static void limit_text(const tfs_limits_t *l, tfs_limit_t which, char *out, size_t len) {
  char v[TFS_DURATION_BUF];
  int64_t x = l->v[which].value;
  if (which == TFS_LIMIT_CPU)
    tfs_duration_format(x * 1000, v);
  else
    tfs_size_format(x, v);
  snprintf(out, len, "%s=%s", tfs_limit_name(which), v);
}

static int has_limit(const tfs_limits_t *l, tfs_limit_t which) {
  return l && l->v[which].value != TFS_LIMIT_NONE && l->v[which].via != TFS_VIA_NONE;
}

char *tfs_exit_describe_limits(int status, const tfs_memcg_t *before, const tfs_memcg_t *after,
                               const tfs_limits_t *lim, int64_t worker_cpu_ms, int killed,
                               char *buf, size_t len) {
  char given[64], sig_name[TFS_SIGNAME_MAX];
  if (killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    /* The supervisor's own SIGKILL (the grace period ran out): no OOM
     * kill, no limit. */
    snprintf(buf, len, "killed by signal %s", tfs_signal_name(SIGKILL, sig_name));
    return buf;
  }
  tfs_exit_describe(status, before, after, buf, len);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  /* The signal that ended it, or the one a shell reports as 128 + N. */
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : code > 128 && code < 128 + 65 ? code - 128 : 0;
  if (sig == SIGXCPU && has_limit(lim, TFS_LIMIT_CPU)) {
    limit_text(lim, TFS_LIMIT_CPU, given, sizeof given);
    add(buf, len, "; the task's limit %s (RLIMIT_CPU, the CPU time of each process) was reached",
        given);
  } else if (sig == SIGKILL && WIFSIGNALED(status) && has_limit(lim, TFS_LIMIT_CPU) &&
             worker_cpu_ms >= lim->v[TFS_LIMIT_CPU].value * 1000) {
    limit_text(lim, TFS_LIMIT_CPU, given, sizeof given);
    add(buf, len,
        "; the task's limit %s (RLIMIT_CPU) was reached: the kernel kills a process one second "
        "past it when SIGXCPU did not end it",
        given);
  } else if (sig == SIGXFSZ && has_limit(lim, TFS_LIMIT_FSIZE)) {
    limit_text(lim, TFS_LIMIT_FSIZE, given, sizeof given);
    add(buf, len, "; the task's limit %s (RLIMIT_FSIZE, the size of a file it writes) was reached",
        given);
  } else if (has_limit(lim, TFS_LIMIT_MEM) && lim->v[TFS_LIMIT_MEM].via == TFS_VIA_CGROUP &&
             sig == SIGKILL && oom_verdict(before, after) == OOM_LIMIT) {
    limit_text(lim, TFS_LIMIT_MEM, given, sizeof given);
    add(buf, len, "; the task's limit %s applies to its whole tree", given);
  } else if (has_limit(lim, TFS_LIMIT_MEM) && lim->v[TFS_LIMIT_MEM].via == TFS_VIA_RLIMIT &&
             code != 0 && (!sig || sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS)) {
    /* A failed allocation ends a program with an error, or abort() and a
     * crash for one that does not check. */
    limit_text(lim, TFS_LIMIT_MEM, given, sizeof given);
    add(buf, len,
        "; it ran under the task's limit %s (RLIMIT_DATA, the data memory of each process), past "
        "which an allocation fails: that may be why",
        given);
  }
  return buf;
}
