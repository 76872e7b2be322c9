#!/bin/bash
# make valgrind: a representative end-to-end run of the long-lived taskfs
# processes under valgrind memcheck -- the FUSE mount, the MCP server and
# the per-task supervisors (plus the CLI verbs that drive them) -- that
# fails unless every process reports no errors and no leaks.
#
# Usage: tests/hardening/valgrind.sh /abs/path/to/taskfs
#
# How the detached supervisors end up under valgrind: valgrind follows
# execve with --trace-children=yes, and TASKFS_SUPERVISOR_EXE points
# tfs_launch() at the real binary (its default, /proc/self/exe, would name
# valgrind's own tool under valgrind). Workers (/bin, /usr/bin) are not
# traced. Every process writes its own log (vg.<pid>.log); at the end each
# log must say "ERROR SUMMARY: 0 errors" (leaks count as errors:
# --errors-for-leak-kinds=definite,indirect), and a log that has no summary
# (a process that went on to exec an untraced worker) must hold no report.
# --child-silent-after-fork=yes: the short-lived children between fork and
# exec (tfs_launch's double fork, the supervisor's worker before its exec)
# would otherwise report their parent's live heap as leaked at _exit.
set -uo pipefail
BIN=${1:?usage: valgrind.sh /abs/path/to/taskfs}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
command -v valgrind >/dev/null || { echo "valgrind: not installed (apt-get install valgrind)"; exit 1; }

T=$(mktemp -d /tmp/taskfs-valgrind-XXXXXX)
MNT=$T/mnt
LOGS=$T/logs
mkdir -p "$MNT" "$LOGS"
export TASKFS_STATE_DIR=$T/store
export TASKFS_SUPERVISOR_EXE=$BIN
export HH_MARK=$T
VG=(valgrind --trace-children=yes "--trace-children-skip=/bin/*,/usr/bin/*,/usr/sbin/*,/sbin/*"
  --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
  --child-silent-after-fork=yes --error-exitcode=99 --num-callers=30 "--log-file=$LOGS/vg.%p.log")
MOUNT_PID=
MCP_PID=

# Prints every log that holds a report; sets bad=1 if there is one and
# counts the processes of each kind that were checked.
bad=0
declare -A kinds
check_logs() {
  local f cmd k
  for f in "$LOGS"/*.log; do
    [ -e "$f" ] || continue
    cmd=$(grep -m1 '== Command:' "$f" | sed 's/.*Command: //')
    case $cmd in
    *" supervise "*) k=supervisor ;; *" mount "*) k=mount ;; *" mcp"*) k=mcp ;; *) k=cli ;;
    esac
    if grep -q 'ERROR SUMMARY:' "$f"; then
      kinds[$k]=$((${kinds[$k]:-0} + 1))
      if ! grep -q 'ERROR SUMMARY: 0 errors' "$f"; then
        echo "---- $f ($cmd)"
        cat "$f"
        bad=1
      fi
    elif grep -qE 'Invalid (read|write|free)|uninitialised|Conditional jump|Syscall param|are (definitely|indirectly) lost|Mismatched free' "$f"; then
      echo "---- $f ($cmd): a report in a process that exec'ed"
      cat "$f"
      bad=1
    fi
  done
}


cleanup() {
  [ -n "$MOUNT_PID" ] && kill -TERM "$MOUNT_PID" 2>/dev/null
  sleep 1
  umount -l "$MNT" 2>/dev/null
  # Anything still running with our marker in its environment is ours.
  for p in $(grep -l "HH_MARK=$T" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
    [ "$p" != $$ ] && kill -KILL "$p" 2>/dev/null
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "valgrind: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

step() { echo "valgrind: $*"; }
fail() {
  echo "valgrind: FAILED: $*"
  check_logs
  exit 1
}
tf() { "${VG[@]}" "$BIN" "$@"; }

# Waits (up to $2 s, times $TASKFS_TEST_SLOW when set) for the shell
# condition $1.
wait_for() {
  local i
  for ((i = 0; i < $2 * 10 * ${TASKFS_TEST_SLOW:-1}; i++)); do
    eval "$1" && return 0
    sleep 0.1
  done
  return 1
}

step "tasks through the CLI (run, logs, show, ls, cancel, wait, restart policy)"
id1=$(tf run -- sh -c 'for i in $(seq 1 300); do echo "line $i"; echo "error: e$i" >&2; done') || fail "run"
tf wait --timeout=120 "$id1" >/dev/null || fail "wait $id1"
tf logs -n 5 "$id1" >/dev/null || fail "logs"
tf show "$id1" >/dev/null || fail "show"
id2=$(tf run --key vg-sleeper -- sleep 300) || fail "run sleeper"
id3=$(tf run --restart on-failure --min-uptime 5s --max-quick-restarts 2 -- false)
tf wait --timeout=120 "$id3" >/dev/null
tf ls >/dev/null || fail "ls"
tf ls --json >/dev/null || fail "ls --json"

step "the mount"
"${VG[@]}" "$BIN" mount --foreground "$MNT" 2>"$T/mount.err" &
MOUNT_PID=$!
wait_for "mountpoint -q '$MNT'" 120 || fail "the mount did not come up: $(cat "$T/mount.err")"
ls -l "$MNT" "$MNT/tasks" "$MNT/by-key" >/dev/null || fail "ls through the mount"
cat "$MNT/owner" "$MNT/tasks/$id1/record.json" "$MNT/tasks/$id1/owner" "$MNT/tasks/$id1/cancel" >/dev/null ||
  fail "cat through the mount"
[ "$(wc -l <"$MNT/tasks/$id1/transcript")" -eq 600 ] || fail "the transcript through the mount"
tail -c 100 "$MNT/tasks/$id1/transcript" >/dev/null
cat "$MNT/by-key/vg-sleeper/record.json" >/dev/null || fail "by-key through the mount"
( echo 0 >"$MNT/tasks/$id2/cancel" ) 2>/dev/null && fail "'0' was accepted by cancel"
echo 1 >"$MNT/tasks/$id2/cancel" || fail "echo 1 > cancel"
tf wait --timeout=120 "$id2" >/dev/null
ls "$MNT/tasks/nonexistent-id" 2>/dev/null && fail "a missing task was found"

step "the MCP server"
mkfifo "$T/mcp.in"
"${VG[@]}" "$BIN" mcp <"$T/mcp.in" >"$T/mcp.out" 2>"$T/mcp.err" &
MCP_PID=$!
exec 3>"$T/mcp.in"
send() { printf '%s\n' "$1" >&3; }
send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vg","version":"1"}}}'
send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
send '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
send '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"start_managed_task","arguments":{"taskKey":"vg-mcp","command":["sh","-c","echo started; echo error: boom; sleep 1; echo done"],"waitMs":500}}}'
send '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"start_managed_task","arguments":{"taskKey":"vg-mcp","command":["sh","-c","echo started; echo error: boom; sleep 1; echo done"]}}}'
send '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_managed_task","arguments":{"taskKey":"vg-mcp","waitMs":20000,"tailLines":5}}}'
send '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_managed_tasks","arguments":{"limit":2}}}'
send '{"jsonrpc":"2.0","id":7,"method":"resources/list"}'
send "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\",\"params\":{\"uri\":\"taskfs://tasks/$id1/transcript\"}}"
send "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"resources/subscribe\",\"params\":{\"uri\":\"taskfs://tasks/$id1/record\"}}"
send '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"start_managed_task","arguments":{"taskKey":"vg-mcp-2","command":["sleep","300"]},"_meta":{}}}'
send '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"cancel_managed_task","arguments":{"taskKey":"vg-mcp-2"}}}'
send '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"start_managed_task","arguments":{"taskKey":"vg-mcp-3","command":["sh","-c","sleep 1; echo ok"]},"task":{"ttl":60000}}}'
send '{"jsonrpc":"2.0","id":13,"method":"tasks/list"}'
send 'this is not json'
send '{"jsonrpc":"2.0","id":14,"method":"no/such/method"}'
send '{"jsonrpc":"2.0","id":15,"method":"ping"}'
wait_for "grep -q '\"id\":15' '$T/mcp.out'" 300 || fail "the MCP server did not answer: $(tail -5 "$T/mcp.err")"
wait_for "grep -q '\"id\":5' '$T/mcp.out' && grep -q '\"id\":11' '$T/mcp.out'" 300 ||
  fail "the MCP server did not answer the long-poll or the cancel"
exec 3>&- # end of input: the server must exit by itself
wait_for "! kill -0 $MCP_PID 2>/dev/null" 120 || fail "the MCP server did not exit on stdin EOF"
wait "$MCP_PID"
rc=$?
MCP_PID=
[ $rc -eq 0 ] || fail "the MCP server exited with $rc (99: valgrind found errors); see $LOGS"
n=$(grep -c '"jsonrpc"' "$T/mcp.out")
[ "$n" -ge 15 ] || fail "the MCP server wrote $n messages, want at least 15"

step "the MCP server, 2026-07-28"
mkfifo "$T/mcp2.in"
"${VG[@]}" "$BIN" mcp <"$T/mcp2.in" >"$T/mcp2.out" 2>"$T/mcp2.err" &
MCP_PID=$!
exec 3>"$T/mcp2.in"
M='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/logLevel":"debug"}'
START='"name":"start_managed_task","arguments":{"taskKey":"vg-mcp-modern","command":["sh","-c","echo error: late; sleep 1"]}'
send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{$START,$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{$START,\"inputResponses\":{\"roots\":{\"roots\":[{\"uri\":\"file://$T\"}]}},$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"subscriptions/listen\",\"params\":{\"notifications\":{\"resourceSubscriptions\":[\"taskfs://tasks/$id1/record\"],\"taskIds\":[\"$id1\"]},$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"$id1\",$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"$id1\",\"maxBytes\":1024},$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"prompts/get\",\"params\":{\"name\":\"diagnose_task\",\"arguments\":{\"task\":\"$id1\"},$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"completion/complete\",\"params\":{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"diagnose_task\"},\"argument\":{\"name\":\"task\",\"value\":\"\"},$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\"}}}"
send '{"jsonrpc":"2.0","id":11,"method":"tools/list"}'
send "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"read_managed_task\",\"arguments\":{\"taskKey\":123},$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"subscriptions/listen\",\"params\":{\"notifications\":{\"resourceSubscriptions\":[\"taskfs://tasks/$id1/transcript\"]},$M}}"
send '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":13}}'
wait_for "grep -q '\"id\":12' '$T/mcp2.out' && grep -q '\"id\":4' '$T/mcp2.out'" 300 ||
  fail "the MCP server (2026-07-28) did not answer: $(tail -5 "$T/mcp2.err")"
mid=$(grep '"id":4,' "$T/mcp2.out" | grep -o '"taskId":"[a-z0-9-]*"' | head -1 | cut -d'"' -f4)
[ -n "$mid" ] || fail "no task from the task-augmented start: $(grep '"id":4,' "$T/mcp2.out")"
send "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"$mid\",$M}}"
send "{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"tasks/cancel\",\"params\":{\"taskId\":\"$mid\",$M}}"
wait_for "grep -q '\"id\":15' '$T/mcp2.out'" 300 || fail "the MCP server (2026-07-28) did not answer tasks/cancel"
exec 3>&- # end of input: the open listen gets its graceful end, then the exit
wait_for "! kill -0 $MCP_PID 2>/dev/null" 120 || fail "the MCP server (2026-07-28) did not exit on stdin EOF"
wait "$MCP_PID"
rc=$?
MCP_PID=
[ $rc -eq 0 ] || fail "the MCP server (2026-07-28) exited with $rc (99: valgrind found errors); see $LOGS"
grep -q '"id":5,"result":{"resultType":"complete"' "$T/mcp2.out" || grep -q '"id":5,"result"' "$T/mcp2.out" ||
  fail "the open listen got no graceful end"

step "stopping: the mount on SIGTERM, every task to its end"
for id in $(tf ls --json | grep -o '"id": *"[a-z0-9-]*"' | grep -o '[a-z0-9]*-[a-z0-9]*'); do
  tf cancel "$id" >/dev/null 2>&1
done
kill -TERM "$MOUNT_PID"
wait "$MOUNT_PID"
rc=$?
MOUNT_PID=
[ $rc -eq 0 ] || fail "the mount exited with $rc (99: valgrind found errors); see $LOGS"
# Detached supervisors finish on their own; wait until none is left.
wait_for "! grep -lq 'HH_MARK=$T' /proc/[0-9]*/environ 2>/dev/null || [ \$(grep -l 'HH_MARK=$T' /proc/[0-9]*/environ 2>/dev/null | grep -v '/proc/$$/' | wc -l) -eq 0 ]" 180 ||
  fail "processes are still running: $(grep -l "HH_MARK=$T" /proc/[0-9]*/environ 2>/dev/null)"

step "checking $(ls "$LOGS" | wc -l) valgrind logs"
check_logs
for k in supervisor mount mcp cli; do
  [ "${kinds[$k]:-0}" -gt 0 ] || { echo "valgrind: no finished $k process was checked"; bad=1; }
done
summary="supervisor ${kinds[supervisor]:-0}, mount ${kinds[mount]:-0}, mcp ${kinds[mcp]:-0}, cli ${kinds[cli]:-0}"
[ $bad -eq 0 ] || fail "memcheck reports above (processes checked: $summary)"
echo "valgrind: no errors and no leaks in $summary processes"
