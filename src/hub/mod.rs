//! The hub: how waits read a pane's output without attaching a tmux client.
//!
//! Why no client: a client attached to a session, even a hidden control
//! client, is a candidate for the "current client" of every command another
//! program runs without `-c` (tmux's `cmd_find_best_client` picks the client
//! with the latest activity, and a new client's activity is its creation
//! time). Messages from scripts went to our invisible client,
//! `switch-client` moved it instead of the person, and since tmux 3.7
//! `send-keys` refuses when that client is read-only. The attach also
//! counted as activity of the session. So tmux-wait reads panes through
//! `pipe-pane`, which attaches nothing: tmux copies the pane's output to a
//! socket, byte for byte, in the order it reads it.
//!
//! A pane has one pipe, so one process per server owns the pipes and shares
//! each with every wait on that pane: the hub. A wait connects to it over a
//! Unix socket beside tmux's (`.NAME.tmux-wait-hub`, 0600, peers of another
//! uid refused) and sends one [`Request`] line. The hub answers with an
//! [`Entry`] frame, then streams the pane's bytes in `D` frames:
//!
//! - The first wait on a pane gets a fresh pipe. The hub starts it with one
//!   tmux command list that first checks that the pane has no pipe
//!   (`if-shell -F '#{pane_pipe}'`, evaluated and run in one go), then opens
//!   the pipe and reads the pane's state and the wait's own queries. tmux
//!   runs a command list without reading any pane in between, so the
//!   replies show the pane exactly where the stream starts.
//! - A wait that joins a pane another wait already streams gets the stream
//!   from there on, and lines a capture of its own up with it (see
//!   `engine::stream`).
//! - A pane piped by someone else (a logging plugin, the user's own
//!   `pipe-pane`) is never touched: the answer is [`Entry::Foreign`].
//!
//! The pipe is opened with `-I -O`: tmux then also reads the socket, sees
//! the end of it the moment the hub closes its side (the last wait on the
//! pane left, or the hub died), and closes the pipe at once. The hub never
//! writes to it, so nothing is ever typed into the pane. The pipe's command
//! is `tmux-wait pipe-feed TOKEN` (see `feed`): it hands its end of the
//! socket to the hub and exits, so no process per pane stays behind.
//!
//! After the entry a wait may send `sync N` lines: the hub reads whatever
//! the pane's pipe holds at that moment, passes it on, then answers `S N`.
//! Output tmux wrote before the hub saw the request is then before the
//! answer (see `engine::stream`, which lines replies of separate tmux
//! commands up with the stream this way).
//!
//! Lifetime: started detached by the first wait that finds none (one
//! starter at a time under a lock beside the socket); one per server, kept
//! so by a lock it holds; leaves `LINGER` after its last wait, closing every
//! pipe.

mod feed;
mod server;

pub use feed::pipe_feed;
pub use server::serve;

use crate::error::{Error, Kind, Result};
use crate::tmux::{Socket, SocketLock};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a request's `hello` must say: the protocol's name and version.
pub const HELLO: &str = "tmux-wait-hub 3";

/// A wait's request, one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub hello: String,
    /// The pane, as `%N`.
    pub pane: String,
    /// Queries run with a fresh pipe's entry, after [`ENTRY_QUERIES`], and
    /// answered in the same order (see [`allowed`]).
    #[serde(default)]
    pub extra: Vec<Vec<String>>,
    /// When joining: put a [`Frame::Mark`] with this token into the stream
    /// of every wait already on the pane, at the point the joiner starts
    /// (a `run` hands its command over to a follower this way).
    #[serde(default)]
    pub mark: Option<String>,
}

/// The hub's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    /// A new pipe: the output of [`ENTRY_QUERIES`] and then of the
    /// request's `extra`, taken where the stream starts.
    Fresh { replies: Vec<Vec<String>> },
    /// The pane was streamed already: the stream goes on from here, on
    /// the line [`JoinPoint`] describes.
    Joined {
        /// What the stream wrote since its last line feed (see
        /// [`JoinPoint`]).
        line: Vec<u8>,
        /// `line` starts at a line feed: it draws the whole line.
        whole: bool,
        /// The pane is on the alternate screen.
        alt: bool,
    },
    /// Another program pipes the pane's output; it is left alone.
    Foreign,
    /// The pipe could not be had.
    Failed { kind: String, message: String },
}

/// At most this many bytes of the cursor's line are kept for joiners.
const LINE_KEEP: usize = 4096;

/// The state of a running stream a wait joining it needs to take it up
/// where it stands: the bytes of the line the cursor is on (since the last
/// line feed) and whether the pane is on the alternate screen. Kept by the
/// hub for each pipe at the cost of a byte search per chunk.
#[derive(Debug, Default)]
pub struct JoinPoint {
    line: Vec<u8>,
    whole: bool,
    alt: bool,
}

impl JoinPoint {
    /// A stream that starts with the pane on the alternate screen or not;
    /// the cursor's line before the stream is not known.
    pub fn new(alt: bool) -> Self {
        JoinPoint {
            line: Vec::new(),
            whole: false,
            alt,
        }
    }

    /// Take in a chunk of the stream.
    pub fn feed(&mut self, data: &[u8]) {
        for at in memchr::memmem::find_iter(data, b"\x1b[?") {
            if let Some(on) = alternate_switch(&data[at + 3..]) {
                self.alt = on;
            }
        }
        match memchr::memrchr(b'\n', data) {
            Some(i) => {
                self.line.clear();
                self.line.extend_from_slice(&data[i + 1..]);
                self.whole = true;
            }
            None => self.line.extend_from_slice(data),
        }
        if self.line.len() > LINE_KEEP {
            // A line rewritten with carriage returns (a progress bar): the
            // last rewrite draws it; else only its end is kept.
            match memchr::memrchr(b'\r', &self.line) {
                Some(r) if self.line.len() - r <= LINE_KEEP => {
                    self.line.drain(..r);
                }
                _ => {
                    let cut = self.line.len() - LINE_KEEP;
                    self.line.drain(..cut);
                    self.whole = false;
                }
            }
        }
    }

    /// The entry a joining wait gets.
    pub fn entry(&self) -> Entry {
        Entry::Joined {
            line: self.line.clone(),
            whole: self.whole,
            alt: self.alt,
        }
    }
}

/// After `ESC [ ?`: Some(on) when the private mode set or reset is the
/// alternate screen (1049, 1047, 47).
fn alternate_switch(rest: &[u8]) -> Option<bool> {
    let end = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b';'))?;
    let on = match rest[end] {
        b'h' => true,
        b'l' => false,
        _ => return None,
    };
    let params = std::str::from_utf8(&rest[..end]).ok()?;
    params
        .split(';')
        .any(|p| matches!(p, "1049" | "1047" | "47"))
        .then_some(on)
}

/// Why a stream ended (`X` frame).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// tmux closed the pipe: the pane is gone, the server exited, or
    /// another `pipe-pane` replaced or closed it.
    Closed,
    /// The pipe's command never reported (it could not start).
    NoFeed,
    /// The hub dropped this wait: it stopped reading its stream.
    Overflow,
}

/// One message from the hub to a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Entry(Entry),
    /// Bytes the pane's program wrote.
    Data(Vec<u8>),
    /// Everything the pipe held when `sync N` arrived is before this.
    Synced(u64),
    /// A wait that asked for this token joined here.
    Mark(String),
    End(EndReason),
}

const TAG_ENTRY: u8 = b'E';
const TAG_DATA: u8 = b'D';
const TAG_SYNCED: u8 = b'S';
const TAG_MARK: u8 = b'M';
const TAG_END: u8 = b'X';
/// Largest frame the hub sends or a wait accepts (a snapshot of an endless
/// line is the largest).
pub const MAX_FRAME: usize = 16 << 20;

impl Frame {
    /// Append this frame, encoded, to `out`: a tag byte, a 4-byte
    /// big-endian length, the payload.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let (tag, payload): (u8, std::borrow::Cow<[u8]>) = match self {
            Frame::Entry(e) => (TAG_ENTRY, serde_json::to_vec(e).unwrap_or_default().into()),
            Frame::Data(d) => (TAG_DATA, d.as_slice().into()),
            Frame::Synced(n) => (TAG_SYNCED, n.to_be_bytes().to_vec().into()),
            Frame::Mark(t) => (TAG_MARK, t.as_bytes().into()),
            Frame::End(r) => (TAG_END, serde_json::to_vec(r).unwrap_or_default().into()),
        };
        encode_raw(tag, &payload, out);
    }
}

/// Append a frame with this tag and payload to `out`.
pub fn encode_raw(tag: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    out.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(payload);
}

/// Splits a byte stream into frames.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    at: usize,
}

impl Decoder {
    pub fn push(&mut self, data: &[u8]) {
        if self.at > 0 && self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next whole frame, or None until more bytes come. A frame that is
    /// too long or malformed is an error.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        let rest = &self.buf[self.at..];
        if rest.len() < 5 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if len > MAX_FRAME {
            return Err(bad("a frame too long"));
        }
        if rest.len() < 5 + len {
            return Ok(None);
        }
        let payload = &rest[5..5 + len];
        let frame = match rest[0] {
            TAG_ENTRY => Frame::Entry(
                serde_json::from_slice(payload).map_err(|e| bad(&format!("an entry ({e})")))?,
            ),
            TAG_DATA => Frame::Data(payload.to_vec()),
            TAG_SYNCED => Frame::Synced(u64::from_be_bytes(
                payload.try_into().map_err(|_| bad("a sync reply"))?,
            )),
            TAG_MARK => Frame::Mark(String::from_utf8_lossy(payload).into_owned()),
            TAG_END => Frame::End(
                serde_json::from_slice(payload).map_err(|e| bad(&format!("an end ({e})")))?,
            ),
            t => return Err(bad(&format!("an unknown frame {t:#x}"))),
        };
        self.at += 5 + len;
        if self.at > (1 << 20) && self.at * 2 > self.buf.len() {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        Ok(Some(frame))
    }
}

fn bad(what: &str) -> Error {
    Error::new(Kind::Tmux, format!("the tmux-wait hub sent {what}"))
}

/// The queries every fresh entry answers first, for pane `pane`: the state
/// ([`crate::tmux::PaneState`]), the visible rows, the visible rows with
/// wrapped rows joined.
pub fn entry_queries(pane: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        v(&[
            "display-message",
            "-p",
            "-t",
            pane,
            crate::tmux::PANE_STATE_FORMAT,
        ]),
        v(&["capture-pane", "-p", "-t", pane]),
        v(&["capture-pane", "-p", "-J", "-t", pane]),
    ]
}

/// How many replies of a fresh entry are [`entry_queries`]'.
pub const ENTRY_QUERIES: usize = 3;

/// A query the hub runs for a wait with a fresh entry: reading the pane
/// (display-message -p, capture-pane -p, show-options) or signalling a
/// channel. Nothing that changes what other programs see.
pub fn allowed(cmd: &[String]) -> bool {
    let word = |i: usize| cmd.get(i).map(String::as_str);
    match word(0) {
        Some("display-message") | Some("capture-pane") => cmd.iter().any(|a| a == "-p"),
        Some("show-options") => true,
        Some("wait-for") => word(1) == Some("-S") && cmd.len() == 3,
        _ => false,
    }
}

/// The hub's socket for this server, or None where a Unix socket path
/// cannot hold it.
pub fn path(socket: &Socket) -> Option<PathBuf> {
    let p = crate::tmux::beside_socket(socket, "tmux-wait-hub")?;
    // sun_path holds 108 bytes with its terminating NUL.
    (p.as_os_str().len() < 104).then_some(p)
}

/// A connection to the server's hub with `req` sent, starting a hub when
/// none answers.
pub fn connect(socket: &Socket, req: &Request, deadline: Instant) -> Result<UnixStream> {
    let path = path(socket).ok_or_else(|| {
        Error::new(
            Kind::Tmux,
            "the tmux socket's path is too long for tmux-wait's hub socket beside it",
        )
    })?;
    let mut line = serde_json::to_vec(req).map_err(|e| Error::new(Kind::Io, e.to_string()))?;
    line.push(b'\n');
    let until = deadline.min(Instant::now() + Duration::from_secs(3));
    // Who starts a hub: the wait holding this lock (one file per server),
    // until it is connected or gives up on that hub; the others only try
    // to connect meanwhile. Waits started all at once start one hub.
    let mut starting: Option<(std::fs::File, Instant)> = None;
    loop {
        if let Ok(mut s) = UnixStream::connect(&path)
            && s.write_all(&line).is_ok()
        {
            return Ok(s);
        }
        let now = Instant::now();
        if now >= until {
            return Err(Error::new(
                Kind::Tmux,
                "tmux-wait's hub did not start (see docs/design.md, the hub)",
            ));
        }
        // A hub that does not answer in 500 ms is started again (by
        // whoever gets the lock).
        if starting
            .as_ref()
            .is_some_and(|(_, t)| now - *t > Duration::from_millis(500))
        {
            starting = None;
        }
        if starting.is_none()
            && let SocketLock::Held(lock) =
                crate::tmux::lock_beside_socket(socket, "tmux-wait-hub-start", true, now)
        {
            socket
                .absolute()
                .spawn_helper(&["hub"], "the tmux-wait hub")?;
            starting = Some((lock, now));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Read frames from `stream` until the first one, which must be the entry.
pub fn read_entry(stream: &mut UnixStream, dec: &mut Decoder, deadline: Instant) -> Result<Entry> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Some(f) = dec.next_frame()? {
            return match f {
                Frame::Entry(e) => Ok(e),
                _ => Err(bad("data before the entry")),
            };
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::new(
                Kind::Tmux,
                "tmux-wait's hub did not answer in time",
            ));
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| Error::io("cannot read from tmux-wait's hub", e))?;
        match stream.read(&mut buf) {
            Ok(0) => {
                return Err(Error::new(
                    Kind::Tmux,
                    "tmux-wait's hub closed the connection",
                ));
            }
            Ok(n) => dec.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(Error::io("cannot read from tmux-wait's hub", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_join_point_keeps_the_cursors_line_and_the_screen() {
        let mut j = super::JoinPoint::new(false);
        j.feed(b"partial");
        assert_eq!(
            j.entry(),
            super::Entry::Joined {
                line: b"partial".to_vec(),
                whole: false,
                alt: false
            }
        );
        j.feed(b" more\r\n$ ec");
        j.feed(b"ho hi");
        assert_eq!(
            j.entry(),
            super::Entry::Joined {
                line: b"$ echo hi".to_vec(),
                whole: true,
                alt: false
            }
        );
        j.feed(b"\x1b[?2004l\x1b[?1049h\x1b[H");
        assert!(matches!(j.entry(), super::Entry::Joined { alt: true, .. }));
        j.feed(b"\x1b[?1049;1l\n");
        assert!(matches!(j.entry(), super::Entry::Joined { alt: false, .. }));
        // A long progress line: its last rewrite is kept.
        j.feed(&[b'x'; 3000]);
        j.feed(b"\rdone 100%");
        j.feed(&[b' '; 2000]);
        assert!(
            matches!(j.entry(), super::Entry::Joined { ref line, whole: true, .. } if line.starts_with(b"\rdone 100%") && line.len() == 2010)
        );
        j.feed(&[b'y'; 5000]);
        assert!(
            matches!(j.entry(), super::Entry::Joined { ref line, whole: false, .. } if line.len() == 4096)
        );
    }

    use super::*;

    #[test]
    fn frames_round_trip_in_any_pieces() {
        let frames = vec![
            Frame::Entry(Entry::Foreign),
            Frame::Data(b"hello\r\n\x1b[31m".to_vec()),
            Frame::Synced(7),
            Frame::Mark("abc".into()),
            Frame::End(EndReason::Closed),
            Frame::Entry(Entry::Fresh {
                replies: vec![vec!["a".into()], vec![]],
            }),
        ];
        let mut bytes = Vec::new();
        for f in &frames {
            f.encode_into(&mut bytes);
        }
        for step in [1, 3, 7, bytes.len()] {
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for chunk in bytes.chunks(step) {
                d.push(chunk);
                while let Some(f) = d.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(got, frames, "step {step}");
        }
    }

    #[test]
    fn bad_frames_are_errors() {
        let mut d = Decoder::default();
        d.push(&[b'?', 0, 0, 0, 0]);
        assert!(d.next_frame().is_err());
        let mut d = Decoder::default();
        d.push(&[b'D', 0xff, 0xff, 0xff, 0xff]);
        assert!(d.next_frame().is_err());
        let mut d = Decoder::default();
        d.push(&[b'E', 0, 0, 0, 2, b'{', b'x']);
        assert!(d.next_frame().is_err());
        let mut d = Decoder::default();
        d.push(&[b'S', 0, 0, 0, 1, 0]);
        assert!(d.next_frame().is_err());
    }

    #[test]
    fn only_queries_pass() {
        let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(allowed(&v(&[
            "display-message",
            "-p",
            "-t",
            "%1",
            "#{pane_id}"
        ])));
        assert!(allowed(&v(&[
            "capture-pane",
            "-p",
            "-J",
            "-t",
            "%1",
            "-S",
            "-"
        ])));
        assert!(allowed(&v(&["show-options", "-pqv", "-t", "%1", "@x"])));
        assert!(allowed(&v(&["wait-for", "-S", "ready"])));
        assert!(!allowed(&v(&["wait-for", "ready"])));
        assert!(!allowed(&v(&["display-message", "hello"])));
        assert!(!allowed(&v(&["kill-server"])));
        assert!(!allowed(&v(&["switch-client", "-t", "$1"])));
        assert!(!allowed(&[]));
    }

    #[test]
    fn socket_path() {
        let s = Socket::Path("/tmp/x/sock".into());
        assert_eq!(
            path(&s).unwrap(),
            PathBuf::from("/tmp/x/.sock.tmux-wait-hub")
        );
        let long = Socket::Path(PathBuf::from(format!("/tmp/{}/s", "d".repeat(120))));
        assert!(path(&long).is_none());
    }
}
