/* tfsgen: store-side helpers for the benchmarks, written against the core
 * API (libtaskfs.a).
 *
 *   tfsgen fill STATE N          make N finished tasks, fast (see below)
 *   tfsgen pids STATE            one line per task: id state supervisor_pid worker_pid
 *   tfsgen cancel-all STATE WHO  request a stop of every task not yet ended
 *   tfsgen count STATE           number of tasks (tfs_task_count)
 *   tfsgen list STATE [json]     the core listing (tfs_task_list_opts), one id
 *                                and state a line, or the records as a JSON
 *                                array like `taskfs ls --json`
 *
 * fill makes one real task through tfs_task_create()/tfs_task_save() and
 * marks it completed, then writes N copies of its record (each with its own
 * id, made by the same rules as the core's: creation ms in base 36, '-', six
 * random base-36 chars) with tfs_record_dump(), without the fsyncs a real
 * save does: the point is a large store in seconds, not durability.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h" /* the store generator writes the layout itself */

static int fail(const char *what, int err) {
  fprintf(stderr, "tfsgen: %s: %s\n", what, tfs_strerror(err));
  return 1;
}

static void base36(uint64_t v, char *out, int width) {
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  for (int i = width - 1; i >= 0; i--) {
    out[i] = digits[v % 36];
    v /= 36;
  }
  out[width] = 0;
}

static int write_file(int dirfd, const char *name, const char *data, size_t len) {
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return -errno;
  ssize_t n = write(fd, data, len);
  int err = n == (ssize_t)len ? 0 : (n < 0 ? -errno : -EIO);
  close(fd);
  return err;
}

static int cmd_fill(tfs_store_t *store, long n) {
  char *argv[] = {"echo", "hello", NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  char id[TFS_ID_MAX + 1];
  int existed = 0;
  int err = tfs_task_create(store, &spec, id, &existed);
  if (err)
    return fail("create the template task", err);
  tfs_record_t rec;
  tfs_record_init(&rec);
  err = tfs_task_load(store, id, &rec);
  if (err)
    return fail("load the template task", err);
  int tfd = tfs_transcript_open_append(store, id);
  if (tfd < 0)
    return fail("open the template transcript", tfd);
  err = tfs_transcript_append(tfd, "hello", 5, 1);
  close(tfd);
  if (err)
    return fail("append to the template transcript", err);
  int64_t now = tfs_now_ms();
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  rec.started_ms = rec.created_ms + 1;
  rec.ended_ms = rec.created_ms + 2;
  rec.lines = 1;
  rec.bytes = 6;
  tfs_record_set_reason(&rec, "exited with code 0");
  err = tfs_task_save(store, &rec);
  if (err)
    return fail("save the template task", err);

  /* The copies are older than the template, one ms apart, so that ids sort
   * in creation order like real ones. */
  int64_t ms0 = now - n - 1000;
  int tasks = tfs__store_tasks_fd(store);
  srand((unsigned)getpid() ^ (unsigned)now);
  for (long i = 0; i < n; i++) {
    char cid[TFS_ID_MAX + 1], rnd[8];
    base36((uint64_t)(ms0 + i), cid, 8);
    base36((uint64_t)rand() * 7919u + (uint64_t)i, rnd, 6);
    strcat(cid, "-");
    strcat(cid, rnd);
    if (!tfs_id_valid(cid)) {
      fprintf(stderr, "tfsgen: made an id the core rejects: %s\n", cid);
      return 1;
    }
    memcpy(rec.id, cid, sizeof cid);
    rec.created_ms = ms0 + i;
    rec.started_ms = rec.created_ms + 1;
    rec.ended_ms = rec.created_ms + 2;
    char *json = tfs_record_dump(&rec);
    if (!json)
      return fail("dump a record", -ENOMEM);
    if (mkdirat(tasks, cid, 0700))
      return fail("mkdir a task", -errno);
    int dfd = openat(tasks, cid, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
      return fail("open a task dir", -errno);
    err = write_file(dfd, "record.json", json, strlen(json));
    if (!err)
      err = write_file(dfd, "transcript", "hello\n", 6);
    close(dfd);
    free(json);
    if (err)
      return fail("write a task", err);
  }
  tfs_record_free(&rec);
  printf("%ld\n", n + 1);
  return 0;
}

static int print_one(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  printf("%s %s %d %d\n", rec->id, tfs_state_name(rec->state), (int)rec->supervisor_pid,
         (int)rec->worker_pid);
  return 0;
}

typedef struct {
  tfs_store_t *store;
  const char *who;
  long n;
  int err;
} cancel_ctx_t;

static int cancel_one(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  cancel_ctx_t *c = arg;
  if (tfs_state_terminal(rec->state))
    return 0;
  int err = tfs_cancel_request(c->store, rec->id, c->who);
  if (err == TFS_EFINISHED)
    return 0;
  if (err) {
    c->err = err;
    return 0;
  }
  c->n++;
  return 0;
}

static int list_one(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  int *n = arg;
  if (json) {
    fputs((*n)++ ? ",\n" : "\n", stdout);
    fwrite(json, 1, len - 1, stdout); /* without its newline */
  } else {
    printf("%s %s\n", rec->id, tfs_state_name(rec->state));
  }
  return 0;
}

static int cmd_list(tfs_store_t *store, int json) {
  static char obuf[1 << 16];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  tfs_list_opts_t o = {.with_json = json};
  int n = 0;
  if (json)
    fputs("[", stdout);
  int err = tfs_task_list_opts(store, &o, list_one, &n, NULL);
  if (json)
    fputs(n ? "\n]\n" : "]\n", stdout);
  return err < 0 ? fail("list", err) : 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: tfsgen fill|pids|cancel-all|count|list STATE [ARG]\n");
    return 100;
  }
  tfs_store_t *store = NULL;
  int err = tfs_store_open(argv[2], &store);
  if (err)
    return fail(argv[2], err);
  int rc = 0;
  if (!strcmp(argv[1], "fill") && argc == 4) {
    rc = cmd_fill(store, atol(argv[3]));
  } else if (!strcmp(argv[1], "pids")) {
    err = tfs_task_list_opts(store, NULL, print_one, NULL, NULL);
    if (err < 0)
      rc = fail("list", err);
  } else if (!strcmp(argv[1], "cancel-all") && argc == 4) {
    cancel_ctx_t c = {store, argv[3], 0, 0};
    err = tfs_task_list_opts(store, NULL, cancel_one, &c, NULL);
    if (err < 0)
      rc = fail("list", err);
    else if (c.err)
      rc = fail("request a stop", c.err);
    printf("%ld\n", c.n);
  } else if (!strcmp(argv[1], "list")) {
    rc = cmd_list(store, argc == 4 && !strcmp(argv[3], "json"));
  } else if (!strcmp(argv[1], "count")) {
    printf("%" PRId64 "\n", tfs_task_count(store));
  } else {
    fprintf(stderr, "tfsgen: unknown or incomplete command '%s'\n", argv[1]);
    rc = 100;
  }
  tfs_store_close(store);
  return rc;
}
