//! The database: SQLite (default) or PostgreSQL, through sqlx's `Any` driver.
//!
//! Every query is written once, with `$N` placeholders that both backends accept, and runs on
//! whichever backend the URL names: one code path, no per-backend copies. SQLite gets one
//! writer connection (writes are serialized by SQLite anyway; one writer avoids `SQLITE_BUSY`
//! on lock upgrades) and a pool of readers over WAL; PostgreSQL one pool for both.
//!
//! `Any` carries the types the schema uses (BIGINT, INTEGER, TEXT, BLOB/BYTEA, BOOLEAN), with
//! one seam: SQLite has no boolean type, so a truth value read back ([`Flag`]) is PostgreSQL's
//! BOOLEAN or SQLite's 0/1, and SQLite's BOOLEAN-declared columns (`users.is_admin`,
//! `users.disabled`) are read as `CAST(… AS INTEGER)` (the driver refuses that declared type).
//!
//! Schema differences are confined to the two migration sets, `migrations/sqlite` and
//! `migrations/postgres` (identity columns, mostly), embedded and chosen by backend at run time,
//! never edited once landed; times are Unix milliseconds in BIGINT. The storage suite and the
//! e2e tests run on both backends.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyTypeInfo, AnyTypeInfoKind, AnyValueRef};
use sqlx::error::BoxDynError;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Any, AnyConnection, AnyPool, ConnectOptions as _, Decode, Type};

/// Which database a [`Db`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// A connected database.
#[derive(Debug, Clone)]
pub struct Db {
    /// The pool that writes (SQLite: its single connection).
    write: AnyPool,
    /// The pool that reads (PostgreSQL: the same pool).
    read: AnyPool,
    backend: Backend,
}

/// The settings every SQLite connection gets: WAL + NORMAL survives a killed process (the WAL is
/// in the OS page cache; only a power loss may drop the last transactions), a writer waits up
/// to 10 s for another process's lock, and foreign keys are enforced.
const SQLITE_PRAGMAS: [&str; 4] = [
    "PRAGMA busy_timeout = 10000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
];

async fn sqlite_settings(conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
    for pragma in SQLITE_PRAGMAS {
        sqlx::query(pragma).execute(&mut *conn).await?;
    }
    Ok(())
}

fn sqlite_pool(max_connections: u32) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(max_connections)
        .after_connect(|conn, _| Box::pin(sqlite_settings(conn)))
}

impl Db {
    /// Opens (creating if missing) the SQLite file at `path`.
    pub async fn sqlite(path: &Path) -> Result<Db, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let url = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .to_url_lossy();
        let opts = AnyConnectOptions::from_url(&url)?;
        let write = sqlite_pool(1).connect_with(opts.clone()).await?;
        let read = sqlite_pool(8).connect_with(opts).await?;
        Ok(Db {
            write,
            read,
            backend: Backend::Sqlite,
        })
    }

    /// Connects to PostgreSQL.
    pub async fn postgres(url: &str, max_connections: u32) -> Result<Db, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let opts = AnyConnectOptions::from_str(url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await?;
        Ok(Db {
            write: pool.clone(),
            read: pool,
            backend: Backend::Postgres,
        })
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

    /// The pool that writes: every transaction that changes something runs here.
    pub fn write(&self) -> &AnyPool {
        &self.write
    }

    /// A pool that reads.
    pub fn read(&self) -> &AnyPool {
        &self.read
    }

    /// Applies the embedded migrations of this backend.
    pub async fn migrate(&self) -> Result<(), sqlx::migrate::MigrateError> {
        match self.backend {
            Backend::Sqlite => {
                sqlx::migrate!("../migrations/sqlite")
                    .run(&self.write)
                    .await
            }
            Backend::Postgres => {
                sqlx::migrate!("../migrations/postgres")
                    .run(&self.write)
                    .await
            }
        }
    }

    /// Which database this is.
    pub fn kind(&self) -> Backend {
        self.backend
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    /// A trivial query, for `/readyz`.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
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

/// A truth value as either backend reads it back: PostgreSQL's BOOLEAN, SQLite's 0 or 1
/// (`EXISTS (…)`, a comparison, a `CAST(flag AS INTEGER)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl From<Flag> for bool {
    fn from(f: Flag) -> bool {
        f.0
    }
}

impl Type<Any> for Flag {
    fn type_info() -> AnyTypeInfo {
        <bool as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        ty.kind() == AnyTypeInfoKind::Bool || ty.kind().is_integer()
    }
}

impl<'r> Decode<'r, Any> for Flag {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        match <bool as Decode<'r, Any>>::decode(value.clone()) {
            Ok(b) => Ok(Flag(b)),
            Err(_) => Ok(Flag(<i64 as Decode<'r, Any>>::decode(value)? != 0)),
        }
    }
}
