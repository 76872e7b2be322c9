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
    char *t = hh_task_path(i ? mid : id, "transcript");
    int64_t end = hh_now_ms() + hh_timeout_ms();
    char *s = NULL;
    while (hh_now_ms() < end) {
      free(s);
      s = hh_slurp(t, NULL);
      if (s && strstr(s, "has-token"))
        break;
      hh_sleep_ms(20);
    }
    cr_assert(s && strstr(s, "has-token"), "the worker did not get the value");
    free(s);
    free(t);
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
 * hand, or planted in a shared place such as /tmp by another user) must
 * not be used as it is: taskfs either tightens it to 0700 (if it is ours)
 * or refuses it with a clear error. Otherwise any local user could plant
 * records, keys and stop requests in it. */
Test(hard_security, an_open_or_foreign_store_is_tightened_or_refused) {
  char *tasks = hh_strdupf("%s/tasks", hh.store), *keys = hh_strdupf("%s/keys", hh.store);
  cr_assert_eq(mkdir(hh.store, 0700), 0);
  cr_assert_eq(mkdir(tasks, 0700), 0);
  cr_assert_eq(mkdir(keys, 0700), 0);
  chmod(hh.store, 0777);
  chmod(tasks, 0777);
  chmod(keys, 0777);
  hh_res_t r = hh_tfs("run", "--", "/bin/true", NULL);
  struct stat st, st_t, st_k;
  cr_assert_eq(stat(hh.store, &st), 0);
  cr_assert_eq(stat(tasks, &st_t), 0);
  cr_assert_eq(stat(keys, &st_k), 0);
  int tightened = (st.st_mode & 077) == 0 && (st_t.st_mode & 077) == 0 && (st_k.st_mode & 077) == 0;
  cr_expect(tightened || (r.status != 0 && strlen(r.err) > 10),
            "taskfs used a world-writable store as it was (modes %o %o %o, exit %d)",
            st.st_mode & 0777, st_t.st_mode & 0777, st_k.st_mode & 0777, r.status);
  hh_res_free(&r);

  /* Owned by someone else: refused. */
  chmod(hh.store, 0700);
  chmod(tasks, 0700);
  chmod(keys, 0700);
  cr_assert_eq(chown(hh.store, 65534, 65534), 0);
  r = hh_tfs("run", "--", "/bin/true", NULL);
  cr_expect(r.status != 0 && strlen(r.err) > 10,
            "taskfs used a store directory owned by another user (uid 65534): exit %d", r.status);
  hh_res_free(&r);
  chown(hh.store, 0, 0);
  free(tasks);
  free(keys);
}
