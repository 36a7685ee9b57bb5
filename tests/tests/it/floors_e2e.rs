//! Named floors end to end with the real `ofc` binary: `ofc floors create | ls | show |
//! update | rm` (`--json`), `ofc run --floor X` interactive over stdin while `ofc floors
//! update` changes the agent's prompt and removes its furniture — the scripted model (which
//! records every request) is sent the new system prompt on the next turn, no longer offered
//! the furniture's tools, and a call to one gets the clean "unknown tool" error — and
//! `ofc sessions ls --floor X`; bad names, a missing floor and an invalid file are refused
//! with what is wrong.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p hub-server --bins`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::{Interactive, json_in, run_in};
use crate::run_e2e::{ModelServer, chat_of, pieces};

fn blueprint(endpoint: &str, prompt: &str, with_board: bool) -> String {
    let board = if with_board {
        "furniture:\n  - {name: board, type: taskboard}\n"
    } else {
        ""
    };
    let uses = if with_board { "[board]" } else { "[]" };
    format!(
        "name: floor-test\ndefaults:\n  endpoint: {endpoint}\n{board}agents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    furniture: {uses}\n    prompt: \"{prompt}\"\n"
    )
}

fn tools_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_running_named_floor_takes_an_update_on_its_next_turn() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dir = proj.path();
    let model = ModelServer::start(&[
        (
            "keeper-model",
            vec![
                pieces(&["First ", "answer."]),
                pieces(&["TOOL board__list_tasks {}"]),
                pieces(&["The board ", "is gone."]),
            ],
        ),
        ("scribe-model", vec![pieces(&["Scribe ", "here."])]),
    ]);
    std::fs::write(
        dir.join("blueprint.yaml"),
        blueprint(&model.endpoint, "PROMPT-ONE: keep notes.", true),
    )
    .unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");

    // Created, listed, shown; the record is the floor (0600, under .ofc/floors/).
    let created = json_in(
        &ofc,
        dir,
        &["floors", "create", "blueprint.yaml", "--name", "demo"],
    );
    assert_eq!(created["name"], "demo");
    assert_eq!(created["generation"], 1);
    let record = dir.join(".ofc/floors/demo.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let ls = json_in(&ofc, dir, &["floors", "ls"]);
    assert_eq!(ls["floors"][0]["name"], "demo", "{ls}");
    let shown = json_in(&ofc, dir, &["floors", "show", "demo"]);
    assert!(shown["blueprint"].as_str().unwrap().contains("PROMPT-ONE"));
    // The file is only where it started: changing it changes nothing.
    std::fs::write(dir.join("blueprint.yaml"), "not: [a blueprint").unwrap();

    let mut child = Interactive::start(home.path(), dir, &["--floor", "demo"], &[])
        .within(Duration::from_secs(30));
    let session = child.ready();
    child.say("hello");
    child.wait_for("\"type\":\"turn_ended\"");

    // Updated while it runs: a new prompt, and the board gone.
    std::fs::write(
        dir.join("v2.yaml"),
        blueprint(&model.endpoint, "PROMPT-TWO: the board is gone.", false),
    )
    .unwrap();
    let update = json_in(
        &ofc,
        dir,
        &["floors", "update", "demo", "--from-file", "v2.yaml"],
    );
    assert_eq!(update["generation"], 2);
    assert_eq!(
        update["mutations"],
        serde_json::json!([
            {"op": "update", "kind": "agent", "id": "@keeper", "fields": ["furniture", "prompt"]},
            {"op": "remove", "kind": "furniture", "id": "board"},
        ])
    );
    child.wait_for_err("floor demo: generation 2 applied");
    child.say("and now?");
    child.wait_for("The board is gone.");
    child.wait_for("\"type\":\"turn_ended\"");

    // @keeper leaves, @scribe joins.
    std::fs::write(
        dir.join("v3.yaml"),
        format!(
            "name: floor-test\ndefaults:\n  endpoint: {}\nagents:\n  - {{id: \"@scribe\", model: scribe-model, activation: always, prompt: SCRIBE}}\n",
            model.endpoint
        ),
    )
    .unwrap();
    let update = json_in(
        &ofc,
        dir,
        &["floors", "update", "demo", "--from-file", "v3.yaml"],
    );
    assert_eq!(
        update["mutations"],
        serde_json::json!([
            {"op": "remove", "kind": "agent", "id": "@keeper"},
            {"op": "add", "kind": "agent", "id": "@scribe"},
        ])
    );
    child.wait_for_err("floor demo: generation 3 applied");
    child.say("who is here?");
    child.wait_for("Scribe here.");
    child.wait_for("\"type\":\"turn_ended\"");
    let (code, stderr) = child.end();
    assert_eq!(code, 0, "ofc run: {stderr}");

    let requests = model.requests();
    assert_eq!(
        requests.len(),
        4,
        "one call, a tool round and its answer, then @scribe's (and no more of @keeper)"
    );
    let scribe = chat_of(&requests[3].1);
    assert!(
        scribe[0].2.contains("You are @scribe on a floor"),
        "{scribe:?}"
    );
    assert_eq!(scribe.last().unwrap().2, "who is here?");
    let system = |i: usize| chat_of(&requests[i].1)[0].2.clone();
    assert!(system(0).contains("PROMPT-ONE") && !system(0).contains("PROMPT-TWO"));
    assert!(tools_of(&requests[0].1).contains(&"board__list_tasks".to_owned()));
    // The next turn: the new prompt, the old conversation, no board.
    assert!(
        system(1).contains("PROMPT-TWO") && !system(1).contains("PROMPT-ONE"),
        "{}",
        system(1)
    );
    let said: Vec<String> = chat_of(&requests[1].1)[1..]
        .iter()
        .map(|(_, _, c)| c.clone())
        .collect();
    assert_eq!(said, ["hello", "First answer.", "and now?"]);
    assert!(
        tools_of(&requests[1].1)
            .iter()
            .all(|t| !t.starts_with("board__"))
    );
    // Its call to the removed furniture got a clean error it could answer.
    let last = chat_of(&requests[2].1);
    assert!(
        last.iter()
            .any(|(role, _, c)| role == "tool" && c.contains("unknown tool `board__list_tasks`")),
        "{last:?}"
    );

    // The session is the floor's.
    let ls = json_in(&ofc, dir, &["sessions", "ls", "--floor", "demo"]);
    let ids: Vec<&str> = ls["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [session.as_str()]);

    // Refused, with what is wrong; the floor unchanged.
    std::fs::write(dir.join("bad.yaml"), "agents: 5\n").unwrap();
    for (args, said) in [
        (
            vec!["floors", "create", "v2.yaml", "--name", "Bad/Name"],
            "is not a floor name",
        ),
        (
            vec!["floors", "create", "v2.yaml", "--name", "demo"],
            "floor `demo` exists already",
        ),
        (
            vec!["floors", "update", "demo", "--from-file", "bad.yaml"],
            "the blueprint is not valid",
        ),
        (
            vec!["floors", "update", "demo", "--from-file", "nope.yaml"],
            "nope.yaml does not exist",
        ),
        (vec!["floors", "show", "missing"], "no floor `missing`"),
        (
            vec!["run", "--floor", "missing", "hi"],
            "no floor `missing`",
        ),
        (vec!["run", "--floor", "../x", "hi"], "is not a floor name"),
    ] {
        let r = run_in(&ofc, dir, &args);
        r.assert_code(1);
        assert!(r.stderr.contains(said), "{args:?}: {}", r.stderr);
    }
    assert_eq!(
        json_in(&ofc, dir, &["floors", "show", "demo"])["generation"],
        3
    );
    let same = json_in(
        &ofc,
        dir,
        &["floors", "update", "demo", "--from-file", "v3.yaml"],
    );
    assert_eq!(same["mutations"], serde_json::json!([]));
    assert_eq!(same["generation"], 3);

    assert_eq!(
        json_in(&ofc, dir, &["floors", "rm", "demo"])["removed"],
        "demo"
    );
    assert_eq!(
        json_in(&ofc, dir, &["floors", "ls"])["floors"],
        serde_json::json!([])
    );
    assert!(!record.exists());
}

#[test]
fn ofc_serve_serves_a_named_floor_and_applies_its_updates() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dir = proj.path();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["Served ", "once."]),
            pieces(&["Served ", "twice."]),
        ],
    )]);
    std::fs::write(
        dir.join("blueprint.yaml"),
        blueprint(&model.endpoint, "SERVE-ONE", false),
    )
    .unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    json_in(
        &ofc,
        dir,
        &["floors", "create", "blueprint.yaml", "--name", "served"],
    );
    let served = crate::serve_e2e::serve(home.path(), dir, &["--floor", "served"]);
    let http = reqwest::Client::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let post = |path: String, token: &str, body: Value| -> Value {
        rt.block_on(async {
            let r = http
                .post(format!("{}{path}", served.url))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{path}: {}", r.status());
            r.json().await.unwrap()
        })
    };
    let until = |what: &str, ok: &dyn Fn() -> bool| {
        for _ in 0..600 {
            if ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("timed out waiting for {what}");
    };
    let created = post(
        "/api/v1/sessions".to_owned(),
        &served.token,
        serde_json::json!({}),
    );
    let (id, token) = (
        created["id"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    );
    let say = |text: &str| {
        post(
            format!("/api/v1/sessions/{id}/messages"),
            &token,
            serde_json::json!({"content": text}),
        )
    };
    say("hello");
    until("the first answer", &|| model.requests().len() == 1);

    std::fs::write(
        dir.join("v2.yaml"),
        blueprint(&model.endpoint, "SERVE-TWO", false),
    )
    .unwrap();
    json_in(
        &ofc,
        dir,
        &["floors", "update", "served", "--from-file", "v2.yaml"],
    );
    // The session's floor says in its log when it has applied the change.
    let log = dir.join(".ofc/sessions").join(format!("{id}.jsonl"));
    until("floor_updated in the session", &|| {
        std::fs::read_to_string(&log)
            .is_ok_and(|t| t.contains("\"payload_type\":\"floor_updated\""))
    });
    say("again");
    until("the second answer", &|| model.requests().len() == 2);
    let requests = model.requests();
    let system = |i: usize| chat_of(&requests[i].1)[0].2.clone();
    assert!(system(0).contains("SERVE-ONE"), "{}", system(0));
    assert!(
        system(1).contains("SERVE-TWO") && !system(1).contains("SERVE-ONE"),
        "{}",
        system(1)
    );
    let ls = json_in(&ofc, dir, &["sessions", "ls", "--floor", "served"]);
    assert_eq!(ls["sessions"][0]["id"], id.as_str(), "{ls}");

    // Another floor's server neither lists nor takes up this floor's session (one server
    // a project at a time).
    drop(served);
    json_in(
        &ofc,
        dir,
        &["floors", "create", "blueprint.yaml", "--name", "other"],
    );
    let other = crate::serve_e2e::serve(home.path(), dir, &["--floor", "other"]);
    let status = |method: reqwest::Method, path: String| -> (u16, Value) {
        rt.block_on(async {
            let r = http
                .request(method, format!("{}{path}", other.url))
                .bearer_auth(&other.token)
                .send()
                .await
                .unwrap();
            let s = r.status().as_u16();
            (s, r.json().await.unwrap_or(Value::Null))
        })
    };
    let (s, list) = status(reqwest::Method::GET, "/api/v1/sessions".into());
    assert_eq!(s, 200, "{list}");
    assert!(
        !list.to_string().contains(id.as_str()),
        "another floor's session listed: {list}"
    );
    for (method, path) in [
        (reqwest::Method::GET, format!("/api/v1/sessions/{id}")),
        (
            reqwest::Method::POST,
            format!("/api/v1/sessions/{id}/resume"),
        ),
        (
            reqwest::Method::GET,
            format!("/api/v1/sessions/{id}/events"),
        ),
    ] {
        let (s, v) = status(method, path.clone());
        assert_eq!(s, 404, "{path}: {v}");
    }
}

/// A stdio MCP server (the official Python SDK, `scripts/peers/mcp-python`) whose one tool
/// writes `started` next to itself, then waits `seconds`.
const SLOW_MCP: &str = r#"
import pathlib, sys
import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("slow")
here = pathlib.Path(sys.argv[1])

@server.tool()
async def wait(seconds: float) -> str:
    """Waits, then says so."""
    (here / "started").write_text("started")
    await anyio.sleep(seconds)
    return f"waited {seconds} s"

server.run()
"#;

/// Furniture removed by `ofc floors update` while an agent's call to it is in flight: the call
/// fails at once with an error the agent is given (not after the tool's 60 s), the turn ends,
/// and the floor goes on.
#[test]
fn furniture_removed_mid_call_fails_the_call_cleanly_and_the_floor_goes_on() {
    let python = {
        let out =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers/mcp-python"))
                .output()
                .expect("scripts/peers/mcp-python");
        assert!(
            out.status.success(),
            "the MCP Python SDK is unavailable: {out:?}"
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dir = proj.path();
    std::fs::write(dir.join("slow_mcp.py"), SLOW_MCP).unwrap();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            pieces(&["TOOL slow__wait {\"seconds\": 60}"]),
            pieces(&["The call ", "failed."]),
            pieces(&["Still ", "here."]),
        ],
    )]);
    let with_slow = format!(
        "name: floor-test\ndefaults:\n  endpoint: {}\nfurniture:\n  - name: slow\n    type: mcp\n    command: {python:?}\n    args: [\"slow_mcp.py\", {:?}]\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    furniture: [slow]\n    prompt: keep\n",
        model.endpoint,
        dir.display().to_string()
    );
    std::fs::write(dir.join("blueprint.yaml"), with_slow).unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    json_in(
        &ofc,
        dir,
        &["floors", "create", "blueprint.yaml", "--name", "slowdemo"],
    );
    let mut child = Interactive::start(home.path(), dir, &["--floor", "slowdemo"], &[])
        .within(Duration::from_secs(30));
    child.ready();
    child.say("wait for me");
    // The call is in flight once the tool has started.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !dir.join("started").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow tool was never called"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let removed_at = std::time::Instant::now();
    std::fs::write(
        dir.join("v2.yaml"),
        format!(
            "name: floor-test\ndefaults:\n  endpoint: {}\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    furniture: []\n    prompt: keep\n",
            model.endpoint
        ),
    )
    .unwrap();
    json_in(
        &ofc,
        dir,
        &["floors", "update", "slowdemo", "--from-file", "v2.yaml"],
    );
    child.wait_for("The call failed.");
    child.wait_for("\"type\":\"turn_ended\"");
    let took = removed_at.elapsed();
    assert!(
        took < Duration::from_secs(45),
        "the call in flight was not cut when its furniture went ({took:?}): it ran out its 60 s"
    );
    child.wait_for_err("floor slowdemo: generation 2 applied");
    // The agent was given the failure as the tool's result.
    let requests = model.requests();
    let context = chat_of(&requests[1].1);
    let (_, _, result) = context
        .iter()
        .find(|(role, _, _)| role == "tool")
        .unwrap_or_else(|| panic!("no tool result sent: {context:?}"));
    assert!(
        !result.contains("waited"),
        "the tool's answer came through: {result}"
    );
    assert!(
        result.to_lowercase().contains("error") || result.contains("slow"),
        "{result}"
    );
    // The floor goes on.
    child.say("and now?");
    child.wait_for("Still here.");
    child.wait_for("\"type\":\"turn_ended\"");
    let (code, stderr) = child.end();
    assert_eq!(code, 0, "ofc run: {stderr}");
}
