//! Per-turn overhead of the built-in LLM agent path (not a test):
//! `cargo bench -p runtime --bench llm [-- TURNS]`.
//!
//! A scripted OpenAI-compatible server on loopback answers every call at once with the same
//! streamed answer (20 content deltas, then `[DONE]`). Side by side, per turn:
//!
//! - `raw`: one reqwest POST of the same body and reading the stream to its end (bytes only):
//!   what any client pays for the HTTP exchange;
//! - `agent`: `LlmAgent::respond` — building the prompt from a 20-message history, the
//!   request, SSE parsing, delta accumulation and forwarding, the pass check;
//! - `floor`: a whole floor turn (`@bench? …` → respond → stored message) with that agent.
//!
//! The agent's overhead is `agent − raw`; the floor's is `floor − agent`.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use axum::routing::post;
use index_schema::blueprint::Blueprint;
use index_schema::wire::{Message, RespondRequest, Timestamp};
use runtime::Handle;
use runtime::agent::{Agent, Deltas};
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::llm::{LlmAgent, LlmConfig, LlmSettings};
use serde_json::json;

fn stream_body() -> String {
    let mut body = String::new();
    for i in 0..20 {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": format!("token{i} ")}}]})
        ));
    }
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    ));
    body
}

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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let turns: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500)
        .min(100_000);
    let body = Arc::new(stream_body());
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post({
            let body = body.clone();
            move || {
                let body = body.clone();
                async move {
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from(body.as_str().to_owned()))
                        .unwrap()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let endpoint = format!("http://{addr}/v1");

    let bp = Blueprint::from_yaml(&format!(
        "defaults: {{endpoint: \"{endpoint}\", model: m}}\nagents:\n  - id: \"@bench\"\n    prompt: You are a benchmark.\n"
    ))
    .unwrap();
    let inline = bp.agents[0].as_inline().unwrap();
    let config = LlmConfig::from_blueprint(inline, bp.defaults.as_ref(), |_| None).unwrap();
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let agent = Arc::new(LlmAgent::new(config, LlmSettings::default(), http.clone()));
    let ts = Timestamp::parse("2024-01-15T10:30:00Z").unwrap();
    let history: Vec<Message> = (0..20)
        .map(|i| {
            let from = if i % 2 == 0 { "@user" } else { "@bench" };
            Message::new(
                format!("m{i}"),
                from,
                format!("message number {i} of the history"),
                ts.clone(),
            )
        })
        .collect();
    let request = RespondRequest {
        floor_id: "bench".into(),
        user_id: None,
        messages: history.clone(),
        wake_reason: None,
        initiator: None,
        context: None,
    };
    let raw_body = json!({"model": "m", "messages": agent.build_messages(&history), "temperature": 0.7, "stream": true});

    // Warm up connections and code paths.
    for _ in 0..50 {
        agent.respond(&request, None).await.unwrap();
    }

    let mut raw = Vec::with_capacity(turns);
    let mut direct = Vec::with_capacity(turns);
    for _ in 0..turns {
        let t = Instant::now();
        let r = http
            .post(format!("{endpoint}/chat/completions"))
            .json(&raw_body)
            .send()
            .await
            .unwrap();
        let bytes = r.bytes().await.unwrap();
        assert!(bytes.len() > 100);
        raw.push(t.elapsed());

        let t = Instant::now();
        let (deltas, mut rx) = Deltas::channel();
        let response = agent.respond(&request, Some(deltas)).await.unwrap();
        direct.push(t.elapsed());
        assert!(response.content().is_some_and(|c| c.starts_with("token0")));
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, 20);
    }

    let floor = Floor::open(
        "bench",
        None,
        vec![FloorAgent::new(
            Handle::new("bench").unwrap(),
            agent.clone(),
        )],
        FloorSettings {
            history_limit: 20,
            ..FloorSettings::default()
        },
    )
    .unwrap();
    let mut floored = Vec::with_capacity(turns);
    for i in 0..turns {
        let t = Instant::now();
        let summary = floor
            .post_and_wait(format!("@bench? turn {i}"))
            .await
            .unwrap();
        floored.push(t.elapsed());
        assert_eq!(summary.messages.len(), 2);
    }
    floor.close().await.unwrap();

    println!("LLM agent per-turn overhead, {turns} turns, 20 streamed deltas per answer");
    println!("raw HTTP exchange : {}", percentiles(raw));
    println!("LlmAgent::respond : {}", percentiles(direct));
    println!("floor turn        : {}", percentiles(floored));
}
