//! What a controller is built from: the roster of agents and the limits of a turn.

use serde::{Deserialize, Serialize};

use crate::handle::Handle;

/// How an agent takes part in should-wake polling (`activation` in `agent.yaml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// Asked with `/ofc/should-wake` when no one is explicitly requested; wakes if it says yes.
    #[default]
    Mention,
    /// Counts as having said yes to every should-wake poll it is a candidate of, without being
    /// asked (the seed's "`@data` wakes (activation: always)").
    Always,
}

/// One agent of the floor, in blueprint order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AgentSpec {
    /// Its handle on this floor.
    pub handle: Handle,
    /// How it is woken when no one is explicitly requested.
    #[serde(default)]
    pub activation: Activation,
}

impl AgentSpec {
    /// An agent with `activation: mention`.
    pub fn mention(handle: Handle) -> Self {
        Self {
            handle,
            activation: Activation::Mention,
        }
    }

    /// An agent with `activation: always`.
    pub fn always(handle: Handle) -> Self {
        Self {
            handle,
            activation: Activation::Always,
        }
    }
}

/// What to do when an agent requests (`@x?`) an agent that is already on the call stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CyclePolicy {
    /// Refuse that one delegation (recorded) and go on as if the mention had no `?`. In the
    /// common A→B→A case ("@a? here is what you asked for") that is exactly a return to A.
    #[default]
    Skip,
    /// End the turn with [`TurnEndReason::CycleRefused`](super::TurnEndReason::CycleRefused).
    EndTurn,
}

/// The guards of a turn. Every turn (one user message and everything it sets off) starts from
/// zero.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// How many times agents may be asked to respond (`/ofc/respond`) in one turn, passes
    /// included. Must be at least 1.
    pub max_hops: u32,
    /// How many times the floor may pass directly between the same two agents (in either
    /// direction) in one turn. Must be at least 1. The default, 6, allows three full
    /// delegation round trips between two agents and stops two chatty agents well before the
    /// hop limit.
    pub max_pair_exchanges: u32,
    /// What a delegation to an agent already on the call stack does.
    pub on_cycle: CyclePolicy,
    /// How many user messages may wait while a turn runs; 0 refuses every message that
    /// arrives mid-turn.
    pub max_queued_messages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_hops: 16,
            max_pair_exchanges: 6,
            on_cycle: CyclePolicy::Skip,
            max_queued_messages: 8,
        }
    }
}
