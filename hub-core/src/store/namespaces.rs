//! Namespaces, their members and their signing keys.

use index_schema::envelope::{KeyId, PublicKey};
use index_schema::tlog::Entry;
use sqlx::AnyConnection;

use super::repo::{Actor, Result, Store, StoreError, conflict_on_unique, now_ms};
use super::rows::{KeyRecord, KeyRow, Member, MemberRecord, Namespace};
use super::tlog::{log_error, tlog_append};
use super::tx::audit;

/// Refuses (a conflict) to take the role of `user_name`, an owner, away when the namespace has
/// no other owner.
async fn keep_an_owner(conn: &mut AnyConnection, ns: &Namespace, user_name: &str) -> Result<()> {
    let owners: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM namespace_members WHERE namespace_id = $1 AND role = 'owner'",
    )
    .bind(ns.id)
    .fetch_one(&mut *conn)
    .await?;
    if owners <= 1 {
        return Err(StoreError::Conflict(format!(
            "`{user_name}` is the last owner of `{}`; add another owner first",
            ns.name
        )));
    }
    Ok(())
}

/// Inside a transaction: creates namespace `name` with `owner` as its first member (an owner)
/// and audits it; its id.
pub(super) async fn insert_namespace(
    conn: &mut AnyConnection,
    actor: &Actor,
    name: &str,
    owner: i64,
    now: i64,
) -> Result<i64> {
    // A look-alike of an existing namespace is refused (`crate::lookalike`) by the unique
    // index on the skeleton (migration 0027), in the insert itself: of look-alikes created at
    // the same moment exactly one is inserted (PostgreSQL makes the others wait for its
    // commit). Nothing inserted means the name or its skeleton is taken; the read after it
    // (a statement of its own, so it sees the namespace committed meanwhile) says which.
    let skeleton = crate::lookalike::skeleton(name);
    let id: Option<i64> = sqlx::query_scalar(
        "INSERT INTO namespaces (name, created_by, created_at, skeleton) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(name)
    .bind(owner)
    .bind(now)
    .bind(&skeleton)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = id else {
        return Err(taken(conn, name, &skeleton).await?);
    };
    sqlx::query(
        "INSERT INTO namespace_members (namespace_id, user_id, role, added_at) \
         VALUES ($1, $2, 'owner', $3)",
    )
    .bind(id)
    .bind(owner)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    audit(conn, actor, "namespace.create", name, None, now).await?;
    Ok(id)
}

/// Why namespace `name` (of `skeleton`) was not inserted: the name exists, or an older
/// namespace reads the same.
async fn taken(conn: &mut AnyConnection, name: &str, skeleton: &str) -> Result<StoreError> {
    let holder: Option<String> = sqlx::query_scalar(
        "SELECT name FROM namespaces WHERE name = $1 OR skeleton = $2 \
         ORDER BY CASE WHEN name = $1 THEN 0 ELSE 1 END, id LIMIT 1",
    )
    .bind(name)
    .bind(skeleton)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(match holder {
        Some(like) if like != name => StoreError::Lookalike(format!(
            "namespace `{name}` looks like the existing namespace `{like}` (case, `-`/`_`, \
             0/o, 1/l/i, rn/m and vv/w are read alike); choose a name that reads differently"
        )),
        _ => StoreError::Conflict(format!("namespace `{name}` exists already")),
    })
}

async fn role_in(
    conn: &mut AnyConnection,
    namespace_id: i64,
    user_id: i64,
) -> Result<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT role FROM namespace_members WHERE namespace_id = $1 AND user_id = $2",
    )
    .bind(namespace_id)
    .bind(user_id)
    .fetch_optional(&mut *conn)
    .await?)
}

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
        let mut tx = self.db.write().begin().await?;
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
        let id = insert_namespace(&mut tx, actor, name, owner, now).await?;
        tx.commit().await?;
        Ok(Namespace {
            id,
            name: name.to_string(),
            created_at: now,
        })
    }

    /// A namespace by (lowercase) name.
    pub async fn namespace(&self, name: &str) -> Result<Option<Namespace>> {
        Ok(
            sqlx::query_as("SELECT id, name, created_at FROM namespaces WHERE name = $1")
                .bind(name)
                .fetch_optional(self.db.read())
                .await?,
        )
    }

    /// The role of a user in a namespace.
    pub async fn role(&self, namespace_id: i64, user_id: i64) -> Result<Option<String>> {
        let mut conn = self.db.read().acquire().await?;
        role_in(&mut conn, namespace_id, user_id).await
    }

    /// A user's namespaces and roles.
    pub async fn namespaces_of(&self, user_id: i64) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT n.name, m.role FROM namespace_members m JOIN namespaces n \
             ON n.id = m.namespace_id WHERE m.user_id = $1 ORDER BY n.name",
        )
        .bind(user_id)
        .fetch_all(self.db.read())
        .await?)
    }

    /// Members of a namespace.
    pub async fn members(&self, namespace_id: i64) -> Result<Vec<Member>> {
        let rows: Vec<MemberRecord> = sqlx::query_as(
            "SELECT u.name, m.role, m.added_at FROM namespace_members m JOIN users u \
             ON u.id = m.user_id WHERE m.namespace_id = $1 ORDER BY u.name",
        )
        .bind(namespace_id)
        .fetch_all(self.db.read())
        .await?;
        Ok(rows.into_iter().map(Member::from).collect())
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
        let mut tx = self.db.write().begin().await?;
        let current = role_in(&mut tx, ns.id, user_id).await?;
        if current.as_deref() == Some("owner") && role != "owner" {
            keep_an_owner(&mut tx, ns, user_name).await?;
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
        let detail = format!("user={user_name} role={role}");
        audit(&mut tx, actor, "member.set", &ns.name, Some(&detail), now).await?;
        tx.commit().await?;
        Ok(())
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
        let mut tx = self.db.write().begin().await?;
        let Some(current) = role_in(&mut tx, ns.id, user_id).await? else {
            return Ok(false);
        };
        if current == "owner" {
            keep_an_owner(&mut tx, ns, user_name).await?;
        }
        sqlx::query("DELETE FROM namespace_members WHERE namespace_id = $1 AND user_id = $2")
            .bind(ns.id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        let detail = format!("user={user_name}");
        audit(
            &mut tx,
            actor,
            "member.remove",
            &ns.name,
            Some(&detail),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
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
        let mut tx = self.db.write().begin().await?;
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
            conflict_on_unique(e, || {
                format!("key {key_id} is registered for `{}` already", ns.name)
            })
        })?;
        let key = PublicKey::parse(public_key).map_err(log_error)?;
        let entry = Entry::KeyAdd {
            publisher: ns.name.clone(),
            key,
        };
        let logged = tlog_append(&mut tx, &entry, now).await?;
        sqlx::query(
            "UPDATE publisher_keys SET log_index = $1 WHERE namespace_id = $2 AND key_id = $3",
        )
        .bind(logged.index as i64)
        .bind(ns.id)
        .bind(key_id)
        .execute(&mut *tx)
        .await?;
        let detail = format!("key={key_id}");
        audit(&mut tx, actor, "key.add", &ns.name, Some(&detail), now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every key of a namespace, revoked ones included.
    pub async fn keys(&self, namespace_id: i64) -> Result<Vec<KeyRow>> {
        let rows: Vec<KeyRecord> = sqlx::query_as(
            "SELECT k.key_id, k.public_key, a.name AS added_by, k.added_at, k.revoked_at, \
             r.name AS revoked_by FROM publisher_keys k JOIN users a ON a.id = k.added_by \
             LEFT JOIN users r ON r.id = k.revoked_by WHERE k.namespace_id = $1 ORDER BY k.id",
        )
        .bind(namespace_id)
        .fetch_all(self.db.read())
        .await?;
        Ok(rows.into_iter().map(KeyRow::from).collect())
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
        let mut tx = self.db.write().begin().await?;
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
            let entry = Entry::KeyRevoke {
                publisher: ns.name.clone(),
                key_id: KeyId::parse(key_id).map_err(log_error)?,
            };
            tlog_append(&mut tx, &entry, now).await?;
        }
        let detail = format!("key={key_id}");
        audit(&mut tx, actor, "key.revoke", &ns.name, Some(&detail), now).await?;
        tx.commit().await?;
        Ok(true)
    }
}
