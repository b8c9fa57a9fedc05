//! `tmux-wait panes`: each pane's state now, from one look at its
//! terminal and screen (no stream, no waiting). `since` is as close as a
//! single look can tell: a running command's start, else the terminal's
//! last write, which the kernel keeps to 8 seconds.

use super::judge::{Look, Verdict, judge};
use super::machine::{Found, State, Status};
use super::pane::{STILL, last_write_age, now_secs};
use super::report::{PaneReport, PanesResult};
use super::targets;
use super::{PanesRequest, Profiles};
use crate::error::Result;
use crate::pane::shell::{self, Reads};
use crate::tmux::Socket;
use regex::Regex;

/// Looks at the screen (2 ms apart) while a line is read and the cursor's
/// line is still empty.
const LAG_TRIES: u32 = 5;

const FORMAT: &str = "#{pane_id}\t#{cursor_y}\t#{alternate_on}\t#{pane_current_command}\t#{pane_dead_status}\t#{pane_command_status}\t#{window_activity}\t#{cursor_x}\t#{history_size}\t#{pane_title}";
/// The fields of [`FORMAT`]: the title comes last, the one that may hold
/// a tab.
const FIELDS: usize = 10;

/// What one look at a pane saw: its state, and (for `answer`) who reads
/// its terminal, its screen and where its cursor is.
#[derive(Debug, Clone)]
pub struct Seen {
    pub status: Status,
    /// How the terminal is read, and the process reading it (`/proc`).
    pub reads: Option<Reads>,
    pub reader: Option<u32>,
    pub screen: Vec<String>,
    /// The cursor (x, y) and the history's size: where the pane's output
    /// stands.
    pub cursor: (u32, u32, u64),
}

pub fn panes(req: &PanesRequest) -> Result<PanesResult> {
    let scopes = targets::resolve(&req.socket, &req.targets, req.server)?;
    let rows = targets::select(&targets::list(&req.socket)?, &scopes);
    let re = Regex::new(crate::pane::shell::DEFAULT_PROMPTS).expect("the prompts are valid");
    let mut out = Vec::new();
    for r in rows {
        let s = look(&req.socket, &r, &req.profiles, req.quiet_after, &re).status;
        out.push(PaneReport::of_status(
            &r.pane_id,
            &r.session_name,
            r.window_index,
            &s,
        ));
    }
    Ok(PanesResult { panes: out })
}

/// One look at pane `r`: the kernel first, then tmux.
pub fn look(
    socket: &Socket,
    r: &targets::Row,
    profiles: &Profiles,
    quiet_after: std::time::Duration,
    re: &Regex,
) -> Seen {
    let now = now_secs();
    let t = &r.pane_id;
    let s = |a: &str| a.to_owned();
    // The kernel first, then the screen: a question is written before it
    // is read, so once a read is seen its question is on its way to tmux.
    let mut l = Look {
        still: std::time::Duration::MAX,
        ..Look::default()
    };
    let mut reading = None;
    if shell::proc_available() && !r.dead {
        let (reads, reader) = shell::reads(r.pane_pid, &r.tty);
        reading = reader;
        l.reads = Some(reads);
        l.command = match reads {
            Reads::Prompt => None,
            Reads::Line { .. } | Reads::Keys { .. } => reader.and_then(shell::program_name),
            _ => shell::foreground_command(r.pane_pid).or_else(|| shell::program_name(r.pane_pid)),
        };
    }
    let ask = || {
        socket
            .batch(&[
                vec![s("display-message"), s("-p"), s("-t"), t.clone(), s(FORMAT)],
                vec![s("capture-pane"), s("-p"), s("-t"), t.clone()],
            ])
            .unwrap_or_default()
    };
    let mut replies = ask();
    let cursor_row = |replies: &[Vec<String>]| -> String {
        let info = replies
            .first()
            .and_then(|l| l.first())
            .cloned()
            .unwrap_or_default();
        let y: usize = info
            .split('\t')
            .nth(1)
            .and_then(|y| y.parse().ok())
            .unwrap_or(0);
        replies
            .get(1)
            .and_then(|rows| rows.get(y))
            .map(|l| l.trim_end().to_owned())
            .unwrap_or_default()
    };
    // A line read with nothing on the cursor's line yet: tmux may not have
    // drawn the question; look again a few times (2 ms apart).
    for _ in 0..LAG_TRIES {
        if !matches!(l.reads, Some(Reads::Line { .. })) || !cursor_row(&replies).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        replies = ask();
    }
    let info = replies
        .first()
        .and_then(|l| l.first())
        .cloned()
        .unwrap_or_default();
    let f: Vec<&str> = info.splitn(FIELDS, '\t').collect();
    let field = |i: usize| f.get(i).copied().unwrap_or("");
    let screen = replies.get(1).cloned().unwrap_or_default();
    let num = |i: usize| field(i).parse::<u64>().unwrap_or(0);
    let cursor = (num(7) as u32, num(1) as u32, num(8));
    let reads = l.reads;
    let seen = |status: Status| Seen {
        status,
        reads,
        reader: reading,
        screen: screen.clone(),
        cursor,
    };
    let status = |found: Found, exit_status, since| {
        seen(Status {
            state: found.state,
            reason: found.reason,
            question: found.question,
            command: found.command,
            exit_status,
            agent: found.agent,
            source: found.source,
            since,
        })
    };
    let written = last_write_age(&r.tty).map_or(now, |a| now - a.as_secs_f64());
    if r.dead || f.first() != Some(&t.as_str()) {
        let f = Found {
            source: "tmux",
            ..Found::new(
                State::Exited,
                if r.dead { "pane_dead" } else { "pane_closed" },
                None,
            )
        };
        // (A zombie tmux has not reaped yet: the kernel keeps its status.)
        let exit = field(4)
            .parse()
            .ok()
            .or_else(|| crate::sys::procfs::exit_status(r.pane_pid));
        return status(f, exit, written);
    }
    l.line = cursor_row(&replies);
    l.alt = field(2) == "1";
    // A key reader with a timer that wrote in the last seconds (tmux
    // keeps the time to the second): a live display.
    l.redrawing = l.reads == Some(Reads::Keys { timed: true })
        && field(6)
            .parse::<f64>()
            .is_ok_and(|t| now - t < super::judge::DISPLAY_QUIET.as_secs_f64() + 1.0);
    // A coding agent: which (its processes), and its title as tmux keeps
    // it (its hooks reach only a watch's stream).
    if let (Some(reads), Some(fg)) = (l.reads, crate::sys::procfs::foreground_group(r.pane_pid))
        && reads != Reads::Prompt
    {
        let procs = super::pane::foreground_procs(r.pane_pid, fg);
        l.agent = profiles.identify(&procs).map(|p| p.name.clone());
        // (A program no profile names: judged as an agent while it reads
        // key by key.)
        if l.agent.is_none() && matches!(reads, Reads::Keys { .. }) {
            l.program = super::unknown::identity(&procs);
            if l.program.is_some() {
                l.agent_age = crate::sys::procfs::age(fg).unwrap_or(std::time::Duration::MAX);
                l.redrawing = false;
            }
        }
        if l.agent.is_some() {
            l.agent_age = crate::sys::procfs::age(fg).unwrap_or(std::time::Duration::MAX);
            l.redrawing = false;
            l.title = Some(field(9).to_owned());
            l.title_age = std::time::Duration::MAX;
        }
    }
    if !shell::proc_available() {
        let shell_name = shell::program_name(r.pane_pid).unwrap_or_default();
        l.shell_fg = Some(field(3) == shell_name);
        l.command = Some(field(3).to_owned()).filter(|c| !c.is_empty());
    }
    let p: &Profiles = profiles;
    let found = match judge(&l, Some(&screen), p, re, STILL) {
        Verdict::Is(f) => f,
        // A coding agent starting, its first screen not drawn yet.
        Verdict::Wait(_) => Found {
            agent: l.agent.clone().or_else(|| l.program.clone()),
            source: "screen",
            ..Found::new(State::Working, "agent_working", l.command.clone())
        },
        _ => Found {
            agent: l.agent.clone(),
            source: "screen",
            ..Found::new(State::Asking, "reads_keys", l.command.clone())
        },
    };
    match found.state {
        State::Working => {
            let quiet = last_write_age(&r.tty).is_some_and(|a| a >= quiet_after);
            let started = shell::foreground_age(r.pane_pid).map(|a| now - a.as_secs_f64());
            if quiet && found.reason == "running" {
                let since = written + quiet_after.as_secs_f64();
                let f = Found {
                    state: State::Quiet,
                    reason: "no_output",
                    ..found
                };
                status(f, None, since.min(now))
            } else {
                status(found, None, started.unwrap_or(written))
            }
        }
        State::Prompt => status(found, field(5).parse().ok(), written),
        _ => status(found, None, written),
    }
}
