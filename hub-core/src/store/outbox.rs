//! The outbox search follows, and the audit log.
//!
//! Sequence numbers come from a one-row counter (`outbox_counter`) updated inside the writing
//! transaction (`tx.rs`), so sequence order is commit order and there are no gaps: a follower
//! reading `seq > last` never misses a row that commits late, which a plain PostgreSQL sequence
//! would allow (a lower number may commit after a higher one was read).

use super::repo::{Result, Store};
use super::rows::{AuditRecord, AuditRow, OutboxRecord, OutboxRow};

/// The columns of an audit row.
const AUDIT_COLUMNS: &str = "id, at, user_name, token_id, action, target, detail";

impl Store {
    // ---- outbox and audit ----

    /// Outbox entries after `seq`, at most `limit`.
    pub async fn outbox_after(&self, seq: i64, limit: i64) -> Result<Vec<OutboxRow>> {
        let rows: Vec<OutboxRecord> = sqlx::query_as(
            "SELECT seq, kind, agent, version, created_at FROM outbox WHERE seq > $1 \
             ORDER BY seq LIMIT $2",
        )
        .bind(seq)
        .bind(limit)
        .fetch_all(self.db.read())
        .await?;
        Ok(rows.into_iter().map(OutboxRow::from).collect())
    }

    /// The newest audit entries, optionally only those whose target starts with `prefix`.
    pub async fn audit_log(&self, prefix: Option<&str>, limit: i64) -> Result<Vec<AuditRow>> {
        let rows: Vec<AuditRecord> = match prefix {
            Some(p) => {
                let like = format!(
                    "{}%",
                    p.replace('\\', "\\\\")
                        .replace('%', "\\%")
                        .replace('_', "\\_")
                );
                sqlx::query_as(&format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit_log \
                     WHERE target = $1 OR target LIKE $2 ESCAPE '\\' ORDER BY id DESC LIMIT $3"
                ))
                .bind(p)
                .bind(like)
                .bind(limit)
                .fetch_all(self.db.read())
                .await?
            }
            None => {
                sqlx::query_as(&format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit_log ORDER BY id DESC LIMIT $1"
                ))
                .bind(limit)
                .fetch_all(self.db.read())
                .await?
            }
        };
        Ok(rows.into_iter().map(AuditRow::from).collect())
    }
}
