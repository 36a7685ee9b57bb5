//! `ofc run [MESSAGE] [-f blueprint.yaml]`: a blueprint becomes a live floor.
//!
//! 1. **Load and check, start nothing**: the blueprint is parsed and validated; features
//!    this build cannot provide (`filesystem` workstations) are refused with the blueprint's `file:line:col: field`; hub agents are
//!    pulled (through the cache and `ofc.lock`; with a lock and a warm cache there is no
//!    network request), local agent files read, commands looked up, remote endpoints asked for
//!    `/ofc/info`. Every problem is reported at once.
//! 2. **Start**: the project lock `.ofc/run.lock` is taken (a second run in the same project
//!    fails at once), a supervisor is started (see [`supervisor`]), the furniture is started
//!    (MCP servers listed, grants decided; see `runtime::furniture`) and given to the LLM
//!    agents, and every process agent is started concurrently, each under its own startup
//!    deadline.
//! 3. **Run**: the floor opens with its transcript in `.ofc/logs/<run>.jsonl`; one turn
//!    (MESSAGE) or an interactive session follows (`frontend`; full-screen with `--tui`:
//!    `tui`).
//! 4. **Stop**: the floor closes, which stops every agent; the supervisor stops anything left.

pub mod agents;
pub mod exit;
pub mod floor_manager;
mod frontend;
pub(crate) mod furniture;
mod named;
pub mod plan;
pub(crate) mod project_dir;
mod reach;
pub mod serve;
pub(crate) mod session;
pub mod switchboard;
mod tui;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use index_schema::blueprint::{AgentEntry, InlineAgentType};
use index_schema::name::AgentHandle;
use index_schema::{Diagnostics, FieldPath};
use runtime::agent::{AcpAgent, Agent, HttpAgent, ProcessAgent, SpawnHook};
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::furniture::FloorFurniture;
use runtime::llm::RosterEntry;
use runtime::{Activation, Handle};

use crate::config::Paths;
use crate::container::ContainerAgent;
use crate::hub::Hub;
use crate::output::{Output, UserError};
use crate::pull::{self, PullOptions, Request};
use crate::supervisor;
use furniture::start_furniture;
use plan::{Kind, Planned};
use project_dir::ProjectDir;
use reach::REMOTE_CHECK;

/// Arguments of `ofc run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Post this message, run its turn to the end and exit (the exit code says how the turn
    /// ended: 0 answered, 3 no agent responded, 4 a guard stopped it, 5 an agent failed,
    /// 130 cancelled). Without it, an interactive session.
    #[arg(value_name = "MESSAGE")]
    pub message: Option<String>,

    /// A full-screen interactive session (scrollback, agent list, input line) instead of the
    /// line mode. Needs a terminal on stdin and stdout; not with MESSAGE or --json.
    #[arg(long, conflicts_with = "message")]
    pub tui: bool,

    /// The blueprint.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "PATH",
        default_value = "blueprint.yaml"
    )]
    pub file: PathBuf,

    /// Use the cache and the lock only; never the hub.
    #[arg(long)]
    pub offline: bool,

    /// Refuse to change ofc.lock.
    #[arg(long)]
    pub locked: bool,

    /// pip agents: allow source distributions (building one runs the package's code).
    #[arg(long)]
    pub allow_sdist: bool,

    /// npm agents: run the packages' install scripts (they run the package's code).
    #[arg(long)]
    pub allow_install_scripts: bool,

    /// Hub agents: take an older version when the one pulled before is now marked yanked
    /// (the flag is not signed; by default this is refused as a possible rollback).
    #[arg(long)]
    pub allow_yanked_rollback: bool,

    /// The deadline of each should-wake call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    pub should_wake_deadline_ms: u64,

    /// The deadline of each respond call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    pub respond_deadline_ms: u64,

    /// Keep a Switchboard (seed 004) beside the blueprint even when it has no `type:
    /// switchboard` agent: `.switchboard/` and its MCP server on 127.0.0.1, so that agents in
    /// editors can join the floor.
    #[arg(long)]
    pub switchboard: bool,
    #[command(flatten)]
    pub session: session::SessionArgs,
}

/// Runs `ofc run` and maps its outcome to the process exit code.
pub fn main(args: &RunArgs, out: &mut Output) -> ExitCode {
    // `--json` is global: clap cannot see the conflict from here.
    if args.tui && out.json {
        out.error(
            &UserError::new("the argument '--tui' cannot be used with '--json'")
                .hint("--tui is for a person at a terminal; --json is for programs")
                .into(),
        );
        return ExitCode::from(exit::USAGE);
    }
    if args.tui && !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        out.error(
            &UserError::new("--tui needs a terminal: stdin and stdout must both be one")
                .hint("run it in a terminal; without one, use the line mode (drop --tui) or --json")
                .into(),
        );
        return ExitCode::from(exit::USAGE);
    }
    match run(args, out) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            out.error(&e);
            ExitCode::from(exit::FAILURE)
        }
    }
}

fn blueprint_error(text: String) -> anyhow::Error {
    UserError::new(format!("the blueprint cannot run:\n{text}"))
        .hint("fix the fields named above; nothing was started")
        .into()
}

fn run(args: &RunArgs, out: &mut Output) -> Result<u8> {
    let started = Instant::now();
    if args.should_wake_deadline_ms == 0 || args.respond_deadline_ms == 0 {
        return Err(UserError::new("deadlines must be at least 1 ms").into());
    }
    if args.session.floor.is_none() && !args.file.exists() {
        return Err(
            UserError::new(format!("{} does not exist", args.file.display()))
                .hint("write a blueprint.yaml (`ofc init --blueprint`) or name one with `-f PATH`")
                .into(),
        );
    }
    let loaded = match &args.session.floor {
        Some(name) => named::load(name)?,
        None => plan::load(&args.file).map_err(blueprint_error)?,
    };
    plan::say_warnings(out, &loaded.warnings);
    let problems = plan::unsupported(&loaded.blueprint);
    if !problems.is_empty() {
        return Err(blueprint_error(plan::report(
            &loaded.path,
            &loaded.doc,
            problems,
        )));
    }
    // The project lock comes before the pulls: they write the project's ofc.lock.
    let project = ProjectDir::open(&loaded.dir)?;
    if let Some(cleaned) = supervisor::clean_after_unfinished_run(&project.root) {
        out.status(&format!("note: {cleaned}"));
    }
    let mut file_warnings = Vec::new();
    let planned = resolve(&loaded, args, &mut file_warnings);
    plan::say_warnings(out, &file_warnings);
    let planned = planned?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let code = rt.block_on(run_floor(args, out, &loaded, &project, planned, started));
    // The stdin reader is a blocking thread that cannot be interrupted; waiting for it
    // would keep `ofc` alive until the next line of input.
    rt.shutdown_background();
    code
}

/// Resolves every agent entry. Every problem is collected and reported with its field; what
/// local agent files have that ofc does not act on goes to `warnings`.
fn resolve(
    loaded: &plan::Loaded,
    args: &RunArgs,
    warnings: &mut Vec<String>,
) -> Result<Vec<Planned>> {
    let bp = &loaded.blueprint;
    let root = FieldPath::root();
    let mut diags = Diagnostics::default();
    let mut planned = Vec::new();
    let lockfile = loaded.dir.join(index_schema::lockfile::LOCKFILE_NAME);
    let mut hub_ctx: Option<(Paths, Hub)> = None;
    for (i, entry) in bp.agents.iter().enumerate() {
        let field = root.key("agents").index(i);
        let name = format!("agents[{i}]");
        let resolved: Result<(Handle, Activation, Kind), (FieldPath, String)> = match entry {
            AgentEntry::Inline(a) => {
                let handle = Handle::new(&format!("@{}", a.id.name()))
                    .map_err(|e| (field.key("id"), e.to_string()));
                handle.and_then(|h| match a.agent_type() {
                    InlineAgentType::Llm => {
                        agents::llm_agent(a, bp.defaults.as_ref(), Some(&loaded.dir))
                            .map(|agent| {
                                // `defaults.activation` applies to LLM agents too.
                                let act = match agent.activation() {
                                    index_schema::wire::Activation::Always => Activation::Always,
                                    _ => Activation::Mention,
                                };
                                (h, act, Kind::Llm(agent))
                            })
                            .map_err(|e| (field.key(agents::llm_error_field(&e)), e.to_string()))
                    }
                    InlineAgentType::Acp => plan::acp_agent(a, bp, &loaded.dir, &field),
                    InlineAgentType::Switchboard => Ok((
                        h,
                        Activation::Mention,
                        Kind::Switchboard(plan::FileAgent {
                            role: a.role,
                            team: a.team.clone(),
                            persona: a.persona.clone(),
                        }),
                    )),
                })
            }
            AgentEntry::Local(path) => {
                let file = loaded.dir.join(path);
                let dir = file
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| loaded.dir.clone());
                plan::from_agent_yaml(&file, &dir, warnings).map_err(|e| (field.clone(), e))
            }
            AgentEntry::Hub(reference) => {
                let ctx = match &hub_ctx {
                    Some(c) => Ok(c.clone()),
                    None => Paths::from_env()
                        .and_then(|p| Hub::from_env(&p).map(|h| (p, h)))
                        .map_err(|e| (field.clone(), format!("{e:#}"))),
                };
                ctx.and_then(|(paths, hub)| {
                    hub_ctx = Some((paths.clone(), hub.clone()));
                    let opts = pull_options(args, &lockfile).map_err(|e| (field.clone(), e))?;
                    pull_hub_agent(&paths, &hub, reference, &opts)
                        .map(|(h, a, k, _)| (h, a, k))
                        .map_err(|e| (field.clone(), e))
                })
            }
        };
        match resolved {
            Ok((handle, activation, kind)) => {
                // An unreachable model endpoint is blamed on the field that names it.
                let blame = match entry {
                    AgentEntry::Inline(a) if a.endpoint.is_some() => field.key("endpoint"),
                    AgentEntry::Inline(_)
                        if bp.defaults.as_ref().is_some_and(|d| d.endpoint.is_some()) =>
                    {
                        root.key("defaults").key("endpoint")
                    }
                    _ => field.clone(),
                };
                planned.push(Planned {
                    handle,
                    activation,
                    kind,
                    field: name,
                    blame,
                })
            }
            Err((path, message)) => diags.push(path, message),
        }
    }
    if diags.is_empty() {
        let ids: Vec<AgentHandle> = planned
            .iter()
            .filter_map(|p| {
                let name = p.handle.as_str();
                AgentHandle::new(name.strip_prefix('@').unwrap_or(name)).ok()
            })
            .collect();
        if let Err(d) = bp.check_resolved(&ids) {
            diags.extend(d);
        }
    }
    if planned.is_empty() && diags.is_empty() {
        diags.push(root.key("agents"), "the blueprint has no agents");
    }
    if !diags.is_empty() {
        return Err(blueprint_error(plan::report(
            &loaded.path,
            &loaded.doc,
            diags,
        )));
    }
    Ok(planned)
}

/// How `ofc run` pulls hub agents: its flags, the project's lockfile, no progress bars.
fn pull_options(args: &RunArgs, lockfile: &Path) -> Result<PullOptions, String> {
    Ok(PullOptions {
        offline: args.offline,
        locked: args.locked,
        lockfile: Some(lockfile.to_path_buf()),
        limits: pull::limits_from_env().map_err(|e| e.to_string())?,
        progress: false,
        allow_sdist: args.allow_sdist,
        allow_install_scripts: args.allow_install_scripts,
        allow_yanked_rollback: args.allow_yanked_rollback,
    })
}

/// Pulls one hub agent (through the cache and the lockfile, verified as every pull is) and
/// says how it runs. Blocking: it runs its own async runtime.
pub(crate) fn pull_hub_agent(
    paths: &Paths,
    hub: &Hub,
    reference: &index_schema::name::Reference,
    opts: &PullOptions,
) -> Result<(Handle, Activation, Kind, String), String> {
    let report = pull::pull(paths, hub, &[Request::Hub(reference.clone())], opts)
        .map_err(|e| format!("cannot pull `{reference}`: {e:#}"))?;
    let pulled = report
        .pulled
        .into_iter()
        .next()
        .ok_or_else(|| "the pull returned nothing".to_owned())?;
    let (named, kind) = plan::from_start(&pulled.start, &pulled.name.to_string())?;
    let (handle, act) = match named {
        Some(x) => x,
        None => (
            Handle::new(&format!("@{}", pulled.name.agent())).map_err(|e| e.to_string())?,
            Activation::Mention,
        ),
    };
    Ok((
        handle,
        act,
        kind,
        format!("{}@{}", pulled.name, pulled.version),
    ))
}

/// What starting agents needs: the HTTP client, the supervisor that stops what is left
/// behind, and the log their output goes to.
#[derive(Debug, Clone)]
pub(crate) struct Starter {
    client: reqwest::Client,
    supervisor: Option<supervisor::Supervisor>,
    agent_log: PathBuf,
    /// The run's id, put in every process's environment ([`supervisor::RUN_MARK`]).
    run_id: String,
}

impl Starter {
    /// Starts one planned agent: its process, container or ACP session, or nothing for an
    /// agent already running. Answers the agent and its OFC endpoint (HTTP agents).
    pub(crate) async fn start(
        &self,
        p: Planned,
    ) -> (
        Handle,
        Activation,
        Result<(Arc<dyn Agent>, Option<String>), String>,
    ) {
        let client = self.client.clone();
        let supervisor = self.supervisor.clone();
        let agent_log = self.agent_log.clone();
        let agent: Result<(Arc<dyn Agent>, Option<String>), String> = match p.kind {
            Kind::Ready(agent) => Ok((agent, None)),
            Kind::Switchboard(_) => Err(format!(
                "{} ({}): a switchboard agent needs the run's Switchboard",
                p.field, p.handle
            )),
            Kind::Llm(agent) => Ok((agent as Arc<dyn Agent>, None)),
            Kind::Remote(endpoint) => Ok((
                Arc::new(HttpAgent::new(endpoint.clone(), client)) as Arc<dyn Agent>,
                Some(endpoint),
            )),
            Kind::Container(spec) => {
                match ContainerAgent::start(
                    &spec,
                    &p.handle.to_string(),
                    client,
                    plan::CONTAINER_STARTUP_DEADLINE,
                    Some(&agent_log),
                )
                .await
                {
                    Ok(agent) => {
                        if let Some(s) = &supervisor {
                            s.watch_container(&agent.engine().program, agent.name());
                        }
                        let endpoint = agent.endpoint().to_owned();
                        Ok((Arc::new(agent) as Arc<dyn Agent>, Some(endpoint)))
                    }
                    Err(e) => Err(format!("{} ({}): {e}", p.field, p.handle)),
                }
            }
            Kind::Acp(mut command) => {
                command
                    .env
                    .push((supervisor::RUN_MARK.to_owned(), self.run_id.clone()));
                if let Some(s) = supervisor {
                    command.on_spawn =
                        Some(SpawnHook::chain(command.on_spawn.take(), move |pgid| {
                            s.watch(pgid)
                        }));
                }
                command.stderr_log = Some(agent_log);
                match AcpAgent::spawn(*command).await {
                    Ok(agent) => Ok((Arc::new(agent) as Arc<dyn Agent>, None)),
                    Err(e) => Err(format!("{} ({}): {e}", p.field, p.handle)),
                }
            }
            Kind::Process(mut command) => {
                command
                    .env
                    .push((supervisor::RUN_MARK.to_owned(), self.run_id.clone()));
                if let Some(s) = supervisor {
                    command.on_spawn =
                        Some(SpawnHook::chain(command.on_spawn.take(), move |pgid| {
                            s.watch(pgid)
                        }));
                }
                command.output = Some(agent_log);
                match ProcessAgent::spawn(&command, client).await {
                    Ok(agent) => {
                        let endpoint = agent.endpoint().to_owned();
                        Ok((Arc::new(agent) as Arc<dyn Agent>, Some(endpoint)))
                    }
                    Err(e) => Err(format!("{} ({}): {e}", p.field, p.handle)),
                }
            }
        };
        (p.handle, p.activation, agent)
    }
}

/// How `@floor-manager` brings a hub agent onto the running floor: pulled as `ofc run` pulls
/// (same flags, the project's `ofc.lock`), started as blueprint agents are, an LLM agent given
/// the roster and the furniture guards.
#[derive(Debug)]
struct Recruiter {
    paths: Paths,
    hub: Hub,
    opts: PullOptions,
    starter: Starter,
    furniture: Option<Arc<FloorFurniture>>,
    /// The floor's MCP endpoints, for the agents added (with `furniture`).
    mcp: Option<Arc<runtime::furniture::ServedEndpoints>>,
    /// The floor's LLM agents, told who is on the floor when someone joins.
    llm: std::sync::Mutex<Vec<(String, Arc<runtime::llm::LlmAgent>)>>,
}

fn roster_of(present: &[String], me: &str) -> Vec<RosterEntry> {
    present
        .iter()
        .filter(|h| *h != me)
        .map(|h| RosterEntry {
            handle: h.clone(),
            about: None,
        })
        .collect()
}

#[async_trait::async_trait]
impl floor_manager::Recruit for Recruiter {
    async fn recruit(
        &self,
        reference: &index_schema::name::Reference,
        present: &[String],
    ) -> Result<(FloorAgent, String), String> {
        let (paths, hub, opts, r) = (
            self.paths.clone(),
            self.hub.clone(),
            self.opts.clone(),
            reference.clone(),
        );
        // The pull runs its own async runtime: on a thread of its own.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(pull_hub_agent(&paths, &hub, &r, &opts));
        });
        let (handle, activation, kind, pulled) =
            rx.await.map_err(|_| "the pull stopped".to_owned())??;
        let me = handle.to_string();
        if present.contains(&me) {
            return Err(format!(
                "{me} is already on this floor (`{pulled}` would take its handle)"
            ));
        }
        if let Kind::Llm(agent) = &kind {
            let mut everyone = present.to_vec();
            everyone.push(me.clone());
            agent.set_roster(roster_of(&everyone, &me));
            if let Some(f) = &self.furniture {
                for guard in f.guards(&me) {
                    let name = guard.name().to_owned();
                    agent
                        .add_toolbox(&name, Arc::new(guard))
                        .await
                        .map_err(|e| format!("cannot give {me} the furniture `{name}`: {e}"))?;
                }
            }
        }
        if let Kind::Remote(endpoint) = &kind {
            let agent = HttpAgent::new(endpoint.clone(), self.starter.client.clone());
            match tokio::time::timeout(REMOTE_CHECK, agent.info()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    return Err(format!(
                        "the remote agent at {endpoint} does not answer: {e}"
                    ));
                }
                Err(_) => {
                    return Err(format!(
                        "the remote agent at {endpoint} did not answer /ofc/info within {REMOTE_CHECK:?}"
                    ));
                }
            }
        }
        let llm = match &kind {
            Kind::Llm(agent) => Some(Arc::clone(agent)),
            _ => None,
        };
        let mut planned = Planned {
            handle,
            activation,
            kind,
            field: reference.to_string(),
            blame: FieldPath::root(),
        };
        if let (Some(served), Some(f)) = (&self.mcp, &self.furniture)
            && let Err(e) = equip(served, f, &mut planned)
        {
            served.revoke(&me);
            return Err(e);
        }
        let (handle, activation, started) = self.starter.start(planned).await;
        let (agent, endpoint) = match started {
            Ok(s) => s,
            Err(e) => {
                // Its token, issued by `equip`, must not outlive the failed start.
                if let Some(served) = &self.mcp {
                    served.revoke(&me);
                }
                return Err(e);
            }
        };
        if let Some(agent) = llm {
            lock_llm(&self.llm).push((me, agent));
        }
        Ok((
            FloorAgent {
                handle,
                activation,
                agent,
                endpoint,
                info: None,
            },
            pulled,
        ))
    }

    fn joined(&self, _agent: &FloorAgent, present: &[String]) {
        for (me, agent) in lock_llm(&self.llm).iter() {
            agent.set_roster(roster_of(present, me));
        }
    }
}

fn lock_llm<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serves the floor's MCP endpoints on loopback for this run (seed 000); they stop when the
/// answer is dropped. Agents are given their part with [`equip`].
async fn serve_furniture(
    furniture: &Arc<FloorFurniture>,
    run_id: &str,
) -> Result<Arc<runtime::furniture::ServedEndpoints>> {
    let endpoints = runtime::furniture::McpEndpoints::new(Arc::clone(furniture), run_id);
    let served = endpoints
        .serve_loopback()
        .await
        .context("cannot serve the floor's MCP endpoints on 127.0.0.1")?;
    Ok(Arc::new(served))
}

/// Gives an agent about to start (on the blueprint, or added by `@floor-manager` later) what
/// it needs to reach the furniture at the served endpoints: an ACP agent the pieces it holds a
/// grant on (`session/new` `mcpServers`, with its bearer token); a local HTTP (process) agent
/// a file holding its token (`OFC_AGENT_TOKEN_FILE`, 0600 in a 0700 directory of its own: not
/// the environment, which other local processes read in `/proc/<pid>/environ`) and the
/// endpoints' base in `OFC_FLOOR_MCP`, the token bound to its process group once it starts;
/// the grants it is told of later (`POST /ofc/mcp/grant`) name URLs there. Other agents reach
/// it otherwise (in process) or not at all (remote and container agents: loopback is not
/// theirs).
fn equip(
    served: &Arc<runtime::furniture::ServedEndpoints>,
    furniture: &FloorFurniture,
    p: &mut Planned,
) -> Result<(), String> {
    let me = p.handle.to_string();
    match &mut p.kind {
        Kind::Acp(command) => {
            let grants = furniture.grants();
            let held: Vec<&str> = furniture
                .pieces()
                .iter()
                .map(|f| f.name())
                .filter(|name| !grants.classes(&me, name).is_empty())
                .collect();
            if held.is_empty() {
                return Ok(());
            }
            let token = served.issue(&me);
            command.mcp_servers = held
                .into_iter()
                .map(|name| runtime::agent::AcpMcpServer {
                    name: name.to_owned(),
                    url: served.url(name),
                    headers: vec![("Authorization".to_owned(), format!("Bearer {token}"))],
                })
                .collect();
        }
        Kind::Process(command) => {
            let token = served.issue(&me);
            let file = served
                .token_file(&me, &token)
                .map_err(|e| format!("cannot write {me}'s token file: {e}"))?;
            let base = served.url("").trim_end_matches('/').to_owned();
            command.env.push((
                "OFC_AGENT_TOKEN_FILE".to_owned(),
                file.display().to_string(),
            ));
            command.env.push(("OFC_FLOOR_MCP".to_owned(), base.clone()));
            let bind = Arc::clone(served);
            command.on_spawn = Some(SpawnHook::chain(command.on_spawn.take(), move |pgid| {
                bind.bind(&token, pgid);
            }));
            furniture.reach_over_http(&me, &base);
        }
        _ => {}
    }
    Ok(())
}

async fn run_floor(
    args: &RunArgs,
    out: &mut Output,
    loaded: &plan::Loaded,
    project: &ProjectDir,
    planned: Vec<Planned>,
    started: Instant,
) -> Result<u8> {
    reach::check_reachable(loaded, &planned).await?;
    let session = session::RunSession::open(&args.session, &loaded.path, &loaded.blueprint, out)?;
    let run_id = project_dir::run_id();
    // Recorded before anything starts: if this run is killed, the next one finds what it left.
    project.write_state(&serde_json::json!({
        "pid": std::process::id(),
        "run": run_id,
        "state": "starting",
    }))?;
    let floor = start_floor(args, out, loaded, project, planned, &session, &run_id).await?;
    let _watch = named::watch(named::Running {
        floor: floor.floor.clone(),
        reload: floor.reload.clone(),
        furniture: floor.furniture.clone(),
        live: session.live(),
    });
    let handles = floor.handles.clone();
    let transcript = project.logs.join(format!("{run_id}.jsonl"));
    project_dir::make_private(&transcript);
    let ready_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut state = serde_json::json!({
        "pid": std::process::id(),
        "run": run_id,
        "blueprint": loaded.dir.join(loaded.path.file_name().unwrap_or_default()).display().to_string(),
        "transcript": transcript.display().to_string(),
        "agents": handles,
        "state": "running",
    });
    if let Some(served) = &floor.served {
        state["switchboard"] = serde_json::json!({
            "dir": loaded.dir.join(".switchboard").display().to_string(),
            "mcp": format!("{}/sse", served.base),
        });
        out.status(&format!(
            "switchboard: {} (MCP over SSE at {}/sse; token in .switchboard/auth_token)",
            loaded.dir.join(".switchboard").display(),
            served.base
        ));
    }
    project.write_state(&state)?;

    let ui = frontend::Frontend::new(out.json, &handles).session(session.live().id().as_str());
    let code = if args.tui {
        let greeting = frontend::ready_line(&handles, &transcript, ready_ms);
        match tui::session(&floor.floor, &floor.rooms, &handles, &greeting).await {
            Ok(code) => code,
            Err(e) => {
                out.error(&e);
                exit::FAILURE
            }
        }
    } else {
        ui.ready(&run_id, &handles, &transcript, ready_ms);
        match &args.message {
            Some(message) => ui.one_turn(&floor.floor, message).await,
            None => ui.interactive(&floor.floor, &floor.rooms).await,
        }
    };
    floor.stop().await;
    state["state"] = serde_json::json!("ended");
    state["exit_code"] = serde_json::json!(code);
    project.write_state(&state)?;
    ui.closed(code);
    Ok(code)
}

/// A floor started from a blueprint, with everything it holds; [`StartedFloor::stop`] ends
/// it all. `ofc run` starts one per run, `ofc serve` one per live session.
pub(crate) struct StartedFloor {
    pub(crate) floor: Floor,
    /// Its sub-rooms (`/room`).
    pub(crate) rooms: runtime::rooms::Rooms,
    /// Its agents, replaceable while it runs (a named floor's).
    reload: named::Reload,
    pub(crate) furniture: Option<Arc<FloorFurniture>>,
    pub(crate) handles: Vec<String>,
    switchboard: Option<Arc<runtime::switchboard::Switchboard>>,
    pub(crate) served: Option<runtime::switchboard::ServedSwitchboard>,
    supervisor: Option<supervisor::Supervisor>,
    _mcp: Option<Arc<runtime::furniture::ServedEndpoints>>,
}

impl StartedFloor {
    /// Closes the floor and stops its Switchboard, furniture and processes.
    pub(crate) async fn stop(self) {
        if let Some(sb) = &self.switchboard {
            sb.shutdown(Duration::from_secs(5)).await;
        }
        drop(self.served);
        self.rooms.shutdown().await;
        let _ = self.floor.close().await;
        if let Some(f) = &self.furniture {
            f.shutdown().await;
        }
        if let Some(s) = &self.supervisor {
            s.finish();
        }
    }
}

/// Starts the furniture, the agents and the floor of `planned`, recording into `session`.
pub(crate) async fn start_floor(
    args: &RunArgs,
    out: &mut Output,
    loaded: &plan::Loaded,
    project: &ProjectDir,
    planned: Vec<Planned>,
    session: &session::RunSession,
    run_id: &str,
) -> Result<StartedFloor> {
    let client = HttpAgent::default_client();
    let run_id = run_id.to_owned();
    let agent_log = project.logs.join(format!("{run_id}.agents.log"));
    let supervisor = if planned
        .iter()
        .any(|p| matches!(p.kind, Kind::Process(_) | Kind::Container(_) | Kind::Acp(_)))
        || loaded
            .blueprint
            .furniture
            .iter()
            .any(|f| f.command.is_some())
        || !loaded.blueprint.workstations.is_empty()
    {
        let s = supervisor::Supervisor::start()?;
        s.mark_run(&run_id);
        Some(s)
    } else {
        None
    };
    // An `oauth:` furniture may ask a person to consent: one at a terminal, not a program.
    let consent = if !out.json && std::io::stdin().is_terminal() {
        runtime::furniture::oauth::Consent::Person
    } else {
        runtime::furniture::oauth::Consent::Nobody
    };
    let furniture =
        start_furniture(loaded, supervisor.as_ref(), &run_id, &agent_log, consent).await;
    project_dir::make_private(&agent_log);
    let furniture = furniture?;
    session.furniture(furniture.as_ref(), out);
    // Agents outside the process (ACP agents, local HTTP agents) reach the furniture at the
    // floor's MCP endpoints (seed 000), served on loopback for this run, each with a token —
    // those on the blueprint now, those `@floor-manager` adds when they join.
    let mut planned = planned;
    let mcp_served = match &furniture {
        Some(f) => {
            let served = serve_furniture(f, &run_id).await?;
            for p in planned.iter_mut() {
                equip(&served, f, p).map_err(|e| anyhow::anyhow!(e))?;
            }
            Some(served)
        }
        None => None,
    };
    // Switchboard agents (seed 004) take their turns through `.switchboard/`.
    let switchboard = if switchboard::wanted(&loaded.blueprint, args.switchboard) {
        let sb = switchboard::open(loaded, &agent_log)?;
        switchboard::equip(&sb, &mut planned)?;
        Some(sb)
    } else {
        None
    };
    // Every LLM agent's prompt introduces the others (its own handle left out).
    let roster: Vec<RosterEntry> = planned
        .iter()
        .map(|p| RosterEntry {
            handle: p.handle.to_string(),
            about: None,
        })
        .collect();
    let mut llm_agents = Vec::new();
    for p in &planned {
        if let Kind::Llm(agent) = &p.kind {
            let me = p.handle.to_string();
            llm_agents.push((me.clone(), Arc::clone(agent)));
            agent.set_roster(roster.iter().filter(|r| r.handle != me).cloned().collect());
            // Its guard on every piece: it is told about the tools it holds, and a call to
            // any other is refused with the reason.
            if let Some(f) = &furniture {
                for guard in f.guards(&me) {
                    let name = guard.name().to_owned();
                    if let Err(e) = agent.add_toolbox(&name, Arc::new(guard)).await {
                        f.shutdown().await;
                        return Err(anyhow!("cannot give {me} the furniture `{name}`: {e}"));
                    }
                }
            }
        }
    }
    session.agents(&llm_agents, roster.iter().map(|r| r.handle.as_str()), out);
    let starter = Starter {
        client: client.clone(),
        supervisor: supervisor.clone(),
        agent_log: agent_log.clone(),
        run_id: run_id.clone(),
    };
    let starts = planned.into_iter().map(|p| starter.start(p));
    let results = futures::future::join_all(starts).await;
    project_dir::make_private(&agent_log);
    let mut agents = Vec::new();
    let mut failures = Vec::new();
    for (handle, activation, result) in results {
        match result {
            Ok((agent, endpoint)) => agents.push(FloorAgent {
                handle,
                activation,
                agent,
                endpoint,
                info: None,
            }),
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        futures::future::join_all(agents.iter().map(|a| a.agent.shutdown())).await;
        if let Some(f) = &furniture {
            f.shutdown().await;
        }
        if let Some(s) = &supervisor {
            s.finish();
        }
        return Err(UserError::new(format!(
            "{}: agents did not start:\n{}",
            loaded.path.display(),
            failures.join("\n")
        ))
        .hint(format!(
            "what they printed is in {}; every agent that had started was stopped",
            agent_log.display()
        ))
        .into());
    }

    let settings = FloorSettings {
        should_wake_deadline: Duration::from_millis(args.should_wake_deadline_ms),
        respond_deadline: Duration::from_millis(args.respond_deadline_ms),
        transcript_dir: Some(project.logs.clone()),
        ..FloorSettings::default()
    };
    let handles: Vec<String> = agents.iter().map(|a| a.handle.to_string()).collect();
    let reload = named::Reload::default();
    let mut agents = reload.wrap(agents, args.session.floor.is_some());
    // The built-in `@floor-manager`: finds agents on the hub, adds them (the user approves),
    // decides access requests.
    let hub = Paths::from_env().and_then(|p| Hub::from_env(&p).map(|h| (p, h)));
    let recruiter: Result<Arc<dyn floor_manager::Recruit>, String> = match &hub {
        Ok((paths, hub)) => pull_options(
            args,
            &loaded.dir.join(index_schema::lockfile::LOCKFILE_NAME),
        )
        .map(|opts| {
            Arc::new(Recruiter {
                paths: paths.clone(),
                hub: hub.clone(),
                opts,
                starter: starter.clone(),
                furniture: furniture.clone(),
                mcp: mcp_served.clone(),
                llm: std::sync::Mutex::new(llm_agents),
            }) as Arc<dyn floor_manager::Recruit>
        }),
        Err(e) => Err(format!("no hub: {e:#}")),
    };
    let manager = Arc::new(floor_manager::FloorManagerAgent::new(
        hub.map(|(_, h)| h).map_err(|e| format!("{e:#}")),
        loaded.blueprint.floor_manager.clone(),
        furniture.clone(),
        recruiter,
    ));
    manager.know(
        agents
            .iter()
            .map(|a| (a.handle.to_string(), Arc::clone(&a.agent))),
    );
    agents.push(FloorAgent {
        handle: Handle::new(floor_manager::HANDLE).map_err(|e| anyhow!("{e}"))?,
        activation: Activation::Mention,
        agent: manager.clone(),
        endpoint: None,
        info: None,
    });
    let floor = Floor::open_session(
        run_id.clone(),
        loaded.blueprint.name.clone(),
        agents,
        settings.clone(),
        session.live(),
        session.history(),
    )
    .map_err(|e| anyhow!("cannot open the floor: {e}"))?;
    let rooms = session.rooms(&floor, settings, out).await;
    manager.attach(floor.downgrade());
    let served = match &switchboard {
        Some(sb) => match switchboard::start(sb, &floor).await {
            Ok(served) => Some(served),
            Err(e) => {
                sb.stop();
                let _ = floor.close().await;
                if let Some(f) = &furniture {
                    f.shutdown().await;
                }
                if let Some(s) = &supervisor {
                    s.finish();
                }
                return Err(e);
            }
        },
        None => None,
    };
    Ok(StartedFloor {
        floor,
        rooms,
        reload,
        furniture,
        handles,
        switchboard,
        served,
        supervisor,
        _mcp: mcp_served,
    })
}
