//! What the kernel and tmux say of a pane at one moment: who reads its
//! terminal and how, the line under the cursor, its screen, and whether
//! its window wrote lately.

use super::*;

impl PaneWatch {
    /// What the kernel (or, without `/proc`, tmux) says of the terminal,
    /// with what the stream says of the cursor's line; true when `/proc`
    /// could not say this time (tmux's word stands in).
    pub(super) fn kernel_look(&self, ctx: &Ctx) -> (Look, bool) {
        let (pid, tty) = (self.pane.pane_pid, self.pane.pane_tty.as_str());
        let mut look = Look::default();
        let streamed = if let Source::Stream(f) = &self.source {
            let t = f.tracker();
            look.line = t.current_output();
            look.line_new = t.current_has_output();
            look.alt = t.alternate();
            look.editor_reading = t.line_editor_reading();
            true
        } else {
            false
        };
        if shell::proc_available() {
            let (reads, reader) = shell::reads(pid, tty);
            if reads != Reads::Unknown {
                look.reads = Some(reads);
                look.reader = reader;
                look.command = match reads {
                    Reads::Prompt => None,
                    Reads::Line { .. } | Reads::Keys { .. } => reader.and_then(shell::program_name),
                    _ => shell::foreground_command(pid).or_else(|| shell::program_name(pid)),
                };
                if !streamed {
                    cursor_line(ctx, &self.pane.pane_id, &mut look);
                }
                return (look, false);
            }
        }
        let reply = tmux_line(ctx, &self.pane.pane_id, "#{pane_current_command}");
        let shell_name = shell::program_name(pid).unwrap_or_default();
        look.shell_fg = (!reply.is_empty() && !shell_name.is_empty()).then(|| reply == shell_name);
        look.command = (!reply.is_empty()).then_some(reply);
        if !streamed {
            cursor_line(ctx, &self.pane.pane_id, &mut look);
        }
        (look, shell::proc_available())
    }
}

/// A command the shell has forked and not yet started: in the foreground,
/// under the shell's own name, younger than a few ticks.
pub(super) fn just_forked(pane: &PaneInfo, look: &Look) -> bool {
    if look.reads != Some(Reads::Nothing) {
        return false;
    }
    let Some(fg) = crate::sys::procfs::foreground_group(pane.pane_pid) else {
        return false;
    };
    fg != pane.pane_pid
        && look.command.is_some()
        && look.command == shell::program_name(pane.pane_pid)
        && crate::sys::procfs::age(fg).is_some_and(|a| a < Duration::from_millis(50))
}

pub(super) fn working(command: Option<String>) -> Found {
    Found::new(State::Working, "running", command)
}

/// Without a stream: the cursor's line and the screen mode from tmux.
fn cursor_line(ctx: &Ctx, pane: &str, look: &mut Look) {
    let reply = tmux_line(ctx, pane, "#{cursor_y}\t#{alternate_on}");
    let mut f = reply.split('\t');
    let y = f.next().unwrap_or("0").to_owned();
    look.alt = f.next() == Some("1");
    if let Ok(rows) = ctx
        .socket
        .run(["capture-pane", "-p", "-t", pane, "-S", &y, "-E", &y])
    {
        look.line = rows.join("").trim_end().to_owned();
    }
}

fn tmux_line(ctx: &Ctx, pane: &str, format: &str) -> String {
    ctx.socket
        .run(["display-message", "-p", "-t", pane, format])
        .ok()
        .and_then(|l| l.into_iter().next())
        .unwrap_or_default()
}

/// tmux saw output in the pane's window a moment ago (it keeps the time
/// to the second).
pub(super) fn window_wrote_lately(ctx: &Ctx, pane: &PaneInfo) -> bool {
    let t = tmux_line(ctx, &pane.pane_id, "#{window_activity}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    t.trim()
        .parse::<u64>()
        .is_ok_and(|t| now.saturating_sub(t) < super::super::judge::DISPLAY_QUIET.as_secs() + 1)
}

/// The visible screen, row by row.
pub(super) fn screen(ctx: &Ctx, pane: &str) -> Vec<String> {
    ctx.socket
        .run(["capture-pane", "-p", "-t", pane])
        .unwrap_or_default()
}
