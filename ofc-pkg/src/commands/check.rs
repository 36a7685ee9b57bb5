//! `ofc check ping | models | ask`: test a model endpoint (OpenAI-compatible) with the client
//! ofc's LLM agents use. The target is an `@agent` of the blueprint (`-f`), else the
//! `--endpoint` alone (no blueprint read: it works outside a project), else every LLM agent of
//! the blueprint; `--endpoint`, `--key` and `--model` override what the agent says. The key is
//! never printed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::Subcommand;
use index_schema::blueprint::{AgentEntry, ApiKey, InlineAgent, InlineAgentType};
use runtime::agent::HttpAgent;
use runtime::llm::{ChatClient, ChatMessage, ChatRequest, ClientSettings, LlmConfig, LlmError};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

use crate::output::{ExitStatus, Output, UserError, clean_text};

/// How long `ping` and `models` wait for `/models`.
const LISTING_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `ask` waits for the whole answer.
const ASK_DEADLINE: Duration = Duration::from_secs(120);
/// The largest `/models` body read.
const MAX_LISTING_BYTES: usize = 4 << 20;
/// The temperature of a target given by flags only (the LLM agents' default).
const FLAG_TEMPERATURE: f64 = runtime::llm::DEFAULT_TEMPERATURE;

/// `ofc check` verbs.
#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// Whether the endpoint answers `GET /models` (with the key), how fast, and whether it
    /// lists the configured model.
    Ping(ListArgs),
    /// The models the endpoint lists (`*` marks the configured one).
    Models(ListArgs),
    /// One chat completion: `ofc check ask [@agent] QUESTION…` (the agent's prompt, rendered,
    /// as the system message), printed as it streams in.
    Ask(AskArgs),
}

/// Where to look and what to override.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// The blueprint whose agents are checked.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "PATH",
        default_value = "blueprint.yaml"
    )]
    pub file: PathBuf,
    /// The endpoint (`http://127.0.0.1:11434/v1`); alone, no blueprint is read.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The API key, sent as a bearer token (over the agent's `api_key` / `api_key_env`).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// The model (over the agent's).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

/// `ping` and `models`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// One agent of the blueprint (`@data`); default: every LLM agent, or `--endpoint`.
    #[arg(value_name = "@AGENT")]
    pub agent: Option<String>,
    /// The target.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `ask`.
#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// `[@agent] the question…` (the words are joined with spaces).
    #[arg(value_name = "WORDS", required = true, num_args = 1..)]
    pub words: Vec<String>,
    /// The target.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// One endpoint to check.
struct Target {
    /// `@data`, or `--endpoint`.
    label: String,
    endpoint: url::Url,
    key: Option<SecretString>,
    model: Option<String>,
    temperature: f64,
    /// The agent's prompt, rendered (for `ask`).
    prompt: Option<String>,
}

/// Runs the verb.
pub fn run(command: &CheckCommand, out: &mut Output) -> Result<ExitStatus> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match command {
        CheckCommand::Ping(args) => {
            let targets = targets(&args.target, args.agent.as_deref(), out)?;
            Ok(rt.block_on(ping(targets, out)))
        }
        CheckCommand::Models(args) => {
            let targets = targets(&args.target, args.agent.as_deref(), out)?;
            Ok(rt.block_on(models(targets, out)))
        }
        CheckCommand::Ask(args) => {
            let (agent, words) = match args.words.split_first() {
                Some((first, rest)) if first.starts_with('@') => (Some(first.as_str()), rest),
                _ => (None, &args.words[..]),
            };
            let question = words.join(" ");
            if question.trim().is_empty() {
                return Err(UserError::new("no question to ask")
                    .hint("ofc check ask [@agent] \"your question\"")
                    .into());
            }
            let mut targets = targets(&args.target, agent, out)?;
            if targets.len() != 1 {
                let names: Vec<&str> = targets.iter().map(|t| t.label.as_str()).collect();
                return Err(UserError::new(format!(
                    "`ask` needs one target; the blueprint has {} LLM agents ({})",
                    targets.len(),
                    names.join(", ")
                ))
                .hint("name one: ofc check ask @agent \"…\", or give --endpoint")
                .into());
            }
            rt.block_on(ask(targets.remove(0), &question, out))
        }
    }
}

/// The targets the arguments name.
fn targets(args: &TargetArgs, agent: Option<&str>, out: &mut Output) -> Result<Vec<Target>> {
    if agent.is_none()
        && let Some(endpoint) = &args.endpoint
    {
        return Ok(vec![Target {
            label: "--endpoint".to_owned(),
            endpoint: parse_endpoint(endpoint)?,
            key: args.key.clone().map(SecretString::from),
            model: args.model.clone(),
            temperature: FLAG_TEMPERATURE,
            prompt: None,
        }]);
    }
    let loaded = crate::run::plan::load(&args.file).map_err(|e| {
        anyhow::Error::from(UserError::new(e).hint(
            "give the blueprint with -f FILE, or check an endpoint alone with --endpoint URL",
        ))
    })?;
    crate::run::plan::say_warnings(out, &loaded.warnings);
    let bp = &loaded.blueprint;
    let inline: Vec<&InlineAgent> = bp
        .agents
        .iter()
        .filter_map(|a| match a {
            AgentEntry::Inline(a) => Some(a),
            _ => None,
        })
        .collect();
    let chosen: Vec<&InlineAgent> = match agent {
        Some(handle) => {
            let Some(a) = inline.iter().find(|a| a.id.to_string() == handle) else {
                let known: Vec<String> = inline.iter().map(|a| a.id.to_string()).collect();
                return Err(UserError::new(format!(
                    "{} has no inline agent {handle}",
                    loaded.path.display()
                ))
                .hint(format!("its inline agents: {}", known.join(", ")))
                .into());
            };
            if a.agent_type() != InlineAgentType::Llm {
                return Err(UserError::new(format!(
                    "{handle} is not an llm agent; `ofc check` tests model endpoints"
                ))
                .into());
            }
            vec![*a]
        }
        None => {
            let llm: Vec<&InlineAgent> = inline
                .into_iter()
                .filter(|a| a.agent_type() == InlineAgentType::Llm)
                .collect();
            if llm.is_empty() {
                return Err(UserError::new(format!(
                    "{} has no llm agent to check",
                    loaded.path.display()
                ))
                .hint("check an endpoint alone with --endpoint URL")
                .into());
            }
            llm
        }
    };
    chosen
        .into_iter()
        .map(|a| target_of(a, bp.defaults.as_ref(), args, &loaded.dir, out))
        .collect()
}

/// An agent as a target, the flags over its fields.
fn target_of(
    agent: &InlineAgent,
    defaults: Option<&index_schema::blueprint::Defaults>,
    args: &TargetArgs,
    dir: &std::path::Path,
    out: &mut Output,
) -> Result<Target> {
    let mut agent = agent.clone();
    if let Some(e) = &args.endpoint {
        agent.endpoint = Some(e.clone());
    }
    // A missing model is not an error for ping and models (they list what there is).
    let model_given = args.model.is_some()
        || agent.model.is_some()
        || defaults.and_then(|d| d.model.as_ref()).is_some();
    if let Some(m) = &args.model {
        agent.model = Some(m.clone());
    } else if !model_given {
        agent.model = Some(String::new());
    }
    if let Some(k) = &args.key {
        agent.api_key = Some(ApiKey::new(k.clone()));
        agent.api_key_env = None;
    }
    let config = LlmConfig::from_blueprint(&agent, defaults, |k| std::env::var(k).ok())
        .map_err(|e| UserError::new(e.to_string()).hint("or give --endpoint URL / --key KEY"))?;
    // The prompt as the agent sees it this turn; a template that fails to render is sent as
    // written (with a warning), so a check still runs.
    let prompt = match crate::blueprint_files::prompt_source(config.prompt.as_deref(), dir) {
        Some(render) => match render() {
            Ok(p) => Some(p),
            Err(e) => {
                out.status(&format!(
                    "warning: {}: the prompt did not render ({e}); it is sent as written",
                    config.handle
                ));
                config.prompt.clone()
            }
        },
        None => config.prompt.clone(),
    };
    Ok(Target {
        label: config.handle.clone(),
        endpoint: config.endpoint,
        key: config.api_key,
        model: model_given.then_some(config.model),
        temperature: config.temperature,
        prompt,
    })
}

fn parse_endpoint(text: &str) -> Result<url::Url> {
    index_schema::http_url::parse(text, index_schema::http_url::Rules::ANY).map_err(|e| {
        UserError::new(format!("--endpoint {text:?} is not an http(s) URL: {e}"))
            .hint("for example --endpoint http://127.0.0.1:11434/v1")
            .into()
    })
}

/// `{endpoint}/models`, shown without a user name or password.
fn shown(endpoint: &url::Url) -> String {
    let mut u = endpoint.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.as_str().trim_end_matches('/').to_owned()
}

/// Why a listing failed, and what to do about it.
struct Failure {
    message: String,
    hint: Option<&'static str>,
}

/// `GET {endpoint}/models`: the model ids, sorted.
async fn list_models(target: &Target) -> std::result::Result<Vec<String>, Failure> {
    let url = format!("{}/models", target.endpoint.as_str().trim_end_matches('/'));
    let mut req = HttpAgent::default_client()
        .get(&url)
        .timeout(LISTING_TIMEOUT);
    if let Some(key) = &target.key {
        req = req.bearer_auth(key.expose_secret());
    }
    let mut resp = req.send().await.map_err(|e| Failure {
        message: if e.is_timeout() {
            format!("no answer within {LISTING_TIMEOUT:?}")
        } else {
            format!("cannot reach {}: {}", shown(&target.endpoint), cause(&e))
        },
        hint: Some("is the server running? check the endpoint (--endpoint URL)"),
    })?;
    let status = resp.status();
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| Failure {
        message: format!("the answer broke off: {}", cause(&e)),
        hint: None,
    })? {
        if body.len() + chunk.len() > MAX_LISTING_BYTES {
            return Err(Failure {
                message: format!("the /models answer is larger than {MAX_LISTING_BYTES} bytes"),
                hint: None,
            });
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(status_failure(
            status.as_u16(),
            &String::from_utf8_lossy(&body),
        ));
    }
    let doc: Value = serde_json::from_slice(&body).map_err(|e| Failure {
        message: format!("the /models answer is not JSON: {e}"),
        hint: Some("is this an OpenAI-compatible endpoint (ending in /v1)?"),
    })?;
    let Some(data) = doc["data"].as_array() else {
        return Err(Failure {
            message: "the /models answer has no `data` list".to_owned(),
            hint: Some("is this an OpenAI-compatible endpoint (ending in /v1)?"),
        });
    };
    let mut ids: Vec<String> = data
        .iter()
        .filter_map(|m| m["id"].as_str().map(clean_text))
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

fn status_failure(status: u16, body: &str) -> Failure {
    let start: String = body.chars().take(200).collect();
    Failure {
        message: format!("HTTP {status}: {}", clean_text(start.trim())),
        hint: match status {
            401 | 403 => Some("check the key (--key, the agent's api_key or api_key_env)"),
            404 => Some("check the endpoint: OpenAI-compatible ones usually end in /v1"),
            _ => None,
        },
    }
}

fn cause(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}

async fn ping(targets: Vec<Target>, out: &mut Output) -> ExitStatus {
    let mut ok = true;
    let mut reports = Vec::new();
    let mut hints: Vec<&str> = Vec::new();
    for t in &targets {
        let started = Instant::now();
        let listed = list_models(t).await;
        let ms = started.elapsed().as_millis() as u64;
        let mut r = json!({
            "target": t.label, "endpoint": shown(&t.endpoint), "latency_ms": ms,
            "model": t.model,
        });
        if !out.json {
            out.data(&t.label);
            out.data(&format!("  endpoint: {}", shown(&t.endpoint)));
        }
        match listed {
            Ok(ids) => {
                r["ok"] = json!(true);
                r["models"] = json!(ids.len());
                if !out.json {
                    out.data(&format!("  OK ({} models, {ms} ms)", ids.len()));
                }
                if let Some(m) = &t.model {
                    let present = ids.contains(m);
                    ok &= present;
                    r["model_present"] = json!(present);
                    if !out.json {
                        out.data(&if present {
                            format!("  model {m:?}: present")
                        } else {
                            format!(
                                "  model {m:?}: NOT in the /models listing ({} available)",
                                ids.len()
                            )
                        });
                    }
                    if !present && !hints.contains(&"`ofc check models` lists them") {
                        hints.push("`ofc check models` lists them");
                    }
                }
            }
            Err(f) => {
                ok = false;
                r["ok"] = json!(false);
                r["error"] = json!(f.message);
                if !out.json {
                    out.data(&format!("  FAIL: {}", f.message));
                }
                if let Some(h) = f.hint
                    && !hints.contains(&h)
                {
                    hints.push(h);
                }
            }
        }
        reports.push(r);
    }
    if out.json {
        out.json_value(&json!({ "ok": ok, "targets": reports }));
    }
    out.hints(&hints);
    if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }
}

async fn models(targets: Vec<Target>, out: &mut Output) -> ExitStatus {
    let mut ok = true;
    let mut reports = Vec::new();
    let mut hints: Vec<&str> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let listed = list_models(t).await;
        if !out.json {
            if i > 0 {
                out.data("");
            }
            out.data(&format!("{} ({})", t.label, shown(&t.endpoint)));
        }
        let mut r = json!({"target": t.label, "endpoint": shown(&t.endpoint), "model": t.model});
        match listed {
            Ok(ids) => {
                if !out.json {
                    for id in &ids {
                        let mark = if Some(id) == t.model.as_ref() {
                            "* "
                        } else {
                            "  "
                        };
                        out.data(&format!("{mark}{id}"));
                    }
                }
                r["models"] = json!(ids);
            }
            Err(f) => {
                ok = false;
                if !out.json {
                    out.data(&format!("  FAIL: {}", f.message));
                }
                r["error"] = json!(f.message);
                if let Some(h) = f.hint
                    && !hints.contains(&h)
                {
                    hints.push(h);
                }
            }
        }
        reports.push(r);
    }
    if out.json {
        out.json_value(&json!({ "ok": ok, "targets": reports }));
    }
    out.hints(&hints);
    if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }
}

async fn ask(target: Target, question: &str, out: &mut Output) -> Result<ExitStatus> {
    let Some(model) = target.model.clone() else {
        return Err(UserError::new(format!("{}: no model to ask", target.label))
            .hint("give --model MODEL, or a `model` to the agent or `defaults.model`")
            .hint("`ofc check models` lists the endpoint's models")
            .into());
    };
    let settings = ClientSettings {
        deadline: ASK_DEADLINE,
        max_attempts: 1,
        ..ClientSettings::default()
    };
    let client = ChatClient::new(
        &target.endpoint,
        target.key.clone(),
        HttpAgent::default_client(),
        settings,
    );
    let mut messages = Vec::new();
    if let Some(p) = &target.prompt {
        messages.push(ChatMessage::text("system", p.clone()));
    }
    messages.push(ChatMessage::text("user", question));
    let request = ChatRequest {
        model: &model,
        messages: &messages,
        temperature: target.temperature,
        stream: true,
        tools: &[],
    };
    let json = out.json;
    let started = Instant::now();
    let mut streamed = false;
    let mut on_delta = |piece: &str| {
        streamed |= !piece.is_empty();
        if !json {
            use std::io::Write as _;
            let mut o = std::io::stdout().lock();
            let _ = write!(o, "{}", clean_text(piece));
            let _ = o.flush();
        }
    };
    let result = client.chat(&request, &mut on_delta).await;
    let ms = started.elapsed().as_millis() as u64;
    match result {
        Ok(r) => {
            if json {
                out.json_value(&json!({
                    "target": target.label, "endpoint": shown(&target.endpoint),
                    "model": model, "answer": r.content,
                    "finish_reason": r.finish_reason, "latency_ms": ms,
                }));
            } else {
                out.data("");
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => {
            if !json && streamed {
                // End the partial answer's line before the error.
                out.data("");
            }
            let mut user =
                UserError::new(format!("{}: the question was not answered", target.label));
            match &e {
                LlmError::Status { status, .. } if *status == 401 || *status == 403 => {
                    user = user.hint("check the key (--key, the agent's api_key or api_key_env)");
                }
                LlmError::Status { status: 404, .. } => {
                    user = user.hint(format!(
                        "is {model:?} served there? `ofc check models` lists the endpoint's models"
                    ));
                }
                LlmError::Transport(_) | LlmError::Deadline(_) => {
                    user = user.hint("is the server running? check the endpoint (--endpoint URL)");
                }
                _ => {}
            }
            Err(crate::output::explain(anyhow::Error::new(e), user))
        }
    }
}
