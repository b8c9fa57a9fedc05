//! How a wait went on when the pane's stream stopped under it.

use serde::Serialize;

/// The pane's stream stopped during the wait while the pane lived on, and
/// the wait went on another way: what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fallback {
    /// `pipe_taken`: another program's `pipe-pane` replaced or closed
    /// tmux-wait's (left as it set it); `hub_lost`: the process that reads
    /// panes for the waits ended, and a new one took over.
    pub why: FallbackWhy,
    /// When, in seconds after the wait began.
    pub after_seconds: f64,
    /// The pane is polled from then on (as libtmux-mcp does): text
    /// overwritten between two looks is missed, and typed keys are not
    /// told from output.
    pub polling: bool,
    /// What was written while nobody read was found on the screen for
    /// sure; false: some of it may be missing, or seen twice.
    pub exact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackWhy {
    PipeTaken,
    HubLost,
}

impl Fallback {
    /// For people, after a result's own words.
    pub fn human(&self) -> String {
        let what = match self.why {
            FallbackWhy::PipeTaken => "another program took the pane's pipe",
            FallbackWhy::HubLost => "the process reading the pane ended and another took over",
        };
        let how = if self.polling {
            "; polled the pane from then on"
        } else {
            ""
        };
        let lost = if self.exact {
            ""
        } else {
            "; output written meanwhile may be missing"
        };
        format!("{what} {:.1}s in{how}{lost}", self.after_seconds)
    }
}
