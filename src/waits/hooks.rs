//! Channel hooks declared in tmux.conf: `set -g @tmux-wait-hook-NAME ACTION`
//! keeps one listener process per channel NAME that reports every signal,
//! for as long as the server runs and the option is set.
//!
//! ACTION `notify` shows the result in the status segment (✓/✗ and the
//! channel), as a message on the clients, and by bell or desktop
//! notification where those options are on. Any other ACTION is a tmux
//! command the listener runs (through `source-file -`, so it is parsed as
//! in tmux.conf) after setting `@tmux-wait-last-channel`, `-status`,
//! `-message`, `-seq` and `-coalesced`: the payload reaches the command only
//! as option values, which formats insert without expanding them again
//! (`#{q:@tmux-wait-last-message}` quotes it for a shell).
//!
//! A listener re-arms before it reports (a new `wait-for` client is started
//! as soon as the previous one wakes), so a signal sent while it reports is
//! waited for already; one that lands in the few milliseconds between wake
//! and re-arm is latched by tmux and delivered next. A second one in that
//! gap clears tmux's latch. Signals sent by `tmux-wait signal` are
//! numbered, so the listener sees the sequence move without a wake and
//! reports the latest result with the count of those coalesced into it.

use super::channel::{ChannelWaiter, Payload, Woke};
use super::store::store_for;
use crate::config::validate_channel;
use crate::error::{Kind, Result};
use crate::notify::{self, Done, Options};
use crate::state::{self, LastResult, WatchRecord};
use crate::tmux::Socket;
use serde::Serialize;
use std::time::{Duration, Instant};

pub const HOOK_PREFIX: &str = "@tmux-wait-hook-";
/// Seconds a hook's result stays in the status segment (0: until cleared).
const CLEAR_OPTION: &str = "@tmux-wait-hooks-clear";
const CLEAR_DEFAULT: u64 = 300;

/// The hooks declared on the server: (channel, action).
pub fn declared(socket: &Socket) -> Result<Vec<(String, String)>> {
    let lines = socket.run(["show-options", "-g"])?;
    let mut out = Vec::new();
    for line in lines {
        let Some(opt) = line.split_whitespace().next() else {
            continue;
        };
        let Some(name) = opt.strip_prefix(HOOK_PREFIX) else {
            continue;
        };
        if validate_channel(name).is_err() {
            continue;
        }
        let action = socket.run(["show-option", "-gqv", opt])?.join("\n");
        if !action.trim().is_empty() {
            out.push((name.to_owned(), action));
        }
    }
    Ok(out)
}

fn action_of(socket: &Socket, name: &str) -> Result<String> {
    Ok(socket
        .run(["show-option", "-gqv", &format!("{HOOK_PREFIX}{name}")])?
        .join("\n"))
}

/// `tmux-wait listen NAME`: the listener for one hook, until the server
/// goes, the hook's option is removed, or SIGTERM.
pub fn listen(socket: &Socket, name: &str) -> Result<()> {
    validate_channel(name)?;
    let store = store_for(socket)?;
    let Some(_lock) = store.listener_lock(name) else {
        return Ok(()); // another listener for this channel runs already
    };
    let id = state::new_id();
    store.add(&WatchRecord {
        id: id.clone(),
        pid: std::process::id(),
        pane_id: String::new(),
        kind: "listener".into(),
        label: name.to_owned(),
        started: state::now_secs(),
        timeout_seconds: 0.0,
        channel: name.to_owned(),
    })?;
    let result = run_listener(socket, &store, name, &id);
    store.remove(&id);
    match result {
        Err(e) if matches!(e.kind, Kind::ServerExited | Kind::NoServer) => Ok(()),
        other => other,
    }
}

fn run_listener(socket: &Socket, store: &state::Store, name: &str, id: &str) -> Result<()> {
    let [r, q, seen] = super::channel::option_names(name);
    let read_seq = || -> Result<u64> {
        Ok(socket
            .run(["show-option", "-gqv", &q])?
            .first()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    };
    let mut last_seq = read_seq()?;
    let mut waiter = ChannelWaiter::spawn(socket, name)?;
    let mut clear_at: Option<Instant> = None;
    let mut fired = 0u64;
    // A wake found without the waiter (see below): its waiter is still armed.
    let mut recovered: Option<Woke> = None;
    loop {
        let (woke, rearm) = match recovered.take() {
            Some(w) => (w, false),
            None => (waiter.wait(socket, clear_at)?, true),
        };
        match woke {
            Woke::Deadline => {
                if store.last().is_some_and(|l| l.id.starts_with(id)) {
                    store.clear_last();
                    notify::refresh_status(socket, store, &Options::read(socket));
                }
                clear_at = None;
            }
            Woke::Signalled(payload, seq) => {
                // Re-arm first, so a signal sent while we report is waited for.
                if rearm {
                    waiter = ChannelWaiter::spawn(socket, name)?;
                }
                let action = action_of(socket, name)?;
                if action.trim().is_empty() {
                    let _ = waiter.cancel(socket);
                    return Ok(());
                }
                let coalesced = if payload.is_some() && seq > last_seq + 1 {
                    seq - last_seq - 1
                } else {
                    0
                };
                if payload.is_some() {
                    last_seq = last_seq.max(seq);
                }
                fired += 1;
                report(
                    socket,
                    store,
                    name,
                    &format!("{id}-{fired}"),
                    &action,
                    payload.as_ref(),
                    seq,
                    coalesced,
                );
                let clear = socket
                    .run(["show-option", "-gqv", CLEAR_OPTION])
                    .ok()
                    .and_then(|v| v.first().and_then(|s| s.parse().ok()))
                    .unwrap_or(CLEAR_DEFAULT);
                clear_at = (clear > 0).then(|| Instant::now() + Duration::from_secs(clear));
                // Signals sent between the wake and the re-arm: tmux latches
                // one (the new waiter wakes at once), but a second one clears
                // its latch. When tmux-wait signals arrived that no wake
                // delivers, report them now, as coalesced into the latest.
                if read_seq()? > last_seq {
                    recovered = match waiter.wait(socket, Some(Instant::now() + GAP_GRACE))? {
                        Woke::Deadline => {
                            let now_seq = read_seq()?;
                            let payload = socket
                                .run(["show-option", "-gqv", &r])?
                                .first()
                                .and_then(|v| serde_json::from_str::<Payload>(v).ok());
                            let _ = socket.run(["set-option", "-g", &seen, &now_seq.to_string()]);
                            Some(Woke::Signalled(payload, now_seq))
                        }
                        // The latched one: handle it as any wake (re-arming).
                        woke => {
                            waiter = ChannelWaiter::spawn(socket, name)?;
                            Some(woke)
                        }
                    };
                }
            }
        }
    }
}

/// How long a re-armed listener waits for tmux's latch before it concludes
/// that signals sent during the re-arm were lost to a cleared latch.
const GAP_GRACE: Duration = Duration::from_millis(50);

#[allow(clippy::too_many_arguments)]
fn report(
    socket: &Socket,
    store: &state::Store,
    name: &str,
    id: &str,
    action: &str,
    payload: Option<&Payload>,
    seq: u64,
    coalesced: u64,
) {
    let status = payload.and_then(|p| p.status);
    let message = payload.and_then(|p| p.message.clone()).unwrap_or_default();
    let ok = status.is_none_or(|s| s == 0);
    let mut label = name.to_owned();
    if coalesced > 0 {
        label.push_str(&format!(" (+{coalesced} coalesced)"));
    }
    if !message.is_empty() {
        label.push_str(": ");
        label.push_str(&message);
    }
    let last = LastResult {
        id: id.to_owned(),
        pane_id: String::new(),
        label,
        outcome: crate::report::WatchOutcome::Signalled,
        ok,
        elapsed_seconds: 0.0,
        finished: state::now_secs(),
    };
    let _ = store.set_last(&last);
    let _ = store.set_hook_last(name, &last);
    let mut opts = Options::read(socket);
    let status_text = status.map(|s| s.to_string()).unwrap_or_default();
    let _ = socket.run([
        "set-option",
        "-g",
        "@tmux-wait-last-channel",
        name,
        ";",
        "set-option",
        "-g",
        "@tmux-wait-last-status",
        &status_text,
        ";",
        "set-option",
        "-g",
        "@tmux-wait-last-message",
        &message,
        ";",
        "set-option",
        "-g",
        "@tmux-wait-last-seq",
        &seq.to_string(),
        ";",
        "set-option",
        "-g",
        "@tmux-wait-last-coalesced",
        &coalesced.to_string(),
    ]);
    // The status segment last: who sees the result there finds the
    // @tmux-wait-last-* options already set.
    notify::refresh_status(socket, store, &opts);
    if action.trim() == "notify" {
        // The watch hook (@tmux-wait-on-done) is for watches, not channels.
        opts.hook.clear();
        notify::announce(
            socket,
            &opts,
            &Done {
                last,
                line: String::new(),
                channel: String::new(),
                exit_status: status,
                pane_tty: String::new(),
            },
        );
    } else {
        let _ = socket.run_with_input(["source-file", "-"], action);
    }
}

/// What `hooks sync` did.
#[derive(Debug, Serialize)]
pub struct Synced {
    pub started: Vec<String>,
    pub stopped: Vec<String>,
}

/// `tmux-wait hooks sync`: one listener per declared hook, none for hooks
/// no longer declared. Safe to run on every config reload.
pub fn sync(socket: &Socket) -> Result<Synced> {
    let store = store_for(socket)?;
    let declared = declared(socket)?;
    let running = store.listeners();
    let mut started = Vec::new();
    for (name, _) in &declared {
        if !running.iter().any(|l| &l.label == name) {
            spawn_listener(socket, name)?;
            started.push(name.clone());
        }
    }
    let mut stopped = Vec::new();
    for l in running {
        if !declared.iter().any(|(n, _)| *n == l.label) {
            state::terminate(l.pid);
            stopped.push(l.label);
        }
    }
    Ok(Synced { started, stopped })
}

/// Start `tmux-wait listen NAME` in its own session, detached from us.
fn spawn_listener(socket: &Socket, name: &str) -> Result<()> {
    socket
        .spawn_helper(&["listen", name], "a hook listener")
        .map(drop)
}

/// One line of `hooks list`.
#[derive(Debug, Serialize)]
pub struct HookInfo {
    pub channel: String,
    pub action: String,
    pub listener_pid: Option<u32>,
    pub last: Option<LastResult>,
}

pub fn list(socket: &Socket) -> Result<Vec<HookInfo>> {
    let store = store_for(socket)?;
    let listeners = store.listeners();
    Ok(declared(socket)?
        .into_iter()
        .map(|(channel, action)| HookInfo {
            listener_pid: listeners.iter().find(|l| l.label == channel).map(|l| l.pid),
            last: store.hook_last(&channel),
            channel,
            action,
        })
        .collect())
}

pub fn list_human(hooks: &[HookInfo]) -> String {
    if hooks.is_empty() {
        return "no hooks declared (set -g @tmux-wait-hook-NAME notify)".into();
    }
    let now = state::now_secs();
    let mut out = String::from("CHANNEL          LISTENER  LAST                ACTION");
    for h in hooks {
        let listener = h
            .listener_pid
            .map(|p| p.to_string())
            .unwrap_or_else(|| "none".into());
        let last = h
            .last
            .as_ref()
            .map(|l| {
                format!(
                    "{} {}s ago",
                    if l.ok { "ok" } else { "failed" },
                    now.saturating_sub(l.finished)
                )
            })
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "\n{:<16} {:<9} {:<19} {}",
            h.channel,
            listener,
            last,
            crate::report::sanitize(&h.action)
        ));
    }
    out
}
