//! Manifests: read by tag or digest, push (an agent artifact is a publish), delete, tags
//! list, referrers. Their structure is checked by the core ([`hub_core::oci`]).
//!
//! Manifests are stored byte-exact in SQL (up to 4 MiB) and tags point at digests. An image
//! manifest whose config is the signed envelope (the ofc agent `artifactType`) is an agent
//! version: its push runs the publish service, which records the pushed manifest in the version's
//! own transaction. Agent versions are immutable here: their tags cannot be deleted or overwritten
//! (yank through the ofc API instead).

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::auth::Scope;
use hub_core::oci::{mirror, parse_manifest};
use hub_core::store::{BlobClaim, ManifestRow, NewManifest, StoreError};
use index_schema::hub_api::ErrorCode;
use index_schema::media_types;
use index_schema::name::Digest;
use serde_json::{Value, json};

use super::access::{Caller, authorize, unauthorized};
use super::artifact::publish_pushed;
use super::error::{OciError, OciResult};
use super::names::{check_repository, hv, parse_digest, query, tag_ok};
use super::state::{MAX_MANIFEST_BYTES, OciState, held_body};

/// A reference: a tag or a digest.
pub(crate) enum Reference {
    Tag(String),
    Digest(Digest),
}

pub(crate) fn parse_reference(r: &str) -> OciResult<Reference> {
    if r.contains(':') {
        Ok(Reference::Digest(parse_digest(r)?))
    } else if tag_ok(r) {
        Ok(Reference::Tag(r.to_string()))
    } else {
        Err(OciError::new(
            StatusCode::BAD_REQUEST,
            "TAG_INVALID",
            format!("invalid tag `{}`", r.escape_default()),
        ))
    }
}

pub(crate) async fn find_manifest(
    st: &OciState,
    repository: &str,
    reference: &Reference,
) -> OciResult<Option<ManifestRow>> {
    let store = &st.app.core.store;
    match reference {
        Reference::Digest(d) => Ok(store.manifest(repository, &d.to_string()).await?),
        Reference::Tag(t) => match store.manifest_by_tag(repository, t).await? {
            // An agent version deleted by an administrator takes its tag with it.
            Some(m)
                if m.artifact_type.as_deref() == Some(media_types::AGENT_ARTIFACT_V1)
                    || m.artifact_type.as_deref() == Some(media_types::AGENT_ENVELOPE_V1) =>
            {
                let live = match st.app.core.store.agent(repository).await? {
                    Some(a) => st.app.core.store.version(a.id, t).await?.is_some(),
                    None => false,
                };
                if live {
                    Ok(Some(m))
                } else {
                    store.delete_tag(repository, t).await?;
                    Ok(None)
                }
            }
            other => Ok(other),
        },
    }
}

pub(crate) async fn get_manifest(
    st: &OciState,
    parts: &Parts,
    repository: &str,
    reference: &str,
) -> OciResult<Response> {
    let r = parse_reference(reference)?;
    let Some(m) = find_manifest(st, repository, &r).await? else {
        return Err(unknown_manifest(st, repository, &r, reference).await);
    };
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, hv(&m.media_type));
    h.insert("docker-content-digest", hv(&m.digest));
    h.insert(header::ETAG, hv(&format!("\"{}\"", m.digest)));
    let size = usize::try_from(m.size.max(0)).unwrap_or(usize::MAX);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    if parts.method == Method::HEAD {
        return Ok((StatusCode::OK, h).into_response());
    }
    let permit = st.manifest_memory(size).await?;
    let Some(content) = st
        .app
        .core
        .store
        .manifest_content(repository, &m.digest)
        .await?
    else {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            format!("manifest `{reference}` was deleted"),
        ));
    };
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(content.len()));
    Ok((StatusCode::OK, h, held_body(content, permit)).into_response())
}

/// 404 `MANIFEST_UNKNOWN` for a manifest that is not there; for the tag of a removed agent
/// version, naming the removal in the message and in `detail` (see [`hub_core::lifecycle`]
/// for why 404 and not the JSON API's 410).
async fn unknown_manifest(
    st: &OciState,
    repository: &str,
    r: &Reference,
    reference: &str,
) -> OciError {
    let plain = || {
        OciError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            format!("manifest `{reference}` is not in `{repository}`"),
        )
    };
    let Reference::Tag(tag) = r else {
        return plain();
    };
    match hub_core::agents::removal(&st.app.core, repository, tag).await {
        Ok(Some(removed)) => OciError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            format!(
                "`{repository}` {tag} was removed (reason class `{}`); its tag will never name \
                 a manifest again",
                removed.reason
            ),
        )
        .detail(json!({
            "ofc_code": ErrorCode::VersionRemoved,
            "reason": removed.reason,
            "removed_at": removed.removed_at,
            "manifest_digest": removed.manifest_digest,
        })),
        Ok(None) => plain(),
        Err(e) => e.into(),
    }
}

pub(crate) async fn read_limited(body: Body, limit: usize) -> OciResult<Vec<u8>> {
    axum::body::to_bytes(body, limit)
        .await
        .map(|b| b.to_vec())
        .map_err(|_| {
            OciError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "SIZE_INVALID",
                format!("the manifest is larger than {limit} bytes"),
            )
        })
}

pub(crate) async fn put_manifest(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    reference: &str,
    body: Body,
) -> OciResult<Response> {
    // Authenticate before reading the body; scope decided below.
    authorize(
        st,
        parts,
        caller,
        repository,
        &[Scope::PublishNew, Scope::PublishUpdate],
    )
    .await?;
    let r = parse_reference(reference)?;
    if let Some(len) = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > MAX_MANIFEST_BYTES as u64
    {
        return Err(OciError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "SIZE_INVALID",
            format!("the manifest is {len} bytes; the limit is {MAX_MANIFEST_BYTES}"),
        ));
    }
    let bytes = read_limited(body, MAX_MANIFEST_BYTES).await?;
    let digest = Digest::of(&bytes);
    if let Reference::Digest(d) = &r
        && *d != digest
    {
        return Err(OciError::digest_invalid(format!(
            "the manifest's digest is {digest}, not {d}"
        )));
    }
    let ct = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let parsed = parse_manifest(ct, &bytes)?;

    // A namespace holds at most `max_manifests_per_namespace` manifests (a manifest pushed
    // again is no new one).
    let store = &st.app.core.store;
    let max = st.app.core.config.max_manifests_per_namespace;
    if store
        .manifest(repository, &digest.to_string())
        .await?
        .is_none()
    {
        let ns = check_repository(repository)?;
        let n = store.namespace_manifests(ns).await?;
        if n >= max {
            return Err(OciError::denied(format!(
                "quota exceeded: namespace `{ns}` holds {n} manifests and \
                 max_manifests_per_namespace is {max}; delete some, or ask the hub's operator"
            )));
        }
        // Manifests are bytes the namespace holds too (they count in max_namespace_bytes).
        let quota = st.app.core.config.max_namespace_bytes;
        let held = store
            .namespace_bytes(ns, st.app.core.config.upload_ttl_ms(), "")
            .await?;
        if held.saturating_add(bytes.len() as u64) > quota {
            return Err(OciError::denied(format!(
                "quota exceeded: namespace `{ns}` holds {held} bytes of blobs, manifests and \
                 uploads, and this manifest of {} bytes would pass max_namespace_bytes \
                 ({quota}); delete some, or ask the hub's operator",
                bytes.len()
            )));
        }
    }

    // Everything referenced must be here already: checked now for a prompt answer, and again
    // inside the transaction that records the manifest, after claiming the blobs (see `gc`).
    let claim = BlobClaim::new(
        st.app.core.blobs.clone(),
        parsed
            .config
            .iter()
            .chain(parsed.layers.iter())
            .map(|d| (d.digest, Some(d.size)))
            .collect(),
    );
    if let Some((d, why)) = claim.check_present().await? {
        return Err(StoreError::BlobUnavailable { digest: d, why }.into());
    }
    // And in this repository: a manifest cannot adopt another repository's blob by naming its
    // digest (upload it here, or mount it from a repository it belongs to).
    for (d, _) in &claim.needed {
        if !st
            .app
            .core
            .store
            .blob_in_repository(repository, &d.to_string())
            .await?
        {
            return Err(StoreError::BlobUnavailable {
                digest: d.to_string(),
                why: format!("is not in `{repository}`: upload it there or mount it"),
            }
            .into());
        }
    }
    for m in &parsed.manifests {
        if st
            .app
            .core
            .store
            .manifest(repository, &m.digest.to_string())
            .await?
            .is_none()
        {
            return Err(OciError::new(
                StatusCode::BAD_REQUEST,
                "MANIFEST_BLOB_UNKNOWN",
                format!("manifest {} is not in `{repository}`", m.digest),
            )
            .detail(json!({"digest": m.digest.to_string()})));
        }
    }

    let tag = match &r {
        Reference::Tag(t) => Some(t.as_str()),
        Reference::Digest(_) => None,
    };
    if parsed.is_agent() {
        let Caller::User(p) = caller else {
            return Err(unauthorized(
                parts,
                Some(repository),
                "authentication required",
            ));
        };
        publish_pushed(&st.app, p, repository, tag, &parsed, &bytes, &digest).await?;
    } else {
        let agent_repo = st.app.core.store.agent(repository).await?.is_some();
        if agent_repo && tag.is_some() {
            return Err(OciError::denied(format!(
                "`{repository}` is an ofc agent: its tags are versions, pushed as ofc agent \
                 artifacts (artifactType {})",
                media_types::AGENT_ARTIFACT_V1
            )));
        }
        let scope = if st.app.core.store.repository_exists(repository).await? {
            Scope::PublishUpdate
        } else {
            Scope::PublishNew
        };
        authorize(st, parts, caller, repository, &[scope]).await?;
        let reference = tag.map_or_else(|| digest.to_string(), str::to_string);
        mirror(&st.app.core, repository, &reference, &parsed, &bytes).await?;
        st.app
            .core
            .store
            .put_manifest(
                &NewManifest {
                    repository,
                    digest: &digest.to_string(),
                    media_type: &parsed.media_type,
                    artifact_type: parsed.artifact_type.as_deref(),
                    subject: parsed
                        .subject
                        .as_ref()
                        .map(|s| s.digest.to_string())
                        .as_deref(),
                    content: &bytes,
                    tag,
                },
                &claim,
            )
            .await?;
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::LOCATION,
        hv(&format!("/v2/{repository}/manifests/{digest}")),
    );
    h.insert("docker-content-digest", hv(&digest.to_string()));
    if let Some(s) = &parsed.subject {
        h.insert("oci-subject", hv(&s.digest.to_string()));
    }
    Ok((StatusCode::CREATED, h).into_response())
}

pub(crate) async fn delete_manifest(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    reference: &str,
) -> OciResult<Response> {
    authorize(st, parts, caller, repository, &[Scope::Yank]).await?;
    let r = parse_reference(reference)?;
    let immutable = || {
        OciError::denied(format!(
            "agent versions are immutable; yank `{repository}` versions through the ofc API instead"
        ))
    };
    let store = &st.app.core.store;
    let found = match &r {
        Reference::Tag(t) => {
            if let Some(a) = st.app.core.store.agent(repository).await?
                && st.app.core.store.version(a.id, t).await?.is_some()
            {
                return Err(immutable());
            }
            store.delete_tag(repository, t).await?
        }
        Reference::Digest(d) => {
            let d = d.to_string();
            match store.manifest(repository, &d).await? {
                Some(m)
                    if m.artifact_type.as_deref() == Some(media_types::AGENT_ARTIFACT_V1)
                        || m.artifact_type.as_deref() == Some(media_types::AGENT_ENVELOPE_V1) =>
                {
                    return Err(immutable());
                }
                Some(_) => store.delete_manifest(repository, &d).await?,
                None => false,
            }
        }
    };
    if !found {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            format!("manifest `{reference}` is not in `{repository}`"),
        ));
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

pub(crate) async fn tags_list(
    st: &OciState,
    parts: &Parts,
    repository: &str,
) -> OciResult<Response> {
    let q = query(parts);
    let n = match q.get("n") {
        Some(n) => Some(
            n.parse::<i64>()
                .ok()
                .filter(|n| (0..=10_000).contains(n))
                .ok_or_else(|| {
                    OciError::new(
                        StatusCode::BAD_REQUEST,
                        "PAGINATION_NUMBER_INVALID",
                        "n must be 0 to 10000",
                    )
                })?,
        ),
        None => None,
    };
    let last = q.get("last").map(String::as_str);
    let store = &st.app.core.store;
    let tags = store.tags(repository, last, n.unwrap_or(100_000)).await?;
    if tags.is_empty() && last.is_none() && !store.repository_exists(repository).await? {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "NAME_UNKNOWN",
            format!("no repository `{repository}`"),
        ));
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let (Some(n), Some(l)) = (n, tags.last())
        && tags.len() as i64 == n
    {
        h.insert(
            header::LINK,
            hv(&format!(
                "</v2/{repository}/tags/list?n={n}&last={l}>; rel=\"next\""
            )),
        );
    }
    let body = json!({"name": repository, "tags": tags});
    Ok((StatusCode::OK, h, body.to_string()).into_response())
}

/// Referrers in pages: at most [`REFERRERS_PAGE`] descriptors and about
/// [`REFERRERS_PAGE_BYTES`] of answer (one descriptor always fits), with a `Link` to the next
/// page. The manifests are read one at a time for their annotations, so an answer never holds
/// more than one manifest and its own page (it held every referrer's bytes at once).
pub(crate) async fn referrers(
    st: &OciState,
    parts: &Parts,
    repository: &str,
    digest: &str,
) -> OciResult<Response> {
    let d = parse_digest(digest)?;
    let q = query(parts);
    let filter = q.get("artifactType").map(String::as_str);
    let after = match q.get("last") {
        Some(l) => parse_digest(l)?.to_string(),
        None => String::new(),
    };
    let store = &st.app.core.store;
    let rows = store
        .referrers(
            repository,
            &d.to_string(),
            filter,
            &after,
            REFERRERS_PAGE as i64 + 1,
        )
        .await?;
    let more_rows = rows.len() > REFERRERS_PAGE;
    let mut out = Vec::new();
    let mut page_bytes = 0usize;
    let mut next = None;
    for (i, m) in rows.into_iter().take(REFERRERS_PAGE).enumerate() {
        if !out.is_empty() && page_bytes >= REFERRERS_PAGE_BYTES {
            next = out
                .last()
                .map(|d: &Value| d["digest"].as_str().unwrap_or("").to_owned());
            break;
        }
        let size = usize::try_from(m.size.max(0)).unwrap_or(usize::MAX);
        let annotations = {
            let _permit = st.manifest_memory(size).await?;
            store
                .manifest_content(repository, &m.digest)
                .await?
                .and_then(|c| serde_json::from_slice::<Value>(&c).ok())
                .and_then(|v| v.get("annotations").cloned())
        };
        let mut desc = json!({
            "mediaType": m.media_type,
            "digest": m.digest,
            "size": m.size,
        });
        if let Some(a) = &m.artifact_type {
            desc["artifactType"] = json!(a);
        }
        if let Some(a) = annotations {
            desc["annotations"] = a;
        }
        page_bytes += desc.to_string().len();
        out.push(desc);
        if i + 1 == REFERRERS_PAGE && more_rows {
            next = Some(m.digest.clone());
        }
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_types::OCI_IMAGE_INDEX),
    );
    if filter.is_some() {
        h.insert(
            "oci-filters-applied",
            HeaderValue::from_static("artifactType"),
        );
    }
    if let Some(last) = next {
        let mut q = vec![("last", last.as_str())];
        if let Some(f) = filter {
            q.push(("artifactType", f));
        }
        let q = serde_urlencoded::to_string(q).map_err(OciError::internal)?;
        h.insert(
            header::LINK,
            hv(&format!(
                "</v2/{repository}/referrers/{d}?{q}>; rel=\"next\""
            )),
        );
    }
    let body = json!({
        "schemaVersion": 2,
        "mediaType": media_types::OCI_IMAGE_INDEX,
        "manifests": out,
    })
    .to_string();
    let permit = st.manifest_memory(body.len()).await?;
    Ok((StatusCode::OK, h, held_body(body.into_bytes(), permit)).into_response())
}

/// Most descriptors in a page of referrers.
const REFERRERS_PAGE: usize = 100;
/// A page of referrers ends once its answer passes this many bytes.
const REFERRERS_PAGE_BYTES: usize = 1024 * 1024;
