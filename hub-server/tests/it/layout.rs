//! The shape of `hub-server` (issue 14), checked on every CI run: the JSON API (`src/api/`) and
//! the OCI API (`src/oci/`) do not import from each other — what both need lives beside them
//! (`publish.rs`, `state.rs`, `auth.rs`, `error.rs`, `store`) — and no source file grows past
//! 1,000 lines.

use std::path::{Path, PathBuf};

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Lines of `file` that name module `other` of the crate (`crate::other…`, `super::other…`
/// from a sibling, `use crate::{…other…}`), comments excluded.
fn imports_of(file: &Path, other: &str) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let needles = [
        format!("crate::{other}::"),
        format!("crate::{other};"),
        format!("crate::{other} "),
        format!("super::super::{other}"),
        format!("crate::{{{other}"),
        format!(", {other}::"),
    ];
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| needles.iter().any(|n| l.contains(n.as_str())))
        .map(|(i, l)| format!("{}:{}: {}", file.display(), i + 1, l.trim()))
        .collect()
}

#[test]
fn api_and_oci_do_not_import_each_other() {
    let mut bad = Vec::new();
    for f in sources(&src().join("api")) {
        bad.extend(imports_of(&f, "oci"));
    }
    for f in sources(&src().join("oci")) {
        bad.extend(imports_of(&f, "api"));
    }
    assert!(
        bad.is_empty(),
        "api/ and oci/ import each other:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_sees_an_import() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.rs");
    std::fs::write(
        &f,
        "// crate::oci::db is fine in a comment\nuse crate::oci::db;\n",
    )
    .unwrap();
    assert_eq!(imports_of(&f, "oci").len(), 1);
}

#[test]
fn no_source_file_is_over_1000_lines() {
    let long: Vec<String> = sources(&src())
        .into_iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            (n > 1000).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}
