//! `ofc.lock`: the exact agents a floor ran with, so that another machine reproduces it.
//!
//! ```toml
//! # This file is written by ofc. Do not edit it by hand.
//! version = 1
//!
//! [[agent]]
//! name = "acme/coder"
//! version = "1.2.0"
//! manifest_digest = "sha256:…"
//! hub = "hub.ofc.dev"
//! signed_by = "0123456789abcdef0123456789abcdef"
//!
//! [agent.source]
//! kind = "pip"
//! package = "ofc-coder"
//! version = "1.2.0"
//! hashes = [
//!     "sha256:…",
//! ]
//! ```
//!
//! Each `[[agent]]` has `name` (`publisher/agent`), `version` (exact), `manifest_digest` (the
//! digest of the signed manifest), `hub` (a host such as `hub.ofc.dev` or a URL), optional
//! `signed_by` (the publisher key id, 32 hex digits) and `source`, which records what the source
//! resolved to:
//!
//! | `kind` | fields |
//! |---|---|
//! | `bundle` | `digest` of the tar.gz layer |
//! | `pip` | `package`, `version` (exact), optional `index`, `hashes`: sha256 of every wheel installed (the package and its dependencies) |
//! | `npm` | `package`, `version` (exact), `integrity` (the SRI hash npm reports, `sha512-…`) |
//! | `docker` | `image` (repository and optional tag) and its `digest` |
//! | `remote` | `endpoint` and `info_digest`, the sha256 of the `/ofc/info` document seen |
//! | `local` | `path` and optionally the `digest` of the file |
//!
//! A `local` agent comes from no hub: no `hub` or `signed_by`; `manifest_digest` is optional.
//! Names are unique. [`Lockfile::to_toml_string`] writes entries sorted by name and pip hashes
//! sorted, so the same content always gives the same bytes; [`Lockfile::from_toml`] reads any order.
//! Syntax errors are reported with line and column; other errors name the field
//! (`agent[2].manifest_digest`) and the line of that entry.

use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine as _;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::agent_yaml::{check_http_url, point_at_missing_fields, refuse_lists_for_mappings};
use crate::diagnostic::{Diagnostic, Diagnostics, FieldPath, Position, Segment};
use crate::envelope::KeyId;
use crate::manifest::parse_exact_version;
use crate::name::{self, AgentName, Digest};
use crate::source;

/// The lockfile format this crate reads and writes.
pub const LOCKFILE_VERSION: u32 = 1;

/// The conventional file name.
pub const LOCKFILE_NAME: &str = "ofc.lock";

/// A parsed, validated lockfile; entries sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Lockfile {
    agents: Vec<LockedAgent>,
}

/// One locked agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedAgent {
    /// `publisher/agent`.
    pub name: AgentName,
    /// The exact version.
    #[serde(with = "exact_version")]
    pub version: semver::Version,
    /// Digest of the signed manifest; required unless the source is `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_digest: Option<Digest>,
    /// The hub it came from (host or URL); absent only for `local` agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub: Option<String>,
    /// Key id of the publisher key that signed the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<KeyId>,
    /// What the source resolved to.
    pub source: LockedSource,
}

/// What an agent's source resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum LockedSource {
    /// A bundle layer on the hub.
    Bundle {
        /// Digest of the tar.gz.
        digest: Digest,
    },
    /// A pip package and the wheels installed for it.
    Pip {
        /// Distribution name.
        package: String,
        /// Exact version (PEP 440).
        version: String,
        /// Index URL, when not PyPI.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<String>,
        /// sha256 of every wheel installed, the package's and its dependencies'.
        hashes: Vec<Digest>,
        /// The Python version the set was resolved for (`3.11.7`): compiled wheels differ
        /// between interpreters, so another one may resolve other files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        python: Option<String>,
    },
    /// An npm package.
    Npm {
        /// Package name.
        package: String,
        /// Exact version.
        #[serde(with = "exact_version")]
        version: semver::Version,
        /// Subresource-integrity hash of the tarball (`sha512-<base64>`).
        integrity: String,
    },
    /// A container image pinned by digest.
    Docker {
        /// Repository and optional tag, without `@digest`.
        image: String,
        /// The image manifest digest.
        digest: Digest,
    },
    /// An agent served elsewhere.
    Remote {
        /// Its OFC endpoint.
        endpoint: String,
        /// sha256 of its `/ofc/info` document when locked.
        info_digest: Digest,
    },
    /// A local file used in place.
    Local {
        /// The path, relative to the blueprint.
        path: String,
        /// sha256 of the file when locked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<Digest>,
    },
}

impl LockedSource {
    /// The `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            LockedSource::Bundle { .. } => "bundle",
            LockedSource::Pip { .. } => "pip",
            LockedSource::Npm { .. } => "npm",
            LockedSource::Docker { .. } => "docker",
            LockedSource::Remote { .. } => "remote",
            LockedSource::Local { .. } => "local",
        }
    }

    /// For pip, the requirement `package==version`.
    pub fn pip_requirement(&self) -> Option<String> {
        match self {
            LockedSource::Pip {
                package, version, ..
            } => Some(format!("{package}=={version}")),
            _ => None,
        }
    }

    /// For docker, `image@digest`.
    pub fn docker_reference(&self) -> Option<String> {
        match self {
            LockedSource::Docker { image, digest } => Some(format!("{image}@{digest}")),
            _ => None,
        }
    }

    fn normalize(&mut self) {
        if let LockedSource::Pip { hashes, .. } = self {
            hashes.sort();
            hashes.dedup();
        }
    }
}

mod exact_version {
    use super::*;

    pub(super) fn serialize<S: Serializer>(v: &semver::Version, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<semver::Version, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = semver::Version;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an exact version such as `1.2.0`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<semver::Version, E> {
                parse_exact_version(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLockfile {
    #[allow(dead_code)]
    version: u32,
    #[serde(default)]
    agent: Vec<LockedAgent>,
}

impl Lockfile {
    /// A lockfile of these agents, checked and sorted by name.
    pub fn new(agents: Vec<LockedAgent>) -> Result<Lockfile, Diagnostics> {
        check_agents(&agents)?;
        let mut lock = Lockfile { agents };
        lock.normalize();
        Ok(lock)
    }

    /// The locked agents, sorted by name.
    pub fn agents(&self) -> &[LockedAgent] {
        &self.agents
    }

    /// The entry for `name`.
    pub fn get(&self, name: &AgentName) -> Option<&LockedAgent> {
        self.agents
            .binary_search_by(|a| a.name.cmp(name))
            .ok()
            .map(|i| &self.agents[i])
    }

    /// Adds an entry, replacing the one with the same name. Refuses an invalid entry.
    pub fn upsert(&mut self, agent: LockedAgent) -> Result<(), Diagnostics> {
        check_agents(std::slice::from_ref(&agent))?;
        let mut agent = agent;
        agent.source.normalize();
        match self.agents.binary_search_by(|a| a.name.cmp(&agent.name)) {
            Ok(i) => self.agents[i] = agent,
            Err(i) => self.agents.insert(i, agent),
        }
        Ok(())
    }

    /// Removes the entry for `name`.
    pub fn remove(&mut self, name: &AgentName) -> Option<LockedAgent> {
        let i = self.agents.binary_search_by(|a| a.name.cmp(name)).ok()?;
        Some(self.agents.remove(i))
    }

    fn normalize(&mut self) {
        for a in &mut self.agents {
            a.source.normalize();
        }
        self.agents.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Parses and validates `ofc.lock` text.
    pub fn from_toml(text: &str) -> Result<Lockfile, Diagnostics> {
        source::check_size(text)?;
        let text = source::strip_bom(text);
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let position = e.span().map(|s| source::offset_to_position(text, s.start));
            Diagnostics::from(
                Diagnostic::new(
                    FieldPath::root(),
                    format!("invalid TOML: {}", e.message().trim_end()),
                )
                .at(position),
            )
        })?;
        let locator = TomlLocator::new(text);
        let value = serde_json::to_value(&table)
            .map_err(|e| Diagnostics::one(FieldPath::root(), format!("invalid TOML: {e}")))?;
        let located = |d: Diagnostics| locator.locate(d);

        match value.get("version") {
            None => {
                return Err(located(Diagnostics::one(
                    FieldPath::root().key("version"),
                    format!(
                        "missing: the first line of a lockfile is `version = {LOCKFILE_VERSION}`"
                    ),
                )));
            }
            Some(v) if v.as_u64() != Some(u64::from(LOCKFILE_VERSION)) => {
                return Err(located(Diagnostics::one(
                    FieldPath::root().key("version"),
                    format!(
                        "unsupported lockfile version {v}; this ofc reads version {LOCKFILE_VERSION}"
                    ),
                )));
            }
            Some(_) => {}
        }
        let shapes = refuse_lists_for_mappings(&value, &["agent[]", "agent[].source"]);
        if !shapes.is_empty() {
            return Err(located(shapes));
        }
        let raw: RawLockfile =
            source::deserialize_value(&value).map_err(|d| located(point_at_missing_fields(d)))?;
        Lockfile::new(raw.agent).map_err(located)
    }

    /// The lockfile as TOML: entries sorted by name, fields in a fixed order, so equal lockfiles
    /// give equal bytes.
    pub fn to_toml_string(&self) -> String {
        let mut out = String::new();
        out.push_str("# This file is written by ofc. Do not edit it by hand.\n");
        let _ = writeln!(out, "version = {LOCKFILE_VERSION}");
        let mut agents: Vec<&LockedAgent> = self.agents.iter().collect();
        agents.sort_by(|a, b| a.name.cmp(&b.name));
        for a in agents {
            out.push_str("\n[[agent]]\n");
            kv(&mut out, "name", &a.name.to_string());
            kv(&mut out, "version", &a.version.to_string());
            if let Some(d) = &a.manifest_digest {
                kv(&mut out, "manifest_digest", &d.to_string());
            }
            if let Some(h) = &a.hub {
                kv(&mut out, "hub", h);
            }
            if let Some(k) = &a.signed_by {
                kv(&mut out, "signed_by", &k.to_string());
            }
            out.push_str("\n[agent.source]\n");
            kv(&mut out, "kind", a.source.kind());
            match &a.source {
                LockedSource::Bundle { digest } => kv(&mut out, "digest", &digest.to_string()),
                LockedSource::Pip {
                    package,
                    version,
                    index,
                    hashes,
                    python,
                } => {
                    kv(&mut out, "package", package);
                    kv(&mut out, "version", version);
                    if let Some(i) = index {
                        kv(&mut out, "index", i);
                    }
                    if let Some(py) = python {
                        kv(&mut out, "python", py);
                    }
                    let mut hashes: Vec<String> = hashes.iter().map(Digest::to_string).collect();
                    hashes.sort();
                    hashes.dedup();
                    out.push_str("hashes = [\n");
                    for h in hashes {
                        out.push_str("    ");
                        toml_string(&mut out, &h);
                        out.push_str(",\n");
                    }
                    out.push_str("]\n");
                }
                LockedSource::Npm {
                    package,
                    version,
                    integrity,
                } => {
                    kv(&mut out, "package", package);
                    kv(&mut out, "version", &version.to_string());
                    kv(&mut out, "integrity", integrity);
                }
                LockedSource::Docker { image, digest } => {
                    kv(&mut out, "image", image);
                    kv(&mut out, "digest", &digest.to_string());
                }
                LockedSource::Remote {
                    endpoint,
                    info_digest,
                } => {
                    kv(&mut out, "endpoint", endpoint);
                    kv(&mut out, "info_digest", &info_digest.to_string());
                }
                LockedSource::Local { path, digest } => {
                    kv(&mut out, "path", path);
                    if let Some(d) = digest {
                        kv(&mut out, "digest", &d.to_string());
                    }
                }
            }
        }
        out
    }

    /// Checks every rule (for lockfiles changed in code).
    pub fn validate(&self) -> Result<(), Diagnostics> {
        check_agents(&self.agents)
    }
}

fn kv(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push_str(" = ");
    toml_string(out, value);
    out.push('\n');
}

/// A TOML basic string.
fn toml_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Every rule of a list of entries, with paths `agent[i]…` in the given order.
fn check_agents(agents: &[LockedAgent]) -> Result<(), Diagnostics> {
    let mut d = Diagnostics::default();
    let mut seen: HashMap<&AgentName, usize> = HashMap::new();
    for (i, a) in agents.iter().enumerate() {
        let p = FieldPath::root().key("agent").index(i);
        if let Some(first) = seen.insert(&a.name, i) {
            d.push(
                p.key("name"),
                format!("duplicate agent `{}` (also agent[{first}])", a.name),
            );
        }
        if !a.version.build.is_empty() {
            d.push(p.key("version"), "must not have build metadata (`+…`)");
        }
        let local = matches!(a.source, LockedSource::Local { .. });
        match (&a.hub, local) {
            (Some(_), true) => d.push(p.key("hub"), "a local agent comes from no hub"),
            (None, false) => d.push(
                p.key("hub"),
                format!(
                    "missing: a `{}` agent records the hub it came from",
                    a.source.kind()
                ),
            ),
            (Some(h), false) => check_hub(h, &p.key("hub"), &mut d),
            (None, true) => {}
        }
        if local && a.signed_by.is_some() {
            d.push(p.key("signed_by"), "a local agent is not signed");
        }
        if a.manifest_digest.is_none() && !local {
            d.push(
                p.key("manifest_digest"),
                "missing: the digest of the signed manifest pins what was pulled",
            );
        }
        check_source(&a.source, &p.key("source"), &mut d);
    }
    d.into_result(())
}

fn check_hub(hub: &str, p: &FieldPath, d: &mut Diagnostics) {
    if hub.contains("://") {
        check_http_url(hub, p, d);
    } else if let Err(e) = name::check_host(hub) {
        d.push(p.clone(), format!("must be a host or an http(s) URL: {e}"));
    }
}

fn word(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn check_source(s: &LockedSource, p: &FieldPath, d: &mut Diagnostics) {
    match s {
        LockedSource::Bundle { .. } => {}
        LockedSource::Pip {
            package,
            version,
            index,
            hashes,
            python,
        } => {
            if let Some(py) = python
                && !word(py)
            {
                d.push(p.key("python"), "must be a Python version such as `3.11.7`");
            }
            if !word(package) {
                d.push(p.key("package"), "must be a package name");
            }
            if !word(version) || version.starts_with(['=', '<', '>', '~', '!', '^']) {
                d.push(p.key("version"), "must be an exact version");
            }
            if let Some(i) = index {
                check_http_url(i, &p.key("index"), d);
            }
            if hashes.is_empty() {
                d.push(
                    p.key("hashes"),
                    "must list the sha256 of every installed wheel; an empty list pins nothing",
                );
            }
        }
        LockedSource::Npm {
            package, integrity, ..
        } => {
            if !word(package) {
                d.push(p.key("package"), "must be a package name");
            }
            if let Err(e) = check_integrity(integrity) {
                d.push(p.key("integrity"), e);
            }
        }
        LockedSource::Docker { image, .. } => {
            if !word(image) || image.contains('@') {
                d.push(
                    p.key("image"),
                    "must be a repository with an optional tag, without `@digest` (the digest has its own field)",
                );
            }
        }
        LockedSource::Remote { endpoint, .. } => check_http_url(endpoint, &p.key("endpoint"), d),
        LockedSource::Local { path, .. } => {
            if path.trim().is_empty() {
                d.push(p.key("path"), "must not be empty");
            }
        }
    }
}

/// `sha512-<base64>` (or sha256 / sha384), the digest length matching the algorithm.
fn check_integrity(s: &str) -> Result<(), String> {
    let Some((alg, b64)) = s.split_once('-') else {
        return Err(format!(
            "`{}` is not a subresource-integrity hash such as `sha512-<base64>`",
            name::shown(s)
        ));
    };
    let len = match alg {
        "sha256" => 32,
        "sha384" => 48,
        "sha512" => 64,
        _ => {
            return Err(format!(
                "unsupported integrity algorithm `{}`; expected sha512, sha384 or sha256",
                name::shown(alg)
            ));
        }
    };
    match base64::engine::general_purpose::STANDARD.decode(b64) {
        Ok(bytes) if bytes.len() == len => Ok(()),
        Ok(bytes) => Err(format!(
            "{alg} digest has {} bytes, expected {len}",
            bytes.len()
        )),
        Err(_) => Err("the digest is not valid base64".to_string()),
    }
}

/// Finds where entries and keys are written in lockfile text, for diagnostics found after
/// parsing (TOML values carry no positions once converted).
struct TomlLocator {
    spans: HashMap<FieldPath, Position>,
}

impl TomlLocator {
    fn new(text: &str) -> Self {
        let mut spans = HashMap::new();
        let mut table = FieldPath::root();
        let mut agent_index: Option<usize> = None;
        for (n, line) in text.lines().enumerate() {
            let line_no = u32::try_from(n + 1).unwrap_or(u32::MAX);
            let trimmed = line.trim_start();
            let col = u32::try_from(line.len() - trimmed.len() + 1).unwrap_or(1);
            let pos = Position { line: line_no, col };
            if let Some(inner) = trimmed.strip_prefix("[[") {
                let Some(end) = inner.find("]]") else {
                    continue;
                };
                if header_key(&inner[..end]) == "agent" {
                    let i = agent_index.map_or(0, |i| i + 1);
                    agent_index = Some(i);
                    table = FieldPath::root().key("agent").index(i);
                    spans.entry(table.clone()).or_insert(pos);
                } else {
                    table = FieldPath::parse(&header_key(&inner[..end]));
                }
            } else if let Some(inner) = trimmed.strip_prefix('[') {
                let Some(end) = inner.find(']') else { continue };
                let key = header_key(&inner[..end]);
                table = match (key.strip_prefix("agent."), agent_index) {
                    (Some(rest), Some(i)) => FieldPath::root()
                        .key("agent")
                        .index(i)
                        .key(rest.to_string()),
                    _ => FieldPath::parse(&key),
                };
                spans.entry(table.clone()).or_insert(pos);
            } else if let Some((key, _)) = trimmed.split_once('=') {
                let key = header_key(key);
                if key.is_empty() || key.starts_with('#') || key.contains(['"', ' ']) {
                    continue;
                }
                let mut path = table.clone();
                for part in key.split('.') {
                    path = path.key(part.to_string());
                }
                spans.entry(path).or_insert(pos);
            }
        }
        Self { spans }
    }

    fn position(&self, path: &FieldPath) -> Option<Position> {
        let mut p = Some(path.clone());
        while let Some(cur) = p {
            if let Some(pos) = self.spans.get(&cur) {
                return Some(*pos);
            }
            p = cur.parent();
        }
        None
    }

    fn locate(&self, mut diags: Diagnostics) -> Diagnostics {
        for d in &mut diags.0 {
            if d.position.is_none() {
                d.position = self.position(&d.path);
            }
        }
        diags
    }
}

/// A dotted key with whitespace and simple quotes removed: `[ agent . "source" ]` → `agent.source`.
fn header_key(s: &str) -> String {
    s.split('.')
        .map(|part| part.trim().trim_matches('"').trim_matches('\''))
        .collect::<Vec<_>>()
        .join(".")
}

/// The first segment of a diagnostic path as an agent index, for callers grouping by entry.
pub fn agent_index(path: &FieldPath) -> Option<usize> {
    match path.segments() {
        [Segment::Key(k), Segment::Index(i), ..] if k == "agent" => Some(*i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    const KEY: &str = "0123456789abcdef0123456789abcdef";

    fn sample() -> String {
        format!(
            r#"version = 1

[[agent]]
name = "acme/coder"
version = "1.2.0"
manifest_digest = "{D1}"
hub = "hub.ofc.dev"
signed_by = "{KEY}"

[agent.source]
kind = "pip"
package = "ofc-coder"
version = "1.2.0"
hashes = ["{D2}", "{D1}"]

[[agent]]
name = "acme/analyst"
version = "0.3.1"
manifest_digest = "{D2}"
hub = "https://hub.example.com:8443"
source = {{ kind = "bundle", digest = "{D1}" }}
"#
        )
    }

    fn err(text: &str) -> (String, Option<Position>, String) {
        let e = Lockfile::from_toml(text).unwrap_err();
        let d = &e.0[0];
        (d.path.to_string(), d.position, d.message.clone())
    }

    #[test]
    fn reads_and_sorts() {
        let l = Lockfile::from_toml(&sample()).unwrap();
        let names: Vec<String> = l.agents().iter().map(|a| a.name.to_string()).collect();
        assert_eq!(names, ["acme/analyst", "acme/coder"]);
        let coder = l.get(&AgentName::parse("acme/coder").unwrap()).unwrap();
        assert_eq!(
            coder.source.pip_requirement().as_deref(),
            Some("ofc-coder==1.2.0")
        );
        let LockedSource::Pip { hashes, .. } = &coder.source else {
            panic!()
        };
        assert_eq!(hashes[0].to_string(), D1);
        assert_eq!(coder.signed_by.unwrap().to_string(), KEY);
    }

    #[test]
    fn output_is_stable_and_round_trips() {
        let l = Lockfile::from_toml(&sample()).unwrap();
        let text = l.to_toml_string();
        assert_eq!(Lockfile::from_toml(&text).unwrap(), l);
        assert_eq!(Lockfile::from_toml(&text).unwrap().to_toml_string(), text);
        assert!(text.starts_with("# This file is written by ofc"));
        assert!(text.find("acme/analyst").unwrap() < text.find("acme/coder").unwrap());
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let (path, pos, msg) =
            err("version = 1\n\n[[agent]]\nname = \"acme/x\nversion = \"1.0.0\"\n");
        assert_eq!(path, "(document)");
        assert_eq!(pos.unwrap().line, 4, "{msg}");
        assert!(msg.starts_with("invalid TOML"), "{msg}");
        let (_, pos, _) = err("version = 1\nversion = 2\n");
        assert_eq!(pos.unwrap().line, 2);
    }

    fn entry(extra: &str, source: &str) -> String {
        format!(
            "version = 1\n\n[[agent]]\nname = \"acme/ok\"\nversion = \"1.0.0\"\nmanifest_digest = \"{D1}\"\nhub = \"hub.ofc.dev\"\n\n[agent.source]\nkind = \"bundle\"\ndigest = \"{D1}\"\n\n[[agent]]\n{extra}\n[agent.source]\n{source}\n"
        )
    }

    const OK_HEAD: &str = "name = \"acme/two\"\nversion = \"1.0.0\"\nmanifest_digest = \"sha256:1111111111111111111111111111111111111111111111111111111111111111\"\nhub = \"hub.ofc.dev\"\n";
    const OK_BUNDLE: &str = "kind = \"bundle\"\ndigest = \"sha256:1111111111111111111111111111111111111111111111111111111111111111\"\n";

    #[test]
    fn entry_helper_is_valid() {
        assert!(Lockfile::from_toml(&entry(OK_HEAD, OK_BUNDLE)).is_ok());
    }

    #[rstest]
    #[case(&OK_HEAD.replace("acme/two", "acme/ok"), OK_BUNDLE, "agent[1].name", "duplicate")]
    #[case(&OK_HEAD.replace("acme/two", "Acme/OK"), OK_BUNDLE, "agent[1].name", "duplicate")]
    #[case(&OK_HEAD.replace("sha256:1111", "sha256:XX11"), OK_BUNDLE, "agent[1].manifest_digest", "")]
    #[case(&OK_HEAD.replace("sha256:1111", "md5:1111"), OK_BUNDLE, "agent[1].manifest_digest", "sha256")]
    #[case(&OK_HEAD.replace("manifest_digest", "# manifest_digest"), OK_BUNDLE, "agent[1].manifest_digest", "missing")]
    #[case(&OK_HEAD.replace("\"1.0.0\"", "\"^1.0\""), OK_BUNDLE, "agent[1].version", "range")]
    #[case(&OK_HEAD.replace("\"1.0.0\"", "\"1.0.0+b1\""), OK_BUNDLE, "agent[1].version", "build metadata")]
    #[case(&OK_HEAD.replace("acme/two", "two"), OK_BUNDLE, "agent[1].name", "")]
    #[case(&OK_HEAD.replace("hub.ofc.dev", "hub ofc"), OK_BUNDLE, "agent[1].hub", "host")]
    #[case(&OK_HEAD.replace("hub.ofc.dev", "ftp://hub"), OK_BUNDLE, "agent[1].hub", "http")]
    #[case(&OK_HEAD.replace("hub = \"hub.ofc.dev\"", ""), OK_BUNDLE, "agent[1].hub", "missing")]
    #[case(&format!("{OK_HEAD}signed_by = \"nothex\"\n"), OK_BUNDLE, "agent[1].signed_by", "")]
    #[case(&format!("{OK_HEAD}colour = \"red\"\n"), OK_BUNDLE, "agent[1].colour", "unknown field")]
    #[case(OK_HEAD, "kind = \"zip\"\n", "agent[1].source.kind", "zip")]
    #[case(OK_HEAD, "kind = \"bundle\"\n", "agent[1].source.digest", "missing")]
    #[case(
        OK_HEAD,
        "kind = \"pip\"\npackage = \"x\"\nversion = \"1.0\"\nhashes = []\n",
        "agent[1].source.hashes",
        "empty"
    )]
    #[case(
        OK_HEAD,
        "kind = \"pip\"\npackage = \"x\"\nversion = \">=1.0\"\nhashes = [\"sha256:1111111111111111111111111111111111111111111111111111111111111111\"]\n",
        "agent[1].source.version",
        "exact"
    )]
    #[case(
        OK_HEAD,
        "kind = \"npm\"\npackage = \"x\"\nversion = \"1.0.0\"\nintegrity = \"md5-abc\"\n",
        "agent[1].source.integrity",
        "algorithm"
    )]
    #[case(
        OK_HEAD,
        "kind = \"npm\"\npackage = \"x\"\nversion = \"1.0.0\"\nintegrity = \"sha512-AAAA\"\n",
        "agent[1].source.integrity",
        "bytes"
    )]
    #[case(
        OK_HEAD,
        "kind = \"docker\"\nimage = \"ghcr.io/a/b@sha256:1111\"\ndigest = \"sha256:1111111111111111111111111111111111111111111111111111111111111111\"\n",
        "agent[1].source.image",
        "digest"
    )]
    #[case(
        OK_HEAD,
        "kind = \"remote\"\nendpoint = \"agent.example.com/ofc\"\ninfo_digest = \"sha256:1111111111111111111111111111111111111111111111111111111111111111\"\n",
        "agent[1].source.endpoint",
        "http"
    )]
    #[case(
        OK_HEAD,
        "kind = \"local\"\npath = \"./a.agent.yaml\"\n",
        "agent[1].hub",
        "no hub"
    )]
    fn entry_rules(
        #[case] head: &str,
        #[case] src: &str,
        #[case] path: &str,
        #[case] message: &str,
    ) {
        let (p, pos, m) = err(&entry(head, src));
        assert_eq!(p, path, "{m}");
        assert!(m.contains(message), "{m}");
        // Every error in the second entry points at or after its header (line 13).
        assert!(pos.is_some_and(|p| p.line >= 13), "{pos:?} {m}");
    }

    #[test]
    fn local_agents_need_no_hub_or_manifest() {
        let text = "version = 1\n[[agent]]\nname = \"me/helper\"\nversion = \"0.1.0\"\nsource = { kind = \"local\", path = \"./helper.agent.yaml\" }\n";
        let l = Lockfile::from_toml(text).unwrap();
        assert!(l.agents()[0].hub.is_none());
    }

    #[rstest]
    #[case("", "version", "missing")]
    #[case("version = 2\n", "version", "unsupported lockfile version 2")]
    #[case("version = \"1\"\n", "version", "unsupported")]
    #[case("version = 1\nagents = []\n", "agents", "unknown field")]
    #[case("version = 1\nagent = [[\"x\"]]\n", "agent[0]", "mapping")]
    #[case(
        "version = 1\n[[agent]]\nname = \"a/b\"\n",
        "agent[0].version",
        "missing"
    )]
    fn document_rules(#[case] text: &str, #[case] path: &str, #[case] message: &str) {
        let (p, _, m) = err(text);
        assert_eq!(p, path, "{m}");
        assert!(m.contains(message), "{m}");
    }

    #[test]
    fn positions_point_at_keys_of_the_entry() {
        let text = entry(&OK_HEAD.replace("sha256:1111", "sha256:zz11"), OK_BUNDLE);
        let (_, pos, _) = err(&text);
        assert_eq!(pos, Some(Position { line: 16, col: 1 }));
        let text = entry(
            OK_HEAD,
            "kind = \"npm\"\npackage = \"x\"\nversion = \"1.0.0\"\nintegrity = \"sha1-x\"\n",
        );
        let (_, pos, _) = err(&text);
        assert_eq!(pos.map(|p| p.line), Some(23));
    }

    #[test]
    fn upsert_and_remove_keep_order() {
        let mut l = Lockfile::from_toml(&sample()).unwrap();
        let mut a = l.agents()[0].clone();
        a.name = AgentName::parse("acme/zed").unwrap();
        l.upsert(a.clone()).unwrap();
        assert_eq!(l.agents().last().unwrap().name, a.name);
        a.hub = Some("not a host".into());
        assert!(l.upsert(a.clone()).is_err());
        assert!(l.remove(&AgentName::parse("acme/zed").unwrap()).is_some());
        assert_eq!(l.agents().len(), 2);
    }

    fn arb_digest() -> impl Strategy<Value = Digest> {
        any::<[u8; 32]>().prop_map(Digest::from_bytes)
    }

    fn arb_source() -> impl Strategy<Value = LockedSource> {
        prop_oneof![
            arb_digest().prop_map(|digest| LockedSource::Bundle { digest }),
            (
                "[a-z][a-z0-9_-]{0,12}",
                "[0-9]{1,3}\\.[0-9]{1,3}(\\.post[0-9]|rc[0-9])?",
                prop::option::of("https://[a-z]{1,8}\\.example/simple"),
                prop::collection::vec(arb_digest(), 1..4),
            )
                .prop_map(|(package, version, index, hashes)| LockedSource::Pip {
                    package,
                    version,
                    index,
                    hashes,
                    python: None,
                }),
            (
                "(@[a-z]{1,5}/)?[a-z][a-z0-9-]{0,10}",
                0u64..20,
                0u64..20,
                prop::collection::vec(any::<u8>(), 64)
            )
                .prop_map(|(package, a, b, bytes)| LockedSource::Npm {
                    package,
                    version: semver::Version::new(a, b, 0),
                    integrity: format!(
                        "sha512-{}",
                        base64::engine::general_purpose::STANDARD.encode(bytes)
                    ),
                }),
            ("[a-z]{1,8}\\.io/[a-z]{1,8}(:[a-z0-9.]{1,6})?", arb_digest())
                .prop_map(|(image, digest)| LockedSource::Docker { image, digest }),
            (
                "https://[a-z]{1,8}\\.example(:[1-9][0-9]{1,3})?/ofc",
                arb_digest()
            )
                .prop_map(|(endpoint, info_digest)| LockedSource::Remote {
                    endpoint,
                    info_digest
                }),
            (
                "\\./[a-z \"\\\\é]{1,10}\\.agent\\.yaml",
                prop::option::of(arb_digest())
            )
                .prop_map(|(path, digest)| LockedSource::Local { path, digest }),
        ]
    }

    fn arb_agent() -> impl Strategy<Value = LockedAgent> {
        (
            "[a-z][a-z0-9]{1,6}",
            "[a-z][a-z0-9_-]{0,8}",
            (0u64..5, 0u64..30, 0u64..30),
            prop::option::of("-(alpha|rc)\\.[0-9]"),
            arb_digest(),
            prop_oneof![
                "[a-z]{1,8}\\.[a-z]{2,4}(:[1-9][0-9]{1,3})?",
                "https://[a-z]{1,8}\\.dev"
            ],
            prop::option::of(any::<[u8; 16]>()),
            arb_source(),
        )
            .prop_filter_map(
                "valid name",
                |(p, a, (x, y, z), pre, md, hub, key, source)| {
                    let name = AgentName::new(&format!("p{p}"), &a).ok()?;
                    let version =
                        semver::Version::parse(&format!("{x}.{y}.{z}{}", pre.unwrap_or_default()))
                            .ok()?;
                    let local = matches!(source, LockedSource::Local { .. });
                    Some(LockedAgent {
                        name,
                        version,
                        manifest_digest: Some(md),
                        hub: (!local).then_some(hub),
                        signed_by: key
                            .filter(|_| !local)
                            .map(|k| KeyId::parse(&hex::encode(k)).expect("32 hex digits")),
                        source,
                    })
                },
            )
    }

    proptest! {
        #[test]
        fn lockfiles_round_trip(agents in prop::collection::vec(arb_agent(), 0..6)) {
            let mut unique = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for a in agents {
                if seen.insert(a.name.clone()) {
                    unique.push(a);
                }
            }
            let lock = Lockfile::new(unique).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let text = lock.to_toml_string();
            let back = Lockfile::from_toml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(&back, &lock);
            prop_assert_eq!(back.to_toml_string(), text);
        }

        #[test]
        fn entry_order_does_not_change_the_bytes(agents in prop::collection::vec(arb_agent(), 0..5)) {
            let mut seen = std::collections::HashSet::new();
            let unique: Vec<LockedAgent> = agents.into_iter().filter(|a| seen.insert(a.name.clone())).collect();
            let mut reversed = unique.clone();
            reversed.reverse();
            let a = Lockfile::new(unique).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let b = Lockfile::new(reversed).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(a.to_toml_string(), b.to_toml_string());
        }

        #[test]
        fn parsing_never_panics(text in "(version = 1\n|\\[\\[agent\\]\\]\n|\\[agent\\.source\\]\n|name = \"a/b\"\n|kind = \"pip\"\n|[\\PC\n=\\[\\]\"]){0,30}") {
            let _ = Lockfile::from_toml(&text);
        }
    }
}
