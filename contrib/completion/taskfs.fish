# fish completion for taskfs (installed in fish/vendor_completions.d). Every
# answer comes from `taskfs __complete WORD... CUR` (cli/cmd_complete.c):
# verbs, options, values and live task ids and keys, read from the binary's
# own tables and the store; this file only hands them to fish.

function __taskfs_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    for line in ($tokens[1] __complete $tokens[2..-1] $cur 2>/dev/null)
        switch $line
            case :files
                __fish_complete_path $cur
            case :dirs
                __fish_complete_directories $cur
            case ':command *'
                # run's CMD: complete it, and its own arguments, as a command line.
                set -l n (string replace ':command ' '' -- $line)
                set -l rest $tokens[(math $n + 1)..-1]
                complete -C (string join ' ' -- (string escape -- $rest) $cur)
            case ':*'
            case '*'
                echo $line
        end
    end
end

complete -c taskfs -f -a '(__taskfs_complete)'
