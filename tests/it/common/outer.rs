//! A person's terminal: a client of the server under test, running inside
//! a pane of an outer tmux server. Keys go in with the outer server's
//! `send-keys`; what the person sees comes back with its `capture-pane`.

use super::{DEADLINE, TestServer, unique};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct OuterClient {
    socket: PathBuf,
    dir: tempfile::TempDir,
    /// The inner client's name, as the server under test knows it.
    pub name: String,
}

impl OuterClient {
    /// Attach a client of `inner` to `session`, in an outer tmux's pane of
    /// `width` x `height`, and wait until `inner` lists it.
    pub fn attach(inner: &TestServer, session: &str) -> OuterClient {
        let dir = tempfile::Builder::new()
            .prefix("two")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("outer");
        let conf = dir.path().join("outer.conf");
        std::fs::write(&conf, "set -g status off\nset -g exit-empty on\n").unwrap();
        let before: Vec<String> = inner
            .tmux(&["list-clients", "-F", "#{client_name}"])
            .lines()
            .map(str::to_owned)
            .collect();
        let attach = format!(
            "exec env -u TMUX -u TMUX_PANE TERM=xterm-256color {} -S '{}' attach-session -t '{}'",
            super::tmux_dir().join("tmux").display(),
            inner.socket.display(),
            session
        );
        let st = Command::new("tmux")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-x", "100", "-y", "30", &attach])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("outer tmux");
        assert!(st.success(), "the outer tmux did not start");
        let mut outer = OuterClient {
            socket,
            dir,
            name: String::new(),
        };
        let end = Instant::now() + DEADLINE;
        loop {
            let now: Vec<String> = inner
                .tmux(&["list-clients", "-F", "#{client_name}"])
                .lines()
                .map(str::to_owned)
                .collect();
            if let Some(n) = now.into_iter().find(|n| !before.contains(n)) {
                outer.name = n;
                break;
            }
            assert!(
                Instant::now() < end,
                "the person's client did not attach; outer screen:\n{}",
                outer.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        outer
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .arg("-S")
            .arg(&self.socket);
        c
    }

    /// Press keys in the person's terminal (as `send-keys` names them).
    pub fn keys(&self, keys: &[&str]) {
        let st = self
            .tmux()
            .args(["send-keys", "-t", "%0"])
            .args(keys)
            .status()
            .expect("outer send-keys");
        assert!(st.success());
    }

    /// Press the prefix, then `key` once `inner` has taken the prefix: a
    /// key that comes within `assume-paste-time` (1 ms) of the one before
    /// is taken as pasted text, so the two sent at once would type the
    /// key into the pane whenever a loaded server reads them together.
    pub fn prefixed(&self, inner: &TestServer, key: &str) {
        self.keys(&["C-b"]);
        // (list-clients: tmux 3.2a answers `display-message -p -c` with
        // its usage.)
        let taken = format!("{} 1", self.name);
        inner.wait_until(&inner.pane, "the prefix to be taken", || {
            inner
                .tmux(&["list-clients", "-F", "#{client_name} #{client_prefix}"])
                .lines()
                .any(|l| l.trim() == taken)
        });
        self.keys(&[key]);
    }

    /// What the person's terminal shows.
    pub fn screen(&self) -> String {
        self.tmux()
            .args(["capture-pane", "-p", "-t", "%0"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Wait until the person's terminal shows `needle`.
    pub fn wait_for_screen(&self, needle: &str) {
        let end = Instant::now() + DEADLINE;
        while !self.screen().contains(needle) {
            assert!(
                Instant::now() < end,
                "the person's terminal never showed {needle:?}; it shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A key the person presses that changes nothing: it makes the
    /// client's last activity now (typed, then erased, at the shell).
    pub fn press_a_key(&self, inner: &TestServer) {
        let mark = unique("k").replace('-', "");
        self.keys(&["-l", &mark]);
        inner.wait_until(&inner.pane, "the typed key", || {
            inner.capture(&inner.pane).contains(&mark)
        });
        self.keys(&["C-u"]);
    }
}

impl Drop for OuterClient {
    fn drop(&mut self) {
        let _ = self
            .tmux()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_file(&self.socket);
        let _ = self.dir.path();
    }
}
