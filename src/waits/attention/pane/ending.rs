//! How a pane's watch goes on when its stream does not: the stream's
//! end (closed, taken by another pipe, dropped, the hub gone), the pane's
//! process exiting (tmux marks the pane dead a moment later, and learns
//! the status a moment after that), and the kernel alone where no stream
//! can be had.

use super::super::machine::{Epoch, Machine, State};
use super::*;
use std::time::SystemTime;

impl PaneWatch {
    /// Without a stream: a look once a second, and `quiet` from the
    /// terminal's last write (kept by the kernel to 8 seconds).
    pub(super) fn kernel_turn(&mut self, ctx: &Ctx, out: &mut Vec<Out>) {
        match pane_now(ctx, &self.pane) {
            PaneNow::Alive => {}
            PaneNow::Dead(_) => return self.start_exit_check(),
            PaneNow::Closed => return self.exited(ctx, false, None, out),
            PaneNow::Respawned => {
                self.source = Source::Opening;
                out.push(Out::Open);
                return;
            }
            PaneNow::ServerGone => {
                self.source = Source::Gone;
                out.push(Out::Fatal(Error::new(
                    Kind::ServerExited,
                    "the tmux server exited during the wait",
                )));
                return;
            }
        }
        let first = self.machine.is_none();
        self.look(ctx, first, out);
        self.timers.probe = None;
        let base = self.base;
        if let Some(m) = &mut self.machine
            && m.status.state == State::Working
            && last_write_age(&self.pane.pane_tty).is_some_and(|a| a >= ctx.quiet_after)
        {
            let c = m.quiet(base, now_secs());
            self.report(c, out);
        }
    }

    /// The stream ended (`why`; None: the hub's connection broke).
    pub(super) fn ended(&mut self, ctx: &Ctx, why: Option<EndReason>, out: &mut Vec<Out>) {
        self.base = self.epoch();
        self.timers = Timers::new();
        match pane_now(ctx, &self.pane) {
            PaneNow::Closed => return self.exited(ctx, false, None, out),
            PaneNow::Dead(_) => {
                self.source = Source::Kernel {
                    tick: Instant::now() + EXIT_NOTICE,
                    retry: Instant::now() + EXIT_NOTICE,
                };
                return self.start_exit_check();
            }
            PaneNow::ServerGone => {
                self.source = Source::Gone;
                out.push(Out::Fatal(Error::new(
                    Kind::ServerExited,
                    "the tmux server exited during the wait",
                )));
                return;
            }
            PaneNow::Respawned | PaneNow::Alive => {}
        }
        match why {
            // Another pipe-pane took the pane's pipe: from the kernel.
            Some(EndReason::Closed) | Some(EndReason::NoFeed) => {
                let now = Instant::now();
                self.source = Source::Kernel {
                    tick: now,
                    retry: now + RETRY_STREAM,
                };
            }
            // Dropped (too far behind), or the hub went: a new stream.
            _ => {
                self.source = Source::Opening;
                out.push(Out::Open);
            }
        }
    }

    /// The pane's process exited: is the pane dead (with which status),
    /// closed or respawned? tmux marks it dead a moment after, and learns
    /// the status a moment after that.
    pub(super) fn check_exit(&mut self, ctx: &Ctx, now: Instant, out: &mut Vec<Out>) {
        let Some((since, _)) = self.exit_check else {
            return;
        };
        match pane_now(ctx, &self.pane) {
            PaneNow::Dead(Some(status)) => self.exited(ctx, true, Some(status), out),
            // tmux marks the pane dead at its terminal's end, and learns
            // the status when it reaps the process: tmux 3.3a was seen to
            // leave it a zombie, unreaped, for seconds and more (a lost
            // SIGCHLD). The kernel keeps a zombie's status.
            PaneNow::Dead(None)
                if let Some(status) = crate::sys::procfs::exit_status(self.pane.pane_pid) =>
            {
                self.exited(ctx, true, Some(status), out)
            }
            PaneNow::Dead(None) if now - since >= STATUS_PATIENCE => {
                self.exited(ctx, true, None, out)
            }
            PaneNow::Closed => self.exited(ctx, false, None, out),
            PaneNow::Respawned => {
                self.exit_check = None;
                self.source = Source::Opening;
                out.push(Out::Open);
            }
            PaneNow::ServerGone => {
                self.exit_check = None;
                self.source = Source::Gone;
                out.push(Out::Fatal(Error::new(
                    Kind::ServerExited,
                    "the tmux server exited during the wait",
                )));
            }
            PaneNow::Alive if now - since >= EXIT_NOTICE => self.exit_check = None,
            // (Asked less often the longer it takes: a few dozen times
            // in all.)
            _ => self.exit_check = Some((since, now + EXIT_POLL.max((now - since) / 4))),
        }
    }

    /// The pane's program ended (`dead`) or the pane closed: the last
    /// report.
    pub(super) fn exited(
        &mut self,
        _ctx: &Ctx,
        dead: bool,
        status: Option<i32>,
        out: &mut Vec<Out>,
    ) {
        self.exit_check = None;
        self.source = Source::Gone;
        self.timers = Timers::new();
        let now = now_secs();
        let armed = self.machine.is_some();
        let m = self
            .machine
            .get_or_insert_with(|| Machine::new(working(None), Epoch::default(), now, true));
        if let Some(c) = m.exited(dead, status, now) {
            // A pane made after the watch began that ends before its first
            // look: its end is news (a new window's build that failed at
            // once), where an old pane found ended is where it stands.
            if !armed {
                out.push(Out::Armed);
            }
            if armed || self.late {
                out.push(Out::Change(c));
            }
        }
        out.push(Out::Gone);
    }
}

pub(super) enum PaneNow {
    Alive,
    /// Its program ended; its exit status once tmux knows it.
    Dead(Option<i32>),
    Closed,
    Respawned,
    ServerGone,
}

pub(super) fn pane_now(ctx: &Ctx, pane: &PaneInfo) -> PaneNow {
    let fmt = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}";
    match ctx
        .socket
        .run(["display-message", "-p", "-t", &pane.pane_id, fmt])
    {
        Ok(lines) => {
            let line = lines.first().cloned().unwrap_or_default();
            let f: Vec<&str> = line.split('\t').collect();
            if f.first() != Some(&pane.pane_id.as_str()) {
                PaneNow::Closed
            } else if f.get(2) == Some(&"1") || f.get(1) == Some(&"") {
                // (tmux 3.8 shows no pid once the program has exited, a
                // moment before it marks the pane dead.)
                let status = f.get(3).and_then(|s| s.parse::<i32>().ok()).or_else(|| {
                    f.get(4)
                        .and_then(|s| s.parse::<i32>().ok())
                        .map(|sig| 128 + sig)
                });
                PaneNow::Dead(status)
            } else if f.get(1) != Some(&pane.pane_pid.to_string().as_str()) {
                PaneNow::Respawned
            } else {
                PaneNow::Alive
            }
        }
        Err(e) if e.kind == Kind::NoPane => PaneNow::Closed,
        Err(e) if e.kind == Kind::NoServer => PaneNow::ServerGone,
        Err(_) => PaneNow::Alive,
    }
}

/// How long since a program last wrote to the terminal: the device's
/// modification time, which the kernel keeps to 8 seconds.
pub fn last_write_age(tty: &str) -> Option<Duration> {
    let m = std::fs::metadata(tty).ok()?.modified().ok()?;
    SystemTime::now().duration_since(m).ok()
}
