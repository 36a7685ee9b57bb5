//! The OFC registry API (`/registry/agents…`). The hub serves it as a compatible view of its own
//! agents; these are its bodies.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::Token;

open_enum! {
    /// An agent's state in a registry.
    pub enum RegistryStatus {
        /// Registered and usable on floors.
        Active = "active",
    }
}

/// `metadata` of a registered agent: what the registry shows and searches.
///
/// All fields are optional because the same object is a registration's metadata, the
/// registry's view (`{ ... }` in the spec) and a `PATCH` (only the fields to change). Fields ofc
/// does not know are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMetadata {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One line: what to send this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagline: Option<String>,
    /// A paragraph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What it can do. `Some(vec![])` clears the list in a `PATCH`; `None` leaves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    /// Example requests, with the same `PATCH` meaning as `capabilities`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<Vec<String>>,
    /// Fields this version of ofc does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentMetadata {
    /// Applies a `PATCH /registry/agents/{id}` body: every field present in `patch` replaces
    /// this one's; an unknown field set to `null` is removed, any other is set.
    pub fn apply_patch(&mut self, patch: &AgentMetadata) {
        fn set<T: Clone>(dst: &mut Option<T>, src: &Option<T>) {
            if let Some(v) = src {
                *dst = Some(v.clone());
            }
        }
        set(&mut self.name, &patch.name);
        set(&mut self.tagline, &patch.tagline);
        set(&mut self.description, &patch.description);
        set(&mut self.capabilities, &patch.capabilities);
        set(&mut self.examples, &patch.examples);
        for (k, v) in &patch.extra {
            if v.is_null() {
                self.extra.remove(k);
            } else {
                self.extra.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `POST /registry/agents` request (with the creator's bearer token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterAgentRequest {
    /// The handle to register (`@code`).
    pub id: String,
    /// Its OFC endpoint (`https://code-agent.example.com/ofc`).
    pub endpoint: String,
    /// The creator's account, when not implied by the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The agent's public key (PEM in the spec's example).
    pub public_key: String,
    /// What the registry shows.
    #[serde(default)]
    pub metadata: AgentMetadata,
}

/// `POST /registry/agents` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterAgentResponse {
    /// The registered handle.
    pub agent_id: String,
    /// The secret the agent uses to prove its identity to floors.
    pub agent_token: Token,
    /// The agent's state.
    pub status: RegistryStatus,
    /// The registry's host (`registry.ofc.dev`).
    pub registry: String,
}

/// `GET /registry/agents/{agent_id}` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegistryAgent {
    /// The handle (`@code`).
    pub id: String,
    /// Its OFC endpoint.
    pub endpoint: String,
    /// The creator's account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The agent's state.
    pub status: RegistryStatus,
    /// What was registered.
    #[serde(default)]
    pub metadata: AgentMetadata,
    /// Usage figures, when the registry keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<AgentStats>,
}

/// `stats` of a registry agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentStats {
    /// Floors the agent is on now.
    #[serde(default)]
    pub floors_active: u64,
    /// Mean rating, absent before the first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_rating: Option<f64>,
    /// Hours spent on floors. Written as an integer when whole, as the spec shows it.
    #[serde(default, serialize_with = "whole_as_integer")]
    pub total_hours: f64,
}

/// Writes whole numbers without a fraction (`5420`, not `5420.0`).
fn whole_as_integer<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    // Below 2^53 every whole f64 is exactly an i64.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if v.fract() == 0.0 && v.abs() < EXACT {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// `PATCH /registry/agents/{agent_id}` request: the metadata fields to change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateAgentRequest {
    /// The fields to change (see [`AgentMetadata::apply_patch`]).
    #[serde(default)]
    pub metadata: AgentMetadata,
}

/// The query of `GET /registry/agents/search` (`?q=data+analysis&capabilities=python`), for a
/// query-string deserializer: any other parameter is refused, not ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Required capabilities, comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<String>,
}

impl SearchQuery {
    /// The required capabilities, split on commas, trimmed, empty ones dropped.
    pub fn capability_list(&self) -> Vec<&str> {
        self.capabilities
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }
}

/// `GET /registry/agents/search` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// Best match first.
    #[serde(default)]
    pub results: Vec<SearchResult>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The handle (`@data`).
    pub id: String,
    /// Its tagline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagline: Option<String>,
    /// Mean rating, absent before the first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<f64>,
}
