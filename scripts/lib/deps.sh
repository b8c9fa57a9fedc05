# shellcheck shell=bash
# Make sure what tmux-wait needs is installed: tmux and a Rust toolchain
# (and, for the tests, python3, which one test drives as a REPL, the
# shells zsh, dash and fish, and the programs the attention tests run).
# Sourced by scripts/demo and scripts/test. Installs tmux with apt-get when
# running as root on a Debian-like system; otherwise says what to install.

# shellcheck source=scripts/helpers.sh
. "${BASH_SOURCE[0]%/*}/../helpers.sh"

# cargo on PATH (helpers.sh finds it, as the plugin does), or a message.
tw_ensure_cargo() {
    local cargo
    if ! cargo=$(tw_find_cargo); then
        echo "tmux-wait: cargo not found; install a Rust toolchain (https://rustup.rs)" >&2
        return 1
    fi
    case ":$PATH:" in
        *":${cargo%/*}:"*) ;;
        *) PATH="${cargo%/*}:$PATH" && export PATH ;;
    esac
}

tw_apt_install() {
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "tmux-wait: please install: $*" >&2
        return 1
    fi
    echo "tmux-wait: installing $* with apt-get" >&2
    # The package lists are refreshed once per run, not once per package.
    if [ -z "${TW_APT_UPDATED:-}" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        TW_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

tw_ensure_deps() {
    tw_ensure_cargo
    if ! command -v tmux >/dev/null 2>&1; then
        tw_apt_install tmux
    fi
}

tw_ensure_test_deps() {
    tw_ensure_deps
    if ! command -v python3 >/dev/null 2>&1; then
        tw_apt_install python3
    fi
    # The install tests build the release archives (scripts/release),
    # whose allocator is C code compiled for musl.
    if ! command -v musl-gcc >/dev/null 2>&1; then
        tw_apt_install musl-tools ||
            echo "tmux-wait: no musl-gcc; the tests that build release archives will fail" >&2
    fi
    # The machine asleep while the wall clock moves (tests/it/lifecycle):
    # libfaketime in the server under test.
    if ! command -v faketime >/dev/null 2>&1; then
        tw_apt_install faketime ||
            echo "tmux-wait: no libfaketime; the test of a machine asleep will fail" >&2
    fi
    # The tests run each shell's own line editor (bash, zsh, fish) and the
    # kernel's echo (dash); a test whose shell is missing is skipped and
    # says so.
    local shells=() sh
    for sh in zsh dash fish; do
        command -v "$sh" >/dev/null 2>&1 || shells+=("$sh")
    done
    if [ "${#shells[@]}" -gt 0 ]; then
        tw_apt_install "${shells[@]}" ||
            echo "tmux-wait: the tests for ${shells[*]} will be skipped" >&2
    fi
    # The programs people run, as the attention tests run them (each test
    # whose program is missing is skipped and says so): password prompts
    # on /dev/tty (ssh-keygen, git, gpg, psql, sudo) and live displays.
    local programs=() p pkg
    for p in ssh-keygen:openssh-client git:git gpg:gnupg psql:postgresql-client         sudo:sudo top:procps watch:procps htop:htop less:less; do
        pkg=${p#*:}
        command -v "${p%%:*}" >/dev/null 2>&1 || [[ " ${programs[*]} " == *" $pkg "* ]] ||
            programs+=("$pkg")
    done
    if [ "${#programs[@]}" -gt 0 ]; then
        tw_apt_install "${programs[@]}" ||
            echo "tmux-wait: the tests for ${programs[*]} will be skipped" >&2
    fi
    # The remote tests start their own sshd on 127.0.0.1 (a test whose
    # sshd is missing is skipped and says so).
    if [ ! -x /usr/sbin/sshd ]; then
        tw_apt_install openssh-server ||
            echo "tmux-wait: the tests of other hosts (tests/it/remote.rs) will be skipped" >&2
    fi
}

# The integration tests that need the machine to themselves (they call
# `alone()` in tests/it/common): scripts/test and scripts/test-matrix run
# them in a pass of their own after the others, so that no test thread
# sits idle while the tests beside an `alone()` drain.
# shellcheck disable=SC2034 # used by the scripts that source this file
TW_ALONE_TESTS=(descriptors:: agents::)

# Whether the test arguments given name tests to run (a filter other than
# an option or an option's value): then the caller's selection is run as
# it is, in one pass.
tw_test_args_filter() {
    while [ "$#" -gt 0 ]; do
        case $1 in
            --skip | --logfile | --test-threads | --format | --color | -Z | --report-time | --shuffle-seed)
                shift 2 || return 1
                continue
                ;;
            -*) ;;
            *) return 0 ;;
        esac
        shift
    done
    return 1
}
