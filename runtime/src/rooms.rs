//! Rooms: `#main` (the floor itself) plus sub-rooms, side conversations whose messages stay
//! out of the main one.
//!
//! - **Opening** (`/room #name @a @b [prompt]`, [`Rooms::open`]) moves the agents into the room:
//!   they leave `#main`'s turn-taking (the main floor's controller no longer polls or calls
//!   them) and the room gets a floor of its own — its own controller, restricted to its
//!   members, the same OFC turn-taking rules — recording into the same session with the room's
//!   `room_id`. Each member gets a private `@system` note there; the prompt, if given, is
//!   posted in the room as the user's message. Refused: `#main` (reserved), a room that
//!   exists, a name that is not `#` and 1–32 letters, digits, `-` or `_`, an agent that is not
//!   on the floor, no member, and a turn running on `#main` (its agents might be in it).
//! - **Visibility**: a room's messages are in its floor only, so only its members' respond
//!   calls carry them; `#main`'s go on without the agents away. Each context is separate.
//! - **Several rooms at once** (ofc's superset; the reference keeps an agent in one room): an
//!   agent may be a member of several rooms. Each room has its own controller, and an agent
//!   answers in the room whose message woke it, with that room's conversation only. It is never
//!   in two turns at once: its respond calls from the rooms take turns on one lock per agent,
//!   so a call from a second room waits (within that room's respond deadline) until the first
//!   has answered. While it is in any room it is away from `#main`.
//! - **Closing** (`/room close #name`, [`Rooms::close`]; or automatically when a turn of the
//!   room ends and nothing is queued behind it — the room's controller found nobody else will
//!   speak): the room's floor closes (a running call is cancelled), its agents go back to
//!   `#main` (once `#main` is between turns) unless they are in another room, each gets a
//!   private note there, and a summary is posted to `#main` from `@system`: `[Room #x closed]
//!   Last message from @y: …`, or `… No messages were exchanged.`
//! - **Resume**: `room_opened` and `room_closed` events are in the session log, so a resumed
//!   session reopens the rooms that were open, with their members and conversations
//!   ([`Rooms::restore`]); the reference forgets them.
//!
//! A room's floor shares the main floor's agents (wrapped so that closing the room never shuts
//! one down). An LLM agent's running memory summary follows the messages it is sent, so an
//! agent with `memory: {summary: true}` that moves between rooms starts its summary afresh.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use index_schema::wire::{
    AgentInfo, McpGrantRequest, McpGrantResponse, McpProvidesResponse, Message, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use tokio::sync::broadcast;

use crate::agent::{Agent, AgentError, Deltas};
use crate::floor::{Floor, FloorAgent, FloorError, FloorEvent, FloorSettings};
use crate::handle::Handle;
use crate::session::payload::{self, RoomClosed, RoomOpened};
use crate::session::restore::RestoredRoom;
use crate::session::{LiveSession, MAIN_ROOM};

/// Why a room operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoomError {
    /// `#main` cannot be opened or closed.
    #[error("#main is the main room: it is always open and cannot be opened or closed")]
    Reserved,
    /// Not a room name.
    #[error(
        "`{0}` is not a room name: `#` then 1 to 32 letters, digits, `-` or `_` (such as #design)"
    )]
    BadName(String),
    /// The room is open already.
    #[error("room {0} exists already (/room close {0} first)")]
    Exists(String),
    /// No such room.
    #[error("no room {0} is open")]
    NoSuchRoom(String),
    /// Not an agent handle, or not on the floor.
    #[error("{0} is not an agent on this floor")]
    UnknownAgent(String),
    /// A room without members.
    #[error("a room needs at least one agent: /room {0} @agent… [prompt]")]
    NoMembers(String),
    /// A turn runs on `#main`.
    #[error("a turn is running on #main; open the room when it has ended")]
    MainBusy,
    /// The floor refused.
    #[error(transparent)]
    Floor(#[from] FloorError),
}

/// What happens in the rooms, for frontends (the main floor's own events are its own).
#[derive(Debug, Clone)]
pub enum RoomEvent {
    /// A room opened.
    Opened {
        /// `#name`.
        room: String,
        /// Its agents.
        members: Vec<Handle>,
    },
    /// An event of a room's floor.
    Floor {
        /// `#name`.
        room: String,
        /// The event.
        event: FloorEvent,
    },
    /// A room closed.
    Closed {
        /// `#name`.
        room: String,
        /// The summary posted to `#main`.
        summary: String,
    },
}

/// The rooms of one floor; cheap to clone.
#[derive(Clone)]
pub struct Rooms {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Rooms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rooms").finish_non_exhaustive()
    }
}

struct Inner {
    main: Floor,
    settings: FloorSettings,
    session: Option<LiveSession>,
    /// Held through each open and close, so that who is away from `#main` is always the
    /// members of the rooms open.
    ops: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    events: broadcast::Sender<RoomEvent>,
}

#[derive(Default)]
struct State {
    rooms: BTreeMap<String, Room>,
    /// One per agent that has been in a room: its respond calls from rooms take turns on it.
    locks: HashMap<Handle, Arc<tokio::sync::Mutex<()>>>,
}

struct Room {
    members: Vec<Handle>,
    floor: Floor,
}

/// Checks a room name: `#` then 1–32 ASCII letters, digits, `-` or `_`.
pub fn check_name(name: &str) -> Result<(), RoomError> {
    if name.eq_ignore_ascii_case(MAIN_ROOM) {
        return Err(RoomError::Reserved);
    }
    let ok = name.strip_prefix('#').is_some_and(|n| {
        (1..=32).contains(&n.len())
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if ok {
        Ok(())
    } else {
        Err(RoomError::BadName(crate::session::shown(name)))
    }
}

impl Rooms {
    /// The rooms of `main`; room floors take `settings` (without a transcript file: they
    /// record into `session`, when there is one).
    pub fn new(main: Floor, settings: FloorSettings, session: Option<LiveSession>) -> Self {
        let (events, _) = broadcast::channel(4096);
        Self {
            inner: Arc::new(Inner {
                main,
                settings: FloorSettings {
                    transcript_dir: None,
                    ..settings
                },
                session,
                ops: tokio::sync::Mutex::new(()),
                state: Mutex::new(State::default()),
                events,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live room events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<RoomEvent> {
        self.inner.events.subscribe()
    }

    /// The rooms open, with their members.
    pub fn list(&self) -> Vec<(String, Vec<Handle>)> {
        self.state()
            .rooms
            .iter()
            .map(|(n, r)| (n.clone(), r.members.clone()))
            .collect()
    }

    /// A room's floor, while it is open.
    pub fn floor(&self, name: &str) -> Option<Floor> {
        self.state().rooms.get(name).map(|r| r.floor.clone())
    }

    /// Opens room `name` with these agents (handles as typed) and posts `prompt` in it.
    pub async fn open(
        &self,
        name: &str,
        members: &[String],
        prompt: Option<String>,
    ) -> Result<(), RoomError> {
        check_name(name)?;
        let mut handles: Vec<Handle> = Vec::new();
        for m in members {
            let h =
                Handle::new(m).map_err(|_| RoomError::UnknownAgent(crate::session::shown(m)))?;
            if !handles.contains(&h) {
                handles.push(h);
            }
        }
        if handles.is_empty() {
            return Err(RoomError::NoMembers(name.to_owned()));
        }
        let _op = self.inner.ops.lock().await;
        if self.state().rooms.contains_key(name) {
            return Err(RoomError::Exists(name.to_owned()));
        }
        let agents = match self.inner.main.members(handles.clone()).await {
            Err(FloorError::UnknownAgent(h)) => return Err(RoomError::UnknownAgent(h.to_string())),
            other => other?,
        };
        let mut away = self.away();
        away.extend(handles.iter().cloned());
        if !self.inner.main.set_away(away, false).await? {
            return Err(RoomError::MainBusy);
        }
        if let Some(s) = &self.inner.session {
            let opened = RoomOpened {
                room: name.to_owned(),
                members: handles.iter().map(ToString::to_string).collect(),
                prompt: prompt.clone(),
            };
            if let Ok(v) = serde_json::to_value(&opened) {
                s.in_room(name).append(payload::ROOM_OPENED, v);
            }
        }
        let floor = self.start(name, agents, Vec::new())?;
        for h in &handles {
            let others: Vec<String> = handles
                .iter()
                .filter(|o| *o != h)
                .map(ToString::to_string)
                .collect();
            let with = if others.is_empty() {
                "alone".to_owned()
            } else {
                format!("with {}", others.join(", "))
            };
            floor
                .note(
                    format!(
                        "You moved to room {name} {with}. Messages here are private to this room; #main goes on without you until it closes."
                    ),
                    vec![h.clone()],
                )
                .await?;
        }
        let _ = self.inner.events.send(RoomEvent::Opened {
            room: name.to_owned(),
            members: handles,
        });
        if let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) {
            floor.post(prompt).await?;
        }
        Ok(())
    }

    /// The user posts in an open room.
    pub async fn post(&self, name: &str, text: String) -> Result<(), RoomError> {
        let floor = self
            .floor(name)
            .ok_or_else(|| RoomError::NoSuchRoom(name.to_owned()))?;
        floor.post(text).await?;
        Ok(())
    }

    /// Closes room `name`; answers the summary posted to `#main`.
    pub async fn close(&self, name: &str) -> Result<String, RoomError> {
        if name.eq_ignore_ascii_case(MAIN_ROOM) {
            return Err(RoomError::Reserved);
        }
        let _op = self.inner.ops.lock().await;
        let room = self
            .state()
            .rooms
            .remove(name)
            .ok_or_else(|| RoomError::NoSuchRoom(crate::session::shown(name)))?;
        let said = room.floor.messages(None, 10_000).await.unwrap_or_default();
        let _ = room.floor.close().await;
        let last = said
            .iter()
            .rev()
            .find(|m| m.from != "@user" && m.from != "@system");
        let summary = match last {
            Some(m) => format!(
                "[Room {name} closed] Last message from {}: {}",
                m.from, m.content
            ),
            None => format!("[Room {name} closed] No messages were exchanged."),
        };
        if let Some(s) = &self.inner.session {
            let closed = RoomClosed {
                room: name.to_owned(),
                summary: summary.clone(),
            };
            if let Ok(v) = serde_json::to_value(&closed) {
                s.in_room(name).append(payload::ROOM_CLOSED, v);
            }
        }
        let away = self.away();
        self.inner.main.set_away(away.clone(), true).await?;
        self.inner.main.note(summary.clone(), Vec::new()).await?;
        for h in &room.members {
            let back = if away.contains(h) {
                "You are still in another room."
            } else {
                "You are back on the main floor (#main)."
            };
            self.inner
                .main
                .note(format!("Room {name} closed. {back}"), vec![h.clone()])
                .await?;
        }
        let _ = self.inner.events.send(RoomEvent::Closed {
            room: name.to_owned(),
            summary: summary.clone(),
        });
        Ok(summary)
    }

    /// Reopens the rooms a resumed session left open, with their conversations; answers a
    /// warning for each room or agent that cannot come back.
    pub async fn restore(&self, rooms: BTreeMap<String, RestoredRoom>) -> Vec<String> {
        let mut warnings = Vec::new();
        let _op = self.inner.ops.lock().await;
        for (name, room) in rooms {
            if let Err(e) = check_name(&name) {
                warnings.push(format!("room {}: {e}", crate::session::shown(&name)));
                continue;
            }
            let mut handles = Vec::new();
            for m in &room.members {
                match Handle::new(m) {
                    Ok(h) if self.inner.main.members(vec![h.clone()]).await.is_ok() => {
                        handles.push(h);
                    }
                    _ => warnings.push(format!(
                        "room {name}: {} is not on the floor now",
                        crate::session::shown(m)
                    )),
                }
            }
            if handles.is_empty() {
                warnings.push(format!(
                    "room {name} is not reopened: none of its agents is here"
                ));
                continue;
            }
            let agents = match self.inner.main.members(handles.clone()).await {
                Ok(a) => a,
                Err(e) => {
                    warnings.push(format!("room {name}: {e}"));
                    continue;
                }
            };
            if let Err(e) = self.start(&name, agents, room.messages) {
                warnings.push(format!("room {name}: {e}"));
            }
        }
        let away = self.away();
        if let Err(e) = self.inner.main.set_away(away, true).await {
            warnings.push(format!("rooms: {e}"));
        }
        warnings
    }

    /// Closes the rooms' floors when the run ends, recording nothing: they are still open in
    /// the session, and a resume reopens them.
    pub async fn shutdown(&self) {
        let _op = self.inner.ops.lock().await;
        let floors: Vec<Floor> = std::mem::take(&mut self.state().rooms)
            .into_values()
            .map(|r| r.floor)
            .collect();
        for f in floors {
            let _ = f.close().await;
        }
    }

    /// The agents in some room.
    fn away(&self) -> HashSet<Handle> {
        self.state()
            .rooms
            .values()
            .flat_map(|r| r.members.iter().cloned())
            .collect()
    }

    /// Starts room `name`'s floor with `agents` and `history`, and its watcher.
    fn start(
        &self,
        name: &str,
        agents: Vec<FloorAgent>,
        history: Vec<Message>,
    ) -> Result<Floor, RoomError> {
        let members: Vec<Handle> = agents.iter().map(|a| a.handle.clone()).collect();
        let agents: Vec<FloorAgent> = {
            let mut state = self.state();
            agents
                .into_iter()
                .map(|a| {
                    let lock = Arc::clone(state.locks.entry(a.handle.clone()).or_default());
                    FloorAgent {
                        agent: Arc::new(Member {
                            inner: a.agent,
                            lock,
                        }),
                        ..a
                    }
                })
                .collect()
        };
        let floor = Floor::open_room(
            format!("{}{name}", self.inner.main.id()),
            name,
            agents,
            self.inner.settings.clone(),
            self.inner.session.as_ref().map(|s| s.in_room(name)),
            history,
        )?;
        let events = floor.subscribe();
        self.state().rooms.insert(
            name.to_owned(),
            Room {
                members,
                floor: floor.clone(),
            },
        );
        tokio::spawn(watch(
            Arc::downgrade(&self.inner),
            name.to_owned(),
            floor.clone(),
            events,
        ));
        Ok(floor)
    }
}

/// Forwards a room's events, and closes it when a turn ends with nothing queued behind it.
async fn watch(
    rooms: Weak<Inner>,
    name: String,
    floor: Floor,
    mut events: broadcast::Receiver<FloorEvent>,
) {
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(inner) = rooms.upgrade() else { return };
        let ended = matches!(event, FloorEvent::TurnEnded { .. });
        let closed = matches!(event, FloorEvent::Closed);
        let _ = inner.events.send(RoomEvent::Floor {
            room: name.clone(),
            event,
        });
        if closed {
            return;
        }
        if ended && floor.snapshot().await.is_ok_and(|s| s.turn.is_none()) {
            let rooms = Rooms { inner };
            // Another close may have come first.
            let _ = rooms.close(&name).await;
            return;
        }
    }
}

/// A floor agent as a room's floor has it: its respond calls take turns with its calls from
/// other rooms, and closing the room does not shut it down (the main floor owns it).
#[derive(Debug)]
struct Member {
    inner: Arc<dyn Agent>,
    lock: Arc<tokio::sync::Mutex<()>>,
}

#[async_trait]
impl Agent for Member {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        self.inner.info().await
    }

    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        self.inner.should_wake(request).await
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let _turn = self.lock.lock().await;
        self.inner.respond(request, deltas).await
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        self.inner.grant_mcp(request).await
    }

    async fn provides_mcp(&self) -> Result<McpProvidesResponse, AgentError> {
        self.inner.provides_mcp().await
    }

    async fn shutdown(&self) {}
}

#[cfg(test)]
#[path = "rooms_tests.rs"]
mod tests;
