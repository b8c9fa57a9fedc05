//! What outlives one process: the watches running for a tmux server and the
//! last result, kept in a private per-user directory.
//!
//! Layout: `$XDG_RUNTIME_DIR/tmux-wait`, else `tmux-wait` beside the server's
//! socket (for the default sockets that is inside tmux's own private
//! `/tmp/tmux-UID`), mode 0700 and owned by us, checked on every use (a
//! directory someone else made or a symlink planted there is refused); below
//! it one directory per server (`server-<pid>-<start time>`), holding `watch-<id>.json` (0600) for each
//! running watch and `last.json` for the last finished one. Files are
//! written to a temporary name and renamed, so readers never see half a file.
//! `attention.log` beside them keeps what attention saw happen
//! (`journal`).

mod journal;
pub use journal::Event as AttentionEvent;

use crate::error::{Error, Kind, Result};
use serde::{Deserialize, Serialize};
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A running watch, as `tmux-wait list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchRecord {
    pub id: String,
    pub pid: u32,
    pub pane_id: String,
    /// `text`, `done` or `quiet`.
    pub kind: String,
    /// What is waited for, for people (the pattern, "command to finish"...).
    pub label: String,
    /// Seconds since the epoch.
    pub started: u64,
    pub timeout_seconds: f64,
    pub channel: String,
}

/// How a watch ended, for the status line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastResult {
    pub id: String,
    pub pane_id: String,
    pub label: String,
    pub outcome: crate::report::WatchOutcome,
    pub ok: bool,
    pub elapsed_seconds: f64,
    pub finished: u64,
}

/// The state directory of one tmux server.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

fn current_uid() -> u32 {
    // SAFETY: getuid cannot fail and has no preconditions.
    unsafe { libc::getuid() }
}

fn base_dir(socket_path: &Path) -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("tmux-wait"));
    }
    match socket_path.parent() {
        Some(dir) if socket_path.is_absolute() => Ok(dir.join("tmux-wait")),
        _ => Err(Error::new(
            Kind::Tmux,
            "tmux did not say where its socket is; set XDG_RUNTIME_DIR",
        )),
    }
}

/// Create `dir` 0700 if missing; refuse it unless it is a real directory
/// owned by us and closed to others.
fn private_dir(dir: &Path) -> Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(&format!("cannot create {}", dir.display()), e)),
    }
    let meta = fs::symlink_metadata(dir)
        .map_err(|e| Error::io(&format!("cannot read {}", dir.display()), e))?;
    let uid = current_uid();
    if !meta.is_dir() || meta.uid() != uid {
        return Err(Error::new(
            Kind::Io,
            format!(
                "{} is not a directory of ours; refusing to keep state there",
                dir.display()
            ),
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io(&format!("cannot restrict {}", dir.display()), e))?;
    }
    Ok(())
}

/// tmux-wait's private directory for what belongs to no one server (the
/// ssh connections' sockets): `$XDG_RUNTIME_DIR/tmux-wait`, else
/// `tmux-wait` in tmux's own per-user socket directory (`$TMUX_TMPDIR` or
/// /tmp, `tmux-UID`), then `sub` inside it; each made 0700 and checked as
/// ours.
pub fn user_dir(sub: &str) -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("tmux-wait"),
        None => {
            let tmp = std::env::var_os("TMUX_TMPDIR")
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| "/tmp".into());
            let tmux = PathBuf::from(tmp).join(format!("tmux-{}", current_uid()));
            private_dir(&tmux)?;
            tmux.join("tmux-wait")
        }
    };
    private_dir(&base)?;
    let dir = base.join(sub);
    private_dir(&dir)?;
    Ok(dir)
}

/// Remove the directories of servers that are gone (their pid no longer
/// runs) when they hold nothing but lock files and the attention log (a
/// gone server's events: `log` shows those of the server it asks), so
/// servers coming and going leave nothing behind. One that still holds a
/// record is left alone, and so is one whose pid was reused.
fn prune_gone_servers(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("server-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<libc::pid_t>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if !gone {
            continue;
        }
        let Ok(inside) = fs::read_dir(e.path()) else {
            continue;
        };
        let inside: Vec<_> = inside.flatten().map(|f| f.path()).collect();
        let removable = |f: &PathBuf| {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            f.is_file()
                && (f.extension().is_some_and(|x| x == "lock")
                    || name == "attention.log"
                    || name == "attention.log.1")
        };
        if inside.iter().all(removable) {
            for f in &inside {
                let _ = fs::remove_file(f);
            }
            // Fails, harmlessly, if something arrived meanwhile.
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// Write `data` to a new file at `path`, readable by its owner only (not
/// through a link, nor over a file already there).
fn write_new_private(path: &Path, data: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| Error::io(&format!("cannot write {}", path.display()), e))?;
    f.write_all(data)
        .map_err(|e| Error::io(&format!("cannot write {}", path.display()), e))
}

impl Store {
    /// The store of the server identified by its pid and start time.
    pub fn open(server_pid: &str, server_start: &str, socket_path: &Path) -> Result<Store> {
        let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !ok(server_pid) || !ok(server_start) {
            return Err(Error::new(
                Kind::Tmux,
                "tmux did not say which server it is",
            ));
        }
        let base = base_dir(socket_path)?;
        private_dir(&base)?;
        let dir = base.join(format!("server-{server_pid}-{server_start}"));
        if !dir.exists() {
            prune_gone_servers(&base);
        }
        private_dir(&dir)?;
        Ok(Store { dir })
    }

    #[cfg(test)]
    fn at(dir: PathBuf) -> Result<Store> {
        private_dir(&dir)?;
        Ok(Store { dir })
    }

    fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let tmp = self.dir.join(format!(".{name}.{}", std::process::id()));
        let data = serde_json::to_vec(value).expect("serialisable");
        write_new_private(&tmp, &data)?;
        fs::rename(&tmp, self.dir.join(name))
            .map_err(|e| Error::io(&format!("cannot write {name}"), e))
    }

    fn read_json<T: for<'de> Deserialize<'de>>(&self, path: &Path) -> Option<T> {
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .ok()?;
        serde_json::from_reader(f).ok()
    }

    pub fn add(&self, w: &WatchRecord) -> Result<()> {
        self.write_json(&format!("watch-{}.json", w.id), w)
    }

    pub fn remove(&self, id: &str) {
        let _ = fs::remove_file(self.dir.join(format!("watch-{id}.json")));
    }

    /// Running watches (not hook listeners), oldest first.
    pub fn watches(&self) -> Vec<WatchRecord> {
        self.records()
            .into_iter()
            .filter(|w| w.kind != "listener")
            .collect()
    }

    /// Running hook listeners (`label` is the channel).
    pub fn listeners(&self) -> Vec<WatchRecord> {
        self.records()
            .into_iter()
            .filter(|w| w.kind == "listener")
            .collect()
    }

    /// Every live record; records of processes that are gone (killed with
    /// SIGKILL, say) are removed on the way.
    fn records(&self) -> Vec<WatchRecord> {
        let mut out: Vec<WatchRecord> = Vec::new();
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return out;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("watch-") && name.ends_with(".json")) {
                continue;
            }
            match self.read_json::<WatchRecord>(&e.path()) {
                Some(w) if process_is_watch(w.pid) => out.push(w),
                _ => {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        out.sort_by(|a, b| (a.started, &a.id).cmp(&(b.started, &b.id)));
        out
    }

    pub fn set_last(&self, r: &LastResult) -> Result<()> {
        self.write_json("last.json", r)
    }

    pub fn last(&self) -> Option<LastResult> {
        self.read_json(&self.dir.join("last.json"))
    }

    /// The last result of one channel hook.
    pub fn set_hook_last(&self, channel: &str, r: &LastResult) -> Result<()> {
        self.write_json(&format!("hook-{}.json", hex(channel)), r)
    }

    pub fn hook_last(&self, channel: &str) -> Option<LastResult> {
        self.read_json(&self.dir.join(format!("hook-{}.json", hex(channel))))
    }

    /// Take the lock that makes one listener per channel: held for the
    /// process's life (released by the kernel when it ends). None when
    /// another process holds it.
    pub fn listener_lock(&self, channel: &str) -> Option<fs::File> {
        let path = self.dir.join(format!("listener-{}.lock", hex(channel)));
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .ok()?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        (r == 0).then_some(f)
    }

    /// Where the shell leaves the exit status of the command `run` typed
    /// with id `id` (the wrapper writes it, beside the end mark in the
    /// stream, for a wait that can no longer read the stream).
    pub fn run_status_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("run-{id}.status"))
    }

    /// Write `text` as the script `run` has the shell read, named `name`
    /// (which starts with `run-`, so that old ones are swept with the
    /// status files): readable by its owner only, as the whole store is.
    pub fn write_run_script(&self, name: &str, text: &str) -> Result<PathBuf> {
        let path = self.dir.join(name);
        write_new_private(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Remove the script [`Store::write_run_script`] wrote.
    pub fn remove_run_script(&self, name: &str) {
        let _ = fs::remove_file(self.dir.join(name));
    }

    /// The status a run's command left (see [`Store::run_status_path`]),
    /// taken: the file is removed. None: not there (yet), or not a number.
    pub fn take_run_status(&self, id: &str) -> Option<i32> {
        let path = self.run_status_path(id);
        // The shell creates the file, then writes the number: an empty
        // file is one being written (taken later, or the end mark comes).
        let status = fs::read_to_string(&path).ok()?.trim().parse().ok()?;
        let _ = fs::remove_file(&path);
        Some(status)
    }

    /// Drop status files nobody took (their run ended long ago, seen in
    /// the stream) and scripts a shell read long ago: they are a few bytes
    /// each, but a long-lived server would gather them.
    pub fn sweep_run_statuses(&self, older_than: std::time::Duration) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let old = e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > older_than);
            if name.starts_with("run-") && old {
                let _ = fs::remove_file(e.path());
            }
        }
    }

    pub fn clear_last(&self) {
        let _ = fs::remove_file(self.dir.join("last.json"));
    }
}

/// Hex of a name's bytes, for option and file names that must not hold
/// the `.` and `:` channel names may.
pub fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Is `pid` a live `tmux-wait` process of ours (not a recycled pid)?
pub fn process_is_watch(pid: u32) -> bool {
    let Ok(pid_i) = i32::try_from(pid) else {
        return false;
    };
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid_i), None).is_err() {
        return false;
    }
    match fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => cmd
            .split(|&b| b == 0)
            .any(|a| a == b"watch" || a == b"listen" || a == b"follow-run"),
        // No /proc (not Linux): trust the signal check.
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// SIGTERM a watch or listener of ours (each cleans up after itself);
/// false when `pid` is not one (gone, or a recycled pid).
pub fn terminate(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    process_is_watch(pid)
        && nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(raw),
            nix::sys::signal::Signal::SIGTERM,
        )
        .is_ok()
}

/// A short id for a new watch: unique per server for practical purposes.
/// 64 random bits as hex, for ids nobody may guess (a program in a pane
/// must not be able to forge the end of a command typed by `run`).
pub fn random_id() -> String {
    let mut b = [0u8; 8];
    let read = fs::File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut b)
    });
    if read.is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b = ((t as u64) ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn new_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mix = (t as u64) ^ (u64::from(std::process::id()) << 20);
    format!("{:06x}", mix & 0xff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_directories_of_gone_servers_are_pruned() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        // pid_max is at most 2^22 on Linux: this pid cannot run.
        let gone = base.join("server-99999999-1");
        let gone_locks = base.join("server-99999997-1");
        let gone_with_records = base.join("server-99999998-1");
        let alive = base.join(format!("server-{}-1", std::process::id()));
        for d in [&gone, &gone_locks, &gone_with_records, &alive] {
            fs::create_dir(d).unwrap();
        }
        fs::write(gone_locks.join("listener-61.lock"), "").unwrap();
        fs::write(gone_locks.join("attention.log"), "{}\n").unwrap();
        fs::write(gone_with_records.join("watch-1.json"), "{}").unwrap();
        fs::write(gone_with_records.join("listener-61.lock"), "").unwrap();
        prune_gone_servers(base);
        assert!(!gone.exists());
        assert!(!gone_locks.exists());
        assert!(gone_with_records.exists());
        assert!(alive.exists());
    }

    #[test]
    fn records_round_trip_and_stale_ones_go() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::at(tmp.path().join("s")).unwrap();
        let mode = fs::metadata(tmp.path().join("s"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let w = WatchRecord {
            id: "abc".into(),
            pid: 999_999_999,
            pane_id: "%1".into(),
            kind: "text".into(),
            label: "x".into(),
            started: 1,
            timeout_seconds: 1.0,
            channel: "tmux-wait-done-abc".into(),
        };
        store.add(&w).unwrap();
        let f = tmp.path().join("s/watch-abc.json");
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // The pid is not a live watch: the record is dropped.
        assert!(store.watches().is_empty());
        assert!(!f.exists());
        let r = LastResult {
            id: "abc".into(),
            pane_id: "%1".into(),
            label: "x".into(),
            outcome: crate::report::WatchOutcome::Text(crate::report::Outcome::Matched),
            ok: true,
            elapsed_seconds: 1.5,
            finished: 2,
        };
        store.set_last(&r).unwrap();
        assert_eq!(store.last(), Some(r));
    }

    #[test]
    fn a_status_file_being_written_is_not_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::at(tmp.path().join("s")).unwrap();
        let path = store.run_status_path("ab12");
        assert_eq!(store.take_run_status("ab12"), None);
        // Created by the shell's redirection, the number not written yet.
        std::fs::write(&path, "").unwrap();
        assert_eq!(store.take_run_status("ab12"), None);
        assert!(path.exists(), "an empty status file is left for the shell");
        std::fs::write(&path, "6").unwrap();
        assert_eq!(store.take_run_status("ab12"), Some(6));
        assert!(!path.exists());
    }

    #[test]
    fn refuses_a_planted_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        fs::create_dir(&target).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(Store::at(link).is_err());
    }

    #[test]
    fn ids_are_short_hex() {
        let id = new_id();
        assert_eq!(id.len(), 6);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
