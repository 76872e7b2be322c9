/* The instance record (owner.json): who last took the store, and whether
 * that process still lives. Liveness compares the boot id and the process
 * start time in clock ticks, so a recycled PID never reads as alive. */
#include "core/internal.h"
#include "taskfs/proc.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Field 22 (starttime) of /proc/<pid>/stat. */
static int proc_start_ticks(pid_t pid, uint64_t *ticks) {
  tfs_proc_stat_t st;
  int err = tfs_proc_stat(pid, &st);
  if (!err)
    *ticks = st.start;
  return err;
}

static void boot_id(char out[40]) {
  out[0] = '\0';
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, out, 39);
  close(fd);
  if (n < 0)
    n = 0;
  out[n] = '\0';
  char *nl = strchr(out, '\n');
  if (nl)
    *nl = '\0';
}

int tfs__process_alive(pid_t pid, uint64_t start_ticks, const char *boot) {
  char bid[40];
  uint64_t ticks;
  if (pid <= 0)
    return 0;
  boot_id(bid);
  if (strcmp(bid, boot))
    return 0;
  if (proc_start_ticks(pid, &ticks))
    return 0;
  return ticks == start_ticks;
}

int tfs__process_self(pid_t *pid, uint64_t *start_ticks, char boot[40]) {
  *pid = getpid();
  boot_id(boot);
  return proc_start_ticks(*pid, start_ticks);
}

static int owner_alive(const tfs_owner_t *o) {
  return tfs__process_alive(o->pid, o->start_ticks, o->boot_id);
}

int tfs_owner_self(tfs_owner_t *out, const char *role) {
  memset(out, 0, sizeof *out);
  out->started_ms = tfs_now_ms();
  int err = tfs__process_self(&out->pid, &out->start_ticks, out->boot_id);
  if (err)
    return err;
  ssize_t n = readlink("/proc/self/exe", out->exe, sizeof out->exe - 1);
  out->exe[n > 0 ? n : 0] = '\0';
  if (gethostname(out->host, sizeof out->host - 1))
    out->host[0] = '\0';
  out->host[sizeof out->host - 1] = '\0';
  snprintf(out->role, sizeof out->role, "%s", role ? role : "");
  out->alive = 1;
  return 0;
}

/* The process start time is not the wall clock at which it was recorded:
 * "started" is when this owner took the store. */
static json_t *str_or_empty(const char *s) {
  char *clean = tfs_utf8_sanitize(s, strlen(s), NULL);
  json_t *j = clean ? json_string(clean) : json_string("");
  free(clean);
  return j;
}

/* "alive" is shown to readers (the mount's owner file) but never stored:
 * it is only true at the moment it is computed. */
static char *owner_json(const tfs_owner_t *o, int with_alive) {
  char t[TFS_TIME_BUF];
  json_t *j = json_object();
  if (!j)
    return NULL;
  json_object_set_new(j, "v", json_integer(1));
  json_object_set_new(j, "pid", json_integer(o->pid));
  json_object_set_new(j, "started", json_string(tfs_time_format(o->started_ms, t)));
  json_object_set_new(j, "startTicks", json_integer((json_int_t)o->start_ticks));
  json_object_set_new(j, "bootId", str_or_empty(o->boot_id));
  json_object_set_new(j, "exe", str_or_empty(o->exe));
  json_object_set_new(j, "host", str_or_empty(o->host));
  json_object_set_new(j, "role", str_or_empty(o->role));
  if (with_alive)
    json_object_set_new(j, "alive", json_boolean(o->alive));
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(j);
  return s;
}

char *tfs_owner_dump(const tfs_owner_t *o) {
  return owner_json(o, 1);
}

static void copy_str(json_t *j, const char *name, char *dst, size_t cap) {
  json_t *v = json_object_get(j, name);
  dst[0] = '\0';
  if (json_is_string(v))
    snprintf(dst, cap, "%s", json_string_value(v));
}

/* Parses owner.json; "alive" in the file is ignored and recomputed. */
static int owner_parse(const char *text, size_t len, tfs_owner_t *o) {
  json_error_t jerr;
  memset(o, 0, sizeof *o);
  json_t *j = json_loadb(text, len, 0, &jerr);
  if (!j)
    return TFS_ECORRUPT;
  int err = 0;
  json_t *v = json_object_get(j, "v"), *pid = json_object_get(j, "pid");
  json_t *ticks = json_object_get(j, "startTicks"), *st = json_object_get(j, "started");
  if (!json_is_object(j) || !json_is_integer(v) || json_integer_value(v) != 1 ||
      !json_is_integer(pid) || !json_is_integer(ticks)) {
    err = TFS_ECORRUPT;
    goto out;
  }
  o->pid = (pid_t)json_integer_value(pid);
  o->start_ticks = (uint64_t)json_integer_value(ticks);
  if (json_is_string(st))
    tfs_time_parse(json_string_value(st), &o->started_ms);
  copy_str(j, "bootId", o->boot_id, sizeof o->boot_id);
  copy_str(j, "exe", o->exe, sizeof o->exe);
  copy_str(j, "host", o->host, sizeof o->host);
  copy_str(j, "role", o->role, sizeof o->role);
  o->alive = owner_alive(o);
out:
  json_decref(j);
  return err;
}

int tfs_store_owner(tfs_store_t *store, tfs_owner_t *out) {
  char *text;
  size_t len;
  int err = tfs__usable(store);
  if (err) {
    memset(out, 0, sizeof *out);
    return err;
  }
  err = tfs__read_small(store->fd, TFS__OWNER_FILE, 65536, &text, &len);
  if (err) {
    memset(out, 0, sizeof *out);
    return err == -EFBIG ? TFS_ECORRUPT : err;
  }
  err = owner_parse(text, len, out);
  free(text);
  return err;
}

int tfs_store_acquire(tfs_store_t *store, const char *role, tfs_owner_t *previous) {
  tfs_owner_t prev, self;
  int err = tfs__writable(store);
  if (err)
    return err;
  /* A missing or corrupt previous record simply means no live owner. */
  if (tfs_store_owner(store, &prev))
    memset(&prev, 0, sizeof prev);
  if (previous)
    *previous = prev;
  err = tfs_owner_self(&self, role);
  if (err)
    return err;
  char *text = owner_json(&self, 0);
  if (!text)
    return -ENOMEM;
  err = tfs__write_atomic(store->fd, TFS__OWNER_FILE, text, strlen(text));
  free(text);
  return err;
}
