/* Finding, creating and opening the store directory. */
#include "core/internal.h"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

/* Writes dir (made absolute against the current directory) into buf. */
static int put_path(char *buf, size_t len, const char *dir, const char *suffix) {
  char cwd[PATH_MAX];
  int n;
  if (dir[0] == '/') {
    n = snprintf(buf, len, "%s%s", dir, suffix);
  } else {
    if (!getcwd(cwd, sizeof cwd))
      return -errno;
    n = snprintf(buf, len, "%s/%s%s", cwd, dir, suffix);
  }
  if (n < 0 || (size_t)n >= len)
    return -ENAMETOOLONG;
  /* A trailing slash would make paths shown to users look odd. */
  while (n > 1 && buf[n - 1] == '/')
    buf[--n] = '\0';
  return 0;
}

int tfs_store_resolve(const char *explicit_dir, char *buf, size_t len) {
  const char *v;
  /* An empty name is a mistake ("$UNSET"), never the default store: a
   * prune meant for a test store must not reach the real one. */
  if (explicit_dir)
    return *explicit_dir ? put_path(buf, len, explicit_dir, "") : -EINVAL;
  if ((v = getenv("TASKFS_STATE_DIR")))
    return *v ? put_path(buf, len, v, "") : -EINVAL;
  /* The XDG spec says relative values are invalid and must be ignored. */
  if ((v = getenv("XDG_STATE_HOME")) && v[0] == '/')
    return put_path(buf, len, v, "/taskfs");
  v = getenv("HOME");
  if (!v || v[0] != '/') {
    struct passwd *pw = getpwuid(getuid());
    if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
      return -ENOENT;
    v = pw->pw_dir;
  }
  return put_path(buf, len, v, "/.local/state/taskfs");
}

/* mkdir -p with mode 0700 for every directory we create; chmod afterwards
 * makes the mode independent of the umask. Existing ones are left alone. */
static int mkdir_p(const char *path) {
  char tmp[PATH_MAX];
  size_t n = strlen(path);
  if (n >= sizeof tmp)
    return -ENAMETOOLONG;
  memcpy(tmp, path, n + 1);
  for (char *p = tmp + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(tmp, 0700) == 0) {
        if (chmod(tmp, 0700))
          return -errno;
      } else if (errno != EEXIST) {
        return -errno;
      }
      *p = c;
      if (!c)
        break;
    }
  }
  return 0;
}

static int sub_dir(int fd, const char *name, int create) {
  if (create) {
    if (mkdirat(fd, name, 0700) == 0) {
      if (fchmodat(fd, name, 0700, 0))
        return -errno;
    } else if (errno != EEXIST) {
      return -errno;
    }
  }
  int sfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return sfd < 0 ? tfs__open_err(errno) : sfd;
}

/* Asks the filesystem to place each task directory in a part of the disk
 * of its own (ext4's top-directory hint, `chattr +T`; Orlov spreads the
 * children of such a directory over the block groups, and a file goes to
 * its directory's group). Why: a task frees about four inodes (the two
 * records replaced by rename, the reserve, the doorbell), and on an ext4
 * without a journal the inode allocator walks past every inode freed in
 * the last minute of a group, one buffer lookup each (recently_deleted),
 * before it takes a free one: with every task of a busy store in one
 * group, each of the ~11 files a start creates walked hundreds
 * (bench/analysis.md, Row 11, "fifth round"). Other filesystems ignore or
 * refuse the flag; nothing depends on it. */
static void spread_children(int fd) {
  int flags = 0;
  if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && !(flags & FS_TOPDIR_FL)) {
    flags |= FS_TOPDIR_FL;
    (void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
  }
}

/* "uid 1001 (alice)", or "uid 1001" for a uid without a name. */
static void user_words(uid_t uid, char *buf, size_t len) {
  struct passwd pw, *res = NULL;
  char tmp[1024];
  if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res && res->pw_name)
    snprintf(buf, len, "uid %ld (%s)", (long)uid, res->pw_name);
  else
    snprintf(buf, len, "uid %ld", (long)uid);
}

/* The one check, for the store's three directories and a supervisor's task
 * directory: fd must belong to owner (the caller's euid, or for a foreign
 * store its owner) and be writable by nobody else. A directory another
 * user owns, or one others may write to, can hold records, keys, stop
 * requests and task directories planted by someone else: a store is used
 * only when all of it can have been written by its owner (or root) alone.
 * heal: a writer takes read and search bits from group and others, so a
 * store made under a loose umask by an older tool becomes private again.
 * why (may be NULL) says what is wrong, naming path. */
static int check_dir(int fd, const char *path, uid_t owner, int heal, char *why, size_t whylen) {
  struct stat st;
  char has[300], want[300];
  if (fstat(fd, &st))
    return -errno;
  if (st.st_uid != owner) {
    if (why && whylen) {
      user_words(st.st_uid, has, sizeof has);
      user_words(owner, want, sizeof want);
      snprintf(why, whylen, "%s belongs to %s, not to %s%s", path, has,
               owner == geteuid() ? "you, " : "the store's owner, ", want);
    }
    return TFS_EFOREIGN;
  }
  if (st.st_mode & 022) {
    if (why && whylen)
      snprintf(why, whylen, "%s may be written by %s (mode %04o)", path,
               (st.st_mode & 022) == 022 ? "every user"
               : st.st_mode & 020        ? "its group"
                                         : "others",
               (unsigned)(st.st_mode & 07777));
    return TFS_EUNSAFE;
  }
  if (heal && (st.st_mode & 077) && fchmod(fd, st.st_mode & 0700))
    return -errno;
  return 0;
}

/* check_dir() of one of the store's directories (suffix: "" for the
 * store's own, "/tasks", "/keys"); a writer heals. */
static int check_one(tfs_store_t *s, int fd, const char *suffix, char *why, size_t whylen) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s%s", s->path, suffix);
  return check_dir(fd, path, s->owner, (s->flags & TFS_STORE_CREATE) != 0, why, whylen);
}

/* Checks the store's three directories again (a refresh). */
static int check_store(tfs_store_t *s, char *why, size_t whylen) {
  int err = check_one(s, s->fd, "", why, whylen);
  if (!err)
    err = check_one(s, s->tasks_fd, "/" TFS__TASKS_DIR, why, whylen);
  return err ? err : check_one(s, s->keys_fd, "/" TFS__KEYS_DIR, why, whylen);
}

/* Whose store this is: ours, or with TFS_STORE_FOREIGN whoever owns its
 * directory (then every part of it must be theirs). */
static int store_owner(tfs_store_t *s) {
  struct stat st;
  s->owner = geteuid();
  if (!(s->flags & TFS_STORE_FOREIGN))
    return 0;
  if (fstat(s->fd, &st))
    return -errno;
  s->owner = st.st_uid;
  return 0;
}

/* Opens the three directories of the store at s->path, each checked as it
 * is opened: nothing is made inside a directory before it passed. */
static int store_dirs(tfs_store_t *s, char *why, size_t whylen) {
  int create = (s->flags & TFS_STORE_CREATE) != 0, err;
  /* The state dir itself may be reached through a symlink the user chose;
   * everything inside it is opened with O_NOFOLLOW. */
  s->fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->fd < 0)
    return -errno;
  if ((err = store_owner(s)) || (err = check_one(s, s->fd, "", why, whylen)))
    return err;
  if ((s->tasks_fd = sub_dir(s->fd, TFS__TASKS_DIR, create)) < 0)
    return s->tasks_fd;
  if ((err = check_one(s, s->tasks_fd, "/" TFS__TASKS_DIR, why, whylen)))
    return err;
  if (create)
    spread_children(s->tasks_fd);
  if ((s->keys_fd = sub_dir(s->fd, TFS__KEYS_DIR, create)) < 0)
    return s->keys_fd;
  return check_one(s, s->keys_fd, "/" TFS__KEYS_DIR, why, whylen);
}

static int store_open(const char *dir, unsigned flags, tfs_store_t **out, char *why,
                      size_t whylen) {
  char path[PATH_MAX];
  if (why && whylen)
    why[0] = '\0';
  *out = NULL;
  if ((flags & TFS_STORE_CREATE) && (flags & TFS_STORE_FOREIGN))
    return -EINVAL; /* another user's store is only ever read */
  int err = tfs_store_resolve(dir, path, sizeof path);
  if (err)
    return err;
  if ((flags & TFS_STORE_CREATE) && (err = mkdir_p(path)))
    return err;
  tfs_store_t *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  s->fd = s->tasks_fd = s->keys_fd = s->task_fd = -1;
  s->flags = flags;
  if (!(s->path = strdup(path)))
    err = -ENOMEM;
  if (err || (err = store_dirs(s, why, whylen))) {
    if (why && whylen && !why[0])
      snprintf(why, whylen, "%s: %s", path, tfs_strerror(err));
    tfs_store_close(s);
    return err;
  }
  *out = s;
  return 0;
}

int tfs_store_open_flags(const char *dir, unsigned flags, tfs_store_t **out, char *why,
                         size_t whylen) {
  return store_open(dir, flags, out, why, whylen);
}

int tfs_store_open(const char *dir, tfs_store_t **out) {
  return store_open(dir, TFS_STORE_CREATE, out, NULL, 0);
}

int tfs_store_open_existing(const char *dir, tfs_store_t **out) {
  return store_open(dir, 0, out, NULL, 0);
}

/* The handle stops serving: its fds are closed (no call can reach any
 * directory through it), and every call says why (tfs__usable). */
static void store_refuse(tfs_store_t *store, int err, const char *why) {
  int *fds[] = {&store->fd, &store->tasks_fd, &store->keys_fd, &store->task_fd};
  for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
    if (*fds[i] >= 0)
      close(*fds[i]);
    *fds[i] = -1;
  }
  store->refused = err;
  snprintf(store->why, sizeof store->why, "%s", why && *why ? why : tfs_strerror(err));
}

/* A long-lived reader (the mount, the MCP server) holds directory fds; if
 * the store is removed and recreated under it, those fds name the old,
 * deleted directories. This compares them with what the path names now
 * and, only if what it names passes the checks of an open, swaps in fresh
 * fds, so the store pointer stays valid for its users. A store that fails
 * them (replaced by another user's, or made writable by others) is
 * refused: the handle serves nothing until the path names a store that
 * passes again. */
int tfs_store_refresh(tfs_store_t *store) {
  char path[PATH_MAX], why[sizeof store->why];
  struct stat now, held;
  if (snprintf(path, sizeof path, "%s/" TFS__TASKS_DIR, store->path) >= (int)sizeof path)
    return -ENAMETOOLONG;
  if (stat(path, &now))
    return -errno;
  if (!S_ISDIR(now.st_mode))
    return -ENOTDIR;
  int err;
  if (!store->refused && fstat(store->tasks_fd, &held) == 0 && held.st_dev == now.st_dev &&
      held.st_ino == now.st_ino && held.st_nlink > 0) {
    /* The same store: still ours and private? */
    if (!(err = check_store(store, why, sizeof why)))
      return 0;
    store_refuse(store, err, why);
    return err;
  }
  tfs_store_t *fresh;
  err = store_open(store->path, store->flags, &fresh, why, sizeof why);
  if (err == TFS_EFOREIGN || err == TFS_EUNSAFE)
    store_refuse(store, err, why);
  if (err)
    return err;
  int old[3] = {store->fd, store->tasks_fd, store->keys_fd};
  store->fd = fresh->fd;
  store->tasks_fd = fresh->tasks_fd;
  store->keys_fd = fresh->keys_fd;
  store->owner = fresh->owner;
  store->refused = 0;
  store->why[0] = '\0';
  fresh->fd = old[0];
  fresh->tasks_fd = old[1];
  fresh->keys_fd = old[2];
  tfs_store_close(fresh);
  return 1;
}

const char *tfs_store_refusal(const tfs_store_t *store) {
  return store->refused ? store->why : NULL;
}

/* A handle of its own for another thread: the same path opened again with
 * the same checks, so a refresh of one never closes the other's fds. */
int tfs_store_reopen(const tfs_store_t *store, tfs_store_t **out) {
  if (store->refused) {
    *out = NULL;
    return store->refused;
  }
  return store_open(store->path, store->flags, out, NULL, 0);
}

/* The supervisor's task directory, opened once: from then on every call on
 * this handle for that id goes through this fd (tfs__task_dir), so a
 * tasks/<id> swapped later for a symlink or another directory is never
 * followed, and the supervisor acts in the directory it checked, never in
 * one it does not own. */
int tfs_store_bind_task(tfs_store_t *store, const char *id, char *why, size_t whylen) {
  char path[PATH_MAX + 64];
  if (why && whylen)
    why[0] = '\0';
  int fd = tfs__task_dir(store, id);
  if (fd < 0)
    return fd;
  snprintf(path, sizeof path, "%s/" TFS__TASKS_DIR "/%s", store->path, id);
  int err = check_dir(fd, path, geteuid(), 0, why, whylen);
  if (err) {
    close(fd);
    return err;
  }
  if (store->task_fd >= 0)
    close(store->task_fd);
  store->task_fd = fd;
  snprintf(store->task_id, sizeof store->task_id, "%s", id);
  return 0;
}

void tfs_store_close(tfs_store_t *store) {
  if (!store)
    return;
  if (store->fd >= 0)
    close(store->fd);
  if (store->tasks_fd >= 0)
    close(store->tasks_fd);
  if (store->keys_fd >= 0)
    close(store->keys_fd);
  if (store->task_fd >= 0)
    close(store->task_fd);
  free(store->path);
  free(store);
}

const char *tfs_store_path(const tfs_store_t *store) {
  return store->path;
}

int tfs__store_fd(const tfs_store_t *store) {
  return store->fd;
}

int tfs__store_tasks_fd(const tfs_store_t *store) {
  return store->tasks_fd;
}

int tfs__task_dir(const tfs_store_t *store, const char *id) {
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  if (store->refused)
    return store->refused;
  if (store->task_fd >= 0 && !strcmp(id, store->task_id)) {
    int fd = fcntl(store->task_fd, F_DUPFD_CLOEXEC, 0);
    return fd < 0 ? -errno : fd;
  }
  int fd = openat(store->tasks_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? TFS_ENOTASK : tfs__open_err(errno);
  return fd;
}

int tfs__keys_lock(const tfs_store_t *store) {
  int err = tfs__writable(store);
  if (err)
    return err;
  return tfs__dir_lock(store->keys_fd);
}

int tfs__dir_lock(int dirfd) {
  return tfs__lock_or_close(tfs__dir_reopen(dirfd));
}

int tfs__lock_or_close(int fd) {
  if (fd < 0)
    return fd;
  int err = tfs__flock_wait(fd, LOCK_EX);
  if (err) {
    close(fd);
    return err;
  }
  return fd;
}

void tfs__keys_unlock(int fd) {
  if (fd >= 0)
    close(fd);
}

/* A directory of the store beyond tasks/ and keys/ (the queues), opened
 * and checked like them: the caller's, writable by nobody else, never a
 * symlink; made 0700 with create. */
int tfs__dir_checked(const tfs_store_t *store, int dirfd, const char *name, int create) {
  int fd = sub_dir(dirfd, name, create);
  if (fd < 0)
    return fd;
  int err = check_dir(fd, name, store->owner, 0, NULL, 0);
  if (err) {
    close(fd);
    return err;
  }
  return fd;
}
