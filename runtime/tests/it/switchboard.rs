//! The Switchboard's file transport on a real floor: a file agent's turns through
//! `.switchboard/`, receipts and archives, hostile inbox files, and delivering exactly once
//! across a restart. The file agent is played by a thread of the test that only reads its
//! inbox and writes files (write-then-rename), as the seed says; `tests/tests/it/
//! run_switchboard_e2e.rs` plays it with a separate process against the real `ofc run`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use index_schema::switchboard::Role;
use index_schema::wire::{RespondRequest, RespondResponse, WakeReason};
use runtime::agent::{Agent, FnAgent};
use runtime::floor::{Floor, FloorAgent, FloorEvent, FloorSettings};
use runtime::switchboard::mcp::SwitchboardMcp;
use runtime::switchboard::{Switchboard, SwitchboardSettings};
use serde_json::{Value, json};

use crate::support::handle;

pub fn sb_settings(dir: &Path) -> SwitchboardSettings {
    SwitchboardSettings {
        scan_interval: Duration::from_millis(10),
        settle: Duration::from_millis(300),
        log: Some(dir.join("switchboard.log")),
        ..SwitchboardSettings::default()
    }
}

pub fn floor_settings(dir: &Path) -> FloorSettings {
    FloorSettings {
        should_wake_deadline: Duration::from_millis(500),
        respond_deadline: Duration::from_secs(20),
        transcript_dir: Some(dir.join("logs")),
        ..FloorSettings::default()
    }
}

/// The lead: delegates to the worker, then reports what came back.
pub fn lead() -> Arc<dyn Agent> {
    Arc::new(FnAgent::new("lead", |r: RespondRequest| async move {
        let last = r
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(RespondResponse::reply(
            if r.wake_reason == Some(WakeReason::DelegationReturned) {
                format!("the worker says: {last}")
            } else {
                "@worker? count to three".to_owned()
            },
        ))
    }))
}

/// Writes a message file the way the seed's agents do: aside, then renamed into the inbox.
pub fn drop_message(ws: &Path, inbox: &str, file: &str, body: &Value) {
    let dir = ws.join("inbox").join(inbox);
    fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join(format!(".{file}.tmp"));
    fs::write(&tmp, serde_json::to_vec_pretty(body).unwrap()).unwrap();
    fs::rename(&tmp, dir.join(file)).unwrap();
}

pub fn message(id: &str, action: &str, sender: &str, recipient: &str, payload: &str) -> Value {
    json!({"id": id, "action": action, "sender": sender, "recipient": recipient,
        "payload": payload, "createdAt": "2025-01-01T00:00:00.000Z"})
}

/// Polls `f` (at most 20 s) until it gives something.
pub async fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// The file agent: answers each `delegate_task` in its inbox with a `submit_result` to the
/// sender (`replyTo` the task), then archives the task; stops after `answers` answers.
fn file_agent(
    ws: PathBuf,
    name: &'static str,
    answers: usize,
    reply: &'static str,
) -> std::thread::JoinHandle<Vec<Value>> {
    std::thread::spawn(move || {
        let inbox = ws.join("inbox").join(name);
        let mut seen = Vec::new();
        let start = Instant::now();
        while seen.len() < answers && start.elapsed() < Duration::from_secs(30) {
            for file in files(&inbox) {
                if !file.ends_with(".json") {
                    continue;
                }
                let task = read_json(&inbox.join(&file));
                if task["action"] == "delegate_task" {
                    let id = format!("msg_{}_answer", seen.len());
                    let mut answer = message(
                        &id,
                        "submit_result",
                        name,
                        task["sender"].as_str().unwrap(),
                        reply,
                    );
                    answer["replyTo"] = task["id"].clone();
                    drop_message(
                        &ws,
                        task["sender"].as_str().unwrap(),
                        &format!("{id}.json"),
                        &answer,
                    );
                    seen.push(task.clone());
                }
                let archive = ws.join("archive").join(name);
                fs::create_dir_all(&archive).unwrap();
                fs::rename(inbox.join(&file), archive.join(&file)).unwrap();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        seen
    })
}

async fn floor_with(dir: &Path, sb: &Arc<Switchboard>, lead: Arc<dyn Agent>) -> Floor {
    floor_named("floor-1", dir, sb, lead).await
}

async fn floor_named(id: &str, dir: &Path, sb: &Arc<Switchboard>, lead: Arc<dyn Agent>) -> Floor {
    let worker = sb
        .add_file_agent(
            &handle("worker"),
            Some(Role::Coder1),
            Some("backend".into()),
            Some("You count.".into()),
        )
        .unwrap();
    let floor = Floor::open(
        id,
        None,
        vec![
            FloorAgent::new(handle("lead"), lead),
            FloorAgent::new(handle("worker"), worker),
        ],
        floor_settings(dir),
    )
    .unwrap();
    sb.attach(&floor).await.unwrap();
    floor
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_goes_through_the_inbox_and_the_answer_comes_back_on_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_with(dir.path(), &sb, lead()).await;
    let agent = file_agent(ws.clone(), "worker", 1, "one two three");

    let summary = tokio::time::timeout(Duration::from_secs(30), floor.post_and_wait("@lead? go"))
        .await
        .expect("the turn ended")
        .unwrap();
    let said: Vec<(String, String)> = summary
        .messages
        .iter()
        .map(|m| (m.from.clone(), m.content.clone()))
        .collect();
    assert_eq!(
        said,
        [
            ("@user".into(), "@lead? go".into()),
            ("@lead".into(), "@worker? count to three".into()),
            ("@worker".into(), "one two three".into()),
            ("@lead".into(), "the worker says: one two three".into()),
        ]
    );
    let tasks = agent.join().unwrap();
    let task = &tasks[0];
    // The question, in the seed's schema, with the worker's team and persona.
    assert_eq!(task["action"], "delegate_task");
    assert_eq!(task["sender"], "lead");
    assert_eq!(task["recipient"], "worker");
    assert_eq!(task["payload"], "@worker? count to three");
    assert_eq!(task["team"], "backend");
    assert_eq!(task["persona"], "You count.");
    assert!(task["id"].as_str().unwrap().starts_with("msg_"));
    // The answer keeps its replyTo on the floor.
    let sb_meta = &summary.messages[2].metadata.as_ref().unwrap()["switchboard"];
    assert_eq!(sb_meta["replyTo"], task["id"]);
    assert_eq!(sb_meta["action"], "submit_result");
    assert_eq!(sb_meta["id"], "msg_0_answer");
    // Receipts for both deliveries; the answer archived, the lead's inbox empty (the reader
    // finishes a delivery — receipt, archive — right after the floor took it).
    eventually("the answer archived", || {
        (files(&ws.join("archive/lead")) == ["msg_0_answer.json"]).then_some(())
    })
    .await;
    let receipt = read_json(&ws.join(format!(
        "outbox/lead/receipt_{}.json",
        task["id"].as_str().unwrap()
    )));
    assert_eq!(receipt["status"], "delivered");
    assert_eq!(receipt["summary"], "Message delivered to 'worker' inbox");
    assert_eq!(receipt["error"], Value::Null);
    let receipt = read_json(&ws.join("outbox/worker/receipt_msg_0_answer.json"));
    assert_eq!(receipt["inReplyTo"], "msg_0_answer");
    assert_eq!(receipt["summary"], "Message delivered to 'lead' inbox");
    assert_eq!(files(&ws.join("archive/lead")), ["msg_0_answer.json"]);
    assert!(files(&ws.join("inbox/lead")).is_empty());
    // The workspace as the seed lays it out.
    assert_eq!(
        fs::read_to_string(ws.join("auth_token")).unwrap(),
        sb.token()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(ws.join("auth_token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let state = read_json(&ws.join("state.json"));
    assert_eq!(state["chatAgents"]["worker"]["role"], "coder 1");
    assert_eq!(state["chatAgents"]["worker"]["interface"], "file");
    assert_eq!(state["chatAgents"]["lead"]["interface"], "ofc-floor");
    assert_eq!(state["teams"]["backend"]["members"], json!(["worker"]));
    sb.stop();
    floor.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_agent_speaking_on_its_own_starts_a_turn_and_gets_the_answer_in_its_inbox() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let helper: Arc<dyn Agent> = Arc::new(FnAgent::new("lead", |_r: RespondRequest| async move {
        Ok(RespondResponse::reply("4, and @worker gets a note"))
    }));
    let floor = floor_with(dir.path(), &sb, helper).await;
    let mut events = floor.subscribe();
    drop_message(
        &ws,
        "lead",
        "msg_9_q.json",
        &message("msg_9_q", "delegate_task", "worker", "lead", "what is 2+2?"),
    );
    let seen = crate::support::events_until(&mut events, 100, |e| {
        matches!(e, FloorEvent::TurnEnded { .. })
    })
    .await;
    let messages: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            FloorEvent::Message { message } => {
                Some((message.from.clone(), message.content.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        messages,
        [
            ("@worker".into(), "@lead? what is 2+2?".into()),
            ("@lead".into(), "4, and @worker gets a note".into()),
        ]
    );
    // The lead answered to the worker, who started the turn.
    let initiator = seen.iter().find_map(|e| match e {
        FloorEvent::Responding { initiator, .. } => initiator.clone(),
        _ => None,
    });
    assert_eq!(initiator.map(|i| i.to_string()), Some("@worker".into()));
    // The answer reached the worker's inbox as a submit_result naming its question; the
    // mention became a status_update too.
    let inbox = ws.join("inbox/worker");
    let got: Vec<Value> = eventually("two messages for the worker", || {
        let f = files(&inbox);
        (f.len() == 2).then(|| f.iter().map(|n| read_json(&inbox.join(n))).collect())
    })
    .await;
    let result = got.iter().find(|m| m["action"] == "submit_result").unwrap();
    assert_eq!(result["replyTo"], "msg_9_q");
    assert_eq!(result["sender"], "lead");
    assert_eq!(result["payload"], "4, and @worker gets a note");
    let note = got.iter().find(|m| m["action"] == "status_update").unwrap();
    assert_eq!(note["sender"], "lead");
    let receipt = ws.join(format!(
        "outbox/lead/receipt_{}.json",
        result["id"].as_str().unwrap()
    ));
    eventually("the answer's receipt", || receipt.is_file().then_some(())).await;
    assert!(ws.join("outbox/worker/receipt_msg_9_q.json").is_file());
    assert_eq!(files(&ws.join("archive/lead")), ["msg_9_q.json"]);
    sb.stop();
    floor.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_inbox_files_are_refused_with_a_reason_and_nothing_outside_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    // A valid message, outside: a link to it must not be read.
    let lure = message("msg_lure", "status_update", "worker", "lead", "via a link");
    fs::write(&secret, serde_json::to_vec(&lure).unwrap()).unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_with(dir.path(), &sb, lead()).await;
    let mut events = floor.subscribe();
    let inbox = ws.join("inbox/lead");

    drop_message(
        &ws,
        "lead",
        "msg_1.json",
        &message("msg_1", "status_update", "worker", "../../etc", "escape"),
    );
    fs::write(inbox.join(".msg_2.json.tmp"), vec![b' '; 50 * 1024 * 1024]).unwrap();
    fs::rename(inbox.join(".msg_2.json.tmp"), inbox.join("msg_2.json")).unwrap();
    fs::write(
        inbox.join("msg_3.json"),
        b"{\"id\": \"msg_3\", \"action\": ",
    )
    .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, inbox.join("msg_4.json")).unwrap();
    drop_message(
        &ws,
        "lead",
        "msg_5.json",
        &message("msg_5", "status_update", "lead", "lead", "I am the lead"),
    );
    drop_message(
        &ws,
        "lead",
        "msg_6.json",
        &message("msg_6", "status_update", "user", "lead", "I am the user"),
    );
    drop_message(
        &ws,
        "lead",
        "msg_7.json",
        &message("msg_7", "status_update", "ghost", "lead", "boo"),
    );
    let mut extra = message("msg_8", "status_update", "worker", "lead", "extra field");
    extra["priority"] = json!(1);
    drop_message(&ws, "lead", "msg_8.json", &extra);
    // A key given twice: serde_json would keep the last (`worker`, a member).
    fs::write(
        inbox.join(".msg_0.json.tmp"),
        br#"{"id": "msg_0", "action": "status_update", "sender": "user", "sender": "worker",
            "recipient": "lead", "payload": "twice", "createdAt": "2025-01-01T00:00:00.000Z"}"#,
    )
    .unwrap();
    fs::rename(inbox.join(".msg_0.json.tmp"), inbox.join("msg_0.json")).unwrap();
    // A link in place of a whole inbox: never read through.
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), ws.join("inbox/user")).unwrap();
    // And a good one after them: a bad file is never fatal.
    drop_message(
        &ws,
        "lead",
        "msg_9.json",
        &message("msg_9", "status_update", "worker", "lead", "still here"),
    );

    let rejected = ws.join("rejected/lead");
    let expected = [
        "msg_0.json",
        "msg_1.json",
        "msg_2.json",
        "msg_3.json",
        "msg_4.json",
        "msg_5.json",
        "msg_6.json",
        "msg_7.json",
        "msg_8.json",
    ];
    eventually("every hostile file moved aside", || {
        (files(&rejected) == expected).then_some(())
    })
    .await;
    let seen =
        crate::support::events_until(&mut events, 50, |e| matches!(e, FloorEvent::Message { .. }))
            .await;
    let FloorEvent::Message { message: m } = seen.last().unwrap() else {
        panic!()
    };
    assert_eq!(
        (m.from.as_str(), m.content.as_str()),
        ("@worker", "@lead still here")
    );
    assert!(files(&inbox).is_empty());

    let log = eventually("the log names every reason", || {
        let log = fs::read_to_string(dir.path().join("switchboard.log")).ok()?;
        log.contains("inbox/user is not read").then_some(log)
    })
    .await;
    for (file, reason) in [
        ("msg_1.json", "recipient: `../../etc` must not contain `..`"),
        (
            "msg_2.json",
            "is 52428800 bytes, more than the 1048576 a message may have",
        ),
        ("msg_3.json", "invalid JSON"),
        ("msg_4.json", "is a symbolic link"),
        ("msg_5.json", "is addressed to its own sender"),
        (
            "msg_6.json",
            "claims to come from `user`, which is not a Switchboard agent",
        ),
        (
            "msg_7.json",
            "claims to come from `ghost`, which is no agent of this floor",
        ),
        ("msg_8.json", "priority: unknown field"),
        ("msg_0.json", "sender: duplicate key"),
    ] {
        let line = log
            .lines()
            .find(|l| l.contains(&format!("refused inbox/lead/{file}")))
            .unwrap_or_else(|| panic!("no line for {file} in\n{log}"));
        assert!(line.contains(reason), "{file}: {line}");
    }
    // Outside `.switchboard/` nothing changed: the link's target is whole and where it was,
    // the linked directory got nothing.
    assert_eq!(
        fs::read(&secret).unwrap(),
        serde_json::to_vec(&lure).unwrap()
    );
    assert_eq!(files(outside.path()), ["secret.json"]);
    #[cfg(unix)]
    assert!(
        fs::symlink_metadata(rejected.join("msg_4.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A member writing to the floor side with a bad name over MCP is refused too.
    let mcp = SwitchboardMcp::new(Arc::clone(&sb), "s1".into());
    mcp.call(
        "register_chat_agent",
        obj(json!({"name": "editor", "interface": "vscode"})),
    )
    .unwrap();
    let e = mcp
        .call(
            "send_message",
            obj(json!({"recipient": "../../etc", "action": "status_update", "payload": "x"})),
        )
        .unwrap_err();
    assert!(e.contains("`recipient` must not contain `..`"), "{e}");
    let e = mcp
        .call(
            "register_chat_agent",
            obj(json!({"name": "lead", "interface": "vscode"})),
        )
        .unwrap_err();
    assert!(e.contains("registered as `editor` already"), "{e}");
    let other = SwitchboardMcp::new(Arc::clone(&sb), "s2".into());
    for (name, says) in [
        ("lead", "already on the floor as an agent of the blueprint"),
        ("worker", "a file agent of the blueprint"),
        ("floor-manager", "belongs to the floor"),
        ("../x", "`name` must not contain `..`"),
    ] {
        let e = other
            .call(
                "register_terminal",
                obj(json!({"name": name, "purpose": "p"})),
            )
            .unwrap_err();
        assert!(e.contains(says), "{name}: {e}");
    }
    assert_eq!(files(outside.path()), ["secret.json"]);
    sb.stop();
    floor.close().await.unwrap();
}

fn obj(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!(),
    }
}

/// A kill between the floor storing a message and its file being archived: the restart
/// archives it without delivering it again. A kill before the floor stored it: the restart
/// delivers it. Either way, exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_finishes_begun_deliveries_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_with(dir.path(), &sb, lead()).await;
    drop_message(
        &ws,
        "lead",
        "msg_a.json",
        &message("msg_a", "status_update", "worker", "lead", "first"),
    );
    eventually("msg_a delivered", || {
        (files(&ws.join("archive/lead")) == ["msg_a.json"]).then_some(())
    })
    .await;
    let transcript = floor.snapshot().await.unwrap().transcript.unwrap();
    sb.stop();
    floor.close().await.unwrap();
    drop(sb);

    // As if the run had been killed after the floor took msg_a but before it was archived
    // (and before msg_b reached the floor): both files in the inbox, both deliveries begun.
    fs::rename(
        ws.join("archive/lead/msg_a.json"),
        ws.join("inbox/lead/msg_a.json"),
    )
    .unwrap();
    fs::remove_file(ws.join("outbox/worker/receipt_msg_a.json")).unwrap();
    drop_message(
        &ws,
        "lead",
        "msg_b.json",
        &message("msg_b", "status_update", "worker", "lead", "second"),
    );
    let journal = ws.join("ofc-journal.jsonl");
    let begin = |id: &str| {
        json!({"op": "begin", "id": id, "inbox": "lead", "file": format!("{id}.json"), "sender": "worker", "transcript": transcript})
            .to_string()
    };
    // And an entry someone with write access to the workspace forged, naming a file outside
    // it: ignored, the file stays where it is.
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("victim.json"), "{}").unwrap();
    let escape = format!("../../../../../../../..{}", outside.path().display());
    let forged = json!({"op": "begin", "id": "msg_x", "inbox": escape, "file": "victim.json",
        "sender": "worker", "transcript": "/etc/passwd"})
    .to_string();
    fs::write(
        &journal,
        format!("{}\n{}\n{forged}\n", begin("msg_a"), begin("msg_b")),
    )
    .unwrap();

    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let floor = floor_named("floor-2", dir.path(), &sb, lead()).await;
    eventually("both archived", || {
        (files(&ws.join("archive/lead")) == ["msg_a.json", "msg_b.json"]).then_some(())
    })
    .await;
    let second = floor.snapshot().await.unwrap().transcript.unwrap();
    let delivered = |path: &Path, id: &str| {
        fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"kind\":\"message\""))
            .filter(|l| {
                serde_json::from_str::<Value>(l).unwrap()["message"]["metadata"]["switchboard"]["id"] == id
            })
            .count()
    };
    assert_eq!(
        delivered(&transcript, "msg_a") + delivered(&second, "msg_a"),
        1
    );
    assert_eq!(
        delivered(&transcript, "msg_b") + delivered(&second, "msg_b"),
        1
    );
    assert_eq!(delivered(&second, "msg_b"), 1);
    assert!(ws.join("outbox/worker/receipt_msg_a.json").is_file());
    assert!(ws.join("outbox/worker/receipt_msg_b.json").is_file());
    let log = fs::read_to_string(dir.path().join("switchboard.log")).unwrap();
    assert!(
        log.contains("msg_a had reached the floor before ofc stopped; archived now"),
        "{log}"
    );
    assert!(
        log.contains("msg_b had not reached the floor when ofc stopped"),
        "{log}"
    );
    assert!(
        log.contains("ignored a journal entry that names a place outside"),
        "{log}"
    );
    assert_eq!(files(outside.path()), ["victim.json"]);
    sb.stop();
    floor.close().await.unwrap();
}

/// A floor whose lead asks the worker (a file agent that never answers here), with a second
/// file agent `w2`; answers once the worker's question is in its inbox (the turn waits on it).
async fn floor_waiting_on_the_worker(dir: &Path, sb: &Arc<Switchboard>) -> Floor {
    let w2 = sb
        .add_file_agent(&handle("w2"), Some(Role::Coder2), None, None)
        .unwrap();
    let worker = sb
        .add_file_agent(&handle("worker"), Some(Role::Coder1), None, None)
        .unwrap();
    let floor = Floor::open(
        "floor-wait",
        None,
        vec![
            FloorAgent::new(handle("lead"), lead()),
            FloorAgent::new(handle("worker"), worker),
            FloorAgent::new(handle("w2"), w2),
        ],
        floor_settings(dir),
    )
    .unwrap();
    sb.attach(&floor).await.unwrap();
    floor.post("@lead? go").await.unwrap();
    let inbox = sb.workspace().root().join("inbox/worker");
    eventually("the worker is asked", || {
        (!files(&inbox).is_empty()).then_some(())
    })
    .await;
    floor
}

/// Twelve notes from `w2` to `lead` dropped in `ws`'s inbox while the floor waits on the
/// worker (it queues 8: the others wait), once the log (returned) says some wait.
async fn twelve_notes_waiting(dir: &Path, ws: &Path) -> PathBuf {
    for n in 0..12 {
        let id = format!("msg_{n:02}_note");
        drop_message(
            ws,
            "lead",
            &format!("{id}.json"),
            &message(&id, "status_update", "w2", "lead", "progress"),
        );
    }
    let log = dir.join("switchboard.log");
    eventually("some wait", || {
        fs::read_to_string(&log)
            .ok()?
            .contains("messages already wait for the floor")
            .then_some(())
    })
    .await;
    log
}

/// Messages that wait for the floor (its queue is full while a turn waits on a member) are
/// tried again at every look, every 2 ms: the journal says each delivery begun once, it does
/// not grow with the tries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_waiting_for_the_floor_do_not_grow_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_waiting_on_the_worker(dir.path(), &sb).await;
    // The floor queues 8; the others wait.
    twelve_notes_waiting(dir.path(), &ws).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let journal = fs::read_to_string(ws.join("ofc-journal.jsonl")).unwrap();
    let begins = journal.lines().filter(|l| l.contains("\"begin\"")).count();
    assert!(
        begins <= 12 && journal.lines().count() <= 24,
        "{} lines:\n{}",
        journal.lines().count(),
        &journal[..journal.len().min(2000)]
    );
    assert!(!journal.contains("\"undone\""), "{journal}");
    sb.stop();
    floor.close().await.unwrap();
}

/// `state.json` is shared with other writers: a registration cannot make it large, and one
/// that cannot be read is never replaced (the registration is refused and the reason logged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_never_wipes_state_json() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_with(dir.path(), &sb, lead()).await;
    let big = SwitchboardMcp::new(Arc::clone(&sb), "s1".into());
    for (tool, args, says) in [
        (
            "register_terminal",
            json!({"name": "big", "purpose": "p".repeat(950_000)}),
            "`purpose` is longer than 1024 bytes",
        ),
        (
            "register_terminal",
            json!({"name": "big", "purpose": "p", "icon": "i".repeat(2000)}),
            "`icon` is longer than 1024 bytes",
        ),
        (
            "register_chat_agent",
            json!({"name": "big", "interface": "x".repeat(2000)}),
            "`interface` is longer than 1024 bytes",
        ),
        (
            "register_chat_agent",
            json!({"name": "big", "interface": "x", "capabilities": ["c".repeat(300)]}),
            "`capabilities` must be a list of at most 64 strings of at most 256 bytes",
        ),
    ] {
        let e = big.call(tool, obj(args)).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
    assert!(!sb.is_member("big"));
    // Grown past what ofc reads by someone else: left alone.
    let state = ws.join("state.json");
    let text = format!(
        r#"{{"session": {{"owner": "vscode-extension"}}, "pad": "{}"}}"#,
        "x".repeat(4_300_000)
    );
    fs::write(&state, &text).unwrap();
    let small = SwitchboardMcp::new(Arc::clone(&sb), "s2".into());
    let e = small
        .call(
            "register_chat_agent",
            obj(json!({"name": "small", "interface": "vscode"})),
        )
        .unwrap_err();
    assert!(e.contains("cannot write state.json"), "{e}");
    assert!(e.contains("left as it is"), "{e}");
    assert_eq!(fs::read_to_string(&state).unwrap(), text);
    assert!(!sb.is_member("small"), "not registered after all");
    let log = fs::read_to_string(dir.path().join("switchboard.log")).unwrap();
    assert!(log.contains("cannot write state.json"), "{log}");
    // Once readable again, the same session registers.
    fs::write(&state, r#"{"session": {"owner": "vscode-extension"}}"#).unwrap();
    small
        .call(
            "register_chat_agent",
            obj(json!({"name": "small", "interface": "vscode"})),
        )
        .unwrap();
    let v = read_json(&state);
    assert_eq!(v["session"]["owner"], "vscode-extension");
    assert_eq!(v["chatAgents"]["small"]["interface"], "vscode");
    sb.stop();
    floor.close().await.unwrap();
}

/// Files that cannot be archived are left alone (held); they do not take the places of the
/// files behind them in the next looks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_cannot_be_archived_do_not_hide_the_next_ones() {
    let dir = tempfile::tempdir().unwrap();
    let settings = SwitchboardSettings {
        batch: 2,
        ..sb_settings(dir.path())
    };
    let sb = Switchboard::open(dir.path(), settings).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let quiet: Arc<dyn Agent> = Arc::new(FnAgent::new("lead", |_r: RespondRequest| async move {
        Ok(RespondResponse::pass(None))
    }));
    let floor = floor_with(dir.path(), &sb, quiet).await;
    // A file where the lead's archive folder should be.
    fs::write(ws.join("archive/lead"), "not a directory").unwrap();
    for n in 0..5 {
        let id = format!("msg_{n}_note");
        drop_message(
            &ws,
            "lead",
            &format!("{id}.json"),
            &message(&id, "status_update", "worker", "lead", &format!("note {n}")),
        );
    }
    eventually("all five reach the floor", || {
        (0..5)
            .all(|n| {
                ws.join(format!("outbox/worker/receipt_msg_{n}_note.json"))
                    .is_file()
            })
            .then_some(())
    })
    .await;
    let log = fs::read_to_string(dir.path().join("switchboard.log")).unwrap();
    assert_eq!(
        log.matches("cannot archive inbox/lead/").count(),
        5,
        "{log}"
    );
    sb.stop();
    floor.close().await.unwrap();
}

/// A member is in one team: joining another leaves the first (gone once empty), and the
/// first team's messages no longer reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_a_team_leaves_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_with(dir.path(), &sb, lead()).await;
    let ed = SwitchboardMcp::new(Arc::clone(&sb), "s1".into());
    let al = SwitchboardMcp::new(Arc::clone(&sb), "s2".into());
    for (s, name) in [(&ed, "ed"), (&al, "al")] {
        s.call(
            "register_chat_agent",
            obj(json!({"name": name, "interface": "vscode"})),
        )
        .unwrap();
    }
    ed.call("join_team", obj(json!({"team": "alpha"}))).unwrap();
    al.call("join_team", obj(json!({"team": "alpha"}))).unwrap();
    ed.call("join_team", obj(json!({"team": "beta"}))).unwrap();
    assert_eq!(sb.team("alpha"), ["al"]);
    assert_eq!(sb.team("beta"), ["ed"]);
    let sent = al
        .call(
            "send_team_message",
            obj(json!({"team": "alpha", "action": "status_update", "payload": "hi"})),
        )
        .unwrap();
    assert_eq!(sent["sent"], json!([]), "ed is no longer in alpha");
    al.call("join_team", obj(json!({"team": "beta"}))).unwrap();
    assert!(sb.team("alpha").is_empty());
    let roster = ed.call("get_team_roster", obj(json!({}))).unwrap();
    assert_eq!(
        roster["teams"],
        json!({"beta": {"members": ["al", "ed"]}, "backend": {"members": ["worker"]}})
    );
    let state = read_json(&ws.join("state.json"));
    assert_eq!(state["teams"].get("alpha"), None, "{state}");
    assert_eq!(state["teams"]["beta"]["members"], json!(["al", "ed"]));
    sb.stop();
    floor.close().await.unwrap();
}

/// How many floor messages of `path` (a transcript) carry the Switchboard id `id`.
fn in_transcript(path: &Path, id: &str) -> usize {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"kind\":\"message\""))
        .filter(|l| {
            serde_json::from_str::<Value>(l).unwrap()["message"]["metadata"]["switchboard"]["id"]
                == id
        })
        .count()
}

/// A message id is used once: files reusing the id of a message delivered in this run, or
/// archived, are refused with the reason; and after a restart, a begun file holding another
/// message under an id the floor has is refused, not archived as delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_id_is_used_once_and_a_restart_compares_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_with(dir.path(), &sb, lead()).await;
    for (file, payload) in [
        ("msg_dup.json", "one"),
        ("x1.json", "two"),
        ("x2.json", "three"),
    ] {
        drop_message(
            &ws,
            "lead",
            file,
            &message("msg_dup", "status_update", "worker", "lead", payload),
        );
    }
    eventually("one delivered, two refused", || {
        (files(&ws.join("archive/lead")) == ["msg_dup.json"]
            && files(&ws.join("rejected/lead")) == ["x1.json", "x2.json"])
        .then_some(())
    })
    .await;
    let transcript = floor.snapshot().await.unwrap().transcript.unwrap();
    assert_eq!(in_transcript(&transcript, "msg_dup"), 1);
    let log = fs::read_to_string(dir.path().join("switchboard.log")).unwrap();
    for file in ["x1.json", "x2.json"] {
        let line = log
            .lines()
            .find(|l| l.contains(&format!("refused inbox/lead/{file}")))
            .unwrap_or_else(|| panic!("no line for {file} in\n{log}"));
        assert!(
            line.contains("reuses the id `msg_dup` of a message already delivered in this run"),
            "{line}"
        );
    }
    let receipt = read_json(&ws.join("outbox/worker/receipt_msg_dup.json"));
    assert_eq!(receipt["status"], "rejected", "{receipt}");
    sb.stop();
    floor.close().await.unwrap();
    drop(sb);

    // The next run: a file reusing the archived id, and one as a kill would leave it — begun
    // in the journal, its payload new, its id the floor's message's.
    drop_message(
        &ws,
        "lead",
        "y.json",
        &message("msg_dup", "status_update", "worker", "lead", "four"),
    );
    drop_message(
        &ws,
        "lead",
        "z.json",
        &message("msg_dup", "status_update", "worker", "lead", "five"),
    );
    let begin = json!({"op": "begin", "id": "msg_dup", "inbox": "lead", "file": "z.json",
        "sender": "worker", "transcript": transcript});
    fs::write(ws.join("ofc-journal.jsonl"), format!("{begin}\n")).unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let floor = floor_named("floor-2", dir.path(), &sb, lead()).await;
    eventually("both refused", || {
        (files(&ws.join("rejected/lead")) == ["x1.json", "x2.json", "y.json", "z.json"])
            .then_some(())
    })
    .await;
    assert_eq!(files(&ws.join("archive/lead")), ["msg_dup.json"]);
    let second = floor.snapshot().await.unwrap().transcript.unwrap();
    assert_eq!(in_transcript(&transcript, "msg_dup"), 1);
    assert_eq!(in_transcript(&second, "msg_dup"), 0);
    let log = fs::read_to_string(dir.path().join("switchboard.log")).unwrap();
    assert!(!log.contains("msg_dup had reached the floor"), "{log}");
    for (file, reason) in [
        (
            "y.json",
            "reuses the id `msg_dup` of archive/lead/msg_dup.json",
        ),
        (
            "z.json",
            "reuses the id `msg_dup` of another message the floor took",
        ),
    ] {
        let line = log
            .lines()
            .find(|l| l.contains(&format!("refused inbox/lead/{file}")))
            .unwrap_or_else(|| panic!("no line for {file} in\n{log}"));
        assert!(line.contains(reason), "{line}");
    }
    sb.stop();
    floor.close().await.unwrap();
}

/// While an answer is awaited and nothing comes, the inbox reader backs off (it looked every
/// 2 ms: ~500 looks a second); messages still flow, and one reusing the id of a message
/// waiting for the floor is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_reader_backs_off_while_an_answer_is_awaited() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let floor = floor_waiting_on_the_worker(dir.path(), &sb).await;
    let before = sb.inbox_looks();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let looks = sb.inbox_looks() - before;
    assert!(looks < 150, "{looks} looks in a second");

    let log = twelve_notes_waiting(dir.path(), &ws).await;
    for file in ["x1.json", "x2.json"] {
        drop_message(
            &ws,
            "lead",
            file,
            &message("msg_same", "status_update", "w2", "lead", file),
        );
    }
    eventually("the second refused", || {
        (files(&ws.join("rejected/lead")) == ["x2.json"]).then_some(())
    })
    .await;
    let text = fs::read_to_string(&log).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("refused inbox/lead/x2.json"))
        .unwrap();
    assert!(
        line.contains("reuses the id `msg_same` of inbox/lead/x1.json, which is being delivered"),
        "{line}"
    );
    assert!(files(&ws.join("inbox/lead")).contains(&"x1.json".to_owned()));
    sb.stop();
    floor.close().await.unwrap();
}
