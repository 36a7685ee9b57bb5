//! The agent kinds whose constructors live in other parts of ofc, each reached through one
//! function here.

use std::path::Path;
use std::sync::Arc;

use index_schema::blueprint::{Defaults, InlineAgent};
use runtime::llm::{LlmAgent, LlmConfigError};

/// The built-in LLM agent for an inline `type: llm` agent (or an `agent.yaml` with a `model`
/// and no `command`). The API key is read from the environment variable the agent names
/// (`api_key_env`), never from the blueprint.
/// A prompt template is rendered before each turn, its files read from `dir` (the blueprint's
/// directory; `None` for an agent.yaml, whose prompt is text).
pub fn llm_agent(
    agent: &InlineAgent,
    defaults: Option<&Defaults>,
    dir: Option<&Path>,
) -> Result<Arc<LlmAgent>, LlmConfigError> {
    let llm = LlmAgent::from_blueprint(agent, defaults, |var| std::env::var(var).ok())?;
    let source =
        dir.and_then(|d| crate::blueprint_files::prompt_source(agent.prompt.as_deref(), d));
    Ok(Arc::new(match source {
        Some(s) => llm.with_prompt_source(s),
        None => llm,
    }))
}

/// The field of an inline agent a configuration error is about (`api_key_env` for a key that
/// is not set), relative to the agent's entry.
pub fn llm_error_field(e: &LlmConfigError) -> &'static str {
    match e {
        LlmConfigError::NotLlm { .. } => "type",
        LlmConfigError::NoModel { .. } => "model",
        LlmConfigError::NoEndpoint { .. } | LlmConfigError::BadEndpoint { .. } => "endpoint",
        LlmConfigError::MissingApiKey { .. } => "api_key_env",
    }
}
