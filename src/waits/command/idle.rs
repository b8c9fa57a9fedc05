//! `output` at a shell's idle prompt, answered from one look at the pane.
//!
//! Most `output` calls of an agent find nothing new: the shell sits at its
//! prompt where the last call left it. One command list reads the pane, its
//! cursor option and its screen; when the place the cursor names is the
//! cursor row now, with the same rows above it and nothing below, and the
//! shell reads its next command line with nothing typed and no jobs, the
//! answer is "idle" with no line. Nothing is saved (the cursor already
//! says exactly this), so no pipe and no hub are needed. Anything else goes
//! the long way, which follows the pane's stream.
//!
//! The look is one command list, which tmux runs without taking pane
//! output in between: the rows, the cursor and the option describe one
//! moment. What comes after it is the next call's, as after any save.

use super::*;

/// The pane's state the answer needs, in one reply.
const LOOK_FORMAT: &str =
    "#{history_size}\t#{cursor_y}\t#{cursor_x}\t#{pane_width}\t#{pane_height}";

/// The answer "nothing new, the shell is idle" when one look shows it, or
/// None when the call must follow the pane.
pub(super) fn idle_at_once(req: &OutputRequest, start: Instant) -> Result<Option<OutputResult>> {
    let c = &req.common;
    // Only a plain call can end at once: the others wait for something, or
    // write what they see somewhere.
    if req.until.is_some()
        || req.ready.is_some()
        || req.until_finished
        || req.ndjson
        || c.save_to.is_some()
        || !shell::proc_available()
    {
        return Ok(None);
    }
    let option = cursor::option_name(&c.cursor);
    let (pane, replies) = resolve_pane_with(&c.socket, c.target.as_deref(), |t| {
        let cmd = |head: &[&str], last: Option<&str>| {
            let mut v: Vec<String> = head.iter().map(|s| (*s).to_owned()).collect();
            v.extend(t.iter().cloned());
            v.extend(last.map(str::to_owned));
            v
        };
        vec![
            cmd(&["display-message", "-p"], Some(LOOK_FORMAT)),
            cmd(&["show-options", "-pqv"], Some(&option)),
            // (Two rows of history too, for a cursor near the top.)
            cmd(&["capture-pane", "-p", "-S", "-2", "-E", "-"], None),
        ]
    })?;
    if pane.pane_dead || replies.len() != 3 {
        return Ok(None);
    }
    let Some(rec) = Record::parse(&replies[1].join("\n")) else {
        return Ok(None);
    };
    let g = crate::engine::Reply::new(&replies[0]);
    let (Ok(history), Ok(cy), Ok(cx), Ok(width), Ok(height)) =
        (g.num(0), g.num(1), g.num(2), g.num(3), g.num(4))
    else {
        return Ok(None);
    };
    let look = PaneAt {
        pid: pane.pane_pid,
        history,
        cy,
        cx,
        width,
        height,
    };
    if !look.unchanged(&rec, &replies[2]) {
        return Ok(None);
    }
    // The shell reads its next command line (not about to: the long way
    // waits for that), and nothing it started runs on behind it.
    let pid = pane.pane_pid;
    if shell::reads(pid, &pane.pane_tty).0 != Reads::Prompt || !shell::has_no_jobs(pid) {
        return Ok(None);
    }
    Ok(Some(OutputResult {
        pane_id: pane.pane_id,
        lines: Vec::new(),
        cursor: c.cursor.clone(),
        reason: OutputReason::Idle,
        finished: false,
        exit_status: None,
        exit_source: None,
        timed_out: false,
        running: None,
        lines_missed: 0,
        lines_missed_exact: true,
        history_cleared: false,
        respawned: false,
        clipped_lines: 0,
        partial: false,
        prompt: None,
        unsubmitted_input: None,
        input_outcome: None,
        elapsed_seconds: seconds(start.elapsed()),
        effective_timeout: seconds(c.timeout),
        save_error: None,
        fallback: None,
    }))
}

/// The pane at one look: its program, the rows of history above its
/// screen, its cursor and its size.
struct PaneAt {
    pid: u32,
    history: i64,
    cy: i64,
    cx: i64,
    width: i64,
    height: i64,
}

impl PaneAt {
    /// The cursor `rec` was saved at the shell's prompt with nothing
    /// pending, and the pane (`rows`: its screen and up to two rows of
    /// history above) still stands exactly there: the same row, the same
    /// rows above it and the same text on it, nothing below it and nothing
    /// typed at it. A record made now would be this one, but for the time
    /// it was made.
    fn unchanged(&self, rec: &Record, rows: &[String]) -> bool {
        // Rows as a save reads them: by screen row, history above.
        let offset = rows.len() as i64 - self.height.max(1);
        let row = |y: i64| cursor::screen_row(rows, offset, y);
        let cy = self.cy;
        if cy < 0 || offset + cy >= rows.len() as i64 || offset < 0 {
            return false;
        }
        let saved_here = rec.pid == self.pid
            && rec.run.is_none()
            && !rec.busy
            && rec.prompt
            && rec.sure
            && rec.part == 0
            && rec.history_size == self.history
            && rec.abs == self.history + cy
            && rec.fp == cursor::fingerprint(row(cy - 2), row(cy - 1))
            && rec.head == cursor::head(row(cy));
        let below = (cy + 1..self.height).any(|y| !row(y).trim().is_empty());
        if !saved_here || below {
            return false;
        }
        // Typed text, judged as the long way judges it. At column 0 the
        // row may continue a typed line from the row above (the long way
        // sees the whole line); no row below continues it (they are empty).
        self.cx > 0 && self.cx <= self.width && {
            let (before, after) = split_at_column(row(cy), self.cx);
            shell::unsubmitted_text(&before, &after).is_none()
        }
    }
}

/// `row` split where column `cx` starts (by display width).
fn split_at_column(row: &str, cx: i64) -> (String, String) {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0i64;
    for (i, ch) in row.char_indices() {
        if used >= cx {
            return (row[..i].to_owned(), row[i..].to_owned());
        }
        used += ch.width().unwrap_or(0) as i64;
    }
    (row.to_owned(), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A screen of 6 rows under 10 rows of history, the cursor on row 3.
    fn rows() -> Vec<String> {
        ["h9", "h10", "L1", "L2", "done", "$", "", ""]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    fn look(cy: i64, cx: i64) -> PaneAt {
        PaneAt {
            pid: 42,
            history: 10,
            cy,
            cx,
            width: 80,
            height: 6,
        }
    }

    fn saved(look: &PaneAt, rows: &[String]) -> Record {
        let at = |y: i64| rows[(y + 2) as usize].as_str();
        Record {
            pid: 42,
            abs: look.history + look.cy,
            fp: cursor::fingerprint(at(look.cy - 2), at(look.cy - 1)),
            part: 0,
            run: None,
            history_size: look.history,
            head: cursor::head(at(look.cy)),
            busy: false,
            saved: 1,
            prompt: true,
            sure: true,
        }
    }

    #[test]
    fn an_unmoved_prompt_is_idle_and_any_change_is_not() {
        let r = rows();
        let l = look(3, 2);
        let rec = saved(&l, &r);
        assert!(l.unchanged(&rec, &r));
        // Another program, another history, another row.
        assert!(
            !PaneAt {
                pid: 43,
                ..look(3, 2)
            }
            .unchanged(&rec, &r)
        );
        assert!(
            !PaneAt {
                history: 11,
                ..look(3, 2)
            }
            .unchanged(&rec, &r)
        );
        assert!(!look(4, 2).unchanged(&rec, &r));
        // The rows above, or the cursor's, say something else.
        let mut other = r.clone();
        other[4] = "undone".into();
        assert!(!l.unchanged(&rec, &other));
        let mut typed = r.clone();
        typed[5] = "$ ls".into();
        assert!(!look(3, 4).unchanged(&rec, &typed));
        // Something below the cursor (a completion list).
        let mut below = r.clone();
        below[7] = "file1  file2".into();
        assert!(!l.unchanged(&rec, &below));
        // Saved with a run pending, a command running, no reader, a shown
        // unfinished line, or a place not known for sure.
        for change in [
            |r: &mut Record| r.run = Some("ab12".into()),
            |r: &mut Record| r.busy = true,
            |r: &mut Record| r.prompt = false,
            |r: &mut Record| r.part = 7,
            |r: &mut Record| r.sure = false,
        ] {
            let mut rec2 = rec.clone();
            change(&mut rec2);
            assert!(!l.unchanged(&rec2, &r));
        }
    }

    #[test]
    fn the_rows_above_a_cursor_at_the_top_are_history() {
        let r = rows();
        let top = look(0, 2);
        let mut at_top = r.clone();
        at_top[2] = "$".into();
        for row in &mut at_top[3..] {
            row.clear();
        }
        let rec = saved(&top, &at_top);
        assert_eq!(rec.fp, cursor::fingerprint("h9", "h10"));
        assert!(top.unchanged(&rec, &at_top));
        // With no history, the rows above are empty.
        let fresh: Vec<String> = at_top[2..].to_vec();
        let l = PaneAt { history: 0, ..top };
        let rec = Record {
            abs: 0,
            history_size: 0,
            fp: cursor::fingerprint("", ""),
            ..rec
        };
        assert!(l.unchanged(&rec, &fresh));
    }

    #[test]
    fn text_at_the_prompt_is_not_idle() {
        // The cursor moved back into what was typed, or at column 0 of a
        // row that may continue the one above.
        let mut r = rows();
        r[5] = "$ ls".into();
        let rec = saved(&look(3, 4), &r);
        assert!(!look(3, 4).unchanged(&rec, &r));
        assert!(!look(3, 3).unchanged(&rec, &r));
        assert!(!look(3, 0).unchanged(&rec, &r));
        // A prompt that ends the way prompts do, the cursor past it.
        r[5] = "user@host:~$".into();
        let rec = saved(&look(3, 13), &r);
        assert!(look(3, 13).unchanged(&rec, &r));
    }

    #[test]
    fn rows_are_split_by_display_width() {
        assert_eq!(split_at_column("$ ab", 2), ("$ ".into(), "ab".into()));
        assert_eq!(split_at_column("界$ x", 3), ("界$".into(), " x".into()));
        assert_eq!(split_at_column("$", 2), ("$".into(), String::new()));
    }
}
