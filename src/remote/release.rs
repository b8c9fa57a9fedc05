//! A release binary for another host's system, downloaded and verified
//! as the plugin verifies its own (scripts/install-helper.sh): SHA256SUMS
//! signed with the release key (`ssh-keygen -Y verify`), the archive's
//! SHA-256 in it, the binary unpacked from the archive. Nothing of it runs
//! here; the host runs it once before it takes the place of any other.

use crate::error::{Error, Kind, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where releases are published: `URL/vVERSION/FILE`.
pub const DEFAULT_URL: &str = "https://github.com/tmux-wait/tmux-wait/releases/download";

/// The key tmux-wait's releases are signed with (the plugin's
/// `allowed_signers`), built in.
const SIGNERS: &str = include_str!("../../allowed_signers");

/// The principal and namespace of a release's signature.
const PRINCIPAL: &str = "tmux-wait-release";

/// How long one file may take to come.
const FETCH_SECONDS: &str = "300";

/// Where to download from, and whose signature to trust.
#[derive(Clone, Debug)]
pub struct Source {
    /// `URL/vVERSION/` holds the release (http or https).
    pub url: String,
    /// An allowed_signers file; None: the release key built in.
    pub signers: Option<PathBuf>,
}

impl Default for Source {
    fn default() -> Source {
        Source {
            url: DEFAULT_URL.to_owned(),
            signers: None,
        }
    }
}

/// A private directory of the download, removed with it.
pub struct Download {
    dir: PathBuf,
    /// The verified binary, inside `dir`.
    pub binary: PathBuf,
}

impl Drop for Download {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Download `version` for `target` from `src`, verify it, unpack it.
pub fn fetch(src: &Source, version: &str, target: &str) -> Result<Download> {
    let base = src.url.trim_end_matches('/');
    let plain = !base.chars().any(|c| c.is_control() || c.is_whitespace());
    if !plain || !(base.starts_with("https://") || base.starts_with("http://")) {
        return Err(Error::usage(format!(
            "--release-url: '{}' is not an http or https address",
            crate::report::sanitize(base)
        )));
    }
    for tool in ["curl", "ssh-keygen", "tar"] {
        if which(tool).is_none() {
            return Err(Error::new(
                Kind::NoHelper,
                format!("{tool} is needed to download and verify a release, and is not installed"),
            ));
        }
    }
    let dir = crate::state::user_dir("downloads")?.join(crate::state::random_id());
    std::fs::create_dir(&dir)
        .map_err(|e| Error::io(&format!("cannot make {}", dir.display()), e))?;
    let mut d = Download {
        binary: PathBuf::new(),
        dir,
    };
    let signers = match &src.signers {
        Some(f) => f.clone(),
        None => {
            let f = d.dir.join("allowed_signers");
            std::fs::write(&f, SIGNERS)
                .map_err(|e| Error::io(&format!("cannot write {}", f.display()), e))?;
            f
        }
    };
    let url = format!("{base}/v{version}");
    let name = format!("tmux-wait-{version}-{target}");
    let archive = format!("{name}.tar.gz");
    let sums = d.dir.join("SHA256SUMS");
    get(&format!("{url}/SHA256SUMS"), &sums)?;
    get(
        &format!("{url}/SHA256SUMS.sig"),
        &d.dir.join("SHA256SUMS.sig"),
    )?;
    verify_signature(&signers, &d.dir)?;
    let want = std::fs::read_to_string(&sums)
        .ok()
        .and_then(|s| sum_of(&s, &archive))
        .ok_or_else(|| {
            Error::new(
                Kind::NoHelper,
                format!("{url}/SHA256SUMS lists no {archive}: no release for {target}"),
            )
        })?;
    let file = d.dir.join(&archive);
    get(&format!("{url}/{archive}"), &file)?;
    let got = sha256(&file)?;
    if !got.eq_ignore_ascii_case(&want) {
        return Err(Error::new(
            Kind::NoHelper,
            format!("{url}/{archive}: its SHA-256 is not the one SHA256SUMS gives: refused"),
        ));
    }
    let out = d.dir.join("x");
    std::fs::create_dir(&out).map_err(|e| Error::io("cannot unpack the release", e))?;
    let st = quiet(
        Command::new("tar")
            .arg("-xzf")
            .arg(&file)
            .arg("-C")
            .arg(&out),
    )
    .status()
    .map_err(|e| Error::io("cannot run tar", e))?;
    let binary = out.join(&name).join("tmux-wait");
    let is_file = std::fs::symlink_metadata(&binary).is_ok_and(|m| m.file_type().is_file());
    if !st.success() || !is_file {
        return Err(Error::new(
            Kind::NoHelper,
            format!("{archive} holds no {name}/tmux-wait"),
        ));
    }
    d.binary = binary;
    Ok(d)
}

/// The SHA-256 a SHA256SUMS text gives `file` (`HASH  FILE`, or `*FILE`).
fn sum_of(sums: &str, file: &str) -> Option<String> {
    sums.lines().find_map(|l| {
        let (hash, name) = l.split_once(char::is_whitespace)?;
        let name = name.trim_start();
        let name = name.strip_prefix('*').unwrap_or(name);
        (name == file && hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| hash.to_owned())
    })
}

fn quiet(c: &mut Command) -> &mut Command {
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|f| f.is_file())
    })
}

/// `url` into `file`, with curl, in bounded time, http and https only.
fn get(url: &str, file: &Path) -> Result<()> {
    let mut c = Command::new("curl");
    c.args(["-fsS", "-L", "--proto", "=http,https", "--proto-redir"])
        .args(["=http,https", "--connect-timeout", "10", "--max-time"])
        .arg(FETCH_SECONDS)
        .arg("-o")
        .arg(file)
        .arg("--")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    crate::tmux::die_with_parent(&mut c);
    let out = c.output().map_err(|e| Error::io("cannot run curl", e))?;
    if out.status.success() {
        return Ok(());
    }
    let said = first_line(&out.stderr);
    Err(Error::new(
        Kind::NoHelper,
        format!(
            "cannot download {url}: {}",
            said.trim_start_matches("curl: ")
        ),
    ))
}

fn verify_signature(signers: &Path, dir: &Path) -> Result<()> {
    let sums = std::fs::File::open(dir.join("SHA256SUMS"))
        .map_err(|e| Error::io("cannot read SHA256SUMS", e))?;
    let out = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-f"])
        .arg(signers)
        .args(["-I", PRINCIPAL, "-n", PRINCIPAL, "-s"])
        .arg(dir.join("SHA256SUMS.sig"))
        .stdin(sums)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::io("cannot run ssh-keygen", e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error::new(
        Kind::NoHelper,
        format!(
            "the release's SHA256SUMS does not verify against {} ({}): refused",
            crate::report::sanitize(&signers.display().to_string()),
            first_line(&out.stderr)
        ),
    ))
}

/// A tool's first line on stderr, fit for a one-line error.
fn first_line(stderr: &[u8]) -> String {
    let err = String::from_utf8_lossy(stderr);
    let line = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    crate::report::sanitize(line.trim())
}

/// A file's SHA-256, by whichever tool the system has.
fn sha256(file: &Path) -> Result<String> {
    let tools: [(&str, &[&str]); 3] = [
        ("sha256sum", &[]),
        ("shasum", &["-a", "256"]),
        ("openssl", &["dgst", "-sha256", "-r"]),
    ];
    for (tool, args) in tools {
        if which(tool).is_none() {
            continue;
        }
        let out = Command::new(tool)
            .args(args)
            .arg(file)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| Error::io(&format!("cannot run {tool}"), e))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(h) = text.split_whitespace().next()
            && out.status.success()
            && h.len() == 64
        {
            return Ok(h.to_owned());
        }
    }
    Err(Error::new(
        Kind::NoHelper,
        "none of sha256sum, shasum and openssl is installed to check a download",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_as_sha256sum_writes_them() {
        let h = "a".repeat(64);
        let text = format!(
            "{h}  tmux-wait-1-x.tar.gz\n{}  *other.tar.gz\n",
            "b".repeat(64)
        );
        assert_eq!(sum_of(&text, "tmux-wait-1-x.tar.gz"), Some(h));
        assert_eq!(sum_of(&text, "other.tar.gz"), Some("b".repeat(64)));
        assert_eq!(sum_of(&text, "x.tar.gz"), None);
        assert_eq!(sum_of("zz  x.tar.gz", "x.tar.gz"), None);
    }

    #[test]
    fn the_built_in_signers_name_the_release_key() {
        assert!(SIGNERS.lines().any(|l| {
            l.starts_with("tmux-wait-release namespaces=\"tmux-wait-release\" ssh-ed25519 ")
        }));
    }
}
