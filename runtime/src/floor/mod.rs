//! The floor: one task per floor that performs what the [`Controller`] decides.
//!
//! A [`Floor`] is a handle to that task. The task owns the controller, the roster, the
//! messages and the transcript, and runs at most one agent operation at a time — a
//! should-wake round or a respond call — so one floor never runs two turns at once: a user
//! message arriving mid-turn is queued by the controller and starts its turn when the running
//! one ends. While an operation runs, the task keeps serving the handle (posts, queries,
//! cancellation).
//!
//! - **Should-wake rounds** ask every candidate at once, each call under the should-wake
//!   deadline; a late or failed answer counts as no. The round takes as long as its slowest
//!   answer, at most the deadline. The controller picks the first yes in blueprint order.
//! - **Respond calls** run under the respond deadline; a missed deadline or an error ends the
//!   turn with [`TurnEndReason::AgentError`]. Streamed pieces are forwarded live as
//!   [`FloorEvent::Delta`].
//! - **Cancellation** ([`Floor::cancel_turn`]) drops the running operation, which cancels
//!   its requests, and answers every call of the rest of the turn with a failure, so the turn
//!   ends at once with the reason the controller gives.
//! - **Closing** ([`Floor::close`], or dropping every handle) shuts every agent down (process
//!   agents are stopped).
//!
//! Floors are bounded: a user message over `max_message_bytes` (256 KiB) is refused, a longer
//! agent reply is stored cut with a marker, and the history kept in memory is at most
//! `max_history_messages` (10,000) and `max_history_bytes` (64 MiB) — past either, the oldest go
//! (down to 90 %, so trimming is rare); the transcript keeps everything.

mod calls;
mod event;
mod handle;
mod rooms;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use index_schema::wire::{
    self, AgentInfo, Message, RespondRequest, RespondResponse, ShouldWakeRequest, Timestamp,
    WakeContext,
};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use event::{CallOutcome, FloorEvent, TimedAnswer};

use crate::agent::{Agent, Deltas};
use crate::controller::{
    Action, Activation, AgentSpec, CallId, Controller, Event, Limits, PollAnswer, RoundId,
    TurnEndReason, TurnId, WakeAnswer, WakeReason,
};
use crate::handle::{Handle, Speaker};
use crate::transcript::{Entry, Line, TranscriptWriter};

/// How a floor runs.
#[derive(Debug, Clone)]
pub struct FloorSettings {
    /// The deadline of each should-wake call.
    pub should_wake_deadline: Duration,
    /// The deadline of each respond call.
    pub respond_deadline: Duration,
    /// How many of the latest messages a respond call carries.
    pub history_limit: usize,
    /// The most agents on the floor.
    pub max_agents: usize,
    /// The controller's guards.
    pub limits: Limits,
    /// Whether to ask agents to stream their responses.
    pub stream: bool,
    /// Where to write the transcript (`<dir>/<floor_id>.jsonl`); none if `None`.
    pub transcript_dir: Option<PathBuf>,
    /// The largest message, in bytes: a longer user message is refused
    /// ([`FloorError::TooLarge`]), a longer agent reply is cut with a marker.
    pub max_message_bytes: usize,
    /// The most messages kept in memory; the oldest are let go past it (the transcript keeps
    /// them all).
    pub max_history_messages: usize,
    /// The most bytes of messages kept in memory, likewise.
    pub max_history_bytes: usize,
}

impl Default for FloorSettings {
    fn default() -> Self {
        Self {
            should_wake_deadline: Duration::from_secs(2),
            respond_deadline: Duration::from_secs(120),
            history_limit: 100,
            max_agents: 64,
            limits: Limits::default(),
            stream: true,
            transcript_dir: None,
            max_message_bytes: 256 * 1024,
            max_history_messages: 10_000,
            max_history_bytes: 64 * 1024 * 1024,
        }
    }
}

/// An agent joining a floor.
#[derive(Debug, Clone)]
pub struct FloorAgent {
    /// Its handle on the floor.
    pub handle: Handle,
    /// Whether it is polled or always wakes.
    pub activation: Activation,
    /// How to reach it.
    pub agent: Arc<dyn Agent>,
    /// Its OFC endpoint, for agents reached over HTTP.
    pub endpoint: Option<String>,
    /// What it said about itself.
    pub info: Option<AgentInfo>,
}

impl FloorAgent {
    /// An agent polled with should-wake.
    pub fn new(handle: Handle, agent: Arc<dyn Agent>) -> Self {
        Self {
            handle,
            activation: Activation::Mention,
            agent,
            endpoint: None,
            info: None,
        }
    }
}

/// Why a floor refused something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FloorError {
    /// The floor is closed.
    #[error("the floor is closed")]
    Closed,
    /// The roster is invalid or cannot change now.
    #[error(transparent)]
    Roster(#[from] crate::Error),
    /// No such agent on the floor.
    #[error("{0} is not on the floor")]
    UnknownAgent(Handle),
    /// The floor is full.
    #[error("the floor already has {0} agents")]
    Full(usize),
    /// Too many user messages wait.
    #[error("{0} messages are already waiting for the running turn; try again when it ends")]
    QueueFull(usize),
    /// `since` names no message of the floor.
    #[error("no message {0} on this floor")]
    UnknownMessage(String),
    /// The transcript cannot be written.
    #[error("cannot write the transcript: {0}")]
    Transcript(String),
    /// A message is larger than the floor takes.
    #[error("a message may have at most {0} bytes")]
    TooLarge(usize),
}

/// What posting a message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostReceipt {
    /// The stored message.
    pub message_id: String,
    /// The first agent woken for it; `None` if nobody woke, or if it was queued.
    pub next_agent: Option<Handle>,
    /// Its place in the queue, when it waits for the running turn.
    pub queued: Option<usize>,
}

/// How a turn went.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    /// The turn.
    pub turn: TurnId,
    /// Why it ended.
    pub reason: TurnEndReason,
    /// Responses in it.
    pub hops: u32,
    /// Whether it was cancelled.
    pub cancelled: bool,
    /// Its messages: the user's, then the agents' responses.
    pub messages: Vec<Message>,
}

/// A floor's roster and counters.
#[derive(Debug, Clone)]
pub struct FloorSnapshot {
    /// The floor.
    pub floor_id: String,
    /// Its name.
    pub name: Option<String>,
    /// The agents, in blueprint order (handle, activation, endpoint, info).
    pub agents: Vec<(Handle, Activation, Option<String>, Option<AgentInfo>)>,
    /// The running turn.
    pub turn: Option<TurnId>,
    /// Messages stored.
    pub messages: usize,
    /// Where the transcript goes.
    pub transcript: Option<PathBuf>,
}

/// A handle to a running floor. Cheap to clone; the floor closes when the last handle is
/// dropped.
#[derive(Debug, Clone)]
pub struct Floor {
    id: String,
    commands: mpsc::Sender<Command>,
    events: broadcast::Sender<FloorEvent>,
}

/// A handle to a floor that does not keep it open: for an agent on the floor that acts on it
/// (an agent holding a [`Floor`] would keep its own floor alive).
#[derive(Debug, Clone)]
pub struct WeakFloor {
    id: String,
    commands: mpsc::WeakSender<Command>,
    events: broadcast::Sender<FloorEvent>,
}

impl WeakFloor {
    /// The floor, while it is open.
    pub fn upgrade(&self) -> Option<Floor> {
        Some(Floor {
            id: self.id.clone(),
            commands: self.commands.upgrade()?,
            events: self.events.clone(),
        })
    }
}

/// How many events a slow observer may fall behind before it misses some.
const EVENT_BUFFER: usize = 4096;

enum Command {
    Post {
        from: Speaker,
        content: String,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
        receipt: oneshot::Sender<Result<PostReceipt, FloorError>>,
        done: Option<oneshot::Sender<TurnSummary>>,
    },
    AddAgent {
        agent: FloorAgent,
        reply: oneshot::Sender<Result<(), FloorError>>,
    },
    AddAgentWhenIdle {
        agent: FloorAgent,
        reply: oneshot::Sender<Result<(), FloorError>>,
    },
    RemoveAgent {
        handle: Handle,
        reply: oneshot::Sender<Result<(), FloorError>>,
    },
    Messages {
        since: Option<String>,
        limit: usize,
        reply: oneshot::Sender<Result<Vec<Message>, FloorError>>,
    },
    Snapshot {
        reply: oneshot::Sender<FloorSnapshot>,
    },
    Cancel {
        reply: oneshot::Sender<bool>,
    },
    Clear {
        reply: oneshot::Sender<Option<usize>>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
    Room(rooms::RoomCommand),
}

/// A posted message whose turn has not ended.
struct Post {
    message: Message,
    receipt: Option<oneshot::Sender<Result<PostReceipt, FloorError>>>,
    done: Option<oneshot::Sender<TurnSummary>>,
}

struct CurrentTurn {
    post: Post,
    messages: Vec<Message>,
    started: Instant,
}

/// The agent operation the floor waits for.
#[derive(Debug, Clone)]
enum Awaiting {
    Round {
        round: RoundId,
        candidates: Vec<Handle>,
    },
    Call {
        call: CallId,
        agent: Handle,
    },
}

/// What an agent operation produced.
enum Completed {
    Round {
        round: RoundId,
        answers: Vec<TimedAnswer>,
        elapsed: Duration,
    },
    Call {
        call: CallId,
        agent: Handle,
        result: Result<RespondResponse, String>,
        elapsed: Duration,
    },
}

struct FloorTask {
    id: String,
    name: Option<String>,
    settings: FloorSettings,
    controller: Controller,
    agents: Vec<FloorAgent>,
    messages: Vec<Message>,
    /// Message id → its position counted from the floor's first kept message ever
    /// (`dropped` + its index in `messages`).
    message_ids: HashMap<String, usize>,
    /// How many messages were let go from the front of `messages` (history bounds).
    dropped: usize,
    /// The bytes of the messages in `messages` (content and tool activity).
    history_bytes: usize,
    next_message: u64,
    last_message_of: HashMap<Handle, String>,
    events: broadcast::Sender<FloorEvent>,
    transcript: Option<TranscriptWriter>,
    opened: Instant,
    /// Posted messages whose turn has not started, oldest first.
    posts: VecDeque<Post>,
    current: Option<CurrentTurn>,
    awaiting: Option<Awaiting>,
    /// Set by a cancellation until the turn ends: every agent operation fails at once.
    cancelling: bool,
    /// Agents that join when the floor is next idle, with who waits for the answer.
    joining: Vec<(FloorAgent, oneshot::Sender<Result<(), FloorError>>)>,
    /// The session the floor records into ([`Floor::open_session`]).
    session: Option<crate::session::LiveSession>,
    /// Which agents are away in sub-rooms ([`crate::rooms`]), and its message ids' prefix.
    presence: rooms::Presence,
}

type Operation = BoxFuture<'static, Completed>;

fn specs(agents: &[FloorAgent]) -> Vec<AgentSpec> {
    agents
        .iter()
        .map(|a| AgentSpec {
            handle: a.handle.clone(),
            activation: a.activation,
        })
        .collect()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Now, RFC 3339 with milliseconds.
fn now() -> Timestamp {
    let now = time::OffsetDateTime::now_utc();
    let text = now
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    Timestamp::parse(&text).unwrap_or_else(|_| {
        Timestamp::from_unix_seconds(now.unix_timestamp()).expect("the current time is in range")
    })
}

const CANCELLED: &str = "the turn was cancelled";

impl FloorTask {
    async fn run(mut self, mut inbox: mpsc::Receiver<Command>) {
        let mut operation: Option<Operation> = None;
        loop {
            let next = match operation.as_mut() {
                Some(running) => tokio::select! {
                    command = inbox.recv() => Ok(command),
                    done = running => Err(done),
                },
                None => Ok(inbox.recv().await),
            };
            match next {
                Err(done) => {
                    self.awaiting = None;
                    let event = self.completed(done);
                    operation = self.feed(event);
                }
                Ok(Some(Command::Close { reply })) => {
                    drop(operation.take());
                    self.shutdown().await;
                    let _ = reply.send(());
                    return;
                }
                Ok(Some(Command::Cancel { reply })) => {
                    let running = self.controller.current_turn().is_some();
                    if running {
                        drop(operation.take());
                        operation = self.cancel();
                    }
                    let _ = reply.send(running);
                }
                Ok(Some(command)) => {
                    if let Some(started) = self.command(command) {
                        operation = Some(started);
                    }
                }
                Ok(None) => {
                    drop(operation.take());
                    self.shutdown().await;
                    return;
                }
            }
            self.admit_joining();
            self.settle_presence();
            self.flush();
        }
    }

    fn command(&mut self, command: Command) -> Option<Operation> {
        match command {
            Command::Post {
                from,
                content,
                metadata,
                receipt,
                done,
            } => return self.post(from, content, metadata, receipt, done),
            Command::AddAgent { agent, reply } => {
                let _ = reply.send(self.add_agent(agent));
            }
            Command::AddAgentWhenIdle { agent, reply } => {
                self.joining.push((agent, reply));
            }
            Command::RemoveAgent { handle, reply } => {
                let result = self.remove_agent(&handle);
                if let Ok(agent) = &result {
                    let agent = Arc::clone(agent);
                    tokio::spawn(async move { agent.shutdown().await });
                }
                let _ = reply.send(result.map(|_| ()));
            }
            Command::Messages {
                since,
                limit,
                reply,
            } => {
                let _ = reply.send(self.list(since, limit));
            }
            Command::Snapshot { reply } => {
                let _ = reply.send(self.snapshot());
            }
            Command::Clear { reply } => {
                let result = if self.controller.is_idle() && self.posts.is_empty() {
                    let forgotten = self.messages.len();
                    // Ids stay unique: `next_message` keeps counting.
                    self.messages.clear();
                    self.message_ids.clear();
                    self.dropped = 0;
                    self.history_bytes = 0;
                    self.last_message_of.clear();
                    self.emit(FloorEvent::Cleared { forgotten });
                    Some(forgotten)
                } else {
                    None
                };
                let _ = reply.send(result);
            }
            Command::Room(command) => self.room_command(command),
            Command::Cancel { .. } | Command::Close { .. } => {}
        }
        None
    }

    fn post(
        &mut self,
        from: Speaker,
        content: String,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
        receipt: oneshot::Sender<Result<PostReceipt, FloorError>>,
        done: Option<oneshot::Sender<TurnSummary>>,
    ) -> Option<Operation> {
        // Refused before it is stored, so observers never see a message the floor dropped.
        if content.len() > self.settings.max_message_bytes {
            let _ = receipt.send(Err(FloorError::TooLarge(self.settings.max_message_bytes)));
            return None;
        }
        let limit = self.controller.limits().max_queued_messages;
        if !self.controller.is_idle() && self.controller.queued_messages() >= limit {
            let _ = receipt.send(Err(FloorError::QueueFull(limit)));
            return None;
        }
        let message =
            self.store_with_tools(from, content.clone(), Vec::new(), Vec::new(), metadata);
        self.posts.push_back(Post {
            message,
            receipt: Some(receipt),
            done,
        });
        self.feed(Event::UserMessage { content })
    }

    fn add_agent(&mut self, agent: FloorAgent) -> Result<(), FloorError> {
        if self.agents.len() >= self.settings.max_agents {
            return Err(FloorError::Full(self.settings.max_agents));
        }
        let mut agents = self.agents.clone();
        agents.push(agent);
        self.set_roster(agents)
    }

    /// Adds the agents waiting to join, when no turn runs.
    fn admit_joining(&mut self) {
        if !self.controller.is_idle() || self.joining.is_empty() {
            return;
        }
        for (agent, reply) in std::mem::take(&mut self.joining) {
            let joined = self.add_agent(agent.clone());
            if joined.is_err() {
                let refused = Arc::clone(&agent.agent);
                tokio::spawn(async move { refused.shutdown().await });
            }
            let _ = reply.send(joined);
        }
    }

    fn remove_agent(&mut self, handle: &Handle) -> Result<Arc<dyn Agent>, FloorError> {
        let Some(index) = self.agents.iter().position(|a| a.handle == *handle) else {
            return Err(FloorError::UnknownAgent(handle.clone()));
        };
        let mut agents = self.agents.clone();
        let removed = agents.remove(index);
        self.set_roster(agents)?;
        Ok(removed.agent)
    }

    /// Sets the agents; the controller's roster is those of them not away in a sub-room.
    fn set_roster(&mut self, agents: Vec<FloorAgent>) -> Result<(), FloorError> {
        let roster = self.presence.present(&specs(&agents));
        self.controller.set_roster(roster.clone())?;
        self.agents = agents;
        let agents = roster.iter().map(|a| a.handle.clone()).collect();
        self.record(Entry::Roster { roster });
        self.emit(FloorEvent::Roster { agents });
        Ok(())
    }

    fn list(&self, since: Option<String>, limit: usize) -> Result<Vec<Message>, FloorError> {
        let (start, end) = match since {
            Some(id) => {
                let index = self
                    .message_ids
                    .get(&id)
                    .ok_or(FloorError::UnknownMessage(id))?
                    - self.dropped;
                (
                    index + 1,
                    (index + 1).saturating_add(limit).min(self.messages.len()),
                )
            }
            None => (
                self.messages.len().saturating_sub(limit),
                self.messages.len(),
            ),
        };
        Ok(self.messages[start.min(end)..end].to_vec())
    }

    fn snapshot(&self) -> FloorSnapshot {
        FloorSnapshot {
            floor_id: self.id.clone(),
            name: self.name.clone(),
            agents: self
                .agents
                .iter()
                .map(|a| {
                    (
                        a.handle.clone(),
                        a.activation,
                        a.endpoint.clone(),
                        a.info.clone(),
                    )
                })
                .collect(),
            turn: self.controller.current_turn(),
            messages: self.messages.len(),
            transcript: self.transcript.as_ref().map(|t| t.path().to_owned()),
        }
    }

    /// Stores a message with the tool activity behind it (kept so that other agents' prompts
    /// can show it) and tells observers.
    fn store_with_tools(
        &mut self,
        from: Speaker,
        content: String,
        tool_calls: Vec<wire::ToolCall>,
        tool_results: Vec<serde_json::Value>,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Message {
        self.next_message += 1;
        let mut message = Message::new(
            format!("{}{}", self.presence.prefix, self.next_message),
            from.to_string(),
            content,
            now(),
        );
        message.tool_calls = tool_calls;
        message.tool_results = tool_results;
        message.metadata = metadata;
        self.message_ids
            .insert(message.id.clone(), self.dropped + self.messages.len());
        self.history_bytes += message_bytes(&message);
        if let Speaker::Agent(handle) = &from {
            self.last_message_of
                .insert(handle.clone(), message.id.clone());
        }
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

    /// Lets the oldest messages go while the history is past its bounds, down to 90 % of them
    /// (so that trimming happens once per many messages, not on each). The newest message
    /// always stays.
    fn trim_history(&mut self) {
        let (max_n, max_b) = (
            self.settings.max_history_messages.max(1),
            self.settings.max_history_bytes.max(1),
        );
        if self.messages.len() <= max_n && self.history_bytes <= max_b {
            return;
        }
        let (keep_n, keep_b) = (max_n - max_n / 10, max_b - max_b / 10);
        let mut cut = 0;
        let mut bytes = self.history_bytes;
        while cut + 1 < self.messages.len()
            && (self.messages.len() - cut > keep_n || bytes > keep_b)
        {
            bytes -= message_bytes(&self.messages[cut]);
            cut += 1;
        }
        for m in self.messages.drain(..cut) {
            self.message_ids.remove(&m.id);
        }
        self.dropped += cut;
        self.history_bytes = bytes;
    }

    /// Feeds an event to the controller and performs the actions, until the floor waits for
    /// an agent (the returned operation) or for the user.
    fn feed(&mut self, event: Event) -> Option<Operation> {
        let mut events = VecDeque::from([event]);
        let mut operation = None;
        // Each event is either the first or the immediate failure of an operation during a
        // cancelled turn, which ends within the hop limit.
        while let Some(event) = events.pop_front() {
            self.record(Entry::Event {
                event: event.clone(),
            });
            for action in self.controller.handle(event) {
                self.record(Entry::Action {
                    action: action.clone(),
                });
                match action {
                    Action::TurnStarted { turn, .. } => self.turn_started(turn),
                    Action::PollShouldWake {
                        round,
                        candidates,
                        mentioned,
                    } => {
                        if self.cancelling {
                            events.push_back(Event::ShouldWakeAnswers {
                                round,
                                answers: candidates
                                    .into_iter()
                                    .map(|agent| {
                                        PollAnswer::new(
                                            agent,
                                            WakeAnswer::Failed {
                                                error: CANCELLED.to_owned(),
                                            },
                                        )
                                    })
                                    .collect(),
                            });
                        } else {
                            self.emit(FloorEvent::Polling {
                                round,
                                candidates: candidates.clone(),
                            });
                            operation = Some(self.start_round(round, candidates, &mentioned));
                        }
                    }
                    Action::Respond {
                        call,
                        agent,
                        wake_reason,
                        initiator,
                    } => {
                        let initiator = self.as_shown(initiator);
                        self.answer_receipt(Some(agent.clone()));
                        self.emit(FloorEvent::Responding {
                            call,
                            agent: agent.clone(),
                            wake_reason: wake_reason.clone(),
                            initiator: initiator.clone(),
                        });
                        if self.cancelling {
                            events.push_back(Event::AgentFailed {
                                call,
                                agent,
                                error: CANCELLED.to_owned(),
                            });
                        } else {
                            operation = Some(self.start_call(call, agent, &wake_reason, initiator));
                        }
                    }
                    Action::TurnEnded { turn, reason, hops } => self.turn_ended(turn, reason, hops),
                    Action::UserMessageQueued { position } => {
                        if let Some(post) = self.posts.back_mut() {
                            let message_id = post.message.id.clone();
                            if let Some(receipt) = post.receipt.take() {
                                let _ = receipt.send(Ok(PostReceipt {
                                    message_id: message_id.clone(),
                                    next_agent: None,
                                    queued: Some(position),
                                }));
                            }
                            self.emit(FloorEvent::Queued {
                                message_id,
                                position,
                            });
                        }
                    }
                    Action::UserMessageRefused { queue_limit } => {
                        if let Some(mut post) = self.posts.pop_back() {
                            self.unstore(&post.message.id);
                            if let Some(receipt) = post.receipt.take() {
                                let _ = receipt.send(Err(FloorError::QueueFull(queue_limit)));
                            }
                        }
                    }
                    Action::Record(note) => self.emit(FloorEvent::Note { note }),
                }
            }
        }
        operation
    }

    /// Forgets a message that was refused (it is the latest).
    fn unstore(&mut self, id: &str) {
        if self.messages.last().is_some_and(|m| m.id == id) {
            if let Some(m) = self.messages.pop() {
                self.history_bytes = self.history_bytes.saturating_sub(message_bytes(&m));
            }
            self.message_ids.remove(id);
        }
    }

    fn turn_started(&mut self, turn: TurnId) {
        let Some(post) = self.posts.pop_front() else {
            return;
        };
        self.emit(FloorEvent::TurnStarted {
            turn,
            message_id: post.message.id.clone(),
        });
        self.current = Some(CurrentTurn {
            messages: vec![post.message.clone()],
            post,
            started: Instant::now(),
        });
    }

    /// The initiator as the agents see it: the controller counts the author of a turn's
    /// first message as the user; when an agent posted it ([`Floor::post_as`]), that agent.
    fn as_shown(&self, initiator: Option<Speaker>) -> Option<Speaker> {
        match initiator {
            Some(Speaker::User) => Some(
                self.current
                    .as_ref()
                    .and_then(|c| Handle::new(&c.post.message.from).ok())
                    .map_or(Speaker::User, Speaker::from),
            ),
            other => other,
        }
    }

    fn answer_receipt(&mut self, next_agent: Option<Handle>) {
        if let Some(current) = self.current.as_mut()
            && let Some(receipt) = current.post.receipt.take()
        {
            let _ = receipt.send(Ok(PostReceipt {
                message_id: current.post.message.id.clone(),
                next_agent,
                queued: None,
            }));
        }
    }

    fn turn_ended(&mut self, turn: TurnId, reason: TurnEndReason, hops: u32) {
        self.answer_receipt(None);
        let cancelled = std::mem::take(&mut self.cancelling);
        let Some(mut current) = self.current.take() else {
            return;
        };
        self.emit(FloorEvent::TurnEnded {
            turn,
            reason: reason.clone(),
            hops,
            cancelled,
            elapsed_ms: ms(current.started.elapsed()),
        });
        if let Some(done) = current.post.done.take() {
            let _ = done.send(TurnSummary {
                turn,
                reason,
                hops,
                cancelled,
                messages: current.messages,
            });
        }
    }

    fn agent(&self, handle: &Handle) -> Option<Arc<dyn Agent>> {
        self.agents
            .iter()
            .find(|a| a.handle == *handle)
            .map(|a| Arc::clone(&a.agent))
    }

    /// The message agents are asked about: the latest of the running turn.
    fn last_turn_message(&self) -> Option<Message> {
        self.current
            .as_ref()
            .and_then(|c| c.messages.last().cloned())
            .or_else(|| self.messages.last().cloned())
    }

    fn recent_speakers(&self) -> Vec<String> {
        let mut speakers: Vec<String> = Vec::new();
        for message in self.messages.iter().rev() {
            if !speakers.contains(&message.from) {
                speakers.push(message.from.clone());
            }
            if speakers.len() == 5 {
                break;
            }
        }
        speakers.reverse();
        speakers
    }

    /// Fails what the floor waits for and marks the rest of the turn as cancelled.
    fn cancel(&mut self) -> Option<Operation> {
        self.cancelling = true;
        if let Some(turn) = self.controller.current_turn() {
            self.record(Entry::Cancelled { turn });
        }
        let event = match self.awaiting.take()? {
            Awaiting::Round { round, candidates } => Event::ShouldWakeAnswers {
                round,
                answers: candidates
                    .into_iter()
                    .map(|agent| {
                        PollAnswer::new(
                            agent,
                            WakeAnswer::Failed {
                                error: CANCELLED.to_owned(),
                            },
                        )
                    })
                    .collect(),
            },
            Awaiting::Call { call, agent } => Event::AgentFailed {
                call,
                agent,
                error: CANCELLED.to_owned(),
            },
        };
        self.feed(event)
    }

    async fn shutdown(&mut self) {
        if let Some(current) = self.current.as_mut()
            && let Some(receipt) = current.post.receipt.take()
        {
            let _ = receipt.send(Err(FloorError::Closed));
        }
        let joining: Vec<FloorAgent> = std::mem::take(&mut self.joining)
            .into_iter()
            .map(|(agent, _)| agent)
            .collect();
        futures::future::join_all(
            self.agents
                .iter()
                .chain(joining.iter())
                .map(|a| a.agent.shutdown()),
        )
        .await;
        self.emit(FloorEvent::Closed);
        self.flush();
    }

    fn emit(&self, event: FloorEvent) {
        if let Some(session) = &self.session {
            session.record_event(&event);
        }
        // No observer is not an error.
        let _ = self.events.send(event);
    }

    fn record(&mut self, entry: Entry) {
        let t_ms = ms(self.opened.elapsed());
        if let Some(session) = &self.session {
            session.record_transcript(&Line {
                t_ms,
                entry: entry.clone(),
            });
        }
        if let Some(transcript) = self.transcript.as_mut()
            && let Err(error) = transcript.write(&Line { t_ms, entry })
        {
            tracing::error!(floor.id = %self.id, %error, "cannot write the transcript; stopping it");
            self.transcript = None;
        }
    }

    fn flush(&mut self) {
        if let Some(transcript) = self.transcript.as_mut()
            && let Err(error) = transcript.flush()
        {
            tracing::error!(floor.id = %self.id, %error, "cannot write the transcript; stopping it");
            self.transcript = None;
        }
    }
}

/// What a message costs the history: its content and its tool activity.
fn message_bytes(m: &Message) -> usize {
    m.content.len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + serde_json::to_string(&c.arguments).map_or(0, |a| a.len()))
            .sum::<usize>()
        + m.tool_results
            .iter()
            .map(|r| r.to_string().len())
            .sum::<usize>()
}
