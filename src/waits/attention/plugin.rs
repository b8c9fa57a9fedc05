//! The plugin's attention: a mark on each pane that needs someone, the
//! status segment (`#{@tmux_wait_attention}`: how many, and the first),
//! a window option for `window-status-format`, a notification per change,
//! the jump key and the menu's items.
//!
//! One process per server (`tmux-wait attention serve`, kept single by a
//! lock beside the socket) watches the panes of every session that has
//! attention on (the toggle's session option, else `@tmux-wait-attention`)
//! with the same watch as `any`. What it finds lives in tmux's own
//! options, so the key, the menu and the hooks read and clear it without
//! talking to the process:
//!
//! - pane options `@tmux-wait-attention-mark` (the state), `-since` and
//!   `-what` (the state and the question, for the menu);
//! - the window option `@tmux-wait-attention-window` (the state of the
//!   window's first marked pane);
//! - the global `@tmux_wait_attention` (the segment).
//!
//! A pane on a person's screen (the active pane of an attached client's
//! window) gets no mark and no notification; a mark clears when its pane
//! is visited. The visit is seen by hooks appended to the user's own
//! (`set-hook -a`: `after-select-pane`, `window-pane-changed`,
//! `session-window-changed`, `client-session-changed`), and only ours are
//! removed when attention goes off.

mod hooks;

use hooks::{add_hooks, remove_hooks};

use super::machine::{Change, State, What};
use super::targets::Scope;
use super::watcher::{Event, Watch};
use super::{Profiles, QUIET_AFTER};
use crate::error::{Error, Kind, Result};
use crate::matcher::PatternList;
use crate::notify::{self, format_safe};
use crate::tmux::protocol::quote;
use crate::tmux::{Socket, SocketLock, lock_beside_socket};
use std::time::{Duration, Instant};

/// On for every session.
const GLOBAL: &str = "@tmux-wait-attention";
/// A session's own on or off (the toggle key sets it).
const SESSION: &str = "@tmux-wait-attention-session";
/// The watching process and what it watches (global).
const PID: &str = "@tmux-wait-attention-pid";
const SCOPE: &str = "@tmux-wait-attention-scope";
/// Pane options: the mark, when it was set, and what it says.
const MARK: &str = "@tmux-wait-attention-mark";
const SINCE: &str = "@tmux-wait-attention-since";
const WHAT: &str = "@tmux-wait-attention-what";
/// The window option for `window-status-format`.
pub const WINDOW: &str = "@tmux-wait-attention-window";
/// The segment `#{tmux_wait_attention}` shows.
pub const STATUS: &str = "@tmux_wait_attention";
const ICON: &str = "@tmux-wait-icon-attention";
const PROFILES: &str = "@tmux-wait-profiles";
/// The lock that keeps one watching process per server.
const LOCK: &str = "tmux-wait-attention.lock";

fn on(v: &str) -> bool {
    matches!(v.trim(), "on" | "1" | "yes" | "true")
}

fn off(v: &str) -> bool {
    matches!(v.trim(), "off" | "0" | "no" | "false")
}

fn option(socket: &Socket, name: &str) -> String {
    socket
        .run(["show-option", "-gqv", name])
        .map(|l| l.join("\n"))
        .unwrap_or_default()
}

/// What attention covers now: the scopes to watch, a word that names
/// them (to tell whether the running process watches the same), and the
/// sessions turned off while it is on for every session.
fn wanted(socket: &Socket) -> Result<(Vec<Scope>, String, Vec<String>)> {
    let global = on(&option(socket, GLOBAL));
    let rows = socket.run([
        "list-sessions",
        "-F",
        &format!("#{{session_id}}\t#{{{SESSION}}}"),
    ])?;
    let mut ons = Vec::new();
    let mut offs = Vec::new();
    for l in rows {
        let (id, v) = l.split_once('\t').unwrap_or((l.as_str(), ""));
        if on(v) || (global && !off(v)) {
            ons.push(id.to_owned());
        } else {
            offs.push(id.to_owned());
        }
    }
    if global {
        let sig = format!("server -{}", offs.join(" -"));
        Ok((vec![Scope::Server], sig, offs))
    } else {
        let sig = ons.join(" ");
        Ok((ons.into_iter().map(Scope::Session).collect(), sig, offs))
    }
}

/// The pid of the watching process, if it runs.
fn running(socket: &Socket) -> Option<u32> {
    let pid: u32 = option(socket, PID).trim().parse().ok()?;
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok();
    let ours = match cmd {
        Some(c) => {
            let words: Vec<&[u8]> = c.split(|&b| b == 0).collect();
            words.contains(&&b"attention"[..]) && words.contains(&&b"serve"[..])
        }
        // No /proc: trust a signal check.
        None => nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok(),
    };
    ours.then_some(pid)
}

/// Stop the watching process and wait until it let go of its lock. (One
/// stopped as it starts, before it handles signals, says nothing: its pid
/// is taken back here.)
fn stop(socket: &Socket, pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = lock_beside_socket(socket, LOCK, true, Instant::now() + Duration::from_secs(3));
    if option(socket, PID).trim() == pid.to_string() {
        let _ = socket.run(["set-option", "-gqu", PID, ";", "set-option", "-gqu", SCOPE]);
    }
}

/// `attention sync`: start, restart or stop the watching process as the
/// options say (the plugin's load runs it; so does the toggle).
pub fn sync(socket: &Socket) -> Result<()> {
    let (scopes, sig, _) = wanted(socket)?;
    let pid = running(socket);
    if scopes.is_empty() {
        if let Some(p) = pid {
            stop(socket, p);
        }
        clear_all(socket);
        return Ok(());
    }
    // (A process still arming has said no scope yet: it is started
    // again, and the new one reads the options as they are now.)
    if pid.is_some() && option(socket, SCOPE) == sig {
        return Ok(());
    }
    if let Some(p) = pid {
        stop(socket, p);
    }
    socket
        .absolute()
        .spawn_helper(&["attention", "serve"], "tmux-wait's attention")?;
    Ok(())
}

/// `attention toggle -t SESSION`: attention on or off for one session.
pub fn toggle(socket: &Socket, session: &str, client: Option<&str>) -> Result<()> {
    let lines = socket
        .run([
            "list-panes",
            "-s",
            "-t",
            session,
            "-F",
            &format!("#{{session_id}}\t#{{{SESSION}}}\t#{{session_name}}"),
        ])
        .map_err(|e| match e.kind {
            Kind::NoPane | Kind::Tmux => Error::new(
                Kind::NoPane,
                format!("no session matches '{}'", session.escape_debug()),
            ),
            _ => e,
        })?;
    let line = lines.first().cloned().unwrap_or_default();
    let f: Vec<&str> = line.splitn(3, '\t').collect();
    let (id, v, name) = (
        f[0],
        f.get(1).copied().unwrap_or(""),
        f.get(2).copied().unwrap_or(""),
    );
    let was = on(v) || (!off(v) && on(&option(socket, GLOBAL)));
    let now = if was { "off" } else { "on" };
    socket.run(["set-option", "-q", "-t", id, SESSION, now])?;
    if was {
        clear_session(socket, id);
    }
    sync(socket)?;
    let text = format!("tmux-wait: attention {now} for session {name}");
    tell_client(socket, client, &format_safe(&text, 200));
    Ok(())
}

/// A message on the person's client (tmux before 3.3 takes no client for
/// a message: its current one).
fn tell_client(socket: &Socket, client: Option<&str>, text: &str) {
    let mut args = vec!["display-message"];
    if let Some(c) = client
        && socket
            .version()
            .is_none_or(|v| v >= crate::tmux::Version(3, 3))
    {
        args.extend(["-c", c]);
    }
    args.push(text);
    let _ = socket.run(&args);
}

/// `attention serve`: watch, mark, tell, until attention goes off (it is
/// stopped) or the server goes.
pub fn serve(socket: &Socket) -> Result<()> {
    let SocketLock::Held(_lock) = lock_beside_socket(socket, LOCK, true, Instant::now()) else {
        return Ok(()); // one runs already
    };
    // Said first, read after: a `sync` that changed the options and saw
    // no process is followed by this reading of them.
    let me = std::process::id().to_string();
    socket.run(["set-option", "-gq", PID, &me])?;
    let (scopes, sig, offs) = wanted(socket)?;
    if scopes.is_empty() {
        clear_all(socket);
        let _ = socket.run(["set-option", "-gqu", PID]);
        return Ok(());
    }
    add_hooks(socket)?;
    let profiles = match Profiles::load(user_profiles(socket).as_deref()) {
        Ok(p) => p,
        Err(e) => {
            say(
                socket,
                &format!("tmux-wait: {} (the shipped profiles are used)", e.message),
            );
            Profiles::shipped()
        }
    };
    let ended = watch(socket, scopes, &sig, &offs, profiles);
    // Ours only: a restarted process puts them back.
    remove_hooks(socket);
    if option(socket, PID).trim() == me {
        let _ = socket.run(["set-option", "-gqu", PID, ";", "set-option", "-gqu", SCOPE]);
    }
    match ended {
        Err(e)
            if matches!(
                e.kind,
                Kind::Interrupted(_) | Kind::ServerExited | Kind::NoServer
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

fn user_profiles(socket: &Socket) -> Option<std::path::PathBuf> {
    let p = option(socket, PROFILES);
    let p = p.trim();
    if p.is_empty() {
        return None;
    }
    let path = match p.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(rest))?,
        None => std::path::PathBuf::from(p),
    };
    Some(path)
}

/// Watch `scopes` (named `sig`, said in `@tmux-wait-attention-scope`
/// once every pane is watched), leaving out the sessions `offs`.
fn watch(
    socket: &Socket,
    scopes: Vec<Scope>,
    sig: &str,
    offs: &[String],
    profiles: Profiles,
) -> Result<()> {
    let every = scopes.contains(&Scope::Server);
    let mut w = Watch::start(
        socket,
        scopes,
        QUIET_AFTER,
        PatternList::new(&[], false, false, "--pattern").expect("no patterns"),
        profiles,
    )?;
    let opts = notify::Options::read(socket);
    loop {
        let Some(ev) = w.next(Instant::now() + Duration::from_secs(86_400))? else {
            continue;
        };
        match ev {
            Event::Change(i, c) => {
                let e = &w.entries[i];
                if offs.contains(&e.row.session_id) {
                    continue;
                }
                let needs = match c.what {
                    What::State(s) => s.needs_someone(),
                    What::Bell => true,
                    What::Text => false,
                };
                let pane = e.row.pane_id.clone();
                if needs {
                    if !on_screen(socket).contains(&pane) {
                        mark(socket, &pane, &c);
                        refresh(socket);
                        let r = w.report(i, &c, false);
                        tell(socket, &opts, &r, &c);
                    }
                } else if matches!(c.what, What::State(State::Working | State::Quiet)) {
                    unmark(socket, &[pane]);
                    refresh(socket);
                }
            }
            Event::Gone(i) => {
                let pane = w.entries[i].row.pane_id.clone();
                unmark(socket, &[pane]);
                refresh(socket);
                // The sessions watched are gone (with every session, a new
                // one may come).
                if !every && w.entries.iter().all(|e| e.gone) {
                    return Ok(());
                }
            }
            Event::AllArmed => {
                socket.run(["set-option", "-gq", SCOPE, sig])?;
            }
            Event::Armed(_) => {}
        }
    }
}

/// The active pane of every attached client's window: on a person's
/// screen.
fn on_screen(socket: &Socket) -> Vec<String> {
    socket
        .run(["list-clients", "-F", "#{?client_control_mode,,#{pane_id}}"])
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.starts_with('%'))
        .collect()
}

fn mark(socket: &Socket, pane: &str, c: &Change) {
    let mut what = c.what.as_str().to_owned();
    if let Some(q) = c.status.question.as_ref().or(c.line.as_ref()) {
        what.push_str(": ");
        what.push_str(q);
    }
    let since = format!("{:.3}", super::pane::now_secs());
    let _ = socket.run([
        "set-option",
        "-pq",
        "-t",
        pane,
        MARK,
        c.what.as_str(),
        ";",
        "set-option",
        "-pq",
        "-t",
        pane,
        SINCE,
        &since,
        ";",
        "set-option",
        "-pq",
        "-t",
        pane,
        WHAT,
        &what,
    ]);
}

fn unmark(socket: &Socket, panes: &[String]) {
    let mut args: Vec<String> = Vec::new();
    for p in panes {
        for o in [MARK, SINCE, WHAT] {
            if !args.is_empty() {
                args.push(";".into());
            }
            args.extend(["set-option", "-pqu", "-t", p, o].map(String::from));
        }
    }
    if !args.is_empty() {
        let _ = socket.run(&args);
    }
}

/// A marked pane, as the options say.
#[derive(Debug, Clone)]
struct Marked {
    pane: String,
    window: String,
    mark: String,
    since: f64,
    what: String,
    place: String,
}

const MARKED_FORMAT: &str = "#{pane_id}\t#{window_id}\t#{@tmux-wait-attention-mark}\t#{@tmux-wait-attention-since}\t#{@tmux-wait-attention-what}\t#{session_name}:#{window_index}";

/// Every marked pane, the longest waiting first.
fn marked(socket: &Socket) -> Vec<Marked> {
    let mut out: Vec<Marked> = Vec::new();
    for l in socket
        .run(["list-panes", "-a", "-F", MARKED_FORMAT])
        .unwrap_or_default()
    {
        let f: Vec<&str> = l.splitn(6, '\t').collect();
        if f.len() < 6 || f[2].is_empty() || out.iter().any(|m| m.pane == f[0]) {
            continue;
        }
        out.push(Marked {
            pane: f[0].to_owned(),
            window: f[1].to_owned(),
            mark: f[2].to_owned(),
            since: f[3].parse().unwrap_or(0.0),
            what: f[4].to_owned(),
            place: f[5].to_owned(),
        });
    }
    out.sort_by(|a, b| a.since.total_cmp(&b.since));
    out
}

/// Push the segment and the windows' marks from the panes' marks.
fn refresh(socket: &Socket) {
    let m = marked(socket);
    let icon = match option(socket, ICON) {
        i if i.is_empty() => "⚑".to_owned(),
        i => i,
    };
    let segment = match m.first() {
        None => String::new(),
        Some(first) => format_safe(
            &format!("{icon}{} {} {}", m.len(), first.place, first.mark),
            80,
        ),
    };
    let mut args: Vec<String> = ["set-option", "-gq", STATUS, &segment]
        .map(String::from)
        .to_vec();
    let windows = socket
        .run([
            "list-windows",
            "-a",
            "-F",
            &format!("#{{window_id}}\t#{{{WINDOW}}}"),
        ])
        .unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    for l in &windows {
        let (w, cur) = l.split_once('\t').unwrap_or((l.as_str(), ""));
        if seen.contains(&w) {
            continue;
        }
        seen.push(w);
        let want = m
            .iter()
            .find(|x| x.window == w)
            .map(|x| x.mark.clone())
            .unwrap_or_default();
        if want != cur {
            args.push(";".into());
            if want.is_empty() {
                args.extend(["set-option", "-wqu", "-t", w, WINDOW].map(String::from));
            } else {
                args.extend(["set-option", "-wq", "-t", w, WINDOW, &want].map(String::from));
            }
        }
    }
    let _ = socket.run(&args);
}

/// A notification for a change, as the options say (the bell rings on
/// the clients' terminals: one written into the pane would be seen as the
/// pane's own bell).
fn tell(socket: &Socket, opts: &notify::Options, r: &super::PaneReport, c: &Change) {
    let mut text = format!(
        "tmux-wait {} {}:{} ({}) {}",
        opts_icon(socket),
        r.session,
        r.window,
        r.pane_id,
        r.state
    );
    if let Some(q) = r.question.as_ref().or(r.line.as_ref()) {
        text.push_str(": ");
        text.push_str(q);
    } else if let Some(cmd) = &r.command {
        text.push_str(&format!(" ({cmd})"));
    }
    let env = [
        ("TMUX_WAIT_PANE", r.pane_id.clone()),
        ("TMUX_WAIT_OUTCOME", "attention".to_owned()),
        ("TMUX_WAIT_LABEL", r.state.to_owned()),
        ("TMUX_WAIT_OK", "1".to_owned()),
        ("TMUX_WAIT_LINE", r.question.clone().unwrap_or_default()),
        (
            "TMUX_WAIT_EXIT_STATUS",
            c.status
                .exit_status
                .map(|s| s.to_string())
                .unwrap_or_default(),
        ),
        ("TMUX_WAIT_ID", String::new()),
        ("TMUX_WAIT_ELAPSED", String::new()),
        ("TMUX_WAIT_CHANNEL", String::new()),
    ];
    let mut o = opts.clone();
    o.bell = false;
    notify::tell(socket, &o, &text, "", &env);
    if opts.bell {
        for tty in socket
            .run([
                "list-clients",
                "-F",
                "#{?client_control_mode,,#{client_tty}}",
            ])
            .unwrap_or_default()
        {
            notify::ring_bell(&tty);
        }
    }
}

fn opts_icon(socket: &Socket) -> String {
    match option(socket, ICON) {
        i if i.is_empty() => "⚑".to_owned(),
        i => i,
    }
}

fn say(socket: &Socket, text: &str) {
    let _ = socket.run(["display-message", &format_safe(text, 300)]);
}

/// `attention visit`: the marks of the panes on the clients' screens go.
pub fn visit(socket: &Socket) -> Result<()> {
    let seen = on_screen(socket);
    let m: Vec<String> = marked(socket)
        .into_iter()
        .filter(|x| seen.contains(&x.pane))
        .map(|x| x.pane)
        .collect();
    if !m.is_empty() {
        unmark(socket, &m);
        refresh(socket);
    }
    Ok(())
}

/// `attention next`: move the client to the pane that has waited longest
/// (not the one it shows).
pub fn next(socket: &Socket, client: Option<&str>) -> Result<()> {
    // The pane the client shows (list-clients: tmux 3.2a's display-message
    // takes no client with -p).
    let here = match client {
        Some(c) => socket
            .run(["list-clients", "-F", "#{client_name}\t#{pane_id}"])?
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{c}\t")).map(str::to_owned))
            .unwrap_or_default(),
        None => socket
            .run(["display-message", "-p", "#{pane_id}"])?
            .first()
            .cloned()
            .unwrap_or_default(),
    };
    let Some(to) = marked(socket).into_iter().find(|m| m.pane != here) else {
        tell_client(socket, client, "tmux-wait: no pane needs you");
        return Ok(());
    };
    let mut args: Vec<String> = vec!["switch-client".into()];
    if let Some(c) = client {
        args.extend(["-c".into(), c.to_owned()]);
    }
    args.extend(["-t".into(), to.pane.clone()]);
    args.extend(
        [
            ";",
            "select-window",
            "-t",
            &to.pane,
            ";",
            "select-pane",
            "-t",
            &to.pane,
        ]
        .map(String::from),
    );
    socket.run(&args)?;
    unmark(socket, &[to.pane]);
    refresh(socket);
    Ok(())
}

/// The menu's items: one per marked pane (its name, and the tmux command
/// that goes there). Names are data: `#` doubled.
pub fn menu_items(socket: &Socket) -> Vec<(String, String)> {
    marked(socket)
        .into_iter()
        .map(|m| {
            let name = format_safe(&format!("go to {} {} {}", m.pane, m.place, m.what), 60);
            let p = quote(&m.pane);
            let cmd = format!("switch-client -t {p} ; select-window -t {p} ; select-pane -t {p}");
            (name, cmd)
        })
        .collect()
}

/// Attention is off everywhere: no marks, no segment, no hooks of ours.
fn clear_all(socket: &Socket) {
    let panes: Vec<String> = marked(socket).into_iter().map(|m| m.pane).collect();
    unmark(socket, &panes);
    refresh(socket);
    remove_hooks(socket);
}

/// Attention went off for one session: its panes' marks go.
fn clear_session(socket: &Socket, session: &str) {
    let panes: Vec<String> = socket
        .run(["list-panes", "-s", "-t", session, "-F", "#{pane_id}"])
        .unwrap_or_default();
    unmark(socket, &panes);
    refresh(socket);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_and_off_words() {
        assert!(on("on") && on(" yes") && !on("") && !on("off"));
        assert!(off("off") && off("0") && !off(""));
    }
}
