//! Benchmark (not a test): what the transparency log adds to a pull that fetches a version.
//!
//!   cargo run -p hub-server --release --example bench_log_check -- [ENTRIES] [ROUNDS]
//!
//! Fills an in-process hub (SQLite, release) with ENTRIES signed publishes (default 10,000),
//! then, ROUNDS times (default 1,000) for a random version, measures:
//!
//! - `hub proofs`: what the log adds to the version answer — the inclusion proof, the
//!   consistency proof from an older size the client holds, and the signed checkpoint
//!   (`hub_core::tlog::inclusion_now`, the function the answer calls);
//! - `client checks`: what `ofc pull` does with it — the checkpoint's signature, the entry
//!   rebuilt from the verified manifest, the inclusion and the consistency proofs
//!   (the `index_schema::tlog` functions `ofc-pkg/src/pull/log.rs` calls);
//! - `first contact`: the extra `GET /api/v1/log` a client makes once per hub, to learn the
//!   log key it then pins (over loopback HTTP);
//! - for scale, the whole `GET …/versions/{v}?log_size=N` round trip.
//!
//! A pull served from the cache (or a locked, offline one) does no log check at all.
//! Bounded: ENTRIES publishes or 300 s, then ROUNDS rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hub_server::Config;
use index_schema::envelope::{SecretKey, sign_manifest};
use index_schema::hub_api::{LogInfo, VersionInfo};
use index_schema::manifest::Manifest;
use index_schema::name::AgentName;
use index_schema::tlog::{Entry, LogVerifier, check_consistency, check_inclusion, parse_hash_b64};
use ofc_test_kit::{Served, add_publisher};
use rand::Rng as _;
use serde_json::json;

fn manifest(name: &str, version: &str) -> Manifest {
    Manifest::from_value(&json!({
        "schemaVersion": 1, "name": name, "version": version, "id": "@bench",
        "displayName": "Bench", "tagline": "t", "description": "d",
        "source": {"type": "remote", "endpoint": "https://example.com/ofc"}
    }))
    .expect("manifest")
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

#[allow(clippy::print_stdout)]
fn report(what: &str, v: &mut [Duration]) -> (f64, f64) {
    let (p50, p99) = (pct(v, 0.50), pct(v, 0.99));
    println!(
        "{what:<40} p50 {p50:>8.3} ms   p99 {p99:>8.3} ms   max {:>8.3} ms",
        pct(v, 1.0)
    );
    (p50, p99)
}

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let entries: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    let state = hub_server::build_state(cfg).await?;
    let store = state.core.store.clone();
    let served = Served::start(state.clone()).await;
    let url = served.url.clone();
    let user = "bench";
    let p = add_publisher(&store, user, None, false, SecretKey::from_seed(&[1; 32])).await;
    let (key, token) = (p.key, p.token);
    let client = reqwest::Client::new();

    // Fill the log: 8 clients, ENTRIES publishes over 50 agents.
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(300);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, url, token, key, next) = (
            client.clone(),
            url.clone(),
            token.clone(),
            key.clone(),
            next.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= entries || Instant::now() > deadline {
                    break seen;
                }
                let name = format!("{user}/agent-{}", i % 50);
                let version = format!("1.0.{i}");
                let env = sign_manifest(&manifest(&name, &version), &key);
                let body = json!({"envelope": serde_json::from_str::<serde_json::Value>(&env.to_json()).unwrap()});
                let r = client
                    .put(format!("{url}/api/v1/agents/{name}/versions/{version}"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .expect("publish");
                assert_eq!(r.status(), 201);
                let answer: serde_json::Value = r.json().await.expect("a publish answer");
                // The checkpoint a client that pulled this version then would hold.
                seen.push(answer["log"]["checkpoint"].as_str().expect("a checkpoint").to_string());
            }
        }));
    }
    let mut checkpoints = Vec::new();
    for t in tasks {
        checkpoints.extend(t.await?);
    }
    let published = next.load(Ordering::SeqCst).min(entries);
    let (size, _) = store.log_head().await?;
    println!(
        "log of {size} entries ({published} publishes in {:.1} s)",
        start.elapsed().as_secs_f64()
    );

    let info: LogInfo = client
        .get(format!("{url}/api/v1/log"))
        .send()
        .await?
        .json()
        .await?;
    let verifier = LogVerifier::parse(&info.key)?;
    let mut rng = rand::thread_rng();
    let (mut hub, mut check, mut first, mut whole) = (
        Vec::with_capacity(rounds),
        Vec::with_capacity(rounds),
        Vec::with_capacity(rounds),
        Vec::with_capacity(rounds),
    );
    for _ in 0..rounds {
        let i = rng.gen_range(0..published);
        let name = format!("{user}/agent-{}", i % 50);
        let version = format!("1.0.{i}");
        // The client last verified a tree it was shown earlier.
        let before =
            verifier.verify_checkpoint(&checkpoints[rng.gen_range(0..checkpoints.len())])?;
        let old = before.size;

        let t = Instant::now();
        let vi: VersionInfo = client
            .get(format!(
                "{url}/api/v1/agents/{name}/versions/{version}?log_size={old}"
            ))
            .send()
            .await?
            .json()
            .await?;
        whole.push(t.elapsed());
        let l = vi.log.as_ref().expect("a log proof");
        let envelope = vi.envelope.parse().map_err(|d| anyhow::anyhow!("{d}"))?;
        let digest = envelope.payload_digest();
        let key_id = key.key_id();
        let agent = AgentName::parse(&name)?;

        // What the log adds to that answer, on the hub.
        let entry = Entry::publish(agent.clone(), &version, digest, key_id)?;
        let t = Instant::now();
        let again = hub_core::tlog::inclusion_now(&state.core, &entry, l.index, Some(old))
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        hub.push(t.elapsed());
        assert_eq!(again.index, l.index);

        // What the client does with it.
        let t = Instant::now();
        let (cp, _) = verifier.verify_cosigned(&l.checkpoint, &[])?;
        let want = Entry::publish(agent, &version, digest, key_id)?.to_string();
        assert_eq!(l.entry, want);
        let inclusion = l
            .inclusion
            .iter()
            .map(|h| parse_hash_b64(h))
            .collect::<Result<Vec<_>, _>>()?;
        check_inclusion(
            &inclusion,
            cp.size,
            cp.root,
            l.index,
            format!("{want}\n").as_bytes(),
        )?;
        let consistency = l
            .consistency
            .as_ref()
            .expect("a consistency proof")
            .iter()
            .map(|h| parse_hash_b64(h))
            .collect::<Result<Vec<_>, _>>()?;
        check_consistency(&consistency, old, before.root, cp.size, cp.root)?;
        check.push(t.elapsed());

        let t = Instant::now();
        let _: LogInfo = client
            .get(format!("{url}/api/v1/log"))
            .send()
            .await?
            .json()
            .await?;
        first.push(t.elapsed());
    }
    println!("{rounds} rounds, random versions, client's stored size random below the head:");
    let (h50, h99) = report("hub proofs (inclusion+consistency+sign)", &mut hub);
    let (c50, c99) = report("client checks (sig+entry+2 proofs)", &mut check);
    let (f50, f99) = report("first contact: GET /api/v1/log", &mut first);
    report("whole GET …/versions/{v}?log_size=N", &mut whole);
    println!(
        "added to a pull of a version from a pinned hub: p50 {:.3} ms, p99 {:.3} ms",
        h50 + c50,
        h99 + c99
    );
    println!(
        "added to a first pull from a hub:              p50 {:.3} ms, p99 {:.3} ms",
        h50 + c50 + f50,
        h99 + c99 + f99
    );
    served.stop().await;
    Ok(())
}
