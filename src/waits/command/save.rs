//! `--save-to`: every line a command waits sees, appended to a file.

use super::*;

/// Appends output lines to `--save-to`, remembering the first failure
/// instead of ending the wait.
pub(super) struct Saver {
    file: Option<File>,
    path: PathBuf,
    pub(super) error: Option<String>,
    /// This call made the file (`run`: removed again if nothing is typed).
    created: bool,
}

impl Saver {
    pub(super) fn open(path: &PathBuf, truncate: bool) -> Result<Saver> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(truncate)
            .append(!truncate)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::io(&format!("cannot write --save-to {}", path.display()), e))?;
        Ok(Saver {
            file: Some(file),
            path: path.clone(),
            error: None,
            created: false,
        })
    }

    /// For `run`: the file, opened for writing but kept as it is until the
    /// command is typed ([`Saver::begin`]).
    pub(super) fn open_for_run(path: &PathBuf) -> Result<Saver> {
        let existed = std::fs::symlink_metadata(path).is_ok();
        let mut s = Saver::open(path, false)?;
        s.created = !existed;
        Ok(s)
    }

    /// The command was typed: its output replaces what the file held.
    pub(super) fn begin(&mut self) {
        if let Some(f) = &self.file
            && let Err(e) = f.set_len(0)
        {
            self.error = Some(format!("emptying {} failed: {e}", self.path.display()));
            self.file = None;
        }
    }

    /// Nothing was typed: the file stays as it was (none, if there was
    /// none).
    pub(super) fn abandon(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    pub(super) fn write(&mut self, lines: &[String]) {
        let Some(f) = &mut self.file else {
            return;
        };
        let mut buf = Vec::new();
        for l in lines {
            buf.extend_from_slice(l.as_bytes());
            buf.push(b'\n');
        }
        if let Err(e) = f.write_all(&buf).and_then(|_| f.flush()) {
            // Reported in the result (`save_error`); the wait goes on.
            let msg = format!(
                "writing {} failed: {e}; the rest was not saved",
                self.path.display()
            );
            self.error = Some(msg);
            self.file = None;
        }
    }
}
