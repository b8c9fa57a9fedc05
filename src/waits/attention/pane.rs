//! One pane, watched on a thread of its own: its stream through the hub,
//! a look at its terminal once output goes quiet, timers for `quiet`, and
//! its end. What it finds goes to the watcher as messages.
//!
//! When the pane's output cannot be streamed (another program pipes it,
//! or the hub is unreachable), the pane is looked at once a second from
//! the kernel alone, and the stream is tried again every
//! [`RETRY_STREAM`].

use super::machine::{Change, Epoch, Found, Look, Machine, State, Status, Verdict, What, judge};
use super::profiles::Profiles;
use crate::engine::Setup;
use crate::engine::shell::{self, Reads};
use crate::engine::stream::StreamSource;
use crate::engine::vt::{Item, Mark};
use crate::error::{Error, Kind};
use crate::matcher::PatternList;
use crate::tmux::{PaneInfo, Socket};
use regex::Regex;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A burst of output is over once the pane has written nothing this long:
/// then the kernel is asked who reads the terminal.
pub const DEBOUNCE: Duration = Duration::from_millis(2);
/// While output keeps coming, the kernel is asked at most this often.
pub const FLOOD_EVERY: Duration = Duration::from_millis(100);
/// A program that reads key by key (not at a REPL's prompt) is judged
/// from its screen once it has written nothing this long: a spinner or a
/// progress bar is never still this long, a question is.
pub const STILL: Duration = Duration::from_millis(500);
/// After a burst, while a command runs and writes nothing, the kernel is
/// asked again at these times after the last output (the program may not
/// have reached its read yet), then no more.
const BACKOFF: [Duration; 13] = [
    Duration::from_millis(2),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(20),
];
/// A password prompt echoes nothing, not even the Enter that answers it:
/// while one is asked, the kernel is asked this often.
const HIDDEN_EVERY: Duration = Duration::from_secs(1);
/// Without a stream: how often the kernel is asked.
const KERNEL_EVERY: Duration = Duration::from_secs(1);
/// Without a stream: how often it is tried again.
pub const RETRY_STREAM: Duration = Duration::from_secs(10);
/// Streams opened at once (each costs the hub a tmux command).
const OPEN_AT_ONCE: usize = 16;

/// What every pane's thread shares.
pub struct Shared {
    pub socket: Socket,
    pub quiet_after: Duration,
    pub patterns: PatternList,
    pub profiles: Profiles,
    pub prompt_re: Regex,
    pub tx: Sender<Msg>,
    opening: Gate,
}

impl Shared {
    pub fn new(
        socket: Socket,
        quiet_after: Duration,
        patterns: PatternList,
        profiles: Profiles,
        tx: Sender<Msg>,
    ) -> Shared {
        Shared {
            socket,
            quiet_after,
            patterns,
            profiles,
            prompt_re: Regex::new(crate::waits::command::DEFAULT_PROMPTS)
                .expect("the prompts are valid"),
            tx,
            opening: Gate::new(OPEN_AT_ONCE),
        }
    }
}

/// What a pane's thread tells the watcher.
#[derive(Debug)]
pub enum Msg {
    /// The pane is watched; its state when the watch began.
    Armed {
        pane: String,
        status: Status,
    },
    Change {
        pane: String,
        change: Change,
    },
    /// The pane's thread ended (the pane exited or closed).
    Gone {
        pane: String,
    },
    /// The server went away.
    Fatal(Error),
    Signal(i32),
    /// A pane may have been created (a new terminal appeared).
    Rescan,
}

/// At most N holders at once.
struct Gate {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Gate {
    fn new(n: usize) -> Gate {
        Gate {
            free: Mutex::new(n),
            cv: Condvar::new(),
        }
    }

    fn enter(&self) -> GateHeld<'_> {
        let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *f == 0 {
            f = self.cv.wait(f).unwrap_or_else(|e| e.into_inner());
        }
        *f -= 1;
        GateHeld(self)
    }
}

struct GateHeld<'a>(&'a Gate);

impl Drop for GateHeld<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.cv.notify_one();
    }
}

pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| (d.as_secs_f64() * 1e3).round() / 1e3)
        .unwrap_or(0.0)
}

/// Watch `pane` on a thread of its own until it exits or closes.
pub fn spawn(shared: Arc<Shared>, pane: PaneInfo) {
    let _ = std::thread::Builder::new()
        .name("attention-pane".into())
        .spawn(move || Task::new(shared, pane).run());
}

/// How a stream ended.
enum End {
    /// The pane's program exited (`dead`), or the pane closed.
    Exited {
        dead: bool,
    },
    Respawned,
    /// Go on without a stream.
    NoStream,
    Fatal(Error),
    Signal(i32),
}

struct Task {
    shared: Arc<Shared>,
    pane: PaneInfo,
    machine: Option<Machine>,
    /// Counts of the streams before the current one (a new stream's
    /// tracker starts at zero).
    base: Epoch,
    timers: Timers,
    /// When a profile's working text last went by in the stream.
    busy: Option<(Instant, String)>,
    /// The unfinished line a pattern hit (not reported again when it
    /// ends).
    partial_hit: Option<String>,
    /// The last look found a program reading key by key: the stream's
    /// lines are looked at for a profile's working text.
    keys_fg: bool,
}

#[derive(Debug)]
struct Timers {
    probe: Option<Instant>,
    step: usize,
    last_data: Instant,
    burst: Option<Instant>,
    quiet: Option<Instant>,
}

impl Timers {
    fn new() -> Timers {
        Timers {
            probe: None,
            step: 0,
            last_data: Instant::now(),
            burst: None,
            quiet: None,
        }
    }

    fn next(&self) -> Option<Instant> {
        match (self.probe, self.quiet) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn data(&mut self, now: Instant) {
        self.last_data = now;
        let burst = *self.burst.get_or_insert(now);
        self.probe = Some((now + DEBOUNCE).min(burst + FLOOD_EVERY));
        self.step = 0;
        self.quiet = None;
    }
}

impl Task {
    fn new(shared: Arc<Shared>, pane: PaneInfo) -> Task {
        Task {
            shared,
            pane,
            machine: None,
            base: Epoch::default(),
            timers: Timers::new(),
            busy: None,
            partial_hit: None,
            keys_fg: false,
        }
    }

    fn send(&self, m: Msg) {
        let _ = self.shared.tx.send(m);
    }

    fn report(&self, change: Option<Change>) {
        if let Some(change) = change {
            self.send(Msg::Change {
                pane: self.pane.pane_id.clone(),
                change,
            });
        }
    }

    fn run(mut self) {
        loop {
            let opened = {
                let _held = self.shared.opening.enter();
                let setup = Setup {
                    interval: Duration::from_millis(50),
                    ready: None,
                    deadline: Instant::now() + Duration::from_secs(10),
                    final_lines: false,
                    cursor_option: None,
                    mark: None,
                };
                StreamSource::open(&self.shared.socket, &self.pane, &setup)
            };
            // Opening routed the signals to that stream: back to the
            // watcher, which outlives every pane.
            let tx = self.shared.tx.clone();
            crate::signals::route_to(move |sig| {
                let _ = tx.send(Msg::Signal(sig));
            });
            let end = match opened {
                Ok(src) => self.stream(src),
                Err(e) => match e.kind {
                    Kind::NoPane => End::Exited { dead: false },
                    Kind::PaneDied => End::Exited { dead: true },
                    Kind::NoServer | Kind::ServerExited => End::Fatal(e),
                    Kind::Interrupted(sig) => End::Signal(sig),
                    _ => End::NoStream,
                },
            };
            let end = match end {
                End::NoStream => self.kernel(Instant::now() + RETRY_STREAM),
                other => Some(other),
            };
            match end {
                None | Some(End::NoStream) => {}
                Some(End::Respawned) => {
                    match crate::tmux::resolve_pane(&self.shared.socket, Some(&self.pane.pane_id)) {
                        Ok(p) if p.pane_id == self.pane.pane_id => self.pane = p,
                        _ => {
                            self.exited(false);
                            return;
                        }
                    }
                }
                Some(End::Exited { dead }) => {
                    self.exited(dead);
                    return;
                }
                Some(End::Fatal(e)) => {
                    self.send(Msg::Fatal(e));
                    return;
                }
                Some(End::Signal(sig)) => {
                    self.send(Msg::Signal(sig));
                    return;
                }
            }
        }
    }

    /// The pane's program ended or the pane closed: the last report.
    fn exited(&mut self, dead: bool) {
        let (dead, status) = if dead {
            dead_status(&self.shared.socket, &self.pane.pane_id)
        } else {
            (false, None)
        };
        let now = now_secs();
        match &mut self.machine {
            Some(m) => {
                let c = m.exited(dead, status, now);
                self.report(c);
            }
            None => {
                let mut m = Machine::new(
                    Found {
                        state: State::Working,
                        reason: "running",
                        question: None,
                        command: None,
                        agent: None,
                    },
                    Epoch::default(),
                    now,
                    true,
                );
                let c = m.exited(dead, status, now);
                if let Some(c) = c {
                    self.send(Msg::Armed {
                        pane: self.pane.pane_id.clone(),
                        status: c.status,
                    });
                }
            }
        }
        self.send(Msg::Gone {
            pane: self.pane.pane_id.clone(),
        });
    }

    fn epoch(&self, src: Option<&StreamSource>) -> Epoch {
        match src {
            Some(s) => Epoch {
                prompts: self.base.prompts + s.tracker().prompts().0,
                written: self.base.written + s.tracker().written(),
            },
            None => self.base,
        }
    }

    fn stream(&mut self, mut src: StreamSource) -> End {
        let mut bells = 0;
        let mut prompts = 0;
        self.timers = Timers::new();
        self.partial_hit = None;
        self.look(Some(&mut src), self.machine.is_none());
        let end = loop {
            let now = Instant::now();
            let wake = self
                .timers
                .next()
                .unwrap_or(now + Duration::from_secs(3600));
            match src.next_items(wake) {
                Ok(Some(items)) => {
                    let now = Instant::now();
                    self.took(&src, items);
                    let t = src.tracker();
                    if t.bells() > bells {
                        bells = t.bells();
                        if let Some(m) = &self.machine {
                            self.report(Some(m.event(What::Bell, None)));
                        }
                    }
                    self.timers.data(now);
                    // A shell's prompt mark (bracketed paste on, OSC 133):
                    // look now, the kernel says whether it is the shell's
                    // (a full-screen editor switches bracketed paste on
                    // too).
                    if t.prompts().0 > prompts {
                        prompts = t.prompts().0;
                        self.timers.probe = Some(now);
                    }
                }
                Ok(None) => {}
                Err(e) => break self.ended(e),
            }
            let now = Instant::now();
            if self.timers.probe.is_some_and(|p| p <= now) {
                self.look(Some(&mut src), false);
            }
            if self.timers.quiet.is_some_and(|q| q <= now) {
                self.timers.quiet = None;
                self.look(Some(&mut src), false);
                let e = self.epoch(Some(&src));
                if let Some(m) = &mut self.machine
                    && m.status.state == State::Working
                {
                    let c = m.quiet(e, now_secs());
                    self.report(c);
                }
            }
        };
        self.base = self.epoch(Some(&src));
        end
    }

    /// Lines and marks from the stream: `--pattern` hits, an agent's busy
    /// text, exit statuses.
    fn took(&mut self, src: &StreamSource, items: Vec<Item>) {
        let keys = self.keys_fg;
        let mut lines: Vec<String> = Vec::new();
        for item in items {
            match item {
                Item::Line(c) if !c.prompt => {
                    if keys && let Some(p) = self.shared.profiles.busy_in(&c.text) {
                        self.busy = Some((Instant::now(), p.name.clone()));
                    }
                    if self.partial_hit.take().as_deref() == Some(c.text.as_str()) {
                        continue;
                    }
                    lines.push(c.text);
                }
                Item::Line(_) => {}
                Item::Mark(Mark::RunEnd(_, status) | Mark::CommandDone(status)) => {
                    if let Some(m) = &mut self.machine {
                        m.exit_status(status);
                    }
                }
                Item::Mark(Mark::RunBegin(_)) => {}
            }
        }
        let partial = src.tracker().current_output();
        if keys && let Some(p) = self.shared.profiles.busy_in(&partial) {
            self.busy = Some((Instant::now(), p.name.clone()));
        }
        if self.shared.patterns.is_empty() {
            return;
        }
        let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
        let hit = self
            .shared
            .patterns
            .first_hit(&texts)
            .map(|(_, hits)| lines[hits[0]].clone())
            .or_else(|| {
                let t = partial.trim();
                (!t.is_empty() && self.shared.patterns.first_hit(&[t]).is_some()).then(|| {
                    self.partial_hit = Some(partial.clone());
                    t.to_owned()
                })
            });
        if let (Some(line), Some(m)) = (hit, &self.machine) {
            self.report(Some(m.event(What::Text, Some(line))));
        }
    }

    /// Look at the pane now and report what changed. `first`: the look
    /// the watch starts from (a key-by-key reader is judged from its
    /// screen at once).
    fn look(&mut self, src: Option<&mut StreamSource>, first: bool) {
        let now = Instant::now();
        self.timers.burst = None;
        let src = src.map(|s| &*s);
        let mut look = self.kernel_look(src);
        self.keys_fg = look.reads == Some(Reads::Keys);
        look.still = if first || src.is_none() {
            Duration::MAX
        } else {
            now - self.timers.last_data
        };
        look.busy = self
            .busy
            .as_ref()
            .filter(|(t, _)| now - *t < STILL && src.is_some())
            .map(|(_, n)| n.clone());
        let p = &self.shared.profiles;
        let re = &self.shared.prompt_re;
        let mut verdict = judge(&look, None, p, re, STILL);
        let needs_rows = verdict == Verdict::NeedScreen
            || (matches!(look.reads, Some(Reads::Line { .. })) && look.line.trim().is_empty());
        if needs_rows {
            let rows = self.screen();
            verdict = judge(&look, Some(&rows), p, re, STILL);
            if verdict == Verdict::NeedScreen {
                verdict = Verdict::Is(Found {
                    state: State::Asking,
                    reason: "reads_keys",
                    question: None,
                    command: look.command.clone(),
                    agent: None,
                });
            }
        }
        let epoch = self.epoch(src);
        let t = now_secs();
        let found = match verdict {
            Verdict::Is(f) => f,
            Verdict::NotStill => {
                self.timers.probe = Some(self.timers.last_data + STILL);
                // Still asking (a pager redrawing), or a program that
                // runs and writes.
                match &self.machine {
                    Some(m)
                        if m.status.state == State::Asking && m.status.command == look.command =>
                    {
                        return;
                    }
                    _ => Found {
                        state: State::Working,
                        reason: "running",
                        question: None,
                        command: look.command.clone(),
                        agent: None,
                    },
                }
            }
            Verdict::NeedScreen => unreachable!("judged with the screen"),
        };
        match &mut self.machine {
            None => {
                let plain = shell::program_name(self.pane.pane_pid)
                    .is_some_and(|n| ["sh", "dash", "ash", "busybox"].contains(&n.as_str()));
                let m = Machine::new(found, epoch, t, !plain);
                self.send(Msg::Armed {
                    pane: self.pane.pane_id.clone(),
                    status: m.status.clone(),
                });
                self.machine = Some(m);
            }
            Some(m) => {
                let c = m.apply(found, epoch, t);
                self.report(c);
            }
        }
        self.after_look(look.reads);
    }

    /// The next look, from what this one found.
    fn after_look(&mut self, reads: Option<Reads>) {
        let Some(m) = &self.machine else { return };
        if self.timers.probe.is_some_and(|p| p > Instant::now()) {
            return; // NotStill set it
        }
        let last = self.timers.last_data;
        self.timers.probe = None;
        match m.status.state {
            State::Working => {
                self.timers.step += 1;
                self.timers.probe = BACKOFF
                    .get(self.timers.step)
                    .map(|d| (last + *d).max(Instant::now() + Duration::from_millis(1)));
                if self.timers.quiet.is_none() {
                    self.timers.quiet = Some(last + self.shared.quiet_after);
                }
            }
            State::Asking if matches!(reads, Some(Reads::Line { hidden: true })) => {
                self.timers.probe = Some(Instant::now() + HIDDEN_EVERY);
            }
            _ => {}
        }
    }

    /// What the kernel (or, without `/proc`, tmux) says of the terminal,
    /// with what the stream says of the cursor's line.
    fn kernel_look(&self, src: Option<&StreamSource>) -> Look {
        let (pid, tty) = (self.pane.pane_pid, self.pane.pane_tty.as_str());
        let mut look = Look::default();
        if let Some(s) = src {
            let t = s.tracker();
            look.line = t.current_output();
            look.alt = t.alternate();
            look.editor_reading = t.line_editor_reading();
        }
        if shell::proc_available() {
            let (reads, reader) = shell::reads(pid, tty);
            look.reads = Some(reads);
            look.command = match reads {
                Reads::Prompt => None,
                Reads::Line { .. } | Reads::Keys => reader.and_then(shell::program_name),
                _ => shell::foreground_command(pid).or_else(|| shell::program_name(pid)),
            };
            if reads != Reads::Unknown {
                if src.is_none() {
                    self.cursor_line(&mut look);
                }
                return look;
            }
        }
        let cmd = self.tmux_line("#{pane_current_command}\t#{alternate_on}");
        let mut f = cmd.splitn(2, '\t');
        let current = f.next().unwrap_or("").to_owned();
        look.alt |= f.next() == Some("1");
        let shell_name = shell::program_name(pid).unwrap_or_default();
        look.shell_fg =
            (!current.is_empty() && !shell_name.is_empty()).then(|| current == shell_name);
        look.command = (!current.is_empty()).then_some(current);
        if src.is_none() {
            self.cursor_line(&mut look);
        }
        look
    }

    /// Without a stream: the cursor's line and the screen mode from tmux.
    fn cursor_line(&self, look: &mut Look) {
        let reply = self.tmux_line("#{cursor_y}\t#{alternate_on}");
        let mut f = reply.split('\t');
        let y = f.next().unwrap_or("0").to_owned();
        look.alt = f.next() == Some("1");
        if let Ok(rows) = self.shared.socket.run([
            "capture-pane",
            "-p",
            "-t",
            &self.pane.pane_id,
            "-S",
            &y,
            "-E",
            &y,
        ]) {
            look.line = rows.join("").trim_end().to_owned();
        }
    }

    fn tmux_line(&self, format: &str) -> String {
        self.shared
            .socket
            .run(["display-message", "-p", "-t", &self.pane.pane_id, format])
            .ok()
            .and_then(|l| l.into_iter().next())
            .unwrap_or_default()
    }

    /// The visible screen, row by row.
    fn screen(&self) -> Vec<String> {
        self.shared
            .socket
            .run(["capture-pane", "-p", "-t", &self.pane.pane_id])
            .unwrap_or_default()
    }

    /// Why the stream ended, as what to do next.
    fn ended(&self, e: Error) -> End {
        match e.kind {
            Kind::PaneDied => {
                // Closed, or its program exited (tmux says which).
                End::Exited {
                    dead: !e.message.contains("closed"),
                }
            }
            Kind::NoPane => End::Exited { dead: false },
            Kind::PaneRespawned => End::Respawned,
            Kind::ServerExited | Kind::NoServer => End::Fatal(e),
            Kind::Interrupted(sig) => End::Signal(sig),
            // Another program took the pipe, the hub went: go on from the
            // kernel.
            _ => End::NoStream,
        }
    }

    /// Without a stream until `until`: the kernel asked every second.
    /// Returns None when it is time to try the stream again.
    fn kernel(&mut self, until: Instant) -> Option<End> {
        let mut quiet_done = false;
        loop {
            match pane_alive(&self.shared.socket, &self.pane) {
                Alive::Yes => {}
                Alive::Dead => return Some(End::Exited { dead: true }),
                Alive::Closed => return Some(End::Exited { dead: false }),
                Alive::Respawned => return Some(End::Respawned),
                Alive::ServerGone(e) => return Some(End::Fatal(e)),
            }
            self.look(None, self.machine.is_none());
            if let Some(m) = &mut self.machine {
                let idle = last_write_age(&self.pane.pane_tty);
                match m.status.state {
                    State::Working
                        if !quiet_done && idle.is_some_and(|a| a >= self.shared.quiet_after) =>
                    {
                        quiet_done = true;
                        let c = m.quiet(self.base, now_secs());
                        self.report(c);
                    }
                    State::Working => {}
                    _ => quiet_done = false,
                }
            }
            if let Some(sig) = crate::signals::pending() {
                return Some(End::Signal(sig));
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(KERNEL_EVERY);
        }
    }
}

enum Alive {
    Yes,
    Dead,
    Closed,
    Respawned,
    ServerGone(Error),
}

fn pane_alive(socket: &Socket, pane: &PaneInfo) -> Alive {
    let fmt = "#{pane_id}\t#{pane_pid}\t#{pane_dead}";
    match socket.run(["display-message", "-p", "-t", &pane.pane_id, fmt]) {
        Ok(lines) => {
            let line = lines.first().cloned().unwrap_or_default();
            let f: Vec<&str> = line.split('\t').collect();
            if f.first() != Some(&pane.pane_id.as_str()) {
                Alive::Closed
            } else if f.get(2) == Some(&"1") {
                Alive::Dead
            } else if f.get(1) != Some(&pane.pane_pid.to_string().as_str()) {
                Alive::Respawned
            } else {
                Alive::Yes
            }
        }
        Err(e) if e.kind == Kind::NoPane => Alive::Closed,
        Err(e) if e.kind == Kind::NoServer => Alive::ServerGone(Error::new(
            Kind::ServerExited,
            "the tmux server exited during the wait",
        )),
        Err(_) => Alive::Yes,
    }
}

/// How long since a program last wrote to the terminal: the device's
/// modification time, which the kernel keeps to 8 seconds.
pub fn last_write_age(tty: &str) -> Option<Duration> {
    let m = std::fs::metadata(tty).ok()?.modified().ok()?;
    SystemTime::now().duration_since(m).ok()
}

/// Whether the pane is dead (its program ended, `remain-on-exit`) and its
/// exit status (a signal as 128 + N). tmux learns the status a moment
/// after it marks the pane dead.
pub fn dead_status(socket: &Socket, pane: &str) -> (bool, Option<i32>) {
    let fmt = "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}";
    let patience = Instant::now() + Duration::from_millis(300);
    let mut dead = false;
    while let Ok(lines) = socket.run(["display-message", "-p", "-t", pane, fmt]) {
        let line = lines.first().cloned().unwrap_or_default();
        let f: Vec<&str> = line.split('\t').collect();
        if f.first() != Some(&pane) || f.get(1) != Some(&"1") {
            break;
        }
        dead = true;
        let status = f.get(2).and_then(|s| s.parse::<i32>().ok()).or_else(|| {
            f.get(3)
                .and_then(|s| s.parse::<i32>().ok())
                .map(|sig| 128 + sig)
        });
        if status.is_some() || Instant::now() >= patience {
            return (true, status);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (dead, None)
}
