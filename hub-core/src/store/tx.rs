//! What writing transactions do besides their own change — the audit row, the outbox row, the
//! agent's derived state — as functions of the transaction's connection.

use sqlx::AnyConnection;

use super::repo::{Actor, Result};

/// Appends an audit row.
pub(super) async fn audit(
    conn: &mut AnyConnection,
    actor: &Actor,
    action: &str,
    target: &str,
    detail: Option<&str>,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (at, user_id, user_name, token_id, action, target, detail) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(now)
    .bind(actor.user_id)
    .bind(&actor.user_name)
    .bind(actor.token_id)
    .bind(action)
    .bind(target)
    .bind(detail)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Appends an outbox row; returns its sequence number (commit order, no gaps).
pub(super) async fn outbox(
    conn: &mut AnyConnection,
    kind: &str,
    agent: &str,
    version: Option<&str>,
    now: i64,
) -> Result<i64> {
    let seq: i64 = sqlx::query_scalar(
        "UPDATE outbox_counter SET last_seq = last_seq + 1 WHERE id = 1 RETURNING last_seq",
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO outbox (seq, kind, agent, version, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(seq)
    .bind(kind)
    .bind(agent)
    .bind(version)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(seq)
}

/// Recomputes `agents.latest_version` ([`latest_version`]) and bumps `updated_at`.
pub(super) async fn refresh_agent(conn: &mut AnyConnection, agent_id: i64, now: i64) -> Result<()> {
    let rows: Vec<(String, Option<i64>)> =
        sqlx::query_as("SELECT version, yanked_at FROM versions WHERE agent_id = $1")
            .bind(agent_id)
            .fetch_all(&mut *conn)
            .await?;
    let latest = latest_version(rows.iter().map(|(v, y)| (v.as_str(), y.is_some())));
    sqlx::query("UPDATE agents SET latest_version = $1, updated_at = $2 WHERE id = $3")
        .bind(latest)
        .bind(now)
        .bind(agent_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The version `ofc pull publisher/agent` gets: [`index_schema::version::select`] with no
/// selector (the highest non-yanked release, else the highest non-yanked pre-release).
pub fn latest_version<'a>(versions: impl Iterator<Item = (&'a str, bool)>) -> Option<String> {
    index_schema::version::latest(versions).map(str::to_string)
}
