/* Important lines: the classifier on real-looking output of common tools,
 * the first K / last K rule, and the kept texts (cut, sanitized). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

/* ---- kinds --------------------------------------------------------------- */

Test(important, kind_names_round_trip) {
  const char *names[] = {"plain", "error", "warning", "failure", "summary"};
  for (int k = TFS_LINE_PLAIN; k <= TFS_LINE_SUMMARY; k++) {
    tfs_line_kind_t back = (tfs_line_kind_t)-1;
    cr_assert_str_eq(tfs_line_kind_name((tfs_line_kind_t)k), names[k]);
    cr_assert_eq(tfs_line_kind_parse(names[k], &back), 0);
    cr_assert_eq(back, (tfs_line_kind_t)k);
  }
  tfs_line_kind_t out = TFS_LINE_ERROR;
  cr_assert_lt(tfs_line_kind_parse("fatal", &out), 0);
  cr_assert_lt(tfs_line_kind_parse("", &out), 0);
  cr_assert_lt(tfs_line_kind_parse("Error", &out), 0);
  cr_assert_eq(out, TFS_LINE_ERROR, "a failed parse leaves *out alone");
  cr_assert_str_eq(tfs_line_kind_name((tfs_line_kind_t)99), "unknown");
}

/* ---- first K / last K ------------------------------------------------------ */

/* Feeds n important lines ("error: n") at line numbers base + i * stride. */
static void feed_errors(tfs_important_t *imp, int n, int64_t base, int64_t stride) {
  char buf[64];
  for (int i = 0; i < n; i++) {
    int len = snprintf(buf, sizeof(buf), "error: number %d", i + 1);
    cr_assert_eq(tfs_important_feed(imp, base + i * stride, buf, (size_t)len), 0);
  }
}

/* Checks first holds lines 1..min(n,k) and last the final lines after them. */
static void check_first_last(int k, int n) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, k), 0);
  cr_assert_eq(imp.k, k);
  feed_errors(&imp, n, 1, 1);
  size_t want_first = (size_t)(n < k ? n : k);
  size_t rest = (size_t)n - want_first;
  size_t want_last = rest < (size_t)k ? rest : (size_t)k;
  cr_assert_eq(imp.total, n);
  cr_assert_eq(imp.nfirst, want_first, "k=%d n=%d nfirst=%zu", k, n, imp.nfirst);
  cr_assert_eq(imp.nlast, want_last, "k=%d n=%d nlast=%zu", k, n, imp.nlast);
  char want[64];
  for (size_t i = 0; i < want_first; i++) {
    cr_assert_eq(imp.first[i].line, (int64_t)i + 1);
    cr_assert_eq(imp.first[i].kind, TFS_LINE_ERROR);
    snprintf(want, sizeof(want), "error: number %zu", i + 1);
    cr_assert_str_eq(imp.first[i].text, want);
  }
  for (size_t i = 0; i < want_last; i++) {
    const tfs_important_line_t *l = tfs_important_last(&imp, i);
    cr_assert_not_null(l);
    int64_t line = n - (int64_t)want_last + 1 + (int64_t)i;
    cr_assert_eq(l->line, line, "k=%d n=%d last[%zu]=%lld", k, n, i, (long long)l->line);
    snprintf(want, sizeof(want), "error: number %lld", (long long)line);
    cr_assert_str_eq(l->text, want);
  }
  cr_assert_null(tfs_important_last(&imp, want_last));
  tfs_important_free(&imp);
  cr_assert_null(imp.first);
  cr_assert_null(imp.last);
}

Test(important, first_last_counts) {
  int ks[] = {1, 2, 20, 100};
  for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
    int k = ks[i];
    int ns[] = {0, k - 1, k, k + 1, 2 * k, 2 * k + 5, 10 * k + 3};
    for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++)
      check_first_last(k, ns[j]);
  }
}

Test(important, init_limits) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 0), 0);
  cr_assert_eq(imp.k, TFS_IMPORTANT_K_DEFAULT);
  tfs_important_free(&imp);
  cr_assert_eq(tfs_important_init(&imp, -3), 0);
  cr_assert_eq(imp.k, TFS_IMPORTANT_K_DEFAULT);
  tfs_important_free(&imp);
  cr_assert_eq(tfs_important_init(&imp, TFS_IMPORTANT_K_MAX + 1), -EINVAL);
  tfs_important_free(&imp); /* a failed init leaves a struct that frees */
  tfs_important_t zero;
  memset(&zero, 0, sizeof(zero));
  tfs_important_free(&zero);
  cr_assert_lt(tfs_important_add(&zero, 1, TFS_LINE_ERROR, "x", 1), 0);
}

/* ---- the classifier --------------------------------------------------------- */

#define E TFS_LINE_ERROR
#define W TFS_LINE_WARNING
#define F TFS_LINE_FAILURE
#define S TFS_LINE_SUMMARY
#define P TFS_LINE_PLAIN

typedef struct {
  const char *line;
  tfs_line_kind_t kind;
} case_t;

/* Real-looking lines from the tools taskfs users run, each with the kind a
 * reader of the log would give it. Every rule appears both ways: a line it
 * must catch and a near miss it must leave plain. */
static const case_t cases[] = {
    /* gcc / clang */
    {"src/main.c:12:5: error: expected ';' before 'return'", E},
    {"src/main.c:3:1: warning: implicit declaration of function 'foo' "
     "[-Wimplicit-function-declaration]",
     W},
    {"src/main.c:3:1: warning: unused parameter 'error' [-Wunused-parameter]", W},
    {"src/error_count.c:7:10: fatal error: stdio.hh: No such file or directory", E},
    {"In file included from src/main.c:1:", P},
    {"src/main.c:9:3: note: in expansion of macro 'error'", P},
    {"1 error generated.", E},
    {"2 warnings generated.", W},
    {"2 warnings and 1 error generated.", E},
    {"cc -O2 -Wall -Werror -c src/error_count.c -o build/error_count.o", P},
    {"gcc -Werror=implicit-function-declaration -c errors.c", P},
    {"x.ts(3,5): error TS2304: Cannot find name 'foo'.", E},
    {"foo.cpp(12): warning C4996: 'strcpy': This function may be unsafe.", W},
    {"Found 3 errors in 2 files.", E},
    {"Found 0 errors. Watching for file changes.", P},
    {"/usr/bin/ld: cannot find -lfoo: No such file or directory", E},
    {"collect2: error: ld returned 1 exit status", E},
    /* make */
    {"make: *** [Makefile:12: build/main.o] Error 1", F},
    {"make[2]: *** [src/CMakeFiles/app.dir/build.make:76: src/app.o] Error 2", F},
    {"make: *** No rule to make target 'install'.  Stop.", E},
    {"make[1]: Leaving directory '/home/u/src'", P},
    {"make: Nothing to be done for 'all'.", P},
    /* pytest */
    {"FAILED tests/test_api.py::test_create - AssertionError: assert 404 == 201", F},
    {"tests/test_api.py::test_delete FAILED                                   [ 50%]", F},
    {"tests/test_api.py::test_list PASSED                                     [ 25%]", P},
    {"ERROR tests/test_db.py - ModuleNotFoundError: No module named 'psycopg2'", E},
    {"E       AssertionError: assert 2 == 3", E},
    {"========================= 3 passed, 1 failed in 0.12s =========================", S},
    {"==================== 1 failed, 2 passed, 1 error in 0.51s =====================", S},
    {"============================== 5 passed in 0.03s ===============================", S},
    {"=================================== FAILURES ===================================", P},
    {"=========================== short test summary info ============================", P},
    {"collected 4 items", P},
    /* python */
    {"Traceback (most recent call last):", E},
    {"  File \"/app/main.py\", line 3, in <module>", P},
    {"ValueError: invalid literal for int() with base 10: 'x'", E},
    {"/app/x.py:3: DeprecationWarning: the imp module is deprecated", W},
    {"    raise ValueError(\"bad\")", P},
    {"Exception in thread \"main\" java.lang.NullPointerException", E},
    {"Caused by: java.lang.IllegalStateException: not started", E},
    {"\tat com.example.App.main(App.java:12)", P},
    {"Unhandled exception. System.IO.FileNotFoundException: missing.txt", E},
    {"the exception handler was registered", P},
    /* go */
    {"--- FAIL: TestParse (0.00s)", F},
    {"--- PASS: TestFormat (0.00s)", P},
    {"FAIL\tgithub.com/acme/widget\t0.013s", F},
    {"FAIL", F},
    {"ok  \tgithub.com/acme/widget\t0.012s", S},
    {"PASS", S},
    {"=== RUN   TestParse", P},
    {"    parse_test.go:14: got 2, want 3", E},
    {"panic: runtime error: index out of range [3] with length 3", E},
    {"goroutine 1 [running]:", P},
    /* cargo / rustc */
    {"test tests::adds ... FAILED", F},
    {"test tests::subtracts ... ok", P},
    {"test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out", S},
    {"test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out", S},
    {"error[E0308]: mismatched types", E},
    {"warning: unused variable: `error`", W},
    {"error: could not compile `widget` (lib) due to 2 previous errors", E},
    {"thread 'main' panicked at src/main.rs:2:5:", E},
    {"failures:", P},
    {"   Compiling widget v0.1.0 (/home/u/widget)", P},
    {"    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.52s", P},
    /* jest */
    {"FAIL src/sum.test.js", F},
    {"PASS src/mul.test.js", P},
    {"  \xE2\x9C\x95 adds 1 + 2 to equal 3 (5 ms)", F},
    {"  \xE2\x9C\x93 multiplies (1 ms)", P},
    {"Tests:       1 failed, 2 passed, 3 total", S},
    {"Test Suites: 1 failed, 1 passed, 2 total", S},
    /* node:test */
    {"not ok 3 - rejects empty input", F},
    {"not ok 4 - flaky thing # TODO", P},
    {"ok 2 - accepts input", P},
    {"# tests 5", S},
    {"# pass 5", S},
    {"# fail 0", S},
    {"\xE2\x9C\x96 rejects empty input (1.2ms)", F},
    {"\xE2\x84\xB9 tests 5", S},
    {"  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:", E},
    {"  code: 'ERR_ASSERTION'", P},
    {"#warning hi", P},
    /* npm */
    {"npm ERR! code ELIFECYCLE", E},
    {"npm ERR! Test failed.  See above for more details.", E},
    {"npm WARN deprecated request@2.88.2: request has been deprecated", W},
    {"npm warn deprecated inflight@1.0.6: This module is not supported", W},
    {"added 312 packages, and audited 313 packages in 4s", P},
    {"found 0 vulnerabilities", P},
    /* Criterion */
    {"[FAIL] store::reopen: (0.01s)", F},
    {"[----] tests/test_store.c:41: Assertion Failed", E},
    {"[====] Synthesis: Tested: 3 | Passing: 3 | Failing: 0 | Crashing: 0", S},
    {"[RUN ] store::reopen", P},
    /* ctest */
    {"2/3 Test #2: parser ...........................***Failed    0.01 sec", F},
    {"1/3 Test #1: lexer ............................   Passed    0.01 sec", P},
    {"100% tests passed, 0 tests failed out of 3", S},
    {"67% tests passed, 1 tests failed out of 3", S},
    {"The following tests FAILED:", F},
    {"Errors while running CTest", E},
    /* build tools */
    {"Build succeeded.", S},
    {"Build failed.", F},
    {"BUILD SUCCESSFUL in 3s", S},
    {"BUILD FAILED in 2s", F},
    {"Compiled successfully!", S},
    {"Compiled with warnings.", W},
    {"[INFO] BUILD SUCCESS", S},
    {"[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin", E},
    {"[WARNING] Using platform encoding (UTF-8 actually) to copy filtered resources", W},
    {"Successfully installed requests-2.31.0", S},
    {"ninja: build stopped: subcommand failed.", F},
    {"FAILED: src/app.o", F},
    /* crashes */
    {"Segmentation fault (core dumped)", E},
    {"Aborted (core dumped)", E},
    {"segfault at 0 ip 000055d5 sp 00007ffd error 4 in app", E},
    {"terminate called after throwing an instance of 'std::runtime_error'", E},
    {"fatal: not a git repository (or any of the parent directories): .git", E},
    {"FATAL: database \"app\" does not exist", E},
    {"Kernel panic - not syncing: Attempted to kill init!", E},
    {"==4242== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)", S},
    {"==4242== ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)", E},
    {"==4242== Invalid read of size 4", E},
    /* logs */
    {"2026-11-30 01:00:00 ERROR connection refused", E},
    {"2026-11-30T01:00:00Z WARN disk almost full", W},
    {"time=2026-11-30T01:00:00Z level=error msg=\"boom\"", E},
    {"{\"level\":\"error\",\"msg\":\"boom\"}", E},
    {"Error: Cannot find module 'express'", E},
    {"\x1b[31merror\x1b[39m: something broke", E},
    {"\x1b[1m\x1b[31m FAIL \x1b[39m\x1b[22m src/sum.test.js", F},
    {"Connection failed, retrying in 5s", F},
    /* near misses that must stay plain */
    {"0 errors", P},
    {"errors: 0", P},
    {"errors=0 warnings=0", P},
    {"no errors found", P},
    {"Checked 12 files, no warnings", P},
    {"ERROR_LEVEL=3", P},
    {"export ERROR_LEVEL=3", P},
    {"CC src/error_count.c", P},
    {"  CC      lib/errors.o", P},
    {"console.error is mocked", P},
    {"see docs/errors/index.md", P},
    {"pytest --maxfail=1 --fail-fast", P},
    {"retry on-error=continue", P},
    {"this is a non-fatal condition", P},
    {"error-prone code ahead", P},
    {"Passed 0 of 0 checks, nothing to do", S},
    {"warnings: 0", P},
    {"0 failed", S},
    {"failures: 0", S},
    {"The default failover is off", P},
    {"Downloading package path parse warm fast", P},
    {"it helps to check for errors before you ship", P},
    {"current array mirror terraform", P},
    {"exceptional results", P},
    {"debug webpack rebuild", P},
    {"access accepted; module during schedule", P},
    {"successfully", P},
    {"We were successful", P},
    {"3 passed, 1 failed", S},
    {"Passed: 12, Failed: 0", S},
    {"Exception: boom", E},
    {"no exceptions were raised", P},
    {"see the traceback above", P},
    {"don't panic, it is only a test", P},
    {"the fault tolerance layer", P},
    {"the failover succeeded", P},
    {"warning", W},
    {"0 warnings", P},
    {"Warnings: 2", W},
    {"DEBUG webpack rebuilt the module during the access check", P},
    {"Registered the error handling middleware", P},
    {"log: error reporting enabled, warning level 2", P},
    {"ERROR handling request 42", E},
    {"request failed with error code 500", E},
    {"", P},
    {"   ", P},
    /* issue 14: a source location followed by a message is a diagnostic */
    {"internal/store/postgres.go:23:31: undefined: txOptions", E},
    {"cmd/migrate/main.go:7:2: no required module provides package x; to add it:", E},
    {"/home/ci/metricsd/src/server.c:13: undefined reference to `handle_metrics'", E},
    {"payroll.cob:7: error: 'WS-HOURS' is not defined", E},
    {"config.xml:5: parser error : Opening and ending tag mismatch: port line 5", E},
    {"ledger.pas(6,24) Error: Identifier not found \"fee\"", E},
    {"src/saxpy.cu(3): error: identifier \"threadIdx_x\" is undefined", E},
    {"ledger.pas(3,1) Hint: Local variable \"x\" not used", P},
    {"e: file:///a/StockService.kt:42:25 Unresolved reference: reserveAll", E},
    {"w: file:///a/Warehouse.kt:18:13 Variable 'unused' is never used", W},
    {"12:30:45: backup started", P},
    {"10.0.0.1:8080: connection accepted", P},
    {"tests/test_api.py::test_list ok", P},
    {"/usr/include/c++/12/bits/hashtable_policy.h:1261:7:   required from here", P},
    {"tests/test_client.py:1: in <module>", P},
    {"/usr/include/c++/12/bits/stl_vector.h:2035:5: note:   template argument deduction/"
     "substitution failed:",
     P},
    /* exception names, dotted or not, followed by ':' or the end */
    {"etl.errors.SchemaMismatchError: column 'amount': expected numeric, got text", E},
    {"org.postgresql.util.PSQLException: Connection to db:5432 refused.", E},
    {"OSError: [Errno 28] No space left on device", E},
    {"MemoryError", E},
    {"see src/errors/ParseError.ts for the details", P},
    {"the KeyError handler logs and goes on", P},
    /* stack frames and code excerpts are context */
    {"    at error (/home/ci/web/node_modules/@acme/config/lib/index.js:6:9)", P},
    {"\tat org.junit.Assert.fail(Assert.java:89)", P},
    {"at least one error occurred", E},
    {"  File \"/app/errors.py\", line 3, in raise_error", P},
    {"    #1 0x563ab8947348 in error_path src/ppm.c:15", P},
    {"==12==    by 0x1091B2: fail (ring.c:6)", P},
    {"    > 3 |     console.error('Warning: token refresh failed');", P},
    {"   12 |   error(\"x\");", P},
    /* shell, apt, git, the linker, valgrind, the sanitizers */
    {"./deploy.sh: line 7: kubeclt: command not found", E},
    {"./train.sh: line 14:  2752 Killed                  /usr/bin/python3 train.py", E},
    {"./release.sh: line 4: VERSION: unbound variable", E},
    {"sh: 1: webpack: not found", E},
    {"cp: cannot stat 'dist/app.js': No such file or directory", E},
    {"bash: kubeclt: command not found", E},
    {"Killed", E},
    {"INFO: 12 tasks queued", P},
    {"E: Unable to locate package libpq5-dev", E},
    {"#6 3.524 E: Unable to locate package libpq5-dev", E},
    {"W: Some index files failed to download. They have been ignored.", W},
    {"CONFLICT (content): Merge conflict in version.c", E},
    {" ! [rejected]        main -> main (fetch first)", E},
    {"conflict resolution is up to you", P},
    {"/usr/bin/ld: build/server.o: in function `server_run':", P},
    {"==4631== Memcheck, a memory error detector", P},
    {"==4631== Invalid write of size 8", E},
    {"==3718==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000c0", E},
    {"Can't locate Text/CSV_XS.pm in @INC (you may need to install the Text::CSV_XS module)", E},
    {"can't read \"release_tag\": no such variable", E},
    {"Canterbury cannonball", P},
    {"CMake Error at CMakeLists.txt:7 (find_package):", E},
    {"CMake Warning (dev) at CMakeLists.txt:3 (project):", W},
    {"fatal: [localhost]: FAILED! => {\"changed\": false}", E},
    {"\xe2\x94\x82 Error: Reference to undeclared resource", E},
    /* test runners' headings and bodies */
    {"  \xe2\x97\x8f CartService \xe2\x80\xba applyDiscount \xe2\x80\xba caps the discount", F},
    {"  \xe2\x97\x8f Console", P},
    {"     \xc3\x97 caps the discount 7ms", F},
    {"E       assert 20 == 50", E},
    {"E        +  where 100 = <bound method Cart.subtotal>()", P},
    {"___________________________ test_discount_is_capped ____________________________", P},
    {"____________________ ERROR collecting tests/test_client.py _____________________", E},
    {"FAIL: test_rounding (tests.test_invoice.InvoiceTotalTest.test_rounding)", F},
    {"test_rounding (tests.test_invoice.InvoiceTotalTest.test_rounding) ... FAIL", F},
    {"ERROR: test_io (tests.test_io.IoTest.test_io)", E},
    {"DiscountServiceTest > capsDiscountAtFiftyEuros() FAILED", F},
    {"[xUnit.net 00:00:00.41]     Shop.Tests.OrderTests.CalculatesTotal [FAIL]", F},
    {"  Failed Shop.Tests.OrderTests.CalculatesTotal [6 ms]", F},
    /* summaries and success lines, tools' hints and headings */
    {"Tests run: 4, Failures: 0, Errors: 0, Skipped: 0", S},
    {"[INFO] Tests run: 4, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.04 s -- in a.B", S},
    {"[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.", P},
    {"[ERROR] ", P},
    {"[ERROR] -> [Help 1]", P},
    {"[ERROR] Failures: ", P},
    {"npm error", P},
    {"npm error gyp info it worked if it ends with ok", P},
    {"npm error   react@\"^17.0.2\" from the root project", P},
    {"npm error code ERESOLVE", E},
    {"npm error ../binding.cc:9:10: fatal error: node_api.h: No such file or directory", E},
    {"WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError': "
     "Failed to establish a new connection",
     W},
    {"For more information about this error, try `rustc --explain E0308`.", P},
    {"note: This error originates from a subprocess, and is likely not a problem with pip.", P},
    {"hint: Updates were rejected because the remote contains work that you do", P},
    {"make: *** Waiting for unfinished jobs....", P},
    {"Errors  Files", P},
    /* an OSC 8 hyperlink reads as its text */
    {"retry.c:3:7: error: unused variable 'retries' "
     "[\x1b]8;;https://gcc.gnu.org/onlinedocs/gcc/Warning-Options.html\x07-Werror=unused-"
     "variable\x1b]8;;\x07]",
     E},
    {"\x1b]8;;file:///src/a.c\x1b\\src/a.c\x1b]8;;\x1b\\:3:1: warning: unused x", W},
};

Test(classify, table) {
  size_t n = sizeof(cases) / sizeof(cases[0]);
  cr_assert_geq(n, 60);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    tfs_line_kind_t k = tfs_classify_line(cases[i].line, strlen(cases[i].line));
    if (k != cases[i].kind) {
      cr_log_error("line %zu %s, want %s: %s", i, tfs_line_kind_name(k),
                   tfs_line_kind_name(cases[i].kind), cases[i].line);
      bad++;
    }
  }
  cr_assert_eq(bad, 0, "%d of %zu lines misclassified", bad, n);
}

/* The classifier reads 16 bytes at a time; a line must get the same kind
 * wherever its keywords fall relative to those blocks, and indentation or
 * trailing blanks and '\r' must not change it. */
Test(classify, position_independent) {
  char buf[512];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    size_t len = strlen(cases[i].line);
    for (size_t pad = 0; pad <= 35; pad++) {
      if (pad + len + 4 > sizeof(buf))
        break;
      memset(buf, ' ', pad);
      memcpy(buf + pad, cases[i].line, len);
      memcpy(buf + pad + len, "  \r", 3);
      tfs_line_kind_t k = tfs_classify_line(buf, pad + len + (pad % 2 ? 3 : 0));
      cr_assert_eq(k, cases[i].kind, "pad %zu: %s for %s", pad, tfs_line_kind_name(k),
                   cases[i].line);
    }
  }
}

/* A keyword in the last bytes of a line, where the classifier works on a
 * padded copy, is still found, and bytes after the given length are never
 * taken for part of the line. */
Test(classify, line_edges) {
  cr_assert_eq(tfs_classify_line("x error", 7), TFS_LINE_ERROR);
  cr_assert_eq(tfs_classify_line("error", 5), TFS_LINE_ERROR);
  cr_assert_eq(tfs_classify_line("error", 4), TFS_LINE_PLAIN); /* "erro" */
  cr_assert_eq(tfs_classify_line("abc FAILED", 10), TFS_LINE_FAILURE);
  cr_assert_eq(tfs_classify_line("abc FAILED", 7), TFS_LINE_PLAIN);
  cr_assert_eq(tfs_classify_line("panic: x", 8), TFS_LINE_ERROR);
  cr_assert_eq(tfs_classify_line("panic: x", 0), TFS_LINE_PLAIN);
  cr_assert_eq(tfs_classify_line(NULL, 0), TFS_LINE_PLAIN);
  cr_assert_eq(tfs_classify_line("e", 1), TFS_LINE_PLAIN);
  /* A NUL inside the line is just a byte. */
  cr_assert_eq(tfs_classify_line("bin\0ary error: x", 16), TFS_LINE_ERROR);
}

/* Two or more control bytes text never holds make a line binary data
 * (random bytes, an image written to stdout): plain whatever words it
 * holds. The controls text does carry (tab, CR, backspace, bell, shift
 * out/in, escape) and a single stray byte change nothing. */
Test(classify, binary_lines_are_plain) {
  static const struct {
    const char *s;
    size_t n;
  } bin[] = {{"error: x\x01\x02", 10},
             {"\0\0error: disk failed", 21},
             {"FAILED \x10 tests \x1f", 16},
             {"src/a.c:1: error: \x7f\x00\x05", 21}};
  for (size_t i = 0; i < sizeof bin / sizeof *bin; i++)
    cr_assert_eq(tfs_classify_line(bin[i].s, bin[i].n), TFS_LINE_PLAIN, "binary line %zu", i);
  static const char *const text[] = {"\x1b[31merror:\x1b[0m x\t\r", "error: x\a\a",
                                     "error: a\x0e\x0f", "error: one stray \x01 byte"};
  for (size_t i = 0; i < sizeof text / sizeof *text; i++)
    cr_assert_eq(tfs_classify_line(text[i], strlen(text[i])), TFS_LINE_ERROR, "text line %zu", i);
  /* Far past the bytes the classifier examines, controls change nothing. */
  size_t n = 64 << 10;
  char *late = malloc(n);
  memset(late, 'x', n);
  memcpy(late, "error: late binary", 18);
  memset(late + n / 2, 1, 8);
  cr_assert_eq(tfs_classify_line(late, n), TFS_LINE_ERROR);
  free(late);
}

/* Every control byte, twice, in the same 16 bytes or in two: a line is
 * binary only for the controls text never holds (the scan looks at 16
 * bytes at a time; the tail byte by byte). */
Test(classify, binary_by_each_control_byte) {
  static const size_t at[][2] = {{20, 21}, {20, 40}, {8, 47}, {46, 47}};
  for (unsigned c = 0; c < 0x20; c++) {
    int text = c == '\a' || c == '\b' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
               c == '\r' || c == 0x0e || c == 0x0f || c == 0x1b;
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
      char line[48];
      memset(line, 'x', sizeof line);
      memcpy(line, "error: ", 7);
      line[at[i][0]] = line[at[i][1]] = (char)c;
      tfs_line_kind_t k = tfs_classify_line(line, sizeof line);
      if (text)
        cr_assert_neq(k, TFS_LINE_PLAIN, "byte 0x%02x at %zu and %zu", c, at[i][0], at[i][1]);
      else
        cr_assert_eq(k, TFS_LINE_PLAIN, "byte 0x%02x at %zu and %zu", c, at[i][0], at[i][1]);
      line[at[i][1]] = 'x'; /* one stray control is no binary */
      cr_assert_neq(tfs_classify_line(line, sizeof line), TFS_LINE_PLAIN, "one 0x%02x", c);
    }
  }
}

/* Only the start of an enormous line is examined: a 10 MB line classifies
 * by its first few KiB, whatever comes later. */
Test(classify, enormous_line, .timeout = 30) {
  size_t n = 10u << 20;
  char *big = malloc(n);
  cr_assert_not_null(big);
  memset(big, 'a', n);
  memcpy(big + n - 20, " error: at the end", 18);
  cr_assert_eq(tfs_classify_line(big, n), TFS_LINE_PLAIN);
  memcpy(big, "error: at the start ", 20);
  cr_assert_eq(tfs_classify_line(big, n), TFS_LINE_ERROR);

  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 2), 0);
  cr_assert_eq(tfs_important_feed(&imp, 7, big, n), 0);
  cr_assert_eq(imp.nfirst, 1);
  cr_assert_eq(imp.first[0].line, 7);
  cr_assert_eq(strlen(imp.first[0].text), TFS_IMPORTANT_TEXT_MAX);
  cr_assert(strncmp(imp.first[0].text, "error: at the start aaa", 23) == 0);
  cr_assert_str_eq(imp.first[0].text + TFS_IMPORTANT_TEXT_MAX - 3, "...");
  tfs_important_free(&imp);
  free(big);
}

/* ---- kept texts -------------------------------------------------------------- */

static char *kept_text(const char *line, size_t len) {
  static tfs_important_t imp;
  tfs_important_free(&imp);
  cr_assert_eq(tfs_important_init(&imp, 1), 0);
  cr_assert_eq(tfs_important_add(&imp, 1, TFS_LINE_ERROR, line, len), 0);
  cr_assert_eq(imp.nfirst, 1);
  return imp.first[0].text;
}

/* Valid UTF-8 without C0 controls (tab allowed), as JSON and terminals
 * need. */
static int clean_utf8(const char *t) {
  const unsigned char *s = (const unsigned char *)t;
  while (*s) {
    size_t n = *s < 0x80                 ? 1
               : *s >= 0xC2 && *s < 0xE0 ? 2
               : *s >= 0xE0 && *s < 0xF0 ? 3
               : *s >= 0xF0 && *s < 0xF5 ? 4
                                         : 0;
    if (n == 0 || (*s < 0x20 && *s != '\t'))
      return 0;
    for (size_t i = 1; i < n; i++)
      if ((s[i] & 0xC0) != 0x80)
        return 0;
    s += n;
  }
  return 1;
}

Test(kept, short_lines_verbatim) {
  cr_assert_str_eq(kept_text("error: x\ty", 10), "error: x\ty");
  cr_assert_str_eq(kept_text("error: caf\xC3\xA9 \xE2\x9C\x95 \xF0\x9F\x92\xA5", 21),
                   "error: caf\xC3\xA9 \xE2\x9C\x95 \xF0\x9F\x92\xA5");
  cr_assert_str_eq(kept_text("", 0), "");
  cr_assert_str_eq(kept_text(NULL, 5), "");
}

Test(kept, crlf_and_colours) {
  cr_assert_str_eq(kept_text("error: dos line\r", 16), "error: dos line");
  cr_assert_str_eq(kept_text("error: only one\r\r", 17), "error: only one\xEF\xBF\xBD");
  cr_assert_str_eq(kept_text("\x1b[1;31merror\x1b[0m: red\r", 22), "error: red");
  /* OSC 8 hyperlinks, ended by BEL or by ESC \, go like colours. */
  static const char osc[] = "a.c:1: error: x [\x1b]8;;https://e.org/w\x07-Wx\x1b]8;;\x07] "
                            "\x1b]8;;file:///a\x1b\\a\x1b]8;;\x1b\\";
  cr_assert_str_eq(kept_text(osc, sizeof osc - 1), "a.c:1: error: x [-Wx] a");
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 3), 0);
  const char *crlf = "src/a.c:1:2: warning: unused\r";
  cr_assert_eq(tfs_important_feed(&imp, 4, crlf, strlen(crlf)), 0);
  cr_assert_eq(imp.nfirst, 1);
  cr_assert_eq(imp.first[0].kind, TFS_LINE_WARNING);
  cr_assert_str_eq(imp.first[0].text, "src/a.c:1:2: warning: unused");
  tfs_important_free(&imp);
}

Test(kept, invalid_utf8_and_controls) {
  /* A lone continuation byte, a truncated sequence, an overlong form, a
   * surrogate, bytes that never occur, NUL, BEL and ESC not starting a
   * colour sequence. */
  static const char in[] = "error: \x80|\xE2\x82|\xC0\xAF|\xED\xA0\x80|\xFF\xFE|\0|\a|\x1b|\t";
  const char *t = kept_text(in, sizeof(in) - 1);
  cr_assert(clean_utf8(t), "not clean: %s", t);
#define R "\xEF\xBF\xBD"
  cr_assert_str_eq(t, "error: " R "|" R R "|" R R "|" R R R "|" R R "|" R "|" R "|" R "|\t");
#undef R
}

/* Cut at TFS_IMPORTANT_TEXT_MAX bytes, on a character boundary, ending in
 * "...", for every alignment of multi-byte characters against the limit. */
Test(kept, cut_on_character_boundary) {
  static const char *chars[] = {"\xC3\xA9", "\xE2\x9C\x95", "\xF0\x9F\x92\xA5", "a"};
  char line[4 * TFS_IMPORTANT_TEXT_MAX];
  for (size_t c = 0; c < 4; c++) {
    for (size_t shift = 0; shift < 4; shift++) {
      size_t n = 0;
      memcpy(line, "error: ", 7);
      n = 7;
      for (size_t s = 0; s < shift; s++)
        line[n++] = 'x';
      while (n + 4 < sizeof(line)) {
        size_t k = strlen(chars[c]);
        memcpy(line + n, chars[c], k);
        n += k;
      }
      const char *t = kept_text(line, n);
      size_t tl = strlen(t);
      cr_assert_leq(tl, TFS_IMPORTANT_TEXT_MAX);
      cr_assert_geq(tl, TFS_IMPORTANT_TEXT_MAX - 3 - 3, "cut too short: %zu", tl);
      cr_assert_str_eq(t + tl - 3, "...");
      cr_assert(clean_utf8(t), "split character (c=%zu shift=%zu)", c, shift);
      cr_assert(memcmp(t, line, tl - 3) == 0, "kept text is not a prefix of the line");
    }
  }
  /* Exactly TFS_IMPORTANT_TEXT_MAX bytes: kept whole; one more: cut. */
  memset(line, 'y', sizeof(line));
  memcpy(line, "error: ", 7);
  const char *t = kept_text(line, TFS_IMPORTANT_TEXT_MAX);
  cr_assert_eq(strlen(t), TFS_IMPORTANT_TEXT_MAX);
  cr_assert_neq(t[TFS_IMPORTANT_TEXT_MAX - 1], '.');
  t = kept_text(line, TFS_IMPORTANT_TEXT_MAX + 1);
  cr_assert_eq(strlen(t), TFS_IMPORTANT_TEXT_MAX);
  cr_assert_str_eq(t + TFS_IMPORTANT_TEXT_MAX - 3, "...");
  /* Sanitizing can push a short line over the limit: 200 invalid bytes
   * become 600 bytes of U+FFFD. */
  memset(line, '\xFF', 200);
  t = kept_text(line, 200);
  cr_assert_leq(strlen(t), TFS_IMPORTANT_TEXT_MAX);
  cr_assert_str_eq(t + strlen(t) - 3, "...");
  cr_assert(clean_utf8(t));
}

/* ---- first K / last K at scale --------------------------------------------------- */

/* 1,000 important lines among 1,000,000 plain ones, spread evenly: the
 * first K keep the earliest line numbers, the last K the latest, total
 * counts them all. */
Test(important, flood_of_plain_lines, .timeout = 60) {
  int ks[] = {1, 20, 100};
  for (size_t ki = 0; ki < 3; ki++) {
    int k = ks[ki];
    tfs_important_t imp;
    cr_assert_eq(tfs_important_init(&imp, k), 0);
    char buf[128];
    int64_t important[1000];
    int ni = 0;
    for (int64_t line = 1; line <= 1001000; line++) {
      int len;
      if (line % 1001 == 500 && ni < 1000) {
        important[ni++] = line;
        len = snprintf(buf, sizeof(buf), "--- FAIL: TestCase%lld (0.00s)", (long long)line);
      } else {
        len = snprintf(buf, sizeof(buf), "=== RUN   TestCase%lld path=/pkg/%lld default was ok",
                       (long long)line, (long long)line % 97);
      }
      cr_assert_eq(tfs_important_feed(&imp, line, buf, (size_t)len), 0);
    }
    cr_assert_eq(ni, 1000);
    cr_assert_eq(imp.total, 1000);
    cr_assert_eq(imp.nfirst, (size_t)k);
    cr_assert_eq(imp.nlast, (size_t)k);
    for (int i = 0; i < k; i++) {
      cr_assert_eq(imp.first[i].line, important[i]);
      cr_assert_eq(imp.first[i].kind, TFS_LINE_FAILURE);
      const tfs_important_line_t *l = tfs_important_last(&imp, (size_t)i);
      cr_assert_eq(l->line, important[1000 - k + i]);
      snprintf(buf, sizeof(buf), "--- FAIL: TestCase%lld (0.00s)", (long long)l->line);
      cr_assert_str_eq(l->text, buf);
    }
    tfs_important_free(&imp);
  }
}

/* Reloading a record: adding the saved first and last lines in order gives
 * back the same first and last lists. */
Test(important, add_rebuilds) {
  tfs_important_t a, b;
  cr_assert_eq(tfs_important_init(&a, 4), 0);
  feed_errors(&a, 23, 10, 3);
  cr_assert_eq(tfs_important_init(&b, 4), 0);
  for (size_t i = 0; i < a.nfirst; i++)
    cr_assert_eq(tfs_important_add(&b, a.first[i].line, a.first[i].kind, a.first[i].text,
                                   strlen(a.first[i].text)),
                 0);
  for (size_t i = 0; i < a.nlast; i++) {
    const tfs_important_line_t *l = tfs_important_last(&a, i);
    cr_assert_eq(tfs_important_add(&b, l->line, l->kind, l->text, strlen(l->text)), 0);
  }
  cr_assert_eq(b.nfirst, a.nfirst);
  cr_assert_eq(b.nlast, a.nlast);
  for (size_t i = 0; i < a.nlast; i++) {
    cr_assert_eq(tfs_important_last(&b, i)->line, tfs_important_last(&a, i)->line);
    cr_assert_str_eq(tfs_important_last(&b, i)->text, tfs_important_last(&a, i)->text);
  }
  cr_assert_eq(tfs_important_last(&a, 0)->line, 10 + 19 * 3);
  tfs_important_free(&a);
  tfs_important_free(&b);
}

/* Plain lines are not kept and not counted. */
Test(important, plain_not_kept) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 5), 0);
  cr_assert_eq(tfs_important_feed(&imp, 1, "hello", 5), 0);
  cr_assert_eq(tfs_important_feed(&imp, 2, "0 errors", 8), 0);
  cr_assert_eq(tfs_important_feed(&imp, 3, "warning: careful", 16), 0);
  cr_assert_eq(imp.total, 1);
  cr_assert_eq(imp.first[0].line, 3);
  cr_assert_eq(imp.first[0].kind, TFS_LINE_WARNING);
  tfs_important_free(&imp);
}

/* A record stores kept texts and adds them back on load: keeping a kept
 * text again must give it back unchanged, cut or not. */
Test(kept, idempotent) {
  char line[2000];
  memset(line, '\xE2', sizeof(line)); /* all invalid: every byte grows */
  memcpy(line, "error: \x1b[31m\r\t\0x", 15);
  size_t lens[] = {15, 100, 171, 172, 600, sizeof(line)};
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
    char *once = strdup(kept_text(line, lens[i]));
    const char *twice = kept_text(once, strlen(once));
    cr_assert_str_eq(twice, once, "len %zu", lens[i]);
    free(once);
  }
}

/* tfs_classify_line() calls every line of one or two bytes plain before it
 * looks at them; that shortcut is only right while no marker is shorter than
 * three bytes. This walks all such lines, and checks that the three-byte
 * markers still count, so a new short marker cannot slip past the shortcut. */
Test(classify, short_lines) {
  unsigned char b[2];
  for (unsigned v = 0; v < 256; v++) {
    b[0] = (unsigned char)v;
    cr_assert_eq(tfs_classify_line((const char *)b, 1), TFS_LINE_PLAIN, "byte %02x", v);
  }
  for (unsigned v = 0; v < 65536; v++) {
    b[0] = (unsigned char)(v & 0xff);
    b[1] = (unsigned char)(v >> 8);
    cr_assert_eq(tfs_classify_line((const char *)b, 2), TFS_LINE_PLAIN, "bytes %02x %02x", b[0],
                 b[1]);
  }
  cr_assert_eq(tfs_classify_line("ERR", 3), TFS_LINE_ERROR);
  cr_assert_eq(tfs_classify_line("\xe2\x9c\x97", 3), TFS_LINE_FAILURE);
  cr_assert_eq(tfs_classify_line("\xe2\x9c\x98", 3), TFS_LINE_FAILURE);
}
