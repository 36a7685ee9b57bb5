//! Garbage collection of blobs no manifest and no version references, and of expired upload
//! sessions.
//!
//! Safe while pushes continue: a blob is only removed when it is older than the grace period
//! (its file time, which uploads set and every manifest push referencing it refreshes before
//! checking it exists), it is not referenced by any manifest or version read *after* the blob
//! list was taken, and its time is still old when it is removed.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use index_schema::name::Digest;
use serde::Serialize;
use serde_json::Value;

use super::{Caller, OciError, OciResult, OciState, authorize, db, parse_digest};
use crate::api::AppState;
use crate::auth::Scope;

/// What a collection did.
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct GcReport {
    /// Blobs examined.
    pub blobs_seen: usize,
    /// Blobs removed.
    pub blobs_deleted: usize,
    /// Bytes freed.
    pub bytes_freed: u64,
    /// Upload sessions expired.
    pub uploads_expired: usize,
}

/// Every blob digest a manifest or a published version references.
pub async fn referenced(app: &AppState) -> OciResult<HashSet<Digest>> {
    let dbh = app.store.db();
    let mut set = HashSet::new();
    for d in db::version_bundles(dbh).await? {
        if let Ok(d) = Digest::parse(&d) {
            set.insert(d);
        }
    }
    let mut after: Option<(String, String)> = None;
    // Bounded: every page advances the cursor; a page shorter than the limit ends the scan.
    loop {
        let page = db::manifest_page(
            dbh,
            after.as_ref().map(|(r, d)| (r.as_str(), d.as_str())),
            500,
        )
        .await?;
        for (_, _, content) in &page {
            let v: Value = serde_json::from_slice(content).unwrap_or(Value::Null);
            let descs = v.get("config").into_iter().chain(
                v.get("layers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
            for d in descs {
                if let Some(d) = d.get("digest").and_then(Value::as_str)
                    && let Ok(d) = Digest::parse(d)
                {
                    set.insert(d);
                }
            }
        }
        match page.last() {
            Some((r, d, _)) if page.len() == 500 => after = Some((r.clone(), d.clone())),
            _ => break,
        }
    }
    Ok(set)
}

/// Removes unreferenced blobs older than `grace`, expired upload sessions (idle longer than
/// `upload_ttl`) and stale staging files.
pub async fn collect(app: &AppState, grace: Duration, upload_ttl: Duration) -> OciResult<GcReport> {
    let mut report = GcReport::default();
    let ids = db::expire_uploads(app.store.db(), upload_ttl.as_millis() as i64).await?;
    report.uploads_expired = ids.len();
    let staging = app.blobs.staging_dir();
    for id in &ids {
        let _ = tokio::fs::remove_file(staging.join(format!("session-{id}"))).await;
    }

    let blobs = app.blobs.clone();
    let listed = tokio::task::spawn_blocking(move || blobs.list())
        .await
        .map_err(OciError::internal)??;
    report.blobs_seen = listed.len();
    let cutoff = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let candidates: Vec<Digest> = listed
        .into_iter()
        .filter(|(_, t)| *t < cutoff)
        .map(|(d, _)| d)
        .collect();
    if candidates.is_empty() {
        return Ok(report);
    }
    let keep = referenced(app).await?;
    let blobs = app.blobs.clone();
    let (n, bytes) = tokio::task::spawn_blocking(move || {
        let mut n = 0usize;
        let mut bytes = 0u64;
        for d in candidates.into_iter().filter(|d| !keep.contains(d)) {
            // Re-check the time: a push may have touched it since the list was taken.
            let fresh = blobs.list_one(&d).is_none_or(|(_, t)| t >= cutoff);
            if fresh {
                continue;
            }
            let size = blobs.size(&d).ok().flatten().unwrap_or(0);
            if blobs.delete(&d).unwrap_or(false) {
                n += 1;
                bytes += size;
            }
        }
        (n, bytes)
    })
    .await
    .map_err(OciError::internal)?;
    report.blobs_deleted = n;
    report.bytes_freed = bytes;
    tracing::info!(
        blobs.deleted = n,
        bytes.freed = bytes,
        uploads.expired = report.uploads_expired,
        "garbage collection done"
    );
    Ok(report)
}

/// The last-use time of one blob.
trait ListOne {
    fn list_one(&self, d: &Digest) -> Option<(Digest, SystemTime)>;
}

impl ListOne for std::sync::Arc<dyn crate::blob::BlobStore> {
    fn list_one(&self, d: &Digest) -> Option<(Digest, SystemTime)> {
        let (f, _) = self.open(d).ok().flatten()?;
        let t = f.metadata().ok()?.modified().ok()?;
        Some((*d, t))
    }
}

/// `DELETE /v2/<name>/blobs/<digest>`: removes a blob no manifest or version references.
pub(super) async fn delete_blob(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    digest: &str,
) -> OciResult<Response> {
    authorize(st, parts, caller, repository, &[Scope::Yank]).await?;
    let d = parse_digest(digest)?;
    if referenced(&st.app).await?.contains(&d) {
        return Err(OciError::denied(format!(
            "blob {d} is referenced by a manifest or an agent version; delete those first"
        )));
    }
    let blobs = st.app.blobs.clone();
    let existed = tokio::task::spawn_blocking(move || blobs.delete(&d))
        .await
        .map_err(OciError::internal)??;
    if !existed {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            format!("blob {d} is not in `{repository}`"),
        ));
    }
    Ok(StatusCode::ACCEPTED.into_response())
}
