//! Namespaces, their members and their signing keys.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Store {
    // ---- namespaces ----

    /// Creates a namespace owned by `owner`; with `limit`, only while `owner` has created fewer
    /// than that many ([`StoreError::Quota`] otherwise; the count and the insert are one
    /// transaction that holds the owner's row, so concurrent creations cannot pass it).
    pub async fn create_namespace(
        &self,
        actor: &Actor,
        name: &str,
        owner: i64,
        limit: Option<u64>,
    ) -> Result<Namespace> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            if let Some(limit) = limit {
                // A write to the owner's row: PostgreSQL holds its lock to the commit, so the
                // next creation by the same user waits here (SQLite has one writer anyway).
                sqlx::query("UPDATE users SET id = id WHERE id = $1")
                    .bind(owner)
                    .execute(&mut *tx)
                    .await?;
                let made: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM namespaces WHERE created_by = $1")
                        .bind(owner)
                        .fetch_one(&mut *tx)
                        .await?;
                if made.max(0) as u64 >= limit {
                    return Err(StoreError::Quota(format!(
                        "you have created {made} namespaces and max_namespaces_per_user is \
                         {limit}; ask the hub's operator for more"
                    )));
                }
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO namespaces (name, created_by, created_at) VALUES ($1, $2, $3) \
                 RETURNING id",
            )
            .bind(name)
            .bind(owner)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| {
                if unique_violation(&e) {
                    StoreError::Conflict(format!("namespace `{name}` exists already"))
                } else {
                    e.into()
                }
            })?;
            sqlx::query(
                "INSERT INTO namespace_members (namespace_id, user_id, role, added_at) \
                 VALUES ($1, $2, 'owner', $3)",
            )
            .bind(id)
            .bind(owner)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.audit(actor, "namespace.create", name, None::<String>, now)
                .await?;
            tx.commit().await?;
            Ok(Namespace {
                id,
                name: name.to_string(),
                created_at: now,
            })
        })
    }

    /// A namespace by (lowercase) name.
    pub async fn namespace(&self, name: &str) -> Result<Option<Namespace>> {
        on_read!(&self.db, |pool| {
            let row = sqlx::query("SELECT id, name, created_at FROM namespaces WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?;
            Ok(match row {
                Some(r) => Some(Namespace {
                    id: r.try_get("id")?,
                    name: r.try_get("name")?,
                    created_at: r.try_get("created_at")?,
                }),
                None => None,
            })
        })
    }

    /// The role of a user in a namespace.
    pub async fn role(&self, namespace_id: i64, user_id: i64) -> Result<Option<String>> {
        on_read!(&self.db, |pool| {
            Ok(sqlx::query_scalar(
                "SELECT role FROM namespace_members WHERE namespace_id = $1 AND user_id = $2",
            )
            .bind(namespace_id)
            .bind(user_id)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// A user's namespaces and roles.
    pub async fn namespaces_of(&self, user_id: i64) -> Result<Vec<(String, String)>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT n.name, m.role FROM namespace_members m JOIN namespaces n \
                 ON n.id = m.namespace_id WHERE m.user_id = $1 ORDER BY n.name",
            )
            .bind(user_id)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push((r.try_get("name")?, r.try_get("role")?));
            }
            Ok(out)
        })
    }

    /// Members of a namespace.
    pub async fn members(&self, namespace_id: i64) -> Result<Vec<Member>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT u.name, m.role, m.added_at FROM namespace_members m JOIN users u \
                 ON u.id = m.user_id WHERE m.namespace_id = $1 ORDER BY u.name",
            )
            .bind(namespace_id)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(Member {
                    user: r.try_get("name")?,
                    role: r.try_get("role")?,
                    added_at: r.try_get("added_at")?,
                });
            }
            Ok(out)
        })
    }

    /// Adds a member or changes their role. Refuses to demote the last owner.
    pub async fn set_member(
        &self,
        actor: &Actor,
        ns: &Namespace,
        user_id: i64,
        user_name: &str,
        role: &str,
    ) -> Result<()> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let current: Option<String> = sqlx::query_scalar(
                "SELECT role FROM namespace_members WHERE namespace_id = $1 AND user_id = $2",
            )
            .bind(ns.id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
            if current.as_deref() == Some("owner") && role != "owner" {
                let owners: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM namespace_members WHERE namespace_id = $1 AND role = 'owner'",
                )
                .bind(ns.id)
                .fetch_one(&mut *tx)
                .await?;
                if owners <= 1 {
                    return Err(StoreError::Conflict(format!(
                        "`{user_name}` is the last owner of `{}`; add another owner first",
                        ns.name
                    )));
                }
            }
            if current.is_some() {
                sqlx::query(
                    "UPDATE namespace_members SET role = $1 WHERE namespace_id = $2 AND user_id = $3",
                )
                .bind(role)
                .bind(ns.id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            } else {
                sqlx::query(
                    "INSERT INTO namespace_members (namespace_id, user_id, role, added_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(ns.id)
                .bind(user_id)
                .bind(role)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            tx.audit(
                actor,
                "member.set",
                &ns.name,
                Some(format!("user={user_name} role={role}")),
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// Removes a member. Refuses to remove the last owner. False when not a member.
    pub async fn remove_member(
        &self,
        actor: &Actor,
        ns: &Namespace,
        user_id: i64,
        user_name: &str,
    ) -> Result<bool> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let current: Option<String> = sqlx::query_scalar(
                "SELECT role FROM namespace_members WHERE namespace_id = $1 AND user_id = $2",
            )
            .bind(ns.id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(current) = current else {
                return Ok(false);
            };
            if current == "owner" {
                let owners: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM namespace_members WHERE namespace_id = $1 AND role = 'owner'",
                )
                .bind(ns.id)
                .fetch_one(&mut *tx)
                .await?;
                if owners <= 1 {
                    return Err(StoreError::Conflict(format!(
                        "`{user_name}` is the last owner of `{}`; add another owner first",
                        ns.name
                    )));
                }
            }
            sqlx::query("DELETE FROM namespace_members WHERE namespace_id = $1 AND user_id = $2")
                .bind(ns.id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            tx.audit(
                actor,
                "member.remove",
                &ns.name,
                Some(format!("user={user_name}")),
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    // ---- keys ----

    /// Registers a key. Conflict when the namespace has it already.
    pub async fn add_key(
        &self,
        actor: &Actor,
        ns: &Namespace,
        key_id: &str,
        public_key: &str,
        user_id: i64,
    ) -> Result<()> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO publisher_keys (namespace_id, key_id, public_key, added_by, added_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(ns.id)
            .bind(key_id)
            .bind(public_key)
            .bind(user_id)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| {
                if unique_violation(&e) {
                    StoreError::Conflict(format!(
                        "key {key_id} is registered for `{}` already",
                        ns.name
                    ))
                } else {
                    e.into()
                }
            })?;
            let key =
                index_schema::envelope::PublicKey::parse(public_key).map_err(tlog::log_error)?;
            let logged = tx
                .tlog_append(
                    &index_schema::tlog::Entry::KeyAdd {
                        publisher: ns.name.clone(),
                        key,
                    },
                    now,
                )
                .await?;
            sqlx::query(
                "UPDATE publisher_keys SET log_index = $1 WHERE namespace_id = $2 AND key_id = $3",
            )
            .bind(logged.index as i64)
            .bind(ns.id)
            .bind(key_id)
            .execute(&mut *tx)
            .await?;
            tx.audit(
                actor,
                "key.add",
                &ns.name,
                Some(format!("key={key_id}")),
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// Every key of a namespace, revoked ones included.
    pub async fn keys(&self, namespace_id: i64) -> Result<Vec<KeyRow>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT k.key_id, k.public_key, a.name AS added_by, k.added_at, k.revoked_at, \
                 r.name AS revoked_by FROM publisher_keys k JOIN users a ON a.id = k.added_by \
                 LEFT JOIN users r ON r.id = k.revoked_by WHERE k.namespace_id = $1 ORDER BY k.id",
            )
            .bind(namespace_id)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(KeyRow {
                    key_id: r.try_get("key_id")?,
                    public_key: r.try_get("public_key")?,
                    added_by: r.try_get("added_by")?,
                    added_at: r.try_get("added_at")?,
                    revoked_at: r.try_get("revoked_at")?,
                    revoked_by: r.try_get("revoked_by")?,
                });
            }
            Ok(out)
        })
    }

    /// Revokes a key. False when the namespace has no such key; a second revoke keeps the first
    /// time.
    pub async fn revoke_key(
        &self,
        actor: &Actor,
        ns: &Namespace,
        key_id: &str,
        user_id: Option<i64>,
    ) -> Result<bool> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM publisher_keys WHERE namespace_id = $1 AND key_id = $2",
            )
            .bind(ns.id)
            .bind(key_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(id) = found else { return Ok(false) };
            let first = sqlx::query(
                "UPDATE publisher_keys SET revoked_at = $1, revoked_by = $2 \
                 WHERE id = $3 AND revoked_at IS NULL",
            )
            .bind(now)
            .bind(user_id)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if first {
                let key_id =
                    index_schema::envelope::KeyId::parse(key_id).map_err(tlog::log_error)?;
                tx.tlog_append(
                    &index_schema::tlog::Entry::KeyRevoke {
                        publisher: ns.name.clone(),
                        key_id,
                    },
                    now,
                )
                .await?;
            }
            tx.audit(
                actor,
                "key.revoke",
                &ns.name,
                Some(format!("key={key_id}")),
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}
