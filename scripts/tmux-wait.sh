#!/usr/bin/env bash
# What the plugin's key bindings and command aliases run (in the background,
# through run-shell -b): start a watch, show the menu, or build the helper.
# Usage: tmux-wait.sh text|done|quiet PANE_ID
#        tmux-wait.sh menu CLIENT_NAME
#        tmux-wait.sh sync    (one listener per @tmux-wait-hook-NAME)
#        tmux-wait.sh build
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/variables.sh
. "$here/variables.sh"
# shellcheck source=scripts/helpers.sh
. "$here/helpers.sh"

# Run the helper; on failure show its one-line error on the clients.
run_helper() {
    local err
    if ! err=$("$helper" "$@" 2>&1 >/dev/null); then
        case "$err" in
            *"error: interrupted"*) ;;
            *) tw_message "${err#tmux-wait: error: }" ;;
        esac
    fi
}

main() {
    local action=${1:-} target=${2:-}
    if [ "$action" = build ]; then
        tw_build
        return 0
    fi
    if ! helper=$(tw_helper); then
        if [ "$action" = sync ]; then
            return 0 # the build syncs when it is done
        fi
        if tw_building; then
            tw_message "the helper is still building; try again in a moment"
        else
            tw_build &
        fi
        return 0
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
        sync)
            run_helper hooks sync
            ;;
        *)
            tw_message "unknown action '$action'"
            return 1
            ;;
    esac
}

main "$@"
