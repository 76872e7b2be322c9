#!/bin/sh
# `make install` and `make uninstall` with PREFIX and DESTDIR: what lands
# where, the systemd unit with the installed path, and an uninstall that
# leaves no file and no empty directory that install made (but keeps every
# directory that was there before). Run by `make test` from the top of the
# tree; MAKE names the make to use.
set -eu
MAKE=${MAKE:-make}
top=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-install-XXXXXX")
. "$(dirname "$0")/helpers/check.sh"
on_exit 'rm -rf "$tmp"'
mk() { $MAKE -s -C "$top" "$@" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; return 1; }; }

# 1. A staging tree, as a package build does it.
x=$tmp/x
mkdir "$x"
check "make install DESTDIR PREFIX=/usr" mk install DESTDIR="$x" PREFIX=/usr
check "the binary is in bin and runs" sh -c "'$x/usr/bin/taskfs' --version | grep -q '^taskfs '"
unit=$x/usr/lib/systemd/user/taskfs-mount.service
check "the mount unit runs the installed path" grep -q '^ExecStart=/usr/bin/taskfs mount --foreground' "$unit"
check "no template placeholder is left" sh -c "! grep -q @ '$unit'"
check "docs in share/doc/taskfs" test -f "$x/usr/share/doc/taskfs/README.md" -a -f "$x/usr/share/doc/taskfs/mount.md"
check "MCP host configs in share/doc/taskfs/mcp" test -f "$x/usr/share/doc/taskfs/mcp/claude_desktop_config.json"
check "man pages in share/man" test -f "$x/usr/share/man/man1/taskfs.1" -a -f "$x/usr/share/man/man5/taskfs-mount.5" -a -f "$x/usr/share/man/man7/taskfs.7"
check "the installed taskfs(1) reads with man" sh -c "MANPATH='$x/usr/share/man' man -w taskfs >/dev/null 2>&1 || man -l '$x/usr/share/man/man1/taskfs.1' >/dev/null"
check "bash completion where bash-completion loads it" test -f "$x/usr/share/bash-completion/completions/taskfs"
check "zsh completion in vendor-completions" test -f "$x/usr/share/zsh/vendor-completions/_taskfs"
check "fish completion in vendor_completions.d" test -f "$x/usr/share/fish/vendor_completions.d/taskfs.fish"
check "modes: binary 0755, the rest 0644" sh -c "[ \$(stat -c %a '$x/usr/bin/taskfs') = 755 ] && [ \$(stat -c %a '$unit') = 644 ]"
sup=$x/usr/libexec/taskfs/taskfs-supervise
check "the faces plugin in lib/taskfs, 0644" sh -c "[ \$(stat -c %a '$x/usr/lib/taskfs/taskfs-faces.so') = 644 ]"
check "the installed binary loads no FUSE, HTTP or PCRE2 library" \
  sh -c "! ldd '$x/usr/bin/taskfs' | grep -qE 'libfuse3|libmicrohttpd|libgnutls|libpcre2'"
check "the installed binary finds its faces (mcp, serve, mount, umount)" \
  sh -c "'$x/usr/bin/taskfs' mcp --help >/dev/null && '$x/usr/bin/taskfs' serve --help >/dev/null && '$x/usr/bin/taskfs' mount --help >/dev/null && '$x/usr/bin/taskfs' umount --help >/dev/null"
check "the supervisor binary in libexec/taskfs, 0755" sh -c "[ \$(stat -c %a '$sup') = 755 ]"
# A `run` of the installed binary forks its supervisor without an exec
# (supervisor/inproc.c); the faces start theirs with an exec of the light
# supervisor beside the binary (../libexec/taskfs), not the CLI again.
id=$("$x/usr/bin/taskfs" run --state-dir "$tmp/store" --wait -- true 2>/dev/null | head -n 1)
check "an installed run's supervisor is the installed taskfs itself" \
  sh -c "'$x/usr/bin/taskfs' show --state-dir '$tmp/store' '$id' | grep -q '\"exe\": \"$x/usr/bin/taskfs\"'"
check "and it ran the task" sh -c "'$x/usr/bin/taskfs' show --state-dir '$tmp/store' '$id' | grep -q '\"state\": \"completed\"'"
id=$(mcp_start "$x/usr/bin/taskfs" "$tmp/store" "$tmp" from-mcp)
check "an installed MCP start runs under the installed taskfs-supervise" \
  sh -c "'$x/usr/bin/taskfs' show --state-dir '$tmp/store' '$id' | grep -q '\"exe\": \"$sup\"'"
check "make install twice" mk install DESTDIR="$x" PREFIX=/usr
check "make uninstall with the same variables" mk uninstall DESTDIR="$x" PREFIX=/usr
left=$(find "$x" -mindepth 1)
check "uninstall leaves nothing (left: ${left:-nothing})" test -z "$left"

# 2. Directories that were there before install stay, and so do others' files.
y=$tmp/y
mkdir -p "$y/usr/local/bin" "$y/usr/local/share/doc/other"
echo keep >"$y/usr/local/share/doc/other/file"
check "make install into existing directories" mk install DESTDIR="$y"
check "the default PREFIX is /usr/local" test -x "$y/usr/local/bin/taskfs"
check "make uninstall" mk uninstall DESTDIR="$y"
check "the directories that existed are kept" test -d "$y/usr/local/bin" -a -f "$y/usr/local/share/doc/other/file"
left=$(cd "$y" && find . -mindepth 1 | sort | tr '\n' ' ')
want="./usr ./usr/local ./usr/local/bin ./usr/local/share ./usr/local/share/doc ./usr/local/share/doc/other ./usr/local/share/doc/other/file "
check "nothing else is left (left: $left)" test "$left" = "$want"

# 3. As a user, into a home: user units go where systemd looks in a home.
h=$tmp/home
mkdir "$h"
check "make install PREFIX=~/.local" mk install HOME="$h" PREFIX="$h/.local"
check "the user unit is in ~/.local/share/systemd/user" \
  grep -q "^ExecStart=$h/.local/bin/taskfs mount" "$h/.local/share/systemd/user/taskfs-mount.service"
check "make uninstall PREFIX=~/.local" mk uninstall HOME="$h" PREFIX="$h/.local"
left=$(find "$h" -mindepth 1)
check "uninstall leaves the home as it was (left: ${left:-nothing})" test -z "$left"

# The units in the build tree follow the PREFIX of the last make again.
mk all >/dev/null 2>&1 || true
finish
