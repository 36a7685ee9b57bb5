//! Agent versions as OCI artifacts: repository `publisher/agent`, tag = version, an OCI 1.1
//! image manifest with `artifactType` [`AGENT_ARTIFACT_V1`], the signed envelope as its config
//! blob and the bundle (for `bundle` sources) as its layer.
//!
//! Both ways in end in the same publish service ([`hub_core::publish`]): a manifest pushed through
//! `/v2/` is checked for the artifact's shape here, then published and recorded byte-exact in
//! the service's one transaction; a publish through the JSON API records the manifest the
//! service derives from the version.

use index_schema::envelope::Envelope;
use index_schema::manifest::{Manifest, Source};
use index_schema::media_types::{
    AGENT_ARTIFACT_V1, AGENT_BUNDLE_V1, AGENT_ENVELOPE_V1, OCI_EMPTY, OCI_IMAGE_MANIFEST,
};
use index_schema::name::Digest;

use hub_core::auth::Principal;
use hub_core::mirror_tags::publish_pushed as publish;
use hub_core::oci::Parsed;
use hub_core::publish::{Pushed, Request};

use super::error::{OciError, OciResult};
use crate::error::ApiError;
use crate::state::AppState;

/// Publishes a pushed agent manifest (`parsed`, `bytes`) to `repository` as version `tag`,
/// recorded byte-exact in the publish's transaction.
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
    let text = app
        .core
        .blobs
        .get(config.digest)
        .await?
        .ok_or_else(|| OciError::manifest_invalid("the envelope blob is missing"))?;
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&text) {
        return Err(OciError::manifest_invalid(format!(
            "the envelope is not JSON: {e}"
        )));
    }
    let envelope = std::str::from_utf8(&text)
        .map_err(|e| OciError::manifest_invalid(format!("the envelope is not UTF-8: {e}")))?;
    // The layers must be exactly what the signed manifest says the source is. When the
    // envelope does not parse, the publish reports why.
    if let Ok(env) = Envelope::from_json(envelope)
        && let Ok(m) = Manifest::from_json(&String::from_utf8_lossy(&env.payload))
    {
        check_layers(&m, parsed)?;
    }
    // A push of the manifest the version already has is its publish again (201, the same
    // digest; see `hub_core::mirror_tags`); another manifest for it is `version_exists`.
    publish(
        &app.core,
        principal,
        Request {
            publisher,
            agent,
            version,
            envelope,
            inline_bundle: None,
            pushed: Some(Pushed {
                bytes,
                digest: *digest,
                parsed,
            }),
        },
    )
    .await
    .map_err(|e| OciError::from(ApiError::from(e)))?;
    Ok(())
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
