//! Agent versions as OCI artifacts: repository `publisher/agent`, tag = version, an OCI 1.1
//! image manifest with `artifactType` [`AGENT_ARTIFACT_V1`], the signed envelope as its config
//! blob and the bundle (for `bundle` sources) as its layer.
//!
//! Both ways in end in the same publish: a manifest pushed through `/v2/` runs the JSON API's
//! publish (same checks, same transaction with its outbox row) before it is recorded, and a
//! publish through the JSON API records the manifest the hub derives from the version.

use index_schema::envelope::Envelope;
use index_schema::manifest::{Manifest, Source};
use index_schema::media_types::{
    AGENT_ARTIFACT_V1, AGENT_BUNDLE_V1, AGENT_ENVELOPE_V1, OCI_EMPTY, OCI_EMPTY_CONTENT,
    OCI_IMAGE_MANIFEST,
};
use index_schema::name::Digest;
use serde_json::{Value, json};

use super::{OciError, OciResult, Parsed, db};
use crate::api::agents::{PublishRequest, publish_inner};
use crate::api::{AppState, Auth};
use crate::auth::Principal;

/// The layer annotation naming the file oras writes a layer to.
const TITLE: &str = "org.opencontainers.image.title";

/// Publishes a pushed agent manifest (`parsed`, `bytes`) to `repository` as version `tag`,
/// then records it byte-exact.
pub async fn publish_pushed(
    app: &AppState,
    principal: &Principal,
    repository: &str,
    tag: Option<&str>,
    parsed: &Parsed,
    bytes: &[u8],
    digest: &Digest,
) -> OciResult<()> {
    let Some(version) = tag else {
        return Err(OciError::manifest_invalid(
            "push an ofc agent artifact by tag: the tag is its version",
        ));
    };
    let Some((publisher, agent)) = repository.split_once('/').filter(|(_, a)| !a.contains('/'))
    else {
        return Err(OciError::name_invalid(
            "an ofc agent's repository is `publisher/agent`",
        ));
    };
    // Clients that cannot set `artifactType` (oras-py) leave it out; OCI 1.1 then reads the
    // config's media type as the artifact type, which names the envelope unambiguously.
    let typed = parsed.artifact_type.as_deref() == Some(AGENT_ARTIFACT_V1)
        || !parsed.artifact_type_declared;
    if parsed.media_type != OCI_IMAGE_MANIFEST || !typed {
        return Err(OciError::manifest_invalid(format!(
            "an ofc agent artifact is an OCI image manifest with artifactType {AGENT_ARTIFACT_V1}"
        )));
    }
    let config = parsed
        .config
        .as_ref()
        .expect("image manifests have a config");
    if config.media_type != AGENT_ENVELOPE_V1 {
        return Err(OciError::manifest_invalid(format!(
            "the config of an ofc agent artifact is the signed envelope ({AGENT_ENVELOPE_V1})"
        )));
    }
    if config.size > index_schema::envelope::MAX_ENVELOPE_BYTES as u64 {
        return Err(OciError::manifest_invalid("the envelope is too large"));
    }
    let blobs = app.blobs.clone();
    let cd = config.digest;
    let text = tokio::task::spawn_blocking(move || blobs.get(&cd))
        .await
        .map_err(OciError::internal)??
        .ok_or_else(|| OciError::manifest_invalid("the envelope blob is missing"))?;
    let envelope: Value = serde_json::from_slice(&text)
        .map_err(|e| OciError::manifest_invalid(format!("the envelope is not JSON: {e}")))?;

    // The layers must be exactly what the signed manifest says the source is. When the
    // envelope does not parse, the publish below reports why.
    if let Ok(env) = Envelope::from_json(&String::from_utf8_lossy(&text))
        && let Ok(m) = Manifest::from_json(&String::from_utf8_lossy(&env.payload))
    {
        check_layers(&m, parsed)?;
    }

    let req = PublishRequest {
        envelope,
        bundle: None,
    };
    let r = publish_inner(
        app,
        &Auth(principal.clone()),
        publisher,
        agent,
        version,
        req,
    )
    .await;
    match r {
        Ok(_) => app.metrics.publish(),
        Err(e) => {
            app.metrics.publish_refused();
            return Err(e.into());
        }
    }
    // The version committed; its envelope blob is referenced only once the manifest is, so a
    // collection may take it in between: then it is stored again (its bytes are at hand).
    let claim = db::BlobClaim::new(
        app.blobs.clone(),
        parsed
            .config
            .iter()
            .chain(parsed.layers.iter())
            .map(|d| (d.digest, Some(d.size)))
            .collect(),
    );
    let subject = parsed.subject.as_ref().map(|s| s.digest.to_string());
    let m = db::NewManifest {
        repository,
        digest: &digest.to_string(),
        media_type: &parsed.media_type,
        artifact_type: parsed.artifact_type.as_deref(),
        subject: subject.as_deref(),
        content: bytes,
        tag: Some(version),
    };
    let restorable = [(cd, text.as_slice())];
    put_manifest_restoring(app, &m, &claim, &restorable).await?;
    mirror_logged(app, repository, version, parsed, bytes).await;
    Ok(())
}

/// Records a manifest ([`db::put_manifest`]); when a blob of `restorable` (digest and bytes)
/// was collected before the transaction claimed it, stores it again and retries.
async fn put_manifest_restoring(
    app: &AppState,
    m: &db::NewManifest<'_>,
    claim: &db::BlobClaim,
    restorable: &[(Digest, &[u8])],
) -> OciResult<()> {
    let mut attempts = 0;
    loop {
        match db::put_manifest(app.store.db(), m, claim).await {
            Err(crate::store::StoreError::BlobUnavailable { digest, why }) if attempts < 5 => {
                let Some((d, b)) = restorable.iter().find(|(d, _)| d.to_string() == digest) else {
                    return Err(crate::store::StoreError::BlobUnavailable { digest, why }.into());
                };
                attempts += 1;
                super::gc::store_bytes(app, d, b).await?;
            }
            r => return Ok(r?),
        }
    }
}

/// Mirrors an agent's manifest upstream after its publish committed; a failure is logged (the
/// publish stands, and the blobs are upstream already).
async fn mirror_logged(
    app: &AppState,
    repository: &str,
    version: &str,
    parsed: &Parsed,
    bytes: &[u8],
) {
    if let Err(e) = super::mirror(app, repository, version, parsed, bytes).await {
        tracing::warn!(agent.name = %repository, agent.version = %version, error = %e.message,
            "cannot mirror the agent's OCI manifest to the upstream registry");
    }
}

fn check_layers(m: &Manifest, parsed: &Parsed) -> OciResult<()> {
    match &m.source {
        Source::Bundle(b) => {
            let ok = parsed.layers.len() == 1
                && parsed.layers[0].digest == b.digest
                && parsed.layers[0].size == b.size
                && parsed.layers[0].media_type == AGENT_BUNDLE_V1;
            if !ok {
                return Err(OciError::manifest_invalid(format!(
                    "an agent with a bundle source has exactly one layer: {AGENT_BUNDLE_V1} {} ({} bytes)",
                    b.digest, b.size
                )));
            }
        }
        other => {
            if parsed.layers.iter().any(|l| l.media_type != OCI_EMPTY) {
                return Err(OciError::manifest_invalid(format!(
                    "a `{}` source has no bundle layer",
                    other.kind()
                )));
            }
        }
    }
    Ok(())
}

/// The OCI manifest of a version published through the JSON API, recorded with its tag (and
/// its envelope and empty blobs stored). Idempotent.
pub async fn record_version(
    app: &AppState,
    repository: &str,
    version: &str,
    envelope_json: &str,
    bundle: Option<(Digest, u64)>,
) -> OciResult<db::ManifestRow> {
    let env_bytes = envelope_json.as_bytes().to_vec();
    let env_digest = Digest::of(&env_bytes);
    let empty = Digest::of(OCI_EMPTY_CONTENT);
    let env_len = env_bytes.len();
    super::gc::store_bytes(app, &env_digest, &env_bytes).await?;
    if bundle.is_none() {
        super::gc::store_bytes(app, &empty, OCI_EMPTY_CONTENT).await?;
    }
    let agent = repository.rsplit('/').next().unwrap_or(repository);
    let layer = match bundle {
        Some((d, size)) => json!({
            "mediaType": AGENT_BUNDLE_V1,
            "digest": d.to_string(),
            "size": size,
            "annotations": {TITLE: format!("{agent}-{version}.tar.gz")},
        }),
        None => json!({
            "mediaType": OCI_EMPTY,
            "digest": empty.to_string(),
            "size": OCI_EMPTY_CONTENT.len(),
        }),
    };
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_MANIFEST,
        "artifactType": AGENT_ARTIFACT_V1,
        "config": {
            "mediaType": AGENT_ENVELOPE_V1,
            "digest": env_digest.to_string(),
            "size": env_len,
        },
        "layers": [layer],
        "annotations": {"org.opencontainers.image.version": version},
    });
    let bytes = serde_json::to_vec(&manifest).map_err(OciError::internal)?;
    let digest = Digest::of(&bytes).to_string();
    let claim = db::BlobClaim::new(
        app.blobs.clone(),
        vec![
            (env_digest, Some(env_len as u64)),
            match bundle {
                Some((d, size)) => (d, Some(size)),
                None => (empty, Some(OCI_EMPTY_CONTENT.len() as u64)),
            },
        ],
    );
    let restorable = [
        (env_digest, env_bytes.as_slice()),
        (empty, OCI_EMPTY_CONTENT),
    ];
    put_manifest_restoring(
        app,
        &db::NewManifest {
            repository,
            digest: &digest,
            media_type: OCI_IMAGE_MANIFEST,
            artifact_type: Some(AGENT_ARTIFACT_V1),
            subject: None,
            content: &bytes,
            tag: Some(version),
        },
        &claim,
        &restorable,
    )
    .await?;
    let parsed = super::parse_manifest(Some(OCI_IMAGE_MANIFEST), &bytes)?;
    mirror_logged(app, repository, version, &parsed, &bytes).await;
    Ok(db::ManifestRow {
        digest,
        media_type: OCI_IMAGE_MANIFEST.to_string(),
        artifact_type: Some(AGENT_ARTIFACT_V1.to_string()),
        content: bytes,
    })
}

/// The manifest of version `tag` of agent `repository`, derived and recorded now, when the
/// version exists but has no recorded manifest.
pub async fn repair(
    app: &AppState,
    repository: &str,
    tag: &str,
) -> OciResult<Option<db::ManifestRow>> {
    let Some(agent) = app.store.agent(repository).await? else {
        return Ok(None);
    };
    let Some(v) = app.store.version(agent.id, tag).await? else {
        return Ok(None);
    };
    let bundle = match (&v.bundle_digest, v.bundle_size) {
        (Some(d), Some(s)) => Some((
            Digest::parse(d).map_err(OciError::internal)?,
            u64::try_from(s).map_err(OciError::internal)?,
        )),
        _ => None,
    };
    record_version(app, repository, tag, &v.envelope, bundle)
        .await
        .map(Some)
}

/// Called after a JSON-API publish committed: records the version's OCI manifest. A failure
/// is logged, not returned (the publish stands); the manifest is then derived on first read.
pub async fn after_publish(app: &AppState, repository: &str, version: &str) {
    if let Err(e) = repair(app, repository, version).await {
        tracing::warn!(agent.name = %repository, agent.version = %version, error = %e.message,
            "cannot record the OCI manifest of a publish; it will be derived on first read");
    }
}
