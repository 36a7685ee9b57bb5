//! A scripted floor for driving the controller in tests: agents answer from scripts, and
//! every action is written down as one short line.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};

use runtime::{
    Action, AgentSpec, Controller, CyclePolicy, Event, Handle, Limits, Note, PollAnswer, Speaker,
    TurnEndReason, Unanswered, WakeAnswer, WakeReason,
};

/// `"data* code"`: agents in blueprint order, `*` for `activation: always`.
pub fn roster(spec: &str) -> Vec<AgentSpec> {
    spec.split_whitespace()
        .map(|word| match word.strip_suffix('*') {
            Some(name) => AgentSpec::always(handle(name)),
            None => AgentSpec::mention(handle(word)),
        })
        .collect()
}

pub fn handle(name: &str) -> Handle {
    Handle::new(name).unwrap()
}

/// A floor, what its user says and how its agents behave, and the trace expected.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub roster: &'static str,
    pub limits: Limits,
    pub users: Vec<&'static str>,
    /// Post every user message at once instead of one per idle floor.
    pub burst: bool,
    /// Per agent, its responses in order: text, `!pass`, `!pass <reason>` or `!fail <error>`.
    pub replies: BTreeMap<&'static str, VecDeque<&'static str>>,
    /// Per agent, its should-wake answers in order: `y`, `y:<reason>`, `n`, `late`, `fail`, or
    /// `-` for no answer at all. `n` once the script runs out.
    pub wakes: BTreeMap<&'static str, VecDeque<&'static str>>,
    pub expect: Vec<&'static str>,
}

pub fn floor(roster: &'static str) -> Scenario {
    Scenario {
        roster,
        limits: Limits::default(),
        users: Vec::new(),
        burst: false,
        replies: BTreeMap::new(),
        wakes: BTreeMap::new(),
        expect: Vec::new(),
    }
}

impl Scenario {
    pub fn user(mut self, message: &'static str) -> Self {
        self.users.push(message);
        self
    }

    pub fn burst(mut self) -> Self {
        self.burst = true;
        self
    }

    pub fn says(mut self, agent: &'static str, replies: &[&'static str]) -> Self {
        self.replies
            .entry(agent)
            .or_default()
            .extend(replies.iter().copied());
        self
    }

    pub fn wakes(mut self, agent: &'static str, answers: &[&'static str]) -> Self {
        self.wakes
            .entry(agent)
            .or_default()
            .extend(answers.iter().copied());
        self
    }

    pub fn hops(mut self, max: u32) -> Self {
        self.limits.max_hops = max;
        self
    }

    pub fn pairs(mut self, max: u32) -> Self {
        self.limits.max_pair_exchanges = max;
        self
    }

    pub fn cycles_end_turn(mut self) -> Self {
        self.limits.on_cycle = CyclePolicy::EndTurn;
        self
    }

    pub fn queue(mut self, max: usize) -> Self {
        self.limits.max_queued_messages = max;
        self
    }

    pub fn expect(mut self, trace: &[&'static str]) -> Self {
        self.expect = trace.to_vec();
        self
    }

    /// Runs the scenario and returns its trace, checking on the way that every `TurnEnded`
    /// counts the responds of its turn, that every script is used up and that the floor ends
    /// idle.
    pub fn run(&self) -> Vec<String> {
        let mut controller = Controller::new(roster(self.roster), self.limits.clone()).unwrap();
        let mut replies = self.replies.clone();
        let mut wakes = self.wakes.clone();
        let mut trace = Vec::new();
        let mut inbox: VecDeque<Event> = VecDeque::new();
        let mut users = self.users.iter();
        if self.burst {
            inbox.extend(users.by_ref().map(|&content| Event::UserMessage {
                content: content.into(),
            }));
        }
        let mut responds = 0;
        let mut events = 0;
        while let Some(event) = inbox.pop_front().or_else(|| {
            users.next().map(|&content| Event::UserMessage {
                content: content.into(),
            })
        }) {
            events += 1;
            assert!(events < 1_000, "runaway floor: {trace:#?}");
            for action in controller.handle(event) {
                trace.push(show(&action));
                match action {
                    Action::TurnStarted { .. } => responds = 0,
                    Action::PollShouldWake {
                        round, candidates, ..
                    } => {
                        let answers = candidates
                            .iter()
                            .filter_map(|agent| {
                                let script = wakes.get_mut(agent.as_str());
                                let word = script.and_then(VecDeque::pop_front).unwrap_or("n");
                                wake_answer(word)
                                    .map(|answer| PollAnswer::new(agent.clone(), answer))
                            })
                            .collect();
                        inbox.push_back(Event::ShouldWakeAnswers { round, answers });
                    }
                    Action::Respond { call, agent, .. } => {
                        responds += 1;
                        let reply = replies
                            .get_mut(agent.as_str())
                            .and_then(VecDeque::pop_front)
                            .unwrap_or_else(|| {
                                panic!("{agent} was called with nothing left to say: {trace:#?}")
                            });
                        inbox.push_back(reply_event(call, agent, reply));
                    }
                    Action::TurnEnded { hops, .. } => {
                        assert_eq!(hops, responds, "hop count of the turn: {trace:#?}");
                    }
                    _ => {}
                }
            }
        }
        for (agent, left) in &replies {
            assert!(left.is_empty(), "@{agent} never said {left:?}: {trace:#?}");
        }
        assert!(
            controller.is_idle(),
            "the floor did not go idle: {trace:#?}"
        );
        trace
    }
}

fn wake_answer(word: &str) -> Option<WakeAnswer> {
    Some(match word {
        "-" => return None,
        "n" => WakeAnswer::No,
        "late" => WakeAnswer::Late,
        "fail" => WakeAnswer::Failed {
            error: "boom".into(),
        },
        "y" => WakeAnswer::Yes { reason: None },
        other => match other.strip_prefix("y:") {
            Some(reason) => WakeAnswer::Yes {
                reason: Some(reason.into()),
            },
            None => panic!("unknown should-wake answer {other:?}"),
        },
    })
}

fn reply_event(call: runtime::CallId, agent: Handle, reply: &str) -> Event {
    if reply == "!pass" {
        Event::AgentPassed {
            call,
            agent,
            reason: None,
        }
    } else if let Some(reason) = reply.strip_prefix("!pass ") {
        Event::AgentPassed {
            call,
            agent,
            reason: Some(reason.into()),
        }
    } else if let Some(error) = reply.strip_prefix("!fail ") {
        Event::AgentFailed {
            call,
            agent,
            error: error.into(),
        }
    } else {
        Event::AgentResponded {
            call,
            agent,
            content: reply.into(),
        }
    }
}

fn bare(speaker: &Speaker) -> String {
    speaker.handle().as_str().to_owned()
}

fn names(handles: &[Handle]) -> String {
    handles
        .iter()
        .map(Handle::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line per action.
pub fn show(action: &Action) -> String {
    match action {
        Action::TurnStarted { content, .. } => format!("start {content}"),
        Action::PollShouldWake {
            candidates,
            mentioned,
            ..
        } => {
            let mut line = format!("poll {}", names(candidates));
            if !mentioned.is_empty() {
                line += &format!(" (mentions {})", names(mentioned));
            }
            line
        }
        Action::Respond {
            agent,
            wake_reason,
            initiator,
            ..
        } => {
            let reason = match wake_reason {
                WakeReason::MentionedWithQuestion => "mentioned".to_owned(),
                WakeReason::ShouldWake { reason: None } => "should_wake".to_owned(),
                WakeReason::ShouldWake {
                    reason: Some(reason),
                } => format!("should_wake({reason})"),
                WakeReason::Always => "always".to_owned(),
                WakeReason::DelegationReturned { from } => format!("returned({})", from.as_str()),
            };
            let mut line = format!("call {} {reason}", agent.as_str());
            if let Some(initiator) = initiator {
                line += &format!(" <- {}", bare(initiator));
            }
            line
        }
        Action::TurnEnded { reason, .. } => format!("end {}", show_reason(reason)),
        Action::UserMessageQueued { position } => format!("queued {position}"),
        Action::UserMessageRefused { .. } => "refused".to_owned(),
        Action::Record(note) => format!("note {}", show_note(note)),
    }
}

fn show_reason(reason: &TurnEndReason) -> String {
    match reason {
        TurnEndReason::ReturnedToUser { from } => format!("returned_to_user {}", from.as_str()),
        TurnEndReason::WaitingForUser { asked_by } => {
            format!("waiting_for_user {}", asked_by.as_str())
        }
        TurnEndReason::NoOneWoke => "no_one_woke".to_owned(),
        TurnEndReason::HopLimit { limit } => format!("hop_limit {limit}"),
        TurnEndReason::PairLimit { a, b, limit } => {
            format!("pair_limit {} {} {limit}", a.as_str(), b.as_str())
        }
        TurnEndReason::CycleRefused { by, target } => {
            format!("cycle_refused {} {}", by.as_str(), target.as_str())
        }
        TurnEndReason::AgentError { agent, error } => {
            format!("agent_error {}: {error}", agent.as_str())
        }
    }
}

fn show_note(note: &Note) -> String {
    match note {
        Note::SelfMentionIgnored { by } => format!("self_mention {}", bare(by)),
        Note::UnknownAgentRequested { by, name } => {
            format!("unknown {} by {}", name.as_str(), bare(by))
        }
        Note::CycleRefused { by, target, stack } => format!(
            "cycle {} -> {} [{}]",
            by.as_str(),
            target.as_str(),
            names(stack)
        ),
        Note::RequestsDroppedForUser { by, dropped } => {
            format!("dropped_for_user by {}: {}", by.as_str(), names(dropped))
        }
        Note::Passed { agent, reason } => match reason {
            Some(reason) => format!("pass {} ({reason})", agent.as_str()),
            None => format!("pass {}", agent.as_str()),
        },
        Note::ShouldWakeUnanswered { agent, why } => match why {
            Unanswered::Late => format!("unanswered {} late", agent.as_str()),
            Unanswered::Failed { error } => {
                format!("unanswered {} failed: {error}", agent.as_str())
            }
            Unanswered::Missing => format!("unanswered {} missing", agent.as_str()),
        },
        Note::StaleEvent { event } => format!("stale {event:?}"),
    }
}
