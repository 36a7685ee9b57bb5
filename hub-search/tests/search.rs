//! Search behaviour over the hand-written relevance agents, writer semantics, and the
//! crash-resume test (a child process killed with SIGKILL mid-stream).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use hub_search::corpus::synthetic_agent;
use hub_search::relevance;
use hub_search::{
    AgentStats, Change, FollowConfig, Follower, OutboxEntry, OutboxSource, SearchDoc, SearchIndex,
    SearchParams, SearchQuery, Sort, WriterConfig,
};
use index_schema::name::AgentName;

use common::MemoryOutbox;

mod common;
#[path = "search/hybrid.rs"]
mod hybrid;
#[path = "search/paraphrase.rs"]
mod paraphrase;
#[path = "search/recall.rs"]
mod recall;

fn agents() -> Vec<SearchDoc> {
    relevance::load_agents(relevance::default_dir()).unwrap()
}

fn fixture_index() -> (SearchIndex, Vec<SearchDoc>) {
    let docs = agents();
    (relevance::index_of(&docs).unwrap(), docs)
}

fn names(index: &SearchIndex, q: &SearchQuery) -> Vec<String> {
    index
        .search(q)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.name)
        .collect()
}

fn all_pages(index: &SearchIndex, mut q: SearchQuery) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let page = index.search(&q).unwrap();
        assert!(page.hits.len() <= q.limit);
        out.extend(page.hits.into_iter().map(|h| h.name));
        let Some(c) = page.next_cursor else { break };
        let p = SearchParams {
            q: Some(q.text.clone()),
            sort: Some(format!("{:?}", q.sort).to_lowercase()),
            limit: Some(q.limit.to_string()),
            capability: (!q.capabilities.is_empty()).then(|| q.capabilities.join(",")),
            keyword: (!q.keywords.is_empty()).then(|| q.keywords.join(",")),
            kind: q.kind.clone(),
            publisher: q.publisher.clone(),
            cursor: Some(c),
            facets: q.facets.then(|| "true".to_string()),
            mode: None,
            deprecated: match q.deprecated {
                hub_search::DeprecatedFilter::Include => None,
                hub_search::DeprecatedFilter::Exclude => Some("exclude".into()),
                hub_search::DeprecatedFilter::Only => Some("only".into()),
            },
            verified: q.verified.then(|| "true".to_string()),
        };
        q = SearchQuery::parse(&p).unwrap();
    }
    out
}

#[test]
fn data_analysis_puts_data_analysis_agents_first() {
    let (index, _) = fixture_index();
    let hits = names(&index, &SearchQuery::text("data analysis"));
    assert_eq!(hits[0], "datalab/data-analyst", "{hits:?}");
    let analysts = [
        "datalab/data-analyst",
        "insightful/stats-helper",
        "acme/pandas-pilot",
        "datalab/sql-analyst",
    ];
    // Every data-analysis agent is in the top 6 (the others there are the data cleaner and
    // the BI reporter, both judged relevant).
    for a in analysts {
        assert!(
            hits[..6].contains(&a.to_owned()),
            "{a} not in top 6: {hits:?}"
        );
    }
}

/// The threshold: 0.93 was measured when the set was written (BM25 with field boosts, typo and
/// prefix matching); 0.85 leaves room for tuning while catching a real regression such as
/// losing the boosts or the fuzzy matching (either drops several queries to 0).
#[test]
fn mean_ndcg_at_10_stays_above_threshold() {
    let (index, _) = fixture_index();
    let queries = relevance::load_queries(relevance::default_dir()).unwrap();
    assert!(queries.len() >= 40);
    let results = relevance::evaluate(&index, &queries).unwrap();
    let mean = results.iter().map(|r| r.ndcg).sum::<f64>() / results.len() as f64;
    assert!(mean >= 0.85, "mean nDCG@10 {mean:.3}");
}

#[test]
fn typos_and_prefixes_match() {
    let (index, _) = fixture_index();
    assert_eq!(
        names(&index, &SearchQuery::text("scrapper"))[0],
        "webcorp/scraper"
    );
    assert_eq!(
        names(&index, &SearchQuery::text("kubernets"))[0],
        "opsgenie/k8s-doctor"
    );
    assert!(names(&index, &SearchQuery::text("mongo")).contains(&"nosql/mongo-helper".to_owned()));
    assert_eq!(
        names(&index, &SearchQuery::text("transcri"))[0],
        "voice/transcriber"
    );
    assert_eq!(
        names(&index, &SearchQuery::text("ailabs/sql-expert"))[0],
        "ailabs/sql-expert"
    );
}

#[test]
fn highlights_mark_matched_words() {
    let (index, _) = fixture_index();
    let r = index.search(&SearchQuery::text("pandas")).unwrap();
    let h = &r.hits[0];
    let hl = h
        .highlights
        .iter()
        .find(|h| h.field == "description")
        .expect("a highlight");
    assert!(
        hl.ranges
            .iter()
            .any(|r| hl.fragment[r.range()].eq_ignore_ascii_case("pandas")),
        "{hl:?}"
    );
}

fn params(pairs: &[(&str, &str)]) -> SearchQuery {
    let v: serde_json::Map<String, serde_json::Value> = pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    SearchQuery::parse(&serde_json::from_value(v.into()).unwrap()).unwrap()
}

#[test]
fn every_filter_keeps_exactly_the_matching_agents() {
    let (index, docs) = fixture_index();
    let set = |q: SearchQuery| {
        let mut v = all_pages(&index, SearchQuery { limit: 7, ..q });
        v.sort();
        v
    };
    let expect = |f: &dyn Fn(&SearchDoc) -> bool| {
        let mut v: Vec<String> = docs
            .iter()
            .filter(|d| f(d))
            .map(|d| d.name().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        set(params(&[("kind", "pip")])),
        expect(&|d| d.manifest.source.kind() == "pip")
    );
    assert_eq!(
        set(params(&[("publisher", "datalab")])),
        expect(&|d| d.name().publisher() == "datalab")
    );
    assert_eq!(
        set(params(&[("keyword", "SQL")])),
        expect(&|d| d.manifest.keywords.iter().any(|k| k == "sql"))
    );
    assert_eq!(
        set(params(&[("capability", "crawl_site")])),
        expect(&|d| d
            .manifest
            .capabilities
            .iter()
            .any(|c| c.name == "crawl_site"))
    );
    assert_eq!(
        set(params(&[("capability", "analyze_dataset,run_sql")])),
        ["datalab/sql-analyst"]
    );
    // Filters combine with text: only sql agents published as docker images (the PostgreSQL
    // one through the default synonyms, `sql => postgresql`).
    assert_eq!(
        set(params(&[("q", "sql"), ("kind", "docker")])),
        [
            "ailabs/sql-expert",
            "dbtune/query-optimizer",
            "pgcare/postgres-dba",
            "secure/vuln-reviewer",
            "shield/sql-injection-tester"
        ]
    );
    let registry = SearchQuery::registry(Some("scrape"), Some("crawl_site")).unwrap();
    assert_eq!(set(registry), ["spider/crawl-master", "webcorp/scraper"]);
}

#[test]
fn every_sort_orders_all_pages() {
    let (index, docs) = fixture_index();
    let mut by_downloads: Vec<(u64, String)> = docs
        .iter()
        .map(|d| (d.stats.downloads, d.name().to_string()))
        .collect();
    by_downloads.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let got = all_pages(
        &index,
        SearchQuery {
            sort: Sort::Downloads,
            limit: 9,
            ..SearchQuery::default()
        },
    );
    assert_eq!(
        got,
        by_downloads.into_iter().map(|x| x.1).collect::<Vec<_>>()
    );

    let mut by_updated: Vec<(i64, String)> = docs
        .iter()
        .map(|d| (d.stats.updated_at, d.name().to_string()))
        .collect();
    by_updated.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let got = all_pages(
        &index,
        SearchQuery {
            sort: Sort::Updated,
            limit: 11,
            ..SearchQuery::default()
        },
    );
    assert_eq!(got, by_updated.into_iter().map(|x| x.1).collect::<Vec<_>>());

    // Relevance pages: the same hits as one big page, in the same order.
    let one = names(
        &index,
        &SearchQuery {
            limit: 100,
            ..SearchQuery::text("code")
        },
    );
    let paged = all_pages(
        &index,
        SearchQuery {
            limit: 2,
            ..SearchQuery::text("code")
        },
    );
    assert!(one.len() > 4);
    assert_eq!(paged, one);
}

#[test]
fn hostile_query_text_gives_results_or_a_clear_error() {
    let (index, _) = fixture_index();
    for q in [
        "\"sql",
        "\"sql\"",
        "name:sql",
        "sql:",
        ":",
        "*",
        "sql*",
        "[sql",
        "sql]",
        "((((",
        "{",
        "a AND OR NOT b",
        "-sql",
        "+sql",
        "sql~2",
        "sql^3",
        "\\",
        "'; DROP TABLE agents; --",
        "日本語",
        "🤖 agent",
        "a/b/c",
        "/",
        "  ",
        "IN [a TO b]",
        "title:\"x\"~",
        "\u{200b}",
    ] {
        let query = SearchQuery::parse(&SearchParams {
            q: Some(q.into()),
            ..SearchParams::default()
        })
        .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        index
            .search(&query)
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
    }
    let huge = SearchParams {
        q: Some("sql ".repeat(2560)),
        ..SearchParams::default()
    };
    assert_eq!(SearchQuery::parse(&huge).unwrap_err().field, "q");
    // Just under the limit: many words, still answered.
    let long = SearchQuery::parse(&SearchParams {
        q: Some("data ".repeat(200)),
        ..SearchParams::default()
    })
    .unwrap();
    assert!(!index.search(&long).unwrap().hits.is_empty());
}

#[test]
fn deprecated_agents_rank_below_equal_ones() {
    let mut a = synthetic_agent(1, 1);
    a.name = "alpha/one".into();
    let mut b = a.clone();
    b.name = "beta/one".into();
    a.deprecated = true;
    b.deprecated = false;
    let docs = [a.to_doc().unwrap(), b.to_doc().unwrap()];
    let index = relevance::index_of(&docs).unwrap();
    let hits = names(&index, &SearchQuery::text(&a.tagline));
    assert_eq!(hits, ["beta/one", "alpha/one"]);
}

#[test]
fn verified_keeps_only_the_verified_publishers_agents() {
    let mut a = synthetic_agent(1, 1);
    a.name = "alpha/one".into();
    let mut b = a.clone();
    b.name = "beta/one".into();
    let mut c = a.clone();
    c.name = "gamma/one".into();
    let docs = [
        a.to_doc().unwrap(),
        b.to_doc().unwrap(),
        c.to_doc().unwrap(),
    ];
    let index = relevance::index_of(&docs).unwrap();
    let parse = |verified: &str| {
        SearchQuery::parse(&SearchParams {
            q: Some(a.tagline.clone()),
            verified: Some(verified.into()),
            ..SearchParams::default()
        })
    };
    let mut q = parse("true").unwrap();
    assert!(q.verified);
    // None verified: no hit, not every hit.
    assert!(names(&index, &q).is_empty());
    q.verified_publishers = vec!["beta".into(), "gamma".into()];
    let mut hits = names(&index, &q);
    hits.sort();
    assert_eq!(hits, ["beta/one", "gamma/one"]);
    // Without the filter the verified list is not looked at.
    let mut all = parse("false").unwrap();
    all.verified_publishers = vec!["beta".into()];
    assert_eq!(names(&index, &all).len(), 3);
    let e = parse("yes").unwrap_err().to_string();
    assert!(e.contains("verified") && e.contains("`yes`"), "{e}");
    // A cursor of the filtered query is not taken by the unfiltered one.
    assert_ne!(q.digest(), all.digest());
}

fn upsert(seq: u64, doc: SearchDoc) -> OutboxEntry {
    OutboxEntry {
        seq,
        change: Change::Upsert(Box::new(doc)),
    }
}

#[test]
fn updates_replace_deletes_and_yanks_remove() {
    let index = SearchIndex::in_ram().unwrap();
    let mut w = index.writer(WriterConfig::default()).unwrap();
    let mut a = synthetic_agent(5, 1).to_doc().unwrap();
    w.apply(&upsert(1, a.clone())).unwrap();
    a.manifest.version = semver::Version::new(9, 9, 9);
    w.apply(&upsert(2, a.clone())).unwrap();
    assert_eq!(w.commit_and_refresh().unwrap(), 2);
    let hits = index
        .search(&SearchQuery::text(&a.manifest.name.to_string()))
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].version, "9.9.9");
    assert!(index.check([&a]).unwrap().is_consistent());

    // A replayed (old) sequence is ignored.
    let mut old = a.clone();
    old.manifest.version = semver::Version::new(0, 0, 1);
    w.apply(&upsert(1, old)).unwrap();
    w.commit_and_refresh().unwrap();
    assert!(index.check([&a]).unwrap().is_consistent());

    let mut yanked = a.clone();
    yanked.stats.yanked = true;
    w.apply(&upsert(3, yanked)).unwrap();
    w.commit_and_refresh().unwrap();
    assert!(index.contents().unwrap().is_empty());

    w.apply(&upsert(4, a.clone())).unwrap();
    w.apply(&OutboxEntry {
        seq: 5,
        change: Change::Delete(a.manifest.name.clone()),
    })
    .unwrap();
    assert_eq!(w.commit_and_refresh().unwrap(), 5);
    assert!(index.contents().unwrap().is_empty());
    assert_eq!(index.committed_seq().unwrap(), 5);
}

#[test]
fn check_reports_missing_stale_and_extra() {
    let docs: Vec<SearchDoc> = (0..3)
        .map(|i| synthetic_agent(9, i).to_doc().unwrap())
        .collect();
    let index = relevance::index_of(&docs[..2]).unwrap();
    let mut changed = docs[1].clone();
    changed.stats.updated_at += 1;
    let report = index.check([&changed, &docs[2]]).unwrap();
    assert_eq!(report.missing, [docs[2].name().to_string()]);
    assert_eq!(report.stale, [docs[1].name().to_string()]);
    assert_eq!(report.extra, [docs[0].name().to_string()]);
    assert!(!report.is_consistent());

    // Download counts move without an outbox row; a difference there alone is not a mismatch.
    let mut downloaded = docs[1].clone();
    downloaded.stats.downloads += 1;
    let report = index.check([&docs[0], &downloaded]).unwrap();
    assert!(report.is_consistent(), "{report:?}");
}

/// A publish stream over 150 agents: new versions, download changes, yanks and deletes.
fn stream(len: u64) -> Vec<OutboxEntry> {
    let mut out = Vec::new();
    for seq in 1..=len {
        let i = (seq * 7919) % 150;
        let mut spec = synthetic_agent(42, i);
        spec.version = format!("1.{}.0", seq);
        spec.downloads = seq * 3;
        let change = match seq % 17 {
            0 => Change::Delete(AgentName::parse(&spec.name).unwrap()),
            5 => {
                let mut d = spec.to_doc().unwrap();
                d.stats.yanked = true;
                Change::Upsert(Box::new(d))
            }
            _ => Change::Upsert(Box::new(spec.to_doc().unwrap())),
        };
        // Holes in the sequence, as rolled-back transactions leave them.
        out.push(OutboxEntry {
            seq: seq * 2,
            change,
        });
    }
    out
}

/// What the database says after the whole stream: the last state of every agent.
fn truth(entries: &[OutboxEntry]) -> Vec<SearchDoc> {
    let mut state: BTreeMap<String, Option<SearchDoc>> = BTreeMap::new();
    for e in entries {
        match &e.change {
            Change::Upsert(d) => state.insert(d.name().to_string(), Some((**d).clone())),
            Change::Delete(n) => state.insert(n.to_string(), None),
        };
    }
    state.into_values().flatten().collect()
}

const STREAM_LEN: u64 = 600;
const COMMIT_EVERY: usize = 25;

/// The child half of the crash test: indexes the first half of the stream with commits, applies
/// a quarter more without committing, says so, and waits to be killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("OFC_SEARCH_CRASH_CHILD") else {
        return;
    };
    let index = SearchIndex::open_or_create(std::path::Path::new(&dir)).unwrap();
    let mut w = index.writer(WriterConfig::default()).unwrap();
    let entries = stream(STREAM_LEN);
    let half = entries.len() / 2;
    let mut out = std::io::stdout();
    for chunk in entries[..half].chunks(COMMIT_EVERY) {
        for e in chunk {
            w.apply(e).unwrap();
        }
        let seq = w.commit().unwrap();
        writeln!(out, "committed {seq}").unwrap();
    }
    for e in &entries[half..half + half / 2] {
        w.apply(e).unwrap();
    }
    writeln!(out, "pending {}", w.applied_seq()).unwrap();
    out.flush().unwrap();
    loop {
        std::thread::park();
    }
}

#[test]
fn index_resumes_exactly_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env("OFC_SEARCH_CRASH_CHILD", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut last_committed = 0;
    let mut pending = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("committed ") {
            last_committed = n.parse().unwrap();
        } else if let Some(n) = line.strip_prefix("pending ") {
            pending = n.parse::<u64>().unwrap();
            break;
        }
    }
    assert!(
        pending > last_committed && last_committed > 0,
        "{last_committed} {pending}"
    );
    child.kill().unwrap(); // SIGKILL: no destructor, no commit, no lock release.
    child.wait().unwrap();

    let entries = stream(STREAM_LEN);
    let index = SearchIndex::open_or_create(dir.path()).unwrap();
    // Exactly the last commit survived, and its contents match its sequence.
    assert_eq!(index.committed_seq().unwrap(), last_committed);
    let upto: Vec<OutboxEntry> = entries
        .iter()
        .filter(|e| e.seq <= last_committed)
        .cloned()
        .collect();
    assert!(index.check(&truth(&upto)).unwrap().is_consistent());

    // Resume where it stopped; the index then equals the source of truth.
    let mut w = index.writer(WriterConfig::default()).unwrap();
    for e in entries.iter().filter(|e| e.seq > last_committed) {
        w.apply(e).unwrap();
    }
    w.commit().unwrap();
    let report = index.check(&truth(&entries)).unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert!(report.matching > 50);
}

#[tokio::test]
async fn follower_indexes_the_outbox_and_resumes_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let entries = stream(300);
    let outbox = MemoryOutbox::default();
    outbox.extend(&entries[..100]);
    let config = FollowConfig {
        fetch_limit: 40,
        commit_every: 30,
        ..FollowConfig::default()
    };

    let index = SearchIndex::open_or_create(dir.path()).unwrap();
    let follower = Follower::start(index.clone(), outbox.clone(), config).unwrap();
    follower.wait_for(entries[99].seq).await.unwrap();
    assert!(
        index
            .check(&truth(&entries[..100]))
            .unwrap()
            .is_consistent()
    );

    // A publish: the hub appends to the outbox and wakes the follower.
    outbox.extend(&entries[100..200]);
    follower.wake();
    follower.wait_for(entries[199].seq).await.unwrap();
    assert_eq!(follower.status().lag(), 0);
    let name = match &entries[199].change {
        Change::Upsert(d) if !d.stats.yanked => Some(d.name().to_string()),
        _ => None,
    };
    if let Some(name) = name {
        assert_eq!(names(&index, &SearchQuery::text(&name))[0], name);
    }
    follower.shutdown().await.unwrap();
    drop(index);

    // Restart: resumes from the committed sequence and catches up.
    outbox.extend(&entries[200..]);
    let index = SearchIndex::open_or_create(dir.path()).unwrap();
    assert_eq!(index.committed_seq().unwrap(), entries[199].seq);
    let follower = Follower::start(index.clone(), outbox.clone(), config).unwrap();
    follower
        .wait_for(entries.last().unwrap().seq)
        .await
        .unwrap();
    follower.shutdown().await.unwrap();
    assert!(index.check(&truth(&entries)).unwrap().is_consistent());
}

#[test]
fn stats_only_change_is_seen_by_check() {
    let doc = synthetic_agent(3, 3).to_doc().unwrap();
    let other = SearchDoc {
        stats: AgentStats {
            updated_at: doc.stats.updated_at + 1,
            ..doc.stats
        },
        ..doc.clone()
    };
    assert_ne!(doc.fingerprint(), other.fingerprint());
    let deprecated = SearchDoc {
        stats: AgentStats {
            deprecated: !doc.stats.deprecated,
            ..doc.stats
        },
        ..doc.clone()
    };
    assert_ne!(doc.fingerprint(), deprecated.fingerprint());
}

/// An outbox whose first calls fail (a database restarting).
#[derive(Clone)]
struct FlakyOutbox {
    inner: MemoryOutbox,
    failures: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl FlakyOutbox {
    fn fail(&self) -> Result<(), hub_search::follow::SourceError> {
        use std::sync::atomic::Ordering;
        let left = self.failures.load(Ordering::SeqCst);
        if left > 0 {
            self.failures.store(left - 1, Ordering::SeqCst);
            return Err("connection refused".into());
        }
        Ok(())
    }
}

impl OutboxSource for FlakyOutbox {
    async fn entries_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, hub_search::follow::SourceError> {
        self.fail()?;
        self.inner.entries_after(after, limit).await
    }
    async fn head(&self) -> Result<u64, hub_search::follow::SourceError> {
        self.fail()?;
        self.inner.head().await
    }
}

#[tokio::test]
async fn follower_outlives_a_failing_source() {
    let entries = stream(50);
    let outbox = FlakyOutbox {
        inner: MemoryOutbox::default(),
        failures: std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(5)),
    };
    outbox.inner.extend(&entries);
    let config = FollowConfig {
        poll_interval: std::time::Duration::from_millis(10),
        ..FollowConfig::default()
    };
    let index = SearchIndex::in_ram().unwrap();
    let follower = Follower::start(index.clone(), outbox.clone(), config).unwrap();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        follower.wait_for(entries[49].seq),
    )
    .await
    .expect("bounded wait")
    .expect("the follower kept running through the failures");
    assert_eq!(outbox.failures.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(index.check(&truth(&entries)).unwrap().is_consistent());
    follower.shutdown().await.unwrap();
}

/// Facet counts of `names` as the manifests give them, brute force: most frequent first, ties
/// by value, at most `MAX_FACET_VALUES`; and how many distinct values each facet has.
fn brute_facets(docs: &[SearchDoc], names: &[String]) -> (hub_search::SearchFacets, [usize; 4]) {
    use hub_search::FacetCount;
    use index_schema::hub_api::MAX_FACET_VALUES;
    let mut counts: [BTreeMap<String, u64>; 4] = Default::default();
    for n in names {
        let d = docs
            .iter()
            .find(|d| &d.manifest.name.to_string() == n)
            .unwrap();
        let m = &d.manifest;
        let mut caps: Vec<String> = m
            .capabilities
            .iter()
            .map(|c| c.name.to_lowercase())
            .collect();
        caps.sort();
        caps.dedup();
        let mut kws: Vec<String> = m.keywords.iter().map(|k| k.to_lowercase()).collect();
        kws.sort();
        kws.dedup();
        for c in caps {
            *counts[0].entry(c).or_default() += 1;
        }
        for k in kws {
            *counts[1].entry(k).or_default() += 1;
        }
        *counts[2].entry(m.source.kind().to_string()).or_default() += 1;
        *counts[3].entry(m.name.publisher().to_string()).or_default() += 1;
    }
    let distinct = [0, 1, 2, 3].map(|i| counts[i].len());
    let [capability, keyword, kind, publisher] = counts.map(|m| {
        let mut v: Vec<FacetCount> = m
            .into_iter()
            .map(|(value, count)| FacetCount { value, count })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
        v.truncate(MAX_FACET_VALUES);
        v
    });
    (
        hub_search::SearchFacets {
            capability,
            keyword,
            kind,
            publisher,
        },
        distinct,
    )
}

fn facet_query(text: &str, kind: Option<&str>) -> SearchQuery {
    SearchQuery::parse(&SearchParams {
        q: Some(text.into()),
        kind: kind.map(str::to_string),
        limit: Some("7".into()),
        facets: Some("true".into()),
        ..SearchParams::default()
    })
    .unwrap()
}

#[test]
fn facet_counts_equal_a_brute_force_count_over_every_match() {
    let (index, docs) = fixture_index();
    let mut bounded = false;
    for (text, kind) in [
        ("", None),
        ("data", None),
        ("web scraping", None),
        ("monitor web prices", None),
        // Typo matches only (the loose-match query).
        ("scrapng", None),
        ("", Some("remote")),
        ("translate", Some("bundle")),
        ("zzzz-nothing-matches", None),
    ] {
        let q = facet_query(text, kind);
        let matches = all_pages(&index, q.clone());
        let (expected, distinct) = brute_facets(&docs, &matches);
        bounded |= distinct
            .iter()
            .any(|n| *n > index_schema::hub_api::MAX_FACET_VALUES);
        // Every page carries the same counts, those of the whole match set.
        let mut q = q;
        let mut pages = 0;
        loop {
            let page = index.search(&q).unwrap();
            let facets = page.facets.clone().expect("facets were asked for");
            assert_eq!(facets, expected, "{text:?} kind {kind:?}, page {pages}");
            pages += 1;
            let Some(c) = page.next_cursor else { break };
            q = SearchQuery::parse(&SearchParams {
                q: Some(text.into()),
                kind: kind.map(str::to_string),
                limit: Some("7".into()),
                facets: Some("true".into()),
                cursor: Some(c),
                ..SearchParams::default()
            })
            .unwrap();
        }
        if text.is_empty() && kind.is_none() {
            assert!(pages > 1 && matches.len() == docs.len());
        }
    }
    assert!(bounded, "no facet had more values than the bound");
    assert!(
        !all_pages(&index, facet_query("scrapng", None)).is_empty(),
        "the typo query matches something"
    );
    // Not asked: not computed.
    let plain = index.search(&SearchQuery::text("data")).unwrap();
    assert_eq!(plain.facets, None);
    let e = SearchQuery::parse(&SearchParams {
        facets: Some("yes".into()),
        ..SearchParams::default()
    })
    .unwrap_err();
    assert_eq!(e.field, "facets");
}

#[test]
fn facet_counts_are_exact_over_several_segments_with_deletes() {
    let docs = agents();
    let index = SearchIndex::in_ram().unwrap();
    let mut w = index.writer(WriterConfig::default()).unwrap();
    // Three commits (three segments), then a third of the agents replaced and some removed.
    let mut seq = 0;
    for chunk in docs.chunks(docs.len() / 3 + 1) {
        for d in chunk {
            seq += 1;
            w.apply(&upsert(seq, d.clone())).unwrap();
        }
        w.commit_and_refresh().unwrap();
    }
    let mut live: Vec<SearchDoc> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        seq += 1;
        match i % 3 {
            0 => {
                let mut d = d.clone();
                d.manifest.keywords = vec!["replaced".into()];
                w.apply(&upsert(seq, d.clone())).unwrap();
                live.push(d);
            }
            1 => {
                let mut d = d.clone();
                d.stats.yanked = true;
                w.apply(&upsert(seq, d)).unwrap();
            }
            _ => live.push(d.clone()),
        }
    }
    w.commit_and_refresh().unwrap();
    for text in ["", "data", "search"] {
        let q = facet_query(text, None);
        let matches = all_pages(&index, q.clone());
        let (expected, _) = brute_facets(&live, &matches);
        let got = index.search(&q).unwrap().facets.unwrap();
        assert_eq!(got, expected, "{text:?}");
    }
    let all = index
        .search(&facet_query("", None))
        .unwrap()
        .facets
        .unwrap();
    assert_eq!(
        all.keyword[0],
        hub_search::FacetCount {
            value: "replaced".into(),
            count: live
                .iter()
                .filter(|d| d.manifest.keywords == ["replaced"])
                .count() as u64
        }
    );
}
