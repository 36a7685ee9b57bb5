//! A message's round trip through the Switchboard (seed 004), not a test:
//! `cargo bench -p runtime --bench switchboard [-- ROUNDS]` (default 300).
//!
//! - **file transport**: the user asks a `switchboard` file agent (`@worker? ping N`) on a
//!   floor; its respond call writes a `delegate_task` into `inbox/worker/` (write, fsync,
//!   rename); a file agent in this process (a thread polling its inbox every 1 ms, as a
//!   busy agent would) reads it and writes its `submit_result` into `inbox/user/` the same
//!   way; ofc's inbox reader (a look every `answer_scan_interval` while a call waits) finds
//!   it, hands it to the waiting call and the floor stores it. Measured from the post to the
//!   end of the turn, with the defaults (a look every 2 ms while an answer is awaited) and
//!   with a look every 25 ms.
//! - **MCP server**: an MCP client over the legacy SSE transport (in this file: `GET /sse`,
//!   `POST /messages`, JSON-RPC) registered as `@editor` calls `send_message` to `@helper`
//!   (an in-process agent answering at once); the message goes through the inbox reader onto
//!   the floor, the answer into the editor's inbox; the client calls `check_inbox` until the
//!   answer is there (every 1 ms). Measured from the `send_message` request to the
//!   `check_inbox` answer that holds the reply; and one `tools/call` alone.

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use index_schema::wire::{RespondRequest, RespondResponse};
use runtime::Handle;
use runtime::agent::{Agent, FnAgent};
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::switchboard::{Switchboard, SwitchboardSettings};
use serde_json::{Value, json};
use tokio::sync::mpsc;

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    format!(
        "p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms  (n={})",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        v.len()
    )
}

/// The file agent: answers every `delegate_task` in `inbox/worker/` to its sender.
fn file_agent(
    ws: PathBuf,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let inbox = ws.join("inbox/worker");
        let archive = ws.join("archive/worker");
        std::fs::create_dir_all(&archive).unwrap();
        let mut n = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let mut names: Vec<String> = std::fs::read_dir(&inbox)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.retain(|f| f.ends_with(".json") && !f.starts_with('.'));
            names.sort();
            for f in names {
                let path = inbox.join(&f);
                let task: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                if task["action"] == "delegate_task" {
                    n += 1;
                    let id = format!("msg_{n}_bench");
                    let to = task["sender"].as_str().unwrap();
                    let answer = json!({"id": id, "action": "submit_result", "sender": "worker",
                        "recipient": to, "payload": "pong", "replyTo": task["id"],
                        "createdAt": "2025-01-01T00:00:00.000Z"});
                    let dir = ws.join("inbox").join(to);
                    std::fs::create_dir_all(&dir).unwrap();
                    write_then_rename(&dir, &format!("{id}.json"), answer.to_string().as_bytes());
                }
                std::fs::rename(&path, archive.join(&f)).unwrap();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

fn write_then_rename(dir: &Path, name: &str, bytes: &[u8]) {
    use std::io::Write;
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_data().unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

async fn file_transport(rounds: usize, settings: SwitchboardSettings) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), settings).unwrap();
    let worker = sb
        .add_file_agent(&Handle::new("worker").unwrap(), None, None, None)
        .unwrap();
    let floor = Floor::open(
        "bench-file",
        None,
        vec![FloorAgent::new(Handle::new("worker").unwrap(), worker)],
        FloorSettings {
            transcript_dir: Some(dir.path().join("logs")),
            ..FloorSettings::default()
        },
    )
    .unwrap();
    sb.attach(&floor).await.unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let agent = file_agent(sb.workspace().root().to_path_buf(), Arc::clone(&stop));
    let mut times = Vec::with_capacity(rounds);
    for i in 0..rounds + rounds / 10 {
        let t = Instant::now();
        let s = floor
            .post_and_wait(format!("@worker? ping {i}"))
            .await
            .unwrap();
        let elapsed = t.elapsed();
        assert_eq!(s.messages.last().unwrap().content, "pong");
        if i >= rounds / 10 {
            times.push(elapsed);
        }
        floor.clear().await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    agent.join().unwrap();
    sb.stop();
    floor.close().await.unwrap();
    times
}

/// An MCP client over the legacy SSE transport.
struct SseClient {
    http: reqwest::Client,
    token: String,
    post: String,
    messages: mpsc::UnboundedReceiver<Value>,
    next: u64,
}

impl SseClient {
    async fn connect(base: &str, token: &str) -> SseClient {
        let http = reqwest::Client::new();
        let response = http
            .get(format!("{base}/sse"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel();
        let (tx, messages) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stream = response.bytes_stream();
            let mut buf = String::new();
            let mut endpoint = Some(endpoint_tx);
            while let Some(Ok(chunk)) = stream.next().await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let event: String = buf.drain(..end + 2).collect();
                    let mut name = "";
                    let mut data = String::new();
                    for line in event.lines() {
                        if let Some(n) = line.strip_prefix("event: ") {
                            name = n;
                        } else if let Some(d) = line.strip_prefix("data: ") {
                            data.push_str(d);
                        }
                    }
                    match name {
                        "endpoint" => {
                            if let Some(e) = endpoint.take() {
                                let _ = e.send(data);
                            }
                        }
                        "message" => {
                            let _ = tx.send(serde_json::from_str(&data).unwrap());
                        }
                        _ => {}
                    }
                }
            }
        });
        let post = format!("{base}{}", endpoint_rx.await.unwrap());
        let mut client = SseClient {
            http,
            token: token.to_owned(),
            post,
            messages,
            next: 0,
        };
        client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}),
            )
            .await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&self, body: Value) {
        let r = self
            .http
            .post(&self.post)
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let m = self.messages.recv().await.unwrap();
            if m["id"] == id {
                return m["result"].clone();
            }
        }
    }

    async fn tool(&mut self, name: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await;
        assert_ne!(r["isError"], true, "{r}");
        serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
    }
}

async fn mcp(rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), SwitchboardSettings::default()).unwrap();
    let helper: Arc<dyn Agent> =
        Arc::new(FnAgent::new("helper", |_r: RespondRequest| async move {
            Ok(RespondResponse::reply("pong"))
        }));
    let floor = Floor::open(
        "bench-mcp",
        None,
        vec![FloorAgent::new(Handle::new("helper").unwrap(), helper)],
        FloorSettings {
            transcript_dir: Some(dir.path().join("logs")),
            ..FloorSettings::default()
        },
    )
    .unwrap();
    sb.attach(&floor).await.unwrap();
    let served = sb.serve().await.unwrap();
    let mut client = SseClient::connect(&served.base, sb.token()).await;
    client
        .tool(
            "register_chat_agent",
            json!({"name": "editor", "interface": "bench"}),
        )
        .await;
    // Wait for the editor to join the floor.
    while !floor
        .snapshot()
        .await
        .unwrap()
        .agents
        .iter()
        .any(|a| a.0.as_str() == "editor")
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut trips = Vec::with_capacity(rounds);
    let mut calls = Vec::with_capacity(rounds);
    for i in 0..rounds + rounds / 10 {
        let t = Instant::now();
        let sent = client
            .tool(
                "send_message",
                json!({"recipient": "helper", "action": "delegate_task", "payload": format!("ping {i}")}),
            )
            .await;
        let call = t.elapsed();
        let id = sent["id"].clone();
        loop {
            let inbox = client.tool("check_inbox", json!({"limit": 10})).await;
            if inbox["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["replyTo"] == id)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if i >= rounds / 10 {
            trips.push(t.elapsed());
            calls.push(call);
        }
        floor.clear().await.ok();
    }
    drop(served);
    sb.stop();
    floor.close().await.unwrap();
    (trips, calls)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(300);
    println!("{rounds} round trips each, after warm-up; 2 worker threads");
    let defaults = SwitchboardSettings::default();
    let label = format!(
        "file transport, defaults (looks every {} ms while an answer is awaited)",
        defaults.answer_scan_interval.as_millis()
    );
    let times = file_transport(rounds, defaults).await;
    println!("{label}   {}", percentiles(times));
    let slow = SwitchboardSettings {
        answer_scan_interval: Duration::from_millis(25),
        ..SwitchboardSettings::default()
    };
    let times = file_transport(rounds, slow).await;
    println!(
        "file transport, looks every 25 ms always                      {}",
        percentiles(times)
    );
    let (trips, calls) = mcp(rounds).await;
    println!(
        "MCP (SSE) send_message → answer read         {}",
        percentiles(trips)
    );
    println!(
        "MCP (SSE) one tools/call (send_message)      {}",
        percentiles(calls)
    );
}
