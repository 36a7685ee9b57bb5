//! `bundle`: a tar.gz layer on the hub, streamed, hashed against the signed digest and
//! unpacked safely into the content-addressed cache.

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use async_trait::async_trait;
use index_schema::hub_api::path;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::{Manifest, Source as ManifestSource};
use index_schema::name::{AgentName, Digest};
use reqwest::Method;

use super::kind::{Installed, Job, Source};
use crate::hub::Hub;
use crate::output::UserError;
use crate::pull::context::{Ctx, MAX_BYTES_ENV};
use crate::start::Start;

/// The `bundle` kind.
pub(crate) struct Bundle;

fn parts<'a>(job: &Job<'a>) -> &'a index_schema::manifest::BundleSource {
    match &job.manifest.source {
        ManifestSource::Bundle(b) => b,
        _ => unreachable!("the bundle kind is only chosen for bundle sources"),
    }
}

fn start(b: &index_schema::manifest::BundleSource, dir: &std::path::Path) -> Start {
    Start::AgentFile {
        file: dir.join(&b.entrypoint),
        dir: dir.to_path_buf(),
    }
}

#[async_trait]
impl Source for Bundle {
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>> {
        let b = parts(job);
        Ok(match cx.cache.bundle(&b.digest) {
            Ok(Some(cb)) => Ok(Installed {
                source: LockedSource::Bundle { digest: b.digest },
                start: start(b, &cb.files),
                path: Some(cb.files),
                downloaded: 0,
                extracted: false,
            }),
            Ok(None) => Err(format!("its bundle {} is not in the cache", b.digest)),
            Err(e) => Err(format!("its cached bundle is damaged ({e})")),
        })
    }

    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed> {
        let b = parts(job);
        let (files, downloaded, extracted) =
            fetch_bundle(cx, job.hub, job.name, job.manifest).await?;
        Ok(Installed {
            source: LockedSource::Bundle { digest: b.digest },
            start: start(b, &files),
            path: Some(files),
            downloaded,
            extracted,
        })
    }
}

async fn fetch_bundle(
    cx: &Ctx,
    hub: &Hub,
    name: &AgentName,
    manifest: &Manifest,
) -> Result<(PathBuf, u64, bool)> {
    let ManifestSource::Bundle(b) = &manifest.source else {
        unreachable!("fetch_bundle is called for bundle sources");
    };
    match cx.cache.bundle(&b.digest) {
        Ok(Some(cb)) => return Ok((cb.files, 0, false)),
        Ok(None) => {}
        Err(e) => {
            // A damaged entry is set aside and fetched again, as a package manager would.
            eprintln!(
                "warning: the cached bundle {} is damaged ({e}); fetching it again",
                b.digest
            );
            cx.cache.quarantine_bundle(&b.digest)?;
        }
    }
    // A bundle bigger than what it may unpack to cannot be installed: refuse before
    // downloading it (gzip adds a little to incompressible data, hence the margin).
    let l = &cx.opts.limits;
    let max = l
        .max_total_bytes
        .saturating_add(l.max_total_bytes / 64)
        .saturating_add(l.max_entries.saturating_mul(1024));
    if b.size > max {
        bail!(
            UserError::new(format!(
                "the bundle of {name} {} is {} bytes, more than this client unpacks ({} bytes of files)",
                manifest.version, b.size, l.max_total_bytes
            ))
            .hint(format!("raise the limit with {MAX_BYTES_ENV} if you trust this agent"))
        );
    }
    let resp = hub
        .send(hub.request(
            Method::GET,
            &path::bundle(name, &manifest.version.to_string()),
        ))
        .await?;
    let bar = cx
        .progress
        .bar(b.size, format!("{name} {}", manifest.version));
    let mut bytes = Vec::with_capacity(b.size.min(64 * 1024 * 1024) as usize);
    let mut resp = resp;
    // SHA-256 runs on its own thread while the download goes on.
    let (tx, rx) = std::sync::mpsc::channel::<bytes::Bytes>();
    let hasher = tokio::task::spawn_blocking(move || {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        for c in rx {
            h.update(&c);
        }
        Digest::from_bytes(h.finalize().into())
    });
    let mut floor = crate::transfer::RateFloor::from_env()?;
    while let Some(chunk) = floor.next(resp.chunk()).await.map_err(|e| {
        bar.abandon();
        e.into_error(&format!("the bundle of {name} {}", manifest.version), |e| {
            hub.unreachable(e)
        })
    })? {
        if bytes.len() as u64 + chunk.len() as u64 > b.size {
            bar.abandon();
            bail!(
                UserError::new(format!(
                    "the hub sent more than the {} bytes the signed manifest of {name} {} declares for its bundle; nothing was installed",
                    b.size, manifest.version
                ))
                .hint("the hub or a proxy altered the bundle; report it to the hub's operator")
            );
        }
        bytes.extend_from_slice(&chunk);
        let _ = tx.send(chunk);
        bar.set_position(bytes.len() as u64);
    }
    drop(tx);
    let actual = hasher
        .await
        .map_err(|e| anyhow!("the hashing task failed: {e}"))?;
    bar.finish_and_clear();
    let n = bytes.len() as u64;
    let digest = b.digest;
    let cache = cx.cache.clone();
    let limits = cx.opts.limits;
    let version = manifest.version.clone();
    let name2 = name.clone();
    let cb = tokio::task::spawn_blocking(move || {
        // `install_bundle` hashes the bytes and refuses a mismatch before unpacking anything.
        cache.install_hashed_bundle(&digest, &actual, &bytes, &limits).map_err(|e| match e {
            crate::cache::CacheError::DigestMismatch { expected, actual } => anyhow!(
                UserError::new(format!(
                    "the bundle of {name2} {version} hashes to {actual}, but the signed manifest says {expected}; nothing was installed"
                ))
                .hint("the hub or a proxy altered the bundle; report it to the hub's operator")
            ),
            other => anyhow!(other)
                .context(format!("cannot install the bundle of {name2} {version}")),
        })
    })
    .await
    .map_err(|e| anyhow!("{e}"))??;
    Ok((cb.files, n, cb.extracted))
}
