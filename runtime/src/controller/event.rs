//! What the floor tells the controller.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::handle::Handle;

/// Identifies one should-wake poll, so a late answer to an earlier poll is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RoundId(pub u64);

/// Identifies one `/ofc/respond` call, so a response to an abandoned call is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallId(pub u64);

/// Numbers the turns of a floor, one per user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnId(pub u64);

impl fmt::Display for RoundId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "round-{}", self.0)
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call-{}", self.0)
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "turn-{}", self.0)
    }
}

/// Something that happened on the floor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The user posted a message.
    UserMessage {
        /// Its text.
        content: String,
    },
    /// The answers to [`Action::PollShouldWake`](super::Action::PollShouldWake). The floor asks
    /// all candidates concurrently and reports once every one has answered or run out of
    /// time; a candidate without an answer counts as a no.
    ShouldWakeAnswers {
        /// The round being answered.
        round: RoundId,
        /// One answer per candidate, in any order.
        answers: Vec<PollAnswer>,
    },
    /// An agent answered [`Action::Respond`](super::Action::Respond) with a message. A message
    /// that is exactly `[PASS]` (surrounding whitespace aside) is a pass.
    AgentResponded {
        /// The call being answered.
        call: CallId,
        /// Who answered.
        agent: Handle,
        /// The text of the message.
        content: String,
    },
    /// An agent answered [`Action::Respond`](super::Action::Respond) with `{"pass": true}`.
    AgentPassed {
        /// The call being answered.
        call: CallId,
        /// Who passed.
        agent: Handle,
        /// The `reason` it gave, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// [`Action::Respond`](super::Action::Respond) failed: transport error, bad response,
    /// deadline exceeded.
    AgentFailed {
        /// The call that failed.
        call: CallId,
        /// Who was called.
        agent: Handle,
        /// What went wrong, for the user and the transcript.
        error: String,
    },
}

impl Event {
    /// The kind of this event, without its data.
    pub fn kind(&self) -> EventKind {
        match self {
            Self::UserMessage { .. } => EventKind::UserMessage,
            Self::ShouldWakeAnswers { .. } => EventKind::ShouldWakeAnswers,
            Self::AgentResponded { .. } => EventKind::AgentResponded,
            Self::AgentPassed { .. } => EventKind::AgentPassed,
            Self::AgentFailed { .. } => EventKind::AgentFailed,
        }
    }
}

/// The kinds of [`Event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// [`Event::UserMessage`]
    UserMessage,
    /// [`Event::ShouldWakeAnswers`]
    ShouldWakeAnswers,
    /// [`Event::AgentResponded`]
    AgentResponded,
    /// [`Event::AgentPassed`]
    AgentPassed,
    /// [`Event::AgentFailed`]
    AgentFailed,
}

/// One candidate's answer to a should-wake poll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollAnswer {
    /// The candidate.
    pub agent: Handle,
    /// What it said.
    pub answer: WakeAnswer,
}

impl PollAnswer {
    /// `agent` answered `answer`.
    pub fn new(agent: Handle, answer: WakeAnswer) -> Self {
        Self { agent, answer }
    }
}

/// What came back from `/ofc/should-wake`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum WakeAnswer {
    /// `{"wake": true, "reason": …}`
    Yes {
        /// The `reason` it gave, passed on as the wake reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `{"wake": false}`
    No,
    /// No answer before the floor's deadline; counts as no.
    Late,
    /// The call failed; counts as no.
    Failed {
        /// What went wrong.
        error: String,
    },
}
