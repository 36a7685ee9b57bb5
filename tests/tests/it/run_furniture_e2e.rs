//! `ofc run` with furniture, end to end: the real `ofc` binary, a real MCP server (PyPI
//! `mcp-server-time` over stdio, installed by `scripts/install-test-deps`), the built-in task
//! board, `floor_manager` policies, and LLM agents on a scripted model calling the tools.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::{blueprint, processes_with, tag};
use crate::run_e2e::{ModelServer, chat_of, pieces, start_interactive};

/// The `mcp-server-time` executable; fails (never skips) when it is not installed.
fn time_server() -> String {
    let path = std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from)
        .join("mcp/time-venv/bin/mcp-server-time");
    assert!(
        path.is_file(),
        "mcp-server-time is not installed at {}: run scripts/install-test-deps (or scripts/peers/mcp-servers)",
        path.display()
    );
    path.display().to_string()
}

#[test]
fn llm_agents_call_furniture_under_the_floor_managers_policies() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[
        (
            "plan-model",
            vec![
                pieces(&[
                    "TOOL time__get_current_time {\"timezone\": \"Asia/Tokyo\"}",
                    "TOOL board__add_task {\"title\": \"ship it\"}",
                ]),
                pieces(&["Noted the time and the task. @checker? look at the board"]),
                pieces(&["Thanks, all done."]),
            ],
        ),
        (
            "check-model",
            vec![
                pieces(&[
                    "TOOL board__add_task {\"title\": \"sneaky\"}",
                    "TOOL board__list_tasks {}",
                ]),
                pieces(&["One task on the board, @user."]),
            ],
        ),
    ]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\nfurniture:\n  - {{name: time, type: mcp, command: {:?}, args: [--local-timezone, UTC]}}\n  - {{name: board, type: taskboard}}\nfloor_manager:\n  auto_approve_read: true\n  policies:\n    - {{access: write, agents: [\"@planner\"], workstation: board, decision: approve}}\n    - {{access: execute, agents: [\"@planner\"], workstation: time, decision: approve}}\nagents:\n  - {{id: \"@planner\", model: plan-model, furniture: [time, board]}}\n  - {{id: \"@checker\", model: check-model, furniture: [board], tool_context: summary}}\n",
            model.endpoint,
            time_server()
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args([
        "--json",
        "run",
        "@planner? what time is it in Tokyo? note a task",
    ]));
    r.assert_code(0);
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
    let planner = messages.iter().find(|m| m["from"] == "@planner").unwrap();
    let checker = messages.iter().find(|m| m["from"] == "@checker").unwrap();
    // The planner's calls reached the time server and the board.
    assert_eq!(planner["tool_calls"][0]["name"], "time__get_current_time");
    let time = planner["tool_results"][0].as_str().unwrap();
    assert!(time.contains("Asia/Tokyo"), "{time}");
    assert_eq!(planner["tool_results"][1]["title"], "ship it");
    // The checker holds read only on the board: its add_task is refused, its list works.
    let refused = checker["tool_results"][0].as_str().unwrap();
    assert!(
        refused.starts_with(
            "[error: refused: `board__add_task` is a write tool and @checker holds read on `board`"
        ),
        "{refused}"
    );
    assert_eq!(checker["tool_results"][1]["count"], 1);
    assert_eq!(checker["tool_results"][1]["tasks"][0]["title"], "ship it");

    // What the models were told: the planner gets both pieces, the checker only what it holds,
    // and the checker saw the planner's tool activity as `tool_context: summary` shows it.
    let requests = model.requests();
    let tools = |b: &Value| -> Vec<String> {
        b["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let plan = &requests
        .iter()
        .find(|(_, b)| b["model"] == "plan-model")
        .unwrap()
        .1;
    let plan_tools = tools(plan);
    for t in [
        "time__get_current_time",
        "time__convert_time",
        "board__add_task",
        "board__list_tasks",
    ] {
        assert!(plan_tools.iter().any(|x| x == t), "{t}: {plan_tools:?}");
    }
    let check = &requests
        .iter()
        .find(|(_, b)| b["model"] == "check-model")
        .unwrap()
        .1;
    let mut check_tools = tools(check);
    check_tools.sort();
    assert_eq!(check_tools, ["board__get_task", "board__list_tasks"]);
    let seen = chat_of(check);
    let from_planner = seen.iter().find(|(_, name, _)| name == "planner").unwrap();
    assert!(
        from_planner
            .2
            .contains("$ time__get_current_time {\"timezone\":\"Asia/Tokyo\"}"),
        "{from_planner:?}"
    );

    // The transcript keeps the calls, the results and the refusal.
    let logs = proj.path().join(".ofc/logs");
    let transcript = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap();
    assert!(transcript.contains("Asia/Tokyo"), "{transcript}");
    assert!(
        transcript.contains("refused: `board__add_task`"),
        "{transcript}"
    );
}

#[test]
fn furniture_that_does_not_start_is_reported_at_its_line() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    blueprint(
        proj.path(),
        "defaults:\n  endpoint: http://127.0.0.1:9/v1\n  model: m\nfurniture:\n  - {name: board, type: taskboard}\n  - {name: gone, type: mcp, command: /nonexistent/mcp-server}\nagents:\n  - {id: \"@a\", furniture: [gone]}\n",
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["run", "hello"]));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    // The unreachable model is found first; with a reachable one, the furniture is.
    assert!(r.stderr.contains("error: "), "{}", r.stderr);
    let model = ModelServer::start(&[("m", vec![pieces(&["hi"])])]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\n  model: m\nfurniture:\n  - {{name: board, type: taskboard}}\n  - {{name: gone, type: mcp, command: /nonexistent/mcp-server}}\nagents:\n  - {{id: \"@a\", furniture: [gone]}}\n",
            model.endpoint
        ),
    );
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["run", "hello"]));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("blueprint.yaml:6:5: furniture[1]: furniture `gone`: cannot start `/nonexistent/mcp-server`"),
        "{}",
        r.stderr
    );
    assert!(model.requests().is_empty(), "no agent ran");

    // A server that fails: what it printed is in the error and in the run's agents log.
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\n  model: m\nfurniture:\n  - {{name: liar, type: mcp, command: sh, args: [-c, 'echo not-an-mcp-server-xyz >&2; exit 3']}}\nagents:\n  - {{id: \"@a\", furniture: [liar]}}\n",
            model.endpoint
        ),
    );
    let r = Ofc::finish(ofc.cmd().current_dir(proj.path()).args(["run", "hello"]));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("furniture[0]: furniture `liar`")
            && r.stderr.contains("not-an-mcp-server-xyz"),
        "{}",
        r.stderr
    );
    let logs = proj.path().join(".ofc/logs");
    let agents_log = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".agents.log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    assert!(
        agents_log.contains("[furniture liar] not-an-mcp-server-xyz"),
        "{agents_log}"
    );
}

#[test]
fn sigkill_of_ofc_run_leaves_no_mcp_server_alive() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("mcporphan");
    // The server runs under a shell whose command line carries the tag. The server exits
    // when its stdin closes; the shell then sleeps on, so only the supervisor stopping the
    // whole process group ends it.
    std::fs::write(
        proj.path().join(format!("{t}.sh")),
        format!("{:?} --local-timezone UTC\nsleep 600\n", time_server()),
    )
    .unwrap();
    let model = ModelServer::start(&[("m", vec![pieces(&["hi"])])]);
    blueprint(
        proj.path(),
        &format!(
            "defaults:\n  endpoint: {}\n  model: m\nfurniture:\n  - {{name: time, type: mcp, command: sh, args: [./{t}.sh]}}\nagents:\n  - {{id: \"@a\", furniture: [time]}}\n",
            model.endpoint
        ),
    );
    let mut child = start_interactive(proj.path(), home.path());
    assert_eq!(processes_with(&t).len(), 1, "the MCP server runs");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !processes_with(&t).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        processes_with(&t),
        Vec::<u32>::new(),
        "the MCP server outlived ofc"
    );
}
