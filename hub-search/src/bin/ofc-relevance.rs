//! Prints nDCG@10 for every judged query of the relevance sets (the main one and the small
//! hub, or `--dir`), then the means of the tuning and held-out halves.
//!
//! `cargo run -p hub-search --release --bin ofc-relevance [-- --dir DIR] [--verbose]`

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
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dirs = match &args.dir {
        Some(d) => vec![("given", d.clone())],
        None => vec![
            ("main", relevance::default_dir().to_owned()),
            ("small hub", relevance::small_dir().to_owned()),
        ],
    };
    let mut all = Vec::new();
    let mut agents_total = 0;
    for (label, dir) in dirs {
        let agents = relevance::load_agents(&dir)?;
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
