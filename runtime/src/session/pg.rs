//! Sessions in PostgreSQL, for a floor server several people or machines share
//! (`OFC_SESSIONS_URL=postgres://…`): the same records as the JSONL files, one row per line.
//!
//! ```text
//! ofc_sessions      (id TEXT PRIMARY KEY, project TEXT NOT NULL, created_at TIMESTAMPTZ)
//! ofc_session_lines (session_id TEXT → ofc_sessions ON DELETE CASCADE, n BIGINT, line TEXT,
//!                    PRIMARY KEY (session_id, n))
//! ```
//!
//! A line is stored exactly as the file would hold it (without its newline), so a session is
//! read by the same parser ([`super::jsonl::read_from`]) and a row edited by hand is reported
//! with its number and skipped like a bad line of a file. The tables are created on first use
//! (under a transaction-scoped advisory lock, so two first users do not race).
//!
//! **One writer per session**: the writer holds a session-level advisory lock on its own
//! connection for as long as the session is open; a second `ofc run --resume` of it, or
//! `ofc sessions rm`, is refused as busy — across machines, as the file lock is on one.
//!
//! **Durability** matches the files': lines go to the database in order, from a thread of the
//! writer's own (the floor never waits on the network for a progress event); a sync — after a
//! message, a summary, a grants or task board change, the end of a turn — returns once every
//! line before it is committed. After a failed insert nothing more is written (no gap in the
//! sequence) and every later sync reports the failure.
//!
//! **Faults**: every statement has a deadline, and so has a sync's wait for the writer: a
//! database that stops answering fails the session's recording after [`SYNC_WAIT`] instead of
//! holding the floor. A connection that fails (an idle timeout, a restart of the database) is
//! opened again once, the session's lock taken again and the lines that were not confirmed
//! written again (a line the database did take is not written twice); only when that fails
//! too does recording stop.
//!
//! **Ownership** is checked on the session's row as well as on its meta line: a session is
//! read, continued or removed only by the project that created it, even with its lines gone.
//!
//! **Rights**: the tables are created only when missing; a role that may only read and write
//! tables an administrator created works.
//!
//! The URL's password is never shown (in the address or as a `password=` parameter): errors
//! and `ofc sessions` name the store by the URL without it. A connection pooler in transaction
//! mode (PgBouncer's `pool_mode = transaction`) is not supported: the session's lock is a
//! session-level advisory lock.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::PgConnection;

use super::jsonl::{self, SessionLog};
use super::{SessionError, SessionId};

/// How long a connection may take to open (and find its tables).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a sync waits for the writer (a statement, a reconnection and the same statement
/// again fit in it).
pub const SYNC_WAIT: Duration = Duration::from_secs(60);

/// Lines inserted in one statement at most.
const BATCH: usize = 512;

/// Key of the advisory lock that serialises creating the tables.
const SCHEMA_LOCK: i64 = 0x6f66_635f_7365_7373; // "ofc_sess"

const SCHEMA: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS ofc_sessions (
        id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )",
    "CREATE TABLE IF NOT EXISTS ofc_session_lines (
        session_id TEXT NOT NULL REFERENCES ofc_sessions (id) ON DELETE CASCADE,
        n BIGINT NOT NULL,
        line TEXT NOT NULL,
        PRIMARY KEY (session_id, n)
    )",
];

/// The parameters a PostgreSQL URL may have (those the driver reads); any other is refused.
const URL_PARAMETERS: [&str; 18] = [
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
];

/// A PostgreSQL database holding sessions.
#[derive(Clone)]
pub struct PgSessions {
    url: String,
    shown: String,
    /// Whether the tables are known to exist (checked once per store).
    ready: Arc<AtomicBool>,
}

impl std::fmt::Debug for PgSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSessions")
            .field("url", &self.shown)
            .finish()
    }
}

/// `url` without its password (in the address, or a `password` parameter).
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            if u.query().is_some() {
                let pairs: Vec<(String, String)> = u
                    .query_pairs()
                    .map(|(k, v)| {
                        let secret = k.to_ascii_lowercase().contains("pass");
                        let v = if secret { "***".into() } else { v.into_owned() };
                        (k.into_owned(), v)
                    })
                    .collect();
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            u.to_string()
        }
        Err(_) => "the PostgreSQL URL".to_owned(),
    }
}

/// The advisory lock key of a session.
fn lock_key(id: &SessionId) -> i64 {
    let digest = <sha2::Sha256 as sha2::Digest>::digest(format!("ofc-session:{id}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().unwrap_or([0; 8]))
}

/// Runs `work` on a thread of its own with its own runtime: the store's callers are
/// synchronous, some of them inside another runtime, where blocking on one is not allowed.
fn on_own_thread<T: Send, F: Future<Output = T>>(work: impl FnOnce() -> F + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(work()))
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
        .unwrap_or_else(|e| panic!("cannot start a runtime for the session store: {e}"))
    })
}

impl PgSessions {
    /// The store at `url` (`postgres://` or `postgresql://`); nothing is connected yet.
    pub fn new(url: &str) -> Result<Self, SessionError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(SessionError::Io(format!(
                "`{}` is not a PostgreSQL URL (postgres://user:password@host:port/database)",
                redact(url)
            )));
        }
        if let Ok(parsed) = url::Url::parse(url)
            && let Some((key, _)) = parsed
                .query_pairs()
                .find(|(k, _)| !URL_PARAMETERS.contains(&k.as_ref()))
        {
            // The driver would only log it: a misspelt `sslmode` would go unnoticed.
            return Err(SessionError::Io(format!(
                "{}: unknown parameter `{}` (known: {})",
                redact(url),
                super::shown(&key),
                URL_PARAMETERS.join(", ")
            )));
        }
        Ok(Self {
            url: url.to_owned(),
            shown: redact(url),
            ready: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// What a session's lines are called in messages: the store and the id.
    pub fn place_of(&self, id: &SessionId) -> PathBuf {
        PathBuf::from(format!("{}#{id}", self.shown))
    }

    fn err(&self, e: impl std::fmt::Display) -> SessionError {
        SessionError::io(format!("session store {}", self.shown), e)
    }

    async fn connect(&self) -> Result<PgConnection, SessionError> {
        tokio::time::timeout(CONNECT_TIMEOUT, self.connect_now())
            .await
            .map_err(|_| self.err("no connection within 10 s"))?
    }

    async fn connect_now(&self) -> Result<PgConnection, SessionError> {
        let mut c = PgConnection::connect(&self.url)
            .await
            .map_err(|e| self.err(e))?;
        if self.ready.load(Ordering::Acquire) {
            return Ok(c);
        }
        let (exists,): (bool,) =
            sqlx::query_as("SELECT to_regclass('ofc_session_lines') IS NOT NULL")
                .fetch_one(&mut c)
                .await
                .map_err(|e| self.err(e))?;
        if exists {
            self.ready.store(true, Ordering::Release);
            return Ok(c);
        }
        let mut tx = c.begin().await.map_err(|e| self.err(e))?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SCHEMA_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        for statement in SCHEMA {
            sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        self.ready.store(true, Ordering::Release);
        Ok(c)
    }

    /// `work` within [`QUERY_TIMEOUT`].
    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, SessionError>>,
    ) -> Result<T, SessionError> {
        tokio::time::timeout(QUERY_TIMEOUT, work)
            .await
            .map_err(|_| self.err("no answer within 20 s"))?
    }

    /// Checks that session `id` exists and belongs to `project`.
    async fn owned(
        &self,
        c: &mut PgConnection,
        id: &SessionId,
        project: &str,
    ) -> Result<(), SessionError> {
        let owner: Option<(String,)> =
            sqlx::query_as("SELECT project FROM ofc_sessions WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(&mut *c)
                .await
                .map_err(|e| self.err(e))?;
        match owner {
            None => Err(SessionError::NotFound {
                id: id.clone(),
                place: self.shown.clone(),
            }),
            Some((owner,)) if owner != project => Err(SessionError::Foreign {
                id: id.clone(),
                owner,
                here: project.to_owned(),
            }),
            Some(_) => Ok(()),
        }
    }

    async fn lines(
        &self,
        c: &mut PgConnection,
        id: &SessionId,
        project: &str,
    ) -> Result<Vec<u8>, SessionError> {
        self.owned(c, id, project).await?;
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT line FROM ofc_session_lines WHERE session_id = $1 ORDER BY n")
                .bind(id.as_str())
                .fetch_all(&mut *c)
                .await
                .map_err(|e| self.err(e))?;
        Ok(join(rows.into_iter().map(|(l,)| l)))
    }

    /// Reads a session of `project`.
    pub fn read(&self, id: &SessionId, project: &str) -> Result<SessionLog, SessionError> {
        let bytes = on_own_thread(|| async move {
            let mut c = self.connect().await?;
            let lines = self.bounded(self.lines(&mut c, id, project)).await;
            let _ = c.close().await;
            lines
        })?;
        parse(&bytes).map_err(|e| self.err(e))
    }

    /// How many lines session `id` of `project` has, and the number of its last (to tell
    /// whether it changed since it was read, without reading it).
    pub fn stamp(&self, id: &SessionId, project: &str) -> Result<(u64, u64), SessionError> {
        let (count, last): (i64, i64) = on_own_thread(|| async move {
            let mut c = self.connect().await?;
            let row = self
                .bounded(async {
                    self.owned(&mut c, id, project).await?;
                    sqlx::query_as(
                        "SELECT count(*), coalesce(max(n), 0) FROM ofc_session_lines WHERE session_id = $1",
                    )
                    .bind(id.as_str())
                    .fetch_one(&mut c)
                    .await
                    .map_err(|e| self.err(e))
                })
                .await;
            let _ = c.close().await;
            row
        })?;
        Ok((count.max(0) as u64, last.max(0) as u64))
    }

    /// The ids of `project`'s sessions.
    pub fn ids(&self, project: &str) -> Result<Vec<SessionId>, SessionError> {
        let rows: Vec<(String,)> = on_own_thread(|| async move {
            let mut c = self.connect().await?;
            let rows = self
                .bounded(async {
                    sqlx::query_as("SELECT id FROM ofc_sessions WHERE project = $1")
                        .bind(project)
                        .fetch_all(&mut c)
                        .await
                        .map_err(|e| self.err(e))
                })
                .await;
            let _ = c.close().await;
            rows
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id,)| SessionId::parse(&id).ok())
            .collect())
    }

    /// Removes a session of `project`; refused while a writer holds it.
    pub fn remove(&self, id: &SessionId, project: &str) -> Result<(), SessionError> {
        on_own_thread(|| async move {
            let mut c = self.connect().await?;
            let done = self
                .bounded(async {
                    self.owned(&mut c, id, project).await?;
                    self.lock(&mut c, id).await?;
                    sqlx::query("DELETE FROM ofc_sessions WHERE id = $1 AND project = $2")
                        .bind(id.as_str())
                        .bind(project)
                        .execute(&mut c)
                        .await
                        .map_err(|e| self.err(e))
                })
                .await;
            // Closing the connection releases the lock.
            let _ = c.close().await;
            done.map(|_| ())
        })
    }

    /// Opens a session for writing: creates it for `project` (`create`), or reads it to
    /// continue. Answers the writer (holding the session's lock), the lines so far and the
    /// number the next line gets.
    pub(crate) fn open(
        &self,
        id: &SessionId,
        project: &str,
        create: bool,
    ) -> Result<(PgWriter, Vec<u8>, i64), SessionError> {
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let (tx, rx) = mpsc::channel::<Command>();
        let (store, id2, project) = (self.clone(), id.clone(), project.to_owned());
        let thread = std::thread::Builder::new()
            .name(format!("ofc-session-{}", &id.as_str()[..8]))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(store.err(e)));
                        return;
                    }
                };
                rt.block_on(store.write_loop(id2, project, create, ready_tx, rx));
            })
            .map_err(|e| self.err(e))?;
        match ready_rx.recv_timeout(SYNC_WAIT) {
            Ok(Ok((lines, next))) => Ok((
                PgWriter {
                    tx: Some(tx),
                    thread: Some(thread),
                },
                lines,
                next,
            )),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(self.err("the session's writer stopped"))
            }
        }
    }

    /// Takes the session's lock on `c`.
    async fn lock(&self, c: &mut PgConnection, id: &SessionId) -> Result<(), SessionError> {
        let (got,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
            .bind(lock_key(id))
            .fetch_one(&mut *c)
            .await
            .map_err(|e| self.err(e))?;
        if got {
            Ok(())
        } else {
            Err(SessionError::Busy(id.clone()))
        }
    }

    async fn start_writing(
        &self,
        c: &mut PgConnection,
        id: &SessionId,
        project: &str,
        create: bool,
    ) -> Result<(Vec<u8>, i64), SessionError> {
        self.lock(c, id).await?;
        if create {
            let done = sqlx::query(
                "INSERT INTO ofc_sessions (id, project) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            )
            .bind(id.as_str())
            .bind(project)
            .execute(&mut *c)
            .await
            .map_err(|e| self.err(e))?;
            if done.rows_affected() == 0 {
                return Err(SessionError::Exists(id.clone()));
            }
            return Ok((Vec::new(), 1));
        }
        let lines = self.lines(c, id, project).await?;
        let (next,): (Option<i64>,) =
            sqlx::query_as("SELECT max(n) FROM ofc_session_lines WHERE session_id = $1")
                .bind(id.as_str())
                .fetch_one(&mut *c)
                .await
                .map_err(|e| self.err(e))?;
        Ok((lines, next.unwrap_or(0) + 1))
    }

    async fn write_loop(
        self,
        id: SessionId,
        project: String,
        create: bool,
        ready: mpsc::SyncSender<Result<(Vec<u8>, i64), SessionError>>,
        rx: mpsc::Receiver<Command>,
    ) {
        let mut c = match self.connect().await {
            Ok(c) => c,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let started = self
            .bounded(self.start_writing(&mut c, &id, &project, create))
            .await;
        let mut next = match started {
            Ok((lines, next)) => {
                let _ = ready.send(Ok((lines, next)));
                next
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                let _ = c.close().await;
                return;
            }
        };
        let mut conn = Some(c);
        let mut failed: Option<String> = None;
        // The channel's commands in order; blocking receives are fine on this thread of its own.
        while let Ok(first) = rx.recv() {
            let mut lines = Vec::new();
            let mut syncs = Vec::new();
            let mut command = Some(first);
            while let Some(cmd) = command.take() {
                match cmd {
                    Command::Line(l) => lines.push(l),
                    Command::Sync(reply) => syncs.push(reply),
                }
                if lines.len() < BATCH {
                    command = rx.try_recv().ok();
                }
            }
            if failed.is_none() && !lines.is_empty() {
                match self.insert(&mut conn, &id, next, &lines).await {
                    Ok(()) => next += lines.len() as i64,
                    Err(e) => failed = Some(e.to_string()),
                }
            }
            for reply in syncs {
                let _ = reply.send(failed.clone());
            }
        }
        if let Some(c) = conn {
            let _ = c.close().await;
        }
    }

    /// Inserts `lines` as lines `from`…; on a failure, once more on a new connection holding
    /// the session's lock again (a line the failed attempt did store is not stored twice).
    async fn insert(
        &self,
        conn: &mut Option<PgConnection>,
        id: &SessionId,
        from: i64,
        lines: &[String],
    ) -> Result<(), SessionError> {
        let ns: Vec<i64> = (from..from + lines.len() as i64).collect();
        let statement = |again: bool| {
            format!(
                "INSERT INTO ofc_session_lines (session_id, n, line) \
                 SELECT $1, n, line FROM UNNEST($2::BIGINT[], $3::TEXT[]) AS t (n, line){}",
                if again {
                    " ON CONFLICT (session_id, n) DO NOTHING"
                } else {
                    ""
                }
            )
        };
        if let Some(c) = conn.as_mut() {
            let sql = statement(false);
            let first = self
                .bounded(async {
                    sqlx::query(&sql)
                        .bind(id.as_str())
                        .bind(&ns)
                        .bind(lines)
                        .execute(&mut *c)
                        .await
                        .map_err(|e| self.err(e))
                })
                .await;
            match first {
                Ok(_) => return Ok(()),
                Err(e) => tracing::warn!(session = %id, error = %e,
                    "writing the session failed; connecting again"),
            }
        }
        // The old connection (and with it the lock, if the database still had it) goes first.
        if let Some(c) = conn.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), c.close()).await;
        }
        let mut c = self.connect().await?;
        let sql = statement(true);
        self.bounded(async {
            self.lock(&mut c, id).await?;
            sqlx::query(&sql)
                .bind(id.as_str())
                .bind(&ns)
                .bind(lines)
                .execute(&mut c)
                .await
                .map_err(|e| self.err(e))
        })
        .await?;
        *conn = Some(c);
        Ok(())
    }
}

/// Lines joined as a file holds them: one row is one line (a line break a row was edited to
/// hold becomes a space: JSON allows it between tokens, and the row stays one record or one
/// bad line, never several).
fn join(lines: impl Iterator<Item = String>) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend(
            l.bytes()
                .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
        );
        out.push(b'\n');
    }
    out
}

fn parse(bytes: &[u8]) -> std::io::Result<SessionLog> {
    jsonl::read_from(std::io::BufReader::new(bytes))
}

/// Parses the lines [`PgSessions::open`] answered.
pub(crate) fn parse_lines(bytes: &[u8]) -> Result<SessionLog, SessionError> {
    parse(bytes).map_err(|e| SessionError::io("cannot read the session", e))
}

enum Command {
    Line(String),
    Sync(mpsc::SyncSender<Option<String>>),
}

/// The writing end of a session in PostgreSQL: lines go to its thread in order.
#[derive(Debug)]
pub(crate) struct PgWriter {
    tx: Option<mpsc::Sender<Command>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PgWriter {
    /// Queues a line (without its newline).
    pub(crate) fn line(&self, line: &[u8]) -> Result<(), SessionError> {
        let text = String::from_utf8(line.to_vec())
            .map_err(|e| SessionError::io("a session line is not UTF-8", e))?;
        self.send(Command::Line(text))
    }

    fn send(&self, cmd: Command) -> Result<(), SessionError> {
        self.tx
            .as_ref()
            .and_then(|tx| tx.send(cmd).ok())
            .ok_or_else(|| SessionError::Io("the session's writer stopped".into()))
    }

    /// Returns once every line queued before is committed.
    pub(crate) fn sync(&self) -> Result<(), SessionError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(Command::Sync(reply))?;
        match answer.recv_timeout(SYNC_WAIT) {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(SessionError::Io(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(SessionError::Io(format!(
                "the session store confirmed nothing within {} s",
                SYNC_WAIT.as_secs()
            ))),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(SessionError::Io("the session's writer stopped".into()))
            }
        }
    }
}

impl Drop for PgWriter {
    fn drop(&mut self) {
        // Closing the channel ends the thread once what was queued is written; the lock goes
        // with its connection.
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown URL parameter is refused, named, its secrets not shown (the driver only
    /// logged it, so a misspelt `sslmode` went unnoticed); the known ones are taken.
    #[test]
    fn an_unknown_url_parameter_is_refused() {
        let e = PgSessions::new("postgres://ofc:secret@db:5432/ofc?sslmod=require&password=pw")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown parameter `sslmod`"), "{e}");
        assert!(!e.contains("secret") && !e.contains("=pw"), "{e}");
        PgSessions::new(
            "postgresql://ofc@db/ofc?sslmode=verify-full&sslrootcert=/ca.pem&application_name=ofc",
        )
        .unwrap();
        PgSessions::new("postgres://ofc@db/ofc").unwrap();
    }
}
