//! Parsing text into a [`SourceDoc`]: a JSON value plus the position of every field, so that
//! problems found later (by serde or by a rule) can be reported as `line:col: field: message`.
//!
//! YAML is read through `yaml-rust2`'s event parser and converted to a `serde_json::Value`
//! (YAML 1.2 core schema: `null`, booleans, integers, floats, strings). Keys must be scalars.
//! Aliases are expanded with a budget so that "billion laughs" documents are refused instead of
//! exhausting memory. JSON is parsed by `serde_json`; a small scanner then records positions.
//!
//! Every parser of the crate goes text → [`SourceDoc`] → `serde_path_to_error` (so a type error
//! knows its field path) → the document's rules, which report field paths;
//! [`SourceDoc::locate`] maps each path to the line and column of that field's value. Chosen over
//! `serde_yaml` (deprecated, and its errors carry a position but no field path, while rule
//! violations found after deserializing carry neither) and over span-carrying types on every
//! field (noisy types everywhere).

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::diagnostic::{Diagnostic, Diagnostics, FieldPath, Position, Segment};

/// Largest document any ofc parser accepts (bytes of text).
pub const MAX_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;
/// Deepest nesting accepted in YAML or JSON.
pub const MAX_DEPTH: usize = 64;
/// Most nodes (scalars + collections, aliases expanded) a YAML document may produce.
pub const MAX_NODES: usize = 200_000;

/// The text format a document was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON text.
    Json,
    /// YAML text (also used for AgentCard front matter).
    Yaml,
}

/// A parsed document: its value and where each field's value starts in the text.
#[derive(Debug, Clone)]
pub struct SourceDoc {
    /// The document as JSON.
    pub value: Value,
    spans: HashMap<FieldPath, Position>,
    /// Added to every line number (front matter starts after the opening `---`).
    line_offset: u32,
}

impl SourceDoc {
    /// A document that did not come from text (no positions).
    pub fn from_value(value: Value) -> Self {
        Self {
            value,
            spans: HashMap::new(),
            line_offset: 0,
        }
    }

    /// The position of the value at `path`, or of its nearest ancestor that has one.
    pub fn position(&self, path: &FieldPath) -> Option<Position> {
        let mut p = Some(path.clone());
        while let Some(cur) = p {
            if let Some(pos) = self.spans.get(&cur) {
                return Some(Position {
                    line: pos.line + self.line_offset,
                    col: pos.col,
                });
            }
            p = cur.parent();
        }
        None
    }

    /// Shifts every reported line by `offset` (for text embedded in a larger file).
    pub fn with_line_offset(mut self, offset: u32) -> Self {
        self.line_offset = offset;
        self
    }

    /// Fills in positions of diagnostics that have none.
    pub fn locate(&self, mut diags: Diagnostics) -> Diagnostics {
        for d in &mut diags.0 {
            if d.position.is_none() {
                d.position = self.position(&d.path);
            }
        }
        diags
    }

    /// Deserializes the value into `T`, reporting the failing field's path and position.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, Diagnostics> {
        deserialize_value(&self.value).map_err(|d| self.locate(d))
    }
}

/// Deserializes a JSON value into `T`, with the failing field's path in the diagnostic.
pub fn deserialize_value<T: DeserializeOwned>(value: &Value) -> Result<T, Diagnostics> {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = convert_path(e.path());
            let message = clean_serde_message(&e.inner().to_string());
            // serde reports an unknown field at its parent; point at the field itself.
            let path = match unknown_field_name(&message) {
                Some(name) if path.segments().last() != Some(&Segment::Key(name.clone())) => {
                    path.key(name)
                }
                _ => path,
            };
            Err(Diagnostics::one(path, message))
        }
    }
}

fn convert_path(p: &serde_path_to_error::Path) -> FieldPath {
    let mut out = FieldPath::root();
    for seg in p.iter() {
        out = match seg {
            serde_path_to_error::Segment::Seq { index } => out.index(*index),
            serde_path_to_error::Segment::Map { key } => out.key(key.clone()),
            serde_path_to_error::Segment::Enum { variant } => out.key(variant.clone()),
            serde_path_to_error::Segment::Unknown => out,
        };
    }
    out
}

fn unknown_field_name(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let end = rest.find('`')?;
    Some(rest[..end].to_string())
}

/// serde's messages are fine but sometimes carry Rust type names; keep them readable.
fn clean_serde_message(m: &str) -> String {
    m.replace("invalid type: ", "wrong type: ")
}

/// Checks size limits common to every text document.
pub fn check_size(text: &str) -> Result<(), Diagnostics> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(Diagnostics::one(
            FieldPath::root(),
            format!(
                "document is {} bytes, more than the limit of {} bytes",
                text.len(),
                MAX_DOCUMENT_BYTES
            ),
        ));
    }
    Ok(())
}

/// The 1-based line and column of a byte offset in `text` (for formats whose parser reports
/// byte spans, such as TOML).
pub fn offset_to_position(text: &str, offset: usize) -> Position {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() as u32 + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    Position { line, col }
}

/// Strips a leading UTF-8 byte order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses JSON text, recording the position of every value.
pub fn parse_json(text: &str) -> Result<SourceDoc, Diagnostics> {
    check_size(text)?;
    let text = strip_bom(text);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Diagnostics::from(
            Diagnostic::new(
                FieldPath::root(),
                format!("invalid JSON: {}", strip_json_pos(&e)),
            )
            .at(Some(Position {
                line: e.line().max(1) as u32,
                col: e.column().max(1) as u32,
            })),
        )
    })?;
    if depth(&value) > MAX_DEPTH {
        return Err(Diagnostics::one(
            FieldPath::root(),
            format!("document is nested more than {MAX_DEPTH} levels deep"),
        ));
    }
    let mut spans = HashMap::new();
    let mut scanner = JsonScanner {
        chars: text.char_indices().peekable(),
        line: 1,
        col: 1,
    };
    scanner.value(&FieldPath::root(), &mut spans);
    Ok(SourceDoc {
        value,
        spans,
        line_offset: 0,
    })
}

fn strip_json_pos(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Walks JSON text that serde_json has already accepted, recording where each value starts.
struct JsonScanner<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    line: u32,
    col: u32,
}

impl JsonScanner<'_> {
    fn bump(&mut self) -> Option<char> {
        let (_, c) = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|(_, c)| *c)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.bump();
        }
    }

    fn string(&mut self) -> String {
        // Opening quote.
        self.bump();
        let mut raw = String::from("\"");
        while let Some(c) = self.bump() {
            raw.push(c);
            match c {
                '\\' => {
                    if let Some(n) = self.bump() {
                        raw.push(n);
                    }
                }
                '"' => break,
                _ => {}
            }
        }
        serde_json::from_str(&raw).unwrap_or_default()
    }

    fn value(&mut self, path: &FieldPath, spans: &mut HashMap<FieldPath, Position>) {
        self.skip_ws();
        spans.insert(
            path.clone(),
            Position {
                line: self.line,
                col: self.col,
            },
        );
        match self.peek() {
            Some('{') => {
                self.bump();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some('}') => {
                            self.bump();
                            return;
                        }
                        Some(',') => {
                            self.bump();
                        }
                        Some('"') => {
                            let key = self.string();
                            self.skip_ws();
                            if self.peek() == Some(':') {
                                self.bump();
                            }
                            self.value(&path.key(key), spans);
                        }
                        _ => return,
                    }
                }
            }
            Some('[') => {
                self.bump();
                let mut i = 0;
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(']') => {
                            self.bump();
                            return;
                        }
                        Some(',') => {
                            self.bump();
                        }
                        Some(_) => {
                            self.value(&path.index(i), spans);
                            i += 1;
                        }
                        None => return,
                    }
                }
            }
            Some('"') => {
                self.string();
            }
            _ => {
                while matches!(self.peek(), Some(c) if !matches!(c, ',' | '}' | ']' | ' ' | '\t' | '\n' | '\r'))
                {
                    self.bump();
                }
            }
        }
    }
}

/// Parses YAML text (one document), recording the position of every value.
pub fn parse_yaml(text: &str) -> Result<SourceDoc, Diagnostics> {
    parse_yaml_as(text, false)
}

/// Like [`parse_yaml`], but plain `yes`/`no`/`on`/`off` (in the three spellings YAML 1.1 allows:
/// `yes`, `Yes`, `YES`) are booleans, as in YAML 1.1 loaders (PyYAML). For formats whose main
/// reader is such a loader (AgentCards, read by fast-agent), so that `shell: yes` means what its
/// author saw it do.
pub fn parse_yaml_yaml11_booleans(text: &str) -> Result<SourceDoc, Diagnostics> {
    parse_yaml_as(text, true)
}

fn parse_yaml_as(text: &str, yaml11_booleans: bool) -> Result<SourceDoc, Diagnostics> {
    check_size(text)?;
    let text = strip_bom(text);
    let mut sink = EventSink::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut sink, true) {
        return Err(Diagnostics::from(
            Diagnostic::new(FieldPath::root(), format!("invalid YAML: {}", e.info()))
                .at(Some(marker_pos(e.marker()))),
        ));
    }
    if sink.overflow {
        return Err(Diagnostics::one(
            FieldPath::root(),
            format!("document has more than {MAX_NODES} YAML events"),
        ));
    }
    let mut builder = YamlBuilder {
        events: &sink.events,
        pos: 0,
        anchors: HashMap::new(),
        nodes: 0,
        spans: HashMap::new(),
        yaml11_booleans,
    };
    let value = builder.document()?;
    Ok(SourceDoc {
        value,
        spans: builder.spans,
        line_offset: 0,
    })
}

fn marker_pos(m: &Marker) -> Position {
    Position {
        line: m.line().max(1) as u32,
        col: (m.col() + 1) as u32,
    }
}

#[derive(Default)]
struct EventSink {
    events: Vec<(Event, Marker)>,
    overflow: bool,
}

impl MarkedEventReceiver for EventSink {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.events.len() >= MAX_NODES {
            self.overflow = true;
            return;
        }
        self.events.push((ev, mark));
    }
}

struct YamlBuilder<'a> {
    events: &'a [(Event, Marker)],
    pos: usize,
    /// Anchor id → (value, node count of that value).
    anchors: HashMap<usize, (Value, usize)>,
    nodes: usize,
    spans: HashMap<FieldPath, Position>,
    yaml11_booleans: bool,
}

impl YamlBuilder<'_> {
    fn next(&mut self) -> Option<&(Event, Marker)> {
        let e = self.events.get(self.pos);
        self.pos += 1;
        e
    }

    fn document(&mut self) -> Result<Value, Diagnostics> {
        let mut docs = 0;
        let mut result = Value::Null;
        while self.pos < self.events.len() {
            let (ev, mark) = self.events[self.pos].clone();
            match ev {
                Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {
                    self.pos += 1;
                }
                Event::DocumentStart => {
                    self.pos += 1;
                    docs += 1;
                    if docs > 1 {
                        return Err(Diagnostics::from(
                            Diagnostic::new(
                                FieldPath::root(),
                                "more than one YAML document in the file (a second `---`)",
                            )
                            .at(Some(marker_pos(&mark))),
                        ));
                    }
                    result = self.node(&FieldPath::root(), 0)?;
                }
                _ => {
                    return Err(Diagnostics::one(FieldPath::root(), "unexpected YAML event"));
                }
            }
        }
        Ok(result)
    }

    fn count(&mut self, n: usize, path: &FieldPath) -> Result<(), Diagnostics> {
        self.nodes += n;
        if self.nodes > MAX_NODES {
            return Err(Diagnostics::one(
                path.clone(),
                format!("document expands to more than {MAX_NODES} nodes (alias expansion)"),
            ));
        }
        Ok(())
    }

    fn node(&mut self, path: &FieldPath, depth: usize) -> Result<Value, Diagnostics> {
        if depth > MAX_DEPTH {
            return Err(Diagnostics::one(
                path.clone(),
                format!("document is nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        let Some((ev, mark)) = self.next().cloned() else {
            return Err(Diagnostics::one(path.clone(), "unexpected end of YAML"));
        };
        self.spans.insert(path.clone(), marker_pos(&mark));
        let start_nodes = self.nodes;
        match ev {
            Event::Scalar(s, style, anchor, tag) => {
                self.count(1, path)?;
                let tag = tag.as_ref().map(|t| t.suffix.as_str());
                let v = match (self.yaml11_booleans, style, tag) {
                    (true, TScalarStyle::Plain, None) => {
                        yaml11_boolean(&s).map_or_else(|| scalar(&s, style, tag), Value::Bool)
                    }
                    _ => scalar(&s, style, tag),
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, (v.clone(), 1));
                }
                Ok(v)
            }
            Event::Alias(id) => {
                let Some((v, n)) = self.anchors.get(&id).cloned() else {
                    return Err(Diagnostics::from(
                        Diagnostic::new(path.clone(), "alias refers to an unknown anchor")
                            .at(Some(marker_pos(&mark))),
                    ));
                };
                self.count(n, path)?;
                Ok(v)
            }
            Event::SequenceStart(anchor, _) => {
                self.count(1, path)?;
                let mut items = Vec::new();
                loop {
                    match self.events.get(self.pos) {
                        Some((Event::SequenceEnd, _)) => {
                            self.pos += 1;
                            break;
                        }
                        None => {
                            return Err(Diagnostics::one(path.clone(), "unexpected end of YAML"));
                        }
                        _ => {
                            let child = path.index(items.len());
                            items.push(self.node(&child, depth + 1)?);
                        }
                    }
                }
                let v = Value::Array(items);
                if anchor > 0 {
                    self.anchors
                        .insert(anchor, (v.clone(), self.nodes - start_nodes));
                }
                Ok(v)
            }
            Event::MappingStart(anchor, _) => {
                self.count(1, path)?;
                let mut map = Map::new();
                loop {
                    match self.events.get(self.pos).cloned() {
                        Some((Event::MappingEnd, _)) => {
                            self.pos += 1;
                            break;
                        }
                        None => {
                            return Err(Diagnostics::one(path.clone(), "unexpected end of YAML"));
                        }
                        Some((key_ev, key_mark)) => {
                            let key = match key_ev {
                                Event::Scalar(s, _, _, _) => {
                                    self.pos += 1;
                                    s
                                }
                                _ => {
                                    return Err(Diagnostics::from(
                                        Diagnostic::new(
                                            path.clone(),
                                            "mapping keys must be plain strings",
                                        )
                                        .at(Some(marker_pos(&key_mark))),
                                    ));
                                }
                            };
                            let child = path.key(key.clone());
                            if map.contains_key(&key) {
                                return Err(Diagnostics::from(
                                    Diagnostic::new(child, "duplicate key")
                                        .at(Some(marker_pos(&key_mark))),
                                ));
                            }
                            let v = self.node(&child, depth + 1)?;
                            map.insert(key, v);
                        }
                    }
                }
                let v = Value::Object(map);
                if anchor > 0 {
                    self.anchors
                        .insert(anchor, (v.clone(), self.nodes - start_nodes));
                }
                Ok(v)
            }
            _ => Err(Diagnostics::from(
                Diagnostic::new(path.clone(), "unexpected YAML structure")
                    .at(Some(marker_pos(&mark))),
            )),
        }
    }
}

/// The YAML 1.1 booleans that the YAML 1.2 core schema reads as strings.
fn yaml11_boolean(s: &str) -> Option<bool> {
    match s {
        "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// Resolves a YAML scalar with the YAML 1.2 core schema.
fn scalar(s: &str, style: TScalarStyle, tag: Option<&str>) -> Value {
    if style != TScalarStyle::Plain {
        return Value::String(s.to_string());
    }
    if tag == Some("str") {
        return Value::String(s.to_string());
    }
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Some(n) = parse_int(s) {
        return Value::Number(n);
    }
    if looks_like_float(s)
        && let Some(n) = s.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    Value::String(s.to_string())
}

fn parse_int(s: &str) -> Option<Number> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.is_empty() {
        return None;
    }
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = i128::from_str_radix(body, radix).ok()?;
    let n = if neg { -n } else { n };
    if let Ok(i) = i64::try_from(n) {
        Some(Number::from(i))
    } else {
        u64::try_from(n).ok().map(Number::from)
    }
}

fn looks_like_float(s: &str) -> bool {
    let b = s.strip_prefix(['-', '+']).unwrap_or(s);
    !b.is_empty()
        && b.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.')
        && b.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
}

/// The key names present at `path` in `value`, for rules that look at raw fields.
pub fn keys_at<'v>(value: &'v Value, path: &FieldPath) -> Vec<&'v str> {
    let mut cur = value;
    for seg in path.segments() {
        cur = match (seg, cur) {
            (Segment::Key(k), Value::Object(m)) => match m.get(k) {
                Some(v) => v,
                None => return Vec::new(),
            },
            (Segment::Index(i), Value::Array(a)) => match a.get(*i) {
                Some(v) => v,
                None => return Vec::new(),
            },
            _ => return Vec::new(),
        };
    }
    match cur {
        Value::Object(m) => m.keys().map(String::as_str).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        id: String,
        n: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        items: Vec<Inner>,
    }

    #[test]
    fn yaml_positions_point_at_values() {
        let doc =
            parse_yaml("name: x\nitems:\n  - id: a\n    n: 1\n  - id: b\n    n: 2\n").unwrap();
        let p = doc.position(&FieldPath::parse("items[1].n")).unwrap();
        assert_eq!((p.line, p.col), (6, 8));
        let p = doc.position(&FieldPath::parse("name")).unwrap();
        assert_eq!((p.line, p.col), (1, 7));
    }

    #[test]
    fn yaml_type_error_has_path_and_position() {
        let doc = parse_yaml("name: x\nitems:\n  - id: a\n    n: lots\n").unwrap();
        let err = doc.deserialize::<Outer>().unwrap_err();
        let d = &err.0[0];
        assert_eq!(d.path.to_string(), "items[0].n");
        assert_eq!(d.position, Some(Position { line: 4, col: 8 }));
    }

    #[test]
    fn unknown_field_points_at_the_field() {
        let doc = parse_yaml("name: x\nitems: []\nextra: 1\n").unwrap();
        let err = doc.deserialize::<Outer>().unwrap_err();
        assert_eq!(err.0[0].path.to_string(), "extra");
        assert_eq!(err.0[0].position.unwrap().line, 3);
        assert!(err.0[0].message.contains("unknown field"));
    }

    #[test]
    fn json_positions_and_errors() {
        let text =
            "{\n  \"name\": \"x\",\n  \"items\": [\n    {\"id\": \"a\", \"n\": \"bad\"}\n  ]\n}";
        let doc = parse_json(text).unwrap();
        let err = doc.deserialize::<Outer>().unwrap_err();
        assert_eq!(err.0[0].path.to_string(), "items[0].n");
        assert_eq!(err.0[0].position, Some(Position { line: 4, col: 22 }));
        let bad = parse_json("{\n  \"a\": ,\n}").unwrap_err();
        assert_eq!(bad.0[0].position.unwrap().line, 2);
    }

    #[test]
    fn yaml_core_schema_scalars() {
        let doc = parse_yaml("a: 1\nb: -2.5\nc: true\nd: ~\ne: '1'\nf: 0x1f\ng: 1.2.3\n").unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a":1,"b":-2.5,"c":true,"d":null,"e":"1","f":31,"g":"1.2.3"})
        );
    }

    #[test]
    fn billion_laughs_is_refused() {
        let mut y = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            y.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        let err = parse_yaml(&y).unwrap_err();
        assert!(err.to_string().contains("more than"), "{err}");
    }

    #[test]
    fn duplicate_keys_and_multiple_documents_are_refused() {
        assert!(
            parse_yaml("a: 1\na: 2\n")
                .unwrap_err()
                .to_string()
                .contains("duplicate key")
        );
        assert!(parse_yaml("a: 1\n---\nb: 2\n").is_err());
    }

    #[test]
    fn yaml11_booleans_only_when_asked() {
        let text = "a: yes\nb: Off\nc: 'yes'\nd: y\ne: !!str on\n";
        let doc = parse_yaml_yaml11_booleans(text).unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": true, "b": false, "c": "yes", "d": "y", "e": "on"})
        );
        assert_eq!(parse_yaml(text).unwrap().value["a"], "yes");
    }

    #[test]
    fn bom_is_tolerated() {
        let doc = parse_yaml("\u{feff}name: x\n").unwrap();
        assert_eq!(doc.value["name"], "x");
    }
}
