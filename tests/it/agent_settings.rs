//! `agents install` and `remove` on settings files as people keep them:
//! any layout, empty lists, comments where the agent reads them, a
//! symlink into a dotfiles folder, a read-only target, another user's
//! file, the agents' own directory variables; and a run killed while it
//! writes. After install then remove, the file is byte for byte the
//! user's.

use crate::common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variables that move the agents' files, and tmux-wait's record:
/// none of the caller's.
const MOVERS: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "QWEN_HOME",
    "GEMINI_CLI_HOME",
    "CODEX_HOME",
    "XDG_STATE_HOME",
];

fn command(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("agents")
        .args(args)
        .env("HOME", home)
        .current_dir(home);
    for v in MOVERS {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn agents(home: &Path, args: &[&str]) -> Finished {
    run_bounded(command(home, &[], args))
}

fn agents_env(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> Finished {
    run_bounded(command(home, env, args))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The files tmux-wait's temporary files would be in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmux-wait"))
        .collect()
}

/// The settings file of each agent, under a home.
fn file_of(home: &Path, agent: &str) -> PathBuf {
    home.join(match agent {
        "claude-code" => ".claude/settings.json",
        "qwen-code" => ".qwen/settings.json",
        "gemini-cli" => ".gemini/settings.json",
        "codex" => ".codex/hooks.json",
        a => panic!("no agent {a}"),
    })
}

/// Install (the hook is there, in the file's style), install again
/// (nothing changes), remove: the user's bytes.
fn round_trip(agent: &str, text: &str) -> String {
    let home = tempfile::tempdir().unwrap();
    let file = file_of(home.path(), agent);
    write(&file, text);
    let f = agents(home.path(), &["install", agent]);
    assert_eq!(f.code, Some(0), "{agent} {text:?}: {f:?}");
    assert!(f.stdout.contains("hook added for"), "{}", f.stdout);
    let installed = read(&file);
    assert!(
        installed.contains(&format!(" agent-event --agent {agent}")),
        "{installed}"
    );
    let f = agents(home.path(), &["install", agent]);
    assert!(f.stdout.contains("there already"), "{f:?}");
    assert_eq!(read(&file), installed);
    let f = agents(home.path(), &["remove", agent]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(read(&file), text, "installed was:\n{installed}");
    assert!(leftovers(file.parent().unwrap()).is_empty());
    installed
}

#[test]
fn install_then_remove_gives_every_layout_back_byte_for_byte() {
    let cases: &[(&str, &str)] = &[
        (
            "claude-code",
            "{\n\t\"model\": \"opus\",\n\t\"env\": {\n\t\t\"ANTHROPIC_API_KEY\": \"sk-x\"\n\t}\n}\n",
        ),
        (
            "claude-code",
            "{\n    \"model\": \"opus\",\n    \"permissions\": {\n        \"allow\": [\"Bash(ls)\", \"Read\"]\n    }\n}\n",
        ),
        (
            "claude-code",
            "{\"model\": \"opus\", \"permissions\": {\"allow\": [\"Read\"]}, \"env\": {\"NAME\": \"Ren\\u00e9e\"}}",
        ),
        (
            "claude-code",
            "{\n  \"statusLine\": {\"type\": \"command\", \"command\": \"caf\\u00e9\"},\n  \"hooks\": {\n    \"Stop\": [\n      {\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"notify-me\"}]}\n    ]\n  }\n}",
        ),
        (
            "claude-code",
            "{\"hooks\": {\"PostToolUse\": []}, \"model\": \"sonnet\"}",
        ),
        (
            "claude-code",
            "{\n  \"hooks\": {\n    \"PostToolUse\": [],\n    \"Stop\": [ ]\n  },\n  \"model\": \"sonnet\"\n}\n",
        ),
        ("claude-code", "{\n  \"hooks\": {}\n}\n"),
        ("claude-code", "{\r\n  \"model\": \"opus\"\r\n}\r\n"),
        (
            "claude-code",
            "{\"model\":\"opus\",\"env\":{\"A\":\"1\",\"B\":\"2\"}}",
        ),
        ("claude-code", "{}"),
        ("claude-code", "\u{feff}{\n  \"model\": \"opus\"\n}\n"),
        (
            "codex",
            "{\n    \"hooks\": {\n        \"Stop\": []\n    }\n}",
        ),
        (
            "qwen-code",
            "\u{feff}{\n  // mine\n  \"model\": {\"name\": \"qwen3\"} /* fast */\n}\n",
        ),
        (
            "gemini-cli",
            "{\n  // My settings.\n  \"general\": {\"vimMode\": true}, // keys\n  /* hooks below */\n  \"hooks\": {\n    \"AfterAgent\": [] // none yet\n  }\n}",
        ),
    ];
    for (agent, text) in cases {
        round_trip(agent, text);
    }
    // The style it adds in is the file's.
    let tabs = round_trip("claude-code", cases[0].1);
    assert!(
        tabs.contains("\n\t\"hooks\": {\n\t\t\"UserPromptSubmit\": [\n\t\t\t{\n"),
        "{tabs}"
    );
    let inline = round_trip("claude-code", cases[3].1);
    assert!(
        inline.contains(
            "\n      {\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \""
        ),
        "{inline}"
    );
    let crlf = round_trip("claude-code", cases[7].1);
    assert!(!crlf.replace("\r\n", "").contains('\n'), "{crlf:?}");
}

#[test]
fn comments_are_kept_where_the_agent_reads_them_and_refused_where_it_does_not() {
    let text = "{\n  // mine\n  \"model\": \"x\"\n}\n";
    let installed = round_trip("gemini-cli", text);
    assert!(installed.starts_with("{\n  // mine\n  \"model\": \"x\",\n  \"hooks\": {"));
    round_trip("qwen-code", text);
    for agent in ["claude-code", "codex"] {
        let home = tempfile::tempdir().unwrap();
        let file = file_of(home.path(), agent);
        write(&file, text);
        let f = agents(home.path(), &["install", agent]);
        assert_eq!(f.code, Some(2), "{f:?}");
        assert!(f.stderr.contains("has comments"), "{}", f.stderr);
        assert!(f.stderr.contains("strict JSON"), "{}", f.stderr);
        assert_eq!(f.stderr.trim().lines().count(), 1, "{}", f.stderr);
        assert_eq!(read(&file), text);
    }
    // A byte order mark: Claude Code and Qwen Code read one, Codex and
    // Gemini CLI do not.
    let bom = "\u{feff}{\"model\": \"x\"}";
    for agent in ["codex", "gemini-cli"] {
        let home = tempfile::tempdir().unwrap();
        let file = file_of(home.path(), agent);
        write(&file, bom);
        let f = agents(home.path(), &["install", agent]);
        assert_eq!(f.code, Some(2), "{f:?}");
        assert!(f.stderr.contains("byte order mark"), "{}", f.stderr);
        assert_eq!(read(&file), bom);
    }
}

#[test]
fn a_symlink_into_a_dotfiles_folder_is_edited_and_kept() {
    let home = tempfile::tempdir().unwrap();
    let dots = home.path().join("dotfiles");
    // Relative (as GNU stow makes them) for Claude Code, absolute (as
    // home-manager and chezmoi do) for Gemini CLI.
    let text = "{\n    \"model\": \"opus\"\n}\n";
    write(&dots.join("claude/settings.json"), text);
    write(&dots.join("gemini/settings.json"), text);
    let claude = file_of(home.path(), "claude-code");
    let gemini = file_of(home.path(), "gemini-cli");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    std::fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("../dotfiles/claude/settings.json", &claude).unwrap();
    std::os::unix::fs::symlink(dots.join("gemini/settings.json"), &gemini).unwrap();
    let f = agents(home.path(), &["install", "claude-code", "gemini-cli"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(f.stdout.contains("(a link to "), "{}", f.stdout);
    for (link, target) in [(&claude, "claude"), (&gemini, "gemini")] {
        let real = dots.join(target).join("settings.json");
        assert!(link.is_symlink(), "{link:?} is no longer a link");
        assert!(read(&real).contains("agent-event"), "{}", read(&real));
        assert_eq!(read(link), read(&real));
        assert!(leftovers(real.parent().unwrap()).is_empty());
    }
    assert_eq!(
        std::fs::read_link(&claude).unwrap(),
        PathBuf::from("../dotfiles/claude/settings.json")
    );
    let f = agents(home.path(), &["remove", "claude-code", "gemini-cli"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    for (link, target) in [(&claude, "claude"), (&gemini, "gemini")] {
        assert!(link.is_symlink());
        assert_eq!(read(&dots.join(target).join("settings.json")), text);
    }
}

#[test]
fn a_read_only_target_is_refused_with_the_entries_to_add() {
    let home = tempfile::tempdir().unwrap();
    // home-manager: a link into a read-only store.
    let store = home.path().join("store/abc-settings");
    let real = store.join("settings.json");
    let text = "{\"model\": \"opus\"}\n";
    write(&real, text);
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    let link = file_of(home.path(), "claude-code");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let f = agents(home.path(), &["install", "claude-code"]);
    assert_eq!(f.code, Some(6), "{f:?}");
    assert_eq!(f.stderr.trim().lines().count(), 1, "{}", f.stderr);
    assert!(f.stderr.contains("is read-only"), "{}", f.stderr);
    assert!(f.stderr.contains("nothing written"), "{}", f.stderr);
    // The entries, as JSON, ready to add.
    let at = f.stderr.find("{\"UserPromptSubmit\"").expect("the entries");
    let entries: serde_json::Value =
        serde_json::from_str(f.stderr[at..].trim()).expect("entries are JSON");
    assert!(
        entries["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" agent-event --agent claude-code")
    );
    assert_eq!(read(&real), text);
    assert!(link.is_symlink());
    assert!(leftovers(&store).is_empty());
    // A writable file in a directory without write permission: the new
    // file could not be put there.
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = agents(home.path(), &["install", "claude-code"]);
    assert_eq!(f.code, Some(6), "{f:?}");
    assert!(f.stderr.contains("its directory"), "{}", f.stderr);
    assert_eq!(read(&real), text);
    // remove, where our hooks are in a read-only file: what to take out.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = agents(home.path(), &["install", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    let installed = read(&real);
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o444)).unwrap();
    let f = agents(home.path(), &["remove", "claude-code"]);
    assert_eq!(f.code, Some(6), "{f:?}");
    assert!(
        f.stderr.contains(
            "remove by hand the 6 hooks whose command ends in \"agent-event --agent claude-code\""
        ),
        "{}",
        f.stderr
    );
    assert_eq!(read(&real), installed);
    // Already there: nothing to write, no refusal.
    let f = agents(home.path(), &["install", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
}

/// The Nix store itself: a read-only mount, which root may not write
/// either (a mount namespace of the test's own, as root).
#[test]
fn a_target_on_a_read_only_mount_is_refused() {
    let unshare = Command::new("unshare").arg("--help").output();
    if !root() || unshare.is_err() {
        println!("skipped: needs root and unshare");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("store");
    let real = store.join("settings.json");
    let text = "{\"model\": \"opus\"}\n";
    write(&real, text);
    let link = file_of(home.path(), "claude-code");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let script =
        "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && shift && exec \"$@\"";
    let mut c = Command::new("unshare");
    c.args(["-m", "sh", "-c", script, "sh"])
        .arg(&store)
        .args([BIN, "agents", "install", "claude-code"])
        .env("HOME", home.path());
    for v in MOVERS {
        c.env_remove(v);
    }
    let f = run_bounded(c);
    assert_eq!(f.code, Some(6), "{f:?}");
    assert!(
        f.stderr.contains("is on a read-only file system"),
        "{}",
        f.stderr
    );
    assert_eq!(read(&real), text);
}

#[test]
fn the_agents_own_directory_variables_are_honoured() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let elsewhere = h.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let installed = |f: &Finished, file: &Path| {
        assert_eq!(f.code, Some(0), "{f:?}");
        assert!(
            f.stdout.contains(&file.display().to_string()),
            "{}",
            f.stdout
        );
        assert!(read(file).contains("agent-event"), "{file:?}");
    };
    let cc = elsewhere.join("claude-work");
    let f = agents_env(
        h,
        &[("CLAUDE_CONFIG_DIR", &cc)],
        &["install", "claude-code"],
    );
    installed(&f, &cc.join("settings.json"));
    let gh = elsewhere.join("gemini-home");
    let f = agents_env(h, &[("GEMINI_CLI_HOME", &gh)], &["install", "gemini-cli"]);
    installed(&f, &gh.join(".gemini/settings.json"));
    let cx = elsewhere.join("codex-home");
    std::fs::create_dir_all(&cx).unwrap();
    let f = agents_env(h, &[("CODEX_HOME", &cx)], &["install", "codex"]);
    installed(&f, &cx.join("hooks.json"));
    // Qwen Code expands ~ in QWEN_HOME, and reads it from ~/.env too.
    let f = agents_env(
        h,
        &[("QWEN_HOME", Path::new("~/qwen-a"))],
        &["install", "qwen-code"],
    );
    installed(&f, &h.join("qwen-a/settings.json"));
    write(&h.join(".env"), "export QWEN_HOME=\"~/qwen-b\"\n");
    let f = agents(h, &["install", "qwen-code"]);
    installed(&f, &h.join("qwen-b/settings.json"));
    // Nothing went to the default places.
    for agent in ["claude-code", "gemini-cli", "codex", "qwen-code"] {
        assert!(!file_of(h, agent).exists(), "{agent}");
    }
    // Codex will not start with a CODEX_HOME that is not a directory.
    let missing = elsewhere.join("no-codex-home");
    let f = agents_env(h, &[("CODEX_HOME", &missing)], &["install", "codex"]);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert!(f.stderr.contains("CODEX_HOME is "), "{}", f.stderr);
    assert!(!missing.exists());
    // remove finds them the same way.
    let f = agents_env(h, &[("CLAUDE_CONFIG_DIR", &cc)], &["remove", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(read(&cc.join("settings.json")), "{}\n");
}

/// Root, for the owner's part of a test (else it says it skipped it).
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        println!("skipped: the owner's part needs root");
    }
    root
}

const OTHER_UID: u32 = 4321;

/// A settings file of another user's (as root), mode 0600, with a key in
/// it; what it is.
fn secret_settings(home: &Path) -> (PathBuf, String) {
    let file = file_of(home, "claude-code");
    // Large enough that its copy is still being written at 16 KiB.
    let key = "k".repeat(40_000);
    let text = format!("{{\n  \"env\": {{\"ANTHROPIC_API_KEY\": \"{key}\"}}\n}}\n");
    write(&file, &text);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    if root() {
        std::os::unix::fs::chown(&file, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    }
    (file, text)
}

#[test]
fn mode_and_owner_stay_the_files() {
    let home = tempfile::tempdir().unwrap();
    let (file, text) = secret_settings(home.path());
    let m = std::fs::metadata(&file).unwrap();
    let owner = (m.uid(), m.gid());
    for args in [["install", "claude-code"], ["remove", "claude-code"]] {
        let f = agents(home.path(), &args);
        assert_eq!(f.code, Some(0), "{f:?}");
        let m = std::fs::metadata(&file).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o600, "{args:?}");
        assert_eq!((m.uid(), m.gid()), owner, "{args:?}");
    }
    assert_eq!(read(&file), text);
}

/// A run that dies while it writes its temporary file (here: at the
/// file-size limit, SIGXFSZ, which no process can clean up after, as
/// with kill -9). What it left has the target's mode and owner, not
/// the umask's and root's; the next run removes it, and only it.
#[test]
fn a_run_killed_mid_write_leaves_only_a_private_copy_and_the_next_removes_it() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let home = tempfile::tempdir().unwrap();
    let (file, text) = secret_settings(home.path());
    let dir = file.parent().unwrap().to_path_buf();
    let owner = std::fs::metadata(&file).unwrap().uid();
    let mut c = command(home.path(), &[], &["install", "claude-code"]);
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let fsize = libc::rlimit {
                rlim_cur: 16 * 1024,
                rlim_max: 16 * 1024,
            };
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &fsize);
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    let out = c.output().unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGXFSZ),
        "{out:?}: the write was not cut short"
    );
    assert_eq!(read(&file), text, "the settings changed");
    let left = leftovers(&dir);
    assert_eq!(left.len(), 1, "{left:?}");
    let name = &left[0];
    assert!(
        name.starts_with(".settings.json.tmux-wait-") && name.ends_with(".tmp"),
        "{name}"
    );
    let m = std::fs::metadata(dir.join(name)).unwrap();
    assert_eq!(
        m.mode() & 0o7777,
        0o600,
        "the copy was more open than the file"
    );
    assert_eq!(m.uid(), owner, "the copy was root's");
    assert_eq!(m.len(), 16 * 1024);
    // Others beside it: an earlier release's leftover of a dead process
    // goes, one of a live process and the user's own files stay.
    let dead = dir.join("settings.tmux-wait-999999999.tmp");
    let live = dir.join(format!(
        ".settings.json.tmux-wait-{}.tmp",
        std::process::id()
    ));
    let mine = dir.join("settings.json.tmux-wait-notes");
    for p in [&dead, &live, &mine] {
        write(p, "x");
    }
    let f = agents(home.path(), &["install", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(
        !dir.join(name).exists(),
        "the killed run's copy is still there"
    );
    assert!(!dead.exists());
    assert!(live.exists() && mine.exists());
    let f = agents(home.path(), &["remove", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(read(&file), text);
}
