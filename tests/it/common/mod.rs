//! Test support: a private tmux server per test and helpers that wait with
//! deadlines and print the pane when something does not happen.
//!
//! Each `TestServer` runs on a socket in its own temporary directory with a
//! known config, with `TMUX`/`TMUX_PANE` removed from every command, and is
//! killed (and its directory removed) on drop, also when the test panics.

pub mod outer;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_tmux-wait");

/// Generous bound for anything a test waits on; tests that pass do not wait
/// for it, it only keeps a broken test from hanging.
pub const DEADLINE: Duration = Duration::from_secs(20);

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// PATH with the directory of the binary under test first, so the plugin's
/// scripts, run by the server, find this build of tmux-wait.
pub fn path_with_helper() -> std::ffi::OsString {
    let dir = Path::new(BIN).parent().expect("binary dir").to_path_buf();
    let mut paths = vec![dir];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(paths).expect("PATH")
}

/// The directory of the `tmux` the tests run (the first on PATH), for a
/// PATH a test builds itself: a client of another version cannot talk to
/// the server ("server exited unexpectedly").
pub fn tmux_dir() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| d.join("tmux").is_file()))
        .unwrap_or_else(|| PathBuf::from("/usr/bin"))
}

pub fn unique(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{n}-{t}", std::process::id())
}

/// Turns at the machine: a test that loads it with hundreds of processes
/// (a pane and a wait each) runs alone ([`alone`]); every other test takes
/// a shared turn with its first server. On two cores, such a test beside
/// one that watches a shell in real time tests the scheduler, not
/// tmux-wait: it stretches the other's every look at the kernel by tens
/// of milliseconds at a time.
static TURNS: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    /// This test thread's shared turn (held until the test's thread ends),
    /// or that it runs alone.
    static TURN: std::cell::RefCell<Turn> = const { std::cell::RefCell::new(Turn::None) };
}

enum Turn {
    None,
    Shared(#[allow(dead_code)] std::sync::RwLockReadGuard<'static, ()>),
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Alone,
}

/// Run the calling test alone: wait for the tests running beside it to
/// end, and keep the others waiting until the guard drops. (The Linux-only
/// descriptor tests and the agents kit need it. `scripts/test` and
/// `scripts/test-matrix` run them in a pass of their own after the others,
/// `TW_ALONE_TESTS` in `scripts/lib/deps.sh`, so that no thread idles
/// while the others drain; a test that calls it must be named there.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    let guard = TURNS.write().unwrap_or_else(|e| e.into_inner());
    TURN.with(|t| *t.borrow_mut() = Turn::Alone);
    guard
}

/// Take a shared turn for the test running on this thread (libtest runs
/// each test on a thread named after it; threads a test starts itself
/// have no name and run in their test's turn).
fn shared_turn() {
    if std::thread::current().name().is_none_or(|n| n == "main") {
        return;
    }
    TURN.with(|t| {
        let mut t = t.borrow_mut();
        if matches!(*t, Turn::None) {
            *t = Turn::Shared(TURNS.read().unwrap_or_else(|e| e.into_inner()));
        }
    });
}

pub struct TestServer {
    dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub pane: String,
    server_pid: Option<u32>,
}

pub struct Options {
    pub width: u32,
    pub height: u32,
    pub history_limit: u32,
    pub extra_config: String,
    /// Environment variables of the server (and so of everything it
    /// starts).
    pub env: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            width: 100,
            height: 30,
            history_limit: 2000,
            extra_config: String::new(),
            env: Vec::new(),
        }
    }
}

impl TestServer {
    pub fn new() -> Self {
        Self::with(Options::default())
    }

    pub fn with(o: Options) -> Self {
        shared_turn();
        let dir = tempfile::Builder::new()
            .prefix("tw")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("s");
        let config = dir.path().join("tmux.conf");
        let rc = dir.path().join("bashrc");
        std::fs::write(&rc, "PS1='$ '\nunset PROMPT_COMMAND\nHISTFILE=/dev/null\n")
            .expect("write rc");
        std::fs::write(
            &config,
            format!(
                "set -g default-command 'exec bash --noprofile --rcfile {}'\n\
                 set -g history-limit {}\n\
                 set -g status off\n\
                 set -g exit-empty on\n\
                 {}\n",
                rc.display(),
                o.history_limit,
                o.extra_config
            ),
        )
        .expect("write config");
        let mut server = TestServer {
            dir,
            socket,
            pane: String::new(),
            server_pid: None,
        };
        let mut start = server.tmux_cmd();
        if std::env::var_os("TW_TMUX_VERBOSE").is_some() {
            start.arg("-vv");
        }
        let out = start
            .arg("-f")
            .arg(&config)
            .args(["new-session", "-d", "-s", "main", "-x"])
            .arg(o.width.to_string())
            .arg("-y")
            .arg(o.height.to_string())
            .args(["-P", "-F", "#{pane_id}"])
            .env("PATH", path_with_helper())
            .env("TMPDIR", server.dir.path())
            .env_remove("XDG_RUNTIME_DIR")
            .envs(o.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("start tmux");
        assert!(out.status.success(), "tmux new-session failed: {out:?}");
        server.pane = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        server.server_pid = server
            .tmux(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .ok();
        server.wait_for_prompt(&server.pane.clone());
        server
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A `tmux` command for this server.
    pub fn tmux_cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c.env_remove("TMUX").env_remove("TMUX_PANE");
        c.stdin(Stdio::null());
        c
    }

    /// Run a tmux command; panics (with its stderr) if it fails.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = self.tmux_cmd().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Kill the server with SIGKILL (no clean shutdown).
    pub fn kill_server_hard(&self) {
        let pid = self.tmux(&["display-message", "-p", "#{pid}"]);
        let st = Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .expect("kill");
        assert!(st.success());
    }

    /// A `tmux-wait` command for this server.
    pub fn tw(&self) -> Command {
        let mut c = Command::new(BIN);
        c.arg("-S").arg(&self.socket);
        c.env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("TMUX_WAIT_MAX_SECONDS")
            .env_remove("XDG_RUNTIME_DIR")
            .env("TMPDIR", self.dir.path());
        c.stdin(Stdio::null());
        c
    }

    /// A new pane (split off the first), its shell at the prompt.
    pub fn split(&self) -> String {
        let p = self
            .tmux(&["split-window", "-d", "-P", "-F", "#{pane_id}"])
            .trim()
            .to_owned();
        self.wait_for_prompt(&p);
        p
    }

    /// Wait until the pane's foreground command is `name`.
    pub fn wait_for_command(&self, pane: &str, name: &str) {
        self.wait_until(pane, &format!("{name} to run"), || {
            self.current_command(pane) == name
        });
    }

    /// Wait until `shell` has handed the pane's terminal to a command.
    pub fn wait_for_command_other_than(&self, pane: &str, shell: &str) {
        self.wait_until(pane, "the command to run", || {
            self.current_command(pane) != shell
        });
    }

    /// The program in the pane's foreground, as tmux names it.
    pub fn current_command(&self, pane: &str) -> String {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_current_command}",
        ])
        .trim()
        .to_owned()
    }

    /// Type a line into a pane and press Enter.
    pub fn type_line(&self, pane: &str, line: &str) {
        self.tmux(&["send-keys", "-t", pane, "-l", line]);
        self.tmux(&["send-keys", "-t", pane, "Enter"]);
    }

    /// The pane's text, wrapped rows joined, each line without trailing
    /// blanks (tmux 3.2's `capture-pane -J` keeps them).
    pub fn capture(&self, pane: &str) -> String {
        self.tmux_cmd()
            .args(["capture-pane", "-p", "-J", "-t", pane])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(|l| format!("{}\n", l.trim_end()))
                    .collect()
            })
            .unwrap_or_else(|e| format!("<capture failed: {e}>"))
    }

    /// Poll until `cond` holds; on the deadline, fail showing the pane.
    pub fn wait_until(&self, pane: &str, what: &str, mut cond: impl FnMut() -> bool) {
        let end = Instant::now() + DEADLINE;
        while !cond() {
            if Instant::now() > end {
                panic!(
                    "timed out waiting for {what}; pane {pane} shows:\n{}",
                    self.capture(pane)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A new window running `shell` (bash, zsh, dash or fish) with `rc` run
    /// from its startup file, at a `$ ` prompt, with no history file.
    /// tmux-wait is on its PATH (a window made from the command line gets
    /// that client's environment, as after installing it).
    pub fn shell_window(&self, shell: &str, rc: &str) -> String {
        let home = self.dir().join(format!("home-{shell}"));
        std::fs::create_dir_all(&home).unwrap();
        let q = |p: &Path| format!("'{}'", p.display());
        let write = |f: &Path, text: String| std::fs::write(f, text).unwrap();
        let command = match shell {
            "bash" => {
                let f = home.join("bashrc");
                write(&f, format!("PS1='$ '\nHISTFILE=/dev/null\n{rc}\n"));
                format!("exec bash --noprofile --rcfile {}", q(&f))
            }
            "zsh" => {
                write(
                    &home.join(".zshrc"),
                    format!("PS1='$ '\nunsetopt prompt_sp\nHISTFILE=/dev/null\n{rc}\n"),
                );
                format!("exec env ZDOTDIR={} zsh", q(&home))
            }
            "dash" => {
                let f = home.join("dashrc");
                write(&f, format!("{rc}\n"));
                format!("exec env PS1='$ ' ENV={} dash", q(&f))
            }
            "fish" => {
                let conf = home.join("fish");
                // Where fish keeps completions made from man pages: there,
                // so that its first start does not make them in a process
                // of its own that outlives the test and writes into the
                // test's directory after it is gone.
                std::fs::create_dir_all(conf.join("generated_completions")).unwrap();
                write(
                    &conf.join("config.fish"),
                    format!("set -g fish_greeting\nfunction fish_prompt; printf '$ '; end\n{rc}\n"),
                );
                format!(
                    "exec env XDG_CONFIG_HOME={h} XDG_DATA_HOME={h} fish",
                    h = q(&home)
                )
            }
            _ => panic!("no test shell {shell}"),
        };
        let out = self
            .tmux_cmd()
            .args(["new-window", "-d", "-c"])
            .arg(self.dir())
            .args(["-P", "-F", "#{pane_id}", &command])
            .env("PATH", path_with_helper())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let pane = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        self.wait_for_prompt(&pane);
        pane
    }

    /// Wait until the pane's shell shows its prompt on the cursor row.
    pub fn wait_for_prompt(&self, pane: &str) {
        let p = pane.to_owned();
        self.wait_until(pane, "the shell prompt", || {
            let x = self
                .tmux_cmd()
                .args(["display-message", "-p", "-t", &p, "#{cursor_x}"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_default();
            x == "2" && self.cursor_row(&p).trim_end() == "$"
        });
    }

    fn cursor_row(&self, pane: &str) -> String {
        let y = self.tmux(&["display-message", "-p", "-t", pane, "#{cursor_y}"]);
        let y = y.trim();
        self.tmux(&["capture-pane", "-p", "-t", pane, "-S", y, "-E", y])
    }

    /// Start `tmux-wait` with `args` and `--ready`, and return once it is
    /// armed (or fail, showing what it printed).
    pub fn start_wait(&self, args: &[&str]) -> Waiter {
        self.start_wait_cmd(self.tw(), args)
    }

    pub fn start_wait_cmd(&self, mut cmd: Command, args: &[&str]) -> Waiter {
        let ready = unique("ready");
        cmd.args(args)
            .args(["--ready", &ready])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("spawn tmux-wait");
        let mut waiter = Waiter {
            child: Some(child),
            pane: self.pane.clone(),
        };
        let mut sync = self
            .tmux_cmd()
            .args(["wait-for", &ready])
            .spawn()
            .expect("spawn wait-for");
        let end = Instant::now() + DEADLINE;
        loop {
            if let Ok(Some(_)) = sync.try_wait() {
                return waiter;
            }
            let exited = waiter
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
            if exited {
                let _ = sync.kill();
                let _ = sync.wait();
                let out = waiter.child.take().unwrap().wait_with_output().unwrap();
                panic!(
                    "tmux-wait exited before it was armed: {:?}\nstdout: {}\nstderr: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            if Instant::now() > end {
                let _ = sync.kill();
                let _ = sync.wait();
                panic!(
                    "tmux-wait was not armed in time; pane shows:\n{}",
                    self.capture(&self.pane)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Pids of processes whose command line mentions this server's socket.
    /// Wait (with the deadline) until no helper or tmux client process of
    /// this server is left.
    pub fn wait_no_helpers(&self) {
        self.wait_until(&self.pane, "no helper processes", || {
            self.processes_using_socket().is_empty()
        });
    }

    /// Whether tmux pipes `pane`'s output (tmux-wait's hub does while a
    /// wait reads the pane).
    pub fn pane_piped(&self, pane: &str) -> bool {
        self.tmux(&["display-message", "-p", "-t", pane, "#{pane_pipe}"])
            .trim()
            == "1"
    }

    /// Whether the plugin's attention watch knows where `pane` stands (its
    /// changes from now on are marked). Its pipe comes before that.
    pub fn pane_watched(&self, pane: &str) -> bool {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{@tmux-wait-attention-watched}",
        ])
        .trim()
            == "1"
    }

    /// Waits connected to this server's hub (every wait that reads a pane
    /// goes through it). The kernel lists each socket the hub accepted
    /// under the hub's path, as it lists the listening one.
    pub fn hub_waiters(&self) -> usize {
        let dir = self
            .socket
            .parent()
            .expect("socket dir")
            .to_string_lossy()
            .into_owned();
        let name = self
            .socket
            .file_name()
            .expect("socket name")
            .to_string_lossy()
            .into_owned();
        let prefix = format!("{dir}/.{name}.tmux-wait-hub");
        let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        let mut per_hub: std::collections::HashMap<&str, usize> = Default::default();
        for line in table.lines() {
            if let Some(path) = line.split_whitespace().nth(7)
                && path == prefix
            {
                *per_hub.entry(path).or_default() += 1;
            }
        }
        per_hub.values().map(|n| n.saturating_sub(1)).sum()
    }

    /// The hub serving this server (one at most, but a test may catch one
    /// leaving as the next starts).
    pub fn hub_pids(&self) -> Vec<String> {
        self.processes_using_socket()
            .iter()
            .filter(|p| p.trim_end().ends_with(" hub"))
            .filter_map(|p| p.split(':').next().map(str::to_owned))
            .collect()
    }

    pub fn processes_using_socket(&self) -> Vec<String> {
        let needle = self.socket.to_string_lossy().into_owned();
        let mut found = Vec::new();
        if let Ok(rd) = std::fs::read_dir("/proc") {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
                    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                    if cmd.contains(&needle) && !cmd.contains(" new-session ") {
                        found.push(format!("{name}: {cmd}"));
                    }
                }
            }
        }
        found
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self
            .tmux_cmd()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // A server that does not go (tmux 3.3a can hang in kill-server with
        // an orphaned control client) must not outlive its test.
        if let Some(pid) = self.server_pid {
            let end = Instant::now() + Duration::from_secs(5);
            while process_alive(pid) && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(10));
            }
            if process_alive(pid) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Alive and not a zombie waiting to be reaped.
pub fn process_alive_pub(pid: u32) -> bool {
    process_alive(pid)
}

fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s.rsplit(')').next().unwrap_or("").split_whitespace().next();
            state.is_some_and(|st| st != "Z" && st != "X")
        })
        .unwrap_or(false)
}

/// A `tmux-wait` running in the background.
pub struct Waiter {
    child: Option<Child>,
    pane: String,
}

#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// The first matched line of a wait that must have found (exit 0).
    pub fn matched_line(&self) -> String {
        assert_eq!(self.code, Some(0), "{} / {}", self.stdout, self.stderr);
        self.json()["matched_lines"][0]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {:?} / stderr {:?}",
                self.stdout, self.stderr
            )
        })
    }
}

impl Waiter {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Wait for it to exit (bounded by `DEADLINE`), showing the pane of
    /// `server` if it does not.
    pub fn finish(mut self, server: &TestServer) -> Finished {
        let mut child = self.child.take().expect("child");
        wait_child(&mut child, || {
            format!(
                "tmux-wait did not end; pane {} shows:\n{}",
                self.pane,
                server.capture(&self.pane)
            )
        });
        finished(child.wait_with_output().expect("output"))
    }
}

/// Wait for `child` to exit, bounded by `DEADLINE`; on the deadline kill
/// it and fail with `why()`.
fn wait_child(child: &mut Child, why: impl FnOnce() -> String) {
    let end = Instant::now() + DEADLINE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return,
            _ if Instant::now() > end => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{}", why());
            }
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn finished(out: Output) -> Finished {
    Finished {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Put a copy of `from` at `to` with `mode`, written by a child process
/// (`install`), never through a descriptor of this process: another test
/// thread that forks meanwhile holds such a descriptor until its child
/// execs, and running the file then fails with "Text file busy".
pub fn install_file(from: &Path, to: &Path, mode: u32) {
    let mut c = Command::new("install");
    c.arg("-m").arg(format!("{mode:o}")).arg(from).arg(to);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "install {from:?} {to:?}: {f:?}");
}

/// A copy of the file `from` at `to`, with its mode (see [`install_file`]).
pub fn copy_program(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(from).expect("stat").permissions().mode();
    install_file(from, to, mode & 0o7777);
}

/// A file at `to` holding `contents`, with `mode` (see [`install_file`]).
pub fn write_program(to: &Path, contents: impl AsRef<[u8]>, mode: u32) {
    let name = to.file_name().expect("a file name").to_string_lossy();
    let staged = to.with_file_name(format!(".{name}.staged"));
    std::fs::write(&staged, contents).expect("write the staged file");
    install_file(&staged, to, mode);
    let _ = std::fs::remove_file(&staged);
}

/// An executable file at `to` holding `contents` (see [`install_file`]).
pub fn write_exe(to: &Path, contents: impl AsRef<[u8]>) {
    write_program(to, contents, 0o755);
}

/// The `lines` of a JSON result (`output`'s), failing with the result.
pub fn json_lines(v: &Value) -> Vec<String> {
    v["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no lines in {v}"))
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

/// Run a command to completion with a deadline.
pub fn run_bounded(mut cmd: Command) -> Finished {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    wait_child(&mut child, || {
        format!("command did not end in time: {cmd:?}")
    });
    finished(child.wait_with_output().expect("output"))
}

/// A real tmux client attached in a pseudo-terminal, to press key bindings.
pub struct PtyClient {
    master: std::fs::File,
    child: Option<Child>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// What the client drew, most recent last (bounded).
    screen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl PtyClient {
    pub fn attach(server: &TestServer) -> PtyClient {
        use std::os::fd::{AsRawFd, OwnedFd};
        let size = nix::pty::Winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
        let slave: OwnedFd = pty.slave;
        // A new client sends its size once attached, and before tmux 3.5
        // that closes any menu or popup already shown on it: a test that
        // opens one (a few commands away, now that they cost no process)
        // must wait for that first resize, which the hook marks.
        let resized = format!("@{}", unique("resized"));
        let hook = "client-resized[77]";
        server.tmux(&["set-hook", "-g", hook, &format!("set -g {resized} 1")]);
        let mut cmd = server.tmux_cmd();
        cmd.args(["attach-session", "-t", "main"])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("tmux attach");
        let master = std::fs::File::from(pty.master);
        let mut drain = master.try_clone().unwrap();
        let _ = master.as_raw_fd();
        let screen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let mut buf = [0u8; 65536];
            while let Ok(n) = drain.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap();
                s.extend_from_slice(&buf[..n]);
                let excess = s.len().saturating_sub(1 << 20);
                s.drain(..excess);
            }
        });
        let client = PtyClient {
            master,
            child: Some(child),
            reader: Some(reader),
            screen,
        };
        server.wait_until(&server.pane, "the client to attach", || {
            !server
                .tmux(&["list-clients", "-F", "#{client_name}"])
                .trim()
                .is_empty()
                && server.tmux(&["show-option", "-gqv", &resized]).trim() == "1"
        });
        server.tmux(&["set-hook", "-gu", hook]);
        server.tmux(&["set-option", "-gu", &resized]);
        client
    }

    /// Wait until the client has drawn `needle` since `forget()`.
    pub fn wait_for_drawn(&self, server: &TestServer, needle: &str) {
        server.wait_until(
            &server.pane,
            &format!("the client to draw {needle:?}"),
            || {
                let s = self.screen.lock().unwrap();
                String::from_utf8_lossy(&s).contains(needle)
            },
        );
    }

    /// Press `keys` (a binding) until the client draws `needle`: right
    /// after attaching, tmux sometimes takes the prefix for part of a
    /// terminal reply. Stray keys that reached the pane are erased.
    pub fn press_until_drawn(&mut self, server: &TestServer, keys: &[u8], needle: &str) {
        for _ in 0..10 {
            self.forget();
            self.keys(keys);
            let end = Instant::now() + Duration::from_secs(2);
            while Instant::now() < end {
                if String::from_utf8_lossy(&self.screen.lock().unwrap()).contains(needle) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            server.tmux(&["send-keys", "-t", &server.pane, "C-u"]);
        }
        panic!(
            "the client never drew {needle:?}; pane shows:\n{}",
            server.capture(&server.pane)
        );
    }

    /// Forget what was drawn so far.
    pub fn forget(&self) {
        self.screen.lock().unwrap().clear();
    }

    /// Type bytes as the person at the terminal would.
    pub fn keys(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.master.write_all(bytes).expect("write to pty");
        self.master.flush().unwrap();
    }
}

impl Drop for PtyClient {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The reader ends when the pty's other side is gone.
        drop(self.reader.take());
    }
}

/// The peak resident memory of a live process, in kB (0 if unreadable).
pub fn peak_memory_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The repository's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Is `program` on PATH?
pub fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Those of `shells` installed here; the others are skipped, saying so.
pub fn installed_shells(shells: &[&'static str]) -> Vec<&'static str> {
    // TW_TEST_SHELLS=dash,zsh: only those (to repeat one shell's case).
    let only = std::env::var("TW_TEST_SHELLS").ok();
    shells
        .iter()
        .copied()
        .filter(|sh| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|x| x == *sh))
        })
        .filter(|sh| {
            let ok = installed(sh);
            if !ok {
                eprintln!("skipped: {sh} is not installed (apt-get install {sh})");
            }
            ok
        })
        .collect()
}

/// Send signal `sig` (a name, `TERM`, or a number, `15`) to `pid`.
pub fn signal(pid: impl std::fmt::Display, sig: &str) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// Wait for `child` (a tmux-wait process) to end within `DEADLINE` and
/// take its output; kill it and fail if it does not.
pub fn done(mut child: Child) -> Finished {
    let end = Instant::now() + DEADLINE;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "tmux-wait did not end within {DEADLINE:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    finished(child.wait_with_output().expect("wait"))
}

impl TestServer {
    /// Start `tmux-wait ARGS` with its output piped (not waiting for it to
    /// be armed; see `start_wait` for that).
    pub fn spawn(&self, args: &[&str]) -> Child {
        let mut c = self.tw();
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().expect("spawn tmux-wait")
    }

    /// An armed `text --json` wait on the server's first pane, with `extra`
    /// arguments.
    pub fn start_text(&self, extra: &[&str]) -> Waiter {
        let mut args = vec!["text", "-t", &self.pane, "--json"];
        args.extend_from_slice(extra);
        self.start_wait(&args)
    }
}

/// Every test module with a test that calls [`alone`] is named in
/// `TW_ALONE_TESTS` (scripts/lib/deps.sh), so that scripts/test and the
/// matrix run it in the pass of its own after the others; and every name
/// there is such a module.
#[test]
fn the_tests_that_run_alone_are_the_ones_the_scripts_name() {
    let deps = std::fs::read_to_string(root().join("scripts/lib/deps.sh")).unwrap();
    let line = deps
        .lines()
        .find_map(|l| l.strip_prefix("TW_ALONE_TESTS=("))
        .and_then(|l| l.strip_suffix(')'))
        .expect("TW_ALONE_TESTS=(...) in scripts/lib/deps.sh");
    let mut named: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    let mut calling = Vec::new();
    for e in std::fs::read_dir(root().join("tests/it"))
        .unwrap()
        .flatten()
    {
        let path = e.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|x| x == "rs")
            && std::fs::read_to_string(&path)
                .unwrap()
                .contains("= alone();")
        {
            calling.push(format!("{stem}::"));
        }
    }
    named.sort();
    calling.sort();
    assert_eq!(
        named, calling,
        "TW_ALONE_TESTS against the modules that call alone()"
    );
}
