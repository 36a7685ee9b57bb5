//! What the search index follows: outbox entries with the current state of the agents they
//! name, and the snapshot a rebuild or a check reads.

use std::collections::HashMap;

use super::repo::{Result, Store};
use crate::store::db::Flag;

/// An agent as search shows it: its row joined with its latest visible version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VisibleAgent {
    /// `publisher/agent`.
    pub name: String,
    /// The latest visible version's envelope JSON.
    pub envelope: String,
    /// Whether that version is deprecated.
    #[sqlx(try_from = "Flag")]
    pub deprecated: bool,
    /// Downloads over all versions.
    pub downloads: i64,
    /// Unix ms of the agent's last change.
    pub updated_at_ms: i64,
}

const VISIBLE_SELECT: &str = "SELECT a.name, v.envelope, \
    v.deprecated_message IS NOT NULL AS deprecated, a.downloads, a.updated_at AS updated_at_ms \
    FROM agents a JOIN versions v ON v.agent_id = a.id \
    AND v.version = a.latest_version WHERE v.yanked_at IS NULL";

impl Store {
    /// Outbox entries after `after` (sequence and agent, at most `limit`) and the current
    /// visible state of each agent they name (absent: nothing visible), read in one
    /// transaction: from one snapshot on SQLite; on PostgreSQL a later state is fine (replays
    /// are idempotent).
    pub async fn outbox_with_states(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<(Vec<(i64, String)>, HashMap<String, VisibleAgent>)> {
        let mut tx = self.db.read().begin().await?;
        let entries: Vec<(i64, String)> =
            sqlx::query_as("SELECT seq, agent FROM outbox WHERE seq > $1 ORDER BY seq LIMIT $2")
                .bind(after)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await?;
        let mut states = HashMap::new();
        let q = format!("{VISIBLE_SELECT} AND a.name = $1");
        for (_, agent) in &entries {
            if states.contains_key(agent) {
                continue;
            }
            let visible: Option<VisibleAgent> = sqlx::query_as(&q)
                .bind(agent)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(v) = visible {
                states.insert(agent.clone(), v);
            }
        }
        tx.commit().await?;
        Ok((entries, states))
    }

    /// The outbox's last sequence number (0 when empty).
    pub async fn outbox_head(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox")
                .fetch_one(self.db.read())
                .await?,
        )
    }

    /// Every visible agent and the outbox head, read in one transaction.
    pub async fn visible_agents(&self) -> Result<(i64, Vec<VisibleAgent>)> {
        let mut tx = self.db.read().begin().await?;
        let head: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox")
            .fetch_one(&mut *tx)
            .await?;
        let rows: Vec<VisibleAgent> = sqlx::query_as(VISIBLE_SELECT).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok((head, rows))
    }
}
