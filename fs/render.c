/* The small files of the mount, rendered from the store when they are
 * opened (and when they are stat'ed, for their size): <mnt>/owner, and
 * record.json, owner and cancel of each task. The content is kept for that
 * open file, so a reader sees one consistent version however the task
 * moves on. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"
#include "taskfs/buf.h"

/* Dumps obj as indented JSON with a final newline and drops the
 * reference; a NULL obj (a failed allocation) is -ENOMEM. */
static int dump_json(json_t *obj, char **out, size_t *len) {
  *out = obj ? tfs_str_line(json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER), len) : NULL;
  json_decref(obj);
  return *out ? 0 : -ENOMEM;
}

/* <mnt>/owner: the store's instance record as the core reads it, with
 * alive computed now. A store nobody has owned yet reads {"alive": false}. */
static int render_store_owner(mnt_t *m, char **out, size_t *len) {
  tfs_store_t *s = fs_store(m);
  tfs_owner_t o;
  json_t *obj = NULL;
  int err = s ? tfs_store_owner(s, &o) : -ENOENT;
  if (err == -ENOENT || err == TFS_ENOTASK)
    return dump_json(json_pack("{s:b}", "alive", 0), out, len);
  if (err)
    return err;
  char *js = tfs_owner_dump(&o);
  if (!js)
    return -ENOMEM;
  obj = json_loads(js, 0, NULL);
  free(js);
  if (!obj || !json_is_object(obj)) {
    json_decref(obj);
    return -EIO;
  }
  json_object_set_new(obj, "alive", json_boolean(o.alive));
  return dump_json(obj, out, len);
}

/* tasks/<id>/record.json: the live record, so a dead supervisor reads as
 * lost. */
static int render_record(tfs_store_t *s, const char *id, char **out, size_t *len) {
  tfs_record_t rec;
  int err = tfs_task_load(s, id, &rec);
  if (!err) {
    *out = tfs_str_line(tfs_record_dump(&rec), len);
    if (!*out)
      err = -ENOMEM;
  }
  tfs_record_free(&rec);
  return err;
}

/* A JSON string, or null for a missing one. */
static json_t *str_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}

/* tasks/<id>/owner: the supervisor, alive by its lock, never by its pid. */
static int render_task_owner(tfs_store_t *s, const char *id, char **out, size_t *len) {
  tfs_record_t rec;
  char tbuf[TFS_TIME_BUF];
  int err = tfs_task_load(s, id, &rec);
  if (err) {
    tfs_record_free(&rec);
    return err;
  }
  int alive = tfs_task_alive(s, id);
  json_t *obj = json_object();
  if (obj) {
    json_object_set_new(obj, "pid",
                        rec.supervisor_pid > 0 ? json_integer(rec.supervisor_pid) : json_null());
    json_object_set_new(obj, "started",
                        str_or_null(rec.supervisor_started_ms > 0
                                        ? tfs_time_format(rec.supervisor_started_ms, tbuf)
                                        : NULL));
    json_object_set_new(obj, "exe", str_or_null(rec.supervisor_exe));
    json_object_set_new(obj, "host", str_or_null(rec.supervisor_host));
    json_object_set_new(obj, "alive", json_boolean(alive == 1));
    if (json_object_size(obj) != 5) {
      json_decref(obj); /* a member failed to allocate */
      obj = NULL;
    }
  }
  tfs_record_free(&rec);
  return dump_json(obj, out, len);
}

/* tasks/<id>/cancel: "0\n", or "1 <when> <who>\n" once a stop was asked
 * (pending, or the one that ended the task: tfs_cancel_status). */
static int render_cancel(tfs_store_t *s, const char *id, char **out, size_t *len) {
  char who[256] = "";
  int64_t at = 0;
  int r = tfs_cancel_status(s, id, who, sizeof who, &at);
  if (r < 0)
    return r;
  char tbuf[TFS_TIME_BUF];
  int n = r ? asprintf(out, "1 %s %s\n", at > 0 ? tfs_time_format(at, tbuf) : "-", *who ? who : "-")
            : asprintf(out, "0\n");
  if (n < 0) {
    *out = NULL; /* asprintf leaves it undefined */
    return -ENOMEM;
  }
  *len = (size_t)n;
  return 0;
}

/* tasks/<id>/control: the state the requests act on, one line ("running",
 * "paused", ...). */
static int render_control(tfs_store_t *s, const char *id, char **out, size_t *len) {
  tfs_record_t rec;
  int err = tfs_task_load(s, id, &rec);
  int n = err ? 0 : asprintf(out, "%s\n", tfs_state_name(rec.state));
  tfs_record_free(&rec);
  if (err)
    return err;
  if (n < 0) {
    *out = NULL;
    return -ENOMEM;
  }
  *len = (size_t)n;
  return 0;
}

/* Renders the content of a small file node. */
int fs_render(mnt_t *m, node_t t, size_t idx, int kind, char **out, size_t *len) {
  if (t == N_OWNER)
    return render_store_owner(m, out, len);
  tfs_store_t *s = fs_store(m);
  if (!s)
    return -ENOENT;
  const char *id = m->tasks.v[idx].name;
  switch (kind) {
  case K_RECORD:
    return render_record(s, id, out, len);
  case K_TOWNER:
    return render_task_owner(s, id, out, len);
  case K_CANCEL:
    return render_cancel(s, id, out, len);
  case K_CONTROL:
    return render_control(s, id, out, len);
  case K_STDIN:
    /* What goes to the task is its own: read, stdin is empty (so that
     * `grep -r` over the mount passes it by). */
    *out = NULL;
    *len = 0;
    return 0;
  }
  return -EINVAL;
}
