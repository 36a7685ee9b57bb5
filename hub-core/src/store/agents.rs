//! Agents and versions: publish, read, yank, delete, downloads (deprecate and removals:
//! `lifecycle.rs`).

use index_schema::name::Digest;

use super::blobs::{BlobClaim, claim_blobs};
use super::lifecycle::drop_version_oci;
use super::oci::{NewManifest, insert_manifest};
use super::repo::{Actor, Result, Store, StoreError, conflict_on_unique, now_ms, unique_violation};
use super::rows::{AGENT_COLUMNS, AgentRow, NewVersion, VERSION_COLUMNS, VersionRow};
use super::tlog::{
    LogAppend, delete_entry, publish_entry, tlog_append, trusted_publish_entry, yank_entry,
};
use super::tx::{audit, outbox, refresh_agent};

/// The agent `v` publishes to: its row, created when it has none. Two first publishes of one
/// agent (different versions, through different replicas) both land: the insert does nothing
/// when the name is taken — on PostgreSQL it waits for the other transaction and sees its row
/// once committed — and the row found is then checked as the publish's earlier look-up would
/// have: the same namespace, not a registry entry, and a publisher allowed to add to an
/// existing agent ([`NewVersion::may_update`]).
async fn agent_for_publish(tx: &mut sqlx::AnyConnection, v: &NewVersion, now: i64) -> Result<i64> {
    const FIND: &str = "SELECT id, namespace_id, registry_endpoint FROM agents WHERE name = $1";
    let mut found: Option<(i64, i64, Option<String>)> = sqlx::query_as(FIND)
        .bind(&v.agent)
        .fetch_optional(&mut *tx)
        .await?;
    if found.is_none() {
        let created: Option<i64> = sqlx::query_scalar(
            "INSERT INTO agents (namespace_id, name, handle, created_at, updated_at, \
             handle_since) VALUES ($1, $2, $3, $4, $4, $4) ON CONFLICT (name) DO NOTHING \
             RETURNING id",
        )
        .bind(v.namespace_id)
        .bind(&v.agent)
        .bind(&v.handle)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| {
            conflict_on_unique(e, || {
                format!("agent `{}` was created concurrently", v.agent)
            })
        })?;
        if let Some(id) = created {
            return Ok(id);
        }
        // Created by a publish that committed meanwhile.
        found = sqlx::query_as(FIND)
            .bind(&v.agent)
            .fetch_optional(&mut *tx)
            .await?;
    }
    match found {
        Some((id, namespace_id, None)) if namespace_id == v.namespace_id && v.may_update => Ok(id),
        _ => Err(StoreError::Conflict(format!(
            "agent `{}` was created concurrently",
            v.agent
        ))),
    }
}

impl Store {
    // ---- agents and versions ----

    /// Publishes a version in one transaction: the agent row (created on first publish), the
    /// version, the agent's latest version, its transparency-log entry, an outbox row and an
    /// audit row. Returns the outbox sequence, the publish time and where the log put it.
    pub async fn publish(&self, actor: &Actor, v: &NewVersion) -> Result<(i64, i64, LogAppend)> {
        self.publish_claiming(actor, v, None, None).await
    }

    /// [`Store::publish`], claiming the blobs the version references (its bundle, its
    /// envelope blob, its OCI layers) first inside the same transaction, so a concurrent
    /// garbage collection cannot remove them (see [`crate::gc`]):
    /// [`StoreError::BlobUnavailable`] when one is gone or being collected. `oci`: the
    /// version's OCI manifest, recorded with its tag and blob references in the same
    /// transaction (see [`crate::publish`]).
    pub async fn publish_claiming(
        &self,
        actor: &Actor,
        v: &NewVersion,
        claim: Option<&BlobClaim>,
        oci: Option<&NewManifest<'_>>,
    ) -> Result<(i64, i64, LogAppend)> {
        let now = now_ms();
        let entry = publish_entry(&v.agent, &v.version, &v.manifest_digest, &v.key_id)?;
        // The blobs the manifest references: the ones claimed.
        let refs: Vec<Digest> = claim
            .map(|c| c.needed.iter().map(|(d, _)| *d).collect())
            .unwrap_or_default();
        let mut tx = self.db.write().begin().await?;
        if let Some(claim) = claim {
            claim_blobs(&mut tx, claim, now).await?;
        }
        // A key revoked between the handler's check and this transaction signs nothing.
        let revoked: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT revoked_at FROM publisher_keys WHERE namespace_id = $1 AND key_id = $2",
        )
        .bind(v.namespace_id)
        .bind(&v.key_id)
        .fetch_optional(&mut *tx)
        .await?;
        if !matches!(revoked, Some(None)) {
            return Err(StoreError::KeyRevoked);
        }
        // A removed version's number is never used again, whatever the content (issue 33).
        let tombstone: Option<Option<String>> = sqlx::query_scalar(
            "SELECT reason_class FROM deleted_versions WHERE agent = $1 AND version = $2",
        )
        .bind(&v.agent)
        .bind(&v.version)
        .fetch_optional(&mut *tx)
        .await?;
        match tombstone {
            Some(Some(reason)) => return Err(StoreError::VersionRemoved(reason)),
            Some(None) => return Err(StoreError::VersionDeleted),
            None => {}
        }
        let agent_id = agent_for_publish(&mut tx, v, now).await?;
        sqlx::query(
            "INSERT INTO versions (agent_id, version, manifest_digest, envelope, key_id, \
             source_kind, bundle_digest, bundle_size, published_by, token_id, created_at, \
             trusted_issuer, trusted_subject) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(agent_id)
        .bind(&v.version)
        .bind(&v.manifest_digest)
        .bind(&v.envelope)
        .bind(&v.key_id)
        .bind(&v.source_kind)
        .bind(&v.bundle_digest)
        .bind(v.bundle_size)
        .bind(actor.user_id)
        .bind(actor.token_id)
        .bind(now)
        .bind(v.trusted.as_ref().map(|t| t.issuer.as_str()))
        .bind(v.trusted.as_ref().map(|t| t.subject.as_str()))
        .execute(&mut *tx)
        .await
        .map_err(|e| {
            if unique_violation(&e) {
                StoreError::VersionExists
            } else {
                e.into()
            }
        })?;
        // A new handle counts from now: an old agent cannot take over a handle in use by
        // changing its id (see `agents_by_handle`).
        sqlx::query(
            "UPDATE agents SET handle_since = CASE \
               WHEN handle IS NOT NULL AND lower(handle) = lower($1) THEN handle_since \
               ELSE $3 END, handle = $1 WHERE id = $2",
        )
        .bind(&v.handle)
        .bind(agent_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        refresh_agent(&mut tx, agent_id, now).await?;
        if let Some(m) = oci {
            insert_manifest(&mut tx, m, &refs, now).await?;
        }
        // A bundle of a bundle source belongs to the agent's repository (migration 0017).
        if let (Some(d), Some(size)) = (&v.bundle_digest, v.bundle_size) {
            sqlx::query(
                "INSERT INTO oci_blob_links (repository, digest, linked_at, size) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (repository, digest) DO NOTHING",
            )
            .bind(&v.agent)
            .bind(d)
            .bind(now)
            .bind(size)
            .execute(&mut *tx)
            .await?;
        }
        let target = format!("{}@{}", v.agent, v.version);
        let mut detail = format!("digest={} key={}", v.manifest_digest, v.key_id);
        if let Some(t) = &v.trusted {
            detail.push_str(&format!(
                " trusted_issuer={} trusted_subject={}",
                t.issuer, t.subject
            ));
        }
        audit(
            &mut tx,
            actor,
            "version.publish",
            &target,
            Some(&detail),
            now,
        )
        .await?;
        // Last, so that the log's head row is held for the shortest time (PostgreSQL).
        let logged = tlog_append(&mut tx, &entry, now).await?;
        // Published by trusted publishing: a fact of its own, right after the publish.
        if let Some(t) = &v.trusted {
            let trusted = trusted_publish_entry(&v.agent, &v.version, &v.manifest_digest, t)?;
            tlog_append(&mut tx, &trusted, now).await?;
        }
        sqlx::query("UPDATE versions SET log_index = $1 WHERE agent_id = $2 AND version = $3")
            .bind(logged.index as i64)
            .bind(agent_id)
            .bind(&v.version)
            .execute(&mut *tx)
            .await?;
        let seq = outbox(&mut tx, "publish", &v.agent, Some(&v.version), now).await?;
        tx.commit().await?;
        Ok((seq, now, logged))
    }

    /// An agent by name.
    pub async fn agent(&self, name: &str) -> Result<Option<AgentRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents a WHERE a.name = $1"
        ))
        .bind(name)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// Agents with this handle (compared in lowercase), the one the registry API shows first.
    ///
    /// A handle belongs to one namespace, its *holder*: the namespace of the handle's
    /// registration if there is one (a registration is only made while no agent uses the
    /// handle, and at most one exists per handle), else of the published agent that took it
    /// first (by `handle_since`, set when an agent gets a handle it did not have).
    /// The holder's agents come first (its registration, then its most recently updated
    /// agent), then every other namespace's, so an agent another namespace publishes later
    /// under the same handle never shadows the holder's.
    pub async fn agents_by_handle(&self, handle: &str) -> Result<Vec<AgentRow>> {
        let handle = handle.to_ascii_lowercase();
        Ok(sqlx::query_as(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents a WHERE lower(a.handle) = $1 \
             ORDER BY (a.namespace_id <> ( \
                 SELECT h.namespace_id FROM agents h WHERE lower(h.handle) = $1 \
                 ORDER BY (h.registry_endpoint IS NULL), \
                 COALESCE(h.handle_since, h.created_at), h.id LIMIT 1)), \
             (a.registry_endpoint IS NULL), a.updated_at DESC, a.id DESC LIMIT 50"
        ))
        .bind(&handle)
        .fetch_all(self.db.read())
        .await?)
    }

    /// All versions of an agent, oldest first.
    pub async fn versions(&self, agent_id: i64) -> Result<Vec<VersionRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {VERSION_COLUMNS} FROM versions v JOIN users u ON u.id = v.published_by \
             WHERE v.agent_id = $1 ORDER BY v.id"
        ))
        .bind(agent_id)
        .fetch_all(self.db.read())
        .await?)
    }

    /// One version of an agent.
    pub async fn version(&self, agent_id: i64, version: &str) -> Result<Option<VersionRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {VERSION_COLUMNS} FROM versions v JOIN users u ON u.id = v.published_by \
             WHERE v.agent_id = $1 AND v.version = $2"
        ))
        .bind(agent_id)
        .bind(version)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// Agents ordered by `(updated_at, id)` after the cursor position, at most `limit`.
    pub async fn list_agents(
        &self,
        after_updated: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<AgentRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents a \
             WHERE a.updated_at > $1 OR (a.updated_at = $1 AND a.id > $2) \
             ORDER BY a.updated_at, a.id LIMIT $3"
        ))
        .bind(after_updated)
        .bind(after_id)
        .bind(limit)
        .fetch_all(self.db.read())
        .await?)
    }

    /// Sets or clears the yank state of a version (`reason` is `Some` to yank).
    pub async fn set_yanked(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        version: &str,
        yank: Option<&str>,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let n = match yank {
            Some(reason) => sqlx::query(
                "UPDATE versions SET yanked_at = $1, yank_reason = $2 \
                 WHERE agent_id = $3 AND version = $4",
            )
            .bind(now)
            .bind(reason)
            .bind(agent.id)
            .bind(version)
            .execute(&mut *tx)
            .await?
            .rows_affected(),
            None => sqlx::query(
                "UPDATE versions SET yanked_at = NULL, yank_reason = NULL \
                 WHERE agent_id = $1 AND version = $2",
            )
            .bind(agent.id)
            .bind(version)
            .execute(&mut *tx)
            .await?
            .rows_affected(),
        };
        if n == 0 {
            return Ok(false);
        }
        refresh_agent(&mut tx, agent.id, now).await?;
        let kind = if yank.is_some() { "yank" } else { "unyank" };
        let target = format!("{}@{version}", agent.name);
        audit(
            &mut tx,
            actor,
            &format!("version.{kind}"),
            &target,
            yank,
            now,
        )
        .await?;
        let entry = yank_entry(&agent.name, version, yank.is_some())?;
        tlog_append(&mut tx, &entry, now).await?;
        outbox(&mut tx, kind, &agent.name, Some(version), now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Deletes one version (operator/admin only) and leaves a tombstone, so the same version
    /// can never be published again. False when absent.
    pub async fn delete_version(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        version: &str,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let n = sqlx::query("DELETE FROM versions WHERE agent_id = $1 AND version = $2")
            .bind(agent.id)
            .bind(version)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n == 0 {
            return Ok(false);
        }
        // In the transparency log, in this transaction: a publisher's audit shows it.
        tlog_append(&mut tx, &delete_entry(&agent.name, version)?, now).await?;
        sqlx::query(
            "INSERT INTO deleted_versions (agent, version, deleted_at) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&agent.name)
        .bind(version)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        drop_version_oci(&mut tx, &agent.name, version).await?;
        refresh_agent(&mut tx, agent.id, now).await?;
        let target = format!("{}@{version}", agent.name);
        audit(&mut tx, actor, "version.delete", &target, None, now).await?;
        outbox(&mut tx, "delete_version", &agent.name, Some(version), now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Deletes an agent with all its versions, leaving a tombstone for each version. False when
    /// absent.
    pub async fn delete_agent(&self, actor: &Actor, name: &str) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let id: Option<i64> = sqlx::query_scalar("SELECT id FROM agents WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(id) = id else { return Ok(false) };
        // One transparency-log entry per version, in publish order, in this transaction.
        let versions: Vec<String> =
            sqlx::query_scalar("SELECT version FROM versions WHERE agent_id = $1 ORDER BY id")
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
        for version in &versions {
            tlog_append(&mut tx, &delete_entry(name, version)?, now).await?;
        }
        sqlx::query(
            "INSERT INTO deleted_versions (agent, version, deleted_at) \
             SELECT $1, version, $2 FROM versions WHERE agent_id = $3 ON CONFLICT DO NOTHING",
        )
        .bind(name)
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM versions WHERE agent_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        super::trust::forget_weeks(&mut tx, id).await?;
        sqlx::query("DELETE FROM agents WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        // Everything that served it under `/v2/` goes with it: its tags and manifests
        // (the agent's repository is its name), so `ofc-hub gc` frees its blobs; its blobs
        // leave the repository too: a later publish uploads them again.
        for table in ["oci_tags", "oci_manifests", "oci_blob_links"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE repository = $1"))
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        audit(&mut tx, actor, "agent.delete", name, None, now).await?;
        outbox(&mut tx, "delete_agent", name, None, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Counts a download of a version, once per `client` (an opaque key, see
    /// [`crate::agents::download_client`]) and UTC day.
    pub async fn count_download(&self, agent_id: i64, version_id: i64, client: &str) -> Result<()> {
        let day = now_ms().div_euclid(86_400_000);
        let mut tx = self.db.write().begin().await?;
        let first = sqlx::query(
            "INSERT INTO download_seen (day, version_id, client) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(day)
        .bind(version_id)
        .bind(client)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !first {
            tx.commit().await?;
            return Ok(());
        }
        sqlx::query("DELETE FROM download_seen WHERE day < $1")
            .bind(day - 1)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE versions SET downloads = downloads + 1 WHERE id = $1")
            .bind(version_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE agents SET downloads = downloads + 1 WHERE id = $1")
            .bind(agent_id)
            .execute(&mut *tx)
            .await?;
        let week = index_schema::hub_api::trust::week_of_day(day);
        super::trust::count_week(&mut tx, agent_id, week).await?;
        tx.commit().await?;
        Ok(())
    }
}
