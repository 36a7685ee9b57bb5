//! The reference CLI's `thinking` field: how an agent's reasoning is told apart from its
//! answer. Accepted with a warning; ofc does not act on it yet.

use serde::{Deserialize, Serialize};

/// `thinking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    /// The reasoning field if the endpoint sends one, else the tags.
    Auto,
    /// The endpoint's reasoning field.
    Field,
    /// Inline tags (`thinking_tags`).
    Tags,
    /// No separation.
    None,
}
