//! The long help texts of the subcommands (`--help`), apart from the
//! argument types they follow.

pub const EXIT_CODES: &str = "\
Exit codes: each command's --help lists its own. In short: 0 done, 1 timed
out, 2 error; text also 3 (a --stop pattern) and 4 (alternate screen);
channel 5 (signalled with a non-zero --status); agents 6 (a read-only
settings file); answer 7 (refused: nothing typed); run exits like
timeout(1) (the command's status, 124, 125); 129/130/143 when interrupted
by SIGHUP/SIGINT/SIGTERM.

With --json, one JSON object is printed on stdout, errors included:
{\"error\": {\"kind\": ..., \"message\": ...}}. Errors also print one line on stderr.";

pub const TEXT_HELP: &str = "\
Exit codes:
  0    found: a --pattern matched new output (or, without --pattern, any new
       output appeared)
  1    timed out
  2    error: bad usage, invalid regex, no server, no such pane, the pane
       is dead, died or was respawned, the server exited during the wait,
       out of file descriptors (the message names the limit)
  3    stopped by a --stop pattern
  4    timed out while the pane was on the alternate screen
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM (after cleaning up)";

pub const CHANNEL_HELP: &str = "\
Exit codes:
  0    signalled (with no --status, or --status 0)
  1    timed out
  2    error: bad usage, invalid channel name, no server
  5    signalled with a non-zero --status (tmux-wait signal NAME --status N)
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM (after cleaning up)";

pub const SIGNAL_HELP: &str = "\
Exit codes:
  0    sent
  2    error: bad usage, invalid channel name, no server";

/// For the commands that do one thing at once (list, cancel, status, ...).
pub const SIMPLE_HELP: &str = "\
Exit codes:
  0    done
  2    error: bad usage, no server, no such pane or watch";

pub const LISTEN_HELP: &str = "\
Exit codes:
  0    the server exited or the hook was removed
  2    error: bad usage, invalid channel name, no server
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM (after undoing its wait)";

pub const MCP_HELP: &str = "\
Speaks MCP (JSON-RPC, one message per line) on stdin and stdout; logs go to
stderr. Each tool call runs as a tmux-wait child process; a cancelled call's
child is ended and leaves nothing behind. See docs/mcp.md.

Exit codes:
  0    stdin closed: every call was ended, nothing is left
  2    error: bad usage
  129/130/143  ended by SIGHUP/SIGINT/SIGTERM (after ending every call)";

pub const MENU_HELP: &str = "\
The command returns once a choice is made or the menu is closed.

Exit codes:
  0    the menu was shown and closed
  2    error: no server, no such client";

pub const SHELL_INIT_HELP: &str = "\
Put this at the end of your shell's rc file (after anything that sets
PROMPT_COMMAND, PS1 or the prompt hooks):
  bash (~/.bashrc):             eval \"$(tmux-wait shell-init bash)\"
  zsh (~/.zshrc):               eval \"$(tmux-wait shell-init zsh)\"
  fish (config.fish):           tmux-wait shell-init fish | source
The shell then marks its prompt, the command line, the command's output and
its end with its exit status (OSC 133 A, B, C, D;STATUS, as WezTerm, kitty
and VS Code do), so `output`, `watch --done` and the plugin's F key report
the exit status of commands typed by a person. The marks draw nothing; $?
and an existing PROMPT_COMMAND or prompt are kept. bash 4.4 or newer.

Exit codes:
  0    printed
  2    error: bad usage (an unknown shell)";

pub const AGENTS_HELP: &str = "\
The hook tells `any`, `panes`, MCP and the plugin's attention what the
agent does, the moment it does it: it asks (a permission, with the tool
and its command), it works, it is idle. Without it, its title and its
screen say so, a little later.

  tmux-wait agents install claude-code gemini-cli
  tmux-wait agents remove claude-code

Files: Claude Code ~/.claude/settings.json ($CLAUDE_CONFIG_DIR), Qwen Code
~/.qwen/settings.json ($QWEN_HOME), Gemini CLI ~/.gemini/settings.json
($GEMINI_CLI_HOME/.gemini), Codex ~/.codex/hooks.json ($CODEX_HOME; Codex
asks you to trust new hooks when it starts). OpenCode: tmux-wait's plugin,
~/.config/opencode/plugin/tmux-wait.js. aider has no hooks.

Only tmux-wait's entries change: the rest of the file keeps its bytes
(layout, comments where the agent reads them), a symlink is followed and
kept, the mode and owner stay. install then remove gives the file back as
it was.

Exit codes:
  0    done
  2    error: an unknown agent, a settings file that is not JSON (or has
       comments Claude Code or Codex would not read): left as it is
  6    the settings file is read-only (a home-manager link into the Nix
       store): nothing written; the message shows the entries to add";

pub const REMOTE_HELP: &str = "\
A host is [user@]host[:socket] as ssh takes it (your ~/.ssh/config aliases,
ProxyJump and keys apply; --ssh-config FILE or $TMUX_WAIT_SSH_CONFIG names
another file). Every ssh goes through one connection per host, kept a
minute after its last use (ControlMaster, its socket in tmux-wait's private
directory), with BatchMode: a password is never asked. Words sent to the
remote shell are quoted; a host name starting with '-' or holding anything
but letters, digits and . _ - is refused.

  tmux-wait remote check build gpu
  tmux-wait remote install gpu          # this binary, or the release for gpu
  tmux-wait remote exec gpu -- run -t %3 -- make test

install puts tmux-wait in ~/.local/bin/tmux-wait on the host through the
same connection, with no sftp or scp there (a POSIX sh, cat and cksum do):
under a temporary name, checked whole, run there once, then renamed into
place. It is this binary when the host's system and machine are this
build's, else (or --from-release) the release of this version for the
host's, downloaded from --release-url and verified here first
(SHA256SUMS.sig against the release key built in, or --signers FILE; then
the archive's SHA-256): a download that fails a check is refused, and a
copy that fails one is removed. Nothing is installed unless you ask.

Exit codes:
  0    check: every host is reached and runs a recent tmux-wait; install: done
  N    exec: the remote command's own exit status
  2    error: bad usage, a host not reached, no tmux-wait there (exec run: 125)";

pub const ANY_HELP: &str = "\
A pane needs someone when its shell is back at its prompt after a command
(prompt, with the exit status where the shell or run reports it), when a
program waits for the person (asking: a [y/N] question, read, a password,
a REPL's prompt, a pager, a full-screen agent's question), or when its
program ended (exited); a bell counts too. --until names other states and
events: working, quiet (a command wrote nothing for --quiet-after), text
(a --pattern matched new output). Text typed at a prompt and not submitted
is never reported; a live display that redraws on its own (top, watch) is
working, not asking. A coding agent (Claude Code, Codex, Gemini CLI, Qwen
Code, aider, OpenCode, Copilot CLI, pi, Cline) is judged by its own
signals: its hooks (`tmux-wait agents install AGENT`), its title, its
screen; one without a profile by what agents' screens share; a desktop
notification (OSC 9, OSC 777) counts as a bell; --json's source says which.

Only changes after the call began count; --now also returns a pane that is
in such a state already. The first pane wins; --all waits for every pane.
Panes that appear later in a watched window or session are watched too.
--ndjson prints one JSON object per change until the timeout.

Several servers and hosts: -L and -S repeated, --all-servers (every server
of yours on this host, those that start during the wait too) and --host
[user@]host[:socket] (repeated) watch every pane of each; the first pane
that needs someone wins. Each pane names its server (socket path) and host
(null: this one); a remote pane's id is HOST/%N. A host is reached through
one shared ssh connection (BatchMode; its socket in tmux-wait's private
directory) and must run this tmux-wait or a newer one (`tmux-wait remote
install HOST`). A host that cannot be reached, or drops, is said
(host_unreachable) and tried again (1 s, 2 s, 4 s ... 30 s); a server that
goes away is said; the others go on.

Exit codes:
  0    a pane (with --all: every pane) needs someone
  1    timed out (pending holds each pane's state); --ndjson ends so
  2    error: bad usage, no server, no such pane, window or session; with
       several servers and hosts, when none of them could be watched
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM";

pub const PANES_HELP: &str = "\
For each pane: its state (working, prompt, asking, quiet, exited), why,
since when, the command in its foreground and the question it asks.
-L and -S repeated, --all-servers and --host HOST look at several servers
and hosts (as for any); one that cannot be reached is said, the rest shown.

Exit codes:
  0    printed
  2    error: bad usage, no server, no such pane, window or session; with
       several servers and hosts, when none of them could be looked at";

pub const WATCH_HELP: &str = "\
A watch records itself in a private per-user directory, so `tmux-wait list`
shows it and `tmux-wait cancel` ends it, updates the status segment
(#{@tmux_wait_status}), and when it ends: shows a message on the clients
(@tmux-wait-message on), rings the bell in the pane (@tmux-wait-bell), sends
a desktop notification (@tmux-wait-desktop, notify-send or osascript), runs
the @tmux-wait-on-done command with TMUX_WAIT_* variables, and signals its
channel (tmux-wait-done-ID unless --channel).

Exit codes:
  0    found (text), the command finished (--done), the pane went quiet
  1    timed out
  2    error: bad usage, no server, no such pane, the pane is dead, died or
       was respawned during the watch, out of file descriptors
  3    stopped by a --stop pattern
  4    timed out while the pane was on the alternate screen
  143  cancelled (tmux-wait cancel), or interrupted by SIGTERM;
       129/130 by SIGHUP/SIGINT";

pub const RUN_HELP: &str = "\
The words of COMMAND are joined with spaces and typed as one line into the
pane's shell (bash, zsh, sh, dash, ksh), which must be at its prompt. The
output is what the command wrote: not the prompt, not the echo, not the
wrapper. `cd` and `export` persist, as when typed by hand. Afterwards $? in
the shell is 0 (the wrapper's); the status is the command's exit code here.

run types into another pane than the one it runs in: inside tmux, give
-t (for example -t '{last}', the pane you were in before, or -t %3); run
without -t in a pane refuses at once (exit 125). Outside tmux, without -t,
it types into the pane tmux picks (the active pane of the most recently
used session).

Exit codes (as timeout(1)):
  N    the command's own exit status
  0    also: the command stopped at an interactive program's prompt
  124  timed out: the command keeps running; `tmux-wait output` continues
  125  tmux-wait failed (the error says why): bad usage, run in its own
       pane without -t, no such pane or a dead one, the pane is not at a
       shell prompt or has unsubmitted text (see --force), out of file
       descriptors
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM";

pub const OUTPUT_HELP: &str = "\
Returns at once when there are lines the cursor has not shown, else waits
for new output (gathered until the pane is quiet for 20 ms), the followed
command's end (exit status when known), an interactive program's prompt
(>>>, (gdb), ... or --prompt), --until, or the timeout. A cursor is kept in
the pane option @tmux-wait-cursor-NAME; a new cursor starts with the screen.

Exit codes:
  0    returned lines or a state change
  1    timed out with nothing new
  2    error (bad usage, no such pane or a dead one, server gone, out of
       file descriptors)
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM";

pub const ANSWER_HELP: &str = "\
Without CHOICE it shows the question the pane asks now, its id, the
process that reads it, and the answers it offers:
  y, n       for [y/N], [Y/n], (y/n), [yes/no] (typed as the question
             spells them, then Enter)
  y, n, d    for (Y)es/(N)o/(D)on't ask again (aider), then Enter
  1, 2, 3    an agent's numbered options (Claude Code, Codex, Copilot CLI:
             the digit alone picks it)
  y, n       for [y] Approve  [n] Deny (Cline: the key alone)
  enter      for Press Enter to continue

With CHOICE it types that answer's keys (send-keys, literally) only if
the pane still asks, the question is not a password's, and it is the one
named: --question TEXT (the question of panes --json), --question-id ID,
--pid PID (the same program reads it), --since SECS. Right before the keys
go, the pane is read again (who reads its terminal, its cursor, the
question's row); what is left is the millisecond or two tmux takes to
write them. Then it watches the pane for --timeout: it moved on when its
state, its question or its reader changed.

  q=$(tmux-wait panes -t %3 --json | jq -r '.panes[0].question')
  tmux-wait answer -t %3 --question \"$q\" y

Each answer goes in the server's attention log (tmux-wait log).

Exit codes:
  0    typed, and the pane moved on (without CHOICE: it asks, shown)
  1    typed, but the pane did not move on within --timeout
  2    error: bad usage, no server, no such pane
  7    refused, nothing typed: the pane asks nothing, asks another
       question than the one named (or another program reads it, or it
       changed as the keys were about to go), reads a password, or
       offers no such answer";

pub const LOG_HELP: &str = "\
Attention (the plugin's, while it is on) keeps every event of the server
in its private state directory: a pane needs you (asking, prompt, exited,
bell: when, the question), and how that ended: answered (by keys typed
in the pane, the menu or a script's `tmux-wait answer`, with the answer)
or gone (seen, working again, closed, respawned, attention off), with how
long it waited. A need not over yet says how long it has waited so far.
Events are listed in the order they happened (on the clock of the time
since boot, which no setting of the wall clock moves), with the wall
clock's time. The log keeps the newest events: at most about 2 MB.

  tmux-wait log --since 2h
  tmux-wait log --json | jq '.events[] | select(.event == \"answered\")'

Exit codes:
  0    printed
  2    error: bad usage, no server";
