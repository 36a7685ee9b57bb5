//! Benchmark (not a test): server render time of the web pages `GET /search?q=…` and
//! `GET /agents/{publisher}/{agent}` with a million agents in the search index.
//!
//!   cargo run -p hub-server --release --example bench_web_render -- --n 1000000
//!
//! The million agents are put in the index the way `bench_search_http` does it (the same
//! `Indexer::rebuild` that `ofc-hub reindex` runs, from `hub_search::corpus`, outbox sequence
//! 0), in a fresh data directory; then the hub's state is built on it (SQLite) by the test kit,
//! which adds publisher `alice`, and `alice/render-bench` is published through the JSON API
//! (three signed versions with capabilities and schemas) so the agent page has a real row,
//! envelope and key to show and verify.
//!
//! Each request goes through the hub's whole router in process (`hub_server::app` +
//! `tower::ServiceExt::oneshot`: routing, the security-header and metrics middleware, the
//! handler, the index search in `spawn_blocking` or the SQLite reads, signature verification,
//! maud rendering) and is timed until its body is collected. No socket, no HTTP parsing: this
//! is the server's render time. Searches: the corpus's query set (`--per-class` queries of each
//! class), each once to warm up and `--runs` times timed; the agent page `--agent-runs` times
//! after 10 warm-ups. p50/p99 are printed.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clap::Parser;
use hub_search::corpus::{query_set, synthetic_docs_in_reindex_order};
use hub_search::{SearchIndex, WriterConfig};
use index_schema::manifest::Manifest;
use ofc_test_kit::Backend;
use serde_json::json;
use tower::ServiceExt as _;

#[derive(Parser)]
#[command(about = "Render time of the hub's /search and agent pages at 1M agents")]
struct Args {
    /// Agents in the index.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    /// Corpus seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Queries per class.
    #[arg(long, default_value_t = 50)]
    per_class: usize,
    /// Timed runs of every search page (after one warm-up).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Timed renders of the agent page.
    #[arg(long, default_value_t = 2000)]
    agent_runs: usize,
    /// Writer heap in MiB for building the index.
    #[arg(long, default_value_t = 300)]
    heap_mb: usize,
    /// Indexing threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(what: &str, mut d: Vec<Duration>) {
    d.sort();
    println!(
        "{what:<40} n={:>6}  p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms",
        d.len(),
        ms(percentile(&d, 0.5)),
        ms(percentile(&d, 0.99)),
        ms(*d.last().expect("samples"))
    );
}

/// One page through the whole router; its time and body. Fails unless 200 and HTML.
async fn render(app: &axum::Router, uri: &str) -> anyhow::Result<(Duration, axum::body::Bytes)> {
    let t = Instant::now();
    let resp = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty())?)
        .await?;
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), 16 << 20).await?;
    let took = t.elapsed();
    anyhow::ensure!(
        status == StatusCode::OK && body.starts_with(b"<!DOCTYPE html>"),
        "{uri}: {status}: {}",
        String::from_utf8_lossy(&body[..body.len().min(300)])
    );
    Ok((took, body))
}

fn agent_manifest(version: &str) -> anyhow::Result<Manifest> {
    let schema = json!({"type": "object", "properties": {
        "csv": {"type": "string", "description": "CSV text"},
        "question": {"type": "string"}}, "required": ["csv", "question"]});
    let v = json!({
        "schemaVersion": 1,
        "name": "alice/render-bench",
        "version": version,
        "id": "@render",
        "displayName": "Render Bench Analyst",
        "tagline": "Answers questions about CSV data with charts",
        "description": "Reads CSV files, computes statistics and draws charts. ".repeat(20),
        "keywords": ["data", "analysis", "csv", "charts"],
        "examples": ["What is the mean of column B?", "Plot sales by month"],
        "capabilities": [
            {"name": "analyze_csv", "description": "Answer a question about a CSV file",
             "keywords": ["csv", "statistics"], "inputSchema": schema, "outputSchema": schema},
            {"name": "plot", "description": "Draw a chart of a CSV column",
             "keywords": ["chart", "plot"], "inputSchema": schema, "outputSchema": {"type": "string"}}
        ],
        "source": {"type": "remote", "endpoint": "https://render-bench.example.com/ofc"}
    });
    Ok(Manifest::from_value(&v)?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let queries = query_set(args.seed, args.n, args.per_class);
    let data = tempfile::tempdir()?;
    let index_dir = hub_core::search::index_dir(data.path());
    let t = Instant::now();
    let (n, seed, heap_mb, threads) = (args.n, args.seed, args.heap_mb, args.threads);
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let index = SearchIndex::open_or_create(&index_dir)?;
        let mut w = index.writer(WriterConfig {
            heap_bytes: heap_mb << 20,
            threads,
        })?;
        w.rebuild(0, synthetic_docs_in_reindex_order(seed, n))?;
        w.close()?;
        Ok(())
    })
    .await??;
    println!(
        "index: {} agents built in {:.1} s",
        args.n,
        t.elapsed().as_secs_f64()
    );

    let dir = data.path().to_path_buf();
    let hub = ofc_test_kit::TestHub::in_process_with(Backend::Sqlite, |c| c.data_dir = dir).await;
    for v in ["1.0.0", "1.1.0", "1.2.0"] {
        let (status, body) = hub.publish_as(&hub.user, &agent_manifest(v)?).await;
        anyhow::ensure!(status == 201, "publish {v}: {status} {body}");
    }
    let app = hub_server::app(hub.state.clone());

    let mut search = Vec::new();
    let mut bytes = 0;
    for q in &queries {
        let mut uri = format!("/search?q={}", urlencode(&q.q));
        if let Some(c) = &q.capability {
            uri.push_str(&format!("&capability={}", urlencode(c)));
        }
        render(&app, &uri).await?;
        for _ in 0..args.runs {
            let (d, b) = render(&app, &uri).await?;
            search.push(d);
            bytes += b.len();
        }
    }
    let searches = search.len();
    report("GET /search?q=… (corpus query set)", search);
    println!("  mean page size {} bytes", bytes / searches.max(1));

    let uri = "/agents/alice/render-bench";
    let (_, page) = render(&app, uri).await?;
    anyhow::ensure!(
        String::from_utf8_lossy(&page).contains("the signature verifies"),
        "the agent page does not show a verified signature"
    );
    for _ in 0..10 {
        render(&app, uri).await?;
    }
    let mut agent = Vec::with_capacity(args.agent_runs);
    let mut size = 0;
    for _ in 0..args.agent_runs {
        let (d, b) = render(&app, uri).await?;
        agent.push(d);
        size = b.len();
    }
    report("GET /agents/alice/render-bench", agent);
    println!("  page size {size} bytes");
    hub.stop().await;
    Ok(())
}

/// `application/x-www-form-urlencoded` for a query value.
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
