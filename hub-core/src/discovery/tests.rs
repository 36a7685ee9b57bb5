use index_schema::hub_api::SearchHit;
use serde_json::json;

use super::{SearchRequest, Site, params_of, percent, score};

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
fn scores_are_0_to_100_and_partial_matches_score_lower() {
    assert_eq!(score(&hit(Some(5.0), &[]), 2), 50);
    assert_eq!(score(&hit(Some(5.0), &["x"]), 2), 25);
    assert_eq!(score(&hit(Some(1e9), &[]), 1), 100);
    assert_eq!(score(&hit(None, &[]), 0), 100);
    assert_eq!(score(&hit(Some(f32::NAN), &[]), 1), 0);
}

#[test]
fn page_tokens_are_percent_encoded() {
    assert_eq!(percent("a+b/c=d~e"), "a%2Bb%2Fc%3Dd~e");
}
