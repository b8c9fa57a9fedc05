//! Turns the raw byte stream of one pane into the lines a person would see
//! being written, so that every piece of new output can be matched once.
//!
//! This is not a terminal emulator: it tracks only the line under the cursor
//! (a *logical* line: rows joined across automatic wraps) and emits it as a
//! candidate whenever it is finished (line feed, cursor moved to another row,
//! screen cleared) or about to lose text that was never looked at (overwrite
//! after `\r`, erase, delete). That is what makes the helper see text that is
//! repainted within a millisecond, a repeated identical line, and output that
//! scrolls past `history-limit` before anyone captures it.
//!
//! Each cell remembers where it came from: `Old` (on screen before the wait
//! began), `New` (written by a program since) or `Echo` (typed input that a
//! line editor or the terminal echoed). When a shell reads a line is what
//! the shell says about itself: readline, zle and fish switch bracketed
//! paste on (`\e[?2004h`) when they start reading a line and off
//! (`\e[?2004l`) when it is accepted; shells with OSC 133 integration mark
//! prompt (A), input (B) and output (C); a shell without a line editor
//! (dash) sits in a canonical-mode read, which the caller tells from the
//! terminal ([`Hint::kernel_echo`]). Under bracketed paste alone the prompt
//! is what the shell prints within [`PROMPT_WINDOW`] of switching it on.
//!
//! While a shell reads a line, who wrote a piece of text decides (see
//! [`Hint`], from `pane::shell::ReaderProbe`): text the reading process
//! wrote itself is the echo of keys (or its own prompt, completion list,
//! notice); text it did not write came from another writer (a background
//! job, a server started with `&`, `wall`, a write to the tty) and is
//! output. A line that ends while the shell reads and that the shell may
//! have written is held until the shell says it accepted it (bracketed
//! paste off, OSC 133 C): if anything else comes first, or [`HOLD`] passes,
//! it was output. Under the kernel's echo (dash) the reading process
//! writes neither, so there a line counts as typed only if the shell took
//! it (its read returned when the line ended).

use std::collections::VecDeque;
use std::time::{Duration, Instant};
use unicode_width::UnicodeWidthChar;

mod bulk;
mod counts;
mod echo;
use echo::Held;
mod frames;
mod marks;
mod screen;

pub use bulk::sieve_wants;
pub use frames::frame_run;
pub use marks::{Item, Mark, RUN_OSC, RUN_TAG};

/// How long after `\e[?2004h` text still counts as the prompt, not as echo.
pub const PROMPT_WINDOW: Duration = Duration::from_millis(50);

/// How long a line that ended while a shell read, with nobody known to
/// have written it, waits for the shell to accept it before it counts as
/// output.
pub const HOLD: Duration = Duration::from_millis(500);

/// What the pane's terminal said of its reader when a chunk arrived (`None`:
/// not known); the caller looks before each chunk (see `probe::ReaderProbe`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hint {
    /// The process reading the terminal wrote anything since the last look.
    pub reader_wrote: Option<bool>,
    /// It read from the terminal (took keys) lately. Echo is written after
    /// reading the keys it echoes; what a line editor writes without having
    /// read anything (a job's end, a redraw on its own) is not echo.
    pub reader_read: Option<bool>,
    /// Its read of the terminal returned since the last look, or it is no
    /// longer blocked in it.
    pub reader_woke: Option<bool>,
    /// A program is asleep reading the terminal in canonical mode with echo
    /// on (a shell without a line editor, `read`, `cat`, `input()`): the
    /// kernel echoes what is typed.
    pub kernel_echo: Option<bool>,
    /// How many bytes at the end of the chunk the pane's processes wrote
    /// (the rest no process wrote: the kernel's echo, or a writer from
    /// outside the pane). None: not known.
    pub written: Option<usize>,
    /// The terminal is in raw mode (a program reads key by key).
    pub raw: Option<bool>,
    /// The process reading the terminal read from it since the last look
    /// (keys were typed).
    pub keys: Option<bool>,
    /// The line taken (`reader_woke`) was a shell's command line, no answer.
    pub took_command_line: Option<bool>,
}

/// A logical line longer than this many cells is matched, then cut to its
/// last [`KEEP_AFTER_CUT`] cells, so memory stays bounded when a program
/// writes without ever ending the line.
const MAX_CELLS: usize = 256 * 1024;
const KEEP_AFTER_CUT: usize = 4096;

/// How many ended lines the tracker keeps as drawn, for the tail of a
/// result (see [`LineTracker::screen_tail`]).
pub const TRANSCRIPT_LINES: usize = 64;
/// The most lines a batch is given room for before it holds them.
const OUT_ROOM: usize = 4096;

/// Where a cell's character came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Old,
    New,
    /// Written by a shell printing its prompt (new, not a command's output).
    Prompt,
    Echo,
}

#[derive(Clone, Debug)]
struct Cell {
    /// `'\0'` marks the right half of a wide character.
    ch: char,
    origin: Origin,
    /// Written since the line was last emitted: losing it needs an emit.
    fresh: bool,
    combining: Option<Box<str>>,
}

const BLANK: Cell = Cell {
    ch: ' ',
    origin: Origin::Old,
    fresh: false,
    combining: None,
};

/// A line (or the state of a line just before it was overwritten) that holds
/// new output and has not been judged yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// What patterns are matched against: the line without echoed input,
    /// with the blanks a program wrote at its end (a prompt's `> `).
    pub text: String,
    /// The line as rendered, when it differs from `text` (it holds echo).
    pub rendered: Option<String>,
    /// Nothing on the line came from a program's output: it is a shell
    /// prompt, with or without the echo of a typed command.
    pub prompt: bool,
}

impl Candidate {
    /// The line as the pane shows it, trailing blanks trimmed.
    pub fn line(&self) -> &str {
        self.rendered.as_deref().unwrap_or(self.text.trim_end())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputState {
    /// A program is writing output.
    Output,
    /// A shell is printing its prompt; `until` ends the bracketed-paste
    /// heuristic window (None under OSC 133, which says when input starts).
    Prompt { until: Option<Instant> },
    /// A line editor is echoing what is typed.
    Input,
    /// A shell without a line editor reads a line; the kernel echoes keys.
    Kernel,
    /// A program reads key by key and writes their echo itself, with no
    /// bracketed paste to say where a line starts and ends (node's REPL, a
    /// line editor with it switched off): what it writes just after
    /// reading keys is their echo up to the line feed that ends the line;
    /// what it writes without having read a key is output.
    Raw,
}

impl InputState {
    /// Who was reading the terminal at entry.
    fn of(entry: &TrackerStart) -> InputState {
        if entry.at_prompt {
            InputState::Input
        } else if entry.kernel_echo {
            InputState::Kernel
        } else if entry.raw_reader {
            InputState::Raw
        } else {
            InputState::Output
        }
    }
}

/// How the pane looked when the wait began.
#[derive(Clone, Debug)]
pub struct TrackerStart {
    pub width: usize,
    /// The rendered text of the cursor's row.
    pub row: String,
    pub cursor_x: usize,
    pub alternate_on: bool,
    /// True when a shell's line editor was reading input at entry, so text
    /// written before the line is accepted is echo.
    pub at_prompt: bool,
    /// True when a shell without a line editor was reading a line at entry
    /// (the kernel echoes what is typed).
    pub kernel_echo: bool,
    /// True when a program other than the shell was reading key by key at
    /// entry (a REPL's line editor).
    pub raw_reader: bool,
}

/// Feeds pane bytes through a VT parser into [`Candidate`] lines.
pub struct LineTracker {
    parser: vte::Parser,
    state: State,
    /// The parser is known to stand in its ground state (see `bulk`).
    ground: crate::plain::Ground,
    /// Plain lines may be taken in bulk (off only to test that it changes
    /// nothing).
    bulk_enabled: bool,
    /// The lines a wait wants (see [`LineTracker::set_needed`]).
    wanted: bulk::Wanted,
}

struct State {
    width: usize,
    cells: Vec<Cell>,
    cursor: usize,
    pending_wrap: bool,
    /// New cells were written since the line was last emitted.
    dirty: bool,
    alt: bool,
    saw_alt: bool,
    saw_output: bool,
    input: InputState,
    osc133: bool,
    /// Bracketed paste was switched on or off (a line editor marks where
    /// it reads): see [`LineTracker::editor_marks`].
    paste_marks: bool,
    /// Inside screen's `ESC k title ESC \`, whose text is not output.
    in_title: bool,
    /// Times a shell started reading a new command line (a prompt came back).
    prompts: u32,
    /// The exit status an OSC 133 `D` mark reported last.
    last_status: Option<i32>,
    /// BELs outside escape sequences, but a line editor's answer to a key.
    bells: u64,
    /// The title the program set last (OSC 0 or 2), and how many times.
    title: Option<String>,
    titles: u64,
    /// Desktop notifications asked for (OSC 9, 777): how many, the last's words.
    notifications: (u64, Option<String>),
    /// The parser is known to stand where the program's bytes put it (it
    /// saw the start of a sequence or of a line); until then a BEL may end
    /// a title begun before the stream (which may begin inside one).
    synced: bool,
    /// Characters a program wrote (not echo), the alternate screen's
    /// included: see [`LineTracker::written`].
    written: u64,
    now: Instant,
    /// Emit a line only when finished, as it ends up (command output), not
    /// each state before an overwrite (text waits).
    final_only: bool,
    out: Vec<Item>,
    /// Strings of lines the caller is done with, for the next lines.
    spare: Vec<String>,
    /// What the caller saw of the reading process for the current chunk.
    hint: Hint,
    /// The text being fed was written by a program (not typed), as far as
    /// the kernel's echo goes (see [`LineTracker::feed_kernel`]).
    attributed: bool,
    /// A raw reader's typed line ended: what it writes is output until
    /// keys are typed again (see [`LineTracker::feed_raw`]).
    raw_line_done: bool,
    /// A chunk ended in the prompt's window (see `prompt_goes_on`).
    prompt_chunk_over: bool,
    /// The kernel-echo reader took a line since the current line began:
    /// that line, when it ends, was typed (the wake may be seen with one
    /// chunk of its echo and its line feed come in the next).
    line_taken: bool,
    held: Option<Held>,
    /// The last lines a line feed ended, as drawn (echo included).
    transcript: VecDeque<String>,
    /// Lines put in the transcript since the wait began (more than it
    /// holds: it no longer starts at the entry row).
    recorded: usize,
    /// Since the entry, the cursor only went down line by line (no cursor
    /// up, no jump, no clear, no alternate screen): `transcript` and the
    /// current line are the screen from the entry row down.
    linear: bool,
}

impl LineTracker {
    pub fn new(entry: &TrackerStart) -> Self {
        let width = entry.width.max(1);
        let mut cells = Vec::new();
        for ch in entry.row.chars() {
            push_char(&mut cells, ch, Origin::Old);
        }
        let cursor = entry.cursor_x;
        if cells.len() < cursor {
            cells.resize(cursor, BLANK);
        }
        Self {
            parser: vte::Parser::new(),
            ground: crate::plain::Ground::default(),
            bulk_enabled: true,
            wanted: bulk::Wanted::default(),
            state: State {
                width,
                cells,
                cursor,
                pending_wrap: false,
                dirty: false,
                alt: entry.alternate_on,
                saw_alt: entry.alternate_on,
                saw_output: false,
                input: InputState::of(entry),
                osc133: false,
                paste_marks: false,
                in_title: false,
                prompts: 0,
                last_status: None,
                bells: 0,
                title: None,
                titles: 0,
                notifications: (0, None),
                synced: false,
                written: 0,
                now: Instant::now(),
                final_only: false,
                out: Vec::new(),
                spare: Vec::new(),
                hint: Hint::default(),
                attributed: true,
                raw_line_done: false,
                prompt_chunk_over: false,
                line_taken: false,
                held: None,
                transcript: VecDeque::new(),
                recorded: 0,
                linear: !entry.alternate_on,
            },
        }
    }

    /// Lines as they end up (overwritten states are not emitted), empty
    /// lines included, and marks: the view of a command's output.
    pub fn final_lines(mut self) -> Self {
        self.state.final_only = true;
        self
    }

    /// Switch [`LineTracker::final_lines`] on or off.
    pub fn set_final_only(&mut self, on: bool) {
        self.state.final_only = on;
    }

    /// Feed bytes the pane's program wrote, read at `at`.
    pub fn feed(&mut self, data: &[u8], at: Instant) {
        self.feed_hinted(data, at, Hint::default());
    }

    /// Feed bytes with what the terminal said about its reader then.
    pub fn feed_hinted(&mut self, data: &[u8], at: Instant, hint: Hint) {
        self.chunk_begins(at, hint);
        self.chunk_body(data);
        self.chunk_ends(data);
    }

    /// What every chunk starts with: the time, the hint, and what they end.
    fn chunk_begins(&mut self, at: Instant, hint: Hint) {
        self.state.now = at;
        self.state.hint = hint;
        self.state.prompt_goes_on();
        self.state.tick();
        self.state.observe();
        self.state.note_taken();
    }

    /// A chunk's bytes (or a piece of them), as whoever reads takes them.
    fn chunk_body(&mut self, data: &[u8]) {
        match self.state.input {
            InputState::Kernel => self.feed_kernel(data),
            InputState::Raw => {
                self.feed_raw(data);
                // The program no longer reads key by key (it runs what
                // was typed): once the typed line is over (its echo may
                // still come in pieces, written before the program left
                // raw mode), what it writes is output.
                if self.state.hint.raw == Some(false)
                    && self.state.input == InputState::Raw
                    && (self.state.raw_line_done || !self.state.has_echo())
                {
                    self.state.input = InputState::Output;
                }
            }
            _ => self.feed_output(data),
        }
    }

    /// After a chunk whose last bytes were `last`.
    fn chunk_ends(&mut self, last: &[u8]) {
        // A shell writes its prompt with (or right after) switching
        // bracketed paste on; a later chunk is the echo of keys, however
        // soon, unless the prompt is still to come (`prompt_goes_on`).
        if let InputState::Prompt { until: Some(_) } = self.state.input {
            let to_come = last.ends_with(echo::PASTE_ON) && !self.state.has_text();
            self.state.prompt_chunk_over = to_come;
            if !to_come {
                self.state.input = InputState::Input;
            }
        }
    }

    /// Through the parser, keeping track of whether it stands in ground.
    fn advance(&mut self, data: &[u8]) {
        self.parser.advance(&mut self.state, data);
        self.ground.advance(data);
    }

    /// What the terminal says of its reader now, with no output to go with
    /// it (a look taken once the stream went idle).
    pub fn observe(&mut self, at: Instant, hint: Hint) {
        self.state.now = self.state.now.max(at);
        self.state.hint = hint;
        self.state.tick();
        self.state.observe();
        self.state.note_taken();
    }

    /// Feed a chunk while a program reads a line with the kernel's echo:
    /// what the pane's processes wrote (the chunk's end, see
    /// [`Hint::written`]) is output at once; the rest may be typed keys,
    /// and its line is judged when it ends. A reader that took a line
    /// since the last look took the line this chunk ends first: that part
    /// is its echo, whatever was written since.
    fn feed_kernel(&mut self, data: &[u8]) {
        let hint = self.state.hint;
        if hint.reader_woke == Some(true)
            && let Some(nl) = memchr::memchr(b'\n', data)
        {
            self.state.attributed = false;
            self.advance(&data[..=nl]);
            self.state.attributed = true;
            let rest = &data[nl + 1..];
            if !rest.is_empty() {
                self.state.observe();
                if self.state.input == InputState::Kernel {
                    self.feed_kernel_part(rest, rest.len());
                } else {
                    self.advance(rest);
                }
            }
            return;
        }
        let written = match hint.written {
            // The reader took a line whose line feed comes later: what
            // looks like the kernel's echo here is that line's, even when
            // the command it ran wrote since (its bytes come after it).
            _ if self.state.taken_echo_goes_on(data) => 0,
            Some(w) => w.min(data.len()),
            // Nothing says how much: the reader's own writing, or none.
            None if hint.reader_wrote == Some(true) => data.len(),
            None => 0,
        };
        self.feed_kernel_part(data, written);
    }

    /// Feed a chunk while a program reads key by key with no bracketed
    /// paste (see `InputState::Raw`): what it writes soon after reading
    /// keys is their echo up to the line feed that ends the typed line;
    /// from there until keys are typed again, what it writes (its answer,
    /// its next prompt) is output, however soon it comes.
    fn feed_raw(&mut self, data: &[u8]) {
        let hint = self.state.hint;
        if hint.keys == Some(true) {
            self.state.raw_line_done = false;
        }
        let echo = !self.state.raw_line_done
            && hint.reader_wrote == Some(true)
            && (hint.keys == Some(true) || hint.reader_read == Some(true));
        if !echo {
            self.advance(data);
            return;
        }
        let nl = memchr::memchr(b'\n', data);
        let cut = nl.map_or(data.len(), |nl| nl + 1);
        self.state.attributed = false;
        self.advance(&data[..cut]);
        self.state.attributed = true;
        if nl.is_some() {
            self.state.raw_line_done = true;
        }
        self.advance(&data[cut..]);
    }

    fn feed_kernel_part(&mut self, data: &[u8], written: usize) {
        let cut = data.len() - written;
        let (unknown, known) = data.split_at(cut);
        if !unknown.is_empty() {
            // The kernel echoes typed keys as they are (control keys as
            // `^X`): an escape sequence, a bell or a lone carriage return
            // was written by a program.
            self.state.attributed = !could_be_kernel_echo(unknown);
            self.advance(unknown);
        }
        if !known.is_empty() {
            self.state.attributed = true;
            self.advance(known);
        }
        self.state.attributed = true;
    }

    /// The pane width changed (rows re-wrap from here on).
    /// The width of the screen the tracker follows.
    pub fn width(&self) -> usize {
        self.state.width
    }

    pub fn set_width(&mut self, width: usize) {
        self.state.width = width.max(1);
        self.state.pending_wrap = false;
    }

    /// Take the candidates found so far; with `partial`, the unfinished line
    /// under the cursor too, if it holds new text not yet taken.
    pub fn take(&mut self, partial: bool) -> Vec<Candidate> {
        self.take_items(partial)
            .into_iter()
            .filter_map(|i| match i {
                Item::Line(c) => Some(c),
                Item::Mark(_) => None,
            })
            .collect()
    }

    /// Lines and marks found so far, in order (see [`LineTracker::take`]).
    pub fn take_items(&mut self, partial: bool) -> Vec<Item> {
        if partial {
            self.state.emit();
        }
        // The next batch is given room for as many as this one: a flood's
        // batches do not grow their vector line by line.
        let room = self.state.out.len().min(OUT_ROOM);
        std::mem::replace(&mut self.state.out, Vec::with_capacity(room))
    }

    /// The line under the cursor as rendered, not taken.
    pub fn current_line(&self) -> String {
        self.state.rendered()
    }

    /// The screen from the entry row down as the stream drew it (the last
    /// lines of it, wrapped rows joined, trailing blanks trimmed), or None
    /// when the cursor moved in a way a line-by-line view cannot follow
    /// (then ask tmux).
    pub fn screen_tail(&self) -> Option<Vec<String>> {
        if !self.state.linear {
            return None;
        }
        let mut rows: Vec<String> = self.state.transcript.iter().cloned().collect();
        rows.push(self.state.rendered());
        Some(rows)
    }

    /// Everything taken in so far becomes old (written before the wait):
    /// the line keeps its text and the cursor its place, nothing is new.
    pub fn forget(&mut self) {
        let st = &mut self.state;
        // (The bells of bytes from before the entry rang before it.)
        st.bells = 0;
        st.notifications.0 = 0;
        for c in &mut st.cells {
            c.origin = Origin::Old;
            c.fresh = false;
        }
        st.dirty = false;
        st.saw_output = false;
        st.saw_alt = st.alt;
        st.prompts = 0;
        st.last_status = None;
        st.out.clear();
        st.held = None;
        st.transcript.clear();
        st.recorded = 0;
        st.linear = !st.alt;
    }

    /// Who reads the terminal is what `entry` says (after bytes that were
    /// there before the entry were fed to draw the cursor's line: their
    /// escape sequences said nothing about now).
    pub fn set_input(&mut self, entry: &TrackerStart) {
        self.state.input = InputState::of(entry);
        self.state.raw_line_done = false;
    }

    /// The screen stops being a line-by-line flow from the entry.
    pub fn lose_flow(&mut self) {
        self.state.lose_flow();
    }

    /// The line under the cursor split at the cursor, as rendered.
    pub fn split_at_cursor(&self) -> (String, String) {
        let at = self.state.cursor.min(self.state.cells.len());
        let text = |cells: &[Cell]| {
            let mut s = String::new();
            for cell in cells.iter().filter(|c| c.ch != '\0') {
                s.push(cell.ch);
                if let Some(c) = &cell.combining {
                    s.push_str(c);
                }
            }
            s
        };
        (text(&self.state.cells[..at]), text(&self.state.cells[at..]))
    }

    /// The line under the cursor holds new text not yet taken.
    pub fn has_partial(&self) -> bool {
        self.state.dirty
    }

    /// Lines or marks are waiting to be taken.
    pub fn has_items(&self) -> bool {
        !self.state.out.is_empty()
    }

    /// A line that ended while the shell read is held (see [`HOLD`]);
    /// call [`LineTracker::tick`] at this moment.
    pub fn held_until(&self) -> Option<Instant> {
        self.state.held.as_ref().map(|h| h.until)
    }

    /// Time passed: a held line whose moment came is output.
    pub fn tick(&mut self, now: Instant) {
        self.state.now = self.state.now.max(now);
        self.state.tick();
    }

    /// A shell reads a line (bracketed paste on, OSC 133 B, or a shell
    /// without a line editor in its read): worth asking the terminal who
    /// writes (see [`Hint`]).
    pub fn reading(&self) -> bool {
        self.state.input != InputState::Output
    }

    /// The line being read is echoed by the kernel (no line editor).
    pub fn kernel_echo(&self) -> bool {
        self.state.input == InputState::Kernel
    }

    /// A shell's line editor is reading a command line (bracketed paste on
    /// or OSC 133 B seen, and no command started since).
    pub fn at_prompt(&self) -> bool {
        self.state.input != InputState::Output
    }
}

/// Bytes the kernel may have echoed for typed keys: no escape sequence, no
/// bell, no carriage return but before a line feed.
pub(super) fn could_be_kernel_echo(bytes: &[u8]) -> bool {
    if memchr::memchr2(0x1b, 0x07, bytes).is_some() {
        return false;
    }
    memchr::memchr_iter(b'\r', bytes).all(|i| bytes.get(i + 1).is_none_or(|&b| b == b'\n'))
}

fn push_char(cells: &mut Vec<Cell>, ch: char, origin: Origin) {
    match ch.width() {
        Some(0) | None => {
            if let Some(last) = cells.last_mut() {
                append_combining(last, ch);
            }
        }
        Some(w) => {
            cells.push(Cell {
                ch,
                origin,
                fresh: false,
                combining: None,
            });
            if w == 2 {
                cells.push(Cell {
                    ch: '\0',
                    origin,
                    fresh: false,
                    combining: None,
                });
            }
        }
    }
}

fn append_combining(cell: &mut Cell, ch: char) {
    let mut s = cell.combining.take().map(String::from).unwrap_or_default();
    s.push(ch);
    cell.combining = Some(s.into_boxed_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(width: usize) -> TrackerStart {
        TrackerStart::blank(width)
    }

    fn texts(t: &mut LineTracker, partial: bool) -> Vec<String> {
        t.take(partial).into_iter().map(|c| c.text).collect()
    }

    fn run(width: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut t = LineTracker::new(&entry(width));
        let now = Instant::now();
        for c in chunks {
            t.feed(c, now);
        }
        texts(&mut t, true)
    }

    #[test]
    fn lines_and_partial_line() {
        assert_eq!(
            run(80, &[b"one\r\ntwo\r\nthr", b"ee"]),
            ["one", "two", "three"]
        );
    }

    /// A line keeps the blanks a program wrote at its end (what a
    /// `PROMPT> ` pattern needs), not the blank cells nobody wrote.
    #[test]
    fn written_trailing_blanks_are_kept() {
        assert_eq!(run(80, &[b"PROMPT> "]), ["PROMPT> "]);
        assert_eq!(run(80, &[b"(y/n) \r\n"]), ["(y/n) "]);
        // Moved past with a cursor move, never written: not kept.
        assert_eq!(run(80, &[b"ab\x1b[5Cc\x1b[3C\r\n"]), ["ab     c"]);
        // Shown trimmed.
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"PROMPT> ", Instant::now());
        assert_eq!(t.take(true)[0].line(), "PROMPT>");
    }

    #[test]
    fn repeated_identical_lines_are_each_new() {
        assert_eq!(run(80, &[b"ready\r\nready\r\n"]), ["ready", "ready"]);
    }

    #[test]
    fn chunk_boundaries_inside_escapes_and_utf8() {
        let s = "caf\u{e9} \x1b[31mred\x1b[0m\r\n".as_bytes();
        for cut in 0..s.len() {
            assert_eq!(
                run(80, &[&s[..cut], &s[cut..]]),
                ["caf\u{e9} red"],
                "cut {cut}"
            );
        }
    }

    #[test]
    fn overwritten_text_is_still_seen() {
        assert_eq!(run(80, &[b"MARK\r    \r"]), ["MARK"]);
        assert_eq!(run(80, &[b"MARK\r", b"done\r\n"]), ["MARK", "done"]);
        assert_eq!(run(80, &[b"MARK\r\x1b[K"]), ["MARK"]);
        assert_eq!(run(80, &[b"50%\r51%"]), ["50%", "51%"]);
    }

    #[test]
    fn wrapped_rows_are_one_line() {
        assert_eq!(run(4, &[b"abcdefghij\r\n"]), ["abcdefghij"]);
        // \r returns to the start of the current row, not of the line.
        assert_eq!(run(4, &[b"abcdefgh\rXY\r\n"]), ["abcdefgh", "abcdXYgh"]);
        // A line that ends its first row exactly: \r goes to that row's start.
        assert_eq!(run(4, &[b"abcd\rXY\r\n"]), ["abcd", "XYcd"]);
    }

    #[test]
    fn clear_screen_keeps_going() {
        assert_eq!(
            run(80, &[b"before\x1b[H\x1b[2J\x1b[3Jafter\r\n"]),
            ["before", "after"]
        );
    }

    #[test]
    fn echo_is_not_output_under_bracketed_paste() {
        let mut t = LineTracker::new(&TrackerStart {
            width: 80,
            row: "$ ".into(),
            cursor_x: 2,
            alternate_on: false,
            at_prompt: true,
            kernel_echo: false,
            raw_reader: false,
        });
        let t0 = Instant::now();
        t.feed(b"sleep 1; echo MARK\r\n\x1b[?2004l\r", t0);
        assert!(t.take(true).is_empty());
        assert!(!t.saw_output());
        t.feed(b"MARK\r\n\x1b[?2004h$ ", t0 + Duration::from_secs(1));
        assert_eq!(texts(&mut t, true), ["MARK", "$ "]);
        // Typed later than the prompt window: echo again.
        t.feed(b"echo again", t0 + Duration::from_secs(2));
        assert!(t.take(true).is_empty());
        t.feed(b"\r\n\x1b[?2004l\r", t0 + Duration::from_secs(2));
        let c = t.take(true);
        assert!(c.is_empty(), "{c:?}");
    }

    #[test]
    fn prompt_line_with_echo_reports_rendered_line() {
        let mut t = LineTracker::new(&entry(80));
        let t0 = Instant::now();
        t.feed(b"\x1b[?2004h$ ", t0);
        t.feed(b"ls", t0 + Duration::from_secs(1));
        t.feed(b"\r\n\x1b[?2004l\r", t0 + Duration::from_secs(1));
        let c = t.take(true);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].text, "$ ");
        assert_eq!(c[0].line(), "$ ls");
    }

    #[test]
    fn a_prompt_in_a_chunk_of_its_own_is_still_the_prompt() {
        // bash switches bracketed paste on and writes its prompt in two
        // writes, which tmux may pass on apart: the next chunk is the
        // prompt (zsh writes its prompt first: what follows is echo).
        let t0 = Instant::now();
        let soon = t0 + Duration::from_millis(5);
        let shell = hint(true, true, None);
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"done\r\n", t0);
        assert_eq!(lines(&mut t, true), ["done"]);
        t.feed(b"\x1b[?2004h", t0);
        t.feed_hinted(b"PROMPT> ", soon, shell);
        assert_eq!(lines(&mut t, true), ["PROMPT> "]);
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"$ \x1b[?2004h", t0);
        t.feed_hinted(b"ls", soon, shell);
        assert_eq!(lines(&mut t, true), ["$ "]);
        // Past the prompt's window it is echo.
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"\x1b[?2004h", t0);
        t.feed_hinted(b"ls", t0 + PROMPT_WINDOW * 2, shell);
        assert!(lines(&mut t, true).is_empty());
        // Another writer's line just after it is output.
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"\x1b[?2004h", t0);
        t.feed_hinted(b"BG\r\n", soon, hint(false, false, None));
        assert_eq!(lines(&mut t, true), ["BG"]);
    }

    #[test]
    fn keys_typed_at_a_prompt_drawn_first_are_echo_in_the_same_chunk() {
        // A loaded machine passes on the prompt, the keys typed at it and
        // their acceptance as one chunk: the typed line is not output.
        let t0 = Instant::now();
        let after = |before: &[u8], chunk: &[u8]| {
            let mut t = LineTracker::new(&entry(80));
            t.feed(before, t0);
            lines(&mut t, true);
            t.feed_hinted(chunk, t0, hint(true, true, None));
            lines(&mut t, true)
        };
        let typed_is_echo = |chunk: &[u8]| {
            let got = after(b"$ for i in 1; do\r\n", chunk);
            assert!(got.iter().all(|l| !l.contains("TYPED")), "{got:?}");
        };
        // zsh draws its continuation prompt, then switches bracketed paste
        // on.
        typed_is_echo(b"\rfor> \x1b[?2004hecho TYPED; done\x1b[?2004l\r\r\n");
        // bash switches it on, then draws its prompt.
        typed_is_echo(b"\x1b[?2004l\r\x1b[?2004h> echo TYPED; done\r\n\x1b[?2004l\r");
        // A prompt of two lines in one chunk stays the prompt.
        let got = after(b"done\r\n", b"\x1b[?2004huser@host ~\r\n$ ");
        assert_eq!(got, ["user@host ~", "$ "]);
    }

    #[test]
    fn counts_prompts_coming_back() {
        let mut t = LineTracker::new(&entry(80));
        let t0 = Instant::now();
        t.feed(b"building\r\n", t0);
        assert_eq!(t.prompts(), (0, None));
        t.feed(b"\x1b[?2004h$ ", t0);
        assert_eq!(t.prompts(), (1, None));
        // Redrawing the prompt while editing is not a new prompt.
        t.feed(b"\x1b[?2004h$ ", t0);
        assert_eq!(t.prompts(), (1, None));
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"out\r\n\x1b]133;D;3\x07\x1b]133;A\x07$ ", t0);
        assert_eq!(t.prompts(), (1, Some(3)));
    }

    #[test]
    fn osc133_marks_input() {
        let mut t = LineTracker::new(&entry(80));
        let t0 = Instant::now();
        t.feed(b"\x1b]133;A\x07$ \x1b]133;B\x07", t0);
        t.feed(b"echo X", t0 + Duration::from_secs(5));
        t.feed(b"\r\n\x1b]133;C\x07X\r\n", t0 + Duration::from_secs(5));
        assert_eq!(texts(&mut t, true), ["$ ", "X"]);
    }

    #[test]
    fn alternate_screen_is_not_matched() {
        let mut t = LineTracker::new(&entry(80));
        let now = Instant::now();
        t.feed(b"\x1b[?1049hSECRET\r\n\x1b[?1049lafter\r\n", now);
        assert_eq!(texts(&mut t, true), ["after"]);
        assert!(t.saw_alternate());
        assert!(!t.state.alt);
    }

    #[test]
    fn entry_row_text_joins_new_text() {
        let mut t = LineTracker::new(&TrackerStart {
            width: 80,
            row: "Progress:".into(),
            cursor_x: 9,
            alternate_on: false,
            at_prompt: false,
            kernel_echo: false,
            raw_reader: false,
        });
        t.feed(b" DONE", Instant::now());
        assert_eq!(texts(&mut t, true), ["Progress: DONE"]);
    }

    #[test]
    fn old_text_alone_is_never_a_candidate() {
        let mut t = LineTracker::new(&TrackerStart {
            width: 80,
            row: "stale".into(),
            cursor_x: 0,
            alternate_on: false,
            at_prompt: false,
            kernel_echo: false,
            raw_reader: false,
        });
        t.feed(b"\r\n\r\n", Instant::now());
        assert!(t.take(true).is_empty());
    }

    #[test]
    fn wide_and_combining_characters() {
        assert_eq!(
            run(80, &["日本 e\u{301}\r\n".as_bytes()]),
            ["日本 e\u{301}"]
        );
        // A wide char in the last column wraps whole.
        assert_eq!(run(3, &["ab日\r\n".as_bytes()]), ["ab 日"]);
    }

    #[test]
    fn screen_title_sequence_is_not_text() {
        assert_eq!(run(80, &[b"\x1bkvim\x1b\\hello\r\n"]), ["hello"]);
    }

    #[test]
    fn endless_line_stays_bounded() {
        let mut t = LineTracker::new(&entry(80));
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            t.feed(&chunk, Instant::now());
            t.take(true);
        }
        assert!(t.state.cells.len() <= MAX_CELLS + chunk.len());
    }

    /// A question drawn before the entry (`Password: `, read by a program
    /// with the kernel's echo, not as the shell's command line), answered
    /// after it: the answer's echo and
    /// the line feed come (the reader took the line), then what the
    /// program wrote. The answered question is a line, as typed, whether
    /// the answer's echo and the output came in one chunk or in two, as
    /// it is when the entry comes after the answer (it is then in the
    /// entry's capture). (`output` joining just before the answer lost it:
    /// nothing on the line was new.)
    #[test]
    fn a_question_from_before_the_entry_answered_after_it_is_a_line() {
        let at_question = || {
            LineTracker::new(&TrackerStart {
                width: 80,
                row: "Password: ".into(),
                cursor_x: 10,
                alternate_on: false,
                at_prompt: false,
                kernel_echo: true,
                raw_reader: false,
            })
        };
        let now = Instant::now();
        // The reader took the line (its read returned) and runs on: the
        // terminal is no longer read; what the pane wrote since is counted.
        let took = |written| Hint {
            reader_wrote: Some(false),
            reader_read: Some(false),
            reader_woke: Some(true),
            kernel_echo: Some(false),
            written: Some(written),
            raw: Some(false),
            keys: Some(false),
            took_command_line: Some(false),
        };
        let answered = |items: Vec<Candidate>| {
            items
                .into_iter()
                .map(|c| c.rendered.unwrap_or(c.text))
                .collect::<Vec<_>>()
        };
        // The echo and the output apart.
        let mut t = at_question();
        t.feed_hinted(b"y\r\n", now, took(0));
        let mut got = answered(t.take(true));
        t.feed_hinted(
            b"got y\r\n",
            now,
            Hint {
                reader_woke: None,
                ..took(7)
            },
        );
        got.extend(answered(t.take(true)));
        assert_eq!(got, ["Password: y", "got y"]);
        // Together.
        let mut t = at_question();
        t.feed_hinted(b"y\r\ngot y\r\n", now, took(7));
        assert_eq!(answered(t.take(true)), ["Password: y", "got y"]);
    }

    fn at_prompt(kernel: bool) -> LineTracker {
        LineTracker::new(&TrackerStart {
            width: 80,
            row: "$ ".into(),
            cursor_x: 2,
            alternate_on: false,
            at_prompt: !kernel,
            kernel_echo: kernel,
            raw_reader: false,
        })
    }

    fn hint(wrote: bool, woke: bool, kernel: Option<bool>) -> Hint {
        Hint {
            reader_wrote: Some(wrote),
            reader_read: Some(woke),
            reader_woke: Some(woke),
            kernel_echo: kernel,
            written: None,
            raw: None,
            keys: None,
            took_command_line: None,
        }
    }

    fn lines(t: &mut LineTracker, partial: bool) -> Vec<String> {
        t.take(partial).into_iter().map(|c| c.text).collect()
    }

    /// While readline reads: what the shell did not write is output, a
    /// whole line or a piece of one; what it wrote (echo) is not.
    #[test]
    fn another_writer_at_a_line_editor_prompt_is_output() {
        let mut t = at_prompt(false);
        let now = Instant::now();
        t.feed_hinted(b"BG_LINE\r\n", now, hint(false, false, None));
        assert_eq!(lines(&mut t, true), ["$ BG_LINE"]);
        t.feed_hinted(b"Continue? ", now, hint(false, false, None));
        assert_eq!(lines(&mut t, true), ["Continue? "]);
        // Typed slowly in pieces, then Enter: echo, never output.
        let mut t = at_prompt(false);
        for piece in [&b"ech"[..], b"o TYPED", b"\x08\x1b[K", b"D"] {
            t.feed_hinted(piece, now, hint(true, true, None));
            assert!(lines(&mut t, true).iter().all(|l| !l.contains("TYPE")));
        }
        t.feed_hinted(b"\r\n\x1b[?2004l\r", now, hint(true, true, None));
        assert!(t.take(true).is_empty());
        t.feed_hinted(b"TYPED\r\n", now, hint(false, false, None));
        assert_eq!(lines(&mut t, true), ["TYPED"]);
        // zsh: the line accepted before its line feed, which comes once
        // the command reads with the kernel's echo (`read x`).
        let mut t = at_prompt(false);
        t.feed_hinted(b"echo TYPED", now, hint(true, true, None));
        t.feed_hinted(b"\x1b[?2004l", now, hint(true, true, Some(true)));
        t.feed_hinted(b"\r\r\nTYPED\r\n", now, hint(true, false, Some(true)));
        assert_eq!(lines(&mut t, true), ["TYPED"]);
    }

    /// With nothing to say who wrote (no /proc): a line that ends while the
    /// shell reads is held; the shell accepting it makes it typed, anything
    /// else (or the time passing) output.
    #[test]
    fn without_hints_a_line_waits_for_the_shell_to_take_it() {
        let now = Instant::now();
        let mut t = at_prompt(false);
        t.feed(b"echo X\r\n", now);
        assert!(t.take(true).is_empty());
        assert!(t.held_until().is_some());
        t.feed(b"\x1b[?2004l\rX\r\n", now);
        assert_eq!(lines(&mut t, true), ["X"]);
        // Another line comes instead: the held one was output.
        let mut t = at_prompt(false);
        t.feed(b"READY\r\n", now);
        // (more text at the prompt: still echo, as nothing says otherwise)
        t.feed(b"more", now);
        assert_eq!(lines(&mut t, true), ["$ READY"]);
        // Nothing comes: after HOLD it was output.
        let mut t = at_prompt(false);
        t.feed(b"READY\r\n", now);
        t.tick(now + HOLD / 2);
        assert!(t.take(true).is_empty());
        t.tick(now + HOLD);
        assert_eq!(lines(&mut t, true), ["$ READY"]);
        assert!(t.saw_output());
    }

    /// dash: the kernel echoes keys; a line counts as typed only if the
    /// shell's read took it.
    #[test]
    fn kernel_echo_lines_are_typed_only_if_the_shell_took_them() {
        let now = Instant::now();
        let mut t = at_prompt(true);
        t.feed_hinted(b"ls -l", now, hint(false, false, Some(true)));
        assert!(t.take(true).is_empty());
        t.feed_hinted(b"\r\n", now, hint(false, true, Some(false)));
        assert!(t.take(true).is_empty(), "typed and taken");
        t.feed_hinted(b"total 0\r\n", now, hint(true, false, Some(false)));
        assert_eq!(lines(&mut t, true), ["total 0"]);
        // The prompt again (written by the shell), then a background line.
        t.feed_hinted(b"$ ", now, hint(true, false, Some(true)));
        t.feed_hinted(b"BG_LINE\r\n", now, hint(false, false, Some(true)));
        assert_eq!(lines(&mut t, true), ["$ BG_LINE"]);
        // Typed without Enter: never output.
        t.feed_hinted(b"typed", now, hint(false, false, Some(true)));
        assert!(t.take(true).is_empty());
    }

    /// A BEL in ground state is a bell; one that ends an OSC string is
    /// not, nor a line editor's beep right after reading a key.
    #[test]
    fn desktop_notifications_are_counted_with_their_words() {
        let now = Instant::now();
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"\x1b]777;notify;Pi;Ready for input\x07", now);
        assert_eq!(t.notifications(), (1, Some("Pi: Ready for input")));
        t.feed(b"\x1b]9;4;1;50\x07", now);
        assert_eq!(t.notifications().0, 1, "ConEmu's progress is none");
        t.feed(b"\x1b]9;Codex needs you\x1b\\", now);
        assert_eq!(t.notifications(), (2, Some("Codex needs you")));
        assert_eq!(t.bells(), 0, "a BEL ending one is no bell");
    }

    #[test]
    fn bells_are_counted_outside_escape_sequences() {
        let mut t = LineTracker::new(&entry(80));
        let now = Instant::now();
        // A stream that begins inside a title: its end is no bell.
        t.feed(b"12 title\x07", now);
        assert_eq!(t.bells(), 0);
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"\x1b]0;title\x07\x1b]133;A\x07done\x07\r\n", now);
        assert_eq!(t.bells(), 1);
        t.feed(b"\x1b[?1049h\x07\x1b[?1049l", now);
        assert_eq!(t.bells(), 2, "a full-screen program rings too");
        let mut t = at_prompt(false);
        // (A title set first: the parser then knows where it stands.)
        t.feed_hinted(b"\x1b]0;t\x07", now, hint(false, false, None));
        t.feed_hinted(b"\x07", now, hint(true, true, None));
        assert_eq!(t.bells(), 0, "the line editor's answer to Tab");
        t.feed_hinted(b"\x07", now, hint(false, false, None));
        assert_eq!(t.bells(), 1, "another writer's bell at the prompt");
    }

    /// What a program writes counts, the echo of keys does not; the line
    /// without echo is the question without its typed answer.
    #[test]
    fn written_leaves_echo_out_and_so_does_current_output() {
        let mut t = at_prompt(true);
        let now = Instant::now();
        t.feed_hinted(b"Name? ", now, hint(true, false, Some(true)));
        let w = t.written();
        assert!(w >= 5, "{w}");
        t.feed_hinted(b"bob", now, hint(false, false, Some(true)));
        assert_eq!(t.written(), w, "typed keys are no output");
        assert_eq!(t.current_output(), "$ Name?");
        assert_eq!(t.current_line(), "$ Name? bob");
        t.feed(b"\x1b[?1049hxyz", now);
        assert_eq!(t.written(), w + 3, "the alternate screen counts too");
        let t = LineTracker::new(&entry(80));
        assert!(!t.line_editor_reading());
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"\x1b[?2004h$ ", now);
        assert!(t.line_editor_reading());
        t.feed(b"\r\n\x1b[?2004l\r", now);
        assert!(!t.line_editor_reading());
    }

    /// Bracketed paste (on or off) or OSC 133 in the stream: the line
    /// editor marks where it reads.
    #[test]
    fn a_line_editor_that_marks_its_input_is_seen() {
        let now = Instant::now();
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"$ ls\r\nfile\r\n", now);
        assert!(!t.editor_marks());
        t.feed(b"\x1b[?2004l\r", now);
        assert!(t.editor_marks());
        let mut t = LineTracker::new(&entry(80));
        t.feed(b"\x1b]133;A\x07$ ", now);
        assert!(t.editor_marks());
    }

    /// The shell's wake seen with a chunk of the echo, the line feed in
    /// the next (read after the shell went on to run it): still typed.
    #[test]
    fn a_taken_line_whose_line_feed_comes_later_is_typed() {
        let now = Instant::now();
        let mut t = at_prompt(true);
        t.feed_hinted(b"echo BOTH", now, hint(false, true, Some(false)));
        let none = Hint {
            reader_woke: None,
            reader_read: None,
            reader_wrote: None,
            ..hint(false, false, Some(false))
        };
        t.feed_hinted(b"\r\n", now, none);
        assert!(t.take(true).is_empty(), "typed and taken");
        t.feed_hinted(b"BOTH\r\n", now, none);
        assert_eq!(lines(&mut t, true), ["BOTH"]);
        // The same when the command it ran wrote before the look (its
        // bytes are not this chunk's).
        let mut t = at_prompt(true);
        let ran = Hint {
            written: Some(9),
            ..hint(false, true, Some(true))
        };
        t.feed_hinted(b"echo BOTH", now, ran);
        t.feed_hinted(b"\r\nBOTH\r\n", now, none);
        assert_eq!(lines(&mut t, true), ["BOTH"]);
        // The wake counts for one line: the next unfinished line waits.
        let mut t = at_prompt(true);
        t.feed_hinted(b"ls\r\n", now, hint(false, true, Some(true)));
        t.feed_hinted(b"$ ", now, hint(true, false, Some(true)));
        t.feed_hinted(b"BG_LINE\r\n", now, hint(false, false, Some(true)));
        assert_eq!(lines(&mut t, true), ["$ BG_LINE"]);
    }

    #[test]
    fn invalid_utf8_and_controls_are_safe() {
        let out = run(80, &[b"a\xff\xfeb\x00\x07c\r\n"]);
        assert_eq!(out.len(), 1);
        assert!(out[0].starts_with('a') && out[0].ends_with('c'));
    }
}

#[cfg(test)]
mod hostile_input {
    use super::*;
    use crate::testutil::XorShift;

    /// Escape-heavy random input at odd widths never panics and keeps the
    /// line bounded: every cursor-moving and erasing sequence, with huge,
    /// zero and missing parameters, wide and combining characters.
    #[test]
    fn random_escape_soup_never_panics() {
        let pieces: &[&[u8]] = &[
            b"a",
            b"xyz",
            b" ",
            b"\r",
            b"\n",
            b"\x08",
            b"\t",
            b"\x07",
            b"\x00",
            b"\xff",
            "日".as_bytes(),
            "e\u{301}".as_bytes(),
            "\u{200b}".as_bytes(),
            b"\x1b[K",
            b"\x1b[1K",
            b"\x1b[2K",
            b"\x1b[J",
            b"\x1b[1J",
            b"\x1b[2J",
            b"\x1b[5P",
            b"\x1b[999P",
            b"\x1b[3@",
            b"\x1b[65535@",
            b"\x1b[4X",
            b"\x1b[65535X",
            b"\x1b[3C",
            b"\x1b[65535C",
            b"\x1b[2D",
            b"\x1b[65535D",
            b"\x1b[7G",
            b"\x1b[0G",
            b"\x1b[65535G",
            b"\x1b[H",
            b"\x1b[5;65535H",
            b"\x1b[A",
            b"\x1b[B",
            b"\x1b[s",
            b"\x1b[u",
            b"\x1b7",
            b"\x1b8",
            b"\x1bM",
            b"\x1bD",
            b"\x1bE",
            b"\x1bc",
            b"\x1b[?1049h",
            b"\x1b[?1049l",
            b"\x1b[?2004h",
            b"\x1b[?2004l",
            b"\x1b[?47h",
            b"\x1b]133;A\x07",
            b"\x1b]133;B\x07",
            b"\x1b]133;D;1\x07",
            b"\x1b]0;t\x07",
            b"\x1bkname\x1b\\",
            b"\x1bP1$r\x1b\\",
            b"\x1b[",
            b"\x1b",
            b"\x1b[;;;m",
        ];
        let seeds: u64 = std::env::var("TW_SOUP_SEEDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4);
        for seed in 0..seeds {
            soup(
                pieces,
                0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x1000_0001),
            );
        }
    }

    fn soup(pieces: &[&[u8]], seed: u64) {
        let mut rng = XorShift(seed);
        for round in 0..400 {
            let width = [1, 2, 3, 7, 80, 200][round % 6];
            let mut t = LineTracker::new(&TrackerStart {
                width,
                row: "old".into(),
                cursor_x: (round % 5),
                alternate_on: round % 7 == 0,
                at_prompt: round % 3 == 0,
                kernel_echo: round % 4 == 1,
                raw_reader: round % 5 == 2,
            });
            let t0 = Instant::now();
            for step in 0..300 {
                let mut chunk = Vec::new();
                for _ in 0..rng.below(8) {
                    chunk.extend_from_slice(pieces[rng.below(pieces.len())]);
                }
                let pick = |r: usize| [None, Some(false), Some(true)][r % 3];
                let hint = Hint {
                    reader_wrote: pick(rng.below(3)),
                    reader_read: pick(rng.below(3)),
                    reader_woke: pick(rng.below(3)),
                    kernel_echo: pick(rng.below(3)),
                    written: [None, Some(0), Some(3), Some(usize::MAX)][rng.below(4)],
                    raw: pick(rng.below(3)),
                    keys: pick(rng.below(3)),
                    took_command_line: pick(rng.below(3)),
                };
                t.feed_hinted(&chunk, t0 + Duration::from_millis(step), hint);
                if step % 13 == 0 {
                    t.tick(t0 + Duration::from_millis(step * 50));
                }
                if step % 17 == 0 {
                    t.set_width(1 + rng.below(120));
                }
                for c in t.take(step % 2 == 0) {
                    assert!(c.text.len() <= 4 * (MAX_CELLS + 4096));
                }
            }
            assert!(t.state.cells.len() <= MAX_CELLS + 65536);
        }
    }
}
