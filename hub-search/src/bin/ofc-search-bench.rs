//! Search benchmark: builds the index of the synthetic corpus, measures build time, peak RSS
//! and per-class query latency, then does the same with SQLite FTS5 (bm25) on the same corpus
//! and queries.
//!
//! `cargo run -p hub-search --release --bin ofc-search-bench -- --n 1000000`

#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::Parser;
use hub_search::corpus::{
    BenchQuery, QueryClass, query_set, synthetic_agent, synthetic_docs_in_reindex_order,
};
use hub_search::words::query_words;
use hub_search::{SearchIndex, SearchQuery, WriterConfig};

#[derive(Parser)]
#[command(about = "Benchmark hub search against SQLite FTS5")]
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
    /// Runs of every query (after one warm-up run).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Writer heap in MiB (default: `ofc-hub reindex`'s, `WriterConfig::rebuild`).
    #[arg(long, default_value_t = WriterConfig::rebuild().heap_bytes >> 20)]
    heap_mb: usize,
    /// Indexing threads (default: `ofc-hub reindex`'s, `WriterConfig::rebuild`).
    #[arg(long, default_value_t = WriterConfig::rebuild().threads)]
    threads: usize,
    /// Skip the SQLite FTS5 side.
    #[arg(long)]
    skip_fts5: bool,
    /// Only these query classes (comma-separated kebab-case names; default: all).
    #[arg(long, value_delimiter = ',')]
    class: Vec<String>,
    /// Keep the Tantivy index in this directory and reuse it on the next run when it holds
    /// the same corpus (default: a temporary directory, removed at the end).
    #[arg(long)]
    index_dir: Option<std::path::PathBuf>,
    /// Also print the slowest queries (median of the runs) of every class.
    #[arg(long, default_value_t = 0)]
    slowest: usize,
    /// Only the queries of the set with this text (repeatable; for profiling one query).
    #[arg(long)]
    query: Vec<String>,
}

fn vm_hwm_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

fn dir_size(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Per class: every sample, the count of queries without hits, and per query its text and
/// median.
#[derive(Default)]
struct ClassSamples {
    all: Vec<Duration>,
    empty: usize,
    per_query: Vec<(String, Duration)>,
}

fn report(name: &str, samples: &BTreeMap<QueryClass, ClassSamples>, slowest: usize) {
    println!("\n{name}: latency per query class (limit 10)");
    println!(
        "{:<18} {:>9} {:>9} {:>12}",
        "class", "p50 ms", "p99 ms", "no hits"
    );
    for (class, c) in samples {
        let mut d = c.all.clone();
        d.sort();
        println!(
            "{:<18} {:>9.3} {:>9.3} {:>5}/{} queries",
            class.name(),
            percentile(&d, 0.5).as_secs_f64() * 1e3,
            percentile(&d, 0.99).as_secs_f64() * 1e3,
            c.empty,
            c.per_query.len()
        );
    }
    if slowest > 0 {
        for (class, c) in samples {
            let mut q = c.per_query.clone();
            q.sort_by_key(|x| std::cmp::Reverse(x.1));
            for (text, d) in q.iter().take(slowest) {
                println!(
                    "  {:<18} {:>9.3} ms  {text}",
                    class.name(),
                    d.as_secs_f64() * 1e3
                );
            }
        }
    }
}

fn measure(
    queries: &[BenchQuery],
    runs: usize,
    mut run: impl FnMut(&BenchQuery) -> anyhow::Result<usize>,
) -> anyhow::Result<BTreeMap<QueryClass, ClassSamples>> {
    let mut out: BTreeMap<QueryClass, ClassSamples> = BTreeMap::new();
    for q in queries {
        let hits = run(q)?; // warm-up
        let e = out.entry(q.class).or_default();
        if hits == 0 {
            e.empty += 1;
        }
        let mut mine = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            run(q)?;
            mine.push(t.elapsed());
        }
        e.all.extend(&mine);
        mine.sort();
        let label = match &q.capability {
            Some(c) => format!("{:?} capability={c}", q.q),
            None => format!("{:?}", q.q),
        };
        e.per_query.push((label, mine[mine.len() / 2]));
    }
    Ok(out)
}

/// The FTS5 MATCH expression for the same words: every word required, the last as a prefix.
fn fts5_match(q: &BenchQuery) -> Option<String> {
    let words = query_words(&q.q);
    let mut parts: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let quoted = format!("\"{}\"", w.replace('"', "\"\""));
            if i + 1 == words.len() && w.chars().count() >= 3 {
                format!("{quoted}*")
            } else {
                quoted
            }
        })
        .collect();
    if let Some(c) = &q.capability {
        parts.push(format!("capabilities : \"{}\"", c.replace('"', "\"\"")));
    }
    (!parts.is_empty()).then(|| parts.join(" AND "))
}

/// Optimal string alignment distance (a transposition counts one edit, as in the hub's typo
/// matching), or `max + 1` once it exceeds `max`.
fn edit_distance(a: &str, b: &str, max: usize) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > max {
        return max + 1;
    }
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
            row_min = row_min.min(d);
        }
        if row_min > max {
            return max + 1;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()].min(max + 1)
}

/// The FTS5 MATCH expression with typo tolerance added the usual SQLite way: a table of the
/// corpus's words and an edit-distance function. A word the table has (it occurs in the
/// corpus) is kept; any other word of 4 or more characters is replaced by the words within 1
/// edit (2 from 8 characters, the hub's rule), looked up among the words that share its first
/// letter (a range of the table's primary key; the benchmark's typos keep the first letter).
fn fts5_typo_match(
    words_stmt: &mut rusqlite::Statement<'_>,
    known_stmt: &mut rusqlite::Statement<'_>,
    q: &BenchQuery,
) -> anyhow::Result<Option<String>> {
    let words = query_words(&q.q);
    let mut parts = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let quoted = |w: &str| format!("\"{}\"", w.replace('"', "\"\""));
        let last = i + 1 == words.len() && w.chars().count() >= 3;
        let known: bool = known_stmt.exists([w])?;
        let n = w.chars().count();
        if known || n < 4 {
            parts.push(if last {
                format!("{}*", quoted(w))
            } else {
                quoted(w)
            });
            continue;
        }
        let max = if n >= 8 { 2 } else { 1 };
        let first: String = w.chars().take(1).collect();
        let next: String = first
            .chars()
            .map(|c| char::from_u32(c as u32 + 1).unwrap_or(c))
            .collect();
        let candidates: Vec<String> = words_stmt
            .query_map(rusqlite::params![first, next, w, max as i64], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        if candidates.is_empty() {
            parts.push(quoted(w));
        } else {
            let alts: Vec<String> = candidates.iter().map(|c| quoted(c)).collect();
            parts.push(format!("({})", alts.join(" OR ")));
        }
    }
    if let Some(c) = &q.capability {
        parts.push(format!("capabilities : \"{}\"", c.replace('"', "\"\"")));
    }
    Ok((!parts.is_empty()).then(|| parts.join(" AND ")))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut queries = query_set(args.seed, args.n, args.per_class);
    if !args.class.is_empty() {
        queries.retain(|q| args.class.iter().any(|c| c == q.class.name()));
    }
    if !args.query.is_empty() {
        queries.retain(|q| args.query.contains(&q.q));
        anyhow::ensure!(
            !queries.is_empty(),
            "no query of the set has the text of --query (see --slowest for the set's queries)"
        );
    }
    println!(
        "corpus: {} agents, seed {}; {} queries x {} runs; writer heap {} MiB, {} threads",
        args.n,
        args.seed,
        queries.len(),
        args.runs,
        args.heap_mb,
        args.threads
    );

    let tmp = tempfile::tempdir()?;
    let index_dir = match &args.index_dir {
        Some(d) => d.clone(),
        None => tmp.path().join(hub_search::index::INDEX_DIR_NAME),
    };
    // The marker names the corpus the kept index holds; anything else is rebuilt.
    let marker = index_dir.join("ofc-bench-corpus.json");
    let wanted = format!("{{\"n\":{},\"seed\":{}}}", args.n, args.seed);
    let reuse = std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted);
    if !reuse && index_dir.exists() {
        std::fs::remove_dir_all(&index_dir)?;
    }
    let index = SearchIndex::open_or_create(&index_dir)?;
    let seed = args.seed;
    if reuse {
        println!(
            "tantivy: reusing the index in {} (delete it after changing the mapping or the writer)",
            index_dir.display()
        );
    } else {
        let t = Instant::now();
        let mut w = index.writer(WriterConfig {
            heap_bytes: args.heap_mb << 20,
            threads: args.threads,
        })?;
        // In the order `ofc-hub reindex` writes (see `Indexer::rebuild`).
        w.rebuild(args.n, synthetic_docs_in_reindex_order(seed, args.n))?;
        let build = t.elapsed();
        w.close()?;
        let merged = t.elapsed();
        println!(
            "tantivy: build {:.1} s (commit and merge into one segment), {:.1} s closed",
            build.as_secs_f64(),
            merged.as_secs_f64(),
        );
        std::fs::write(&marker, &wanted)?;
    }
    index.refresh()?;
    println!(
        "tantivy: {} segment(s); index {} MiB; peak RSS {} MiB",
        index.segment_count(),
        dir_size(&index_dir) >> 20,
        vm_hwm_mib()
    );
    let tantivy = measure(&queries, args.runs, |q| {
        let mut sq = SearchQuery::text(&q.q);
        sq.limit = 10;
        sq.capabilities = q.capability.iter().cloned().collect();
        Ok(index.search(&sq)?.hits.len())
    })?;
    println!("peak RSS after queries: {} MiB", vm_hwm_mib());
    // What the hub's query-time tuning did (the index's defaults: the shipped synonym set and
    // the fewer-words fallback below 10 full matches).
    let mut fallback: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for q in &queries {
        let mut sq = SearchQuery::text(&q.q);
        sq.limit = 10;
        sq.capabilities = q.capability.iter().cloned().collect();
        let r = index.search(&sq)?;
        let e = fallback.entry(q.class.name()).or_default();
        e.1 += 1;
        if !r.dropped_words.is_empty() {
            e.0 += 1;
        }
    }
    let tuning = index.tuning();
    println!(
        "tuning: {} synonym entries, fewer words below {} full matches; queries that fell back to fewer words: {}",
        tuning.synonyms.len(),
        tuning.fewer_words_below,
        fallback
            .iter()
            .map(|(c, (k, n))| format!("{c} {k}/{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    report(
        "tantivy (in-process, with highlights)",
        &tantivy,
        args.slowest,
    );
    drop(index);

    if args.skip_fts5 {
        return Ok(());
    }
    let db_path = tmp.path().join("fts5.db");
    let mut db = rusqlite::Connection::open(&db_path)?;
    db.execute_batch(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
         CREATE VIRTUAL TABLE agents USING fts5(
           name, display_name, tagline, description, keywords, capabilities,
           tokenize = 'porter unicode61 remove_diacritics 2');",
    )?;
    let t = Instant::now();
    {
        let tx = db.transaction()?;
        {
            let mut ins = tx.prepare("INSERT INTO agents VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
            for i in 0..args.n {
                let a = synthetic_agent(seed, i);
                let caps: Vec<String> = a
                    .capabilities
                    .iter()
                    .map(|c| format!("{} {}", c.name, c.description))
                    .collect();
                ins.execute(rusqlite::params![
                    a.name,
                    a.display_name,
                    a.tagline,
                    a.description,
                    a.keywords.join(" "),
                    caps.join(" ")
                ])?;
            }
        }
        tx.commit()?;
    }
    let fts_build = t.elapsed();
    println!(
        "\nsqlite fts5: build {:.1} s; database {} MiB",
        fts_build.as_secs_f64(),
        std::fs::metadata(&db_path)?.len() >> 20
    );
    // The word table for typo tolerance: every distinct lowercase word of the indexed text
    // (what FTS5's unicode61 tokenizer splits on), filled by SQL from the documents.
    let t = Instant::now();
    db.create_scalar_function(
        "ofc_edit_distance",
        3,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8
            | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let a: String = ctx.get(0)?;
            let b: String = ctx.get(1)?;
            let max: i64 = ctx.get(2)?;
            Ok(edit_distance(&a, &b, max.max(0) as usize) as i64)
        },
    )?;
    {
        let tx = db.transaction()?;
        tx.execute_batch("CREATE TABLE words(word TEXT PRIMARY KEY) WITHOUT ROWID;")?;
        {
            let mut ins = tx.prepare("INSERT OR IGNORE INTO words VALUES (?1)")?;
            let mut select =
                tx.prepare("SELECT name, display_name, tagline, description, keywords, capabilities FROM agents")?;
            let mut rows = select.query([])?;
            while let Some(row) = rows.next()? {
                for col in 0..6 {
                    let text: String = row.get(col)?;
                    for w in text
                        .split(|c: char| !c.is_alphanumeric())
                        .filter(|w| !w.is_empty())
                    {
                        ins.execute([w.to_lowercase()])?;
                    }
                }
            }
        }
        tx.commit()?;
    }
    let word_count: i64 = db.query_row("SELECT count(*) FROM words", [], |r| r.get(0))?;
    println!(
        "sqlite fts5: word table for typo tolerance {} words, {:.1} s",
        word_count,
        t.elapsed().as_secs_f64()
    );
    let mut stmt = db.prepare(
        "SELECT name FROM agents WHERE agents MATCH ?1
         ORDER BY bm25(agents, 4.0, 4.0, 2.5, 1.0, 3.0, 2.0) LIMIT 10",
    )?;
    let fts = measure(&queries, args.runs, |q| {
        let Some(m) = fts5_match(q) else { return Ok(0) };
        let rows = stmt.query_map([m], |r| r.get::<_, String>(0))?;
        Ok(rows.count())
    })?;
    report("sqlite fts5 bm25 (in-process)", &fts, args.slowest);
    drop(stmt);
    let mut stmt = db.prepare(
        "SELECT name FROM agents WHERE agents MATCH ?1
         ORDER BY bm25(agents, 4.0, 4.0, 2.5, 1.0, 3.0, 2.0) LIMIT 10",
    )?;
    let mut words_stmt = db.prepare(
        "SELECT word FROM words WHERE word >= ?1 AND word < ?2
           AND ofc_edit_distance(word, ?3, ?4) <= ?4",
    )?;
    let mut known_stmt = db.prepare("SELECT 1 FROM words WHERE word = ?1")?;
    let typo_queries: Vec<BenchQuery> = queries
        .iter()
        .filter(|q| q.class == QueryClass::Misspelling)
        .cloned()
        .collect();
    let fts_typo = measure(&typo_queries, args.runs, |q| {
        let Some(m) = fts5_typo_match(&mut words_stmt, &mut known_stmt, q)? else {
            return Ok(0);
        };
        let rows = stmt.query_map([m], |r| r.get::<_, String>(0))?;
        Ok(rows.count())
    })?;
    report(
        "sqlite fts5 bm25 with a word table and edit distance for typos (in-process)",
        &fts_typo,
        args.slowest,
    );
    Ok(())
}
