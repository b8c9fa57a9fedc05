//! Taking in what the hub sends: pane bytes (fed to the tracker, with what
//! the terminal says of who wrote them), syncs, marks, the end of the
//! stream, signals and the pane's process exiting.

use super::*;

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
            if self.look_owed {
                let at = self.probe.owed_look_at(now);
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

    /// The look owed since output nobody looked at (see `look_owed`).
    pub(super) fn look_idle(&mut self) {
        self.look_owed = false;
        if self.streaming {
            let hint = self.probe.hint_for(&[], false);
            self.tracker.observe(Instant::now(), hint);
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
        let len = chunk.len();
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
        if self.width_checked.elapsed() >= WIDTH_EVERY {
            self.width_checked = Instant::now();
            if let Some(w) = tty_width(&self.pane.pane_tty) {
                self.tracker.set_width(w);
            }
        }
        // Who wrote it matters only while a shell reads a line (or for
        // what may be a prompt, looked at now and then).
        let reading = self.tracker.reading();
        let hint = match chunk {
            _ if reading => {
                let bytes = chunk.kept();
                let line_end = self.tracker.kernel_echo() && chunk.newlines() > 0;
                self.probe.hint_for(&bytes, line_end)
            }
            Chunk::Whole(data) if self.probe.wants_look(data, self.look_next) => {
                self.probe.hint_for(data, false)
            }
            Chunk::Whole(data) => {
                self.probe.shown(data);
                self.look_owed = true;
                Hint::default()
            }
            Chunk::Sieved(_) => {
                self.probe.shown_sieved(len, chunk.newlines());
                self.look_owed = true;
                Hint::default()
            }
        };
        if reading || hint != Hint::default() {
            self.look_owed = false;
        }
        // A shell that just took a line may print its next prompt (PS2)
        // and read again at once.
        self.look_next = reading;
        crate::trace!(
            "{:?} {:?} {hint:?} about={} leader={:?}",
            at,
            String::from_utf8_lossy(&chunk.kept()),
            self.probe.shell_about_to_read(),
            self.probe.leader_pid()
        );
        match chunk {
            Chunk::Whole(data) => self.tracker.feed_hinted(data, at, hint),
            Chunk::Sieved(s) => {
                let exact = self.tracker.feed_sieved_chunk(s, at, hint);
                if !exact {
                    // Whole chunks from now on (see `LineTracker::feed_sieved_chunk`).
                    self.inbox.send(crate::hub::WHOLE);
                }
            }
        }
        self.output_seen = true;
        self.unconsumed = true;
    }
}

/// A chunk of the stream as the hub sent it.
#[derive(Clone, Copy)]
enum Chunk<'a> {
    Whole(&'a [u8]),
    Sieved(&'a crate::hub::Sieved),
}

impl Chunk<'_> {
    /// Its length as tmux wrote it.
    fn len(&self) -> u64 {
        match self {
            Chunk::Whole(d) => d.len() as u64,
            Chunk::Sieved(s) => s.stream_len(),
        }
    }

    fn newlines(&self) -> u64 {
        match self {
            Chunk::Whole(d) => memchr::memchr_iter(b'\n', d).count() as u64,
            Chunk::Sieved(s) => s.newlines(),
        }
    }

    /// The bytes it holds (a sieved chunk's head and tail).
    fn kept(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Chunk::Whole(d) => (*d).into(),
            Chunk::Sieved(s) => [&s.head[..], &s.tail[..]].concat().into(),
        }
    }
}
