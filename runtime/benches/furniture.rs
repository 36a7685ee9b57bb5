//! Tool-call round trips through the floor to MCP servers over stdio (not a test):
//! `cargo bench -p runtime --bench furniture [-- CALLS]` (default 500). Needs the servers of
//! `scripts/install-test-deps` (`scripts/peers/mcp-servers`).
//!
//! Side by side, per call:
//!
//! - `mcp direct`: `McpToolbox::call` — the rmcp client, JSON-RPC over the pipes, the server
//!   (`mcp-server-time` `get_current_time`; `server-filesystem` `read_text_file`) and back;
//! - `guard`: the same call through an agent's `Guard` (the grant lookup and the class check)
//!   — what an LLM agent's tool call costs on the floor, without the model;
//! - `floor turn`: a whole floor turn of an LLM agent whose scripted model (on loopback,
//!   answering at once) asks for the tool, reads the result and answers — two model calls and
//!   one tool call.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use axum::routing::post;
use index_schema::blueprint::Blueprint;
use index_schema::name::AgentHandle;
use runtime::Handle;
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::furniture::{FloorFurniture, Furniture, FurnitureSettings, Grants};
use runtime::llm::{LlmAgent, LlmConfig, LlmSettings, Toolbox};
use serde_json::{Map, Value, json};

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    format!(
        "p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  (n={})",
        at(0.5),
        at(0.9),
        at(0.99),
        v.len()
    )
}

fn peer(path: &str) -> String {
    let p = std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from)
        .join("mcp")
        .join(path);
    assert!(
        p.is_file(),
        "{} is not installed: run scripts/install-test-deps (or scripts/peers/mcp-servers)",
        p.display()
    );
    p.display().to_string()
}

fn entry(yaml: &str) -> index_schema::blueprint::Furniture {
    Blueprint::from_yaml(&format!("agents: []\nfurniture:\n  - {yaml}\n"))
        .unwrap_or_else(|e| panic!("{e:?}"))
        .furniture[0]
        .clone()
}

/// A model that asks for `tool` when the last message is not a tool result, else answers.
async fn model(tool: &'static str, args: &'static str) -> String {
    let call = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
            "type": "function", "function": {"name": tool, "arguments": args}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    );
    let answer = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "done"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    );
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: String| {
            let call = call.clone();
            let answer = answer.clone();
            async move {
                let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let last_is_tool = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .is_some_and(|m| m["role"] == "tool");
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from(if last_is_tool { answer } else { call }))
                    .unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

async fn measure<F, Fut>(n: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    for _ in 0..(n / 10).max(10) {
        f().await;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        times.push(t.elapsed());
    }
    times
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a line of notes\n".repeat(20)).unwrap();
    let settings = FurnitureSettings::default();
    let time = Furniture::start(
        &entry(&format!(
            "{{name: time, type: mcp, command: {:?}, args: [--local-timezone, UTC]}}",
            peer("time-venv/bin/mcp-server-time")
        )),
        &settings,
    )
    .await
    .unwrap();
    let fs = Furniture::start(
        &entry(&format!(
            "{{name: fs, type: mcp, command: node, args: [{:?}, {:?}]}}",
            peer("fs-pkg/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
            dir.path().display().to_string()
        )),
        &settings,
    )
    .await
    .unwrap();
    let me: AgentHandle = "@bench".parse().unwrap();
    let names = ["time".to_owned(), "fs".to_owned()];
    let grants = Grants::from_blueprint(None, [(&me, &names[..])]);
    let floor_furniture = FloorFurniture::new("bench", vec![time, fs], grants);

    let time_args: Map<String, Value> = json!({"timezone": "Europe/Paris"})
        .as_object()
        .cloned()
        .unwrap();
    let notes = dir.path().join("notes.txt").display().to_string();
    let fs_args: Map<String, Value> = json!({"path": notes}).as_object().cloned().unwrap();

    println!("{calls} calls each, after warm-up; 2 worker threads");
    for (piece, tool, args) in [
        ("time", "get_current_time", &time_args),
        ("fs", "read_text_file", &fs_args),
    ] {
        let furniture = floor_furniture.get(piece).unwrap().clone();
        let direct = measure(calls, || {
            let furniture = furniture.clone();
            let args = args.clone();
            async move {
                furniture.call(tool, args).await.unwrap();
            }
        })
        .await;
        println!("{piece}__{tool} mcp direct   {}", percentiles(direct));
        let guard = floor_furniture.guard("@bench", piece).unwrap();
        let guarded = measure(calls, || {
            let guard = guard.clone();
            let args = args.clone();
            async move {
                guard.call(tool, args).await.unwrap();
            }
        })
        .await;
        println!("{piece}__{tool} guard        {}", percentiles(guarded));
    }

    // A floor turn: model → time__get_current_time → model → answer.
    let endpoint = model("time__get_current_time", "{\"timezone\": \"Europe/Paris\"}").await;
    let bp = Blueprint::from_yaml(&format!(
        "defaults: {{endpoint: \"{endpoint}\", model: m}}\nagents:\n  - id: \"@bench\"\n"
    ))
    .unwrap();
    let agent = LlmAgent::new(
        LlmConfig::from_blueprint(
            bp.agents[0].as_inline().unwrap(),
            bp.defaults.as_ref(),
            |_| None,
        )
        .unwrap(),
        LlmSettings::default(),
        reqwest::Client::new(),
    );
    for guard in floor_furniture.guards("@bench") {
        let name = guard.name().to_owned();
        agent.add_toolbox(&name, Arc::new(guard)).await.unwrap();
    }
    let floor = Floor::open(
        "bench",
        None,
        vec![FloorAgent::new(
            Handle::new("bench").unwrap(),
            Arc::new(agent),
        )],
        FloorSettings::default(),
    )
    .unwrap();
    let turns = measure(calls, || {
        let floor = &floor;
        async move {
            let s = floor
                .post_and_wait("@bench? what time is it?")
                .await
                .unwrap();
            let last = s.messages.last().unwrap();
            assert_eq!(last.tool_calls.len(), 1, "{last:?}");
            // Keep the history short so every turn does the same work.
            floor.clear().await.unwrap();
        }
    })
    .await;
    println!(
        "floor turn (2 model calls + time__get_current_time)  {}",
        percentiles(turns)
    );
    floor.close().await.unwrap();
    floor_furniture.shutdown().await;
}
