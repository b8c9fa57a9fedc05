//! What went wrong, in words a person can act on: the pane closed or
//! died, the hub or tmux went away, a reply did not fit.

use super::*;

impl StreamSource {
    /// Look at the pane: gone, dead, respawned? Also its width.
    pub(super) fn check(&mut self) -> Result<()> {
        self.next_check = Instant::now() + self.check_every;
        let lines = self
            .socket
            .run([
                "display-message",
                "-p",
                "-t",
                &self.pane.pane_id,
                CHECK_FORMAT,
            ])
            .map_err(|e| self.classify(e))?;
        let r = self.verify(&lines)?;
        if let Some(at) = self.pane_exited {
            // The process is gone but tmux has not noticed yet (it marks the
            // pane dead when it reads the end of its terminal): look again
            // shortly, until it has.
            if at.elapsed() < EXIT_NOTICE {
                self.next_check = Instant::now() + Duration::from_millis(5);
            }
        }
        self.tracker
            .set_width(usize::try_from(r.num(3)?.max(1)).unwrap_or(80));
        Ok(())
    }

    pub(super) fn closed(&self) -> Error {
        Error::new(
            Kind::PaneDied,
            format!("pane {} was closed during the wait", self.pane.pane_id),
        )
    }

    /// A failed tmux command during the wait: the server or the pane went.
    pub(super) fn classify(&self, e: Error) -> Error {
        match e.kind {
            Kind::NoServer => {
                Error::new(Kind::ServerExited, "the tmux server exited during the wait")
            }
            Kind::NoPane => self.closed(),
            _ => e,
        }
    }

    /// Check a reply that starts `#{pane_id}\t#{pane_pid}\t#{pane_dead}`
    /// (display-message falls back to another pane when ours is gone, so
    /// the id is compared too); returns the reply.
    pub(super) fn verify(&self, lines: &[String]) -> Result<Reply> {
        let r = Reply::new(lines);
        if r.text(0) != self.pane.pane_id {
            return Err(self.closed());
        }
        // Dead first: tmux 3.8 shows no pid for a dead pane, nor for one
        // whose program has just exited (before it is marked dead).
        if r.flag(2)? || r.text(1).is_empty() {
            return Err(Error::new(
                Kind::PaneDied,
                format!(
                    "pane {}'s program exited during the wait",
                    self.pane.pane_id
                ),
            ));
        }
        if r.num(1)? != i64::from(self.pane.pane_pid) {
            return Err(Error::new(
                Kind::PaneRespawned,
                format!("pane {} was respawned during the wait", self.pane.pane_id),
            ));
        }
        Ok(r)
    }

    /// The pane's stream ended: find out why.
    pub(super) fn ended(&mut self, why: EndReason) -> Error {
        if let Some(sig) = signals::pending() {
            return Error::new(Kind::Interrupted(sig), "interrupted");
        }
        match self.pane_now() {
            Err(e) => e,
            Ok(()) => match why {
                EndReason::Closed => Error::new(
                    Kind::PipeBusy,
                    format!(
                        "another pipe-pane replaced or closed tmux-wait's pipe of pane {} during the wait",
                        self.pane.pane_id
                    ),
                ),
                EndReason::NoFeed => Error::new(
                    Kind::Tmux,
                    format!(
                        "tmux could not start tmux-wait's pipe of pane {} (pipe-pane)",
                        self.pane.pane_id
                    ),
                ),
                EndReason::Overflow => Error::new(
                    Kind::Tmux,
                    "tmux-wait's hub dropped this wait: it fell too far behind the pane's output",
                ),
            },
        }
    }

    /// The hub's connection broke: find out why.
    pub(super) fn lost(&mut self) -> Error {
        if let Some(sig) = signals::pending() {
            return Error::new(Kind::Interrupted(sig), "interrupted");
        }
        match self.pane_now() {
            Err(e) => e,
            Ok(()) => Error::new(
                Kind::Tmux,
                "tmux-wait's hub (which reads the pane for every wait) went away during the wait",
            ),
        }
    }

    /// Is the pane still the one we watched, alive? Ok when so.
    pub fn pane_now(&self) -> Result<()> {
        let fmt = "#{pane_id}\t#{pane_pid}\t#{pane_dead}";
        match self
            .socket
            .run(["display-message", "-p", "-t", &self.pane.pane_id, fmt])
        {
            Err(e) => Err(self.classify(e)),
            Ok(lines) => self.verify(&lines).map(|_| ()),
        }
    }
}

/// An error kind by its name (as the hub passes it on).
pub fn kind_from(name: &str) -> Kind {
    [
        Kind::NoServer,
        Kind::NoPane,
        Kind::PaneDied,
        Kind::ServerExited,
        Kind::Io,
        Kind::TooManyOpenFiles,
    ]
    .into_iter()
    .find(|k| k.as_str() == name)
    .unwrap_or(Kind::Tmux)
}
