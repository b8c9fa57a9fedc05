#!/usr/bin/env bash
# tmux-wait plugin entry point, run by TPM on every config load: sets key
# bindings and command aliases (never replacing a binding the user has),
# puts the status segments in place of #{tmux_wait_status} and
# #{tmux_wait_attention}, keeps one listener per declared channel hook and
# attention's watch as the options say, and gets the helper in the
# background if it is missing (scripts/install-helper.sh). Fast (four tmux
# commands), silent and idempotent, on tmux 3.2a and newer.
set -euo pipefail
dir=${BASH_SOURCE[0]%/*}
[ "$dir" != "${BASH_SOURCE[0]}" ] || dir=.
dir=$(cd "$dir" && pwd)
# shellcheck source=scripts/variables.sh
. "$dir/scripts/variables.sh"
# shellcheck source=scripts/helpers.sh
. "$dir/scripts/helpers.sh"

script="$dir/scripts/tmux-wait.sh"
# For tmux's parser: the script paths in single quotes (a quote in them as
# '\'').
q_script="'${script//\'/\'\\\'\'}'"
install="$dir/scripts/install-helper.sh"
q_install="'${install//\'/\'\\\'\'}'"

# The commands, as tmux command strings, and the command aliases
# (name=command). The typed pattern reaches the helper as the value of a
# pane option (%%% escapes it for tmux's parser); it never passes through a
# shell.
#
# tmux 3.3 and 3.3a fill the template twice, with the typed text as %1 and
# again as %2, the second pass over the first's result: a %% or %2 in the
# text was replaced by the text again (and a quote in it could end the
# string). There the text goes in as %2% alone, which the first pass leaves
# as it is, so the text is placed once.
make_commands() {
    local slot='%%%'
    case $1 in
        3.3 | 3.3[!0-9]*) slot='%2%' ;;
    esac
    cmd_text="command-prompt -p 'wait for text#{$prompt_note_option}:' \"set-option -p $pattern_option \\\"$slot\\\" ; run-shell -b \\\"$q_script text '#{pane_id}'\\\"\""
    cmd_done="run-shell -b \"$q_script done '#{pane_id}'\""
    cmd_quiet="run-shell -b \"$q_script quiet '#{pane_id}'\""
    cmd_list="run-shell -b \"$q_script menu '#{client_name}'\""
    cmd_attention="run-shell -b \"$q_script attention '#{session_id}' '#{client_name}'\""
    cmd_next="run-shell -b \"$q_script next '#{client_name}'\""
    key_commands=("$cmd_text" "$cmd_done" "$cmd_quiet" "$cmd_list" "$cmd_attention" "$cmd_next")
    aliases=("wait-text=$cmd_text" "wait-done=$cmd_done" "wait-quiet=$cmd_quiet" "wait-list=$cmd_list"
        "wait-attention=$cmd_attention" "wait-next=$cmd_next")
}

# The key bindings: option and default key (by index, as key_commands).
key_options=("$key_text_option" "$key_done_option" "$key_quiet_option" "$key_list_option"
    "$key_attention_option" "$key_next_option")
key_defaults=("$key_text_default" "$key_done_default" "$key_quiet_default" "$key_list_default"
    "$key_attention_default" "$key_next_default")
# What each key does, for the message when its default is taken.
key_notes=("wait for text" "watch for a command to finish" "watch for a pane to go quiet"
    "show the menu" "turn attention on or off" "go to the pane that needs you")

# What the load reads from the server (one tmux command, see read_state).
version="" keys=() existing_aliases="" status_left="" status_right="" said_taken=""

# Read the server's version, the key options, the command aliases,
# status-left and status-right, in one tmux command. Each value read with
# show-option sits between two marker lines, so its text is kept as is,
# over several lines if it has them.
read_state() {
    local -a cmd=(display-message -p "tmux-wait-version #{version}")
    local opt i out line section="" sl="" sr="" al=""
    for opt in "${key_options[@]}"; do
        cmd+=(\; display-message -p "tmux-wait-key #{$opt}")
    done
    cmd+=(\; display-message -p "tmux-wait-said #{$said_taken_option}")
    cmd+=(\; display-message -p "tmux-wait-section aliases" \; show-options -gv command-alias)
    for opt in status-left status-right; do
        cmd+=(\; display-message -p "tmux-wait-section $opt" \; show-option -gqv "$opt")
    done
    cmd+=(\; display-message -p "tmux-wait-section end")
    out=$(tmux "${cmd[@]}" 2>/dev/null) || return 1
    i=0
    while IFS= read -r line; do
        case $section in
            "")
                case $line in
                    "tmux-wait-version "*) version=${line#tmux-wait-version } ;;
                    "tmux-wait-key "*)
                        keys[i]=${line#tmux-wait-key }
                        i=$((i + 1))
                        ;;
                    "tmux-wait-said "*) said_taken=${line#tmux-wait-said } ;;
                    "tmux-wait-section "*) section=${line#tmux-wait-section } ;;
                esac
                ;;
            *)
                case $line in
                    "tmux-wait-section "*) section=${line#tmux-wait-section } ;;
                    *)
                        case $section in
                            aliases) al+="$line"$'\n' ;;
                            status-left) sl+="$line"$'\n' ;;
                            status-right) sr+="$line"$'\n' ;;
                        esac
                        ;;
                esac
                ;;
        esac
    done <<<"$out"
    [ "$section" = end ] || return 1
    existing_aliases=$al
    status_left=${sl%$'\n'}
    status_right=${sr%$'\n'}
    if [ "$version" = 3.4 ]; then
        for i in "${!keys[@]}"; do
            [[ "${keys[i]}" != *'\$'* ]] || keys[i]=$(unescape_dollar "${keys[i]}")
        done
        [[ "$status_left" != *'\$'* ]] || status_left=$(unescape_dollar "$status_left")
        [[ "$status_right" != *'\$'* ]] || status_right=$(unescape_dollar "$status_right")
    fi
}

# tmux 3.4 prints a $ followed by a letter, _ or { with a backslash before
# it (in display-message -p, show-options -v, ...; not in what it stores):
# read as printed, status-right '#(echo $USER)' would be set back as
# '#(echo \$USER)'. Other backslashes are printed as they are, so removing
# the one before each such $ gives the value back.
unescape_dollar() {
    local s=$1 out=""
    while [[ "$s" =~ ^(.*)\\\$([A-Za-z_{].*)$ ]]; do
        # (The last one first: the regex is greedy.)
        out="\$${BASH_REMATCH[2]}$out"
        s=${BASH_REMATCH[1]}
    done
    printf '%s' "$s$out"
}

# tmux 3.2a is the oldest the plugin supports (and is tested on): older
# ones lack what it relies on. A version that is no number (master,
# OpenBSD's) counts as new.
version_ok() {
    local v=${1#next-} major minor
    [[ "$v" =~ ^([0-9]+)\.([0-9]+) ]] || {
        [ -n "$v" ] && [[ "$v" != [0-9]* ]]
        return
    }
    major=${BASH_REMATCH[1]}
    minor=${BASH_REMATCH[2]}
    [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -ge 2 ]; }
}

# The tables the key probe uses, all removed again before it returns.
probe_table="tmux-wait-probe"

# The key probe: how tmux names each key to bind (M-w for m-w, C-a for ^a,
# M-C-y or C-M-y for c-m-y, by version) and whether the prefix table has
# it bound, by us or by someone else, in one tmux command.
#
# Each key is checked first with unbind-key -q in the probe table: for a
# string that is no key it fails without a message (and ends the command
# there), where bind-key and list-keys would leave "unknown key" in the
# server's messages. A valid key is then bound alone in a table of its own,
# and list-keys with no table lists every table: the prefix table and the
# probe tables, with each key named as tmux names it. (tmux 3.7 shows the
# listing as a message instead when it has one line; this one never has.)
# Its lines read "bind-key [-r] -T TABLE KEY COMMAND", the spaces between
# them differing from version to version.
#
# Sets states[i] to free, ours, taken or bad (no key), names[i] to the
# key's name; a key that is "none" is not probed.
names=() states=()
probe_keys() {
    local -a todo=() cmd cleanup left
    local i out _ state name found
    for i in "${!key_options[@]}"; do
        names[i]="" states[i]=""
        [[ "${keys[i],,}" == none ]] || todo+=("$i")
    done
    for _ in 1 2 3 4 5; do
        [ "${#todo[@]}" -gt 0 ] || return 0
        cmd=() cleanup=()
        for i in "${todo[@]}"; do
            tw_targ "${keys[i]}"
            cmd+=(bind-key -T "$probe_table" F1 display-message \;
                unbind-key -q -T "$probe_table" -- "$REPLY" \;
                display-message -p "tmux-wait-key-ok $i" \;
                bind-key -T "$probe_table-$i" -- "$REPLY" display-message \;)
            # (Bound first, so that unbind-key -a finds the table.)
            cleanup+=(\; bind-key -T "$probe_table-$i" F1 display-message \;
                unbind-key -a -T "$probe_table-$i")
        done
        cleanup+=(\; bind-key -T "$probe_table" F1 display-message \;
            unbind-key -a -T "$probe_table")
        # Two bindings at least: this one and the first probed key's.
        cmd+=(bind-key -T "$probe_table" F1 display-message \; list-keys "${cleanup[@]}")
        out=$(tmux "${cmd[@]}" 2>/dev/null || true)
        if [[ "$out" == *"-T $probe_table-"* ]]; then
            break
        fi
        # A key that is no key ended the command: the first one not said
        # to be valid. Remove what was bound, and ask again without it.
        tmux "${cleanup[@]:1}" 2>/dev/null || true
        left=() found=""
        for i in "${todo[@]}"; do
            if [ -z "$found" ] && [[ "$out" != *"tmux-wait-key-ok $i"* ]]; then
                states[i]=bad found=1
            else
                left+=("$i")
            fi
        done
        [ -n "$found" ] || return 0 # not for a key: the server went away
        todo=("${left[@]}")
    done
    while read -r i state name; do
        states[i]=$state names[i]=$name
    done < <(awk -v table="$probe_table" '{
        for (i = 1; i < NF; i++) if ($i == "-T") {
            if ($(i + 1) == "prefix") prefix[$(i + 2)] = $0
            else if (index($(i + 1), table "-") == 1) probed[substr($(i + 1), length(table) + 2)] = $(i + 2)
            break
        }
    } END {
        for (n in probed) {
            k = probed[n]
            state = "free"
            if (k in prefix) state = index(prefix[k], "tmux-wait.sh") ? "ours" : "taken"
            print n, state, k
        }
    }' <<<"$out")
}

main() {
    local -a apply=() notes=() defaulted=()
    local i j value opt entry unsupported said=""
    if ! read_state; then
        # Older tmux fails in read_state, or the server went away.
        version=$(tmux display-message -p '#{version}' 2>/dev/null) || return 0
        [[ "$version" != "" && "$version" != *"{"* ]] || version=$(tmux -V 2>/dev/null || true)
        version=${version#tmux }
        if version_ok "$version"; then
            tw_message "cannot read the server's options; nothing bound"
            return 0
        fi
    fi
    if ! version_ok "$version"; then
        # Said on the clients, and to whoever runs this by hand.
        unsupported="tmux $version is older than 3.2 and not supported (3.2a is the oldest supported); nothing bound"
        tw_message "$unsupported"
        echo "tmux-wait: $unsupported" >&2
        return 0
    fi
    make_commands "$version"
    for i in "${!key_options[@]}"; do
        defaulted[i]=""
        [ -n "${keys[i]}" ] || { keys[i]=${key_defaults[i]} defaulted[i]=1; }
    done
    probe_keys
    for i in "${!key_options[@]}"; do
        case ${states[i]} in
            bad) notes+=("${key_options[i]}: '${keys[i]}' is not a key tmux knows; nothing bound") ;;
            taken)
                # A default key the user bound to something else (C-a as
                # the prefix with "bind a send-prefix"): said once per
                # server, so that its command is not silently missing.
                if [ -n "${defaulted[i]}" ] && [[ " $said_taken " != *" ${names[i]} "* ]]; then
                    notes+=("prefix ${names[i]} is bound already, so it does not ${key_notes[i]}: set ${key_options[i]} to another key (or to none)")
                    said+=" ${names[i]}"
                fi
                ;;
            free | ours)
                # Two options on one key: the first has it.
                for ((j = 0; j < i; j++)); do
                    if [ "${names[j]}" = "${names[i]}" ]; then
                        notes+=("${key_options[i]}: '${keys[i]}' is the key of ${key_options[j]} already; nothing bound")
                        continue 2
                    fi
                done
                # Free, or ours from an earlier load (replaced); a key
                # someone else bound is kept.
                tw_targ "${keys[i]}"
                apply+=(bind-key -T prefix -- "$REPLY" "${key_commands[i]}" \;)
                ;;
        esac
    done
    if [ -n "$said" ]; then
        apply+=(set-option -gq "$said_taken_option" "${said_taken}${said}" \;)
    fi
    for entry in "${aliases[@]}"; do
        if [[ $'\n'"$existing_aliases" != *$'\n'"${entry%%=*}="* ]]; then
            apply+=(set-option -ag command-alias "$entry" \;)
        fi
    done
    # The placeholders in status-left/right become the pushed segments.
    for opt in status-left status-right; do
        if [ "$opt" = status-left ]; then value=$status_left; else value=$status_right; fi
        if [[ "$value" == *"$status_placeholder"* || "$value" == *"$attention_placeholder"* ]]; then
            value=${value//"$status_placeholder"/"$status_value"}
            tw_targ "${value//"$attention_placeholder"/"$attention_value"}"
            apply+=(set-option -gq "$opt" "$REPLY" \;)
        fi
    done
    if tw_helper >/dev/null; then
        # One listener per @tmux-wait-hook-NAME, none for removed ones;
        # attention's watch as @tmux-wait-attention and the toggles say.
        apply+=(run-shell -b "$q_script sync")
    else
        # Download (or build) it in the background; the status segment and
        # the W prompt say so from now on (in the same tmux command, so a
        # key pressed at once sees it).
        tw_install_texts
        apply+=(set-option -gq "$status_option" "$REPLY" \;
            set-option -gq "$prompt_note_option" "$REPLY2" \;
            run-shell -b "$q_install")
    fi
    tmux "${apply[@]}"
    for entry in "${notes[@]}"; do
        tw_message "$entry"
    done
}

main "$@"
