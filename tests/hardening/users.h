/* Real unprivileged users for the tests that need more than one local
 * user (tests/test_hard_users.c): a victim and an attacker made by the test
 * with useradd, under names no one else uses, and always removed: by the
 * suite's .fini, and at the start of every test for the leftovers of a run
 * that crashed or was killed on its timeout (the pid of the test that made
 * a user is in its name, so a user whose test is gone is known stale).
 *
 * What a user runs goes through setpriv (util-linux): real and effective
 * uid and gid of the user, no supplementary groups, the test's environment
 * plus TASKFS_STATE_DIR. Header-only, as hard.h. */
#ifndef TASKFS_TESTS_USERS_H
#define TASKFS_TESTS_USERS_H

#include "tests/hardening/hard.h"

#include <grp.h>
#include <pwd.h>

#define HU_PREFIX "tfst"
#define HU_MAX 4

typedef struct {
  char name[32];
  uid_t uid;
  gid_t gid;
} hu_user_t;

static hu_user_t hu_users[HU_MAX];
static int hu_nusers;
static int hu_fuse_mode = -1; /* /dev/fuse's mode before a test widened it */

/* The real uid of /proc/<pid>, or -1. */
static HH_UNUSED long hu_proc_uid(const char *pid) {
  char path[300];
  snprintf(path, sizeof path, "/proc/%s/status", pid);
  char *s = tu_read_file(path, NULL);
  char *u = s ? strstr(s, "\nUid:") : NULL;
  long uid = u ? strtol(u + 5, NULL, 10) : -1;
  free(s);
  return uid;
}

static HH_UNUSED int hu_match_uid(pid_t pid, void *arg) {
  char name[24];
  snprintf(name, sizeof name, "%d", (int)pid);
  return hu_proc_uid(name) == (long)*(uid_t *)arg;
}

/* SIGKILLs every process running as uid (each was started by the test
 * that made the user, which is the only one that uses it) until none is
 * left. */
static HH_UNUSED void hu_kill_uid(uid_t uid) {
  hh_kill_where(hu_match_uid, &uid);
}

/* useradd and userdel take a lock on /etc/passwd; two tests at once (or
 * another program) make one of them fail for a moment: try again. */
static HH_UNUSED int hu_account_cmd(const char *cmd) {
  for (int i = 0; i < 100; i++) {
    hh_res_t r = hh_sh("%s", cmd);
    int st = r.status;
    hh_res_free(&r);
    if (st == 0)
      return 0;
    hh_sleep_ms(50);
  }
  return -1;
}

static HH_UNUSED void hu_user_del(const char *name) {
  struct passwd *pw = getpwnam(name);
  if (pw)
    hu_kill_uid(pw->pw_uid);
  char *cmd = hh_strdupf("userdel '%s' 2>/dev/null || ! getent passwd '%s' >/dev/null", name, name);
  hu_account_cmd(cmd);
  free(cmd);
}

/* Removes the users of tests that are gone (killed on their timeout, or
 * crashed before their .fini). */
static HH_UNUSED void hu_reap_stale_users(void) {
  char *pw = tu_read_file("/etc/passwd", NULL);
  for (char *line = pw ? strtok(pw, "\n") : NULL; line; line = strtok(NULL, "\n")) {
    char name[64];
    if (sscanf(line, "%63[^:]", name) != 1 || strncmp(name, HU_PREFIX, strlen(HU_PREFIX)))
      continue;
    pid_t pid = (pid_t)atoi(name + strlen(HU_PREFIX));
    if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) {
      char *del = strdup(name);
      hu_user_del(del);
      free(del);
    }
  }
  free(pw);
}

/* Makes a user "tfst<pid><tag>" with a group of its own, no home and no
 * login shell. */
static HH_UNUSED hu_user_t *hu_user_add(char tag) {
  cr_assert(hu_nusers < HU_MAX);
  hu_user_t *u = &hu_users[hu_nusers];
  snprintf(u->name, sizeof u->name, HU_PREFIX "%d%c", (int)getpid(), tag);
  hu_user_del(u->name); /* a leftover of a test that had our pid */
  char *cmd = hh_strdupf("useradd -M -U -d /nonexistent -s /usr/sbin/nologin '%s'", u->name);
  int rc = hu_account_cmd(cmd);
  free(cmd);
  cr_assert_eq(rc, 0, "useradd %s failed", u->name);
  hu_nusers++;
  struct passwd *pw = getpwnam(u->name);
  cr_assert(pw, "getpwnam(%s) after useradd", u->name);
  u->uid = pw->pw_uid;
  u->gid = pw->pw_gid;
  return u;
}

/* The suite's .init: a hardening context, no stale users, and a shared
 * directory like /tmp (1777) that every user can reach. */
static HH_UNUSED void hu_setup(void) {
  hh_setup_tag("hard-users");
  hu_nusers = 0;
  hu_reap_stale_users();
  chmod(hh.root, 0711);
  char *shared = hh_strdupf("%s/shared", hh.root);
  cr_assert_eq(mkdir(shared, 0777), 0);
  cr_assert_eq(chmod(shared, 01777), 0);
  free(shared);
}

/* The suite's .fini: the users' processes and the users, /dev/fuse as it
 * was, then the hardening teardown (mounts, the directory). */
static HH_UNUSED void hu_teardown(void) {
  hh_kill_ours();
  for (int i = 0; i < hu_nusers; i++)
    hu_kill_uid(hu_users[i].uid);
  for (int i = 0; i < hh.nmounts; i++)
    umount2(hh.mounts[i], MNT_DETACH);
  for (int i = 0; i < hu_nusers; i++)
    hu_user_del(hu_users[i].name);
  hu_nusers = 0;
  if (hu_fuse_mode >= 0)
    chmod("/dev/fuse", (mode_t)hu_fuse_mode);
  hu_fuse_mode = -1;
  hh_teardown();
}

/* Lets ordinary users open /dev/fuse (0600 on some machines) until the
 * .fini restores its mode. */
static HH_UNUSED void hu_fuse_open_to_users(void) {
  struct stat st;
  cr_assert_eq(stat("/dev/fuse", &st), 0);
  if ((st.st_mode & 0666) == 0666)
    return;
  hu_fuse_mode = (int)(st.st_mode & 07777);
  cr_assert_eq(chmod("/dev/fuse", 0666), 0);
}

/* A path in the shared directory (malloc'ed). */
static HH_UNUSED char *hu_shared(const char *name) {
  return hh_strdupf("%s/shared/%s", hh.root, name);
}

/* The argv prefix that runs a program as u with TASKFS_STATE_DIR=state
 * (NULL: as inherited): setpriv, then env. Strings live until the test
 * ends. */
typedef struct {
  const char *argv[8];
  char *s[3];
} hu_wrap_t;

static HH_UNUSED const char *const *hu_wrap(hu_wrap_t *w, const hu_user_t *u, const char *state) {
  memset(w, 0, sizeof *w);
  w->s[0] = hh_strdupf("--reuid=%d", (int)u->uid);
  w->s[1] = hh_strdupf("--regid=%d", (int)u->gid);
  w->s[2] = state ? hh_strdupf("TASKFS_STATE_DIR=%s", state) : NULL;
  int n = 0;
  w->argv[n++] = "/usr/bin/setpriv";
  w->argv[n++] = w->s[0];
  w->argv[n++] = w->s[1];
  w->argv[n++] = "--clear-groups";
  w->argv[n++] = "/usr/bin/env";
  if (state)
    w->argv[n++] = w->s[2];
  w->argv[n] = NULL;
  return w->argv;
}

/* Runs `taskfs ARGS...` (NULL-terminated) as u on the store state. */
static HH_UNUSED hh_res_t hu_tfs(const hu_user_t *u, const char *state, const char *arg0, ...) {
  const char *argv[64];
  hu_wrap_t w;
  int n = 0;
  for (const char *const *p = hu_wrap(&w, u, state); *p; p++)
    argv[n++] = *p;
  argv[n++] = tu_taskfs_bin();
  argv[n++] = arg0;
  va_list ap;
  va_start(ap, arg0);
  while (n < 63 && (argv[n] = va_arg(ap, const char *)))
    n++;
  va_end(ap);
  argv[n] = NULL;
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  for (int i = 0; i < 3; i++)
    free(w.s[i]);
  return r;
}

/* Runs a shell command line as u. */
static HH_UNUSED hh_res_t hu_sh(const hu_user_t *u, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static HH_UNUSED hh_res_t hu_sh(const hu_user_t *u, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *cmd = hh_vstrdupf(fmt, ap);
  va_end(ap);
  hu_wrap_t w;
  const char *argv[16];
  int n = 0;
  for (const char *const *p = hu_wrap(&w, u, NULL); *p; p++)
    argv[n++] = *p;
  argv[n++] = "/bin/sh";
  argv[n++] = "-c";
  argv[n++] = cmd;
  argv[n] = NULL;
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  for (int i = 0; i < 3; i++)
    free(w.s[i]);
  free(cmd);
  return r;
}

/* Forks a child that becomes u (groups, gid, uid) and runs fn(arg); its
 * return is the child's exit status. Returns the child's pid. */
static HH_UNUSED pid_t hu_fork_as(const hu_user_t *u, int (*fn)(void *), void *arg) {
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    if (setgroups(0, NULL) || setresgid(u->gid, u->gid, u->gid) ||
        setresuid(u->uid, u->uid, u->uid))
      _exit(120);
    _exit(fn(arg) & 0xff);
  }
  return pid;
}

/* hu_fork_as, then waits: the child's exit status. */
static HH_UNUSED int hu_as(const hu_user_t *u, int (*fn)(void *), void *arg) {
  int st;
  pid_t pid = hu_fork_as(u, fn, arg);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif /* TASKFS_TESTS_USERS_H */
