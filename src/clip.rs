//! What a reply shows of a command's output: `--show` (grep with `-A`),
//! `--last-lines` (tail) and `--max-lines` (clip the middle, led by the
//! summary lines found there). The command itself always runs unfiltered;
//! `--save-to` keeps everything.

use regex::Regex;
use std::sync::OnceLock;

#[derive(Debug, Clone, Default)]
pub struct ClipOptions {
    /// Only lines matching this, plus `last_lines` (default 3) at the end.
    pub show: Option<Regex>,
    /// With `show`: this many lines after each match.
    pub show_after: usize,
    /// Only the last N lines (with `show`: how many follow the matches).
    pub last_lines: Option<usize>,
    /// At most this many lines; 0 for no limit.
    pub max_lines: usize,
}

impl ClipOptions {
    /// Every line, unclipped.
    pub fn all() -> ClipOptions {
        ClipOptions {
            show: None,
            show_after: 0,
            last_lines: None,
            max_lines: 0,
        }
    }
}

/// Lines after clipping, and how many were left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clipped {
    pub lines: Vec<String>,
    /// Lines of the input not in `lines`.
    pub clipped: usize,
    /// How many of `lines` (at the front) are summary lines from the
    /// clipped middle.
    pub summary: usize,
}

/// The marker that stands where lines were clipped.
pub fn marker(n: usize) -> String {
    format!("[tmux-wait: {n} lines clipped]")
}

pub fn clip(lines: &[String], opts: &ClipOptions) -> Clipped {
    let total = lines.len();
    let mut out: Vec<String>;
    if let Some(re) = &opts.show {
        // grep -n -A N: "N:" on a match, "N-" on a line after one.
        let mut keep = vec![0u8; total];
        for (i, l) in lines.iter().enumerate() {
            if re.is_match(l) {
                keep[i] = 2;
                for k in keep.iter_mut().skip(i + 1).take(opts.show_after) {
                    if *k == 0 {
                        *k = 1;
                    }
                }
            }
        }
        let last = opts.last_lines.unwrap_or(3).min(total);
        for k in keep.iter_mut().skip(total - last) {
            if *k == 0 {
                *k = 1;
            }
        }
        out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            match keep[i] {
                2 => out.push(format!("{}:{l}", i + 1)),
                1 => out.push(format!("{}-{l}", i + 1)),
                _ => {}
            }
        }
    } else if let Some(n) = opts.last_lines {
        out = lines[total - n.min(total)..].to_vec();
    } else {
        out = lines.to_vec();
    }
    let shown = out.len();
    let mut clipped = total - shown;
    let mut summary = 0;
    if opts.max_lines > 0 && out.len() > opts.max_lines {
        let max = opts.max_lines;
        let re = summary_regex();
        let marks: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].len() < 4096 && re.is_match(&out[i]))
            .collect();
        // Grow the summary until it holds every summary line of the middle
        // (or half the budget); the middle grows as head and tail shrink.
        let (mut head_n, mut tail_n, mut n_sum) = (0, 0, 0);
        for _ in 0..8 {
            let rest = max - n_sum;
            head_n = rest / 3;
            tail_n = rest - head_n;
            let in_middle = marks
                .iter()
                .filter(|&&i| i >= head_n && i < out.len() - tail_n)
                .count();
            let want = in_middle.min(max / 2);
            if want == n_sum {
                break;
            }
            n_sum = want;
        }
        let sum: Vec<&str> = marks
            .iter()
            .filter(|&&i| i >= head_n && i < out.len() - tail_n)
            .take(n_sum)
            .map(|&i| out[i].as_str())
            .collect();
        let removed = out.len() - head_n - tail_n;
        let mut v: Vec<String> = sum.iter().map(|s| (*s).to_owned()).collect();
        summary = v.len();
        v.extend(out[..head_n].iter().cloned());
        v.push(marker(removed));
        v.extend(out[out.len() - tail_n..].iter().cloned());
        // Summary lines are shown again, but the clipped count is of the
        // output's lines not shown in place.
        clipped += removed;
        out = v;
    }
    Clipped {
        lines: out,
        clipped,
        summary,
    }
}

/// The lines of one reply while they accumulate, kept within bounds: past
/// `MAX_KEPT` lines (or `MAX_BYTES`), the middle is thinned to what a reply
/// could still show from it (summary lines and `--show` matches), so memory
/// does not grow with a flood. `--save-to` gets every line regardless.
#[derive(Debug, Default)]
pub struct Lines {
    pub lines: Vec<String>,
    bytes: usize,
    /// Lines dropped from the middle so far.
    pub thinned: usize,
}

/// Lines kept before thinning.
pub const MAX_KEPT: usize = 50_000;
const MAX_BYTES: usize = 32 << 20;
/// What thinning keeps from the start and the end.
const KEEP_HEAD: usize = 5_000;
const KEEP_TAIL: usize = 20_000;
/// At most this many lines kept from a thinned middle.
const KEEP_MIDDLE: usize = 5_000;

impl Lines {
    pub fn push(&mut self, line: String, show: Option<&Regex>) {
        self.bytes += line.len();
        self.lines.push(line);
        if self.lines.len() > MAX_KEPT || self.bytes > MAX_BYTES {
            self.thin(show);
        }
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn clear(&mut self) {
        self.lines.clear();
        self.bytes = 0;
        self.thinned = 0;
    }

    fn thin(&mut self, show: Option<&Regex>) {
        let n = self.lines.len();
        let (head, tail) = (KEEP_HEAD.min(n), KEEP_TAIL.min(n - KEEP_HEAD.min(n)));
        let re = summary_regex();
        let middle: Vec<String> = self.lines.drain(head..n - tail).collect();
        let before = middle.len();
        let mut kept: Vec<String> = middle
            .into_iter()
            .filter(|l| l.len() < 4096 && (re.is_match(l) || show.is_some_and(|s| s.is_match(l))))
            .collect();
        kept.truncate(KEEP_MIDDLE);
        self.thinned += before - kept.len();
        let at = head;
        self.lines.splice(at..at, kept);
        self.bytes = self.lines.iter().map(String::len).sum();
    }
}

/// Lines that summarise a build or a test run: results, errors, failures.
fn summary_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let parts = [
            // cargo / rustc
            r"^(error|warning)(\[E\d{4}\])?: ",
            r"^test result: ",
            r"^error: (test failed|could not compile|aborting)",
            r"^failures:$",
            r"^---- .+ stdout ----$",
            r"^thread '.*' panicked at",
            // gcc / clang: file:line:col: error|warning
            r"^[^\s:][^:]*:\d+:\d+: (fatal error|error|warning): ",
            r"^[^\s:][^:]*:\d+: (error|undefined reference)",
            // pytest
            r"^=+ .*\b(passed|failed|error|errors|skipped)\b.* =+$",
            r"^(FAILED|ERROR) \S",
            // go test
            r"^--- FAIL: ",
            r"^FAIL(\s|$)",
            r"^ok\s+\S+\s",
            r"^panic: ",
            // make
            r"^g?make(\[\d+\])?: \*\*\* ",
            // Python
            r"^Traceback \(most recent call last\):$",
            r"^[A-Za-z_.]*(Error|Exception): ",
        ];
        Regex::new(&parts.join("|")).expect("summary patterns are valid")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn nothing_to_clip() {
        let c = clip(&lines(3), &ClipOptions::default());
        assert_eq!(c.lines, lines(3));
        assert_eq!(c.clipped, 0);
    }

    #[test]
    fn last_lines_is_a_tail() {
        let o = ClipOptions {
            last_lines: Some(2),
            ..Default::default()
        };
        let c = clip(&lines(5), &o);
        assert_eq!(c.lines, ["line 4", "line 5"]);
        assert_eq!(c.clipped, 3);
    }

    #[test]
    fn show_numbers_matches_and_lines_after() {
        let mut v = lines(10);
        v[2] = "error: bad".into();
        let o = ClipOptions {
            show: Some(Regex::new("error").unwrap()),
            show_after: 1,
            last_lines: Some(1),
            ..Default::default()
        };
        let c = clip(&v, &o);
        assert_eq!(c.lines, ["3:error: bad", "4-line 4", "10-line 10"]);
        assert_eq!(c.clipped, 7);
    }

    #[test]
    fn max_lines_clips_the_middle_and_leads_with_its_summary() {
        let mut v = lines(1000);
        v[500] = "test result: FAILED. 3 passed; 1 failed".into();
        v[501] = "src/a.c:12:5: error: expected ';'".into();
        v[502] = "make: *** [Makefile:3: all] Error 1".into();
        v[503] = "--- FAIL: TestThing (0.00s)".into();
        v[504] = "===== 1 failed, 2 passed in 0.1s =====".into();
        let o = ClipOptions {
            max_lines: 20,
            ..Default::default()
        };
        let c = clip(&v, &o);
        assert_eq!(c.summary, 5);
        assert_eq!(c.lines[0], v[500]);
        assert_eq!(c.lines[4], v[504]);
        assert_eq!(c.lines[5], "line 1");
        assert!(c.lines.iter().any(|l| l.starts_with("[tmux-wait: ")));
        assert_eq!(c.lines.last().unwrap(), "line 1000");
        assert_eq!(c.lines.len(), 21);
        assert_eq!(c.clipped, 1000 - 15);
    }

    #[test]
    fn a_flood_is_thinned_to_its_ends_and_summary() {
        let mut l = Lines::default();
        for i in 0..200_000 {
            let line = if i == 100_000 {
                "error: the one that matters".to_owned()
            } else {
                format!("line {i}")
            };
            l.push(line, None);
            assert!(l.len() <= MAX_KEPT);
        }
        assert!(l.lines.contains(&"error: the one that matters".to_owned()));
        assert_eq!(l.lines[0], "line 0");
        assert_eq!(l.lines.last().unwrap(), "line 199999");
        assert_eq!(l.len() + l.thinned, 200_000);
    }

    #[test]
    fn summary_recognises_the_usual_tools() {
        for l in [
            "error[E0308]: mismatched types",
            "warning: unused variable: `x`",
            "test result: ok. 5 passed; 0 failed",
            "thread 'main' panicked at src/main.rs:2:5:",
            "main.c:3:1: error: unknown type name 'foo'",
            "FAILED tests/test_a.py::test_b - assert 1 == 2",
            "=========== 1 failed in 0.02s ===========",
            "--- FAIL: TestX (0.01s)",
            "FAIL\texample.com/pkg\t0.005s",
            "ok  \texample.com/pkg\t0.005s",
            "make[1]: *** [Makefile:2: t] Error 2",
            "Traceback (most recent call last):",
        ] {
            assert!(summary_regex().is_match(l), "{l}");
        }
        for l in ["all good", "compiling foo v0.1.0", "error handling is fine"] {
            assert!(!summary_regex().is_match(l), "{l}");
        }
    }
}
