//! The database: SQLite (default) or PostgreSQL, behind one enum.
//!
//! Every query is written once, with `$N` placeholders that both backends accept, and runs on
//! whichever pool is configured through [`on_db!`]: the macro expands the same body once per
//! backend, so each is type-checked against its own driver. SQLite gets one writer connection
//! (writes are serialized by SQLite anyway; one writer avoids `SQLITE_BUSY` on lock upgrades)
//! and a pool of readers over WAL.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// A connected database.
#[derive(Debug, Clone)]
pub enum Db {
    /// An SQLite file.
    Sqlite {
        /// The single writer.
        write: SqlitePool,
        /// Readers.
        read: SqlitePool,
    },
    /// A PostgreSQL server.
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the pool that writes.
#[macro_export]
#[doc(hidden)]
macro_rules! on_db {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite { write: $pool, .. } => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body` with `$pool` bound to a pool that reads.
#[macro_export]
#[doc(hidden)]
macro_rules! on_read {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite { read: $pool, .. } => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

impl Db {
    /// Opens (creating if missing) the SQLite file at `path`.
    pub async fn sqlite(path: &Path) -> Result<Db, sqlx::Error> {
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL survives a killed process (the WAL is in the OS page cache); only
            // a power loss may drop the last transactions.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts.clone())
            .await?;
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(opts.read_only(false))
            .await?;
        Ok(Db::Sqlite { write, read })
    }

    /// Connects to PostgreSQL.
    pub async fn postgres(url: &str, max_connections: u32) -> Result<Db, sqlx::Error> {
        let opts = sqlx::postgres::PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await?;
        Ok(Db::Postgres(pool))
    }

    /// Connects by URL: `sqlite://PATH` / `sqlite:PATH` or `postgres://…`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Db, sqlx::Error> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Self::postgres(url, max_connections).await
        } else if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            Self::sqlite(Path::new(path)).await
        } else {
            Err(sqlx::Error::Configuration(
                format!("unsupported database URL scheme in `{}`", redact_url(url)).into(),
            ))
        }
    }

    /// Applies the embedded migrations of this backend.
    pub async fn migrate(&self) -> Result<(), sqlx::migrate::MigrateError> {
        match self {
            Db::Sqlite { write, .. } => sqlx::migrate!("../migrations/sqlite").run(write).await,
            Db::Postgres(pool) => sqlx::migrate!("../migrations/postgres").run(pool).await,
        }
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite { .. } => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// A trivial query, for `/readyz`.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        on_read!(self, |pool| {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match self {
            Db::Sqlite { write, read } => {
                read.close().await;
                write.close().await;
            }
            Db::Postgres(pool) => pool.close().await,
        }
    }
}

/// A database URL with its password replaced, for logs and errors.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}://{}:***@{}", &url[..s], user, &url[at + 1..])
        }
        _ => url.to_string(),
    }
}
