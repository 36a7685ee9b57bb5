//! The OCI tables: manifests (stored byte-exact), tags, the blob references each manifest
//! makes, upload sessions and the bearer tokens of `/v2/token`.

use index_schema::name::Digest;
use sqlx::AnyConnection;

use super::blobs::{BlobClaim, claim_blobs};
use super::repo::{Result, Store, now_ms};
use crate::store::db::Flag;

/// A stored manifest, without its bytes (they are read on their own, by
/// [`Store::manifest_content`], once the memory for them is granted).
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

/// A version's tag as the outbox saw it published (see [`Store::published_tags`]).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PublishedTag {
    /// The publish's outbox sequence.
    pub seq: i64,
    /// When it was published (Unix ms).
    pub created_at: i64,
    /// `publisher/agent`.
    pub repository: String,
    /// The version.
    pub tag: String,
    /// The manifest the tag names.
    pub digest: String,
    /// Its media type.
    pub media_type: String,
}

/// Inside a transaction: records manifest `m` (idempotent by digest), indexes the blobs it
/// references (`refs`, digests of its config and layers: see migration 0017) and moves its tag.
/// The blobs must have been claimed in the same transaction ([`claim_blobs`]).
pub(super) async fn insert_manifest(
    conn: &mut AnyConnection,
    m: &NewManifest<'_>,
    refs: &[Digest],
    now: i64,
) -> Result<()> {
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
    .bind(now)
    .execute(&mut *conn)
    .await?;
    for d in refs {
        sqlx::query(
            "INSERT INTO oci_blob_refs (repository, manifest_digest, blob_digest) \
             VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(m.repository)
        .bind(m.digest)
        .bind(d.to_string())
        .execute(&mut *conn)
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
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The columns of a [`ManifestRow`] of `oci_manifests m`.
const MANIFEST_COLUMNS: &str =
    "m.digest, m.media_type, m.artifact_type, CAST(LENGTH(m.content) AS BIGINT) AS size";

/// `repository >= $lo AND repository < $hi` selects the repositories of namespace `ns`
/// (`ns/…`; `0` follows `/`), so the primary keys' indexes serve the range.
fn namespace_range(ns: &str) -> (String, String) {
    (format!("{ns}/"), format!("{ns}0"))
}

impl Store {
    // ---- manifests and tags ----

    /// Stores a manifest (idempotent by digest) and moves `tag` to it, in one transaction that
    /// first claims every blob it references ([`super::StoreError::BlobUnavailable`] when one
    /// is gone or being collected).
    pub async fn put_manifest(&self, m: &NewManifest<'_>, claim: &BlobClaim) -> Result<()> {
        let now = now_ms();
        let refs: Vec<Digest> = claim.needed.iter().map(|(d, _)| *d).collect();
        let mut tx = self.db.write().begin().await?;
        claim_blobs(&mut tx, claim, now).await?;
        insert_manifest(&mut tx, m, &refs, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// A manifest by digest.
    pub async fn manifest(&self, repository: &str, digest: &str) -> Result<Option<ManifestRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {MANIFEST_COLUMNS} FROM oci_manifests m \
             WHERE m.repository = $1 AND m.digest = $2"
        ))
        .bind(repository)
        .bind(digest)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// A manifest by tag.
    pub async fn manifest_by_tag(
        &self,
        repository: &str,
        tag: &str,
    ) -> Result<Option<ManifestRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {MANIFEST_COLUMNS} FROM oci_tags t \
             JOIN oci_manifests m ON m.repository = t.repository AND m.digest = t.digest \
             WHERE t.repository = $1 AND t.tag = $2"
        ))
        .bind(repository)
        .bind(tag)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// Whether the repository has any manifest.
    pub async fn repository_exists(&self, repository: &str) -> Result<bool> {
        let found: Flag =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM oci_manifests WHERE repository = $1)")
                .bind(repository)
                .fetch_one(self.db.read())
                .await?;
        Ok(found.into())
    }

    /// Tags in lexical order after `last`, at most `n`.
    pub async fn tags(&self, repository: &str, last: Option<&str>, n: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT tag FROM oci_tags WHERE repository = $1 AND tag > $2 ORDER BY tag LIMIT $3",
        )
        .bind(repository)
        .bind(last.unwrap_or(""))
        .bind(n)
        .fetch_all(self.db.read())
        .await?)
    }

    /// The bytes of a manifest.
    pub async fn manifest_content(
        &self,
        repository: &str,
        digest: &str,
    ) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar(
            "SELECT content FROM oci_manifests WHERE repository = $1 AND digest = $2",
        )
        .bind(repository)
        .bind(digest)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// Manifests whose subject is `digest` (of `artifact_type` when given), in digest order
    /// after `after`, at most `n`.
    pub async fn referrers(
        &self,
        repository: &str,
        digest: &str,
        artifact_type: Option<&str>,
        after: &str,
        n: i64,
    ) -> Result<Vec<ManifestRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {MANIFEST_COLUMNS} FROM oci_manifests m \
             WHERE m.repository = $1 AND m.subject = $2 AND m.digest > $3 \
             AND ($4 = '' OR m.artifact_type = $4) ORDER BY m.digest LIMIT $5"
        ))
        .bind(repository)
        .bind(digest)
        .bind(after)
        .bind(artifact_type.unwrap_or(""))
        .bind(n)
        .fetch_all(self.db.read())
        .await?)
    }

    /// Deletes a tag. Whether it existed.
    pub async fn delete_tag(&self, repository: &str, tag: &str) -> Result<bool> {
        let r = sqlx::query("DELETE FROM oci_tags WHERE repository = $1 AND tag = $2")
            .bind(repository)
            .bind(tag)
            .execute(self.db.write())
            .await?;
        Ok(r.rows_affected() > 0)
    }

    /// Deletes a manifest and the tags pointing at it. Whether it existed.
    pub async fn delete_manifest(&self, repository: &str, digest: &str) -> Result<bool> {
        let mut tx = self.db.write().begin().await?;
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
    }

    /// Every version whose tag is not recorded (published before manifests were recorded in
    /// the publish's transaction).
    pub async fn unrecorded_versions(&self) -> Result<Vec<Unrecorded>> {
        Ok(sqlx::query_as(
            "SELECT a.name AS name, v.version AS version, v.envelope AS envelope, \
             v.bundle_digest AS bundle_digest, v.bundle_size AS bundle_size \
             FROM versions v JOIN agents a ON a.id = v.agent_id \
             WHERE NOT EXISTS (SELECT 1 FROM oci_tags t \
                               WHERE t.repository = a.name AND t.tag = v.version)",
        )
        .fetch_all(self.db.read())
        .await?)
    }

    /// The versions published after outbox sequence `seq` that are still there, with the
    /// manifest their tag names, in sequence (commit) order, at most `limit`.
    pub async fn published_tags(&self, seq: i64, limit: i64) -> Result<Vec<PublishedTag>> {
        Ok(sqlx::query_as(
            "SELECT o.seq AS seq, o.created_at AS created_at, t.repository AS repository, \
             t.tag AS tag, t.digest AS digest, m.media_type AS media_type \
             FROM outbox o \
             JOIN oci_tags t ON t.repository = o.agent AND t.tag = o.version \
             JOIN oci_manifests m ON m.repository = t.repository AND m.digest = t.digest \
             WHERE o.seq > $1 AND o.kind = 'publish' ORDER BY o.seq LIMIT $2",
        )
        .bind(seq)
        .bind(limit)
        .fetch_all(self.db.read())
        .await?)
    }

    // ---- quotas ----

    /// Bytes held by the repositories of namespace `ns`: blobs linked to them, their
    /// manifests, and live uploads to them other than `except`.
    pub async fn namespace_bytes(&self, ns: &str, ttl_ms: i64, except: &str) -> Result<u64> {
        let (lo, hi) = namespace_range(ns);
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
        .fetch_one(self.db.read())
        .await?;
        Ok(linked.max(0) as u64 + staged.max(0) as u64)
    }

    /// How many manifests the repositories of namespace `ns` hold.
    pub async fn namespace_manifests(&self, ns: &str) -> Result<u64> {
        let (lo, hi) = namespace_range(ns);
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM oci_manifests WHERE repository >= $1 AND repository < $2",
        )
        .bind(&lo)
        .bind(&hi)
        .fetch_one(self.db.read())
        .await?;
        Ok(n.max(0) as u64)
    }

    // ---- upload sessions ----

    /// Records a new upload session of user `user_id`.
    pub async fn create_upload(&self, id: &str, repository: &str, user_id: i64) -> Result<()> {
        sqlx::query(
            "INSERT INTO oci_uploads (id, repository, created_at, updated_at, user_id) \
             VALUES ($1, $2, $3, $3, $4)",
        )
        .bind(id)
        .bind(repository)
        .bind(now_ms())
        .bind(user_id)
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// Removes the sessions of user `user_id` idle for longer than `ttl_ms`; returns their ids.
    pub async fn expire_user_uploads(&self, user_id: i64, ttl_ms: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "DELETE FROM oci_uploads WHERE user_id = $1 AND updated_at <= $2 RETURNING id",
        )
        .bind(user_id)
        .bind(now_ms() - ttl_ms)
        .fetch_all(self.db.write())
        .await?)
    }

    /// The live upload sessions of user `user_id` other than `except`: how many, and how many
    /// bytes they have staged.
    pub async fn user_uploads(
        &self,
        user_id: i64,
        ttl_ms: i64,
        except: &str,
    ) -> Result<(u64, u64)> {
        let (n, bytes): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM oci_uploads \
             WHERE user_id = $1 AND updated_at > $2 AND id <> $3",
        )
        .bind(user_id)
        .bind(now_ms() - ttl_ms)
        .bind(except)
        .fetch_one(self.db.read())
        .await?;
        Ok((n.max(0) as u64, bytes.max(0) as u64))
    }

    /// The repository of a live upload session (not older than `ttl_ms` since its last write).
    pub async fn upload(&self, id: &str, ttl_ms: i64) -> Result<Option<String>> {
        Ok(sqlx::query_scalar(
            "SELECT repository FROM oci_uploads WHERE id = $1 AND updated_at > $2",
        )
        .bind(id)
        .bind(now_ms() - ttl_ms)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// Marks an upload session as written now, holding `bytes` staged bytes.
    pub async fn touch_upload(&self, id: &str, bytes: u64) -> Result<()> {
        sqlx::query("UPDATE oci_uploads SET updated_at = $1, bytes = $2 WHERE id = $3")
            .bind(now_ms())
            .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
            .bind(id)
            .execute(self.db.write())
            .await?;
        Ok(())
    }

    /// Forgets an upload session.
    pub async fn delete_upload(&self, id: &str) -> Result<bool> {
        let r = sqlx::query("DELETE FROM oci_uploads WHERE id = $1")
            .bind(id)
            .execute(self.db.write())
            .await?;
        Ok(r.rows_affected() > 0)
    }

    /// Removes sessions idle for longer than `ttl_ms`; returns their ids.
    pub async fn expire_uploads(&self, ttl_ms: i64) -> Result<Vec<String>> {
        Ok(
            sqlx::query_scalar("DELETE FROM oci_uploads WHERE updated_at <= $1 RETURNING id")
                .bind(now_ms() - ttl_ms)
                .fetch_all(self.db.write())
                .await?,
        )
    }

    // ---- bearer tokens of /v2/token ----

    /// Stores a bearer token (its hash) issued by the token endpoint.
    pub async fn put_access_token(
        &self,
        token_hash: &str,
        api_token_hash: Option<&str>,
        push_namespaces: &str,
        expires_at: i64,
    ) -> Result<()> {
        let pool = self.db.write();
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
    }

    /// The API token hash behind a live bearer token (`None` for an anonymous one) and the
    /// namespaces it may push to.
    pub async fn access_token(
        &self,
        token_hash: &str,
    ) -> Result<Option<(Option<String>, Option<String>)>> {
        Ok(sqlx::query_as(
            "SELECT api_token_hash, push_namespaces FROM oci_access_tokens \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_ms())
        .fetch_optional(self.db.read())
        .await?)
    }
}
