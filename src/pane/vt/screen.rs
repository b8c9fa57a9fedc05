//! The line under the cursor: cells, cursor moves, erasing, the
//! alternate screen, and the escape sequences that drive them.

use super::*;

impl State {
    pub(super) fn row_col(&self) -> (usize, usize) {
        if self.pending_wrap && self.cursor >= self.width && self.cursor.is_multiple_of(self.width)
        {
            (self.cursor / self.width - 1, self.width - 1)
        } else {
            (self.cursor / self.width, self.cursor % self.width)
        }
    }

    pub(super) fn set_row_col(&mut self, row: usize, col: usize) {
        self.cursor = row * self.width + col.min(self.width - 1);
        self.pending_wrap = false;
    }

    /// The current line as drawn, trailing blanks trimmed.
    pub(super) fn rendered(&self) -> String {
        let mut s = String::with_capacity(self.cells.len());
        self.render_into(&mut s);
        s
    }

    fn render_into(&self, s: &mut String) {
        for cell in &self.cells {
            if cell.ch != '\0' {
                s.push(cell.ch);
                if let Some(c) = &cell.combining {
                    s.push_str(c);
                }
            }
        }
        s.truncate(s.trim_end().len());
    }

    /// A line feed ends the current line: keep it as drawn (in the oldest
    /// line's buffer once the transcript is full: a flood allocates
    /// nothing here).
    pub(super) fn record_line(&mut self) {
        if !self.linear {
            return;
        }
        let mut line = if self.transcript.len() == TRANSCRIPT_LINES {
            self.transcript.pop_front().unwrap_or_default()
        } else {
            String::with_capacity(self.cells.len())
        };
        line.clear();
        self.render_into(&mut line);
        self.transcript.push_back(line);
        self.recorded = self.recorded.saturating_add(1);
    }

    pub(super) fn lose_flow(&mut self) {
        self.linear = false;
        self.transcript.clear();
    }

    /// Emit the current line if it holds new text nobody has looked at.
    pub(super) fn emit(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        // One pass: the line without typed echo, and what the line holds;
        // a second (the line as drawn) only when there is echo.
        let (mut has_echo, mut output, mut prompt) = (false, false, false);
        let mut text = String::with_capacity(self.cells.len());
        // The text up to its last character a program wrote: blanks it
        // wrote at the end count (`PROMPT> `), blank cells nobody wrote
        // (padding, old paint) do not.
        let mut written = 0;
        for cell in &mut self.cells {
            cell.fresh = false;
            if cell.ch == '\0' {
                continue;
            }
            output |= cell.origin == Origin::New && cell.ch != ' ';
            prompt |= cell.origin == Origin::Prompt;
            if cell.origin == Origin::Echo {
                has_echo = true;
                continue;
            }
            text.push(cell.ch);
            if let Some(c) = &cell.combining {
                text.push_str(c);
            }
            if cell.ch != ' ' || matches!(cell.origin, Origin::New | Origin::Prompt) {
                written = text.len();
            }
        }
        text.truncate(written);
        let rendered = has_echo.then(|| self.rendered());
        if rendered.as_ref().unwrap_or(&text).trim_end().is_empty() {
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
    pub(super) fn empty_line(&mut self) {
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
    pub(super) fn break_line(&mut self, col: usize) {
        self.lose_flow();
        self.next_line(col);
    }

    /// [`State::break_line`] for a line feed: the flow goes on.
    pub(super) fn next_line(&mut self, col: usize) {
        self.emit();
        self.cells.clear();
        self.cursor = col.min(self.width - 1);
        self.pending_wrap = false;
    }

    pub(super) fn ensure_len(&mut self, len: usize) {
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
    pub(super) fn blank(&mut self, from: usize, to: usize) {
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

    pub(super) fn row_bounds(&self) -> (usize, usize) {
        let (row, _) = self.row_col();
        (row * self.width, (row + 1) * self.width)
    }

    pub(super) fn print_char(&mut self, ch: char) {
        // The common case of a flood: printable ASCII written at the end of
        // the line while a program writes (no prompt, no held line): the
        // steps below reduce to appending a fresh cell of new output.
        if (' '..='~').contains(&ch)
            && self.input == InputState::Output
            && self.cursor == self.cells.len()
            && !self.alt
            && !self.in_title
            && self.held.is_none()
            && self.cells.len() < MAX_CELLS
        {
            self.pending_wrap = false;
            self.cells.push(Cell {
                ch,
                origin: Origin::New,
                fresh: true,
                combining: None,
            });
            self.cursor += 1;
            if self.cursor.is_multiple_of(self.width) {
                self.pending_wrap = true;
            }
            self.mark(Origin::New);
            return;
        }
        if self.in_title {
            return;
        }
        // Text after a held line that is not the shell's echo: the shell
        // did not accept the line. (Text after a held line of the prompt is
        // more of the prompt.)
        if self.held.as_ref().is_some_and(|h| h.prompt) {
            self.release_held(false);
        } else if self.held.is_some() && (self.hint.reader_wrote != Some(true) || self.not_echo()) {
            self.release_held_by_what_came();
        }
        if self.alt {
            self.saw_alt = true;
            self.written += 1;
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

    pub(super) fn mark(&mut self, origin: Origin) {
        if matches!(origin, Origin::New | Origin::Prompt) {
            self.dirty = true;
            self.saw_output = true;
            self.written += 1;
        }
    }

    /// A BEL in ground state: a bell, unless it is a line editor's answer
    /// to a key (written by the reader right after reading keys).
    fn bell(&mut self) {
        let echo = match self.input {
            InputState::Input => !self.not_echo(),
            InputState::Raw | InputState::Kernel => !self.attributed,
            InputState::Output | InputState::Prompt { .. } => false,
        };
        if !echo {
            self.bells += 1;
        }
    }

    pub(super) fn private_mode(&mut self, params: &vte::Params, set: bool) {
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
                Some(2004) if self.osc133 => self.paste_marks = true,
                Some(2004) => {
                    self.paste_marks = true;
                    // The shell accepted the held line: it was typed.
                    if set {
                        self.release_held_by_what_came();
                    } else {
                        self.accept_held_prompt();
                        self.release_held(false);
                        if let InputState::Prompt { until: Some(_) } = self.input {
                            // Accepted with no piece of the stream between
                            // the prompt and the acceptance (a loaded
                            // machine passes on the prompt, the keys typed
                            // at it and the Enter together): what followed
                            // the prompt was typed, and where the prompt
                            // ends nothing says. The line is not output.
                            Self::prompt_was_typed(&mut self.cells);
                        }
                    }
                    if set && self.input == InputState::Output {
                        self.prompts += 1;
                    }
                    self.input = if set && self.has_text() {
                        // The prompt was drawn before (zsh's way): what
                        // comes after, in this chunk too (a loaded machine
                        // passes on the prompt and the keys typed at it
                        // together), is typed or another writer's, as it
                        // is in a later chunk (see `chunk_ends`).
                        InputState::Input
                    } else if set {
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

impl vte::Perform for State {
    fn print(&mut self, c: char) {
        self.print_char(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            0x07 if !self.in_title && self.synced => self.bell(),
            b'\r' | b'\n' => self.synced = true,
            _ => {}
        }
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
        self.synced = true;
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
        self.synced = true;
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
        self.synced = true;
        if matches!(params.first(), Some(&b"0" | &b"2")) {
            let t: Vec<String> = params[1..]
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            self.title = Some(
                t.join(";")
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(300)
                    .collect(),
            );
            self.titles += 1;
            return;
        }
        if params.first() == Some(&RUN_OSC.as_bytes()) {
            self.run_mark(params);
            return;
        }
        // A desktop notification the program asks the terminal for: OSC 9
        // (iTerm2's; `9;4;...` is ConEmu's progress bar, no notification)
        // and OSC 777 `notify;TITLE;BODY` (rxvt's, Ghostty's, WezTerm's).
        let text = match params {
            [b"9", rest @ ..] if rest.first() != Some(&&b"4"[..]) => Some(rest),
            [b"777", b"notify", rest @ ..] => Some(rest),
            _ => None,
        };
        if let Some(words) = text {
            let words: Vec<String> = words
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .filter(|w| !w.trim().is_empty())
                .collect();
            let words = words.join(": ");
            self.notifications.0 += 1;
            self.notifications.1 = Some(
                words
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(200)
                    .collect(),
            );
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

/// How many spare strings a tracker keeps (see [`LineTracker::recycle`]).
const SPARE_STRINGS: usize = 4096;

impl LineTracker {
    /// Lines the caller is done with: their strings hold the next lines
    /// taken in bulk (a flood then allocates nothing per line).
    pub fn recycle(&mut self, lines: Vec<Candidate>) {
        let spare = &mut self.state.spare;
        for c in lines {
            if spare.len() >= SPARE_STRINGS {
                break;
            }
            let mut s = c.text;
            s.clear();
            spare.push(s);
        }
    }

    /// [`screen_tail`](Self::screen_tail) starts at the row the cursor was
    /// on when the wait began.
    pub fn tail_from_entry(&self) -> bool {
        self.state.linear && self.state.recorded <= TRANSCRIPT_LINES
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

impl TrackerStart {
    /// A pane of `width` columns, empty where the cursor is, with nobody
    /// reading its terminal.
    pub fn blank(width: usize) -> TrackerStart {
        TrackerStart {
            width,
            row: String::new(),
            cursor_x: 0,
            alternate_on: false,
            at_prompt: false,
            kernel_echo: false,
            raw_reader: false,
        }
    }
}

/// A CSI parameter, `default` when absent or 0.
fn param(params: &vte::Params, i: usize, default: usize) -> usize {
    match params.iter().nth(i).and_then(|p| p.first().copied()) {
        Some(0) | None => default,
        Some(v) => usize::from(v),
    }
}
