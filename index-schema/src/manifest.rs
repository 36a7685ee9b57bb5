//! The agent manifest, version 1: one JSON document per published agent version, signed by its
//! publisher (see [`crate::envelope`]).
//!
//! Field names are camelCase and follow the OFC `/ofc/info` document and Agent Lobby capability
//! objects. Unknown fields are refused everywhere, so a typo never silently drops information.
//! Every free-text field has a size limit (the `MAX_*` constants; lengths count characters except
//! [`MAX_README_BYTES`]) and single-line fields refuse control characters; all text fields refuse
//! Unicode bidirectional overrides, which can make displayed text differ from what it says.
//!
//! [`Manifest::from_json`] reports every problem as a [`Diagnostic`](crate::Diagnostic) naming the
//! field (`capabilities[1].inputSchema`) and its line and column. Type errors stop parsing at the
//! first one (serde works that way); rule violations found by [`Manifest::validate`] are all
//! reported together.
//!
//! [`Manifest::to_json_bytes`] writes compact JSON with fields in a fixed order (the order of the
//! struct fields below); those bytes are what gets signed, and the manifest digest is the SHA-256 of
//! exactly those bytes.

use std::collections::HashMap;
use std::fmt;

use semver::Version;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostics, FieldPath, Segment};
use crate::http_url;
use crate::media_types::AGENT_BUNDLE_V1;
use crate::name::{self, AgentHandle, AgentName, Digest, NameError, shown};
use crate::source;

/// The only `schemaVersion` this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;
/// Largest manifest, as JSON text or as written by [`Manifest::to_json_bytes`].
pub const MAX_MANIFEST_BYTES: usize = 1024 * 1024;
/// Longest `displayName`.
pub const MAX_DISPLAY_NAME_CHARS: usize = 100;
/// Longest `tagline`.
pub const MAX_TAGLINE_CHARS: usize = 200;
/// Longest `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 4000;
/// Largest `readme` (Markdown), in bytes.
pub const MAX_README_BYTES: usize = 100 * 1024;
/// Longest `license` expression.
pub const MAX_LICENSE_CHARS: usize = 100;
/// Longest URL in any field.
pub const MAX_URL_CHARS: usize = 2048;
/// Most `keywords` (on the manifest and on each capability).
pub const MAX_KEYWORDS: usize = 30;
/// Longest keyword.
pub const MAX_KEYWORD_CHARS: usize = 40;
/// Most `examples`.
pub const MAX_EXAMPLES: usize = 20;
/// Longest example.
pub const MAX_EXAMPLE_CHARS: usize = 500;
/// Most `capabilities`.
pub const MAX_CAPABILITIES: usize = 64;
/// Longest capability name.
pub const MAX_CAPABILITY_NAME_CHARS: usize = 64;
/// Longest capability description.
pub const MAX_CAPABILITY_DESCRIPTION_CHARS: usize = 2000;
/// Largest `inputSchema` or `outputSchema`, as compact JSON.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Most `authorizedRequesters` of one capability.
pub const MAX_AUTHORIZED_REQUESTERS: usize = 256;
/// Most entries in `providesMcp.capabilities`, `requires.workstations` and `requires.tools`.
pub const MAX_LIST_ITEMS: usize = 64;
/// Longest tool or workstation name.
pub const MAX_TOOL_NAME_CHARS: usize = 128;
/// Longest `requires.model`.
pub const MAX_MODEL_CHARS: usize = 200;
/// Longest pip or npm package name, npm `bin` or pip `entryPoint`.
pub const MAX_PACKAGE_CHARS: usize = 214;
/// Longest package version string; also the OCI tag limit that `version` must fit.
pub const MAX_VERSION_CHARS: usize = 128;
/// Longest bundle `entrypoint` path.
pub const MAX_PATH_CHARS: usize = 256;
/// Longest docker `image` reference.
pub const MAX_IMAGE_CHARS: usize = 512;
/// Largest `pricing` amount.
pub const MAX_PRICE: f64 = 1e9;

/// An agent manifest, version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `publisher/agent`.
    pub name: AgentName,
    /// Exact semver version; immutable once published. No build metadata (versions are OCI
    /// tags, which cannot contain `+`).
    #[serde(with = "exact_version")]
    pub version: Version,
    /// The default floor handle, e.g. `@code`. Must not be a reserved handle.
    pub id: AgentHandle,
    /// Human-readable name, one line.
    pub display_name: String,
    /// One line saying what to send this agent.
    pub tagline: String,
    /// What the agent does (plain text, may span lines).
    pub description: String,
    /// Longer Markdown documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readme: Option<String>,
    /// SPDX license expression, e.g. `MIT OR Apache-2.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Project home page (`http(s)://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Source repository (`http(s)://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Search keywords, unique ignoring case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// When the agent wakes; `mention` when absent.
    #[serde(default)]
    pub activation: Activation,
    /// Agent Lobby capabilities, unique by name ignoring case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<Capability>,
    /// An MCP server the agent offers to the floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provides_mcp: Option<ProvidesMcp>,
    /// What the agent needs from the floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<Requires>,
    /// Informational pricing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Where the agent's code comes from.
    pub source: Source,
    /// The document this manifest was converted from (an AgentCard, …), when it was not written
    /// as a manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Longest `origin.format`.
pub const MAX_ORIGIN_FORMAT_CHARS: usize = 64;
/// Longest `origin.document` (a path in the bundle or a URL).
pub const MAX_ORIGIN_DOCUMENT_CHARS: usize = 2048;
/// Largest `origin.fields`, as compact JSON.
pub const MAX_ORIGIN_FIELDS_BYTES: usize = 64 * 1024;

/// The document a manifest was converted from: its format, where it is, and its fields that the
/// manifest has no place for, kept as written so that nothing the author wrote is lost (fast-agent
/// fields ofc does not use, for instance). Secrets (`api_key`, headers, tokens) are not copied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Origin {
    /// The original's format: [`Origin::AGENT_CARD`], …; lowercase letters, digits and `-`.
    pub format: String,
    /// Where the original is: a path inside the bundle (the bundle's entrypoint), or a URL.
    pub document: String,
    /// The original's fields the manifest holds nowhere else, as JSON.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub fields: Map<String, Value>,
}

impl Origin {
    /// An AgentCard (`.md`/`.yaml`), as fast-agent reads it.
    pub const AGENT_CARD: &'static str = "agent-card";
    /// An A2A agent card (`agent-card.json`).
    pub const A2A_AGENT_CARD: &'static str = "a2a-agent-card";
    /// An MCP Registry `server.json`.
    pub const MCP_SERVER_JSON: &'static str = "mcp-server-json";

    fn validate(&self, d: &mut Diagnostics, path: &FieldPath) {
        let format_ok = !self.format.is_empty()
            && self.format.len() <= MAX_ORIGIN_FORMAT_CHARS
            && self
                .format
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !format_ok {
            d.push(
                path.key("format"),
                format!("must be 1 to {MAX_ORIGIN_FORMAT_CHARS} lowercase letters, digits or `-`"),
            );
        }
        check_line(
            d,
            &path.key("document"),
            &self.document,
            MAX_ORIGIN_DOCUMENT_CHARS,
            true,
        );
        let len = serde_json::to_vec(&self.fields).map_or(0, |v| v.len());
        if len > MAX_ORIGIN_FIELDS_BYTES {
            d.push(
                path.key("fields"),
                format!(
                    "is {len} bytes as JSON, more than the limit of {MAX_ORIGIN_FIELDS_BYTES} bytes"
                ),
            );
        }
    }
}

/// When an agent wakes on a floor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// Only when mentioned with `@id?` (or polled with should-wake).
    #[default]
    Mention,
    /// On every message.
    Always,
}

/// An Agent Lobby capability (camelCase field names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Capability {
    /// Unique name, e.g. `find_cheapest_item_price_v2`: letters, digits, `_`, `.`, `-`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of a request's payload. Only local `$ref`s (`#…`) are allowed.
    pub input_schema: Value,
    /// JSON Schema of a successful response's payload. Only local `$ref`s are allowed.
    pub output_schema: Value,
    /// Discovery keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Handles allowed to call it; absent, `null` or `[]` means anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorized_requesters: Option<Vec<AgentHandle>>,
}

/// An MCP server the agent brings (OFC `/ofc/info` `provides_mcp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvidesMcp {
    /// Where the server is: `mcp://`, `https://`, `http://`, `wss://` or `ws://`.
    pub url: String,
    /// Tool names it offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// What an agent needs from the floor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Requires {
    /// The model it needs (e.g. `qwen3:32b`), free text, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Workstation names it expects on the floor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workstations: Vec<String>,
    /// Tools it expects (`workstation__tool` or plain tool names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// Informational pricing; ofc does not bill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pricing {
    /// Price per hour on a floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<f64>,
    /// Price per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_million_tokens: Option<f64>,
    /// ISO 4217 currency code, e.g. `USD`.
    pub currency: String,
}

/// Where an agent's code comes from; exactly one kind, tagged by `"type"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Source {
    /// A tar.gz layer stored on the hub.
    Bundle(BundleSource),
    /// A Python package.
    Pip(PipSource),
    /// An npm package.
    Npm(NpmSource),
    /// A container image serving the OFC agent API.
    Docker(DockerSource),
    /// An agent already running somewhere, reached over HTTPS.
    Remote(RemoteSource),
}

impl Source {
    /// The `type` tag: `bundle`, `pip`, `npm`, `docker` or `remote`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Bundle(_) => "bundle",
            Self::Pip(_) => "pip",
            Self::Npm(_) => "npm",
            Self::Docker(_) => "docker",
            Self::Remote(_) => "remote",
        }
    }
}

/// The source kinds, in the order error messages list them.
pub const SOURCE_KINDS: &[&str] = &["bundle", "pip", "npm", "docker", "remote"];

/// A bundle: a gzip-compressed tar stored on the hub as the artifact's layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BundleSource {
    /// Digest of the tar.gz bytes.
    pub digest: Digest,
    /// Size of the tar.gz in bytes (more than 0).
    pub size: u64,
    /// Must be [`AGENT_BUNDLE_V1`].
    pub media_type: String,
    /// Path inside the bundle of the `agent.yaml` or AgentCard (`.yaml`, `.yml`, `.md`), relative
    /// to the bundle root, with `/` separators and no `.` or `..` components.
    pub entrypoint: String,
}

/// A Python package installed into its own virtual environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PipSource {
    /// The distribution name (PEP 508), e.g. `ofc-coder`.
    pub package: String,
    /// An exact PEP 440 version (`1.2.0`, `1.2.0rc1`, `2!1.0.post1`); ranges are refused.
    pub version: String,
    /// Package index URL: `https://`, or `http://` only for localhost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The console script to run, or `module:function`.
    pub entry_point: String,
    /// The publisher's pin: sha256 of the package's own wheel. When present, a client refuses
    /// to install any other file for `package==version`, whatever the index serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Digest>,
}

/// An npm package installed into its own prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NpmSource {
    /// Package name, `name` or `@scope/name`, lowercase.
    pub package: String,
    /// Exact semver version.
    #[serde(with = "exact_version")]
    pub version: Version,
    /// Registry URL: `https://`, or `http://` only for localhost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// The package's bin to run.
    pub bin: String,
    /// The publisher's pin: the subresource integrity (`sha512-<base64>`) of the package's own
    /// tarball. When present, a client refuses any other tarball for `package@version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
}

/// A container image, pinned by digest, that serves the OFC agent API on `port`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DockerSource {
    /// `[registry/]repository[:tag]@sha256:<64 hex>`; the digest is what gets pulled.
    pub image: String,
    /// Container port serving the OFC agent API (1-65535).
    pub port: u16,
}

impl DockerSource {
    /// The digest the image is pinned to, when `image` is valid.
    pub fn digest(&self) -> Option<Digest> {
        let (_, d) = self.image.rsplit_once('@')?;
        Digest::parse(d).ok()
    }
}

/// An agent already running elsewhere.
///
/// `endpoint` is the root of the agent's OFC API as the OFC registry API writes it, conventionally
/// ending in `/ofc` (`https://code-agent.example.com/ofc`) but not required to; clients append
/// `/info`, `/should-wake` and `/respond`. It must use `https://` (`http://` only for
/// `localhost`, `127.0.0.0/8` and `[::1]`), and has no query, fragment or trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoteSource {
    /// The OFC API root URL.
    pub endpoint: String,
}

/// Serde for an exact semver version as a string, with messages that say why a range is not one.
mod exact_version {
    use super::*;

    pub(super) fn serialize<S: Serializer>(v: &Version, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Version, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an exact version such as `1.2.0`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Version, E> {
                parse_exact_version(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Parses an exact semver version, explaining ranges and other mistakes.
pub fn parse_exact_version(s: &str) -> Result<Version, String> {
    if s.trim().is_empty() {
        return Err("must not be empty; expected an exact version such as `1.2.0`".into());
    }
    if s.len() > MAX_VERSION_CHARS {
        return Err(format!(
            "is {} characters long, more than the limit of {MAX_VERSION_CHARS}",
            s.len()
        ));
    }
    if s.starts_with(['^', '~', '>', '<', '=', '*']) || s.contains([',', '|', ' ', '*']) {
        return Err(format!(
            "`{}` is a version range; an exact version such as `1.2.0` is required",
            shown(s)
        ));
    }
    Version::parse(s).map_err(|e| {
        format!(
            "`{}` is not a semver version ({e}); expected an exact version such as `1.2.0`",
            shown(s)
        )
    })
}

impl Manifest {
    /// Parses and validates manifest JSON text. Diagnostics carry line and column.
    pub fn from_json(text: &str) -> Result<Manifest, Diagnostics> {
        if text.len() > MAX_MANIFEST_BYTES {
            return Err(Diagnostics::one(
                FieldPath::root(),
                format!(
                    "manifest is {} bytes, more than the limit of {MAX_MANIFEST_BYTES} bytes",
                    text.len()
                ),
            ));
        }
        let doc = source::parse_json(text)?;
        Self::parse_value(&doc.value).map_err(|d| doc.locate(d))
    }

    /// Parses and validates a manifest already read as JSON (no positions).
    pub fn from_value(value: &Value) -> Result<Manifest, Diagnostics> {
        Self::parse_value(value)
    }

    fn parse_value(value: &Value) -> Result<Manifest, Diagnostics> {
        let Value::Object(map) = value else {
            return Err(Diagnostics::one(
                FieldPath::root(),
                "a manifest must be a JSON object",
            ));
        };
        // A newer schema has fields this one does not know; say that instead of listing them.
        if let Some(v @ Value::Number(_)) = map.get("schemaVersion")
            && v.as_u64() != Some(u64::from(SCHEMA_VERSION))
        {
            return Err(Diagnostics::one(
                FieldPath::root().key("schemaVersion"),
                format!(
                    "unsupported schemaVersion {v}; this ofc reads schemaVersion {SCHEMA_VERSION}"
                ),
            ));
        }
        let manifest: Manifest = match source::deserialize_value(value) {
            Ok(m) => m,
            Err(d) => return Err(refine_serde_error(value, d)),
        };
        manifest.validate().into_result(manifest)
    }

    /// Checks every rule and returns all problems found (empty when the manifest is valid).
    pub fn validate(&self) -> Diagnostics {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        if self.schema_version != SCHEMA_VERSION {
            d.push(
                root.key("schemaVersion"),
                format!(
                    "unsupported schemaVersion {}; this ofc writes schemaVersion {SCHEMA_VERSION}",
                    self.schema_version
                ),
            );
        }
        check_manifest_version(&mut d, &root.key("version"), &self.version);
        if self.id.is_reserved() {
            d.push(
                root.key("id"),
                format!(
                    "handle `{}` is reserved for the floor; choose another",
                    self.id
                ),
            );
        }
        check_line(
            &mut d,
            &root.key("displayName"),
            &self.display_name,
            MAX_DISPLAY_NAME_CHARS,
            true,
        );
        check_line(
            &mut d,
            &root.key("tagline"),
            &self.tagline,
            MAX_TAGLINE_CHARS,
            true,
        );
        check_text(
            &mut d,
            &root.key("description"),
            &self.description,
            MAX_DESCRIPTION_CHARS,
            true,
        );
        if let Some(readme) = &self.readme {
            let p = root.key("readme");
            if readme.len() > MAX_README_BYTES {
                d.push(
                    p,
                    format!(
                        "is {} bytes long, more than the limit of {MAX_README_BYTES} bytes",
                        readme.len()
                    ),
                );
            } else {
                check_text(&mut d, &p, readme, usize::MAX, false);
            }
        }
        if let Some(license) = &self.license {
            check_license(&mut d, &root.key("license"), license);
        }
        for (field, value) in [
            ("homepage", &self.homepage),
            ("repository", &self.repository),
        ] {
            if let Some(url) = value {
                check_url(&mut d, &root.key(field), url, UrlRule::Web);
            }
        }
        check_keywords(&mut d, &root.key("keywords"), &self.keywords);
        let examples = root.key("examples");
        if check_count(&mut d, &examples, self.examples.len(), MAX_EXAMPLES) {
            for (i, e) in self.examples.iter().enumerate() {
                check_text(&mut d, &examples.index(i), e, MAX_EXAMPLE_CHARS, true);
            }
        }
        self.validate_capabilities(&mut d, &root.key("capabilities"));
        if let Some(mcp) = &self.provides_mcp {
            let p = root.key("providesMcp");
            check_url(&mut d, &p.key("url"), &mcp.url, UrlRule::Mcp);
            check_names(&mut d, &p.key("capabilities"), &mcp.capabilities, "tool");
        }
        if let Some(req) = &self.requires {
            let p = root.key("requires");
            if let Some(model) = &req.model {
                check_line(&mut d, &p.key("model"), model, MAX_MODEL_CHARS, true);
            }
            check_names(
                &mut d,
                &p.key("workstations"),
                &req.workstations,
                "workstation",
            );
            check_names(&mut d, &p.key("tools"), &req.tools, "tool");
        }
        if let Some(pricing) = &self.pricing {
            check_pricing(&mut d, &root.key("pricing"), pricing);
        }
        check_source(&mut d, &root.key("source"), &self.source);
        if let Some(origin) = &self.origin {
            origin.validate(&mut d, &root.key("origin"));
        }
        if d.is_empty() {
            let len = self.to_json_bytes().len();
            if len > MAX_MANIFEST_BYTES {
                d.push(
                    root,
                    format!(
                        "manifest is {len} bytes, more than the limit of {MAX_MANIFEST_BYTES} bytes"
                    ),
                );
            }
        }
        d
    }

    fn validate_capabilities(&self, d: &mut Diagnostics, path: &FieldPath) {
        if !check_count(d, path, self.capabilities.len(), MAX_CAPABILITIES) {
            return;
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, cap) in self.capabilities.iter().enumerate() {
            let p = path.index(i);
            if let Some(problem) = ident_problem(&cap.name, MAX_CAPABILITY_NAME_CHARS) {
                d.push(p.key("name"), problem);
            } else if let Some(first) = seen.insert(cap.name.to_ascii_lowercase(), i) {
                d.push(
                    p.key("name"),
                    format!(
                        "duplicate capability name `{}` (also capabilities[{first}]); names must be unique ignoring case",
                        cap.name
                    ),
                );
            }
            check_text(
                d,
                &p.key("description"),
                &cap.description,
                MAX_CAPABILITY_DESCRIPTION_CHARS,
                true,
            );
            check_json_schema(d, &p.key("inputSchema"), &cap.input_schema);
            check_json_schema(d, &p.key("outputSchema"), &cap.output_schema);
            check_keywords(d, &p.key("keywords"), &cap.keywords);
            if let Some(reqs) = &cap.authorized_requesters {
                check_count(
                    d,
                    &p.key("authorizedRequesters"),
                    reqs.len(),
                    MAX_AUTHORIZED_REQUESTERS,
                );
            }
        }
    }

    /// The manifest as compact JSON, fields in declaration order: the bytes that get signed.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        // Only string keys and plain values: serializing cannot fail.
        serde_json::to_vec(self).expect("a manifest always serializes to JSON")
    }

    /// The SHA-256 digest of [`Manifest::to_json_bytes`]. A manifest read from an envelope is
    /// identified by the digest of the envelope's payload bytes instead, which is the same for
    /// manifests written by this crate.
    pub fn digest(&self) -> Digest {
        Digest::of(&self.to_json_bytes())
    }
}

/// Points serde's "missing field" errors at the missing field, and re-reads a bad `source` on its
/// own so the error names the field inside it (serde buffers tagged enums and loses the path).
fn refine_serde_error(value: &Value, mut diags: Diagnostics) -> Diagnostics {
    for diag in &mut diags.0 {
        if let Some(field) = missing_field(&diag.message) {
            diag.path = diag.path.key(field);
        }
    }
    let in_source = diags
        .iter()
        .any(|x| x.path.segments().first() == Some(&Segment::Key("source".into())));
    if in_source && let Some(src) = value.get("source") {
        let precise = source_diagnostics(src);
        if !precise.is_empty() {
            return precise;
        }
    }
    diags
}

fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

fn source_diagnostics(value: &Value) -> Diagnostics {
    let path = FieldPath::root().key("source");
    let kinds = SOURCE_KINDS
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let Value::Object(map) = value else {
        return Diagnostics::one(
            path,
            format!("must be an object with a `type`: one of {kinds}"),
        );
    };
    let kind = match map.get("type") {
        None => {
            return Diagnostics::one(
                path.key("type"),
                format!("missing field `type`: one of {kinds}"),
            );
        }
        Some(Value::String(s)) => s.as_str(),
        Some(_) => {
            return Diagnostics::one(
                path.key("type"),
                format!("must be a string: one of {kinds}"),
            );
        }
    };
    let mut rest = map.clone();
    rest.remove("type");
    let rest = Value::Object(rest);
    let result = match kind {
        "bundle" => source::deserialize_value::<BundleSource>(&rest).err(),
        "pip" => source::deserialize_value::<PipSource>(&rest).err(),
        "npm" => source::deserialize_value::<NpmSource>(&rest).err(),
        "docker" => source::deserialize_value::<DockerSource>(&rest).err(),
        "remote" => source::deserialize_value::<RemoteSource>(&rest).err(),
        other => {
            return Diagnostics::one(
                path.key("type"),
                format!(
                    "unknown source type `{}`; expected one of {kinds}",
                    shown(other)
                ),
            );
        }
    };
    let mut out = Diagnostics::default();
    if let Some(mut inner) = result {
        for diag in &mut inner.0 {
            if let Some(field) = missing_field(&diag.message) {
                diag.path = diag.path.key(field);
            }
        }
        out.extend_under(&path, inner);
    }
    out
}

fn check_manifest_version(d: &mut Diagnostics, path: &FieldPath, v: &Version) {
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

fn char_problem(c: char, multi_line: bool) -> Option<String> {
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

fn check_chars(
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
fn check_line(d: &mut Diagnostics, path: &FieldPath, s: &str, max: usize, required: bool) {
    check_chars(d, path, s, max, required, false);
}

/// A multi-line text field: at most `max` characters; newlines and tabs allowed.
fn check_text(d: &mut Diagnostics, path: &FieldPath, s: &str, max: usize, required: bool) {
    check_chars(d, path, s, max, required, true);
}

/// Reports a list longer than `max`; returns true when the count is fine.
fn check_count(d: &mut Diagnostics, path: &FieldPath, len: usize, max: usize) -> bool {
    if len > max {
        d.push(
            path.clone(),
            format!("has {len} entries, more than the limit of {max}"),
        );
        return false;
    }
    true
}

fn check_keywords(d: &mut Diagnostics, path: &FieldPath, keywords: &[String]) {
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
fn check_names(d: &mut Diagnostics, path: &FieldPath, names: &[String], what: &str) {
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
fn ident_problem(s: &str, max: usize) -> Option<String> {
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

fn check_license(d: &mut Diagnostics, path: &FieldPath, license: &str) {
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

fn check_pricing(d: &mut Diagnostics, path: &FieldPath, p: &Pricing) {
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
enum UrlRule {
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

fn check_url(d: &mut Diagnostics, path: &FieldPath, url: &str, rule: UrlRule) {
    if let Some(problem) = url_problem(url, rule) {
        d.push(path.clone(), problem);
    }
}

fn url_problem(s: &str, rule: UrlRule) -> Option<String> {
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
fn check_json_schema(d: &mut Diagnostics, path: &FieldPath, schema: &Value) {
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

fn display_pointer(p: &str) -> &str {
    if p.is_empty() { "/" } else { p }
}

/// Collects `$ref`-like keywords that do not start with `#`. Values of keywords that hold data
/// rather than schemas are skipped.
fn find_remote_refs(v: &Value, depth: usize, out: &mut Vec<String>) {
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
struct NoRetrieve;

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

fn check_source(d: &mut Diagnostics, path: &FieldPath, source: &Source) {
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
fn entrypoint_problem(p: &str) -> Option<String> {
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
fn pip_package_problem(p: &str) -> Option<String> {
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
fn pep440_problem(v: &str) -> Option<String> {
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
fn is_pep440_exact(v: &str) -> bool {
    match v.parse::<pep440_rs::Version>() {
        Ok(parsed) => parsed.to_string() == v,
        Err(_) => false,
    }
}

/// A console script name or `module.path:function`.
fn entry_point_problem(e: &str) -> Option<String> {
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
fn npm_package_problem(p: &str) -> Option<String> {
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
fn image_problem(s: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "schemaVersion": 1,
            "name": "acme/coder",
            "version": "1.0.0",
            "id": "@coder",
            "displayName": "Coder",
            "tagline": "Send me code tasks",
            "description": "Writes code.",
            "source": {"type": "remote", "endpoint": "https://coder.example.com/ofc"}
        })
    }

    fn with(mut v: Value, pointer: &str, new: Value) -> Value {
        *v.pointer_mut(pointer).expect("pointer exists") = new;
        v
    }

    fn set(mut v: Value, key: &str, new: Value) -> Value {
        v.as_object_mut().unwrap().insert(key.into(), new);
        v
    }

    fn errors(v: &Value) -> Vec<(String, String)> {
        match Manifest::from_value(v) {
            Ok(_) => Vec::new(),
            Err(d) => d
                .iter()
                .map(|d| (d.path.to_string(), d.message.clone()))
                .collect(),
        }
    }

    #[track_caller]
    fn assert_error(v: &Value, path: &str, fragment: &str) {
        let errs = errors(v);
        assert!(
            errs.iter().any(|(p, m)| p == path && m.contains(fragment)),
            "wanted {path}: …{fragment}…, got {errs:#?}"
        );
    }

    #[test]
    fn minimal_manifest_parses_with_defaults() {
        let m = Manifest::from_value(&minimal()).unwrap();
        assert_eq!(m.activation, Activation::Mention);
        assert_eq!(m.name.to_string(), "acme/coder");
        assert!(m.capabilities.is_empty());
        assert_eq!(m.source.kind(), "remote");
    }

    #[test]
    fn to_json_bytes_is_compact_and_ordered() {
        let m = Manifest::from_value(&minimal()).unwrap();
        let text = String::from_utf8(m.to_json_bytes()).unwrap();
        assert!(
            text.starts_with(
                r#"{"schemaVersion":1,"name":"acme/coder","version":"1.0.0","id":"@coder""#
            ),
            "{text}"
        );
        assert!(!text.contains('\n'));
        assert_eq!(Manifest::from_json(&text).unwrap(), m);
        assert_eq!(m.digest(), Digest::of(text.as_bytes()));
    }

    #[rstest]
    #[case("/name", json!("Acme Corp/coder"), "name", "publisher `Acme Corp` contains a space")]
    #[case("/version", json!("^1.0"), "version", "is a version range")]
    #[case("/version", json!("one"), "version", "is not a semver version")]
    #[case("/version", json!("1.0.0+build5"), "version", "build metadata")]
    #[case("/id", json!("@user"), "id", "reserved for the floor")]
    #[case("/id", json!("@all"), "id", "reserved for the floor")]
    #[case("/id", json!("@ofc"), "id", "reserved for the floor")]
    #[case("/id", json!("@tool-runner"), "id", "reserved for the floor")]
    #[case("/id", json!("coder"), "id", "must start with `@`")]
    #[case("/displayName", json!(""), "displayName", "must not be empty")]
    #[case("/displayName", json!("a\nb"), "displayName", "single line")]
    #[case("/tagline", json!("x".repeat(201)), "tagline", "201 characters long, more than the limit of 200")]
    #[case("/tagline", json!("safe \u{202E}txt.exe"), "tagline", "bidirectional override")]
    #[case("/description", json!("x".repeat(4001)), "description", "limit of 4000")]
    #[case("/description", json!("nul\u{0}"), "description", "control character")]
    #[case("/schemaVersion", json!(2), "schemaVersion", "unsupported schemaVersion 2")]
    #[case("/schemaVersion", json!("1"), "schemaVersion", "wrong type")]
    #[case("/source/type", json!("ftp"), "source.type", "unknown source type `ftp`")]
    fn field_rules(
        #[case] pointer: &str,
        #[case] value: Value,
        #[case] path: &str,
        #[case] msg: &str,
    ) {
        assert_error(&with(minimal(), pointer, value), path, msg);
    }

    #[rstest]
    #[case("readme", json!("x".repeat(MAX_README_BYTES + 1)), "readme", "bytes long")]
    #[case("license", json!("MIT; rm -rf"), "license", "SPDX")]
    #[case("homepage", json!("ftp://x.org"), "homepage", "has scheme `ftp`")]
    #[case("homepage", json!("javascript:alert(1)"), "homepage", "not an absolute URL")]
    #[case("repository", json!("https://user:pw@github.com/x"), "repository", "credentials")]
    #[case("repository", json!("https://git hub.com"), "repository", "contains a space")]
    #[case("keywords", json!(vec!["k"; 31]), "keywords", "31 entries, more than the limit of 30")]
    #[case("keywords", json!(["data", "Data"]), "keywords[1]", "duplicate keyword")]
    #[case("keywords", json!(["x".repeat(41)]), "keywords[0]", "limit of 40")]
    #[case("examples", json!(vec!["e"; 21]), "examples", "limit of 20")]
    #[case("examples", json!(["x".repeat(501)]), "examples[0]", "limit of 500")]
    #[case("activation", json!("sometimes"), "activation", "unknown variant `sometimes`")]
    #[case("providesMcp", json!({"url": "file:///etc/passwd"}), "providesMcp.url", "scheme `file`")]
    #[case("providesMcp", json!({"url": "mcp://x.dev/t", "capabilities": ["a b"]}), "providesMcp.capabilities[0]", "tool name")]
    #[case("requires", json!({"tools": ["t", "t"]}), "requires.tools[1]", "duplicate tool name")]
    #[case("requires", json!({"model": ""}), "requires.model", "must not be empty")]
    #[case("requires", json!({"gpu": true}), "requires.gpu", "unknown field `gpu`")]
    #[case("pricing", json!({"currency": "USD"}), "pricing", "set `perHour` or `perMillionTokens`")]
    #[case("pricing", json!({"perHour": -1, "currency": "USD"}), "pricing.perHour", "between 0 and")]
    #[case("pricing", json!({"perHour": 1, "currency": "usd"}), "pricing.currency", "ISO 4217")]
    #[case("extra", json!(1), "extra", "unknown field `extra`")]
    fn optional_field_rules(
        #[case] key: &str,
        #[case] value: Value,
        #[case] path: &str,
        #[case] msg: &str,
    ) {
        assert_error(&set(minimal(), key, value), path, msg);
    }

    #[test]
    fn missing_field_names_the_field() {
        let mut v = minimal();
        v.as_object_mut().unwrap().remove("tagline");
        assert_error(&v, "tagline", "missing field `tagline`");
        let v = set(minimal(), "source", json!({"type": "docker", "port": 8080}));
        assert_error(&v, "source.image", "missing field `image`");
    }

    fn cap(name: &str, input: Value) -> Value {
        json!({"name": name, "description": "does things", "inputSchema": input, "outputSchema": {}})
    }

    #[rstest]
    #[case(json!({"type": "strin"}), "is not a valid JSON Schema")]
    #[case(json!({"type": "object", "properties": {"a": {"minLength": -1}}}), "is not a valid JSON Schema")]
    #[case(json!({"$ref": "https://evil.example/schema.json"}), "refers outside the schema")]
    #[case(json!({"properties": {"a": {"$ref": "other.json#/x"}}}), "refers outside the schema")]
    #[case(json!({"$ref": "#/definitions/missing"}), "is not a valid JSON Schema")]
    #[case(json!({"$schema": "https://example.com/my-meta"}), "not a JSON Schema draft ofc knows")]
    #[case(json!({"type": "string", "pattern": "(unclosed"}), "is not a valid JSON Schema")]
    #[case(json!("string"), "must be a JSON Schema object")]
    #[case(json!(null), "must be a JSON Schema object")]
    fn bad_schemas_are_refused(#[case] schema: Value, #[case] msg: &str) {
        let v = set(
            minimal(),
            "capabilities",
            json!([cap("ok", json!({})), cap("bad", schema)]),
        );
        let errs = errors(&v);
        assert!(
            errs.iter()
                .any(|(p, m)| p.starts_with("capabilities[1].inputSchema") && m.contains(msg)),
            "wanted …{msg}…, got {errs:#?}"
        );
    }

    #[test]
    fn good_schemas_are_accepted() {
        let schemas = [
            json!({}),
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"type": "integer"}}, "$ref": "#/definitions/a"}),
            json!({"$defs": {"n": {"type": "number"}}, "properties": {"x": {"$ref": "#/$defs/n"}}, "enum": [{"$ref": "https://data.not.a.ref"}]}),
        ];
        for s in schemas {
            let v = set(minimal(), "capabilities", json!([cap("c", s.clone())]));
            assert_eq!(errors(&v), Vec::<(String, String)>::new(), "{s}");
        }
    }

    #[test]
    fn capability_rules() {
        let v = set(
            minimal(),
            "capabilities",
            json!([
                cap("search", json!({})),
                cap("Search", json!({})),
                cap("bad name", json!({}))
            ]),
        );
        assert_error(
            &v,
            "capabilities[1].name",
            "duplicate capability name `Search`",
        );
        assert_error(&v, "capabilities[2].name", "contains ' '");
        let many: Vec<Value> = (0..65).map(|i| cap(&format!("c{i}"), json!({}))).collect();
        assert_error(
            &set(minimal(), "capabilities", json!(many)),
            "capabilities",
            "limit of 64",
        );
        let mut c = cap("c", json!({}));
        c["authorizedRequesters"] = json!(["@data", "nope"]);
        assert_error(
            &set(minimal(), "capabilities", json!([c])),
            "capabilities[0].authorizedRequesters[1]",
            "must start with `@`",
        );
        let mut c = cap("c", json!({}));
        c["authorizedRequesters"] = Value::Null;
        assert!(errors(&set(minimal(), "capabilities", json!([c]))).is_empty());
        let mut c = cap("c", json!({}));
        c["input_schema"] = json!({});
        assert_error(
            &set(minimal(), "capabilities", json!([c])),
            "capabilities[0].input_schema",
            "unknown field",
        );
    }

    #[test]
    fn all_rule_violations_are_reported_together() {
        let v = set(
            set(
                with(minimal(), "/tagline", json!("")),
                "homepage",
                json!("ftp://x"),
            ),
            "keywords",
            json!(["", "ok"]),
        );
        let paths: Vec<String> = errors(&v).into_iter().map(|(p, _)| p).collect();
        assert_eq!(paths, ["tagline", "homepage", "keywords[0]"]);
    }

    fn src(s: Value) -> Value {
        set(minimal(), "source", s)
    }

    fn digest() -> String {
        format!("sha256:{}", "a".repeat(64))
    }

    #[rstest]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}))]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "cards/coder.md"}))]
    #[case(json!({"type": "pip", "package": "ofc-coder", "version": "1.2.0", "entryPoint": "ofc-coder"}))]
    #[case(json!({"type": "pip", "package": "Ofc.Coder_2", "version": "1!2.0rc1.post3.dev4+local.7", "index": "http://127.0.0.1:3141/simple", "entryPoint": "ofc_coder.main:run"}))]
    #[case(json!({"type": "npm", "package": "@acme/coder", "version": "1.2.3-beta.1", "registry": "https://registry.npmjs.org", "bin": "coder"}))]
    #[case(json!({"type": "docker", "image": format!("ghcr.io/acme/coder:1.2@{}", digest()), "port": 8080}))]
    #[case(json!({"type": "docker", "image": format!("localhost:5000/coder@{}", digest()), "port": 1}))]
    #[case(json!({"type": "remote", "endpoint": "http://localhost:8080/ofc"}))]
    #[case(json!({"type": "remote", "endpoint": "http://[::1]:8080"}))]
    fn good_sources(#[case] s: Value) {
        assert_eq!(errors(&src(s)), Vec::<(String, String)>::new());
    }

    #[rstest]
    #[case(json!({"type": "bundle", "digest": "sha256:xyz", "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}), "source.digest", "not a hex digit")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 0, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}), "source.size", "more than 0")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": -1, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}), "source.size", "")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": "application/gzip", "entrypoint": "agent.yaml"}), "source.mediaType", "not the bundle media type")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "../agent.yaml"}), "source.entrypoint", "`..` component")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "/agent.yaml"}), "source.entrypoint", "relative")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "a\\agent.yaml"}), "source.entrypoint", "backslash")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "C:agent.yaml"}), "source.entrypoint", "contains `:`")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "run.sh"}), "source.entrypoint", "AgentCard")]
    #[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml", "extra": 1}), "source.extra", "unknown field `extra`")]
    #[case(json!({"type": "pip", "package": "x", "version": ">=1.0", "entryPoint": "x"}), "source.version", "version range")]
    #[case(json!({"type": "pip", "package": "x", "version": "~=1.0", "entryPoint": "x"}), "source.version", "version range")]
    #[case(json!({"type": "pip", "package": "x", "version": "*", "entryPoint": "x"}), "source.version", "version range")]
    #[case(json!({"type": "pip", "package": "x", "version": "1.0-beta", "entryPoint": "x"}), "source.version", "normal form `1.0b0`")]
    #[case(json!({"type": "pip", "package": "-x", "version": "1.0", "entryPoint": "x"}), "source.package", "not a Python package name")]
    #[case(json!({"type": "pip", "package": "x", "version": "1.0", "entryPoint": "-x"}), "source.entryPoint", "console script")]
    #[case(json!({"type": "pip", "package": "x", "version": "1.0", "entryPoint": "x", "index": "http://pypi.example.com/simple"}), "source.index", "use `https://`")]
    #[case(json!({"type": "npm", "package": "Coder", "version": "1.0.0", "bin": "x"}), "source.package", "contains 'C'")]
    #[case(json!({"type": "npm", "package": "@acme", "version": "1.0.0", "bin": "x"}), "source.package", "`@scope/name`")]
    #[case(json!({"type": "npm", "package": "x", "version": "^1.0.0", "bin": "x"}), "source.version", "version range")]
    #[case(json!({"type": "npm", "package": "x", "version": "1.0.0", "bin": "--eval"}), "source.bin", "")]
    #[case(json!({"type": "docker", "image": "acme/coder:latest", "port": 8080}), "source.image", "not pinned by digest")]
    #[case(json!({"type": "docker", "image": "acme/coder@sha256:abc", "port": 8080}), "source.image", "not pinned by a valid digest")]
    #[case(json!({"type": "docker", "image": format!("Acme/coder@{}", digest()), "port": 8080}), "source.image", "invalid repository component")]
    #[case(json!({"type": "docker", "image": format!("acme/coder@{}", digest()), "port": 0}), "source.port", "between 1 and 65535")]
    #[case(json!({"type": "docker", "image": format!("acme/coder@{}", digest()), "port": 70000}), "source.port", "")]
    #[case(json!({"type": "remote", "endpoint": "http://agent.example.com/ofc"}), "source.endpoint", "use `https://`")]
    #[case(json!({"type": "remote", "endpoint": "https://agent.example.com/ofc/"}), "source.endpoint", "must not end with `/`")]
    #[case(json!({"type": "remote", "endpoint": "https://agent.example.com/ofc?x=1"}), "source.endpoint", "query")]
    #[case(json!({"type": "remote", "endpoint": "https:///ofc"}), "source.endpoint", "no host")]
    #[case(json!({"type": "remote"}), "source.endpoint", "missing field `endpoint`")]
    #[case(json!({"endpoint": "https://x.org"}), "source.type", "missing field `type`")]
    #[case(json!("remote"), "source", "must be an object")]
    fn bad_sources(#[case] s: Value, #[case] path: &str, #[case] msg: &str) {
        assert_error(&src(s), path, msg);
    }

    #[test]
    fn positions_point_at_the_field() {
        let text = "{\n  \"schemaVersion\": 1,\n  \"name\": \"acme/coder\",\n  \"version\": \"1.0.0\",\n  \"id\": \"@coder\",\n  \"displayName\": \"C\",\n  \"tagline\": \"\",\n  \"description\": \"d\",\n  \"source\": {\"type\": \"docker\", \"image\": \"x\", \"port\": 1}\n}";
        let err = Manifest::from_json(text).unwrap_err();
        let tagline = err
            .iter()
            .find(|d| d.path.to_string() == "tagline")
            .unwrap();
        assert_eq!(tagline.position.map(|p| (p.line, p.col)), Some((7, 14)));
        let image = err
            .iter()
            .find(|d| d.path.to_string() == "source.image")
            .unwrap();
        assert_eq!(image.position.map(|p| p.line), Some(9));
    }

    #[test]
    fn oversized_text_is_refused_before_parsing() {
        let text = " ".repeat(MAX_MANIFEST_BYTES + 1);
        let err = Manifest::from_json(&text).unwrap_err();
        assert!(err.to_string().contains("more than the limit"), "{err}");
    }

    #[test]
    fn non_objects_and_garbage_are_refused() {
        for text in ["[]", "null", "\"x\"", "{", "", "{\"schemaVersion\": 1e400}"] {
            assert!(Manifest::from_json(text).is_err(), "{text}");
        }
    }

    #[rstest]
    #[case("1.0", true)]
    #[case("1.2.3", true)]
    #[case("2!1.0rc1", true)]
    #[case("1.0.post2.dev3", true)]
    #[case("1.0a1", true)]
    #[case("1.0+ubuntu.1", true)]
    #[case("1.0.", false)]
    #[case("v1.0", false)]
    #[case("1.0rc", false)]
    #[case("1.0+", false)]
    #[case("!1.0", false)]
    #[case("1.0-RC1", false)]
    #[case("", false)]
    fn pep440(#[case] v: &str, #[case] ok: bool) {
        assert_eq!(is_pep440_exact(v), ok, "{v}");
    }

    #[test]
    fn loopback_hosts() {
        // Plain http:// is only for this machine, in the URLs a client fetches from.
        for h in [
            "localhost",
            "localhost:80",
            "127.0.0.1",
            "127.1.2.3:9",
            "[::1]",
            "[::1]:8080",
        ] {
            let u = format!("http://{h}/x");
            assert_eq!(url_problem(&u, UrlRule::Fetch), None, "{h}");
        }
        for h in [
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "128.0.0.1",
            "[::2]",
            "example.com",
        ] {
            let u = format!("http://{h}/x");
            let p = url_problem(&u, UrlRule::Fetch).unwrap_or_default();
            assert!(p.contains("other than localhost"), "{h}: {p}");
        }
    }
}
