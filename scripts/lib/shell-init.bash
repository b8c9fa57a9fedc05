# shellcheck shell=bash
# tmux-wait shell integration for bash 4.4+, printed by
# `tmux-wait shell-init bash`; load it with this line at the end of ~/.bashrc:
#   eval "$(tmux-wait shell-init bash)"
# The shell then marks, with escape sequences that draw nothing (OSC 133),
# where its prompt starts (A), where the typed command line starts (B), where
# a command's output starts (C) and where the command ended, with its exit
# status (D;STATUS), as terminals' shell integrations do. tmux-wait output,
# watch --done and the plugin's F key read the status from there.
# $? and an existing PROMPT_COMMAND, PS0 and PS1 are kept.
if [[ $- == *i* ]] && ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4))); then
    # 1 from the moment a typed command line runs (set by PS0, which bash
    # shows just before it runs one, and not for an empty line) to its end.
    __tmux_wait_ran=0

    # First in PROMPT_COMMAND: the end of the command (with its status, which
    # it hands on unchanged), then the start of the prompt.
    __tmux_wait_prompt_start() {
        local status=$?
        if [[ $__tmux_wait_ran == 1 ]]; then
            __tmux_wait_ran=0
            builtin printf '\e]133;D;%s\a' "$status"
        fi
        builtin printf '\e]133;A\a'
        return "$status"
    }

    # Last in PROMPT_COMMAND, so a prompt set by an earlier part keeps them:
    # B at the end of PS1, C (and the flag) in PS0.
    __tmux_wait_prompt_end() {
        local status=$?
        [[ $PS1 == *'\e]133;B\a'* ]] || PS1+='\[\e]133;B\a\]'
        # shellcheck disable=SC2016 # expanded by bash each time it shows PS0
        [[ ${PS0-} == *'\e]133;C\a'* ]] ||
            PS0+='\e]133;C\a${__tmux_wait_ran:0:$((__tmux_wait_ran = 1, 0))}'
        return "$status"
    }

    if [[ ${PROMPT_COMMAND[*]-} != *__tmux_wait_prompt_start* ]]; then
        if [[ $(builtin declare -p PROMPT_COMMAND 2>/dev/null) == 'declare -a'* ]]; then
            PROMPT_COMMAND=(__tmux_wait_prompt_start "${PROMPT_COMMAND[@]}" __tmux_wait_prompt_end)
        else
            # shellcheck disable=SC2178 # a string PROMPT_COMMAND stays one
            PROMPT_COMMAND="__tmux_wait_prompt_start"$'\n'"${PROMPT_COMMAND-}"$'\n'"__tmux_wait_prompt_end"
        fi
    fi
fi
