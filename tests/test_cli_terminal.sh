#!/bin/sh
# What the command line writes to a terminal, and how it reads its global
# options: no byte of a record, a store or an argument reaches the terminal
# raw (an escape sequence is shown as \xNN, by one function: cli_escape),
# `logs` of another user's store escapes unless --raw; and the cases of
# issue 30 a newcomer tripped on. TASKFS_BIN names the binary.
set -eu
top=$(pwd)
bin=${TASKFS_BIN:-$top/build/taskfs}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-cli-terminal-XXXXXX")
# A mount this test made is gone even when a check fails.
. "$(dirname "$0")/helpers/check.sh"
on_exit 'fusermount3 -uz "$tmp/rt/taskfs" 2>/dev/null; rm -rf "$tmp"'
export TASKFS_STATE_DIR=$tmp/state HOME=$tmp
unset NO_COLOR || true

esc=$(printf '\033')
bel=$(printf '\007')
csi=$(printf '\302\233') # U+009B, a C1 control some terminals take as ESC [
# clean FILE: FILE holds no ESC, BEL or C1 control byte.
clean() {
  ! grep -q "[$esc$bel]" "$1" && ! grep -qF "$csi" "$1" || { echo "  raw control bytes in: $(od -c "$1" | head -3)"; return 1; }
}
# has FILE TEXT: FILE holds TEXT.
has() { grep -qF -- "$2" "$1" || { echo "  no '$2' in: $(head -c 400 "$1")"; return 1; }; }

# ---- escapes (issue 26 item 5, issue 30 item 9)
title="${esc}]0;pwned${bel}"
"$bin" run -- "$title" >"$tmp/out" 2>"$tmp/err" && code=0 || code=$?
check "run of an escape-named command: its 'cannot start' is escaped" clean "$tmp/err"
check "run: the escape is shown as \\xNN" has "$tmp/err" '\x1b]0;pwned\x07'
id=$(cat "$tmp/out")
"$bin" wait "$id" >/dev/null 2>"$tmp/err" && code=0 || code=$?
check "wait prints the record's reason escaped (exit $code)" clean "$tmp/err"
check "wait: the reason is still there" has "$tmp/err" 'cannot start'
"$bin" ls >"$tmp/out" 2>&1
check "ls shows the command and reason escaped" clean "$tmp/out"
"$bin" restart "$id" >"$tmp/out" 2>"$tmp/err" || true
check "restart's error paths are escaped" clean "$tmp/err"
"$bin" cancel "x${esc}[2J" >/dev/null 2>"$tmp/err" || true
check "cancel of an escape-bearing argument is escaped" clean "$tmp/err"
"$bin" pause "${esc}]52;c;aGk=${bel}" >/dev/null 2>"$tmp/err" || true
check "pause of an OSC 52 argument is escaped" clean "$tmp/err"
"$bin" "no${esc}[2Jverb" >/dev/null 2>"$tmp/err" || true
check "an unknown verb is escaped" clean "$tmp/err"
"$bin" ls --columns "id,${csi}x" >/dev/null 2>"$tmp/err" || true
check "a C1 control in an option value is escaped" clean "$tmp/err"

printer=$("$bin" run --wait -- printf "a${esc}]52;c;aGk=${bel}b${csi}c\\tok\\n")
"$bin" logs --foreign-store "$printer" >"$tmp/out"
check "logs --foreign-store escapes the transcript" clean "$tmp/out"
check "logs --foreign-store keeps text, tabs and newlines" \
  sh -c "[ \"\$(cat '$tmp/out')\" = 'a\\x1b]52;c;aGk=\\x07b\\xc2\\x9bc	ok' ]"
"$bin" logs --foreign-store --raw "$printer" >"$tmp/out"
check "logs --foreign-store --raw prints the bytes as they are" has "$tmp/out" "$esc]52"
"$bin" logs "$printer" >"$tmp/out"
check "logs of one's own store is byte-exact" has "$tmp/out" "$esc]52"
"$bin" logs --foreign-store -f "$printer" >"$tmp/out"
check "logs -f --foreign-store escapes too" clean "$tmp/out"

# ---- the global --state-dir (issue 30 items 1 and 2)
other=$tmp/other
"$bin" --state-dir "$other" queue set q1 --parallel 1 >/dev/null
check "taskfs --state-dir DIR queue ls reads DIR" sh -c "'$bin' --state-dir '$other' queue ls | grep -q '^q1 '"
check "taskfs queue --state-dir DIR ls reads DIR" sh -c "'$bin' queue --state-dir '$other' ls | grep -q '^q1 '"
check "taskfs queue --state-dir=DIR ls reads DIR" sh -c "'$bin' queue --state-dir='$other' ls | grep -q '^q1 '"
check "taskfs queue ls --state-dir DIR reads DIR" sh -c "'$bin' queue ls --state-dir '$other' | grep -q '^q1 '"
check "the default store did not get the queue" sh -c "! '$bin' queue ls | grep -q '^q1 '"
# code WANT CMD...: CMD exits with WANT.
code() {
  want=$1
  shift
  c=0
  "$@" >"$tmp/out" 2>"$tmp/err" || c=$?
  [ "$c" = "$want" ] || { echo "  exit $c, want $want: $(cat "$tmp/err")"; return 1; }
}
# ---- nothing is cut into a pipe (issue 30 item 3)
longkey=k$(printf '%059d' 0)
longarg=$(printf '%03000d' 7)
"$bin" run --wait --key "$longkey" -- true "$longarg" >/dev/null
"$bin" ls >"$tmp/out"
check "ls | cat: a 60-character key whole" has "$tmp/out" " $longkey "
check "ls | cat: a 3000-byte command whole" has "$tmp/out" "true $longarg"
check "ls | cat: no cell cut with …" sh -c "! grep -q '…' '$tmp/out'"
"$bin" ls --columns id,reason >"$tmp/out"
check "ls --columns id,reason | cat: the last column whole" has "$tmp/out" "exited with code 0"
"$bin" ls --columns reason,id,exit >"$tmp/out"
check "ls --columns reason,id,exit | cat: the reasons whole" has "$tmp/out" "cannot start '\x1b]0;pwned\x07': command not found"

# ---- a read-only store (issue 30 item 4): prune says EROFS and exits 111,
# in a mount namespace of its own, so no mount outlives the test.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  mkdir "$tmp/ro"
  TASKFS_STATE_DIR=$tmp/ro/s "$bin" run --wait true >/dev/null
  unshare -m sh -c "mount --make-rprivate / && mount --bind '$tmp/ro' '$tmp/ro' && mount -o remount,bind,ro '$tmp/ro' &&
    { TASKFS_STATE_DIR='$tmp/ro/s' '$bin' prune --keep 0; echo \"rc=\$?\"; TASKFS_STATE_DIR='$tmp/ro/s' '$bin' prune --older-than 1ms; echo \"rc=\$?\"; }" >"$tmp/out" 2>&1 || true
  check "prune --keep 0 on a read-only store: 111, no 'deleted 0 tasks'" sh -c "grep -qx 'rc=111' '$tmp/out' && ! grep -q 'deleted 0' '$tmp/out'"
  check "prune on a read-only store says so" has "$tmp/out" "Read-only file system"
  check "prune --older-than on a read-only store: 111" sh -c "[ \$(grep -c '^rc=111' '$tmp/out') = 2 ]"
else
  echo "skip: a read-only store needs root and unshare -m"
fi

# ---- one duration syntax (issue 30 item 6), --at (item 8)
check "run --timeout 1d" code 0 "$bin" run --wait --timeout 1d true
check "config set timeout 1d" code 0 "$bin" config set timeout 1d
"$bin" config unset timeout >/dev/null
check "run --limit cpu=1d" code 0 "$bin" run --wait --limit cpu=1d true
check "run --grace 1.5d" code 0 "$bin" run --wait --grace 1.5d true
check "wait --timeout 1d" code 0 "$bin" wait --timeout 1d "$printer"
check "prune --older-than 7d" code 0 "$bin" prune --older-than 7d
check "prune --older-than 5 (no unit) is a usage error" code 100 "$bin" prune --older-than 5
check "it asks for the unit" has "$tmp/err" "with its unit"
check "run --timeout 5x is a usage error naming the units" code 100 "$bin" run --timeout 5x true
check "the units are the parser's" has "$tmp/err" "ms, s, m, h or d"
check "run --delay 5s --at 12:00 is a usage error" code 100 "$bin" run --delay 5s --at 12:00 true
check "run --at 12:00 --delay 5s is a usage error" code 100 "$bin" run --at 12:00 --delay 5s true
check "run --at in local time (TZ=Asia/Tokyo)" code 0 env TZ=Asia/Tokyo "$bin" run --at 2099-01-01T00:00:00Z true
at_id=$(cat "$tmp/out")
check "run --at says the local time, not UTC" has "$tmp/err" "waiting until 2099-01-01 09:00:00"
TZ=Asia/Tokyo "$bin" ls --state queued >"$tmp/out"
check "ls shows the local time of --at" has "$tmp/out" "waiting until 2099-01-01 09:00:00"
"$bin" cancel "$at_id" >/dev/null 2>&1 || true

# ---- umount, help VERB, ls --color (issue 30 item 14)
"$bin" help run >"$tmp/out"
check "taskfs help run prints run's help" sh -c "'$bin' run --help | cmp -s - '$tmp/out'"
check "taskfs help nosuch is a usage error" code 100 "$bin" help nosuch
"$bin" ls --color >"$tmp/out"
check "ls --color alone colours, as GNU ls's --color" has "$tmp/out" "$esc[32mcompleted"
check "ls --color never still reads its value" code 0 "$bin" ls --color never
check "ls --color=never" code 0 "$bin" ls --color=never
check "ls --color=sometimes is a usage error" code 100 "$bin" ls --color=sometimes
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
  mkdir -p "$tmp/rt" && chmod 700 "$tmp/rt"
  if XDG_RUNTIME_DIR=$tmp/rt "$bin" mount >/dev/null 2>"$tmp/err"; then
    check "the default mount point is mounted" sh -c "grep -q ' $tmp/rt/taskfs ' /proc/mounts"
    check "umount without MOUNTPOINT unmounts the default one" code 0 env XDG_RUNTIME_DIR="$tmp/rt" "$bin" umount
    check "it is gone" wait_for 20 sh -c "! grep -q ' $tmp/rt/taskfs ' /proc/mounts"
  else
    echo "skip: taskfs mount failed here: $(cat "$tmp/err")"
  fi
else
  echo "skip: no /dev/fuse or fusermount3 for the umount check"
fi

n_before=$(ls "$TASKFS_STATE_DIR/tasks" | wc -l)
check "--state-dir '' is a usage error" code 100 "$bin" --state-dir '' prune --keep 0
check "prune --state-dir '' is a usage error" code 100 "$bin" prune --keep 0 --state-dir ''
check "--state-dir= is a usage error" code 100 "$bin" ls --state-dir=
check "TASKFS_STATE_DIR= is a usage error" code 100 env TASKFS_STATE_DIR= "$bin" prune --keep 0
check "it says what is wrong" has "$tmp/err" "TASKFS_STATE_DIR is set but empty"
check "path: TASKFS_STATE_DIR= is a usage error" code 100 env TASKFS_STATE_DIR= "$bin" path
check "nothing was pruned" test "$(ls "$TASKFS_STATE_DIR/tasks" | wc -l)" = "$n_before"
finish
