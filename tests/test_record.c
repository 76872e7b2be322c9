/* The record: JSON round trip, strict parsing with clear messages, UTF-8
 * sanitizing, and atomic saves that survive kill -9 at any moment. */
#include "tests/core_fixture.h"

#include <dirent.h>
#include <jansson.h>
#include <time.h>

TestSuite(record, .init = fx_setup, .fini = fx_teardown, .timeout = 90);

static void fill(tfs_record_t *rec) {
  char *argv[] = {"sh", "-c", "echo \xff\xfe bad utf8; exit 3", NULL};
  tfs_record_init(rec);
  strcpy(rec->id, "mi4x7k2p-3fz9qa");
  strcpy(rec->key, "ci:run-1");
  cr_assert_eq(tfs_record_set_command(rec, argv, "/home/u/caf\xc3\xa9"), 0);
  cr_assert_eq(tfs_record_add_env_name(rec, "PATH"), 0);
  cr_assert_eq(tfs_record_add_env_name(rec, "TOKEN=hunter2"), 0);
  rec->state = TFS_FAILED;
  rec->exit_code = -1;
  rec->signal = 9;
  cr_assert_eq(tfs_record_set_reason(rec, "killed by %s after %d restarts", "SIGKILL", 2), 0);
  rec->created_ms = 1795916208001LL;
  rec->started_ms = 1795916208002LL;
  rec->ended_ms = 1795916209003LL;
  rec->alive_ms = 1795916209000LL;
  rec->supervisor_pid = 4242;
  rec->supervisor_started_ms = 1795916208002LL;
  rec->supervisor_exe = strdup("/usr/bin/taskfs");
  rec->supervisor_host = strdup("box");
  rec->worker_pid = 4243;
  rec->worker_pgid = 4243;
  rec->restart = TFS_RESTART_ALWAYS;
  rec->min_uptime_ms = 10;
  rec->max_restarts = 2;
  rec->grace_ms = 50;
  rec->restarts = 2;
  rec->nexits = 3;
  for (int i = 0; i < 3; i++) {
    rec->exits[i].started_ms = 1795916208000LL + i * 100;
    rec->exits[i].ended_ms = 1795916208050LL + i * 100;
    rec->exits[i].exit_code = i == 2 ? -1 : i + 1;
    rec->exits[i].signal = i == 2 ? 9 : 0;
    rec->exits[i].requested = i == 2;
  }
  rec->cancel_by = strdup("cli pid 1 uid 0");
  rec->cancel_ms = 1795916208999LL;
  rec->lines = 12345;
  rec->bytes = 678901;
  rec->stderr_mode = TFS_STDERR_SPLIT;
  cr_assert_eq(tfs_important_add(&rec->important, 3, TFS_LINE_ERROR, "error: \xff boom", 13), 0);
  cr_assert_eq(tfs_important_add(&rec->important, 9, TFS_LINE_SUMMARY, "1 failed", 8), 0);
}

Test(record, roundtrip) {
  tfs_record_t a, b;
  fill(&a);
  char *json = tfs_record_dump(&a);
  cr_assert_not_null(json, "invalid UTF-8 must not stop a dump");
  cr_assert_null(strstr(json, "hunter2"));
  cr_assert_not_null(strstr(json, "\"signalName\": \"SIGKILL\""));
  cr_assert_not_null(strstr(json, "\xef\xbf\xbd"), "bad bytes became U+FFFD");
  char err[256];
  cr_assert_eq(tfs_record_parse(json, strlen(json), &b, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(b.id, a.id);
  cr_assert_str_eq(b.key, a.key);
  cr_assert_eq(b.argc, 3);
  cr_assert_str_eq(b.argv[0], "sh");
  cr_assert_str_eq(b.argv[2], "echo \xff\xfe bad utf8; exit 3", "argv comes back byte-exact");
  cr_assert_not_null(strstr(json, "\"commandBytes\""));
  cr_assert_null(strstr(json, "\"cwdBytes\""), "a valid UTF-8 cwd needs no byte form");
  cr_assert_str_eq(b.cwd, "/home/u/caf\xc3\xa9", "valid UTF-8 is kept as is");
  cr_assert_eq(b.env_count, 2);
  cr_assert_str_eq(b.env_names[1], "TOKEN");
  cr_assert_eq(b.state, TFS_FAILED);
  cr_assert_eq(b.exit_code, -1);
  cr_assert_eq(b.signal, 9);
  cr_assert_str_eq(b.reason, "killed by SIGKILL after 2 restarts");
  cr_assert_eq(b.created_ms, a.created_ms);
  cr_assert_eq(b.started_ms, a.started_ms);
  cr_assert_eq(b.ended_ms, a.ended_ms);
  cr_assert_eq(b.alive_ms, a.alive_ms);
  cr_assert_eq(b.supervisor_pid, 4242);
  cr_assert_eq(b.supervisor_started_ms, a.supervisor_started_ms);
  cr_assert_str_eq(b.supervisor_exe, "/usr/bin/taskfs");
  cr_assert_str_eq(b.supervisor_host, "box");
  cr_assert_eq(b.worker_pid, 4243);
  cr_assert_eq(b.worker_pgid, 4243);
  cr_assert_eq(b.restart, TFS_RESTART_ALWAYS);
  cr_assert_eq(b.min_uptime_ms, 10);
  cr_assert_eq(b.max_restarts, 2);
  cr_assert_eq(b.grace_ms, 50);
  cr_assert_eq(b.restarts, 2);
  cr_assert_eq(b.nexits, 3);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(b.exits[i].started_ms, a.exits[i].started_ms);
    cr_assert_eq(b.exits[i].ended_ms, a.exits[i].ended_ms);
    cr_assert_eq(b.exits[i].exit_code, a.exits[i].exit_code);
    cr_assert_eq(b.exits[i].signal, a.exits[i].signal);
    cr_assert_eq(b.exits[i].requested, a.exits[i].requested);
  }
  cr_assert_str_eq(b.cancel_by, "cli pid 1 uid 0");
  cr_assert_eq(b.cancel_ms, a.cancel_ms);
  cr_assert_eq(b.lines, 12345);
  cr_assert_eq(b.bytes, 678901);
  cr_assert_eq(b.stderr_mode, TFS_STDERR_SPLIT);
  cr_assert_not_null(strstr(json, "\"stderr\": \"split\""));
  cr_assert_eq(b.important.total, 2);
  cr_assert_eq(b.important.nfirst, 2);
  cr_assert_eq(b.important.first[0].line, 3);
  cr_assert_eq(b.important.first[0].kind, TFS_LINE_ERROR);
  cr_assert_eq(b.important.first[1].kind, TFS_LINE_SUMMARY);
  cr_assert_str_eq(b.important.first[1].text, "1 failed");
  /* A second dump of the parsed record is identical: nothing drifts. */
  char *json2 = tfs_record_dump(&b);
  cr_assert_str_eq(json, json2);
  free(json);
  free(json2);
  tfs_record_free(&a);
  tfs_record_free(&b);
  tfs_record_free(&b); /* freeing twice is harmless */
}

/* signalName is the name the supervisor's reasons give the signal, a
 * real-time one too (glibc has no abbreviation for those). */
Test(record, a_real_time_signal_has_its_name) {
  tfs_record_t a;
  fill(&a);
  a.signal = SIGRTMIN + 3;
  char *json = tfs_record_dump(&a);
  cr_assert_not_null(json);
  cr_assert_not_null(strstr(json, "\"signalName\": \"SIGRTMIN+3\""), "%s", json);
  free(json);
  tfs_record_free(&a);
}

/* argv and cwd that are not valid UTF-8 survive the record byte for byte,
 * while "command" and "cwd" stay plain, valid JSON strings for readers. */
Test(record, exact_bytes_roundtrip) {
  tfs_record_t a, b;
  char *argv[] = {"sh",       "-c",          "printf %s \"$1\"", "sh",
                  "\xff\xfe", "ok \xc3\xa9", "\xc3\x28x",        NULL};
  const char *cwd = "/tmp/d\xff\xfe/caf\xc3\xa9";
  tfs_record_init(&a);
  strcpy(a.id, "mi4x7k2p-3fz9qa");
  cr_assert_eq(tfs_record_set_command(&a, argv, cwd), 0);
  char *json = tfs_record_dump(&a);
  cr_assert_not_null(json);

  /* The display form: valid JSON (strict UTF-8), strings where expected. */
  json_error_t jerr;
  json_t *j = json_loads(json, 0, &jerr);
  cr_assert_not_null(j, "the dump is not valid JSON: %s", jerr.text);
  json_t *cmd = json_object_get(j, "command");
  cr_assert(json_is_array(cmd) && json_array_size(cmd) == 7);
  for (size_t i = 0; i < 7; i++)
    cr_assert(json_is_string(json_array_get(cmd, i)), "command[%zu] is not a string", i);
  cr_assert_str_eq(json_string_value(json_array_get(cmd, 4)), "\xef\xbf\xbd\xef\xbf\xbd");
  cr_assert(json_is_string(json_object_get(j, "cwd")));
  /* The byte forms: valid elements plain, the others base64. */
  json_t *cb = json_object_get(j, "commandBytes");
  cr_assert(json_is_array(cb) && json_array_size(cb) == 7);
  cr_assert_str_eq(json_string_value(json_array_get(cb, 5)), "ok \xc3\xa9");
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(cb, 4), "b64")), "//4=");
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(cb, 6), "b64")), "wyh4");
  cr_assert(json_is_string(json_object_get(json_object_get(j, "cwdBytes"), "b64")));
  json_decref(j);

  char err[256];
  cr_assert_eq(tfs_record_parse(json, strlen(json), &b, err, sizeof err), 0, "%s", err);
  cr_assert_eq(b.argc, 7);
  for (int i = 0; i < 7; i++)
    cr_assert_str_eq(b.argv[i], argv[i], "argv[%d] did not survive byte-exact", i);
  cr_assert_null(b.argv[7]);
  cr_assert_str_eq(b.cwd, cwd, "the cwd did not survive byte-exact");
  char *json2 = tfs_record_dump(&b);
  cr_assert_str_eq(json, json2, "a second dump drifts");
  free(json);
  free(json2);
  tfs_record_free(&a);
  tfs_record_free(&b);

  /* All valid UTF-8: no byte forms at all. */
  char *plain[] = {"echo", "caf\xc3\xa9", NULL};
  tfs_record_init(&a);
  strcpy(a.id, "mi4x7k2p-3fz9qa");
  cr_assert_eq(tfs_record_set_command(&a, plain, "/tmp"), 0);
  json = tfs_record_dump(&a);
  cr_assert(!strstr(json, "commandBytes") && !strstr(json, "cwdBytes"), "%s", json);
  free(json);
  tfs_record_free(&a);
}

/* The byte forms win over the display forms, and bad ones are refused with
 * a message naming the field. */
Test(record, exact_bytes_parse) {
  tfs_record_t r;
  char err[256];
  const char *ok = "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"x\",\"?\"],"
                   "\"commandBytes\":[\"printf\",{\"b64\":\"/w==\"}],\"cwd\":\"/?\","
                   "\"cwdBytes\":{\"b64\":\"L/8=\"},\"state\":\"queued\"}";
  cr_assert_eq(tfs_record_parse(ok, strlen(ok), &r, err, sizeof err), 0, "%s", err);
  cr_assert_eq(r.argc, 2);
  cr_assert_str_eq(r.argv[0], "printf");
  cr_assert_str_eq(r.argv[1], "\xff");
  cr_assert_str_eq(r.cwd, "/\xff");
  tfs_record_free(&r);
  const char *bad[] = {
      /* not base64 */
      "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"x\"],\"commandBytes\":[{\"b64\":\"@@@@\"}"
      "],"
      "\"state\":\"queued\"}",
      /* decodes to a NUL byte */
      "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"x\"],\"commandBytes\":[\"x\",{\"b64\":"
      "\"AA==\"}],\"state\":\"queued\"}",
      /* an empty program */
      "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"x\"],\"commandBytes\":[\"\"],"
      "\"state\":\"queued\"}",
      /* wrong types */
      "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"x\"],\"commandBytes\":[3],"
      "\"state\":\"queued\"}",
      "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"x\"],\"cwdBytes\":{\"b64\":\"L/8\"},"
      "\"state\":\"queued\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(tfs_record_parse(bad[i], strlen(bad[i]), &r, err, sizeof err), TFS_ECORRUPT,
                 "case %zu parsed", i);
    cr_assert(strstr(err, "commandBytes") || strstr(err, "cwdBytes"), "case %zu: %s", i, err);
  }
}

/* A random string of n bytes: every byte value but NUL, so escapes, C0
 * controls, quotes, backslashes, valid and invalid UTF-8 all occur. */
static char *rnd_str(unsigned *seed, size_t n) {
  static const char *pieces[] = {"\"",
                                 "\\",
                                 "\n",
                                 "\t",
                                 "\x01",
                                 "\x1f",
                                 "\x7f",
                                 "/",
                                 "caf\xc3\xa9",
                                 "\xe2\x9c\x93",
                                 "\xf0\x9f\x98\x80",
                                 "\xff",
                                 "\xc3",
                                 "\xed\xa0\x80",
                                 "a",
                                 " ",
                                 "\r\b\f"};
  char *s = malloc(n * 5 + 1); /* the longest piece is 5 bytes */
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (rand_r(seed) % 2) {
      const char *p = pieces[rand_r(seed) % (sizeof pieces / sizeof *pieces)];
      memcpy(s + o, p, strlen(p));
      o += strlen(p);
    } else {
      s[o++] = (char)(1 + rand_r(seed) % 255);
    }
  }
  s[o] = '\0';
  return s;
}

/* The record text is written by hand (no jansson tree); it must be exactly
 * what jansson prints for the same values with JSON_INDENT(2) |
 * JSON_PRESERVE_ORDER, so every file reads the same as before. Checked over
 * random records by parsing the dump with jansson and printing it again. */
Test(record, dump_is_jansson_canonical) {
  unsigned seed = 12345;
  for (int round = 0; round < 300; round++) {
    tfs_record_t rec;
    if (round == 0) {
      fill(&rec);
    } else {
      tfs_record_init(&rec);
      strcpy(rec.id, "mi4x7k2p-3fz9qa");
      char *argv[4] = {NULL};
      int argc = 1 + rand_r(&seed) % 3;
      for (int i = 0; i < argc; i++)
        argv[i] = rnd_str(&seed, 1 + rand_r(&seed) % 12);
      char *cwd = rnd_str(&seed, rand_r(&seed) % 10);
      cr_assert_eq(tfs_record_set_command(&rec, argv, cwd), 0);
      for (int i = 0; i < argc; i++)
        free(argv[i]);
      free(cwd);
      rec.state = (tfs_state_t)(rand_r(&seed) % 6);
      rec.exit_code = rand_r(&seed) % 3 ? -1 : rand_r(&seed) % 256;
      rec.signal = rand_r(&seed) % 3 ? 0 : 1 + rand_r(&seed) % 64;
      if (rand_r(&seed) % 2)
        rec.reason = rnd_str(&seed, rand_r(&seed) % 40);
      rec.created_ms = 1795916208001LL + rand_r(&seed);
      rec.nexits = rand_r(&seed) % (TFS_LAST_EXITS + 1);
      for (int i = 0; i < rec.nexits; i++)
        rec.exits[i].exit_code = rand_r(&seed) % 2 ? -1 : i;
      if (rand_r(&seed) % 2)
        rec.cancel_by = rnd_str(&seed, rand_r(&seed) % 20);
      for (int i = rand_r(&seed) % 30; i > 0; i--) {
        char *t = rnd_str(&seed, rand_r(&seed) % 30);
        cr_assert_eq(tfs_important_feed(&rec.important, i, t, strlen(t)), 0);
        tfs_important_add(&rec.important, 1000 + i, TFS_LINE_WARNING, t, strlen(t));
        free(t);
      }
    }
    char *mine = tfs_record_dump(&rec);
    cr_assert_not_null(mine);
    json_error_t jerr;
    json_t *j = json_loads(mine, 0, &jerr);
    cr_assert_not_null(j, "round %d: not JSON: %s\n%s", round, jerr.text, mine);
    char *ref = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    cr_assert_not_null(ref);
    size_t n = strlen(ref);
    cr_assert(strlen(mine) == n + 1 && !strncmp(mine, ref, n) && mine[n] == '\n',
              "round %d differs from jansson:\n%s\n---\n%s", round, mine, ref);
    free(ref);
    json_decref(j);
    tfs_record_t back;
    cr_assert_eq(tfs_record_parse(mine, strlen(mine), &back, NULL, 0), 0, "round %d", round);
    tfs_record_free(&back);
    free(mine);
    tfs_record_free(&rec);
  }
}

/* Records are read by core's strict JSON reader; what it does not take on
 * (a real number, an escaped key, deep nesting, a huge integer) goes the
 * jansson road. Both give the same record for the same document, and
 * escapes decode as jansson decodes them (a \u0000 ends a C string). */
Test(record, strict_reader_and_jansson_agree) {
  tfs_record_t a, b;
  fill(&a);
  char *json = tfs_record_dump(&a);
  char *odd = NULL;
  cr_assert_geq(asprintf(&odd,
                         "{ \"zz\": 1.5, \"s\\u0074ate\": 7, \"deep\": "
                         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                         "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], "
                         "\"big\": 123456789012345678901234567890e-10, %s",
                         json + 1),
                0);
  char err[256];
  cr_assert_eq(tfs_record_parse(odd, strlen(odd), &b, err, sizeof err), 0, "%s", err);
  char *again = tfs_record_dump(&b);
  cr_assert_str_eq(again, json, "the jansson road gives the same record");
  free(again);
  tfs_record_free(&b);
  free(odd);

  const char *esc = "{\"v\":1,\"id\":\"mi4x7k2p-3fz9qa\",\"command\":[\"a\\u00e9\\t\\\"\\/\","
                    "\"\\ud83d\\ude00\"],\"state\":\"running\",\"reason\":\"cut\\u0000here\","
                    "\"important\":{\"k\":2,\"first\":[{\"line\":1,\"kind\":\"error\","
                    "\"text\":\"e\\u0001\\n\"}]}}";
  cr_assert_eq(tfs_record_parse(esc, strlen(esc), &b, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(b.argv[0], "a\xc3\xa9\t\"/");
  cr_assert_str_eq(b.argv[1], "\xf0\x9f\x98\x80");
  cr_assert_str_eq(b.reason, "cut", "a decoded NUL ends the C string");
  cr_assert_eq(b.important.nfirst, 1);
  tfs_record_free(&b);

  /* Invalid JSON: jansson's words. */
  const char *broken[] = {"{\"v\":1,",        "{\"v\":01}",  "[1,]", "{\"a\":\"\\ud800\"}",
                          "{\"a\":\"\xff\"}", "{\"v\":1} x", "",     "\"str\""};
  for (size_t i = 0; i < sizeof broken / sizeof *broken; i++) {
    cr_assert_eq(tfs_record_parse(broken[i], strlen(broken[i]), &b, err, sizeof err), TFS_ECORRUPT,
                 "%s", broken[i]);
    cr_assert(!strncmp(err, "record.json: line ", 18), "%s: %s", broken[i], err);
  }
  free(json);
  tfs_record_free(&a);
}

Test(record, empty_record_nulls) {
  tfs_record_t a, b;
  char *argv[] = {"x", NULL};
  tfs_record_init(&a);
  strcpy(a.id, "00000000-000000");
  cr_assert_eq(tfs_record_set_command(&a, argv, NULL), 0);
  char *json = tfs_record_dump(&a);
  json_t *j = json_loads(json, 0, NULL);
  cr_assert_not_null(j);
  const char *nulls[] = {"key",     "exitCode", "signal",  "signalName", "reason",
                         "started", "ended",    "aliveAt", "supervisor", "worker",
                         "cancel",  "cwd",      NULL};
  for (int i = 0; nulls[i]; i++)
    cr_assert(json_is_null(json_object_get(j, nulls[i])), "%s is null", nulls[i]);
  cr_assert_eq(json_integer_value(json_object_get(j, "v")), 1);
  cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "queued");
  json_t *r = json_object_get(j, "restart");
  cr_assert_str_eq(json_string_value(json_object_get(r, "policy")), "no");
  cr_assert_eq(json_integer_value(json_object_get(r, "minUptimeMs")), 1000);
  cr_assert(json_is_null(json_object_get(r, "maxRestarts")), "no limit is null");
  cr_assert_eq(json_integer_value(json_object_get(r, "maxQuickRestarts")), 5);
  cr_assert_eq(json_integer_value(json_object_get(r, "graceMs")), 5000);
  json_t *tx = json_object_get(j, "transcript");
  cr_assert_str_eq(json_string_value(json_object_get(tx, "stderr")), "merged", "the default");
  json_t *imp = json_object_get(j, "important");
  cr_assert_eq(json_integer_value(json_object_get(imp, "k")), 20);
  cr_assert(json_is_array(json_object_get(imp, "first")));
  json_decref(j);
  cr_assert_eq(tfs_record_parse(json, strlen(json), &b, NULL, 0), 0);
  cr_assert_eq(b.exit_code, -1);
  cr_assert_null(b.cwd);
  cr_assert_null(b.reason);
  tfs_record_free(&b);
  free(json);
  tfs_record_free(&a);
  /* Minimal records from other writers: optional fields may be absent. */
  const char *min =
      "{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"running\"}";
  cr_assert_eq(tfs_record_parse(min, strlen(min), &b, NULL, 0), 0);
  cr_assert_eq(b.state, TFS_RUNNING);
  cr_assert_eq(b.max_restarts, -1);
  cr_assert_eq(b.max_quick_restarts, 5);
  cr_assert_eq(b.stderr_mode, TFS_STDERR_SPLIT, "records from before merged streams had two pipes");
  tfs_record_free(&b);
  const char *bad = "{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":"
                    "\"running\",\"transcript\":{\"stderr\":\"both\"}}";
  char err[256];
  cr_assert_eq(tfs_record_parse(bad, strlen(bad), &b, err, sizeof err), TFS_ECORRUPT);
  cr_assert_not_null(strstr(err, "'stderr'"), "%s", err);
  tfs_record_free(&b);
  cr_assert_eq(tfs_record_set_command(&b, (char *[]){"", NULL}, NULL), -EINVAL);
}

Test(record, parse_errors_say_what) {
  struct {
    const char *json, *want;
  } cases[] = {
      {"", "record.json"},
      {"{\"v\":1,", "record.json"},
      {"[]", "(top)"},
      {"{\"v\":2,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\"}", "'v'"},
      {"{\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\"}", "'v'"},
      {"{\"v\":1,\"id\":\"../etc\",\"command\":[\"x\"],\"state\":\"queued\"}", "'id'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[],\"state\":\"queued\"}", "'command'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[1],\"state\":\"queued\"}", "'command'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"zombie\"}", "'state'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\","
       "\"exitCode\":\"0\"}",
       "'exitCode'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\","
       "\"created\":\"yesterday\"}",
       "'created'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\","
       "\"key\":\"a/b\"}",
       "'key'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\","
       "\"restart\":{\"policy\":\"maybe\"}}",
       "'policy'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\","
       "\"worker\":[]}",
       "'worker'"},
      {"{\"v\":1,\"id\":\"00000000-000000\",\"command\":[\"x\"],\"state\":\"queued\","
       "\"important\":{\"k\":3,\"first\":[{\"line\":1}]}}",
       "'first'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tfs_record_t r;
    char err[256];
    int e = tfs_record_parse(cases[i].json, strlen(cases[i].json), &r, err, sizeof err);
    cr_assert_eq(e, TFS_ECORRUPT, "case %zu", i);
    cr_assert_not_null(strstr(err, cases[i].want), "case %zu: %s", i, err);
    tfs_record_free(&r);
  }
}

Test(record, utf8_sanitize) {
  size_t n;
  char *s = tfs_utf8_sanitize("ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, &n);
  cr_assert_eq(n, 14);
  cr_assert_str_eq(s, "ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  free(s);
  /* Lone continuation, overlong, surrogate, too big, truncated, NUL. */
  const char bad[] = "\x80|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82|a\0b";
  s = tfs_utf8_sanitize(bad, sizeof bad - 1, &n);
  json_t *j = json_stringn(s, n);
  cr_assert_not_null(j, "jansson accepts the result");
  json_decref(j);
  cr_assert_eq(strlen(s), n, "no NUL left inside");
  cr_assert_eq(strncmp(s, "\xef\xbf\xbd|", 4), 0);
  cr_assert_not_null(strstr(s, "a\xef\xbf\xbd"
                               "b"));
  free(s);
  s = tfs_utf8_sanitize("", 0, &n);
  cr_assert_eq(n, 0);
  cr_assert_str_eq(s, "");
  free(s);
}

/* A cut never splits a valid character; bytes that form none are cut
 * anywhere. */
Test(record, utf8_cut) {
  const char *e = "ab\xc3\xa9z"; /* 'é' at 2..3 */
  cr_assert_eq(tfs_utf8_cut(e, 5, 9), 5, "fits");
  cr_assert_eq(tfs_utf8_cut(e, 5, 3), 2, "before the character max splits");
  cr_assert_eq(tfs_utf8_cut(e, 5, 4), 4, "after it");
  cr_assert_eq(tfs_utf8_cut(e, 5, 2), 2);
  const char *emoji = "\xf0\x9f\x98\x80!";
  for (size_t m = 1; m < 4; m++)
    cr_assert_eq(tfs_utf8_cut(emoji, 5, m), 0, "max %zu", m);
  cr_assert_eq(tfs_utf8_cut(emoji, 5, 4), 4);
  /* Invalid: stray continuation bytes, a truncated sequence, an overlong
   * form: each byte stands alone. */
  static const char stray[] = "a\x80\x80\x80\x80" /* then */ "b";
  static const char overlong[] = "a\xc0\xaf" /* then */ "b";
  cr_assert_eq(tfs_utf8_cut(stray, 6, 3), 3);
  cr_assert_eq(tfs_utf8_cut("a\xe2\x82", 3, 2), 2, "a sequence cut short by len is none");
  cr_assert_eq(tfs_utf8_cut(overlong, 4, 2), 2);
}

Test(record, save_load_and_size_limit) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec, back;
  fx_create("x", NULL, id);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  tfs_record_set_reason(&rec, "exited 0");
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  cr_assert_eq(tfs_task_load(fx_store, id, &back), 0);
  cr_assert_eq(back.state, TFS_COMPLETED);
  cr_assert_str_eq(back.reason, "exited 0");
  tfs_record_free(&back);
  /* A record too large to be sane is refused on save... */
  char *huge = malloc(TFS_RECORD_MAX + 10);
  memset(huge, 'a', TFS_RECORD_MAX + 9);
  huge[TFS_RECORD_MAX + 9] = '\0';
  tfs_record_set_reason(&rec, "%s", huge);
  cr_assert_eq(tfs_task_save(fx_store, &rec), -EFBIG);
  /* ...and reads as corrupt when someone else wrote it. */
  char p[64];
  snprintf(p, sizeof p, "tasks/%s/record.json", id);
  fx_write(p, huge);
  cr_assert_eq(tfs_task_load(fx_store, id, &back), TFS_ECORRUPT);
  free(huge);
  tfs_record_free(&rec);
  /* Saving to an unknown task does not create it. */
  tfs_record_init(&rec);
  strcpy(rec.id, "zzzzzzzz-zzzzzz");
  cr_assert_eq(tfs_task_save(fx_store, &rec), TFS_ENOTASK);
  strcpy(rec.id, "../zzzz");
  cr_assert_eq(tfs_task_save(fx_store, &rec), TFS_EBADID);
  tfs_record_free(&rec);
}

/* The child rewrites the record forever, each version a different size, so
 * a torn write would show as a truncated or mixed file. */
static void saver(const char *id) {
  tfs_record_t rec;
  if (tfs_task_load(fx_store, id, &rec))
    _exit(2);
  for (int64_t i = 0;; i++) {
    rec.lines = i;
    tfs_record_set_reason(&rec, "%0*d", (int)(i % 5000), 7);
    if (tfs_task_save(fx_store, &rec))
      _exit(3);
  }
}

Test(record, kill9_during_saves_never_tears) {
  char id[TFS_ID_MAX + 1];
  fx_create("x", NULL, id);
  unsigned seed = (unsigned)getpid();
  int64_t last = -1;
  for (int round = 0; round < 200; round++) {
    pid_t pid = fork();
    if (pid == 0)
      saver(id);
    fx_track(pid);
    struct timespec ts = {0, (long)(rand_r(&seed) % 4000) * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    cr_assert_eq(fx_wait(pid), 128 + SIGKILL, "round %d: the saver failed on its own", round);
    tfs_record_t rec;
    int err = tfs_task_load(fx_store, id, &rec);
    cr_assert_eq(err, 0, "round %d: %s", round, tfs_strerror(err));
    cr_assert(rec.reason == NULL || strlen(rec.reason) == (size_t)(rec.lines % 5000) ||
                  (rec.lines % 5000 == 0 && strlen(rec.reason) == 1),
              "round %d: record is one consistent version", round);
    last = rec.lines;
    tfs_record_free(&rec);
  }
  cr_assert_geq(last, 0);
  /* Temp files may be left by a kill; they are never mistaken for
   * records, and the listing sees exactly one good task. */
  int n = 0;
  cr_assert_eq(fx_list(NULL, NULL), 0);
  cr_assert_eq(tfs_task_count(fx_store), 1);
  char p[64];
  snprintf(p, sizeof p, "tasks/%s", id);
  DIR *d = opendir(fx_path(p));
  struct dirent *de;
  while ((de = readdir(d)))
    if (strncmp(de->d_name, ".record.json.tmp.", 17) == 0)
      n++;
  closedir(d);
  /* Forget removes the leftovers with the task (once it has ended). */
  fx_set_state(id, TFS_COMPLETED);
  cr_assert_eq(tfs_task_forget(fx_store, id), 0);
  struct stat st;
  cr_assert_neq(stat(fx_path(p), &st), 0);
  cr_log_info("temp files left by 200 kills: %d", n);
}
