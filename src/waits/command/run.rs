//! `run`: type a command into the pane's shell and wait until it ends.

use super::*;

impl Follow {
    /// Save the cursor at the pane's cursor row, after taking in what the
    /// pane wrote up to that moment. `partial` is the unfinished line if it
    /// was shown; `pending` a run whose end was not seen.
    pub(super) fn save_cursor(
        &mut self,
        socket: &Socket,
        name: &str,
        show_partial: bool,
        pending: Option<String>,
    ) -> Result<Option<String>> {
        let t = self.pane.pane_id.clone();
        let deadline = Instant::now() + Duration::from_secs(5);
        let fmt = "#{pane_id}\t#{pane_pid}\t#{history_size}\t#{cursor_y}\t#{pane_height}\t#{history_limit}";
        // Taken where the stream stands: with no byte between two syncs
        // around it, the capture shows the pane exactly where the stream
        // has got to (`exact`).
        let (replies, exact) = self.src.aligned_query(
            &[
                argv(&["display-message", "-p", "-t", &t, fmt]),
                argv(&["capture-pane", "-p", "-t", &t, "-S", "-2", "-E", "-"]),
            ],
            deadline,
        )?;
        // Output up to the second sync is in the tracker now (and, when
        // exact, in the grid the replies describe); what came after it is
        // the next call's. (Lines after a finish are the next prompt's:
        // not taken.)
        let partial = self.take_in_at_save(show_partial);
        let r = crate::engine::Reply::new(&replies[0]);
        if r.text(0) != self.pane.pane_id {
            // The pane is gone: nothing to save the cursor in.
            return Ok(partial);
        }
        // A dead pane has no pid on tmux 3.8 (0: no program).
        let pid = r.num(1).ok().and_then(|p| u32::try_from(p).ok());
        let (history, cy, height, limit) = (
            r.num(2)?.max(0),
            r.num(3)?.max(0),
            r.num(4)?.max(1),
            r.num(5)?,
        );
        let mut rows = replies[1].clone();
        let offset = rows.len() as i64 - height;
        // Output kept coming around the capture: the stream went on past
        // it, or (tmux draws before it writes to the pipe) the capture is
        // ahead of the stream. The stream's cursor row is found by its
        // number while tmux trims no history, or by matching the rows it
        // drew (with the rows above its entry) against the capture; the
        // rows it drew below the captured cursor are added to it.
        let (drawn, drawn_row) = self.src.drawn_rows();
        let drawn = drawn.unwrap_or_default();
        let at = usize::try_from(offset + cy).unwrap_or(0);
        let by_number = drawn_row
            .filter(|_| history < limit)
            .and_then(|n| usize::try_from(n - history + offset).ok());
        let place = cursor::stream_place(&rows, at, &drawn, exact, by_number);
        crate::trace!(
            "save: exact {exact} history {history} cy {cy} at {at} by number {by_number:?} drawn {} place {place:?}",
            drawn.len()
        );
        let (sure, ahead) = (place.sure, place.ahead);
        if let Some(d) = place.drawn_below {
            rows.truncate(at);
            rows.extend(drawn[drawn.len() - 1 - d..].iter().cloned());
        }
        let cy = cy + ahead;
        let row = |y: i64| cursor::screen_row(&rows, offset, y);
        self.saved_abs = history + cy;
        let rec = self.record(
            pid.unwrap_or(0),
            history,
            cy,
            row,
            partial.as_deref(),
            pending,
            sure,
        );
        socket.run([
            "set-option",
            "-p",
            "-t",
            &self.pane.pane_id,
            &cursor::option_name(name),
            &rec.format(),
        ])?;
        Ok(partial)
    }

    /// Take in the lines the tracker holds as the cursor is saved, and
    /// give the unfinished line if it is shown. What came meanwhile may
    /// have ended the command (its end mark) and put the shell's prompt on
    /// the unfinished line: not output.
    fn take_in_at_save(&mut self, show_partial: bool) -> Option<String> {
        let items = self.src.tracker_items();
        self.absorb(items);
        if show_partial && self.finished.is_none() && !self.shell_prompt() {
            let p = self.src.tracker().current_line();
            (!p.is_empty()).then_some(p)
        } else {
            None
        }
    }

    /// The cursor's record for row `cy` of the pane (`row` gives the rows
    /// around it, by screen row) with `history_size` rows above the screen.
    #[allow(clippy::too_many_arguments)]
    fn record<'a>(
        &mut self,
        pid: u32,
        history_size: i64,
        cy: i64,
        row: impl Fn(i64) -> &'a str,
        partial: Option<&str>,
        pending: Option<String>,
        sure: bool,
    ) -> Record {
        Record {
            pid,
            abs: history_size + cy,
            fp: cursor::fingerprint(row(cy - 2), row(cy - 1)),
            part: partial.map(|p| cursor::hash_text(&[p])).unwrap_or(0),
            // (A run that ended while this was taken in is pending no more.)
            run: pending.filter(|_| self.finished.is_none()),
            history_size,
            head: cursor::head(row(cy)),
            busy: matches!(self.foreground(), Fg::Command(_)),
            saved: crate::state::now_secs(),
            prompt: matches!(
                self.reads(),
                Reads::Prompt | Reads::Line { .. } | Reads::Keys { .. }
            ),
            sure,
        }
    }

    /// [`Self::save_cursor`] for a pane that wrote nothing since the entry:
    /// the record is made from the entry's capture, and tmux sets it only
    /// if it finds the pane as that capture showed it (the same program,
    /// alive, the same size, history and cursor row); a sync after says no
    /// byte came meanwhile. One command list and a sync, instead of a
    /// lined-up capture (two syncs) and a command to set. `None`: the pane
    /// changed or wrote (the caller saves the long way, which sets the
    /// cursor again); else the unfinished line, as `save_cursor` gives it.
    pub(super) fn save_cursor_quiet(
        &mut self,
        socket: &Socket,
        name: &str,
        show_partial: bool,
        pending: Option<String>,
    ) -> Result<Option<Option<String>>> {
        use crate::tmux::protocol::command_list;
        let Some(q) = self.src.quiet_entry().cloned() else {
            return Ok(None);
        };
        // The rows above the cursor's are on the screen (the capture
        // holds no history rows).
        let cy = q.cursor_y;
        if cy < 2 || cy >= q.rows.len() as i64 {
            return Ok(None);
        }
        let partial = self.take_in_at_save(show_partial);
        let row = |y: i64| cursor::screen_row(&q.rows, 0, y);
        let rec = self.record(
            q.pid,
            q.history_size,
            cy,
            row,
            partial.as_deref(),
            pending,
            true,
        );
        let t = self.pane.pane_id.clone();
        let nonce = crate::state::random_id();
        let set = argv(&[
            "set-option",
            "-p",
            "-t",
            &t,
            &cursor::option_name(name),
            &rec.format(),
        ]);
        let moved = argv(&["display-message", "-p", "-t", &t, &format!("{nonce}:moved")]);
        let guarded = argv(&[
            "if-shell",
            "-F",
            "-t",
            &t,
            &q.guard(),
            &command_list(&[set]),
            &command_list(&[moved]),
        ]);
        // (The turn puts every byte tmux drew before the list into the
        // pipe, for the sync to find; see `aligned_query`.)
        let Ok(replies) = socket.batch(&[guarded, argv(&["run-shell", "-d", "0"])]) else {
            return Ok(None);
        };
        if replies.iter().flatten().any(|l| l.starts_with(&nonce)) {
            return Ok(None);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        if !self.src.still_quiet(deadline)? {
            return Ok(None);
        }
        self.saved_abs = q.history_size + cy;
        Ok(Some(partial))
    }
}

/// How long `run` waits for a shell between two commands to read again.
const READER_SETTLE: Duration = Duration::from_secs(2);

pub fn run(req: &RunRequest) -> Result<RunResult> {
    let start = Instant::now();
    let c = &req.common;
    let deadline = start + c.timeout;
    validate_command(&req.command)?;
    let mut f = Follow::open(c, None, None, deadline)?;
    let pane_id = f.pane.pane_id.clone();
    // Held until the command has started: then the prompt is no longer
    // there for another run to type into.
    let mut lock = pane_lock(&c.socket, &pane_id, Instant::now() + Duration::from_secs(2))?;
    let shell_name = f.shell_name.clone();
    if !shell_name.is_empty() && !shell::POSIX_SHELLS.contains(&shell_name.as_str()) {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!(
                "pane {pane_id} runs {shell_name}, not a POSIX shell (bash, zsh, sh, dash, ksh); run types POSIX syntax"
            ),
        ));
    }
    if let Fg::Command(cmd) = f.foreground() {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!(
                "pane {pane_id} is not at a shell prompt: {cmd} is running (follow it with tmux-wait output)"
            ),
        ));
    }
    // (A shell busy with builtins for longer gets the keys as before: it
    // reads them when it is done.)
    let _ = f.await_reader(deadline.min(Instant::now() + READER_SETTLE));
    let (before, after) = f.src.tracker().split_at_cursor();
    let typed = shell::unsubmitted_text(&before, &after);
    if let Some(t) = &typed
        && !req.force
    {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!(
                "pane {pane_id} has unsubmitted text at its prompt ({:?}); not typing over it (--force clears the line first)",
                crate::report::sanitize(&t.chars().take(60).collect::<String>())
            ),
        ));
    }
    // Opened now (a path that cannot be written is an error before
    // anything is typed), emptied only once the command is typed.
    let mut saver = match &c.save_to {
        Some(p) => Some(Saver::open_for_run(p)?),
        None => None,
    };
    let id = crate::state::random_id();
    f.run = Some(id.clone());
    f.run_only = true;
    // Where the shell also leaves the status (for a wait that can no
    // longer read the stream); old ones nobody took are dropped.
    f.store = crate::waits::store::store_of(&c.socket, &f.pane).ok();
    let status_file = f.store.as_ref().map(|s| {
        s.sweep_run_statuses(STATUS_FILES_KEPT);
        s.run_status_path(&id).to_string_lossy().into_owned()
    });
    let key = |k: &str| argv(&["send-keys", "-t", &pane_id, k]);
    let mut typing: Vec<Vec<String>> = Vec::new();
    if typed.is_some() {
        // Emacs-mode readline and zle: end of line, kill to its start.
        typing.extend([key("C-e"), key("C-u")]);
    }
    let zsh = shell_name == "zsh";
    let line = wrapper(&id, &req.command, req.history, status_file.as_deref(), zsh);
    // The wrapper goes in a file the shell reads, and a short line is
    // typed (see `typing::sourced`), where the pane's shell can read the
    // store (it runs as us, and sees our files: not in a container or a
    // chroot) and the line would not be kept in its history.
    // (zsh sets `$0` to a file it reads: the command's would change.)
    let script = script_name(&id);
    let sourced_at = match &f.store {
        Some(s) if !req.history && !zsh && crate::sys::reads_our_files(f.pane.pane_pid) => s
            .write_run_script(
                &script,
                &format!(
                    "{}\n",
                    wrapper(&id, &req.command, true, status_file.as_deref(), zsh)
                ),
            )
            .ok(),
        _ => None,
    };
    let line = match &sourced_at {
        Some(p) => sourced(&p.to_string_lossy()),
        None => line,
    };
    typing.push(argv(&["send-keys", "-t", &pane_id, "-l", "--", &line]));
    typing.push(key("Enter"));
    if let Err(e) = type_at_prompt(&c.socket, &pane_id, typing) {
        if let Some(s) = saver {
            s.abandon();
        }
        if let (Some(s), Some(_)) = (&f.store, &sourced_at) {
            s.remove_run_script(&script);
        }
        return Err(e);
    }
    if let Some(s) = &mut saver {
        s.begin();
    }
    f.saver = saver;

    let mut prompt = None;
    let mut died = None;
    let mut timed_out = false;
    let mut interrupted = None;
    loop {
        // An unfinished line may be a question: looked at again once the
        // pane is quiet (the program may not be reading yet when its
        // question arrives).
        let until = if f.inside {
            f.question_quiet(deadline)
        } else {
            deadline
        };
        let until = f.fallback_quiet(until);
        match f.src.next_items(until) {
            Ok(Some(items)) => {
                f.output_came();
                f.absorb(items);
                if f.inside {
                    // Started: the prompt is no longer ours to guard.
                    lock.take();
                }
                f.fallback_end();
                if f.finished.is_some() {
                    break;
                }
                if f.inside
                    && let Some(p) = f.program_prompt()
                {
                    prompt = Some(p);
                    break;
                }
            }
            Ok(None) if Instant::now() < deadline => {
                f.fallback_end();
                if f.finished.is_some() {
                    break;
                }
                if let Some(p) = f.question_now() {
                    prompt = Some(p);
                    break;
                }
            }
            Ok(None) => {
                timed_out = true;
                break;
            }
            Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                died = Some(f.pane_end(&c.socket, &e));
                break;
            }
            // Stopped by a signal (Ctrl-C, a client cancelling): the
            // command goes on in the pane, as after a timeout.
            Err(e) if matches!(e.kind, Kind::Interrupted(_)) => {
                interrupted = Some(e);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    drop(lock);
    // The cursor goes where the pane stands now, after taking in what it
    // wrote up to there (the end mark may come with it): that is the
    // result's state. What comes later is after the cursor, for the next
    // `output`; only --save-to takes it, until the follower does.
    if died.is_none() {
        // The partial line of a stopped or timed-out command is shown.
        let show_partial = f.finished.is_none() && interrupted.is_none();
        match f.save_cursor(&c.socket, &c.cursor, show_partial, Some(id.clone())) {
            Ok(Some(p)) if f.inside => {
                let show = f.show.clone();
                f.lines.push(p, show.as_ref());
            }
            Ok(_) => {}
            // Interrupted: the interruption is the answer.
            Err(_) if interrupted.is_some() => {}
            Err(e) => return Err(e),
        }
    }
    let finish = f.finished.or(died);
    f.lines_closed = true;
    let follow_error = if finish.is_some() {
        // Seen ending in the stream: the status file, if the shell wrote it
        // yet, is not needed (a later run sweeps it if not).
        if let Some(s) = &f.store {
            let _ = s.take_run_status(&id);
            if sourced_at.is_some() {
                s.remove_run_script(&script);
            }
        }
        None
    } else if f.src.fallback().is_some_and(|b| b.polling) {
        // No stream to hand over: `output` finds the status the shell
        // leaves in its file.
        None
    } else {
        handoff(&mut f, c, &id)
    };
    if let Some(e) = interrupted {
        return Err(e);
    }
    let mut clipped = clip(&f.lines.lines, &c.clip);
    clipped.clipped += f.lines.thinned;
    Ok(RunResult {
        pane_id,
        exit_status: finish.and_then(|x| x.status),
        timed_out,
        elapsed_seconds: seconds(start.elapsed()),
        output_truncated: clipped.clipped > 0,
        output_truncated_lines: clipped.clipped,
        output: clipped.lines,
        effective_timeout: seconds(c.timeout),
        finished: finish.is_some(),
        exit_source: finish.map(|x| x.source),
        prompt,
        cursor: c.cursor.clone(),
        fallback: f.src.fallback(),
        save_error: f.saver.and_then(|s| s.error),
        follow_error,
    })
}

/// Type `typing` (tmux commands) into `pane` only if it shows neither copy
/// mode nor a full-screen program, in one command list: tmux checks and
/// types in one go, so nothing can change the pane between the two.
fn type_at_prompt(socket: &Socket, pane: &str, mut typing: Vec<Vec<String>>) -> Result<()> {
    use crate::tmux::protocol::command_list;
    let nonce = crate::state::random_id();
    let said = |what: &str| {
        argv(&[
            "display-message",
            "-p",
            "-t",
            pane,
            &format!("{nonce}:{what}"),
        ])
    };
    typing.push(said("typed"));
    let refuse = [said("#{pane_in_mode}:#{alternate_on}")];
    let lines = socket.run([
        "if-shell",
        "-F",
        "-t",
        pane,
        "#{||:#{pane_in_mode},#{alternate_on}}",
        &command_list(&refuse),
        &command_list(&typing),
    ])?;
    let answer = lines
        .iter()
        .find_map(|l| l.strip_prefix(&nonce).and_then(|r| r.strip_prefix(':')));
    match answer {
        Some("typed") => Ok(()),
        Some(m) if m.starts_with('1') => Err(Error::new(
            Kind::NotAtPrompt,
            format!("pane {pane} is in copy mode; leave it (q) first"),
        )),
        Some(_) => Err(Error::new(
            Kind::NotAtPrompt,
            format!("pane {pane} shows a full-screen program, not a shell prompt"),
        )),
        None => Err(Error::new(
            Kind::Tmux,
            format!("tmux did not say whether it typed into pane {pane}"),
        )),
    }
}
