//! A settings file on disk, as people keep them: a symlink into a
//! dotfiles folder (GNU stow, chezmoi, home-manager) is followed and
//! kept, its target edited; a read-only target (home-manager's
//! `/nix/store`) is left alone; a write never shows a half-written file,
//! nor the settings (API keys among them) to anyone their mode does not.
//!
//! A write goes to a temporary file beside the target, created with the
//! target's mode from the start and given its owner before a byte is
//! written, synced, renamed over the target, and the directory synced.
//! The temporary file's name (`.NAME.tmux-wait-PID.tmp`) says whose it
//! is: one whose process is gone (killed mid-write) is removed by the
//! next write.

use crate::error::{Error, Kind, Result};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// As many links as Linux follows in one path (`MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// The file `path` names at the end of its chain of symlinks (relative
/// ones from the link's own directory), which may not exist yet; its
/// directory canonical where it exists.
pub fn resolve(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p)
                    .map_err(|e| Error::io(&format!("cannot read the link {}", p.display()), e))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(_) => return Ok(canonical_dir(p)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(canonical_dir(p)),
            Err(e) => return Err(Error::io(&format!("cannot read {}", p.display()), e)),
        }
    }
    Err(Error::new(
        Kind::Usage,
        format!("{}: too many levels of symbolic links", path.display()),
    ))
}

fn canonical_dir(p: PathBuf) -> PathBuf {
    match (p.parent().map(fs::canonicalize), p.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => p,
    }
}

/// The file's text; `None` where there is no file.
pub fn read(path: &Path) -> Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::new(
                Kind::Usage,
                format!("{} is not UTF-8 text; left as it is", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&format!("cannot read {}", path.display()), e)),
    }
}

/// Why `target` may not be written, if it may not: it (or its
/// directory, where the new file is made) has no write permission at
/// all, or this user may not write it, or it is on a read-only file
/// system. Root could still write a mode 0444 file; it is read-only all
/// the same.
pub fn read_only(target: &Path) -> Option<String> {
    let check = |p: &Path, what: &str| -> Option<String> {
        let meta = fs::metadata(p).ok()?;
        if meta.mode() & 0o222 == 0 {
            return Some(format!(
                "{what} has no write permission, mode {:04o}",
                meta.mode() & 0o7777
            ));
        }
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: access reads a NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            let e = std::io::Error::last_os_error();
            return Some(match e.raw_os_error() {
                Some(libc::EROFS) => format!("{what} is on a read-only file system"),
                Some(libc::EACCES | libc::EPERM) => {
                    format!("{what} may not be written by this user")
                }
                _ => format!("{what}: {e}"),
            });
        }
        None
    };
    let dir = target.parent().unwrap_or(Path::new("/"));
    check(target, "it").or_else(|| check(dir, &format!("its directory {}", dir.display())))
}

/// The name of this process's temporary file for `name`.
fn tmp_name(name: &str, pid: u32) -> String {
    format!(".{name}.tmux-wait-{pid}.tmp")
}

/// The process id in the name of a temporary file of ours for `name`
/// (also `STEM.tmux-wait-PID.tmp`, as earlier releases named them).
fn tmp_pid(file: &str, name: &str) -> Option<u32> {
    let stem = Path::new(name).file_stem()?.to_str()?;
    let pid = file
        .strip_prefix(&format!(".{name}.tmux-wait-"))
        .or_else(|| file.strip_prefix(&format!("{stem}.tmux-wait-")))?
        .strip_suffix(".tmp")?;
    pid.bytes()
        .all(|c| c.is_ascii_digit())
        .then(|| pid.parse().ok())
        .flatten()
}

/// No process `pid` runs (on this host).
fn gone(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(p, 0) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Remove the temporary files for `name` in `dir` that a killed write
/// left: ours by their name, regular files, their process gone.
pub fn sweep(dir: &Path, name: &str) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file.to_str().and_then(|f| tmp_pid(f, name)) else {
            continue;
        };
        let regular = e.file_type().is_ok_and(|t| t.is_file());
        if regular && pid != std::process::id() && gone(pid) && fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Removes the temporary file unless it was renamed.
struct Tmp(Option<PathBuf>);

impl Drop for Tmp {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Put `text` in place of `target` at once. An existing target's mode
/// and owner are kept; a new file gets `new_mode` (under the umask).
pub fn write(target: &Path, text: &str, new_mode: u32) -> Result<()> {
    let err = |e| Error::io(&format!("cannot write {}", target.display()), e);
    let (Some(dir), Some(name)) = (target.parent(), target.file_name().and_then(|n| n.to_str()))
    else {
        return Err(Error::new(
            Kind::Usage,
            format!("{}: not a file name", target.display()),
        ));
    };
    fs::create_dir_all(dir).map_err(err)?;
    sweep(dir, name);
    let old = fs::metadata(target).ok();
    let mode = old.as_ref().map_or(new_mode, |m| m.mode() & 0o7777);
    let path = dir.join(tmp_name(name, std::process::id()));
    // One of a process that had our pid before us.
    let _ = fs::remove_file(&path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(err)?;
    let mut tmp = Tmp(Some(path.clone()));
    if let Some(old) = &old {
        // The umask only takes bits away: the file was never more open
        // than the target. Now exactly its mode, and its owner.
        let exact = fs::Permissions::from_mode(mode);
        f.set_permissions(exact.clone()).map_err(err)?;
        let now = f.metadata().map_err(err)?;
        if (now.uid(), now.gid()) != (old.uid(), old.gid()) {
            std::os::unix::fs::fchown(&f, Some(old.uid()), Some(old.gid())).map_err(|e| {
                Error::io(
                    &format!(
                        "cannot keep the owner of {} (uid {}, gid {}); run as that user; left as it is",
                        target.display(),
                        old.uid(),
                        old.gid()
                    ),
                    e,
                )
            })?;
            // (A change of owner clears the set-id bits.)
            f.set_permissions(exact).map_err(err)?;
        }
    }
    f.write_all(text.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)?;
    drop(f);
    fs::rename(&path, target).map_err(err)?;
    tmp.0 = None;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Where tmux-wait keeps, for each settings file, what install found at
/// the places it filled (`edit::Before`): `$XDG_STATE_HOME/tmux-wait/`,
/// else `~/.local/state/tmux-wait/`.
fn record_file() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("tmux-wait/agents-settings.json"))
}

type Records = serde_json::Map<String, serde_json::Value>;

fn records(file: &Path) -> Records {
    fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// What install found in `target`, as recorded (empty: nothing known).
pub fn recorded(target: &Path) -> super::edit::Before {
    let Some(file) = record_file() else {
        return Default::default();
    };
    records(&file)
        .get(&*target.to_string_lossy())
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Keep `before` for `target` (beside what was kept already), or forget
/// `target` (`None`).
pub fn record(target: &Path, before: Option<&super::edit::Before>) -> Result<()> {
    let Some(file) = record_file() else {
        return Err(Error::new(Kind::Usage, "HOME is not set"));
    };
    let mut all = records(&file);
    let key = target.to_string_lossy().into_owned();
    match before {
        Some(b) => {
            let entry = all
                .entry(key)
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
            if let (Some(map), Ok(serde_json::Value::Object(new))) =
                (entry.as_object_mut(), serde_json::to_value(b))
            {
                map.extend(new);
            }
        }
        None if all.remove(&key).is_none() => return Ok(()),
        None => {}
    }
    if let Some(dir) = file.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(&format!("cannot make {}", dir.display()), e))?;
    }
    let text = serde_json::to_string_pretty(&all).unwrap_or_default() + "\n";
    write(&file, &text, 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_temporary_files_are_ours() {
        assert_eq!(
            tmp_pid(".settings.json.tmux-wait-42.tmp", "settings.json"),
            Some(42)
        );
        assert_eq!(
            tmp_pid("settings.tmux-wait-42.tmp", "settings.json"),
            Some(42)
        );
        assert_eq!(tmp_pid("hooks.tmux-wait-7.tmp", "hooks.json"), Some(7));
        for other in [
            ".settings.json.tmux-wait-42.tmp.bak",
            ".settings.json.tmux-wait-x.tmp",
            ".settings.json.tmux-wait-+4.tmp",
            ".hooks.json.tmux-wait-42.tmp",
            "settings.json",
            "settings.tmux-wait-.tmp",
        ] {
            assert_eq!(tmp_pid(other, "settings.json"), None, "{other}");
        }
        assert_eq!(
            tmp_name("settings.json", 42),
            ".settings.json.tmux-wait-42.tmp"
        );
    }

    #[test]
    fn a_chain_of_links_is_followed_to_its_end() {
        let d = tempfile::tempdir().unwrap();
        let dots = d.path().join("dotfiles/claude");
        fs::create_dir_all(&dots).unwrap();
        fs::create_dir_all(d.path().join("home/.claude")).unwrap();
        fs::write(dots.join("settings.json"), "{}").unwrap();
        // home/.claude/settings.json -> ../mid (relative) -> dotfiles/claude/settings.json (absolute)
        std::os::unix::fs::symlink(dots.join("settings.json"), d.path().join("home/mid")).unwrap();
        std::os::unix::fs::symlink("../mid", d.path().join("home/.claude/settings.json")).unwrap();
        let got = resolve(&d.path().join("home/.claude/settings.json")).unwrap();
        assert_eq!(got, fs::canonicalize(dots.join("settings.json")).unwrap());
        // A dangling link names the file to make.
        std::os::unix::fs::symlink("nowhere/x.json", d.path().join("home/dangling")).unwrap();
        let got = resolve(&d.path().join("home/dangling")).unwrap();
        assert!(got.ends_with("home/nowhere/x.json"), "{got:?}");
        // A loop is an error, not a hang.
        std::os::unix::fs::symlink("loop", d.path().join("home/loop")).unwrap();
        assert!(resolve(&d.path().join("home/loop")).is_err());
    }
}
