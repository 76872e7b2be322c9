#!/bin/bash
# The queue row: N tasks running `true` through a queue with parallel 2,
# taskfs against task-spooler's `tsp -S 2`, in the same run, interleaved
# (RUNS rounds, tsp first in odd rounds, taskfs first in even ones), so
# that machine noise hits both alike. Then what a queue adds to one task's
# start, and how long a freed slot takes to start the next task.
#
#   bench/queue.sh [N [RUNS]]     defaults 1000 and 3
#
# Environment: TASKFS_BIN (default build/taskfs), BENCH_DIR (where the
# stores go, default /tmp: the disk, where every record save is fsynced;
# /dev/shm measures the mechanism without the disk). Prints a Markdown
# table on stdout, progress on stderr.
set -uo pipefail

N=${1:-1000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TASKFS=${TASKFS_BIN:-$ROOT/build/taskfs}
BASE=${BENCH_DIR:-/tmp}
command -v tsp >/dev/null || {
  echo "bench/queue.sh: tsp (task-spooler) is missing: apt-get install task-spooler" >&2
  exit 1
}
[ -x "$TASKFS" ] || {
  echo "bench/queue.sh: $TASKFS is missing: run make" >&2
  exit 1
}
W=$(mktemp -d "$BASE/taskfs-bench-queue.XXXXXX")
trap 'tsp -K >/dev/null 2>&1; rm -rf "$W"' EXIT
log() { printf '[queue bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s.%N; }

# tsp: a private server (its own socket and output directory).
run_tsp() {
  local d=$W/tsp.$1
  mkdir -p "$d"
  export TS_SOCKET=$d/sock TMPDIR=$d TS_MAXFINISHED=$((N + 10))
  tsp -K >/dev/null 2>&1
  tsp -S 2
  local t0 t1
  t0=$(now)
  for ((i = 0; i < N; i++)); do tsp true >/dev/null; done
  while tsp | grep -qE ' (running|queued) '; do sleep 0.02; done
  t1=$(now)
  local done_=$(tsp | grep -c ' finished ')
  tsp -K >/dev/null 2>&1
  unset TS_SOCKET TS_MAXFINISHED
  [ "$done_" -ge "$N" ] || log "tsp finished only $done_ of $N"
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}'
}

# taskfs: every run returns once its supervisor holds the task (a slot, or
# a place among the waiters), so the queue is empty exactly when all ran.
run_taskfs() {
  local s=$W/store.$1
  export TASKFS_STATE_DIR=$s
  "$TASKFS" queue set bench --parallel 2 >/dev/null
  local t0 t1
  t0=$(now)
  for ((i = 0; i < N; i++)); do "$TASKFS" run --queue bench -- true >/dev/null 2>&1; done
  while ! "$TASKFS" queue ls --json | grep -q '"running": 0, "waiting": 0'; do sleep 0.02; done
  t1=$(now)
  local ok=$("$TASKFS" ls --state completed --json | grep -c '"state": "completed"')
  [ "$ok" -ge "$N" ] || log "taskfs completed only $ok of $N"
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}'
  unset TASKFS_STATE_DIR
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# One task's start: `run` in no queue against `run --queue` in a queue
# without a limit (the same work plus joining, taking a slot, giving it
# back), M each, interleaved.
start_cost() {
  local m=$1 s=$W/starts
  export TASKFS_STATE_DIR=$s
  local a=0 b=0 t0 t1
  for ((i = 0; i < m; i++)); do
    t0=$(now)
    "$TASKFS" run -- true >/dev/null
    t1=$(now)
    a=$(echo "$a $t0 $t1" | awk '{printf "%.6f", $1 + $3 - $2}')
    t0=$(now)
    "$TASKFS" run --queue free -- true >/dev/null
    t1=$(now)
    b=$(echo "$b $t0 $t1" | awk '{printf "%.6f", $1 + $3 - $2}')
  done
  unset TASKFS_STATE_DIR
  echo "$a $b $m" | awk '{printf "%.2f %.2f\n", $1 * 1000 / $3, $2 * 1000 / $3}'
}

# A slot's handover: M tasks join while the queue is paused, so all of
# them wait; after the resume, each start past the first two used the slot
# an end gave back (bench/handover.py: p50, p95 and how many).
handover() {
  local m=$1
  export TASKFS_STATE_DIR=$W/handover
  "$TASKFS" queue set bench --parallel 2 >/dev/null
  "$TASKFS" queue pause bench >/dev/null
  for ((i = 0; i < m; i++)); do "$TASKFS" run --queue bench -- true >/dev/null 2>&1; done
  "$TASKFS" queue resume bench >/dev/null
  while ! "$TASKFS" queue ls --json | grep -q '"running": 0, "waiting": 0'; do sleep 0.02; done
  "$TASKFS" ls --json | python3 "$ROOT/bench/handover.py" 2
  unset TASKFS_STATE_DIR
}

tsp_t=()
tfs_t=()
for ((r = 1; r <= RUNS; r++)); do
  if ((r % 2)); then
    log "round $r: tsp"; tsp_t+=("$(run_tsp "$r")")
    log "round $r: taskfs"; tfs_t+=("$(run_taskfs "$r")")
  else
    log "round $r: taskfs"; tfs_t+=("$(run_taskfs "$r")")
    log "round $r: tsp"; tsp_t+=("$(run_tsp "$r")")
  fi
  log "round $r: tsp ${tsp_t[-1]} s, taskfs ${tfs_t[-1]} s"
done
tsp_m=$(printf '%s\n' "${tsp_t[@]}" | median)
tfs_m=$(printf '%s\n' "${tfs_t[@]}" | median)
log "start cost"
read -r plain queued < <(start_cost 50)
log "handover"
read -r hand_med hand_p95 hand_n < <(handover 50)
fs=$(df -T "$BASE" | awk 'NR == 2 {print $2}')

echo "| row | taskfs | baseline | ratio |"
echo "|---|---|---|---|"
echo "| $N \`true\` tasks through a queue, parallel 2, total (median of $RUNS, store on $fs) | $tfs_m s | tsp -S 2: $tsp_m s | $(echo "$tfs_m $tsp_m" | awk '{printf "%.2f", $1 / $2}')× |"
echo "| one task's start: \`run --queue\` (a queue without a limit) against \`run\` (mean of 50) | $queued ms | $plain ms | +$(echo "$queued $plain" | awk '{printf "%.2f", $1 - $2}') ms |"
echo "| a freed slot to the next task's start ($hand_n handovers of tasks that all waited, from the records: median, p95) | $hand_med ms, $hand_p95 ms | | |"
echo
echo "Runs: taskfs ${tfs_t[*]} s; tsp ${tsp_t[*]} s."
