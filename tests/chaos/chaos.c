/* `make chaos`: the mixed-fault run of issue 13, for CHAOS_SECONDS (90 by
 * default). Not part of `make test` or CI: it is long, and random.
 *
 * The workload, on a store on a 16 MiB tmpfs: two CLI actors (`taskfs run`
 * of numbered-line workers and sleepers, with and without keys, `wait`,
 * `cancel`, `logs`, `ls`, `prune --keep 40`), three MCP servers each driven
 * by an actor (start, read, cancel, list), a mount with two readers (list,
 * record.json, transcript, `echo 1 > cancel`). The faults, one every
 * 0.2-1 s: kill -9 of a supervisor, a sentinel, an MCP server, the mount (it
 * is restarted) and a launcher (`taskfs run` in flight); SIGSTOP of a
 * supervisor, the mount or an MCP server for up to 2 s; the disk filled to
 * ENOSPC and the inodes used up for up to 3 s.
 *
 * Then every task is brought to its end and the invariants are checked, one
 * row each in the table printed at the end (checks, violations, the first
 * violations in words):
 *   records    every record.json parses (also every 5 s during the run);
 *   running    no task reads running without its supervisor (also during);
 *   settled    once everything ended, no task is queued or running;
 *   faces      the library, `taskfs ls --json`, the mount's record.json and
 *              MCP read_managed_task give each task the same state;
 *   orphans    no process of the run is left once the faces stopped;
 *   exact      a completed worker's transcript is its lines exactly, or,
 *              where the record counts lost output, its lines whole, in
 *              order, kept + lost = written;
 *   torn       no worker transcript holds a torn line.
 * Exit status: the test fails if any row has a violation. */
#include "tests/hardening/hard.h"

#include <inttypes.h>
#include <sys/stat.h>

TestSuite(chaos, .init = hh_setup, .fini = hh_teardown, .timeout = 7200);

typedef struct {
  const char *name;
  long checks, bad;
  char first[3][240];
} inv_t;

enum { I_RECORDS, I_RUNNING, I_SETTLED, I_FACES, I_ORPHANS, I_EXACT, I_TORN, I_N };
static inv_t inv[I_N] = {{.name = "records"}, {.name = "running"}, {.name = "settled"},
                         {.name = "faces"},   {.name = "orphans"}, {.name = "exact"},
                         {.name = "torn"}};

static void ok(int i) {
  inv[i].checks++;
}

static void bad(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(int i, const char *fmt, ...) {
  inv[i].checks++;
  if (inv[i].bad < 3) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(inv[i].first[inv[i].bad], sizeof inv[i].first[0], fmt, ap);
    va_end(ap);
  }
  inv[i].bad++;
}

static int rnd(int n) {
  return n > 0 ? rand() % n : 0;
}

static char *g_stop, *g_mnt, *g_fs;

static int stopping(void) {
  return access(g_stop, F_OK) == 0;
}

/* A start that returned a task: one byte in root/created (O_APPEND, so the
 * actors' bytes add up). */
static void count_start(void) {
  char *p = hh_strdupf("%s/created", hh.root);
  int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    (void)!write(fd, "+", 1);
    close(fd);
  }
  free(p);
}

/* ---- actors (forked; they loop until the stop file exists) ------------------ */

/* A random task id of the store, in id; 0 if there is none. */
static int random_task(char id[TFS_ID_MAX + 1]) {
  char *path = hh_strdupf("%s/tasks", hh.store);
  DIR *d = opendir(path);
  free(path);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d)))
    if (tfs_id_valid(e->d_name) && rnd(++n) == 0)
      snprintf(id, TFS_ID_MAX + 1, "%.*s", TFS_ID_MAX, e->d_name);
  if (d)
    closedir(d);
  return n > 0;
}

/* argv of a random job: a numbered-line worker (LIMIT lines) or a sleeper. */
static void job(const char **cmd, char *cnt, char *delay, char *limit, int seq) {
  if (rnd(3)) {
    snprintf(cnt, 256, "%s/count-%d-%d", hh.root, (int)getpid(), seq);
    snprintf(delay, 16, "%d", rnd(3000));
    snprintf(limit, 16, "%d", 50 + rnd(1500));
    cmd[0] = hh.self, cmd[1] = "--hh-worker", cmd[2] = cnt, cmd[3] = delay, cmd[4] = limit;
    cmd[5] = NULL;
  } else {
    snprintf(delay, 16, "%d.%d", rnd(4), rnd(10));
    cmd[0] = "/bin/sleep", cmd[1] = delay, cmd[2] = NULL;
  }
}

static void cli_actor(int who) {
  srand((unsigned)getpid());
  for (int seq = 0; !stopping(); seq++) {
    char id[TFS_ID_MAX + 1], cnt[256], delay[16], limit[16], key[32];
    const char *cmd[8], *argv[24];
    int n = 0, op = rnd(10);
    argv[n++] = tu_taskfs_bin();
    if (op < 5) {
      job(cmd, cnt, delay, limit, seq);
      argv[n++] = "run";
      if (rnd(2)) {
        snprintf(key, sizeof key, "c%d-%d", who, rnd(30));
        argv[n++] = "--key", argv[n++] = key, argv[n++] = "--rerun";
      }
      if (rnd(4) == 0)
        argv[n++] = "--wait";
      argv[n++] = "--";
      for (int i = 0; cmd[i]; i++)
        argv[n++] = cmd[i];
    } else if (!random_task(id)) {
      continue;
    } else if (op == 5) {
      argv[n++] = "wait", argv[n++] = "--timeout", argv[n++] = "3s", argv[n++] = id;
    } else if (op == 6) {
      argv[n++] = "cancel", argv[n++] = id;
    } else if (op == 7) {
      argv[n++] = "logs", argv[n++] = id;
    } else if (op == 8) {
      argv[n++] = "ls";
    } else {
      argv[n++] = "prune", argv[n++] = "--keep", argv[n++] = "200";
    }
    argv[n] = NULL;
    hh_res_t r = hh_run_argv(argv, NULL, 0, 60000);
    char *nl = r.out ? strchr(r.out, '\n') : NULL;
    if (nl)
      *nl = 0;
    if (op < 5 && r.out && tfs_id_valid(r.out))
      count_start();
    hh_res_free(&r);
  }
  _exit(0);
}

static void mcp_actor(int who) {
  srand((unsigned)getpid());
  hh_mcp_t m = {0};
  int up = 0;
  for (int seq = 0; !stopping(); seq++) {
    if (!up || waitpid(m.pid, NULL, WNOHANG) == m.pid) {
      if (up) {
        close(m.in), close(m.out);
        free(m.rbuf.buf), free(m.log);
      }
      hh_mcp_start(&m);
      up = hh_mcp_initialize(&m) == 0;
      if (!up)
        continue;
    }
    char id[TFS_ID_MAX + 1], cnt[256], delay[16], limit[16], key[32];
    const char *cmd[8];
    int is_err, op = rnd(6);
    json_t *res = NULL;
    if (op < 3) {
      job(cmd, cnt, delay, limit, seq);
      json_t *c = json_array();
      for (int i = 0; cmd[i]; i++)
        json_array_append_new(c, json_string(cmd[i]));
      snprintf(key, sizeof key, "m%d-%d", who, seq);
      res = hh_mcp_tool(&m, "start_managed_task",
                        json_pack("{s:s, s:o}", "taskKey", key, "command", c), &is_err, NULL);
      if (res && !is_err)
        count_start();
    } else if (op == 5) {
      res = hh_mcp_tool(&m, "list_managed_tasks", json_pack("{}"), &is_err, NULL);
    } else if (random_task(id)) {
      res = hh_mcp_tool(&m, op == 3 ? "read_managed_task" : "cancel_managed_task",
                        json_pack("{s:s}", "taskId", id), &is_err, NULL);
    }
    json_decref(res);
  }
  if (up)
    kill(m.pid, SIGTERM);
  _exit(0);
}

static void reader_actor(void) {
  srand((unsigned)getpid());
  char buf[65536];
  while (!stopping()) {
    char id[TFS_ID_MAX + 1];
    char *dir = hh_strdupf("%s/tasks", g_mnt);
    DIR *d = opendir(dir);
    if (d)
      while (readdir(d))
        ;
    if (d)
      closedir(d);
    free(dir);
    if (!random_task(id)) {
      hh_sleep_ms(20);
      continue;
    }
    const char *files[] = {"record.json", "transcript", "cancel"};
    int f = rnd(8) == 0 ? 2 : rnd(2);
    char *p = hh_strdupf("%s/tasks/%s/%s", g_mnt, id, files[f]);
    int fd = open(p, f == 2 ? O_WRONLY : O_RDONLY);
    if (fd >= 0) {
      if (f == 2)
        (void)!write(fd, "1\n", 2);
      else
        while (read(fd, buf, sizeof buf) > 0)
          ;
      close(fd);
    }
    free(p);
  }
  _exit(0);
}

static pid_t fork_actor(void (*fn)(int), int who) {
  pid_t p = fork();
  if (p == 0) {
    fn(who);
    _exit(0);
  }
  return p;
}

static void reader_fn(int who) {
  reader_actor();
}

/* ---- faults ------------------------------------------------------------------ */

/* Processes of the run whose cmdline holds a word equal to word (or comm
 * equal to comm), not zombies, into v; returns how many. */
static int find_procs(const char *word, const char *comm, pid_t *v, int max) {
  int n = 0;
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (d && (e = readdir(d)) && n < max) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 1 || !hh_proc_is_ours(pid) || hh_proc_zombie(pid))
      continue;
    char path[64], *s;
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, comm ? "comm" : "cmdline");
    if (!(s = tu_read_file(path, &len)))
      continue;
    int hit = 0;
    if (comm)
      hit = !strncmp(s, comm, strlen(comm));
    else
      for (size_t i = 0; i < len && !hit; i += strlen(s + i) + 1)
        hit = !strcmp(s + i, word) && i > 0;
    free(s);
    if (hit)
      v[n++] = pid;
  }
  if (d)
    closedir(d);
  return n;
}

static pid_t g_spare; /* the checker's own MCP server: no fault for it */

static pid_t pick(const char *word, const char *comm) {
  pid_t v[512];
  int n = find_procs(word, comm, v, 512);
  pid_t p = n ? v[rnd(n)] : 0;
  return p == g_spare ? 0 : p;
}

typedef struct {
  pid_t pid;
  int64_t until;
} stopped_t;

static stopped_t g_stopped[64];
static int g_nstopped;
static long g_faults[10];
static const char *fault_names[10] = {
    "kill -9 supervisor", "kill -9 sentinel",   "kill -9 MCP server", "kill -9 mount",
    "kill -9 launcher",   "SIGSTOP supervisor", "SIGSTOP mount",      "SIGSTOP MCP server",
    "disk full",          "inodes used up"};
static int64_t g_full_until;
static int g_full_kind; /* 1 blocks, 2 inodes */

static void resume_due(int all) {
  for (int i = 0; i < g_nstopped;)
    if (all || hh_now_ms() >= g_stopped[i].until) {
      kill(g_stopped[i].pid, SIGCONT);
      g_stopped[i] = g_stopped[--g_nstopped];
    } else {
      i++;
    }
  if (g_full_kind && (all || hh_now_ms() >= g_full_until)) {
    hh_sh("rm -rf '%s/filler' '%s/inodes'", g_fs, g_fs);
    g_full_kind = 0;
  }
}

static int is_stopped(pid_t pid) {
  for (int i = 0; i < g_nstopped; i++)
    if (g_stopped[i].pid == pid)
      return 1;
  return 0;
}

static void stop_for(pid_t pid, int ms) {
  if (pid > 0 && g_nstopped < 64 && kill(pid, SIGSTOP) == 0)
    g_stopped[g_nstopped++] = (stopped_t){pid, hh_now_ms() + ms};
}

static void fault(hh_mount_t *m) {
  int f = rnd(10);
  pid_t p = 0;
  switch (f) {
  case 0:
    p = pick("supervise", NULL);
    break;
  case 1:
    p = pick(NULL, "taskfs-sentinel");
    break;
  case 2:
    p = pick("mcp", NULL);
    break;
  case 4:
    p = pick("run", NULL);
    break;
  case 5:
    stop_for(p = pick("supervise", NULL), 200 + rnd(1800));
    break;
  case 6:
    stop_for(p = m->pid, 200 + rnd(1800));
    break;
  case 7:
    stop_for(p = pick("mcp", NULL), 200 + rnd(1800));
    break;
  case 3:
    for (int i = 0; i < g_nstopped; i++)
      if (g_stopped[i].pid == m->pid)
        kill(m->pid, SIGCONT);
    hh_mount_kill9(m);
    hh_mount_start_ex(m, g_mnt, NULL);
    break;
  case 8:
  case 9:
    if (g_full_kind)
      return;
    if (f == 8)
      hh_sh("dd if=/dev/zero of='%s/filler' bs=4096 >/dev/null 2>&1", g_fs);
    else
      hh_sh("mkdir -p '%s/inodes' && cd '%s/inodes' && i=0; while : > f$i 2>/dev/null; do "
            "i=$((i+1)); done",
            g_fs, g_fs);
    g_full_kind = f == 8 ? 1 : 2;
    g_full_until = hh_now_ms() + 300 + rnd(2700);
    break;
  }
  if (p > 0 && f <= 4)
    kill(p, SIGKILL);
  if (p > 0 || f == 3 || f >= 8)
    g_faults[f]++;
}

/* ---- invariants ----------------------------------------------------------------- */

/* records and running, over the whole store (through the library, as every
 * face reads it). */
static void check_live(void) {
  tfs_store_t *store;
  char **ids;
  size_t n;
  if (tfs_store_open_existing(hh.store, &store))
    return;
  if (tfs_task_ids(store, &ids, &n) == 0) {
    for (size_t i = 0; i < n; i++) {
      tfs_record_t raw, rec;
      char err[256] = "";
      int rc = hh_record_raw(ids[i], &raw, err, sizeof err);
      if (rc == -ENOENT || rc == TFS_ENOTASK)
        continue; /* being created, or pruned meanwhile */
      if (rc) {
        bad(I_RECORDS, "%s: %s", ids[i], err);
        continue;
      }
      ok(I_RECORDS);
      tfs_record_free(&raw);
      if (tfs_task_load(store, ids[i], &rec))
        continue;
      int liar = rec.state == TFS_RUNNING && !hh_supervisor_running(&rec);
      tfs_record_free(&rec);
      if (liar && tfs_task_load(store, ids[i], &rec) == 0) { /* ended meanwhile? */
        liar = rec.state == TFS_RUNNING && !hh_supervisor_running(&rec);
        tfs_record_free(&rec);
      }
      if (liar)
        bad(I_RUNNING, "%s reads running, its supervisor is gone", ids[i]);
      else
        ok(I_RUNNING);
    }
    tfs_ids_free(ids, n);
  }
  tfs_store_close(store);
}

/* The state another face gives id, from a JSON record text. */
static const char *json_state(json_t *j) {
  return json_string_value(json_object_get(j, "state"));
}

/* A worker transcript: whole "seq=N" lines, increasing (exact: 1..limit
 * with nothing lost). */
static void check_worker(const tfs_record_t *rec) {
  char *p = hh_task_path(rec->id, "transcript");
  size_t len;
  char *s = hh_slurp(p, &len);
  free(p);
  long prev = 0, lines = 0, limit = rec->argc > 4 ? atol(rec->argv[4]) : 0;
  int torn = 0, gap = 0;
  for (size_t off = 0; s && off < len && !torn; lines++) {
    char *nl = memchr(s + off, '\n', len - off), *end;
    long v = strncmp(s + off, "seq=", 4) ? -1 : strtol(s + off + 4, &end, 10);
    if (!nl || v <= prev || end != nl) {
      torn = 1;
      bad(I_TORN, "%s (%s): line %ld '%.40s' after seq=%ld", rec->id, tfs_state_name(rec->state),
          lines + 1, s + off, prev);
      break;
    }
    gap |= v != prev + 1;
    prev = v;
    off = (size_t)(nl - s) + 1;
  }
  if (!torn)
    ok(I_TORN);
  free(s);
  if (rec->state != TFS_COMPLETED || torn)
    return;
  if (rec->lost_bytes == 0 ? (lines == limit && !gap) : lines + rec->lost_lines == limit)
    ok(I_EXACT);
  else
    bad(I_EXACT, "%s completed: %ld lines kept, %" PRId64 " lost, %ld written", rec->id, lines,
        rec->lost_lines, limit);
}

/* The ids whose end was checked during the run (an end never changes). */
static char (*g_done)[TFS_ID_MAX + 1];
static size_t g_ndone, g_capdone;

static int done_before(const char *id) {
  for (size_t i = 0; i < g_ndone; i++)
    if (!strcmp(g_done[i], id))
      return 1;
  if (g_ndone == g_capdone) {
    g_capdone = g_capdone ? 2 * g_capdone : 1024;
    g_done = realloc(g_done, g_capdone * sizeof *g_done);
  }
  snprintf(g_done[g_ndone++], TFS_ID_MAX + 1, "%s", id);
  return 0;
}

/* The state `taskfs ls --json --all` gives id. */
static const char *ls_state(json_t *ls, const char *id) {
  size_t k;
  json_t *e;
  json_array_foreach(ls, k, e) {
    const char *eid = json_string_value(json_object_get(e, "id"));
    if (eid && !strcmp(eid, id))
      return json_state(e);
  }
  return NULL;
}

/* faces, exact and torn for each ended task (strict: every task, every
 * face must answer, and one not ended is a settled violation). During the
 * run a face that cannot answer (the task pruned meanwhile, the mount
 * killed or stopped by a fault) is no disagreement: only two answers that
 * differ are. */
static void check_ended(hh_mount_t *m, hh_mcp_t *mcp, int strict) {
  tfs_store_t *store;
  char **ids;
  size_t n;
  hh_res_t r = hh_tfs("ls", "--json", "--all", NULL);
  json_t *ls = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
  hh_res_free(&r);
  if (strict)
    cr_assert(json_is_array(ls), "taskfs ls --json at the end failed");
  if (tfs_store_open_existing(hh.store, &store))
    return;
  if (tfs_task_ids(store, &ids, &n)) {
    tfs_store_close(store);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    tfs_record_t rec;
    if (tfs_task_load(store, ids[i], &rec))
      continue;
    const char *st = tfs_state_name(rec.state);
    if (strict && tfs_state_terminal(rec.state))
      ok(I_SETTLED);
    else if (strict)
      bad(I_SETTLED, "%s is %s after the end", ids[i], st);
    if (!tfs_state_terminal(rec.state) || (!strict && done_before(ids[i]))) {
      tfs_record_free(&rec);
      continue;
    }
    const char *got[3] = {ls_state(ls, ids[i]), NULL, NULL};
    if (got[0] && strcmp(got[0], st)) {
      /* The listing was taken before the library saw the end: take it
       * again, now that the end is on disk. */
      json_decref(ls);
      r = hh_tfs("ls", "--json", "--all", NULL);
      ls = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
      hh_res_free(&r);
      got[0] = ls_state(ls, ids[i]);
    }
    json_t *mj = NULL;
    if (strict || (m->pid > 0 && !is_stopped(m->pid) && hh_is_mounted(g_mnt))) {
      char *p = hh_strdupf("%s/tasks/%s/record.json", g_mnt, ids[i]);
      char *text = hh_slurp(p, NULL);
      mj = text ? json_loads(text, 0, NULL) : NULL;
      free(text);
      free(p);
    }
    got[1] = json_state(mj);
    int is_err;
    json_t *res =
        hh_mcp_tool(mcp, "read_managed_task", json_pack("{s:s}", "taskId", ids[i]), &is_err, NULL);
    got[2] = json_state(res);
    int agree = 1;
    for (int f = 0; f < 3; f++)
      if (strict ? !got[f] || strcmp(got[f], st) : got[f] && strcmp(got[f], st))
        agree = 0;
    if (agree)
      ok(I_FACES);
    else
      bad(I_FACES, "%s: library %s, ls %s, mount %s, MCP %s", ids[i], st, got[0] ? got[0] : "-",
          got[1] ? got[1] : "-", got[2] ? got[2] : "-");
    json_decref(res);
    json_decref(mj);
    if (rec.argc > 4 && !strcmp(rec.argv[1], "--hh-worker"))
      check_worker(&rec);
    tfs_record_free(&rec);
  }
  tfs_ids_free(ids, n);
  tfs_store_close(store);
  json_decref(ls);
}

static int count_ours(void) {
  pid_t v[64];
  return find_procs(NULL, "", v, 64);
}

static int cond_no_ours(void *arg) {
  return count_ours() == 0;
}

Test(chaos, mixed_faults) {
  const char *secs = getenv("CHAOS_SECONDS");
  int seconds = secs && atoi(secs) > 0 ? atoi(secs) : 90;
  g_fs = hh_store_on_tmpfs("size=16m,nr_inodes=4000,mode=0700");
  g_stop = hh_strdupf("%s/stop", hh.root);
  g_mnt = hh_strdupf("%s/mnt", hh.root);
  hh_res_t r = hh_tfs("ls", NULL); /* makes the store */
  hh_res_free(&r);
  hh_mount_t m = {0};
  hh_mount_start(&m, g_mnt);
  pid_t actors[8];
  int na = 0;
  for (int i = 0; i < 2; i++)
    actors[na++] = fork_actor(cli_actor, i);
  for (int i = 0; i < 3; i++)
    actors[na++] = fork_actor(mcp_actor, i);
  for (int i = 0; i < 2; i++)
    actors[na++] = fork_actor(reader_fn, i);

  hh_mcp_t mcp;
  hh_mcp_start(&mcp);
  cr_assert_eq(hh_mcp_initialize(&mcp), 0);
  g_spare = mcp.pid;
  int64_t end = hh_now_ms() + seconds * 1000LL, next_check = hh_now_ms() + 3000;
  while (hh_now_ms() < end) {
    hh_sleep_ms(200 + rnd(800));
    resume_due(0);
    fault(&m);
    if (hh_now_ms() >= next_check) {
      check_live();
      check_ended(&m, &mcp, 0);
      next_check = hh_now_ms() + 3000;
    }
  }

  /* The end: faults off, actors out, every task to its end. */
  resume_due(1);
  tu_write_file(g_stop, "", 0);
  for (int i = 0; i < na; i++)
    if (hh_wait(actors[i], 90000) < 0)
      kill(actors[i], SIGKILL);
  if (!hh_is_mounted(g_mnt) || m.pid <= 0 || waitpid(m.pid, NULL, WNOHANG) == m.pid) {
    hh_mount_kill9(&m);
    hh_mount_start(&m, g_mnt);
  }
  {
    tfs_store_t *store;
    char **ids;
    size_t n;
    cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
    cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
    for (size_t i = 0; i < n; i++) {
      hh_res_t c = hh_tfs("cancel", "--wait", "--timeout", "20s", ids[i], NULL);
      hh_res_free(&c);
    }
    tfs_ids_free(ids, n);
    tfs_store_close(store);
  }
  hh_sleep_ms(5500); /* an abandoned queued task settles after its grace */
  check_live();
  check_ended(&m, &mcp, 1);
  hh_mcp_close(&mcp);
  hh_mount_stop(&m);
  if (tu_wait_until(cond_no_ours, NULL, 20000) == 1) {
    ok(I_ORPHANS);
  } else {
    pid_t v[8];
    int k = find_procs(NULL, "", v, 8);
    bad(I_ORPHANS, "%d process(es) left, e.g. pid %d", count_ours(), k ? (int)v[0] : 0);
  }

  long total = 0;
  char *cp = hh_strdupf("%s/created", hh.root);
  size_t created = 0;
  free(hh_slurp(cp, &created));
  free(cp);
  printf("\nchaos: %d s, %zu tasks started, faults:", seconds, created);
  for (int i = 0; i < 10; i++) {
    printf("%s %s %ld", i ? "," : "", fault_names[i], g_faults[i]);
    total += g_faults[i];
  }
  printf(" (%ld in all)\n\n%-10s %8s %10s\n", total, "invariant", "checks", "violations");
  long violations = 0;
  for (int i = 0; i < I_N; i++) {
    printf("%-10s %8ld %10ld\n", inv[i].name, inv[i].checks, inv[i].bad);
    for (int k = 0; k < inv[i].bad && k < 3; k++)
      printf("           - %s\n", inv[i].first[k]);
    violations += inv[i].bad;
  }
  fflush(stdout);
  cr_assert_eq(violations, 0, "%ld invariant violation(s); see the table", violations);
}
