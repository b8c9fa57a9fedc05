//! Release directories made by `scripts/release --sign KEY OUT TARGET`,
//! with a throwaway key made here, once per source: they are kept under
//! `target/install-test/`, named by a hash of what goes into them, so the
//! suite (and every tmux version the matrix runs it on) builds each once.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A signed release directory.
pub struct Release {
    /// The archives, SHA256SUMS and SHA256SUMS.sig.
    pub dir: PathBuf,
    /// An allowed_signers file naming the key that signed them.
    pub signers: PathBuf,
    pub version: String,
    pub target: String,
}

impl Release {
    pub fn archive_name(&self) -> String {
        format!("tmux-wait-{}-{}.tar.gz", self.version, self.target)
    }
}

/// The plugin's version, as its Cargo.toml says.
pub fn version() -> String {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    toml.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("a version in Cargo.toml")
        .to_owned()
}

/// A version no release of the repository has: the "old" one of the
/// upgrade tests.
pub const OLD: &str = "0.0.1-old";

static BUILDING: Mutex<()> = Mutex::new(());

/// The release of this source for `target`, at its own version.
pub fn current(target: &'static str) -> &'static Release {
    static X86: OnceLock<Release> = OnceLock::new();
    static ARM: OnceLock<Release> = OnceLock::new();
    let cell = if target.starts_with("x86_64") {
        &X86
    } else {
        &ARM
    };
    cell.get_or_init(|| build(target, None))
}

/// The release of this source with its version set to `OLD`.
pub fn old() -> &'static Release {
    static OLD_X86: OnceLock<Release> = OnceLock::new();
    OLD_X86.get_or_init(|| build("x86_64-unknown-linux-musl", Some(OLD)))
}

/// The files a release's binary is made from (as the working tree has
/// them). The README goes into the archive too, but a change to it alone
/// does not call for a new build: these tests do not read it there.
fn inputs() -> Vec<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .output()
        .expect("git ls-files");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|f| {
            f.starts_with("src/")
                || f.starts_with("benches/")
                || f.starts_with("profiles/")
                || f.starts_with("scripts/lib/shell-init.")
                || matches!(
                    *f,
                    "Cargo.toml"
                        | "Cargo.lock"
                        | "allowed_signers"
                        | "LICENSE-MIT"
                        | "LICENSE-APACHE"
                        | "scripts/release"
                )
        })
        .map(str::to_owned)
        .collect()
}

/// FNV-1a over the inputs' names and contents: a cache key, not a checksum.
fn source_hash(files: &[String], extra: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(extra.as_bytes());
    for f in files {
        eat(f.as_bytes());
        eat(&[0]);
        eat(&std::fs::read(root().join(f)).unwrap_or_default());
        eat(&[0]);
    }
    h
}

fn build(target: &str, version_override: Option<&str>) -> Release {
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let files = inputs();
    let version = version_override.map_or_else(version, str::to_owned);
    let base = root().join("target/install-test");
    std::fs::create_dir_all(&base).unwrap();
    let name = format!(
        "release-{version}-{target}-{:016x}",
        source_hash(&files, &format!("{version} {target} opt-level-0"))
    );
    let done = base.join(&name);
    let release = |dir: &Path| Release {
        dir: dir.join("out"),
        signers: dir.join("allowed_signers"),
        version: version.clone(),
        target: target.to_owned(),
    };
    if done.join("out/SHA256SUMS.sig").is_file() {
        return release(&done);
    }
    let stage = tempfile::Builder::new()
        .prefix(".stage-")
        .tempdir_in(&base)
        .unwrap();
    let st = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "throwaway test key",
            "-f",
        ])
        .arg(stage.path().join("key"))
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(st.success());
    let public = std::fs::read_to_string(stage.path().join("key.pub")).unwrap();
    std::fs::write(
        stage.path().join("allowed_signers"),
        format!("tmux-wait-release namespaces=\"tmux-wait-release\" {public}"),
    )
    .unwrap();
    // The source: this one, or a copy of it at another version (always in
    // the same place, so that cargo rebuilds only what changed).
    let src = match version_override {
        None => root().to_path_buf(),
        Some(v) => copy_at_version(&files, &base.join(format!("src-{v}")), v),
    };
    let started = Instant::now();
    let mut cmd = Command::new(src.join("scripts/release"));
    cmd.arg("--sign")
        .arg(stage.path().join("key"))
        .arg(stage.path().join("out"))
        .arg(target)
        .current_dir(&src)
        .env("CARGO_TARGET_DIR", base.join("cargo"))
        // The release profile without optimisation (nor LTO), in
        // parallel units: the x86_64 archive from nothing took 81 s of CPU
        // instead of 163 (172 s instead of 341 on two busy cores), and
        // the three builds were most of a fresh clone's test time. What
        // these tests prove (a static binary, the archive, its checksum
        // and signature, the download, the upgrade, the allocator's build
        // flags) does not depend on it; the whole suite runs unoptimised
        // binaries anyway, and the release workflow runs the binaries it
        // ships.
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "off")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let f = run_for(cmd, Duration::from_secs(30 * 60));
    assert_eq!(
        f.code,
        Some(0),
        "scripts/release {target} failed:\n{}\n{}",
        f.stdout,
        f.stderr
    );
    println!(
        "built {name} in {:.0} s:\n{}",
        started.elapsed().as_secs_f64(),
        f.stderr
    );
    let kept = stage.keep();
    if std::fs::rename(&kept, &done).is_err() {
        // Another run made it meanwhile: use that one.
        let _ = std::fs::remove_dir_all(&kept);
    }
    // Those of earlier sources go.
    let stale = format!("release-{version}-{target}-");
    for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&stale) && n != name {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    release(&done)
}

/// The tracked files of the working tree, copied to `dest` with the
/// package's version (in Cargo.toml and Cargo.lock) set to `v`. A file
/// whose copy is already the same is left as it is (cargo goes by dates).
fn copy_at_version(files: &[String], dest: &Path, v: &str) -> PathBuf {
    let ours = version();
    // (A program is put by `install`, see `install_file`: the test
    // runs scripts/release from the copy.)
    let put = |rel: &str, text: Vec<u8>, mode: u32| {
        let to = dest.join(rel);
        if std::fs::read(&to).ok().as_ref() != Some(&text) {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            if mode & 0o111 != 0 {
                write_program(&to, text, mode);
            } else {
                std::fs::write(&to, text).unwrap();
            }
        }
    };
    for f in files.iter().chain(["README.md".to_owned()].iter()) {
        let text = std::fs::read(root().join(f)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root().join(f))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        let text = match f.as_str() {
            "Cargo.toml" => String::from_utf8(text)
                .unwrap()
                .replacen(
                    &format!("version = \"{ours}\""),
                    &format!("version = \"{v}\""),
                    1,
                )
                .into_bytes(),
            "Cargo.lock" => {
                let lock = String::from_utf8(text).unwrap();
                let entry = format!("name = \"tmux-wait\"\nversion = \"{ours}\"");
                assert!(lock.contains(&entry), "Cargo.lock has no {entry:?}");
                lock.replace(&entry, &format!("name = \"tmux-wait\"\nversion = \"{v}\""))
                    .into_bytes()
            }
            _ => text,
        };
        put(f, text, mode);
        std::fs::set_permissions(dest.join(f), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    dest.to_path_buf()
}

/// Run a command to its end within `limit` (a release build is far longer
/// than the suite's usual deadline), killing it past that.
fn run_for(mut cmd: Command, limit: Duration) -> Finished {
    let mut child = cmd.spawn().expect("spawn");
    // Read the pipes as it runs, so a full pipe never stops it.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Finished {
        code: status.code(),
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}
