//! The plugin's attention: a mark on each pane that needs someone, the
//! status segment (`#{@tmux_wait_attention}`: how many, and the first),
//! a window option for `window-status-format`, one notification per need,
//! the jump key and the menu's items.
//!
//! One process per server (`tmux-wait attention serve`, kept single by a
//! lock beside the socket) watches the panes of every session that has
//! attention on (the toggle's session option, else `@tmux-wait-attention`)
//! with the same watch as `any`. What it finds lives in tmux's own
//! options (`marks`), so the key, the menu and the hooks read and clear it
//! without talking to the process.
//!
//! What a person meets:
//! - a pane is marked, and they are told once, when it newly needs them:
//!   a question, a command back at its prompt, its program exited (the
//!   pane stays, `remain-on-exit`), a bell. A pane already marked is not
//!   told again, and keeps its place in the segment, however often its
//!   screen changes; a shell's first prompt in a new pane is no news;
//! - the pane they are in (the active pane of the window their client
//!   shows) is never marked: what happens there happens under their eyes.
//!   A question asked there that is still unanswered when they leave is
//!   marked then (without a message: they saw it);
//! - visiting a marked pane clears its mark (a question's comes back if
//!   they leave it unanswered); the pane's next work clears it too.
//!
//! The visits are seen by hooks appended to the user's own (`hooks`), and
//! only ours are removed when attention goes off.

mod hooks;
mod journal;
mod marks;
mod menu;
mod options;
mod others;
mod remote;
mod tell;

use hooks::{add_hooks, remove_hooks};
use journal::{End, Journal};
use marks::{
    Marked, clear_all, clear_session, mark, marked_one, next_minute, on_screen, outlasts_a_visit,
    refresh, regrow, reword, unmark, unwatch_all, watched, words_of,
};
pub use marks::{STATUS, WINDOW, visit};
pub use menu::menu;
pub use remote::go;

use super::machine::{Change, State, What};
use super::targets::Scope;
use super::watcher::{Watch, WatchEvent};
use super::{Profiles, QUIET_AFTER};
use crate::error::{Error, Kind, Result};
use crate::matcher::PatternList;
use crate::notify::{self, message_safe};
use crate::tmux::{Socket, SocketLock, lock_beside_socket};
use std::time::{Duration, Instant};

/// On for every session.
const GLOBAL: &str = "@tmux-wait-attention";
/// A session's own on or off (the toggle key sets it).
const SESSION: &str = "@tmux-wait-attention-session";
/// The watching process and what it watches (global).
const PID: &str = "@tmux-wait-attention-pid";
const SCOPE: &str = "@tmux-wait-attention-scope";
const ICON: &str = "@tmux-wait-icon-attention";
const PROFILES: &str = "@tmux-wait-profiles";
/// What "quiet" means, for attention as for the `Q` key.
const QUIET: &str = "@tmux-wait-quiet-seconds";
/// The lock that keeps one watching process per server, and how long a
/// new process waits for it.
const LOCK: &str = "tmux-wait-attention.lock";
const LOCK_PATIENCE: Duration = Duration::from_secs(3);

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
    let elsewhere = remote::signature(socket);
    if global {
        let sig = format!("server -{}{elsewhere}", offs.join(" -"));
        Ok((vec![Scope::Server], sig, offs))
    } else {
        let sig = format!("{}{elsewhere}", ons.join(" "));
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
        // (It ended without its own clearing up.)
        unwatch_all(socket);
        let _ = socket.run(["set-option", "-gqu", PID, ";", "set-option", "-gqu", SCOPE]);
    }
}

/// `attention sync`: start, restart or stop the watching process as the
/// options say (the plugin's load runs it; so does the toggle), and put
/// back the hooks a reload of the config replaced.
pub fn sync(socket: &Socket) -> Result<()> {
    let (scopes, sig, _) = wanted(socket)?;
    let pid = running(socket);
    if scopes.is_empty() {
        if let Some(p) = pid {
            stop(socket, p);
        }
        clear_all(socket);
        remove_hooks(socket);
        return Ok(());
    }
    // (A process still arming has said no scope yet: it is started
    // again, and the new one reads the options as they are now.)
    if pid.is_some() && option(socket, SCOPE) == sig {
        add_hooks(socket)?;
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
    tell_client(socket, client, &text);
    Ok(())
}

/// A message on the person's client, shown as long as a notification
/// (tmux before 3.3 takes no client for a message: its current one).
fn tell_client(socket: &Socket, client: Option<&str>, text: &str) {
    let ms = notify::Options::read(socket).message_ms.to_string();
    let text = message_safe(text, 200);
    let mut args = vec!["display-message", "-d", &ms];
    if let Some(c) = client
        && socket
            .version()
            .is_none_or(|v| v >= crate::tmux::Version(3, 3))
    {
        args.extend(["-c", c]);
    }
    args.push(&text);
    let _ = socket.run(&args);
}

/// `attention serve`: watch, mark, tell, until attention goes off (it is
/// stopped) or the server goes.
pub fn serve(socket: &Socket) -> Result<()> {
    // (A watch of a server that has just gone, on the same socket path,
    // lets go of the lock the moment it sees the server's end.)
    let deadline = Instant::now() + LOCK_PATIENCE;
    let SocketLock::Held(_lock) = lock_beside_socket(socket, LOCK, true, deadline) else {
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
    remote::start(socket, quiet_after(socket), &profiles);
    let ended = watch(socket, scopes, &sig, &offs, profiles);
    // The server is gone, and its hooks and options with it: the socket
    // may already be a new server's, which is not ours to clear.
    if ended
        .as_ref()
        .is_err_and(|e| matches!(e.kind, Kind::ServerExited | Kind::NoServer))
    {
        return Ok(());
    }
    // Ours only: a restarted process puts them back.
    remove_hooks(socket);
    if option(socket, PID).trim() == me {
        unwatch_all(socket);
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

/// `@tmux-wait-quiet-seconds`, else the default (said when it is no
/// duration).
fn quiet_after(socket: &Socket) -> Duration {
    let v = option(socket, QUIET);
    if v.trim().is_empty() {
        return QUIET_AFTER;
    }
    crate::config::parse_duration(&v).unwrap_or_else(|e| {
        say(socket, &format!("tmux-wait: {QUIET}: {e} (30 s is used)"));
        QUIET_AFTER
    })
}

/// Whether a change is a need the plugin marks: a state that needs
/// someone, or a bell. A pane that closed needs nobody: there is nothing
/// left to go to.
fn is_need(c: &Change) -> bool {
    match c.what {
        What::State(State::Exited) => c.status.reason != "pane_closed",
        What::State(s) => s.needs_someone(),
        What::Bell => true,
        What::Text => false,
    }
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
        quiet_after(socket),
        PatternList::new(&[], false, false, "--pattern").expect("no patterns"),
        profiles,
    )?;
    w.forget_closed = true;
    let opts = notify::Options::read(socket);
    let mut k = Keeper {
        journal: Journal::open(socket),
        tick: None,
    };
    k.refresh(socket);
    // The panes armed before every pane is: said together.
    let mut arming: Option<Vec<String>> = Some(Vec::new());
    loop {
        let Some(ev) = w.next(k.deadline())? else {
            // The segment's age, a minute on.
            k.refresh(socket);
            continue;
        };
        match ev {
            WatchEvent::Change(i, c) => {
                let e = &w.entries[i];
                if offs.contains(&e.row.session_id) {
                    continue;
                }
                let pane = e.row.pane_id.clone();
                if is_need(&c) {
                    needs(socket, &w, i, &pane, &c, &opts, &mut k);
                } else if matches!(c.what, What::State(State::Working | State::Quiet))
                    && let Some(m) = marked_one(socket, &pane)
                {
                    unmark(socket, &[pane]);
                    k.journal.over(socket, &m, End::MovedOn, None);
                    k.refresh(socket);
                }
            }
            WatchEvent::Gone(i) => {
                // A closed pane's marks went with it; a dead one keeps
                // its mark (it is there to go to: its change marked it).
                if w.entries[i]
                    .status()
                    .is_none_or(|s| s.reason != "pane_dead")
                {
                    k.refresh(socket);
                }
                // The sessions watched are gone (with every session, a new
                // one may come).
                if !every && w.entries.iter().all(|e| e.gone) {
                    return Ok(());
                }
            }
            WatchEvent::Armed(i) => {
                // A pane that came back (respawned): its exit is over. (A
                // new pane's own exit, marked before its watch was armed,
                // stays.)
                let e = &w.entries[i];
                if !offs.contains(&e.row.session_id) {
                    match &mut arming {
                        Some(panes) => panes.push(e.row.pane_id.clone()),
                        None => watched(socket, std::slice::from_ref(&e.row.pane_id)),
                    }
                }
                if e.respawned
                    && let Some(m) = marked_one(socket, &e.row.pane_id)
                    && m.mark == What::State(State::Exited).as_str()
                {
                    unmark(socket, std::slice::from_ref(&e.row.pane_id));
                    k.journal.over(socket, &m, End::Gone("respawned"), None);
                    k.refresh(socket);
                }
                // A question already asked when attention came on (turned
                // on, the plugin reloaded, the server restarted with it)
                // is marked, without telling: it waits for someone all
                // the same. (A pane made later says its question as a
                // change, and is told.)
                if !e.late
                    && !offs.contains(&e.row.session_id)
                    && let Some(st) = e.status()
                    && st.state == State::Asking
                    && marked_one(socket, &e.row.pane_id).is_none()
                {
                    let c = Change {
                        what: What::State(State::Asking),
                        status: st.clone(),
                        line: None,
                    };
                    let pane = e.row.pane_id.clone();
                    let seen = on_screen(socket).contains(&pane);
                    let began = mark(socket, &pane, &c, seen);
                    k.journal.needs(socket, &pane, &c, began, seen);
                    k.refresh(socket);
                }
            }
            WatchEvent::AllArmed => {
                watched(socket, &arming.take().unwrap_or_default());
                socket.run(["set-option", "-gq", SCOPE, sig])?;
            }
        }
    }
}

/// What the watch keeps beside the marks: the attention log, and when
/// the segment's age words turn next (boot clock).
struct Keeper {
    journal: Journal,
    tick: Option<f64>,
}

impl Keeper {
    /// Push the segment (see `marks::refresh`); with its age on, the
    /// next minute it turns is the watch's next deadline.
    fn refresh(&mut self, socket: &Socket) {
        self.tick = refresh(socket).map(|since| next_minute(since, crate::sys::clock::boot_secs()));
    }

    fn deadline(&self) -> Instant {
        let now = Instant::now();
        match self.tick {
            Some(t) => {
                let left = (t - crate::sys::clock::boot_secs()).clamp(0.05, 86_400.0);
                now + Duration::from_secs_f64(left)
            }
            None => now + Duration::from_secs(86_400),
        }
    }
}

/// Pane `i` newly needs someone (`c`): marked and told once; already
/// marked, only its word (or question) changes; under the person's eyes,
/// a question is held until they leave it. Each need goes in the log,
/// and so does the end of the one it replaces.
fn needs(
    socket: &Socket,
    w: &Watch,
    i: usize,
    pane: &str,
    c: &Change,
    opts: &notify::Options,
    k: &mut Keeper,
) {
    let prior = marked_one(socket, pane);
    let word = c.what.as_str();
    let words = words_of(c);
    // (A question that grew, written in pieces, is the one it was.)
    let grown = |m: &Marked| m.mark == word && m.what() != words && words.starts_with(m.what());
    let other = |m: &Marked| (m.mark != word || m.what() != words) && !grown(m);
    // The need a new one replaces: a question moved on from is answered
    // (but for a bell on it: the question is still there).
    let replaced = |k: &mut Keeper, m: &Marked, at: f64| {
        let end = if c.what == What::Bell {
            End::Gone("replaced")
        } else {
            End::MovedOn
        };
        k.journal.over(socket, m, end, Some(at));
    };
    if on_screen(socket).iter().any(|p| p == pane) {
        match prior {
            Some(m) if m.held && outlasts_a_visit(word) => {
                if grown(&m) {
                    regrow(socket, pane, c);
                } else if other(&m) {
                    let began = reword(socket, pane, c);
                    replaced(k, &m, began);
                    k.journal.needs(socket, pane, c, began, true);
                }
            }
            None if outlasts_a_visit(word) => {
                let began = mark(socket, pane, c, true);
                k.journal.needs(socket, pane, c, began, true);
                k.refresh(socket);
            }
            // Seen: what it held before is over, and this is no news.
            Some(m) => {
                unmark(socket, &[pane.to_owned()]);
                let end = if outlasts_a_visit(&m.mark) && c.what != What::Bell {
                    End::MovedOn
                } else {
                    End::Gone("seen")
                };
                k.journal.over(socket, &m, end, None);
                k.refresh(socket);
            }
            None => {}
        }
        return;
    }
    match prior {
        Some(m) => {
            if grown(&m) {
                regrow(socket, pane, c);
            } else if other(&m) {
                let began = reword(socket, pane, c);
                replaced(k, &m, began);
                k.journal.needs(socket, pane, c, began, false);
                if m.mark != word {
                    k.refresh(socket);
                }
            }
        }
        None => {
            let began = mark(socket, pane, c, false);
            k.journal.needs(socket, pane, c, began, false);
            k.refresh(socket);
            let r = w.report(i, c, false);
            tell::tell(socket, opts, &r, c);
        }
    }
}

/// After a menu's answer: say on the person's client what the keys did,
/// or why none were typed; a question that turned out to be a password
/// takes them to its pane instead.
pub fn told(
    socket: &Socket,
    client: Option<&str>,
    target: &str,
    r: &Result<super::answer::AnswerResult>,
) {
    let text = match r {
        Ok(a) => {
            let place = format!("{} {}:{}", a.pane_id, a.session, a.window);
            let choice = a.choice.as_deref().unwrap_or("");
            match (a.outcome, &a.now) {
                ("moved_on", Some(n)) => {
                    format!(
                        "tmux-wait: {place} answered {choice}: it moved on ({})",
                        n.state
                    )
                }
                ("moved_on", None) => {
                    format!("tmux-wait: {place} answered {choice}: its pane closed")
                }
                _ => format!(
                    "tmux-wait: {place} got {choice} but did not move on: it still asks {}",
                    a.question.as_deref().unwrap_or("")
                ),
            }
        }
        Err(e) if e.kind == Kind::Refused(crate::error::Refusal::Password) => {
            let mut args: Vec<String> = vec!["switch-client".into()];
            if let Some(c) = client {
                args.extend(["-c".into(), c.to_owned()]);
            }
            args.extend(["-t".into(), target.to_owned()]);
            args.extend(
                [
                    ";",
                    "select-window",
                    "-t",
                    target,
                    ";",
                    "select-pane",
                    "-t",
                    target,
                ]
                .map(String::from),
            );
            let _ = socket.run(&args);
            let _ = visit(socket);
            format!("tmux-wait: {target} reads a password: type it here yourself")
        }
        Err(e) => format!("tmux-wait: nothing typed: {}", e.message),
    };
    tell_client(socket, client, &text);
}

fn say(socket: &Socket, text: &str) {
    let _ = socket.run(["display-message", &message_safe(text, 300)]);
}

/// `attention next`: move the client to the pane that has waited longest
/// (not the one it shows), or say that none needs anyone.
pub fn next(socket: &Socket, client: Option<&str>) -> Result<()> {
    if !marks::next(socket, client)? {
        tell_client(socket, client, "tmux-wait: no pane needs you");
    }
    Ok(())
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
