//! What the pane's processes did between two looks (see `ReaderProbe`):
//! what those gone since wrote (taken into a parent's total when it
//! reaped them), whether a line reader took input, and what it took.

use crate::sys::procfs;
use std::time::Instant;

/// What the processes seen at the last look (`before`) and reaped since
/// had written by then. Their parent's total took in all they wrote (the
/// kernel adds a reaped child's counts to its parent's): that part was
/// counted at the last look, and the parent's growth counts it again. A
/// process is taken as reaped into the pane when it no longer exists and
/// its parent, or the parent's parent if that is gone too, is still one of
/// the pane's (`now`). One that left the tree alive (its parent died and
/// another process took it on) is in no total here: nothing is taken off.
pub(super) fn reaped_totals(
    before: &[(u32, u32, u64)],
    now: &[(u32, u32, u64)],
    exists: impl Fn(u32) -> bool,
) -> u64 {
    let here = |pid: u32| now.iter().any(|(p, ..)| *p == pid);
    let reaped_into_pane = |mut pid: u32| {
        for _ in 0..before.len() {
            if here(pid) {
                return true;
            }
            if exists(pid) {
                return false;
            }
            match before.iter().find(|(p, ..)| *p == pid) {
                Some((_, parent, _)) if *parent != 0 => pid = *parent,
                _ => return false,
            }
        }
        false
    };
    before
        .iter()
        .filter(|(pid, parent, _)| !here(*pid) && !exists(*pid) && reaped_into_pane(*parent))
        .map(|(.., w)| *w)
        .sum()
}

/// The process that was reading a line (having read `read` bytes then)
/// took input since: it read more, or it is gone (it may have read its
/// line and ended). Woken by a signal (a shell reaping a job) it read
/// nothing: that is no line taken.
pub(super) fn took_input(pid: u32, read: u64) -> bool {
    procfs::io(pid, false).is_none_or(|io| io.read > read)
}

/// Whether the line a reader took was a shell's command line (see
/// `Hint::took_command_line`): as seen when a look saw it taken before
/// the stream showed the line's end (`early`, `taken_before`), else what
/// the reader seen reading read (`command_line`), if it took the line.
pub(super) fn took_command_line(
    early: Option<(Instant, Option<bool>)>,
    taken_before: bool,
    woke: Option<bool>,
    command_line: Option<bool>,
) -> Option<bool> {
    match early {
        Some((_, c)) if taken_before => c,
        _ => command_line.filter(|_| woke == Some(true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_childs_bytes_are_counted_once() {
        // The shell (1) ran `clear` (2), seen at the last look having
        // written 10 bytes; the shell reaped it and runs python (3) now.
        let before = [(1, 0, 100), (2, 1, 10)];
        let now = [(1, 0, 110), (3, 1, 4808)];
        let alive = |live: &'static [u32]| move |pid: u32| live.contains(&pid);
        assert_eq!(reaped_totals(&before, &now, alive(&[1, 3])), 10);
        // Not reaped yet (a zombie, still listed): nothing.
        let now_z = [(1, 0, 100), (2, 1, 10)];
        assert_eq!(reaped_totals(&before, &now_z, alive(&[1, 2])), 0);
        // A subshell (4) and its child (5), both gone: the shell's total
        // took in both.
        let before = [(1, 0, 100), (4, 1, 7), (5, 4, 20)];
        let now = [(1, 0, 127)];
        assert_eq!(reaped_totals(&before, &now, alive(&[1])), 27);
        // The subshell gone, its child alive elsewhere (taken on by
        // another process): only the subshell's bytes are in the shell's
        // total.
        assert_eq!(reaped_totals(&before, &now, alive(&[1, 5])), 7);
        // Gone, with a parent alive outside the pane: reaped there.
        let before = [(1, 0, 100), (6, 7, 5)];
        assert_eq!(reaped_totals(&before, &[(1, 0, 100)], alive(&[1, 7])), 0);
    }

    #[test]
    fn what_a_reader_took_is_judged_where_it_was_seen_taking_it() {
        let now = Instant::now();
        // Seen taken before its line feed came: as seen then, whoever
        // reads now (dash took its command line, and its `read` now asks).
        let early = Some((now, Some(true)));
        assert_eq!(
            took_command_line(early, true, Some(true), Some(false)),
            Some(true)
        );
        // Taken now (the answer to `read`'s or a program's question).
        assert_eq!(
            took_command_line(None, false, Some(true), Some(false)),
            Some(false)
        );
        assert_eq!(
            took_command_line(early, false, Some(true), Some(false)),
            Some(false)
        );
        // Not taken, or nobody seen reading: nothing to say.
        assert_eq!(
            took_command_line(None, false, Some(false), Some(false)),
            None
        );
        assert_eq!(took_command_line(None, false, Some(true), None), None);
    }
}
