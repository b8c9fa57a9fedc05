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
use crate::engine::Setup;
use crate::engine::shell;
use crate::engine::stream::StreamSource;
use crate::engine::vt::{Item, Mark, RUN_OSC, RUN_TAG};
use crate::error::{Error, Kind, Result};
use crate::report::{OutputResult, RunResult, seconds};
use crate::tmux::{PaneInfo, Socket, resolve_pane};
use regex::Regex;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The seed's cap on one `output` call.
pub const MAX_OUTPUT_TIMEOUT: Duration = Duration::from_secs(1500);
/// Commands longer than this are refused (they are typed as keys).
const MAX_COMMAND_BYTES: usize = 16 * 1024;
/// New output is gathered until the pane is quiet this long...
const SETTLE_QUIET: Duration = Duration::from_millis(20);
/// ...or this long after the first new line, whichever is first.
const SETTLE_MAX: Duration = Duration::from_millis(300);
/// Text every wrapper typed by `run` contains; lines holding it are the echo
/// of a typed wrapper, never output.
const WRAPPER_SIGNATURE: &str = "7731;tmux-wait;";
/// Interactive programs' prompts, matched against the unfinished last line
/// (trailing spaces removed).
const DEFAULT_PROMPTS: &str = r"^(>>>|\.\.\.|\(gdb\)|\(Pdb\)|\(lldb\)|\(dlv\)|In \[\d+\]:|irb\([^)]*\):\d+:\d+[>*]|sqlite>|mysql>|MariaDB \[[^\]]*\]>|[\w-]+[=-][#>]|>|\?)$";

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
}

#[derive(Debug, Clone)]
pub struct OutputRequest {
    pub common: Common,
    pub until: Option<Regex>,
    pub ndjson: bool,
    /// Channel to signal once armed.
    pub ready: Option<String>,
}

/// Appends output lines to `--save-to`, remembering the first failure
/// instead of ending the wait.
struct Saver {
    file: Option<File>,
    path: PathBuf,
    error: Option<String>,
}

impl Saver {
    fn open(path: &PathBuf, truncate: bool) -> Result<Saver> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(truncate)
            .append(!truncate)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::io(&format!("cannot write --save-to {}", path.display()), e))?;
        Ok(Saver {
            file: Some(file),
            path: path.clone(),
            error: None,
        })
    }

    fn write(&mut self, lines: &[String]) {
        let Some(f) = &mut self.file else {
            return;
        };
        let mut buf = Vec::new();
        for l in lines {
            buf.extend_from_slice(l.as_bytes());
            buf.push(b'\n');
        }
        if let Err(e) = f.write_all(&buf).and_then(|_| f.flush()) {
            let msg = format!("writing {} failed: {e}", self.path.display());
            eprintln!("tmux-wait: {msg}; the wait goes on without saving");
            self.error = Some(msg);
            self.file = None;
        }
    }
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
    source: &'static str,
}

/// One pane followed through its stream, gathering lines.
struct Follow {
    src: StreamSource,
    socket: Socket,
    pane: PaneInfo,
    lines: Lines,
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
    prompt_re: Regex,
    /// Row and hash of the unfinished line last shown (it is not shown
    /// again while it stays as it is, where it is).
    shown_part: (i64, u64),
    /// The pane's cursor row (from the oldest history line) when the cursor
    /// was last saved.
    saved_abs: i64,
}

impl Follow {
    fn open(
        req: &Common,
        cursor_option: Option<String>,
        ready: Option<String>,
        mark: Option<String>,
        deadline: Instant,
    ) -> Result<Follow> {
        let pane = resolve_pane(&req.socket, req.target.as_deref())?;
        let setup = Setup {
            interval: Duration::from_millis(50),
            ready,
            deadline: deadline.max(Instant::now() + Duration::from_secs(5)),
            final_lines: true,
            cursor_option,
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
        let prompt_re = match &req.prompt {
            Some(extra) => Regex::new(&format!("{DEFAULT_PROMPTS}|(?:{})", extra.as_str()))
                .map_err(|e| Error::new(Kind::InvalidRegex, format!("invalid --prompt: {e}")))?,
            None => Regex::new(DEFAULT_PROMPTS).expect("default prompts are valid"),
        };
        Ok(Follow {
            src,
            socket: req.socket.clone(),
            pane,
            lines: Lines::default(),
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
        })
    }

    /// Take lines and marks in; returns how many lines were added.
    fn absorb(&mut self, items: Vec<Item>) -> usize {
        let mut fresh: Vec<String> = Vec::new();
        let before = self.lines.len();
        for item in items {
            match item {
                Item::Line(c) => {
                    let line = c.line();
                    if line.contains(WRAPPER_SIGNATURE) || (self.run_only && !self.inside) {
                        continue;
                    }
                    if self.finished.is_some() && self.run_only {
                        continue;
                    }
                    if self.saver.is_some() {
                        fresh.push(line.to_owned());
                    }
                    if self.until.as_ref().is_some_and(|re| re.is_match(line)) {
                        self.until_hit = true;
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
                            source: "wrapper",
                        });
                    }
                }
                Item::Mark(Mark::CommandDone(status)) if !self.run_only => {
                    self.finished.get_or_insert(Finish {
                        status,
                        source: "osc133",
                    });
                }
                Item::Mark(Mark::CommandDone(_)) => {}
            }
        }
        if let Some(s) = &mut self.saver
            && !fresh.is_empty()
        {
            s.write(&fresh);
        }
        self.lines.len().saturating_sub(before)
    }

    /// What runs in the pane's foreground now: from `/proc` (Linux), else
    /// from tmux's `#{pane_current_command}` against the shell's name.
    fn foreground(&mut self) -> Fg {
        let pid = self.pane.pane_pid;
        if shell::proc_available() {
            return match shell::shell_in_foreground(pid) {
                Some(true) => Fg::Shell,
                Some(false) => Fg::Command(shell::foreground_command(pid).unwrap_or_default()),
                None => Fg::Unknown,
            };
        }
        let asked = self.src.query_all(&[argv(&[
            "display-message",
            "-p",
            "-t",
            &self.pane.pane_id,
            "#{pane_current_command}",
        ])]);
        let cmd = match asked {
            Ok(r) => r[0].first().cloned().unwrap_or_default(),
            Err(_) => return Fg::Unknown,
        };
        if cmd.is_empty() || self.shell_name.is_empty() {
            Fg::Unknown
        } else if cmd == self.shell_name {
            Fg::Shell
        } else {
            Fg::Command(cmd)
        }
    }

    /// The unfinished line is an interactive program's prompt: it matches,
    /// and stays so while the pane is quiet for a moment (a prompt can
    /// arrive in pieces: `>` then `>> `).
    fn program_prompt(&mut self) -> Option<String> {
        let looks = |f: &mut Follow| {
            if !f.src.tracker().has_partial() || f.foreground() == Fg::Shell {
                return None;
            }
            let line = f.src.tracker().current_line();
            (line.len() < 512 && f.prompt_re.is_match(&line)).then_some(line)
        };
        looks(self)?;
        // Quiet for a moment, and the program asleep (waiting for input,
        // not still writing its prompt: `>` then `>> ` on a busy machine).
        let patience = Instant::now() + Duration::from_millis(300);
        loop {
            self.drain(Duration::from_millis(15));
            if self.finished.is_some() {
                return None;
            }
            if shell::foreground_running(self.pane.pane_pid) != Some(true)
                || Instant::now() >= patience
            {
                return looks(self);
            }
        }
    }

    /// Take in what arrives until the pane is quiet for `quiet` (at most
    /// ten times that); errors are left for the next batch to meet.
    fn drain(&mut self, quiet: Duration) {
        let stop = Instant::now() + quiet * 10;
        loop {
            match self.src.next_items((Instant::now() + quiet).min(stop)) {
                Ok(Some(items)) => self.absorb(items),
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    let socket = self.socket.clone();
                    self.finished = Some(self.pane_end(&socket, &e));
                    return;
                }
                _ => return,
            };
            if Instant::now() >= stop {
                return;
            }
        }
    }

    /// Gather more output until the pane is quiet for a moment (or the
    /// batch is old enough), so one reply holds one burst of output.
    fn settle(&mut self, deadline: Instant) -> Result<()> {
        let stop = (Instant::now() + SETTLE_MAX).min(deadline);
        loop {
            let now = Instant::now();
            if now >= stop || self.finished.is_some() {
                return Ok(());
            }
            match self.src.next_items((now + SETTLE_QUIET).min(stop)) {
                Ok(Some(items)) => {
                    self.absorb(items);
                }
                Ok(None) => return Ok(()),
                // The pane went: that is how the command ended.
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    let socket = self.socket.clone();
                    self.finished = Some(self.pane_end(&socket, &e));
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The pane went away, its program exited, or it was respawned (`e`
    /// says which): how the followed command ended.
    fn pane_end(&self, socket: &Socket, e: &Error) -> Finish {
        if e.kind == Kind::PaneRespawned {
            return Finish {
                status: None,
                source: "respawned",
            };
        }
        let fmt = "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}";
        // tmux marks the pane dead when its terminal closes and learns the
        // status when it reaps the process, a moment later; tmux 3.3a also
        // loses it now and then (2 pane deaths in 30, without tmux-wait):
        // then there is none to wait for.
        let patience = Instant::now() + Duration::from_millis(300);
        while let Ok(lines) = socket.run(["display-message", "-p", "-t", &self.pane.pane_id, fmt]) {
            let line = lines.first().cloned().unwrap_or_default();
            let f: Vec<&str> = line.split('\t').collect();
            if f.first() != Some(&self.pane.pane_id.as_str()) || f.get(1) != Some(&"1") {
                break;
            }
            let status = f.get(2).and_then(|s| s.parse::<i32>().ok()).or_else(|| {
                // Killed by a signal: report it as a shell would.
                f.get(3)
                    .and_then(|s| s.parse::<i32>().ok())
                    .map(|sig| 128 + sig)
            });
            if status.is_some() || Instant::now() >= patience {
                return Finish {
                    status,
                    source: "pane_dead",
                };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Finish {
            status: None,
            source: "pane_closed",
        }
    }

    /// Save the cursor at the pane's cursor row, after taking in what the
    /// pane wrote up to that moment. `partial` is the unfinished line if it
    /// was shown; `pending` a run whose end was not seen.
    fn save_cursor(
        &mut self,
        socket: &Socket,
        name: &str,
        show_partial: bool,
        pending: Option<String>,
    ) -> Result<Option<String>> {
        let t = self.pane.pane_id.clone();
        let deadline = Instant::now() + Duration::from_secs(5);
        let fmt = "#{pane_id}\t#{pane_pid}\t#{history_size}\t#{cursor_y}\t#{pane_height}";
        // Taken where the stream stands (on a pane that keeps writing, as
        // close to it as a few attempts get: see docs/limits.md).
        let (replies, _) = self.src.aligned_query(
            &[
                argv(&["display-message", "-p", "-t", &t, fmt]),
                argv(&["capture-pane", "-p", "-t", &t, "-S", "-2", "-E", "-"]),
            ],
            deadline,
        )?;
        // Output up to the replies is in the grid they describe.
        let items = self.src.take_items();
        // (lines after a finish are the next prompt's: not taken)
        self.absorb(items);
        // What came meanwhile may have ended the command (its end mark) and
        // put the shell's prompt on the unfinished line: not output.
        let partial = if show_partial && self.finished.is_none() && !self.src.tracker().at_prompt()
        {
            let p = self.src.tracker().current_line();
            (!p.is_empty()).then_some(p)
        } else {
            None
        };
        let (id, f) = crate::engine::pane_fields(&replies[0]);
        if id != self.pane.pane_id || f.len() < 4 {
            return Ok(partial);
        }
        let (pid, history, cy, height) = (f[0], f[1].max(0), f[2].max(0), f[3].max(1));
        let rows = &replies[1];
        let offset = rows.len() as i64 - height;
        let row = |y: i64| -> &str {
            usize::try_from(offset + y)
                .ok()
                .and_then(|i| rows.get(i))
                .map(String::as_str)
                .unwrap_or("")
        };
        self.saved_abs = history + cy;
        let rec = Record {
            pid: u32::try_from(pid).unwrap_or(0),
            abs: history + cy,
            fp: cursor::fingerprint(row(cy - 2), row(cy - 1)),
            part: partial
                .as_deref()
                .map(|p| cursor::hash_text(&[p]))
                .unwrap_or(0),
            run: pending,
            history_size: history,
            head: cursor::head(row(cy)),
            busy: matches!(self.foreground(), Fg::Command(_)),
            saved: crate::state::now_secs(),
        };
        socket.run([
            "set-option",
            "-p",
            "-t",
            &self.pane.pane_id,
            &cursor::option_name(name),
            &rec.format(),
        ])?;
        Ok(partial)
    }
}

/// The command line `run` types: the command itself goes through `eval` in
/// single quotes, so the shell parses it once, as typed, and `cd`/`export`
/// stay in the shell.
pub fn wrapper(id: &str, command: &str) -> String {
    let mark = |what: &str| format!("'\\033]{RUN_OSC};{RUN_TAG};{id};{what}\\007'");
    format!(
        " command printf {};eval {};command printf {} \"$?\"",
        mark("B"),
        sh_quote(command),
        mark("E;%d")
    )
}

pub use crate::tmux::protocol::sh_quote;

/// A tmux command's arguments.
fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

fn validate_command(command: &str) -> Result<()> {
    if command.trim().is_empty() {
        return Err(Error::usage("the command is empty"));
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(Error::usage(format!(
            "the command is {} bytes; at most {MAX_COMMAND_BYTES} are typed (put it in a script)",
            command.len()
        )));
    }
    if let Some(c) = command.chars().find(|c| c.is_control()) {
        return Err(Error::usage(format!(
            "the command must be one line without control characters (found {:?}); put longer scripts in a file",
            c
        )));
    }
    Ok(())
}

/// A lock held from the prompt check until the command has started, so two
/// runs cannot type into one prompt at once.
fn pane_lock(socket: &Socket, pane: &str, deadline: Instant) -> Result<Option<File>> {
    // One lock for the server's runs (held for the few milliseconds of
    // typing): no file per pane to leave behind.
    match crate::tmux::lock_beside_socket(socket, "tmux-wait-run-lock", true, deadline) {
        crate::tmux::SocketLock::Held(f) => Ok(Some(f)),
        crate::tmux::SocketLock::Unavailable => Ok(None),
        crate::tmux::SocketLock::TimedOut => Err(Error::new(
            Kind::Busy,
            format!("another tmux-wait run is typing into pane {pane}"),
        )),
    }
}

pub fn run(req: &RunRequest) -> Result<RunResult> {
    let start = Instant::now();
    let c = &req.common;
    let deadline = start + c.timeout;
    validate_command(&req.command)?;
    let mut f = Follow::open(c, None, None, None, deadline)?;
    let pane_id = f.pane.pane_id.clone();
    // Held until the command has started: then the prompt is no longer
    // there for another run to type into.
    let mut lock = pane_lock(&c.socket, &pane_id, Instant::now() + Duration::from_secs(2))?;
    // The check is made on the state after the lock: re-read it.
    let mode = f.src.query_all(&[argv(&[
        "display-message",
        "-p",
        "-t",
        &pane_id,
        "#{pane_in_mode}\t#{alternate_on}",
    ])])?;
    let mode = mode[0].first().cloned().unwrap_or_default();
    if mode.starts_with('1') {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!("pane {pane_id} is in copy mode; leave it (q) first"),
        ));
    }
    if mode.ends_with('1') {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!("pane {pane_id} shows a full-screen program, not a shell prompt"),
        ));
    }
    let shell_name = f.shell_name.clone();
    if !shell_name.is_empty() && !shell::POSIX_SHELLS.contains(&shell_name.as_str()) {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!(
                "pane {pane_id} runs {shell_name}, not a POSIX shell (bash, zsh, sh, dash, ksh); run types POSIX syntax"
            ),
        ));
    }
    if let Fg::Command(cmd) = f.foreground() {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!(
                "pane {pane_id} is not at a shell prompt: {cmd} is running (follow it with tmux-wait output)"
            ),
        ));
    }
    let (before, after) = f.src.tracker().split_at_cursor();
    let typed = shell::unsubmitted_text(&before, &after);
    if let Some(t) = &typed
        && !req.force
    {
        return Err(Error::new(
            Kind::NotAtPrompt,
            format!(
                "pane {pane_id} has unsubmitted text at its prompt ({:?}); not typing over it (--force clears the line first)",
                crate::report::sanitize(&t.chars().take(60).collect::<String>())
            ),
        ));
    }
    // Opened (and emptied) only once the command will be typed.
    f.saver = match &c.save_to {
        Some(p) => Some(Saver::open(p, true)?),
        None => None,
    };
    let id = crate::state::random_id();
    f.run = Some(id.clone());
    f.run_only = true;
    let mut keys: Vec<String> = Vec::new();
    if typed.is_some() {
        // Emacs-mode readline and zle: end of line, kill to its start.
        for k in ["C-e", "C-u"] {
            keys.extend([
                "send-keys".into(),
                "-t".into(),
                pane_id.clone(),
                k.into(),
                ";".into(),
            ]);
        }
    }
    keys.extend([
        "send-keys".into(),
        "-t".into(),
        pane_id.clone(),
        "-l".into(),
        "--".into(),
        wrapper(&id, &req.command),
        ";".into(),
        "send-keys".into(),
        "-t".into(),
        pane_id.clone(),
        "Enter".into(),
    ]);
    c.socket.run(&keys)?;

    let mut prompt = None;
    let mut died = None;
    let mut timed_out = false;
    let mut interrupted = None;
    loop {
        match f.src.next_items(deadline) {
            Ok(Some(items)) => {
                f.absorb(items);
                if f.inside {
                    // Started: the prompt is no longer ours to guard.
                    lock.take();
                }
                if f.finished.is_some() {
                    break;
                }
                if f.inside
                    && let Some(p) = f.program_prompt()
                {
                    prompt = Some(p);
                    break;
                }
            }
            Ok(None) => {
                timed_out = true;
                break;
            }
            Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                died = Some(f.pane_end(&c.socket, &e));
                break;
            }
            // Stopped by a signal (Ctrl-C, a client cancelling): the
            // command goes on in the pane, as after a timeout.
            Err(e) if matches!(e.kind, Kind::Interrupted(_)) => {
                interrupted = Some(e);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    drop(lock);
    if f.finished.is_none() && died.is_none() {
        handoff(&mut f, c, &id);
    }
    if let Some(e) = interrupted {
        // Whatever `output` reads next starts after what was taken in.
        let pending = f.finished.is_none().then(|| id.clone());
        let _ = f.save_cursor(&c.socket, &c.cursor, false, pending);
        return Err(e);
    }
    let finish = f.finished.or(died);
    let pending = finish.is_none().then(|| id.clone());
    let pane_gone =
        finish.is_some_and(|x| matches!(x.source, "pane_dead" | "pane_closed" | "respawned"));
    if !pane_gone {
        // The partial line of a stopped or timed-out command is shown.
        let show_partial = finish.is_none();
        if let Some(p) = f.save_cursor(&c.socket, &c.cursor, show_partial, pending)?
            && f.inside
        {
            let show = f.show.clone();
            f.lines.push(p, show.as_ref());
        }
    }
    let mut clipped = clip(&f.lines.lines, &c.clip);
    clipped.clipped += f.lines.thinned;
    Ok(RunResult {
        pane_id,
        exit_status: finish.and_then(|x| x.status),
        timed_out,
        elapsed_seconds: seconds(start.elapsed()),
        output_truncated: clipped.clipped > 0,
        output_truncated_lines: clipped.clipped,
        output: clipped.lines,
        effective_timeout: seconds(c.timeout),
        finished: finish.is_some(),
        exit_source: finish.map(|x| x.source),
        prompt,
        cursor: c.cursor.clone(),
        save_error: f.saver.and_then(|s| s.error),
    })
}

/// The command goes on after `run` returns: start a follower that keeps
/// --save-to up to date and records the exit status for `output`, and hand
/// over to it without a gap or an overlap. The follower joins the pane's
/// stream at the hub with a token, and the hub puts that token into this
/// wait's stream at the point the follower's starts: what comes before it
/// is ours, everything after is the follower's.
fn handoff(f: &mut Follow, c: &Common, id: &str) {
    let token = crate::state::random_id();
    let mut args = vec![
        "follow-run",
        "-t",
        f.pane.pane_id.as_str(),
        "--id",
        id,
        "--mark",
        token.as_str(),
    ];
    let save = c.save_to.as_ref().map(|p| p.to_string_lossy().into_owned());
    if let Some(p) = &save {
        args.extend(["--save-to", p.as_str()]);
    }
    let pid = match c.socket.spawn_helper(&args, "a run follower") {
        Ok(pid) => pid,
        Err(e) => {
            eprintln!("tmux-wait: {e}; --save-to and the exit status stop here");
            return;
        }
    };
    let joined = f
        .src
        .until_mark(&token, Instant::now() + Duration::from_secs(5));
    let items = f.src.take_items();
    f.absorb(items);
    if !matches!(joined, Ok(true)) {
        // No handoff: stop the follower.
        crate::state::terminate(pid);
        eprintln!(
            "tmux-wait: the run follower did not start; --save-to and the exit status stop here"
        );
    } else if f.finished.is_some() {
        // The command ended while handing over: the follower has nothing
        // to wait for.
        crate::state::terminate(pid);
    } else {
        // From here the follower writes the file.
        f.saver = None;
    }
}

/// At entry, for a run a cursor left pending: its end mark (arriving now),
/// the status its follower stored, or the shell back at its prompt.
fn pending_run_status(f: &mut Follow, socket: &Socket, id: &str) -> Result<()> {
    let ask = argv(&[
        "show-options",
        "-pqv",
        "-t",
        &f.pane.pane_id,
        &exit_option(id),
    ]);
    // The follower writes the status a few milliseconds after the end mark;
    // while it lives, give it that long.
    let patience = Instant::now() + Duration::from_secs(2);
    loop {
        // Looked at before the option: a follower gone by then has written
        // it already, if it ever will.
        let alive = follower_alive(id);
        let v = f.src.query_all(std::slice::from_ref(&ask))?;
        // Output that came meanwhile may hold the end mark itself.
        let items = f.src.take_items();
        f.absorb(items);
        if f.finished.is_some() {
            return Ok(());
        }
        let v = v[0].first().cloned().unwrap_or_default();
        if !v.is_empty() {
            let _ = socket.run(["set-option", "-pu", "-t", &f.pane.pane_id, &exit_option(id)]);
            f.finished = Some(Finish {
                status: v.trim().parse().ok(),
                source: "wrapper",
            });
            return Ok(());
        }
        if f.foreground() != Fg::Shell {
            // Still running: its end mark will come.
            return Ok(());
        }
        if !alive || Instant::now() >= patience {
            f.finished = Some(Finish {
                status: None,
                source: "unobserved",
            });
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The exit status tmux 3.8+ keeps for the last command a shell marked
/// with OSC 133 (`#{pane_command_status}`), if that command ended at or
/// after `since` (Unix seconds) and none runs now. None on older tmux,
/// without marks, or for an older command.
fn command_status_since(socket: &Socket, pane: &str, since: u64) -> Option<i32> {
    if since == 0
        || socket
            .version()
            .is_none_or(|v| v < crate::tmux::Version(3, 8))
    {
        return None;
    }
    let fmt = "#{pane_command_status}\t#{pane_command_end_time}\t#{pane_command_running}";
    let line = socket
        .run(["display-message", "-p", "-t", pane, fmt])
        .ok()?
        .into_iter()
        .next()?;
    let f: Vec<&str> = line.split('\t').collect();
    let (status, end, running) = (f.first()?, f.get(1)?, f.get(2)?);
    let end: u64 = end.parse().ok()?;
    (*running != "1" && end >= since).then(|| status.parse().ok())?
}

/// Is the follower of run `id` still running? (Linux `/proc`.)
fn follower_alive(id: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            args.contains(&&b"follow-run"[..]) && args.contains(&id.as_bytes())
        })
    })
}

/// The option a run follower leaves the exit status of run ID in.
pub fn exit_option(id: &str) -> String {
    format!("@tmux-wait-exit-{id}")
}

/// `tmux-wait follow-run`: started by a `run` that returned before its
/// command ended; follows the pane until the command's end mark, appending
/// its output to --save-to, then stores the status for `output`.
pub fn follow_run(common: &Common, id: &str, mark: Option<String>) -> Result<()> {
    let deadline = Instant::now() + common.timeout;
    let mut f = Follow::open(common, None, None, mark, deadline)?;
    // Listed by `tmux-wait list` (kind "run"), ended by `tmux-wait cancel`.
    let store = crate::waits::watch::store_for(&common.socket)?;
    let watch_id = crate::state::new_id();
    store.add(&crate::state::WatchRecord {
        id: watch_id.clone(),
        pid: std::process::id(),
        pane_id: f.pane.pane_id.clone(),
        kind: "run".into(),
        label: format!("the end of a command typed by run (follower of {id})"),
        started: crate::state::now_secs(),
        timeout_seconds: common.timeout.as_secs_f64(),
        channel: String::new(),
    })?;
    let result = follow_run_loop(&mut f, common, id, deadline);
    store.remove(&watch_id);
    result
}

fn follow_run_loop(f: &mut Follow, common: &Common, id: &str, deadline: Instant) -> Result<()> {
    f.run = Some(id.to_owned());
    f.run_only = true;
    f.inside = true;
    f.saver = match &common.save_to {
        Some(p) => Some(Saver::open(p, false)?),
        None => None,
    };
    loop {
        match f.src.next_items(deadline)? {
            Some(items) => {
                f.absorb(items);
                if let Some(fin) = f.finished {
                    let status = fin.status.map(|s| s.to_string()).unwrap_or_default();
                    common.socket.run([
                        "set-option",
                        "-p",
                        "-t",
                        &f.pane.pane_id,
                        &exit_option(id),
                        &status,
                    ])?;
                    return Ok(());
                }
            }
            None => return Ok(()),
        }
    }
}

pub fn output(req: &OutputRequest, mut emit: impl FnMut(&OutputResult)) -> Result<OutputResult> {
    let start = Instant::now();
    let c = &req.common;
    let deadline = start + c.timeout;
    let saver = match &c.save_to {
        Some(p) => Some(Saver::open(p, false)?),
        None => None,
    };
    let option = cursor::option_name(&c.cursor);
    let mut f = Follow::open(c, Some(option), req.ready.clone(), None, deadline)?;
    f.saver = saver;
    let pid = f.pane.pane_pid;
    let rec = Record::parse(f.src.cursor_value());
    let geometry = f.src.geometry();
    let whole = f.src.history_from() == 0;
    let mut located = cursor::locate(
        rec.as_ref(),
        f.src.history(),
        f.src.history_from(),
        &geometry,
        whole,
    );
    if located.is_none() {
        f.src
            .rebaseline_all(Instant::now() + Duration::from_secs(10))?;
        located = cursor::locate(rec.as_ref(), f.src.history(), 0, &f.src.geometry(), true);
    }
    let located = located.expect("a whole capture always locates");
    let respawned = rec.as_ref().is_some_and(|r| r.pid != pid);
    let (lines_missed, exact, cleared) = match located.missed {
        Missed::None => (0, true, false),
        Missed::Trimmed(n) => (n, false, false),
        Missed::Cleared => (0, false, true),
    };

    // Lines already there and not shown: complete ones, and the cursor's
    // unfinished line unless it is the shell's prompt.
    let mut hist: Vec<String> = f.src.history()[located.first.min(f.src.history().len())..]
        .iter()
        .map(|l| l.trim_end().to_owned())
        .collect();
    if located.skip_first && !hist.is_empty() {
        hist.remove(0);
    }
    while hist.last().is_some_and(|l| l.is_empty()) {
        hist.pop();
    }
    let tracker_line = f.src.tracker().current_line();
    let at_shell_prompt = f.src.tracker().at_prompt();
    f.shown_part = rec.as_ref().map(|r| (r.abs, r.part)).unwrap_or((-1, 0));
    let mut entry_partial = None;
    if !tracker_line.is_empty() && hist.last() == Some(&tracker_line) {
        let l = hist.pop().unwrap_or_default();
        if !at_shell_prompt {
            entry_partial = Some(l);
        }
    }
    hist.retain(|l| !l.contains(WRAPPER_SIGNATURE));
    if let Some(s) = &mut f.saver {
        s.write(&hist);
    }
    f.until = req.until.clone();
    let show = f.show.clone();
    for l in hist {
        if f.until.as_ref().is_some_and(|re| re.is_match(&l)) {
            f.until_hit = true;
        }
        f.lines.push(l, show.as_ref());
    }

    // A run that returned before its command ended: did it end meanwhile?
    // Its follower leaves the status in a pane option.
    f.run = rec.as_ref().and_then(|r| r.run.clone());
    if let Some(id) = f.run.clone() {
        pending_run_status(&mut f, &c.socket, &id)?;
    }
    // A command was running at the last call, or new lines came since, and
    // the shell is reading a command line again: what ran ended in between
    // (reported at once).
    if f.finished.is_none()
        && (rec.as_ref().is_some_and(|r| r.busy) || (rec.is_some() && !f.lines.is_empty()))
        && f.foreground() == Fg::Shell
        && (at_shell_prompt || shell::line_editor_active(pid, &f.pane.pane_tty))
    {
        // tmux 3.8 keeps the status of the last command a shell marked with
        // OSC 133: the one that ended since the cursor was saved.
        let status = rec
            .as_ref()
            .and_then(|r| command_status_since(&c.socket, &f.pane.pane_id, r.saved));
        f.finished = Some(Finish {
            status,
            source: if status.is_some() { "osc133" } else { "shell" },
        });
    }

    let (before, after) = f.src.tracker().split_at_cursor();
    let typed = if at_shell_prompt {
        shell::unsubmitted_text(&before, &after)
    } else {
        None
    };
    let mut input_outcome = typed.as_ref().map(|_| "pending");
    let prompts_at_entry = f.src.tracker().prompts().0;
    let mut running_seen = matches!(f.foreground(), Fg::Command(_));
    let mut timed_out = false;
    let mut reason = "output";
    let until_in = |partial: Option<&str>| -> bool {
        req.until
            .as_ref()
            .is_some_and(|re| partial.is_some_and(|p| re.is_match(p)))
    };

    let mut prompt = None;
    let mut ready = if f.finished.is_some() {
        reason = "finished";
        true
    } else if req.until.is_some() {
        let hit = f.until_hit || until_in(entry_partial.as_deref());
        if hit {
            reason = "until";
        }
        hit
    } else if entry_partial
        .as_ref()
        .is_some_and(|p| p.len() < 512 && f.prompt_re.is_match(p))
        && matches!(f.foreground(), Fg::Command(_))
    {
        let p = entry_partial.clone().unwrap_or_default();
        // A program stopped at its prompt since the last call.
        prompt = Some(p.clone());
        reason = "prompt";
        true
    } else {
        !f.lines.is_empty() || entry_partial.is_some()
    };
    let mut sent_any = false;
    loop {
        if !ready {
            match f.src.next_items(deadline) {
                Ok(Some(items)) => {
                    f.absorb(items);
                }
                Ok(None) => {
                    timed_out = true;
                    reason = "timeout";
                }
                // The pane went: that is how the command ended (the check
                // below says finished; the cursor is not saved on a gone pane).
                Err(e) if matches!(e.kind, Kind::PaneDied | Kind::PaneRespawned) => {
                    f.finished = Some(f.pane_end(&c.socket, &e));
                }
                Err(e) => return Err(e),
            }
            if !timed_out {
                let mut state = StateCheck {
                    pid,
                    prompts_at_entry,
                    running_seen: &mut running_seen,
                    input_outcome: &mut input_outcome,
                };
                let mut decided = state.check(&mut f);
                if decided.is_none() && req.until.is_some() {
                    let t = f.src.tracker();
                    let partial = t.has_partial().then(|| t.current_line());
                    if f.until_hit || until_in(partial.as_deref()) {
                        decided = Some(Decision::Until);
                    }
                } else if decided.is_none()
                    && (!f.lines.is_empty() || f.src.tracker().has_partial())
                {
                    // One burst of output is one reply: gather it, then
                    // look again (the command may have ended meanwhile).
                    f.settle(deadline)?;
                    decided = Some(state.check(&mut f).unwrap_or(Decision::Output));
                }
                ready = decided.is_some();
                match decided {
                    Some(Decision::Finished) => reason = "finished",
                    Some(Decision::Prompt(p)) => {
                        prompt = Some(p);
                        reason = "prompt";
                    }
                    Some(Decision::Until) => reason = "until",
                    Some(Decision::Output) => reason = "output",
                    None => {}
                }
            } else {
                ready = true;
            }
            if !ready {
                continue;
            }
        }
        // Ready to return (or, with --ndjson, to print a batch).
        let done = f.finished.is_some() || timed_out || prompt.is_some() || !req.ndjson;
        let r = finish_output(
            &mut f,
            req,
            start,
            ReturnState {
                reason,
                timed_out,
                prompt: prompt.clone(),
                typed: typed.clone(),
                input_outcome,
                lines_missed: if sent_any { 0 } else { lines_missed },
                exact: sent_any || exact,
                cleared: !sent_any && cleared,
                respawned: !sent_any && respawned,
            },
        )?;
        if done {
            return Ok(r);
        }
        emit(&r);
        sent_any = true;
        f.lines.clear();
        f.until_hit = false;
        ready = false;
        reason = "output";
    }
}

enum Decision {
    Finished,
    Prompt(String),
    Until,
    Output,
}

/// Looks at the pane after each batch: did the followed command end, did a
/// program stop at its prompt, what became of unsubmitted input.
struct StateCheck<'a> {
    pid: u32,
    prompts_at_entry: u32,
    running_seen: &'a mut bool,
    input_outcome: &'a mut Option<&'static str>,
}

impl StateCheck<'_> {
    fn check(&mut self, f: &mut Follow) -> Option<Decision> {
        let fg = f.foreground();
        if matches!(fg, Fg::Command(_)) {
            *self.running_seen = true;
        }
        let prompt_back = f.src.tracker().prompts().0 > self.prompts_at_entry;
        // The shell is back in the foreground between the commands of a
        // list too (`a; echo; b`): it must be reading a command line again
        // (raw terminal, or bracketed paste switched back on).
        let shell_fg = match fg {
            Fg::Shell => Some(true),
            Fg::Command(_) => Some(false),
            Fg::Unknown => None,
        };
        let reading = shell::line_editor_active(self.pid, &f.pane.pane_tty) || prompt_back;
        if f.finished.is_none()
            && (*self.running_seen || prompt_back)
            && (shell_fg == Some(true) || shell_fg.is_none())
            && reading
            && (!f.lines.is_empty() || *self.running_seen)
        {
            // The shell is back: what it wrote on the way (an end mark of
            // `run`, an OSC 133 D) may still be in flight; it says more.
            let status = f.src.tracker().prompts().1.filter(|_| prompt_back);
            f.drain(Duration::from_millis(30));
            if f.finished.is_none() {
                f.finished = Some(Finish {
                    status,
                    source: if status.is_some() { "osc133" } else { "shell" },
                });
            }
        }
        let t = f.src.tracker();
        if *self.input_outcome == Some("pending") {
            if !t.at_prompt() || prompt_back {
                *self.input_outcome = Some("submitted");
            } else {
                let (b, a) = t.split_at_cursor();
                if shell::unsubmitted_text(&b, &a).is_none() {
                    *self.input_outcome = Some("erased");
                }
            }
        }
        if f.finished.is_some() {
            Some(Decision::Finished)
        } else if let Some(p) = f.program_prompt() {
            Some(Decision::Prompt(p))
        } else if self.input_outcome.is_some_and(|o| o != "pending") {
            Some(Decision::Output)
        } else {
            None
        }
    }
}

struct ReturnState {
    reason: &'static str,
    timed_out: bool,
    prompt: Option<String>,
    typed: Option<String>,
    input_outcome: Option<&'static str>,
    lines_missed: u64,
    exact: bool,
    cleared: bool,
    respawned: bool,
}

fn finish_output(
    f: &mut Follow,
    req: &OutputRequest,
    start: Instant,
    st: ReturnState,
) -> Result<OutputResult> {
    let c = &req.common;
    let pending = if f.finished.is_some() {
        None
    } else {
        f.run.clone()
    };
    // The unfinished line is shown unless it is the shell's prompt, or was
    // shown already as it is.
    let show = !f.src.tracker().at_prompt() && f.finished.is_none();
    let mut partial = None;
    if !matches!(
        f.finished,
        Some(Finish {
            source: "pane_dead" | "pane_closed",
            ..
        })
    ) {
        match f.save_cursor(&c.socket, &c.cursor, show, pending) {
            Ok(p) => partial = p,
            Err(e) if matches!(e.kind, Kind::PaneDied | Kind::NoPane) => {}
            Err(e) => return Err(e),
        }
    }
    if let (Some(id), Some(_)) = (&f.run, f.finished) {
        // Seen ending here; its follower may have stored the status too.
        let _ = c
            .socket
            .run(["set-option", "-pu", "-t", &f.pane.pane_id, &exit_option(id)]);
    }
    let partial = partial.filter(|p| (f.saved_abs, cursor::hash_text(&[p])) != f.shown_part);
    if let Some(p) = &partial {
        f.shown_part = (f.saved_abs, cursor::hash_text(&[p]));
    }
    let mut lines = std::mem::take(&mut f.lines);
    let is_partial = partial.is_some();
    if let Some(p) = partial {
        lines.push(p, f.show.as_ref());
    }
    let mut clipped = clip(&lines.lines, &c.clip);
    clipped.clipped += lines.thinned;
    let running = match f.foreground() {
        Fg::Command(c) => Some(c),
        _ => None,
    };
    Ok(OutputResult {
        pane_id: f.pane.pane_id.clone(),
        lines: clipped.lines,
        cursor: c.cursor.clone(),
        // The end may have come with the last output taken in.
        reason: if f.finished.is_some() && st.reason == "output" {
            "finished"
        } else {
            st.reason
        },
        finished: f.finished.is_some(),
        exit_status: f.finished.and_then(|x| x.status),
        exit_source: f.finished.map(|x| x.source),
        timed_out: st.timed_out,
        running,
        lines_missed: st.lines_missed,
        lines_missed_exact: st.exact,
        history_cleared: st.cleared,
        respawned: st.respawned,
        clipped_lines: clipped.clipped,
        partial: is_partial,
        prompt: st.prompt,
        unsubmitted_input: st.typed,
        input_outcome: st.input_outcome,
        elapsed_seconds: seconds(start.elapsed()),
        effective_timeout: seconds(c.timeout),
        save_error: f.saver.as_ref().and_then(|s| s.error.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapper_quotes_the_command_once() {
        let w = wrapper("ab12", "echo 'it''s' \"$HOME\"; ls");
        assert!(w.starts_with(" command printf '\\033]7731;tmux-wait;ab12;B\\007';eval "));
        assert!(w.contains(r#"eval 'echo '\''it'\'''\''s'\'' "$HOME"; ls';"#));
        assert!(w.ends_with(r#"'\033]7731;tmux-wait;ab12;E;%d\007' "$?""#));
        assert!(w.contains(WRAPPER_SIGNATURE));
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
