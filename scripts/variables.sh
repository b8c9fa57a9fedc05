# shellcheck shell=bash
# Every option of the tmux-wait plugin and its default, in one place.
# shellcheck disable=SC2034 # sourced: the names are used by the other scripts

# Key bindings (prefix table). "none" disables one.
key_text_option="@tmux-wait-key-text"          # wait for text: prompts for it
key_text_default="W"
key_done_option="@tmux-wait-key-done"          # notify when the running command finishes
key_done_default="F"
key_quiet_option="@tmux-wait-key-quiet"        # notify when the pane goes quiet
key_quiet_default="Q"
key_list_option="@tmux-wait-key-list"          # list and cancel watches
key_list_default="M-w"
key_attention_option="@tmux-wait-key-attention"  # attention on/off for this session
key_attention_default="A"
key_next_option="@tmux-wait-key-attention-next"  # go to the next pane that needs you
key_next_default="a"

# Watches.
timeout_option="@tmux-wait-timeout"            # how long a watch may run
timeout_default="12h"
quiet_option="@tmux-wait-quiet-seconds"        # quiet means no output for this long
quiet_default="30"

# Reporting (read by the helper itself; listed here for the README).
message_option="@tmux-wait-message"            # display-message on the clients
message_default="on"
message_ms_option="@tmux-wait-message-ms"
message_ms_default="5000"
bell_option="@tmux-wait-bell"                  # ring the bell in the watched pane
bell_default="off"
desktop_option="@tmux-wait-desktop"            # notify-send / osascript
desktop_default="off"
hook_option="@tmux-wait-on-done"               # a shell command; gets TMUX_WAIT_* variables
hook_default=""

# Attention (read by the helper itself; listed here for the README).
attention_option="@tmux-wait-attention"        # on: attention for every session
attention_default="off"
profiles_option="@tmux-wait-profiles"          # a file of agent profiles, tried first
profiles_default=""
icon_attention_option="@tmux-wait-icon-attention"
icon_attention_default="⚑"
attention_age_option="@tmux-wait-attention-age"  # on: the segment says how long the first pane has waited
attention_age_default="off"
hosts_option="@tmux-wait-hosts"                # other hosts, space-separated: [user@]host[:socket]
hosts_default=""
servers_option="@tmux-wait-servers"            # other tmux servers here, space-separated: names or paths
servers_default=""
ssh_config_option="@tmux-wait-ssh-config"      # an ssh config file for the hosts
ssh_config_default=""

# Channel hooks: set -g @tmux-wait-hook-NAME notify (or a tmux command).
hook_prefix="@tmux-wait-hook-"
hooks_clear_option="@tmux-wait-hooks-clear"   # seconds a hook result stays in the status
hooks_clear_default="300"

# The status-line placeholders and the options they read.
status_placeholder="#{tmux_wait_status}"
status_value="#{@tmux_wait_status}"
status_option="@tmux_wait_status"
attention_placeholder="#{tmux_wait_attention}"
attention_value="#{@tmux_wait_attention}"
# The window option a window-status-format can show (set by the helper).
attention_window_option="@tmux-wait-attention-window"

# The default keys the load said were bound already (said once per server).
said_taken_option="@tmux-wait-said-taken"

# Said after "wait for text" in the W prompt while the helper builds.
prompt_note_option="@tmux-wait-prompt-note"

# Where the prompt leaves the typed pattern for the helper to read.
pattern_option="@tmux-wait-pattern"

# Getting the helper (scripts/install-helper.sh), when none of the
# plugin's version is on PATH or in the plugin's bin/ or target/release/.
bin_option="@tmux-wait-bin"                    # the helper to use, a path (any version)
bin_default=""
download_option="@tmux-wait-download"          # on: fetch the release binary; off: never
download_default="on"
release_url_option="@tmux-wait-release-url"    # where vVERSION/ARCHIVE is; empty: the
release_url_default=""                         # releases of the plugin's own git origin
release_signers_option="@tmux-wait-release-signers" # an allowed_signers file; empty:
release_signers_default=""                     # the plugin's own allowed_signers
download_timeout_option="@tmux-wait-download-timeout" # seconds each file may take
download_timeout_default="120"
