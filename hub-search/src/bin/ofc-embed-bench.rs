//! Embedding benchmark: how fast the hub embeds agents (the follower's batches) and queries
//! (one short text at a time), and what the vector store costs on disk and in memory.
//!
//! `cargo run --release -p hub-search --bin ofc-embed-bench -- --model-dir "$(scripts/peers/search-model)"`
//!
//! The agents are the synthetic corpus's (`ofc-search-bench`'s), embedded from
//! [`agent_text`]. The machine's load average is printed before and after: the figures are
//! only comparable on a quiet machine.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use hub_search::corpus::synthetic_agent;
use hub_search::embed::store::VectorStore;
use hub_search::embed::{Embedder, agent_text, text_hash};

#[derive(Parser)]
#[command(about = "Benchmark the hub's sentence embeddings")]
struct Args {
    /// The model directory (`scripts/peers/search-model` prints it).
    #[arg(long, env = "OFC_SEARCH_MODEL_DIR")]
    model_dir: PathBuf,
    /// Agents embedded.
    #[arg(long, default_value_t = 2000)]
    n: u64,
    /// Corpus seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Agents per `embed` call (the follower reads 256 outbox entries at a time).
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Queries embedded one at a time (the hybrid search's cost per query).
    #[arg(long, default_value_t = 200)]
    queries: usize,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn vm_hwm_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// CPU seconds this process used (user + system), from `/proc/self/stat` (100 ticks a second).
#[allow(clippy::cast_precision_loss)]
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command's closing parenthesis; utime and stime are 14 and 15.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .map_or(0.0, |ticks| ticks as f64 / 100.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[allow(clippy::cast_precision_loss)]
fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    println!(
        "cpus available: {}, load average (1/5/15 min) at start: {}",
        std::thread::available_parallelism().map_or(0, usize::from),
        loadavg()
    );
    let t = Instant::now();
    let embedder = Embedder::load(&args.model_dir)?;
    println!(
        "model {} loaded in {:.0} ms",
        embedder.model_id(),
        ms(t.elapsed())
    );

    let docs: Vec<_> = (0..args.n)
        .map(|i| {
            synthetic_agent(args.seed, i)
                .to_doc()
                .map_err(anyhow::Error::msg)
        })
        .collect::<anyhow::Result<_>>()?;
    let texts: Vec<String> = docs.iter().map(agent_text).collect();
    let chars: usize = texts.iter().map(String::len).sum();
    println!(
        "{} agents, {:.0} bytes of text each on average",
        docs.len(),
        chars as f64 / docs.len().max(1) as f64
    );

    // Agents, in the follower's batches.
    let (t, cpu) = (Instant::now(), cpu_secs());
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(args.batch.max(1)) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        vectors.extend(embedder.embed(&refs)?);
    }
    let took = t.elapsed();
    let cpu = cpu_secs() - cpu;
    println!(
        "agents: {:.0} agents/s ({:.2} ms each, batches of {}); {:.0} agents per CPU-second \
         ({:.1} CPU-s, {:.2} cores busy on average)",
        docs.len() as f64 / took.as_secs_f64(),
        ms(took) / docs.len().max(1) as f64,
        args.batch,
        docs.len() as f64 / cpu.max(0.01),
        cpu,
        cpu / took.as_secs_f64()
    );

    // Queries, one at a time.
    let queries = [
        "something that reads my invoices and fills a spreadsheet",
        "translate documents",
        "book a meeting room",
        "summarise long pdf reports for my manager",
        "watch prices",
    ];
    let mut lat = Vec::with_capacity(args.queries);
    for i in 0..args.queries {
        let t = Instant::now();
        embedder.embed_one(queries[i % queries.len()])?;
        lat.push(t.elapsed());
    }
    lat.sort_unstable();
    if !lat.is_empty() {
        println!(
            "queries: p50 {:.2} ms, p99 {:.2} ms (one short text per call, on this thread)",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        );
    }

    // The store: one commit of every vector, reopening, an exact scan.
    let dir = tempfile::tempdir()?;
    let mut store = VectorStore::open(dir.path(), embedder.model_id())?;
    for ((d, text), v) in docs.iter().zip(&texts).zip(&vectors) {
        store.upsert(&d.name().to_string(), text_hash(text), v);
    }
    let t = Instant::now();
    store.commit(1)?;
    let commit = t.elapsed();
    let file = std::fs::metadata(dir.path().join(hub_search::embed::store::FILE_NAME))?.len();
    let t = Instant::now();
    let reopened = VectorStore::open(dir.path(), embedder.model_id())?;
    let open = t.elapsed();
    let query = embedder.embed_one(queries[0])?;
    let t = Instant::now();
    let best = reopened
        .iter()
        .map(|(k, v)| (v.dot(&query), k))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let scan = t.elapsed();
    println!(
        "store: {:.0} bytes per agent on disk, {} bytes of vector data per agent in memory; \
         commit of all {:.0} ms, open {:.0} ms, exact scan {:.2} ms (best {:?})",
        file as f64 / docs.len().max(1) as f64,
        reopened.vector_bytes() / reopened.len().max(1),
        ms(commit),
        ms(open),
        ms(scan),
        best.map(|(s, k)| format!("{k} {s:.3}"))
    );
    println!(
        "peak RSS {} MiB; load average at the end: {}",
        vm_hwm_mib(),
        loadavg()
    );
    Ok(())
}
