/* The columns of `taskfs ls`: their names for --columns, their headings,
 * and each one's text for a record. The default set is ID STATE STARTED
 * ENDED EXIT KEY REASON COMMAND (REASON: why it ended, or where a waiting
 * task stands, in core's words); --columns picks others, among them AGE
 * and TIME, and what a task used and was limited to (cpu, maxrss, output,
 * queued, timeout, limits, ...), read from the record's usage and
 * limits. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/ls_columns.h"
#include "cli/ls_view.h"
#include "taskfs/text.h"

/* Compact age: one unit, like "45s", "12m", "3h", "9d". */
static void fmt_age(int64_t ms, char *buf, size_t len) {
  int64_t s = ms < 0 ? 0 : ms / 1000;
  if (s < 60)
    snprintf(buf, len, "%llds", (long long)s);
  else if (s < 3600)
    snprintf(buf, len, "%lldm", (long long)(s / 60));
  else if (s < 86400)
    snprintf(buf, len, "%lldh", (long long)(s / 3600));
  else
    snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

/* Duration with two units, like "4s", "1m05s", "2h03m", "3d04h". */
static void fmt_dur(int64_t ms, char *buf, size_t len) {
  int64_t s = ms < 0 ? 0 : ms / 1000;
  if (s < 60)
    snprintf(buf, len, "%llds", (long long)s);
  else if (s < 3600)
    snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400)
    snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
  else
    snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400), (long long)(s / 3600 % 24));
}

/* CPU time: hundredths under 10 s ("0.31s"), then as a duration. */
static void fmt_cpu(int64_t ms, char *buf, size_t len) {
  if (ms < 10000)
    snprintf(buf, len, "%lld.%02llds", (long long)(ms / 1000), (long long)(ms % 1000 / 10));
  else
    fmt_dur(ms, buf, len);
}

/* Bytes, as ls -h would: "812", "4.0K", "1.5M", "2.1G". */
static void fmt_bytes(int64_t b, char *buf, size_t len) {
  static const char units[] = "KMGTP";
  double v = (double)b;
  int u = -1;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u < 0)
    snprintf(buf, len, "%lld", (long long)b);
  else
    snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

/* The command on one line: arguments joined by spaces, quoted with '...'
 * when they hold spaces or shell characters, escaped for a terminal
 * (cli_escape). Whole: nothing of it is cut here (a terminal cuts it to
 * its width when printing, a pipe gets it all). Returns its length, or
 * what fits in cap. */
static size_t render_cmd(const tfs_record_t *rec, char *out, size_t cap) {
  size_t o = 0, max = cap - 1;
  for (int i = 0; i < rec->argc && rec->argv && rec->argv[i] && o < max; i++) {
    const char *a = rec->argv[i];
    int quote = !*a || strpbrk(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") != NULL;
    if (i)
      out[o++] = ' ';
    if (quote && o < max)
      out[o++] = '\'';
    while (*a && o < max) {
      size_t part = strcspn(a, "'"), olen;
      size_t took = cli_escape(a, part, 0, out + o, cap - o, &olen);
      o += olen;
      a += took;
      if (took < part)
        break; /* full */
      if (*a == '\'' && o + 4 < max) {
        memcpy(out + o, quote ? "'\\''" : "'", quote ? 4 : 1);
        o += quote ? 4 : 1;
        a++;
      } else if (*a) {
        break;
      }
    }
    if (quote && o < max)
      out[o++] = '\'';
  }
  out[o] = 0;
  return o;
}

/* TIME: run time until it ended, or until now while it runs. */
static void fmt_time(const tfs_record_t *rec, int64_t now, char *buf, size_t len) {
  int64_t end = rec->ended_ms;
  if (!end)
    end = tfs_state_terminal(rec->state) ? rec->alive_ms : now;
  if (rec->started_ms && end >= rec->started_ms)
    fmt_dur(end - rec->started_ms, buf, len);
  else
    snprintf(buf, len, "-");
}

static void fmt_exit(const tfs_record_t *rec, char *buf, size_t len) {
  char sig[TFS_SIGNAME_MAX];
  if (rec->signal > 0)
    snprintf(buf, len, "%s", tfs_signal_name(rec->signal, sig));
  else if (rec->exit_code >= 0 && tfs_state_terminal(rec->state))
    snprintf(buf, len, "%d", rec->exit_code);
  else
    snprintf(buf, len, "-");
}

enum {
  C_ID,
  C_STATE,
  C_AGE,
  C_TIME,
  C_EXIT,
  C_KEY,
  C_COMMAND,
  C_CPU,
  C_CPU_USER,
  C_CPU_SYS,
  C_MAXRSS,
  C_TREEPEAK,
  C_OUTPUT,
  C_QUEUED,
  C_RESTARTS,
  C_TIMEOUT,
  C_LIMITS,
  C_STARTED,
  C_ENDED,
  C_REASON,
  C_NUMBER,
  C_COUNT
};

static const ls_col_t cols[C_COUNT] = {
    [C_ID] = {"id", "ID", 0, 15},
    [C_STATE] = {"state", "STATE", 0, 9},
    [C_AGE] = {"age", "AGE", 1, 5},
    [C_TIME] = {"time", "TIME", 1, 8},
    [C_EXIT] = {"exit", "EXIT", 1, 7},
    [C_KEY] = {"key", "KEY", 0, 3},
    [C_COMMAND] = {"command", "COMMAND", 0, 0},
    [C_CPU] = {"cpu", "CPU", 1, 5},
    [C_CPU_USER] = {"cpu-user", "CPU-USER", 1, 0},
    [C_CPU_SYS] = {"cpu-sys", "CPU-SYS", 1, 0},
    [C_MAXRSS] = {"maxrss", "MAXRSS", 1, 0},
    [C_TREEPEAK] = {"treepeak", "TREEPEAK", 1, 0},
    [C_OUTPUT] = {"output", "OUTPUT", 1, 0},
    [C_QUEUED] = {"queued", "QUEUED", 1, 0},
    [C_RESTARTS] = {"restarts", "RESTARTS", 1, 0},
    [C_TIMEOUT] = {"timeout", "TIMEOUT", 1, 0},
    [C_LIMITS] = {"limits", "LIMITS", 0, 0},
    [C_STARTED] = {"started", "STARTED", 0, 8},
    [C_ENDED] = {"ended", "ENDED", 0, 8},
    [C_REASON] = {"reason", "REASON", 0, 6},
    [C_NUMBER] = {"number", "#", 1, 1},
};

const ls_col_t *ls_column(int col) {
  return col >= 0 && col < C_COUNT ? &cols[col] : NULL;
}

const char *ls_column_name(unsigned i) {
  return i < C_COUNT ? cols[i].name : "unknown";
}

int ls_column_is_command(int col) {
  return col == C_COMMAND;
}

int ls_column_is_key(int col) {
  return col == C_KEY;
}

int ls_column_is_reason(int col) {
  return col == C_REASON;
}

int ls_column_is_state(int col) {
  return col == C_STATE;
}

int ls_column_is_exit(int col) {
  return col == C_EXIT;
}

int ls_columns_default(int out[LS_COLS_MAX]) {
  static const int def[] = {C_NUMBER, C_ID, C_STATE, C_STARTED, C_ENDED, C_EXIT, C_KEY, C_REASON, C_COMMAND};
  int n = (int)(sizeof def / sizeof *def);
  memcpy(out, def, sizeof def);
  return n;
}

int ls_columns_parse(const char *arg, int out[LS_COLS_MAX], char *bad, size_t badlen) {
  int n = 0;
  for (const char *p = arg; *p;) {
    size_t len = strcspn(p, ",");
    int c = 0;
    while (c < C_COUNT && (strlen(cols[c].name) != len || strncmp(cols[c].name, p, len)))
      c++;
    if (c == C_COUNT || n == LS_COLS_MAX) {
      snprintf(bad, badlen, "%.*s", (int)(len > 64 ? 64 : len), p);
      return -1;
    }
    out[n++] = c;
    p += len + (p[len] == ',');
  }
  if (!n)
    snprintf(bad, badlen, "%s", arg);
  return n ? n : -1;
}

/* The text of a use figure of the task; "-" before it started. */
static void fmt_use(int col, const tfs_record_t *rec, char *buf, size_t len) {
  const tfs_usage_t *u = &rec->usage;
  if (!rec->started_ms && col != C_QUEUED) {
    snprintf(buf, len, "-");
    return;
  }
  switch (col) {
  case C_CPU:
    fmt_cpu(u->user_ms + u->sys_ms, buf, len);
    break;
  case C_CPU_USER:
    fmt_cpu(u->user_ms, buf, len);
    break;
  case C_CPU_SYS:
    fmt_cpu(u->sys_ms, buf, len);
    break;
  case C_MAXRSS:
    fmt_bytes(u->maxrss_kb * 1024, buf, len);
    break;
  case C_TREEPEAK:
    if (u->tree_peak_kb >= 0)
      fmt_bytes(u->tree_peak_kb * 1024, buf, len);
    else
      snprintf(buf, len, "-");
    break;
  case C_OUTPUT:
    fmt_bytes(u->output_bytes, buf, len);
    break;
  case C_QUEUED:
    if (rec->started_ms)
      fmt_cpu(rec->queued_ms, buf, len);
    else
      snprintf(buf, len, "-");
    break;
  }
}

/* REASON: an end's reason as recorded; a task that has not ended, where
 * it stands (its place in its queue, computed now; what it waits for; who
 * paused it). Escaped for a terminal, "-" for nothing. */
static void fmt_reason(const tfs_record_t *rec, const ls_ctx_t *ctx, char *buf, size_t len) {
  char where[LS_CELL_MAX];
  const char *raw = where;
  if (tfs_state_terminal(rec->state))
    raw = rec->reason ? rec->reason : "";
  else
    tfs_queue_describe(ctx->positions, rec, where, sizeof where);
  cli_escape(raw, strlen(raw), 0, buf, len, NULL);
  if (!buf[0])
    snprintf(buf, len, "-");
}

size_t ls_column_room(int col, const tfs_record_t *rec) {
  size_t need = LS_CELL_MAX;
  /* Escaped, a byte takes at most 4; a quoted argument 2 more and a space. */
  if (col == C_COMMAND)
    for (int i = 0; i < rec->argc && rec->argv && rec->argv[i]; i++)
      need += 4 * strlen(rec->argv[i]) + 3;
  if (col == C_REASON && rec->reason)
    need += 4 * strlen(rec->reason);
  return need;
}

size_t ls_column_text(int col, const tfs_record_t *rec, const ls_ctx_t *ctx, char *buf,
                      size_t len) {
  char d[TFS_DURATION_BUF];
  int64_t now = ctx->now;
  switch (col) {
  case C_ID:
    snprintf(buf, len, "%s", rec->id);
    break;
  case C_NUMBER:
    if (rec->number > 0)
      snprintf(buf, len, "%lld", (long long)rec->number);
    else
      snprintf(buf, len, "-");
    break;
  case C_STATE:
    snprintf(buf, len, "%s", tfs_state_name(rec->state));
    break;
  case C_AGE:
    fmt_age(now - rec->created_ms, buf, len);
    break;
  case C_TIME:
    fmt_time(rec, now, buf, len);
    break;
  case C_EXIT:
    fmt_exit(rec, buf, len);
    break;
  case C_KEY:
    cli_escape(rec->key[0] ? rec->key : "-", strlen(rec->key[0] ? rec->key : "-"), 0, buf, len,
               NULL);
    break;
  case C_COMMAND:
    return render_cmd(rec, buf, len);
  case C_STARTED:
    cli_fmt_when(rec->started_ms, now, ctx->absolute, buf, len);
    break;
  case C_ENDED:
    cli_fmt_when(tfs_state_terminal(rec->state) ? rec->ended_ms : 0, now, ctx->absolute, buf, len);
    break;
  case C_REASON:
    fmt_reason(rec, ctx, buf, len);
    break;
  case C_RESTARTS:
    snprintf(buf, len, "%d", rec->restarts);
    break;
  case C_TIMEOUT:
    snprintf(buf, len, "%s",
             rec->limits.timeout_ms > 0 ? tfs_duration_format(rec->limits.timeout_ms, d) : "-");
    break;
  case C_LIMITS: {
    tfs_limits_t l = rec->limits;
    l.timeout_ms = 0; /* a column of its own */
    tfs_limits_summary(&l, buf, len);
    if (!buf[0])
      snprintf(buf, len, "-");
    break;
  }
  default:
    fmt_use(col, rec, buf, len);
  }
  return strlen(buf);
}

const char *ls_columns_names(void) {
  return "number, id, state, started, ended, age, time, exit, key, reason, command, cpu, cpu-user, "
         "cpu-sys, maxrss, treepeak, output, queued, restarts, timeout, limits";
}
