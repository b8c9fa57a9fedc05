#!/usr/bin/env bash
# Get the tmux-wait helper when the plugin finds none of its version (see
# tw_helper in helpers.sh): download the release binary of exactly the
# plugin's version, verified, into the plugin's bin/; failing that, build
# it with cargo; failing that, say in one message how to install it by
# hand. The plugin's load runs this in the background (run-shell -b), and
# a key pressed meanwhile runs it again, which then waits for the first.
# One install at a time; exits 0 when the helper is there.
#
# A download:
#   1. fetches SHA256SUMS and SHA256SUMS.sig from @tmux-wait-release-url
#      (by default the releases of the repository the plugin was cloned
#      from), under vVERSION/, with curl or wget, each in bounded time;
#   2. checks the signature with ssh-keygen against the plugin's
#      allowed_signers (or @tmux-wait-release-signers);
#   3. fetches tmux-wait-VERSION-TARGET.tar.gz and checks its SHA-256;
#   4. unpacks it, checks that the binary says it is VERSION, and renames it
#      to bin/tmux-wait.
# Everything happens in a temporary directory inside bin/ (so the last step
# is one rename); any failure removes it and leaves bin/ as it was.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/variables.sh
. "$here/variables.sh"
# shellcheck source=scripts/helpers.sh
. "$here/helpers.sh"

# Where the repository's README tells how to install by hand.
readme_url=https://github.com/tmux-wait/tmux-wait#install

# The release target of this machine, as scripts/release names them.
release_target() {
    case "$(uname -s 2>/dev/null)-$(uname -m 2>/dev/null)" in
        Linux-x86_64 | Linux-amd64) REPLY=x86_64-unknown-linux-musl ;;
        Linux-aarch64 | Linux-arm64) REPLY=aarch64-unknown-linux-musl ;;
        Darwin-x86_64) REPLY=x86_64-apple-darwin ;;
        Darwin-arm64 | Darwin-aarch64) REPLY=aarch64-apple-darwin ;;
        *) return 1 ;;
    esac
}

# The web address of a git remote (https), or nothing for a local one:
# git@host:o/n.git, ssh://git@host:22/o/n, git://host/o/n and
# https://user@host/o/n.git all give https://host/o/n.
web_url_of() {
    local u=${1%/} rest host
    u=${u%.git}
    case $u in
        https://* | http://*)
            rest=${u#*://}
            REPLY=${u%%://*}://${rest#*@}
            ;;
        ssh://* | git://* | git+ssh://* | ssh+git://*)
            rest=${u#*://}
            rest=${rest#*@}
            host=${rest%%/*}
            REPLY=https://${host%%:*}/${rest#*/}
            ;;
        *://*) return 1 ;;
        *)
            # scp-like: [user@]host:path, with no slash before the colon.
            [[ "$u" =~ ^([^/@]+@)?([^/:]+):(.+)$ ]] || return 1
            REPLY=https://${BASH_REMATCH[2]}/${BASH_REMATCH[3]#/}
            ;;
    esac
}

# Where vVERSION/ARCHIVE lives: @tmux-wait-release-url, or the releases of
# the plugin's git origin.
release_base() {
    local base origin
    base=$(get_tmux_option "$release_url_option" "$release_url_default")
    if [ -n "$base" ]; then
        REPLY=${base%/}
        return 0
    fi
    origin=$(git -C "$tw_root" remote get-url origin 2>/dev/null) || return 1
    web_url_of "$origin" || return 1
    REPLY=$REPLY/releases/download
}

# The SHA-256 of a file, with whichever tool this system has.
sha256_of() {
    local out
    if command -v sha256sum >/dev/null 2>&1; then
        out=$(sha256sum "$1")
    elif command -v shasum >/dev/null 2>&1; then
        out=$(shasum -a 256 "$1")
    elif command -v openssl >/dev/null 2>&1; then
        out=$(openssl dgst -sha256 -r "$1")
    else
        return 1
    fi
    REPLY=${out%% *}
}

# Fetch URL into FILE within the timeout, in the background so that a TERM
# (the server going away) ends it at once. On failure, why says why.
fetch() {
    local url=$1 file=$2 err="$tmp/fetch.err" rc=0 line
    : >"$err"
    if [ -n "$curl" ]; then
        "$curl" -fsS -L --proto '=http,https' --proto-redir '=http,https' \
            --connect-timeout 10 --max-time "$timeout" -o "$file" "$url" 2>"$err" &
        child=$!
        wait "$child" || rc=$?
        child=""
        [ "$rc" != 0 ] || return 0
        line=$(grep -m 1 . "$err" || true)
        line=${line#curl: }
        case $rc in
            22)
                if [[ "$line" =~ error:\ ([0-9]+) ]]; then
                    why="$url answered HTTP ${BASH_REMATCH[1]}"
                    [ "${BASH_REMATCH[1]}" != 404 ] || why="$why (no such file: is there a release v$want?)"
                else
                    why="$url: ${line#(22) }"
                fi
                ;;
            28) why="$url: no answer within ${timeout} s (@tmux-wait-download-timeout)" ;;
            18 | 56) why="$url: the connection was cut before the end" ;;
            23) why="cannot write $file (is the disk full?)" ;;
            6 | 7) why="$url: ${line#(?) }" ;;
            *) why="$url: ${line:-curl failed (exit $rc)}" ;;
        esac
    else
        # wget has no limit on a whole transfer: a watchdog ends it.
        wget -q --tries=1 --connect-timeout=10 --read-timeout="$((timeout + 10))" \
            -O "$file" "$url" 2>"$err" &
        child=$!
        local transfer=$child
        (
            trap 'kill "$nap" 2>/dev/null; exit 0' TERM
            sleep "$timeout" &
            nap=$!
            wait "$nap" && kill "$transfer" 2>/dev/null
        ) >/dev/null 2>&1 &
        watchdog=$!
        wait "$child" || rc=$?
        child=""
        kill "$watchdog" 2>/dev/null || true
        wait "$watchdog" 2>/dev/null || true
        watchdog=""
        [ "$rc" != 0 ] || return 0
        case $rc in
            8) why="$url: the server answered with an error (not found?)" ;;
            143 | 137) why="$url: not done within ${timeout} s (@tmux-wait-download-timeout)" ;;
            3) why="cannot write $file (is the disk full?)" ;;
            4) why="$url: the connection failed or was cut before the end" ;;
            *) why="$url: wget failed (exit $rc)" ;;
        esac
    fi
    return 1
}

# Download, verify and put in place the release binary. Returns 0 when
# bin/tmux-wait is the plugin's version, 2 when downloads are off, 1 when
# none could be made (why says why).
download() {
    local mode base target name asset signers bin_dir made_bin=""
    want=$(tw_expected_version)
    mode=$(get_tmux_option "$download_option" "$download_default")
    case $mode in
        on | yes | true | 1) ;;
        off | no | false | 0)
            why="downloads are off (@tmux-wait-download)"
            return 2
            ;;
        *)
            why="@tmux-wait-download is '$mode', not on or off"
            return 1
            ;;
    esac
    if ! release_target; then
        why="no release binary is made for $(uname -s 2>/dev/null) $(uname -m 2>/dev/null)"
        return 1
    fi
    target=$REPLY
    if ! release_base; then
        why="the plugin's git origin is no web address, so there is nowhere to download from (set @tmux-wait-release-url)"
        return 1
    fi
    base=$REPLY
    timeout=$(get_tmux_option "$download_timeout_option" "$download_timeout_default")
    if ! [[ "$timeout" =~ ^[1-9][0-9]*$ ]]; then
        why="@tmux-wait-download-timeout is '$timeout', not a number of seconds"
        return 1
    fi
    curl=$(command -v curl 2>/dev/null || true)
    if [ -z "$curl" ] && ! command -v wget >/dev/null 2>&1; then
        why="neither curl nor wget is installed"
        return 1
    fi
    if ! command -v ssh-keygen >/dev/null 2>&1; then
        why="ssh-keygen (OpenSSH 8.1 or newer) is needed to verify a download, and is not installed"
        return 1
    fi
    signers=$(get_tmux_option "$release_signers_option" "$release_signers_default")
    signers=${signers/#\~\//$HOME/}
    [ -n "$signers" ] || signers="$tw_root/allowed_signers"
    if [ ! -r "$signers" ]; then
        why="cannot read the release signers' file $signers (@tmux-wait-release-signers)"
        return 1
    fi
    name="tmux-wait-$want-$target"
    asset="$name.tar.gz"
    base="$base/v$want"

    tw_install_phase "$tw_downloading_status" "$tw_downloading_note"
    bin_dir="$tw_root/bin"
    if [ ! -d "$bin_dir" ]; then
        mkdir "$bin_dir" 2>/dev/null || {
            why="cannot create $bin_dir"
            return 1
        }
        made_bin=1
    fi
    if ! tmp=$(mktemp -d "$bin_dir/.download.XXXXXX" 2>/dev/null); then
        [ -z "$made_bin" ] || rmdir "$bin_dir" 2>/dev/null || true
        why="cannot write in $bin_dir (is the disk full?)"
        return 1
    fi
    # From here on the temporary directory (and bin/, if it was made here)
    # goes on every path, including a TERM (see the traps in main).
    tmp_made_bin=$made_bin
    if fetch "$base/SHA256SUMS.sig" "$tmp/SHA256SUMS.sig" &&
        fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" &&
        verify_signature "$signers" &&
        fetch "$base/$asset" "$tmp/$asset" &&
        verify_checksum "$asset" &&
        unpack_and_check "$name" "$want"; then
        # One rename, in bin/ itself: the old helper stays until this.
        if mv -f "$tmp/x/$name/tmux-wait" "$bin_dir/tmux-wait"; then
            why="$want for $target, from $base"
            cleanup_tmp keep-bin
            return 0
        fi
        why="cannot put the helper in $bin_dir/tmux-wait"
    fi
    cleanup_tmp
    return 1
}

verify_signature() {
    local err
    if ! err=$(ssh-keygen -Y verify -f "$1" -I tmux-wait-release -n tmux-wait-release \
        -s "$tmp/SHA256SUMS.sig" <"$tmp/SHA256SUMS" 2>&1); then
        err=${err//$'\r'/}
        why="the signature of SHA256SUMS does not verify against $1 ($(grep -m 1 . <<<"$err" || echo "ssh-keygen failed")): refused"
        return 1
    fi
}

verify_checksum() {
    local asset=$1 want_sum
    want_sum=$(awk -v a="$asset" '$2 == a || $2 == "*" a { print $1; exit }' "$tmp/SHA256SUMS")
    if [ -z "$want_sum" ]; then
        why="SHA256SUMS lists no $asset"
        return 1
    fi
    if ! sha256_of "$tmp/$asset"; then
        why="no sha256sum, shasum or openssl to check the download with"
        return 1
    fi
    if [ "$REPLY" != "$want_sum" ]; then
        why="$asset does not match its checksum in SHA256SUMS: refused"
        return 1
    fi
}

unpack_and_check() {
    local name=$1 want=$2 got
    mkdir "$tmp/x"
    if ! tar -xzf "$tmp/$name.tar.gz" -C "$tmp/x" 2>/dev/null; then
        why="cannot unpack $name.tar.gz (is the disk full?)"
        return 1
    fi
    if [ ! -f "$tmp/x/$name/tmux-wait" ] || [ -L "$tmp/x/$name/tmux-wait" ]; then
        why="$name.tar.gz holds no $name/tmux-wait"
        return 1
    fi
    chmod 0755 "$tmp/x/$name/tmux-wait"
    got=$(tw_version_of "$tmp/x/$name/tmux-wait")
    if [ "$got" != "$want" ]; then
        why="the downloaded helper says it is version '${got:-?}', not $want: refused"
        return 1
    fi
}

# Remove the download's temporary directory, and bin/ if the download made
# it and it is empty (unless told to keep it).
cleanup_tmp() {
    if [ -n "${tmp:-}" ]; then
        rm -rf "$tmp"
        tmp=""
        if [ -n "${tmp_made_bin:-}" ] && [ "${1:-}" != keep-bin ]; then
            rmdir "$tw_root/bin" 2>/dev/null || true
        fi
        tmp_made_bin=""
    fi
}

# What the status segment and the W prompt say now.
tw_install_phase() {
    tmux set-option -gq "$status_option" "$1" \; \
        set-option -gq "$prompt_note_option" "$2" 2>/dev/null || true
}

# The status and the prompt's note back to normal, and the status
# segment drawn again by the helper.
ready() {
    tmux set-option -gqu "$prompt_note_option" \; \
        set-option -gq "$status_option" "" 2>/dev/null || true
    "$1" status >/dev/null 2>&1 || true
}

# Build the helper (cargo build --release --locked). Returns 0 when it is
# there.
build() {
    local log helper
    log="$lock_dir/build.log"
    tw_install_phase "$tw_building_status" "$tw_building_note"
    tw_message "building the helper (cargo build --release; a few minutes the first time)"
    (cd "$tw_root" && "$cargo" build --release --locked --target-dir "$tw_root/target") >"$log" 2>&1 &
    child=$!
    if wait "$child" && helper=$(tw_helper); then
        child=""
        ready "$helper"
        tw_message "helper built; ready"
        "$helper" hooks sync >/dev/null 2>&1 || true
        return 0
    fi
    child=""
    tmux set-option -gqu "$prompt_note_option" \; \
        set-option -gq "$status_option" "✗ tmux-wait: the helper did not build" 2>/dev/null || true
    tw_message "build failed: $(grep -m 1 -E '^error' "$log" || tail -n 1 "$log") (log: $log)"
    return 1
}

# Wait for the install another process runs (at most 30 minutes); returns
# 0 when the helper is then there.
wait_for_other() {
    local _
    for _ in $(seq 1 3600); do
        tw_installing || break
        sleep 0.5
    done
    tw_helper >/dev/null
}

# A tmux-wait of another version on PATH (a package manager's) is left
# alone: said once, when the plugin gets its own. So is an @tmux-wait-bin
# that names no program.
note_other_on_path() {
    local on_path version want bin
    bin=$(get_tmux_option "$bin_option" "$bin_default")
    if [ -n "$bin" ]; then
        tw_message "@tmux-wait-bin is '$bin', which is no executable file: the plugin gets its own helper"
    fi
    on_path=$(command -v tmux-wait 2>/dev/null || true)
    [ -n "$on_path" ] || return 0
    version=$(tw_version_of "$on_path")
    want=$(tw_expected_version)
    [ "$version" != "$want" ] || return 0
    tw_message "$on_path is version ${version:-unknown}, not the plugin's $want: left alone; the plugin gets its own"
}

# Ends whatever runs on a TERM, HUP or INT (the server going away): the
# transfer or the build, the temporary directory, the lock.
on_exit() {
    [ -z "${child:-}" ] || kill "$child" 2>/dev/null || true
    [ -z "${watchdog:-}" ] || kill "$watchdog" 2>/dev/null || true
    cleanup_tmp
    [ -z "${lock_dir:-}" ] || rm -rf "$lock_dir/lock"
}

main() {
    local helper rc home
    # Nothing to show: run-shell -b would put any output in a pane. What
    # went wrong is said in the messages and the status segment.
    exec >/dev/null 2>&1
    child="" watchdog="" tmp="" tmp_made_bin="" lock_dir="" curl="" timeout="" why="" want=""
    if helper=$(tw_helper); then
        return 0
    fi
    if ! lock_dir=$(tw_install_dir); then
        lock_dir=""
        tw_message "cannot get the helper: cannot write $tw_root/target"
        return 1
    fi
    tw_installing >/dev/null || true # removes a stale lock
    if ! mkdir "$lock_dir/lock" 2>/dev/null; then
        local other=$lock_dir
        lock_dir=""
        [ -d "$other/lock" ] || return 1
        wait_for_other
        return
    fi
    trap on_exit EXIT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    trap 'exit 130' INT
    echo "${BASHPID:-$$}" >"$lock_dir/lock/pid"
    note_other_on_path
    rc=0
    download || rc=$?
    if [ "$rc" = 0 ] && helper=$(tw_helper); then
        ready "$helper"
        tw_message "helper downloaded ($why); ready"
        "$helper" hooks sync >/dev/null 2>&1 || true
        return 0
    fi
    if cargo=$(tw_find_cargo); then
        [ "$rc" = 2 ] || tw_message "cannot download the helper: $why; building it with cargo instead"
        build
        return
    fi
    home=$readme_url
    if release_base_web; then home=$REPLY; fi
    tmux set-option -gqu "$prompt_note_option" \; \
        set-option -gq "$status_option" "✗ tmux-wait: no helper (see show-messages)" 2>/dev/null || true
    tw_message "no helper: $why, and cargo was not found. Install it by hand ($home) or with cargo install --locked tmux-wait, then load the plugin again"
    return 1
}

# The web page of the plugin's repository (its README's install section).
release_base_web() {
    local origin
    origin=$(git -C "$tw_root" remote get-url origin 2>/dev/null) || return 1
    web_url_of "$origin" || return 1
    [[ "$REPLY" == https://github.com/* ]] || return 1
    REPLY="$REPLY#install"
}

main "$@"
