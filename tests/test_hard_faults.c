/* Fault injection (issue 7, part 3):
 *   - a store on a tiny tmpfs (2 MiB) that fills up: running tasks keep
 *     running or end with a reason that names the full disk, no record is
 *     torn, no transcript line is torn, the CLI, the mount and the MCP
 *     server answer with clear errors, and all recover once space returns;
 *   - a 64 KiB store, too small for the space reserve: a task completes,
 *     or is refused at once naming the full store, never lost or hung;
 *   - the fast wake-up path unavailable, two ways: the supervisor's
 *     TASKFS_NO_INOTIFY=1 switch (which turns off its instant stop path:
 *     once an inotify watch, now the tasks/<id>/doorbell FIFO), and a
 *     seccomp filter that makes inotify_init fail with EMFILE for the whole
 *     process tree (what a host out of inotify instances looks like): stop
 *     requests are still picked up by the fallback poll, the MCP server's
 *     long-poll and `taskfs wait` still see a task end;
 *   - the store directory made unreadable, then removed, under a running
 *     mount and MCP server (both run without CAP_DAC_OVERRIDE so that
 *     permissions bind root too): clear errors, no crash, recovery once the
 *     store is back. */
#include "tests/hardening/hard.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* `<test> --hh-noinotify PROG ARGS...` execs PROG with inotify_init and
 * inotify_init1 failing with EMFILE for it and every descendant (seccomp
 * filters are inherited across fork and exec). */
__attribute__((constructor)) static void noinotify_ctor(int argc, char **argv, char **envp) {
  (void)envp;
  if (argc < 3 || strcmp(argv[1], "--hh-noinotify"))
    return;
#if defined(__x86_64__)
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_inotify_init1, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_inotify_init, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EMFILE & SECCOMP_RET_DATA)),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
    perror("seccomp");
    _exit(126);
  }
#else
  dprintf(2, "--hh-noinotify: only built for x86_64\n");
  _exit(126);
#endif
  execv(argv[2], argv + 2);
  perror("execv");
  _exit(127);
}

TestSuite(hard_faults, .init = hh_setup, .fini = hh_teardown, .timeout = 300);

/* Does the supervisor have an instant way to hear of a stop request: an
 * inotify instance, or the task's doorbell FIFO open? */
static int has_fast_path(pid_t pid) {
  char dir[64], link[320], target[4096];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  struct dirent *e;
  int found = 0;
  if (!d)
    return -1;
  while ((e = readdir(d)) && !found) {
    snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
      target[n] = 0;
      found = strstr(target, "inotify") != NULL || (n > 9 && !strcmp(target + n - 9, "/doorbell"));
    }
  }
  closedir(d);
  return found;
}

static int contains_ci(const char *hay, const char *needle) {
  return hay && strcasestr(hay, needle) != NULL;
}

/* A message that names a full disk. */
static int names_full_disk(const char *s) {
  return contains_ci(s, "space") || contains_ci(s, "ENOSPC") || contains_ci(s, "full");
}

/* Every line of a worker transcript is whole ("seq=N") and the numbers
 * only grow; lines dropped while the disk was full leave a gap, never a
 * torn or repeated line. Returns the number of lines. */
static long check_seq_gapped(const char *id, const char *when) {
  char *p = hh_task_path(id, "transcript");
  size_t len;
  char *s = hh_slurp(p, &len);
  free(p);
  cr_assert(s, "%s: no transcript", when);
  long prev = 0, lines = 0;
  size_t off = 0;
  while (off < len) {
    char *nl = memchr(s + off, '\n', len - off);
    cr_assert(nl, "%s: the transcript of %s ends in a torn line '%.40s'", when, id, s + off);
    *nl = 0;
    char *end = NULL;
    long v = !strncmp(s + off, "seq=", 4) ? strtol(s + off + 4, &end, 10) : -1;
    cr_assert(v > prev && end && *end == 0,
              "%s: transcript of %s: line %ld is '%.60s' after seq=%ld (torn or repeated)", when,
              id, lines + 1, s + off, prev);
    prev = v;
    lines++;
    off = (size_t)(nl - s) + 1;
  }
  free(s);
  return lines;
}

/* ---- a full disk ----------------------------------------------------------------- */

static int write_file_in(const char *path, const char *data) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  if (fd < 0)
    return -errno;
  ssize_t n = write(fd, data, strlen(data));
  int e = n < 0 ? -errno : 0;
  if (close(fd) < 0 && !e)
    e = -errno;
  return e;
}

Test(hard_faults, tiny_tmpfs_fills) {
  char *fs = hh_store_on_tmpfs("size=2m,mode=0700");

  /* A slow worker that must live through the fault. */
  char t1[TFS_ID_MAX + 1];
  hh_run_worker("full1", 20000, NULL, t1);
  /* Two sleepers to stop while the disk is full: one through the mount,
   * one through the MCP server. */
  char s1[TFS_ID_MAX + 1], s2[TFS_ID_MAX + 1];
  const char *sl[] = {"/bin/sleep", "300", NULL};
  hh_run_task(NULL, sl, s1);
  hh_run_task(NULL, sl, s2);
  char *mnt = hh_strdupf("%s/mnt", hh.root);
  hh_mount_t m = {0};
  hh_mount_start(&m, mnt);
  hh_mcp_t mcp;
  hh_mcp_start(&mcp);
  cr_assert_eq(hh_mcp_initialize(&mcp), 0);

  /* Fill the disk to the last block. */
  char *filler = hh_strdupf("%s/filler", fs);
  hh_res_t dd = hh_sh("dd if=/dev/zero of='%s' bs=4096 2>&1", filler);
  cr_assert(names_full_disk(dd.out), "dd did not fill the disk: %s", dd.out);
  hh_res_free(&dd);
  hh_sleep_ms(1500); /* the worker keeps writing into a full disk */

  /* The task keeps running, or ended with a reason naming the full disk. */
  hh_check_store("disk full");
  {
    tfs_store_t *store;
    tfs_record_t rec;
    cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
    cr_assert_eq(tfs_task_load(store, t1, &rec), 0);
    cr_assert(rec.state == TFS_RUNNING ||
                  (tfs_state_terminal(rec.state) && names_full_disk(rec.reason)),
              "disk full: task %s is %s (reason: %s); want running, or ended naming the full "
              "disk",
              t1, tfs_state_name(rec.state), rec.reason ? rec.reason : "none");
    tfs_record_free(&rec);
    tfs_store_close(store);
  }

  /* The CLI: starting a task fails and says why. */
  hh_res_t r = hh_tfs("run", "--", "/bin/true", NULL);
  if (r.status != 0)
    cr_assert(names_full_disk(r.err), "taskfs run on a full disk failed without naming it: %s",
              r.err);
  hh_res_free(&r);
  r = hh_tfs("run", "--key", "full-disk-cli", "--", "/bin/true", NULL);
  if (r.status != 0)
    cr_expect(names_full_disk(r.err),
              "taskfs run --key on a full disk failed without naming it: %s", r.err);
  hh_res_free(&r);
  /* Reading still works. */
  r = hh_tfs("ls", NULL);
  cr_assert_eq(r.status, 0, "taskfs ls on a full disk: %s", r.err);
  cr_assert(strstr(r.out, t1), "taskfs ls on a full disk does not list %s", t1);
  hh_res_free(&r);

  /* The MCP server: a start fails with a clear error; it keeps serving. */
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(
      &mcp, "start_managed_task",
      json_pack("{s:s, s:[s]}", "taskKey", "full-disk", "command", "/bin/true"), &is_err, &msg);
  if (!res || is_err)
    cr_expect(names_full_disk(msg), "MCP start on a full disk: the error does not name it: %s",
              msg ? msg : "(no answer)");
  json_decref(res);
  free(msg);
  res = hh_mcp_tool(&mcp, "read_managed_task", json_pack("{s:s}", "taskId", t1), &is_err, &msg);
  cr_assert(res && !is_err, "MCP read on a full disk failed: %s", msg ? msg : "(no answer)");
  json_decref(res);
  free(msg);

  /* The mount: listing and reading work; a stop request either fails
   * with ENOSPC or is recorded. */
  char *tasks = hh_strdupf("%s/tasks", mnt);
  DIR *d = opendir(tasks);
  cr_assert(d, "the mount's tasks/ on a full disk: %s", strerror(errno));
  closedir(d);
  char *rec_path = hh_strdupf("%s/tasks/%s/record.json", mnt, t1);
  char *rj = hh_slurp(rec_path, NULL);
  cr_assert(rj, "reading %s on a full disk: %s", rec_path, strerror(errno));
  free(rj);

  /* Stop requests on a full disk: recorded (the task ends cancelled), or
   * refused with ENOSPC / an error naming the disk, never a vague error. */
  char *c1 = hh_strdupf("%s/tasks/%s/cancel", mnt, s1);
  int wrc = write_file_in(c1, "1\n");
  cr_expect(wrc == 0 || wrc == -ENOSPC, "echo 1 > cancel on a full disk failed with %s, not ENOSPC",
            strerror(-wrc));
  res = hh_mcp_tool(&mcp, "cancel_managed_task", json_pack("{s:s}", "taskId", s2), &is_err, &msg);
  int mcp_cancel_ok = res && !is_err;
  if (!mcp_cancel_ok)
    cr_expect(names_full_disk(msg), "MCP cancel on a full disk: the error does not name it: %s",
              msg ? msg : "(no answer)");
  json_decref(res);
  free(msg);
  cr_log_info("full disk: mount cancel %s, MCP cancel %s", wrc ? strerror(-wrc) : "recorded",
              mcp_cancel_ok ? "recorded" : "refused");

  /* Space returns: everything recovers. */
  cr_assert_eq(unlink(filler), 0);
  hh_check_store("space returned");
  char t2[TFS_ID_MAX + 1];
  hh_run_worker("full2", 20000, NULL, t2);
  res = hh_mcp_tool(
      &mcp, "start_managed_task",
      json_pack("{s:s, s:[s, s]}", "taskKey", "after-full", "command", "/bin/sleep", "300"),
      &is_err, &msg);
  cr_assert(res && !is_err, "MCP start after space returned: %s", msg ? msg : "(no answer)");
  const char *t3 = json_string_value(json_object_get(res, "taskId"));
  cr_assert(t3 && tfs_id_valid(t3));
  char t3id[TFS_ID_MAX + 1];
  snprintf(t3id, sizeof t3id, "%s", t3);
  json_decref(res);
  free(msg);

  /* Stop requests through the mount work again. */
  char *cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, t2);
  cr_assert_eq(write_file_in(cancel, "1\n"), 0, "echo 1 > %s after space returned: %s", cancel,
               strerror(errno));
  cr_assert_eq(hh_wait_ended(t2), TFS_CANCELLED);
  free(cancel);
  cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, t3id);
  cr_assert_eq(write_file_in(cancel, "1\n"), 0);
  cr_assert_eq(hh_wait_ended(t3id), TFS_CANCELLED);
  free(cancel);

  /* The first task: still going (or ended naming the disk); stop it. */
  if (!tfs_state_terminal(hh_state(t1))) {
    res = hh_mcp_tool(&mcp, "cancel_managed_task", json_pack("{s:s}", "taskId", t1), &is_err, &msg);
    cr_assert(res && !is_err, "MCP cancel after space returned: %s", msg ? msg : "(no answer)");
    json_decref(res);
    free(msg);
    cr_assert_eq(hh_wait_ended(t1), TFS_CANCELLED);
  }
  long lines = check_seq_gapped(t1, "after the full disk");
  cr_assert(lines > 0);
  char *cnt = hh_count_path("full1");
  cr_log_info("full disk: the worker wrote %ld lines, the transcript kept %ld (state %s)",
              hh_count_read(cnt), lines, tfs_state_name(hh_state(t1)));
  free(cnt);
  /* The sleepers: stopped now, whether or not the request landed while
   * the disk was full. */
  if (wrc)
    cr_assert_eq(write_file_in(c1, "1\n"), 0, "echo 1 > cancel after space returned");
  cr_assert_eq(hh_wait_ended(s1), TFS_CANCELLED);
  if (!mcp_cancel_ok) {
    res = hh_mcp_tool(&mcp, "cancel_managed_task", json_pack("{s:s}", "taskId", s2), &is_err, &msg);
    cr_assert(res && !is_err, "MCP cancel after space returned: %s", msg ? msg : "(no answer)");
    json_decref(res);
    free(msg);
  }
  cr_assert_eq(hh_wait_ended(s2), TFS_CANCELLED);
  free(c1);
  check_seq_gapped(t2, "after the full disk");
  hh_check_store("after the full disk");

  cr_assert_eq(hh_mcp_close(&mcp), 0, "the MCP server did not exit cleanly");
  cr_assert_eq(hh_mount_stop(&m), 0, "the mount did not stop cleanly");
  free(tasks);
  free(rec_path);
  free(filler);
  free(mnt);
  free(fs);
}

/* ---- inotify unavailable ---------------------------------------------------------- */

/* Starts `sleep 300` as a task (through wrap, if not NULL), checks whether
 * its supervisor has an instant stop path, stops it with `taskfs cancel`
 * and returns how long the stop took to land, in ms. */
static int64_t stop_latency(const char *const wrap[], const char *const env, int want_fast) {
  const char *argv[16];
  int n = 0;
  for (int i = 0; wrap && wrap[i]; i++)
    argv[n++] = wrap[i];
  argv[n++] = tu_taskfs_bin();
  argv[n++] = "run";
  argv[n++] = "--";
  argv[n++] = "/bin/sleep";
  argv[n++] = "300";
  argv[n] = NULL;
  if (env)
    setenv(env, "1", 1);
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  if (env)
    unsetenv(env);
  cr_assert_eq(r.status, 0, "taskfs run: %s", r.err);
  char id[TFS_ID_MAX + 1];
  snprintf(id, sizeof id, "%s", hh_chomp(r.out));
  hh_res_free(&r);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0, "no live supervisor for %s", id);
  /* Right after start-up the fast path may still be being set up: give
   * it a moment before concluding it is absent. */
  if (want_fast >= 0) {
    int fast = 0;
    for (int64_t end = hh_now_ms() + hh_timeout_ms();
         !(fast = has_fast_path(sup)) && want_fast && hh_now_ms() < end;)
      hh_sleep_ms(20);
    cr_assert_eq(fast, want_fast,
                 "the supervisor of %s %s an instant stop path (inotify or doorbell)", id,
                 want_fast ? "has no" : "still has");
  }
  int64_t t0 = hh_now_ms();
  r = hh_tfs("cancel", id, NULL);
  cr_assert_eq(r.status, 0, "taskfs cancel: %s", r.err);
  hh_res_free(&r);
  cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED, "the stop request was not acted on");
  return hh_now_ms() - t0;
}

/* A 64 KiB store (issue 30 item 7): too small for the supervisor's full
 * space reserve. Each `run --wait` either completes, or fails at once
 * saying the store is full, with a record that says so; never a hang
 * (the bound is a guard only) and never a record left queued, which
 * reads lost once its launcher is gone. */
Test(hard_faults, small_store_ends_honestly) {
  hh_store_on_tmpfs("size=64k,mode=0700");
  int completed = 0, full = 0;
  for (int i = 0; i < 12; i++) {
    const char *argv[] = {tu_taskfs_bin(), "run", "--wait", "--", "/bin/true", NULL};
    hh_res_t r = hh_run_argv(argv, NULL, 0, 120000);
    cr_assert(r.status >= 0, "run --wait on a 64 KiB store hung (run %d)", i);
    char id[TFS_ID_MAX + 1];
    snprintf(id, sizeof id, "%.*s", (int)strcspn(r.out ? r.out : "", "\n"), r.out ? r.out : "");
    if (r.status == 0) {
      completed++;
    } else {
      cr_assert(r.status == 111 && names_full_disk(r.err),
                "run %d on a 64 KiB store: exit %d, '%s'; want 0, or 111 naming the full store", i,
                r.status, r.err);
    }
    if (tfs_id_valid(id)) {
      tfs_record_t rec;
      char err[256];
      cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "%s", err);
      cr_assert(rec.state == TFS_COMPLETED || tfs_record_store_full(&rec),
                "task %s on a 64 KiB store is %s (%s); want completed, or failed naming the "
                "full store",
                id, tfs_state_name(rec.state), rec.reason ? rec.reason : "no reason");
      full += rec.state != TFS_COMPLETED;
      cr_assert((rec.state == TFS_COMPLETED) == (r.status == 0));
      tfs_record_free(&rec);
    }
    hh_res_free(&r);
  }
  cr_assert(completed > 0, "no task completed on a 64 KiB store");
  cr_log_info("64 KiB store: %d tasks completed, %d refused as the store was full", completed,
              full);
}

Test(hard_faults, no_inotify_switch) {
  int64_t with = stop_latency(NULL, NULL, 1);
  int64_t without = stop_latency(NULL, "TASKFS_NO_INOTIFY", 0);
  cr_log_info(
      "stop request picked up: %lld ms with the instant path, %lld ms with TASKFS_NO_INOTIFY=1",
      (long long)with, (long long)without);
}

Test(hard_faults, no_inotify_seccomp) {
  const char *wrap[] = {hh.self, "--hh-noinotify", NULL};
  /* The supervisor's doorbell needs no inotify; the stop lands either
   * way, by doorbell or by poll. */
  int64_t ms = stop_latency(wrap, NULL, -1);
  cr_log_info("stop request picked up in %lld ms with inotify_init failing (EMFILE)",
              (long long)ms);

  /* `taskfs wait` without inotify: its poll still sees the end. */
  {
    const char *run[] = {
        hh.self, "--hh-noinotify", tu_taskfs_bin(), "run", "--", "/bin/sh", "-c", "sleep 2", NULL};
    hh_res_t r = hh_run_argv(run, NULL, 0, hh_timeout_ms());
    cr_assert_eq(r.status, 0, "taskfs run without inotify: %s", r.err);
    char wid[TFS_ID_MAX + 1];
    snprintf(wid, sizeof wid, "%s", hh_chomp(r.out));
    hh_res_free(&r);
    const char *wait[] = {hh.self, "--hh-noinotify", tu_taskfs_bin(), "wait", wid, NULL};
    r = hh_run_argv(wait, NULL, 0, hh_timeout_ms());
    cr_assert_eq(r.status, 0, "taskfs wait without inotify: exit %d (%s)", r.status, r.err);
    hh_res_free(&r);
    const char *logs[] = {hh.self, "--hh-noinotify", tu_taskfs_bin(), "logs", "-f", wid, NULL};
    r = hh_run_argv(logs, NULL, 0, hh_timeout_ms());
    cr_assert_eq(r.status, 0, "taskfs logs -f without inotify: exit %d (%s)", r.status, r.err);
    hh_res_free(&r);
  }

  /* The MCP server without inotify: a long-poll still sees the end. */
  hh_mcp_t m;
  hh_mcp_start_ex(&m, wrap);
  cr_assert_eq(hh_mcp_initialize(&m), 0, "the MCP server does not start without inotify");
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(&m, "start_managed_task",
                            json_pack("{s:s, s:[s, s, s]}", "taskKey", "noinotify", "command",
                                      "/bin/sh", "-c", "sleep 3; echo done"),
                            &is_err, &msg);
  cr_assert(res && !is_err, "start without inotify: %s", msg ? msg : "(no answer)");
  char id[TFS_ID_MAX + 1];
  snprintf(id, sizeof id, "%s", json_string_value(json_object_get(res, "taskId")));
  json_decref(res);
  int64_t t0 = hh_now_ms();
  res = hh_mcp_tool(&m, "read_managed_task", json_pack("{s:s, s:i}", "taskId", id, "waitMs", 30000),
                    &is_err, &msg);
  int64_t took = hh_now_ms() - t0;
  cr_assert(res && !is_err, "read without inotify: %s", msg ? msg : "(no answer)");
  const char *state = json_string_value(json_object_get(res, "state"));
  cr_assert(state && !strcmp(state, "completed"),
            "the long-poll without inotify returned state %s after %lld ms, not the end",
            state ? state : "(none)", (long long)took);
  json_decref(res);
  cr_log_info("MCP long-poll without inotify returned the end after %lld ms", (long long)took);
  cr_assert_eq(hh_mcp_close(&m), 0);
}

/* ---- the store made unreadable, then removed --------------------------------------- */

static int mounted_alive(hh_mount_t *m) {
  return m->pid > 0 && waitpid(m->pid, NULL, WNOHANG) == 0;
}

/* Lists <mnt>/tasks; returns the number of entries or -errno. */
static int count_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -errno;
  int n = 0;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  int err = errno;
  closedir(d);
  return err ? -err : n;
}

/* list_managed_tasks: the number of tasks, or -1 with *msg on an error. */
static int mcp_count(hh_mcp_t *m, char **msg) {
  int is_err;
  *msg = NULL;
  json_t *res = hh_mcp_tool(m, "list_managed_tasks", json_object(), &is_err, msg);
  if (!res || is_err) {
    json_decref(res);
    return -1;
  }
  int n = (int)json_array_size(json_object_get(res, "tasks"));
  json_decref(res);
  return n;
}

Test(hard_faults, store_unreadable_then_removed) {
  const char *nodac[] = {"/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", NULL};
  if (access(nodac[0], X_OK))
    cr_skip_test("setpriv (util-linux) is not installed");
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  const char *done_cmd[] = {"/bin/echo", "hello", NULL};
  hh_run_task(NULL, done_cmd, a);
  hh_wait_ended(a);
  hh_run_worker("unread", 50000, NULL, b);

  char *mnt = hh_strdupf("%s/mnt", hh.root);
  char *mtasks = hh_strdupf("%s/tasks", mnt);
  hh_mount_t m = {0};
  cr_assert_eq(hh_mount_start_ex(&m, mnt, nodac), 0, "the mount did not come up");
  hh_mcp_t mcp;
  hh_mcp_start_ex(&mcp, nodac);
  cr_assert_eq(hh_mcp_initialize(&mcp), 0);
  cr_assert_eq(count_dir(mtasks), 2);
  char *msg;
  cr_assert_eq(mcp_count(&mcp, &msg), 2);

  /* Unreadable: the store and its tasks/ directory mode 000. */
  char *tasks = hh_strdupf("%s/tasks", hh.store);
  cr_assert_eq(chmod(tasks, 0), 0);
  cr_assert_eq(chmod(hh.store, 0), 0);
  int n = count_dir(mtasks);
  cr_assert(n == -EACCES || n == -EIO || n == 0,
            "the mount's tasks/ with an unreadable store: %d (want EACCES, EIO or empty)", n);
  char *rec = hh_strdupf("%s/%s/record.json", mtasks, a);
  free(hh_slurp(rec, NULL));
  cr_assert(mounted_alive(&m), "the mount died when the store became unreadable");
  n = mcp_count(&mcp, &msg);
  cr_assert(n == 0 || (n < 0 && msg &&
                       (contains_ci(msg, "permission") || contains_ci(msg, "access") ||
                        contains_ci(msg, "cannot"))),
            "MCP list with an unreadable store: %d tasks, error %s", n, msg ? msg : "(none)");
  free(msg);
  cr_assert_eq(chmod(hh.store, 0700), 0);
  cr_assert_eq(chmod(tasks, 0700), 0);
  cr_assert_eq(count_dir(mtasks), 2, "the mount did not recover once the store was readable");
  cr_assert_eq(mcp_count(&mcp, &msg), 2, "the MCP server did not recover: %s", msg ? msg : "");
  char *r = hh_slurp(rec, NULL);
  cr_assert(r && strstr(r, a), "record.json through the mount after recovery: %s",
            r ? r : strerror(errno));
  free(r);

  /* Removed: renamed away under them, then back. */
  hh_res_t c = hh_tfs("cancel", b, NULL);
  hh_res_free(&c);
  hh_wait_ended(b);
  /* (A process that holds the directory open may go on showing it where
   * it went, or show nothing: both are fine; crashing is not.) */
  char *away = hh_strdupf("%s/store.away", hh.root);
  cr_assert_eq(rename(hh.store, away), 0);
  n = count_dir(mtasks);
  cr_assert(n == 0 || n == 2 || n == -ENOENT || n == -EIO,
            "the mount's tasks/ with the store moved away: %d", n);
  cr_assert(mounted_alive(&m), "the mount died when the store was moved away");
  n = mcp_count(&mcp, &msg);
  cr_assert(n == 0 || n == 2 || (n < 0 && msg), "MCP list with the store moved away: %d", n);
  free(msg);
  cr_assert_eq(rename(away, hh.store), 0);
  cr_assert_eq(count_dir(mtasks), 2, "the mount did not show the store once it was back");
  cr_assert_eq(mcp_count(&mcp, &msg), 2, "the MCP server did not show the store once back: %s",
               msg ? msg : "");

  /* Deleted for good, then made again by a new task. */
  tu_rmrf(hh.store);
  n = count_dir(mtasks);
  cr_assert(n == 0 || n == -ENOENT || n == -EIO, "the mount's tasks/ with the store deleted: %d",
            n);
  n = mcp_count(&mcp, &msg);
  cr_assert(n == 0 || (n < 0 && msg), "MCP list with the store deleted: %d", n);
  free(msg);
  char c3[TFS_ID_MAX + 1];
  hh_run_task(NULL, done_cmd, c3);
  cr_assert_eq(count_dir(mtasks), 1, "the mount does not show the new store's task");
  char *rec3 = hh_strdupf("%s/%s/record.json", mtasks, c3);
  r = hh_slurp(rec3, NULL);
  cr_assert(r && strstr(r, c3), "the new task's record through the mount: %s",
            r ? r : strerror(errno));
  free(r);
  n = mcp_count(&mcp, &msg);
  cr_expect_eq(n, 1, "the MCP server lists %d tasks of the new store, not its one task %s (%s)", n,
               c3, msg ? msg : "no error");
  free(msg);
  /* And the server can still act on it. */
  int is_err;
  json_t *res =
      hh_mcp_tool(&mcp, "read_managed_task", json_pack("{s:s}", "taskId", c3), &is_err, &msg);
  cr_expect(res && !is_err, "MCP read of %s in the new store: %s", c3, msg ? msg : "(no answer)");
  json_decref(res);

  cr_assert(mounted_alive(&m));
  cr_assert_eq(hh_mcp_close(&mcp), 0);
  cr_assert_eq(hh_mount_stop(&m), 0);
  free(rec);
  free(rec3);
  free(away);
  free(tasks);
  free(mtasks);
  free(mnt);
}
