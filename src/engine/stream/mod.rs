//! The stream engine: the pane's own output, byte for byte, as tmux reads
//! it, through the server's hub (see `hub`), which owns the pane's pipe.
//! No tmux client is attached for it, so no other program's command can
//! land on tmux-wait.
//!
//! What makes it exact: a fresh pipe is opened in the same tmux command
//! list that reads the pane's state and rows, so the entry state is where
//! the stream starts. A wait that joins a pane another wait already streams
//! starts from the hub's tracker at the join, then lines a capture of its
//! own up with the stream (`aligned_query`): a capture taken between two
//! `sync`s with no byte in between shows exactly the stream's position.
//! Queries go through tmux command clients (a few milliseconds each), never
//! through a client attached to a session.

use super::{Candidate, Event, Final, PaneSource, Reply, Setup, trim_rows};
use crate::cursor::Geometry;
use crate::error::{Error, Kind, Result};
use crate::hub::{self, Decoder, EndReason, Request};
use crate::pane::intake::{Chunk, Intake, joined, with_reader};
use crate::pane::probe::ReaderProbe;
use crate::pane::rhythm::EXIT_NOTICE;
use crate::pane::shell::tty_width;
use crate::pane::vt::{Item, LineTracker, TrackerStart};
use crate::signals;
use crate::tmux::{PaneInfo, PaneState, Socket};
use std::time::{Duration, Instant};

mod entry;
mod events;
mod health;
mod inbox;
mod link;
mod quiet;
mod survive;

use entry::flows_from_cursor;
pub use entry::screen_start;

pub use health::kind_from;
use link::history_query;
pub use quiet::QuietState;

/// Where the pane's process cannot be watched (see `pidwatch`), how often
/// the pane is checked for death or respawn while nothing else happens.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// With the process watched, checks run only on events; this is a safety
/// net far apart enough to cost nothing.
const CHECK_EVERY_WATCHED: Duration = Duration::from_secs(300);
/// Most events, and most bytes of output, handled before a batch is
/// judged, so a flood cannot keep the waiter from judging (and from
/// honouring its deadline) nor pile up lines.
const MAX_EVENTS_PER_BATCH: usize = 512;
const MAX_BYTES_PER_BATCH: u64 = 256 * 1024;
/// How far back `tail` may reach, in rows, whatever the scrollback holds.
const TAIL_ROWS: i64 = 64;
/// Attempts at a capture with no output around it (see `aligned_query`),
/// and the time they may take: a pane that writes every few milliseconds
/// leaves a gap now and then.
const ALIGN_TRIES: usize = 40;
const ALIGN_TIME: Duration = Duration::from_millis(400);
const CHECK_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_width}";
const FINAL_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{history_size}\t#{cursor_y}\t#{pane_height}\t#{pane_width}";

pub struct StreamSource {
    socket: Socket,
    pane: PaneInfo,
    /// The hub's connection (its frames, and the `sync` requests sent on
    /// it) and the other threads' events.
    inbox: inbox::Inbox,
    tracker: LineTracker,
    entry_lines: Vec<String>,
    /// history_size + cursor_y at entry: the entry row, counted from the
    /// oldest line of history.
    entry_abs: i64,
    geometry: Geometry,
    history: Vec<String>,
    cursor_value: String,
    /// Absolute row of the first line of `history`.
    history_from: i64,
    /// The entry's queries were answered where the stream starts.
    exact_entry: bool,
    /// The rows above the cursor's when the tracker began (the context a
    /// stopped stream's place is found by, while its own rows are few).
    entry_above: Vec<String>,
    /// The number of the row the tracker began on (history rows above the
    /// screen plus its screen row), while tmux trims no history.
    tracker_row: Option<i64>,
    /// Lines as they end up (see [`LineTracker::set_final_only`]).
    final_lines: bool,
    next_check: Instant,
    output_seen: bool,
    /// Output was fed to the tracker and no batch has been taken since.
    unconsumed: bool,
    /// When the pane's process was seen to exit.
    pane_exited: Option<Instant>,
    /// False once a verdict is reached or the stream was handed over:
    /// later output is not judged.
    streaming: bool,
    check_every: Duration,
    /// Bytes of the stream taken in so far.
    received: u64,
    sync_seq: u64,
    /// The last `sync` answered.
    synced: u64,
    marks: Vec<String>,
    /// How the stream failed while lines were being taken.
    failed: Option<Error>,
    /// Who reads the pane's terminal, and what it wrote (see `vt::Hint`).
    probe: ReaderProbe,
    /// When the reader was looked at, and the look owed for output nobody
    /// looked at it for: taken once the stream is idle, so a program that
    /// starts reading a line meanwhile (a prompt written right after
    /// output) is known before the keys typed at it arrive.
    intake: Intake,
    /// Only lines this pattern can hit are wanted, and the last lines (see
    /// `PaneSource::only_lines_hit_by`).
    needed: Option<(std::sync::Arc<crate::matcher::Needed>, usize)>,
    /// When the wait began (for when the stream stopped).
    opened: Instant,
    /// The polling interval, for a wait that has to poll after all.
    interval: Duration,
    /// Polling, after another program took the pane's pipe.
    poll: Option<super::poll::PollSource>,
    /// Lines written while nobody read, found on the screen: the next
    /// batch's first.
    recovered: Vec<Candidate>,
    /// Some recovered line is output (not echo: nothing can tell, so all).
    recovered_output: bool,
    /// How the wait went on after the stream stopped.
    fallback: Option<crate::report::Fallback>,
    /// When hubs were lost (see `survive`).
    hub_losses: Vec<Instant>,
    /// Counts new streams (a new hub, polling): a sync sent before one
    /// will not be answered.
    generation: u64,
    /// The hub serving this wait (a connection that ends while it lives on
    /// was closed by it: this wait fell too far behind).
    hub_pid: Option<u32>,
    /// Bytes taken in while not streaming yet (an entry's query under way),
    /// kept for a joined entry that was not exact (see `take_window`).
    recording: Option<Vec<u8>>,
    /// Those of the last attempt, between its two syncs.
    entry_window: Option<Vec<u8>>,
    /// What an exact entry showed, and where in the stream (see `quiet`).
    quiet: Option<quiet::QuietMark>,
}

impl StreamSource {
    pub fn open(socket: &Socket, pane: &PaneInfo, setup: &Setup) -> Result<Self> {
        let t = pane.pane_id.clone();
        // The channel to signal once armed (see below).
        let mut ready = setup.ready.clone();
        // A cursor says where to capture the history from.
        let (cursor_value, from) = match &setup.cursor {
            Some(c) => (c.value.clone(), Some(c.from.clone())),
            None => (String::new(), None),
        };
        let mut extra: Vec<Vec<String>> = Vec::new();
        if let Some(f) = &from {
            extra.push(history_query(&t, f));
        }
        let req = Request {
            hello: hub::HELLO.to_owned(),
            pane: t.clone(),
            extra: extra.clone(),
            mark: setup.mark.clone(),
        };
        let mut stream = hub::connect(socket, &req, setup.deadline)?;
        let mut dec = Decoder::default();
        let entry = hub::read_entry(&mut stream, &mut dec, setup.deadline)?;
        // A wait slower than a flooding pane reads only as fast as it
        // judges; the rest waits in the hub (which drops a wait too far
        // behind rather than make tmux buffer the pane).
        let mut inbox = inbox::Inbox::new().map_err(|e| Error::io("cannot set up the wait", e))?;
        let hub_pid = crate::sys::peer_pid(&stream);
        inbox.set_hub(stream, dec);
        {
            let poster = inbox.poster();
            signals::route_to(move |sig| {
                poster.post(Event::Signal(sig));
            });
        }
        let mut me = StreamSource {
            socket: socket.clone(),
            pane: pane.clone(),
            inbox,
            tracker: LineTracker::new(&TrackerStart::blank(80)),
            entry_lines: Vec::new(),
            entry_abs: 0,
            entry_above: Vec::new(),
            tracker_row: None,
            geometry: Geometry::default(),
            history: Vec::new(),
            cursor_value,
            history_from: 0,
            exact_entry: true,
            final_lines: setup.final_lines,
            next_check: Instant::now() + CHECK_EVERY,
            output_seen: false,
            unconsumed: false,
            pane_exited: None,
            streaming: false,
            check_every: CHECK_EVERY,
            received: 0,
            sync_seq: 0,
            synced: 0,
            marks: Vec::new(),
            failed: None,
            probe: ReaderProbe::new(pane.pane_pid, &pane.pane_tty),
            intake: Intake::default(),
            needed: None,
            opened: Instant::now(),
            interval: setup.interval,
            poll: None,
            recovered: Vec::new(),
            recovered_output: false,
            fallback: None,
            hub_losses: Vec::new(),
            generation: 0,
            hub_pid,
            recording: None,
            entry_window: None,
            quiet: None,
        };
        crate::trace!(
            "stream entry: {} from {from:?}",
            match &entry {
                hub::Entry::Fresh { .. } => "fresh",
                hub::Entry::Joined { whole: true, .. } => "joined (whole line)",
                hub::Entry::Joined { .. } => "joined",
                hub::Entry::Foreign => "foreign",
                hub::Entry::Failed { .. } => "failed",
            }
        );
        match entry {
            hub::Entry::Fresh { replies } => {
                me.take_entry(&replies, from.as_deref())?;
                me.mark_quiet(&replies);
            }
            hub::Entry::Joined { line, whole, alt } if whole && from.is_none() => {
                // The pane's pipe already runs: the stream goes on from the
                // join, on the line the hub kept (all of it old); the
                // pane's geometry is read meanwhile.
                let (pid, tty) = (me.pane.pane_pid, &me.pane.pane_tty);
                let screen = TrackerStart {
                    alternate_on: alt,
                    ..TrackerStart::blank(tty_width(tty).unwrap_or(80))
                };
                me.tracker = joined(&with_reader(screen, pid, tty, &me.probe), &line);
                me.tracker_wants();
                me.streaming = true;
                // The stream runs from the join, and who reads the pane
                // is known: the wait is armed, and says so in the same
                // command list.
                let signal = ready
                    .take()
                    .map(|ch| ["wait-for", "-S", "--", &ch].map(str::to_owned).to_vec());
                let generation = me.generation;
                let (replies, exact) =
                    me.aligned_query_then(&hub::entry_queries(&t), signal, setup.deadline)?;
                // (Unless the hub went meanwhile: the stream was entered
                // again through the next, see `hub_lost`, and runs from
                // there.)
                if me.generation == generation {
                    me.exact_entry = exact;
                    let st = me.take_state(&replies, None)?;
                    if exact {
                        me.entry_above = entry::rows_above(&replies[1], st.cursor_y as usize);
                    }
                    if !flows_from_cursor(&replies[1], &replies[2], &st) {
                        me.tracker.lose_flow();
                    }
                }
            }
            hub::Entry::Joined { .. } => {
                // The pane's pipe already runs, and the wait needs the
                // history to line up with its stream (or the line the
                // cursor is on was not kept whole): the entry is a capture
                // at a point of the stream (what came before is in it).
                let mut cmds = hub::entry_queries(&t);
                cmds.extend(extra.iter().cloned());
                let generation = me.generation;
                let (replies, exact) = me.aligned_query(&cmds, setup.deadline)?;
                // (Unless the hub went meanwhile, as above: what the next
                // one streamed since it was entered is the wait's, and a
                // capture taken later must not make it old.)
                if me.generation == generation {
                    me.exact_entry = exact;
                    let window = me.entry_window.take();
                    me.take_entry(&replies, from.as_deref())?;
                    if exact {
                        me.mark_quiet(&replies);
                    }
                    // Output kept coming: what came between the syncs is
                    // drawn from where the capture stands in it.
                    if !exact && let Some(w) = window {
                        me.take_window(&replies, &w)?;
                    }
                }
            }
            hub::Entry::Foreign => {
                return Err(Error::new(
                    Kind::PipeBusy,
                    format!(
                        "another program pipes pane {t}'s output (pipe-pane); tmux-wait leaves it alone"
                    ),
                ));
            }
            hub::Entry::Failed { kind, message } => {
                return Err(Error::new(kind_from(&kind), message));
            }
        }
        // Armed: the stream runs and the entry state is known (whether a
        // line editor reads is asked after the entry, so before this).
        if let Some(ch) = &ready {
            socket
                .run(["wait-for", "-S", "--", ch])
                .map_err(|e| me.classify(e))?;
        }
        let watched = {
            let poster = me.inbox.poster();
            super::pidwatch::watch(me.pane.pane_pid, move || {
                poster.post(Event::PaneExited);
            })
        };
        if watched {
            me.check_every = CHECK_EVERY_WATCHED;
            me.next_check = Instant::now() + me.check_every;
        }
        Ok(me)
    }

    /// The entry's replies showed the pane where the stream starts (false
    /// for a wait that joined while output kept flowing).
    pub fn exact_entry(&self) -> bool {
        self.exact_entry
    }

    /// Take the history again, all of it, lined up with the stream (a
    /// cursor's place was not where it was expected).
    pub fn rebaseline_all(&mut self, deadline: Instant) -> Result<()> {
        let t = self.pane.pane_id.clone();
        let mut cmds = hub::entry_queries(&t);
        cmds.push(history_query(&t, "-"));
        let (replies, exact) = self.aligned_query(&cmds, deadline)?;
        self.take_entry(&replies, Some("-"))?;
        self.quiet = None;
        if exact {
            self.mark_quiet(&replies);
        }
        Ok(())
    }

    /// The pane's geometry at entry.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Joined lines of the history captured at entry (see
    /// `Setup::cursor_option`), from the captured start to the screen's end.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// The absolute row (from the oldest line of history) `history` starts
    /// at; 0 means it holds all of the history.
    pub fn history_from(&self) -> i64 {
        self.history_from
    }

    /// The cursor option's value read at entry ("" when unset).
    pub fn cursor_value(&self) -> &str {
        &self.cursor_value
    }

    pub fn pane(&self) -> &PaneInfo {
        &self.pane
    }

    /// Tell the tracker (a new one too) which lines this wait wants: as
    /// they end up, and only those a pattern can hit.
    fn tracker_wants(&mut self) {
        self.tracker.set_final_only(self.final_lines);
        let (needed, keep_last) = match &self.needed {
            Some((n, k)) => (Some(n.clone()), *k),
            None => (None, 0),
        };
        // The hub may leave out the lines the tracker would skip (see
        // `hub::sieve`), keeping as many last lines as it keeps.
        if let Some(n) = &needed
            && !self.final_lines
            && self.inbox.sieves()
        {
            self.inbox.send(
                &crate::pane::vt::sieve_wants(n, keep_last, Some(self.tracker.width())).line(),
            );
        }
        self.tracker.set_needed(needed, keep_last);
    }

    pub fn tracker(&self) -> &LineTracker {
        &self.tracker
    }

    /// Lines and marks the tracker holds now (complete lines only), without
    /// taking in more: after a sync, exactly what the stream held then.
    pub fn tracker_items(&mut self) -> Vec<Item> {
        self.unconsumed = false;
        self.tracker.take_items(false)
    }

    /// Lines and marks the tracker holds now (complete lines only), after
    /// taking in what arrived.
    pub fn take_items(&mut self) -> Vec<Item> {
        self.inbox.read_now();
        let start = self.received;
        for _ in 0..MAX_EVENTS_PER_BATCH {
            if self.received - start >= MAX_BYTES_PER_BATCH {
                break;
            }
            let Some(ev) = self.inbox.try_next() else {
                break;
            };
            // An error (the stream ended) is for the next batch.
            if let Err(e) = self.handle(ev) {
                self.failed = Some(e);
                break;
            }
        }
        self.unconsumed = false;
        let mut items = self.tracker.take_items(false);
        items.extend(self.recovered.drain(..).map(Item::Line));
        items
    }

    /// The next lines and marks, or None when `deadline` passed; an empty
    /// batch means output changed only the unfinished line (or the prompt
    /// state).
    pub fn next_items(&mut self, deadline: Instant) -> Result<Option<Vec<Item>>> {
        if self.poll.is_some() {
            return Ok(self
                .poll_next(deadline)?
                .map(|c| c.into_iter().map(Item::Line).collect()));
        }
        if !self.wait_output(deadline)? {
            return Ok(None);
        }
        let mut items = self.tracker.take_items(false);
        items.extend(self.recovered.drain(..).map(Item::Line));
        Ok(Some(items))
    }
}

impl PaneSource for StreamSource {
    fn entry_lines(&self) -> &[String] {
        &self.entry_lines
    }

    fn next_batch(&mut self, deadline: Instant) -> Result<Option<Vec<Candidate>>> {
        if self.poll.is_some() {
            return self.poll_next(deadline);
        }
        if !self.wait_output(deadline)? {
            return Ok(None);
        }
        let mut c = self.tracker.take(true);
        c.append(&mut self.recovered);
        Ok(Some(c))
    }

    fn recycle(&mut self, batch: Vec<Candidate>) {
        self.tracker.recycle(batch);
    }

    fn only_lines_hit_by(&mut self, needed: crate::matcher::Needed, keep_last: usize) {
        self.needed = Some((std::sync::Arc::new(needed), keep_last));
        self.tracker_wants();
    }

    fn saw_output(&self) -> bool {
        self.tracker.saw_output()
            || self.recovered_output
            || self.poll.as_ref().is_some_and(|p| p.saw_output())
    }

    fn fallback(&self) -> Option<crate::report::Fallback> {
        self.fallback
    }

    fn saw_alternate(&self) -> bool {
        self.tracker.saw_alternate()
    }

    fn prompts(&self) -> (u32, Option<i32>) {
        self.tracker.prompts()
    }

    fn seen_tail(&self) -> Option<Vec<String>> {
        self.tracker.screen_tail().map(trim_rows)
    }

    fn finish(&mut self) -> Result<Final> {
        // Stop feeding; what comes now is after the verdict.
        self.streaming = false;
        let t = self.pane.pane_id.clone();
        let s = |a: &str| a.to_owned();
        // One command list: the pane's state and every row the tail can
        // need (TAIL_ROWS above the screen to its end), cut to size here.
        let replies = self.query_all(&[
            vec![
                s("display-message"),
                s("-p"),
                s("-t"),
                t.clone(),
                s(FINAL_FORMAT),
            ],
            vec![
                s("capture-pane"),
                s("-p"),
                s("-J"),
                s("-t"),
                t.clone(),
                s("-S"),
                format!("-{TAIL_ROWS}"),
                s("-E"),
                s("-"),
            ],
        ])?;
        let r = self.verify(&replies[0])?;
        let (history, cursor_y, height, width) = (
            r.num(3)?.max(0),
            r.num(4)?.max(0),
            r.num(5)?.max(1),
            r.num(6)?.max(1),
        );
        // Rows from the entry row (or TAIL_ROWS above the cursor) down,
        // counted from the oldest line of history.
        let want = self
            .entry_abs
            .clamp(0, history + height - 1)
            .max(history + cursor_y - TAIL_ROWS);
        let mut row = (history - TAIL_ROWS).max(0);
        let mut tail = Vec::new();
        for line in &replies[1] {
            let rows =
                crate::cursor::split_rows(line.trim_end(), usize::try_from(width).unwrap_or(80))
                    .len() as i64;
            if row + rows > want {
                tail.push(line.clone());
            }
            row += rows;
        }
        Ok(Final {
            tail: trim_rows(tail),
        })
    }
}

impl Drop for StreamSource {
    fn drop(&mut self) {
        // The hub sees the end of the connection and, if this was the last
        // wait on the pane, closes its pipe.
        self.inbox.shutdown();
    }
}
