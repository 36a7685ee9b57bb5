//! Garbage collection of blobs no manifest and no version references, and of expired upload
//! sessions; and the blob bookkeeping that makes it safe while pushes continue.
//!
//! **Why a collection never takes a blob an acknowledged push or publish references.** Every
//! blob has a row in `oci_blobs` (migration 0012; a file without one, from before the migration
//! or a crash, gets one on its next use or when gc marks it). The two sides meet on that row:
//!
//! - A *commit* — the transaction that records a manifest ([`db::put_manifest`]) or a version
//!   ([`crate::store::Store::publish_claiming`]) — first *claims* every blob it references
//!   ([`db::claim_blobs!`]: `INSERT … ON CONFLICT DO UPDATE SET used_at = now WHERE deleting_by
//!   IS NULL`, which takes the row's lock), aborting with a 4xx (`MANIFEST_BLOB_UNKNOWN`,
//!   `bundle_missing`) when a row is marked, and then, still inside the transaction, checks that
//!   each file is there with the declared size.
//! - A *collection* removes a file only after it *marked* the row itself ([`db::mark_blob`]: one
//!   statement, `… SET deleting_by = me WHERE deleting_by IS NULL AND used_at < cutoff`), and
//!   only if a reference scan that began after the mark committed finds no manifest or version
//!   naming the blob; otherwise it unmarks it. The row goes after the file.
//!
//! The row's lock (PostgreSQL, READ COMMITTED: the mark waits for a claiming transaction and
//! re-reads the row) and SQLite's single writer order every claim against the mark. A claim
//! ordered after the mark sees it and aborts (or, once the row is gone, inserts a fresh one and
//! finds the file missing, and aborts). A commit ordered before the mark committed before the
//! scan began, so the scan sees its reference and the blob stays. No timing is involved: not
//! the grace period, not the clocks of the two sides.
//!
//! The grace period is policy, not safety: it keeps blobs uploaded for a push that has not
//! committed yet. A blob is old when its file time (set by every upload, touch and use) is
//! before the cutoff — checked when listing and again after marking — and no claim, mount or
//! re-upload recorded a use since (`used_at`, checked in the marking statement itself).
//!
//! Uploads ([`store_file`], [`store_bytes`]) wait while a collection has the blob marked (it
//! is about to remove the file, which would take theirs), register it, and check afterwards
//! that their file is still there, placing it again if a collection took it in between; a mount
//! ([`use_existing`]) waits the same way, registers a use, and falls through to an upload when
//! the blob is gone. Blobs a first reference scan finds referenced are not marked at all.
//! A mark left by a collection that died is taken over by the next collection and cleared by an
//! upload that waited [`STALE_MARK_MS`]; a collection stalled that long between its reference
//! scan and its delete is the one case the marks do not cover.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use index_schema::name::Digest;
use serde::Serialize;

use super::{Caller, OciError, OciResult, OciState, authorize, db, parse_digest};
use crate::auth::Scope;
use crate::state::AppState;
use crate::store::now_ms;

/// How old a collection's mark must be before another collection takes it over, or an upload
/// waiting for it clears it (its collection died).
pub const STALE_MARK_MS: i64 = 5 * 60 * 1000;
/// How many times a store re-places a blob a collection took while it was being stored.
const STORE_ATTEMPTS: usize = 8;
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

/// Every blob digest a manifest or a published version references (see
/// [`db::referenced_blobs`]: manifests' references are indexed in the transaction that stores
/// the manifest, so this sees exactly what a scan of the manifests would).
pub async fn referenced(app: &AppState) -> OciResult<HashSet<Digest>> {
    Ok(db::referenced_blobs(app.store.db())
        .await?
        .iter()
        .filter_map(|d| Digest::parse(d).ok())
        .collect())
}

/// Waits until no collection has `d` marked, then registers it (stored; `used`: used now).
pub async fn register(app: &AppState, d: &Digest, used: bool) -> OciResult<()> {
    let key = d.to_string();
    loop {
        match db::register_blob(app.store.db(), &key, used).await? {
            db::Registered::Live => return Ok(()),
            db::Registered::Marked { by, at } => {
                if !by.is_empty() && at < now_ms() - STALE_MARK_MS {
                    tracing::warn!(blob = %key, gc = %by, "clearing a stale garbage-collection mark");
                    db::unmark_blob(app.store.db(), &key, &by).await?;
                    continue;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn present(app: &AppState, d: &Digest) -> OciResult<bool> {
    Ok(app.blobs.size(*d).await?.is_some())
}

/// Stores `bytes` under `d` (refreshing the blob's time when it is there already) so that it
/// is registered and present when this returns, whatever collections run meanwhile.
pub async fn store_bytes(app: &AppState, d: &Digest, bytes: &[u8]) -> OciResult<()> {
    let bytes: std::sync::Arc<[u8]> = bytes.into();
    for _ in 0..STORE_ATTEMPTS {
        app.blobs.put(*d, bytes.clone()).await?;
        register(app, d, false).await?;
        if present(app, d).await? {
            return Ok(());
        }
    }
    Err(OciError::internal(format!(
        "blob {d} was collected {STORE_ATTEMPTS} times while being stored"
    )))
}

/// Moves the staged, verified, fsynced `file` into the store under `d`, as [`store_bytes`].
pub async fn store_file(app: &AppState, d: &Digest, file: PathBuf) -> OciResult<()> {
    // A second name for the bytes, to place them again if a collection takes the blob.
    let keep = PathBuf::from(format!("{}.keep", file.display()));
    let (f, k) = (file.clone(), keep.clone());
    tokio::task::spawn_blocking(move || std::fs::hard_link(&f, &k))
        .await
        .map_err(OciError::internal)?
        .map_err(OciError::internal)?;
    let r = async {
        for attempt in 0..STORE_ATTEMPTS {
            let (blobs, f, k, dd) = (app.blobs.store().clone(), file.clone(), keep.clone(), *d);
            tokio::task::spawn_blocking(move || {
                if attempt > 0 {
                    std::fs::hard_link(&k, &f)?;
                }
                blobs.put_file(&dd, &f)
            })
            .await
            .map_err(OciError::internal)??;
            register(app, d, false).await?;
            if present(app, d).await? {
                return Ok(());
            }
        }
        Err(OciError::internal(format!(
            "blob {d} was collected {STORE_ATTEMPTS} times while being stored"
        )))
    }
    .await;
    let _ = tokio::fs::remove_file(&keep).await;
    r
}

/// Uses a stored blob (a mount): refreshes its time and records the use, after waiting for a
/// collection that has it marked. False when it is not stored (or was just collected).
pub async fn use_existing(app: &AppState, d: &Digest) -> OciResult<bool> {
    let there = app.blobs.touch(*d).await?;
    if !there {
        return Ok(false);
    }
    // A collection examining it settles it quickly: kept (then mounted) or removed.
    register(app, d, true).await?;
    present(app, d).await
}

fn ms_since_epoch(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
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

    let listed = app.blobs.list().await?;
    report.blobs_seen = listed.len();
    let cutoff = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let me = format!("gc-{}", uuid::Uuid::new_v4().simple());
    let dbh = app.store.db();
    let mut marked: Vec<Digest> = Vec::new();
    let r = async {
        for d in db::take_over_stale_marks(dbh, &me, now_ms() - STALE_MARK_MS).await? {
            if let Ok(d) = Digest::parse(&d) {
                marked.push(d);
            }
        }
        if listed.iter().all(|(_, t)| *t >= cutoff) && marked.is_empty() {
            return Ok((0, 0));
        }
        // Blobs referenced already are not even marked (marks make mounts wait and refuse
        // commits); what this scan misses, the one after the marks catches.
        let known = referenced(app).await?;
        for (d, t) in &listed {
            if *t < cutoff
                && !known.contains(d)
                && !marked.contains(d)
                && db::mark_blob(dbh, &d.to_string(), &me, ms_since_epoch(cutoff)).await?
            {
                marked.push(*d);
            }
        }
        sweep(app, &me, &mut marked, cutoff).await
    }
    .await;
    match r {
        Ok((n, bytes)) => {
            report.blobs_deleted = n;
            report.bytes_freed = bytes;
        }
        Err(e) => {
            // Leave nothing marked: uploads of these blobs wait for the marks.
            for d in &marked {
                let _ = db::unmark_blob(dbh, &d.to_string(), &me).await;
            }
            return Err(e);
        }
    }
    tracing::info!(
        blobs.deleted = report.blobs_deleted,
        bytes.freed = report.bytes_freed,
        uploads.expired = report.uploads_expired,
        "garbage collection done"
    );
    Ok(report)
}

/// Deletes the blobs collection `me` marked (`marked`, emptied as each is settled) unless they
/// were written or touched since `cutoff`, or are referenced; unmarks the others.
async fn sweep(
    app: &AppState,
    me: &str,
    marked: &mut Vec<Digest>,
    cutoff: SystemTime,
) -> OciResult<(usize, u64)> {
    let dbh = app.store.db();
    if marked.is_empty() {
        return Ok((0, 0));
    }
    // Policy: a file written or touched since the listing keeps its grace period.
    let (blobs, list) = (app.blobs.store().clone(), marked.clone());
    let fresh: HashSet<Digest> = tokio::task::spawn_blocking(move || {
        list.into_iter()
            .filter(|d| blobs.list_one(d).is_some_and(|(_, t)| t >= cutoff))
            .collect()
    })
    .await
    .map_err(OciError::internal)?;
    // Begins after every mark committed: any commit that claimed one of these blobs before it
    // was marked is visible to it, and none can claim one while it is marked.
    let keep = referenced(app).await?;
    let mut doomed = Vec::new();
    for d in std::mem::take(marked) {
        if fresh.contains(&d) || keep.contains(&d) {
            db::unmark_blob(dbh, &d.to_string(), me).await?;
        } else {
            doomed.push(d);
        }
    }
    *marked = doomed.clone();
    let blobs = app.blobs.store().clone();
    let gone = tokio::task::spawn_blocking(move || -> Vec<(Digest, Option<u64>)> {
        doomed
            .into_iter()
            .map(|d| {
                let size = blobs.size(&d).ok().flatten();
                match blobs.delete(&d) {
                    Ok(true) => (d, size),
                    _ => (d, None),
                }
            })
            .collect()
    })
    .await
    .map_err(OciError::internal)?;
    let (mut n, mut bytes) = (0, 0);
    for (d, size) in gone {
        db::forget_blob(dbh, &d.to_string(), me).await?;
        marked.retain(|m| *m != d);
        if let Some(s) = size {
            n += 1;
            bytes += s;
        }
    }
    Ok((n, bytes))
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
    let dbh = st.app.store.db();
    let key = d.to_string();
    let unknown = || {
        OciError::new(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            format!("blob {d} is not in `{repository}`"),
        )
    };
    if !db::blob_in_repository(dbh, repository, &key).await? {
        return Err(unknown());
    }
    let me = format!("delete-{}", uuid::Uuid::new_v4().simple());
    // Marked like a collection marks, whatever its age, so no push can claim it meanwhile.
    if !db::mark_blob(dbh, &key, &me, i64::MAX).await? {
        return if present(&st.app, &d).await? {
            Err(OciError::denied(format!(
                "blob {d} is being examined by garbage collection; retry"
            )))
        } else {
            Err(unknown())
        };
    }
    // Indexed: one lookup, whatever the number of stored manifests.
    let referenced = match db::blob_referenced(dbh, &key).await {
        Ok(r) => r,
        Err(e) => {
            db::unmark_blob(dbh, &key, &me).await?;
            return Err(e.into());
        }
    };
    if referenced {
        db::unmark_blob(dbh, &key, &me).await?;
        return Err(OciError::denied(format!(
            "blob {d} is referenced by a manifest or an agent version; delete those first"
        )));
    }
    // Uploaded into other repositories too: it leaves this one only.
    match db::unlink_blob(dbh, repository, &key).await {
        Ok(false) => {}
        Ok(true) => {
            db::unmark_blob(dbh, &key, &me).await?;
            return Ok(StatusCode::ACCEPTED.into_response());
        }
        Err(e) => {
            db::unmark_blob(dbh, &key, &me).await?;
            return Err(e.into());
        }
    }
    let existed = st.app.blobs.delete(d).await;
    db::forget_blob(dbh, &key, &me).await?;
    if !existed? {
        return Err(unknown());
    }
    Ok(StatusCode::ACCEPTED.into_response())
}
