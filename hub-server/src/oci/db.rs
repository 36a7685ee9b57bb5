//! The SQL of the OCI API, written once for both backends (see [`crate::db`]).

use sqlx::Row;

use crate::db::Db;
use crate::store::{Result, now_ms};
use crate::{on_db, on_read};

/// A stored manifest.
#[derive(Debug, Clone)]
pub struct ManifestRow {
    /// `sha256:…` of `content`.
    pub digest: String,
    /// `mediaType` (also the `Content-Type` it was pushed with).
    pub media_type: String,
    /// `artifactType`, else the config media type of an image manifest.
    pub artifact_type: Option<String>,
    /// The exact bytes pushed.
    pub content: Vec<u8>,
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

fn manifest_row(r: &impl RowLike) -> Result<ManifestRow> {
    r.manifest()
}

trait RowLike {
    fn manifest(&self) -> Result<ManifestRow>;
}

macro_rules! impl_rowlike {
    ($t:ty) => {
        impl RowLike for $t {
            fn manifest(&self) -> Result<ManifestRow> {
                Ok(ManifestRow {
                    digest: self.try_get("digest")?,
                    media_type: self.try_get("media_type")?,
                    artifact_type: self.try_get("artifact_type")?,
                    content: self.try_get("content")?,
                })
            }
        }
    };
}
impl_rowlike!(sqlx::sqlite::SqliteRow);
impl_rowlike!(sqlx::postgres::PgRow);

/// Stores a manifest (idempotent by digest) and moves `tag` to it, in one transaction.
pub async fn put_manifest(db: &Db, m: &NewManifest<'_>) -> Result<()> {
    let now = now_ms();
    on_db!(db, |pool| {
        let mut tx = pool.begin().await?;
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
        .execute(&mut *tx)
        .await?;
        if let Some(tag) = m.tag {
            sqlx::query(
                "INSERT INTO oci_tags (repository, tag, digest, updated_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (repository, tag) DO UPDATE SET digest = $3, updated_at = $4",
            )
            .bind(m.repository)
            .bind(tag)
            .bind(m.digest)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    })
}

/// A manifest by digest.
pub async fn manifest(db: &Db, repository: &str, digest: &str) -> Result<Option<ManifestRow>> {
    on_read!(db, |pool| {
        let row = sqlx::query(
            "SELECT digest, media_type, artifact_type, content FROM oci_manifests \
             WHERE repository = $1 AND digest = $2",
        )
        .bind(repository)
        .bind(digest)
        .fetch_optional(pool)
        .await?;
        row.as_ref().map(manifest_row).transpose()
    })
}

/// A manifest by tag.
pub async fn manifest_by_tag(db: &Db, repository: &str, tag: &str) -> Result<Option<ManifestRow>> {
    on_read!(db, |pool| {
        let row = sqlx::query(
            "SELECT m.digest, m.media_type, m.artifact_type, m.content FROM oci_tags t \
             JOIN oci_manifests m ON m.repository = t.repository AND m.digest = t.digest \
             WHERE t.repository = $1 AND t.tag = $2",
        )
        .bind(repository)
        .bind(tag)
        .fetch_optional(pool)
        .await?;
        row.as_ref().map(manifest_row).transpose()
    })
}

/// Whether the repository has any manifest.
pub async fn repository_exists(db: &Db, repository: &str) -> Result<bool> {
    on_read!(db, |pool| {
        let n: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM oci_manifests WHERE repository = $1 LIMIT 1")
                .bind(repository)
                .fetch_optional(pool)
                .await?;
        Ok(n.is_some())
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

/// Manifests whose subject is `digest`.
pub async fn referrers(db: &Db, repository: &str, digest: &str) -> Result<Vec<ManifestRow>> {
    on_read!(db, |pool| {
        let rows = sqlx::query(
            "SELECT digest, media_type, artifact_type, content FROM oci_manifests \
             WHERE repository = $1 AND subject = $2 ORDER BY created_at, digest",
        )
        .bind(repository)
        .bind(digest)
        .fetch_all(pool)
        .await?;
        rows.iter().map(manifest_row).collect()
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

/// Every stored manifest's bytes, page by page (for garbage collection).
pub async fn manifest_page(
    db: &Db,
    after: Option<(&str, &str)>,
    limit: i64,
) -> Result<Vec<(String, String, Vec<u8>)>> {
    let (r, d) = after.unwrap_or(("", ""));
    on_read!(db, |pool| {
        let rows = sqlx::query(
            "SELECT repository, digest, content FROM oci_manifests \
             WHERE repository > $1 OR (repository = $1 AND digest > $2) \
             ORDER BY repository, digest LIMIT $3",
        )
        .bind(r)
        .bind(d)
        .bind(limit)
        .fetch_all(pool)
        .await?;
        rows.iter()
            .map(|x| {
                Ok((
                    x.try_get("repository")?,
                    x.try_get("digest")?,
                    x.try_get("content")?,
                ))
            })
            .collect()
    })
}

/// Bundle digests of every published version (garbage collection keeps them).
pub async fn version_bundles(db: &Db) -> Result<Vec<String>> {
    on_read!(db, |pool| {
        let v: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT bundle_digest FROM versions WHERE bundle_digest IS NOT NULL",
        )
        .fetch_all(pool)
        .await?;
        Ok(v)
    })
}

/// Records a new upload session.
pub async fn create_upload(db: &Db, id: &str, repository: &str) -> Result<()> {
    let now = now_ms();
    on_db!(db, |pool| {
        sqlx::query(
            "INSERT INTO oci_uploads (id, repository, created_at, updated_at) VALUES ($1, $2, $3, $3)",
        )
        .bind(id)
        .bind(repository)
        .bind(now)
        .execute(pool)
        .await?;
        Ok(())
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

/// Marks an upload session as written now.
pub async fn touch_upload(db: &Db, id: &str) -> Result<()> {
    on_db!(db, |pool| {
        sqlx::query("UPDATE oci_uploads SET updated_at = $1 WHERE id = $2")
            .bind(now_ms())
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
    expires_at: i64,
) -> Result<()> {
    on_db!(db, |pool| {
        sqlx::query("DELETE FROM oci_access_tokens WHERE expires_at <= $1")
            .bind(now_ms())
            .execute(pool)
            .await?;
        sqlx::query(
            "INSERT INTO oci_access_tokens (token_hash, api_token_hash, expires_at) \
             VALUES ($1, $2, $3)",
        )
        .bind(token_hash)
        .bind(api_token_hash)
        .bind(expires_at)
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// The API token hash behind a live bearer token: `Some(None)` for an anonymous one.
pub async fn access_token(db: &Db, token_hash: &str) -> Result<Option<Option<String>>> {
    on_read!(db, |pool| {
        let r: Option<Option<String>> = sqlx::query_scalar(
            "SELECT api_token_hash FROM oci_access_tokens WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_ms())
        .fetch_optional(pool)
        .await?;
        Ok(r)
    })
}
