//! The agent kinds whose constructors live in other parts of ofc, each reached through one
//! function here.

use std::sync::Arc;

use index_schema::blueprint::{Defaults, InlineAgent};
use runtime::agent::Agent;
use runtime::llm::LlmAgent;

/// The built-in LLM agent for an inline `type: llm` agent (or an `agent.yaml` with a `model`
/// and no `command`). The API key is read from the environment variable the agent names
/// (`api_key_env`), never from the blueprint.
pub fn llm_agent(agent: &InlineAgent, defaults: Option<&Defaults>) -> Result<Arc<LlmAgent>, String> {
    LlmAgent::from_blueprint(agent, defaults, |var| std::env::var(var).ok())
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// An agent started from a container image (`Start::Container`).
pub fn container_agent(image: &str, _port: u16) -> Result<Arc<dyn Agent>, String> {
    Err(format!(
        "container agents: not in this build (cannot start image `{image}` yet)"
    ))
}
