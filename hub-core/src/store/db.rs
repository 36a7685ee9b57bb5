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
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Any, AnyConnection, AnyPool, ConnectOptions as _, Connection as _, Decode, Type};

/// Why the database could not be migrated.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// The database's schema is newer than this binary's.
    #[error(
        "the database's schema is at migration {applied} ({description}), newer than this \
         ofc-hub knows (migration {known}, {known_description}): the database was migrated by \
         a newer ofc-hub; run that version (an older one must not write to a schema it does \
         not know)"
    )]
    Newer {
        /// The newest migration applied to the database.
        applied: i64,
        /// Its description.
        description: String,
        /// The newest migration this binary knows.
        known: i64,
        /// Its description.
        known_description: String,
    },
    /// A migration failed.
    #[error(transparent)]
    Migrate(#[from] MigrateError),
}

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
    /// How to open a connection of its own (PostgreSQL: for a [`Lease`]).
    options: Options,
}

/// Connect options, never shown (they hold the password).
#[derive(Clone)]
struct Options(Option<AnyConnectOptions>);

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Options(..)")
    }
}

/// One role among the processes sharing a database, held by one of them at a time: on
/// PostgreSQL a session advisory lock (`pg_try_advisory_lock`) held on a connection of its own,
/// outside the pool, so it is released the moment the holder's process dies (the server sees
/// the connection close) or the connection breaks; on SQLite (one serving process) always held.
#[derive(Debug)]
pub struct Lease {
    conn: Option<AnyConnection>,
}

impl Lease {
    /// Whether the lease is still held: its connection answers. A lease that is not is lost
    /// for good (take a new one).
    pub async fn still_held(&mut self) -> bool {
        let Some(conn) = &mut self.conn else {
            return true;
        };
        let ok = tokio::time::timeout(
            Duration::from_secs(5),
            sqlx::query("SELECT 1").execute(&mut *conn),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        if !ok {
            self.conn = None;
        }
        ok
    }
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
            options: Options(None),
        })
    }

    /// Connects to PostgreSQL.
    pub async fn postgres(url: &str, max_connections: u32) -> Result<Db, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let opts = AnyConnectOptions::from_str(url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts.clone())
            .await?;
        Ok(Db {
            write: pool.clone(),
            read: pool,
            backend: Backend::Postgres,
            options: Options(Some(opts)),
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

    /// The embedded migrations of this backend.
    fn migrator(&self) -> Migrator {
        let migrator = match self.backend {
            Backend::Sqlite => sqlx::migrate!("../migrations/sqlite"),
            Backend::Postgres => sqlx::migrate!("../migrations/postgres"),
        };
        #[cfg(feature = "upgrade-test-migration")]
        let migrator = super::upgrade_test::extend(migrator);
        migrator
    }

    /// The newest migration this binary knows (version, description).
    pub fn known_schema(&self) -> (i64, String) {
        self.migrator()
            .iter()
            .map(|m| (m.version, m.description.to_string()))
            .max_by_key(|(v, _)| *v)
            .unwrap_or((0, String::new()))
    }

    /// The newest migration applied to the database (version, description); `None` on a new
    /// database.
    pub async fn applied_schema(&self) -> Option<(i64, String)> {
        sqlx::query_as(
            "SELECT version, description FROM _sqlx_migrations ORDER BY version DESC LIMIT 1",
        )
        .fetch_optional(&self.write)
        .await
        .ok()
        .flatten()
    }

    /// Applies the embedded migrations of this backend — on PostgreSQL under sqlx's advisory
    /// lock, so of several replicas starting at once one migrates and the others wait for it,
    /// then find nothing to do. A database migrated by a newer binary (a migration this one
    /// does not know) is refused before anything is written: an older binary must not write
    /// to a schema it does not know.
    pub async fn migrate(&self) -> Result<(), MigrationError> {
        let (known, known_description) = self.known_schema();
        let newer = |applied: i64, description: String| MigrationError::Newer {
            applied,
            description,
            known,
            known_description: known_description.clone(),
        };
        if let Some((applied, description)) = self.applied_schema().await
            && applied > known
        {
            return Err(newer(applied, description));
        }
        match self.migrator().run(&self.write).await {
            Ok(()) => Ok(()),
            Err(MigrateError::VersionMissing(v)) => {
                let description = match self.applied_schema().await {
                    Some((a, d)) if a == v => d,
                    _ => "?".to_string(),
                };
                Err(newer(v, description))
            }
            Err(e) => Err(MigrationError::Migrate(e)),
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

    /// Takes the lease `key` (one number per role) when no other process holds it; `None`
    /// when one does. See [`Lease`].
    pub async fn try_lease(&self, key: i64) -> Result<Option<Lease>, sqlx::Error> {
        let Some(opts) = &self.options.0 else {
            return Ok(Some(Lease { conn: None }));
        };
        let mut conn = AnyConnection::connect_with(opts).await?;
        let Flag(got) = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut conn)
            .await?;
        if got {
            Ok(Some(Lease { conn: Some(conn) }))
        } else {
            let _ = conn.close().await;
            Ok(None)
        }
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}

/// Query parameters whose values are secrets or point at them (libpq's and sqlx's names).
const SECRET_PARAMS: [&str; 3] = ["password", "sslpassword", "passfile"];

/// A URL (a database's, an upstream registry's) with every secret in it replaced by `***`, for
/// logs and errors: the password of its userinfo (`user:***@host`) and the values of the
/// `password`, `sslpassword` and `passfile` query parameters (`?user=u&password=***`).
pub fn redact_url(url: &str) -> String {
    let (rest, fragment) = match url.find('#') {
        Some(i) => (&url[..i], &url[i..]),
        None => (url, ""),
    };
    let (head, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut out = String::with_capacity(url.len());
    match head.find("://") {
        Some(s) => {
            let after = &head[s + 3..];
            // The userinfo ends at the last `@` of the authority; a password may hold an
            // unescaped `/`, so the authority is taken to run to the query, not the first `/`.
            match after.rfind('@') {
                Some(at) if after[..at].contains(':') => {
                    let user = &after[..after.find(':').unwrap_or(0)];
                    out.push_str(&head[..s + 3]);
                    out.push_str(user);
                    out.push_str(":***@");
                    out.push_str(&after[at + 1..]);
                }
                _ => out.push_str(head),
            }
        }
        None => out.push_str(head),
    }
    if let Some(q) = query {
        out.push('?');
        let parts: Vec<String> = q
            .split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                let name = percent_decode(k).to_ascii_lowercase();
                if SECRET_PARAMS.contains(&name.trim()) && !v.is_empty() {
                    format!("{k}=***")
                } else {
                    kv.to_string()
                }
            })
            .collect();
        out.push_str(&parts.join("&"));
    }
    out.push_str(fragment);
    out
}

/// `s` with `%XX` escapes and `+` decoded (lossily), to recognise a parameter's name however it
/// was written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex_digit(b[i + 1]), hex_digit(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c).to_digit(16).map(|d| d as u8)
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

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn redact_url_masks_every_secret() {
        // The findings' reproductions (scale-findings item 5).
        assert_eq!(
            redact_url("postgres://127.0.0.1:55432/nodb?user=ofc&password=SuperSecret9"),
            "postgres://127.0.0.1:55432/nodb?user=ofc&password=***"
        );
        assert_eq!(
            redact_url("http://regu:RegSecret77@127.0.0.1:1/ofc"),
            "http://regu:***@127.0.0.1:1/ofc"
        );
        for (url, secrets) in [
            (
                "postgres://ofc:pw1@db:5432/hub?sslmode=require&sslpassword=pw2&passfile=/p/pgpass",
                &["pw1", "pw2", "/p/pgpass"][..],
            ),
            ("postgresql://u:p%40ss/w@h/db", &["p%40ss", "ss/w"][..]),
            ("postgres://h/db?PassWord=pw3", &["pw3"][..]),
            ("postgres://h/db?pass%77ord=pw4#frag", &["pw4"][..]),
            (
                "postgres://h/db?user=u&password=pw5&password=pw6",
                &["pw5", "pw6"][..],
            ),
        ] {
            let shown = redact_url(url);
            for s in secrets {
                assert!(!shown.contains(s), "{s} shown in {shown}");
            }
            assert!(shown.contains("***"), "{shown}");
        }
        // Nothing secret: unchanged.
        for url in [
            "postgres://ofc@db:5432/hub?sslmode=require",
            "sqlite:///var/lib/ofc/hub.sqlite3",
            "postgres://h/db?password=",
        ] {
            assert_eq!(redact_url(url), url);
        }
    }
}
