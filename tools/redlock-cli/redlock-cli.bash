# SPDX-License-Identifier: BSD-3-Clause
# bash completion for redlock-cli                        -*- shell-script -*-
#
# Completes the commands, the global options (before or after the command,
# as redlock-cli accepts them), each command's own options and the values
# that form a fixed set (--quarantine, --kill-signal, --wait forever,
# --phases, file names). The lists follow main.c, cli.c and the cmd_*.c
# option tables; tests/cli/test_completion.py checks them against what
# the binary accepts and documents in --help, so they cannot drift.
#
# An option that takes a value ends with '=' in these lists (the word
# after it, or after '=', is its value); the '=' is not completed.

_redlock_cli_commands="acquire extend release run hold elect leader status
ping doctor bench help"

_redlock_cli_globals="-n= --nodes= --connect-timeout= --op-timeout=
--drift-factor= --retry-count= --retry-delay= --retry-jitter= --prefix=
--password-file= --max-ttl= --quarantine= --no-quarantine
--allow-evicting-nodes --no-clock-guard --renew-window= --tls --cacert=
--cacertdir= --cert= --key= --sni= --insecure --json -q --quiet -v
--verbose -h --help --version"

# The options of command $1 (besides the global ones, which every command
# accepts too, and -h/--help).
_redlock_cli_command_options()
{
    local kinds="--limit= --shared --lock-delay= --owner= --fair --priority="
    case $1 in
        acquire | hold) echo "--ttl= --wait= --fence $kinds" ;;
        extend) echo "--ttl=" ;;
        release) echo "--force" ;;
        run | elect)
            echo "--ttl= --wait= --fence --no-watchdog --kill-signal=" \
                "--conflict-exit-code= --metrics-file= --at-least= $kinds"
            ;;
        leader) echo "--watch" ;;
        status) echo "--limit=" ;;
        bench)
            echo "--phases= --concurrency= --duration= --ttl= --hold=" \
                "--contenders= --locks= --label= --owner= --watched= --fair --fence"
            ;;
    esac
}

# Whether option $1 takes a value, in the lists for command $2.
_redlock_cli_takes_value()
{
    local o
    for o in $_redlock_cli_globals $(_redlock_cli_command_options "$2"); do
        [[ $o == "$1=" ]] && return 0
    done
    return 1
}

# COMPREPLY = compgen's words, one a line (a file name may hold blanks).
_redlock_cli_reply()
{
    mapfile -t COMPREPLY < <(compgen "$@")
}

# COMPREPLY for the value of option $1 (command $2), word so far $3.
_redlock_cli_value()
{
    local opt=$1 cur=$3 head
    case $opt in
        --quarantine) _redlock_cli_reply -W "auto on off" -- "$cur" ;;
        --kill-signal)
            # cli_parse_signal's names; run refuses STOP (it only pauses).
            _redlock_cli_reply -W "HUP INT QUIT KILL USR1 USR2 TERM ALRM
                CONT ABRT PIPE" -- "$cur"
            ;;
        --wait) _redlock_cli_reply -W forever -- "$cur" ;;
        --phases)
            # A comma list: complete its last element.
            head=${cur%"${cur##*,}"}
            _redlock_cli_reply -P "$head" -W "a b c f k" -- "${cur##*,}"
            type compopt &>/dev/null && compopt -o nospace
            ;;
        --password-file | --cacert | --cert | --key | --metrics-file)
            type compopt &>/dev/null && compopt -o filenames
            _redlock_cli_reply -f -- "$cur"
            ;;
        --cacertdir)
            type compopt &>/dev/null && compopt -o filenames
            _redlock_cli_reply -d -- "$cur"
            ;;
    esac
    return 0
}

_redlock_cli()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev='' cmd='' w i o words=''
    local npos=0
    COMPREPLY=()

    # '=' breaks words: "--quarantine=o" arrives as "--quarantine" "=" "o".
    if [[ $cur == = ]]; then
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        cur=''
    elif ((COMP_CWORD >= 2)) && [[ ${COMP_WORDS[COMP_CWORD - 1]} == = ]]; then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    elif ((COMP_CWORD >= 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        [[ $prev == -* ]] || prev=''
    fi

    # The command is the first word that is neither an option nor an
    # option's value; in run and elect, what follows "--" is a command line.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == -- ]]; then
            if [[ $cmd == run || $cmd == elect ]]; then
                if type _command_offset &>/dev/null; then
                    _command_offset $((i + 1))
                else
                    _redlock_cli_reply -c -- "$cur"
                fi
                return 0
            fi
            continue
        fi
        if [[ $w == -* ]]; then
            if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                ((i += 2))
            elif _redlock_cli_takes_value "$w" "$cmd"; then
                ((i++))
            fi
            continue
        fi
        [[ -z $cmd ]] && cmd=$w
        ((npos++))
    done

    if [[ -n $prev ]] && _redlock_cli_takes_value "$prev" "$cmd"; then
        _redlock_cli_value "$prev" "$cmd" "$cur"
        return 0
    fi
    if [[ $cur == -* ]]; then
        for o in $_redlock_cli_globals $(_redlock_cli_command_options "$cmd"); do
            words+=" ${o%=}"
        done
        _redlock_cli_reply -W "$words" -- "$cur"
    elif ((npos == 0)) || { [[ $cmd == help ]] && ((npos == 1)); }; then
        _redlock_cli_reply -W "$_redlock_cli_commands" -- "$cur"
    fi
    return 0
} &&
    complete -F _redlock_cli redlock-cli

# ex: filetype=sh
