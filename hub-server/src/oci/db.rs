//! The SQL of the OCI API, written once for both backends (see [`crate::db`]).

use index_schema::name::Digest;
use sqlx::FromRow as _;

use crate::blob::Blobs;
use crate::db::Db;
use crate::store::{Result, StoreError, now_ms};
use crate::{on_db, on_read};

/// Blobs a committing transaction (a manifest, a version) references, claimed inside it: see
/// [`claim_blobs!`] and the argument in [`crate::oci::gc`].
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
        tokio::task::spawn_blocking(move || -> std::result::Result<_, crate::blob::BlobError> {
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
        .map_err(|e| StoreError::Blob(e.to_string()))
    }
}

/// Claims a blob inside a committing transaction: records the use and takes the row's lock,
/// unless garbage collection has marked it (then no row changes).
pub(crate) const CLAIM_SQL: &str = "INSERT INTO oci_blobs (digest, used_at) VALUES ($1, $2) \
     ON CONFLICT (digest) DO UPDATE SET used_at = $2 WHERE oci_blobs.deleting_by IS NULL";

/// Inside a transaction `$tx` (of either backend): claims every blob of `$claim` (a
/// [`BlobClaim`]) and checks that it is stored; returns [`StoreError::BlobUnavailable`] from the
/// enclosing function (rolling the transaction back) when one is marked for deletion or absent.
macro_rules! claim_blobs {
    ($tx:expr, $claim:expr, $now:expr) => {{
        for (d, _) in &$claim.needed {
            let r = sqlx::query($crate::oci::db::CLAIM_SQL)
                .bind(d.to_string())
                .bind($now)
                .execute(&mut *$tx)
                .await?;
            if r.rows_affected() == 0 {
                return Err($crate::store::StoreError::BlobUnavailable {
                    digest: d.to_string(),
                    why: "is being removed by garbage collection".into(),
                });
            }
        }
        if let Some((digest, why)) = $claim.check_present().await? {
            return Err($crate::store::StoreError::BlobUnavailable { digest, why });
        }
    }};
}
pub(crate) use claim_blobs;

/// A stored manifest, without its bytes (they are read on their own, by
/// [`manifest_content`], once the memory for them is granted).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ManifestRow {
    /// `sha256:…` of the content.
    pub digest: String,
    /// `mediaType` (also the `Content-Type` it was pushed with).
    pub media_type: String,
    /// `artifactType`, else the config media type of an image manifest.
    pub artifact_type: Option<String>,
    /// The content's length in bytes.
    pub size: i64,
}

/// A manifest about to be stored.
#[derive(Debug, Clone)]
pub struct NewManifest<'a> {
    /// `ns/name`.
    pub repository: &'a str,
    /// Digest of `content`.
    pub digest: &'a str,
    /// Media type.
    pub media_type: &'a str,
    /// Artifact type.
    pub artifact_type: Option<&'a str>,
    /// The digest of the `subject`, for the referrers API.
    pub subject: Option<&'a str>,
    /// The bytes.
    pub content: &'a [u8],
    /// Tag to point at it.
    pub tag: Option<&'a str>,
}

/// Inside a transaction `$tx` (of either backend): records manifest `$m` (a
/// [`NewManifest`]; idempotent by digest), indexes the blobs it references (`$refs`, digests
/// of its config and layers: see migration 0017) and moves its tag. The blobs must have been
/// claimed in the same transaction ([`claim_blobs!`]).
macro_rules! insert_manifest {
    ($tx:expr, $m:expr, $refs:expr, $now:expr) => {{
        let m: &$crate::oci::db::NewManifest<'_> = $m;
        sqlx::query(
            "INSERT INTO oci_manifests (repository, digest, media_type, artifact_type, subject, \
             content, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (repository, digest) DO NOTHING",
        )
        .bind(m.repository)
        .bind(m.digest)
        .bind(m.media_type)
        .bind(m.artifact_type)
        .bind(m.subject)
        .bind(m.content)
        .bind($now)
        .execute(&mut *$tx)
        .await?;
        for d in $refs {
            sqlx::query(
                "INSERT INTO oci_blob_refs (repository, manifest_digest, blob_digest) \
                 VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(m.repository)
            .bind(m.digest)
            .bind(d.to_string())
            .execute(&mut *$tx)
            .await?;
        }
        if let Some(tag) = m.tag {
            sqlx::query(
                "INSERT INTO oci_tags (repository, tag, digest, updated_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (repository, tag) DO UPDATE SET digest = $3, updated_at = $4",
            )
            .bind(m.repository)
            .bind(tag)
            .bind(m.digest)
            .bind($now)
            .execute(&mut *$tx)
            .await?;
        }
    }};
}
pub(crate) use insert_manifest;

/// Stores a manifest (idempotent by digest) and moves `tag` to it, in one transaction that
/// first claims every blob it references ([`StoreError::BlobUnavailable`] when one is gone or
/// being collected).
pub async fn put_manifest(db: &Db, m: &NewManifest<'_>, claim: &BlobClaim) -> Result<()> {
    let now = now_ms();
    let refs: Vec<Digest> = claim.needed.iter().map(|(d, _)| *d).collect();
    on_db!(db, |pool| {
        let mut tx = pool.begin().await?;
        claim_blobs!(tx, claim, now);
        insert_manifest!(tx, m, refs.iter(), now);
        tx.commit().await?;
        Ok(())
    })
}

/// A manifest by digest.
pub async fn manifest(db: &Db, repository: &str, digest: &str) -> Result<Option<ManifestRow>> {
    on_read!(db, |pool| {
        let row = sqlx::query(
            "SELECT digest, media_type, artifact_type, CAST(LENGTH(content) AS BIGINT) AS size \
             FROM oci_manifests WHERE repository = $1 AND digest = $2",
        )
        .bind(repository)
        .bind(digest)
        .fetch_optional(pool)
        .await?;
        row.as_ref()
            .map(ManifestRow::from_row)
            .transpose()
            .map_err(Into::into)
    })
}

/// A manifest by tag.
pub async fn manifest_by_tag(db: &Db, repository: &str, tag: &str) -> Result<Option<ManifestRow>> {
    on_read!(db, |pool| {
        let row = sqlx::query(
            "SELECT m.digest, m.media_type, m.artifact_type, \
             CAST(LENGTH(m.content) AS BIGINT) AS size FROM oci_tags t \
             JOIN oci_manifests m ON m.repository = t.repository AND m.digest = t.digest \
             WHERE t.repository = $1 AND t.tag = $2",
        )
        .bind(repository)
        .bind(tag)
        .fetch_optional(pool)
        .await?;
        row.as_ref()
            .map(ManifestRow::from_row)
            .transpose()
            .map_err(Into::into)
    })
}

/// Whether the repository has any manifest.
pub async fn repository_exists(db: &Db, repository: &str) -> Result<bool> {
    on_read!(db, |pool| {
        // EXISTS is a boolean on both backends (a bare `SELECT 1` is INT4 on PostgreSQL).
        let found: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM oci_manifests WHERE repository = $1)")
                .bind(repository)
                .fetch_one(pool)
                .await?;
        Ok(found)
    })
}

/// Tags in lexical order after `last`, at most `n`.
pub async fn tags(db: &Db, repository: &str, last: Option<&str>, n: i64) -> Result<Vec<String>> {
    on_read!(db, |pool| {
        let tags: Vec<String> = sqlx::query_scalar(
            "SELECT tag FROM oci_tags WHERE repository = $1 AND tag > $2 ORDER BY tag LIMIT $3",
        )
        .bind(repository)
        .bind(last.unwrap_or(""))
        .bind(n)
        .fetch_all(pool)
        .await?;
        Ok(tags)
    })
}

/// The bytes of a manifest.
pub async fn manifest_content(db: &Db, repository: &str, digest: &str) -> Result<Option<Vec<u8>>> {
    on_read!(db, |pool| {
        let content: Option<Vec<u8>> = sqlx::query_scalar(
            "SELECT content FROM oci_manifests WHERE repository = $1 AND digest = $2",
        )
        .bind(repository)
        .bind(digest)
        .fetch_optional(pool)
        .await?;
        Ok(content)
    })
}

/// Manifests whose subject is `digest` (of `artifact_type` when given), in digest order after
/// `after`, at most `n`.
pub async fn referrers(
    db: &Db,
    repository: &str,
    digest: &str,
    artifact_type: Option<&str>,
    after: &str,
    n: i64,
) -> Result<Vec<ManifestRow>> {
    on_read!(db, |pool| {
        let rows = sqlx::query(
            "SELECT digest, media_type, artifact_type, CAST(LENGTH(content) AS BIGINT) AS size \
             FROM oci_manifests WHERE repository = $1 AND subject = $2 AND digest > $3 \
             AND ($4 = '' OR artifact_type = $4) ORDER BY digest LIMIT $5",
        )
        .bind(repository)
        .bind(digest)
        .bind(after)
        .bind(artifact_type.unwrap_or(""))
        .bind(n)
        .fetch_all(pool)
        .await?;
        rows.iter()
            .map(|r| ManifestRow::from_row(r).map_err(Into::into))
            .collect()
    })
}

/// Deletes a tag. Whether it existed.
pub async fn delete_tag(db: &Db, repository: &str, tag: &str) -> Result<bool> {
    on_db!(db, |pool| {
        let r = sqlx::query("DELETE FROM oci_tags WHERE repository = $1 AND tag = $2")
            .bind(repository)
            .bind(tag)
            .execute(pool)
            .await?;
        Ok(r.rows_affected() > 0)
    })
}

/// Deletes a manifest and the tags pointing at it. Whether it existed.
pub async fn delete_manifest(db: &Db, repository: &str, digest: &str) -> Result<bool> {
    on_db!(db, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query("DELETE FROM oci_tags WHERE repository = $1 AND digest = $2")
            .bind(repository)
            .bind(digest)
            .execute(&mut *tx)
            .await?;
        let r = sqlx::query("DELETE FROM oci_manifests WHERE repository = $1 AND digest = $2")
            .bind(repository)
            .bind(digest)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    })
}

/// Every blob digest a manifest (its config and layers, from the reference index) or a
/// published version (its bundle) references.
pub async fn referenced_blobs(db: &Db) -> Result<Vec<String>> {
    on_read!(db, |pool| {
        let v: Vec<String> = sqlx::query_scalar(
            "SELECT blob_digest FROM oci_blob_refs \
             UNION SELECT bundle_digest FROM versions WHERE bundle_digest IS NOT NULL",
        )
        .fetch_all(pool)
        .await?;
        Ok(v)
    })
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

/// Records that a blob is stored (`used` false: a new row counts as never used, so its file's
/// time decides its age; an existing row's use is refreshed) or used (`used` true: mounted),
/// unless garbage collection has marked it.
pub async fn register_blob(db: &Db, digest: &str, used: bool) -> Result<Registered> {
    let now = now_ms();
    let insert_used = if used { now } else { 0 };
    on_db!(db, |pool| {
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
    })
}

/// Clears the mark `by` left on a blob (a collection that died half-way). Whether it was there.
pub async fn unmark_blob(db: &Db, digest: &str, by: &str) -> Result<bool> {
    on_db!(db, |pool| {
        let r = sqlx::query(
            "UPDATE oci_blobs SET deleting_by = NULL, deleting_at = NULL \
             WHERE digest = $1 AND deleting_by = $2",
        )
        .bind(digest)
        .bind(by)
        .execute(pool)
        .await?;
        Ok(r.rows_affected() > 0)
    })
}

/// Marks a blob for deletion by collection `by`, in one statement that requires that nothing
/// claimed or used it at or after `cutoff` (Unix ms) and that no collection marked it already;
/// a blob without a row gets one, marked. Whether this call marked it.
pub async fn mark_blob(db: &Db, digest: &str, by: &str, cutoff: i64) -> Result<bool> {
    let now = now_ms();
    on_db!(db, |pool| {
        let r = sqlx::query(
            "INSERT INTO oci_blobs (digest, used_at, deleting_by, deleting_at) \
             VALUES ($1, 0, $2, $3) \
             ON CONFLICT (digest) DO UPDATE SET deleting_by = $2, deleting_at = $3 \
             WHERE oci_blobs.deleting_by IS NULL AND oci_blobs.used_at < $4",
        )
        .bind(digest)
        .bind(by)
        .bind(now)
        .bind(cutoff)
        .execute(pool)
        .await?;
        Ok(r.rows_affected() > 0)
    })
}

/// Hands the marks other collections left before `before` (Unix ms) to collection `by`;
/// returns the blobs it took over.
pub async fn take_over_stale_marks(db: &Db, by: &str, before: i64) -> Result<Vec<String>> {
    let now = now_ms();
    on_db!(db, |pool| {
        let d: Vec<String> = sqlx::query_scalar(
            "UPDATE oci_blobs SET deleting_by = $1, deleting_at = $2 \
             WHERE deleting_by IS NOT NULL AND deleting_at < $3 RETURNING digest",
        )
        .bind(by)
        .bind(now)
        .bind(before)
        .fetch_all(pool)
        .await?;
        Ok(d)
    })
}

/// Removes the row of a blob collection `by` deleted.
pub async fn forget_blob(db: &Db, digest: &str, by: &str) -> Result<()> {
    on_db!(db, |pool| {
        sqlx::query("DELETE FROM oci_blobs WHERE digest = $1 AND deleting_by = $2")
            .bind(digest)
            .bind(by)
            .execute(pool)
            .await?;
        Ok(())
    })
}

/// A version without a recorded OCI manifest (see [`crate::publish::backfill_manifests`]).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Unrecorded {
    /// `publisher/agent`.
    pub name: String,
    /// Version.
    pub version: String,
    /// Envelope JSON.
    pub envelope: String,
    /// Bundle digest.
    pub bundle_digest: Option<String>,
    /// Bundle size.
    pub bundle_size: Option<i64>,
}

/// Every version whose tag is not recorded (published before manifests were recorded in the
/// publish's transaction).
pub async fn unrecorded_versions(db: &Db) -> Result<Vec<Unrecorded>> {
    on_read!(db, |pool| {
        Ok(sqlx::query_as(
            "SELECT a.name AS name, v.version AS version, v.envelope AS envelope, \
             v.bundle_digest AS bundle_digest, v.bundle_size AS bundle_size \
             FROM versions v JOIN agents a ON a.id = v.agent_id \
             WHERE NOT EXISTS (SELECT 1 FROM oci_tags t \
                               WHERE t.repository = a.name AND t.tag = v.version)",
        )
        .fetch_all(pool)
        .await?)
    })
}

/// Links a blob of `size` bytes to a repository: it was uploaded or mounted there.
pub async fn link_blob(db: &Db, repository: &str, digest: &str, size: u64) -> Result<()> {
    let now = now_ms();
    on_db!(db, |pool| {
        sqlx::query(
            "INSERT INTO oci_blob_links (repository, digest, linked_at, size) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (repository, digest) DO UPDATE SET linked_at = $3, size = $4",
        )
        .bind(repository)
        .bind(digest)
        .bind(now)
        .bind(i64::try_from(size).unwrap_or(i64::MAX))
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// Whether a blob belongs to a repository: linked to it (uploaded, mounted) or referenced by
/// one of its manifests. Blobs are read, mounted and deleted only through such a repository.
pub async fn blob_in_repository(db: &Db, repository: &str, digest: &str) -> Result<bool> {
    on_read!(db, |pool| {
        let b: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM oci_blob_links WHERE repository = $1 AND digest = $2) \
             OR EXISTS (SELECT 1 FROM oci_blob_refs WHERE blob_digest = $2 AND repository = $1)",
        )
        .bind(repository)
        .bind(digest)
        .fetch_one(pool)
        .await?;
        Ok(b)
    })
}

/// Whether any manifest or published version references a blob (indexed: no manifest is read).
pub async fn blob_referenced(db: &Db, digest: &str) -> Result<bool> {
    on_read!(db, |pool| {
        let b: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM oci_blob_refs WHERE blob_digest = $1) \
             OR EXISTS (SELECT 1 FROM versions WHERE bundle_digest = $1)",
        )
        .bind(digest)
        .fetch_one(pool)
        .await?;
        Ok(b)
    })
}

/// Removes a blob's link to a repository; whether another repository still has it linked.
pub async fn unlink_blob(db: &Db, repository: &str, digest: &str) -> Result<bool> {
    on_db!(db, |pool| {
        sqlx::query("DELETE FROM oci_blob_links WHERE repository = $1 AND digest = $2")
            .bind(repository)
            .bind(digest)
            .execute(pool)
            .await?;
        let elsewhere: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM oci_blob_links WHERE digest = $1)")
                .bind(digest)
                .fetch_one(pool)
                .await?;
        Ok(elsewhere)
    })
}

/// Records a new upload session of user `user_id`.
pub async fn create_upload(db: &Db, id: &str, repository: &str, user_id: i64) -> Result<()> {
    let now = now_ms();
    on_db!(db, |pool| {
        sqlx::query(
            "INSERT INTO oci_uploads (id, repository, created_at, updated_at, user_id) \
             VALUES ($1, $2, $3, $3, $4)",
        )
        .bind(id)
        .bind(repository)
        .bind(now)
        .bind(user_id)
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// Removes the sessions of user `user_id` idle for longer than `ttl_ms`; returns their ids.
pub async fn expire_user_uploads(db: &Db, user_id: i64, ttl_ms: i64) -> Result<Vec<String>> {
    on_db!(db, |pool| {
        let ids: Vec<String> = sqlx::query_scalar(
            "DELETE FROM oci_uploads WHERE user_id = $1 AND updated_at <= $2 RETURNING id",
        )
        .bind(user_id)
        .bind(now_ms() - ttl_ms)
        .fetch_all(pool)
        .await?;
        Ok(ids)
    })
}

/// The live upload sessions of user `user_id` other than `except`: how many, and how many
/// bytes they have staged.
pub async fn user_uploads(db: &Db, user_id: i64, ttl_ms: i64, except: &str) -> Result<(u64, u64)> {
    on_read!(db, |pool| {
        let (n, bytes): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM oci_uploads \
             WHERE user_id = $1 AND updated_at > $2 AND id <> $3",
        )
        .bind(user_id)
        .bind(now_ms() - ttl_ms)
        .bind(except)
        .fetch_one(pool)
        .await?;
        Ok((n.max(0) as u64, bytes.max(0) as u64))
    })
}

/// `repository >= $lo AND repository < $hi` selects the repositories of namespace `ns`
/// (`ns/…`; `0` follows `/`), so the primary keys' indexes serve the range.
fn namespace_range(ns: &str) -> (String, String) {
    (format!("{ns}/"), format!("{ns}0"))
}

/// Bytes held by the repositories of namespace `ns`: blobs linked to them, their manifests, and
/// live uploads to them other than `except`.
pub async fn namespace_bytes(db: &Db, ns: &str, ttl_ms: i64, except: &str) -> Result<u64> {
    let (lo, hi) = namespace_range(ns);
    on_read!(db, |pool| {
        let (linked, staged): (i64, i64) = sqlx::query_as(
            "SELECT \
               CAST((SELECT COALESCE(SUM(size), 0) FROM oci_blob_links \
                     WHERE repository >= $1 AND repository < $2) AS BIGINT), \
               CAST((SELECT COALESCE(SUM(bytes), 0) FROM oci_uploads \
                     WHERE repository >= $1 AND repository < $2 AND updated_at > $3 \
                     AND id <> $4) AS BIGINT) \
               + CAST((SELECT COALESCE(SUM(LENGTH(content)), 0) FROM oci_manifests \
                     WHERE repository >= $1 AND repository < $2) AS BIGINT)",
        )
        .bind(&lo)
        .bind(&hi)
        .bind(now_ms() - ttl_ms)
        .bind(except)
        .fetch_one(pool)
        .await?;
        Ok(linked.max(0) as u64 + staged.max(0) as u64)
    })
}

/// How many manifests the repositories of namespace `ns` hold.
pub async fn namespace_manifests(db: &Db, ns: &str) -> Result<u64> {
    let (lo, hi) = namespace_range(ns);
    on_read!(db, |pool| {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM oci_manifests WHERE repository >= $1 AND repository < $2",
        )
        .bind(&lo)
        .bind(&hi)
        .fetch_one(pool)
        .await?;
        Ok(n.max(0) as u64)
    })
}

/// The repository of a live upload session (not older than `ttl_ms` since its last write).
pub async fn upload(db: &Db, id: &str, ttl_ms: i64) -> Result<Option<String>> {
    on_read!(db, |pool| {
        let r: Option<String> = sqlx::query_scalar(
            "SELECT repository FROM oci_uploads WHERE id = $1 AND updated_at > $2",
        )
        .bind(id)
        .bind(now_ms() - ttl_ms)
        .fetch_optional(pool)
        .await?;
        Ok(r)
    })
}

/// Marks an upload session as written now, holding `bytes` staged bytes.
pub async fn touch_upload(db: &Db, id: &str, bytes: u64) -> Result<()> {
    on_db!(db, |pool| {
        sqlx::query("UPDATE oci_uploads SET updated_at = $1, bytes = $2 WHERE id = $3")
            .bind(now_ms())
            .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
            .bind(id)
            .execute(pool)
            .await?;
        Ok(())
    })
}

/// Forgets an upload session.
pub async fn delete_upload(db: &Db, id: &str) -> Result<bool> {
    on_db!(db, |pool| {
        let r = sqlx::query("DELETE FROM oci_uploads WHERE id = $1")
            .bind(id)
            .execute(pool)
            .await?;
        Ok(r.rows_affected() > 0)
    })
}

/// Removes sessions idle for longer than `ttl_ms`; returns their ids.
pub async fn expire_uploads(db: &Db, ttl_ms: i64) -> Result<Vec<String>> {
    on_db!(db, |pool| {
        let ids: Vec<String> =
            sqlx::query_scalar("DELETE FROM oci_uploads WHERE updated_at <= $1 RETURNING id")
                .bind(now_ms() - ttl_ms)
                .fetch_all(pool)
                .await?;
        Ok(ids)
    })
}

/// Stores a bearer token (its hash) issued by the token endpoint.
pub async fn put_access_token(
    db: &Db,
    token_hash: &str,
    api_token_hash: Option<&str>,
    push_namespaces: &str,
    expires_at: i64,
) -> Result<()> {
    on_db!(db, |pool| {
        sqlx::query("DELETE FROM oci_access_tokens WHERE expires_at <= $1")
            .bind(now_ms())
            .execute(pool)
            .await?;
        sqlx::query(
            "INSERT INTO oci_access_tokens (token_hash, api_token_hash, push_namespaces, \
             expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(api_token_hash)
        .bind(push_namespaces)
        .bind(expires_at)
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// The API token hash behind a live bearer token (`None` for an anonymous one) and the
/// namespaces it may push to.
pub async fn access_token(
    db: &Db,
    token_hash: &str,
) -> Result<Option<(Option<String>, Option<String>)>> {
    on_read!(db, |pool| {
        let r: Option<(Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT api_token_hash, push_namespaces FROM oci_access_tokens \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_ms())
        .fetch_optional(pool)
        .await?;
        Ok(r)
    })
}
