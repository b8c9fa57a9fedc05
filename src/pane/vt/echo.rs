//! Who typed it: the input state of the line the cursor is on, the echo
//! of keys, and the lines held until a shell says it took them.

use super::*;

/// A line that ended while a shell read, kept until it is known whether
/// the shell accepted it (typed) or not (output).
pub(super) struct Held {
    pub(super) cells: Vec<Cell>,
    pub(super) dirty: bool,
    pub(super) until: Instant,
    /// What the terminal said of its reader when the line ended: it wrote
    /// (Some(true)) or nothing was known (None).
    pub(super) reader_wrote: Option<bool>,
    /// A line of the prompt, ended with no piece of the stream since the
    /// shell switched bracketed paste on: the first line of a prompt of
    /// several, or a prompt and the keys typed at it (see
    /// `line_ends_while_reading`).
    pub(super) prompt: bool,
}

/// Bracketed paste on: a shell starts reading a line.
pub(super) const PASTE_ON: &[u8] = b"\x1b[?2004h";

impl State {
    pub(super) fn origin_now(&mut self) -> Origin {
        match self.input {
            InputState::Output => Origin::New,
            InputState::Prompt { until: Some(t) } if self.now > t => {
                self.input = InputState::Input;
                Origin::Echo
            }
            InputState::Prompt { .. } => Origin::Prompt,
            InputState::Input => self.typed_origin(),
            // Nothing a program wrote is echo of the kernel's.
            InputState::Kernel | InputState::Raw if self.attributed => Origin::New,
            InputState::Kernel | InputState::Raw => Origin::Echo,
        }
    }

    /// The chunk after one that ended switching bracketed paste on, with
    /// nothing on its line yet: the shell's prompt (bash switches it on and
    /// writes its prompt in two writes, which tmux may pass on apart), if
    /// the shell wrote it in the prompt's window; else what comes is the
    /// echo of keys (or, not the shell's, another writer's output).
    pub(super) fn prompt_goes_on(&mut self) {
        if !std::mem::take(&mut self.prompt_chunk_over) {
            return;
        }
        if let InputState::Prompt { until: Some(t) } = self.input
            && (self.hint.reader_wrote == Some(false) || self.now > t)
        {
            self.input = InputState::Input;
        }
    }

    /// The line under the cursor shows anything but blanks.
    pub(super) fn has_text(&self) -> bool {
        self.cells.iter().any(|c| c.ch != ' ' && c.ch != '\0')
    }

    /// A program started or stopped reading a line with the kernel's echo,
    /// or key by key.
    pub(super) fn observe(&mut self) {
        let h = self.hint;
        if self.input == InputState::Output
            && h.raw == Some(true)
            && h.keys == Some(true)
            && h.reader_wrote == Some(true)
        {
            self.input = InputState::Raw;
            self.raw_line_done = false;
            return;
        }
        match (self.input, h.kernel_echo) {
            (InputState::Output, Some(true)) => {
                // The line under the cursor holds typed keys the shell
                // accepted (its line feed is still to come): that line was
                // taken, whoever reads now.
                if self.has_echo() {
                    self.line_taken = true;
                }
                self.input = InputState::Kernel;
            }
            // Nobody reads a line any more, nothing on this one may have
            // been typed, and the reader took no line that this chunk may
            // echo: what comes is output.
            (InputState::Kernel, Some(false))
                if !self.has_echo()
                    && self.held.is_none()
                    && self.hint.reader_woke != Some(true) =>
            {
                self.input = InputState::Output
            }
            _ => {}
        }
    }

    /// A kernel-echo reader's read returned: the line now being echoed
    /// was taken, whichever chunk brings its line feed.
    pub(super) fn note_taken(&mut self) {
        if self.input != InputState::Kernel {
            self.line_taken = false;
        } else if self.hint.reader_woke == Some(true) {
            self.line_taken = true;
        }
    }

    /// The chunk goes on with the echo of a line its reader already took
    /// (the line feed is still to come).
    pub(super) fn taken_echo_goes_on(&self, data: &[u8]) -> bool {
        self.hint.reader_woke == Some(true) && self.line_taken && could_be_kernel_echo(data)
    }

    /// While a line editor reads: what its process did not write came from
    /// another writer, and what it wrote without having read a key is not
    /// the echo of keys either.
    pub(super) fn typed_origin(&self) -> Origin {
        if self.not_echo() {
            Origin::New
        } else {
            Origin::Echo
        }
    }

    /// The current chunk is known not to be the echo of typed keys.
    pub(super) fn not_echo(&self) -> bool {
        self.hint.reader_wrote == Some(false)
            || (self.hint.reader_wrote == Some(true) && self.hint.reader_read == Some(false))
    }

    /// The current line holds echo (typed keys), not only old text.
    pub(super) fn has_echo(&self) -> bool {
        self.cells
            .iter()
            .any(|c| c.origin == Origin::Echo && c.ch != ' ' && c.ch != '\0')
    }

    /// The line ends with the kernel's echo of an interrupting key.
    pub(super) fn ends_with_control_echo(&self) -> bool {
        let r = self.rendered();
        ["^C", "^\\", "^Z"].iter().any(|k| r.ends_with(k))
    }

    /// The shell accepted a line: a prompt line held (see
    /// `line_ends_while_reading`) was typed at, and is left out.
    pub(super) fn accept_held_prompt(&mut self) {
        if let Some(h) = self.held.as_mut()
            && h.prompt
        {
            Self::prompt_was_typed(&mut h.cells);
        }
    }

    /// The line's prompt held typed keys (see `private_mode`): it counts
    /// as typed, prompt and all.
    pub(super) fn prompt_was_typed(cells: &mut [Cell]) {
        for c in cells.iter_mut() {
            if c.origin == Origin::Prompt {
                c.origin = Origin::Echo;
            }
        }
    }

    /// The line's echo was not typed after all: it is output.
    pub(super) fn echo_is_output(cells: &mut [Cell]) {
        for c in cells.iter_mut() {
            if c.origin == Origin::Echo {
                c.origin = Origin::New;
            }
        }
    }

    /// A line feed while a shell reads a line: decide whether the line was
    /// typed (the shell accepted it) or written by another writer. Returns
    /// true when the line is held for later.
    pub(super) fn line_ends_while_reading(&mut self) -> bool {
        if let InputState::Prompt { until: Some(_) } = self.input
            && self.cells.iter().any(|c| c.origin == Origin::Prompt)
        {
            // A line feed after the prompt, with no piece of the stream
            // between: the line is held until what comes next says what
            // it was. More of the prompt (its next line): a line of the
            // prompt. The shell accepting a line: a loaded machine passed
            // on the prompt, the keys typed at it and their Enter together,
            // and the line was typed (where the prompt ends, nothing says).
            self.held = Some(Held {
                cells: std::mem::take(&mut self.cells),
                dirty: self.dirty,
                until: self.now + HOLD,
                reader_wrote: Some(true),
                prompt: true,
            });
            self.dirty = false;
            return true;
        }
        let taken = std::mem::take(&mut self.line_taken) || self.hint.reader_woke == Some(true);
        if !self.has_echo() {
            return false;
        }
        match self.input {
            // The reader's read returned: the line was typed and taken.
            // Taken as no shell's command line, it answered a question: a
            // line of its own even when nothing on it is new (a question
            // drawn before the entry, answered after it), so what was
            // typed at it comes back, as typed, whichever came first to
            // the stream, the entry or the answer.
            InputState::Kernel if taken => {
                self.input = InputState::Output;
                if self.hint.took_command_line == Some(false) {
                    self.dirty = true;
                }
            }
            // Typed and abandoned: Ctrl-C (or Ctrl-\, Ctrl-Z), which the
            // kernel echoes as `^C`, then the reader's new prompt.
            InputState::Kernel if self.ends_with_control_echo() => {}
            // Nothing says a key was typed for it: another writer's line
            // (its writer was not seen: from outside the pane's processes,
            // or written before a look could count it).
            InputState::Kernel => {
                Self::echo_is_output(&mut self.cells);
                self.dirty = true;
                self.saw_output = true;
            }
            // The line the program echoed was typed: its cells say so.
            InputState::Raw => {}
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
                    prompt: false,
                });
                self.dirty = false;
                return true;
            }
        }
        false
    }

    /// Emit the held line: as typed (its echo left out) or as output.
    pub(super) fn release_held(&mut self, output: bool) {
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
    pub(super) fn release_held_by_what_came(&mut self) {
        if self.held.is_some() {
            let output = self.hint.reader_wrote != Some(true) || self.not_echo();
            self.release_held(output);
        }
    }

    /// The held line's moment passed without the shell accepting it: output
    /// unless its reader was known to have written it.
    pub(super) fn tick(&mut self) {
        if let Some(h) = &self.held
            && self.now >= h.until
        {
            let output = h.reader_wrote != Some(true);
            self.release_held(output);
        }
    }
}
