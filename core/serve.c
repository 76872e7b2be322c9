/* What `taskfs serve` keeps in the store: its token (<state>/serve.token)
 * and its log (<state>/serve.log), and the check every token file passes,
 * the store's or one the user names (--token-file).
 *
 * A token is a secret that lets whoever holds it start commands as the
 * store's owner, so a file that holds one is used only if it is a regular
 * file of the caller's that nobody else can read or write: a token another
 * local user could read is a token they could use, and one they could
 * write is a token they chose. */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* A token file is one short line. */
#define TOKEN_FILE_MAX 4096
/* A log that grew past this is started afresh by the next server. */
#define SERVE_LOG_MAX (1u << 20)

int tfs_token_valid(const char *s, size_t len) {
  if (len < TFS_TOKEN_MIN || len > TFS_TOKEN_MAX)
    return 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '.' || c == '_' || c == '~';
    if (!ok)
      return 0;
  }
  return 1;
}

/* The checks of a file that holds a secret, on its open fd. */
static int check_secret(int fd, const char *path, char *why, size_t whylen) {
  struct stat st;
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "%s is not a regular file", path);
    return TFS_ECORRUPT;
  }
  if (st.st_uid != geteuid()) {
    snprintf(why, whylen,
             "%s belongs to uid %u, not to you (uid %u): a token someone else holds is not yours "
             "to serve with",
             path, (unsigned)st.st_uid, (unsigned)geteuid());
    return TFS_EFOREIGN;
  }
  if (st.st_mode & 077) {
    snprintf(why, whylen,
             "%s has mode %04o: other users may read or write it, so its token is no secret; "
             "chmod 600 it (and choose a new token if it was readable)",
             path, (unsigned)(st.st_mode & 07777));
    return TFS_EUNSAFE;
  }
  return 0;
}

/* The token in a file's text: one line (a final newline, and a \r before
 * it, allowed), TFS_TOKEN_MIN to TFS_TOKEN_MAX URL-safe characters. */
static int parse_token(const char *text, size_t len, const char *path, char *out, size_t outlen,
                       char *why, size_t whylen) {
  if (len && text[len - 1] == '\n')
    len--;
  if (len && text[len - 1] == '\r')
    len--;
  if (!tfs_token_valid(text, len) || len >= outlen) {
    snprintf(why, whylen,
             "%s must hold one line of %d to %d characters of A-Z a-z 0-9 . _ ~ - (the token), "
             "e.g. from: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'",
             path, TFS_TOKEN_MIN, TFS_TOKEN_MAX);
    return TFS_ECORRUPT;
  }
  memcpy(out, text, len);
  out[len] = '\0';
  return 0;
}

static int read_token_fd(int fd, const char *path, char *out, size_t outlen, char *why,
                         size_t whylen) {
  int err = check_secret(fd, path, why, whylen);
  if (err)
    return err;
  char *text TFS_AUTOFREE = NULL;
  size_t len;
  if ((err = tfs__read_fd(fd, TOKEN_FILE_MAX, &text, &len))) {
    snprintf(why, whylen, "cannot read %s: %s", path, tfs_strerror(err));
    return err;
  }
  return parse_token(text, len, path, out, outlen, why, whylen);
}

int tfs_token_file_read(const char *path, char *out, size_t outlen, char *why, size_t whylen) {
  /* O_NONBLOCK: a FIFO named here must not hang the server's start. */
  int fd TFS_AUTOCLOSE = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = -errno;
    snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
    return err;
  }
  return read_token_fd(fd, path, out, outlen, why, whylen);
}

int tfs_serve_token_path(const tfs_store_t *store, char *buf, size_t len) {
  return snprintf(buf, len, "%s/%s", store->path, TFS__TOKEN_FILE) < (int)len ? 0 : -ENAMETOOLONG;
}

/* 32 random bytes, hex. */
static int new_token(char out[65]) {
  unsigned char raw[32];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0 && errno != EINTR)
      return -errno;
    if (n > 0)
      got += (size_t)n;
  }
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(out + 2 * i, 3, "%02x", raw[i]);
  return 0;
}

int tfs_serve_token(tfs_store_t *store, char *out, size_t outlen, int *created, char *why,
                    size_t whylen) {
  char path[4200], fresh[80];
  *created = 0;
  int err = tfs__usable(store);
  if (err)
    return err;
  tfs_serve_token_path(store, path, sizeof path);
  for (int attempt = 0; attempt < 3; attempt++) {
    int fd TFS_AUTOCLOSE =
        openat(store->fd, TFS__TOKEN_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0)
      return read_token_fd(fd, path, out, outlen, why, whylen);
    if (errno != ENOENT) {
      err = tfs__open_err(errno);
      snprintf(why, whylen, "cannot open %s: %s", path, tfs_strerror(err));
      return err;
    }
    if ((err = tfs__writable(store)) || (err = new_token(fresh))) {
      snprintf(why, whylen, "cannot make a token: %s", tfs_strerror(err));
      return err;
    }
    size_t n = strlen(fresh);
    fresh[n] = '\n';
    /* Of two servers starting at once, one token wins and both use it. */
    err = tfs__write_new(store->fd, TFS__TOKEN_FILE, fresh, n + 1);
    if (!err) {
      fresh[n] = '\0';
      *created = 1;
      return parse_token(fresh, n, path, out, outlen, why, whylen);
    }
    if (err != -EEXIST) {
      snprintf(why, whylen, "cannot write %s: %s", path, tfs_strerror(err));
      return err;
    }
  }
  snprintf(why, whylen, "%s keeps changing under us", path);
  return -EAGAIN;
}

int tfs_serve_log_open(tfs_store_t *store) {
  int err = tfs__writable(store);
  if (err)
    return err;
  int fd =
      openat(store->fd, TFS__SERVE_LOG,
             O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
  if (fd < 0)
    return tfs__open_err(errno);
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    close(fd);
    return TFS_ECORRUPT;
  }
  if ((size_t)st.st_size > SERVE_LOG_MAX && ftruncate(fd, 0)) {
    close(fd);
    return -errno;
  }
  fchmod(fd, 0600);
  fcntl(fd, F_SETFL, O_APPEND); /* a regular file: blocking writes are fine */
  return fd;
}
