//! What the controller tells the floor to do.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::event::{CallId, EventKind, RoundId, TurnId};
use crate::handle::{Handle, Speaker};

/// One thing for the floor to do, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// A user message becomes the current turn; store it now (a queued message is stored when
    /// its turn starts, so the transcript keeps the order in which things were handled).
    TurnStarted {
        /// The new turn.
        turn: TurnId,
        /// The user's message.
        content: String,
    },
    /// Ask these agents `/ofc/should-wake` about the latest message, concurrently, and answer
    /// with [`Event::ShouldWakeAnswers`](super::Event::ShouldWakeAnswers).
    PollShouldWake {
        /// Echo this in the answers.
        round: RoundId,
        /// Who to ask, in blueprint order; the first that says yes wins.
        candidates: Vec<Handle>,
        /// The candidates the latest message mentions (`context.mentioned_you`).
        mentioned: Vec<Handle>,
    },
    /// Call `/ofc/respond` on this agent and answer with
    /// [`Event::AgentResponded`](super::Event::AgentResponded),
    /// [`Event::AgentPassed`](super::Event::AgentPassed) or
    /// [`Event::AgentFailed`](super::Event::AgentFailed).
    Respond {
        /// Echo this in the answer.
        call: CallId,
        /// Who to call.
        agent: Handle,
        /// Why it was woken (`wake_reason`).
        wake_reason: WakeReason,
        /// Who the agent answers to (`initiator`): whoever requested it, or nobody when it
        /// was woken by polling.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initiator: Option<Speaker>,
    },
    /// The turn is over; the floor waits for the user. A queued user message, if any, starts
    /// right after this in the same batch.
    TurnEnded {
        /// The turn that ended.
        turn: TurnId,
        /// Why.
        reason: TurnEndReason,
        /// How many [`Action::Respond`] the turn issued.
        hops: u32,
    },
    /// A user message arrived mid-turn and waits for the current turn to end.
    UserMessageQueued {
        /// Its place in the queue, from 1.
        position: usize,
    },
    /// A user message arrived mid-turn and the queue is full; it was dropped, tell the user.
    UserMessageRefused {
        /// The queue's capacity ([`Limits::max_queued_messages`](super::Limits)).
        queue_limit: usize,
    },
    /// A decision worth a line in the transcript; nothing to do.
    Record(Note),
}

/// Why an agent is asked to respond (`wake_reason` of `/ofc/respond`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WakeReason {
    /// It was requested with `@name?`.
    MentionedWithQuestion,
    /// It said yes to should-wake.
    ShouldWake {
        /// The reason it gave.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// It has `activation: always` and was the first candidate to wake.
    Always,
    /// It delegated, and the delegation is over (answered, or passed with no one to take over):
    /// the floor is back with it.
    DelegationReturned {
        /// The delegate whose answer or pass closed the delegation.
        from: Handle,
    },
}

impl WakeReason {
    /// The string for the `wake_reason` field of `/ofc/respond`.
    pub fn as_wire(&self) -> &'static str {
        match self {
            Self::MentionedWithQuestion => "mentioned_with_question",
            Self::ShouldWake { .. } => "should_wake",
            Self::Always => "activation_always",
            Self::DelegationReturned { .. } => "delegation_returned",
        }
    }
}

/// Why a turn ended. Every turn ends with exactly one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum TurnEndReason {
    /// The user requested an agent (`@name?`), and that request has been answered.
    ReturnedToUser {
        /// The agent whose answer closed the user's request.
        from: Handle,
    },
    /// An agent asked the user (`@user?`).
    WaitingForUser {
        /// Who asked.
        asked_by: Handle,
    },
    /// No candidate woke (or every candidate was excluded), so the floor waits for the user.
    NoOneWoke,
    /// [`Limits::max_hops`](super::Limits) agents have been asked to respond this turn.
    HopLimit {
        /// The limit.
        limit: u32,
    },
    /// The floor would pass between the same two agents more than
    /// [`Limits::max_pair_exchanges`](super::Limits) times.
    PairLimit {
        /// One of the two, the smaller handle.
        a: Handle,
        /// The other.
        b: Handle,
        /// The limit.
        limit: u32,
    },
    /// An agent requested an agent already on the call stack, under
    /// [`CyclePolicy::EndTurn`](super::CyclePolicy::EndTurn).
    CycleRefused {
        /// Who made the request.
        by: Handle,
        /// Who it requested.
        target: Handle,
    },
    /// `/ofc/respond` failed.
    AgentError {
        /// Who failed.
        agent: Handle,
        /// What went wrong.
        error: String,
    },
}

impl TurnEndReason {
    /// Whether a guard cut the turn short (rather than the conversation reaching the user).
    pub fn is_guard(&self) -> bool {
        matches!(
            self,
            Self::HopLimit { .. } | Self::PairLimit { .. } | Self::CycleRefused { .. }
        )
    }
}

impl fmt::Display for TurnEndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReturnedToUser { from } => write!(f, "{from} answered the user"),
            Self::WaitingForUser { asked_by } => write!(f, "{asked_by} is waiting for the user"),
            Self::NoOneWoke => f.write_str("no agent wanted to respond"),
            Self::HopLimit { limit } => {
                write!(f, "stopped after {limit} agent responses for one message")
            }
            Self::PairLimit { a, b, limit } => {
                write!(f, "stopped after {limit} exchanges between {a} and {b}")
            }
            Self::CycleRefused { by, target } => write!(
                f,
                "stopped: {by} asked {target}, who is already waiting on this conversation"
            ),
            Self::AgentError { agent, error } => write!(f, "{agent} failed: {error}"),
        }
    }
}

/// A decision recorded for the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum Note {
    /// A participant requested itself (`@code?` by `@code`, `@user?` by the user); ignored.
    SelfMentionIgnored {
        /// Who.
        by: Speaker,
    },
    /// `@name?` names no agent of this floor; ignored, as if it had no `?`.
    UnknownAgentRequested {
        /// Who asked.
        by: Speaker,
        /// The name asked for.
        name: Handle,
    },
    /// A delegation to an agent already on the call stack was refused.
    CycleRefused {
        /// Who made the request.
        by: Handle,
        /// Who it requested.
        target: Handle,
        /// The call stack at that moment, outermost first.
        stack: Vec<Handle>,
    },
    /// A message requested `@user?` and other agents too; asking the user wins and the other
    /// requests are not acted on.
    RequestsDroppedForUser {
        /// Who wrote the message.
        by: Handle,
        /// The agents it also requested.
        dropped: Vec<Handle>,
    },
    /// An agent passed; it is left out of should-wake polling for the rest of the turn.
    Passed {
        /// Who.
        agent: Handle,
        /// The reason it gave.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A should-wake candidate gave no usable answer; counted as no.
    ShouldWakeUnanswered {
        /// Who.
        agent: Handle,
        /// What happened instead.
        why: Unanswered,
    },
    /// An event that answers nothing the controller is waiting for (a stale round or call, or
    /// an answer outside any turn); ignored.
    StaleEvent {
        /// Its kind.
        event: EventKind,
    },
}

/// Why a should-wake candidate has no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Unanswered {
    /// It ran out of time.
    Late,
    /// The call failed.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// The floor reported no answer for it at all.
    Missing,
}
