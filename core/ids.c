/* Task ids and keys: generation and validation. Nothing from outside may
 * touch a path before passing these checks. */
#include "core/internal.h"

#include <string.h>
#include <sys/random.h>

static const char b36[] = "0123456789abcdefghijklmnopqrstuvwxyz";

int tfs__random_base36(char *buf, size_t n) {
  unsigned char r[64];
  while (n > 0) {
    size_t chunk = n < sizeof r ? n : sizeof r;
    ssize_t got = getrandom(r, chunk, 0);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    /* 252 = 7 * 36: reject the top bytes so every digit is equally likely. */
    for (ssize_t i = 0; i < got && n > 0; i++) {
      if (r[i] >= 252)
        continue;
      *buf++ = b36[r[i] % 36];
      n--;
    }
  }
  return 0;
}

/* Eight base36 digits of ms cover dates up to the year 2059 (36^8 ms); ids
 * sort lexically in creation order because the width is fixed. */
int tfs__id_generate(char buf[TFS_ID_MAX + 1]) {
  /* Within one process ids are strictly increasing even when several are
   * made in the same millisecond: the time part is bumped past the last one
   * handed out. Across processes, same-millisecond ids order randomly. */
  static int64_t last_ms;
  int64_t now = tfs_now_ms(), prev = __atomic_load_n(&last_ms, __ATOMIC_RELAXED), next;
  do {
    next = now > prev ? now : prev + 1;
  } while (
      !__atomic_compare_exchange_n(&last_ms, &prev, next, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  uint64_t ms = (uint64_t)next;
  for (int i = 7; i >= 0; i--) {
    buf[i] = b36[ms % 36];
    ms /= 36;
  }
  buf[8] = '-';
  int err = tfs__random_base36(buf + 9, 6);
  if (err)
    return err;
  buf[15] = '\0';
  return 0;
}

static int is_b36(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

int tfs_id_valid(const char *id) {
  if (!id)
    return 0;
  for (int i = 0; i < 15; i++) {
    if (i == 8) {
      if (id[i] != '-')
        return 0;
    } else if (!is_b36(id[i])) {
      return 0; /* also catches a short string: '\0' is not base36 */
    }
  }
  return id[15] == '\0';
}

int tfs_key_valid(const char *key) {
  if (!key || !key[0] || key[0] == '.')
    return 0; /* also rejects "." and ".." and hides our ".tmp" files */
  size_t n = 0;
  for (const char *p = key; *p; p++, n++) {
    char c = *p;
    if (n >= TFS_KEY_MAX)
      return 0;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == ':' || c == '-'))
      return 0;
  }
  return 1;
}

/* Counted strings need not be NUL-terminated: they are copied first. */
int tfs_id_validn(const char *id, size_t len) {
  char buf[16];
  if (!id || len != 15 || memchr(id, '\0', len))
    return 0;
  memcpy(buf, id, len);
  buf[len] = '\0';
  return tfs_id_valid(buf);
}

int tfs_key_validn(const char *key, size_t len) {
  char buf[TFS_KEY_MAX + 1];
  if (!key || len > TFS_KEY_MAX || memchr(key, '\0', len))
    return 0;
  memcpy(buf, key, len);
  buf[len] = '\0';
  return tfs_key_valid(buf);
}

/* A queue name is a key of at most TFS_QUEUE_NAME_MAX characters. */
int tfs_queue_name_valid(const char *name) {
  return name && strlen(name) <= TFS_QUEUE_NAME_MAX && tfs_key_valid(name);
}

int64_t tfs__id_time_ms(const char *id) {
  int64_t ms = 0;
  for (int i = 0; i < 8; i++) {
    char c = id[i];
    ms = ms * 36 + (c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return ms;
}
