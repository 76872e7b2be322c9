#!/bin/sh
# Recall and precision of the important-line record over the failure corpus
# (tests/corpus/), and the classifier's throughput on its outputs; prints a
# table (see bench/corpus.c). CORPUS_VERBOSE=1 lists, per case, where each
# expected line is, how it classifies, and every kept line.
#
# Usage: bench/corpus.sh [NOISE_LINES [K]]   (defaults 60000 20)
set -e
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/bench/corpus" "$BUILD/taskfs"
"$BUILD/bench/corpus" tests/corpus "${1:-60000}" "${2:-20}"

# The answers themselves: every case through the real MCP server, one
# default read_managed_task each (tests/mcp/corpus.test.mjs), for the
# median and largest answer size. Needs node and the test's packages.
if command -v node >/dev/null && [ -d tests/mcp/node_modules ]; then
  echo
  (cd tests/mcp && TASKFS_BIN="$(pwd)/../../$BUILD/taskfs" node --test corpus.test.mjs 2>&1) |
    sed -n 's/^# \\# corpus: /MCP answers: /p; s/^# \(pass\|fail\) /MCP corpus test: \1 /p'
else
  echo
  echo "MCP answers: not measured (needs node and 'npm ci' in tests/mcp)"
fi
