//! `ofc publish [DIR] [--dry-run]`: builds the manifest from the folder's `agent.yaml` or
//! AgentCard, packs the folder into a deterministic bundle, signs the manifest with a key from
//! `ofc keygen`, and uploads both to the hub (`PUT /api/v1/agents/{p}/{a}/versions/{v}`, token
//! from `OFC_TOKEN`). With `--dry-run` it prints the digests and uploads nothing.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use index_schema::Diagnostics;
use index_schema::agent_card::AgentCard;
use index_schema::agent_yaml::{AgentYaml, ManifestDefaults};
use index_schema::envelope::{Envelope, sign_manifest};
use index_schema::manifest::{BundleSource, Manifest, Source, parse_exact_version};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::AgentName;
use serde_json::json;

use crate::cli::PublishArgs;
use crate::config::{self, Paths};
use crate::detect::{DocumentKind, detect};
use crate::keys;
use crate::output::{ExitStatus, Output, UserError};
use crate::pack::{self, PackLimits, Packed};

/// Environment variable holding the hub API token.
pub const TOKEN_ENV: &str = "OFC_TOKEN";

/// What `publish` built.
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
}

/// Runs the verb.
pub fn run(args: &PublishArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let key = keys::load(&paths, &args.key)?;
    let prepared = prepare(
        &args.dir,
        args.name.as_deref(),
        args.version.as_deref(),
        |m| sign_manifest(m, &key),
    )?;
    let m = &prepared.manifest;
    let manifest_digest = prepared.envelope.payload_digest();
    let key_id = key.key_id();

    let uploaded = if args.dry_run {
        None
    } else {
        Some(upload(&prepared)?)
    };

    if out.json {
        out.json_value(&json!({
            "name": m.name.to_string(),
            "version": m.version.to_string(),
            "entrypoint": prepared.entrypoint,
            "manifestDigest": manifest_digest.to_string(),
            "source": m.source.kind(),
            "bundleDigest": prepared.bundle.as_ref().map(|b| b.digest.to_string()),
            "bundleSize": prepared.bundle.as_ref().map(|b| b.bytes.len()),
            "bundleFiles": prepared.bundle.as_ref().map(|b| b.entries.len()),
            "keyId": key_id.to_string(),
            "dryRun": args.dry_run,
            "hub": uploaded.as_ref().map(|_| config::hub_url()),
        }));
    } else {
        out.data(&format!("name      {}@{}", m.name, m.version));
        out.data(&format!("manifest  {manifest_digest}"));
        match &prepared.bundle {
            Some(b) => out.data(&format!(
                "bundle    {} ({} bytes, {} entries)",
                b.digest,
                b.bytes.len(),
                b.entries.len()
            )),
            None => out.data(&format!("source    {} (no bundle)", m.source.kind())),
        }
        out.data(&format!("key id    {key_id}"));
        if args.dry_run {
            out.status("dry run: nothing was uploaded");
        } else {
            out.status(&format!(
                "published {}@{} to {}",
                m.name,
                m.version,
                config::hub_url()
            ));
        }
    }
    Ok(ExitStatus::Success)
}

/// Finds the folder's `agent.yaml` or single AgentCard (at its root).
pub fn find_entrypoint(dir: &Path) -> Result<(PathBuf, DocumentKind)> {
    for name in ["agent.yaml", "agent.yml"] {
        let p = dir.join(name);
        if p.is_file() {
            return Ok((p, DocumentKind::AgentYaml));
        }
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
    if !dir.is_dir() {
        bail!(UserError::new(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let (file, kind) = find_entrypoint(dir)?;
    let entrypoint = file
        .file_name()
        .and_then(|n| n.to_str())
        .context("the entrypoint's name is not UTF-8")?
        .to_string();
    let packed = pack::pack_dir(dir, &PackLimits::default())
        .with_context(|| format!("cannot pack {}", dir.display()))?;

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
    defaults.source = Some(Source::Bundle(BundleSource {
        digest: packed.digest,
        size: packed.bytes.len() as u64,
        media_type: AGENT_BUNDLE_V1.to_string(),
        entrypoint: entrypoint.clone(),
    }));

    let built: Result<Manifest, Diagnostics> = match kind {
        DocumentKind::AgentYaml => {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            AgentYaml::from_yaml(&text).and_then(|y| y.to_manifest(defaults))
        }
        _ => AgentCard::load_file(&file).and_then(|c| c.card.to_manifest(defaults)),
    };
    let manifest = built.map_err(|d| {
        let mut msg = format!("{} cannot be published:", file.display());
        for x in d.iter() {
            msg.push_str(&format!("\n  {x}"));
        }
        let mut e = UserError::new(msg);
        if d.iter()
            .any(|x| x.path.to_string().contains("package") || x.path.to_string() == "name")
        {
            e = e.hint("pass `--name publisher/agent` or set `package:` in agent.yaml");
        }
        if d.iter().any(|x| x.path.to_string() == "version") {
            e = e.hint("pass `--version 1.2.3` or set `version:` in the file");
        }
        e
    })?;
    let bundle = matches!(manifest.source, Source::Bundle(_)).then_some(packed);
    let envelope = sign(&manifest);
    Ok(Prepared {
        manifest,
        envelope,
        bundle,
        entrypoint,
    })
}

/// Uploads to the hub's JSON publish endpoint.
fn upload(p: &Prepared) -> Result<serde_json::Value> {
    let token = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            UserError::new("publishing needs an API token")
                .hint(format!(
                    "set {TOKEN_ENV} to a token with publish rights for this namespace"
                ))
                .hint("or check everything locally with `ofc publish --dry-run`")
        })?;
    let hub = config::hub_url();
    let m = &p.manifest;
    let url = format!(
        "{hub}/api/v1/agents/{}/{}/versions/{}",
        m.name.publisher(),
        m.name.agent(),
        m.version
    );
    let envelope: serde_json::Value = serde_json::from_str(&p.envelope.to_json())?;
    let mut body = json!({ "envelope": envelope });
    if let Some(b) = &p.bundle {
        body["bundle"] = json!(STANDARD.encode(&b.bytes));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let resp = reqwest::Client::new()
            .put(&url)
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .map_err(|e| {
                anyhow::Error::new(e).context(
                    UserError::new(format!("cannot reach the hub at {hub}"))
                        .hint(format!("is the hub running? set {} to choose another", config::HUB_ENV)),
                )
            })?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::Null));
        }
        let detail = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| {
                v.get("error")
                    .and_then(|e| e.get("message").or(Some(e)))
                    .or_else(|| v.get("message"))
                    .map(|m| m.as_str().map(str::to_string).unwrap_or_else(|| m.to_string()))
            })
            .unwrap_or_else(|| text.chars().take(500).collect());
        let mut e = UserError::new(format!(
            "the hub refused {}@{}: {} {}",
            m.name,
            m.version,
            status.as_u16(),
            detail
        ));
        e = match status.as_u16() {
            401 => e.hint(format!("check {TOKEN_ENV}: the token is missing, expired or revoked")),
            403 => e.hint("the token or the signing key is not allowed to publish in this namespace; register the key with the hub"),
            409 => e.hint("versions are immutable: bump `version` and publish again"),
            _ => e,
        };
        Err(e.into())
    })
}
