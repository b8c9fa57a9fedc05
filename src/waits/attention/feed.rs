//! One pane's stream, read without a thread of its own: the hub's
//! connection in non-blocking mode and a pidfd for the pane's process,
//! both polled by the watcher's one loop with every other pane's.
//!
//! It reads the pane as the stream engine does (`engine::stream`): the
//! same request and entry through the hub, the same line tracker, and the
//! same looks at who reads the terminal before each chunk (`pane::intake`,
//! so typed echo is told from output). What it leaves out is what attention does not
//! need: history captures, cursors and the alignment of separate queries
//! with the stream. A pane costs two descriptors and no thread.

use crate::error::{Error, Kind, Result};
use crate::hub::{self, Decoder, EndReason, Frame, Request};
use crate::matcher::Needed;
use crate::pane::intake::{Chunk, Intake, joined, with_reader};
use crate::pane::probe::{ReaderProbe, SMALL_CHUNK};
use crate::pane::shell::tty_width;
use crate::pane::vt::{Item, LineTracker, TrackerStart};
use crate::tmux::{PaneInfo, PaneState, Socket};
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Instant;

/// The most bytes taken from one pane per turn of the loop, so a flood in
/// one pane does not starve the others.
const TURN_BYTES: usize = 1 << 20;

/// The feeds made in this process, for [`Feed::serial`].
static FEEDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub struct Feed {
    pub pane: PaneInfo,
    /// Unique in this process: names its descriptors to a poller.
    pub serial: u64,
    conn: UnixStream,
    dec: Decoder,
    tracker: LineTracker,
    probe: ReaderProbe,
    pidfd: Option<OwnedFd>,
    /// When the reader was looked at, and the look owed.
    intake: Intake,
    /// The last chunk was small and left a line open (a prompt, a
    /// question): the program that wrote it is likely reading already.
    ends_open: bool,
    /// Line feeds the stream held (typed ones included).
    newlines: u64,
}

/// What a turn of reading found.
pub enum Read {
    /// Bytes of output came (0: nothing yet).
    Data(usize),
    /// The stream ended: why, as the hub says.
    Ended(EndReason),
    /// The hub's connection broke.
    Lost,
}

impl Feed {
    /// Connect to the hub for `pane` and take its entry (blocking, up to
    /// `deadline`); the stream starts here.
    /// `lines`: the watch looks at every line (a `--pattern`); without,
    /// the plain lines of a flood are counted and not made (only lines
    /// with escape sequences, and each chunk's last, are: what an agent's
    /// busy line, a question or a prompt are drawn with).
    pub fn open(socket: &Socket, pane: &PaneInfo, lines: bool, deadline: Instant) -> Result<Feed> {
        let req = Request {
            hello: hub::HELLO.to_owned(),
            pane: pane.pane_id.clone(),
            extra: Vec::new(),
            mark: None,
        };
        let mut conn = hub::connect(socket, &req, deadline)?;
        let mut dec = Decoder::default();
        let entry = hub::read_entry(&mut conn, &mut dec, deadline)?;
        let mut pane = pane.clone();
        let (screen, joined_on) = match entry {
            hub::Entry::Fresh { replies } => {
                let st = PaneState::parse(replies.first().map_or(&[][..], |r| &r[..]))?;
                if st.pane_id != pane.pane_id {
                    return Err(Error::new(
                        Kind::NoPane,
                        format!("pane {} was closed", pane.pane_id),
                    ));
                }
                if st.dead {
                    return Err(Error::new(
                        Kind::PaneDied,
                        format!("pane {} is dead (its program has exited)", pane.pane_id),
                    ));
                }
                pane.pane_pid = st.pane_pid;
                if !st.tty.is_empty() {
                    pane.pane_tty = st.tty.clone();
                }
                let rows = replies.get(1).map_or(&[][..], |r| &r[..]);
                (crate::engine::stream::screen_start(&st, rows), None)
            }
            hub::Entry::Joined { line, alt, .. } => {
                // The pane's pipe runs for other waits: go on from the
                // join.
                let screen = TrackerStart {
                    alternate_on: alt,
                    ..TrackerStart::blank(tty_width(&pane.pane_tty).unwrap_or(80))
                };
                (screen, Some(line))
            }
            hub::Entry::Foreign => {
                return Err(Error::new(
                    Kind::PipeBusy,
                    format!("another program pipes pane {}'s output", pane.pane_id),
                ));
            }
            hub::Entry::Failed { kind, message } => {
                return Err(Error::new(crate::engine::stream::kind_from(&kind), message));
            }
        };
        let probe = ReaderProbe::new(pane.pane_pid, &pane.pane_tty);
        let entry = with_reader(screen, pane.pane_pid, &pane.pane_tty, &probe);
        let mut tracker = match joined_on {
            Some(line) => joined(&entry, &line),
            None => LineTracker::new(&entry),
        };
        if !lines {
            let none = Needed::none();
            // The hub leaves the plain lines out too (see `hub::sieve`).
            let wants = crate::pane::vt::sieve_wants(&none, 0, Some(tracker.width()));
            if dec.sieves() {
                let _ = (&conn).write_all(&wants.line());
            }
            tracker.set_needed(Some(std::sync::Arc::new(none)), 1);
        }
        crate::sys::set_nonblocking(conn.as_raw_fd())
            .map_err(|e| Error::io("cannot read from tmux-wait's hub", e))?;
        Ok(Feed {
            serial: FEEDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            probe,
            pidfd: crate::sys::pidfd::open(pane.pane_pid).fd(),
            pane,
            conn,
            dec,
            tracker,
            intake: Intake::default(),
            ends_open: false,
            newlines: 0,
        })
    }

    pub fn conn_fd(&self) -> RawFd {
        self.conn.as_raw_fd()
    }

    /// Readable once the pane's process exited (None: not watched so).
    pub fn pid_fd(&self) -> Option<RawFd> {
        self.pidfd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Line feeds so far: a line ended (an answer, the program's output).
    pub fn newlines(&self) -> u64 {
        self.newlines
    }

    /// The last chunk was small and left its line open.
    pub fn ends_open(&self) -> bool {
        self.ends_open
    }

    /// The pidfd reported the exit: no need to poll it again.
    pub fn exit_seen(&mut self) {
        self.pidfd = None;
    }

    pub fn tracker(&self) -> &LineTracker {
        &self.tracker
    }

    /// Lines and marks finished so far (the unfinished line stays).
    pub fn items(&mut self) -> Vec<Item> {
        self.tracker.take_items(false)
    }

    /// Take in what the hub sent, without blocking (at most a turn's
    /// worth).
    pub fn read(&mut self, buf: &mut [u8]) -> Read {
        let mut got = 0;
        loop {
            loop {
                match self.dec.next_frame() {
                    Ok(Some(Frame::Data(d))) => {
                        got += d.len();
                        self.take(Chunk::Whole(&d));
                    }
                    Ok(Some(Frame::Sieved(s))) => {
                        got += s.stream_len() as usize;
                        self.take(Chunk::Sieved(&s));
                    }
                    Ok(Some(Frame::End(why))) => return Read::Ended(why),
                    Ok(Some(Frame::Entry(_))) | Err(_) => return Read::Lost,
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                }
            }
            if got >= TURN_BYTES {
                return Read::Data(got);
            }
            match self.conn.read(buf) {
                Ok(0) => return Read::Lost,
                Ok(n) => self.dec.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Read::Data(got),
                Err(_) => return Read::Lost,
            }
        }
    }

    /// A chunk of output, fed with what the terminal says of its reader
    /// (as `engine::stream` feeds it: see `pane::intake`). The watch wants
    /// no plain line, but asks for whole chunks again if its tracker did
    /// not stand where the hub's sieve took it to.
    fn take(&mut self, chunk: Chunk<'_>) {
        self.ends_open =
            matches!(chunk, Chunk::Whole(d) if d.len() <= SMALL_CHUNK && !d.ends_with(b"\n"));
        self.newlines += chunk.newlines();
        let (tracker, probe) = (&mut self.tracker, &mut self.probe);
        let tty = &self.pane.pane_tty;
        if !self.intake.take(tracker, probe, tty, chunk, Instant::now()) {
            let _ = (&self.conn).write_all(hub::WHOLE);
        }
    }

    /// When the tracker or the look owed after unlooked output needs a
    /// turn with no output.
    pub fn wake(&self) -> Option<Instant> {
        let owed = self.intake.owed_at(&self.probe, Instant::now());
        match (owed, self.tracker.held_until()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The turn `wake` asked for.
    pub fn tick(&mut self) {
        let now = Instant::now();
        if self
            .intake
            .owed_at(&self.probe, now)
            .is_some_and(|t| t <= now)
        {
            self.intake
                .look_owed(&mut self.tracker, &mut self.probe, now);
        }
        if self.tracker.held_until().is_some_and(|t| t <= now) {
            self.tracker.tick(now);
        }
    }
}
