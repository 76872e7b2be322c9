/* End-to-end tests of `taskfs run` and `taskfs wait`: the real binary
 * (tu_taskfs_bin()) starts real supervisors; launchers are killed with
 * SIGKILL, alone or with their whole session, and the task still ends on
 * disk. */
#include "tests/sup_fixture.h"

#include <jansson.h>

TestSuite(run, .init = sx_setup, .fini = sx_teardown, .timeout = 60);

/* Starts `taskfs ARGV` in a child (in a new session if new_session), its
 * stdout on a pipe; reads the id line; returns the child's pid. */
static pid_t spawn_launcher(char *const argv[], int new_session, char id[TFS_ID_MAX + 1]) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (new_session)
      setsid();
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    if (chdir(sx_tmp) < 0)
      _exit(126);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  char buf[128];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof buf - 1 && !memchr(buf, '\n', len) &&
         (n = read(p[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = 0;
  close(p[0]);
  sx_first_id(buf, id);
  return pid;
}

static int is_running(void *arg) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec);
  int ok = tfs_task_load(sx_store, arg, &rec) == 0 && rec.state == TFS_RUNNING;
  tfs_record_free(&rec);
  return ok;
}

Test(run, prints_the_id_and_returns_while_the_task_runs) {
  char *out, *err, id[TFS_ID_MAX + 1];
  int rc = sx_taskfs(&out, &err, "run --state-dir '%s' -- sleep 300.201", sx_state);
  cr_assert_eq(rc, 0, "rc %d: %s", rc, err);
  sx_first_id(out, id);
  cr_assert_eq(strlen(out), strlen(id) + 1, "one line only: %s", out);
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_RUNNING);
  cr_assert_str_eq(rec.cwd, sx_tmp);
  cr_assert_str_eq(rec.argv[0], "sleep");
  tfs_record_free(&rec);
  free(out);
  free(err);
}

/* The task of the launcher tests: it runs until the test has killed its
 * launcher (the file gate in the test directory), then finishes. A fixed
 * 0.5 s could end before a slow machine saw it running. */
#define UNTIL_GATE "until [ -e gate ]; do sleep 0.05; done; echo finished"

static void open_gate(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/gate", sx_tmp);
  cr_assert_eq(tu_write_file(path, "", 0), 0);
}

Test(run, a_task_outlives_its_killed_launcher) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {(char *)tu_taskfs_bin(),
                  "run",
                  "--wait",
                  "--state-dir",
                  sx_state,
                  "--",
                  "sh",
                  "-c",
                  UNTIL_GATE,
                  NULL};
  pid_t pid = spawn_launcher(argv, 0, id);
  cr_assert(tu_wait_until(is_running, id, 20000));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  open_gate();
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s: %s", tfs_state_name(rec.state), rec.reason);
  tfs_record_free(&rec);
  char *tx = sx_task_file(id, "transcript", NULL);
  cr_assert_str_eq(tx, "finished\n");
  free(tx);
}

Test(run, a_task_outlives_its_launchers_whole_session) {
  char id[TFS_ID_MAX + 1], script[PATH_MAX * 2];
  /* A shell leads the session; the launcher is its child; both die. */
  snprintf(script, sizeof script,
           "'%s' run --wait --state-dir '%s' -- sh -c '" UNTIL_GATE "'; sleep 300.202",
           tu_taskfs_bin(), sx_state);
  char *argv[] = {"sh", "-c", script, NULL};
  pid_t pid = spawn_launcher(argv, 1, id);
  cr_assert(tu_wait_until(is_running, id, 20000));
  cr_assert_eq(kill(-pid, SIGKILL), 0, "kill the session's process group");
  waitpid(pid, NULL, 0);
  open_gate();
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s: %s", tfs_state_name(rec.state), rec.reason);
  tfs_record_free(&rec);
  char *tx = sx_task_file(id, "transcript", NULL);
  cr_assert_str_eq(tx, "finished\n");
  free(tx);
}

Test(run, a_command_that_cannot_start_exits_127_after_printing_the_id) {
  char *out, *err, id[TFS_ID_MAX + 1];
  int rc = sx_taskfs(&out, &err, "run --state-dir '%s' -- taskfs-no-such-command-xyz", sx_state);
  cr_assert_eq(rc, 127, "rc %d: %s", rc, err);
  sx_first_id(out, id);
  cr_assert_not_null(strstr(err, "cannot start 'taskfs-no-such-command-xyz': command not found"),
                     "stderr: %s", err);
  free(out);
  free(err);
  rc = sx_taskfs(&out, &err, "run --state-dir '%s' --cwd /nonexistent/xyz -- true", sx_state);
  cr_assert_eq(rc, 127);
  cr_assert_not_null(strstr(err, "working directory"), "stderr: %s", err);
  free(out);
  free(err);
  /* wait reports the same end with the same code. */
  rc = sx_taskfs(NULL, NULL, "wait --state-dir '%s' %s", sx_state, id);
  cr_assert_eq(rc, 127);
}

Test(run, a_key_runs_its_command_once) {
  char *out1, *out2, *out3, *err, id1[TFS_ID_MAX + 1], id2[TFS_ID_MAX + 1], id3[TFS_ID_MAX + 1];
  const char *cmd = "sh -c 'echo ran >> side-effect'";
  cr_assert_eq(
      sx_taskfs(&out1, NULL, "run --wait --key build:1 --state-dir '%s' -- %s", sx_state, cmd), 0);
  cr_assert_eq(sx_taskfs(&out2, &err, "run --key build:1 --state-dir '%s' -- %s", sx_state, cmd),
               0);
  sx_first_id(out1, id1);
  sx_first_id(out2, id2);
  cr_assert_str_eq(id1, id2);
  cr_assert_not_null(strstr(err, "--rerun"), "stderr: %s", err);
  free(err);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/side-effect", sx_tmp);
  char *side = tu_read_file(path, NULL);
  cr_assert_str_eq(side, "ran\n");
  free(side);
  /* --rerun runs the ended task's command again, as a new task. */
  cr_assert_eq(sx_taskfs(&out3, NULL, "run --wait --rerun --key build:1 --state-dir '%s' -- %s",
                         sx_state, cmd),
               0);
  sx_first_id(out3, id3);
  cr_assert_str_neq(id3, id1);
  side = tu_read_file(path, NULL);
  cr_assert_str_eq(side, "ran\nran\n");
  free(side);
  /* Another command under the key is refused. */
  cr_assert_eq(sx_taskfs(NULL, &err, "run --key build:1 --state-dir '%s' -- true", sx_state), 100);
  cr_assert_not_null(strstr(err, "different command"), "stderr: %s", err);
  free(err);
  free(out1);
  free(out2);
  free(out3);
}

Test(run, wait_and_run_wait_exit_with_the_tasks_code) {
  char *out, *err, id[TFS_ID_MAX + 1];
  cr_assert_eq(sx_taskfs(&out, NULL, "run --state-dir '%s' -- sh -c 'sleep 0.2; exit 3'", sx_state),
               0);
  sx_first_id(out, id);
  free(out);
  cr_assert_eq(sx_taskfs(NULL, &err, "wait --state-dir '%s' %s", sx_state, id), 3);
  cr_assert_not_null(strstr(err, "exited with code 3"), "stderr: %s", err);
  free(err);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --wait --state-dir '%s' -- sh -c 'exit 5'", sx_state), 5);
  cr_assert_eq(
      sx_taskfs(NULL, NULL, "run --wait --state-dir '%s' -- sh -c 'kill -TERM $$'", sx_state),
      128 + SIGTERM);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --wait --state-dir '%s' -- true", sx_state), 0);
}

Test(run, wait_times_out_with_124_and_knows_unknown_tasks) {
  char *out, *err, id[TFS_ID_MAX + 1];
  cr_assert_eq(sx_taskfs(&out, NULL, "run --state-dir '%s' -- sleep 300.203", sx_state), 0);
  sx_first_id(out, id);
  free(out);
  cr_assert_eq(sx_taskfs(NULL, &err, "wait --timeout 0.3 --state-dir '%s' %s", sx_state, id), 124);
  cr_assert_not_null(strstr(err, "still running after 300ms (--timeout)"), "stderr: %s", err);
  free(err);
  cr_assert_eq(sx_taskfs(NULL, NULL, "wait --state-dir '%s' no-such-key", sx_state), 101);
  /* A stop request through the CLI: wait then reports cancelled, 130. */
  cr_assert_eq(sx_taskfs(NULL, NULL, "cancel --state-dir '%s' %s", sx_state, id), 0);
  cr_assert_eq(
      sx_taskfs(NULL, NULL, "wait --timeout %d --state-dir '%s' %s", 20 * tu_slow(), sx_state, id),
      130);
}

Test(run, wait_settles_a_lost_task) {
  char *out, id[TFS_ID_MAX + 1];
  cr_assert_eq(sx_taskfs(&out, NULL, "run --state-dir '%s' -- sleep 300.204", sx_state), 0);
  sx_first_id(out, id);
  free(out);
  tfs_record_t rec = sx_load(id);
  pid_t sup = rec.supervisor_pid;
  tfs_record_free(&rec);
  cr_assert_eq(kill(sup, SIGKILL), 0);
  cr_assert_eq(
      sx_taskfs(NULL, NULL, "wait --timeout %d --state-dir '%s' %s", 20 * tu_slow(), sx_state, id),
      102);
  char *raw = sx_task_file(id, "record.json", NULL);
  cr_assert_not_null(strstr(raw, "\"lost\""), "wait should have written lost: %s", raw);
  free(raw);
  sx_kill_procs_with("sleep 300.204");
}

Test(run, follow_prints_the_output_and_ends_with_the_task) {
  char *out, id[TFS_ID_MAX + 1];
  int rc = sx_taskfs(&out, NULL,
                     "run --follow --state-dir '%s' -- sh -c 'echo one; sleep 0.3; echo two >&2; "
                     "printf three; exit 4'",
                     sx_state);
  cr_assert_eq(rc, 4);
  sx_first_id(out, id);
  cr_assert_str_eq(out + strlen(id) + 1, "one\ntwo\nthree");
  free(out);
}

Test(run, env_values_stay_off_the_disk) {
  char path[PATH_MAX];
  cr_assert_eq(sx_taskfs(NULL, NULL,
                         "run --wait --env TFS_CLI_SECRET=v4lu3-0f-cli --state-dir '%s' -- "
                         "sh -c 'printf %%s \"$TFS_CLI_SECRET\" > seen'",
                         sx_state),
               0);
  snprintf(path, sizeof path, "%s/seen", sx_tmp);
  char *seen = tu_read_file(path, NULL);
  cr_assert_str_eq(seen, "v4lu3-0f-cli");
  free(seen);
  cr_assert_eq(tu_sh(NULL, "grep -r -q -a v4lu3-0f '%s'", sx_state), 1);
  cr_assert_eq(tu_sh(NULL, "grep -r -q -a TFS_CLI_SECRET '%s'", sx_state), 0, "the name is kept");
}

/* Arguments and a cwd that are not valid UTF-8 reach the worker byte for
 * byte: the supervisor runs what the record holds, so the record must hold
 * the exact bytes, not their display form. */
Test(run, arguments_and_cwd_that_are_not_utf8_arrive_exactly) {
  char dir[PATH_MAX], path[PATH_MAX + 16], *out, *err, id[TFS_ID_MAX + 1];
  snprintf(dir, sizeof dir, "%s/d\xff\xfe", sx_tmp);
  cr_assert_eq(mkdir(dir, 0700), 0);
  /* The shell makes the bytes: sh is dash, which has no $'\xff'. */
  const char *script = "run --wait --key bytes --cwd \"$(printf '%%s/d\\377\\376' '%s')\" "
                       "--state-dir '%s' -- sh -c 'printf %%s \"$1\" > out; pwd > where' sh "
                       "\"$(printf 'a\\377\\376b\\303(')\"";
  cr_assert_eq(sx_taskfs(&out, &err, script, sx_tmp, sx_state), 0, "stderr: %s", err);
  free(err);
  sx_first_id(out, id);
  free(out);
  size_t len;
  snprintf(path, sizeof path, "%s/out", dir);
  char *got = tu_read_file(path, &len);
  cr_assert(got && len == 6 &&
                !memcmp(got,
                        "a\xff\xfe"
                        "b\xc3(",
                        6),
            "the worker got different argument bytes (%zu bytes: %s)", len, got ? got : "none");
  free(got);
  snprintf(path, sizeof path, "%s/where", dir);
  got = tu_read_file(path, &len);
  cr_assert(got && len == strlen(dir) + 1 && !memcmp(got, dir, strlen(dir)),
            "the worker ran in %s, not in the non-UTF-8 directory", got ? got : "?");
  free(got);
  /* The same bytes again under the key: the same task, not a conflict. */
  cr_assert_eq(sx_taskfs(&out, NULL, script, sx_tmp, sx_state), 0);
  char id2[TFS_ID_MAX + 1];
  sx_first_id(out, id2);
  free(out);
  cr_assert_str_eq(id2, id);
  /* The record on disk stays strict JSON, with the display form in "command". */
  char *raw = sx_task_file(id, "record.json", NULL);
  json_error_t jerr;
  json_t *j = json_loads(raw, 0, &jerr);
  cr_assert_not_null(j, "record.json is not strict JSON: %s", jerr.text);
  cr_assert(json_is_string(json_array_get(json_object_get(j, "command"), 3)));
  cr_assert(json_is_array(json_object_get(j, "commandBytes")));
  cr_assert(json_is_object(json_object_get(j, "cwdBytes")));
  json_decref(j);
  free(raw);
}

Test(run, help_and_usage_errors) {
  char *out;
  cr_assert_eq(sx_taskfs(&out, NULL, "run --help"), 0);
  cr_assert_not_null(strstr(out, "usage: taskfs run"));
  free(out);
  cr_assert_eq(sx_taskfs(&out, NULL, "wait --help"), 0);
  cr_assert_not_null(strstr(out, "usage: taskfs wait"));
  free(out);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --state-dir '%s'", sx_state), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --restart sometimes -- true"), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --stderr both -- true"), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --env 1BAD=x -- true"), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --wait --follow -- true"), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "run --bogus -- true"), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "wait --all x"), 100);
  cr_assert_eq(sx_taskfs(NULL, NULL, "wait --timeout soon x"), 100);
  /* Every duration option reads the same syntax, and refuses the same. */
  const char *bad[] = {"run --grace 5x -- true",      "run --min-uptime -1 -- true",
                       "run --min-uptime 1w -- true", "wait --timeout 1.5.2 x",
                       "wait --timeout ms x",         "cancel --wait --timeout '' x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *err;
    cr_assert_eq(sx_taskfs(NULL, &err, "%s", bad[i]), 100, "%s", bad[i]);
    cr_assert_not_null(strstr(err, "wants a duration: a number with a unit ms, s, m, h or d"),
                       "%s: %s", bad[i], err);
    free(err);
  }
}

Test(run, a_key_whose_launcher_died_before_launching_is_adopted) {
  /* What a `taskfs run --key` killed between create and launch leaves. */
  char id[TFS_ID_MAX + 1], *out;
  char *argv[] = {"sh", "-c", "echo ran >> side-effect", NULL};
  tfs_task_spec_t spec = {.key = "wedge", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  sx_create(id, argv, &spec);
  cr_assert_eq(
      sx_taskfs(&out, NULL,
                "run --wait --key wedge --state-dir '%s' -- sh -c 'echo ran >> side-effect'",
                sx_state),
      0);
  cr_assert_eq(strncmp(out, id, strlen(id)), 0, "another task was made: %s", out);
  free(out);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/side-effect", sx_tmp);
  char *side = tu_read_file(path, NULL);
  cr_assert_str_eq(side, "ran\n");
  free(side);
}

static const char *g_needle_run;
static int no_proc(void *arg) {
  return sx_procs_with(g_needle_run) == 0;
}

Test(run, a_task_launched_twice_runs_once) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"sh", "-c", "echo ran >> side-effect; sleep 0.5", NULL};
  sx_create(id, argv, NULL);
  pid_t kids[2];
  for (int i = 0; i < 2; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      tfs_store_t *st;
      tfs_record_t rec;
      tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
      if (tfs_store_open(sx_state, &st) || tfs_launch(st, id, &lo, &rec))
        _exit(1);
      _exit(0);
    }
  }
  for (int i = 0; i < 2; i++)
    waitpid(kids[i], NULL, 0);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/side-effect", sx_tmp);
  char *side = tu_read_file(path, NULL);
  cr_assert_str_eq(side, "ran\n");
  free(side);
  /* And no second supervisor lingers. */
  char needle[PATH_MAX + 64];
  snprintf(needle, sizeof needle, "supervise --state-dir %s %s", sx_state, id);
  g_needle_run = needle;
  cr_assert(tu_wait_until(no_proc, NULL, 10000), "a supervisor of %s lingers", id);
}

Test(run, important_k_and_policy_options_reach_the_record) {
  char *out, id[TFS_ID_MAX + 1];
  cr_assert_eq(
      sx_taskfs(&out, NULL,
                "run --wait --important-k 3 --grace 1.234s --min-uptime 50ms --max-restarts 7 "
                "--max-quick-restarts 2 --stderr split "
                "--restart on-failure --state-dir '%s' -- sh -c 'for i in 1 2 3 4 5 6 7 8; "
                "do echo \"error: e$i\"; done'",
                sx_state),
      0);
  sx_first_id(out, id);
  free(out);
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.important.k, 3);
  cr_assert_eq(rec.important.nfirst, 3);
  cr_assert_eq(rec.important.total, 8);
  cr_assert_str_eq(rec.important.first[0].text, "error: e1");
  cr_assert_str_eq(tfs_important_last(&rec.important, rec.important.nlast - 1)->text, "error: e8");
  cr_assert_eq(rec.grace_ms, 1234);
  cr_assert_eq(rec.min_uptime_ms, 50);
  cr_assert_eq(rec.max_restarts, 7);
  cr_assert_eq(rec.max_quick_restarts, 2);
  cr_assert_eq(rec.restart, TFS_RESTART_ON_FAILURE);
  cr_assert_eq(rec.stderr_mode, TFS_STDERR_SPLIT);
  tfs_record_free(&rec);
}

/* When a limit ends the restarts, the task ends as its last worker did, so
 * its state, its exit code and `wait` agree (never failed with exit 0);
 * --max-restarts counts every restart, --max-quick-restarts only quick
 * exits in a row. */
Test(run, a_restart_limit_ends_the_task_as_its_last_worker_did) {
  struct {
    const char *opts, *script;
    int code, restarts;
    tfs_state_t state;
    const char *reason;
  } cases[] = {
      {"--restart always --max-restarts 3 --min-uptime 0", "exit 0", 0, 3, TFS_COMPLETED,
       "exited with code 0; not restarted again: 3 restarts, the limit (max-restarts)"},
      {"--restart on-failure --max-restarts 2 --min-uptime 0", "exit 3", 3, 2, TFS_FAILED,
       "exited with code 3; not restarted again: 2 restarts, the limit (max-restarts)"},
      {"--restart always --min-uptime 1h --max-quick-restarts 1", "exit 0", 0, 1, TFS_COMPLETED,
       "crash loop: 2 exits within min-uptime 3600000 ms in a row (last: exit code 0)"},
      {"--restart on-failure --min-uptime 500ms --max-quick-restarts 0", "exit 4", 4, 0, TFS_FAILED,
       "crash loop: 1 exits within min-uptime 500 ms in a row (last: exit code 4)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out, id[TFS_ID_MAX + 1];
    int rc = sx_taskfs(&out, NULL, "run --wait %s --state-dir '%s' -- sh -c '%s'", cases[i].opts,
                       sx_state, cases[i].script);
    cr_assert_eq(rc, cases[i].code, "%s: run --wait exited %d", cases[i].opts, rc);
    sx_first_id(out, id);
    free(out);
    tfs_record_t rec = sx_load(id);
    cr_assert_eq(rec.state, cases[i].state, "%s: %s", cases[i].opts, tfs_state_name(rec.state));
    cr_assert_eq(rec.exit_code, cases[i].code);
    cr_assert_eq(rec.restarts, cases[i].restarts, "%s: %d restarts", cases[i].opts, rec.restarts);
    cr_assert_str_eq(rec.reason, cases[i].reason);
    tfs_record_free(&rec);
    cr_assert_eq(sx_taskfs(NULL, NULL, "wait --state-dir '%s' %s", sx_state, id), cases[i].code);
  }
}

/* cancel --wait and wait report a --timeout that ran out in the same words. */
Test(run, cancel_and_wait_time_out_in_the_same_words) {
  char *out, *err, id[TFS_ID_MAX + 1];
  cr_assert_eq(sx_taskfs(&out, NULL,
                         "run --grace 1m --state-dir '%s' -- sh -c 'trap \"\" TERM; sleep 300.206'",
                         sx_state),
               0);
  sx_first_id(out, id);
  free(out);
  cr_assert_eq(sx_taskfs(NULL, &err, "wait --timeout 1 --state-dir '%s' %s", sx_state, id), 124);
  cr_assert_not_null(strstr(err, "still running after 1s (--timeout)"), "wait: %s", err);
  free(err);
  cr_assert_eq(sx_taskfs(NULL, &err, "cancel --wait --timeout 1 --state-dir '%s' %s", sx_state, id),
               124);
  cr_assert_not_null(strstr(err, "still running after 1s (--timeout)"), "cancel: %s", err);
  free(err);
  sx_kill_procs_with("sleep 300.206");
}
