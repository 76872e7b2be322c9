/* Triage: the lead (the first error) and its context as the output goes
 * by, the order a small answer shows lines in (tfs_triage_select), the
 * record keeping them, and the reason a task ended: the core's words for
 * exit codes and signals, and a real OOM kill in a memory cgroup told
 * through the shipped supervisor. */
#include "tests/sup_fixture.h"

#include <sys/wait.h>

TestSuite(oom, .timeout = 120);

/* ---- the lead and its context ------------------------------------------- */

/* Feeds the lines of text (separated by '\n') as the capture does: lines
 * of fewer than TFS_CLASSIFY_MIN_LEN bytes are not fed. */
static void feed(tfs_important_t *imp, int64_t first, const char *text) {
  int64_t no = first;
  for (const char *p = text; *p; no++) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len >= TFS_CLASSIFY_MIN_LEN)
      cr_assert_eq(tfs_important_feed(imp, no, p, len), 0);
    p += len + (nl ? 1 : 0);
  }
}

/* The context lines joined by '|'. */
static char *context(const tfs_important_t *imp) {
  static char buf[4096];
  buf[0] = 0;
  for (size_t i = 0; i < imp->ncontext; i++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%lld:%s", i ? "|" : "",
             (long long)imp->context[i].line, imp->context[i].text);
  return buf;
}

Test(lead, python_exception_with_its_last_frame) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1,
       "user 1: ada\n"
       "Traceback (most recent call last):\n"
       "  File \"/app/report.py\", line 9, in <module>\n"
       "    main()\n"
       "  File \"/app/users.py\", line 6, in profile\n"
       "    return u[\"email\"]\n"
       "           ~^^^^^^^^^\n"
       "KeyError: 'email'\n");
  cr_assert_eq(imp.lead.line, 8, "the exception is the lead, not the Traceback heading");
  cr_assert_str_eq(imp.lead.text, "KeyError: 'email'");
  cr_assert_str_eq(context(&imp),
                   "5:  File \"/app/users.py\", line 6, in profile|6:    return u[\"email\"]");
  tfs_important_free(&imp);
}

Test(lead, the_cause_after_a_verdict_and_its_values) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1,
       "npm error code 1\n"
       "npm error path /home/ci/app/node_modules/leveldown\n"
       "npm error ../binding.cc:9:10: fatal error: node_api.h: No such file or directory\n"
       "npm error     9 | #include <node_api.h>\n");
  cr_assert_eq(imp.lead.line, 3);
  tfs_important_free(&imp);

  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1,
       " FAIL  src/cart.test.js\n"
       "  \xe2\x97\x8f Cart \xe2\x80\xba caps the discount\n"
       "\n"
       "    expect(received).toBe(expected)\n"
       "\n"
       "    Expected: 5000\n"
       "    Received: 2000\n"
       "\n"
       "      15 |     test('caps the discount', () => {\n"
       "    > 17 |       expect(cart.applyDiscount(80)).toBe(10000);\n"
       "         |                                      ^\n"
       "\n"
       "      at Object.toBe (src/cart.test.js:17:38)\n");
  cr_assert_eq(imp.lead.line, 2, "the failing test's heading over the file's FAIL");
  cr_assert_str_eq(context(&imp), "4:    expect(received).toBe(expected)|6:    Expected: 5000|"
                                  "7:    Received: 2000|13:      at Object.toBe "
                                  "(src/cart.test.js:17:38)");
  tfs_important_free(&imp);
}

/* The first frame of the program's own code, after the runtime's frames;
 * Go's function line comes with it. */
Test(lead, first_frame_of_the_programs_own_code) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1,
       "--- FAIL: TestTier (0.00s)\n"
       "panic: runtime error: index out of range [3] with length 3 [recovered]\n"
       "\tpanic: runtime error: index out of range [3] with length 3\n"
       "\n"
       "goroutine 23 [running]:\n"
       "testing.tRunner.func1()\n"
       "\t/usr/lib/go-1.19/src/testing/testing.go:1399 +0x39f\n"
       "example.com/shop/pricing.Tier(...)\n"
       "\t/home/ci/shop/pricing/pricing.go:15\n"
       "example.com/shop/pricing.TestTier(0xc0000971e0)\n"
       "\t/home/ci/shop/pricing/tier_test.go:8 +0x297\n");
  cr_assert_eq(imp.lead.line, 2);
  cr_assert_str_eq(context(&imp),
                   "1:--- FAIL: TestTier (0.00s)|8:example.com/shop/pricing.Tier(...)|"
                   "9:\t/home/ci/shop/pricing/pricing.go:15");
  tfs_important_free(&imp);
}

/* The next located diagnostic ends the context: it is a report of its own. */
Test(lead, context_ends_at_the_next_report) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1,
       "src/a.java:12: error: cannot find symbol\n"
       "    audit.record(txTimeout);\n"
       "                 ^\n"
       "  symbol:   variable txTimeout\n"
       "  location: class OrderService\n"
       "src/a.java:21: error: cannot find symbol\n"
       "  symbol:   method withStatus(String)\n");
  cr_assert_eq(imp.lead.line, 1);
  cr_assert_str_eq(context(&imp), "2:    audit.record(txTimeout);|4:  symbol:   variable "
                                  "txTimeout|5:  location: class OrderService");
  tfs_important_free(&imp);
}

/* Feeds plain progress lines numbered [from, to). */
static void progress(tfs_important_t *imp, int from, int to) {
  char buf[128];
  for (int i = from; i < to; i++) {
    int n = snprintf(buf, sizeof buf, "progress %d of the build, all is well", i);
    cr_assert_eq(tfs_important_feed(imp, i, buf, (size_t)n), 0);
  }
}

/* A verdict is replaced by an error however late; an error only by a
 * better line close after it; then the lead is final and the tracker
 * gone, so that a flood costs nothing more. */
Test(lead, when_it_changes_and_when_it_is_final) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 5), 0);
  feed(&imp, 1, "make: *** [Makefile:7: build/a.o] Error 1\n");
  cr_assert_eq(imp.lead.line, 1);
  progress(&imp, 2, 5000);
  feed(&imp, 5000, "error: failed to get `serde` as a dependency\n");
  cr_assert_eq(imp.lead.line, 5000, "a verdict gives way to an error at any distance");
  cr_assert_eq(imp.lead_final, 0);
  progress(&imp, 5001, 5100);
  feed(&imp, 5100, "a.go:3:1: undefined: x\n");
  cr_assert_eq(imp.lead.line, 5000, "no better line came close after the first error");
  cr_assert_eq(imp.lead_final, 1);
  cr_assert_null(imp.tracker);
  tfs_important_free(&imp);

  /* A lead read from a record stays: feeding more cannot change it. */
  cr_assert_eq(tfs_important_init(&imp, 5), 0);
  cr_assert_eq(tfs_important_set_lead(&imp, 7, TFS_LINE_ERROR, "error: from the record", 22), 0);
  feed(&imp, 8, "KeyError: 'x'\n");
  cr_assert_eq(imp.lead.line, 7);
  cr_assert_null(imp.tracker);
  tfs_important_free(&imp);
}

/* Context is bounded in lines and bytes, and kept texts are clean. */
Test(lead, bounded_context) {
  tfs_important_t imp;
  char line[1200];
  cr_assert_eq(tfs_important_init(&imp, 3), 0);
  feed(&imp, 1, "Error: boom\n");
  for (int i = 0; i < 40; i++) {
    memset(line, 'x', sizeof line);
    memcpy(line, "Expected: \x1b[31m", 15);
    tfs_important_feed(&imp, 2 + i, line, sizeof line);
  }
  cr_assert_leq(imp.ncontext, TFS_CONTEXT_MAX);
  cr_assert_geq(imp.ncontext, 1);
  for (size_t i = 0; i < imp.ncontext; i++) {
    cr_assert_leq(strlen(imp.context[i].text), TFS_CONTEXT_TEXT_MAX);
    cr_assert_null(strchr(imp.context[i].text, '\x1b'));
  }
  tfs_important_free(&imp);
}

/* ---- the order of a small answer ------------------------------------------- */

/* The numbered header that names what failed, above the first error or
 * above its location, is the lead's context (issue 29): PHPUnit, ExUnit,
 * RSpec, shellcheck. Whose text holds each wanted piece. */
static void header_case(const char *text, int64_t lead, const char *lead_text, const char *header) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1, text);
  cr_assert_eq(imp.lead.line, lead, "lead at %lld, not %lld: %s", (long long)imp.lead.line,
               (long long)lead, imp.lead.text ? imp.lead.text : "(none)");
  cr_assert(strstr(imp.lead.text, lead_text), "lead: %s", imp.lead.text);
  cr_assert(strstr(context(&imp), header), "context: %s", context(&imp));
  tfs_important_free(&imp);
}

Test(lead, the_failure_header_names_what_failed) {
  header_case("There was 1 failure:\n"
              "\n"
              "1) App\\Tests\\InvoiceTest::testTotalIncludesVat\n"
              "Failed asserting that 119.0 is identical to 120.0.\n"
              "\n"
              "/home/ci/invoice/tests/InvoiceTest.php:42\n"
              "\n"
              "FAILURES!\n",
              4, "Failed asserting that 119.0", "3:1) App\\Tests\\InvoiceTest::testTotalIncludesVat");
  header_case("  1) test total/1 applies the member discount (Shop.CartTest)\n"
              "     test/shop/cart_test.exs:14\n"
              "     Assertion with == failed\n"
              "     code:  assert Cart.total(cart) == 90\n"
              "     left:  100\n"
              "     right: 90\n"
              "     stacktrace:\n"
              "       test/shop/cart_test.exs:17: (test)\n",
              3, "Assertion with == failed",
              "1:  1) test total/1 applies the member discount (Shop.CartTest)");
  header_case("Failures:\n"
              "\n"
              "  1) Order#total applies the coupon before tax\n"
              "     Failure/Error: expect(order.total).to eq(90)\n"
              "\n"
              "       expected: 90\n"
              "            got: 100\n",
              4, "Failure/Error: expect(order.total)", "3:  1) Order#total applies the coupon");
  header_case("\n"
              "In scripts/release.sh line 9:\n"
              "if [ \"$1\" = \"--dry-run\" ]; then\n"
              "^-- SC1046 (error): Couldn't find 'fi' for this 'if'.\n",
              4, "SC1046 (error)", "2:In scripts/release.sh line 9:");
  /* An Elixir frame is not an error of its own: the assertion stays the lead. */
  static const char *const frames[] = {
      "       test/shop/cart_test.exs:17: (test)",
      "       (shop 0.1.0) lib/shop/cart.ex:23: Shop.Cart.total/1",
      "lib/shop/cart.ex:23: Shop.Cart.total/1",
  };
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++)
    cr_assert_eq(tfs_classify_line(frames[i], strlen(frames[i])), TFS_LINE_PLAIN, "%s", frames[i]);
}

Test(triage, lead_context_then_by_what_lines_are) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 20), 0);
  feed(&imp, 1,
       "ok  \texample.com/a\t0.01s\n"
       "ok  \texample.com/b\t0.01s\n"
       "a.c:3:1: warning: unused variable 'x'\n"
       "--- FAIL: TestCap (0.00s)\n"
       "    cap_test.go:14: total = 2000, want 5000\n"
       "FAIL\texample.com/c\t0.01s\n"
       "FAIL\texample.com/c\t0.01s\n"
       "b.c:9:2: error: 'y' undeclared\n");
  tfs_triage_t t;
  cr_assert_eq(tfs_triage_select(&imp, 0, 0, &t), 0);
  const char *want[] = {"lead 5",  "context 4", "other 8", "other 6",
                        "other 3", "other 1",   "other 2"};
  size_t nwant = sizeof want / sizeof want[0];
  cr_assert_eq(t.n, nwant, "%zu picks", t.n);
  static const char *const role[] = {"lead", "context", "other"};
  for (size_t i = 0; i < t.n; i++) {
    char got[32];
    snprintf(got, sizeof got, "%s %lld", role[t.v[i].role], (long long)t.v[i].line->line);
    cr_assert_str_eq(got, want[i], "pick %zu", i);
  }
  tfs_triage_free(&t);

  /* A budget keeps the lead and what fits after it, in the same order. */
  cr_assert_eq(tfs_triage_select(&imp, 60, 10, &t), 0);
  cr_assert_geq(t.n, 1);
  cr_assert_eq(t.v[0].role, TFS_PICK_LEAD);
  size_t spent = 0;
  for (size_t i = 0; i < t.n; i++)
    spent += strlen(t.v[i].line->text) + 10;
  cr_assert(t.n == 1 || spent <= 60, "spent %zu of 60", spent);
  tfs_triage_free(&t);
  tfs_important_free(&imp);

  tfs_important_t none;
  cr_assert_eq(tfs_important_init(&none, 2), 0);
  cr_assert_eq(tfs_triage_select(&none, 0, 0, &t), 0);
  cr_assert_eq(t.n, 0);
  tfs_triage_free(&t);
  tfs_important_free(&none);
}

/* ---- the record keeps them ------------------------------------------------- */

Test(triage, record_round_trip) {
  tfs_record_t a, b;
  tfs_record_init(&a);
  snprintf(a.id, sizeof a.id, "%s", "mx51puh5-bj2v0o");
  char *argv[] = {"sh", NULL};
  a.argv = malloc(2 * sizeof *a.argv);
  a.argv[0] = strdup(argv[0]);
  a.argv[1] = NULL;
  a.argc = 1;
  feed(&a.important, 1,
       "Traceback (most recent call last):\n"
       "  File \"/app/users.py\", line 6, in profile\n"
       "    return u[\"email\"]\n"
       "KeyError: 'email'\n");
  char *json = tfs_record_dump(&a);
  cr_assert_not_null(json);
  cr_assert_not_null(strstr(json, "\"lead\""), "%s", json);
  char err[256] = "";
  memset(&b, 0, sizeof b);
  cr_assert_eq(tfs_record_parse(json, strlen(json), &b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(b.important.lead.line, 4);
  cr_assert_str_eq(b.important.lead.text, "KeyError: 'email'");
  cr_assert_eq(b.important.ncontext, a.important.ncontext);
  cr_assert_str_eq(context(&b.important), context(&a.important));
  cr_assert_eq(b.important.lead_final, 1);
  char *again = tfs_record_dump(&b);
  cr_assert_str_eq(again, json, "dump, parse, dump gives the same record");
  free(again);
  free(json);
  tfs_record_free(&a);
  tfs_record_free(&b);

  /* A record before the lead (none of the fields) still reads. */
  const char *old = "{\"v\":1,\"id\":\"mx51puh5-bj2v0o\",\"command\":[\"x\"],\"state\":\"failed\","
                    "\"important\":{\"k\":2,\"total\":1,\"first\":[{\"line\":1,\"kind\":"
                    "\"error\",\"text\":\"error: x\"}],\"last\":[]}}";
  memset(&b, 0, sizeof b);
  cr_assert_eq(tfs_record_parse(old, strlen(old), &b, err, sizeof err), 0, "%s", err);
  cr_assert_null(b.important.lead.text);
  tfs_record_free(&b);
}

/* ---- why a task ended ------------------------------------------------------ */

static const char *describe(int status, const tfs_memcg_t *a, const tfs_memcg_t *b) {
  static char buf[512];
  return tfs_exit_describe(status, a, b, buf, sizeof buf);
}

Test(exit_reason, codes_and_signals_in_words) {
  cr_assert_str_eq(describe(W_EXITCODE(0, 0), NULL, NULL), "exited with code 0");
  cr_assert_str_eq(describe(W_EXITCODE(3, 0), NULL, NULL), "exited with code 3");
  cr_assert_str_eq(describe(W_EXITCODE(127, 0), NULL, NULL),
                   "exited with code 127 (command not found)");
  cr_assert_str_eq(describe(W_EXITCODE(139, 0), NULL, NULL),
                   "exited with code 139 (128 + SIGSEGV: a process it ran ended: segmentation "
                   "fault: an invalid memory access)");
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGSEGV), NULL, NULL),
                   "killed by signal SIGSEGV (segmentation fault: an invalid memory access)");
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGABRT) | 0x80, NULL, NULL),
                   "killed by signal SIGABRT (aborted: abort(), a failed assertion or an uncaught "
                   "C++ exception); core dumped");
  /* Nothing to tell an OOM kill by: said as a possibility only. */
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), NULL, NULL),
                   "killed by signal SIGKILL (possibly out of memory)");
  cr_assert_str_eq(describe(W_EXITCODE(137, 0), NULL, NULL),
                   "exited with code 137 (128 + SIGKILL: a process it ran was killed, possibly "
                   "out of memory)");
}

Test(exit_reason, the_memory_cgroup_tells) {
  tfs_memcg_t a = {.known = 1, .v2 = 1, .oom = 0, .oom_kill = 2, .limit = 256 << 20};
  snprintf(a.path, sizeof a.path, "/ci/job-7");
  tfs_memcg_t b = a;
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &a, &b),
                   "killed by signal SIGKILL (not by the kernel's OOM killer: its cgroup counted "
                   "no OOM kill)");
  cr_assert_str_eq(describe(W_EXITCODE(137, 0), &a, &b),
                   "exited with code 137 (128 + SIGKILL: a process it ran was killed, not by the "
                   "kernel's OOM killer)");
  b.oom_kill = 3;
  b.oom = 1;
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &a, &b),
                   "killed by signal SIGKILL: out of memory (the kernel's OOM killer ended it when "
                   "its cgroup /ci/job-7 reached its memory limit of 256 MiB)");
  cr_assert_str_eq(describe(W_EXITCODE(137, 0), &a, &b),
                   "exited with code 137: out of memory (a process it ran was killed by the "
                   "kernel's OOM killer when its cgroup /ci/job-7 reached its memory limit of 256 "
                   "MiB)");
  b.oom = 0; /* killed, but the cgroup's limit was not what ran out */
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &a, &b),
                   "killed by signal SIGKILL: out of memory (the kernel's OOM killer ended it: the "
                   "system ran out of memory)");
  /* cgroup v1: the limit hits counted in memory.failcnt, or the peak
   * usage at the limit. */
  tfs_memcg_t c = {.known = 1, .oom_kill = 0, .failcnt = 10, .peak = 1 << 20, .limit = 64 << 20};
  snprintf(c.path, sizeof c.path, "/ci");
  tfs_memcg_t d = c;
  d.oom_kill = 1;
  d.failcnt = 90;
  const char *v1 = "killed by signal SIGKILL: out of memory (the kernel's OOM killer ended it "
                   "when its cgroup /ci reached its memory limit of 64 MiB)";
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &c, &d), v1);
  d.failcnt = 10;
  d.peak = 64 << 20;
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &c, &d), v1);
  d.peak = 2 << 20;
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &c, &d),
                   "killed by signal SIGKILL: out of memory (the kernel's OOM killer ended it: the "
                   "system ran out of memory)");
  /* Two reads of different cgroups tell nothing. */
  snprintf(d.path, sizeof d.path, "/elsewhere");
  cr_assert_str_eq(describe(W_EXITCODE(0, SIGKILL), &c, &d),
                   "killed by signal SIGKILL (possibly out of memory)");
}

/* ---- a real OOM kill ------------------------------------------------------- */

/* A memory cgroup under this process's own, with a 64 MiB limit (and no
 * swap to escape to), or "" when this machine has none to give. */
static char oom_dir[PATH_MAX];
static const char *oom_limit_file;

static int write_str(const char *dir, const char *name, const char *value) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return tu_write_file(path, value, strlen(value));
}

static int oom_cgroup(void) {
  tfs_memcg_t me = {0};
  tfs_memcg_read(0, &me);
  if (!me.known || geteuid() != 0)
    return -1;
  snprintf(oom_dir, sizeof oom_dir, "/sys/fs/cgroup%s%s/taskfs-oom-%d", me.v2 ? "" : "/memory",
           me.path, (int)getpid());
  if (mkdir(oom_dir, 0755)) {
    oom_dir[0] = 0;
    return -1;
  }
  const char *limit = me.v2 ? "memory.max" : "memory.limit_in_bytes";
  const char *swap = me.v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes";
  oom_limit_file = limit;
  if (write_str(oom_dir, limit, "67108864")) /* 64 MiB */
    return -1;
  /* Without a swap limit a process may swap instead of being killed: only
   * where there is no swap at all is that fine. */
  if (write_str(oom_dir, swap, me.v2 ? "0" : "67108864")) {
    char *swaps = tu_read_file("/proc/swaps", NULL);
    int any = swaps && strchr(swaps, '\n') && strchr(swaps, '\n')[1];
    free(swaps);
    if (any)
      return -1;
  }
  return 0;
}

static int oom_dir_gone(void *arg) {
  return rmdir(oom_dir) == 0 || errno == ENOENT;
}

static void oom_fini(void) {
  sx_teardown();
  if (oom_dir[0])
    tu_wait_until(oom_dir_gone, NULL, 10000);
  oom_dir[0] = 0;
}

/* Launches the task from a child that joined the cgroup, so that its
 * supervisor and worker run there; returns its record once it ended. */
static tfs_record_t run_in_cgroup(const char *script) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"sh", "-c", (char *)script, NULL};
  sx_create(id, argv, NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    char me[32];
    snprintf(me, sizeof me, "%d\n", (int)getpid());
    tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
    tfs_record_t r;
    _exit(write_str(oom_dir, "cgroup.procs", me) || tfs_launch(sx_store, id, &lo, &r) ? 1 : 0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "could not launch in %s", oom_dir);
  return sx_wait(id, 60000);
}

Test(oom, a_task_killed_for_memory_says_so, .init = sx_setup, .fini = oom_fini) {
  if (tu_sh(NULL, "command -v python3 >/dev/null") != 0)
    cr_skip_test("no python3 to use memory with");
  if (oom_cgroup())
    cr_skip_test("no memory cgroup with a limit can be made here");
  const char *eat = "python3 -c 'b = bytearray(b\"x\") * (512 << 20)'";
  char script[256];
  snprintf(script, sizeof script, "exec %s", eat);
  tfs_record_t a = run_in_cgroup(script);
  cr_assert_eq(a.signal, SIGKILL, "reason: %s", a.reason);
  cr_assert(strstr(a.reason, "killed by signal SIGKILL: out of memory (the kernel's OOM killer "
                             "ended it when its cgroup ") &&
                strstr(a.reason, "reached its memory limit of 64 MiB)"),
            "reason: %s", a.reason);
  /* Through a shell, as bash reported it in the issue: exit code 137. */
  snprintf(script, sizeof script, "%s; exit $?", eat);
  tfs_record_t b = run_in_cgroup(script);
  cr_assert_eq(b.exit_code, 137, "reason: %s", b.reason);
  cr_assert(strstr(b.reason, "exited with code 137: out of memory (a process it ran was killed "
                             "by the kernel's OOM killer"),
            "reason: %s", b.reason);
  /* A SIGKILL that is no OOM kill is not called one. */
  tfs_record_t c = run_in_cgroup("kill -KILL $$");
  cr_assert_str_eq(c.reason, "killed by signal SIGKILL (not by the kernel's OOM killer: its "
                             "cgroup counted no OOM kill)");
  tfs_record_free(&a);
  tfs_record_free(&b);
  tfs_record_free(&c);
}
