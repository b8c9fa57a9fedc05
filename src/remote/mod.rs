//! Other hosts, through ssh: the helper runs there as it runs here, and
//! its NDJSON lines come back through one ssh connection per host (ssh's
//! own multiplexing). No daemon and no protocol of ours: `any`, `panes`,
//! MCP and the plugin merge what a host's tmux-wait prints with what this
//! one sees (`waits::attention::many`).
//!
//! - [`host`]: `[user@]host[:socket]`, checked; words quoted for the
//!   remote shell;
//! - [`ssh`]: the connection, a host's system and helper version, copying
//!   a file there;
//! - [`release`]: a release binary for another system, downloaded and
//!   verified.
//!
//! `tmux-wait remote check|install|exec` are here too.

pub mod host;
pub mod release;
pub mod ssh;

pub use host::{Host, sh_quote, sh_words, split_qualified};
pub use ssh::{Guard, Remote, Ssh, check_helper};

use crate::error::{Error, Kind, Result};
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
/// here first. It is run there once before it takes the place of any
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
    // (The directory by the remote shell's $HOME: scp's own start is the
    // account's home, which may be another.)
    let home = ssh.output(host, "mkdir -p \"$HOME/.local/bin\" && printf %s \"$HOME\"")?;
    // (An older scp hands the path to the remote shell: plain ones only.)
    let plain = home
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+@".contains(&b));
    if !home.starts_with('/') || !plain {
        return Err(Error::new(
            Kind::Io,
            format!(
                "{}: its $HOME ({}) is not a plain path; copy tmux-wait to ~/.local/bin there yourself",
                host.spec,
                crate::report::sanitize(&home)
            ),
        ));
    }
    let tmp = format!("{home}/.local/bin/.tmux-wait.{}", crate::state::random_id());
    ssh.copy(host, &exe, &tmp)?;
    // Run it there once: a binary that does not start (another libc) is
    // removed, and whatever was installed stays.
    let script = "f=$1; chmod 755 \"$f\" && v=$(\"$f\" --version 2>&1) && [ \"$v\" = \"tmux-wait $2\" ] && mv -f \"$f\" \"$HOME/.local/bin/tmux-wait\" && echo ok && exit 0; rm -f \"$f\"; echo \"$v\"";
    let out = ssh.output(
        host,
        &format!(
            "sh -c {} sh {}",
            sh_quote(script),
            sh_words(&[tmp, v.to_owned()])
        ),
    )?;
    if out.trim() != "ok" {
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
