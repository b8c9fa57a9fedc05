//! One pane of a watch: its source (the stream, or the kernel alone where
//! the stream cannot be had), the look at its terminal once output goes
//! quiet, its timers, and its end. No thread of its own: the watcher's
//! loop calls it when its descriptors are ready or a timer is due, and
//! takes what it found from `out`.

mod agent;
mod asked;
mod ending;
mod kernel;
mod timers;

use agent::AgentSignals;
pub use agent::group as foreground_procs;
use asked::Asked;
pub use ending::last_write_age;
use kernel::{just_forked, screen, window_wrote_lately, working};
use timers::{Timers, earliest};

use super::feed::{Feed, Read};
use super::judge::{Look, Verdict, judge};
use super::machine::{Change, Epoch, Found, Machine, State, Status, What};
use super::profiles::Profiles;
use crate::error::{Error, Kind, Result};
use crate::hub::EndReason;
use crate::matcher::PatternList;
use crate::pane::rhythm::{EXIT_NOTICE, FLOW_GAP, FLOW_LOOK_EVERY};
use crate::pane::shell::{self, Reads};
use crate::pane::vt::{Item, Mark};
use crate::tmux::{PaneInfo, Socket};
use regex::Regex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A burst of output is over once the pane has written nothing this long:
/// then the kernel is asked who reads the terminal.
pub const DEBOUNCE: Duration = Duration::from_millis(1);
/// A program that reads key by key (not at a REPL's prompt) is judged
/// from its screen once it has written nothing this long: a spinner or a
/// progress bar is never still this long, a question is.
pub const STILL: Duration = Duration::from_millis(500);
/// After a burst, while a command runs and writes nothing, the kernel is
/// asked again at these times after the last output (the program may not
/// have reached its read yet), then no more.
const BACKOFF: [Duration; 13] = [
    Duration::from_millis(1),
    Duration::from_millis(3),
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
/// Without a stream: how often the kernel is asked, and how often the
/// stream is tried again.
const KERNEL_EVERY: Duration = Duration::from_secs(1);
pub const RETRY_STREAM: Duration = Duration::from_secs(10);
/// After the pane's process exited, how often and how long tmux is asked
/// whether it marked the pane dead (and with which status).
/// (How long: `pane::rhythm::EXIT_NOTICE`.)
const EXIT_POLL: Duration = Duration::from_millis(5);
/// How long tmux may take to learn the status after it marked the pane
/// dead (it marks it at the terminal's end of file, and learns the status
/// at its SIGCHLD: on a loaded machine that came 300 ms and more later).
const STATUS_PATIENCE: Duration = Duration::from_secs(2);
/// Looks `/proc` may fail to answer in a row (processes vanishing as they
/// are looked at) before tmux's word is taken.
const UNKNOWN_TRIES: u32 = 5;
/// Looks that may wait (2 ms each) for a question the kernel sees read but
/// the stream has not brought yet.
const LAG_TRIES: u32 = 5;
/// How long a prompt the kernel sees waits for the mark the shell's line
/// editor writes with it (and the exit status before it) to come through
/// the stream; a shell on its way out (`exit`) looks the same to the
/// kernel for a moment.
const MARK_PATIENCE: Duration = Duration::from_millis(250);

/// What every pane's look needs.
pub struct Ctx {
    pub socket: Socket,
    pub quiet_after: Duration,
    pub patterns: PatternList,
    pub profiles: Profiles,
    pub prompt_re: Regex,
}

impl Ctx {
    pub fn new(
        socket: Socket,
        quiet_after: Duration,
        patterns: PatternList,
        profiles: Profiles,
    ) -> Ctx {
        Ctx {
            socket,
            quiet_after,
            patterns,
            profiles,
            prompt_re: Regex::new(crate::pane::shell::DEFAULT_PROMPTS)
                .expect("the prompts are valid"),
        }
    }
}

/// What a pane tells the watcher.
#[derive(Debug)]
pub enum Out {
    /// Watched: its state (`status`) is the one the watch began with.
    Armed,
    Change(Change),
    /// The pane exited or closed: nothing more will come.
    Gone,
    /// The server went away.
    Fatal(Error),
    /// Open (again) a stream for the pane.
    Open,
}

pub enum Source {
    Opening,
    Stream(Box<Feed>),
    /// No stream: the kernel asked every `tick`, the stream tried again
    /// at `retry`.
    Kernel {
        tick: Instant,
        retry: Instant,
    },
    Gone,
}

pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| (d.as_secs_f64() * 1e3).round() / 1e3)
        .unwrap_or(0.0)
}

pub struct PaneWatch {
    pub pane: PaneInfo,
    pub source: Source,
    machine: Option<Machine>,
    /// The counts of the streams before this one (a stream's tracker
    /// starts at zero).
    base: Epoch,
    /// Bells and prompt marks of this stream taken in.
    bells: u64,
    prompts: u32,
    timers: Timers,
    /// A coding agent's signals (see `agent`).
    agent: AgentSignals,
    /// The unfinished line a pattern hit (not reported again when it ends).
    partial_hit: Option<String>,
    /// The last look found a key-by-key reader: the stream's lines are
    /// looked at for a profile's working text.
    keys_fg: bool,
    /// The pane's process exited at this time: tmux is asked until it
    /// marks the pane dead.
    exit_check: Option<(Instant, Instant)>,
    /// Opening failed this many times in a row.
    failures: u32,
    /// Looks in a row `/proc` could not answer.
    unknowns: u32,
    /// Looks in a row that waited for a question on its way.
    lagging: u32,
    /// The pane was made after the watch began.
    late: bool,
    /// What the stream's programs had written at the last output.
    written: u64,
    /// The question the reading process asked last (see [`Asked`]).
    asked: Option<Asked>,
    /// When the screen of a pane that was not still was looked at last (a
    /// question under a spinner that keeps turning): at most every
    /// [`STILL`].
    moving_looked: Option<Instant>,
    /// Desktop notifications (OSC 9, OSC 777) of this stream taken in.
    notes: u64,
}

impl PaneWatch {
    /// `late`: the pane was made after the watch began.
    pub fn new(pane: PaneInfo, late: bool) -> PaneWatch {
        PaneWatch {
            pane,
            source: Source::Opening,
            machine: None,
            base: Epoch::default(),
            bells: 0,
            prompts: 0,
            timers: Timers::new(),
            agent: AgentSignals::default(),
            partial_hit: None,
            keys_fg: false,
            exit_check: None,
            failures: 0,
            unknowns: 0,
            lagging: 0,
            late,
            written: 0,
            asked: None,
            moving_looked: None,
            notes: 0,
        }
    }

    pub fn status(&self) -> Option<&Status> {
        self.machine.as_ref().map(|m| &m.status)
    }

    /// When this pane next needs a turn.
    /// (A pane's looks are timed only while it has a source to look
    /// through: opening, and gone, it waits for the opener's answer or
    /// for nothing. A timer that counted then would be due for good, and
    /// the watch would turn without rest.)
    pub fn wake(&self) -> Option<Instant> {
        let looks = earliest(self.timers.probe, self.timers.quiet);
        let exit = self.exit_check.map(|(_, next)| next);
        match &self.source {
            Source::Stream(f) => earliest(earliest(looks, exit), f.wake()),
            Source::Kernel { tick, retry } => {
                earliest(earliest(looks, exit), Some((*tick).min(*retry)))
            }
            Source::Opening => exit,
            Source::Gone => None,
        }
    }

    fn epoch(&self) -> Epoch {
        match &self.source {
            Source::Stream(f) => Epoch {
                prompts: self.base.prompts + f.tracker().prompts().0,
                written: self.base.written + f.tracker().written(),
                lines: self.base.lines + f.newlines(),
            },
            _ => self.base,
        }
    }

    fn report(&self, change: Option<Change>, out: &mut Vec<Out>) {
        if let Some(c) = change {
            out.push(Out::Change(c));
        }
    }

    /// The stream asked for is open (or could not be had).
    pub fn opened(&mut self, ctx: &Ctx, r: Result<Box<Feed>>, out: &mut Vec<Out>) {
        match r {
            Ok(feed) => {
                self.failures = 0;
                self.pane = feed.pane.clone();
                self.bells = 0;
                self.notes = 0;
                self.prompts = 0;
                self.written = 0;
                self.timers = Timers::new();
                self.partial_hit = None;
                self.source = Source::Stream(feed);
                let first = self.machine.is_none();
                self.look(ctx, first, out);
            }
            Err(e) => match e.kind {
                Kind::NoPane => self.exited(ctx, false, None, out),
                Kind::PaneDied => self.start_exit_check(),
                Kind::NoServer | Kind::ServerExited => {
                    self.source = Source::Gone;
                    out.push(Out::Fatal(Error::new(
                        Kind::ServerExited,
                        "the tmux server exited during the wait",
                    )));
                }
                _ => {
                    // Another program pipes the pane, or the hub is not
                    // there yet: from the kernel meanwhile.
                    self.failures += 1;
                    let again = if e.kind == Kind::PipeBusy || self.failures > 3 {
                        RETRY_STREAM
                    } else {
                        Duration::from_millis(200)
                    };
                    let now = Instant::now();
                    self.source = Source::Kernel {
                        tick: now,
                        retry: now + again,
                    };
                    self.timers = Timers::new();
                }
            },
        }
    }

    /// The stream's connection is readable.
    pub fn readable(&mut self, ctx: &Ctx, buf: &mut [u8], out: &mut Vec<Out>) {
        let Source::Stream(feed) = &mut self.source else {
            return;
        };
        match feed.read(buf) {
            Read::Data(0) => {}
            Read::Data(_) => self.took(ctx, true, out),
            Read::Ended(why) => self.ended(ctx, Some(why), out),
            Read::Lost => self.ended(ctx, None, out),
        }
    }

    /// The pane's process exited (its pidfd is readable).
    pub fn pid_exited(&mut self) {
        if let Source::Stream(f) = &mut self.source {
            f.exit_seen();
        }
        self.start_exit_check();
    }

    fn start_exit_check(&mut self) {
        let now = Instant::now();
        self.exit_check.get_or_insert((now, now));
    }

    /// A timer of this pane is due.
    pub fn timer(&mut self, ctx: &Ctx, now: Instant, out: &mut Vec<Out>) {
        if self.exit_check.is_some_and(|(_, next)| next <= now) {
            self.check_exit(ctx, now, out);
            if matches!(self.source, Source::Gone | Source::Opening) {
                return;
            }
        }
        match &mut self.source {
            Source::Stream(f) => {
                if f.wake().is_some_and(|w| w <= now) {
                    f.tick();
                    self.took(ctx, false, out);
                }
            }
            Source::Kernel { tick, retry } => {
                if *retry <= now {
                    self.source = Source::Opening;
                    out.push(Out::Open);
                    return;
                }
                if *tick <= now {
                    *tick = now + KERNEL_EVERY;
                    self.kernel_turn(ctx, out);
                    return;
                }
            }
            // (Nothing to look through: the looks owed are dropped; a new
            // stream starts its own.)
            Source::Opening | Source::Gone => {
                self.timers.probe = None;
                self.timers.quiet = None;
                return;
            }
        }
        if self.timers.probe.is_some_and(|p| p <= now) {
            self.look(ctx, false, out);
        }
        if self.timers.quiet.is_some_and(|q| q <= now) {
            // (The look re-arms the timer while the state is working: it
            // is due once per quiet spell, so it is cleared after.)
            self.look(ctx, false, out);
            self.timers.quiet = None;
            let e = self.epoch();
            if let Some(m) = &mut self.machine
                && m.status.state == State::Working
            {
                let c = m.quiet(e, now_secs());
                self.report(c, out);
            }
        }
    }

    /// Output came (`data`; else a held line was let go): `--pattern`
    /// hits, an agent's busy text, exit statuses, bells, prompt marks; the
    /// look is due after it.
    fn took(&mut self, ctx: &Ctx, data: bool, out: &mut Vec<Out>) {
        let Source::Stream(feed) = &mut self.source else {
            return;
        };
        let items = feed.items();
        let open = feed.ends_open();
        let t = feed.tracker();
        let partial = t.current_output();
        let (bells, prompts) = (t.bells(), t.prompts().0);
        let (notes, note) = t.notifications();
        let note = note.map(str::to_owned);
        let written = t.written();
        let now = Instant::now();
        let retitled = self.agent.title(t.title(), t.titles(), now);
        let keys = self.keys_fg;
        let mut hooked = false;
        let mut lines: Vec<String> = Vec::new();
        for item in items {
            match item {
                Item::Line(c) if !c.prompt => {
                    if keys {
                        self.agent.saw(&ctx.profiles, &c.text, now);
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
                Item::Mark(Mark::Agent(kind, words)) => {
                    self.agent.hook(&kind, words, now);
                    hooked = true;
                }
            }
        }
        if keys {
            self.agent.saw(&ctx.profiles, &partial, now);
        }
        if !ctx.patterns.is_empty() {
            let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
            let hit = ctx
                .patterns
                .first_hit(&texts)
                .map(|(_, hits)| lines[hits[0]].clone())
                .or_else(|| {
                    let t = partial.trim();
                    (!t.is_empty() && ctx.patterns.first_hit(&[t]).is_some()).then(|| {
                        self.partial_hit = Some(partial.clone());
                        t.to_owned()
                    })
                });
            if let (Some(line), Some(m)) = (hit, &self.machine) {
                out.push(Out::Change(m.event(What::Text, Some(line))));
            }
        }
        // A bell, or a desktop notification the program asked for (an
        // agent's "needs you"): an event with a source of its own.
        if bells > self.bells || notes > self.notes {
            let line = (notes > self.notes).then_some(note).flatten();
            self.bells = bells;
            self.notes = notes;
            if let Some(m) = &self.machine {
                let notified = line.is_some();
                let mut c = m.event(What::Bell, line);
                c.status.source = "notification";
                if notified {
                    c.status.reason = "notification";
                }
                out.push(Out::Change(c));
            }
        }
        if data {
            self.timers.data(now, open);
            if written != self.written {
                self.written = written;
                self.timers.visible(now);
            }
        }
        // A shell's prompt mark (bracketed paste on, OSC 133): look now;
        // the kernel says whether it is the shell's (a full-screen editor
        // switches bracketed paste on too).
        if prompts > self.prompts {
            self.prompts = prompts;
            self.timers.probe = Some(now);
        }
        // An agent's own signals: look now.
        if hooked || retitled {
            self.timers.probe = Some(now);
        }
    }

    /// Look at the pane now and report what changed. `first`: the look
    /// the watch starts from (a key-by-key reader is judged from its
    /// screen at once).
    fn look(&mut self, ctx: &Ctx, first: bool, out: &mut Vec<Out>) {
        let first = first || self.machine.is_none();
        let now = Instant::now();
        self.timers.burst = None;
        let streamed = matches!(self.source, Source::Stream(_));
        let (mut look, transient) = self.kernel_look(ctx);
        if transient && self.unknowns < UNKNOWN_TRIES {
            // Processes came and went while the kernel was asked (a
            // command starting up): ask again in a moment.
            self.unknowns += 1;
            self.timers.probe = Some(now + Duration::from_millis(3));
            return;
        }
        self.unknowns = 0;
        self.keys_fg = matches!(look.reads, Some(Reads::Keys { .. }));
        if !self.keys_fg {
            self.timers.forget_redraws();
        }
        if look.reads.is_some_and(|r| r != Reads::Prompt) {
            self.agent.agent(&ctx.profiles, self.pane.pane_pid);
        }
        self.agent.fill(&mut look, now, STILL);
        self.resumed_question(&mut look);
        look.moving_screen = self
            .moving_looked
            .is_none_or(|t| now.saturating_duration_since(t) >= STILL);
        look.redrawing = if look.agent.is_some() || look.program.is_some() {
            // (An agent's own signals say whether it works.)
            false
        } else if first {
            // No redraw seen yet: a key reader with a timer that wrote in
            // the last seconds (tmux says) is taken to be redrawing.
            look.reads == Some(Reads::Keys { timed: true }) && window_wrote_lately(ctx, &self.pane)
        } else {
            self.timers.redrawing(now)
        };
        look.still = if first || !streamed {
            Duration::MAX
        } else {
            now - self.timers.last_data
        };
        let mut verdict = judge(&look, None, &ctx.profiles, &ctx.prompt_re, STILL);
        let needs_rows = verdict == Verdict::NeedScreen
            || (matches!(look.reads, Some(Reads::Line { .. })) && look.line.trim().is_empty());
        if needs_rows {
            let rows = screen(ctx, &self.pane.pane_id);
            if look.still < STILL || look.busy {
                self.moving_looked = Some(now);
            }
            verdict = judge(&look, Some(&rows), &ctx.profiles, &ctx.prompt_re, STILL);
        }
        let epoch = self.epoch();
        // The kernel says a program reads its answer, and the line under
        // the cursor holds no output yet: its question is still on its way
        // through tmux and the hub.
        if let Verdict::Is(f) = &verdict
            && matches!(f.reason, "reads_line" | "reads_password" | "repl_prompt")
            && !look.line.trim().is_empty()
            && !look.line_new
            && streamed
            && self.lagging < LAG_TRIES
        {
            self.lagging += 1;
            self.timers.probe = Some(now + Duration::from_millis(2));
            return;
        }
        self.lagging = 0;
        if just_forked(&self.pane, &look) {
            // The shell forked the command and has not started it yet: its
            // name comes in a moment.
            self.timers.probe = Some(now + Duration::from_millis(3));
            return;
        }
        let found = match verdict {
            Verdict::Is(f) => {
                // A hook's word stands for a while: looked at again then.
                if f.source == "hook"
                    && let Some(t) = self.agent.hook_until()
                    && t > now
                {
                    self.timers.probe = Some(t);
                }
                if f.reason == "redrawing" {
                    // Judged again once it stops redrawing.
                    let last = if first { now } else { self.timers.last_data };
                    self.timers.probe = Some(last + super::judge::DISPLAY_QUIET);
                }
                f
            }
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
                    // (An agent drawing: at work, as its own.)
                    _ if look.agent.is_some() || look.program.is_some() => Found {
                        agent: look.agent.clone().or_else(|| look.program.clone()),
                        ..Found::new(State::Working, "agent_working", look.command.clone())
                    },
                    _ => working(look.command.clone()),
                }
            }
            Verdict::NeedScreen => Found {
                reason: "reads_keys",
                state: State::Asking,
                ..working(look.command.clone())
            },
            Verdict::Settle(d) => {
                self.timers.probe = Some(self.timers.last_data + d);
                return;
            }
            Verdict::Wait(d) => {
                self.timers.probe = Some(now + d);
                return;
            }
        };
        if found.state == State::Prompt && self.exit_check.is_some() {
            return; // the exit check decides: the shell may be on its way out
        }
        // Back at a prompt the stream has not marked yet: wait a while for
        // the mark (a look follows it at once), and the status before it.
        let marks = matches!(&self.source, Source::Stream(f) if f.tracker().editor_marks());
        if found.state == State::Prompt
            && marks
            && !look.editor_reading
            && self.machine.as_ref().is_some_and(|m| m.awaits_mark(epoch))
        {
            let until = *self.timers.mark.get_or_insert(now + MARK_PATIENCE);
            if now < until {
                self.timers.probe = Some(until);
                return;
            }
        }
        self.timers.mark = None;
        // A key-by-key reader awake for a key it was sent (its echo came,
        // nothing else): still asking, unless it stays awake.
        if let Some(m) = &self.machine
            && streamed
            && now - self.timers.last_data < STILL
            && m.taking_a_key(&found, epoch)
        {
            self.timers.probe = Some(self.timers.last_data + STILL);
            return;
        }
        self.remember_question(&look, &found);
        let t = now_secs();
        match &mut self.machine {
            None => {
                let plain = shell::program_name(self.pane.pane_pid)
                    .is_some_and(|n| ["sh", "dash", "ash", "busybox"].contains(&n.as_str()));
                let working = found.state == State::Working;
                let own = working
                    && crate::sys::procfs::foreground_group(self.pane.pane_pid)
                        == Some(self.pane.pane_pid);
                let mut m = Machine::new(found, epoch, t, !plain);
                // (A new pane already running a command its shell started,
                // first looked at late, is no shell starting: the prompt
                // after that command is news.)
                if own || (self.late && !working) {
                    m.starting(!look.editor_reading);
                }
                out.push(Out::Armed);
                // A pane made after the watch began whose program asks
                // before the first look (`new-window 'ssh host'` at its
                // password): the question is news, not where it stood.
                if self.late && m.status.state == State::Asking {
                    out.push(Out::Change(m.event(What::State(State::Asking), None)));
                }
                self.machine = Some(m);
            }
            Some(m) => {
                let c = m.apply(found, epoch, t);
                self.report(c, out);
            }
        }
        self.after_look(ctx, look.reads, first);
    }
}
