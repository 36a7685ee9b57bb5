//! Whatever the agents do, every user message ends in exactly one `TurnEnded`, within the
//! limits, deterministically.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::handle;
use proptest::prelude::*;
use runtime::{
    Action, Activation, AgentSpec, CallId, Controller, CyclePolicy, Event, Handle, Limits,
    PollAnswer, RoundId, WakeAnswer, is_pass,
};

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// Words messages are made of: requests and references to agents on and off the floor, the
/// user, mentions hidden in code, a pass marker.
const WORDS: [&str; 16] = [
    "@a?",
    "@b?",
    "@c?",
    "@d?",
    "@e?",
    "@a",
    "@B",
    "@user?",
    "@ghost?",
    "`@a?`",
    "hello",
    "@C?,",
    "(@d?)",
    "mail x@a.com",
    "[PASS]",
    "@user",
];

/// Choices read from a tape; 0 once it runs out.
struct Tape(Vec<u8>, usize);

impl Tape {
    fn next(&mut self, below: u8) -> u8 {
        let value = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        value % below
    }

    fn message(&mut self) -> String {
        let len = self.next(4);
        (0..len)
            .map(|_| WORDS[usize::from(self.next(WORDS.len() as u8))])
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn reply(&mut self, call: CallId, agent: Handle) -> Event {
        match self.next(10) {
            0..=5 => Event::AgentResponded {
                call,
                agent,
                content: self.message(),
            },
            6 => Event::AgentResponded {
                call,
                agent,
                content: "[PASS]".into(),
            },
            7 | 8 => Event::AgentPassed {
                call,
                agent,
                reason: None,
            },
            _ => Event::AgentFailed {
                call,
                agent,
                error: "boom".into(),
            },
        }
    }

    fn answers(&mut self, candidates: &[Handle]) -> Vec<PollAnswer> {
        candidates
            .iter()
            .filter_map(|agent| {
                let answer = match self.next(6) {
                    0 | 1 => WakeAnswer::No,
                    2 | 3 => WakeAnswer::Yes { reason: None },
                    4 => WakeAnswer::Late,
                    _ => return None,
                };
                Some(PollAnswer::new(agent.clone(), answer))
            })
            .collect()
    }
}

fn setup() -> impl Strategy<Value = (Vec<AgentSpec>, Limits)> {
    let roster = (1..=NAMES.len())
        .prop_flat_map(|n| proptest::collection::vec(any::<bool>(), n))
        .prop_map(|always| {
            always
                .iter()
                .zip(NAMES)
                .map(|(&always, name)| {
                    if always {
                        AgentSpec::always(handle(name))
                    } else {
                        AgentSpec::mention(handle(name))
                    }
                })
                .collect::<Vec<_>>()
        });
    let limits = (1..=12u32, 1..=6u32, any::<bool>(), 0..=2usize).prop_map(
        |(max_hops, max_pair_exchanges, end_turn, max_queued_messages)| Limits {
            max_hops,
            max_pair_exchanges,
            on_cycle: if end_turn {
                CyclePolicy::EndTurn
            } else {
                CyclePolicy::Skip
            },
            max_queued_messages,
        },
    );
    (roster, limits)
}

/// What the checks need to know about the turn in progress.
#[derive(Default)]
struct TurnLog {
    responds: u32,
    polls: u32,
    events: u32,
    passed: BTreeSet<Handle>,
    last_author: Option<Handle>,
    exchanges: BTreeMap<(Handle, Handle), u32>,
}

/// Drives a floor from the tape, checking every action, and returns the events fed and the
/// actions received.
fn drive(
    roster: &[AgentSpec],
    limits: &Limits,
    users: &[String],
    burst: bool,
    tape: Vec<u8>,
) -> Result<(Vec<Event>, Vec<Vec<Action>>), TestCaseError> {
    let mut floor = Controller::new(roster.to_vec(), limits.clone()).unwrap();
    let mut tape = Tape(tape, 0);
    let mut inbox: std::collections::VecDeque<Event> = Default::default();
    let mut pending_users = users.iter();
    if burst {
        inbox.extend(pending_users.by_ref().map(|content| Event::UserMessage {
            content: content.clone(),
        }));
    }
    let mut log = TurnLog::default();
    let mut fed = Vec::new();
    let mut received = Vec::new();
    let (mut started, mut ended, mut refused) = (0, 0, 0);
    let bound = 2 * limits.max_hops + 2;

    while let Some(event) = inbox.pop_front().or_else(|| {
        pending_users.next().map(|content| Event::UserMessage {
            content: content.clone(),
        })
    }) {
        if !matches!(event, Event::UserMessage { .. }) {
            log.events += 1;
            prop_assert!(log.events <= bound, "more than {bound} events in one turn");
        }
        // Now and then, something stale arrives first; it must change nothing.
        if tape.next(8) == 0 {
            let stray = Event::AgentResponded {
                call: CallId(999_999),
                agent: handle("a"),
                content: "@b? late".into(),
            };
            let actions = floor.handle(stray.clone());
            prop_assert_eq!(actions.len(), 1);
            prop_assert!(matches!(actions[0], Action::Record(_)));
            fed.push(stray);
            received.push(actions);
        }
        match &event {
            Event::AgentResponded { agent, content, .. } if !is_pass(content) => {
                log.last_author = Some(agent.clone());
            }
            Event::AgentResponded { agent, .. } | Event::AgentPassed { agent, .. } => {
                log.passed.insert(agent.clone());
            }
            _ => {}
        }
        let actions = floor.handle(event.clone());
        fed.push(event);
        for action in &actions {
            let json = serde_json::to_string(action).unwrap();
            prop_assert_eq!(&serde_json::from_str::<Action>(&json).unwrap(), action);
            match action {
                Action::TurnStarted { .. } => {
                    started += 1;
                    log = TurnLog::default();
                }
                Action::PollShouldWake {
                    round, candidates, ..
                } => {
                    log.polls += 1;
                    prop_assert!(log.polls <= limits.max_hops + 1);
                    prop_assert!(!candidates.is_empty());
                    let order: Vec<_> = roster
                        .iter()
                        .map(|s| &s.handle)
                        .filter(|h| candidates.contains(h))
                        .collect();
                    prop_assert_eq!(order, candidates.iter().collect::<Vec<_>>());
                    for candidate in candidates {
                        prop_assert!(!log.passed.contains(candidate), "{candidate} passed");
                        prop_assert!(log.last_author.as_ref() != Some(candidate));
                        let spec = roster.iter().find(|s| s.handle == *candidate).unwrap();
                        prop_assert_eq!(spec.activation, Activation::Mention);
                    }
                    inbox.push_back(Event::ShouldWakeAnswers {
                        round: *round,
                        answers: tape.answers(candidates),
                    });
                }
                Action::Respond { call, agent, .. } => {
                    log.responds += 1;
                    prop_assert!(log.responds <= limits.max_hops);
                    prop_assert!(roster.iter().any(|s| s.handle == *agent));
                    if let Some(previous) = &log.last_author
                        && previous != agent
                    {
                        let pair = if previous < agent {
                            (previous.clone(), agent.clone())
                        } else {
                            (agent.clone(), previous.clone())
                        };
                        let count = log.exchanges.entry(pair).or_default();
                        *count += 1;
                        prop_assert!(*count <= limits.max_pair_exchanges);
                    }
                    inbox.push_back(tape.reply(*call, agent.clone()));
                }
                Action::TurnEnded { hops, .. } => {
                    ended += 1;
                    prop_assert_eq!(*hops, log.responds);
                }
                Action::UserMessageRefused { .. } => refused += 1,
                Action::UserMessageQueued { position } => {
                    prop_assert!(*position <= limits.max_queued_messages);
                }
                Action::Record(_) => {}
            }
        }
        received.push(actions);
    }
    prop_assert!(floor.is_idle());
    prop_assert_eq!(started, ended);
    prop_assert_eq!(started + refused, users.len());
    if !burst {
        prop_assert_eq!(refused, 0);
    }
    Ok((fed, received))
}

fn users() -> impl Strategy<Value = Vec<String>> {
    let word = proptest::sample::select(WORDS.to_vec());
    let message = proptest::collection::vec(word, 0..4).prop_map(|words| words.join(" "));
    proptest::collection::vec(message, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_user_message_ends_within_the_limits(
        (roster, limits) in setup(),
        users in users(),
        burst in any::<bool>(),
        tape in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let (fed, received) = drive(&roster, &limits, &users, burst, tape)?;
        // Determinism: the same events give the same actions.
        let mut replay = Controller::new(roster, limits).unwrap();
        for (event, actions) in fed.into_iter().zip(received) {
            prop_assert_eq!(replay.handle(event), actions);
        }
    }
}

#[test]
fn stale_round_ids_are_never_reused() {
    let mut floor =
        Controller::new(vec![AgentSpec::mention(handle("a"))], Limits::default()).unwrap();
    let mut rounds = BTreeSet::new();
    for _ in 0..5 {
        for action in floor.handle(Event::UserMessage {
            content: "hi".into(),
        }) {
            if let Action::PollShouldWake { round, .. } = action {
                assert!(rounds.insert(round));
                floor.handle(Event::ShouldWakeAnswers {
                    round: RoundId(round.0),
                    answers: vec![],
                });
            }
        }
    }
    assert_eq!(rounds.len(), 5);
}
