#!/bin/sh
# The main job (`make run`): mounts the default store at the default mount
# point in the background and prints what to try next.
#
#   usage: scripts/run-main.sh [PATH/TO/taskfs]
#
# Store: taskfs's default ($TASKFS_STATE_DIR, else $XDG_STATE_HOME/taskfs,
# else ~/.local/state/taskfs). Mount point: $TASKFS_MOUNT if set, else
# $XDG_RUNTIME_DIR/taskfs, else ~/taskfs (created if missing). Running it
# again while the mount is up only prints the hints; a stale mount left by
# a killed mount process is unmounted and mounted afresh.
set -eu

BIN=${1:-taskfs}
if [ -n "${TASKFS_MOUNT:-}" ]; then
  MNT=$TASKFS_MOUNT
elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then
  MNT=$XDG_RUNTIME_DIR/taskfs
else
  MNT=$HOME/taskfs
fi

STATE=$("$BIN" path)
mkdir -p "$MNT"

fstype=$(stat -f -c %T "$MNT" 2>/dev/null || echo stale)
if [ "$fstype" = stale ]; then
  echo "run-main: $MNT is a stale mount (its mount process died); unmounting it"
  "$BIN" umount --lazy "$MNT"
  fstype=$(stat -f -c %T "$MNT")
fi
if [ "$fstype" = fuseblk ] || [ "$fstype" = fuse ] || grep -q " $MNT fuse.taskfs " /proc/self/mounts 2>/dev/null; then
  echo "run-main: $MNT is already mounted"
else
  "$BIN" mount "$MNT"
fi

cat <<HINTS

The store $STATE is mounted on $MNT.
Try:
  ID=\$($BIN run -- sh -c 'for i in \$(seq 1000); do echo line \$i; sleep 1; done')
  ls $MNT/tasks                       # every task, oldest first
  tail -f $MNT/tasks/\$ID/transcript   # follow its output (Ctrl-C to stop following)
  cat $MNT/tasks/\$ID/record.json      # its live record
  echo 1 > $MNT/tasks/\$ID/cancel      # stop it
  cat $MNT/tasks/\$ID/cancel           # who stopped it, and when
Unmount with: $BIN umount $MNT
HINTS
