//! Fewer words when too few agents have them all, and synonyms (issue [search-recall]).

use std::sync::Arc;

use hub_search::corpus::AgentSpec;
use hub_search::{SearchDoc, SearchIndex, SearchQuery, Synonyms, Tuning, relevance};

fn doc(name: &str, tagline: &str, downloads: u64) -> SearchDoc {
    let spec: AgentSpec = serde_json::from_value(serde_json::json!({
        "name": name,
        "displayName": name.split('/').nth(1).unwrap(),
        "tagline": tagline,
        "description": tagline,
        "kind": "remote",
        "downloads": downloads,
    }))
    .unwrap();
    spec.to_doc().unwrap()
}

fn index(docs: &[SearchDoc], synonyms: Synonyms, below: usize) -> SearchIndex {
    let index = relevance::index_of(docs).unwrap();
    index.set_tuning(Tuning {
        synonyms: Arc::new(synonyms),
        fewer_words_below: below,
    });
    index
}

fn names(index: &SearchIndex, text: &str) -> Vec<String> {
    let mut q = SearchQuery::text(text);
    q.limit = 50;
    index
        .search(&q)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.name)
        .collect()
}

/// Agents with one, two or all three of "monitor web prices"; partial matches are very popular,
/// full matches not, so only the tiering can put the full matches first.
fn tiers_corpus() -> Vec<SearchDoc> {
    vec![
        doc("a/full-one", "monitor web prices for you", 1),
        doc("a/full-two", "we monitor prices on the web", 2),
        doc("b/two-words", "monitor prices in shops", 1_000_000),
        doc("b/other-two", "web prices compared", 900_000),
        doc("c/one-word", "prices of everything", 5_000_000),
        doc("d/nothing", "translate documents", 10_000_000),
    ]
}

#[test]
fn a_full_match_always_outranks_a_partial_one() {
    let index = index(&tiers_corpus(), Synonyms::none(), 10);
    let page = index
        .search(&SearchQuery::text("monitor web prices"))
        .unwrap();
    let got: Vec<&str> = page.hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(got.len(), 5, "{got:?}");
    let mut full = got[..2].to_vec();
    full.sort_unstable();
    assert_eq!(full, ["a/full-one", "a/full-two"], "{got:?}");
    assert!(!got.contains(&"d/nothing"));
    for h in &page.hits[..2] {
        assert!(h.missing_words.is_empty(), "{h:?}");
    }
    for h in &page.hits[2..] {
        assert!(!h.missing_words.is_empty(), "{h:?}");
    }
    let by = |n: &str| page.hits.iter().find(|h| h.name == n).unwrap();
    assert_eq!(by("b/two-words").missing_words, ["web"]);
    assert_eq!(by("b/other-two").missing_words, ["monitor"]);
    assert_eq!(by("c/one-word").missing_words, ["monitor", "web"]);
    // The page says which words were dropped, in query order.
    assert_eq!(page.dropped_words, ["monitor", "web"]);
}

#[test]
fn pages_of_a_relaxed_query_keep_the_tiers_and_repeat_nothing() {
    let index = index(&tiers_corpus(), Synonyms::none(), 10);
    let mut q = SearchQuery::text("monitor web prices");
    q.limit = 1;
    let mut seen = Vec::new();
    let mut missing = Vec::new();
    for _ in 0..10 {
        let page = index.search(&q).unwrap();
        assert!(page.hits.len() <= 1);
        for h in &page.hits {
            seen.push(h.name.clone());
            missing.push(h.missing_words.len());
        }
        match page.next_cursor {
            Some(c) => {
                q = SearchQuery::parse(&hub_search::SearchParams {
                    q: Some("monitor web prices".into()),
                    limit: Some("1".into()),
                    cursor: Some(c),
                    ..Default::default()
                })
                .unwrap();
            }
            None => break,
        }
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5, "no agent twice: {seen:?}");
    assert_eq!(&missing[..2], &[0, 0], "full matches first: {seen:?}");
    assert!(missing[2..].iter().all(|m| *m > 0), "{seen:?}");
}

/// Agents with all of "monitor web prices", lacking one word, or two. "monitor" and "web" are
/// common here and "prices" rare, so an agent with "prices" alone outscores those with
/// "monitor web" (and it is the most popular): only the tiers put it after them.
fn fewest_missing_corpus() -> Vec<SearchDoc> {
    let mut docs = vec![
        doc("a/full", "monitor web prices for you", 1),
        doc("b/first", "monitor the web for you", 10),
        doc("c/first", "prices for everything", 9_000_000),
        doc("d/nothing", "translate documents", 10_000_000),
    ];
    for i in 0..6 {
        docs.push(doc(&format!("f/pages-{i}"), "monitor web pages", 100 + i));
    }
    docs
}

#[test]
fn partial_matches_lacking_fewer_words_come_first() {
    let index = index(&fewest_missing_corpus(), Synonyms::none(), 10);
    let page = index
        .search(&SearchQuery::text("monitor web prices"))
        .unwrap();
    let got: Vec<(&str, usize)> = page
        .hits
        .iter()
        .map(|h| (h.name.as_str(), h.missing_words.len()))
        .collect();
    assert_eq!(got.len(), 9, "{got:?}");
    assert_eq!(got[0], ("a/full", 0), "{got:?}");
    assert!(got[1..8].iter().all(|(_, m)| *m == 1), "{got:?}");
    assert_eq!(got[8], ("c/first", 2), "{got:?}");
    // Without the tiers the one rare word would rank first among the partial matches.
    let c = &page.hits[8];
    assert!(
        page.hits[1..8].iter().all(|h| h.score < c.score),
        "{:?}",
        page.hits
    );
    let by = |n: &str| page.hits.iter().find(|h| h.name == n).unwrap();
    assert_eq!(by("b/first").missing_words, ["prices"]);
    assert_eq!(by("c/first").missing_words, ["monitor", "web"]);
    assert_eq!(page.dropped_words, ["monitor", "web", "prices"]);
    // Pages of two give the same sequence.
    let mut q = SearchQuery::text("monitor web prices");
    q.limit = 2;
    let mut paged = Vec::new();
    loop {
        let p = index.search(&q).unwrap();
        paged.extend(p.hits.iter().map(|h| h.name.clone()));
        let Some(c) = p.next_cursor else { break };
        q = SearchQuery::parse(&hub_search::SearchParams {
            q: Some("monitor web prices".into()),
            limit: Some("2".into()),
            cursor: Some(c),
            ..Default::default()
        })
        .unwrap();
        assert!(paged.len() <= 9, "{paged:?}");
    }
    let whole: Vec<String> = page.hits.iter().map(|h| h.name.clone()).collect();
    assert_eq!(paged, whole);
}

#[test]
fn tiers_hold_in_every_sort_order() {
    let index = index(&fewest_missing_corpus(), Synonyms::none(), 10);
    let mut q = SearchQuery::text("monitor web prices");
    q.sort = hub_search::Sort::Downloads;
    let page = index.search(&q).unwrap();
    let got: Vec<&str> = page.hits.iter().map(|h| h.name.as_str()).collect();
    // Full match, then the agents lacking one word by downloads, then the one lacking two
    // (the most downloaded of all).
    assert_eq!(
        got,
        [
            "a/full",
            "f/pages-5",
            "f/pages-4",
            "f/pages-3",
            "f/pages-2",
            "f/pages-1",
            "f/pages-0",
            "b/first",
            "c/first"
        ]
    );
}

#[test]
fn a_cursor_with_a_tier_on_a_query_of_one_word_or_none_is_harmless() {
    let index = index(&fewest_missing_corpus(), Synonyms::none(), 10);
    for text in ["", "prices", "monitor web prices"] {
        for tier in [0, 1, 2, 9] {
            let mut q = SearchQuery::text(text);
            q.cursor = Some(hub_search::Cursor {
                key: u64::MAX,
                name: "a/full".into(),
                query: q.digest(),
                tier: Some(tier),
                offset: None,
            });
            let page = index.search(&q);
            assert!(page.is_ok(), "{text:?} tier {tier}: {page:?}");
        }
    }
}

#[test]
fn a_long_query_ranks_the_rest_by_the_any_word_union() {
    // Seven words: the agents lacking one word are found exactly; those lacking more come
    // after them, ranked by the any-word union, their missing words looked up.
    let mut docs = fewest_missing_corpus();
    docs.push(doc(
        "e/six",
        "monitor web prices alpha beta gamma in one go",
        1,
    ));
    let index = index(&docs, Synonyms::none(), 10);
    let text = "monitor web prices alpha beta gamma delta";
    let page = index.search(&SearchQuery::text(text)).unwrap();
    assert_eq!(page.hits[0].name, "e/six");
    assert_eq!(page.hits[0].missing_words, ["delta"]);
    let names: Vec<&str> = page.hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(!names.contains(&"d/nothing"));
    let by = |n: &str| page.hits.iter().find(|h| h.name == n).unwrap();
    assert_eq!(
        by("a/full").missing_words,
        ["alpha", "beta", "gamma", "delta"]
    );
    assert_eq!(
        by("c/first").missing_words,
        ["monitor", "web", "alpha", "beta", "gamma", "delta"]
    );
}

#[test]
fn enough_full_matches_need_no_fewer_words() {
    // Two full matches: with a threshold of 2 nothing partial is added; with 3 it is.
    let strict = index(&tiers_corpus(), Synonyms::none(), 2);
    let page = strict
        .search(&SearchQuery::text("monitor web prices"))
        .unwrap();
    assert_eq!(page.hits.len(), 2);
    assert!(page.dropped_words.is_empty());
    let relaxed = index(&tiers_corpus(), Synonyms::none(), 3);
    assert_eq!(names(&relaxed, "monitor web prices").len(), 5);
    // 0 turns it off: only full matches.
    let off = index(&tiers_corpus(), Synonyms::none(), 0);
    assert_eq!(names(&off, "monitor web prices").len(), 2);
}

fn synonym_corpus() -> Vec<SearchDoc> {
    vec![
        doc("v/charts", "draws charts from tables", 10),
        doc("v/plots", "makes plots from tables", 10),
        doc("d/pg", "tunes postgres servers", 10),
        doc("d/db", "designs a db schema", 10),
    ]
}

#[test]
fn multi_way_synonyms_find_each_other() {
    let syn = Synonyms::parse("chart, plot", "t").unwrap();
    let index = index(&synonym_corpus(), syn, 0);
    let mut a = names(&index, "chart");
    a.sort();
    assert_eq!(a, ["v/charts", "v/plots"]);
    let mut b = names(&index, "plots");
    b.sort();
    assert_eq!(b, ["v/charts", "v/plots"]);
    // The word itself ranks above its synonym.
    assert_eq!(names(&index, "chart")[0], "v/charts");
    assert_eq!(names(&index, "plot")[0], "v/plots");
    // Without the set, each finds only its own.
    let plain = self::index(&synonym_corpus(), Synonyms::none(), 0);
    assert_eq!(names(&plain, "chart"), ["v/charts"]);
}

#[test]
fn one_way_synonyms_find_one_way() {
    let syn = Synonyms::parse("db => postgres", "t").unwrap();
    let index = index(&synonym_corpus(), syn, 0);
    assert_eq!(names(&index, "db"), ["d/db", "d/pg"]);
    assert_eq!(names(&index, "postgres"), ["d/pg"]);
}

#[test]
fn synonyms_change_without_reindexing() {
    let index = index(&synonym_corpus(), Synonyms::none(), 0);
    assert_eq!(names(&index, "db"), ["d/db"]);
    let mut t = index.tuning();
    t.synonyms = Arc::new(Synonyms::parse("db => postgres", "t").unwrap());
    index.set_tuning(t);
    assert_eq!(names(&index, "db"), ["d/db", "d/pg"]);
}

#[test]
fn the_relevance_set_meets_its_target_on_the_held_out_half() {
    let mut all = Vec::new();
    for dir in [relevance::default_dir(), relevance::small_dir()] {
        let agents = relevance::load_agents(dir).unwrap();
        let queries = relevance::load_queries(dir).unwrap();
        let index = relevance::index_of(&agents).unwrap();
        all.extend(relevance::evaluate(&index, &queries).unwrap());
    }
    assert!(all.len() >= 150, "{} judged queries", all.len());
    let (held_out, n) = relevance::mean_ndcg(&all, Some(relevance::Split::Heldout));
    assert!(n >= 70, "{n} held-out queries");
    // Measured 0.967 (BENCHMARKS.md); the target is 0.95.
    assert!(held_out >= 0.95, "held-out nDCG@10 {held_out:.3}");
}

#[test]
fn did_you_mean_spells_the_query_as_the_index_does() {
    let docs = relevance::load_agents(relevance::default_dir()).unwrap();
    let index = relevance::index_of(&docs).unwrap();
    let dym = |text: &str| index.search(&SearchQuery::text(text)).unwrap().did_you_mean;
    assert_eq!(dym("scrapper").as_deref(), Some("scraper"));
    assert_eq!(dym("kubernets logs").as_deref(), Some("kubernetes logs"));
    // Correctly spelled words, or words with many full matches, get no suggestion.
    assert_eq!(dym("scraper"), None);
    assert_eq!(dym("sql"), None);
    // Nothing close in the index: no suggestion rather than a wild one.
    assert_eq!(dym("zzqxv"), None);
}

#[test]
fn an_exact_name_that_is_found_is_the_answer_and_one_that_is_not_falls_back() {
    let mut docs = tiers_corpus();
    docs.push(doc("prices/monitor-web", "keeps an eye on shops", 3));
    let index = index(&docs, Synonyms::none(), 10);
    // Found: that agent first, nothing sharing only some of its words.
    let page = index
        .search(&SearchQuery::text("prices/monitor-web"))
        .unwrap();
    assert_eq!(page.hits[0].name, "prices/monitor-web");
    assert!(page.dropped_words.is_empty(), "{:?}", page.dropped_words);
    assert!(page.hits.iter().all(|h| h.missing_words.is_empty()));
    // A name no agent has: its words are searched with fewer words as any query.
    let page = index
        .search(&SearchQuery::text("prices/monitor-robots"))
        .unwrap();
    assert!(!page.hits.is_empty());
    assert!(!page.dropped_words.is_empty());
}

/// The default synonym set does not turn a word into a stem of an unrelated one: `translate`
/// also finds localisation agents (one-way), but not agents that keep things "local"
/// (`localization` stems to `local`, so it cannot be one of its targets).
#[test]
fn the_default_set_does_not_send_translate_to_local() {
    let docs = vec![
        doc("a/translator", "translate documents into any language", 1),
        doc("a/l10n-kit", "l10n and i18n for your app strings", 1),
        doc(
            "b/local-data-pilot",
            "keeps your data local and private",
            1_000_000,
        ),
    ];
    let index = index(&docs, Synonyms::default_set(), 10);
    let found = names(&index, "translate");
    assert!(found.contains(&"a/translator".to_owned()), "{found:?}");
    assert!(found.contains(&"a/l10n-kit".to_owned()), "{found:?}");
    assert!(
        !found.contains(&"b/local-data-pilot".to_owned()),
        "{found:?}"
    );
}
