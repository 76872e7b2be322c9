/* Hostile input (issue 7, part 4): one test per row of
 * docs/hostile-input.md. Each feeds one kind of hostile input to the real
 * processes (the taskfs CLI, the MCP server over its stdin, the FUSE mount,
 * the supervisor) and checks the outcome the table promises. The row
 * number is in each test's name (h01 ... h12). */
#include "tests/hardening/hard.h"

#include <sys/xattr.h>

TestSuite(hard_hostile, .init = hh_setup, .fini = hh_teardown, .timeout = 300);

/* ---- helpers ------------------------------------------------------------------------- */

/* Sends raw bytes (a whole line, or several), then a ping; returns the
 * messages the server wrote before the ping's answer as a JSON array. The
 * ping must be answered: the server is still serving. */
static json_t *send_then_ping(hh_mcp_t *m, const void *data, size_t len) {
  static int pid_seq = 900000;
  int pid = pid_seq++;
  cr_assert_eq(hh_mcp_send_raw(m, data, len), 0, "the MCP server stopped reading its stdin");
  char *ping = hh_strdupf("\n{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", pid);
  cr_assert_eq(hh_mcp_send_raw(m, ping, strlen(ping)), 0, "the MCP server stopped reading");
  free(ping);
  json_t *before = json_array();
  for (;;) {
    json_t *v = hh_mcp_read(m, hh_timeout_ms());
    cr_assert(v, "the MCP server did not answer a ping after hostile input (it died or hung)");
    json_t *id = json_object_get(v, "id");
    if (json_is_integer(id) && json_integer_value(id) == pid) {
      cr_assert(json_object_get(v, "result"), "ping failed after hostile input");
      json_decref(v);
      return before;
    }
    json_array_append_new(before, v);
  }
}

static int error_code(json_t *msg) {
  json_t *e = json_object_get(msg, "error");
  return e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
}

static const char *error_message(json_t *msg) {
  return json_string_value(json_object_get(json_object_get(msg, "error"), "message"));
}

static void start_mcp(hh_mcp_t *m) {
  hh_mcp_start(m);
  cr_assert_eq(hh_mcp_initialize(m), 0, "the MCP server did not initialize");
}

/* Calls a tool; returns 1 if it failed (isError or a JSON-RPC error) with
 * a message in *msg, 0 if it succeeded (*res set). */
static int tool_fails(hh_mcp_t *m, const char *tool, json_t *args, json_t **res, char **msg) {
  int is_err;
  *msg = NULL;
  json_t *r = hh_mcp_tool(m, tool, args, &is_err, msg);
  if (res)
    *res = r;
  else
    json_decref(r);
  cr_assert(is_err != -1 || *msg, "the MCP server did not answer %s", tool);
  return is_err != 0;
}

/* Files directly under a directory, recursively, as a sorted listing
 * string, to prove nothing was created. */
static char *tree(const char *dir) {
  return hh_sh_out("cd '%s' 2>/dev/null && find . | LC_ALL=C sort", dir);
}

static char *start_mount(hh_mount_t *m) {
  char *mnt = hh_strdupf("%s/mnt", hh.root);
  /* The store must exist for the mount to show it. */
  tfs_store_t *s;
  cr_assert_eq(tfs_store_open(hh.store, &s), 0);
  tfs_store_close(s);
  hh_mount_start(m, mnt);
  return mnt;
}

static int mount_alive(hh_mount_t *m) {
  if (m->pid <= 0 || waitpid(m->pid, NULL, WNOHANG) != 0)
    return 0;
  char *t = hh_strdupf("%s/tasks", m->mnt);
  DIR *d = opendir(t);
  free(t);
  if (!d)
    return 0;
  closedir(d);
  return 1;
}

/* Runs a shell command with a deadline: a hang is a failure, not a stuck
 * test. */
static hh_res_t sh_deadline(const char *cmd) {
  /* 10 s on a quiet machine's normal build, scaled as every bound is. */
  char secs[16];
  snprintf(secs, sizeof secs, "%d", 10 * tu_slow());
  const char *argv[] = {"/usr/bin/timeout", "-s", "KILL", secs, "/bin/sh", "-c", cmd, NULL};
  return hh_run_argv(argv, NULL, 0, 60000 * tu_slow());
}

/* A task that completes at once, printing its argument. */
static void done_task(const char *text, char id[TFS_ID_MAX + 1]) {
  const char *cmd[] = {"/bin/echo", text, NULL};
  hh_run_task(NULL, cmd, id);
  hh_wait_ended(id);
  /* The supervisor may still write once more on its way out; tests that
   * edit the task's files must not race it. */
  hh_idarg_t a = {id};
  cr_assert(tu_wait_until(hh_cond_not_alive, &a, hh_timeout_ms()), "the supervisor of %s lingers",
            id);
}

static void sleep_task(char id[TFS_ID_MAX + 1]) {
  const char *cmd[] = {"/bin/sleep", "300", NULL};
  hh_run_task(NULL, cmd, id);
}

/* ---- h01: JSON-RPC garbage ---------------------------------------------------------- */

Test(hard_hostile, h01_jsonrpc_garbage) {
  hh_mcp_t m;
  start_mcp(&m);
  static const struct {
    const char *line;
    size_t unused;
    int want; /* the error code the answer must carry */
  } cases[] = {
      {"}{", 2, -32700},
      {"not json", 8, -32700},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", 38, -32700},
      {"[]", 2, -32600},
      {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 42, -32600},
      {"42", 2, -32600},
      {"\"str\"", 5, -32600},
      {"null", 4, -32600},
      {"{}", 2, -32600},
      {"{\"jsonrpc\":\"2.0\"}", 17, -32600},
      {"{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}", 39, -32600},
      {"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}", 45, -32600},
      {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", 41, -32600},
      {"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":5}", 35, -32600},
      {"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":\"x\"}", 50, -32602},
      {"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"no/such/method\"}", 50, -32601},
      {"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{}}", 59, -32602},
      {"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}",
       72, -32602},
      {"\xff\xfe\xfd", 3, -32700},
      {"\x01\x02\x03\x04", 4, -32700},
      {"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\"}garbage", 47, -32700},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = strlen(cases[i].line); /* no case holds a NUL byte */
    char *line = malloc(len + 1);
    memcpy(line, cases[i].line, len);
    line[len] = '\n';
    json_t *got = send_then_ping(&m, line, len + 1);
    free(line);
    cr_assert_eq(json_array_size(got), 1, "case %zu (%.40s): %zu answers, want one error", i,
                 cases[i].line, json_array_size(got));
    json_t *a = json_array_get(got, 0);
    cr_assert_eq(error_code(a), cases[i].want, "case %zu (%.40s): error %d (%s), want %d", i,
                 cases[i].line, error_code(a), error_message(a) ? error_message(a) : "",
                 cases[i].want);
    const char *msg = error_message(a);
    cr_assert(msg && strlen(msg) > 10, "case %zu: the error says nothing useful", i);
    json_decref(got);
  }
  /* A blank line and a stray response are ignored: no answer at all. */
  const char *quiet = "\n   \n{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n";
  json_t *got = send_then_ping(&m, quiet, strlen(quiet));
  cr_assert_eq(json_array_size(got), 0, "blank lines or a stray response were answered");
  json_decref(got);
  /* A NUL byte inside a line. */
  got = send_then_ping(&m, "{\"jsonrpc\":\"2.0\",\0\"id\":5}\n", 26);
  cr_assert_eq(json_array_size(got), 1);
  cr_assert_eq(error_code(json_array_get(got, 0)), -32700);
  json_decref(got);
  cr_assert_eq(hh_mcp_close(&m), 0, "the MCP server did not exit cleanly on EOF");
}

/* ---- h02: a 100 MB line on stdin -------------------------------------------------------- */

Test(hard_hostile, h02_100mb_line_on_stdin) {
  hh_mcp_t m;
  start_mcp(&m);
  size_t chunk = 1 << 20, total = 100u << 20;
  char *buf = malloc(chunk);
  /* A syntactically plausible start, so a parser that buffers tries to
   * hold it all. */
  memset(buf, 'a', chunk);
  const char *head = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"";
  memcpy(buf, head, strlen(head));
  for (size_t sent = 0; sent < total; sent += chunk) {
    cr_assert_eq(hh_mcp_send_raw(&m, buf, chunk), 0, "the server stopped reading at %zu MB",
                 sent >> 20);
    memset(buf, 'a', strlen(head));
  }
  free(buf);
  long hwm = hh_vmhwm_kib(m.pid);
  json_t *got = send_then_ping(&m, "\"}}\n", 4);
  cr_assert_eq(json_array_size(got), 1, "a 100 MB line got %zu answers, want one error",
               json_array_size(got));
  json_t *a = json_array_get(got, 0);
  cr_assert(error_code(a) == -32600 || error_code(a) == -32700, "a 100 MB line: error %d",
            error_code(a));
  cr_assert(strstr(error_message(a), "large") || strstr(error_message(a), "long"),
            "the error does not say the message is too large: %s", error_message(a));
  json_decref(got);
  cr_log_info("MCP server peak RSS after a 100 MB line: %ld KiB", hwm);
  if (!getenv("TASKFS_SANITIZED"))
    cr_assert(hwm > 0 && hwm < 64 * 1024,
              "the MCP server's peak RSS reached %ld KiB on a 100 MB line (it buffered it)", hwm);
  cr_assert_eq(hh_mcp_close(&m), 0);
}

/* ---- h03: deeply nested JSON --------------------------------------------------------- */

Test(hard_hostile, h03_deeply_nested_json) {
  hh_mcp_t m;
  start_mcp(&m);
  size_t depth = 200000;
  for (int variant = 0; variant < 3; variant++) {
    size_t cap = depth * 2 + 256, n = 0;
    char *s = malloc(cap);
    if (variant == 2)
      n += (size_t)sprintf(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                              "{\"name\":\"read_managed_task\",\"arguments\":{\"taskKey\":");
    for (size_t i = 0; i < depth; i++)
      s[n++] = variant == 1 ? '{' : '[';
    if (variant == 1)
      n += (size_t)sprintf(s + n, "\"a\":1");
    for (size_t i = 0; i < depth; i++)
      s[n++] = variant == 1 ? '}' : ']';
    if (variant == 2)
      n += (size_t)sprintf(s + n, "}}}");
    s[n++] = '\n';
    json_t *got = send_then_ping(&m, s, n);
    free(s);
    cr_assert_eq(json_array_size(got), 1, "nesting variant %d: %zu answers", variant,
                 json_array_size(got));
    cr_assert(error_code(json_array_get(got, 0)) == -32700 ||
                  error_code(json_array_get(got, 0)) == -32600,
              "nesting variant %d: error %d", variant, error_code(json_array_get(got, 0)));
    json_decref(got);
  }
  cr_assert_eq(hh_mcp_close(&m), 0);

  /* The same nesting as a record: readers skip it. */
  char id[TFS_ID_MAX + 1];
  done_task("ok", id);
  char other[TFS_ID_MAX + 1];
  done_task("nested", other);
  char *p = hh_task_path(other, "record.json");
  FILE *f = fopen(p, "w");
  for (int i = 0; i < 100000; i++)
    fputc('[', f);
  fclose(f);
  free(p);
  hh_res_t r = hh_tfs("ls", NULL);
  cr_assert_eq(r.status, 0, "taskfs ls with a deeply nested record: %s", r.err);
  cr_assert(strstr(r.out, id), "taskfs ls lost the good task");
  hh_res_free(&r);
  r = hh_tfs("show", other, NULL);
  cr_assert_eq(r.status, 111, "taskfs show of a deeply nested record: %d", r.status);
  hh_res_free(&r);
}

/* ---- h04: invalid UTF-8 in arguments ------------------------------------------------- */

Test(hard_hostile, h04_invalid_utf8) {
  /* argv: the command gets its bytes exactly; the record stays valid. */
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/usr/bin/printf", "%s\\n", "bad\xff\xfe utf8 \xc3\x28", NULL};
  hh_run_task(NULL, cmd, id);
  cr_assert_eq(hh_wait_ended(id), TFS_COMPLETED);
  char *t = hh_task_path(id, "transcript");
  size_t len;
  char *out = hh_slurp(t, &len);
  cr_expect(out && len == 14 && !memcmp(out, "bad\xff\xfe utf8 \xc3\x28\n", 14),
            "the worker did not get its argv bytes exactly: it printed '%s' (%zu bytes), want "
            "'bad\\xff\\xfe utf8 \\xc3(' (the command ran with different arguments)",
            out ? out : "", len);
  free(out);
  free(t);
  hh_check_store("invalid UTF-8 argv");
  hh_res_t r = hh_tfs("show", id, NULL);
  cr_assert_eq(r.status, 0, "taskfs show: %s", r.err);
  hh_res_free(&r);

  /* cwd: a directory whose name is not UTF-8 is still where it runs. */
  char *dir = hh_strdupf("%s/d\xff\xfe", hh.root);
  cr_assert_eq(mkdir(dir, 0700), 0);
  const char *pwd[] = {"/bin/sh", "-c", "pwd", NULL};
  const char *cwdrun[] = {tu_taskfs_bin(), "run", "--cwd", dir, "--", pwd[0], pwd[1], pwd[2], NULL};
  hh_res_t cr = hh_run_argv(cwdrun, NULL, 0, hh_timeout_ms());
  cr_expect_eq(cr.status, 0, "taskfs run --cwd <a directory whose name is not UTF-8>: %s", cr.err);
  snprintf(id, sizeof id, "%s", hh_chomp(cr.out));
  hh_res_free(&cr);
  tfs_state_t s = tfs_id_valid(id) ? hh_wait_ended(id) : TFS_FAILED;
  t = hh_task_path(id, "transcript");
  out = hh_slurp(t, &len);
  cr_expect(s == TFS_COMPLETED && out && len == strlen(dir) + 1 && !memcmp(out, dir, len - 1),
            "a task with a non-UTF-8 cwd did not run there (state %s, output '%s')",
            tfs_state_name(s), out ? out : "");
  free(out);
  free(t);
  hh_check_store("invalid UTF-8 cwd");

  /* env: the value reaches the worker; the record holds the name only. */
  const char *envcmd[] = {"/bin/sh", "-c", "printf %s \"$HOSTILE\"", NULL};
  const char *envx[] = {"--env", "HOSTILE=v\xff\x01z", NULL};
  hh_run_task(envx, envcmd, id);
  cr_assert_eq(hh_wait_ended(id), TFS_COMPLETED);
  t = hh_task_path(id, "transcript");
  out = hh_slurp(t, &len);
  cr_expect(out && len == 4 && !memcmp(out, "v\xff\x01z", 4),
            "the env value did not arrive byte-exact (%zu bytes)", len);
  free(out);
  free(t);
  t = hh_task_path(id, "record.json");
  out = hh_slurp(t, NULL);
  cr_assert(out && strstr(out, "HOSTILE") && !strstr(out, "v\\u00ff") && !strstr(out, "v\xff"),
            "the record must name HOSTILE and never hold its value");
  free(out);
  free(t);

  /* A key that is not UTF-8 is refused. */
  const char *kx[] = {"--key", "k\xff", NULL};
  const char *tr[] = {"/bin/true", NULL};
  const char *argv[] = {tu_taskfs_bin(), "run", kx[0], kx[1], "--", tr[0], NULL};
  hh_res_t rr = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  cr_assert_eq(rr.status, 100, "run --key <invalid UTF-8>: exit %d, want 100", rr.status);
  hh_res_free(&rr);

  /* MCP: raw invalid UTF-8 in a JSON string is a parse error; a lone
   * surrogate escape too. The server stays up. */
  hh_mcp_t m;
  start_mcp(&m);
  const char bad[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                     "\"start_managed_task\",\"arguments\":{\"taskKey\":\"u\",\"command\":[\"/bin/"
                     "echo\",\"\xff\xfe\"]}}}\n";
  json_t *got = send_then_ping(&m, bad, sizeof bad - 1);
  cr_assert_eq(json_array_size(got), 1);
  cr_assert_eq(error_code(json_array_get(got, 0)), -32700);
  json_decref(got);
  const char sur[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                     "\"read_managed_task\",\"arguments\":{\"taskKey\":\"\\udc80\"}}}\n";
  got = send_then_ping(&m, sur, sizeof sur - 1);
  cr_assert_eq(json_array_size(got), 1);
  cr_assert(error_code(json_array_get(got, 0)) == -32700 ||
                json_is_true(
                    json_object_get(json_object_get(json_array_get(got, 0), "result"), "isError")),
            "a lone surrogate in taskKey was not refused");
  json_decref(got);
  cr_assert_eq(hh_mcp_close(&m), 0);
  free(dir);
}

/* ---- h05: ids and keys with .., /, NUL, control characters -------------------------------- */

static const char *const bad_names[] = {
    "..",
    ".",
    "../..",
    "../tasks",
    "a/b",
    "/etc/passwd",
    "tasks/../x",
    "",
    "a\nb",
    "\x01",
    "a\tb",
    "a b",
    "\x7f",
    "-rf",
    "*",
    "a\\b",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
};

Test(hard_hostile, h05_bad_ids_and_keys) {
  char id[TFS_ID_MAX + 1];
  done_task("anchor", id);
  char *before = tree(hh.root);

  /* The library's validators. */
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    cr_assert(!tfs_id_valid(bad_names[i]), "tfs_id_valid accepts '%s'", bad_names[i]);
    if (strcmp(bad_names[i], "-rf") && strcmp(bad_names[i], "*"))
      cr_assert(!tfs_key_valid(bad_names[i]), "tfs_key_valid accepts '%s'", bad_names[i]);
  }

  /* The CLI: every verb refuses them with a usage or no-such-task error. */
  static const char *const verbs[] = {"show", "logs", "cancel", "wait"};
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    for (size_t v = 0; v < 4; v++) {
      const char *argv[] = {tu_taskfs_bin(), verbs[v], "--", bad_names[i], NULL, NULL};
      if (v == 3) {
        argv[2] = "--timeout=1";
        argv[3] = "--";
        argv[4] = bad_names[i];
      }
      hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
      cr_assert(r.status == 100 || r.status == 101,
                "taskfs %s '%s': exit %d, want 100 or 101 (stderr: %s)", verbs[v], bad_names[i],
                r.status, r.err);
      cr_assert(strlen(r.err) > 10, "taskfs %s '%s' says nothing", verbs[v], bad_names[i]);
      hh_res_free(&r);
    }
    if (strcmp(bad_names[i], "-rf") && strcmp(bad_names[i], "*")) {
      const char *argv[] = {tu_taskfs_bin(), "run", "--key", bad_names[i], "--", "/bin/true", NULL};
      hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
      cr_assert_eq(r.status, 100, "taskfs run --key '%s': exit %d, want 100 (%s)", bad_names[i],
                   r.status, r.err);
      hh_res_free(&r);
    }
  }

  /* The MCP server: errors, nothing created; NUL inside a key or id never
   * resolves to the text before it. */
  char keyed[TFS_ID_MAX + 1];
  const char *kcmd[] = {"/bin/echo", "keyed", NULL};
  const char *kx[] = {"--key", "a", NULL};
  hh_run_task(kx, kcmd, keyed);
  hh_wait_ended(keyed);
  free(before);
  before = tree(hh.root);
  hh_mcp_t m;
  start_mcp(&m);
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    char *msg;
    if (strcmp(bad_names[i], "-rf") && strcmp(bad_names[i], "*")) {
      cr_assert(
          tool_fails(&m, "start_managed_task",
                     json_pack("{s:s, s:[s]}", "taskKey", bad_names[i], "command", "/bin/true"),
                     NULL, &msg),
          "start_managed_task with taskKey '%s' succeeded", bad_names[i]);
      free(msg);
      cr_assert(tool_fails(&m, "read_managed_task", json_pack("{s:s}", "taskKey", bad_names[i]),
                           NULL, &msg),
                "read_managed_task with taskKey '%s' succeeded", bad_names[i]);
      free(msg);
    }
    cr_assert(
        tool_fails(&m, "read_managed_task", json_pack("{s:s}", "taskId", bad_names[i]), NULL, &msg),
        "read_managed_task with taskId '%s' succeeded", bad_names[i]);
    free(msg);
    cr_assert(tool_fails(&m, "cancel_managed_task", json_pack("{s:s}", "taskId", bad_names[i]),
                         NULL, &msg),
              "cancel_managed_task with taskId '%s' succeeded", bad_names[i]);
    free(msg);
  }
  static const char *const nul_lines[] = {
      "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"read_managed_task\",\"arguments\":{\"taskKey\":\"a\\u0000zzz\"}}}\n",
      "{\"jsonrpc\":\"2.0\",\"id\":62,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"cancel_managed_task\",\"arguments\":{\"taskKey\":\"a\\u0000/../../x\"}}}\n",
      "{\"jsonrpc\":\"2.0\",\"id\":63,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"a\\u0000b\",\"command\":[\"/bin/echo\","
      "\"keyed\"]}}}\n",
  };
  for (size_t i = 0; i < 3; i++) {
    json_t *got = send_then_ping(&m, nul_lines[i], strlen(nul_lines[i]));
    cr_assert_eq(json_array_size(got), 1);
    json_t *a = json_array_get(got, 0);
    json_t *res = json_object_get(a, "result");
    cr_assert(error_code(a) != 0 || json_is_true(json_object_get(res, "isError")),
              "a key with an escaped NUL was accepted (it must not resolve to key \"a\"): %s",
              json_dumps(a, JSON_COMPACT));
    json_decref(got);
  }
  cr_assert_eq(hh_mcp_close(&m), 0);

  /* The mount: such names are simply not there. */
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    if (!bad_names[i][0] || !strcmp(bad_names[i], ".") || !strcmp(bad_names[i], "..") ||
        strchr(bad_names[i], '/'))
      continue; /* the kernel resolves those itself */
    for (int dir = 0; dir < 2; dir++) {
      char *p = hh_strdupf("%s/%s/%s", mnt, dir ? "by-key" : "tasks", bad_names[i]);
      struct stat st;
      cr_assert(lstat(p, &st) < 0 && (errno == ENOENT || errno == ENAMETOOLONG), "lstat %s: %s", p,
                strerror(errno));
      free(p);
    }
  }
  cr_assert(mount_alive(&mt));
  cr_assert_eq(hh_mount_stop(&mt), 0);

  char *after = tree(hh.root);
  /* The mount point directory and the logs are the only new names. */
  cr_assert(strstr(after, "./store/tasks") && strlen(after) >= strlen(before));
  char *s = after;
  for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
    cr_assert(strstr(before, line) || !strncmp(line, "./mnt", 5) || strstr(line, ".log") ||
                  !strncmp(line, "./store/owner.json", 18),
              "hostile ids and keys created '%s'", line);
  free(before);
  free(after);
  free(mnt);
}

/* ---- h06: every kind of write to cancel ------------------------------------------------- */

static int cancel_requested(const char *id) {
  char *p = hh_task_path(id, "cancel");
  int there = access(p, F_OK) == 0;
  free(p);
  return there || tfs_state_terminal(hh_state(id));
}

Test(hard_hostile, h06_writes_to_cancel) {
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);

  /* Accepted: each of these stops its task. */
  static const char *const accepted[] = {
      "echo 1 > '%s'",        "printf 1 > '%s'",
      "echo 1 >> '%s'",       "echo 1 | tee '%s' >/dev/null",
      "printf '1\\n' > '%s'", "printf 1 | dd of='%s' 2>/dev/null",
  };
  static const char *const shells[] = {"/bin/bash", "/bin/dash"};
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
    for (int sh = 0; sh < 2; sh++) {
      if (access(shells[sh], X_OK))
        continue;
      char id[TFS_ID_MAX + 1];
      sleep_task(id);
      char *cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, id);
      char *cmd = hh_strdupf(accepted[i], cancel);
      const char *argv[] = {shells[sh], "-c", cmd, NULL};
      hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
      cr_assert_eq(r.status, 0, "%s -c \"%s\": exit %d: %s", shells[sh], cmd, r.status, r.err);
      hh_res_free(&r);
      cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED, "%s -c \"%s\" did not stop the task",
                   shells[sh], cmd);
      free(cmd);
      free(cancel);
    }
  }

  /* Refused: EINVAL, nothing recorded, the task runs on. */
  char id[TFS_ID_MAX + 1];
  sleep_task(id);
  char *cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, id);
  static const struct {
    const char *data;
    size_t len;
  } refused[] = {{"0", 1},    {"0\n", 2}, {"yes", 3},   {"true", 4}, {"2", 1},  {"11", 2},
                 {" 1", 2},   {"1 ", 2},  {"1\n1", 3},  {"\n", 1},   {"\0", 1}, {"1\0", 2},
                 {"\xff", 1}, {"-1", 2},  {"1\r\n", 3}, {"one", 3}};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    int fd = open(cancel, O_WRONLY | O_TRUNC);
    cr_assert(fd >= 0, "open %s for writing: %s", cancel, strerror(errno));
    ssize_t n = write(fd, refused[i].data, refused[i].len);
    int e = errno;
    close(fd);
    cr_assert(n < 0 && e == EINVAL, "writing %zu bytes '%.*s' to cancel: %zd (%s), want EINVAL",
              refused[i].len, (int)refused[i].len, refused[i].data, n,
              n < 0 ? strerror(e) : "accepted");
    cr_assert(!cancel_requested(id), "refused input '%.*s' recorded a stop", (int)refused[i].len,
              refused[i].data);
  }
  /* A megabyte of ones. */
  {
    size_t big = 1 << 20;
    char *ones = malloc(big);
    memset(ones, '1', big);
    int fd = open(cancel, O_WRONLY | O_TRUNC);
    ssize_t n = write(fd, ones, big);
    close(fd);
    free(ones);
    cr_assert(n < 0, "a megabyte of '1' was accepted");
    cr_assert(!cancel_requested(id));
  }
  /* An open that truncates and writes nothing (`: > cancel`). */
  {
    int fd = open(cancel, O_WRONLY | O_TRUNC);
    cr_assert(fd >= 0);
    int rc = close(fd);
    int close_errno = errno;
    cr_assert(!cancel_requested(id), "an empty write recorded a stop");
    cr_expect(rc < 0 && close_errno == EINVAL,
              "`: > cancel` (an empty write) succeeded; the mount's contract says empty input "
              "fails with EINVAL");
  }
  /* truncate(2), chmod, unlink, rename, xattrs: refused, nothing recorded. */
  cr_assert(truncate(cancel, 0) < 0 || !cancel_requested(id));
  cr_assert(chmod(cancel, 0666) < 0, "chmod on cancel succeeded");
  cr_assert(unlink(cancel) < 0, "unlink of cancel succeeded");
  char *renamed = hh_strdupf("%s/tasks/%s/x", mnt, id);
  cr_assert(rename(cancel, renamed) < 0, "rename of cancel succeeded");
  free(renamed);
  setxattr(cancel, "user.x", "1", 1, 0);
  cr_assert(!cancel_requested(id), "metadata operations recorded a stop");
  /* Other files are not writable at all. */
  static const char *const ro[] = {"record.json", "transcript", "owner"};
  for (int i = 0; i < 3; i++) {
    char *p = hh_strdupf("%s/tasks/%s/%s", mnt, id, ro[i]);
    int fd = open(p, O_WRONLY);
    int e = errno;
    if (fd >= 0) {
      ssize_t n = write(fd, "1", 1);
      e = errno;
      close(fd);
      cr_assert(n < 0, "writing to %s succeeded", ro[i]);
    }
    cr_assert(e == EACCES || e == EROFS || e == EPERM, "writing to %s: %s", ro[i], strerror(e));
    free(p);
  }
  cr_assert(!cancel_requested(id));
  cr_assert_eq(hh_state(id), TFS_RUNNING);

  /* A pwrite of "1" at an offset: either refused or a stop. */
  {
    int fd = open(cancel, O_WRONLY);
    ssize_t n = pwrite(fd, "1", 1, 4096);
    close(fd);
    if (n == 1)
      cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED);
    else
      cr_assert(!cancel_requested(id));
  }
  /* The same words through the CLI and the MCP server, and after the end:
   * a finished task is left alone and the writer is told. */
  char done[TFS_ID_MAX + 1];
  done_task("finished", done);
  char *dcancel = hh_strdupf("%s/tasks/%s/cancel", mnt, done);
  int fd = open(dcancel, O_WRONLY | O_TRUNC);
  ssize_t n = fd >= 0 ? write(fd, "1", 1) : -1;
  if (fd >= 0)
    close(fd);
  cr_assert(n < 0, "a stop request for a finished task was accepted by the mount");
  hh_res_t r = hh_tfs("cancel", done, NULL);
  cr_assert_eq(r.status, 0, "taskfs cancel of a finished task: %d %s", r.status, r.err);
  cr_assert(strlen(r.out) + strlen(r.err) > 0, "taskfs cancel of a finished task says nothing");
  hh_res_free(&r);
  cr_assert_eq(hh_state(done), TFS_COMPLETED, "a finished task changed state");
  char *dfile = hh_task_path(done, "cancel");
  cr_assert(access(dfile, F_OK) < 0, "a stop request was written for a finished task");
  free(dfile);

  /* A cancel file written by hand, with nonsense in it, still stops. */
  char hand[TFS_ID_MAX + 1];
  sleep_task(hand);
  char *hf = hh_task_path(hand, "cancel");
  cr_assert_eq(tu_write_file(hf, "\xff\x00garbage", 9), 0);
  cr_assert_eq(hh_wait_ended(hand), TFS_CANCELLED,
               "a cancel file with nonsense in it did not stop the task");
  free(hf);

  cr_assert(mount_alive(&mt));
  cr_assert_eq(hh_mount_stop(&mt), 0);
  if (hh_state(id) == TFS_RUNNING) {
    r = hh_tfs("cancel", id, NULL);
    hh_res_free(&r);
  }
  free(dcancel);
  free(cancel);
  free(mnt);
}

/* ---- h07: symlinks and FIFOs planted in the store ------------------------------------------ */

/* Every face reads task id without hanging and without showing secret.
 * A face that hangs is a failure; it is then killed (and the mount
 * restarted) so that the remaining cases still run. */
static void faces_survive(hh_mount_t *mt, const char *id, const char *secret, const char *what) {
  static const char *const verbs[] = {
      "show %s", "logs %s", "ls", "ls --json", "cancel %s", "wait --timeout=1 %s", "logs -n 1 %s"};
  for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++) {
    char *args = hh_strdupf(verbs[v], id);
    char *cmd = hh_strdupf("'%s' %s", tu_taskfs_bin(), args);
    hh_res_t r = sh_deadline(cmd);
    int hung = r.status == 137 || r.status == -1;
    cr_expect(!hung, "%s: `taskfs %s` hung (killed after %d s)", what, args, 10 * tu_slow());
    cr_expect(!strstr(r.out, secret) && !strstr(r.err, secret),
              "%s: `taskfs %s` showed the content of a file outside the store", what, args);
    hh_res_free(&r);
    free(cmd);
    free(args);
    if (hung)
      break; /* the other verbs would hang the same way: spare the time */
  }
  static const char *const files[] = {"record.json", "transcript", "cancel", "owner"};
  for (int f = 0; f < 4; f++) {
    char *cmd = hh_strdupf("cat '%s/tasks/%s/%s'", mt->mnt, id, files[f]);
    hh_res_t r = sh_deadline(cmd);
    int hung = r.status == 137 || r.status == -1;
    cr_expect(!hung, "%s: `cat <mnt>/tasks/<id>/%s` hung the mount", what, files[f]);
    cr_expect(!strstr(r.out, secret), "%s: <mnt>/tasks/<id>/%s showed a file outside the store",
              what, files[f]);
    hh_res_free(&r);
    free(cmd);
    if (hung || !mount_alive(mt)) {
      cr_expect(0, "%s: the mount stopped answering; restarting it", what);
      hh_mount_kill9(mt);
      hh_mount_start(mt, mt->mnt);
    }
  }
  hh_res_t r = sh_deadline(hh_strdupf("ls -l '%s/tasks' '%s/by-key' >/dev/null", mt->mnt, mt->mnt));
  cr_expect(r.status == 0, "%s: ls -l through the mount: %d", what, r.status);
  hh_res_free(&r);
  cr_expect(mount_alive(mt), "%s: the mount died or stopped answering", what);

  hh_mcp_t m;
  start_mcp(&m);
  static const char *const tools[] = {"read_managed_task", "cancel_managed_task"};
  for (int t = 0; t < 2; t++) {
    json_t *resp = hh_mcp_request(
        &m, "tools/call",
        json_pack("{s:s, s:{s:s, s:i}}", "name", tools[t], "arguments", "taskId", id, "waitMs", 0),
        10000);
    cr_expect(resp, "%s: the MCP server did not answer %s (hung or died)", what, tools[t]);
    char *dump = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
    cr_expect(!dump || !strstr(dump, secret), "%s: %s showed a file outside the store", what,
              tools[t]);
    free(dump);
    json_decref(resp);
    if (!resp)
      goto dead;
  }
  static const char *const kinds[] = {"record", "transcript"};
  for (int k = 0; k < 2; k++) {
    char *uri = hh_strdupf("taskfs://tasks/%s/%s", id, kinds[k]);
    json_t *resp = hh_mcp_request(&m, "resources/read", json_pack("{s:s}", "uri", uri), 10000);
    cr_expect(resp, "%s: the MCP server did not answer resources/read %s (hung or died)", what,
              uri);
    char *dump = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
    cr_expect(!dump || !strstr(dump, secret),
              "%s: resources/read %s showed a file outside the "
              "store",
              what, uri);
    free(dump);
    free(uri);
    json_decref(resp);
    if (!resp)
      goto dead;
  }
  {
    json_t *resp =
        hh_mcp_request(&m, "tools/call",
                       json_pack("{s:s, s:{}}", "name", "list_managed_tasks", "arguments"), 20000);
    cr_expect(resp && json_object_get(resp, "result"), "%s: list_managed_tasks failed", what);
    json_decref(resp);
  }
  cr_expect_eq(hh_mcp_close(&m), 0, "%s: the MCP server did not exit cleanly", what);
  return;
dead:
  hh_mcp_kill9(&m);
}

Test(hard_hostile, h07_planted_symlinks_and_fifos) {
  const char *secret = "TOP-SECRET-OUTSIDE-THE-STORE";
  char *outside = hh_strdupf("%s/secret.txt", hh.root);
  char *content = hh_strdupf("%s\n", secret);
  cr_assert_eq(tu_write_file(outside, content, strlen(content)), 0);
  free(content);
  char good[TFS_ID_MAX + 1];
  done_task("good", good);
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);

  static const char *const files[] = {"record.json", "transcript", "cancel", "lock"};
  for (int f = 0; f < 4; f++) {
    for (int kind = 0; kind < 2; kind++) {
      char id[TFS_ID_MAX + 1], what[96];
      done_task(files[f], id);
      snprintf(what, sizeof what, "%s as a %s", files[f], kind ? "FIFO" : "symlink");
      char *p = hh_task_path(id, files[f]);
      unlink(p);
      if (kind)
        cr_assert_eq(mkfifo(p, 0600), 0);
      else
        cr_assert_eq(symlink(outside, p), 0);
      faces_survive(&mt, id, secret, what);
      /* The planted file is still what was planted: nobody wrote through
       * it or replaced the secret. */
      char *s = hh_slurp(outside, NULL);
      cr_assert(s && strstr(s, secret), "%s: the file outside the store was changed", what);
      free(s);
      free(p);
    }
  }

  /* The lock of a running task replaced by a FIFO: every reader that
   * asks "is its supervisor alive?" opens it. */
  {
    char id[TFS_ID_MAX + 1];
    sleep_task(id);
    char *p = hh_task_path(id, "lock");
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkfifo(p, 0600), 0);
    faces_survive(&mt, id, secret, "the lock of a running task as a FIFO");
    unlink(p);
    hh_res_t r = hh_tfs("cancel", id, NULL);
    hh_res_free(&r);
    free(p);
  }

  /* The doorbell of a running task (the FIFO a stop request rings) as a
   * symlink to a file outside, and as a regular file: a stop request
   * still stops the task (by the supervisor's poll) and writes nothing
   * through. */
  for (int kind = 0; kind < 2; kind++) {
    char id[TFS_ID_MAX + 1];
    sleep_task(id);
    char *p = hh_task_path(id, "doorbell");
    /* The supervisor makes its doorbell during start-up (before the
     * record says running, so it is there by now). */
    cr_assert_eq(access(p, F_OK), 0, "no doorbell in a running task");
    unlink(p);
    if (kind)
      cr_assert_eq(tu_write_file(p, "", 0), 0);
    else
      cr_assert_eq(symlink(outside, p), 0);
    hh_res_t r = sh_deadline(hh_strdupf("'%s' cancel %s", tu_taskfs_bin(), id));
    cr_expect_eq(r.status, 0, "taskfs cancel with a planted doorbell: %d %s", r.status, r.err);
    hh_res_free(&r);
    cr_expect_eq(hh_wait_ended(id), TFS_CANCELLED,
                 "a stop request did not land with the doorbell planted as a %s",
                 kind ? "regular file" : "symlink");
    char *sec = hh_slurp(outside, NULL);
    cr_assert(sec && !strcmp(sec, "TOP-SECRET-OUTSIDE-THE-STORE\n"),
              "a stop request wrote through a doorbell symlink");
    free(sec);
    if (kind) {
      size_t len = 99;
      char *c = hh_slurp(p, &len);
      /* (Gone is fine too: the supervisor removes its doorbell on exit.) */
      cr_expect(!c || len == 0, "a stop request wrote into a regular file planted as the doorbell");
      free(c);
    }
    free(p);
  }

  /* A task directory that is a symlink to a directory outside. */
  {
    char id[TFS_ID_MAX + 1];
    done_task("dirlink", id);
    char *dir = hh_strdupf("%s/tasks/%s", hh.store, id);
    char *elsewhere = hh_strdupf("%s/elsewhere", hh.root);
    cr_assert_eq(rename(dir, elsewhere), 0);
    char *secretfile = hh_strdupf("%s/transcript", elsewhere);
    cr_assert_eq(tu_write_file(secretfile, secret, strlen(secret)), 0);
    cr_assert_eq(symlink(elsewhere, dir), 0);
    faces_survive(&mt, id, secret, "a task directory as a symlink");
    free(secretfile);
    free(elsewhere);
    free(dir);
  }

  /* keys/<key> as a symlink and as a FIFO; owner.json as both. */
  {
    char *k1 = hh_strdupf("%s/keys/linked", hh.store);
    cr_assert_eq(symlink(outside, k1), 0);
    char *k2 = hh_strdupf("%s/keys/piped", hh.store);
    cr_assert_eq(mkfifo(k2, 0600), 0);
    faces_survive(&mt, "linked", secret, "a key as a symlink");
    faces_survive(&mt, "piped", secret, "a key as a FIFO");
    /* Starting a task under such a key fails cleanly or replaces it; it
     * never hangs and never writes through the link. */
    hh_res_t r = sh_deadline(hh_strdupf("'%s' run --key linked -- /bin/true; '%s' run --key piped "
                                        "-- /bin/true; true",
                                        tu_taskfs_bin(), tu_taskfs_bin()));
    cr_assert(r.status != 137 && r.status != -1, "run --key on a planted key hung");
    hh_res_free(&r);
    char *s = hh_slurp(outside, NULL);
    cr_assert(s && !strcmp(s, "TOP-SECRET-OUTSIDE-THE-STORE\n"),
              "a key write went through a symlink");
    free(s);
    free(k1);
    free(k2);
  }
  for (int kind = 0; kind < 2; kind++) {
    char *o = hh_strdupf("%s/owner.json", hh.store);
    unlink(o);
    if (kind)
      cr_assert_eq(mkfifo(o, 0600), 0);
    else
      cr_assert_eq(symlink(outside, o), 0);
    /* The MCP server records itself as owner at start. */
    faces_survive(&mt, good, secret, kind ? "owner.json as a FIFO" : "owner.json as a symlink");
    hh_res_t r = sh_deadline(hh_strdupf("cat '%s/owner'; true", mnt));
    cr_assert(r.status != 137, "reading <mnt>/owner hung with owner.json planted");
    cr_assert(!strstr(r.out, secret), "<mnt>/owner showed a file outside the store");
    hh_res_free(&r);
    char *s = hh_slurp(outside, NULL);
    cr_assert(s && !strcmp(s, "TOP-SECRET-OUTSIDE-THE-STORE\n"),
              "the owner record was written through a symlink");
    free(s);
    free(o);
  }
  cr_assert(mount_alive(&mt));
  cr_assert_eq(hh_mount_stop(&mt), 0);
  free(mnt);
  free(outside);
}

/* ---- h08: records edited by hand into nonsense ------------------------------------------------
 */

Test(hard_hostile, h08_records_edited_into_nonsense) {
  char good[TFS_ID_MAX + 1];
  done_task("good", good);
  char *goodrec = hh_task_path(good, "record.json");
  char *valid = hh_slurp(goodrec, NULL);
  free(goodrec);
  cr_assert(valid);

  static const char *const bodies[] = {
      "",
      "{",
      "{}",
      "null",
      "[]",
      "\"running\"",
      "{\"v\":2}",
      "{\"v\":1}",
      "{\"v\":1,\"id\":\"../../etc\",\"command\":[\"x\"],\"state\":\"running\"}",
      "{\"v\":1,\"id\":\"%s\",\"command\":\"not an array\",\"state\":\"running\"}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[],\"state\":\"running\"}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"state\":\"exploded\"}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"state\":5}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"state\":\"running\",\"supervisor\":{\"pid\":"
      "-1}}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"state\":\"failed\",\"exitCode\":1e400}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"state\":\"failed\",\"exitCode\":"
      "99999999999999999999999}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"created\":\"yesterday\",\"state\":\"queued\"}",
      "{\"v\":1,\"id\":\"%s\",\"command\":[\"x\"],\"state\":\"queued\",\"important\":{\"k\":"
      "1000000000,\"first\":\"x\"}}",
      "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
  };
  size_t nb = sizeof bodies / sizeof bodies[0];
  char(*ids)[TFS_ID_MAX + 1] = calloc(nb + 3, sizeof *ids);
  for (size_t i = 0; i < nb; i++) {
    done_task("victim", ids[i]);
    char *p = hh_task_path(ids[i], "record.json");
    if (i == nb - 1) {
      cr_assert_eq(tu_write_file(p, bodies[i], 16), 0); /* binary, with NUL bytes */
    } else {
      char *body = hh_strdupf(bodies[i], ids[i]);
      cr_assert_eq(tu_write_file(p, body, strlen(body)), 0);
      free(body);
    }
    free(p);
  }
  /* A 5 MB record, a directory in the record's place, the valid record
   * with its bytes flipped in the middle. */
  done_task("big", ids[nb]);
  {
    char *p = hh_task_path(ids[nb], "record.json");
    size_t big = 5u << 20;
    char *b = malloc(big);
    memset(b, ' ', big);
    memcpy(b, valid, strlen(valid));
    cr_assert_eq(tu_write_file(p, b, big), 0);
    free(b);
    free(p);
  }
  done_task("dir", ids[nb + 1]);
  {
    char *p = hh_task_path(ids[nb + 1], "record.json");
    unlink(p);
    cr_assert_eq(mkdir(p, 0700), 0);
    free(p);
  }
  done_task("flipped", ids[nb + 2]);
  {
    char *p = hh_task_path(ids[nb + 2], "record.json");
    size_t len;
    char *s = hh_slurp(p, &len);
    for (size_t i = len / 3; i < len / 3 + 8 && i < len; i++)
      s[i] ^= 0x5a;
    cr_assert_eq(tu_write_file(p, s, len), 0);
    free(s);
    free(p);
  }
  size_t total = nb + 3;

  /* The CLI lists the good task; each bad one is an error, not a crash. */
  hh_res_t r = hh_tfs("ls", NULL);
  cr_assert_eq(r.status, 0, "taskfs ls with nonsense records: %d %s", r.status, r.err);
  cr_assert(strstr(r.out, good), "taskfs ls lost the good task");
  hh_res_free(&r);
  r = hh_tfs("ls", "--json", NULL);
  cr_assert_eq(r.status, 0);
  json_error_t jerr;
  json_t *arr = json_loads(r.out, 0, &jerr);
  cr_assert(json_is_array(arr), "taskfs ls --json is not a JSON array with nonsense records: %s",
            jerr.text);
  json_decref(arr);
  hh_res_free(&r);
  for (size_t i = 0; i < total; i++) {
    tfs_record_t rec;
    char err[256];
    int parsed = hh_record_raw(ids[i], &rec, err, sizeof err) == 0;
    tfs_record_free(&rec);
    r = hh_tfs("show", ids[i], NULL);
    cr_assert(r.status == 0 || r.status == 111 || r.status == 101,
              "taskfs show of nonsense record %zu: exit %d", i, r.status);
    if (!parsed)
      cr_assert(r.status != 0 && strlen(r.err) > 10, "nonsense record %zu: no clear error", i);
    hh_res_free(&r);
    r = hh_tfs("logs", ids[i], NULL);
    cr_assert(r.status == 0 || r.status == 111 || r.status == 101, "taskfs logs: %d", r.status);
    hh_res_free(&r);
    r = hh_tfs("cancel", ids[i], NULL);
    cr_assert(r.status == 0 || r.status == 111 || r.status == 101, "taskfs cancel: %d", r.status);
    hh_res_free(&r);
  }
  r = hh_tfs("prune", "--keep", "100", NULL);
  cr_assert_eq(r.status, 0, "taskfs prune with nonsense records: %s", r.err);
  hh_res_free(&r);

  /* The mount lists every task; a bad record reads as EIO; it stays up. */
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);
  for (size_t i = 0; i < total; i++) {
    char *p = hh_strdupf("%s/tasks/%s/record.json", mnt, ids[i]);
    hh_res_t c = sh_deadline(hh_strdupf("cat '%s' >/dev/null", p));
    cr_assert(c.status != 137 && c.status != -1, "reading %s through the mount hung", p);
    hh_res_free(&c);
    free(p);
  }
  char *gp = hh_strdupf("%s/tasks/%s/record.json", mnt, good);
  char *g = hh_slurp(gp, NULL);
  cr_assert(g && strstr(g, good), "the good record through the mount: %s", strerror(errno));
  free(g);
  free(gp);
  {
    char *p = hh_strdupf("%s/tasks/%s/record.json", mnt, ids[1]);
    int fd = open(p, O_RDONLY);
    char buf[64];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    int e = fd >= 0 ? errno : errno;
    if (fd >= 0)
      close(fd);
    cr_assert(n < 0 && e == EIO, "a corrupt record through the mount: %zd (%s), want EIO", n,
              strerror(e));
    free(p);
  }
  cr_assert(mount_alive(&mt));
  cr_assert_eq(hh_mount_stop(&mt), 0);

  /* The MCP server lists the good task and errors on the bad ones. */
  hh_mcp_t m;
  start_mcp(&m);
  int is_err;
  char *msg;
  json_t *res = hh_mcp_tool(&m, "list_managed_tasks", json_object(), &is_err, &msg);
  cr_assert(res && !is_err, "list with nonsense records: %s", msg ? msg : "no answer");
  char *dump = json_dumps(res, JSON_COMPACT);
  cr_assert(strstr(dump, good), "list_managed_tasks lost the good task");
  free(dump);
  json_decref(res);
  for (size_t i = 0; i < total; i++) {
    res = hh_mcp_tool(&m, "read_managed_task", json_pack("{s:s}", "taskId", ids[i]), &is_err, &msg);
    cr_assert(is_err != -1 || msg, "read of nonsense record %zu: no answer", i);
    json_decref(res);
    free(msg);
    res =
        hh_mcp_tool(&m, "cancel_managed_task", json_pack("{s:s}", "taskId", ids[i]), &is_err, &msg);
    cr_assert(is_err != -1 || msg, "cancel of nonsense record %zu: no answer", i);
    json_decref(res);
    free(msg);
  }
  cr_assert_eq(hh_mcp_close(&m), 0);
  free(ids);
  free(valid);
  free(mnt);
}

/* No PID read from disk is ever signalled: a record that claims a live
 * process of ours as its supervisor and worker, with nobody holding the
 * task lock, goes through every stop path; the process must survive. */
Test(hard_hostile, h08b_pids_in_records_are_never_signalled) {
  const char *sl[] = {"/bin/sleep", "300", NULL};
  pid_t victim = hh_spawn(sl, NULL, NULL, NULL, NULL);
  char id[TFS_ID_MAX + 1];
  done_task("pid", id);
  char *p = hh_task_path(id, "record.json");
  char *s = hh_slurp(p, NULL);
  json_error_t jerr;
  json_t *j = json_loads(s, 0, &jerr);
  cr_assert(j, "the record does not parse: %s", jerr.text);
  free(s);
  json_object_set_new(j, "state", json_string("running"));
  json_object_set_new(j, "exitCode", json_null());
  json_object_set_new(j, "ended", json_null());
  json_object_set_new(j, "reason", json_null());
  json_t *sup = json_object_get(j, "supervisor");
  json_object_set_new(sup, "pid", json_integer(victim));
  json_t *w = json_object_get(j, "worker");
  json_object_set_new(w, "pid", json_integer(victim));
  json_object_set_new(w, "pgid", json_integer(victim));
  cr_assert_eq(json_dump_file(j, p, 0), 0);
  json_decref(j);
  free(p);
  tfs_record_t rec;
  char err[256];
  cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "the edited record: %s", err);
  cr_assert_eq(rec.supervisor_pid, victim);
  tfs_record_free(&rec);

  hh_res_t r = hh_tfs("cancel", id, NULL);
  hh_res_free(&r);
  r = hh_tfs("show", id, NULL);
  cr_assert(strstr(r.out, "\"lost\""),
            "a running record with a free lock does not read lost: "
            "%s %s",
            r.out, r.err);
  hh_res_free(&r);
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);
  char *cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, id);
  int fd = open(cancel, O_WRONLY | O_TRUNC);
  if (fd >= 0) {
    ssize_t n = write(fd, "1", 1);
    (void)n;
    close(fd);
  }
  hh_mcp_t m;
  start_mcp(&m);
  int is_err;
  char *msg;
  json_t *res =
      hh_mcp_tool(&m, "cancel_managed_task", json_pack("{s:s}", "taskId", id), &is_err, &msg);
  json_decref(res);
  free(msg);
  cr_assert_eq(hh_mcp_close(&m), 0);
  r = hh_tfs("prune", "--keep", "0", NULL);
  hh_res_free(&r);
  hh_sleep_ms(500);
  cr_assert_eq(waitpid(victim, NULL, WNOHANG), 0,
               "a process named by a PID in a record was signalled");
  cr_assert_eq(kill(victim, 0), 0);
  kill(victim, SIGKILL);
  waitpid(victim, NULL, 0);
  cr_assert_eq(hh_mount_stop(&mt), 0);
  free(cancel);
  free(mnt);
}

/* ---- h09: a transcript with a 100 MB line ------------------------------------------------ */

static int transcript_at_least(void *arg) {
  void **a = arg;
  struct stat st;
  char *p = hh_task_path(a[0], "transcript");
  int ok = stat(p, &st) == 0 && st.st_size >= *(off_t *)a[1];
  free(p);
  return ok;
}

Test(hard_hostile, h09_transcript_with_a_100mb_line) {
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/bin/sh", "-c",
                       "echo error: first; head -c 100000000 /dev/zero | tr '\\0' x; echo; "
                       "echo error: after; exec sleep 300",
                       NULL};
  hh_run_task(NULL, cmd, id);
  off_t want = 13 + 100000000 + 1 + 13;
  void *arg[2] = {id, &want};
  cr_assert(tu_wait_until(transcript_at_least, arg, 120000), "the transcript did not reach %lld",
            (long long)want);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  long hwm = hh_vmhwm_kib(sup);
  cr_log_info("supervisor peak RSS after a 100 MB line: %ld KiB", hwm);
  if (!getenv("TASKFS_SANITIZED"))
    cr_assert(hwm > 0 && hwm < 16 * 1024,
              "the supervisor's peak RSS reached %ld KiB on a 100 MB line", hwm);

  /* The MCP answer stays small and keeps both important lines. */
  hh_mcp_t m;
  start_mcp(&m);
  int is_err;
  char *msg;
  json_t *res =
      hh_mcp_tool(&m, "read_managed_task", json_pack("{s:s}", "taskId", id), &is_err, &msg);
  cr_assert(res && !is_err, "read_managed_task: %s", msg ? msg : "no answer");
  char *dump = json_dumps(res, JSON_COMPACT);
  cr_log_info("read_managed_task answer: %zu bytes", strlen(dump));
  cr_assert(strlen(dump) < 16384, "read_managed_task answered %zu bytes for a 100 MB line",
            strlen(dump));
  cr_assert(strstr(dump, "error: first") && strstr(dump, "error: after"),
            "the important lines around a 100 MB line are missing");
  free(dump);
  json_decref(res);
  long mhwm = hh_vmhwm_kib(m.pid);
  cr_log_info("MCP server peak RSS: %ld KiB", mhwm);
  if (!getenv("TASKFS_SANITIZED"))
    cr_assert(mhwm < 64 * 1024, "the MCP server's peak RSS reached %ld KiB", mhwm);
  cr_assert_eq(hh_mcp_close(&m), 0);

  /* The CLI: the last line; the mount: size and tail. */
  hh_res_t r = hh_tfs("logs", "-n", "1", id, NULL);
  cr_assert_eq(r.status, 0);
  cr_assert_str_eq(r.out, "error: after\n");
  hh_res_free(&r);
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);
  char *tp = hh_strdupf("%s/tasks/%s/transcript", mnt, id);
  struct stat st;
  cr_assert_eq(stat(tp, &st), 0);
  cr_assert_eq(st.st_size, want, "the mount reports %lld bytes, want %lld", (long long)st.st_size,
               (long long)want);
  r = hh_sh("tail -c 13 '%s'", tp);
  cr_assert_str_eq(r.out, "error: after\n");
  hh_res_free(&r);
  r = hh_sh("cmp '%s' '%s/tasks/%s/transcript' && echo same", tp, hh.store, id);
  cr_assert(strstr(r.out, "same"), "the transcript through the mount differs");
  hh_res_free(&r);
  r = hh_tfs("cancel", id, NULL);
  hh_res_free(&r);
  cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED);
  hh_check_store("after a 100 MB line");
  cr_assert_eq(hh_mount_stop(&mt), 0);
  free(tp);
  free(mnt);
}

/* ---- h10: output with NUL bytes ----------------------------------------------------------- */

Test(hard_hostile, h10_output_with_nul_bytes) {
  static const char out[] = "a\0b\nerror: x\0y\n\0\0\0\nplain\n\0";
  size_t outlen = sizeof out - 1;
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/usr/bin/printf", "a\\0b\\nerror: x\\0y\\n\\0\\0\\0\\nplain\\n\\0", NULL};
  hh_run_task(NULL, cmd, id);
  cr_assert_eq(hh_wait_ended(id), TFS_COMPLETED);
  char *tp = hh_task_path(id, "transcript");
  size_t len;
  char *t = hh_slurp(tp, &len);
  cr_assert(t && len == outlen && !memcmp(t, out, len), "the transcript is not byte-exact");
  free(t);
  free(tp);
  hh_check_store("NUL bytes");
  tfs_record_t rec;
  char err[256];
  cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "%s", err);
  cr_assert(rec.important.nfirst >= 1, "the error line with a NUL was not kept as important");
  tfs_record_free(&rec);

  hh_res_t r = hh_tfs("logs", id, NULL);
  cr_assert(r.status == 0 && r.outlen == outlen && !memcmp(r.out, out, outlen),
            "taskfs logs is not byte-exact with NUL bytes");
  hh_res_free(&r);
  hh_mcp_t m;
  start_mcp(&m);
  int is_err;
  char *msg;
  json_t *res =
      hh_mcp_tool(&m, "read_managed_task", json_pack("{s:s}", "taskId", id), &is_err, &msg);
  cr_assert(res && !is_err, "read_managed_task with NUL bytes: %s", msg ? msg : "no answer");
  char *dump = json_dumps(res, JSON_COMPACT);
  cr_assert(strstr(dump, "plain") && strstr(dump, "error: x"), "the lines around NULs are lost");
  free(dump);
  json_decref(res);
  cr_assert_eq(hh_mcp_close(&m), 0);
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);
  char *mp = hh_strdupf("%s/tasks/%s/transcript", mnt, id);
  t = hh_slurp(mp, &len);
  cr_assert(t && len == outlen && !memcmp(t, out, len), "the mount is not byte-exact with NULs");
  free(t);
  free(mp);
  cr_assert_eq(hh_mount_stop(&mt), 0);
  free(mnt);
}

/* ---- h11: mutated JSON-RPC messages ------------------------------------------------------- */

/* A seeded dumb fuzzer over the real server: valid messages of every kind
 * the server knows, mutated (bytes flipped, spans cut or doubled, hostile
 * tokens spliced in, truncated): 20,000 of them (300,000 with TASKFS_FULL=1). Every line the server
 * writes must be JSON (hh_mcp_read checks), and after every hundred a ping
 * must be answered. The libFuzzer targets cannot reach the message handler
 * in-process (it is static and the server is not re-entrant); this does,
 * under ASan/UBSan in `make asan`. Commands in the seeds are harmless
 * (/bin/true, /bin/echo); mutations of them name programs that do not
 * exist. */
Test(hard_hostile, h11_mutated_jsonrpc) {
  static const char *const seeds[] = {
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
      "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"m\",\"version\":\"1\"}}}",
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":null}}",
      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"mut\",\"command\":[\"/bin/true\"],"
      "\"waitMs\":10}}}",
      "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"mut2\",\"command\":\"/bin/echo hi\","
      "\"cwd\":\"/\",\"env\":{\"A\":\"b\"},\"restart\":true}}}",
      "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"read_managed_task\",\"arguments\":{\"taskKey\":\"mut\",\"waitMs\":5,\"tailLines\":3,"
      "\"sinceLine\":1,\"untilPattern\":\"h(i\"}}}",
      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"list_managed_tasks\",\"arguments\":{\"state\":\"completed\",\"limit\":2,\"cursor\":\"x\"}}"
      "}",
      "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"cancel_managed_task\",\"arguments\":{\"taskKey\":\"mut\"}}}",
      "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"mut3\",\"command\":[\"/bin/true\"]},"
      "\"task\":{\"ttl\":1000}}}",
      "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tasks/list\",\"params\":{\"cursor\":\"a\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tasks/get\",\"params\":{\"taskId\":"
      "\"mx2o5jl7-z1uk5h\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tasks/cancel\",\"params\":{\"taskId\":\"x\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"resources/list\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"resources/templates/list\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"resources/read\",\"params\":{\"uri\":"
      "\"taskfs://tasks/mx2o5jl7-z1uk5h/transcript\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"resources/subscribe\",\"params\":{\"uri\":"
      "\"taskfs://tasks/mx2o5jl7-z1uk5h/record\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"resources/unsubscribe\",\"params\":{\"uri\":"
      "\"taskfs://tasks/mx2o5jl7-z1uk5h/record\"}}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":6}}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
  };
  static const char *const tokens[] = {
      "null",
      "{}",
      "[]",
      "-1",
      "0",
      "1e999",
      "-0.0",
      "99999999999999999999",
      "\"\"",
      "\"\\u0000\"",
      "\"../..\"",
      "\"a/b\"",
      "true",
      "\"\\ud800\"",
      "[[[[[[[[]]]]]]]]",
      "\"taskfs://tasks/../../etc/passwd/record\"",
      "\"mx2o5jl7-z1uk5h\"",
      ",",
      ":",
      "\"",
  };
  const char *s = getenv("HH_SEED");
  unsigned seed = s && *s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)(getpid() ^ time(NULL));
  srand(seed);
  cr_log_info("h11 seed %u (replay with HH_SEED=%u)", seed, seed);
  hh_mcp_t m;
  start_mcp(&m);
  size_t nseeds = sizeof seeds / sizeof seeds[0], ntok = sizeof tokens / sizeof tokens[0];
  int answered = 0, total = hh_full() ? 300000 : 20000;
  for (int i = 0; i < total; i++) {
    const char *src = seeds[rand() % nseeds];
    size_t n = strlen(src), cap = n * 2 + 256;
    char *b = malloc(cap);
    memcpy(b, src, n);
    int muts = 1 + rand() % 4;
    for (int k = 0; k < muts && n > 0; k++) {
      size_t at = (size_t)rand() % n;
      switch (rand() % 5) {
      case 0: /* flip a byte (never into a newline: that only splits) */
        b[at] = (char)(rand() % 256);
        if (b[at] == '\n')
          b[at] = ' ';
        break;
      case 1: { /* cut a span */
        size_t len = (size_t)rand() % (n - at + 1);
        memmove(b + at, b + at + len, n - at - len);
        n -= len;
        break;
      }
      case 2: { /* double a span */
        size_t len = (size_t)rand() % (n - at + 1);
        if (n + len < cap) {
          memmove(b + at + len, b + at, n - at);
          n += len;
        }
        break;
      }
      case 3: { /* splice a token */
        const char *t = tokens[rand() % ntok];
        size_t tl = strlen(t);
        if (n + tl < cap) {
          memmove(b + at + tl, b + at, n - at);
          memcpy(b + at, t, tl);
          n += tl;
        }
        break;
      }
      default: /* truncate */
        n = at;
      }
    }
    b[n++] = '\n';
    cr_assert_eq(hh_mcp_send_raw(&m, b, n), 0, "message %d: the server stopped reading", i);
    free(b);
    if (i % 100 == 99) {
      json_t *got = send_then_ping(&m, "", 0);
      answered += (int)json_array_size(got);
      json_decref(got);
    }
  }
  cr_log_info("h11: %d mutated messages, %d answers, the server stayed up", total, answered);
  cr_assert(answered > total / 10, "the server answered only %d of %d messages", answered, total);
  cr_assert_eq(hh_mcp_close(&m), 0, "the MCP server did not exit cleanly after the mutations");
  hh_store_stats_t st = hh_check_store("after mutated messages");
  cr_log_info("h11: the mutations started %zu tasks", st.tasks);
}

/* ---- h12: stop requests from every face at once ------------------------------------------ */

/* Three `taskfs cancel`, two writers of the mount's cancel file and two
 * MCP servers (cancel_managed_task and tasks/cancel) all stop one task at
 * the same moment: it ends cancelled once, its record parses, every
 * requester gets an answer (done, or already ended), and nothing hangs. */
Test(hard_hostile, h12_stop_requests_from_every_face_at_once) {
  hh_mount_t mt = {0};
  char *mnt = start_mount(&mt);
  for (int round = 0; round < 5; round++) {
    char id[TFS_ID_MAX + 1];
    sleep_task(id);
    hh_mcp_t m[2];
    for (int i = 0; i < 2; i++)
      start_mcp(&m[i]);
    char *cancel = hh_strdupf("%s/tasks/%s/cancel", mnt, id);
    pid_t kids[5];
    for (int i = 0; i < 5; i++) {
      char *cmd = i < 3 ? hh_strdupf("exec '%s' cancel %s", tu_taskfs_bin(), id)
                        : hh_strdupf("echo 1 > '%s'", cancel);
      const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
      kids[i] = hh_spawn(argv, NULL, NULL, NULL, NULL);
      free(cmd);
    }
    char *l0 = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":71,\"method\":\"tools/call\",\"params\":{"
                          "\"name\":\"cancel_managed_task\",\"arguments\":{\"taskId\":\"%s\"}}}\n",
                          id);
    char *l1 = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":72,\"method\":\"tasks/cancel\",\"params\":{"
                          "\"taskId\":\"%s\"}}\n",
                          id);
    cr_assert_eq(hh_mcp_send_raw(&m[0], l0, strlen(l0)), 0);
    cr_assert_eq(hh_mcp_send_raw(&m[1], l1, strlen(l1)), 0);
    for (int i = 0; i < 5; i++) {
      int st = hh_wait(kids[i], hh_timeout_ms());
      cr_assert(st != -1, "round %d: requester %d hung", round, i);
      if (i < 3)
        cr_assert_eq(st, 0, "round %d: taskfs cancel exited %d", round, st);
    }
    for (int i = 0; i < 2; i++) {
      json_t *v;
      do {
        v = hh_mcp_read(&m[i], hh_timeout_ms());
        cr_assert(v, "round %d: MCP server %d did not answer its stop request", round, i);
        if (json_object_get(v, "id"))
          break;
        json_decref(v);
      } while (1);
      /* tasks/cancel of a task that ended meanwhile is -32602 by the
       * spec; anything else must be a result. */
      cr_assert(json_object_get(v, "result") || error_code(v) == -32602,
                "round %d: MCP server %d answered %s", round, i, json_dumps(v, JSON_COMPACT));
      json_decref(v);
      cr_assert_eq(hh_mcp_close(&m[i]), 0);
    }
    cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED, "round %d: the task did not end cancelled",
                 round);
    hh_check_store("concurrent stop requests");
    free(l0);
    free(l1);
    free(cancel);
  }
  cr_assert(mount_alive(&mt));
  cr_assert_eq(hh_mount_stop(&mt), 0);
  free(mnt);
}

/* ---- h13: one key started from every face at once -------------------------------------------- */

/* Four `taskfs run --key K` and three MCP servers' start_managed_task with
 * the same key and command, all at the same moment: exactly one task
 * exists for the key, every starter was told its id, and the command ran
 * once (it appends a line to a file). Five rounds, a fresh key each. */
Test(hard_hostile, h13_one_key_started_from_every_face_at_once) {
  for (int round = 0; round < 5; round++) {
    char key[32];
    snprintf(key, sizeof key, "race-%d", round);
    char *side = hh_strdupf("%s/ran-%d", hh.root, round);
    char *script = hh_strdupf("echo ran >> '%s'", side);
    hh_mcp_t m[3];
    for (int i = 0; i < 3; i++)
      start_mcp(&m[i]);
    int outs[4];
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
      const char *argv[] = {tu_taskfs_bin(), "run", "--key", key, "--",
                            "/bin/sh",       "-c",  script,  NULL};
      kids[i] = hh_spawn(argv, NULL, &outs[i], NULL, NULL);
    }
    json_t *cmd = json_pack("[s, s, s]", "/bin/sh", "-c", script);
    for (int i = 0; i < 3; i++) {
      json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s, s:O}}}", "jsonrpc", "2.0", "id", 81,
                              "method", "tools/call", "params", "name", "start_managed_task",
                              "arguments", "taskKey", key, "command", cmd);
      char *line = json_dumps(req, JSON_COMPACT);
      json_decref(req);
      char *nl = hh_strdupf("%s\n", line);
      cr_assert_eq(hh_mcp_send_raw(&m[i], nl, strlen(nl)), 0);
      free(nl);
      free(line);
    }
    json_decref(cmd);
    char ids[7][TFS_ID_MAX + 1];
    for (int i = 0; i < 4; i++) {
      char buf[256];
      ssize_t n = 0, r;
      while ((r = read(outs[i], buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
      close(outs[i]);
      buf[n > 0 ? n : 0] = 0;
      int st = hh_wait(kids[i], hh_timeout_ms());
      cr_assert_eq(st, 0, "round %d: taskfs run --key exited %d", round, st);
      snprintf(ids[i], sizeof ids[i], "%s", hh_chomp(buf));
    }
    for (int i = 0; i < 3; i++) {
      json_t *v;
      for (;;) {
        v = hh_mcp_read(&m[i], hh_timeout_ms());
        cr_assert(v, "round %d: MCP server %d did not answer", round, i);
        if (json_object_get(v, "id"))
          break;
        json_decref(v);
      }
      json_t *res = json_object_get(v, "result");
      json_t *sc = json_object_get(res, "structuredContent");
      const char *id = json_string_value(json_object_get(sc, "taskId"));
      cr_assert(id, "round %d: MCP server %d: %s", round, i, json_dumps(v, JSON_COMPACT));
      snprintf(ids[4 + i], sizeof ids[4 + i], "%s", id);
      json_decref(v);
      cr_assert_eq(hh_mcp_close(&m[i]), 0);
    }
    for (int i = 1; i < 7; i++)
      cr_assert_str_eq(ids[i], ids[0], "round %d: starter %d was given %s, starter 0 %s", round, i,
                       ids[i], ids[0]);
    hh_wait_ended(ids[0]);
    size_t len = 0;
    char *ran = hh_slurp(side, &len);
    cr_assert(ran && !strcmp(ran, "ran\n"), "round %d: the command ran %zu times, not once", round,
              len / 4);
    free(ran);
    free(script);
    free(side);
  }
  hh_check_store("after the key races");
}

/* ---- h14: a pathological untilPattern ------------------------------------------------------- */

/* read_managed_task's untilPattern is a POSIX extended regex from the
 * client, matched against lines the task wrote, inside the server's one
 * event loop. With back-references glibc's matcher is exponential:
 * `(a*)*\1b` against 200 'a's takes seconds, against 2000 for ever. One
 * such request must not freeze the server for every other request: a ping
 * sent after it is answered (bound: 15 s times TASKFS_TEST_SLOW), and so is the read itself. */
Test(hard_hostile, h14_pathological_until_pattern) {
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/bin/sh", "-c", "head -c 2000 /dev/zero | tr '\\0' a; echo; exec sleep 300",
                       NULL};
  hh_run_task(NULL, cmd, id);
  hh_mcp_t m;
  start_mcp(&m);
  char *req = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":91,\"method\":\"tools/call\",\"params\":{"
                         "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                         "\"waitMs\":2000,\"sinceLine\":0,\"untilPattern\":\"(a*)*\\\\1b\"}}}\n"
                         "{\"jsonrpc\":\"2.0\",\"id\":92,\"method\":\"ping\"}\n",
                         id);
  cr_assert_eq(hh_mcp_send_raw(&m, req, strlen(req)), 0);
  free(req);
  int got_ping = 0, got_read = 0;
  int64_t end = hh_now_ms() + 15000 * tu_slow();
  while ((!got_ping || !got_read) && hh_now_ms() < end) {
    json_t *v = hh_mcp_read(&m, end - hh_now_ms());
    if (!v)
      break;
    json_t *vid = json_object_get(v, "id");
    if (json_is_integer(vid) && json_integer_value(vid) == 92)
      got_ping = 1;
    if (json_is_integer(vid) && json_integer_value(vid) == 91)
      got_read = 1;
    json_decref(v);
  }
  cr_expect(
      got_ping,
      "a ping sent after a read with untilPattern '(a*)*\\1b' over a 2000-byte "
      "line was not answered within 15 s (times TASKFS_TEST_SLOW): the pattern froze the server");
  cr_expect(got_read, "the read with a pathological untilPattern was not answered within 15 s "
                      "(times TASKFS_TEST_SLOW)");
  hh_mcp_kill9(&m);
  hh_res_t r = hh_tfs("cancel", id, NULL);
  hh_res_free(&r);
}

/* ---- h15: environment overrides meant for the loader ---------------------------------------- */

/* `--env NAME=VALUE` is for the worker. Names the dynamic loader or taskfs
 * itself reads (LD_PRELOAD, LD_LIBRARY_PATH, TASKFS_*) must not change the
 * supervisor that runs it: an LD_PRELOAD for the user's program would
 * otherwise be loaded into the supervisor too, and an LD_LIBRARY_PATH
 * with other libuv/jansson builds could stop it from starting at all. The
 * worker gets every override; the supervisor's own environment holds none. */
Test(hard_hostile, h15_env_overrides_reach_only_the_worker) {
  char *lib = hh_strdupf("%s/no-such-preload.so", hh.root);
  char *pre = hh_strdupf("LD_PRELOAD=%s", lib);
  char *lpath = hh_strdupf("LD_LIBRARY_PATH=%s/nolibs", hh.root);
  const char *extra[] = {"--env", pre, "--env", lpath, "--env", "TASKFS_CANCEL_POLL_MS=86400000",
                         NULL};
  const char *cmd[] = {"/bin/sh", "-c",
                       "echo \"pre=$LD_PRELOAD\"; echo \"poll=$TASKFS_CANCEL_POLL_MS\"; "
                       "exec sleep 300",
                       NULL};
  char id[TFS_ID_MAX + 1];
  hh_run_task(extra, cmd, id);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", (int)sup);
  size_t len;
  char *env = hh_slurp(path, &len);
  cr_assert(env);
  for (size_t i = 0; i < len; i += strlen(env + i) + 1)
    if (!strncmp(env + i, "LD_PRELOAD=", 11) || !strncmp(env + i, "LD_LIBRARY_PATH=", 16) ||
        !strncmp(env + i, "TASKFS_CANCEL_POLL_MS=", 22)) {
      cr_expect(0, "the supervisor of %s runs with the worker's override %s", id, env + i);
    }
  free(env);
  /* The worker got them. */
  char *t = hh_transcript_wait(id, "poll=");
  cr_assert(t && strstr(t, lib) && strstr(t, "poll=86400000"), "the worker did not get its env: %s",
            t ? t : "");
  free(t);
  /* And a stop request is still acted on promptly (the supervisor did not
   * take the worker's poll interval). */
  hh_res_t r = hh_tfs("cancel", id, NULL);
  hh_res_free(&r);
  cr_assert_eq(hh_wait_ended(id), TFS_CANCELLED);
  free(lib);
  free(pre);
  free(lpath);
}

/* ---- h16: a mount point inside the store ---------------------------------------------------- */

/* `taskfs mount <store>/tasks` (or any directory in the store) would hide
 * the store from everything that reaches it by path -- supervisors write
 * tasks/<id>/... -- and the mount's own look-ups would come back into
 * itself. It must be refused with a clear error, before mounting. */
Test(hard_hostile, h16_mount_point_inside_the_store) {
  char id[TFS_ID_MAX + 1];
  done_task("inside", id);
  static const char *const where[] = {"tasks", "keys", ""};
  for (int i = 0; i < 3; i++) {
    char *mp = hh_strdupf("%s/%s", hh.store, where[i]);
    if (mp[strlen(mp) - 1] == '/')
      mp[strlen(mp) - 1] = 0;
    hh_mount_t mt = {0};
    int rc = hh_mount_start_ex(&mt, mp, NULL);
    char *log = hh_slurp(mt.log, NULL);
    if (rc == 0) {
      /* (Not even a stat of it is tried: on tasks/ it never returns.) */
      cr_expect(0, "taskfs mount accepted %s, inside its own store", mp);
      hh_mount_kill9(&mt);
    } else {
      cr_expect(log && strstr(log, hh.store), "the refusal does not say why: %s", log ? log : "");
    }
    free(log);
    free(mp);
    free(mt.mnt);
    free(mt.log);
  }
}
