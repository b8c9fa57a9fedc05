//! The hub's protocol: a wait's request line, and the frames it gets back.

use crate::error::{Error, Kind, Result};
use crate::pane::skip::{Framed, Sieved};
use serde::{Deserialize, Serialize};

/// What a request's `hello` must say: the protocol's name and version.
pub const HELLO: &str = "tmux-wait-hub 3";

/// A wait's request, one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub hello: String,
    /// The pane, as `%N`.
    pub pane: String,
    /// Queries run with a fresh pipe's entry, after [`ENTRY_QUERIES`](super::ENTRY_QUERIES), and
    /// answered in the same order (see [`allowed`](super::allowed)).
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
    /// A new pipe: the output of [`ENTRY_QUERIES`](super::ENTRY_QUERIES)(super::ENTRY_QUERIES) and then of the
    /// request's `extra`, taken where the stream starts.
    Fresh { replies: Vec<Vec<String>> },
    /// The pane was streamed already: the stream goes on from here, on
    /// the line [`JoinPoint`](super::join::JoinPoint) describes.
    Joined {
        /// What the stream wrote since its last line feed (see
        /// [`JoinPoint`](super::join::JoinPoint)).
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
    /// Bytes the pane's program wrote, lines the wait cannot use left out.
    Sieved(Sieved),
    /// Everything the pipe held when `sync N` arrived is before this.
    Synced(u64),
    /// A wait that asked for this token joined here.
    Mark(String),
    End(EndReason),
}

const TAG_ENTRY: u8 = b'E';
const TAG_DATA: u8 = b'D';
const TAG_SIEVED: u8 = b'P';
const TAG_FRAMED: u8 = b'R';
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
            Frame::Entry(e) => (TAG_ENTRY, entry_json(e).into()),
            Frame::Data(d) => (TAG_DATA, d.as_slice().into()),
            Frame::Sieved(s) => {
                let mut p = Vec::with_capacity(20 + s.head.len() + s.tail.len());
                p.extend_from_slice(&(s.head.len() as u32).to_be_bytes());
                p.extend_from_slice(&s.head);
                p.extend_from_slice(&s.lines.to_be_bytes());
                p.extend_from_slice(&s.text.to_be_bytes());
                if let Some(f) = &s.frame {
                    p.extend_from_slice(&f.bytes.to_be_bytes());
                    for n in [f.from_cursor, f.cursor, f.width] {
                        p.extend_from_slice(&n.to_be_bytes());
                    }
                }
                p.extend_from_slice(&s.tail);
                (
                    if s.frame.is_some() {
                        TAG_FRAMED
                    } else {
                        TAG_SIEVED
                    },
                    p.into(),
                )
            }
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

/// An entry as JSON, with `"sieve": true`: this hub takes `wants` lines
/// (a wait of a build before them ignores the key; a hub before them never
/// sends it, and drops a wait for a line it does not know).
fn entry_json(e: &Entry) -> Vec<u8> {
    let mut v = serde_json::to_value(e).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.insert("sieve".into(), true.into());
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

/// Splits a byte stream into frames.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    at: usize,
    sieves: bool,
}

impl Decoder {
    /// The last entry came from a hub that takes `wants` lines.
    pub fn sieves(&self) -> bool {
        self.sieves
    }

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
            TAG_ENTRY => {
                let v: serde_json::Value =
                    serde_json::from_slice(payload).map_err(|e| bad(&format!("an entry ({e})")))?;
                self.sieves = v.get("sieve") == Some(&serde_json::Value::Bool(true));
                Frame::Entry(
                    serde_json::from_value(v).map_err(|e| bad(&format!("an entry ({e})")))?,
                )
            }
            TAG_DATA => Frame::Data(payload.to_vec()),
            TAG_SIEVED => {
                Frame::Sieved(sieved(payload, false).ok_or_else(|| bad("a sieved chunk"))?)
            }
            TAG_FRAMED => {
                Frame::Sieved(sieved(payload, true).ok_or_else(|| bad("a sieved chunk"))?)
            }
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

fn sieved(p: &[u8], framed: bool) -> Option<Sieved> {
    let n = u32::from_be_bytes(p.get(..4)?.try_into().ok()?) as usize;
    let head = p.get(4..4 + n)?.to_vec();
    let rest = p.get(4 + n..)?;
    let u64_at = |i: usize| Some(u64::from_be_bytes(rest.get(i..i + 8)?.try_into().ok()?));
    let u32_at = |i: usize| Some(u32::from_be_bytes(rest.get(i..i + 4)?.try_into().ok()?));
    let (frame, tail) = if framed {
        let f = Framed {
            bytes: u64_at(16)?,
            from_cursor: u32_at(24)?,
            cursor: u32_at(28)?,
            width: u32_at(32)?,
        };
        (Some(f), 36)
    } else {
        (None, 16)
    };
    Some(Sieved {
        head,
        lines: u64_at(0)?,
        text: u64_at(8)?,
        tail: rest.get(tail..)?.to_vec(),
        frame,
    })
}

pub(super) fn bad(what: &str) -> Error {
    Error::new(Kind::Tmux, format!("the tmux-wait hub sent {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_in_any_pieces() {
        let frames = vec![
            Frame::Entry(Entry::Foreign),
            Frame::Data(b"hello\r\n\x1b[31m".to_vec()),
            Frame::Synced(7),
            Frame::Sieved(Sieved {
                head: b"1\r\n".to_vec(),
                lines: 3,
                text: 9,
                tail: b"9\r\n$ ".to_vec(),
                frame: None,
            }),
            Frame::Sieved(Sieved {
                head: b"\x1b[H".to_vec(),
                lines: 40,
                text: 2000,
                tail: b"\x1b[2Kdone\r\n".to_vec(),
                frame: Some(Framed {
                    bytes: 3000,
                    from_cursor: 0,
                    cursor: 4,
                    width: 80,
                }),
            }),
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
    fn an_entry_says_whether_the_hub_sieves() {
        let mut bytes = Vec::new();
        Frame::Entry(Entry::Foreign).encode_into(&mut bytes);
        let mut d = Decoder::default();
        d.push(&bytes);
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Entry(Entry::Foreign)));
        assert!(d.sieves());
        // A hub of a build before `wants`.
        let mut d = Decoder::default();
        encode_raw(TAG_ENTRY, br#"{"entry":"foreign"}"#, &mut bytes);
        d.push(&bytes[bytes.len() - 24..]);
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Entry(Entry::Foreign)));
        assert!(!d.sieves());
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
        let mut d = Decoder::default();
        d.push(&[b'P', 0, 0, 0, 6, 0, 0, 0, 9, b'a', b'b']);
        assert!(d.next_frame().is_err());
    }
}
