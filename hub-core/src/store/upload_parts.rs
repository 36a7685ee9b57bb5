//! The parts of chunked upload sessions (migration 0022): where each chunk is stored in the
//! blob backend, so that any replica appends the next chunk or finishes the upload. Appending
//! is a compare-and-set on the session's byte count; finishing and cancelling are one `DELETE`
//! of the session that exactly one request wins (its parts go with it, `ON DELETE CASCADE`).

use super::repo::{Result, Store, now_ms};

/// One stored chunk of an upload session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPart {
    /// Its first byte's offset in the upload.
    pub start: u64,
    /// Its length.
    pub size: u64,
    /// Its bytes' digest (`sha256:…`).
    pub digest: String,
    /// The name the blob backend gave it.
    pub name: String,
}

/// A live upload session as the database has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadState {
    /// The repository it uploads into.
    pub repository: String,
    /// The bytes its parts hold together (the next chunk's offset).
    pub bytes: u64,
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// A live upload session (not idle for longer than `ttl_ms`).
    pub async fn upload_state(&self, id: &str, ttl_ms: i64) -> Result<Option<UploadState>> {
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT repository, bytes FROM oci_uploads WHERE id = $1 AND updated_at > $2",
        )
        .bind(id)
        .bind(now_ms() - ttl_ms)
        // The primary: a chunk another replica appended a moment ago must be seen.
        .fetch_optional(self.db.write())
        .await?;
        Ok(row.map(|(repository, bytes)| UploadState {
            repository,
            bytes: bytes.max(0) as u64,
        }))
    }

    /// Records `part` as the session's next chunk if the session is live (idle for at most
    /// `ttl_ms`) and holds exactly `part.start` bytes. False when another request appended or
    /// ended the session meanwhile (nothing recorded).
    pub async fn append_upload_part(
        &self,
        id: &str,
        part: &UploadPart,
        ttl_ms: i64,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let r = sqlx::query(
            "UPDATE oci_uploads SET bytes = bytes + $1, updated_at = $2 \
             WHERE id = $3 AND bytes = $4 AND updated_at > $5",
        )
        .bind(to_i64(part.size))
        .bind(now)
        .bind(id)
        .bind(to_i64(part.start))
        .bind(now - ttl_ms)
        .execute(&mut *tx)
        .await?;
        if r.rows_affected() != 1 {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO oci_upload_parts (upload_id, start, size, digest, name) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(to_i64(part.start))
        .bind(to_i64(part.size))
        .bind(&part.digest)
        .bind(&part.name)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Ends the session if it still holds exactly `bytes` bytes, and returns its parts in
    /// order; `None` when another request appended to or ended it first. One caller wins.
    pub async fn take_upload(&self, id: &str, bytes: u64) -> Result<Option<Vec<UploadPart>>> {
        let mut tx = self.db.write().begin().await?;
        let rows: Vec<(i64, i64, String, String)> = sqlx::query_as(
            "SELECT start, size, digest, name FROM oci_upload_parts WHERE upload_id = $1 \
             ORDER BY start",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        let r = sqlx::query("DELETE FROM oci_uploads WHERE id = $1 AND bytes = $2")
            .bind(id)
            .bind(to_i64(bytes))
            .execute(&mut *tx)
            .await?;
        if r.rows_affected() != 1 {
            return Ok(None);
        }
        tx.commit().await?;
        let parts: Vec<UploadPart> = rows
            .into_iter()
            .map(|(start, size, digest, name)| UploadPart {
                start: start.max(0) as u64,
                size: size.max(0) as u64,
                digest,
                name,
            })
            .collect();
        // The rows read before the `DELETE` that won are the session's: an append commits
        // only while `bytes` is unchanged, and `bytes` matched.
        let total: u64 = parts.iter().map(|p| p.size).sum();
        if total != bytes {
            return Err(super::StoreError::Conflict(format!(
                "upload {id} holds {bytes} bytes but its parts hold {total}"
            )));
        }
        Ok(Some(parts))
    }
}
