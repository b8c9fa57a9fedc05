//! The rhythm of a pane: how fast the hub passes a flooding pane's bytes
//! on (how long it leaves the pipe alone after a read, the longest it
//! holds a flood back), and how often a reader of them looks again while
//! output flows. The hub reads them; so do the looks at the kernel
//! (`probe`, and the attention watch's), which must outlast a pause or a
//! hold to take the gap for the flood's end, and the looks at tmux of a
//! stream wait and of the attention watch.

use std::time::Duration;

/// How long a flooding pane's pipe is left alone after a read, for each
/// wait on it up to four, then once more for every six waits past four,
/// up to [`MOST_PAUSES`] times: all the waits on a flooding pane together
/// wake about once a millisecond, and fifty of them (sieved, so cheap to
/// wake) once each 10 ms.
pub const PAUSE: Duration = Duration::from_millis(1);
pub const MOST_PAUSES: u32 = 10;
/// The longest a flooding pane's pipe is left alone: a wait on it sees a
/// gap this long between two pieces of a flood that goes on.
pub const LONGEST_PAUSE: Duration = PAUSE.saturating_mul(MOST_PAUSES);
/// The longest the hub holds a flood (or a flow of plain lines) that no
/// wait's pattern may hit: a wait then has nothing to wake for but the
/// chunk's last lines, and fifty of them woke 2 300 to 2 700 times
/// together in a flood of `seq 1 2000000` (0.6 s), 120 µs each, most of
/// their CPU, before it held.
pub const LONGEST_HOLD: Duration = Duration::from_millis(100);
/// The longest the hub holds small reads of plain lines that no wait's
/// pattern may hit (a pane printing a line every few milliseconds), with
/// fifty waits or more: each wait then wakes once a second for them.
pub const LONGEST_TRICKLE: Duration = Duration::from_secs(1);
/// Output that comes within this of the output before it flows (a
/// program printing a line every few milliseconds): it is looked at as a
/// flood is, every [`FLOW_LOOK_EVERY`] and once it stops, not after every
/// line. A line left open (a question) is still looked at at once.
pub const FLOW_GAP: Duration = Duration::from_millis(20);
/// While output keeps coming, the look owed for it (who reads the
/// terminal) is taken this often: a flood is read in pieces a few
/// milliseconds apart, and each wait on the pane would otherwise read
/// `/proc` for every few of them.
pub const FLOW_LOOK_EVERY: Duration = Duration::from_millis(100);
/// How often the pane's width is asked of tmux while output flows.
pub const WIDTH_EVERY: Duration = Duration::from_millis(100);
/// After the pane's process exited, how long tmux is asked whether it
/// marked the pane dead (a respawn in between keeps it alive: then the pid
/// differs, and the look says so).
pub const EXIT_NOTICE: Duration = Duration::from_secs(10);
