/* Control requests: pause, resume, a signal, the end of stdin. Each is one
 * JSON line appended to tasks/<id>/control ({"action", "signal",
 * "freeSlot", "by", "at"}), then the task's doorbell is rung; the
 * supervisor reads what was appended since it last looked and acts on it
 * with the process group it knows from memory. Appending keeps every
 * request (two signals sent quickly are two signals), and one write of a
 * short line with O_APPEND is never interleaved with another. */
#include "core/internal.h"

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "taskfs/text.h"

/* The file stops taking requests past this size (a loop of requests must
 * not fill the disk); each task has its own. */
#define CONTROL_MAX (1 << 20)
#define LINE_MAX_ 1024

static const char *const action_names[] = {"pause", "resume", "signal", "eof"};

const char *tfs_control_name(tfs_control_action_t a) {
  return (unsigned)a < sizeof action_names / sizeof *action_names ? action_names[a] : "unknown";
}

static int action_parse(const char *s, size_t n, tfs_control_action_t *out) {
  for (size_t i = 0; i < sizeof action_names / sizeof *action_names; i++)
    if (strlen(action_names[i]) == n && !memcmp(s, action_names[i], n)) {
      *out = (tfs_control_action_t)i;
      return 0;
    }
  return -EINVAL;
}

int tfs_control_parse(const char *line, size_t len, tfs_control_t *out) {
  char buf[64];
  memset(out, 0, sizeof *out);
  if (len && line[len - 1] == '\n')
    len--;
  if (!len || len >= sizeof buf || memchr(line, '\0', len))
    return -EINVAL;
  memcpy(buf, line, len);
  buf[len] = '\0';
  char *arg = strchr(buf, ' ');
  size_t n = arg ? (size_t)(arg - buf) : len;
  if (arg)
    arg++;
  if (action_parse(buf, n, &out->action))
    return -EINVAL;
  switch (out->action) {
  case TFS_CONTROL_SIGNAL:
    if (!arg || (out->sig = tfs_signal_parse(arg)) < 0)
      return -EINVAL;
    return 0;
  case TFS_CONTROL_PAUSE:
    if (arg && strcmp(arg, "free-slot"))
      return -EINVAL;
    out->free_slot = arg != NULL;
    return 0;
  default:
    return arg ? -EINVAL : 0;
  }
}

int tfs__append_line(tfs_store_t *store, const char *id, tfs_task_file_t which, const char *line,
                     size_t len, off_t max) {
  int fd TFS_AUTOCLOSE =
      tfs_task_file_open(store, id, which, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (fd < 0)
    return fd;
  struct stat st;
  if (fstat(fd, &st))
    return -errno;
  if (st.st_size + (off_t)len > max)
    return -EFBIG;
  for (;;) {
    ssize_t w = write(fd, line, len);
    if (w == (ssize_t)len)
      return 0;
    if (w < 0 && errno == EINTR)
      continue;
    return w < 0 ? -errno : -EIO;
  }
}

/* Whether the request fits the task as its record says now. */
static int request_allowed(const tfs_record_t *rec, const tfs_control_t *req) {
  if (tfs_state_terminal(rec->state))
    return TFS_EFINISHED;
  if (req->action == TFS_CONTROL_EOF)
    return rec->with_stdin ? 0 : TFS_ENOSTDIN;
  if (rec->state == TFS_QUEUED)
    return TFS_ENOTRUNNING;
  if (req->action == TFS_CONTROL_RESUME && rec->state != TFS_PAUSED)
    return TFS_ENOTRUNNING;
  return 0;
}

int tfs_control_request(tfs_store_t *store, const char *id, const tfs_control_t *req,
                        const char *who) {
  tfs_record_t rec;
  char t[TFS_TIME_BUF];
  int err = tfs__writable(store);
  if (err)
    return err;
  if ((unsigned)req->action > TFS_CONTROL_EOF ||
      (req->action == TFS_CONTROL_SIGNAL && (req->sig < 1 || req->sig >= NSIG)))
    return -EINVAL;
  err = tfs_task_load(store, id, &rec);
  if (!err)
    err = request_allowed(&rec, req);
  tfs_record_free(&rec);
  if (err)
    return err;
  char *by TFS_AUTOFREE = tfs_utf8_sanitize(who ? who : "", strlen(who ? who : ""), NULL);
  json_t *j = json_object();
  if (!by || !j) {
    json_decref(j);
    return -ENOMEM;
  }
  json_object_set_new(j, "action", json_string(tfs_control_name(req->action)));
  if (req->action == TFS_CONTROL_SIGNAL)
    json_object_set_new(j, "signal", json_integer(req->sig));
  if (req->free_slot)
    json_object_set_new(j, "freeSlot", json_true());
  json_object_set_new(j, "by", json_string(by));
  json_object_set_new(j, "at", json_string(tfs_time_format(tfs_now_ms(), t)));
  char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(j);
  if (!text)
    return -ENOMEM;
  char line[LINE_MAX_];
  int n = snprintf(line, sizeof line, "%s\n", text);
  free(text);
  if (n <= 0 || (size_t)n >= sizeof line)
    return -ENAMETOOLONG;
  if (!(err = tfs__append_line(store, id, TFS_FILE_CONTROL, line, (size_t)n, CONTROL_MAX)))
    tfs__doorbell_ring(store, id);
  return err;
}

/* One request line's fields; -EINVAL if it is not one. */
static int request_fields(const char *s, size_t len, tfs_control_t *out) {
  memset(out, 0, sizeof *out);
  json_t *j = json_loadb(s, len, 0, NULL);
  const char *a = json_string_value(json_object_get(j, "action"));
  const char *by = json_string_value(json_object_get(j, "by"));
  const char *at = json_string_value(json_object_get(j, "at"));
  json_t *sig = json_object_get(j, "signal");
  int err = a && !action_parse(a, strlen(a), &out->action) ? 0 : -EINVAL;
  if (!err && out->action == TFS_CONTROL_SIGNAL) {
    json_int_t v = json_integer_value(sig);
    err = json_is_integer(sig) && v >= 1 && v < NSIG ? 0 : -EINVAL;
    out->sig = (int)v;
  }
  out->free_slot = json_is_true(json_object_get(j, "freeSlot"));
  snprintf(out->by, sizeof out->by, "%s", by ? by : "someone");
  if (at)
    tfs_time_parse(at, &out->at_ms);
  json_decref(j);
  return err;
}

int tfs_control_next(tfs_store_t *store, const char *id, off_t *offset, tfs_control_t *out) {
  int fd TFS_AUTOCLOSE = tfs_task_file_open(store, id, TFS_FILE_CONTROL, O_RDONLY, 0);
  if (fd == -ENOENT)
    return 0;
  if (fd < 0)
    return fd;
  char buf[LINE_MAX_];
  for (;;) {
    ssize_t r = pread(fd, buf, sizeof buf, *offset);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? -errno : 0;
    char *nl = memchr(buf, '\n', (size_t)r);
    if (!nl) {
      /* A line being written, or one longer than any request: skip the
       * latter, wait for the former. */
      if (r < (ssize_t)sizeof buf)
        return 0;
      *offset += r;
      continue;
    }
    size_t len = (size_t)(nl - buf);
    *offset += (off_t)len + 1;
    if (!request_fields(buf, len, out))
      return 1;
  }
}
