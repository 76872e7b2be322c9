/* start_managed_task: its arguments (the default cwd is the client's
 * first root, roots.c), then the core's start in its two steps: the task
 * is created (or found by its key, a stranded one adopted) on the loop,
 * and its supervisor launched on the thread pool with a store handle of
 * the launch's own; the answer then waits like a read. A task-augmented
 * call (2025-11-25 params.task) is answered with the task at once; in
 * 2026-07-28 every start answers with its result, whose taskId the tasks
 * extension's methods take. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/internal.h"
#include "taskfs/supervise.h"
#include "taskfs/text.h"

#define START_WAIT_DEFAULT 1000

/* What start needs, parsed and checked. */
typedef struct {
  char key[TFS_KEY_MAX + 1];
  char **argv;
  char cwd[PATH_MAX];
  char **env;       /* NAME=VALUE */
  char **env_names; /* NAME */
  int rerun;
  tfs_restart_t restart;
  int64_t min_uptime_ms, grace_ms; /* -1: core's default */
  int max_restarts;
  mcp_sched_t sched; /* queue, after, delayMs (sched.c) */
  int max_quick_restarts;
  tfs_stderr_t stderr_mode; /* stderr: "merged" (default) or "split" */
  int restart_on_timeout;
  tfs_limits_t limits; /* timeoutMs, limits */
  char why[1024];      /* core's words for limits it refused */
  tfs_engine_t engine; /* executor: "local" (default) or "slurm" */
  char **engine_opts;  /* slurmOptions */
} start_args_t;

static void start_args_free(start_args_t *sa) {
  tfs_strv_free(sa->argv);
  tfs_strv_free(sa->env);
  tfs_strv_free(sa->env_names);
  mcp_sched_free(&sa->sched);
  tfs_limits_free(&sa->limits);
  tfs_strv_free(sa->engine_opts);
}

/* The parse steps return 0, -EINVAL with msg saying what to fix, or
 * -ENOMEM with msg "out of memory". */
static int no_memory(char *msg, size_t msglen) {
  snprintf(msg, msglen, "out of memory");
  return -ENOMEM;
}

static int parse_key(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  const char *key = json_string_value(json_object_get(args, "taskKey")); /* required */
  if (!tfs_key_valid(key)) {
    snprintf(msg, msglen,
             "taskKey '%.64s' is not valid: use 1-128 characters of A-Z a-z 0-9 . _ : -", key);
    return -EINVAL;
  }
  snprintf(sa->key, sizeof sa->key, "%s", key);
  return 0;
}

/* command: an argv array, or a string run as /bin/sh -c string; checked
 * by core's rule (a program named, sizes the kernel takes). */
static int parse_command(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  json_t *cmd = json_object_get(args, "command");
  if (json_is_string(cmd)) {
    const char *sh[] = {"/bin/sh", "-c", json_string_value(cmd)};
    if (!(sa->argv = calloc(4, sizeof *sa->argv)))
      return no_memory(msg, msglen);
    for (size_t i = 0; i < 3; i++)
      if (!(sa->argv[i] = strdup(sh[i])))
        return no_memory(msg, msglen);
    return tfs_command_check(sa->argv, msg, msglen) ? -EINVAL : 0;
  }
  /* An array of strings with at least one (the schema); argv[0] names a
   * program. */
  size_t n = json_array_size(cmd);
  if (!(sa->argv = calloc(n + 1, sizeof *sa->argv)))
    return no_memory(msg, msglen);
  for (size_t i = 0; i < n; i++)
    if (!(sa->argv[i] = strdup(json_string_value(json_array_get(cmd, i)))))
      return no_memory(msg, msglen);
  return tfs_command_check(sa->argv, msg, msglen) ? -EINVAL : 0;
}

/* cwd given: an existing absolute directory. */
static int parse_cwd(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  const char *c = json_string_value(json_object_get(args, "cwd"));
  if (tfs_cwd_check(c, msg, msglen))
    return -EINVAL;
  snprintf(sa->cwd, sizeof sa->cwd, "%s", c);
  return 0;
}

/* env: NAME: VALUE strings, for the process only (the record keeps the
 * names). */
static int parse_env(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  json_t *env = json_object_get(args, "env");
  if (!json_is_object(env))
    return 0;
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

/* executor and slurmOptions, checked by the supervisor library's rule. */
static int parse_executor(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  const char *ex = json_string_value(json_object_get(args, "executor"));
  json_t *opts = json_object_get(args, "slurmOptions");
  if (ex)
    tfs_engine_parse(ex, &sa->engine); /* one of the schema's enum */
  size_t n = json_array_size(opts);
  if (n && sa->engine != TFS_ENGINE_SLURM) {
    snprintf(msg, msglen, "slurmOptions need executor \"slurm\"");
    return -EINVAL;
  }
  if (!n)
    return 0;
  if (!(sa->engine_opts = calloc(n + 1, sizeof *sa->engine_opts)))
    return no_memory(msg, msglen);
  for (size_t i = 0; i < n; i++)
    if (!(sa->engine_opts[i] = strdup(json_string_value(json_array_get(opts, i)))))
      return no_memory(msg, msglen);
  char why[512];
  if (tfs_engine_options_check(sa->engine, sa->engine_opts, why, sizeof why)) {
    snprintf(msg, msglen, "%s", why);
    return -EINVAL;
  }
  return 0;
}

/* timeoutMs (the schema bounds it) and limits {NAME: "2G" | integer},
 * read by core's parser as taskfs run --limit NAME=VALUE, so that both
 * faces accept and refuse the same (an unknown name, a bad value). */
static int parse_limits(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  int64_t t = mcp_arg_i64(args, "timeoutMs", 0);
  if (t > 0) {
    sa->limits.timeout_ms = t;
    sa->limits.timeout_from = TFS_FROM_GIVEN;
  }
  json_t *lim = json_object_get(args, "limits"), *v;
  const char *name;
  json_object_foreach(lim, name, v) {
    char item[256], why[512];
    if (json_is_null(v))
      continue;
    const char *text = json_string_value(v);
    if (text && strpbrk(text, ",=")) {
      snprintf(msg, msglen, "limits.%.64s: '%.64s' is one value, like 2G or 10m", name, text);
      return -EINVAL;
    }
    if (json_is_integer(v))
      snprintf(item, sizeof item, "%.64s=%" JSON_INTEGER_FORMAT, name, json_integer_value(v));
    else
      snprintf(item, sizeof item, "%.64s=%.128s", name, text ? text : "");
    if (tfs_limits_parse(item, &sa->limits, why, sizeof why)) {
      snprintf(msg, msglen, "limits: %s", why);
      return -EINVAL;
    }
  }
  return 0;
}

/* Everything but cwd, which may come from the client's roots. */
static int start_args_parse(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  memset(sa, 0, sizeof *sa);
  tfs_limits_init(&sa->limits);
  int err;
  if ((err = parse_key(args, sa, msg, msglen)) || (err = parse_command(args, sa, msg, msglen)) ||
      (err = parse_env(args, sa, msg, msglen)) || (err = parse_limits(args, sa, msg, msglen)))
    return err;
  sa->restart_on_timeout = json_is_true(json_object_get(args, "restartOnTimeout"));
  sa->rerun = json_is_true(json_object_get(args, "rerun"));
  const char *policy = json_string_value(json_object_get(args, "restart"));
  sa->restart = TFS_RESTART_NO;
  if (policy)
    tfs_restart_parse(policy, &sa->restart); /* one of the schema's enum */
  sa->min_uptime_ms = mcp_arg_i64(args, "minUptimeMs", -1);
  sa->grace_ms = mcp_arg_i64(args, "graceMs", -1);
  sa->max_restarts = (int)mcp_arg_i64(args, "maxRestarts", -1);
  sa->max_quick_restarts = (int)mcp_arg_i64(args, "maxQuickRestarts", -1);
  const char *se = json_string_value(json_object_get(args, "stderr"));
  if (se)
    tfs_stderr_parse(se, &sa->stderr_mode); /* one of the schema's enum */
  return parse_executor(args, sa, msg, msglen);
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
      .restart = sa->restart,
      .min_uptime_ms = sa->min_uptime_ms,
      .max_restarts = sa->max_restarts,
      .crash_loop_exits = sa->max_quick_restarts >= 0 ? sa->max_quick_restarts + 1 : 0,
      .grace_ms = sa->grace_ms,
      .important_k = 0,
      .rerun = sa->rerun,
      .queue = sa->sched.queue,
      .after = sa->sched.after,
      .not_before_ms = sa->sched.not_before_ms,
      .stderr_mode = sa->stderr_mode,
      .restart_on_timeout = sa->restart_on_timeout,
      .limits = &sa->limits,
      .why = sa->why,
      .whylen = sizeof sa->why,
      .engine = sa->engine,
      .engine_options = sa->engine_opts,
  };
  sa->why[0] = 0;
  int err = tfs_task_start_create(store, &spec, st);
  if ((err == TFS_ELIMIT || err == TFS_ECONFIG || err == TFS_EBADID) && sa->why[0]) {
    snprintf(msg, msglen, "%s", sa->why);
    return -1;
  }
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

/* Step two runs on the libuv thread pool (live_launch, the hub's):
 * tfs_task_start_launch forks and waits until the task leaves `queued`,
 * a wait the loop must not sit through. */
#define LAUNCH_WAIT_MS 10000
typedef struct {
  mcp_req_t req;   /* kept while the launch runs */
  int answer;      /* 0 when the reply was already sent (task-augmented) */
  start_args_t sa; /* owns the environment until the launch is done */
  tfs_start_t st;  /* the start, from step one */
  mcp_read_t *ra;
  int64_t wait_ms, t0;
} launch_t;

static void launch_free(launch_t *l) {
  mcp_read_free(l->ra);
  start_args_free(&l->sa);
  tfs_start_free(&l->st);
  free(l);
}

static void launch_done(void *arg, int err) {
  launch_t *l = arg;
  const char *id = l->st.id;
  if (err)
    mcp_log(&l->req, MCP_LOG_ERROR, "starting the supervisor of %s failed: %s", id,
            tfs_strerror(err));
  if (l->answer && !l->req.sess->closed) {
    if (err) {
      mcp_tool_error(&l->req, "task %s was created but its supervisor could not be started: %s", id,
                     tfs_strerror(err));
    } else {
      int64_t left = l->wait_ms - (tfs_now_ms() - l->t0);
      mcp_read_park(&l->req, id, l->ra, left > 0 ? left : 0);
      l->ra = NULL;
    }
  }
  mcp_req_release(&l->req);
  launch_free(l);
}

/* Runs step two on the thread pool; the answer (if any) follows in
 * launch_done, which takes l. Without a handle for the thread the task
 * is failed (never left queued) and the error is returned: l is still the
 * caller's then. */
static int launch(const mcp_req_t *r, launch_t *l) {
  tfs_launch_opts_t lo = {.env = l->sa.env, .wait_ms = LAUNCH_WAIT_MS};
  mcp_req_keep(&l->req, r);
  int err = live_launch(r->srv->hub, &lo, &l->st, "the MCP server", launch_done, l);
  if (err)
    mcp_req_release(&l->req);
  return err;
}

/* Task-augmented (2025-11-25 params.task): the answer is the durable task,
 * at once. Tasks begin working (the 2025-11-25 lifecycle) even when the key
 * named a task that has ended: the first tasks/get then reads its end. */
static void reply_created(const mcp_req_t *r, const tfs_record_t *rec) {
  json_t *t = mcp_task_object(r->era, rec);
  json_object_set_new(t, "status", json_string("working"));
  mcp_reply(r, json_pack("{s:o}", "task", t));
}

/* Steps one and two once cwd is known; takes l. aug: answer with the task
 * (legacy params.task). */
static void start_run(const mcp_req_t *r, launch_t *l, int aug) {
  char msg[1024];
  if (create_task(r->srv, &l->sa, &l->st, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", msg);
    launch_free(l);
    return;
  }
  l->ra->is_start = 1;
  l->ra->existing = l->st.existed;
  /* 2026-07-28: the server decides, and answers with the result: the v2
   * client takes no "task" result from tools/call (its callTool refuses
   * it), while the answer's taskId is the MCP task id that tasks/get,
   * tasks/cancel and listen's taskIds take. The call's bounds are kept
   * for the result tasks/get inlines. */
  if (r->era == MCP_ERA_MODERN) {
    if ((r->caps & MCP_CAP_TASKS) && l->st.launch)
      mcp_task_bounds_save(r->srv, l->st.id, l->ra);
    aug = 0;
  }
  if (aug) {
    mcp_task_bounds_save(r->srv, l->st.id, l->ra);
    reply_created(r, &l->st.rec);
    mcp_read_free(l->ra);
    l->ra = NULL;
  }
  if (!l->st.launch) {
    /* Nothing to launch: a plain call answers like a read of the task. */
    if (!aug)
      mcp_read_park(r, l->st.id, l->ra, 0);
    l->ra = NULL;
    launch_free(l);
    return;
  }
  l->answer = !aug;
  int err = launch(r, l);
  if (err) {
    if (!aug)
      mcp_tool_error(r, "task %s was created but its supervisor could not be started: %s", l->st.id,
                     tfs_strerror(err));
    launch_free(l);
  }
}

/* What waits for the client's roots: the start, and whether it is task
 * augmented (params.task is not kept past the handler). */
typedef struct {
  launch_t *l;
  int aug;
} rooted_t;

/* cwd defaults to the client's first root, else the server's. */
static void on_root(const mcp_req_t *r, void *arg, const char *root, const char *why, int answer) {
  rooted_t *rt = arg;
  launch_t *l = rt->l;
  int aug = rt->aug;
  free(rt);
  if (!answer) {
    launch_free(l); /* nobody waits for the answer: nothing is started */
    return;
  }
  if (mcp_closing(r->srv)) {
    mcp_tool_error(r, "the server is shutting down; start the task again after reconnecting");
    launch_free(l);
    return;
  }
  if (root) {
    snprintf(l->sa.cwd, sizeof l->sa.cwd, "%s", root);
    l->ra->cwd_from = "root";
  } else if (getcwd(l->sa.cwd, sizeof l->sa.cwd)) {
    l->ra->cwd_from = "server";
    if (why)
      snprintf(l->ra->cwd_note, sizeof l->ra->cwd_note,
               "%s; the server's working directory is used", why);
  } else {
    mcp_tool_error(r, "cannot determine the server's working directory; pass cwd");
    launch_free(l);
    return;
  }
  start_run(r, l, aug);
}

void mcp_tool_start(const mcp_req_t *r, json_t *args, json_t *task, json_t *params) {
  char msg[1024];
  /* A start is in flight from here (the client's roots, the launch, the
   * wait): admitted once, before anything is made. */
  if (mcp_admit(r))
    return;
  launch_t *l = calloc(1, sizeof *l);
  if (!l) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  l->t0 = tfs_now_ms();
  l->ra = mcp_read_new(r);
  int err = l->ra ? start_args_parse(args, &l->sa, msg, sizeof msg) : no_memory(msg, sizeof msg);
  if (!err && mcp_sched_parse(r->srv, args, l->sa.key, &l->sa.sched, msg, sizeof msg))
    err = -EINVAL;
  if (!err && mcp_read_parse(r, args, l->ra, &l->wait_ms, START_WAIT_DEFAULT, msg, sizeof msg))
    err = -EINVAL;
  int has_cwd = json_is_string(json_object_get(args, "cwd"));
  if (!err && has_cwd && !(err = parse_cwd(args, &l->sa, msg, sizeof msg)))
    l->ra->cwd_from = "argument";
  if (err) {
    /* The same isError result whether or not the call was task-augmented:
     * no task is made for arguments that cannot start one. */
    if (err == -ENOMEM)
      mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    else
      mcp_tool_error(r, "%s", msg);
    launch_free(l);
    return;
  }
  if (has_cwd) {
    start_run(r, l, task != NULL);
    return;
  }
  rooted_t *rt = malloc(sizeof *rt);
  if (!rt) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    launch_free(l);
    return;
  }
  rt->l = l;
  rt->aug = task != NULL;
  if (mcp_roots_first(r, params, on_root, rt)) {
    free(rt); /* answered: input_required, or a malformed inputResponses */
    launch_free(l);
  }
}
