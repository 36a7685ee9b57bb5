//! Prints nDCG@10 for every judged query of the relevance set, then the mean.
//!
//! `cargo run -p hub-search --release --bin ofc-relevance [-- --dir DIR] [--verbose]`

#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use clap::Parser;
use hub_search::relevance;

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
    let dir = args
        .dir
        .unwrap_or_else(|| relevance::default_dir().to_owned());
    let agents = relevance::load_agents(&dir)?;
    let queries = relevance::load_queries(&dir)?;
    let index = relevance::index_of(&agents)?;
    let results = relevance::evaluate(&index, &queries)?;
    println!("{:>7}  query", "nDCG@10");
    for r in &results {
        let label = match &r.query.capability {
            Some(c) => format!("{:?} capability={c}", r.query.q),
            None => format!("{:?}", r.query.q),
        };
        println!("{:>7.3}  {label}", r.ndcg);
        if args.verbose {
            for (i, name) in r.ranked.iter().enumerate() {
                let grade = r.query.relevant.get(name).copied().unwrap_or(0);
                println!("           {:>2}. {name} ({grade})", i + 1);
            }
        }
    }
    let mean = results.iter().map(|r| r.ndcg).sum::<f64>() / results.len() as f64;
    println!(
        "{mean:>7.3}  mean over {} queries, {} agents",
        results.len(),
        agents.len()
    );
    Ok(())
}
