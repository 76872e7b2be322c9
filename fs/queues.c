/* queues/: one directory per queue, with its limit and pause as files
 * that take one short line (`echo 2 > parallel`, `echo 1 > paused`), and
 * the tasks it runs and the ones that wait, in order. Every answer is the
 * core's queue as it is now (tfs_queue_info, tfs_queue_tasks); writes go
 * through tfs_queue_set, which wakes the waiters that may start. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fs/fs.h"

static const struct {
  const char *name;
  mode_t mode;
} qfiles[Q_NKINDS] = {
    [Q_PARALLEL] = {"parallel", 0600},
    [Q_PAUSED] = {"paused", 0600},
    [Q_TASKS] = {"tasks", 0400},
};

const char *fs_queue_file_name(int kind) {
  return kind > Q_DIR && kind < Q_NKINDS ? qfiles[kind].name : NULL;
}

mode_t fs_queue_file_mode(int kind) {
  return kind > Q_DIR && kind < Q_NKINDS ? qfiles[kind].mode : 0;
}

fuse_ino_t fs_queue_ino(size_t idx, int kind) {
  return INO_QUEUE_BIT | (INO_TASK_BASE + (fuse_ino_t)idx * Q_NKINDS + (fuse_ino_t)kind);
}

/* queues/NAME: a queue the store has. */
void fs_queues_lookup(fuse_req_t req, mnt_t *m, const char *name) {
  tfs_queue_info_t qi;
  fuse_ino_t ino;
  tfs_store_t *s = fs_store(m);
  int err = !s || !tfs_queue_name_valid(name) || tfs_queue_info(s, name, &qi) ? -ENOENT : 0;
  if (!err)
    err = fs_name_ino(m, N_QUEUES, name, &ino);
  if (err)
    fuse_reply_err(req, -err);
  else
    fs_reply_entry(req, m, ino, 0.0);
}

void fs_queue_lookup(fuse_req_t req, mnt_t *m, size_t idx, const char *name) {
  for (int k = Q_DIR + 1; k < Q_NKINDS; k++)
    if (!strcmp(name, qfiles[k].name)) {
      fs_reply_entry(req, m, fs_queue_ino(idx, k), 60.0);
      return;
    }
  fuse_reply_err(req, ENOENT);
}

int fs_queue_attr(mnt_t *m, size_t idx, int kind, fuse_ino_t ino, struct stat *st) {
  tfs_queue_info_t qi;
  tfs_store_t *s = fs_store(m);
  if (!s || tfs_queue_info(s, m->queues.v[idx].name, &qi))
    return -ENOENT;
  fs_dir_attr(m, st, ino, NULL);
  if (kind == Q_DIR)
    return 0;
  char *buf = NULL;
  size_t len = 0;
  int err = fs_queue_render(m, idx, kind, &buf, &len);
  free(buf);
  st->st_mode = S_IFREG | qfiles[kind].mode;
  st->st_nlink = 1;
  st->st_size = err ? 0 : (off_t)len;
  return 0;
}

/* tasks: "ID running" for each task that holds a slot, then "ID waiting
 * N" for each waiter in order. */
static int render_tasks(tfs_store_t *s, const char *name, char **out, size_t *len) {
  char **run, **wait;
  size_t nr, nw;
  int err = tfs_queue_tasks(s, name, &run, &nr, &wait, &nw);
  if (err)
    return err;
  size_t cap = (nr + nw) * 40 + 1;
  char *buf = malloc(cap);
  size_t o = 0;
  for (size_t i = 0; buf && i < nr; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s running\n", run[i]);
  for (size_t i = 0; buf && i < nw; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s waiting %zu\n", wait[i], i + 1);
  tfs_ids_free(run, nr);
  tfs_ids_free(wait, nw);
  if (!buf)
    return -ENOMEM;
  buf[o] = '\0';
  *out = buf;
  *len = o;
  return 0;
}

int fs_queue_render(mnt_t *m, size_t idx, int kind, char **out, size_t *len) {
  tfs_queue_info_t qi;
  tfs_store_t *s = fs_store(m);
  const char *name = m->queues.v[idx].name;
  if (!s)
    return -ENOENT;
  if (kind == Q_TASKS)
    return render_tasks(s, name, out, len);
  int err = tfs_queue_info(s, name, &qi);
  if (err)
    return err;
  int n = kind == Q_PAUSED  ? asprintf(out, "%d\n", qi.paused)
          : qi.parallel > 0 ? asprintf(out, "%d\n", qi.parallel)
                            : asprintf(out, "none\n");
  if (n < 0) {
    *out = NULL;
    return -ENOMEM;
  }
  *len = (size_t)n;
  return 0;
}

/* "2", "2\n", "none": the limit (tfs_queue_parallel_parse); "0"/"1": paused.
 * Anything else EINVAL. */
int fs_queue_write(mnt_t *m, tfile_t *f, const char *buf, size_t size) {
  char line[16];
  tfs_store_t *s = fs_store(m);
  int kind = f->kind - FS_QFILE, parallel = TFS_QUEUE_KEEP, paused = TFS_QUEUE_KEEP;
  if (size && buf[size - 1] == '\n')
    size--;
  if (!size || size >= sizeof line || memchr(buf, '\0', size))
    return EINVAL;
  memcpy(line, buf, size);
  line[size] = '\0';
  if (kind == Q_PAUSED && (!strcmp(line, "0") || !strcmp(line, "1"))) {
    paused = line[0] == '1';
  } else if (kind != Q_PARALLEL || tfs_queue_parallel_parse(line, &parallel)) {
    return EINVAL;
  }
  int err = s ? tfs_queue_set(s, m->queues.v[f->task].name, parallel, paused) : -ENOENT;
  if (err) {
    fs_log(m, LOG_ERR, "queue %s: cannot change it: %s", m->queues.v[f->task].name,
           tfs_strerror(err));
    return fs_errno(err);
  }
  fs_log(m, LOG_INFO, "queue %s: %s set to %s", m->queues.v[f->task].name, qfiles[kind].name, line);
  return 0;
}
