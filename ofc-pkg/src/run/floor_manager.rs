//! `@floor-manager`, built into every floor `ofc run` opens: asked `@floor-manager? who can
//! <do X>?`, it searches the configured hub (`OFC_HUB`) for agents that can, and answers with
//! what it found and how to add one to the blueprint.
//!
//! It only answers when called (`@floor-manager?`); it never wakes by itself. What the issue
//! also asks of it — adding the agent it found to the running floor with the user's approval,
//! Agent Lobby's authorised-requesters rule, and access requests under the policies — is not
//! done: the user adds the agent to `blueprint.yaml` and runs again.

use async_trait::async_trait;
use index_schema::hub_api::search::SearchParams;
use index_schema::wire::{
    Activation, AgentInfo, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use runtime::agent::{Agent, AgentError, Deltas};

use crate::hub::Hub;

/// The handle.
pub const HANDLE: &str = "@floor-manager";

/// How many agents an answer lists.
const LIMIT: usize = 5;

/// The built-in floor manager.
#[derive(Debug)]
pub struct FloorManagerAgent {
    hub: Result<Hub, String>,
    /// Handles already on the floor (a hit already present is said to be).
    present: Vec<String>,
}

impl FloorManagerAgent {
    /// A floor manager searching `hub` (or explaining why it cannot), on a floor with
    /// `present` agents.
    pub fn new(hub: Result<Hub, String>, present: Vec<String>) -> Self {
        Self { hub, present }
    }
}

/// What is asked, without the handle, the question form and punctuation: `@floor-manager? who
/// can analyse sales data?` → `analyse sales data`.
pub fn capability_query(text: &str) -> String {
    let mut t = text
        .replace("@floor-manager?", " ")
        .replace("@floor-manager", " ");
    t = t.trim().trim_end_matches(['?', '.', '!']).trim().to_owned();
    let lower = t.to_lowercase();
    for prefix in [
        "who can help me",
        "who can help with",
        "who can",
        "who could",
        "is there an agent that can",
        "is there an agent for",
        "is there anyone who can",
        "find an agent that can",
        "find an agent for",
        "find me an agent that can",
        "find me an agent for",
        "i need an agent that can",
        "i need an agent for",
    ] {
        if lower.starts_with(prefix) {
            let rest = t[prefix.len()..].trim();
            let lower = rest.to_lowercase();
            for verb in ["do ", "help with ", "handle ", "take care of "] {
                if lower.starts_with(verb) {
                    return rest[verb.len()..].trim().to_owned();
                }
            }
            return rest.to_owned();
        }
    }
    t
}

#[async_trait]
impl Agent for FloorManagerAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(HANDLE.to_owned()),
            name: Some("Floor manager".to_owned()),
            tagline: Some("Finds agents on the hub: ask `@floor-manager? who can …?`".to_owned()),
            activation: Some(Activation::Mention),
            capabilities: vec!["agent-discovery".to_owned()],
            ..AgentInfo::default()
        })
    }

    async fn should_wake(
        &self,
        _request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        Ok(ShouldWakeResponse::sleep())
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let asked = request
            .messages
            .iter()
            .rev()
            .find(|m| m.content.contains(HANDLE))
            .or(request.messages.last())
            .map(|m| (m.from.clone(), m.content.clone()))
            .unwrap_or_default();
        let query = capability_query(&asked.1);
        let answer = if query.is_empty() {
            format!(
                "{} ask me `@floor-manager? who can <do something>?` and I search the hub for agents that can.",
                asked.0
            )
        } else {
            match &self.hub {
                Err(e) => format!("{} I cannot search a hub: {e}", asked.0),
                Ok(hub) => {
                    let params = SearchParams {
                        q: Some(query.clone()),
                        limit: Some(LIMIT.to_string()),
                        ..SearchParams::default()
                    };
                    match hub.search(&params).await {
                        Err(e) => {
                            format!("{} I could not search {}: {e:#}", asked.0, hub.endpoint(""))
                        }
                        Ok(page) if page.hits.is_empty() => format!(
                            "{} no agent on {} matches \"{query}\".",
                            asked.0,
                            hub.endpoint("")
                        ),
                        Ok(page) => {
                            let mut text = format!(
                                "{} these agents on {} can help with \"{query}\":\n",
                                asked.0,
                                hub.endpoint("")
                            );
                            for hit in page.hits.iter().take(LIMIT) {
                                let agent = hit.name.rsplit('/').next().unwrap_or(&hit.name);
                                let here = self.present.iter().any(|h| h == &format!("@{agent}"));
                                text.push_str(&format!(
                                    "- `{}@{}` — {}: {}{}{}\n",
                                    hit.name,
                                    hit.version,
                                    hit.display_name,
                                    hit.tagline,
                                    if hit.deprecated { " (deprecated)" } else { "" },
                                    if here { " (already on this floor)" } else { "" },
                                ));
                            }
                            let first = &page.hits[0];
                            let major = first.version.split('.').next().unwrap_or("0");
                            text.push_str(&format!(
                                "To bring one in, add it under `agents:` in the blueprint (e.g. `- {}@^{major}`) and run again; it is pulled and locked as usual.",
                                first.name
                            ));
                            text
                        }
                    }
                }
            }
        };
        if let Some(d) = &deltas {
            d.send(answer.clone());
        }
        Ok(RespondResponse::reply(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_becomes_a_capability_query() {
        assert_eq!(
            capability_query("@floor-manager? who can analyse sales data?"),
            "analyse sales data"
        );
        assert_eq!(
            capability_query("@floor-manager? Is there an agent for SQL."),
            "SQL"
        );
        assert_eq!(
            capability_query("@floor-manager? summarise PDFs"),
            "summarise PDFs"
        );
        assert_eq!(capability_query("@floor-manager?"), "");
        assert_eq!(
            capability_query("@floor-manager? who can do data analysis?"),
            "data analysis"
        );
    }
}
