//! What of a pane's stream a reader may do without: the lines a wait says
//! it can use (its [`Wants`]), and a chunk with a run it cannot use left
//! out ([`Sieved`]): plain lines, or a screen redrawn in place
//! ([`Framed`], found by the line tracker as a [`FrameRun`]). The hub's
//! sieve leaves runs out by these; a wait's tracker steps over them.

use serde::{Deserialize, Serialize};

/// What a wait says of the lines it can use, in a `wants JSON` line after
/// its entry, so the hub may leave the others out of its stream (see
/// `sieve`): only lines `pattern` hits, and the last `keep` lines of each
/// chunk whatever they are. A `whole` line takes it back: every byte again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wants {
    /// A regex over lines joined by `\r\n`, in multi-line CRLF mode.
    pub pattern: String,
    pub match_case: bool,
    pub keep: usize,
    /// The wait's tracker is this many columns wide and takes a redrawn
    /// screen's frames left out (see `sieve`): a hub before them ignores
    /// it, and a wait before them never says it, so gets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<usize>,
}

impl Wants {
    /// The line a wait sends to say it.
    pub fn line(&self) -> Vec<u8> {
        let mut l = b"wants ".to_vec();
        l.extend_from_slice(&serde_json::to_vec(self).unwrap_or_default());
        l.push(b'\n');
        l
    }
}

/// The line that takes a wait's [`Wants`] back: every byte again.
pub const WHOLE: &[u8] = b"whole\n";

/// A chunk of the stream with a run of plain lines left out: `head`, then
/// `lines` lines of printable ASCII each ended by `\r\n`, `text` bytes of
/// it in all (their `\r\n` apart), that no pattern of the wait's
/// [`Wants`] hits, then `tail`. With `frame`, the run left out is a screen
/// redrawn in place instead (see [`Framed`]): `lines` line feeds and
/// `text` characters written in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sieved {
    pub head: Vec<u8>,
    pub lines: u64,
    pub text: u64,
    pub tail: Vec<u8>,
    pub frame: Option<Framed>,
}

/// A run of a screen redrawn in place, left out: it begins after a
/// cursor move that leaves a line tracker on an empty line at column
/// `from_cursor` (the last bytes of `head`), holds `bytes` bytes of
/// printable text, colours, erases and cursor moves, and ends with a move
/// that leaves it on an empty line at `cursor`, on a screen `width`
/// columns wide; no line drawn in it is one the wait's [`Wants`] hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framed {
    pub bytes: u64,
    pub from_cursor: u32,
    pub cursor: u32,
    pub width: u32,
}

impl Sieved {
    /// The bytes left out.
    pub fn skipped(&self) -> u64 {
        match self.frame {
            Some(f) => f.bytes,
            None => self.text + 2 * self.lines,
        }
    }

    /// The chunk's length as tmux wrote it.
    pub fn stream_len(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.skipped()
    }

    /// Line feeds in the chunk.
    pub fn newlines(&self) -> u64 {
        let count = |b: &[u8]| memchr::memchr_iter(b'\n', b).count() as u64;
        count(&self.head) + self.lines + count(&self.tail)
    }
}

/// Where a screen redrawn in place may be left out of `bytes` (which
/// start where a VT parser stands in ground): `start..head` is a cursor
/// move after which a line tracker stands on an empty line at
/// `from_cursor`; `head..to` draws no line the regex hits, in a screen
/// `width` columns wide, and ends on an empty line at `cursor`, with
/// `lines` line feeds and `text` characters written. Found by the line
/// tracker (`vt::frame_run`), for the hub's sieve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRun {
    pub start: usize,
    pub head: usize,
    pub to: usize,
    pub lines: u64,
    pub text: u64,
    pub from_cursor: usize,
    pub cursor: usize,
}
