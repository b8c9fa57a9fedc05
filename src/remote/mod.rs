//! Other hosts, through ssh: the helper runs there as it runs here, and
//! its NDJSON lines come back through one ssh connection per host (ssh's
//! own multiplexing). No daemon and no protocol of ours: `any`, `panes`,
//! MCP and the plugin merge what a host's tmux-wait prints with what this
//! one sees (`waits::attention::many`).
//!
//! - [`host`]: `[user@]host[:socket]`, checked before it reaches ssh;
//! - [`ssh`]: the connection, a host's system and helper version, copying
//!   a file there;
//! - [`release`]: a release binary for another system, downloaded and
//!   verified.
//!
//! `tmux-wait remote check|install|exec` are here too.

pub mod host;
pub mod release;
pub mod ssh;

pub use host::{Host, split_qualified};
pub use ssh::{Guard, Remote, Ssh, check_helper};

use crate::error::{Error, Kind, Result};
use crate::tmux::protocol::{quote, quote_words};
use std::io::Write;

/// The `uname -sm` words of the systems this build runs on, and the
/// release archive's target for each.
const TARGETS: &[(&str, &str)] = &[
    ("Linux x86_64", "x86_64-unknown-linux-musl"),
    ("Linux aarch64", "aarch64-unknown-linux-musl"),
    ("Linux arm64", "aarch64-unknown-linux-musl"),
    ("Darwin x86_64", "x86_64-apple-darwin"),
    ("Darwin arm64", "aarch64-apple-darwin"),
];

/// This build's system and machine, as `uname -sm` says them.
fn this_target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-musl",
        ("linux", "aarch64") => "aarch64-unknown-linux-musl",
        ("macos", "x86_64") => "x86_64-apple-darwin",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        _ => "",
    }
}

/// The release target of a host that says `uname` (None: no release).
pub fn target_of(uname: &str) -> Option<&'static str> {
    TARGETS
        .iter()
        .find(|(u, _)| *u == uname.trim())
        .map(|(_, t)| *t)
}

/// `tmux-wait remote check HOST...`: each host reached (or why not) and
/// its helper's version. Ok(true) when every host is ready.
pub fn check(ssh: &Ssh, hosts: &[Host], json: bool) -> bool {
    let mut all = true;
    for h in hosts {
        let r = ssh.preflight(h);
        let ready = r.as_ref().is_ok_and(|r| check_helper(h, r).is_ok());
        all &= ready;
        let (uname, version, problem) = match &r {
            Ok(r) => (
                Some(r.uname.clone()),
                r.version.clone(),
                check_helper(h, r).err(),
            ),
            Err(e) => (None, None, Some(e.clone())),
        };
        let line = if json {
            serde_json::json!({
                "host": h.spec,
                "reached": r.is_ok(),
                "uname": uname,
                "version": version,
                "ready": ready,
                "error": problem.as_ref().map(|e| serde_json::json!({"kind": e.kind.as_str(), "message": e.message})),
            })
            .to_string()
        } else {
            match (&problem, &uname) {
                (None, Some(u)) => format!(
                    "{}: ready ({}, tmux-wait {})",
                    h.spec,
                    crate::report::sanitize(u),
                    version
                        .as_deref()
                        .map(crate::report::sanitize)
                        .unwrap_or_default()
                ),
                (Some(e), _) => e.message.clone(),
                (None, None) => h.spec.clone(),
            }
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    }
    all
}

/// `tmux-wait remote install HOST`: put tmux-wait in
/// `~/.local/bin/tmux-wait` there: this very binary when the host's
/// system and machine are this build's (and `from_release` is not asked),
/// else the release for the host's, downloaded from `source` and verified
/// here first. It goes through the connection (no sftp or scp there), is
/// checked whole and run there once before it takes the place of any
/// older one (a rename: never half a file). Returns what was done.
pub fn install(
    ssh: &Ssh,
    host: &Host,
    source: &release::Source,
    from_release: bool,
) -> Result<String> {
    let r = ssh.preflight(host)?;
    let ours = this_target();
    let v = ssh::VERSION;
    let uname = crate::report::sanitize(&r.uname);
    let Some(theirs) = target_of(&r.uname) else {
        return Err(Error::new(
            Kind::NoHelper,
            format!(
                "{}: no release is built for '{uname}'; build it there with `cargo install --locked tmux-wait`",
                host.spec
            ),
        ));
    };
    // (Kept until the copy is made: its directory goes with it.)
    let download;
    let (exe, what) = if theirs == ours && !from_release {
        let exe =
            std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
        (exe, "this binary".to_owned())
    } else {
        download = release::fetch(source, v, theirs).map_err(|e| Error {
            message: format!("{}: {}", host.spec, e.message),
            ..e
        })?;
        (
            download.binary.clone(),
            format!("the verified release for {theirs}"),
        )
    };
    // Copied through the connection itself, as the remote command's
    // stdin (no sftp or scp there: a host's sshd may have no sftp
    // subsystem, and OpenSSH 9's scp needs one), under a temporary name
    // beside the old one, checked whole (POSIX cksum: its CRC and size),
    // run once (a binary that does not start, another libc, is removed and
    // whatever was installed stays), then renamed over it: never half a
    // file. Every path is the remote shell's own "$HOME"; the words given
    // to the script are quoted.
    let (crc, size) = cksum_of(&exe)?;
    let tmp = format!(".tmux-wait.{}", crate::state::random_id());
    let out = ssh.output_with_input(
        host,
        &format!(
            "sh -c {} sh {}",
            quote(INSTALL_SCRIPT),
            quote_words(&[tmp, format!("{crc} {size}"), v.to_owned()])
        ),
        &exe,
    )?;
    // (The last line: a login shell's startup files may print first.)
    let said = out
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    if let Some(why) = said.strip_prefix("copy: ") {
        return Err(Error::new(
            Kind::Io,
            format!(
                "{}: cannot copy {what} there: {}",
                host.spec,
                crate::report::sanitize(why)
            ),
        ));
    }
    if said != "ok" {
        return Err(Error::new(
            Kind::NoHelper,
            format!(
                "{}: {what} does not run there ({}){}",
                host.spec,
                ssh::last_words(&out),
                if from_release || theirs != ours {
                    ""
                } else {
                    "; try --from-release"
                }
            ),
        ));
    }
    Ok(format!(
        "{}: installed tmux-wait {v} in ~/.local/bin/tmux-wait ({what})",
        host.spec
    ))
}

/// What `install` runs there, its stdin the binary: `$1` the temporary
/// name, `$2` the copy's POSIX `cksum` (`CRC SIZE`, as POSIX has `cksum`
/// print it for its stdin: GNU's, busybox's and the BSDs' do), `$3` the
/// version it must say. It prints `ok`; else `copy: WHY`, or what the binary said,
/// and leaves nothing. (One line, no `!`: the words reach the remote
/// user's login shell, which may be csh.)
const INSTALL_SCRIPT: &str = concat!(
    r#"d=$HOME/.local/bin; mkdir -p "$d" || { echo "copy: cannot make $d"; exit 0; }; "#,
    r#"f=$d/$1; umask 077; "#,
    r#"cat > "$f" || { rm -f "$f"; echo "copy: cannot write $f"; exit 0; }; "#,
    r#"s=$(cksum < "$f") || { rm -f "$f"; echo "copy: no cksum there to check it with"; exit 0; }; "#,
    r#"[ "$s" = "$2" ] || { rm -f "$f"; echo "copy: it arrived as cksum '$s', not '$2'"; exit 0; }; "#,
    r#"chmod 755 "$f" && v=$("$f" --version 2>&1) && [ "$v" = "tmux-wait $3" ] && mv -f "$f" "$d/tmux-wait" && echo ok && exit 0; "#,
    r#"rm -f "$f"; echo "$v""#
);

/// A file's POSIX `cksum`: its CRC (the polynomial 0x04C11DB7, the length
/// folded in, inverted) and its size, as the host's `cksum` says them.
fn cksum_of(path: &std::path::Path) -> Result<(u32, u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io("cannot read the binary", e))?;
    let mut sum = Cksum::default();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => sum.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("cannot read the binary", e)),
        }
    }
    Ok(sum.finish())
}

/// POSIX `cksum`'s CRC, a piece at a time.
#[derive(Default)]
struct Cksum {
    crc: u32,
    len: u64,
}

impl Cksum {
    fn table() -> &'static [u32; 256] {
        static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| {
            let mut t = [0u32; 256];
            for (i, e) in t.iter_mut().enumerate() {
                let mut c = (i as u32) << 24;
                for _ in 0..8 {
                    c = if c & 0x8000_0000 != 0 {
                        (c << 1) ^ 0x04C1_1DB7
                    } else {
                        c << 1
                    };
                }
                *e = c;
            }
            t
        })
    }

    fn byte(&mut self, b: u8) {
        let t = Self::table();
        self.crc = (self.crc << 8) ^ t[((self.crc >> 24) as u8 ^ b) as usize];
    }

    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
        self.len += bytes.len() as u64;
    }

    fn finish(mut self) -> (u32, u64) {
        let mut n = self.len;
        while n != 0 {
            self.byte(n as u8);
            n >>= 8;
        }
        (!self.crc, self.len)
    }
}

/// `tmux-wait remote exec HOST -- ARGS`: run the helper there, its output
/// passed through, its exit status returned. A host not reached, or
/// without the helper, is an error (as JSON with `--json` among ARGS).
pub fn exec(ssh: &Ssh, host: &Host, args: &[String]) -> Result<i32> {
    let r = ssh.preflight(host)?;
    check_helper(host, &r)?;
    let mut g = ssh.spawn_helper(host, args, true)?;
    let stderr = g.0.stderr.take();
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(mut e) = stderr {
            use std::io::Read;
            let _ = e.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    if let Some(mut o) = g.0.stdout.take() {
        let _ = std::io::copy(&mut o, &mut std::io::stdout().lock());
    }
    let st =
        g.0.wait()
            .map_err(|e| Error::io("cannot wait for ssh", e))?;
    let err = err.join().unwrap_or_default();
    // (ssh's own failure is said once, in the error; the command's lines
    // pass through.)
    if st.code() != Some(255) {
        let _ = std::io::stderr().write_all(err.as_bytes());
    }
    match st.code() {
        Some(255) | None => Err(ssh::unreachable(host, &err)),
        Some(n) => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn cksum_is_posix_cksum() {
        let of = |b: &[u8]| {
            let mut c = Cksum::default();
            c.update(b);
            c.finish()
        };
        assert_eq!(of(b""), (4_294_967_295, 0));
        assert_eq!(of(b"123456789"), (930_766_865, 9));
        // In pieces, as read from a file, the same.
        let long: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut c = Cksum::default();
        for piece in long.chunks(4099) {
            c.update(piece);
        }
        assert_eq!(c.finish(), of(&long));
        // And as this system's cksum says it, where it has one.
        if let Ok(out) = Command::new("cksum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut ch| {
                use std::io::Write;
                ch.stdin.take().unwrap().write_all(&long)?;
                ch.wait_with_output()
            })
        {
            let (crc, size) = of(&long);
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                format!("{crc} {size}")
            );
        }
    }

    /// The install script as a host's shell runs it (here, `sh -c` of
    /// the line ssh sends, in a HOME of the test's): the binary from its
    /// stdin, checked, run, renamed into place; a copy that is not whole
    /// or a binary that says another version leaves nothing.
    #[test]
    fn the_install_script_puts_a_whole_copy_in_place_or_nothing() {
        let home = tempfile::tempdir().unwrap();
        let exe = home.path().join("new-binary");
        std::fs::write(&exe, "#!/bin/sh\necho 'tmux-wait 9.9.9'\n").unwrap();
        let bin = home.path().join(".local/bin");
        let run_with = |sum: String, version: &str, path: Option<&std::path::Path>| {
            let line = format!(
                "sh -c {} sh {}",
                quote(INSTALL_SCRIPT),
                quote_words(&[".tmux-wait.t1".to_owned(), sum, version.to_owned()])
            );
            let mut c = Command::new("sh");
            c.args(["-c", &line])
                .env("HOME", home.path())
                .stdin(std::fs::File::open(&exe).unwrap());
            if let Some(p) = path {
                c.env("PATH", p);
            }
            let out = c.output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        let run = |sum: String, version: &str| run_with(sum, version, None);
        let left = || {
            std::fs::read_dir(&bin)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        let (crc, size) = cksum_of(&exe).unwrap();
        let sum = format!("{crc} {size}");
        let wrong = format!("{} {size}", crc ^ 1);
        let got = run(wrong.clone(), "9.9.9");
        assert!(got.starts_with("copy: it arrived as cksum"), "{got}");
        assert!(got.ends_with(&format!("not '{wrong}'")), "{got}");
        assert_eq!(left(), Vec::<String>::new());
        assert_eq!(run(sum.clone(), "1.0.0"), "tmux-wait 9.9.9");
        assert_eq!(left(), Vec::<String>::new());
        // A host without cksum: said, nothing left.
        let tools = tempfile::tempdir().unwrap();
        for t in ["sh", "cat", "mkdir", "rm"] {
            if let Some(p) = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| std::path::Path::new(d).join(t))
                .find(|p| p.is_file())
            {
                std::os::unix::fs::symlink(p, tools.path().join(t)).unwrap();
            }
        }
        assert_eq!(
            run_with(sum.clone(), "9.9.9", Some(tools.path())),
            "copy: no cksum there to check it with"
        );
        assert_eq!(left(), Vec::<String>::new());
        assert_eq!(run(sum, "9.9.9"), "ok");
        assert_eq!(left(), ["tmux-wait"]);
        let installed = bin.join("tmux-wait");
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            std::fs::read(&exe).unwrap()
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}
