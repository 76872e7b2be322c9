/* The fault matrix beyond kill -9 of the four process kinds (issue 13):
 *   - a killed sentinel, then a killed supervisor: the worker's group
 *     still goes (a new sentinel took the old one's place);
 *   - an MCP server killed in the middle of a start: no task stays queued
 *     or running without a supervisor, no process is orphaned;
 *   - a SIGSTOPped mount and a SIGSTOPped MCP server: the CLI and the
 *     other faces keep working, and the stopped one answers once resumed;
 *   - a store out of inodes (not blocks): clear errors, running tasks run
 *     on, everything recovers;
 *   - ENOSPC injected (strace) into every write, fsync and rename of a
 *     keyed `taskfs run` and into a running supervisor's record saves:
 *     clear errors, records that parse, nothing left after a prune.
 * Each checks the chaos run's invariants (hh_check_store: records parse,
 * no task running without its supervisor; here also none queued). */
#include "tests/hardening/hard.h"

#include <sys/stat.h>

TestSuite(hard_matrix, .init = hh_setup, .fini = hh_teardown, .timeout = 300);

/* The store's invariants, and no task queued (nothing waits for ever). */
static void check_settled(const char *when) {
  hh_store_stats_t st = hh_check_store(when);
  cr_assert_eq(st.queued, 0, "%s: %zu task(s) still queued", when, st.queued);
}

/* The pid of a child of parent whose name (comm) is name, other than not;
 * 0 if none. */
static pid_t child_named(pid_t parent, const char *name, pid_t not ) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent, (int)parent);
  char *kids = tu_read_file(path, NULL);
  pid_t found = 0;
  for (char *p = kids, *end; p && *p && !found; p = end) {
    pid_t k = (pid_t)strtol(p, &end, 10);
    if (end == p)
      break;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)k);
    char *comm = tu_read_file(path, NULL);
    if (comm && !strncmp(comm, name, strlen(name)) && k != not )
      found = k;
    free(comm);
  }
  free(kids);
  return found;
}

static pid_t wait_child_named(pid_t parent, const char *name, pid_t not ) {
  int64_t end = hh_now_ms() + hh_timeout_ms();
  pid_t p;
  while (!(p = child_named(parent, name, not )) && hh_now_ms() < end)
    hh_sleep_ms(20);
  return p;
}

static int group_alive(pid_t pgid) {
  return kill(-pgid, 0) == 0 || errno != ESRCH;
}

Test(hard_matrix, a_killed_sentinel_is_replaced_and_its_group_still_goes) {
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/bin/sh", "-c", "sleep 300 & sleep 300; wait", NULL};
  hh_run_task(NULL, cmd, id);
  hh_wait_running(id);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  pid_t s1 = wait_child_named(sup, "taskfs-sentinel", 0);
  cr_assert(s1 > 0, "no sentinel under supervisor %d", (int)sup);
  pid_t pgid = hh_worker_pgid(id);

  kill(s1, SIGKILL);
  pid_t s2 = wait_child_named(sup, "taskfs-sentinel", s1);
  cr_assert(s2 > 0, "the killed sentinel %d was not replaced", (int)s1);
  kill(sup, SIGKILL);
  int64_t end = hh_now_ms() + hh_timeout_ms();
  while (group_alive(pgid) && hh_now_ms() < end)
    hh_sleep_ms(20);
  cr_assert(!group_alive(pgid),
            "the worker's group %d outlived its supervisor after the sentinel was killed",
            (int)pgid);
  cr_assert_eq(hh_wait_ended(id), TFS_LOST);
  check_settled("after the sentinel and the supervisor");
}

/* The processes of this test that are not the test: none should be left
 * once every task ended and every face stopped. */
static int count_ours(void) {
  int n = 0;
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid > 1 && hh_proc_is_ours(pid) && !hh_proc_zombie(pid))
      n++;
  }
  if (d)
    closedir(d);
  return n;
}

static int cond_no_ours(void *arg) {
  return count_ours() == 0;
}

Test(hard_matrix, an_mcp_server_killed_mid_start_leaves_nothing_waiting) {
  int rounds = hh_rounds(12, 100);
  for (int i = 0; i < rounds; i++) {
    hh_mcp_t m;
    hh_mcp_start(&m);
    cr_assert_eq(hh_mcp_initialize(&m), 0);
    char *line =
        hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/call\",\"params\":"
                   "{\"name\":\"start_managed_task\",\"arguments\":{\"taskKey\":\"mid-%d\","
                   "\"command\":[\"/bin/sleep\",\"1\"]}}}\n",
                   i);
    cr_assert_eq(hh_mcp_send_raw(&m, line, strlen(line)), 0);
    free(line);
    hh_sleep_ms(rand() % 40);
    kill(m.pid, SIGKILL);
    waitpid(m.pid, NULL, 0);
    close(m.in);
    close(m.out);
    free(m.rbuf.buf);
    free(m.log);
  }
  /* Whatever each start had reached: a task that runs to its end, one
   * settled lost, or none. */
  hh_sleep_ms(5500);
  tfs_store_t *store;
  char **ids;
  size_t n;
  cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  for (size_t i = 0; i < n; i++)
    if (hh_state_opt(ids[i]) >= 0) /* a dir without a record is no task */
      hh_wait_ended(ids[i]);
  tfs_ids_free(ids, n);
  tfs_store_close(store);
  check_settled("after the MCP servers were killed");
  cr_assert(tu_wait_until(cond_no_ours, NULL, hh_timeout_ms()) == 1,
            "%d process(es) of the test outlived every task and face", count_ours());
}

Test(hard_matrix, a_stopped_mount_or_mcp_server_stops_nobody_else) {
  char *mnt = hh_strdupf("%s/mnt", hh.root);
  hh_mount_t mount = {0};
  hh_mount_start(&mount, mnt);
  hh_mcp_t a, b;
  hh_mcp_start(&a);
  hh_mcp_start(&b);
  cr_assert_eq(hh_mcp_initialize(&a), 0);
  cr_assert_eq(hh_mcp_initialize(&b), 0);

  /* The mount stopped: the CLI and the MCP server go on. */
  kill(mount.pid, SIGSTOP);
  hh_res_t r = hh_tfs("run", "--wait", "--", "/bin/echo", "past a stopped mount", NULL);
  cr_assert_eq(r.status, 0, "run --wait beside a stopped mount: %d %s", r.status, r.err);
  hh_res_free(&r);
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(&a, "start_managed_task",
                            json_pack("{s:s, s:[s, s]}", "taskKey", "beside-stopped-mount",
                                      "command", "/bin/sleep", "300"),
                            &is_err, &msg);
  cr_assert(res && !is_err, "MCP start beside a stopped mount: %s", msg ? msg : "");
  char id[TFS_ID_MAX + 1];
  snprintf(id, sizeof id, "%s", json_string_value(json_object_get(res, "taskId")));
  json_decref(res);
  free(msg);
  r = hh_tfs("cancel", "--wait", id, NULL);
  cr_assert_eq(r.status, 0, "cancel --wait beside a stopped mount: %s", r.err);
  hh_res_free(&r);
  kill(mount.pid, SIGCONT);
  char *rp = hh_strdupf("%s/tasks/%s/record.json", mnt, id);
  char *rj = hh_slurp(rp, NULL);
  cr_assert(rj && strstr(rj, "\"cancelled\""), "the resumed mount: %s", rj ? rj : "(nothing)");
  free(rj);

  /* An MCP server stopped: the other one, the mount and the CLI go on. */
  kill(a.pid, SIGSTOP);
  res = hh_mcp_tool(
      &b, "start_managed_task",
      json_pack("{s:s, s:[s, s]}", "taskKey", "beside-stopped-mcp", "command", "/bin/echo", "ok"),
      &is_err, &msg);
  cr_assert(res && !is_err, "MCP start beside a stopped MCP server: %s", msg ? msg : "");
  snprintf(id, sizeof id, "%s", json_string_value(json_object_get(res, "taskId")));
  json_decref(res);
  free(msg);
  cr_assert_eq(hh_wait_ended(id), TFS_COMPLETED);
  char *tp = hh_strdupf("%s/tasks/%s/transcript", mnt, id);
  char *t = hh_slurp(tp, NULL);
  cr_assert(t && !strcmp(t, "ok\n"), "the mount beside a stopped MCP server: %s", t ? t : "");
  free(t);
  r = hh_tfs("ls", NULL);
  cr_assert_eq(r.status, 0);
  hh_res_free(&r);
  kill(a.pid, SIGCONT);
  res = hh_mcp_tool(&a, "list_managed_tasks", json_pack("{}"), &is_err, &msg);
  cr_assert(res && !is_err, "the resumed MCP server: %s", msg ? msg : "");
  json_decref(res);
  free(msg);
  check_settled("after the stops");
  cr_assert_eq(hh_mcp_close(&a), 0);
  cr_assert_eq(hh_mcp_close(&b), 0);
  cr_assert_eq(hh_mount_stop(&mount), 0);
  free(tp);
  free(rp);
  free(mnt);
}

static int names_space(const char *s) {
  return s && (strcasestr(s, "space") || strcasestr(s, "full") || strcasestr(s, "inode"));
}

Test(hard_matrix, a_store_out_of_inodes) {
  char *fs = hh_store_on_tmpfs("size=64m,nr_inodes=400,mode=0700");
  char t1[TFS_ID_MAX + 1];
  hh_run_worker("inodes", 20000, NULL, t1);
  hh_wait_running(t1);
  /* Use up every inode left. */
  char *junk = hh_strdupf("%s/junk", fs);
  cr_assert_eq(mkdir(junk, 0700), 0);
  for (int i = 0;; i++) {
    char *p = hh_strdupf("%s/%d", junk, i);
    int fd = open(p, O_WRONLY | O_CREAT, 0600);
    free(p);
    if (fd < 0) {
      cr_assert_eq(errno, ENOSPC, "filling the inodes: %s", strerror(errno));
      break;
    }
    close(fd);
  }
  hh_res_t r = hh_tfs("run", "--key", "no-inode", "--", "/bin/true", NULL);
  cr_assert_neq(r.status, 0, "taskfs run without inodes succeeded");
  cr_assert(names_space(r.err), "taskfs run without inodes: %s", r.err);
  hh_res_free(&r);
  hh_sleep_ms(300);
  cr_assert_eq(hh_state(t1), TFS_RUNNING, "the running task did not survive");
  hh_check_store("out of inodes");
  hh_sh("rm -rf '%s'", junk);
  r = hh_tfs("run", "--wait", "--key", "no-inode", "--", "/bin/true", NULL);
  cr_assert_eq(r.status, 0, "taskfs run once inodes returned: %s", r.err);
  hh_res_free(&r);
  r = hh_tfs("cancel", "--wait", t1, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  hh_res_free(&r);
  hh_check_seq(t1, 1, 1L << 40, "after the inodes ran out");
  check_settled("after the inodes returned");
  free(junk);
  free(fs);
}

Test(hard_matrix, enospc_in_each_write_of_a_keyed_run_is_clean) {
  if (!hh_have_strace())
    cr_skip_test("needs strace");
  const char *calls[] = {"write", "fsync", "rename", "linkat", "mkdir", "openat"};
  int failed = 0;
  for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++)
    for (int when = 1; when <= 6; when++) {
      const char *set = !strcmp(calls[c], "rename") ? "rename,renameat,renameat2" : calls[c];
      hh_res_t r = hh_sh(HH_STRACE "-e trace=%s -e inject=%s:error=ENOSPC:when=%d "
                         "'%s' run --key e-%s-%d -- /bin/true",
                         set, set, when, tu_taskfs_bin(), calls[c], when);
      if (r.status != 0) {
        failed++;
        cr_assert(r.status == 111 && strstr(r.err, "taskfs run:") && names_space(r.err),
                  "ENOSPC at %s #%d: exit %d, '%s'", calls[c], when, r.status, r.err);
      }
      hh_res_free(&r);
    }
  cr_log_info("%d of the keyed runs met the injected ENOSPC", failed);
  cr_assert(failed > 5);
  hh_sleep_ms(5500);
  check_settled("after ENOSPC in the creators");
  hh_res_t r = hh_tfs("prune", "--keep", "0", NULL);
  hh_res_free(&r);
  char *left = hh_sh_out("find '%s/keys' '%s/tasks' -mindepth 1 | head", hh.store, hh.store);
  cr_assert_str_eq(left, "", "left after one prune: %s", left);
  free(left);
}

Test(hard_matrix, enospc_in_a_supervisors_record_saves) {
  if (!hh_have_strace())
    cr_skip_test("needs strace");
  char id[TFS_ID_MAX + 1];
  hh_run_worker("saves", 2000, NULL, id);
  hh_wait_running(id);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  /* Every record save's write fails for two seconds; output goes on. */
  char *cmd = hh_strdupf("timeout -s INT 2 strace -qq -o /dev/null -p %d -e trace=write,fsync "
                         "-e inject=write,fsync:error=ENOSPC:when=1+ 2>&1",
                         (int)sup);
  hh_res_t r = hh_sh("%s", cmd);
  hh_res_free(&r);
  free(cmd);
  hh_check_store("after the failed saves");
  cr_assert_eq(hh_state(id), TFS_RUNNING);
  r = hh_tfs("cancel", "--wait", id, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  hh_res_free(&r);
  tfs_record_t rec;
  char err[256];
  cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "%s", err);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  tfs_record_free(&rec);
  /* No line torn by the failed writes. */
  char *tp = hh_task_path(id, "transcript");
  size_t len;
  char *s = hh_slurp(tp, &len);
  long prev = 0;
  for (size_t off = 0; off < len;) {
    char *nl = memchr(s + off, '\n', len - off);
    cr_assert(nl, "torn last line '%.40s'", s + off);
    char *end;
    long v = strtol(s + off + 4, &end, 10);
    cr_assert(!strncmp(s + off, "seq=", 4) && end == nl && v > prev, "torn line '%.*s'",
              (int)(nl - s - (long)off), s + off);
    prev = v;
    off = (size_t)(nl - s) + 1;
  }
  free(s);
  free(tp);
  check_settled("after the supervisor's failed saves");
}
