# Real zsh completion on a pseudo-terminal (zsh/zpty): starts `zsh -f -i`
# with FPATH_DIR first in $fpath and compinit, waits for its prompt, types
# LINE and TAB twice (so that an ambiguous word is also listed), and waits
# until the terminal shows TEXT (20 s at most: then it fails); prints what
# it showed.
#   usage: zsh -f zsh-drive.zsh LINE FPATH_DIR TEXT
zmodload zsh/zpty
# (zpty evaluates its command line: the prompt is quoted twice.)
zpty z "env PS1='ZP%% ' TERM=dumb zsh -f -i"
zpty -w z "fpath=(${(q)2} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "setopt nobeep; zstyle ':completion:*' menu no; LISTMAX=1000; print READY"
zpty -r z line '*READY*READY*ZP%' || exit 1
zpty -n -w z "$1"$'\t\t'
# Polls what the terminal shows until TEXT is there, for up to 20 s.
zmodload zsh/datetime
local out= chunk deadline=$(( EPOCHREALTIME + 20 ))
while [[ $out != *${~${(b)3}}* ]] && (( EPOCHREALTIME < deadline )); do
  if zpty -r -t z chunk; then out+=$chunk; else sleep 0.05; fi
done
print -r -- "$out"
zpty -d z
[[ $out == *${~${(b)3}}* ]]
