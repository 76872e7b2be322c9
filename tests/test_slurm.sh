#!/bin/sh
# The Slurm executor against a real single-node cluster (tests/slurm/
# cluster.sh, started here and stopped on every way out): output streamed
# while the job runs, stderr captured, exit codes and signals, a cancel
# that reaches the job (and the job gone from squeue when the task reads
# cancelled), a supervisor killed -9 (the job gone, the task lost), a job
# that pends (queued, with Slurm's reason), jobs Slurm kills (scancel by
# someone else, a node failure), and bad input: an unknown engine, refused
# srun options, a bad partition, no Slurm on PATH, slurmctld down. Skipped,
# saying so, only when slurm-wlm and munge are not installed (.ci/run
# installs them). Run by `make test`; TASKFS_BIN names the binary under test.
set -u
BIN=${TASKFS_BIN:-build/taskfs}
here=$(cd "$(dirname "$0")" && pwd)
for p in srun slurmctld slurmd munged scancel squeue; do
  if ! command -v "$p" >/dev/null 2>&1; then
    echo "test_slurm.sh: $p not found: slurm-wlm and munge are not installed; skipped"
    echo "0 passed, 0 failed"
    exit 0
  fi
done

. "$here/helpers/check.sh"

tmp=$(mktemp -d /tmp/taskfs-slurm-test.XXXXXX) || exit 111
export TASKFS_STATE_DIR="$tmp/store"
cluster=""

# Every supervisor of this store (their command line names it), then the
# cluster and the files.
cleanup() {
  for pid in $(grep -l -F "$TASKFS_STATE_DIR" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    [ "$pid" != "$$" ] && kill -9 "$pid" 2>/dev/null
  done
  [ -n "$cluster" ] && "$here/slurm/cluster.sh" stop "$cluster" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

env_line=$("$here/slurm/cluster.sh" start) || { echo "test_slurm.sh: the cluster did not start"; exit 111; }
eval "$env_line"
cluster=$TFS_SLURM_DIR
cd "$tmp" || exit 111

# top ID FIELD: a top-level string or number of the record; job ID FIELD:
# one of executor.job (taskfs show indents them by 2 and 6 spaces).
field() { sed -n -e "s/^$1\"$2\": \"\(.*\)\",\{0,1\}$/\1/p" -e "s/^$1\"$2\": \([0-9-]*\),\{0,1\}$/\1/p"; }
top() { "$BIN" show "$1" | field "  " "$2"; }
job() { "$BIN" show "$1" | field "      " "$2"; }
# A mismatch says what was there (on stderr: shown by check, not by wait_for).
is_state() {
  st=$(top "$1" state)
  [ "$st" = "$2" ] || { echo "  $1: state $st, not $2 ($(top "$1" reason))" >&2; return 1; }
}
logs_have() { "$BIN" logs "$1" | grep -qx "$2"; }
gone() { [ -z "$(squeue -h -j "$1" -o %T 2>/dev/null)" ]; }
reason_has() {
  top "$1" reason | grep -q "$2" || { echo "  $1: reason '$(top "$1" reason)'" >&2; return 1; }
}

# --- output streamed, stderr captured, the job in the record, cancel -----
id=$("$BIN" run --on slurm --grace 5s -- sh -c \
  'trap "echo got TERM; exit 7" TERM; echo first; echo second >&2; while :; do sleep 0.1; done')
check "run --on slurm prints the id" test -n "$id"
check "the first stdout line arrives while the job runs" wait_for 20 logs_have "$id" first
check "stderr is captured" wait_for 10 logs_have "$id" second
check "the task runs" wait_for 10 is_state "$id" running
jid=$(job "$id" id)
check "the record names the job ($jid)" test -n "$jid"
check "... its step" test "$(job "$id" step)" = "$jid.0"
check "... its partition and node" test "$(job "$id" partition)/$(job "$id" nodes)" = debug/tfsnode
check "... the job name" test "$(job "$id" name)" = "taskfs-$id.0"
check "... the engine" sh -c "'$BIN' show $id | grep -q '\"engine\": \"slurm\"'"
check "the job is in squeue" test "$(squeue -h -j "$jid" -o %T)" = RUNNING
"$BIN" cancel "$id" >/dev/null
"$BIN" wait "$id" >/dev/null 2>&1
check "cancel: the task reads cancelled" is_state "$id" cancelled
check "cancel: the job is gone from squeue" gone "$jid"
check "cancel: the job got SIGTERM and exited with its own code 7" test "$(top "$id" exitCode)" = 7
check "cancel: the trap ran" logs_have "$id" "got TERM"

# --- exit codes ---------------------------------------------------------
id=$("$BIN" run --on slurm --stderr split --wait -- sh -c 'echo out; echo err >&2; exit 3' 2>/dev/null | head -1)
rc=$("$BIN" wait "$id" >/dev/null 2>&1; echo $?)
check "exit 3 is the task's exit code" test "$rc" = 3
check "exit 3: failed, exitCode 3" test "$(top "$id" state)/$(top "$id" exitCode)" = failed/3
check "--stderr split: stderr captured on its own pipe" logs_have "$id" err
check "--stderr split: stdout captured" logs_have "$id" out
"$BIN" run --on slurm --wait -- sh -c 'kill -SEGV $$' >/dev/null 2>&1
check "a signal: 128+N (SIGSEGV, 139)" test $? = 139
"$BIN" run --on slurm --wait -- true >/dev/null 2>&1
check "exit 0: completed" test $? = 0

# --- the job's id from srun's prolog, squeue not needed ----------------
# With an squeue that never finds a job, the task still runs and names its
# job: taskfs's prolog (srun --prolog) told the supervisor. A prolog of the
# task's own runs instead of taskfs's, and squeue tells.
mkdir -p "$tmp/blind"
printf '#!/bin/sh\nexit 0\n' >"$tmp/blind/squeue"
chmod +x "$tmp/blind/squeue"
id=$(PATH="$tmp/blind:$PATH" "$BIN" run --on slurm -- sh -c \
  "echo up; until [ -e '$tmp/gate1' ]; do sleep 0.05; done")
check "squeue finds nothing: the task runs (srun's prolog said so)" wait_for 20 is_state "$id" running
jid=$(job "$id" id)
check "squeue finds nothing: the record names the job ($jid)" test -n "$jid"
check "... its partition and node" test "$(job "$id" partition)/$(job "$id" nodes)" = debug/tfsnode
check "... Slurm's job of that id is the task's" \
  test "$(squeue -h -j "$jid" -o %j 2>/dev/null)" = "taskfs-$id.0"
touch "$tmp/gate1"
"$BIN" wait "$id" >/dev/null 2>&1
check "squeue finds nothing: completed" is_state "$id" completed
id=$(PATH="$tmp/blind:$PATH" "$BIN" run --on slurm --restart on-failure --max-restarts 1 -- \
  sh -c 'exit 3')
"$BIN" wait "$id" >/dev/null 2>&1
check "squeue finds nothing, restarted: the second job is the record's" \
  test "$(job "$id" name)" = "taskfs-$id.1"
check "... with its id and Slurm's end (FAILED)" \
  test -n "$(job "$id" id)" -a "$(job "$id" state)" = FAILED
printf '#!/bin/sh\necho "$SLURM_JOB_ID" >"%s/theirs"\n' "$tmp" >"$tmp/prolog"
chmod +x "$tmp/prolog"
id=$("$BIN" run --on slurm --slurm-opt=--prolog="$tmp/prolog" --wait -- true 2>/dev/null | head -1)
check "--slurm-opt=--prolog: the task's own prolog ran" test -s "$tmp/theirs"
check "--slurm-opt=--prolog: squeue named the job" test "$(job "$id" id)" = "$(cat "$tmp/theirs")"

# --- the supervisor killed -9 -------------------------------------------
id=$("$BIN" run --on slurm -- sh -c 'echo up; while :; do sleep 0.1; done')
wait_for 20 is_state "$id" running
jid=$(job "$id" id)
sup=$("$BIN" show "$id" | sed -n '/"supervisor": {/,/}/s/^    "pid": \([0-9]*\),$/\1/p')
check "killed supervisor: a pid to kill ($sup)" test -n "$sup"
kill -9 "$sup"
check "killed supervisor: the job is gone from squeue" wait_for 20 gone "$jid"
check "killed supervisor: the task reads lost" wait_for 10 is_state "$id" lost

# --- a pending job ------------------------------------------------------
id=$("$BIN" run --on slurm --slurm-opt=--partition=held -- echo never)
check "pending: run returns once submitted" test -n "$id"
check "pending: the task is queued with Slurm's reason" wait_for 10 sh -c \
  "'$BIN' show $id | grep -q '\"reason\": \"PartitionDown\"'"
check "pending: still queued" is_state "$id" queued
jid=$(job "$id" id)
sup=$("$BIN" show "$id" | sed -n '/"supervisor": {/,/}/s/^    "pid": \([0-9]*\),$/\1/p')
"$BIN" cancel "$id" >/dev/null
"$BIN" wait "$id" >/dev/null 2>&1
check "pending: cancel ends it cancelled" is_state "$id" cancelled
check "pending: the job is gone from squeue" gone "$jid"
id=$("$BIN" run --on slurm --slurm-opt=--partition=held -- echo never)
wait_for 10 sh -c "'$BIN' show $id | grep -q '\"reason\": \"PartitionDown\"'"
jid=$(job "$id" id)
sup=$("$BIN" show "$id" | sed -n '/"supervisor": {/,/}/s/^    "pid": \([0-9]*\),$/\1/p')
kill -9 "$sup"
check "pending, supervisor killed: the job is gone (the sentinel's scancel)" wait_for 20 gone "$jid"
check "pending, supervisor killed: the task reads lost" wait_for 10 is_state "$id" lost

# --- jobs Slurm kills ---------------------------------------------------
id=$("$BIN" run --on slurm -- sh -c 'echo up; sleep 60')
check "scancel by someone else: the job runs" wait_for 20 is_state "$id" running
check "scancel by someone else: the record names the job" test -n "$(job "$id" id)"
scancel "$(job "$id" id)"
"$BIN" wait "$id" >/dev/null 2>&1
check "scancel by someone else: failed" is_state "$id" failed
check "scancel by someone else: Slurm's reason" reason_has "$id" "cancelled outside taskfs"
id=$("$BIN" run --on slurm -- sh -c 'echo up; sleep 60')
wait_for 20 is_state "$id" running
scontrol update NodeName=tfsnode State=DOWN Reason=taskfs-test
"$BIN" wait "$id" >/dev/null 2>&1
check "node failure: failed although srun exits 0" is_state "$id" failed
check "node failure: Slurm's reason" reason_has "$id" "node failure (NODE_FAIL"
wait_for 20 sh -c 'sinfo -h -p debug -o %t | grep -q idle'

# --- bad input ----------------------------------------------------------
"$BIN" run --on k8s -- true >/dev/null 2>"$tmp/err"
check "--on k8s: usage (100)" test $? = 100
check "--on k8s: says what is known" grep -q "local or slurm" "$tmp/err"
"$BIN" run --on slurm --slurm-opt=--output=x -- true >/dev/null 2>"$tmp/err"
check "--slurm-opt=--output: usage (100)" test $? = 100
"$BIN" run --on slurm --slurm-opt partition -- true >/dev/null 2>"$tmp/err"
check "--slurm-opt without a dash: usage (100)" test $? = 100
"$BIN" run --slurm-opt=-pdebug -- true >/dev/null 2>"$tmp/err"
check "--slurm-opt without --on slurm: usage (100)" test $? = 100
id=$("$BIN" run --on slurm --slurm-opt=--partition=nosuch -- true 2>/dev/null)
"$BIN" wait "$id" >/dev/null 2>&1
check "bad partition: failed" is_state "$id" failed
check "bad partition: Slurm's reason in the record" reason_has "$id" "Invalid partition name"
id=$(PATH=/nonexistent "$BIN" run --on slurm -- true 2>"$tmp/err")
check "no Slurm on PATH: exit 127" test $? = 127
check "no Slurm on PATH: a clear error" grep -q "Slurm is not installed" "$tmp/err"
check "no Slurm on PATH: the task failed with the reason" reason_has "$id" "Slurm is not installed"
# A controller that answered is trusted for a while (the store's
# .slurm-checked): two starts in a row, one `scontrol ping`.
mkdir -p "$tmp/wrap"
printf '#!/bin/sh\n[ "$1" = ping ] && echo ping >>"%s/pings"\nexec "%s" "$@"\n' "$tmp" \
  "$(command -v scontrol)" >"$tmp/wrap/scontrol"
chmod +x "$tmp/wrap/scontrol"
rm -f "$TASKFS_STATE_DIR/.slurm-checked"
for i in 1 2; do
  id=$(PATH="$tmp/wrap:$PATH" "$BIN" run --on slurm -- true 2>/dev/null)
  "$BIN" wait "$id" >/dev/null 2>&1
  check "cached ping, start $i: completed" is_state "$id" completed
done
check "two starts within 30 s: one scontrol ping" test "$(cat "$tmp/pings" 2>/dev/null | wc -l)" = 1
sed 's/^SlurmctldPort=.*/SlurmctldPort=1/' "$SLURM_CONF" >"$tmp/down.conf"
id=$(SLURM_CONF="$tmp/down.conf" "$BIN" run --on slurm -- true 2>"$tmp/err")
check "slurmctld down: exit 127" test $? = 127
check "slurmctld down: a clear error" grep -q "slurmctld is unreachable" "$tmp/err"
check "slurmctld down: the task failed with the reason" reason_has "$id" "slurmctld is unreachable"

finish
