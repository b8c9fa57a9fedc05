//! The common case of a flood, taken in bulk: whole lines of printable
//! ASCII, each ended by the terminal's `\r\n`, written by a program while
//! no one reads the terminal, starting at the beginning of a line; colours
//! (SGR) and erasing what is right of the cursor (which, writing at a
//! line's end, erases nothing) may come between. What the parser and the
//! cell model would do with them reduces to: each line, as written, is a
//! candidate (a line of blanks none; an empty line only in the final
//! view), and the last few are the transcript. That is done here from the
//! bytes, with no cell and no parser call; everything else (another escape
//! sequence or control character, UTF-8, a line that does not end in the
//! chunk) goes through the parser as before.
//!
//! The parser must be in its ground state for the bytes to mean what they
//! look like. It leaves ground only on ESC, and is back once the sequence
//! that ESC starts is complete (or CAN/SUB cancels it); `plain::Ground`
//! reads that from the bytes it was fed, and says no when it cannot be
//! sure, so a doubtful case costs speed, never a wrong line.

use super::*;
use crate::plain::{bare_lines, printable_prefix, start_of_last_lines, styled_line_text};

/// Bytes of plain lines a tracker takes in before it leaves out the lines
/// a wait cannot use (see [`LineTracker::set_needed`]).
const NEEDED_AFTER: u64 = 64 * 1024;

/// The lines a wait wants (see [`LineTracker::set_needed`]).
pub(super) struct Wanted {
    /// Only lines this pattern can hit.
    needed: Option<std::sync::Arc<crate::matcher::Needed>>,
    /// The last lines of every chunk are emitted all the same.
    keep_last: usize,
    /// Bytes taken in bulk so far, and how many before `needed` is used.
    pub(super) taken: u64,
    pub(super) after: u64,
}

impl Default for Wanted {
    fn default() -> Self {
        Self {
            needed: None,
            keep_last: 0,
            taken: 0,
            after: NEEDED_AFTER,
        }
    }
}

/// What a wait tells the hub of the lines it can use (see `hub::sieve`):
/// those `needed` hits, and the last lines of each chunk its tracker keeps
/// (`keep_last`, and never fewer than the transcript's); and, with the
/// width of its tracker's screen, that it takes the runs of a screen
/// redrawn in place left out (see [`LineTracker::feed_sieved_chunk`]).
pub fn sieve_wants(
    needed: &crate::matcher::Needed,
    keep_last: usize,
    width: Option<usize>,
) -> crate::pane::skip::Wants {
    crate::pane::skip::Wants {
        pattern: needed.source().to_owned(),
        match_case: needed.match_case(),
        keep: keep_last.max(TRANSCRIPT_LINES),
        width,
    }
}

impl LineTracker {
    /// Once a flood is under way (`NEEDED_AFTER` bytes taken in bulk, so
    /// that a wait for the next line never pays for compiling `needed`),
    /// lines taken in bulk that `needed` cannot hit need not be made: they
    /// are counted as taken in (what was written, the transcript) and not
    /// emitted. `needed` is searched over the bulk's bytes with `^` and `$`
    /// at each `\r\n` (multi-line, CRLF mode); a line it does not touch
    /// and that holds no escape sequence is skipped. A text wait asks for
    /// this with its patterns: under a flood, thousands of lines it could
    /// never match are not copied, matched or handed back. Lines through
    /// the parser are all emitted, as before, and so are the last
    /// `keep_last` lines of each chunk: the last lines of all stay in the
    /// batches (a wait's tail of what it saw).
    pub fn set_needed(
        &mut self,
        needed: Option<std::sync::Arc<crate::matcher::Needed>>,
        keep_last: usize,
    ) {
        self.wanted.needed = needed;
        self.wanted.keep_last = keep_last;
    }

    /// The run of a chunk the hub sieved (see `hub::sieve`, and
    /// [`LineTracker::feed_sieved_chunk`]) after its `head`: `lines`
    /// plain lines holding `text` bytes of text that no pattern of this
    /// wait's `set_needed` hits, left out, then `tail` (the chunk's last
    /// lines, at least `TRANSCRIPT_LINES` of them). Taken in as the whole
    /// chunk would have been: the lines left out are counted as the bulk
    /// path counts the lines it skips. False when the tracker did not
    /// stand where that path would have taken them (someone read the
    /// terminal, the line had begun, a sequence was open): they are
    /// counted all the same, none of them could be wanted, and the caller
    /// asks for whole chunks from then on.
    pub(super) fn skip_lines(&mut self, lines: u64, text: u64) -> bool {
        let exact = self.ground.is() && self.state.bulk_ready() && !self.state.final_only;
        let st = &mut self.state;
        st.saw_output |= text > 0;
        st.written += text;
        st.synced |= lines > 0;
        if st.linear {
            // Their text is pushed out by the tail's lines.
            for _ in 0..lines.min(TRANSCRIPT_LINES as u64) {
                let mut line = if st.transcript.len() == TRANSCRIPT_LINES {
                    st.transcript.pop_front().unwrap_or_default()
                } else {
                    String::new()
                };
                line.clear();
                st.transcript.push_back(line);
            }
            st.recorded = st.recorded.saturating_add(lines as usize);
        }
        self.wanted.taken += text + 2 * lines;
        exact
    }

    /// Bytes a program wrote while no one reads: whole plain lines in bulk,
    /// the rest line by line through the parser.
    pub(super) fn feed_output(&mut self, data: &[u8]) {
        let mut i = 0;
        while i < data.len() {
            if self.bulk_enabled {
                let n = self.bulk(&data[i..]);
                // (Whole lines: the parser stands at a line's start.)
                self.state.synced |= n > 0;
                i += n;
            }
            if i == data.len() {
                break;
            }
            let end = memchr::memchr(b'\n', &data[i..]).map_or(data.len(), |p| i + p + 1);
            self.advance(&data[i..end]);
            i = end;
        }
    }

    /// Take in what can be taken in bulk at the start of `data`; returns
    /// how many bytes that was.
    pub(super) fn bulk(&mut self, data: &[u8]) -> usize {
        if !self.ground.is() || !self.state.bulk_ready() {
            return 0;
        }
        let st = &mut self.state;
        let mut at = 0;
        // The last lines, for the transcript.
        let mut last_lines: VecDeque<Last> = VecDeque::new();
        // Where the needed pattern hits (see `set_needed`), searched block
        // by block of whole lines as the lines come: a bulk may stop at the
        // next line, so the first block is small.
        let w = &self.wanted;
        let needed = match &w.needed {
            Some(n) if !st.final_only && w.taken >= w.after => n.regex(),
            _ => None,
        };
        // Where the last lines begin: found when the first line could be
        // left out (a bulk of lines with escape sequences never needs it).
        let mut keep_from = None;
        let mut hits: Vec<(usize, usize)> = Vec::new();
        let mut next_hit = 0;
        let mut searched_to = 0;
        let mut block = NEEDED_BLOCK_MIN;
        while at < data.len() {
            // A run of bare lines in a searched block that no hit touches
            // (a flood of short lines, most of all), taken in at once as
            // each would be below.
            if needed.is_some() && at < searched_to {
                let keep = *keep_from.get_or_insert_with(|| start_of_last_lines(data, w.keep_last));
                while hits.get(next_hit).is_some_and(|&(_, end)| end < at) {
                    next_hit += 1;
                }
                let limit = hits
                    .get(next_hit)
                    .map_or(searched_to, |&(start, _)| start.min(searched_to))
                    .min(keep);
                let run = data
                    .get(at..limit)
                    .and_then(|r| memchr::memrchr(b'\n', r))
                    .map_or(&[][..], |end| &data[at..=at + end]);
                let (len, lines) = bare_lines(run);
                if lines > 0 {
                    let text = len - 2 * lines;
                    if text > 0 {
                        st.saw_output = true;
                    }
                    st.written += text as u64;
                    if st.linear {
                        let mut from =
                            at + start_of_last_lines(&data[at..at + len], TRANSCRIPT_LINES);
                        while let Some(lf) = memchr::memchr(b'\n', &data[from..at + len]) {
                            push_last(&mut last_lines, Last::Bytes(from, from + lf - 1));
                            from += lf + 1;
                        }
                    }
                    at += len;
                    continue;
                }
            }
            let rest = &data[at..];
            let Some(lf) = memchr::memchr(b'\n', rest) else {
                break;
            };
            // The line must end in "\r\n" and fit in a line's cells.
            if lf == 0 || rest[lf - 1] != b'\r' || lf > MAX_CELLS {
                break;
            }
            if let Some(re) = needed
                && let Some(from) = bare_line(&rest[..lf - 1])
                && at < *keep_from.get_or_insert_with(|| start_of_last_lines(data, w.keep_last))
            {
                if at + lf >= searched_to {
                    // The next block: from this line to the last line end
                    // within `block` bytes (this line at least). Each line
                    // lies whole in one block, where `^` and `$` find its
                    // edges: a hit within it is found there.
                    let end = memchr::memrchr(b'\n', &rest[..block.min(rest.len())])
                        .filter(|&e| e >= lf)
                        .unwrap_or(lf);
                    let region = &rest[..=end];
                    hits.clear();
                    hits.extend(re.find_iter(region).map(|m| (at + m.start(), at + m.end())));
                    next_hit = 0;
                    searched_to = at + end + 1;
                    block = (block * 2).min(NEEDED_BLOCK_MAX);
                }
                // Hits that ended before this line are behind us.
                while hits.get(next_hit).is_some_and(|&(_, end)| end < at) {
                    next_hit += 1;
                }
                let touched = hits
                    .get(next_hit)
                    .is_some_and(|&(start, _)| start <= at + lf);
                if !touched {
                    // Taken in as below, without a string.
                    let len = lf - 1 - from;
                    if len > 0 {
                        st.saw_output = true;
                    }
                    st.written += len as u64;
                    if st.linear {
                        push_last(&mut last_lines, Last::Bytes(at + from, at + lf - 1));
                    }
                    at += lf + 1;
                    continue;
                }
            }
            let mut text = st.spare.pop().unwrap_or_default();
            if !plain_line(&rest[..lf - 1], &mut text) {
                text.clear();
                st.spare.push(text);
                break;
            }
            if !text.is_empty() {
                st.saw_output = true;
            }
            // As the cells count it: every character a program printed.
            st.written += text.len() as u64;
            if text.bytes().any(|b| b != b' ') {
                if st.linear {
                    push_last(&mut last_lines, Last::Out(st.out.len()));
                }
                st.out.push(Item::Line(Candidate {
                    text,
                    rendered: None,
                    prompt: false,
                }));
                at += lf + 1;
                continue;
            } else if text.is_empty() && st.final_only {
                st.out.push(Item::Line(Candidate {
                    text: String::new(),
                    rendered: None,
                    prompt: false,
                }));
            }
            if st.linear {
                push_last(&mut last_lines, Last::Blank);
            }
            at += lf + 1;
        }
        for i in last_lines {
            // In the oldest line's buffer once the transcript is full, as
            // `record_line` does.
            let mut line = if st.transcript.len() == TRANSCRIPT_LINES {
                st.transcript.pop_front().unwrap_or_default()
            } else {
                String::new()
            };
            line.clear();
            match i {
                Last::Out(i) => {
                    if let Item::Line(c) = &st.out[i] {
                        line.push_str(c.text.trim_end());
                    }
                }
                // Printable ASCII (see `bare_line`).
                Last::Bytes(from, to) => {
                    line.push_str(String::from_utf8_lossy(&data[from..to]).trim_end());
                }
                Last::Blank => {}
            }
            st.transcript.push_back(line);
            st.recorded = st.recorded.saturating_add(1);
        }
        self.wanted.taken += at as u64;
        at
    }
}

/// The first block of a bulk's bytes searched for the needed pattern, and
/// the most (each next block is twice the last).
const NEEDED_BLOCK_MIN: usize = 2048;
const NEEDED_BLOCK_MAX: usize = 64 * 1024;

// A bare run is never longer than a searched block, so each of its lines
// fits in a line's cells.
const _: () = assert!(NEEDED_BLOCK_MAX <= MAX_CELLS);

/// Keep `line` among the last [`TRANSCRIPT_LINES`] a bulk took in.
fn push_last(last_lines: &mut VecDeque<Last>, line: Last) {
    if last_lines.len() == TRANSCRIPT_LINES {
        last_lines.pop_front();
    }
    last_lines.push_back(line);
}

/// A line of the transcript a bulk took in.
enum Last {
    /// Emitted: its index in `out`.
    Out(usize),
    /// Skipped (see `set_needed`): its text's bytes in the bulk's data.
    Bytes(usize, usize),
    /// A line of blanks, drawn empty.
    Blank,
}

/// Where the text of a line (without its `\r\n`) starts, when it is
/// printable ASCII after carriage returns, and so holds no escape sequence:
/// the text [`plain_line`] would make of it is then those bytes.
fn bare_line(line: &[u8]) -> Option<usize> {
    let from = line.iter().position(|&b| b != b'\r').unwrap_or(line.len());
    (printable_prefix(&line[from..]) == line.len() - from).then_some(from)
}

/// The text of a line (without its `\r\n`) that can be taken in bulk:
/// printable ASCII, with colours (`ESC [ ... m`) and erasing right of the
/// cursor (`ESC [ K`) between, and at its start a carriage return or an
/// erase of the whole line (which, on an empty line, do nothing), written
/// into `text` (empty). False for anything else.
fn plain_line(line: &[u8], text: &mut String) -> bool {
    // Made as bytes, and made a string once (printable ASCII: always one).
    let mut bytes = std::mem::take(text).into_bytes();
    let plain = styled_line_text(line, &mut bytes);
    *text = String::from_utf8(bytes).unwrap_or_default();
    plain
}

impl State {
    /// At the start of a line, a program writing, nothing pending: what
    /// [`LineTracker::bulk`] takes in is then exactly what the cells would
    /// make of it.
    fn bulk_ready(&self) -> bool {
        self.input == InputState::Output
            && self.cells.is_empty()
            && self.cursor == 0
            && !self.pending_wrap
            && !self.dirty
            && !self.alt
            && !self.in_title
            && self.held.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_with_colours() {
        let plain = |l: &[u8]| {
            let mut t = String::new();
            plain_line(l, &mut t).then_some(t)
        };
        assert_eq!(plain(b"abc").as_deref(), Some("abc"));
        assert_eq!(
            plain(b"\x1b[1;32mok\x1b[0m done\x1b[K").as_deref(),
            Some("ok done")
        );
        assert_eq!(plain(b"\x1b[2K\r[ 50%]").as_deref(), Some("[ 50%]"));
        assert_eq!(plain(b"a\x1b[2Kb"), None);
        assert_eq!(plain(b"a\rb"), None);
        assert_eq!(plain(b"\x1b[?25l"), None);
        assert_eq!(plain(b"\x1b[31"), None);
        assert_eq!(plain("caf\u{e9}".as_bytes()), None);
    }

    /// `n` pieces picked at random (seeded), one after the other.
    fn mix(pieces: &[&[u8]], n: usize, seed: u64) -> Vec<u8> {
        let mut rng = crate::testutil::XorShift(seed);
        let mut data = Vec::new();
        for _ in 0..n {
            data.extend_from_slice(pieces[rng.below(pieces.len())]);
        }
        data
    }

    /// Feed `data` in chunks of 1 to `most` bytes cut at random (seeded),
    /// calling `after` after each, as a pane's stream comes.
    fn feed_in_cuts(
        t: &mut LineTracker,
        data: &[u8],
        seed: u64,
        most: usize,
        mut after: impl FnMut(&mut LineTracker),
    ) {
        let now = Instant::now();
        let mut rng = crate::testutil::XorShift(seed);
        let mut i = 0;
        while i < data.len() {
            let n = (1 + rng.below(most)).min(data.len() - i);
            t.feed(&data[i..i + n], now);
            after(t);
            i += n;
        }
    }

    /// The bulk path gives what the parser and cells give, line for line
    /// (and the count of characters written, which attention reads), on
    /// random mixes of plain lines and everything else, cut anywhere.
    #[test]
    fn bulk_and_cells_agree() {
        let pieces: &[&[u8]] = &[
            b"plain line\r\n",
            b"another one here\r\n",
            b"\r\n",
            b"   \r\n",
            b"trailing blank \r\n",
            b"\x1b[31mred\x1b[0m\r\n",
            b"no end",
            b"\rover",
            b"caf\xc3\xa9\r\n",
            b"\x1b]0;t\x07",
            b"\x1b[",
            b"2K",
            b"lf only\n",
            b"\t tab\r\n",
            b"\x1b[1;32mgreen\x1b[0m and plain\x1b[K\r\n",
            b"\x1b[2K\r[ 50%] bar\r\n",
            b"text \x1b[2K after\r\n",
            b"\x1b[?2004h",
            b"\x1b[?2004l",
            b"\x1b[5D",
        ];
        for seed in 0..60u64 {
            let data = mix(pieces, 200, 0x5eed ^ seed.wrapping_mul(0x9e37_79b9));
            for final_only in [false, true] {
                let run = |bulk: bool| {
                    let mut t = LineTracker::new(&TrackerStart::blank(7));
                    t.set_final_only(final_only);
                    t.bulk_enabled = bulk;
                    let mut items = Vec::new();
                    feed_in_cuts(&mut t, &data, seed + 1, 97, |t| {
                        let got = t.take_items(false);
                        // Strings the caller is done with hold later lines.
                        t.recycle(
                            got.iter()
                                .filter_map(|i| match i {
                                    Item::Line(c) => Some(c.clone()),
                                    Item::Mark(_) => None,
                                })
                                .collect(),
                        );
                        items.extend(got);
                    });
                    items.extend(t.take_items(true));
                    (items, t.screen_tail(), t.saw_output(), t.written())
                };
                assert_eq!(run(true), run(false), "seed {seed}, final {final_only}");
            }
        }
    }

    /// What a text wait's tracker gives for `data` fed in random cuts of
    /// up to `most` bytes, with `needed` from the start (keeping the last
    /// `keep` lines of each chunk): its lines, transcript, output flag and
    /// count written.
    fn with_needed(
        data: &[u8],
        needed: Option<std::sync::Arc<crate::matcher::Needed>>,
        keep: usize,
        seed: u64,
        most: usize,
    ) -> (Vec<Candidate>, Option<Vec<String>>, bool, u64) {
        let mut t = LineTracker::new(&TrackerStart::blank(80));
        t.set_needed(needed, keep);
        t.wanted.after = 0;
        let mut lines = Vec::new();
        feed_in_cuts(&mut t, data, seed, most, |t| lines.extend(t.take(false)));
        lines.extend(t.take(true));
        (lines, t.screen_tail(), t.saw_output(), t.written())
    }

    /// A flood of short plain lines, as `seq` writes them, with a hit now
    /// and then and empty lines between: the runs skipped at once leave
    /// the transcript, the output flag and the count written as the full
    /// path does, and every hit is kept.
    #[test]
    fn runs_of_skipped_lines_keep_the_transcript() {
        let mut data = Vec::new();
        for i in 0..6000 {
            let line = match i {
                _ if i % 797 == 0 => format!("{i} needle"),
                _ if i % 13 == 0 => String::new(),
                _ => i.to_string(),
            };
            data.extend_from_slice(line.as_bytes());
            data.extend_from_slice(b"\r\n");
        }
        let needed = std::sync::Arc::new(crate::matcher::Needed::new("needle".to_owned(), true));
        for seed in 0..8u64 {
            let run = |needed| with_needed(&data, needed, 3, seed + 1, 20_000);
            let (all, tail, saw, written) = run(None);
            let (kept, kept_tail, kept_saw, kept_written) = run(Some(needed.clone()));
            assert!(tail.as_ref().is_some_and(|t| t.len() > 60), "seed {seed}");
            assert_eq!(
                (kept_tail, kept_saw, kept_written),
                (tail, saw, written),
                "seed {seed}"
            );
            let hits = |v: &[Candidate]| {
                v.iter()
                    .filter(|c| c.text.contains("needle"))
                    .map(|c| c.text.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(hits(&kept), hits(&all), "seed {seed}");
            assert_eq!(hits(&all).len(), 8);
            assert!(
                kept.len() * 5 < all.len(),
                "seed {seed}: {} kept of {}",
                kept.len(),
                all.len()
            );
        }
    }

    /// With a needed pattern, every line the pattern hits on its own is
    /// still emitted, in order, and the transcript, the output flag and
    /// the count of characters written are what they are without it. Lines
    /// it cannot hit may be left out (plain ones are).
    #[test]
    fn lines_a_needed_pattern_cannot_hit_are_left_out() {
        let pieces: &[&[u8]] = &[
            b"plain line\r\n",
            b"a NEEDLE in it\r\n",
            b"needle\r\n",
            b"x\r\n",
            b"a\r\n",
            b"b\r\n",
            b"\r\n",
            b"   \r\n",
            b"\rneedle again\r\n",
            b"\x1b[31mred needle\x1b[0m\r\n",
            b"\x1b[31mnee\x1b[0mdle split by colour\r\n",
            b"caf\xc3\xa9 needle\r\n",
            b"no end",
            b"lf only\n",
            b"foo bar\r\n",
            b"foobar\r\n",
            b"\x1b[?2004h",
        ];
        const KEEP: usize = 3;
        let patterns = [r"(?i)needle", r"^x$", r"\bfoo\b", r"a\s+b", r"^$", r"d$"];
        for (k, pattern) in patterns.iter().enumerate() {
            let per_line = regex::Regex::new(pattern).unwrap();
            let needed =
                std::sync::Arc::new(crate::matcher::Needed::new((*pattern).to_owned(), true));
            let mut left_out = 0;
            for seed in 0..40u64 {
                let data = mix(
                    pieces,
                    400,
                    0x0dd ^ seed.wrapping_mul(0x9e37_79b9) ^ k as u64,
                );
                let run = |needed| with_needed(&data, needed, KEEP, seed + 7, 3000);
                let (all, tail, saw, written) = run(None);
                let (kept, kept_tail, kept_saw, kept_written) = run(Some(needed.clone()));
                let hit = |c: &Candidate| per_line.is_match(&c.text);
                let want: Vec<&Candidate> = all.iter().filter(|c| hit(c)).collect();
                let got: Vec<&Candidate> = kept.iter().filter(|c| hit(c)).collect();
                assert_eq!(got, want, "{pattern} seed {seed}");
                // The last lines of all are kept.
                assert_eq!(
                    kept[kept.len().saturating_sub(KEEP)..],
                    all[all.len().saturating_sub(KEEP)..],
                    "{pattern} seed {seed}"
                );
                left_out += all.len() - kept.len();
                assert_eq!(
                    (kept_tail, kept_saw, kept_written),
                    (tail, saw, written),
                    "{pattern} seed {seed}"
                );
            }
            assert!(left_out > 0, "{pattern}: nothing left out");
        }
    }
}
