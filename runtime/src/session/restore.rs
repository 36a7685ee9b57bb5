//! What a resume rebuilds from a session log, without calling any agent: the conversation
//! (every message after the last `/clear`), each agent's latest memory summary, the grants and
//! the task boards as last recorded; and the transcript segments `ofc floor replay` checks.

use std::collections::BTreeMap;

use index_schema::wire::Message;

use super::MAIN_ROOM;
use super::jsonl::SessionLog;
use super::payload::{self, Compaction, Grants, RoomOpened, Tasks};
use crate::transcript::{Entry, Line};

/// A sub-room a session left open.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RestoredRoom {
    /// Its agents.
    pub members: Vec<String>,
    /// Its conversation, oldest first.
    pub messages: Vec<Message>,
}

/// Whether an event is `#main`'s (logs of older builds may leave the room out).
fn in_main(room: &str) -> bool {
    room.is_empty() || room == MAIN_ROOM
}

/// The state a session log leaves.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// The conversation of `#main`, oldest first.
    pub messages: Vec<Message>,
    /// The sub-rooms open when it was last recorded (`#name` → its members and messages).
    pub rooms: BTreeMap<String, RestoredRoom>,
    /// Agent → its latest memory summary (none before the last `/clear`).
    pub compactions: BTreeMap<String, Compaction>,
    /// The grants as last recorded.
    pub grants: Option<Grants>,
    /// The task boards as last recorded.
    pub tasks: Option<Tasks>,
    /// How many floor runs (the first and each resume) the log holds.
    pub segments: usize,
    /// The agents on the floor when it was last recorded, in order.
    pub roster: Vec<String>,
}

impl Restored {
    /// Rebuilds the state of a log. Payloads were checked when read ([`payload::check`]).
    pub fn from_log(log: &SessionLog) -> Self {
        let mut out = Self::default();
        for event in &log.events {
            let p = &event.payload;
            let main = in_main(&event.room_id);
            match event.payload_type.as_str() {
                payload::MESSAGE => {
                    if let Ok(m) = payload::message(p, event.seq, &event.time) {
                        if main {
                            out.messages.push(m);
                        } else if let Some(room) = out.rooms.get_mut(&event.room_id) {
                            room.messages.push(m);
                        }
                    }
                }
                payload::ROOM_OPENED => {
                    if let Ok(r) = serde_json::from_value::<RoomOpened>(p.clone()) {
                        let room = RestoredRoom {
                            members: r.members,
                            messages: Vec::new(),
                        };
                        out.rooms.insert(r.room, room);
                    }
                }
                payload::ROOM_CLOSED => {
                    if let Some(room) = p.get("room").and_then(|r| r.as_str()) {
                        out.rooms.remove(room);
                    }
                }
                payload::CLEARED if !main => {}
                payload::CLEARED => {
                    out.messages.clear();
                    out.compactions.clear();
                }
                payload::COMPACTION => {
                    if let Ok(c) = serde_json::from_value::<Compaction>(p.clone()) {
                        out.compactions.insert(c.agent_id.clone(), c);
                    }
                }
                payload::GRANTS => out.grants = serde_json::from_value(p.clone()).ok(),
                payload::TASKS => out.tasks = serde_json::from_value(p.clone()).ok(),
                payload::TRANSCRIPT
                    if main && p.get("kind").and_then(|k| k.as_str()) == Some("floor") =>
                {
                    out.segments += 1;
                }
                _ => {}
            }
        }
        out
    }
}

/// Every sub-room's conversation in the log, open or closed (`#name` → its messages, oldest
/// first): what `ofc sessions show` lists beside `#main`'s.
pub fn room_messages(log: &SessionLog) -> BTreeMap<String, Vec<Message>> {
    let mut rooms: BTreeMap<String, Vec<Message>> = BTreeMap::new();
    for event in &log.events {
        if event.payload_type == payload::MESSAGE
            && !in_main(&event.room_id)
            && let Ok(m) = payload::message(&event.payload, event.seq, &event.time)
        {
            rooms.entry(event.room_id.clone()).or_default().push(m);
        }
    }
    rooms
}

/// The transcript of each floor run in the log, in the order they started: what `ofc floor
/// replay` checks. A sub-room's floor is a run of its own (its lines carry its `room_id`, so
/// they are told apart from `#main`'s they interleave with). A `transcript` payload that is
/// not a transcript line is an error naming its `seq`.
pub fn transcript_segments(log: &SessionLog) -> Result<Vec<Vec<Line>>, String> {
    let mut segments: Vec<Vec<Line>> = Vec::new();
    // Room → the index of its running segment.
    let mut running: BTreeMap<&str, usize> = BTreeMap::new();
    for event in &log.events {
        if event.payload_type != payload::TRANSCRIPT {
            continue;
        }
        let line: Line = serde_json::from_value(event.payload.clone())
            .map_err(|e| format!("event seq {}: not a transcript line: {e}", event.seq))?;
        let room = if in_main(&event.room_id) {
            MAIN_ROOM
        } else {
            event.room_id.as_str()
        };
        let index = match running.get(room) {
            Some(i) if !matches!(line.entry, Entry::Floor { .. }) => *i,
            _ => {
                segments.push(Vec::new());
                running.insert(room, segments.len() - 1);
                segments.len() - 1
            }
        };
        segments[index].push(line);
    }
    Ok(segments)
}
