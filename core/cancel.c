/* Stop requests: tasks/<id>/cancel holds {"by", "at"}; its presence is the
 * request. The requester then rings tasks/<id>/doorbell, a FIFO the
 * supervisor waits on; the supervisor also polls for the file. */
#include "core/internal.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* Wakes the supervisor: one byte into tasks/<id>/doorbell. Best effort by
 * design, because the cancel file is the request and the supervisor's poll
 * finds it anyway: ENOENT (no doorbell: an old or doorbell-less
 * supervisor), ENXIO (no reader: no live supervisor) and EAGAIN (the FIFO is
 * full: already rung) are all fine. O_NONBLOCK so that opening never waits
 * for a reader; O_NOFOLLOW and the S_ISFIFO check so that a symlink or a
 * regular file planted under the name is never written to. */
void tfs__doorbell_ring(tfs_store_t *store, const char *id) {
  int fd TFS_AUTOCLOSE = tfs_task_file_open(store, id, TFS_FILE_DOORBELL, O_WRONLY | O_NONBLOCK, 0);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
    return;
  /* If the supervisor exits between the open and the write, the write
   * raises SIGPIPE, which must not kill the requester (a CLI or the MCP
   * server): block it for this thread and swallow the one it caused. */
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigpending(&pending);
  int was_pending = sigismember(&pending, SIGPIPE);
  if (write(fd, "!", 1) < 0 && errno == EPIPE && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The supervisor's end: whatever has the name (a FIFO left by a killed
 * supervisor, or a file planted there) is replaced, since the caller owns
 * the task. O_RDWR makes the caller a reader (writers never get ENXIO) and
 * a writer (its reads never see EOF); the type is checked on the fd, so a
 * swap between mkfifoat and openat is refused. */
int tfs__fifo_make(tfs_store_t *store, const char *id, tfs_task_file_t which) {
  int err = tfs__writable(store);
  if (err)
    return err;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  const char *name = tfs_task_file_name(which);
  if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
    return -errno;
  if (mkfifoat(dfd, name, 0600) < 0)
    return -errno;
  int fd TFS_AUTOCLOSE = openat(dfd, name, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return tfs__open_err(errno);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
    return TFS_ECORRUPT;
  int fifo = fd;
  fd = -1;
  return fifo;
}

int tfs_doorbell_open(tfs_store_t *store, const char *id) {
  return tfs__fifo_make(store, id, TFS_FILE_DOORBELL);
}

/* The request's text: {"by": who (valid UTF-8), "at": now} and a newline.
 * *by gets the sanitized who, which the supervisor copies into the record
 * with *at when the request ends the task. */
static char *request_text(const char *who, char **by, int64_t *at) {
  char t[TFS_TIME_BUF];
  if (!who)
    who = "";
  *at = tfs_now_ms();
  *by = tfs_utf8_sanitize(who, strlen(who), NULL);
  json_t *j = json_object();
  char *text = NULL;
  if (*by && j) {
    json_object_set_new(j, "by", json_string(*by));
    json_object_set_new(j, "at", json_string(tfs_time_format(*at, t)));
    text = json_dumps(j, JSON_PRESERVE_ORDER);
  }
  json_decref(j);
  return tfs_str_line(text, NULL);
}

/* After the request is written: if the task has ended meanwhile, and not
 * by this request (the record names the request that ended it), the
 * supervisor's final save and its clear of the cancel file came before our
 * file, which nobody will ever consume. It is removed, if the name still
 * holds our file, and the caller hears TFS_EFINISHED. */
static int recheck(tfs_store_t *store, const char *id, int dfd, const struct stat *mine,
                   const char *by, int64_t at) {
  tfs_record_t rec;
  struct stat now;
  if (tfs_task_load(store, id, &rec))
    return 0; /* cannot tell: the request stands, as before */
  int ended = tfs_state_terminal(rec.state);
  int by_us = rec.cancel_by && !strcmp(rec.cancel_by, by) && rec.cancel_ms == at;
  tfs_record_free(&rec);
  if (!ended || by_us)
    return 0;
  if (fstatat(dfd, TFS__FILE(CANCEL), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
      now.st_dev == mine->st_dev && now.st_ino == mine->st_ino)
    unlinkat(dfd, TFS__FILE(CANCEL), 0);
  return TFS_EFINISHED;
}

int tfs_cancel_request(tfs_store_t *store, const char *id, const char *who) {
  tfs_record_t rec;
  int err = tfs__writable(store);
  if (err)
    return err;
  err = tfs_task_load(store, id, &rec);
  if (err)
    return err;
  int ended = tfs_state_terminal(rec.state);
  tfs_record_free(&rec);
  if (ended)
    return TFS_EFINISHED;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  char *by TFS_AUTOFREE = NULL;
  int64_t at;
  char *line TFS_AUTOFREE = request_text(who, &by, &at);
  if (!line)
    return -ENOMEM;
  /* Atomic (a reader never sees half a request) but not fsynced: the stop
   * only has to be visible to the supervisor, which we wake right after.
   * After a crash the task is gone and the request with it; the supervisor
   * records the cancellation durably in record.json. Two fsyncs here were
   * most of a stop's latency. */
  struct stat mine;
  err =
      tfs__write_atomic_flags(dfd, TFS__FILE(CANCEL), line, strlen(line), TFS__WRITE_NOSYNC, &mine);
  if (!err)
    err = recheck(store, id, dfd, &mine, by, at);
  if (!err)
    tfs__doorbell_ring(store, id);
  return err;
}

/* Fills who and at_ms from the cancel file's JSON; any content counts as a
 * request (a hand-made file too). */
static void request_fields(const char *text, size_t len, char *who, size_t wholen, int64_t *at_ms) {
  json_t *j = json_loadb(text, len, 0, NULL);
  if (json_is_object(j)) {
    json_t *by = json_object_get(j, "by"), *at = json_object_get(j, "at");
    if (who && wholen && json_is_string(by))
      snprintf(who, wholen, "%s", json_string_value(by));
    if (at_ms && json_is_string(at))
      tfs_time_parse(json_string_value(at), at_ms);
  }
  json_decref(j);
}

/* A cancel file beside an ended task is the request that ended it (the
 * supervisor clears it right after its final save) or a stale one that
 * came too late: the record tells, and only its request is reported. */
static int ended_request(tfs_store_t *store, const char *id, char *who, size_t wholen,
                         int64_t *at_ms) {
  tfs_record_t rec;
  if (tfs_task_load(store, id, &rec))
    return -1; /* cannot tell: the file speaks */
  int r = -1;
  if (tfs_state_terminal(rec.state)) {
    r = rec.cancel_by != NULL;
    if (r && who && wholen)
      snprintf(who, wholen, "%s", rec.cancel_by);
    if (r && at_ms)
      *at_ms = rec.cancel_ms;
  }
  tfs_record_free(&rec);
  return r;
}

int tfs_cancel_query(tfs_store_t *store, const char *id, char *who, size_t wholen, int64_t *at_ms) {
  char *text;
  size_t len;
  if (who && wholen)
    who[0] = '\0';
  if (at_ms)
    *at_ms = 0;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  int err = tfs__read_small(dfd, TFS__FILE(CANCEL), 65536, &text, &len);
  if (err == -ENOENT)
    return 0;
  if (err && err != -EFBIG && err != TFS_ECORRUPT)
    return err;
  int r = ended_request(store, id, who, wholen, at_ms);
  if (r >= 0) {
    free(text);
    return r;
  }
  if (!err)
    request_fields(text, len, who, wholen, at_ms);
  free(text);
  return 1; /* present is what counts, even when the details are unreadable */
}

int tfs_cancel_status(tfs_store_t *store, const char *id, char *who, size_t wholen,
                      int64_t *at_ms) {
  int r = tfs_cancel_query(store, id, who, wholen, at_ms);
  if (r)
    return r;
  /* No file: the supervisor has consumed the request that ended the task,
   * and its record keeps who asked. */
  return ended_request(store, id, who, wholen, at_ms) == 1;
}

int tfs_cancel_clear(tfs_store_t *store, const char *id) {
  int err = tfs__writable(store);
  if (err)
    return err;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  if (unlinkat(dfd, TFS__FILE(CANCEL), 0) && errno != ENOENT)
    return -errno;
  return 0;
}
