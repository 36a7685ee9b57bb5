//! Writes the deterministic synthetic corpus (JSON lines of `{manifest, stats}`) and its query
//! set.
//!
//! `cargo run -p hub-search --release --bin ofc-corpus -- --n 1000000 --out corpus.jsonl --queries queries.json`

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Parser;
use hub_search::corpus::{query_set, synthetic_agent};

#[derive(Parser)]
#[command(about = "Generate the synthetic agent corpus and query set")]
struct Args {
    /// Number of agents.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    /// Seed: the same seed gives the same corpus.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file for the agents (JSON lines); `-` for stdout.
    #[arg(long, default_value = "-")]
    out: String,
    /// Also write the query set (JSON) here.
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Queries per class.
    #[arg(long, default_value_t = 50)]
    per_class: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let sink: Box<dyn Write> = if args.out == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(&args.out)?)
    };
    let mut out = BufWriter::new(sink);
    for i in 0..args.n {
        let doc = synthetic_agent(args.seed, i)
            .to_doc()
            .map_err(anyhow::Error::msg)?;
        serde_json::to_writer(&mut out, &doc)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    if let Some(path) = args.queries {
        let qs = query_set(args.seed, args.n, args.per_class);
        std::fs::write(path, serde_json::to_vec_pretty(&qs)?)?;
    }
    Ok(())
}
