//! `ofc publish [DIR|FILE] [--dry-run]`: builds the manifest from the folder's `agent.yaml`, A2A
//! `agent-card.json` (a `remote` agent at the card's `url`: nothing is uploaded but the signed
//! manifest), MCP Registry `server.json` (its npm/pypi/oci package or remote is the source:
//! nothing is uploaded either; also given as the file itself) or AgentCard, packs the folder into a deterministic bundle, signs the manifest with a key from
//! `ofc keygen`, and uploads both to the hub (token from `OFC_TOKEN` or `ofc login`): the bundle
//! as a blob of repository `{p}/{a}` through the hub's registry API (`POST
//! /v2/{p}/{a}/blobs/uploads/?digest=…`, the bytes streamed as the body, with a progress bar
//! when stderr is a terminal; skipped when `HEAD /v2/{p}/{a}/blobs/{digest}` finds it there),
//! then the signed manifest (`PUT /api/v1/agents/{p}/{a}/versions/{v}` without `bundle`). With
//! `--dry-run` it prints the digests and uploads nothing.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use anyhow::{Result, anyhow};
use index_schema::envelope::sign_manifest;
use index_schema::hub_api::{EnvelopeJson, ErrorCode, PublishRequest, path};
use index_schema::manifest::Manifest;
use serde_json::json;

use crate::config::Paths;
use crate::credentials::TOKEN_ENV;
use crate::hub::{self, Hub};
use crate::hub_url::HubUrl;
use crate::keys;
use crate::output::{ExitStatus, Output, UserError};
use crate::pack::Packed;
use crate::package::{Prepared, prepare};

/// Arguments of `ofc publish`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The agent folder, holding an `agent.yaml`, an `agent-card.json`, a `server.json` or one
    /// AgentCard; or a `server.json` or `agent-card.json` file itself.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// Build, pack and sign, print the digests, and upload nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The hub name `publisher/agent`, when the file does not give it.
    #[arg(long, value_name = "PUBLISHER/AGENT")]
    pub name: Option<String>,

    /// The version, when the file does not give it.
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,

    /// The signing key (see `ofc keygen`).
    #[arg(long, value_name = "NAME", default_value = crate::keys::DEFAULT_KEY)]
    pub key: String,

    /// Return as soon as the hub has the version, without waiting until its search finds it
    /// (by default `ofc publish` waits, up to `--wait-secs`, as `cargo publish` does).
    #[arg(long, conflicts_with = "wait_secs")]
    pub no_wait: bool,

    /// How long to wait for the hub's search to find the new version.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub wait_secs: u64,

    /// Trusted publishing: exchange the CI's OIDC ID token (`OFC_OIDC_TOKEN`, or GitHub
    /// Actions' own) for a token that may publish to this agent's namespace for 15 minutes,
    /// instead of a stored token. The namespace must trust the CI (`ofc namespace trust add`).
    #[arg(long, conflicts_with = "dry_run")]
    pub oidc: bool,

    /// With `--oidc` in GitHub Actions: the audience asked for.
    #[arg(long, value_name = "AUD", requires = "oidc",
        default_value = index_schema::hub_api::trusted::DEFAULT_AUDIENCE)]
    pub oidc_audience: String,
}

/// Upload chunk size, for the progress bar (the chunks share the bundle's bytes).
const CHUNK: usize = 64 * 1024;

/// Runs the verb.
pub fn run(args: &PublishArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    // Without a token, say so before packing and signing anything.
    let hub = if args.dry_run {
        None
    } else if args.oidc {
        // The token comes from the exchange, once the agent's namespace is known.
        Some(Hub::with_url(
            HubUrl::parse(&crate::hub_url::configured())?,
            None,
        )?)
    } else {
        let hub = Hub::from_env(&paths)?;
        if !hub.has_token() {
            return Err(UserError::new(format!(
                "publishing needs an API token for {}",
                hub.url
            ))
            .hint(format!(
                "run `ofc login` (or set {TOKEN_ENV}) with a token that may publish in this namespace"
            ))
            .hint("or check everything locally with `ofc publish --dry-run`")
            .into());
        }
        Some(hub)
    };
    let key = keys::load(&paths, &args.key)?;
    let prepared = prepare(
        &args.dir,
        args.name.as_deref(),
        args.version.as_deref(),
        |m| sign_manifest(m, &key),
    )?;
    for w in &prepared.warnings {
        out.status(&format!("warning: {w}"));
    }
    let m = &prepared.manifest;
    let manifest_digest = prepared.envelope.payload_digest();
    let key_id = key.key_id();

    let hub = match hub {
        Some(h) if args.oidc => Some(hub::runtime()?.block_on(
            crate::commands::trusted::exchange_for_publish(
                &h,
                m.name.publisher(),
                &args.oidc_audience,
                out,
            ),
        )?),
        other => other,
    };
    let fresh = match &hub {
        Some(hub) => upload(hub, &prepared)?,
        None => false,
    };
    // Like `cargo publish`: back only once the version can be found and pulled, so a search
    // right after finds it (the search index follows the database a moment later).
    let indexed = match &hub {
        Some(hub) if !args.no_wait => Some(wait_until_found(
            hub,
            m,
            std::time::Duration::from_secs(args.wait_secs.max(1)),
            out,
        )?),
        _ => None,
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
            "alreadyPublished": hub.is_some() && !fresh,
            "hub": hub.as_ref().map(|h| h.url.clone()),
            "searchable": indexed,
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
        match &hub {
            None => out.status("dry run: nothing was uploaded"),
            Some(hub) if fresh => out.status(&format!(
                "published {}@{} to {}",
                m.name, m.version, hub.url
            )),
            Some(hub) => out.status(&format!(
                "{}@{} is already on {} with this very manifest; nothing to do",
                m.name, m.version, hub.url
            )),
        }
    }
    Ok(ExitStatus::Success)
}

/// Waits (at most `limit`, telling the user after a second) until the hub serves the version
/// and its search finds the agent at the version the hub now calls latest. `Ok(true)` when found; when
/// the time runs out, a warning and `Ok(false)`: the version is published either way.
fn wait_until_found(
    hub: &Hub,
    m: &Manifest,
    limit: std::time::Duration,
    out: &mut Output,
) -> Result<bool> {
    use index_schema::hub_api::SearchParams;
    let rt = hub::runtime()?;
    let name = m.name.to_string();
    let started = std::time::Instant::now();
    let mut told = false;
    let params = SearchParams {
        q: Some(m.name.agent().to_string()),
        publisher: Some(m.name.publisher().to_string()),
        limit: Some("50".to_owned()),
        ..SearchParams::default()
    };
    let mut delay = std::time::Duration::from_millis(25);
    loop {
        let pullable = rt
            .block_on(hub.version(&m.name, &m.version.to_string()))
            .is_ok();
        // Search shows an agent at the version the hub calls latest, which is not always this
        // one (a pre-release published after a release leaves `latest` at the release): caught
        // up when search shows what the hub's read API says now.
        let latest = if pullable {
            rt.block_on(hub.agent(&m.name)).ok().and_then(|a| a.latest)
        } else {
            None
        };
        let found = latest.is_some_and(|latest| {
            rt.block_on(hub.search(&params)).is_ok_and(|page| {
                page.hits
                    .iter()
                    .any(|h| h.name == name && h.version == latest)
            })
        });
        if found {
            if told {
                out.status(&format!("{name}@{} is searchable", m.version));
            }
            return Ok(true);
        }
        let elapsed = started.elapsed();
        if elapsed >= limit {
            out.status(&format!(
                "warning: {name}@{} is published, but the hub's search did not find it within {} s; \
                 it will show once the hub has indexed it (`ofc-hub search-check` on the hub tells why not)",
                m.version,
                limit.as_secs()
            ));
            return Ok(false);
        }
        if !told && elapsed >= std::time::Duration::from_secs(1) {
            out.status(&format!(
                "waiting for the hub to index {name}@{} (--no-wait to skip)…",
                m.version
            ));
            told = true;
        }
        std::thread::sleep(delay.min(limit.saturating_sub(elapsed)));
        delay = (delay * 2).min(std::time::Duration::from_millis(500));
    }
}

/// Uploads to the hub: the bundle (if any) as a blob through `/v2/`, then the signed manifest
/// to the JSON publish endpoint, without the bundle. `Ok(false)` when the hub holds this very
/// manifest already.
fn upload(hub: &Hub, p: &Prepared) -> Result<bool> {
    let m = &p.manifest;
    let rt = hub::runtime()?;
    if let Some(b) = &p.bundle {
        rt.block_on(push_bundle(hub, m, b))?;
    }
    let version = m.version.to_string();
    let req = PublishRequest {
        envelope: EnvelopeJson::from(&p.envelope),
        bundle: None,
    };
    let sent = rt.block_on(hub.publish(&m.name, &version, &req));
    match sent {
        Ok(_) => Ok(true),
        // Publishing is idempotent: the same signed manifest already there (a retry after a
        // timeout, a re-run in CI) is success, not a conflict.
        Err(e)
            if hub::hub_error(&e).and_then(|h| h.code.as_ref())
                == Some(&ErrorCode::VersionExists)
                && rt.block_on(hub.version(&m.name, &version)).is_ok_and(|v| {
                    v.manifest_digest == p.envelope.payload_digest().to_string()
                }) =>
        {
            Ok(false)
        }
        Err(e) => Err(hub::refused(
            e,
            format!("the hub refused {}@{}", m.name, m.version),
            |he| publish_hints(he, m.name.publisher()),
        )),
    }
}

/// Uploads the bundle as a blob of repository `{publisher}/{agent}` (where the publish looks
/// for it) in one streamed request, `POST /v2/{repo}/blobs/uploads/?digest=…` with the bytes
/// as the body; nothing when `HEAD /v2/{repo}/blobs/{digest}` finds it there already.
async fn push_bundle(hub: &Hub, m: &Manifest, b: &Packed) -> Result<()> {
    let repo = format!("{}/{}", m.name.publisher(), m.name.agent());
    let head = hub
        .request(reqwest::Method::HEAD, &path::oci_blob(&m.name, &b.digest))
        .send()
        .await
        .map_err(|e| hub.unreachable(e))?;
    if head.status().is_success() {
        return Ok(());
    }
    let len = b.bytes.len() as u64;
    // The bar only where someone watches: captured stderr stays free of control codes.
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(len);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec})",
            )
            .expect("the progress template is valid")
            .progress_chars("=> "),
        );
        bar.set_message(format!("uploading {}@{}", m.name, m.version));
        bar
    });
    let data = bytes::Bytes::from(b.bytes.clone());
    let body = match &bar {
        None => reqwest::Body::from(data),
        Some(bar) => {
            let bar = bar.clone();
            let chunks: Vec<bytes::Bytes> = (0..data.len())
                .step_by(CHUNK)
                .map(|i| data.slice(i..data.len().min(i + CHUNK)))
                .collect();
            // Chunks are pulled as the connection takes them, so the bar follows the upload.
            reqwest::Body::wrap_stream(futures::stream::iter(chunks.into_iter().map(move |c| {
                bar.inc(c.len() as u64);
                Ok::<_, std::io::Error>(c)
            })))
        }
    };
    let rb = hub
        .request(reqwest::Method::POST, &path::oci_upload(&m.name, &b.digest))
        .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
        .header(reqwest::header::CONTENT_LENGTH, len)
        .body(body);
    let sent = hub.send(rb).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let what = || {
        format!(
            "the hub refused the bundle of {}@{} ({len} bytes, uploaded to /v2/{repo}/blobs/uploads/)",
            m.name, m.version
        )
    };
    let resp = sent.map_err(|e| hub::refused(e, what(), |he| blob_hints(he, len)))?;
    // 201: stored. A registry may also answer 202 (a session opened, the bytes ignored); an
    // ofc hub takes monolithic uploads, so anything but 201 is a hub ofc does not understand.
    if resp.status() != reqwest::StatusCode::CREATED {
        return Err(anyhow!(
            UserError::new(format!(
                "{}: it answered {} instead of 201 Created",
                what(),
                resp.status()
            ))
            .hint("is this an ofc hub? check OFC_HUB")
        ));
    }
    Ok(())
}

/// What to do about a refused bundle upload (an OCI error code, or a status).
fn blob_hints(he: &hub::HubError, len: u64) -> Vec<String> {
    let hint = match (he.code.as_ref().map(ErrorCode::as_str), he.status.as_u16()) {
        (Some("SIZE_INVALID"), _) | (_, 413) => format!(
            "the bundle ({len} bytes) is larger than this hub stores (its `max_blob_bytes`): \
             ask its operator to raise it, or leave big files out with `.ofcignore`"
        ),
        (Some("DIGEST_INVALID"), _) => {
            "the bytes changed on the way; try again (a proxy rewriting bodies?)".into()
        }
        (None | Some("not_found"), 404 | 405) => {
            "this hub has no registry API under /v2/ (older than this ofc?); upgrade the hub".into()
        }
        _ => return Vec::new(),
    };
    vec![hint]
}

/// What to do about a refused publish, by the hub's error code.
fn publish_hints(he: &hub::HubError, namespace: &str) -> Vec<String> {
    let hint = match he.code {
        Some(ErrorCode::VersionExists) => {
            "versions are immutable: bump `version` and publish again".into()
        }
        Some(ErrorCode::VersionDeleted) => {
            "an administrator deleted this version and its number is never reused: bump `version`"
                .into()
        }
        Some(ErrorCode::UntrustedKey) => format!(
            "register the signing key for `{namespace}`: `ofc key register --namespace {namespace}`"
        ),
        Some(ErrorCode::KeyRevoked) => format!(
            "that key is revoked: create another with `ofc keygen --name NAME`, register it with \
             `ofc key register --key NAME --namespace {namespace}`, and publish with `--key NAME`"
        ),
        _ if he.status.as_u16() == 403 => format!(
            "the token or your role does not allow publishing in `{namespace}`; ask a namespace owner"
        ),
        Some(ErrorCode::BundleMissing) => {
            "the hub lost the uploaded bundle before the publish (a garbage collection?): publish again"
                .into()
        }
        _ if he.status.as_u16() == 413 => {
            "the bundle is larger than this hub accepts (its `max_bundle_bytes`)".into()
        }
        _ => return Vec::new(),
    };
    vec![hint]
}
