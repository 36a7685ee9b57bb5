//! Benchmark (not a test): sustained signed publishes per second against an in-process hub.
//!
//!   cargo run -p hub-server --example bench_publish -- [sqlite|postgres://URL] [COUNT] [CLIENTS]
//!
//! Each publish is a fresh `remote` manifest signed with ed25519; the hub verifies the signature,
//! validates the manifest and commits version + outbox + audit rows in one transaction.
//! Bounded: stops after COUNT publishes or 120 s, whichever comes first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hub_server::Config;
use index_schema::envelope::SecretKey;
use index_schema::manifest::Manifest;
use ofc_test_kit::{Served, add_publisher, publish_body};
use serde_json::json;

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let db = args.get(1).cloned().unwrap_or_else(|| "sqlite".into());
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let clients: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(8);
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        database_url: (db != "sqlite").then(|| db.clone()),
        ..Config::default()
    };
    let state = hub_server::build_state(cfg).await?;
    let store = state.core.store.clone();
    let served = Served::start(state).await;
    let url = served.url.clone();
    let user = format!("bench{}", std::process::id());
    let p = add_publisher(&store, &user, None, false, SecretKey::from_seed(&[1; 32])).await;
    let (key, token) = (p.key, p.token);
    let client = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let ok = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(120);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, token, key, next, ok, user) = (
            client.clone(),
            url.clone(),
            token.clone(),
            key.clone(),
            next.clone(),
            ok.clone(),
            user.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count || Instant::now() > deadline {
                    break;
                }
                let name = format!("{user}/agent-{}", i % 50);
                let version = format!("1.0.{i}");
                let m = Manifest::from_value(&json!({
                    "schemaVersion": 1, "name": name, "version": version, "id": "@bench",
                    "displayName": "Bench", "tagline": "t", "description": "d",
                    "source": {"type": "remote", "endpoint": "https://example.com/ofc"}
                }))
                .expect("manifest");
                let body = publish_body(&m, &key);
                let r = client
                    .put(format!("{url}/api/v1/agents/{name}/versions/{version}"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await;
                if r.is_ok_and(|r| r.status() == 201) {
                    ok.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let took = start.elapsed();
    let n = ok.load(Ordering::SeqCst);
    println!(
        "{}: {n} publishes in {:.2} s with {clients} clients = {:.0} publishes/s",
        store.db().backend(),
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
    served.stop().await;
    Ok(())
}
