//! The other common flood: a screen redrawn in place, as a coding agent's
//! is while it works (home, then each row cleared and drawn again in
//! colour, a spinner, a counter), a progress display's, `top`'s on the
//! main screen. No run of it is a run of plain lines, so the hub's sieve
//! of lines cannot leave any out, and every wait on the pane parsed every
//! frame. Here the hub's side parses such a run once for all the waits
//! (see `hub::sieve`, which is handed [`frame_run`]) and each wait's
//! tracker, standing where the run begins, steps to where it ends
//! ([`LineTracker::feed_sieved_chunk`]).
//!
//! What makes that exact: a cursor move to another row leaves the
//! tracker on an empty line (it follows only the line under the cursor),
//! at a column the move says (home, or a row's start) or the line before
//! it said. From there, the bytes that follow decide every line it draws
//! and where it stands, provided they are only text, colours, erases and
//! cursor moves (no mode, mark, title or bell, which change more than the
//! line) and nobody reads the terminal. So the hub runs a tracker of its
//! own from the first such move, and where a later move leaves it on an
//! empty line, with no line drawn meanwhile that a wait's pattern hits, a
//! wait's tracker may jump there: the characters written and the cursor's
//! column are all that changed.

use super::*;
use crate::matcher::Joined;
use crate::pane::skip::{FrameRun, Framed};

/// The CSI sequence at the start of `b` (`ESC [`, parameters, a final
/// byte; no intermediates): its length and final. A private one (`ESC [
/// ?`) is taken only when the tracker does nothing with it (the cursor
/// shown or hidden, synchronized output: what a TUI writes with each
/// frame), and then its final is 0: neither a row move nor a mode the
/// tracker follows (the alternate screen, bracketed paste).
fn csi(b: &[u8]) -> Option<(usize, u8)> {
    if b.get(1) != Some(&b'[') {
        return None;
    }
    let private = b.get(2) == Some(&b'?');
    let from = if private { 3 } else { 2 };
    for (i, &c) in b.iter().enumerate().skip(from) {
        match c {
            b'0'..=b'9' | b';' | b':' => {}
            0x40..=0x7e if private => {
                let params = &b[from..i];
                let followed = params
                    .split(|&c| c == b';' || c == b':')
                    .any(|p| matches!(p, b"1049" | b"1047" | b"47" | b"2004"));
                return (!followed).then_some((i + 1, 0));
            }
            0x40..=0x7e => return Some((i + 1, c)),
            _ => return None,
        }
    }
    None
}

/// Where, from `p` (a row move, in ground), a tracker stands on an empty
/// line at a column the bytes say: after the row move itself when it sets
/// the column (home, `CSI row;col H`, next or previous line), or after
/// more row moves and erases (of an empty line: nothing) that end with a
/// carriage return or a move to a column (`CSI n G`), as a TUI erases its
/// last frame line by line going up (`CSI 2K CSI 1A` ..., `CSI G`).
fn settled(bytes: &[u8], mut p: usize) -> Option<usize> {
    loop {
        if bytes.get(p) == Some(&b'\r') {
            return Some(p + 1);
        }
        let (len, f) = csi(bytes.get(p..)?)?;
        p += len;
        match f {
            b'H' | b'f' | b'G' | b'`' | b'E' | b'F' => return Some(p),
            0 | b'K' => {}
            f if may_leave_row(f) => {}
            _ => return None,
        }
    }
}

/// A CSI final byte that may move the cursor to another row (so may
/// leave the tracker on an empty line): where a run may end.
fn may_leave_row(f: u8) -> bool {
    matches!(
        f,
        b'H' | b'f' | b'A' | b'B' | b'd' | b'e' | b'E' | b'F' | b'J' | b'L' | b'M' | b'S' | b'T'
    )
}

/// Where a screen redrawn in place may be left out of `bytes` (which start
/// in ground) for waits whose patterns `re` joins, on a screen `width`
/// wide: from the first row move after which the bytes say the column
/// (see `settled`) to the last later row move that leaves a tracker on an
/// empty line,
/// with nothing but text, colours, erases and cursor moves between and no
/// line drawn there that `re` hits (each line as a wait's tracker would
/// emit it, states before an overwrite included). None when there is no
/// such run.
pub fn frame_run(bytes: &[u8], width: usize, re: &Joined) -> Option<FrameRun> {
    let mut at = 0;
    let (start, head) = loop {
        let p = at + memchr::memchr(0x1b, &bytes[at..])?;
        // (Not an erase below the cursor: it leaves the line's start.)
        if let Some((_, f)) = csi(&bytes[p..])
            && may_leave_row(f)
            && f != b'J'
            && let Some(head) = settled(bytes, p)
        {
            break (p, head);
        }
        at = p + 1;
    };
    let mut t = LineTracker::new(&TrackerStart::blank(width));
    t.state.lose_flow();
    let now = Instant::now();
    t.feed(&bytes[start..head], now);
    if !t.state.at_empty_line() {
        return None;
    }
    let from_cursor = t.state.cursor;
    let written = t.state.written;
    let mut run = None;
    let mut text = Vec::new();
    let mut lines = 0;
    let (mut seg, mut i) = (head, head);
    while i < bytes.len() {
        let (len, boundary) = match bytes[i] {
            0x1b => match csi(&bytes[i..]) {
                Some((len, f)) => (len, may_leave_row(f)),
                None => break,
            },
            b'\r' | b'\n' | b'\t' | 0x08 | 0x20..=0x7e | 0x80..=0xff => (1, false),
            _ => break,
        };
        i += len;
        if !boundary {
            continue;
        }
        let piece = &bytes[seg..i];
        // Whole characters only: the parser is to stand in ground after.
        if std::str::from_utf8(piece).is_err() {
            break;
        }
        t.feed(piece, now);
        lines += memchr::memchr_iter(b'\n', piece).count() as u64;
        text.clear();
        for item in t.take_items(false) {
            match item {
                Item::Line(c) => {
                    text.extend_from_slice(c.text.as_bytes());
                    text.extend_from_slice(b"\r\n");
                }
                Item::Mark(_) => return run,
            }
        }
        if re.is_match(&text) {
            break;
        }
        seg = i;
        if t.ground.is() && t.state.at_empty_line() {
            run = Some(FrameRun {
                start,
                head,
                to: i,
                lines,
                text: t.state.written - written,
                from_cursor,
                cursor: t.state.cursor,
            });
        }
    }
    run
}

impl State {
    /// On an empty line, nothing pending, a program writing, no one
    /// reading: where a run of a redrawn screen may begin and end.
    fn at_empty_line(&self) -> bool {
        self.input == InputState::Output
            && self.cells.is_empty()
            && !self.pending_wrap
            && !self.dirty
            && !self.alt
            && !self.in_title
            && self.held.is_none()
            && !self.linear
    }
}

impl LineTracker {
    /// A chunk as the hub sent it (see `hub::sieve`): whole but for a run
    /// of plain lines, or of a screen redrawn in place, left out. False
    /// when the tracker did not stand where the run was taken to begin;
    /// the caller then asks for whole chunks from then on (see
    /// `skip_lines` and `skip_frames`).
    pub fn feed_sieved_chunk(
        &mut self,
        s: &crate::pane::skip::Sieved,
        at: Instant,
        hint: Hint,
    ) -> bool {
        self.chunk_begins(at, hint);
        self.chunk_body(&s.head);
        let exact = match &s.frame {
            None => self.skip_lines(s.lines, s.text),
            Some(f) => self.skip_frames(f, s.text),
        };
        self.chunk_body(&s.tail);
        self.chunk_ends(if s.tail.is_empty() { &s.head } else { &s.tail });
        exact
    }

    /// The run of a redrawn screen left out after a chunk's head (`f`,
    /// `text` characters written in it). It is taken in as a
    /// step from an empty line at `f.from_cursor` to one at `f.cursor`,
    /// exact when the tracker stood on that empty line after `head` (on a
    /// screen as wide, with nobody reading, in ground). Otherwise its lines
    /// are left out all the same (none of them could be wanted) and the
    /// tracker stands on an empty line where it ended, as it would have.
    fn skip_frames(&mut self, f: &Framed, text: u64) -> bool {
        let st = &mut self.state;
        let exact = self.ground.is()
            && st.at_empty_line()
            && !st.final_only
            && st.width == f.width as usize
            && st.cursor == f.from_cursor as usize;
        if !exact {
            st.emit();
        }
        st.lose_flow();
        st.cells.clear();
        st.cursor = (f.cursor as usize).min(st.width - 1);
        st.pending_wrap = false;
        st.dirty = false;
        st.saw_output |= text > 0;
        st.written += text;
        st.synced = true;
        self.wanted.taken += f.bytes;
        exact
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `frames` frames of `rows` rows drawn from home, as an agent's
    /// screen is while it works (the bench's redraw flood).
    fn redraw(frames: usize, rows: usize, word: &str) -> Vec<u8> {
        let spin = ['⠋', '⠙', '⠹', '⠸', '⠼'];
        let mut out = Vec::new();
        for f in 0..frames {
            out.extend_from_slice(b"\x1b[H");
            for r in 0..rows {
                out.extend_from_slice(
                    format!(
                        "\x1b[2K\x1b[38;5;{}m{}\x1b[0m {word} step {f} row {r} \x1b[1mbold\x1b[22m\r\n",
                        16 + (f + r) % 200,
                        spin[(f + r) % 5]
                    )
                    .as_bytes(),
                );
            }
        }
        out
    }

    fn re(p: &str) -> Joined {
        Joined::new(&[(p.to_owned(), true)]).unwrap()
    }

    /// What a tracker emits for `data`, fed whole or with the run
    /// `frame_run` finds (for `pattern`) left out, and where it stands.
    fn both_ways(
        pre: &[u8],
        data: &[u8],
        pattern: &str,
        width: usize,
    ) -> [(Vec<String>, u64, usize); 2] {
        let run = |framed: bool| {
            let mut t = LineTracker::new(&TrackerStart::blank(width));
            let now = Instant::now();
            t.feed(pre, now);
            let mut lines: Vec<String> = t.take(true).into_iter().map(|c| c.text).collect();
            match frame_run(data, width, &re(pattern)).filter(|_| framed) {
                Some(r) => {
                    let s = sieved(data, &r, width);
                    assert!(t.feed_sieved_chunk(&s, now, Hint::default()));
                }
                None => t.feed(data, now),
            }
            lines.extend(t.take(true).into_iter().map(|c| c.text));
            // Only the lines a pattern could want, and the last ones.
            (lines, t.written(), t.state.cursor)
        };
        [run(false), run(true)]
    }

    /// What the hub sends for `data` with the run `r` left out.
    fn sieved(data: &[u8], r: &FrameRun, width: usize) -> crate::pane::skip::Sieved {
        crate::pane::skip::Sieved {
            head: data[..r.head].to_vec(),
            lines: r.lines,
            text: r.text,
            tail: data[r.to..].to_vec(),
            frame: Some(Framed {
                bytes: (r.to - r.head) as u64,
                from_cursor: r.from_cursor as u32,
                cursor: r.cursor as u32,
                width: width as u32,
            }),
        }
    }

    fn hits(lines: &[String], pattern: &str) -> Vec<String> {
        lines
            .iter()
            .filter(|s| re(pattern).is_match(s.as_bytes()))
            .cloned()
            .collect()
    }

    /// [`both_ways`] on a screen 80 wide: the same lines hit `pattern`,
    /// the same characters written, the cursor in the same place.
    fn same_hits(pre: &[u8], data: &[u8], pattern: &str) -> [(Vec<String>, u64, usize); 2] {
        let [whole, framed] = both_ways(pre, data, pattern, 80);
        assert_eq!(
            hits(&whole.0, pattern),
            hits(&framed.0, pattern),
            "{pre:?} {pattern}"
        );
        assert_eq!(
            (whole.1, whole.2),
            (framed.1, framed.2),
            "{pre:?} {pattern}"
        );
        [whole, framed]
    }

    #[test]
    fn a_redrawn_screen_is_left_out_up_to_the_frame_a_pattern_hits() {
        let mut data = redraw(30, 20, "working");
        let at = data.len();
        data.extend(redraw(1, 20, "DONE"));
        data.extend(redraw(5, 20, "working"));
        let r = frame_run(&data, 80, &re("DONE")).expect("a run");
        assert_eq!(&data[r.start..r.head], b"\x1b[H");
        assert_eq!(r.to, at + 3, "up to the frame that draws DONE");
        assert_eq!(r.lines, 30 * 20);
        assert_eq!((r.from_cursor, r.cursor), (0, 0));
        // A pattern nothing hits: to the last frame's start.
        let r = frame_run(&data, 80, &re("never")).expect("a run");
        assert_eq!(&data[r.to - 3..r.to], b"\x1b[H");
        let last = memchr::memmem::rfind(&data, b"\x1b[H").unwrap();
        assert_eq!(r.to, last + 3);
    }

    #[test]
    fn a_tracker_that_jumps_a_run_stands_where_the_whole_run_puts_it() {
        let mut data = redraw(12, 10, "working");
        data.extend(redraw(1, 10, "DONE"));
        data.extend_from_slice(b"\x1b[2J\x1b[Hall done\r\n$ ");
        for (pre, pattern) in [
            (&b"$ run\r\n"[..], "DONE"),
            (b"half a line", "DONE"),
            (b"", "never"),
            (b"\x1b[31mred", "done"),
        ] {
            let [whole, framed] = same_hits(pre, &data, pattern);
            assert!(!hits(&whole.0, pattern).is_empty() || pattern == "never");
            let last = |l: &Vec<String>| l[l.len() - 2..].to_vec();
            assert_eq!(last(&whole.0), last(&framed.0), "{pre:?} {pattern}");
        }
    }

    /// Frames as an Ink TUI (Claude Code, Gemini CLI, Qwen Code) draws
    /// them below its output: the last frame erased line by line going up,
    /// the new one written, inside synchronized output, cursor hidden.
    fn ink(frames: usize, rows: usize, word: &str) -> Vec<u8> {
        let mut out = b"$ agent\r\n".to_vec();
        for f in 0..frames {
            out.extend_from_slice(b"\x1b[?2026h\x1b[?25l");
            if f > 0 {
                for _ in 1..rows {
                    out.extend_from_slice(b"\x1b[2K\x1b[1A");
                }
                out.extend_from_slice(b"\x1b[2K\x1b[G");
            }
            let body: Vec<String> = (0..rows)
                .map(|r| format!("\x1b[36m\u{280b}\x1b[39m {word} {f}.{r}"))
                .collect();
            out.extend_from_slice(body.join("\r\n").as_bytes());
            out.extend_from_slice(b"\x1b[?2026l");
        }
        out
    }

    #[test]
    fn an_ink_screen_erased_line_by_line_is_left_out_too() {
        let mut data = ink(40, 8, "Thinking");
        data.extend_from_slice(b"\x1b[2K\x1b[1A\x1b[2K\x1b[GDo you want to proceed?\r\n$ ");
        let r = frame_run(&data, 80, &re("proceed")).expect("a run");
        assert!(r.to - r.head > data.len() / 2, "{r:?}");
        for (pre, pattern) in [
            (&b""[..], "proceed"),
            (b"$ ", "Thinking 39"),
            (b"x", "never"),
        ] {
            same_hits(pre, &data, pattern);
        }
        // The alternate screen or bracketed paste ends a run.
        let mut d = ink(3, 8, "Thinking");
        d.extend_from_slice(b"\x1b[?1049h");
        d.extend(ink(20, 8, "Thinking"));
        let r = frame_run(&d, 80, &re("never")).expect("a run");
        assert!(r.to <= ink(3, 8, "Thinking").len());
    }

    #[test]
    fn no_run_through_modes_titles_bells_or_a_line_being_read() {
        let mut data = redraw(20, 10, "working");
        for stop in [&b"\x1b[?2004h"[..], b"\x1b]0;title\x07", b"\x07", b"\x1b7"] {
            let mut d = redraw(2, 10, "working");
            d.extend_from_slice(stop);
            d.extend(redraw(20, 10, "working"));
            let r = frame_run(&d, 80, &re("never")).expect("a run before it");
            assert!(r.to <= redraw(2, 10, "working").len(), "{stop:?}");
        }
        // Not on the alternate screen, which the tracker does not follow.
        data.splice(0..0, b"\x1b[?1049h".iter().copied());
        let r = frame_run(&data, 80, &re("never"));
        assert!(r.is_none_or(|r| r.start > 0));
    }

    #[test]
    fn a_tracker_not_where_the_run_begins_says_so() {
        let data = redraw(12, 10, "working");
        let r = frame_run(&data, 80, &re("never")).unwrap();
        let s = sieved(&data, &r, 80);
        let now = Instant::now();
        // A screen of another width, and the alternate screen.
        let mut t = LineTracker::new(&TrackerStart::blank(100));
        assert!(!t.feed_sieved_chunk(&s, now, Hint::default()));
        let mut t = LineTracker::new(&TrackerStart::blank(80));
        t.feed(b"\x1b[?1049h", now);
        assert!(!t.feed_sieved_chunk(&s, now, Hint::default()));
        let mut t = LineTracker::new(&TrackerStart::blank(80));
        assert!(t.feed_sieved_chunk(&s, now, Hint::default()));
    }

    /// The hub's sieve (`hub::sieve`) in front of a tracker changes no
    /// line a pattern hits, nor the last lines, the screen's tail, what
    /// was written or whether output was seen: a wait's answer is what
    /// the whole stream gives.
    #[test]
    fn a_sieved_stream_gives_what_the_whole_one_does() {
        let plain: &[&[u8]] = &[
            b"plain line\r\n",
            b"x\r\n",
            b"\r\n",
            b"   \r\n",
            b"foo bar\r\n",
            // Coloured as they show (the sieve reads them as text).
            b"\x1b[32mok\x1b[0m done\x1b[K\r\n",
            b"\x1b[1mx\x1b[m\r\n",
            b"\x1b[2K\r[ 50%] fo\x1b[1mo\x1b[0m bar\r\n",
        ];
        let other: &[&[u8]] = &[
            b"a NEEDLE in it\r\n",
            b"needle\r\n",
            b"\rneedle again\r\n",
            b"\x1b[31mred needle\x1b[0m\r\n",
            b"caf\xc3\xa9 needle\r\n",
            b"no end",
            b"lf only\n",
            b"\x1b]0;a title\x07",
            b"\x1b]0;title, open ",
            b"\x1b[?2004h",
            b"\x1b[A\x1b[2K",
            b"\x1b]133;A\x07$ \x1b]133;B\x07",
            b"\x1b]133;C\x07",
            b"\x1b[?2004l\r",
        ];
        // A screen redrawn in place (see `frames`).
        let frames: &[&[u8]] = &[
            b"\x1b[H",
            b"\x1b[7;1H",
            b"\x1b[2K\x1b[33m\xe2\xa0\x8b\x1b[0m working on it\r\n",
            b"\x1b[2K  step 12 of the plan, a longer row that wraps past the edge of the screen\r\n",
            b"\x1b[2Kfoo done\x1b[K\r\n",
            b"\x1b[2Kwide \xe4\xb8\xad\xe6\x96\x87 row\r\n",
            b"\x1b[3A\x1b[2K",
            b"\r\x1b[10Cx\x1b[J",
            b"\x1b[2J",
            b"a plain line in a frame\r\n",
            // An Ink TUI's: erased going up, synchronized, cursor hidden.
            b"\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[G",
            b"\x1b[?2026h\x1b[?25l",
            b"\x1b[36m\xe2\xa0\x8b\x1b[39m Thinking\x1b[?2026l",
        ];
        const KEEP: usize = 3;
        // (Patterns that hit plain lines often leave no run long enough.)
        let patterns = [
            (r"(?i)needle", true),
            (r"^x$", false),
            (r"\bfoo\b", false),
            (r"^$", false),
            (r"d$", true),
        ];
        for (k, (pattern, cuts)) in patterns.iter().enumerate() {
            let per_line = regex::Regex::new(pattern).unwrap();
            let needed =
                std::sync::Arc::new(crate::matcher::Needed::new((*pattern).to_owned(), true));
            let (mut cut_lines, mut frames_cut) = (0, 0);
            for seed in 0..30u64 {
                let mut rng =
                    crate::testutil::XorShift(0x51e7e ^ seed.wrapping_mul(0x9e37_79b9) ^ k as u64);
                let mut data = Vec::new();
                for _ in 0..12 {
                    // Runs of plain lines, and of a screen redrawn.
                    let main = if rng.below(3) == 0 { frames } else { plain };
                    for _ in 0..500 {
                        let pick = if rng.below(300) == 0 { other } else { main };
                        data.extend_from_slice(pick[rng.below(pick.len())]);
                    }
                }
                // The whole stream, in the hub's chunks.
                let whole = |sieve: bool| {
                    let mut t = LineTracker::new(&TrackerStart::blank(80));
                    t.set_needed(Some(needed.clone()), KEEP);
                    t.wanted.after = 0;
                    let mut hub = crate::hub::Sieve::new(Some(super::super::frame_run));
                    let wants = sieve_wants(&needed, KEEP, Some(80));
                    hub.set_wants([&wants, &wants].into_iter());
                    let mut rng = crate::testutil::XorShift(seed + 11);
                    let (mut lines, mut i, mut cut, mut framed) = (Vec::new(), 0, 0, 0);
                    let now = Instant::now();
                    while i < data.len() {
                        let n = (1 + rng.below(20_000)).min(data.len() - i);
                        let chunk = &data[i..i + n];
                        // As the hub does: each run left out, then the rest.
                        let mut at = 0;
                        while let Some(c) = hub.cut(&chunk[at..]).filter(|_| sieve) {
                            let f = c.frame(&chunk[at..at + c.to]);
                            hub.advance(&chunk[at..at + c.to]);
                            at += c.to;
                            let exact = t.feed_sieved_chunk(&f, now, Hint::default());
                            framed += u64::from(f.frame.is_some());
                            assert!(
                                exact,
                                "{pattern} seed {seed}: the tracker was not where the hub thought"
                            );
                            cut += f.lines;
                        }
                        if at < chunk.len() {
                            t.feed(&chunk[at..], now);
                        }
                        hub.advance(&chunk[at..]);
                        lines.extend(t.take(false));
                        i += n;
                    }
                    lines.extend(t.take(true));
                    (
                        lines,
                        t.screen_tail(),
                        t.saw_output(),
                        t.written(),
                        cut,
                        framed,
                    )
                };
                let (want, want_tail, want_saw, want_written, _, _) = whole(false);
                let (got, got_tail, got_saw, got_written, cut, framed) = whole(true);
                frames_cut += framed;
                let hit = |c: &&Candidate| per_line.is_match(&c.text);
                assert_eq!(
                    got.iter().filter(hit).collect::<Vec<_>>(),
                    want.iter().filter(hit).collect::<Vec<_>>(),
                    "{pattern} seed {seed}"
                );
                assert_eq!(
                    got[got.len().saturating_sub(KEEP)..],
                    want[want.len().saturating_sub(KEEP)..],
                    "{pattern} seed {seed}"
                );
                assert_eq!(
                    (got_tail, got_saw, got_written),
                    (want_tail, want_saw, want_written),
                    "{pattern} seed {seed}"
                );
                cut_lines += cut;
            }
            assert!(
                !cuts || cut_lines > 10_000,
                "{pattern}: the hub left out only {cut_lines} lines"
            );
            assert!(
                !cuts || frames_cut > 10,
                "{pattern}: the hub left out only {frames_cut} runs of frames"
            );
        }
    }
}
