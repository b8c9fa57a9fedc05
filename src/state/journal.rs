//! What happened while the person was away: every attention event of a
//! server (a pane needs someone; its question answered, and by whom; a
//! need gone), one JSON object a line in `attention.log` in the server's
//! state directory.
//!
//! - **Append-only and safe against concurrent writers**: the attention
//!   watch, the menu's answers, scripts' `answer` and the visit hooks all
//!   write; each append takes an exclusive `flock` on `attention.lock`,
//!   then writes its line in one `write` to a file opened `O_APPEND`
//!   (mode 0600, no symlink followed). A reader takes the lock shared.
//! - **Bounded**: a line is at most [`LINE_MAX`] bytes (a question is cut);
//!   once `attention.log` would pass [`FILE_MAX`] it is renamed
//!   `attention.log.1` (the one before goes) and a new one starts: at most
//!   twice that on disk.
//! - **Two clocks**: `time` (the wall clock, for people: when) and `boot`
//!   (seconds since boot, `sys::clock`: for order and durations, which
//!   no setting of the wall clock moves). A server does not outlive a
//!   boot, so every `boot` of one log is on one clock.

use super::Store;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// The size at which the log is rotated.
pub const FILE_MAX: u64 = 1 << 20;
/// The longest line written.
pub const LINE_MAX: usize = 2048;
const LOG: &str = "attention.log";
const OLD: &str = "attention.log.1";
const LOCK: &str = "attention.lock";

/// One event. `event` is `needs` (a pane newly needs someone: `state`,
/// `reason`, `question`), `answered` (its question: `by` `keys` (typed in
/// the pane, or the program went on by itself), `menu` or `script`, with
/// `choice` and `moved_on` for the last two) or `gone` (a need over
/// otherwise: `how` `seen`, `working`, `closed`, `respawned`, `replaced`,
/// `off`). An end says how long the need lasted (`waited`, seconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Seconds since the epoch.
    pub time: f64,
    /// Seconds since boot.
    pub boot: f64,
    pub event: String,
    pub pane: String,
    /// `session:window`, when it was written.
    #[serde(default)]
    pub place: String,
    /// What the need was (`asking`, `prompt`, `exited`, `bell`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The need began under a person's eyes (their pane).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seen: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_on: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited: Option<f64>,
}

impl Event {
    /// An event of `pane` now: the wall clock's time, and `boot` (the
    /// caller's reading of the boot clock).
    pub fn now(event: &str, pane: &str, place: &str, boot: f64) -> Event {
        Event {
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            boot,
            event: event.to_owned(),
            pane: pane.to_owned(),
            place: place.to_owned(),
            ..Event::default()
        }
    }

    /// Its JSON line, cut to [`LINE_MAX`] (the question gives way).
    fn line(&self) -> String {
        let mut e = self.clone();
        e.time = (e.time * 1e3).round() / 1e3;
        e.boot = (e.boot * 1e3).round() / 1e3;
        e.waited = e.waited.map(|w| (w.max(0.0) * 1e3).round() / 1e3);
        loop {
            let l = serde_json::to_string(&e).expect("serialisable");
            if l.len() < LINE_MAX {
                return l;
            }
            let halve = |q: &mut String| {
                let keep = q.chars().count() / 2;
                *q = q.chars().take(keep).collect::<String>() + "…";
            };
            match e.question.as_mut() {
                Some(q) if q.chars().count() > 16 => halve(q),
                _ if e.place.chars().count() > 16 => halve(&mut e.place),
                _ => return l,
            }
        }
    }
}

impl Store {
    fn journal_path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The journal's lock, taken (`exclusive` to write).
    fn journal_lock(&self, exclusive: bool) -> Result<File> {
        let path = self.journal_path(LOCK);
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| Error::io(&format!("cannot open {}", path.display()), e))?;
        let op = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        // SAFETY: flock on a descriptor we own; released when it closes.
        while unsafe { libc::flock(f.as_raw_fd(), op) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::io("cannot lock the attention log", e));
            }
        }
        Ok(f)
    }

    /// Append `e` to the attention log (rotated at `FILE_MAX`).
    pub fn journal(&self, e: &Event) -> Result<()> {
        self.journal_at(e, FILE_MAX)
    }

    fn journal_at(&self, e: &Event, max: u64) -> Result<()> {
        let _lock = self.journal_lock(true)?;
        self.append_locked(e, max)
    }

    /// Append `e` (the lock held), rotating at `max`.
    fn append_locked(&self, e: &Event, max: u64) -> Result<()> {
        let mut line = e.line();
        line.push('\n');
        let path = self.journal_path(LOG);
        let size = std::fs::symlink_metadata(&path).map_or(0, |m| m.len());
        if size > 0 && size + line.len() as u64 > max {
            std::fs::rename(&path, self.journal_path(OLD))
                .map_err(|e| Error::io("cannot rotate the attention log", e))?;
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| Error::io(&format!("cannot write {}", path.display()), e))?;
        f.write_all(line.as_bytes())
            .map_err(|e| Error::io(&format!("cannot write {}", path.display()), e))
    }

    /// Every event kept, in the order they happened (on the boot clock;
    /// the order written for the same instant). Lines that do not parse
    /// (a disk that filled mid-line) are skipped.
    pub fn journal_events(&self) -> Vec<Event> {
        let Ok(_lock) = self.journal_lock(false) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for name in [OLD, LOG] {
            let mut text = String::new();
            if let Ok(mut f) = open_read(&self.journal_path(name)) {
                let _ = f.read_to_string(&mut text);
            }
            out.extend(
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Event>(l).ok()),
            );
        }
        out.sort_by(|a, b| a.boot.total_cmp(&b.boot));
        out
    }

    /// The events in the last 64 KiB of the log (the lock held), in the
    /// order they happened.
    fn journal_tail(&self) -> Vec<Event> {
        let Ok(mut f) = open_read(&self.journal_path(LOG)) else {
            return Vec::new();
        };
        let len = f.metadata().map_or(0, |m| m.len());
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
        let mut bytes = Vec::new();
        let _ = f.read_to_end(&mut bytes);
        let mut v: Vec<Event> = String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Event>(l).ok())
            .collect();
        v.sort_by(|a, b| a.boot.total_cmp(&b.boot));
        v
    }

    /// Append `e`, the end of the need of its pane that began at `began`
    /// (boot clock; `e.waited` is counted from it), unless the log's tail
    /// has an end of it already: two processes that clear the same mark
    /// (a visit hook and the watch) log it once. Returns whether it was
    /// written.
    pub fn journal_end(&self, e: &Event, began: f64) -> Result<bool> {
        let _lock = self.journal_lock(true)?;
        let ended = self.journal_tail().iter().any(|x| {
            x.pane == e.pane
                && x.event != "needs"
                && x.waited.is_some_and(|w| (x.boot - w - began).abs() < 0.01)
        });
        if ended {
            return Ok(false);
        }
        self.append_locked(e, FILE_MAX)?;
        Ok(true)
    }

    /// The last `needs` of `pane` in the log's tail, if nothing ended it
    /// after: what a pane that closed was waiting for.
    pub fn journal_open_need(&self, pane: &str) -> Option<Event> {
        let _lock = self.journal_lock(false).ok()?;
        let mut open = None;
        for e in self.journal_tail() {
            if e.pane != pane {
                continue;
            }
            if e.event == "needs" {
                open = Some(e);
            } else {
                open = None;
            }
        }
        open
    }
}

/// How much of the log's end is looked at for an end already written.
const TAIL: u64 = 64 * 1024;

fn open_read(path: &std::path::Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let s = Store::at(tmp.path().join("s")).unwrap();
        (tmp, s)
    }

    #[test]
    fn events_come_back_in_order_with_both_clocks() {
        let (_t, s) = store();
        let mut a = Event::now("needs", "%1", "main:1", 100.0);
        a.state = Some("asking".into());
        a.question = Some("Go? [y/N]".into());
        let mut b = Event::now("answered", "%1", "main:1", 102.5);
        b.by = Some("menu".into());
        b.waited = Some(2.5);
        // Written out of order (the answer's line comes once it is
        // judged): read back in the order they happened.
        s.journal(&b).unwrap();
        s.journal(&a).unwrap();
        let got = s.journal_events();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].event, "needs");
        assert_eq!(got[1].by.as_deref(), Some("menu"));
        assert!(got[0].time > 1.6e9 && got[0].boot > 0.0);
        let mode = std::fs::metadata(s.dir.join(LOG)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
        // An end already there is not written twice.
        assert!(!s.journal_end(&b, a.boot).unwrap());
        let mut c = Event::now("gone", "%2", "main:2", 103.0);
        c.how = Some("closed".into());
        c.waited = Some(2.0);
        assert!(s.journal_end(&c, 101.0).unwrap());
        assert!(!s.journal_end(&c, 101.0).unwrap());
        assert_eq!(s.journal_events().len(), 3);
        // %1's need ended; %3's did not.
        assert!(s.journal_open_need("%1").is_none());
        let mut d = Event::now("needs", "%3", "main:3", 104.0);
        d.state = Some("exited".into());
        s.journal(&d).unwrap();
        assert_eq!(
            s.journal_open_need("%3").unwrap().state.as_deref(),
            Some("exited")
        );
    }

    #[test]
    fn the_log_is_rotated_and_bounded() {
        let (_t, s) = store();
        for i in 0..400 {
            let mut e = Event::now("needs", &format!("%{i}"), "main:1", f64::from(i));
            e.question = Some("x".repeat(100));
            s.journal_at(&e, 8 * 1024).unwrap();
        }
        let now = std::fs::metadata(s.dir.join(LOG)).unwrap().len();
        let old = std::fs::metadata(s.dir.join(OLD)).unwrap().len();
        assert!(now <= 8 * 1024 && old <= 8 * 1024, "{now} {old}");
        let got = s.journal_events();
        // The newest are kept, whole and in order.
        assert_eq!(got.last().unwrap().pane, "%399");
        assert!(got.len() > 50 && got.len() < 200, "{}", got.len());
        assert!(got.windows(2).all(|w| w[0].boot <= w[1].boot));
    }

    #[test]
    fn a_long_question_is_cut_to_a_line() {
        let mut e = Event::now("needs", "%1", "main:1", 1.0);
        e.question = Some("é".repeat(5000));
        let l = e.line();
        assert!(l.len() < LINE_MAX);
        let back: Event = serde_json::from_str(&l).unwrap();
        assert!(back.question.unwrap().ends_with('…'));
    }

    #[test]
    fn writers_side_by_side_lose_no_line() {
        let (_t, s) = store();
        std::thread::scope(|sc| {
            for t in 0..4 {
                let s = &s;
                sc.spawn(move || {
                    for i in 0..100 {
                        let e = Event::now("needs", &format!("%{t}-{i}"), "w", f64::from(i));
                        s.journal_at(&e, 16 * 1024).unwrap();
                    }
                });
            }
        });
        let now = std::fs::read_to_string(s.dir.join(LOG)).unwrap();
        let old = std::fs::read_to_string(s.dir.join(OLD)).unwrap_or_default();
        // Every line whole; the two files hold the newest, and no line is
        // in both.
        for l in now.lines().chain(old.lines()) {
            serde_json::from_str::<Event>(l).unwrap();
        }
        assert!(now.len() as u64 <= 16 * 1024);
    }
}
