//! Taking in what the hub sends: pane bytes (fed to the tracker, with what
//! the terminal says of who wrote them), syncs, marks, the end of the
//! stream, signals and the pane's process exiting.

use super::*;

/// How long a wait at its deadline waits for what the hub holds for it.
const HELD_SYNC: Duration = Duration::from_millis(200);

impl StreamSource {
    /// Wait until pane output arrived (true) or `deadline` passed (false).
    pub(super) fn wait_output(&mut self, deadline: Instant) -> Result<bool> {
        // Output taken in while waiting for a reply has not been looked at.
        if std::mem::take(&mut self.unconsumed) {
            return Ok(true);
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        loop {
            let now = Instant::now();
            if now >= deadline {
                self.take_held();
                return Ok(false);
            }
            if now >= self.next_check {
                self.check()?;
            }
            // A line held until the shell says whether it took it.
            if let Some(t) = self.tracker.held_until()
                && now >= t
            {
                self.tracker.tick(now);
                if self.tracker.has_items() {
                    return Ok(true);
                }
            }
            let mut wake = deadline.min(self.next_check);
            if let Some(t) = self.tracker.held_until() {
                wake = wake.min(t);
            }
            if let Some(at) = self.intake.owed_at(&self.probe, now) {
                if at <= now {
                    self.look_idle();
                } else {
                    wake = wake.min(at);
                }
            }
            let Some(ev) = self.inbox.next(wake) else {
                continue;
            };
            self.output_seen = false;
            let start = self.received;
            self.handle(ev)?;
            for _ in 0..MAX_EVENTS_PER_BATCH {
                if self.received - start >= MAX_BYTES_PER_BATCH {
                    break;
                }
                match self.inbox.try_next() {
                    Some(ev) => self.handle(ev)?,
                    None => break,
                }
            }
            if self.output_seen {
                self.unconsumed = false;
                return Ok(true);
            }
        }
    }

    /// At the deadline of a wait that said which lines it can use: the
    /// plain lines the hub holds for it (up to a second with many waits
    /// on the pane, see `hub::tap`) are taken in, waiting at most
    /// [`HELD_SYNC`] for them, so that a wait that saw nothing else still
    /// knows new output came. None of them can hit its patterns, so the
    /// verdict stays a timeout.
    fn take_held(&mut self) {
        if self.streaming
            && self.needed.is_some()
            && !self.final_lines
            && self.inbox.sieves()
            && !self.tracker.saw_output()
        {
            // (A hub slow to answer, or a stream that failed meanwhile,
            // changes no timeout.)
            let _ = self.sync_by(Instant::now() + HELD_SYNC);
        }
    }

    /// The look owed since output nobody looked at (see `intake`).
    pub(super) fn look_idle(&mut self) {
        if self.streaming {
            let (tracker, probe) = (&mut self.tracker, &mut self.probe);
            self.intake.look_owed(tracker, probe, Instant::now());
        } else {
            self.intake.forget_owed();
        }
    }

    pub(super) fn handle(&mut self, ev: Event) -> Result<()> {
        match ev {
            Event::Data(data, at) => self.take_chunk(Chunk::Whole(&data), at),
            Event::Sieved(sieved, at) => self.take_chunk(Chunk::Sieved(&sieved), at),
            Event::Synced(n) => self.synced = self.synced.max(n),
            Event::Mark(m) => {
                self.marks.push(m);
                // What follows is the joiner's.
                self.streaming = false;
            }
            Event::End(EndReason::Closed) => self.pipe_closed()?,
            Event::End(why) => return Err(self.ended(why)),
            Event::HubLost => self.hub_lost()?,
            Event::Signal(sig) => return Err(Error::new(Kind::Interrupted(sig), "interrupted")),
            Event::PaneExited => {
                self.pane_exited = Some(Instant::now());
                self.next_check = Instant::now();
            }
            Event::Eof => {}
        }
        Ok(())
    }

    /// A chunk of the stream: fed to the tracker with what the terminal
    /// says of who wrote it.
    fn take_chunk(&mut self, chunk: Chunk, at: Instant) {
        /// The most bytes kept of an entry's window (see `recording`).
        const RECORD_MAX: usize = 1 << 20;
        let len = chunk.stream_len();
        self.received += len;
        if let Some(r) = &mut self.recording {
            match chunk {
                Chunk::Whole(data) if r.len() + data.len() <= RECORD_MAX => {
                    r.extend_from_slice(data);
                }
                // (A flood: no window to line up; as before.)
                _ => self.recording = None,
            }
        }
        if !self.streaming {
            return;
        }
        let exact = self.intake.take(
            &mut self.tracker,
            &mut self.probe,
            &self.pane.pane_tty,
            chunk,
            at,
        );
        if !exact {
            // Whole chunks from now on (see `LineTracker::feed_sieved_chunk`).
            self.inbox.send(crate::hub::WHOLE);
        }
        self.output_seen = true;
        self.unconsumed = true;
    }
}
