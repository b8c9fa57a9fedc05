//! Who runs a tmux command: the in-process client (`native`) by default,
//! a `tmux` process when it gives way or when asked (`TMUX_WAIT_NATIVE`).
//! Both end in the same `Finished`, read the same way by `Socket::run`.

use super::{Socket, native};
use crate::error::{Error, Kind, Result};
use std::ffi::OsString;
use std::process::Stdio;

impl Socket {
    /// Run one tmux client with `args` exactly as given (see
    /// `literal_arg`) and `input` on its standard input, by `runner`.
    pub fn exec(&self, args: &[OsString], input: Option<&str>, runner: Runner) -> Result<Finished> {
        if runner == Runner::Process || native::gave_way(self) {
            return self.exec_process(args, input);
        }
        let bound = native::bound_for(args);
        match native::run(self, args, input.map(str::as_bytes), bound) {
            native::Attempt::Finished(f) => Ok(f),
            native::Attempt::Failed(e) => Err(e),
            native::Attempt::NotRun(why) if runner == Runner::NativeOnly => Err(Error::new(
                Kind::Tmux,
                format!("the native tmux client did not run the command: {why}"),
            )),
            native::Attempt::NotRun(_) => self.exec_process(args, input),
            native::Attempt::Unreachable(why) => {
                let out = self.exec_process(args, input)?;
                if runner == Runner::NativeOnly && out.success {
                    return Err(Error::new(
                        Kind::Tmux,
                        format!(
                            "the native tmux client did not reach a server tmux reached: {why}"
                        ),
                    ));
                }
                Ok(out)
            }
        }
    }

    /// Run one `tmux` process.
    fn exec_process(&self, args: &[OsString], input: Option<&str>) -> Result<Finished> {
        use std::io::Write;
        let mut cmd = self.command();
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(|e| Error::io("cannot run tmux", e))?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            let _ = stdin.write_all(text.as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io("cannot run tmux", e))?;
        Ok(Finished {
            success: out.status.success(),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }
}

/// What a tmux client ended with, whichever runner ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Exit status 0.
    pub success: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Which client runs a tmux command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// The in-process client ([`native`]); a `tmux` process when it gives
    /// way (the server cannot have run the command). The default.
    Native,
    /// A `tmux` process per command (`TMUX_WAIT_NATIVE=0`).
    Process,
    /// The in-process client and nothing else: where it would give way
    /// to a process it fails, except where no server answers (a process
    /// says why, and must fail too). `TMUX_WAIT_NATIVE=only`, for tests.
    NativeOnly,
}

impl Runner {
    /// From `TMUX_WAIT_NATIVE` (read once): `0` the process, `only` the
    /// native client alone, anything else the default.
    pub fn configured() -> Runner {
        static R: std::sync::OnceLock<Runner> = std::sync::OnceLock::new();
        *R.get_or_init(|| match std::env::var("TMUX_WAIT_NATIVE").as_deref() {
            Ok("0") => Runner::Process,
            Ok("only") => Runner::NativeOnly,
            _ => Runner::Native,
        })
    }
}
