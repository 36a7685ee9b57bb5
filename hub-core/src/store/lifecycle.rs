//! The life of a version after its publish (issue 33): deprecation (message and successor) and
//! removal (an unpublish or an operator's takedown), each with its transparency-log entry in
//! the change's transaction; tombstones as read.

use index_schema::name::{AgentName, Digest};
use index_schema::tlog::{Entry, RemovalReason};
use sqlx::AnyConnection;

use super::repo::{Actor, Result, Store, now_ms};
use super::rows::AgentRow;
use super::tlog::{log_error, tlog_append};
use super::tx::{audit, outbox, refresh_agent};

/// A deprecation as stored: the message and the agent to use instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecation<'a> {
    /// Why (checked by the caller: one line, not empty).
    pub message: &'a str,
    /// `publisher/agent` to use instead.
    pub successor: Option<&'a AgentName>,
}

/// What a version's tombstone says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    /// When it was removed (Unix ms).
    pub removed_at: i64,
    /// The manifest digest that is gone (`None`: removed by `ofc-hub admin delete`, which does
    /// not record it).
    pub manifest_digest: Option<String>,
    /// The reason class (`None`: an operator's delete, no class given).
    pub reason: Option<String>,
}

/// Why a removal did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveOutcome {
    /// Removed; its tombstone entry is at this log index.
    Removed(u64),
    /// No such version (any more).
    Missing,
    /// An unpublish's limits no longer held inside the transaction (published before
    /// `published_since`, or `downloads` reached `max_downloads`).
    Refused,
}

/// The limits an unpublish must meet, re-checked in the removing transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpublishLimits {
    /// Published at or after this time (Unix ms).
    pub published_since: i64,
    /// Fewer downloads than this.
    pub max_downloads: i64,
}

impl Store {
    /// Sets (`Some`) or clears (`None`) the deprecation of a version, logging a `deprecate` or
    /// `undeprecate` entry. False when the version is absent.
    pub async fn set_deprecated(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        version: &str,
        deprecation: Option<Deprecation<'_>>,
    ) -> Result<bool> {
        let now = now_ms();
        let name = AgentName::parse(&agent.name).map_err(log_error)?;
        let mut tx = self.db.write().begin().await?;
        let n = sqlx::query(
            "UPDATE versions SET deprecated_message = $1, deprecated_successor = $2 \
             WHERE agent_id = $3 AND version = $4",
        )
        .bind(deprecation.as_ref().map(|d| d.message))
        .bind(
            deprecation
                .as_ref()
                .and_then(|d| d.successor.map(|s| s.to_string())),
        )
        .bind(agent.id)
        .bind(version)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            return Ok(false);
        }
        refresh_agent(&mut tx, agent.id, now).await?;
        let (kind, entry, detail) = match &deprecation {
            Some(d) => (
                "deprecate",
                Entry::Deprecate {
                    agent: name,
                    version: version.to_string(),
                    successor: d.successor.cloned(),
                    message: d.message.to_string(),
                },
                Some(match d.successor {
                    Some(s) => format!("{} (use {s})", d.message),
                    None => d.message.to_string(),
                }),
            ),
            None => (
                "undeprecate",
                Entry::Undeprecate {
                    agent: name,
                    version: version.to_string(),
                },
                None,
            ),
        };
        let target = format!("{}@{version}", agent.name);
        audit(
            &mut tx,
            actor,
            &format!("version.{kind}"),
            &target,
            detail.as_deref(),
            now,
        )
        .await?;
        tlog_append(&mut tx, &entry, now).await?;
        outbox(&mut tx, kind, &agent.name, Some(version), now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Removes a version (an unpublish with `limits`, a takedown without) in one transaction:
    /// the row, its OCI tag and manifests, a tombstone naming its digest and `reason`, a
    /// `remove` log entry, the audit and outbox rows.
    pub async fn remove_version(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        version: &str,
        reason: RemovalReason,
        limits: Option<UnpublishLimits>,
    ) -> Result<RemoveOutcome> {
        let now = now_ms();
        let name = AgentName::parse(&agent.name).map_err(log_error)?;
        let mut tx = self.db.write().begin().await?;
        let row: Option<(i64, String, i64, i64)> = sqlx::query_as(
            "SELECT id, manifest_digest, created_at, downloads FROM versions \
             WHERE agent_id = $1 AND version = $2",
        )
        .bind(agent.id)
        .bind(version)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((id, digest, _, _)) = row else {
            return Ok(RemoveOutcome::Missing);
        };
        // The limits hold in the statement that deletes: a download counted concurrently
        // either came first (and the delete finds no row) or finds no version to count.
        let (since, max) = match limits {
            Some(l) => (l.published_since, l.max_downloads),
            None => (i64::MIN, i64::MAX),
        };
        let n = sqlx::query(
            "DELETE FROM versions WHERE id = $1 AND created_at >= $2 AND downloads < $3",
        )
        .bind(id)
        .bind(since)
        .bind(max)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            return Ok(RemoveOutcome::Refused);
        }
        let manifest_digest = Digest::parse(&digest).map_err(log_error)?;
        sqlx::query(
            "INSERT INTO deleted_versions (agent, version, deleted_at, manifest_digest, \
             reason_class) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&agent.name)
        .bind(version)
        .bind(now)
        .bind(&digest)
        .bind(reason.as_str())
        .execute(&mut *tx)
        .await?;
        drop_version_oci(&mut tx, &agent.name, version).await?;
        refresh_agent(&mut tx, agent.id, now).await?;
        let target = format!("{}@{version}", agent.name);
        let action = match reason {
            RemovalReason::Unpublished => "version.unpublish",
            _ => "version.takedown",
        };
        let detail = format!("digest={digest} reason={reason}");
        audit(&mut tx, actor, action, &target, Some(&detail), now).await?;
        let entry = Entry::Remove {
            agent: name,
            version: version.to_string(),
            manifest_digest,
            reason,
        };
        let at = tlog_append(&mut tx, &entry, now).await?;
        outbox(&mut tx, "delete_version", &agent.name, Some(version), now).await?;
        tx.commit().await?;
        Ok(RemoveOutcome::Removed(at.index))
    }

    /// The tombstone of `agent@version`, if it was removed or deleted.
    pub async fn tombstone(&self, agent: &str, version: &str) -> Result<Option<Tombstone>> {
        let row: Option<(i64, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT deleted_at, manifest_digest, reason_class FROM deleted_versions \
             WHERE agent = $1 AND version = $2",
        )
        .bind(agent)
        .bind(version)
        .fetch_optional(self.db.read())
        .await?;
        Ok(row.map(|(removed_at, manifest_digest, reason)| Tombstone {
            removed_at,
            manifest_digest,
            reason,
        }))
    }
}

/// Drops what served a removed version under `/v2/`: its OCI tag, the manifest it named
/// (unless another tag names it too), the manifests that refer to it (signatures,
/// attestations), and the links of their blobs to the repository that nothing left in it
/// needs (no other manifest of the repository references them, no other version of the agent
/// is that bundle): a removed version's bundle is `BLOB_UNKNOWN` at once, not only after
/// `ofc-hub gc` (the version row is deleted before this runs).
pub(super) async fn drop_version_oci(
    tx: &mut AnyConnection,
    repository: &str,
    version: &str,
) -> Result<()> {
    let digest: Option<String> =
        sqlx::query_scalar("SELECT digest FROM oci_tags WHERE repository = $1 AND tag = $2")
            .bind(repository)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?;
    sqlx::query("DELETE FROM oci_tags WHERE repository = $1 AND tag = $2")
        .bind(repository)
        .bind(version)
        .execute(&mut *tx)
        .await?;
    let Some(d) = digest else {
        return Ok(());
    };
    let going = "FROM oci_manifests WHERE repository = $1 AND (digest = $2 OR subject = $2) \
         AND NOT EXISTS (SELECT 1 FROM oci_tags t WHERE t.repository = $1 AND t.digest = $2)";
    let blobs: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT DISTINCT blob_digest FROM oci_blob_refs WHERE repository = $1 \
         AND manifest_digest IN (SELECT digest {going})"
    ))
    .bind(repository)
    .bind(&d)
    .fetch_all(&mut *tx)
    .await?;
    // Their references go with them (`ON DELETE CASCADE`).
    sqlx::query(&format!("DELETE {going}"))
        .bind(repository)
        .bind(&d)
        .execute(&mut *tx)
        .await?;
    for blob in blobs {
        sqlx::query(
            "DELETE FROM oci_blob_links WHERE repository = $1 AND digest = $2 \
             AND NOT EXISTS (SELECT 1 FROM oci_blob_refs r \
                 WHERE r.repository = $1 AND r.blob_digest = $2) \
             AND NOT EXISTS (SELECT 1 FROM versions v JOIN agents a ON a.id = v.agent_id \
                 WHERE a.name = $1 AND v.bundle_digest = $2)",
        )
        .bind(repository)
        .bind(&blob)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
