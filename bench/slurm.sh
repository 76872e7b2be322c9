#!/bin/bash
# The Slurm executor's bench row (issue 21): start-to-first-line and total
# time of N short jobs through `taskfs run --on slurm --follow` against
# plain `srun --unbuffered` of the same command, interleaved in the same
# run, on the single-node test cluster (tests/slurm/cluster.sh, started
# and stopped here). The job: `sh -c 'echo first; echo second'`.
#
#   bench/slurm.sh [N]     N jobs per subject (default 100)
#
# Prints one markdown row: medians of first line and total, and the ratio
# (the issue asks <= 1.2x). TASKFS_BIN names the binary.
set -uo pipefail
N=${1:-100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TASKFS=${TASKFS_BIN:-$ROOT/build/taskfs}
W=$(mktemp -d /tmp/taskfs-bench-slurm.XXXXXX) || exit 111
cluster=""
cleanup() {
  [ -n "$cluster" ] && "$ROOT/tests/slurm/cluster.sh" stop "$cluster" >/dev/null 2>&1
  rm -rf "$W"
}
trap cleanup EXIT
env_line=$("$ROOT/tests/slurm/cluster.sh" start 2>/dev/null) || { echo "bench/slurm.sh: no cluster" >&2; exit 111; }
eval "$env_line"
cluster=$TFS_SLURM_DIR
export TASKFS_STATE_DIR=$W/store
cd "$W" || exit 111

# one FILE CMD...: appends "first total" (seconds from the start) to FILE.
one() {
  local file=$1 t0 t1=""
  shift
  t0=$EPOCHREALTIME
  while IFS= read -r line; do
    [ -z "$t1" ] && [ "$line" = first ] && t1=$EPOCHREALTIME
  done < <("$@" 2>/dev/null)
  local t2=$EPOCHREALTIME
  echo "$(echo "$t1 - $t0" | bc) $(echo "$t2 - $t0" | bc)" >>"$file"
}
JOB=(sh -c 'echo first; echo second')
for i in $(seq "$N"); do
  one "$W/srun" srun --unbuffered --quiet "${JOB[@]}" </dev/null
  # taskfs prints the id first, then the output (--follow).
  one "$W/taskfs" "$TASKFS" run --on slurm --follow -- "${JOB[@]}" </dev/null
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
sf=$(cut -d' ' -f1 "$W/srun" | median) st=$(cut -d' ' -f2 "$W/srun" | median)
tf=$(cut -d' ' -f1 "$W/taskfs" | median) tt=$(cut -d' ' -f2 "$W/taskfs" | median)
ms() { echo "$1 * 1000" | bc | xargs printf '%.1f'; }
echo "| $N short jobs (sh -c 'echo first; echo second') | first line: taskfs $(ms "$tf") ms, srun $(ms "$sf") ms ($(echo "scale=2; $tf / $sf" | bc)x) | total: taskfs $(ms "$tt") ms, srun $(ms "$st") ms ($(echo "scale=2; $tt / $st" | bc)x) |"
