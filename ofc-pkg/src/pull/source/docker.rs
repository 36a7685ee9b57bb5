//! `docker`: a container image pinned by digest, fetched from any OCI registry (the hub's own
//! `/v2/` included) with `oci-client`, verified and kept in the cache as an OCI image layout.
//!
//! The signed manifest pins the image by digest; a reference without one is refused. The
//! manifest the registry serves for that digest must hash to it (an image index is resolved to
//! the manifest of this machine's platform, which must hash to the digest the index names), and
//! every blob (config and layers) must hash to the digest and have the size its descriptor
//! declares. The layout is built in `tmp-v1/` and renamed into
//! `docker-v1/images/<pinned digest>/` under a per-image file lock, so concurrent pulls fetch it
//! once and a killed pull leaves nothing half-installed. The runner hands the layout to podman
//! or docker when the agent starts (see [`crate::container`]).
//!
//! Registries are read anonymously; loopback registries are reached over plain HTTP (as docker
//! does for `localhost`), every other one over HTTPS. Every download is held to the rate floor
//! of [`crate::transfer`] (a registry trickling a layer a byte at a time is given up on after
//! one window), and a manifest must arrive whole within one window.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use async_trait::async_trait;
use futures::StreamExt as _;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::{DockerSource, Source as ManifestSource};
use index_schema::name::Digest;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::kind::{Installed, Job, Source};
use crate::cache::layout::{IMAGE_MARKER as MARKER, image_dir};
use crate::output::{UserError, truncate};
use crate::pull::context::Ctx;
use crate::start::Start;
use crate::transfer::{MIN_RATE_ENV, RateFloor, Stalled};

/// The most bytes one image may have (manifests, config and layers).
const MAX_IMAGE_BYTES: u64 = 16 * 1024 * 1024 * 1024;

/// The largest manifest or index read.
const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// The most layers one image may have.
const MAX_LAYERS: usize = 256;

/// How long connecting to a registry may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a read from a registry may wait for a byte (the rate floor aside).
const READ_TIMEOUT: Duration = Duration::from_secs(60);

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// The `docker` kind.
pub(crate) struct Docker;

/// What a complete layout holds, written as [`MARKER`] (see [`crate::cache::layout`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRecord {
    /// The image reference of the signed manifest.
    pub image: String,
    /// The pinned digest (a manifest, or an index).
    pub digest: Digest,
    /// The image manifest for this platform (the pinned digest unless it is an index).
    pub manifest: Digest,
    /// The config blob: the image id podman and docker give the image.
    pub config: Digest,
    /// Every blob of the layout (manifests, config, layers) with its size.
    pub blobs: Vec<(Digest, u64)>,
}

fn docker_source<'a>(job: &Job<'a>) -> &'a DockerSource {
    match &job.manifest.source {
        ManifestSource::Docker(d) => d,
        _ => unreachable!("the docker kind is only chosen for docker sources"),
    }
}

/// The marker of a complete layout at `dir`, when it is there and names `digest`.
pub fn read_record(dir: &Path) -> Option<ImageRecord> {
    fs::read(dir.join(MARKER))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// The pinned digest of `d`, or the refusal of a reference without one.
fn pinned(d: &DockerSource, what: &str) -> Result<Digest> {
    d.digest().ok_or_else(|| {
        anyhow!(
            UserError::new(format!(
                "the image `{}` of {what} is not pinned by digest; ofc pulls images only by digest",
                truncate(&d.image, 200)
            ))
            .hint("the publisher must write the image as `repository@sha256:<64 hex>`")
        )
    })
}

/// The repository part of an image reference, without `@digest`.
fn without_digest(image: &str) -> &str {
    image.rsplit_once('@').map_or(image, |(n, _)| n)
}

fn locked_digest<'a>(job: &Job<'a>) -> Option<&'a Digest> {
    match job.locked {
        Some(LockedSource::Docker { digest, .. }) => Some(digest),
        _ => None,
    }
}

fn installed(
    d: &DockerSource,
    dir: PathBuf,
    rec: &ImageRecord,
    downloaded: u64,
    extracted: bool,
) -> Installed {
    Installed {
        source: LockedSource::Docker {
            image: without_digest(&d.image).to_string(),
            digest: rec.digest,
        },
        start: Start::Container {
            image: d.image.clone(),
            port: d.port,
            layout: dir.clone(),
            config: rec.config.to_string(),
        },
        path: Some(dir),
        downloaded,
        extracted,
    }
}

#[async_trait]
impl Source for Docker {
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>> {
        let d = docker_source(job);
        let pin = pinned(d, &job.name.to_string())?;
        if locked_digest(job).is_some_and(|l| l != &pin) {
            return Ok(Err(
                "its image digest is not the one ofc.lock records".into()
            ));
        }
        let dir = image_dir(cx.cache.root(), &pin);
        match read_record(&dir) {
            Some(rec) if rec.digest == pin => Ok(Ok(installed(d, dir, &rec, 0, false))),
            _ => Ok(Err(format!("its image {pin} is not in the cache"))),
        }
    }

    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed> {
        let d = docker_source(job);
        let pin = pinned(d, &job.name.to_string())?;
        if cx.opts.locked
            && let Some(locked) = locked_digest(job)
            && locked != &pin
        {
            bail!(
                UserError::new(format!(
                    "ofc.lock no longer matches: it records the image of {} as {locked}, the signed manifest pins {pin}; nothing was installed",
                    job.name
                ))
                .hint("run without --locked to update the lockfile")
            );
        }
        let dir = image_dir(cx.cache.root(), &pin);
        let cache = cx.cache.clone();
        let _lock = tokio::task::spawn_blocking(move || cache.lock_install("docker-image", &pin))
            .await
            .map_err(|e| anyhow!("{e}"))??;
        // Another pull may have installed it while this one waited.
        if let Some(rec) = read_record(&dir).filter(|r| r.digest == pin) {
            return Ok(installed(d, dir, &rec, 0, false));
        }
        let stage = cx.cache.staging_dir()?;
        let layout = stage.path().join("layout");
        let (rec, downloaded) = fetch_layout(cx, job, d, &pin, &layout)
            .await
            .map_err(|e| e.context(format!("cannot pull the image of {}", job.name)))?;
        fs::write(layout.join(MARKER), serde_json::to_vec_pretty(&rec)?)?;
        let parent = dir.parent().expect("images/<hex> has a parent");
        fs::create_dir_all(parent)?;
        if dir.exists() {
            // An incomplete or damaged entry: set aside (gc empties tmp-v1).
            let aside = cx.cache.staging_dir()?.keep();
            fs::rename(&dir, aside.join("stale"))?;
        }
        fs::rename(&layout, &dir).with_context(|| format!("cannot install {}", dir.display()))?;
        Ok(installed(d, dir, &rec, downloaded, true))
    }
}

/// The name of the image inside its layout (`oci:<layout>:<name>`): engines that name an image
/// loaded from a layout after its path need one that is a valid reference.
pub fn layout_ref(pin: &Digest) -> String {
    format!("ofc-image-{}", pin.hex())
}

/// Whether `host` (with an optional port) is a loopback address.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => registry.split(':').next().unwrap_or(registry),
    };
    host.eq_ignore_ascii_case("localhost") || host == "::1" || host.starts_with("127.")
}

/// The platform of this machine, as image indexes name it.
fn platform() -> (&'static str, &'static str) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    ("linux", arch)
}

#[derive(Deserialize)]
struct Descriptor {
    #[serde(default, rename = "mediaType")]
    media_type: Option<String>,
    digest: String,
    size: u64,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    os: String,
    architecture: String,
}

#[derive(Deserialize)]
struct ManifestDoc {
    #[serde(default, rename = "mediaType")]
    media_type: Option<String>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

fn parse_digest(s: &str, what: &str) -> Result<Digest> {
    Digest::parse(s)
        .map_err(|e| anyhow!("the registry names {what} by `{}`: {e}", truncate(s, 100)))
}

/// Fetches the manifest `digest` of `reference`, refusing bytes that do not hash to it.
async fn manifest_bytes(
    client: &Client,
    reference: &Reference,
    digest: &Digest,
    image: &str,
) -> Result<(Vec<u8>, String)> {
    let r = reference.clone_with_digest(digest.to_string());
    // oci-client reads the manifest whole: the floor's window bounds the whole document (one
    // piece, counted when it has arrived).
    let mut floor = RateFloor::from_env()?;
    let fetched = floor
        .next(async {
            client
                .pull_manifest_raw(
                    &r,
                    &RegistryAuth::Anonymous,
                    &[OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST],
                )
                .await
                .map(|(bytes, _)| Some(bytes))
        })
        .await;
    let bytes = match fetched {
        Ok(Some(bytes)) => bytes,
        Ok(None) => unreachable!("a fetched manifest is one piece"),
        // oci-client checks the digest of a manifest fetched by digest itself.
        Err(Stalled::Transport(oci_client::errors::OciDistributionError::DigestError(e))) => {
            return Err(altered(format!(
                "the registry served a manifest for `{}` that does not hash to {digest} ({e})",
                truncate(image, 200)
            )));
        }
        Err(Stalled::Transport(e)) => return Err(registry_error(e, image)),
        Err(Stalled::TooSlow { window, .. }) => {
            return Err(stalled(
                format!(
                    "the registry of `{}` did not send the manifest {digest} within {} s",
                    truncate(image, 200),
                    window.as_secs()
                ),
                "the registry or a proxy is stalling the download; retry later",
            ));
        }
    };
    if bytes.len() > MAX_MANIFEST_BYTES {
        bail!(
            "the manifest {digest} is {} bytes, more than {MAX_MANIFEST_BYTES}",
            bytes.len()
        );
    }
    let actual = Digest::of(&bytes);
    if &actual != digest {
        return Err(altered(format!(
            "the registry served a manifest for `{}` that hashes to {actual}, not {digest}",
            truncate(image, 200)
        )));
    }
    let doc: ManifestDoc = serde_json::from_slice(&bytes)
        .context("the registry served a manifest that is not JSON")?;
    let mt = doc.media_type.unwrap_or_else(|| {
        if doc.manifests.is_empty() {
            OCI_MANIFEST
        } else {
            OCI_INDEX
        }
        .to_string()
    });
    Ok((bytes.to_vec(), mt))
}

/// The refusal of bytes that are not the ones pinned.
fn altered(what: String) -> anyhow::Error {
    anyhow!(
        UserError::new(format!("{what}; nothing was installed")).hint(
            "the registry or a proxy altered the image; report it to the registry's operator"
        )
    )
}

/// The refusal of a download that stalled or went below the rate floor.
fn stalled(what: String, hint: &str) -> anyhow::Error {
    anyhow!(
        UserError::new(format!("{what}; gave up, nothing was installed")).hint(format!(
            "{hint}, or lower {MIN_RATE_ENV} (0 turns the floor off)"
        ))
    )
}

fn registry_error(e: oci_client::errors::OciDistributionError, image: &str) -> anyhow::Error {
    anyhow!(
        UserError::new(format!(
            "cannot fetch `{}` from its registry: {}",
            truncate(image, 200),
            truncate(&e.to_string(), 400)
        ))
        .hint("check that the registry is reachable and serves this image digest anonymously")
    )
}

fn put_blob(blobs: &Path, digest: &Digest, bytes: &[u8]) -> Result<()> {
    fs::write(blobs.join(digest.hex()), bytes)?;
    Ok(())
}

/// Fetches and verifies the whole image into an OCI image layout at `layout`.
async fn fetch_layout(
    cx: &Ctx,
    job: &Job<'_>,
    d: &DockerSource,
    pin: &Digest,
    layout: &Path,
) -> Result<(ImageRecord, u64)> {
    let reference: Reference = d.image.parse().map_err(|e| {
        anyhow!(
            "`{}` is not an image reference: {e}",
            truncate(&d.image, 200)
        )
    })?;
    let registry = reference.resolve_registry().to_string();
    let protocol = if is_loopback(&registry) {
        ClientProtocol::HttpsExcept(vec![registry.clone()])
    } else {
        ClientProtocol::Https
    };
    let client = Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(CONNECT_TIMEOUT),
        read_timeout: Some(READ_TIMEOUT),
        ..ClientConfig::default()
    });
    let blobs = layout.join("blobs").join("sha256");
    fs::create_dir_all(&blobs)?;
    let mut all = Vec::new();
    let mut downloaded = 0u64;

    let (bytes, mut media_type) = manifest_bytes(&client, &reference, pin, &d.image).await?;
    downloaded += bytes.len() as u64;
    put_blob(&blobs, pin, &bytes)?;
    all.push((*pin, bytes.len() as u64));
    let mut manifest_digest = *pin;
    let mut doc: ManifestDoc = serde_json::from_slice(&bytes)?;
    let mut manifest_len = bytes.len() as u64;
    if !doc.manifests.is_empty() || media_type == OCI_INDEX || media_type == DOCKER_LIST {
        let (os, arch) = platform();
        let chosen = doc
            .manifests
            .iter()
            .find(|m| {
                m.platform
                    .as_ref()
                    .is_some_and(|p| p.os == os && p.architecture == arch)
            })
            .ok_or_else(|| {
                anyhow!(
                    UserError::new(format!(
                        "the image `{}` has no manifest for {os}/{arch}",
                        truncate(&d.image, 200)
                    ))
                    .hint("the publisher must push an image built for this platform")
                )
            })?;
        let md = parse_digest(&chosen.digest, "a platform manifest")?;
        let (bytes, mt) = manifest_bytes(&client, &reference, &md, &d.image).await?;
        if bytes.len() as u64 != chosen.size {
            bail!(
                "the platform manifest {md} is {} bytes, its index says {}",
                bytes.len(),
                chosen.size
            );
        }
        downloaded += bytes.len() as u64;
        put_blob(&blobs, &md, &bytes)?;
        all.push((md, bytes.len() as u64));
        manifest_digest = md;
        manifest_len = bytes.len() as u64;
        media_type = chosen.media_type.clone().unwrap_or(mt);
        doc = serde_json::from_slice(&bytes)?;
    }
    let config = doc
        .config
        .as_ref()
        .ok_or_else(|| anyhow!("the image manifest {manifest_digest} has no config"))?;
    if doc.layers.len() > MAX_LAYERS {
        bail!(
            "the image has {} layers, more than {MAX_LAYERS}",
            doc.layers.len()
        );
    }
    let config_digest = parse_digest(&config.digest, "its config")?;
    let mut wanted = vec![(config_digest, config.size)];
    for l in &doc.layers {
        wanted.push((parse_digest(&l.digest, "a layer")?, l.size));
    }
    let total: u64 = wanted.iter().map(|(_, s)| *s).sum();
    if total > MAX_IMAGE_BYTES {
        bail!(
            UserError::new(format!(
                "the image `{}` is {total} bytes, more than the {MAX_IMAGE_BYTES} this client pulls",
                truncate(&d.image, 200)
            ))
            .hint("ask the publisher for a smaller image")
        );
    }
    let bar = cx
        .progress
        .bar(total, format!("{} {}", job.name, job.manifest.version));
    for (digest, size) in &wanted {
        if all.iter().any(|(d, _)| d == digest) {
            continue;
        }
        let n = fetch_blob(&client, &reference, digest, *size, &blobs, &d.image, &bar).await;
        let n = match n {
            Ok(n) => n,
            Err(e) => {
                bar.abandon();
                return Err(e);
            }
        };
        downloaded += n;
        all.push((*digest, n));
    }
    bar.finish_and_clear();

    fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [{
            "mediaType": media_type,
            "digest": manifest_digest.to_string(),
            "size": manifest_len,
            "annotations": {"org.opencontainers.image.ref.name": layout_ref(pin)},
        }],
    });
    fs::write(layout.join("index.json"), serde_json::to_vec(&index)?)?;
    Ok((
        ImageRecord {
            image: d.image.clone(),
            digest: *pin,
            manifest: manifest_digest,
            config: config_digest,
            blobs: all,
        },
        downloaded,
    ))
}

/// Streams one blob into `blobs/<hex>`, hashing it; refuses more bytes than declared, another
/// size or another digest. Returns its size.
async fn fetch_blob(
    client: &Client,
    reference: &Reference,
    digest: &Digest,
    size: u64,
    blobs: &Path,
    image: &str,
    bar: &indicatif::ProgressBar,
) -> Result<u64> {
    let d = digest.to_string();
    let path = blobs.join(digest.hex());
    let mut file = std::io::BufWriter::new(fs::File::create(&path)?);
    let mut h = sha2::Sha256::new();
    let mut n = 0u64;
    // The floor's first window covers the request too: a registry slow to answer is as stalled
    // as one slow to send.
    let mut floor = RateFloor::from_env()?;
    let mut stream = None;
    loop {
        let piece = floor
            .next(async {
                let s = match &mut stream {
                    Some(s) => s,
                    None => stream.insert(
                        client
                            .pull_blob_stream(reference, d.as_str())
                            .await
                            .map_err(|e| registry_error(e, image))?
                            .stream,
                    ),
                };
                s.next().await.transpose().map_err(|e| {
                    // oci-client checks the digest of the stream itself, at its end.
                    if e.get_ref()
                        .is_some_and(|i| i.is::<oci_client::errors::DigestError>())
                    {
                        altered(format!(
                            "a blob of `{}` does not hash to {digest}, the digest its manifest names ({e})",
                            truncate(image, 200)
                        ))
                    } else {
                        anyhow!("cannot read {digest} from the registry: {e}")
                    }
                })
            })
            .await;
        let chunk = match piece {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(Stalled::Transport(e)) => return Err(e),
            Err(Stalled::TooSlow {
                got,
                window,
                min_rate,
            }) => {
                return Err(stalled(
                    format!(
                        "the registry of `{}` sent {digest} at {} bytes/s over the last {} s ({n} of {size} bytes), below the minimum of {min_rate} bytes/s",
                        truncate(image, 200),
                        got / window.as_secs().max(1),
                        window.as_secs()
                    ),
                    "the registry or a proxy is stalling the download; retry later",
                ));
            }
        };
        n += chunk.len() as u64;
        if n > size {
            return Err(altered(format!(
                "the registry sent more than the {size} bytes the manifest of `{}` declares for {digest}",
                truncate(image, 200)
            )));
        }
        h.update(&chunk);
        file.write_all(&chunk)?;
        bar.inc(chunk.len() as u64);
    }
    file.flush()?;
    let actual = Digest::from_bytes(h.finalize().into());
    if &actual != digest || n != size {
        return Err(altered(format!(
            "a blob of `{}` hashes to {actual} ({n} bytes), but the image's manifest names {digest} ({size} bytes)",
            truncate(image, 200)
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_are_recognised() {
        for r in ["127.0.0.1:5000", "localhost", "localhost:80", "[::1]:5000"] {
            assert!(is_loopback(r), "{r}");
        }
        for r in [
            "docker.io",
            "index.docker.io",
            "example.com:5000",
            "10.0.0.1",
        ] {
            assert!(!is_loopback(r), "{r}");
        }
    }

    #[test]
    fn a_tag_alone_is_refused() {
        let d = DockerSource {
            image: "127.0.0.1:5000/acme/agent:1".into(),
            port: 8080,
        };
        let e = pinned(&d, "acme/agent").unwrap_err();
        assert!(format!("{e:#}").contains("not pinned by digest"), "{e:#}");
        let d = DockerSource {
            image: format!("acme/agent:1@sha256:{}", "a".repeat(64)),
            port: 8080,
        };
        assert_eq!(pinned(&d, "x").unwrap().hex(), "a".repeat(64));
        assert_eq!(without_digest(&d.image), "acme/agent:1");
    }
}
