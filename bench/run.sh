#!/bin/bash
# taskfs benchmarks: every figure against its baseline, measured in the same
# run and interleaved with it, so machine noise hits both alike.
#
#   bench/run.sh full    the real sizes (1 GiB, 200 stops, 100,000 tasks,
#                        1,000 supervisors, 1,000 MCP calls); writes
#                        bench/results.md. Takes roughly 10-15 minutes.
#   bench/run.sh quick   tiny sizes: a smoke test that CI may run (< 2 min).
#                        It fails loudly when a component is broken and
#                        never because of a timing.
#
# Environment: BUILD (build dir, default build), TASKFS_BIN (the binary),
# BENCH_ROWS (a subset, e.g. "1 5"), BENCH_DIR (where temp stores go,
# default /tmp; the full run needs about 3 GiB there), BENCH_OUT (where the
# results go; default bench/results.md for full, $BUILD/bench/results-quick.md
# for quick), BENCH_KEEP=1 (keep the raw samples in the temp dir).
#
# Helpers: bench/bt.c (timestamps, timing, latency readers, statistics),
# bench/tfsgen.c (fills a store through the core API), bench/mcp/rtt.mjs
# (the MCP SDK client for rows 6 and 8), bench/mcp/http.mjs (MCP over HTTP,
# rows 9 and 10). `make bench` builds them.
set -uo pipefail

MODE=${1:-}
case "$MODE" in
full | quick) ;;
*)
  echo "usage: bench/run.sh full|quick" >&2
  exit 100
  ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
case "$BUILD" in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
TASKFS=${TASKFS_BIN:-$BDIR/taskfs}
BT=$BDIR/bench/bt
GEN=$BDIR/bench/tfsgen
ROWS=${BENCH_ROWS:-1 2 3 4 5 6 7 8 9 10 11 12}

if [ "$MODE" = full ]; then
  RUNS=5                  # runs per throughput / listing figure (median)
  CAP=$((1024 * 1024 * 1024))
  CAP1=1000000000 # row 1: bytes per capture run (the issue's 1 GB)
  CAP2=$((512 * 1024 * 1024)) # row 2: the transcript read through the mount
  STOPS=200               # stops per method
  FOLLOW_RUNS=5           # tasks of FOLLOW_LINES stamped lines each
  FOLLOW_LINES=200
  FOLLOW_US=50000         # mean gap between stamped lines
  STARTS=50               # starts per subject
  SCALE=100000
  PRUNE_KEEP=1000
  CONC=1000
  IDLE_S=10
  IDLE_RUNS=5
  MCP_CALLS=1000
  MCP_RUNS=5
  HTTP_CLIENTS=64         # concurrent keep-alive clients (row 9)
  HTTP_CALLS=50           # calls per client per run
  HTTP_IDLE=1000          # idle connections (row 10)
  R11_STARTS=100          # row 11: detached starts per subject
  R11_QN=200              # row 11: tasks through the queue
  R11_QRUNS=3
  R11_QH=40               # row 11: tasks queued behind a paused queue (handover)
  R11_CAP=$((400 * 1024 * 1024)) # row 11: capture and mount bytes
  R11_MRUNS=15                   # row 11: cats of each for the mount figure
  R11_PROMPTS=10
  R11_SLURM=20
  OUT=${BENCH_OUT:-$ROOT/bench/results.md}
else
  RUNS=5
  CAP=$((8 * 1024 * 1024))
  CAP1=$CAP
  CAP2=$CAP
  STOPS=20
  FOLLOW_RUNS=1
  FOLLOW_LINES=20
  FOLLOW_US=30000
  STARTS=10
  SCALE=1000
  PRUNE_KEEP=100
  CONC=20
  IDLE_S=2
  IDLE_RUNS=1
  MCP_CALLS=50
  MCP_RUNS=5
  HTTP_CLIENTS=8
  HTTP_CALLS=5
  HTTP_IDLE=100
  R11_STARTS=10
  R11_QN=20
  R11_QRUNS=1
  R11_QH=6
  R11_CAP=$((8 * 1024 * 1024))
  R11_MRUNS=1
  R11_PROMPTS=2
  R11_SLURM=2
  OUT=${BENCH_OUT:-$BDIR/bench/results-quick.md}
fi
export BT_TIMEOUT_S=600

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
  printf '\nbench: FAILED: %s\n' "$*" >&2
  exit 1
}
need() { [ -x "$1" ] || die "$1 is missing: run 'make BUILD=$BUILD bench' (or bench-quick), which builds it"; }
need "$TASKFS"
need "$BT"
need "$GEN"
command -v tsp >/dev/null || die "tsp is missing: apt-get install task-spooler"
command -v node >/dev/null || die "node is missing: apt-get install nodejs npm"
command -v fusermount3 >/dev/null || die "fusermount3 is missing: apt-get install fuse3"

W=$(mktemp -d "${BENCH_DIR:-/tmp}/taskfs-bench.XXXXXX") || die "cannot make a temp dir"
mkdir -p "$W/tmp" "$W/tsp"
export TMPDIR=$W/tmp TS_SOCKET=$W/tsp.sock TS_MAXFINISHED=100000
STORES=()
MOUNTS=()    # "mountpoint pid"
KILLPIDS=()  # helper processes we started (tail -f, readers)
PRUNE_DIRS=() # temp dirs outside $W (tmpfs)

# ---- cleanup: unmount, stop every supervisor we started, remove temp files

stop_store_tasks() {
  local s=$1 live
  [ -d "$s/tasks" ] || return 0
  "$GEN" cancel-all "$s" "bench cleanup" >/dev/null 2>&1
  for _ in $(seq 100); do
    live=$("$GEN" pids "$s" 2>/dev/null | awk '$2=="running"||$2=="queued"' | wc -l)
    [ "$live" -eq 0 ] && return 0
    sleep 0.1
  done
  # Still alive after 10 s: kill the supervisors we started, by the pid
  # their own record names, after checking that the pid is still a
  # taskfs supervisor; then their workers' process groups.
  "$GEN" pids "$s" 2>/dev/null | awk '$2=="running"||$2=="queued"{print $3, $4}' |
    while read -r sp wp; do
      if [ "$sp" -gt 1 ] && tr '\0' ' ' <"/proc/$sp/cmdline" 2>/dev/null | grep -q supervise; then
        kill -KILL "$sp" 2>/dev/null
      fi
      [ "$wp" -gt 1 ] && kill -KILL -- "-$wp" 2>/dev/null
    done
  log "cleanup: killed supervisors that ignored the stop request in $s"
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in "${KILLPIDS[@]}"; do kill "$p" 2>/dev/null; done
  for m in "${MOUNTS[@]}"; do
    set -- $m
    fusermount3 -u -z "$1" 2>/dev/null
    kill "$2" 2>/dev/null
  done
  for s in "${STORES[@]}"; do stop_store_tasks "$s"; done
  tsp -K >/dev/null 2>&1
  for d in "${PRUNE_DIRS[@]}"; do rm -rf "$d"; done
  for m in "${MOUNTS[@]}"; do
    set -- $m
    for _ in $(seq 50); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
  done
  if [ -n "${BENCH_KEEP:-}" ]; then
    log "kept $W (BENCH_KEEP)"
  else
    rm -rf "$W"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- small helpers

# stats FILE [DIV] -> "n median p99 min max mean"
stats() { "$BT" stats "${2:-1}" <"$1"; }
med() { "$BT" stats "${2:-1}" <"$1" | awk '{print $2}'; }
p99() { "$BT" stats "${2:-1}" <"$1" | awk '{print $3}'; }
calc() { awk "BEGIN{printf \"%.${2:-2}f\", $1}"; }
# ok EXPR: awk truth of a comparison, for verdicts.
ok() { awk "BEGIN{exit !($1)}"; }
verdict() { if ok "$1"; then echo "met"; else echo "**missed**"; fi; }
# jget FILE EXPR: a field of a JSON file, by a JS expression on `j`.
jget() { node -e "const j=JSON.parse(require('fs').readFileSync('$1','utf8')); const v=($2); console.log(typeof v==='number'? +v.toFixed(3) : v)"; }

: >"$W/rows.tsv"
: >"$W/cmds.md"
: >"$W/notes.md"
# row ID FIGURE SUBJECT BASELINE RATIO GOAL VERDICT
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$W/rows.tsv"; }
cmd() { printf -- '- %s\n' "$*" >>"$W/cmds.md"; }
note() { printf -- '%s\n' "$*" >>"$W/notes.md"; }

# new_store NAME: sets S to a fresh store dir that cleanup will empty.
# (Globals, not $(...): a subshell would lose the bookkeeping.)
new_store() {
  S=$W/$1
  mkdir -p "$S"
  STORES+=("$S")
}

# mount_store STORE MNT: a foreground mount in the background, so we own
# its pid (set in MPID); waits until it answers.
mount_store() {
  local s=$1 m=$2 pid
  mkdir -p "$m"
  "$TASKFS" mount --state-dir "$s" --foreground "$m" 2>>"$W/mount.log" &
  pid=$!
  MPID=$pid
  MOUNTS+=("$m $pid")
  for _ in $(seq 100); do
    if mountpoint -q "$m" && [ -d "$m/tasks" ]; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$W/mount.log" >&2
  die "taskfs mount $m did not come up within 5 s"
}

unmount_store() {
  local m=$1 pid=$2
  fusermount3 -u "$m" 2>/dev/null || "$TASKFS" umount "$m" 2>/dev/null || fusermount3 -u -z "$m"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
  kill "$pid" 2>/dev/null
}

# task_wait STORE ID EXPECT_RC: waits for the end; checks the exit code that
# says how it ended.
task_wait() {
  local rc=0
  "$TASKFS" wait --state-dir "$1" --timeout 60 "$2" >/dev/null 2>"$W/wait.err" || rc=$?
  [ "$rc" = "$3" ] || die "task $2 ended with wait exit code $rc, expected $3: $(cat "$W/wait.err"; "$TASKFS" show --state-dir "$1" "$2" 2>&1 | head -c 1500)"
}

# forget_finished STORE: empties the store between runs (disk space).
forget_finished() {
  "$TASKFS" prune --state-dir "$1" --keep 0 >/dev/null 2>&1 || true
}

mib() { calc "$1 / 1048576" 0; }

# ---- row 1: capture throughput -------------------------------------------

LONG_ARG=$(head -c 4095 /dev/zero | tr '\0' x)
LINE80="src/foo/bar.c:123: compiling module number 42 with flags -O2 -g -Wall ok"

# tsp_run CMD: queue CMD in task-spooler and wait for it (what a tsp user
# does to get a result); prints the output file.
cat >"$W/tsp-run.sh" <<'EOF'
#!/bin/sh
id=$(tsp sh -c "$1") || exit 1
tsp -w "$id" >/dev/null 2>&1
tsp -o "$id"
EOF
chmod +x "$W/tsp-run.sh"

# The producer of each kind of output: something fast, cut by head -c, so
# that every kind reaches its consumer the same way (in head's writes).
row1_cmdline() {
  case $1 in
  short) echo "yes | head -c $CAP1" ;;
  line80) echo "yes '$LINE80' | head -c $CAP1" ;;
  long) echo "yes $LONG_ARG | head -c $CAP1" ;;
  binary) echo "'$BT' cycle '$W/random.bin' | head -c $CAP1" ;;
  buildlog) echo "'$BT' cycle '$W/buildlog.txt' | head -c $CAP1" ;;
  esac
}

row1_label() {
  case $1 in
  short) echo "2-byte lines (\`yes\`)" ;;
  line80) echo "80-byte compiler-like lines (\`yes 'src/foo/bar.c:123: ...'\`)" ;;
  long) echo "4 KiB lines" ;;
  binary) echo "binary data (8 MiB of /dev/urandom, repeated)" ;;
  buildlog) echo "replay of this project's \`make -j2\` log ($(wc -l <"$W/buildlog.txt") lines, repeated)" ;;
  esac
}

# row1_one KIND SUBJECT: one timed run; checks the captured size.
row1_one() {
  local kind=$1 subj=$2 s=$W/s1 cmdline id size f
  cmdline=$(row1_cmdline "$kind")
  # Earlier runs' dirty pages are written back first, so that no subject
  # pays for the one before it.
  sync -f "$W" 2>/dev/null || sync
  case $subj in
  redir)
    "$BT" time "$W/r1.$kind.redir" -- sh -c "$cmdline > '$W/redir.out'" || die "the redirect baseline failed"
    size=$(stat -c %s "$W/redir.out")
    rm -f "$W/redir.out"
    ;;
  tfs)
    "$BT" time "$W/r1.$kind.tfs" -- "$TASKFS" run --state-dir "$s" --wait -- sh -c "$cmdline" >"$W/id" 2>"$W/run.err" ||
      die "taskfs run --wait ($kind) failed: $(cat "$W/run.err")"
    id=$(head -n 1 "$W/id")
    [ -n "$id" ] || die "taskfs run printed no task id"
    size=$(stat -c %s "$s/tasks/$id/transcript") || die "task $id has no transcript"
    forget_finished "$s"
    rm -rf "${s:?}/tasks/$id" # in case its supervisor was still exiting
    ;;
  tsp)
    "$BT" time "$W/r1.$kind.tsp" -- "$W/tsp-run.sh" "$cmdline" >"$W/tspout" || die "tsp failed"
    f=$(cat "$W/tspout")
    size=$(stat -c %s "$f") || die "tsp left no output file"
    rm -f "$f"
    tsp -C
    ;;
  esac
  [ "$size" = "$CAP1" ] || die "row 1 $subj ($kind) captured $size bytes, expected $CAP1"
}

row1() {
  local kind r order subj
  new_store s1
  log "row 1: capture throughput, $CAP1 bytes per run, $RUNS runs of each kind"
  gzip -dc "$ROOT/bench/buildlog.txt.gz" >"$W/buildlog.txt" || die "cannot unpack bench/buildlog.txt.gz"
  head -c $((8 << 20)) /dev/urandom >"$W/random.bin"
  for kind in ${ROW1_KINDS:-short line80 long binary buildlog}; do
    : >"$W/r1.$kind.redir"
    : >"$W/r1.$kind.tfs"
    : >"$W/r1.$kind.tsp"
    for r in $(seq "$RUNS"); do
      # Rotate who goes first so that no subject always runs on a warmer
      # page cache than another.
      case $((r % 3)) in
      0) order="redir tfs tsp" ;;
      1) order="tfs tsp redir" ;;
      2) order="tsp redir tfs" ;;
      esac
      for subj in $order; do row1_one "$kind" "$subj"; done
    done
    local tr tt ts ratio
    tr=$(calc "$CAP1 / 1048576 / ($(med "$W/r1.$kind.redir") / 1e9)" 0)
    tt=$(calc "$CAP1 / 1048576 / ($(med "$W/r1.$kind.tfs") / 1e9)" 0)
    ts=$(calc "$CAP1 / 1048576 / ($(med "$W/r1.$kind.tsp") / 1e9)" 0)
    ratio=$(calc "$tt / $tr" 2)
    row "1" "capture throughput, $(row1_label "$kind"), $CAP1 bytes" "$tt MiB/s" "redirect $tr MiB/s; tsp $ts MiB/s" \
      "${ratio}× redirect, $(calc "$tt / $ts" 2)× tsp" "≥ 0.9× redirect" "$(verdict "$ratio >= 0.9")"
  done
  # The classifier on its own (bench/classify_bench.c, by the important
  # lines engineer): what the per-line work costs without pipes and files.
  local cb=$BDIR/bench/classify_bench cbout
  if [ -x "$cb" ]; then
    cbout=$("$cb" "$([ "$MODE" = full ] && echo 200 || echo 20)" | head -n 1) || die "classify_bench failed"
    note "Row 1 context: the important-line classifier alone on a mixed build/test log: ${cbout#classify_bench: }."
    cmd "row 1 context: \`$BUILD/bench/classify_bench $([ "$MODE" = full ] && echo 200 || echo 20)\` (tfs_important_feed over a generated log, best of 3)."
  fi
  cmd "row 1: for each kind, \`taskfs run --state-dir S --wait -- sh -c 'PRODUCER | head -c $CAP1'\` vs \`sh -c 'PRODUCER | head -c $CAP1 > FILE'\` vs \`tsp sh -c '...'; tsp -w\`; PRODUCER: \`yes\` (2-byte lines), \`yes '$LINE80'\`, \`yes <4095 x>\` (4 KiB lines), \`bt cycle random.bin\` (8 MiB from /dev/urandom, written again and again), \`bt cycle buildlog.txt\` (bench/buildlog.txt.gz: the output of \`make -j2\` of this tree and its tests, recorded once). Wall time per run by \`bt time\`, after \`sync -f\` (no run pays for the previous one's writeback); $RUNS runs each, order rotated; throughput from the median."
}

# ---- row 2: read throughput through the mount ------------------------------

# row2_pair MNTFILE FILE OUT: RUNS cats of each, alternating (both warm).
row2_pair() {
  local r order subj
  : >"$3.mnt"
  : >"$3.file"
  for r in $(seq "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="mnt file"; else order="file mnt"; fi
    for subj in $order; do
      case $subj in
      mnt) "$BT" time "$3.mnt" -- cat "$1" >/dev/null || die "cat through the mount failed" ;;
      file) "$BT" time "$3.file" -- cat "$2" >/dev/null || die "cat of the backing file failed" ;;
      esac
    done
  done
}

row2() {
  local s m mpid id run
  new_store s2
  s=$S
  log "row 2: read throughput through the mount, $(mib $CAP2) MiB transcript"
  id=$("$TASKFS" run --state-dir "$s" --wait -- sh -c "yes $LONG_ARG | head -c $CAP2" 2>"$W/run.err") ||
    die "taskfs run --wait failed: $(cat "$W/run.err")"
  id=$(echo "$id" | head -n 1)
  # A running task's transcript of the same size (its reads stay direct_io).
  run=$("$TASKFS" run --state-dir "$s" -- sh -c "yes $LONG_ARG | head -c $CAP2; sleep 100000" 2>"$W/run.err") ||
    die "taskfs run failed: $(cat "$W/run.err")"
  run=$(echo "$run" | head -n 1)
  "$BT" waitsize "$s/tasks/$run/transcript" "$CAP2" 60000 || die "the running task did not write its transcript"
  m=$W/m2
  mount_store "$s" "$m"
  mpid=$MPID
  [ "$(stat -c %s "$m/tasks/$id/transcript")" = "$CAP2" ] || die "the mount reports the wrong transcript size"
  : >"$W/r2.first"
  "$BT" time "$W/r2.first" -- cat "$m/tasks/$id/transcript" >/dev/null || die "cat through the mount failed"
  cmp -s "$m/tasks/$id/transcript" "$s/tasks/$id/transcript" || die "cat through the mount differs from the backing file"
  cmp -s "$m/tasks/$run/transcript" "$s/tasks/$run/transcript" || die "cat through the mount differs from the backing file"
  row2_pair "$m/tasks/$id/transcript" "$s/tasks/$id/transcript" "$W/r2"
  row2_pair "$m/tasks/$run/transcript" "$s/tasks/$run/transcript" "$W/r2run"
  local tm tf ratio rss t1 rm rf
  tm=$(calc "$CAP2 / 1048576 / ($(med "$W/r2.mnt") / 1e9)" 0)
  tf=$(calc "$CAP2 / 1048576 / ($(med "$W/r2.file") / 1e9)" 0)
  t1=$(calc "$CAP2 / 1048576 / ($(med "$W/r2.first") / 1e9)" 0)
  rm=$(calc "$CAP2 / 1048576 / ($(med "$W/r2run.mnt") / 1e9)" 0)
  rf=$(calc "$CAP2 / 1048576 / ($(med "$W/r2run.file") / 1e9)" 0)
  ratio=$(calc "$tm / $tf" 2)
  rss=$(awk '/VmHWM/{print $2}' "/proc/$mpid/status")
  row "2" "read throughput, warm \`cat\` of a $(mib $CAP2) MiB transcript (ended task) through the mount" "$tm MiB/s (mount peak RSS $(calc "$rss/1024" 1) MiB)" \
    "cat of the backing file $tf MiB/s" "${ratio}×" "≥ 0.8×" "$(verdict "$ratio >= 0.8")"
  row "2" "read throughput, \`cat\` of a running task's $(mib $CAP2) MiB transcript through the mount (direct_io)" "$rm MiB/s" \
    "cat of the backing file $rf MiB/s" "$(calc "$rm / $rf" 2)×" "reported" "measured"
  note "Row 2 context: the first \`cat\` of the ended task's transcript after mounting (the mount's page cache cold, the backing file's warm): $t1 MiB/s."
  cmd "row 2: \`cat MNT/tasks/ID/transcript > /dev/null\` vs \`cat STATE/tasks/ID/transcript > /dev/null\` (page cache warm for both: one cat and a cmp first); $RUNS runs each, alternating; for an ended task (read through the page cache) and for a running one (\`sh -c 'yes <4095 x> | head -c $CAP2; sleep 100000'\`, direct_io)."
  "$TASKFS" cancel --state-dir "$s" "$run" >/dev/null 2>&1
  task_wait "$s" "$run" 130
  unmount_store "$m" "$mpid"
  forget_finished "$s"
}

# ---- row 3: stop latency -----------------------------------------------------

row3() {
  local s m mpid i id method order wpid
  new_store s3
  s=$S
  m=$W/m3
  mount_store "$s" "$m"
  mpid=$MPID
  log "row 3: stop latency, $STOPS stops per method"
  for method in file cli kill binkill; do : >"$W/r3.$method"; done
  for i in $(seq "$STOPS"); do
    case $((i % 4)) in
    0) order="file cli kill binkill" ;;
    1) order="cli kill binkill file" ;;
    2) order="kill binkill file cli" ;;
    3) order="binkill file cli kill" ;;
    esac
    for method in $order; do
      rm -f "$W/ready" "$W/stamp"
      id=$("$TASKFS" run --state-dir "$s" -- "$BT" trapworker "$W/ready" "$W/stamp" 2>"$W/run.err") ||
        die "taskfs run failed: $(cat "$W/run.err")"
      id=$(echo "$id" | head -n 1)
      "$BT" waitsize "$W/ready" 2 10000 || die "the trap worker of task $id never became ready"
      wpid=$(cat "$W/ready")
      case $method in
      file) "$BT" stop file "$m/tasks/$id/cancel" -- "$W/stamp" 10000 >>"$W/r3.file" || die "echo 1 > cancel on the mount did not stop task $id" ;;
      cli) "$BT" stop exec "$TASKFS" cancel --state-dir "$s" "$id" -- "$W/stamp" 10000 >>"$W/r3.cli" || die "taskfs cancel did not stop task $id" ;;
      kill) "$BT" stop kill "$wpid" -- "$W/stamp" 10000 >>"$W/r3.kill" || die "kill did not reach the worker" ;;
      binkill) "$BT" stop exec /bin/kill -TERM "$wpid" -- "$W/stamp" 10000 >>"$W/r3.binkill" || die "/bin/kill did not reach the worker" ;;
      esac
      # A stop request ends the task cancelled (130); the worker's own exit
      # after a direct kill ends it completed (0).
      case $method in file | cli) task_wait "$s" "$id" 130 ;; *) task_wait "$s" "$id" 0 ;; esac
    done
    [ $((i % 50)) = 0 ] && forget_finished "$s"
  done
  local f c k b
  f=$(stats "$W/r3.file" 1e6)
  c=$(stats "$W/r3.cli" 1e6)
  k=$(stats "$W/r3.kill" 1e6)
  b=$(stats "$W/r3.binkill" 1e6)
  local fp50 fp99 cp50 cp99 kp50 kp99 bp50 bp99
  read -r _ fp50 fp99 _ <<<"$f"
  read -r _ cp50 cp99 _ <<<"$c"
  read -r _ kp50 kp99 _ <<<"$k"
  read -r _ bp50 bp99 _ <<<"$b"
  row "3" "stop latency, \`echo 1 > cancel\` on the mount ($STOPS stops)" "p50 $(calc $fp50 2) ms, p99 $(calc $fp99 2) ms" \
    "kill(2) p50 $(calc $kp50 3) / p99 $(calc $kp99 3) ms; /bin/kill p50 $(calc $bp50 2) / p99 $(calc $bp99 2) ms" \
    "p99 $(calc "$fp99 - $kp99" 2) ms over kill(2)" "p99 ≤ 10 ms" "$(verdict "$fp99 <= 10")"
  row "3" "stop latency, \`taskfs cancel\` ($STOPS stops)" "p50 $(calc $cp50 2) ms, p99 $(calc $cp99 2) ms" \
    "(same)" "p99 $(calc "$cp99 - $bp99" 2) ms over /bin/kill" "p99 ≤ 10 ms" "$(verdict "$cp99 <= 10")"
  cmd "row 3: worker \`taskfs run -- bt trapworker READY STAMPS\` (traps SIGTERM, its handler appends CLOCK_REALTIME ns); t0 (CLOCK_REALTIME) taken by \`bt stop\` just before: open(MNT/tasks/ID/cancel, O_TRUNC) + write of \"1\" and a newline (what \`echo 1 > cancel\` does) | exec of \`taskfs cancel ID\` | kill(2) of the worker pid | exec of \`/bin/kill -TERM PID\`; figure = stamp - t0; $STOPS stops per method, methods rotated each round; each task then checked ended (cancelled, or completed after a direct kill)."
  unmount_store "$m" "$mpid"
  forget_finished "$s"
}

# ---- row 4: follow latency --------------------------------------------------

row4() {
  local s m mpid r id T MT p_logs p_poll p_mcp p_tm p_tf t_tm t_tf
  new_store s4
  s=$S
  m=$W/m4
  mount_store "$s" "$m"
  mpid=$MPID
  log "row 4: follow latency, $FOLLOW_RUNS runs of $FOLLOW_LINES lines"
  for k in logs poll mcp tailm tailf; do : >"$W/r4.$k"; done
  for r in $(seq "$FOLLOW_RUNS"); do
    rm -f "$W/go" "$W"/f4.* "$W"/fifo.*
    id=$("$TASKFS" run --state-dir "$s" -- "$BT" stamper "$FOLLOW_LINES" "$FOLLOW_US" "$W/go" 2>"$W/run.err") ||
      die "taskfs run failed: $(cat "$W/run.err")"
    id=$(echo "$id" | head -n 1)
    T=$s/tasks/$id/transcript
    MT=$m/tasks/$id/transcript
    "$BT" waitsize "$MT" 1 10000 || die "the transcript of task $id never showed on the mount"
    local tmo=$((FOLLOW_LINES * FOLLOW_US * 2 / 1000 + 30000))
    "$TASKFS" logs --state-dir "$s" -f "$id" 2>"$W/logs.err" | "$BT" lat "$FOLLOW_LINES" "$W/f4.logs" "$tmo" &
    p_logs=$!
    "$BT" pollread "$MT" "$FOLLOW_LINES" "$W/f4.poll" "$tmo" &
    p_poll=$!
    : >"$W/f4.mcp"
    node "$ROOT/bench/mcp/rtt.mjs" follow "$TASKFS" "$s" "$id" "$FOLLOW_LINES" "$W/f4.mcp" "$tmo" >/dev/null 2>"$W/mcpf.err" &
    p_mcp=$!
    mkfifo "$W/fifo.tm" "$W/fifo.tf"
    "$BT" lat "$FOLLOW_LINES" "$W/f4.tailm" "$tmo" <"$W/fifo.tm" &
    p_tm=$!
    "$BT" lat "$FOLLOW_LINES" "$W/f4.tailf" "$tmo" <"$W/fifo.tf" &
    p_tf=$!
    tail -f "$MT" >"$W/fifo.tm" &
    t_tm=$!
    tail -f "$T" >"$W/fifo.tf" &
    t_tf=$!
    KILLPIDS+=("$t_tm" "$t_tf" "$p_logs" "$p_poll" "$p_mcp" "$p_tm" "$p_tf")
    sleep 1.5 # every follower is in place, tail -f on the mount past its first poll
    touch "$W/go"
    local failed=""
    wait "$p_logs" || failed="$failed taskfs-logs-f($(cat "$W/logs.err"))"
    wait "$p_poll" || failed="$failed poll-reader-on-mount"
    wait "$p_mcp" || failed="$failed mcp-long-poll($(cat "$W/mcpf.err"))"
    wait "$p_tm" || failed="$failed tail-f-on-mount"
    wait "$p_tf" || failed="$failed tail-f-on-file"
    kill "$t_tm" "$t_tf" 2>/dev/null
    wait "$t_tm" "$t_tf" 2>/dev/null
    [ -z "$failed" ] || die "row 4: these followers missed lines:$failed"
    cat "$W/f4.logs" >>"$W/r4.logs"
    cat "$W/f4.poll" >>"$W/r4.poll"
    cat "$W/f4.mcp" >>"$W/r4.mcp"
    cat "$W/f4.tailm" >>"$W/r4.tailm"
    cat "$W/f4.tailf" >>"$W/r4.tailf"
    cat "$W/f4.poll.cpu" >>"$W/r4.pollcpu"
    task_wait "$s" "$id" 0
  done
  local l p tm tf
  read -r _ lp50 lp99 _ <<<"$(stats "$W/r4.logs" 1e6)"
  read -r _ pp50 pp99 _ <<<"$(stats "$W/r4.poll" 1e6)"
  read -r _ cp50 cp99 _ <<<"$(stats "$W/r4.mcp" 1e6)"
  read -r _ mp50 mp99 _ <<<"$(stats "$W/r4.tailm" 1e6)"
  read -r _ fp50 fp99 _ <<<"$(stats "$W/r4.tailf" 1e6)"
  local n=$((FOLLOW_RUNS * FOLLOW_LINES)) pcpu
  pcpu=$(awk '{s+=$1} END{printf "%.0f", s}' "$W/r4.pollcpu")
  local base="tail -f on the backing file p50 $(calc $fp50 2) / p99 $(calc $fp99 2) ms"
  row "4" "follow latency, \`taskfs logs -f\` ($n lines)" "p50 $(calc $lp50 2) ms, p99 $(calc $lp99 2) ms" "$base" \
    "p99 $(calc "$lp99 / $fp99" 1)× tail -f" "p99 ≤ 5 ms" "$(verdict "$lp99 <= 5")"
  row "4" "follow latency, poll() reader on the mount ($n lines)" "p50 $(calc $pp50 2) ms, p99 $(calc $pp99 2) ms (reader CPU ${pcpu} ms in all)" "(same)" \
    "p99 $(calc "$pp99 / $fp99" 1)× tail -f" "p99 ≤ 5 ms" "$(verdict "$pp99 <= 5")"
  row "4" "follow latency, MCP long-poll (read_managed_task untilPattern per line, $n lines)" "p50 $(calc $cp50 2) ms, p99 $(calc $cp99 2) ms" "(same)" \
    "p99 $(calc "$cp99 / $fp99" 1)× tail -f" "p99 ≤ 5 ms" "$(verdict "$cp99 <= 5")"
  row "4" "follow latency, coreutils \`tail -f\` on the mount ($n lines)" "p50 $(calc $mp50 1) ms, p99 $(calc $mp99 1) ms" "(same)" \
    "p99 $(calc "$mp99 / $fp99" 0)× tail -f" "reported as measured" "measured"
  cmd "row 4: worker \`taskfs run -- bt stamper $FOLLOW_LINES $FOLLOW_US GO\` writes \`STAMP seq CLOCK_REALTIME-ns\` lines (mean gap $((FOLLOW_US / 1000)) ms, jittered) once every follower is in place; followers at the same time: \`taskfs logs -f ID | bt lat\`, \`bt pollread MNT/tasks/ID/transcript\` (poll() then read), \`node bench/mcp/rtt.mjs follow\` (one MCP client; for each line a read_managed_task long-poll with untilPattern \`^STAMP seq \` after the last match), \`tail -f MNT/tasks/ID/transcript > fifo\`, \`tail -f STATE/tasks/ID/transcript > fifo\` (fifo read by \`bt lat\`); figure = arrival - stamp; $FOLLOW_RUNS tasks."
  unmount_store "$m" "$mpid"
  forget_finished "$s"
}

# ---- row 5: start latency ---------------------------------------------------

row5() {
  local s i order subj
  new_store s5
  s=$S
  log "row 5: start latency, $STARTS starts per subject"
  : >"$W/r5.tfs"
  : >"$W/r5.tsp"
  : >"$W/r5.sh"
  tsp true >/dev/null # starts the tsp server; its start is not what we time
  sleep 0.2
  tsp -C
  for i in $(seq "$STARTS"); do
    case $((i % 3)) in
    0) order="tfs tsp sh" ;;
    1) order="tsp sh tfs" ;;
    2) order="sh tfs tsp" ;;
    esac
    for subj in $order; do
      case $subj in
      tfs)
        "$BT" time "$W/r5.tfs" -- "$TASKFS" run --state-dir "$s" -- true >"$W/id" 2>"$W/run.err" || die "taskfs run -- true failed: $(cat "$W/run.err")"
        [ -n "$(head -n 1 "$W/id")" ] || die "taskfs run printed no id"
        ;;
      tsp) "$BT" time "$W/r5.tsp" -- tsp true >/dev/null || die "tsp true failed" ;;
      sh) "$BT" time "$W/r5.sh" -- sh -c 'true &' || die "sh failed" ;;
      esac
    done
    if [ $((i % 25)) = 0 ]; then
      tsp -w >/dev/null 2>&1
      tsp -C
      rm -f "$W"/tmp/ts-out.*
    fi
  done
  # Every task must have started and ended: none stays queued.
  sleep 0.5
  local bad
  bad=$("$GEN" pids "$s" | awk '$2!="completed"' | head -3)
  [ -z "$bad" ] || die "row 5: tasks that did not complete: $bad"
  local t p sh
  t=$(calc "$(med "$W/r5.tfs") / 1e6" 2)
  p=$(calc "$(med "$W/r5.tsp") / 1e6" 2)
  sh=$(calc "$(med "$W/r5.sh") / 1e6" 2)
  local ratio
  ratio=$(calc "$t / $p" 2)
  row "5" "start latency, \`taskfs run -- true\` until recorded running (median of $STARTS)" "$t ms (p99 $(calc "$(p99 "$W/r5.tfs") / 1e6" 2) ms)" \
    "tsp true $p ms; sh -c 'true &' $sh ms" "${ratio}× tsp" "≤ 2× tsp" "$(verdict "$ratio <= 2")"
  cmd "row 5: \`taskfs run --state-dir S -- true\` (returns once the task is recorded running) vs \`tsp true\` (server already up) vs \`sh -c 'true &'\`, each timed by \`bt time\`; $STARTS rounds, order rotated."
  tsp -w >/dev/null 2>&1
  tsp -C
  forget_finished "$s"
}

# ---- row 6: scale ------------------------------------------------------------

# prune_dir: where the prune runs put their stores. Deleting 100,000 task
# directories on this VM's disk (ext4 mounted with discard) is bound by the
# disk, not by taskfs: so the median of runs is taken on tmpfs, where it
# shows taskfs's own cost, and one extra run on the disk shows what a user
# waits (full mode; PRUNE_DISK=0 skips it).
prune_dir() {
  local d=${BENCH_PRUNE_DIR:-/dev/shm}
  if [ -d "$d" ] && [ -w "$d" ] && [ "$(df -Pk "$d" | awk 'NR==2{print $4}')" -gt $((3 * 1024 * 1024)) ]; then
    mktemp -d "$d/taskfs-bench-prune.XXXXXX"
  else
    mktemp -d "$W/prune.XXXXXX"
  fi
}

# prune_pair DIR OUT_TFS OUT_RM: one prune run and its baseline, on two
# fresh stores of SCALE tasks: `taskfs prune --keep K` against `rm -rf` of
# the same number of oldest task directories.
prune_pair() {
  local d=$1 a=$1/a b=$1/b n order subj
  rm -rf "$a" "$b"
  "$GEN" fill "$a" $((SCALE - 1)) >/dev/null || die "tfsgen fill failed"
  "$GEN" fill "$b" $((SCALE - 1)) >/dev/null || die "tfsgen fill failed"
  sync
  if [ $((RANDOM % 2)) = 0 ]; then order="tfs rm"; else order="rm tfs"; fi
  for subj in $order; do
    case $subj in
    tfs)
      "$BT" time "$2" -- "$TASKFS" prune --state-dir "$a" --keep "$PRUNE_KEEP" >/dev/null 2>"$W/prune.err" ||
        die "taskfs prune failed: $(cat "$W/prune.err")"
      n=$("$GEN" count "$a")
      [ "$n" = "$PRUNE_KEEP" ] || die "after prune --keep $PRUNE_KEEP the store holds $n tasks"
      ;;
    rm)
      "$BT" time "$3" -- sh -c 'cd "$1/tasks" && ls | head -n "$2" | xargs rm -rf' _ "$b" $((SCALE - PRUNE_KEEP)) ||
        die "rm -rf baseline failed"
      ;;
    esac
  done
  rm -rf "$a" "$b"
}

row6() {
  local s m mpid r order subj t0 t1 gen_s n
  new_store s6
  s=$S
  log "row 6: scale, $SCALE stored tasks"
  t0=$("$BT" now)
  n=$("$GEN" fill "$s" $((SCALE - 1))) || die "tfsgen fill failed"
  t1=$("$BT" now)
  gen_s=$(calc "($t1 - $t0) / 1e9" 1)
  [ "$n" = "$SCALE" ] || die "tfsgen made $n tasks, expected $SCALE"
  [ "$("$GEN" count "$s")" = "$SCALE" ] || die "tfs_task_count disagrees with $SCALE"
  m=$W/m6
  mount_store "$s" "$m"
  mpid=$MPID
  for k in ls mls mlsl lsl; do : >"$W/r6.$k"; done
  for r in $(seq "$RUNS"); do
    case $((r % 3)) in
    0) order="ls mls lsl" ;;
    1) order="mls lsl ls" ;;
    2) order="lsl ls mls" ;;
    esac
    for subj in $order; do
      case $subj in
      ls)
        "$BT" time "$W/r6.ls" -- "$TASKFS" ls --state-dir "$s" >"$W/ls.out" 2>"$W/ls.err" || die "taskfs ls failed: $(cat "$W/ls.err")"
        n=$(grep -c . "$W/ls.out")
        [ "$n" -ge "$SCALE" ] || die "taskfs ls printed $n lines for $SCALE tasks"
        ;;
      mls)
        "$BT" time "$W/r6.mls" -- ls "$m/tasks" >"$W/ls.out" || die "ls of the mount failed"
        n=$(wc -l <"$W/ls.out")
        [ "$n" = "$SCALE" ] || die "ls MNT/tasks shows $n tasks, expected $SCALE"
        ;;
      lsl) "$BT" time "$W/r6.lsl" -- ls -l "$s/tasks" >/dev/null || die "ls -l of the store failed" ;;
      esac
    done
  done
  # ls -l through the mount: once (it stats every task through FUSE).
  "$BT" time "$W/r6.mlsl" -- ls -l "$m/tasks" >"$W/ls.out" || die "ls -l of the mount failed"
  n=$(grep -c '^d' "$W/ls.out")
  [ "$n" = "$SCALE" ] || die "ls -l MNT/tasks shows $n task dirs, expected $SCALE"
  local mrss mhwm
  mrss=$(awk '/VmRSS/{print $2}' "/proc/$mpid/status")
  mhwm=$(awk '/VmHWM/{print $2}' "/proc/$mpid/status")
  unmount_store "$m" "$mpid"
  node "$ROOT/bench/mcp/rtt.mjs" list "$TASKFS" "$s" "$RUNS" "$SCALE" >"$W/r6.mcp.json" || die "list_managed_tasks on $SCALE tasks failed"
  rm -rf "$s/tasks" "$s/keys" # space, and a quieter disk for what follows

  : >"$W/r6.prune"
  : >"$W/r6.rm"
  local pd
  pd=$(prune_dir)
  PRUNE_DIRS+=("$pd")
  for r in $(seq "$RUNS"); do prune_pair "$pd" "$W/r6.prune" "$W/r6.rm"; done
  local pfs
  pfs=$(df -T "$pd" | awk 'NR==2{print $2}')
  local tl tm tml tb tp trm
  tl=$(calc "$(med "$W/r6.ls") / 1e6" 0)
  tm=$(calc "$(med "$W/r6.mls") / 1e6" 0)
  tml=$(calc "$(med "$W/r6.mlsl") / 1e6" 0)
  tb=$(calc "$(med "$W/r6.lsl") / 1e6" 0)
  tp=$(calc "$(med "$W/r6.prune") / 1e6" 0)
  trm=$(calc "$(med "$W/r6.rm") / 1e6" 0)
  local mc mw mst mh psz
  mst=$(jget "$W/r6.mcp.json" "j.median.startup")
  mc=$(jget "$W/r6.mcp.json" "j.median.cold")
  mw=$(jget "$W/r6.mcp.json" "j.median.warm")
  mh=$(jget "$W/r6.mcp.json" "j.maxHwmKiB")
  psz=$(jget "$W/r6.mcp.json" "j.pageSize")
  local base="ls -l STATE/tasks $tb ms"
  row "6" "scale: \`taskfs ls\`, $SCALE tasks" "$tl ms" "$base" "$(calc "$tl / $tb" 1)× ls -l" "≤ 1 s" "$(verdict "$tl <= 1000")"
  row "6" "scale: \`ls MNT/tasks\`, $SCALE tasks" "$tm ms; mount RSS $(calc "$mrss/1024" 1) MiB, peak $(calc "$mhwm/1024" 1) MiB" "(same)" \
    "$(calc "$tm / $tb" 2)× ls -l" "≤ 1 s; RSS reported" "$(verdict "$tm <= 1000")"
  row "6" "scale: \`ls -l MNT/tasks\`, $SCALE tasks (1 run)" "$tml ms" "(same)" \
    "$(calc "$tml / $tb" 1)× ls -l" "(not a goal; reported)" "measured"
  row "6" "scale: first page of list_managed_tasks ($psz tasks), $SCALE tasks" "$mc ms first call on a fresh server, $mw ms next call; server start $mst ms; MCP server peak RSS $(calc "$mh/1024" 1) MiB" "(same)" \
    "$(calc "$mc / $tb" 2)× ls -l" "≤ 1 s; RSS reported" "$(verdict "$mc <= 1000")"
  row "6" "scale: \`taskfs prune --keep $PRUNE_KEEP\` of $SCALE tasks ($pfs)" "$tp ms" "rm -rf of the same $((SCALE - PRUNE_KEEP)) task dirs $trm ms" \
    "$(calc "$tp / $trm" 2)× rm -rf" "reported" "measured"
  if [ "$MODE" = full ] && [ "${PRUNE_DISK:-1}" = 1 ] && [ "$pfs" != "$(df -T "$W" | awk 'NR==2{print $2}')" ]; then
    log "row 6: one prune run on the disk"
    : >"$W/r6.dprune"
    : >"$W/r6.drm"
    local dd
    dd=$(mktemp -d "$W/prune.XXXXXX")
    prune_pair "$dd" "$W/r6.dprune" "$W/r6.drm"
    row "6" "scale: \`taskfs prune --keep $PRUNE_KEEP\` of $SCALE tasks on the disk (1 run)" "$(calc "$(med "$W/r6.dprune") / 1e6" 0) ms" \
      "rm -rf of the same task dirs $(calc "$(med "$W/r6.drm") / 1e6" 0) ms" "$(calc "$(med "$W/r6.dprune") / $(med "$W/r6.drm")" 2)× rm -rf" "reported" "measured"
  fi
  cmd "row 6: store filled by \`tfsgen fill STATE $((SCALE - 1))\` (one real task made by tfs_task_create, then $((SCALE - 1)) copies of its record with fresh ids, no fsync; took $gen_s s); \`taskfs ls --state-dir S\`, \`ls MNT/tasks\`, baseline \`ls -l STATE/tasks\`, $RUNS runs each, order rotated; \`ls -l MNT/tasks\` once; mount RSS from /proc/PID/status after them; \`node bench/mcp/rtt.mjs list\`: a fresh \`taskfs mcp\` per run, initialize, then \`list_managed_tasks {}\` twice (first page, default limit), $RUNS runs; \`taskfs prune --keep $PRUNE_KEEP\` against \`ls | head -n $((SCALE - PRUNE_KEEP)) | xargs rm -rf\` in the tasks dir, each on a fresh store of $SCALE tasks, $RUNS runs, order random."
}

# ---- row 7: concurrency ------------------------------------------------------

row7() {
  local s i t0 t1 pids n
  new_store s7
  s=$S
  log "row 7: $CONC tasks running sleep at once"
  t0=$("$BT" now)
  seq "$CONC" | xargs -P 2 -I{} "$TASKFS" run --state-dir "$s" -- sleep 100000 >"$W/ids7" 2>"$W/run7.err" ||
    die "starting $CONC tasks failed: $(head -5 "$W/run7.err")"
  t1=$("$BT" now)
  local start_s
  start_s=$(calc "($t1 - $t0) / 1e9" 1)
  sleep 2 # let every supervisor settle into its idle loop
  "$GEN" pids "$s" >"$W/pids7"
  n=$(awk '$2=="running"' "$W/pids7" | wc -l)
  [ "$n" = "$CONC" ] || die "$n of $CONC tasks are running"
  pids=$(awk '$2=="running"{print $3}' "$W/pids7")
  # Private memory per supervisor, from smaps_rollup.
  : >"$W/r7.priv"
  : >"$W/r7.rss"
  for p in $pids; do
    awk '/^Private_(Clean|Dirty|Hugetlb):/{s+=$2} END{print s}' "/proc/$p/smaps_rollup" >>"$W/r7.priv" || die "supervisor $p vanished"
    awk '/^Rss:/{print $2}' "/proc/$p/smaps_rollup" >>"$W/r7.rss"
  done
  local priv_med priv_max rss_med
  read -r _ priv_med _ _ priv_max _ <<<"$(stats "$W/r7.priv")"
  rss_med=$(med "$W/r7.rss")
  # CPU of all supervisors over IDLE_S idle seconds, IDLE_RUNS windows.
  cpu_of() {
    local sum=0 p v
    for p in $pids; do
      v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')
      sum=$((sum + ${v:-0}))
    done
    echo $sum
  }
  : >"$W/r7.cpu"
  local c0 c1 w
  local hz
  hz=$(getconf CLK_TCK)
  for w in $(seq "$IDLE_RUNS"); do
    c0=$(cpu_of)
    sleep "$IDLE_S"
    c1=$(cpu_of)
    echo $((c1 - c0)) >>"$W/r7.cpu"
  done
  local cpu_ticks cpu_pct
  cpu_ticks=$(med "$W/r7.cpu")
  cpu_pct=$(calc "$cpu_ticks / $hz / $IDLE_S * 100" 2)
  # The inotify budget: every supervisor watches its cancel file; past
  # fs.inotify.max_user_instances they must fall back to polling.
  local inot
  inot=$(cat /proc/sys/fs/inotify/max_user_instances)
  # Stop them all through the store, and time it.
  t0=$("$BT" now)
  "$GEN" cancel-all "$s" "bench row 7" >/dev/null || die "cancel-all failed"
  for _ in $(seq 600); do
    n=$("$GEN" pids "$s" | awk '$2=="running"||$2=="queued"' | wc -l)
    [ "$n" = 0 ] && break
    sleep 0.1
  done
  t1=$("$BT" now)
  [ "$n" = 0 ] || die "$n of $CONC tasks still run 60 s after their stop request"
  local nc
  nc=$("$GEN" pids "$s" | awk '$2=="cancelled"' | wc -l)
  [ "$nc" = "$CONC" ] || die "only $nc of $CONC tasks ended cancelled"
  row "7" "concurrency: $CONC tasks running \`sleep\`: private memory per supervisor" "median $(calc "$priv_med/1024" 2) MiB, max $(calc "$priv_max/1024" 2) MiB (RSS median $(calc "$rss_med/1024" 2) MiB)" "—" "—" "≤ 1 MiB private" \
    "$(verdict "$priv_med <= 1024")"
  row "7" "concurrency: CPU of all $CONC supervisors while idle" "$cpu_ticks ticks in ${IDLE_S} s = ${cpu_pct}% of one core (median of $IDLE_RUNS windows)" "—" "—" "≈ 0 (no busy polling)" \
    "$(verdict "$cpu_pct < 1")"
  note "Row 7 context: starting $CONC tasks (\`taskfs run\`, 2 at a time) took $start_s s; stopping all $CONC through the store (one cancel file each) until all read cancelled took $(calc "($t1 - $t0) / 1e9" 1) s. (fs.inotify.max_user_instances is $inot here; supervisors learn of stop requests through a doorbell FIFO, so that limit does not bind them.)"
  cmd "row 7: \`taskfs run --state-dir S -- sleep 100000\` × $CONC (xargs -P 2); per supervisor (pid from its record) Private_Clean+Private_Dirty+Private_Hugetlb of /proc/PID/smaps_rollup; CPU = sum of utime+stime (/proc/PID/stat) of every supervisor across $IDLE_S s, $IDLE_RUNS windows; then a stop request for each (tfs_cancel_request) and a wait until all read cancelled."
  forget_finished "$s"
}

# ---- row 8: MCP round trip ------------------------------------------------------

row8() {
  local s id
  new_store s8
  s=$S
  log "row 8: MCP round trip, $MCP_RUNS runs of $MCP_CALLS calls"
  id=$("$TASKFS" run --state-dir "$s" --wait -- sh -c 'for i in $(seq 100); do echo "line $i"; done; echo "error: something failed"' 2>"$W/run.err") ||
    die "taskfs run --wait failed: $(cat "$W/run.err")"
  id=$(echo "$id" | head -n 1)
  node "$ROOT/bench/mcp/rtt.mjs" rtt "$TASKFS" "$s" "$id" "$MCP_CALLS" "$MCP_RUNS" >"$W/r8.json" || die "the MCP round-trip bench failed"
  local tp50 tp99 ep50 ep99 bytes mem
  tp50=$(jget "$W/r8.json" "j.median.taskfs.p50")
  tp99=$(jget "$W/r8.json" "j.median.taskfs.p99")
  ep50=$(jget "$W/r8.json" "j.median.everything.p50")
  ep99=$(jget "$W/r8.json" "j.median.everything.p99")
  bytes=$(jget "$W/r8.json" "j.responseBytes")
  mem=$(jget "$W/r8.json" "(j.taskfsMem.hwmKiB/1024).toFixed(1) + ' MiB vs ' + (j.everythingMem.hwmKiB/1024).toFixed(1) + ' MiB'")
  local ratio
  ratio=$(calc "$tp50 / $ep50" 2)
  row "8" "MCP round trip, read_managed_task over stdio ($MCP_CALLS calls × $MCP_RUNS runs)" "p50 $(calc $tp50 3) ms, p99 $(calc $tp99 3) ms (response $bytes bytes; peak RSS $mem)" \
    "server-everything echo p50 $(calc $ep50 3) ms, p99 $(calc $ep99 3) ms" "p50 ${ratio}×, p99 $(calc "$tp99 / $ep99" 2)×" "≤ 1× the reference" \
    "$(verdict "$tp50 <= $ep50 && $tp99 <= $ep99")"
  cmd "row 8: \`node bench/mcp/rtt.mjs rtt\`: one @modelcontextprotocol/sdk Client per server over stdio (\`taskfs mcp --state-dir S\`; \`node server-everything/dist/index.js stdio\`), 20 warm-up calls, then $MCP_CALLS rounds of \`read_managed_task {taskId}\` (a finished task of 101 lines) and \`echo {message:\"hello\"}\`, alternating which goes first, timed by process.hrtime; p50/p99 per run, median of $MCP_RUNS runs."
}

# The MCP servers over HTTP (rows 9, 10) run in a network namespace of their
# own: server-everything listens on every interface, and the load must
# reach 127.0.0.1 only.
http_bench() {
  unshare -n sh -c 'ip link set lo up && exec node "$@"' sh "$ROOT/bench/mcp/http.mjs" "$@"
}

row9() {
  local s id
  new_store s9
  s=$S
  log "row 9: MCP over HTTP, $HTTP_CLIENTS clients × $HTTP_CALLS calls, $MCP_RUNS runs"
  id=$("$TASKFS" run --state-dir "$s" --wait -- sh -c 'for i in $(seq 100); do echo "line $i"; done; echo "error: something failed"' 2>"$W/run.err") ||
    die "taskfs run --wait failed: $(cat "$W/run.err")"
  id=$(echo "$id" | head -n 1)
  http_bench load "$TASKFS" "$s" "$id" "$HTTP_CLIENTS" "$HTTP_CALLS" "$MCP_RUNS" >"$W/r9.json" || die "the MCP-over-HTTP load bench failed"
  local trps tp99 erps ep99 mem
  trps=$(jget "$W/r9.json" "j.median.taskfs.rps")
  tp99=$(jget "$W/r9.json" "j.median.taskfs.p99")
  erps=$(jget "$W/r9.json" "j.median.everything.rps")
  ep99=$(jget "$W/r9.json" "j.median.everything.p99")
  mem=$(jget "$W/r9.json" "(j.mem.taskfs.hwmKiB/1024).toFixed(1) + ' MiB vs ' + (j.mem.everything.hwmKiB/1024).toFixed(1) + ' MiB'")
  row "9" "MCP over HTTP, read_managed_task, $HTTP_CLIENTS concurrent keep-alive clients ($HTTP_CALLS calls each × $MCP_RUNS runs)" \
    "$(calc $trps 0) req/s, p50 $(calc "$(jget "$W/r9.json" "j.median.taskfs.p50")" 2) ms, p99 $(calc $tp99 2) ms (peak RSS $mem)" \
    "server-everything echo over Streamable HTTP: $(calc $erps 0) req/s, p50 $(calc "$(jget "$W/r9.json" "j.median.everything.p50")" 2) ms, p99 $(calc $ep99 2) ms" \
    "throughput $(calc "$trps / $erps" 2)×, p99 $(calc "$tp99 / $ep99" 2)×" "≥ 1× its throughput, ≤ its p99" \
    "$(verdict "$trps >= $erps && $tp99 <= $ep99")"
  cmd "row 9: \`node bench/mcp/http.mjs load\` in \`unshare -n\`: \`taskfs serve --foreground --listen 127.0.0.1:0\` and \`PORT=N node server-everything/dist/index.js streamableHttp\`; $HTTP_CLIENTS @modelcontextprotocol/sdk 1.32.2 Clients per server (StreamableHTTPClientTransport, a 2025-11-25 session each, undici keep-alive), 5 warm-up calls each, then per run every client makes $HTTP_CALLS sequential calls (\`read_managed_task {taskId}\` of a finished 101-line task; \`echo {message:\"hello\"}\`); the servers take turns, order rotated; requests/s = calls / wall time of the run, p50/p99 over every call of the run; median of $MCP_RUNS runs."
}

row10() {
  local s
  new_store s10
  s=$S
  log "row 10: $HTTP_IDLE idle HTTP connections"
  http_bench idle "$TASKFS" "$s" "$HTTP_IDLE" >"$W/r10.json" || die "the idle-connection bench failed"
  local per base with fn fb fn50 fb50
  per=$(jget "$W/r10.json" "j.perConnKiB")
  base=$(jget "$W/r10.json" "j.before.rssKiB")
  with=$(jget "$W/r10.json" "j.withConns.rssKiB")
  fn=$(jget "$W/r10.json" "j.firstByte.none.p99")
  fb=$(jget "$W/r10.json" "j.firstByte.beside.p99")
  fn50=$(jget "$W/r10.json" "j.firstByte.none.p50")
  fb50=$(jget "$W/r10.json" "j.firstByte.beside.p50")
  row "10" "taskfs serve with $HTTP_IDLE idle keep-alive connections: memory, and a real client's first byte beside them" \
    "$(calc $per 1) KiB per idle connection (RSS $(calc "$base / 1024" 1) → $(calc "$with / 1024" 1) MiB); first byte p50 $(calc "$(jget "$W/r10.json" "j.firstByte.beside.p50")" 2) ms, p99 $(calc $fb 2) ms" \
    "the same request with no idle connection: p50 $(calc "$(jget "$W/r10.json" "j.firstByte.none.p50")" 2) ms, p99 $(calc $fn 2) ms" \
    "first byte p50 $(calc "$fb50 / $fn50" 2)×, p99 $(calc "$fb / $fn" 2)×" "idle connections cost memory only (first byte p50 ≤ 1.5× + 0.5 ms; the p99 of 200 samples is the machine's noise)" "$(verdict "$fb50 <= 1.5 * $fn50 + 0.5")"
  cmd "row 10: \`node bench/mcp/http.mjs idle\` in \`unshare -n\`: $HTTP_IDLE TCP connections to \`taskfs serve\`, each makes one keep-alive request (\`GET /favicon.ico\`) and stays open; VmRSS of the server before and with them; first byte of 200 \`tools/list\` POSTs (2026-07-28, a fresh connection each) with none open and beside them, p50/p99."
}

# ---- row 12: the tools' definitions ---------------------------------------------

# A size, not a timing: what a host puts into the model's context on every
# turn for the five tools (the tools/list answer), in both revisions.
row12() {
  local s
  new_store s12
  s=$S
  log "row 12: tools/list size"
  node "$ROOT/bench/mcp/tools_size.mjs" "$TASKFS" "$s" >"$W/r12.json" || die "tools/list did not answer"
  local lb mb
  lb=$(jget "$W/r12.json" "j.legacy.bytes")
  mb=$(jget "$W/r12.json" "j.modern.bytes")
  row "12" "tools/list size, the 5 tools' definitions (what every model turn carries)" \
    "2025-11-25: $lb bytes; 2026-07-28: $mb bytes" "— (a size; 33383 bytes before issue 29)" \
    "$(calc "$lb / 8192" 2)× and $(calc "$mb / 8192" 2)× the goal" "≤ 8192 bytes in both revisions" \
    "$(verdict "$lb <= 8192 && $mb <= 8192")"
  cmd "row 12: \`node bench/mcp/tools_size.mjs\`: JSON-RPC lines to \`taskfs mcp --state-dir S\` (initialize then tools/list for 2025-11-25; tools/list with the request _meta for 2026-07-28); the figure is the bytes of the answer's line."
}

# ---- row 11: the machine's speed (issue 28) ---------------------------------
# Each figure of issue 28 against its baseline in the same run: detached
# starts against `tsp true`, a queue at parallel 2 against `tsp -S 2`,
# capture of a cached file read by `dd bs=64k` against `dd | cat > file`
# (one pipe hop: the floor of any capture over a pipe), a cat of a running
# task's transcript through the mount against the backing file, Slurm
# against `srun -u` (when a test cluster starts), and how soon a prompt
# without a newline reaches the transcript.

row11_start() {
  local s=$1 i
  : >"$W/r11s.tfs"
  : >"$W/r11s.tsp"
  tsp true >/dev/null
  sleep 0.2
  tsp -C
  for i in $(seq "$R11_STARTS"); do
    if [ $((i % 2)) = 1 ]; then
      "$BT" time "$W/r11s.tfs" -- "$TASKFS" run --state-dir "$s" -- true >/dev/null 2>"$W/run.err" || die "taskfs run -- true failed: $(cat "$W/run.err")"
      "$BT" time "$W/r11s.tsp" -- tsp true >/dev/null || die "tsp true failed"
    else
      "$BT" time "$W/r11s.tsp" -- tsp true >/dev/null || die "tsp true failed"
      "$BT" time "$W/r11s.tfs" -- "$TASKFS" run --state-dir "$s" -- true >/dev/null 2>"$W/run.err" || die "taskfs run -- true failed: $(cat "$W/run.err")"
    fi
  done
  tsp -w >/dev/null 2>&1
  tsp -C
  rm -f "$W"/tmp/ts-out.*
  local t p
  t=$(calc "$(med "$W/r11s.tfs") / 1e6" 2)
  p=$(calc "$(med "$W/r11s.tsp") / 1e6" 2)
  row "11" "start: $R11_STARTS detached \`taskfs run -- true\` (median each)" "$t ms (p99 $(calc "$(p99 "$W/r11s.tfs") / 1e6" 2) ms)" \
    "tsp true $p ms" "$(calc "$t / $p" 2)× tsp" "≤ 3× tsp" "$(verdict "$t <= 3 * $p")"
  cmd "row 11 start: \`taskfs run --state-dir S -- true\` (returns once CMD runs) vs \`tsp true\` (server up), $R11_STARTS each alternating, \`bt time\` each; median."
}

row11_queue() {
  local s=$W/s11q r t0 t1 i
  : >"$W/r11q.tfs"
  : >"$W/r11q.tsp"
  : >"$W/r11q.hand"
  STORES+=("$s")
  for r in $(seq "$R11_QRUNS"); do
    # taskfs: every run returns once its supervisor holds the task, so the
    # queue is empty exactly when all ran.
    rm -rf "$s"
    mkdir -p "$s"
    "$TASKFS" queue set --state-dir "$s" bench --parallel 2 >/dev/null || die "taskfs queue set failed"
    t0=$("$BT" now)
    for ((i = 0; i < R11_QN; i++)); do "$TASKFS" run --state-dir "$s" --queue bench -- true >/dev/null 2>&1 || die "run --queue failed"; done
    for _ in $(seq 3000); do
      "$TASKFS" queue ls --state-dir "$s" --json | grep -q '"running": 0, "waiting": 0' && break
      sleep 0.01
    done
    t1=$("$BT" now)
    echo $((t1 - t0)) >>"$W/r11q.tfs"
    [ "$("$GEN" pids "$s" | awk '$2=="completed"' | wc -l)" -ge "$R11_QN" ] || die "row 11 queue: not every task completed"
    tsp -K >/dev/null 2>&1
    tsp -S 2
    t0=$("$BT" now)
    for ((i = 0; i < R11_QN; i++)); do tsp true >/dev/null; done
    while tsp | grep -qE ' (running|queued) '; do sleep 0.01; done
    t1=$("$BT" now)
    echo $((t1 - t0)) >>"$W/r11q.tsp"
    tsp -C
    rm -f "$W"/tmp/ts-out.*
    tsp -S 1
    # The handover: tasks that all wait (the queue paused while they join),
    # then resumed; each start after the first two used the slot an end
    # gave back (bench/handover.py).
    rm -rf "$s"
    mkdir -p "$s"
    "$TASKFS" queue set --state-dir "$s" bench --parallel 2 >/dev/null || die "taskfs queue set failed"
    "$TASKFS" queue pause --state-dir "$s" bench >/dev/null || die "taskfs queue pause failed"
    for ((i = 0; i < R11_QH; i++)); do "$TASKFS" run --state-dir "$s" --queue bench -- true >/dev/null 2>&1 || die "run --queue failed"; done
    "$TASKFS" queue resume --state-dir "$s" bench >/dev/null || die "taskfs queue resume failed"
    for _ in $(seq 3000); do
      "$TASKFS" queue ls --state-dir "$s" --json | grep -q '"running": 0, "waiting": 0' && break
      sleep 0.01
    done
    "$TASKFS" ls --state-dir "$s" --json | python3 "$ROOT/bench/handover.py" 2 | awk '{print $1}' >>"$W/r11q.hand" ||
      die "row 11 queue: no handover figure"
  done
  local t p h
  t=$(calc "$(med "$W/r11q.tfs") / 1e9" 3)
  p=$(calc "$(med "$W/r11q.tsp") / 1e9" 3)
  h=$(med "$W/r11q.hand")
  row "11" "queue: $R11_QN \`true\` at parallel 2, until the last ended" "$t s" "tsp -S 2: $p s" "$(calc "$t / $p" 2)× tsp" "≤ 2× tsp" "$(verdict "$t <= 2 * $p")"
  row "11" "queue: a freed slot to the next task's start, p50 (from the records; median of $R11_QRUNS rounds)" "$h ms" "—" "—" "lower (41 ms when issue 28 was filed)" "—"
  cmd "row 11 queue: \`taskfs queue set bench --parallel 2\`, $R11_QN × \`taskfs run --queue bench -- true\`, until \`queue ls\` shows none running or waiting, vs \`tsp -S 2\`, $R11_QN × \`tsp true\`, until none running or queued; $R11_QRUNS rounds; median. Handover: $R11_QH × \`run --queue bench -- true\` while the queue is paused, \`queue resume\`, then the k-th start minus the (k-2)-th end from \`ls --json\` (bench/handover.py), p50 per round."
}

# row11_capture KIND FILE: `taskfs run --wait -- dd if=FILE bs=64k` vs
# `sh -c 'dd if=FILE bs=64k | cat > OUT'`, RUNS each, alternating.
row11_capture() {
  local kind=$1 f=$2 s=$W/s11c r id size subj order
  mkdir -p "$s"
  STORES+=("$s")
  : >"$W/r11c.$kind.tfs"
  : >"$W/r11c.$kind.cat"
  cat "$f" >/dev/null
  for r in $(seq "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="tfs cat"; else order="cat tfs"; fi
    for subj in $order; do
      sync -f "$W" 2>/dev/null || sync
      case $subj in
      tfs)
        "$BT" time "$W/r11c.$kind.tfs" -- "$TASKFS" run --state-dir "$s" --wait -- dd if="$f" bs=64k status=none >"$W/id" 2>"$W/run.err" ||
          die "taskfs run --wait dd ($kind) failed: $(cat "$W/run.err")"
        id=$(head -n 1 "$W/id")
        size=$(stat -c %s "$s/tasks/$id/transcript") || die "task $id has no transcript"
        forget_finished "$s"
        rm -rf "${s:?}/tasks/$id"
        ;;
      cat)
        "$BT" time "$W/r11c.$kind.cat" -- sh -c "dd if='$f' bs=64k status=none | cat > '$W/cat.out'" || die "the dd | cat baseline failed"
        size=$(stat -c %s "$W/cat.out")
        rm -f "$W/cat.out"
        ;;
      esac
      [ "$size" = "$(stat -c %s "$f")" ] || die "row 11 capture $subj ($kind) captured $size bytes, expected $(stat -c %s "$f")"
    done
  done
  local n tt tc
  n=$(stat -c %s "$f")
  tt=$(calc "$n / 1048576 / ($(med "$W/r11c.$kind.tfs") / 1e9)" 0)
  tc=$(calc "$n / 1048576 / ($(med "$W/r11c.$kind.cat") / 1e9)" 0)
  row "11" "capture: $3, $(mib "$n") MiB from \`dd if=cached bs=64k\`" "$tt MiB/s" "dd \\| cat > file $tc MiB/s" "$(calc "$tt / $tc" 2)×" "≥ 0.9×" "$(verdict "$tt >= 0.9 * $tc")"
}

row11_mount() {
  local s=$W/s11m m=$W/m11 mpid run
  mkdir -p "$s"
  STORES+=("$s")
  run=$("$TASKFS" run --state-dir "$s" -- sh -c "yes $LONG_ARG | head -c $R11_CAP; sleep 100000" 2>"$W/run.err") ||
    die "taskfs run failed: $(cat "$W/run.err")"
  run=$(echo "$run" | head -n 1)
  "$BT" waitsize "$s/tasks/$run/transcript" "$R11_CAP" 60000 || die "the running task did not write its transcript"
  mount_store "$s" "$m"
  mpid=$MPID
  [ "$(stat -c %s "$m/tasks/$run/transcript")" = "$R11_CAP" ] || die "the mount reports the wrong size of a running task's transcript"
  cmp -s "$m/tasks/$run/transcript" "$s/tasks/$run/transcript" || die "cat through the mount differs from the backing file"
  # 15 pairs, not RUNS: one cat of the backing file takes ~0.1 s, and
  # under the load of a shared machine 5 pairs moved the ratio from 0.24x
  # to 0.83x between consecutive runs of one tree (bench/analysis.md).
  RUNS=$R11_MRUNS row2_pair "$m/tasks/$run/transcript" "$s/tasks/$run/transcript" "$W/r11m"
  local rm rf
  rm=$(calc "$R11_CAP / 1048576 / ($(med "$W/r11m.mnt") / 1e9)" 0)
  rf=$(calc "$R11_CAP / 1048576 / ($(med "$W/r11m.file") / 1e9)" 0)
  row "11" "mount: warm \`cat\` of a running task's $(mib $R11_CAP) MiB transcript" "$rm MiB/s" "cat of the backing file $rf MiB/s" \
    "$(calc "$rm / $rf" 2)×" "≥ 0.8×" "$(verdict "$rm >= 0.8 * $rf")"
  cmd "row 11 mount: \`cat MNT/tasks/ID/transcript\` of a running \`sh -c 'yes <4095 x> | head -c $R11_CAP; sleep 100000'\` vs \`cat\` of its backing file, both warm, $R11_MRUNS each alternating; median."
  "$TASKFS" cancel --state-dir "$s" "$run" >/dev/null 2>&1
  task_wait "$s" "$run" 130
  unmount_store "$m" "$mpid"
}

# The prompt: how long after `run` returns (the command is running and
# prints at once) the bytes of `printf 'Continue? '` are in the transcript,
# against tsp's output file (the task writes it directly).
row11_prompt() {
  local s=$W/s11p i id t0 t1 f
  mkdir -p "$s"
  STORES+=("$s")
  : >"$W/r11p.tfs"
  : >"$W/r11p.tsp"
  tsp -S 4 # killed prompts may still be ending: none queues behind them
  for i in $(seq "$R11_PROMPTS"); do
    id=$("$TASKFS" run --state-dir "$s" -- sh -c "printf 'Continue? '; sleep 30" 2>"$W/run.err") || die "taskfs run failed: $(cat "$W/run.err")"
    t0=$("$BT" now)
    id=$(echo "$id" | head -n 1)
    if "$BT" waitsize "$s/tasks/$id/transcript" 10 3000; then
      t1=$("$BT" now)
      echo $((t1 - t0)) >>"$W/r11p.tfs"
    else
      echo 3000000000 >>"$W/r11p.tfs"
    fi
    "$TASKFS" cancel --state-dir "$s" "$id" >/dev/null 2>&1
    id=$(tsp sh -c "printf 'Continue? '; sleep 30")
    t0=$("$BT" now)
    # Its output file is named once tsp has started the job.
    f=""
    for _ in $(seq 500); do
      f=$(tsp -o "$id" 2>/dev/null)
      [ -n "$f" ] && break
      sleep 0.01
    done
    "$BT" waitsize "$f" 10 3000 || die "tsp never wrote the prompt"
    t1=$("$BT" now)
    echo $((t1 - t0)) >>"$W/r11p.tsp"
    tsp -k "$id" >/dev/null 2>&1
    tsp -w "$id" >/dev/null 2>&1
  done
  tsp -w >/dev/null 2>&1
  tsp -C
  local t p
  t=$(calc "$(med "$W/r11p.tfs") / 1e6" 1)
  p=$(calc "$(med "$W/r11p.tsp") / 1e6" 1)
  row "11" "a prompt without a newline (\`printf 'Continue? '; sleep 30\`): in the transcript after" "$t ms (median of $R11_PROMPTS; 3000 = not within 3 s)" \
    "tsp output file $p ms" "$(calc "$t - $p" 1) ms over tsp" "≤ tsp + 100 ms" "$(verdict "$t <= $p + 100")"
  cmd "row 11 prompt: \`taskfs run -- sh -c \"printf 'Continue? '; sleep 30\"\`, then \`bt waitsize transcript 10\` from when run returned, vs the same through \`tsp\` on its output file; $R11_PROMPTS each."
}

row11_slurm() {
  local cl env_line i t0 t1
  if ! env_line=$("$ROOT/tests/slurm/cluster.sh" start 2>/dev/null); then
    note "Row 11 Slurm: no test cluster could start here (tests/slurm/cluster.sh); not measured."
    return 0
  fi
  cl=$(eval "$env_line"; echo "$TFS_SLURM_DIR")
  : >"$W/r11u.tfs"
  : >"$W/r11u.srun"
  (
    eval "$env_line"
    export TASKFS_STATE_DIR=$W/s11u
    cd "$W" || exit 1
    for i in $(seq "$R11_SLURM"); do
      "$BT" time "$W/r11u.srun" -- srun -u --quiet echo hi </dev/null >/dev/null 2>&1
      "$BT" time "$W/r11u.tfs" -- "$TASKFS" run --on slurm --follow -- echo hi </dev/null >/dev/null 2>&1
    done
  )
  "$ROOT/tests/slurm/cluster.sh" stop "$cl" >/dev/null 2>&1
  local t p
  t=$(calc "$(med "$W/r11u.tfs") / 1e6" 1)
  p=$(calc "$(med "$W/r11u.srun") / 1e6" 1)
  row "11" "Slurm: \`taskfs run --on slurm --follow -- echo hi\`, total" "$t ms" "srun -u echo hi $p ms" "$(calc "$t / $p" 2)×" "≤ 1.2×" "$(verdict "$t <= 1.2 * $p")"
  cmd "row 11 Slurm: on the one-node test cluster (tests/slurm/cluster.sh), \`taskfs run --on slurm --follow -- echo hi\` vs \`srun -u echo hi\`, $R11_SLURM each alternating, \`bt time\`; median."
}

row11() {
  new_store s11
  log "row 11: issue 28 (start, queue, capture, mount, prompt, Slurm)"
  case " ${ROW11_PARTS:-start queue capture mount prompt slurm} " in *" start "*) row11_start "$S" ;; esac
  case " ${ROW11_PARTS:-start queue capture mount prompt slurm} " in *" queue "*) row11_queue ;; esac
  case " ${ROW11_PARTS:-start queue capture mount prompt slurm} " in *" capture "*)
    yes "$LINE80" | head -c "$R11_CAP" >"$W/lines80.bin"
    head -c "$R11_CAP" /dev/urandom >"$W/random11.bin"
    row11_capture line80 "$W/lines80.bin" "80-byte lines"
    row11_capture random "$W/random11.bin" "random bytes"
    rm -f "$W/lines80.bin" "$W/random11.bin"
    cmd "row 11 capture: \`taskfs run --state-dir S --wait -- dd if=F bs=64k\` vs \`sh -c 'dd if=F bs=64k | cat > OUT'\` (F in the page cache: 80-byte lines, or /dev/urandom bytes), after \`sync -f\`, $RUNS each alternating; throughput from the median."
    ;;
  esac
  case " ${ROW11_PARTS:-start queue capture mount prompt slurm} " in *" mount "*) row11_mount ;; esac
  case " ${ROW11_PARTS:-start queue capture mount prompt slurm} " in *" prompt "*) row11_prompt ;; esac
  case " ${ROW11_PARTS:-start queue capture mount prompt slurm} " in *" slurm "*) row11_slurm ;; esac
}

# ---- run the rows, print the table, write the results ---------------------------

# Rows 4, 6, 8, 9 and 10 drive MCP servers with the SDK client pinned in bench/mcp.
case " $ROWS " in
*" 4 "* | *" 6 "* | *" 8 "* | *" 9 "* | *" 10 "*)
  if [ ! -d "$ROOT/bench/mcp/node_modules/@modelcontextprotocol/server-everything" ]; then
    log "installing the MCP client and reference server (npm ci in bench/mcp)"
    (cd "$ROOT/bench/mcp" && npm ci --no-audit --no-fund >/dev/null) || die "npm ci in bench/mcp failed"
  fi
  ;;
esac

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$("$BT" now)
for r in $ROWS; do
  "row$r"
done
ELAPSED=$(calc "($("$BT" now) - $START) / 1e9" 0)
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# taskfs benchmarks ($MODE)"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, Linux $(uname -r), $(awk '/MemTotal/{printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), store on $(df -T "$W" | awk 'NR==2{print $2}') ($(df "$W" | awk 'NR==2{print $1}')); taskfs $("$TASKFS" --version 2>/dev/null | awk '{print $2}') from tree $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo " with uncommitted changes"), built with \`make\` (-O2 -g). The whole run took $ELAPSED s; load average (1, 5, 15 min) $LOAD_START at the start, $LOAD_END at the end (anything above 0 is other work sharing the $(nproc) cores: the ratios against same-run baselines absorb most of it, absolute figures and p99s do not)."
  echo
  echo "Reproduce: \`make bench\` (writes this file; needs the Debian packages of .ci/run, which include task-spooler, and node + npm for bench/mcp). \`make bench-quick\` runs the same code at tiny sizes as a smoke test."
  echo
  echo "How figures are made: throughput, listing and prune figures are the median of $RUNS runs; start latency the median of $STARTS starts; stop and follow latency are p50/p99 over every sample ($STOPS stops per method; $FOLLOW_RUNS tasks × $FOLLOW_LINES lines); MCP round trips the median over $MCP_RUNS runs of each run's p50/p99 ($MCP_CALLS calls per run); idle CPU the median of $IDLE_RUNS windows of $IDLE_S s. Every baseline is measured in the same run as its subject, interleaved with it (order rotated between runs), so ratios compare like with like."
  echo
  echo "| # | figure | taskfs | baseline (same run) | ratio | goal | verdict |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7}' "$W/rows.tsv"
  echo
  if [ -s "$W/notes.md" ]; then
    echo "## Notes from the run"
    echo
    cat "$W/notes.md"
    echo
  fi
  echo "## Exact commands"
  echo
  cat "$W/cmds.md"
  echo
  if [ "$MODE" = full ] && [ -f "$ROOT/bench/analysis.md" ]; then
    cat "$ROOT/bench/analysis.md"
  fi
} >"$W/results.md"
mkdir -p "$(dirname "$OUT")"
cp "$W/results.md" "$OUT"

echo
printf '%-3s %-70s %-60s %s\n' "#" "figure" "taskfs" "verdict"
awk -F'\t' '{printf "%-3s %-70s %-60s %s\n", $1, substr($2,1,70), substr($3,1,60), $7}' "$W/rows.tsv"
echo
awk -F'\t' '{printf "  [%s] baseline: %s | ratio: %s | goal: %s\n", $1, $4, $5, $6}' "$W/rows.tsv"
echo
log "done in $ELAPSED s; results in $OUT"
