/* The claims of docs/security.md about other local users, proved as real
 * users made by the test (tests/hardening/users.h): a victim who runs
 * taskfs and an attacker who shares the machine.
 *
 *   - a store replaced under a running MCP server (removed and recreated
 *     by the attacker, or its symlinked path pointed elsewhere) is never
 *     adopted: nothing of the attacker's runs as the victim;
 *   - the mount never serves a replaced store it would not open;
 *   - every verb of the CLI, reads included, refuses a store another user
 *     planted (exit 111, the owner named);
 *   - the supervisor refuses a task directory that is not the caller's;
 *   - root reads a user's store only with --foreign-store, read-only, and
 *     never writes a stop request into it. */
#include "tests/hardening/users.h"

#include <sys/inotify.h>

TestSuite(hard_users, .init = hu_setup, .fini = hu_teardown, .timeout = 180);

/* ---- what the attacker plants ------------------------------------------------- */

/* A record of task id with argv (state queued unless state says else), as
 * JSON text (malloc'ed). */
static char *record_text(const char *id, tfs_state_t state, char *const argv[]) {
  tfs_record_t rec;
  tfs_record_init(&rec);
  snprintf(rec.id, sizeof rec.id, "%s", id);
  cr_assert_eq(tfs_record_set_command(&rec, argv, "/"), 0);
  rec.state = state;
  rec.created_ms = tfs_now_ms() - 1000;
  if (tfs_state_terminal(state)) {
    rec.exit_code = 0;
    rec.started_ms = rec.created_ms;
    rec.ended_ms = tfs_now_ms();
    tfs_record_set_reason(&rec, "exited with code 0");
  }
  char *text = tfs_record_dump(&rec);
  tfs_record_free(&rec);
  cr_assert(text);
  return text;
}

/* Writes text to dir/name through a temp file and a rename, as the
 * attacker's own (0644 so that the victim can read it). 0 or -1. */
static int put_file(const char *dir, const char *name, const char *text) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/.a-%s", dir, name);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return -1;
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n;
  fchmod(fd, 0644);
  close(fd);
  return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* A store of the attacker's: dir, tasks/ and keys/ at mode. */
typedef struct {
  const char *dir;
  mode_t mode;
  const char *link; /* if set: then a symlink here naming dir */
  const char *plant_id;
  const char *plant_text; /* that task's transcript */
} plant_t;

static int plant_store(void *arg) {
  plant_t *p = arg;
  char path[4096];
  if (mkdir(p->dir, p->mode) || chmod(p->dir, p->mode))
    return 1;
  snprintf(path, sizeof path, "%s/tasks", p->dir);
  if (mkdir(path, p->mode) || chmod(path, p->mode))
    return 2;
  snprintf(path, sizeof path, "%s/keys", p->dir);
  if (mkdir(path, p->mode) || chmod(path, p->mode))
    return 3;
  if (p->plant_id) {
    char *argv[] = {"/bin/echo", "planted", NULL};
    char *rec = record_text(p->plant_id, TFS_COMPLETED, argv);
    snprintf(path, sizeof path, "%s/tasks/%s", p->dir, p->plant_id);
    if (mkdir(path, 0755) || put_file(path, "record.json", rec) ||
        put_file(path, "transcript", p->plant_text))
      return 4;
    free(rec);
    char *keys = hh_strdupf("%s/keys", p->dir), *line = hh_strdupf("%s\n", p->plant_id);
    if (put_file(keys, "planted", line))
      return 5;
    free(keys);
    free(line);
  }
  if (p->link && symlink(p->dir, p->link))
    return 6;
  return 0;
}

/* The attacker's swapper: every task directory the victim makes in the
 * attacker's tasks/ is moved aside and replaced by one of the attacker's,
 * whose record (put back whenever the victim's save replaces it) runs
 * argv. Runs until killed. */
typedef struct {
  const char *tasks;
  char *const *argv;
  int ready_fd; /* written once the watch is in place */
} swap_t;

static int swapper(void *arg) {
  swap_t *sw = arg;
  char stolen[64][64];
  int wds[64], nstolen = 0;
  int in = inotify_init1(0);
  if (in < 0 || inotify_add_watch(in, sw->tasks, IN_CREATE | IN_MOVED_TO) < 0)
    return 1;
  (void)!write(sw->ready_fd, "r", 1);
  close(sw->ready_fd);
  for (;;) {
    char buf[8192] __attribute__((aligned(8)));
    ssize_t n = read(in, buf, sizeof buf);
    for (char *p = buf; n > 0 && p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      char dir[4096], aside[4200];
      int mine = -1;
      for (int i = 0; i < nstolen; i++)
        if (wds[i] == ev->wd)
          mine = i;
      if (mine >= 0) {
        /* In one of ours: the victim saved its record over ours. */
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", sw->tasks, stolen[mine]);
        snprintf(aside, sizeof aside, "%s/record.json", dir);
        if (ev->len && !strcmp(ev->name, "record.json") && stat(aside, &st) == 0 &&
            st.st_uid != getuid()) {
          char *rec = record_text(stolen[mine], TFS_QUEUED, sw->argv);
          put_file(dir, "record.json", rec);
          free(rec);
        }
        continue;
      }
      if (!ev->len || !tfs_id_valid(ev->name) || strlen(ev->name) > 40 || nstolen >= 64)
        continue;
      int again = 0;
      for (int i = 0; i < nstolen; i++)
        again |= !strcmp(stolen[i], ev->name);
      if (again)
        continue;
      snprintf(dir, sizeof dir, "%s/%s", sw->tasks, ev->name);
      snprintf(aside, sizeof aside, "%s/.v-%s", sw->tasks, ev->name);
      snprintf(stolen[nstolen], sizeof stolen[nstolen], "%s", ev->name);
      if (rename(dir, aside) || mkdir(dir, 0777) || chmod(dir, 0777))
        continue;
      wds[nstolen++] = inotify_add_watch(in, dir, IN_MOVED_TO | IN_CREATE);
      char *rec = record_text(ev->name, TFS_QUEUED, sw->argv);
      put_file(dir, "record.json", rec);
      free(rec);
    }
  }
}

/* Starts the swapper as u on tasks and waits until it watches. */
static pid_t start_swapper(const hu_user_t *u, swap_t *sw) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  sw->ready_fd = p[1];
  pid_t pid = hu_fork_as(u, swapper, sw);
  close(p[1]);
  char c[8];
  cr_assert(read(p[0], c, sizeof c) > 0, "the attacker's swapper did not start");
  close(p[0]);
  return pid;
}

/* 1 once no process of uid runs the supervise verb. */
static uid_t g_sup_uid;
static int no_supervisor_of(void *arg) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int none = 1;
  while (d && (e = readdir(d)))
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && hu_proc_uid(e->d_name) == (long)g_sup_uid) {
      char path[300];
      size_t len;
      snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
      char *s = tu_read_file(path, &len);
      for (size_t i = 0; s && i < len; i += strlen(s + i) + 1)
        if (!strcmp(s + i, "supervise"))
          none = 0;
      free(s);
    }
  if (d)
    closedir(d);
  return none;
}

/* ---- the refresh attack --------------------------------------------------------- */

/* The victim's MCP server serves state; before the victim's next request
 * the attacker replaces the store: replace(arg) runs as root (a tmp
 * cleaner), then the attacker plants its store (with a swapper on
 * tasks). The victim starts a task: nothing of the attacker's may run. */
static void refresh_attack(const hu_user_t *v, const char *state, const char *astore,
                           const char *link) {
  hu_user_t *a = hu_user_add('a');
  char *pwned = hu_shared("pwned");
  hu_wrap_t w;
  hh_mcp_t m;
  hh_mcp_start_ex(&m, hu_wrap(&w, v, state));
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(&m, "list_managed_tasks", json_object(), &is_err, &msg);
  cr_assert(res && !is_err, "the victim's server cannot list its own store: %s", msg);
  json_decref(res);
  /* A tmp cleaner (or the victim) removes the store (or the link to it);
   * the attacker makes its own in its place. */
  hh_res_t r = hh_sh("rm -rf '%s'", link ? link : state);
  hh_res_free(&r);
  const char *planted = "mi4x7k2p-3fz9qa";
  plant_t p = {astore, 0777, link, planted, "forged by the attacker\n"};
  cr_assert_eq(hu_as(a, plant_store, &p), 0, "the attacker could not plant its store");
  /* The victim's server serves nothing of it. */
  res = hh_mcp_tool(&m, "list_managed_tasks", json_object(), &is_err, &msg);
  char *text = res ? json_dumps(res, 0) : NULL;
  cr_expect(!text || !strstr(text, planted), "the victim's server lists the attacker's tasks: %s",
            text);
  free(text);
  json_decref(res);
  free(msg);
  res = hh_mcp_tool(&m, "read_managed_task", json_pack("{s:s}", "taskId", planted), &is_err, &msg);
  text = res ? json_dumps(res, 0) : NULL;
  cr_expect(!text || !strstr(text, "forged"), "the victim's server reads the attacker's tasks: %s",
            text);
  free(text);
  json_decref(res);
  free(msg);
  char *tasks = hh_strdupf("%s/tasks", astore), *cmd = hh_strdupf("id -u > %s", pwned);
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  swap_t sw = {tasks, argv, -1};
  pid_t swp = start_swapper(a, &sw);
  res = hh_mcp_tool(&m, "start_managed_task",
                    json_pack("{s:s, s:[s, s], s:s}", "taskKey", "victim-build", "command",
                              "/bin/echo", "hello", "cwd", "/"),
                    &is_err, &msg);
  /* Every supervisor the request started has finished. */
  g_sup_uid = v->uid;
  tu_wait_until(no_supervisor_of, NULL, hh_timeout_ms());
  cr_assert(access(pwned, F_OK) < 0,
            "the attacker's command ran as the victim after the store was replaced");
  hh_res_t f = hh_sh("find '%s/' -user %s", astore, v->name);
  cr_expect_str_empty(f.out, "the victim wrote into the attacker's store: %s", f.out);
  hh_res_free(&f);
  cr_assert(!res || is_err, "the victim's server used the replaced store");
  cr_assert(msg && (strstr(msg, "another user") || strstr(msg, "belongs")),
            "the refusal does not say why: %s", msg ? msg : "(no message)");
  json_decref(res);
  free(msg);
  char *log = hh_slurp(m.log, NULL);
  cr_assert(log && strstr(log, "refus"), "the server's log does not say it refuses the store:\n%s",
            log ? log : "");
  free(log);
  kill(swp, SIGKILL);
  waitpid(swp, NULL, 0);
  hh_mcp_close(&m);
  free(tasks);
  free(cmd);
  free(pwned);
}

Test(hard_users, a_store_replaced_under_the_mcp_server_runs_nothing_of_the_replacer) {
  char *state = hu_shared("vstore");
  refresh_attack(hu_user_add('v'), state, state, NULL);
  free(state);
}

Test(hard_users, a_swapped_store_symlink_runs_nothing_of_the_replacer) {
  char *real = hu_shared("vreal"), *link = hu_shared("vlink"), *astore = hu_shared("astore");
  /* The victim's store is reached through a symlink the victim made. */
  hu_user_t *v = hu_user_add('v');
  hh_res_t r = hu_sh(v, "mkdir -m 700 '%s' && ln -s '%s' '%s'", real, real, link);
  cr_assert_eq(r.status, 0, "%s", r.err);
  hh_res_free(&r);
  refresh_attack(v, link, astore, link);
  free(real);
  free(link);
  free(astore);
}

/* ---- the mount ------------------------------------------------------------------ */

Test(hard_users, the_mount_never_serves_a_replaced_store) {
  hu_fuse_open_to_users();
  hu_user_t *v = hu_user_add('v'), *a = hu_user_add('a');
  char *state = hu_shared("mstore"), *mnt = hu_shared("mnt");
  cr_assert_eq(mkdir(mnt, 0700), 0);
  cr_assert_eq(chown(mnt, v->uid, v->gid), 0);
  hu_wrap_t w;
  hh_mount_t mt = {0};
  int rc = hh_mount_start_ex(&mt, mnt, hu_wrap(&w, v, state));
  char *log = hh_slurp(mt.log, NULL);
  cr_assert_eq(rc, 0, "the victim's mount did not come up:\n%s", log ? log : "");
  free(log);
  hh_res_t r = hu_sh(v, "ls '%s/tasks'", mnt);
  cr_assert_eq(r.status, 0, "the victim cannot list its own mount: %s", r.err);
  hh_res_free(&r);
  /* Removed, then recreated by the attacker with a task of its own. */
  r = hh_sh("rm -rf '%s'", state);
  hh_res_free(&r);
  plant_t p = {state, 0777, NULL, "mi4x7k2p-3fz9qa", "forged by the attacker\n"};
  cr_assert_eq(hu_as(a, plant_store, &p), 0);
  r = hu_sh(v, "ls '%s/tasks'; cat '%s/tasks/mi4x7k2p-3fz9qa/transcript'; ls '%s/by-key'", mnt, mnt,
            mnt);
  cr_assert(!strstr(r.out, "mi4x7k2p-3fz9qa") && !strstr(r.out, "forged") &&
                !strstr(r.out, "planted"),
            "the mount served the attacker's store:\n%s", r.out);
  hh_res_free(&r);
  r = hu_sh(v, "stat -c %%u '%s/tasks' '%s/owner' 2>/dev/null", mnt, mnt);
  char *auid = hh_strdupf("%d\n", (int)a->uid);
  cr_assert(!strstr(r.out, auid), "the mount shows the attacker as the owner of its files");
  free(auid);
  hh_res_free(&r);
  log = hh_slurp(mt.log, NULL);
  cr_assert(log && strstr(log, "refus"), "the mount's log does not say why:\n%s", log ? log : "");
  free(log);
  /* The victim's own store again: served again. */
  r = hh_sh("rm -rf '%s'", state);
  hh_res_free(&r);
  r = hu_tfs(v, state, "run", "--cwd", "/", "--", "/bin/echo", "mine", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char *id = hh_chomp(r.out);
  hh_res_t l = hu_sh(v, "ls '%s/tasks'", mnt);
  cr_assert(strstr(l.out, id), "the mount does not serve the victim's store again: %s", l.out);
  hh_res_free(&l);
  hh_res_free(&r);
  cr_assert_eq(hh_mount_stop(&mt), 0);
  free(state);
  free(mnt);
}

/* ---- a store another user planted ------------------------------------------------ */

/* Each verb on it is refused, with exit 111 and the owner named, and shows
 * nothing of what was planted; nothing in it changes. */
Test(hard_users, every_verb_refuses_a_store_another_user_planted) {
  hu_user_t *v = hu_user_add('v'), *a = hu_user_add('a');
  char *state = hu_shared("planted");
  const char *id = "mi4x7k2p-3fz9qa";
  plant_t p = {state, 0755, NULL, id, "forged by the attacker\n"};
  cr_assert_eq(hu_as(a, plant_store, &p), 0);
  static const char *const verbs[][3] = {
      {"ls", NULL, NULL},     {"logs", "ID", NULL},      {"show", "ID", NULL},
      {"wait", "ID", NULL},   {"cancel", "ID", NULL},    {"prune", "--keep", "0"},
      {"ls", "--json", NULL}, {"logs", "planted", NULL}, {"run", "--", "/bin/true"}};
  for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
    const char *a1 = verbs[i][1] && !strcmp(verbs[i][1], "ID") ? id : verbs[i][1];
    hh_res_t r = hu_tfs(v, state, verbs[i][0], a1, verbs[i][2], NULL);
    cr_expect_eq(r.status, 111, "taskfs %s %s on another user's store: exit %d (stdout: %s)",
                 verbs[i][0], a1 ? a1 : "", r.status, r.out);
    cr_expect(!strstr(r.out, "forged") && !strstr(r.out, "planted") && !strstr(r.out, id),
              "taskfs %s showed what the other user planted: %s", verbs[i][0], r.out);
    cr_expect(strstr(r.err, a->name) && strstr(r.err, state),
              "taskfs %s does not name the store and its owner: %s", verbs[i][0], r.err);
    hh_res_free(&r);
  }
  hh_res_t r = hh_sh("find '%s' ! -user %s", state, a->name);
  cr_assert_str_empty(r.out, "the victim wrote into the other user's store: %s", r.out);
  hh_res_free(&r);
  free(state);
}

/* ---- the supervisor -------------------------------------------------------------- */

Test(hard_users, the_supervisor_runs_nothing_from_a_task_dir_it_does_not_own) {
  hu_user_t *v = hu_user_add('v'), *a = hu_user_add('a');
  char *state = hu_shared("sstore"), *pwned = hu_shared("pwned");
  hh_res_t r = hu_tfs(v, state, "run", "--cwd", "/", "--", "/bin/true", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  hh_res_free(&r);
  /* A queued task planted in the victim's store under the attacker's
   * name, open to the victim's writes. */
  const char *id = "mi4x7k2p-3fz9qa";
  char *dir = hh_strdupf("%s/tasks/%s", state, id), *cmd = hh_strdupf("id -u > %s", pwned);
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  char *rec = record_text(id, TFS_QUEUED, argv);
  cr_assert_eq(mkdir(dir, 0777), 0);
  cr_assert_eq(chmod(dir, 0777), 0);
  cr_assert_eq(put_file(dir, "record.json", rec), 0);
  r = hh_sh("chown -R %s: '%s'", a->name, dir);
  hh_res_free(&r);
  r = hu_tfs(v, NULL, "supervise", "--state-dir", state, id, NULL);
  cr_expect_eq(r.status, 111, "the supervisor took a task dir of another user: exit %d", r.status);
  g_sup_uid = v->uid;
  tu_wait_until(no_supervisor_of, NULL, hh_timeout_ms());
  cr_assert(access(pwned, F_OK) < 0, "the supervisor ran a record from a dir it does not own");
  hh_res_free(&r);
  free(rec);
  free(cmd);
  free(dir);
  free(pwned);
  free(state);
}

/* ---- root ----------------------------------------------------------------------- */

Test(hard_users, root_reads_a_users_store_only_when_asked_and_never_writes) {
  hu_user_t *v = hu_user_add('v');
  char *state = hu_shared("ustore");
  hh_res_t r = hu_tfs(v, state, "run", "--cwd", "/", "--", "/bin/sleep", "300", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char *id = strdup(hh_chomp(r.out));
  hh_res_free(&r);
  /* Not by default. */
  r = hh_tfs("ls", "--state-dir", state, NULL);
  cr_expect_eq(r.status, 111, "root listed a user's store without asking: exit %d", r.status);
  cr_expect(strstr(r.err, v->name) && strstr(r.err, "--foreign-store"),
            "the refusal names neither the owner nor --foreign-store: %s", r.err);
  hh_res_free(&r);
  /* Read-only when asked. */
  static const char *const reads[][3] = {
      {"ls", NULL, NULL}, {"show", "ID", NULL}, {"logs", "ID", NULL}, {"ls", "--json", NULL}};
  for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
    const char *a1 = reads[i][1] && !strcmp(reads[i][1], "ID") ? id : reads[i][1];
    r = hh_tfs(reads[i][0], "--foreign-store", "--state-dir", state, a1, NULL);
    cr_expect_eq(r.status, 0, "taskfs %s --foreign-store: exit %d: %s", reads[i][0], r.status,
                 r.err);
    hh_res_free(&r);
  }
  r = hh_tfs("wait", "--foreign-store", "--timeout", "0.2", "--state-dir", state, id, NULL);
  cr_expect_eq(r.status, 124, "wait --foreign-store: exit %d: %s", r.status, r.err);
  hh_res_free(&r);
  /* A stop request is the owner's to make: refused up front, with the
   * reason, and nothing written. */
  r = hh_tfs("cancel", "--state-dir", state, id, NULL);
  cr_expect_eq(r.status, 111, "root's cancel on a user's store: exit %d (%s)", r.status, r.out);
  cr_expect(strstr(r.err, v->name), "the refusal does not name the owner: %s", r.err);
  cr_expect(!strstr(r.out, "stop requested"), "root's cancel said: %s", r.out);
  hh_res_free(&r);
  static const char *const writes[][3] = {
      {"cancel", "ID", NULL}, {"prune", "--keep", "0"}, {"run", "/bin/true", NULL}};
  for (size_t i = 0; i < sizeof writes / sizeof *writes; i++) {
    const char *a1 = writes[i][1] && !strcmp(writes[i][1], "ID") ? id : writes[i][1];
    r = hh_tfs(writes[i][0], "--foreign-store", "--state-dir", state, a1, writes[i][2], NULL);
    cr_expect_eq(r.status, 100, "taskfs %s --foreign-store: exit %d", writes[i][0], r.status);
    hh_res_free(&r);
  }
  r = hh_sh("find '%s' ! -user %s", state, v->name);
  cr_expect_str_empty(r.out, "root wrote into the user's store: %s", r.out);
  hh_res_free(&r);
  /* The task runs on, and its owner can stop it. */
  r = hu_tfs(v, state, "cancel", "--wait", id, NULL);
  cr_expect_eq(r.status, 0, "the owner's cancel: %s", r.err);
  cr_expect(strstr(r.out, "cancelled"), "%s", r.out);
  hh_res_free(&r);
  free(id);
  free(state);
}
