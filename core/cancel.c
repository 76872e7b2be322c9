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
static void ring_doorbell(tfs_store_t *store, const char *id) {
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

int tfs_cancel_request(tfs_store_t *store, const char *id, const char *who) {
  tfs_record_t rec;
  char t[TFS_TIME_BUF];
  int err = tfs_task_load(store, id, &rec);
  if (err)
    return err;
  int ended = tfs_state_terminal(rec.state);
  tfs_record_free(&rec);
  if (ended)
    return TFS_EFINISHED;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  if (!who)
    who = "";
  char *clean = tfs_utf8_sanitize(who, strlen(who), NULL);
  json_t *j = json_object();
  if (!clean || !j) {
    free(clean);
    json_decref(j);
    return -ENOMEM;
  }
  json_object_set_new(j, "by", json_string(clean));
  json_object_set_new(j, "at", json_string(tfs_time_format(tfs_now_ms(), t)));
  free(clean);
  char *text = json_dumps(j, JSON_PRESERVE_ORDER);
  json_decref(j);
  if (!text)
    return -ENOMEM;
  size_t n = strlen(text);
  char *line = realloc(text, n + 2);
  if (!line) {
    free(text);
    return -ENOMEM;
  }
  line[n] = '\n';
  line[n + 1] = '\0';
  /* Atomic (a reader never sees half a request) but not fsynced: the stop
   * only has to be visible to the supervisor, which we wake right after.
   * After a crash the task is gone and the request with it; the supervisor
   * records the cancellation durably in record.json. Two fsyncs here were
   * most of a stop's latency. */
  err = tfs__write_atomic_flags(dfd, TFS__FILE(CANCEL), line, n + 1, TFS__WRITE_NOSYNC);
  free(line);
  if (!err)
    ring_doorbell(store, id);
  return err;
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
  int err = tfs_read_small(dfd, TFS__FILE(CANCEL), 65536, &text, &len);
  if (err == -ENOENT)
    return 0;
  if (err == -EFBIG || err == TFS_ECORRUPT)
    return 1; /* present is what counts; the details are unreadable */
  if (err)
    return err;
  /* Any content counts as a request (the mount's `echo 1 > cancel` path
   * writes through the core, but a hand-made file must work too). */
  json_t *j = json_loadb(text, len, 0, NULL);
  free(text);
  if (json_is_object(j)) {
    json_t *by = json_object_get(j, "by"), *at = json_object_get(j, "at");
    if (who && wholen && json_is_string(by))
      snprintf(who, wholen, "%s", json_string_value(by));
    if (at_ms && json_is_string(at))
      tfs_time_parse(json_string_value(at), at_ms);
  }
  json_decref(j);
  return 1;
}

int tfs_cancel_clear(tfs_store_t *store, const char *id) {
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  if (unlinkat(dfd, TFS__FILE(CANCEL), 0) && errno != ENOENT)
    return -errno;
  return 0;
}
