//! Plain bytes of a terminal stream, read without a parser: runs of
//! printable ASCII, whole lines ended by the terminal's `\r\n`, and
//! whether a VT parser fed some bytes stands in its ground state after
//! them. Shared by the line tracker's bulk path (`pane::vt`) and the
//! hub's sieve (`hub::sieve`), which must agree on what a plain line is.

/// Where the last `n` whole lines of `data` begin (0 when it holds fewer).
pub fn start_of_last_lines(data: &[u8], n: usize) -> usize {
    let mut end = data.len();
    for _ in 0..=n {
        match memchr::memrchr(b'\n', &data[..end]) {
            Some(p) => end = p,
            None => return 0,
        }
    }
    end + 1
}

/// `data` is whole plain lines: printable ASCII, each line ended by
/// `\r\n` (what the hub's sieve may leave out; see [`bare_lines`]).
pub fn whole_lines(data: &[u8]) -> bool {
    !data.is_empty() && bare_lines(data).0 == data.len()
}

/// The whole lines of printable ASCII, each ended by `\r\n`, that `bytes`
/// starts with: the bytes they take and how many they are.
pub fn bare_lines(bytes: &[u8]) -> (usize, usize) {
    bare_lines_after(bytes, bare_blocks(bytes))
}

/// [`bare_lines`] a line at a time, from `(at, lines)`, the bytes and
/// lines before a line's start.
fn bare_lines_after(bytes: &[u8], (mut at, mut lines): (usize, usize)) -> (usize, usize) {
    loop {
        let end = at + printable_prefix(&bytes[at..]);
        if bytes.get(end..end + 2) != Some(b"\r\n") {
            return (at, lines);
        }
        at = end + 2;
        lines += 1;
    }
}

/// [`bare_lines`] sixteen bytes at a time, up to the block where they
/// may stop: the lines before it (where they end, how many). A flood's
/// lines are short (`seq`'s are seven bytes), and a line at a time spent
/// more on each line's end than on its text: 12 ms for `seq`'s 17 MB,
/// against 3 ms here.
#[cfg(target_arch = "x86_64")]
fn bare_blocks(bytes: &[u8]) -> (usize, usize) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let (mut at, mut lines) = (0, 0);
    // The last block ended in `\r`.
    let mut cr_before = 0u32;
    // SAFETY: SSE2 is part of x86_64, and each load reads the 16 bytes of
    // its `block`.
    unsafe {
        let space = _mm_set1_epi8(0x20);
        let del = _mm_set1_epi8(0x7f);
        let (cr_byte, lf_byte) = (_mm_set1_epi8(b'\r' as i8), _mm_set1_epi8(b'\n' as i8));
        for (i, block) in bytes.chunks_exact(16).enumerate() {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            // Below a space (0x80 and up count as negative) or DEL.
            let other = _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, del));
            let other = _mm_movemask_epi8(other) as u32;
            let cr = _mm_movemask_epi8(_mm_cmpeq_epi8(v, cr_byte)) as u32;
            let lf = _mm_movemask_epi8(_mm_cmpeq_epi8(v, lf_byte)) as u32;
            // Nothing but printable bytes, `\r` and `\n`, each `\r`
            // followed by a `\n` and each `\n` after a `\r`.
            if other & !(cr | lf) != 0 || lf != ((cr << 1) | cr_before) & 0xffff {
                break;
            }
            cr_before = cr >> 15;
            if lf != 0 {
                at = i * 16 + (32 - lf.leading_zeros() as usize);
                lines += lf.count_ones() as usize;
            }
        }
    }
    (at, lines)
}

/// Elsewhere, a line at a time from the start.
#[cfg(not(target_arch = "x86_64"))]
fn bare_blocks(_: &[u8]) -> (usize, usize) {
    (0, 0)
}

/// The text of a line (without its `\r\n`) as a terminal shows it, when
/// it is printable ASCII with colours (`ESC [ ... m`) and erasing right of
/// the cursor (`ESC [ K`) between, and at its start carriage returns or an
/// erase of the whole line (which, on an empty line, do nothing): appended
/// to `text`. False for anything else (`text` then holds a part).
pub fn styled_line_text(line: &[u8], text: &mut Vec<u8>) -> bool {
    text.reserve(line.len());
    let base = text.len();
    let mut j = 0;
    while j < line.len() {
        let b = line[j];
        if (0x20..0x7f).contains(&b) {
            // A run of printable bytes at once.
            let run = printable_prefix(&line[j..]);
            text.extend_from_slice(&line[j..j + run]);
            j += run;
            continue;
        }
        let empty = text.len() == base;
        if b == b'\r' && empty {
            j += 1;
            continue;
        }
        if b != 0x1b || line.get(j + 1) != Some(&b'[') {
            return false;
        }
        let Some(params_end) = line[j + 2..]
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b';' | b':'))
            .map(|k| j + 2 + k)
        else {
            return false;
        };
        let params = &line[j + 2..params_end];
        match line[params_end] {
            b'm' => {}
            b'K' if params.is_empty() || params == b"0" => {}
            b'K' if empty && (params == b"1" || params == b"2") => {}
            _ => return false,
        }
        j = params_end + 1;
    }
    true
}

/// How many bytes at the start of `bytes` are printable ASCII (0x20 to
/// 0x7e), looked at eight at a time: per byte, its high bit, and the high
/// bits of its low seven bits plus 0x60 (set from 0x20 on) and plus 0x01
/// (set from 0x7f on), which never carry into the next byte.
pub fn printable_prefix(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(word);
        let w = u64::from_le_bytes(b);
        let low = w & !HIGH;
        let bad = (w | !(low + 0x60 * ONES) | (low + ONES)) & HIGH;
        if bad != 0 {
            return at + (bad.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = words.remainder();
    at + rest
        .iter()
        .position(|b| !(0x20..0x7f).contains(b))
        .unwrap_or(rest.len())
}

/// Does the parser stand in its ground state after `bytes`, if it stood
/// there before them? (No: also when it cannot be told for sure.)
fn ends_in_ground(bytes: &[u8], was_ground: bool) -> bool {
    // The last byte that changes where the parser stands whatever it was
    // doing: ESC starts a sequence, CAN and SUB cancel one.
    let Some(i) = memchr::memrchr3(0x1b, 0x18, 0x1a, bytes) else {
        return was_ground && !ends_in_partial_utf8(bytes);
    };
    if bytes[i] != 0x1b {
        return !ends_in_partial_utf8(&bytes[i + 1..]);
    }
    let seq = &bytes[i + 1..];
    let complete = match seq.first() {
        None => false,
        // CSI: parameters and intermediates, then a final byte.
        Some(b'[') => seq[1..]
            .iter()
            .position(|b| (0x40..=0x7e).contains(b))
            .is_some_and(|f| seq[1..=f].iter().all(|b| (0x20..=0x7e).contains(b))),
        // Strings: OSC ends with BEL (or ST, which is an ESC: not the last).
        Some(b']') => seq.contains(&0x07),
        Some(b'P' | b'X' | b'^' | b'_') => false,
        // Intermediates, then a final byte.
        Some(_) => seq
            .iter()
            .position(|b| (0x30..=0x7e).contains(b))
            .is_some_and(|f| seq[..f].iter().all(|b| (0x20..=0x2f).contains(b))),
    };
    // After the sequence: ground again, unless a codepoint is cut off.
    complete && !ends_in_partial_utf8(seq)
}

/// The longest sequence cut between two pieces that [`Ground`] reads on
/// into the next.
const OPEN_MOST: usize = 256;

/// Whether a VT parser stands in its ground state, read from the bytes it
/// was fed, piece after piece (`ends_in_ground`): a sequence a piece
/// ends in is read on into the next one, so a read that cut `ESC [K` in
/// two does not leave it unknown until the next escape (a flood of
/// coloured lines read in pieces of a megabyte kept one piece in
/// twenty-five whole for want of this).
#[derive(Debug, Clone)]
pub struct Ground {
    ground: bool,
    /// The sequence the last piece ended in (from its ESC, at most
    /// [`OPEN_MOST`] bytes), when it ended in one; empty: unknown.
    open: Vec<u8>,
}

impl Default for Ground {
    fn default() -> Self {
        Ground {
            ground: true,
            open: Vec::new(),
        }
    }
}

impl Ground {
    /// The parser stands in ground (no: also when it cannot be told).
    pub fn is(&self) -> bool {
        self.ground
    }

    /// Does it stand in ground after `bytes`, the next piece?
    pub fn after(&self, bytes: &[u8]) -> bool {
        if self.ground || self.open.is_empty() || memchr::memchr3(0x1b, 0x18, 0x1a, bytes).is_some()
        {
            return ends_in_ground(bytes, self.ground);
        }
        let mut seq = self.open.clone();
        seq.extend_from_slice(&bytes[..bytes.len().min(OPEN_MOST)]);
        ends_in_ground(&seq, true) && ends_in_ground(bytes, true)
    }

    /// `bytes`, the next piece, taken in.
    pub fn advance(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let ground = self.after(bytes);
        match memchr::memrchr3(0x1b, 0x18, 0x1a, bytes) {
            _ if ground => self.open.clear(),
            Some(i) if bytes[i] == 0x1b && bytes.len() - i <= OPEN_MOST => {
                self.open.clear();
                self.open.extend_from_slice(&bytes[i..]);
            }
            None if !self.open.is_empty() && self.open.len() + bytes.len() <= OPEN_MOST => {
                self.open.extend_from_slice(bytes);
            }
            _ => self.open.clear(),
        }
        self.ground = ground;
    }
}

/// `bytes` end inside a UTF-8 sequence (the parser keeps its start).
fn ends_in_partial_utf8(bytes: &[u8]) -> bool {
    let tail = &bytes[bytes.len().saturating_sub(3)..];
    for (k, &b) in tail.iter().rev().enumerate() {
        let need = match b {
            0x00..=0x7f => return false,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            // A continuation byte: look further back.
            0x80..=0xbf => continue,
            _ => return false,
        };
        return k + 1 < need;
    }
    // Only continuation bytes: whatever they continue may be open.
    !tail.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_lines_by_words_agree_with_a_line_at_a_time() {
        // The lines a line at a time from the start.
        let slow = |bytes: &[u8]| bare_lines_after(bytes, (0, 0));
        // Lines of printable bytes and stray bytes, at every offset (a
        // fixed pseudo-random walk).
        let alphabet = [b'a', b' ', b'~', b'\r', b'\n', 0x1b, 0x7f, 0x80, 0x00];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..200_000 {
            // Mostly whole lines, with a stray byte now and then.
            let mut v = Vec::new();
            for _ in 0..next(12) {
                if next(8) == 0 {
                    v.push(alphabet[next(alphabet.len())]);
                } else {
                    v.extend((0..next(12)).map(|_| b' ' + next(95) as u8));
                    v.extend_from_slice(b"\r\n");
                }
            }
            assert_eq!(bare_lines(&v), slow(&v), "{v:?}");
        }
        let flood: Vec<u8> = (1..5000)
            .flat_map(|i| format!("{i}\r\n").into_bytes())
            .collect();
        assert_eq!(bare_lines(&flood), (flood.len(), 4999));
        assert_eq!(
            bare_lines(&flood[..flood.len() - 1]),
            slow(&flood[..flood.len() - 1])
        );
    }

    #[test]
    fn ground_is_known_only_when_sure() {
        assert!(ends_in_ground(b"plain text\r\n", true));
        assert!(!ends_in_ground(b"plain text\r\n", false));
        assert!(ends_in_ground(b"a\x1b[31mred\x1b[0m\r\n", false));
        assert!(ends_in_ground(b"\x1b]0;title\x07x", true));
        assert!(ends_in_ground(b"x\x1b(B", true));
        assert!(!ends_in_ground(b"x\x1b[3", true));
        assert!(!ends_in_ground(b"x\x1b", true));
        assert!(!ends_in_ground(b"x\x1b]0;tit", true));
        assert!(!ends_in_ground(b"x\x1bPq", true));
        assert!(ends_in_ground(b"x\x1b[3\x18", false));
        assert!(!ends_in_ground("caf\u{e9}".as_bytes()[..4].as_ref(), true));
        assert!(ends_in_ground("caf\u{e9}".as_bytes(), true));
    }

    #[test]
    fn a_sequence_cut_between_pieces_is_read_on_into_the_next() {
        let line = b"\x1b[01;31m\x1b[K135281\x1b[m\x1b[K\r\n";
        // Cut anywhere: after the second piece the parser is known to
        // stand in ground, as after the whole line.
        for cut in 0..line.len() {
            let mut g = Ground::default();
            g.advance(&line[..cut]);
            assert!(g.after(&line[cut..]), "cut at {cut}");
            g.advance(&line[cut..]);
            assert!(g.is(), "cut at {cut}");
            // And the lines after it, with no escape, leave it there.
            g.advance(b"plain\r\n");
            assert!(g.is(), "cut at {cut}");
        }
        // A sequence still open after the next piece stays open, and one
        // longer than is kept is unknown until the next escape.
        let mut g = Ground::default();
        g.advance(b"x\x1b]0;a title");
        g.advance(b" goes on");
        assert!(!g.is());
        assert!(g.after(b"\x07"));
        let mut g = Ground::default();
        g.advance(b"x\x1b]0;");
        g.advance(&[b'a'; OPEN_MOST]);
        assert!(!g.after(b"\x07plain"));
        assert!(g.after(b"\x1b[m"));
        // With no sequence open, unknown stays unknown.
        let mut g = Ground::default();
        g.advance("caf\u{e9}".as_bytes()[..4].as_ref());
        assert!(!g.is());
        assert!(!g.after(b"plain"));
    }

    #[test]
    fn printable_prefix_stops_at_the_first_other_byte() {
        for len in 0..20 {
            for at in 0..=len {
                for bad in [0x00, 0x1b, 0x1f, 0x7f, 0x80, 0xc3, 0xff] {
                    let mut v = vec![b'a'; len];
                    v.iter_mut()
                        .enumerate()
                        .for_each(|(i, b)| *b = 0x20 + (i as u8 * 7) % 95);
                    if at < len {
                        v[at] = bad;
                    }
                    assert_eq!(printable_prefix(&v), at, "{v:?}");
                }
            }
        }
        assert_eq!(printable_prefix(b" ~~~~~~~~~~"), 11);
    }
}
