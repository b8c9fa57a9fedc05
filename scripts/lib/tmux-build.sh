# shellcheck shell=bash
# Build tmux from source into a prefix, for testing tmux-wait against other
# tmux versions (scripts/test-matrix). Sourced; needs scripts/lib/deps.sh.
#
# A build runs `sh autogen.sh && ./configure --prefix=DIR && make && make
# install` in a temporary directory that is removed afterwards, logs to a
# file, and records where the sources came from in DIR/.source, so a cached
# build is reused only for the same sources.

# The name a tmux source goes by: tmux-3.2a.tar.gz -> 3.2a,
# tmux-master-c1f947a.tar.gz -> master (a trailing commit id is dropped),
# /some/dir/tmux-3.4 -> 3.4.
tw_tmux_source_name() {
    local base
    base=$(basename -- "$1")
    base=${base%.tar.gz}
    base=${base%.tgz}
    base=${base%.tar.xz}
    base=${base%.tar.bz2}
    base=${base#tmux-}
    if [[ $base =~ ^(.+)-[0-9a-f]{7,40}$ ]]; then
        base=${BASH_REMATCH[1]}
    fi
    printf '%s\n' "$base"
}

# What identifies a source, written to DIR/.source after a good build.
tw_tmux_source_id() {
    if [ -d "$1" ]; then
        printf 'dir %s\n' "$(cd "$1" && pwd)"
    else
        printf 'tarball %s %s\n' "$(basename -- "$1")" "$(sha256sum <"$1" | cut -d' ' -f1)"
    fi
}

# The Debian packages missing for a tmux build, one line, empty if none.
# Probes for the tools and headers themselves, so other systems with them
# installed some other way pass too.
tw_tmux_missing_build_deps() {
    local missing=()
    command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || missing+=(gcc)
    command -v make >/dev/null 2>&1 || missing+=(make)
    command -v autoconf >/dev/null 2>&1 || missing+=(autoconf)
    if ! command -v automake >/dev/null 2>&1 || ! command -v aclocal >/dev/null 2>&1; then
        missing+=(automake)
    fi
    command -v bison >/dev/null 2>&1 || command -v byacc >/dev/null 2>&1 ||
        command -v yacc >/dev/null 2>&1 || missing+=(bison)
    command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
    if ! tw_pkg_or_header "libevent_core libevent" event2/event.h; then
        missing+=(libevent-dev)
    fi
    if ! tw_pkg_or_header "tinfo ncursesw ncurses" ncurses.h curses.h; then
        missing+=(libncurses-dev)
    fi
    printf '%s\n' "${missing[*]}"
}

# True if pkg-config knows one of the modules (first argument, space
# separated) or one of the headers is in /usr/include or /usr/local/include.
tw_pkg_or_header() {
    local modules=$1 m h d
    shift
    if command -v pkg-config >/dev/null 2>&1; then
        for m in $modules; do
            pkg-config --exists "$m" 2>/dev/null && return 0
        done
    fi
    for h in "$@"; do
        for d in /usr/include /usr/local/include; do
            [ -e "$d/$h" ] && return 0
        done
    done
    return 1
}

# Install what a tmux build needs (as root with apt-get), or say in one line
# what is missing.
tw_tmux_ensure_build_deps() {
    local missing
    missing=$(tw_tmux_missing_build_deps)
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        # shellcheck disable=SC2086 # one package name per word
        printf 'tmux-wait: building tmux needs these packages: %s (e.g. sudo apt-get install %s)\n' \
            "$missing" "$missing" >&2
        return 1
    fi
    # shellcheck disable=SC2086 # one package name per word
    tw_apt_install $missing
    missing=$(tw_tmux_missing_build_deps)
    if [ -n "$missing" ]; then
        echo "tmux-wait: still missing after apt-get install: $missing" >&2
        return 1
    fi
}

# tw_tmux_build SOURCE PREFIX LOG: build the tarball or source directory
# SOURCE and install it into PREFIX (emptied first), logging to LOG. On
# failure prints the log's tail and returns 1; PREFIX is then left without
# a .source file, so it is never taken for a good build.
tw_tmux_build() {
    local src=$1 prefix=$2 log=$3 build id rc=0
    id=$(tw_tmux_source_id "$src")
    mkdir -p "$(dirname -- "$prefix")" "$(dirname -- "$log")"
    build=$(mktemp -d "$(dirname -- "$prefix")/.build.XXXXXX")
    TW_TMUX_BUILD_DIRS+=("$build")
    rm -rf -- "$prefix"
    : >"$log"
    if [ -d "$src" ]; then
        cp -R -- "$src/." "$build/"
    else
        tar -xzf "$src" -C "$build" --strip-components=1
    fi
    (
        cd "$build"
        set -x
        sh autogen.sh
        ./configure --prefix="$prefix"
        make -j"$(tw_build_jobs)"
        make install
    ) >>"$log" 2>&1 || rc=$?
    rm -rf -- "$build"
    if [ "$rc" = 0 ] && ! "$prefix/bin/tmux" -V >>"$log" 2>&1; then
        rc=1
    fi
    if [ "$rc" != 0 ]; then
        echo "tmux-wait: building tmux from $src failed; the end of $log:" >&2
        tail -n 25 "$log" | sed 's/^/    /' >&2
        return 1
    fi
    printf '%s\n' "$id" >"$prefix/.source"
}

# True if PREFIX holds a working tmux built from SOURCE (or, with no SOURCE,
# from anything).
tw_tmux_cached() {
    local prefix=$1 src=${2:-}
    "$prefix/bin/tmux" -V >/dev/null 2>&1 || return 1
    [ -f "$prefix/.source" ] || return 1
    [ -z "$src" ] && return 0
    [ "$(cat "$prefix/.source")" = "$(tw_tmux_source_id "$src")" ]
}

tw_build_jobs() {
    local n
    n=$(nproc 2>/dev/null || echo 2)
    printf '%s\n' "${TW_BUILD_JOBS:-$n}"
}

# Temporary build directories to remove if the script is interrupted.
TW_TMUX_BUILD_DIRS=()
tw_tmux_build_cleanup() {
    local d
    for d in "${TW_TMUX_BUILD_DIRS[@]}"; do
        rm -rf -- "$d"
    done
}
