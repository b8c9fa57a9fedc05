//! Marks in a pane's stream: `run`'s around the command it typed, a
//! coding agent's hook saying what the agent does; and the items a tracker
//! gives, lines and marks in stream order.

use super::*;

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
    /// A coding agent's hook said what it does now (`tmux-wait
    /// agent-event` writes it to the pane's terminal): `working`,
    /// `asking` or `idle`, with the agent's own words.
    Agent(String, String),
}

/// A finished line or a mark, in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Line(Candidate),
    Mark(Mark),
}

impl State {
    /// `ESC ] 7731 ; tmux-wait ; ID ; B|E [; STATUS] BEL`, from `run`;
    /// `ESC ] 7731 ; tmux-wait ; agent ; KIND ; WORDS BEL`, from an agent's
    /// hook (on either screen: it says nothing of the lines).
    pub(super) fn run_mark(&mut self, params: &[&[u8]]) {
        if params.get(1) != Some(&RUN_TAG.as_bytes()) {
            return;
        }
        let text = |i: usize| params.get(i).and_then(|p| std::str::from_utf8(p).ok());
        if text(2) == Some("agent") {
            if let Some(kind @ ("working" | "asking" | "idle")) = text(3) {
                let words: Vec<String> = params[4.min(params.len())..]
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect();
                let words: String = words
                    .join(";")
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(300)
                    .collect();
                self.out
                    .push(Item::Mark(Mark::Agent(kind.to_owned(), words)));
            }
            return;
        }
        if self.alt {
            return;
        }
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
