#!/bin/sh
# Which public functions of libtaskfs.a, libtaskfs-supervisor.a and
# libtaskfs-live.a the shipped binary reaches (`make api-reach`): "no core
# function exists for tests alone" made checkable.
#
#   usage: scripts/api-reach.sh [BUILD_DIR]
#
# Builds the binary in BUILD_DIR (default build-reach) at -O0 with one
# section per function and links it with --gc-sections, so a function the
# linker drops is one that nothing reachable from main() calls (-O0: no
# function disappears by being inlined into its caller). Prints one
# markdown row per exported function: reached or not, and which face
# directories and tests name it. Exits 1 if a function is reached by
# nothing but tests.
set -eu

B=${1:-build-reach}
MAKE=${MAKE:-make}
# FACES=static: the faces linked in, as one binary, so that what they call
# counts as reached (the shipped binary loads them from taskfs-faces.so and
# holds core whole for it).
$MAKE -s -j2 BUILD="$B" FACES=static OPT="-O0 -ffunction-sections" LDFLAGS="-Wl,--gc-sections" \
  "$B/taskfs" >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm "$B/taskfs" | awk '$2 ~ /^[Tt]$/ {print $3}' | sort -u >"$tmp/bin"

# Names a file of dir mentions (callers and declarations alike; a
# declaration lives in include/, so the face dirs show real callers).
users() {
  grep -rlw --include='*.c' "$1" $2 2>/dev/null | sed 's|/.*||' | sort -u | tr '\n' ' '
}

only_tests=0
printf '| library | function | reached | called in | tests |\n|---|---|---|---|---|\n'
for lib in libtaskfs libtaskfs-supervisor libtaskfs-live; do
  nm -g --defined-only "$B/$lib.a" | awk '$2 == "T" {print $3}' | sort -u |
    while read -r f; do
      if grep -qx "$f" "$tmp/bin"; then reached=yes; else reached=no; fi
      faces=$(users "$f" "cli fs mcp http live supervisor core")
      tests=$(grep -rlw --include='*.c' --include='*.h' "$f" tests 2>/dev/null | wc -l)
      printf '| %s | `%s` | %s | %s | %s |\n' "$lib" "$f" "$reached" "$faces" "$tests"
      if [ "$reached" = no ] && [ "$tests" -gt 0 ]; then
        echo "$f" >>"$tmp/only"
      fi
    done
done
if [ -s "$tmp/only" ]; then
  echo
  echo "api-reach: not reached by the binary, yet called by tests:" $(cat "$tmp/only")
  only_tests=1
fi
exit $only_tests
