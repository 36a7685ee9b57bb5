//! The turn-taking controller: who speaks next on a floor.
//!
//! A pure state machine — [`Event`]s in, [`Action`]s out, no I/O, no clock, no randomness —
//! so a floor can be replayed from its transcript and every rule is tested without agents.
//! The floor (the caller) stores messages, calls agents with deadlines and feeds back what
//! happened; the controller only decides.
//!
//! # The protocol
//!
//! It implements the Turn-Taking Protocol of the OFC draft:
//!
//! 1. A message arrives. Its `@name?` requests (see [`crate::mention`]) wake those agents;
//!    `@name` only references. With no request, the agents are polled with `/ofc/should-wake`
//!    ([`Action::PollShouldWake`]) and the first in blueprint order that says yes is woken. If
//!    none does, the floor waits for the user ([`TurnEndReason::NoOneWoke`]).
//! 2. An agent responds. If the response requests `@user?`, the floor pauses for the user
//!    ([`TurnEndReason::WaitingForUser`]). A pass (`{"pass": true}`, or a message that is
//!    exactly `[PASS]`) leaves the agent out of polling for the rest of the turn. If the
//!    agent was requested, the floor returns to whoever requested it (its *initiator*); if it
//!    was woken by polling, the agents are polled again.
//! 3. `/ofc/respond` failing ends the turn with [`TurnEndReason::AgentError`].
//!
//! A *turn* is everything one user message sets off; it ends with exactly one
//! [`Action::TurnEnded`] carrying its [`TurnEndReason`], and all per-turn state (passes,
//! counters, the call stack) starts afresh with the next user message.
//!
//! # Decisions the draft leaves open
//!
//! - **Call stack.** Each request opens a *frame* holding the requested agent and its
//!   initiator; when the agent finishes without requesting anyone, its frame closes and the
//!   initiator responds next ([`WakeReason::DelegationReturned`]). An agent woken by polling
//!   has no initiator (`initiator` is absent in [`Action::Respond`]); when it finishes, the
//!   floor polls again. When the user is the initiator, returning to it ends the turn with
//!   [`TurnEndReason::ReturnedToUser`].
//! - **Several `@x?` in one message.** All of them are honoured, one after the other in order
//!   of first appearance (duplicates once), each as a delegation from the same initiator; the
//!   initiator gets the floor back after the last one. `@user? … @code?` is the exception:
//!   asking the user wins and the other requests are recorded as dropped
//!   ([`Note::RequestsDroppedForUser`]).
//! - **Self-mentions** (`@code?` written by `@code`, `@user?` written by the user) are ignored
//!   and recorded ([`Note::SelfMentionIgnored`]).
//! - **Unknown `@name?`** (no such agent on the floor) is ignored and recorded
//!   ([`Note::UnknownAgentRequested`]); the message is handled as if that mention had no `?`,
//!   so a message whose only request is unknown falls back to polling.
//! - **Mentions in code** (inline spans, fenced blocks) are not mentions.
//! - **Passes.** A pass from an agent whose message requested several agents moves on to the
//!   next of them. Otherwise the floor polls for someone to take the passer's place (the
//!   draft's "goto step 4"): whoever wakes answers the same initiator. If no one wakes, the
//!   request goes back to its initiator — to the agent that delegated
//!   ([`WakeReason::DelegationReturned`]), or, for the user or an agent woken by polling, the
//!   turn ends with [`TurnEndReason::NoOneWoke`]. An agent that passed can still be requested
//!   explicitly.
//! - **Poll candidates** are the agents in blueprint order minus those that passed this turn,
//!   minus the author of the message being polled about (an agent is not asked whether to
//!   answer itself), minus agents on the call stack (they are waiting on this very exchange).
//! - **`activation: always`** agents count as a yes without being asked. Agents before the
//!   first such candidate are polled, and it wakes only if none of them says yes; if it is the
//!   first candidate, no poll is sent at all. Two always-agents therefore alternate until a
//!   guard stops them — [`Limits::max_pair_exchanges`] with the defaults.
//! - **Should-wake answers** that are late, failed or missing count as no and are recorded
//!   ([`Note::ShouldWakeUnanswered`]).
//! - **`@user?` ends the turn.** The next user message is a new turn handled from step 1; the
//!   interrupted call stack is not resumed. [`TurnEndReason::WaitingForUser`] names the asker
//!   so the floor can show who is waiting.
//! - **One turn at a time.** A user message arriving mid-turn is queued
//!   ([`Action::UserMessageQueued`]) and starts its own turn right after the current one ends,
//!   in the same batch of actions; beyond [`Limits::max_queued_messages`] it is refused
//!   ([`Action::UserMessageRefused`]).
//! - **Stale events** — answers to a round or call the controller is no longer waiting for, or
//!   from the wrong agent — change nothing and are recorded ([`Note::StaleEvent`]).
//!
//! # Guards
//!
//! None of the reference implementations have them; each is in [`Limits`]:
//!
//! - **Hop limit** ([`Limits::max_hops`], default 16): the number of [`Action::Respond`] per
//!   turn. It is checked before any agent is asked anything, polls included, so a turn that
//!   has used its hops ends with [`TurnEndReason::HopLimit`] even if no one would have woken.
//! - **Cycles**: a request for an agent already on the call stack (A→B→A, A→B→C→A) is refused
//!   and recorded ([`Note::CycleRefused`]); by default the message is then handled as if that
//!   mention had no `?` — for A→B→A that is the ordinary return to A — and with
//!   [`CyclePolicy::EndTurn`] the turn ends with [`TurnEndReason::CycleRefused`].
//! - **Pair limit** ([`Limits::max_pair_exchanges`], default 6): how often the floor may pass
//!   directly from one agent's message to the other agent of the same pair, either way,
//!   counting delegations, returns and polling alike; exceeding it ends the turn with
//!   [`TurnEndReason::PairLimit`].
//!
//! Every step either asks an agent to respond (bounded by the hop limit), or polls (each poll
//! is followed by a response or the end of the turn), so a turn ends after at most
//! `max_hops` responses and `max_hops + 1` polls.

mod action;
mod config;
mod event;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::mem;

pub use action::{Action, Note, TurnEndReason, Unanswered, WakeReason};
pub use config::{Activation, AgentSpec, CyclePolicy, Limits};
pub use event::{CallId, Event, EventKind, PollAnswer, RoundId, TurnId, WakeAnswer};

use crate::error::{Error, Result};
use crate::handle::{Handle, Speaker};
use crate::mention::{Mention, mentions};

/// The response text that means "pass", besides `{"pass": true}`.
pub const PASS_MARKER: &str = "[PASS]";

/// Whether a response is a pass written as text: exactly `[PASS]`, surrounding whitespace
/// aside.
pub fn is_pass(content: &str) -> bool {
    content.trim() == PASS_MARKER
}

/// The turn-taking state of one floor. See the [module documentation](self) for the rules.
#[derive(Debug, Clone)]
pub struct Controller {
    roster: Vec<AgentSpec>,
    limits: Limits,
    /// The last [`RoundId`] or [`CallId`] handed out; both come from this one counter.
    last_id: u64,
    turns_started: u64,
    turn: Option<Turn>,
    queue: VecDeque<String>,
}

impl Controller {
    /// A controller for these agents, in blueprint order.
    pub fn new(roster: Vec<AgentSpec>, limits: Limits) -> Result<Self> {
        if limits.max_hops == 0 {
            return Err(Error::InvalidLimit { name: "max_hops" });
        }
        if limits.max_pair_exchanges == 0 {
            return Err(Error::InvalidLimit {
                name: "max_pair_exchanges",
            });
        }
        check_roster(&roster)?;
        Ok(Self {
            roster,
            limits,
            last_id: 0,
            turns_started: 0,
            turn: None,
            queue: VecDeque::new(),
        })
    }

    /// Replaces the roster between turns, when agents join or leave the floor; identifiers
    /// keep counting, so turns, rounds and calls stay unique for the floor's lifetime.
    /// Refused while a turn is in progress ([`Error::TurnInProgress`]).
    pub fn set_roster(&mut self, roster: Vec<AgentSpec>) -> Result<()> {
        if self.turn.is_some() {
            return Err(Error::TurnInProgress);
        }
        check_roster(&roster)?;
        self.roster = roster;
        Ok(())
    }

    /// The agents, in blueprint order.
    pub fn roster(&self) -> &[AgentSpec] {
        &self.roster
    }

    /// The guards in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The turn in progress, if any.
    pub fn current_turn(&self) -> Option<TurnId> {
        self.turn.as_ref().map(|turn| turn.id)
    }

    /// Whether the floor is waiting for the user.
    pub fn is_idle(&self) -> bool {
        self.turn.is_none()
    }

    /// How many user messages wait for the current turn to end.
    pub fn queued_messages(&self) -> usize {
        self.queue.len()
    }

    /// The agents holding the floor, outermost first: each has been requested (or woken) and
    /// has not finished yet. Empty between turns.
    pub fn call_stack(&self) -> Vec<Handle> {
        self.turn
            .as_ref()
            .map(|turn| turn.stack.iter().map(|f| f.current.clone()).collect())
            .unwrap_or_default()
    }

    /// Handles one event and returns what the floor must do, in order.
    pub fn handle(&mut self, event: Event) -> Vec<Action> {
        let mut out = Vec::new();
        if let Event::UserMessage { content } = event {
            if self.turn.is_none() {
                self.start_turn(content, &mut out);
            } else if self.queue.len() < self.limits.max_queued_messages {
                self.queue.push_back(content);
                out.push(Action::UserMessageQueued {
                    position: self.queue.len(),
                });
            } else {
                out.push(Action::UserMessageRefused {
                    queue_limit: self.limits.max_queued_messages,
                });
            }
            return out;
        }
        let kind = event.kind();
        let Some(turn) = self.turn.as_mut() else {
            out.push(Action::Record(Note::StaleEvent { event: kind }));
            return out;
        };
        let mut step = Step {
            turn,
            roster: &self.roster,
            limits: &self.limits,
            last_id: &mut self.last_id,
            out: &mut out,
        };
        match step.accept(event) {
            Some(next) => self.settle(next, &mut out),
            None => out.push(Action::Record(Note::StaleEvent { event: kind })),
        }
        out
    }

    /// Starts a turn for `content`, and for queued messages while turns end at once.
    fn start_turn(&mut self, content: String, out: &mut Vec<Action>) {
        let mut content = content;
        loop {
            self.turns_started += 1;
            let id = TurnId(self.turns_started);
            out.push(Action::TurnStarted {
                turn: id,
                content: content.clone(),
            });
            let mut turn = Turn::new(id);
            let next = Step {
                turn: &mut turn,
                roster: &self.roster,
                limits: &self.limits,
                last_id: &mut self.last_id,
                out,
            }
            .user_message(&content);
            match next {
                Ok(awaiting) => {
                    turn.awaiting = awaiting;
                    self.turn = Some(turn);
                    return;
                }
                Err(reason) => {
                    out.push(turn.ended(reason));
                    match self.queue.pop_front() {
                        Some(queued) => content = queued,
                        None => return,
                    }
                }
            }
        }
    }

    /// Applies the outcome of a step to the current turn.
    fn settle(&mut self, next: Next, out: &mut Vec<Action>) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        match next {
            Ok(awaiting) => turn.awaiting = awaiting,
            Err(reason) => {
                out.push(turn.ended(reason));
                self.turn = None;
                if let Some(queued) = self.queue.pop_front() {
                    self.start_turn(queued, out);
                }
            }
        }
    }
}

/// Every agent once, and none of them `@user`.
fn check_roster(roster: &[AgentSpec]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for spec in roster {
        if spec.handle.is_user() {
            return Err(Error::ReservedHandle(spec.handle.clone()));
        }
        if !seen.insert(&spec.handle) {
            return Err(Error::DuplicateAgent(spec.handle.clone()));
        }
    }
    Ok(())
}

/// What happens next: the controller waits for something, or (`Err`) the turn ends. `Err` is
/// not a failure, it lets guards end the turn with `?`.
type Next = std::result::Result<Awaiting, TurnEndReason>;

/// The state of the turn in progress.
#[derive(Debug, Clone)]
struct Turn {
    id: TurnId,
    /// [`Action::Respond`] issued so far.
    hops: u32,
    /// Agents that passed; left out of polling.
    passed: BTreeSet<Handle>,
    /// Open delegations, outermost first.
    stack: Vec<Frame>,
    awaiting: Awaiting,
    /// The author of the latest message of the turn.
    last_speaker: Speaker,
    /// The floor's agents the latest message mentions, in order.
    last_mentioned: Vec<Handle>,
    /// Direct hand-overs between two agents, keyed smaller handle first.
    exchanges: BTreeMap<(Handle, Handle), u32>,
}

impl Turn {
    fn new(id: TurnId) -> Self {
        Self {
            id,
            hops: 0,
            passed: BTreeSet::new(),
            stack: Vec::new(),
            awaiting: Awaiting::Nothing,
            last_speaker: Speaker::User,
            last_mentioned: Vec::new(),
            exchanges: BTreeMap::new(),
        }
    }

    fn ended(&self, reason: TurnEndReason) -> Action {
        Action::TurnEnded {
            turn: self.id,
            reason,
            hops: self.hops,
        }
    }
}

/// One open delegation: `current` holds the floor on behalf of `initiator`.
#[derive(Debug, Clone)]
struct Frame {
    initiator: Initiator,
    current: Handle,
    /// Agents the same message also requested, still to be called.
    remaining: VecDeque<Handle>,
}

/// Who a frame's agent answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Initiator {
    User,
    Agent(Handle),
    /// Woken by polling.
    Nobody,
}

impl Initiator {
    fn speaker(&self) -> Option<Speaker> {
        match self {
            Self::User => Some(Speaker::User),
            Self::Agent(handle) => Some(Speaker::Agent(handle.clone())),
            Self::Nobody => None,
        }
    }
}

/// What the controller waits for.
#[derive(Debug, Clone)]
enum Awaiting {
    /// Only between receiving an event and deciding what follows it.
    Nothing,
    Poll {
        round: RoundId,
        /// Asked, in blueprint order.
        candidates: Vec<Handle>,
        /// The `activation: always` agent that wakes if no candidate says yes.
        always: Option<Handle>,
        purpose: PollPurpose,
    },
    Call {
        call: CallId,
        agent: Handle,
    },
}

/// What a should-wake poll is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PollPurpose {
    /// No one is requested: whoever wakes opens a frame without initiator.
    OpenFloor,
    /// The agent of the innermost frame passed: whoever wakes takes its place.
    TakeOver,
}

/// One decision, with everything it may touch borrowed.
struct Step<'a> {
    turn: &'a mut Turn,
    roster: &'a [AgentSpec],
    limits: &'a Limits,
    last_id: &'a mut u64,
    out: &'a mut Vec<Action>,
}

impl Step<'_> {
    /// Handles an event of the turn; `None` if it is not what the turn waits for.
    fn accept(&mut self, event: Event) -> Option<Next> {
        match event {
            // Handled by `Controller::handle` before a step is made.
            Event::UserMessage { .. } => None,
            Event::ShouldWakeAnswers { round, answers } => {
                match mem::replace(&mut self.turn.awaiting, Awaiting::Nothing) {
                    Awaiting::Poll {
                        round: expected,
                        candidates,
                        always,
                        purpose,
                    } if expected == round => {
                        Some(self.answers(&candidates, always, purpose, &answers))
                    }
                    other => {
                        self.turn.awaiting = other;
                        None
                    }
                }
            }
            Event::AgentResponded {
                call,
                agent,
                content,
            } => self.take_call(call, &agent).then(|| {
                if is_pass(&content) {
                    self.passed(agent, None)
                } else {
                    self.responded(agent, &content)
                }
            }),
            Event::AgentPassed {
                call,
                agent,
                reason,
            } => self
                .take_call(call, &agent)
                .then(|| self.passed(agent, reason)),
            Event::AgentFailed { call, agent, error } => self
                .take_call(call, &agent)
                .then_some(Err(TurnEndReason::AgentError { agent, error })),
        }
    }

    /// Whether the turn waits for exactly this call from this agent; if so, it no longer does.
    fn take_call(&mut self, call: CallId, agent: &Handle) -> bool {
        let matches = matches!(
            &self.turn.awaiting,
            Awaiting::Call { call: c, agent: a } if *c == call && a == agent
        );
        if matches {
            self.turn.awaiting = Awaiting::Nothing;
        }
        matches
    }

    /// Step 1 for the user's message.
    fn user_message(&mut self, content: &str) -> Next {
        let found = mentions(content);
        self.heard(Speaker::User, &found);
        let requests = self.requests(&Speaker::User, &found)?;
        match self.delegate(Initiator::User, requests) {
            Some(next) => next,
            None => self.poll(PollPurpose::OpenFloor),
        }
    }

    /// Step 2 for an agent's message.
    fn responded(&mut self, agent: Handle, content: &str) -> Next {
        let found = mentions(content);
        let speaker = Speaker::Agent(agent.clone());
        self.heard(speaker.clone(), &found);
        if found
            .iter()
            .any(|mention| mention.is_request() && mention.handle.is_user())
        {
            let mut dropped: Vec<Handle> = Vec::new();
            for mention in found.iter().filter(|m| m.is_request()) {
                if mention.handle != agent
                    && self.is_on_floor(&mention.handle)
                    && !dropped.contains(&mention.handle)
                {
                    dropped.push(mention.handle.clone());
                }
            }
            if !dropped.is_empty() {
                self.record(Note::RequestsDroppedForUser {
                    by: agent.clone(),
                    dropped,
                });
            }
            return Err(TurnEndReason::WaitingForUser { asked_by: agent });
        }
        let requests = self.requests(&speaker, &found)?;
        match self.delegate(Initiator::Agent(agent), requests) {
            Some(next) => next,
            None => self.finish_current(),
        }
    }

    /// The agent of the innermost frame passed.
    fn passed(&mut self, agent: Handle, reason: Option<String>) -> Next {
        self.record(Note::Passed {
            agent: agent.clone(),
            reason,
        });
        self.turn.passed.insert(agent);
        let Some(mut frame) = self.turn.stack.pop() else {
            return self.poll(PollPurpose::OpenFloor);
        };
        if let Some(next) = frame.remaining.pop_front() {
            frame.current = next.clone();
            self.turn.stack.push(frame);
            return self.call(next, WakeReason::MentionedWithQuestion);
        }
        self.turn.stack.push(frame);
        self.poll(PollPurpose::TakeOver)
    }

    /// The agent of the innermost frame answered without requesting anyone: the next agent
    /// its initiator requested responds, or the initiator, or (without initiator) polling.
    fn finish_current(&mut self) -> Next {
        let Some(mut frame) = self.turn.stack.pop() else {
            return self.poll(PollPurpose::OpenFloor);
        };
        if let Some(next) = frame.remaining.pop_front() {
            frame.current = next.clone();
            self.turn.stack.push(frame);
            return self.call(next, WakeReason::MentionedWithQuestion);
        }
        let from = frame.current;
        match frame.initiator {
            Initiator::User => Err(TurnEndReason::ReturnedToUser { from }),
            Initiator::Agent(initiator) => {
                self.call(initiator, WakeReason::DelegationReturned { from })
            }
            Initiator::Nobody => self.poll(PollPurpose::OpenFloor),
        }
    }

    /// Opens a frame for the requested agents and calls the first; `None` if there are none.
    fn delegate(&mut self, initiator: Initiator, requests: Vec<Handle>) -> Option<Next> {
        let mut requests = VecDeque::from(requests);
        let first = requests.pop_front()?;
        self.turn.stack.push(Frame {
            initiator,
            current: first.clone(),
            remaining: requests,
        });
        Some(self.call(first, WakeReason::MentionedWithQuestion))
    }

    /// Remembers who wrote the latest message and whom it mentions.
    fn heard(&mut self, speaker: Speaker, found: &[Mention]) {
        let mut mentioned: Vec<Handle> = Vec::new();
        for mention in found {
            if self.is_on_floor(&mention.handle) && !mentioned.contains(&mention.handle) {
                mentioned.push(mention.handle.clone());
            }
        }
        self.turn.last_speaker = speaker;
        self.turn.last_mentioned = mentioned;
    }

    /// The agents a message by `by` requests, in order of first appearance, after the
    /// self-mention, unknown-agent and cycle rules.
    fn requests(&mut self, by: &Speaker, found: &[Mention]) -> Result<Vec<Handle>, TurnEndReason> {
        let own = by.handle();
        let mut seen = BTreeSet::new();
        let mut wanted = Vec::new();
        for mention in found.iter().filter(|m| m.is_request()) {
            let target = &mention.handle;
            if !seen.insert(target.clone()) {
                continue;
            }
            if *target == own {
                self.record(Note::SelfMentionIgnored { by: by.clone() });
            } else if target.is_user() {
                // Handled before: a request for the user ends the turn.
            } else if !self.is_on_floor(target) {
                self.record(Note::UnknownAgentRequested {
                    by: by.clone(),
                    name: target.clone(),
                });
            } else if self.is_on_stack(target) {
                self.record(Note::CycleRefused {
                    by: own.clone(),
                    target: target.clone(),
                    stack: self.turn.stack.iter().map(|f| f.current.clone()).collect(),
                });
                if self.limits.on_cycle == CyclePolicy::EndTurn {
                    return Err(TurnEndReason::CycleRefused {
                        by: own,
                        target: target.clone(),
                    });
                }
            } else {
                wanted.push(target.clone());
            }
        }
        Ok(wanted)
    }

    /// Step 4: asks the candidates whether they want to respond, or decides at once when
    /// there is no one to ask.
    fn poll(&mut self, purpose: PollPurpose) -> Next {
        self.check_hops()?;
        let mut asked = Vec::new();
        let mut always = None;
        for spec in self.roster {
            let handle = &spec.handle;
            if self.turn.passed.contains(handle)
                || self.turn.last_speaker.agent() == Some(handle)
                || self.is_on_stack(handle)
            {
                continue;
            }
            match spec.activation {
                Activation::Mention => asked.push(handle.clone()),
                Activation::Always => {
                    always = Some(handle.clone());
                    break;
                }
            }
        }
        if asked.is_empty() {
            return match always {
                Some(agent) => self.woken(agent, WakeReason::Always, purpose),
                None => self.no_one_woke(purpose),
            };
        }
        let round = RoundId(self.next_id());
        let mentioned = asked
            .iter()
            .filter(|h| self.turn.last_mentioned.contains(h))
            .cloned()
            .collect();
        self.out.push(Action::PollShouldWake {
            round,
            candidates: asked.clone(),
            mentioned,
        });
        Ok(Awaiting::Poll {
            round,
            candidates: asked,
            always,
            purpose,
        })
    }

    /// Step 5: the first candidate in blueprint order that said yes wakes.
    fn answers(
        &mut self,
        candidates: &[Handle],
        always: Option<Handle>,
        purpose: PollPurpose,
        answers: &[PollAnswer],
    ) -> Next {
        let mut winner = None;
        for candidate in candidates {
            let answer = answers.iter().find(|a| a.agent == *candidate);
            let unanswered = match answer.map(|a| &a.answer) {
                Some(WakeAnswer::Yes { reason }) => {
                    if winner.is_none() {
                        winner = Some((candidate.clone(), reason.clone()));
                    }
                    None
                }
                Some(WakeAnswer::No) => None,
                Some(WakeAnswer::Late) => Some(Unanswered::Late),
                Some(WakeAnswer::Failed { error }) => Some(Unanswered::Failed {
                    error: error.clone(),
                }),
                None => Some(Unanswered::Missing),
            };
            if let Some(why) = unanswered {
                self.record(Note::ShouldWakeUnanswered {
                    agent: candidate.clone(),
                    why,
                });
            }
        }
        match (winner, always) {
            (Some((agent, reason)), _) => {
                self.woken(agent, WakeReason::ShouldWake { reason }, purpose)
            }
            (None, Some(agent)) => self.woken(agent, WakeReason::Always, purpose),
            (None, None) => self.no_one_woke(purpose),
        }
    }

    /// `agent` won a poll.
    fn woken(&mut self, agent: Handle, reason: WakeReason, purpose: PollPurpose) -> Next {
        match (purpose, self.turn.stack.last_mut()) {
            (PollPurpose::TakeOver, Some(frame)) => frame.current = agent.clone(),
            _ => self.turn.stack.push(Frame {
                initiator: Initiator::Nobody,
                current: agent.clone(),
                remaining: VecDeque::new(),
            }),
        }
        self.call(agent, reason)
    }

    /// Step 6: nobody won a poll.
    fn no_one_woke(&mut self, purpose: PollPurpose) -> Next {
        if purpose == PollPurpose::TakeOver
            && let Some(frame) = self.turn.stack.pop()
            && let Initiator::Agent(initiator) = frame.initiator
        {
            return self.call(
                initiator,
                WakeReason::DelegationReturned {
                    from: frame.current,
                },
            );
        }
        Err(TurnEndReason::NoOneWoke)
    }

    /// Asks `agent` (the innermost frame's agent) to respond, if the guards allow.
    fn call(&mut self, agent: Handle, wake_reason: WakeReason) -> Next {
        self.check_hops()?;
        if let Speaker::Agent(previous) = &self.turn.last_speaker
            && *previous != agent
        {
            let pair = if *previous < agent {
                (previous.clone(), agent.clone())
            } else {
                (agent.clone(), previous.clone())
            };
            let count = self.turn.exchanges.entry(pair.clone()).or_insert(0);
            *count += 1;
            if *count > self.limits.max_pair_exchanges {
                return Err(TurnEndReason::PairLimit {
                    a: pair.0,
                    b: pair.1,
                    limit: self.limits.max_pair_exchanges,
                });
            }
        }
        self.turn.hops += 1;
        let call = CallId(self.next_id());
        let initiator = self
            .turn
            .stack
            .last()
            .and_then(|frame| frame.initiator.speaker());
        self.out.push(Action::Respond {
            call,
            agent: agent.clone(),
            wake_reason,
            initiator,
        });
        Ok(Awaiting::Call { call, agent })
    }

    fn check_hops(&self) -> Result<(), TurnEndReason> {
        if self.turn.hops >= self.limits.max_hops {
            return Err(TurnEndReason::HopLimit {
                limit: self.limits.max_hops,
            });
        }
        Ok(())
    }

    fn is_on_floor(&self, handle: &Handle) -> bool {
        self.roster.iter().any(|spec| spec.handle == *handle)
    }

    fn is_on_stack(&self, handle: &Handle) -> bool {
        self.turn.stack.iter().any(|frame| frame.current == *handle)
    }

    fn record(&mut self, note: Note) {
        self.out.push(Action::Record(note));
    }

    fn next_id(&mut self) -> u64 {
        *self.last_id += 1;
        *self.last_id
    }
}
