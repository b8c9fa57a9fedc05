//! `output`: what the pane wrote that a cursor has not shown yet.

use super::*;

pub fn output(req: &OutputRequest, mut emit: impl FnMut(&OutputResult)) -> Result<OutputResult> {
    let start = Instant::now();
    if let Some(r) = super::idle::idle_at_once(req, start)? {
        return Ok(r);
    }
    let c = &req.common;
    let deadline = start + c.timeout;
    let saver = match &c.save_to {
        Some(p) => Some(Saver::open(p, false)?),
        None => None,
    };
    let option = cursor::option_name(&c.cursor);
    // (--ready is signalled below, once what the pane shows at entry is
    // known: a key sent on the signal must not change it first.)
    let mut f = Follow::open(c, Some(option), None, deadline)?;
    f.saver = saver;
    let pid = f.pane.pane_pid;
    let rec = Record::parse(f.src.cursor_value());
    let geometry = f.src.geometry();
    let whole = f.src.history_from() == 0;
    let mut located = cursor::locate(
        rec.as_ref(),
        f.src.history(),
        f.src.history_from(),
        &geometry,
        whole,
    );
    if located.is_none() {
        f.src
            .rebaseline_all(Instant::now() + Duration::from_secs(10))?;
        located = cursor::locate(rec.as_ref(), f.src.history(), 0, &f.src.geometry(), true);
    }
    let located = located.expect("a whole capture always locates");
    crate::trace!(
        "output entry: exact {} history from {} ({} lines) geometry {:?} record {:?} located {:?}",
        f.src.exact_entry(),
        f.src.history_from(),
        f.src.history().len(),
        f.src.geometry(),
        rec.as_ref().map(|r| (r.abs, r.history_size, r.sure)),
        (located.first, located.skip_first, located.missed)
    );
    let respawned = rec.as_ref().is_some_and(|r| r.pid != pid);
    let (lines_missed, exact, cleared) = match located.missed {
        // (A place found among lines that repeat may be off by some.)
        Missed::None => (
            0,
            rec.as_ref().is_none_or(|r| r.sure) && f.src.exact_entry(),
            false,
        ),
        Missed::Trimmed(n) => (n, false, false),
        Missed::Cleared => (0, false, true),
    };

    // Lines already there and not shown: complete ones, and the cursor's
    // unfinished line unless it is the shell's prompt.
    let mut hist: Vec<String> = f.src.history()[located.first.min(f.src.history().len())..]
        .iter()
        .map(|l| l.trim_end().to_owned())
        .collect();
    if located.skip_first && !hist.is_empty() {
        hist.remove(0);
    }
    // A run that timed out while its wrapper was still being typed: the
    // rest of the wrapper's echo is no output.
    let mut wrapper_cut = false;
    if let Some(id) = rec.as_ref().and_then(|r| r.run.as_deref())
        && let Some((n, rest)) = wrapper_rows(&hist, id)
    {
        hist.drain(..n);
        if let Some(rest) = rest {
            hist.insert(0, rest);
        }
        wrapper_cut = true;
    }
    // The row the cursor was saved on held a prompt (the shell's, or a
    // program's question): what now follows that prompt on it was typed.
    // (An empty row held none: a shell that was back at its read before
    // its prompt reached the stream prints it there afterwards.)
    let typed_at_prompt = !wrapper_cut
        && !located.skip_first
        && located.missed == Missed::None
        && rec.as_ref().is_some_and(|r| {
            r.prompt
                && r.head.0 > 0
                && hist.first().is_some_and(|l| {
                    cursor::head_matches(l, r.head)
                        && l.chars().count() > r.head.0
                        && !l.contains(WRAPPER_SIGNATURE)
                })
        });
    while hist.last().is_some_and(|l| l.is_empty()) {
        hist.pop();
    }
    let tracker_line = f.src.tracker().current_line();
    let at_shell_prompt = f.prompt_soon(deadline.min(Instant::now() + PROMPT_SOON));
    f.shown_part = rec.as_ref().map(|r| (r.abs, r.part)).unwrap_or((-1, 0));
    let mut entry_partial = None;
    if !tracker_line.is_empty() && hist.last() == Some(&tracker_line) {
        if typed_at_prompt && hist.len() == 1 {
            // Keys typed at the program's prompt the cursor was saved at (a
            // REPL's statement, an answer), not yet entered: the line comes
            // back for context, as typed, never as output; nor is it shown
            // again as the unfinished line.
            if let Some(r) = &rec {
                f.shown_part = (r.abs, cursor::hash_text(&[&tracker_line]));
            }
        } else {
            let l = hist.pop().unwrap_or_default();
            if !at_shell_prompt {
                entry_partial = Some(l);
            }
        }
    }
    // The echo of a typed wrapper goes; output tmux joined to it stays.
    hist = hist
        .into_iter()
        .filter_map(|l| {
            if !l.contains(WRAPPER_SIGNATURE) {
                Some(l)
            } else {
                past_wrapper(&l).map(str::to_owned)
            }
        })
        .collect();
    if let Some(s) = &mut f.saver {
        s.write(&hist);
    }
    f.until = req.until.clone();
    let show = f.show.clone();
    for (i, l) in hist.into_iter().enumerate() {
        if i == 0 && typed_at_prompt {
            // A statement typed at a REPL's prompt is left out; what was
            // typed at another prompt comes back as its line.
            let head = rec.as_ref().map_or(0, |r| r.head.0);
            let prompt: String = l.chars().take(head).collect();
            if f.prompt_re().is_match(prompt.trim()) {
                continue;
            }
            f.echo_lines += 1;
        } else if f.until.as_ref().is_some_and(|re| re.is_match(&l)) {
            f.until_hit = true;
        }
        f.lines.push(l, show.as_ref());
    }

    // A run that returned before its command ended: did it end meanwhile?
    // Its follower leaves the status in a pane option.
    f.run = rec.as_ref().and_then(|r| r.run.clone());
    if let Some(id) = f.run.clone() {
        f.store = crate::waits::store::store_of(&c.socket, &f.pane).ok();
        pending_run_status(&mut f, &c.socket, &id)?;
        // It ended, and something else has started since (a command typed
        // after it): its status is not the end of what runs now. An end
        // only guessed (unobserved) with a command running was no end: the
        // run stays followed, so its end mark is still taken when it comes.
        if let Some(fin) = f.finished
            && matches!(f.foreground(), Fg::Command(_))
        {
            f.finished = None;
            if fin.source != ExitSource::Unobserved {
                f.run = None;
            }
        }
    }
    // A command was running at the last call, or new lines came since, and
    // the shell is reading a command line again: what ran ended in between
    // (reported at once).
    if f.finished.is_none()
        && (rec.as_ref().is_some_and(|r| r.busy) || (rec.is_some() && f.has_output()))
        && at_shell_prompt
    {
        // tmux 3.8 keeps the status of the last command a shell marked with
        // OSC 133: the one that ended since the cursor was saved.
        let status = rec
            .as_ref()
            .and_then(|r| command_status_since(&c.socket, &f.pane.pane_id, r.saved));
        f.finished = Some(f.ended_at_prompt(status));
    }

    let (before, after) = f.src.tracker().split_at_cursor();
    let typed = if at_shell_prompt {
        shell::unsubmitted_text(&before, &after)
    } else {
        None
    };
    let mut input_outcome = typed.as_ref().map(|_| InputOutcome::Pending);
    // Armed: the shell at its prompt and the text typed there are known,
    // and an Enter sent on this signal is the submission this call reports.
    if let Some(ch) = &req.ready {
        c.socket.run(["wait-for", "-S", "--", ch])?;
    }
    let prompts_at_entry = f.src.tracker().prompts().0;
    let mut running_seen = matches!(f.foreground(), Fg::Command(_));
    let mut timed_out = false;
    let mut reason = OutputReason::Output;
    let until_in = |partial: Option<&str>| -> bool {
        req.until
            .as_ref()
            .is_some_and(|re| partial.is_some_and(|p| re.is_match(p)))
    };

    let mut prompt = None;
    let mut ready = if f.finished.is_some() {
        reason = OutputReason::Finished;
        true
    } else if req.until.is_some() {
        let hit = f.until_hit || until_in(entry_partial.as_deref());
        if hit {
            reason = OutputReason::Until;
        }
        hit
    } else if let Some(p) = entry_partial.clone()
        && f.asks(&p)
    {
        // A program stopped at its prompt since the last call.
        prompt = Some(p);
        reason = OutputReason::Prompt;
        true
    } else {
        !req.until_finished && (f.has_output() || entry_partial.is_some())
    };
    // Nothing runs and nothing came: nothing is coming, so say so now
    // rather than wait out the timeout (unless armed for what the caller
    // does next, with --ready).
    if !ready
        && req.ready.is_none()
        && req.until.is_none()
        && f.run.is_none()
        && typed.is_none()
        && !f.has_output()
        && at_shell_prompt
        && shell::has_no_jobs(pid)
    {
        reason = OutputReason::Idle;
        ready = true;
    }
    let mut sent_any = false;
    loop {
        if !ready {
            // An unfinished line may be a question: looked at again once
            // the pane is quiet (see `run`).
            match f.src.next_items(f.question_quiet(deadline)) {
                Ok(Some(items)) => {
                    f.output_came();
                    f.absorb(items);
                }
                Ok(None) if Instant::now() < deadline => {
                    if let Some(p) = f.question_now() {
                        prompt = Some(p);
                        reason = OutputReason::Prompt;
                        ready = true;
                    }
                    continue;
                }
                Ok(None) => {
                    timed_out = true;
                    reason = OutputReason::Timeout;
                }
                // The pane went: that is how the command ended (the check
                // below says finished; the cursor is not saved on a gone pane).
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    f.finished = Some(f.pane_end(&c.socket, &e));
                }
                Err(e) => return Err(e),
            }
            if !timed_out {
                let mut state = StateCheck {
                    prompts_at_entry,
                    running_seen: &mut running_seen,
                    input_outcome: &mut input_outcome,
                };
                let mut decided = state.check(&mut f);
                if req.until.is_some() {
                    // What was asked for wins over how the pane stands
                    // (`^>>>` is the REPL's prompt coming back).
                    let t = f.src.tracker();
                    let partial = t.has_partial().then(|| t.current_line());
                    if f.until_hit || until_in(partial.as_deref()) {
                        decided = Some(Decision::Until);
                    } else if matches!(decided, Some(Decision::Output)) {
                        // Text typed at the prompt was submitted (or
                        // erased): the command it starts may print what
                        // was asked for; that is no answer yet.
                        decided = None;
                    }
                } else if decided.is_none()
                    && (f.has_output()
                        || (f.src.tracker().has_partial()
                            && !f.src.tracker().at_prompt()
                            && !f.prompt_soon(deadline.min(Instant::now() + PROMPT_SOON))))
                {
                    // One burst of output is one reply: gather it, then
                    // look again (the command may have ended meanwhile).
                    f.settle(deadline)?;
                    decided = state.check(&mut f);
                    if decided.is_none() && !req.until_finished {
                        decided = Some(Decision::Output);
                    }
                }
                ready = decided.is_some();
                match decided {
                    Some(Decision::Finished) => reason = OutputReason::Finished,
                    Some(Decision::Prompt(p)) => {
                        prompt = Some(p);
                        reason = OutputReason::Prompt;
                    }
                    Some(Decision::Until) => reason = OutputReason::Until,
                    Some(Decision::Output) => reason = OutputReason::Output,
                    None => {}
                }
            } else {
                ready = true;
            }
            if !ready {
                continue;
            }
        }
        // Nothing came since the entry: the cursor is saved from its
        // capture, where tmux finds the pane's program the same and alive
        // (so no look of its own at the pane is needed below).
        let saved = if f.finished.is_none() {
            let (show, pending) = save_args(&mut f);
            f.save_cursor_quiet(&c.socket, &c.cursor, show, pending)?
        } else {
            None
        };
        // The pane's program ended (or the pane was respawned, and the new
        // one wrote) while this was decided: that is how it stands.
        if saved.is_none()
            && f.finished.is_none()
            && !timed_out
            && (!crate::sys::alive(f.pane.pane_pid) || f.pane_replaced())
            && let Some(end) = f.pane_went(&c.socket, deadline)
        {
            f.finished = Some(end);
            reason = OutputReason::Finished;
            prompt = None;
        }
        // Ready to return (or, with --ndjson, to print a batch).
        let done = f.finished.is_some() || timed_out || prompt.is_some() || !req.ndjson;
        let r = finish_output(
            &mut f,
            req,
            start,
            saved,
            ReturnState {
                reason,
                timed_out,
                prompt: prompt.clone(),
                typed: typed.clone(),
                input_outcome,
                lines_missed: if sent_any { 0 } else { lines_missed },
                exact: sent_any || exact,
                cleared: !sent_any && cleared,
                respawned: !sent_any && respawned,
            },
        )?;
        if done {
            return Ok(r);
        }
        emit(&r);
        sent_any = true;
        f.take_lines();
        f.until_hit = false;
        ready = false;
        reason = OutputReason::Output;
    }
}

/// How long an unfinished line written while the shell itself is in the
/// foreground may take to turn out to be its prompt (the shell reads).
const PROMPT_SOON: Duration = Duration::from_millis(500);

/// Whether the unfinished line is shown (unless it is the shell's prompt,
/// or was shown already as it is), and the run still pending, as the
/// cursor is saved.
fn save_args(f: &mut Follow) -> (bool, Option<String>) {
    let pending = if f.finished.is_some() {
        None
    } else {
        f.run.clone()
    };
    (f.finished.is_none() && !f.shell_prompt(), pending)
}

/// The result, with the cursor saved (`saved`: already, with this
/// unfinished line).
pub(super) fn finish_output(
    f: &mut Follow,
    req: &OutputRequest,
    start: Instant,
    saved: Option<Option<String>>,
    st: ReturnState,
) -> Result<OutputResult> {
    let c = &req.common;
    let (show, pending) = save_args(f);
    let mut partial = None;
    if let Some(p) = saved {
        partial = p;
    } else if !matches!(
        f.finished,
        Some(Finish {
            source: ExitSource::PaneDead | ExitSource::PaneClosed,
            ..
        })
    ) {
        match f.save_cursor(&c.socket, &c.cursor, show, pending) {
            Ok(p) => partial = p,
            Err(e) if matches!(e.kind, Kind::PaneDied | Kind::NoPane) => {}
            Err(e) => return Err(e),
        }
    }
    if let (Some(id), Some(_)) = (&f.run, f.finished) {
        // Seen ending here; its follower may have stored the status too.
        let _ = c
            .socket
            .run(["set-option", "-pu", "-t", &f.pane.pane_id, &exit_option(id)]);
    }
    let partial = partial.filter(|p| (f.saved_abs, cursor::hash_text(&[p])) != f.shown_part);
    if let Some(p) = &partial {
        f.shown_part = (f.saved_abs, cursor::hash_text(&[p]));
    }
    let mut lines = f.take_lines();
    let is_partial = partial.is_some();
    if let Some(p) = partial {
        lines.push(p, f.show.as_ref());
    }
    let mut clipped = clip(&lines.lines, &c.clip);
    clipped.clipped += lines.thinned;
    let running = match f.foreground() {
        Fg::Command(c) => Some(c),
        _ => None,
    };
    Ok(OutputResult {
        pane_id: f.pane.pane_id.clone(),
        lines: clipped.lines,
        cursor: c.cursor.clone(),
        // The end may have come with the last output taken in.
        reason: if f.finished.is_some() && st.reason == OutputReason::Output {
            OutputReason::Finished
        } else {
            st.reason
        },
        finished: f.finished.is_some(),
        exit_status: f.finished.and_then(|x| x.status),
        exit_source: f.finished.map(|x| x.source),
        timed_out: st.timed_out,
        running,
        lines_missed: st.lines_missed,
        lines_missed_exact: st.exact,
        history_cleared: st.cleared,
        respawned: st.respawned,
        clipped_lines: clipped.clipped,
        partial: is_partial,
        prompt: st.prompt,
        unsubmitted_input: st.typed,
        input_outcome: st.input_outcome,
        elapsed_seconds: seconds(start.elapsed()),
        effective_timeout: seconds(c.timeout),
        save_error: f.saver.as_ref().and_then(|s| s.error.clone()),
        fallback: f.src.fallback(),
    })
}

pub(super) enum Decision {
    Finished,
    Prompt(String),
    Until,
    Output,
}

/// Looks at the pane after each batch: did the followed command end, did a
/// program stop at its prompt, what became of unsubmitted input.
pub(super) struct StateCheck<'a> {
    prompts_at_entry: u32,
    running_seen: &'a mut bool,
    input_outcome: &'a mut Option<InputOutcome>,
}

impl StateCheck<'_> {
    fn check(&mut self, f: &mut Follow) -> Option<Decision> {
        let fg = f.foreground();
        if matches!(fg, Fg::Command(_)) {
            *self.running_seen = true;
        }
        let prompt_back = f.src.tracker().prompts().0 > self.prompts_at_entry;
        // The shell is back in the foreground between the commands of a
        // list too (`a; echo; b`): it must be reading a command line again
        // (raw terminal, or bracketed paste switched back on).
        let shell_fg = match fg {
            Fg::Shell => Some(true),
            Fg::Command(_) => Some(false),
            Fg::Unknown => None,
        };
        let reading = prompt_back || f.shell_prompt();
        if f.finished.is_none()
            && (*self.running_seen || prompt_back)
            && (shell_fg == Some(true) || shell_fg.is_none())
            && reading
            && (f.has_output() || *self.running_seen)
        {
            // The shell is back: what it wrote on the way (an end mark of
            // `run`, an OSC 133 D) may still be in flight; it says more.
            let status = f.src.tracker().prompts().1.filter(|_| prompt_back);
            f.drain(Duration::from_millis(30));
            if f.finished.is_none() {
                f.finished = Some(f.ended_at_prompt(status));
            }
        }
        let t = f.src.tracker();
        if *self.input_outcome == Some(InputOutcome::Pending) {
            if !t.at_prompt() || prompt_back {
                *self.input_outcome = Some(InputOutcome::Submitted);
            } else {
                let (b, a) = t.split_at_cursor();
                // (A line with nothing at all is the one after the typed
                // line's line feed: the shell has not said yet that it
                // took the line; erasing leaves the prompt.)
                let left_the_line = b.trim().is_empty() && a.trim().is_empty();
                if shell::unsubmitted_text(&b, &a).is_none() && !left_the_line {
                    *self.input_outcome = Some(InputOutcome::Erased);
                }
            }
        }
        if f.finished.is_some() {
            Some(Decision::Finished)
        } else if let Some(p) = f.program_prompt() {
            Some(Decision::Prompt(p))
        } else if self
            .input_outcome
            .is_some_and(|o| o != InputOutcome::Pending)
        {
            Some(Decision::Output)
        } else {
            None
        }
    }
}

pub(super) struct ReturnState {
    reason: OutputReason,
    timed_out: bool,
    prompt: Option<String>,
    typed: Option<String>,
    input_outcome: Option<InputOutcome>,
    lines_missed: u64,
    exact: bool,
    cleared: bool,
    respawned: bool,
}
