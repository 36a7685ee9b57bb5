//! The reference CLI's example blueprints, old and new, in our own words
//! (`tests/fixtures/reference-shapes/`, same shapes and features), each loaded and run by the
//! real `ofc` with its model endpoint pointed at a scripted model, its sandbox built `FROM
//! scratch` around busybox with real podman, its `claude-code-acp` replaced by the ACP test
//! agent (official ACP SDK), its `opencode acp` the real opencode (npm `opencode-ai`, installed
//! by `scripts/peers/opencode`, on the same scripted model) and its `npx -y` MCP servers the
//! real `@modelcontextprotocol/server-everything` and `server-filesystem` installed by
//! `scripts/peers/mcp-servers`. Fails (never skips) when a peer is missing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::tag;
use crate::run_acp_e2e::tagged_agent;
use crate::run_e2e::{ModelServer, pieces};
use crate::run_sandbox_e2e::busybox_context;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/reference-shapes")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A project made from the fixture `name`: the model endpoint pointed at `model`, a sandbox's
/// Dockerfile replaced by a busybox one (and its image tag by a local one), `claude-code-acp`
/// by the ACP test agent, and the peers' `node_modules` linked for `npx`.
fn project(name: &str, model: &ModelServer) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_dir(&fixtures().join(name), &dir);
    let mut text = std::fs::read_to_string(dir.join("blueprint.yaml")).unwrap();
    assert!(text.contains("http://localhost:11434/v1"));
    text = text.replace("http://localhost:11434/v1", &model.endpoint);
    if text.contains("type: sandbox") {
        busybox_context(&dir);
        text = text.replace(
            "image: python:3.11-slim",
            &format!("image: localhost/ofc-reference-{name}:test"),
        );
    }
    if text.contains("command: claude-code-acp") {
        let agent = tagged_agent(&dir, &tag(name));
        text = text.replace(
            "command: claude-code-acp",
            &format!("command: {:?}", agent.display().to_string()),
        );
    }
    for (server, pkg) in [("everything", "everything-pkg"), ("filesystem", "fs-pkg")] {
        if !text.contains(&format!("@modelcontextprotocol/server-{server}")) {
            continue;
        }
        let modules = peers_dir().join("mcp").join(pkg).join("node_modules");
        assert!(
            modules
                .join(format!(
                    "@modelcontextprotocol/server-{server}/package.json"
                ))
                .is_file(),
            "@modelcontextprotocol/server-{server} is not installed under {}: run \
             scripts/install-test-deps (or scripts/peers/mcp-servers)",
            modules.display()
        );
        std::os::unix::fs::symlink(&modules, dir.join("node_modules")).unwrap();
    }
    if text.contains("command: opencode") {
        text = text.replace(
            "command: opencode",
            &format!("command: {:?}", opencode().display().to_string()),
        );
    }
    std::fs::write(dir.join("blueprint.yaml"), text).unwrap();
    (tmp, dir)
}

fn peers_dir() -> PathBuf {
    std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from)
}

/// The `opencode` executable, installed by `scripts/peers/opencode` (the test fails without it).
fn opencode() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers/opencode");
    let out = std::process::Command::new(&script).output().unwrap();
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `ofc --json run MESSAGE` in `dir`: the exit code and the messages (as JSON).
fn run(dir: &Path, message: &str) -> (Option<i32>, Vec<Value>) {
    run_with(dir, message, &[])
}

/// [`run`] with more environment.
fn run_with(dir: &Path, message: &str, env: &[(&str, &Path)]) -> (Option<i32>, Vec<Value>) {
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let mut cmd = ofc.cmd();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let r = Ofc::finish(cmd.current_dir(dir).args(["--json", "run", message]));
    let messages = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"].clone())
        .collect();
    assert_eq!(
        r.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    (r.code, messages)
}

fn senders(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["from"].as_str().unwrap())
        .collect()
}

fn said<'a>(messages: &'a [Value], who: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["from"] == who).collect()
}

#[test]
fn chaindepth_delegates_two_levels_down_and_back() {
    let model = ModelServer::start(&[
        (
            "@assistant",
            vec![
                pieces(&["Let me get a second opinion. @helper? is the plan sound?"]),
                pieces(&["Everyone agrees: the plan is sound."]),
            ],
        ),
        (
            "@helper",
            vec![
                pieces(&["@helper2? any objections?"]),
                pieces(&["helper2 has no objections."]),
            ],
        ),
        ("@helper2", vec![pieces(&["No objections."])]),
    ]);
    let (_tmp, dir) = project("chaindepth", &model);
    let (_, messages) = run(&dir, "is the plan sound?");
    assert_eq!(
        senders(&messages),
        [
            "@user",
            "@assistant",
            "@helper",
            "@helper2",
            "@helper",
            "@assistant"
        ]
    );
    assert_eq!(
        messages.last().unwrap()["content"],
        "Everyone agrees: the plan is sound."
    );
}

#[test]
fn taskboard_planner_and_builder_share_the_board() {
    let model = ModelServer::start(&[
        (
            "@planner",
            vec![
                pieces(&[
                    "TOOL tasks__list_tasks {}",
                    "TOOL tasks__add_task {\"title\": \"login page\"}",
                ]),
                pieces(&["Task 1 is on the board. @builder? take it"]),
                pieces(&["The board is done, @user."]),
            ],
        ),
        (
            "@builder",
            vec![
                pieces(&[
                    "TOOL tasks__update_task {\"id\": 1, \"status\": \"done\", \"assignee\": \"@builder\"}",
                ]),
                pieces(&["Task 1 is done."]),
            ],
        ),
    ]);
    let (_tmp, dir) = project("taskboard", &model);
    let (_, messages) = run(&dir, "we need a login page");
    assert_eq!(
        senders(&messages),
        ["@user", "@planner", "@builder", "@planner"]
    );
    let planner = said(&messages, "@planner")[0];
    assert_eq!(planner["tool_results"][0]["count"], 0);
    assert_eq!(planner["tool_results"][1]["title"], "login page");
    let builder = said(&messages, "@builder")[0];
    let task = &builder["tool_results"][0];
    assert_eq!(task["status"], "done", "{builder}");
    assert_eq!(task["assignee"], "@builder", "{builder}");
}

#[test]
fn everything_starts_the_mcp_server_with_npx_and_its_tools_answer() {
    let model = ModelServer::start(&[(
        "@assistant",
        vec![
            pieces(&["TOOL everything__echo {\"message\": \"hello from the floor\"}"]),
            pieces(&["It echoed the message back."]),
        ],
    )]);
    let (_tmp, dir) = project("everything", &model);
    let (_, messages) = run(&dir, "please try the echo tool");
    let assistant = said(&messages, "@assistant")[0];
    assert_eq!(assistant["tool_calls"][0]["name"], "everything__echo");
    let result = assistant["tool_results"][0].to_string();
    assert!(result.contains("hello from the floor"), "{result}");
    // The model was shown the server's tools, namespaced.
    let requests = model.requests();
    let tools: Vec<String> = requests[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        tools.iter().any(|t| t == "everything__echo") && tools.len() > 3,
        "{tools:?}"
    );
}

#[test]
fn data_analysis_runs_bash_in_the_sandbox_on_the_mounted_workspace() {
    let model = ModelServer::start(&[
        (
            "@data",
            vec![
                pieces(&[
                    "TOOL python-sandbox__bash {\"command\": \"wc -l < /workspace/sales.csv\"}",
                ]),
                pieces(&[
                    "sales.csv has 4 rows and a header. @code? total the revenue into total.txt",
                ]),
                pieces(&["456 in total, @user."]),
            ],
        ),
        (
            "@code",
            vec![
                pieces(&[
                    "TOOL python-sandbox__bash {\"command\": \"awk -F, 'NR>1 {s+=$3} END {print s}' /workspace/sales.csv > /workspace/total.txt; cat /workspace/total.txt\"}",
                ]),
                pieces(&["Wrote total.txt: 456."]),
            ],
        ),
    ]);
    let (_tmp, dir) = project("data-analysis", &model);
    let (_, messages) = run(&dir, "how big is sales.csv, and what is the total revenue?");
    assert_eq!(senders(&messages), ["@user", "@data", "@code", "@data"]);
    let data = said(&messages, "@data")[0];
    assert!(data["tool_results"][0].to_string().contains('5'), "{data}");
    let code = said(&messages, "@code")[0];
    assert!(
        code["tool_results"][0].to_string().contains("456"),
        "{code}"
    );
    // Written through the mount, on the host.
    assert_eq!(
        std::fs::read_to_string(dir.join("workspace/total.txt")).unwrap(),
        "456\n"
    );
}

#[test]
fn taskboard_acp_hands_the_board_to_the_acp_agent_over_mcp() {
    let model = ModelServer::start(&[(
        "@planner",
        vec![
            pieces(&["TOOL tasks__add_task {\"title\": \"countdown script\"}"]),
            pieces(&[
                "Task 1 is on the board. @coder? please take it\nTOOL tasks__update_task {\"id\": 1, \"status\": \"done\", \"assignee\": \"@coder\"}",
            ]),
            pieces(&["All done, @user."]),
        ],
    )]);
    let (_tmp, dir) = project("taskboard-acp", &model);
    let (_, messages) = run(&dir, "write a countdown script");
    assert_eq!(
        senders(&messages),
        ["@user", "@planner", "@coder", "@planner"]
    );
    let coder = said(&messages, "@coder")[0]["content"].as_str().unwrap();
    // The ACP agent called the board through the floor's MCP endpoint it was given.
    assert!(coder.starts_with("tool tasks__update_task: "), "{coder}");
    assert!(
        coder.contains("\"status\":\"done\"") || coder.contains("\"status\": \"done\""),
        "{coder}"
    );
    assert!(coder.contains("@coder"), "{coder}");
}

#[test]
fn acp_test_puts_an_acp_agent_next_to_an_llm_agent_with_a_sandbox_on_the_floor() {
    let model = ModelServer::start(&[(
        "@data",
        vec![
            pieces(&["@code? write fib in clojure"]),
            pieces(&["Thanks, @user: @code has it."]),
        ],
    )]);
    let (_tmp, dir) = project("acp-test", &model);
    let (_, messages) = run(&dir, "can someone write fib?");
    assert_eq!(senders(&messages), ["@user", "@data", "@code", "@data"]);
    let code = said(&messages, "@code")[0]["content"].as_str().unwrap();
    assert!(code.starts_with("Heard: "), "{code}");
    assert!(code.ends_with("read: allowed, execute: allowed."), "{code}");
}

#[test]
fn blog_takes_its_prompt_from_a_file_and_runs_bash_in_the_sandbox() {
    let model = ModelServer::start(&[(
        "@code",
        vec![
            pieces(&["TOOL python-sandbox__bash {\"command\": \"wc -l < /workspace/visits.csv\"}"]),
            pieces(&["visits.csv holds three days after its header."]),
        ],
    )]);
    let (_tmp, dir) = project("blog", &model);
    let (_, messages) = run(&dir, "how many days of visits are there?");
    assert_eq!(senders(&messages), ["@user", "@code"]);
    let code = said(&messages, "@code")[0];
    assert!(code["tool_results"][0].to_string().contains('4'), "{code}");
    // The prompt came from prompt.txt.
    let system = model.requests()[0].1["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("reproducible analyses for a blog post"),
        "{system}"
    );
}

/// The analyst reads the workspace through the filesystem MCP server (started with `npx -y`)
/// and hands the sum to the coder over ACP; answers `@data`'s scripted turns.
fn analysis_script() -> Vec<Vec<String>> {
    vec![
        pieces(&["TOOL fs__read_text_file {\"path\": \"sales.csv\"}"]),
        pieces(&["Four rows of revenue. @code? total the revenue column"]),
        pieces(&["Thanks, @user: that is the total."]),
    ]
}

fn check_analysis(messages: &[Value]) {
    assert_eq!(senders(messages), ["@user", "@data", "@code", "@data"]);
    let data = said(messages, "@data")[0];
    assert_eq!(
        data["tool_calls"][0]["name"], "fs__read_text_file",
        "{data}"
    );
    let read = data["tool_results"][0].to_string();
    assert!(read.contains("north,2026-02,140"), "{read}");
}

#[test]
fn data_analysis_acp_reads_files_over_mcp_and_asks_the_acp_coder() {
    let model = ModelServer::start(&[("@data", analysis_script())]);
    let (_tmp, dir) = project("data-analysis-acp", &model);
    let (_, messages) = run(&dir, "what is the total revenue in sales.csv?");
    check_analysis(&messages);
    let code = said(&messages, "@code")[0]["content"].as_str().unwrap();
    assert!(code.starts_with("Heard: "), "{code}");
}

#[test]
fn data_analysis_opencode_runs_the_real_opencode_over_acp() {
    let model = ModelServer::start(&[
        ("@data", analysis_script()),
        // opencode's own requests (its title and its answer) name the model of its config.
        (
            "oc-model",
            vec![pieces(&["The revenue column totals 456."])],
        ),
    ]);
    let (_tmp, dir) = project("data-analysis-opencode", &model);
    // opencode on the scripted model (an OpenAI-compatible provider), its state in the test's
    // directories.
    let state = tempfile::tempdir().unwrap();
    let config = state.path().join("opencode.json");
    std::fs::write(
        &config,
        serde_json::json!({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                "options": {"baseURL": model.endpoint, "apiKey": "unused"},
                "models": {"oc-model": {"name": "oc-model"}}}},
            "model": "scripted/oc-model",
            "autoupdate": false,
            "share": "disabled",
        })
        .to_string(),
    )
    .unwrap();
    let xdg: Vec<(String, PathBuf)> = [
        "XDG_DATA_HOME",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), state.path().join(k.to_lowercase())))
    .collect();
    let mut env: Vec<(&str, &Path)> = xdg.iter().map(|(k, v)| (k.as_str(), v.as_path())).collect();
    env.push(("OPENCODE_CONFIG", &config));
    let (_, messages) = run_with(&dir, "what is the total revenue in sales.csv?", &env);
    check_analysis(&messages);
    let code = said(&messages, "@code")[0]["content"].as_str().unwrap();
    assert!(code.contains("The revenue column totals 456."), "{code}");
    // opencode asked the scripted model, with its own system prompt.
    assert!(
        model
            .requests()
            .iter()
            .any(|(_, b)| b["model"] == "oc-model"),
        "opencode never asked the model"
    );
}
