//! Progress of a running wait, for `notifications/progress`.
//!
//! The server ticks every second by itself (elapsed time, the timeout as
//! the total). A child run with `TMUX_WAIT_PROGRESS=1` may also print
//! progress lines on stderr, one JSON object each:
//! `{"progress":{"elapsed_seconds":F,"last_line":"..."}}`; the last line
//! they name goes into the message. Any other stderr line is a log line.

use serde::Deserialize;

/// The environment variable that asks a child for progress lines.
pub const ENV: &str = "TMUX_WAIT_PROGRESS";

/// What one progress line says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Progress {
    pub elapsed_seconds: f64,
    #[serde(default)]
    pub last_line: Option<String>,
}

#[derive(Deserialize)]
struct Line {
    progress: Progress,
}

/// A progress line of a child's stderr, or None for any other line.
pub fn parse(line: &str) -> Option<Progress> {
    let t = line.trim();
    if !t.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Line>(t)
        .ok()
        .map(|l| l.progress)
        .filter(|p| p.elapsed_seconds.is_finite())
}

/// At most this many characters of a pane line in a message.
const MAX_SHOWN: usize = 200;

/// The message of a progress notification.
pub fn message(what: &str, elapsed: f64, total: Option<f64>, last_line: Option<&str>) -> String {
    let mut s = match total {
        Some(t) => format!("{what}: {elapsed:.0} s of {}", fmt_secs(t)),
        None => format!("{what}: {elapsed:.0} s"),
    };
    if let Some(l) = last_line {
        let l = crate::report::sanitize(l);
        let cut: String = l.chars().take(MAX_SHOWN).collect();
        let more = if cut.len() < l.len() { "…" } else { "" };
        s.push_str(&format!("; last line: {cut}{more}"));
    }
    s
}

fn fmt_secs(t: f64) -> String {
    if t.fract() == 0.0 {
        format!("{t:.0} s")
    } else {
        format!("{t} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as a child prints them, and lines that are not progress.
    #[test]
    fn parses_recorded_lines() {
        let lines = [
            r#"{"progress":{"elapsed_seconds":1.002,"last_line":"Compiling foo v0.1.0"}}"#,
            r#"{"progress":{"elapsed_seconds":2.5}}"#,
            r#"{"progress":{"elapsed_seconds":3,"last_line":null}}"#,
            r#"  {"progress":{"elapsed_seconds":4.0,"last_line":"tab\there \u001b[31mred"}}  "#,
            "tmux-wait: error: no such pane: %99",
            r#"{"error":{"kind":"usage","message":"x"}}"#,
            r#"{"progress":{"last_line":"no time"}}"#,
            r#"{"progress":"#,
            "",
        ];
        let got: Vec<Option<Progress>> = lines.iter().map(|l| parse(l)).collect();
        assert_eq!(
            got[0],
            Some(Progress {
                elapsed_seconds: 1.002,
                last_line: Some("Compiling foo v0.1.0".into())
            })
        );
        assert_eq!(got[1].as_ref().unwrap().last_line, None);
        assert_eq!(got[2].as_ref().unwrap().elapsed_seconds, 3.0);
        assert_eq!(
            got[3].as_ref().unwrap().last_line.as_deref(),
            Some("tab\there \x1b[31mred")
        );
        assert!(got[4..].iter().all(Option::is_none), "{got:?}");
    }

    #[test]
    fn messages_are_safe_and_short() {
        assert_eq!(
            message("waiting for text in %1", 3.4, Some(8.0), None),
            "waiting for text in %1: 3 s of 8 s"
        );
        let m = message("w", 1.0, Some(0.5), Some("\x1b]0;title\x07done"));
        assert!(
            !m.contains('\x1b') && m.ends_with("last line: \\u{1b}]0;title\\u{7}done"),
            "{m}"
        );
        let long = "x".repeat(500);
        let m = message("w", 1.0, None, Some(&long));
        assert!(m.ends_with('…') && m.len() < 260, "{m}");
    }
}
