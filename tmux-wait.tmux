#!/usr/bin/env bash
# tmux-wait plugin entry point, run by TPM on every config load: sets key
# bindings and command aliases (never replacing a binding the user has),
# puts the status segment in place of #{tmux_wait_status}, keeps one
# listener per declared channel hook, and builds the helper in the
# background if it is missing. Fast, silent, idempotent.
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/variables.sh
. "$dir/scripts/variables.sh"
# shellcheck source=scripts/helpers.sh
. "$dir/scripts/helpers.sh"

script="$dir/scripts/tmux-wait.sh"
# For tmux's parser: the script path in single quotes (a quote in it as '\'').
q_script="'${script//\'/\'\\\'\'}'"

# The commands, as tmux command strings. The typed pattern reaches the helper
# as the value of a pane option (%%% escapes it for tmux's parser); it never
# passes through a shell.
cmd_text="command-prompt -p 'wait for text#{$prompt_note_option}:' \"set-option -p $pattern_option \\\"%%%\\\" ; run-shell -b \\\"$q_script text '#{pane_id}'\\\"\""
cmd_done="run-shell -b \"$q_script done '#{pane_id}'\""
cmd_quiet="run-shell -b \"$q_script quiet '#{pane_id}'\""
cmd_list="run-shell -b \"$q_script menu '#{client_name}'\""

# The prefix table as tmux lists it, read once.
prefix_table=$(tmux list-keys -T prefix 2>/dev/null || true)

# The key field of list-keys lines (after "-T TABLE"), per line.
key_fields() {
    awk '{ for (i = 1; i < NF; i++) if ($i == "-T") { print $(i + 2); break } }'
}

# How list-keys names KEY (M-w, C-a, ...): bound in a table of our own
# that is removed at once. Asking list-keys about an unbound key instead
# would leave "unknown key" in the server's messages. Fails for a string
# that is no key.
key_name() {
    tmux bind-key -T tmux-wait-probe "$1" display-message \; \
        list-keys -T tmux-wait-probe \; unbind-key -a -T tmux-wait-probe 2>/dev/null |
        key_fields
}

# bind KEY-OPTION DEFAULT COMMAND: bind unless "none" or already bound by
# someone else (a binding of ours, from an earlier load, is replaced).
bind_unless_taken() {
    local key name existing
    key=$(get_tmux_option "$1" "$2")
    [ "$key" = none ] && return 0
    name=$(key_name "$key" || true)
    if [ -z "$name" ]; then
        tw_message "$1: '$key' is not a key tmux knows; nothing bound"
        return 0
    fi
    existing=$(awk -v k="$name" '{
        for (i = 1; i < NF; i++) if ($i == "-T") { if ($(i + 2) == k) print; break }
    }' <<<"$prefix_table")
    if [ -n "$existing" ] && [[ "$existing" != *tmux-wait.sh* ]]; then
        return 0
    fi
    tmux bind-key -T prefix "$key" "$3"
}

set_aliases() {
    local aliases name entry i
    aliases=$(tmux show-options -gv command-alias 2>/dev/null || true)
    for name in wait-text wait-done wait-quiet wait-list; do
        entry=""
        case $name in
            wait-text) entry="$name=$cmd_text" ;;
            wait-done) entry="$name=$cmd_done" ;;
            wait-quiet) entry="$name=$cmd_quiet" ;;
            wait-list) entry="$name=$cmd_list" ;;
        esac
        if ! grep -q "^$name=" <<<"$aliases"; then
            i=$(tmux show-options -g command-alias 2>/dev/null | wc -l)
            tmux set-option -g "command-alias[$((i + 100))]" "$entry"
        fi
    done
}

# Replace the placeholder in status-left/right with the pushed segment.
interpolate_status() {
    local opt value
    for opt in status-left status-right; do
        value=$(tmux show-option -gqv "$opt")
        if [[ "$value" == *"$status_placeholder"* ]]; then
            tmux set-option -gq "$opt" "${value//"$status_placeholder"/"$status_value"}"
        fi
    done
}

# tmux 3.0 brought what the plugin uses (display-menu, pane options,
# command-prompt's %%%); 3.3a is what it is tested on.
version_ok() {
    local v major minor
    v=$(tmux display-message -p '#{version}')
    v=${v#next-}
    major=${v%%.*}
    minor=${v#*.}
    minor=${minor%%[!0-9]*}
    [[ "$major" =~ ^[0-9]+$ ]] || return 0 # master and the like: newest
    [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "${minor:-0}" -ge 0 ]; }
}

main() {
    if ! version_ok; then
        tw_message "needs tmux 3.0 or newer (this is $(tmux display-message -p '#{version}'))"
        return 0
    fi
    bind_unless_taken "$key_text_option" "$key_text_default" "$cmd_text"
    bind_unless_taken "$key_done_option" "$key_done_default" "$cmd_done"
    bind_unless_taken "$key_quiet_option" "$key_quiet_default" "$cmd_quiet"
    bind_unless_taken "$key_list_option" "$key_list_default" "$cmd_list"
    set_aliases
    interpolate_status
    if tw_helper >/dev/null; then
        # One listener per @tmux-wait-hook-NAME, none for removed ones.
        tmux run-shell -b "$q_script sync"
    else
        # Build in the background; the status segment and the W prompt say
        # so from now on (one tmux command with the start of the build).
        tw_show_building \; run-shell -b "$q_script build"
    fi
}

main "$@"
