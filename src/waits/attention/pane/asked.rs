//! A question kept across a stopped job: a process that asked on its own
//! line and was stopped (Ctrl-Z) reads again when resumed (`fg`), under
//! the shell's echo of the job, its question rows above. That echo is no
//! question; the one it asked before is.

use super::*;

pub(super) struct Asked {
    reader: u32,
    question: String,
    /// The pane went back to its shell's prompt since, the reader alive
    /// and stopped.
    stopped: bool,
    /// It was asked again since it was resumed: the next work is its
    /// answer's (before, the job on its way back to its read).
    resumed: bool,
}

impl PaneWatch {
    /// A job resumed at its question: the question it asked before, as
    /// the line under the cursor.
    pub(super) fn resumed_question(&mut self, look: &mut Look) {
        if let Some(a) = &mut self.asked
            && a.stopped
            && matches!(look.reads, Some(Reads::Line { .. }))
            && look.reader == Some(a.reader)
            && look.line.trim().is_empty()
        {
            look.line = a.question.clone();
            look.line_new = true;
            a.resumed = true;
        }
    }

    /// Keep the question a process asks on its own line, for when its
    /// job is stopped and resumed; forget it once the pane works on.
    pub(super) fn remember_question(&mut self, look: &Look, found: &Found) {
        match (found.state, look.reads) {
            (State::Asking, Some(Reads::Line { .. })) => {
                if let (Some(reader), Some(q)) = (look.reader, &found.question)
                    && !look.line.trim().is_empty()
                {
                    let same = |a: &&Asked| a.reader == reader && a.question == *q;
                    let (stopped, resumed) = self
                        .asked
                        .as_ref()
                        .filter(same)
                        .map_or((false, false), |a| (a.stopped, a.resumed));
                    self.asked = Some(Asked {
                        reader,
                        question: q.clone(),
                        stopped,
                        resumed,
                    });
                }
            }
            (State::Prompt, _) => {
                if let Some(a) = &mut self.asked {
                    a.stopped = is_stopped(a.reader);
                    a.resumed = false;
                    if !a.stopped {
                        self.asked = None;
                    }
                }
            }
            (State::Asking, _) => {}
            // (Stopped, the shell not back yet; or stopped and not asked
            // again yet: the job on its way back to its read after `fg`.)
            _ if self
                .asked
                .as_ref()
                .is_some_and(|a| (a.stopped && !a.resumed) || is_stopped(a.reader)) => {}
            _ => self.asked = None,
        }
    }
}

fn is_stopped(pid: u32) -> bool {
    crate::sys::procfs::stat(pid).is_some_and(|s| s.state == 'T')
}
