//! Hybrid and semantic search (issue 34) with the real model (`scripts/peers/search-model`
//! installs it; the test fails when it cannot): a paraphrase keyword search misses is found,
//! filters hold for hits found by meaning, pages follow each other, and a hub without a model
//! answers as before and refuses the other modes.

use std::sync::{Arc, OnceLock};

use hub_search::embed::Embedder;
use hub_search::hybrid::Semantic;
use hub_search::{
    Change, DeprecatedFilter, OutboxEntry, SearchIndex, SearchMode, SearchParams, SearchQuery,
    WriterConfig, relevance,
};
use index_schema::name::AgentName;

use crate::common::model_dir;

struct Fixture {
    index: SearchIndex,
    semantic: Semantic,
    _vectors: tempfile::TempDir,
}

/// The 160 relevance agents, indexed and embedded once for every test here.
fn fixture() -> (&'static SearchIndex, &'static Semantic) {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    let f = FIXTURE.get_or_init(|| {
        let agents = relevance::paraphrase_agents().unwrap();
        let index = relevance::index_of(&agents).unwrap();
        let embedder = Arc::new(Embedder::load(&model_dir()).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let semantic = relevance::semantic_of(&agents, embedder, dir.path()).unwrap();
        Fixture {
            index,
            semantic,
            _vectors: dir,
        }
    });
    (&f.index, &f.semantic)
}

fn names(index: &SearchIndex, semantic: Option<&Semantic>, q: &SearchQuery) -> Vec<String> {
    index
        .search_with(q, semantic)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.name)
        .collect()
}

fn query(text: &str, mode: Option<SearchMode>) -> SearchQuery {
    let mut q = SearchQuery::text(text);
    q.limit = 5;
    q.mode = mode;
    q
}

#[test]
fn hybrid_finds_the_paraphrase_that_keyword_search_misses() {
    let (index, semantic) = fixture();
    let text = "study cards for my biology exam";
    let keyword = names(
        index,
        Some(semantic),
        &query(text, Some(SearchMode::Keyword)),
    );
    assert!(
        !keyword.iter().any(|n| n == "edu/quiz-maker"),
        "{keyword:?}"
    );
    // The default mode with a model is hybrid.
    let page = index
        .search_with(&query(text, None), Some(semantic))
        .unwrap();
    let hit = page
        .hits
        .iter()
        .find(|h| h.name == "edu/quiz-maker")
        .unwrap_or_else(|| panic!("{:?}", page.hits));
    assert!(hit.matched_by.contains(&"meaning".to_owned()), "{hit:?}");
    assert!(hit.similarity.unwrap() > 0.2, "{hit:?}");
}

#[test]
fn filters_hold_for_hits_found_by_meaning() {
    let (index, semantic) = fixture();
    let text = "indent my database statements nicely";
    let mut q = query(text, Some(SearchMode::Semantic));
    let all = names(index, Some(semantic), &q);
    assert!(all.iter().any(|n| n == "legacy/sql-formatter"), "{all:?}");
    // The deprecated formatter is the nearest; excluded, it is gone and others fill the page.
    q.deprecated = DeprecatedFilter::Exclude;
    let kept = names(index, Some(semantic), &q);
    assert!(
        !kept.iter().any(|n| n == "legacy/sql-formatter"),
        "{kept:?}"
    );
    assert_eq!(kept.len(), 5, "{kept:?}");
    // A publisher filter: only its agents, in both hybrid and semantic modes.
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let mut q = query("what did we decide in today's call", Some(mode));
        q.publisher = Some("team".into());
        let hits = names(index, Some(semantic), &q);
        assert!(!hits.is_empty());
        assert!(
            hits.iter().all(|n| n.starts_with("team/")),
            "{mode:?} {hits:?}"
        );
        assert!(
            hits.iter().any(|n| n == "team/meeting-minutes"),
            "{mode:?} {hits:?}"
        );
    }
    // A capability filter.
    let mut q = query(
        "someone check my changes before I merge them",
        Some(SearchMode::Semantic),
    );
    q.capabilities = vec!["review_pr".into()];
    assert_eq!(names(index, Some(semantic), &q), ["team/pr-reviewer"]);
}

#[test]
fn pages_of_a_hybrid_query_follow_each_other() {
    let (index, semantic) = fixture();
    let params = |cursor: Option<String>| SearchParams {
        q: Some("keep an eye on prices".into()),
        limit: Some("4".into()),
        mode: Some("hybrid".into()),
        cursor,
        ..SearchParams::default()
    };
    let mut seen = Vec::new();
    let mut cursor = None;
    for _ in 0..5 {
        let q = SearchQuery::parse(&params(cursor.take())).unwrap();
        let page = index.search_with(&q, Some(semantic)).unwrap();
        seen.extend(page.hits.into_iter().map(|h| h.name));
        cursor = page.next_cursor;
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "{seen:?}");
    assert_eq!(seen.len(), 20);
    // The first page equals the same query with limit 20's first 4.
    let mut q = SearchQuery::parse(&params(None)).unwrap();
    q.limit = 20;
    assert_eq!(names(index, Some(semantic), &q), seen);
}

#[test]
fn facets_are_the_same_on_every_page_of_a_hybrid_query() {
    let (index, semantic) = fixture();
    let params = |mode: &str, cursor: Option<String>| SearchParams {
        q: Some("review code".into()),
        limit: Some("2".into()),
        facets: Some("true".into()),
        mode: Some(mode.into()),
        cursor,
        ..SearchParams::default()
    };
    // Facets count the keyword matches: keyword mode's, on its first page.
    let keyword = index
        .search_with(&SearchQuery::parse(&params("keyword", None)).unwrap(), None)
        .unwrap()
        .facets
        .expect("facets asked for");
    assert!(!keyword.capability.is_empty(), "{keyword:?}");
    let mut cursor = None;
    for page in 1..=3 {
        let q = SearchQuery::parse(&params("hybrid", cursor.take())).unwrap();
        let got = index.search_with(&q, Some(semantic)).unwrap();
        assert_eq!(got.facets.as_ref(), Some(&keyword), "page {page}");
        cursor = got.next_cursor;
        assert!(cursor.is_some(), "page {page} is not the last");
    }
}

#[test]
fn without_a_model_the_default_answers_as_before_and_other_modes_are_refused() {
    let (index, _) = fixture();
    for text in ["data analysis", "tick off each bank statement line", ""] {
        let q = query(text, None);
        assert_eq!(
            index.search_with(&q, None).unwrap(),
            index.search(&q).unwrap(),
            "{text:?}"
        );
    }
    for mode in ["semantic", "hybrid"] {
        let q = SearchQuery::parse(&SearchParams {
            q: Some("invoices".into()),
            mode: Some(mode.into()),
            ..SearchParams::default()
        })
        .unwrap();
        let err = index.search_with(&q, None).unwrap_err().to_string();
        assert!(err.starts_with("mode: "), "{err}");
        assert!(err.contains("needs an embedding model"), "{err}");
    }
    let err = SearchQuery::parse(&SearchParams {
        mode: Some("vector".into()),
        ..SearchParams::default()
    })
    .unwrap_err();
    assert_eq!(err.field, "mode");
}

#[test]
fn a_mode_that_cannot_honour_the_other_parameters_is_refused() {
    let (index, semantic) = fixture();
    let mut q = query("invoices", Some(SearchMode::Hybrid));
    q.sort = hub_search::Sort::Downloads;
    let err = index
        .search_with(&q, Some(semantic))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("sort: "), "{err}");
    // The default mode with another sort is keyword, unchanged.
    q.mode = None;
    assert_eq!(
        index.search_with(&q, Some(semantic)).unwrap(),
        index.search(&q).unwrap()
    );
}

/// An agent removed from the index whose vector is still in the store (the vector follower
/// lags the keyword one) is not a hit by meaning; one updated in place (its old document
/// deleted, a new one added) is a hit once, filtered by its new state.
#[test]
fn hits_by_meaning_follow_the_index_not_a_lagging_vector_store() {
    let (_, shared) = fixture();
    let agents = relevance::paraphrase_agents().unwrap();
    let index = relevance::index_of(&agents).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let semantic =
        relevance::semantic_of(&agents, Arc::clone(shared.embedder()), dir.path()).unwrap();
    let text = "indent my database statements nicely";
    let q = query(text, Some(SearchMode::Semantic));
    let before = names(&index, Some(&semantic), &q);
    assert_eq!(before[0], "legacy/sql-formatter", "{before:?}");
    let second = before[1].clone();
    let updated = agents
        .iter()
        .find(|a| a.name().to_string() == second)
        .unwrap()
        .clone();

    let mut w = index
        .writer(WriterConfig {
            heap_bytes: 32 << 20,
            threads: 1,
        })
        .unwrap();
    let removed: AgentName = "legacy/sql-formatter".parse().unwrap();
    for (seq, change) in [
        (2, Change::Delete(removed)),
        (3, Change::Upsert(Box::new(updated))),
    ] {
        w.apply(&OutboxEntry { seq, change }).unwrap();
    }
    w.commit_and_refresh().unwrap();

    let after = names(&index, Some(&semantic), &q);
    assert!(
        !after.iter().any(|n| n == "legacy/sql-formatter"),
        "{after:?}"
    );
    assert_eq!(after[0], second, "{after:?}");
    assert_eq!(
        after.iter().filter(|n| **n == second).count(),
        1,
        "{after:?}"
    );
    // The updated agent's publisher filter still finds it, another publisher's does not.
    let publisher = second.split('/').next().unwrap().to_owned();
    let mut q = query(text, Some(SearchMode::Semantic));
    q.publisher = Some(publisher);
    assert_eq!(names(&index, Some(&semantic), &q)[0], second);
    q.publisher = Some("nobody-publishes-here".into());
    assert!(names(&index, Some(&semantic), &q).is_empty());
}

/// The IVF index's answer is used as it is only while it holds exactly the store's vectors: an
/// agent removed from the store since is no nearest agent, a changed vector counts as it is now.
#[test]
fn the_ann_index_answers_for_the_store_as_it_is_now() {
    use hub_search::hybrid::nearest::{self, IvfParams};

    let (_, shared) = fixture();
    let agents = relevance::paraphrase_agents().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let semantic =
        relevance::semantic_of(&agents, Arc::clone(shared.embedder()), dir.path()).unwrap();
    let query = shared
        .embedder()
        .embed_one("indent my database statements nicely")
        .unwrap();
    // Every list probed: the index finds what the exact scan finds.
    semantic.build_ann(IvfParams {
        lists: 4,
        probe: 4,
        ..IvfParams::default()
    });
    let exact = nearest::exact(&semantic.vectors().read().unwrap(), &query, 5);
    let before = semantic.nearest(&query, 5);
    assert_eq!(before, exact);
    let (first, second) = (before[0].0.clone(), before[1].0.clone());

    // Removed (not committed yet: the follower commits after its batch) and changed vectors.
    {
        let mut store = semantic.vectors().write().unwrap();
        store.remove(&first);
        let mut far: Vec<f32> = query.iter().map(|x| -x).collect();
        hub_search::embed::normalize(&mut far);
        store.upsert(&second, 1, &far);
    }
    let after = semantic.nearest(&query, 5);
    assert!(
        after.iter().all(|(n, _)| *n != first && *n != second),
        "{after:?}"
    );
    assert_eq!(
        after,
        nearest::exact(&semantic.vectors().read().unwrap(), &query, 5)
    );
}
