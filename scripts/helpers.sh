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
# a format, every % so none is read as a time conversion. Never fails (the server may be gone, no client attached).
# tmux 3.2's display-message takes no client (its -c wants no argument, and
# reads the client name as the message): there it goes to the client tmux
# picks, the one used last.
tw_message() {
    local out version client
    local text=${1//#/##}
    tw_targ "tmux-wait: ${text//%/%%}"
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

# Print the helper to use, the first of: @tmux-wait-bin (as it is); on
# PATH, the plugin's own bin/ (where a download goes) or target/release/
# (where a build goes), if its version is the one in Cargo.toml. Fails when
# there is none.
tw_helper() {
    local want candidate bin
    bin=$(get_tmux_option "$bin_option" "$bin_default" 2>/dev/null || true)
    bin=${bin/#\~\//$HOME/}
    if [ -n "$bin" ] && [ -f "$bin" ] && [ -x "$bin" ]; then
        printf '%s\n' "$bin"
        return 0
    fi
    want=$(tw_expected_version)
    for candidate in "$(command -v tmux-wait 2>/dev/null || true)" \
        "$tw_root/bin/tmux-wait" "$tw_root/target/release/tmux-wait"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] &&
            [ "$(tw_version_of "$candidate")" = "$want" ]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# Print the path of cargo: on PATH, in $CARGO_HOME/bin or ~/.cargo/bin
# (a login shell's PATH has them; tmux's often has not).
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

# The lock of an install (a download, then a build) and the build's log,
# inside the plugin's own target directory (a directory of the user's,
# never a shared /tmp name).
tw_install_dir() {
    local dir
    dir="$tw_root/target/tmux-wait-build"
    mkdir -p "$dir" 2>/dev/null || return 1
    if [ -L "$dir" ] || [ ! -O "$dir" ]; then
        return 1
    fi
    printf '%s\n' "$dir"
}

# An install runs: its lock exists and the process that holds it lives (a
# lock left by an install that was killed is removed).
tw_installing() {
    local dir pid
    dir=$(tw_install_dir) || return 1
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

# What the status segment and the W prompt say while the helper is
# downloaded or built.
tw_downloading_status="⏳ tmux-wait: downloading the helper…"
tw_downloading_note=" (the helper is still downloading: the watch starts once it is there)"
tw_building_status="⏳ tmux-wait: building the helper…"
tw_building_note=" (the helper is still building: the watch starts once it is built)"

# The status and the W prompt's note an install starts with, in REPLY and
# REPLY2: downloading, unless downloads are off.
# shellcheck disable=SC2034 # REPLY2 is read by the caller
tw_install_texts() {
    case $(get_tmux_option "$download_option" "$download_default" 2>/dev/null || true) in
        off | no | false | 0)
            REPLY=$tw_building_status REPLY2=$tw_building_note
            ;;
        *)
            REPLY=$tw_downloading_status REPLY2=$tw_downloading_note
            ;;
    esac
}
