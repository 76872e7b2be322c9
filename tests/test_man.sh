#!/bin/sh
# The man pages of man/: each renders with no warning from man (groff) and,
# when mandoc is installed, none from its linter; and taskfs(1) cannot
# drift from the binary: every verb `taskfs --help` lists has its section
# (".Ss VERB") and that section names each of the verb's options, as the
# verb's own option table has them (`taskfs __complete VERB -`) and every
# exit code its --help gives; DURATIONS names the duration parser's units.
# TASKFS_BIN names the binary.
set -eu
top=$(pwd)
bin=${TASKFS_BIN:-$top/build/taskfs}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-man-XXXXXX")
. "$(dirname "$0")/helpers/check.sh"
on_exit 'rm -rf "$tmp"'

pages=$(ls man/*.[1-8])
check "man/ has taskfs.1, taskfs-mount.5 and taskfs.7" \
  test -f man/taskfs.1 -a -f man/taskfs-mount.5 -a -f man/taskfs.7
# quiet CMD...: succeeds when CMD succeeds and prints nothing on stderr.
quiet() {
  "$@" >/dev/null 2>"$tmp/err" && [ ! -s "$tmp/err" ] || { sed 's/^/  /' "$tmp/err"; return 1; }
}
for p in $pages; do
  for w in 80 50; do
    check "$p renders with no man --warnings output (width $w)" \
      quiet timeout 60 env MANWIDTH=$w LC_ALL=C.UTF-8 man --warnings -l "$p"
  done
  if command -v mandoc >/dev/null; then
    check "$p: mandoc -Tlint has no warning" quiet mandoc -Tlint -Wwarning "$p"
  fi
  check "$p: its NAME is its file name" sh -c "MANWIDTH=80 man -l '$p' 2>/dev/null | grep -A1 '^NAME' | grep -q \"\$(basename '$p' | sed 's/\.[1-8]\$//') \""
done

# section VERB: the text of ".Ss VERB" in taskfs.1, up to the next section.
section() {
  awk -v v="$1" '/^\.S[sh] / { on = ($0 == ".Ss " v) ; next } on' man/taskfs.1
}
verbs=$("$bin" --help | sed -n '/^verbs:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
check "taskfs --help lists verbs" test -n "$verbs"
for v in $verbs; do
  check "taskfs.1 has a section for $v" grep -qx ".Ss $v" man/taskfs.1
  section "$v" >"$tmp/sec"
  for opt in $("$bin" __complete "$v" - | cut -f1 | grep '^-'); do
    case $opt in
    --help | -h | --state-dir | --foreign-store) continue ;; # COMMON OPTIONS
    --*) pat="Fl -${opt#--}\\b" ;;
    *) pat="Fl ${opt#-}\\b" ;;
    esac
    check "taskfs.1 ($v) documents $opt" grep -q -- "$pat" "$tmp/sec"
  done
done
# DURATIONS names the units of the one parser (its ".Cm ms , s , m , h" and
# ".Cm d :" lines), as the parser's error says them (TFS_DURATION_UNITS), and
# each of them parses.
man_units=$(awk '/^\.Sh DURATIONS/ { on = 1; next } /^\.Sh / { on = 0 } on && /^\.Cm [a-z][a-z]?( , [a-z][a-z]?)*( :)?$/ { sub(/^\.Cm /, ""); printf "%s ", $0 }' man/taskfs.1 | tr -d ',:' | tr -s ' ' '\n' | grep -v '^$' | sort | tr '\n' ' ')
"$bin" wait --timeout 5x nosuch 2>"$tmp/err" || true
bin_units=$(sed -n 's/.*a unit \([a-z, ]*\) (a bare.*/\1/p' "$tmp/err" | sed 's/ or /, /' | tr -d ',' | tr ' ' '\n' | grep -v '^$' | sort | tr '\n' ' ')
check "man DURATIONS lists the parser's units ($bin_units)" test -n "$bin_units" -a "$man_units" = "$bin_units"
for u in $bin_units; do
  code=0
  "$bin" prune --older-than "1$u" --state-dir "$tmp/nostore" >/dev/null 2>&1 || code=$?
  check "the duration unit $u parses" test "$code" = 0
done
# Every exit code a verb's --help gives is in its man section, or in the
# page's EXIT STATUS (the task's own codes, which the sections refer to).
codes() { grep -o '\b1[0-9][0-9]\b' | sort -u; }
global=$(awk '/^\.Sh EXIT STATUS/ { on = 1; next } /^\.Sh / { on = 0 } on' man/taskfs.1 | codes)
for v in $verbs; do
  sec=$(section "$v" | codes)
  for c in $("$bin" "$v" --help | sed -n '/^EXIT STATUS/,$p' | codes); do
    check "taskfs.1 ($v) gives exit $c as its --help does" sh -c 'printf "%s\n" $1 | grep -qx "$2"' sh "$sec $global" "$c"
  done
done
check "taskfs.1 documents the common options" \
  sh -c "grep -q 'It Fl -state-dir' man/taskfs.1 && grep -q 'It Fl -foreign-store' man/taskfs.1"
finish
