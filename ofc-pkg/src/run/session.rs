//! `ofc run`'s session: every run records into a session log (see `runtime::session`), and
//! `--resume [ID]` continues one.
//!
//! The store is the project's `.ofc/sessions/` (the project is the blueprint's directory), or
//! `$OFC_SESSIONS_DIR`, or a PostgreSQL database shared by many projects
//! (`$OFC_SESSIONS_URL=postgres://…`); a session of another project is refused there. A resume puts back,
//! without calling any model: the conversation (each agent's next call carries it), each LLM
//! agent's memory summary, the grants and the built-in task boards. It warns when the
//! blueprint changed since the session was recorded, or when an agent of the session is not
//! on the floor now.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use index_schema::wire::Message;
use runtime::furniture::FloorFurniture;
use runtime::llm::LlmAgent;
use runtime::session::state::{self, StateRecorder};
use runtime::session::{LiveSession, Restored, SessionError, SessionId, SessionMeta, SessionStore};
use sha2::{Digest, Sha256};

use crate::output::{Output, UserError};

/// The environment variable that moves the session store out of the project.
pub const SESSIONS_DIR_ENV: &str = "OFC_SESSIONS_DIR";

/// The environment variable that puts the sessions in PostgreSQL.
pub const SESSIONS_URL_ENV: &str = "OFC_SESSIONS_URL";

/// `ofc run`'s session flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// Continue a session of this project (its conversation, the agents' memories, grants and
    /// task boards) instead of starting one; without ID, the most recent. `ofc sessions ls`
    /// lists them.
    #[arg(
        long,
        value_name = "ID",
        num_args = 0..=1,
        default_missing_value = "",
        value_parser = resume_id
    )]
    pub resume: Option<String>,
    /// Run the named floor NAME (`ofc floors ls`) instead of a blueprint file: its stored
    /// blueprint, with the changes `ofc floors update` makes applied as it runs.
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub floor: Option<String>,
}

/// `--resume`'s value: a session id, or nothing (the newest). Checked as the command line is
/// read, so that a message given after `--resume` is refused before anything starts.
fn resume_id(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Ok(String::new());
    }
    SessionId::parse(text)
        .map(|id| id.to_string())
        .map_err(|e| {
            format!(
                "{e}; to resume the newest session with a message, put the message first: \
             `ofc run \"MESSAGE\" --resume`"
            )
        })
}

/// The session store of the project in `project_dir`, for the named floor `floor` only when
/// one is given (another floor's session, or one of no floor, is then refused as another
/// project's: `ofc serve --floor X` and `ofc run --floor X --resume` never take up a
/// session of another floor).
pub fn store_of(project_dir: &Path, floor: Option<&str>) -> Result<SessionStore> {
    let store = store_for(project_dir)?;
    Ok(match floor {
        Some(f) => store.for_floor(f),
        None => store,
    })
}

/// The session store of the project in `project_dir`.
pub fn store_for(project_dir: &Path) -> Result<SessionStore> {
    let project = std::fs::canonicalize(project_dir).map_err(|e| {
        UserError::new(format!(
            "cannot read the project {}: {e}",
            project_dir.display()
        ))
    })?;
    let dir = std::env::var_os(SESSIONS_DIR_ENV).filter(|d| !d.is_empty());
    let project_name = project.display().to_string();
    if let Some(url) = std::env::var_os(SESSIONS_URL_ENV).filter(|u| !u.is_empty()) {
        if dir.is_some() {
            return Err(UserError::new(format!(
                "both {SESSIONS_DIR_ENV} and {SESSIONS_URL_ENV} are set: sessions go to one store"
            ))
            .hint(format!(
                "unset one ({SESSIONS_URL_ENV} for PostgreSQL, {SESSIONS_DIR_ENV} for a directory)"
            ))
            .into());
        }
        let url = url
            .to_str()
            .ok_or_else(|| UserError::new(format!("{SESSIONS_URL_ENV} is not valid UTF-8")))?;
        return SessionStore::postgres(url, project_name).map_err(|e| {
            UserError::new(format!("{SESSIONS_URL_ENV}: {e}"))
                .hint("e.g. OFC_SESSIONS_URL=postgres://ofc:secret@db.internal:5432/ofc")
                .into()
        });
    }
    let dir = dir.map_or_else(|| project.join(".ofc").join("sessions"), PathBuf::from);
    Ok(SessionStore::new(dir, project_name))
}

/// A session error for a person: what, and what to do.
pub fn user_error(e: SessionError, store: &SessionStore) -> anyhow::Error {
    let hint = match &e {
        SessionError::BadId(_) | SessionError::NotFound { .. } => format!(
            "`ofc sessions ls` lists the sessions of this project ({})",
            store.dir().display()
        ),
        SessionError::Foreign { .. } => {
            "a session is only opened from the project that recorded it".to_owned()
        }
        SessionError::Busy(_) => "another `ofc run` has it open: end that one first".to_owned(),
        SessionError::Exists(_) | SessionError::Io(_) => {
            format!("the sessions are in {}", store.dir().display())
        }
    };
    UserError::new(e.to_string()).hint(hint).into()
}

/// The session of one `ofc run`.
#[derive(Debug)]
pub struct RunSession {
    live: LiveSession,
    restored: Restored,
}

fn sha256_file(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| hex::encode(Sha256::digest(&b)))
        .unwrap_or_default()
}

impl RunSession {
    /// Starts a session for the blueprint at `blueprint` (`parsed`), or resumes the one
    /// `--resume` names; says which on stderr, with what a resume found wrong in the log.
    pub fn open(
        args: &SessionArgs,
        blueprint: &Path,
        parsed: &index_schema::blueprint::Blueprint,
        out: &mut Output,
    ) -> Result<Self> {
        let name = parsed.name.as_deref();
        let project_dir = blueprint.parent().unwrap_or(Path::new("."));
        let project_dir = if project_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            project_dir
        };
        let store = store_of(project_dir, args.floor.as_deref())?;
        let path = std::fs::canonicalize(blueprint).unwrap_or_else(|_| blueprint.to_owned());
        let hash = sha256_file(&path);
        let Some(wanted) = &args.resume else {
            let meta = SessionMeta {
                cwd: std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
                blueprint_path: path.display().to_string(),
                blueprint_name: name.unwrap_or_default().to_owned(),
                blueprint_hash: hash,
                ofc_version: env!("CARGO_PKG_VERSION").to_owned(),
                floor: args.floor.clone(),
                ..SessionMeta::default()
            };
            let file = store.create(meta).map_err(|e| user_error(e, &store))?;
            out.status(&format!(
                "session {} (continue it with `ofc run --resume {}`)",
                file.id(),
                file.id()
            ));
            return Ok(Self {
                live: LiveSession::new(file),
                restored: Restored::default(),
            });
        };
        let id = if wanted.trim().is_empty() {
            store
                .newest()
                .map_err(|e| user_error(e, &store))?
                .ok_or_else(|| {
                    UserError::new(format!(
                        "no session to resume: this project has none in {}",
                        store.dir().display()
                    ))
                    .hint("`ofc run` without --resume starts one")
                })?
        } else {
            SessionId::parse(wanted).map_err(|e| user_error(e, &store))?
        };
        let (file, log) = store.resume(&id).map_err(|e| user_error(e, &store))?;
        for w in log.warnings(file.path()) {
            out.status(&format!("warning: {w}"));
        }
        let meta = log.meta.clone().unwrap_or_default();
        if !meta.blueprint_hash.is_empty() && meta.blueprint_hash != hash {
            out.status(&format!(
                "warning: {} changed since session {id} was recorded; it goes on with the agents the blueprint has now",
                path.display()
            ));
        }
        if let Some(was) = Some(meta.blueprint_name.as_str()).filter(|n| !n.is_empty())
            && name.is_some_and(|n| n != was)
        {
            out.status(&format!(
                "warning: session {id} was recorded with the blueprint `{was}`, this one is `{}`",
                name.unwrap_or_default()
            ));
        }
        let restored = Restored::from_log(&log);
        out.status(&format!(
            "resuming session {id}: {} messages, {} events",
            restored.messages.len(),
            log.events.len()
        ));
        Ok(Self {
            live: LiveSession::resumed(file, &log),
            restored,
        })
    }

    /// The session, for the floor.
    pub fn live(&self) -> LiveSession {
        self.live.clone()
    }

    /// The conversation the floor continues.
    pub fn history(&self) -> Vec<Message> {
        self.restored.messages.clone()
    }

    /// The rooms of `floor`, recorded into the session, with those the session left open
    /// reopened (and said).
    pub async fn rooms(
        &self,
        floor: &runtime::floor::Floor,
        settings: runtime::floor::FloorSettings,
        out: &mut Output,
    ) -> runtime::rooms::Rooms {
        let rooms = runtime::rooms::Rooms::new(floor.clone(), settings, Some(self.live()));
        for w in rooms.restore(self.restored.rooms.clone()).await {
            out.status(&format!("warning: {w}"));
        }
        for (name, members) in rooms.list() {
            let names: Vec<String> = members.iter().map(ToString::to_string).collect();
            out.status(&format!("room {name} is open again: {}", names.join(", ")));
        }
        rooms
    }

    /// Puts the grants and task boards back (before the agents are given their furniture),
    /// and records them into the session whenever a turn changed them.
    pub fn furniture(&self, furniture: Option<&Arc<FloorFurniture>>, out: &mut Output) {
        let Some(f) = furniture else {
            return;
        };
        for w in state::restore(f, &self.restored) {
            out.status(&format!("warning: {w}"));
        }
        let recorder = Mutex::new(StateRecorder::new(self.live.clone(), &self.restored));
        let f = Arc::clone(f);
        self.live.on_turn_end(Arc::new(move || {
            recorder
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(&f);
        }));
    }

    /// Gives each LLM agent its memory summary back, has its new ones recorded, and warns
    /// about the agents of the session that are not on the floor now.
    pub fn agents<'a>(
        &self,
        llm: &[(String, Arc<LlmAgent>)],
        present: impl IntoIterator<Item = &'a str>,
        out: &mut Output,
    ) {
        let present: Vec<&str> = present.into_iter().collect();
        for (handle, agent) in llm {
            if let Some(c) = self.restored.compactions.get(handle) {
                agent.restore_summary(&c.through, &c.summary);
            }
            let live = self.live.clone();
            let me = handle.clone();
            agent.on_compaction(Arc::new(move |through, text| {
                live.record_compaction(&me, through, text);
            }));
        }
        let gone: Vec<&str> = self
            .restored
            .roster
            .iter()
            .filter(|h| !present.contains(&h.as_str()) && *h != "@floor-manager")
            .map(String::as_str)
            .collect();
        if !gone.is_empty() {
            out.status(&format!(
                "warning: {} took part in this session but {} not on the floor now",
                gone.join(", "),
                if gone.len() == 1 { "is" } else { "are" }
            ));
        }
    }
}

impl Drop for RunSession {
    /// A session that stopped recording (a full disk) is said when the run ends: the floor
    /// went on, but a resume will not have what came after.
    fn drop(&mut self) {
        if let Some(why) = self.live.failure() {
            Output::new(false).status(&format!(
                "warning: session {} stopped recording ({why}); a resume continues from before that",
                self.live.id()
            ));
        }
    }
}
