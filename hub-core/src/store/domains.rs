//! The domains namespaces claimed and proved (issue 33, point 3), their re-checks and lapses.

use index_schema::hub_api::DomainInfo;

use super::repo::{Actor, Result, Store};
use super::rows::Namespace;
use super::tx::audit;

/// A claim due for its re-check.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DueDomain {
    /// The namespace's id.
    pub namespace_id: i64,
    /// Its name.
    pub namespace: String,
    /// The claimed domain.
    pub domain: String,
    /// `https` or `dns`.
    pub method: String,
}

#[derive(sqlx::FromRow)]
struct DomainRecord {
    domain: String,
    method: String,
    key_id: String,
    verified_at: i64,
    checked_at: i64,
    lapsed_at: Option<i64>,
    lapse_reason: Option<String>,
    key_row: Option<i64>,
    key_revoked_at: Option<i64>,
}

/// Joins the key the proof named: a revoked (or removed) key ends the verification at once,
/// without waiting for the re-check.
const VERIFIED: &str = "d.lapsed_at IS NULL AND k.id IS NOT NULL AND k.revoked_at IS NULL";

impl Store {
    /// Records a proved claim of `domain` by `ns` (replacing an earlier claim): verified now.
    pub async fn set_domain(
        &self,
        actor: &Actor,
        ns: &Namespace,
        domain: &str,
        method: &str,
        key_id: &str,
        now: i64,
    ) -> Result<()> {
        let mut tx = self.db.write().begin().await?;
        sqlx::query(
            "INSERT INTO namespace_domains (namespace_id, domain, method, key_id, claimed_by, \
             verified_at, checked_at, lapsed_at, lapse_reason) \
             VALUES ($1, $2, $3, $4, $5, $6, $6, NULL, NULL) \
             ON CONFLICT (namespace_id) DO UPDATE SET domain = excluded.domain, \
             method = excluded.method, key_id = excluded.key_id, \
             claimed_by = excluded.claimed_by, verified_at = excluded.verified_at, \
             checked_at = excluded.checked_at, lapsed_at = NULL, lapse_reason = NULL",
        )
        .bind(ns.id)
        .bind(domain)
        .bind(method)
        .bind(key_id)
        .bind(actor.user_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let detail = format!("{domain} ({method}, key {key_id})");
        audit(
            &mut tx,
            actor,
            "namespace.domain",
            &ns.name,
            Some(&detail),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Drops the claim of `ns`. False when it had none.
    pub async fn remove_domain(&self, actor: &Actor, ns: &Namespace, now: i64) -> Result<bool> {
        let mut tx = self.db.write().begin().await?;
        let n = sqlx::query("DELETE FROM namespace_domains WHERE namespace_id = $1")
            .bind(ns.id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n > 0 {
            audit(
                &mut tx,
                actor,
                "namespace.domain.remove",
                &ns.name,
                None,
                now,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(n > 0)
    }

    /// The claim of a namespace and whether it is verified now.
    pub async fn domain(&self, namespace_id: i64) -> Result<Option<DomainInfo>> {
        let r: Option<DomainRecord> = sqlx::query_as(
            "SELECT d.domain, d.method, d.key_id, d.verified_at, d.checked_at, d.lapsed_at, \
             d.lapse_reason, k.id AS key_row, k.revoked_at AS key_revoked_at \
             FROM namespace_domains d LEFT JOIN publisher_keys k \
             ON k.namespace_id = d.namespace_id AND k.key_id = d.key_id \
             WHERE d.namespace_id = $1",
        )
        .bind(namespace_id)
        .fetch_optional(self.db.read())
        .await?;
        Ok(r.map(|r| {
            let key_gone = r.key_row.is_none() || r.key_revoked_at.is_some();
            let (lapsed_at, lapse_reason) = match (r.lapsed_at, r.key_revoked_at) {
                (Some(at), _) => (Some(at), r.lapse_reason),
                (None, Some(at)) => (
                    Some(at),
                    Some(format!("the key {} the proof names was revoked", r.key_id)),
                ),
                (None, None) if r.key_row.is_none() => (
                    Some(r.checked_at),
                    Some(format!("the key {} the proof names is gone", r.key_id)),
                ),
                (None, None) => (None, None),
            };
            DomainInfo {
                verified: r.lapsed_at.is_none() && !key_gone,
                domain: r.domain,
                method: r.method,
                key_id: r.key_id,
                verified_at: r.verified_at,
                checked_at: r.checked_at,
                lapsed_at,
                lapse_reason,
            }
        }))
    }

    /// Every verified namespace and its domain, by name.
    pub async fn verified_domains(&self) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(&format!(
            "SELECT n.name, d.domain FROM namespace_domains d \
             JOIN namespaces n ON n.id = d.namespace_id \
             LEFT JOIN publisher_keys k ON k.namespace_id = d.namespace_id AND k.key_id = d.key_id \
             WHERE {VERIFIED} ORDER BY n.name"
        ))
        .fetch_all(self.db.read())
        .await?)
    }

    /// The domain of namespace `namespace_id` when it is verified now.
    pub async fn verified_domain(&self, namespace_id: i64) -> Result<Option<String>> {
        Ok(sqlx::query_scalar(&format!(
            "SELECT d.domain FROM namespace_domains d \
             LEFT JOIN publisher_keys k ON k.namespace_id = d.namespace_id AND k.key_id = d.key_id \
             WHERE d.namespace_id = $1 AND {VERIFIED}"
        ))
        .bind(namespace_id)
        .fetch_optional(self.db.read())
        .await?)
    }

    /// At most `limit` claims last checked at or before `checked_before` (Unix ms), the
    /// longest unchecked first.
    pub async fn domains_due(&self, checked_before: i64, limit: i64) -> Result<Vec<DueDomain>> {
        Ok(sqlx::query_as(
            "SELECT d.namespace_id, n.name AS namespace, d.domain, d.method \
             FROM namespace_domains d JOIN namespaces n ON n.id = d.namespace_id \
             WHERE d.checked_at <= $1 ORDER BY d.checked_at LIMIT $2",
        )
        .bind(checked_before)
        .bind(limit)
        .fetch_all(self.db.read())
        .await?)
    }

    /// Records a re-check of the claim of `domain` by namespace `namespace_id` (unless the
    /// claim changed meanwhile): `Ok(key id)` holds it (clearing a lapse), `Err(why)` lapses it
    /// (keeping the time of the first failure). True when the claim went from verified to
    /// lapsed or back.
    pub async fn record_domain_check(
        &self,
        namespace_id: i64,
        domain: &str,
        outcome: std::result::Result<&str, &str>,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.db.write().begin().await?;
        let before: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT lapsed_at FROM namespace_domains WHERE namespace_id = $1 AND domain = $2",
        )
        .bind(namespace_id)
        .bind(domain)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(lapsed_before) = before else {
            return Ok(false);
        };
        match outcome {
            Ok(key_id) => {
                sqlx::query(
                    "UPDATE namespace_domains SET checked_at = $1, key_id = $2, \
                     lapsed_at = NULL, lapse_reason = NULL \
                     WHERE namespace_id = $3 AND domain = $4",
                )
                .bind(now)
                .bind(key_id)
                .bind(namespace_id)
                .bind(domain)
                .execute(&mut *tx)
                .await?;
            }
            Err(why) => {
                sqlx::query(
                    "UPDATE namespace_domains SET checked_at = $1, \
                     lapsed_at = COALESCE(lapsed_at, $1), lapse_reason = $2 \
                     WHERE namespace_id = $3 AND domain = $4",
                )
                .bind(now)
                .bind(why)
                .bind(namespace_id)
                .bind(domain)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(lapsed_before.is_some() == outcome.is_ok())
    }
}
