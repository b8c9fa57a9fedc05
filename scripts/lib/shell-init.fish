# tmux-wait shell integration for fish 3, printed by
# `tmux-wait shell-init fish`; load it with this line at the end of
# ~/.config/fish/config.fish:
#   tmux-wait shell-init fish | source
# The shell then marks, with escape sequences that draw nothing (OSC 133),
# where its prompt starts (A), where the typed command line starts (B), where
# a command's output starts (C) and where the command ended, with its exit
# status (D;STATUS), as terminals' shell integrations do. tmux-wait output,
# watch --done and the plugin's F key read the status from there.
# fish 4 and newer mark these itself: then this does nothing.
if status is-interactive; and test (string split -f1 . -- $version) -lt 4
    function __tmux_wait_prompt_start --on-event fish_prompt
        printf '\e]133;A\a'
    end

    function __tmux_wait_preexec --on-event fish_preexec
        printf '\e]133;C\a'
    end

    function __tmux_wait_postexec --on-event fish_postexec
        set -l s $status
        printf '\e]133;D;%s\a' $s
    end

    # B right after the prompt: wrap fish_prompt once.
    if not functions -q __tmux_wait_fish_prompt
        functions --copy fish_prompt __tmux_wait_fish_prompt
        function fish_prompt
            __tmux_wait_fish_prompt
            printf '\e]133;B\a'
        end
    end
end
