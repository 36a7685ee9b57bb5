//! What a resume rebuilds from a session log, without calling any agent: the conversation
//! (every message after the last `/clear`), each agent's latest memory summary, the grants and
//! the task boards as last recorded; and the transcript segments `ofc floor replay` checks.

use std::collections::BTreeMap;

use index_schema::wire::Message;

use super::jsonl::SessionLog;
use super::payload::{self, Compaction, Grants, Tasks};
use crate::transcript::{Entry, Line};

/// The state a session log leaves.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// The conversation of `#main`, oldest first.
    pub messages: Vec<Message>,
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
            match event.payload_type.as_str() {
                payload::MESSAGE => {
                    if let Ok(m) = payload::message(p, event.seq, &event.time) {
                        out.messages.push(m);
                    }
                }
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
                payload::TRANSCRIPT if p.get("kind").and_then(|k| k.as_str()) == Some("floor") => {
                    out.segments += 1;
                }
                _ => {}
            }
        }
        out
    }
}

/// The transcript of each floor run in the log, in order: what `ofc floor replay` checks.
/// A `transcript` payload that is not a transcript line is an error naming its `seq`.
pub fn transcript_segments(log: &SessionLog) -> Result<Vec<Vec<Line>>, String> {
    let mut segments: Vec<Vec<Line>> = Vec::new();
    for event in &log.events {
        if event.payload_type != payload::TRANSCRIPT {
            continue;
        }
        let line: Line = serde_json::from_value(event.payload.clone())
            .map_err(|e| format!("event seq {}: not a transcript line: {e}", event.seq))?;
        if matches!(line.entry, Entry::Floor { .. }) || segments.is_empty() {
            segments.push(Vec::new());
        }
        if let Some(last) = segments.last_mut() {
            last.push(line);
        }
    }
    Ok(segments)
}
