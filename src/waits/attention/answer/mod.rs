//! `tmux-wait answer`: answer the question a pane asks now, from elsewhere
//! (the plugin's menu, a script), and say whether the pane moved on.
//!
//! Pane text is untrusted and keys typed into the wrong program do harm,
//! so an answer is sent only when the question is still the one the
//! person (or script) saw:
//!
//! 1. one look at the pane (the kernel: who reads its terminal, how; tmux:
//!    its screen), as `panes` takes it: it must be asking, not for a
//!    password, and be the question named (`--question` or
//!    `--question-id`), read by the process named (`--pid`), begun when
//!    named (`--since`; the menu: its mark's beginning);
//! 2. the keys the chosen answer types (`offers`);
//! 3. right before sending, the pane is read again: the same process
//!    still asleep reading the terminal the same way, the cursor and the
//!    history where they were, the question's row unchanged;
//! 4. the keys go in one tmux command list (`send-keys -l`, never through a
//!    shell or a format), with a tag on the pane that tells the attention
//!    watch who answered.
//!
//! What is left: the time from step 3's reads to tmux writing the keys,
//! about two tmux commands (1 to 2 ms). A program that writes another
//! question, or ends and leaves its terminal to another, inside that
//! window gets the keys. Then the pane is looked at until it moves on (its
//! state, question or reader changes) or `--timeout` passes.

mod offers;

pub use offers::{Key, Offer, offers};

use super::machine::State;
use super::snapshot::{Seen, look};
use super::targets::{self, Row};
use super::{PaneReport, Profiles};
use crate::error::{Error, Kind, Refusal, Result};
use crate::state::AttentionEvent;
use crate::tmux::Socket;
use serde::Serialize;
use std::time::{Duration, Instant};

/// The pane option an answer sets (in the command list that types it)
/// for the attention watch: who answered (`menu` or `script`) and when
/// (boot clock).
pub const ANSWERED: &str = "@tmux-wait-answered";
/// The pane option that dates the need a mark stands for (boot clock):
/// the menu's answers carry it, so an answer chosen for one question
/// never reaches the next one.
pub const BEGAN: &str = "@tmux-wait-attention-began";

/// Who answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    Script,
    /// The plugin's menu, on this client (told the outcome there).
    Menu {
        client: Option<String>,
    },
}

impl By {
    pub fn word(&self) -> &'static str {
        match self {
            By::Script => "script",
            By::Menu { .. } => "menu",
        }
    }
}

/// A validated `tmux-wait answer`.
#[derive(Debug, Clone)]
pub struct AnswerRequest {
    pub socket: Socket,
    pub target: String,
    /// None: only say the question and its answers.
    pub choice: Option<String>,
    pub question: Option<String>,
    pub question_id: Option<String>,
    pub pid: Option<u32>,
    /// The `since` of `panes --json` (seconds since the epoch).
    pub since: Option<f64>,
    /// The menu's: its mark's beginning, as [`BEGAN`] holds it.
    pub began: Option<String>,
    pub by: By,
    pub timeout: Duration,
    pub quiet_after: Duration,
    pub profiles: Profiles,
}

/// An answer offered, as JSON and the menu show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OfferReport {
    pub choice: String,
    pub label: String,
    pub keys: Vec<String>,
}

impl From<&Offer> for OfferReport {
    fn from(o: &Offer) -> Self {
        OfferReport {
            choice: o.choice.clone(),
            label: o.label.clone(),
            keys: o.keys.iter().map(Key::word).collect(),
        }
    }
}

/// What `answer` did (or, without a choice, what it would offer).
#[derive(Debug, Clone, Serialize)]
pub struct AnswerResult {
    /// `offers` (no choice given), `moved_on`, or `still_asking` (the
    /// keys were sent and the pane did not move on within the timeout).
    pub outcome: &'static str,
    pub pane_id: String,
    pub session: String,
    pub window: i64,
    pub question: Option<String>,
    pub question_id: Option<String>,
    /// The process reading the terminal (for `--pid`).
    pub pid: Option<u32>,
    pub since: f64,
    pub offers: Vec<OfferReport>,
    /// What was sent: the choice and its keys.
    pub choice: Option<String>,
    pub keys: Vec<String>,
    /// The pane after the keys: its state, why, its question.
    pub now: Option<PaneReport>,
    pub elapsed_seconds: f64,
}

impl AnswerResult {
    pub fn exit_code(&self) -> i32 {
        match self.outcome {
            "still_asking" => crate::error::exit::TIMEOUT,
            _ => crate::error::exit::OK,
        }
    }

    /// For people: the question and its answers, or what the keys did.
    pub fn human(&self) -> String {
        let head = format!("{} {}:{}", self.pane_id, self.session, self.window);
        let q = self.question.as_deref().unwrap_or("");
        match self.outcome {
            "offers" => {
                let mut lines = vec![
                    format!("{head} asks: {q}"),
                    format!(
                        "  question id {}, read by pid {}",
                        self.question_id.as_deref().unwrap_or("-"),
                        self.pid.map_or("-".into(), |p| p.to_string())
                    ),
                ];
                if self.offers.is_empty() {
                    lines.push("  (no answer it offers can be told)".into());
                }
                for o in &self.offers {
                    lines.push(format!(
                        "  {:<6} {}  (keys: {})",
                        o.choice,
                        o.label,
                        o.keys.join(" ")
                    ));
                }
                // (Each line sanitized: pane text is data.)
                lines
                    .iter()
                    .map(|l| crate::report::sanitize(l))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            outcome => {
                let now = self.now.as_ref().map_or("gone".to_owned(), |n| {
                    let mut w = format!("{} ({})", n.state, n.reason);
                    if let Some(q) = &n.question {
                        w.push_str(&format!(": {q}"));
                    }
                    w
                });
                let verb = if outcome == "moved_on" {
                    "moved on"
                } else {
                    "did not move on"
                };
                crate::report::sanitize(&format!(
                    "{head} answered {} ({}): {verb}, now {now}",
                    self.choice.as_deref().unwrap_or(""),
                    self.keys.join(" ")
                ))
            }
        }
    }
}

/// A question's id: 16 hex digits of a hash of its text (FNV-1a), for
/// carrying a question where its text cannot go (a menu's command).
pub fn question_id(q: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in q.trim().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn refused(why: Refusal, msg: String) -> Error {
    Error::new(Kind::Refused(why), format!("{msg}; nothing was typed"))
}

/// The pane `target` names (one pane: a window or session is refused).
pub fn row_of(socket: &Socket, target: &str) -> Result<Row> {
    let id = crate::tmux::resolve_pane(socket, Some(target))?.pane_id;
    targets::list(socket)?
        .into_iter()
        .find(|r| r.pane_id == id)
        .ok_or_else(|| Error::new(Kind::NoPane, format!("no pane {id}")))
}

/// One look at `r`, as `panes` judges it.
pub fn seen(socket: &Socket, r: &Row, profiles: &Profiles, quiet_after: Duration) -> Seen {
    let re = regex::Regex::new(crate::pane::shell::DEFAULT_PROMPTS).expect("the prompts are valid");
    look(socket, r, profiles, quiet_after, &re)
}

/// The answers the question `s` shows offers (none for a password).
pub fn offers_of(s: &Seen) -> Vec<Offer> {
    if s.status.state != State::Asking || s.status.reason == "reads_password" {
        return Vec::new();
    }
    offers(s.status.question.as_deref().unwrap_or(""), &s.screen)
}

fn result(r: &Row, s: &Seen, outcome: &'static str, t0: Instant) -> AnswerResult {
    let q = s.status.question.clone();
    AnswerResult {
        outcome,
        pane_id: r.pane_id.clone(),
        session: r.session_name.clone(),
        window: r.window_index,
        question_id: q.as_deref().map(question_id),
        question: q,
        pid: s.reader,
        since: s.status.since,
        offers: offers_of(s).iter().map(OfferReport::from).collect(),
        choice: None,
        keys: Vec::new(),
        now: None,
        elapsed_seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Whether `s` is still the question `req` names; the refusal if not.
fn check(req: &AnswerRequest, r: &Row, s: &Seen) -> Result<()> {
    let st = &s.status;
    if st.state != State::Asking {
        return Err(refused(
            Refusal::NoQuestion,
            format!(
                "{} asks nothing now (it is {}: {})",
                r.pane_id,
                st.state.as_str(),
                st.reason
            ),
        ));
    }
    if st.reason == "reads_password" {
        return Err(refused(
            Refusal::Password,
            format!("{} reads a password: only a person types it", r.pane_id),
        ));
    }
    let q = st.question.as_deref().unwrap_or("").trim();
    let changed = |what: &str| {
        refused(
            Refusal::QuestionChanged,
            format!("{} {what} (it asks: {q})", r.pane_id),
        )
    };
    if req.question.as_deref().is_some_and(|want| want.trim() != q) {
        return Err(changed("asks another question"));
    }
    if req
        .question_id
        .as_deref()
        .is_some_and(|want| !want.eq_ignore_ascii_case(&question_id(q)))
    {
        return Err(changed("asks another question"));
    }
    if let Some(pid) = req.pid
        && Some(pid) != s.reader
        && !reads_for_the_pane(r, pid)
    {
        return Err(changed("is read by another program"));
    }
    if req.since.is_some_and(|t| (t - st.since).abs() > 1.0) {
        return Err(changed("asks a question begun at another time"));
    }
    Ok(())
}

/// The process `pid` still waits on the pane's terminal in its
/// foreground, where the look found another reader or none: a program's
/// own children (an agent's hooks and tools) run in its process group
/// for a moment, busy or asleep on their own business, and the look then
/// names one of them or nobody. A program that took the terminal from it
/// (a job started or resumed, an exec) is in a group of its own or is not
/// `pid`, and a parent that waits for a child asking is not at the
/// terminal.
fn reads_for_the_pane(r: &Row, pid: u32) -> bool {
    use crate::sys::procfs;
    use crate::sys::waiting::{Wait, waits};
    let Some(fg) = procfs::foreground_group(r.pane_pid) else {
        return false;
    };
    procfs::stat(pid).is_some_and(|st| st.pgrp == fg && !matches!(st.state, 'Z' | 'X'))
        && matches!(
            waits(pid, &r.tty),
            Some(Wait::ReadsTty | Wait::PollsForever | Wait::PollsTimed)
        )
}

/// How long the keys wait for the pane's reader to be told as it was:
/// an agent's hooks run beside it for a moment.
const READER_SETTLE: Duration = Duration::from_millis(1500);

/// [`still_once`], looked at again while only the reader differs, for
/// up to [`READER_SETTLE`]: the beginning of the pane's mark, or None if
/// anything moved.
fn still(socket: &Socket, r: &Row, s: &Seen) -> Option<String> {
    let until = Instant::now() + READER_SETTLE;
    loop {
        match still_once(socket, r, s) {
            Still::Same(began) => return Some(began),
            Still::Reader if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => return None,
        }
    }
}

enum Still {
    Same(String),
    /// Only the terminal's reader (or its mode) differs from the look's.
    Reader,
    Moved,
}

/// Right before sending: the same process still asleep reading the
/// terminal the same way, and the pane's output where the look left it
/// (cursor, history, the cursor's row and the question's): the
/// beginning of the pane's mark then (empty: none), or what moved.
fn still_once(socket: &Socket, r: &Row, s: &Seen) -> Still {
    if crate::pane::shell::proc_available() {
        let (reads, reader) = crate::pane::shell::reads(r.pane_pid, &r.tty);
        if Some(reads) != s.reads || reader != s.reader {
            return Still::Reader;
        }
    }
    let fmt =
        format!("#{{pane_id}}\t#{{cursor_x}}\t#{{cursor_y}}\t#{{history_size}}\t#{{{BEGAN}}}");
    let t = r.pane_id.clone();
    let replies = socket.batch(&[
        vec![
            "display-message".into(),
            "-p".into(),
            "-t".into(),
            t.clone(),
            fmt,
        ],
        vec!["capture-pane".into(), "-p".into(), "-t".into(), t],
    ]);
    let Ok(replies) = replies else {
        return Still::Moved;
    };
    let info = replies
        .first()
        .and_then(|l| l.first())
        .cloned()
        .unwrap_or_default();
    let f: Vec<&str> = info.split('\t').collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let at = (n(1), n(2), n(3));
    let was = (
        Some(u64::from(s.cursor.0)),
        Some(u64::from(s.cursor.1)),
        Some(s.cursor.2),
    );
    let Some(screen) = replies.get(1) else {
        return Still::Moved;
    };
    let row = |sc: &[String], i: usize| sc.get(i).map(|l| l.trim_end().to_owned());
    let q = s
        .status
        .question
        .as_deref()
        .unwrap_or("")
        .trim()
        .trim_end_matches('…');
    let q_row = (!q.is_empty())
        .then(|| s.screen.iter().rposition(|l| l.contains(q)))
        .flatten();
    let same = f.first() == Some(&r.pane_id.as_str())
        && at == was
        && row(screen, s.cursor.1 as usize) == row(&s.screen, s.cursor.1 as usize)
        && q_row.is_none_or(|i| row(screen, i) == row(&s.screen, i));
    if same {
        Still::Same(f.get(4).copied().unwrap_or("").trim().to_owned())
    } else {
        Still::Moved
    }
}

/// Whether the pane moved on from the question `s` showed.
fn moved_on(before: &Seen, after: Option<&Seen>) -> bool {
    let Some(a) = after else { return true };
    a.status.state != State::Asking
        || a.status.question != before.status.question
        || a.reader != before.reader
}

/// `tmux-wait answer`.
pub fn answer(req: &AnswerRequest) -> Result<AnswerResult> {
    let t0 = Instant::now();
    // (Looked at again while only the reader named is not told: an
    // agent's hooks run beside it for a moment.)
    let until = Instant::now() + READER_SETTLE;
    let (r, s) = loop {
        let r = row_of(&req.socket, &req.target)?;
        let s = seen(&req.socket, &r, &req.profiles, req.quiet_after);
        let other_reader = req
            .pid
            .is_some_and(|p| Some(p) != s.reader && !reads_for_the_pane(&r, p));
        if !other_reader || Instant::now() >= until {
            break (r, s);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let Some(choice) = &req.choice else {
        // Only the question and its answers.
        check(req, &r, &s)?;
        return Ok(result(&r, &s, "offers", t0));
    };
    check(req, &r, &s)?;
    let offers = offers_of(&s);
    let Some(offer) = offers
        .iter()
        .find(|o| o.choice.eq_ignore_ascii_case(choice))
        .cloned()
    else {
        let known: Vec<&str> = offers.iter().map(|o| o.choice.as_str()).collect();
        return Err(refused(
            Refusal::NoSuchAnswer,
            format!(
                "{}'s question offers no answer {choice:?} (it offers: {})",
                r.pane_id,
                if known.is_empty() {
                    "none that can be told".into()
                } else {
                    known.join(", ")
                }
            ),
        ));
    };
    let Some(began) = still(&req.socket, &r, &s) else {
        return Err(refused(
            Refusal::QuestionChanged,
            format!("{} changed as the keys were about to go", r.pane_id),
        ));
    };
    if req.began.as_deref().is_some_and(|b| b.trim() != began) {
        return Err(refused(
            Refusal::QuestionChanged,
            format!(
                "{} asks a question begun after the menu was drawn (it asks: {})",
                r.pane_id,
                s.status.question.as_deref().unwrap_or("")
            ),
        ));
    }
    let boot = crate::sys::clock::boot_secs();
    let mut args: Vec<String> = vec![
        "set-option".into(),
        "-pq".into(),
        "-t".into(),
        r.pane_id.clone(),
        ANSWERED.into(),
        format!("{} {boot:.3}", req.by.word()),
    ];
    for k in &offer.keys {
        args.extend([
            ";".into(),
            "send-keys".into(),
            "-t".into(),
            r.pane_id.clone(),
        ]);
        match k {
            Key::Text(t) => args.extend(["-l".into(), "--".into(), t.clone()]),
            Key::Enter => args.push("Enter".into()),
        }
    }
    req.socket.run(&args)?;
    // Looked at until it moves on.
    let end = Instant::now() + req.timeout;
    let mut after;
    loop {
        std::thread::sleep(Duration::from_millis(30));
        let row = targets::list(&req.socket)
            .ok()
            .and_then(|rows| rows.into_iter().find(|x| x.pane_id == r.pane_id));
        after = row.map(|x| seen(&req.socket, &x, &req.profiles, req.quiet_after));
        let dead = after
            .as_ref()
            .is_some_and(|a| a.status.state == State::Exited);
        if moved_on(&s, after.as_ref()) || dead || Instant::now() >= end {
            break;
        }
    }
    let moved = moved_on(&s, after.as_ref());
    if !moved {
        let _ = req
            .socket
            .run(["set-option", "-pqu", "-t", &r.pane_id, ANSWERED]);
    }
    record(req, &r, &s, &offer, (boot, began.parse().ok()), moved);
    let mut out = result(&r, &s, if moved { "moved_on" } else { "still_asking" }, t0);
    out.choice = Some(offer.choice.clone());
    out.keys = offer.keys.iter().map(Key::word).collect();
    out.now = after
        .as_ref()
        .map(|a| PaneReport::of_status(&r.pane_id, &r.session_name, r.window_index, &a.status));
    Ok(out)
}

/// The answer, in the server's attention log: when the keys went
/// (`boot`), how long the question had waited (since its mark's
/// beginning `began`, else its `since`).
fn record(
    req: &AnswerRequest,
    r: &Row,
    s: &Seen,
    offer: &Offer,
    (boot, began): (f64, Option<f64>),
    moved: bool,
) {
    let Ok(store) = crate::waits::store::store_for(&req.socket) else {
        return;
    };
    let mut e = AttentionEvent::now(
        "answered",
        &r.pane_id,
        &format!("{}:{}", r.session_name, r.window_index),
        boot,
    );
    e.state = Some("asking".into());
    e.reason = Some(s.status.reason.to_owned());
    e.question.clone_from(&s.status.question);
    e.by = Some(req.by.word().into());
    e.choice = Some(offer.choice.clone());
    e.moved_on = Some(moved);
    e.waited = Some(match began {
        Some(b) => boot - b,
        None => (e.time - s.status.since).max(0.0),
    });
    let _ = store.journal(&e);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_id_is_stable_hex() {
        let a = question_id("Deploy? [y/N]");
        assert_eq!(a.len(), 16);
        assert_eq!(a, question_id(" Deploy? [y/N] "));
        assert_ne!(a, question_id("Deploy? [Y/n]"));
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
