//! `tmux-wait remote install` from a release: what a host of another
//! system gets. The release is the one `scripts/release` makes of this
//! source, signed with a throwaway key and served by a real HTTP server
//! on 127.0.0.1 (as the plugin's download tests serve it); the host is a
//! real sshd of the test's. `--from-release` takes the download path on
//! this machine, whose system every host here shares.

use super::sshd::{Keys, Sshd};
use super::tw;
use crate::common::*;
use crate::install::http::Http;
use crate::install::publish;
use crate::install::release;
use std::process::Command;

const X86: &str = "x86_64-unknown-linux-musl";

#[test]
fn a_signed_release_is_verified_here_then_installed_there() {
    need_sshd!();
    if std::env::consts::ARCH != "x86_64" {
        println!("skipped: the test release is built for x86_64");
        return;
    }
    let r = release::current(X86);
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let bare = Sshd::start(&keys, "bare", false);
    let installed = bare.dir.join("home/.local/bin/tmux-wait");
    let serve = keys.path().join("serve");
    publish(&serve, r);
    let http = Http::serve(&serve);
    let url = format!("http://127.0.0.1:{}", http.port);
    let install = |signers: &std::path::Path| {
        let mut c = tw(&keys, local.path());
        c.args([
            "remote",
            "install",
            "bare",
            "--from-release",
            "--release-url",
        ])
        .arg(&url)
        .arg("--signers")
        .arg(signers);
        run_bounded(c)
    };

    // Signed, but not by a key the signers' file names: refused before
    // the archive is fetched; nothing reaches the host.
    let other = keys.path().join("other");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "other", "-f"])
        .arg(&other)
        .status()
        .unwrap();
    assert!(st.success());
    let public = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let other_signers = keys.path().join("other_signers");
    std::fs::write(
        &other_signers,
        format!("tmux-wait-release namespaces=\"tmux-wait-release\" {public}"),
    )
    .unwrap();
    let f = install(&other_signers);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert!(
        f.stderr.starts_with(
            "tmux-wait: error: bare: the release's SHA256SUMS does not verify against"
        ) && f.stderr.trim_end().ends_with("refused"),
        "{f:?}"
    );
    assert_eq!(f.stderr.trim_end().lines().count(), 1, "{f:?}");
    assert!(!installed.exists());

    // The right signature, an archive that is not the one signed for:
    // refused, nothing there.
    let served = serve.join(format!("v{}", r.version)).join(r.archive_name());
    let good = std::fs::read(&served).unwrap();
    let mut bad = good.clone();
    bad.push(0);
    std::fs::write(&served, &bad).unwrap();
    let f = install(&r.signers);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert!(
        f.stderr
            .trim_end()
            .ends_with("its SHA-256 is not the one SHA256SUMS gives: refused"),
        "{f:?}"
    );
    assert!(!installed.exists());
    std::fs::write(&served, &good).unwrap();

    // The release's own key: fetched, checked, run there once, in place.
    let f = install(&r.signers);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        f.stdout.trim(),
        format!(
            "bare: installed tmux-wait {} in ~/.local/bin/tmux-wait (the verified release for {X86})",
            r.version
        )
    );
    assert!(installed.is_file());
    let mut c = tw(&keys, local.path());
    c.args(["remote", "check", "bare", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.json()["ready"], true, "{f:?}");
    assert_eq!(f.json()["version"], r.version, "{f:?}");
    // (The release's static binary, not the one that installed it.)
    assert_ne!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(BIN).unwrap()
    );
    // Nothing of the download is left here.
    let downloads = keys.run_dir().join("tmux-wait/downloads");
    let left: Vec<_> = std::fs::read_dir(&downloads)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");

    // A release URL that is not http(s): a usage error, nothing fetched.
    let mut c = tw(&keys, local.path());
    c.args([
        "remote",
        "install",
        "bare",
        "--from-release",
        "--release-url",
        "file:///etc",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert_eq!(
        f.stderr.trim(),
        "tmux-wait: error: bare: --release-url: 'file:///etc' is not an http or https address"
    );
}

/// A host whose sshd has no sftp subsystem and whose PATH has no scp (a
/// minimal container, a hardened sshd): scp cannot copy there (OpenSSH
/// 9's scp speaks SFTP; its old protocol needs scp there), yet `remote
/// install` puts this binary in place through the connection itself,
/// whole, with nothing else left in `~/.local/bin`, and again over it.
#[test]
fn install_needs_no_sftp_or_scp_there() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let h = Sshd::start_minimal(&keys, "minimal");
    let th = h.tmux(1);
    let bin_dir = h.dir.join("home/.local/bin");
    let installed = bin_dir.join("tmux-wait");

    // What the install did before: scp, both ways, fails there.
    let small = keys.path().join("small");
    std::fs::write(&small, "x").unwrap();
    for legacy in [false, true] {
        let mut c = Command::new("scp");
        c.arg("-F").arg(&keys.config).arg("-q");
        if legacy {
            c.arg("-O");
        }
        c.arg("--").arg(&small).arg("minimal:small");
        let f = run_bounded(c);
        assert_ne!(f.code, Some(0), "scp (legacy {legacy}) copied: {f:?}");
        println!("scp (legacy {legacy}): {}", f.stderr.trim());
    }

    let t0 = std::time::Instant::now();
    let mut c = tw(&keys, local.path());
    c.args(["remote", "install", "minimal"]);
    let f = run_bounded(c);
    println!("installed in {:?}", t0.elapsed());
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        f.stdout.trim(),
        format!(
            "minimal: installed tmux-wait {} in ~/.local/bin/tmux-wait (this binary)",
            env!("CARGO_PKG_VERSION")
        )
    );
    let same = || std::fs::read(&installed).unwrap() == std::fs::read(BIN).unwrap();
    assert!(same(), "the copy there is not this binary");
    let names = || -> Vec<String> {
        std::fs::read_dir(&bin_dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(), ["tmux-wait"]);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);

    // Watched from here.
    let mut c = tw(&keys, local.path());
    c.args(["panes", "--host", "minimal", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        f.json()["panes"][0]["pane_id"],
        format!("minimal/{}", th.panes[0])
    );

    // Again, over the one there (an update): in place, nothing else.
    let mut c = tw(&keys, local.path());
    c.args(["remote", "install", "minimal"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(same());
    assert_eq!(names(), ["tmux-wait"]);
}
