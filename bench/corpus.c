/* Recall and precision of the important-line record over the failure
 * corpus (tests/corpus/, described in its README), and the classifier's
 * throughput on those real outputs.
 *
 * Each case's output is fed line by line to tfs_important_feed(), as the
 * supervisor's capture loop does, followed by NOISE lines of the case's
 * progress noise (tests/corpus/noise.sh), so that the record holds what it
 * would hold after a long run. Then:
 *
 *  - recall: the case's first expected line (the first line of `expect`)
 *    is in what the record keeps: the lead (the first error) and its
 *    context lines, or one of the first K + last K important lines;
 *  - lead: the first expected line is the lead or one of its context lines,
 *    the lines an answer shows first;
 *  - precision: of the kept important lines (first K + last K), those that
 *    really matter: a line of the case's output that holds an `expect`
 *    line, or one of the substrings listed in the case's optional
 *    `important` file (the other errors, failures, warnings and the run's
 *    verdict). Noise lines never count.
 *
 * Only the public tfs_important_* and tfs_classify_line() API is used. The
 * size of the MCP answers is measured by tests/mcp/corpus.test.mjs, which
 * bench/corpus.sh runs after this.
 *
 * Usage: corpus [CORPUS_DIR [NOISE_LINES [K]]]   (defaults tests/corpus 60000 20)
 * bench/corpus.sh builds and runs it. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/taskfs.h"

#define MAX_CASES 512
#define MAX_SUBS 64

static int verbose; /* CORPUS_VERBOSE=1: list each case's kept lines */

typedef struct {
  char *data; /* whole file, NUL-terminated */
  size_t len;
} file_t;

typedef struct {
  char *text[MAX_SUBS];
  int n;
} subs_t;

/* One line of a case's output: where it is and its text as a terminal
 * shows it (see plain_text). */
typedef struct {
  const char *s;
  size_t len;
  char *plain;
} line_t;

static int read_file(const char *dir, const char *name, file_t *f) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return -errno;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
    n += got;
    if (n == cap) {
      char *b = realloc(buf, 2 * cap + 1);
      if (!b) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = b;
      cap *= 2;
    }
  }
  fclose(fp);
  if (!buf)
    return -ENOMEM;
  buf[n] = 0;
  f->data = buf;
  f->len = n;
  return 0;
}

/* The non-empty lines of a small text file (expect, important). */
static void read_subs(const char *dir, const char *name, subs_t *s) {
  file_t f;
  s->n = 0;
  if (read_file(dir, name, &f))
    return;
  char *save = NULL;
  for (char *l = strtok_r(f.data, "\n", &save); l && s->n < MAX_SUBS;
       l = strtok_r(NULL, "\n", &save))
    if (*l)
      s->text[s->n++] = strdup(l);
  free(f.data);
}

/* The line as a terminal shows it, to find the expected text in: CSI
 * sequences (colours) and OSC sequences (hyperlinks: ESC ] ... BEL or
 * ESC \) removed, and a trailing '\r'. This is the judge's view, kept apart
 * from what the record does on purpose. */
static char *plain_text(const char *s, size_t len) {
  char *o = malloc(len + 1);
  size_t n = 0;
  for (size_t i = 0; i < len;) {
    if (s[i] == 0x1b && i + 1 < len && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < len && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] <= 0x3f)
        j++;
      i = j < len ? j + 1 : len;
      continue;
    }
    if (s[i] == 0x1b && i + 1 < len && s[i + 1] == ']') {
      size_t j = i + 2;
      while (j < len && s[j] != 0x07 && !(s[j] == 0x1b && j + 1 < len && s[j + 1] == '\\'))
        j++;
      i = j >= len ? len : j + (s[j] == 0x07 ? 1 : 2);
      continue;
    }
    o[n++] = s[i++];
  }
  if (n && o[n - 1] == '\r')
    n--;
  o[n] = 0;
  return o;
}

static int split_lines(const file_t *f, line_t **out) {
  int n = 0, cap = 64;
  line_t *v = malloc(cap * sizeof *v);
  const char *p = f->data, *end = f->data + f->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (n == cap)
      v = realloc(v, (cap *= 2) * sizeof *v);
    v[n].s = p;
    v[n].len = len;
    v[n].plain = plain_text(p, len);
    n++;
    p += len + 1;
  }
  *out = v;
  return n;
}

static int holds_any(const char *plain, const subs_t *a, const subs_t *b) {
  for (int i = 0; i < a->n; i++)
    if (strstr(plain, a->text[i]))
      return 1;
  for (int i = 0; b && i < b->n; i++)
    if (strstr(plain, b->text[i]))
      return 1;
  return 0;
}

typedef struct {
  int recalled, all_recalled, led, kept, truly;
} result_t;

/* Verbose mode: where each expected line is in the output, the kind the
 * classifier gives it and its rank among the important lines. */
static void describe_expect(const line_t *lines, int nlines, const subs_t *expect) {
  for (int e = 0; e < expect->n; e++) {
    int rank = 0, found = 0;
    for (int i = 0; i < nlines && !found; i++) {
      tfs_line_kind_t kind = tfs_classify_line(lines[i].s, lines[i].len);
      rank += kind != TFS_LINE_PLAIN;
      if (strstr(lines[i].plain, expect->text[e])) {
        printf("    expect %d: line %d, %s", e + 1, i + 1, tfs_line_kind_name(kind));
        if (kind != TFS_LINE_PLAIN)
          printf(" #%d", rank);
        printf(": %.90s\n", expect->text[e]);
        found = 1;
      }
    }
    if (!found)
      printf("    expect %d: NOT IN OUTPUT: %.90s\n", e + 1, expect->text[e]);
  }
}

/* Feeds NOISE lines of the case's noise style after its output, numbered
 * on from first. The same generator the MCP corpus test runs. */
static int64_t feed_noise(tfs_important_t *imp, const char *corpus, const char *style, long lines,
                          int64_t first) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "sh '%s/noise.sh' '%s' %ld", corpus, style, lines);
  FILE *p = popen(cmd, "r");
  if (!p)
    return first;
  char *l = NULL;
  size_t cap = 0;
  ssize_t n;
  int64_t no = first;
  while ((n = getline(&l, &cap, p)) > 0) {
    if (l[n - 1] == '\n')
      n--;
    tfs_important_feed(imp, no++, l, (size_t)n);
  }
  free(l);
  pclose(p);
  return no;
}

/* Runs one case; prints its row. */
static int run_case(const char *corpus, const char *name, long noise, int k, result_t *r) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", corpus, name);
  file_t out, ex;
  if (read_file(dir, "output", &out))
    return -1;
  subs_t expect, important, style;
  read_subs(dir, "expect", &expect);
  read_subs(dir, "important", &important);
  read_subs(dir, "noise", &style);
  int code = -1;
  if (read_file(dir, "exit", &ex) == 0) {
    code = atoi(ex.data);
    free(ex.data);
  }

  line_t *lines;
  int nlines = split_lines(&out, &lines);
  tfs_important_t imp;
  tfs_important_init(&imp, k);
  int exp_line = -1, exp_rank = -1, rank = 0;
  tfs_line_kind_t exp_kind = TFS_LINE_PLAIN;
  for (int i = 0; i < nlines; i++) {
    tfs_line_kind_t kind = tfs_classify_line(lines[i].s, lines[i].len);
    if (kind != TFS_LINE_PLAIN)
      rank++;
    if (exp_line < 0 && expect.n && strstr(lines[i].plain, expect.text[0])) {
      exp_line = i + 1;
      exp_kind = kind;
      exp_rank = kind != TFS_LINE_PLAIN ? rank : -1;
    }
    tfs_important_feed(&imp, i + 1, lines[i].s, lines[i].len);
  }
  if (verbose)
    describe_expect(lines, nlines, &expect);
  feed_noise(&imp, corpus, style.n ? style.text[0] : "build", noise, nlines + 1);

  /* The kept lines, judged by the output line they came from. */
  memset(r, 0, sizeof *r);
  int seen[MAX_SUBS] = {0};
  size_t total = imp.nfirst + imp.nlast;
  for (size_t i = 0; i < total; i++) {
    const tfs_important_line_t *l =
        i < imp.nfirst ? &imp.first[i] : tfs_important_last(&imp, i - imp.nfirst);
    r->kept++;
    /* Recall reads the kept text, as an agent would: a line kept with its
     * text mangled (an escape left in) does not count. */
    for (int e = 0; e < expect.n; e++)
      if (strstr(l->text, expect.text[e]))
        seen[e] = 1;
    int real = l->line >= 1 && l->line <= nlines &&
               holds_any(lines[l->line - 1].plain, &expect, &important);
    r->truly += real;
    if (verbose)
      printf("    %s %6lld %-7s %.100s\n", real ? "+" : "-", (long long)l->line,
             tfs_line_kind_name(l->kind), l->text);
  }
  /* The lead and its context count for recall, not for precision: they
   * are not important lines of their own. */
  int led = 0;
  for (size_t i = 0; i <= imp.ncontext; i++) {
    const char *t = i == 0 ? imp.lead.text : imp.context[i - 1].text;
    for (int e = 0; t && e < expect.n; e++)
      if (strstr(t, expect.text[e])) {
        seen[e] = 1;
        led |= e == 0;
      }
  }
  if (verbose && imp.lead.text) {
    printf("    lead %6lld %-7s %.100s\n", (long long)imp.lead.line,
           tfs_line_kind_name(imp.lead.kind), imp.lead.text);
    for (size_t i = 0; i < imp.ncontext; i++)
      printf("    ctx  %6lld         %.100s\n", (long long)imp.context[i].line,
             imp.context[i].text);
  }
  r->led = led;
  r->recalled = expect.n > 0 && seen[0];
  r->all_recalled = expect.n > 0;
  for (int e = 0; e < expect.n; e++)
    r->all_recalled &= seen[e];

  char where[64];
  if (exp_line < 0)
    snprintf(where, sizeof where, "NOT IN OUTPUT");
  else if (exp_rank < 0)
    snprintf(where, sizeof where, "line %d, plain", exp_line);
  else
    snprintf(where, sizeof where, "line %d, %s #%d", exp_line, tfs_line_kind_name(exp_kind),
             exp_rank);
  printf("| %-34s | %4d | %5d | %4lld | %-26s | %-6s | %-4s | %-4s | %2d/%-2d |\n", name, code,
         nlines, (long long)imp.total, where, r->recalled ? "yes" : "**no**", r->led ? "yes" : "no",
         r->all_recalled ? "yes" : "no", r->truly, r->kept);

  tfs_important_free(&imp);
  for (int i = 0; i < nlines; i++)
    free(lines[i].plain);
  free(lines);
  free(out.data);
  for (int i = 0; i < expect.n; i++)
    free(expect.text[i]);
  for (int i = 0; i < important.n; i++)
    free(important.text[i]);
  for (int i = 0; i < style.n; i++)
    free(style.text[i]);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The classifier alone over every case's output, repeated to about 64 MB:
 * real tool output rather than bench/classify_bench's generated log. */
static void throughput(const char *corpus, char **names, int n) {
  size_t total = 0;
  file_t *files = calloc((size_t)n, sizeof *files);
  for (int i = 0; i < n; i++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", corpus, names[i]);
    if (read_file(dir, "output", &files[i]) == 0)
      total += files[i].len;
  }
  if (!total)
    return;
  int rounds = (int)((64u << 20) / total) + 1;
  size_t bytes = 0, nl = 0, important = 0;
  double t0 = cpu_s();
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < n; i++) {
      const char *p = files[i].data, *end = p + files[i].len;
      while (p && p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t len = e ? (size_t)(e - p) : (size_t)(end - p);
        important += tfs_classify_line(p, len) != TFS_LINE_PLAIN;
        nl++;
        p += len + 1;
      }
      bytes += files[i].len;
    }
  }
  double dt = cpu_s() - t0;
  printf("\nclassifier throughput on the corpus outputs: %.1f MB in %.3f s of CPU: %.0f MB/s, "
         "%.1f M lines/s (%.1f%% of lines important)\n",
         bytes / 1e6, dt, bytes / 1e6 / dt, nl / 1e6 / dt, 100.0 * important / (nl ? nl : 1));
  for (int i = 0; i < n; i++)
    free(files[i].data);
  free(files);
}

int main(int argc, char **argv) {
  const char *corpus = argc > 1 ? argv[1] : "tests/corpus";
  long noise = argc > 2 ? strtol(argv[2], NULL, 10) : 60000;
  int k = argc > 3 ? atoi(argv[3]) : TFS_IMPORTANT_K_DEFAULT;
  verbose = getenv("CORPUS_VERBOSE") && atoi(getenv("CORPUS_VERBOSE"));
  DIR *d = opendir(corpus);
  if (!d) {
    fprintf(stderr, "corpus: cannot open %s: %s\n", corpus, strerror(errno));
    return 111;
  }
  char *names[MAX_CASES];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < MAX_CASES) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/expect", corpus, e->d_name);
    if (e->d_name[0] != '.' && access(p, R_OK) == 0)
      names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_names);

  printf("%d cases, %ld noise lines after each output, K = %d (first K + last K kept)\n\n", n,
         noise, k);
  printf("| %-34s | %4s | %5s | %4s | %-26s | %-6s | %-4s | %-4s | %-5s |\n", "case", "exit",
         "lines", "imp", "first expected line", "recall", "lead", "all", "prec");
  printf("|%.36s|------|-------|------|%.28s|--------|------|------|-------|\n",
         "------------------------------------", "----------------------------");
  int recalled = 0, led = 0, all = 0, kept = 0, truly = 0, ran = 0;
  for (int i = 0; i < n; i++) {
    result_t r;
    if (run_case(corpus, names[i], noise, k, &r))
      continue;
    ran++;
    recalled += r.recalled;
    led += r.led;
    all += r.all_recalled;
    kept += r.kept;
    truly += r.truly;
  }
  printf("\nrecall (first expected line kept): %d/%d = %.1f%%\n", recalled, ran,
         100.0 * recalled / (ran ? ran : 1));
  printf("first expected line is the lead or its context: %d/%d = %.1f%%\n", led, ran,
         100.0 * led / (ran ? ran : 1));
  printf("every expected line kept: %d/%d = %.1f%%\n", all, ran, 100.0 * all / (ran ? ran : 1));
  printf("precision (kept lines that really matter): %d/%d = %.1f%%\n", truly, kept,
         100.0 * truly / (kept ? kept : 1));
  throughput(corpus, names, n);
  for (int i = 0; i < n; i++)
    free(names[i]);
  return 0;
}
