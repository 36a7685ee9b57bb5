//! The task board of an OpenAgents project (seed 002): `.openagents/tasks.jsonl` changed by
//! the floor's agents while a second writer — a separate process taking the loop's lock and
//! rewriting the file in place, as the loop does — changes it too; the project's commands as
//! tools; errors that name file and line.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use index_schema::openagents::{Status, parse_tasks};
use runtime::furniture::{Class, OpenAgentsBoard};
use runtime::llm::Toolbox;
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn task_line(id: &str, status: &str, priority: u8, created: &str, deps: Value) -> String {
    json!({"id": id, "title": format!("task {id}"), "description": "", "status": status,
        "priority": priority, "type": "task", "labels": [], "deps": deps, "commits": [],
        "createdAt": created, "updatedAt": created, "closedAt": null})
    .to_string()
}

fn project(dir: &Path, project: Value, tasks: &[String]) -> std::path::PathBuf {
    let oa = dir.join(".openagents");
    fs::create_dir_all(&oa).unwrap();
    fs::write(
        oa.join("project.json"),
        serde_json::to_vec_pretty(&project).unwrap(),
    )
    .unwrap();
    let mut text = tasks.join("\n");
    text.push('\n');
    fs::write(oa.join("tasks.jsonl"), text).unwrap();
    oa
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_and_a_concurrent_loop_change_tasks_jsonl_without_losing_or_tearing_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let seed: Vec<String> = (0..3)
        .map(|i| {
            task_line(
                &format!("demo-seed{i}"),
                "open",
                1,
                "2025-01-01T00:00:00Z",
                json!([]),
            )
        })
        .collect();
    let oa = project(
        dir.path(),
        json!({"projectId": "demo", "idPrefix": "demo"}),
        &seed,
    );
    let board = Arc::new(OpenAgentsBoard::open(&oa, Duration::from_secs(30)).unwrap());

    const ROUNDS: usize = 40;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/openagents_writer.py");
    let writer = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(&oa)
        .arg(ROUNDS.to_string())
        .output();
    let agents = (0..4).map(|k| {
        let board = Arc::clone(&board);
        async move {
            let mut mine = Vec::new();
            for i in 0..10 {
                let added = board
                    .call("add_task", obj(json!({"title": format!("floor {k}.{i}"), "priority": k % 5, "labels": ["floor"]})))
                    .await
                    .unwrap();
                let id = added["id"].as_str().unwrap().to_owned();
                let closed = board
                    .call("close_task", obj(json!({"id": id, "reason": format!("done by agent {k}"), "commits": ["abc123"]})))
                    .await
                    .unwrap();
                assert_eq!(closed["status"], "closed");
                // Reads during the other writer's in-place writes never see a torn file.
                let listed = board.call("list_tasks", obj(json!({"label": "floor"}))).await.unwrap();
                assert!(listed["count"].as_u64().unwrap() >= 1);
                mine.push(id);
            }
            mine
        }
    });
    let (out, mine) = tokio::join!(writer, futures::future::join_all(agents));
    let out = out.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script_ids: Vec<String> = serde_json::from_slice::<Value>(&out.stdout).unwrap()["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(script_ids.len(), ROUNDS);

    let text = fs::read_to_string(oa.join("tasks.jsonl")).unwrap();
    let tasks = parse_tasks(&text).unwrap_or_else(|d| panic!("a torn or invalid line: {d:?}"));
    assert_eq!(
        tasks.len(),
        3 + ROUNDS + 40,
        "every task of every writer is there"
    );
    for (k, ids) in mine.iter().enumerate() {
        for id in ids {
            assert!(id.starts_with("demo-") && id.len() >= 11, "{id}");
            let t = &tasks.iter().find(|t| &t.task.id == id).unwrap().task;
            assert_eq!(t.status, Status::Closed);
            assert_eq!(
                t.close_reason.as_deref(),
                Some(format!("done by agent {k}").as_str())
            );
            assert!(t.closed_at.is_some());
            assert_eq!(t.commits, ["abc123"]);
        }
    }
    for (i, id) in script_ids.iter().enumerate() {
        let t = &tasks.iter().find(|t| &t.task.id == id).unwrap().task;
        let closed_by_script = i + 1 < script_ids.len();
        assert_eq!(t.status == Status::Closed, closed_by_script, "{id}");
    }
    assert!(!oa.join("agent.lock").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_boards_tools_follow_the_loops_rules_and_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    // Written by another tool, with spaces: a line the board does not change stays as it is.
    let spaced =
        task_line("oa-a", "open", 2, "2025-01-01T00:00:00Z", json!([])).replace("\",\"", "\", \"");
    let tasks = vec![
        spaced.clone(),
        task_line(
            "oa-b",
            "open",
            0,
            "2025-01-02T00:00:00Z",
            json!([{"id": "oa-c", "type": "blocks"}]),
        ),
        task_line("oa-c", "in_progress", 1, "2025-01-03T00:00:00Z", json!([])),
        task_line("oa-d", "open", 0, "2025-01-04T00:00:00Z", json!([])),
    ];
    let oa = project(
        dir.path(),
        json!({"projectId": "demo", "testCommands": ["echo tests pass", "echo bad >&2; exit 4", "echo never"],
               "typecheckCommands": ["pwd"]}),
        &tasks,
    );
    let board = OpenAgentsBoard::open(&oa, Duration::from_millis(200)).unwrap();
    let classes: Vec<(String, Class)> = board
        .catalog()
        .into_iter()
        .map(|t| (t.spec.name, t.class))
        .collect();
    assert!(classes.contains(&("list_tasks".into(), Class::Read)));
    assert!(classes.contains(&("close_task".into(), Class::Write)));
    assert!(classes.contains(&("run_tests".into(), Class::Execute)));
    assert!(classes.contains(&("run_typecheck".into(), Class::Execute)));

    // Ready work in the loop's order: P0 first, then oldest; oa-b waits for oa-c.
    let ready = board
        .call("list_tasks", obj(json!({"ready": true})))
        .await
        .unwrap();
    let ids: Vec<&str> = ready["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["oa-d", "oa-c", "oa-a"]);

    let found = board
        .call(
            "add_task",
            obj(json!({"title": "found while doing c", "discoveredFrom": "oa-c", "type": "bug"})),
        )
        .await
        .unwrap();
    assert!(
        found["id"].as_str().unwrap().starts_with("oa-"),
        "the default idPrefix"
    );
    assert_eq!(found["source"]["discoveredFrom"], "oa-c");
    assert_eq!(
        found["deps"],
        json!([{"id": "oa-c", "type": "discovered-from"}])
    );
    assert_eq!(found["status"], "open");
    assert_eq!(found["priority"], 2);

    for (tool, args, says) in [
        (
            "update_task",
            json!({"id": "oa-a", "status": "closed"}),
            "close a task with close_task",
        ),
        ("close_task", json!({"id": "oa-a"}), "`reason` is required"),
        (
            "close_task",
            json!({"id": "oa-a", "reason": "  "}),
            "must say why",
        ),
        (
            "close_task",
            json!({"id": "oa-zz", "reason": "x"}),
            "no task `oa-zz`",
        ),
        (
            "add_task",
            json!({"title": "x", "owner": "me"}),
            "`owner` is not an argument",
        ),
        (
            "add_task",
            json!({"title": "x", "discoveredFrom": "oa-nope"}),
            "no task `oa-nope`",
        ),
        (
            "add_task",
            json!({"title": "x", "priority": 7}),
            "0 (P0) to 4",
        ),
        (
            "add_task",
            json!({"title": "x".repeat(501)}),
            "1 to 500 characters",
        ),
        ("list_tasks", json!({"status": "done"}), "not a status"),
    ] {
        let e = board.call(tool, obj(args)).await.unwrap_err();
        assert!(e.0.contains(says), "{tool}: {}", e.0);
    }
    let closed = board
        .call(
            "close_task",
            obj(json!({"id": "oa-c", "reason": "fixed in 1a2b"})),
        )
        .await
        .unwrap();
    assert_eq!(closed["closeReason"], "fixed in 1a2b");
    let reopened = board
        .call("update_task", obj(json!({"id": "oa-c", "status": "open"})))
        .await
        .unwrap();
    assert_eq!(reopened["closedAt"], Value::Null);
    assert!(reopened.get("closeReason").is_none());

    let text = fs::read_to_string(oa.join("tasks.jsonl")).unwrap();
    assert_eq!(text.lines().next(), Some(spaced.as_str()));

    // The project's commands: in order, up to the first failure, in the project root.
    let tests = board.call("run_tests", Map::new()).await.unwrap();
    assert_eq!(tests["passed"], false);
    let results = tests["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["output"], "tests pass\n");
    assert_eq!(results[1]["exitCode"], 4);
    assert_eq!(results[1]["output"], "bad\n");
    let check = board.call("run_typecheck", Map::new()).await.unwrap();
    assert_eq!(check["passed"], true);
    assert_eq!(
        check["results"][0]["output"].as_str().unwrap().trim(),
        dir.path().canonicalize().unwrap().display().to_string()
    );

    // A live process holding the loop's lock: changes and reads wait, then say who holds it.
    let mut holder = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    fs::write(
        oa.join("agent.lock"),
        format!("{}\n2025-01-01T00:00:00Z\nloop-1", holder.id()),
    )
    .unwrap();
    let e = board
        .call("add_task", obj(json!({"title": "blocked"})))
        .await
        .unwrap_err();
    assert!(
        e.0.contains(&format!("held by pid {}", holder.id())),
        "{}",
        e.0
    );
    assert!(e.0.contains("session loop-1"), "{}", e.0);
    // Reads wait too: the loop writes in place, a read in the middle could see half a file.
    let e = board.call("list_tasks", Map::new()).await.unwrap_err();
    assert!(
        e.0.starts_with("the task board cannot be read now"),
        "{}",
        e.0
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Its holder gone, the lock is stale and taken over.
    board
        .call("add_task", obj(json!({"title": "after the loop"})))
        .await
        .unwrap();
    assert!(!oa.join("agent.lock").exists());

    // A broken line: the board says where, and changes nothing.
    let text = fs::read_to_string(oa.join("tasks.jsonl")).unwrap();
    let broken = text.replacen("\"status\":\"open\"", "\"status\":\"done\"", 1);
    fs::write(oa.join("tasks.jsonl"), &broken).unwrap();
    let e = board
        .call("add_task", obj(json!({"title": "x"})))
        .await
        .unwrap_err();
    assert!(e.0.starts_with("tasks.jsonl:1:"), "{}", e.0);
    assert!(e.0.contains("status"), "{}", e.0);
    assert_eq!(fs::read_to_string(oa.join("tasks.jsonl")).unwrap(), broken);
    let e = OpenAgentsBoard::open(&oa, Duration::from_millis(10)).unwrap_err();
    assert!(e.starts_with("tasks.jsonl:1:"), "{e}");
    fs::write(
        oa.join("project.json"),
        "{\"projectId\": \"demo\",\n \"testComands\": []}",
    )
    .unwrap();
    let e = OpenAgentsBoard::open(&oa, Duration::from_millis(10)).unwrap_err();
    assert!(e.starts_with("project.json:2:"), "{e}");
    assert!(e.contains("testComands"), "{e}");
}

/// A sandbox that records what it is asked to run (a stand-in for the podman sandbox, whose
/// own tests are `sandbox.rs`): the board's routing is under test here.
#[derive(Debug, Default)]
struct RecordingSandbox(std::sync::Mutex<Vec<Map<String, Value>>>);

#[async_trait::async_trait]
impl Toolbox for RecordingSandbox {
    async fn tools(&self) -> Result<Vec<runtime::llm::ToolSpec>, runtime::llm::ToolError> {
        Ok(Vec::new())
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Value, runtime::llm::ToolError> {
        assert_eq!(tool, "bash");
        let failing = args["command"].as_str().unwrap().contains("fail");
        self.0.lock().unwrap().push(args);
        Ok(Value::String(if failing {
            "boom\n[exit code 2]".into()
        } else {
            "ran in the container\n".into()
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sandbox_enabled_the_commands_run_in_the_floors_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let oa = project(
        dir.path(),
        json!({"projectId": "demo", "testCommands": ["make test", "make fail"],
               "typecheckCommands": ["make check"],
               "sandbox": {"enabled": true, "timeoutMs": 42000}}),
        &[],
    );
    let board = OpenAgentsBoard::open(&oa, Duration::from_secs(1)).unwrap();
    let sandbox = Arc::new(RecordingSandbox::default());
    board.use_sandbox(sandbox.clone());
    let r = board.call("run_tests", Map::new()).await.unwrap();
    assert_eq!(r["where"], "sandbox");
    assert_eq!(r["passed"], false);
    assert_eq!(r["results"][0]["output"], "ran in the container\n");
    assert_eq!(r["results"][1]["exitCode"], 2);
    let asked = sandbox.0.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            obj(json!({"command": "make test", "timeout": 42})),
            obj(json!({"command": "make fail", "timeout": 42}))
        ]
    );
    // Without `sandbox.enabled`, a sandbox given to the board is not used.
    let plain = project(
        &dir.path().join("plain"),
        json!({"projectId": "demo", "testCommands": ["echo local"]}),
        &[],
    );
    let board = OpenAgentsBoard::open(&plain, Duration::from_secs(1)).unwrap();
    board.use_sandbox(sandbox.clone());
    let r = board.call("run_tests", Map::new()).await.unwrap();
    assert_eq!(r["where"], "project root");
    assert_eq!(r["results"][0]["output"], "local\n");
    assert_eq!(sandbox.0.lock().unwrap().len(), 2);
}
