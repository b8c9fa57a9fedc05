//! What runs in the pane: the shell at its prompt, a program at its own
//! prompt, or a command still running; and how the pane ended.

use super::*;

impl Follow {
    /// What runs in the pane's foreground now: from `/proc` (Linux), else
    /// from tmux's `#{pane_current_command}` against the shell's name.
    pub(super) fn foreground(&mut self) -> Fg {
        let pid = self.pane.pane_pid;
        if shell::proc_available() {
            return match shell::shell_in_foreground(pid) {
                Some(true) => Fg::Shell,
                Some(false) => Fg::Command(shell::foreground_command(pid).unwrap_or_default()),
                None => Fg::Unknown,
            };
        }
        let asked = self.src.query_all(&[argv(&[
            "display-message",
            "-p",
            "-t",
            &self.pane.pane_id,
            "#{pane_current_command}",
        ])]);
        let cmd = match asked {
            Ok(r) => r[0].first().cloned().unwrap_or_default(),
            Err(_) => return Fg::Unknown,
        };
        if cmd.is_empty() || self.shell_name.is_empty() {
            Fg::Unknown
        } else if cmd == self.shell_name {
            Fg::Shell
        } else {
            Fg::Command(cmd)
        }
    }

    /// What the pane's terminal waits for (see `shell::reads`); without
    /// `/proc`, what the stream and tmux say: the shell in the foreground
    /// with its line editor reading is at its prompt.
    pub(super) fn reads(&mut self) -> Reads {
        if shell::proc_available() {
            let r = shell::reads(self.pane.pane_pid, &self.pane.pane_tty).0;
            if r != Reads::Unknown {
                return r;
            }
        }
        match self.foreground() {
            Fg::Shell if self.src.tracker().at_prompt() => Reads::Prompt,
            _ => Reads::Unknown,
        }
    }

    /// Wait (until `until` at most) for someone to read the terminal: a
    /// shell that just ended a command runs its last builtins and prints
    /// its prompt first, and keys typed before would be echoed (by the
    /// kernel, where the shell has no line editor) ahead of that prompt,
    /// which then leads the command's first line.
    /// Returns what the terminal waits for then.
    pub(super) fn await_reader(&mut self, until: Instant) -> Reads {
        loop {
            let r = self.reads();
            if r != Reads::Nothing || Instant::now() >= until || self.foreground() != Fg::Shell {
                return r;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The shell reads its next command line, or is about to: it just
    /// printed its prompt (see [`Follow::await_reader`]).
    pub(super) fn prompt_soon(&mut self, until: Instant) -> bool {
        self.await_reader(until) == Reads::Prompt
    }

    /// The pane's shell reads its next command line.
    pub(super) fn shell_prompt(&mut self) -> bool {
        self.reads() == Reads::Prompt
    }

    /// `line`, the unfinished line, is a question a program waits on (see
    /// [`Follow::program_prompt`]), as far as a look now tells.
    pub(super) fn asks(&mut self, line: &str) -> bool {
        if line.len() >= 512 || line.trim().is_empty() {
            return false;
        }
        match self.reads() {
            Reads::Line { .. } => true,
            Reads::Keys { .. } => self.prompt_re().is_match(line),
            Reads::Prompt | Reads::Nothing => false,
            Reads::Unknown => self.foreground() != Fg::Shell && self.prompt_re().is_match(line),
        }
    }

    /// The unfinished line is a question a program waits on: a program, or
    /// the shell's `read`, reads a line at the terminal (any wording), or
    /// a program reading key by key shows what looks like its prompt (a
    /// REPL's `>>>`); and it stays so while the pane is quiet for a moment
    /// (a prompt can arrive in pieces: `>` then `>> `).
    pub(super) fn program_prompt(&mut self) -> Option<String> {
        let looks = |f: &mut Follow| {
            if !f.src.tracker().has_partial() {
                return None;
            }
            let line = f.src.tracker().current_line();
            f.asks(&line).then_some(line)
        };
        if looks(self).is_none() {
            // A line that looks like a prompt (a REPL's `>>> `) from a
            // program still running: on a busy machine it may not have
            // reached its read yet (python3 was seen so, 26 ms after its
            // answer): it gets the same moment below.
            let t = self.src.tracker();
            let line = t.has_partial().then(|| t.current_line())?;
            if shell::foreground_running(self.pane.pane_pid) != Some(true)
                || !self.prompt_re().is_match(&line)
            {
                return None;
            }
        }
        // Quiet for a moment, and the program asleep (waiting for input,
        // not still writing its prompt: `>` then `>> ` on a busy machine).
        let patience = Instant::now() + Duration::from_millis(300);
        loop {
            self.drain(Duration::from_millis(15));
            if self.finished.is_some() {
                return None;
            }
            if shell::foreground_running(self.pane.pane_pid) != Some(true)
                || Instant::now() >= patience
            {
                return looks(self);
            }
        }
    }

    /// Take in what arrives until the pane is quiet for `quiet` (at most
    /// ten times that); errors are left for the next batch to meet.
    pub(super) fn drain(&mut self, quiet: Duration) {
        let stop = Instant::now() + quiet * 10;
        loop {
            match self.src.next_items((Instant::now() + quiet).min(stop)) {
                Ok(Some(items)) => self.absorb(items),
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    let socket = self.socket.clone();
                    self.finished = Some(self.pane_end(&socket, &e));
                    return;
                }
                _ => return,
            };
            if Instant::now() >= stop {
                return;
            }
        }
    }

    /// Gather more output until the pane is quiet for a moment (or the
    /// batch is old enough), so one reply holds one burst of output.
    pub(super) fn settle(&mut self, deadline: Instant) -> Result<()> {
        let stop = (Instant::now() + SETTLE_MAX).min(deadline);
        loop {
            let now = Instant::now();
            if now >= stop || self.finished.is_some() {
                return Ok(());
            }
            match self.src.next_items((now + SETTLE_QUIET).min(stop)) {
                Ok(Some(items)) => {
                    self.absorb(items);
                }
                Ok(None) => return Ok(()),
                // The pane went: that is how the command ended.
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    let socket = self.socket.clone();
                    self.finished = Some(self.pane_end(&socket, &e));
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The pane went away, its program exited, or it was respawned (`e`
    /// says which): how the followed command ended.
    /// The pane's process is gone: read on until the stream says how the
    /// pane ended (what it wrote last is taken in); None if it does not
    /// say by `deadline`, or within a second.
    pub(super) fn pane_went(&mut self, socket: &Socket, deadline: Instant) -> Option<Finish> {
        let until = deadline.min(Instant::now() + Duration::from_secs(1));
        loop {
            match self.src.next_items(until) {
                Ok(Some(items)) => {
                    self.absorb(items);
                }
                Ok(None) => return None,
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    return Some(self.pane_end(socket, &e));
                }
                Err(_) => return None,
            }
        }
    }

    /// tmux says the pane's program is another now, or dead (`respawn-pane
    /// -k` starts the new one before the old one has died of its SIGHUP).
    pub(super) fn pane_replaced(&self) -> bool {
        self.src
            .pane_now()
            .is_err_and(|e| matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned))
    }

    pub(super) fn pane_end(&self, socket: &Socket, e: &Error) -> Finish {
        if e.kind == Kind::PaneRespawned {
            return Finish {
                status: None,
                source: ExitSource::Respawned,
            };
        }
        let fmt = "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}";
        // tmux marks the pane dead when its terminal closes and learns the
        // status when it reaps the process, a moment later; tmux 3.3a also
        // loses it now and then (2 pane deaths in 30, without tmux-wait):
        // then there is none to wait for.
        let patience = Instant::now() + Duration::from_millis(300);
        while let Ok(lines) = socket.run(["display-message", "-p", "-t", &self.pane.pane_id, fmt]) {
            let line = lines.first().cloned().unwrap_or_default();
            let f: Vec<&str> = line.split('\t').collect();
            if f.first() != Some(&self.pane.pane_id.as_str()) {
                break;
            }
            if f.get(1) != Some(&"1") {
                // Not marked dead yet (its program has only just exited):
                // a moment more, then it counts as closed, as before.
                if Instant::now() >= patience {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            let status = f.get(2).and_then(|s| s.parse::<i32>().ok()).or_else(|| {
                // Killed by a signal: report it as a shell would.
                f.get(3)
                    .and_then(|s| s.parse::<i32>().ok())
                    .map(|sig| 128 + sig)
            });
            if status.is_some() || Instant::now() >= patience {
                return Finish {
                    status,
                    source: ExitSource::PaneDead,
                };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Finish {
            status: None,
            source: ExitSource::PaneClosed,
        }
    }
}
