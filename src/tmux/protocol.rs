//! Decoding tmux control-mode output (`tmux -C`).
//!
//! Pure byte-level logic, kept apart from the process plumbing so it can be
//! unit-tested with recorded output. Facts relied on (tmux 3.3a, control.c):
//! - replies to commands are framed by `%begin TIME NUM FLAGS` and
//!   `%end`/`%error` with the same three numbers; lines in between are the
//!   reply, even when they start with `%`;
//! - every other line starting with `%` is a notification;
//! - `%output %PANE DATA` escapes bytes below 0x20 and the backslash as
//!   `\ooo`; every other byte (including invalid UTF-8) arrives raw.

/// One decoded unit of control-mode output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// The reply to one command: `ok` is false for `%error`.
    Reply { ok: bool, lines: Vec<String> },
    /// Bytes a pane's program wrote, unescaped.
    Output { pane: u32, data: Vec<u8> },
    /// `%exit [reason]`: the control client is about to go away.
    Exit { reason: Option<String> },
    /// Any other notification, e.g. `%layout-change ...`, kept as text.
    Notification(String),
}

/// Turns control-mode lines (without their trailing newline) into messages.
#[derive(Debug, Default)]
pub struct Decoder {
    block: Option<Block>,
}

#[derive(Debug)]
struct Block {
    guard: Vec<u8>,
    lines: Vec<String>,
}

/// Whether `line` ends the reply block opened by `%begin GUARD`: Some(true)
/// for `%end GUARD`, Some(false) for `%error GUARD`, None otherwise.
pub fn block_end(line: &[u8], guard: &[u8]) -> Option<bool> {
    [(&b"%end "[..], true), (&b"%error "[..], false)]
        .into_iter()
        .find(|(prefix, _)| line.strip_prefix(*prefix) == Some(guard))
        .map(|(_, ok)| ok)
}

/// `%output %PANE DATA`: the pane's number and the still escaped data.
pub fn output_line(line: &[u8]) -> Option<(u32, &[u8])> {
    let rest = line.strip_prefix(b"%output %")?;
    let (id, data) = match rest.iter().position(|&b| b == b' ') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let pane = std::str::from_utf8(id).ok()?.parse().ok()?;
    Some((pane, data))
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one line; returns a message when one is complete.
    pub fn feed(&mut self, line: &[u8]) -> Option<Message> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(block) = &mut self.block {
            if let Some(ok) = block_end(line, &block.guard) {
                let lines = std::mem::take(&mut block.lines);
                self.block = None;
                return Some(Message::Reply { ok, lines });
            }
            block.lines.push(String::from_utf8_lossy(line).into_owned());
            return None;
        }
        if let Some(rest) = line.strip_prefix(b"%begin ") {
            self.block = Some(Block {
                guard: rest.to_vec(),
                lines: Vec::new(),
            });
            return None;
        }
        if let Some((pane, data)) = output_line(line) {
            return Some(Message::Output {
                pane,
                data: unescape(data),
            });
        }
        if line == b"%exit" {
            return Some(Message::Exit { reason: None });
        }
        if let Some(rest) = line.strip_prefix(b"%exit ") {
            return Some(Message::Exit {
                reason: Some(String::from_utf8_lossy(rest).into_owned()),
            });
        }
        if line.is_empty() {
            return None;
        }
        Some(Message::Notification(
            String::from_utf8_lossy(line).into_owned(),
        ))
    }
}

/// Undo control mode's `\ooo` escaping. A backslash not followed by three
/// octal digits is kept as it is (tmux never sends one, but be lenient).
pub fn unescape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b == b'\\' && i + 3 < data.len() && is_octal_triplet(&data[i + 1..i + 4]) {
            let d = &data[i + 1..i + 4];
            let v = (u32::from(d[0] - b'0') << 6)
                | (u32::from(d[1] - b'0') << 3)
                | u32::from(d[2] - b'0');
            out.push((v & 0xff) as u8);
            i += 4;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

fn is_octal_triplet(d: &[u8]) -> bool {
    d.len() == 3 && d.iter().all(|b| (b'0'..=b'7').contains(b))
}

/// Quote one argument for tmux's command parser: single quotes, inside which
/// nothing is expanded. A single quote itself is written as `'\''`.
pub fn quote(arg: &str) -> String {
    let mut s = String::with_capacity(arg.len() + 2);
    s.push('\'');
    for c in arg.chars() {
        if c == '\'' {
            s.push_str("'\\''");
        } else {
            s.push(c);
        }
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_octal_and_keeps_raw_bytes() {
        assert_eq!(unescape(br"a\015\012b"), b"a\r\nb");
        assert_eq!(unescape(br"\134x"), b"\\x");
        assert_eq!(unescape(b"\xff\xfe"), b"\xff\xfe");
        assert_eq!(unescape(br"\01"), br"\01");
        assert_eq!(unescape(br"\9999"), br"\9999");
        assert_eq!(unescape(br"\033[?2004h"), b"\x1b[?2004h");
    }

    #[test]
    fn frames_replies_even_when_lines_look_like_notifications() {
        let mut d = Decoder::new();
        assert_eq!(d.feed(b"%begin 1 2 1"), None);
        assert_eq!(d.feed(b"%output %1 fake"), None);
        assert_eq!(d.feed(b"%end 1 3 1"), None);
        assert_eq!(
            d.feed(b"%end 1 2 1"),
            Some(Message::Reply {
                ok: true,
                lines: vec!["%output %1 fake".into(), "%end 1 3 1".into()]
            })
        );
        assert_eq!(d.feed(b"%begin 5 6 0"), None);
        assert_eq!(d.feed(b"can't find pane: %9"), None);
        assert_eq!(
            d.feed(b"%error 5 6 0"),
            Some(Message::Reply {
                ok: false,
                lines: vec!["can't find pane: %9".into()]
            })
        );
    }

    #[test]
    fn decodes_output_exit_and_notifications() {
        let mut d = Decoder::new();
        assert_eq!(
            d.feed(br"%output %12 hi\015\012"),
            Some(Message::Output {
                pane: 12,
                data: b"hi\r\n".to_vec()
            })
        );
        assert_eq!(
            d.feed(b"%output %3 "),
            Some(Message::Output {
                pane: 3,
                data: vec![]
            })
        );
        assert_eq!(d.feed(b"%exit"), Some(Message::Exit { reason: None }));
        assert_eq!(
            d.feed(b"%exit server exited unexpectedly"),
            Some(Message::Exit {
                reason: Some("server exited unexpectedly".into())
            })
        );
        assert_eq!(
            d.feed(b"%layout-change @1 abc"),
            Some(Message::Notification("%layout-change @1 abc".into()))
        );
    }

    #[test]
    fn random_lines_never_panic() {
        let mut rng = crate::testutil::XorShift(0x2545_f491_4f6c_dd1d);
        let mut d = Decoder::new();
        let alphabet = b"%\\01234567 \xff\x00abcdeginoprstux\n";
        let prefixes: [&[u8]; 6] = [
            b"%output %",
            b"%begin 1 2 ",
            b"%end 1 2 ",
            b"%exit",
            b"%",
            b"",
        ];
        for _ in 0..20_000 {
            let mut line = prefixes[rng.below(prefixes.len())].to_vec();
            for _ in 0..rng.below(40) {
                line.push(alphabet[rng.below(alphabet.len())]);
            }
            let _ = d.feed(&line);
            let _ = unescape(&line);
        }
    }

    #[test]
    fn quotes_for_tmux() {
        assert_eq!(quote("%1"), "'%1'");
        assert_eq!(quote("a'b"), "'a'\\''b'");
        assert_eq!(quote("#{pane_id}"), "'#{pane_id}'");
    }
}
