//! Look-alike namespace names (issue 33, point 3): a new namespace is refused when it reads as
//! an existing one or as a reserved name.
//!
//! Namespace names are already ASCII (`index_schema::name::check_publisher`: letters, digits,
//! `-` and `_`, lowercase once checked), so the Unicode look-alikes of other registries
//! (Cyrillic `о` for `o`, fullwidth letters, NFKC variants) cannot be spelled at all: they are
//! refused as invalid characters before this module is asked. What is left are the ASCII
//! look-alikes, folded into a *skeleton*:
//!
//! - case (names are lowercased by the name check);
//! - the separators `-` and `_` (and `.`, which names cannot hold) are dropped:
//!   `acme-labs`, `acme_labs` and `acmelabs` are one name;
//! - `rn` → `m`, `vv` → `w` (two letters that read as one), then `0` → `o` and `1`, `i` → `l`
//!   (the digit and the letters that one font or another draws alike).
//!
//! Two names with one skeleton are look-alikes: the second is refused. A name whose skeleton
//! is a reserved name's (`adm1n`, `0fc`, `r00t`, `off1cial`) is refused as reserved. Not
//! folded, on purpose: `5`/`s`, `8`/`b`, `cl`/`d` — rarer confusions whose folding would refuse
//! many honest names.
//!
//! The skeleton is stored with each namespace (`namespaces.skeleton`, migration 0024, which
//! computes it for existing rows with the same replacements in SQL) under a unique index
//! (migration 0027): the insert itself refuses a look-alike, so of two created at the same
//! moment on two replicas one is refused. Namespaces that were look-alikes before stay (0027
//! leaves the younger of each such group out of the index).

use index_schema::name::{RESERVED_PATH_NAMES, RESERVED_PUBLISHERS};

/// The replacements after the separators are dropped, in order (migration 0024 applies the
/// same ones in the same order).
const FOLDS: [(&str, &str); 5] = [("rn", "m"), ("vv", "w"), ("0", "o"), ("1", "l"), ("i", "l")];

/// The skeleton of a (checked) namespace name: what it looks like.
pub fn skeleton(name: &str) -> String {
    let mut s: String = name
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .collect();
    for (from, to) in FOLDS {
        s = s.replace(from, to);
    }
    s
}

/// The reserved name `name` looks like (`adm1n` → `admin`), if any; the reserved names
/// themselves are refused by the name check already.
pub fn reserved_lookalike(name: &str) -> Option<&'static str> {
    let sk = skeleton(name);
    RESERVED_PUBLISHERS
        .iter()
        .chain(RESERVED_PATH_NAMES)
        .find(|r| skeleton(r) == sk)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::{reserved_lookalike, skeleton};

    /// (name, an existing namespace or reserved name, whether they are look-alikes).
    const TABLE: &[(&str, &str, bool)] = &[
        ("acme-labs", "acme_labs", true),
        ("acmelabs", "acme-labs", true),
        ("Acme-Labs", "acme_labs", true),
        ("acme--labs", "acmelabs", true),
        ("g00gle", "google", true),
        ("goog1e", "google", true),
        ("googie", "google", true),
        ("rnicrosoft", "microsoft", true),
        ("vvidget", "widget", true),
        ("paypa1", "paypal", true),
        ("acme", "acne", false),
        ("acme-labs", "acme-lab", false),
        ("data5", "datas", false),
        ("open-ai", "openai", true),
        ("openal", "openai", true),
        ("team-b", "team-a", false),
    ];

    #[test]
    fn lookalike_table() {
        for (a, b, same) in TABLE {
            assert_eq!(
                skeleton(a) == skeleton(b),
                *same,
                "{a} vs {b}: skeletons {} and {}",
                skeleton(a),
                skeleton(b)
            );
        }
    }

    #[test]
    fn reserved_lookalikes() {
        for (name, reserved) in [
            ("adm1n", Some("admin")),
            ("0fc", Some("ofc")),
            ("o-f-c", Some("ofc")),
            ("r00t", Some("root")),
            ("off1cial", Some("official")),
            ("Offic1al", Some("official")),
            ("vvvvvv", Some("www")),
            ("a-p-i", Some("api")),
            ("apl", Some("api")),
            ("acme", None),
            ("officials", None),
        ] {
            assert_eq!(reserved_lookalike(name), reserved, "{name}");
        }
    }

    #[test]
    fn unicode_lookalikes_never_reach_the_skeleton() {
        // Cyrillic о, fullwidth ｏｆｃ, a Latin ı without dot, a combining accent, a script
        // ℴ: the name check refuses each (only a-z, 0-9, `-` and `_`, starting with one of
        // the first two).
        for name in ["оfc", "ｏｆｃ", "admın", "ofc\u{301}", "ℴfc", "rооt"] {
            let e = index_schema::name::check_publisher(name)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("only a-z") || e.contains("must start with a letter or a digit"),
                "{name}: {e}"
            );
        }
    }
}
