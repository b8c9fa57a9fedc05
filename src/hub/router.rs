//! Where each pane's stream goes: which waits get it, and from where. Pure:
//! it takes what happened (a request, the end of a pipe's start, a chunk of
//! the stream, a wait leaving, the stream ending) and says what to send to
//! whom; the server (`server.rs`) owns the sockets and does the sending.

use super::JoinPoint;
use super::protocol::{Entry, Frame};
use crate::tmux::PaneState;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Frames to send, in order, each to one wait.
pub type Sends = Vec<(u64, Frame)>;

/// What the server does about a request.
#[derive(Debug, PartialEq)]
pub enum Requested {
    /// Nobody streams the pane: start its pipe (the wait is its starter).
    Start,
    /// Its pipe is starting: the wait joins once it is live.
    Queued,
    /// The pane is streamed: send these (the joiner's entry, and the mark
    /// to the waits already there).
    Joined(Sends),
}

/// One pane's stream.
#[derive(Debug, Default)]
struct Route {
    /// The pipe's start ended with a fresh entry: the stream flows.
    live: bool,
    /// Waits receiving the stream.
    waiters: Vec<u64>,
    /// Waits that asked before it was live, with their marks.
    pending: Vec<(u64, Option<String>)>,
    /// The wait whose request started the pipe: it gets the fresh entry.
    starter: Option<u64>,
    /// Where the stream stands, for waits that join it.
    at: JoinPoint,
    /// Since when a live stream has had nobody to read it (its pipe is
    /// kept a moment for the next call on the pane). Set only on a stream
    /// that is `unwatched`, cleared by the next join: it alone says idle.
    idle_since: Option<Instant>,
    /// Bytes the stream took in while idle.
    idle_bytes: usize,
}

/// Output an idle stream takes in before it is closed anyway: a pane that
/// floods is entered afresh (a fresh entry is exact at once; a join there
/// must line its capture up with a stream that never pauses).
pub const IDLE_BYTES: usize = 64 << 10;

impl Route {
    /// Wait `id` joins: a mark goes to the waits already on the stream
    /// first (what they got before it is before the joiner's start), then
    /// the joiner's entry.
    fn join(&mut self, id: u64, mark: Option<String>) -> Sends {
        let mut sends: Sends = match mark {
            Some(m) => self
                .waiters
                .iter()
                .map(|w| (*w, Frame::Mark(m.clone())))
                .collect(),
            None => Vec::new(),
        };
        sends.push((id, Frame::Entry(self.at.entry())));
        self.waiters.push(id);
        self.idle_since = None;
        self.idle_bytes = 0;
        sends
    }

    fn unwatched(&self) -> bool {
        self.live && self.waiters.is_empty() && self.pending.is_empty()
    }
}

/// Every pane's route.
#[derive(Debug, Default)]
pub struct Router {
    routes: HashMap<String, Route>,
}

impl Router {
    /// Wait `id` asks for `pane`'s stream.
    pub fn request(&mut self, id: u64, pane: &str, mark: Option<String>) -> Requested {
        match self.routes.get_mut(pane) {
            Some(r) if r.live => Requested::Joined(r.join(id, mark)),
            Some(r) => {
                r.pending.push((id, mark));
                Requested::Queued
            }
            None => {
                self.routes.insert(
                    pane.to_owned(),
                    Route {
                        starter: Some(id),
                        ..Route::default()
                    },
                );
                Requested::Start
            }
        }
    }

    /// The pane's pipe start ended with `entry`. A fresh entry makes the
    /// stream live: the starter gets it, the waits that queued join. Any
    /// other (a foreign pipe, a failure): every wait on the pane gets it
    /// and the route is gone.
    pub fn started(&mut self, pane: &str, entry: Entry) -> Sends {
        let Some(r) = self.routes.get_mut(pane) else {
            return Vec::new();
        };
        let starter = r.starter.take();
        let Entry::Fresh { replies } = &entry else {
            let r = self.routes.remove(pane).unwrap_or_default();
            return starter
                .into_iter()
                .chain(r.pending.into_iter().map(|(id, _)| id))
                .map(|id| (id, Frame::Entry(entry.clone())))
                .collect();
        };
        let alt = replies
            .first()
            .and_then(|st| PaneState::parse(st).ok())
            .is_some_and(|st| st.alternate_on);
        r.live = true;
        r.at = JoinPoint::new(alt);
        let mut sends = Vec::new();
        if let Some(id) = starter {
            sends.push((id, Frame::Entry(entry)));
            r.waiters.push(id);
        }
        for (id, mark) in std::mem::take(&mut r.pending) {
            sends.extend(r.join(id, mark));
        }
        sends
    }

    /// A chunk of `pane`'s stream: the waits it goes to.
    pub fn data(&mut self, pane: &str, data: &[u8]) -> &[u64] {
        match self.routes.get_mut(pane) {
            Some(r) => {
                r.at.feed(data);
                if r.idle_since.is_some() {
                    r.idle_bytes = r.idle_bytes.saturating_add(data.len());
                }
                &r.waiters
            }
            None => &[],
        }
    }

    /// The waits receiving `pane`'s stream.
    pub fn waiters(&self, pane: &str) -> &[u64] {
        self.routes.get(pane).map_or(&[], |r| &r.waiters)
    }

    /// Wait `id` on `pane` left, at `now`. A live stream nobody reads any
    /// more becomes idle (see `settle`).
    pub fn leave(&mut self, id: u64, pane: &str, now: Instant) {
        let Some(r) = self.routes.get_mut(pane) else {
            return;
        };
        r.waiters.retain(|w| *w != id);
        r.pending.retain(|(w, _)| *w != id);
        if r.starter == Some(id) {
            r.starter = None;
        }
        self.settle(pane, now);
    }

    /// A live stream of `pane` that nobody reads is idle from `now` on (if
    /// it was not already): its pipe stays, and a wait that comes joins it,
    /// until `expired` says it is closed. One still starting is judged
    /// when it is live.
    pub fn settle(&mut self, pane: &str, now: Instant) {
        if let Some(r) = self.routes.get_mut(pane)
            && r.unwatched()
        {
            r.idle_since.get_or_insert(now);
        }
    }

    /// The streams idle for `keep` or longer at `now`, or that took in
    /// `IDLE_BYTES` while idle (their routes are gone: the server closes
    /// their pipes).
    pub fn expired(&mut self, now: Instant, keep: Duration) -> Vec<String> {
        self.take_idle(|r| {
            r.idle_bytes >= IDLE_BYTES
                || r.idle_since
                    .is_some_and(|since| now.saturating_duration_since(since) >= keep)
        })
    }

    /// Every idle stream (their routes are gone), to make room.
    pub fn take_all_idle(&mut self) -> Vec<String> {
        self.take_idle(|_| true)
    }

    fn take_idle(&mut self, pick: impl Fn(&Route) -> bool) -> Vec<String> {
        let gone: Vec<String> = self
            .routes
            .iter()
            .filter(|(_, r)| r.idle_since.is_some() && pick(r))
            .map(|(p, _)| p.clone())
            .collect();
        for p in &gone {
            self.routes.remove(p);
        }
        gone
    }

    /// When the next idle stream is due to close, after `keep`.
    pub fn next_expiry(&self, keep: Duration) -> Option<Instant> {
        self.routes
            .values()
            .filter_map(|r| r.idle_since)
            .min()
            .map(|t| t + keep)
    }

    /// True when `pane`'s stream is live and idle: nobody reads it.
    pub fn is_idle(&self, pane: &str) -> bool {
        self.routes
            .get(pane)
            .is_some_and(|r| r.idle_since.is_some())
    }

    /// `pane`'s stream ended: the waits that must hear it (the route is
    /// gone).
    pub fn end(&mut self, pane: &str) -> Vec<u64> {
        self.routes
            .remove(pane)
            .map(|r| {
                r.waiters
                    .into_iter()
                    .chain(r.pending.into_iter().map(|(id, _)| id))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn is_live(&self, pane: &str) -> bool {
        self.routes.get(pane).is_some_and(|r| r.live)
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Entry {
        // The pane state the entry queries read first (alternate screen off).
        Entry::Fresh {
            replies: vec![vec![
                "%3\t100\t0\t80\t0\t0\t0\t0\t2000\t24\t/dev/pts/1".into(),
            ]],
        }
    }

    fn joined(line: &[u8], whole: bool, alt: bool) -> Frame {
        Frame::Entry(Entry::Joined {
            line: line.to_vec(),
            whole,
            alt,
        })
    }

    /// The streams three waits get from one recorded pane: the starter from
    /// the pipe's start, a wait queued meanwhile from the same point, a
    /// wait joining mid-line from that line (the waits before it get its
    /// mark first), and each chunk after it goes to all of them.
    #[test]
    fn each_wait_gets_the_stream_from_where_it_joined() {
        let mut r = Router::default();
        assert_eq!(r.request(1, "%3", None), Requested::Start);
        assert_eq!(r.request(2, "%3", None), Requested::Queued);
        assert!(r.data("%3", b"before the start").is_empty());
        let sends = r.started("%3", fresh());
        assert_eq!(sends.len(), 2);
        assert_eq!(sends[0], (1, Frame::Entry(fresh())));
        assert_eq!(sends[1], (2, joined(b"", false, false)));
        assert_eq!(r.data("%3", b"line one\r\nhalf a li"), [1, 2]);
        assert_eq!(
            r.request(3, "%3", Some("tok".into())),
            Requested::Joined(vec![
                (1, Frame::Mark("tok".into())),
                (2, Frame::Mark("tok".into())),
                (3, joined(b"half a li", true, false)),
            ])
        );
        assert_eq!(r.data("%3", b"ne\r\n\x1b[?1049h"), [1, 2, 3]);
        // A fourth wait joins on the alternate screen.
        assert_eq!(
            r.request(4, "%3", None),
            Requested::Joined(vec![(4, joined(b"\x1b[?1049h", true, true))])
        );
        // The stream ends: every wait hears it.
        assert_eq!(r.end("%3"), [1, 2, 3, 4]);
        assert!(r.is_empty());
    }

    /// A pane someone else pipes (or a start that failed): the starter and
    /// the queued waits get that entry, and the next request starts again.
    #[test]
    fn a_foreign_pipe_is_told_to_every_wait_on_the_pane() {
        let mut r = Router::default();
        assert_eq!(r.request(1, "%0", None), Requested::Start);
        assert_eq!(r.request(2, "%0", Some("m".into())), Requested::Queued);
        assert_eq!(
            r.started("%0", Entry::Foreign),
            [
                (1, Frame::Entry(Entry::Foreign)),
                (2, Frame::Entry(Entry::Foreign))
            ]
        );
        assert!(!r.is_live("%0"));
        assert_eq!(r.request(3, "%0", None), Requested::Start);
    }

    /// A live stream whose last wait left is idle: kept for `keep`, joined
    /// by the next wait that comes meanwhile (from where the stream stands,
    /// which idle chunks moved on), closed once `keep` has passed. A stream
    /// whose waits all left while it was starting is idle once live.
    #[test]
    fn the_last_wait_leaving_keeps_the_pipe_a_moment() {
        let keep = Duration::from_millis(250);
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut r = Router::default();
        r.request(1, "%1", None);
        r.started("%1", fresh());
        r.request(2, "%1", None);
        r.leave(1, "%1", ms(0));
        assert!(!r.is_idle("%1"));
        r.leave(2, "%1", ms(10));
        assert!(r.is_idle("%1"));
        assert_eq!(r.next_expiry(keep), Some(ms(260)));
        assert!(r.expired(ms(100), keep).is_empty());
        // Output while idle moves the join point on; nobody is sent it.
        assert!(r.data("%1", b"old line\r\nhalf").is_empty());
        assert_eq!(
            r.request(3, "%1", None),
            Requested::Joined(vec![(3, joined(b"half", true, false))])
        );
        assert!(!r.is_idle("%1"));
        assert_eq!(r.next_expiry(keep), None);
        r.leave(3, "%1", ms(300));
        assert!(r.expired(ms(549), keep).is_empty());
        assert_eq!(r.expired(ms(550), keep), ["%1"]);
        assert!(r.is_empty());
        // A flooding pane's idle stream closes once it took in enough.
        r.request(4, "%4", None);
        r.started("%4", fresh());
        r.data("%4", &[b'x'; IDLE_BYTES]);
        r.leave(4, "%4", ms(0));
        r.data("%4", &[b'x'; IDLE_BYTES - 1]);
        assert!(r.expired(ms(1), keep).is_empty());
        r.data("%4", b"x");
        assert_eq!(r.expired(ms(1), keep), ["%4"]);
        // Left before the pipe was live: the starter is gone, nobody gets
        // the entry, and the stream is idle once live.
        r.request(5, "%2", None);
        r.leave(5, "%2", ms(0));
        assert!(!r.is_idle("%2"));
        assert!(r.started("%2", fresh()).is_empty());
        r.settle("%2", ms(20));
        assert!(r.is_idle("%2"));
        assert_eq!(r.take_all_idle(), ["%2"]);
        assert!(r.is_empty());
        // A wait on a pane nobody streams leaves nothing behind.
        r.leave(9, "%9", ms(0));
        assert!(r.is_empty());
    }
}
