/* The claims of docs/security.md that no other test proves:
 *   - the store is private: directories 0700, files 0600, whatever the
 *     umask of whoever made them;
 *   - environment values never reach the disk (nor a command line other
 *     users can read): only names are recorded;
 *   - commands are argv arrays; a shell runs only when asked for;
 *   - the mount is usable by its owner only, and only its owner can
 *     request a stop through it. */
#include "tests/hardening/hard.h"

#include <sys/stat.h>

TestSuite(hard_security, .init = hh_setup, .fini = hh_teardown, .timeout = 120);

/* Walks dir; fails on any entry readable, writable or searchable by group
 * or others. Returns the number of entries checked. */
static int check_private(const char *dir) {
  hh_res_t r = hh_sh("find '%s' -perm /077 -printf '%%m %%p\\n'", dir);
  cr_assert_eq(r.status, 0);
  cr_assert_str_empty(r.out, "entries of the store open to group or others:\n%s", r.out);
  hh_res_free(&r);
  r = hh_sh("find '%s' | wc -l", dir);
  int n = atoi(r.out);
  hh_res_free(&r);
  return n;
}

Test(hard_security, store_is_private_whatever_the_umask) {
  umask(0); /* inherited by every process started below */
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  const char *cmd[] = {"/bin/sh", "-c", "echo out; echo error: err >&2", NULL};
  const char *keyed[] = {"--key", "private", NULL};
  hh_run_task(keyed, cmd, a);
  hh_wait_ended(a);
  const char *sl[] = {"/bin/sleep", "300", NULL};
  hh_run_task(NULL, sl, b);
  hh_res_t r = hh_tfs("cancel", b, NULL);
  hh_res_free(&r);
  hh_wait_ended(b);
  /* The MCP server writes owner.json and starts a task of its own. */
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(
      &m, "start_managed_task",
      json_pack("{s:s, s:[s, s]}", "taskKey", "mcp-private", "command", "/bin/echo", "x"), &is_err,
      &msg);
  cr_assert(res && !is_err, "%s", msg ? msg : "no answer");
  json_decref(res);
  cr_assert_eq(hh_mcp_close(&m), 0);
  struct stat st;
  cr_assert_eq(stat(hh.store, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0700, "the store directory is %o", st.st_mode & 07777);
  int n = check_private(hh.store);
  cr_assert(n > 10, "only %d entries checked", n);
}

Test(hard_security, env_values_never_reach_the_disk) {
  const char *secret = "s3cr3t-VALUE-4f1a";
  char id[TFS_ID_MAX + 1];
  char *env = hh_strdupf("API_TOKEN=%s", secret);
  /* The worker proves it got the value without printing it. */
  const char *cmd[] = {"/bin/sh", "-c",
                       "[ \"$API_TOKEN\" = \"$(printf s3cr3t-VALUE-4f1%s a)\" ] && echo has-token; "
                       "sleep 300",
                       NULL};
  const char *extra[] = {"--env", env, NULL};
  hh_run_task(extra, cmd, id);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  /* Not on any command line (world-readable in /proc). */
  /* (The pattern is written so that this grep's own command line does not
   * hold the value.) */
  hh_res_t r = hh_sh("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c "
                     "'s3cr3t-VALUE-4f1[a]'");
  cr_assert_eq(atoi(r.out), 0, "the value is on a command line");
  hh_res_free(&r);
  /* The MCP server's env too. */
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(
      &m, "start_managed_task",
      json_pack("{s:s, s:[s, s, s], s:{s:s}}", "taskKey", "env-secret", "command", "/bin/sh", "-c",
                "[ \"$API_TOKEN\" = \"$(printf s3cr3t-VALUE-4f1%s a)\" ] && echo has-token", "env",
                "API_TOKEN", secret),
      &is_err, &msg);
  cr_assert(res && !is_err, "%s", msg ? msg : "no answer");
  char mid[TFS_ID_MAX + 1];
  snprintf(mid, sizeof mid, "%s", json_string_value(json_object_get(res, "taskId")));
  json_decref(res);
  cr_assert_eq(hh_mcp_close(&m), 0);
  hh_wait_ended(mid);
  /* Both workers saw the value. */
  for (int i = 0; i < 2; i++) {
    char *s = hh_transcript_wait(i ? mid : id, "has-token");
    cr_assert(s && strstr(s, "has-token"), "the worker did not get the value");
    free(s);
  }
  /* The names are recorded, the values nowhere in the store. */
  char *rec = hh_task_path(id, "record.json");
  char *s = hh_slurp(rec, NULL);
  cr_assert(s && strstr(s, "API_TOKEN"), "the record does not name the variable");
  free(s);
  free(rec);
  r = hh_sh("grep -rl 's3cr3t-VALUE-4f1[a]' '%s'", hh.store);
  cr_assert_str_empty(r.out, "the value is written in: %s", r.out);
  hh_res_free(&r);
  r = hh_tfs("cancel", id, NULL);
  hh_res_free(&r);
  hh_wait_ended(id);
  r = hh_sh("grep -rl 's3cr3t-VALUE-4f1[a]' '%s'", hh.store);
  cr_assert_str_empty(r.out, "the value is written in: %s", r.out);
  hh_res_free(&r);
  free(env);
}

Test(hard_security, commands_are_argv_a_shell_only_when_asked) {
  char *pwned = hh_strdupf("%s/pwned", hh.root);
  /* One argv element with shell syntax is a program name, not a script. */
  char *word = hh_strdupf("true; touch %s", pwned);
  const char *argv[] = {tu_taskfs_bin(), "run", "--wait", "--", word, NULL};
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  cr_assert_neq(r.status, 0, "a program named '%s' started", word);
  hh_res_free(&r);
  /* Arguments reach the program as they are. */
  char *sub = hh_strdupf("$(touch %s) `touch %s` ; touch %s", pwned, pwned, pwned);
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/usr/bin/printf", "%s", sub, NULL};
  hh_run_task(NULL, cmd, id);
  cr_assert_eq(hh_wait_ended(id), TFS_COMPLETED);
  char *t = hh_task_path(id, "transcript");
  char *out = hh_slurp(t, NULL);
  cr_assert(out && !strcmp(out, sub), "the argument arrived as '%s'", out ? out : "");
  free(out);
  free(t);
  /* The MCP server: an array is argv; a string is run by /bin/sh -c, as
   * documented. */
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(&m, "start_managed_task",
                            json_pack("{s:s, s:[s, s, s], s:i}", "taskKey", "argv", "command",
                                      "/usr/bin/printf", "%s", sub, "waitMs", 2000),
                            &is_err, &msg);
  cr_assert(res && !is_err, "%s", msg ? msg : "no answer");
  char mid[TFS_ID_MAX + 1];
  snprintf(mid, sizeof mid, "%s", json_string_value(json_object_get(res, "taskId")));
  json_decref(res);
  hh_wait_ended(mid);
  t = hh_task_path(mid, "transcript");
  out = hh_slurp(t, NULL);
  cr_assert(out && !strcmp(out, sub), "MCP argv: the argument arrived as '%s'", out ? out : "");
  free(out);
  free(t);
  cr_assert(access(pwned, F_OK) < 0, "shell syntax in an argv array was run by a shell");
  char *script = hh_strdupf("touch %s", pwned);
  res = hh_mcp_tool(
      &m, "start_managed_task",
      json_pack("{s:s, s:s, s:i}", "taskKey", "shell", "command", script, "waitMs", 2000), &is_err,
      &msg);
  cr_assert(res && !is_err, "%s", msg ? msg : "no answer");
  snprintf(mid, sizeof mid, "%s", json_string_value(json_object_get(res, "taskId")));
  json_decref(res);
  hh_wait_ended(mid);
  cr_assert(access(pwned, F_OK) == 0, "a string command was not run by the shell");
  cr_assert_eq(hh_mcp_close(&m), 0);
  free(script);
  free(sub);
  free(word);
  free(pwned);
}

Test(hard_security, mount_is_for_its_owner_only) {
  const char *as_nobody[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             NULL};
  if (access(as_nobody[0], X_OK))
    cr_skip_test("setpriv (util-linux) is not installed");
  char id[TFS_ID_MAX + 1];
  const char *sl[] = {"/bin/sleep", "300", NULL};
  hh_run_task(NULL, sl, id);
  char *mnt = hh_strdupf("%s/mnt", hh.root);
  hh_mount_t mt = {0};
  hh_mount_start(&mt, mnt);
  /* Let another user reach the mount point itself, so that what stops them
   * is the mount's rule, not the directory above it. */
  chmod(hh.root, 0755);
  chmod(mnt, 0755);
  char *cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, id);
  static const char *const tries[] = {"ls '%s'", "cat '%s/owner'", "cat '%s/tasks/*/record.json'"};
  for (int i = 0; i < 3; i++) {
    char *c = hh_strdupf(tries[i], mnt);
    const char *argv[] = {
        as_nobody[0], as_nobody[1], as_nobody[2], as_nobody[3], "/bin/sh", "-c", c, NULL};
    hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
    cr_assert_neq(r.status, 0, "another user could run `%s` on the mount: %s", c, r.out);
    hh_res_free(&r);
    free(c);
  }
  char *c = hh_strdupf("echo 1 > '%s'", cancel);
  const char *argv[] = {as_nobody[0], as_nobody[1], as_nobody[2], as_nobody[3], "/bin/sh", "-c", c,
                        NULL};
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  cr_assert_neq(r.status, 0, "another user could request a stop through the mount");
  hh_res_free(&r);
  cr_assert_eq(hh_state(id), TFS_RUNNING, "another user's write stopped the task");
  /* Its owner can. */
  r = hh_sh("echo 1 > '%s'", cancel);
  cr_assert_eq(r.status, 0, "the owner's stop request failed: %s", r.err);
  hh_res_free(&r);
  cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED);
  cr_assert_eq(hh_mount_stop(&mt), 0);
  chmod(hh.root, 0700);
  free(c);
  free(cancel);
  free(mnt);
}

/* A store directory that already exists but is open to others (made by
 * hand, or planted in a shared place such as /tmp by another user) is not
 * used: whoever could write to it could have planted records (commands to
 * run), keys and stop requests. Ours but open to writes, or another
 * user's: refused with a clear error, by writers and readers alike, and
 * nothing is made inside. (tests/test_hard_users.c plants one as a real
 * other user.) */
Test(hard_security, an_open_or_foreign_store_is_refused) {
  char *tasks = hh_strdupf("%s/tasks", hh.store), *keys = hh_strdupf("%s/keys", hh.store);
  cr_assert_eq(mkdir(hh.store, 0700), 0);
  cr_assert_eq(mkdir(tasks, 0700), 0);
  cr_assert_eq(mkdir(keys, 0700), 0);
  chmod(tasks, 0777);
  static const char *const verbs[][3] = {{"run", "--", "/bin/true"}, {"ls", NULL, NULL}};
  for (int i = 0; i < 2; i++) {
    hh_res_t r = hh_tfs(verbs[i][0], verbs[i][1], verbs[i][2], NULL);
    cr_expect_eq(r.status, 111, "taskfs %s used a store open to writes: exit %d", verbs[i][0],
                 r.status);
    cr_expect(strstr(r.err, "0777") && strstr(r.err, "chmod 700"),
              "the refusal names neither the mode nor what to do: %s", r.err);
    hh_res_free(&r);
  }
  hh_res_t r = hh_sh("ls -A '%s'", tasks);
  cr_expect_str_empty(r.out, "a task was made in the refused store: %s", r.out);
  hh_res_free(&r);
  /* Owned by someone else: refused. */
  chmod(tasks, 0700);
  cr_assert_eq(chown(hh.store, 65534, 65534), 0);
  for (int i = 0; i < 2; i++) {
    r = hh_tfs(verbs[i][0], verbs[i][1], verbs[i][2], NULL);
    cr_expect_eq(r.status, 111, "taskfs %s used a store owned by uid 65534: exit %d", verbs[i][0],
                 r.status);
    cr_expect(strstr(r.err, "uid 65534"), "the refusal does not name the owner: %s", r.err);
    hh_res_free(&r);
  }
  chown(hh.store, 0, 0);
  free(tasks);
  free(keys);
}

/* Secrets off the command line: `--env NAME` takes the value from the
 * caller's environment and `--env-file FILE` from a file, so that no value
 * is on the CLI's own command line (readable by every local user for the
 * whole life of `run --wait`); a bad line of the file is named by number. */
Test(hard_security, env_values_from_the_environment_or_a_file_stay_off_command_lines) {
  const char *secret = "s3cr3t-VALUE-4f1b";
  char *file = hh_strdupf("%s/env", hh.root), *go = hh_strdupf("%s/go", hh.root);
  char *text = hh_strdupf("# the worker's secrets\n\nFILE_TOKEN=%s=x\n  SPACED = no\n", secret);
  cr_assert_eq(tu_write_file(file, text, strlen(text)), 0);
  chmod(file, 0600);
  /* The fourth line is not NAME=VALUE: refused with its number, nothing run. */
  hh_res_t r = hh_tfs("run", "--env-file", file, "--", "/bin/true", NULL);
  cr_assert_eq(r.status, 100, "a bad --env-file line: exit %d", r.status);
  cr_assert(strstr(r.err, ":4:"), "the error does not name line 4: %s", r.err);
  hh_res_free(&r);
  /* A name that the environment does not hold. */
  unsetenv("TASKFS_TEST_UNSET");
  r = hh_tfs("run", "--env", "TASKFS_TEST_UNSET", "--", "/bin/true", NULL);
  cr_assert_eq(r.status, 100, "--env of an unset name: exit %d", r.status);
  cr_assert(strstr(r.err, "TASKFS_TEST_UNSET"), "%s", r.err);
  hh_res_free(&r);
  free(text);
  text = hh_strdupf("# the worker's secrets\n\nFILE_TOKEN=%s=x\nEMPTY=\n", secret);
  cr_assert_eq(tu_write_file(file, text, strlen(text)), 0);
  setenv("API_TOKEN", secret, 1);
  /* The worker proves it got both values without printing them, then
   * waits for the go file: `run --wait` lives while command lines are
   * read. */
  char *script = hh_strdupf("[ \"$API_TOKEN\" = \"$(printf s3cr3t-VALUE-4f1%%s b)\" ] && "
                            "[ \"$FILE_TOKEN\" = \"$(printf s3cr3t-VALUE-4f1%%s b)=x\" ] && "
                            "[ \"${EMPTY-unset}\" = \"\" ] && echo has-both; "
                            "while [ ! -e '%s' ]; do sleep 0.01; done",
                            go);
  const char *argv[] = {tu_taskfs_bin(), "run", "--env",   "API_TOKEN", "--env-file", file,
                        "--wait",        "--",  "/bin/sh", "-c",        script,       NULL};
  int out;
  pid_t pid = hh_spawn(argv, NULL, &out, NULL, NULL);
  unsetenv("API_TOKEN");
  char idbuf[64] = "";
  ssize_t n = read(out, idbuf, sizeof idbuf - 1);
  cr_assert(n > 0, "taskfs run printed no id");
  idbuf[n] = 0;
  hh_chomp(idbuf);
  char *s = hh_transcript_wait(idbuf, "has-both");
  cr_assert(s && strstr(s, "has-both"), "the worker did not get both values");
  free(s);
  r = hh_sh("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c "
            "'s3cr3t-VALUE-4f1[b]'");
  cr_assert_eq(atoi(r.out), 0, "a value is on a command line");
  hh_res_free(&r);
  cr_assert_eq(tu_write_file(go, "", 0), 0);
  cr_assert_eq(hh_wait(pid, hh_timeout_ms()), 0, "run --wait did not end with the task");
  close(out);
  r = hh_sh("grep -rl 's3cr3t-VALUE-4f1[b]' '%s'", hh.store);
  cr_assert_str_empty(r.out, "a value is written in: %s", r.out);
  hh_res_free(&r);
  free(script);
  free(go);
  free(text);
  free(file);
}
