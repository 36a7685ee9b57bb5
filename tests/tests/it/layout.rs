//! The shape of the workspace (issue 29), computed from the code on every CI run:
//!
//! - no import cycle between the modules of `hub-core`, `hub-server` and `ofc-pkg`: every
//!   source file is tokenized (comments and strings are gone), every path it names from its own
//!   crate (`crate::…`, `super::…`, `self::…`, `use` groups expanded) is resolved to the module
//!   (file) that holds it, and the strongly connected components of that graph must be single
//!   files;
//! - SQL only in hub-core's store: no string literal that starts a statement (`SELECT`,
//!   `INSERT`, `UPDATE`, `DELETE`, `CREATE`, `PRAGMA`, …) outside `hub-core/src/store/`;
//! - no HTTP framework in hub-core's dependency tree (axum, hyper, tower, reqwest), and no
//!   floor engine (`runtime`) in hub-server's (from `cargo metadata`);
//! - no `.rs` file under a `src/` over 1,000 lines; every binary's `main.rs` under 200; no
//!   `macro_rules!` in hub-core or hub-server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `.rs` files below `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
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

/// The module path of a file of `src` (`src/a/b.rs` and `src/a/b/mod.rs` → `["a", "b"]`;
/// `lib.rs` and `main.rs` → `[]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// A path a file names, as written (`crate::a::B`, `super::x`, `child::y`), with the name it
/// is known by when a `use … as NAME` renames it.
#[derive(Debug, Clone)]
struct Named {
    path: Vec<String>,
    alias: Option<String>,
}

/// What one file names of its crate: the paths of its private `use`s and of its code, and
/// the paths it re-exports (`pub use`, `pub(crate) use`), which are not its own arrows: a
/// module that hands names on is looked through, as a folder's face.
#[derive(Debug, Default)]
struct Names {
    used: Vec<Named>,
    reexported: Vec<Named>,
}

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

fn is_ident(t: Option<&TokenTree>, name: &str) -> bool {
    matches!(t, Some(TokenTree::Ident(i)) if i == name)
}

/// Collects what `tokens` name of the crate: paths starting with `crate`, `super`, `self` or a
/// `child` module of the file's module (`children`), `use` groups expanded. A `mod child;`
/// declaration is not a path.
fn collect_names(tokens: TokenStream, children: &BTreeSet<String>, out: &mut Names) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        // `#[cfg(test)] ITEM`: test code is not the module's structure; the item ends at its
        // body (`{…}`) or its `;`.
        if is_punct(trees.get(i), '#')
            && let Some(TokenTree::Group(g)) = trees.get(i + 1)
            && g.delimiter() == Delimiter::Bracket
            && is_cfg_test(&g.stream())
        {
            i += 2;
            while i < trees.len() {
                let end = is_punct(trees.get(i), ';')
                    || matches!(&trees[i], TokenTree::Group(b) if b.delimiter() == Delimiter::Brace);
                i += 1;
                if end {
                    break;
                }
            }
            continue;
        }
        // `[pub [(…)]] use TREE;`
        if is_ident(trees.get(i), "use") {
            let public = (i >= 1 && is_ident(trees.get(i - 1), "pub"))
                || (i >= 2
                    && is_ident(trees.get(i - 2), "pub")
                    && matches!(&trees[i - 1], TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis));
            let end = (i + 1..trees.len())
                .find(|j| is_punct(trees.get(*j), ';'))
                .unwrap_or(trees.len());
            let tree = &trees[i + 1..end];
            let starts_own = match tree.first() {
                Some(TokenTree::Ident(id)) => {
                    let h = id.to_string();
                    matches!(h.as_str(), "crate" | "super" | "self") || children.contains(&h)
                }
                _ => false,
            };
            if starts_own {
                let (paths, _) = path_from(tree, 0, Vec::new());
                if public {
                    out.reexported.extend(paths);
                } else {
                    out.used.extend(paths);
                }
            }
            i = end + 1;
            continue;
        }
        if let TokenTree::Ident(id) = &trees[i] {
            let head = id.to_string();
            let after_colons =
                i >= 2 && is_punct(trees.get(i - 1), ':') && is_punct(trees.get(i - 2), ':');
            let declared = i >= 1 && is_ident(trees.get(i - 1), "mod");
            let starts = matches!(head.as_str(), "crate" | "super" | "self")
                || (children.contains(&head) && !declared);
            if starts && !after_colons {
                let (paths, next) = path_from(&trees, i, Vec::new());
                // A lone `crate`/`super`/`self` names no item: `pub(crate)`, `self.field`.
                out.used
                    .extend(paths.into_iter().filter(|p| p.path.len() > 1));
                i = next;
                continue;
            }
        }
        if let TokenTree::Group(g) = &trees[i] {
            collect_names(g.stream(), children, out);
        }
        i += 1;
    }
}

/// Whether an attribute's tokens are `cfg(test)` (or a `cfg(all(test, …))`).
fn is_cfg_test(attr: &TokenStream) -> bool {
    let text = attr.to_string().replace(' ', "");
    text == "cfg(test)" || text.starts_with("cfg(all(test,")
}

/// The path(s) starting at `trees[i]` (after `prefix`), each with its `as` name, and the index
/// after them.
fn path_from(trees: &[TokenTree], mut i: usize, mut prefix: Vec<String>) -> (Vec<Named>, usize) {
    loop {
        match trees.get(i) {
            Some(TokenTree::Ident(id)) => {
                prefix.push(id.to_string());
                i += 1;
            }
            Some(TokenTree::Punct(p)) if p.as_char() == '*' => {
                return (
                    vec![Named {
                        path: prefix,
                        alias: None,
                    }],
                    i + 1,
                );
            }
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                // A `use` group: each comma-separated tree continues the prefix.
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                let mut all = Vec::new();
                for part in inner.split(|t| is_punct(Some(t), ',')) {
                    if !part.is_empty() {
                        all.extend(path_from(part, 0, prefix.clone()).0);
                    }
                }
                return (all, i + 1);
            }
            _ => {
                return (
                    vec![Named {
                        path: prefix,
                        alias: None,
                    }],
                    i,
                );
            }
        }
        if is_punct(trees.get(i), ':') && is_punct(trees.get(i + 1), ':') {
            i += 2;
            continue;
        }
        // `… as NAME`
        if is_ident(trees.get(i), "as")
            && let Some(TokenTree::Ident(alias)) = trees.get(i + 1)
        {
            let alias = alias.to_string();
            return (
                vec![Named {
                    path: prefix,
                    alias: Some(alias),
                }],
                i + 2,
            );
        }
        return (
            vec![Named {
                path: prefix,
                alias: None,
            }],
            i,
        );
    }
}

/// `path` as seen from module `here`, made absolute (`super`, `self` and a child's name
/// resolved).
fn absolute(here: &[String], path: &[String]) -> Vec<String> {
    let mut base: Vec<String> = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self") => {
            base = here.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            base = here.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        // A child module of `here`, named without `self::`.
        _ => base = here.to_vec(),
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    base
}

/// The module (file) that defines what `path` names: the longest prefix that is a module,
/// looked through the re-exports of the modules on the way (at most 16 steps).
fn resolve(
    mut path: Vec<String>,
    modules: &BTreeSet<Vec<String>>,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
) -> Option<Vec<String>> {
    for _ in 0..16 {
        let module = (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| modules.contains(m))?;
        let Some(name) = path.get(module.len()) else {
            return Some(module);
        };
        match reexports.get(&module).and_then(|r| r.get(name)) {
            Some(target) => {
                let mut next = target.clone();
                next.extend(path[module.len() + 1..].iter().cloned());
                path = next;
            }
            None => return Some(module),
        }
    }
    None
}

/// The import graph of a crate's `src`: module → the modules (other files) it names, each
/// name followed through re-exports to the file that defines it.
fn import_graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    // Test modules kept in files of their own (`tests.rs`, `*_tests.rs`) are test code too.
    let files: Vec<PathBuf> = sources(src)
        .into_iter()
        .filter(|f| {
            let name = f.file_stem().unwrap().to_string_lossy();
            name != "tests" && !name.ends_with("_tests")
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut names: BTreeMap<Vec<String>, Names> = BTreeMap::new();
    for f in &files {
        let here = module_of(src, f);
        let text = std::fs::read_to_string(f).unwrap();
        let tokens = TokenStream::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: cannot tokenize: {e}", f.display()));
        let children: BTreeSet<String> = modules
            .iter()
            .filter(|m| m.len() == here.len() + 1 && m.starts_with(&here))
            .map(|m| m.last().unwrap().clone())
            .collect();
        let mut n = Names::default();
        collect_names(tokens, &children, &mut n);
        names.insert(here, n);
    }
    // Re-exports: module → the name it hands on → what it names (absolute).
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (here, n) in &names {
        for r in &n.reexported {
            let abs = absolute(here, &r.path);
            if let Some(name) = r.alias.clone().or_else(|| abs.last().cloned()) {
                reexports.entry(here.clone()).or_default().insert(name, abs);
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (here, n) in &names {
        let mut to = BTreeSet::new();
        for u in &n.used {
            if let Some(t) = resolve(absolute(here, &u.path), &modules, &reexports)
                && &t != here
            {
                to.insert(t);
            }
        }
        graph.insert(here.clone(), to);
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct State<'g> {
        graph: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        next: usize,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let Some((w, _)) = s.graph.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn shown(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// Every cycle of `krate`, with the arrows inside it, for the failure message.
fn cycles_of(krate: &str) -> Vec<String> {
    let src = root().join(krate).join("src");
    assert!(src.is_dir(), "{} is not a crate's src", src.display());
    let graph = import_graph(&src);
    cycles(&graph)
        .into_iter()
        .map(|comp| {
            let members: BTreeSet<&Vec<String>> = comp.iter().collect();
            let mut lines = vec![format!(
                "{krate}: {}",
                comp.iter().map(|m| shown(m)).collect::<Vec<_>>().join(", ")
            )];
            for m in &comp {
                for t in &graph[m] {
                    if members.contains(t) {
                        lines.push(format!("    {} -> {}", shown(m), shown(t)));
                    }
                }
            }
            lines.join("\n")
        })
        .collect()
}

#[test]
fn no_import_cycles_in_hub_core_hub_server_and_ofc_pkg() {
    let mut all = Vec::new();
    for krate in ["hub-core", "hub-server", "ofc-pkg"] {
        all.extend(cycles_of(krate));
    }
    assert!(all.is_empty(), "import cycles:\n{}", all.join("\n"));
}

#[test]
fn the_cycle_finder_sees_a_cycle_through_super_and_a_use_group() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "mod a; mod b; mod c; mod d;\npub use b::go as start;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "mod inner;\n// crate::c is only a comment\nconst S: &str = \"crate::c\";\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/inner.rs"),
        "use crate::{b::{self, Thing}};\nfn f() { b::go(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "pub fn go() { super::a::inner::f(); }\n").unwrap();
    std::fs::write(src.join("c.rs"), "use super::b::go;\n").unwrap();
    // Through the crate root's re-export: an arrow to `b`, where `go` is, not to the root.
    std::fs::write(src.join("d.rs"), "fn f() { crate::start(); }\n").unwrap();
    let graph = import_graph(&src);
    let found = cycles(&graph);
    assert_eq!(
        found,
        [vec![
            vec!["a".to_owned(), "inner".to_owned()],
            vec!["b".to_owned()]
        ]],
        "{graph:?}"
    );
    // The comment and the string named `crate::c`: no arrow from `a`.
    assert!(graph[&vec!["a".to_owned()]].is_empty(), "{graph:?}");
    assert_eq!(
        graph[&vec!["d".to_owned()]],
        BTreeSet::from([vec!["b".to_owned()]]),
        "{graph:?}"
    );
    // The root hands `go` on; that is no arrow of its own.
    assert!(graph[&Vec::new()].is_empty(), "{graph:?}");
}

/// String literals of `tokens` that start an SQL statement (its keyword in capitals).
fn sql_literals(tokens: TokenStream, out: &mut Vec<String>) {
    const STARTS: [&str; 11] = [
        "SELECT ", "INSERT ", "UPDATE ", "DELETE ", "CREATE ", "ALTER ", "DROP ", "WITH ",
        "PRAGMA ", "BEGIN", "REPLACE ",
    ];
    for t in tokens {
        match t {
            TokenTree::Group(g) => sql_literals(g.stream(), out),
            TokenTree::Literal(l) => {
                let text = l.to_string();
                let body = text
                    .trim_start_matches('r')
                    .trim_start_matches('#')
                    .trim_start_matches('"')
                    .trim_start();
                // SQL here is written in capitals; prose ("Create a token") is not.
                if text.starts_with(['"', 'r']) && STARTS.iter().any(|s| body.starts_with(s)) {
                    out.push(text.chars().take(60).collect());
                }
            }
            _ => {}
        }
    }
}

#[test]
fn sql_only_in_the_store() {
    let mut bad = Vec::new();
    for krate in ["hub-core", "hub-server"] {
        let src = root().join(krate).join("src");
        for f in sources(&src) {
            if f.starts_with(root().join("hub-core/src/store")) {
                continue;
            }
            let tokens = TokenStream::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let mut found = Vec::new();
            sql_literals(tokens, &mut found);
            for s in found {
                bad.push(format!(
                    "{}: {s}",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "SQL outside hub-core/src/store/:\n{}",
        bad.join("\n")
    );
}

/// The names of the packages `package` depends on, transitively, by normal dependencies.
fn dependency_tree(metadata: &serde_json::Value, package: &str) -> BTreeSet<String> {
    let packages = metadata["packages"].as_array().unwrap();
    let name_of = |id: &str| {
        packages
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let nodes = metadata["resolve"]["nodes"].as_array().unwrap();
    let start = packages
        .iter()
        .find(|p| p["name"] == package && p["source"].is_null())
        .unwrap_or_else(|| panic!("no workspace package {package}"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut seen = BTreeSet::new();
    let mut todo = vec![start];
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let node = nodes.iter().find(|n| n["id"] == id.as_str()).unwrap();
        for dep in node["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                todo.push(dep["pkg"].as_str().unwrap().to_owned());
            }
        }
    }
    seen.iter().map(|id| name_of(id)).collect()
}

#[test]
fn hub_core_has_no_http_and_hub_server_no_floor_engine() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let core = dependency_tree(&metadata, "hub-core");
    let http: Vec<&String> = core
        .iter()
        .filter(|n| {
            matches!(
                n.as_str(),
                "axum" | "hyper" | "hyper-util" | "tower" | "tower-http" | "reqwest"
            )
        })
        .collect();
    assert!(http.is_empty(), "hub-core depends on {http:?}");
    let server = dependency_tree(&metadata, "hub-server");
    assert!(
        !server.contains("runtime"),
        "hub-server depends on the floor engine (runtime)"
    );
}

/// Whether `tokens` hold the identifier `name`, at any depth.
fn names_ident(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => names_ident(g.stream(), name),
        _ => false,
    })
}

#[test]
fn files_are_short_mains_are_thin_and_the_hub_has_no_macros() {
    let mut bad = Vec::new();
    for krate in [
        "index-schema",
        "sentence-model",
        "hub-search",
        "hub-core",
        "hub-server",
        "ofc-net",
        "ofc-pkg",
        "runtime",
        "test-kit",
    ] {
        let src = root().join(krate).join("src");
        for f in sources(&src) {
            let text = std::fs::read_to_string(&f).unwrap();
            let n = text.lines().count();
            let rel = f.strip_prefix(root()).unwrap().display().to_string();
            if n > 1000 {
                bad.push(format!("{rel}: {n} lines (at most 1,000)"));
            }
            let is_main = f.file_name().is_some_and(|x| x == "main.rs");
            if is_main && n >= 200 {
                bad.push(format!("{rel}: {n} lines (a binary's main.rs: under 200)"));
            }
            if matches!(krate, "hub-core" | "hub-server")
                && names_ident(TokenStream::from_str(&text).unwrap(), "macro_rules")
            {
                bad.push(format!("{rel}: defines a macro (macro_rules!)"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
