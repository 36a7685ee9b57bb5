//! What a floor tells its observers, live.

use index_schema::wire::Message;
use serde::{Deserialize, Serialize};

use crate::controller::{CallId, Note, RoundId, TurnEndReason, TurnId, WakeAnswer, WakeReason};
use crate::handle::{Handle, Speaker};

/// One thing that happened on a floor, in the order it happened. Serialized with a `type`
/// tag (`message`, `turn_started`, …), which is also the SSE event name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FloorEvent {
    /// A message was stored (the user's, or an agent's response).
    Message {
        /// The message.
        message: Message,
    },
    /// A user message started a turn.
    TurnStarted {
        /// The turn.
        turn: TurnId,
        /// The user message that started it.
        message_id: String,
    },
    /// A should-wake round started.
    Polling {
        /// The round.
        round: RoundId,
        /// Who is asked, in blueprint order.
        candidates: Vec<Handle>,
    },
    /// A should-wake round finished.
    ShouldWake {
        /// The round.
        round: RoundId,
        /// Each candidate's answer, in blueprint order.
        answers: Vec<TimedAnswer>,
        /// How long the round took.
        elapsed_ms: f64,
    },
    /// An agent was asked to respond.
    Responding {
        /// The call.
        call: CallId,
        /// The agent.
        agent: Handle,
        /// Why.
        wake_reason: WakeReason,
        /// Whom it answers to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initiator: Option<Speaker>,
    },
    /// A piece of a streamed response.
    Delta {
        /// The call.
        call: CallId,
        /// The agent.
        agent: Handle,
        /// The piece.
        content: String,
    },
    /// A respond call finished.
    CallFinished {
        /// The call.
        call: CallId,
        /// The agent.
        agent: Handle,
        /// `responded`, `passed` or `failed`.
        outcome: CallOutcome,
        /// How long it took.
        elapsed_ms: f64,
    },
    /// Something the controller noted (a pass, an unanswered poll, a refused cycle…).
    Note {
        /// The note.
        note: Note,
    },
    /// A turn ended.
    TurnEnded {
        /// The turn.
        turn: TurnId,
        /// Why.
        reason: TurnEndReason,
        /// Responses in the turn.
        hops: u32,
        /// Whether it was cancelled.
        cancelled: bool,
        /// How long it took.
        elapsed_ms: f64,
    },
    /// A user message was queued behind the running turn.
    Queued {
        /// The message.
        message_id: String,
        /// Its place in the queue, from 1.
        position: usize,
    },
    /// The roster changed.
    Roster {
        /// The agents, in blueprint order.
        agents: Vec<Handle>,
    },
    /// The conversation was cleared (`/clear`); later calls see only what follows.
    Cleared {
        /// How many messages were forgotten.
        forgotten: usize,
    },
    /// The floor closed; nothing follows.
    Closed,
}

/// One agent's should-wake answer and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedAnswer {
    /// The agent.
    pub agent: Handle,
    /// What it answered (late and failed count as no).
    pub answer: WakeAnswer,
    /// How long it took, up to the deadline.
    pub elapsed_ms: f64,
}

/// How a respond call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CallOutcome {
    /// It responded; the message follows as a [`FloorEvent::Message`].
    Responded {
        /// The stored message.
        message_id: String,
    },
    /// It passed.
    Passed {
        /// Its reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// It failed or missed its deadline.
    Failed {
        /// Why.
        error: String,
    },
}

impl FloorEvent {
    /// The `type` tag, used as the SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Message { .. } => "message",
            Self::TurnStarted { .. } => "turn_started",
            Self::Polling { .. } => "polling",
            Self::ShouldWake { .. } => "should_wake",
            Self::Responding { .. } => "responding",
            Self::Delta { .. } => "delta",
            Self::CallFinished { .. } => "call_finished",
            Self::Note { .. } => "note",
            Self::TurnEnded { .. } => "turn_ended",
            Self::Queued { .. } => "queued",
            Self::Roster { .. } => "roster",
            Self::Cleared { .. } => "cleared",
            Self::Closed => "closed",
        }
    }
}
