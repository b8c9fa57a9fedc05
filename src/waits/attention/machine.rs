//! One pane's state, and when a new judgement of it (see `judge`) is a
//! change worth reporting ([`Machine`]). Pure: the looks are taken in
//! `pane`.

use serde::Serialize;

/// A pane's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// A command runs.
    Working,
    /// The shell is back at its prompt.
    Prompt,
    /// A program waits for the person: it reads a line or keys at the
    /// terminal, or a full-screen agent shows a question.
    Asking,
    /// A command runs but wrote nothing for `--quiet-after`.
    Quiet,
    /// The pane's program ended, or the pane closed.
    Exited,
}

impl State {
    pub const ALL: [State; 5] = [
        State::Working,
        State::Prompt,
        State::Asking,
        State::Quiet,
        State::Exited,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Working => "working",
            State::Prompt => "prompt",
            State::Asking => "asking",
            State::Quiet => "quiet",
            State::Exited => "exited",
        }
    }

    /// The states that need someone.
    pub fn needs_someone(self) -> bool {
        matches!(self, State::Prompt | State::Asking | State::Exited)
    }
}

/// What happened: a pane changed state, or an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum What {
    State(State),
    /// The pane's program rang the bell.
    Bell,
    /// A `--pattern` matched new output.
    Text,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::State(s) => s.as_str(),
            What::Bell => "bell",
            What::Text => "text",
        }
    }

    /// A state or event by its name (`as_str`'s words).
    pub fn of_name(s: &str) -> Option<What> {
        Some(match s {
            "working" => What::State(State::Working),
            "prompt" => What::State(State::Prompt),
            "asking" => What::State(State::Asking),
            "quiet" => What::State(State::Quiet),
            "exited" => What::State(State::Exited),
            "bell" => What::Bell,
            "text" => What::Text,
            _ => return None,
        })
    }
}

/// The states and events a wait returns on (`--until`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Until(u8);

impl Until {
    fn bit(w: What) -> u8 {
        match w {
            What::State(State::Working) => 1,
            What::State(State::Prompt) => 2,
            What::State(State::Asking) => 4,
            What::State(State::Quiet) => 8,
            What::State(State::Exited) => 16,
            What::Bell => 32,
            What::Text => 64,
        }
    }

    /// "Needs someone": prompt, asking, exited, bell.
    pub fn needs_someone() -> Until {
        Until(2 | 4 | 16 | 32)
    }

    /// Every state and event.
    pub fn everything() -> Until {
        Until(127)
    }

    pub fn with(self, w: What) -> Until {
        Until(self.0 | Until::bit(w))
    }

    pub fn has(self, w: What) -> bool {
        self.0 & Until::bit(w) != 0
    }

    /// `prompt,asking,...`: every word a state or an event.
    pub fn parse(s: &str) -> Result<Until, String> {
        let mut u = Until(0);
        for word in s.split(',').map(str::trim) {
            let w = What::of_name(word).ok_or_else(|| {
                format!(
                    "--until: '{}' is not a state or event (working, prompt, asking, quiet, exited, bell, text)",
                    word.escape_debug()
                )
            })?;
            u = u.with(w);
        }
        Ok(u)
    }
}

/// A pane's state as reported, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    pub state: State,
    /// Why, in a word: `running`, `command_finished`, `at_prompt`,
    /// `redrawing`, `reads_line`, `reads_password`, `repl_prompt`, `reads_keys`,
    /// `agent_working`, `agent_question`, `agent_idle`, `no_output`,
    /// `pane_dead`, `pane_closed`.
    pub reason: &'static str,
    /// The line the program waits on (asking).
    pub question: Option<String>,
    /// The program in the foreground (for prompt: the one that ran last).
    pub command: Option<String>,
    pub exit_status: Option<i32>,
    /// The profile of the coding agent in the pane.
    pub agent: Option<String>,
    /// What said so: `kernel` (who reads the terminal, how), `stream` (the
    /// pane's output: prompt marks, redraws, silence), `screen`, `title`
    /// and `hook` (a coding agent's own signals), `tmux` (a pane's end).
    pub source: &'static str,
    /// When the pane entered this state (seconds since the epoch).
    pub since: f64,
}

/// One report: a state change or an event, with the pane's status.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub what: What,
    pub status: Status,
    /// The line a `--pattern` matched (text).
    pub line: Option<String>,
}

/// A state found, before it is dated.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub state: State,
    pub reason: &'static str,
    pub question: Option<String>,
    pub command: Option<String>,
    pub agent: Option<String>,
    /// What said so: `kernel`, `stream`, `screen`, `title`, `hook`, `tmux`.
    pub source: &'static str,
    /// An inline agent's transcript (aider) is idle at its prompt: after
    /// an instruction was submitted (a line ended) and the agent wrote,
    /// the same prompt is a new one (its turn may be too quick to be seen
    /// working).
    pub transcript: bool,
}

impl Found {
    pub fn new(state: State, reason: &'static str, command: Option<String>) -> Found {
        Found {
            state,
            reason,
            question: None,
            command,
            agent: None,
            source: "kernel",
            transcript: false,
        }
    }

    pub fn asking(reason: &'static str, question: &str, command: Option<String>) -> Found {
        let q = super::profiles::clean_row(question);
        Found {
            question: (!q.is_empty()).then_some(q),
            ..Found::new(State::Asking, reason, command)
        }
    }
}

/// Where the stream stood when a status was set: what tells a new prompt
/// or a new question from the same one looked at again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Epoch {
    /// Prompts the shell marked (bracketed paste, OSC 133).
    pub prompts: u32,
    /// Characters programs wrote (echo left out).
    pub written: u64,
    /// Lines ended (an answer typed, a program's output).
    pub lines: u64,
}

/// A pane's state over time.
#[derive(Clone, Debug)]
pub struct Machine {
    pub status: Status,
    epoch: Epoch,
    /// The shell marks its prompts: a new one is a prompt count going up
    /// (else, without marks, new output before the prompt).
    marks: bool,
    /// The program last seen running, for the prompt that follows it.
    last_command: Option<String>,
    /// An exit status the stream gave (OSC 133 D, `run`'s end) for the
    /// next prompt.
    pending_status: Option<i32>,
    /// The prompt now was seen by the kernel before the shell's mark for
    /// it arrived: the next mark is this prompt's, not a new one.
    unmarked_prompt: bool,
    /// A shell starting (see [`Machine::starting`]): its first prompt is
    /// no news.
    starting: bool,
}

impl Machine {
    /// `marks`: the pane's shell marks its prompts (a line editor's
    /// bracketed paste); a plain shell (dash) does not.
    pub fn new(found: Found, epoch: Epoch, now: f64, marks: bool) -> Machine {
        Machine {
            status: dated(found, None, now),
            epoch,
            marks,
            last_command: None,
            pending_status: None,
            unmarked_prompt: false,
            starting: false,
        }
    }

    /// The pane's shell is starting (a pane made after the watch began,
    /// or whose own process is at work and reads nothing): until it has
    /// been at a prompt, or has asked, its first prompt is taken in
    /// without a change. A new window's prompt needs nobody. (A pane
    /// already there at its prompt when the watch began is not: its
    /// prompt's mark went by before the stream.)
    /// `mark_pending`: the stream has not shown a line editor reading yet.
    pub fn starting(&mut self, mark_pending: bool) {
        self.starting = self.status.state == State::Working;
        // Already at its first prompt, seen by the kernel before its mark
        // came through the stream: the mark is that prompt's.
        if self.status.state == State::Prompt {
            self.unmarked_prompt = self.marks && mark_pending;
        }
    }

    /// The stream gave a command's exit status (its prompt follows).
    pub fn exit_status(&mut self, status: Option<i32>) {
        if status.is_some() {
            self.pending_status = status;
        }
    }

    /// A new look: the change it makes, if any.
    pub fn apply(&mut self, found: Found, epoch: Epoch, now: f64) -> Option<Change> {
        if epoch.prompts > self.epoch.prompts {
            self.marks = true;
        }
        if self.starting {
            match found.state {
                State::Working => {}
                State::Prompt => {
                    self.starting = false;
                    let _ = self.set(found, epoch, now);
                    self.status.reason = "at_prompt";
                    self.status.command = None;
                    self.status.exit_status = None;
                    return None;
                }
                _ => self.starting = false,
            }
        }
        let cur = &self.status;
        if matches!(found.state, State::Working | State::Asking) && found.command.is_some() {
            self.last_command.clone_from(&found.command);
        }
        let new = match (cur.state, found.state) {
            // A quiet command looked at again, still running and still
            // writing nothing: quiet until it writes (or another program
            // comes to the foreground and writes).
            (State::Quiet, State::Working)
                if found.reason == "running"
                    && epoch.written == self.epoch.written
                    && epoch.lines == self.epoch.lines =>
            {
                false
            }
            (a, b) if a != b => true,
            // The mark of the prompt seen already: one absorbed.
            (State::Prompt, State::Prompt)
                if self.unmarked_prompt && epoch.prompts > self.epoch.prompts =>
            {
                self.unmarked_prompt = false;
                let again = epoch.prompts > self.epoch.prompts + 1;
                self.epoch.prompts += 1;
                again
            }
            (State::Prompt, State::Prompt) if self.unmarked_prompt => false,
            (State::Prompt, State::Prompt) => {
                epoch.prompts > self.epoch.prompts
                    || (!self.marks && epoch.written > self.epoch.written)
            }
            (State::Asking, State::Asking) => {
                let differs = cur.reason != found.reason
                    || cur.question != found.question
                    || cur.command != found.command
                    || cur.agent != found.agent;
                // A program that reads a line (or a REPL) and wrote since:
                // it took the answer and asks again.
                let again = matches!(
                    found.reason,
                    "reads_line" | "reads_password" | "repl_prompt"
                ) && epoch.written > self.epoch.written;
                // An inline agent back at its prompt after a turn.
                let turn = found.transcript
                    && found.reason == "agent_idle"
                    && epoch.lines > self.epoch.lines
                    && epoch.written > self.epoch.written;
                differs || again || turn
            }
            // Working: the command's name changing is no news, but the
            // status says the one running now (the shell ran a builtin
            // first, then forked `sleep`).
            (State::Working, State::Working) => {
                if found.command.is_some() && found.reason == cur.reason {
                    self.status.command.clone_from(&found.command);
                }
                false
            }
            _ => false,
        };
        if !new {
            return None;
        }
        self.set(found, epoch, now)
    }

    /// A prompt found now has not been marked by the stream yet: the shell
    /// marks its prompts and none came since this state began (so its
    /// mark, and the exit status before it, are still on their way).
    pub fn awaits_mark(&self, epoch: Epoch) -> bool {
        self.marks
            && matches!(
                self.status.state,
                State::Working | State::Quiet | State::Asking
            )
            && epoch.prompts <= self.epoch.prompts
    }

    /// A key-by-key reader seen asking (a REPL, a pager, an agent), now
    /// found awake with nothing written and no line ended since: it is
    /// taking a key it was sent, not at work (yet).
    pub fn taking_a_key(&self, found: &Found, epoch: Epoch) -> bool {
        self.status.state == State::Asking
            && matches!(
                self.status.reason,
                "repl_prompt" | "reads_keys" | "agent_question" | "agent_idle"
            )
            && found.state == State::Working
            && found.reason == "running"
            && found.command == self.status.command
            && epoch.written == self.epoch.written
            && epoch.lines == self.epoch.lines
    }

    /// A running command wrote nothing for the quiet time.
    pub fn quiet(&mut self, epoch: Epoch, now: f64) -> Option<Change> {
        if self.status.state != State::Working {
            return None;
        }
        let f = Found {
            source: "stream",
            ..Found::new(State::Quiet, "no_output", self.status.command.clone())
        };
        self.set(f, epoch, now)
    }

    /// The pane's program ended (`dead`), or the pane closed.
    pub fn exited(&mut self, dead: bool, exit_status: Option<i32>, now: f64) -> Option<Change> {
        if self.status.state == State::Exited {
            return None;
        }
        let reason = if dead { "pane_dead" } else { "pane_closed" };
        // The program that was running when it ended, if one was.
        let running = matches!(self.status.state, State::Working | State::Quiet);
        let f = Found {
            source: "tmux",
            ..Found::new(
                State::Exited,
                reason,
                self.status.command.clone().filter(|_| running),
            )
        };
        self.status = dated(f, exit_status, now);
        Some(self.change(What::State(State::Exited)))
    }

    /// An event (bell, text) with the pane's status as it stands.
    pub fn event(&self, what: What, line: Option<String>) -> Change {
        Change {
            what,
            status: self.status.clone(),
            line,
        }
    }

    fn set(&mut self, found: Found, epoch: Epoch, now: f64) -> Option<Change> {
        let mut exit = None;
        let mut found = found;
        if found.state == State::Prompt {
            // Back at the prompt after the call began: a command ended.
            exit = self.pending_status.take();
            found.reason = "command_finished";
            found.command = self.last_command.clone();
            self.unmarked_prompt = self.marks && epoch.prompts <= self.epoch.prompts;
        }
        self.status = dated(found, exit, now);
        self.epoch = epoch;
        Some(self.change(What::State(self.status.state)))
    }

    fn change(&self, what: What) -> Change {
        Change {
            what,
            status: self.status.clone(),
            line: None,
        }
    }
}

fn dated(f: Found, exit_status: Option<i32>, now: f64) -> Status {
    Status {
        state: f.state,
        reason: f.reason,
        question: f.question,
        command: f.command,
        exit_status,
        agent: f.agent,
        source: f.source,
        since: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(prompts: u32, written: u64) -> Epoch {
        Epoch {
            prompts,
            written,
            lines: written / 10,
        }
    }

    fn asking(q: &str) -> Found {
        Found::asking("reads_line", q, Some("python3".into()))
    }

    /// A prompt the kernel sees after a command waits for its mark when
    /// the shell marks its prompts; the command's name follows what runs.
    #[test]
    fn a_prompt_without_its_mark_yet_and_the_command_running_now() {
        let bash = Found::new(State::Working, "running", Some("bash".into()));
        let mut m = Machine::new(
            Found::new(State::Prompt, "at_prompt", None),
            epoch(1, 0),
            1.0,
            true,
        );
        assert!(!m.awaits_mark(epoch(1, 0)), "at the prompt already");
        assert!(m.apply(bash, epoch(1, 0), 2.0).is_some());
        assert!(m.awaits_mark(epoch(1, 5)));
        assert!(!m.awaits_mark(epoch(2, 5)), "the mark came");
        let sleep = Found::new(State::Working, "running", Some("sleep".into()));
        assert!(m.apply(sleep, epoch(1, 5), 3.0).is_none(), "no news");
        assert_eq!(m.status.command.as_deref(), Some("sleep"));
        let c = m.quiet(epoch(1, 5), 4.0).unwrap();
        assert_eq!(c.status.command.as_deref(), Some("sleep"));
        let dash = Machine::new(
            Found::new(State::Working, "running", None),
            epoch(0, 0),
            1.0,
            false,
        );
        assert!(!dash.awaits_mark(epoch(0, 0)), "dash marks nothing");
    }

    /// A REPL awake for a typed key is not at work; once it wrote or a
    /// line ended, or for another program, it is.
    #[test]
    fn a_key_reader_taking_a_key_is_still_asking() {
        let repl = Found::asking("repl_prompt", ">>>", Some("python3".into()));
        let m = Machine::new(repl, epoch(0, 10), 1.0, true);
        let awake = Found::new(State::Working, "running", Some("python3".into()));
        assert!(m.taking_a_key(&awake, epoch(0, 10)));
        assert!(!m.taking_a_key(&awake, epoch(0, 12)), "it wrote");
        let enter = Epoch {
            lines: 2,
            ..epoch(0, 10)
        };
        assert!(!m.taking_a_key(&awake, enter), "a line ended");
        let sleep = Found::new(State::Working, "running", Some("sleep".into()));
        assert!(!m.taking_a_key(&sleep, epoch(0, 10)));
        let m = Machine::new(asking("Name?"), epoch(0, 10), 1.0, true);
        assert!(!m.taking_a_key(&awake, epoch(0, 10)), "a line reader");
    }

    #[test]
    fn the_same_state_looked_at_again_is_no_change() {
        let mut m = Machine::new(
            Found::new(State::Prompt, "at_prompt", None),
            epoch(1, 10),
            0.0,
            true,
        );
        // Typed text at the prompt: no output, no prompt: nothing.
        assert!(
            m.apply(
                Found::new(State::Prompt, "at_prompt", None),
                epoch(1, 10),
                1.0
            )
            .is_none()
        );
        let c = m
            .apply(
                Found::new(State::Working, "running", Some("make".into())),
                epoch(1, 20),
                2.0,
            )
            .unwrap();
        assert_eq!(c.what, What::State(State::Working));
        m.exit_status(Some(2));
        let back = Found::new(State::Prompt, "at_prompt", None);
        let c = m.apply(back.clone(), epoch(2, 30), 3.0).unwrap();
        assert_eq!(
            (
                c.status.state,
                c.status.reason,
                c.status.exit_status,
                c.status.command.as_deref()
            ),
            (State::Prompt, "command_finished", Some(2), Some("make"))
        );
        // The probe after it agrees: no second report.
        assert!(m.apply(back.clone(), epoch(2, 30), 3.1).is_none());
        // A command too quick to be seen running: the prompt count says.
        assert!(m.apply(back.clone(), epoch(3, 31), 4.0).is_some());
        // The kernel sees the prompt before its mark arrives: the mark is
        // that prompt's, not another.
        let running = Found::new(State::Working, "running", Some("sleep".into()));
        assert!(m.apply(running.clone(), epoch(3, 40), 5.0).is_some());
        assert!(m.apply(back.clone(), epoch(3, 41), 6.0).is_some());
        assert!(m.apply(back.clone(), epoch(4, 45), 6.1).is_none());
        assert!(m.apply(back.clone(), epoch(5, 50), 7.0).is_some());
        // A shell that marks no prompts (dash): new output before it.
        let mut m = Machine::new(back.clone(), epoch(0, 10), 0.0, false);
        assert!(m.apply(back.clone(), epoch(0, 10), 1.0).is_none());
        assert!(m.apply(back, epoch(0, 25), 2.0).is_some());
    }

    #[test]
    fn a_question_asked_again_is_a_change_the_same_one_is_not() {
        let mut m = Machine::new(
            Found::new(State::Working, "running", None),
            epoch(0, 0),
            0.0,
            true,
        );
        assert!(
            m.apply(asking("Proceed? [y/N]"), epoch(0, 15), 1.0)
                .is_some()
        );
        assert!(
            m.apply(asking("Proceed? [y/N]"), epoch(0, 15), 2.0)
                .is_none()
        );
        // Answered, and asked again: new output before the same question.
        assert!(
            m.apply(asking("Proceed? [y/N]"), epoch(0, 30), 3.0)
                .is_some()
        );
        // A pager redrawing shows the same question: no change.
        let keys = |q: &str| Found::asking("reads_keys", q, Some("less".into()));
        assert!(m.apply(keys(":"), epoch(0, 40), 4.0).is_some());
        assert!(m.apply(keys(":"), epoch(0, 90), 5.0).is_none());
        assert!(m.apply(keys("(END)"), epoch(0, 99), 6.0).is_some());
    }

    /// aider back at `diff>` after a turn too quick to be seen working:
    /// an instruction submitted and an answer written make it a new idle
    /// prompt; keys typed at it (no line ended) do not.
    #[test]
    fn an_inline_agent_back_at_its_prompt_after_a_turn() {
        let idle = Found {
            agent: Some("aider".into()),
            source: "screen",
            transcript: true,
            ..Found::asking("agent_idle", "diff>", Some("aider".into()))
        };
        let mut m = Machine::new(idle.clone(), epoch(0, 100), 0.0, true);
        let typed = Epoch {
            lines: 10,
            ..epoch(0, 100)
        };
        assert!(m.apply(idle.clone(), typed, 1.0).is_none(), "typing");
        let answered = Epoch {
            lines: 12,
            ..epoch(0, 130)
        };
        let c = m.apply(idle.clone(), answered, 2.0).unwrap();
        assert_eq!(c.status.reason, "agent_idle");
        assert!(m.apply(idle, answered, 3.0).is_none(), "looked at again");
    }

    /// A new pane's shell reaching its first prompt is no news; its next
    /// prompt, after a command, is.
    #[test]
    fn a_shells_first_prompt_is_no_news() {
        let bash = Found::new(State::Working, "running", Some("bash".into()));
        let prompt = Found::new(State::Prompt, "at_prompt", None);
        let mut m = Machine::new(bash.clone(), epoch(0, 0), 0.0, true);
        m.starting(true);
        assert!(m.apply(bash, epoch(0, 5), 0.1).is_none());
        assert!(m.apply(prompt.clone(), epoch(0, 9), 0.2).is_none());
        assert_eq!(
            (m.status.state, m.status.reason),
            (State::Prompt, "at_prompt")
        );
        // Its mark, come late, is that prompt's.
        assert!(m.apply(prompt.clone(), epoch(1, 9), 0.3).is_none());
        let ls = Found::new(State::Working, "running", Some("ls".into()));
        assert!(m.apply(ls, epoch(1, 12), 1.0).is_some());
        let c = m.apply(prompt.clone(), epoch(2, 30), 2.0).unwrap();
        assert_eq!(c.status.reason, "command_finished");
        // A new pane seen at its prompt before the prompt's mark came:
        // the mark is no news; the next prompt, after a command, is.
        let mut m = Machine::new(prompt.clone(), epoch(0, 9), 0.0, true);
        m.starting(true);
        assert!(m.apply(prompt.clone(), epoch(1, 9), 0.1).is_none());
        let ls = Found::new(State::Working, "running", Some("ls".into()));
        assert!(m.apply(ls, epoch(1, 12), 1.0).is_some());
        assert!(m.apply(prompt.clone(), epoch(2, 30), 2.0).is_some());
        // A pane whose first look finds a program asking: news as ever.
        let mut m = Machine::new(
            Found::new(State::Working, "running", Some("sh".into())),
            epoch(0, 0),
            0.0,
            false,
        );
        m.starting(true);
        assert!(
            m.apply(asking("Deploy? [y/N]"), epoch(0, 14), 1.0)
                .is_some()
        );
    }

    #[test]
    fn quiet_and_exited() {
        let mut m = Machine::new(
            Found::new(State::Working, "running", Some("sleep".into())),
            epoch(0, 0),
            0.0,
            true,
        );
        let c = m.quiet(epoch(0, 0), 30.0).unwrap();
        assert_eq!(
            (c.status.state, c.status.command.as_deref()),
            (State::Quiet, Some("sleep"))
        );
        assert!(m.quiet(epoch(0, 0), 31.0).is_none());
        // Looked at again, still running and silent: still quiet (no flap
        // back to working and into quiet again).
        let sleep = Found::new(State::Working, "running", Some("sleep".into()));
        assert!(m.apply(sleep.clone(), epoch(0, 0), 32.0).is_none());
        assert_eq!(m.status.state, State::Quiet);
        // It writes: working again.
        let c = m.apply(sleep, epoch(0, 7), 33.0).unwrap();
        assert_eq!(c.status.state, State::Working);
        assert!(m.quiet(epoch(0, 7), 63.0).is_some());
        let c = m.exited(true, Some(3), 40.0).unwrap();
        assert_eq!(
            (c.status.reason, c.status.exit_status),
            ("pane_dead", Some(3))
        );
        assert!(m.exited(false, None, 41.0).is_none());
    }

    #[test]
    fn until_words() {
        let u = Until::parse("prompt, bell").unwrap();
        assert!(u.has(What::State(State::Prompt)) && u.has(What::Bell));
        assert!(!u.has(What::State(State::Asking)));
        assert!(Until::parse("asking,nope").unwrap_err().contains("'nope'"));
        assert!(Until::parse("").is_err());
        let d = Until::needs_someone();
        for s in State::ALL {
            assert_eq!(d.has(What::State(s)), s.needs_someone(), "{s:?}");
        }
    }
}
