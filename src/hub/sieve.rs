//! One pass over each chunk of a pane's stream for every wait on it that
//! said which lines it can use (`wants`): the runs of plain lines none of
//! them can use are found once, here, and left out of what those waits
//! are sent (a [`Sieved`] frame says how many lines and bytes). Pure: the
//! server keeps a sieve per pane and asks it about each chunk it reads.
//!
//! Why: under a flood, every wait on a pane received every byte and ran
//! its own line tracker and pattern search over all of it; ten waits cost
//! the producer several times what one did. Now the hub searches a chunk
//! once, with one regex that joins every wait's, and a wait whose
//! patterns cannot hit the run gets its first line, counts, and its last
//! lines: what its tracker needs to stand exactly where the whole chunk
//! would have put it (see `LineTracker::feed_sieved`).
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

use super::protocol::{Sieved, Wants};
use crate::plain::{bare_lines, ends_in_ground, start_of_last_lines, styled_line_text};

/// Bytes a wait is sent whole before its chunks are sieved: its tracker
/// takes as much in before it leaves lines out itself, so a wait for the
/// next line is never sieved.
pub const SIEVE_AFTER: u64 = 64 << 10;
/// The shortest run worth a frame of its own.
const MIN_RUN: usize = 1024;

/// Where a chunk is cut: `from..to` is left out, `lines` lines holding
/// `text` bytes of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub from: usize,
    pub to: usize,
    pub lines: u64,
    pub text: u64,
}

impl Cut {
    /// The frame a sieved wait gets for `chunk`.
    pub fn frame(&self, chunk: &[u8]) -> Sieved {
        Sieved {
            head: chunk[..self.from].to_vec(),
            lines: self.lines,
            text: self.text,
            tail: chunk[self.to..].to_vec(),
        }
    }
}

/// One pane's sieve: where its stream stands, and the joined patterns.
#[derive(Debug)]
pub struct Sieve {
    /// A parser fed the stream from the pipe's start stands in its ground
    /// state. A wait's tracker, which began in ground at its own entry,
    /// does too then: the last complete sequence (or none since either
    /// began) puts both there.
    ground: bool,
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
    /// The patterns the joined regex was built from, sorted.
    key: Vec<(String, bool)>,
    joined: Option<regex::bytes::Regex>,
    keep: usize,
}

impl Default for Sieve {
    fn default() -> Self {
        Self {
            ground: true,
            line_start: false,
            reading: false,
            osc133: false,
            in_title: false,
            key: Vec::new(),
            joined: None,
            keep: 0,
        }
    }
}

impl Sieve {
    /// The waits sieved for want these: one regex hits any line any of
    /// them hits (built again only when they changed).
    pub fn set_wants<'a>(&mut self, wants: impl Iterator<Item = &'a Wants>) {
        let mut keep = 0;
        let mut key: Vec<(String, bool)> = wants
            .map(|w| {
                keep = keep.max(w.keep);
                (w.pattern.clone(), w.match_case)
            })
            .collect();
        key.sort();
        key.dedup();
        self.keep = keep;
        if key != self.key {
            self.joined = join(&key);
            self.key = key;
        }
    }

    /// Where `chunk`, the stream's next bytes, may be cut for the waits
    /// sieved for (None: send it whole). Does not take it in: see
    /// [`Sieve::advance`].
    pub fn cut(&self, chunk: &[u8]) -> Option<Cut> {
        let re = self.joined.as_ref()?;
        if self.reading || self.in_title {
            return None;
        }
        // A run starts at a line's start, in ground, after the chunk's
        // first line (which may end one begun before).
        let from = if self.line_start {
            0
        } else {
            memchr::memchr(b'\n', chunk)? + 1
        };
        if !ends_in_ground(&chunk[..from], self.ground) {
            return None;
        }
        // The chunk's first line may begin a line being read (a prompt's
        // mark) or a title: none then either.
        if memchr::memchr(0x1b, &chunk[..from]).is_some() {
            let (_, reading, in_title) = self.marks_after(&chunk[..from]);
            if reading || in_title {
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
        // Up to the line a pattern hits first.
        let len = match re.find(run) {
            Some(m) => memchr::memrchr(b'\n', &run[..m.start()]).map_or(0, |p| p + 1),
            None => len,
        };
        if len < MIN_RUN {
            return None;
        }
        let lines = memchr::memchr_iter(b'\n', &run[..len]).count();
        Some(Cut {
            from,
            to: from + len,
            lines: lines as u64,
            text: (len - 2 * lines) as u64,
        })
    }

    /// The last marks in `chunk` of a line being read, and of a title.
    fn marks(&mut self, chunk: &[u8]) {
        (self.osc133, self.reading, self.in_title) = self.marks_after(chunk);
    }

    /// What `osc133`, `reading` and `in_title` are after `chunk`.
    fn marks_after(&self, chunk: &[u8]) -> (bool, bool, bool) {
        let (mut osc133, mut reading, mut in_title) = (self.osc133, self.reading, self.in_title);
        let last = |pat: &[u8]| {
            memchr::memmem::rfind(chunk, pat).and_then(|i| Some((i, *chunk.get(i + pat.len())?)))
        };
        if let Some((_, m)) = last(b"\x1b]133;") {
            osc133 = true;
            reading = matches!(m, b'A' | b'B');
        } else if !osc133 && let Some((_, m)) = last(b"\x1b[?2004") {
            reading = m == b'h';
        }
        let opened = memchr::memmem::rfind(chunk, b"\x1bk");
        let closed = memchr::memmem::rfind(chunk, b"\x1b\\");
        match (opened, closed) {
            (Some(o), c) if c.is_none_or(|c| c < o) => in_title = true,
            (_, Some(_)) => in_title = false,
            _ => {}
        }
        (osc133, reading, in_title)
    }

    /// Take `chunk` in: where the stream stands after it.
    pub fn advance(&mut self, chunk: &[u8]) {
        if let Some(&last) = chunk.last() {
            self.ground = ends_in_ground(chunk, self.ground);
            self.line_start = last == b'\n';
            if memchr::memchr(0x1b, chunk).is_some() {
                self.marks(chunk);
            }
        }
    }
}

/// [`Sieve::cut`] for a run with colours: its lines as the tracker's bulk
/// path takes them (`styled_line_text`), searched as they show, up to the
/// line a pattern hits first. `region` starts at a line's start in ground,
/// `at` bytes into the chunk.
fn styled_cut(re: &regex::bytes::Regex, region: &[u8], at: usize) -> Option<Cut> {
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
    // The lines before the first one a pattern hits.
    let lines = match re.find(&text) {
        Some(m) => ends.partition_point(|&(_, t)| t <= m.start()),
        None => ends.len(),
    };
    let (len, shown) = ends[..lines].last().copied().unwrap_or((0, 0));
    if len < MIN_RUN {
        return None;
    }
    Some(Cut {
        from: at,
        to: at + len,
        lines: lines as u64,
        text: (shown - 2 * lines) as u64,
    })
}

/// One regex hitting what any of `key`'s hits, in the tracker's mode
/// (multi-line, `\r\n` line ends); None when there is none, or it cannot
/// be built (nothing is sieved then).
fn join(key: &[(String, bool)]) -> Option<regex::bytes::Regex> {
    if key.is_empty() {
        return None;
    }
    let source = key
        .iter()
        .map(|(p, case)| {
            if *case {
                format!("(?:{p})")
            } else {
                format!("(?i:{p})")
            }
        })
        .collect::<Vec<_>>()
        .join("|");
    regex::bytes::RegexBuilder::new(&source)
        .multi_line(true)
        .crlf(true)
        .size_limit(crate::matcher::SIZE_LIMIT)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wants(p: &str, keep: usize) -> Wants {
        Wants {
            pattern: p.to_owned(),
            match_case: false,
            keep,
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
        // A hit in the first lines: nothing worth cutting.
        s.set_wants([wants("^3$", 0)].iter());
        assert_eq!(s.cut(&chunk), None);
        // Case as each wait asked.
        s.set_wants(
            [Wants {
                pattern: "x".into(),
                match_case: true,
                keep: 0,
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
