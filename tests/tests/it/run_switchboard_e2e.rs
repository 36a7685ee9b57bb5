//! `ofc run` with a Switchboard agent (seed 004), end to end: the real `ofc` binary, an LLM
//! agent on a scripted model, and a `type: switchboard` agent played by a separate process
//! (`tests/fixtures/switchboard/file_agent.py`) that only reads its inbox and writes result
//! files. Then `ofc run` killed (SIGKILL) again and again while it delivers a backlog of
//! inbox messages: each reaches a floor exactly once.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Ofc;
use crate::common::run::blueprint;
use crate::run_e2e::{ModelServer, pieces, start_interactive};

fn file_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/switchboard/file_agent.py")
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

#[test]
fn an_llm_agent_delegates_to_a_file_agent_and_its_result_comes_back_on_the_floor() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[(
        "lead-model",
        vec![
            pieces(&[
                "Asking the worker. ",
                "@worker? count the words in: alpha beta gamma",
            ]),
            pieces(&["The worker counted them. Done, @user."]),
        ],
    )]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\nagents:\n  - {{id: \"@lead\", model: lead-model}}\n  - id: \"@worker\"\n    type: switchboard\n    role: coder 1\n    team: backend\n    persona: You count words.\n",
            model.endpoint
        ),
    );
    let ws = proj.path().join(".switchboard");
    // The file agent: a separate process, started before ofc makes the directory.
    let agent = Command::new("python3")
        .arg(file_agent())
        .arg(&ws)
        .args(["worker", "1", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs the file agent");
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args([
        "--json",
        "run",
        "@lead? how many words are in alpha beta gamma?",
    ]));
    let agent = agent.wait_with_output().unwrap();
    assert!(
        agent.status.success(),
        "{}",
        String::from_utf8_lossy(&agent.stderr)
    );
    r.assert_code(0);
    let handled: Value =
        serde_json::from_str(String::from_utf8_lossy(&agent.stdout).trim()).unwrap();
    let (task, answer) = (&handled["task"], &handled["answer"]);

    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let messages: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| &e["message"])
        .collect();
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["from"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("@user", "@lead? how many words are in alpha beta gamma?"),
            (
                "@lead",
                "Asking the worker. @worker? count the words in: alpha beta gamma"
            ),
            ("@worker", "3 words"),
            ("@lead", "The worker counted them. Done, @user."),
        ]
    );
    // The question the file agent got, in the seed's schema; its answer on the floor keeps
    // replyTo.
    assert_eq!(task["action"], "delegate_task");
    assert_eq!(task["sender"], "lead");
    assert_eq!(task["recipient"], "worker");
    assert_eq!(task["persona"], "You count words.");
    assert_eq!(task["team"], "backend");
    let meta = &messages[2]["metadata"]["switchboard"];
    assert_eq!(meta["id"], answer["id"]);
    assert_eq!(meta["replyTo"], task["id"]);
    assert_eq!(meta["action"], "submit_result");
    // The lead's model saw the worker's answer.
    let requests = model.requests();
    let last = requests.last().unwrap().1["messages"].to_string();
    assert!(last.contains("3 words"), "{last}");
    // Receipts for both deliveries, both files archived, no inbox left with anything.
    let task_id = task["id"].as_str().unwrap();
    let answer_id = answer["id"].as_str().unwrap();
    let r1 = read_json(&ws.join(format!("outbox/lead/receipt_{task_id}.json")));
    assert_eq!(r1["summary"], "Message delivered to 'worker' inbox");
    assert_eq!(r1["status"], "delivered");
    let r2 = read_json(&ws.join(format!("outbox/worker/receipt_{answer_id}.json")));
    assert_eq!(r2["summary"], "Message delivered to 'lead' inbox");
    assert_eq!(
        files(&ws.join("archive/lead")),
        [format!("{answer_id}.json")]
    );
    assert_eq!(
        files(&ws.join("archive/worker")),
        [format!("{task_id}.json")]
    );
    assert!(files(&ws.join("inbox/lead")).is_empty());
    assert!(files(&ws.join("inbox/worker")).is_empty());
    // The rest of the seed's layout.
    assert_eq!(fs::read_to_string(ws.join("auth_token")).unwrap().len(), 64);
    assert_eq!(
        read_json(&ws.join("state.json"))["chatAgents"]["worker"]["role"],
        "coder 1"
    );
    assert!(
        !ws.join("server_info.json").exists(),
        "removed when the run ends"
    );
    let run = read_json(&proj.path().join(".ofc/run.json"));
    assert!(
        run["switchboard"]["mcp"]
            .as_str()
            .unwrap()
            .ends_with("/sse")
    );
}

/// The messages of every transcript of the project, counted by their Switchboard id.
fn delivered(proj: &Path) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for entry in fs::read_dir(proj.join(".ofc/logs")).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".jsonl") {
            continue;
        }
        for line in fs::read_to_string(&path).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["kind"] == "message"
                && let Some(id) = v["message"]["metadata"]["switchboard"]["id"].as_str()
            {
                *seen.entry(id.to_owned()).or_default() += 1;
            }
        }
    }
    seen
}

#[test]
fn killing_ofc_run_mid_delivery_and_resuming_delivers_each_message_exactly_once() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[("lead-model", vec![pieces(&["noted"])])]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\nagents:\n  - {{id: \"@lead\", model: lead-model}}\n  - {{id: \"@worker\", type: switchboard, role: coder 1}}\n",
            model.endpoint
        ),
    );
    // A backlog the file agent wrote while no ofc ran: progress notes for the lead.
    const N: usize = 60;
    let inbox = proj.path().join(".switchboard/inbox/lead");
    fs::create_dir_all(&inbox).unwrap();
    let ids: Vec<String> = (0..N)
        .map(|i| format!("msg_1700000000{i:03}_note"))
        .collect();
    for (i, id) in ids.iter().enumerate() {
        let m = json!({"id": id, "action": "status_update", "sender": "worker", "recipient": "lead",
            "payload": format!("progress {i}"), "createdAt": "2025-01-01T00:00:00.000Z"});
        let tmp = inbox.join(format!(".{id}.tmp"));
        fs::write(&tmp, m.to_string()).unwrap();
        fs::rename(&tmp, inbox.join(format!("{id}.json"))).unwrap();
    }
    let archive = proj.path().join(".switchboard/archive/lead");
    // Killed three times, each time once more of the backlog is through.
    for stop_at in [8, 25, 42] {
        let mut ofc = start_interactive(proj.path(), home.path());
        let start = Instant::now();
        while files(&archive).len() < stop_at {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "delivery stalled"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        ofc.kill().unwrap();
        ofc.wait().unwrap();
    }
    let mut ofc = start_interactive(proj.path(), home.path());
    let start = Instant::now();
    while files(&archive).len() < N {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the rest was not delivered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Every message once on a floor, archived once, with its receipt; none refused.
    let seen = delivered(proj.path());
    for id in &ids {
        assert_eq!(seen.get(id), Some(&1), "{id}: {seen:?}");
    }
    assert_eq!(files(&archive).len(), N);
    assert!(files(&inbox).is_empty());
    assert!(files(&proj.path().join(".switchboard/rejected/lead")).is_empty());
    let outbox = proj.path().join(".switchboard/outbox/worker");
    for id in &ids {
        assert!(outbox.join(format!("receipt_{id}.json")).is_file(), "{id}");
    }
    ofc.kill().unwrap();
    ofc.wait().unwrap();
    // Where the kills landed depends on timing; what the restarts found is in the log.
    let mut recovered = 0;
    for entry in fs::read_dir(proj.path().join(".ofc/logs")).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".agents.log") {
            let log = fs::read_to_string(&path).unwrap();
            recovered += log
                .lines()
                .filter(|l| l.contains("when ofc stopped") || l.contains("before ofc stopped"))
                .count();
        }
    }
    eprintln!("deliveries begun by a killed run and finished by the next: {recovered}");
    drop(home);
}
