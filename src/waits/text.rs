//! `tmux-wait text`: wait for new output in a pane to match.

use crate::engine::{EngineKind, PaneSource, Setup, open_source};
use crate::error::{Kind, Result};
use crate::matcher::{PatternList, Verdict, judge};
use crate::report::{Outcome, TextResult, bound_lines, seconds};
use crate::tmux::{Socket, resolve_pane};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A validated text wait.
#[derive(Debug, Clone)]
pub struct TextRequest {
    pub socket: Socket,
    pub target: Option<String>,
    pub patterns: PatternList,
    /// The patterns as typed, for descriptions.
    pub pattern_sources: Vec<String>,
    pub stops: PatternList,
    /// Already clamped by the ceiling.
    pub timeout: Duration,
    pub engine: EngineKind,
    pub interval: Duration,
    pub ready: Option<String>,
    /// The result needs the pane's tail even when the wait matched (JSON
    /// output); a person's one-line message shows it only on a timeout, so
    /// a match is reported without the extra tmux call.
    pub want_tail: bool,
    /// Also match what was written since this cursor last read the pane,
    /// and move it past what the wait saw (see `since_cursor`).
    pub cursor: Option<String>,
}

/// After a success pattern hits, output arriving this soon after is taken
/// as part of the same write and checked for stop patterns (only when
/// `--stop` is given).
const STOP_GRACE: Duration = Duration::from_millis(3);

fn stop_in_grace(
    src: &mut dyn PaneSource,
    req: &TextRequest,
    deadline: Instant,
) -> Result<Option<(usize, Vec<String>)>> {
    let end = (Instant::now() + STOP_GRACE).min(deadline);
    while let Some(more) = src.next_batch(end)? {
        let texts: Vec<&str> = more.iter().map(|c| c.text.as_str()).collect();
        if let Some((i, hits)) = req.stops.first_hit(&texts) {
            return Ok(Some((
                i,
                hits.iter().map(|&h| more[h].line().to_owned()).collect(),
            )));
        }
    }
    Ok(None)
}

/// A matched line as the result shows it: trimmed, unless pattern `p` of
/// `list` needed the blanks the program wrote at its end (`PROMPT> `).
fn shown(c: &crate::engine::Candidate, list: &PatternList, p: usize) -> String {
    let line = c.line();
    if c.rendered.is_none() && line.len() < c.text.len() && !list.hits(p, line) {
        c.text.clone()
    } else {
        line.to_owned()
    }
}

/// Setting up (attach, baseline) may take this long even when the timeout
/// is shorter; the wait itself then ends at once.
const SETUP_TIME: Duration = Duration::from_secs(10);

pub fn run(req: &TextRequest) -> Result<TextResult> {
    if let Some(cursor) = &req.cursor {
        return since_cursor(req, cursor);
    }
    let start = Instant::now();
    let deadline = start + req.timeout;
    // They compile while tmux answers.
    req.patterns.compile_ahead();
    req.stops.compile_ahead();
    // Under a flood, lines no pattern or stop can hit need not be made;
    // the last ones are kept for the tail (`recent`).
    let needed = (!req.patterns.is_empty())
        .then(|| req.patterns.needed(&req.stops))
        .flatten();
    if let Some(n) = &needed {
        n.compile_ahead();
    }
    let pane = resolve_pane(&req.socket, req.target.as_deref())?;
    let setup = Setup {
        interval: req.interval,
        ready: req.ready.clone(),
        deadline: deadline.max(start + SETUP_TIME),
        final_lines: false,
        cursor: None,
        mark: None,
    };
    let mut src: Box<dyn PaneSource> = open_source(req.engine, &req.socket, &pane, &setup)?;
    let at_entry = !req.patterns.is_empty() && req.patterns.first_hit(src.entry_lines()).is_some();
    if let Some(needed) = needed {
        src.only_lines_hit_by(needed, crate::report::MAX_LINES);
    }

    // Recent new lines, the tail's fallback when the pane is gone at the end.
    let mut recent: VecDeque<String> = VecDeque::new();
    let (outcome, index, matched) = loop {
        let Some(batch) = src.next_batch(deadline)? else {
            let o = if src.saw_alternate() {
                Outcome::AlternateScreen
            } else {
                Outcome::Timeout
            };
            break (o, None, Vec::new());
        };
        let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
        let lines = |list: &PatternList, p: usize, hits: &[usize]| -> Vec<String> {
            hits.iter().map(|&i| shown(&batch[i], list, p)).collect()
        };
        match judge(&req.patterns, &req.stops, &texts) {
            Some(Verdict::Stopped(i, hits)) => {
                break (Outcome::Stopped, Some(i), lines(&req.stops, i, &hits));
            }
            Some(Verdict::Matched(i, hits)) => {
                // One write by a program can reach us in more than one
                // piece; what follows within STOP_GRACE is the same output,
                // and a stop pattern in it wins.
                if !req.stops.is_empty()
                    && let Some((si, stop_lines)) = stop_in_grace(&mut *src, req, deadline)?
                {
                    break (Outcome::Stopped, Some(si), stop_lines);
                }
                break (Outcome::Matched, Some(i), lines(&req.patterns, i, &hits));
            }
            None if req.patterns.is_empty() && src.saw_output() => {
                let all: Vec<String> = batch.iter().map(|c| c.line().to_owned()).collect();
                break (Outcome::AnyOutput, None, all);
            }
            None => {}
        }
        // Only the last lines can be in the tail: a flood's batch holds
        // thousands, none of them copied.
        let keep = batch.len().saturating_sub(crate::report::MAX_LINES);
        for c in &batch[keep..] {
            if recent.len() == crate::report::MAX_LINES {
                recent.pop_front();
            }
            recent.push_back(c.line().to_owned());
        }
        src.recycle(batch);
    };
    let elapsed = start.elapsed();
    let found = matches!(outcome, Outcome::Matched | Outcome::AnyOutput);
    // A verdict from the stream shows the pane as the stream drew it; a
    // timeout asks tmux how the pane looks now.
    let seen = match outcome {
        Outcome::Timeout => None,
        _ if !req.want_tail => {
            recent.extend(matched.iter().cloned());
            Some(recent.iter().cloned().collect())
        }
        _ => src.seen_tail(),
    };
    let tail = if let Some(tail) = seen {
        tail
    } else {
        match src.finish() {
            Ok(f) => f.tail,
            // The verdict came from output written before the pane went away;
            // it stands, and the tail is what we saw of it.
            Err(e) if e.kind == Kind::PaneDied && outcome != Outcome::Timeout => {
                recent.extend(matched.iter().cloned());
                recent.into_iter().collect()
            }
            Err(e) => return Err(e),
        }
    };
    Ok(TextResult {
        found,
        outcome,
        matched_index: index,
        matched_lines: bound_lines(matched, false),
        tail: bound_lines(tail, true),
        saw_new_output: src.saw_output(),
        matched_at_entry: at_entry && !found,
        alternate_screen: src.saw_alternate(),
        pane_id: pane.pane_id,
        elapsed_seconds: seconds(elapsed),
        effective_timeout: seconds(req.timeout),
        fallback: src.fallback(),
    })
}

/// A text wait that also takes what was written since `cursor` last read
/// the pane: `output` calls, each returning what its cursor had not shown
/// (the history since the cursor, then the stream, with nothing between),
/// judged as they come, until a pattern hits or the time is up. The
/// cursor moves past each reply, so the next call (a `wait`, `output`, a
/// text wait with this cursor) starts after what this one saw.
fn since_cursor(req: &TextRequest, cursor: &str) -> Result<TextResult> {
    use crate::waits::command::{self, Common, OutputRequest};
    let start = Instant::now();
    let deadline = start + req.timeout;
    let until = req.patterns.any_of(&req.stops);
    let mut recent: VecDeque<String> = VecDeque::new();
    let mut saw = false;
    let mut ready = req.ready.clone();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let oreq = OutputRequest {
            common: Common {
                socket: req.socket.clone(),
                target: req.target.clone(),
                cursor: cursor.to_owned(),
                timeout: left.max(Duration::from_millis(1)),
                clip: crate::clip::ClipOptions::all(),
                save_to: None,
                prompt: None,
            },
            until: Some(until.clone()),
            ndjson: false,
            until_finished: false,
            ready: ready.take(),
        };
        let r = command::output(&oreq, |_| {})?;
        saw |= !r.lines.is_empty();
        let verdict = judge(&req.patterns, &req.stops, &r.lines);
        let lines_of = |hits: &[usize]| hits.iter().map(|&i| r.lines[i].clone()).collect();
        let done = match verdict {
            Some(Verdict::Stopped(i, hits)) => Some((Outcome::Stopped, Some(i), lines_of(&hits))),
            Some(Verdict::Matched(i, hits)) => Some((Outcome::Matched, Some(i), lines_of(&hits))),
            None if req.patterns.is_empty() && !r.lines.is_empty() => {
                Some((Outcome::AnyOutput, None, r.lines.clone()))
            }
            None if r.timed_out || Instant::now() >= deadline => {
                Some((Outcome::Timeout, None, Vec::new()))
            }
            None => None,
        };
        for l in &r.lines {
            if recent.len() == crate::report::MAX_LINES {
                recent.pop_front();
            }
            recent.push_back(l.clone());
        }
        if let Some((outcome, index, matched)) = done {
            let found = matches!(outcome, Outcome::Matched | Outcome::AnyOutput);
            return Ok(TextResult {
                found,
                outcome,
                matched_index: index,
                matched_lines: bound_lines(matched, false),
                tail: bound_lines(recent.into_iter().collect(), true),
                saw_new_output: saw,
                matched_at_entry: false,
                alternate_screen: false,
                pane_id: r.pane_id.clone(),
                elapsed_seconds: seconds(start.elapsed()),
                effective_timeout: seconds(req.timeout),
                fallback: r.fallback,
            });
        }
    }
}
