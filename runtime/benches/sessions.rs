//! Session benchmarks (not tests): `cargo bench -p runtime --bench sessions [-- APPENDS]`.
//!
//! (a) Event append latency with 10 agents: 10 threads, one per agent, append to one session
//!     through the shared [`LiveSession`] as a floor's recorders do — `message_posted` events
//!     (synced, ~300-byte messages), then progress events (not synced). Each append is timed
//!     from the call to its return, the wait for the lock included.
//! (b) A floor of 10 agents (each always wakes, answers at once) running 100 turns, with and
//!     without a session: the per-turn cost of recording.
//! (c) Resume of a 100,000-event session: open (lock, read, check every line), rebuild the
//!     state, open the floor on it, until it answers a snapshot.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use index_schema::wire::{Message, RespondRequest, RespondResponse, Timestamp};
use runtime::agent::FnAgent;
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::session::{LiveSession, Restored, SessionMeta, SessionStore};
use runtime::{Activation, Handle};
use serde_json::json;

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1000.0);
    format!(
        "n={} p50={} p90={} p99={} max={}",
        samples.len(),
        ms(at(0.50)),
        ms(at(0.90)),
        ms(at(0.99)),
        ms(*samples.last().unwrap())
    )
}

fn message(i: usize, from: &str) -> Message {
    Message::new(
        format!("msg-{i}"),
        from,
        format!(
            "{from} reporting on item {i}: the numbers for the quarter are in, revenue is up \
             4.2% and the churn model needs another look before we publish anything. @lead \
             please check the assumptions in section 3 and the table of regional splits."
        ),
        Timestamp::parse("2026-11-27T10:00:00Z").unwrap(),
    )
}

fn appends(per_agent: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/bench");
    let live = LiveSession::new(store.create(SessionMeta::default()).unwrap());
    for (label, durable) in [
        ("message_posted (synced)", true),
        ("progress event (not synced)", false),
    ] {
        let start = Instant::now();
        let threads: Vec<_> = (0..10)
            .map(|a| {
                let live = live.clone();
                std::thread::spawn(move || {
                    let from = format!("@agent{a}");
                    let mut times = Vec::with_capacity(per_agent);
                    for i in 0..per_agent {
                        let (kind, payload) = if durable {
                            ("message_posted", json!({ "message": message(i, &from) }))
                        } else {
                            (
                                "call_finished",
                                json!({"type": "call_finished", "call": i, "agent": from,
                                    "outcome": "responded", "message_id": format!("msg-{i}"),
                                    "elapsed_ms": 12.5}),
                            )
                        };
                        let t = Instant::now();
                        live.append(kind, payload).expect("appended");
                        times.push(t.elapsed());
                    }
                    times
                })
            })
            .collect();
        let all: Vec<Duration> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let n = all.len();
        println!(
            "(a) append, 10 agents, {label}: {} ({:.0} appends/s)",
            percentiles(all),
            n as f64 / start.elapsed().as_secs_f64()
        );
    }
}

fn agents() -> Vec<FloorAgent> {
    (0..10)
        .map(|i| {
            let agent = FnAgent::new(&format!("a{i}"), |r: RespondRequest| async move {
                Ok(RespondResponse::reply(format!(
                    "noted ({} messages so far)",
                    r.messages.len()
                )))
            });
            let mut a = FloorAgent::new(Handle::new(&format!("@a{i}")).unwrap(), Arc::new(agent));
            a.activation = Activation::Always;
            a
        })
        .collect()
}

async fn floor_turns(turns: usize) {
    for with_session in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path(), "/bench");
        let settings = FloorSettings::default();
        let floor = if with_session {
            let live = LiveSession::new(store.create(SessionMeta::default()).unwrap());
            Floor::open_session("bench", None, agents(), settings, live, Vec::new()).unwrap()
        } else {
            Floor::open("bench", None, agents(), settings).unwrap()
        };
        let mut times = Vec::new();
        let mut hops = 0;
        for i in 0..turns {
            let t = Instant::now();
            let summary = floor.post_and_wait(format!("turn {i}")).await.unwrap();
            times.push(t.elapsed());
            hops += summary.messages.len();
        }
        floor.close().await.unwrap();
        let events = store.list().unwrap().first().map_or(0, |s| s.event_count);
        println!(
            "(b) turn, 10 always-agents, {}: {} ({} messages, {} session events)",
            if with_session {
                "with a session"
            } else {
                "no session"
            },
            percentiles(times),
            hops,
            events
        );
    }
}

async fn resume(events: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/bench");
    let mut file = store.create(SessionMeta::default()).unwrap();
    let id = file.id().clone();
    let path = file.path().to_owned();
    // A turn's worth at a time: a user message, 4 progress events, an agent message, the
    // turn's transcript lines (the mix `ofc run` writes, streamed pieces aside).
    let mut written = 0;
    let mut m = 0;
    while written < events {
        for k in 0..10 {
            let (kind, payload) = match k {
                0 | 5 => {
                    m += 1;
                    let from = if k == 0 { "@user" } else { "@agent" };
                    ("message_posted", json!({ "message": message(m, from) }))
                }
                1..=4 => (
                    "responding",
                    json!({"type": "responding", "call": written, "agent": "@agent",
                        "wake_reason": {"reason": "mentioned"}}),
                ),
                _ => (
                    "transcript",
                    json!({"t_ms": 1.5, "kind": "event",
                        "event": {"type": "agent_responded", "call": written, "agent": "@agent",
                            "content": "short"}}),
                ),
            };
            file.append("#main", kind, payload).unwrap();
            written += 1;
        }
    }
    drop(file);
    let size = std::fs::metadata(&path).unwrap().len();
    let mut times = Vec::new();
    let mut read_only = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let (file, log) = store.resume(&id).unwrap();
        let read = t.elapsed();
        let restored = Restored::from_log(&log);
        let floor = Floor::open_session(
            "bench",
            None,
            agents(),
            FloorSettings::default(),
            LiveSession::new(file),
            restored.messages,
        )
        .unwrap();
        let snapshot = floor.snapshot().await.unwrap();
        times.push(t.elapsed());
        read_only.push(read);
        assert!(snapshot.messages > 0);
        floor.close().await.unwrap();
    }
    println!(
        "(c) resume, {written} events ({:.1} MiB, {m} messages): open+read+check {}; to a ready floor {}",
        size as f64 / (1024.0 * 1024.0),
        percentiles(read_only),
        percentiles(times)
    );
}

fn main() {
    let per_agent: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    appends(per_agent);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(floor_turns(100));
    rt.block_on(resume(100_000));
}
