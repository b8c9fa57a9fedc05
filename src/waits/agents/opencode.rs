//! OpenCode's own signals: a plugin of tmux-wait's. OpenCode (checked on
//! 1.18.33) loads every file in its config's `plugin/` folder and hands
//! each plugin its events: `session.status` (`busy`, `idle`),
//! `permission.asked` (with the permission and its command),
//! `permission.replied`, `session.idle`. Ours passes those to `tmux-wait
//! agent-event --agent opencode`, as Claude Code's hooks do, which marks
//! them in the pane's stream. `tmux-wait agents install opencode` writes
//! the plugin (its own file: no settings of the user's are edited) and
//! `remove` deletes it when it is ours.

use crate::error::{Error, Kind, Result};
use std::path::{Path, PathBuf};

/// The first line of our plugin: what tells it from the user's files.
const MARK: &str = "// tmux-wait: says in its tmux pane what OpenCode does";

/// The plugin, with `{BIN}` for tmux-wait's path (as a JSON string).
const PLUGIN: &str = r#"// tmux-wait: says in its tmux pane what OpenCode does
// (written by `tmux-wait agents install opencode`; `tmux-wait agents remove
// opencode` removes it).
import { spawn } from "node:child_process";

const EVENTS = ["session.status", "session.idle", "permission.asked", "permission.replied"];

export const TmuxWait = async () => ({
  event: async ({ event }) => {
    if (!process.env.TMUX || !EVENTS.includes(event.type)) return;
    try {
      const p = spawn({BIN}, ["agent-event", "--agent", "opencode"], {
        stdio: ["pipe", "ignore", "ignore"],
      });
      p.on("error", () => {});
      p.stdin.on("error", () => {});
      p.stdin.end(JSON.stringify(event));
    } catch {}
  },
});
"#;

/// Where OpenCode looks for plugins: `$XDG_CONFIG_HOME/opencode/plugin`,
/// else `~/.config/opencode/plugin`.
fn plugin_file() -> Result<PathBuf> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".config"))
            .ok_or_else(|| Error::new(Kind::Usage, "HOME is not set"))?,
    };
    Ok(config.join("opencode/plugin/tmux-wait.js"))
}

/// The plugin's text for this tmux-wait.
pub fn plugin(exe: &Path) -> String {
    let bin = serde_json::to_string(&exe.display().to_string()).unwrap_or_default();
    PLUGIN.replace("{BIN}", &bin)
}

/// Write our plugin (again, for this tmux-wait); a file of that name that
/// is not ours is left alone.
pub fn install(exe: &Path) -> Result<String> {
    let path = plugin_file()?;
    if let Ok(old) = std::fs::read_to_string(&path)
        && !old.starts_with(MARK)
    {
        return Err(Error::new(
            Kind::Usage,
            format!("{}: not tmux-wait's plugin; left as it is", path.display()),
        ));
    }
    let io = |what: &str, e| Error::io(&format!("{what} {}", path.display()), e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io("cannot make the folder of", e))?;
    }
    std::fs::write(&path, plugin(exe)).map_err(|e| io("cannot write", e))?;
    Ok(format!(
        "{}: tmux-wait's plugin (OpenCode loads it when it starts)",
        path.display()
    ))
}

/// Delete our plugin, if it is there and ours.
pub fn remove() -> Result<String> {
    let path = plugin_file()?;
    match std::fs::read_to_string(&path) {
        Err(_) => Ok(format!(
            "{}: no such file; nothing to remove",
            path.display()
        )),
        Ok(t) if !t.starts_with(MARK) => Err(Error::new(
            Kind::Usage,
            format!("{}: not tmux-wait's plugin; left as it is", path.display()),
        )),
        Ok(_) => {
            std::fs::remove_file(&path)
                .map_err(|e| Error::io(&format!("cannot remove {}", path.display()), e))?;
            Ok(format!("{}: tmux-wait's plugin removed", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_names_this_tmux_wait_as_a_string() {
        let p = plugin(Path::new("/opt/my \"tw\"/tmux-wait"));
        assert!(p.starts_with(MARK));
        assert!(p.contains(r#"spawn("/opt/my \"tw\"/tmux-wait", ["agent-event""#));
    }
}
