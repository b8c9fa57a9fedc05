# shellcheck shell=bash
# Helpers shared by the plugin's scripts: options, finding (or building) the
# tmux-wait helper, messages.

tw_plugin_dir() {
    cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd
}

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

# A message on the clients; every # doubled so no text is read as a format.
tw_message() {
    local text=$1
    tmux display-message "tmux-wait: ${text//#/##}"
}

# The version the plugin's Cargo.toml declares.
tw_expected_version() {
    sed -n 's/^version = "\(.*\)"$/\1/p' "$(tw_plugin_dir)/Cargo.toml" | head -n 1
}

tw_version_of() {
    "$1" --version 2>/dev/null | sed -n 's/^tmux-wait //p'
}

# Print the helper to use: on PATH, else the plugin's own build, if its
# version matches Cargo.toml. Fails when there is none.
tw_helper() {
    local want candidate
    want=$(tw_expected_version)
    for candidate in "$(command -v tmux-wait 2>/dev/null || true)" \
        "$(tw_plugin_dir)/target/release/tmux-wait"; do
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
    dir="$(tw_plugin_dir)/target/tmux-wait-build"
    mkdir -p "$dir" 2>/dev/null || return 1
    if [ -L "$dir" ] || [ ! -O "$dir" ]; then
        return 1
    fi
    printf '%s\n' "$dir"
}

tw_building() {
    local dir
    dir=$(tw_build_dir) || return 1
    [ -d "$dir/lock" ]
}

# Build the helper (cargo build --release --locked) and tell the clients
# how it went. Runs in the background; only one build at a time.
tw_build() {
    local cargo dir log
    if ! cargo=$(tw_find_cargo); then
        tw_message "cannot build the helper: cargo not found (install Rust, or put tmux-wait on PATH)"
        return 1
    fi
    dir=$(tw_build_dir) || {
        tw_message "cannot build: cannot write $(tw_plugin_dir)/target"
        return 1
    }
    if ! mkdir "$dir/lock" 2>/dev/null; then
        return 0
    fi
    log="$dir/build.log"
    tw_message "building the helper (cargo build --release)..."
    if (cd "$(tw_plugin_dir)" && "$cargo" build --release --locked) >"$log" 2>&1; then
        tw_message "helper built; ready"
        "$(tw_plugin_dir)/target/release/tmux-wait" hooks sync >/dev/null 2>&1 || true
    else
        tw_message "build failed: $(grep -m 1 -E '^error' "$log" || tail -n 1 "$log")"
    fi
    rmdir "$dir/lock"
}
