# Helpers of the shell tests (tests/test_*.sh, tests/deb-smoke.sh), sourced
# by each: counted checks, a wait for a condition, and the closing line.
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
# check WHAT COMMAND...: one check, passed when COMMAND succeeds.
check() {
  what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
# wait_for SECONDS COMMAND...: polls every 50 ms until COMMAND succeeds,
# for at most SECONDS times $TASKFS_TEST_SLOW (3 unless set): a guard
# against a hang, sized for a slow run, never a verdict on speed
# (tests/README.md).
wait_for() {
  n=$(($1 * 20 * ${TASKFS_TEST_SLOW:-3}))
  shift
  while [ "$n" -gt 0 ]; do
    "$@" 2>/dev/null && return 0
    sleep 0.05
    n=$((n - 1))
  done
  return 1
}
# on_exit 'COMMANDS': run COMMANDS when the test ends, however it ends
# (a failed check, set -e, a signal's exit). Their own failure (a mount
# already gone, say) does not change the test's exit status: under set -e
# a failing command in an EXIT trap would end the shell with it.
on_exit() {
  # shellcheck disable=SC2064 # COMMANDS are expanded when the trap runs
  trap "rc=\$?; set +e; $1; exit \$rc" EXIT
}
# mcp_start TASKFS STORE DIR KEY: starts `true` under KEY through
# `TASKFS mcp` (start_managed_task), the way an MCP host does, with FIFOs
# in DIR; the server's stdin stays open until the answer came (the start
# is done then), then the server ends at EOF. Prints the task id. The
# faces launch with an exec of the supervisor (taskfs-supervise), where
# `taskfs run` forks its own.
mcp_start() {
  (
    cd "$3" && rm -f mcp.in mcp.out && mkfifo mcp.in mcp.out || exit 1
    "$1" mcp --state-dir "$2" <mcp.in >mcp.out 2>/dev/null &
    exec 3>mcp.in 4<mcp.out
    printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"check.sh","version":"1"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"start_managed_task\",\"arguments\":{\"taskKey\":\"$4\",\"command\":[\"true\"]}}}" >&3
    while IFS= read -r line <&4; do
      case $line in *'"id":2'*) break ;; esac
    done
    exec 3>&- 4<&-
    wait
    printf '%s\n' "$line" | sed -n 's/.*taskId\\":\\"\([a-z0-9-]*\)\\".*/\1/p'
  )
}
# The closing line CI reads; the exit status of the test.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
