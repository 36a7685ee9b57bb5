//! The hub's repository layer: every SQL statement lives here, written once for both backends
//! (see [`crate::db`]). Each write that changes what search shows appends an outbox row, and
//! every write appends an audit row, in the same transaction.

use serde::Serialize;
use sqlx::{FromRow as _, Row};
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
    /// The transparency log's tables are inconsistent, or an entry could not be formed.
    #[error("transparency log: {0}")]
    Log(String),
    /// A quota of the hub would be passed (the message names the setting).
    #[error("quota exceeded: {0}")]
    Quota(String),
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
#[derive(Debug, Clone, Serialize, ToSchema, sqlx::FromRow)]
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
#[derive(Debug, Clone, Serialize, ToSchema, sqlx::FromRow)]
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
pub use index_schema::hub_api::Member;

/// A publisher key.
pub use index_schema::hub_api::Key as KeyRow;

/// An agent.
#[derive(Debug, Clone, sqlx::FromRow)]
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
#[derive(Debug, Clone, sqlx::FromRow)]
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
    /// Index of its publish entry in the transparency log (`None`: not logged yet).
    pub log_index: Option<i64>,
}

/// An outbox entry.
pub use index_schema::hub_api::OutboxEntry as OutboxRow;

/// An audit entry.
pub use index_schema::hub_api::AuditEntry as AuditRow;

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

/// What writing transactions do besides their own change — the audit row, the outbox row,
/// the agent's derived state — as methods of the transaction (`tx.audit(..)`, `tx.outbox(..)`,
/// `tx.refresh_agent(..)`), written once for both backends.
pub(crate) trait TxExt {
    /// Appends an audit row.
    async fn audit(
        &mut self,
        actor: &Actor,
        action: impl AsRef<str> + Send,
        target: impl AsRef<str> + Send,
        detail: Option<impl AsRef<str> + Send>,
        now: i64,
    ) -> Result<()>;
    /// Appends an outbox row; returns its sequence number (commit order, no gaps).
    async fn outbox(
        &mut self,
        kind: impl AsRef<str> + Send,
        agent: impl AsRef<str> + Send,
        version: Option<impl AsRef<str> + Send>,
        now: i64,
    ) -> Result<i64>;
    /// Recomputes `agents.latest_version` ([`latest_version`]) and bumps `updated_at`.
    async fn refresh_agent(&mut self, agent_id: i64, now: i64) -> Result<()>;
}

macro_rules! tx_ext {
    ($db:ty) => {
        impl TxExt for sqlx::Transaction<'_, $db> {
            async fn audit(
                &mut self,
                actor: &Actor,
                action: impl AsRef<str> + Send,
                target: impl AsRef<str> + Send,
                detail: Option<impl AsRef<str> + Send>,
                now: i64,
            ) -> Result<()> {
                sqlx::query(
                    "INSERT INTO audit_log (at, user_id, user_name, token_id, action, target, \
                     detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(now)
                .bind(actor.user_id)
                .bind(&actor.user_name)
                .bind(actor.token_id)
                .bind(action.as_ref())
                .bind(target.as_ref())
                .bind(detail.as_ref().map(|d| d.as_ref()))
                .execute(&mut **self)
                .await?;
                Ok(())
            }

            async fn outbox(
                &mut self,
                kind: impl AsRef<str> + Send,
                agent: impl AsRef<str> + Send,
                version: Option<impl AsRef<str> + Send>,
                now: i64,
            ) -> Result<i64> {
                let seq: i64 = sqlx::query_scalar(
                    "UPDATE outbox_counter SET last_seq = last_seq + 1 WHERE id = 1 \
                     RETURNING last_seq",
                )
                .fetch_one(&mut **self)
                .await?;
                sqlx::query(
                    "INSERT INTO outbox (seq, kind, agent, version, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(seq)
                .bind(kind.as_ref())
                .bind(agent.as_ref())
                .bind(version.as_ref().map(|v| v.as_ref()))
                .bind(now)
                .execute(&mut **self)
                .await?;
                Ok(seq)
            }

            async fn refresh_agent(&mut self, agent_id: i64, now: i64) -> Result<()> {
                let rows: Vec<(String, Option<i64>)> =
                    sqlx::query_as("SELECT version, yanked_at FROM versions WHERE agent_id = $1")
                        .bind(agent_id)
                        .fetch_all(&mut **self)
                        .await?;
                let latest = latest_version(rows.iter().map(|(v, y)| (v.as_str(), y.is_some())));
                sqlx::query("UPDATE agents SET latest_version = $1, updated_at = $2 WHERE id = $3")
                    .bind(latest)
                    .bind(now)
                    .bind(agent_id)
                    .execute(&mut **self)
                    .await?;
                Ok(())
            }
        }
    };
}
tx_ext!(sqlx::Sqlite);
tx_ext!(sqlx::Postgres);

/// The version `ofc pull publisher/agent` gets: [`index_schema::version::select`] with no
/// selector (the highest non-yanked release, else the highest non-yanked pre-release).
pub fn latest_version<'a>(versions: impl Iterator<Item = (&'a str, bool)>) -> Option<String> {
    index_schema::version::latest(versions).map(str::to_string)
}

const VERSION_COLUMNS: &str = "v.id, v.version, v.manifest_digest, v.envelope, v.key_id, \
    v.source_kind, v.bundle_digest, v.bundle_size, u.name AS published_by, v.token_id, \
    v.created_at, v.yanked_at, v.yank_reason, v.deprecated_message, v.downloads, v.log_index";

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
}

mod accounts;
mod agents;
mod namespaces;
mod outbox;
mod registry;
mod tlog;

pub use tlog::{LogAppend, LogEntryRow, LogVerifyReport};
pub(crate) use tlog::{TxLog, delete_entry, publish_entry};
mod sessions;
pub use sessions::WebSession;
