//! Fields a `server.json` has that its schema does not define. The schema allows them (the
//! registry accepts such a document, and so does ofc); ofc keeps the document's fields in the
//! manifest's origin as written but acts on none of these, so each is named in a warning.
//!
//! The field names are those [`super::ServerJson::from_json`] checks, object by object; a field
//! of another kind of object (a `stdio` transport's `url`, a positional argument's `name`) is
//! named too.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::entry_fields::warn_unknown;

const SERVER: &[&str] = &[
    "$schema",
    "name",
    "description",
    "version",
    "title",
    "websiteUrl",
    "repository",
    "icons",
    "packages",
    "remotes",
    "_meta",
];
const REPOSITORY: &[&str] = &["url", "source", "id", "subfolder"];
const ICON: &[&str] = &["src", "mimeType", "sizes", "theme"];
const PACKAGE: &[&str] = &[
    "registryType",
    "identifier",
    "version",
    "registryBaseUrl",
    "fileSha256",
    "runtimeHint",
    "transport",
    "runtimeArguments",
    "packageArguments",
    "environmentVariables",
];
const STDIO: &[&str] = &["type"];
const HTTP_TRANSPORT: &[&str] = &["type", "url", "headers"];
const REMOTE: &[&str] = &["type", "url", "headers", "variables"];
/// An input's fields, and what a key-value input and each kind of argument add to them.
const INPUT: &[&str] = &[
    "description",
    "value",
    "default",
    "placeholder",
    "isRequired",
    "isSecret",
    "format",
    "choices",
];
const KEY_VALUE: &[&str] = &["variables", "name"];
const POSITIONAL: &[&str] = &["variables", "type", "isRepeated", "valueHint"];
const NAMED: &[&str] = &["variables", "type", "isRepeated", "valueHint", "name"];

fn objects<'a>(
    m: &'a Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = (usize, &'a Map<String, Value>)> {
    m.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, x)| x.as_object().map(|o| (i, o)))
}

fn input(m: &Map<String, Value>, extra: &[&str], what: &str, p: &FieldPath, w: &mut Diagnostics) {
    let known: Vec<&str> = INPUT.iter().chain(extra).copied().collect();
    warn_unknown(m, &known, what, p, w);
    if let Some(Value::Object(vars)) = m.get("variables") {
        for (name, v) in vars {
            if let Value::Object(v) = v {
                let vp = p.key("variables").key(name.clone());
                warn_unknown(v, INPUT, "a server.json input", &vp, w);
            }
        }
    }
}

fn transport(m: &Map<String, Value>, known_http: &[&str], p: &FieldPath, w: &mut Diagnostics) {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let known = if kind == "stdio" { STDIO } else { known_http };
    warn_unknown(m, known, &format!("a `{kind}` transport"), p, w);
    for (i, h) in objects(m, "headers") {
        let hp = p.key("headers").index(i);
        input(h, KEY_VALUE, "a server.json header", &hp, w);
    }
    if let Some(Value::Object(vars)) = m.get("variables") {
        for (name, v) in vars {
            if let Value::Object(v) = v {
                let vp = p.key("variables").key(name.clone());
                warn_unknown(v, INPUT, "a server.json input", &vp, w);
            }
        }
    }
}

/// One warning per field of `server` (at `base`) that the server.json schema does not define.
pub(super) fn warnings(server: &Map<String, Value>, base: &FieldPath) -> Diagnostics {
    let mut w = Diagnostics::default();
    warn_unknown(server, SERVER, "a server.json", base, &mut w);
    if let Some(Value::Object(r)) = server.get("repository") {
        let p = base.key("repository");
        warn_unknown(r, REPOSITORY, "a server.json `repository`", &p, &mut w);
    }
    for (i, icon) in objects(server, "icons") {
        let p = base.key("icons").index(i);
        warn_unknown(icon, ICON, "a server.json icon", &p, &mut w);
    }
    for (i, pkg) in objects(server, "packages") {
        let p = base.key("packages").index(i);
        warn_unknown(pkg, PACKAGE, "a server.json package", &p, &mut w);
        if let Some(Value::Object(t)) = pkg.get("transport") {
            transport(t, HTTP_TRANSPORT, &p.key("transport"), &mut w);
        }
        for list in ["runtimeArguments", "packageArguments"] {
            for (k, arg) in objects(pkg, list) {
                let named = arg.get("type").and_then(Value::as_str) == Some("named");
                let (known, what) = if named {
                    (NAMED, "a named argument")
                } else {
                    (POSITIONAL, "a positional argument")
                };
                input(arg, known, what, &p.key(list).index(k), &mut w);
            }
        }
        for (k, env) in objects(pkg, "environmentVariables") {
            let ep = p.key("environmentVariables").index(k);
            input(
                env,
                KEY_VALUE,
                "a server.json environment variable",
                &ep,
                &mut w,
            );
        }
    }
    for (i, remote) in objects(server, "remotes") {
        transport(remote, REMOTE, &base.key("remotes").index(i), &mut w);
    }
    w
}

impl super::ServerJson {
    /// One warning per field the document has that the server.json schema does not define (the
    /// schema allows them, and so does ofc; the manifest's origin keeps them as written, but
    /// nothing acts on them), with its line.
    pub fn warnings(&self) -> Diagnostics {
        self.doc.locate(warnings(&self.value, &self.base))
    }
}
