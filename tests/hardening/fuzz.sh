#!/bin/bash
# make fuzz: runs every libFuzzer target built in $1/fuzz for FUZZ_SECONDS
# each (default 30), two at a time. The committed seeds in fuzz/corpus/<t>/
# are read only; new inputs go to $1/corpus/<t>/, crashes to
# $1/artifacts/. Longer runs: FUZZ_SECONDS=3600 make fuzz, or run one target
# by hand (see docs/security.md, "Fuzzing").
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-fuzz}
SECS=${FUZZ_SECONDS:-30}
JOBS=${FUZZ_JOBS:-$(nproc)}
mkdir -p "$B/artifacts" "$B/logs"
# The build aborts on UBSan findings (-fno-sanitize-recover); this says so
# again for a build made without it, and asks for the stack.
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
targets=()
for f in fuzz/fuzz_*.c; do
  t=$(basename "$f" .c)
  [ -x "$B/fuzz/$t" ] || { echo "fuzz: $B/fuzz/$t is not built"; exit 1; }
  targets+=("$t")
done
run_one() {
  local t=$1 B=$2 SECS=$3 seeds=fuzz/corpus/${1#fuzz_}
  mkdir -p "$B/corpus/$t"
  [ -d "$seeds" ] || seeds=
  if "$B/fuzz/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$B/artifacts/$t-" \
    "$B/corpus/$t" $seeds >"$B/logs/$t.log" 2>&1; then
    echo "fuzz: $t ok: $(grep -E '^stat::number_of_executed_units' "$B/logs/$t.log" | awk '{print $2}') runs in ${SECS}s, corpus $(ls "$B/corpus/$t" | wc -l) files"
  else
    echo "fuzz: $t FAILED; log: $B/logs/$t.log"
    tail -n 60 "$B/logs/$t.log"
    return 1
  fi
}
export -f run_one
printf '%s\n' "${targets[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {} "$B" "$SECS"
