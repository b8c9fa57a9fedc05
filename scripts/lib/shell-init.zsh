# tmux-wait shell integration for zsh, printed by `tmux-wait shell-init zsh`;
# load it with this line at the end of ~/.zshrc:
#   eval "$(tmux-wait shell-init zsh)"
# The shell then marks, with escape sequences that draw nothing (OSC 133),
# where its prompt starts (A), where the typed command line starts (B), where
# a command's output starts (C) and where the command ended, with its exit
# status (D;STATUS), as terminals' shell integrations do. tmux-wait output,
# watch --done and the plugin's F key read the status from there.
# $? and existing precmd/preexec hooks and PS1 are kept.
if [[ -o interactive ]]; then
    # 1 from the moment a typed command line runs (preexec, which zsh does
    # not run for an empty line) to its end.
    typeset -gi __tmux_wait_ran=0

    # First of the precmd hooks: the end of the command (with its status,
    # which it hands on unchanged), then the start of the prompt.
    __tmux_wait_prompt_start() {
        local s=$?
        if (( __tmux_wait_ran )); then
            __tmux_wait_ran=0
            builtin printf '\e]133;D;%s\a' "$s"
        fi
        builtin printf '\e]133;A\a'
        return $s
    }

    # Last of the precmd hooks, so a prompt set by an earlier one keeps it:
    # B at the end of PS1.
    __tmux_wait_prompt_end() {
        local s=$?
        [[ $PS1 == *$'\e]133;B\a'* ]] || PS1+=$'%{\e]133;B\a%}'
        return $s
    }

    __tmux_wait_preexec() {
        __tmux_wait_ran=1
        builtin printf '\e]133;C\a'
    }

    autoload -Uz add-zsh-hook
    add-zsh-hook precmd __tmux_wait_prompt_end
    add-zsh-hook preexec __tmux_wait_preexec
    precmd_functions=(__tmux_wait_prompt_start ${precmd_functions:#__tmux_wait_prompt_start})
fi
