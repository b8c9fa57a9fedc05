//! When the pane's stream stops while the pane lives on. Another program
//! took its pipe (a logging plugin's `pipe-pane`, a `pipe-pane -o` toggle):
//! that pipe is left exactly as it was set, and the wait goes on by polling
//! the pane. The hub went away (killed, crashed): a new one is started, as
//! the first wait of a server starts one, and the stream goes on through
//! it. Either way what was written while nobody read is looked for on the
//! screen (the rows below where the stream stood) and comes first, and the
//! result says what it cost ([`Fallback`]).

use super::*;
use crate::engine::poll::PollSource;
use crate::report::{Fallback, FallbackWhy, seconds};

/// A hub that dies this many times within [`LOSS_WINDOW`] ends the waits
/// with the error (no loop of restarts).
const LOSSES: usize = 3;
const LOSS_WINDOW: Duration = Duration::from_secs(1);

impl StreamSource {
    /// The pane's pipe closed: the pane is gone or dead (that error), or
    /// another program took the pipe (go on polling).
    pub(super) fn pipe_closed(&mut self) -> Result<()> {
        if let Some(sig) = signals::pending() {
            return Err(Error::new(Kind::Interrupted(sig), "interrupted"));
        }
        self.pane_now()?;
        self.poll_from_now(FallbackWhy::PipeTaken, true)
    }

    /// The hub's connection broke: start or find a new hub and go on
    /// through it, unless the pane went too, or hubs keep dying.
    pub(super) fn hub_lost(&mut self) -> Result<()> {
        if let Some(sig) = signals::pending() {
            return Err(Error::new(Kind::Interrupted(sig), "interrupted"));
        }
        self.pane_now()?;
        // The hub lives on: it dropped this wait, which stopped reading
        // (stopped with Ctrl-Z) while the pane flooded. A killed hub closes
        // its sockets after the kernel marks it exiting, so one that is
        // dying counts as gone here.
        if self.hub_pid.is_some_and(crate::sys::alive) {
            crate::trace!(
                "hub lost, yet it lives: {:?} {:?}",
                self.hub_pid,
                self.hub_pid.and_then(crate::sys::procfs::stat)
            );
            return Err(self.ended(EndReason::Overflow));
        }
        crate::trace!("hub lost: {:?}", self.hub_pid);
        let now = Instant::now();
        self.hub_losses.retain(|t| now - *t < LOSS_WINDOW);
        self.hub_losses.push(now);
        if self.hub_losses.len() >= LOSSES {
            return Err(self.lost());
        }
        let (drawn, drawn_row) = self.drawn_rows();
        let t = self.pane.pane_id.clone();
        let req = Request {
            hello: hub::HELLO.to_owned(),
            pane: t.clone(),
            extra: Vec::new(),
            mark: None,
        };
        let deadline = now + Duration::from_secs(10);
        // A connection the dying hub's socket still took is reset when it
        // is gone: connect again (to the next hub).
        let (stream, dec, entry) = loop {
            let mut stream = hub::connect(&self.socket, &req, deadline)?;
            let mut dec = Decoder::default();
            match hub::read_entry(&mut stream, &mut dec, deadline) {
                Ok(entry) => break (stream, dec, entry),
                Err(e) if e.kind == Kind::Io && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        };
        self.hub_pid = crate::sys::peer_pid(&stream);
        self.generation += 1;
        self.streaming = false;
        let replies = match entry {
            hub::Entry::Fresh { replies } => {
                self.inbox.set_hub(stream, dec);
                replies
            }
            hub::Entry::Joined { .. } => {
                // Another wait of the pane came back first: its pipe runs.
                // Taken at a point of the stream, with what came before in
                // the capture.
                self.inbox.set_hub(stream, dec);
                let generation = self.generation;
                let (replies, exact) = self.aligned_query(&hub::entry_queries(&t), deadline)?;
                if self.generation != generation {
                    // That hub went too: the stream was entered again
                    // through the next, and a later capture must not make
                    // what it streamed since old.
                    return Ok(());
                }
                self.exact_entry &= exact;
                replies
            }
            // The pipe is someone else's now (it was taken while no hub
            // read): poll.
            hub::Entry::Foreign => return self.poll_from_now(FallbackWhy::HubLost, false),
            hub::Entry::Failed { kind, message } => {
                return Err(Error::new(kind_from(&kind), message));
            }
        };
        let st = PaneState::parse(&replies[0])?;
        let rows = &replies[1];
        let cy = (st.cursor_y as usize).min(rows.len().saturating_sub(1));
        // Its number on this screen, while tmux trims no history.
        let at = drawn_row
            .filter(|_| st.history_size < st.history_limit)
            .and_then(|r| usize::try_from(r - i64::try_from(st.history_size).ok()?).ok());
        let (recovered, exact) = crate::cursor::rows_after(&rows[..=cy], drawn.as_deref(), at);
        // The stream starts afresh here; what the result counts from stays.
        let (entry_abs, entry_lines, geometry) =
            (self.entry_abs, self.entry_lines.clone(), self.geometry);
        self.take_entry(&replies, None)?;
        (self.entry_abs, self.entry_lines, self.geometry) = (entry_abs, entry_lines, geometry);
        self.tracker.lose_flow();
        self.note_fallback(FallbackWhy::HubLost, false, exact, recovered);
        Ok(())
    }

    /// Poll the pane from now on, after what the stream missed.
    fn poll_from_now(&mut self, why: FallbackWhy, exact_so_far: bool) -> Result<()> {
        let (drawn, drawn_row) = self.drawn_rows();
        let (poll, recovered, exact) =
            PollSource::resume(&self.socket, &self.pane, self.interval, drawn, drawn_row)?;
        let recovered = recovered.into_iter().map(|c| c.text).collect();
        self.poll = Some(poll);
        self.streaming = false;
        self.generation += 1;
        self.note_fallback(why, true, exact && exact_so_far, recovered);
        Ok(())
    }

    fn note_fallback(
        &mut self,
        why: FallbackWhy,
        polling: bool,
        exact: bool,
        recovered: Vec<String>,
    ) {
        let exact = exact && self.fallback.is_none_or(|f| f.exact);
        self.fallback = Some(Fallback {
            why,
            after_seconds: seconds(self.opened.elapsed()),
            polling,
            exact,
        });
        if !recovered.is_empty() {
            self.recovered
                .extend(recovered.into_iter().map(|text| Candidate {
                    text,
                    rendered: None,
                    prompt: false,
                }));
            self.recovered_output = true;
        }
        self.output_seen = true;
        self.unconsumed = true;
    }

    /// The rows the stream drew from the entry down, its cursor row last,
    /// when it drew them line by line; and that row's number (see
    /// `tracker_row`) when known.
    pub fn drawn_rows(&self) -> (Option<Vec<String>>, Option<i64>) {
        let width = tty_width(&self.pane.pane_tty).unwrap_or(80);
        let Some(tail) = self.tracker.screen_tail() else {
            return (None, None);
        };
        let own: Vec<String> = tail
            .iter()
            .flat_map(|l| crate::cursor::split_rows(l, width))
            .collect();
        // Its own rows are few (a quiet pane at a prompt): the rows above
        // the entry's tell one prompt from another.
        let from_entry = self.tracker.tail_from_entry();
        let row = self
            .tracker_row
            .filter(|_| from_entry && !own.is_empty())
            .map(|r| r + own.len() as i64 - 1);
        let above = if from_entry {
            self.entry_above.clone()
        } else {
            Vec::new()
        };
        (Some(above.into_iter().chain(own).collect()), row)
    }

    /// The next lines while polling: what was recovered first.
    pub(super) fn poll_next(&mut self, deadline: Instant) -> Result<Option<Vec<Candidate>>> {
        if !self.recovered.is_empty() {
            return Ok(Some(std::mem::take(&mut self.recovered)));
        }
        match &mut self.poll {
            Some(p) => p.next_batch(deadline),
            None => Ok(None),
        }
    }

    /// The stream stopped and the wait went on another way (see
    /// [`Fallback`]).
    pub fn fallback(&self) -> Option<Fallback> {
        self.fallback
    }
}
