//! A configurable OFC agent for tests, examples and benchmarks, built with
//! [`runtime::agent::AgentServer`]. It serves on `127.0.0.1:$OFC_PORT`.
//!
//! ```text
//! ofc-test-agent --name NAME [--behaviour B] [--target AGENT] [--delay-ms N] [--wake]
//!                [--activation mention|always] [--detach PIDFILE]
//! ```
//!
//! Behaviours (`--behaviour`, default `echo`):
//! - `echo`: responds with the last message, its `@` made harmless;
//! - `delegate`: asks `--target` (`@target? …`), and when the answer comes back, reports it;
//! - `never-answer`: never answers should-wake nor respond;
//! - `slow-should-wake`: answers should-wake after `--delay-ms`, responds like `echo`;
//! - `crash-mid-respond`: starts streaming its response, then the process exits;
//! - `stream`: streams its response in pieces `--delay-ms` apart;
//! - `pass`: passes;
//! - `flood`: streams 64 KiB pieces without end (until the floor stops reading);
//! - `tools`: keeps the workstations the floor grants it (`POST /ofc/mcp/grant`); asked with a
//!   last line holding `TOOL <name>__<tool> <json arguments>`, calls that tool on the granted MCP server
//!   (streamable HTTP, with the official MCP SDK, sending `Authorization: Bearer <the token
//!   in the file $OFC_AGENT_TOKEN_FILE>`) and answers `tool <name>__<tool>: <result>` or `tool error: <why>`;
//!   otherwise it lists what it holds.
//!
//! Should-wake answers yes when `--wake` is given, no otherwise. `--detach PIDFILE` starts
//! `sleep 600` in a session of its own (`setsid`, out of the agent's process group, as a
//! daemonising child would) and writes its pid to PIDFILE.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use index_schema::wire::{
    Activation, AgentInfo, McpGrant, McpGrantRequest, McpGrantResponse, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse, WakeReason,
};
use runtime::agent::{Agent, AgentError, AgentServer, Deltas};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Echo,
    Delegate,
    NeverAnswer,
    SlowShouldWake,
    CrashMidRespond,
    Stream,
    Pass,
    Tools,
    Flood,
}

#[derive(Debug)]
struct TestAgent {
    name: String,
    behaviour: Behaviour,
    target: Option<String>,
    delay: Duration,
    wake: bool,
    activation: Activation,
    grants: std::sync::Mutex<Vec<McpGrant>>,
}

/// How long "never" is: far beyond any deadline a test uses, but finite.
const NEVER: Duration = Duration::from_secs(3600);

fn last_content(request: &RespondRequest) -> String {
    request
        .messages
        .last()
        .map(|m| m.content.replace('@', "(at)"))
        .unwrap_or_default()
}

#[async_trait]
impl Agent for TestAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(format!("@{}", self.name)),
            name: Some(format!("test agent {}", self.name)),
            tagline: Some(format!("{:?}", self.behaviour)),
            activation: Some(self.activation.clone()),
            ..AgentInfo::default()
        })
    }

    async fn should_wake(
        &self,
        _request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        match self.behaviour {
            Behaviour::NeverAnswer => tokio::time::sleep(NEVER).await,
            Behaviour::SlowShouldWake => tokio::time::sleep(self.delay).await,
            _ => {}
        }
        Ok(if self.wake {
            ShouldWakeResponse::wake(format!("{} wants to talk", self.name))
        } else {
            ShouldWakeResponse::sleep()
        })
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        match self.behaviour {
            Behaviour::Echo | Behaviour::SlowShouldWake => Ok(RespondResponse::reply(format!(
                "{} heard: {}",
                self.name,
                last_content(request)
            ))),
            Behaviour::Delegate => {
                let target = self.target.as_deref().unwrap_or("nobody");
                if request.wake_reason == Some(WakeReason::DelegationReturned) {
                    Ok(RespondResponse::reply(format!(
                        "{} reports: {}",
                        self.name,
                        last_content(request)
                    )))
                } else {
                    Ok(RespondResponse::reply(format!(
                        "@{target}? please handle: {}",
                        last_content(request)
                    )))
                }
            }
            Behaviour::NeverAnswer => {
                tokio::time::sleep(NEVER).await;
                Ok(RespondResponse::pass(None))
            }
            Behaviour::Flood => {
                let piece = "flood ".repeat(64 * 1024 / 6);
                if let Some(deltas) = &deltas {
                    // Until the floor hangs up (the stream's receiver is gone).
                    while deltas.send(piece.clone()) {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
                Ok(RespondResponse::reply(piece))
            }
            Behaviour::CrashMidRespond => {
                if let Some(deltas) = &deltas {
                    deltas.send("I was about to say");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                std::process::exit(3);
            }
            Behaviour::Stream => {
                let pieces = ["one ", "two ", "three"];
                for piece in pieces {
                    if let Some(deltas) = &deltas {
                        deltas.send(piece);
                    }
                    tokio::time::sleep(self.delay).await;
                }
                Ok(RespondResponse::reply(pieces.concat()))
            }
            Behaviour::Pass => Ok(RespondResponse::pass(Some("nothing to add".to_owned()))),
            Behaviour::Tools => {
                let last = request
                    .messages
                    .last()
                    .map(|m| m.content.trim().lines().last().unwrap_or("").to_owned())
                    .unwrap_or_default();
                let Some(call) = last.find("TOOL ").map(|i| &last[i + 5..]) else {
                    let held: Vec<String> = lock(&self.grants)
                        .iter()
                        .map(|g| format!("{} at {} {:?}", g.name, g.url, g.capabilities))
                        .collect();
                    return Ok(RespondResponse::reply(format!(
                        "holds: {}",
                        held.join("; ")
                    )));
                };
                let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
                let grant = name.split_once("__").and_then(|(piece, tool)| {
                    lock(&self.grants)
                        .iter()
                        .rev()
                        .find(|g| g.name == piece)
                        .cloned()
                        .map(|g| (g, tool.to_owned()))
                });
                let text = match grant {
                    None => format!("tool error: no grant for {name}"),
                    Some((grant, tool)) => match call_tool(&grant.url, &tool, args).await {
                        Ok(out) => format!("tool {name}: {out}"),
                        Err(e) => format!("tool error: {e}"),
                    },
                };
                Ok(RespondResponse::reply(text.replace('@', "(at)")))
            }
        }
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        if self.behaviour != Behaviour::Tools {
            return Ok(McpGrantResponse::decline(
                "this agent does not use workstations",
            ));
        }
        lock(&self.grants).push(request.mcp.clone());
        Ok(McpGrantResponse::accept(format!(
            "{} noted",
            request.mcp.name
        )))
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Calls `tool` on the MCP server at `url` with the agent's token.
async fn call_tool(url: &str, tool: &str, arguments: &str) -> Result<String, String> {
    use rmcp::ServiceExt as _;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    // The floor hands the token over in a file of the agent's own (not in the environment,
    // which other local processes can read).
    if let Some(path) = std::env::var_os("OFC_AGENT_TOKEN_FILE") {
        let token = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
        config = config.auth_header(token.trim().to_owned());
    }
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = Some(arguments);
    let result = client
        .peer()
        .call_tool(params)
        .await
        .map_err(|e| e.to_string());
    let _ = client.cancel().await;
    let result = result?;
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}

fn parse(args: &[String]) -> Result<TestAgent, String> {
    let mut agent = TestAgent {
        name: String::new(),
        behaviour: Behaviour::Echo,
        target: None,
        delay: Duration::from_millis(100),
        wake: false,
        activation: Activation::Mention,
        grants: std::sync::Mutex::new(Vec::new()),
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--name" => agent.name = value()?,
            "--target" => agent.target = Some(value()?),
            "--delay-ms" => {
                let ms = value()?;
                agent.delay = Duration::from_millis(
                    ms.parse()
                        .map_err(|_| format!("--delay-ms: not a number: {ms}"))?,
                );
            }
            "--wake" => agent.wake = true,
            "--detach" => {
                let pidfile = value()?;
                let child = std::process::Command::new("setsid")
                    .args(["sleep", "600"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start setsid sleep: {e}"))?;
                std::fs::write(&pidfile, child.id().to_string())
                    .map_err(|e| format!("cannot write {pidfile}: {e}"))?;
            }
            "--activation" => agent.activation = Activation::from(value()?.as_str()),
            "--behaviour" => {
                agent.behaviour = match value()?.as_str() {
                    "echo" => Behaviour::Echo,
                    "delegate" => Behaviour::Delegate,
                    "never-answer" => Behaviour::NeverAnswer,
                    "slow-should-wake" => Behaviour::SlowShouldWake,
                    "crash-mid-respond" => Behaviour::CrashMidRespond,
                    "stream" => Behaviour::Stream,
                    "pass" => Behaviour::Pass,
                    "tools" => Behaviour::Tools,
                    "flood" => Behaviour::Flood,
                    other => return Err(format!("unknown behaviour {other}")),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if agent.name.is_empty() {
        return Err("--name is required".to_owned());
    }
    Ok(agent)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let agent = match parse(&args) {
        Ok(agent) => agent,
        Err(message) => {
            eprintln!("error: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    match AgentServer::run_from_env(Arc::new(agent)).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
