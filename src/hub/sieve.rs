//! One pass over each chunk of a pane's stream for every wait on it that
//! said which lines it can use (`wants`): the runs of plain lines none of
//! them can use are found once, here, and left out of what those waits
//! are sent (a [`Sieved`] frame says how many lines and bytes). Pure: the
//! server keeps a sieve per pane and asks it about each chunk it reads.
//!
//! Why: under a flood, every wait on a pane received every byte and ran
//! its own line tracker and pattern search over all of it; ten waits cost
//! the producer several times what one did. Now the hub searches a chunk
//! once for every wait's patterns (`matcher::Joined`, which keeps fifty
//! case-blind patterns as fast to search as one), and a wait whose
//! patterns cannot hit the run gets its first line, counts, and its last
//! lines: what its tracker needs to stand exactly where the whole chunk
//! would have put it (see `LineTracker::feed_sieved_chunk`).
//!
//! What is left out, and only that: whole lines of printable ASCII, each
//! ended by `\r\n`, starting at a line's start where a VT parser stands in
//! its ground state (as the tracker's own bulk path requires), that no
//! wanted pattern touches, and not among the last `keep` lines of the
//! chunk (a wait's tail of what it saw, and its transcript). Lines with
//! colours and erases to their end (a compiler's, a test runner's) are
//! such lines too, searched as they show (`plain::styled_line_text`, as
//! the tracker's bulk path reads them). Other escape sequences, UTF-8 and
//! other controls are never left out: they move cursors and screens, and
//! are the prompts, questions and marks that waits and attention judge.
//!
//! But for one kind of run: a screen redrawn in place (an agent's while it
//! works), which the hub parses once for all the waits with the line
//! tracker (`pane::vt::frame_run`, a [`Framer`]): such a run is
//! left out of what two waits or more are sent when no line drawn in it is
//! one a pattern hits, and a wait's tracker steps over it (see [`Framed`]).
//! A line a pattern hits goes whole, and the runs after it are left out in
//! turn: the hub asks the sieve again about the rest of the chunk.

use crate::matcher::Joined;
use crate::pane::skip::{FrameRun, Framed, Sieved, Wants};
use crate::plain::{Ground, bare_lines, start_of_last_lines, styled_line_text};
use std::ops::ControlFlow;

/// Bytes a wait is sent whole before its chunks are sieved: a wait for
/// the next few lines is never sieved. (It was 64 KiB, as much as a
/// wait's tracker takes in before it leaves lines out itself; but the
/// tracker takes a sieved run exactly from its first byte, and fifty waits
/// joining a flood spent two thirds of their CPU parsing their first
/// 64 KiB: 150 ms against 55 ms in all, `seq 1 2000000`.)
pub const SIEVE_AFTER: u64 = 4 << 10;
/// The shortest run worth a frame of its own.
const MIN_RUN: usize = 1024;
/// The last lines of a chunk kept whole after a run of a redrawn screen:
/// the lines a wait keeps for its tail (`report::MAX_LINES`). The rest of
/// what `keep` asks for is its transcript, which a row move ends anyway.
const FRAME_KEEP: usize = crate::report::MAX_LINES;

/// Where a chunk is cut: `from..to` is left out, `lines` lines holding
/// `text` bytes of text (or, with `frame`, a screen redrawn in place:
/// see [`Framed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub from: usize,
    pub to: usize,
    pub lines: u64,
    pub text: u64,
    pub frame: Option<Framed>,
}

impl Cut {
    /// The frame a sieved wait gets for `chunk`.
    pub fn frame(&self, chunk: &[u8]) -> Sieved {
        Sieved {
            head: chunk[..self.from].to_vec(),
            lines: self.lines,
            text: self.text,
            tail: chunk[self.to..].to_vec(),
            frame: self.frame,
        }
    }
}

/// Finds a [`FrameRun`] in `bytes`, for a screen `width` wide.
pub type Framer = fn(&[u8], usize, &Joined) -> Option<FrameRun>;

/// One pane's sieve: where its stream stands, and the joined patterns.
#[derive(Debug, Default)]
pub struct Sieve {
    /// A parser fed the stream from the pipe's start stands in its ground
    /// state. A wait's tracker, which began in ground at its own entry,
    /// does too then: the last complete sequence (or none since either
    /// began) puts both there.
    ground: Ground,
    /// The stream's last byte was a line feed.
    line_start: bool,
    /// A shell is reading a line, as the stream says (bracketed paste
    /// switched on, or an OSC 133 prompt mark, last): what comes is likely
    /// the echo of keys, which the tracker does not take in bulk.
    reading: bool,
    /// The stream has had OSC 133 marks: they, not bracketed paste, say
    /// when a line is read (as the tracker takes them).
    osc133: bool,
    /// Inside screen's `ESC k` title (ended by `ESC \`), not output.
    in_title: bool,
    /// The stream last switched to the alternate screen (taken to be off
    /// when the pipe began), where a tracker follows no line: no frames
    /// are left out there.
    alt: bool,
    /// The patterns the joined regex was built from, sorted.
    key: Vec<(String, bool)>,
    joined: Option<Joined>,
    keep: usize,
    /// Finds the runs of a screen redrawn in place, and the width every
    /// wait sieved for has (None when they differ, or one of them takes
    /// no frames).
    framer: Option<Framer>,
    width: Option<usize>,
}

impl Sieve {
    /// A sieve that also leaves out runs of a screen redrawn in place,
    /// found by `framer`.
    pub fn new(framer: Option<Framer>) -> Sieve {
        Sieve {
            framer,
            ..Sieve::default()
        }
    }

    /// The waits sieved for want these: one regex hits any line any of
    /// them hits (built again only when they changed).
    pub fn set_wants<'a>(&mut self, wants: impl Iterator<Item = &'a Wants>) {
        let mut keep = 0;
        let mut widths = Vec::new();
        let mut key: Vec<(String, bool)> = wants
            .map(|w| {
                keep = keep.max(w.keep);
                widths.push(w.width);
                (w.pattern.clone(), w.match_case)
            })
            .collect();
        key.sort();
        key.dedup();
        // Frames for two waits or more: for one, the hub's parse would
        // only stand in for its own.
        let many = widths.len() > 1;
        widths.dedup();
        self.width = match widths[..] {
            [Some(w)] if many => Some(w),
            _ => None,
        };
        self.keep = keep;
        if key != self.key {
            self.joined = Joined::new(&key);
            self.key = key;
        }
    }

    /// A pattern of the waits sieved for may hit `bytes` as they are
    /// (their escapes not read: a hit split by colours is not seen).
    pub fn may_hit(&self, bytes: &[u8]) -> bool {
        self.joined.as_ref().is_some_and(|re| re.is_match(bytes))
    }

    /// Where `chunk`, the stream's next bytes, may be cut for the waits
    /// sieved for (None: send it whole). Does not take it in: see
    /// [`Sieve::advance`].
    pub fn cut(&self, chunk: &[u8]) -> Option<Cut> {
        let re = self.joined.as_ref()?;
        if self.reading || self.in_title {
            return None;
        }
        self.line_cut(re, chunk)
            .or_else(|| self.frame_cut(re, chunk))
    }

    /// A run of plain (or coloured) lines to leave out.
    fn line_cut(&self, re: &Joined, chunk: &[u8]) -> Option<Cut> {
        // A run starts at a line's start, in ground, after the chunk's
        // first line (which may end one begun before).
        let from = if self.line_start {
            0
        } else {
            memchr::memchr(b'\n', chunk)? + 1
        };
        if !self.ground.after(&chunk[..from]) {
            return None;
        }
        // The chunk's first line may begin a line being read (a prompt's
        // mark) or a title: none then either.
        if memchr::memchr(0x1b, &chunk[..from]).is_some() {
            let m = self.marks_after(&chunk[..from]);
            if m.reading || m.in_title {
                return None;
            }
        }
        let end = start_of_last_lines(chunk, self.keep);
        if end <= from + MIN_RUN {
            return None;
        }
        let region = &chunk[from..end];
        let (len, _) = bare_lines(region);
        // A line with colours (compilers, test runners): from here on,
        // lines are read as they show.
        let stop = &region[len..];
        let stop = &stop[..memchr::memchr(b'\n', stop).unwrap_or(stop.len())];
        if memchr::memchr(0x1b, stop).is_some() {
            return styled_cut(re, region, from);
        }
        let run = &region[..len];
        // Up to the line a pattern hits first; a run too short before it
        // begins after that line instead (the lines hit go whole).
        let cut = |start: usize, end: usize| {
            let lines = memchr::memchr_iter(b'\n', &run[start..end]).count();
            Cut {
                from: from + start,
                to: from + end,
                lines: lines as u64,
                text: (end - start - 2 * lines) as u64,
                frame: None,
            }
        };
        let mut start = 0;
        let hit = re.for_each_hit(run, |m_start, m_end| {
            let line = memchr::memrchr(b'\n', &run[..m_start]).map_or(0, |p| p + 1);
            if line >= start + MIN_RUN {
                return ControlFlow::Break(Some(cut(start, line)));
            }
            let last = m_end.max(m_start + 1) - 1;
            let Some(past) = run
                .get(last..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map(|lf| last + lf + 1)
            else {
                return ControlFlow::Break(None);
            };
            start = start.max(past);
            ControlFlow::Continue(())
        });
        match hit {
            Some(cut) => cut,
            None => (len >= start + MIN_RUN).then(|| cut(start, len)),
        }
    }

    /// A run of a screen redrawn in place to leave out (see [`FrameRun`]):
    /// from the chunk's first row move after which the column is known, in
    /// ground, with no line being read and not on the alternate screen, to
    /// the last row move the framer vouches for, before the chunk's last
    /// lines ([`FRAME_KEEP`] at most).
    fn frame_cut(&self, re: &Joined, chunk: &[u8]) -> Option<Cut> {
        let (framer, width) = (self.framer?, self.width?);
        if self.alt {
            return None;
        }
        let end = start_of_last_lines(chunk, self.keep.min(FRAME_KEEP));
        let run = framer(&chunk[..end], width, re)?;
        if run.to < run.head + MIN_RUN || run.to > end || run.start > run.head {
            return None;
        }
        // (The chunk may begin inside a sequence: what counts is that the
        // parser is back in ground where the run's first move begins.)
        if !self.ground.after(&chunk[..run.start]) {
            return None;
        }
        let m = self.marks_after(&chunk[..run.head]);
        if m.reading || m.in_title || m.alt {
            return None;
        }
        let narrow = |n: usize| u32::try_from(n).ok();
        Some(Cut {
            from: run.head,
            to: run.to,
            lines: run.lines,
            text: run.text,
            frame: Some(Framed {
                bytes: (run.to - run.head) as u64,
                from_cursor: narrow(run.from_cursor)?,
                cursor: narrow(run.cursor)?,
                width: narrow(width)?,
            }),
        })
    }

    /// The last marks in `chunk` of a line being read, of a title and of
    /// the alternate screen.
    fn marks(&mut self, chunk: &[u8]) {
        let m = self.marks_after(chunk);
        (self.osc133, self.reading, self.in_title, self.alt) =
            (m.osc133, m.reading, m.in_title, m.alt);
    }

    /// Where the stream stands after `chunk`, as its marks say: the last
    /// OSC 133 mark (or, with none ever, the last switch of bracketed
    /// paste) says whether a line is read, the last `ESC k` or `ESC \\`
    /// whether a title is open, the last switch of the alternate screen
    /// (`CSI ? 1049`, `1047` or `47`, then `h` or `l`) whether it is on.
    /// One pass over the chunk's escapes, from its end.
    fn marks_after(&self, chunk: &[u8]) -> Marks {
        let (mut osc133, mut paste, mut title, mut alt) = (None, None, None, None);
        for i in memchr::memrchr_iter(0x1b, chunk) {
            let rest = &chunk[i + 1..];
            if osc133.is_none() && rest.starts_with(b"]133;") {
                osc133 = Some(rest.get(5).copied());
            } else if paste.is_none() && rest.starts_with(b"[?2004") {
                paste = Some(rest.get(6).copied());
            } else if title.is_none() && matches!(rest.first(), Some(b'k' | b'\\')) {
                title = Some(rest[0] == b'k');
            } else if alt.is_none() {
                for mode in [&b"[?1049"[..], b"[?1047", b"[?47"] {
                    if rest.starts_with(mode)
                        && let Some(&m @ (b'h' | b'l')) = rest.get(mode.len())
                    {
                        alt = Some(m == b'h');
                    }
                }
            }
            if osc133.is_some() && paste.is_some() && title.is_some() && alt.is_some() {
                break;
            }
        }
        let mut m = Marks {
            osc133: self.osc133,
            reading: self.reading,
            in_title: title.unwrap_or(self.in_title),
            alt: alt.unwrap_or(self.alt),
        };
        // (A mark cut off at the chunk's end is taken as none.)
        if let Some(Some(b)) = osc133 {
            m.osc133 = true;
            m.reading = matches!(b, b'A' | b'B');
        } else if !m.osc133
            && let Some(Some(b)) = paste
        {
            m.reading = b == b'h';
        }
        m
    }

    /// Whole plain lines that no pattern of the waits sieved for may hit
    /// could be left out of what they are sent from here, as `chunk` (all
    /// of it such lines) shows: the stream stands at a line's start, in
    /// ground, with no line being read and no title open, and `chunk`
    /// leaves it there.
    pub fn plain_lines_here(&self, chunk: &[u8]) -> bool {
        self.line_start
            && self.ground.is()
            && !self.reading
            && !self.in_title
            && crate::plain::whole_lines(chunk)
            && !self.may_hit(chunk)
    }

    /// Take `chunk` in: where the stream stands after it.
    pub fn advance(&mut self, chunk: &[u8]) {
        if let Some(&last) = chunk.last() {
            self.ground.advance(chunk);
            self.line_start = last == b'\n';
            if memchr::memchr(0x1b, chunk).is_some() {
                self.marks(chunk);
            }
        }
    }
}

/// What a sieve's marks say after a chunk (see [`Sieve::marks_after`]).
struct Marks {
    osc133: bool,
    reading: bool,
    in_title: bool,
    alt: bool,
}

/// [`Sieve::cut`] for a run with colours: its lines as the tracker's bulk
/// path takes them (`styled_line_text`), searched as they show, up to the
/// line a pattern hits first. `region` starts at a line's start in ground,
/// `at` bytes into the chunk.
fn styled_cut(re: &Joined, region: &[u8], at: usize) -> Option<Cut> {
    // The lines' text, each ended by `\r\n` (as the regex expects), and
    // where each line ends in `region` and in the text.
    let mut text = Vec::with_capacity(region.len());
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while let Some(lf) = memchr::memchr(b'\n', &region[start..]) {
        let line = &region[start..start + lf + 1];
        let before = text.len();
        if line.len() < 2
            || line[line.len() - 2] != b'\r'
            || !styled_line_text(&line[..line.len() - 2], &mut text)
        {
            text.truncate(before);
            break;
        }
        text.extend_from_slice(b"\r\n");
        start += line.len();
        ends.push((start, text.len()));
    }
    // The lines before the first one a pattern hits; a run too short
    // before it begins after that line instead.
    let cut = |a: usize, b: usize| {
        let (from, shown_from) = if a == 0 { (0, 0) } else { ends[a - 1] };
        let (to, shown_to) = ends[b - 1];
        (to - from >= MIN_RUN).then(|| Cut {
            from: at + from,
            to: at + to,
            lines: (b - a) as u64,
            text: (shown_to - shown_from - 2 * (b - a)) as u64,
            frame: None,
        })
    };
    let mut first = 0;
    let found = re.for_each_hit(&text, |m_start, m_end| {
        let hit = ends.partition_point(|&(_, t)| t <= m_start);
        if hit > first
            && let Some(c) = cut(first, hit)
        {
            return ControlFlow::Break(c);
        }
        let last = m_end.max(m_start + 1);
        first = first.max(ends.partition_point(|&(_, t)| t < last) + 1);
        ControlFlow::Continue(())
    });
    if found.is_some() {
        found
    } else if first < ends.len() {
        cut(first, ends.len())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wants(p: &str, keep: usize) -> Wants {
        Wants {
            pattern: p.to_owned(),
            match_case: false,
            keep,
            width: None,
        }
    }

    fn lines(from: usize, to: usize) -> Vec<u8> {
        (from..to)
            .flat_map(|i| format!("{i}\r\n").into_bytes())
            .collect()
    }

    fn coloured(from: usize, to: usize) -> Vec<u8> {
        (from..to)
            .flat_map(|i| format!("\x1b[32m{i}\x1b[0m ok\x1b[K\r\n").into_bytes())
            .collect()
    }

    #[test]
    fn coloured_lines_are_cut_and_searched_as_they_show() {
        let mut s = Sieve::default();
        s.set_wants([wants("ERROR", 2)].iter());
        let mut chunk = coloured(0, 300);
        let c = s.cut(&chunk).expect("cut");
        assert_eq!(c.from, coloured(0, 1).len());
        assert_eq!(&chunk[c.to..], &coloured(298, 300)[..]);
        assert_eq!(c.lines, 297);
        let shown: usize = (1..298).map(|i| format!("{i} ok").len()).sum();
        assert_eq!(c.text, shown as u64);
        // A hit split by colours ends the run before its line.
        let at = chunk.len();
        chunk.extend_from_slice(b"\x1b[31mER\x1b[1mROR\x1b[0m: 1\r\n");
        chunk.extend_from_slice(&coloured(300, 400));
        let c = s.cut(&chunk).expect("cut");
        assert_eq!(c.to, at);
        // A hit in the first lines: the run begins after its line.
        let mut early = coloured(0, 3);
        early.extend_from_slice(b"\x1b[31mER\x1b[1mROR\x1b[0m: 1\r\n");
        let after = early.len();
        early.extend_from_slice(&coloured(3, 300));
        let c = s.cut(&early).expect("cut");
        assert_eq!((c.from, c.lines), (after, 297 - 2));
        // So does a line the tracker would not take in bulk (a cursor
        // move, a bare carriage return, a colour cut off).
        for odd in [&b"\x1b[H1\r\n"[..], b"12\r34\r\n", b"1\x1b[3\r\n"] {
            let mut chunk = coloured(0, 100);
            let at = chunk.len();
            chunk.extend_from_slice(odd);
            chunk.extend_from_slice(&coloured(100, 300));
            assert_eq!(s.cut(&chunk).expect("cut").to, at, "{odd:?}");
        }
    }

    #[test]
    fn a_chunk_that_ends_a_sequence_the_last_one_began_is_cut() {
        let stream = coloured(0, 400);
        // Cut inside a sequence (after its ESC, and inside `ESC [0m`).
        for back in [1, 3] {
            let at = coloured(0, 100).len() - "\x1b[0m ok\x1b[K\r\n".len() + back;
            let mut s = Sieve::default();
            s.set_wants([wants("ERROR", 2)].iter());
            s.advance(&stream[..at]);
            assert!(!s.ground.is());
            let c = s.cut(&stream[at..]).expect("cut");
            assert_eq!(stream[at + c.from - 2..at + c.from], *b"\r\n");
            assert_eq!(c.lines, 298, "{back}");
        }
    }

    #[test]
    fn plain_lines_no_pattern_hits_are_cut_but_the_first_and_last() {
        let mut s = Sieve::default();
        s.set_wants([wants("NEVER", 3)].iter());
        let chunk = lines(0, 1000);
        let c = s.cut(&chunk).expect("cut");
        assert_eq!(&chunk[..c.from], b"0\r\n");
        assert_eq!(&chunk[c.to..], b"997\r\n998\r\n999\r\n");
        assert_eq!(c.lines, 996);
        assert_eq!(c.text + 2 * c.lines, (c.to - c.from) as u64);
        // Taken in at a line's end: the next chunk is cut from its start.
        s.advance(&chunk);
        assert_eq!(s.cut(&chunk).expect("cut").from, 0);
    }

    #[test]
    fn a_hit_ends_the_run_before_its_line() {
        let mut s = Sieve::default();
        s.set_wants([wants("^5.0$", 0), wants("zzz", 0)].iter());
        let chunk = lines(0, 1000);
        let c = s.cut(&chunk).expect("cut");
        assert_eq!(&chunk[c.to..c.to + 5], b"500\r\n");
        assert_eq!(c.lines, 499);
        // A hit in the first lines: the run begins after its line (which
        // goes whole, in the head).
        s.set_wants([wants("^3$", 0)].iter());
        let c = s.cut(&chunk).expect("cut");
        assert_eq!(&chunk[c.from - 3..c.from], b"3\r\n");
        assert_eq!(c.to, chunk.len());
        // Hits all through: nothing worth cutting.
        s.set_wants([wants("0$", 0)].iter());
        assert_eq!(s.cut(&chunk), None);
        // Case as each wait asked.
        s.set_wants(
            [Wants {
                pattern: "x".into(),
                match_case: true,
                keep: 0,
                width: None,
            }]
            .iter(),
        );
        let upper: Vec<u8> = lines(0, 1000)
            .into_iter()
            .chain(b"X\r\n".iter().copied())
            .collect();
        assert_eq!(s.cut(&upper).expect("cut").to, upper.len());
    }

    #[test]
    fn only_plain_lines_in_ground_are_cut() {
        let mut s = Sieve::default();
        s.set_wants([wants("NEVER", 0)].iter());
        // An escape sequence other than colours ends the run; the lines
        // after it are another chunk's business.
        let mut chunk = lines(0, 500);
        chunk.extend_from_slice(b"\x1b[2Jcleared\r\n");
        chunk.extend(lines(500, 1000));
        let c = s.cut(&chunk).expect("cut");
        assert!(chunk[c.from..c.to].iter().all(|&b| b != 0x1b));
        assert_eq!(&chunk[c.to..c.to + 4], b"\x1b[2J");
        // A title left open: the parser is in a string, not in ground.
        s.advance(b"\x1b]0;title");
        assert_eq!(s.cut(&lines(0, 1000)), None);
        s.advance(b"\x07\x1b[0m\r\n");
        assert!(s.cut(&lines(0, 1000)).is_some());
        // While a shell reads a line: none.
        s.advance(b"\x1b]133;A\x07$ \x1b]133;B\x07");
        assert_eq!(s.cut(&lines(0, 1000)), None);
        s.advance(b"\r\n\x1b]133;C\x07");
        assert!(s.cut(&lines(0, 1000)).is_some());
        // Bracketed paste says so too, where no OSC 133 mark came (once
        // one did, the marks alone say, as the tracker takes them).
        s.advance(b"\x1b[?2004h$ ");
        assert!(s.cut(&lines(0, 1000)).is_some());
        let mut s = Sieve::default();
        s.set_wants([wants("NEVER", 0)].iter());
        s.advance(b"\x1b[?2004h$ ");
        assert_eq!(s.cut(&lines(0, 1000)), None);
        s.advance(b"ls\r\n\x1b[?2004l\r");
        assert!(s.cut(&lines(0, 1000)).is_some());
        // A prompt's mark in the chunk's first line: the lines after it
        // may be typed.
        let mut s = Sieve::default();
        s.set_wants([wants("NEVER", 0)].iter());
        let mut chunk = b"\x1b]133;A\x07$ \x1b]133;B\x07ls\r\n".to_vec();
        chunk.extend(lines(0, 1000));
        assert_eq!(s.cut(&chunk), None);
        // Inside screen's title: none.
        s.advance(b"\x1bkmy title");
        assert_eq!(s.cut(&lines(0, 1000)), None);
        s.advance(b"\x1b\\\r\n");
        assert!(s.cut(&lines(0, 1000)).is_some());
        // UTF-8 and lines without their carriage return are not plain.
        assert_eq!(s.cut("é\r\n".repeat(1000).as_bytes()), None);
        assert_eq!(s.cut("abc\n".repeat(1000).as_bytes()), None);
        // Nobody wants a cut: none.
        s.set_wants(std::iter::empty());
        assert_eq!(s.cut(&lines(0, 1000)), None);
    }

    #[test]
    fn a_pattern_that_cannot_be_built_sieves_nothing() {
        let mut s = Sieve::default();
        s.set_wants([wants("(", 0)].iter());
        assert_eq!(s.cut(&lines(0, 1000)), None);
    }
}
