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
//! [`Hint`], from `engine::shell::ReaderProbe`): text the reading process
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

/// How long after `\e[?2004h` text still counts as the prompt, not as echo.
pub const PROMPT_WINDOW: Duration = Duration::from_millis(50);

/// How long a line that ended while a shell read, with nobody known to
/// have written it, waits for the shell to accept it before it counts as
/// output.
pub const HOLD: Duration = Duration::from_millis(500);

/// What the pane's terminal said about the process reading it when a chunk
/// arrived (`None`: not known). The caller looks before feeding each
/// chunk; see `engine::shell::ReaderProbe`.
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
    /// It is blocked reading the terminal in canonical mode with echo on:
    /// a shell without a line editor, whose typed keys the kernel echoes.
    pub kernel_echo: Option<bool>,
}

/// A logical line longer than this many cells is matched, then cut to its
/// last [`KEEP_AFTER_CUT`] cells, so memory stays bounded when a program
/// writes without ever ending the line.
const MAX_CELLS: usize = 256 * 1024;
const KEEP_AFTER_CUT: usize = 4096;

/// How many ended lines the tracker keeps as drawn, for the tail of a
/// result (see [`LineTracker::screen_tail`]).
const TRANSCRIPT_LINES: usize = 64;

/// Where a cell's character came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Old,
    New,
    /// Written by a shell while printing its prompt (new, but not a
    /// command's output).
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
    /// What patterns are matched against: the line without echoed input.
    pub text: String,
    /// The line as rendered, when it differs from `text` (it holds echo).
    pub rendered: Option<String>,
    /// Nothing on the line came from a program's output: it is a shell
    /// prompt, with or without the echo of a typed command.
    pub prompt: bool,
}

impl Candidate {
    /// The line as the pane shows it.
    pub fn line(&self) -> &str {
        self.rendered.as_deref().unwrap_or(&self.text)
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
}

/// A line that ended while a shell read, kept until it is known whether
/// the shell accepted it (typed) or not (output).
struct Held {
    cells: Vec<Cell>,
    dirty: bool,
    until: Instant,
    /// What the terminal said of its reader when the line ended: it wrote
    /// (Some(true)) or nothing was known (None).
    reader_wrote: Option<bool>,
}

/// How the pane looked when the wait began.
#[derive(Clone, Debug)]
pub struct Entry {
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
}

/// The OSC number `run` brackets a command with: `ESC ] 7731 ; tmux-wait ;
/// ID ; B BEL` before it, `... ; E ; STATUS BEL` after it. tmux ignores OSC
/// numbers it does not know, so nothing is drawn; the echo of the typed line
/// shows the printf's escapes as text, never as this sequence.
pub const RUN_OSC: &str = "7731";
pub const RUN_TAG: &str = "tmux-wait";

/// Something the pane's byte stream said about commands, in order with the
/// lines around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A command typed by `run` with this id starts writing here.
    RunBegin(String),
    /// That command ended with this status.
    RunEnd(String, Option<i32>),
    /// A shell with OSC 133 integration said a command ended (`D`).
    CommandDone(Option<i32>),
}

/// A finished line or a mark, in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Line(Candidate),
    Mark(Mark),
}

/// Feeds pane bytes through a VT parser into [`Candidate`] lines.
pub struct LineTracker {
    parser: vte::Parser,
    state: State,
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
    /// Inside screen's `ESC k title ESC \`, whose text is not output.
    in_title: bool,
    /// Times a shell started reading a new command line (a prompt came back).
    prompts: u32,
    /// The exit status an OSC 133 `D` mark reported last.
    last_status: Option<i32>,
    now: Instant,
    /// Emit a line only when finished, as it ends up (command output), not
    /// each state before an overwrite (text waits).
    final_only: bool,
    out: Vec<Item>,
    /// What the caller saw of the reading process for the current chunk.
    hint: Hint,
    held: Option<Held>,
    /// The last lines a line feed ended, as drawn (echo included).
    transcript: VecDeque<String>,
    /// Since the entry, the cursor only went down line by line (no cursor
    /// up, no jump, no clear, no alternate screen): `transcript` and the
    /// current line are the screen from the entry row down.
    linear: bool,
}

impl LineTracker {
    pub fn new(entry: &Entry) -> Self {
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
            state: State {
                width,
                cells,
                cursor,
                pending_wrap: false,
                dirty: false,
                alt: entry.alternate_on,
                saw_alt: entry.alternate_on,
                saw_output: false,
                input: if entry.at_prompt {
                    InputState::Input
                } else if entry.kernel_echo {
                    InputState::Kernel
                } else {
                    InputState::Output
                },
                osc133: false,
                in_title: false,
                prompts: 0,
                last_status: None,
                now: Instant::now(),
                final_only: false,
                out: Vec::new(),
                hint: Hint::default(),
                held: None,
                transcript: VecDeque::new(),
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
        self.state.now = at;
        self.state.hint = hint;
        self.state.tick();
        // A program started reading a line (a shell without a line editor,
        // `read`): this chunk came before its read (its prompt), unless
        // something says otherwise.
        if self.state.input == InputState::Output && hint.kernel_echo == Some(true) {
            self.state.input = InputState::Kernel;
            if self.state.hint.reader_wrote.is_none() {
                self.state.hint.reader_wrote = Some(true);
            }
        }
        self.parser.advance(&mut self.state, data);
        // A shell writes its prompt with (or right after) switching
        // bracketed paste on, in one write; what comes in a later chunk is
        // the echo of keys, however soon (a script typing at once).
        if let InputState::Prompt { until: Some(_) } = self.state.input {
            self.state.input = InputState::Input;
        }
    }

    /// The pane width changed (rows re-wrap from here on).
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
        std::mem::take(&mut self.state.out)
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
        st.linear = !st.alt;
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

    /// Any new (non-echo) character was written on the main screen.
    pub fn saw_output(&self) -> bool {
        self.state.saw_output
    }

    /// The pane was on the alternate screen at some point.
    pub fn saw_alternate(&self) -> bool {
        self.state.saw_alt
    }

    /// How many times a shell prompt came back (a command line was started
    /// after output), and the last exit status an OSC 133 mark gave.
    pub fn prompts(&self) -> (u32, Option<i32>) {
        (self.state.prompts, self.state.last_status)
    }
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

fn param(params: &vte::Params, i: usize, default: usize) -> usize {
    match params.iter().nth(i).and_then(|p| p.first().copied()) {
        Some(0) | None => default,
        Some(v) => usize::from(v),
    }
}

impl State {
    fn row_col(&self) -> (usize, usize) {
        if self.pending_wrap && self.cursor >= self.width && self.cursor.is_multiple_of(self.width)
        {
            (self.cursor / self.width - 1, self.width - 1)
        } else {
            (self.cursor / self.width, self.cursor % self.width)
        }
    }

    fn set_row_col(&mut self, row: usize, col: usize) {
        self.cursor = row * self.width + col.min(self.width - 1);
        self.pending_wrap = false;
    }

    fn origin_now(&mut self) -> Origin {
        match self.input {
            InputState::Output => Origin::New,
            InputState::Prompt { until: Some(t) } if self.now > t => {
                self.input = InputState::Input;
                Origin::Echo
            }
            InputState::Prompt { .. } => Origin::Prompt,
            InputState::Input => self.typed_origin(),
            // Nothing the shell wrote itself is echo of the kernel's.
            InputState::Kernel if self.hint.reader_wrote == Some(true) => Origin::New,
            InputState::Kernel => Origin::Echo,
        }
    }

    /// While a line editor reads: what its process did not write came from
    /// another writer, and what it wrote without having read a key is not
    /// the echo of keys either.
    fn typed_origin(&self) -> Origin {
        if self.not_echo() {
            Origin::New
        } else {
            Origin::Echo
        }
    }

    /// The current chunk is known not to be the echo of typed keys.
    fn not_echo(&self) -> bool {
        self.hint.reader_wrote == Some(false)
            || (self.hint.reader_wrote == Some(true) && self.hint.reader_read == Some(false))
    }

    /// The current line holds echo (typed keys), not only old text.
    fn has_echo(&self) -> bool {
        self.cells
            .iter()
            .any(|c| c.origin == Origin::Echo && c.ch != ' ' && c.ch != '\0')
    }

    /// The line's echo was not typed after all: it is output.
    fn echo_is_output(cells: &mut [Cell]) {
        for c in cells.iter_mut() {
            if c.origin == Origin::Echo {
                c.origin = Origin::New;
            }
        }
    }

    /// A line feed while a shell reads a line: decide whether the line was
    /// typed (the shell accepted it) or written by another writer. Returns
    /// true when the line is held for later.
    fn line_ends_while_reading(&mut self) -> bool {
        if !self.has_echo() {
            return false;
        }
        match self.input {
            InputState::Kernel => match (self.hint.reader_woke, self.hint.reader_wrote) {
                // The shell's read returned: the line was typed and taken.
                (Some(true), _) => self.input = InputState::Output,
                // It wrote (a new prompt after Ctrl-C): typed, abandoned.
                (_, Some(true)) => {}
                // Asleep in its read and silent: another writer's line.
                (Some(false), Some(false)) => {
                    Self::echo_is_output(&mut self.cells);
                    self.dirty = true;
                    self.saw_output = true;
                }
                // Another program now holds the terminal (the line was taken
                // and started it).
                _ if self.hint.kernel_echo == Some(false) => self.input = InputState::Output,
                _ => {}
            },
            // Not echo: its cells say so already.
            _ if self.not_echo() => {}
            // The shell wrote (some of) it, or nothing says who: typed only
            // if the shell now accepts it. (The shell's write may also be
            // what it printed after another writer's line, as zsh prints a
            // job's end right after the job's last line.)
            _ => {
                self.held = Some(Held {
                    cells: std::mem::take(&mut self.cells),
                    dirty: self.dirty,
                    until: self.now + HOLD,
                    reader_wrote: self.hint.reader_wrote,
                });
                self.dirty = false;
                return true;
            }
        }
        false
    }

    /// Emit the held line: as typed (its echo left out) or as output.
    fn release_held(&mut self, output: bool) {
        let Some(mut h) = self.held.take() else {
            return;
        };
        let cells = std::mem::replace(&mut self.cells, std::mem::take(&mut h.cells));
        let dirty = std::mem::replace(&mut self.dirty, h.dirty);
        if output {
            Self::echo_is_output(&mut self.cells);
            self.dirty = true;
            self.saw_output = true;
        }
        self.emit();
        self.cells = cells;
        self.dirty = dirty;
    }

    /// Something other than the shell's acceptance came after the held
    /// line: it was output if another writer wrote what came, or if nothing
    /// says who writes; if the shell wrote it (a completion list, a redraw,
    /// its next line), the held line was the shell's own, as typed.
    fn release_held_by_what_came(&mut self) {
        if self.held.is_some() {
            let output = self.hint.reader_wrote != Some(true) || self.not_echo();
            self.release_held(output);
        }
    }

    /// The held line's moment passed without the shell accepting it: output
    /// unless its reader was known to have written it.
    fn tick(&mut self) {
        if let Some(h) = &self.held
            && self.now >= h.until
        {
            let output = h.reader_wrote != Some(true);
            self.release_held(output);
        }
    }

    /// The current line as drawn, trailing blanks trimmed.
    fn rendered(&self) -> String {
        let mut s = String::with_capacity(self.cells.len());
        for cell in &self.cells {
            if cell.ch != '\0' {
                s.push(cell.ch);
                if let Some(c) = &cell.combining {
                    s.push_str(c);
                }
            }
        }
        s.truncate(s.trim_end().len());
        s
    }

    /// A line feed ends the current line: keep it as drawn.
    fn record_line(&mut self) {
        if !self.linear {
            return;
        }
        if self.transcript.len() == TRANSCRIPT_LINES {
            self.transcript.pop_front();
        }
        let line = self.rendered();
        self.transcript.push_back(line);
    }

    fn lose_flow(&mut self) {
        self.linear = false;
        self.transcript.clear();
    }

    /// Emit the current line if it holds new text nobody has looked at.
    fn emit(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let (mut has_echo, mut output, mut prompt) = (false, false, false);
        for cell in &mut self.cells {
            cell.fresh = false;
            if cell.ch == '\0' {
                continue;
            }
            output |= cell.origin == Origin::New && cell.ch != ' ';
            prompt |= cell.origin == Origin::Prompt;
            has_echo |= cell.origin == Origin::Echo;
        }
        // The line without typed echo, and (only when there is echo) as
        // drawn: one pass each, sized once.
        let collect = |with_echo: bool| {
            let mut s = String::with_capacity(self.cells.len());
            for cell in &self.cells {
                if cell.ch == '\0' || (!with_echo && cell.origin == Origin::Echo) {
                    continue;
                }
                s.push(cell.ch);
                if let Some(c) = &cell.combining {
                    s.push_str(c);
                }
            }
            s.truncate(s.trim_end().len());
            s
        };
        let text = collect(false);
        let rendered = has_echo.then(|| collect(true));
        if rendered.as_ref().unwrap_or(&text).is_empty() {
            return;
        }
        self.out.push(Item::Line(Candidate {
            rendered,
            text,
            prompt: !output && (prompt || has_echo),
        }));
    }

    /// A line feed on a line nothing was written to: an empty line of
    /// output, which only the final view keeps.
    fn empty_line(&mut self) {
        if self.final_only
            && !self.dirty
            && self.input == InputState::Output
            && !self.alt
            && self.cells.iter().all(|c| c.ch == ' ')
        {
            self.out.push(Item::Line(Candidate {
                text: String::new(),
                rendered: None,
                prompt: false,
            }));
        }
    }

    /// The cursor leaves this line for another row: emit it, start afresh
    /// with an empty line (rows below the cursor hold stale paint, which is
    /// never matched) and the cursor at `col`.
    fn break_line(&mut self, col: usize) {
        self.lose_flow();
        self.next_line(col);
    }

    /// [`State::break_line`] for a line feed: the flow goes on.
    fn next_line(&mut self, col: usize) {
        self.emit();
        self.cells.clear();
        self.cursor = col.min(self.width - 1);
        self.pending_wrap = false;
    }

    fn ensure_len(&mut self, len: usize) {
        let have = self.cells.len();
        if have + 1 == len {
            // The common case: writing at the end of the line.
            self.cells.push(BLANK);
        } else if have < len {
            self.cells.resize(len, BLANK);
        }
    }

    /// Blank cells `from..to` (clipped to the line); emits first if that
    /// would destroy text not yet looked at.
    fn blank(&mut self, from: usize, to: usize) {
        let to = to.min(self.cells.len());
        if from >= to {
            return;
        }
        if !self.final_only && self.cells[from..to].iter().any(|c| c.fresh && c.ch != ' ') {
            self.emit();
        }
        if to == self.cells.len() {
            self.cells.truncate(from);
        } else {
            for c in &mut self.cells[from..to] {
                *c = BLANK;
            }
        }
    }

    fn row_bounds(&self) -> (usize, usize) {
        let (row, _) = self.row_col();
        (row * self.width, (row + 1) * self.width)
    }

    fn print_char(&mut self, ch: char) {
        if self.in_title {
            return;
        }
        // Text after a held line that is not the shell's echo: the shell
        // did not accept the line.
        if self.held.is_some() && (self.hint.reader_wrote != Some(true) || self.not_echo()) {
            self.release_held_by_what_came();
        }
        if self.alt {
            self.saw_alt = true;
            return;
        }
        let origin = self.origin_now();
        let w = match ch.width() {
            Some(w) => w,
            None => return,
        };
        if w == 0 {
            // A combining mark joins the character before the cursor.
            if self.cursor > 0 && self.cursor <= self.cells.len() {
                let i = self.cursor - 1;
                let i = if self.cells[i].ch == '\0' && i > 0 {
                    i - 1
                } else {
                    i
                };
                append_combining(&mut self.cells[i], ch);
                self.mark(origin);
            }
            return;
        }
        self.pending_wrap = false;
        if w == 2 && self.width > 1 && self.cursor % self.width == self.width - 1 {
            // A wide character does not fit in the last column: it wraps.
            self.ensure_len(self.cursor + 1);
            self.cursor += 1;
        }
        let pos = self.cursor;
        self.ensure_len(pos + w);
        if !self.final_only
            && self.cells[pos..pos + w]
                .iter()
                .any(|c| c.fresh && c.ch != ' ' && c.ch != ch)
        {
            // Overwriting text: judge the line as it was first.
            self.emit();
        }
        self.cells[pos] = Cell {
            ch,
            origin,
            fresh: true,
            combining: None,
        };
        if w == 2 {
            self.cells[pos + 1] = Cell {
                ch: '\0',
                origin,
                fresh: true,
                combining: None,
            };
        }
        self.cursor += w;
        if self.cursor.is_multiple_of(self.width) {
            self.pending_wrap = true;
        }
        self.mark(origin);
        if self.cells.len() > MAX_CELLS {
            self.emit();
            self.lose_flow();
            let cut = self.cells.len() - KEEP_AFTER_CUT;
            let cut = cut - cut % self.width;
            self.cells.drain(..cut);
            self.cursor = self.cursor.saturating_sub(cut);
        }
    }

    fn mark(&mut self, origin: Origin) {
        if matches!(origin, Origin::New | Origin::Prompt) {
            self.dirty = true;
            self.saw_output = true;
        }
    }

    fn private_mode(&mut self, params: &vte::Params, set: bool) {
        for p in params.iter() {
            match p.first().copied() {
                Some(1049) | Some(1047) | Some(47) => {
                    if set && !self.alt {
                        self.break_line(0);
                        self.alt = true;
                        self.saw_alt = true;
                    } else if !set && self.alt {
                        self.lose_flow();
                        self.alt = false;
                        self.cells.clear();
                        self.cursor = 0;
                        self.pending_wrap = false;
                    }
                }
                Some(2004) if !self.osc133 => {
                    // The shell accepted the held line: it was typed.
                    if set {
                        self.release_held_by_what_came();
                    } else {
                        self.release_held(false);
                    }
                    if set && self.input == InputState::Output {
                        self.prompts += 1;
                    }
                    self.input = if set {
                        InputState::Prompt {
                            until: Some(self.now + PROMPT_WINDOW),
                        }
                    } else {
                        InputState::Output
                    };
                }
                _ => {}
            }
        }
    }
}

impl State {
    /// `ESC ] 7731 ; tmux-wait ; ID ; B|E [; STATUS] BEL`, from `run`.
    fn run_mark(&mut self, params: &[&[u8]]) {
        if params.get(1) != Some(&RUN_TAG.as_bytes()) || self.alt {
            return;
        }
        let text = |i: usize| params.get(i).and_then(|p| std::str::from_utf8(p).ok());
        let Some(id) = text(2).filter(|id| {
            !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())
        }) else {
            return;
        };
        let mark = match text(3) {
            Some("B") => Mark::RunBegin(id.to_owned()),
            Some("E") => Mark::RunEnd(id.to_owned(), text(4).and_then(|s| s.parse().ok())),
            _ => return,
        };
        // What came before belongs to the other side of the mark: the typed
        // line before B, the command's unfinished last line before E.
        self.emit();
        self.input = InputState::Output;
        self.out.push(Item::Mark(mark));
    }
}

impl vte::Perform for State {
    fn print(&mut self, c: char) {
        self.print_char(c);
    }

    fn execute(&mut self, byte: u8) {
        if self.alt || self.in_title {
            return;
        }
        match byte {
            b'\r' => {
                let (row, _) = self.row_col();
                self.set_row_col(row, 0);
            }
            b'\n' | 0x0b | 0x0c => {
                self.release_held_by_what_came();
                let (_, col) = self.row_col();
                self.record_line();
                if self.input != InputState::Output && self.line_ends_while_reading() {
                    self.cells.clear();
                    self.cursor = col.min(self.width - 1);
                    self.pending_wrap = false;
                    return;
                }
                self.empty_line();
                self.next_line(col);
            }
            0x08 => {
                let (row, col) = self.row_col();
                self.set_row_col(row, col.saturating_sub(1));
            }
            b'\t' => {
                let (row, col) = self.row_col();
                self.set_row_col(row, (col / 8 + 1) * 8);
            }
            _ => {}
        }
    }

    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        intermediates: &[u8],
        _ignore: bool,
        action: char,
    ) {
        if intermediates == b"?" {
            match action {
                'h' => self.private_mode(params, true),
                'l' => self.private_mode(params, false),
                _ => {}
            }
            return;
        }
        if self.alt || !intermediates.is_empty() {
            return;
        }
        let (row, col) = self.row_col();
        let (start, end) = self.row_bounds();
        let n = param(params, 0, 1);
        match action {
            'C' | 'a' => self.set_row_col(row, col.saturating_add(n)),
            'D' => self.set_row_col(row, col.saturating_sub(n)),
            'G' | '`' => self.set_row_col(row, n - 1),
            'K' => match param(params, 0, 0) {
                0 => self.blank(self.cursor, end),
                1 => self.blank(start, self.cursor + 1),
                _ => self.blank(start, end),
            },
            'X' => self.blank(self.cursor, (self.cursor + n).min(end)),
            'P' => {
                let to = (self.cursor + n).min(end).min(self.cells.len());
                if self.cursor < to {
                    if !self.final_only
                        && self.cells[self.cursor..to]
                            .iter()
                            .any(|c| c.fresh && c.ch != ' ')
                    {
                        self.emit();
                    }
                    self.cells.drain(self.cursor..to);
                    let row_end = end.saturating_sub(to - self.cursor);
                    if row_end < self.cells.len() {
                        for _ in 0..(to - self.cursor) {
                            self.cells.insert(row_end, BLANK);
                        }
                    }
                }
            }
            '@' if self.cursor < self.cells.len() => {
                let n = n.min(end - self.cursor);
                for _ in 0..n {
                    self.cells.insert(self.cursor, BLANK);
                }
                if self.cells.len() > end {
                    let lost = self.cells[end..(end + n).min(self.cells.len())]
                        .iter()
                        .any(|c| c.fresh && c.ch != ' ');
                    if lost && !self.final_only {
                        self.emit();
                    }
                    let stop = (end + n).min(self.cells.len());
                    self.cells.drain(end..stop);
                }
            }
            'J' => match param(params, 0, 0) {
                0 => self.blank(self.cursor, usize::MAX),
                1 => {
                    self.lose_flow();
                    self.blank(0, self.cursor + 1)
                }
                _ => self.break_line(col),
            },
            'H' | 'f' => self.break_line(param(params, 1, 1) - 1),
            // The line editor moved back up (to the held line it edits).
            'A' => {
                self.release_held(false);
                self.break_line(col)
            }
            'B' | 'e' | 'd' | 'L' | 'M' | 'S' | 'T' => self.break_line(col),
            'E' | 'F' | 'r' => self.break_line(0),
            'u' => self.break_line(0),
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, byte: u8) {
        if !intermediates.is_empty() {
            return;
        }
        match byte {
            b'k' => self.in_title = true,
            b'\\' => self.in_title = false,
            _ if self.alt || self.in_title => {}
            b'c' => {
                self.break_line(0);
                self.input = InputState::Output;
            }
            b'D' => {
                let (_, col) = self.row_col();
                self.break_line(col);
            }
            b'E' => self.break_line(0),
            b'M' | b'8' => {
                // Reverse index: the line editor went back up (zsh after a
                // completion list).
                if byte == b'M' {
                    self.release_held(false);
                }
                let (_, col) = self.row_col();
                self.break_line(if byte == b'8' { 0 } else { col });
            }
            _ => {}
        }
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], _bell_terminated: bool) {
        if params.first() == Some(&RUN_OSC.as_bytes()) {
            self.run_mark(params);
            return;
        }
        if params.first() != Some(&&b"133"[..]) {
            return;
        }
        self.osc133 = true;
        let mark = params.get(1).and_then(|p| p.first());
        if mark == Some(&b'C') {
            self.release_held(false);
        } else {
            self.release_held_by_what_came();
        }
        match mark {
            Some(b'A') => {
                if self.input == InputState::Output {
                    self.prompts += 1;
                }
                self.input = InputState::Prompt { until: None }
            }
            Some(b'B') => self.input = InputState::Input,
            Some(b'C') => self.input = InputState::Output,
            Some(b'D') => {
                self.input = InputState::Output;
                self.last_status = params
                    .get(2)
                    .and_then(|p| std::str::from_utf8(p).ok())
                    .and_then(|p| p.parse().ok());
                self.emit();
                self.out
                    .push(Item::Mark(Mark::CommandDone(self.last_status)));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(width: usize) -> Entry {
        Entry {
            width,
            row: String::new(),
            cursor_x: 0,
            alternate_on: false,
            at_prompt: false,
            kernel_echo: false,
        }
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
        let mut t = LineTracker::new(&Entry {
            width: 80,
            row: "$ ".into(),
            cursor_x: 2,
            alternate_on: false,
            at_prompt: true,
            kernel_echo: false,
        });
        let t0 = Instant::now();
        t.feed(b"sleep 1; echo MARK\r\n\x1b[?2004l\r", t0);
        assert!(t.take(true).is_empty());
        assert!(!t.saw_output());
        t.feed(b"MARK\r\n\x1b[?2004h$ ", t0 + Duration::from_secs(1));
        assert_eq!(texts(&mut t, true), ["MARK", "$"]);
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
        assert_eq!(c[0].text, "$");
        assert_eq!(c[0].line(), "$ ls");
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
        assert_eq!(texts(&mut t, true), ["$", "X"]);
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
        let mut t = LineTracker::new(&Entry {
            width: 80,
            row: "Progress:".into(),
            cursor_x: 9,
            alternate_on: false,
            at_prompt: false,
            kernel_echo: false,
        });
        t.feed(b" DONE", Instant::now());
        assert_eq!(texts(&mut t, true), ["Progress: DONE"]);
    }

    #[test]
    fn old_text_alone_is_never_a_candidate() {
        let mut t = LineTracker::new(&Entry {
            width: 80,
            row: "stale".into(),
            cursor_x: 0,
            alternate_on: false,
            at_prompt: false,
            kernel_echo: false,
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

    fn at_prompt(kernel: bool) -> LineTracker {
        LineTracker::new(&Entry {
            width: 80,
            row: "$ ".into(),
            cursor_x: 2,
            alternate_on: false,
            at_prompt: !kernel,
            kernel_echo: kernel,
        })
    }

    fn hint(wrote: bool, woke: bool, kernel: Option<bool>) -> Hint {
        Hint {
            reader_wrote: Some(wrote),
            reader_read: Some(woke),
            reader_woke: Some(woke),
            kernel_echo: kernel,
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
        assert_eq!(lines(&mut t, true), ["Continue?"]);
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
            let mut t = LineTracker::new(&Entry {
                width,
                row: "old".into(),
                cursor_x: (round % 5),
                alternate_on: round % 7 == 0,
                at_prompt: round % 3 == 0,
                kernel_echo: round % 4 == 1,
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
