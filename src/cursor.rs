//! Named read positions in a pane's output, kept with the pane.
//!
//! A cursor is a pane user option (`@tmux-wait-cursor-NAME`), so it lives
//! and dies with the pane and needs no file. It records the first row not
//! yet shown (counted from the oldest line of history) and a fingerprint of
//! the two rows before it. tmux keeps no count of lines that ever scrolled
//! through a pane (3.3a and later), so the row number alone is not enough:
//! when the history is trimmed every row moves up. The fingerprint finds the
//! place again; when it is gone the cursor says that lines were missed
//! instead of guessing which ones.

use std::hash::{Hash, Hasher};
use unicode_width::UnicodeWidthChar;

/// Rows captured above the expected place, so output that scrolled between
/// the first look and the capture still holds the fingerprint.
const MARGIN: i64 = 64;

pub const OPTION_PREFIX: &str = "@tmux-wait-cursor-";

/// A pane's size and where its cursor and history stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Geometry {
    pub history_size: i64,
    pub history_limit: i64,
    pub height: i64,
    pub width: i64,
    pub cursor_x: i64,
    pub cursor_y: i64,
}

/// What [`capture_start`] needs to guess where a cursor's place is now.
pub const GEOMETRY_FORMAT: &str = "#{history_size}\t#{history_limit}\t#{cursor_y}\t#{pane_height}";

/// Cursor names: what a pane option name can hold safely.
pub fn validate_name(name: &str) -> crate::error::Result<()> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        let shown: String = name.chars().take(40).collect();
        return Err(crate::error::Error::usage(format!(
            "invalid cursor name {:?}: use 1 to 64 of A-Z a-z 0-9 _ -",
            shown
        )));
    }
    Ok(())
}

pub fn option_name(name: &str) -> String {
    format!("{OPTION_PREFIX}{name}")
}

/// What a cursor remembers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The pane's process when saved (a different one now: respawned).
    pub pid: u32,
    /// First row not yet shown, counted from the oldest line of history.
    pub abs: i64,
    /// Hash of the two rows above `abs`.
    pub fp: u64,
    /// Hash of the unfinished line at `abs` as it was shown (0: not shown).
    pub part: u64,
    /// A command typed by `run` whose end was not seen yet.
    pub run: Option<String>,
    /// history_size when saved (smaller now: the history was cleared).
    pub history_size: i64,
    /// Length in characters and hash of the start of the row at `abs` when
    /// saved: tells the place apart when the two rows above are empty (the
    /// top of a pane, or after a clear), where the fingerprint says little.
    pub head: (usize, u64),
    /// A command (not the shell) was in the pane's foreground when saved:
    /// if the shell is back at its prompt now, it ended in between.
    pub busy: bool,
    /// When it was saved (Unix seconds; 0 for a record written before this
    /// was kept): a command that tmux says ended since ended in between.
    pub saved: u64,
    /// Someone read the terminal when saved (the shell at its prompt, a
    /// program asking): text that continues the row at `abs` later was
    /// typed there, not written by a program.
    pub prompt: bool,
    /// The place was known for sure when saved. On a pane that never
    /// paused, the place is found by matching the lines taken in against
    /// the rows captured (see [`align`]); where several places match
    /// (lines that repeat), the nearest was taken and this is false: the
    /// next read says its lines may not be exact.
    pub sure: bool,
}

impl Record {
    pub fn parse(value: &str) -> Option<Record> {
        let mut f: Vec<&str> = value.trim().split(':').collect();
        if f.len() == 11 {
            // Written before `saved` was kept.
            f.insert(10, "0");
        }
        if f.len() == 12 {
            // Written before `prompt` was kept.
            f.insert(11, "0");
        }
        if f.len() == 13 {
            // Written before `sure` was kept.
            f.insert(12, "1");
        }
        if f.len() != 14 || f[0] != "tw1" {
            return None;
        }
        let flag = |v: &str| match v {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        };
        let run = match f[6] {
            "-" => None,
            id if !id.is_empty()
                && id.len() <= 64
                && id.bytes().all(|b| b.is_ascii_alphanumeric()) =>
            {
                Some(id.to_owned())
            }
            _ => return None,
        };
        Some(Record {
            pid: f[1].parse().ok()?,
            abs: f[2].parse().ok()?,
            fp: u64::from_str_radix(f[3], 16).ok()?,
            part: u64::from_str_radix(f[4], 16).ok()?,
            history_size: f[5].parse().ok()?,
            run,
            head: (f[7].parse().ok()?, u64::from_str_radix(f[8], 16).ok()?),
            busy: flag(f[9])?,
            saved: f[10].parse().ok()?,
            prompt: flag(f[11])?,
            sure: flag(f[12])?,
        })
        .filter(|r| r.abs >= 0 && f[13] == "end")
    }

    pub fn format(&self) -> String {
        format!(
            "tw1:{}:{}:{:x}:{:x}:{}:{}:{}:{:x}:{}:{}:{}:{}:end",
            self.pid,
            self.abs,
            self.fp,
            self.part,
            self.history_size,
            self.run.as_deref().unwrap_or("-"),
            self.head.0,
            self.head.1,
            u8::from(self.busy),
            self.saved,
            u8::from(self.prompt),
            u8::from(self.sure)
        )
    }
}

pub fn hash_text(parts: &[&str]) -> u64 {
    // FNV-1a: stable across builds and platforms (DefaultHasher is not
    // promised to be).
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for p in parts {
        p.hash(&mut h);
    }
    h.0
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The fingerprint of the two rows above a place.
pub fn fingerprint(above2: &str, above1: &str) -> u64 {
    hash_text(&[above2.trim_end(), above1.trim_end()])
}

/// Row `y` of a screen whose top row is `rows[offset]` (rows of history
/// above it): empty past either end.
pub fn screen_row(rows: &[String], offset: i64, y: i64) -> &str {
    usize::try_from(offset + y)
        .ok()
        .and_then(|i| rows.get(i))
        .map(String::as_str)
        .unwrap_or("")
}

/// The `head` of a row: its first characters (at most 64), counted and
/// hashed.
pub fn head(row: &str) -> (usize, u64) {
    let t: String = row.trim_end().chars().take(64).collect();
    (t.chars().count(), hash_text(&[&t]))
}

/// `row` starts with the text whose [`head`] this is.
pub fn head_matches(row: &str, head: (usize, u64)) -> bool {
    let t: String = row.chars().take(head.0).collect();
    t.chars().count() == head.0 && hash_text(&[&t]) == head.1
}

/// Where the stream stands in a capture of the pane's rows taken a moment
/// earlier, while output kept coming (so the stream may be ahead of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alignment {
    /// The stream's cursor row is this many rows below the captured
    /// cursor's, and no other place matches.
    Ahead(usize),
    /// As `Ahead`, the nearest of several places that match (lines that
    /// repeat).
    Nearest(usize),
    /// No place matches (the stream is not a line-by-line flow the rows
    /// can be matched against).
    Unknown,
}

/// Rows compared above the cursor row when aligning.
const ALIGN_ROWS: usize = 3;

/// Find the stream's cursor row in `capture` (rows, `cursor` the captured
/// cursor's index): `drawn` are the rows the stream drew, its cursor row
/// last. The stream is `d` rows ahead when its rows above `drawn[n-1-d]`
/// are the rows above the captured cursor and that row starts with the
/// captured cursor row (more may have been written on it since).
pub fn align(capture: &[String], cursor: usize, drawn: &[String]) -> Alignment {
    if drawn.is_empty() || cursor >= capture.len() {
        return Alignment::Unknown;
    }
    let last = drawn.len() - 1;
    let mut found = Vec::new();
    for d in 0..=last {
        let t = last - d;
        if !drawn[t].trim_end().starts_with(capture[cursor].trim_end()) {
            continue;
        }
        let m = ALIGN_ROWS.min(t).min(cursor);
        let above = (1..=m).all(|j| drawn[t - j].trim_end() == capture[cursor - j].trim_end());
        // Too little to compare: only where the capture holds no more rows
        // above either (the top of the pane).
        if above && (m == ALIGN_ROWS || m == cursor) {
            found.push(d);
        }
    }
    match found.as_slice() {
        [] => Alignment::Unknown,
        [d] => Alignment::Ahead(*d),
        [d, ..] => Alignment::Nearest(*d),
    }
}

/// Where a stream stands against a capture taken between two syncs of it
/// (`rows`, the captured cursor's row at `at`; `exact`: no byte came
/// between the syncs): rows it is ahead of the capture's cursor (behind,
/// when negative), whether that is sure, and, when ahead, how many of the
/// rows it drew go below the capture's cursor row.
#[derive(Debug, PartialEq, Eq)]
pub struct Place {
    pub ahead: i64,
    pub sure: bool,
    pub drawn_below: Option<usize>,
}

pub fn stream_place(
    rows: &[String],
    at: usize,
    drawn: &[String],
    exact: bool,
    by_number: Option<usize>,
) -> Place {
    let mut place = Place {
        ahead: 0,
        sure: exact,
        drawn_below: None,
    };
    // The stream's cursor row by its number (`by_number`, the index in
    // `rows`), where the rows agree there: at or above the captured
    // cursor's, it is the place for sure, however few rows the stream drew
    // (one, when it brought no line since its entry: no rows to match).
    if let Some(p) = by_number
        && p <= at
        && agrees_at(rows, drawn, p)
    {
        place.sure = true;
        place.ahead = p as i64 - at as i64;
        return place;
    }
    let alignment = align(rows, at, drawn);
    match alignment {
        Alignment::Ahead(0) => {}
        // Output kept coming around the capture: the stream went on past
        // it, and the rows it drew below the captured cursor come after.
        Alignment::Ahead(d) | Alignment::Nearest(d) if !exact => {
            place.sure = matches!(alignment, Alignment::Ahead(_));
            place.ahead = i64::try_from(d).unwrap_or(0);
            place.drawn_below = Some(d);
        }
        // tmux may draw output before it hands it to the pipe (its write
        // waits for the next turn of its loop): the capture is then ahead
        // of the stream even with no byte between the syncs. The place is
        // where the stream stands, so the next call reads the rest. (On
        // the capture's cursor row itself the two agree.)
        _ if !drawn.is_empty() && at < rows.len() => {
            if let Some((p, unique)) = find_behind(&rows[..=at], drawn)
                && p < at
            {
                place.sure = unique;
                place.ahead = p as i64 - at as i64;
            }
        }
        _ => {}
    }
    place
}

/// The stream's rows end at row `p` of `capture`: its cursor row begins
/// row `p` (which may have grown since), and the rows above it that both
/// hold (up to `ALIGN_ROWS`) are the same.
fn agrees_at(capture: &[String], drawn: &[String], p: usize) -> bool {
    let Some(last) = drawn.len().checked_sub(1) else {
        return false;
    };
    p < capture.len()
        && capture[p].trim_end().starts_with(drawn[last].trim_end())
        && (1..=ALIGN_ROWS.min(last).min(p))
            .all(|j| capture[p - j].trim_end() == drawn[last - j].trim_end())
}

pub fn find_behind(capture: &[String], drawn: &[String]) -> Option<(usize, bool)> {
    let last = drawn.len().checked_sub(1)?;
    let mut found = Vec::new();
    for p in 0..capture.len() {
        if !capture[p].trim_end().starts_with(drawn[last].trim_end()) {
            continue;
        }
        // As many rows above as the stream drew (up to ALIGN_ROWS) must
        // be there to compare.
        let m = ALIGN_ROWS.min(last);
        if p < m {
            continue;
        }
        if (1..=m).all(|j| capture[p - j].trim_end() == drawn[last - j].trim_end()) {
            found.push(p);
        }
    }
    // Lines that repeat: the latest place shows no line twice.
    let p = *found.last()?;
    Some((p, found.len() == 1))
}

/// The rows below where a stopped stream stood in `rows` (the pane's rows
/// up to its cursor's, captured after the stream stopped), trimmed, and
/// whether that place was found for sure (see [`find_behind`]). `at` is
/// the index in `rows` where the stream's cursor row is by its number
/// (when nothing was trimmed from the history): taken when the rows agree
/// there, so a prompt like the one typed at since is no second place.
pub fn rows_after(
    rows: &[String],
    drawn: Option<&[String]>,
    at: Option<usize>,
) -> (Vec<String>, bool) {
    let Some(drawn) = drawn.filter(|d| !d.is_empty()) else {
        return (Vec::new(), false);
    };
    // The rows above where it stood may have scrolled off the screen:
    // then its own row alone (a place that may not be the only one).
    let Some((p, unique)) = at
        .filter(|&p| agrees_at(rows, drawn, p))
        .map(|p| (p, true))
        .or_else(|| find_behind(rows, drawn))
        .or_else(|| find_behind(rows, &drawn[drawn.len() - 1..]).map(|(p, _)| (p, false)))
    else {
        return (Vec::new(), false);
    };
    let last = drawn.last().map_or("", |r| r.trim_end());
    let mut new = Vec::new();
    if rows[p].trim_end() != last {
        new.push(rows[p].trim_end().to_owned());
    }
    new.extend(
        rows[p + 1..]
            .iter()
            .filter(|r| !r.trim().is_empty())
            .map(|r| r.trim_end().to_owned()),
    );
    (new, unique)
}

/// Where to start the entry capture for this cursor value, given
/// `GEOMETRY_FORMAT`'s fields (history_size, history_limit, cursor_y,
/// height): a row number relative to the top of the screen, or `-` for all
/// of the history.
pub fn capture_start(value: &str, f: &[i64]) -> String {
    let history = f.first().copied().unwrap_or(0).max(0);
    let cursor_y = f.get(2).copied().unwrap_or(0).max(0);
    let Some(rec) = Record::parse(value) else {
        // A new cursor starts with what is on the screen.
        return "0".to_owned();
    };
    let rel = rec.abs - history;
    let start = rel - 2 - MARGIN;
    if start < -history || rel > cursor_y + 1 {
        "-".to_owned()
    } else {
        start.to_string()
    }
}

/// How a cursor's place was found again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Index into the captured lines of the first one not shown.
    pub first: usize,
    /// The first line is the unfinished line shown last time, unchanged.
    pub skip_first: bool,
    /// Lines lost before anyone saw them.
    pub missed: Missed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Nothing was lost.
    None,
    /// The history was trimmed past the cursor: at least this many lines
    /// were lost (tmux keeps no count of what it trimmed).
    Trimmed(u64),
    /// The history was cleared (`clear-history`, `\e[3J`): lines written
    /// before that and not shown are gone, how many is unknown.
    Cleared,
}

/// Split a joined line into the rows it takes at this width.
pub fn split_rows(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = vec![String::new()];
    let mut used = 0;
    for ch in line.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w > width && used > 0 {
            rows.push(String::new());
            used = 0;
        }
        rows.last_mut().expect("one row").push(ch);
        used += w;
    }
    rows
}

/// Find the cursor's place in `lines` (joined lines captured from absolute
/// row `from_abs`). `whole` says the capture reaches the oldest line of
/// history, so a place not found is truly gone.
pub fn locate(
    rec: Option<&Record>,
    lines: &[String],
    from_abs: i64,
    geometry: &Geometry,
    whole: bool,
) -> Option<Located> {
    let Some(rec) = rec else {
        return Some(Located {
            first: 0,
            skip_first: false,
            missed: Missed::None,
        });
    };
    let width = usize::try_from(geometry.width.max(1)).unwrap_or(80);
    // (line index, first row of its line?, row text)
    let mut rows: Vec<(usize, bool, String)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        for (j, r) in split_rows(l, width).into_iter().enumerate() {
            rows.push((i, j == 0, r));
        }
    }
    let row_text = |k: i64| -> &str {
        if k < 0 {
            ""
        } else {
            rows.get(k as usize).map(|r| r.2.as_str()).unwrap_or("")
        }
    };
    let ambiguous = rec.fp == fingerprint("", "");
    let mut best: Option<i64> = None;
    let last = rows.len() as i64;
    for k in 0..=last {
        let abs = from_abs + k;
        if abs > rec.abs {
            break;
        }
        // Rows above the captured start are only known (to be empty) at
        // the very top of the history.
        if k < 2 && from_abs > 0 {
            continue;
        }
        if fingerprint(row_text(k - 2), row_text(k - 1)) == rec.fp
            && (!ambiguous || head_matches(row_text(k), rec.head))
        {
            best = Some(k);
        }
    }
    // tmux trims a tenth of the limit once the history reaches it, so after
    // any trim the history never holds less than nine tenths: below that
    // (and not cleared) no row has moved, whatever the fingerprint says (a
    // row above rewritten in place).
    let gap = (geometry.history_limit / 10).max(1);
    let unmoved = geometry.history_size < geometry.history_limit - gap
        && geometry.history_size >= rec.history_size
        && rec.abs >= from_abs
        && rec.abs <= from_abs + last;
    if best.is_none() && unmoved {
        best = Some(rec.abs - from_abs);
    }
    match best {
        Some(k) => {
            let first = rows.get(k as usize).map(|r| r.0).unwrap_or(lines.len());
            let skip_first = rec.part != 0
                && rows.get(k as usize).is_some_and(|r| r.1)
                && lines
                    .get(first)
                    .is_some_and(|l| hash_text(&[l.trim_end()]) == rec.part);
            Some(Located {
                first,
                skip_first,
                missed: Missed::None,
            })
        }
        None if !whole => None,
        None => {
            let missed = if geometry.history_size < rec.history_size || geometry.history_limit == 0
            {
                Missed::Cleared
            } else {
                // The place is gone, so at least enough tenths went to
                // pass it.
                let trims = rec.abs / gap + 1;
                Missed::Trimmed(u64::try_from(trims * gap - rec.abs).unwrap_or(0))
            };
            Some(Located {
                first: 0,
                skip_first: false,
                missed,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A stream that stopped at a quiet prompt drew one row: the rows
    /// above it tell that prompt from the later ones, and what was typed
    /// and printed after it is recovered.
    /// The capture shows a line the stream has not got yet: the place is
    /// the stream's, one row up, so that line is the next call's.
    #[test]
    fn a_capture_ahead_of_the_stream_places_the_cursor_behind() {
        let rows = v(&["L21", "L22", "L23", "L24", "L25", ""]);
        let drawn = v(&["L21", "L22", "L23", "L24", ""]);
        let p = stream_place(&rows, 5, &drawn, true, None);
        assert_eq!((p.ahead, p.sure, p.drawn_below), (-1, true, None));
        // In step: nothing moves.
        let p = stream_place(&rows, 5, &v(&["L23", "L24", "L25", ""]), true, None);
        assert_eq!((p.ahead, p.sure), (0, true));
        // The stream ahead (output went on after the capture).
        let drawn = v(&["L23", "L24", "L25", "L26", ""]);
        let p = stream_place(&rows, 5, &drawn, false, None);
        assert_eq!((p.ahead, p.sure, p.drawn_below), (1, true, Some(1)));
        // Its own row half drawn: the same row.
        let p = stream_place(&rows, 4, &v(&["L22", "L23", "L24", "L2"]), true, None);
        assert_eq!(p.ahead, 0);
    }

    /// The stream brought no line since its entry (one row drawn) while
    /// tmux drew three more: the rows above the entry, and its number,
    /// place the cursor where the stream stands, so those three lines are
    /// the next call's.
    #[test]
    fn a_stream_that_drew_one_row_is_placed_behind_the_capture() {
        let rows = v(&["L53", "L54", "L55", "L56", "L57", "L58", ""]);
        // Its own row alone: no rows to match, but its number.
        let p = stream_place(&rows, 6, &v(&[""]), true, Some(3));
        assert_eq!((p.ahead, p.sure, p.drawn_below), (-3, true, None));
        // The rows above its entry: matched.
        let drawn = v(&["L53", "L54", "L55", ""]);
        let p = stream_place(&rows, 6, &drawn, true, None);
        assert_eq!((p.ahead, p.sure), (-3, true));
        // A number the rows do not agree with is not taken.
        let p = stream_place(&rows, 6, &drawn, true, Some(2));
        assert_eq!((p.ahead, p.sure), (-3, true));
        // Repeated lines: the number decides.
        let rows = v(&["x", "", "x", "", "x", ""]);
        let p = stream_place(&rows, 5, &v(&["x", ""]), true, Some(3));
        assert_eq!((p.ahead, p.sure), (-2, true));
    }

    #[test]
    fn a_prompt_is_found_by_the_rows_above_it() {
        let rows = v(&["$ ls", "a b", "$ echo M", "M", "$ "]);
        let drawn = v(&["$ ls", "a b", "$ "]);
        assert_eq!(
            rows_after(&rows, Some(&drawn), None),
            (v(&["$ echo M", "M", "$"]), true)
        );
        // Those rows scrolled off: its own row alone, not for sure.
        let drawn = v(&["gone", "a b c", "$ "]);
        assert_eq!(rows_after(&rows, Some(&drawn), None), (Vec::new(), false));
    }

    #[test]
    fn a_prompt_at_the_top_is_found_by_its_number() {
        // A fresh pane's only row was its prompt: nothing above tells it
        // from the prompt after the command typed since, its number does.
        let rows = v(&["$ echo M", "M", "$"]);
        let drawn = v(&["$ "]);
        assert_eq!(rows_after(&rows, Some(&drawn), None), (Vec::new(), false));
        assert_eq!(
            rows_after(&rows, Some(&drawn), Some(0)),
            (v(&["$ echo M", "M", "$"]), true)
        );
        // A number the rows do not agree with is not taken.
        let drawn = v(&["M"]);
        assert_eq!(rows_after(&rows, Some(&drawn), Some(0)), (v(&["$"]), true));
    }

    fn geo(width: i64) -> Geometry {
        Geometry {
            history_size: 100,
            history_limit: 2000,
            height: 24,
            width,
            cursor_x: 0,
            cursor_y: 0,
        }
    }

    fn rec(abs: i64, a: &str, b: &str) -> Record {
        Record {
            pid: 1,
            abs,
            fp: fingerprint(a, b),
            part: 0,
            run: None,
            history_size: 0,
            head: (0, hash_text(&[""])),
            busy: false,
            saved: 1_796_000_000,
            prompt: false,
            sure: true,
        }
    }

    #[test]
    fn record_round_trips_and_rejects_junk() {
        let mut r = rec(42, "a", "b");
        r.run = Some("abc123".into());
        r.part = 7;
        assert_eq!(Record::parse(&r.format()), Some(r.clone()));
        r.prompt = true;
        assert_eq!(Record::parse(&r.format()), Some(r.clone()));
        r.sure = false;
        assert_eq!(Record::parse(&r.format()), Some(r.clone()));
        // Records from before `saved`, `prompt` and `sure`.
        let old = r.format().replace(":1796000000:1:0:end", ":end");
        assert_eq!(
            Record::parse(&old).map(|o| (o.saved, o.prompt, o.sure)),
            Some((0, false, true))
        );
        let old = r.format().replace(":1:0:end", ":end");
        assert_eq!(
            Record::parse(&old).map(|o| (o.prompt, o.sure)),
            Some((false, true))
        );
        let old = r.format().replace(":0:end", ":end");
        assert_eq!(
            Record::parse(&old).map(|o| (o.prompt, o.sure)),
            Some((true, true))
        );
        for bad in [
            "",
            "tw1",
            "tw1:1:2:3:4:5:-",
            "tw1:x:2:3:4:5:-:0:0:end",
            "tw1:1:-2:3:4:5:-:0:0:end",
            "tw1:1:2:3:4:5:a;b:0:0:end",
        ] {
            assert_eq!(Record::parse(bad), None, "{bad}");
        }
    }

    fn rows(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_stream_is_found_in_an_earlier_capture() {
        let capture = rows(&["L20", "L21", "L22", "L23", "L2", "", ""]);
        // The stream drew two more lines and is on the row of L25.
        let drawn = rows(&["L21", "L22", "L23", "L24", "L25", "L2"]);
        assert_eq!(align(&capture, 4, &drawn), Alignment::Ahead(2));
        // At the same place.
        let drawn = rows(&["L21", "L22", "L23", "L24"]);
        assert_eq!(align(&capture, 4, &drawn), Alignment::Ahead(0));
        // Lines that repeat: several places match, the nearest is taken.
        let capture = rows(&["tick", "tick", "tick", "tick", ""]);
        let drawn = rows(&["tick", "tick", "tick", "tick", "tick", ""]);
        assert_eq!(align(&capture, 4, &drawn), Alignment::Nearest(0));
        // Nothing alike.
        assert_eq!(
            align(&rows(&["a", "b", "c", "d"]), 3, &rows(&["x", "y"])),
            Alignment::Unknown
        );
        // The top of the pane: fewer rows above to compare.
        assert_eq!(
            align(&rows(&["one", "tw", ""]), 1, &rows(&["one", "two", "th"])),
            Alignment::Ahead(1)
        );
    }

    #[test]
    fn a_stopped_stream_is_found_in_a_later_capture() {
        let capture = rows(&["L1", "L2", "L3", "L4", "L5", "L6", ""]);
        let drawn = rows(&["L1", "L2", "L3", ""]);
        assert_eq!(find_behind(&capture, &drawn), Some((3, true)));
        // Its cursor row grew since.
        let capture = rows(&["L1", "L2", "L3", "Password: "]);
        let drawn = rows(&["L1", "L2", "L3", "Pass"]);
        assert_eq!(find_behind(&capture, &drawn), Some((3, true)));
        let capture = rows(&["x", "x", "x", "x", "x", "x"]);
        assert_eq!(
            find_behind(&capture, &rows(&["x", "x", "x", "x"])),
            Some((5, false))
        );
        assert_eq!(find_behind(&rows(&["a", "b"]), &rows(&["q"])), None);
    }

    #[test]
    fn splits_rows_by_display_width() {
        assert_eq!(split_rows("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(split_rows("", 4), [""]);
        assert_eq!(
            split_rows("a\u{4e16}\u{4e16}", 4),
            ["a\u{4e16}", "\u{4e16}"]
        );
    }

    #[test]
    fn finds_the_place_after_rows_moved() {
        let lines: Vec<String> = ["x", "one", "two", "three", "four"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // The capture starts at row 10: "one" is row 11, "two" row 12, and
        // the place saved as row 13 (below them) is found where it was.
        let r = rec(13, "one", "two");
        let l = locate(Some(&r), &lines, 10, &geo(80), false).unwrap();
        assert_eq!(l.first, 3);
        assert_eq!(l.missed, Missed::None);
        // Trimmed by five rows: found higher up.
        let r = rec(18, "one", "two");
        assert_eq!(
            locate(Some(&r), &lines, 10, &geo(80), false).unwrap().first,
            3
        );
        // Below the limit, rows cannot have moved: the place is where it
        // was, whatever the rows above say now.
        let r = rec(13, "nine", "ten");
        assert_eq!(
            locate(Some(&r), &lines, 10, &geo(80), false).unwrap().first,
            3
        );
        // At the limit they may have: not in a partial capture means ask
        // for the whole history, not there means trimmed away.
        let mut g = geo(80);
        g.history_size = 2000;
        assert_eq!(locate(Some(&r), &lines, 10, &g, false), None);
        let l = locate(Some(&r), &lines, 0, &g, true).unwrap();
        assert_eq!(l.first, 0);
        assert!(matches!(l.missed, Missed::Trimmed(n) if n > 0));
    }

    #[test]
    fn the_unchanged_partial_line_is_skipped() {
        let lines: Vec<String> = ["a", "b", "Password:"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut r = rec(2, "a", "b");
        r.part = hash_text(&["Password:"]);
        let l = locate(Some(&r), &lines, 0, &geo(80), true).unwrap();
        assert_eq!((l.first, l.skip_first), (2, true));
        let lines: Vec<String> = ["a", "b", "Password: ok"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let l = locate(Some(&r), &lines, 0, &geo(80), true).unwrap();
        assert_eq!((l.first, l.skip_first), (2, false));
    }

    #[test]
    fn a_trimmed_top_is_not_taken_for_the_saved_place() {
        // Saved at the top of a new pane (two empty rows above, a prompt
        // on the row); since then the history was trimmed: the top row now
        // holds other text.
        let mut r = rec(0, "", "");
        r.head = head("$ ");
        let mut g = geo(80);
        g.history_size = 2000;
        let lines: Vec<String> = ["890", "891"].iter().map(|s| s.to_string()).collect();
        let l = locate(Some(&r), &lines, 0, &g, true).unwrap();
        assert!(matches!(l.missed, Missed::Trimmed(_)));
        let lines: Vec<String> = ["$ seq 3", "1"].iter().map(|s| s.to_string()).collect();
        let l = locate(Some(&r), &lines, 0, &g, true).unwrap();
        assert_eq!((l.first, l.missed), (0, Missed::None));
    }

    #[test]
    fn the_top_of_the_history_has_empty_rows_above() {
        let lines: Vec<String> = ["first", "second"].iter().map(|s| s.to_string()).collect();
        let r = rec(0, "", "");
        assert_eq!(
            locate(Some(&r), &lines, 0, &geo(80), true).unwrap().first,
            0
        );
        let r = rec(1, "", "first");
        assert_eq!(
            locate(Some(&r), &lines, 0, &geo(80), true).unwrap().first,
            1
        );
    }

    #[test]
    fn capture_start_reaches_back_or_takes_everything() {
        assert_eq!(capture_start("", &[100, 2000, 5, 24]), "0");
        let r = rec(104, "a", "b").format();
        assert_eq!(capture_start(&r, &[100, 2000, 5, 24]), "-62");
        let r = rec(10, "a", "b").format();
        assert_eq!(capture_start(&r, &[100, 2000, 5, 24]), "-");
    }
}
