#!/bin/sh
# The build keeps the layers (docs/ARCHITECTURE.md, "Layers in the
# build"): with the flags its folder compiles with, a library reaches the
# headers of its own packages only; core/ cannot include <uv.h>,
# <pcre2.h>, <microhttpd.h> or FUSE's, wherever the system keeps them
# (Debian puts uv.h, pcre2.h and microhttpd.h in /usr/include, where a
# missing -I keeps nothing out). Run by `make test` from the top of the
# tree; MAKE names the make to use.
set -eu
MAKE=${MAKE:-make}
top=$(pwd)
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-layers-XXXXXX")
. "$(dirname "$0")/helpers/check.sh"
on_exit 'rm -rf "$tmp"'

# compiles LAYER HEADER [DEFINES]: HEADER compiles with LAYER's flags.
compiles() {
  # --no-print-directory: under make check, MAKEFLAGS carries w, and
  # "Entering directory" would be read as flags.
  flags=$($MAKE -s --no-print-directory -C "$top" layer-cflags LAYER="$1") || return 1
  # shellcheck disable=SC2086 # the flags are words
  (cd "$top" && printf '%s\n#include <%s>\n' "${3:-}" "$2" |
    $CC $flags -fsyntax-only -x c - >"$tmp/cc.log" 2>&1)
}
# refused LAYER HEADER: HEADER does not compile with LAYER's flags, and
# the error says which layer rule it breaks.
refused() {
  if compiles "$1" "$2"; then
    echo "  $1/ can include <$2>"
    return 1
  fi
  grep -q "$1/ may not include <$2>" "$tmp/cc.log" || { cat "$tmp/cc.log"; return 1; }
}

fuse='#define FUSE_USE_VERSION 35'
pcre='#define PCRE2_CODE_UNIT_WIDTH 8'
check "core takes jansson" compiles core jansson.h
for h in uv.h pcre2.h microhttpd.h fuse.h fuse_lowlevel.h; do
  check "core refuses <$h>" refused core "$h"
done
check "supervisor takes libuv" compiles supervisor uv.h
for h in pcre2.h microhttpd.h fuse_lowlevel.h; do
  check "supervisor refuses <$h>" refused supervisor "$h"
done
check "fs takes FUSE" compiles fs fuse_lowlevel.h "$fuse"
check "fs takes libuv" compiles fs uv.h
for h in pcre2.h microhttpd.h; do
  check "fs refuses <$h>" refused fs "$h"
done
check "mcp takes PCRE2" compiles mcp pcre2.h "$pcre"
for h in microhttpd.h fuse_lowlevel.h; do
  check "mcp refuses <$h>" refused mcp "$h"
done
check "http takes libmicrohttpd" compiles http microhttpd.h
check "http refuses FUSE" refused http fuse_lowlevel.h
for h in pcre2.h microhttpd.h fuse_lowlevel.h; do
  check "cli (the binary: jansson, libuv) refuses <$h>" refused cli "$h"
done
finish
