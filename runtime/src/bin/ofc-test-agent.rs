//! A configurable OFC agent for tests, examples and benchmarks, built with
//! [`runtime::agent::AgentServer`]. It serves on `127.0.0.1:$OFC_PORT`.
//!
//! ```text
//! ofc-test-agent --name NAME [--behaviour B] [--target AGENT] [--delay-ms N] [--wake]
//!                [--activation mention|always]
//! ```
//!
//! Behaviours (`--behaviour`, default `echo`):
//! - `echo`: responds with the last message, its `@` made harmless;
//! - `delegate`: asks `--target` (`@target? …`), and when the answer comes back, reports it;
//! - `never-answer`: never answers should-wake nor respond;
//! - `slow-should-wake`: answers should-wake after `--delay-ms`, responds like `echo`;
//! - `crash-mid-respond`: starts streaming its response, then the process exits;
//! - `stream`: streams its response in pieces `--delay-ms` apart;
//! - `pass`: passes.
//!
//! Should-wake answers yes when `--wake` is given, no otherwise.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use index_schema::wire::{
    Activation, AgentInfo, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
    WakeReason,
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
}

#[derive(Debug)]
struct TestAgent {
    name: String,
    behaviour: Behaviour,
    target: Option<String>,
    delay: Duration,
    wake: bool,
    activation: Activation,
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
        }
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
