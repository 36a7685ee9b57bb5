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
use crate::name::{AgentHandle, AgentName, Digest, shown};
use crate::source;

mod checks;

pub use checks::is_bidi_control;

use checks::{
    UrlRule, check_count, check_json_schema, check_keywords, check_license, check_line,
    check_manifest_version, check_names, check_pricing, check_source, check_text, check_url,
    ident_problem,
};

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
        if self.format == Self::A2A_AGENT_CARD {
            crate::a2a_card::check_kept(&self.fields, &path.key("fields"), d);
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
    /// Must be [`AGENT_BUNDLE_V1`](crate::media_types::AGENT_BUNDLE_V1).
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

#[cfg(test)]
mod tests;
