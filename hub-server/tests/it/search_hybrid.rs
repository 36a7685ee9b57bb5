//! Hybrid search over HTTP (issue 34): with the real model (`scripts/peers/search-model`, run
//! by the test, which fails without it) `GET /api/v1/search` finds by meaning an agent that
//! shares no word with the query, says why each hit matched, and applies the filters to hits
//! found by meaning; without a model the default answers as before and `mode=semantic` or
//! `hybrid` is refused.

use std::time::{Duration, Instant};

use ofc_test_kit::{Backend, TestHub, manifest_saying};
use serde_json::{Value, json};

fn names(v: &Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_owned())
        .collect()
}

const AGENTS: &[(&str, &str)] = &[
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

async fn publish_all(app: &TestHub) {
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    for (name, tagline) in AGENTS {
        let (s, v) = app
            .publish(&t, &k, &manifest_saying(name, tagline), None)
            .await;
        assert_eq!(s, 201, "{v}");
    }
    // Searchable by words.
    let start = Instant::now();
    loop {
        let (_, v) = app.get("/api/v1/search?q=weather&mode=keyword").await;
        if names(&v) == ["alice/weather"] {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not indexed: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn hybrid_search_finds_by_meaning_what_keyword_search_misses() {
    let app = TestHub::with_search_model(Backend::Sqlite).await;
    publish_all(&app).await;
    let vectors = app
        .state
        .core
        .search
        .clone()
        .unwrap()
        .vectors()
        .unwrap()
        .clone();
    let start = Instant::now();
    while vectors.read().unwrap().len() < AGENTS.len() {
        assert!(start.elapsed() < Duration::from_secs(60), "not embedded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let q = "q=study%20cards%20for%20my%20biology%20exam";
    // By the words: nothing shares a word with the query.
    let (s, v) = app.get(&format!("/api/v1/search?{q}&mode=keyword")).await;
    assert_eq!(s, 200, "{v}");
    assert!(names(&v).is_empty(), "{v}");
    // The default with a model is hybrid: found by meaning, and said so.
    let (s, v) = app.get(&format!("/api/v1/search?{q}&limit=2")).await;
    assert_eq!(s, 200, "{v}");
    let mut top = names(&v);
    top.sort();
    assert_eq!(top, ["alice/flashcards", "alice/quiz-maker"], "{v}");
    let hit = &v["hits"][0];
    assert_eq!(hit["matched_by"], json!(["meaning"]), "{v}");
    assert!(hit["similarity"].as_f64().unwrap() > 0.2, "{v}");
    // The filters hold for hits found by meaning: every agent is near enough to be listed in
    // semantic mode, none of another publisher or kind.
    let (s, v) = app.get(&format!("/api/v1/search?{q}&mode=semantic")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(names(&v).len(), AGENTS.len(), "{v}");
    let (s, v) = app
        .get(&format!("/api/v1/search?{q}&mode=semantic&publisher=bob"))
        .await;
    assert_eq!(s, 200, "{v}");
    assert!(names(&v).is_empty(), "{v}");
    let (s, v) = app
        .get(&format!("/api/v1/search?{q}&mode=hybrid&kind=docker"))
        .await;
    assert_eq!(s, 200, "{v}");
    assert!(names(&v).is_empty(), "{v}");
    // A mode that cannot honour the sort is refused, naming it.
    let (s, v) = app
        .get(&format!("/api/v1/search?{q}&mode=semantic&sort=downloads"))
        .await;
    assert_eq!(s, 400, "{v}");
    assert!(v.to_string().contains("sort"), "{v}");
    app.stop().await;
}

#[tokio::test]
async fn without_a_model_the_default_is_keyword_and_other_modes_are_refused() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    publish_all(&app).await;
    let (s, default) = app.get("/api/v1/search?q=flashcards").await;
    assert_eq!(s, 200, "{default}");
    let (_, keyword) = app.get("/api/v1/search?q=flashcards&mode=keyword").await;
    assert_eq!(default, keyword);
    let mut found = names(&default);
    found.sort();
    assert_eq!(found, ["alice/flashcards", "alice/quiz-maker"]);
    for hit in default["hits"].as_array().unwrap() {
        assert!(
            hit.get("matched_by").is_none() && hit.get("similarity").is_none(),
            "{hit}"
        );
    }
    for mode in ["semantic", "hybrid"] {
        let (s, v) = app
            .get(&format!("/api/v1/search?q=flashcards&mode={mode}"))
            .await;
        assert_eq!(s, 400, "{v}");
        let text = v.to_string();
        assert!(
            text.contains("mode") && text.contains("embedding model"),
            "{v}"
        );
    }
    let (s, v) = app.get("/api/v1/search?q=flashcards&mode=vectors").await;
    assert_eq!(s, 400, "{v}");
    app.stop().await;
}
