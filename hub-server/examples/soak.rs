//! Soak benchmark (not a test, issue 13): mixed publish / search / bundle pull / `/v2/` traffic
//! against an in-process hub, with a slow-loris and an idle-connection flood beside it, while a
//! prober measures `GET /healthz` on fresh connections and the process's resident memory is
//! sampled.
//!
//!   cargo run --release -p hub-server --example soak -- [SECONDS] [CLIENTS] [IDLE] [LORIS] [FIXED]
//!
//! Defaults: 600 s, 8 clients, 2,000 idle connections, 200 slow-loris connections. `FIXED` > 0
//! keeps the data set fixed: each client cycles through `FIXED` versions, so after the first
//! round every publish is an already-published version (409, an expected answer) and nothing
//! new is stored: memory growth is then not data growth. Every loop
//! ends with the duration. The hub runs with its defaults (connection cap from the open-file
//! limit, 10 s header/idle timeout) except the auth limiter (raised: the load uses one token).
//! Shedding past the cap is tested in `hub-server/tests/connections.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hub_server::Config;
use index_schema::envelope::{SecretKey, sign_manifest};
use index_schema::manifest::Manifest;
use ofc_test_kit::{Served, add_publisher};
use serde_json::json;
use sha2::Digest as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One operation of a traffic client; `Ok(true)` when the hub answered as it should.
async fn operation(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    key: &SecretKey,
    client_no: usize,
    i: u64,
    fixed: u64,
) -> reqwest::Result<bool> {
    // The version number of operation `i`: cycling when the data set is fixed.
    let v = |i: u64| if fixed > 0 { i % (fixed * 5) } else { i };
    let agent = format!("soak/agent-{}", (client_no as u64 * 7 + i) % 40);
    match i % 5 {
        0 => {
            let bundle = format!("bundle {client_no} {i} ").repeat(64).into_bytes();
            let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bundle)));
            let version = format!("1.{client_no}.{}", v(i));
            let m = Manifest::from_value(&json!({
                "schemaVersion": 1, "name": agent, "version": version, "id": "@soak",
                "displayName": "Soak", "tagline": "data analysis under load", "description": "d",
                "source": {"type": "bundle", "digest": digest, "size": bundle.len(),
                           "mediaType": "application/vnd.ofc.agent.bundle.v1.tar+gzip",
                           "entrypoint": "agent.yaml"}
            }))
            .expect("manifest");
            let env = sign_manifest(&m, key);
            let body = json!({
                "envelope": serde_json::from_str::<serde_json::Value>(&env.to_json()).expect("json"),
                "bundle": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bundle),
            });
            let r = http
                .put(format!("{url}/api/v1/agents/{agent}/versions/{version}"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await?;
            Ok(r.status().is_success() || (fixed > 0 && r.status() == 409))
        }
        1 => Ok(http
            .get(format!("{url}/api/v1/search?q=data+analysis&limit=20"))
            .send()
            .await?
            .status()
            .is_success()),
        2 => {
            let r = http
                .get(format!("{url}/api/v1/agents/{agent}"))
                .send()
                .await?;
            if r.status() == 404 {
                return Ok(true);
            }
            let v: serde_json::Value = r.json().await?;
            let Some(latest) = v["latest"].as_str() else {
                return Ok(true);
            };
            let r = http
                .get(format!(
                    "{url}/api/v1/agents/{agent}/versions/{latest}/bundle"
                ))
                .send()
                .await?;
            let ok = r.status().is_success();
            r.bytes().await?;
            Ok(ok)
        }
        3 => {
            let s = http
                .get(format!("{url}/v2/{agent}/tags/list"))
                .send()
                .await?
                .status();
            Ok(s.is_success() || s == 404)
        }
        _ => {
            let s = http
                .get(format!(
                    "{url}/v2/{agent}/manifests/1.{client_no}.{}",
                    v(i - 4)
                ))
                .header("accept", "application/vnd.oci.image.manifest.v1+json")
                .send()
                .await?
                .status();
            Ok(s.is_success() || s == 404)
        }
    }
}

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let seconds = arg(1, 600);
    let clients = arg(2, 8) as usize;
    let idle = arg(3, 2000) as usize;
    let loris = arg(4, 200) as usize;
    let fixed = arg(5, 0);
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        auth_failure_limit: 1_000_000,
        ..Config::default()
    };
    let state = hub_server::build_state(cfg).await?;
    let store = state.core.store.clone();
    let served = Served::start(state).await;
    let (addr, url) = (served.addr, served.url.clone());
    let p = add_publisher(&store, "soak", None, false, SecretKey::from_seed(&[7; 32])).await;
    let (key, token) = (p.key, p.token);
    let end = Instant::now() + Duration::from_secs(seconds);
    let rss_start = rss_mib();

    let ops = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for client_no in 0..clients {
        let (url, token, key, ops, errors) = (
            url.clone(),
            token.clone(),
            key.clone(),
            ops.clone(),
            errors.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("client");
            let mut i = 0u64;
            while Instant::now() < end {
                i += 1;
                let ok = operation(&http, &url, &token, &key, client_no, i, fixed).await;
                ops.fetch_add(1, Ordering::Relaxed);
                if !matches!(ok, Ok(true)) {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Slow-loris: a header line every 5 s, never finished.
    for _ in 0..loris {
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n").await;
                while Instant::now() < end {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    if s.write_all(b"x-slow: 1\r\n").await.is_err() {
                        break;
                    }
                }
            }
        }));
    }
    // Idle flood: connections that send nothing, reopened when the hub closes them.
    let idle_open = Arc::new(AtomicUsize::new(0));
    let idle_opened = Arc::new(AtomicUsize::new(0));
    for _ in 0..idle {
        let (idle_open, idle_opened) = (idle_open.clone(), idle_opened.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                idle_open.fetch_add(1, Ordering::Relaxed);
                idle_opened.fetch_add(1, Ordering::Relaxed);
                let mut buf = [0u8; 512];
                let _ = tokio::time::timeout_at(end.into(), s.read(&mut buf)).await;
                idle_open.fetch_sub(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }

    // The prober: /healthz every 100 ms on a fresh connection, as a load balancer does.
    let mut latencies = Vec::new();
    let (mut failed, mut shed, mut rss_max) = (0usize, 0usize, 0u64);
    let mut next_report = Instant::now() + Duration::from_secs(60);
    let started = Instant::now();
    while Instant::now() < end {
        let probe = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(10))
            .build()?;
        let t = Instant::now();
        let r = probe.get(format!("{url}/healthz")).send().await;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        match r {
            Ok(r) if r.status() == 200 => latencies.push(ms),
            Ok(r) if r.status() == 503 => shed += 1,
            _ => failed += 1,
        }
        rss_max = rss_max.max(rss_mib());
        if Instant::now() >= next_report {
            println!(
                "t={:>4}s ops={} errors={} idle open={} rss={} MiB",
                started.elapsed().as_secs(),
                ops.load(Ordering::Relaxed),
                errors.load(Ordering::Relaxed),
                idle_open.load(Ordering::Relaxed),
                rss_mib()
            );
            next_report += Duration::from_secs(60);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for t in &tasks {
        t.abort();
    }
    latencies.sort_by(f64::total_cmp);
    println!(
        "soak {seconds} s: {clients} clients, {} operations ({} not as expected); {idle} idle connections ({} opened in all) and {loris} slow-loris beside them",
        ops.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
        idle_opened.load(Ordering::Relaxed)
    );
    println!(
        "/healthz on fresh connections: {} answered 200, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {shed} shed (503), {failed} failed",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "RSS: {rss_start} MiB at start, {rss_max} MiB at most, {} MiB at the end",
        rss_mib()
    );
    let _ = tokio::time::timeout(Duration::from_secs(40), served.stop()).await;
    Ok(())
}
