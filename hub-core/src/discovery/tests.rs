use index_schema::hub_api::SearchHit;
use serde_json::json;

use super::{SearchRequest, Site, params_of, percent, score, split_token};

fn site() -> Site {
    Site {
        origin: "http://hub.test:8080".into(),
        host: "hub.test".into(),
    }
}

fn request(body: serde_json::Value) -> Result<SearchRequest, serde_json::Error> {
    serde_json::from_value(body)
}

#[test]
fn unknown_members_are_refused_by_name() {
    let e = request(json!({"query": {"text": "x"}, "page_size": 3})).unwrap_err();
    assert!(e.to_string().contains("unknown field `page_size`"), "{e}");
    let e = request(json!({"query": {"text": "x", "filters": {}}})).unwrap_err();
    assert!(e.to_string().contains("unknown field `filters`"), "{e}");
    let e = request(json!({"query": {"filter": {}}})).unwrap_err();
    assert!(e.to_string().contains("missing field `text`"), "{e}");
}

#[test]
fn filters_map_to_the_index_or_are_refused() {
    let p = |filter| {
        let r = request(json!({"query": {"text": "ledger", "filter": filter}})).unwrap();
        params_of(&r, &site(), 10)
    };
    let got = p(
        json!({"type": ["application/a2a-agent-card+json"], "tags": "finance",
                       "capabilities": ["sort"], "publisher": ["HUB.test"]}),
    )
    .unwrap()
    .unwrap();
    assert_eq!(got.kind.as_deref(), Some("remote"));
    assert_eq!(got.keyword.as_deref(), Some("finance"));
    assert_eq!(got.capability.as_deref(), Some("sort"));
    assert_eq!(got.q.as_deref(), Some("ledger"));
    // Both types: no kind filter; a type or publisher the hub has none of: no result at all.
    let both =
        p(json!({"type": ["application/a2a-agent-card+json", "application/vnd.ofc.agent+json"]}));
    assert_eq!(both.unwrap().unwrap().kind, None);
    assert!(
        p(json!({"type": "application/mcp-server-card+json"}))
            .unwrap()
            .is_none()
    );
    assert!(
        p(json!({"publisher": "elsewhere.example"}))
            .unwrap()
            .is_none()
    );
    // Refused, each naming what is wrong.
    for (filter, words) in [
        (json!({"tags": ["a", "b"]}), "filter `tags` takes one value"),
        (
            json!({"tags": []}),
            "filter `tags` takes a string or an array of strings",
        ),
        (
            json!({"capabilities": 3}),
            "filter `capabilities` takes a string",
        ),
        (
            json!({"trustManifest.identity": "x"}),
            "filter `trustManifest.identity` is not supported",
        ),
        (
            json!({"type": "application/vnd.ofc.agent+json"}),
            "alone is not supported",
        ),
    ] {
        let e = p(filter.clone()).unwrap_err();
        assert!(e.message.contains(words), "{filter}: {}", e.message);
    }
}

fn hit(score: Option<f32>, missing: &[&str]) -> SearchHit {
    // From JSON, so the fields the hub adds to a hit later need no change here.
    serde_json::from_value(json!({
        "name": "a/b", "version": "1.0.0", "kind": "remote", "score": score,
        "missing_words": missing,
    }))
    .unwrap()
}

#[test]
fn keyword_scores_give_each_word_a_share_and_full_matches_outscore_partial_ones() {
    // Two words: a full match is in [67, 100], one lacking a word in [33, 67].
    assert_eq!(score(&hit(Some(5.0), &[]), 2, None), 83);
    assert_eq!(score(&hit(Some(1e-3), &[]), 2, None), 67);
    assert_eq!(score(&hit(Some(1e9), &[]), 2, None), 100);
    assert_eq!(score(&hit(Some(1e9), &["x"]), 2, None), 67);
    assert_eq!(score(&hit(Some(5.0), &["x"]), 2, None), 50);
    // One word: the strength of the match decides above the half.
    assert_eq!(score(&hit(Some(5.0), &[]), 1, None), 75);
    // No text: nothing to be relevant to.
    assert_eq!(score(&hit(None, &[]), 0, None), 100);
    assert_eq!(score(&hit(Some(f32::NAN), &[]), 1, None), 0);
}

#[test]
fn hybrid_scores_are_the_fused_score_over_the_best_possible() {
    let fusion = hub_search::hybrid::Fusion::default();
    let best = fusion.best_possible(hub_search::SearchMode::Hybrid);
    let k = fusion.rrf_k;
    let first = |w: f32| w / (k + 1.0);
    // First on both sides: 100; first on one side only: half; lower ranks lower.
    let both = first(fusion.keyword_weight) + first(fusion.semantic_weight);
    assert_eq!(score(&hit(Some(both), &[]), 3, best), 100);
    assert_eq!(
        score(&hit(Some(first(fusion.semantic_weight)), &[]), 3, best),
        50
    );
    let tenth = fusion.semantic_weight / (k + 10.0);
    assert_eq!(score(&hit(Some(tenth), &[]), 3, best), 39);
    // The words a hit lacks do not count again: the fusion weighed them already.
    assert_eq!(score(&hit(Some(tenth), &["x"]), 3, best), 39);
    assert_eq!(score(&hit(None, &[]), 3, best), 0);
    assert_eq!(fusion.best_possible(hub_search::SearchMode::Keyword), None);
}

#[test]
fn page_tokens_carry_the_last_score_and_are_checked() {
    assert_eq!(split_token("42.abc").unwrap(), (42, "abc"));
    assert_eq!(split_token("100.a.b").unwrap(), (100, "a.b"));
    for bad in ["abc", "101.abc", "-1.abc", "42.", ".abc", ""] {
        let e = split_token(bad).unwrap_err();
        assert!(
            e.message.contains("pageToken is not one this hub gave"),
            "{bad}"
        );
    }
}

#[test]
fn page_tokens_are_percent_encoded() {
    assert_eq!(percent("a+b/c=d~e"), "a%2Bb%2Fc%3Dd~e");
}
