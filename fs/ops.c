/* The FUSE operations of the mount (low-level API).
 *
 * Every answer is computed from the store at the moment it is asked:
 * attributes are never cached by the kernel (attr and entry timeouts are 0),
 * so sizes and mtimes are fresh at every stat, which is what `tail -f` (it
 * polls st_size on FUSE) and `ls -l` need. Small files (record.json, owner,
 * cancel) are rendered at open and kept for that open file; every file is
 * opened with direct_io, so a read never stops at a stale cached size.
 * Transcripts are read straight from the backing file through an fd opened
 * at open(): each read is answered with fuse_reply_data() on that fd, which
 * splices the bytes into /dev/fuse when the kernel allows it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "fs/fs.h"

/* The largest read the mount serves in one request; the kernel asks for at
 * most max_pages (256 pages = 1 MiB with libfuse 3.14). */
#define READ_MAX (4u << 20)

static const char *const task_files[] = {"record.json", "transcript", "cancel", "owner"};
static const int task_file_kinds[] = {K_RECORD, K_TRANSCRIPT, K_CANCEL, K_TOWNER};

typedef enum { N_NONE, N_ROOT, N_OWNER, N_TASKS, N_BYKEY, N_TASK, N_KEY } node_t;

static mnt_t *M(fuse_req_t req) {
  return fuse_req_userdata(req);
}

/* Splits an inode number into its node type, table index and file kind. */
static node_t ino_decode(mnt_t *m, fuse_ino_t ino, size_t *idx, int *kind) {
  switch (ino) {
  case INO_ROOT:
    return N_ROOT;
  case INO_OWNER:
    return N_OWNER;
  case INO_TASKS:
    return N_TASKS;
  case INO_BYKEY:
    return N_BYKEY;
  }
  if (ino & INO_KEY_BIT) {
    uint64_t i = (ino & ~INO_KEY_BIT) - INO_TASK_BASE;
    if ((ino & ~INO_KEY_BIT) < INO_TASK_BASE || i >= m->keys.n)
      return N_NONE;
    *idx = i;
    return N_KEY;
  }
  if (ino < INO_TASK_BASE)
    return N_NONE;
  uint64_t i = (ino - INO_TASK_BASE) / 8, k = (ino - INO_TASK_BASE) % 8;
  if (i >= m->tasks.n || k >= K_NKINDS)
    return N_NONE;
  *idx = i;
  *kind = (int)k;
  return N_TASK;
}

static fuse_ino_t task_ino(size_t idx, int kind) {
  return INO_TASK_BASE + (fuse_ino_t)idx * 8 + (fuse_ino_t)kind;
}

static fuse_ino_t key_ino(size_t idx) {
  return INO_KEY_BIT | (INO_TASK_BASE + (fuse_ino_t)idx);
}

/* Maps a store error to the errno a file system caller should see. */
static int to_errno(int err) {
  switch (err) {
  case TFS_ENOTASK:
  case TFS_EBADID:
    return ENOENT;
  case TFS_ECORRUPT:
  case TFS_ESYMLINK:
    return EIO;
  case TFS_EFINISHED:
    return ESRCH;
  }
  if (err < 0 && err > -4000)
    return -err;
  return EIO;
}

/* 0 if tasks/<id> is a real directory (fills st), else -ENOENT. */
static int task_stat(tfs_store_t *s, const char *id, struct stat *st) {
  if (!s || fstatat(tfs_store_tasks_fd(s), id, st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st->st_mode))
    return -ENOENT;
  return 0;
}

/* Stats tasks/<id>/<name> without following a symlink at the last step;
 * task_stat has already refused a symlinked task directory. */
static int task_file_stat(tfs_store_t *s, const char *id, const char *name, struct stat *st) {
  char rel[TFS_ID_MAX + 32];
  snprintf(rel, sizeof rel, "%s/%s", id, name);
  if (fstatat(tfs_store_tasks_fd(s), rel, st, AT_SYMLINK_NOFOLLOW))
    return -errno;
  return S_ISREG(st->st_mode) ? 0 : -ENOENT;
}

/* Appends a newline to a malloc'ed JSON text (jansson does not). */
static char *with_newline(char *js, size_t *len) {
  if (!js)
    return NULL;
  size_t n = strlen(js);
  if (n && js[n - 1] == '\n') {
    *len = n;
    return js;
  }
  char *r = realloc(js, n + 2);
  if (!r) {
    free(js);
    return NULL;
  }
  r[n] = '\n';
  r[n + 1] = 0;
  *len = n + 1;
  return r;
}

/* <mnt>/owner: the store's instance record as the core reads it, with
 * alive computed now. A store nobody has owned yet reads {"alive": false}. */
static int render_store_owner(mnt_t *m, char **out, size_t *len) {
  tfs_store_t *s = mnt_store(m);
  tfs_owner_t o;
  json_t *obj = NULL;
  int err = s ? tfs_store_owner(s, &o) : -ENOENT;
  if (!err) {
    char *js = tfs_owner_dump(&o);
    if (js)
      obj = json_loads(js, 0, NULL);
    free(js);
    if (!obj || !json_is_object(obj)) {
      json_decref(obj);
      return -EIO;
    }
    json_object_set_new(obj, "alive", json_boolean(o.alive));
  } else if (err == -ENOENT || err == TFS_ENOTASK) {
    obj = json_pack("{s:b}", "alive", 0);
  } else {
    return err;
  }
  *out = with_newline(json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER), len);
  json_decref(obj);
  return *out ? 0 : -ENOMEM;
}

/* tasks/<id>/record.json: the live record, so a dead supervisor reads as
 * lost. */
static int render_record(tfs_store_t *s, const char *id, char **out, size_t *len) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec); /* tfs_task_load fills it; init would leak */
  int err = tfs_task_load(s, id, &rec);
  if (!err) {
    *out = with_newline(tfs_record_dump(&rec), len);
    if (!*out)
      err = -ENOMEM;
  }
  tfs_record_free(&rec);
  return err;
}

/* tasks/<id>/owner: the supervisor, alive by its lock, never by its pid. */
static int render_task_owner(tfs_store_t *s, const char *id, char **out, size_t *len) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec); /* tfs_task_load fills it; init would leak */
  int err = tfs_task_load(s, id, &rec);
  if (err) {
    tfs_record_free(&rec);
    return err;
  }
  int alive = tfs_task_alive(s, id);
  char tbuf[TFS_TIME_BUF];
  json_t *obj = json_object();
  json_object_set_new(obj, "pid",
                      rec.supervisor_pid > 0 ? json_integer(rec.supervisor_pid) : json_null());
  json_object_set_new(obj, "started",
                      rec.supervisor_started_ms > 0
                          ? json_string(tfs_time_format(rec.supervisor_started_ms, tbuf))
                          : json_null());
  json_object_set_new(obj, "exe",
                      rec.supervisor_exe ? json_string(rec.supervisor_exe) : json_null());
  json_object_set_new(obj, "host",
                      rec.supervisor_host ? json_string(rec.supervisor_host) : json_null());
  json_object_set_new(obj, "alive", json_boolean(alive == 1));
  tfs_record_free(&rec);
  *out = with_newline(json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER), len);
  json_decref(obj);
  return *out ? 0 : -ENOMEM;
}

/* tasks/<id>/cancel: "0\n", or "1 <when> <who>\n" once a stop was asked
 * (pending, or acted on and kept in the record). */
static int render_cancel(tfs_store_t *s, const char *id, char **out, size_t *len) {
  char who[256] = "";
  int64_t at = 0;
  int r = tfs_cancel_query(s, id, who, sizeof who, &at);
  if (r < 0)
    return r;
  if (r == 0) {
    /* The supervisor clears the request once it has acted on it; the
     * record keeps who stopped the task, so cancel still says so. */
    tfs_record_t rec;
    memset(&rec, 0, sizeof rec); /* tfs_task_load fills it; init would leak */
    if (!tfs_task_load(s, id, &rec) && rec.cancel_by) {
      snprintf(who, sizeof who, "%s", rec.cancel_by);
      at = rec.cancel_ms;
      r = 1;
    }
    tfs_record_free(&rec);
  }
  char tbuf[TFS_TIME_BUF];
  int n = r ? asprintf(out, "1 %s %s\n", at > 0 ? tfs_time_format(at, tbuf) : "-", *who ? who : "-")
            : asprintf(out, "0\n");
  if (n < 0)
    return -ENOMEM;
  *len = (size_t)n;
  return 0;
}

/* Renders the content of a small file node. */
static int render(mnt_t *m, node_t t, size_t idx, int kind, char **out, size_t *len) {
  if (t == N_OWNER)
    return render_store_owner(m, out, len);
  tfs_store_t *s = mnt_store(m);
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
  }
  return -EINVAL;
}

static void dir_attr(mnt_t *m, struct stat *st, fuse_ino_t ino, const struct stat *from) {
  memset(st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_mode = S_IFDIR | 0500;
  st->st_nlink = 2;
  st->st_uid = m->uid;
  st->st_gid = m->gid;
  st->st_blksize = 4096;
  if (from) {
    st->st_atim = from->st_atim;
    st->st_mtim = from->st_mtim;
    st->st_ctim = from->st_ctim;
  } else {
    st->st_atim = st->st_mtim = st->st_ctim = m->mount_time;
  }
}

static void file_attr(mnt_t *m, struct stat *st, fuse_ino_t ino, mode_t mode, off_t size,
                      const struct stat *from) {
  dir_attr(m, st, ino, from);
  st->st_mode = S_IFREG | mode;
  st->st_nlink = 1;
  st->st_size = size;
  st->st_blocks = (size + 511) / 512;
}

/* Fills the attributes of any node from the store as it is now. */
static int node_attr(mnt_t *m, fuse_ino_t ino, struct stat *st) {
  size_t idx = 0;
  int kind = 0;
  node_t t = ino_decode(m, ino, &idx, &kind);
  tfs_store_t *s = mnt_store(m);
  struct stat bst, tst;
  char *buf = NULL;
  size_t len = 0;
  int err;

  switch (t) {
  case N_NONE:
    return -ENOENT;
  case N_ROOT:
  case N_BYKEY:
    dir_attr(m, st, ino, NULL);
    return 0;
  case N_TASKS:
    dir_attr(m, st, ino, s && !fstat(tfs_store_tasks_fd(s), &bst) ? &bst : NULL);
    return 0;
  case N_OWNER:
    err = render_store_owner(m, &buf, &len);
    free(buf);
    if (err)
      len = 0;
    file_attr(m, st, ino, 0400, (off_t)len,
              s && !fstatat(tfs_store_fd(s), "owner.json", &bst, AT_SYMLINK_NOFOLLOW) ? &bst
                                                                                      : NULL);
    return 0;
  case N_KEY: {
    char id[TFS_ID_MAX + 1];
    if (!s || tfs_key_lookup(s, m->keys.v[idx].name, id))
      return -ENOENT;
    dir_attr(m, st, ino, NULL);
    st->st_mode = S_IFLNK | 0777;
    st->st_nlink = 1;
    st->st_size = (off_t)(strlen("../tasks/") + strlen(id));
    return 0;
  }
  case N_TASK:
    break;
  }

  const char *id = m->tasks.v[idx].name;
  if (task_stat(s, id, &tst))
    return -ENOENT;
  switch (kind) {
  case K_TASKDIR:
    dir_attr(m, st, ino, &tst);
    return 0;
  case K_TRANSCRIPT:
    /* The backing file's size and mtime, every time: tail -f reads up to
     * st_size. A transcript not created yet reads as empty. */
    if (task_file_stat(s, id, "transcript", &bst))
      file_attr(m, st, ino, 0400, 0, &tst);
    else
      file_attr(m, st, ino, 0400, bst.st_size, &bst);
    return 0;
  default:
    /* The size a read of a fresh open will give. A corrupt record still
     * stats (size 0) so the task keeps listing; opening it fails. */
    err = render(m, t, idx, kind, &buf, &len);
    free(buf);
    if (err)
      len = 0;
    const char *backing = kind == K_CANCEL ? "cancel" : "record.json";
    file_attr(m, st, ino, kind == K_CANCEL ? 0600 : 0400, (off_t)len,
              task_file_stat(s, id, backing, &bst) ? &tst : &bst);
    return 0;
  }
}

/* How long the kernel may trust what we said. Sizes and mtimes of files
 * must be fresh at every stat (tail -f reads up to st_size), so files get
 * 0. Directories only carry permissions, and with default_permissions every
 * path walk checks them: caching them saves a GETATTR per component. The
 * fixed top-level nodes never change; a task directory is cached for a
 * second, which is safe because its name is looked up again at every walk
 * (entry timeout 0), so a pruned task vanishes at once. The four names
 * inside a task directory never change either. */
static double attr_timeout(mnt_t *m, fuse_ino_t ino) {
  size_t idx = 0;
  int kind = 0;
  switch (ino_decode(m, ino, &idx, &kind)) {
  case N_ROOT:
  case N_TASKS:
  case N_BYKEY:
    return 60.0;
  case N_TASK:
    return kind == K_TASKDIR ? 1.0 : 0.0;
  default:
    return 0.0;
  }
}

static void reply_entry(fuse_req_t req, mnt_t *m, fuse_ino_t ino, double entry_timeout) {
  struct fuse_entry_param e;
  memset(&e, 0, sizeof e);
  int err = node_attr(m, ino, &e.attr);
  if (err) {
    fuse_reply_err(req, -err);
    return;
  }
  e.ino = ino;
  e.attr_timeout = attr_timeout(m, ino);
  e.entry_timeout = entry_timeout;
  fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  mnt_t *m = M(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = ino_decode(m, parent, &idx, &kind);
  tfs_store_t *s;

  if (strlen(name) > 255) {
    fuse_reply_err(req, ENAMETOOLONG);
    return;
  }
  switch (t) {
  case N_ROOT:
    if (!strcmp(name, "owner"))
      reply_entry(req, m, INO_OWNER, 60.0);
    else if (!strcmp(name, "tasks"))
      reply_entry(req, m, INO_TASKS, 60.0);
    else if (!strcmp(name, "by-key"))
      reply_entry(req, m, INO_BYKEY, 60.0);
    else
      fuse_reply_err(req, ENOENT);
    return;
  case N_TASKS: {
    struct stat st;
    s = mnt_store(m);
    if (!tfs_id_valid(name) || task_stat(s, name, &st)) {
      fuse_reply_err(req, ENOENT);
      return;
    }
    int err = tab_intern(&m->tasks, name, &idx);
    if (err) {
      fuse_reply_err(req, -err);
      return;
    }
    reply_entry(req, m, task_ino(idx, K_TASKDIR), 0.0);
    return;
  }
  case N_BYKEY: {
    char id[TFS_ID_MAX + 1];
    s = mnt_store(m);
    if (!s || !tfs_key_valid(name) || tfs_key_lookup(s, name, id)) {
      fuse_reply_err(req, ENOENT);
      return;
    }
    int err = tab_intern(&m->keys, name, &idx);
    if (err) {
      fuse_reply_err(req, -err);
      return;
    }
    reply_entry(req, m, key_ino(idx), 0.0);
    return;
  }
  case N_TASK:
    if (kind == K_TASKDIR) {
      for (size_t i = 0; i < 4; i++) {
        if (!strcmp(name, task_files[i])) {
          reply_entry(req, m, task_ino(idx, task_file_kinds[i]), 60.0);
          return;
        }
      }
      fuse_reply_err(req, ENOENT);
      return;
    }
    fuse_reply_err(req, ENOTDIR);
    return;
  case N_OWNER:
  case N_KEY:
    fuse_reply_err(req, ENOTDIR);
    return;
  default:
    fuse_reply_err(req, ENOENT);
  }
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  struct stat st;
  int err = node_attr(M(req), ino, &st);
  if (err)
    fuse_reply_err(req, -err);
  else
    fuse_reply_attr(req, &st, attr_timeout(M(req), ino));
}

/* Only `cancel` may be truncated to zero (by its owner), which is what a
 * shell's `>` becomes when atomic O_TRUNC is off; every other attribute
 * change is refused. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = ino_decode(m, ino, &idx, &kind);
  int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
              FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (t == N_TASK && kind == K_CANCEL && attr->st_size == 0 &&
        !(to_set & ~(FUSE_SET_ATTR_SIZE | times)) && fuse_req_ctx(req)->uid == m->uid) {
      op_getattr(req, ino, fi);
      return;
    }
    fuse_reply_err(req,
                   (t == N_TASK && kind == K_TASKDIR) || t == N_ROOT || t == N_TASKS || t == N_BYKEY
                       ? EISDIR
                       : EACCES);
    return;
  }
  fuse_reply_err(req, EPERM);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  mnt_t *m = M(req);
  size_t idx = 0;
  int kind = 0;
  char id[TFS_ID_MAX + 1], target[TFS_ID_MAX + 16];
  tfs_store_t *s = mnt_store(m);
  if (ino_decode(m, ino, &idx, &kind) != N_KEY) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  if (!s || tfs_key_lookup(s, m->keys.v[idx].name, id)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  snprintf(target, sizeof target, "../tasks/%s", id);
  fuse_reply_readlink(req, target);
}

/* The namespace is the store's: nothing can be created, removed or renamed
 * through the mount. EACCES is what a non-root caller already gets from the
 * kernel (directories are 0500); root gets the same answer from here. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  fuse_reply_err(req, EACCES);
}
static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  fuse_reply_err(req, EACCES);
}
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  fuse_reply_err(req, EACCES);
}
static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  fuse_reply_err(req, EACCES);
}
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
  fuse_reply_err(req, EACCES);
}
static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  fuse_reply_err(req, EACCES);
}
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi) {
  fuse_reply_err(req, EACCES);
}

/* Opens a task's transcript for reading. O_NONBLOCK and the type check
 * keep a FIFO or device planted in the store from hanging the mount (every
 * request is served on one thread). */
static int open_transcript(tfs_store_t *s, const char *id) {
  if (!s)
    return -ENOENT;
  int fd = tfs_task_openat(s, id, "transcript", O_RDONLY | O_NONBLOCK, 0);
  if (fd < 0)
    return fd;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return TFS_ECORRUPT;
  }
  return fd;
}

/* Every open handle is on the mount's list until the kernel releases it, so
 * that the ones still open at unmount are freed too. */
static void file_track(mnt_t *m, tfile_t *f) {
  f->all_prev = NULL;
  f->all_next = m->open_files;
  if (m->open_files)
    m->open_files->all_prev = f;
  m->open_files = f;
}

static void file_free(mnt_t *m, tfile_t *f) {
  if (f->all_prev)
    f->all_prev->all_next = f->all_next;
  else if (m->open_files == f)
    m->open_files = f->all_next;
  if (f->all_next)
    f->all_next->all_prev = f->all_prev;
  if (f->kind == K_TRANSCRIPT)
    watch_detach(m, f);
  if (f->fd >= 0)
    close(f->fd);
  free(f->buf);
  free(f);
}

void ops_free_open_files(mnt_t *m) {
  while (m->open_files)
    file_free(m, m->open_files);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = ino_decode(m, ino, &idx, &kind);
  int acc = fi->flags & O_ACCMODE;
  int err;

  if (t != N_OWNER && t != N_TASK) {
    fuse_reply_err(req, t == N_NONE ? ENOENT : EISDIR);
    return;
  }
  if (t == N_TASK && kind == K_TASKDIR) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  if (acc != O_RDONLY) {
    /* Only cancel takes writes, and only from the store owner's uid: the
     * kernel's permission check lets root through, this one does not. */
    if (t != N_TASK || kind != K_CANCEL || fuse_req_ctx(req)->uid != m->uid) {
      fuse_reply_err(req, EACCES);
      return;
    }
  }
  tfs_store_t *s = mnt_store(m);
  struct stat st;
  if (t == N_TASK && task_stat(s, m->tasks.v[idx].name, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }

  tfile_t *f = calloc(1, sizeof *f);
  if (!f) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  f->kind = t == N_OWNER ? -1 : kind;
  f->task = idx;
  f->for_write = acc != O_RDONLY;
  f->fd = -1;
  if (t == N_TASK && kind == K_TRANSCRIPT) {
    f->fd = open_transcript(s, m->tasks.v[idx].name);
    if (f->fd < 0 && f->fd != -ENOENT) {
      err = f->fd;
      free(f);
      fuse_reply_err(req, to_errno(err));
      return;
    }
    if (f->fd < 0)
      f->fd = -1;
    watch_attach(m, f);
  } else if (acc != O_WRONLY) {
    /* A write-only open (`echo 1 > cancel`) never reads, so the file is
     * rendered only for a read open: rendering cancel loads record.json and
     * probes the lock, work a stop request should not wait for. */
    err = render(m, t, idx, kind, &f->buf, &f->len);
    if (err) {
      if (err == TFS_ECORRUPT)
        mnt_log(m, LOG_ERR, "task %s: record.json is corrupt; reading it gives EIO",
                m->tasks.v[idx].name);
      free(f);
      fuse_reply_err(req, to_errno(err));
      return;
    }
  }
  fi->direct_io = 1;
  fi->keep_cache = 0;
  fi->fh = (uintptr_t)f;
  file_track(m, f);
  if (fuse_reply_open(req, fi) == -ENOENT) {
    /* The caller was interrupted; nobody will release this handle. */
    file_free(m, f);
  }
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  if (f->kind != K_TRANSCRIPT) {
    if ((size_t)off >= f->len)
      fuse_reply_buf(req, NULL, 0);
    else
      fuse_reply_buf(req, f->buf + off, size < f->len - (size_t)off ? size : f->len - (size_t)off);
    return;
  }
  if (f->fd < 0) {
    /* Opened before the supervisor made the transcript: try again. */
    tfs_store_t *s = mnt_store(m);
    int fd = open_transcript(s, m->tasks.v[f->task].name);
    if (fd >= 0)
      f->fd = fd;
  }
  if (f->fd < 0) {
    fuse_reply_buf(req, NULL, 0);
    return;
  }
  if (size > READ_MAX)
    size = READ_MAX;
  /* The reply names the transcript's fd and offset instead of carrying the
   * bytes: libfuse splices them from the page cache into /dev/fuse when the
   * kernel allows it (one copy instead of two), and otherwise reads them
   * itself. The size is clipped to what the file holds now, so the reply
   * never promises bytes that are not there (the transcript only grows),
   * and a read at the end gets an empty reply (EOF). */
  struct stat st;
  if (fstat(f->fd, &st)) {
    fuse_reply_err(req, errno);
    return;
  }
  if (off < 0 || off >= st.st_size) {
    fuse_reply_buf(req, NULL, 0);
    return;
  }
  if ((uint64_t)size > (uint64_t)(st.st_size - off))
    size = (size_t)(st.st_size - off);
  if ((uint64_t)off + size > f->seen)
    f->seen = (uint64_t)off + size;
  struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
  bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
  bv.buf[0].fd = f->fd;
  bv.buf[0].pos = off;
  fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

/* Writes to cancel: exactly "1" or "1\n" in one write records a stop
 * request; a lone "\n" after an accepted "1" is accepted too (a writer that
 * splits the line). Anything else is EINVAL and records nothing. A task
 * that has already ended gives ESRCH ("No such process"). */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  const struct fuse_ctx *ctx = fuse_req_ctx(req);
  if (f->kind != K_CANCEL || ctx->uid != m->uid) {
    fuse_reply_err(req, EACCES);
    return;
  }
  f->wrote = 1;
  int one = (size == 1 && buf[0] == '1') || (size == 2 && buf[0] == '1' && buf[1] == '\n');
  if (!one) {
    if (size == 1 && buf[0] == '\n' && f->accepted)
      fuse_reply_write(req, size);
    else
      fuse_reply_err(req, EINVAL);
    return;
  }
  tfs_store_t *s = mnt_store(m);
  const char *id = m->tasks.v[f->task].name;
  char who[96];
  snprintf(who, sizeof who, "mount uid %u pid %d", (unsigned)ctx->uid, (int)ctx->pid);
  int err = s ? tfs_cancel_request(s, id, who) : -ENOENT;
  if (err) {
    if (err != TFS_EFINISHED)
      mnt_log(m, LOG_ERR, "task %s: cannot record the stop request: %s", id, tfs_strerror(err));
    fuse_reply_err(req, to_errno(err));
    return;
  }
  mnt_log(m, LOG_INFO, "task %s: stop requested by %s", id, who);
  f->accepted = 1;
  fuse_reply_write(req, size);
}

/* A cancel opened for writing and closed before anything was written
 * (`: > cancel`) is empty input: close() reports EINVAL, and nothing is
 * recorded. A shell that dup2()s the fd closes the original before writing
 * through the copy; that early close fails too, but shells ignore it and the
 * write that follows is judged on its own. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  fuse_reply_err(req, f && f->kind == K_CANCEL && f->for_write && !f->wrote ? EINVAL : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  if (f)
    file_free(m, f);
  fuse_reply_err(req, 0);
}

/* Readiness of an open transcript: readable when it holds bytes past the
 * furthest point this handle has read, or when the task has ended (the
 * reader will see EOF). Otherwise the poll handle is kept and woken by the
 * store watch. Small files are always readable. Never ENOSYS: one ENOSYS
 * turns poll off for the whole mount. */
static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                    struct fuse_pollhandle *ph) {
  mnt_t *m = M(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  if (f->kind != K_TRANSCRIPT) {
    if (ph)
      fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLRDNORM | (f->kind == K_CANCEL ? POLLOUT | POLLWRNORM : 0));
    return;
  }
  if (ph) {
    if (f->ph)
      fuse_pollhandle_destroy(f->ph);
    f->ph = ph;
  }
  tfs_store_t *s = mnt_store(m);
  const char *id = m->tasks.v[f->task].name;
  if (f->fd < 0) {
    int fd = open_transcript(s, id);
    if (fd >= 0)
      f->fd = fd;
  }
  struct stat st;
  int ready = f->fd >= 0 && !fstat(f->fd, &st) && (uint64_t)st.st_size > f->seen;
  if (!ready) {
    tfs_record_t rec;
    memset(&rec, 0, sizeof rec); /* tfs_task_load fills it; init would leak */
    int err = s ? tfs_task_load(s, id, &rec) : TFS_ENOTASK;
    ready = err || tfs_state_terminal(rec.state);
    tfs_record_free(&rec);
  }
  if (ready && f->ph) {
    fuse_pollhandle_destroy(f->ph);
    f->ph = NULL;
  }
  fuse_reply_poll(req, ready ? POLLIN | POLLRDNORM : 0);
}

/* An open directory: a snapshot of its names taken at opendir (and again
 * at a rewind), so offsets are plain indexes that stay valid however the
 * store changes while it is read. */
typedef struct {
  node_t t;
  size_t idx;
  char **names;
  size_t n;
  int served;
} dirh_t;

static void dirh_clear(dirh_t *d) {
  for (size_t i = 0; i < d->n; i++)
    free(d->names[i]);
  free(d->names);
  d->names = NULL;
  d->n = 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_keys(tfs_store_t *s, char ***names, size_t *n) {
  *names = NULL;
  *n = 0;
  int fd = openat(tfs_store_fd(s), "keys", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return -errno;
  }
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(dir))) {
    /* A key is a regular file; anything else planted in keys/ is not one,
     * and listing it would show a name that lookup then refuses. */
    if (!tfs_key_valid(de->d_name) || (de->d_type != DT_REG && de->d_type != DT_UNKNOWN))
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 64;
      char **v = realloc(*names, cap * sizeof *v);
      if (!v)
        break;
      *names = v;
    }
    (*names)[(*n)++] = strdup(de->d_name);
  }
  closedir(dir);
  if (*n)
    qsort(*names, *n, sizeof **names, cmp_str);
  return 0;
}

static int dirh_fill(mnt_t *m, dirh_t *d) {
  dirh_clear(d);
  tfs_store_t *s = mnt_store(m);
  if (!s || (d->t != N_TASKS && d->t != N_BYKEY))
    return 0;
  if (d->t == N_TASKS) {
    int err = tfs_task_ids(s, &d->names, &d->n);
    if (err)
      return err;
    /* The core lists every well-formed name so that a damaged task can be
     * forgotten; the mount shows only real directories, the names a lookup
     * accepts (a symlink planted in tasks/ is not a task). */
    size_t kept = 0;
    struct stat st;
    for (size_t i = 0; i < d->n; i++) {
      if (task_stat(s, d->names[i], &st) == 0)
        d->names[kept++] = d->names[i];
      else
        free(d->names[i]);
    }
    d->n = kept;
    return 0;
  }
  return list_keys(s, &d->names, &d->n);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = ino_decode(m, ino, &idx, &kind);
  struct stat st;
  if (t == N_NONE || t == N_OWNER || t == N_KEY || (t == N_TASK && kind != K_TASKDIR)) {
    fuse_reply_err(req, t == N_NONE ? ENOENT : ENOTDIR);
    return;
  }
  if (t == N_TASK && task_stat(mnt_store(m), m->tasks.v[idx].name, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  dirh_t *d = calloc(1, sizeof *d);
  if (!d) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  d->t = t;
  d->idx = idx;
  int err = dirh_fill(m, d);
  if (err) {
    mnt_log(m, LOG_ERR, "cannot list the store: %s", tfs_strerror(err));
    free(d);
    fuse_reply_err(req, to_errno(err));
    return;
  }
  fi->fh = (uintptr_t)d;
  fi->cache_readdir = 0;
  if (fuse_reply_open(req, fi) == -ENOENT) {
    dirh_clear(d);
    free(d);
  }
}

/* Name and type of entry i of a directory (after "." and ".."). */
static int dirh_entry(mnt_t *m, dirh_t *d, size_t i, const char **name, struct stat *st) {
  static const char *const root_names[] = {"owner", "tasks", "by-key"};
  static const fuse_ino_t root_inos[] = {INO_OWNER, INO_TASKS, INO_BYKEY};
  size_t idx;
  memset(st, 0, sizeof *st);
  switch (d->t) {
  case N_ROOT:
    if (i >= 3)
      return 0;
    *name = root_names[i];
    st->st_ino = root_inos[i];
    st->st_mode = i == 0 ? S_IFREG : S_IFDIR;
    return 1;
  case N_TASK:
    if (i >= 4)
      return 0;
    *name = task_files[i];
    st->st_ino = task_ino(d->idx, task_file_kinds[i]);
    st->st_mode = S_IFREG;
    return 1;
  case N_TASKS:
  case N_BYKEY:
    if (i >= d->n)
      return 0;
    *name = d->names[i];
    if (d->t == N_TASKS) {
      if (tab_intern(&m->tasks, *name, &idx))
        return -1;
      st->st_ino = task_ino(idx, K_TASKDIR);
      st->st_mode = S_IFDIR;
    } else {
      if (tab_intern(&m->keys, *name, &idx))
        return -1;
      st->st_ino = key_ino(idx);
      st->st_mode = S_IFLNK;
    }
    return 1;
  default:
    return 0;
  }
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi) {
  mnt_t *m = M(req);
  dirh_t *d = (dirh_t *)(uintptr_t)fi->fh;
  if (off == 0 && d->served)
    dirh_fill(m, d); /* rewinddir: see the store as it is now */
  d->served = 1;
  char *buf = malloc(size);
  if (!buf) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  size_t pos = 0;
  for (size_t i = (size_t)off;; i++) {
    const char *name;
    struct stat st;
    if (i == 0 || i == 1) {
      memset(&st, 0, sizeof st);
      st.st_ino = ino;
      st.st_mode = S_IFDIR;
      name = i == 0 ? "." : "..";
    } else {
      int r = dirh_entry(m, d, i - 2, &name, &st);
      if (r < 0) {
        if (!pos) {
          free(buf);
          fuse_reply_err(req, ENOMEM);
          return;
        }
        break;
      }
      if (!r)
        break;
    }
    size_t need = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(i + 1));
    if (need > size - pos)
      break;
    pos += need;
  }
  fuse_reply_buf(req, buf, pos);
  free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dirh_t *d = (dirh_t *)(uintptr_t)fi->fh;
  if (d) {
    dirh_clear(d);
    free(d);
  }
  fuse_reply_err(req, 0);
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
  /* `echo 1 > cancel` should arrive as one open(O_TRUNC), not a truncate. */
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
    conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  /* Nothing is cached, so there is nothing to invalidate. */
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  /* Transcript reads are answered from the backing fd (fuse_reply_data);
   * splice lets those bytes go to /dev/fuse without a copy through our
   * memory. Every file keeps direct_io, so `tail -f` never stops at a stale
   * size. */
  if (conn->capable & FUSE_CAP_SPLICE_WRITE)
    conn->want |= FUSE_CAP_SPLICE_WRITE;
  if (conn->capable & FUSE_CAP_SPLICE_MOVE)
    conn->want |= FUSE_CAP_SPLICE_MOVE;
}

const struct fuse_lowlevel_ops tfs_fs_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_unlink,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .release = op_release,
    .flush = op_flush,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .create = op_create,
    .poll = op_poll,
};
