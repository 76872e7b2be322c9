# bash completion for taskfs (installed as bash-completion/completions/taskfs).
# Every answer comes from `taskfs __complete WORD... CUR` (cli/cmd_complete.c):
# verbs, options, values and live task ids and keys, read from the binary's
# own tables and the store; this file only hands them to bash.

_taskfs() {
  local cur=${COMP_WORDS[COMP_CWORD]} i line directive=: args=() at=(0)
  # COMP_WORDBREAKS splits "--opt=value" into "--opt" "=" "value": the
  # completer gets "--opt" "value"; at[] maps its positions back.
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ ${COMP_WORDS[i]} == = ]] && continue
    args+=("${COMP_WORDS[i]}")
    at+=("$i")
  done
  [[ $cur == = ]] && cur=
  COMPREPLY=()
  while IFS= read -r line; do
    case $line in
    :*) directive=$line ;;
    *) COMPREPLY+=("${line%%$'\t'*}") ;;
    esac
  done < <("${COMP_WORDS[0]}" __complete "${args[@]}" "$cur" 2>/dev/null)
  case $directive in
  :files | :dirs)
    compopt -o filenames 2>/dev/null
    local opt=-f
    [[ $directive == :dirs ]] && opt=-d
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$opt" -- "$cur")
    ;;
  ":command "*)
    # run's CMD: complete it, and its own arguments, as a command line.
    i=${directive#:command }
    i=${at[i]:-$COMP_CWORD}
    if declare -F _command_offset >/dev/null; then
      _command_offset "$i"
    elif ((i == COMP_CWORD)); then
      while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -c -- "$cur")
    else
      compopt -o default 2>/dev/null
    fi
    ;;
  esac
}
complete -F _taskfs taskfs
