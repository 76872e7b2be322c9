#!/bin/bash
# make asan: builds the taskfs binary and every C test into build-asan with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the C tests there.
# Sanitizer reports go to per-process log files (log_path), so a report from
# a process nobody waits for (a detached supervisor, a mount in the
# background) still fails the run; they are printed at the end.
#
# Environment: SAN_CC (clang), SAN_FLAGS, MAKE, ASAN_TESTS (a space-separated
# list of test names, e.g. "test_store test_hard_hostile"; default: all).
set -uo pipefail
cd "$(dirname "$0")/../.."
SAN_CC=${SAN_CC:-clang}
SAN_FLAGS=${SAN_FLAGS:--fsanitize=address,undefined -fno-omit-frame-pointer}
MAKE=${MAKE:-make}
B=build-asan
LOGS=$PWD/$B/san-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"

# Build first (without the sanitizer environment), then run.
$MAKE -j"$(nproc)" BUILD=$B CC="$SAN_CC" OPT="-O1 $SAN_FLAGS" LDFLAGS="$SAN_FLAGS" \
  $B/taskfs $(for t in tests/test_*.c; do n=${t#tests/}; echo "$B/tests/${n%.c}"; done) || exit 1

export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:exitcode=86:log_path=$LOGS/san:log_exe_name=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$LOGS/san:log_exe_name=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/hardening/lsan.supp:print_suppressions=0"
export TASKFS_BIN=$PWD/$B/taskfs
export TASKFS_SANITIZED=1
# Criterion's timeouts and tu_wait_until's bounds are written for the
# normal build on a quiet machine: ASan and UBSan make a run ~3x slower,
# a busy neighbour ~2x more: 6 (tests/README.md).
export TASKFS_TEST_SLOW=${TASKFS_TEST_SLOW:-6}
# detect_leaks is on by default (x86_64); the test programs turn it off for
# themselves (tests/hardening/hard.h), the taskfs binary keeps it.
status=0
failed=()
for t in $B/tests/test_*; do
  case $t in *.o | *.d) continue ;; esac
  n=$(basename "$t")
  if [ -n "${ASAN_TESTS:-}" ] && ! [[ " $ASAN_TESTS " == *" $n "* ]]; then continue; fi
  echo "== asan $t"
  if ! "$t" --jobs 2 ${CRITERION_ARGS:-}; then
    status=1
    failed+=("$n")
  fi
done
# Detached supervisors may still be finishing: wait until none of the
# sanitized binary runs any more, so that their reports are written (a
# bound against one that never ends: tests/leftovers.sh reports it).
for _ in $(seq 600); do
  pgrep -f "^$TASKFS_BIN " >/dev/null || break
  sleep 0.1
done
# A sanitizer opens its log file when it starts a report; a process killed
# with SIGKILL at that moment (the kill -9 matrix does this on purpose)
# leaves an empty file behind, which holds no report.
find "$LOGS" -type f -empty -delete
if compgen -G "$LOGS/*" >/dev/null; then
  echo "== sanitizer reports (from $LOGS):"
  for f in "$LOGS"/*; do
    echo "---- $f"
    head -c 20000 "$f"
  done
  status=1
fi
if [ $status -ne 0 ]; then
  echo "asan: FAILED (${failed[*]:-reports above})"
  exit 1
fi
echo "asan: all C tests passed under ASan+UBSan; no sanitizer reports"
