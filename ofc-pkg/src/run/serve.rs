//! `ofc serve [BLUEPRINT]`: the floor server over sessions (see `runtime::session_server`).
//!
//! One blueprint, many sessions: each session created (`POST /api/v1/sessions`) or resumed
//! over HTTP gets a floor of its own, started from the blueprint exactly as `ofc run` starts
//! one ([`super::start_floor`]: furniture, grants, agents, `@floor-manager`), recording into
//! the project's session store (`.ofc/sessions/`, as `ofc run`; `ofc sessions ls` lists both).
//!
//! A command of its own rather than a mode of `ofc floor serve`: that server hosts the OFC
//! draft's floors, made empty over HTTP and filled with agents by URL, with one join token per
//! floor and no blueprint, furniture or session; this one is a blueprint's, its floors are the
//! blueprint's and its unit is the session (its own token, its log, its resumable stream).
//! Both stand on the same runtime pieces: the floor, sessions, `ofc-net`'s connection bounds,
//! the API errors.
//!
//! Before it listens, the blueprint is checked and its agents resolved and reached as `ofc
//! run` does (a problem is reported with its field, and nothing listens); the project lock is
//! held for as long as it serves, so an `ofc run` in the same project waits its turn.
//! Switchboard agents are refused: their `.switchboard/` beside the blueprint is one per
//! project, not one per session.

use std::sync::Arc;

use anyhow::{Context, Result};
use runtime::session::SessionId;
use runtime::session_server::{
    HostedSession, OpenError, SessionHost, SessionServer, SessionServerSettings, StopHosted,
};

use super::project_dir::{self, ProjectDir};
use super::{RunArgs, StartedFloor, plan, session};
use crate::output::{ExitStatus, Output, UserError};
use crate::supervisor;

/// The environment variable that sets the server token of `ofc serve`.
pub const SERVE_TOKEN_ENV: &str = "OFC_SERVE_TOKEN";

/// Arguments of `ofc serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The blueprint whose sessions are served.
    #[arg(value_name = "BLUEPRINT", default_value = "blueprint.yaml")]
    pub file: std::path::PathBuf,

    /// Serve the named floor NAME (`ofc floors ls`) instead of a blueprint file; each
    /// session's floor applies the changes `ofc floors update` makes as it runs.
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub floor: Option<String>,

    /// Address to listen on. Loopback by default: sessions are private conversations.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3712")]
    pub listen: String,

    /// The most sessions live at once (each one a floor with its agents).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_sessions: usize,

    /// The most event-stream (SSE) subscribers of one session at once.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_subscribers: usize,

    /// The largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024)]
    pub max_body: usize,

    /// The most connections at once (more are answered 503).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections: usize,

    /// Use the cache and the lock only; never the hub.
    #[arg(long)]
    pub offline: bool,

    /// Refuse to change ofc.lock.
    #[arg(long)]
    pub locked: bool,

    /// The deadline of each should-wake call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    pub should_wake_deadline_ms: u64,

    /// The deadline of each respond call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    pub respond_deadline_ms: u64,
}

impl ServeArgs {
    /// The `ofc run` flags each session's floor is started with.
    fn run_args(&self) -> RunArgs {
        RunArgs {
            message: None,
            tui: false,
            file: self.file.clone(),
            offline: self.offline,
            locked: self.locked,
            allow_sdist: false,
            allow_install_scripts: false,
            allow_yanked_rollback: false,
            should_wake_deadline_ms: self.should_wake_deadline_ms,
            respond_deadline_ms: self.respond_deadline_ms,
            switchboard: false,
            session: session::SessionArgs {
                floor: self.floor.clone(),
                ..session::SessionArgs::default()
            },
        }
    }
}

/// Runs `ofc serve`.
pub fn main(args: &ServeArgs, out: &mut Output) -> Result<ExitStatus> {
    for (name, value) in [
        ("--max-sessions", args.max_sessions),
        ("--max-subscribers", args.max_subscribers),
        ("--max-body", args.max_body),
        ("--max-connections", args.max_connections),
    ] {
        if value == 0 {
            return Err(UserError::new(format!("{name} must be at least 1")).into());
        }
    }
    if args.should_wake_deadline_ms == 0 || args.respond_deadline_ms == 0 {
        return Err(UserError::new("deadlines must be at least 1 ms").into());
    }
    if args.floor.is_none() && !args.file.exists() {
        return Err(
            UserError::new(format!("{} does not exist", args.file.display()))
                .hint("name a blueprint: `ofc serve path/to/blueprint.yaml`")
                .into(),
        );
    }
    let loaded = match &args.floor {
        Some(name) => super::named::load(name)?,
        None => plan::load(&args.file).map_err(super::blueprint_error)?,
    };
    plan::say_warnings(out, &loaded.warnings);
    let problems = plan::unsupported(&loaded.blueprint);
    if !problems.is_empty() {
        return Err(super::blueprint_error(plan::report(
            &loaded.path,
            &loaded.doc,
            problems,
        )));
    }
    if super::switchboard::wanted(&loaded.blueprint, false) {
        return Err(UserError::new(format!(
            "{}: ofc serve does not host switchboard agents (their .switchboard/ is one per project, not per session)",
            loaded.path.display()
        ))
        .hint("run this blueprint with `ofc run`, or remove its `type: switchboard` agents")
        .into());
    }
    let project = ProjectDir::open(&loaded.dir)?;
    if let Some(cleaned) = supervisor::clean_after_unfinished_run(&project.root) {
        out.status(&format!("note: {cleaned}"));
    }
    let run_args = args.run_args();
    // Every agent resolved (and pulled) once now: a problem is said before anything listens.
    let mut warnings = Vec::new();
    let planned = super::resolve(&loaded, &run_args, &mut warnings);
    plan::say_warnings(out, &warnings);
    let planned = planned?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let status = rt.block_on(async {
        super::reach::check_reachable(&loaded, &planned).await?;
        drop(planned);
        serve(args, out, loaded, project, run_args).await
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    status
}

async fn serve(
    args: &ServeArgs,
    out: &mut Output,
    loaded: plan::Loaded,
    project: ProjectDir,
    run_args: RunArgs,
) -> Result<ExitStatus> {
    let store = session::store_of(&loaded.dir, args.floor.as_deref())?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| {
            UserError::new(format!("cannot listen on {}: {e}", args.listen))
                .hint("pick another address with `--listen 127.0.0.1:PORT`")
        })?;
    let addr = listener.local_addr()?;
    let loopback = addr.ip().is_loopback();
    if !loopback {
        out.status(&format!(
            "warning: listening on {addr}, which is not loopback: anyone who can reach it and holds a token drives these sessions"
        ));
    }
    let token = match std::env::var(SERVE_TOKEN_ENV) {
        Ok(t) if !t.trim().is_empty() => t.trim().to_owned(),
        _ => runtime::session_server::new_server_token(),
    };
    let mut settings = SessionServerSettings::new(token.clone());
    settings.max_live_sessions = args.max_sessions;
    settings.max_subscribers = args.max_subscribers;
    settings.max_body = args.max_body;
    settings.connections.max_connections = args.max_connections;
    settings.allowed_host_headers = loopback.then(|| {
        ["localhost", "127.0.0.1", "::1"]
            .map(str::to_owned)
            .to_vec()
    });
    let url = format!("http://{addr}");
    // The token in the fragment: a browser never sends it (see `runtime::session_server::web`).
    let fragment = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", &token)
        .finish();
    let browser = format!("{url}/#{fragment}");
    if out.json {
        out.data(
            &serde_json::json!({
                "url": url,
                "server_token": token,
                "browser_url": browser,
                "blueprint": loaded.path.display().to_string(),
                "sessions": store.dir().display().to_string(),
            })
            .to_string(),
        );
    } else {
        out.data(&url);
    }
    out.status(&format!(
        "serving the sessions of {} on {url} (sessions in {}; ctrl-c to stop)",
        loaded.path.display(),
        store.dir().display()
    ));
    out.status(&format!(
        "server token: `Authorization: Bearer {token}` (set {SERVE_TOKEN_ENV} to choose it); the contract: {url}/openapi.json"
    ));
    out.status(&format!("browser view: {browser}"));
    let host = Arc::new(BlueprintHost {
        args: run_args,
        loaded: Arc::new(loaded),
        project: Arc::new(project),
    });
    SessionServer::new(settings, store, host)
        .serve(listener, super::super::commands::floor::shutdown_signal())
        .await
        .context("the session server failed")?;
    out.status("stopped");
    Ok(ExitStatus::Success)
}

/// Starts each session's floor from the blueprint.
struct BlueprintHost {
    args: RunArgs,
    loaded: Arc<plan::Loaded>,
    project: Arc<ProjectDir>,
}

/// What a session's floor holds, stopped when the session closes.
struct Hosted {
    parts: tokio::sync::Mutex<Option<(StartedFloor, session::RunSession)>>,
}

#[async_trait::async_trait]
impl StopHosted for Hosted {
    async fn stop(&self) {
        if let Some((floor, session)) = self.parts.lock().await.take() {
            floor.stop().await;
            drop(session);
        }
    }
}

#[async_trait::async_trait]
impl SessionHost for BlueprintHost {
    async fn open(&self, resume: Option<&SessionId>) -> Result<HostedSession, OpenError> {
        let loaded = Arc::clone(&self.loaded);
        if let Some(id) = resume {
            // Refused as the store says (none, another project's), before anything starts.
            // Off the runtime's workers: a store in PostgreSQL waits on the network.
            let (dir, id) = (loaded.dir.clone(), id.clone());
            let floor = self.args.session.floor.clone();
            tokio::task::spawn_blocking(move || {
                let store = session::store_of(&dir, floor.as_deref())
                    .map_err(|e| OpenError::Start(e.to_string()))?;
                store.read(&id).map(|_| ()).map_err(OpenError::from)
            })
            .await
            .map_err(|e| OpenError::Start(format!("reading the session failed: {e}")))??;
        }
        let mut args = self.args.clone();
        args.session.resume = resume.map(ToString::to_string);
        // Fresh agents for this floor; pulls run their own runtime, on a thread of their own.
        let (tx, rx) = tokio::sync::oneshot::channel();
        {
            let (loaded, args) = (Arc::clone(&loaded), args.clone());
            std::thread::spawn(move || {
                let mut warnings = Vec::new();
                let _ = tx.send(
                    super::resolve(&loaded, &args, &mut warnings).map_err(|e| format!("{e:#}")),
                );
            });
        }
        let planned = rx
            .await
            .map_err(|_| OpenError::Start("the agents' resolution stopped".to_owned()))?
            .map_err(OpenError::Start)?;
        // Off the runtime's workers too (the session's store may be PostgreSQL).
        let (session, mut out) = {
            let (args, loaded) = (args.clone(), Arc::clone(&loaded));
            tokio::task::spawn_blocking(move || {
                let mut out = Output::new(false);
                let session = session::RunSession::open(
                    &args.session,
                    &loaded.path,
                    &loaded.blueprint,
                    &mut out,
                );
                (session, out)
            })
            .await
            .map_err(|e| OpenError::Start(format!("opening the session failed: {e}")))?
        };
        let session = session.map_err(|e| OpenError::Start(format!("{e:#}")))?;
        let run_id = project_dir::run_id();
        let started = super::start_floor(
            &args,
            &mut out,
            &loaded,
            &self.project,
            planned,
            &session,
            &run_id,
        )
        .await
        .map_err(|e| OpenError::Start(format!("{e:#}")))?;
        // A named floor's changes, applied to this session's floor until it closes.
        super::named::watch(super::named::Running {
            floor: started.floor.clone(),
            reload: started.reload.clone(),
            furniture: started.furniture.clone(),
            live: session.live(),
        });
        Ok(HostedSession {
            live: session.live(),
            floor: started.floor.clone(),
            furniture: started.furniture.clone(),
            stop: Box::new(Hosted {
                parts: tokio::sync::Mutex::new(Some((started, session))),
            }),
        })
    }
}
