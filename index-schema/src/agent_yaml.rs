//! `agent.yaml`: one agent, defined the way the OFC spec's "Agent & Blueprint Configuration"
//! section does (`shared/seeds/000`), plus the fields ofc needs to publish it to a hub.
//!
//! Fields from the OFC spec:
//!
//! | field | meaning |
//! |---|---|
//! | `id` | the floor handle, `"@coder"` (required; `@user` and `@floor-manager` are refused) |
//! | `name` | display name, `"Qwen3 Coder"` |
//! | `model`, `endpoint` | the LLM and its OpenAI-compatible endpoint (`http(s)://…`) |
//! | `prompt` | the system prompt |
//! | `activation` | `mention` (answers when `@id?` is written) or `always` |
//! | `memory` | `buffer`, `window`, `summary` or `rag` |
//! | `context_window` | messages kept in context, a positive integer |
//! | `tools` | tool / workstation names the agent uses |
//!
//! Additions so that an `agent.yaml` can be published (all optional, snake_case like the rest):
//!
//! | field | meaning |
//! |---|---|
//! | `version` | semver version of this release (`ofc publish` may supply it instead) |
//! | `publisher` | the hub namespace; the agent part of the name is then the `id` without `@` |
//! | `package` | the full hub name `publisher/agent` (instead of `publisher`; not both) |
//! | `tagline`, `description`, `keywords`, `examples`, `license`, `homepage`, `repository` | listing metadata, as in the manifest |
//! | `capabilities` | Agent Lobby capability objects: `name`, `description`, `input_schema`, `output_schema`, `keywords`, `authorized_requesters`; a plain string is short for `{name: …}` |
//! | `temperature` | sampling temperature, 0 to 2 |
//! | `can_use_tools` | whether the LLM may call tools |
//! | `env` | environment for the agent process (scalar values are taken as strings) |
//! | `command`, `args` | run a local process that serves the OFC agent API (a process agent) |
//! | `source` | how a packaged agent is installed: `{type: pip, package, version, index?, entry_point?}`, `{type: npm, package, version, registry?, bin?}`, `{type: docker, image, port?}` or `{type: remote, endpoint}` |
//!
//! Rules: unknown fields are refused; an agent says how it runs with at least one of `model`,
//! `command` or `source`, and takes only the fields of that kind (`agent_yaml/fields.rs`): an
//! LLM agent's `env` or `args`, a process or packaged agent's `prompt`, `endpoint`,
//! `temperature`… are refused, `command` and `source` exclude each other; `tools` (and `model`
//! on an agent that runs its own) are published but not acted on, and [`AgentYaml::warnings`]
//! says so; `temperature` is within 0..=2; `context_window` is positive; `publisher` and
//! `package` exclude each other; capability names are unique.

use std::fmt;

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use semver::Version;

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::manifest::{
    self, DockerSource, Manifest, NpmSource, PipSource, RemoteSource, Requires, Source,
};
use crate::name::{self, AgentHandle, AgentName};
use crate::source;

mod fields;
#[cfg(test)]
mod fields_tests;

pub use crate::manifest::Activation;

/// How an LLM agent keeps the conversation in its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    /// Every message.
    Buffer,
    /// The last `context_window` messages.
    Window,
    /// A running summary plus the last messages.
    Summary,
    /// Retrieval over the history.
    Rag,
}

/// An Agent Lobby capability (`shared/seeds/001`, section 7), in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Capability {
    /// Unique name, e.g. `find_cheapest_item_price_v2`.
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the request payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// JSON Schema of a successful response payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Discovery keywords.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Handles allowed to call it; absent means public.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorized_requesters: Option<Vec<AgentHandle>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CapabilityFields {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default)]
    output_schema: Option<Value>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    authorized_requesters: Option<Vec<AgentHandle>>,
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Capability;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a capability name or a capability object")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Capability, E> {
                Ok(Capability {
                    name: v.to_string(),
                    ..Capability::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Capability, A::Error> {
                let f = CapabilityFields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Capability {
                    name: f.name,
                    description: f.description,
                    input_schema: f.input_schema,
                    output_schema: f.output_schema,
                    keywords: f.keywords,
                    authorized_requesters: f.authorized_requesters,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// How a packaged agent is installed and started: the manifest's `source` in snake_case, minus
/// `bundle`, which the packer produces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum AgentSource {
    /// A Python package.
    Pip {
        /// Distribution name on the index.
        package: String,
        /// Exact PEP 440 version.
        version: String,
        /// Package index URL, when not PyPI.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<String>,
        /// Console script (or `module:function`) that serves the OFC agent API.
        entry_point: String,
        /// sha256 of the package's wheel: the publisher's pin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<name::Digest>,
    },
    /// An npm package.
    Npm {
        /// Package name.
        package: String,
        /// Exact semver version.
        version: String,
        /// Registry URL, when not the npm registry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        registry: Option<String>,
        /// The `bin` that serves the OFC agent API.
        bin: String,
        /// Integrity (`sha512-…`) of the package's tarball: the publisher's pin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        integrity: Option<String>,
    },
    /// A container image.
    Docker {
        /// Image reference pinned by digest (`repo[:tag]@sha256:…`).
        image: String,
        /// Container port that serves the OFC agent API.
        port: u16,
    },
    /// An agent hosted elsewhere.
    Remote {
        /// The `https://…/ofc` endpoint.
        endpoint: String,
    },
}

impl AgentSource {
    /// The manifest's source. Exact versions are checked here; everything else by
    /// [`Manifest::validate`].
    pub fn to_manifest(&self) -> Result<Source, Diagnostics> {
        let p = FieldPath::root();
        Ok(match self {
            AgentSource::Pip {
                package,
                version,
                index,
                entry_point,
                sha256,
            } => Source::Pip(PipSource {
                package: package.clone(),
                version: version.clone(),
                index: index.clone(),
                entry_point: entry_point.clone(),
                sha256: *sha256,
            }),
            AgentSource::Npm {
                package,
                version,
                registry,
                bin,
                integrity,
            } => Source::Npm(NpmSource {
                package: package.clone(),
                version: manifest::parse_exact_version(version)
                    .map_err(|e| Diagnostics::one(p.key("version"), e))?,
                registry: registry.clone(),
                bin: bin.clone(),
                integrity: integrity.clone(),
            }),
            AgentSource::Docker { image, port } => Source::Docker(DockerSource {
                image: image.clone(),
                port: *port,
            }),
            AgentSource::Remote { endpoint } => Source::Remote(RemoteSource {
                endpoint: endpoint.clone(),
            }),
        })
    }
}

/// What `ofc publish` supplies when the file does not say it. Values in the file win; these fill
/// the gaps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManifestDefaults {
    /// The hub name `publisher/agent`.
    pub name: Option<AgentName>,
    /// The publisher, combined with the file's agent name when `name` is not given.
    pub publisher: Option<String>,
    /// The floor handle (AgentCards; an `agent.yaml` always has its `id`).
    pub id: Option<AgentHandle>,
    /// The version being published.
    pub version: Option<Version>,
    /// Display name.
    pub display_name: Option<String>,
    /// One-line pitch.
    pub tagline: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Markdown documentation (e.g. the README next to the file).
    pub readme: Option<String>,
    /// SPDX license expression.
    pub license: Option<String>,
    /// Home page.
    pub homepage: Option<String>,
    /// Repository.
    pub repository: Option<String>,
    /// Search keywords (used when the file has none).
    pub keywords: Vec<String>,
    /// Where the code comes from, e.g. the bundle the packer built (digest, size, entrypoint).
    pub source: Option<Source>,
}

impl ManifestDefaults {
    /// The hub name, floor handle and version of a manifest made from a document of another
    /// format (`what`, e.g. "an A2A card"): each from these defaults when given, else the name
    /// from the publisher and the document's `slug`, the handle from the name's agent part, and
    /// the version from the document's `version` text (exact semver). Problems go to `d`, under
    /// `name_at` and `version_at`.
    pub(crate) fn identity(
        &self,
        what: &str,
        slug: &str,
        version: &str,
        name_at: &FieldPath,
        version_at: &FieldPath,
        d: &mut Diagnostics,
    ) -> (Option<AgentName>, Option<AgentHandle>, Option<Version>) {
        let name = match (&self.name, self.publisher.as_deref()) {
            (Some(n), _) => Some(n.clone()),
            (None, Some(publisher)) => match AgentName::new(publisher, slug) {
                Ok(n) => Some(n),
                Err(e) => {
                    d.push(
                        name_at.clone(),
                        format!("cannot be made into the agent part of a hub name: {e}"),
                    );
                    None
                }
            },
            (None, None) => {
                d.push(
                    name_at.clone(),
                    format!(
                        "publishing {what} needs its hub name `publisher/agent` (or the publisher)"
                    ),
                );
                None
            }
        };
        let id = match &self.id {
            Some(h) => Some(h.clone()),
            None => name
                .as_ref()
                .and_then(|n| match AgentHandle::new(n.agent()) {
                    Ok(h) => Some(h),
                    Err(e) => {
                        d.push(
                            name_at.clone(),
                            format!("cannot be used as a floor handle: {e}"),
                        );
                        None
                    }
                }),
        };
        let version = match &self.version {
            Some(v) => Some(v.clone()),
            None => match manifest::parse_exact_version(version) {
                Ok(v) => Some(v),
                Err(e) => {
                    d.push(
                        version_at.clone(),
                        format!("must be an exact semver version to publish (or pass one): {e}"),
                    );
                    None
                }
            },
        };
        (name, id, version)
    }
}

/// Translates a manifest field path (camelCase) into the path of the file field it came from.
/// `rename` maps whole leading segments (`displayName` → `name`); other keys become snake_case.
pub(crate) fn manifest_path_to_file(path: &FieldPath, rename: &[(&str, &str)]) -> FieldPath {
    let text = path.to_string();
    for (from, to) in rename {
        if text == *from
            || text.starts_with(&format!("{from}."))
            || text.starts_with(&format!("{from}["))
        {
            let rest = &text[from.len()..];
            return FieldPath::parse(&format!("{to}{}", snake_case(rest)));
        }
    }
    if path.is_root() {
        return path.clone();
    }
    FieldPath::parse(&snake_case(&text))
}

fn snake_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs the manifest's own rules and names the file's fields in what they report.
pub(crate) fn finish_manifest(
    m: Manifest,
    mut diags: Diagnostics,
    rename: &[(&str, &str)],
) -> Result<Manifest, Diagnostics> {
    for mut d in m.validate().0 {
        d.path = manifest_path_to_file(&d.path, rename);
        // A field already reported as missing is not reported again as empty.
        if !diags.iter().any(|x| x.path == d.path) {
            diags.0.push(d);
        }
    }
    diags.into_result(m)
}

/// A parsed `agent.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentYaml {
    /// Floor handle, `@coder`.
    pub id: AgentHandle,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// LLM model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// OpenAI-compatible endpoint of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `mention` or `always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// Conversation memory strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    /// Messages kept in context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Tools / workstations used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Release version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    /// Hub namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// Full hub name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<AgentName>,
    /// One-line pitch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagline: Option<String>,
    /// Longer description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Search keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// SPDX license expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Project home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Source repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Agent Lobby capabilities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<Capability>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Whether the model may call tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_use_tools: Option<bool>,
    /// Environment variables for the agent process.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty", with = "env_map")]
    pub env: IndexMap<String, String>,
    /// Process agent command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Process agent arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Packaged agent source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<AgentSource>,
}

impl AgentYaml {
    /// Parses and validates `agent.yaml` text.
    pub fn from_yaml(text: &str) -> Result<AgentYaml, Diagnostics> {
        Self::from_doc(&source::parse_yaml(text)?)
    }

    /// Validates an already parsed document (its positions locate [`AgentYaml::warnings`]).
    pub fn from_doc(doc: &source::SourceDoc) -> Result<AgentYaml, Diagnostics> {
        if doc.value.is_null() {
            return Err(Diagnostics::one(FieldPath::root(), "the file is empty"));
        }
        let shapes = refuse_lists_for_mappings(&doc.value, &["", "source"]);
        if !shapes.is_empty() {
            return Err(doc.locate(shapes));
        }
        let agent: AgentYaml = doc.deserialize().map_err(point_at_missing_fields)?;
        agent.validate().map_err(|d| doc.locate(d))?;
        Ok(agent)
    }

    /// Checks the rules that serde cannot express.
    pub fn validate(&self) -> Result<(), Diagnostics> {
        // First how it runs, and the fields that do not belong to that kind of agent.
        let mut d = self.entry_findings().errors;
        let root = FieldPath::root();
        if self.id.is_reserved() {
            d.push(
                root.key("id"),
                format!(
                    "`{}` belongs to the floor and cannot be an agent's id",
                    self.id
                ),
            );
        }
        for (field, value) in [
            ("name", &self.name),
            ("model", &self.model),
            ("prompt", &self.prompt),
            ("tagline", &self.tagline),
            ("description", &self.description),
            ("license", &self.license),
            ("command", &self.command),
        ] {
            if value.as_deref().is_some_and(|s| s.trim().is_empty()) {
                d.push(root.key(field), "must not be empty");
            }
        }
        for (field, value) in [
            ("endpoint", &self.endpoint),
            ("homepage", &self.homepage),
            ("repository", &self.repository),
        ] {
            if let Some(url) = value {
                check_http_url(url, &root.key(field), &mut d);
            }
        }
        if self.context_window == Some(0) {
            d.push(
                root.key("context_window"),
                "must be a positive number of messages",
            );
        }
        if let Some(t) = self.temperature {
            check_temperature(t, &root.key("temperature"), &mut d);
        }
        for (field, list) in [
            ("tools", &self.tools),
            ("keywords", &self.keywords),
            ("examples", &self.examples),
            ("args", &self.args),
        ] {
            for (i, item) in list.iter().enumerate() {
                if item.trim().is_empty() && field != "args" {
                    d.push(root.key(field).index(i), "must not be empty");
                }
            }
        }
        if let Some(p) = &self.publisher {
            if let Err(e) = name::check_publisher(p) {
                d.push(root.key("publisher"), e.to_string());
            }
            if self.package.is_some() {
                d.push(
                    root.key("package"),
                    "give either `package: publisher/agent` or `publisher`, not both",
                );
            }
        }
        if self.package.is_none()
            && self.publisher.is_some()
            && let Err(e) = name::check_agent(self.id.name())
        {
            d.push(
                root.key("id"),
                format!("cannot be used as the agent part of the hub name: {e}"),
            );
        }
        check_env(&self.env, &root.key("env"), &mut d);
        let mut seen = std::collections::HashMap::new();
        for (i, c) in self.capabilities.iter().enumerate() {
            let p = root.key("capabilities").index(i);
            if c.name.trim().is_empty()
                || c.name
                    .chars()
                    .any(|ch| ch.is_whitespace() || ch.is_control())
            {
                d.push(p.key("name"), "must be a non-empty name without spaces");
            } else if let Some(prev) = seen.insert(c.name.as_str(), i) {
                d.push(
                    p.key("name"),
                    format!(
                        "duplicate capability `{}` (also capabilities[{prev}])",
                        c.name
                    ),
                );
            }
            for (field, schema) in [
                ("input_schema", &c.input_schema),
                ("output_schema", &c.output_schema),
            ] {
                if let Some(s) = schema
                    && !s.is_object()
                    && !s.is_boolean()
                {
                    d.push(p.key(field), "must be a JSON Schema (a mapping)");
                }
            }
            for (k, kw) in c.keywords.iter().enumerate() {
                if kw.trim().is_empty() {
                    d.push(p.key("keywords").index(k), "must not be empty");
                }
            }
        }
        if let Some(src) = &self.source {
            check_source(src, &root.key("source"), &mut d);
        }
        d.into_result(())
    }

    /// The hub name: `package`, or `publisher` with the id's name; `None` when neither is given.
    pub fn agent_name(&self) -> Option<AgentName> {
        if let Some(p) = &self.package {
            return Some(p.clone());
        }
        let publisher = self.publisher.as_deref()?;
        AgentName::new(publisher, self.id.name()).ok()
    }

    /// The manifest `ofc publish` signs for this agent. The file's fields win; `defaults` fills
    /// what it lacks (name, version, the bundle source…). A field the manifest needs and neither
    /// gives is reported under the file's field name (`package`, `version`, `tagline`, …), as are
    /// the manifest's own rule violations.
    pub fn to_manifest(&self, defaults: ManifestDefaults) -> Result<Manifest, Diagnostics> {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        let name = self.agent_name().or(defaults.name).or_else(|| {
            defaults
                .publisher
                .as_deref()
                .and_then(|p| AgentName::new(p, self.id.name()).ok())
        });
        if name.is_none() {
            d.push(
                root.key("package"),
                "publishing needs the hub name: set `package: publisher/agent` or `publisher`",
            );
        }
        let version = self.version.clone().or(defaults.version);
        if version.is_none() {
            d.push(root.key("version"), "publishing needs a `version`");
        }
        let mut required = |field: &str, file: &Option<String>, fallback: Option<String>| {
            let v = file.clone().or(fallback);
            if v.is_none() {
                d.push(root.key(field), format!("publishing needs a `{field}`"));
            }
            v.unwrap_or_default()
        };
        let display_name = required("name", &self.name, defaults.display_name);
        let tagline = required("tagline", &self.tagline, defaults.tagline);
        let description = required("description", &self.description, defaults.description);
        let source = match &self.source {
            Some(s) => match s.to_manifest() {
                Ok(s) => Some(s),
                Err(e) => {
                    d.extend_under(&root.key("source"), e);
                    None
                }
            },
            None => defaults.source,
        };
        if source.is_none() && !d.iter().any(|x| x.path.to_string().starts_with("source")) {
            d.push(
                root.key("source"),
                "publishing needs a `source` (pip, npm, docker or remote), or a bundle built from \
                 this directory",
            );
        }
        let mut capabilities = Vec::with_capacity(self.capabilities.len());
        for (i, c) in self.capabilities.iter().enumerate() {
            if c.description.is_none() {
                d.push(
                    root.key("capabilities").index(i).key("description"),
                    "publishing needs a description for every capability",
                );
            }
            capabilities.push(manifest::Capability {
                name: c.name.clone(),
                description: c.description.clone().unwrap_or_default(),
                // The Agent Lobby allows placeholder schemas; `{}` accepts any payload.
                input_schema: c
                    .input_schema
                    .clone()
                    .unwrap_or_else(|| Value::Object(Default::default())),
                output_schema: c
                    .output_schema
                    .clone()
                    .unwrap_or_else(|| Value::Object(Default::default())),
                keywords: c.keywords.clone(),
                authorized_requesters: c.authorized_requesters.clone(),
            });
        }
        let requires = (self.model.is_some() || !self.tools.is_empty()).then(|| Requires {
            model: self.model.clone(),
            workstations: Vec::new(),
            tools: self.tools.clone(),
        });
        let (Some(name), Some(version), Some(source)) = (name, version, source) else {
            return Err(d);
        };
        let m = Manifest {
            schema_version: manifest::SCHEMA_VERSION,
            name,
            version,
            id: self.id.clone(),
            display_name,
            tagline,
            description,
            readme: defaults.readme,
            license: self.license.clone().or(defaults.license),
            homepage: self.homepage.clone().or(defaults.homepage),
            repository: self.repository.clone().or(defaults.repository),
            keywords: if self.keywords.is_empty() {
                defaults.keywords
            } else {
                self.keywords.clone()
            },
            examples: self.examples.clone(),
            activation: self.activation.unwrap_or_default(),
            capabilities,
            provides_mcp: None,
            requires,
            pricing: None,
            source,
            origin: None,
        };
        finish_manifest(
            m,
            d,
            &[
                ("displayName", "name"),
                ("name", "package"),
                ("requires.model", "model"),
                ("requires.tools", "tools"),
            ],
        )
    }

    /// The file written back as YAML.
    pub fn to_yaml(&self) -> String {
        match serde_json::to_value(self) {
            Ok(v) => emit::to_yaml(&v),
            // Every field serializes to JSON; a failure here would be a bug in a Serialize impl.
            Err(e) => format!("# cannot serialize agent.yaml: {e}\n"),
        }
    }
}

fn check_source(src: &AgentSource, p: &FieldPath, d: &mut Diagnostics) {
    let word = |field: &str, v: &str, d: &mut Diagnostics| {
        if v.trim().is_empty() || v.chars().any(char::is_whitespace) {
            d.push(p.key(field), "must be non-empty and without spaces");
        }
    };
    match src {
        AgentSource::Pip {
            package,
            version,
            index,
            entry_point,
            ..
        } => {
            word("package", package, d);
            word("version", version, d);
            if let Some(i) = index {
                check_http_url(i, &p.key("index"), d);
            }
            word("entry_point", entry_point, d);
        }
        AgentSource::Npm {
            package,
            version,
            registry,
            bin,
            ..
        } => {
            word("package", package, d);
            if let Err(e) = manifest::parse_exact_version(version) {
                d.push(p.key("version"), e);
            }
            if let Some(r) = registry {
                check_http_url(r, &p.key("registry"), d);
            }
            word("bin", bin, d);
        }
        AgentSource::Docker { image, port } => {
            word("image", image, d);
            if !image.contains("@sha256:") {
                d.push(
                    p.key("image"),
                    "must be pinned by digest: `repository[:tag]@sha256:<digest>`",
                );
            }
            if *port == 0 {
                d.push(p.key("port"), "must be between 1 and 65535");
            }
        }
        AgentSource::Remote { endpoint } => check_http_url(endpoint, &p.key("endpoint"), d),
    }
}

/// Refuses anything but an `http://` or `https://` URL with a host: the common rule of
/// [`crate::http_url`] (a user name, query or fragment are the field's own business).
pub(crate) fn check_http_url(url: &str, path: &FieldPath, d: &mut Diagnostics) {
    if let Err(e) = crate::http_url::parse(url, crate::http_url::Rules::ANY) {
        d.push(
            path.clone(),
            format!("must be an http:// or https:// URL ({e})"),
        );
    }
}

/// Refuses temperatures outside 0..=2.
pub(crate) fn check_temperature(t: f64, path: &FieldPath, d: &mut Diagnostics) {
    if !(0.0..=2.0).contains(&t) {
        d.push(path.clone(), format!("must be between 0 and 2, not {t}"));
    }
}

/// Refuses environment variable names that a shell could not set.
pub(crate) fn check_env(env: &IndexMap<String, String>, path: &FieldPath, d: &mut Diagnostics) {
    for k in env.keys() {
        let mut chars = k.chars();
        let ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            d.push(
                path.key(k.clone()),
                "is not a valid environment variable name (letters, digits and `_`, not starting with a digit)",
            );
        }
    }
}

/// serde reports a missing field at its parent; name the field itself.
pub(crate) fn point_at_missing_fields(mut diags: Diagnostics) -> Diagnostics {
    for d in &mut diags.0 {
        if let Some(rest) = d.message.strip_prefix("missing field `")
            && let Some(end) = rest.find('`')
        {
            let field = rest[..end].to_string();
            d.path = d.path.key(field);
        }
    }
    diags
}

/// Refuses lists where a mapping is expected. serde's derived structs also accept a list of
/// field values in order, which would let `- a` read as `name: a`; ofc's documents are mappings.
/// `patterns` name the places that hold mappings: `defaults`, `workstations[]`,
/// `floor_manager.policies[]` (`[]` = every item), `""` = the document itself.
pub(crate) fn refuse_lists_for_mappings(value: &Value, patterns: &[&str]) -> Diagnostics {
    fn walk(v: &Value, segs: &[&str], path: FieldPath, d: &mut Diagnostics) {
        let Some((first, rest)) = segs.split_first() else {
            if v.is_array() {
                d.push(path, "must be a mapping, not a list");
            }
            return;
        };
        let (key, each) = match first.strip_suffix("[]") {
            Some(k) => (k, true),
            None => (*first, false),
        };
        let Some(child) = v.as_object().and_then(|m| m.get(key)) else {
            return;
        };
        let child_path = path.key(key);
        if each {
            if let Value::Array(items) = child {
                for (i, item) in items.iter().enumerate() {
                    walk(item, rest, child_path.index(i), d);
                }
            }
        } else {
            walk(child, rest, child_path, d);
        }
    }
    let mut d = Diagnostics::default();
    for p in patterns {
        let segs: Vec<&str> = p.split('.').filter(|s| !s.is_empty()).collect();
        walk(value, &segs, FieldPath::root(), &mut d);
    }
    d
}

/// `env` mappings: string values, with numbers and booleans taken as their text.
pub(crate) mod env_map {
    use std::fmt;

    use indexmap::IndexMap;
    use serde::de::{self, Deserializer, MapAccess, Visitor};
    use serde::{Deserialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        map: &IndexMap<String, String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(map)
    }

    struct ScalarText(String);

    impl<'de> Deserialize<'de> for ScalarText {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = ScalarText;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string, number or boolean")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<ScalarText, E> {
                    Ok(ScalarText(v.to_string()))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<ScalarText, E> {
                    Ok(ScalarText(v.to_string()))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<ScalarText, E> {
                    Ok(ScalarText(v.to_string()))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<ScalarText, E> {
                    Ok(ScalarText(v.to_string()))
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<ScalarText, E> {
                    Ok(ScalarText(v.to_string()))
                }
            }
            d.deserialize_any(V)
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<IndexMap<String, String>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IndexMap<String, String>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of variable name to value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut out = IndexMap::new();
                while let Some((k, v)) = m.next_entry::<String, ScalarText>()? {
                    out.insert(k, v.0);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests;

pub(crate) mod emit;
