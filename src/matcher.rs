//! Which pattern hits which line: pure logic, no I/O.
//!
//! Rules (the seed's `wait_for_text`): patterns are literal unless `regex`,
//! case-insensitive unless `match_case`; each line is matched on its own; the
//! first pattern in list order that hits wins; within one batch of output a
//! stop pattern beats a success pattern.

use regex::{Regex, RegexBuilder};

mod joined;
pub use joined::Joined;

/// A list of patterns, in the order the user gave them, checked when made
/// and compiled when first used (or ahead, see [`PatternList::compile_ahead`]).
#[derive(Debug, Clone)]
pub struct PatternList {
    /// Each pattern's regex source (escaped when it is literal).
    sources: Vec<String>,
    /// Their regexes: a case-insensitive pattern takes the regex engine
    /// a few tenths of a millisecond to compile (its Unicode case folds),
    /// which a wait's start need not wait for.
    compiled: std::sync::Arc<std::sync::OnceLock<Vec<Regex>>>,
    /// For each pattern, where it is safe, the same pattern with `^` and
    /// `$` at every line break: a batch's lines joined by line feeds are
    /// searched once, and only a batch it hits is matched line by line.
    /// Compiled on the first long batch (or ahead).
    /// None: the pattern is matched line by line only (see `batch_safe`).
    batch: std::sync::Arc<[Option<std::sync::OnceLock<Option<Regex>>>]>,
    match_case: bool,
}

/// Fewer lines than this are matched one by one straight away.
const BATCH_AT: usize = 32;

/// The lines a wait can use, as one bytes regex compiled when first
/// asked for (see [`PatternList::needed`]).
#[derive(Debug)]
pub struct Needed {
    source: String,
    match_case: bool,
    re: std::sync::Arc<std::sync::OnceLock<Option<regex::bytes::Regex>>>,
}

impl Needed {
    pub(crate) fn new(source: String, match_case: bool) -> Self {
        Self {
            source,
            match_case,
            re: std::sync::Arc::new(std::sync::OnceLock::new()),
        }
    }

    /// Compile the regex on a thread of its own from now (see
    /// [`PatternList::compile_ahead`]): a wait's first flood needs it,
    /// and fifty waits compiling it as the flood began slowed it down.
    pub fn compile_ahead(&self) {
        let (re, source, match_case) = (self.re.clone(), self.source.clone(), self.match_case);
        let _ = std::thread::Builder::new()
            .name("compile".into())
            .spawn(move || {
                re.get_or_init(|| needed_regex(&source, match_case));
            });
    }

    /// Its regex's source (for the hub: see `hub::Wants`).
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn match_case(&self) -> bool {
        self.match_case
    }

    /// No line is needed (a regex that matches nothing).
    pub fn none() -> Self {
        Self::new(r"[^\s\S]".to_owned(), true)
    }

    /// The regex, compiled on the first call; None if it cannot be.
    pub fn regex(&self) -> Option<&regex::bytes::Regex> {
        self.re
            .get_or_init(|| needed_regex(&self.source, self.match_case))
            .as_ref()
    }
}

fn needed_regex(source: &str, match_case: bool) -> Option<regex::bytes::Regex> {
    regex::bytes::RegexBuilder::new(source)
        .case_insensitive(!match_case)
        .multi_line(true)
        .crlf(true)
        .size_limit(SIZE_LIMIT)
        .build()
        .ok()
}

/// The regex engine's limit on a compiled pattern; larger ones are refused
/// with a clear error instead of using unbounded memory.
pub const SIZE_LIMIT: usize = 64 * 1024 * 1024;

impl PatternList {
    /// Check `patterns`. The error names the offending pattern's index.
    ///
    /// A pattern is parsed here, and compiled here too when it could come
    /// near the engine's size limit (so that limit's error is said here,
    /// as a bad pattern's is). Others are compiled when first used.
    pub fn new(
        patterns: &[String],
        regex: bool,
        match_case: bool,
        flag: &str,
    ) -> Result<Self, String> {
        let mut sources = Vec::with_capacity(patterns.len());
        let mut batch = Vec::with_capacity(patterns.len());
        let mut heavy = false;
        for (i, p) in patterns.iter().enumerate() {
            if p.is_empty() {
                let hint = if flag == "--pattern" {
                    " (omit --pattern to wait for any output)"
                } else {
                    ""
                };
                return Err(format!(
                    "{flag} #{} is empty; it would match every line{hint}",
                    i + 1
                ));
            }
            if p.contains(['\n', '\r']) {
                return Err(format!(
                    "{flag} #{} holds a line break; lines are matched one at a time, so it could never match",
                    i + 1
                ));
            }
            let source = if regex { p.clone() } else { regex::escape(p) };
            let parsed = regex_syntax::ParserBuilder::new()
                .case_insensitive(!match_case)
                .build()
                .parse(&source);
            match parsed {
                // The engine's own error says what is wrong.
                Err(_) => {
                    compile(&source, match_case).map_err(|e| bad(flag, i, &e))?;
                }
                Ok(hir) => heavy |= weight(&hir) > LIGHT,
            }
            batch.push(batch_safe(&source, regex).then(std::sync::OnceLock::new));
            sources.push(source);
        }
        let compiled = std::sync::Arc::new(std::sync::OnceLock::new());
        if heavy {
            let mut regexes = Vec::with_capacity(sources.len());
            for (i, source) in sources.iter().enumerate() {
                regexes.push(compile(source, match_case).map_err(|e| bad(flag, i, &e))?);
            }
            let _ = compiled.set(regexes);
        }
        Ok(Self {
            sources,
            compiled,
            batch: batch.into(),
            match_case,
        })
    }

    /// Compile the patterns on a thread of their own from now, while the
    /// caller talks to tmux: a wait that needs them gets them then, or
    /// waits for the rest of the compile. Then their forms for long
    /// batches (see `batch`), which a wait's first flood needs.
    pub fn compile_ahead(&self) {
        // (Patterns heavy enough to be compiled when checked are so: their
        // batch forms, as heavy, are compiled only if a flood needs them.)
        if self.compiled.get().is_some() || self.sources.is_empty() {
            return;
        }
        let (compiled, batch, sources, match_case) = (
            self.compiled.clone(),
            self.batch.clone(),
            self.sources.clone(),
            self.match_case,
        );
        // Without a thread they are compiled when first used.
        let _ = std::thread::Builder::new()
            .name("compile".into())
            .spawn(move || {
                compiled.get_or_init(|| compile_checked(&sources, match_case));
                for (cell, source) in batch.iter().zip(&sources) {
                    if let Some(cell) = cell {
                        cell.get_or_init(|| batch_compile(source, match_case));
                    }
                }
            });
    }

    /// The patterns' regexes, compiled on the first call (or by the thread
    /// `compile_ahead` started: then this waits for it).
    fn regexes(&self) -> &[Regex] {
        self.compiled
            .get_or_init(|| compile_checked(&self.sources, self.match_case))
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// How many patterns there are.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Pattern `i` hits `line`.
    pub fn hits(&self, i: usize, line: &str) -> bool {
        self.regexes().get(i).is_some_and(|re| re.is_match(line))
    }

    /// One regex that hits a line when any pattern of `self` or `other`
    /// does (both compiled with the same case rule).
    pub fn any_of(&self, other: &PatternList) -> Regex {
        let alternatives: Vec<String> = self
            .sources
            .iter()
            .chain(&other.sources)
            .map(|r| format!("(?:{r})"))
            .collect();
        let source = if alternatives.is_empty() {
            // Any line at all.
            "^".to_owned()
        } else {
            alternatives.join("|")
        };
        RegexBuilder::new(&source)
            .case_insensitive(!self.match_case)
            .size_limit(SIZE_LIMIT)
            .build()
            .expect("alternatives of valid patterns are valid")
    }

    /// One bytes regex that hits, within lines joined by `\r\n` (or
    /// `\n`), every line any pattern of `self` or `other` hits on its own
    /// (see `batch_source`), compiled when first used; None when a pattern
    /// is not fit for that, or there is none.
    pub fn needed(&self, other: &PatternList) -> Option<Needed> {
        let all = || {
            self.sources
                .iter()
                .zip(self.batch.iter())
                .chain(other.sources.iter().zip(other.batch.iter()))
        };
        if all().next().is_none() || all().any(|(_, b)| b.is_none()) {
            return None;
        }
        let source = all()
            .map(|(r, _)| format!("(?:{r})"))
            .collect::<Vec<_>>()
            .join("|");
        Some(Needed::new(source, self.match_case))
    }

    /// Pattern `i` with `^` and `$` at every line break, compiled on the
    /// first call; None where it is not safe or does not compile.
    fn batch_regex(&self, i: usize) -> Option<&Regex> {
        self.batch
            .get(i)?
            .as_ref()?
            .get_or_init(|| batch_compile(&self.sources[i], self.match_case))
            .as_ref()
    }

    /// The first pattern (in list order) that hits any of `lines`, and the
    /// indexes of the lines it hits.
    pub fn first_hit<S: AsRef<str>>(&self, lines: &[S]) -> Option<(usize, Vec<usize>)> {
        // A flood's batch holds thousands of lines and almost never a hit:
        // one search over all of them says which patterns need a look.
        let joined = (lines.len() >= BATCH_AT && self.batch.iter().any(Option::is_some))
            .then(|| join_lines(lines));
        self.regexes().iter().enumerate().find_map(|(i, re)| {
            if let Some(text) = &joined
                && let Some(all) = self.batch_regex(i)
                && !all.is_match(text)
            {
                return None;
            }
            let hits: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| re.is_match(l.as_ref()))
                .map(|(j, _)| j)
                .collect();
            (!hits.is_empty()).then_some((i, hits))
        })
    }
}

/// A pattern's form for long batches (see `PatternList::batch`).
fn batch_compile(source: &str, match_case: bool) -> Option<Regex> {
    RegexBuilder::new(source)
        .case_insensitive(!match_case)
        .multi_line(true)
        .size_limit(SIZE_LIMIT)
        .build()
        .ok()
}

/// A pattern's regex, as every pattern is compiled.
fn compile(source: &str, match_case: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(source)
        .case_insensitive(!match_case)
        .multi_line(false)
        .size_limit(SIZE_LIMIT)
        .build()
}

/// Patterns checked by [`PatternList::new`]: they parsed, and are far
/// below the size limit (see [`weight`]), so they compile.
fn compile_checked(sources: &[String], match_case: bool) -> Vec<Regex> {
    sources
        .iter()
        .map(|s| {
            compile(s, match_case)
                .or_else(|_| {
                    RegexBuilder::new(s)
                        .case_insensitive(!match_case)
                        .size_limit(usize::MAX)
                        .build()
                })
                .expect("a pattern that parsed compiles")
        })
        .collect()
}

/// The error for pattern `i`, on one line.
fn bad(flag: &str, i: usize, e: &regex::Error) -> String {
    let detail = e.to_string().replace('\n', " ");
    let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{flag} #{} is not a valid regex: {detail}", i + 1)
}

/// Patterns that weigh more than this are compiled when checked. A unit
/// is about one state of the engine's automaton, well over: the heaviest
/// light pattern is a few megabytes compiled, the size limit 64.
const LIGHT: u64 = 1 << 16;

/// An upper bound on the size of a parsed pattern's automaton, in units
/// of [`LIGHT`]: a Unicode range becomes at most a few UTF-8 sequences
/// of up to four bytes, and a counted repeat repeats its part.
fn weight(hir: &regex_syntax::hir::Hir) -> u64 {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(l) => l.0.len() as u64 + 1,
        HirKind::Class(Class::Unicode(c)) => c.ranges().len() as u64 * 16 + 1,
        HirKind::Class(Class::Bytes(c)) => c.ranges().len() as u64 + 1,
        HirKind::Repetition(r) => {
            let times = r.max.unwrap_or(r.min).max(r.min).max(1) as u64 + 1;
            weight(&r.sub).saturating_mul(times)
        }
        HirKind::Capture(c) => weight(&c.sub).saturating_add(1),
        HirKind::Concat(all) | HirKind::Alternation(all) => {
            all.iter().map(weight).fold(1, u64::saturating_add)
        }
    }
}

/// Whether the pattern `source`, compiled with `^` and `$` also at line
/// breaks, finds a hit in lines joined by line feeds whenever one of the
/// lines has one: a match within a line keeps its span, and a line feed
/// beside it counts as the text's edge does for `^`, `$` and word
/// boundaries. Not so for a regex that names the text's own edges (`\A`,
/// `\z`) or sets flags inline (`(?-m)` would undo the line breaks): such a
/// pattern is matched line by line only.
fn batch_safe(source: &str, regex: bool) -> bool {
    !(regex && (source.contains("(?") || source.contains("\\A") || source.contains("\\z")))
}

fn join_lines<S: AsRef<str>>(lines: &[S]) -> String {
    let len = lines.iter().map(|l| l.as_ref().len() + 1).sum();
    let mut text = String::with_capacity(len);
    for l in lines {
        text.push_str(l.as_ref());
        text.push('\n');
    }
    text
}

/// What a batch of new lines amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A stop pattern hit: its index, and the lines it hit.
    Stopped(usize, Vec<usize>),
    /// A success pattern hit.
    Matched(usize, Vec<usize>),
}

/// Judge one batch: stop patterns first, then success patterns.
pub fn judge<S: AsRef<str>>(
    patterns: &PatternList,
    stops: &PatternList,
    lines: &[S],
) -> Option<Verdict> {
    if let Some((i, hits)) = stops.first_hit(lines) {
        return Some(Verdict::Stopped(i, hits));
    }
    patterns
        .first_hit(lines)
        .map(|(i, hits)| Verdict::Matched(i, hits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &[&str], regex: bool, case: bool) -> PatternList {
        let v: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        PatternList::new(&v, regex, case, "--pattern").unwrap()
    }

    #[test]
    fn literal_by_default_and_case_insensitive() {
        let l = list(&["a.b", "Ready"], false, false);
        assert_eq!(l.first_hit(&["axb"]), None);
        assert_eq!(l.first_hit(&["a.b"]), Some((0, vec![0])));
        assert_eq!(l.first_hit(&["server READY"]), Some((1, vec![0])));
        let l = list(&["Ready"], false, true);
        assert_eq!(l.first_hit(&["READY"]), None);
    }

    #[test]
    fn one_regex_for_patterns_and_stops() {
        let any = list(&["a.b", "Ready"], false, false).any_of(&list(&["x+"], false, false));
        assert!(any.is_match("a.b") && any.is_match("READY") && any.is_match("x+"));
        assert!(!any.is_match("axb") && !any.is_match("xx"));
        let none = list(&[], false, false).any_of(&list(&[], false, false));
        assert!(none.is_match("") && none.is_match("anything"));
        let cased = list(&["Ready"], false, true).any_of(&list(&[], false, true));
        assert!(!cased.is_match("READY"));
    }

    #[test]
    fn an_empty_stop_names_its_own_option() {
        let e = PatternList::new(&["".into()], false, false, "--stop").unwrap_err();
        assert!(
            e.starts_with("--stop #1 is empty") && !e.contains("--pattern"),
            "{e}"
        );
    }

    /// What `first_hit` must give: each pattern tried on each line alone.
    fn line_by_line(l: &PatternList, lines: &[&str]) -> Option<(usize, Vec<usize>)> {
        (0..l.len()).find_map(|i| {
            let hits: Vec<usize> = (0..lines.len()).filter(|&j| l.hits(i, lines[j])).collect();
            (!hits.is_empty()).then_some((i, hits))
        })
    }

    #[test]
    fn a_long_batch_gives_what_each_line_alone_gives() {
        let mut lines: Vec<&str> = ["filler line", "", "  spaced  ", "x"].repeat(9);
        lines.extend(["done", "not done", "done.", "word-ish", "Ready >", "$ "]);
        let cases: &[(&[&str], bool)] = &[
            (&["done"], false),
            (&["^done$"], true),
            (&["^$"], true),
            (&["^ +spaced +$"], true),
            (&[r"\bdone\b"], true),
            (&[r"\Bone"], true),
            (&[r"done\z"], true),
            (&[r"\Ax$"], true),
            (&["(?-m)^done$"], true),
            (&["^x", "ready >$"], true),
            (&[r"\$ $"], true),
            (&["never", "NEVER"], false),
            (&[r"[^a]+$"], true),
        ];
        for (pats, regex) in cases {
            let l = list(pats, *regex, false);
            for n in [lines.len(), BATCH_AT, BATCH_AT - 1, 1] {
                for from in [0, lines.len() - n] {
                    let part = &lines[from..from + n];
                    assert_eq!(
                        l.first_hit(part),
                        line_by_line(&l, part),
                        "{pats:?} {part:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_needed_regex_finds_every_line_a_pattern_hits() {
        let lines = ["done", "not done", "x", "", "Ready >", "word-ish"];
        let stops = list(&["error"], false, false);
        for (pats, regex) in [
            (&["done"][..], false),
            (&["^done$", r"\bword\b"][..], true),
            (&["^$"][..], true),
            (&["ready >$"][..], true),
        ] {
            let l = list(pats, regex, false);
            let needed = l.needed(&stops).expect("fit for a batch");
            let needed = needed.regex().expect("compiles");
            let joined = lines.join("\r\n") + "\r\n";
            for (i, line) in lines.iter().enumerate() {
                if (0..pats.len()).any(|p| l.hits(p, line)) {
                    let at: usize = lines[..i].iter().map(|l| l.len() + 2).sum();
                    assert!(
                        needed
                            .find_iter(joined.as_bytes())
                            .any(|m| m.start() <= at + line.len() && m.end() >= at),
                        "{pats:?} {line:?}"
                    );
                }
            }
        }
        assert!(list(&[r"\Ax"], true, false).needed(&stops).is_none());
        assert!(list(&["(?-m)^x"], true, false).needed(&stops).is_none());
        assert!(
            list(&[], false, false)
                .needed(&list(&[], false, false))
                .is_none()
        );
    }

    #[test]
    fn patterns_compiled_ahead_or_when_used_hit_the_same_lines() {
        let given: Vec<String> = ["Ready", "k", r"\w+ done$"].map(String::from).to_vec();
        let lines = ["READY", "\u{212a}", "all done", "x"];
        let want = list(&["Ready", "k", r"\w+ done$"], true, false).first_hit(&lines);
        let ahead = PatternList::new(&given, true, false, "--pattern").unwrap();
        ahead.compile_ahead();
        // A clone made while the thread compiles shares what it compiles.
        let twin = ahead.clone();
        assert_eq!(ahead.first_hit(&lines), want);
        assert_eq!(twin.first_hit(&lines[1..]), Some((1, vec![0])));
        assert!(twin.hits(2, "all done") && !twin.hits(2, "done"));
        assert_eq!(want, Some((0, vec![0])));
        // The forms for long batches and the lines needed are compiled
        // ahead too (a wait's first flood needs them), and hit the same.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ahead.batch.iter().flatten().any(|c| c.get().is_none()) {
            assert!(
                std::time::Instant::now() < deadline,
                "batch forms not compiled"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let many: Vec<String> = (0..40)
            .map(|i| format!("line {i}"))
            .chain(["READY".into()])
            .collect();
        assert_eq!(ahead.first_hit(&many), Some((0, vec![40])));
        let needed = ahead.needed(&list(&[], true, false)).unwrap();
        needed.compile_ahead();
        while needed.re.get().is_none() {
            assert!(std::time::Instant::now() < deadline, "needed not compiled");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(needed.regex().unwrap().is_match(b"x\r\nall done\r\n"));
    }

    #[test]
    fn a_pattern_near_the_size_limit_is_compiled_and_refused_when_given() {
        // Light patterns are left to compile later; heavy ones are not.
        let light = ["MARK_b3", r"\w+", r"^\$ $", "[a-z]{1,20}"];
        for p in light {
            let h = regex_syntax::ParserBuilder::new()
                .case_insensitive(true)
                .build()
                .parse(p)
                .unwrap();
            assert!(weight(&h) <= LIGHT, "{p}: {}", weight(&h));
        }
        let l = PatternList::new(&[r"\w{20}".into()], true, false, "--pattern").unwrap();
        assert!(
            l.compiled.get().is_some(),
            "a heavy pattern is compiled when given"
        );
        let e = PatternList::new(&[r"\w{10000}{10}".into()], true, false, "--stop").unwrap_err();
        assert!(
            e.starts_with("--stop #1 is not a valid regex") && e.contains("size limit"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn first_pattern_in_list_order_wins() {
        let l = list(&["two", "one"], false, false);
        assert_eq!(l.first_hit(&["one", "two"]), Some((0, vec![1])));
    }

    #[test]
    fn regex_mode_and_anchors_per_line() {
        let l = list(&["^done$"], true, false);
        assert_eq!(l.first_hit(&["not done", "done"]), Some((0, vec![1])));
    }

    #[test]
    fn stop_beats_success_in_the_same_batch() {
        let p = list(&["ok"], false, false);
        let s = list(&["error"], false, false);
        assert_eq!(
            judge(&p, &s, &["ok", "error: x"]),
            Some(Verdict::Stopped(0, vec![1]))
        );
        assert_eq!(judge(&p, &s, &["ok"]), Some(Verdict::Matched(0, vec![0])));
    }

    #[test]
    fn bad_patterns_are_clear_errors() {
        let e = PatternList::new(&["(".into()], true, false, "--pattern").unwrap_err();
        assert!(e.starts_with("--pattern #1 is not a valid regex"), "{e}");
        assert!(!e.contains('\n'));
        let e = PatternList::new(&["".into()], false, false, "--stop").unwrap_err();
        assert!(e.contains("--stop #1 is empty"));
        // Shell and tmux syntax in a literal pattern is plain data.
        let l = list(&["$(touch x); #{pane_id} '\""], false, false);
        assert!(l.first_hit(&["$(touch x); #{pane_id} '\""]).is_some());
    }
}
