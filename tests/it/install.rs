//! Getting the helper without a Rust toolchain: the release archives that
//! `scripts/release` makes (signed with a throwaway key), served on
//! 127.0.0.1 by a real HTTP server of the test's, and downloaded, verified
//! and put in place by the plugin, loaded from a fresh clone of the
//! repository into a private server whose PATH has no cargo and no
//! tmux-wait. Then the static binaries themselves: in an empty chroot, and
//! under qemu-user.

mod binaries;
pub(crate) mod http;
pub(crate) mod release;

use crate::common::*;
use http::{Archive, Http};
use release::Release;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const X86: &str = "x86_64-unknown-linux-musl";
const ARM: &str = "aarch64-unknown-linux-musl";

/// A fresh clone of the plugin in a private server, with a release
/// directory served on loopback and a client attached (messages are
/// logged only where a client shows them).
struct Setup {
    s: TestServer,
    plugin: PathBuf,
    serve: PathBuf,
    http: Http,
    home: PathBuf,
    path: String,
    _client: PtyClient,
}

impl Setup {
    fn new() -> Setup {
        let s = TestServer::new();
        let plugin = fresh_clone(s.dir());
        let serve = s.dir().join("serve");
        std::fs::create_dir_all(&serve).unwrap();
        let http = Http::serve(&serve);
        let home = s.dir().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let path = bare_path();
        // What run-shell -b runs with: the server's global environment.
        s.tmux(&["set-environment", "-g", "PATH", &path]);
        s.tmux(&["set-environment", "-g", "HOME", &home.to_string_lossy()]);
        s.tmux(&["set-environment", "-gu", "CARGO_HOME"]);
        s.tmux(&["set-option", "-g", "@tmux-wait-release-url", &http.base()]);
        let _client = PtyClient::attach(&s);
        Setup {
            s,
            plugin,
            serve,
            http,
            home,
            path,
            _client,
        }
    }

    /// Serve `r` (its archive, SHA256SUMS and signature) under vVERSION/,
    /// and trust its key.
    fn publish(&self, r: &Release) {
        publish(&self.serve.join("releases/download"), r);
        self.s.tmux(&[
            "set-option",
            "-g",
            "@tmux-wait-release-signers",
            &r.signers.to_string_lossy(),
        ]);
    }

    fn served(&self, version: &str, file: &str) -> PathBuf {
        self.serve
            .join(format!("releases/download/v{version}"))
            .join(file)
    }

    /// Run the plugin's entry point as TPM does (a process with TMUX
    /// naming the server, PATH and HOME as set up): it returns at once.
    fn load(&self) -> Duration {
        let pid = self.s.tmux(&["display-message", "-p", "#{pid}"]);
        let mut c = Command::new(self.plugin.join("tmux-wait.tmux"));
        c.env(
            "TMUX",
            format!("{},{},0", self.s.socket.display(), pid.trim()),
        )
        .env_remove("TMUX_PANE")
        .env_remove("CARGO_HOME")
        .env("PATH", &self.path)
        .env("HOME", &self.home)
        .stdin(Stdio::null());
        let started = Instant::now();
        let f = run_bounded(c);
        let took = started.elapsed();
        assert_eq!(f.code, Some(0), "{f:?}");
        assert!(f.stdout.is_empty() && f.stderr.is_empty(), "{f:?}");
        took
    }

    /// The plugin's messages so far, oldest first (show-messages lists
    /// the newest first), as the text after "tmux-wait: ".
    fn messages(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .s
            .tmux(&["show-messages"])
            .lines()
            .filter(|l| !l.contains(" command: "))
            .filter_map(|l| l.split_once("tmux-wait: ").map(|(_, m)| m.to_owned()))
            .collect();
        all.reverse();
        all
    }

    fn status(&self) -> String {
        self.s
            .tmux(&["show-option", "-gqv", "@tmux_wait_status"])
            .trim()
            .to_owned()
    }

    /// Wait for a message that contains `needle`, and for the install to
    /// be over: its lock gone and none of its processes left.
    fn settle_on(&self, needle: &str) -> String {
        let mut found = String::new();
        self.wait_for(&format!("a message with {needle:?}"), || {
            match self.messages().into_iter().find(|m| m.contains(needle)) {
                Some(m) => {
                    found = m;
                    true
                }
                None => false,
            }
        });
        self.wait_installs_done();
        assert!(!found.contains(char::is_control), "{found:?}");
        found
    }

    fn wait_installs_done(&self) {
        let lock = self.plugin.join("target/tmux-wait-build/lock");
        self.wait_for("the install to end", || {
            !lock.exists() && installer_processes(&self.plugin).is_empty()
        });
    }

    /// Poll until `cond` holds; on the deadline, fail showing what the
    /// person sees (status, messages), the requests and the installer's
    /// processes.
    fn wait_for(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let end = Instant::now() + DEADLINE;
        while !cond() {
            if Instant::now() > end {
                panic!(
                    "timed out waiting for {what}\nstatus: {:?}\nmessages: {:#?}\nrequests: {:#?}\nprocesses: {:#?}",
                    self.status(),
                    self.messages(),
                    self.http.requests(),
                    installer_processes(&self.plugin)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn installed(&self) -> PathBuf {
        self.plugin.join("bin/tmux-wait")
    }

    /// The state a failed download must leave as it found it: no bin/.
    fn assert_nothing_installed(&self) {
        assert!(
            !self.plugin.join("bin").exists(),
            "bin/ was left: {:?}",
            std::fs::read_dir(self.plugin.join("bin"))
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
    }

    /// What the person sees after a failure, for the record.
    fn report(&self, case: &str) {
        println!(
            "{case}:\n  status: {:?}\n  messages: {:#?}",
            self.status(),
            self.messages()
        );
    }

    /// The archive requests the server saw.
    fn archive_requests(&self) -> usize {
        self.http
            .requests()
            .iter()
            .filter(|r| r.ends_with(".tar.gz"))
            .count()
    }
}

/// Put a release's files where a server of `base` serves them.
pub(crate) fn publish(base: &Path, r: &Release) {
    let dir = base.join(format!("v{}", r.version));
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        r.archive_name(),
        "SHA256SUMS".into(),
        "SHA256SUMS.sig".into(),
    ] {
        std::fs::copy(r.dir.join(&f), dir.join(&f)).unwrap();
    }
}

/// PATH for the plugin: the tests' tmux and the system's directories,
/// which must have neither cargo nor tmux-wait.
fn bare_path() -> String {
    let path = format!("{}:/usr/bin:/bin", tmux_dir().display());
    for tool in ["cargo", "tmux-wait"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            !found.status.success(),
            "{tool} is in {path} ({}): these tests need a PATH without it",
            String::from_utf8_lossy(&found.stdout).trim()
        );
    }
    path
}

/// `git clone` of this repository into `dir/plugin`, with the working
/// tree's version of each tracked file (what a commit of it would hold):
/// no target/, no bin/, nothing untracked.
fn fresh_clone(dir: &Path) -> PathBuf {
    let dest = dir.join("plugin");
    let st = Command::new("git")
        .args(["clone", "-q", "--no-hardlinks"])
        .arg(root())
        .arg(&dest)
        .stdin(Stdio::null())
        .status()
        .expect("git clone");
    assert!(st.success());
    let files = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "-m"])
        .output()
        .unwrap();
    for f in String::from_utf8_lossy(&files.stdout).lines() {
        if root().join(f).is_file() {
            copy_program(&root().join(f), &dest.join(f));
        }
    }
    dest
}

/// The plugin's installer and what it runs (curl, cargo), by the plugin
/// directory on their command line; not the helper's own processes (a
/// watch, the hub) nor the key bindings' script waiting for them.
fn installer_processes(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let helper = format!("{needle}/bin/tmux-wait ");
    let bindings = format!("{needle}/scripts/tmux-wait.sh");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&needle) && !cmd.starts_with(&helper) && !cmd.contains(&bindings) {
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

fn version_of(bin: &Path) -> String {
    let out = Command::new(bin).arg("--version").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn watches(helper: &Path, s: &TestServer) -> usize {
    let mut c = Command::new(helper);
    c.arg("-S")
        .arg(&s.socket)
        .args(["list", "--json"])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    f.json().as_array().map_or(0, Vec::len)
}

/// The x86_64 release archives the other tests serve, of this source and
/// of an older version, are built (once per source: they are kept under
/// `target/install-test/`). `scripts/test` runs this first, alone, so
/// that the builds do not compete with the timed parts of the other tests.
#[test]
fn the_release_archives_build() {
    for r in [release::current(X86), release::old()] {
        assert!(r.dir.join("SHA256SUMS").is_file(), "{}", r.dir.display());
    }
}

/// The aarch64 archive (linked by zig), which
/// `install::binaries::the_aarch64_binary_runs_under_qemu` runs: built
/// apart, as CI builds it while the agents download, and as
/// `scripts/test` builds it only in CI or with `TW_TEST_AARCH64=1`.
#[test]
fn the_aarch64_release_archive_builds() {
    let r = release::current(ARM);
    assert!(r.dir.join("SHA256SUMS").is_file(), "{}", r.dir.display());
}

/// A first install: the status line says the helper is downloading, W
/// pressed meanwhile prompts with a note and its watch starts once the
/// helper is there; the three files are fetched in order, signature first.
#[test]
fn first_install_downloads_the_helper_and_a_watch_runs() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    t.http.set_archive(Archive::Held);
    t.s.tmux(&["set-option", "-g", "status", "on"]);
    t.s.tmux(&["set-option", "-g", "status-right", "[#{tmux_wait_status}]"]);
    let mut client = PtyClient::attach(&t.s);
    t.load();
    assert_eq!(t.status(), "⏳ tmux-wait: downloading the helper…");
    client.wait_for_drawn(&t.s, "downloading the helper…");
    // W, the text, Enter; again (after Escape) should a loaded machine have
    // lost a key: until the prompt has handed the text on.
    let pattern = || {
        t.s.tmux(&["show-option", "-pqv", "-t", &t.s.pane, "@tmux-wait-pattern"])
            .trim()
            .to_owned()
    };
    for _ in 0..5 {
        client.press_until_drawn(&t.s, b"\x02W", "the helper is still downloading");
        client.keys(b"READY-42");
        client.keys(b"\r");
        let end = Instant::now() + Duration::from_secs(3);
        while pattern() != "READY-42" && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        if pattern() == "READY-42" {
            break;
        }
        client.keys(b"\x1b");
    }
    assert_eq!(pattern(), "READY-42");
    // The archive is held back until the watch has said it waits.
    t.wait_for("the waiting watch's message", || {
        t.messages()
            .iter()
            .any(|m| m == "the watch starts once the helper is there")
    });
    t.http.go();
    t.settle_on("helper downloaded (");
    assert_eq!(
        version_of(&t.installed()),
        format!("tmux-wait {}", r.version)
    );
    let base = format!("/releases/download/v{}", r.version);
    assert_eq!(
        t.http.requests(),
        [
            format!("GET {base}/SHA256SUMS.sig"),
            format!("GET {base}/SHA256SUMS"),
            format!("GET {base}/{}", r.archive_name()),
        ]
    );
    assert!(
        t.messages()
            .iter()
            .any(|m| m == "the watch starts once the helper is there"),
        "{:?}",
        t.messages()
    );
    // The watch typed during the download runs, with the new helper.
    t.wait_for("the watch to start", || watches(&t.installed(), &t.s) == 1);
    // (A watch is listed a moment before it follows the pane, and a line
    // printed in between is not seen: printed again until it matches.)
    let mut typed: Option<Instant> = None;
    t.wait_for("the watch to match", || {
        if t.status().starts_with("✓") {
            return true;
        }
        if typed.is_none_or(|at| at.elapsed() > Duration::from_millis(700)) {
            t.s.type_line(&t.s.pane, "echo READY-$((40 + 2))");
            typed = Some(Instant::now());
        }
        false
    });
    assert!(t.status().contains("READY-42"), "{}", t.status());
    // Nothing of the download is left beside the helper.
    let left: Vec<_> = std::fs::read_dir(t.plugin.join("bin"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["tmux-wait"]);
    // And git sees nothing new in the plugin (bin/ is ignored).
    let git = Command::new("git")
        .arg("-C")
        .arg(&t.plugin)
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .unwrap();
    let git = String::from_utf8_lossy(&git.stdout);
    assert!(!git.lines().any(|l| l.starts_with("??")), "{git}");
    drop(client);
}

/// With the helper in place, loading the plugin asks the network for
/// nothing, and says nothing. Also times a first install on loopback.
#[test]
fn loading_with_the_helper_there_makes_no_request() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    let started = Instant::now();
    let load = t.load();
    t.settle_on("ready");
    println!(
        "plugin load {:.0} ms; load to a working helper {:.2} s",
        load.as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64()
    );
    assert!(load < Duration::from_secs(2), "{load:?}");
    let seen = t.http.requests().len();
    let said = t.messages().len();
    for _ in 0..2 {
        t.load();
    }
    t.wait_installs_done();
    assert_eq!(t.http.requests().len(), seen, "{:?}", t.http.requests());
    assert_eq!(t.messages().len(), said, "{:?}", t.messages());
    assert_eq!(t.status(), "");
}

/// An archive that does not match SHA256SUMS is refused: nothing is
/// installed, and one message says why and how to install by hand.
#[test]
fn a_checksum_mismatch_is_refused() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    let archive = t.served(&r.version, &r.archive_name());
    let mut bytes = std::fs::read(&archive).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    t.load();
    let m = t.settle_on("no helper:");
    assert!(
        m.contains("does not match its checksum in SHA256SUMS: refused"),
        "{m}"
    );
    assert!(m.contains("cargo install --locked tmux-wait"), "{m}");
    assert_eq!(t.status(), "✗ tmux-wait: no helper (see show-messages)");
    t.assert_nothing_installed();
    t.report("checksum mismatch");
}

/// A SHA256SUMS that is not the one signed, and a signature by a key that
/// is not trusted: refused before the archive is even fetched.
#[test]
fn a_bad_signature_is_refused() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    let sums = t.served(&r.version, "SHA256SUMS");
    let good = std::fs::read_to_string(&sums).unwrap();
    std::fs::write(&sums, good.replacen(&good[..8], "00000000", 1)).unwrap();
    t.load();
    let m = t.settle_on("no helper:");
    assert!(
        m.contains("the signature of SHA256SUMS does not verify"),
        "{m}"
    );
    t.assert_nothing_installed();
    t.report("SHA256SUMS changed after signing");
    // Signed by another key (the right file, the wrong signer).
    std::fs::write(&sums, &good).unwrap();
    let other = t.s.dir().join("other-key");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .unwrap();
    assert!(st.success());
    let sig = t.served(&r.version, "SHA256SUMS.sig");
    std::fs::remove_file(&sig).unwrap();
    let st = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "tmux-wait-release", "-f"])
        .arg(&other)
        .arg(&sums)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let before = t.messages().len();
    t.load();
    t.wait_for("a second message", || t.messages().len() > before);
    t.wait_installs_done();
    let m = t.messages()[before..].join("\n");
    assert!(
        m.contains("the signature of SHA256SUMS does not verify"),
        "{m}"
    );
    t.assert_nothing_installed();
    assert_eq!(t.archive_requests(), 0, "{:?}", t.http.requests());
    t.report("signed by an untrusted key");
}

/// No release of this version there (404) and no cargo: the message that
/// says how to install by hand.
#[test]
fn not_found_without_cargo_says_how_to_install_by_hand() {
    let t = Setup::new();
    t.load();
    let m = t.settle_on("no helper:");
    assert!(m.contains("answered HTTP 404"), "{m}");
    assert!(m.contains("cargo was not found"), "{m}");
    assert!(m.contains("cargo install --locked tmux-wait"), "{m}");
    t.assert_nothing_installed();
    t.report("404, no cargo");
}

/// No release there, but cargo: it builds instead (a real cargo, offline
/// with an empty registry, so the build fails at once and says why).
#[test]
fn not_found_with_cargo_builds_instead() {
    let t = Setup::new();
    let cargo = Command::new("sh")
        .args(["-c", "command -v cargo"])
        .output()
        .unwrap();
    let cargo = PathBuf::from(String::from_utf8_lossy(&cargo.stdout).trim());
    assert!(cargo.is_file(), "these tests run with cargo on PATH");
    let path = format!("{}:{}", cargo.parent().unwrap().display(), t.path);
    let cargo_home = t.s.dir().join("cargo-home");
    std::fs::create_dir_all(&cargo_home).unwrap();
    let rustup_home = std::env::var("RUSTUP_HOME")
        .unwrap_or_else(|_| format!("{}/.rustup", std::env::var("HOME").unwrap_or_default()));
    for (k, v) in [
        ("PATH", path.as_str()),
        ("CARGO_HOME", &cargo_home.to_string_lossy()),
        ("RUSTUP_HOME", &rustup_home),
        ("CARGO_NET_OFFLINE", "true"),
    ] {
        t.s.tmux(&["set-environment", "-g", k, v]);
    }
    t.load();
    let m = t.settle_on("build failed");
    let all = t.messages();
    let at = |needle: &str| all.iter().position(|m| m.contains(needle));
    let (Some(a), Some(b), Some(c)) = (
        at("cannot download the helper: "),
        at("building the helper (cargo build"),
        at("build failed"),
    ) else {
        panic!("{all:#?}");
    };
    assert!(a < b && b < c, "{all:#?}");
    assert!(all[a].contains("answered HTTP 404"), "{}", all[a]);
    assert!(
        all[a].ends_with("; building it with cargo instead"),
        "{}",
        all[a]
    );
    assert!(m.starts_with("build failed: error"), "{m}");
    assert_eq!(t.status(), "✗ tmux-wait: the helper did not build");
    t.assert_nothing_installed();
    t.report("404, cargo there (offline)");
}

/// A server that accepts and then says nothing: the download gives up
/// after @tmux-wait-download-timeout, and tmux answers all the while.
#[test]
fn a_stalled_download_gives_up_in_time_and_tmux_is_unaffected() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    t.http.set_archive(Archive::Stall);
    t.s.tmux(&["set-option", "-g", "@tmux-wait-download-timeout", "2"]);
    let started = Instant::now();
    assert!(t.load() < Duration::from_secs(2));
    t.wait_for("the archive request", || t.archive_requests() == 1);
    // tmux answers at once while the download hangs.
    for _ in 0..5 {
        let asked = Instant::now();
        t.s.tmux(&["display-message", "-p", "#{version}"]);
        assert!(asked.elapsed() < Duration::from_millis(500));
        std::thread::sleep(Duration::from_millis(100));
    }
    let m = t.settle_on("no helper:");
    let took = started.elapsed();
    assert!(m.contains("no answer within 2 s"), "{m}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    t.assert_nothing_installed();
    t.report("stalled server");
}

/// The connection cut in the middle of the archive: nothing installed.
#[test]
fn a_connection_cut_mid_transfer_installs_nothing() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    t.http.set_archive(Archive::Cut);
    t.load();
    let m = t.settle_on("no helper:");
    assert!(m.contains("the connection was cut before the end"), "{m}");
    t.assert_nothing_installed();
    t.report("connection cut");
}

/// @tmux-wait-download off: not one request, and the message says so.
#[test]
fn downloads_off_make_no_request() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    t.s.tmux(&["set-option", "-g", "@tmux-wait-download", "off"]);
    t.load();
    let m = t.settle_on("no helper:");
    assert!(m.contains("downloads are off (@tmux-wait-download)"), "{m}");
    assert_eq!(t.http.requests(), Vec::<String>::new());
    t.assert_nothing_installed();
    t.report("downloads off");
}

/// An update of the plugin (a new version in Cargo.toml) fetches that
/// version; the old helper stays, byte for byte, until the new one is
/// verified: while it downloads, and when the new one is refused.
#[test]
fn an_upgrade_keeps_the_old_helper_until_the_new_one_is_verified() {
    let old = release::old();
    let new = release::current(X86);
    let t = Setup::new();
    // The plugin as it was: the old version in its Cargo.toml (what an
    // update changes, and all the plugin reads), its helper installed.
    let toml_path = t.plugin.join("Cargo.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    let set_version = |v: &str| {
        let text = toml.replacen(
            &format!("version = \"{}\"", new.version),
            &format!("version = \"{v}\""),
            1,
        );
        std::fs::write(&toml_path, text).unwrap();
    };
    set_version(&old.version);
    t.publish(old);
    t.load();
    t.settle_on("ready");
    assert_eq!(
        version_of(&t.installed()),
        format!("tmux-wait {}", old.version)
    );
    let old_bytes = std::fs::read(t.installed()).unwrap();
    // The update. The new release is signed by a key the plugin does not
    // trust yet (published below): refused, the old helper kept.
    set_version(&new.version);
    t.publish(new);
    t.s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-release-signers",
        &old.signers.to_string_lossy(),
    ]);
    let before = t.messages().len();
    t.load();
    t.wait_for("the refusal", || {
        t.messages()[before..]
            .iter()
            .any(|m| m.contains("does not verify"))
    });
    t.wait_installs_done();
    assert_eq!(std::fs::read(t.installed()).unwrap(), old_bytes);
    t.report("upgrade refused (untrusted signer)");
    // Trusted now, and held back: the old helper is there all through the
    // download, and the new one replaces it at once when verified.
    t.publish(new);
    t.http.set_archive(Archive::Held);
    let asked = t.archive_requests();
    t.load();
    t.wait_for("the archive request", || t.archive_requests() > asked);
    assert_eq!(std::fs::read(t.installed()).unwrap(), old_bytes);
    t.http.go();
    t.settle_on(&format!("helper downloaded ({} for", new.version));
    assert_eq!(
        version_of(&t.installed()),
        format!("tmux-wait {}", new.version)
    );
    let left: Vec<_> = std::fs::read_dir(t.plugin.join("bin"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["tmux-wait"]);
}

/// A tmux-wait of another version on PATH (a package manager's) is left
/// alone; the plugin gets its own, says so once, and a later load neither
/// downloads nor says it again.
#[test]
fn another_version_on_path_is_left_alone_and_said_once() {
    let old = release::old();
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    let pkg = t.s.dir().join("pkg-bin");
    unpack(old, &pkg);
    let on_path = pkg.join(format!(
        "tmux-wait-{}-{}/tmux-wait",
        old.version, old.target
    ));
    let dir = on_path.parent().unwrap().to_path_buf();
    let before = std::fs::read(&on_path).unwrap();
    let path = format!("{}:{}", dir.display(), t.path);
    t.s.tmux(&["set-environment", "-g", "PATH", &path]);
    let t = Setup { path, ..t };
    t.load();
    t.settle_on("ready");
    let said: Vec<String> = t
        .messages()
        .into_iter()
        .filter(|m| m.contains("left alone"))
        .collect();
    assert_eq!(
        said,
        [format!(
            "{} is version {}, not the plugin's {}: left alone; the plugin gets its own",
            on_path.display(),
            old.version,
            r.version
        )]
    );
    assert_eq!(std::fs::read(&on_path).unwrap(), before);
    assert_eq!(
        version_of(&t.installed()),
        format!("tmux-wait {}", r.version)
    );
    let (requests, messages) = (t.http.requests().len(), t.messages().len());
    t.load();
    t.load();
    t.wait_installs_done();
    assert_eq!(t.http.requests().len(), requests);
    assert_eq!(t.messages().len(), messages, "{:?}", t.messages());
}

/// Without @tmux-wait-release-url, the releases of the repository the
/// plugin was cloned from: an https (or http) origin as it is, without a
/// user or .git; an ssh origin as https on the same host.
#[test]
fn the_default_address_is_the_releases_of_the_plugins_origin() {
    let r = release::current(X86);
    let t = Setup::new();
    t.s.tmux(&["set-option", "-gu", "@tmux-wait-release-url"]);
    publish(&t.serve.join("someone/tmux-wait/releases/download"), r);
    t.s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-release-signers",
        &r.signers.to_string_lossy(),
    ]);
    let set_origin = |url: &str| {
        let st = Command::new("git")
            .arg("-C")
            .arg(&t.plugin)
            .args(["remote", "set-url", "origin", url])
            .status()
            .unwrap();
        assert!(st.success());
    };
    set_origin(&format!(
        "http://someone@127.0.0.1:{}/someone/tmux-wait.git",
        t.http.port
    ));
    t.load();
    t.settle_on("ready");
    assert_eq!(
        t.http.requests()[0],
        format!(
            "GET /someone/tmux-wait/releases/download/v{}/SHA256SUMS.sig",
            r.version
        )
    );
    // An ssh origin: https on its host (here nothing answers on 443).
    std::fs::remove_dir_all(t.plugin.join("bin")).unwrap();
    set_origin("git@127.0.0.1:someone/tmux-wait.git");
    let before = t.messages().len();
    t.load();
    t.wait_for("the message", || {
        t.messages()[before..]
            .iter()
            .any(|m| m.contains("no helper:"))
    });
    t.wait_installs_done();
    let m = t.messages()[before..].join("\n");
    assert!(
        m.contains(&format!(
            "https://127.0.0.1/someone/tmux-wait/releases/download/v{}/SHA256SUMS.sig",
            r.version
        )),
        "{m}"
    );
}

/// A full disk while the archive is written: nothing installed, and the
/// message says so. (As root: bin/ is a 64 KiB tmpfs.)
#[test]
fn a_full_disk_installs_nothing() {
    if !is_root() {
        println!("skipped: needs root to mount a small tmpfs");
        return;
    }
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    let bin = t.plugin.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tw-test-full"])
        .arg(&bin)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    if !st.success() {
        println!("skipped: mount -t tmpfs is not allowed here");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(bin.clone());
    t.load();
    let m = t.settle_on("no helper:");
    assert!(m.contains("is the disk full?"), "{m}");
    assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 0);
    t.report("full disk");
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Unpack a release's archive into `dir`.
fn unpack(r: &Release, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(r.dir.join(r.archive_name()))
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success());
}

/// The README's paste block, as written but for where it downloads from
/// and the key it trusts: it refuses a tampered archive and a signature by
/// another key, installing nothing, and installs the release as published
/// into ~/.local/bin.
#[test]
fn the_readme_install_block_installs_only_what_verifies() {
    let r = release::current(X86);
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let at = readme
        .find("tests/it/install.rs runs this block")
        .expect("the README's install block");
    let block = &readme[at..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let ours = "repo=https://github.com/tmux-wait/tmux-wait";
    assert!(
        block.contains(&format!("v={} {ours}\n", r.version)),
        "the README installs another version, or from elsewhere:\n{block}"
    );
    let signers = std::fs::read_to_string(root().join("allowed_signers")).unwrap();
    let key = signers.lines().rfind(|l| !l.starts_with('#')).unwrap();
    assert!(
        block.contains(&format!("echo '{key}' >signers")),
        "the README trusts another key than allowed_signers:\n{block}"
    );
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(
        toml.contains("repository = \"https://github.com/tmux-wait/tmux-wait\""),
        "Cargo.toml's repository is not the README's"
    );
    let dir = tempfile::tempdir().unwrap();
    let serve = dir.path().join("serve");
    publish(&serve.join("releases/download"), r);
    let http = Http::serve(&serve);
    let test_key = std::fs::read_to_string(&r.signers).unwrap();
    let block = block
        .replace(ours, &format!("repo=http://127.0.0.1:{}", http.port))
        .replace(key, test_key.trim());
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = || {
        let mut c = Command::new("bash");
        c.arg("-c")
            .arg(&block)
            .env("PATH", bare_path())
            .env("HOME", &home)
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null());
        run_bounded(c)
    };
    let installed = home.join(".local/bin/tmux-wait");
    let served = serve.join(format!("releases/download/v{}", r.version));
    // A tampered archive: the checksum fails.
    let archive = served.join(r.archive_name());
    let good = std::fs::read(&archive).unwrap();
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    std::fs::write(&archive, &bad).unwrap();
    let f = run();
    assert_ne!(f.code, Some(0), "{f:?}");
    assert!(f.stdout.contains("FAILED"), "{f:?}");
    assert!(!installed.exists());
    // Signed by another key: the signature fails.
    std::fs::write(&archive, &good).unwrap();
    let other = tempfile::tempdir().unwrap();
    let key_file = other.path().join("key");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key_file)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_file(served.join("SHA256SUMS.sig")).unwrap();
    let st = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "tmux-wait-release", "-f"])
        .arg(&key_file)
        .arg(served.join("SHA256SUMS"))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let f = run();
    assert_ne!(f.code, Some(0), "{f:?}");
    // (ssh-keygen says it on stdout.)
    assert!(f.stdout.contains("Could not verify signature"), "{f:?}");
    assert!(!installed.exists());
    // As published: installed.
    std::fs::copy(r.dir.join("SHA256SUMS.sig"), served.join("SHA256SUMS.sig")).unwrap();
    let f = run();
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        f.stdout.lines().last(),
        Some(format!("tmux-wait {}", r.version).as_str()),
        "{f:?}"
    );
    assert_eq!(version_of(&installed), format!("tmux-wait {}", r.version));
}

/// @tmux-wait-bin names the helper: used as it is (whatever its version),
/// with no request; one that is no program is said, and the plugin gets
/// its own.
#[test]
fn the_bin_option_is_used_as_it_is() {
    let old = release::old();
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    let mine = t.s.dir().join("mine");
    unpack(old, &mine);
    let bin = mine.join(format!(
        "tmux-wait-{}-{}/tmux-wait",
        old.version, old.target
    ));
    t.s.tmux(&["set-option", "-g", "@tmux-wait-bin", &bin.to_string_lossy()]);
    t.load();
    t.load();
    t.wait_installs_done();
    assert_eq!(t.http.requests(), Vec::<String>::new());
    assert!(t.messages().is_empty(), "{:?}", t.messages());
    assert_eq!(t.status(), "");
    let missing = t.s.dir().join("no-such-helper");
    t.s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-bin",
        &missing.to_string_lossy(),
    ]);
    t.load();
    t.settle_on("ready");
    assert!(
        t.messages().iter().any(|m| m
            == &format!(
                "@tmux-wait-bin is '{}', which is no executable file: the plugin gets its own helper",
                missing.display()
            )),
        "{:?}",
        t.messages()
    );
    assert_eq!(
        version_of(&t.installed()),
        format!("tmux-wait {}", r.version)
    );
}

/// Without curl, wget: the same install, and the same bounded time on a
/// stalled server (wget has no limit of its own on a whole transfer).
#[test]
fn wget_does_it_without_curl() {
    let r = release::current(X86);
    let t = Setup::new();
    t.publish(r);
    // PATH: every program of the system's but curl.
    let tools = t.s.dir().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for dir in [tmux_dir(), PathBuf::from("/usr/bin"), PathBuf::from("/bin")] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name == "curl" || tools.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), tools.join(&name));
        }
    }
    if !tools.join("wget").exists() {
        println!("skipped: wget is not installed");
        return;
    }
    let path = tools.to_string_lossy().into_owned();
    t.s.tmux(&["set-environment", "-g", "PATH", &path]);
    let t = Setup { path, ..t };
    t.http.set_archive(Archive::Stall);
    t.s.tmux(&["set-option", "-g", "@tmux-wait-download-timeout", "2"]);
    let started = Instant::now();
    t.load();
    let m = t.settle_on("no helper:");
    assert!(m.contains("not done within 2 s"), "{m}");
    assert!(started.elapsed() < Duration::from_secs(8));
    t.assert_nothing_installed();
    t.report("stalled server, wget");
    t.http.set_archive(Archive::Whole);
    t.load();
    t.settle_on("ready");
    assert_eq!(
        version_of(&t.installed()),
        format!("tmux-wait {}", r.version)
    );
}
