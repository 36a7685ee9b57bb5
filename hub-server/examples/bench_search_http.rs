//! Benchmark (not a test): `GET /api/v1/search` latency per query class over HTTP, against the
//! real hub (`hub_server::build_state` + `serve` on 127.0.0.1, SQLite) whose search index holds
//! the synthetic corpus of `hub_search::corpus`.
//!
//!   cargo run -p hub-server --release --example bench_search_http -- --n 1000000 \
//!       --index-dir /var/tmp/ofc-search-bench-http [--concurrency 4]
//!
//! The corpus is not published through the API (a million signed manifests would take hours and
//! measure publishing). Instead the index in `DATA/search-v6` is built before the hub starts, by
//! the same `Indexer::rebuild` that `ofc-hub reindex` runs, from the same `SearchDoc`s (most
//! downloaded first, as `reindex` orders them), with outbox sequence 0: the hub's database is
//! empty, so its search follower has nothing to apply (lag 0) and every query is answered from
//! the pre-built index exactly as in production — query-string parsing, `spawn_blocking`,
//! `SearchIndex::search` with highlights, JSON encoding, HTTP/1.1.
//!
//! The client (reqwest, one keep-alive connection per task) runs in the same process: a request
//! is timed from sending to the last byte of the body. Every query runs once to warm up, then
//! `--runs` times sequentially; with `--concurrency C`, C tasks then run the whole query list
//! at once and the per-request latency and total throughput are reported. Bounded: the number
//! of requests is `queries × (1 + runs)` plus `C × queries` with `--concurrency`.
//!
//! RSS is that of this process (hub + client). With `--index-dir`, run twice: the second run
//! reuses the index, so its peak RSS is the serving hub's alone.

#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hub_search::corpus::{BenchQuery, QueryClass, query_set, synthetic_docs_in_reindex_order};
use hub_search::{SearchIndex, WriterConfig};
use hub_server::Config;

#[derive(Parser)]
#[command(about = "GET /api/v1/search latency over HTTP against the real hub")]
struct Args {
    /// Agents in the corpus.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    /// Corpus seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Queries per class.
    #[arg(long, default_value_t = 50)]
    per_class: usize,
    /// Sequential runs of every query (after one warm-up request).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Then this many concurrent clients, each running every query once (0: skip).
    #[arg(long, default_value_t = 0)]
    concurrency: usize,
    /// The hub's data directory, kept and reused when it holds the same corpus (default: a
    /// temporary directory).
    #[arg(long)]
    index_dir: Option<PathBuf>,
    /// Writer heap in MiB for building the index.
    #[arg(long, default_value_t = 300)]
    heap_mb: usize,
    /// Indexing threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn status_mib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(title: &str, samples: &BTreeMap<QueryClass, (Vec<Duration>, usize)>) {
    println!("\n{title}");
    println!(
        "{:<18} {:>9} {:>9} {:>12}",
        "class", "p50 ms", "p99 ms", "empty/total"
    );
    for (class, (d, empty)) in samples {
        let mut d = d.clone();
        d.sort();
        println!(
            "{:<18} {:>9.3} {:>9.3} {:>6}/{}",
            class.name(),
            ms(percentile(&d, 0.5)),
            ms(percentile(&d, 0.99)),
            empty,
            d.len()
        );
    }
}

/// One request: the query string of `q`, the hits in the answer.
async fn search(client: &reqwest::Client, url: &str, q: &BenchQuery) -> anyhow::Result<usize> {
    let mut params = vec![("q", q.q.as_str()), ("limit", "10")];
    if let Some(c) = &q.capability {
        params.push(("capability", c));
    }
    let resp = client
        .get(format!("{url}/api/v1/search"))
        .query(&params)
        .send()
        .await?;
    let status = resp.status();
    let body = resp.bytes().await?;
    anyhow::ensure!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&body)
    );
    let v: serde_json::Value = serde_json::from_slice(&body)?;
    Ok(v["hits"].as_array().map_or(0, Vec::len))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let queries = query_set(args.seed, args.n, args.per_class);
    let tmp = tempfile::tempdir()?;
    let data_dir = args
        .index_dir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&data_dir)?;
    let index_dir = hub_core::search::index_dir(&data_dir);
    let marker = data_dir.join("ofc-bench-corpus.json");
    let wanted = format!("{{\"n\":{},\"seed\":{}}}", args.n, args.seed);
    let reuse = std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted);
    println!(
        "corpus: {} agents, seed {}; {} queries x {} runs; data dir {}",
        args.n,
        args.seed,
        queries.len(),
        args.runs,
        data_dir.display()
    );
    if reuse {
        println!("index: reused (delete the directory after changing the mapping or the writer)");
    } else {
        if index_dir.exists() {
            std::fs::remove_dir_all(&index_dir)?;
        }
        let t = Instant::now();
        let (n, seed, heap_mb, threads) = (args.n, args.seed, args.heap_mb, args.threads);
        let dir = index_dir.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            let index = SearchIndex::open_or_create(&dir)?;
            let mut w = index.writer(WriterConfig {
                heap_bytes: heap_mb << 20,
                threads,
            })?;
            // Sequence 0: the hub's (empty) outbox has nothing after it.
            w.rebuild(0, synthetic_docs_in_reindex_order(seed, n))?;
            w.close()?;
            Ok(())
        })
        .await??;
        std::fs::write(&marker, &wanted)?;
        println!(
            "index: built in {:.1} s (peak RSS so far {} MiB)",
            t.elapsed().as_secs_f64(),
            status_mib("VmHWM:")
        );
    }

    let cfg = Config {
        data_dir: data_dir.clone(),
        ..Config::default()
    };
    let state = hub_server::build_state(cfg).await?;
    let served = ofc_test_kit::Served::start(state).await;
    let url = served.url.clone();
    println!("hub: {url}; RSS {} MiB after start", status_mib("VmRSS:"));

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;
    let mut seq: BTreeMap<QueryClass, (Vec<Duration>, usize)> = BTreeMap::new();
    let started = Instant::now();
    for q in &queries {
        let hits = search(&client, &url, q).await?; // warm-up
        let e = seq.entry(q.class).or_default();
        if hits == 0 {
            e.1 += 1;
        }
        for _ in 0..args.runs {
            let t = Instant::now();
            search(&client, &url, q).await?;
            e.0.push(t.elapsed());
        }
    }
    let requests = queries.len() * (1 + args.runs);
    println!(
        "{requests} sequential requests in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    report(
        "GET /api/v1/search over HTTP, one keep-alive connection, sequential (limit 10)",
        &seq,
    );

    if args.concurrency > 0 {
        let queries = Arc::new(queries.clone());
        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..args.concurrency {
            let (client, url, queries) = (client.clone(), url.clone(), queries.clone());
            tasks.push(tokio::spawn(async move {
                let mut out: Vec<(QueryClass, Duration)> = Vec::with_capacity(queries.len());
                // Each client starts at another place in the list.
                let start = c * queries.len() / args.concurrency.max(1);
                for i in 0..queries.len() {
                    let q = &queries[(start + i) % queries.len()];
                    let t = Instant::now();
                    search(&client, &url, q).await?;
                    out.push((q.class, t.elapsed()));
                }
                anyhow::Ok(out)
            }));
        }
        let mut conc: BTreeMap<QueryClass, (Vec<Duration>, usize)> = BTreeMap::new();
        let mut total = 0;
        for t in tasks {
            for (class, d) in t.await?? {
                conc.entry(class).or_default().0.push(d);
                total += 1;
            }
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "\n{total} requests from {} concurrent clients in {secs:.1} s: {:.0} requests/s",
            args.concurrency,
            total as f64 / secs
        );
        report(
            &format!(
                "GET /api/v1/search over HTTP, {} concurrent clients (limit 10)",
                args.concurrency
            ),
            &conc,
        );
    }

    println!(
        "\nRSS of the process (hub + client): {} MiB now, peak {} MiB{}",
        status_mib("VmRSS:"),
        status_mib("VmHWM:"),
        if reuse {
            " (index reused: the peak is the serving hub's)"
        } else {
            " (the peak includes building the index in this run)"
        }
    );
    served.stop().await;
    Ok(())
}
