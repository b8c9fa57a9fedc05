//! Pipe starts waiting their turn: at most [`MAX_STARTS`] run at once, and
//! only while the hub's budget has room for what a start holds (see
//! `budget`); each runs on a thread of its own and reports to the loop.

use super::budget::MAX_STARTS;
use super::pipe::{Started, start_pipe};
use super::protocol::Entry;
use crate::sys::wake::Post;
use crate::tmux::Socket;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A pipe start asked for.
pub(super) struct StartJob {
    pub(super) pane: String,
    /// The pipe's command, with its token.
    pub(super) feed: String,
    pub(super) queries: Vec<Vec<String>>,
}

/// The starts queued and how many run.
#[derive(Default)]
pub(super) struct Starts {
    queue: VecDeque<StartJob>,
    pub(super) running: usize,
}

impl Starts {
    pub(super) fn push(&mut self, job: StartJob) {
        self.queue.push_back(job);
    }

    /// The next start to run, if one waits and fewer than `MAX_STARTS` run
    /// (it then counts as running).
    pub(super) fn next(&mut self) -> Option<StartJob> {
        if self.running >= MAX_STARTS {
            return None;
        }
        let job = self.queue.pop_front()?;
        self.running += 1;
        Some(job)
    }

    pub(super) fn waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// A start ended.
    pub(super) fn ended(&mut self) {
        self.running = self.running.saturating_sub(1);
    }
}

/// Start a pane's pipe on a thread of its own: the outcome is posted to
/// the loop. A pane whose pipe the hub closed until
/// `closing` may still look piped (tmux takes a moment): asked again.
pub(super) fn spawn(job: StartJob, socket: Socket, closing: Option<Instant>, post: Post<Started>) {
    let StartJob {
        pane,
        feed,
        queries,
    } = job;
    std::thread::spawn(move || {
        let mut started = start_pipe(&socket, &pane, &feed, &queries);
        while matches!(started.result, Ok(Entry::Foreign))
            && closing.is_some_and(|until| Instant::now() < until)
        {
            std::thread::sleep(Duration::from_millis(2));
            started = start_pipe(&socket, &pane, &feed, &queries);
        }
        post.post(started);
    });
}
