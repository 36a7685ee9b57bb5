//! Hybrid search at scale (issue 34): embedding throughput, the index and vector build, and
//! hybrid / semantic query latency with the exact scan and the IVF index, on the synthetic
//! corpus.
//!
//! The model embeds a sample of the synthetic agents for real (`--sample`, throughput measured
//! there). Embedding a million texts on 2 cores would take hours, so each agent's vector is
//! then made cheaply: the real embedding of sample agent `i % sample`, plus Gaussian noise of
//! `--noise` per component, normalised. Queries are the paraphrase set's and the judged sets'
//! texts, embedded by the model for real on every query (their time is part of a query's).
//!
//! `cargo run -p hub-search --release --bin ofc-hybrid-bench -- --n 1000000 --model DIR`

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use clap::Parser;
use hub_search::corpus::{synthetic_agent, synthetic_docs_in_reindex_order};
use hub_search::embed::store::VectorStore;
use hub_search::embed::{self, Embedder};
use hub_search::hybrid::Semantic;
use hub_search::hybrid::nearest::{self, IvfParams};
use hub_search::{SearchIndex, SearchMode, SearchQuery, WriterConfig, relevance};

#[derive(Parser)]
#[command(about = "hybrid search latency and build at scale")]
struct Args {
    /// Agents.
    #[arg(long, default_value_t = 100_000)]
    n: u64,
    /// The embedding model's directory (`scripts/peers/search-model` prints it).
    #[arg(long)]
    model: PathBuf,
    /// Agents embedded for real (throughput measured on them; the others' vectors derive
    /// from theirs).
    #[arg(long, default_value_t = 4000)]
    sample: usize,
    /// Gaussian noise added to each component of a derived vector.
    #[arg(long, default_value_t = 0.02)]
    noise: f32,
    /// Timed runs over the query texts.
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// IVF lists probed, comma-separated values to compare (0: the default).
    #[arg(long, default_value = "0")]
    probe: String,
    /// Directory for the index and the vectors (a temporary one when absent).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also print this many slowest query texts of each mode (their median over the runs).
    #[arg(long, default_value_t = 0)]
    slowest: usize,
}

/// A tiny deterministic generator (xorshift) and Box–Muller for the noise.
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        #[allow(clippy::cast_precision_loss)]
        let u = (self.0 >> 40) as f32 / (1u64 << 24) as f32;
        u.max(1e-7)
    }

    fn gaussian(&mut self) -> f32 {
        let (a, b) = (self.uniform(), self.uniform());
        (-2.0 * a.ln()).sqrt() * (std::f32::consts::TAU * b).cos()
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_owned());
    std::fs::create_dir_all(&dir)?;
    let embedder = Arc::new(Embedder::load(&args.model)?);
    println!("# {} agents, model {}", args.n, embedder.model_id());

    // Embedding throughput: the sample's agent texts, for real.
    let sample_n = args.sample.min(usize::try_from(args.n)?);
    let texts: Vec<String> = (0..sample_n as u64)
        .map(|i| embed::agent_text(&synthetic_agent(1, i).to_doc().expect("valid agent")))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let real = embedder.embed(&refs)?;
    let secs = t.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let per_s = sample_n as f64 / secs;
    println!("embedding: {sample_n} agent texts in {secs:.1} s = {per_s:.0} agents/s");

    // The keyword index, as ofc-hub reindex builds it.
    let rss0 = rss_mib();
    let t = Instant::now();
    let index = SearchIndex::open_or_create(&dir.join("index"))?;
    let mut w = index.writer(WriterConfig {
        heap_bytes: 300 << 20,
        threads: 2,
    })?;
    w.rebuild(1, synthetic_docs_in_reindex_order(1, args.n))?;
    w.close()?;
    index.refresh()?;
    println!("keyword index build: {:.1} s", t.elapsed().as_secs_f64());

    // The vectors: real ones for the sample, derived ones for the rest.
    let t = Instant::now();
    let mut store = VectorStore::open(&dir, embedder.model_id())?;
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut v = vec![0f32; Embedder::DIM];
    for i in 0..args.n {
        let name = synthetic_agent(1, i).name;
        #[allow(clippy::cast_possible_truncation)]
        let base = &real[(i % sample_n as u64) as usize];
        if i < sample_n as u64 {
            v.copy_from_slice(base);
        } else {
            for (x, b) in v.iter_mut().zip(base) {
                *x = b + args.noise * noise.gaussian();
            }
            embed::normalize(&mut v);
        }
        store.upsert(&name, i, &v);
    }
    store.commit(1)?;
    let store_secs = t.elapsed().as_secs_f64();
    let vector_bytes = store.vector_bytes();
    let semantic = Semantic::new(Arc::clone(&embedder), Arc::new(RwLock::new(store)));
    println!("vector store: {store_secs:.1} s to fill and write");
    let t = Instant::now();
    let ivf = semantic.build_ann(IvfParams::default());
    println!(
        "IVF build: {:.1} s, {} lists",
        t.elapsed().as_secs_f64(),
        ivf.lists()
    );
    #[allow(clippy::cast_precision_loss)]
    let per_agent = |b: usize| b as f64 / args.n as f64;
    println!(
        "memory per agent: vectors {:.0} B, IVF {:.0} B; RSS {} → {} MiB",
        per_agent(vector_bytes),
        per_agent(ivf.heap_bytes()),
        rss0,
        rss_mib()
    );

    // Queries: the relevance sets' texts.
    let mut queries: Vec<String> = Vec::new();
    for d in [
        relevance::paraphrase_dir(),
        relevance::default_dir(),
        relevance::small_dir(),
    ] {
        queries.extend(
            relevance::load_queries(d)?
                .into_iter()
                .map(|q| q.q)
                .filter(|q| !q.is_empty()),
        );
    }
    // The exact scan, and the IVF index's recall against it (top 10), probe by probe.
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| Ok(embedder.embed_one(q)?))
        .collect::<anyhow::Result<_>>()?;
    let store = semantic.vectors().read().expect("store");
    let mut exact_ms = Vec::new();
    let mut exact = Vec::new();
    for qv in &vectors {
        let t = Instant::now();
        exact.push(nearest::exact(&store, qv, 10));
        exact_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    exact_ms.sort_by(f64::total_cmp);
    println!(
        "exact scan top 10: p50 {:.2} / p99 {:.2} ms",
        percentile(&exact_ms, 0.5),
        percentile(&exact_ms, 0.99)
    );
    for probe in args.probe.split(',') {
        let probe: usize = probe.trim().parse()?;
        let mut found = 0usize;
        let mut ms = Vec::new();
        for (qv, exact) in vectors.iter().zip(&exact) {
            let t = Instant::now();
            let approx = ivf.search(qv, 10, probe);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            found += approx
                .iter()
                .filter(|a| exact.iter().any(|e| e.0 == a.0))
                .count();
        }
        ms.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)]
        let recall = found as f64 / (queries.len() * 10) as f64;
        println!(
            "IVF probe {probe} (0: default): p50 {:.2} / p99 {:.2} ms, recall@10 vs exact {recall:.3}",
            percentile(&ms, 0.5),
            percentile(&ms, 0.99)
        );
    }
    drop(store);
    for mode in [
        SearchMode::Keyword,
        SearchMode::Semantic,
        SearchMode::Hybrid,
    ] {
        let mut ms = Vec::new();
        let mut per_text = vec![Vec::new(); queries.len()];
        for run in 0..=args.runs {
            for (i, text) in queries.iter().enumerate() {
                let mut q = SearchQuery::text(text);
                q.limit = 10;
                q.mode = Some(mode);
                let t = Instant::now();
                let page = index.search_with(&q, Some(&semantic))?;
                if run > 0 {
                    let took = t.elapsed().as_secs_f64() * 1e3;
                    ms.push(took);
                    per_text[i].push(took);
                }
                std::hint::black_box(page);
            }
        }
        ms.sort_by(f64::total_cmp);
        if args.slowest > 0 && args.runs > 0 {
            let mut medians: Vec<(f64, &str)> = per_text
                .iter_mut()
                .zip(&queries)
                .map(|(t, q)| {
                    t.sort_by(f64::total_cmp);
                    (t[t.len() / 2], q.as_str())
                })
                .collect();
            medians.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (took, text) in medians.iter().take(args.slowest) {
                println!("  slow {}: {took:.2} ms {text:?}", mode.as_str());
            }
        }
        println!(
            "{:<8} p50 {:.2} / p99 {:.2} ms ({} queries × {} runs, query embedding included)",
            mode.as_str(),
            percentile(&ms, 0.5),
            percentile(&ms, 0.99),
            queries.len(),
            args.runs
        );
    }
    let mut embed_ms = Vec::new();
    for text in &queries {
        let t = Instant::now();
        std::hint::black_box(embedder.embed_one(text)?);
        embed_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    embed_ms.sort_by(f64::total_cmp);
    println!(
        "query embedding alone: p50 {:.2} / p99 {:.2} ms; peak RSS {} MiB",
        percentile(&embed_ms, 0.5),
        percentile(&embed_ms, 0.99),
        rss_mib()
    );
    Ok(())
}
