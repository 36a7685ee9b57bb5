//! A small, conservative YAML writer for ofc's documents (block style, 2-space indent).
//!
//! Strings are written plain only when every YAML reader (1.1 or 1.2) reads them back as the
//! same string; multi-line text becomes a literal block when that is lossless; everything else
//! is double-quoted with escapes. Output parsed by [`crate::source::parse_yaml`] gives back the
//! same JSON value.

use serde_json::Value;

/// The YAML text of `value` (a mapping at the top level gives `key: value` lines).
pub(crate) fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => mapping(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => sequence(&mut out, a, 0),
        other => {
            scalar_inline(&mut out, other, 0);
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn mapping(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    for (k, v) in m {
        pad(out, indent);
        string(out, k, indent, false);
        out.push(':');
        value_after_indicator(out, v, indent);
    }
}

fn sequence(out: &mut String, a: &[Value], indent: usize) {
    for v in a {
        match v {
            Value::Object(m) if !m.is_empty() => {
                // Write the mapping one level deeper, then put `- ` over its first indent.
                let mut inner = String::new();
                mapping(&mut inner, m, indent + 2);
                pad(out, indent);
                out.push_str("- ");
                out.push_str(&inner[indent + 2..]);
            }
            Value::Array(items) if !items.is_empty() => {
                let mut inner = String::new();
                sequence(&mut inner, items, indent + 2);
                pad(out, indent);
                out.push_str("- ");
                out.push_str(&inner[indent + 2..]);
            }
            _ => {
                pad(out, indent);
                out.push('-');
                value_after_indicator(out, v, indent);
            }
        }
    }
}

/// Writes what follows `key:` or `-`: a scalar on the same line, or a nested block.
fn value_after_indicator(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            mapping(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            sequence(out, a, indent + 2);
        }
        other => {
            out.push(' ');
            scalar_inline(out, other, indent);
            out.push('\n');
        }
    }
}

fn scalar_inline(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(out, s, indent, true),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
    }
}

fn string(out: &mut String, s: &str, indent: usize, block_ok: bool) {
    if is_plain_safe(s) {
        out.push_str(s);
    } else if block_ok && is_literal_block_safe(s) {
        out.push_str(if s.ends_with('\n') { "|" } else { "|-" });
        let body = s.strip_suffix('\n').unwrap_or(s);
        for line in body.split('\n') {
            out.push('\n');
            if !line.is_empty() {
                pad(out, indent + 2);
                out.push_str(line);
            }
        }
    } else {
        double_quoted(out, s);
    }
}

const RESERVED: &[&str] = &[
    "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "y", "Y", "n", "N",
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
];

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_' || first == '/')
        && !s.ends_with(' ')
        && !s.contains("  ")
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '@' | '+' | ' ')
        })
        && !RESERVED.contains(&s)
}

fn is_special_char(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{feff}')
}

fn is_literal_block_safe(s: &str) -> bool {
    if !s.contains('\n') || s.ends_with("\n\n") || s.chars().any(is_special_char) {
        return false;
    }
    let body = s.strip_suffix('\n').unwrap_or(s);
    let mut lines = body.split('\n');
    // The first non-empty line fixes the block's indentation, so it must not start with a
    // space; no line may end in whitespace (blank lines would change meaning).
    let first_content = body.split('\n').find(|l| !l.is_empty());
    match first_content {
        Some(l) if !l.starts_with(' ') => {}
        _ => return false,
    }
    // A trailing empty line would be eaten by clipping.
    if body.ends_with('\n') {
        return false;
    }
    lines.all(|l| !l.ends_with(' '))
}

fn double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_special_char(c) || (c as u32) > 0xFFFF && !is_printable_astral(c) => {
                let n = c as u32;
                if n <= 0xFF {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n <= 0xFFFF {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Astral characters are printable in YAML unless they are noncharacters.
fn is_printable_astral(c: char) -> bool {
    let n = c as u32;
    (n & 0xFFFE) != 0xFFFE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::parse_yaml;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn writes_readable_yaml() {
        let v = json!({
            "name": "data-analysis",
            "n": 3,
            "t": 0.5,
            "flag": true,
            "version": "1.2.3",
            "yes": "yes",
            "list": ["a", "@b", {"id": "@c", "prompt": "line 1\nline 2\n"}, []],
            "empty": {},
        });
        let text = to_yaml(&v);
        assert!(text.contains("name: data-analysis\n"), "{text}");
        assert!(text.contains("version: \"1.2.3\"\n"), "{text}");
        assert!(
            text.contains("    prompt: |\n      line 1\n      line 2\n"),
            "{text}"
        );
        assert_eq!(parse_yaml(&text).unwrap().value, v);
    }

    fn arb_string() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9 _./@-]{0,12}",
            "[ -~]{0,16}",
            "(\n|[a-z ]{0,6}|---|#|: |\t|\u{85}|\u{feff}|é|\u{1F600}|\r|'|\"){0,8}",
            any::<String>(),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
            arb_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((arb_string(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn emitted_yaml_parses_back_to_the_same_value(
            kv in prop::collection::vec((arb_string(), arb_value()), 0..6)
        ) {
            let v = Value::Object(kv.into_iter().collect());
            let text = to_yaml(&v);
            let back = parse_yaml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            // An empty top-level mapping is written as `{}`.
            prop_assert_eq!(back.value, v, "{}", text);
        }
    }
}
