#!/bin/sh
# The help cannot drift from the binary: each verb's --help ends with its
# EXIT STATUS, names every option of its option table (short ones too) and
# every exit code the verb gives in the common cases (100 a bad option, 101
# no such task, 111 a refused store); `mount --help` names every file a real
# mount has; `mcp --help` every tool the server lists. (The man page's side
# is tests/test_man.sh.) TASKFS_BIN names the binary.
set -eu
top=$(pwd)
bin=${TASKFS_BIN:-$top/build/taskfs}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-help-XXXXXX")
. "$(dirname "$0")/helpers/check.sh"
on_exit 'fusermount3 -uz "$tmp/mnt" 2>/dev/null; rm -rf "$tmp"'
export TASKFS_STATE_DIR=$tmp/state HOME=$tmp

verbs=$("$bin" --help | sed -n '/^verbs:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
check "taskfs --help lists verbs" test -n "$verbs"

# exit_in_help VERB CODE: VERB's EXIT STATUS names CODE.
exit_in_help() {
  "$bin" "$1" --help | sed -n '/^EXIT STATUS/,$p' | grep -qw "$2" ||
    { echo "  $1 exits $2, but its help's EXIT STATUS does not say so"; return 1; }
}
# gives CODE CMD...: CMD exits CODE.
gives() {
  want=$1
  shift
  c=0
  "$@" >/dev/null 2>&1 </dev/null || c=$?
  [ "$c" = "$want" ]
}

"$bin" run --wait true >/dev/null
mkdir "$tmp/open" && chmod 777 "$tmp/open" # a store others may write to: refused
for v in $verbs; do
  "$bin" "$v" --help >"$tmp/help"
  check "$v --help has EXIT STATUS" grep -qx 'EXIT STATUS' "$tmp/help"
  for opt in $("$bin" __complete "$v" - | cut -f1 | grep '^-'); do
    check "$v --help names $opt" grep -qE -- "(^|[ [|,])$opt([] ,|=[]|\$)" "$tmp/help"
  done
  # 100: a bad option, for every verb.
  if gives 100 timeout 20 "$bin" "$v" --no-such-option; then
    check "$v: exit 100 is in its help" exit_in_help "$v" 100
  else
    fail "$v --no-such-option does not exit 100"
  fi
  case $v in mount | umount | mcp | serve) continue ;; esac
  # 101: a task that does not exist, for the verbs that name one.
  case $v in
  run) set -- run --after nosuchtask -- true ;;
  signal) set -- signal TERM nosuchtask ;;
  send) set -- send nosuchtask text ;;
  queue) set -- queue ls ;;
  *) set -- "$v" nosuchtask ;;
  esac
  if head -1 "$tmp/help" | grep -q 'ID|KEY' || [ "$v" = run ]; then
    check "$v: a missing task exits 101" gives 101 "$bin" "$@"
    check "$v: exit 101 is in its help" exit_in_help "$v" 101
  fi
  # 111: a store others may write to is refused by every verb that opens one.
  if gives 111 "$bin" "$@" --state-dir "$tmp/open" || gives 111 "$bin" "$v" --state-dir "$tmp/open" ls; then
    check "$v: exit 111 is in its help" exit_in_help "$v" 111
  fi
done

# ---- mount --help names every file of a real mount
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
  "$bin" run --wait --stdin --key k -- true >/dev/null || "$bin" run --stdin --key k -- true >/dev/null
  "$bin" queue set q1 --parallel 1 >/dev/null
  mkdir "$tmp/mnt"
  if "$bin" mount "$tmp/mnt" >/dev/null 2>"$tmp/err"; then
    "$bin" mount --help >"$tmp/help"
    names=$( (ls "$tmp/mnt"; for d in "$tmp"/mnt/tasks/*/ "$tmp"/mnt/queues/*/; do ls "$d"; done) | sort -u)
    check "the mount has files" test -n "$names"
    for n in $names; do
      check "mount --help names the mount's file '$n'" grep -qw -- "$n" "$tmp/help"
    done
    "$bin" umount "$tmp/mnt" || true
  else
    echo "skip: taskfs mount failed here: $(cat "$tmp/err")"
  fi
else
  echo "skip: no /dev/fuse for the mount's files"
fi

# ---- mcp --help names every tool tools/list has
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
  timeout 30 "$bin" mcp 2>/dev/null >"$tmp/mcp.out" || true
tools=$(grep '"id":2' "$tmp/mcp.out" | grep -o '"name": *"[a-z_]*"' | sed 's/.*"\([a-z_]*\)"$/\1/' | grep '_' | sort -u)
check "tools/list names tools" test -n "$tools"
"$bin" mcp --help >"$tmp/help"
for t in $tools; do
  check "mcp --help names the tool $t" grep -qw "$t" "$tmp/help"
done
finish
