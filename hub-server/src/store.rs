//! The hub's repository layer: every SQL statement lives here, written once for both backends
//! (see [`crate::db`]). Each write that changes what search shows appends an outbox row, and
//! every write appends an audit row, in the same transaction.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use crate::db::Db;
use crate::{on_db, on_read};

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("database: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// A unique thing exists already.
    #[error("{0}")]
    Conflict(String),
    /// A thing the write needs is missing.
    #[error("{0}")]
    NotFound(String),
    /// The version is published already.
    #[error("version exists")]
    VersionExists,
    /// The version was deleted by an administrator; its name and number stay taken.
    #[error("version deleted")]
    VersionDeleted,
    /// The signing key was revoked while the publish was under way.
    #[error("key revoked")]
    KeyRevoked,
    /// A blob the write references is not stored, or garbage collection is removing it.
    #[error("blob {digest} {why}")]
    BlobUnavailable {
        /// `sha256:…`.
        digest: String,
        /// Why.
        why: String,
    },
    /// The blob store failed while a write checked its blobs.
    #[error("blob store: {0}")]
    Blob(String),
}

/// Store result.
pub type Result<T> = std::result::Result<T, StoreError>;

fn unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Who performs a write, for the audit log.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The user, absent for the operator's CLI.
    pub user_id: Option<i64>,
    /// The user's name, or `operator`.
    pub user_name: String,
    /// The API token used, if any.
    pub token_id: Option<i64>,
}

impl Actor {
    /// The operator at the `ofc-hub admin` command line.
    pub fn operator() -> Self {
        Actor {
            user_id: None,
            user_name: "operator (cli)".into(),
            token_id: None,
        }
    }
}

/// A user.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct User {
    /// Id.
    pub id: i64,
    /// Lowercase name.
    pub name: String,
    /// Site administrator.
    pub is_admin: bool,
    /// Disabled users cannot authenticate.
    pub disabled: bool,
    /// Unix ms.
    pub created_at: i64,
    /// Argon2 PHC string.
    #[serde(skip)]
    pub password_hash: Option<String>,
}

/// An API token (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenRow {
    /// Id.
    pub id: i64,
    /// Owner.
    pub user_id: i64,
    /// Label.
    pub name: String,
    /// Comma-separated scopes.
    pub scopes: String,
    /// Comma-separated namespace patterns.
    pub namespaces: String,
    /// Unix ms, if it expires.
    pub expires_at: Option<i64>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Unix ms of the last authenticated request, to the minute ([`TOKEN_USE_PRECISION_MS`]).
    pub last_used_at: Option<i64>,
}

/// `api_tokens.last_used_at` is written at most once per this many milliseconds per token, so
/// authenticating stays a read.
pub const TOKEN_USE_PRECISION_MS: i64 = 60_000;

/// A namespace.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Namespace {
    /// Id.
    pub id: i64,
    /// Lowercase name.
    pub name: String,
    /// Unix ms.
    pub created_at: i64,
}

/// A member of a namespace.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Member {
    /// User name.
    pub user: String,
    /// `owner`, `maintainer` or `publisher`.
    pub role: String,
    /// Unix ms.
    pub added_at: i64,
}

/// A publisher key.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct KeyRow {
    /// Key id (hex).
    pub key_id: String,
    /// `ed25519:<base64>`.
    pub public_key: String,
    /// Who registered it.
    pub added_by: String,
    /// Unix ms.
    pub added_at: i64,
    /// Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Who revoked it.
    pub revoked_by: Option<String>,
}

/// An agent.
#[derive(Debug, Clone)]
pub struct AgentRow {
    /// Id.
    pub id: i64,
    /// Owning namespace.
    pub namespace_id: i64,
    /// `publisher/agent`.
    pub name: String,
    /// Floor handle without `@`.
    pub handle: Option<String>,
    /// Highest non-yanked version.
    pub latest_version: Option<String>,
    /// Registry API: endpoint.
    pub registry_endpoint: Option<String>,
    /// Registry API: metadata JSON.
    pub registry_metadata: Option<String>,
    /// Registry API: public key.
    pub registry_key: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// Downloads over all versions.
    pub downloads: i64,
}

/// One published version.
#[derive(Debug, Clone)]
pub struct VersionRow {
    /// Id.
    pub id: i64,
    /// Semver.
    pub version: String,
    /// `sha256:…` of the manifest bytes.
    pub manifest_digest: String,
    /// DSSE envelope JSON.
    pub envelope: String,
    /// Key that signed.
    pub key_id: String,
    /// Source kind.
    pub source_kind: String,
    /// Bundle digest.
    pub bundle_digest: Option<String>,
    /// Bundle size.
    pub bundle_size: Option<i64>,
    /// Publisher.
    pub published_by: String,
    /// Token used.
    pub token_id: Option<i64>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub yanked_at: Option<i64>,
    /// Why.
    pub yank_reason: Option<String>,
    /// Deprecation message.
    pub deprecated_message: Option<String>,
    /// Downloads.
    pub downloads: i64,
}

/// An outbox entry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutboxRow {
    /// Monotonic, gapless.
    pub seq: i64,
    /// `publish`, `yank`, `unyank`, `deprecate`, `undeprecate`, `delete_version`, `delete_agent`,
    /// `registry_update`.
    pub kind: String,
    /// `publisher/agent`.
    pub agent: String,
    /// Version, when the change is about one.
    pub version: Option<String>,
    /// Unix ms.
    pub created_at: i64,
}

/// An audit entry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditRow {
    /// Id.
    pub id: i64,
    /// Unix ms.
    pub at: i64,
    /// Acting user name.
    pub user_name: Option<String>,
    /// Acting token id.
    pub token_id: Option<i64>,
    /// What was done.
    pub action: String,
    /// On what.
    pub target: String,
    /// Details.
    pub detail: Option<String>,
}

/// A version about to be published.
#[derive(Debug, Clone)]
pub struct NewVersion {
    /// Namespace id.
    pub namespace_id: i64,
    /// `publisher/agent`.
    pub agent: String,
    /// Floor handle without `@`.
    pub handle: String,
    /// Semver.
    pub version: String,
    /// `sha256:…`.
    pub manifest_digest: String,
    /// Envelope JSON.
    pub envelope: String,
    /// Signing key id.
    pub key_id: String,
    /// Source kind.
    pub source_kind: String,
    /// Bundle digest.
    pub bundle_digest: Option<String>,
    /// Bundle size.
    pub bundle_size: Option<i64>,
}

/// A registry-API registration (an unsigned `remote` entry).
#[derive(Debug, Clone)]
pub struct NewRegistryAgent {
    /// Namespace id.
    pub namespace_id: i64,
    /// `publisher/agent`.
    pub agent: String,
    /// Handle without `@`.
    pub handle: String,
    /// Endpoint.
    pub endpoint: String,
    /// Metadata JSON.
    pub metadata: String,
    /// Public key text.
    pub public_key: String,
    /// SHA-256 of the agent token.
    pub token_hash: String,
}

macro_rules! user_from {
    ($r:expr) => {
        User {
            id: $r.try_get("id")?,
            name: $r.try_get("name")?,
            is_admin: $r.try_get("is_admin")?,
            disabled: $r.try_get("disabled")?,
            created_at: $r.try_get("created_at")?,
            password_hash: $r.try_get("password_hash")?,
        }
    };
}

macro_rules! token_from {
    ($r:expr) => {
        TokenRow {
            id: $r.try_get("id")?,
            user_id: $r.try_get("user_id")?,
            name: $r.try_get("name")?,
            scopes: $r.try_get("scopes")?,
            namespaces: $r.try_get("namespaces")?,
            expires_at: $r.try_get("expires_at")?,
            created_at: $r.try_get("created_at")?,
            revoked_at: $r.try_get("revoked_at")?,
            last_used_at: $r.try_get("last_used_at")?,
        }
    };
}

macro_rules! agent_from {
    ($r:expr) => {
        AgentRow {
            id: $r.try_get("id")?,
            namespace_id: $r.try_get("namespace_id")?,
            name: $r.try_get("name")?,
            handle: $r.try_get("handle")?,
            latest_version: $r.try_get("latest_version")?,
            registry_endpoint: $r.try_get("registry_endpoint")?,
            registry_metadata: $r.try_get("registry_metadata")?,
            registry_key: $r.try_get("registry_key")?,
            created_at: $r.try_get("created_at")?,
            updated_at: $r.try_get("updated_at")?,
            downloads: $r.try_get("downloads")?,
        }
    };
}

macro_rules! version_from {
    ($r:expr) => {
        VersionRow {
            id: $r.try_get("id")?,
            version: $r.try_get("version")?,
            manifest_digest: $r.try_get("manifest_digest")?,
            envelope: $r.try_get("envelope")?,
            key_id: $r.try_get("key_id")?,
            source_kind: $r.try_get("source_kind")?,
            bundle_digest: $r.try_get("bundle_digest")?,
            bundle_size: $r.try_get("bundle_size")?,
            published_by: $r.try_get("published_by")?,
            token_id: $r.try_get("token_id")?,
            created_at: $r.try_get("created_at")?,
            yanked_at: $r.try_get("yanked_at")?,
            yank_reason: $r.try_get("yank_reason")?,
            deprecated_message: $r.try_get("deprecated_message")?,
            downloads: $r.try_get("downloads")?,
        }
    };
}

macro_rules! audit {
    ($tx:expr, $actor:expr, $action:expr, $target:expr, $detail:expr, $now:expr) => {
        sqlx::query(
            "INSERT INTO audit_log (at, user_id, user_name, token_id, action, target, detail) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind($now)
        .bind($actor.user_id)
        .bind(&$actor.user_name)
        .bind($actor.token_id)
        .bind($action)
        .bind($target)
        .bind($detail)
        .execute(&mut *$tx)
        .await?
    };
}

macro_rules! outbox {
    ($tx:expr, $kind:expr, $agent:expr, $version:expr, $now:expr) => {{
        let seq: i64 = sqlx::query_scalar(
            "UPDATE outbox_counter SET last_seq = last_seq + 1 WHERE id = 1 RETURNING last_seq",
        )
        .fetch_one(&mut *$tx)
        .await?;
        sqlx::query(
            "INSERT INTO outbox (seq, kind, agent, version, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(seq)
        .bind($kind)
        .bind($agent)
        .bind($version)
        .bind($now)
        .execute(&mut *$tx)
        .await?;
        seq
    }};
}

/// Recomputes `agents.latest_version` and bumps `updated_at` inside a transaction.
macro_rules! refresh_agent {
    ($tx:expr, $agent_id:expr, $now:expr) => {{
        let rows = sqlx::query("SELECT version, yanked_at FROM versions WHERE agent_id = $1")
            .bind($agent_id)
            .fetch_all(&mut *$tx)
            .await?;
        let mut vs = Vec::with_capacity(rows.len());
        for r in &rows {
            let v: String = r.try_get("version")?;
            let y: Option<i64> = r.try_get("yanked_at")?;
            vs.push((v, y.is_some()));
        }
        let latest = latest_version(vs.iter().map(|(v, y)| (v.as_str(), *y)));
        sqlx::query("UPDATE agents SET latest_version = $1, updated_at = $2 WHERE id = $3")
            .bind(latest)
            .bind($now)
            .bind($agent_id)
            .execute(&mut *$tx)
            .await?;
    }};
}

/// The version `ofc pull publisher/agent` gets: [`index_schema::version::select`] with no
/// selector (the highest non-yanked release, else the highest non-yanked pre-release).
pub fn latest_version<'a>(versions: impl Iterator<Item = (&'a str, bool)>) -> Option<String> {
    index_schema::version::latest(versions).map(str::to_string)
}

const VERSION_COLUMNS: &str = "v.id, v.version, v.manifest_digest, v.envelope, v.key_id, \
    v.source_kind, v.bundle_digest, v.bundle_size, u.name AS published_by, v.token_id, \
    v.created_at, v.yanked_at, v.yank_reason, v.deprecated_message, v.downloads";

/// The repository.
#[derive(Debug, Clone)]
pub struct Store {
    db: Db,
}

impl Store {
    /// Wraps a connected, migrated database.
    pub fn new(db: Db) -> Self {
        Store { db }
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    // ---- users ----

    /// Creates a user and, when `namespace` is true, a namespace of the same name they own.
    pub async fn create_user(
        &self,
        actor: &Actor,
        name: &str,
        password_hash: Option<&str>,
        is_admin: bool,
        namespace: bool,
    ) -> Result<User> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO users (name, password_hash, is_admin, disabled, created_at) \
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
            )
            .bind(name)
            .bind(password_hash)
            .bind(is_admin)
            .bind(false)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| {
                if unique_violation(&e) {
                    StoreError::Conflict(format!("user `{name}` exists already"))
                } else {
                    e.into()
                }
            })?;
            audit!(tx, actor, "user.create", name, None::<String>, now);
            if namespace {
                let ns_id: i64 = sqlx::query_scalar(
                    "INSERT INTO namespaces (name, created_by, created_at) VALUES ($1, $2, $3) \
                     RETURNING id",
                )
                .bind(name)
                .bind(id)
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
                .bind(ns_id)
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                audit!(tx, actor, "namespace.create", name, None::<String>, now);
            }
            tx.commit().await?;
        });
        Ok(User {
            id: self.user_id_by_name(name).await?.unwrap_or(0),
            name: name.to_string(),
            is_admin,
            disabled: false,
            created_at: now,
            password_hash: password_hash.map(str::to_string),
        })
    }

    async fn user_id_by_name(&self, name: &str) -> Result<Option<i64>> {
        Ok(self.user_by_name(name).await?.map(|u| u.id))
    }

    /// A user by (lowercase) name.
    pub async fn user_by_name(&self, name: &str) -> Result<Option<User>> {
        on_db!(&self.db, |pool| {
            let row = sqlx::query("SELECT * FROM users WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?;
            Ok(match row {
                Some(r) => Some(user_from!(r)),
                None => None,
            })
        })
    }

    /// Every user, by name.
    pub async fn list_users(&self) -> Result<Vec<User>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query("SELECT * FROM users ORDER BY name")
                .fetch_all(pool)
                .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(user_from!(r));
            }
            Ok(out)
        })
    }

    /// Sets or clears a user's flags and password.
    pub async fn update_user(
        &self,
        actor: &Actor,
        name: &str,
        password_hash: Option<Option<&str>>,
        is_admin: Option<bool>,
        disabled: Option<bool>,
    ) -> Result<()> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let id: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE name = $1")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(id) = id else {
                return Err(StoreError::NotFound(format!("no user `{name}`")));
            };
            if let Some(p) = password_hash {
                sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2")
                    .bind(p)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                audit!(tx, actor, "user.set_password", name, None::<String>, now);
            }
            if let Some(a) = is_admin {
                sqlx::query("UPDATE users SET is_admin = $1 WHERE id = $2")
                    .bind(a)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                audit!(tx, actor, "user.set_admin", name, Some(a.to_string()), now);
            }
            if let Some(d) = disabled {
                sqlx::query("UPDATE users SET disabled = $1 WHERE id = $2")
                    .bind(d)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                audit!(
                    tx,
                    actor,
                    "user.set_disabled",
                    name,
                    Some(d.to_string()),
                    now
                );
            }
            tx.commit().await?;
            Ok(())
        })
    }

    // ---- tokens ----

    /// Stores a new token (its hash only).
    #[allow(clippy::too_many_arguments)]
    pub async fn create_token(
        &self,
        actor: &Actor,
        user_id: i64,
        name: &str,
        token_hash: &str,
        scopes: &str,
        namespaces: &str,
        expires_at: Option<i64>,
    ) -> Result<TokenRow> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO api_tokens (user_id, name, token_hash, scopes, namespaces, \
                 expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(user_id)
            .bind(name)
            .bind(token_hash)
            .bind(scopes)
            .bind(namespaces)
            .bind(expires_at)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            audit!(
                tx,
                actor,
                "token.create",
                format!("token:{id}"),
                Some(format!(
                    "name={name} scopes={scopes} namespaces={namespaces}"
                )),
                now
            );
            tx.commit().await?;
            Ok(TokenRow {
                id,
                user_id,
                name: name.to_string(),
                scopes: scopes.to_string(),
                namespaces: namespaces.to_string(),
                expires_at,
                created_at: now,
                revoked_at: None,
                last_used_at: None,
            })
        })
    }

    /// The token with this hash and its user.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<(TokenRow, User)>> {
        on_read!(&self.db, |pool| {
            let row = sqlx::query(
                "SELECT t.id, t.user_id, t.name, t.scopes, t.namespaces, t.expires_at, \
                 t.created_at, t.revoked_at, t.last_used_at, u.name AS user_name, u.is_admin, u.disabled, \
                 u.created_at AS user_created_at FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE t.token_hash = $1",
            )
            .bind(hash)
            .fetch_optional(pool)
            .await?;
            let Some(r) = row else { return Ok(None) };
            let t = token_from!(r);
            let u = User {
                id: t.user_id,
                name: r.try_get("user_name")?,
                is_admin: r.try_get("is_admin")?,
                disabled: r.try_get("disabled")?,
                created_at: r.try_get("user_created_at")?,
                password_hash: None,
            };
            Ok(Some((t, u)))
        })
    }

    /// Records that a token was used at `now`, unless it was recorded less than
    /// [`TOKEN_USE_PRECISION_MS`] before. True when the row was written.
    pub async fn touch_token(&self, id: i64, now: i64) -> Result<bool> {
        on_db!(&self.db, |pool| {
            let n = sqlx::query(
                "UPDATE api_tokens SET last_used_at = $1 \
                 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at <= $3)",
            )
            .bind(now)
            .bind(id)
            .bind(now - TOKEN_USE_PRECISION_MS)
            .execute(pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        })
    }

    /// A user's tokens, newest first.
    pub async fn list_tokens(&self, user_id: i64) -> Result<Vec<TokenRow>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query("SELECT * FROM api_tokens WHERE user_id = $1 ORDER BY id DESC")
                .bind(user_id)
                .fetch_all(pool)
                .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(token_from!(r));
            }
            Ok(out)
        })
    }

    /// Revokes a token; `user_id` restricts it to that user's tokens. False when not found.
    pub async fn revoke_token(
        &self,
        actor: &Actor,
        user_id: Option<i64>,
        token_id: i64,
    ) -> Result<bool> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let owner: Option<i64> =
                sqlx::query_scalar("SELECT user_id FROM api_tokens WHERE id = $1")
                    .bind(token_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            match (owner, user_id) {
                (None, _) => return Ok(false),
                (Some(o), Some(u)) if o != u => return Ok(false),
                _ => {}
            }
            sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            )
            .bind(now)
            .bind(token_id)
            .execute(&mut *tx)
            .await?;
            audit!(
                tx,
                actor,
                "token.revoke",
                format!("token:{token_id}"),
                None::<String>,
                now
            );
            tx.commit().await?;
            Ok(true)
        })
    }

    // ---- namespaces ----

    /// Creates a namespace owned by `owner`.
    pub async fn create_namespace(
        &self,
        actor: &Actor,
        name: &str,
        owner: i64,
    ) -> Result<Namespace> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
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
            audit!(tx, actor, "namespace.create", name, None::<String>, now);
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
            audit!(
                tx,
                actor,
                "member.set",
                &ns.name,
                Some(format!("user={user_name} role={role}")),
                now
            );
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
            audit!(
                tx,
                actor,
                "member.remove",
                &ns.name,
                Some(format!("user={user_name}")),
                now
            );
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
            audit!(
                tx,
                actor,
                "key.add",
                &ns.name,
                Some(format!("key={key_id}")),
                now
            );
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
            sqlx::query(
                "UPDATE publisher_keys SET revoked_at = $1, revoked_by = $2 \
                 WHERE id = $3 AND revoked_at IS NULL",
            )
            .bind(now)
            .bind(user_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            audit!(
                tx,
                actor,
                "key.revoke",
                &ns.name,
                Some(format!("key={key_id}")),
                now
            );
            tx.commit().await?;
            Ok(true)
        })
    }

    // ---- agents and versions ----

    /// Publishes a version in one transaction: the agent row (created on first publish), the
    /// version, the agent's latest version, an outbox row and an audit row. Returns the outbox
    /// sequence and the publish time.
    pub async fn publish(&self, actor: &Actor, v: &NewVersion) -> Result<(i64, i64)> {
        self.publish_claiming(actor, v, None).await
    }

    /// [`Store::publish`], claiming the blobs the version references (its bundle, and for a
    /// pushed OCI artifact its config) first inside the same transaction, so a concurrent
    /// garbage collection cannot remove them (see [`crate::oci::gc`]):
    /// [`StoreError::BlobUnavailable`] when one is gone or being collected.
    pub async fn publish_claiming(
        &self,
        actor: &Actor,
        v: &NewVersion,
        claim: Option<&crate::oci::db::BlobClaim>,
    ) -> Result<(i64, i64)> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            if let Some(claim) = claim {
                crate::oci::db::claim_blobs!(tx, claim, now);
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
            let tombstone: Option<i64> = sqlx::query_scalar(
                "SELECT deleted_at FROM deleted_versions WHERE agent = $1 AND version = $2",
            )
            .bind(&v.agent)
            .bind(&v.version)
            .fetch_optional(&mut *tx)
            .await?;
            if tombstone.is_some() {
                return Err(StoreError::VersionDeleted);
            }
            let agent_id: Option<i64> = sqlx::query_scalar("SELECT id FROM agents WHERE name = $1")
                .bind(&v.agent)
                .fetch_optional(&mut *tx)
                .await?;
            let agent_id = match agent_id {
                Some(id) => id,
                None => sqlx::query_scalar(
                    "INSERT INTO agents (namespace_id, name, handle, created_at, updated_at, \
                     handle_since) VALUES ($1, $2, $3, $4, $4, $4) RETURNING id",
                )
                .bind(v.namespace_id)
                .bind(&v.agent)
                .bind(&v.handle)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| {
                    if unique_violation(&e) {
                        StoreError::Conflict(format!(
                            "agent `{}` was created concurrently",
                            v.agent
                        ))
                    } else {
                        e.into()
                    }
                })?,
            };
            sqlx::query(
                "INSERT INTO versions (agent_id, version, manifest_digest, envelope, key_id, \
                 source_kind, bundle_digest, bundle_size, published_by, token_id, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
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
            refresh_agent!(tx, agent_id, now);
            audit!(
                tx,
                actor,
                "version.publish",
                format!("{}@{}", v.agent, v.version),
                Some(format!("digest={} key={}", v.manifest_digest, v.key_id)),
                now
            );
            let seq = outbox!(tx, "publish", &v.agent, Some(&v.version), now);
            tx.commit().await?;
            Ok((seq, now))
        })
    }

    /// An agent by name.
    pub async fn agent(&self, name: &str) -> Result<Option<AgentRow>> {
        on_read!(&self.db, |pool| {
            let row = sqlx::query("SELECT * FROM agents WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?;
            Ok(match row {
                Some(r) => Some(agent_from!(r)),
                None => None,
            })
        })
    }

    /// Agents with this handle (compared in lowercase), the one the registry API shows first.
    ///
    /// A handle belongs to one namespace, its *holder*: the namespace of the handle's
    /// registration if there is one (a registration is only made while no agent uses the
    /// handle, and at most one exists per handle), else of the published agent that took it first (by `handle_since`, set when an agent gets a handle it did not have).
    /// The holder's agents come first (its registration, then its most recently updated
    /// agent), then every other namespace's, so an agent another namespace publishes later
    /// under the same handle never shadows the holder's.
    pub async fn agents_by_handle(&self, handle: &str) -> Result<Vec<AgentRow>> {
        let handle = handle.to_ascii_lowercase();
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT a.* FROM agents a WHERE lower(a.handle) = $1 \
                 ORDER BY (a.namespace_id <> ( \
                     SELECT h.namespace_id FROM agents h WHERE lower(h.handle) = $1 \
                     ORDER BY (h.registry_endpoint IS NULL), \
                     COALESCE(h.handle_since, h.created_at), h.id LIMIT 1)), \
                 (a.registry_endpoint IS NULL), a.updated_at DESC, a.id DESC LIMIT 50",
            )
            .bind(&handle)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(agent_from!(r));
            }
            Ok(out)
        })
    }

    /// All versions of an agent, oldest first.
    pub async fn versions(&self, agent_id: i64) -> Result<Vec<VersionRow>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM versions v JOIN users u ON u.id = v.published_by \
                 WHERE v.agent_id = $1 ORDER BY v.id"
            ))
            .bind(agent_id)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(version_from!(r));
            }
            Ok(out)
        })
    }

    /// One version of an agent.
    pub async fn version(&self, agent_id: i64, version: &str) -> Result<Option<VersionRow>> {
        on_read!(&self.db, |pool| {
            let row = sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM versions v JOIN users u ON u.id = v.published_by \
                 WHERE v.agent_id = $1 AND v.version = $2"
            ))
            .bind(agent_id)
            .bind(version)
            .fetch_optional(pool)
            .await?;
            Ok(match row {
                Some(r) => Some(version_from!(r)),
                None => None,
            })
        })
    }

    /// Agents ordered by `(updated_at, id)` after the cursor position, at most `limit`.
    pub async fn list_agents(
        &self,
        after_updated: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<AgentRow>> {
        on_read!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT * FROM agents WHERE updated_at > $1 OR (updated_at = $1 AND id > $2) \
                 ORDER BY updated_at, id LIMIT $3",
            )
            .bind(after_updated)
            .bind(after_id)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            let mut out = Vec::new();
            for r in rows {
                out.push(agent_from!(r));
            }
            Ok(out)
        })
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
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
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
            refresh_agent!(tx, agent.id, now);
            let kind = if yank.is_some() { "yank" } else { "unyank" };
            audit!(
                tx,
                actor,
                format!("version.{kind}"),
                format!("{}@{version}", agent.name),
                yank.map(str::to_string),
                now
            );
            outbox!(tx, kind, &agent.name, Some(version), now);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Sets (`Some`) or clears the deprecation message of a version.
    pub async fn set_deprecated(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        version: &str,
        message: Option<&str>,
    ) -> Result<bool> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let n = sqlx::query(
                "UPDATE versions SET deprecated_message = $1 WHERE agent_id = $2 AND version = $3",
            )
            .bind(message)
            .bind(agent.id)
            .bind(version)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 0 {
                return Ok(false);
            }
            refresh_agent!(tx, agent.id, now);
            let kind = if message.is_some() {
                "deprecate"
            } else {
                "undeprecate"
            };
            audit!(
                tx,
                actor,
                format!("version.{kind}"),
                format!("{}@{version}", agent.name),
                message.map(str::to_string),
                now
            );
            outbox!(tx, kind, &agent.name, Some(version), now);
            tx.commit().await?;
            Ok(true)
        })
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
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let n = sqlx::query("DELETE FROM versions WHERE agent_id = $1 AND version = $2")
                .bind(agent.id)
                .bind(version)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n == 0 {
                return Ok(false);
            }
            sqlx::query(
                "INSERT INTO deleted_versions (agent, version, deleted_at) VALUES ($1, $2, $3) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(&agent.name)
            .bind(version)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            // The version's OCI tag, the manifest it named (unless another tag names it too)
            // and the manifests that refer to it (signatures, attestations).
            let digest: Option<String> = sqlx::query_scalar(
                "SELECT digest FROM oci_tags WHERE repository = $1 AND tag = $2",
            )
            .bind(&agent.name)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM oci_tags WHERE repository = $1 AND tag = $2")
                .bind(&agent.name)
                .bind(version)
                .execute(&mut *tx)
                .await?;
            if let Some(d) = digest {
                sqlx::query(
                    "DELETE FROM oci_manifests WHERE repository = $1 AND (digest = $2 OR subject = $2) \
                     AND NOT EXISTS (SELECT 1 FROM oci_tags t WHERE t.repository = $1 AND t.digest = $2)",
                )
                .bind(&agent.name)
                .bind(&d)
                .execute(&mut *tx)
                .await?;
            }
            refresh_agent!(tx, agent.id, now);
            audit!(
                tx,
                actor,
                "version.delete",
                format!("{}@{version}", agent.name),
                None::<String>,
                now
            );
            outbox!(tx, "delete_version", &agent.name, Some(version), now);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Deletes an agent with all its versions, leaving a tombstone for each version. False when
    /// absent.
    pub async fn delete_agent(&self, actor: &Actor, name: &str) -> Result<bool> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let id: Option<i64> = sqlx::query_scalar("SELECT id FROM agents WHERE name = $1")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(id) = id else { return Ok(false) };
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
            sqlx::query("DELETE FROM agents WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            // Everything that served it under `/v2/` goes with it: its tags and manifests
            // (the agent's repository is its name), so `ofc-hub gc` frees its blobs.
            sqlx::query("DELETE FROM oci_tags WHERE repository = $1")
                .bind(name)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM oci_manifests WHERE repository = $1")
                .bind(name)
                .execute(&mut *tx)
                .await?;
            // Its blobs leave the repository too: a later publish uploads them again.
            sqlx::query("DELETE FROM oci_blob_links WHERE repository = $1")
                .bind(name)
                .execute(&mut *tx)
                .await?;
            audit!(tx, actor, "agent.delete", name, None::<String>, now);
            outbox!(tx, "delete_agent", name, None::<String>, now);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Counts a download of a version, once per `client` (an opaque key, see
    /// `api::agents::download_client`) and UTC day.
    pub async fn count_download(&self, agent_id: i64, version_id: i64, client: &str) -> Result<()> {
        let day = now_ms().div_euclid(86_400_000);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
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
            tx.commit().await?;
            Ok(())
        })
    }

    // ---- registry API view ----

    /// Registers an unsigned registry entry (an agent with an endpoint and no versions).
    ///
    /// A registration holds its handle alone, hub-wide and in any letter case: it is refused
    /// ([`StoreError::Conflict`]) when its name exists or when any agent, registered or published,
    /// of any namespace, already uses the handle. The unique index `agents_registry_handle`
    /// (on `lower(handle)` of registrations) settles concurrent registrations: the loser's
    /// insert fails and is refused the same way.
    pub async fn register_agent(&self, actor: &Actor, a: &NewRegistryAgent) -> Result<()> {
        let now = now_ms();
        let handle = a.handle.to_ascii_lowercase();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
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
                if unique_violation(&e) {
                    StoreError::Conflict(format!(
                        "`{}` or the handle `@{handle}` was taken by a concurrent request",
                        a.agent
                    ))
                } else {
                    e.into()
                }
            })?;
            audit!(
                tx,
                actor,
                "registry.register",
                &a.agent,
                Some(a.endpoint.clone()),
                now
            );
            outbox!(tx, "registry_update", &a.agent, None::<String>, now);
            tx.commit().await?;
            Ok(())
        })
    }

    /// Replaces the metadata of a registry entry.
    pub async fn update_registry_metadata(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        metadata: &str,
    ) -> Result<()> {
        let now = now_ms();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE agents SET registry_metadata = $1, updated_at = $2 WHERE id = $3")
                .bind(metadata)
                .bind(now)
                .bind(agent.id)
                .execute(&mut *tx)
                .await?;
            audit!(
                tx,
                actor,
                "registry.update",
                &agent.name,
                None::<String>,
                now
            );
            outbox!(tx, "registry_update", &agent.name, None::<String>, now);
            tx.commit().await?;
            Ok(())
        })
    }

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
