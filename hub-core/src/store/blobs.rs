//! Blob rows (`oci_blobs`, migration 0012): the claims a committing transaction takes, the
//! marks garbage collection leaves (see [`crate::gc`] for why the two never lose a referenced
//! blob), the references that keep a blob, and its links to repositories (migration 0017).
//!
//! A blob is read, mounted, referenced by a pushed manifest and deleted only through a repository
//! it belongs to: uploaded or mounted there (`oci_blob_links`), or referenced by one of that
//! repository's manifests (`oci_blob_refs`, one row per descriptor, written in the manifest's
//! transaction and removed with it). Elsewhere it is `BLOB_UNKNOWN` / `MANIFEST_BLOB_UNKNOWN`, so
//! nobody probes the store by digest or adopts another repository's blob by naming it. Deleting a
//! blob through `/v2/` unlinks it from that repository, is refused while a manifest or version
//! references it, and removes the file only with its last link.

use index_schema::name::Digest;
use sqlx::AnyConnection;

use super::repo::{Result, Store, StoreError, now_ms};
use crate::blob::{BlobError, Blobs};
use crate::store::db::Flag;

/// Blobs a committing transaction (a manifest, a version) references, claimed inside it: see
/// [`Store::put_manifest`], [`Store::publish_claiming`] and the argument in [`crate::gc`].
#[derive(Debug, Clone)]
pub struct BlobClaim {
    /// Where the blobs are.
    pub blobs: Blobs,
    /// Digests (sorted, so transactions lock rows in one order) and the size each reference
    /// declares, when it declares one.
    pub needed: Vec<(Digest, Option<u64>)>,
}

impl BlobClaim {
    /// A claim of `needed` in `blobs`.
    pub fn new(blobs: Blobs, mut needed: Vec<(Digest, Option<u64>)>) -> Self {
        needed.sort_by_key(|(d, _)| d.to_string());
        needed.dedup_by_key(|(d, _)| *d);
        BlobClaim { blobs, needed }
    }

    /// The first blob that is not stored (or not of the declared size), and why. Also marks
    /// each as used now on the filesystem.
    pub async fn check_present(&self) -> Result<Option<(String, String)>> {
        let (blobs, needed) = (self.blobs.store().clone(), self.needed.clone());
        tokio::task::spawn_blocking(move || -> std::result::Result<_, BlobError> {
            for (d, want) in &needed {
                let size = if blobs.touch(d)? {
                    blobs.size(d)?
                } else {
                    None
                };
                match (size, want) {
                    (None, _) => return Ok(Some((d.to_string(), "is not in the registry".into()))),
                    (Some(s), Some(w)) if s != *w => {
                        return Ok(Some((
                            d.to_string(),
                            format!("is {s} bytes; the descriptor says {w}"),
                        )));
                    }
                    _ => {}
                }
            }
            Ok(None)
        })
        .await
        .map_err(|e| StoreError::Blob(e.to_string()))?
        .map_err(|e| match e {
            BlobError::Upstream(why) => StoreError::BlobBackend(why),
            e => StoreError::Blob(e.to_string()),
        })
    }
}

/// Inside a committing transaction: claims every blob of `claim` (records the use and takes
/// the row's lock, unless garbage collection has marked it) and checks that it is stored;
/// [`StoreError::BlobUnavailable`] (the caller's transaction then rolls back) when one is marked
/// for deletion or absent.
pub(super) async fn claim_blobs(
    conn: &mut AnyConnection,
    claim: &BlobClaim,
    now: i64,
) -> Result<()> {
    for (d, _) in &claim.needed {
        let r = sqlx::query(
            "INSERT INTO oci_blobs (digest, used_at) VALUES ($1, $2) \
             ON CONFLICT (digest) DO UPDATE SET used_at = $2 WHERE oci_blobs.deleting_by IS NULL",
        )
        .bind(d.to_string())
        .bind(now)
        .execute(&mut *conn)
        .await?;
        if r.rows_affected() == 0 {
            return Err(StoreError::BlobUnavailable {
                digest: d.to_string(),
                why: "is being removed by garbage collection".into(),
            });
        }
    }
    if let Some((digest, why)) = claim.check_present().await? {
        return Err(StoreError::BlobUnavailable { digest, why });
    }
    Ok(())
}

/// What registering a blob found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registered {
    /// The row is there and not marked.
    Live,
    /// A garbage collection (`by`) marked it for deletion at `at` (Unix ms).
    Marked {
        /// The collection's token.
        by: String,
        /// When it marked the blob.
        at: i64,
    },
}

impl Store {
    /// Every blob digest a manifest (its config and layers, from the reference index) or a
    /// published version (its bundle) references.
    pub async fn referenced_blobs(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT blob_digest FROM oci_blob_refs \
             UNION SELECT bundle_digest FROM versions WHERE bundle_digest IS NOT NULL",
        )
        .fetch_all(self.db.read())
        .await?)
    }

    /// Records that a blob is stored (`used` false: a new row counts as never used, so its
    /// file's time decides its age; an existing row's use is refreshed) or used (`used` true:
    /// mounted), unless garbage collection has marked it.
    pub async fn register_blob(&self, digest: &str, used: bool) -> Result<Registered> {
        let now = now_ms();
        let insert_used = if used { now } else { 0 };
        let pool = self.db.write();
        let r = sqlx::query(
            "INSERT INTO oci_blobs (digest, used_at) VALUES ($1, $2) \
             ON CONFLICT (digest) DO UPDATE SET used_at = $3 WHERE oci_blobs.deleting_by IS NULL",
        )
        .bind(digest)
        .bind(insert_used)
        .bind(now)
        .execute(pool)
        .await?;
        if r.rows_affected() > 0 {
            return Ok(Registered::Live);
        }
        let row: Option<(Option<String>, Option<i64>)> =
            sqlx::query_as("SELECT deleting_by, deleting_at FROM oci_blobs WHERE digest = $1")
                .bind(digest)
                .fetch_optional(pool)
                .await?;
        Ok(match row {
            Some((Some(by), at)) => Registered::Marked {
                by,
                at: at.unwrap_or(0),
            },
            // Removed or unmarked in between: the caller asks again.
            _ => Registered::Marked {
                by: String::new(),
                at: now,
            },
        })
    }

    /// Clears the mark `by` left on a blob (a collection that died half-way). Whether it was
    /// there.
    pub async fn unmark_blob(&self, digest: &str, by: &str) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE oci_blobs SET deleting_by = NULL, deleting_at = NULL \
             WHERE digest = $1 AND deleting_by = $2",
        )
        .bind(digest)
        .bind(by)
        .execute(self.db.write())
        .await?;
        Ok(r.rows_affected() > 0)
    }

    /// Marks a blob for deletion by collection `by`, in one statement that requires that
    /// nothing claimed or used it at or after `cutoff` (Unix ms) and that no collection marked
    /// it already; a blob without a row gets one, marked. Whether this call marked it.
    pub async fn mark_blob(&self, digest: &str, by: &str, cutoff: i64) -> Result<bool> {
        let r = sqlx::query(
            "INSERT INTO oci_blobs (digest, used_at, deleting_by, deleting_at) \
             VALUES ($1, 0, $2, $3) \
             ON CONFLICT (digest) DO UPDATE SET deleting_by = $2, deleting_at = $3 \
             WHERE oci_blobs.deleting_by IS NULL AND oci_blobs.used_at < $4",
        )
        .bind(digest)
        .bind(by)
        .bind(now_ms())
        .bind(cutoff)
        .execute(self.db.write())
        .await?;
        Ok(r.rows_affected() > 0)
    }

    /// Hands the marks other collections left before `before` (Unix ms) to collection `by`;
    /// returns the blobs it took over.
    pub async fn take_over_stale_marks(&self, by: &str, before: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "UPDATE oci_blobs SET deleting_by = $1, deleting_at = $2 \
             WHERE deleting_by IS NOT NULL AND deleting_at < $3 RETURNING digest",
        )
        .bind(by)
        .bind(now_ms())
        .bind(before)
        .fetch_all(self.db.write())
        .await?)
    }

    /// Removes the row of a blob collection `by` deleted.
    pub async fn forget_blob(&self, digest: &str, by: &str) -> Result<()> {
        sqlx::query("DELETE FROM oci_blobs WHERE digest = $1 AND deleting_by = $2")
            .bind(digest)
            .bind(by)
            .execute(self.db.write())
            .await?;
        Ok(())
    }

    /// Links a blob of `size` bytes to a repository: it was uploaded or mounted there.
    pub async fn link_blob(&self, repository: &str, digest: &str, size: u64) -> Result<()> {
        sqlx::query(
            "INSERT INTO oci_blob_links (repository, digest, linked_at, size) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (repository, digest) DO UPDATE SET linked_at = $3, size = $4",
        )
        .bind(repository)
        .bind(digest)
        .bind(now_ms())
        .bind(i64::try_from(size).unwrap_or(i64::MAX))
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// Whether a blob belongs to a repository: linked to it (uploaded, mounted) or referenced
    /// by one of its manifests. Blobs are read, mounted and deleted only through such a
    /// repository.
    pub async fn blob_in_repository(&self, repository: &str, digest: &str) -> Result<bool> {
        let found: Flag = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM oci_blob_links WHERE repository = $1 AND digest = $2) \
             OR EXISTS (SELECT 1 FROM oci_blob_refs WHERE blob_digest = $2 AND repository = $1)",
        )
        .bind(repository)
        .bind(digest)
        .fetch_one(self.db.read())
        .await?;
        Ok(found.into())
    }

    /// Whether any manifest or published version references a blob (indexed: no manifest is
    /// read).
    pub async fn blob_referenced(&self, digest: &str) -> Result<bool> {
        let found: Flag = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM oci_blob_refs WHERE blob_digest = $1) \
             OR EXISTS (SELECT 1 FROM versions WHERE bundle_digest = $1)",
        )
        .bind(digest)
        .fetch_one(self.db.read())
        .await?;
        Ok(found.into())
    }

    /// Removes a blob's link to a repository; whether another repository still has it linked.
    pub async fn unlink_blob(&self, repository: &str, digest: &str) -> Result<bool> {
        let pool = self.db.write();
        sqlx::query("DELETE FROM oci_blob_links WHERE repository = $1 AND digest = $2")
            .bind(repository)
            .bind(digest)
            .execute(pool)
            .await?;
        let elsewhere: Flag =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM oci_blob_links WHERE digest = $1)")
                .bind(digest)
                .fetch_one(pool)
                .await?;
        Ok(elsewhere.into())
    }
}
