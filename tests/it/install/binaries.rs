//! The static binaries of the release archives themselves: what an archive
//! holds, the x86_64 binary in an empty chroot, the aarch64 one under
//! qemu-user, and how the x86_64 one takes memory.

use super::{ARM, X86, is_root, release, unpack};
use crate::common::*;
use release::Release;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The binary of release `r`, unpacked in the test's directory.
fn unpacked(r: &Release, s: &TestServer) -> PathBuf {
    unpack(r, &s.dir().join("unpacked"));
    s.dir().join(format!(
        "unpacked/tmux-wait-{}-{}/tmux-wait",
        r.version, r.target
    ))
}

/// A text wait for `word` (`A-B`), run by `c` (the binary, as a chroot or
/// qemu starts it), armed; `engine` picks one.
fn wait_for_word(s: &TestServer, c: Command, word: &str, engine: Option<&str>) -> Waiter {
    let mut args = vec!["text", "-t", &s.pane];
    if let Some(e) = engine {
        args.extend(["--engine", e]);
    }
    args.extend(["--pattern", word, "--json"]);
    s.start_wait_cmd(c, &args)
}

/// `word` printed in the pane ends the wait with a match. (Split in the
/// typed line, so that only the output matches.)
fn print_word(s: &TestServer, w: Waiter, word: &str) {
    let (head, tail) = word.rsplit_once('-').expect("a word with a dash");
    s.type_line(&s.pane, &format!("echo {head}-$((1)){tail} | tr -d 1"));
    let f = w.finish(s);
    assert_eq!(f.json()["outcome"], "matched", "{f:?}");
}

/// The archive holds the binary, the README and both licences in one
/// directory, owned by 0 and in order; SHA256SUMS lists it; the signature
/// verifies with ssh-keygen as the plugin checks it.
#[test]
fn the_archive_holds_binary_readme_and_licences_and_is_signed() {
    let r = release::current(X86);
    let name = format!("tmux-wait-{}-{}", r.version, r.target);
    let out = Command::new("tar")
        .args(["-tvzf"])
        .arg(r.dir.join(r.archive_name()))
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let entries: Vec<&str> = listing
        .lines()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(
        entries,
        [
            format!("{name}/"),
            format!("{name}/LICENSE-APACHE"),
            format!("{name}/LICENSE-MIT"),
            format!("{name}/README.md"),
            format!("{name}/tmux-wait"),
        ]
    );
    assert!(
        listing.lines().all(|l| l.contains(" 0/0 ")),
        "owners: {listing}"
    );
    let sums = std::fs::read_to_string(r.dir.join("SHA256SUMS")).unwrap();
    assert!(
        sums.lines()
            .any(|l| l.ends_with(&format!("  {}", r.archive_name()))),
        "{sums}"
    );
    let mut c = Command::new("sha256sum");
    c.args(["-c", "SHA256SUMS"]).current_dir(&r.dir);
    assert_eq!(run_bounded(c).code, Some(0));
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(
            "ssh-keygen -Y verify -f \"$1\" -I tmux-wait-release -n tmux-wait-release \
             -s SHA256SUMS.sig < SHA256SUMS",
        )
        .arg("sh")
        .arg(&r.signers)
        .current_dir(&r.dir);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
}

/// The x86_64 binary is static: it runs in a chroot that holds nothing
/// else, and waits for text there. (The wait runs the tmux client, so its
/// chroot also has tmux with its libraries, /dev/null and the server's
/// socket; tmux-wait itself needs none of them.) As root only.
#[test]
fn the_x86_64_binary_runs_in_an_empty_chroot() {
    if !is_root() {
        println!("skipped: chroot needs root");
        return;
    }
    let r = release::current(X86);
    let s = TestServer::new();
    let jail = s.dir().join("jail");
    let bin = unpacked(r, &s);
    std::fs::create_dir_all(&jail).unwrap();
    install_file(&bin, &jail.join("tmux-wait"), 0o755);
    let chroot_bin = ["/usr/sbin/chroot", "/sbin/chroot", "/usr/bin/chroot"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .unwrap_or("chroot");
    let chroot = |args: &[&str]| {
        let mut c = Command::new(chroot_bin);
        c.arg(&jail).args(args).env_clear();
        run_bounded(c)
    };
    let f = chroot(&["/tmux-wait", "--version"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.stdout.trim(), format!("tmux-wait {}", r.version));
    let f = chroot(&["/tmux-wait", "shell-init", "bash"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(std::fs::read_dir(&jail).unwrap().count() == 1);
    // The wait: tmux (with what it links), /dev/null, a UTF-8 locale for
    // tmux, and a hard link to the server's socket.
    let tmux = tmux_dir().join("tmux");
    install_file(&tmux, &jail.join("tmux"), 0o755);
    let ldd = Command::new("ldd").arg(&tmux).output().unwrap();
    for lib in String::from_utf8_lossy(&ldd.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
    {
        let to = jail.join(lib.trim_start_matches('/'));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(lib, to).unwrap();
    }
    let locale = Path::new("/usr/lib/locale/C.utf8");
    if locale.is_dir() {
        std::fs::create_dir_all(jail.join("usr/lib/locale")).unwrap();
        let st = Command::new("cp")
            .arg("-r")
            .arg(locale)
            .arg(jail.join("usr/lib/locale/"))
            .status()
            .unwrap();
        assert!(st.success());
    }
    std::fs::create_dir_all(jail.join("dev")).unwrap();
    let st = Command::new("mknod")
        .args(["-m", "666"])
        .arg(jail.join("dev/null"))
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(st.success(), "mknod");
    std::fs::hard_link(&s.socket, jail.join("s")).expect("link the socket");
    let mut c = Command::new(chroot_bin);
    c.arg(&jail)
        .args(["/tmux-wait", "-S", "/s"])
        .env_clear()
        .env("TMUX_WAIT_TMUX", "/tmux")
        .env("LC_ALL", "C.UTF-8");
    let w = wait_for_word(&s, c, "IN-THE-JAIL", Some("poll"));
    print_word(&s, w, "IN-THE-JAIL");
}

/// The aarch64 binary runs --version and a text wait under qemu-user.
#[test]
fn the_aarch64_binary_runs_under_qemu() {
    if !installed("qemu-aarch64") {
        println!("skipped: qemu-aarch64 is not installed (Debian: qemu-user)");
        return;
    }
    let r = release::current(ARM);
    let s = TestServer::new();
    let bin = unpacked(r, &s);
    let mut c = Command::new("qemu-aarch64");
    c.arg(&bin).arg("--version");
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.stdout.trim(), format!("tmux-wait {}", r.version));
    let mut c = Command::new("qemu-aarch64");
    c.arg(&bin)
        .arg("-S")
        .arg(&s.socket)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    let w = wait_for_word(&s, c, "UNDER-QEMU", Some("poll"));
    print_word(&s, w, "UNDER-QEMU");
}

/// The x86_64 binary asks for no transparent huge pages (mimalloc's
/// madvise, off at build time): with them, each process cleared three
/// 2 MiB pages as it started, and every call paid 0.2-0.3 floors for it
/// (docs/benchmarks.md). A wait of the binary and the hub it started,
/// each read from its `smaps` while it runs: no mapping of theirs is
/// marked `hg` (madvised for huge pages).
#[test]
fn the_x86_64_binary_asks_for_no_huge_pages() {
    let r = release::current(X86);
    let s = TestServer::new();
    let bin = unpacked(r, &s);
    let mut c = Command::new(&bin);
    c.arg("-S")
        .arg(&s.socket)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    let w = wait_for_word(&s, c, "NO-HUGE-PAGES", None);
    let hubs = s.hub_pids();
    assert_eq!(hubs.len(), 1, "one hub, started by the wait: {hubs:?}");
    let hub_exe = std::fs::read_link(format!("/proc/{}/exe", hubs[0])).unwrap();
    assert_eq!(hub_exe, bin, "the hub is the static binary");
    for pid in [w.pid().to_string(), hubs[0].clone()] {
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
        let flags: Vec<&str> = smaps
            .lines()
            .filter(|l| l.starts_with("VmFlags:"))
            .collect();
        assert!(!flags.is_empty(), "no mappings read for {pid}");
        let huge: Vec<&&str> = flags
            .iter()
            .filter(|l| l.split_whitespace().any(|f| f == "hg"))
            .collect();
        assert!(
            huge.is_empty(),
            "process {pid} madvised huge pages: {huge:?}"
        );
    }
    print_word(&s, w, "NO-HUGE-PAGES");
}
