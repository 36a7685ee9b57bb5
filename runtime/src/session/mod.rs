//! Sessions: every floor conversation as an append-only event log that can be resumed and
//! replayed.
//!
//! A session is one file, `<store>/<id>.jsonl`, where the store of `ofc run` is the project's
//! `.ofc/sessions/` ([`store`]) and the id a UUID ([`SessionId`]). Each line is one record;
//! the shapes follow the reference CLI's (`openfloorcontrol/ofc`) JSONL store:
//!
//! ```text
//! {"kind":"meta","session_id":S,"meta":{"cwd":…,"blueprint_path":…,"blueprint_name":…,"blueprint_hash":…,"ofc_version":…,"created_at":…,"project":…}}
//! {"kind":"event","session_id":S,"seq":7,"time":"2026-…Z","room_id":"#main","payload_type":"message_posted","payload":{"message":{…}}}
//! ```
//!
//! `meta` is written when the session is created (the last one wins); `event` lines follow,
//! numbered by `seq` from 1. The payload types are listed in [`payload`]: the conversation
//! (`message_posted`, `cleared`), the agents' memory summaries (`compaction`), grants and task
//! boards (`grants`, `tasks`), the floor's live events as a watcher sees them, and the
//! floor's transcript lines (`transcript`), which `ofc floor replay` checks. The reference's
//! `ref` and `agent_state` lines are read and ignored.
//!
//! Resuming ([`restore`]) rebuilds the conversation, each agent's latest summary, the grants
//! and the task boards from the log, without calling any agent; the floor then records on
//! into the same file, starting a new transcript segment.
//!
//! **Reading is forgiving, never silent** ([`jsonl::read`]): a bad line is skipped and reported
//! with its number, every other line is kept; a last line cut by a crash is recovered up to the
//! last whole event and set aside before anything is appended. Writing and its sync policy:
//! [`jsonl`].

pub mod feed;
pub mod jsonl;
pub mod live;
pub mod payload;
pub mod pg;
pub mod restore;
pub mod state;
pub mod store;

pub use feed::{FeedEvent, Older, SessionFeed};
pub use jsonl::{Problem, SessionFile, SessionLog, StoredEvent, Torn};
pub use live::LiveSession;
pub use restore::Restored;
pub use store::{LogSource, LogStamp, SessionInfo, SessionStore};

use serde::{Deserialize, Serialize};

/// The main room of every session.
pub const MAIN_ROOM: &str = "#main";

/// A session's id: a UUID, written in its canonical form (lowercase, hyphenated). Nothing else
/// is a session id, so an id can never name a path outside a store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// A new random (v4) id.
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4().hyphenated().to_string())
    }

    /// Parses an id: a UUID in any of its usual spellings.
    pub fn parse(text: &str) -> Result<Self, SessionError> {
        let trimmed = text.trim();
        uuid::Uuid::parse_str(trimmed)
            .ok()
            .filter(|_| !trimmed.starts_with("urn:") && !trimmed.starts_with('{'))
            .map(|u| Self(u.hyphenated().to_string()))
            .ok_or_else(|| SessionError::BadId(shown(trimmed)))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0
    }
}

/// What a session records about where it comes from (the reference's `SessionMeta`, plus
/// ofc's `project`). Written when the session is created; the last `meta` line wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The working directory of the run that created it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// The blueprint file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub blueprint_path: String,
    /// The blueprint's `name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub blueprint_name: String,
    /// SHA-256 (hex) of the blueprint file's bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub blueprint_hash: String,
    /// The version of ofc that created it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ofc_version: String,
    /// When it was created, RFC 3339.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub created_at: String,
    /// ofc: the project directory (the blueprint's, canonical) the session belongs to. A
    /// session is only opened by the project that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// ofc: the named floor it runs (`ofc run --floor X`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<String>,
}

/// Why a session cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Not a session id.
    #[error("`{0}` is not a session id (a UUID such as 1b4e28ba-2fa1-11d2-883f-0016d3cca427)")]
    BadId(String),
    /// No such session in this store.
    #[error("no session {id} in {place}")]
    NotFound {
        /// The id.
        id: SessionId,
        /// Where it was looked for.
        place: String,
    },
    /// The session belongs to another project or floor.
    #[error("session {id} belongs to {owner}, not to {here}")]
    Foreign {
        /// The id.
        id: SessionId,
        /// Whose it is.
        owner: String,
        /// Who asked.
        here: String,
    },
    /// Another process writes the session.
    #[error("session {0} is open in another ofc process")]
    Busy(SessionId),
    /// A session with that id exists already.
    #[error("session {0} exists already")]
    Exists(SessionId),
    /// The store failed.
    #[error("{0}")]
    Io(String),
}

impl SessionError {
    /// An I/O failure on `what`.
    pub fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Self {
        Self::Io(format!("{what}: {e}"))
    }
}

/// Text from a file or a request, safe to put in an error: control characters dropped, at most
/// 80 characters.
pub fn shown(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(80).collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Now, RFC 3339 with microseconds, UTC.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let now = now
        .replace_nanosecond(now.nanosecond() / 1000 * 1000)
        .unwrap_or(now);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuids_only() {
        let id = SessionId::random();
        assert_eq!(SessionId::parse(id.as_str()).unwrap(), id);
        assert_eq!(
            SessionId::parse("1B4E28BA2FA111D2883F0016D3CCA427")
                .unwrap()
                .as_str(),
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
        );
        for bad in [
            "",
            "../../etc/passwd",
            "default",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427/..",
            "{1b4e28ba-2fa1-11d2-883f-0016d3cca427}",
            "urn:uuid:1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        ] {
            assert!(SessionId::parse(bad).is_err(), "{bad:?}");
        }
    }
}
