//! The OpenAPI document is snapshot-tested: an API change shows up as a reviewed diff.

use utoipa::OpenApi as _;

#[test]
fn openapi_document_snapshot() {
    let doc = hub_server::api::openapi::ApiDoc::openapi();
    let json: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    // Every route the router serves is documented.
    let paths = json["paths"].as_object().unwrap();
    for p in [
        "/api/v1/agents/{publisher}/{agent}/versions/{version}",
        "/api/v1/login",
        "/api/v1/me",
        "/registry/agents",
        "/registry/agents/{agent_id}",
        "/openapi.json",
        "/api/v1/log",
        "/api/v1/log/publishers/{publisher}",
        // The C2SP formats served outside /api/v1.
        "/log/checkpoint",
        "/log/tile/{tile}",
        // The discovery documents.
        "/.well-known/ai-catalog.json",
        "/.well-known/jwks.json",
        "/api/v1/ard/search",
    ] {
        assert!(paths.contains_key(p), "{p} missing");
    }
    insta::assert_json_snapshot!("openapi", json);
}

#[tokio::test]
async fn served_document_is_the_same() {
    let app = ofc_test_kit::TestHub::in_process(ofc_test_kit::Backend::Sqlite).await;
    let (s, served) = app
        .call(reqwest::Method::GET, "/openapi.json", None, None)
        .await;
    assert_eq!(s, 200);
    let doc = hub_server::api::openapi::ApiDoc::openapi();
    let expected: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    assert_eq!(served, expected);
    app.stop().await;
}

/// The routers merged into the hub (`hub_server::app`), and whether the OpenAPI document
/// covers them: the JSON API and the log do; `/v2/` follows the OCI distribution spec and the
/// web pages are HTML.
const ROUTERS: &[(&str, Option<&str>)] = &[
    ("oci", None),
    ("web", None),
    ("api", Some("src/api/mod.rs")),
    ("tlog", Some("src/tlog.rs")),
];

fn source(path: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `pub const NAME: &str = "value";` of a source file, by name.
fn str_consts(text: &str, prefix: &str, into: &mut std::collections::HashMap<String, String>) {
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("pub const ") else {
            continue;
        };
        let Some((name, value)) = rest.split_once(": &str = \"") else {
            continue;
        };
        let value = value.strip_suffix("\";").unwrap();
        into.insert(format!("{prefix}{name}"), value.to_owned());
    }
}

/// The text of the call whose `(` is at `open`, without its parentheses.
fn call_args(text: &str, open: usize) -> &str {
    let mut depth = 0;
    let mut in_str = false;
    for (i, c) in text[open..].char_indices() {
        match c {
            '"' => in_str = !in_str,
            '(' if !in_str => depth += 1,
            ')' if !in_str => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced call at {open}");
}

/// `args` split at its top-level commas.
fn split_args(args: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start, mut in_str) = (Vec::new(), 0, 0, false);
    for (i, c) in args.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '(' | '[' | '{' if !in_str => depth += 1,
            ')' | ']' | '}' if !in_str => depth -= 1,
            ',' if depth == 0 && !in_str => {
                out.push(args[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(args[start..].trim());
    out.retain(|a| !a.is_empty());
    out
}

/// The value of a route's path expression: a literal, a constant, or `&format!` of those.
fn path_value(expr: &str, consts: &std::collections::HashMap<String, String>) -> String {
    let expr = expr.trim().trim_start_matches('&');
    if let Some(lit) = expr.strip_prefix('"') {
        return lit.strip_suffix('"').unwrap().to_owned();
    }
    if let Some(rest) = expr.strip_prefix("format!") {
        let args = call_args(rest, 0);
        let parts = split_args(args);
        assert!(
            parts[0]
                .trim_matches('"')
                .chars()
                .all(|c| c == '{' || c == '}'),
            "format of plain parts only: {expr}"
        );
        return parts[1..].iter().map(|p| path_value(p, consts)).collect();
    }
    consts
        .get(expr)
        .unwrap_or_else(|| panic!("the route path `{expr}` is not a known constant"))
        .clone()
}

/// Every (path, method) the documented routers serve, read from their sources: each
/// `.route(path, get(..).post(..))`, the JSON API's nested under `route::API`.
fn router_routes() -> std::collections::BTreeSet<(String, String)> {
    let mut consts = std::collections::HashMap::new();
    str_consts(
        &source("../index-schema/src/hub_api/mod.rs"),
        "route::",
        &mut consts,
    );
    str_consts(
        &source("../hub-core/src/discovery.rs"),
        "hub_core::discovery::",
        &mut consts,
    );
    let api_prefix = consts["route::API"].clone();
    let mut routes = std::collections::BTreeSet::new();
    for (_, file) in ROUTERS {
        let Some(file) = file else { continue };
        let text = source(file);
        // The JSON API's routes are those of `let api = Router::new()...;`, nested under API.
        let nested = text.find("let api = Router::new()").map(|start| {
            assert!(text.contains(".nest(route::API, api)"), "{file}");
            (start, start + text[start..].find(";\n").unwrap())
        });
        let mut at = 0;
        while let Some(i) = text[at..].find(".route(") {
            let open = at + i + ".route".len();
            let args = split_args(call_args(&text, open));
            assert_eq!(args.len(), 2, "{file}: {args:?}");
            let mut path = path_value(args[0], &consts);
            if nested.is_some_and(|(s, e)| (s..e).contains(&open)) {
                path = format!("{api_prefix}{path}");
            }
            // axum's `{*rest}` is OpenAPI's `{rest}`.
            let path = path.replace("{*", "{");
            let methods = args[1];
            let mut found = false;
            for m in ["get", "post", "put", "delete", "patch"] {
                let call = format!("{m}(");
                let mut from = 0;
                while let Some(j) = methods[from..].find(&call) {
                    let before = methods[..from + j].chars().last();
                    if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':')) {
                        routes.insert((path.clone(), m.to_owned()));
                        found = true;
                    }
                    from += j + call.len();
                }
            }
            assert!(found, "{file}: no method in `{methods}`");
            at = open;
        }
    }
    routes
}

/// A route the router serves and the OpenAPI document lacks fails here, and so does a
/// documented one the router does not serve.
#[test]
fn every_route_is_documented_and_every_documented_route_served() {
    let app = source("src/lib.rs");
    let app = &app[app.find("pub fn app(").unwrap()..];
    let app = &app[..app.find("\n}\n").unwrap()];
    let parts: Vec<&str> = app.split("::router(").collect();
    // Each part but the last ends with a router's module name.
    let mut merged: Vec<&str> = parts[..parts.len() - 1]
        .iter()
        .map(|s| s.rsplit(['(', '.', ' ', '\n']).next().unwrap())
        .collect();
    let mut known: Vec<&str> = ROUTERS.iter().map(|r| r.0).collect();
    merged.sort_unstable();
    known.sort_unstable();
    assert_eq!(
        merged, known,
        "the routers merged into hub_server::app changed: add the new one to ROUTERS"
    );

    let served = router_routes();
    for want in [
        ("/readyz", "get"),
        ("/api/v1/ard/search", "post"),
        ("/.well-known/ai-catalog.json", "get"),
        ("/.well-known/jwks.json", "get"),
        ("/api/v1/agents/{publisher}/{agent}/agent-card.json", "get"),
        (
            "/api/v1/agents/{publisher}/{agent}/versions/{version}",
            "delete",
        ),
        ("/log/tile/{tile}", "get"),
        ("/api/v1/log", "get"),
    ] {
        assert!(
            served.contains(&(want.0.to_owned(), want.1.to_owned())),
            "the source reading missed {want:?}: {served:?}"
        );
    }
    let doc = hub_server::api::openapi::ApiDoc::openapi();
    let doc: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    let mut documented = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((path.clone(), method.clone()));
        }
    }
    // Operation ids are unique (OpenAPI requires it; code generators name functions by them).
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    for w in ids.windows(2) {
        assert_ne!(w[0], w[1], "two operations have the id `{}`", w[0]);
    }
    let undocumented: Vec<_> = served.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "served, not in the OpenAPI document: {undocumented:?}"
    );
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        unserved.is_empty(),
        "in the OpenAPI document, not served: {unserved:?}"
    );
}
