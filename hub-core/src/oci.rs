//! OCI manifests as the core reads them: their structure checked ([`parse_manifest`]), what
//! they reference, and their mirroring to an upstream registry the blob store may be.

use index_schema::media_types;
use index_schema::name::Digest;
use serde_json::Value;

use crate::blob::BlobError;
use crate::hub::Hub;

/// Why a manifest's structure is refused (the OCI API's `MANIFEST_INVALID`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ManifestInvalid(pub String);

impl ManifestInvalid {
    fn new(m: &str) -> Self {
        ManifestInvalid(m.to_string())
    }
}

/// A descriptor in a manifest.
#[derive(Debug, Clone)]
pub struct Descriptor {
    /// Media type.
    pub media_type: String,
    /// Digest.
    pub digest: Digest,
    /// Size.
    pub size: u64,
}

fn descriptor(v: &Value, what: &str) -> Result<Descriptor, ManifestInvalid> {
    let bad = |m: &str| ManifestInvalid(format!("{what}: {m}"));
    let media_type = v
        .get("mediaType")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`mediaType` is missing"))?
        .to_string();
    let digest = v
        .get("digest")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`digest` is missing"))?;
    let digest = Digest::parse(digest).map_err(|e| bad(&e.to_string()))?;
    let size = v
        .get("size")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("`size` is missing or not a non-negative integer"))?;
    Ok(Descriptor {
        media_type,
        digest,
        size,
    })
}

/// A parsed manifest: what the API checks and records.
#[derive(Debug)]
pub struct Parsed {
    /// Media type.
    pub media_type: String,
    /// `artifactType`, else the config media type of an image manifest.
    pub artifact_type: Option<String>,
    /// Whether `artifactType` was in the manifest (rather than taken from the config).
    pub artifact_type_declared: bool,
    /// Config of an image manifest.
    pub config: Option<Descriptor>,
    /// Layers of an image manifest.
    pub layers: Vec<Descriptor>,
    /// Children of an index.
    pub manifests: Vec<Descriptor>,
    /// Subject.
    pub subject: Option<Descriptor>,
}

/// Parses and checks a manifest's structure.
pub fn parse_manifest(content_type: Option<&str>, bytes: &[u8]) -> Result<Parsed, ManifestInvalid> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ManifestInvalid(format!("not JSON: {e}")))?;
    if v.get("schemaVersion").and_then(Value::as_i64) != Some(2) {
        return Err(ManifestInvalid::new("`schemaVersion` must be 2"));
    }
    let body_type = v.get("mediaType").and_then(Value::as_str);
    let ct = content_type.map(|c| c.split(';').next().unwrap_or("").trim());
    let media_type = match (body_type, ct) {
        (Some(b), Some(c)) if !c.is_empty() && b != c => {
            return Err(ManifestInvalid(format!(
                "the body's mediaType `{b}` differs from Content-Type `{c}`"
            )));
        }
        (Some(b), _) => b.to_string(),
        (None, Some(c)) if !c.is_empty() => c.to_string(),
        _ => {
            return Err(ManifestInvalid::new(
                "no media type: send Content-Type or `mediaType`",
            ));
        }
    };
    let mut p = Parsed {
        media_type: media_type.clone(),
        artifact_type: v
            .get("artifactType")
            .and_then(Value::as_str)
            .map(str::to_string),
        artifact_type_declared: v.get("artifactType").is_some(),
        config: None,
        layers: Vec::new(),
        manifests: Vec::new(),
        subject: v
            .get("subject")
            .map(|s| descriptor(s, "subject"))
            .transpose()?,
    };
    match media_type.as_str() {
        media_types::OCI_IMAGE_MANIFEST | media_types::DOCKER_MANIFEST_V2 => {
            let config = descriptor(
                v.get("config")
                    .ok_or_else(|| ManifestInvalid::new("`config` is missing"))?,
                "config",
            )?;
            let layers = v
                .get("layers")
                .and_then(Value::as_array)
                .ok_or_else(|| ManifestInvalid::new("`layers` is missing"))?;
            for (i, l) in layers.iter().enumerate() {
                p.layers.push(descriptor(l, &format!("layers[{i}]"))?);
            }
            if p.artifact_type.is_none() {
                p.artifact_type = Some(config.media_type.clone());
            }
            p.config = Some(config);
        }
        media_types::OCI_IMAGE_INDEX | media_types::DOCKER_MANIFEST_LIST_V2 => {
            let ms = v
                .get("manifests")
                .and_then(Value::as_array)
                .ok_or_else(|| ManifestInvalid::new("`manifests` is missing"))?;
            for (i, l) in ms.iter().enumerate() {
                p.manifests.push(descriptor(l, &format!("manifests[{i}]"))?);
            }
        }
        other => {
            return Err(ManifestInvalid(format!(
                "unsupported manifest media type `{other}`"
            )));
        }
    }
    Ok(p)
}

impl Parsed {
    /// Whether this is an ofc agent version.
    pub fn is_agent(&self) -> bool {
        self.artifact_type.as_deref() == Some(media_types::AGENT_ARTIFACT_V1)
            || self
                .config
                .as_ref()
                .is_some_and(|c| c.media_type == media_types::AGENT_ENVELOPE_V1)
    }
}

/// Mirrors a manifest to the blob store's registry, if it has one (see
/// [`crate::blob::BlobStore::mirror_manifest`]).
pub async fn mirror(
    hub: &Hub,
    repository: &str,
    reference: &str,
    parsed: &Parsed,
    bytes: &[u8],
) -> Result<(), BlobError> {
    let names: Vec<Digest> = parsed
        .config
        .iter()
        .chain(parsed.layers.iter())
        .map(|d| d.digest)
        .collect();
    hub.blobs
        .mirror_manifest(
            repository.to_string(),
            reference.to_string(),
            parsed.media_type.clone(),
            bytes.to_vec(),
            names,
        )
        .await
}

/// Tags, in the blob store's registry, a manifest [`mirror`] put there by its digest (so no
/// blob needs mounting again: one request). Nothing to do without a registry.
pub async fn tag_mirror(
    hub: &Hub,
    repository: &str,
    tag: &str,
    parsed: &Parsed,
    bytes: &[u8],
) -> Result<(), BlobError> {
    hub.blobs
        .mirror_manifest(
            repository.to_string(),
            tag.to_string(),
            parsed.media_type.clone(),
            bytes.to_vec(),
            Vec::new(),
        )
        .await
}
