//! A question kept across a stopped job: a process that asked on its own
//! line and was stopped (Ctrl-Z) reads again when resumed (`fg`), under
//! the shell's echo of the job, its question rows above. That echo is no
//! question; the one it asked before is, as long as the process has
//! written nothing since (the kernel counts what it writes).

use super::*;

pub(super) struct Asked {
    reader: u32,
    question: String,
    /// What the reader had written when it asked (`wchar`).
    wrote: Option<u64>,
    /// The pane went back to its shell's prompt since, the reader alive
    /// and stopped.
    stopped: bool,
    /// It was asked again since it was resumed: the next work is its
    /// answer's (before, the job on its way back to its read).
    resumed: bool,
}

impl Asked {
    /// The reader reads again having written nothing since it asked.
    fn same_read(&self, look: &Look) -> bool {
        self.stopped
            && matches!(look.reads, Some(Reads::Line { .. }))
            && look.reader == Some(self.reader)
            && self.wrote.is_some()
            && wrote(self.reader) == self.wrote
    }
}

impl PaneWatch {
    /// A job resumed at its question: the question it asked before, as
    /// the line under the cursor (whatever the shell wrote since).
    pub(super) fn resumed_question(&mut self, look: &mut Look) {
        if let Some(a) = &mut self.asked
            && a.same_read(look)
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
                if self.asked.as_ref().is_some_and(|a| a.same_read(look)) {
                    return;
                }
                if let (Some(reader), Some(q)) = (look.reader, &found.question)
                    && !look.line.trim().is_empty()
                {
                    self.asked = Some(Asked {
                        reader,
                        question: q.clone(),
                        wrote: wrote(reader),
                        stopped: false,
                        resumed: false,
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
            // At work: forgotten once the reader has written since it
            // asked (it moved on) or is gone. (A look while Ctrl-Z stops
            // it, or while `fg` hands it the terminal, sees it at work.)
            _ => {
                if self
                    .asked
                    .as_ref()
                    .is_some_and(|a| a.wrote.is_none() || wrote(a.reader) != a.wrote)
                {
                    self.asked = None;
                }
            }
        }
    }
}

fn is_stopped(pid: u32) -> bool {
    crate::sys::procfs::stat(pid).is_some_and(|s| s.state == 'T')
}

fn wrote(pid: u32) -> Option<u64> {
    crate::sys::procfs::io(pid, true).map(|io| io.wrote)
}
