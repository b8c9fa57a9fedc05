//! `--save-to`: every line a command waits sees, appended to a file.

use super::*;

/// Appends output lines to `--save-to`, remembering the first failure
/// instead of ending the wait.
pub(super) struct Saver {
    file: Option<File>,
    path: PathBuf,
    pub(super) error: Option<String>,
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
        })
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
