//! A settings file edited as text, so that what tmux-wait does not add
//! stays byte for byte the user's: indentation (tabs, 4 spaces), inline
//! arrays and objects, escapes such as `\u00e9`, a missing final newline,
//! CRLF line ends and, where the agent reads them, comments. A value is
//! found by its place in the text (`Node`), and an entry is added by
//! splicing text rendered in the file's own style at the end of a list or
//! an object, and removed by taking out exactly those bytes again.
//!
//! Whether the text is valid is serde_json's word (on a copy whose
//! comments are blanked out, so that offsets stay the same); the scanner
//! here only finds where each value starts and ends.

use serde_json::Value;

/// What the agent that reads the file accepts beyond strict JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// `//` and `/* */` comments (Gemini CLI and Qwen Code read their
    /// settings through strip-json-comments).
    pub comments: bool,
    /// A leading byte order mark (Qwen Code strips one).
    pub bom: bool,
}

/// Why a text is not a settings file the agent reads.
#[derive(Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Valid, but with comments the agent does not accept.
    Comments,
    /// Valid, but with a byte order mark the agent does not accept.
    Bom,
    /// Not JSON (serde_json's words, with line and column).
    Invalid(String),
}

/// A value's place in the text: `start..end` are its bytes.
#[derive(Debug)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug)]
pub enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    Scalar,
}

/// An object's member: its key (decoded), where the key's quote starts,
/// and its value.
#[derive(Debug)]
pub struct Member {
    pub key: String,
    pub start: usize,
    pub value: Node,
}

impl Node {
    /// The spans of its members (key to value) or elements.
    pub fn spans(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().map(|m| (m.start, m.value.end)).collect(),
            Kind::Array(es) => es.iter().map(|e| (e.start, e.end)).collect(),
            Kind::Scalar => Vec::new(),
        }
    }

    /// The member named `key` (the last one, as JSON.parse and serde_json
    /// take it when a key is repeated).
    pub fn member(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().rev().find(|m| m.key == key),
            _ => None,
        }
    }

    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Object(ms) => ms,
            _ => &[],
        }
    }

    pub fn elements(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(es) => es,
            _ => &[],
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self.kind, Kind::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self.kind, Kind::Array(_))
    }

    pub fn is_empty(&self) -> bool {
        self.spans().is_empty()
    }
}

/// A parsed settings text.
pub struct Doc {
    pub text: String,
    /// The text with comments and a byte order mark blanked out (same
    /// offsets), which serde_json reads.
    plain: String,
    pub root: Node,
}

impl Doc {
    pub fn parse(text: &str, dialect: Dialect) -> Result<Doc, ParseError> {
        let mut s = Scanner {
            b: text.as_bytes(),
            i: 0,
            comments: Vec::new(),
        };
        let bom = text.starts_with('\u{feff}');
        if bom {
            s.i = 3;
        }
        let root = s
            .trivia()
            .and_then(|()| s.value(0))
            .and_then(|v| s.trivia().map(|()| v));
        let root = match root {
            Ok(r) if s.i == s.b.len() => Some(r),
            _ => None,
        };
        let mut plain = text.as_bytes().to_vec();
        if bom {
            plain[..3].copy_from_slice(b"   ");
        }
        for &(a, z) in &s.comments {
            for c in &mut plain[a..z] {
                if *c != b'\n' && *c != b'\r' {
                    *c = b' ';
                }
            }
        }
        // Only ASCII bytes were replaced, and whole characters: still UTF-8.
        let plain = String::from_utf8(plain).unwrap_or_default();
        // serde_json is the judge; the scanner must agree that it is one value.
        if let Err(e) = serde_json::from_str::<Value>(&plain) {
            return Err(ParseError::Invalid(e.to_string()));
        }
        let Some(root) = root else {
            return Err(ParseError::Invalid("not one JSON value".into()));
        };
        if !s.comments.is_empty() && !dialect.comments {
            return Err(ParseError::Comments);
        }
        if bom && !dialect.bom {
            return Err(ParseError::Bom);
        }
        Ok(Doc {
            text: text.to_owned(),
            plain,
            root,
        })
    }

    /// The value at `node`, as serde_json reads it.
    pub fn value(&self, node: &Node) -> Value {
        serde_json::from_str(&self.plain[node.start..node.end]).unwrap_or(Value::Null)
    }

    /// The whole document's value.
    pub fn whole(&self) -> Value {
        self.value(&self.root)
    }

    /// The node is written over more than one line.
    pub fn multiline(&self, node: &Node) -> bool {
        self.text[node.start..node.end].contains('\n')
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// Where each comment is, `start..end`.
    comments: Vec<(usize, usize)>,
}

/// As deep as serde_json goes (its recursion limit).
const MAX_DEPTH: usize = 128;

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Whitespace and comments.
    fn trivia(&mut self) -> Result<(), ()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.i += 1,
                Some(b'/') => {
                    let start = self.i;
                    match self.b.get(self.i + 1) {
                        Some(b'/') => {
                            while self.peek().is_some_and(|c| c != b'\n') {
                                self.i += 1;
                            }
                        }
                        Some(b'*') => {
                            let rest = &self.b[self.i + 2..];
                            let end = rest.windows(2).position(|w| w == b"*/").ok_or(())?;
                            self.i += 2 + end + 2;
                        }
                        _ => return Err(()),
                    }
                    self.comments.push((start, self.i));
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ()> {
        if depth > MAX_DEPTH {
            return Err(());
        }
        let start = self.i;
        let kind = match self.peek().ok_or(())? {
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.trivia()?;
                if self.peek() != Some(b'}') {
                    loop {
                        self.trivia()?;
                        let key_start = self.i;
                        self.string()?;
                        let key = serde_json::from_slice::<String>(&self.b[key_start..self.i])
                            .map_err(|_| ())?;
                        self.trivia()?;
                        if self.peek() != Some(b':') {
                            return Err(());
                        }
                        self.i += 1;
                        self.trivia()?;
                        let value = self.value(depth + 1)?;
                        members.push(Member {
                            key,
                            start: key_start,
                            value,
                        });
                        self.trivia()?;
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b'}') => break,
                            _ => return Err(()),
                        }
                    }
                }
                self.i += 1;
                Kind::Object(members)
            }
            b'[' => {
                self.i += 1;
                let mut elements = Vec::new();
                self.trivia()?;
                if self.peek() != Some(b']') {
                    loop {
                        self.trivia()?;
                        elements.push(self.value(depth + 1)?);
                        self.trivia()?;
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b']') => break,
                            _ => return Err(()),
                        }
                    }
                }
                self.i += 1;
                Kind::Array(elements)
            }
            b'"' => {
                self.string()?;
                Kind::Scalar
            }
            _ => {
                // A number or a literal: serde_json checks its form.
                let n = self.b[self.i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || b"+-.".contains(c))
                    .count();
                if n == 0 {
                    return Err(());
                }
                self.i += n;
                Kind::Scalar
            }
        };
        Ok(Node {
            start,
            end: self.i,
            kind,
        })
    }

    fn string(&mut self) -> Result<(), ()> {
        if self.peek() != Some(b'"') {
            return Err(());
        }
        self.i += 1;
        loop {
            match self.peek().ok_or(())? {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }
}

/// How the file writes what tmux-wait adds to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    pub newline: &'static str,
    /// One level of indentation: a tab, or N spaces.
    pub unit: String,
    /// Between a key and its value (`": "`, `":"`, `" : "`).
    pub colon: String,
    /// After a comma between items on one line (`" "` or none).
    pub comma: String,
    /// `{ "a": 1 }` rather than `{"a": 1}` (and `[ 1 ]` rather than `[1]`).
    pub pad: bool,
}

impl Style {
    pub fn of(doc: &Doc) -> Style {
        let text = &doc.text;
        let newline = match text.find('\n') {
            Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        };
        let mut style = Style {
            newline,
            unit: unit_of(doc),
            colon: ": ".into(),
            comma: " ".into(),
            pad: false,
        };
        let (mut colon, mut comma, mut pad) = (None, None, None);
        walk(&doc.root, &mut |n| {
            let spans = n.spans();
            if colon.is_none()
                && let Some(m) = n.members().first()
            {
                let key_end = m.start + key_len(&text[m.start..]);
                let gap = &text[key_end..m.value.start];
                if gap.trim() == ":" && !gap.contains('\n') {
                    colon = Some(gap.to_owned());
                }
            }
            if !doc.multiline(n) && !spans.is_empty() {
                if pad.is_none() {
                    pad = Some(text.as_bytes()[n.start + 1] == b' ');
                }
                if comma.is_none() && spans.len() > 1 {
                    let gap = &text[spans[0].1..spans[1].0];
                    if gap.trim() == "," {
                        comma = Some(gap.trim_start()[1..].to_owned());
                    }
                }
            }
        });
        if let Some(c) = colon {
            style.colon = c;
        }
        if let Some(c) = comma {
            style.comma = c;
        }
        style.pad = pad.unwrap_or(false);
        style
    }

    /// `value` written in this style, its first line starting at
    /// `indent` (multiline) or on one line.
    pub fn render(&self, value: &Value, indent: &str, multiline: bool) -> String {
        let mut out = String::new();
        self.render_into(&mut out, value, indent, multiline);
        out
    }

    fn render_into(&self, out: &mut String, value: &Value, indent: &str, multiline: bool) {
        let (open, close, items): (char, char, Vec<(Option<&String>, &Value)>) = match value {
            Value::Object(m) if !m.is_empty() => {
                ('{', '}', m.iter().map(|(k, v)| (Some(k), v)).collect())
            }
            Value::Array(a) if !a.is_empty() => ('[', ']', a.iter().map(|v| (None, v)).collect()),
            v => {
                out.push_str(&serde_json::to_string(v).unwrap_or_default());
                return;
            }
        };
        let inner = format!("{indent}{}", self.unit);
        out.push(open);
        for (i, (key, v)) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if multiline {
                out.push_str(self.newline);
                out.push_str(&inner);
            } else if i > 0 {
                out.push_str(&self.comma);
            } else if self.pad {
                out.push(' ');
            }
            if let Some(k) = key {
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push_str(&self.colon);
            }
            self.render_into(out, v, &inner, multiline);
        }
        if multiline {
            out.push_str(self.newline);
            out.push_str(indent);
        } else if self.pad {
            out.push(' ');
        }
        out.push(close);
    }
}

/// Every node, parents first.
fn walk(node: &Node, f: &mut impl FnMut(&Node)) {
    f(node);
    match &node.kind {
        Kind::Object(ms) => ms.iter().for_each(|m| walk(&m.value, f)),
        Kind::Array(es) => es.iter().for_each(|e| walk(e, f)),
        Kind::Scalar => {}
    }
}

/// The length of the JSON string at the start of `s`, quotes included.
fn key_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

/// The file's unit of indentation: what its first indented item adds to
/// its container's line, else two spaces (serde_json's, and the agents').
fn unit_of(doc: &Doc) -> String {
    let mut unit = None;
    walk(&doc.root, &mut |n| {
        if unit.is_some() || !doc.multiline(n) {
            return;
        }
        if let Some(&(s, _)) = n.spans().first() {
            let outer = line_indent(&doc.text, n.start);
            let inner = line_indent(&doc.text, s);
            if let Some(extra) = inner.strip_prefix(outer)
                && !extra.is_empty()
                && starts_line(&doc.text, s)
            {
                unit = Some(extra.to_owned());
            }
        }
    });
    unit.unwrap_or_else(|| "  ".into())
}

/// The spaces and tabs that start the line holding `pos`.
pub fn line_indent(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    let n = line
        .bytes()
        .take_while(|c| *c == b' ' || *c == b'\t')
        .count();
    &line[..n]
}

/// Nothing but indentation stands before `pos` on its line.
fn starts_line(text: &str, pos: usize) -> bool {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[start..pos].bytes().all(|c| c == b' ' || c == b'\t')
}

/// The offset of the comma in `text[from..to]`, the gap between two items
/// (whitespace, comments and one comma).
fn comma_in(text: &str, from: usize, to: usize) -> usize {
    let b = text.as_bytes();
    let mut i = from;
    while i < to {
        match b[i] {
            b',' => return i,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < to && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < to && &b[i..i + 2] != b"*/" {
                    i += 1;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    from
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// One item to add at the end of a container: a member (`key`) or an
/// element, and whether its value is written over several lines.
pub struct Item<'a> {
    pub key: Option<&'a str>,
    pub value: &'a Value,
}

/// `text` with `item` added as the last item of `container`. `multiline`
/// says how an empty container is filled (as its parent is written); a
/// container with items already is filled as they are written.
pub fn append(
    text: &str,
    style: &Style,
    container: &Node,
    item: Item<'_>,
    multiline: bool,
) -> String {
    let spans = container.spans();
    let open = container.start;
    let close = container.end - 1;
    let container_multi = text[open..container.end].contains('\n');
    let (indent, value_multi) = match spans.last() {
        Some(&(last_start, _)) if container_multi => {
            // As the last item that is a list or an object is written.
            let sibling = last_container(container);
            let multi = sibling.is_none_or(|n| text[n.start..n.end].contains('\n'));
            (line_indent(text, last_start).to_owned(), multi)
        }
        Some(_) => (String::new(), false),
        None if multiline => (format!("{}{}", line_indent(text, open), style.unit), true),
        None => (String::new(), false),
    };
    let mut rendered = String::new();
    if let Some(k) = item.key {
        rendered.push_str(&serde_json::to_string(k).unwrap_or_default());
        rendered.push_str(&style.colon);
    }
    rendered.push_str(&style.render(item.value, &indent, value_multi));

    let Some(&(_, last_end)) = spans.last() else {
        let inside = &text[open + 1..close];
        let kept = if inside.trim().is_empty() {
            ""
        } else {
            inside.trim_end()
        };
        let new_inside = if multiline {
            format!(
                "{kept}{nl}{indent}{rendered}{nl}{}",
                line_indent(text, open),
                nl = style.newline
            )
        } else if style.pad {
            format!("{kept} {rendered} ")
        } else {
            format!("{kept}{rendered}")
        };
        return format!("{}{new_inside}{}", &text[..=open], &text[close..]);
    };
    // The gap before the new item: as between the last two, where that is
    // only whitespace; else a new line (or a space) at the last's indent.
    let mut sep = None;
    if spans.len() > 1 {
        let (prev_end, last_start) = (spans[spans.len() - 2].1, spans[spans.len() - 1].0);
        let c = comma_in(text, prev_end, last_start);
        let gap = &text[c + 1..last_start];
        if text.as_bytes()[c] == b',' && gap.bytes().all(is_space) {
            sep = Some(gap.to_owned());
        }
    }
    let sep = sep.unwrap_or_else(|| {
        if container_multi {
            format!("{}{indent}", style.newline)
        } else {
            style.comma.clone()
        }
    });
    // A comment on the last item's line stays with it: the comma goes
    // right after the item, the new item after the comment.
    let after = &text[last_end..close];
    let pad = after
        .bytes()
        .take_while(|c| *c == b' ' || *c == b'\t')
        .count();
    let rest = &after[pad..];
    let line_end = rest.find('\n').map_or(rest.len(), |i| {
        if rest[..i].ends_with('\r') { i - 1 } else { i }
    });
    let comment = &rest[..line_end];
    let single_line_comment = comment.starts_with("//")
        || (comment.starts_with("/*") && comment.ends_with("*/") && comment.len() >= 4);
    if container_multi && single_line_comment && rest[..line_end].len() < rest.len() {
        let at = last_end + pad + line_end;
        return format!(
            "{},{}{sep}{rendered}{}",
            &text[..last_end],
            &text[last_end..at],
            &text[at..]
        );
    }
    format!("{},{sep}{rendered}{}", &text[..last_end], &text[last_end..])
}

/// The last item of `container` that is a non-empty list or object.
fn last_container(container: &Node) -> Option<&Node> {
    let values: Vec<&Node> = match &container.kind {
        Kind::Object(ms) => ms.iter().map(|m| &m.value).collect(),
        Kind::Array(es) => es.iter().collect(),
        Kind::Scalar => Vec::new(),
    };
    values
        .into_iter()
        .rev()
        .find(|n| (n.is_object() || n.is_array()) && !n.is_empty())
}

/// `text` without item `index` of `container`: the item, its comma and
/// the whitespace that came with it, so that an item `append` added goes
/// without a trace. An item with others after it goes with the comma and
/// whitespace that follow it (what stands before it, a comment on the
/// line above included, stays); the last goes with the comma and the
/// whitespace before it. The only item leaves the container empty (`[]`).
pub fn remove(text: &str, container: &Node, index: usize) -> String {
    let spans = container.spans();
    let (s, e) = spans[index];
    if let Some(&(next, _)) = spans.get(index + 1) {
        let c = comma_in(text, e, next);
        let mut ws = c + 1;
        while ws < next && is_space(text.as_bytes()[ws]) {
            ws += 1;
        }
        return format!("{}{}{}", &text[..s], &text[e..c], &text[ws..]);
    }
    if index > 0 {
        let c = comma_in(text, spans[index - 1].1, s);
        let mut ws = s;
        while ws > c + 1 && is_space(text.as_bytes()[ws - 1]) {
            ws -= 1;
        }
        return format!("{}{}{}", &text[..c], &text[c + 1..ws], &text[e..]);
    }
    format!(
        "{}{}",
        &text[..=container.start],
        &text[container.end - 1..]
    )
}

/// `text` with `node`'s bytes replaced by `with`.
pub fn replace(text: &str, node: &Node, with: &str) -> String {
    format!("{}{with}{}", &text[..node.start], &text[node.end..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const STRICT: Dialect = Dialect {
        comments: false,
        bom: false,
    };
    const JSONC: Dialect = Dialect {
        comments: true,
        bom: true,
    };

    fn doc(text: &str) -> Doc {
        Doc::parse(text, JSONC).unwrap()
    }

    /// Append `value` under `key` to the root object, then remove it again.
    fn round_trip(text: &str, key: &str, value: Value) -> String {
        let d = doc(text);
        let style = Style::of(&d);
        let added = append(
            text,
            &style,
            &d.root,
            Item {
                key: Some(key),
                value: &value,
            },
            true,
        );
        let a = doc(&added);
        assert_eq!(a.whole()[key], value, "{added}");
        let i = a.root.members().iter().position(|m| m.key == key).unwrap();
        let back = remove(&added, &a.root, i);
        assert_eq!(back, text, "added:\n{added}");
        added
    }

    #[test]
    fn the_judge_is_serde_json_and_comments_are_the_dialects() {
        assert!(matches!(
            Doc::parse("{\"a\": }", JSONC),
            Err(ParseError::Invalid(_))
        ));
        assert!(matches!(
            Doc::parse("{\"a\": 1,}", JSONC),
            Err(ParseError::Invalid(_))
        ));
        assert!(matches!(
            Doc::parse("{\"a\": \"\\ud800\"}", JSONC),
            Err(ParseError::Invalid(_))
        ));
        let c = "{\n  // mine\n  \"a\": 1 /* one */\n}";
        assert_eq!(Doc::parse(c, STRICT).err(), Some(ParseError::Comments));
        assert_eq!(doc(c).whole(), json!({"a": 1}));
        assert_eq!(
            Doc::parse("\u{feff}{}", STRICT).err(),
            Some(ParseError::Bom)
        );
        assert_eq!(doc("\u{feff}{\"a\": 2}").whole(), json!({"a": 2}));
        // A string holding comment marks is a string.
        assert_eq!(
            Doc::parse("{\"u\": \"http://x/*y*/\"}", STRICT)
                .unwrap()
                .whole(),
            json!({"u": "http://x/*y*/"})
        );
        assert!(Doc::parse("{} {}", JSONC).is_err());
        assert!(Doc::parse("", JSONC).is_err());
    }

    #[test]
    fn the_style_is_the_files() {
        let s = Style::of(&doc("{\n\t\"a\": [1, 2],\n\t\"b\": {}\n}\n"));
        assert_eq!(
            (
                s.unit.as_str(),
                s.newline,
                s.colon.as_str(),
                s.comma.as_str()
            ),
            ("\t", "\n", ": ", " ")
        );
        let s = Style::of(&doc("{\r\n    \"a\" : 1\r\n}"));
        assert_eq!(
            (s.unit.as_str(), s.newline, s.colon.as_str()),
            ("    ", "\r\n", " : ")
        );
        let s = Style::of(&doc("{\"a\":[1,2],\"b\":{ \"c\":1 }}"));
        assert_eq!(
            (s.colon.as_str(), s.comma.as_str(), s.pad),
            (":", "", false)
        );
        assert_eq!(Style::of(&doc("{}")).unit, "  ");
    }

    #[test]
    fn added_in_the_files_style_and_removed_without_a_trace() {
        let v = json!({"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "x"}]}]});
        let added = round_trip("{\n\t\"model\": \"opus\"\n}", "hooks", v.clone());
        assert!(
            added.contains("\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n"),
            "{added}"
        );
        let added = round_trip("{\n    \"model\": \"opus\"\n}\n", "hooks", v.clone());
        assert!(
            added.contains("\n    \"hooks\": {\n        \"Stop\""),
            "{added}"
        );
        let added = round_trip(
            "{\"model\": \"opus\", \"env\": {\"A\": \"\\u00e9\"}}",
            "hooks",
            v.clone(),
        );
        assert!(!added.contains('\n'), "{added}");
        round_trip("{\r\n  \"model\": \"opus\"\r\n}\r\n", "hooks", v.clone());
        round_trip(
            "{\n  \"a\": 1, // one\n  \"b\": 2 // two\n}",
            "hooks",
            v.clone(),
        );
        round_trip(
            "{\n  \"a\": 1,\n  \"b\": 2 /* two */\n}",
            "hooks",
            v.clone(),
        );
        round_trip("{\"a\":1,\"b\":2}", "hooks", v.clone());
        round_trip("\u{feff}{\n  \"a\": 1\n}", "hooks", v);
    }

    #[test]
    fn inline_members_of_a_multiline_list_stay_inline() {
        let text = "{\n  \"Stop\": [\n    {\"matcher\": \"\", \"hooks\": []}\n  ]\n}";
        let d = doc(text);
        let list = &d.root.member("Stop").unwrap().value;
        let value = json!({"matcher": "", "hooks": [{"command": "x"}]});
        let added = append(
            text,
            &Style::of(&d),
            list,
            Item {
                key: None,
                value: &value,
            },
            true,
        );
        assert_eq!(
            added,
            "{\n  \"Stop\": [\n    {\"matcher\": \"\", \"hooks\": []},\n    {\"matcher\": \"\", \"hooks\": [{\"command\": \"x\"}]}\n  ]\n}"
        );
        let a = doc(&added);
        assert_eq!(
            remove(&added, &a.root.member("Stop").unwrap().value, 1),
            text
        );
    }

    #[test]
    fn an_empty_list_is_filled_and_emptied() {
        let text = "{\"hooks\": {\"PostToolUse\": []}, \"model\": \"sonnet\"}";
        let d = doc(text);
        let list = &d
            .root
            .member("hooks")
            .unwrap()
            .value
            .member("PostToolUse")
            .unwrap()
            .value;
        let value = json!({"matcher": ""});
        let added = append(
            text,
            &Style::of(&d),
            list,
            Item {
                key: None,
                value: &value,
            },
            false,
        );
        assert_eq!(
            added,
            "{\"hooks\": {\"PostToolUse\": [{\"matcher\": \"\"}]}, \"model\": \"sonnet\"}"
        );
        let a = doc(&added);
        let list = &a
            .root
            .member("hooks")
            .unwrap()
            .value
            .member("PostToolUse")
            .unwrap()
            .value;
        assert_eq!(remove(&added, list, 0), text);
    }

    #[test]
    fn an_empty_object_is_filled_as_its_parent_is_written() {
        let v = json!({"Stop": []});
        for (text, want) in [
            ("{}", "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}"),
            ("{ }", "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}"),
            (
                "{\n  // none yet\n}",
                "{\n  // none yet\n  \"hooks\": {\n    \"Stop\": []\n  }\n}",
            ),
        ] {
            let d = doc(text);
            let item = Item {
                key: Some("hooks"),
                value: &v,
            };
            let added = append(text, &Style::of(&d), &d.root, item, true);
            assert_eq!(added, want);
            // The last item out leaves it empty; what it held before is
            // the caller's to put back.
            assert_eq!(remove(&added, &doc(&added).root, 0), "{}");
        }
    }

    #[test]
    fn the_first_item_goes_with_its_comma() {
        let text = "[\n  1,\n  2\n]";
        let d = doc(text);
        assert_eq!(remove(text, &d.root, 0), "[\n  2\n]");
        assert_eq!(remove(text, &d.root, 1), "[\n  1\n]");
        let text = "[1, 2, 3]";
        let d = doc(text);
        assert_eq!(remove(text, &d.root, 1), "[1, 3]");
        assert_eq!(replace(text, &d.root.elements()[2], "4"), "[1, 2, 4]");
        // A comment before a middle item stays, and its comma before it.
        let text = "[\n  1, // one\n  2,\n  3\n]";
        let d = doc(text);
        assert_eq!(remove(text, &d.root, 1), "[\n  1, // one\n  3\n]");
        assert_eq!(remove(text, &d.root, 2), "[\n  1, // one\n  2\n]");
    }
}
