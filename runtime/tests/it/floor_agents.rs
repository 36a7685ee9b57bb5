//! The floor driver with real agent processes on loopback.

use std::time::{Duration, Instant};

use crate::support::{agent, events_until, handle, settings};
use runtime::floor::{CallOutcome, Floor, FloorEvent, FloorSettings};
use runtime::transcript::{self, Entry, ReplayError};
use runtime::{Note, TurnEndReason, Unanswered, WakeAnswer};

fn senders(summary: &runtime::floor::TurnSummary) -> Vec<String> {
    summary.messages.iter().map(|m| m.from.clone()).collect()
}

#[tokio::test]
async fn a_delegation_chain_returns_to_the_initiator() {
    let floor = Floor::open(
        "chain",
        None,
        vec![
            agent("data", &["--behaviour", "delegate", "--target", "code"]).await,
            agent("code", &["--behaviour", "echo"]).await,
        ],
        settings(),
    )
    .unwrap();
    let summary = floor
        .post_and_wait("@data? analyze sales.csv")
        .await
        .unwrap();
    assert_eq!(senders(&summary), ["@user", "@data", "@code", "@data"]);
    assert_eq!(
        summary.messages[1].content,
        "@code? please handle: (at)data? analyze sales.csv"
    );
    assert_eq!(
        summary.messages[2].content,
        "code heard: (at)code? please handle: (at)data? analyze sales.csv"
    );
    assert!(
        summary.messages[3]
            .content
            .starts_with("data reports: code heard:")
    );
    assert_eq!(
        summary.reason,
        TurnEndReason::ReturnedToUser {
            from: handle("data")
        }
    );
    assert_eq!(summary.hops, 3);
    assert!(!summary.cancelled);
    floor.close().await.unwrap();
}

#[tokio::test]
async fn an_agent_that_never_answers_is_late_and_then_timed_out() {
    let mut settings = settings();
    settings.should_wake_deadline = Duration::from_millis(300);
    settings.respond_deadline = Duration::from_millis(300);
    let floor = Floor::open(
        "never",
        None,
        vec![
            agent("mute", &["--behaviour", "never-answer"]).await,
            agent("helper", &["--behaviour", "echo", "--wake"]).await,
        ],
        settings,
    )
    .unwrap();
    let mut events = floor.subscribe();
    let started = Instant::now();
    let summary = floor.post_and_wait("can someone help?").await.unwrap();
    // The never-answering agent would hold the floor for an hour; the deadline stops that.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(senders(&summary), ["@user", "@helper"]);
    // After @helper answered, only @mute was left to poll, and it was late again.
    assert_eq!(summary.reason, TurnEndReason::NoOneWoke);
    let seen = events_until(&mut events, 100, |e| {
        matches!(e, FloorEvent::TurnEnded { .. })
    })
    .await;
    let late: Vec<_> = seen
        .iter()
        .filter(|e| {
            matches!(e, FloorEvent::Note { note: Note::ShouldWakeUnanswered { agent, why: Unanswered::Late } } if *agent == handle("mute"))
        })
        .collect();
    assert_eq!(late.len(), 2, "{seen:#?}");

    // Requested directly, it misses the respond deadline and the turn ends with an error.
    let started = Instant::now();
    let summary = floor.post_and_wait("@mute? are you there").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    match &summary.reason {
        TurnEndReason::AgentError { agent, error } => {
            assert_eq!(*agent, handle("mute"));
            assert!(error.contains("no response within"), "{error}");
        }
        other => panic!("unexpected end {other:?}"),
    }
    floor.close().await.unwrap();
}

#[tokio::test]
async fn should_wake_is_asked_concurrently_and_ties_go_to_blueprint_order() {
    let mut settings = settings();
    settings.should_wake_deadline = Duration::from_secs(5);
    let delays = ["500", "500", "500", "500", "500", "50"];
    let mut agents = Vec::new();
    for (i, delay) in delays.iter().enumerate() {
        let name = format!("slow{i}");
        let mut args = vec!["--behaviour", "slow-should-wake", "--delay-ms", delay];
        // The third and the last want to speak; the last answers first.
        if i == 2 || i == 5 {
            args.push("--wake");
        }
        agents.push(agent(&name, &args).await);
    }
    let floor = Floor::open("slow", None, agents, settings).unwrap();
    let mut events = floor.subscribe();
    let receipt = floor.post("who wants this?").await.unwrap();
    assert_eq!(receipt.next_agent, Some(handle("slow2")));
    let seen = events_until(&mut events, 20, |e| {
        matches!(e, FloorEvent::ShouldWake { .. })
    })
    .await;
    let Some(FloorEvent::ShouldWake {
        answers,
        elapsed_ms,
        ..
    }) = seen.last()
    else {
        panic!("no round: {seen:#?}");
    };
    assert_eq!(answers.len(), 6);
    assert!(
        answers
            .iter()
            .all(|a| !matches!(a.answer, WakeAnswer::Late | WakeAnswer::Failed { .. })),
        "{answers:#?}"
    );
    // Concurrency keeps the round near the slowest delay (500 ms), not the sum (2.55 s asked one
    // after the other). A driver that asked only two at a time could overlap at most two of the
    // five 500 ms sleeps, so it would need at least 3 × 500 = 1500 ms. The bound sits between:
    // 1200 ms leaves 700 ms over the slowest delay for a loaded 2-core CI machine (the agents are
    // already running, so the round is six loopback requests) and still fails at 1500 ms.
    assert!(*elapsed_ms >= 500.0, "the round took {elapsed_ms} ms");
    assert!(*elapsed_ms < 1200.0, "the round took {elapsed_ms} ms");
    floor.close().await.unwrap();
}

#[tokio::test]
async fn an_agent_that_crashes_mid_respond_ends_the_turn_and_the_floor_goes_on() {
    let floor = Floor::open(
        "crash",
        None,
        vec![
            agent("crash", &["--behaviour", "crash-mid-respond"]).await,
            agent("echo", &["--behaviour", "echo"]).await,
        ],
        settings(),
    )
    .unwrap();
    let mut events = floor.subscribe();
    let summary = floor.post_and_wait("@crash? tell me").await.unwrap();
    match &summary.reason {
        TurnEndReason::AgentError { agent, error } => {
            assert_eq!(*agent, handle("crash"));
            assert!(
                error.contains("stream ended") || error.contains("reach"),
                "{error}"
            );
        }
        other => panic!("unexpected end {other:?}"),
    }
    let seen = events_until(&mut events, 50, |e| {
        matches!(e, FloorEvent::TurnEnded { .. })
    })
    .await;
    assert!(
        seen.iter().any(
            |e| matches!(e, FloorEvent::Delta { content, .. } if content == "I was about to say")
        ),
        "{seen:#?}"
    );
    assert!(seen.iter().any(|e| matches!(
        e,
        FloorEvent::CallFinished {
            outcome: CallOutcome::Failed { .. },
            ..
        }
    )));

    let summary = floor.post_and_wait("@echo? still there?").await.unwrap();
    assert_eq!(senders(&summary), ["@user", "@echo"]);
    floor.close().await.unwrap();
}

#[tokio::test]
async fn a_streamed_response_arrives_in_pieces_and_is_stored_whole() {
    let floor = Floor::open(
        "stream",
        None,
        vec![agent("streamer", &["--behaviour", "stream", "--delay-ms", "30"]).await],
        settings(),
    )
    .unwrap();
    let mut events = floor.subscribe();
    let summary = floor.post_and_wait("@streamer? go").await.unwrap();
    assert_eq!(summary.messages[1].content, "one two three");
    let seen = events_until(&mut events, 50, |e| {
        matches!(e, FloorEvent::TurnEnded { .. })
    })
    .await;
    let pieces: Vec<&str> = seen
        .iter()
        .filter_map(|e| match e {
            FloorEvent::Delta { content, agent, .. } if *agent == handle("streamer") => {
                Some(content.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(pieces, ["one ", "two ", "three"]);
    let delta_at = seen
        .iter()
        .position(|e| matches!(e, FloorEvent::Delta { .. }))
        .unwrap();
    let message_at = seen
        .iter()
        .position(|e| matches!(e, FloorEvent::Message { message } if message.from == "@streamer"))
        .unwrap();
    assert!(
        delta_at < message_at,
        "pieces come before the stored message"
    );
    floor.close().await.unwrap();
}

#[tokio::test]
async fn closing_the_floor_stops_its_process_agents() {
    let member = agent("echo", &[]).await;
    let endpoint = member.endpoint.clone().unwrap();
    let floor = Floor::open("close", None, vec![member], settings()).unwrap();
    let client = reqwest::Client::new();
    assert!(
        client
            .get(format!("{endpoint}/ofc/info"))
            .send()
            .await
            .is_ok()
    );
    floor.close().await.unwrap();
    let after = client
        .get(format!("{endpoint}/ofc/info"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(
        after.is_err(),
        "the agent still answers after the floor closed"
    );
    assert!(floor.post("hello?").await.is_err());
}

#[tokio::test]
async fn a_turn_can_be_cancelled() {
    let mut settings = settings();
    settings.respond_deadline = Duration::from_secs(60);
    let floor = Floor::open(
        "cancel",
        None,
        vec![agent("mute", &["--behaviour", "never-answer"]).await],
        settings,
    )
    .unwrap();
    let mut events = floor.subscribe();
    let receipt = floor.post("@mute? say something").await.unwrap();
    assert_eq!(receipt.next_agent, Some(handle("mute")));
    assert!(floor.cancel_turn().await.unwrap());
    let seen = events_until(&mut events, 50, |e| {
        matches!(e, FloorEvent::TurnEnded { .. })
    })
    .await;
    match seen.last() {
        Some(FloorEvent::TurnEnded {
            cancelled,
            reason: TurnEndReason::AgentError { error, .. },
            ..
        }) => {
            assert!(*cancelled);
            assert_eq!(error, "the turn was cancelled");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(!floor.cancel_turn().await.unwrap(), "nothing runs any more");
    floor.close().await.unwrap();
}

#[tokio::test]
async fn a_turn_can_be_cancelled_during_a_should_wake_round() {
    let mut settings = settings();
    settings.should_wake_deadline = Duration::from_secs(60);
    let floor = Floor::open(
        "cancel-round",
        None,
        vec![agent("mute", &["--behaviour", "never-answer"]).await],
        settings,
    )
    .unwrap();
    let mut events = floor.subscribe();
    let poster = floor.clone();
    let post = tokio::spawn(async move { poster.post("anyone?").await });
    events_until(&mut events, 10, |e| matches!(e, FloorEvent::Polling { .. })).await;
    assert!(floor.cancel_turn().await.unwrap());
    let receipt = tokio::time::timeout(Duration::from_secs(10), post)
        .await
        .expect("the post was not answered")
        .unwrap()
        .unwrap();
    assert_eq!(receipt.next_agent, None);
    let seen = events_until(&mut events, 50, |e| {
        matches!(e, FloorEvent::TurnEnded { .. })
    })
    .await;
    assert!(
        matches!(
            seen.last(),
            Some(FloorEvent::TurnEnded {
                cancelled: true,
                reason: TurnEndReason::NoOneWoke,
                ..
            })
        ),
        "{seen:#?}"
    );
    assert!(seen.iter().any(|e| matches!(
        e,
        FloorEvent::Note { note: Note::ShouldWakeUnanswered { why: Unanswered::Failed { error }, .. } }
            if error == "the turn was cancelled"
    )));
    floor.close().await.unwrap();
}

#[tokio::test]
async fn one_turn_at_a_time_later_messages_wait_their_turn() {
    let floor = Floor::open(
        "queue",
        None,
        vec![agent("streamer", &["--behaviour", "stream", "--delay-ms", "100"]).await],
        settings(),
    )
    .unwrap();
    let mut events = floor.subscribe();
    let first = floor.post("@streamer? one").await.unwrap();
    assert_eq!(first.queued, None);
    let second = floor.post("@streamer? two").await.unwrap();
    assert_eq!(second.queued, Some(1));
    let mut ended = 0;
    let seen = events_until(&mut events, 200, |e| {
        if matches!(e, FloorEvent::TurnEnded { .. }) {
            ended += 1;
        }
        ended == 2
    })
    .await;
    let turns: Vec<String> = seen
        .iter()
        .filter_map(|e| match e {
            FloorEvent::TurnStarted { turn, .. } => Some(format!("start {turn}")),
            FloorEvent::TurnEnded { turn, .. } => Some(format!("end {turn}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        turns,
        ["start turn-1", "end turn-1", "start turn-2", "end turn-2"]
    );
    floor.close().await.unwrap();
}

#[tokio::test]
async fn the_transcript_replays_and_a_changed_transcript_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let settings = FloorSettings {
        transcript_dir: Some(dir.path().to_owned()),
        ..settings()
    };
    let floor = Floor::open(
        "replayed",
        None,
        vec![
            agent("data", &["--behaviour", "delegate", "--target", "code"]).await,
            agent("code", &["--behaviour", "echo", "--wake"]).await,
            agent("quiet", &["--behaviour", "pass"]).await,
        ],
        settings,
    )
    .unwrap();
    floor.post_and_wait("@data? analyze").await.unwrap();
    floor.post_and_wait("@quiet? anything?").await.unwrap();
    floor.post_and_wait("open question").await.unwrap();
    floor.close().await.unwrap();

    let path = dir.path().join("replayed.jsonl");
    let lines = transcript::read(&path).unwrap();
    let report = transcript::replay(&lines).unwrap();
    assert_eq!(report.turns, 3);
    assert!(report.actions > 10, "{report:?}");
    assert!(
        lines
            .iter()
            .any(|l| matches!(&l.entry, Entry::ShouldWake { .. }))
    );
    assert!(lines.iter().any(|l| matches!(
        &l.entry,
        Entry::Call {
            outcome: CallOutcome::Passed { .. },
            ..
        }
    )));
    assert!(
        lines
            .iter()
            .any(|l| matches!(&l.entry, Entry::Message { .. }))
    );

    // Make @code's answer a request for @data: the controller now decides differently.
    let mut changed = lines.clone();
    let target = changed
        .iter_mut()
        .find_map(|l| match &mut l.entry {
            Entry::Event {
                event: runtime::Event::AgentResponded { agent, content, .. },
            } if *agent == handle("code") => Some(content),
            _ => None,
        })
        .unwrap();
    *target = "@quiet? over to you".to_owned();
    assert!(matches!(
        transcript::replay(&changed),
        Err(ReplayError::Diverged { .. })
    ));
}

#[tokio::test]
async fn a_message_s_text_is_written_to_the_transcript_once() {
    let dir = tempfile::tempdir().unwrap();
    let settings = FloorSettings {
        transcript_dir: Some(dir.path().to_owned()),
        ..settings()
    };
    let floor = Floor::open(
        "large",
        None,
        vec![agent("quiet", &["--behaviour", "pass"]).await],
        settings,
    )
    .unwrap();
    let large = "x".repeat(200 * 1024);
    floor.post_and_wait(large.clone()).await.unwrap();
    floor.close().await.unwrap();
    let path = dir.path().join("large.jsonl");
    let size = std::fs::metadata(&path).unwrap().len();
    // The user's text is in a `message`, a `user_message` event and a `turn_started` action:
    // written once, referred to twice.
    assert!(
        size < 2 * large.len() as u64,
        "the transcript is {size} bytes for one message of {} bytes",
        large.len()
    );

    // It reads back whole, and replays.
    let lines = transcript::read(&path).unwrap();
    transcript::replay(&lines).unwrap();
    let texts = |pick: fn(&Entry) -> Option<&String>| {
        lines
            .iter()
            .filter_map(|l| pick(&l.entry))
            .filter(|t| t.len() >= large.len())
            .count()
    };
    assert_eq!(
        texts(|e| match e {
            Entry::Message { message } => Some(&message.content),
            _ => None,
        }),
        1
    );
    assert_eq!(
        texts(|e| match e {
            Entry::Event {
                event: runtime::Event::UserMessage { content },
            } => Some(content),
            _ => None,
        }),
        1
    );
    assert_eq!(
        texts(|e| match e {
            Entry::Action {
                action: runtime::Action::TurnStarted { content, .. },
            } => Some(content),
            _ => None,
        }),
        1
    );
}

#[tokio::test]
async fn a_process_that_exits_during_startup_is_reported() {
    // Without `--name` the test agent refuses to start.
    let command = runtime::agent::ProcessCommand::new(env!("CARGO_BIN_EXE_ofc-test-agent"));
    let error =
        runtime::agent::ProcessAgent::spawn(&command, runtime::agent::HttpAgent::default_client())
            .await
            .unwrap_err();
    assert!(
        error.to_string().contains("exited during startup"),
        "{error}"
    );
    let missing = runtime::agent::ProcessCommand::new("/nonexistent/agent");
    let error =
        runtime::agent::ProcessAgent::spawn(&missing, runtime::agent::HttpAgent::default_client())
            .await
            .unwrap_err();
    assert!(error.to_string().contains("could not start"), "{error}");
}

#[tokio::test]
async fn clear_forgets_the_conversation_between_turns_only() {
    let floor = Floor::open(
        "clear",
        None,
        vec![
            agent("echo", &[]).await,
            agent("mute", &["--behaviour", "never-answer"]).await,
        ],
        settings(),
    )
    .unwrap();
    let summary = floor.post_and_wait("@echo? one").await.unwrap();
    assert_eq!(summary.messages.len(), 2);
    let mut events = floor.subscribe();
    assert_eq!(floor.clear().await.unwrap(), Some(2));
    let seen = events_until(&mut events, 10, |e| matches!(e, FloorEvent::Cleared { .. })).await;
    assert_eq!(seen.last(), Some(&FloorEvent::Cleared { forgotten: 2 }));
    assert!(floor.messages(None, 100).await.unwrap().is_empty());
    // The next respond call carries only what follows; ids keep counting.
    let summary = floor.post_and_wait("@echo? two").await.unwrap();
    assert_eq!(summary.messages[0].id, "msg-3");
    assert_eq!(floor.messages(None, 100).await.unwrap().len(), 2);
    // Refused while a turn runs.
    floor.post("@mute? three").await.unwrap();
    assert_eq!(floor.clear().await.unwrap(), None);
    assert_eq!(floor.messages(None, 100).await.unwrap().len(), 3);
    floor.close().await.unwrap();
}

/// Stopping a process agent stops its whole process group: here a shell that started a
/// background `sleep` before it became the agent.
#[cfg(unix)]
#[tokio::test]
async fn stopping_a_process_agent_stops_its_process_group() {
    use std::sync::{Arc, Mutex};
    let marker = format!("{}", 7_000_000 + std::process::id());
    let mut command = runtime::agent::ProcessCommand::new("/bin/sh").args([
        "-c".to_owned(),
        format!(
            "sleep {marker} & exec '{}' --name grouped",
            env!("CARGO_BIN_EXE_ofc-test-agent")
        ),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook_seen = Arc::clone(&seen);
    command.on_spawn = Some(runtime::agent::SpawnHook(Arc::new(move |pgid| {
        hook_seen.lock().unwrap().push(pgid)
    })));
    let agent =
        runtime::agent::ProcessAgent::spawn(&command, runtime::agent::HttpAgent::default_client())
            .await
            .unwrap();
    let pid = agent.pid().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![pid], "the hook saw the group");
    assert!(runtime::agent::group_alive(pid));
    let sleeping = || {
        let out = std::process::Command::new("ps")
            .args(["-e", "-o", "stat=,args="])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.contains(&format!("sleep {marker}")) && !l.trim_start().starts_with('Z'))
    };
    assert!(sleeping(), "the background child runs");
    agent.stop().await;
    let start = Instant::now();
    while sleeping() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the group's child outlived the agent"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // `group_alive` is not asserted false: the killed `sleep` may stay a zombie of a pid 1 that
    // does not reap (containers), and a zombie still counts as a group member to kill(2).
}

/// An agent that, asked during a turn, brings another onto its floor (as `@floor-manager` does
/// after the user approves): it hands the new agent to the floor and answers at once.
#[derive(Debug)]
struct Recruiter {
    floor: std::sync::OnceLock<runtime::floor::WeakFloor>,
    recruit: tokio::sync::Mutex<Option<runtime::floor::FloorAgent>>,
    joined:
        tokio::sync::Mutex<Option<tokio::task::JoinHandle<Result<(), runtime::floor::FloorError>>>>,
}

#[async_trait::async_trait]
impl runtime::agent::Agent for Recruiter {
    async fn info(&self) -> Result<index_schema::wire::AgentInfo, runtime::agent::AgentError> {
        Ok(index_schema::wire::AgentInfo::default())
    }
    async fn should_wake(
        &self,
        _: &index_schema::wire::ShouldWakeRequest,
    ) -> Result<index_schema::wire::ShouldWakeResponse, runtime::agent::AgentError> {
        Ok(index_schema::wire::ShouldWakeResponse::sleep())
    }
    async fn respond(
        &self,
        _: &index_schema::wire::RespondRequest,
        _: Option<runtime::agent::Deltas>,
    ) -> Result<index_schema::wire::RespondResponse, runtime::agent::AgentError> {
        let floor = self.floor.get().unwrap().upgrade().unwrap();
        let recruit = self.recruit.lock().await.take().unwrap();
        let joining = tokio::spawn(async move { floor.add_agent_when_idle(recruit).await });
        *self.joined.lock().await = Some(joining);
        Ok(index_schema::wire::RespondResponse::reply(
            "@user @code joins when this turn ends",
        ))
    }
}

#[tokio::test]
async fn an_agent_joins_a_running_floor_when_the_turn_that_brought_it_ends() {
    let recruiter = std::sync::Arc::new(Recruiter {
        floor: std::sync::OnceLock::new(),
        recruit: tokio::sync::Mutex::new(Some(agent("code", &["--behaviour", "echo"]).await)),
        joined: tokio::sync::Mutex::new(None),
    });
    let floor = Floor::open(
        "join",
        None,
        vec![runtime::floor::FloorAgent::new(
            handle("manager"),
            recruiter.clone(),
        )],
        settings(),
    )
    .unwrap();
    recruiter.floor.set(floor.downgrade()).unwrap();
    let mut events = floor.subscribe();
    // Before: @code is not on the floor, so a mention of it wakes no one.
    let summary = floor.post_and_wait("@manager? bring @code").await.unwrap();
    assert_eq!(senders(&summary), ["@user", "@manager"]);
    let joining = recruiter.joined.lock().await.take().unwrap();
    tokio::time::timeout(Duration::from_secs(20), joining)
        .await
        .expect("the agent never joined")
        .unwrap()
        .unwrap();
    let seen = events_until(&mut events, 100, |e| matches!(e, FloorEvent::Roster { .. })).await;
    let Some(FloorEvent::Roster { agents }) = seen.last() else {
        panic!("no roster event: {seen:?}");
    };
    assert_eq!(agents, &[handle("manager"), handle("code")]);
    // After: it takes part.
    let summary = floor.post_and_wait("@code? hello").await.unwrap();
    assert_eq!(senders(&summary), ["@user", "@code"]);
    // The same handle twice is refused, and the refused agent is shut down.
    let twin = agent("code", &["--behaviour", "echo"]).await;
    let err = floor.add_agent_when_idle(twin).await.unwrap_err();
    assert!(err.to_string().contains("@code"), "{err}");
    // A weak handle does not keep the floor open.
    let weak = floor.downgrade();
    floor.close().await.unwrap();
    drop(floor);
    assert!(weak.upgrade().is_none() || weak.upgrade().unwrap().snapshot().await.is_err());
}
