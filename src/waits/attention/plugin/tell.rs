//! Telling a person that a pane needs them: the message on the clients,
//! the bell on their terminals, the desktop notification and the user's
//! hook command, as the plugin's options say.

use super::super::PaneReport;
use super::super::machine::Change;
use super::{ICON, option};
use crate::notify;
use crate::tmux::Socket;

/// The words of a notification: `tmux-wait ⚑ main:4 %4 asking: Proceed?
/// [y/N]`, `tmux-wait ⚑ main:2 %7 exited (make, exit 2)`.
pub(super) fn text(icon: &str, r: &PaneReport) -> String {
    let mut text = format!(
        "tmux-wait {icon} {}:{} {} {}",
        r.session, r.window, r.pane_id, r.state
    );
    if let Some(q) = r.question.as_ref().or(r.line.as_ref()) {
        text.push_str(": ");
        text.push_str(q);
        return text;
    }
    let mut why: Vec<String> = Vec::new();
    if let Some(cmd) = &r.command {
        why.push(cmd.clone());
    }
    if let Some(x) = r.exit_status {
        why.push(format!("exit {x}"));
    }
    if !why.is_empty() {
        text.push_str(&format!(" ({})", why.join(", ")));
    }
    text
}

pub(super) fn icon(socket: &Socket) -> String {
    match option(socket, ICON) {
        i if i.is_empty() => "⚑".to_owned(),
        i => i,
    }
}

/// A notification for a change, as the options say (the bell rings on
/// the clients' terminals: one written into the pane would be seen as the
/// pane's own bell).
pub(super) fn tell(socket: &Socket, opts: &notify::Options, r: &PaneReport, c: &Change) {
    let text = text(&icon(socket), r);
    let env = [
        ("TMUX_WAIT_PANE", r.pane_id.clone()),
        ("TMUX_WAIT_OUTCOME", "attention".to_owned()),
        ("TMUX_WAIT_LABEL", r.state.to_owned()),
        ("TMUX_WAIT_OK", "1".to_owned()),
        ("TMUX_WAIT_LINE", r.question.clone().unwrap_or_default()),
        (
            "TMUX_WAIT_EXIT_STATUS",
            c.status
                .exit_status
                .map(|s| s.to_string())
                .unwrap_or_default(),
        ),
        ("TMUX_WAIT_ID", String::new()),
        ("TMUX_WAIT_ELAPSED", String::new()),
        ("TMUX_WAIT_CHANNEL", String::new()),
    ];
    let mut o = opts.clone();
    o.bell = false;
    notify::tell(socket, &o, &text, "", &env);
    if opts.bell {
        for tty in socket
            .run([
                "list-clients",
                "-F",
                "#{?client_control_mode,,#{client_tty}}",
            ])
            .unwrap_or_default()
        {
            notify::ring_bell(&tty);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::machine::{State, Status, What};
    use super::*;

    fn report(state: State, question: Option<&str>, exit: Option<i32>) -> PaneReport {
        let s = Status {
            state,
            reason: "x",
            question: question.map(str::to_owned),
            command: Some("make".into()),
            exit_status: exit,
            agent: None,
            source: "kernel",
            since: 0.0,
        };
        let c = Change {
            what: What::State(state),
            status: s,
            line: None,
        };
        PaneReport::new("%40", "main", 4, &c)
    }

    #[test]
    fn the_words_of_a_notification() {
        assert_eq!(
            text("⚑", &report(State::Exited, None, Some(2))),
            "tmux-wait ⚑ main:4 %40 exited (make, exit 2)"
        );
        assert_eq!(
            text("⚑", &report(State::Asking, Some("Go? [y/N]"), None)),
            "tmux-wait ⚑ main:4 %40 asking: Go? [y/N]"
        );
    }
}
