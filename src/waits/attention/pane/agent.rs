//! A coding agent's signals in a pane: which agent runs there (its
//! foreground processes, looked at again when the foreground changes),
//! its busy line going by in the stream, its terminal title, and what its
//! own hooks said (a mark `tmux-wait agent-event` writes into the pane's
//! stream).

use super::super::judge::Look;
use super::super::profiles::{Proc, Profiles, Says};
use super::super::unknown;
use crate::pane::shell::Reads;
use crate::sys::procfs;
use std::time::{Duration, Instant};

/// The most processes of a pane looked at for which agent runs.
const TREE_CAP: usize = 64;
/// A foreground program this old has its arguments in place: one that is
/// no agent then is none.
const SETTLED: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub(super) struct AgentSignals {
    /// The foreground group last looked at (its leader, and the leader's
    /// program name: a fork of the shell becomes the agent at its exec),
    /// and the agent found in it.
    identified: Option<((u32, String), Option<String>)>,
    /// When the agent's working text last went by in the stream.
    busy: Option<Instant>,
    /// The title as the stream last set it, how many times it was set,
    /// and when it last changed.
    title: Option<String>,
    titles: u64,
    title_at: Option<Instant>,
    /// What the agent's hook said last, and when.
    hook: Option<(Says, Instant)>,
    /// A program no profile names that looks like a coding agent (its
    /// package or executable), and the spinner glyph its busy row showed
    /// last.
    unknown: Option<String>,
    glyph: Option<char>,
    /// That program was seen reading its terminal key by key (an
    /// interactive one: its screen is judged also while it reads nothing).
    keys_seen: bool,
}

impl AgentSignals {
    /// The agent in the pane's foreground now (None: none a profile
    /// knows).
    pub(super) fn agent(&mut self, profiles: &Profiles, pane_pid: u32) -> Option<&str> {
        let fg = procfs::foreground_group(pane_pid)?;
        let key = (fg, procfs::comm(fg).unwrap_or_default());
        // (A program found to be no agent is looked at again while it is
        // young: its arguments may not have been readable mid-exec.)
        let young = || procfs::age(fg).is_none_or(|a| a < SETTLED);
        if self
            .identified
            .as_ref()
            .is_none_or(|(k, a)| *k != key || (a.is_none() && young()))
        {
            let procs = group(pane_pid, fg);
            let found = profiles.identify(&procs).map(|p| p.name.clone());
            let program = match found {
                None => unknown::identity(&procs),
                Some(_) => None,
            };
            if program != self.unknown {
                self.busy = None;
                self.glyph = None;
                self.keys_seen = false;
            }
            self.unknown = program;
            // Another agent than before: what the last one said is not
            // this one's. (The first look of an agent keeps a hook's word
            // that came just before it.)
            if self.agent_name().is_some() && found != self.agent_name() {
                self.busy = None;
                self.hook = None;
            }
            self.identified = Some((key, found));
        }
        self.agent_name_ref()
    }

    fn agent_name(&self) -> Option<String> {
        self.identified.as_ref().and_then(|(_, a)| a.clone())
    }

    fn agent_name_ref(&self) -> Option<&str> {
        self.identified.as_ref().and_then(|(_, a)| a.as_deref())
    }

    /// A line or the unfinished line went by: the agent's working text?
    pub(super) fn saw(&mut self, profiles: &Profiles, text: &str, now: Instant) {
        if let Some(p) = self.agent_name_ref().and_then(|n| profiles.get(n)) {
            if p.busy_in(text) {
                self.busy = Some(now);
            }
            return;
        }
        if self.unknown.is_none() {
            return;
        }
        // Without a profile: a busy row of the common forms, or a spinner
        // glyph that changed.
        let glyph = unknown::spinner_glyph(text);
        let turned = glyph.is_some() && self.glyph.is_some() && glyph != self.glyph;
        if glyph.is_some() {
            self.glyph = glyph;
        }
        if turned || unknown::busy_row(text) {
            self.busy = Some(now);
        }
    }

    /// The stream's title now (set `titles` times): true when it changed.
    pub(super) fn title(&mut self, title: Option<&str>, titles: u64, now: Instant) -> bool {
        if titles == self.titles {
            return false;
        }
        self.titles = titles;
        let changed = self.title.as_deref() != title;
        if changed {
            self.title = title.map(str::to_owned);
            self.title_at = Some(now);
        }
        changed
    }

    /// The agent's hook said this (`working`, `asking`, `idle`).
    pub(super) fn hook(&mut self, kind: &str, words: String, now: Instant) {
        let says = match kind {
            "working" => Says::Working,
            "asking" => Says::Asking(words),
            _ => Says::Idle(words),
        };
        self.hook = Some((says, now));
    }

    /// Until when a hook's word stands against the screen (a look is due
    /// then).
    pub(super) fn hook_until(&self) -> Option<Instant> {
        self.hook
            .as_ref()
            .map(|(_, t)| *t + super::super::judge::HOOK_HOLD)
    }

    /// The look's agent fields, as of `now`; `streamed`: the stream (not
    /// the kernel alone) saw them.
    pub(super) fn fill(&mut self, look: &mut Look, now: Instant, still: Duration) {
        look.agent = self.agent_name();
        look.busy = self.busy.is_some_and(|t| now - t < still);
        if look.agent.is_none() {
            if matches!(look.reads, Some(Reads::Keys { .. })) {
                self.keys_seen = true;
            }
            look.program = self.unknown.clone().filter(|_| self.keys_seen);
            if look.program.is_some() {
                look.agent_age = self.age();
            }
            return;
        }
        look.title.clone_from(&self.title);
        look.title_age = self.title_at.map_or(Duration::MAX, |t| now - t);
        look.hook = self.hook.as_ref().map(|(s, t)| (s.clone(), now - *t));
        look.agent_age = self.age();
    }

    fn age(&self) -> Duration {
        self.identified
            .as_ref()
            .and_then(|((fg, _), _)| procfs::age(*fg))
            .unwrap_or(Duration::MAX)
    }
}

/// The processes of the pane's foreground group (its leader and every
/// other one of the pane's processes in that group), as profiles see them.
pub fn group(pane_pid: u32, fg: u32) -> Vec<Proc> {
    let mut pids = vec![fg];
    for pid in procfs::tree(pane_pid, TREE_CAP) {
        if pid != fg && procfs::stat(pid).is_some_and(|s| s.pgrp == fg) {
            pids.push(pid);
        }
    }
    pids.into_iter()
        .map(|pid| Proc {
            comm: procfs::comm(pid).unwrap_or_default(),
            args: procfs::cmdline(pid, 3),
            exe: std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        })
        .collect()
}
