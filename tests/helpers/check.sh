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
# The closing line CI reads; the exit status of the test.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
