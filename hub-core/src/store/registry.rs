//! The registry-API view: unsigned `remote` entries.
//!
//! **Handles.** Floors look agents up by handle (`@code`, seed 000's registry API). A
//! registration holds its handle alone: `POST /registry/agents` is 409 `agent_exists` when any
//! agent already uses it, in any case (a unique index on the lowercase handle of registrations,
//! migration 0011). Publishing is not refused over a handle — published agents are identified by
//! `publisher/agent`, and an open hub cannot make the first publisher of `@assistant` its owner
//! for everyone — so the registry view resolves a shared handle to its registration, else to the
//! published agent that took it first, never to one another namespace added later
//! (`agents_by_handle` in `agents.rs`). An agent's `handle_since` (migration 0014) is set when it
//! gets a handle it did not have and kept while the handle stays, so an older agent that changes
//! its id to a handle in use does not take it over. Considered and dropped: a hub-wide unique
//! handle for published agents too (it refuses every second publisher of a common id such as
//! `@code`).

use super::repo::{Actor, Result, Store, StoreError, conflict_on_unique, now_ms};
use super::rows::{AgentRow, NewRegistryAgent};
use super::tx::{audit, outbox};

impl Store {
    // ---- registry API view ----

    /// Registers an unsigned registry entry (an agent with an endpoint and no versions).
    ///
    /// A registration holds its handle alone, hub-wide and in any letter case: it is refused
    /// ([`StoreError::Conflict`]) when its name exists or when any agent, registered or
    /// published, of any namespace, already uses the handle. The unique index
    /// `agents_registry_handle` (on `lower(handle)` of registrations) settles concurrent
    /// registrations: the loser's insert fails and is refused the same way.
    pub async fn register_agent(&self, actor: &Actor, a: &NewRegistryAgent) -> Result<()> {
        let now = now_ms();
        let handle = a.handle.to_ascii_lowercase();
        let mut tx = self.db.write().begin().await?;
        let holder: Option<String> = sqlx::query_scalar(
            "SELECT name FROM agents WHERE lower(handle) = $1 \
             ORDER BY (registry_endpoint IS NULL), created_at, id LIMIT 1",
        )
        .bind(&handle)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(holder) = holder {
            return Err(StoreError::Conflict(format!(
                "the handle `@{handle}` is taken by `{holder}`; a handle belongs to one agent \
                 on this hub"
            )));
        }
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM agents WHERE name = $1")
            .bind(&a.agent)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Err(StoreError::Conflict(format!(
                "agent `{}` exists already",
                a.agent
            )));
        }
        sqlx::query(
            "INSERT INTO agents (namespace_id, name, handle, registry_endpoint, \
             registry_metadata, registry_key, registry_token_hash, created_at, updated_at, \
             handle_since) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)",
        )
        .bind(a.namespace_id)
        .bind(&a.agent)
        .bind(&handle)
        .bind(&a.endpoint)
        .bind(&a.metadata)
        .bind(&a.public_key)
        .bind(&a.token_hash)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| {
            conflict_on_unique(e, || {
                format!(
                    "`{}` or the handle `@{handle}` was taken by a concurrent request",
                    a.agent
                )
            })
        })?;
        audit(
            &mut tx,
            actor,
            "registry.register",
            &a.agent,
            Some(&a.endpoint),
            now,
        )
        .await?;
        outbox(&mut tx, "registry_update", &a.agent, None, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Replaces the metadata of a registry entry.
    pub async fn update_registry_metadata(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        metadata: &str,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        sqlx::query("UPDATE agents SET registry_metadata = $1, updated_at = $2 WHERE id = $3")
            .bind(metadata)
            .bind(now)
            .bind(agent.id)
            .execute(&mut *tx)
            .await?;
        audit(&mut tx, actor, "registry.update", &agent.name, None, now).await?;
        outbox(&mut tx, "registry_update", &agent.name, None, now).await?;
        tx.commit().await?;
        Ok(())
    }
}
