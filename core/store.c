/* Finding, creating and opening the store directory. */
#include "core/internal.h"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
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
  if (explicit_dir && *explicit_dir)
    return put_path(buf, len, explicit_dir, "");
  if ((v = getenv("TASKFS_STATE_DIR")) && *v)
    return put_path(buf, len, v, "");
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

/* A writer only uses directories it owns, and keeps them private: a store
 * another user can write to could be fed records, keys and symlinks, and
 * one owned by another user is theirs, not ours. Group and other bits are
 * taken away rather than refused, so a store made under a loose umask by an
 * older tool heals itself. */
static int check_private(int fd) {
  struct stat st;
  if (fstat(fd, &st))
    return -errno;
  if (st.st_uid != geteuid())
    return TFS_EFOREIGN;
  if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 0700))
    return -errno;
  return 0;
}

static int store_open(const char *dir, int create, tfs_store_t **out) {
  char path[PATH_MAX];
  int err = tfs_store_resolve(dir, path, sizeof path);
  *out = NULL;
  if (err)
    return err;
  if (create && (err = mkdir_p(path)))
    return err;
  tfs_store_t *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  s->fd = s->tasks_fd = s->keys_fd = -1;
  if (!(s->path = strdup(path))) {
    err = -ENOMEM;
    goto fail;
  }
  /* The state dir itself may be reached through a symlink the user chose;
   * everything inside it is opened with O_NOFOLLOW. */
  s->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->fd < 0) {
    err = -errno;
    goto fail;
  }
  if ((s->tasks_fd = sub_dir(s->fd, TFS__TASKS_DIR, create)) < 0) {
    err = s->tasks_fd;
    goto fail;
  }
  if ((s->keys_fd = sub_dir(s->fd, TFS__KEYS_DIR, create)) < 0) {
    err = s->keys_fd;
    goto fail;
  }
  if (create && ((err = check_private(s->fd)) || (err = check_private(s->tasks_fd)) ||
                 (err = check_private(s->keys_fd))))
    goto fail;
  s->writer = create;
  *out = s;
  return 0;
fail:
  tfs_store_close(s);
  return err;
}

int tfs_store_open(const char *dir, tfs_store_t **out) {
  return store_open(dir, 1, out);
}

int tfs_store_open_existing(const char *dir, tfs_store_t **out) {
  return store_open(dir, 0, out);
}

/* A long-lived reader (the mount, the MCP server) holds directory fds; if
 * the store is removed and recreated under it, those fds name the old,
 * deleted directories. This compares them with what the path names now and
 * swaps in fresh fds, so the store pointer stays valid for its users. */
int tfs_store_refresh(tfs_store_t *store) {
  char path[PATH_MAX];
  struct stat now, held;
  if (snprintf(path, sizeof path, "%s/tasks", store->path) >= (int)sizeof path)
    return -ENAMETOOLONG;
  if (stat(path, &now))
    return -errno;
  if (!S_ISDIR(now.st_mode))
    return -ENOTDIR;
  if (fstat(store->tasks_fd, &held) == 0 && held.st_dev == now.st_dev &&
      held.st_ino == now.st_ino && held.st_nlink > 0)
    return 0;
  tfs_store_t *fresh;
  int err = store_open(store->path, 0, &fresh);
  if (err)
    return err;
  int old[3] = {store->fd, store->tasks_fd, store->keys_fd};
  store->fd = fresh->fd;
  store->tasks_fd = fresh->tasks_fd;
  store->keys_fd = fresh->keys_fd;
  fresh->fd = old[0];
  fresh->tasks_fd = old[1];
  fresh->keys_fd = old[2];
  tfs_store_close(fresh);
  return 1;
}

/* A handle of its own for another thread: the same path opened again with
 * the same checks, so a refresh of one never closes the other's fds. */
int tfs_store_reopen(const tfs_store_t *store, tfs_store_t **out) {
  return store_open(store->path, store->writer, out);
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
  int fd = openat(store->tasks_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? TFS_ENOTASK : tfs__open_err(errno);
  return fd;
}

int tfs__keys_lock(const tfs_store_t *store) {
  return tfs__dir_lock(store->keys_fd);
}

int tfs__dir_lock(int dirfd) {
  int fd = tfs__dir_reopen(dirfd);
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
