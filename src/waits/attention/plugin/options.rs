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

/// A marked (or held) pane, as the options say.
#[derive(Debug, Clone)]
pub(super) struct Marked {
    pub pane: String,
    pub window: String,
    pub mark: String,
    pub since: f64,
    pub what: String,
    pub place: String,
    /// The need began on a person's screen; it counts once they leave.
    pub held: bool,
    /// When its current word or question began, as the option holds it.
    pub began: String,
}

impl Marked {
    pub fn place(&self) -> &str {
        &self.place
    }

    pub fn what(&self) -> &str {
        &self.what
    }

    /// How long its current word or question has waited, at `now` (boot
    /// clock).
    pub fn waited(&self, now: f64) -> Option<f64> {
        self.began.parse::<f64>().ok().map(|b| now - b)
    }

    /// A line of [`MARKED_FORMAT`]: its pane goes in `panes`, and a
    /// marked one is returned.
    pub fn parse(line: &str, panes: &mut Vec<String>) -> Option<Marked> {
        let f: Vec<&str> = line.splitn(8, '\t').collect();
        panes.push(f[0].to_owned());
        (f.len() == 8 && !f[2].is_empty()).then(|| Marked {
            pane: f[0].to_owned(),
            window: f[1].to_owned(),
            mark: f[2].to_owned(),
            since: f[3].parse().unwrap_or(0.0),
            held: !f[4].is_empty(),
            began: f[5].to_owned(),
            place: f[6].to_owned(),
            what: f[7].to_owned(),
        })
    }
}

pub(super) const MARKED_FORMAT: &str = "#{pane_id}\t#{window_id}\t#{@tmux-wait-attention-mark}\t#{@tmux-wait-attention-since}\t#{@tmux-wait-attention-held}\t#{@tmux-wait-attention-began}\t#{session_name}:#{window_index}\t#{@tmux-wait-attention-what}";
