//! The options attention keeps in tmux itself, so that the key, the menu
//! and the hooks read and clear them without talking to the watching
//! process (see `marks` for what each means). Two that `answer` sets
//! too live with it, below the plugin: `answer::BEGAN` (when a mark's
//! question began) and `answer::ANSWERED` (who typed the last answer).

pub(super) const MARK: &str = "@tmux-wait-attention-mark";
pub(super) const SINCE: &str = "@tmux-wait-attention-since";
pub(super) const WHAT: &str = "@tmux-wait-attention-what";
pub(super) const HELD: &str = "@tmux-wait-attention-held";
/// The window option for `window-status-format`.
pub const WINDOW: &str = "@tmux-wait-attention-window";
/// The segment `#{tmux_wait_attention}` shows.
pub const STATUS: &str = "@tmux_wait_attention";
/// `on`: the segment says how long the first pane has waited.
pub(super) const AGE: &str = "@tmux-wait-attention-age";
/// The marked (or held) panes' ids, as the last refresh saw them (a pane
/// that closed marked is found by its id missing).
pub(super) const MARKED: &str = "@tmux-wait-attention-marked";
/// Set while some pane is marked or held: the visit hooks run only then.
pub(super) const VISIT: &str = "@tmux-wait-attention-visit";
/// Set on a pane once the watch knows where it stands: its changes from
/// then on are marked (a format can show it; the tests wait for it).
pub(super) const WATCHED: &str = "@tmux-wait-attention-watched";
