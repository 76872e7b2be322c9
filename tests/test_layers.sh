#!/bin/sh
# Who may include whom (docs/ARCHITECTURE.md, "Layers"):
#   core <- supervisor <- live <- mcp, http, fs <- cli
# Each source file of a layer includes headers of its own folder and of
# the layers to its left only; the faces never include each other's,
# except the /mcp route of http/ (http/mcp.c, http/mcp_http.[ch]) and the
# process that puts the MCP server on the hub (http/serve.c). Run from
# the top of the tree.
set -eu
. "$(dirname "$0")/helpers/check.sh"

# allowed FILE: the folders FILE may include from ("taskfs" is
# include/taskfs; supervise.h and mount.h are checked apart).
allowed() {
  case $1 in
  core/*) echo "core taskfs" ;;
  supervisor/*) echo "supervisor taskfs" ;;
  live/*) echo "live taskfs" ;;
  mcp/*) echo "mcp live taskfs" ;;
  fs/*) echo "fs live taskfs" ;;
  http/mcp.c | http/mcp_http.c | http/mcp_http.h | http/serve.c) echo "http mcp live taskfs" ;;
  http/*) echo "http live taskfs" ;;
  esac
}

# bad FILE: prints each include of FILE that its layer may not have.
bad() {
  ok_dirs=$(allowed "$1")
  sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1" | while read -r inc; do
    dir=${inc%%/*}
    case " $ok_dirs " in
    *" $dir "*) ;;
    *) echo "$1 includes $inc" ;;
    esac
    case $1:$inc in
    core/*:taskfs/supervise.h | core/*:taskfs/mount.h) echo "$1 includes $inc" ;;
    supervisor/*:taskfs/mount.h | live/*:taskfs/mount.h) echo "$1 includes $inc" ;;
    esac
  done
}

for layer in core supervisor live mcp fs http; do
  files=$(find "$layer" -name '*.[ch]' | sort)
  check "$layer/ has sources" test -n "$files"
  out=$(for f in $files; do bad "$f"; done)
  if [ -z "$out" ]; then
    ok "$layer/ includes only its own headers and those of the layers below it"
  else
    fail "$layer/ reaches past its layer:"
    echo "$out" | sed 's/^/  /'
  fi
done
finish
