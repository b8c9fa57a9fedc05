//! Command waits. `run` types a command into the pane's shell and waits for
//! it to end; `output` returns what the pane wrote that a cursor has not
//! shown yet, waiting until there is something to return.
//!
//! `run` brackets the command with two escape sequences tmux does not draw
//! (see `vt::RUN_OSC`): the one before says where the command's output
//! starts, the one after where it ends and with which status. They travel in
//! the pane's byte stream, in order with the output, so the output is exactly
//! what lies between them (no prompt, no echo, no wrapper) and the status
//! needs no extra process, channel or option. The id in them is random per
//! call, so a program cannot forge the end of a command, and a run that timed
//! out leaves nothing a later run can mistake for its own.

use crate::clip::{ClipOptions, Lines, clip};
use crate::cursor::{self, Missed, Record};
use crate::engine::stream::StreamSource;
use crate::engine::{CursorRead, Setup};
use crate::error::{Error, Kind, Result};
use crate::pane::shell::{self, DEFAULT_PROMPTS, Reads};
use crate::pane::vt::{Item, Mark, RUN_OSC, RUN_TAG};
use crate::report::{ExitSource, InputOutcome, OutputReason, OutputResult, RunResult, seconds};
use crate::tmux::{PaneInfo, Socket, resolve_pane, resolve_pane_with};
use regex::Regex;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod follower;
mod foreground;
mod idle;
mod output;
mod run;
mod save;
mod typing;

pub use crate::tmux::protocol::quote;
use follower::*;
pub use follower::{exit_option, follow_run};
pub use output::output;
pub use run::run;
use save::Saver;
pub use typing::wrapper;
use typing::*;

/// The seed's cap on one `output` call.
pub const MAX_OUTPUT_TIMEOUT: Duration = Duration::from_secs(1500);
/// Commands longer than this are refused (they are typed as keys).
const MAX_COMMAND_BYTES: usize = 16 * 1024;
/// New output is gathered until the pane is quiet this long...
const SETTLE_QUIET: Duration = Duration::from_millis(20);
/// ...or this long after the first new line, whichever is first.
const SETTLE_MAX: Duration = Duration::from_millis(300);
/// Status files of runs nobody took are dropped after this long.
const STATUS_FILES_KEPT: Duration = Duration::from_secs(600);
/// While the stream cannot be read (polling after another program took
/// the pane's pipe), how often a run looks whether its shell is back.
const FALLBACK_LOOK: Duration = Duration::from_millis(100);
/// How long the pane stays quiet on an unfinished line before it is looked
/// at as a possible question (the program may not be reading yet when its
/// question arrives); each look that finds none waits five times longer,
/// up to `QUESTION_QUIET_MAX`, so a pane left on an unfinished line costs
/// next to nothing.
const QUESTION_QUIET: Duration = Duration::from_millis(40);
const QUESTION_QUIET_MAX: Duration = Duration::from_secs(5);
/// Text every wrapper typed by `run` contains; lines holding it are the echo
/// of a typed wrapper, never output.
const WRAPPER_SIGNATURE: &str = "7731;tmux-wait;";
/// How every wrapper ends (see [`typing::wrapper`]).
const WRAPPER_END: &str = ";unset _tmux_wait_status";

/// What a line that holds a typed wrapper says past its end: a typed line
/// that filled its last row exactly leaves the cursor on a row tmux takes
/// for its continuation, so the command's first line is joined to it.
/// None when nothing follows (the line is all echo).
fn past_wrapper(line: &str) -> Option<&str> {
    let i = line.rfind(WRAPPER_END)?;
    let rest = &line[i + WRAPPER_END.len()..];
    (!rest.trim().is_empty()).then_some(rest)
}
/// The rows a typed wrapper's echo left after a cursor saved while it was
/// still being typed (a `run` that timed out at once): the leading rows up
/// to the one that ends the wrapper of run `id`, and what follows the
/// wrapper on that row (output tmux joined to it). A shell's line editor
/// may break a long line into rows of its own, none of which need hold
/// the wrapper's signature; the rows are matched together, spaces aside (a
/// row's trailing space is trimmed). None when no such end is there.
fn wrapper_rows(rows: &[String], id: &str) -> Option<(usize, Option<String>)> {
    // A wrapper is at most MAX_COMMAND_BYTES and some: rows of 10 columns.
    const MOST_ROWS: usize = MAX_COMMAND_BYTES / 10;
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let end_mark = squash(&format!("{id};E;%d"));
    let end = squash(WRAPPER_END);
    let mut joined = String::new();
    for (i, row) in rows.iter().enumerate().take(MOST_ROWS) {
        joined.push_str(&squash(row));
        if let Some(m) = joined.find(&end_mark)
            && joined[m..].contains(&end)
        {
            return Some((i + 1, past_wrapper(row).map(str::to_owned)));
        }
    }
    None
}

/// What both subcommands share.
#[derive(Debug, Clone)]
pub struct Common {
    pub socket: Socket,
    pub target: Option<String>,
    pub cursor: String,
    pub timeout: Duration,
    pub clip: ClipOptions,
    pub save_to: Option<PathBuf>,
    /// An interactive program's prompt, in addition to the known ones.
    pub prompt: Option<Regex>,
}

#[derive(Debug, Clone)]
pub struct RunRequest {
    pub common: Common,
    pub command: String,
    pub force: bool,
    /// Type the line so that the shell keeps it in its history.
    pub history: bool,
}

#[derive(Debug, Clone)]
pub struct OutputRequest {
    pub common: Common,
    pub until: Option<Regex>,
    pub ndjson: bool,
    /// Do not return at each burst of output: gather until the end.
    pub until_finished: bool,
    /// Channel to signal once armed.
    pub ready: Option<String>,
}

/// What runs in the pane's foreground.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fg {
    /// The shell itself (at its prompt, or between the commands of a list).
    Shell,
    /// Another program: its name.
    Command(String),
    Unknown,
}

/// How a followed command ended.
#[derive(Debug, Clone, Copy)]
struct Finish {
    status: Option<i32>,
    source: ExitSource,
}

/// One pane followed through its stream, gathering lines.
struct Follow {
    src: StreamSource,
    socket: Socket,
    pane: PaneInfo,
    lines: Lines,
    /// How many of `lines` are only a prompt and what was typed at it: not
    /// output, so they alone never end a wait.
    echo_lines: usize,
    /// `--show`, so thinning keeps its matches.
    show: Option<Regex>,
    /// The pane's own program (its shell), to tell it from a command in
    /// the foreground where `/proc` cannot.
    shell_name: String,
    /// `output --until`, checked on each line as it arrives.
    until: Option<Regex>,
    until_hit: bool,
    /// The run whose end is awaited (ours, or one a cursor left pending).
    run: Option<String>,
    /// Keep only lines between that run's begin and end marks.
    run_only: bool,
    inside: bool,
    finished: Option<Finish>,
    saver: Option<Saver>,
    /// `prompt_re()`: made when first asked for (0.5–1 ms to compile, and
    /// most calls never ask), or at once when `--prompt` adds to it.
    prompt_re: std::cell::OnceCell<Regex>,
    /// Row and hash of the unfinished line last shown (it is not shown
    /// again while it stays as it is, where it is).
    shown_part: (i64, u64),
    /// The pane's cursor row (from the oldest history line) when the cursor
    /// was last saved.
    saved_abs: i64,
    /// How long the pane must stay quiet before its unfinished line is
    /// looked at (again) as a question (see [`Follow::question_quiet`]).
    question_after: Option<Duration>,
    /// The reply's lines are taken (the cursor was saved after them): what
    /// comes now is the next call's, and goes to --save-to only.
    lines_closed: bool,
    /// The server's state, where a run's status file is.
    store: Option<crate::state::Store>,
}

impl Follow {
    fn open(
        req: &Common,
        cursor_option: Option<String>,
        mark: Option<String>,
        deadline: Instant,
    ) -> Result<Follow> {
        // The cursor is read with the pane, by the same tmux client.
        let (pane, cursor) = match &cursor_option {
            Some(opt) => {
                let (pane, replies) = resolve_pane_with(&req.socket, req.target.as_deref(), |t| {
                    CursorRead::queries(t, opt)
                })?;
                (pane, Some(CursorRead::from_replies(&replies)?))
            }
            None => (resolve_pane(&req.socket, req.target.as_deref())?, None),
        };
        let setup = Setup {
            interval: Duration::from_millis(50),
            // (`output --ready` signals once it has looked at the pane.)
            ready: None,
            deadline: deadline.max(Instant::now() + Duration::from_secs(5)),
            final_lines: true,
            cursor,
            mark,
        };
        let src = StreamSource::open(&req.socket, &pane, &setup).map_err(|e| match e.kind {
            Kind::PipeBusy => Error::new(
                Kind::PipeBusy,
                format!(
                    "another program pipes pane {}'s output (pipe-pane), and run and output read the pane through a pipe of their own; tmux-wait leaves that pipe alone (text waits fall back to polling there)",
                    pane.pane_id
                ),
            ),
            _ => e,
        })?;
        let pane = src.pane().clone();
        let shell_name = shell::program_name(pane.pane_pid).unwrap_or_default();
        let prompt_re = std::cell::OnceCell::new();
        if let Some(extra) = &req.prompt {
            let re = Regex::new(&format!("{DEFAULT_PROMPTS}|(?:{})", extra.as_str()))
                .map_err(|e| Error::new(Kind::InvalidRegex, format!("invalid --prompt: {e}")))?;
            let _ = prompt_re.set(re);
        }
        Ok(Follow {
            src,
            socket: req.socket.clone(),
            pane,
            lines: Lines::default(),
            echo_lines: 0,
            show: req.clip.show.clone(),
            until: None,
            until_hit: false,
            shell_name,
            run: None,
            run_only: false,
            inside: false,
            finished: None,
            saver: None,
            prompt_re,
            shown_part: (-1, 0),
            saved_abs: -1,
            question_after: None,
            lines_closed: false,
            store: None,
        })
    }

    /// What a program's own prompt looks like (see `asks`).
    fn prompt_re(&self) -> &Regex {
        self.prompt_re
            .get_or_init(|| Regex::new(DEFAULT_PROMPTS).expect("default prompts are valid"))
    }

    /// Until when to wait for the next output, `deadline` at the latest:
    /// sooner when an unfinished line is due to be looked at as a question.
    fn question_quiet(&self, deadline: Instant) -> Instant {
        match self.question_after {
            Some(d) if self.src.tracker().has_partial() => deadline.min(Instant::now() + d),
            _ => deadline,
        }
    }

    /// The pane stayed quiet: is its unfinished line a question? If not,
    /// look again later, after a longer quiet.
    fn question_now(&mut self) -> Option<String> {
        let p = self.program_prompt();
        self.question_after = match (&p, self.question_after) {
            (None, Some(d)) => Some((d * 5).min(QUESTION_QUIET_MAX)),
            _ => None,
        };
        p
    }

    /// Until when to wait while the stream cannot say where a run ends:
    /// soon, to look whether its shell is back.
    fn fallback_quiet(&self, until: Instant) -> Instant {
        if self.src.fallback().is_some() && self.run.is_some() {
            until.min(Instant::now() + FALLBACK_LOOK)
        } else {
            until
        }
    }

    /// The stream stopped (another program took the pane's pipe, the hub
    /// went away), so the run's end mark may never come: the command ended
    /// when its shell reads a command line again, with the status the shell
    /// left in the run's file (unknown without it). Output polled since
    /// holds the shell's new prompt last: not the command's.
    fn fallback_end(&mut self) {
        if self.finished.is_some() || self.src.fallback().is_none() {
            return;
        }
        let Some(id) = self.run.clone() else {
            return;
        };
        // Polled rows carry no marks: what comes is the command's.
        self.inside = true;
        if !self.shell_prompt() {
            return;
        }
        let status = self.store.as_ref().and_then(|s| s.take_run_status(&id));
        if let Some(prompt) = self.cursor_row()
            && self
                .lines
                .lines
                .last()
                .is_some_and(|l| l.trim_end() == prompt.trim_end())
        {
            self.lines.lines.pop();
        }
        self.finished = Some(Finish {
            status,
            source: if status.is_some() {
                ExitSource::Wrapper
            } else {
                ExitSource::Shell
            },
        });
    }

    /// The row the pane's cursor is on, as tmux draws it now.
    fn cursor_row(&mut self) -> Option<String> {
        let t = self.pane.pane_id.clone();
        let y = self
            .src
            .query_all(&[typing::argv(&[
                "display-message",
                "-p",
                "-t",
                &t,
                "#{cursor_y}",
            ])])
            .ok()?;
        let y = y[0].first()?.trim().to_owned();
        let row = self
            .src
            .query_all(&[typing::argv(&[
                "capture-pane",
                "-p",
                "-t",
                &t,
                "-S",
                &y,
                "-E",
                &y,
            ])])
            .ok()?;
        row[0].first().cloned()
    }

    /// The shell reads a command line again, so what ran ended: with the
    /// status OSC 133 gave (`osc133`), else, for a run, the one its
    /// follower or its shell left (it may have ended just now, between two
    /// looks), else unknown (`shell`).
    fn ended_at_prompt(&mut self, osc133: Option<i32>) -> Finish {
        if osc133.is_some() {
            return Finish {
                status: osc133,
                source: ExitSource::Osc133,
            };
        }
        if let Some(id) = self.run.clone() {
            let option = self
                .src
                .query_all(&[typing::argv(&[
                    "show-options",
                    "-pqv",
                    "-t",
                    &self.pane.pane_id,
                    &exit_option(&id),
                ])])
                .ok()
                .and_then(|r| r[0].first().cloned())
                .filter(|v| !v.is_empty());
            let file = self.store.as_ref().and_then(|s| s.take_run_status(&id));
            if let Some(status) = option.map(|v| v.trim().parse().ok()).or(file.map(Some)) {
                return Finish {
                    status,
                    source: ExitSource::Wrapper,
                };
            }
        }
        Finish {
            status: None,
            source: ExitSource::Shell,
        }
    }

    /// Output arrived: a question may come with it.
    fn output_came(&mut self) {
        self.question_after = Some(QUESTION_QUIET);
    }

    /// Lines were gathered that a program wrote (not only prompts and
    /// typed text).
    fn has_output(&self) -> bool {
        self.lines.len() > self.echo_lines
    }

    /// Take the gathered lines, for a reply.
    fn take_lines(&mut self) -> Lines {
        self.echo_lines = 0;
        std::mem::take(&mut self.lines)
    }

    /// Take lines and marks in; returns how many lines were added.
    fn absorb(&mut self, items: Vec<Item>) -> usize {
        let mut fresh: Vec<String> = Vec::new();
        let before = self.lines.len();
        for item in items {
            match item {
                Item::Line(c) => {
                    let mut line = c.line();
                    if line.contains(WRAPPER_SIGNATURE) {
                        match past_wrapper(line) {
                            Some(rest) => line = rest,
                            None => continue,
                        }
                    }
                    if self.run_only && !self.inside {
                        continue;
                    }
                    if self.finished.is_some() && self.run_only {
                        continue;
                    }
                    if self.saver.is_some() {
                        fresh.push(line.to_owned());
                    }
                    if self.lines_closed {
                        continue;
                    }
                    // A statement typed at a REPL's prompt (`>>> print(1)`):
                    // neither output nor context. (A command typed at the
                    // shell's prompt comes back as its line, for context.)
                    if c.rendered.is_some() && self.prompt_re().is_match(c.text.trim()) {
                        continue;
                    }
                    // (Matched without typed echo: a line that is only a
                    // prompt and what was typed at it is no answer.)
                    if !c.prompt && self.until.as_ref().is_some_and(|re| re.is_match(&c.text)) {
                        self.until_hit = true;
                    }
                    if c.prompt {
                        self.echo_lines += 1;
                    }
                    self.lines.push(line.to_owned(), self.show.as_ref());
                }
                Item::Mark(Mark::RunBegin(id)) => {
                    if self.run.as_deref() == Some(id.as_str()) {
                        self.inside = true;
                    }
                }
                Item::Mark(Mark::RunEnd(id, status)) => {
                    let ours = self.run.as_deref() == Some(id.as_str());
                    if ours {
                        self.inside = false;
                    }
                    if ours || !self.run_only {
                        self.finished.get_or_insert(Finish {
                            status,
                            source: ExitSource::Wrapper,
                        });
                    }
                }
                Item::Mark(Mark::CommandDone(status)) if !self.run_only => {
                    self.finished.get_or_insert(Finish {
                        status,
                        source: ExitSource::Osc133,
                    });
                }
                Item::Mark(Mark::CommandDone(_) | Mark::Agent(..)) => {}
            }
        }
        if let Some(s) = &mut self.saver
            && !fresh.is_empty()
        {
            s.write(&fresh);
        }
        self.lines.len().saturating_sub(before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_joined_to_a_full_typed_line_is_kept() {
        let w = typing::wrapper("ab12", "echo after", false, None, false);
        assert!(w.ends_with(WRAPPER_END));
        assert_eq!(past_wrapper(&format!("$ {w}after")), Some("after"));
        assert_eq!(past_wrapper(&format!("$ {w}")), None);
        assert_eq!(past_wrapper(&format!("$ {w}  ")), None);
        let z = typing::wrapper("ab12", "echo after", true, Some("/s"), true);
        assert!(z.ends_with(WRAPPER_END));
    }

    /// The short line typed when the wrapper is read from a file is known
    /// as a wrapper's echo as the typed wrapper is: by its signature and
    /// end, both in the file's name and what follows it.
    #[test]
    fn the_line_that_reads_the_wrapper_is_known_as_one() {
        let path = format!("/tmp/it's/{}", typing::script_name("abc123"));
        let line = format!("$ {}", sourced(&path));
        assert!(line.contains(WRAPPER_SIGNATURE), "{line}");
        assert_eq!(past_wrapper(&line), None);
        assert_eq!(past_wrapper(&format!("{line}hi")), Some("hi"));
        let rows: Vec<String> = line
            .chars()
            .collect::<Vec<_>>()
            .chunks(30)
            .map(|c| c.iter().collect())
            .collect();
        assert_eq!(wrapper_rows(&rows, "abc123"), Some((rows.len(), None)));
        assert_eq!(wrapper_rows(&rows, "other"), None);
    }

    #[test]
    fn a_wrappers_rows_are_found_however_they_were_cut() {
        let w = wrapper(
            "abc123",
            "for i in 1 2; do echo L$i; done",
            false,
            Some("/tmp/x"),
            true,
        );
        let text = format!("% {w}");
        let rows = |cut: usize| -> Vec<String> {
            let chars: Vec<char> = text.chars().collect();
            let mut rows: Vec<String> = chars
                .chunks(cut)
                .map(|c| c.iter().collect::<String>().trim_end().to_owned())
                .collect();
            rows.push("L1".into());
            rows.push("L2".into());
            rows
        };
        for cut in [7, 20, 31, 100] {
            let r = rows(cut);
            // Any tail of the echo, down to the row that holds the end
            // mark: the rows up to the wrapper's end are echo.
            let n = r.len() - 2;
            for start in 0..n {
                let tail = &r[start..];
                let before_end = tail[..tail.len() - 2]
                    .iter()
                    .map(|l| l.replace(' ', ""))
                    .collect::<String>();
                if !before_end.contains("abc123;E;%d") {
                    continue;
                }
                assert_eq!(
                    wrapper_rows(tail, "abc123"),
                    Some((n - start, None)),
                    "cut {cut}, from row {start}"
                );
            }
        }
        // Another run's wrapper, or none, is not this run's.
        assert_eq!(wrapper_rows(&rows(31), "other"), None);
        assert_eq!(wrapper_rows(&["L1".into(), "L2".into()], "abc123"), None);
        // Output tmux joined to the wrapper's last row stays.
        let joined = vec![format!("% {w}first line")];
        assert_eq!(
            wrapper_rows(&joined, "abc123"),
            Some((1, Some("first line".into())))
        );
    }

    #[test]
    fn wrapper_quotes_the_command_once() {
        let w = wrapper("ab12", "echo 'it''s' \"$HOME\"; ls", false, None, false);
        assert!(w.starts_with(" command printf '\\033]7731;tmux-wait;ab12;B\\007';eval "));
        assert!(wrapper("ab12", "ls", true, None, false).starts_with("command printf"));
        assert!(w.contains(r#"eval 'echo '\''it'\'''\''s'\'' "$HOME"; ls';"#));
        assert!(w.ends_with(
            r#"command printf '\033]7731;tmux-wait;ab12;E;%d\007' "$_tmux_wait_status";unset _tmux_wait_status"#
        ));
        assert!(w.contains(WRAPPER_SIGNATURE));
        // The status file before the end mark; zsh's builtin printf.
        let w = wrapper("ab12", "ls", false, Some("/d/it's/run-ab12.status"), true);
        assert!(
            w.contains(r#";builtin printf %d "$_tmux_wait_status" 2>/dev/null >'/d/it'\''s/run-ab12.status';builtin printf '\033]7731;tmux-wait;ab12;E"#),
            "{w}"
        );
        assert!(!w.contains("command printf"), "{w}");
    }

    #[test]
    fn commands_must_be_one_plain_line() {
        assert!(validate_command("make test").is_ok());
        for bad in ["", "  ", "a\nb", "a\rb", "a\tb", "a\0b", "a\x1bb"] {
            assert!(validate_command(bad).is_err(), "{bad:?}");
        }
        assert!(validate_command(&"x".repeat(MAX_COMMAND_BYTES + 1)).is_err());
    }

    #[test]
    fn default_prompts() {
        let re = Regex::new(DEFAULT_PROMPTS).unwrap();
        for p in [
            ">>>",
            "...",
            "(gdb)",
            "(Pdb)",
            "In [3]:",
            "irb(main):001:0>",
            "postgres=#",
            "sqlite>",
            ">",
        ] {
            assert!(re.is_match(p), "{p}");
        }
        for p in ["$", "building...", "> done", "a >>>"] {
            assert!(!re.is_match(p), "{p}");
        }
    }
}
