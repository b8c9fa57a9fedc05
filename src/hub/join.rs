//! Where a pane's stream stands, for a wait that joins it.

use super::protocol::Entry;

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
                    // Cut where an escape sequence starts, if one does: a
                    // joiner's parser then starts outside any (a title's
                    // closing BEL is not taken for a bell).
                    let mut cut = self.line.len() - LINE_KEEP;
                    if let Some(e) = memchr::memchr(0x1b, &self.line[cut..]) {
                        cut += e;
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_point_keeps_the_cursors_line_and_the_screen() {
        let mut j = JoinPoint::new(false);
        j.feed(b"partial");
        assert_eq!(
            j.entry(),
            Entry::Joined {
                line: b"partial".to_vec(),
                whole: false,
                alt: false
            }
        );
        j.feed(b" more\r\n$ ec");
        j.feed(b"ho hi");
        assert_eq!(
            j.entry(),
            Entry::Joined {
                line: b"$ echo hi".to_vec(),
                whole: true,
                alt: false
            }
        );
        j.feed(b"\x1b[?2004l\x1b[?1049h\x1b[H");
        assert!(matches!(j.entry(), Entry::Joined { alt: true, .. }));
        j.feed(b"\x1b[?1049;1l\n");
        assert!(matches!(j.entry(), Entry::Joined { alt: false, .. }));
        // A long progress line: its last rewrite is kept.
        j.feed(&[b'x'; 3000]);
        j.feed(b"\rdone 100%");
        j.feed(&[b' '; 2000]);
        assert!(
            matches!(j.entry(), Entry::Joined { ref line, whole: true, .. } if line.starts_with(b"\rdone 100%") && line.len() == 2010)
        );
        j.feed(&[b'y'; 5000]);
        assert!(
            matches!(j.entry(), Entry::Joined { ref line, whole: false, .. } if line.len() == 4096)
        );
        // Titles set over and over, no line feed: kept from a sequence's
        // start.
        for n in 0..400 {
            j.feed(format!("\x1b]0;{n} title\x07").as_bytes());
        }
        assert!(
            matches!(j.entry(), Entry::Joined { ref line, .. } if line.starts_with(b"\x1b]0;") && line.len() <= 4096)
        );
    }
}
