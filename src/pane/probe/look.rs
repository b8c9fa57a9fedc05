//! One look at the pane's terminal and processes (see `ReaderProbe::look`),
//! and what it says of the kernel's echo.

use crate::sys::tty::Mode;

/// One look at the terminal and the pane's processes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LeaderLook {
    /// The same foreground leader as at the previous look.
    pub(super) same: bool,
    /// The leader changed, and what the previous one wrote and read since
    /// the previous look is known (a shell that took a line, echoed it and
    /// ran it between two looks: its echo is still its own).
    pub(super) left: bool,
    /// The leader is the pane's own program (its shell).
    pub(super) shell: bool,
    /// The terminal was in raw mode at the previous look, with the same
    /// leader (which is the one reading key by key).
    pub(super) was_raw: bool,
    /// What the leader's main thread wrote and read since then, and in how
    /// many read calls.
    pub(super) wrote: u64,
    pub(super) read: u64,
    pub(super) reads: u64,
    pub(super) mode: Option<Mode>,
    /// A process of the foreground group is asleep in a read of the
    /// terminal (None: cannot tell).
    pub(super) line_reader: Option<bool>,
    /// The line reader seen last time took input since (its read returned
    /// or it stopped reading); None when there was none.
    pub(super) took: Option<bool>,
}

/// A program reads a line with the kernel echoing what is typed.
pub(super) fn kernel_echo(l: &LeaderLook) -> Option<bool> {
    match (l.mode, l.line_reader) {
        (Some(Mode::Canonical), Some(r)) => Some(r),
        (Some(Mode::Canonical), None) => None,
        (Some(_), _) => Some(false),
        (None, _) => None,
    }
}
