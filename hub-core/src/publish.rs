//! The publish service: the one way a version enters the hub.
//!
//! [`publish`] takes a signed envelope and its bundle — from the JSON API (`PUT
//! /api/v1/agents/{p}/{a}/versions/{v}`, the bundle inline or uploaded before as a blob of
//! `p/a`) or from an OCI push of an agent artifact (`PUT /v2/p/a/manifests/{v}`, the envelope
//! as its config blob) — checks it, and commits in **one transaction** the claims on every blob
//! it references, the version, the agent's derived state, the OCI manifest and tag (the pushed
//! one, or the one the hub derives), the blob references, the outbox row and the audit row. It
//! returns a typed [`PublishError`]; the two HTTP APIs map that to their wire shapes
//! (`hub-server`'s `api/agents.rs`, `oci/artifact.rs`) and hold no publish logic of their own.
//!
//! A crash at any point leaves either the whole version or nothing but unreferenced blobs
//! (which `ofc-hub gc` removes): there is no second transaction to repair.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use index_schema::envelope::{Envelope, EnvelopeError, PublicKey, verify_manifest};
use index_schema::manifest::{Manifest, Source, parse_exact_version};
use index_schema::media_types::{
    AGENT_ARTIFACT_V1, AGENT_BUNDLE_V1, AGENT_ENVELOPE_V1, OCI_EMPTY, OCI_EMPTY_CONTENT,
    OCI_IMAGE_MANIFEST,
};
use index_schema::name::{AgentName, Digest};
use serde_json::json;

use crate::auth::{Denied, Principal, Role, Scope};
use crate::blob::BlobError;
use crate::claims::store_bytes;
use crate::error::{CoreError, ErrorCode, Kind};
use crate::hub::Hub;
use crate::oci::{Parsed, mirror, parse_manifest, tag_mirror};
use crate::store::{Actor, BlobClaim, LogAppend, NewManifest, NewVersion, StoreError};

/// How many times a publish stores again a blob a garbage collection took between its upload
/// and the transaction's claim (see [`crate::gc`]).
const RESTORE_ATTEMPTS: usize = 5;

/// The layer annotation naming the file oras writes a layer to.
const TITLE: &str = "org.opencontainers.image.title";

/// What to publish.
#[derive(Debug)]
pub struct Request<'a> {
    /// Namespace, from the path.
    pub publisher: &'a str,
    /// Agent, from the path.
    pub agent: &'a str,
    /// Version, from the path (or the tag of an OCI push).
    pub version: &'a str,
    /// The DSSE envelope, as JSON text.
    pub envelope: &'a str,
    /// The bundle sent inline (base64 text); `None`: it must be a blob of `publisher/agent`
    /// already (uploaded through `/v2/`, or of an earlier version).
    pub inline_bundle: Option<&'a str>,
    /// The manifest of an OCI push, recorded as sent; `None`: the hub derives one.
    pub pushed: Option<Pushed<'a>>,
}

/// An agent artifact pushed through `/v2/`.
#[derive(Debug, Clone, Copy)]
pub struct Pushed<'a> {
    /// The manifest's bytes.
    pub bytes: &'a [u8],
    /// Their digest.
    pub digest: Digest,
    /// What they say.
    pub parsed: &'a Parsed,
}

/// A committed publish.
#[derive(Debug, Clone)]
pub struct Published {
    /// `publisher/agent`.
    pub name: AgentName,
    /// Version.
    pub version: String,
    /// `sha256:…` of the signed manifest (the envelope's payload).
    pub manifest_digest: Digest,
    /// The bundle, for bundle sources.
    pub bundle_digest: Option<Digest>,
    /// Signing key id.
    pub key_id: String,
    /// Outbox sequence.
    pub seq: i64,
    /// Unix ms.
    pub published_at: i64,
    /// Digest of the OCI manifest recorded for the version.
    pub oci_digest: Digest,
    /// Where the transparency log put the publish, and the tree right after it.
    pub log: LogAppend,
}

/// Why a publish was refused. [`PublishError::code`] is the stable code both APIs report.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The name in the path is not a valid agent name.
    #[error("{0}")]
    InvalidName(String),
    /// The version in the path is not an exact semver version usable as an OCI tag.
    #[error("`{version}`: {why}")]
    InvalidVersion {
        /// As sent.
        version: String,
        /// Why not.
        why: String,
    },
    /// No such namespace.
    #[error("no namespace `{0}`")]
    NamespaceNotFound(String),
    /// The token or the user's role does not allow this publish.
    #[error("{}", CoreError::from(.0.clone()).message)]
    Denied(Denied),
    /// The name belongs to an unsigned registry-API entry.
    #[error("`{0}` is a registry-API entry, not a published agent")]
    RegistryEntry(AgentName),
    /// The envelope is malformed.
    #[error("{0}")]
    InvalidEnvelope(String),
    /// The manifest inside the envelope is invalid.
    #[error("{0}")]
    InvalidManifest(String),
    /// The signature does not verify.
    #[error("{0}")]
    BadSignature(String),
    /// Signed by a key of the namespace that was revoked.
    #[error("key {key_id} of `{namespace}` is revoked and signs nothing new")]
    KeyRevoked {
        /// The key.
        key_id: String,
        /// Its namespace.
        namespace: String,
    },
    /// Signed by a key the namespace never registered.
    #[error("{why}; register the key for `{namespace}` first")]
    UntrustedKey {
        /// What the verifier said.
        why: String,
        /// The namespace.
        namespace: String,
    },
    /// The manifest names another agent.
    #[error("the manifest is for `{manifest}` but was published to `{path}`")]
    NameMismatch {
        /// In the manifest.
        manifest: String,
        /// In the path.
        path: AgentName,
    },
    /// The manifest has another version.
    #[error("the manifest is version {manifest} but was published as {path}")]
    VersionMismatch {
        /// In the manifest.
        manifest: String,
        /// In the path.
        path: String,
    },
    /// The bundle is larger than `max_bundle_bytes`.
    #[error("the bundle is {size} bytes; the limit is {limit}")]
    BundleTooLarge {
        /// Bytes.
        size: u64,
        /// `max_bundle_bytes`.
        limit: u64,
    },
    /// The bundle sent inline is larger than `max_inline_bundle_bytes`.
    #[error(
        "the bundle sent inline is {size} bytes; this hub takes bundles of at most {limit} bytes \
         inline (max_inline_bundle_bytes): upload the bundle as a blob to \
         /v2/{name}/blobs/uploads/ and publish without `bundle` (newer `ofc publish` does this)"
    )]
    InlineBundleTooLarge {
        /// Bytes (decoded).
        size: u64,
        /// `max_inline_bundle_bytes`.
        limit: u64,
        /// The agent.
        name: AgentName,
    },
    /// The inline bundle is not base64.
    #[error("bundle is not base64: {0}")]
    InvalidBundle(String),
    /// The bundle's size is not the manifest's.
    #[error("the manifest says the bundle is {declared} bytes; {actual}")]
    BundleSizeMismatch {
        /// In the manifest.
        declared: u64,
        /// What was found, in words.
        actual: String,
    },
    /// The bundle's digest is not the manifest's.
    #[error("the manifest says {declared}; the bytes sent are {actual}")]
    BundleDigestMismatch {
        /// In the manifest.
        declared: Digest,
        /// Of the bytes.
        actual: Digest,
    },
    /// The bundle was left out and the agent's repository does not have it.
    #[error("send the bundle: {0}")]
    BundleMissing(String),
    /// A bundle came with a source that has none.
    #[error("the manifest's source is `{0}`, which has no bundle")]
    UnexpectedBundle(String),
    /// Versions are immutable.
    #[error(
        "`{name}` version {version} exists already; published versions are immutable, publish \
         a new version instead"
    )]
    VersionExists {
        /// The agent.
        name: AgentName,
        /// The version.
        version: String,
    },
    /// The version was deleted by an administrator: a tombstone.
    #[error(
        "`{name}` version {version} was deleted by an administrator and cannot be published \
         again; publish a new version instead"
    )]
    VersionDeleted {
        /// The agent.
        name: AgentName,
        /// The version.
        version: String,
    },
    /// The version was removed (unpublished by its publisher or taken down by an operator): a
    /// tombstone. Refused whatever the content, the same bytes included (see
    /// [`crate::lifecycle`]).
    #[error(
        "`{name}` version {version} was removed (reason class `{reason}`) and its number can \
         never be published again, whatever the content; publish a new version instead"
    )]
    VersionRemoved {
        /// The agent.
        name: AgentName,
        /// The version.
        version: String,
        /// The reason class of the removal.
        reason: String,
    },
    /// Another write got there first.
    #[error("{0}")]
    Conflict(String),
    /// The database does not answer: nothing was recorded; retry.
    #[error("the database is unavailable; nothing was recorded — retry shortly")]
    DatabaseUnavailable,
    /// The blob backend does not answer (nothing was recorded; retry).
    #[error("{0}")]
    BlobsUnavailable(String),
    /// The blob backend refused (nothing was recorded; retrying will not help).
    #[error("{0}")]
    BlobsRefused(String),
    /// The database or the blob store failed.
    #[error("{0}")]
    Internal(String),
}

impl PublishError {
    /// The stable code the JSON API reports (`version_exists`, `bundle_missing`, …).
    pub fn code(&self) -> ErrorCode {
        match self {
            PublishError::InvalidName(_) => ErrorCode::InvalidName,
            PublishError::InvalidVersion { .. } => ErrorCode::InvalidVersion,
            PublishError::NamespaceNotFound(_) => ErrorCode::NamespaceNotFound,
            PublishError::Denied(d) => CoreError::from(d.clone()).code,
            PublishError::RegistryEntry(_) => ErrorCode::RegistryEntry,
            PublishError::InvalidEnvelope(_) => ErrorCode::InvalidEnvelope,
            PublishError::InvalidManifest(_) => ErrorCode::InvalidManifest,
            PublishError::BadSignature(_) => ErrorCode::BadSignature,
            PublishError::KeyRevoked { .. } => ErrorCode::KeyRevoked,
            PublishError::UntrustedKey { .. } => ErrorCode::UntrustedKey,
            PublishError::NameMismatch { .. } => ErrorCode::NameMismatch,
            PublishError::VersionMismatch { .. } => ErrorCode::VersionMismatch,
            PublishError::BundleTooLarge { .. } => ErrorCode::BundleTooLarge,
            PublishError::InlineBundleTooLarge { .. } => ErrorCode::InlineBundleTooLarge,
            PublishError::InvalidBundle(_) => ErrorCode::InvalidBundle,
            PublishError::BundleSizeMismatch { .. } => ErrorCode::BundleSizeMismatch,
            PublishError::BundleDigestMismatch { .. } => ErrorCode::BundleDigestMismatch,
            PublishError::BundleMissing(_) => ErrorCode::BundleMissing,
            PublishError::UnexpectedBundle(_) => ErrorCode::UnexpectedBundle,
            PublishError::VersionExists { .. } => ErrorCode::VersionExists,
            PublishError::VersionDeleted { .. } => ErrorCode::VersionDeleted,
            PublishError::VersionRemoved { .. } => ErrorCode::VersionRemoved,
            PublishError::Conflict(_) => ErrorCode::Conflict,
            PublishError::DatabaseUnavailable => ErrorCode::DatabaseUnavailable,
            PublishError::BlobsUnavailable(_) => ErrorCode::BlobsUnavailable,
            PublishError::BlobsRefused(_) => ErrorCode::BlobsRefused,
            PublishError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// What sort of refusal it is (both APIs answer with the status of its kind).
    pub fn kind(&self) -> Kind {
        match self {
            PublishError::NamespaceNotFound(_) => Kind::NotFound,
            PublishError::Denied(d) => CoreError::from(d.clone()).kind,
            PublishError::KeyRevoked { .. } | PublishError::UntrustedKey { .. } => Kind::Forbidden,
            PublishError::RegistryEntry(_)
            | PublishError::VersionExists { .. }
            | PublishError::VersionDeleted { .. }
            | PublishError::VersionRemoved { .. }
            | PublishError::Conflict(_) => Kind::Conflict,
            PublishError::BundleTooLarge { .. } | PublishError::InlineBundleTooLarge { .. } => {
                Kind::TooLarge
            }
            PublishError::DatabaseUnavailable => Kind::Unavailable,
            PublishError::BlobsUnavailable(_) => Kind::Unavailable,
            PublishError::BlobsRefused(_) | PublishError::Internal(_) => Kind::Internal,
            _ => Kind::Invalid,
        }
    }
}

/// A refused publish as the core's error: its kind, code and message.
impl From<PublishError> for CoreError {
    fn from(e: PublishError) -> Self {
        CoreError::new(e.kind(), e.code(), e.to_string())
    }
}

impl From<StoreError> for PublishError {
    fn from(e: StoreError) -> Self {
        if e.is_unavailable() {
            tracing::warn!(error = %e, "the database is unavailable");
            return PublishError::DatabaseUnavailable;
        }
        if let StoreError::BlobBackend(why) = e {
            return BlobError::Upstream(why).into();
        }
        PublishError::Internal(e.to_string())
    }
}

impl From<BlobError> for PublishError {
    fn from(e: BlobError) -> Self {
        PublishError::from(CoreError::from(e))
    }
}

impl From<CoreError> for PublishError {
    fn from(e: CoreError) -> Self {
        if e.code == ErrorCode::DatabaseUnavailable {
            return PublishError::DatabaseUnavailable;
        }
        if e.kind == Kind::Unavailable {
            return PublishError::BlobsUnavailable(e.message);
        }
        if e.code == ErrorCode::BlobsRefused {
            return PublishError::BlobsRefused(e.message);
        }
        PublishError::Internal(e.message)
    }
}

/// The length of what the base64 text `b64` decodes to (exact for valid base64).
fn base64_decoded_len(b64: &str) -> u64 {
    let t = b64.trim_end().trim_end_matches('=');
    (t.len() as u64).saturating_mul(3) / 4
}

/// Publishes a signed version (see the module documentation). Checks, in order: the name, the
/// namespace and the token's scope for it, the version, the envelope and its manifest, the
/// signature by an active key of the namespace, the manifest's name and version against the
/// path, the bundle (limit, digest, size, where it is); then commits.
pub async fn publish(
    hub: &Hub,
    principal: &Principal,
    req: Request<'_>,
) -> Result<Published, PublishError> {
    let r = publish_checked(hub, principal, req).await;
    counted(hub, &r);
    r
}

/// Counts a publish's outcome (and logs and announces a committed one).
pub(crate) fn counted(hub: &Hub, r: &Result<Published, PublishError>) {
    match r {
        Ok(p) => {
            hub.counters.publish();
            tracing::info!(agent.name = %p.name, agent.version = %p.version, seq = p.seq,
                "published");
            // The outbox grew: the search follower need not wait for its next poll.
            hub.wake_search();
        }
        Err(_) => hub.counters.publish_refused(),
    }
}

/// [`publish`] without counting its outcome.
pub(crate) async fn publish_checked(
    hub: &Hub,
    principal: &Principal,
    req: Request<'_>,
) -> Result<Published, PublishError> {
    let name = AgentName::new(req.publisher, req.agent)
        .map_err(|e| PublishError::InvalidName(e.to_string()))?;
    let ns_name = name.publisher().to_ascii_lowercase();
    let ns = hub
        .store
        .namespace(&ns_name)
        .await?
        .ok_or(PublishError::NamespaceNotFound(ns_name))?;
    let existing = hub.store.agent(&name.to_string()).await?;
    let scope = if existing.is_some() {
        Scope::PublishUpdate
    } else {
        Scope::PublishNew
    };
    let role = hub
        .store
        .role(ns.id, principal.user_id)
        .await?
        .and_then(|r| Role::parse(&r));
    principal
        .authorize(scope, &ns.name, role)
        .map_err(PublishError::Denied)?;
    // Another publish may create the agent between this check and the commit: it may then
    // add this version only with the scope an update needs.
    let may_update = existing.is_some()
        || principal
            .authorize(Scope::PublishUpdate, &ns.name, role)
            .is_ok();
    if existing
        .as_ref()
        .is_some_and(|a| a.registry_endpoint.is_some())
    {
        return Err(PublishError::RegistryEntry(name));
    }
    let version = parse_version(req.version)?;

    let envelope = Envelope::from_json(req.envelope).map_err(|d| {
        // Structure fine and the right type, so what failed is the manifest inside.
        let manifest_only = Envelope::from_json_any_type(req.envelope)
            .is_ok_and(|e| e.payload_type == index_schema::media_types::AGENT_MANIFEST_V1);
        if manifest_only {
            PublishError::InvalidManifest(d.to_string())
        } else {
            PublishError::InvalidEnvelope(d.to_string())
        }
    })?;
    let keys = hub.store.keys(ns.id).await?;
    let active: Vec<PublicKey> = keys
        .iter()
        .filter(|k| k.revoked_at.is_none())
        .filter_map(|k| PublicKey::parse(&k.public_key).ok())
        .collect();
    let (manifest, key_id, digest) = verify_manifest(&envelope, &active).map_err(|e| match e {
        EnvelopeError::UntrustedKey { ref keyids } => {
            let revoked = keyids.iter().find_map(|id| {
                keys.iter()
                    .find(|k| k.key_id == id.to_string() && k.revoked_at.is_some())
            });
            match revoked {
                Some(k) => PublishError::KeyRevoked {
                    key_id: k.key_id.clone(),
                    namespace: ns.name.clone(),
                },
                None => PublishError::UntrustedKey {
                    why: e.to_string(),
                    namespace: ns.name.clone(),
                },
            }
        }
        EnvelopeError::BadSignature { .. } => PublishError::BadSignature(e.to_string()),
        EnvelopeError::InvalidManifest(_) | EnvelopeError::PayloadNotUtf8 => {
            PublishError::InvalidManifest(e.to_string())
        }
        other => PublishError::InvalidEnvelope(other.to_string()),
    })?;
    if manifest.name != name {
        return Err(PublishError::NameMismatch {
            manifest: manifest.name.to_string(),
            path: name,
        });
    }
    if manifest.version.to_string() != version {
        return Err(PublishError::VersionMismatch {
            manifest: manifest.version.to_string(),
            path: version,
        });
    }

    let bundle = bundle(hub, &name, &manifest, req.inline_bundle).await?;
    let env_json = envelope.to_json();
    let new = NewVersion {
        namespace_id: ns.id,
        agent: name.to_string(),
        handle: manifest.id.name().to_string(),
        version: version.clone(),
        manifest_digest: digest.to_string(),
        envelope: env_json.clone(),
        key_id: key_id.to_string(),
        source_kind: manifest.source.kind().to_string(),
        bundle_digest: bundle.map(|(d, _)| d.to_string()),
        bundle_size: bundle.map(|(_, s)| i64::try_from(s).unwrap_or(i64::MAX)),
        trusted: principal.trusted.clone(),
        may_update,
    };
    let repository = name.to_string();
    let oci = match req.pushed {
        Some(p) => OciRecord::pushed(p, req.envelope.as_bytes()),
        None => OciRecord::derive(hub, &repository, &version, &env_json, bundle).await?,
    };
    let inline_bytes = match (req.inline_bundle, bundle) {
        (Some(_), Some((d, _))) => Some((d, decoded(req.inline_bundle)?)),
        _ => None,
    };
    let mut restorable: Vec<(Digest, &[u8])> = oci.restorable();
    if let Some((d, b)) = &inline_bytes {
        restorable.push((*d, b.as_slice()));
    }
    let mut needed: Vec<(Digest, Option<u64>)> = oci.blobs.clone();
    if let Some((d, s)) = bundle {
        needed.push((d, Some(s)));
    }
    let claim = BlobClaim::new(hub.blobs.clone(), needed);
    let actor = Actor {
        user_id: Some(principal.user_id),
        user_name: principal.user_name.clone(),
        token_id: Some(principal.token_id),
    };
    let m = oci.manifest(&repository, &version);
    // A version that exists is refused before its manifest goes anywhere (the transaction
    // checks again): a CI job publishing again leaves no manifest behind in the registry.
    if let Some(agent) = &existing
        && hub.store.version(agent.id, &version).await?.is_some()
    {
        return Err(PublishError::VersionExists {
            name: name.clone(),
            version: version.clone(),
        });
    }
    // So is a removed one (a tombstone; the transaction checks again).
    if let Some(t) = hub.store.tombstone(&name.to_string(), &version).await? {
        return Err(match t.reason {
            Some(reason) => PublishError::VersionRemoved {
                name: name.clone(),
                version: version.clone(),
                reason,
            },
            None => PublishError::VersionDeleted {
                name: name.clone(),
                version: version.clone(),
            },
        });
    }
    // Before the commit, the manifest goes to the upstream registry (if the blobs live in one)
    // by its digest, its blobs mounted into the agent's repository there: from then on the
    // registry's own garbage collection keeps every blob this version will claim, whatever
    // happens after. (Mirrored after the commit, a replica that died between the two left an
    // acknowledged version whose blobs no registry manifest named, for that collection to
    // take.) A registry that does not answer refuses the publish here, before anything is
    // recorded. A commit that then fails leaves an untagged manifest there: garbage, harmless.
    let parsed;
    let mirrored = match req.pushed {
        Some(p) => Some(p.parsed),
        None => {
            parsed = parse_manifest(Some(OCI_IMAGE_MANIFEST), &oci.bytes).ok();
            parsed.as_ref()
        }
    };
    if let Some(p) = mirrored {
        mirror(hub, &repository, &oci.digest.to_string(), p, &oci.bytes).await?;
    }
    // The transaction claims every blob first, so a concurrent garbage collection cannot take
    // one from an acknowledged version; one it took before the claim is stored again from the
    // bytes at hand (a bundle uploaded through `/v2/` cannot be: then `bundle_missing`).
    let committed = with_restores(hub, &restorable, || {
        hub.store
            .publish_claiming(&actor, &new, Some(&claim), Some(&m))
    })
    .await?;
    let (seq, at, log) = committed.map_err(|e| match e {
        StoreError::VersionExists => PublishError::VersionExists {
            name: name.clone(),
            version: version.clone(),
        },
        StoreError::VersionDeleted => PublishError::VersionDeleted {
            name: name.clone(),
            version: version.clone(),
        },
        StoreError::VersionRemoved(reason) => PublishError::VersionRemoved {
            name: name.clone(),
            version: version.clone(),
            reason,
        },
        StoreError::KeyRevoked => PublishError::KeyRevoked {
            key_id: key_id.to_string(),
            namespace: ns.name.clone(),
        },
        StoreError::Conflict(m) => PublishError::Conflict(m),
        StoreError::BlobUnavailable { digest, why } => {
            PublishError::BundleMissing(format!("the hub's blob {digest} {why}"))
        }
        other => other.into(),
    })?;
    // After the commit, the mirrored manifest is tagged with the version (its blobs are there
    // already). Only the tag is at stake, so a failure is logged and the publish stands: a
    // client's retry of the push makes it (`mirror_tags::publish_pushed`), else the repair
    // pass does (`mirror_tags::repair_pass`).
    if let Some(p) = mirrored
        && let Err(e) = tag_mirror(hub, &repository, &version, p, &oci.bytes).await
    {
        tracing::warn!(agent.name = %repository, agent.version = %version, error = %e,
            "cannot tag the agent's OCI manifest in the upstream registry");
    }
    Ok(Published {
        name,
        version,
        manifest_digest: digest,
        bundle_digest: bundle.map(|(d, _)| d),
        key_id: key_id.to_string(),
        seq,
        published_at: at,
        oci_digest: oci.digest,
        log,
    })
}

/// Runs `commit` (a transaction that claims blobs) until it does not fail for a blob a garbage
/// collection took that `restorable` holds the bytes of: that blob is stored again and the
/// transaction retried, at most [`RESTORE_ATTEMPTS`] times. Any other outcome is returned.
async fn with_restores<T, Fut>(
    hub: &Hub,
    restorable: &[(Digest, &[u8])],
    mut commit: impl FnMut() -> Fut,
) -> Result<Result<T, StoreError>, PublishError>
where
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut attempts = 0;
    loop {
        match commit().await {
            Err(StoreError::BlobUnavailable { digest, why }) => {
                match restorable.iter().find(|(d, _)| d.to_string() == digest) {
                    Some((d, b)) if attempts < RESTORE_ATTEMPTS => {
                        attempts += 1;
                        store_bytes(hub, d, b).await?;
                    }
                    _ => return Ok(Err(StoreError::BlobUnavailable { digest, why })),
                }
            }
            r => return Ok(r),
        }
    }
}

fn parse_version(v: &str) -> Result<String, PublishError> {
    let bad = |why: String| PublishError::InvalidVersion {
        version: v.to_string(),
        why,
    };
    let parsed = parse_exact_version(v).map_err(|m| bad(m.to_string()))?;
    if !parsed.build.is_empty() {
        return Err(bad(
            "build metadata (`+…`) is not allowed; versions are OCI tags".into(),
        ));
    }
    Ok(parsed.to_string())
}

fn decoded(b64: Option<&str>) -> Result<Vec<u8>, PublishError> {
    STANDARD
        .decode(b64.unwrap_or_default().as_bytes())
        .map_err(|e| PublishError::InvalidBundle(e.to_string()))
}

/// The bundle of a bundle source (digest and size), checked and, when sent inline, stored.
async fn bundle(
    hub: &Hub,
    name: &AgentName,
    manifest: &Manifest,
    inline: Option<&str>,
) -> Result<Option<(Digest, u64)>, PublishError> {
    let Source::Bundle(b) = &manifest.source else {
        if inline.is_some() {
            return Err(PublishError::UnexpectedBundle(
                manifest.source.kind().to_string(),
            ));
        }
        return Ok(None);
    };
    let limit = hub.config.max_bundle_bytes;
    if b.size > limit {
        return Err(PublishError::BundleTooLarge {
            size: b.size,
            limit,
        });
    }
    let repository = name.to_string();
    match inline {
        Some(b64) => {
            let size = base64_decoded_len(b64);
            if size > hub.config.max_inline_bundle_bytes {
                return Err(PublishError::InlineBundleTooLarge {
                    size,
                    limit: hub.config.max_inline_bundle_bytes,
                    name: name.clone(),
                });
            }
            let bytes = decoded(Some(b64))?;
            if bytes.len() as u64 > limit {
                return Err(PublishError::BundleTooLarge {
                    size: bytes.len() as u64,
                    limit,
                });
            }
            if bytes.len() as u64 != b.size {
                return Err(PublishError::BundleSizeMismatch {
                    declared: b.size,
                    actual: format!("{} were sent", bytes.len()),
                });
            }
            let actual = Digest::of(&bytes);
            if actual != b.digest {
                return Err(PublishError::BundleDigestMismatch {
                    declared: b.digest,
                    actual,
                });
            }
            // Stored (or, when there already, its time refreshed) and registered; the
            // transaction claims it, and stores it again from these bytes if a garbage
            // collection took it in between.
            store_bytes(hub, &b.digest, &bytes).await?;
        }
        None => {
            // Only a blob of this agent's repository (uploaded to
            // `/v2/{publisher}/{agent}/blobs/uploads/`, or of an earlier version): a publisher
            // cannot take another repository's blob, or a deleted agent's, by naming its digest.
            if !hub
                .store
                .blob_in_repository(&repository, &b.digest.to_string())
                .await?
            {
                return Err(PublishError::BundleMissing(format!(
                    "`{name}` has no blob {}; upload it to /v2/{name}/blobs/uploads/ first",
                    b.digest
                )));
            }
            let size = hub.blobs.size(b.digest).await?;
            match size {
                Some(s) if s == b.size => {}
                Some(s) => {
                    return Err(PublishError::BundleSizeMismatch {
                        declared: b.size,
                        actual: format!("the stored blob is {s}"),
                    });
                }
                None => {
                    return Err(PublishError::BundleMissing(format!(
                        "the hub has no blob {}",
                        b.digest
                    )));
                }
            }
        }
    }
    Ok(Some((b.digest, b.size)))
}

/// The OCI manifest recorded with a version.
struct OciRecord {
    bytes: Vec<u8>,
    digest: Digest,
    digest_text: String,
    media_type: String,
    artifact_type: Option<String>,
    subject: Option<String>,
    /// Config and layers, with their declared sizes.
    blobs: Vec<(Digest, Option<u64>)>,
    /// Blobs this publish can store again (the derived manifest's envelope and empty blob).
    own: Vec<(Digest, Vec<u8>)>,
}

impl OciRecord {
    /// A pushed manifest; `envelope`: the bytes of its config blob, which the publish can
    /// store again.
    fn pushed(p: Pushed<'_>, envelope: &[u8]) -> OciRecord {
        let own = p
            .parsed
            .config
            .iter()
            .filter(|c| c.digest == Digest::of(envelope))
            .map(|c| (c.digest, envelope.to_vec()))
            .collect();
        OciRecord {
            bytes: p.bytes.to_vec(),
            digest: p.digest,
            digest_text: p.digest.to_string(),
            media_type: p.parsed.media_type.clone(),
            artifact_type: p.parsed.artifact_type.clone(),
            subject: p.parsed.subject.as_ref().map(|s| s.digest.to_string()),
            blobs: p
                .parsed
                .config
                .iter()
                .chain(p.parsed.layers.iter())
                .map(|d| (d.digest, Some(d.size)))
                .collect(),
            own,
        }
    }

    /// The manifest of a version published through the JSON API: an OCI 1.1 image manifest
    /// with `artifactType` [`AGENT_ARTIFACT_V1`], the envelope as its config blob (stored now)
    /// and the bundle (or the empty blob) as its layer.
    async fn derive(
        hub: &Hub,
        repository: &str,
        version: &str,
        envelope_json: &str,
        bundle: Option<(Digest, u64)>,
    ) -> Result<OciRecord, PublishError> {
        let env_bytes = envelope_json.as_bytes().to_vec();
        let env_digest = Digest::of(&env_bytes);
        let empty = Digest::of(OCI_EMPTY_CONTENT);
        store_bytes(hub, &env_digest, &env_bytes).await?;
        if bundle.is_none() {
            store_bytes(hub, &empty, OCI_EMPTY_CONTENT).await?;
        }
        let agent = repository.rsplit('/').next().unwrap_or(repository);
        let (layer, layer_blob) = match bundle {
            Some((d, size)) => (
                json!({
                    "mediaType": AGENT_BUNDLE_V1,
                    "digest": d.to_string(),
                    "size": size,
                    "annotations": {TITLE: format!("{agent}-{version}.tar.gz")},
                }),
                (d, Some(size)),
            ),
            None => (
                json!({
                    "mediaType": OCI_EMPTY,
                    "digest": empty.to_string(),
                    "size": OCI_EMPTY_CONTENT.len(),
                }),
                (empty, Some(OCI_EMPTY_CONTENT.len() as u64)),
            ),
        };
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_IMAGE_MANIFEST,
            "artifactType": AGENT_ARTIFACT_V1,
            "config": {
                "mediaType": AGENT_ENVELOPE_V1,
                "digest": env_digest.to_string(),
                "size": env_bytes.len(),
            },
            "layers": [layer],
            "annotations": {"org.opencontainers.image.version": version},
        });
        let bytes =
            serde_json::to_vec(&manifest).map_err(|e| PublishError::Internal(e.to_string()))?;
        let mut own = vec![(env_digest, env_bytes.clone())];
        if bundle.is_none() {
            own.push((empty, OCI_EMPTY_CONTENT.to_vec()));
        }
        let digest = Digest::of(&bytes);
        Ok(OciRecord {
            digest,
            digest_text: digest.to_string(),
            bytes,
            media_type: OCI_IMAGE_MANIFEST.to_string(),
            artifact_type: Some(AGENT_ARTIFACT_V1.to_string()),
            subject: None,
            blobs: vec![(env_digest, Some(env_bytes.len() as u64)), layer_blob],
            own,
        })
    }

    fn restorable(&self) -> Vec<(Digest, &[u8])> {
        self.own.iter().map(|(d, b)| (*d, b.as_slice())).collect()
    }

    fn manifest<'a>(&'a self, repository: &'a str, version: &'a str) -> NewManifest<'a> {
        NewManifest {
            repository,
            digest: &self.digest_text,
            media_type: &self.media_type,
            artifact_type: self.artifact_type.as_deref(),
            subject: self.subject.as_deref(),
            content: &self.bytes,
            tag: Some(version),
        }
    }
}

/// Records the derived OCI manifest of every version that has none: versions published before
/// the manifest was recorded in the publish's own transaction. Run when the hub starts; returns
/// how many it recorded. (It replaces the old derive-on-first-read repair.)
pub async fn backfill_manifests(hub: &Hub) -> Result<usize, PublishError> {
    let todo = hub.store.unrecorded_versions().await?;
    for v in &todo {
        let bundle = match (&v.bundle_digest, v.bundle_size) {
            (Some(d), Some(s)) => Some((
                Digest::parse(d).map_err(|e| PublishError::Internal(e.to_string()))?,
                u64::try_from(s).map_err(|e| PublishError::Internal(e.to_string()))?,
            )),
            _ => None,
        };
        let oci = OciRecord::derive(hub, &v.name, &v.version, &v.envelope, bundle).await?;
        let claim = BlobClaim::new(hub.blobs.clone(), oci.blobs.clone());
        let m = oci.manifest(&v.name, &v.version);
        let restorable = oci.restorable();
        match with_restores(hub, &restorable, || hub.store.put_manifest(&m, &claim)).await? {
            // The bundle is gone: the version cannot be served under `/v2/`.
            Err(StoreError::BlobUnavailable { digest, why }) => {
                tracing::warn!(agent.name = %v.name, agent.version = %v.version,
                    blob = %digest, why = %why,
                    "cannot record the OCI manifest of a version: a blob is missing");
            }
            r => r?,
        }
    }
    Ok(todo.len())
}
