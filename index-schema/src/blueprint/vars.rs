//! `${VAR}`, `${VAR-default}` and `${VAR:-default}` in a blueprint's strings, with the OFC
//! reference CLI's meaning:
//!
//! - every string value at any depth is expanded (mapping keys are not), once, when the
//!   blueprint is loaded; what a variable gives is never expanded again (a secret may hold `$`);
//! - `${VAR}` is the variable's value (empty if it is set but empty); unset, it is an error
//!   naming the variable and the field;
//! - `${VAR-default}` is `default` when VAR is unset, `${VAR:-default}` when it is unset or
//!   empty; the default runs to the first `}` (no nesting) and may be empty;
//! - only `${` starts a variable: a bare `$VAR`, a lone `$` and `$$` are text, and an unclosed
//!   `${` is kept as written. There is no escape (the reference has none); a literal `${` is
//!   `${NO_SUCH_VAR-${}` at worst, and is rarely needed.
//!
//! Text read later (a `prompt_file`, a prompt template's output) is not expanded. Looking the
//! variables up is the caller's: this module does no I/O.

use serde_json::Value;

use crate::diagnostic::{Diagnostics, FieldPath};

/// Expands every string in `value` (a parsed blueprint, before it is deserialized) through
/// `lookup`; each unset variable without a default is one diagnostic on its field.
pub fn expand(value: &mut Value, lookup: &dyn Fn(&str) -> Option<String>) -> Diagnostics {
    let mut d = Diagnostics::default();
    walk(value, &FieldPath::root(), lookup, &mut d);
    d
}

fn walk(
    value: &mut Value,
    path: &FieldPath,
    lookup: &dyn Fn(&str) -> Option<String>,
    d: &mut Diagnostics,
) {
    match value {
        Value::String(s) if s.contains("${") => match expand_str(s, lookup) {
            Ok(out) => *s = out,
            Err(missing) => {
                for m in missing {
                    d.push(path.clone(), m);
                }
            }
        },
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                walk(v, &path.index(i), lookup, d);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                walk(v, &path.key(k.as_str()), lookup, d);
            }
        }
        _ => {}
    }
}

/// One string expanded, or a message per variable that is unset and has no default.
pub fn expand_str(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Vec<String>> {
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let inner_start = &rest[at + 2..];
        let Some(end) = inner_start.find('}') else {
            // Unclosed: kept as written.
            out.push_str(&rest[at..]);
            rest = "";
            break;
        };
        let inner = &inner_start[..end];
        rest = &inner_start[end + 1..];
        match resolve(inner, lookup) {
            Some(v) => out.push_str(&v),
            None => missing.push(unset_message(inner)),
        }
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(missing)
    }
}

/// How the text between `${` and `}` splits: the name, and the default with whether an empty
/// value takes it (`:-`).
fn split(inner: &str) -> (&str, Option<(&str, bool)>) {
    match inner.find([':', '-']) {
        Some(i) if inner[i..].starts_with(":-") => (&inner[..i], Some((&inner[i + 2..], true))),
        Some(i) if inner[i..].starts_with('-') => (&inner[..i], Some((&inner[i + 1..], false))),
        // `:` not followed by `-`: the whole text is the name, which no variable has.
        _ => (inner, None),
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn resolve(inner: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let (name, default) = split(inner);
    let value = if is_name(name) { lookup(name) } else { None };
    match (value, default) {
        (Some(v), Some((d, true))) if v.is_empty() => Some(d.to_owned()),
        (Some(v), _) => Some(v),
        (None, Some((d, _))) => Some(d.to_owned()),
        (None, None) => None,
    }
}

fn unset_message(inner: &str) -> String {
    if is_name(inner) {
        format!(
            "`${{{inner}}}`: the environment variable {inner} is not set; set it, or give a \
             default: `${{{inner}:-value}}`"
        )
    } else {
        format!(
            "`${{{inner}}}` is not a variable: write `${{NAME}}`, `${{NAME-default}}` (when \
             unset) or `${{NAME:-default}}` (when unset or empty)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "SET" => Some("value".into()),
            "EMPTY" => Some(String::new()),
            "DOLLAR" => Some("p$a${SET}ss".into()),
            _ => None,
        }
    }

    fn ok(text: &str) -> String {
        expand_str(text, &env).unwrap()
    }

    #[test]
    fn the_three_forms() {
        assert_eq!(ok("a ${SET} b"), "a value b");
        assert_eq!(ok("[${EMPTY}]"), "[]");
        assert_eq!(ok("${UNSET-def}"), "def");
        assert_eq!(ok("${EMPTY-def}"), "", "`-` keeps an empty value");
        assert_eq!(ok("${SET-def}"), "value");
        assert_eq!(ok("${UNSET:-def}"), "def");
        assert_eq!(ok("${EMPTY:-def}"), "def");
        assert_eq!(ok("${SET:-def}"), "value");
    }

    #[test]
    fn defaults_run_to_the_first_brace_and_may_be_empty_or_hold_dashes() {
        assert_eq!(ok("${UNSET:-a-b-c}"), "a-b-c");
        assert_eq!(ok("${UNSET:-}"), "");
        assert_eq!(ok("${UNSET-}"), "");
        assert_eq!(ok("${UNSET:-x:y}"), "x:y");
        assert_eq!(ok("${UNSET-${}"), "${", "the literal `${{`, if ever needed");
        assert_eq!(ok("${UNSET:-{a}b}"), "{ab}");
    }

    #[test]
    fn only_dollar_brace_is_special_and_nothing_is_expanded_twice() {
        assert_eq!(ok("$SET $$ $5 a$"), "$SET $$ $5 a$");
        assert_eq!(ok("${SET"), "${SET", "unclosed is kept");
        assert_eq!(ok("x ${SET} ${UNCLOSED"), "x value ${UNCLOSED");
        assert_eq!(ok("${DOLLAR}"), "p$a${SET}ss");
    }

    #[test]
    fn unset_without_default_names_the_variable() {
        let e = expand_str("${SET} ${NOPE} ${ALSO}", &env).unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(e[0].contains("NOPE is not set"), "{e:?}");
        assert!(e[0].contains("${NOPE:-value}"), "{e:?}");
        assert!(e[1].contains("ALSO"), "{e:?}");
        for bad in ["${}", "${A:B}", "${A B}"] {
            let e = expand_str(bad, &env).unwrap_err();
            assert!(e[0].contains("is not a variable"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn every_string_value_at_any_depth_but_not_keys() {
        let mut v = json!({
            "name": "${SET}",
            "agents": [{"id": "@a", "prompt": "hi ${SET}", "env": {"${SET}": "${UNSET:-d}"}}],
            "n": 3,
            "flag": true,
        });
        assert!(expand(&mut v, &env).is_empty());
        assert_eq!(v["name"], "value");
        assert_eq!(v["agents"][0]["prompt"], "hi value");
        assert_eq!(v["agents"][0]["env"]["${SET}"], "d");
        assert_eq!(v["n"], 3);
    }

    #[test]
    fn each_unset_variable_is_reported_on_its_field() {
        let mut v = json!({"defaults": {"model": "${M}"}, "agents": [{"prompt": "${P}"}]});
        let d = expand(&mut v, &env);
        let paths: Vec<String> = d.iter().map(|d| d.path.to_string()).collect();
        assert_eq!(paths, ["defaults.model", "agents[0].prompt"]);
        assert!(d.iter().any(|d| d.message.contains("M is not set")));
    }
}
