/* Internal pieces of the FUSE mount, shared by the files in fs/ only. */
#ifndef TASKFS_FS_FS_H
#define TASKFS_FS_FS_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <sys/stat.h>
#include <uv.h>

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
#define INO_TASK_BASE 16
#define INO_KEY_BIT (1ULL << 62)

enum { K_TASKDIR = 0, K_RECORD = 1, K_TRANSCRIPT = 2, K_CANCEL = 3, K_TOWNER = 4, K_NKINDS = 5 };

struct tfile;

/* One name in a name table, with the per-task watch state (unused for
 * keys). */
typedef struct {
  char *name;
  int wd;              /* inotify watch on the task dir, -1 if none */
  struct tfile *files; /* open transcript handles of this task */
} tab_entry_t;

typedef struct {
  tab_entry_t *v; /* index -> entry */
  size_t n, cap;
  uint32_t *hash; /* open addressing: index + 1, 0 = empty */
  size_t hcap;    /* power of two */
} nametab_t;

int tab_intern(nametab_t *t, const char *name, size_t *idx);
int tab_find(const nametab_t *t, const char *name, size_t *idx);
void tab_free(nametab_t *t);

/* An open file. */
typedef struct tfile {
  int kind;
  size_t task; /* task index */
  char *buf;   /* content fixed at open (record.json, owner, cancel) */
  size_t len;
  int fd;        /* transcript: backing fd, -1 until it exists */
  uint64_t seen; /* transcript: end of the furthest read, for poll */
  struct fuse_pollhandle *ph;
  struct tfile *next; /* in the task's list of open transcripts */
  int accepted;       /* cancel: a "1" was accepted on this handle */
  int for_write;      /* cancel: opened for writing */
  int wrote;          /* cancel: some write reached this handle */
  struct tfile *all_prev, *all_next; /* every open file, freed at unmount */
} tfile_t;

typedef struct {
  char *state_dir;
  tfs_store_t *store; /* NULL while the store directory is absent */
  uid_t uid; /* owner of <state>/tasks: owns every file */
  gid_t gid;
  struct timespec mount_time;
  int use_syslog;

  struct fuse_session *se;
  uv_loop_t loop;
  uv_poll_t fuse_watcher;
  uv_poll_t inotify_watcher;
  uv_signal_t sig[3];
  int inotify_fd;
  int stopping;

  nametab_t tasks;
  nametab_t keys;

  char *rbuf; /* transcript read buffer, reused */
  size_t rbuf_cap;
  tfile_t *open_files; /* handles the kernel has not released yet */
} mnt_t;

/* Frees the handles still open when the session ends (an unmount does not
 * release the files that are open at that moment). */
void ops_free_open_files(mnt_t *m);

void mnt_log(mnt_t *m, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The current store, reopened if the store directory was replaced. */
tfs_store_t *mnt_store(mnt_t *m);

/* Task watches (fs/watch.c). */
int watch_init(mnt_t *m);
void watch_close(mnt_t *m);
void watch_attach(mnt_t *m, tfile_t *f);
void watch_detach(mnt_t *m, tfile_t *f);

extern const struct fuse_lowlevel_ops tfs_fs_ops;

#endif
