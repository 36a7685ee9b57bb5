//! An agent folder made into a signed manifest (and its bundle) without the network: the
//! folder's entrypoint (`agent.yaml`, A2A `agent-card.json`, MCP `server.json` or one
//! AgentCard), the manifest built from it, the deterministic bundle and the signature.
//! `ofc publish` uploads what this builds; a `local` pull validates a folder with it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use index_schema::a2a_card::{self, A2aCard};
use index_schema::agent_yaml::{AgentYaml, ManifestDefaults};
use index_schema::envelope::Envelope;
use index_schema::manifest::{BundleSource, Manifest, Source, parse_exact_version};
use index_schema::mcp_server_json::{self, ServerJson};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::AgentName;
use index_schema::{Diagnostics, source};

use crate::detect::{DocumentKind, detect, in_fast_agent_card_folder};
use crate::output::UserError;
use crate::pack::{self, PackLimits, Packed};

/// What an agent folder built to: the manifest, its signed envelope and the bundle.
#[derive(Debug)]
pub struct Prepared {
    /// The manifest.
    pub manifest: Manifest,
    /// Its signed envelope.
    pub envelope: Envelope,
    /// The bundle, for `bundle` sources.
    pub bundle: Option<Packed>,
    /// The file the manifest came from, relative to the folder.
    pub entrypoint: String,
    /// What that file has that ofc accepts but does not act on, `file:line:col: field: …`.
    pub warnings: Vec<String>,
}

/// Finds the folder's `agent.yaml`, A2A `agent-card.json` or single AgentCard (at its root).
/// In fast-agent's card folders every YAML file is a card, `agent.yaml` too.
pub fn find_entrypoint(dir: &Path) -> Result<(PathBuf, DocumentKind)> {
    for name in ["agent.yaml", "agent.yml"] {
        let p = dir.join(name);
        if p.is_file() && !in_fast_agent_card_folder(&p) {
            return Ok((p, DocumentKind::AgentYaml));
        }
    }
    let a2a = dir.join(a2a_card::FILE_NAME);
    if a2a.is_file() {
        return Ok((a2a, DocumentKind::A2aCard));
    }
    let server = dir.join(mcp_server_json::FILE_NAME);
    if server.is_file() {
        return Ok((server, DocumentKind::McpServerJson));
    }
    let mut cards = Vec::new();
    let rd = fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for e in rd {
        let p = e?.path();
        if !p.is_file() {
            continue;
        }
        let text = fs::read_to_string(&p).unwrap_or_default();
        if let Some(kind) = detect(&p, &text).filter(|k| k.is_card()) {
            cards.push((p, kind));
        }
    }
    cards.sort();
    match cards.len() {
        0 => bail!(
            UserError::new(format!("{} has no agent.yaml or AgentCard", dir.display()))
                .hint("create one with `ofc init` (or `ofc init --card`)")
        ),
        1 => Ok(cards.remove(0)),
        _ => bail!(
            UserError::new(format!(
                "{} has {} AgentCards; a bundle publishes exactly one agent",
                dir.display(),
                cards.len()
            ))
            .hint("put each agent in its own folder, or add `agent.yaml` to choose")
        ),
    }
}

/// Builds, packs and signs (through `sign`) without touching the network.
pub fn prepare(
    dir: &Path,
    name: Option<&str>,
    version: Option<&str>,
    sign: impl FnOnce(&Manifest) -> Envelope,
) -> Result<Prepared> {
    // A lone document that names its own source (a server.json, an A2A card): nothing to pack.
    let lone = if dir.is_file() {
        let text =
            fs::read_to_string(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        match detect(dir, &text) {
            Some(k @ (DocumentKind::McpServerJson | DocumentKind::A2aCard)) => Some(k),
            _ => bail!(
                UserError::new(format!(
                    "{} is a file; publish takes a folder, or a server.json or agent-card.json",
                    dir.display()
                ))
                .hint("give the agent's folder")
            ),
        }
    } else if dir.is_dir() {
        None
    } else {
        bail!(UserError::new(format!(
            "{} is not a directory",
            dir.display()
        )));
    };
    let (file, kind) = match lone {
        Some(k) => (dir.to_path_buf(), k),
        None => find_entrypoint(dir)?,
    };
    let entrypoint = file
        .file_name()
        .and_then(|n| n.to_str())
        .context("the entrypoint's name is not UTF-8")?
        .to_string();
    let packed = match lone {
        Some(_) => None,
        None => Some(
            pack::pack_dir(dir, &PackLimits::default())
                .with_context(|| format!("cannot pack {}", dir.display()))?,
        ),
    };

    let mut defaults = ManifestDefaults::default();
    if let Some(n) = name {
        defaults.name = Some(AgentName::parse(n).map_err(|e| {
            UserError::new(format!("invalid --name `{n}`: {e}"))
                .hint("give the hub name as `publisher/agent`")
        })?);
    }
    if let Some(v) = version {
        defaults.version = Some(parse_exact_version(v).map_err(|e| {
            UserError::new(format!("invalid --version `{v}`: {e}"))
                .hint("give an exact semver version such as `1.2.3`")
        })?);
    }
    let readme = dir.join("README.md");
    if readme.is_file() {
        defaults.readme = fs::read_to_string(&readme).ok();
    }
    if let Some(packed) = &packed {
        defaults.source = Some(Source::Bundle(BundleSource {
            digest: packed.digest,
            size: packed.bytes.len() as u64,
            media_type: AGENT_BUNDLE_V1.to_string(),
            entrypoint: entrypoint.clone(),
        }));
    }

    let mut warnings = Diagnostics::default();
    let built: Result<Manifest, Diagnostics> = match kind {
        DocumentKind::AgentYaml => {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            source::parse_yaml(&text).and_then(|doc| {
                let y = AgentYaml::from_doc(&doc)?;
                warnings = doc.locate(y.warnings());
                y.to_manifest(defaults)
            })
        }
        // A remote agent: the manifest points at the card's `url`, no bundle is uploaded.
        DocumentKind::A2aCard => {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            A2aCard::from_json(&text).and_then(|c| {
                warnings = c.warnings();
                c.to_manifest(defaults, &entrypoint)
            })
        }
        // The server's package (npm, pip, docker) or remote; no bundle is uploaded.
        DocumentKind::McpServerJson => {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            ServerJson::from_json(&text).and_then(|c| {
                warnings = c.warnings();
                c.to_manifest(defaults, &entrypoint)
            })
        }
        _ => crate::cards::load_file(&file).and_then(|c| {
            warnings = c.warnings;
            c.card.to_manifest(defaults)
        }),
    };
    let manifest = built.map_err(|d| {
        let mut msg = format!("{} cannot be published:", file.display());
        for x in d.iter() {
            msg.push_str(&format!("\n  {x}"));
        }
        let mut e = UserError::new(msg);
        // A server.json's `packages` are its own; only agent.yaml has `package:`.
        let names_package = kind != DocumentKind::McpServerJson
            && d.iter().any(|x| x.path.to_string().contains("package"));
        if names_package || d.iter().any(|x| x.path.to_string() == "name") {
            e = e.hint("pass `--name publisher/agent` or set `package:` in agent.yaml");
        }
        if d.iter().any(|x| x.path.to_string() == "version") {
            e = e.hint("pass `--version 1.2.3` or set `version:` in the file");
        }
        e
    })?;
    let bundle = packed.filter(|_| matches!(manifest.source, Source::Bundle(_)));
    let envelope = sign(&manifest);
    Ok(Prepared {
        manifest,
        envelope,
        bundle,
        entrypoint,
        warnings: warnings
            .iter()
            .map(|w| format!("{}:{w}", file.display()))
            .collect(),
    })
}
