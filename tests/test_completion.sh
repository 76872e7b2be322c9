#!/bin/sh
# The shell completions of contrib/completion/ driven by the shells
# themselves: bash (an interactive bash with bash-completion and the script
# loaded, calling the function `complete -p taskfs` names with COMP_WORDS
# and COMP_CWORD as readline sets them), fish (`complete -C LINE`, fish's
# own engine) and zsh (real TABs on a pseudo-terminal through zsh/zpty).
# Verbs, options, option values, live task ids and keys, directories, and
# run's CMD completed as a command. TASKFS_BIN names the binary; it is on
# PATH as `taskfs` for the shells.
set -eu
top=$(pwd)
bin=${TASKFS_BIN:-$top/build/taskfs}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskfs-test-completion-XXXXXX")
. "$(dirname "$0")/helpers/check.sh"
on_exit 'rm -rf "$tmp"'
comp=$top/contrib/completion
mkdir "$tmp/bin"
ln -s "$bin" "$tmp/bin/taskfs"
PATH=$tmp/bin:$PATH
export TASKFS_STATE_DIR=$tmp/state HOME=$tmp
id=$(taskfs run --wait --key build-one true)
mkdir "$tmp/somedir"

# has OUTPUT WORD...: every WORD is a whole line (or a line's first field)
# of OUTPUT.
has() {
  out=$1
  shift
  for w in "$@"; do
    printf '%s\n' "$out" | cut -f1 | grep -qxF -- "$w" || { echo "  missing '$w' in: $out" | tr '\n' ' '; echo; return 1; }
  done
}
lacks() {
  ! printf '%s\n' "$1" | cut -f1 | grep -qxF -- "$2" || { echo "  unexpected '$2'"; return 1; }
}

verbs=$(taskfs --help | sed -n '/^verbs:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
check "taskfs --help lists verbs" test -n "$verbs"

# ---- the completer itself: every listed verb, and each describes itself
out=$(taskfs __complete '')
check "__complete offers every verb of --help" has "$out" $verbs
for v in $verbs; do
  check "__complete: $v has its options (--help among them)" has "$(taskfs __complete "$v" -)" --help
done
check "__complete: internal verbs are not offered" lacks "$out" supervise
# An option offered without its description is a help text the completer
# could not read (an alias, a wrapped line): each one says what it does.
undescribed() {
  for v in $verbs; do
    taskfs __complete "$v" -- | awk -F'\t' -v v="$v" '/^--/ && $2 == "" { print v " " $1; bad = 1 } END { exit bad }' || return 1
  done
}
check "__complete: every option of every verb has its description" undescribed

# ---- values the verbs' own tables name (issue 30 item 12)
taskfs queue set builds --parallel 1 >/dev/null
check "__complete: ls --color '' offers the words of --color" has "$(taskfs __complete ls --color '')" auto always never
check "__complete: ls --color=a" has "$(taskfs __complete ls --color=a)" --color=auto --color=always
check "__complete: ls --columns id,st offers the columns" has "$(taskfs __complete ls --columns id,st)" id,state id,started
check "__complete: ls --columns '' offers every column" has "$(taskfs __complete ls --columns '')" id cpu-user treepeak limits
check "__complete: run --queue '' offers the store's queues" has "$(taskfs __complete run --queue '')" builds
check "__complete: queue set '' offers the store's queues" has "$(taskfs __complete queue set '')" builds
check "__complete: queue pause '' offers the store's queues" has "$(taskfs __complete queue pause '')" builds
check "__complete: signal '' offers signal names" has "$(taskfs __complete signal '')" TERM KILL HUP USR1
check "__complete: signal TERM '' offers tasks" has "$(taskfs __complete signal TERM '')" "$id" build-one
out=$(taskfs __complete prune --state '')
check "__complete: prune --state '' offers the states prune takes" has "$out" completed failed cancelled lost
for st in running queued paused; do
  check "__complete: prune --state '' does not offer $st" lacks "$out" "$st"
done
check "__complete: ls --state '' offers every state" has "$(taskfs __complete ls --state '')" running queued paused completed
out=$(taskfs __complete ls --state running,)
check "__complete: ls --state running, offers the others" has "$out" running,failed running,queued
check "__complete: ls --state running, does not offer running again" lacks "$out" running,running

# ---- the store is opened as every verb opens it (issue 26 item 4)
esc=$(printf '\033')
taskfs run --wait --key ctl -- printf "x${esc}]0;t$(printf '\007')	y" >/dev/null
out=$(taskfs __complete logs '')
check "__complete: descriptions carry no control byte or tab" \
  sh -c 'printf "%s\n" "$1" | cut -f2- | grep -q "[[:cntrl:]]" && exit 1; printf "%s\n" "$1" | grep -qF "\\x1b"' sh "$out"
if [ "$(id -u)" = 0 ] && getent passwd nobody >/dev/null; then
  # Another user's store: every verb refuses it (111), and so does the
  # completer: it offers none of its tasks.
  cp -a "$tmp/state" "$tmp/theirs"
  chown -R nobody "$tmp/theirs"
  code=0
  taskfs --state-dir "$tmp/theirs" ls >/dev/null 2>&1 || code=$?
  check "ls refuses another user's store with 111" test "$code" = 111
  out=$(taskfs __complete --state-dir "$tmp/theirs" logs '')
  check "__complete offers no task of another user's store" lacks "$out" "$id"
  check "__complete offers no key of another user's store" lacks "$out" build-one
  check "__complete prints no error for it" sh -c "taskfs __complete --state-dir '$tmp/theirs' logs '' 2>&1 >/dev/null | grep -q . && exit 1 || exit 0"
else
  echo "skip: another user's store needs root (chown)"
fi

# ---- bash
if [ -f /usr/share/bash-completion/bash_completion ] && command -v bash >/dev/null; then
  cat >"$tmp/bashrc" <<RC
. /usr/share/bash-completion/bash_completion
. '$comp/taskfs.bash'
# comp CWORD WORD...: what the completion offers, one a line, sorted.
comp() {
  COMP_CWORD=\$1; shift; COMP_WORDS=("\$@"); COMP_LINE="\$*"; COMP_POINT=\${#COMP_LINE}
  f=\$(complete -p taskfs | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
  COMPREPLY=(); "\$f" taskfs "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
  printf '%s\n' "\${COMPREPLY[@]}" | sort -u
}
RC
  b() { printf '%s\n' "$*" | bash --rcfile "$tmp/bashrc" -i 2>/dev/null | grep -v '^$' || true; }
  check "bash: complete -p taskfs names a function" sh -c "echo 'complete -p taskfs' | bash --rcfile '$tmp/bashrc' -i 2>/dev/null | grep -q -- '-F _taskfs taskfs'"
  check "bash: verbs" has "$(b comp 1 taskfs '')" $verbs
  check "bash: a verb's prefix" has "$(b comp 1 taskfs l)" logs ls
  check "bash: options of a verb" has "$(b comp 2 taskfs logs --f)" --follow --foreign-store
  check "bash: short options" has "$(b comp 2 taskfs logs -)" -n -f --lines
  check "bash: values named by core (--restart)" has "$(b comp 3 taskfs run --restart '')" no on-failure always
  check "bash: --state=VALUE, split at = as readline does" has "$(b comp 4 taskfs ls --state = r)" running
  check "bash: a comma list (--state S,S)" has "$(b comp 3 taskfs ls --state running,f)" running,failed
  check "bash: ls --color ''" has "$(b comp 3 taskfs ls --color '')" auto always never
  check "bash: signal ''" has "$(b comp 2 taskfs signal '')" TERM KILL
  check "bash: live task ids and keys" has "$(b comp 2 taskfs logs '')" "$id" build-one
  check "bash: a key by its prefix" has "$(b comp 2 taskfs show build)" build-one
  check "bash: --state-dir before the verb names the store" \
    has "$(TASKFS_STATE_DIR=/nonexistent b comp 4 taskfs --state-dir "$tmp/state" wait '')" "$id"
  check "bash: --state-dir DIR completes directories" has "$(b comp 3 taskfs ls --state-dir "$tmp/som")" "$tmp/somedir"
  check "bash: mount's MOUNTPOINT completes directories" has "$(b comp 2 taskfs mount "$tmp/som")" "$tmp/somedir"
  check "bash: run's CMD completes as a command" has "$(b comp 2 taskfs run ech)" echo
  check "bash: run's CMD takes its own completion" has "$(b comp 4 taskfs run -- ls --colo)" --color
  out=$(b comp 2 taskfs umount --)
  check "bash: umount takes no --state-dir" lacks "$out" --state-dir
else
  echo "skip: bash-completion is not installed (apt-get install bash-completion)"
fi

# ---- fish
if command -v fish >/dev/null; then
  f() { fish --no-config -c "source '$comp/taskfs.fish'; complete -C '$*'" 2>/dev/null || true; }
  check "fish: verbs with their summaries" has "$(f 'taskfs ')" $verbs
  check "fish: a verb's summary is its description" sh -c 'printf "%s\n" "$1" | grep -qx "ls	list tasks"' sh "$(f 'taskfs l')"
  check "fish: options" has "$(f 'taskfs logs --f')" --follow --foreign-store
  check "fish: --state=VALUE" has "$(f 'taskfs ls --state=r')" --state=running
  check "fish: live task ids and keys" has "$(f 'taskfs cancel ')" "$id" build-one
  check "fish: directories" has "$(f "taskfs mount $tmp/som")" "$tmp/somedir/"
  check "fish: run's CMD completes as a command" has "$(f 'taskfs run ech')" echo
else
  echo "skip: fish is not installed (apt-get install fish)"
fi

# ---- zsh
if command -v zsh >/dev/null; then
  mkdir "$tmp/zfunc"
  cp "$comp/_taskfs" "$tmp/zfunc/"
  # z LINE TEXT: the terminal shows TEXT after LINE and TAB TAB.
  z() {
    timeout 60 zsh -f "$top/tests/completion/zsh-drive.zsh" "$1" "$tmp/zfunc" "$2" >"$tmp/zsh.out" 2>&1 ||
      { echo "  no '$2' after '$1' TAB TAB:"; tr -d '\r' <"$tmp/zsh.out" | tail -5; return 1; }
  }
  check "zsh: verbs listed with their summaries" z 'taskfs l' 'ls    -- list tasks'
  check "zsh: options" z 'taskfs logs --f' '--foreign-store  -- read'
  check "zsh: values" z 'taskfs run --restart on' 'on-failure '
  check "zsh: live keys" z 'taskfs show build' 'build-one '
  check "zsh: directories" z "taskfs mount $tmp/som" "$tmp/somedir/"
  check "zsh: run's CMD completes as a command" z 'taskfs run ech' 'taskfs run echo'
else
  echo "skip: zsh is not installed (apt-get install zsh)"
fi
finish
