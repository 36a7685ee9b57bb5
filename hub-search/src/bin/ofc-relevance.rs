//! Prints nDCG@10 for every judged query of the relevance sets (the main one and the small
//! hub, or `--dir`), then the means of the tuning and held-out halves. `--paraphrase` runs the
//! paraphrase set instead; `--overlap` prints, for each of its queries, the words it shares
//! with its best-judged agents.
//!
//! `--mode keyword,hybrid --model DIR` compares modes side by side (semantic and hybrid embed
//! the agents and queries with the model in DIR); `--rrf-k` and the other fusion flags override
//! the hub's fusion settings, for tuning on the tune half.
//!
//! `cargo run -p hub-search --release --bin ofc-relevance [-- --dir DIR] [--paraphrase] [--overlap] [--mode M,M] [--model DIR] [--verbose]`

#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use std::sync::Arc;

use clap::Parser;
use hub_search::SearchMode;
use hub_search::embed::Embedder;
use hub_search::hybrid::Fusion;
use hub_search::relevance::{self, Split};

#[derive(Parser)]
#[command(about = "nDCG@10 of hub search on the judged relevance set")]
struct Args {
    /// Directory with agents.jsonl and queries.json.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also print the top results of every query.
    #[arg(long)]
    verbose: bool,
    /// The paraphrase set (`relevance/paraphrase/`) instead of the main and small sets.
    #[arg(long, conflicts_with = "dir")]
    paraphrase: bool,
    /// Print the words each paraphrase query shares with its agents graded 3, then stop.
    #[arg(long, requires = "paraphrase")]
    overlap: bool,
    /// Modes to evaluate, comma-separated: keyword, semantic, hybrid.
    #[arg(long, default_value = "keyword")]
    mode: String,
    /// The embedding model's directory (for semantic and hybrid).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Fusion: RRF's k (tuning; the default is the hub's).
    #[arg(long)]
    rrf_k: Option<f32>,
    /// Fusion: the keyword ranking's weight.
    #[arg(long)]
    keyword_weight: Option<f32>,
    /// Fusion: the meaning ranking's weight.
    #[arg(long)]
    semantic_weight: Option<f32>,
    /// Fusion: the factor on the keyword weight for a hit lacking some words.
    #[arg(long)]
    partial_factor: Option<f32>,
    /// Fusion: hits taken from each side.
    #[arg(long)]
    depth: Option<usize>,
    /// Fusion: the lowest cosine similarity a meaning candidate may have.
    #[arg(long)]
    min_similarity: Option<f32>,
}

/// The words each query shares with its grade-3 agents (the most any of them shares), and how
/// many queries share 0, 1, 2, ... words.
fn print_overlap() -> anyhow::Result<()> {
    let dir = relevance::paraphrase_dir();
    let agents = relevance::agents_of(dir)?;
    let queries = relevance::load_queries(dir)?;
    let mut histogram = std::collections::BTreeMap::<usize, usize>::new();
    let mut any_relevant = std::collections::BTreeMap::<usize, usize>::new();
    for q in &queries {
        let shared = |grade: Option<u8>| -> Vec<String> {
            q.relevant
                .iter()
                .filter(|(_, g)| grade.is_none_or(|x| **g == x))
                .filter_map(|(name, _)| agents.iter().find(|a| a.name().to_string() == *name))
                .map(|a| relevance::shared_words(&q.q, a))
                .max_by_key(Vec::len)
                .unwrap_or_default()
        };
        let best = shared(Some(3));
        let any = shared(None);
        *histogram.entry(best.len()).or_default() += 1;
        *any_relevant.entry(any.len()).or_default() += 1;
        println!(
            "{:>2}  {:<7}  {:?}  {:?}",
            best.len(),
            q.split.as_str(),
            q.q,
            best
        );
    }
    println!("# {} queries over {} agents", queries.len(), agents.len());
    for (n, count) in &histogram {
        println!("{count:>4} queries share {n} content word(s) with their closest grade-3 agent");
    }
    for (n, count) in &any_relevant {
        println!("{count:>4} queries share {n} content word(s) with their closest relevant agent");
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.overlap {
        return print_overlap();
    }
    let modes = args
        .mode
        .split(',')
        .map(|m| match m.trim() {
            "keyword" => Ok(SearchMode::Keyword),
            "semantic" => Ok(SearchMode::Semantic),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => anyhow::bail!("--mode: unknown mode `{other}`"),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let embedder = match &args.model {
        Some(dir) => Some(Arc::new(Embedder::load(dir)?)),
        None if modes.iter().any(|m| *m != SearchMode::Keyword) => {
            anyhow::bail!("--mode semantic or hybrid needs --model DIR (the embedding model)")
        }
        None => None,
    };
    let dirs = match &args.dir {
        Some(d) => vec![("given", d.clone())],
        None if args.paraphrase => vec![("paraphrase", relevance::paraphrase_dir().to_owned())],
        None => vec![
            ("main", relevance::default_dir().to_owned()),
            ("small hub", relevance::small_dir().to_owned()),
        ],
    };
    let names: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
    let mut all: Vec<Vec<relevance::Evaluated>> = vec![Vec::new(); modes.len()];
    let mut agents_total = 0;
    for (label, dir) in dirs {
        let agents = relevance::agents_of(&dir)?;
        let queries = relevance::load_queries(&dir)?;
        let index = relevance::index_of(&agents)?;
        let vectors_dir = tempfile::tempdir()?;
        let semantic = match &embedder {
            Some(e) => {
                let mut s = relevance::semantic_of(&agents, Arc::clone(e), vectors_dir.path())?;
                s.fusion = fusion(&args, s.fusion);
                Some(s)
            }
            None => None,
        };
        let results = modes
            .iter()
            .map(|m| relevance::evaluate_in(&index, semantic.as_ref(), *m, &queries))
            .collect::<anyhow::Result<Vec<_>>>()?;
        println!(
            "# {label} set: {} agents, {} queries",
            agents.len(),
            queries.len()
        );
        let columns: Vec<String> = names.iter().map(|n| format!("{n:>8}")).collect();
        println!("{}  {:<7}  query (nDCG@10)", columns.join(" "), "split");
        for (i, q) in queries.iter().enumerate() {
            let label = match &q.capability {
                Some(c) => format!("{:?} capability={c}", q.q),
                None => format!("{:?}", q.q),
            };
            let scores: Vec<String> = results
                .iter()
                .map(|r| format!("{:>8.3}", r[i].ndcg))
                .collect();
            println!("{}  {:<7}  {label}", scores.join(" "), q.split.as_str());
            if args.verbose {
                for (m, r) in names.iter().zip(&results) {
                    for (rank, name) in r[i].ranked.iter().enumerate() {
                        let grade = q.relevant.get(name).copied().unwrap_or(0);
                        println!("          {m:>8} {:>2}. {name} ({grade})", rank + 1);
                    }
                }
            }
        }
        for split in [Split::Tune, Split::Heldout] {
            let means: Vec<String> = results
                .iter()
                .map(|r| format!("{:>8.3}", relevance::mean_ndcg(r, Some(split)).0))
                .collect();
            let n = relevance::mean_ndcg(&results[0], Some(split)).1;
            println!(
                "{}  mean of the {} half ({n} queries)",
                means.join(" "),
                split.as_str()
            );
        }
        println!();
        agents_total += agents.len();
        for (a, r) in all.iter_mut().zip(results) {
            a.extend(r);
        }
    }
    println!(
        "{}  ({agents_total} agents)",
        names
            .iter()
            .map(|n| format!("{n:>8}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for split in [Split::Tune, Split::Heldout] {
        let means: Vec<String> = all
            .iter()
            .map(|r| format!("{:>8.3}", relevance::mean_ndcg(r, Some(split)).0))
            .collect();
        let n = relevance::mean_ndcg(&all[0], Some(split)).1;
        println!(
            "{}  {} half, every set ({n} queries)",
            means.join(" "),
            split.as_str()
        );
    }
    let means: Vec<String> = all
        .iter()
        .map(|r| format!("{:>8.3}", relevance::mean_ndcg(r, None).0))
        .collect();
    println!("{}  all {} queries", means.join(" "), all[0].len());
    Ok(())
}

/// The fusion settings with the command line's overrides.
fn fusion(args: &Args, mut f: Fusion) -> Fusion {
    if let Some(v) = args.rrf_k {
        f.rrf_k = v;
    }
    if let Some(v) = args.keyword_weight {
        f.keyword_weight = v;
    }
    if let Some(v) = args.semantic_weight {
        f.semantic_weight = v;
    }
    if let Some(v) = args.partial_factor {
        f.partial_factor = v;
    }
    if let Some(v) = args.depth {
        f.depth = v;
    }
    if let Some(v) = args.min_similarity {
        f.min_similarity = v;
    }
    f
}
