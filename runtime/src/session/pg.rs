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
//! The URL's password is never shown: errors and `ofc sessions` name the store by the URL
//! without it.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::PgConnection;

use super::jsonl::{self, SessionLog};
use super::{SessionError, SessionId};

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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

/// A PostgreSQL database holding sessions.
#[derive(Clone)]
pub struct PgSessions {
    url: String,
    shown: String,
}

impl std::fmt::Debug for PgSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSessions")
            .field("url", &self.shown)
            .finish()
    }
}

/// `url` without its password.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
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
        Ok(Self {
            url: url.to_owned(),
            shown: redact(url),
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
        let mut c = tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect(&self.url))
            .await
            .map_err(|_| self.err("no connection within 10 s"))?
            .map_err(|e| self.err(e))?;
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
        Ok(c)
    }

    async fn lines(&self, c: &mut PgConnection, id: &SessionId) -> Result<Vec<u8>, SessionError> {
        let exists: Option<(String,)> = sqlx::query_as("SELECT id FROM ofc_sessions WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *c)
            .await
            .map_err(|e| self.err(e))?;
        if exists.is_none() {
            return Err(SessionError::NotFound {
                id: id.clone(),
                place: self.shown.clone(),
            });
        }
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT line FROM ofc_session_lines WHERE session_id = $1 ORDER BY n")
                .bind(id.as_str())
                .fetch_all(&mut *c)
                .await
                .map_err(|e| self.err(e))?;
        Ok(join(rows.into_iter().map(|(l,)| l)))
    }

    /// Reads a session (any project's: the store checks the owner).
    pub fn read(&self, id: &SessionId) -> Result<SessionLog, SessionError> {
        let bytes = on_own_thread(|| async move {
            let mut c = self.connect().await?;
            let lines = self.lines(&mut c, id).await;
            let _ = c.close().await;
            lines
        })?;
        parse(&bytes).map_err(|e| self.err(e))
    }

    /// The ids of `project`'s sessions.
    pub fn ids(&self, project: &str) -> Result<Vec<SessionId>, SessionError> {
        let rows: Vec<(String,)> = on_own_thread(|| async move {
            let mut c = self.connect().await?;
            let rows = sqlx::query_as("SELECT id FROM ofc_sessions WHERE project = $1")
                .bind(project)
                .fetch_all(&mut c)
                .await
                .map_err(|e| self.err(e));
            let _ = c.close().await;
            rows
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id,)| SessionId::parse(&id).ok())
            .collect())
    }

    /// Removes a session; refused while a writer holds it.
    pub fn remove(&self, id: &SessionId) -> Result<(), SessionError> {
        on_own_thread(|| {
            async move {
                let mut c = self.connect().await?;
                let (got,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
                    .bind(lock_key(id))
                    .fetch_one(&mut c)
                    .await
                    .map_err(|e| self.err(e))?;
                if !got {
                    let _ = c.close().await;
                    return Err(SessionError::Busy(id.clone()));
                }
                let done = sqlx::query("DELETE FROM ofc_sessions WHERE id = $1")
                    .bind(id.as_str())
                    .execute(&mut c)
                    .await
                    .map_err(|e| self.err(e));
                // Closing the connection releases the lock.
                let _ = c.close().await;
                done.map(|_| ())
            }
        })
    }

    /// Opens a session for writing: creates it for `project` (`create`), or reads it to
    /// continue. Answers the writer (holding the session's lock), the lines so far and the
    /// number the next line gets.
    pub(crate) fn open(
        &self,
        id: &SessionId,
        create: Option<&str>,
    ) -> Result<(PgWriter, Vec<u8>, i64), SessionError> {
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let (tx, rx) = mpsc::channel::<Command>();
        let (store, id2, create) = (self.clone(), id.clone(), create.map(str::to_owned));
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
                rt.block_on(store.write_loop(id2, create, ready_tx, rx));
            })
            .map_err(|e| self.err(e))?;
        match ready_rx.recv() {
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

    async fn start_writing(
        &self,
        c: &mut PgConnection,
        id: &SessionId,
        create: Option<&str>,
    ) -> Result<(Vec<u8>, i64), SessionError> {
        let (got,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
            .bind(lock_key(id))
            .fetch_one(&mut *c)
            .await
            .map_err(|e| self.err(e))?;
        if !got {
            return Err(SessionError::Busy(id.clone()));
        }
        if let Some(project) = create {
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
        let lines = self.lines(c, id).await?;
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
        create: Option<String>,
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
        let mut next = match self.start_writing(&mut c, &id, create.as_deref()).await {
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
                let ns: Vec<i64> = (next..next + lines.len() as i64).collect();
                let r = sqlx::query(
                    "INSERT INTO ofc_session_lines (session_id, n, line) \
                     SELECT $1, n, line FROM UNNEST($2::BIGINT[], $3::TEXT[]) AS t (n, line)",
                )
                .bind(id.as_str())
                .bind(&ns)
                .bind(&lines)
                .execute(&mut c)
                .await;
                match r {
                    Ok(_) => next += lines.len() as i64,
                    Err(e) => failed = Some(self.err(e).to_string()),
                }
            }
            for reply in syncs {
                let _ = reply.send(failed.clone());
            }
        }
        let _ = c.close().await;
    }
}

/// Lines joined as a file holds them.
fn join(lines: impl Iterator<Item = String>) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.as_bytes());
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
        match answer.recv() {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(SessionError::Io(e)),
            Err(_) => Err(SessionError::Io("the session's writer stopped".into())),
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
