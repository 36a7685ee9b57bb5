//! The hub's id in the database (migration 0028): see [`crate::hub_id`].

use super::repo::{Result, Store, StoreError, now_ms};

/// The hub id the database records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedHubId {
    /// The id (32 hex digits).
    pub id: String,
    /// Whether it was written to the blob store too (the second of the two writes).
    pub blobs_marked: bool,
}

impl Store {
    /// The hub id this database records, if any.
    pub async fn hub_id(&self) -> Result<Option<RecordedHubId>> {
        let row: Option<(String, Option<i64>)> =
            sqlx::query_as("SELECT id, blobs_marked_at FROM hub_id WHERE one = 1")
                .fetch_optional(self.db.write())
                .await?;
        Ok(row.map(|(id, at)| RecordedHubId {
            id,
            blobs_marked: at.is_some(),
        }))
    }

    /// Records `id` as the hub's id unless one is recorded already, and returns the recorded
    /// one: of several replicas starting at once, the first writer names the hub.
    pub async fn record_hub_id(&self, id: &str) -> Result<RecordedHubId> {
        sqlx::query(
            "INSERT INTO hub_id (one, id, created_at) VALUES (1, $1, $2) \
             ON CONFLICT (one) DO NOTHING",
        )
        .bind(id)
        .bind(now_ms())
        .execute(self.db.write())
        .await?;
        self.hub_id().await?.ok_or_else(|| {
            StoreError::Log("the hub id row is missing right after it was written".into())
        })
    }

    /// Notes that the blob store holds the id too.
    pub async fn hub_id_marked(&self) -> Result<()> {
        sqlx::query(
            "UPDATE hub_id SET blobs_marked_at = $1 WHERE one = 1 AND blobs_marked_at IS NULL",
        )
        .bind(now_ms())
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// Up to a few blobs the database references (the newest versions' bundles, manifests'
    /// blobs): empty when it references none. A blob store that holds none of them is not
    /// this database's.
    pub async fn sample_referenced_blobs(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = sqlx::query_scalar(
            "SELECT bundle_digest FROM versions WHERE bundle_digest IS NOT NULL \
             ORDER BY id DESC LIMIT 3",
        )
        .fetch_all(self.db.read())
        .await?;
        let refs: Vec<String> = sqlx::query_scalar("SELECT blob_digest FROM oci_blob_refs LIMIT 3")
            .fetch_all(self.db.read())
            .await?;
        for d in refs {
            if !out.contains(&d) {
                out.push(d);
            }
        }
        Ok(out)
    }
}
