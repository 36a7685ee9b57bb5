//! The controller's edges: stale and stray events, construction errors, the JSON shape of
//! events and actions, and replay.

use crate::common::{handle, roster, show};
use runtime::{
    Action, CallId, Controller, CyclePolicy, Error, Event, EventKind, Limits, Note, PollAnswer,
    RoundId, TurnEndReason, WakeAnswer,
};

fn controller(spec: &str) -> Controller {
    Controller::new(roster(spec), Limits::default()).unwrap()
}

fn user(content: &str) -> Event {
    Event::UserMessage {
        content: content.into(),
    }
}

fn respond_call(actions: &[Action]) -> CallId {
    actions
        .iter()
        .find_map(|action| match action {
            Action::Respond { call, .. } => Some(*call),
            _ => None,
        })
        .expect("a respond action")
}

fn poll_round(actions: &[Action]) -> RoundId {
    actions
        .iter()
        .find_map(|action| match action {
            Action::PollShouldWake { round, .. } => Some(*round),
            _ => None,
        })
        .expect("a poll action")
}

fn lines(actions: &[Action]) -> Vec<String> {
    actions.iter().map(show).collect()
}

fn stale(event: EventKind) -> Vec<String> {
    lines(&[Action::Record(Note::StaleEvent { event })])
}

#[test]
fn events_outside_a_turn_are_stale() {
    let mut floor = controller("a");
    let actions = floor.handle(Event::AgentResponded {
        call: CallId(1),
        agent: handle("a"),
        content: "hi".into(),
    });
    assert_eq!(lines(&actions), stale(EventKind::AgentResponded));
    let actions = floor.handle(Event::ShouldWakeAnswers {
        round: RoundId(1),
        answers: vec![],
    });
    assert_eq!(lines(&actions), stale(EventKind::ShouldWakeAnswers));
    assert!(floor.is_idle());
}

#[test]
fn response_to_another_call_or_from_another_agent_is_stale() {
    let mut floor = controller("a b");
    let call = respond_call(&floor.handle(user("@a? go")));
    let wrong_call = floor.handle(Event::AgentResponded {
        call: CallId(call.0 + 1),
        agent: handle("a"),
        content: "done".into(),
    });
    assert_eq!(lines(&wrong_call), stale(EventKind::AgentResponded));
    let wrong_agent = floor.handle(Event::AgentFailed {
        call,
        agent: handle("b"),
        error: "boom".into(),
    });
    assert_eq!(lines(&wrong_agent), stale(EventKind::AgentFailed));
    assert_eq!(floor.call_stack(), vec![handle("a")]);

    let right = floor.handle(Event::AgentResponded {
        call,
        agent: handle("a"),
        content: "done".into(),
    });
    assert_eq!(lines(&right), ["end returned_to_user a"]);
    let again = floor.handle(Event::AgentPassed {
        call,
        agent: handle("a"),
        reason: None,
    });
    assert_eq!(lines(&again), stale(EventKind::AgentPassed));
}

#[test]
fn answers_to_an_old_round_are_stale() {
    let mut floor = controller("a b");
    let first = poll_round(&floor.handle(user("hi")));
    let answers = vec![PollAnswer::new(
        handle("a"),
        WakeAnswer::Yes { reason: None },
    )];
    let call = respond_call(&floor.handle(Event::ShouldWakeAnswers {
        round: first,
        answers: answers.clone(),
    }));
    let second = poll_round(&floor.handle(Event::AgentResponded {
        call,
        agent: handle("a"),
        content: "hello".into(),
    }));
    assert_ne!(first, second);
    // A duplicate delivery of the first round's answers must not wake `a` again.
    let replayed = floor.handle(Event::ShouldWakeAnswers {
        round: first,
        answers,
    });
    assert_eq!(lines(&replayed), stale(EventKind::ShouldWakeAnswers));
    let ended = floor.handle(Event::ShouldWakeAnswers {
        round: second,
        answers: vec![PollAnswer::new(handle("b"), WakeAnswer::No)],
    });
    assert_eq!(lines(&ended), ["end no_one_woke"]);
}

#[test]
fn a_call_is_not_answered_by_should_wake_answers() {
    let mut floor = controller("a");
    let call = respond_call(&floor.handle(user("@a? go")));
    let actions = floor.handle(Event::ShouldWakeAnswers {
        round: RoundId(call.0),
        answers: vec![PollAnswer::new(
            handle("a"),
            WakeAnswer::Yes { reason: None },
        )],
    });
    assert_eq!(lines(&actions), stale(EventKind::ShouldWakeAnswers));
    assert_eq!(floor.call_stack(), vec![handle("a")]);
}

#[test]
fn yes_from_a_non_candidate_wakes_no_one() {
    let mut floor = controller("a b");
    let round = poll_round(&floor.handle(user("hi")));
    let actions = floor.handle(Event::ShouldWakeAnswers {
        round,
        answers: vec![
            PollAnswer::new(handle("ghost"), WakeAnswer::Yes { reason: None }),
            PollAnswer::new(handle("a"), WakeAnswer::No),
            PollAnswer::new(handle("b"), WakeAnswer::No),
        ],
    });
    assert_eq!(lines(&actions), ["end no_one_woke"]);
}

#[test]
fn first_answer_of_a_candidate_counts() {
    let mut floor = controller("a");
    let round = poll_round(&floor.handle(user("hi")));
    let actions = floor.handle(Event::ShouldWakeAnswers {
        round,
        answers: vec![
            PollAnswer::new(handle("a"), WakeAnswer::No),
            PollAnswer::new(handle("a"), WakeAnswer::Yes { reason: None }),
        ],
    });
    assert_eq!(lines(&actions), ["end no_one_woke"]);
}

#[test]
fn state_queries_follow_the_turn() {
    let mut floor = controller("a b");
    assert!(floor.is_idle());
    assert_eq!(floor.current_turn(), None);
    let call = respond_call(&floor.handle(user("@a? go")));
    assert_eq!(floor.current_turn().map(|t| t.0), Some(1));
    floor.handle(user("later"));
    assert_eq!(floor.queued_messages(), 1);
    let call = respond_call(&floor.handle(Event::AgentResponded {
        call,
        agent: handle("a"),
        content: "@b? you too".into(),
    }));
    assert_eq!(floor.call_stack(), vec![handle("a"), handle("b")]);
    let actions = floor.handle(Event::AgentFailed {
        call,
        agent: handle("b"),
        error: "down".into(),
    });
    assert_eq!(
        lines(&actions),
        ["end agent_error b: down", "start later", "poll a b"]
    );
    assert_eq!(floor.current_turn().map(|t| t.0), Some(2));
    assert_eq!(floor.queued_messages(), 0);
    assert!(floor.call_stack().is_empty());
}

#[test]
fn construction_refuses_bad_rosters_and_limits() {
    assert!(matches!(
        Controller::new(roster("code Code"), Limits::default()),
        Err(Error::DuplicateAgent(h)) if h == handle("code")
    ));
    assert!(matches!(
        Controller::new(roster("a User"), Limits::default()),
        Err(Error::ReservedHandle(_))
    ));
    let no_hops = Limits {
        max_hops: 0,
        ..Limits::default()
    };
    assert!(matches!(
        Controller::new(roster("a"), no_hops),
        Err(Error::InvalidLimit { name: "max_hops" })
    ));
    let no_pairs = Limits {
        max_pair_exchanges: 0,
        ..Limits::default()
    };
    assert!(matches!(
        Controller::new(roster("a"), no_pairs),
        Err(Error::InvalidLimit {
            name: "max_pair_exchanges"
        })
    ));
}

#[test]
fn limits_have_sane_defaults_and_read_partially() {
    let limits: Limits =
        serde_json::from_str(r#"{"max_hops": 3, "on_cycle": "end_turn"}"#).unwrap();
    assert_eq!(limits.max_hops, 3);
    assert_eq!(limits.on_cycle, CyclePolicy::EndTurn);
    assert_eq!(
        limits.max_pair_exchanges,
        Limits::default().max_pair_exchanges
    );
    let defaults = Limits::default();
    assert_eq!(
        (
            defaults.max_hops,
            defaults.max_pair_exchanges,
            defaults.max_queued_messages
        ),
        (16, 6, 8)
    );
    assert!(serde_json::from_str::<Limits>(r#"{"max_hop": 3}"#).is_err());
}

#[test]
fn actions_and_events_have_a_stable_json_shape() {
    let mut floor = controller("code");
    let actions = floor.handle(user("@code? hi"));
    let json = serde_json::to_value(&actions).unwrap();
    assert_eq!(
        json,
        serde_json::json!([
            {"action": "turn_started", "turn": 1, "content": "@code? hi"},
            {
                "action": "respond",
                "call": 1,
                "agent": "@code",
                "wake_reason": {"kind": "mentioned_with_question"},
                "initiator": "@user"
            }
        ])
    );
    let actions = floor.handle(Event::AgentPassed {
        call: CallId(1),
        agent: handle("code"),
        reason: Some("busy".into()),
    });
    assert_eq!(
        serde_json::to_value(&actions).unwrap(),
        serde_json::json!([
            {"action": "record", "note": "passed", "agent": "@code", "reason": "busy"},
            {"action": "turn_ended", "turn": 1, "reason": {"reason": "no_one_woke"}, "hops": 1}
        ])
    );
    let event: Event = serde_json::from_value(serde_json::json!({
        "event": "should_wake_answers",
        "round": 7,
        "answers": [{"agent": "code", "answer": {"answer": "yes", "reason": "mine"}}]
    }))
    .unwrap();
    assert_eq!(
        event,
        Event::ShouldWakeAnswers {
            round: RoundId(7),
            answers: vec![PollAnswer::new(
                handle("code"),
                WakeAnswer::Yes {
                    reason: Some("mine".into())
                }
            )],
        }
    );
}

#[test]
fn every_action_round_trips_through_json() {
    let reasons = [
        TurnEndReason::ReturnedToUser { from: handle("a") },
        TurnEndReason::WaitingForUser {
            asked_by: handle("a"),
        },
        TurnEndReason::NoOneWoke,
        TurnEndReason::HopLimit { limit: 3 },
        TurnEndReason::PairLimit {
            a: handle("a"),
            b: handle("b"),
            limit: 2,
        },
        TurnEndReason::CycleRefused {
            by: handle("b"),
            target: handle("a"),
        },
        TurnEndReason::AgentError {
            agent: handle("a"),
            error: "x".into(),
        },
    ];
    for reason in reasons {
        assert!(!reason.to_string().is_empty());
        let action = Action::TurnEnded {
            turn: runtime::TurnId(1),
            reason,
            hops: 2,
        };
        let text = serde_json::to_string(&action).unwrap();
        assert_eq!(serde_json::from_str::<Action>(&text).unwrap(), action);
    }
}

#[test]
fn guard_reasons_say_they_are_guards() {
    assert!(TurnEndReason::HopLimit { limit: 1 }.is_guard());
    assert!(!TurnEndReason::NoOneWoke.is_guard());
    assert_eq!(
        TurnEndReason::PairLimit {
            a: handle("a"),
            b: handle("b"),
            limit: 6
        }
        .to_string(),
        "stopped after 6 exchanges between @a and @b"
    );
}

#[test]
fn replaying_the_events_gives_the_same_actions() {
    let script = [
        user("@lead? plan"),
        Event::AgentResponded {
            call: CallId(1),
            agent: handle("lead"),
            content: "@a? @b? go".into(),
        },
        user("meanwhile"),
        Event::AgentPassed {
            call: CallId(2),
            agent: handle("a"),
            reason: None,
        },
        Event::AgentResponded {
            call: CallId(3),
            agent: handle("b"),
            content: "done".into(),
        },
        Event::AgentResponded {
            call: CallId(4),
            agent: handle("lead"),
            content: "summary".into(),
        },
        Event::ShouldWakeAnswers {
            round: RoundId(5),
            answers: vec![],
        },
    ];
    let run = || {
        let mut floor = controller("lead a b");
        script
            .iter()
            .map(|event| floor.handle(event.clone()))
            .collect::<Vec<_>>()
    };
    let first = run();
    assert_eq!(first, run());
    let flat: Vec<String> = first.iter().flat_map(|a| lines(a)).collect();
    assert_eq!(
        flat,
        [
            "start @lead? plan",
            "call lead mentioned <- user",
            "call a mentioned <- lead",
            "queued 1",
            "note pass a",
            "call b mentioned <- lead",
            "call lead returned(b) <- user",
            "end returned_to_user lead",
            "start meanwhile",
            "poll lead a b",
            "note unanswered lead missing",
            "note unanswered a missing",
            "note unanswered b missing",
            "end no_one_woke",
        ]
    );
}
