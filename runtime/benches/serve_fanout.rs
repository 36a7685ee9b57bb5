//! SSE fan-out of the session server (not a test):
//! `cargo bench -p runtime --bench serve_fanout [-- CLIENTS EVENTS RATE]` (default 100 clients,
//! 2,000 events, 1,000 events/s offered; `RATE` 0: as fast as the session can record).
//!
//! A [`SessionServer`] on 127.0.0.1 hosts one session (a floor of one in-process agent that
//! is never asked: the events are appended to the session directly, as a floor's recorders
//! append them — each one written to the session file, then fed). `CLIENTS` SSE clients (real
//! HTTP connections, reqwest) watch it with the session token; every event carries the time it
//! was appended, and each client notes, per event, how long after that it parsed it. Reported:
//! the events each client got (all of them, in order, is checked), the delivered rate
//! (events × clients / s, from the first append to the last client's last event) and the
//! delivery latency percentiles over every (event, client).

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use index_schema::wire::{RespondRequest, RespondResponse};
use runtime::Handle;
use runtime::agent::FnAgent;
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::session::{LiveSession, SessionId, SessionMeta, SessionStore};
use runtime::session_server::{
    HostedSession, NothingElse, OpenError, SessionHost, SessionServer, SessionServerSettings,
};
use serde_json::{Value, json};

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

/// Opens sessions in a store, on a floor with one idle agent; hands the session to the bench.
struct Host {
    store: SessionStore,
    opened: tokio::sync::mpsc::UnboundedSender<LiveSession>,
}

#[async_trait::async_trait]
impl SessionHost for Host {
    async fn open(&self, _resume: Option<&SessionId>) -> Result<HostedSession, OpenError> {
        let live = LiveSession::new(self.store.create(SessionMeta::default())?);
        let agent = FnAgent::new("idle", |_r: RespondRequest| async move {
            Ok(RespondResponse::reply("never asked"))
        });
        let agents = vec![FloorAgent::new(
            Handle::new("@idle").unwrap(),
            Arc::new(agent),
        )];
        let floor = Floor::open_session(
            "bench",
            None,
            agents,
            FloorSettings::default(),
            live.clone(),
            Vec::new(),
        )
        .map_err(|e| OpenError::Start(e.to_string()))?;
        let _ = self.opened.send(live.clone());
        Ok(HostedSession {
            live,
            floor,
            furniture: None,
            stop: Box::new(NothingElse),
        })
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let clients = args.first().copied().unwrap_or(100) as usize;
    let events = args.get(1).copied().unwrap_or(2000);
    let rate = args.get(2).copied().unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(clients, events, rate));
}

async fn run(clients: usize, events: u64, rate: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/bench");
    let (tx, mut opened) = tokio::sync::mpsc::unbounded_channel();
    let mut settings = SessionServerSettings::new("bench-server-token");
    settings.max_subscribers = clients + 1;
    settings.connections.max_connections = clients + 16;
    let server = SessionServer::new(
        settings,
        store.clone(),
        Arc::new(Host { store, opened: tx }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.serve(listener, async {
        let _ = stop_rx.await;
    }));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let created: Value = http
        .post(format!("{url}/api/v1/sessions"))
        .bearer_auth("bench-server-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let token = created["token"].as_str().unwrap().to_owned();
    let start_seq = created["last_seq"].as_u64().unwrap();
    let live = opened.recv().await.unwrap();
    let epoch = Instant::now();

    // The watchers: each connects, then reports (events got, in order?, latencies).
    let mut watchers = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    for _ in 0..clients {
        let (http, url, id, token, ready) = (
            http.clone(),
            url.clone(),
            id.clone(),
            token.clone(),
            ready_tx.clone(),
        );
        watchers.push(tokio::spawn(async move {
            let resp = http
                .get(format!("{url}/api/v1/sessions/{id}/events"))
                .bearer_auth(&token)
                .header("Last-Event-ID", start_seq.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let _ = ready.send(());
            let mut body = resp.bytes_stream();
            let mut buf = String::new();
            let mut latencies = Vec::with_capacity(events as usize);
            let mut last = start_seq;
            let mut in_order = true;
            'read: while let Some(Ok(chunk)) = body.next().await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let frame: String = buf.drain(..end + 2).collect();
                    let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) else {
                        continue;
                    };
                    let v: Value = serde_json::from_str(data).unwrap();
                    let Some(sent) = v["payload"]["t_us"].as_u64() else {
                        continue;
                    };
                    let now = epoch.elapsed();
                    latencies.push(now.saturating_sub(Duration::from_micros(sent)));
                    let seq = v["seq"].as_u64().unwrap();
                    in_order &= seq == last + 1;
                    last = seq;
                    if v["payload"]["last"] == true {
                        break 'read;
                    }
                }
            }
            (latencies, in_order, epoch.elapsed())
        }));
    }
    drop(ready_tx);
    for _ in 0..clients {
        ready_rx.recv().await.unwrap();
    }
    // Every stream is open; now the events.
    let began = epoch.elapsed();
    let gap = (rate > 0).then(|| Duration::from_secs_f64(1.0 / rate as f64));
    for i in 0..events {
        if let Some(gap) = gap {
            let due = began + gap * i as u32;
            let now = epoch.elapsed();
            if due > now {
                tokio::time::sleep(due - now).await;
            }
        }
        let t_us = epoch.elapsed().as_micros() as u64;
        live.append(
            "bench",
            json!({"t_us": t_us, "i": i, "last": i + 1 == events, "pad": "x".repeat(200)}),
        );
    }
    let appended = epoch.elapsed() - began;
    let mut all = Vec::new();
    let mut finished = began;
    let mut ordered = 0;
    for w in watchers {
        let (lat, in_order, done) = w.await.unwrap();
        assert_eq!(lat.len() as u64, events, "every client gets every event");
        ordered += usize::from(in_order);
        finished = finished.max(done);
        all.extend(lat);
    }
    let elapsed = (finished - began).as_secs_f64();
    println!(
        "SSE fan-out: {clients} clients x {events} events ({} offered; appended in {:.2} s)",
        if rate > 0 {
            format!("{rate} events/s")
        } else {
            "as fast as recorded".to_owned()
        },
        appended.as_secs_f64()
    );
    println!(
        "  delivered: {:.0} events/s in total ({:.0} events/s per client); {ordered}/{clients} clients got all in order",
        (events as f64 * clients as f64) / elapsed,
        events as f64 / elapsed
    );
    println!(
        "  delivery latency (append -> parsed by a client): {}",
        percentiles(all)
    );
    let _ = stop_tx.send(());
    let _ = served.await;
}
