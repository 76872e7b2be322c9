/* Internal pieces of the FUSE mount, shared by the files in fs/ only.
 *
 * One job per file: node.c maps inode numbers to nodes and fills their
 * attributes, lookup.c walks names, bykey.c is the by-key/ directory,
 * render.c renders the small files, file.c opens, reads and releases
 * files, transcript.c serves transcript reads and poll, cancel.c takes
 * writes to cancel, control.c writes to control and stdin, queues.c is
 * the queues/ directory, dir.c lists directories, watch.c wakes pollers (on
 * the live hub's watch, live/live.h), ops.c
 * is the operation table (and refuses every change to the namespace), and
 * mount.c and point.c run the mount. Every symbol outside its file carries
 * the fs_ prefix. */
#ifndef TASKFS_FS_FS_H
#define TASKFS_FS_FS_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <sys/stat.h>
#include <uv.h>

#include "live/live.h"
#include "taskfs/mount.h"
#include "taskfs/taskfs.h"

/* Inode numbers. The fixed nodes come first; every task gets an index (in
 * the order the mount first saw it, stable for the life of the mount) and
 * owns eight inode numbers, one per file kind; every key gets an index in a
 * second table whose inode numbers carry a high bit. Both directions are
 * O(1): index -> name is an array, name -> index a hash table. */
#define INO_ROOT 1
#define INO_OWNER 2
#define INO_TASKS 3
#define INO_BYKEY 4
#define INO_QUEUES 5
#define INO_TASK_BASE 16
#define INO_KEY_BIT (1ULL << 62)
#define INO_QUEUE_BIT (1ULL << 61) /* queues/<name> and its files: 4 numbers each */

/* The kinds of a task's inode numbers: its directory, then its files in
 * the order of the core's views (K_RECORD is TFS_VIEW_RECORD + 1, ...). */
enum {
  K_TASKDIR = 0,
  K_RECORD = 1,
  K_TRANSCRIPT = 2,
  K_CANCEL = 3,
  K_TOWNER = 4,
  K_CONTROL = 5,
  K_STDIN = 6,
  K_NKINDS = 7
};
/* The kinds of a queue's inode numbers (queues.c); an open file of one
 * has kind FS_QFILE + its kind. */
enum { Q_DIR = 0, Q_PARALLEL = 1, Q_PAUSED = 2, Q_TASKS = 3, Q_NKINDS = 4 };
#define FS_QFILE 16
#define FS_KIND_VIEW(kind) ((tfs_view_t)((kind)-1))

/* What an inode number names. */
typedef enum { N_NONE, N_ROOT, N_OWNER, N_TASKS, N_BYKEY, N_TASK, N_KEY, N_QUEUES, N_QUEUE } node_t;

/* The files of a task directory as the mount shows them, in listing
 * order (the core's views): the one table lookup, readdir and getattr
 * read. Names come from tfs_view_name(). */
#define FS_NTASKFILES TFS_VIEW_COUNT
typedef struct {
  int kind;
  mode_t mode;
  tfs_task_file_t backing; /* the store file whose times (and size) it shows */
} fs_task_file_t;
extern const fs_task_file_t fs_task_files[FS_NTASKFILES];
/* The name of a file kind (K_RECORD...). */
#define FS_KIND_NAME(kind) tfs_view_name(FS_KIND_VIEW(kind))

/* One name in a name table. */
typedef struct {
  char *name;
} tab_entry_t;

typedef struct {
  tab_entry_t *v; /* index -> entry */
  size_t n, cap;
  uint32_t *hash; /* open addressing: index + 1, 0 = empty */
  size_t hcap;    /* power of two */
} nametab_t;

int fs_tab_intern(nametab_t *t, const char *name, size_t *idx);
int fs_tab_find(const nametab_t *t, const char *name, size_t *idx);
void fs_tab_free(nametab_t *t);

/* An open file. */
typedef struct tfile {
  int kind;
  size_t task; /* task index */
  char *buf;   /* content fixed at open (record.json, owner, cancel) */
  size_t len;
  int fd;        /* transcript: backing fd, -1 until it exists */
  uint64_t seen; /* transcript: end of the furthest read (or, cached, told), for poll */
  int cached;    /* transcript read through the page cache (fs/transcript.c) */
  struct fuse_pollhandle *ph;
  live_listener_t *l;                /* transcript: on the hub's watch of its task while open */
  struct mnt *m;                     /* transcript: the mount, for the watch's calls */
  int accepted;                      /* cancel: a "1" was accepted on this handle */
  int for_write;                     /* cancel, control, stdin, queue files: opened for writing */
  int wrote;                         /* some write reached this handle */
  struct tfile *all_prev, *all_next; /* every open file, freed at unmount */
} tfile_t;

typedef struct mnt {
  char *state_dir;
  /* The live hub (live/live.h) on the loop: the store for the mount's life
   * (refreshed in place; while it is absent or refused tasks/ reads empty)
   * and the watch that wakes pollers (fs/watch.c). */
  live_hub_t *hub;
  uid_t uid; /* the mount's user, the store's owner: owns every file */
  gid_t gid;
  struct timespec mount_time;
  int use_syslog;

  struct fuse_session *se;
  struct fuse_buf fbuf; /* the request being read from /dev/fuse */
  uv_loop_t loop;
  uv_poll_t fuse_watcher;
  uv_signal_t sig[3];
  int stopping;

  nametab_t tasks;
  nametab_t keys;
  nametab_t queues;

  tfile_t *open_files; /* handles the kernel has not released yet */

  /* Transcript reads (fs_transcript_sizes, set at the session's init): the
   * largest reply, which is also the largest request the kernel makes
   * (max_write sets max_pages), and the st_blksize of transcripts. */
  size_t read_max;
  blksize_t io_size;
} mnt_t;

/* ---- fs/mount.c ---- */
void fs_log(mnt_t *m, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The current store, reopened if the store directory was replaced. */
tfs_store_t *fs_store(mnt_t *m);

/* ---- fs/node.c ---- */
node_t fs_ino_decode(mnt_t *m, fuse_ino_t ino, size_t *idx, int *kind);
fuse_ino_t fs_task_ino(size_t idx, int kind);
fuse_ino_t fs_key_ino(size_t idx);
int fs_name_ino(mnt_t *m, node_t dir, const char *name, fuse_ino_t *ino);
int fs_errno(int err);
int fs_task_stat(tfs_store_t *s, const char *id, struct stat *st);
void fs_dir_attr(mnt_t *m, struct stat *st, fuse_ino_t ino, const struct stat *from);
int fs_node_attr(mnt_t *m, fuse_ino_t ino, struct stat *st);
double fs_attr_timeout(mnt_t *m, fuse_ino_t ino);
void fs_reply_entry(fuse_req_t req, mnt_t *m, fuse_ino_t ino, double entry_timeout);

/* ---- fs/bykey.c ---- */
void fs_bykey_lookup(fuse_req_t req, mnt_t *m, const char *name);
int fs_key_attr(mnt_t *m, size_t idx, fuse_ino_t ino, struct stat *st);
void fs_op_readlink(fuse_req_t req, fuse_ino_t ino);

/* ---- fs/render.c ---- */
int fs_render(mnt_t *m, node_t t, size_t idx, int kind, char **out, size_t *len);

/* ---- fs/file.c ---- */
/* Frees the handles still open when the session ends (an unmount does not
 * release the files that are open at that moment). */
void fs_free_open_files(mnt_t *m);
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ---- fs/transcript.c ---- */
int fs_transcript_open(tfs_store_t *s, const char *id);
/* The largest transcript read reply that libfuse can splice without
 * privileges, and the block size to advertise for transcripts. */
void fs_transcript_sizes(size_t *read_max, blksize_t *io_size);
int fs_transcript_ready(mnt_t *m, tfile_t *f);
/* 1 when the task of f has ended (or cannot be read): its transcript no
 * longer grows. */
int fs_transcript_final(mnt_t *m, tfile_t *f);
void fs_transcript_read(fuse_req_t req, mnt_t *m, tfile_t *f, size_t size, off_t off);
void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                struct fuse_pollhandle *ph);

/* ---- fs/queues.c ---- */
void fs_queues_lookup(fuse_req_t req, mnt_t *m, const char *name);
void fs_queue_lookup(fuse_req_t req, mnt_t *m, size_t idx, const char *name);
fuse_ino_t fs_queue_ino(size_t idx, int kind);
int fs_queue_attr(mnt_t *m, size_t idx, int kind, fuse_ino_t ino, struct stat *st);
int fs_queue_render(mnt_t *m, size_t idx, int kind, char **out, size_t *len);
/* A write to parallel or paused: 0, or an errno (EINVAL for bad input). */
int fs_queue_write(mnt_t *m, tfile_t *f, const char *buf, size_t size);
/* The names of a queue directory's files, in listing order. */
const char *fs_queue_file_name(int kind);
mode_t fs_queue_file_mode(int kind);

/* ---- fs/control.c ---- */
/* A write to control (one request per line) or stdin: the bytes taken, or
 * -errno (EINVAL for a line that is no request). */
ssize_t fs_control_write(mnt_t *m, tfile_t *f, const char *buf, size_t size,
                         const struct fuse_ctx *ctx);
/* 1 if the task was started with a stdin (its stdin file is shown). */
int fs_task_has_stdin(mnt_t *m, const char *id);

/* ---- fs/cancel.c ---- */
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                 struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ---- fs/lookup.c ---- */
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                   struct fuse_file_info *fi);

/* ---- fs/dir.c ---- */
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ---- fs/watch.c ---- */
void fs_watch_attach(mnt_t *m, tfile_t *f);
void fs_watch_detach(mnt_t *m, tfile_t *f);

/* ---- fs/ops.c ---- */
extern const struct fuse_lowlevel_ops fs_ops;

#endif
