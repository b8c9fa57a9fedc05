//! Result values and how they are shown: JSON for scripts (libtmux-mcp's
//! `wait_for_text` result, key for key; `run` with libtmux-mcp's
//! `run_command` keys) and text for people.
//! Both are fed by the same value; nothing below `waits` prints.

mod fallback;
use crate::error::exit;
pub use fallback::{Fallback, FallbackWhy};
use serde::Serialize;

/// How a text wait ended (libtmux-mcp's `outcome` values).
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
        match self {
            Outcome::Matched | Outcome::AnyOutput => exit::OK,
            Outcome::Timeout => exit::TIMEOUT,
            Outcome::Stopped => exit::STOPPED,
            Outcome::AlternateScreen => exit::ALTERNATE_SCREEN,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::AnyOutput => "any_output",
            Outcome::Stopped => "stopped",
            Outcome::AlternateScreen => "alternate_screen",
            Outcome::Timeout => "timeout",
        }
    }

    const ALL: [Outcome; 5] = [
        Outcome::Matched,
        Outcome::AnyOutput,
        Outcome::Stopped,
        Outcome::AlternateScreen,
        Outcome::Timeout,
    ];
}

/// How a watch ended: `watch --json`'s `outcome`, the status line's last
/// result, a hook's `TMUX_WAIT_OUTCOME`. Written as one word (`matched`,
/// `done`, `pane_died`...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchOutcome {
    /// A text watch's outcome.
    Text(Outcome),
    /// The command finished (`--done`).
    Done,
    /// The pane went quiet (`--quiet`).
    Quiet,
    /// A channel hook's signal arrived.
    Signalled,
    /// The watch ended in an error of this kind (`pane_died`...).
    Failed(String),
}

impl WatchOutcome {
    pub fn as_str(&self) -> &str {
        match self {
            WatchOutcome::Text(o) => o.as_str(),
            WatchOutcome::Done => "done",
            WatchOutcome::Quiet => "quiet",
            WatchOutcome::Signalled => "signalled",
            WatchOutcome::Failed(kind) => kind,
        }
    }

    pub fn parse(s: &str) -> WatchOutcome {
        match s {
            "done" => WatchOutcome::Done,
            "quiet" => WatchOutcome::Quiet,
            "signalled" => WatchOutcome::Signalled,
            _ => Outcome::ALL
                .into_iter()
                .find(|o| o.as_str() == s)
                .map_or_else(|| WatchOutcome::Failed(s.to_owned()), WatchOutcome::Text),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            WatchOutcome::Text(o) => o.exit_code(),
            WatchOutcome::Done | WatchOutcome::Quiet | WatchOutcome::Signalled => exit::OK,
            // The wait ended in an error (pane died...); it was announced.
            WatchOutcome::Failed(_) => exit::ERROR,
        }
    }

    pub fn is_timeout(&self) -> bool {
        *self == WatchOutcome::Text(Outcome::Timeout)
    }
}

impl std::fmt::Display for WatchOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for WatchOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for WatchOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d).map(|s| WatchOutcome::parse(&s))
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
    /// The pane's stream stopped during the wait and it went on another
    /// way (absent: it did not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
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

/// The patterns of a text wait as given, for the line for people.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextPatterns<'a> {
    pub patterns: &'a [String],
    pub stops: &'a [String],
    /// `--regex` was given.
    pub regex: bool,
}

/// A pattern as the line for people names it: quoted, control characters
/// shown as escapes, at most 60 characters.
fn quoted(p: &str) -> String {
    let mut s: String = p.chars().take(60).collect();
    if s.len() < p.len() {
        s.push('…');
    }
    format!("\"{}\"", sanitize(&s))
}

/// A literal pattern that reads like a regular expression (`error.*failed`,
/// `^done$`, `\d+ tests`, `[0-9]`, `ok|fail`, `x{3}`): a wait that never
/// matched it probably wanted `--regex`.
pub fn looks_like_regex(p: &str) -> bool {
    let b = p.as_bytes();
    let n = b.len();
    if n < 2 {
        return false;
    }
    if p.contains(".*") || p.contains(".+") || p.contains(".?") {
        return true;
    }
    if b[0] == b'^' || (b[n - 1] == b'$' && b[n - 2] != b' ') {
        return true;
    }
    for i in 0..n - 1 {
        let next = b[i + 1];
        match b[i] {
            b'\\' if b"dDwWsSbB.()[]{}*+?|^$".contains(&next) => return true,
            // A class with a range or negated: [0-9], [^ ].
            b'[' => {
                if let Some(end) = p[i + 1..].find(']') {
                    let class: Vec<char> = p[i + 1..i + 1 + end].chars().collect();
                    if class.first() == Some(&'^')
                        || (class.len() >= 3 && class[1..class.len() - 1].contains(&'-'))
                    {
                        return true;
                    }
                }
            }
            // a|b with no spaces around the bar.
            b'|' if i > 0 && b[i - 1] != b' ' && next != b' ' => return true,
            // A counted repeat: x{3}, x{2,5}.
            b'{' if i > 0 => {
                let rest = &p[i + 1..];
                if let Some(end) = rest.find('}') {
                    let inner = &rest[..end];
                    if !inner.is_empty()
                        && inner.bytes().all(|c| c.is_ascii_digit() || c == b',')
                        && inner.as_bytes()[0].is_ascii_digit()
                    {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

impl TextResult {
    /// One line for people, naming the pattern that decided.
    pub fn human(&self, given: &TextPatterns) -> String {
        match &self.fallback {
            Some(f) => format!("{} ({})", self.human_alone(given), f.human()),
            None => self.human_alone(given),
        }
    }

    fn human_alone(&self, given: &TextPatterns) -> String {
        let at = fmt_secs(self.elapsed_seconds);
        let first = self.matched_lines.first().map(|l| sanitize(l));
        let named = |list: &[String], flag: &str| match self.matched_index.and_then(|i| list.get(i))
        {
            Some(p) => quoted(p),
            None => format!("{flag} #{}", self.matched_index.unwrap_or(0) + 1),
        };
        match self.outcome {
            Outcome::Matched => format!(
                "matched {} in {} after {at}: {}",
                named(given.patterns, "--pattern"),
                self.pane_id,
                first.unwrap_or_default()
            ),
            Outcome::AnyOutput => format!(
                "new output in {} after {at}: {}",
                self.pane_id,
                first.unwrap_or_default()
            ),
            Outcome::Stopped => format!(
                "stopped by {} in {} after {at}: {}",
                named(given.stops, "--stop"),
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
                if let Some(p) = regex_hint(given) {
                    s.push_str(&format!(
                        "; {} is matched as literal text: add --regex to match it as a regular expression",
                        quoted(p)
                    ));
                }
                s
            }
        }
    }
}

/// The first literal pattern that reads like a regex, if any.
fn regex_hint<'a>(given: &TextPatterns<'a>) -> Option<&'a String> {
    if given.regex {
        return None;
    }
    given
        .patterns
        .iter()
        .chain(given.stops)
        .find(|p| looks_like_regex(p))
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

/// Command output for a terminal: one line each, control characters shown
/// as escapes.
fn lines_for_people(lines: &[String]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(&sanitize(l));
        s.push('\n');
    }
    s.truncate(s.trim_end_matches('\n').len());
    s
}

/// Where a command's exit status came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitSource {
    /// The marks around a command typed by `run` (exact).
    Wrapper,
    /// The shell's own OSC 133 marks.
    Osc133,
    /// The shell took the terminal back: the command ended, status unknown.
    Shell,
    /// The command ended the shell (`exit`) in a pane kept by remain-on-exit.
    PaneDead,
    /// The pane closed.
    PaneClosed,
    /// The pane's program is not the one that ran the command.
    Respawned,
    /// A run ended while nothing watched it.
    Unobserved,
}

impl ExitSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ExitSource::Wrapper => "wrapper",
            ExitSource::Osc133 => "osc133",
            ExitSource::Shell => "shell",
            ExitSource::PaneDead => "pane_dead",
            ExitSource::PaneClosed => "pane_closed",
            ExitSource::Respawned => "respawned",
            ExitSource::Unobserved => "unobserved",
        }
    }
}

/// Why an `output` call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputReason {
    /// There were unseen lines.
    Output,
    /// A line matched `--until`.
    Until,
    /// The command being followed ended.
    Finished,
    /// A program is waiting at its own prompt.
    Prompt,
    /// Nothing runs (the shell is at its prompt, with no job and nothing
    /// typed) and nothing new was written: nothing is coming.
    Idle,
    /// Nothing came in time.
    Timeout,
}

/// What became of text typed at the shell prompt and not submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputOutcome {
    Submitted,
    Erased,
    Pending,
}

impl InputOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            InputOutcome::Submitted => "submitted",
            InputOutcome::Erased => "erased",
            InputOutcome::Pending => "pending",
        }
    }
}

/// `run --json`: libtmux-mcp's `run_command` keys first.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub pane_id: String,
    pub exit_status: Option<i32>,
    pub timed_out: bool,
    pub elapsed_seconds: f64,
    pub output: Vec<String>,
    pub output_truncated: bool,
    pub output_truncated_lines: usize,
    pub effective_timeout: f64,
    /// The command ended (false: timed out or stopped at a program's prompt).
    pub finished: bool,
    /// Where the exit status came from.
    pub exit_source: Option<ExitSource>,
    /// An interactive program's prompt the command stopped at.
    pub prompt: Option<String>,
    pub cursor: String,
    pub save_error: Option<String>,
    /// Why the command could not be followed after the call returned (its
    /// exit status and --save-to stop here), if so.
    pub follow_error: Option<String>,
    /// The pane's stream stopped during the run and it went on another
    /// way (absent: it did not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
}

/// `output --json` (and each `--ndjson` line).
#[derive(Debug, Clone, Serialize)]
pub struct OutputResult {
    pub pane_id: String,
    /// The lines not shown before to this cursor, clipped per the options.
    pub lines: Vec<String>,
    pub cursor: String,
    /// Why the call returned.
    pub reason: OutputReason,
    /// The command being followed ended.
    pub finished: bool,
    pub exit_status: Option<i32>,
    /// Where the exit status came from.
    pub exit_source: Option<ExitSource>,
    pub timed_out: bool,
    /// The program in the pane's foreground when the call returned, if not
    /// the shell.
    pub running: Option<String>,
    /// Lines that scrolled out of the history before this cursor saw them
    /// (a lower bound when `lines_missed_exact` is false).
    pub lines_missed: u64,
    pub lines_missed_exact: bool,
    /// The history was cleared since the cursor's last call.
    pub history_cleared: bool,
    /// The pane's program is not the one of the cursor's last call.
    pub respawned: bool,
    /// Lines of the unseen output not in `lines` (--show, --last-lines,
    /// --max-lines).
    pub clipped_lines: usize,
    /// The last line is unfinished (no newline yet, e.g. a question).
    pub partial: bool,
    /// An interactive program's prompt the output stopped at.
    pub prompt: Option<String>,
    /// Text typed at the shell prompt and not submitted.
    pub unsubmitted_input: Option<String>,
    /// What became of it during the call.
    pub input_outcome: Option<InputOutcome>,
    pub elapsed_seconds: f64,
    pub effective_timeout: f64,
    pub save_error: Option<String>,
    /// The pane's stream stopped during the call and it went on another
    /// way (absent: it did not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
}

impl RunResult {
    /// The command's status; 124 on timeout; 125 when it did not end
    /// (stopped at a program's prompt counts as success: 0).
    pub fn exit_code(&self) -> i32 {
        if self.timed_out {
            return exit::RUN_TIMED_OUT;
        }
        match (self.finished, self.exit_status) {
            (true, Some(s)) => s.clamp(0, 255),
            (true, None) => exit::RUN_FAILED,
            (false, _) => 0,
        }
    }

    pub fn human(&self) -> String {
        lines_for_people(&self.output)
    }

    /// A line for stderr when the command did not simply finish, or its
    /// stream stopped under it.
    pub fn note(&self) -> Option<String> {
        let note = self.note_alone();
        match (&self.fallback, note) {
            (Some(f), Some(n)) => Some(format!("{n} ({})", f.human())),
            (Some(f), None) => Some(format!("tmux-wait: {}", f.human())),
            (None, n) => n,
        }
    }

    fn note_alone(&self) -> Option<String> {
        if self.timed_out {
            let follow = self
                .follow_error
                .as_ref()
                .map(|e| format!("; {e}"))
                .unwrap_or_default();
            Some(format!(
                "tmux-wait: timed out after {}s; the command is still running (tmux-wait output -t {} continues){follow}",
                self.effective_timeout, self.pane_id
            ))
        } else if let Some(p) = &self.prompt {
            Some(format!(
                "tmux-wait: the command is waiting at a prompt: {}",
                sanitize(p)
            ))
        } else if self.finished && self.exit_status.is_none() {
            Some(format!(
                "tmux-wait: the pane closed before the command reported its status ({})",
                self.exit_source.map_or("unknown", ExitSource::as_str)
            ))
        } else {
            self.save_error
                .as_ref()
                .or(self.follow_error.as_ref())
                .map(|e| format!("tmux-wait: {e}"))
        }
    }
}

impl OutputResult {
    pub fn exit_code(&self) -> i32 {
        if self.timed_out && self.lines.is_empty() {
            exit::TIMEOUT
        } else {
            exit::OK
        }
    }

    pub fn human(&self) -> String {
        lines_for_people(&self.lines)
    }

    /// A line for stderr saying how things stand.
    pub fn note(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(f) = &self.fallback {
            parts.push(f.human());
        }
        if self.finished {
            match self.exit_status {
                Some(s) => parts.push(format!("finished, exit {s}")),
                None => parts.push(format!(
                    "finished (exit status unknown: {})",
                    self.exit_source.map_or("?", ExitSource::as_str)
                )),
            }
        } else if let Some(p) = &self.prompt {
            parts.push(format!("at a prompt: {}", sanitize(p)));
        } else if self.reason == OutputReason::Idle {
            parts.push("idle: the shell is at its prompt and nothing runs".into());
        } else if let Some(r) = &self.running {
            parts.push(format!("running: {}", sanitize(r)));
        }
        if self.timed_out {
            parts.push(format!("timed out after {}s", self.effective_timeout));
        }
        if self.lines_missed > 0 {
            let q = if self.lines_missed_exact {
                ""
            } else {
                "at least "
            };
            parts.push(format!("{q}{} lines missed", self.lines_missed));
        }
        if self.history_cleared {
            parts.push("history cleared since the last call".into());
        }
        if self.clipped_lines > 0 {
            parts.push(format!("{} lines clipped", self.clipped_lines));
        }
        if let Some(t) = &self.unsubmitted_input {
            parts.push(format!(
                "unsubmitted input {:?} ({})",
                sanitize(t),
                self.input_outcome.unwrap_or(InputOutcome::Pending).as_str()
            ));
        }
        if let Some(e) = &self.save_error {
            parts.push(e.clone());
        }
        format!("tmux-wait: {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch's outcome is written and read back as the same word, and
    /// each text outcome as its serde name.
    #[test]
    fn watch_outcomes_round_trip() {
        for o in Outcome::ALL {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
            let w = WatchOutcome::Text(o);
            let back: WatchOutcome =
                serde_json::from_value(serde_json::to_value(&w).unwrap()).unwrap();
            assert_eq!(back, w);
        }
        for w in ["done", "quiet", "signalled", "pane_died"] {
            assert_eq!(WatchOutcome::parse(w).as_str(), w);
        }
        assert_eq!(WatchOutcome::parse("pane_died").exit_code(), exit::ERROR);
        assert!(WatchOutcome::parse("timeout").is_timeout());
    }

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
            fallback: None,
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

    /// A timeout's line for people says what the JSON says, never more:
    /// "new output" exactly when `saw_new_output`, "already on screen"
    /// exactly when `matched_at_entry`.
    #[test]
    fn a_timeouts_line_agrees_with_its_json() {
        let given = TextPatterns {
            patterns: &["READY_NOW".into()],
            stops: &[],
            regex: false,
        };
        for saw in [false, true] {
            for at_entry in [false, true] {
                let mut r = result(Outcome::Timeout, None);
                r.saw_new_output = saw;
                r.matched_at_entry = at_entry;
                let line = r.human(&given);
                assert_eq!(line.contains("new output did not match"), saw, "{line}");
                assert_eq!(line.contains("no new output"), !saw, "{line}");
                assert_eq!(line.contains("already on screen"), at_entry, "{line}");
            }
        }
    }

    fn result(outcome: Outcome, index: Option<usize>) -> TextResult {
        TextResult {
            found: outcome == Outcome::Matched,
            outcome,
            matched_index: index,
            matched_lines: vec!["Server READY".into()],
            tail: vec!["$ x".into()],
            saw_new_output: true,
            matched_at_entry: false,
            alternate_screen: false,
            pane_id: "%0".into(),
            elapsed_seconds: 0.029,
            effective_timeout: 2.0,
            fallback: None,
        }
    }

    #[test]
    fn human_line_names_the_pattern() {
        let pats = vec!["nope".to_owned(), "READY".to_owned()];
        let stops = vec!["error:".to_owned()];
        let given = TextPatterns {
            patterns: &pats,
            stops: &stops,
            regex: false,
        };
        assert_eq!(
            result(Outcome::Matched, Some(1)).human(&given),
            "matched \"READY\" in %0 after 0.029s: Server READY"
        );
        assert_eq!(
            result(Outcome::Stopped, Some(0)).human(&given),
            "stopped by \"error:\" in %0 after 0.029s: Server READY"
        );
        let t = result(Outcome::Timeout, None).human(&given);
        assert!(!t.contains("--regex"), "{t}");
    }

    #[test]
    fn timeout_hints_regex_for_a_literal_that_reads_like_one() {
        let pats = vec!["error.*failed".to_owned()];
        let given = TextPatterns {
            patterns: &pats,
            stops: &[],
            regex: false,
        };
        let t = result(Outcome::Timeout, None).human(&given);
        assert!(
            t.ends_with("; \"error.*failed\" is matched as literal text: add --regex to match it as a regular expression"),
            "{t}"
        );
        let given = TextPatterns {
            regex: true,
            ..given
        };
        assert!(
            !result(Outcome::Timeout, None)
                .human(&given)
                .contains("--regex")
        );
    }

    #[test]
    fn what_reads_like_a_regex() {
        for p in [
            "error.*failed",
            "^done",
            "done$",
            r"\d+ tests",
            "[0-9]+",
            "[^ ]",
            "ok|fail",
            "x{3}",
            "a{2,5}",
            r"1\.2",
            ".+",
        ] {
            assert!(looks_like_regex(p), "{p}");
        }
        for p in [
            "Server listening",
            "0.0.0.0:8000",
            "[INFO] ready",
            "cost: 5 $",
            "a | b",
            "{json}",
            "...",
            "x",
            "",
            "done.",
            "Done!?",
            "[é]",
        ] {
            assert!(!looks_like_regex(p), "{p}");
        }
        // Any text, multi-byte characters included, is looked at safely.
        let alphabet = [
            "[", "]", "-", "é", "{", "}", "1", ",", "\\", "|", " ", "^", "$", ".", "*",
        ];
        let mut rng = crate::testutil::XorShift(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let mut t = String::new();
            for _ in 0..rng.below(8) {
                t.push_str(alphabet[rng.below(alphabet.len())]);
            }
            let _ = looks_like_regex(&t);
        }
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
