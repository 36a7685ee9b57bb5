//! Sessions: a floor recorded into a session log, resumed from it, and the log's hostile cases
//! (hand edits, a crash mid-line, another project's session).

use std::sync::{Arc, Mutex};

use index_schema::wire::{RespondRequest, RespondResponse};
use runtime::agent::FnAgent;
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::session::{
    LiveSession, Restored, SessionError, SessionId, SessionMeta, SessionStore, jsonl, restore,
};
use runtime::{Activation, Handle};

/// An always-waking agent that answers with how many messages it was sent, and keeps what it
/// saw.
fn counter(seen: Arc<Mutex<Vec<Vec<String>>>>) -> FloorAgent {
    let agent = FnAgent::new("echo", move |request: RespondRequest| {
        let seen = Arc::clone(&seen);
        async move {
            let texts: Vec<String> = request.messages.iter().map(|m| m.content.clone()).collect();
            let n = texts.len();
            seen.lock().unwrap().push(texts);
            Ok(RespondResponse::reply(format!("I have seen {n} messages")))
        }
    });
    let mut a = FloorAgent::new(Handle::new("@echo").unwrap(), Arc::new(agent));
    a.activation = Activation::Always;
    a
}

fn meta() -> SessionMeta {
    SessionMeta {
        blueprint_name: "test".to_owned(),
        ..SessionMeta::default()
    }
}

async fn turn(floor: &Floor, text: &str) {
    floor.post_and_wait(text).await.unwrap();
}

#[tokio::test]
async fn a_resumed_floor_continues_the_conversation_without_calling_anyone() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"), "/project/a");
    let seen = Arc::new(Mutex::new(Vec::new()));

    let file = store.create(meta()).unwrap();
    let id = file.id().clone();
    let live = LiveSession::new(file);
    let floor = Floor::open_session(
        "f1",
        None,
        vec![counter(Arc::clone(&seen))],
        FloorSettings::default(),
        live,
        Vec::new(),
    )
    .unwrap();
    turn(&floor, "the code word is ZEBRA").await;
    turn(&floor, "second").await;
    floor.close().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);

    // Listed, with its events.
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    assert!(listed[0].event_count > 4, "{listed:?}");
    assert_eq!(store.newest().unwrap(), Some(id.clone()));

    let (file, log) = store.resume(&id).unwrap();
    assert!(log.problems.is_empty(), "{:?}", log.problems);
    let restored = Restored::from_log(&log);
    assert_eq!(restored.messages.len(), 4);
    assert_eq!(restored.segments, 1);
    // Nobody was called to rebuild it.
    assert_eq!(seen.lock().unwrap().len(), 2);
    let floor = Floor::open_session(
        "f2",
        None,
        vec![counter(Arc::clone(&seen))],
        FloorSettings::default(),
        LiveSession::new(file),
        restored.messages,
    )
    .unwrap();
    turn(&floor, "do you remember the code word?").await;
    floor.close().await.unwrap();
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.len(), 5, "{last:?}");
    assert_eq!(last[0], "the code word is ZEBRA");
    // Message ids go on counting.
    let log = store.read(&id).unwrap();
    let restored = Restored::from_log(&log);
    let ids: Vec<&str> = restored.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["msg-1", "msg-2", "msg-3", "msg-4", "msg-5", "msg-6"]);
    // Two runs: two transcript segments, each replaying identically.
    let segments = restore::transcript_segments(&log).unwrap();
    assert_eq!(segments.len(), 2);
    for segment in &segments {
        runtime::transcript::replay(segment).unwrap();
    }
}

#[tokio::test]
async fn clear_and_compactions_are_restored() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let live = LiveSession::new(store.create(meta()).unwrap());
    let id = live.id().clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let floor = Floor::open_session(
        "f",
        None,
        vec![counter(Arc::clone(&seen))],
        FloorSettings::default(),
        live.clone(),
        Vec::new(),
    )
    .unwrap();
    turn(&floor, "forget me").await;
    assert_eq!(floor.clear().await.unwrap(), Some(2));
    turn(&floor, "keep me").await;
    live.record_compaction("@echo", "msg-3", "the user wants to be kept");
    floor.close().await.unwrap();
    drop(live);
    let restored = Restored::from_log(&store.read(&id).unwrap());
    let texts: Vec<&str> = restored
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(texts, ["keep me", "I have seen 1 messages"]);
    let c = &restored.compactions["@echo"];
    assert_eq!(c.through, "msg-3");
    assert!(c.covers_up_to_seq.is_some());
    assert_eq!(c.summary, "the user wants to be kept");
}

fn write_session(store: &SessionStore) -> (SessionId, std::path::PathBuf) {
    let mut file = store.create(meta()).unwrap();
    for i in 1..=3 {
        file.append(
            "#main",
            "message_posted",
            serde_json::json!({"message": {"id": format!("msg-{i}"), "from": "@user",
                "content": format!("m{i}"), "timestamp": "2026-01-01T00:00:00Z"}}),
        )
        .unwrap();
    }
    let id = file.id().clone();
    let path = file.path().to_owned();
    drop(file);
    (id, path)
}

#[test]
fn a_log_cut_mid_line_resumes_and_the_cut_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let (id, path) = write_session(&store);
    let mut text = std::fs::read_to_string(&path).unwrap();
    let whole = text.len();
    text.push_str(r#"{"kind":"event","session_id":"x","seq":4,"ti"#);
    std::fs::write(&path, &text).unwrap();

    let (mut file, log) = store.resume(&id).unwrap();
    assert_eq!(log.events.len(), 3);
    assert!(log.problems.is_empty());
    let torn = log.torn.clone().unwrap();
    assert_eq!(torn.line, 5);
    let warnings = log.warnings(&path);
    assert!(
        warnings[0].contains(":5: the last line was cut"),
        "{warnings:?}"
    );
    assert_eq!(
        file.append("#main", "cleared", serde_json::json!({"forgotten": 0}))
            .unwrap(),
        4
    );
    drop(file);
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&text[..whole]));
    assert!(!after.contains(r#""ti{"#));
    let log = jsonl::read(&path).unwrap();
    assert!(log.problems.is_empty() && log.torn.is_none(), "{log:?}");
    assert_eq!(log.events.len(), 4);
    let aside_path = path.with_extension("jsonl.torn-3");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&aside_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let aside = std::fs::read_to_string(&aside_path).unwrap();
    assert_eq!(aside, r#"{"kind":"event","session_id":"x","seq":4,"ti"#);
    // Removing the session removes what was set aside.
    store.remove(&id).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn hand_edits_are_named_by_line_and_nothing_else_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let (id, path) = write_session(&store);
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.insert(2, "{this is not json".to_owned());
    lines.insert(
        3,
        r#"{"kind":"event","session_id":"x","seq":9,"time":"2999-01-01T00:00:00Z","payload_type":"cleared","payload":{"forgotten":1}}"#.to_owned(),
    );
    lines.insert(
        4,
        format!(
            r#"{{"kind":"event","pad":"{}"}}"#,
            "x".repeat(10 * 1024 * 1024)
        ),
    );
    lines.push(
        r#"{"kind":"event","session_id":"x","seq":10,"time":"2026-01-01T00:00:00Z","payload_type":"teleported","payload":{}}"#.to_owned(),
    );
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let log = store.read(&id).unwrap();
    let problems: Vec<(usize, &str)> = log
        .problems
        .iter()
        .map(|p| (p.line, p.message.as_str()))
        .collect();
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert_eq!(problems[0].0, 3);
    assert!(problems[0].1.starts_with("not JSON"));
    assert_eq!(problems[1].0, 4);
    assert!(problems[1].1.contains("in the future"));
    assert_eq!(problems[2].0, 5);
    assert!(problems[2].1.contains("MiB"));
    assert_eq!(problems[3].0, 8);
    assert!(problems[3].1.contains("unknown payload type `teleported`"));
    let restored = Restored::from_log(&log);
    assert_eq!(restored.messages.len(), 3);
    let warning = &log.warnings(&path)[0];
    assert!(
        warning.starts_with(&format!("{}:3: not JSON", path.display())),
        "{warning}"
    );
}

#[test]
fn another_projects_session_is_not_readable() {
    let dir = tempfile::tempdir().unwrap();
    let mine = SessionStore::new(dir.path(), "/project/mine");
    let theirs = SessionStore::new(dir.path(), "/project/theirs");
    let (id, _) = write_session(&theirs);
    assert!(matches!(mine.read(&id), Err(SessionError::Foreign { .. })));
    assert!(matches!(
        mine.resume(&id),
        Err(SessionError::Foreign { .. })
    ));
    assert!(matches!(
        mine.remove(&id),
        Err(SessionError::Foreign { .. })
    ));
    assert!(mine.list().unwrap().is_empty());
    assert_eq!(theirs.list().unwrap().len(), 1);
    // Ids are UUIDs, checked before any path is built.
    assert!(matches!(
        SessionId::parse("../theirs/x"),
        Err(SessionError::BadId(_))
    ));
}

/// A session file that is a link is no session: not read, continued nor removed (the list
/// already skipped it).
#[cfg(unix)]
#[test]
fn a_link_in_the_store_is_not_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let outside = SessionStore::new(elsewhere.path(), "/p");
    let (id, target) = write_session(&outside);
    std::os::unix::fs::symlink(&target, store.path(&id)).unwrap();
    assert!(matches!(
        store.read(&id),
        Err(SessionError::NotFound { .. })
    ));
    assert!(matches!(
        store.resume(&id),
        Err(SessionError::NotFound { .. })
    ));
    assert!(matches!(
        store.remove(&id),
        Err(SessionError::NotFound { .. })
    ));
    assert!(store.list().unwrap().is_empty());
    assert!(target.exists());
}

/// A store for a named floor opens that floor's sessions only, and records it in those it
/// creates.
#[test]
fn a_floors_store_opens_that_floors_sessions_only() {
    let dir = tempfile::tempdir().unwrap();
    let project = SessionStore::new(dir.path(), "/p");
    let blog = project.clone().for_floor("blog");
    let (plain, _) = write_session(&project);
    let (other, _) = write_session(&project.clone().for_floor("other"));
    let (mine, _) = write_session(&blog);
    for id in [&plain, &other] {
        assert!(
            matches!(blog.read(id), Err(SessionError::Foreign { .. })),
            "{id}"
        );
        assert!(
            matches!(blog.resume(id), Err(SessionError::Foreign { .. })),
            "{id}"
        );
    }
    assert_eq!(
        blog.read(&mine).unwrap().meta.unwrap().floor.as_deref(),
        Some("blog")
    );
    let listed: Vec<SessionId> = blog.list().unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(listed, [mine]);
    // Without a floor, the project's store reads them all.
    assert_eq!(project.list().unwrap().len(), 3);
}

#[test]
fn a_session_in_use_is_neither_resumed_twice_nor_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let (id, _) = write_session(&store);
    let (open, _) = store.resume(&id).unwrap();
    assert!(matches!(store.resume(&id), Err(SessionError::Busy(_))));
    assert!(matches!(store.remove(&id), Err(SessionError::Busy(_))));
    drop(open);
    store.remove(&id).unwrap();
    assert!(matches!(
        store.read(&id),
        Err(SessionError::NotFound { .. })
    ));
}

/// An LLM agent with a running summary: each new summary is told to the session as a
/// compaction, and a new agent given it back (a resume) uses it without a summary call.
#[tokio::test]
async fn memory_summaries_are_recorded_and_restored_without_a_model_call() {
    use crate::llm_agent::{Server, answer, inline, settings};
    use index_schema::wire::{Message, Timestamp};
    use runtime::agent::Agent;
    use runtime::llm::{LlmAgent, LlmConfig};

    let server = Server::start(vec![
        answer(&["Facts 0 to 2 were given."]),
        answer(&["first"]),
        answer(&["after the resume"]),
    ])
    .await;
    let make = || {
        let (a, d) = inline(&format!(
            "defaults: {{endpoint: \"{}\", model: m1}}\nagents:\n  - id: \"@data\"\n    memory: {{window: 2, summary: true}}\n",
            server.endpoint
        ));
        let config = LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap();
        LlmAgent::new(config, settings(), reqwest::Client::new())
    };
    let ts = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
    let floor: Vec<Message> = (0..5)
        .map(|i| {
            Message::new(
                format!("m{i}"),
                "@user",
                format!("fact number {i}"),
                ts.clone(),
            )
        })
        .collect();
    let request = |messages: Vec<Message>| RespondRequest {
        floor_id: "f".to_owned(),
        user_id: None,
        messages,
        wake_reason: None,
        initiator: None,
        context: None,
    };

    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let live = LiveSession::new(store.create(meta()).unwrap());
    let id = live.id().clone();
    let agent = make();
    let hook_live = live.clone();
    agent.on_compaction(Arc::new(move |through, text| {
        hook_live.record_compaction("@data", through, text);
    }));
    agent.respond(&request(floor.clone()), None).await.unwrap();
    assert_eq!(server.requests().len(), 2, "a summary call and the answer");
    drop(live);

    let restored = Restored::from_log(&store.read(&id).unwrap());
    let c = &restored.compactions["@data"];
    assert_eq!(c.through, "m2");
    assert_eq!(c.summary, "Facts 0 to 2 were given.");

    // A new agent (a new run) given the summary back: no summary call, the summary sent.
    let resumed = make();
    resumed.restore_summary(&c.through, &c.summary);
    let mut more = floor;
    more.push(Message::new("m5", "@user", "fact number 5", ts));
    resumed.respond(&request(more), None).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "no new summary call");
    let sent: Vec<String> = requests[2].1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(sent[1].contains("Facts 0 to 2 were given."), "{sent:?}");
    assert_eq!(
        &sent[2..],
        ["fact number 3", "fact number 4", "fact number 5"]
    );
}

mod cut_anywhere {
    use proptest::prelude::*;
    use runtime::session::jsonl;

    fn log_text(n: usize) -> String {
        (1..=n)
            .map(|seq| {
                format!(
                    r##"{{"kind":"event","session_id":"s","seq":{seq},"time":"2026-01-01T00:00:00Z","room_id":"#main","payload_type":"message_posted","payload":{{"message":{{"id":"msg-{seq}","from":"@user","content":"line {seq} ünïcode","timestamp":"2026-01-01T00:00:00Z"}}}}}}"##
                ) + "\n"
            })
            .collect()
    }

    proptest! {
        /// Cut at any byte: every whole line before the cut is kept, nothing is reported as a
        /// problem, and a partial last line is the torn tail.
        #[test]
        fn a_log_cut_at_any_byte_keeps_every_whole_line(n in 1usize..8, cut in 0.0f64..1.0) {
            let text = log_text(n);
            let at = (text.len() as f64 * cut) as usize;
            let bytes = &text.as_bytes()[..at];
            let log = jsonl::read_from(bytes).unwrap();
            let whole = bytes.iter().filter(|&&b| b == b'\n').count();
            let last_break = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            // Cut just before a line break: the last line is whole, only its break is missing.
            let complete = at > last_break && text.as_bytes()[at] == b'\n';
            prop_assert_eq!(log.events.len(), whole + usize::from(complete));
            prop_assert!(log.problems.is_empty());
            prop_assert_eq!(log.torn.is_some(), at > last_break && !complete);
            prop_assert_eq!(log.whole_len as usize, if complete { at } else { last_break });
        }

        /// A line of any bytes inserted anywhere costs that line only, named by its number.
        #[test]
        fn a_garbage_line_costs_only_itself(
            n in 1usize..8,
            k in 0usize..8,
            garbage in "[^\n]{1,200}",
        ) {
            let k = k.min(n);
            let mut lines: Vec<String> = log_text(n).lines().map(str::to_owned).collect();
            prop_assume!(serde_json::from_str::<serde_json::Value>(&garbage).is_err()
                || !garbage.trim_start().starts_with('{'));
            prop_assume!(!garbage.trim().is_empty());
            lines.insert(k, garbage);
            let text = lines.join("\n") + "\n";
            let log = jsonl::read_from(text.as_bytes()).unwrap();
            prop_assert_eq!(log.events.len(), n);
            prop_assert_eq!(log.problems.len(), 1);
            prop_assert_eq!(log.problems[0].line, k + 1);
        }
    }
}
