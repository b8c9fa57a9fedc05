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
        let fmt = "#{pane_id}\t#{pane_pid}\t#{history_size}\t#{cursor_y}\t#{pane_height}";
        // Taken where the stream stands (on a pane that keeps writing, as
        // close to it as a few attempts get: see docs/limits.md).
        let (replies, _) = self.src.aligned_query(
            &[
                argv(&["display-message", "-p", "-t", &t, fmt]),
                argv(&["capture-pane", "-p", "-t", &t, "-S", "-2", "-E", "-"]),
            ],
            deadline,
        )?;
        // Output up to the replies is in the grid they describe.
        let items = self.src.take_items();
        // (lines after a finish are the next prompt's: not taken)
        self.absorb(items);
        // What came meanwhile may have ended the command (its end mark) and
        // put the shell's prompt on the unfinished line: not output.
        let partial = if show_partial && self.finished.is_none() && !self.shell_prompt() {
            let p = self.src.tracker().current_line();
            (!p.is_empty()).then_some(p)
        } else {
            None
        };
        let r = crate::engine::Reply::new(&replies[0]);
        if r.text(0) != self.pane.pane_id {
            // The pane is gone: nothing to save the cursor in.
            return Ok(partial);
        }
        // A dead pane has no pid on tmux 3.8 (0: no program).
        let pid = r.num(1).ok().and_then(|p| u32::try_from(p).ok());
        let (history, cy, height) = (r.num(2)?.max(0), r.num(3)?.max(0), r.num(4)?.max(1));
        let rows = &replies[1];
        let offset = rows.len() as i64 - height;
        let row = |y: i64| -> &str {
            usize::try_from(offset + y)
                .ok()
                .and_then(|i| rows.get(i))
                .map(String::as_str)
                .unwrap_or("")
        };
        self.saved_abs = history + cy;
        let rec = Record {
            pid: pid.unwrap_or(0),
            abs: history + cy,
            fp: cursor::fingerprint(row(cy - 2), row(cy - 1)),
            part: partial
                .as_deref()
                .map(|p| cursor::hash_text(&[p]))
                .unwrap_or(0),
            run: pending,
            history_size: history,
            head: cursor::head(row(cy)),
            busy: matches!(self.foreground(), Fg::Command(_)),
            saved: crate::state::now_secs(),
            prompt: matches!(
                self.reads(),
                Reads::Prompt | Reads::Line { .. } | Reads::Keys
            ),
        };
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
}

pub fn run(req: &RunRequest) -> Result<RunResult> {
    let start = Instant::now();
    let c = &req.common;
    let deadline = start + c.timeout;
    validate_command(&req.command)?;
    let mut f = Follow::open(c, None, None, None, deadline)?;
    let pane_id = f.pane.pane_id.clone();
    // Held until the command has started: then the prompt is no longer
    // there for another run to type into.
    let mut lock = pane_lock(&c.socket, &pane_id, Instant::now() + Duration::from_secs(2))?;
    // The check is made on the state after the lock: re-read it.
    let mode = f.src.query_all(&[argv(&[
        "display-message",
        "-p",
        "-t",
        &pane_id,
        "#{pane_in_mode}\t#{alternate_on}",
    ])])?;
    let mode = mode[0].first().cloned().unwrap_or_default();
    if mode.starts_with('1') {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!("pane {pane_id} is in copy mode; leave it (q) first"),
        ));
    }
    if mode.ends_with('1') {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!("pane {pane_id} shows a full-screen program, not a shell prompt"),
        ));
    }
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
    // Opened (and emptied) only once the command will be typed.
    f.saver = match &c.save_to {
        Some(p) => Some(Saver::open(p, true)?),
        None => None,
    };
    let id = crate::state::random_id();
    f.run = Some(id.clone());
    f.run_only = true;
    let mut keys: Vec<String> = Vec::new();
    if typed.is_some() {
        // Emacs-mode readline and zle: end of line, kill to its start.
        for k in ["C-e", "C-u"] {
            keys.extend([
                "send-keys".into(),
                "-t".into(),
                pane_id.clone(),
                k.into(),
                ";".into(),
            ]);
        }
    }
    keys.extend([
        "send-keys".into(),
        "-t".into(),
        pane_id.clone(),
        "-l".into(),
        "--".into(),
        wrapper(&id, &req.command, req.history),
        ";".into(),
        "send-keys".into(),
        "-t".into(),
        pane_id.clone(),
        "Enter".into(),
    ]);
    c.socket.run(&keys)?;

    let mut prompt = None;
    let mut died = None;
    let mut timed_out = false;
    let mut interrupted = None;
    loop {
        // An unfinished line may be a question: looked at again once the
        // pane is quiet (the program may not be reading yet when its
        // question arrives).
        let asking = f.inside && f.src.tracker().has_partial();
        let until = if asking {
            deadline.min(Instant::now() + QUESTION_QUIET)
        } else {
            deadline
        };
        match f.src.next_items(until) {
            Ok(Some(items)) => {
                f.absorb(items);
                if f.inside {
                    // Started: the prompt is no longer ours to guard.
                    lock.take();
                }
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
                if let Some(p) = f.program_prompt() {
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
    let follow_error = if f.finished.is_none() && died.is_none() {
        handoff(&mut f, c, &id)
    } else {
        None
    };
    if let Some(e) = interrupted {
        // Whatever `output` reads next starts after what was taken in.
        let pending = f.finished.is_none().then(|| id.clone());
        let _ = f.save_cursor(&c.socket, &c.cursor, false, pending);
        return Err(e);
    }
    let finish = f.finished.or(died);
    let pending = finish.is_none().then(|| id.clone());
    let pane_gone = finish.is_some_and(|x| {
        matches!(
            x.source,
            ExitSource::PaneDead | ExitSource::PaneClosed | ExitSource::Respawned
        )
    });
    if !pane_gone {
        // The partial line of a stopped or timed-out command is shown.
        let show_partial = finish.is_none();
        if let Some(p) = f.save_cursor(&c.socket, &c.cursor, show_partial, pending)?
            && f.inside
        {
            let show = f.show.clone();
            f.lines.push(p, show.as_ref());
        }
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
        save_error: f.saver.and_then(|s| s.error),
        follow_error,
    })
}
