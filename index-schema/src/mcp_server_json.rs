//! MCP Registry `server.json`: the document an MCP server is published with to the official MCP
//! Registry (schema `https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json`,
//! older dated schemas read the same), and the entries of the registry's list API
//! (`GET /v0/servers`: `{"servers": [{"server": {…}, "_meta": {…}}], "metadata": {…}}`).
//!
//! [`ServerJson::from_json`] checks a document as that schema does (required fields, value types,
//! lengths and patterns, the package, transport, argument and input objects) and reports every
//! problem under its field path with a line. [`ServerJson::to_manifest`] turns one into an agent
//! manifest whose source is the first package ofc can run — `npm` → `npm`, `pypi` → `pip`, `oci`
//! pinned by digest → `docker` — else the first remote (`remote`). What the manifest holds
//! nowhere else (transports, arguments, environment variables, other packages and remotes, the
//! server's registry name, `_meta`) stays in [`Origin::fields`]; values of secret inputs are not
//! copied. [`ListResponse::from_json`] reads a dump of the list API and checks each entry on its
//! own, so one broken entry does not hide the others.
//!
//! Rules the schema leaves open and ofc decides: a version range (`^1`, `~1.2`, `>=1`, `1.x`,
//! `*`, `latest`) is refused where the registry refuses it; unknown fields are allowed (the
//! schema allows them) and named by [`ServerJson::warnings`]; `registryType` may be any
//! non-empty string (the schema lists examples), only conversion needs one ofc runs.
//!
//! Conversion, package by package: `npm` → `npm` (bin: the package name without its scope, as
//! `npx` runs it); `pypi` → `pip` (entry point: the package name, as `uvx` runs it; a
//! `fileSha256` becomes the signed pin); `oci` → `docker` only when pinned by digest and reached
//! over HTTP on an explicit port (a stdio container has no port); `nuget` and `mcpb` are passed
//! over. None usable is an error under each candidate's field (`packages` when there are none).
//! Decision: an MCP server is not an OFC agent, so `ofc pull` installs its package, but running it
//! as a floor agent needs it to speak OFC; the manifest records what it is and where it comes
//! from. There is no reference implementation to run, so the corpus is judged against the schema:
//! `index-schema/tests/fixtures/mcp-server-json/valid/` and
//! `tests/fixtures/invalid/mcp-server-json/` (each file with the field it must name).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::agent_yaml::ManifestDefaults;
use crate::diagnostic::{Diagnostics, FieldPath};
use crate::manifest::{
    self, Activation, DockerSource, Manifest, NpmSource, Origin, PipSource, RemoteSource, Source,
    parse_exact_version,
};
use crate::name::Digest;
use crate::source::{self, SourceDoc};

mod unknown;
#[cfg(test)]
mod unknown_tests;

/// The file name of a `server.json`.
pub const FILE_NAME: &str = "server.json";

/// The start of the `$schema` URL of every published server.json schema.
pub const SCHEMA_PREFIX: &str = "https://static.modelcontextprotocol.io/schemas/";

/// The transport types a package may use.
const PACKAGE_TRANSPORTS: [&str; 3] = ["stdio", "streamable-http", "sse"];
/// The transport types a remote may use.
const REMOTE_TRANSPORTS: [&str; 2] = ["streamable-http", "sse"];

/// A checked `server.json`: the JSON as written, plus where each field is.
#[derive(Debug, Clone)]
pub struct ServerJson {
    /// The document as JSON.
    pub value: Map<String, Value>,
    /// The document it was read from (a list dump holds many).
    doc: Arc<SourceDoc>,
    /// Where this server is in that document (the root for a lone `server.json`).
    base: FieldPath,
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

type Check = fn(&Map<String, Value>, &FieldPath, &mut Diagnostics);

/// What a value must be.
#[derive(Clone, Copy)]
enum Want {
    /// A string of `min..=max` characters.
    Str(usize, usize),
    Bool,
    /// A list of strings.
    StrList,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An `http://` or `https://` URL.
    Url,
    /// A URL or a URL template starting with a `{variable}`.
    UrlTemplate,
    Object(Check),
    List(Check),
    /// An object whose values are objects checked by the function.
    Map(Check),
    /// Any JSON object.
    AnyObject,
}

const ANY: Want = Want::Str(0, usize::MAX);

fn url_ok(s: &str) -> bool {
    (s.starts_with("https://") || s.starts_with("http://"))
        && s.len() > "http://".len()
        && !s.chars().any(char::is_whitespace)
}

fn template_ok(s: &str) -> bool {
    if url_ok(s) {
        return true;
    }
    // `{name}` first, then anything without white space.
    let Some(rest) = s.strip_prefix('{') else {
        return false;
    };
    let Some((var, tail)) = rest.split_once('}') else {
        return false;
    };
    let mut chars = var.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !tail.chars().any(char::is_whitespace)
}

fn check(v: &Value, want: Want, p: &FieldPath, d: &mut Diagnostics) {
    match (want, v) {
        (Want::Str(min, max), Value::String(s)) => {
            let n = s.chars().count();
            if n < min {
                d.push(
                    p.clone(),
                    if min == 1 {
                        "must not be empty".to_string()
                    } else {
                        format!("must be at least {min} characters long")
                    },
                );
            } else if n > max {
                d.push(
                    p.clone(),
                    format!("is {n} characters long, more than the limit of {max}"),
                );
            }
        }
        (Want::Bool, Value::Bool(_)) | (Want::AnyObject, Value::Object(_)) => {}
        (Want::StrList, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if !item.is_string() {
                    d.push(
                        p.index(i),
                        format!("must be a string, not {}", kind_of(item)),
                    );
                }
            }
        }
        (Want::OneOf(allowed), Value::String(s)) => {
            if !allowed.contains(&s.as_str()) {
                d.push(p.clone(), format!("`{s}` is not one of {}", list(allowed)));
            }
        }
        (Want::Url, Value::String(s)) => {
            if !url_ok(s) {
                d.push(p.clone(), format!("`{s}` is not an http(s) URL"));
            }
        }
        (Want::UrlTemplate, Value::String(s)) => {
            if !template_ok(s) {
                d.push(
                    p.clone(),
                    format!(
                        "`{s}` must start with `http://`, `https://` or a `{{variable}}`, without spaces"
                    ),
                );
            }
        }
        (Want::Object(f), Value::Object(m)) => f(m, p, d),
        (Want::List(f), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Object(m) => f(m, &p.index(i), d),
                    other => d.push(
                        p.index(i),
                        format!("must be an object, not {}", kind_of(other)),
                    ),
                }
            }
        }
        (Want::Map(f), Value::Object(m)) => {
            for (k, item) in m {
                match item {
                    Value::Object(o) => f(o, &p.key(k.clone()), d),
                    other => d.push(
                        p.key(k.clone()),
                        format!("must be an object, not {}", kind_of(other)),
                    ),
                }
            }
        }
        (want, other) => {
            let what = match want {
                Want::Str(..) | Want::OneOf(_) | Want::Url | Want::UrlTemplate => "a string",
                Want::Bool => "true or false",
                Want::StrList => "a list of strings",
                Want::Object(_) | Want::AnyObject => "an object",
                Want::List(_) => "a list of objects",
                Want::Map(_) => "an object of named objects",
            };
            d.push(p.clone(), format!("must be {what}, not {}", kind_of(other)));
        }
    }
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `spec` fields of `m`: `(name, required, want)`.
fn fields(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics, spec: &[(&str, bool, Want)]) {
    for (name, required, want) in spec {
        match m.get(*name) {
            None => {
                if *required {
                    d.push(p.key(*name), "is required");
                }
            }
            Some(v) => check(v, *want, &p.key(*name), d),
        }
    }
}

/// Why `s` is a version range or `latest` (which the registry refuses), if it is one.
fn range_problem(s: &str) -> Option<String> {
    let t = s.trim();
    let range = t == "latest"
        || t.starts_with(['^', '~', '>', '<', '=', '*'])
        || t.contains(['|', ' ', '*', ','])
        || t.split('.').any(|part| part == "x" || part == "X");
    range.then(|| {
        format!("`{s}` is a version range; a specific version such as `1.0.2` is required")
    })
}

fn version_field(m: &Map<String, Value>, key: &str, p: &FieldPath, d: &mut Diagnostics) {
    if let Some(Value::String(s)) = m.get(key)
        && let Some(problem) = range_problem(s)
    {
        d.push(p.key(key), problem);
    }
}

fn server(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("$schema", false, Want::Url),
            ("name", true, Want::Str(3, 200)),
            ("description", true, Want::Str(1, 100)),
            ("version", true, Want::Str(1, 255)),
            ("title", false, Want::Str(1, 100)),
            ("websiteUrl", false, Want::Url),
            ("repository", false, Want::Object(repository)),
            ("icons", false, Want::List(icon)),
            ("packages", false, Want::List(package)),
            ("remotes", false, Want::List(remote)),
            ("_meta", false, Want::AnyObject),
        ],
    );
    if let Some(Value::String(name)) = m.get("name") {
        let ok = name.split_once('/').is_some_and(|(ns, n)| {
            !ns.is_empty()
                && !n.is_empty()
                && ns
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        });
        if !ok && (3..=200).contains(&name.chars().count()) {
            d.push(
                p.key("name"),
                format!(
                    "`{name}` must be `namespace/name` in reverse-DNS form, e.g. `io.github.user/weather` (letters, digits, `.` and `-`, then `/`, then letters, digits, `.`, `_` and `-`)"
                ),
            );
        }
    }
    version_field(m, "version", p, d);
}

fn repository(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("url", true, Want::Url),
            ("source", true, ANY),
            ("id", false, ANY),
            ("subfolder", false, ANY),
        ],
    );
    if let Some(Value::String(s)) = m.get("subfolder")
        && (s.starts_with('/') || s.split('/').any(|c| c == ".."))
    {
        d.push(
            p.key("subfolder"),
            format!("`{s}` must be a clean relative path (no leading `/`, no `..`)"),
        );
    }
}

fn icon(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    const MIME: &[&str] = &[
        "image/png",
        "image/jpeg",
        "image/jpg",
        "image/svg+xml",
        "image/webp",
    ];
    fields(
        m,
        p,
        d,
        &[
            ("src", true, Want::Str(1, 255)),
            ("mimeType", false, Want::OneOf(MIME)),
            ("sizes", false, Want::StrList),
            ("theme", false, Want::OneOf(&["light", "dark"])),
        ],
    );
    if let Some(Value::String(s)) = m.get("src")
        && !s.starts_with("https://")
    {
        d.push(p.key("src"), format!("`{s}` must be an https:// URL"));
    }
    if let Some(Value::Array(sizes)) = m.get("sizes") {
        for (i, s) in sizes.iter().enumerate() {
            if let Some(s) = s.as_str() {
                let ok = s == "any"
                    || s.split_once('x').is_some_and(|(w, h)| {
                        !w.is_empty()
                            && !h.is_empty()
                            && w.chars().all(|c| c.is_ascii_digit())
                            && h.chars().all(|c| c.is_ascii_digit())
                    });
                if !ok {
                    d.push(
                        p.key("sizes").index(i),
                        format!("`{s}` must be `WxH` (e.g. `48x48`) or `any`"),
                    );
                }
            }
        }
    }
}

fn package(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("registryType", true, Want::Str(1, 64)),
            ("identifier", true, Want::Str(1, 2048)),
            ("version", false, Want::Str(1, 255)),
            ("registryBaseUrl", false, Want::Url),
            ("fileSha256", false, ANY),
            ("runtimeHint", false, ANY),
            ("transport", true, Want::Object(package_transport)),
            ("runtimeArguments", false, Want::List(argument)),
            ("packageArguments", false, Want::List(argument)),
            ("environmentVariables", false, Want::List(key_value)),
        ],
    );
    version_field(m, "version", p, d);
    if let Some(Value::String(h)) = m.get("fileSha256")
        && !(h.len() == 64 && h.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')))
    {
        d.push(
            p.key("fileSha256"),
            "must be 64 lowercase hexadecimal characters (a SHA-256)",
        );
    }
    let kind = m.get("registryType").and_then(Value::as_str).unwrap_or("");
    if matches!(kind, "npm" | "pypi" | "nuget") && !m.contains_key("version") {
        d.push(
            p.key("version"),
            format!("is required for `{kind}` packages"),
        );
    }
    if kind == "mcpb" && !m.contains_key("fileSha256") {
        d.push(p.key("fileSha256"), "is required for `mcpb` packages");
    }
}

fn package_transport(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    transport(m, p, d, &PACKAGE_TRANSPORTS);
}

fn transport(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics, types: &'static [&str]) {
    fields(m, p, d, &[("type", true, Want::OneOf(types))]);
    let kind = m.get("type").and_then(Value::as_str);
    if kind.is_some_and(|t| t != "stdio" && types.contains(&t)) {
        fields(
            m,
            p,
            d,
            &[
                ("url", true, Want::UrlTemplate),
                ("headers", false, Want::List(key_value)),
            ],
        );
    }
}

fn remote(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    transport(m, p, d, &REMOTE_TRANSPORTS);
    fields(m, p, d, &[("variables", false, Want::Map(input))]);
}

fn input(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("description", false, ANY),
            ("value", false, ANY),
            ("default", false, ANY),
            ("placeholder", false, ANY),
            ("isRequired", false, Want::Bool),
            ("isSecret", false, Want::Bool),
            (
                "format",
                false,
                Want::OneOf(&["string", "number", "boolean", "filepath"]),
            ),
            ("choices", false, Want::StrList),
        ],
    );
}

fn input_with_variables(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    input(m, p, d);
    fields(m, p, d, &[("variables", false, Want::Map(input))]);
}

fn key_value(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    input_with_variables(m, p, d);
    fields(m, p, d, &[("name", true, Want::Str(1, usize::MAX))]);
}

fn argument(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    input_with_variables(m, p, d);
    fields(
        m,
        p,
        d,
        &[
            ("type", true, Want::OneOf(&["positional", "named"])),
            ("isRepeated", false, Want::Bool),
            ("valueHint", false, ANY),
        ],
    );
    match m.get("type").and_then(Value::as_str) {
        Some("named") => fields(m, p, d, &[("name", true, Want::Str(1, usize::MAX))]),
        Some("positional") if !m.contains_key("valueHint") && !m.contains_key("value") => d.push(
            p.key("valueHint"),
            "a positional argument needs a `valueHint` or a `value`",
        ),
        _ => {}
    }
}

/// Sorts located diagnostics by position (those without one last).
fn sorted(mut d: Diagnostics) -> Diagnostics {
    d.0.sort_by_key(|d| d.position.map_or((u32::MAX, u32::MAX), |p| (p.line, p.col)));
    d
}

impl ServerJson {
    /// Parses and checks a `server.json`.
    pub fn from_json(text: &str) -> Result<ServerJson, Diagnostics> {
        let doc = Arc::new(source::parse_json(text)?);
        Self::at(&doc, FieldPath::root())
    }

    /// Checks the server at `base` in `doc`.
    fn at(doc: &Arc<SourceDoc>, base: FieldPath) -> Result<ServerJson, Diagnostics> {
        let v = lookup(&doc.value, &base).unwrap_or(&Value::Null);
        let Value::Object(m) = v else {
            return Err(doc.locate(Diagnostics::one(
                base,
                format!("a server.json must be a JSON object, not {}", kind_of(v)),
            )));
        };
        let mut d = Diagnostics::default();
        server(m, &base, &mut d);
        if !d.is_empty() {
            return Err(sorted(doc.locate(d)));
        }
        Ok(ServerJson {
            value: m.clone(),
            doc: Arc::clone(doc),
            base,
        })
    }

    fn str(&self, field: &str) -> &str {
        self.value.get(field).and_then(Value::as_str).unwrap_or("")
    }

    /// The server's registry name (`io.github.user/weather`).
    pub fn name(&self) -> &str {
        self.str("name")
    }

    /// The server's version as written.
    pub fn version(&self) -> &str {
        self.str("version")
    }

    fn path(&self) -> &FieldPath {
        &self.base
    }

    /// The agent manifest for this server. `defaults` gives the hub name (or the publisher,
    /// combined with the part of the server's name after `/` made into a slug); the document
    /// gives the display name (`title`, else that part of the name), the description (and the
    /// tagline, its first line), the version (an exact semver version), the home page
    /// (`websiteUrl`), the repository (`repository.url`) and the source (see the module
    /// documentation). `document` is where the original is (a file name or URL), kept in
    /// [`Manifest::origin`] with the fields the manifest holds nowhere else. Every problem is
    /// reported under the field of the original it comes from, with its line.
    pub fn to_manifest(
        &self,
        defaults: ManifestDefaults,
        document: &str,
    ) -> Result<Manifest, Diagnostics> {
        let root = self.path().clone();
        let mut d = Diagnostics::default();
        let short = self.name().rsplit('/').next().unwrap_or("");
        let slug = slug(short);
        let (name, id, version) = defaults.identity(
            "a server.json",
            &slug,
            self.version(),
            &root.key("name"),
            &root.key("version"),
            &mut d,
        );
        let (source, source_field) = match self.source(&root) {
            Ok(s) => (Some(s.0), s.1),
            Err(e) => {
                d.extend(e);
                (None, root.clone())
            }
        };
        let description = defaults
            .description
            .clone()
            .unwrap_or_else(|| self.str("description").trim().to_string());
        let tagline = defaults.tagline.clone().unwrap_or_else(|| {
            description
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .chars()
                .take(manifest::MAX_TAGLINE_CHARS)
                .collect()
        });
        let title = self.str("title").trim();
        let display_name = defaults.display_name.clone().unwrap_or_else(|| {
            if title.is_empty() {
                short.to_string()
            } else {
                title.to_string()
            }
        });
        let repository_url = self
            .value
            .get("repository")
            .and_then(|r| r.get("url"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let (Some(name), Some(id), Some(version), Some(source)) = (name, id, version, source)
        else {
            return Err(sorted(self.doc.locate(d)));
        };
        let m = Manifest {
            schema_version: manifest::SCHEMA_VERSION,
            name,
            version,
            id,
            display_name,
            tagline,
            description,
            readme: defaults.readme,
            license: defaults.license,
            homepage: defaults.homepage.or_else(|| {
                self.value
                    .get("websiteUrl")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }),
            repository: defaults.repository.or(repository_url),
            keywords: defaults.keywords,
            examples: Vec::new(),
            activation: Activation::default(),
            capabilities: Vec::new(),
            provides_mcp: None,
            requires: None,
            pricing: None,
            source,
            origin: Some(Origin {
                format: Origin::MCP_SERVER_JSON.to_string(),
                document: document.to_string(),
                fields: self.kept_fields(),
            }),
        };
        for mut x in m.validate().0 {
            x.path = self.original_path(&x.path, &source_field);
            if !d.iter().any(|y| y.path == x.path) {
                d.0.push(x);
            }
        }
        if d.is_empty() {
            Ok(m)
        } else {
            Err(sorted(self.doc.locate(d)))
        }
    }

    /// The source: the first package ofc runs, else the first remote; with the field it came
    /// from. When none can be used, why not for each, under its field.
    fn source(&self, root: &FieldPath) -> Result<(Source, FieldPath), Diagnostics> {
        let mut why = Diagnostics::default();
        let packages = self.value.get("packages").and_then(Value::as_array);
        let remotes = self.value.get("remotes").and_then(Value::as_array);
        for (i, p) in packages.into_iter().flatten().enumerate() {
            let at = root.key("packages").index(i);
            match package_source(p, &at) {
                Ok(s) => return Ok((s, at)),
                Err(e) => why.extend(e),
            }
        }
        for (i, r) in remotes.into_iter().flatten().enumerate() {
            let at = root.key("remotes").index(i);
            match remote_source(r, &at) {
                Ok(s) => return Ok((s, at)),
                Err(e) => why.extend(e),
            }
        }
        if why.is_empty() {
            why.push(
                root.key("packages"),
                "has no package or remote ofc can run: add an npm, pypi or oci package, or a remote",
            );
        }
        Err(why)
    }

    /// The fields the manifest holds nowhere else; values of secret inputs are dropped.
    fn kept_fields(&self) -> Map<String, Value> {
        let mut kept: Map<String, Value> = self
            .value
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "description" | "version" | "title" | "websiteUrl"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(Value::Object(r)) = kept.get_mut("repository") {
            r.remove("url");
            if r.is_empty() {
                kept.remove("repository");
            }
        }
        for key in ["packages", "remotes"] {
            if let Some(v) = kept.get_mut(key) {
                drop_secret_values(v);
            }
        }
        kept
    }

    /// The field of the original that a manifest field comes from.
    fn original_path(&self, p: &FieldPath, source_field: &FieldPath) -> FieldPath {
        let root = self.path();
        let s = p.to_string();
        let top = s.split(['.', '[']).next().unwrap_or("");
        match top {
            "displayName" => root.key(if self.value.contains_key("title") {
                "title"
            } else {
                "name"
            }),
            "id" | "name" => root.key("name"),
            "tagline" | "description" => root.key("description"),
            "version" => root.key("version"),
            "homepage" => root.key("websiteUrl"),
            "repository" => root.key("repository").key("url"),
            "source" => {
                let field = s.rsplit('.').next().unwrap_or("");
                match field {
                    "endpoint" => source_field.key("url"),
                    "version" => source_field.key("version"),
                    "index" | "registry" => source_field.key("registryBaseUrl"),
                    "sha256" => source_field.key("fileSha256"),
                    "port" => source_field.key("transport").key("url"),
                    _ => source_field.key("identifier"),
                }
            }
            _ => p.clone(),
        }
    }
}

/// Removes `value` and `default` from every object that says `isSecret: true`.
fn drop_secret_values(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("isSecret") == Some(&Value::Bool(true)) {
                m.remove("value");
                m.remove("default");
            }
            for (_, child) in m.iter_mut() {
                drop_secret_values(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_secret_values),
        _ => {}
    }
}

fn package_source(p: &Value, at: &FieldPath) -> Result<Source, Diagnostics> {
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    let identifier = s("identifier");
    let base_url = p
        .get("registryBaseUrl")
        .and_then(Value::as_str)
        .map(|u| u.trim_end_matches('/').to_string());
    match s("registryType") {
        "npm" => {
            let version = parse_exact_version(s("version"))
                .map_err(|e| Diagnostics::one(at.key("version"), e))?;
            // `npx <package>` runs the bin named like the package without its scope.
            let bin = identifier.rsplit('/').next().unwrap_or(identifier);
            Ok(Source::Npm(NpmSource {
                package: identifier.to_string(),
                version,
                registry: base_url.filter(|u| u != "https://registry.npmjs.org"),
                bin: bin.to_string(),
                integrity: None,
            }))
        }
        "pypi" => {
            let sha256 = match p.get("fileSha256").and_then(Value::as_str) {
                Some(h) => Some(
                    Digest::parse(&format!("sha256:{h}"))
                        .map_err(|e| Diagnostics::one(at.key("fileSha256"), e.to_string()))?,
                ),
                None => None,
            };
            // `uvx <package>` runs the console script named like the package.
            Ok(Source::Pip(PipSource {
                package: identifier.to_string(),
                version: s("version").to_string(),
                index: base_url.filter(|u| u != "https://pypi.org"),
                entry_point: identifier.to_string(),
                sha256,
            }))
        }
        "oci" => {
            if !identifier.contains("@sha256:") {
                return Err(Diagnostics::one(
                    at.key("identifier"),
                    format!(
                        "`{identifier}` is not pinned by digest; ofc runs images by digest only (`image@sha256:…`)"
                    ),
                ));
            }
            let transport = p.get("transport");
            let kind = transport
                .and_then(|t| t.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let url = transport
                .and_then(|t| t.get("url"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let port = url_port(url).ok_or_else(|| {
                let why = if kind == "stdio" {
                    "a `stdio` container gives ofc no port to reach it; ofc runs images that serve HTTP on a port".to_string()
                } else {
                    format!("`{url}` names no port; ofc runs images that serve HTTP on a port it knows")
                };
                Diagnostics::one(at.key("transport"), why)
            })?;
            Ok(Source::Docker(DockerSource {
                image: identifier.to_string(),
                port,
            }))
        }
        other => Err(Diagnostics::one(
            at.key("registryType"),
            format!("ofc cannot run `{other}` packages (it runs npm, pypi and oci)"),
        )),
    }
}

/// The explicit port of an `http(s)://host:port/…` URL.
fn url_port(url: &str) -> Option<u16> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (_, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok().filter(|p| *p > 0)
}

fn remote_source(r: &Value, at: &FieldPath) -> Result<Source, Diagnostics> {
    let url = r.get("url").and_then(Value::as_str).unwrap_or("");
    if url.contains('{') {
        return Err(Diagnostics::one(
            at.key("url"),
            format!("`{url}` is a template whose values ofc cannot choose"),
        ));
    }
    Ok(Source::Remote(RemoteSource {
        endpoint: url.trim_end_matches('/').to_string(),
    }))
}

/// The value at `path` in `v`.
fn lookup<'a>(v: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    use crate::diagnostic::Segment;
    path.segments().iter().try_fold(v, |v, s| match s {
        Segment::Key(k) => v.get(k.as_str()),
        Segment::Index(i) => v.get(*i),
    })
}

/// A hub agent name part from a server name: lowercase, runs of other characters as `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').chars().take(64).collect()
}

/// One entry of a list-API dump.
#[derive(Debug)]
pub struct ListEntry {
    /// Its index in `servers`.
    pub index: usize,
    /// The server's name, when it has a string one.
    pub name: Option<String>,
    /// The registry's status of the entry (`active`, `deprecated`, `deleted`), when given in
    /// `_meta."io.modelcontextprotocol.registry/official".status`.
    pub status: Option<String>,
    /// The checked server, or every problem with it (paths under `servers[i].server`).
    pub server: Result<ServerJson, Diagnostics>,
}

/// A dump of the MCP Registry's list API (`GET /v0/servers`, one page or several merged).
#[derive(Debug)]
pub struct ListResponse {
    /// Every entry, in order.
    pub entries: Vec<ListEntry>,
}

/// The `_meta` key under which the official registry says how it holds an entry.
pub const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";

impl ListResponse {
    /// Reads a dump: the document must be an object with a `servers` list; each entry must be an
    /// object with a `server` object, checked on its own.
    pub fn from_json(text: &str) -> Result<ListResponse, Diagnostics> {
        let doc = Arc::new(source::parse_json(text)?);
        let root = FieldPath::root();
        let servers = match doc.value.get("servers") {
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(doc.locate(Diagnostics::one(
                    root.key("servers"),
                    format!("must be a list of entries, not {}", kind_of(other)),
                )));
            }
            None => {
                return Err(doc.locate(Diagnostics::one(
                    root.key("servers"),
                    "is required: a dump of `GET /v0/servers` is `{\"servers\": [{\"server\": {…}}, …]}`",
                )));
            }
        };
        let entries = servers
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let at = root.key("servers").index(i);
                let name = e
                    .get("server")
                    .and_then(|s| s.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let status = e
                    .get("_meta")
                    .and_then(|m| m.get(OFFICIAL_META))
                    .and_then(|o| o.get("status"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let server = if e.get("server").is_some() {
                    ServerJson::at(&doc, at.key("server"))
                } else {
                    Err(doc.locate(Diagnostics::one(
                        at.key("server"),
                        "is required: each entry holds its server.json under `server`",
                    )))
                };
                ListEntry {
                    index: i,
                    name,
                    status,
                    server,
                }
            })
            .collect();
        Ok(ListResponse { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_ports() {
        assert_eq!(slug("Weather.API"), "weather-api");
        assert_eq!(slug("server_fs"), "server_fs");
        assert_eq!(url_port("http://localhost:8080/mcp"), Some(8080));
        assert_eq!(url_port("https://example.com/mcp"), None);
        assert!(template_ok("{base}/mcp"));
        assert!(!template_ok("ftp://x"));
        assert!(range_problem("^1.2.0").is_some());
        assert!(range_problem("1.x").is_some());
        assert!(range_problem("latest").is_some());
        assert!(range_problem("1.2.0-beta.1").is_none());
    }
}
