//! Agents that are local processes speaking the OFC HTTP API on a port the floor assigns.
//!
//! On Unix each agent runs in its own process group (its pid is the group id), so that
//! stopping it stops everything it started too (a shell wrapper, a Python interpreter's
//! children), and so that the terminal's Ctrl-C, which goes to the foreground group, reaches
//! `ofc` and not the agents. [`ProcessCommand::on_spawn`] tells the caller each group as
//! soon as it exists; `ofc run` hands it to a supervisor that kills the groups if `ofc` dies
//! without stopping them (SIGKILL), since a killed process runs no cleanup of its own.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use index_schema::wire::{
    AgentInfo, McpGrantRequest, McpGrantResponse, McpProvidesResponse, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

use super::{Agent, AgentError, Deltas, HttpAgent};

/// How to start a process agent.
#[derive(Clone)]
pub struct ProcessCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment (`OFC_PORT` is set by the floor).
    pub env: Vec<(String, String)>,
    /// How long it may take until `/ofc/info` answers.
    pub startup_deadline: Duration,
    /// The working directory (default: the caller's).
    pub cwd: Option<PathBuf>,
    /// Where its stdout and stderr go (appended); inherited when `None`.
    pub output: Option<PathBuf>,
    /// Called with the process (and process group) id right after the spawn.
    pub on_spawn: Option<SpawnHook>,
}

impl std::fmt::Debug for ProcessCommand {
    // The environment may carry secrets (API keys): names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProcessCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("startup_deadline", &self.startup_deadline)
            .field("cwd", &self.cwd)
            .field("output", &self.output)
            .field("on_spawn", &self.on_spawn)
            .finish()
    }
}

/// A callback receiving the process group id of each spawned agent.
#[derive(Clone)]
pub struct SpawnHook(pub Arc<dyn Fn(u32) + Send + Sync>);

impl SpawnHook {
    /// A hook that calls `first` (when there is one), then `then`.
    pub fn chain(
        first: Option<SpawnHook>,
        then: impl Fn(u32) + Send + Sync + 'static,
    ) -> SpawnHook {
        SpawnHook(Arc::new(move |pgid| {
            if let Some(f) = &first {
                (f.0)(pgid);
            }
            then(pgid);
        }))
    }
}

impl std::fmt::Debug for SpawnHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpawnHook")
    }
}

impl ProcessCommand {
    /// `program` with no arguments and a 10 s startup deadline.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            startup_deadline: Duration::from_secs(10),
            cwd: None,
            output: None,
            on_spawn: None,
        }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// A process agent: started on spawn, stopped on [`Agent::shutdown`] or drop.
#[derive(Debug)]
pub struct ProcessAgent {
    http: HttpAgent,
    child: Mutex<Option<Child>>,
    info: AgentInfo,
}

/// How often a starting agent's `/ofc/info` is tried.
const STARTUP_PROBE_INTERVAL: Duration = Duration::from_millis(20);

impl ProcessAgent {
    /// Starts the command with a free loopback port in `OFC_PORT` and waits until its
    /// `/ofc/info` answers (or it exits, or the startup deadline passes).
    pub async fn spawn(
        command: &ProcessCommand,
        client: reqwest::Client,
    ) -> Result<Self, AgentError> {
        let port = free_port().map_err(|e| AgentError::NotRunning(format!("no free port: {e}")))?;
        let mut cmd = Command::new(&command.program);
        for k in crate::SECRET_ENV {
            cmd.env_remove(k);
        }
        cmd.args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .env("OFC_PORT", port.to_string())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        if let Some(path) = &command.output {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    AgentError::NotRunning(format!("cannot open {}: {e}", path.display()))
                })?;
            let copy = file.try_clone().map_err(|e| {
                AgentError::NotRunning(format!("cannot open {}: {e}", path.display()))
            })?;
            cmd.stdout(copy).stderr(file);
        }
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            AgentError::NotRunning(format!(
                "could not start {}: {e}",
                command.program.display()
            ))
        })?;
        if let (Some(hook), Some(pid)) = (&command.on_spawn, child.id()) {
            (hook.0)(pid);
        }
        let http = HttpAgent::new(format!("http://127.0.0.1:{port}"), client);
        let started = Instant::now();
        let mut last_error = None;
        while started.elapsed() < command.startup_deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(AgentError::NotRunning(format!(
                    "{} exited during startup ({status})",
                    command.program.display()
                )));
            }
            match tokio::time::timeout(STARTUP_PROBE_INTERVAL * 10, http.info()).await {
                Ok(Ok(info)) => {
                    return Ok(Self {
                        http,
                        child: Mutex::new(Some(child)),
                        info,
                    });
                }
                Ok(Err(error)) => last_error = Some(error.to_string()),
                Err(_) => last_error = Some("/ofc/info timed out".to_owned()),
            }
            tokio::time::sleep(STARTUP_PROBE_INTERVAL).await;
        }
        stop_child(&mut child).await;
        Err(AgentError::NotRunning(format!(
            "{} did not answer /ofc/info within {:?} ({})",
            command.program.display(),
            command.startup_deadline,
            last_error.unwrap_or_else(|| "never tried".to_owned())
        )))
    }

    /// Its base URL.
    pub fn endpoint(&self) -> &str {
        self.http.endpoint()
    }

    /// What `/ofc/info` said at startup.
    pub fn startup_info(&self) -> &AgentInfo {
        &self.info
    }

    /// The process id, while it runs.
    pub async fn pid(&self) -> Option<u32> {
        self.child.lock().await.as_ref().and_then(Child::id)
    }

    /// Stops the process and everything in its process group, and waits for it to exit:
    /// SIGTERM first, SIGKILL after [`STOP_GRACE`].
    pub async fn stop(&self) {
        if let Some(mut child) = self.child.lock().await.take() {
            stop_child(&mut child).await;
        }
    }
}

/// How long a stopping agent has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_millis(500);

async fn stop_child(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        signal_group(pid, false);
        if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_ok() {
            // The leader is gone; whatever it left in its group goes too.
            signal_group(pid, true);
            return;
        }
        signal_group(pid, true);
    }
    let _ = child.kill().await;
}

/// Sends SIGTERM (or SIGKILL) to process `pid` alone. Errors (it is gone) are ignored.
#[cfg(unix)]
pub fn signal_process(pid: u32, kill: bool) {
    use rustix::process::{Pid, Signal, kill_process};
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(pid, if kill { Signal::KILL } else { Signal::TERM });
    }
}

/// Whether process `pid` exists (a zombie too).
#[cfg(unix)]
pub fn process_alive(pid: u32) -> bool {
    use rustix::process::{Pid, test_kill_process};
    i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .is_some_and(|p| test_kill_process(p).is_ok())
}

/// Sends SIGTERM (or SIGKILL) to process group `pgid`. Errors (the group is gone) are ignored.
#[cfg(unix)]
pub fn signal_group(pgid: u32, kill: bool) {
    use rustix::process::{Pid, Signal, kill_process_group};
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let _ = kill_process_group(pid, if kill { Signal::KILL } else { Signal::TERM });
}

/// Whether process group `pgid` still has a member.
#[cfg(unix)]
pub fn group_alive(pgid: u32) -> bool {
    use rustix::process::{Pid, test_kill_process_group};
    i32::try_from(pgid)
        .ok()
        .and_then(Pid::from_raw)
        .is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

/// A port the OS considers free right now. Another process may take it before the agent
/// binds it; the agent then fails to start and the floor reports it.
fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

#[async_trait]
impl Agent for ProcessAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        self.http.info().await
    }

    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        self.http.should_wake(request).await
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        self.http.respond(request, deltas).await
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        self.http.grant_mcp(request).await
    }

    async fn provides_mcp(&self) -> Result<McpProvidesResponse, AgentError> {
        self.http.provides_mcp().await
    }

    async fn shutdown(&self) {
        self.stop().await;
    }
}

#[cfg(test)]
mod debug_tests {
    #[test]
    fn the_debug_form_names_the_environment_without_its_values() {
        let mut c = super::ProcessCommand::new("/bin/agent");
        c.env.push(("OFC_AGENT_TOKEN".into(), "secret-4711".into()));
        let text = format!("{c:?}");
        assert!(text.contains("OFC_AGENT_TOKEN"), "{text}");
        assert!(!text.contains("secret-4711"), "{text}");
    }
}
