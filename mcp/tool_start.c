/* start_managed_task: its arguments, then the core's start in its two
 * steps: the task is created (or found by its key, a stranded one adopted)
 * on the loop, and its supervisor launched on the thread pool with a store
 * handle of the launch's own; the answer then waits like a read. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/internal.h"
#include "taskfs/supervise.h"
#include "taskfs/text.h"

#define START_WAIT_DEFAULT 1000

/* What start needs, parsed and checked. */
typedef struct {
  const char *key; /* borrowed from the arguments */
  char **argv;
  char cwd[PATH_MAX];
  char **env;       /* NAME=VALUE */
  char **env_names; /* NAME */
  int restart;
  tfs_stderr_t stderr_mode; /* stderr: "merged" (default) or "split" */
} start_args_t;

static void start_args_free(start_args_t *sa) {
  tfs_strv_free(sa->argv);
  tfs_strv_free(sa->env);
  tfs_strv_free(sa->env_names);
}

/* The parse steps return 0, -EINVAL with msg saying what to fix, or
 * -ENOMEM with msg "out of memory". */
static int no_memory(char *msg, size_t msglen) {
  snprintf(msg, msglen, "out of memory");
  return -ENOMEM;
}

static int parse_key(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  json_t *jkey = json_object_get(args, "taskKey");
  if (!json_is_string(jkey)) {
    snprintf(msg, msglen,
             "taskKey is required: a stable name for this work (1-128 characters "
             "of A-Z a-z 0-9 . _ : -)");
    return -EINVAL;
  }
  sa->key = json_string_value(jkey);
  if (!tfs_key_valid(sa->key)) {
    snprintf(msg, msglen,
             "taskKey '%.64s' is not valid: use 1-128 characters of A-Z a-z 0-9 . _ : -", sa->key);
    return -EINVAL;
  }
  return 0;
}

/* command: an argv array, or a string run as /bin/sh -c string. */
static int parse_command(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  json_t *cmd = json_object_get(args, "command");
  if (json_is_string(cmd)) {
    if (!*json_string_value(cmd)) {
      snprintf(msg, msglen, "command must not be empty");
      return -EINVAL;
    }
    const char *sh[] = {"/bin/sh", "-c", json_string_value(cmd)};
    if (!(sa->argv = calloc(4, sizeof *sa->argv)))
      return no_memory(msg, msglen);
    for (size_t i = 0; i < 3; i++)
      if (!(sa->argv[i] = strdup(sh[i])))
        return no_memory(msg, msglen);
    return 0;
  }
  if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
    snprintf(msg, msglen,
             "command is required: an array of strings (argv) or a string (run "
             "with /bin/sh -c)");
    return -EINVAL;
  }
  size_t n = json_array_size(cmd);
  if (!(sa->argv = calloc(n + 1, sizeof *sa->argv)))
    return no_memory(msg, msglen);
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(cmd, i);
    if (!json_is_string(a) || (i == 0 && !*json_string_value(a))) {
      snprintf(msg, msglen, "command[%zu] must be a%s string", i, i ? "" : " non-empty");
      return -EINVAL;
    }
    if (!(sa->argv[i] = strdup(json_string_value(a))))
      return no_memory(msg, msglen);
  }
  return 0;
}

/* cwd: an existing absolute directory; default the server's. */
static int parse_cwd(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  json_t *cwd = json_object_get(args, "cwd");
  if (!cwd || json_is_null(cwd)) {
    if (getcwd(sa->cwd, sizeof sa->cwd))
      return 0;
    snprintf(msg, msglen, "cannot determine the server's working directory; pass cwd");
    return -EINVAL;
  }
  const char *c = json_string_value(cwd);
  if (!c || c[0] != '/') {
    snprintf(msg, msglen, "cwd must be an absolute path (got %.200s)", c ? c : "a non-string");
    return -EINVAL;
  }
  struct stat st;
  if (stat(c, &st) || !S_ISDIR(st.st_mode)) {
    snprintf(msg, msglen, "cwd %.200s is not an existing directory; create it or pass another", c);
    return -EINVAL;
  }
  snprintf(sa->cwd, sizeof sa->cwd, "%s", c);
  return 0;
}

/* env: NAME: VALUE strings, for the process only (the record keeps the
 * names). */
static int parse_env(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  json_t *env = json_object_get(args, "env");
  if (!env || json_is_null(env))
    return 0;
  if (!json_is_object(env)) {
    snprintf(msg, msglen, "env must be an object of NAME: VALUE strings");
    return -EINVAL;
  }
  size_t n = json_object_size(env), i = 0;
  sa->env = calloc(n + 1, sizeof *sa->env);
  sa->env_names = calloc(n + 1, sizeof *sa->env_names);
  if (!sa->env || !sa->env_names)
    return no_memory(msg, msglen);
  const char *name;
  json_t *val;
  json_object_foreach(env, name, val) {
    if (!tfs_env_name_valid(name)) {
      snprintf(msg, msglen, "env name '%.64s' is not valid: use letters, digits and _", name);
      return -EINVAL;
    }
    if (!json_is_string(val)) {
      snprintf(msg, msglen, "env value of %.64s must be a string", name);
      return -EINVAL;
    }
    if (asprintf(&sa->env[i], "%s=%s", name, json_string_value(val)) < 0) {
      sa->env[i] = NULL;
      return no_memory(msg, msglen);
    }
    if (!(sa->env_names[i] = strdup(name)))
      return no_memory(msg, msglen);
    i++;
  }
  return 0;
}

static int start_args_parse(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  memset(sa, 0, sizeof *sa);
  int err;
  if ((err = parse_key(args, sa, msg, msglen)) || (err = parse_command(args, sa, msg, msglen)) ||
      (err = parse_cwd(args, sa, msg, msglen)) || (err = parse_env(args, sa, msg, msglen)))
    return err;
  json_t *restart = json_object_get(args, "restart");
  if (restart && !json_is_null(restart) && !json_is_boolean(restart)) {
    snprintf(msg, msglen, "restart must be true or false");
    return -EINVAL;
  }
  sa->restart = json_is_true(restart);
  json_t *se = json_object_get(args, "stderr");
  if (se && !json_is_null(se) && tfs_stderr_parse(json_string_value(se), &sa->stderr_mode)) {
    snprintf(msg, msglen, "stderr must be \"merged\" or \"split\"");
    return -EINVAL;
  }
  return 0;
}

static void describe_conflict(mcp_server_t *srv, const char *key, char *msg, size_t msglen) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  char cmd[300] = "";
  if (tfs_key_lookup(mcp_store(srv), key, id) == 0 &&
      tfs_task_load(mcp_store(srv), id, &rec) == 0) {
    size_t o = 0;
    for (int i = 0; i < rec.argc && o < sizeof cmd - 4; i++)
      o += (size_t)snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? " " : "", rec.argv[i]);
    snprintf(msg, msglen,
             "taskKey '%s' already names a different command or cwd (task %s: `%.200s` in %.200s); "
             "choose another key, or read that task with read_managed_task",
             key, id, cmd, rec.cwd ? rec.cwd : "?");
    tfs_record_free(&rec);
    return;
  }
  snprintf(msg, msglen, "taskKey '%s' already names a different command or cwd; choose another key",
           key);
}

/* Step one: creates (or finds) the task, on the loop (no fork, no wait).
 * Returns 0 with st filled, or -1 with msg. */
static int create_task(mcp_server_t *srv, start_args_t *sa, tfs_start_t *st, char *msg,
                       size_t msglen) {
  tfs_store_t *store = mcp_store(srv);
  tfs_task_spec_t spec = {
      .argv = sa->argv,
      .cwd = sa->cwd,
      .key = sa->key,
      .env_names = sa->env_names,
      .restart = TFS_RESTART_NO,
      .min_uptime_ms = -1,
      .max_restarts = -1,
      .grace_ms = -1,
      .important_k = 0,
      .stderr_mode = sa->stderr_mode,
      .rerun = sa->restart,
  };
  int err = tfs_task_start_create(store, &spec, st);
  if (err == TFS_EKEYCONFLICT) {
    describe_conflict(srv, sa->key, msg, msglen);
    return -1;
  }
  if (err == -ENOSPC || err == -EDQUOT) {
    /* Say which disk: the store's, not the cwd's or the server's. */
    snprintf(msg, msglen,
             "could not create the task: %s in %.300s (the store's file system is full); free "
             "some space there and start it again",
             err == -ENOSPC ? "no space left on device" : "disk quota exceeded",
             tfs_store_path(store));
    return -1;
  }
  if (err) {
    snprintf(msg, msglen, "could not create the task in %.300s: %s", tfs_store_path(store),
             tfs_strerror(err));
    return -1;
  }
  return 0;
}

/* Step two runs on the libuv thread pool: tfs_task_start_launch forks (a
 * threaded caller is fine: only async-signal-safe calls between fork and
 * exec) and waits until the task leaves `queued` — a wait the loop must
 * not sit through. It works on a store handle of its own: the loop's may
 * be refreshed meanwhile (a store removed and recreated), which swaps and
 * closes that handle's directory fds. */
#define LAUNCH_WAIT_MS 10000
typedef struct {
  uv_work_t work;
  mcp_req_t req;      /* kept while the launch runs */
  int answer;         /* 0 when the reply was already sent (task-augmented) */
  start_args_t sa;    /* owns the environment until the launch is done */
  tfs_start_t st;     /* the start, from step one */
  tfs_store_t *store; /* the launch's own handle */
  mcp_read_t *ra;
  int64_t wait_ms, t0;
  int err;
} launch_t;

static void launch_free(launch_t *l) {
  mcp_read_free(l->ra);
  start_args_free(&l->sa);
  tfs_start_free(&l->st);
  tfs_store_close(l->store);
  free(l);
}

static void launch_work(uv_work_t *work) {
  launch_t *l = work->data;
  tfs_launch_opts_t lo = {.env = l->sa.env, .wait_ms = LAUNCH_WAIT_MS};
  l->err = tfs_task_start_launch(l->store, &lo, &l->st);
}

static void launch_done(uv_work_t *work, int status) {
  launch_t *l = work->data;
  mcp_server_t *srv = l->req.srv;
  const char *id = l->st.id;
  if (l->err)
    fprintf(stderr, "taskfs mcp: starting the supervisor of %s failed: %s\n", id,
            tfs_strerror(l->err));
  if (l->answer && !l->req.sess->closed) {
    if (l->err) {
      mcp_tool_error(&l->req, "task %s was created but its supervisor could not be started: %s", id,
                     tfs_strerror(l->err));
    } else {
      int64_t left = l->wait_ms - (tfs_now_ms() - l->t0);
      mcp_read_park(&l->req, id, l->ra, left > 0 ? left : 0);
      l->ra = NULL;
    }
  }
  mcp_req_release(&l->req);
  launch_free(l);
  mcp_hold(srv, -1);
}

/* Runs step two on the thread pool; the answer (if any) follows in
 * launch_done. Takes l. Without a handle of its own the launch cannot
 * run: the task is then failed (never left queued) and the error is
 * returned. */
static int launch(const mcp_req_t *r, launch_t *l) {
  int err = tfs_store_reopen(mcp_store(r->srv), &l->store);
  if (err) {
    tfs_task_fail_queued(mcp_store(r->srv), l->st.id, 127,
                         "the MCP server could not open the store to launch it: %s",
                         tfs_strerror(err));
    return err;
  }
  mcp_req_keep(&l->req, r);
  l->work.data = l;
  mcp_hold(r->srv, 1);
  if (uv_queue_work(mcp_loop(r->srv), &l->work, launch_work, launch_done)) {
    /* Cannot happen with valid arguments; run it here rather than lose it. */
    launch_work(&l->work);
    launch_done(&l->work, 0);
  }
  return 0;
}

/* Task-augmented: the answer is the durable task, at once. */
static void reply_created(const mcp_req_t *r, const tfs_record_t *rec) {
  mcp_reply(r, json_pack("{s:o}", "task", mcp_task_object(rec)));
}

/* Arguments that could not be used: an isError result, or for a
 * task-augmented call a protocol error (-32603 when out of memory). */
static void start_refused(const mcp_req_t *r, json_t *task, int err, const char *msg) {
  if (!task)
    mcp_tool_error(r, "%s", msg);
  else
    mcp_reply_error(r, err == -ENOMEM ? MCP_RPC_INTERNAL_ERROR : MCP_RPC_INVALID_PARAMS, "%s", msg);
}

void mcp_tool_start(const mcp_req_t *r, json_t *args, json_t *task) {
  char msg[1024];
  launch_t *l = calloc(1, sizeof *l);
  if (!l) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  l->t0 = tfs_now_ms();
  l->ra = mcp_read_new();
  int err = l->ra ? start_args_parse(args, &l->sa, msg, sizeof msg) : no_memory(msg, sizeof msg);
  if (!err && mcp_read_parse(args, l->ra, &l->wait_ms, START_WAIT_DEFAULT, msg, sizeof msg))
    err = -EINVAL;
  if (!err && create_task(r->srv, &l->sa, &l->st, msg, sizeof msg))
    err = -EINVAL;
  if (err) {
    start_refused(r, task, err, msg);
    launch_free(l);
    return;
  }
  l->ra->is_start = 1;
  l->ra->existing = l->st.existed;
  if (task) {
    reply_created(r, &l->st.rec);
    mcp_read_free(l->ra);
    l->ra = NULL;
  }
  if (!l->st.launch) {
    /* Nothing to launch: a plain call answers like a read of the task. */
    if (!task)
      mcp_read_park(r, l->st.id, l->ra, 0);
    l->ra = NULL;
    launch_free(l);
    return;
  }
  l->answer = !task;
  if ((err = launch(r, l))) {
    if (!task)
      mcp_tool_error(r, "task %s was created but its supervisor could not be started: %s", l->st.id,
                     tfs_strerror(err));
    launch_free(l);
  }
}
