//! What a watch over many panes asks of a pane's line tracker besides its
//! lines: bells, how much a program wrote, the line under the cursor
//! without typed echo, whether a line editor reads, the screen in use.

use super::*;

impl LineTracker {
    /// The pane is on the alternate screen now.
    pub fn alternate(&self) -> bool {
        self.state.alt
    }

    /// BELs written so far in ground state (a BEL that ends an OSC string
    /// is no bell), on either screen; not counted: the bell a line editor
    /// rings in answer to a key (its echo, as the caller's hint says).
    pub fn bells(&self) -> u64 {
        self.state.bells
    }

    /// The terminal's title as the program last set it (OSC 0 or 2).
    pub fn title(&self) -> Option<&str> {
        self.state.title.as_deref()
    }

    /// How many times the program set its title.
    pub fn titles(&self) -> u64 {
        self.state.titles
    }

    /// How many desktop notifications the program asked the terminal
    /// for (OSC 9, OSC 777 `notify`), and the words of the last one.
    pub fn notifications(&self) -> (u64, Option<&str>) {
        (
            self.state.notifications.0,
            self.state.notifications.1.as_deref(),
        )
    }

    /// Characters a program wrote so far (typed echo left out), on either
    /// screen: grows when a program writes something to see, not when keys
    /// are echoed or only the cursor moves.
    pub fn written(&self) -> u64 {
        self.state.written
    }

    /// The line under the cursor as matching sees it: without the echo of
    /// typed keys (a question without the answer typed so far).
    pub fn current_output(&self) -> String {
        let mut s = String::new();
        for cell in self.state.cells.iter() {
            if cell.ch == '\0' || cell.origin == Origin::Echo {
                continue;
            }
            s.push(cell.ch);
            if let Some(c) = &cell.combining {
                s.push_str(c);
            }
        }
        s.truncate(s.trim_end().len());
        s
    }

    /// The line under the cursor holds characters a program wrote since
    /// the wait began (not only a prompt, typed echo or old text).
    pub fn current_has_output(&self) -> bool {
        self.state
            .cells
            .iter()
            .any(|c| c.origin == Origin::New && c.ch != ' ' && c.ch != '\0')
    }

    /// A shell's line editor said it reads a command line (bracketed paste
    /// on, or OSC 133 A/B) and has not accepted it yet.
    pub fn line_editor_reading(&self) -> bool {
        matches!(
            self.state.input,
            InputState::Prompt { .. } | InputState::Input
        )
    }

    /// A line editor marks in this stream where it reads (bracketed paste
    /// switched on or off, or OSC 133): its next prompt will be marked.
    pub fn editor_marks(&self) -> bool {
        self.state.osc133 || self.state.paste_marks
    }
}
