//! The outbox search follows, and the audit log.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Store {
    // ---- outbox and audit ----

    /// Outbox entries after `seq`, at most `limit`.
    pub async fn outbox_after(&self, seq: i64, limit: i64) -> Result<Vec<OutboxRow>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT seq, kind, agent, version, created_at FROM outbox WHERE seq > $1 \
                 ORDER BY seq LIMIT $2",
            )
            .bind(seq)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(OutboxRow {
                    seq: r.try_get("seq")?,
                    kind: r.try_get("kind")?,
                    agent: r.try_get("agent")?,
                    version: r.try_get("version")?,
                    created_at: r.try_get("created_at")?,
                });
            }
            Ok(out)
        })
    }

    /// The newest audit entries, optionally only those whose target starts with `prefix`.
    pub async fn audit_log(&self, prefix: Option<&str>, limit: i64) -> Result<Vec<AuditRow>> {
        on_read!(&self.db, |pool| {
            let rows =
                match prefix {
                    Some(p) => sqlx::query(
                        "SELECT * FROM audit_log WHERE target = $1 OR target LIKE $2 ESCAPE '\\' \
                         ORDER BY id DESC LIMIT $3",
                    )
                    .bind(p)
                    .bind(format!(
                        "{}%",
                        p.replace('\\', "\\\\")
                            .replace('%', "\\%")
                            .replace('_', "\\_")
                    ))
                    .bind(limit)
                    .fetch_all(pool)
                    .await?,
                    None => {
                        sqlx::query("SELECT * FROM audit_log ORDER BY id DESC LIMIT $1")
                            .bind(limit)
                            .fetch_all(pool)
                            .await?
                    }
                };
            let mut out = Vec::new();
            for r in rows {
                out.push(AuditRow {
                    id: r.try_get("id")?,
                    at: r.try_get("at")?,
                    user_name: r.try_get("user_name")?,
                    token_id: r.try_get("token_id")?,
                    action: r.try_get("action")?,
                    target: r.try_get("target")?,
                    detail: r.try_get("detail")?,
                });
            }
            Ok(out)
        })
    }
}
