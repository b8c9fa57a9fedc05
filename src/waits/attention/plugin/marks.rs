//! The marks, as tmux's own options hold them, so that the key, the menu
//! and the hooks read and clear them without talking to the watching
//! process:
//!
//! - pane options `@tmux-wait-attention-mark` (the state or event),
//!   `-since` (when the need began, on the clock of `sys::clock`, which
//!   no setting of the wall clock moves; a mark keeps it, and its place,
//!   when its word changes), `-began` (when its current word or question
//!   began: how long that one waited, and what the menu's answers name)
//!   and `-what` (with the question, for the menu); `-held` while the
//!   need began under a person's eyes and they have not left the pane yet
//!   (not counted, not shown);
//! - the window option `@tmux-wait-attention-window` (the mark of the
//!   window's longest-waiting pane);
//! - the global `@tmux_wait_attention` (the segment) and
//!   `@tmux-wait-attention-visit` (some pane is marked or held: the visit
//!   hooks start a process only then).
//!
//! "On a person's screen" is the active pane of the window an attached
//! client shows: a pane beside it in a split may be out of the person's
//! sight, and is marked.

use super::super::answer::BEGAN;
use super::super::machine::{Change, State, What};
use super::ICON;
use crate::notify::format_safe;
use crate::tmux::Socket;
use crate::tmux::protocol::quote;

pub(super) use super::options::Marked;
use super::options::{AGE, HELD, MARK, MARKED, MARKED_FORMAT, SINCE, VISIT, WATCHED, WHAT};
pub use super::options::{STATUS, WINDOW};

/// Every marked or held pane, the longest waiting first.
pub(super) fn marked(socket: &Socket) -> Vec<Marked> {
    panes_and_marks(socket).1
}

/// Every pane of the server, and [`marked`]'s marks.
fn panes_and_marks(socket: &Socket) -> (Vec<String>, Vec<Marked>) {
    let mut out: Vec<Marked> = Vec::new();
    let mut panes: Vec<String> = Vec::new();
    for l in socket
        .run(["list-panes", "-a", "-F", MARKED_FORMAT])
        .unwrap_or_default()
    {
        let Some(m) = Marked::parse(&l, &mut panes) else {
            continue;
        };
        if !out.iter().any(|x| x.pane == m.pane) {
            out.push(m);
        }
    }
    out.sort_by(|a, b| a.since.total_cmp(&b.since));
    (panes, out)
}

/// One pane's mark, if it has one.
pub(super) fn marked_one(socket: &Socket, pane: &str) -> Option<Marked> {
    let line = socket
        .run(["display-message", "-p", "-t", pane, MARKED_FORMAT])
        .ok()?
        .into_iter()
        .next()?;
    Marked::parse(&line, &mut Vec::new()).filter(|m| m.pane == pane)
}

/// The menu's words for a change: the state or event, and the question.
fn what_of(c: &Change) -> String {
    let mut what = c.what.as_str().to_owned();
    if let Some(q) = c.status.question.as_ref().or(c.line.as_ref()) {
        what.push_str(": ");
        what.push_str(q);
    }
    what
}

/// The menu's words for a change (the mark's `-what`): whether a marked
/// pane's need is another one now.
pub(super) fn words_of(c: &Change) -> String {
    what_of(c)
}

/// Mark `pane` for `c`, as of now; `held`: the person sees it now.
/// Returns when (boot clock).
pub(super) fn mark(socket: &Socket, pane: &str, c: &Change, held: bool) -> f64 {
    let now = crate::sys::clock::boot_secs();
    let since = format!("{now:.3}");
    let what = what_of(c);
    let mut args: Vec<&str> = vec![
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
        BEGAN,
        &since,
        ";",
        "set-option",
        "-pq",
        "-t",
        pane,
        WHAT,
        &what,
        ";",
        "set-option",
        "-pq",
    ];
    if held {
        args.extend(["-t", pane, HELD, "1"]);
    } else {
        args.extend(["-u", "-t", pane, HELD]);
    }
    let _ = socket.run(&args);
    now
}

/// A marked pane's need changed its word (asking, then exited) or its
/// question: the mark says so; when it began, and whether it was told,
/// stay. Returns when the new one began (boot clock).
pub(super) fn reword(socket: &Socket, pane: &str, c: &Change) -> f64 {
    let what = what_of(c);
    let now = crate::sys::clock::boot_secs();
    let began = format!("{now:.3}");
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
        WHAT,
        &what,
        ";",
        "set-option",
        "-pq",
        "-t",
        pane,
        BEGAN,
        &began,
    ]);
    now
}

/// A marked pane's question grew (a program that writes it in pieces:
/// apt-get's `Do you want to continue?`, then ` [Y/n]`): the menu's words
/// follow; it is the same need.
pub(super) fn regrow(socket: &Socket, pane: &str, c: &Change) {
    let what = what_of(c);
    let _ = socket.run(["set-option", "-pq", "-t", pane, WHAT, &what]);
}

pub(super) fn unmark(socket: &Socket, panes: &[String]) {
    let mut args: Vec<String> = Vec::new();
    for p in panes {
        for o in [MARK, SINCE, BEGAN, WHAT, HELD] {
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

/// `panes` are watched now (one command list).
pub(super) fn watched(socket: &Socket, panes: &[String]) {
    set_each(socket, panes, &["set-option", "-pq"], WATCHED, Some("1"));
}

/// No pane is watched any more: the process watching them ends.
pub(super) fn unwatch_all(socket: &Socket) {
    let panes: Vec<String> = socket
        .run([
            "list-panes",
            "-a",
            "-F",
            &format!("#{{?{WATCHED},#{{pane_id}},}}"),
        ])
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    set_each(socket, &panes, &["set-option", "-pqu"], WATCHED, None);
}

/// `head -t PANE option [value]` for each of `panes`, in one command list.
fn set_each(socket: &Socket, panes: &[String], head: &[&str], option: &str, value: Option<&str>) {
    let mut args: Vec<&str> = Vec::new();
    for p in panes {
        if !args.is_empty() {
            args.push(";");
        }
        args.extend(head);
        args.extend(["-t", p, option]);
        args.extend(value);
    }
    if !args.is_empty() {
        let _ = socket.run(&args);
    }
}

/// Held back, or let go: `pane`'s mark counts once `held` is false.
fn hold(socket: &Socket, pane: &str, held: bool) {
    let args: Vec<&str> = if held {
        vec!["set-option", "-pq", "-t", pane, HELD, "1"]
    } else {
        vec!["set-option", "-pqu", "-t", pane, HELD]
    };
    let _ = socket.run(&args);
}

/// The active pane of every attached client's window: on a person's
/// screen.
pub(super) fn on_screen(socket: &Socket) -> Vec<String> {
    socket
        .run(["list-clients", "-F", "#{?client_control_mode,,#{pane_id}}"])
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.starts_with('%'))
        .collect()
}

/// Whether a need stays once the person has seen it: a question does,
/// until it is answered; a prompt back, an exit or a bell, once seen, is
/// news no more.
pub(super) fn outlasts_a_visit(mark: &str) -> bool {
    mark == What::State(State::Asking).as_str()
}

/// Push the segment, the windows' marks and the hooks' flag from the
/// panes' marks: only what differs from what tmux holds, so that a
/// refresh that finds everything in place redraws nothing. (Places are
/// read anew: a session renamed, a window moved or a pane taken to
/// another window shows where it is now.)
///
/// With `@tmux-wait-attention-age on` the segment also says how long the
/// first has waited (`⚑2 api:1 asking 14m`); the time (boot clock) that
/// longest wait began is returned then, for the watch to push the segment
/// again as its minutes turn.
pub(super) fn refresh(socket: &Socket) -> Option<f64> {
    let (panes, all) = panes_and_marks(socket);
    let m: Vec<&Marked> = all.iter().filter(|x| !x.held).collect();
    let opts = socket
        .run(["display-message", "-p", &format!("#{{{ICON}}}\t#{{{AGE}}}")])
        .ok()
        .and_then(|l| l.into_iter().next())
        .unwrap_or_default();
    let (icon, age) = opts.split_once('\t').unwrap_or((&opts, ""));
    let icon = if icon.is_empty() { "⚑" } else { icon }.to_owned();
    let age = super::on(age);
    // (With the panes that need someone on other servers and hosts.)
    let others = super::others::others(socket);
    let first = match (m.first(), others.first()) {
        (Some(a), Some(b)) if b.since < a.since => Some((&b.place, &b.mark, b.since)),
        (Some(a), _) => Some((&a.place, &a.mark, a.since)),
        (None, Some(b)) => Some((&b.place, &b.mark, b.since)),
        (None, None) => None,
    };
    let segment = match first {
        None => String::new(),
        Some((place, mark, since)) => {
            let mut s = format!("{icon}{} {place} {mark}", m.len() + others.len());
            if age {
                s.push(' ');
                s.push_str(&waited_words(crate::sys::clock::boot_secs() - since));
            }
            format_safe(&s, 80)
        }
    };
    let oldest = first.filter(|_| age).map(|(_, _, since)| since);
    // Every window, with (on each line: they are global) the segment and
    // the hooks' flag as tmux holds them.
    let windows = socket
        .run([
            "list-windows",
            "-a",
            "-F",
            &format!("#{{window_id}}\t#{{{WINDOW}}}\t#{{{VISIT}}}\t#{{{MARKED}}}\t#{{{STATUS}}}"),
        ])
        .unwrap_or_default();
    let (visit_now, marked_now, segment_now) = windows
        .first()
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, '\t').collect();
            (
                f.get(2).is_some_and(|v| !v.is_empty()),
                f.get(3).copied().unwrap_or("").to_owned(),
                f.get(4).copied().unwrap_or("").to_owned(),
            )
        })
        .unwrap_or((false, String::new(), String::new()));
    // The marked panes, kept: one that is no longer a pane closed with
    // its mark (its options went with it), and its need is over.
    let ids: Vec<&str> = all.iter().map(|m| m.pane.as_str()).collect();
    let ids_now = ids.join(" ");
    let closed: Vec<&str> = marked_now
        .split_whitespace()
        .filter(|p| !panes.iter().any(|x| x == p))
        .collect();
    let mut args: Vec<String> = Vec::new();
    let then = |args: &mut Vec<String>, cmd: &[&str]| {
        if !args.is_empty() {
            args.push(";".into());
        }
        args.extend(cmd.iter().map(|s| (*s).to_owned()));
    };
    if windows.is_empty() || segment != segment_now {
        then(&mut args, &["set-option", "-gq", STATUS, &segment]);
    }
    if ids_now != marked_now {
        if ids_now.is_empty() {
            then(&mut args, &["set-option", "-gqu", MARKED]);
        } else {
            then(&mut args, &["set-option", "-gq", MARKED, &ids_now]);
        }
    }
    let visit = match (all.is_empty(), visit_now) {
        (true, true) => {
            then(&mut args, &["set-option", "-gqu", VISIT]);
            Some(false)
        }
        (false, false) => {
            then(&mut args, &["set-option", "-gq", VISIT, "1"]);
            Some(true)
        }
        _ => None,
    };
    let mut seen: Vec<&str> = Vec::new();
    for l in &windows {
        let mut f = l.splitn(3, '\t');
        let (w, cur) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
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
            if want.is_empty() {
                then(&mut args, &["set-option", "-wqu", "-t", w, WINDOW]);
            } else {
                then(&mut args, &["set-option", "-wq", "-t", w, WINDOW, &want]);
            }
        }
    }
    if !args.is_empty() {
        let _ = socket.run(&args);
    }
    // The visit hooks are there while some pane is marked or held.
    if let Some(on) = visit {
        super::hooks::visit_hooks(socket, on);
    }
    super::journal::closed(socket, &closed);
    oldest
}

/// How long a wait has lasted, for the segment: `<1m`, `14m`, `2h05m`,
/// `3d04h` (minutes at most: it is pushed again once a minute).
pub(super) fn waited_words(secs: f64) -> String {
    let m = if secs.is_finite() && secs > 0.0 {
        (secs / 60.0).floor() as u64
    } else {
        0
    };
    match m {
        0 => "<1m".into(),
        1..60 => format!("{m}m"),
        60..1440 => format!("{}h{:02}m", m / 60, m % 60),
        _ => format!("{}d{:02}h", m / 1440, m % 1440 / 60),
    }
}

/// When the segment's age words change next, for a wait that began at
/// `since` (boot clock): the next whole minute of it.
pub(super) fn next_minute(since: f64, now: f64) -> f64 {
    let waited = (now - since).max(0.0);
    since + ((waited / 60.0).floor() + 1.0) * 60.0
}

/// `attention visit`: the person's screens changed, or a marked pane's
/// place may have (a session renamed, a window moved, a pane taken to
/// another window). A mark on a pane now on a screen goes (a question's
/// is held until they leave it unanswered); a held mark on a pane no
/// longer on any screen counts; the segment and the windows' marks say
/// where the panes are now.
pub fn visit(socket: &Socket) -> crate::error::Result<()> {
    let seen = on_screen(socket);
    let mut gone = Vec::new();
    for m in marked(socket) {
        let here = seen.contains(&m.pane);
        match (here, m.held) {
            (true, false) if outlasts_a_visit(&m.mark) => hold(socket, &m.pane, true),
            (true, false) => gone.push(m),
            (false, true) => hold(socket, &m.pane, false),
            _ => continue,
        }
    }
    let panes: Vec<String> = gone.iter().map(|m| m.pane.clone()).collect();
    unmark(socket, &panes);
    super::journal::gone_all(socket, &gone, "seen");
    refresh(socket);
    Ok(())
}

/// The pane the client shows (list-clients: tmux 3.2a's display-message
/// takes no client with -p).
fn shown(socket: &Socket, client: Option<&str>) -> crate::error::Result<String> {
    Ok(match client {
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
    })
}

/// `attention next`: move the client to the pane that has waited longest
/// (not the one it shows). Returns false when no pane needs anyone.
pub(super) fn next(socket: &Socket, client: Option<&str>) -> crate::error::Result<bool> {
    let here = shown(socket, client)?;
    let Some(to) = marked(socket)
        .into_iter()
        .find(|m| m.pane != here && !m.held)
    else {
        return Ok(false);
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
    // (The hooks see the move too; this is for a server whose hooks
    // were dropped, and says it at once.)
    visit(socket)?;
    Ok(true)
}

/// The tmux command that takes a client to `pane` (the menu's "go to").
pub(super) fn go_to(pane: &str) -> String {
    let p = quote(pane);
    format!("switch-client -t {p} ; select-window -t {p} ; select-pane -t {p}")
}

/// Every marked pane that counts (not held), the longest waiting first.
pub(super) fn counted(socket: &Socket) -> Vec<Marked> {
    marked(socket).into_iter().filter(|m| !m.held).collect()
}

/// Every mark goes.
pub(super) fn clear_all(socket: &Socket) {
    let all = marked(socket);
    let panes: Vec<String> = all.iter().map(|m| m.pane.clone()).collect();
    unmark(socket, &panes);
    super::journal::gone_all(socket, &all, "off");
    unwatch_all(socket);
    super::others::clear(socket);
    refresh(socket);
}

/// Attention went off for one session: its panes' marks go.
pub(super) fn clear_session(socket: &Socket, session: &str) {
    let panes: Vec<String> = socket
        .run(["list-panes", "-s", "-t", session, "-F", "#{pane_id}"])
        .unwrap_or_default();
    let ours: Vec<Marked> = marked(socket)
        .into_iter()
        .filter(|m| panes.contains(&m.pane))
        .collect();
    unmark(socket, &panes);
    super::journal::gone_all(socket, &ours, "off");
    set_each(socket, &panes, &["set-option", "-pqu"], WATCHED, None);
    refresh(socket);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_segments_age_in_minutes() {
        assert_eq!(waited_words(0.0), "<1m");
        assert_eq!(waited_words(59.9), "<1m");
        assert_eq!(waited_words(60.0), "1m");
        assert_eq!(waited_words(14.0 * 60.0 + 30.0), "14m");
        assert_eq!(waited_words(2.0 * 3600.0 + 5.0 * 60.0), "2h05m");
        assert_eq!(waited_words(3.0 * 86_400.0 + 4.0 * 3600.0), "3d04h");
        // (A clock that went back, or nothing known: the first minute.)
        assert_eq!(waited_words(-5.0), "<1m");
        assert_eq!(waited_words(f64::NAN), "<1m");
    }

    #[test]
    fn the_segment_is_pushed_again_as_each_minute_turns() {
        assert_eq!(next_minute(100.0, 100.0), 160.0);
        assert_eq!(next_minute(100.0, 159.9), 160.0);
        assert_eq!(next_minute(100.0, 160.0), 220.0);
        // A wait that began later than now (another clock): its first.
        assert_eq!(next_minute(100.0, 50.0), 160.0);
    }
}
