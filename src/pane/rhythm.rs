//! How fast the hub passes a flooding pane's bytes on: how long it leaves
//! the pipe alone after a read, and the longest it holds a flood back.
//! The hub reads them; so do the looks at the kernel (`probe`), which must
//! outlast a pause or a hold to take the gap for the flood's end.

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
