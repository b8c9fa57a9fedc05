//! The connection to the hub: syncs that find a point of the stream, and
//! queries taken at such a point.

use super::*;

impl StreamSource {
    /// Run `cmds` in one tmux command list at a point of the stream: sync,
    /// run, sync again, until no byte came between the two syncs (then the
    /// replies show the pane exactly where the stream stands, true) or
    /// `ALIGN_TRIES` attempts passed (false: output kept flowing; the
    /// replies are from within the last attempt).
    pub fn aligned_query(
        &mut self,
        cmds: &[Vec<String>],
        deadline: Instant,
    ) -> Result<(Vec<Vec<String>>, bool)> {
        self.aligned_query_then(cmds, None, deadline)
    }

    /// [`Self::aligned_query`], with `once` run after the queries of the
    /// first attempt only (a channel to signal once the stream runs).
    pub fn aligned_query_then(
        &mut self,
        cmds: &[Vec<String>],
        mut once: Option<Vec<String>>,
        deadline: Instant,
    ) -> Result<(Vec<Vec<String>>, bool)> {
        // Polling: there is no stream to line up with.
        if self.poll.is_some() {
            let mut all = cmds.to_vec();
            all.extend(once);
            let mut replies = self.socket.batch(&all).map_err(|e| self.classify(e))?;
            replies.truncate(cmds.len());
            return Ok((replies, false));
        }
        // tmux draws a pane's output at once but writes it to the pipe in
        // the next turn of its event loop, and writes a client's replies
        // in a turn too, in no set order with the pipe: the capture could
        // show a line the hub has not got by the second sync, which would
        // then come twice. A `run-shell -d 0` after the list makes tmux
        // end it one turn later (its timer fires then), so the list's
        // replies are written after every byte drawn before them went to
        // the pipe, and the second sync finds those bytes.
        let mut with_turn = cmds.to_vec();
        with_turn.push(vec!["run-shell".into(), "-d".into(), "0".into()]);
        let mut last = None;
        let give_up = Instant::now() + ALIGN_TIME;
        for _ in 0..ALIGN_TRIES {
            if last.is_some() && Instant::now() >= give_up {
                break;
            }
            // An entry's bytes are not drawn yet: keep those of this attempt.
            let start = self.received;
            self.recording = (!self.streaming).then(Vec::new);
            let before = self.sync(deadline)?;
            let mut replies = match once.take() {
                Some(c) => {
                    let mut first = cmds.to_vec();
                    first.push(c);
                    first.push(with_turn[cmds.len()].clone());
                    self.socket.batch(&first)
                }
                None => self.socket.batch(&with_turn),
            }
            .map_err(|e| self.classify(e))?;
            replies.truncate(cmds.len());
            let after = self.sync(deadline)?;
            let recorded = self.recording.take();
            if before == after {
                return Ok((replies, true));
            }
            // Those that came between the two syncs.
            self.entry_window = recorded.and_then(|r| {
                let from = usize::try_from(before - start).ok()?;
                let to = usize::try_from(after - start).ok()?;
                r.get(from..to).map(<[u8]>::to_vec)
            });
            last = Some(replies);
        }
        Ok((last.unwrap_or_default(), false))
    }

    /// Ask the hub to pass on what the pane's pipe holds now; returns the
    /// stream's length once it has. Output events meanwhile are taken in.
    pub fn sync(&mut self, deadline: Instant) -> Result<u64> {
        self.sync_by(deadline.max(Instant::now() + Duration::from_secs(5)))
    }

    /// [`Self::sync`], the hub's answer waited for until `deadline` only.
    pub(super) fn sync_by(&mut self, deadline: Instant) -> Result<u64> {
        if self.poll.is_some() {
            return Ok(self.received);
        }
        let generation = self.generation;
        self.sync_seq += 1;
        let n = self.sync_seq;
        // A hub that went away (killed as this wait started) is found
        // gone when its connection is read: its HubLost, handled below,
        // starts or finds a new hub, and this sync is then the old one's.
        self.inbox.send(format!("sync {n}\n").as_bytes());
        while self.synced < n {
            // The stream changed (a new hub, polling): this sync went to
            // the old one.
            if self.generation != generation {
                return Ok(self.received);
            }
            match self.inbox.next(deadline) {
                Some(ev) => self.handle(ev)?,
                None => {
                    return Err(Error::new(
                        Kind::Tmux,
                        "tmux-wait's hub did not answer in time",
                    ));
                }
            }
        }
        Ok(self.received)
    }

    /// Take in the stream until the joining wait that asked for `token`
    /// starts (everything before is ours, nothing after), or `deadline`.
    pub fn until_mark(&mut self, token: &str, deadline: Instant) -> Result<bool> {
        loop {
            if self.marks.iter().any(|m| m == token) {
                return Ok(true);
            }
            match self.inbox.next(deadline) {
                Some(ev) => self.handle(ev)?,
                None => return Ok(false),
            }
        }
    }

    /// Run tmux commands in one command list and return their output; pane
    /// output arriving meanwhile is kept for the next batch.
    pub fn query_all(&mut self, commands: &[Vec<String>]) -> Result<Vec<Vec<String>>> {
        self.socket.batch(commands).map_err(|e| self.classify(e))
    }
}

/// The history from row `from` (`-` for all of it) to the screen's end,
/// wrapped rows joined.
pub(super) fn history_query(pane: &str, from: &str) -> Vec<String> {
    [
        "capture-pane",
        "-p",
        "-J",
        "-t",
        pane,
        "-S",
        from,
        "-E",
        "-",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}
