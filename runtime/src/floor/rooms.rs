//! What a floor does for sub-rooms ([`crate::rooms`]): agents away in a room are left out of
//! its controller's roster (they are neither polled nor called; their place in blueprint order
//! is kept for their return), `@system` notes that wake nobody (some private to a few agents:
//! nobody else's respond call carries them), and a sub-room's own floor, whose message ids
//! never meet the main floor's.

use std::collections::HashSet;

use super::*;

/// The metadata key of a note's readers: only the agents it lists are sent the message.
pub const PRIVATE_TO: &str = "private_to";

/// Who is away, and how the floor numbers its messages.
#[derive(Debug)]
pub(super) struct Presence {
    /// `msg-` on the main floor, `msg-<room>-` on a sub-room's.
    pub(super) prefix: String,
    away: HashSet<Handle>,
    /// A change waiting for the floor to be idle.
    pending: Option<HashSet<Handle>>,
}

impl Presence {
    pub(super) fn new(room: Option<&str>) -> Self {
        Self {
            prefix: match room {
                Some(r) => format!("msg-{}-", r.trim_start_matches('#')),
                None => "msg-".to_owned(),
            },
            away: HashSet::new(),
            pending: None,
        }
    }

    /// The agents of `roster` that are here.
    pub(super) fn present(&self, roster: &[AgentSpec]) -> Vec<AgentSpec> {
        roster
            .iter()
            .filter(|a| !self.away.contains(&a.handle))
            .cloned()
            .collect()
    }
}

pub(crate) enum RoomCommand {
    SetAway {
        away: HashSet<Handle>,
        defer: bool,
        reply: oneshot::Sender<bool>,
    },
    Note {
        content: String,
        private_to: Vec<Handle>,
        reply: oneshot::Sender<Message>,
    },
    Members {
        handles: Vec<Handle>,
        reply: oneshot::Sender<Result<Vec<FloorAgent>, FloorError>>,
    },
}

/// Whether `agent` is sent `message`: everyone is, but for a note private to others.
pub(super) fn visible_to(message: &Message, agent: &Handle) -> bool {
    let readers = message
        .metadata
        .as_ref()
        .and_then(|m| m.get(PRIVATE_TO))
        .and_then(|r| r.as_array());
    let me = agent.to_string();
    readers.is_none_or(|r| r.iter().any(|h| h.as_str() == Some(me.as_str())))
}

impl FloorTask {
    pub(super) fn room_command(&mut self, command: RoomCommand) {
        match command {
            RoomCommand::SetAway { away, defer, reply } => {
                let now = self.controller.is_idle();
                if now {
                    self.apply_presence(away);
                } else if defer {
                    self.presence.pending = Some(away);
                }
                let _ = reply.send(now);
            }
            RoomCommand::Note {
                content,
                private_to,
                reply,
            } => {
                let _ = reply.send(self.store_note(content, private_to));
            }
            RoomCommand::Members { handles, reply } => {
                let found = handles
                    .iter()
                    .map(|h| {
                        self.agents
                            .iter()
                            .find(|a| a.handle == *h)
                            .cloned()
                            .ok_or_else(|| FloorError::UnknownAgent(h.clone()))
                    })
                    .collect();
                let _ = reply.send(found);
            }
        }
    }

    /// Applies a deferred presence change once no turn runs.
    pub(super) fn settle_presence(&mut self) {
        if self.controller.is_idle()
            && let Some(away) = self.presence.pending.take()
        {
            self.apply_presence(away);
        }
    }

    fn apply_presence(&mut self, away: HashSet<Handle>) {
        self.presence.pending = None;
        if away == self.presence.away {
            return;
        }
        self.presence.away = away;
        if let Err(error) = self.set_roster(self.agents.clone()) {
            tracing::error!(floor.id = %self.id, %error, "cannot change who is present");
        }
    }

    /// Stores a note from `@system` that wakes nobody; with `private_to`, only those agents
    /// are sent it.
    fn store_note(&mut self, content: String, private_to: Vec<Handle>) -> Message {
        self.next_message += 1;
        let mut message = Message::new(
            format!("{}{}", self.presence.prefix, self.next_message),
            "@system",
            content,
            now(),
        );
        if !private_to.is_empty() {
            let readers = private_to.iter().map(|h| h.to_string().into()).collect();
            let mut metadata = serde_json::Map::new();
            metadata.insert(PRIVATE_TO.to_owned(), serde_json::Value::Array(readers));
            message.metadata = Some(metadata);
        }
        self.message_ids
            .insert(message.id.clone(), self.dropped + self.messages.len());
        self.history_bytes += message_bytes(&message);
        self.messages.push(message.clone());
        self.record(Entry::Message {
            message: message.clone(),
        });
        self.emit(FloorEvent::Message {
            message: message.clone(),
        });
        self.trim_history();
        message
    }
}

impl Floor {
    /// Opens the floor of sub-room `room` (`#name`) of a session: as [`Floor::open_session`]
    /// (or [`Floor::open`] without a session), its message ids `msg-<name>-<n>`.
    pub fn open_room(
        id: impl Into<String>,
        room: &str,
        agents: Vec<FloorAgent>,
        settings: FloorSettings,
        session: Option<crate::session::LiveSession>,
        history: Vec<Message>,
    ) -> Result<Self, FloorError> {
        let session = session.map(|s| (s, history));
        Self::start(
            id.into(),
            Some(room.to_owned()),
            agents,
            settings,
            session,
            Some(room),
        )
    }

    /// Sets the agents away in sub-rooms (left out of turn-taking here). When no turn runs it
    /// takes effect at once (`true`); otherwise, with `defer`, when the floor is next idle,
    /// and without it not at all (`false` either way).
    pub async fn set_away(&self, away: HashSet<Handle>, defer: bool) -> Result<bool, FloorError> {
        self.ask(|reply| Command::Room(RoomCommand::SetAway { away, defer, reply }))
            .await
    }

    /// Posts a note from `@system` that wakes nobody; with `private_to`, only those agents are
    /// sent it in their respond calls (everyone, when empty).
    pub async fn note(
        &self,
        content: impl Into<String>,
        private_to: Vec<Handle>,
    ) -> Result<Message, FloorError> {
        let content = content.into();
        self.ask(|reply| {
            Command::Room(RoomCommand::Note {
                content,
                private_to,
                reply,
            })
        })
        .await
    }

    /// The floor's agents of these handles, in that order ([`FloorError::UnknownAgent`] for
    /// one that is not on it).
    pub async fn members(&self, handles: Vec<Handle>) -> Result<Vec<FloorAgent>, FloorError> {
        self.ask(|reply| Command::Room(RoomCommand::Members { handles, reply }))
            .await?
    }
}
