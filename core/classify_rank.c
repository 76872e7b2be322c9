/* Ranks of important lines the rules left unranked: an error or a failure
 * in words ranks TFS__RANK_ERROR, unless it is a verdict, a line that only
 * says that something failed ("make: *** [x] Error 1", "error: could not
 * compile `x`", "Build FAILED.", "npm error code 1", "3 errors generated")
 * and whose cause is somewhere else. Runs for important lines only (a few
 * in a hundred), so a handful of substring searches costs nothing. */
#include "core/classify.h"

/* Phrases of verdicts: the run, a target, a step or a file failed, with
 * the reason told elsewhere. */
static const char *const verdicts[] = {
    "exit status",
    "exit code",
    "exited with",
    "ld returned",
    "could not compile",
    "aborting due to",
    "to rerun pass",
    "targets failed",
    "Build failed",
    "build failed",
    "Build FAILED",
    "BUILD FAILED",
    "BUILD FAILURE",
    "build stopped",
    "subcommand failed",
    "Compilation error",
    "compilation terminated",
    "Compilation failed",
    "did not complete successfully",
    "failed to solve",
    "Automatic merge failed",
    "failed to push some refs",
    "Errors while running",
    "tests FAILED",
    "Execution failed for task",
    "FAILURE:",
    "Interrupted:",
    "command failed",
    "treated as errors",
    "There are test failures",
    "There were failing tests",
    "Failed to execute goal",
    "Tests run:",
    "Failed Tests",
    "previous error",
    "subprocess-exited-with-error",
    "metadata-generation-failed",
    "did not run successfully",
    "Encountered error while",
    "Configuring incomplete",
    "errors occurred",
    "Waiting for unfinished jobs",
    "recipe for target",
    "Error(s)",
    "Test failed.",
    "not ok",
    "exitcode",
    "compilation aborted",
    "Compilation aborted",
    "errors compiling",
    "errors detected",
    "error detected",
    "compilation error",
};

static int has(const line_t *l, const char *s) {
  size_t k = strlen(s);
  return l->n - l->start >= k && memmem(l->s + l->start, l->n - l->start, s, k) != NULL;
}

int tfs__cl_rank(const line_t *l, int kind) {
  if (kind != TFS_LINE_ERROR && kind != TFS_LINE_FAILURE)
    return TFS__RANK_NONE;
  /* A rule that knew ranked the line; a verdict's words still make it one
   * ("Error: /usr/bin/ppcx64 returned an error exitcode"). */
  int rank = l->rank ? l->rank : TFS__RANK_ERROR;
  if (rank == TFS__RANK_VERDICT || rank == TFS__RANK_HEADING)
    return rank;
  /* Lines that count ("1 error generated", "Found 3 errors in 2 files",
   * "1 failing", "FAILED (failures=1)") sum up the run. */
  if (!l->rank && (l->other_counts || l->fail_counts))
    return TFS__RANK_VERDICT;
  if (l->wrapper == W_NPM_ERR && (match(l, l->start, "code ") || match(l, l->start, "errno ")))
    return TFS__RANK_VERDICT;
  for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
    if (has(l, verdicts[i]))
      return TFS__RANK_VERDICT;
  return rank;
}
