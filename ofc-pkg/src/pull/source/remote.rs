//! `remote`: an agent that already runs elsewhere. Pulling probes `{endpoint}/ofc/info`; the
//! lockfile records the digest of the document seen, kept in the cache for offline pulls.
//!
//! The probe follows no redirect, as the floor does not when it calls the agent: a redirect
//! would lock a document served from another address than the signed endpoint.

use std::fs;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use async_trait::async_trait;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::Source as ManifestSource;
use index_schema::name::Digest;

use super::kind::{Installed, Job, Source};
use crate::cache::Cache;
use crate::output::{UserError, truncate};
use crate::pull::context::Ctx;
use crate::start::Start;

/// How long a `remote` agent may take to answer `/ofc/info`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest `/ofc/info` document accepted.
const MAX_INFO_BYTES: usize = 1024 * 1024;

/// The `remote` kind.
pub(crate) struct Remote;

fn endpoint<'a>(job: &Job<'a>) -> &'a str {
    match &job.manifest.source {
        ManifestSource::Remote(r) => &r.endpoint,
        _ => unreachable!("the remote kind is only chosen for remote sources"),
    }
}

#[async_trait]
impl Source for Remote {
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>> {
        let endpoint = endpoint(job);
        let info_digest = match job.locked {
            Some(LockedSource::Remote { info_digest, .. }) => *info_digest,
            _ => match read_info(&cx.cache, job.digest) {
                Some(d) => d,
                None => return Ok(Err("its /ofc/info document is not in the cache".into())),
            },
        };
        Ok(Ok(installed(endpoint, info_digest)))
    }

    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed> {
        let endpoint = endpoint(job);
        let info_digest = probe(cx, endpoint, job.digest).await?;
        Ok(installed(endpoint, info_digest))
    }
}

fn installed(endpoint: &str, info_digest: Digest) -> Installed {
    Installed {
        source: LockedSource::Remote {
            endpoint: endpoint.to_string(),
            info_digest,
        },
        path: None,
        downloaded: 0,
        extracted: false,
        start: Start::Remote {
            endpoint: endpoint.to_string(),
        },
    }
}

/// `GET {endpoint}/ofc/info`: the agent must answer with a JSON object. Returns the digest
/// of the document and keeps it in the cache for offline pulls.
async fn probe(cx: &Ctx, endpoint: &str, manifest: &Digest) -> Result<Digest> {
    let url = format!("{}/ofc/info", endpoint.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("ofc/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| anyhow!(e).context("cannot build the HTTP client"))?;
    let resp = client
        .get(&url)
        .timeout(PROBE_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            anyhow!(e).context(
                UserError::new(format!("the remote agent at {endpoint} does not answer"))
                    .hint("it must be running and serve the OFC agent API (`GET /ofc/info`)"),
            )
        })?;
    let status = resp.status();
    if status.is_redirection() {
        let redirect = match resp.headers().get(reqwest::header::LOCATION) {
            Some(l) => format!(
                "a redirect to {}",
                truncate(&String::from_utf8_lossy(l.as_bytes()), 200)
            ),
            None => "a redirect without a Location".into(),
        };
        bail!(
            UserError::new(format!(
                "{} answered {status}, {redirect}; ofc follows no redirect from a remote agent, nothing was locked",
                truncate(&url, 200)
            ))
            .hint("the signed endpoint must serve the OFC agent API itself; ask the publisher to publish the address the agent answers at")
        );
    }
    if !status.is_success() {
        bail!(
            UserError::new(format!("{url} answered {status}"))
                .hint("the remote agent must serve the OFC agent API (`GET /ofc/info`)")
        );
    }
    let body = crate::hub::read_capped(resp, MAX_INFO_BYTES, &url)
        .await
        .map_err(|e| e.context(format!("reading {url}")))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| anyhow!("{url} did not send JSON: {e}"))?;
    if !doc.is_object() {
        bail!("{url} did not send a JSON object");
    }
    let digest = Digest::of(&body);
    write_info(&cx.cache, manifest, &body)?;
    Ok(digest)
}
fn info_file(cache: &Cache, manifest: &Digest) -> PathBuf {
    crate::cache::layout::remote_info_file(cache.root(), manifest)
}

fn write_info(cache: &Cache, manifest: &Digest, body: &[u8]) -> Result<()> {
    let file = info_file(cache, manifest);
    let dir = file.parent().expect("has a parent");
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(body)?;
    tmp.persist(&file).map_err(|e| e.error)?;
    Ok(())
}

fn read_info(cache: &Cache, manifest: &Digest) -> Option<Digest> {
    fs::read(info_file(cache, manifest))
        .ok()
        .map(|b| Digest::of(&b))
}
