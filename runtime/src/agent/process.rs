//! Agents that are local processes speaking the OFC HTTP API on a port the floor assigns.

use std::path::PathBuf;
use std::process::Stdio;
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
#[derive(Debug, Clone)]
pub struct ProcessCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment (`OFC_PORT` is set by the floor).
    pub env: Vec<(String, String)>,
    /// How long it may take until `/ofc/info` answers.
    pub startup_deadline: Duration,
}

impl ProcessCommand {
    /// `program` with no arguments and a 10 s startup deadline.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            startup_deadline: Duration::from_secs(10),
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
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .env("OFC_PORT", port.to_string())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                AgentError::NotRunning(format!(
                    "could not start {}: {e}",
                    command.program.display()
                ))
            })?;
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
        let _ = child.kill().await;
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

    /// Stops the process and waits for it to exit.
    pub async fn stop(&self) {
        if let Some(mut child) = self.child.lock().await.take() {
            let _ = child.kill().await;
        }
    }
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
