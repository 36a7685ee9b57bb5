//! The payload types of session events, and which of them a reader must understand.
//!
//! | `payload_type` | payload | synced |
//! |---|---|---|
//! | `message_posted` | `{"message": <wire Message>}` (the reference's `{"Message": {"From", "Content", …}}` is read too) | yes |
//! | `cleared` | `{"forgotten": n}`: `/clear`; the conversation before it is not restored | yes |
//! | `compaction` | [`Compaction`]: an agent's memory summarised | yes |
//! | `grants` | `{"grants": [{"agent", "furniture", "classes": ["read", …]}]}`: furniture access after a change | yes |
//! | `tasks` | `{"boards": {"<name>": [<task>, …]}}`: the task boards after a turn that changed them | yes |
//! | `room_opened` | [`RoomOpened`]: a sub-room and its members (its events carry its `room_id`) | yes |
//! | `room_closed` | [`RoomClosed`]: a sub-room closed, with the summary posted to `#main` | yes |
//! | `turn_ended` | the floor event; ends a turn | yes |
//! | `floor_updated` | `{"floor", "generation", "mutations"}`: a named floor's change applied to the running floor | no |
//! | `transcript` | one transcript line ([`crate::transcript::Line`]), for `ofc floor replay` | no |
//! | any other floor event name (`turn_started`, `responding`, `call_finished`, `note`, `roster`, `queued`, `polling`, `should_wake`, `closed`) | the floor event as watchers see it | no |
//!
//! Streamed pieces (`delta`) are not stored: the message they make is.

use index_schema::wire::{Message, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `message_posted`.
pub const MESSAGE: &str = "message_posted";
/// `cleared`.
pub const CLEARED: &str = "cleared";
/// `compaction`.
pub const COMPACTION: &str = "compaction";
/// `grants`.
pub const GRANTS: &str = "grants";
/// `tasks`.
pub const TASKS: &str = "tasks";
/// `transcript`.
pub const TRANSCRIPT: &str = "transcript";
/// `floor_updated`.
pub const FLOOR_UPDATED: &str = "floor_updated";
/// `room_opened`.
pub const ROOM_OPENED: &str = "room_opened";
/// `room_closed`.
pub const ROOM_CLOSED: &str = "room_closed";

/// The floor events stored under their own name.
pub const FLOOR_EVENTS: [&str; 11] = [
    "turn_started",
    "polling",
    "should_wake",
    "responding",
    "call_finished",
    "note",
    "turn_ended",
    "queued",
    "roster",
    "closed",
    "cleared",
];

/// What a payload type is to a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// Conversation state that a resume restores.
    State,
    /// A record of what happened (shown, replayed), not restored.
    Record,
    /// Not a type this ofc knows.
    Unknown,
}

impl PayloadKind {
    /// The kind of a payload type.
    pub fn of(payload_type: &str) -> Self {
        match payload_type {
            MESSAGE | CLEARED | COMPACTION | GRANTS | TASKS | ROOM_OPENED | ROOM_CLOSED => {
                Self::State
            }
            TRANSCRIPT | FLOOR_UPDATED => Self::Record,
            t if FLOOR_EVENTS.contains(&t) => Self::Record,
            _ => Self::Unknown,
        }
    }

    /// Whether appending it is followed by a sync (see [`super::jsonl`]).
    pub fn durable(self) -> bool {
        self == Self::State
    }
}

/// `compaction`: the agent's memory of the conversation up to and including message
/// `through` is `summary` (the runtime's LLM agents with `memory: {summary: true}` write one
/// each time they fold older messages into their running summary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    /// The agent (`@code`).
    pub agent_id: String,
    /// The id of the last floor message the summary covers.
    pub through: String,
    /// The `seq` of that message's event, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers_up_to_seq: Option<u64>,
    /// The summary.
    pub summary: String,
}

/// `room_opened`: sub-room `room` (`#name`) opened with these members (the agents in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomOpened {
    /// `#name`.
    pub room: String,
    /// Its agents, in the order given.
    pub members: Vec<String>,
    /// What it was opened to discuss, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// `room_closed`: sub-room `room` closed; its agents are back on `#main`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomClosed {
    /// `#name`.
    pub room: String,
    /// The summary posted to `#main`.
    pub summary: String,
}

/// One grant, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredGrant {
    /// The agent.
    pub agent: String,
    /// The furniture.
    pub furniture: String,
    /// `read`, `write`, `execute`.
    pub classes: Vec<String>,
}

/// `grants`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Every grant after the change.
    pub grants: Vec<StoredGrant>,
}

/// `tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tasks {
    /// Board name → its tasks.
    pub boards: std::collections::BTreeMap<String, Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Posted {
    message: Message,
}

/// The reference CLI's shape (Go field names).
#[derive(Deserialize)]
struct ReferencePosted {
    #[serde(rename = "Message")]
    message: ReferenceMessage,
}

#[derive(Deserialize)]
struct ReferenceMessage {
    #[serde(rename = "From")]
    from: String,
    #[serde(rename = "Content")]
    content: String,
}

/// The message of a `message_posted` payload. `seq` and `time` name a message of the
/// reference's shape, which has no id of its own.
pub fn message(payload: &Value, seq: u64, time: &str) -> Result<Message, String> {
    if payload.get("Message").is_some() {
        let r: ReferencePosted = serde_json::from_value(payload.clone())
            .map_err(|e| format!("not a message_posted payload: {e}"))?;
        let timestamp = Timestamp::parse(time).map_err(|e| format!("`time`: {e}"))?;
        return Ok(Message::new(
            format!("msg-{seq}"),
            r.message.from,
            r.message.content,
            timestamp,
        ));
    }
    serde_json::from_value::<Posted>(payload.clone())
        .map(|p| p.message)
        .map_err(|e| format!("not a message_posted payload: {e}"))
}

/// Checks a payload a reader restores from; records are taken as they are. An unknown type
/// is refused: a resume must not go on without state it cannot read.
pub fn check(payload_type: &str, payload: &Value) -> Result<(), String> {
    let typed = |r: Result<(), serde_json::Error>| {
        r.map_err(|e| format!("not a `{payload_type}` payload: {e}"))
    };
    match payload_type {
        MESSAGE => message(payload, 0, "1970-01-01T00:00:00Z").map(|_| ()),
        COMPACTION => typed(serde_json::from_value::<Compaction>(payload.clone()).map(|_| ())),
        GRANTS => typed(serde_json::from_value::<Grants>(payload.clone()).map(|_| ())),
        TASKS => typed(serde_json::from_value::<Tasks>(payload.clone()).map(|_| ())),
        ROOM_OPENED => typed(serde_json::from_value::<RoomOpened>(payload.clone()).map(|_| ())),
        ROOM_CLOSED => typed(serde_json::from_value::<RoomClosed>(payload.clone()).map(|_| ())),
        t if PayloadKind::of(t) == PayloadKind::Unknown => Err(format!(
            "unknown payload type `{}` (written by a newer ofc?)",
            super::shown(t)
        )),
        _ => Ok(()),
    }
}
