#!/bin/sh
# `make install` and `make uninstall` (see the Makefile): one list of what
# is installed, read by both, so that uninstall removes exactly what
# install put there.
#
#   usage: scripts/install.sh install|uninstall MANIFEST [MODE SRC DEST]...
#
# DEST and MANIFEST are installed paths ($PREFIX/...); $DESTDIR, from the
# environment, goes in front of each. install copies every SRC to DEST with
# MODE, creating missing directories, and records in MANIFEST each file it
# wrote and each directory it had to create ("f PATH", "d PATH", in order;
# a second install adds to the record). uninstall removes the recorded
# files, then the recorded directories that are empty, deepest first: a
# directory that existed before install (/usr/local/bin) is never removed.
# Without a record (an install by an older version) it removes the files
# of the list, and nothing else. Paths must not contain spaces.
set -eu

action=${1:?install or uninstall}
manifest=${DESTDIR:-}${2:?manifest path}
shift 2

# Creates directory $1 and its missing parents, recording each it creates.
made_dirs() {
  [ -d "$1" ] && return 0
  made_dirs "$(dirname "$1")"
  mkdir "$1"
  echo "d $1" >>"$new"
}

do_install() {
  new=$(mktemp)
  trap 'rm -f "$new"' EXIT
  while [ $# -ge 3 ]; do
    mode=$1 src=$2 dest=${DESTDIR:-}$3
    shift 3
    made_dirs "$(dirname "$dest")"
    install -m "$mode" "$src" "$dest"
    echo "f $dest" >>"$new"
    echo "  $dest"
  done
  made_dirs "$(dirname "$manifest")"
  # The old record first (its directories were made first), each line once.
  { [ -f "$manifest" ] && grep -v '^#' "$manifest"; cat "$new"; } |
    awk '!seen[$0]++' >"$new.all"
  {
    echo "# written by 'make install'; 'make uninstall' removes these files, then"
    echo "# these directories when empty"
    cat "$new.all"
  } >"$manifest"
  chmod 0644 "$manifest"
  rm -f "$new.all"
}

do_uninstall() {
  if [ ! -f "$manifest" ]; then
    while [ $# -ge 3 ]; do
      rm -f "${DESTDIR:-}$3"
      shift 3
    done
    return 0
  fi
  sed -n 's/^f //p' "$manifest" | while IFS= read -r f; do
    rm -f "$f" && echo "  removed $f"
  done
  dirs=$(sed -n 's/^d //p' "$manifest")
  rm -f "$manifest"
  # Deepest (made last) first; rmdir leaves a directory that is not empty.
  printf '%s\n' "$dirs" | sed '1!G;h;$!d' | while IFS= read -r d; do
    [ -n "$d" ] && rmdir "$d" 2>/dev/null || true
  done
}

case $action in
install) do_install "$@" ;;
uninstall) do_uninstall "$@" ;;
*)
  echo "install.sh: unknown action '$action' (install or uninstall)" >&2
  exit 100
  ;;
esac
