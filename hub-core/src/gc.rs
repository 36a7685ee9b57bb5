//! Garbage collection of blobs no manifest and no version references, and of expired upload
//! sessions; the blob bookkeeping that makes it safe while pushes continue is `claims.rs`.
//!
//! **Why a collection never takes a blob an acknowledged push or publish references.** Every
//! blob has a row in `oci_blobs` (migration 0012; a file without one, from before the migration
//! or a crash, gets one on its next use or when gc marks it). The two sides meet on that row:
//!
//! - A *commit* — the transaction that records a manifest ([`crate::store::Store::put_manifest`]) or a version
//!   ([`crate::store::Store::publish_claiming`]) — first *claims* every blob it references
//!   (`claim_blobs` in `store/blobs.rs`: `INSERT … ON CONFLICT DO UPDATE SET used_at = now WHERE deleting_by
//!   IS NULL`, which takes the row's lock), aborting with a 4xx (`MANIFEST_BLOB_UNKNOWN`,
//!   `bundle_missing`) when a row is marked, and then, still inside the transaction, checks that
//!   each file is there with the declared size.
//! - A *collection* removes a file only after it *marked* the row itself ([`crate::store::Store::mark_blob`]: one
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
//! Uploads ([`crate::claims::store_file`], [`crate::claims::store_bytes`]) wait while a collection has the blob marked (it
//! is about to remove the file, which would take theirs), register it, and check afterwards
//! that their file is still there, placing it again if a collection took it in between; a mount
//! ([`crate::claims::use_existing`]) waits the same way, registers a use, and falls through to an upload when
//! the blob is gone. Blobs a first reference scan finds referenced are not marked at all.
//! A mark left by a collection that died is taken over by the next collection and cleared by an
//! upload that waited [`crate::claims::STALE_MARK_MS`]; a collection stalled that long between its reference
//! scan and its delete is the one case the marks do not cover.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use index_schema::name::Digest;
use serde::Serialize;

use crate::blob::BlobStore;
use crate::claims::{STALE_MARK_MS, present};
use crate::error::{CoreError, CoreResult, ErrorCode, Kind};
use crate::hub::Hub;
use crate::store::now_ms;

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
/// [`crate::store::Store::referenced_blobs`]: manifests' references are indexed in the
/// transaction that stores the manifest, so this sees exactly what a scan of the manifests
/// would).
pub async fn referenced(hub: &Hub) -> CoreResult<HashSet<Digest>> {
    Ok(hub
        .store
        .referenced_blobs()
        .await?
        .iter()
        .filter_map(|d| Digest::parse(d).ok())
        .collect())
}

fn ms_since_epoch(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Removes unreferenced blobs older than `grace`, expired upload sessions (idle longer than
/// `upload_ttl`) and stale staging files.
///
/// Refuses, deleting nothing, unless the database and the blob store hold the same hub id
/// ([`crate::hub_id`]): a collection deletes what its database does not reference, so a blob
/// store shared with another database would lose that database's blobs.
pub async fn collect(hub: &Hub, grace: Duration, upload_ttl: Duration) -> CoreResult<GcReport> {
    crate::hub_id::same_hub(&hub.store, hub.blobs.store())
        .await
        .map_err(|e| CoreError::new(Kind::Conflict, ErrorCode::Internal, format!("{e:#}")))?;
    let mut report = GcReport::default();
    let ids = hub
        .store
        .expire_uploads(upload_ttl.as_millis() as i64)
        .await?;
    report.uploads_expired = ids.len();
    // The `DELETE … RETURNING` that expired them is won by one collection, whichever replica
    // runs it: only that one removes their parts.
    for id in &ids {
        let _ = hub.blobs.drop_parts(id.clone()).await;
    }
    // Staging files idle as long as a dead session (their writer died mid-request).
    if let Err(e) = hub.blobs.sweep_staging(upload_ttl).await {
        tracing::warn!(error = %e, "cannot sweep the blob store's staging files");
    }

    let listed = hub.blobs.list().await?;
    report.blobs_seen = listed.len();
    let cutoff = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let me = format!("gc-{}", uuid::Uuid::new_v4().simple());
    let store = &hub.store;
    let mut marked: Vec<Digest> = Vec::new();
    let r = async {
        for d in store
            .take_over_stale_marks(&me, now_ms() - STALE_MARK_MS)
            .await?
        {
            if let Ok(d) = Digest::parse(&d) {
                marked.push(d);
            }
        }
        if listed.iter().all(|(_, t)| *t >= cutoff) && marked.is_empty() {
            return Ok((0, 0));
        }
        // Blobs referenced already are not even marked (marks make mounts wait and refuse
        // commits); what this scan misses, the one after the marks catches.
        let known = referenced(hub).await?;
        for (d, t) in &listed {
            if *t < cutoff
                && !known.contains(d)
                && !marked.contains(d)
                && store
                    .mark_blob(&d.to_string(), &me, ms_since_epoch(cutoff))
                    .await?
            {
                marked.push(*d);
            }
        }
        sweep(hub, &me, &mut marked, cutoff).await
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
                let _ = store.unmark_blob(&d.to_string(), &me).await;
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
    hub: &Hub,
    me: &str,
    marked: &mut Vec<Digest>,
    cutoff: SystemTime,
) -> CoreResult<(usize, u64)> {
    let store = &hub.store;
    if marked.is_empty() {
        return Ok((0, 0));
    }
    // Policy: a file written or touched since the listing keeps its grace period.
    let (blobs, list) = (hub.blobs.store().clone(), marked.clone());
    let fresh: HashSet<Digest> = tokio::task::spawn_blocking(move || {
        list.into_iter()
            .filter(|d| last_use(&*blobs, d).is_some_and(|t| t >= cutoff))
            .collect()
    })
    .await
    .map_err(CoreError::internal)?;
    // Begins after every mark committed: any commit that claimed one of these blobs before it
    // was marked is visible to it, and none can claim one while it is marked.
    let keep = referenced(hub).await?;
    let mut doomed = Vec::new();
    for d in std::mem::take(marked) {
        if fresh.contains(&d) || keep.contains(&d) {
            store.unmark_blob(&d.to_string(), me).await?;
        } else {
            doomed.push(d);
        }
    }
    *marked = doomed.clone();
    let blobs = hub.blobs.store().clone();
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
    .map_err(CoreError::internal)?;
    let (mut n, mut bytes) = (0, 0);
    for (d, size) in gone {
        store.forget_blob(&d.to_string(), me).await?;
        marked.retain(|m| *m != d);
        if let Some(s) = size {
            n += 1;
            bytes += s;
        }
    }
    Ok((n, bytes))
}

/// The last-use time of one blob (its file's modification time).
fn last_use(blobs: &dyn BlobStore, d: &Digest) -> Option<SystemTime> {
    let (f, _) = blobs.open(d).ok().flatten()?;
    f.metadata().ok()?.modified().ok()
}

/// What deleting a blob from a repository did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobDeletion {
    /// The repository has no such blob.
    Unknown,
    /// A garbage collection is examining it: retry.
    Busy,
    /// A manifest or an agent version references it.
    Referenced,
    /// It left the repository (and, when no other repository had it, the store).
    Deleted,
}

/// Removes blob `d` from `repository` unless a manifest or version references it: from the
/// store too when no other repository has it linked. Marked like a collection marks, whatever
/// its age, so no push can claim it meanwhile.
pub async fn delete_blob(hub: &Hub, repository: &str, d: &Digest) -> CoreResult<BlobDeletion> {
    let store = &hub.store;
    let key = d.to_string();
    if !store.blob_in_repository(repository, &key).await? {
        return Ok(BlobDeletion::Unknown);
    }
    let me = format!("delete-{}", uuid::Uuid::new_v4().simple());
    if !store.mark_blob(&key, &me, i64::MAX).await? {
        return Ok(if present(hub, d).await? {
            BlobDeletion::Busy
        } else {
            BlobDeletion::Unknown
        });
    }
    // Indexed: one lookup, whatever the number of stored manifests.
    let referenced = match store.blob_referenced(&key).await {
        Ok(r) => r,
        Err(e) => {
            store.unmark_blob(&key, &me).await?;
            return Err(e.into());
        }
    };
    if referenced {
        store.unmark_blob(&key, &me).await?;
        return Ok(BlobDeletion::Referenced);
    }
    // Uploaded into other repositories too: it leaves this one only.
    match store.unlink_blob(repository, &key).await {
        Ok(false) => {}
        Ok(true) => {
            store.unmark_blob(&key, &me).await?;
            return Ok(BlobDeletion::Deleted);
        }
        Err(e) => {
            store.unmark_blob(&key, &me).await?;
            return Err(e.into());
        }
    }
    let existed = hub.blobs.delete(*d).await;
    store.forget_blob(&key, &me).await?;
    if !existed? {
        return Ok(BlobDeletion::Unknown);
    }
    Ok(BlobDeletion::Deleted)
}
