//! The checks of a manifest's fields: text, counts, names, licenses, pricing, URLs, JSON
//! Schemas and sources. [`Manifest::validate`](super::Manifest) calls them; each reports into
//! the [`Diagnostics`] at the field's path.

use std::collections::HashMap;

use semver::Version;
use serde_json::Value;

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::http_url;
use crate::media_types::AGENT_BUNDLE_V1;
use crate::name::{self, Digest, NameError, shown};
use crate::source;

use super::{
    MAX_IMAGE_CHARS, MAX_KEYWORD_CHARS, MAX_KEYWORDS, MAX_LICENSE_CHARS, MAX_LIST_ITEMS,
    MAX_PACKAGE_CHARS, MAX_PATH_CHARS, MAX_PRICE, MAX_SCHEMA_BYTES, MAX_TOOL_NAME_CHARS,
    MAX_URL_CHARS, MAX_VERSION_CHARS, Pricing, Source,
};

pub(super) fn check_manifest_version(d: &mut Diagnostics, path: &FieldPath, v: &Version) {
    if !v.build.is_empty() {
        d.push(
            path.clone(),
            format!(
                "version `{v}` has build metadata (`+{}`); versions are OCI tags, which cannot contain `+`",
                v.build
            ),
        );
    }
    let len = v.to_string().len();
    if len > MAX_VERSION_CHARS {
        d.push(
            path.clone(),
            format!("version is {len} characters long, more than the OCI tag limit of {MAX_VERSION_CHARS}"),
        );
    }
}

/// Unicode bidirectional embeddings, overrides and isolates: they reorder displayed text.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

pub(super) fn char_problem(c: char, multi_line: bool) -> Option<String> {
    if multi_line && matches!(c, '\n' | '\r' | '\t') {
        return None;
    }
    if c.is_control() {
        let what = if multi_line {
            "a control character"
        } else {
            "a control character (this field is a single line)"
        };
        return Some(format!("contains {what}: U+{:04X}", u32::from(c)));
    }
    if is_bidi_control(c) {
        return Some(format!(
            "contains a bidirectional override U+{:04X}, which can disguise text",
            u32::from(c)
        ));
    }
    None
}

pub(super) fn check_chars(
    d: &mut Diagnostics,
    path: &FieldPath,
    s: &str,
    max: usize,
    required: bool,
    multi: bool,
) {
    if required && s.trim().is_empty() {
        d.push(path.clone(), "must not be empty");
        return;
    }
    let len = s.chars().count();
    if len > max {
        d.push(
            path.clone(),
            format!("is {len} characters long, more than the limit of {max}"),
        );
        return;
    }
    if let Some(problem) = s.chars().find_map(|c| char_problem(c, multi)) {
        d.push(path.clone(), problem);
    }
}

/// A single-line text field: at most `max` characters, no control characters.
pub(super) fn check_line(
    d: &mut Diagnostics,
    path: &FieldPath,
    s: &str,
    max: usize,
    required: bool,
) {
    check_chars(d, path, s, max, required, false);
}

/// A multi-line text field: at most `max` characters; newlines and tabs allowed.
pub(super) fn check_text(
    d: &mut Diagnostics,
    path: &FieldPath,
    s: &str,
    max: usize,
    required: bool,
) {
    check_chars(d, path, s, max, required, true);
}

/// Reports a list longer than `max`; returns true when the count is fine.
pub(super) fn check_count(d: &mut Diagnostics, path: &FieldPath, len: usize, max: usize) -> bool {
    if len > max {
        d.push(
            path.clone(),
            format!("has {len} entries, more than the limit of {max}"),
        );
        return false;
    }
    true
}

pub(super) fn check_keywords(d: &mut Diagnostics, path: &FieldPath, keywords: &[String]) {
    if !check_count(d, path, keywords.len(), MAX_KEYWORDS) {
        return;
    }
    let mut seen = HashMap::new();
    for (i, k) in keywords.iter().enumerate() {
        let before = d.0.len();
        check_line(d, &path.index(i), k, MAX_KEYWORD_CHARS, true);
        if d.0.len() == before
            && let Some(first) = seen.insert(k.to_lowercase(), i)
        {
            d.push(
                path.index(i),
                format!("duplicate keyword `{k}` (also at index {first})"),
            );
        }
    }
}

/// A list of tool or workstation names: identifiers, unique.
pub(super) fn check_names(d: &mut Diagnostics, path: &FieldPath, names: &[String], what: &str) {
    if !check_count(d, path, names.len(), MAX_LIST_ITEMS) {
        return;
    }
    let mut seen = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if let Some(problem) = ident_problem(n, MAX_TOOL_NAME_CHARS) {
            d.push(path.index(i), format!("{what} name {problem}"));
        } else if let Some(first) = seen.insert(n.as_str(), i) {
            d.push(
                path.index(i),
                format!("duplicate {what} name `{n}` (also at index {first})"),
            );
        }
    }
}

/// Identifiers: `[A-Za-z0-9_][A-Za-z0-9_.-]*`, at most `max` characters.
pub(super) fn ident_problem(s: &str, max: usize) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    let len = s.chars().count();
    if len > max {
        return Some(format!(
            "`{}` is {len} characters long, more than the limit of {max}",
            shown(s)
        ));
    }
    if !s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return Some(format!(
            "`{}` must start with a letter, a digit or `_`",
            shown(s)
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Some(format!(
            "`{}` contains {c:?}; only letters, digits, `_`, `.` and `-` are allowed",
            shown(s)
        ));
    }
    None
}

pub(super) fn check_license(d: &mut Diagnostics, path: &FieldPath, license: &str) {
    let problem = if license.trim().is_empty() {
        Some("must not be empty".to_string())
    } else if license.chars().count() > MAX_LICENSE_CHARS {
        Some(format!("is longer than {MAX_LICENSE_CHARS} characters"))
    } else {
        license
            .chars()
            .find(|c| {
                !(c.is_ascii_alphanumeric() || matches!(c, ' ' | '.' | '-' | '+' | '(' | ')' | ':'))
            })
            .map(|c| {
                format!(
                    "`{}` contains {c:?}, which is not allowed in an SPDX license expression such as `MIT OR Apache-2.0`",
                    shown(license)
                )
            })
    };
    if let Some(p) = problem {
        d.push(path.clone(), p);
    }
}

pub(super) fn check_pricing(d: &mut Diagnostics, path: &FieldPath, p: &Pricing) {
    if p.per_hour.is_none() && p.per_million_tokens.is_none() {
        d.push(
            path.clone(),
            "gives no price: set `perHour` or `perMillionTokens`",
        );
    }
    for (field, value) in [
        ("perHour", p.per_hour),
        ("perMillionTokens", p.per_million_tokens),
    ] {
        if let Some(v) = value
            && (!v.is_finite() || !(0.0..=MAX_PRICE).contains(&v))
        {
            d.push(
                path.key(field),
                format!("must be a number between 0 and {MAX_PRICE}, got {v}"),
            );
        }
    }
    if p.currency.len() != 3 || !p.currency.bytes().all(|b| b.is_ascii_uppercase()) {
        d.push(
            path.key("currency"),
            format!(
                "`{}` is not an ISO 4217 currency code such as `USD` (three capital letters)",
                shown(&p.currency)
            ),
        );
    }
}

/// Which URLs a field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UrlRule {
    /// `http://` or `https://`, any host (links for people).
    Web,
    /// `https://`, or `http://` for loopback hosts (things the client downloads from).
    Fetch,
    /// Like `Fetch`, without query, fragment or trailing `/` (an API root).
    ApiRoot,
    /// `mcp://`, `https://`, `http://`, `wss://` or `ws://`.
    Mcp,
}

impl UrlRule {
    fn schemes(self) -> &'static [&'static str] {
        match self {
            Self::Web | Self::Fetch | Self::ApiRoot => &["https", "http"],
            Self::Mcp => &["mcp", "https", "http", "wss", "ws"],
        }
    }
}

pub(super) fn check_url(d: &mut Diagnostics, path: &FieldPath, url: &str, rule: UrlRule) {
    if let Some(problem) = url_problem(url, rule) {
        d.push(path.clone(), problem);
    }
}

pub(super) fn url_problem(s: &str, rule: UrlRule) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    if s.len() > MAX_URL_CHARS {
        return Some(format!(
            "URL is {} characters long, more than the limit of {MAX_URL_CHARS}",
            s.len()
        ));
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_graphic()) {
        return Some(if c == ' ' {
            format!("URL `{}` contains a space", shown(s))
        } else {
            format!(
                "URL `{}` contains {}; URLs must be ASCII without spaces (percent-encode other characters)",
                shown(s),
                shown(&c.to_string())
            )
        });
    }
    if s.contains('\\') {
        return Some(format!("URL `{}` contains a backslash", shown(s)));
    }
    let schemes = rule.schemes();
    let list = schemes
        .iter()
        .map(|s| format!("`{s}://`"))
        .collect::<Vec<_>>()
        .join(", ");
    let Some((scheme, rest)) = s.split_once("://") else {
        return Some(format!(
            "`{}` is not an absolute URL; expected one starting with {list}",
            shown(s)
        ));
    };
    if !schemes.contains(&scheme) {
        return Some(format!(
            "URL `{}` has scheme `{}`; expected {list}",
            shown(s),
            shown(scheme)
        ));
    }
    // The structure is the `url` crate's (WHATWG) reading, under the rule every http(s) URL of
    // ofc follows (crate::http_url); the host must also follow the manifest's host grammar
    // (name::check_host), which is stricter than WHATWG's.
    let http = matches!(scheme, "http" | "https");
    let rules = http_url::Rules {
        no_userinfo: true,
        no_query_or_fragment: rule == UrlRule::ApiRoot,
        tls_unless_loopback: matches!(rule, UrlRule::Fetch | UrlRule::ApiRoot),
    };
    let parsed = if http {
        http_url::parse(s, rules)
    } else {
        url::Url::parse(s).map_err(http_url::HttpUrlError::Parse)
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let creds = |u: &url::Url| !u.username().is_empty() || u.password().is_some();
    if authority.contains('@')
        || matches!(parsed, Err(http_url::HttpUrlError::UserInfo))
        || parsed.as_ref().is_ok_and(creds)
    {
        return Some(format!(
            "URL `{}` contains credentials (`user@host`); never put them in a manifest",
            shown(s)
        ));
    }
    if authority.is_empty() || matches!(parsed, Err(http_url::HttpUrlError::NoHost)) {
        return Some(format!("URL `{}` has no host", shown(s)));
    }
    match name::check_host(authority) {
        Ok(_) => {}
        Err(NameError::InvalidHost { problem, .. }) => {
            return Some(format!(
                "URL `{}` has an invalid host: it {problem}",
                shown(s)
            ));
        }
        Err(e) => return Some(format!("URL `{}` has an invalid host: {e}", shown(s))),
    }
    let url = match parsed {
        Ok(u) => u,
        Err(http_url::HttpUrlError::PlainHttp) => {
            return Some(format!(
                "URL `{}` uses `http://` for a host other than localhost; use `https://`",
                shown(s)
            ));
        }
        Err(http_url::HttpUrlError::QueryOrFragment) => {
            return Some(format!(
                "URL `{}` must not have a query or a fragment",
                shown(s)
            ));
        }
        Err(e) => return Some(format!("URL `{}` is not a valid URL: {e}", shown(s))),
    };
    if url.host_str().is_none_or(str::is_empty) {
        return Some(format!("URL `{}` has no host", shown(s)));
    }
    if rule == UrlRule::ApiRoot && s.ends_with('/') {
        return Some(format!(
            "URL `{}` must not end with `/`: clients append `/info`, `/should-wake` and `/respond`",
            shown(s)
        ));
    }
    None
}

/// Checks an `inputSchema`/`outputSchema`: a JSON object that is a valid JSON Schema of a known
/// draft, compiles, and refers only to itself (remote `$ref`s are refused: nothing is fetched).
pub(super) fn check_json_schema(d: &mut Diagnostics, path: &FieldPath, schema: &Value) {
    if !schema.is_object() {
        d.push(
            path.clone(),
            "must be a JSON Schema object (use `{}` to accept anything)",
        );
        return;
    }
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if size > MAX_SCHEMA_BYTES {
        d.push(
            path.clone(),
            format!("schema is {size} bytes, more than the limit of {MAX_SCHEMA_BYTES} bytes"),
        );
        return;
    }
    if let Some(meta) = schema.get("$schema") {
        let known = matches!(meta, Value::String(_))
            && jsonschema::Draft::default().detect(schema) != jsonschema::Draft::Unknown;
        if !known {
            d.push(
                path.key("$schema"),
                format!(
                    "`{}` is not a JSON Schema draft ofc knows; use https://json-schema.org/draft/2020-12/schema (or 2019-09, draft-07, draft-06, draft-04)",
                    shown(&meta.to_string())
                ),
            );
            return;
        }
    }
    let mut remote = Vec::new();
    find_remote_refs(schema, 0, &mut remote);
    if let Some(r) = remote.first() {
        d.push(
            path.clone(),
            format!(
                "is not a valid JSON Schema for ofc: `{}` refers outside the schema; only local references (`#…`) are allowed",
                shown(r)
            ),
        );
        return;
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        d.push(
            path.clone(),
            format!(
                "is not a valid JSON Schema: at `{}`: {}",
                display_pointer(&e.instance_path().to_string()),
                e.masked()
            ),
        );
        return;
    }
    if let Err(e) = jsonschema::options()
        .with_retriever(NoRetrieve)
        .build(schema)
    {
        let at = e.instance_path().to_string();
        let at = if at.is_empty() {
            String::new()
        } else {
            format!("at `{at}`: ")
        };
        d.push(
            path.clone(),
            format!("is not a valid JSON Schema: {at}{}", e.masked()),
        );
    }
}

pub(super) fn display_pointer(p: &str) -> &str {
    if p.is_empty() { "/" } else { p }
}

/// Collects `$ref`-like keywords that do not start with `#`. Values of keywords that hold data
/// rather than schemas are skipped.
pub(super) fn find_remote_refs(v: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > source::MAX_DEPTH * 2 {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                match (k.as_str(), child) {
                    ("$ref" | "$dynamicRef" | "$recursiveRef", Value::String(r))
                        if !r.starts_with('#') =>
                    {
                        out.push(r.clone());
                    }
                    ("enum" | "const" | "default" | "examples", _) => {}
                    _ => find_remote_refs(child, depth + 1, out),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                find_remote_refs(item, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// A retriever that refuses everything, so that schema compilation never does I/O whatever
/// features `jsonschema` was built with.
pub(super) struct NoRetrieve;

impl jsonschema::Retrieve for NoRetrieve {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "`{}` is outside the schema; ofc does not fetch schemas",
            uri.as_str()
        )
        .into())
    }
}

pub(super) fn check_source(d: &mut Diagnostics, path: &FieldPath, source: &Source) {
    match source {
        Source::Bundle(b) => {
            if b.size == 0 {
                d.push(path.key("size"), "must be more than 0 bytes");
            }
            if b.media_type != AGENT_BUNDLE_V1 {
                d.push(
                    path.key("mediaType"),
                    format!(
                        "`{}` is not the bundle media type `{AGENT_BUNDLE_V1}`",
                        shown(&b.media_type)
                    ),
                );
            }
            if let Some(p) = entrypoint_problem(&b.entrypoint) {
                d.push(path.key("entrypoint"), p);
            }
        }
        Source::Pip(p) => {
            if let Some(problem) = pip_package_problem(&p.package) {
                d.push(path.key("package"), problem);
            }
            if let Some(problem) = pep440_problem(&p.version) {
                d.push(path.key("version"), problem);
            }
            if let Some(index) = &p.index {
                check_url(d, &path.key("index"), index, UrlRule::Fetch);
            }
            if let Some(problem) = entry_point_problem(&p.entry_point) {
                d.push(path.key("entryPoint"), problem);
            }
        }
        Source::Npm(n) => {
            if let Some(problem) = npm_package_problem(&n.package) {
                d.push(path.key("package"), problem);
            }
            if let Some(i) = &n.integrity
                && (!i.starts_with("sha512-")
                    || i.len() > 200
                    || !i[7..]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')))
            {
                d.push(
                    path.key("integrity"),
                    "must be the tarball's subresource integrity, `sha512-<base64>`",
                );
            }
            if !n.version.build.is_empty() {
                d.push(
                    path.key("version"),
                    format!(
                        "`{}` has build metadata; npm versions do not use `+…`",
                        n.version
                    ),
                );
            }
            if let Some(registry) = &n.registry {
                check_url(d, &path.key("registry"), registry, UrlRule::Fetch);
            }
            if let Some(problem) = ident_problem(&n.bin, MAX_PACKAGE_CHARS) {
                d.push(path.key("bin"), format!("bin {problem}"));
            } else if n.bin.starts_with(['.', '-']) {
                d.push(path.key("bin"), "bin must not start with `.` or `-`");
            }
        }
        Source::Docker(dk) => {
            if let Some(problem) = image_problem(&dk.image) {
                d.push(path.key("image"), problem);
            }
            if dk.port == 0 {
                d.push(path.key("port"), "must be a port between 1 and 65535");
            }
        }
        Source::Remote(r) => check_url(d, &path.key("endpoint"), &r.endpoint, UrlRule::ApiRoot),
    }
}

/// A relative path inside a bundle that names an `agent.yaml` or an AgentCard.
pub(super) fn entrypoint_problem(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("must not be empty".into());
    }
    if p.chars().count() > MAX_PATH_CHARS {
        return Some(format!("path is longer than {MAX_PATH_CHARS} characters"));
    }
    let sp = shown(p);
    if p.chars().any(char::is_control) {
        return Some(format!("path `{sp}` contains a control character"));
    }
    if p.contains('\\') {
        return Some(format!("path `{sp}` contains a backslash; use `/`"));
    }
    if p.starts_with('/') {
        return Some(format!(
            "path `{sp}` must be relative to the bundle root, not start with `/`"
        ));
    }
    for comp in p.split('/') {
        match comp {
            "" => {
                return Some(format!(
                    "path `{sp}` has an empty component (`//` or a trailing `/`)"
                ));
            }
            "." | ".." => return Some(format!("path `{sp}` has a `{comp}` component")),
            c if c.contains(':') => return Some(format!("path `{sp}` contains `:`")),
            _ => {}
        }
    }
    let lower = p.to_ascii_lowercase();
    if ![".yaml", ".yml", ".md"]
        .iter()
        .any(|ext| lower.ends_with(ext))
    {
        return Some(format!(
            "path `{sp}` must name an `agent.yaml` or an AgentCard (`.yaml`, `.yml` or `.md`)"
        ));
    }
    None
}

/// PEP 508 distribution names: letters, digits, `.`, `_`, `-`, starting and ending alphanumeric.
pub(super) fn pip_package_problem(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("must not be empty".into());
    }
    if p.len() > MAX_PACKAGE_CHARS {
        return Some(format!(
            "package name is longer than {MAX_PACKAGE_CHARS} characters"
        ));
    }
    let ok = p
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && p.starts_with(|c: char| c.is_ascii_alphanumeric())
        && p.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then(|| {
        format!(
            "`{}` is not a Python package name (letters, digits, `.`, `_`, `-`, starting and ending with a letter or digit)",
            shown(p)
        )
    })
}

/// An exact PEP 440 version in normalized form: `[N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]`.
pub(super) fn pep440_problem(v: &str) -> Option<String> {
    if v.is_empty() {
        return Some("must not be empty; expected an exact version such as `1.2.0`".into());
    }
    if v.len() > MAX_VERSION_CHARS {
        return Some(format!(
            "version is longer than {MAX_VERSION_CHARS} characters"
        ));
    }
    if v.contains(['<', '>', '=', '~', '*', ',', ';', '^', ' ', '|']) || v.contains("!=") {
        return Some(format!(
            "`{}` is a version range or specifier; a pip source needs an exact version such as `1.2.0`",
            shown(v)
        ));
    }
    if is_pep440_exact(v) {
        None
    } else if let Ok(normal) = v.parse::<pep440_rs::Version>() {
        Some(format!(
            "`{}` is a PEP 440 version, but write it in its normal form `{normal}` so that the pin says exactly what pip installs",
            shown(v)
        ))
    } else {
        Some(format!(
            "`{}` is not an exact PEP 440 version such as `1.2.0`, `1.2.0rc1` or `1.2.0.post1`",
            shown(v)
        ))
    }
}

/// A version PEP 440 accepts (uv's `pep440_rs`), written in its normal form: `1.0-RC1` and
/// `v1.0` mean `1.0rc1` and `1.0` to pip, but a signed pin should say exactly what it pins.
pub(super) fn is_pep440_exact(v: &str) -> bool {
    match v.parse::<pep440_rs::Version>() {
        Ok(parsed) => parsed.to_string() == v,
        Err(_) => false,
    }
}

/// A console script name or `module.path:function`.
pub(super) fn entry_point_problem(e: &str) -> Option<String> {
    if e.is_empty() {
        return Some("must not be empty".into());
    }
    if e.len() > MAX_PACKAGE_CHARS {
        return Some(format!(
            "entry point is longer than {MAX_PACKAGE_CHARS} characters"
        ));
    }
    let (script, func) = match e.split_once(':') {
        Some((m, f)) => (m, Some(f)),
        None => (e, None),
    };
    let part_ok = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    };
    let ok = part_ok(script)
        && func.is_none_or(|f| part_ok(f) && !f.contains('-'))
        && (func.is_none() || !script.contains('-'));
    (!ok).then(|| {
        format!(
            "`{}` is not a console script name or `module:function`",
            shown(e)
        )
    })
}

/// npm package names: `name` or `@scope/name`, lowercase, URL-safe.
pub(super) fn npm_package_problem(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("must not be empty".into());
    }
    if p.len() > MAX_PACKAGE_CHARS {
        return Some(format!(
            "package name is longer than {MAX_PACKAGE_CHARS} characters"
        ));
    }
    let sp = shown(p);
    let (scope, name) = match p.strip_prefix('@') {
        Some(rest) => match rest.split_once('/') {
            Some((s, n)) => (Some(s), n),
            None => {
                return Some(format!(
                    "`{sp}` is a scope without a name; expected `@scope/name`"
                ));
            }
        },
        None => (None, p),
    };
    for part in scope.into_iter().chain([name]) {
        if part.is_empty() {
            return Some(format!("`{sp}` has an empty scope or name"));
        }
        if part.starts_with(['.', '_']) {
            return Some(format!("`{sp}`: npm names must not start with `.` or `_`"));
        }
        if let Some(c) = part.chars().find(|c| {
            !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_' | '~'))
        }) {
            return Some(format!(
                "`{sp}` contains {c:?}; npm names use lowercase letters, digits, `-`, `.`, `_` and `~`"
            ));
        }
    }
    None
}

/// `[registry/]path[:tag]@sha256:<64 hex>`.
pub(super) fn image_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    if s.len() > MAX_IMAGE_CHARS {
        return Some(format!(
            "image reference is longer than {MAX_IMAGE_CHARS} characters"
        ));
    }
    let sp = shown(s);
    if let Some(c) = s.chars().find(|c| !c.is_ascii_graphic()) {
        return Some(format!("image `{sp}` contains {}", shown(&c.to_string())));
    }
    let Some((name, digest)) = s.rsplit_once('@') else {
        return Some(format!(
            "image `{sp}` is not pinned by digest; write it as `{sp}@sha256:<64 hex>`"
        ));
    };
    if let Err(e) = Digest::parse(digest) {
        return Some(format!("image `{sp}` is not pinned by a valid digest: {e}"));
    }
    if name.is_empty() {
        return Some(format!("image `{sp}` has no name before `@`"));
    }
    let mut comps: Vec<&str> = name.split('/').collect();
    if comps.len() > 1 && name::is_host_like(comps[0]) {
        if let Err(e) = name::check_host(comps[0]) {
            return Some(format!("image `{sp}`: registry {e}"));
        }
        comps.remove(0);
    }
    if let Some(last) = comps.last_mut()
        && let Some((repo, tag)) = last.split_once(':')
    {
        let tag_ok = !tag.is_empty()
            && tag.len() <= 128
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !tag_ok {
            return Some(format!("image `{sp}` has an invalid tag `{}`", shown(tag)));
        }
        *last = repo;
    }
    for comp in comps {
        let ok = !comp.is_empty()
            && !comp.contains("..")
            && comp.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && comp.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && comp.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            });
        if !ok {
            return Some(format!(
                "image `{sp}` has an invalid repository component `{}` (lowercase letters, digits, `.`, `_`, `-`)",
                shown(comp)
            ));
        }
    }
    None
}
