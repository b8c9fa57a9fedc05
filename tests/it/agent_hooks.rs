//! tmux-wait's hook in coding agents' settings, and what the hook says:
//! `agents install` appends it beside the user's own hooks (once), `agents
//! remove` takes exactly it away again, a settings file that is not JSON
//! is left as it is; and a hook's event reaches a watch of the agent's
//! pane through the pane's own stream. (The real agents, driven through
//! their hooks, are the conformance kit's: `agents.rs`.)

use crate::common::*;
use serde_json::{Value, json};

fn agents(home: &std::path::Path, args: &[&str]) -> Finished {
    let mut c = std::process::Command::new(BIN);
    c.arg("agents").args(args).env("HOME", home);
    for v in [
        "CLAUDE_CONFIG_DIR",
        "QWEN_HOME",
        "GEMINI_CLI_HOME",
        "CODEX_HOME",
        "XDG_STATE_HOME",
    ] {
        c.env_remove(v);
    }
    run_bounded(c)
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn install_appends_beside_the_users_hooks_and_remove_takes_only_ours() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mine = json!({
        "model": "opus",
        "permissions": {"defaultMode": "default"},
        "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-me done"}]}]}
    });
    std::fs::write(&file, serde_json::to_string_pretty(&mine).unwrap()).unwrap();
    let f = agents(home.path(), &["install", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(f.stdout.contains("hook added for 6 events"), "{}", f.stdout);
    let v = read(&file);
    assert_eq!(v["model"], "opus");
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "{v}");
    assert_eq!(
        stop[0]["hooks"][0]["command"], "notify-me done",
        "the user's first"
    );
    assert!(
        stop[1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" agent-event --agent claude-code")
    );
    for event in [
        "PermissionRequest",
        "Notification",
        "UserPromptSubmit",
        "PostToolUse",
    ] {
        assert_eq!(v["hooks"][event].as_array().unwrap().len(), 1, "{event}");
    }
    // Again: nothing changes.
    let before = std::fs::read_to_string(&file).unwrap();
    let f = agents(home.path(), &["install", "claude-code"]);
    assert!(f.stdout.contains("there already"), "{}", f.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    // Removed: the user's settings as they were.
    let f = agents(home.path(), &["remove", "claude-code"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(read(&file), mine);
    // Gemini CLI's and Codex's files, made where there were none.
    let f = agents(home.path(), &["install", "gemini-cli", "codex"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    let g = read(&home.path().join(".gemini/settings.json"));
    assert_eq!(g["hooks"]["Notification"][0]["matcher"], "*");
    assert_eq!(
        g["hooks"]["Notification"][0]["hooks"][0]["name"],
        "tmux-wait"
    );
    assert!(
        f.stdout.contains("Codex asks you to trust new hooks"),
        "{}",
        f.stdout
    );
    let f = agents(home.path(), &["remove", "gemini-cli", "codex"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(read(&home.path().join(".gemini/settings.json")), json!({}));
}

#[test]
fn bad_settings_and_unknown_agents_are_one_line_errors() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".qwen/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{ \"hooks\": ").unwrap();
    let f = agents(home.path(), &["install", "qwen-code"]);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert!(f.stderr.contains("is not valid JSON"), "{}", f.stderr);
    assert_eq!(f.stderr.trim().lines().count(), 1, "{}", f.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ \"hooks\": ");
    let f = agents(home.path(), &["install", "aider"]);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert!(
        f.stderr.contains("no hooks for agent 'aider'"),
        "{}",
        f.stderr
    );
    let f = agents(home.path(), &["install"]);
    assert_eq!(f.code, Some(2), "{f:?}");
}

/// A program of the user's own, which a profile of the user's names: it
/// draws a busy line, then its hook says it asks (as an agent's
/// PermissionRequest hook does, a moment before the question is drawn).
const AGENT: &str = r#"
import json, subprocess, sys, termios, time, tty
fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    sys.stdout.write("thinking... (esc to interrupt)\r\n"); sys.stdout.flush()
    time.sleep(1.5)
    ev = {"hook_event_name": "PermissionRequest", "tool_name": "Bash",
          "tool_input": {"command": "touch x; echo done"}}
    subprocess.run([sys.argv[1], "agent-event", "--agent", "my-agent"],
                   input=json.dumps(ev).encode())
    sys.stdin.read(1)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, old)
"#;

#[test]
fn a_hooks_event_reaches_the_watch_of_its_pane() {
    let s = TestServer::new();
    let script = s.dir().join("agentsim.py");
    std::fs::write(&script, AGENT).unwrap();
    let profiles = s.dir().join("mine.json");
    std::fs::write(
        &profiles,
        r#"{"profiles":[{"name":"my-agent","agent":"My agent","version":"1",
            "processes":["agentsim.py"],"working":["esc to interrupt"],"asking":["Proceed?"]}]}"#,
    )
    .unwrap();
    let p = profiles.display().to_string();
    let w = s.start_wait(&[
        "any",
        "-t",
        &s.pane,
        "--until",
        "asking",
        "--profiles",
        &p,
        "--json",
        "--timeout",
        "15",
    ]);
    s.type_line(&s.pane, &format!("python3 '{}' '{BIN}'", script.display()));
    let f = w.finish(&s);
    let v = f.json();
    assert_eq!(
        (
            &v["state"],
            &v["reason"],
            &v["source"],
            &v["agent"],
            &v["question"]
        ),
        (
            &json!("asking"),
            &json!("agent_question"),
            &json!("hook"),
            &json!("my-agent"),
            &json!("Bash: touch x, echo done")
        ),
        "{v}"
    );
    s.tmux(&["send-keys", "-t", &s.pane, "x"]);
    s.wait_for_prompt(&s.pane);
}
