//! One host, through ssh: its tmux-wait's `any --ndjson` lines, as
//! reports of this one, for as long as the wait lasts. A host that cannot
//! be reached, or whose connection drops, is said and tried again after
//! 1 s, 2 s, 4 s ... at most 30 s; a host without a recent tmux-wait is
//! said once, and left.
//!
//! The host's `any` reports every state and event of every pane of its
//! server (`--until` everything, `--now`), and a line when it is armed;
//! what counts is decided here, as `any` decides it: a change after the
//! host was armed that `--until` names (with `--now`, a state it was in
//! already). What the host found as it was armed is held until it is,
//! then told (after [`HostEvent::Back`] on a reconnection) before
//! [`HostEvent::Armed`]; after a reconnection it counts where it is
//! news, since it happened out of sight: a pane seen before whose
//! state or question differs from the last one told, a pane made
//! meanwhile that asks or whose program ended (a new shell at its prompt
//! is not news), and a pane seen before that is there no more
//! ([`HostEvent::Gone`]).

use super::super::machine::{State, Until, What};
use super::super::report::{PaneReport, Problem};
use crate::remote::{Host, Ssh, check_helper};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

/// The longest wait between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How often the host's `any` is sent a byte, so that it knows this end
/// is still there; it ends when [`ALIVE_MISSED`] of them did not come (a
/// connection gone dark where the host's sshd cannot see it: nothing
/// comes, nothing is refused). `TMUX_WAIT_ALIVE_EVERY` (seconds) sets it
/// for tests.
const ALIVE_EVERY: Duration = Duration::from_secs(15);
const ALIVE_MISSED: u32 = 4;

fn alive_every() -> Duration {
    std::env::var("TMUX_WAIT_ALIVE_EVERY")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| (0.1..=3600.0).contains(s))
        .map_or(ALIVE_EVERY, Duration::from_secs_f64)
}

/// What the watch of a host asks of it.
#[derive(Clone)]
pub struct HostWatch {
    pub until: Until,
    pub now: bool,
    pub quiet_after: Duration,
    /// The `--pattern`s as given, and `--regex`.
    pub patterns: Vec<String>,
    pub regex: bool,
}

/// What a host's watch tells its owner.
#[derive(Debug)]
pub enum HostEvent {
    /// The host is reached again after its connection dropped; what
    /// changed there meanwhile follows, then [`HostEvent::Armed`].
    Back,
    /// Every pane of the host is watched, and what it found told.
    Armed,
    /// A pane's state or event; `counts` when the wait ends on it.
    Pane {
        report: Box<PaneReport>,
        counts: bool,
    },
    /// The host could not be reached, or its tmux-wait said an error;
    /// tried again.
    Problem(Problem),
    /// The host cannot be watched (no tmux-wait there): given up.
    Fatal(Problem),
    /// A pane told before is there no more: it closed while the host was
    /// away (its qualified id).
    Gone(String),
}

/// The last state and question told of each pane of the host.
type Known = HashMap<String, (&'static str, Option<String>)>;

/// Watch `host` until `deadline`, telling `sink` what happens; returns
/// when the deadline passes, the host is given up, or `sink` says stop
/// (returns false).
pub fn watch(
    host: &Host,
    ssh: &Ssh,
    w: &HostWatch,
    deadline: Instant,
    mut sink: impl FnMut(HostEvent) -> bool,
) {
    let mut backoff = Duration::from_secs(1);
    let mut known = Known::new();
    let mut connected_before = false;
    let problem = |event: &'static str, message: String| Problem {
        event,
        server: None,
        host: Some(host.spec.clone()),
        message,
    };
    while Instant::now() < deadline {
        let tried = Instant::now();
        let said = match ssh.preflight(host) {
            Ok(r) => match check_helper(host, &r) {
                Ok(()) => None,
                Err(e) => {
                    sink(HostEvent::Fatal(problem("no_helper", e.message)));
                    return;
                }
            },
            Err(e) => Some(problem(e.kind.as_str(), e.message)),
        };
        let said = match said {
            Some(p) => Some(p),
            None => {
                let end = stream(
                    host,
                    ssh,
                    w,
                    deadline,
                    &mut known,
                    connected_before,
                    &mut sink,
                );
                match end {
                    Stream::Stop => return,
                    Stream::Armed(p) => {
                        connected_before = true;
                        backoff = Duration::from_secs(1);
                        p
                    }
                    Stream::NotArmed(p) => p,
                }
            }
        };
        let Some(mut p) = said else {
            // It ended by itself (its timeout, a ceiling there): again,
            // not faster than once a second.
            sleep_until((tried + Duration::from_secs(1)).min(deadline));
            continue;
        };
        if Instant::now() >= deadline {
            return;
        }
        p.message = format!("{}; trying again in {}s", p.message, backoff.as_secs());
        if !sink(HostEvent::Problem(p)) {
            return;
        }
        sleep_until((Instant::now() + backoff).min(deadline));
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

enum Stream {
    /// The sink said stop.
    Stop,
    /// It was armed, then ended (with what went wrong, if anything).
    Armed(Option<Problem>),
    NotArmed(Option<Problem>),
}

/// The host's tmux-wait `any` arguments.
fn arguments(w: &HostWatch, deadline: Instant) -> Vec<String> {
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_secs(2);
    let mut until = String::from("working,prompt,asking,quiet,exited,bell");
    if !w.patterns.is_empty() {
        until.push_str(",text");
    }
    let mut a: Vec<String> = ["any", "--server", "--ndjson", "--now", "--mark-armed"]
        .map(String::from)
        .to_vec();
    a.push(format!("--until={until}"));
    a.push(format!("--timeout={:.3}", left.as_secs_f64()));
    a.push(format!("--quiet-after={:.3}", w.quiet_after.as_secs_f64()));
    a.push(format!(
        "--input-within={:.3}",
        (alive_every() * ALIVE_MISSED).as_secs_f64()
    ));
    for p in &w.patterns {
        a.push(format!("--pattern={p}"));
    }
    if w.regex {
        a.push("--regex".into());
    }
    a
}

/// One run of the host's `any`: its lines, until it ends.
fn stream(
    host: &Host,
    ssh: &Ssh,
    w: &HostWatch,
    deadline: Instant,
    known: &mut Known,
    again: bool,
    sink: &mut impl FnMut(HostEvent) -> bool,
) -> Stream {
    let problem = |event: &'static str, message: String| Problem {
        event,
        server: None,
        host: Some(host.spec.clone()),
        message,
    };
    let mut g = match ssh.spawn_helper(host, &arguments(w, deadline), true) {
        Ok(g) => g,
        Err(e) => return Stream::NotArmed(Some(problem(e.kind.as_str(), e.message))),
    };
    // A byte now and then while this run lasts (its sender goes with it).
    let (_alive, beats) = std::sync::mpsc::channel::<()>();
    if let Some(mut input) = g.0.stdin.take() {
        let every = alive_every();
        let _ = std::thread::Builder::new()
            .name("host-alive".into())
            .spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                while let Err(RecvTimeoutError::Timeout) = beats.recv_timeout(every) {
                    if input.write_all(b"\n").and_then(|()| input.flush()).is_err() {
                        break;
                    }
                }
            });
    }
    let stderr = g.0.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let mut armed = false;
    // What the host found before it was armed: held until it is.
    let mut found: Vec<PaneReport> = Vec::new();
    let mut said: Option<Problem> = None;
    let mut ended_in_time = false;
    if let Some(out) = g.0.stdout.take() {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["event"] == "armed" {
                armed = true;
                if again && !sink(HostEvent::Back) {
                    return Stream::Stop;
                }
                if !tell_found(std::mem::take(&mut found), w, known, again, sink)
                    || !sink(HostEvent::Armed)
                {
                    return Stream::Stop;
                }
                continue;
            }
            if let Some(e) = v.get("error") {
                let kind = e["kind"].as_str().unwrap_or("error");
                let msg = e["message"].as_str().unwrap_or("");
                said = Some(problem(
                    word(kind),
                    format!("{}: {}", host.spec, crate::report::sanitize(msg)),
                ));
                continue;
            }
            if v.get("outcome").is_some() {
                ended_in_time = true;
                continue;
            }
            let Some(report) = report_of(&v, host) else {
                continue;
            };
            if !armed {
                found.push(report);
                continue;
            }
            let (what, _) = remember(known, &report);
            let counts = w.until.has(what);
            if !sink(HostEvent::Pane {
                report: Box::new(report),
                counts,
            }) {
                return Stream::Stop;
            }
        }
    }
    let status = g.0.wait().ok();
    let err = errors.join().unwrap_or_default();
    if ended_in_time && said.is_none() {
        return if armed {
            Stream::Armed(None)
        } else {
            Stream::NotArmed(None)
        };
    }
    if said.is_none() {
        let msg = if err.trim().is_empty() {
            "the ssh connection closed".to_owned()
        } else {
            crate::remote::ssh::last_words(&err)
        };
        said = Some(match status.and_then(|s| s.code()) {
            Some(255) | None => problem("host_unreachable", format!("{}: {msg}", host.spec)),
            _ => problem("error", format!("{}: {msg}", host.spec)),
        });
    }
    if armed {
        Stream::Armed(said)
    } else {
        Stream::NotArmed(said)
    }
}

/// Keep a pane's state and question as the last told of it; returns
/// what the line is and the state and question told before (None: a
/// pane not seen before).
fn remember(known: &mut Known, r: &PaneReport) -> (What, Option<(&'static str, Option<String>)>) {
    // (report_of took only known names.)
    let what = What::of_name(r.state).unwrap_or(What::Bell);
    let prev = match what {
        What::State(_) => known.insert(r.pane_id.clone(), (r.state, r.question.clone())),
        _ => known.get(&r.pane_id).cloned(),
    };
    (what, prev)
}

/// Tell what the host found as it was armed (`found`, in its order). On
/// the first connection it counts only with `--now`; after a
/// reconnection, where it is news (see the module's words: an unchanged
/// pane is not told again, `--now` or not). A pane told before that the
/// host did not list is gone. False: the sink said stop.
fn tell_found(
    found: Vec<PaneReport>,
    w: &HostWatch,
    known: &mut Known,
    again: bool,
    sink: &mut impl FnMut(HostEvent) -> bool,
) -> bool {
    if again {
        let there: HashSet<&str> = found.iter().map(|r| r.pane_id.as_str()).collect();
        let mut gone: Vec<String> = known
            .keys()
            .filter(|p| !there.contains(p.as_str()))
            .cloned()
            .collect();
        gone.sort();
        for p in gone {
            known.remove(&p);
            if !sink(HostEvent::Gone(p)) {
                return false;
            }
        }
    }
    for report in found {
        let (what, prev) = remember(known, &report);
        let news = match (what, prev) {
            _ if !again => w.now,
            (What::State(_), Some((state, question))) => {
                state != report.state || question != report.question
            }
            (What::State(State::Asking), None) => true,
            (What::State(State::Exited), None) => report.reason != "pane_closed",
            _ => false,
        };
        let counts = news && w.until.has(what);
        if !sink(HostEvent::Pane {
            report: Box::new(report),
            counts,
        }) {
            return false;
        }
    }
    true
}

/// A word from another host (a reason, a source): `[a-z_]`, at most 40,
/// kept once for the life of the process (at most 256 different ones),
/// else `unknown`.
pub fn word(s: &str) -> &'static str {
    use std::sync::Mutex;
    static WORDS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    if s.is_empty() || s.len() > 40 || !s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        return "unknown";
    }
    let Ok(mut words) = WORDS.lock() else {
        return "unknown";
    };
    if let Some(w) = words.iter().find(|w| **w == s) {
        return w;
    }
    if words.len() >= 256 {
        return "unknown";
    }
    let w: &'static str = Box::leak(s.to_owned().into_boxed_str());
    words.push(w);
    w
}

/// A pane's line from another host as a report of this one: its id
/// qualified (`HOST/%N`), its host set. Anything malformed is dropped.
pub fn report_of(v: &Value, host: &Host) -> Option<PaneReport> {
    let pane = v["pane_id"].as_str()?;
    let digits = pane.strip_prefix('%')?;
    if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let state = What::of_name(v["state"].as_str()?)?.as_str();
    let text = |k: &str| {
        v[k].as_str()
            .map(|s| s.chars().take(2000).collect::<String>())
    };
    Some(PaneReport {
        pane_id: host.qualify(pane),
        session: text("session").unwrap_or_default(),
        window: v["window"].as_i64().unwrap_or(0),
        state,
        reason: word(v["reason"].as_str().unwrap_or("")),
        question: text("question"),
        command: text("command"),
        exit_status: v["exit_status"]
            .as_i64()
            .and_then(|x| i32::try_from(x).ok()),
        agent: text("agent"),
        source: word(v["source"].as_str().unwrap_or("")),
        line: text("line"),
        since: v["since"].as_f64().unwrap_or(0.0),
        tail: None,
        server: text("server").unwrap_or_default(),
        host: Some(host.spec.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_from_a_host_are_checked_and_qualified() {
        let h = Host::parse("gpu").unwrap();
        let v = json!({"pane_id": "%4", "session": "s", "window": 2, "state": "asking",
            "reason": "reads_line", "question": "ok?", "command": "sh", "exit_status": null,
            "agent": null, "source": "kernel", "line": null, "since": 5.5,
            "server": "/tmp/tmux-0/default", "host": null});
        let r = report_of(&v, &h).unwrap();
        assert_eq!(r.pane_id, "gpu/%4");
        assert_eq!(r.host.as_deref(), Some("gpu"));
        assert_eq!(
            (r.state, r.reason, r.source),
            ("asking", "reads_line", "kernel")
        );
        for bad in [
            json!({"pane_id": "%4; rm", "state": "asking"}),
            json!({"pane_id": "%4", "state": "sleeping"}),
            json!({"state": "asking"}),
        ] {
            assert!(report_of(&bad, &h).is_none(), "{bad}");
        }
        let odd = json!({"pane_id": "%4", "state": "bell", "reason": "\u{1b}[2J", "source": "x".repeat(99)});
        let r = report_of(&odd, &h).unwrap();
        assert_eq!((r.reason, r.source), ("unknown", "unknown"));
    }

    /// What the host found as it was armed: after a reconnection, news
    /// only; an unchanged pane is not told again.
    #[test]
    fn what_changed_while_away_counts_once_back() {
        let h = Host::parse("box").unwrap();
        let line = |pane: &str, state: &str, question: Option<&str>, reason: &str| {
            let v =
                json!({"pane_id": pane, "state": state, "question": question, "reason": reason});
            report_of(&v, &h).unwrap()
        };
        let w = HostWatch {
            until: Until::needs_someone(),
            now: false,
            quiet_after: Duration::from_secs(30),
            patterns: Vec::new(),
            regex: false,
        };
        let run = |known: &mut Known, found: Vec<PaneReport>, again: bool| {
            let mut told = Vec::new();
            assert!(tell_found(found, &w, known, again, &mut |e| {
                told.push(match e {
                    HostEvent::Pane { report, counts } => {
                        format!("{} {} {counts}", report.pane_id, report.state)
                    }
                    HostEvent::Gone(p) => format!("{p} gone"),
                    e => format!("{e:?}"),
                });
                true
            }));
            told
        };
        let mut known = Known::new();
        // The first connection: where each stands is no news.
        let first = vec![
            line("%0", "prompt", None, "prompt"),
            line("%1", "asking", Some("A?"), "reads_line"),
            line("%2", "prompt", None, "prompt"),
            line("%3", "working", None, "runs"),
        ];
        assert_eq!(
            run(&mut known, first, false),
            [
                "box/%0 prompt false",
                "box/%1 asking false",
                "box/%2 prompt false",
                "box/%3 working false"
            ]
        );
        // Back: %0 asks, %1 asks another question, %2 is as it was, %3
        // closed; %4 (new) asks, %5 (new) ended, %6 (new) is a shell at
        // its prompt, %7 (new) closed as it was found.
        let back = vec![
            line("%0", "asking", Some("Down?"), "reads_line"),
            line("%1", "asking", Some("B?"), "reads_line"),
            line("%2", "prompt", None, "prompt"),
            line("%4", "asking", Some("New?"), "reads_line"),
            line("%5", "exited", None, "exited"),
            line("%6", "prompt", None, "prompt"),
            line("%7", "exited", None, "pane_closed"),
        ];
        assert_eq!(
            run(&mut known, back.clone(), true),
            [
                "box/%3 gone",
                "box/%0 asking true",
                "box/%1 asking true",
                "box/%2 prompt false",
                "box/%4 asking true",
                "box/%5 exited true",
                "box/%6 prompt false",
                "box/%7 exited false",
            ]
        );
        // Back again with nothing changed: nothing told.
        assert!(
            run(&mut known, back, true)
                .iter()
                .all(|t| t.ends_with(" false")),
        );
    }
}
