//! The control-mode engine: one `tmux -C` client attached to the pane's
//! session streams the pane's output as it is written.
//!
//! Order of events is what makes it exact (tmux 3.3a, control.c/window.c):
//! output read from a pane is queued to control clients *before* tmux parses
//! it into the grid, and command replies are queued behind pending output.
//! So output that arrives before the reply to our entry `capture-pane` is
//! already in that capture, and everything after it is new.

use super::shell::line_editor_active;
use super::vt::{Entry, Item, LineTracker};
use super::{Candidate, Final, PaneSource, Setup, pane_fields, trim_rows};
use crate::error::{Error, Kind, Result};
use crate::signals;
use crate::tmux::control::{ControlClient, Event};
use crate::tmux::protocol::{Message, quote};
use crate::tmux::{PaneInfo, Socket};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Where the pane's process cannot be watched (see `pidwatch`), how often
/// the pane is checked for death or respawn while nothing else happens.
/// Structural notifications trigger a check at once either way.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// With the process watched, checks run only on events; this is a safety
/// net far apart enough to cost nothing.
const CHECK_EVERY_WATCHED: Duration = Duration::from_secs(300);
/// Most events handled before a batch is judged, so a flood cannot keep the
/// waiter from judging (and from honouring its deadline).
const MAX_EVENTS_PER_BATCH: usize = 512;
/// After the pane's process exited, how long to keep looking for tmux to
/// mark the pane dead (a respawn in between keeps it alive: then the pid
/// differs and the check says so).
const EXIT_NOTICE: Duration = Duration::from_secs(10);
/// How far back `tail` may reach, in rows, whatever the scrollback holds.
const TAIL_ROWS: i64 = 64;

const ENTRY_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_width}\t#{cursor_x}\t#{cursor_y}\t#{alternate_on}\t#{history_size}\t#{history_limit}\t#{pane_height}\t#{window_id}";
/// What a cursor needs to guess where its place is now (see `cursor`).
pub const GEOMETRY_FORMAT: &str = "#{history_size}\t#{history_limit}\t#{cursor_y}\t#{pane_height}";
const CHECK_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_width}\t#{window_id}";
const FINAL_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{history_size}\t#{cursor_y}\t#{pane_height}\t#{pane_width}";
const RELINK_FORMAT: &str = "#{session_id}\t#{window_id}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Ignore,
    Check,
    OtherPanes,
    Relink,
    Wanted,
}

/// A pane's size and where its cursor and history stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Geometry {
    pub history_size: i64,
    pub history_limit: i64,
    pub height: i64,
    pub width: i64,
    pub cursor_x: i64,
    pub cursor_y: i64,
}

pub struct ControlSource {
    client: ControlClient,
    socket: Socket,
    pane: PaneInfo,
    pane_num: u32,
    window_id: String,
    tracker: Option<LineTracker>,
    entry_lines: Vec<String>,
    /// history_size + cursor_y at entry: the entry row, counted from the
    /// oldest line of history.
    entry_abs: i64,
    geometry: Geometry,
    history: Vec<String>,
    cursor_value: String,
    /// Absolute row of the first line of `history`.
    history_from: Option<i64>,
    final_lines: bool,
    pending: VecDeque<Purpose>,
    wanted: Option<(bool, Vec<String>)>,
    next_check: Instant,
    output_seen: bool,
    /// Output was fed to the tracker and no batch has been taken since.
    unconsumed: bool,
    /// When the pane's process was seen to exit.
    pane_exited: Option<Instant>,
    /// False once a verdict is reached: later output is not judged.
    streaming: bool,
    check_every: Duration,
    /// The session to attach a client of our own to, once every reply on
    /// the shared connection has come (the pane moved to another session
    /// and the hub's client cannot follow it).
    relink_to: Option<String>,
}

impl ControlSource {
    pub fn open(socket: &Socket, pane: &PaneInfo, setup: &Setup) -> Result<Self> {
        let shared = if setup.shared {
            ControlClient::attach_shared(
                socket,
                &pane.session_id,
                &pane.pane_id,
                pane.version,
                setup.deadline,
                wanted,
            )?
        } else {
            None
        };
        let client = match shared {
            Some(c) => c,
            None => ControlClient::attach(
                socket,
                &pane.session_id,
                pane.version,
                setup.deadline,
                wanted,
            )?,
        };
        signals::route_to(client.sender());
        let mut me = ControlSource {
            client,
            socket: socket.clone(),
            pane: pane.clone(),
            pane_num: pane.number(),
            window_id: String::new(),
            tracker: None,
            entry_lines: Vec::new(),
            entry_abs: 0,
            geometry: Geometry::default(),
            history: Vec::new(),
            cursor_value: String::new(),
            history_from: None,
            final_lines: setup.final_lines,
            pending: VecDeque::new(),
            wanted: None,
            next_check: Instant::now() + CHECK_EVERY,
            output_seen: false,
            unconsumed: false,
            pane_exited: None,
            streaming: false,
            check_every: CHECK_EVERY,
            relink_to: None,
        };
        let t = quote(&pane.pane_id);
        let mut from = None;
        if let Some(opt) = &setup.cursor_option {
            me.send(
                &format!("display-message -p -t {t} {}", quote(GEOMETRY_FORMAT)),
                Purpose::Wanted,
            )?;
            me.send(
                &format!("show-options -pqv -t {t} {}", quote(opt)),
                Purpose::Wanted,
            )?;
            let geometry = me.wait_reply(setup.deadline)?;
            let value = me.wait_reply(setup.deadline)?;
            me.cursor_value = value.join("\n");
            let f = super::fields(geometry.first().map(String::as_str).unwrap_or(""));
            from = Some(crate::cursor::capture_start(&me.cursor_value, &f));
        }
        me.entry(from, setup.ready.as_deref(), setup.deadline)?;
        if super::pidwatch::watch(me.pane.pane_pid, me.client.sender()) {
            me.check_every = CHECK_EVERY_WATCHED;
            me.next_check = Instant::now() + me.check_every;
        }
        // Through the hub, other panes are the hub's business.
        if pane.version.has_client_flags() && !me.client.is_shared() {
            me.quiet_other_panes(&pane.session_id)?;
        }
        Ok(me)
    }

    /// Ask for the session's panes, to pause their output for this client.
    fn quiet_other_panes(&mut self, session_id: &str) -> Result<()> {
        let sid = quote(session_id);
        self.send(
            &format!("list-panes -s -t {sid} -F '#{{pane_id}}'"),
            Purpose::OtherPanes,
        )
    }

    /// Leave the hub for a client of our own on the pane's new session,
    /// once no reply is owed on the shared connection.
    fn relink_privately(&mut self, deadline: Instant) -> Result<()> {
        if !self.pending.is_empty() {
            return Ok(());
        }
        let Some(sid) = self.relink_to.take() else {
            return Ok(());
        };
        let client = ControlClient::attach(
            &self.socket,
            &sid,
            self.pane.version,
            deadline.max(Instant::now() + Duration::from_secs(5)),
            wanted,
        )?;
        signals::route_to(client.sender());
        if self.check_every == CHECK_EVERY_WATCHED
            && !super::pidwatch::watch(self.pane.pane_pid, client.sender())
        {
            self.check_every = CHECK_EVERY;
        }
        self.client = client;
        // Whatever the pane wrote while no client followed it is not seen.
        self.next_check = Instant::now();
        self.quiet_other_panes(&sid)
    }

    /// Take the entry state: pane geometry, the cursor's row, the visible
    /// text and, with `from`, the history from that row (`-` for all of it).
    /// Output that arrives before these replies is in them; everything
    /// after is new.
    /// With `ready`, that channel is signalled in the same batch: nothing
    /// the pane writes falls between the entry state and the signal.
    fn entry(
        &mut self,
        from: Option<String>,
        ready: Option<&str>,
        deadline: Instant,
    ) -> Result<()> {
        self.streaming = false;
        let t = quote(&self.pane.pane_id);
        // Sent together, run together: no pane output is parsed in between.
        self.send(
            &format!("display-message -p -t {t} {}", quote(ENTRY_FORMAT)),
            Purpose::Wanted,
        )?;
        self.send(&format!("capture-pane -p -t {t}"), Purpose::Wanted)?;
        self.send(&format!("capture-pane -p -J -t {t}"), Purpose::Wanted)?;
        if let Some(from) = &from {
            self.send(
                &format!("capture-pane -p -J -t {t} -S {} -E -", quote(from)),
                Purpose::Wanted,
            )?;
        }
        if let Some(ch) = ready {
            self.send(&format!("wait-for -S {}", quote(ch)), Purpose::Ignore)?;
        }
        let info = self.wait_reply(deadline)?;
        let rows = self.wait_reply(deadline)?;
        let joined = self.wait_reply(deadline)?;
        self.history = match from {
            Some(_) => self.wait_reply(deadline)?,
            None => Vec::new(),
        };

        let (id, f) = pane_fields(&info);
        if id != self.pane.pane_id {
            return Err(self.closed());
        }
        if f.len() != 10 {
            return Err(Error::new(
                Kind::Tmux,
                "unexpected reply to display-message",
            ));
        }
        if f[1] == 1 {
            return Err(Error::new(
                Kind::PaneDied,
                format!(
                    "pane {} is dead (its program has exited)",
                    self.pane.pane_id
                ),
            ));
        }
        self.pane.pane_pid = u32::try_from(f[0]).unwrap_or(0);
        self.window_id = info
            .first()
            .map(String::as_str)
            .unwrap_or("")
            .rsplit('\t')
            .next()
            .unwrap_or("")
            .to_owned();
        let (width, cursor_x, cursor_y) = (f[2].max(1), f[3].max(0), f[4].max(0));
        self.entry_abs = f[6].max(0) + cursor_y;
        self.history_from = match from.as_deref() {
            Some("-") | None => Some(0),
            Some(n) => n.parse::<i64>().ok().map(|n| (f[6].max(0) + n).max(0)),
        };
        self.geometry = Geometry {
            history_size: f[6].max(0),
            history_limit: f[7].max(0),
            height: f[8].max(1),
            width,
            cursor_x,
            cursor_y,
        };
        let entry_row = rows
            .get(usize::try_from(cursor_y).unwrap_or(0))
            .cloned()
            .unwrap_or_default();
        self.entry_lines = trim_rows(joined);
        let tracker = LineTracker::new(&Entry {
            width: usize::try_from(width).unwrap_or(80),
            row: entry_row.trim_end().to_owned(),
            cursor_x: usize::try_from(cursor_x).unwrap_or(0),
            alternate_on: f[5] == 1,
            at_prompt: line_editor_active(self.pane.pane_pid, &self.pane.pane_tty),
        });
        self.tracker = Some(if self.final_lines {
            tracker.final_lines()
        } else {
            tracker
        });
        self.streaming = true;
        self.unconsumed = false;
        Ok(())
    }

    /// Take the entry state again with the whole history (a cursor's place
    /// was not where it was expected).
    pub fn rebaseline_all(&mut self, deadline: Instant) -> Result<()> {
        self.entry(Some("-".to_owned()), None, deadline)
    }

    /// The pane's geometry at entry.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Joined lines of the history captured at entry (see
    /// `Setup::cursor_option`), from the captured start to the screen's end.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// The absolute row (from the oldest line of history) `history` starts
    /// at; 0 means it holds all of the history.
    pub fn history_from(&self) -> i64 {
        self.history_from.unwrap_or(0)
    }

    /// The cursor option's value read at entry ("" when unset).
    pub fn cursor_value(&self) -> &str {
        &self.cursor_value
    }

    pub fn pane(&self) -> &PaneInfo {
        &self.pane
    }

    pub fn tracker(&self) -> &LineTracker {
        self.tracker.as_ref().expect("tracker set in open")
    }

    /// Run tmux commands over the connection, sent together, and return
    /// their output; pane output arriving meanwhile is kept for the next
    /// batch.
    pub fn query_all(
        &mut self,
        commands: &[String],
        deadline: Instant,
    ) -> Result<Vec<Vec<String>>> {
        for c in commands {
            self.send(c, Purpose::Wanted)?;
        }
        let mut out = Vec::new();
        for _ in commands {
            out.push(self.wait_reply(deadline)?);
        }
        Ok(out)
    }

    /// Lines and marks the tracker holds now (complete lines only).
    pub fn take_items(&mut self) -> Vec<Item> {
        self.unconsumed = false;
        self.tracker
            .as_mut()
            .map(|t| t.take_items(false))
            .unwrap_or_default()
    }

    /// The next lines and marks, or None when `deadline` passed; an empty
    /// batch means output changed only the unfinished line (or the prompt
    /// state).
    pub fn next_items(&mut self, deadline: Instant) -> Result<Option<Vec<Item>>> {
        if !self.wait_output(deadline)? {
            return Ok(None);
        }
        let t = self.tracker.as_mut().expect("tracker set in open");
        Ok(Some(t.take_items(false)))
    }

    /// Wait until pane output arrived (true) or `deadline` passed (false).
    fn wait_output(&mut self, deadline: Instant) -> Result<bool> {
        // Output taken in while waiting for a reply has not been looked at.
        if std::mem::take(&mut self.unconsumed) {
            return Ok(true);
        }
        loop {
            if self.relink_to.is_some() {
                self.relink_privately(deadline)?;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            if now >= self.next_check {
                self.send_check()?;
            }
            let wake = deadline.min(self.next_check);
            let Some(ev) = self.client.recv(wake) else {
                continue;
            };
            self.output_seen = false;
            self.handle(ev)?;
            for _ in 0..MAX_EVENTS_PER_BATCH {
                match self.client.try_recv() {
                    Some(ev) => self.handle(ev)?,
                    None => break,
                }
            }
            if self.output_seen {
                self.unconsumed = false;
                return Ok(true);
            }
        }
    }

    fn send(&mut self, line: &str, purpose: Purpose) -> Result<()> {
        if self.client.send(line).is_err() {
            // The connection is gone: say why (server, pane or detach).
            return Err(self.lost());
        }
        self.pending.push_back(purpose);
        Ok(())
    }

    /// Wait for the next `Wanted` reply, handling everything else meanwhile.
    fn wait_reply(&mut self, deadline: Instant) -> Result<Vec<String>> {
        loop {
            if let Some((ok, lines)) = self.wanted.take() {
                return if ok {
                    Ok(lines)
                } else {
                    Err(crate::tmux::classify_failure(&lines.join(" ")))
                };
            }
            match self.client.recv(deadline) {
                Some(ev) => self.handle(ev)?,
                None => return Err(Error::new(Kind::Tmux, "tmux did not answer in time")),
            }
        }
    }

    fn handle(&mut self, ev: Event) -> Result<()> {
        match ev {
            Event::Control(Message::Output { pane, data }, at) => {
                if pane == self.pane_num
                    && self.streaming
                    && let Some(t) = &mut self.tracker
                {
                    t.feed(&data, at);
                    self.output_seen = true;
                    self.unconsumed = true;
                }
            }
            Event::Control(Message::Reply { ok, lines }, _) => {
                match self.pending.pop_front().unwrap_or(Purpose::Ignore) {
                    Purpose::Ignore => {}
                    Purpose::Wanted => self.wanted = Some((ok, lines)),
                    Purpose::Check => self.on_check(ok, &lines)?,
                    Purpose::OtherPanes if ok => {
                        // One command per 100 panes (-A repeats), not one
                        // per pane: a session of many panes would otherwise
                        // cost the server a command each, per wait. Paused,
                        // not off: see `hub` (tmux issue 5054).
                        let me = self.pane.pane_id.clone();
                        let others: Vec<String> = lines
                            .iter()
                            .filter(|p| **p != me && p.starts_with('%'))
                            .map(|p| format!("-A {}", quote(&format!("{p}:pause"))))
                            .collect();
                        for chunk in others.chunks(100) {
                            self.send(
                                &format!("refresh-client {}", chunk.join(" ")),
                                Purpose::Ignore,
                            )?;
                        }
                    }
                    Purpose::Relink if ok => {
                        let line = lines.first().cloned().unwrap_or_default();
                        let mut it = line.split('\t');
                        if let (Some(sid), Some(wid)) = (it.next(), it.next())
                            && sid.starts_with('$')
                        {
                            self.window_id = wid.to_owned();
                            if self.client.is_shared() {
                                self.relink_to = Some(sid.to_owned());
                                return Ok(());
                            }
                            self.send(
                                &format!("switch-client -t {}", quote(sid)),
                                Purpose::Ignore,
                            )?;
                        }
                    }
                    Purpose::OtherPanes | Purpose::Relink => {}
                }
            }
            Event::Control(Message::Notification(n), _) => self.on_notification(&n)?,
            Event::Control(Message::Exit { .. }, _) | Event::Eof => return Err(self.lost()),
            Event::Signal(sig) => return Err(Error::new(Kind::Interrupted(sig), "interrupted")),
            Event::PaneExited => {
                self.pane_exited = Some(Instant::now());
                self.next_check = Instant::now();
            }
        }
        Ok(())
    }

    fn on_notification(&mut self, n: &str) -> Result<()> {
        let mut words = n.split(' ');
        let name = words.next().unwrap_or("");
        match name {
            "%window-close" | "%unlinked-window-close" => {
                if words.next() == Some(self.window_id.as_str()) {
                    // Our pane's window left the session: follow it (output
                    // written in between is not delivered; see README).
                    let t = quote(&self.pane.pane_id);
                    self.send(
                        &format!("display-message -p -t {t} {}", quote(RELINK_FORMAT)),
                        Purpose::Relink,
                    )?;
                }
                self.next_check = Instant::now();
            }
            "%layout-change"
            | "%session-changed"
            | "%sessions-changed"
            | "%window-pane-changed"
            | "%unlinked-window-add" => {
                self.next_check = Instant::now();
            }
            _ => {}
        }
        Ok(())
    }

    fn send_check(&mut self) -> Result<()> {
        let t = quote(&self.pane.pane_id);
        self.send(
            &format!("display-message -p -t {t} {}", quote(CHECK_FORMAT)),
            Purpose::Check,
        )?;
        self.next_check = Instant::now() + self.check_every;
        Ok(())
    }

    fn on_check(&mut self, ok: bool, lines: &[String]) -> Result<()> {
        if !ok {
            return Err(self.closed());
        }
        let f = self.verify(lines)?;
        if let Some(at) = self.pane_exited {
            // The process is gone but tmux has not noticed yet (it marks the
            // pane dead when it reads the end of its terminal): look again
            // shortly, until it has.
            if at.elapsed() < EXIT_NOTICE {
                self.next_check = Instant::now() + Duration::from_millis(5);
            }
        }
        if let (Some(t), Some(&w)) = (&mut self.tracker, f.get(2)) {
            t.set_width(usize::try_from(w.max(1)).unwrap_or(80));
        }
        // The pane is in another window now (break-pane, join-pane, a
        // window moved without closing): follow it to its session.
        let window = lines
            .first()
            .and_then(|l| l.rsplit('\t').next())
            .unwrap_or("");
        if window.starts_with('@') && window != self.window_id {
            self.window_id = window.to_owned();
            let t = quote(&self.pane.pane_id);
            self.send(
                &format!("display-message -p -t {t} {}", quote(RELINK_FORMAT)),
                Purpose::Relink,
            )?;
        }
        Ok(())
    }

    fn closed(&self) -> Error {
        Error::new(
            Kind::PaneDied,
            format!("pane {} was closed during the wait", self.pane.pane_id),
        )
    }

    /// Check a reply that starts `#{pane_id}\t#{pane_pid}\t#{pane_dead}`
    /// (display-message falls back to another pane when ours is gone, so
    /// the id is compared too); returns the numeric fields.
    fn verify(&self, lines: &[String]) -> Result<Vec<i64>> {
        let (id, f) = pane_fields(lines);
        if id != self.pane.pane_id {
            return Err(self.closed());
        }
        if f.len() < 2 {
            return Err(Error::new(Kind::Tmux, "unexpected reply from tmux"));
        }
        if f[0] != i64::from(self.pane.pane_pid) {
            return Err(Error::new(
                Kind::PaneRespawned,
                format!("pane {} was respawned during the wait", self.pane.pane_id),
            ));
        }
        if f[1] == 1 {
            return Err(Error::new(
                Kind::PaneDied,
                format!(
                    "pane {}'s program exited during the wait",
                    self.pane.pane_id
                ),
            ));
        }
        Ok(f)
    }

    /// The control connection went away: find out why.
    fn lost(&mut self) -> Error {
        if let Some(sig) = signals::pending() {
            return Error::new(Kind::Interrupted(sig), "interrupted");
        }
        let fmt = "#{pane_id}\t#{pane_pid}\t#{pane_dead}";
        match self
            .socket
            .run(["display-message", "-p", "-t", &self.pane.pane_id, fmt])
        {
            Err(e) if e.kind == Kind::NoServer => {
                Error::new(Kind::ServerExited, "the tmux server exited during the wait")
            }
            Err(e) if e.kind == Kind::NoPane => self.closed(),
            Err(e) => e,
            Ok(lines) => match self.verify(&lines) {
                Err(e) => e,
                Ok(_) if self.client.is_shared() => Error::new(
                    Kind::Tmux,
                    "the tmux-wait hub (the session's shared control client) went away during the wait",
                ),
                Ok(_) => Error::new(
                    Kind::Tmux,
                    "the tmux control client was detached during the wait",
                ),
            },
        }
    }
}

/// The notifications `on_notification` acts on; every other one (client
/// attach and detach, renames, paste buffers) is dropped on the reader
/// thread. Output of other panes is paused at the server, where the version
/// allows, and dropped here otherwise.
pub const NOTIFICATIONS: [&str; 7] = [
    "%window-close",
    "%unlinked-window-close",
    "%layout-change",
    "%session-changed",
    "%sessions-changed",
    "%window-pane-changed",
    "%unlinked-window-add",
];

fn wanted(msg: &Message) -> bool {
    match msg {
        Message::Notification(n) => {
            let name = n.split(' ').next().unwrap_or("");
            NOTIFICATIONS.contains(&name)
        }
        _ => true,
    }
}

impl PaneSource for ControlSource {
    fn entry_lines(&self) -> &[String] {
        &self.entry_lines
    }

    fn next_batch(&mut self, deadline: Instant) -> Result<Option<Vec<Candidate>>> {
        if !self.wait_output(deadline)? {
            return Ok(None);
        }
        let t = self.tracker.as_mut().expect("tracker set in open");
        Ok(Some(t.take(true)))
    }

    fn saw_output(&self) -> bool {
        self.tracker.as_ref().is_some_and(LineTracker::saw_output)
    }

    fn saw_alternate(&self) -> bool {
        self.tracker
            .as_ref()
            .is_some_and(LineTracker::saw_alternate)
    }

    fn prompts(&self) -> (u32, Option<i32>) {
        self.tracker
            .as_ref()
            .map(LineTracker::prompts)
            .unwrap_or((0, None))
    }

    fn finish(&mut self) -> Result<Final> {
        // Stop feeding; what comes now is after the verdict.
        self.streaming = false;
        let deadline = Instant::now() + Duration::from_secs(5);
        let t = quote(&self.pane.pane_id);
        // One round trip: the pane's state and every row the tail can need
        // (TAIL_ROWS above the screen to its end), cut to size here.
        self.send(
            &format!("display-message -p -t {t} {}", quote(FINAL_FORMAT)),
            Purpose::Wanted,
        )?;
        self.send(
            &format!("capture-pane -p -J -t {t} -S -{TAIL_ROWS} -E -"),
            Purpose::Wanted,
        )?;
        let (reply, captured) = match (self.wait_reply(deadline), self.wait_reply(deadline)) {
            (Ok(r), Ok(c)) => (r, c),
            (Err(e), _) | (_, Err(e)) if e.kind == Kind::NoPane => return Err(self.closed()),
            (Err(e), _) | (_, Err(e)) => return Err(e),
        };
        let f = self.verify(&reply)?;
        if f.len() < 6 {
            return Err(Error::new(
                Kind::Tmux,
                "unexpected reply to display-message",
            ));
        }
        let (history, cursor_y, height, width) =
            (f[2].max(0), f[3].max(0), f[4].max(1), f[5].max(1));
        // Rows from the entry row (or TAIL_ROWS above the cursor) down,
        // counted from the oldest line of history.
        let want = self
            .entry_abs
            .clamp(0, history + height - 1)
            .max(history + cursor_y - TAIL_ROWS);
        let mut row = (history - TAIL_ROWS).max(0);
        let mut tail = Vec::new();
        for line in captured {
            let rows =
                crate::cursor::split_rows(line.trim_end(), usize::try_from(width).unwrap_or(80))
                    .len() as i64;
            if row + rows > want {
                tail.push(line);
            }
            row += rows;
        }
        Ok(Final {
            tail: trim_rows(tail),
        })
    }
}
