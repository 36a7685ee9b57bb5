//! Built-in LLM agents: an [`Agent`] backed by an OpenAI-compatible chat-completions endpoint
//! (Ollama, vLLM, llama.cpp server, OpenAI…), configured from a blueprint's inline agent.
//!
//! - **Prompt**: the agent's `prompt`, then a short floor section (who the agent is, the
//!   roster given with [`LlmAgent::set_roster`], the `@name?` / `[PASS]` conventions). The floor
//!   messages follow as the reference builds them: the agent's own messages as `assistant`
//!   (with their tool calls and results as `tool` messages), everyone else's as `user` with a
//!   `name`, their tool activity shown per `tool_context` ([`format_tool_activity`]).
//! - **Memory and context window**: only the last `memory` floor messages are used; with
//!   `memory: {window, summary: true}` the messages before them are kept as a running summary
//!   the agent's own model writes (see [`LlmAgent::respond`]'s memory step: one summary call
//!   per `window / 2` messages, not per turn). Then, if the prompt's estimated size passes
//!   `context_window`, the oldest messages are left out until it fits (the system prompt, the
//!   summary and the newest message always stay). The estimate is
//!   [`estimate_tokens`]: one token per 4 bytes of text plus 4 per message — conservative for
//!   English with BPE tokenizers, no tokenizer needed.
//! - **Passing**: a reply that starts or ends with `[PASS]` (any case, emphasis and closing
//!   punctuation trimmed) is a pass; one with the marker in the middle is a reply. The exact
//!   rule is [`pass_reason`]'s.
//! - **Tools**: the toolboxes of granted workstations are advertised as OpenAI `tools` named
//!   `workstation__tool`; at most [`LlmSettings::max_tool_rounds`] rounds of calls, each call
//!   under a deadline; an unknown tool, arguments that are not a JSON object, or a failing tool
//!   become an `[error: …]` tool result the model sees; running out of rounds is an error.
//! - **Calls**: see [`client`]: retries with backoff on 429/5xx, a deadline, cancellation by
//!   drop, bounded events and answers. The API key comes only from the environment and is held
//!   as a [`SecretString`]: never in `Debug`, logs, transcripts or replies.

pub mod client;
mod memory;
pub mod tools;

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use index_schema::blueprint::{Defaults, InlineAgent, InlineAgentType, ToolContext};
use index_schema::manifest::Activation as BlueprintActivation;
use index_schema::wire::{
    Activation, AgentInfo, AgentReply, McpGrantRequest, McpGrantResponse, Message, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse, ToolCall,
};
use secrecy::SecretString;
use serde_json::{Map, Value, json};

pub use client::{ChatClient, ChatMessage, ChatRequest, ChatResult, ClientSettings, LlmError};
pub use tools::{ToolConnector, ToolError, ToolSpec, Toolbox};

use crate::agent::{Agent, AgentError, Deltas, HttpAgent};

/// The temperature of agents that set none (the reference's default).
pub const DEFAULT_TEMPERATURE: f64 = 0.7;

/// Limits of an LLM agent beyond its HTTP calls.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// The HTTP calls' settings.
    pub client: ClientSettings,
    /// Most rounds of tool calls in one response (the reference's 10).
    pub max_tool_rounds: usize,
    /// Deadline of one tool call.
    pub tool_deadline: Duration,
    /// The longest tool result shown to the model, in bytes (the rest is cut with a note).
    pub max_tool_result_bytes: usize,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            client: ClientSettings::default(),
            max_tool_rounds: 10,
            tool_deadline: Duration::from_secs(60),
            max_tool_result_bytes: 64 * 1024,
        }
    }
}

/// Why an inline agent cannot become an LLM agent. Names the agent and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmConfigError {
    /// The agent is not of type `llm`.
    #[error("agent {agent} is not an llm agent (type: acp)")]
    NotLlm {
        /// The agent.
        agent: String,
    },
    /// No model, neither its own nor `defaults.model`.
    #[error("agent {agent} has no `model` and the blueprint has no `defaults.model`")]
    NoModel {
        /// The agent.
        agent: String,
    },
    /// No endpoint, neither its own nor `defaults.endpoint`.
    #[error("agent {agent} has no `endpoint` and the blueprint has no `defaults.endpoint`")]
    NoEndpoint {
        /// The agent.
        agent: String,
    },
    /// The endpoint is not an http(s) URL.
    #[error("agent {agent}: `endpoint` {endpoint:?} is not an http(s) URL: {reason}")]
    BadEndpoint {
        /// The agent.
        agent: String,
        /// The endpoint as written.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// `api_key_env` names a variable that is not set.
    #[error(
        "agent {agent}: `api_key_env` names the environment variable {variable}, which is not set"
    )]
    MissingApiKey {
        /// The agent.
        agent: String,
        /// The variable.
        variable: String,
    },
}

/// An LLM agent's configuration, resolved against the blueprint's defaults.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Its handle (`@data`).
    pub handle: String,
    /// Display name.
    pub name: Option<String>,
    /// The endpoint (`http://127.0.0.1:11434/v1`).
    pub endpoint: url::Url,
    /// The model.
    pub model: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// The system prompt.
    pub prompt: Option<String>,
    /// `mention` or `always`.
    pub activation: Activation,
    /// Whether it may call tools.
    pub can_use_tools: bool,
    /// How much of others' tool activity it sees.
    pub tool_context: ToolContext,
    /// How many of the latest messages it sees.
    pub memory: Option<usize>,
    /// Whether the messages before `memory` are kept as a running summary.
    pub memory_summary: bool,
    /// Its context window in tokens.
    pub context_window: Option<usize>,
    /// The API key (from the environment).
    pub api_key: Option<SecretString>,
}

/// Another agent of the floor, as the prompt introduces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterEntry {
    /// Its handle (`@code`).
    pub handle: String,
    /// One line about it (its tagline or name), if known.
    pub about: Option<String>,
}

/// Advertised tool name (`board__add`) → its toolbox and its name there.
type Routes = HashMap<String, (Arc<Granted>, String)>;

struct Granted {
    name: String,
    toolbox: Arc<dyn Toolbox>,
    tools: Vec<ToolSpec>,
}

/// A built-in LLM agent.
pub struct LlmAgent {
    config: LlmConfig,
    settings: LlmSettings,
    client: ChatClient,
    roster: Mutex<Vec<RosterEntry>>,
    toolboxes: Mutex<Vec<Arc<Granted>>>,
    connector: Option<Arc<dyn ToolConnector>>,
    /// The running summary (`memory: {summary: true}`); held across the summary call so
    /// that two responses never write it at once.
    summary: tokio::sync::Mutex<Option<Summary>>,
    /// Told of each new summary (`through`, `text`): the session records it.
    on_compaction: Mutex<Option<CompactionHook>>,
    /// Renders the prompt before each turn (a prompt template); `config.prompt` otherwise.
    prompt_source: Option<PromptSource>,
}

/// Renders an agent's system prompt before each of its turns (a prompt template that reads
/// files or variables afresh); an error ends that turn with it.
pub type PromptSource = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// Called with the id of the last message a new summary covers and the summary.
pub type CompactionHook = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The running summary of the floor messages before the memory window.
#[derive(Debug, Clone)]
struct Summary {
    /// The id of the last floor message it covers.
    through: String,
    /// The summary.
    text: String,
}

/// The most bytes of older messages one summary call reads (the newest are kept).
const MAX_SUMMARY_INPUT: usize = 32 * 1024;
/// The most bytes of one message in a summary call.
const MAX_SUMMARY_MESSAGE: usize = 2 * 1024;
/// The most bytes of a summary kept.
const MAX_SUMMARY: usize = 4 * 1024;

impl fmt::Debug for LlmAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `config.api_key` is a SecretString, whose Debug is redacted.
        f.debug_struct("LlmAgent")
            .field("config", &self.config)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl LlmAgent {
    /// The agent an inline blueprint agent describes. `env` looks up environment variables
    /// (`|k| std::env::var(k).ok()` in `ofc run`); only `api_key_env` is read through it.
    pub fn from_blueprint(
        agent: &InlineAgent,
        defaults: Option<&Defaults>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<LlmAgent, LlmConfigError> {
        let config = LlmConfig::from_blueprint(agent, defaults, env)?;
        Ok(Self::new(
            config,
            LlmSettings::default(),
            HttpAgent::default_client(),
        ))
    }

    /// An agent from a resolved configuration.
    pub fn new(config: LlmConfig, settings: LlmSettings, http: reqwest::Client) -> Self {
        let client = ChatClient::new(
            &config.endpoint,
            config.api_key.clone(),
            http,
            settings.client.clone(),
        );
        Self {
            config,
            settings,
            client,
            roster: Mutex::new(Vec::new()),
            toolboxes: Mutex::new(Vec::new()),
            connector: None,
            summary: tokio::sync::Mutex::new(None),
            on_compaction: Mutex::new(None),
            prompt_source: None,
        }
    }

    /// Renders the prompt with `source` before each turn instead of using `config.prompt`.
    pub fn with_prompt_source(mut self, source: PromptSource) -> Self {
        self.prompt_source = Some(source);
        self
    }

    /// The prompt for this turn.
    fn prompt(&self) -> Result<Option<String>, String> {
        match &self.prompt_source {
            Some(render) => render().map(Some),
            None => Ok(self.config.prompt.clone()),
        }
    }

    /// Where workstation grants are connected (the MCP client). Without one, grants are
    /// declined.
    pub fn with_connector(mut self, connector: Arc<dyn ToolConnector>) -> Self {
        self.connector = Some(connector);
        self
    }

    /// Its configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// Its activation, for the floor's roster (`always` agents need no should-wake poll).
    pub fn activation(&self) -> &Activation {
        &self.config.activation
    }

    /// The other agents of the floor, for the prompt.
    pub fn set_roster(&self, roster: Vec<RosterEntry>) {
        *lock(&self.roster) = roster;
    }

    /// Gives the agent a toolbox under `name` (its tools become `name__tool`).
    pub async fn add_toolbox(
        &self,
        name: &str,
        toolbox: Arc<dyn Toolbox>,
    ) -> Result<usize, ToolError> {
        let tools = toolbox.tools().await?;
        let count = tools.len();
        let mut boxes = lock(&self.toolboxes);
        boxes.retain(|g| g.name != name);
        boxes.push(Arc::new(Granted {
            name: name.to_owned(),
            toolbox,
            tools,
        }));
        Ok(count)
    }

    fn system_prompt(&self, prompt: Option<&str>) -> String {
        let mut text = prompt.unwrap_or_default().to_owned();
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let _ = write!(
            text,
            "You are {} on a floor shared with other participants. @user is the human.",
            self.config.handle
        );
        let roster = lock(&self.roster).clone();
        let others: Vec<&RosterEntry> = roster
            .iter()
            .filter(|r| r.handle != self.config.handle)
            .collect();
        if !others.is_empty() {
            text.push_str("\nOther participants:");
            for r in others {
                match &r.about {
                    Some(about) => {
                        let _ = write!(text, "\n- {}: {}", r.handle, one_line(about, 200));
                    }
                    None => {
                        let _ = write!(text, "\n- {}", r.handle);
                    }
                }
            }
        }
        text.push_str(
            "\nTo ask someone to answer next, write @name? (with the question mark); \
             @name alone only refers to them. If you have nothing to add, answer exactly [PASS].",
        );
        text
    }

    /// The chat messages for a respond request: system prompt, then the floor messages
    /// within `memory` and `context_window` (without the running summary, which
    /// [`Agent::respond`] adds). A prompt template that fails to render is sent unrendered.
    pub fn build_messages(&self, floor: &[Message]) -> Vec<ChatMessage> {
        let from = self
            .config
            .memory
            .map_or(0, |m| floor.len().saturating_sub(m));
        let prompt = self.prompt().unwrap_or_else(|_| self.config.prompt.clone());
        self.compose(floor, from, None, prompt.as_deref())
    }

    /// Whether the endpoint can be reached at all (see [`ChatClient::probe`]).
    pub async fn probe(&self, timeout: Duration) -> Result<(), String> {
        self.client.probe(timeout).await
    }

    /// The chat messages from floor message `from` on, after the system prompt and the
    /// summary, within `context_window`.
    fn compose(
        &self,
        floor: &[Message],
        from: usize,
        summary: Option<&str>,
        prompt: Option<&str>,
    ) -> Vec<ChatMessage> {
        let mut groups: Vec<Vec<ChatMessage>> = floor[from..]
            .iter()
            .enumerate()
            .map(|(i, m)| self.chat_messages_of(from + i, m))
            .collect();
        let mut head = vec![ChatMessage::text("system", self.system_prompt(prompt))];
        if let Some(summary) = summary.filter(|s| !s.is_empty()) {
            head.push(ChatMessage::text(
                "system",
                format!(
                    "Summary of the earlier conversation (those messages are not shown):\n{summary}"
                ),
            ));
        }
        if let Some(window) = self.config.context_window {
            let mut total =
                estimate_tokens(&head) + groups.iter().map(|g| estimate_tokens(g)).sum::<usize>();
            // Whole floor messages go, oldest first, so a tool call never loses its result.
            while total > window && groups.len() > 1 {
                total -= estimate_tokens(&groups.remove(0));
            }
        }
        head.into_iter()
            .chain(groups.into_iter().flatten())
            .collect()
    }

    fn chat_messages_of(&self, index: usize, m: &Message) -> Vec<ChatMessage> {
        if m.from == self.config.handle {
            if m.tool_calls.is_empty() {
                return vec![ChatMessage::text("assistant", m.content.clone())];
            }
            // Its own tool activity in full, as the API expects it: the calls, their results,
            // then the text.
            let ids: Vec<String> = (0..m.tool_calls.len())
                .map(|i| format!("call_{index}_{i}"))
                .collect();
            let mut out = vec![ChatMessage {
                role: "assistant".into(),
                content: None,
                name: None,
                tool_calls: m
                    .tool_calls
                    .iter()
                    .zip(&ids)
                    .map(|(c, id)| client::ChatToolCall {
                        id: id.clone(),
                        kind: "function".into(),
                        function: client::FunctionCall {
                            name: c.name.clone(),
                            arguments: Value::Object(c.arguments.clone()).to_string(),
                        },
                    })
                    .collect(),
                tool_call_id: None,
            }];
            for (i, id) in ids.iter().enumerate() {
                let result = m.tool_results.get(i).map(result_text).unwrap_or_default();
                out.push(ChatMessage {
                    tool_call_id: Some(id.clone()),
                    ..ChatMessage::text("tool", result)
                });
            }
            if !m.content.is_empty() {
                out.push(ChatMessage::text("assistant", m.content.clone()));
            }
            return out;
        }
        let mut content = m.content.clone();
        let activity = format_tool_activity(m, self.config.tool_context);
        if !activity.is_empty() {
            content.push_str("\n\n");
            content.push_str(&activity);
        }
        vec![ChatMessage {
            name: Some(api_name(&m.from)),
            ..ChatMessage::text("user", content)
        }]
    }

    fn advertised_tools(&self) -> (Vec<Value>, Routes) {
        let mut tools = Vec::new();
        let mut routes = HashMap::new();
        // Every toolbox given is advertised: `can_use_tools` governs workstation grants
        // (`grant_mcp`), while furniture named in the blueprint is the agent's whatever it
        // says, as in the reference CLI.
        for granted in lock(&self.toolboxes).iter() {
            for spec in &granted.tools {
                let name = format!("{}__{}", granted.name, spec.name);
                tools.push(json!({"type": "function", "function": {
                    "name": name,
                    "description": format!("[{}] {}", granted.name, spec.description),
                    "parameters": spec.parameters,
                }}));
                routes.insert(name, (granted.clone(), spec.name.clone()));
            }
        }
        (tools, routes)
    }

    /// Runs one tool call; every failure is a result text the model sees.
    async fn run_tool(
        &self,
        routes: &Routes,
        call: &client::ChatToolCall,
    ) -> (Map<String, Value>, Value) {
        let raw = call.function.arguments.trim();
        let arguments = if raw.is_empty() {
            Ok(Map::new())
        } else {
            match serde_json::from_str::<Value>(raw) {
                Ok(Value::Object(map)) => Ok(map),
                Ok(_) => Err("the arguments are not a JSON object".to_owned()),
                Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
            }
        };
        let arguments = match arguments {
            Ok(a) => a,
            Err(e) => return (Map::new(), Value::String(format!("[error: {e}]"))),
        };
        let Some((granted, tool)) = routes.get(&call.function.name) else {
            // A tool of a toolbox the agent has, withheld from it: the toolbox says why.
            if let Some((boxname, tool)) = call.function.name.split_once("__")
                && let Some(refusal) = lock(&self.toolboxes)
                    .iter()
                    .find(|g| g.name == boxname)
                    .and_then(|g| g.toolbox.refusal(tool))
            {
                return (arguments, Value::String(format!("[error: {refusal}]")));
            }
            let known: Vec<&String> = routes.keys().collect();
            return (
                arguments,
                Value::String(format!(
                    "[error: unknown tool `{}`; available: {known:?}]",
                    one_line(&call.function.name, 80)
                )),
            );
        };
        let deadline = self.settings.tool_deadline;
        let result =
            match tokio::time::timeout(deadline, granted.toolbox.call(tool, arguments.clone()))
                .await
            {
                Ok(Ok(value)) => value,
                Ok(Err(e)) => Value::String(format!("[error: {e}]")),
                Err(_) => Value::String(format!(
                    "[error: the tool did not answer within {deadline:?}]"
                )),
            };
        (arguments, result)
    }
}

impl LlmConfig {
    /// Resolves an inline agent against `defaults`, reading `api_key_env` through `env`.
    pub fn from_blueprint(
        agent: &InlineAgent,
        defaults: Option<&Defaults>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<LlmConfig, LlmConfigError> {
        let handle = agent.id.to_string();
        if agent.agent_type() != InlineAgentType::Llm {
            return Err(LlmConfigError::NotLlm { agent: handle });
        }
        let model = agent
            .model
            .clone()
            .or_else(|| defaults.and_then(|d| d.model.clone()))
            .ok_or_else(|| LlmConfigError::NoModel {
                agent: handle.clone(),
            })?;
        let endpoint_text = agent
            .endpoint
            .clone()
            .or_else(|| defaults.and_then(|d| d.endpoint.clone()))
            .ok_or_else(|| LlmConfigError::NoEndpoint {
                agent: handle.clone(),
            })?;
        let endpoint =
            index_schema::http_url::parse(&endpoint_text, index_schema::http_url::Rules::ANY)
                .map_err(|e| LlmConfigError::BadEndpoint {
                    agent: handle.clone(),
                    endpoint: endpoint_text.clone(),
                    reason: e.to_string(),
                })?;
        // `api_key_env`, else the key written in the blueprint (the agent's unless empty, else
        // the default's); no key sends no header, as the reference CLI does.
        let written = [
            agent.api_key.as_ref(),
            defaults.and_then(|d| d.api_key.as_ref()),
        ]
        .into_iter()
        .flatten()
        .map(index_schema::blueprint::ApiKey::expose)
        .find(|k| !k.is_empty());
        let api_key = match &agent.api_key_env {
            None => written.map(|k| SecretString::from(k.to_owned())),
            Some(variable) => match env(variable) {
                Some(key) if !key.is_empty() => Some(SecretString::from(key)),
                _ => {
                    return Err(LlmConfigError::MissingApiKey {
                        agent: handle,
                        variable: variable.clone(),
                    });
                }
            },
        };
        Ok(LlmConfig {
            name: agent.name.clone(),
            endpoint,
            model,
            temperature: agent.temperature.unwrap_or(DEFAULT_TEMPERATURE),
            prompt: agent.prompt.clone(),
            activation: match agent.activation.unwrap_or_default() {
                BlueprintActivation::Always => Activation::Always,
                BlueprintActivation::Mention => Activation::Mention,
            },
            can_use_tools: agent.can_use_tools.unwrap_or(false),
            tool_context: agent.tool_context.unwrap_or(ToolContext::Full),
            memory: agent.memory.map(|m| m.window as usize),
            memory_summary: agent.memory.is_some_and(|m| m.summary),
            context_window: agent.context_window.map(|c| c as usize),
            api_key,
            handle,
        })
    }
}

#[async_trait]
impl Agent for LlmAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(self.config.handle.clone()),
            name: self.config.name.clone(),
            activation: Some(self.config.activation.clone()),
            capabilities: if self.config.can_use_tools {
                vec!["tools".to_owned()]
            } else {
                Vec::new()
            },
            ..AgentInfo::default()
        })
    }

    /// `always` agents wake for every message but their own; `mention` agents never ask to
    /// wake: the floor calls them directly for `@name?`, and a bare `@name` is only a
    /// reference (seed 000, "@mention Syntax").
    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        Ok(
            if self.config.activation == Activation::Always
                && request.last_message.from != self.config.handle
            {
                ShouldWakeResponse::wake("activation: always")
            } else {
                ShouldWakeResponse::sleep()
            },
        )
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let prompt = self
            .prompt()
            .map_err(|e| AgentError::Other(format!("{}: prompt: {e}", self.config.handle)))?;
        let (from, summary) = self.memory_step(&request.messages).await;
        let mut messages = self.compose(
            &request.messages,
            from,
            summary.as_deref(),
            prompt.as_deref(),
        );
        let (tools, routes) = self.advertised_tools();
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        let mut tool_results = Vec::new();
        let mut on_delta = |piece: &str| {
            if let Some(d) = &deltas {
                d.send(piece);
            }
        };
        for _round in 0..=self.settings.max_tool_rounds {
            let chat = ChatRequest {
                model: &self.config.model,
                messages: &messages,
                temperature: self.config.temperature,
                stream: true,
                tools: &tools,
            };
            let result = self
                .client
                .chat(&chat, &mut on_delta)
                .await
                .map_err(|e| AgentError::Other(format!("{}: {e}", self.config.handle)))?;
            content.push_str(&result.content);
            if result.tool_calls.is_empty() {
                return Ok(finish(content, tool_calls, tool_results));
            }
            if tool_calls.len() >= self.settings.max_tool_rounds * 16 {
                break;
            }
            let mut calls = result.tool_calls;
            for (i, call) in calls.iter_mut().enumerate() {
                if call.id.is_empty() {
                    call.id = format!("call_{}_{i}", tool_calls.len());
                }
                if call.kind.is_empty() {
                    call.kind = "function".into();
                }
            }
            messages.push(ChatMessage {
                role: "assistant".into(),
                content: (!result.content.is_empty()).then(|| result.content.clone()),
                name: None,
                tool_calls: calls.clone(),
                tool_call_id: None,
            });
            for call in &calls {
                let (arguments, result) = self.run_tool(&routes, call).await;
                let mut text = result_text(&result);
                truncate(&mut text, self.settings.max_tool_result_bytes);
                messages.push(ChatMessage {
                    tool_call_id: Some(call.id.clone()),
                    ..ChatMessage::text("tool", text)
                });
                tool_calls.push(ToolCall {
                    name: call.function.name.clone(),
                    arguments,
                });
                tool_results.push(result);
            }
        }
        Err(AgentError::Other(format!(
            "{}: the model was still calling tools after {} rounds (the limit); no answer",
            self.config.handle, self.settings.max_tool_rounds
        )))
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        if !self.config.can_use_tools {
            return Ok(McpGrantResponse::decline(
                "this agent does not use tools (can_use_tools: false)",
            ));
        }
        let Some(connector) = &self.connector else {
            return Ok(McpGrantResponse::decline(
                "no MCP client is configured for this agent",
            ));
        };
        let toolbox = match connector.connect(&request.mcp).await {
            Ok(t) => t,
            Err(e) => {
                return Ok(McpGrantResponse::decline(format!(
                    "could not connect to {}: {e}",
                    request.mcp.name
                )));
            }
        };
        match self.add_toolbox(&request.mcp.name, toolbox).await {
            Ok(n) => Ok(McpGrantResponse::accept(format!(
                "{} can now use {} ({n} tools)",
                self.config.handle, request.mcp.name
            ))),
            Err(e) => Ok(McpGrantResponse::decline(format!(
                "could not list the tools of {}: {e}",
                request.mcp.name
            ))),
        }
    }
}

fn finish(content: String, tool_calls: Vec<ToolCall>, tool_results: Vec<Value>) -> RespondResponse {
    match pass_reason(&content) {
        Some(reason) => RespondResponse::Pass { reason },
        None => RespondResponse::Reply(AgentReply {
            content,
            tool_calls,
            tool_results,
            metadata: None,
        }),
    }
}

/// Whether an LLM's reply is a pass, and the text beside the marker as its reason.
///
/// The rule (case-insensitive): after trimming whitespace and trailing `.`, `!`, `*`, `_`
/// and backticks (Markdown emphasis and closing punctuation models add), the reply **ends
/// with** `[pass]` — `[PASS]`, `[pass]`, `Nothing to add. [PASS]` — or, after trimming leading
/// whitespace, `*`, `_` and backticks, it **starts with** `[pass]` (`[PASS] nothing from me`).
/// A marker in the middle of a reply (`reply [PASS] if you agree, otherwise…`) is not a pass:
/// the reference's "contains" rule would drop such a reply.
pub fn pass_reason(content: &str) -> Option<Option<String>> {
    const MARKER: &str = "[pass]";
    let decoration = |c: char| c.is_whitespace() || matches!(c, '.' | '!' | '*' | '_' | '`');
    let tail = content.trim_end_matches(decoration);
    let lower_tail = tail.to_lowercase();
    let rest = if lower_tail.ends_with(MARKER) && tail.is_char_boundary(tail.len() - MARKER.len()) {
        &tail[..tail.len() - MARKER.len()]
    } else {
        let head =
            content.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '`'));
        let prefix = head.get(..MARKER.len())?;
        if !prefix.eq_ignore_ascii_case(MARKER) {
            return None;
        }
        &head[MARKER.len()..]
    };
    let reason = rest.trim_matches(decoration);
    Some((!reason.is_empty()).then(|| one_line(reason, 200)))
}

/// What another agent's tool activity looks like in a prompt, per `tool_context` (the
/// reference's formats): `full` — each call as `$ command` and its output up to 500 bytes;
/// `summary` — the command's first line up to 80 bytes and the output's first 3 lines;
/// `none` — nothing. The command is the `cmd` argument for shell-like tools, else
/// `tool {arguments}`.
pub fn format_tool_activity(message: &Message, level: ToolContext) -> String {
    if level == ToolContext::None || message.tool_calls.is_empty() {
        return String::new();
    }
    let mut parts = Vec::new();
    for (i, call) in message.tool_calls.iter().enumerate() {
        let command = match call.arguments.get("cmd").and_then(Value::as_str) {
            Some(cmd) => cmd.to_owned(),
            None => format!("{} {}", call.name, Value::Object(call.arguments.clone())),
        };
        let output = message
            .tool_results
            .get(i)
            .map(result_text)
            .unwrap_or_default();
        match level {
            ToolContext::Summary => {
                let mut first = command.lines().next().unwrap_or("").to_owned();
                if first.len() > 80 {
                    truncate_at(&mut first, 80);
                    first.push_str("...");
                }
                let trimmed = output.trim();
                let lines: Vec<&str> = trimmed.lines().collect();
                let shown = if lines.len() <= 3 {
                    trimmed.to_owned()
                } else {
                    format!(
                        "{}\n... ({} more lines)",
                        lines[..3].join("\n"),
                        lines.len() - 3
                    )
                };
                parts.push(format!("$ {first}\n{shown}"));
            }
            _ => {
                let mut out = output;
                if out.len() > 500 {
                    truncate_at(&mut out, 500);
                    out.push_str("...");
                }
                parts.push(format!("$ {command}\n{out}"));
            }
        }
    }
    parts.join("\n\n")
}

/// The token estimate used against `context_window`: bytes / 4, rounded up, plus 4 per
/// message for the role and separators.
pub fn estimate_tokens(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .map(|m| {
            let bytes = m.content.as_deref().map_or(0, str::len)
                + m.tool_calls
                    .iter()
                    .map(|c| c.function.name.len() + c.function.arguments.len())
                    .sum::<usize>();
            bytes.div_ceil(4) + 4
        })
        .sum()
}

fn result_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The API's `name` allows `[a-zA-Z0-9_-]` only.
fn api_name(from: &str) -> String {
    from.trim_start_matches('@')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn one_line(text: &str, max: usize) -> String {
    let mut line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() > max {
        truncate_at(&mut line, max);
        line.push('…');
    }
    line
}

fn truncate_at(text: &mut String, max: usize) {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let total = text.len();
        truncate_at(text, max);
        let _ = write!(text, "\n[… {} more bytes cut]", total - text.len());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
