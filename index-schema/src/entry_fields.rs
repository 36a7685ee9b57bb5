//! Which fields each kind of entry takes, for documents whose entries come in kinds: an inline
//! agent of a blueprint is `llm` or `acp`, a workstation `sandbox` or `filesystem`, an
//! `agent.yaml` an LLM agent, a process agent or a packaged one.
//!
//! Every field an entry has is one of three things:
//!
//! - a field its kind acts on;
//! - a field of its format that ofc accepts but does not act on (an option only the reference
//!   CLI or fast-agent reads): accepted, and a warning names it and says what happens instead;
//! - a field of another kind, or of none: refused, naming the kinds it belongs to and what to
//!   write instead.
//!
//! Nothing is ignored silently. A kind is one [`EntryKind`], so adding a kind to a document is
//! one entry in its table.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostics, FieldPath};

/// The fields one kind of entry takes.
#[derive(Debug)]
pub(crate) struct EntryKind {
    /// The kind in messages, with its article: "an `llm` agent".
    pub label: &'static str,
    /// The fields it acts on.
    pub fields: &'static [&'static str],
    /// Fields of the format it accepts without acting on them, each with what happens instead
    /// (said in the warning).
    pub unused: &'static [(&'static str, &'static str)],
    /// What to write instead, said when a field of another kind is found on this one.
    pub hint: &'static str,
}

impl EntryKind {
    /// Whether this kind accepts `field` (acting on it or not).
    pub fn accepts(&self, field: &str) -> bool {
        self.fields.contains(&field) || self.unused.iter().any(|(f, _)| *f == field)
    }

    /// Whether this kind acts on `field`.
    pub fn acts_on(&self, field: &str) -> bool {
        self.fields.contains(&field)
    }
}

/// What checking an entry's fields found.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Fields refused.
    pub errors: Diagnostics,
    /// Fields accepted but not acted on.
    pub warnings: Diagnostics,
}

/// Checks the fields of an entry of `kind` found at `path`: `present` are the fields it has.
/// `all` are every kind of the same place in the document (to name where a refused field
/// belongs).
pub(crate) fn check<'a>(
    present: impl IntoIterator<Item = &'a str>,
    kind: &EntryKind,
    all: &[&EntryKind],
    path: &FieldPath,
    found: &mut Findings,
) {
    for field in present {
        if kind.acts_on(field) {
            continue;
        }
        if let Some((_, why)) = kind.unused.iter().find(|(f, _)| *f == field) {
            found.warnings.push(
                path.key(field),
                format!("`{field}` is accepted but not used by ofc: {why}"),
            );
            continue;
        }
        let owners: Vec<&str> = all
            .iter()
            .filter(|k| k.accepts(field))
            .map(|k| k.label)
            .collect();
        let message = if owners.is_empty() {
            format!(
                "unknown field `{field}` for {}; it takes {}",
                kind.label,
                list(kind.fields)
            )
        } else {
            format!(
                "`{field}` does not apply to {}, only to {}",
                kind.label,
                owners.join(" or ")
            )
        };
        let message = if kind.hint.is_empty() {
            message
        } else {
            format!("{message}; {}", kind.hint)
        };
        found.errors.push(path.key(field), message);
    }
}

/// The fields a serialized entry has: the keys of its JSON object (a field left at its default
/// is not written, so it does not count as given).
pub(crate) fn present(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .map(Map::keys)
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

/// Names the `keys` of `m` that are not `known`, as warnings: for formats whose schema lets an
/// object carry fields it does not define (an A2A card, an MCP `server.json`), which the format's
/// own tools accept and ofc keeps as written but does not act on. `what` names the object
/// ("an A2A agent card's skill").
pub(crate) fn warn_unknown(
    m: &Map<String, Value>,
    known: &[&str],
    what: &str,
    path: &FieldPath,
    warnings: &mut Diagnostics,
) {
    for key in m.keys() {
        if !known.contains(&key.as_str()) {
            warnings.push(
                path.key(key.clone()),
                format!(
                    "`{}` is not a field of {what}: accepted, as the format allows fields it does \
                     not define, but not used by ofc (the fields it knows: {})",
                    crate::name::shown(key),
                    list(known)
                ),
            );
        }
    }
}

fn list(fields: &[&str]) -> String {
    fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
