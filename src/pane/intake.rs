//! A pane's chunks taken into its line tracker, each with what the kernel
//! says of who wrote it (see `probe`): the one way a stream wait
//! (`engine::stream`) and the attention watch (`waits::attention::feed`)
//! read what the hub sends of a pane.

use super::probe::ReaderProbe;
use super::rhythm::WIDTH_EVERY;
use super::shell::{self, Reads, line_editor_active, tty_width};
use super::skip::Sieved;
use super::vt::{Hint, LineTracker, TrackerStart};
use std::time::Instant;

/// `screen` (where a tracker starts: the width, the cursor's row and
/// column, the alternate screen) with what the terminal of the pane whose
/// process is `pid` says of its reader now.
pub fn with_reader(screen: TrackerStart, pid: u32, tty: &str, probe: &ReaderProbe) -> TrackerStart {
    TrackerStart {
        at_prompt: line_editor_active(pid, tty),
        kernel_echo: probe.first().kernel_echo == Some(true),
        raw_reader: matches!(shell::reads(pid, tty).0, Reads::Keys { .. }),
        ..screen
    }
}

/// A tracker for a stream joined where the pane's pipe already runs (for
/// other waits): on `line`, the line the hub kept, all of it old.
pub fn joined(entry: &TrackerStart, line: &[u8]) -> LineTracker {
    let mut t = LineTracker::new(entry);
    t.feed(line, Instant::now());
    t.forget();
    t.set_input(entry);
    t
}

/// A chunk of the stream as the hub sent it.
#[derive(Clone, Copy)]
pub enum Chunk<'a> {
    Whole(&'a [u8]),
    Sieved(&'a Sieved),
}

impl Chunk<'_> {
    /// Its length as tmux wrote it.
    pub fn stream_len(&self) -> u64 {
        match self {
            Chunk::Whole(d) => d.len() as u64,
            Chunk::Sieved(s) => s.stream_len(),
        }
    }

    pub fn newlines(&self) -> u64 {
        match self {
            Chunk::Whole(d) => memchr::memchr_iter(b'\n', d).count() as u64,
            Chunk::Sieved(s) => s.newlines(),
        }
    }

    /// The bytes it holds (a sieved chunk's head and tail).
    pub fn kept(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Chunk::Whole(d) => (*d).into(),
            Chunk::Sieved(s) => [&s.head[..], &s.tail[..]].concat().into(),
        }
    }
}

/// When the reader of a pane's terminal was looked at, and whether a look
/// is owed for output nobody looked at.
pub struct Intake {
    width_checked: Instant,
    /// A shell that just took a line may print its next prompt (PS2) and
    /// read again at once: the next chunk is looked at.
    look_next: bool,
    /// Output went by without a look: one is owed once the pane is quiet
    /// (see `ReaderProbe::owed_look_at`).
    look_owed: bool,
}

impl Default for Intake {
    fn default() -> Intake {
        Intake {
            width_checked: Instant::now(),
            look_next: false,
            look_owed: false,
        }
    }
}

impl Intake {
    /// Feed `chunk` to `tracker`, with what `probe` says of who wrote it
    /// (which matters only while a shell reads a line, or for what may be
    /// a prompt, looked at now and then); the terminal at `tty` tells the
    /// pane's width. False: the tracker did not stand where the hub's
    /// sieve took it to, and wants whole chunks from now on (send
    /// `skip::WHOLE`, see `LineTracker::feed_sieved_chunk`).
    pub fn take(
        &mut self,
        tracker: &mut LineTracker,
        probe: &mut ReaderProbe,
        tty: &str,
        chunk: Chunk<'_>,
        at: Instant,
    ) -> bool {
        if self.width_checked.elapsed() >= WIDTH_EVERY {
            self.width_checked = Instant::now();
            if let Some(w) = tty_width(tty) {
                tracker.set_width(w);
            }
        }
        let reading = tracker.reading();
        let hint = match chunk {
            _ if reading => {
                let line_end = tracker.kernel_echo() && chunk.newlines() > 0;
                probe.hint_for(&chunk.kept(), line_end)
            }
            Chunk::Whole(data) if probe.wants_look(data, self.look_next) => {
                probe.hint_for(data, false)
            }
            Chunk::Whole(data) => {
                probe.shown(data);
                self.look_owed = true;
                Hint::default()
            }
            Chunk::Sieved(_) => {
                probe.shown_sieved(chunk.stream_len(), chunk.newlines());
                self.look_owed = true;
                Hint::default()
            }
        };
        if reading || hint != Hint::default() {
            self.look_owed = false;
        }
        self.look_next = reading;
        crate::trace!(
            "{:?} {:?} {hint:?} about={} leader={:?}",
            at,
            String::from_utf8_lossy(&chunk.kept()),
            probe.shell_about_to_read(),
            probe.leader_pid()
        );
        match chunk {
            Chunk::Whole(data) => {
                tracker.feed_hinted(data, at, hint);
                true
            }
            Chunk::Sieved(s) => tracker.feed_sieved_chunk(s, at, hint),
        }
    }

    /// When the look owed for output nobody looked at is due (None: none
    /// is owed).
    pub fn owed_at(&self, probe: &ReaderProbe, now: Instant) -> Option<Instant> {
        self.look_owed.then(|| probe.owed_look_at(now))
    }

    /// Take the look owed (if any) now, and tell `tracker` what it says.
    pub fn look_owed(&mut self, tracker: &mut LineTracker, probe: &mut ReaderProbe, now: Instant) {
        if std::mem::take(&mut self.look_owed) {
            let hint = probe.hint_for(&[], false);
            tracker.observe(now, hint);
        }
    }

    /// No look is owed any more (the stream stopped).
    pub fn forget_owed(&mut self) {
        self.look_owed = false;
    }
}
