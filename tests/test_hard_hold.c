/* What a supervisor holds on to, so that nothing outside its task is ever
 * touched (docs/security.md):
 *   - its task directory, opened once: a tasks/<id> swapped for a symlink
 *     or for another directory while the task runs is never written into
 *     or deleted from, and the task's end lands in its own directory;
 *   - its worker's process group: the sentinel, which signals the group
 *     should the supervisor be killed, is a member, so the group id cannot
 *     be recycled by an unrelated process after PID wrap. */
#include "tests/hardening/hard.h"

#include <sys/stat.h>

TestSuite(hard_hold, .init = hh_setup, .fini = hh_teardown, .timeout = 120);

/* ---- the task directory ---------------------------------------------------------- */

/* A directory with the names the supervisor removes at its end, and
 * nothing else. */
static char *decoy_dir(const char *name) {
  char *dir = hh_strdupf("%s/%s", hh.root, name);
  cr_assert_eq(mkdir(dir, 0700), 0);
  static const char *const files[] = {"doorbell", "space-reserve", "keep"};
  for (int i = 0; i < 3; i++) {
    char *f = hh_strdupf("%s/%s", dir, files[i]);
    cr_assert_eq(tu_write_file(f, "keep\n", 5), 0);
    free(f);
  }
  return dir;
}

/* The sorted names in dir, one a line. */
static char *listing(const char *dir) {
  return hh_sh_out("ls -A '%s'", dir);
}

/* Runs a task, swaps its directory while it runs (swap makes tasks/<id>
 * a symlink to decoy, or decoy itself), stops it by a signal to its
 * supervisor (a stop request through the store would not find the task),
 * and checks that decoy is as it was and the end is in the moved
 * directory. */
static void swap_and_stop(int as_symlink) {
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/bin/sleep", "300", NULL};
  hh_run_task(NULL, cmd, id);
  hh_wait_running(id);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  char *decoy = decoy_dir("decoy"), *before = listing(decoy);
  char *task = hh_strdupf("%s/tasks/%s", hh.store, id), *moved = hh_strdupf("%s/moved", hh.root);
  cr_assert_eq(rename(task, moved), 0);
  if (as_symlink)
    cr_assert_eq(symlink(decoy, task), 0);
  else
    cr_assert_eq(rename(decoy, task), 0);
  cr_assert_eq(kill(sup, SIGTERM), 0);
  /* The end lands in the supervisor's own directory. */
  int64_t end = hh_now_ms() + hh_timeout_ms();
  tfs_record_t rec;
  char *recpath = hh_strdupf("%s/record.json", moved), err[256];
  int ended = 0;
  while (!ended && hh_now_ms() < end) {
    size_t len;
    char *s = hh_slurp(recpath, &len);
    if (s && tfs_record_parse(s, len, &rec, err, sizeof err) == 0) {
      ended = tfs_state_terminal(rec.state);
      tfs_record_free(&rec);
    }
    free(s);
    if (!ended)
      hh_sleep_ms(20);
  }
  /* Its supervisor is gone: whatever it was going to do is done. */
  while (kill(sup, 0) == 0 && hh_now_ms() < end)
    hh_sleep_ms(20);
  if (!as_symlink)
    cr_assert_eq(rename(task, decoy), 0);
  char *after = listing(decoy);
  cr_assert_str_eq(after, before, "the supervisor changed a directory it did not take: %s -> %s",
                   before, after);
  cr_assert(ended, "the task's end is not in its own directory");
  char *left = listing(moved);
  cr_assert(!strstr(left, "doorbell") && !strstr(left, "space-reserve"),
            "the supervisor did not clean its own directory: %s", left);
  free(left);
  free(after);
  free(recpath);
  free(moved);
  free(task);
  free(before);
  free(decoy);
}

Test(hard_hold, a_task_dir_swapped_for_a_symlink_is_never_followed) {
  swap_and_stop(1);
}

Test(hard_hold, a_task_dir_swapped_for_another_dir_is_never_touched) {
  swap_and_stop(0);
}

/* ---- the worker's process group ----------------------------------------------------- */

/* In a PID namespace of its own (pids wrap at once, and ns_last_pid aims
 * the next one), as the audit did: the worker leaves a SIGTERM-ignoring
 * child in a session of its own and exits, so its group is empty; an
 * unrelated process is started with the worker's pid as its own group;
 * then the supervisor is killed -9 and its sentinel acts. The unrelated
 * process must survive. */
static const char pidns_script[] =
    "set -u\n"
    "D=$1; TFS=$2; N=$((3000 * $3)) # 30 s times TASKFS_TEST_SLOW: guards, never verdicts\n"
    "export TASKFS_STATE_DIR=$D/ns-store\n"
    "id=$(\"$TFS\" run --grace 600000 -- /bin/sh -c 'setsid /bin/sh -c \"trap \\\"\\\" TERM; "
    ": > '\"$D\"'/ready; exec sleep 1000\" </dev/null >/dev/null 2>&1 & "
    "while [ ! -e '\"$D\"'/ready ]; do sleep 0.01; done; echo $$ > '\"$D\"'/worker; exit 0')\n"
    "n=0; while [ ! -s $D/worker ] && [ $n -lt $N ]; do sleep 0.01; n=$((n+1)); done\n"
    "W=$(cat $D/worker)\n"
    "n=0; while [ -e /proc/$W ] && [ $n -lt $N ]; do sleep 0.01; n=$((n+1)); done\n"
    "echo $((W-1)) > /proc/sys/kernel/ns_last_pid\n"
    "setsid sleep 1000 & V=$!\n"
    "[ \"$V\" = \"$W\" ] && r=1 || r=0\n"
    "SUP=$(\"$TFS\" show $id | sed -n 's/.*\"pid\": \\([0-9]*\\).*/\\1/p' | head -1)\n"
    "kill -9 $SUP\n"
    "n=0; while grep -qs taskfs-sentinel /proc/[0-9]*/comm && [ $n -lt $N ]; do "
    "sleep 0.01; n=$((n+1)); done\n"
    "grep -qs taskfs-sentinel /proc/[0-9]*/comm && s=1 || s=0\n"
    "kill -0 $V 2>/dev/null && a=1 || a=0\n"
    "echo \"worker=$W unrelated=$V recycled=$r alive=$a sentinel=$s\"\n";

Test(hard_hold, a_sentinel_never_signals_a_recycled_group) {
  if (access("/usr/bin/unshare", X_OK))
    cr_skip_test("unshare (util-linux) is not installed");
  char *script = hh_strdupf("%s/pidns.sh", hh.root);
  cr_assert_eq(tu_write_file(script, pidns_script, strlen(pidns_script)), 0);
  char slow[16];
  snprintf(slow, sizeof slow, "%d", tu_slow());
  const char *argv[] = {
      "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", script, hh.root,
      tu_taskfs_bin(),    slow,    NULL};
  /* The script's three waits, each a guard of 30 s times tu_slow(). */
  hh_res_t r = hh_run_argv(argv, NULL, 0, 4 * 30000 * tu_slow());
  cr_assert_eq(r.status, 0, "the PID namespace run failed (%d): %s", r.status, r.err);
  cr_assert(strstr(r.out, "sentinel=0"), "the sentinel did not finish: %s", r.out);
  cr_assert(strstr(r.out, "alive=1"),
            "the sentinel killed an unrelated process that got the worker's group id: %s", r.out);
  /* With the group held by the sentinel, its id is never handed out. */
  cr_assert(strstr(r.out, "recycled=0"), "the worker's group id was recycled: %s", r.out);
  hh_res_free(&r);
  free(script);
}
