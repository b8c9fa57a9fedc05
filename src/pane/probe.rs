//! Who wrote a piece of a pane's output, and who reads its terminal: asked
//! of the kernel as the output arrives (see `vt::Hint`). Linux `/proc`
//! only; where it does not answer every hint is unknown and the tracker
//! falls back on what the stream shows.
//!
//! Two kinds of echo exist, and each has its own evidence:
//!
//! - **A line editor's** (readline, zle, fish, a REPL): the program reading
//!   the terminal in raw mode writes the keys it read. Its main thread's
//!   bytes written (`wchar` in `/proc/PID/task/PID/io`) are a credit the
//!   stream pays back: a chunk is taken for its writing as long as the
//!   credit lasts, however the chunks and the looks fall. (The process's
//!   total would take in the writes of children it reaped: a background
//!   job's output would count as the editor's.)
//! - **The kernel's**, while a program reads a line in canonical mode with
//!   echo on (dash, `read`, `cat`, `input()`): no process writes it. What
//!   the pane's processes wrote (the pane's program and every descendant,
//!   reaped ones included: `/proc/PID/io` summed over the tree) is output
//!   at once, a whole line or a piece of one; the rest may be typed, and
//!   its line is judged when it ends: typed if the reader took it (its
//!   read returned) or it waits in the terminal's input queue.
//!
//! Only a program actually asleep in a read of the terminal makes the
//! kernel's echo possible. A shell that runs a script or a loop sits in
//! the foreground with the terminal in canonical mode too, but reads
//! nothing: everything then is output.

mod between;
mod credit;
mod look;

use super::rhythm::{FLOW_GAP, FLOW_LOOK_EVERY};
use super::shell;
use super::vt::Hint;
use crate::sys::procfs::{self, ReadState};
use crate::sys::tty::{self, Mode, Settings};
use between::{reaped_totals, took_input};
use credit::Credit;
use look::{LeaderLook, kernel_echo};
use std::time::{Duration, Instant};

/// A reader that read from its terminal this recently is taken to be
/// echoing keys when it writes (echo follows the read of its keys, in one
/// or several writes).
const READ_RECENT: Duration = Duration::from_millis(200);
/// Credit older than this was not written to the terminal (a shell's
/// writes to files count too). Long enough for the rest of a long echo to
/// come through tmux and the hub on a loaded machine: a write reaches us in
/// pieces, and a piece that came after its credit expired would be judged
/// without it.
const CREDIT_LIFE: Duration = Duration::from_millis(250);
/// How long to watch a line reader after a line ended, to see whether it
/// took the line (its read returned) or slept on (another writer's).
const SETTLE: Duration = Duration::from_millis(30);
/// Output in pieces at most this big is looked at (a prompt, echo, a
/// question); a flood goes by with a look now and then.
pub const SMALL_CHUNK: usize = 512;
/// The most often output nobody reads is looked at otherwise.
const LOOK_EVERY: Duration = Duration::from_millis(10);
/// How long the stream stays quiet before the look owed for output nobody
/// looked at is taken: a little longer than the hub leaves a flooding
/// pane's pipe alone, so that a flood that goes on is not taken for quiet.
const QUIET_BEFORE_LOOK: Duration =
    crate::pane::rhythm::LONGEST_PAUSE.saturating_add(Duration::from_millis(1));
/// The look owed after sieved output waits for this much quiet: the hub
/// may pass a flood on [`crate::pane::rhythm::LONGEST_HOLD`] apart, and each gap
/// passed for the flood's end (a third of fifty waits' CPU in a flood).
const QUIET_AFTER_SIEVED: Duration = crate::pane::rhythm::LONGEST_HOLD
    .saturating_add(crate::pane::rhythm::LONGEST_PAUSE.saturating_mul(2))
    .saturating_add(Duration::from_millis(1));
/// A whole piece that comes this soon after a sieved one is the rest of
/// the same read: the hub sends a read's sieved runs and its last lines
/// together (see `hub::sieve`).
const TAIL_GAP: Duration = Duration::from_millis(2);
/// Whole plain lines that follow whole plain lines within
/// `QUIET_AFTER_SIEVED` (a build's log; the hub may pass them on 100 ms
/// apart) are looked at this often, and once quiet that long: fifty waits
/// on a pane printing a line each 10 ms looked ten times a second each.
/// A prompt, a question, keys' echo or an escape is looked at as before.
const LINES_LOOK_EVERY: Duration = Duration::from_millis(500);
/// How long a running shell that just printed its prompt is given to reach
/// its read of the terminal (on a loaded machine it may wait its turn).
const SHELL_ON_ITS_WAY: Duration = Duration::from_millis(100);
/// The most processes of a pane looked at for what they wrote.
const TREE_CAP: usize = 64;
/// What typed keys look like to the reading process between two looks:
/// a few reads of a few bytes (a paste included). Loading files reads
/// more, in more calls (`/proc` counts every read alike).
const KEYS_MAX_BYTES: u64 = 4096;
const KEYS_MAX_READS: u64 = 8;

/// Looks at the pane's terminal and processes as output arrives.
pub struct ReaderProbe {
    pane_pid: u32,
    tty: String,
    /// The foreground leader and its main thread's counters at the last
    /// look.
    leader: Option<(u32, procfs::Io)>,
    /// What the leader wrote that the stream has not shown (a line
    /// editor's echo).
    echo: Credit,
    /// What the pane's processes wrote that the stream has not shown.
    written: Credit,
    /// Each process of the pane at the last look: its pid, its parent's
    /// and its total written.
    tree: Vec<(u32, u32, u64)>,
    /// The last line reader seen, its bytes read, and whether it read a shell's command line.
    reader: Option<(u32, u64, bool)>,
    /// When the leader was last seen to have read.
    last_read: Option<Instant>,
    last_look: Option<Instant>,
    mode: Option<(Option<Settings>, Instant)>,
    /// Bytes the stream showed since the last look that no credit of the
    /// pane's processes covered: the next look's writes paid for them
    /// already. (The leader's credit is not paid so: what nobody looked at
    /// may have been anyone's.)
    unpaid: u64,
    /// At the last look the pane's shell was in the foreground with the
    /// kernel echoing and not seen reading: it may be about to read a line
    /// (it just printed a prompt, and runs on its way to the read), and
    /// what comes next may be typed.
    shell_about_to_read: bool,
    /// That shell was running (on its way into its read).
    shell_running: bool,
    /// When the stream last showed output.
    last_output: Option<Instant>,
    /// Output of more than [`SMALL_CHUNK`] went by with no look since the
    /// last one: a small piece after it is looked at whenever it comes
    /// (keys typed at a prompt that ended a long piece of output).
    shown_large: bool,
    /// Output since the last look came sieved (see `hub::sieve`): a flood
    /// of plain lines this wait cannot use; and came whole. When all of it
    /// came sieved, its look waits for the stream to be quiet (what a
    /// flood that ends in a prompt needs), not for the flow's turn.
    shown_sieved: bool,
    shown_whole: bool,
    /// When the last sieved chunk was shown, until a whole one follows.
    sieved_at: Option<Instant>,
    /// The last output ended a line, and when the last output was whole
    /// plain lines that began at a line's start (see `LINES_LOOK_EVERY`).
    line_start: bool,
    lines_at: Option<Instant>,
    /// All output since the last look flowed as lines (if any came).
    lines_since_look: bool,
    /// The last output came within `FLOW_GAP` of the output before it.
    flowing: bool,
    /// When a look saw the reader take a line whose end the stream had not
    /// shown yet, and whether it was a shell's command line.
    taken_early: Option<(Instant, Option<bool>)>,
    first: Hint,
}

impl ReaderProbe {
    /// A probe with its first look taken (see [`ReaderProbe::first`]).
    pub fn new(pane_pid: u32, tty: &str) -> ReaderProbe {
        let mut p = ReaderProbe {
            pane_pid,
            tty: tty.to_owned(),
            leader: None,
            echo: Credit::default(),
            written: Credit::default(),
            tree: Vec::new(),
            reader: None,
            last_read: None,
            last_look: None,
            mode: None,
            unpaid: 0,
            shell_about_to_read: false,
            shell_running: false,
            last_output: None,
            shown_large: false,
            shown_sieved: false,
            shown_whole: false,
            sieved_at: None,
            line_start: true,
            lines_at: None,
            lines_since_look: false,
            flowing: false,
            taken_early: None,
            first: Hint::default(),
        };
        let l = p.look();
        p.first = Hint {
            kernel_echo: kernel_echo(&l),
            ..Hint::default()
        };
        p
    }

    /// The first look: whether a line was being read with the kernel's
    /// echo.
    pub fn first(&self) -> Hint {
        self.first
    }

    /// How long since the last look (None: never).
    pub fn since_last(&self) -> Option<Duration> {
        self.last_look.map(|t| t.elapsed())
    }

    /// The pane's shell may be about to read a line (see `wants_look`):
    /// the next piece of output is looked at however soon it comes.
    pub fn shell_about_to_read(&self) -> bool {
        self.shell_about_to_read
    }

    /// Whether `data`, which came while no line is read, is worth a look:
    /// a small piece, when the last chunk was read by a shell (`look_next`:
    /// it may print its next prompt and read again at once), when the
    /// shell may be about to read, or now and then.
    pub fn wants_look(&self, data: &[u8], look_next: bool) -> bool {
        // Small pieces that keep coming (a line every few milliseconds) are
        // looked at as a flood is: once the flow pauses, or now and then.
        let lines = self.lines_flow_on(data);
        let every = if lines {
            LINES_LOOK_EVERY
        } else if self.flows_on() {
            FLOW_LOOK_EVERY
        } else {
            LOOK_EVERY
        };
        data.len() <= SMALL_CHUNK
            && (look_next || self.shell_about_to_read || !self.tail_of_sieved())
            && (look_next
                || self.shell_about_to_read
                || (self.shown_large && !lines)
                || self.since_last().is_none_or(|d| d >= every))
    }

    /// `data` is the last lines of the sieved chunk just shown (see
    /// `TAIL_GAP`), looked at with it once quiet (a prompt it ends in is
    /// looked at then, or at the next piece: keys typed at it).
    fn tail_of_sieved(&self) -> bool {
        self.sieved_at.is_some_and(|t| t.elapsed() < TAIL_GAP)
    }

    /// `data`, coming now, continues a flow of lines (see
    /// `LINES_LOOK_EVERY`).
    fn lines_flow_on(&self, data: &[u8]) -> bool {
        self.lines_recent() && small_lines(data)
    }

    /// The last output was lines (see `LINES_LOOK_EVERY`), recently, and
    /// ended a line.
    fn lines_recent(&self) -> bool {
        self.line_start
            && self
                .lines_at
                .is_some_and(|t| t.elapsed() < QUIET_AFTER_SIEVED)
    }

    /// Output that comes now continues a flow (see `FLOW_GAP`).
    fn flows_on(&self) -> bool {
        self.last_output.is_some_and(|t| t.elapsed() < FLOW_GAP)
    }

    /// Output came now: `data`, or a sieved chunk (None).
    fn output_came(&mut self, data: Option<&[u8]>) {
        let now = Instant::now();
        self.flowing = self.flows_on();
        self.last_output = Some(now);
        let lines = data.is_some_and(small_lines);
        self.lines_since_look &= lines && self.lines_recent();
        self.lines_at = (lines && self.line_start).then_some(now);
        // (A sieved chunk's runs end their lines; its last lines follow.)
        self.line_start = data.is_none_or(|d| d.last().is_none_or(|&b| b == b'\n'));
    }

    /// When to take the look owed since output nobody looked at (see
    /// [`ReaderProbe::shown`]): `LOOK_EVERY` after the last look. After
    /// large pieces (a flood), once the stream has been quiet a moment, or
    /// every `FLOW_LOOK_EVERY` while output keeps coming, and never sooner.
    /// (Small pieces keep the quick look: a prompt or a question may be
    /// among them, and what waits on the look, a line held until the
    /// shell says whether it took it, should not wait longer.)
    pub fn owed_look_at(&self, now: Instant) -> Instant {
        let after = |every: Duration| self.last_look.map_or(now, |t| t + every);
        let output_since_look = self
            .last_output
            .zip(self.last_look)
            .is_some_and(|(o, l)| o >= l);
        if self.lines_since_look && output_since_look {
            let quiet = self.last_output.map_or(now, |t| t + QUIET_AFTER_SIEVED);
            return after(LOOK_EVERY).max(quiet.min(after(LINES_LOOK_EVERY)));
        }
        if !self.shown_large && !self.flowing {
            return after(LOOK_EVERY);
        }
        let quiet = self.last_output.map_or(now, |t| t + QUIET_BEFORE_LOOK);
        if self.shown_sieved && !self.shown_whole {
            let quiet = self.last_output.map_or(now, |t| t + QUIET_AFTER_SIEVED);
            return after(FLOW_LOOK_EVERY).max(quiet);
        }
        after(LOOK_EVERY).max(quiet.min(after(FLOW_LOOK_EVERY)))
    }

    /// `data` arrived and nobody looked: it pays back what was written, so
    /// the next look does not count it again. (The last lines of a sieved
    /// chunk are of that chunk.)
    pub fn shown(&mut self, data: &[u8]) {
        let tail = self.tail_of_sieved();
        self.sieved_at = None;
        self.output_came(Some(data));
        self.shown_large |= data.len() > SMALL_CHUNK;
        self.shown_whole |= !tail;
        let len = self.written_len(data);
        self.pay_shown(len);
    }

    /// [`ReaderProbe::shown`] for a chunk the hub sieved: `len` bytes as
    /// the terminal shows them, `newlines` line feeds among them.
    pub fn shown_sieved(&mut self, len: u64, newlines: u64) {
        self.output_came(None);
        self.shown_large |= len > SMALL_CHUNK as u64;
        self.shown_sieved = true;
        self.sieved_at = Some(Instant::now());
        let len = if self.onlcr() { len - newlines } else { len };
        self.pay_shown(len);
    }

    fn pay_shown(&mut self, len: u64) {
        self.echo.pay(len);
        self.unpaid += len - self.written.pay(len);
    }

    /// Who wrote `len` bytes that just arrived. With `line_end`, a line
    /// ended while a program read a line: watch it a moment to see whether
    /// it took the line.
    pub fn hint_for(&mut self, data: &[u8], line_end: bool) -> Hint {
        if !data.is_empty() {
            self.output_came(Some(data));
        }
        let about_to_read = self.shell_about_to_read;
        let command_line = self.reader.map(|(.., c)| c); // (what it took, if it took)
        let mut l = self.look();
        let command_line = command_line.or(self.reader.map(|(.., c)| c)); // (or first seen)
        if about_to_read && self.shell_about_to_read && self.written.bytes < self.written_len(data)
        {
            l = self.await_shell_read(l);
        }
        let mut woke = l.took;
        // A reader that took a line before the stream showed its end took
        // the line this chunk ends: nothing to watch for.
        // (Only the next line end of the kernel's echo, soon, is that line's.)
        let nl = data.contains(&b'\n');
        let early = if nl { self.taken_early.take() } else { None };
        let taken_before = line_end && early.is_some_and(|(t, _)| t.elapsed() < CREDIT_LIFE);
        if taken_before {
            woke = Some(true);
        } else if l.took == Some(true) && !nl && l.mode == Some(Mode::Canonical) {
            self.taken_early = Some((Instant::now(), command_line));
        }
        // (A reader first seen now: whether it takes the line is watched
        // from here.)
        let fresh = l.took.is_none() && l.line_reader == Some(true);
        if line_end && !taken_before && (l.took == Some(false) || fresh) && l.wrote == 0 {
            woke = Some(false);
            // Asleep or about to be: a typed line wakes the reader at once
            // (the kernel hands it the line as it echoes it), but it may
            // not have run yet; a signal may have woken it for nothing.
            // A typed line waits in the terminal's input queue until the
            // reader takes it; another writer's line goes the other way
            // and leaves the queue empty. That holds however late the
            // reader gets to run.
            //
            // So a queue seen empty after the line ended, with the reader
            // seen not to have taken a line (looked at again after the
            // queue, so that a read between the two is seen), is another
            // writer's line, at once. Only where the queue cannot be asked
            // is the reader watched for a while.
            match tty::input_waiting(&self.tty) {
                Some(true) => woke = Some(true),
                Some(false) => {
                    l = self.look();
                    if l.took == Some(true) || l.wrote > 0 {
                        woke = Some(true);
                    }
                }
                None => {}
            }
            let until = Instant::now() + SETTLE;
            while woke == Some(false)
                && tty::input_waiting(&self.tty).is_none()
                && Instant::now() < until
            {
                std::thread::sleep(Duration::from_millis(1));
                l = self.look();
                if l.took == Some(true) || l.wrote > 0 {
                    woke = Some(true);
                }
            }
        }
        if line_end && woke == Some(true) && !taken_before && l.took != Some(true) {
            // Taken by what the queue or the reader's writing says, before
            // a look saw the read: that read, when it comes, is this
            // line's, not news for the next chunk. (A reader seen to take
            // it is watched from this look, for the next line.)
            self.reader = None;
        }
        let took_command_line = between::took_command_line(early, taken_before, woke, command_line);
        let len = self.written_len(data);
        let onlcr = self.onlcr();
        // A reader that took a line: the chunk up to its first line feed is
        // that line's echo, which no process wrote (the tracker reads it
        // so). The pane's writes pay only for what follows; the rest of
        // their credit is for the chunks to come (dash's `printf` mark
        // and the question its `read -p` writes at once after it may
        // arrive apart, and were seen written at the same look).
        // Without one, a piece the kernel may have echoed is the rest of
        // that line's echo (as the tracker reads it): it pays for nothing
        // (else dash's `read -p` question came with no credit left).
        let payable = match memchr::memchr(b'\n', data) {
            Some(nl) if woke == Some(true) => self.written_len(&data[nl + 1..]),
            None if woke == Some(true) && super::vt::could_be_kernel_echo(data) => 0,
            _ => len,
        };
        let written = self.tree_known().then(|| {
            let w = usize::try_from(self.written.pay(payable)).unwrap_or(usize::MAX);
            tty::stream_tail_len(data, w, onlcr)
        });
        let kernel_echo = kernel_echo(&l);
        let raw = l.mode.map(|m| m == Mode::Raw);
        if !l.same && !l.left {
            self.echo = Credit::default();
            return Hint {
                kernel_echo,
                reader_woke: woke,
                written,
                raw,
                took_command_line,
                ..Hint::default()
            };
        }
        let leader_wrote = self.echo.pay(len) > 0;
        let read = self
            .last_read
            .is_some_and(|t| Instant::now() - t < READ_RECENT);
        Hint {
            reader_wrote: Some(leader_wrote),
            reader_read: Some(read),
            reader_woke: woke,
            kernel_echo,
            written,
            raw,
            // (A shell says itself when it reads a line: bracketed paste,
            // OSC 133; what it reads otherwise is its own business. A
            // program just started reads its libraries: keys are read by
            // one that was already reading key by key at the last look.)
            keys: Some(
                !l.shell
                    && l.was_raw
                    && l.mode == Some(Mode::Raw)
                    && l.read > 0
                    && l.read <= KEYS_MAX_BYTES
                    && l.reads <= KEYS_MAX_READS,
            ),
            took_command_line,
        }
    }

    /// The shell was about to read a line at the last look and still is,
    /// and bytes came that no process of the pane wrote: the kernel's echo
    /// of keys typed before the shell got to its read, or another writer's.
    /// A shell that is running is on its way to the read: give it a moment
    /// to get there (it is then the reader that tells the two apart).
    fn await_shell_read(&mut self, mut l: LeaderLook) -> LeaderLook {
        let until = Instant::now() + SHELL_ON_ITS_WAY;
        while self.shell_about_to_read && self.shell_running && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
            l = self.look();
        }
        l
    }

    /// The bytes a program wrote to show `data` (see `tty::written_len`).
    fn written_len(&mut self, data: &[u8]) -> u64 {
        tty::written_len(data, self.onlcr()) as u64
    }

    /// The terminal adds a carriage return before each line feed: as last
    /// read (it changes rarely), read now if never.
    fn onlcr(&mut self) -> bool {
        if self.mode.is_none() {
            self.mode(Instant::now());
        }
        self.mode.is_some_and(|(s, _)| s.is_some_and(|s| s.onlcr))
    }

    /// The foreground leader counted from (for the trace).
    pub fn leader_pid(&self) -> Option<u32> {
        self.leader.map(|(pid, _)| pid)
    }

    fn tree_known(&self) -> bool {
        !self.tree.is_empty()
    }

    fn look(&mut self) -> LeaderLook {
        let now = Instant::now();
        self.last_look = Some(now);
        self.shown_large = false;
        self.shown_sieved = false;
        self.shown_whole = false;
        self.sieved_at = None;
        self.lines_since_look = true;
        self.echo.expire(now);
        self.written.expire(now);
        let Some(fg) = procfs::foreground_group(self.pane_pid) else {
            self.leader = None;
            self.tree.clear();
            self.reader = None;
            self.unpaid = 0;
            self.shell_about_to_read = false;
            return LeaderLook::default();
        };
        let was_raw = self.leader.is_some_and(|(pid, _)| pid == fg)
            && self
                .mode
                .is_some_and(|(m, _)| m.is_some_and(|m| m.mode == Mode::Raw));
        let mut look = LeaderLook {
            mode: self.mode(now),
            // The pane's own process, when it is a shell (a program the
            // pane runs in its place, `tail -f` or a REPL, is no shell
            // about to read its next command line).
            shell: fg == self.pane_pid
                && shell::program_name(fg).is_none_or(|n| shell::is_shell(&n)),
            was_raw,
            ..LeaderLook::default()
        };
        // The leader: a line editor's echo is its own writing.
        let io = procfs::io(fg, false);
        let mut kept = None;
        // The pane's shell, one without a line editor (its command lines
        // are echoed by the kernel), reading a line at the last look (or
        // about to, and it wrote nothing since), read since and handed the
        // terminal to a new leader, the command it read: it took a line
        // the kernel echoed, and the echo may still be on its way to the
        // stream.
        let mut shell_took_line = false;
        match (self.leader, io) {
            (Some((pid, a)), Some(b)) if pid == fg => {
                look.same = true;
                look.wrote = b.wrote.saturating_sub(a.wrote);
                look.read = b.read.saturating_sub(a.read);
                look.reads = b.reads.saturating_sub(a.reads);
            }
            (Some((pid, a)), _) => {
                // What it wrote and the stream has not shown yet is still
                // its own (a shell that took a line and ran it between
                // two chunks of its echo), and so is when it last read
                // keys: that echo is of keys it read.
                if let Some(b) = procfs::io(pid, false) {
                    look.left = true;
                    look.wrote = b.wrote.saturating_sub(a.wrote);
                    look.read = b.read.saturating_sub(a.read);
                    let was_reading = self.reader.is_some_and(|(r, ..)| r == pid);
                    shell_took_line = pid == self.pane_pid
                        && look.read > 0
                        && shell::plain_shell(pid)
                        && (was_reading || (self.shell_about_to_read && look.wrote == 0));
                    // The new leader not readable yet (a child between
                    // fork and exec): the old one stays the one counted
                    // from, so its echo still in the stream keeps its
                    // credit at the next look.
                    if io.is_none() {
                        kept = Some((pid, b));
                    }
                } else {
                    self.echo = Credit::default();
                    self.last_read = None;
                }
            }
            _ => {
                self.echo = Credit::default();
                self.last_read = None;
            }
        }
        self.leader = kept.or(io.map(|io| (fg, io)));
        if look.read > 0 {
            self.last_read = Some(now);
        }
        self.echo.add(look.wrote, now);
        // Everything the pane's processes wrote.
        let family = procfs::family(self.pane_pid, TREE_CAP);
        let mut totals = Vec::with_capacity(family.len());
        let mut delta = 0u64;
        for (pid, parent) in family {
            let before = self.tree.iter().find(|(p, ..)| *p == pid);
            let Some(procfs::Io { wrote: w, .. }) = procfs::io(pid, true) else {
                // (Unreadable now, a zombie perhaps: kept as it was, for
                // when its parent reaps it.)
                totals.extend(before.copied());
                continue;
            };
            // A process not seen before wrote all it wrote since then.
            if !self.tree.is_empty() {
                delta += w.saturating_sub(before.map_or(0, |(.., b)| *b));
            }
            totals.push((pid, parent, w));
        }
        let taken_in = reaped_totals(&self.tree, &totals, procfs::exists);
        self.tree = totals;
        self.written
            .add(delta.saturating_sub(taken_in + self.unpaid), now);
        self.unpaid = 0;
        // Who reads a line: the leader first, then the rest of its group.
        if matches!(look.mode, Some(Mode::Canonical | Mode::Hidden)) {
            let group: Vec<u32> = std::iter::once(fg)
                .chain(
                    self.tree
                        .iter()
                        .map(|(p, ..)| *p)
                        .filter(|&p| p != fg && procfs::stat(p).is_some_and(|s| s.pgrp == fg)),
                )
                .collect();
            let mut found = None;
            let mut unknown = false;
            let mut running = false;
            for pid in group {
                match procfs::tty_read_state(pid, &self.tty) {
                    Some(ReadState::Reading(read)) => {
                        found = Some((pid, read));
                        break;
                    }
                    // A leader that runs may be on its way into its read,
                    // or back from a wake-up that was not its line (each
                    // typed key wakes a line reader): it cannot tell.
                    Some(ReadState::Running) if pid == fg => {
                        running = true;
                        unknown = true;
                    }
                    Some(_) => {}
                    None => unknown = true,
                }
            }
            look.line_reader = if found.is_some() {
                Some(true)
            } else if unknown {
                None
            } else {
                Some(false)
            };
            look.took = self.reader.map(|(pid, r, _)| took_input(pid, r));
            if shell_took_line && found.is_none() {
                // (The line's echo is the kernel's, and was read.)
                look.took = Some(true);
                look.line_reader = Some(true);
            }
            // (The reader seen last time, running now and having read
            // nothing yet, is still watched: whether it takes the line
            // shows in what it reads.)
            if found.is_some() || !running || look.took != Some(false) {
                let line = |pid, read| pid == self.pane_pid && shell::shell_command_line(pid, read);
                self.reader =
                    found.and_then(|(p, r)| Some((p, procfs::io(p, false)?.read, line(p, r))));
            }
            self.shell_about_to_read =
                look.shell && look.mode == Some(Mode::Canonical) && look.line_reader != Some(true);
            self.shell_running = look.shell && running;
        } else {
            self.shell_about_to_read = false;
            look.line_reader = look.mode.map(|_| false);
            look.took = self.reader.map(|(pid, r, _)| took_input(pid, r));
            self.reader = None;
        }
        look
    }

    fn mode(&mut self, now: Instant) -> Option<Mode> {
        let m = tty::settings(&self.tty);
        self.mode = Some((m, now));
        m.map(|s| s.mode)
    }
}

/// `data` is a small piece of whole plain lines (a flood's are not looked
/// at one by one, nor searched for this).
fn small_lines(data: &[u8]) -> bool {
    data.len() <= SMALL_CHUNK && crate::plain::whole_lines(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owed_look_waits_for_quiet_or_comes_now_and_then_in_a_flood() {
        // No such process: every look finds nothing, and takes no time.
        let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
        // (Output that is not lines: see the test below for lines.)
        p.lines_since_look = false;
        let now = Instant::now();
        let ms = Duration::from_millis;
        let mut at = |look_ago: u64, output_ago: u64| {
            p.last_look = Some(now - ms(look_ago));
            p.last_output = Some(now - ms(output_ago));
            p.owed_look_at(now)
        };
        // After small pieces only: LOOK_EVERY after the last look.
        assert!(at(50, 1) <= now);
        assert_eq!(at(2, 0), now + ms(8));
        // After large ones, as in a flood:
        let mut at = |look_ago: u64, output_ago: u64| {
            p.last_look = Some(now - ms(look_ago));
            p.last_output = Some(now - ms(output_ago));
            p.shown_large = true;
            p.owed_look_at(now)
        };
        // Quiet a moment since the last output: now.
        assert!(at(50, 20) <= now);
        // Output a moment ago, as in a flood between two of the hub's
        // reads: once the stream has stayed quiet long enough.
        assert_eq!(at(50, 1), now - ms(1) + QUIET_BEFORE_LOOK);
        assert!(QUIET_BEFORE_LOOK > crate::pane::rhythm::LONGEST_PAUSE);
        // Output still coming: each piece puts the look off again, up to
        // FLOW_LOOK_EVERY after the last look.
        assert_eq!(at(60, 0), now + QUIET_BEFORE_LOOK);
        assert_eq!(at(97, 0), now + ms(3));
        assert!(at(100, 0) <= now);
        // Never sooner than LOOK_EVERY after the last look.
        assert_eq!(at(2, 30), now + ms(8));
        // A flood that came sieved (lines the wait cannot use): only once
        // quiet as long as the hub may hold a flood, and not sooner than
        // FLOW_LOOK_EVERY after the last look.
        let mut at = |look_ago: u64, output_ago: u64, whole: bool| {
            p.last_look = Some(now - ms(look_ago));
            p.last_output = Some(now - ms(output_ago));
            p.shown_large = true;
            p.shown_sieved = true;
            p.shown_whole = whole;
            p.owed_look_at(now)
        };
        assert!(
            QUIET_AFTER_SIEVED
                > crate::pane::rhythm::LONGEST_HOLD + crate::pane::rhythm::LONGEST_PAUSE
        );
        assert_eq!(at(100, 0, false), now + QUIET_AFTER_SIEVED);
        assert_eq!(at(1000, 0, false), now + QUIET_AFTER_SIEVED);
        assert_eq!(at(1000, 30, false), now - ms(30) + QUIET_AFTER_SIEVED);
        assert!(at(1000, 130, false) <= now);
        // Whole output since the look as well: as before.
        assert!(at(100, 0, true) <= now);
    }

    #[test]
    fn a_small_piece_after_unlooked_large_output_is_looked_at() {
        let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
        let small = [b'x'; SMALL_CHUNK];
        let large = [b'x'; SMALL_CHUNK + 1];
        // (A look that stays "just taken", however slow the test runs.)
        let just_looked =
            |p: &mut ReaderProbe| p.last_look = Some(Instant::now() + LOOK_EVERY * 100);
        p.hint_for(&small, false);
        just_looked(&mut p);
        // Looked at a moment ago: a small piece waits for LOOK_EVERY.
        assert!(!p.wants_look(&small, false));
        p.shown(&small);
        assert!(!p.wants_look(&small, false));
        // After a large piece nobody looked at, it is looked at (keys
        // typed at a prompt that ended it), until a look is taken.
        p.shown(&large);
        assert!(p.wants_look(&small, false));
        assert!(!p.wants_look(&large, false));
        p.hint_for(&small, false);
        just_looked(&mut p);
        assert!(!p.wants_look(&small, false));
    }

    #[test]
    fn lines_that_keep_coming_are_looked_at_now_and_then() {
        let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
        let line = b"compiling unit 7 of 90\r\n";
        let just_looked =
            |p: &mut ReaderProbe| p.last_look = Some(Instant::now() - Duration::from_millis(20));
        // A first line after a look: looked at as before (LOOK_EVERY).
        just_looked(&mut p);
        assert!(p.wants_look(line, false));
        p.hint_for(line, false);
        // Lines after lines: every LINES_LOOK_EVERY, and the look owed
        // for them once quiet as long as the hub may hold lines.
        assert!(!p.wants_look(line, false));
        p.shown(line);
        let now = Instant::now();
        let at = p.owed_look_at(now);
        assert!(
            at >= now + QUIET_AFTER_SIEVED - Duration::from_millis(5),
            "{at:?}"
        );
        p.last_look = Some(Instant::now() - LINES_LOOK_EVERY);
        assert!(p.wants_look(line, false));
        assert!(p.owed_look_at(Instant::now()) <= Instant::now());
        // Anything else among them is looked at as before (a flow's
        // FLOW_LOOK_EVERY): a prompt, a question, an escape sequence, a
        // line not at a line's start.
        let looked_a_flow_ago =
            |p: &mut ReaderProbe| p.last_look = Some(Instant::now() - FLOW_LOOK_EVERY);
        for other in [&b"$ "[..], b"Continue? [y/N] ", b"\x1b[1mbold\x1b[m\r\n"] {
            let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
            p.hint_for(line, false);
            p.shown(line);
            looked_a_flow_ago(&mut p);
            assert!(!p.wants_look(line, false));
            assert!(p.wants_look(other, false), "{other:?}");
        }
        let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
        p.hint_for(line, false);
        p.shown(b"$ ");
        looked_a_flow_ago(&mut p);
        assert!(p.wants_look(b"ls\r\n", false), "keys' echo after a prompt");
        // Nor after a quiet moment longer than the hub holds lines.
        let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
        p.hint_for(line, false);
        p.shown(line);
        looked_a_flow_ago(&mut p);
        p.lines_at = Some(Instant::now() - QUIET_AFTER_SIEVED);
        p.last_output = p.lines_at;
        assert!(p.wants_look(line, false));
    }

    #[test]
    fn the_last_lines_of_a_sieved_chunk_are_looked_at_with_it() {
        let mut p = ReaderProbe::new(u32::MAX, "/dev/null");
        let tail = b"1999998\r\n1999999\r\n20";
        let now = Instant::now();
        // A flood's read, sieved, then its last lines at once: no look
        // for them; the look owed waits for the flood to be quiet.
        p.shown_sieved(1 << 20, 1 << 17);
        assert!(!p.wants_look(tail, false));
        p.shown(tail);
        assert!(p.owed_look_at(now) >= now + QUIET_AFTER_SIEVED - Duration::from_millis(1));
        // Whatever comes after them is looked at (keys typed at a prompt
        // the flood ended in), as after any large output.
        assert!(p.wants_look(b"l", false));
        // The last lines while the shell may read, or came later: looked at.
        p.shown_sieved(1 << 20, 1 << 17);
        assert!(p.wants_look(tail, true));
        p.sieved_at = Some(Instant::now() - TAIL_GAP);
        assert!(p.wants_look(tail, false));
        p.shown(tail);
        assert!(p.owed_look_at(Instant::now()) < Instant::now() + QUIET_AFTER_SIEVED);
    }

    #[test]
    fn kernel_echo_needs_a_reader_in_canonical_mode() {
        let l = |mode, line_reader| LeaderLook {
            mode,
            line_reader,
            ..LeaderLook::default()
        };
        assert_eq!(
            kernel_echo(&l(Some(Mode::Canonical), Some(true))),
            Some(true)
        );
        // A shell running a loop: canonical, nobody reading.
        assert_eq!(
            kernel_echo(&l(Some(Mode::Canonical), Some(false))),
            Some(false)
        );
        assert_eq!(kernel_echo(&l(Some(Mode::Hidden), Some(true))), Some(false));
        assert_eq!(kernel_echo(&l(Some(Mode::Raw), None)), Some(false));
        assert_eq!(kernel_echo(&l(None, None)), None);
    }

    /// dash takes a typed line, runs it (a mark, then `read -p`'s
    /// question) and sleeps in the read before the stream has shown the
    /// line's end: the echo shown first pays none of what dash wrote, and
    /// the mark and the question, shown next, are what it wrote.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_taken_lines_echo_leaves_the_credit_to_what_its_command_wrote() {
        use nix::fcntl::OFlag;
        use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
        use std::io::Write;
        use std::process::Command;
        if !procfs::available() || Command::new("dash").arg("-c").arg(":").status().is_err() {
            eprintln!("skipped: no /proc syscall file or no dash");
            return;
        }
        let mut master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let tty = ptsname_r(&master).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&tty)
            .unwrap();
        // (setsid -c: dash leads its own session on that terminal.)
        let mut dash = Command::new("setsid")
            .args(["-c", "dash", "-i"])
            .env("PS1", "")
            .env_remove("ENV")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave)
            .spawn()
            .unwrap();
        let pid = dash.id();
        let reads = || procfs::io(pid, false).map_or(0, |io| io.read);
        let asleep_in_read = || {
            matches!(
                procfs::tty_read_state(pid, &tty),
                Some(ReadState::Reading(_))
            )
        };
        let until = |what: &str, f: &dyn Fn() -> bool| {
            let end = Instant::now() + Duration::from_secs(10);
            while !f() {
                assert!(Instant::now() < end, "dash: {what}");
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        until("reads its first line", &asleep_in_read);
        let mut p = ReaderProbe::new(pid, &tty);
        let before = reads();
        let line = r"printf '\033]7731;t;B\007'; read -p 'Proceed? [y/N] ' ans";
        master.write_all(format!("{line}\n").as_bytes()).unwrap();
        until("took the line and asks", &|| {
            reads() > before && asleep_in_read()
        });
        // The stream shows the echo, then (another chunk) its end and what
        // dash wrote. (The line taken was dash's command line.)
        let h = p.hint_for(line.as_bytes(), false);
        assert_eq!(h.took_command_line, Some(true), "{h:?}");
        let rest = b"\r\n\x1b]7731;t;B\x07Proceed? [y/N] ";
        let h = p.hint_for(rest, true);
        assert_eq!(h.reader_woke, Some(true), "{h:?}");
        assert_eq!(h.written, Some(rest.len() - 2), "{h:?}");
        // (Seen taken before this chunk, as dash's command line.)
        assert_eq!(h.took_command_line, Some(true), "{h:?}");
        // The answer: taken by `read`, one byte at a time, no command line.
        let before = reads();
        master.write_all(b"y\n").unwrap();
        until("took the answer and reads again", &|| {
            reads() > before && asleep_in_read()
        });
        let h = p.hint_for(b"y\r\n", true);
        assert_eq!(h.reader_woke, Some(true), "{h:?}");
        assert_eq!(h.took_command_line, Some(false), "{h:?}");
        let _ = dash.kill();
        let _ = dash.wait();
        drop(master);
    }
}
