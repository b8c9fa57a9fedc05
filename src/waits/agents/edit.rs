//! What `agents install` and `remove` change in a settings text, as text:
//! tmux-wait's hook groups are spliced in at the end of each event's list
//! (in the file's own style) and taken out again, and nothing else moves,
//! so that install then remove gives the user's bytes back.
//!
//! One thing cannot be read back from the text: whether a list that only
//! held our group was there before (`"PostToolUse": []`) or made by
//! install. Install says what was there (`Before`), the caller keeps it,
//! and remove puts it back.
//!
//! Every edit is checked against the same change made on the parsed value
//! (as `agents install` did before it edited text): a text whose value is
//! not the one expected is never written.

use super::jsonc::{self, Dialect, Doc, Item, Node, ParseError, Style};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// What was at each place install filled or made, by pointer (`""`, the
/// whole file, `/hooks`, `/hooks/Stop`): the text of the empty object or
/// list that was there, or `None` where there was nothing.
pub type Before = BTreeMap<String, Option<String>>;

/// Our hook, and where it goes.
pub struct Hooks<'a> {
    pub events: &'a [&'a str],
    pub matcher: &'a str,
    /// Its entries are named (Gemini CLI shows them by name).
    pub named: bool,
    pub command: &'a str,
}

/// Why a settings text is left as it is.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Parse(ParseError),
    NotObject,
    /// `hooks` is not an object.
    HooksNotObject,
    /// `hooks.EVENT` is not a list.
    NotList(String),
    /// The edited text does not hold the value expected (a fault of ours).
    Mismatch,
}

/// The new text, what install found at the places it filled, and how
/// many events it added or entries remove took away (0: nothing to write).
#[derive(Debug)]
pub struct Plan {
    pub text: String,
    pub before: Before,
    pub changed: usize,
}

/// What tells our hooks from the user's.
pub const OURS: &str = " agent-event --agent ";

fn is_ours(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains(OURS))
}

/// One event's group holding our hook.
pub fn group(h: &Hooks<'_>) -> Value {
    let mut hook = json!({"type": "command", "command": h.command});
    if h.named {
        hook["name"] = json!("tmux-wait");
    }
    json!({"matcher": h.matcher, "hooks": [hook]})
}

/// The entries install adds, as one `"hooks"` object (for a person to
/// add by hand where tmux-wait may not write).
pub fn entries(h: &Hooks<'_>) -> Value {
    let list: Map<String, Value> = h
        .events
        .iter()
        .map(|e| ((*e).to_owned(), json!([group(h)])))
        .collect();
    json!({ "hooks": list })
}

fn parse(text: &str, dialect: Dialect) -> Result<Doc, Refused> {
    Doc::parse(text, dialect).map_err(Refused::Parse)
}

/// The node at `path` (member names from the root).
fn at<'d>(doc: &'d Doc, path: &[&str]) -> Option<&'d Node> {
    let mut n = &doc.root;
    for key in path {
        n = &n.member(key)?.value;
    }
    Some(n)
}

/// The group list holds a group with exactly this hook command.
fn present(list: &Value, command: &str) -> bool {
    list.as_array().is_some_and(|gs| {
        gs.iter().any(|g| {
            g.get("hooks").and_then(Value::as_array).is_some_and(|hs| {
                hs.iter()
                    .any(|h| h.get("command").and_then(Value::as_str) == Some(command))
            })
        })
    })
}

/// Add our hook to each event of `text` (none or blank: a new file).
pub fn install(text: Option<&str>, dialect: Dialect, h: &Hooks<'_>) -> Result<Plan, Refused> {
    let fresh = text.is_none_or(|t| t.trim().is_empty());
    let mut text = match text {
        Some(t) if !fresh => t.to_owned(),
        _ => "{}".to_owned(),
    };
    let doc = parse(&text, dialect)?;
    if !doc.root.is_object() {
        return Err(Refused::NotObject);
    }
    let expected = expected_install(doc.whole(), h)?;
    let style = Style::of(&doc);
    let group = group(h);
    let mut before = Before::new();
    let mut changed = 0;
    match doc.root.member("hooks") {
        None => {
            if doc.root.is_empty() && !fresh {
                before.insert(String::new(), Some(span(&doc, &doc.root)));
            }
            let all = entries(h);
            let item = Item {
                key: Some("hooks"),
                value: &all["hooks"],
            };
            text = jsonc::append(&text, &style, &doc.root, item, true);
            before.insert("/hooks".into(), None);
            changed = h.events.len();
        }
        Some(m) if !m.value.is_object() => return Err(Refused::HooksNotObject),
        Some(_) => {
            for event in h.events {
                let doc = parse(&text, dialect)?;
                let hooks = at(&doc, &["hooks"]).ok_or(Refused::Mismatch)?;
                let pointer = format!("/hooks/{event}");
                let Some(list) = hooks.member(event).map(|m| &m.value) else {
                    if hooks.is_empty() {
                        before.insert("/hooks".into(), Some(span(&doc, hooks)));
                    }
                    let value = json!([group]);
                    let item = Item {
                        key: Some(event),
                        value: &value,
                    };
                    let multi = doc.multiline(&doc.root);
                    text = jsonc::append(&text, &style, hooks, item, multi);
                    before.insert(pointer, None);
                    changed += 1;
                    continue;
                };
                if !list.is_array() {
                    return Err(Refused::NotList((*event).to_owned()));
                }
                if present(&doc.value(list), h.command) {
                    continue;
                }
                if list.is_empty() {
                    before.insert(pointer, Some(span(&doc, list)));
                }
                // (One of an older install, by another path: replaced.)
                text = strip(text, dialect, &["hooks", *event])?.0;
                let doc = parse(&text, dialect)?;
                let hooks = at(&doc, &["hooks"]).ok_or(Refused::Mismatch)?;
                let list = at(&doc, &["hooks", event]).ok_or(Refused::Mismatch)?;
                let item = Item {
                    key: None,
                    value: &group,
                };
                text = jsonc::append(&text, &style, list, item, doc.multiline(hooks));
                changed += 1;
            }
        }
    }
    if changed == 0 {
        return Ok(Plan {
            text,
            before,
            changed,
        });
    }
    if fresh {
        text.push_str(style.newline);
    }
    check(&text, dialect, &expected)?;
    Ok(Plan {
        text,
        before,
        changed,
    })
}

/// Take our hooks out of every event of `text`, and put back what install
/// found where it leaves a list or object empty (else that goes too).
pub fn remove(text: &str, dialect: Dialect, before: &Before) -> Result<Plan, Refused> {
    let mut text = text.to_owned();
    let doc = parse(&text, dialect)?;
    if !doc.root.is_object() {
        return Err(Refused::NotObject);
    }
    let expected = expected_remove(doc.whole(), before);
    let events: Vec<String> = match at(&doc, &["hooks"]) {
        Some(hooks) if hooks.is_object() => hooks.members().iter().map(|m| m.key.clone()).collect(),
        _ => Vec::new(),
    };
    let mut removed = 0;
    let mut dropped = false;
    for event in &events {
        let (t, n) = strip(text, dialect, &["hooks", event])?;
        text = t;
        if n == 0 {
            continue;
        }
        removed += n;
        let doc = parse(&text, dialect)?;
        let hooks = at(&doc, &["hooks"]).ok_or(Refused::Mismatch)?;
        let list = at(&doc, &["hooks", event]).ok_or(Refused::Mismatch)?;
        if !list.is_empty() {
            continue;
        }
        match restorable(before, &format!("/hooks/{event}"), true) {
            Some(orig) => text = jsonc::replace(&text, list, orig),
            None => {
                let i = hooks.members().iter().rposition(|m| &m.key == event);
                text = jsonc::remove(&text, hooks, i.ok_or(Refused::Mismatch)?);
                dropped = true;
            }
        }
    }
    if dropped {
        let doc = parse(&text, dialect)?;
        let hooks = at(&doc, &["hooks"]).ok_or(Refused::Mismatch)?;
        if hooks.is_empty() {
            match restorable(before, "/hooks", false) {
                Some(orig) => text = jsonc::replace(&text, hooks, orig),
                None => {
                    let i = doc.root.members().iter().rposition(|m| m.key == "hooks");
                    text = jsonc::remove(&text, &doc.root, i.ok_or(Refused::Mismatch)?);
                    let doc = parse(&text, dialect)?;
                    if let Some(orig) = restorable(before, "", false)
                        && doc.root.is_empty()
                    {
                        text = jsonc::replace(&text, &doc.root, orig);
                    }
                }
            }
        }
    }
    if removed > 0 {
        check(&text, dialect, &expected)?;
    }
    Ok(Plan {
        text,
        before: Before::new(),
        changed: removed,
    })
}

/// The text install found at `pointer`, where it is an empty list (or
/// object) as the place needs.
fn restorable<'b>(before: &'b Before, pointer: &str, list: bool) -> Option<&'b str> {
    let orig = before.get(pointer)?.as_deref()?;
    let open = if list { "[" } else { "{" };
    let doc = Doc::parse(
        orig,
        Dialect {
            comments: true,
            bom: true,
        },
    )
    .ok()?;
    (doc.root.is_empty() && orig.trim_start().starts_with(open)).then_some(orig)
}

fn span(doc: &Doc, node: &Node) -> String {
    doc.text[node.start..node.end].to_owned()
}

/// `text` without our hooks in the list at `path`: a group that held only
/// ours goes whole, else only our entries in it. Returns how many went.
fn strip(mut text: String, dialect: Dialect, path: &[&str]) -> Result<(String, usize), Refused> {
    let mut removed = 0;
    loop {
        let doc = parse(&text, dialect)?;
        let Some(list) = at(&doc, path) else {
            return Ok((text, removed));
        };
        let mut edit = None;
        for (i, g) in list.elements().iter().enumerate().rev() {
            let Some(hs) = g.member("hooks").map(|m| &m.value) else {
                continue;
            };
            let ours: Vec<usize> = hs
                .elements()
                .iter()
                .enumerate()
                .filter(|(_, h)| is_ours(&doc.value(h)))
                .map(|(j, _)| j)
                .collect();
            if let Some(&last) = ours.last() {
                edit = Some(if ours.len() == hs.elements().len() {
                    jsonc::remove(&text, list, i)
                } else {
                    jsonc::remove(&text, hs, last)
                });
                break;
            }
        }
        match edit {
            Some(t) => {
                text = t;
                removed += 1;
            }
            None => return Ok((text, removed)),
        }
    }
}

/// The edited text must be what the agent reads, with the value expected.
fn check(text: &str, dialect: Dialect, expected: &Value) -> Result<(), Refused> {
    match Doc::parse(text, dialect) {
        Ok(d) if d.whole() == *expected => Ok(()),
        _ => Err(Refused::Mismatch),
    }
}

/// Install's change on the value.
fn expected_install(mut v: Value, h: &Hooks<'_>) -> Result<Value, Refused> {
    let root = v.as_object_mut().ok_or(Refused::NotObject)?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(Refused::HooksNotObject)?;
    for event in h.events {
        let list = hooks.entry(*event).or_insert_with(|| json!([]));
        if !list.is_array() {
            return Err(Refused::NotList((*event).to_owned()));
        }
        if present(list, h.command) {
            continue;
        }
        if let Some(l) = list.as_array_mut() {
            strip_value(l);
            l.push(group(h));
        }
    }
    Ok(v)
}

/// Remove's change on the value.
fn expected_remove(mut v: Value, before: &Before) -> Value {
    let Some(hooks) = v.get_mut("hooks").and_then(Value::as_object_mut) else {
        return v;
    };
    let mut dropped = false;
    hooks.retain(|event, list| {
        let Some(l) = list.as_array_mut() else {
            return true;
        };
        if strip_value(l) == 0 || !l.is_empty() {
            return true;
        }
        let keep = restorable(before, &format!("/hooks/{event}"), true).is_some();
        dropped |= !keep;
        keep
    });
    if dropped
        && hooks.is_empty()
        && restorable(before, "/hooks", false).is_none()
        && let Some(root) = v.as_object_mut()
    {
        root.remove("hooks");
    }
    v
}

/// Our hooks out of one event's groups; a group left empty goes.
fn strip_value(list: &mut Vec<Value>) -> usize {
    let mut removed = 0;
    list.retain_mut(|g| {
        let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = hs.len();
        hs.retain(|h| !is_ours(h));
        removed += before - hs.len();
        !(hs.is_empty() && before > 0)
    });
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Dialect = Dialect {
        comments: false,
        bom: false,
    };
    const JSONC: Dialect = Dialect {
        comments: true,
        bom: true,
    };
    const CLAUDE: &[&str] = &["UserPromptSubmit", "PermissionRequest", "Stop"];

    fn hooks(command: &str) -> Hooks<'_> {
        Hooks {
            events: CLAUDE,
            matcher: "",
            named: false,
            command,
        }
    }

    const CMD: &str = "'/x/tmux-wait' agent-event --agent claude-code";

    /// Install, again (nothing), remove: the same bytes.
    fn round_trip(text: &str, dialect: Dialect) -> String {
        let p = install(Some(text), dialect, &hooks(CMD)).unwrap();
        assert!(p.changed > 0);
        let again = install(Some(&p.text), dialect, &hooks(CMD)).unwrap();
        assert_eq!(again.changed, 0);
        let back = remove(&p.text, dialect, &p.before).unwrap();
        assert_eq!(back.changed, CLAUDE.len());
        assert_eq!(back.text, text, "installed:\n{}", p.text);
        p.text
    }

    #[test]
    fn install_then_remove_gives_the_users_bytes_back() {
        for text in [
            "{\n\t\"model\": \"opus\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"notify-me\"}]}\n\t\t]\n\t}\n}\n",
            "{\n    \"env\": {\"ANTHROPIC_API_KEY\": \"sk-\\u00e9\"},\n    \"permissions\": {\"allow\": [\"Bash(ls)\", \"Read\"]}\n}",
            "{\"hooks\": {\"PostToolUse\": []}, \"model\": \"sonnet\"}",
            "{\n  \"hooks\": {\n    \"PostToolUse\": [],\n    \"Stop\": [ ]\n  }\n}\n",
            "{\n  \"hooks\": {}\n}\n",
            "{\r\n  \"model\": \"opus\"\r\n}\r\n",
            "{}",
            "{ }\n",
        ] {
            round_trip(text, STRICT);
        }
    }

    #[test]
    fn comments_stay_where_the_agent_reads_them() {
        let text = "{\n  // my model\n  \"model\": \"gemini-3\", /* fast */\n  \"hooks\": {\n    \"Stop\": [] // none yet\n  }\n}\n";
        let installed = round_trip(text, JSONC);
        assert!(installed.contains("// my model"));
        assert!(installed.contains("// none yet"));
        assert_eq!(
            install(Some(text), STRICT, &hooks(CMD)).err(),
            Some(Refused::Parse(ParseError::Comments))
        );
    }

    #[test]
    fn a_new_file_is_written_as_before() {
        let p = install(None, STRICT, &hooks(CMD)).unwrap();
        let mut want =
            serde_json::to_string_pretty(&expected_install(json!({}), &hooks(CMD)).unwrap())
                .unwrap();
        want.push('\n');
        assert_eq!(p.text, want);
        let back = remove(&p.text, STRICT, &p.before).unwrap();
        assert_eq!(back.text, "{}\n");
    }

    #[test]
    fn an_older_install_is_replaced_and_the_users_groups_kept() {
        let text = r#"{"hooks": {"Stop": [
  {"matcher": "", "hooks": [{"type": "command", "command": "notify-me"}, {"type": "command", "command": "/old/tmux-wait agent-event --agent claude-code"}]},
  {"matcher": "", "hooks": [{"type": "command", "command": "/old/tmux-wait agent-event --agent claude-code"}]}
]}}"#;
        let p = install(Some(text), STRICT, &hooks(CMD)).unwrap();
        let v: Value = serde_json::from_str(&p.text).unwrap();
        let stop = v["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{}", p.text);
        assert_eq!(
            stop[0]["hooks"],
            json!([{"type": "command", "command": "notify-me"}])
        );
        assert_eq!(stop[1]["hooks"][0]["command"], CMD);
        let back = remove(&p.text, STRICT, &p.before).unwrap();
        let v: Value = serde_json::from_str(&back.text).unwrap();
        assert_eq!(
            v,
            json!({"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-me"}]}]}})
        );
    }

    #[test]
    fn without_a_record_remove_takes_the_lists_it_empties() {
        let p = install(Some("{\"hooks\": {\"Stop\": []}}"), STRICT, &hooks(CMD)).unwrap();
        let back = remove(&p.text, STRICT, &Before::new()).unwrap();
        assert_eq!(back.text, "{}");
    }

    #[test]
    fn what_is_not_a_settings_object_is_refused() {
        for (text, why) in [
            ("[1]", Refused::NotObject),
            ("{\"hooks\": []}", Refused::HooksNotObject),
            (
                "{\"hooks\": {\"Stop\": {}}}",
                Refused::NotList("Stop".into()),
            ),
        ] {
            assert_eq!(install(Some(text), STRICT, &hooks(CMD)).err(), Some(why));
        }
        assert!(matches!(
            install(Some("{\"a\": "), STRICT, &hooks(CMD)),
            Err(Refused::Parse(ParseError::Invalid(_)))
        ));
    }
}
