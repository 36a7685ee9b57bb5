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

/// An outbox row's columns as read for its mark.
type OutboxMarkRow = (i64, String, String, Option<String>, i64);

/// What identifies an outbox row beyond its sequence: when it was written, its kind, agent and
/// version. A database restored from a backup hands the sequences out again, to other rows.
fn outbox_mark((_, kind, agent, version, created_at): &OutboxMarkRow) -> String {
    format!(
        "{created_at} {kind} {agent} {}",
        version.as_deref().unwrap_or("-")
    )
}

/// Outbox entries as the search index reads them: the entries after a sequence, the mark of
/// the row at that sequence and of the last entry (see [`Store::outbox_with_states`]).
#[derive(Debug, Clone, Default)]
pub struct OutboxRead {
    /// Sequence and agent of each entry.
    pub entries: Vec<(i64, String)>,
    /// The mark of the row at the sequence read after (None: no such row).
    pub at_after: Option<String>,
    /// The mark of the last entry.
    pub last: Option<String>,
}

impl Store {
    /// Outbox entries after `after` (sequence and agent, at most `limit`), the marks of the row
    /// at `after` and of the last entry (read by one statement, so from one snapshot), and the
    /// current visible state of each agent they name (absent: nothing visible), read in one
    /// transaction: from one snapshot on SQLite; on PostgreSQL a later state is fine (replays
    /// are idempotent).
    pub async fn outbox_with_states(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<(OutboxRead, HashMap<String, VisibleAgent>)> {
        let mut tx = self.db.read().begin().await?;
        let rows: Vec<OutboxMarkRow> = sqlx::query_as(
            "SELECT seq, kind, agent, version, created_at FROM outbox WHERE seq >= $1 \
             ORDER BY seq LIMIT $2",
        )
        .bind(after)
        .bind(limit.saturating_add(1))
        .fetch_all(&mut *tx)
        .await?;
        let mut read = OutboxRead::default();
        let mut rows = rows.as_slice();
        if let Some((first, rest)) = rows.split_first()
            && first.0 == after
        {
            read.at_after = Some(outbox_mark(first));
            rows = rest;
        }
        let rows = &rows[..rows.len().min(usize::try_from(limit).unwrap_or(usize::MAX))];
        read.last = rows.last().map(outbox_mark);
        read.entries = rows
            .iter()
            .map(|(seq, _, agent, _, _)| (*seq, agent.clone()))
            .collect();
        let mut states = HashMap::new();
        let q = format!("{VISIBLE_SELECT} AND a.name = $1");
        for (_, agent) in &read.entries {
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
        Ok((read, states))
    }

    /// The outbox's last sequence number (0 when empty).
    pub async fn outbox_head(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox")
                .fetch_one(self.db.read())
                .await?,
        )
    }

    /// Every visible agent, the outbox head and its row's mark (None when the outbox is
    /// empty), read in one transaction.
    pub async fn visible_agents(&self) -> Result<(i64, Option<String>, Vec<VisibleAgent>)> {
        let mut tx = self.db.read().begin().await?;
        let head: Option<OutboxMarkRow> = sqlx::query_as(
            "SELECT seq, kind, agent, version, created_at FROM outbox ORDER BY seq DESC LIMIT 1",
        )
        .fetch_optional(&mut *tx)
        .await?;
        let rows: Vec<VisibleAgent> = sqlx::query_as(VISIBLE_SELECT).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok((
            head.as_ref().map_or(0, |h| h.0),
            head.as_ref().map(outbox_mark),
            rows,
        ))
    }
}
