//! A project's sessions: one directory, one `<uuid>.jsonl` file per session — or one
//! PostgreSQL database shared by many projects ([`super::pg`]), where a session holds the same
//! lines and belongs to its project the same way.
//!
//! A store reads only its own directory, and only files whose name is a session id in its
//! canonical form; an id is parsed ([`SessionId::parse`]) before any path is built from it.
//! A session whose meta names another project is refused ([`SessionError::Foreign`]) even if
//! its file was copied into this directory.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::jsonl::{self, SessionFile, SessionLog};
use super::pg::PgSessions;
use super::{SessionError, SessionId, SessionMeta};

/// A directory of sessions belonging to one project (or the project's sessions in a
/// PostgreSQL database).
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    project: String,
    pg: Option<PgSessions>,
    /// The named floor it is opened for ([`SessionStore::for_floor`]).
    floor: Option<String>,
}

/// Where a session's events can be read back from.
#[derive(Debug, Clone)]
pub enum LogSource {
    /// Its file.
    File(PathBuf),
    /// Its lines in PostgreSQL: the store, the session, its project.
    Pg(PgSessions, SessionId, String),
}

impl LogSource {
    /// Reads the session.
    pub fn read(&self) -> Result<SessionLog, SessionError> {
        match self {
            Self::File(path) => jsonl::read(path),
            Self::Pg(store, id, project) => store.read(id, project),
        }
    }
}

/// What a session's store says of it without reading it, to tell whether it changed since it
/// was read: a file's length and time of change; in PostgreSQL, its lines' count and last
/// number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStamp(u64, u128);

impl LogSource {
    /// The session's [`LogStamp`] now.
    pub fn stamp(&self) -> Result<LogStamp, SessionError> {
        match self {
            Self::File(path) => {
                let meta =
                    std::fs::metadata(path).map_err(|e| SessionError::io(path.display(), e))?;
                let changed = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                Ok(LogStamp(meta.len(), changed))
            }
            Self::Pg(store, id, project) => {
                let (count, last) = store.stamp(id, project)?;
                Ok(LogStamp(count, u128::from(last)))
            }
        }
    }
}

impl From<PathBuf> for LogSource {
    fn from(path: PathBuf) -> Self {
        Self::File(path)
    }
}

/// One session as `ofc sessions ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// Its id.
    pub id: SessionId,
    /// When it was created (its meta), RFC 3339.
    pub created_at: Option<String>,
    /// The time of its newest event.
    pub last_activity: Option<String>,
    /// How many events it holds.
    pub event_count: usize,
    /// The blueprint's name.
    pub blueprint: Option<String>,
    /// The blueprint file.
    pub blueprint_path: Option<String>,
    /// Lines skipped when it was read (see `ofc sessions show`).
    pub problems: usize,
    /// Whether its last line was cut by a crash.
    pub torn: bool,
}

impl SessionInfo {
    fn of(id: SessionId, log: &SessionLog) -> Self {
        let meta = log.meta.clone().unwrap_or_default();
        let some = |s: String| (!s.is_empty()).then_some(s);
        Self {
            id,
            created_at: some(meta.created_at),
            last_activity: log.events.last().map(|e| e.time.clone()),
            event_count: log.events.len(),
            blueprint: some(meta.blueprint_name),
            blueprint_path: some(meta.blueprint_path),
            problems: log.problems.len(),
            torn: log.torn.is_some(),
        }
    }
}

impl SessionStore {
    /// The store in `dir` for the project `project` (its canonical directory).
    pub fn new(dir: impl Into<PathBuf>, project: impl Into<String>) -> Self {
        Self {
            dir: dir.into(),
            project: project.into(),
            pg: None,
            floor: None,
        }
    }

    /// The sessions of `project` in the PostgreSQL database at `url`.
    pub fn postgres(url: &str, project: impl Into<String>) -> Result<Self, SessionError> {
        let pg = PgSessions::new(url)?;
        Ok(Self {
            dir: PathBuf::from(pg.shown()),
            project: project.into(),
            pg: Some(pg),
            floor: None,
        })
    }

    /// The same store, for the named floor `floor` only (`ofc serve --floor X`): a session
    /// of another floor, or of none, is refused as another project's is
    /// ([`SessionError::Foreign`]: not listed, read, continued nor removed), and a session it
    /// creates records the floor.
    pub fn for_floor(mut self, floor: impl Into<String>) -> Self {
        self.floor = Some(floor.into());
        self
    }

    /// The named floor it is for, if any.
    pub fn floor(&self) -> Option<&str> {
        self.floor.as_deref()
    }

    /// Its directory (for a PostgreSQL store, its URL without the password).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a session's events can be read back from.
    pub fn source(&self, id: &SessionId) -> LogSource {
        match &self.pg {
            Some(pg) => LogSource::Pg(pg.clone(), id.clone(), self.project.clone()),
            None => LogSource::File(self.path(id)),
        }
    }

    /// Its project.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The file of a session (in PostgreSQL: the store's URL and the id).
    pub fn path(&self, id: &SessionId) -> PathBuf {
        match &self.pg {
            Some(pg) => pg.place_of(id),
            None => self.dir.join(format!("{id}.jsonl")),
        }
    }

    fn place(&self) -> String {
        self.dir.display().to_string()
    }

    /// Creates a new session (and the directory, 0700), writing its meta with this store's
    /// project.
    pub fn create(&self, mut meta: SessionMeta) -> Result<SessionFile, SessionError> {
        if let Some(floor) = &self.floor {
            meta.floor = Some(floor.clone());
        }
        if let Some(pg) = &self.pg {
            meta.project = Some(self.project.clone());
            if meta.created_at.is_empty() {
                meta.created_at = super::now_rfc3339();
            }
            return SessionFile::create_pg(pg, SessionId::random(), &self.project, &meta);
        }
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&self.dir)
            .map_err(|e| SessionError::io(self.dir.display(), e))?;
        meta.project = Some(self.project.clone());
        if meta.created_at.is_empty() {
            meta.created_at = super::now_rfc3339();
        }
        let id = SessionId::random();
        SessionFile::create(&self.path(&id), id, &meta)
    }

    fn check_owner(&self, id: &SessionId, log: &SessionLog) -> Result<(), SessionError> {
        let meta = log.meta.as_ref();
        match meta.and_then(|m| m.project.as_deref()) {
            Some(owner) if owner != self.project => {
                return Err(SessionError::Foreign {
                    id: id.clone(),
                    owner: owner.to_owned(),
                    here: self.project.clone(),
                });
            }
            _ => {}
        }
        let Some(floor) = &self.floor else {
            return Ok(());
        };
        match meta.and_then(|m| m.floor.as_deref()) {
            Some(theirs) if theirs == floor => Ok(()),
            theirs => Err(SessionError::Foreign {
                id: id.clone(),
                owner: theirs.map_or_else(
                    || "no named floor".to_owned(),
                    |f| format!("the floor `{}`", super::shown(f)),
                ),
                here: format!("the floor `{}`", super::shown(floor)),
            }),
        }
    }

    /// The file of session `id`: a regular file, not a link (as [`Self::list`] sees it: a
    /// link in the store could make a session of any file its owner may write).
    fn existing(&self, id: &SessionId) -> Result<PathBuf, SessionError> {
        let path = self.path(id);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            Ok(path)
        } else {
            Err(SessionError::NotFound {
                id: id.clone(),
                place: self.place(),
            })
        }
    }

    /// Reads a session of this project.
    pub fn read(&self, id: &SessionId) -> Result<SessionLog, SessionError> {
        if let Some(pg) = &self.pg {
            let log = pg.read(id, &self.project)?;
            self.check_owner(id, &log)?;
            return Ok(log);
        }
        let path = self.existing(id)?;
        let log = jsonl::read(&path)?;
        self.check_owner(id, &log)?;
        Ok(log)
    }

    /// Opens a session of this project to continue it (see [`SessionFile::resume`]).
    pub fn resume(&self, id: &SessionId) -> Result<(SessionFile, SessionLog), SessionError> {
        if let Some(pg) = &self.pg {
            return SessionFile::resume_pg(pg, id.clone(), &self.project, |log| {
                self.check_owner(id, log)
            });
        }
        let path = self.existing(id)?;
        SessionFile::resume(&path, id.clone(), |log| self.check_owner(id, log))
    }

    /// Every session of this project, the most recently active first (sessions without
    /// events last, by id). Files that are not sessions are left alone; sessions of another
    /// project are not listed.
    pub fn list(&self) -> Result<Vec<SessionInfo>, SessionError> {
        let mut out = Vec::new();
        if let Some(pg) = &self.pg {
            for id in pg.ids(&self.project)? {
                let log = pg.read(&id, &self.project)?;
                if self.check_owner(&id, &log).is_ok() {
                    out.push(SessionInfo::of(id, &log));
                }
            }
            sort(&mut out);
            return Ok(out);
        }
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SessionError::io(self.dir.display(), e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| SessionError::io(self.dir.display(), e))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            let Ok(id) = SessionId::parse(stem) else {
                continue;
            };
            if id.as_str() != stem || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let log = jsonl::read(&entry.path())?;
            if self.check_owner(&id, &log).is_err() {
                continue;
            }
            out.push(SessionInfo::of(id, &log));
        }
        sort(&mut out);
        Ok(out)
    }

    /// The info of one session.
    pub fn info(&self, id: &SessionId) -> Result<(SessionInfo, SessionLog), SessionError> {
        let log = self.read(id)?;
        Ok((SessionInfo::of(id.clone(), &log), log))
    }

    /// The most recently active session of this project.
    pub fn newest(&self) -> Result<Option<SessionId>, SessionError> {
        Ok(self.list()?.into_iter().next().map(|i| i.id))
    }

    /// Removes a session (with the cut lines set aside from it). Refused while a process
    /// has it open.
    pub fn remove(&self, id: &SessionId) -> Result<(), SessionError> {
        if let Some(pg) = &self.pg {
            self.read(id)?;
            return pg.remove(id, &self.project);
        }
        let path = self.existing(id)?;
        let log = jsonl::read(&path)?;
        self.check_owner(id, &log)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .open(&path)
            .map_err(|e| SessionError::io(path.display(), e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(SessionError::Busy(id.clone())),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(SessionError::io(path.display(), e));
            }
        }
        let torn_prefix = format!("{id}.jsonl.torn-");
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(&torn_prefix))
                {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        std::fs::remove_file(&path).map_err(|e| SessionError::io(path.display(), e))
    }
}

/// The most recently active first (sessions without events last, by id).
fn sort(sessions: &mut [SessionInfo]) {
    sessions.sort_by(|a, b| match (&a.last_activity, &b.last_activity) {
        (Some(x), Some(y)) => y.cmp(x).then_with(|| a.id.cmp(&b.id)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.id.cmp(&b.id),
    });
}
