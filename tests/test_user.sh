#!/bin/sh
# Every user, not only root: an unprivileged user made for the test runs
# tasks, mounts its store through fusermount3, follows a transcript with
# `tail -f` through the mount, stops the task with `echo 1 > cancel` from a
# real shell, clears a dead mount of its own and unmounts. /dev/fuse is made
# usable as a normal Debian has it (0666) and given its mode back after.
# The user, its processes and its mounts are removed whatever happens, and
# those a killed earlier run left behind are removed first. Needs root (it
# says so and passes without it). Run by `make test`; TASKFS_BIN names the
# binary under test.
set -u
BIN=${TASKFS_BIN:-build/taskfs}
PREFIX=taskfs-t # test users are taskfs-t<pid>
if [ "$(id -u)" -ne 0 ]; then
  echo "test_user.sh: needs root to create a user; skipped"
  echo "0 passed, 0 failed"
  exit 0
fi

. "$(dirname "$0")/helpers/check.sh"

# Removes user $1: its processes (by pid, found by uid), its mounts, the
# user and its home.
remove_user() {
  uid=$(id -u "$1" 2>/dev/null) || return 0
  home=$(getent passwd "$1" | cut -d: -f6)
  for round in 1 2 3; do
    pids=$(awk -v u="$uid" '/^Uid:/ { if ($2 == u) { split(FILENAME, p, "/"); print p[3] } }' \
      /proc/[0-9]*/status 2>/dev/null)
    [ -z "$pids" ] && break
    kill -9 $pids 2>/dev/null
    sleep 0.1
  done
  if [ -n "$home" ]; then
    awk -v h="$home/" 'index($2, h) == 1 { print $2 }' /proc/self/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null; done
  fi
  userdel -r "$1" >/dev/null 2>&1 || userdel "$1" >/dev/null 2>&1
  [ -n "$home" ] && case $home in */taskfs-test-user-*) rm -rf "$(dirname "$home")" ;; esac
  return 0
}

# Leftovers of a run that was killed before its clean-up: a user whose
# test (the pid in its name) is no longer running. A run going on in
# another tree at the same time keeps its user.
for u in $(getent passwd | cut -d: -f1 | grep -E "^$PREFIX[0-9]+$"); do
  owner=${u#"$PREFIX"}
  grep -q test_user /proc/"$owner"/cmdline 2>/dev/null && continue
  echo "removing the leftover test user $u"
  remove_user "$u"
done

U=$PREFIX$$
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-user-XXXXXX")
chmod 0755 "$tmp"
# The mode to give back (a normal Debian has 0666 already, so runs in
# other trees at the same time agree on it).
fuse_mode=$(stat -c %a /dev/fuse 2>/dev/null || echo "")
cleanup() {
  remove_user "$U"
  [ -n "$fuse_mode" ] && chmod "$fuse_mode" /dev/fuse
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

if [ -z "$fuse_mode" ]; then
  fail "/dev/fuse exists"
  finish
  exit 1
fi
chmod 0666 /dev/fuse
useradd --create-home --home-dir "$tmp/home" --shell /bin/sh --user-group "$U" || {
  fail "useradd $U"
  finish
  exit 1
}
H=$tmp/home
uid=$(id -u "$U")
# A copy the user may execute, wherever the build tree is.
mkdir "$tmp/bin"
# With it, what it loads from beside itself: the light supervisor a start
# execs and the faces (mount, serve, mcp) it loads on demand.
cp "$BIN" "$tmp/bin/taskfs"
for f in taskfs-supervise taskfs-faces.so; do
  [ -e "$(dirname "$BIN")/$f" ] && cp "$(dirname "$BIN")/$f" "$tmp/bin/$f" && chmod 0755 "$tmp/bin/$f"
done
chmod 0755 "$tmp/bin" "$tmp/bin/taskfs"

# as CMD...: runs a shell command line as the user, with a login's
# environment and nothing of root's.
as() {
  runuser -u "$U" -- env -i HOME="$H" USER="$U" LOGNAME="$U" SHELL=/bin/sh \
    PATH="$tmp/bin:/usr/bin:/bin" sh -c "cd; $*"
}
mounts() { grep -c " $H/mnt fuse.taskfs " /proc/self/mounts; }

echo "as user $U (uid $uid), /dev/fuse 0666 (was $fuse_mode)"

# Tasks.
id=$(as 'taskfs run -- sh -c "echo started; i=0; while [ \$i -lt 1500 ]; do echo tick \$i; i=\$((i+1)); sleep 0.2; done"')
check "run prints an id ($id)" test -n "$id"
check "the store is the user's, in ~/.local/state/taskfs" \
  test "$(stat -c %U "$H/.local/state/taskfs/tasks")" = "$U"
if as 'taskfs ls' | grep -qE "^ *[0-9]+ $id running"; then ok "ls lists it, running"; else fail "ls lists it, running"; fi
id2=$(as 'taskfs run --wait -- sh -c "echo done by \$USER; exit 4"' 2>/dev/null)
check "run --wait exits with the task's code" test $? -eq 4
if as "taskfs logs $id2" | grep -qx "done by $U"; then ok "logs prints its output"; else fail "logs prints its output"; fi

# The mount, through fusermount3.
as 'mkdir -p mnt'
as 'taskfs mount mnt' >"$tmp/mount.out" 2>&1
check "mount as the user" test "$(mounts)" -eq 1
check "mounted through fusermount3 for the user (user_id=$uid)" \
  grep -q " $H/mnt fuse.taskfs .*user_id=$uid" /proc/self/mounts
check "the task is in the mount" as "test -d mnt/tasks/$id"

# tail -f through the mount, in the background, as the user.
as "echo \$\$ > tail.pid; exec tail -f mnt/tasks/$id/transcript > tail.out" &
tail_job=$!
check "tail -f follows the transcript" wait_for 30 as "grep -q 'tick 3' tail.out"
check "tail -f keeps following" wait_for 30 as "grep -q 'tick 8' tail.out"

# echo 1 > cancel from a real shell.
check "echo 1 > cancel" as "echo 1 > mnt/tasks/$id/cancel"
check "the task ends cancelled" wait_for 30 as "grep -q '\"state\": *\"cancelled\"' mnt/tasks/$id/record.json"
check "cancel says who asked" as "grep -q '^1 .* mount uid $uid' mnt/tasks/$id/cancel"
as 'kill $(cat tail.pid)'
wait "$tail_job" 2>/dev/null

# A dead mount of the user's own: cleared by the next mount, not stacked.
pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$tmp/mount.out")
as 'ls mnt/tasks >/dev/null'
check "kill -9 of the user's mount process ($pid)" kill -9 "$pid"
check "the mount is dead" wait_for 20 as '! stat -f mnt >/dev/null 2>&1'
as 'taskfs mount mnt' >"$tmp/mount.out" 2>&1
check "mount over the dead mount clears it: one mount" test "$(mounts)" -eq 1
check "and says so" grep -q "cleared the dead mount" "$tmp/mount.out"
check "the new mount serves" as "test -d mnt/tasks/$id"

# --allow-other needs user_allow_other in /etc/fuse.conf for a user.
if ! grep -qx 'user_allow_other' /etc/fuse.conf 2>/dev/null; then
  as 'mkdir -p other; taskfs mount --allow-other other' >"$tmp/other.out" 2>&1
  check "--allow-other without user_allow_other is refused (111)" test $? -eq 111
  check "the refusal names user_allow_other" grep -q user_allow_other "$tmp/other.out"
fi

check "umount as the user" as 'taskfs umount mnt'
check "nothing is mounted any more" test "$(mounts)" -eq 0

finish
