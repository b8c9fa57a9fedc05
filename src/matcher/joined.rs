//! Many patterns searched as one, over bytes: the hub's sieve asks which
//! lines of a flood any of fifty waits could use.
//!
//! Why not one regex of them all: a pattern that ignores case is, to the
//! regex engine's literal search, every way of writing its letters
//! (`never1` is 32 strings). Past about ten such patterns there are too
//! many strings for its vector search, and it gives up on it: the search
//! falls back to its automaton over every byte, ten times slower (fifty
//! waits on a `seq` flood: 35 ms for its 17 MB against 3 ms). So those
//! patterns are folded: each letter stands for its lower case only, and
//! they are searched in a copy of the text with A-Z lowered. The same
//! lines match, byte for byte, as the unfolded pattern in the text as it
//! is (see [`fold`]); the engine's literal search sees one string per
//! pattern. Patterns that match case, or cannot be folded, are searched
//! as written, in the text as it is.

use regex_automata::meta::{self, Regex};
use regex_syntax::hir::{
    self, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind,
};
use std::cell::RefCell;
use std::ops::ControlFlow;

/// One search for many patterns, each `(regex source, match case)`.
#[derive(Debug)]
pub struct Joined {
    /// The patterns that ignore case, folded: searched in the lowered text.
    folded: Option<Regex>,
    /// The others, searched in the text as it is.
    exact: Option<Regex>,
    /// The lowered copy of the text searched last (kept for its room).
    lowered: RefCell<Vec<u8>>,
}

impl Joined {
    /// None when there are no patterns, or they do not compile.
    pub fn new(patterns: &[(String, bool)]) -> Option<Joined> {
        if patterns.is_empty() {
            return None;
        }
        let mut folded = Vec::new();
        let mut exact = Vec::new();
        for (source, match_case) in patterns {
            let hir = parse(source, *match_case)?;
            // One that never matches (the attention watch wants no line:
            // `[^\s\S]`) is left out: alone, the engine would still read
            // every byte for it.
            if hir.properties().minimum_len().is_none() {
                continue;
            }
            match fold(&hir).filter(|_| !*match_case) {
                Some(f) => folded.push(f),
                None => exact.push(hir),
            }
        }
        let build = |hirs: Vec<Hir>| -> Option<Option<Regex>> {
            if hirs.is_empty() {
                return Some(None);
            }
            meta::Builder::new()
                .configure(
                    meta::Config::new()
                        .nfa_size_limit(Some(super::SIZE_LIMIT))
                        .utf8_empty(false),
                )
                .build_from_hir(&Hir::alternation(hirs))
                .ok()
                .map(Some)
        };
        Some(Joined {
            folded: build(folded)?,
            exact: build(exact)?,
            lowered: RefCell::new(Vec::new()),
        })
    }

    /// Some pattern hits `text`.
    pub fn is_match(&self, text: &[u8]) -> bool {
        self.exact.as_ref().is_some_and(|re| re.is_match(text))
            || self.folded.as_ref().is_some_and(|re| {
                let mut low = self.lowered.borrow_mut();
                lower_into(text, &mut low);
                re.is_match(low.as_slice())
            })
    }

    /// Calls `f` with the start and end of each hit in `text`, in the
    /// order they start (each pattern set's hits as its regex finds them,
    /// leftmost first and not overlapping, merged), until `f` breaks.
    pub fn for_each_hit<R>(
        &self,
        text: &[u8],
        mut f: impl FnMut(usize, usize) -> ControlFlow<R>,
    ) -> Option<R> {
        let mut low = self.lowered.borrow_mut();
        if self.folded.is_some() {
            lower_into(text, &mut low);
        }
        let mut a = self
            .exact
            .as_ref()
            .map(|re| re.find_iter(text))
            .into_iter()
            .flatten()
            .peekable();
        let mut b = self
            .folded
            .as_ref()
            .map(|re| re.find_iter(low.as_slice()))
            .into_iter()
            .flatten()
            .peekable();
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.start() <= y.start() => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => return None,
            }?;
            if let ControlFlow::Break(r) = f(next.start(), next.end()) {
                return Some(r);
            }
        }
    }
}

/// `text` with A-Z lowered, into `out`.
fn lower_into(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(text.iter().map(u8::to_ascii_lowercase));
}

/// A pattern's syntax, as the waits' own search compiles it (on lines
/// joined by `\r\n`, over bytes).
fn parse(source: &str, match_case: bool) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .case_insensitive(!match_case)
        .multi_line(true)
        .crlf(true)
        .utf8(false)
        .build()
        .parse(source)
        .ok()
}

/// A pattern that ignores case (`hir`), rewritten to match in a text with
/// A-Z lowered exactly where it matches the text as it is: each class
/// without A-Z. That holds when every class holds every case of each
/// character in it (so a character and its lowered self are in it, or
/// out of it, together), and no literal holds an ASCII letter (what a
/// pattern that ignores case has, but for a part in `(?-i:...)`). None
/// when it does not hold.
fn fold(hir: &Hir) -> Option<Hir> {
    Some(match hir.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Look(look) => Hir::look(*look),
        HirKind::Literal(hir::Literal(bytes)) => {
            if bytes.iter().any(u8::is_ascii_alphabetic) {
                return None;
            }
            Hir::literal(bytes.clone())
        }
        HirKind::Class(c) => {
            // A class of a pattern that ignores case holds every case of
            // each character in it: one with a part that matches case
            // does not.
            let mut closed = c.clone();
            closed.try_case_fold_simple().ok()?;
            if closed != *c {
                return None;
            }
            let mut folded = c.clone();
            match &mut folded {
                Class::Unicode(u) => {
                    u.difference(&ClassUnicode::new([ClassUnicodeRange::new('A', 'Z')]));
                }
                Class::Bytes(b) => {
                    b.difference(&ClassBytes::new([ClassBytesRange::new(b'A', b'Z')]));
                }
            }
            Hir::class(folded)
        }
        HirKind::Repetition(r) => Hir::repetition(hir::Repetition {
            sub: Box::new(fold(&r.sub)?),
            ..r.clone()
        }),
        HirKind::Capture(c) => Hir::capture(hir::Capture {
            sub: Box::new(fold(&c.sub)?),
            ..c.clone()
        }),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(fold).collect::<Option<_>>()?),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.iter().map(fold).collect::<Option<_>>()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(j: &Joined, text: &[u8]) -> Vec<(usize, usize)> {
        let mut all = Vec::new();
        j.for_each_hit::<()>(text, |a, b| {
            all.push((a, b));
            ControlFlow::Continue(())
        });
        all
    }

    fn key(patterns: &[(&str, bool)]) -> Vec<(String, bool)> {
        patterns
            .iter()
            .map(|(p, c)| ((*p).to_owned(), *c))
            .collect()
    }

    /// The hits of each pattern as the regex crate finds them, one at a
    /// time, merged in order of their start.
    fn each_alone(patterns: &[(&str, bool)], text: &[u8]) -> Vec<(usize, usize)> {
        let mut all = Vec::new();
        for (p, case) in patterns {
            let re = regex::bytes::RegexBuilder::new(p)
                .case_insensitive(!case)
                .multi_line(true)
                .crlf(true)
                .build()
                .unwrap();
            all.extend(re.find_iter(text).map(|m| (m.start(), m.end())));
        }
        all.sort();
        all
    }

    #[test]
    fn folded_patterns_hit_where_they_hit_unfolded() {
        let text = "Never7 NEVER12 never3\r\nFloodEnd\r\nask ASK a\u{212A}\r\nstra\u{df}e STRASSE \u{1e9e}\r\n\u{17f}ee see\r\n".as_bytes();
        for patterns in [
            &[("never7", false), ("never12", false), ("floodend", false)][..],
            &[("ask", false)],
            &[("stra\u{df}e", false)],
            &[("see", false)],
            &[(r"\bnever\d+\b", false)],
            &[("[a-f]+nd", false)],
            &[("(?-i:N)ever", false)],
            &[("[^a-z ]+", false)],
            &[("Never", true), ("never", false)],
            &[("^ask", false), ("e$", false)],
        ] {
            let j = Joined::new(&key(patterns)).unwrap();
            let mut got = hits(&j, text);
            got.sort();
            let mut want = each_alone(patterns, text);
            // (Alone, two patterns may hit overlapping spans that, joined,
            // are one hit: compare where lines are hit.)
            let line = |at: usize| text[..at].iter().filter(|&&b| b == b'\n').count();
            got.dedup_by_key(|h| line(h.0));
            want.dedup_by_key(|h| line(h.0));
            let lines = |v: &[(usize, usize)]| v.iter().map(|h| line(h.0)).collect::<Vec<_>>();
            assert_eq!(lines(&got), lines(&want), "{patterns:?}");
            assert_eq!(j.is_match(text), !want.is_empty(), "{patterns:?}");
        }
    }

    #[test]
    fn only_what_can_be_folded_is_folded() {
        let folded = |p: &str| fold(&parse(p, false).unwrap()).is_some();
        assert!(folded("never12"));
        assert!(folded(r"\$ $"));
        assert!(folded("[a-z]+ passed"));
        assert!(folded("stra\u{df}e"));
        // A part that matches case.
        assert!(!folded("(?-i:N)ever"));
        assert!(!folded("(?-i:[A-F])"));
    }

    #[test]
    fn a_pattern_that_matches_case_is_not_folded() {
        let j = Joined::new(&key(&[("Never", true)])).unwrap();
        assert!(j.folded.is_none());
        assert!(!j.is_match(b"never"));
        assert!(j.is_match(b"Never"));
    }

    #[test]
    fn a_pattern_that_never_matches_costs_no_search() {
        let j = Joined::new(&key(&[(r"[^\s\S]", true)])).unwrap();
        assert!(j.folded.is_none() && j.exact.is_none());
        assert!(!j.is_match(b"anything\r\n"));
        let j = Joined::new(&key(&[(r"[^\s\S]", true), ("never1", false)])).unwrap();
        assert!(j.exact.is_none());
        assert!(j.is_match(b"NEVER1"));
    }

    #[test]
    fn bad_patterns_join_to_none() {
        assert!(Joined::new(&[]).is_none());
        assert!(Joined::new(&key(&[("(", false)])).is_none());
    }

    #[test]
    fn hits_stop_when_told() {
        let j = Joined::new(&key(&[("a", false), ("B", true)])).unwrap();
        let mut seen = 0;
        let r = j.for_each_hit(b"xaBaB", |s, _| {
            seen += 1;
            if s >= 2 {
                ControlFlow::Break(s)
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!((r, seen), (Some(2), 2));
    }
}
