#!/usr/bin/env bash
# What the plugin's key bindings and command aliases run (in the background,
# through run-shell -b): start a watch or show the menu, once the helper is
# there (scripts/install-helper.sh gets it).
# Usage: tmux-wait.sh text|done|quiet PANE_ID
#        tmux-wait.sh menu CLIENT_NAME
#        tmux-wait.sh attention SESSION_ID CLIENT_NAME   (toggle)
#        tmux-wait.sh next CLIENT_NAME   (the next pane that needs you)
#        tmux-wait.sh sync    (one listener per @tmux-wait-hook-NAME; attention)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/variables.sh
. "$here/variables.sh"
# shellcheck source=scripts/helpers.sh
. "$here/helpers.sh"

# Run the helper; on failure show its one-line error on the clients (its
# other lines, such as a notice that a timeout was cut, are not errors).
run_helper() {
    local err line
    if ! err=$("$helper" "$@" 2>&1 >/dev/null); then
        line=$(grep -m 1 '^tmux-wait: error: ' <<<"$err" || tail -n 1 <<<"$err")
        case "$line" in
            *"error: interrupted"*) ;;
            *) tw_message "${line#tmux-wait: error: }" ;;
        esac
    fi
}

main() {
    local action=${1:-} target=${2:-}
    if ! helper=$(tw_helper); then
        case "$action" in
            sync)
                return 0 # the install syncs when it is done
                ;;
            text)
                # The typed text waits in the pane option: the watch for it
                # starts once the helper is there (the prompt said so). The
                # install is joined, or started (a key pressed at once after
                # the load can come before the load's install takes its lock).
                tw_message "the watch starts once the helper is there"
                if ! "$here/install-helper.sh" || ! helper=$(tw_helper); then
                    tmux set-option -pqu -t "$target" "$pattern_option" 2>/dev/null || true
                    return 0 # the install said why
                fi
                ;;
            *)
                tw_message "the helper is not there yet; press the key again once it is (the status line says when)"
                # (None under way: start one; the load's may not have taken
                # its lock yet, and is then joined.)
                tw_installing || "$here/install-helper.sh" || true
                return 0
                ;;
        esac
    fi
    local timeout
    timeout=$(get_tmux_option "$timeout_option" "$timeout_default")
    case "$action" in
        text)
            run_helper watch -t "$target" --pattern-option "$pattern_option" --timeout "$timeout"
            ;;
        done)
            run_helper watch -t "$target" --done --timeout "$timeout"
            ;;
        quiet)
            local quiet
            quiet=$(get_tmux_option "$quiet_option" "$quiet_default")
            run_helper watch -t "$target" --quiet "$quiet" --timeout "$timeout"
            ;;
        menu)
            run_helper menu -c "$target"
            ;;
        attention)
            run_helper attention toggle -t "$target" -c "${3:-}"
            ;;
        next)
            run_helper attention next -c "$target"
            ;;
        sync)
            # An install's notice from an earlier load (the helper is here
            # now).
            if [[ "$(get_tmux_option "$status_option" "")" == *"tmux-wait: "* ]]; then
                tmux set-option -gqu "$prompt_note_option" \; \
                    set-option -gq "$status_option" "" 2>/dev/null || true
                run_helper status
            fi
            run_helper hooks sync
            run_helper attention sync
            ;;
        *)
            tw_message "unknown action '$action'"
            return 1
            ;;
    esac
}

main "$@"
