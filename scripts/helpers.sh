# shellcheck shell=bash
# Helpers shared by the plugin's scripts: options, finding (or building) the
# tmux-wait helper, messages. Sourced after variables.sh.
# shellcheck disable=SC2154 # the *_option names come from variables.sh

# The plugin's directory (this file is in its scripts/), found once.
tw_root=${BASH_SOURCE[0]%/*}
[ "$tw_root" != "${BASH_SOURCE[0]}" ] || tw_root=.
tw_root=$(cd "$tw_root/.." && pwd)

# get_tmux_option NAME DEFAULT
get_tmux_option() {
    local value
    value=$(tmux show-option -gqv "$1")
    if [ -n "$value" ]; then
        printf '%s\n' "$value"
    else
        printf '%s\n' "$2"
    fi
}

# An argument for a tmux command given as a list of arguments, in REPLY:
# tmux takes one that ends in ";" for the end of the command, unless the
# ";" follows a backslash (which it then drops).
tw_targ() {
    if [[ "$1" == *";" ]]; then
        REPLY="${1%;}\\;"
    else
        REPLY=$1
    fi
}

# A message on each attached client; every # doubled so no text is read as
# a format. Never fails (the server may be gone, no client attached).
# tmux 3.2's display-message takes no client (its -c wants no argument, and
# reads the client name as the message): there it goes to the client tmux
# picks, the one used last.
tw_message() {
    local out version client
    tw_targ "tmux-wait: ${1//#/##}"
    out=$(tmux display-message -p '#{version}' \; \
        list-clients -F '#{?client_control_mode,,#{client_name}}' 2>/dev/null) || return 0
    version=${out%%$'\n'*}
    while IFS= read -r client; do
        [ -n "$client" ] || continue
        case $version in
            [0-2].* | 3.[0-2] | 3.[0-2][!0-9]*)
                tmux display-message "$REPLY" 2>/dev/null || true
                return 0
                ;;
        esac
        tmux display-message -c "$client" "$REPLY" 2>/dev/null || true
    done < <(tail -n +2 <<<"$out")
}

# The version the plugin's Cargo.toml declares.
tw_expected_version() {
    local line
    while IFS= read -r line; do
        if [[ "$line" =~ ^version\ =\ \"(.*)\"$ ]]; then
            printf '%s\n' "${BASH_REMATCH[1]}"
            return 0
        fi
    done <"$tw_root/Cargo.toml"
}

tw_version_of() {
    local out
    out=$("$1" --version 2>/dev/null) || return 0
    out=${out%%$'\n'*}
    if [[ "$out" == "tmux-wait "* ]]; then
        printf '%s\n' "${out#tmux-wait }"
    fi
}

# Print the helper to use: on PATH, else the plugin's own build, if its
# version matches Cargo.toml. Fails when there is none.
tw_helper() {
    local want candidate
    want=$(tw_expected_version)
    for candidate in "$(command -v tmux-wait 2>/dev/null || true)" \
        "$tw_root/target/release/tmux-wait"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] &&
            [ "$(tw_version_of "$candidate")" = "$want" ]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

tw_find_cargo() {
    local dir
    if command -v cargo >/dev/null 2>&1; then
        command -v cargo
        return 0
    fi
    for dir in "${CARGO_HOME:-$HOME/.cargo}/bin" "$HOME/.cargo/bin"; do
        if [ -x "$dir/cargo" ]; then
            printf '%s\n' "$dir/cargo"
            return 0
        fi
    done
    return 1
}

# The lock and log of a build, inside the plugin's own target directory
# (a directory of the user's, never a shared /tmp name).
tw_build_dir() {
    local dir
    dir="$tw_root/target/tmux-wait-build"
    mkdir -p "$dir" 2>/dev/null || return 1
    if [ -L "$dir" ] || [ ! -O "$dir" ]; then
        return 1
    fi
    printf '%s\n' "$dir"
}

# A build runs: its lock exists and the process that holds it lives (a
# lock left by a build that was killed is removed).
tw_building() {
    local dir pid
    dir=$(tw_build_dir) || return 1
    [ -d "$dir/lock" ] || return 1
    pid=$(cat "$dir/lock/pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        return 0
    fi
    if [ -z "$pid" ] && [ -z "$(find "$dir/lock" -maxdepth 0 -mmin +10 2>/dev/null)" ]; then
        return 0 # just taken: the pid follows
    fi
    rm -rf "$dir/lock"
    return 1
}

# What the status segment and the W prompt say while the helper builds.
tw_building_status="⏳ tmux-wait: building the helper…"
tw_building_note=" (the helper is still building: the watch starts once it is built)"

# Show the build in the status segment and the W prompt, in one tmux
# command with the tmux command given, if any (the plugin's load starts the
# build with it, so a key pressed at once sees it).
# shellcheck disable=SC2120 # the arguments are optional
tw_show_building() {
    tmux set-option -gq "$status_option" "$tw_building_status" \; \
        set-option -gq "$prompt_note_option" "$tw_building_note" "$@" 2>/dev/null || true
}

# Build the helper (cargo build --release --locked) and tell the clients
# how it went: in the status segment while it runs, then as a message.
# Only one build at a time; returns 0 when the helper is there.
tw_build() {
    local cargo dir log helper
    if ! cargo=$(tw_find_cargo); then
        tw_message "cannot build the helper: cargo not found (install Rust, or put tmux-wait on PATH)"
        return 1
    fi
    dir=$(tw_build_dir) || {
        tw_message "cannot build: cannot write $tw_root/target"
        return 1
    }
    tw_building >/dev/null || true # removes a stale lock
    if ! mkdir "$dir/lock" 2>/dev/null; then
        tw_wait_for_build
        return
    fi
    # The lock goes with this process, however it ends.
    tw_lock="$dir/lock"
    trap 'rm -rf "$tw_lock"' EXIT
    echo "${BASHPID:-$$}" >"$dir/lock/pid"
    log="$dir/build.log"
    # shellcheck disable=SC2119 # no tmux command to add
    tw_show_building
    tw_message "building the helper (cargo build --release; about two minutes the first time)"
    if (cd "$tw_root" && "$cargo" build --release --locked) >"$log" 2>&1 &&
        helper=$(tw_helper); then
        tmux set-option -gqu "$prompt_note_option" \; \
            set-option -gq "$status_option" "" 2>/dev/null || true
        "$helper" status >/dev/null 2>&1 || true
        tw_message "helper built; ready"
        "$helper" hooks sync >/dev/null 2>&1 || true
    else
        tmux set-option -gqu "$prompt_note_option" \; \
            set-option -gq "$status_option" "✗ tmux-wait: the helper did not build" 2>/dev/null || true
        tw_message "build failed: $(grep -m 1 -E '^error' "$log" || tail -n 1 "$log") (log: $log)"
    fi
    rm -rf "$dir/lock"
    trap - EXIT
    [ -n "${helper:-}" ]
}

# Wait for a running build to end (at most 30 minutes); returns 0 when the
# helper is then there. Starts a build when none runs.
tw_wait_for_build() {
    local _
    if ! tw_building; then
        tw_build
        return
    fi
    for _ in $(seq 1 3600); do
        tw_building || break
        sleep 0.5
    done
    tw_helper >/dev/null
}
