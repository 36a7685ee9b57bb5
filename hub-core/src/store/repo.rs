//! The repository handle, its errors, and who acts.

use crate::store::db::Db;

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
    /// The version was removed (unpublished or taken down; the reason class): a tombstone.
    #[error("version removed ({0})")]
    VersionRemoved(String),
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
    /// The blob backend (an upstream registry) did not answer while a write checked its blobs:
    /// the write is refused, to be retried.
    #[error("blob backend: {0}")]
    BlobBackend(String),
    /// The transparency log's tables are inconsistent, or an entry could not be formed.
    #[error("transparency log: {0}")]
    Log(String),
    /// A quota of the hub would be passed (the message names the setting).
    #[error("quota exceeded: {0}")]
    Quota(String),
    /// A new namespace looks like an existing one (the message names it).
    #[error("{0}")]
    Lookalike(String),
}

impl StoreError {
    /// Whether the database could not be reached (down, restarting, refusing connections, the
    /// pool timed out waiting for one): a request may be retried, and nothing it did was kept.
    pub fn is_unavailable(&self) -> bool {
        let StoreError::Sqlx(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(d) => d.code().is_some_and(|c| {
                // PostgreSQL: class 08 (connection exception), 57P01-57P03 (the server is
                // shutting down, crashed or not yet accepting connections).
                c.starts_with("08") || matches!(c.as_ref(), "57P01" | "57P02" | "57P03")
            }),
            _ => false,
        }
    }
}

/// Store result.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Whether `e` is a unique-constraint violation.
pub(super) fn unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

/// `e` as [`StoreError::Conflict`] with `message` when it is a unique-constraint violation.
pub(super) fn conflict_on_unique(e: sqlx::Error, message: impl FnOnce() -> String) -> StoreError {
    if unique_violation(&e) {
        StoreError::Conflict(message())
    } else {
        e.into()
    }
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

/// The repository.
#[derive(Debug, Clone)]
pub struct Store {
    pub(super) db: Db,
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
