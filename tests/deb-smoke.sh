#!/bin/sh
# Smoke test of the installed Debian package (`.ci/run` installs the .deb,
# then runs this): the packaged /usr/bin/taskfs runs a task, shows its
# logs, mounts the store, unmounts it and answers an MCP initialize; the
# package holds its unit and documents. Uses a store and a mount point of
# its own, removed at the end whatever happens.
set -u
T=${TASKFS:-/usr/bin/taskfs}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-deb-smoke-XXXXXX")
S=$tmp/state M=$tmp/mnt
mkdir "$M"
cleanup() {
  "$T" umount --lazy "$M" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/check.sh"

check "dpkg says taskfs is installed" sh -c "dpkg-query -W -f='\${Status}' taskfs | grep -q 'install ok installed'"
check "$T --version" sh -c "'$T' --version | grep -q '^taskfs '"
check "the mount unit runs /usr/bin/taskfs" \
  grep -q '^ExecStart=/usr/bin/taskfs mount --foreground' /usr/lib/systemd/user/taskfs-mount.service
check "the MCP host configs are in /usr/share/doc/taskfs/mcp" \
  test -f /usr/share/doc/taskfs/mcp/claude_desktop_config.json
check "man finds taskfs(1), taskfs-mount(5) and taskfs(7)" \
  sh -c 'man -w 1 taskfs && man -w 5 taskfs-mount && man -w 7 taskfs' >/dev/null
check "the completions are where bash, zsh and fish look" \
  test -f /usr/share/bash-completion/completions/taskfs -a -f /usr/share/zsh/vendor-completions/_taskfs \
  -a -f /usr/share/fish/vendor_completions.d/taskfs.fish
check "the packaged completer answers" sh -c "'$T' __complete l | grep -q '^ls	'"
check "fusermount3 came with the package's dependencies" sh -c 'command -v fusermount3 >/dev/null'

# run, wait, logs.
id=$("$T" run --state-dir "$S" -- sh -c 'echo hello from the package; exit 3')
check "run prints an id ($id)" test -n "$id"
"$T" wait --state-dir "$S" "$id" 2>/dev/null
check "wait exits with the task's code" test $? -eq 3
check "logs prints the output" sh -c "'$T' logs --state-dir '$S' '$id' | grep -qx 'hello from the package'"
check "run's supervisor was the packaged taskfs itself (a fork, no exec)" \
  sh -c "'$T' show --state-dir '$S' '$id' | grep -q '\"exe\": \"$T\"'"
mid=$(mcp_start "$T" "$S" "$tmp" from-mcp)
check "an MCP start's supervisor was the packaged taskfs-supervise" \
  sh -c "'$T' show --state-dir '$S' '$mid' | grep -q '\"exe\": \"/usr/libexec/taskfs/taskfs-supervise\"'"

# mount, read through it, umount.
if "$T" mount --state-dir "$S" "$M" >/dev/null; then
  ok "mount"
  check "the task is a directory of the mount" test -d "$M/tasks/$id"
  check "its transcript reads through the mount" grep -qx 'hello from the package' "$M/tasks/$id/transcript"
  check "umount" "$T" umount "$M"
  check "nothing is mounted any more" sh -c "! grep -q ' $M fuse.taskfs ' /proc/self/mounts"
else
  fail "mount"
fi

# mcp: one initialize request on stdin; the server answers and exits at EOF.
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"deb-smoke","version":"1"}}}'
reply=$(printf '%s\n' "$init" | timeout 20 "$T" mcp --state-dir "$S" 2>/dev/null)
check "mcp answers initialize" sh -c "printf '%s' '$reply' | grep -q '\"serverInfo\"'"

finish
