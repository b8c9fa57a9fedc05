//! What each tool looks like to a client: its description, input schema
//! and output schema.

use super::*;

const SOCKET_NAME: &str =
    "tmux socket name (as tmux -L). Default: the server tmux-wait mcp was started for.";

pub(super) fn nullable(ty: &str, description: &str) -> Value {
    json!({"anyOf": [{"type": ty}, {"type": "null"}], "default": null, "description": description})
}

pub(super) fn nullable_list(description: &str) -> Value {
    json!({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
           "default": null, "description": description})
}

pub(super) fn error_property() -> Value {
    json!({
        "type": "object",
        "description": "Present exactly when isError is true: why the call failed. kind is one of usage, invalid_regex, invalid_channel, no_server, no_pane, pane_died, pane_respawned, server_exited, tmux_error, io_error, not_at_prompt, busy, host_unreachable, no_helper, interrupted, internal, cancelled, or for a wait that ended without what it waited for: timeout, stopped, alternate_screen (the rest of the result is then filled in as usual).",
        "properties": {
            "kind": {"type": "string"},
            "message": {"type": "string"}
        },
        "required": ["kind", "message"]
    })
}

pub(super) fn output_schema(
    description: &str,
    mut properties: Map<String, Value>,
    required: &[&str],
) -> Value {
    properties.insert("error".into(), error_property());
    json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
    })
}

pub(super) fn props(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

pub(super) fn nullable_of(ty: &str, description: &str) -> Value {
    json!({"type": [ty, "null"], "description": description})
}

pub(super) fn definition(kind: ToolKind) -> Value {
    match kind {
        ToolKind::WaitForAttention | ToolKind::PaneStates => attention_definitions(kind),
        ToolKind::WaitForText => json!({
            "name": "wait_for_text",
            "title": "Wait for text",
            "description": "Wait for NEW output in a tmux pane, then return.\n\nReturns when one of patterns appears on a line written after this call starts, when one of stop appears (immediate failure), or at the timeout. Pass patterns=null to wait for any new output at all (an empty list is an error). Use this instead of polling a capture in a loop.\n\nAfter typing into a pane yourself (send_keys), pass include_unseen=true: the wait then also sees what the pane printed between your keys and this call, which it would otherwise miss and wait out its timeout for.\n\nPre-existing scrollback is never matched, nor stale paint below the cursor, nor the echo of text typed at a shell prompt: only output written after the call began counts. If a pattern was already on screen the result says so via matched_at_entry. tmux-wait follows the pane's output as tmux streams it (no polling): it wakes within about a millisecond and sees lines that scrolled away or were overwritten at once.\n\nFor commands you type yourself, run_command (exit status and only the command's output) or wait_for_channel are exact; reserve this for output you did not author. stop is the cheap way to fail fast: pass the failure markers you know (\"error:\", \"FAILED\", \"Traceback\").\n\nA timeout or a stop hit is a tool error (isError) whose result is still the full object below, with error.kind timeout, stopped or alternate_screen. TMUX_WAIT_MAX_SECONDS on the server caps timeout; effective_timeout reports the value enforced.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "patterns": nullable_list("Success patterns; the first one to match ends the wait.\nLiteral text unless ``regex=True``. Omit or pass ``null`` to\nwait for any new output."),
                    "stop": nullable_list("Failure patterns. A hit ends the wait immediately with\n``outcome=\"stopped\"`` and ``found=false``; ``matched_index``\nsays which entry fired."),
                    "regex": {"type": "boolean", "default": false, "description": "Interpret ``patterns`` and ``stop`` as regular expressions (Rust regex syntax, linear time).\nDefault False (literal text)."},
                    "match_case": {"type": "boolean", "default": false, "description": "Whether to match case. Default False (case-insensitive)."},
                    "timeout": {"type": "number", "default": 8, "description": "Requested seconds to wait. Default 8.0. Clamped by server\npolicy (TMUX_WAIT_MAX_SECONDS); see ``effective_timeout`` in the result."},
                    "timeout_s": {"type": "number", "description": "Same as timeout."},
                    "interval": {"type": "number", "default": 0.05, "description": "Seconds between polls when tmux-wait has to poll (it normally follows the pane's output stream and does not poll). Default 0.05 (50ms). Minimum 0.01."},
                    "include_unseen": {"type": "boolean", "default": false, "description": "Also match output written before this call that this connection has not been shown yet (since its last run_command, wait, or wait_for_text with include_unseen, on this pane), and count it as shown. Pass true when you sent keys yourself and wait for their result: a line printed between your keys and this call is then not missed. Needs the pane (pane_id, window_id, session_id or session_name)."},
                    "pane_id": nullable("string", "Pane ID (e.g. '%1'), or a pane on another host as wait_for_attention names it ('HOST/%1')."),
                    "session_name": nullable("string", "Session name for pane resolution (its active pane)."),
                    "session": nullable("string", "Same as session_name."),
                    "session_id": nullable("string", "Session ID (e.g. '$1') for pane resolution (its active pane)."),
                    "window_id": nullable("string", "Window ID (e.g. '@1') for pane resolution (its active pane)."),
                    "socket_name": nullable("string", SOCKET_NAME),
                }
            },
            "outputSchema": output_schema(
                "Result of a bounded wait for new pane output: every field is something tmux-wait observed.",
                props(json!({
                    "found": {"type": "boolean", "description": "True when a ``patterns`` entry matched new output, or, with ``patterns=null``, when any new output appeared."},
                    "outcome": {"type": "string", "enum": ["matched", "any_output", "stopped", "alternate_screen", "timeout"], "description": "How the wait ended. ``matched``: a ``patterns`` entry hit. ``any_output``: ``patterns`` was omitted and something was written (read it as 'the pane moved', never as 'the command finished'). ``stopped``: a ``stop`` failure marker hit. ``alternate_screen``: the wait timed out while the pane was under a pager, editor or full-screen program, where nothing is matched. ``timeout``: nothing matched in the budget."},
                    "matched_index": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "Zero-based index into ``patterns``, or into ``stop`` when ``outcome`` is ``stopped``. Null otherwise."},
                    "matched_lines": {"type": "array", "items": {"type": "string"}, "description": "Newly-written lines that matched (empty on timeout)."},
                    "tail": {"type": "array", "items": {"type": "string"}, "description": "Rows from the entry cursor row down at the end, wrapped rows joined (at most 20 lines, 2000 bytes). Includes stale rows excluded from matching: it shows what the pane looks like. On a timeout it usually holds the answer: read it before retrying."},
                    "saw_new_output": {"type": "boolean", "description": "True when new output (not typed echo) was written. With found=false: true means output arrived and did not match (read tail, fix the pattern); false means the pane was quiet."},
                    "matched_at_entry": {"type": "boolean", "description": "True when ``patterns`` already matched on-screen text before the wait began and nothing new matched after: the text is there, but it predates your call."},
                    "alternate_screen": {"type": "boolean", "description": "True when the pane was on the terminal's alternate screen at any point during the wait."},
                    "pane_id": {"type": "string", "description": "The pane that was watched."},
                    "elapsed_seconds": {"type": "number", "description": "Time spent waiting in seconds."},
                    "effective_timeout": {"type": "number", "description": "Seconds actually enforced (TMUX_WAIT_MAX_SECONDS caps the requested ``timeout``)."},
                })),
                &["found", "outcome", "pane_id", "elapsed_seconds", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        ToolKind::WaitForChannel => json!({
            "name": "wait_for_channel",
            "title": "Wait for a tmux channel",
            "description": "Block until a tmux wait-for channel is signalled.\n\nThis is the synchronisation primitive for output you AUTHORED: the channel only fires because your own shell command signals it, e.g. send `pytest; tmux wait-for -S tests_done` to a pane, then wait_for_channel(\"tests_done\", timeout=60). Shell `;` fires the signal whether the command succeeded or failed. `tmux-wait signal tests_done --status $?` (or signal_channel) also sends an exit status and a message, returned here as status and message.\n\nThe timeout is real (tmux wait-for has none); a timeout is a tool error (isError, error.kind timeout). A tmux server that shuts down during the wait is reported as an error (server_exited), never as a signal. A signal sent while nobody waits is kept by tmux once, so signalling before the wait starts works.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "channel": {"type": "string", "description": "Channel name. Must match ^[A-Za-z0-9_.:-]{1,128}$."},
                    "timeout": {"type": "number", "default": 30, "description": "Maximum seconds to wait. Defaults to 30 seconds. Capped by TMUX_WAIT_MAX_SECONDS; the result names the timeout actually enforced."},
                    "socket_name": nullable("string", SOCKET_NAME),
                },
                "required": ["channel"]
            },
            "outputSchema": output_schema(
                "The channel, the timeout actually enforced, and what the signal carried.",
                props(json!({
                    "channel": {"type": "string", "description": "The channel waited on."},
                    "outcome": {"type": "string", "enum": ["signalled", "timeout"]},
                    "elapsed_seconds": {"type": "number"},
                    "effective_timeout": {"type": "number", "description": "Seconds actually enforced."},
                    "status": nullable_of("integer", "The exit status sent with the signal (tmux-wait signal --status / signal_channel), else null."),
                    "message": nullable_of("string", "The message sent with the signal, else null."),
                    "sent": nullable_of("number", "When the signal with a status or message was sent (seconds since the epoch), else null."),
                })),
                &["channel", "outcome", "elapsed_seconds", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        ToolKind::SignalChannel => json!({
            "name": "signal_channel",
            "title": "Signal a tmux channel",
            "description": "Signal a tmux wait-for channel (tmux wait-for -S), optionally with an exit status and a message that wait_for_channel (and `tmux-wait channel`) return. Wakes every waiter of the channel; with nobody waiting, tmux keeps the signal for the next waiter.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "channel": {"type": "string", "description": "Channel name. Must match ^[A-Za-z0-9_.:-]{1,128}$."},
                    "status": nullable("integer", "An exit status to send with the signal (a waiting `tmux-wait channel` exits 5 when it is not 0)."),
                    "message": nullable("string", "A message to send with the signal (at most 4096 bytes; shown as text, never run)."),
                    "socket_name": nullable("string", SOCKET_NAME),
                },
                "required": ["channel"]
            },
            "outputSchema": output_schema(
                "The channel signalled and what was sent with it.",
                props(json!({
                    "channel": {"type": "string"},
                    "status": nullable_of("integer", "The status sent, else null."),
                    "message": nullable_of("string", "The message sent, else null."),
                })),
                &["channel"],
            ),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        ToolKind::RunCommand => json!({
            "name": "run_command",
            "title": "Run a command in a pane",
            "description": "Run a shell command in a pane, wait for it to end, and return its exit status and ONLY its output.\n\nThe command is typed into the pane's shell (bash, zsh, sh, dash, ksh), which must be at its prompt; it runs in that shell, so cd and export persist as when typed by hand. output is exactly what the command wrote: no prompt, no echo of the typed line. Long output is clipped in the middle (max_lines, default 500), led by the summary lines found there (compiler errors, test results).\n\nIt returns when the command ends (exit_status), when it stops at an interactive program's prompt (python, gdb, psql: prompt says which), or at the timeout (timed_out: true). In the last two cases the command keeps running: call wait with the same pane_id to get its next output and its exit status. Cancelling the call also leaves the command running. A pane that is running something else or has unsubmitted text at its prompt is refused (error.kind not_at_prompt); force clears the unsubmitted text. A pane is required (pane_id, window_id, session_id or session_name): with none the command is not typed anywhere.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "command": {"type": "string", "description": "Shell command to run in the target pane (one line)."},
                    "pane_id": nullable("string", "Pane ID (e.g. '%1'), or a pane on another host as wait_for_attention names it ('HOST/%1': run there through ssh). One of pane_id, window_id, session_id and session_name is required: the command is typed there."),
                    "session_name": nullable("string", "Session name for pane resolution (its active pane)."),
                    "session": nullable("string", "Same as session_name."),
                    "session_id": nullable("string", "Session ID (e.g. '$1') for pane resolution (its active pane)."),
                    "window_id": nullable("string", "Window ID (e.g. '@1') for pane resolution (its active pane)."),
                    "timeout": {"type": "number", "default": 30, "description": "Maximum seconds to wait for the command to end (it keeps running after). Capped by TMUX_WAIT_MAX_SECONDS; effective_timeout reports the value enforced."},
                    "timeout_s": {"type": "number", "description": "Same as timeout."},
                    "max_lines": nullable("integer", "At most this many lines of output (default 500; 0 for all): longer output is clipped in the middle."),
                    "suppress_history": {"type": "boolean", "default": true, "description": "Type the line with a leading space, which bash (HISTCONTROL=ignorespace or ignoreboth), zsh (HIST_IGNORE_SPACE) and fish keep out of the shell's history. false types it without, so the shell records it."},
                    "force": {"type": "boolean", "default": false, "description": "When text someone typed and did not submit sits at the prompt, clear it (C-e C-u) and type anyway, instead of refusing with not_at_prompt."},
                    "socket_name": nullable("string", SOCKET_NAME),
                },
                "required": ["command"]
            },
            "outputSchema": output_schema(
                "A command's exit status and output.",
                props(json!({
                    "pane_id": {"type": "string"},
                    "exit_status": nullable_of("integer", "The command's exit status; null when it has not ended (timed_out, or stopped at a prompt) or the pane closed before it was known."),
                    "timed_out": {"type": "boolean", "description": "The timeout ended the call; the command keeps running (continue with wait)."},
                    "elapsed_seconds": {"type": "number"},
                    "output": {"type": "array", "items": {"type": "string"}, "description": "What the command wrote, line by line (clipped per max_lines)."},
                    "output_truncated": {"type": "boolean"},
                    "output_truncated_lines": {"type": "integer", "description": "Lines left out of output."},
                    "effective_timeout": {"type": "number"},
                    "finished": {"type": "boolean", "description": "The command ended."},
                    "exit_source": nullable_of("string", "Where the status came from: wrapper (exact), pane_dead (the command ended the shell), ..."),
                    "prompt": nullable_of("string", "The interactive program's prompt the command stopped at."),
                    "cursor": {"type": "string", "description": "The cursor moved past this output (this connection's; wait reads on from it)."},
                    "save_error": nullable_of("string", "Why saving the output stopped, if it did."),
                    "follow_error": nullable_of("string", "Why the command cannot be followed after this call (its exit status and save_to stop here), if so."),
                })),
                &["pane_id", "exit_status", "timed_out", "elapsed_seconds", "output", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
        }),
        ToolKind::Wait => json!({
            "name": "wait",
            "title": "Wait for new output",
            "description": "Block until a running session command produces new output, then return only the unseen lines. Poll repeatedly to stream fresh results and the exit status.\n\nKeep waiting for what is running in the session -- what your last run_command left running (a run that timed out or stopped at a prompt), or a command a human or another agent started -- and return only the lines not shown to you before (each connection has its own place in each pane). The interactive form of sleep 30; tail log: call it as often as needed, with timeout_s up to your patience; each reply is new output only, and the command's exit status when it ends (finished, exit_status). When unsubmitted text holds the prompt, says so (unsubmitted_input) and whether it was submitted or erased. After a run into a program (gdb, python), returns at the program's prompt, and whenever a program waits for an answer (a [y/N] question, a password prompt: prompt holds the question). What you type at a prompt is never output: a statement typed into a REPL does not end the wait, its answer does. On an idle pane (nothing runs, nothing new) returns at once with reason idle. until_finished gathers everything to the end in one reply. show filters the lines, until returns at a pattern, last_lines and max_lines shorten the reply, save_to keeps everything in a file. Returns at once when there are unseen lines.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "session": nullable("string", "the session's name: its active pane is read (or give pane_id, window_id or session_id)"),
                    "session_name": nullable("string", "Same as session."),
                    "session_id": nullable("string", "the session's id (e.g. '$1'): its active pane is read"),
                    "window_id": nullable("string", "the window's id (e.g. '@1'): its active pane is read"),
                    "pane_id": nullable("string", "the pane to read (e.g. '%1', or 'HOST/%1' on another host), instead of a session"),
                    "until_finished": {"type": "boolean", "default": false, "description": "gather every line until the command ends (or stops at a program's prompt, or the timeout) and return them in one reply, instead of returning at the first burst of output"},
                    "show": nullable("string", "regex: reply with only the output lines matching it, in order, plus the last few (like `| grep`, but the command runs unfiltered), e.g. \"error:|warning:|^FAIL\" for a build"),
                    "show_after": nullable("integer", "with `show`: also this many lines after each match (like `grep -A N`); a match is numbered \"N:\", a line after one \"N-\""),
                    "until": nullable("string", "regex: return as soon as output not shown to you before matches it, the command still running; one that never matches is a plain wait"),
                    "save_to": nullable("string", "a file to append the unseen output to, unfiltered, as it comes. A relative path is in the pane's current directory; the file is on the machine this server runs on."),
                    "max_lines": nullable("integer", "lines of output shown in the reply (default 500; 0 for all); longer output is clipped in the middle, led by its summary lines (test results, compiler errors, make's failure) when the middle holds them"),
                    "last_lines": nullable("integer", "reply with only the last N lines of the output (like `| tail -N`); with `show`, how many last lines follow the matches (default 3)"),
                    "timeout_s": {"type": "number", "default": 30, "maximum": MAX_WAIT_SECONDS, "description": "seconds to keep waiting when there is nothing new (the command keeps running after; `wait` again); at most 1500"},
                    "timeout": {"type": "number", "maximum": MAX_WAIT_SECONDS, "description": "Same as timeout_s."},
                    "socket_name": nullable("string", SOCKET_NAME),
                }
            },
            "outputSchema": output_schema(
                "The pane's output not shown to this connection before, and how its command stands.",
                props(json!({
                    "pane_id": {"type": "string"},
                    "lines": {"type": "array", "items": {"type": "string"}, "description": "The unseen lines, clipped per the options; the last one unfinished when partial."},
                    "cursor": {"type": "string"},
                    "reason": {"type": "string", "enum": ["output", "until", "finished", "prompt", "idle", "timeout"], "description": "Why the call returned. idle: nothing runs in the pane (the shell is at its prompt, with no job and nothing typed) and nothing new was written, so there is nothing to wait for: returned at once."},
                    "finished": {"type": "boolean", "description": "The followed command ended."},
                    "exit_status": nullable_of("integer", "Its exit status when known."),
                    "exit_source": nullable_of("string", "Where the status came from: wrapper (a command typed by run_command), osc133, shell (status unknown), pane_dead, pane_closed, respawned, unobserved."),
                    "timed_out": {"type": "boolean", "description": "The timeout ended the call (with nothing new when lines is empty)."},
                    "running": nullable_of("string", "The program in the pane's foreground, if not the shell."),
                    "lines_missed": {"type": "integer", "description": "Lines that scrolled out of the history before they could be shown (a lower bound unless lines_missed_exact)."},
                    "lines_missed_exact": {"type": "boolean"},
                    "history_cleared": {"type": "boolean"},
                    "respawned": {"type": "boolean"},
                    "clipped_lines": {"type": "integer", "description": "Unseen lines not in lines (show, last_lines, max_lines)."},
                    "partial": {"type": "boolean", "description": "The last line has no newline yet (a question, a progress line)."},
                    "prompt": nullable_of("string", "The interactive program's prompt the output stopped at."),
                    "unsubmitted_input": nullable_of("string", "Text typed at the shell prompt and not submitted."),
                    "input_outcome": nullable_of("string", "What became of it: submitted, erased, pending."),
                    "elapsed_seconds": {"type": "number"},
                    "effective_timeout": {"type": "number"},
                    "save_error": nullable_of("string", "Why save_to stopped, if it did."),
                })),
                &["pane_id", "lines", "reason", "finished", "exit_status", "timed_out", "elapsed_seconds"],
            ),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
    }
}

/// The servers and hosts that could not be watched.
fn problems() -> Value {
    json!({"type": "array", "items": {"type": "object", "properties": {
        "event": {"type": "string", "description": "host_unreachable, no_helper (no recent tmux-wait there), server_gone, no_server, error."},
        "server": {"type": ["string", "null"]},
        "host": {"type": ["string", "null"]},
        "message": {"type": "string"}}},
        "description": "With hosts or servers: those that could not be watched, or stopped being watched, and why (ssh's own message for a host)."})
}

/// The keys of one pane in `wait_for_attention` and `pane_states`.
pub(super) fn pane_properties() -> Map<String, Value> {
    props(json!({
        "pane_id": {"type": "string"},
        "session": {"type": "string", "description": "The session's name."},
        "window": {"type": "integer", "description": "The window's index."},
        "state": {"type": "string", "enum": ["working", "prompt", "asking", "quiet", "exited", "bell", "text"], "description": "working: a command runs; prompt: the shell is back at its prompt; asking: a program waits for an answer (a [y/N] question, read, a password, a REPL's or pager's prompt, a full-screen agent's question or idle input box); quiet: a command runs and wrote nothing for 30 s; exited: the pane's program ended or the pane closed. bell and text are events: the pane rang the bell, a pattern matched."},
        "reason": {"type": "string", "description": "Why, in a word: running, redrawing (a live display such as top), command_finished, at_prompt, reads_line, reads_password, repl_prompt, reads_keys, agent_working, agent_question, agent_idle, no_output, pane_dead, pane_closed, bell, pattern."},
        "question": nullable_of("string", "The line the program waits on (asking)."),
        "command": nullable_of("string", "The program in the pane's foreground (for prompt: the one that ran last)."),
        "exit_status": nullable_of("integer", "The exit status, where known: the command's (shell integration, run_command's marks), or the pane's program's (exited)."),
        "agent": nullable_of("string", "The coding agent in the pane, told by its processes (claude-code, codex, gemini-cli, qwen-code, aider, or a profile of the user's)."),
        "source": {"type": "string", "enum": ["kernel", "stream", "screen", "title", "hook", "tmux"], "description": "What said so: kernel (who reads the terminal), stream (prompt marks, redraws, silence), screen, title and hook (a coding agent's own signals), tmux (the pane's end)."},
        "line": nullable_of("string", "The line a pattern matched (text)."),
        "since": {"type": "number", "description": "When the pane entered its state (seconds since the epoch)."},
        "server": {"type": "string", "description": "The pane's tmux server: its socket's path (on host)."},
        "host": nullable_of("string", "The host the pane is on, as hosts named it (its pane_id is then 'HOST/%N'); null: this one."),
    }))
}

fn attention_definitions(kind: ToolKind) -> Value {
    let mut result = pane_properties();
    let pane_item = json!({"type": "object", "properties": pane_properties()});
    result.extend(props(json!({
        "outcome": {"type": "string", "enum": ["attention", "all", "timeout"], "description": "attention: the pane in the other keys needs someone; all: every pane does (panes); timeout: none did in time (error.kind timeout; pending holds each pane's state)."},
        "tail": {"type": "array", "items": {"type": "string"}, "description": "The pane's last rows."},
        "panes": {"type": "array", "items": pane_item, "description": "With all: every pane's report (on a timeout: those that got there)."},
        "pending": {"type": "array", "items": {"type": "object", "properties": {"pane_id": {"type": "string"}, "state": {"type": "string"}, "server": {"type": "string"}}}, "description": "The other panes, and the state each is in (with several servers, a pane here names its server)."},
        "problems": problems(),
        "elapsed_seconds": {"type": "number"},
        "effective_timeout": {"type": "number"},
    })));
    let target_props = |extra: Value| {
        let mut p = props(json!({
            "pane_ids": nullable_list("Panes to watch (e.g. ['%1', '%4']). Or give session_name. Neither: every pane of the session this server runs in."),
            "session_name": nullable("string", "A session whose every pane is watched, also panes made in it after the call began."),
            "session": nullable("string", "Same as session_name."),
            "socket_name": nullable("string", SOCKET_NAME),
            "hosts": nullable_list("Other hosts whose every pane is watched too, through ssh: [user@]host[:socket] as ssh takes it (the user's ssh config applies). A host must run tmux-wait (tmux-wait remote install HOST); its panes are 'HOST/%N'. A host that cannot be reached is said in problems and tried again; the others go on."),
            "servers": nullable_list("tmux servers of this host whose every pane is watched (socket names as tmux -L, or paths), instead of socket_name; ['*']: every server of the user. With hosts or servers, pane_ids and session_name are not taken."),
        }));
        p.extend(props(extra));
        p
    };
    match kind {
        ToolKind::WaitForAttention => json!({
            "name": "wait_for_attention",
            "title": "Wait until a pane needs someone",
            "description": "Wait, across many panes, until one of them needs someone, then say which and why. A pane needs someone when its shell is back at its prompt after a command (prompt, with the exit status where the shell reports it), when a program waits for an answer (asking: a [y/N] question, read, a password, a REPL or pager, a full-screen coding agent's question or its idle input box, with question holding the line it waits on), or when its program ended (exited); a bell counts too. Use it to supervise several agents or jobs at once instead of polling each pane.\n\nOnly changes after the call began count (now: true also returns a pane that is in such a state already). The first pane wins; all: true waits for every pane and returns them all in panes. until picks other states and events (working, prompt, asking, quiet, exited, bell). Text typed at a prompt and not submitted is never reported. It follows the panes' output as tmux streams it and asks the kernel who reads each terminal: no polling, and it answers within milliseconds.\n\nA timeout is a tool error (error.kind timeout) whose result still has pending: every pane's state.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": target_props(json!({
                    "until": nullable_list("States and events that end the wait: working, prompt, asking, quiet, exited, bell. Default: prompt, asking, exited, bell."),
                    "all": {"type": "boolean", "default": false, "description": "Wait until every pane needs someone, and report them all."},
                    "now": {"type": "boolean", "default": false, "description": "Also return a pane that is in such a state already."},
                    "timeout": {"type": "number", "default": 30, "description": "Seconds to wait. Capped by TMUX_WAIT_MAX_SECONDS; effective_timeout reports the value enforced."},
                    "timeout_s": {"type": "number", "description": "Same as timeout."},
                })),
            },
            "outputSchema": output_schema(
                "The pane that needs someone (or every pane, with all), and the others' states.",
                result,
                &["outcome", "pending", "elapsed_seconds", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        _ => json!({
            "name": "pane_states",
            "title": "What each pane waits for",
            "description": "Each pane's state now (working, prompt, asking, quiet, exited), why, since when, the command in its foreground and the question it asks. One look, no waiting: to wait for a change, use wait_for_attention.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": target_props(json!({})),
            },
            "outputSchema": output_schema(
                "Every pane and its state.",
                props(json!({"panes": {"type": "array", "items": pane_item}, "problems": problems()})),
                &["panes"],
            ),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        }),
    }
}

/// The tool as listed.
pub fn tool(kind: ToolKind) -> rmcp::model::Tool {
    serde_json::from_value(definition(kind)).expect("tool definitions are valid")
}

pub fn all() -> Vec<rmcp::model::Tool> {
    ToolKind::ALL.into_iter().map(tool).collect()
}
