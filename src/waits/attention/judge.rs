//! What a look at a pane means ([`judge`]): the kernel's word on who
//! reads its terminal, the stream's on the line under the cursor and on
//! redraws, and, for a coding agent, its own signals in order of trust:
//! its hooks, its title, its screen. Pure: the looks are taken in `pane`
//! and `snapshot`.

use super::machine::{Found, State};
use super::profiles::{Profile, Profiles, Says};
use super::unknown;
use crate::pane::shell::{self, Reads};
use regex::Regex;
use std::time::Duration;

/// A pane looked at, at one moment.
#[derive(Clone, Debug, Default)]
pub struct Look {
    pub reads: Option<Reads>,
    /// The program reading the terminal, else the foreground's.
    pub command: Option<String>,
    /// The process that reads the terminal, when the kernel says.
    pub reader: Option<u32>,
    /// The line under the cursor, without typed echo.
    pub line: String,
    /// That line holds output a program wrote (not only a shell's prompt
    /// and typed echo): where the stream lags the kernel, a question the
    /// kernel sees being read has not arrived yet when it does not.
    pub line_new: bool,
    pub alt: bool,
    /// The stream says a shell's line editor reads (bracketed paste on).
    pub editor_reading: bool,
    /// How long the pane has written nothing.
    pub still: Duration,
    /// The agent's working text went by in the stream lately.
    pub busy: bool,
    /// Without `/proc`: the shell is in the foreground (tmux says).
    pub shell_fg: Option<bool>,
    /// The key reader redraws on its own: its output keeps coming, in
    /// bursts a timer apart (see [`DISPLAY_QUIET`]).
    pub redrawing: bool,
    /// The coding agent whose processes these are (its profile's name).
    pub agent: Option<String>,
    /// The terminal's title, and how long ago it was last set.
    pub title: Option<String>,
    pub title_age: Duration,
    /// What the agent's own hook said last, and how long ago.
    pub hook: Option<(Says, Duration)>,
    /// How long the agent's process has run.
    pub agent_age: Duration,
    /// A program no profile names that looks like a coding agent: its
    /// package or executable (see `unknown`).
    pub program: Option<String>,
    /// The screen may be looked at though the pane is not still (a
    /// question may be drawn under a spinner that keeps turning): the
    /// last such look was long enough ago.
    pub moving_screen: bool,
}

/// What a look says.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Is(Found),
    /// A program reads key by key and wrote lately: decide once it has
    /// been still for `STILL`.
    NotStill,
    /// Look again once the pane has been still this long (a REPL's prompt
    /// may come in pieces: `>` then `>> `).
    Settle(Duration),
    /// Decide from the screen.
    NeedScreen,
    /// Look again in this long (a coding agent starting, its screen not
    /// drawn yet).
    Wait(Duration),
}

/// A REPL's prompt counts once the pane has been still this long: it may
/// be written in pieces.
pub const PROMPT_SETTLE: Duration = Duration::from_millis(15);

/// A live display (top, htop) is one while it writes at least this often:
/// a program that waits for keys with a timer and has written nothing for
/// this long is judged as one that waits for a key, from its screen.
/// Longer than the redraws of the displays people run (top 1 s, htop
/// 1.5 s, watch 1 s by default).
pub const DISPLAY_QUIET: Duration = Duration::from_millis(2500);

/// What `look` says, with the still screen's rows when asked for.
pub fn judge(
    look: &Look,
    screen: Option<&[String]>,
    profiles: &Profiles,
    prompt_re: &Regex,
    still_for: Duration,
) -> Verdict {
    let cmd = look.command.clone();
    match look.reads {
        Some(Reads::Prompt) => Verdict::Is(Found::new(State::Prompt, "at_prompt", None)),
        Some(Reads::Line { hidden }) => {
            let reason = if hidden {
                "reads_password"
            } else {
                "reads_line"
            };
            let q = if look.line.trim().is_empty() {
                screen.and_then(last_row).unwrap_or_default()
            } else {
                look.line.clone()
            };
            Verdict::Is(Found::asking(reason, &q, cmd))
        }
        Some(Reads::Keys { timed }) => {
            // A nested shell, or one at the end of an ssh, at its prompt:
            // its line editor says so in the stream (a program that only
            // has a shell's name, a script starting up, does not).
            let shell = cmd
                .as_deref()
                .is_some_and(|c| shell::is_shell(c) || shell::REMOTE.contains(&c));
            if shell && look.editor_reading && !look.alt {
                return Verdict::Is(Found::new(State::Prompt, "at_prompt", None));
            }
            if let Some(p) = look.agent.as_deref().and_then(|n| profiles.get(n)) {
                return agent(look, screen, p, still_for, cmd);
            }
            if let Some(id) = look.program.as_deref() {
                return unknown_agent(look, screen, id, still_for, cmd);
            }
            let line = look.line.trim_end();
            if !look.alt && !line.trim().is_empty() && prompt_re.is_match(line.trim()) {
                if look.still < PROMPT_SETTLE {
                    return Verdict::Settle(PROMPT_SETTLE);
                }
                return Verdict::Is(Found {
                    source: "screen",
                    ..Found::asking("repl_prompt", line, cmd)
                });
            }
            // A live display: it redraws on its own, on a timer (its wait
            // for a key ends by itself, and it wrote a moment ago), or in
            // bursts that keep coming.
            if look.redrawing || (timed && look.still < DISPLAY_QUIET) {
                return Verdict::Is(Found {
                    source: "stream",
                    ..Found::new(State::Working, "redrawing", cmd)
                });
            }
            if look.still < still_for {
                return Verdict::NotStill;
            }
            let Some(rows) = screen else {
                return Verdict::NeedScreen;
            };
            Verdict::Is(Found {
                source: "screen",
                ..Found::asking("reads_keys", &last_row(rows).unwrap_or_default(), cmd)
            })
        }
        // A coding agent at work on its own (drawing, thinking): its own
        // signals still say which state it is in.
        Some(Reads::Nothing) => match look.agent.as_deref().and_then(|n| profiles.get(n)) {
            Some(p) => agent(look, screen, p, still_for, cmd),
            None => match look.program.as_deref() {
                Some(id) => unknown_agent(look, screen, id, still_for, cmd),
                None => Verdict::Is(Found::new(State::Working, "running", cmd)),
            },
        },
        // The kernel cannot say this time (processes coming and going), or
        // there is no /proc: a coding agent by its own signals; else what
        // tmux and the stream say.
        Some(Reads::Unknown) | None
            if let Some(p) = look.agent.as_deref().and_then(|n| profiles.get(n)) =>
        {
            agent(look, screen, p, still_for, cmd)
        }
        Some(Reads::Unknown) | None => {
            if look.shell_fg == Some(true) {
                Verdict::Is(Found::new(State::Prompt, "at_prompt", None))
            } else if !look.line.trim().is_empty() && prompt_re.is_match(look.line.trim()) {
                Verdict::Is(Found::asking("repl_prompt", &look.line, cmd))
            } else {
                Verdict::Is(Found::new(State::Working, "running", cmd))
            }
        }
    }
}

fn last_row(rows: &[String]) -> Option<String> {
    rows.iter()
        .rev()
        .map(|r| r.trim())
        .find(|r| !r.is_empty())
        .map(str::to_owned)
}

/// What an agent's hook said stands this long against its title and
/// screen: the hook comes a moment before the screen shows it (Claude
/// Code's permission hook 26 ms before its question), while the last
/// frames of what came before may still be drawn.
pub const HOOK_HOLD: Duration = Duration::from_secs(1);
/// A title that says the agent asks comes a moment before the question is
/// drawn (Codex: 1 ms; Qwen Code, on a busy machine, over 200 ms): the
/// screen is looked at again for its words until this long after the title
/// was set (as long as a screen alone takes to be judged).
pub const TITLE_SETTLE: Duration = Duration::from_millis(500);
/// An agent that has run less than this and whose screen says nothing its
/// profile knows is starting (the shell's command line still under its
/// cursor): no state is reported from that screen.
pub const AGENT_START: Duration = Duration::from_secs(5);

/// A coding agent's pane (its profile `p`): its own signals in order of
/// trust (its hook, lately; its title; its busy line in the stream; its
/// still screen), else what a hook said before, else a program that waits
/// for keys.
fn agent(
    look: &Look,
    screen: Option<&[String]>,
    p: &Profile,
    still_for: Duration,
    cmd: Option<String>,
) -> Verdict {
    let is = |says: &Says, source: &'static str| {
        let f = match says {
            Says::Working => Found::new(State::Working, "agent_working", cmd.clone()),
            Says::Asking(q) => Found::asking("agent_question", q, cmd.clone()),
            // (A footer or status row is no question.)
            Says::Idle(q) if unknown::status_row(q) => Found::asking("agent_idle", "", cmd.clone()),
            Says::Idle(q) => Found::asking("agent_idle", q, cmd.clone()),
        };
        Verdict::Is(Found {
            agent: Some(p.name.clone()),
            source,
            transcript: p.inline(),
            ..f
        })
    };
    if let Some((says, age)) = &look.hook
        && *age < HOOK_HOLD
    {
        return is(says, "hook");
    }
    // A question the hook put in the agent's own words keeps them while
    // its screen shows it (no second report for the same question).
    let hooks_words = |says: Says, source: &'static str| match (&says, &look.hook) {
        (Says::Asking(_), Some((h @ Says::Asking(w), _))) if !w.is_empty() => is(h, "hook"),
        _ => is(&says, source),
    };
    match look.title.as_deref().and_then(|t| p.title(t)) {
        Some(Says::Asking(_)) => {
            // Its words are the screen's question, once drawn.
            let Some(rows) = screen else {
                return Verdict::NeedScreen;
            };
            return match p.screen(rows) {
                Some(q @ Says::Asking(_)) => hooks_words(q, "title"),
                // (Looked at again as the screen is drawn, or then.)
                _ if look.title_age < TITLE_SETTLE => Verdict::Wait(TITLE_SETTLE - look.title_age),
                _ => hooks_words(Says::Asking(String::new()), "title"),
            };
        }
        Some(Says::Idle(_)) => {
            // Ready, says the title; a dialog on the screen says otherwise
            // (a first run's trust and key screens keep the title idle).
            let Some(rows) = screen else {
                return Verdict::NeedScreen;
            };
            return match p.screen(rows) {
                Some(q @ Says::Asking(_)) => hooks_words(q, "screen"),
                Some(i @ Says::Idle(_)) => is(&i, "title"),
                // (Starting: the title is set before its first screen,
                // which may be a dialog, is drawn.)
                _ if look.agent_age < AGENT_START => Verdict::Wait(Duration::from_millis(250)),
                _ => is(&Says::Idle(String::new()), "title"),
            };
        }
        Some(says) => return is(&says, "title"),
        None => {}
    }
    // A question drawn under a spinner that keeps turning (pi, Cline):
    // looked for on the screen now and then while it moves.
    let moving = look.busy || look.still < still_for;
    if moving && p.questions_win() && look.moving_screen {
        let Some(rows) = screen else {
            return Verdict::NeedScreen;
        };
        if let Some(q @ Says::Asking(_)) = p.screen_at(rows, &look.line) {
            return hooks_words(q, "screen");
        }
    }
    if look.busy {
        return is(&Says::Working, "screen");
    }
    if look.still < still_for {
        return Verdict::NotStill;
    }
    let Some(rows) = screen else {
        return Verdict::NeedScreen;
    };
    match (p.screen_at(rows, &look.line), &look.hook) {
        (Some(says), _) => hooks_words(says, "screen"),
        (None, Some((says, _))) => is(says, "hook"),
        // Starting: its screen not drawn yet (OpenCode reads its terminal
        // for seconds before it draws anything).
        (None, None) if look.agent_age < AGENT_START || last_row(rows).is_none() => {
            Verdict::Wait(Duration::from_millis(250))
        }
        // Nothing it says, and nobody reads its terminal: at work (aider
        // streaming an answer draws no busy line).
        (None, None) if look.reads == Some(Reads::Nothing) => Verdict::Is(Found {
            agent: Some(p.name.clone()),
            source: "kernel",
            ..Found::new(State::Working, "agent_working", cmd)
        }),
        (None, None) => Verdict::Is(Found {
            agent: Some(p.name.clone()),
            source: "screen",
            ..Found::asking("reads_keys", &last_row(rows).unwrap_or_default(), cmd)
        }),
    }
}

/// A program no profile names that looks like a coding agent (`id`, its
/// package or executable): the rules for one without a profile (see
/// `unknown`), its signals in the order they are trusted: a question's
/// words (also under a spinner that keeps turning), a busy row, an empty
/// input box; else a program that waits for keys, whose footer and status
/// rows are never its question.
fn unknown_agent(
    look: &Look,
    screen: Option<&[String]>,
    id: &str,
    still_for: Duration,
    cmd: Option<String>,
) -> Verdict {
    let named = |f: Found, source: &'static str| {
        Verdict::Is(Found {
            agent: Some(id.to_owned()),
            source,
            ..f
        })
    };
    let says = |s: Says| match s {
        Says::Working => named(
            Found::new(State::Working, "agent_working", cmd.clone()),
            "screen",
        ),
        Says::Asking(q) => named(Found::asking("agent_question", &q, cmd.clone()), "screen"),
        Says::Idle(_) => named(Found::asking("agent_idle", "", cmd.clone()), "screen"),
    };
    let moving = look.busy || look.still < still_for;
    if moving {
        if look.moving_screen {
            let Some(rows) = screen else {
                return Verdict::NeedScreen;
            };
            if let Some(q @ Says::Asking(_)) = unknown::screen(rows) {
                return says(q);
            }
        }
        if look.busy {
            return says(Says::Working);
        }
        return Verdict::NotStill;
    }
    let Some(rows) = screen else {
        return Verdict::NeedScreen;
    };
    match unknown::screen(rows) {
        Some(s) => says(s),
        None if look.agent_age < AGENT_START || last_row(rows).is_none() => {
            Verdict::Wait(Duration::from_millis(250))
        }
        // Nobody reads its terminal and it says nothing: at work.
        None if look.reads == Some(Reads::Nothing) => {
            Verdict::Is(Found::new(State::Working, "running", cmd))
        }
        None => named(
            Found::asking(
                "reads_keys",
                &unknown::question_row(rows).unwrap_or_default(),
                cmd.clone(),
            ),
            "screen",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waits::attention::pane::STILL;

    fn re() -> Regex {
        Regex::new(crate::pane::shell::DEFAULT_PROMPTS).unwrap()
    }

    fn look(reads: Reads, line: &str, command: &str) -> Look {
        Look {
            reads: Some(reads),
            command: Some(command.into()),
            line: line.into(),
            still: Duration::from_secs(1),
            ..Look::default()
        }
    }

    fn found(v: Verdict) -> Found {
        match v {
            Verdict::Is(f) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_a_look_says() {
        let p = Profiles::shipped();
        let j = |l: &Look, s: Option<&[String]>| judge(l, s, &p, &re(), STILL);
        let f = found(j(
            &look(Reads::Line { hidden: false }, "Proceed? [y/N]", "python3"),
            None,
        ));
        assert_eq!(
            (f.state, f.reason, f.question.as_deref()),
            (State::Asking, "reads_line", Some("Proceed? [y/N]"))
        );
        let f = found(j(
            &look(Reads::Line { hidden: true }, "Password:", "sudo"),
            None,
        ));
        assert_eq!(f.reason, "reads_password");
        let f = found(j(
            &look(Reads::Keys { timed: false }, ">>>", "python3"),
            None,
        ));
        assert_eq!((f.state, f.reason), (State::Asking, "repl_prompt"));
        let mut piece = look(Reads::Keys { timed: false }, ">", "python3");
        piece.still = Duration::from_millis(2);
        assert_eq!(j(&piece, None), Verdict::Settle(PROMPT_SETTLE));
        // A nested shell's line editor is a prompt, not a question; a
        // process that only has a shell's name is not.
        let mut nested = look(Reads::Keys { timed: false }, "$", "bash");
        nested.editor_reading = true;
        assert_eq!(found(j(&nested, None)).state, State::Prompt);
        let mut script = look(Reads::Keys { timed: false }, "", "bash");
        script.still = Duration::ZERO;
        assert_eq!(j(&script, None), Verdict::NotStill);
        // Key by key, not at a REPL prompt: wait for stillness, then the
        // screen decides.
        let mut l = look(Reads::Keys { timed: false }, "", "less");
        l.still = Duration::from_millis(100);
        assert_eq!(j(&l, None), Verdict::NotStill);
        l.still = STILL;
        assert_eq!(j(&l, None), Verdict::NeedScreen);
        let rows: Vec<String> = vec!["line 1".into(), ":".into(), "".into()];
        let f = found(j(&l, Some(&rows)));
        assert_eq!((f.reason, f.question.as_deref()), ("reads_keys", Some(":")));
        let f = found(j(&look(Reads::Nothing, "", "sleep"), None));
        assert_eq!(
            (f.state, f.command.as_deref()),
            (State::Working, Some("sleep"))
        );
        // top polls its terminal a second at a time: while it keeps
        // writing it is a live display; still for long, the screen says.
        let mut top = look(Reads::Keys { timed: true }, "", "top");
        top.still = Duration::from_millis(900);
        let f = found(j(&top, None));
        assert_eq!((f.state, f.reason), (State::Working, "redrawing"));
        top.still = DISPLAY_QUIET;
        assert_eq!(j(&top, None), Verdict::NeedScreen);
        // A key waiter with no timer whose output keeps coming in bursts
        // (top at the end of an ssh): redrawing too.
        l.still = Duration::from_millis(600);
        l.redrawing = true;
        assert_eq!(found(j(&l, None)).reason, "redrawing");
        // An agent's busy text in the stream: working, still or not.
        let mut l = look(Reads::Keys { timed: false }, "", "node");
        l.agent = Some("claude-code".into());
        l.busy = true;
        l.still = Duration::ZERO;
        let f = found(j(&l, None));
        assert_eq!((f.reason, f.source), ("agent_working", "screen"));
    }

    fn agent_look(agent: &str) -> Look {
        Look {
            agent: Some(agent.into()),
            title_age: Duration::MAX,
            ..look(Reads::Keys { timed: true }, "", "node")
        }
    }

    fn rows(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    /// An agent is judged by its own signals, most trusted first: its
    /// hook (for a while), its title, its screen; a hook stands where the
    /// screen says nothing.
    #[test]
    fn an_agent_by_its_hook_its_title_and_its_screen() {
        let p = Profiles::shipped();
        let j = |l: &Look, s: Option<&[String]>| judge(l, s, &p, &re(), STILL);
        // Codex's title while it streams its answer (no working row).
        let mut l = agent_look("codex");
        l.title = Some("⠋ hello there | proj".into());
        l.still = Duration::ZERO;
        let f = found(j(&l, None));
        assert_eq!(
            (f.state, f.source, f.agent.as_deref()),
            (State::Working, "title", Some("codex"))
        );
        // Its title asks: the question is the screen's, once drawn.
        l.title = Some("[ ! ] Action Required | hello there | proj".into());
        assert_eq!(j(&l, None), Verdict::NeedScreen);
        let asking = rows(
            "• Running touch x\n\n  Would you like to run the following command?\n\n  $ touch x\n\n› 1. Yes, proceed (y)\n  Press enter to confirm or esc to cancel",
        );
        let f = found(j(&l, Some(&asking)));
        assert_eq!(
            (f.reason, f.question.as_deref(), f.source),
            (
                "agent_question",
                Some("Would you like to run the following command?"),
                "title"
            )
        );
        l.title_age = Duration::from_millis(5);
        assert_eq!(
            j(&l, Some(&rows("› Ask Codex to do anything"))),
            Verdict::Wait(TITLE_SETTLE - Duration::from_millis(5))
        );
        l.title_age = TITLE_SETTLE;
        let f = found(j(&l, Some(&rows("› Ask Codex to do anything"))));
        assert_eq!((f.reason, f.question), ("agent_question", None));
        // A hook said it asks: that stands, whatever the screen still shows.
        let mut l = agent_look("claude-code");
        l.hook = Some((
            Says::Asking("Bash: touch x".into()),
            Duration::from_millis(20),
        ));
        let busy = rows("✻ Levitating… (3s · ↓ 5 tokens)\n  ⏸ manual mode on · esc to interrupt");
        let f = found(j(&l, Some(&busy)));
        assert_eq!(
            (f.reason, f.question.as_deref(), f.source),
            ("agent_question", Some("Bash: touch x"), "hook")
        );
        // Later the screen decides where it says something.
        l.hook = Some((Says::Asking("Bash: touch x".into()), HOOK_HOLD));
        let f = found(j(&l, Some(&busy)));
        assert_eq!((f.state, f.source), (State::Working, "screen"));
        // One agent's words never judge another's screen: Gemini's "esc to
        // cancel" on Claude Code's trust screen.
        let trust = rows(
            " Quick safety check: Is this a project you created or one you trust? (Like your own code)\n\n ❯ No, exit\n   Yes, I trust this folder\n\n Enter to confirm · Esc to cancel",
        );
        let f = found(j(&agent_look("claude-code"), Some(&trust)));
        assert_eq!((f.state, f.reason), (State::Asking, "agent_question"));
        assert!(f.question.unwrap().starts_with("Quick safety check:"));
        // Gemini CLI's title says Ready while its first run's trust
        // question is on the screen: the screen's question.
        let mut l = agent_look("gemini-cli");
        l.title = Some("◇  Ready (proj)".into());
        assert_eq!(j(&l, None), Verdict::NeedScreen);
        let trust =
            rows("│ Do you trust the files in this folder? │\n│ ● 1. Trust folder (proj) │");
        let f = found(j(&l, Some(&trust)));
        assert_eq!((f.reason, f.source), ("agent_question", "screen"));
        // Its process drawing (the kernel sees it run) is no news either
        // way: still drawing is not still.
        let mut l = agent_look("claude-code");
        l.reads = Some(Reads::Nothing);
        l.still = Duration::from_millis(30);
        assert_eq!(j(&l, None), Verdict::NotStill);
        // An agent's blank screen, however long it has run, is not drawn
        // yet (OpenCode's first seconds): no question.
        let mut l = agent_look("opencode");
        l.agent_age = AGENT_START * 2;
        l.still = STILL;
        let blank = rows("\n\n");
        assert_eq!(
            j(&l, Some(&blank)),
            Verdict::Wait(Duration::from_millis(250))
        );
        // A still screen of a program no profile knows: the general rule.
        let mut l = look(Reads::Keys { timed: false }, "", "node");
        l.still = STILL;
        let f = found(j(
            &l,
            Some(&rows("Allow execution of: 'touch'?\n› 1. Yes, allow once")),
        ));
        assert_eq!((f.reason, f.agent), ("reads_keys", None));
    }
}
