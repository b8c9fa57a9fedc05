//! Result values and how they are shown: JSON for scripts (the seed's
//! `WaitForTextResult` schema, key for key) and one short line for people.
//! Both are fed by the same value; nothing below `waits` prints.

use serde::Serialize;

/// How a text wait ended (the seed's `outcome` enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matched,
    AnyOutput,
    Stopped,
    AlternateScreen,
    Timeout,
}

impl Outcome {
    pub fn exit_code(self) -> i32 {
        use crate::error::exit;
        match self {
            Outcome::Matched | Outcome::AnyOutput => exit::OK,
            Outcome::Timeout => exit::TIMEOUT,
            Outcome::Stopped => exit::STOPPED,
            Outcome::AlternateScreen => exit::ALTERNATE_SCREEN,
        }
    }
}

/// The result of `tmux-wait text`: exactly the seed's `WaitForTextResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextResult {
    pub found: bool,
    pub outcome: Outcome,
    pub matched_index: Option<usize>,
    pub matched_lines: Vec<String>,
    pub tail: Vec<String>,
    pub saw_new_output: bool,
    pub matched_at_entry: bool,
    pub alternate_screen: bool,
    pub pane_id: String,
    pub elapsed_seconds: f64,
    pub effective_timeout: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelOutcome {
    Signalled,
    Timeout,
}

/// The result of `tmux-wait channel`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelResult {
    pub channel: String,
    pub outcome: ChannelOutcome,
    pub elapsed_seconds: f64,
    pub effective_timeout: f64,
    /// What `tmux-wait signal --status` sent with this signal, else null.
    pub status: Option<i32>,
    /// What `tmux-wait signal --message` sent, else null.
    pub message: Option<String>,
    /// When a `tmux-wait signal` sent it (seconds since the epoch), else null.
    pub sent: Option<f64>,
}

/// At most this many lines in `tail` and `matched_lines`.
pub const MAX_LINES: usize = 20;
/// At most this many bytes of text in `tail` and `matched_lines`.
pub const MAX_BYTES: usize = 2000;

/// Keep the first (or, with `keep_last`, the last) lines that fit the
/// bounds; a single line longer than the byte bound is cut at a character
/// boundary.
pub fn bound_lines(lines: Vec<String>, keep_last: bool) -> Vec<String> {
    let mut lines: Vec<String> = lines.into_iter().map(|l| cut(l, MAX_BYTES)).collect();
    if keep_last {
        lines.reverse();
    }
    let mut out = Vec::new();
    let mut bytes = 0;
    for l in lines {
        if out.len() == MAX_LINES || bytes + l.len() > MAX_BYTES {
            break;
        }
        bytes += l.len();
        out.push(l);
    }
    if keep_last {
        out.reverse();
    }
    out
}

fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// Seconds with microsecond resolution, as JSON numbers.
pub fn seconds(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

/// Text from a pane made safe for a terminal: control characters shown as
/// escapes so they cannot move the cursor or retitle the window.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn fmt_secs(x: f64) -> String {
    format!("{x:.3}s")
}

impl TextResult {
    /// One line for people.
    pub fn human(&self) -> String {
        let at = fmt_secs(self.elapsed_seconds);
        let first = self.matched_lines.first().map(|l| sanitize(l));
        match self.outcome {
            Outcome::Matched => format!(
                "matched pattern #{} in {} after {at}: {}",
                self.matched_index.unwrap_or(0) + 1,
                self.pane_id,
                first.unwrap_or_default()
            ),
            Outcome::AnyOutput => format!(
                "new output in {} after {at}: {}",
                self.pane_id,
                first.unwrap_or_default()
            ),
            Outcome::Stopped => format!(
                "stopped by --stop #{} in {} after {at}: {}",
                self.matched_index.unwrap_or(0) + 1,
                self.pane_id,
                first.unwrap_or_default()
            ),
            Outcome::AlternateScreen => format!(
                "timed out after {} in {}: the pane was on the alternate screen (pager, editor or full-screen program), so matching was suppressed",
                fmt_secs(self.effective_timeout),
                self.pane_id
            ),
            Outcome::Timeout => {
                let mut s = format!(
                    "timed out after {} in {}: {}",
                    fmt_secs(self.effective_timeout),
                    self.pane_id,
                    if self.saw_new_output {
                        "new output did not match"
                    } else {
                        "no new output"
                    }
                );
                if self.matched_at_entry {
                    s.push_str(" (a pattern was already on screen before the wait began)");
                }
                if let Some(last) = self.tail.last() {
                    s.push_str(&format!("; last line: {}", sanitize(last)));
                }
                s
            }
        }
    }
}

impl ChannelResult {
    pub fn human(&self) -> String {
        match self.outcome {
            ChannelOutcome::Signalled => {
                let mut s = format!(
                    "channel {} signalled after {}",
                    self.channel,
                    fmt_secs(self.elapsed_seconds)
                );
                if let Some(st) = self.status {
                    s.push_str(&format!(", status {st}"));
                }
                if let Some(m) = &self.message {
                    s.push_str(&format!(": {}", sanitize(m)));
                }
                s
            }
            ChannelOutcome::Timeout => format!(
                "timed out after {} waiting for channel {}",
                fmt_secs(self.effective_timeout),
                self.channel
            ),
        }
    }
}

/// `{"error": {"kind": ..., "message": ...}}`.
pub fn error_json(kind: &str, message: &str) -> String {
    serde_json::json!({ "error": { "kind": kind, "message": message } }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_result_has_exactly_the_seed_keys() {
        let r = TextResult {
            found: true,
            outcome: Outcome::AnyOutput,
            matched_index: None,
            matched_lines: vec![],
            tail: vec![],
            saw_new_output: true,
            matched_at_entry: false,
            alternate_screen: false,
            pane_id: "%1".into(),
            elapsed_seconds: 0.002,
            effective_timeout: 8.0,
        };
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "alternate_screen",
                "effective_timeout",
                "elapsed_seconds",
                "found",
                "matched_at_entry",
                "matched_index",
                "matched_lines",
                "outcome",
                "pane_id",
                "saw_new_output",
                "tail"
            ]
        );
        assert_eq!(v["outcome"], "any_output");
        assert!(v["matched_index"].is_null());
        assert!(v["effective_timeout"].is_f64());
    }

    #[test]
    fn bounds_lines_and_bytes() {
        let many: Vec<String> = (0..50).map(|i| format!("line {i}")).collect();
        let tail = bound_lines(many.clone(), true);
        assert_eq!(tail.len(), 20);
        assert_eq!(tail.last().unwrap(), "line 49");
        let head = bound_lines(many, false);
        assert_eq!(head[0], "line 0");
        let big = vec!["é".repeat(3000)];
        let b = bound_lines(big, true);
        assert!(b[0].len() <= 2000 && b[0].len() >= 1998);
        let wide: Vec<String> = (0..10).map(|_| "x".repeat(500)).collect();
        assert_eq!(bound_lines(wide, true).len(), 4);
    }

    #[test]
    fn sanitizes_control_characters() {
        assert_eq!(sanitize("a\x1b[31mb\x07"), "a\\u{1b}[31mb\\u{7}");
        assert_eq!(sanitize("#(touch x)"), "#(touch x)");
    }

    #[test]
    fn error_json_is_valid() {
        let s = error_json("usage", "bad \"quote\"\n");
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["error"]["kind"], "usage");
    }
}
