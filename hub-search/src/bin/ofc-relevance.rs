//! Prints nDCG@10 for every judged query of the relevance sets (the main one and the small
//! hub, or `--dir`), then the means of the tuning and held-out halves. `--paraphrase` runs the
//! paraphrase set instead; `--overlap` prints, for each of its queries, the words it shares
//! with its best-judged agents.
//!
//! `cargo run -p hub-search --release --bin ofc-relevance [-- --dir DIR] [--paraphrase] [--overlap] [--verbose]`

#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use clap::Parser;
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
    let dirs = match &args.dir {
        Some(d) => vec![("given", d.clone())],
        None if args.paraphrase => vec![("paraphrase", relevance::paraphrase_dir().to_owned())],
        None => vec![
            ("main", relevance::default_dir().to_owned()),
            ("small hub", relevance::small_dir().to_owned()),
        ],
    };
    let mut all = Vec::new();
    let mut agents_total = 0;
    for (label, dir) in dirs {
        let agents = relevance::agents_of(&dir)?;
        let queries = relevance::load_queries(&dir)?;
        let index = relevance::index_of(&agents)?;
        let results = relevance::evaluate(&index, &queries)?;
        println!(
            "# {label} set: {} agents, {} queries",
            agents.len(),
            queries.len()
        );
        println!("{:>7}  {:<7}  query", "nDCG@10", "split");
        for r in &results {
            let label = match &r.query.capability {
                Some(c) => format!("{:?} capability={c}", r.query.q),
                None => format!("{:?}", r.query.q),
            };
            println!("{:>7.3}  {:<7}  {label}", r.ndcg, r.query.split.as_str());
            if args.verbose {
                for (i, name) in r.ranked.iter().enumerate() {
                    let grade = r.query.relevant.get(name).copied().unwrap_or(0);
                    println!("                    {:>2}. {name} ({grade})", i + 1);
                }
            }
        }
        for split in [Split::Tune, Split::Heldout] {
            let (mean, n) = relevance::mean_ndcg(&results, Some(split));
            println!(
                "{mean:>7.3}  mean of the {} half ({n} queries)",
                split.as_str()
            );
        }
        println!();
        agents_total += agents.len();
        all.extend(results);
    }
    for split in [Split::Tune, Split::Heldout] {
        let (mean, n) = relevance::mean_ndcg(&all, Some(split));
        println!(
            "{mean:>7.3}  {} half, both sets ({n} queries, {agents_total} agents)",
            split.as_str()
        );
    }
    let (mean, n) = relevance::mean_ndcg(&all, None);
    println!("{mean:>7.3}  all {n} queries");
    Ok(())
}
