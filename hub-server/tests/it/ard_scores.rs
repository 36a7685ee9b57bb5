//! The `score` of ARD's `POST /search` (0-100, "semantic relevance", informational) on a real
//! hub: without a model it comes from the keyword search (each query word found worth a share,
//! full matches above partial ones), with the real model (`scripts/peers/search-model`, run by
//! the test, which fails without it) from the hybrid fusion over the best fused score possible.
//! Either way it is in range, never rises from one result to the next, across pages too, and
//! `metadata.searchMode` says which ranking gave it. The model-backed test also reads the
//! embedding follower's lag in `/readyz` and `/metrics`.

use std::time::{Duration, Instant};

use ofc_test_kit::{Backend, TestHub, manifest_saying};
use reqwest::Method;
use serde_json::{Value, json};

async fn publish_all(hub: &TestHub, agents: &[(&str, &str)]) {
    let (t, k) = (hub.user.token.clone(), hub.user.key.clone());
    for (name, tagline) in agents {
        let (s, v) = hub
            .publish(&t, &k, &manifest_saying(name, tagline), None)
            .await;
        assert_eq!(s, 201, "{v}");
    }
}

async fn ard(hub: &TestHub, body: Value) -> Value {
    let (s, v) = hub
        .call(Method::POST, "/api/v1/ard/search", None, Some(body.clone()))
        .await;
    assert_eq!(s, 200, "{body}: {v}");
    v
}

/// Every result of `text`, page by page (`page_size` each): (agent, score, metadata).
async fn all_pages(hub: &TestHub, text: &str, page_size: u32) -> Vec<(String, u64, Value)> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..20 {
        let mut body = json!({"query": {"text": text}, "pageSize": page_size});
        if let Some(t) = &token {
            body["pageToken"] = json!(t);
        }
        let v = ard(hub, body).await;
        for r in v["results"].as_array().unwrap() {
            let id = r["identifier"].as_str().unwrap();
            let agent = id.rsplit(':').next().unwrap().to_owned();
            let score = r["score"].as_u64().unwrap_or_else(|| panic!("{r}"));
            out.push((agent, score, r["metadata"].clone()));
        }
        token = v["pageToken"].as_str().map(str::to_owned);
        if token.is_none() {
            return out;
        }
    }
    panic!("more than 20 pages: {out:?}");
}

fn assert_ranked(results: &[(String, u64, Value)]) {
    for w in results.windows(2) {
        assert!(
            w[0].1 >= w[1].1,
            "a score rises down the ranking: {results:?}"
        );
    }
    for (_, score, _) in results {
        assert!(*score <= 100, "{results:?}");
    }
}

#[tokio::test]
async fn without_a_model_scores_come_from_the_words_and_fall_with_the_rank() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    publish_all(
        &hub,
        &[
            (
                "alice/invoice-sheets",
                "Copies invoice totals into a spreadsheet and exports it",
            ),
            (
                "alice/invoice-export",
                "Invoice spreadsheet export: every invoice line as a spreadsheet row, export \
                 to CSV",
            ),
            ("alice/sheet-export", "Exports any spreadsheet as CSV"),
            ("alice/invoice-reader", "Reads invoice PDFs"),
            ("alice/weather", "Tells tomorrow's weather for any city"),
        ],
    )
    .await;
    let start = Instant::now();
    let results = loop {
        let r = all_pages(&hub, "invoice spreadsheet export", 2).await;
        if r.len() == 4 {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "not indexed: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_ranked(&results);
    let score_of = |agent: &str| {
        results
            .iter()
            .find(|r| r.0 == agent)
            .unwrap_or_else(|| panic!("{agent} not in {results:?}"))
            .1
    };
    // Three words: every word found is worth a quarter, the match's strength the last one.
    for full in ["invoice-sheets", "invoice-export"] {
        assert!((75..=100).contains(&score_of(full)), "{results:?}");
    }
    assert!((50..=75).contains(&score_of("sheet-export")), "{results:?}");
    assert!(
        (25..=50).contains(&score_of("invoice-reader")),
        "{results:?}"
    );
    for (agent, _, meta) in &results {
        assert_eq!(meta["searchMode"], "keyword", "{agent}: {meta}");
        assert!(
            meta.get("matchedBy").is_none() && meta.get("similarity").is_none(),
            "{agent}: {meta}"
        );
    }
    // A page token is the hub's own: one altered is refused, naming it.
    let v = ard(&hub, json!({"query": {"text": "invoice"}, "pageSize": 1})).await;
    let token = v["pageToken"].as_str().unwrap();
    let (_, cursor) = token.split_once('.').unwrap();
    let (s, v) = hub
        .call(
            Method::POST,
            "/api/v1/ard/search",
            None,
            Some(json!({"query": {"text": "invoice"}, "pageToken": format!("900.{cursor}")})),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    assert!(v["message"].as_str().unwrap().contains("pageToken"), "{v}");
    hub.stop().await;
}

/// Polls `/readyz` until `done` holds (60 s at most; embedding a few agents takes about a
/// second on 2 busy cores).
async fn ready_until(hub: &TestHub, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (s, v) = hub.get("/readyz").await;
        if done(&v) {
            assert_eq!(s, 200, "{v}");
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not reached: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn with_a_model_scores_follow_the_hybrid_ranking_and_readyz_shows_the_embeddings() {
    let hub = TestHub::with_search_model(Backend::Sqlite).await;
    let agents = [
        (
            "alice/quiz-maker",
            "Makes quizzes and flashcards from any text",
        ),
        ("alice/weather", "Tells tomorrow's weather for any city"),
        (
            "alice/translator",
            "Translates documents between fifty languages",
        ),
        (
            "alice/flashcards",
            "Turns your notes into flashcards and quizzes",
        ),
    ];
    publish_all(&hub, &agents).await;
    // Readiness: the model is said, the embeddings catch up, and their lag never made the hub
    // not ready (ready_until asserts 200 on the answer it returns).
    let ready = ready_until(&hub, |v| {
        v["search_lag"] == 0
            && v["embedding_lag"] == 0
            && v["search_seq"].as_u64().is_some_and(|s| s >= 4)
    })
    .await;
    assert_eq!(ready["status"], "ok", "{ready}");
    assert_eq!(ready["search_model"], true, "{ready}");
    assert_eq!(ready["embedding_seq"], ready["search_seq"], "{ready}");
    assert!(ready.get("degraded").is_none(), "{ready}");
    let metrics = hub.get_text("/metrics").await;
    for line in [
        "ofc_hub_search_lag_events{follower=\"keyword\"} 0",
        "ofc_hub_search_lag_events{follower=\"embedding\"} 0",
        "ofc_hub_search_model 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in:\n{metrics}"
        );
    }

    // No agent shares a word with this query: all found by meaning alone, so the first scores
    // half the best possible (first on one side of two) and each next one as its rank does.
    let results = all_pages(&hub, "study cards for my biology exam", 3).await;
    assert_eq!(results.len(), agents.len(), "{results:?}");
    assert_ranked(&results);
    for (i, (agent, score, meta)) in results.iter().enumerate() {
        assert_eq!(meta["searchMode"], "hybrid", "{agent}: {meta}");
        assert_eq!(meta["matchedBy"], "meaning", "{agent}: {meta}");
        assert!(meta["similarity"].is_number(), "{agent}: {meta}");
        // RRF with k = 30: 1/(31 + i) over the best possible 2/31.
        let want = (100.0 * 31.0 / (2.0 * (31.0 + i as f64))).round() as u64;
        assert_eq!(*score, want, "{agent} at rank {i}: {results:?}");
    }
    let top: Vec<&str> = results[..2].iter().map(|r| r.0.as_str()).collect();
    assert!(
        top.contains(&"flashcards") && top.contains(&"quiz-maker"),
        "{results:?}"
    );

    // Found by words and by meaning: near the top of both rankings, near 100.
    let results = all_pages(&hub, "flashcards", 10).await;
    assert_ranked(&results);
    let (agent, score, meta) = &results[0];
    assert_eq!(meta["matchedBy"], "words,meaning", "{agent}: {meta}");
    assert!(*score >= 95, "{results:?}");
    hub.stop().await;
}
