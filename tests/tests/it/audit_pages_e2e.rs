//! `ofc audit` against a publisher with more log entries than one page holds: the hub's
//! publisher view is paged (it answered every entry with its proof at once), and the client
//! follows the pages, checking that each one's checkpoint extends the last.

use index_schema::envelope::sign_manifest;
use ofc_test_kit::{ProcessOptions, TestHub, remote_manifest};
use serde_json::json;

use crate::common::Ofc;

#[test]
fn audit_follows_the_pages_of_a_long_log() {
    let hub = TestHub::process(ProcessOptions::default());
    let alice = hub.new_user("alice");
    // 1,100 versions: past one page of 1,000 (the key registration is an entry too).
    for i in 0..1100 {
        let m = remote_manifest("alice/many", &format!("1.0.{i}"));
        let env = sign_manifest(&m, &alice.key);
        let (s, b) = hub.api(
            reqwest::Method::PUT,
            &format!("/api/v1/agents/alice/many/versions/1.0.{i}"),
            Some(&alice.token),
            Some(json!({"envelope": serde_json::from_str::<serde_json::Value>(&env.to_json()).unwrap()})),
        );
        assert_eq!(s, 201, "{b}");
    }
    // The hub: pages of at most `limit`, linked by `next_after`.
    let (s, first) = hub.api(
        reqwest::Method::GET,
        "/api/v1/log/publishers/alice?limit=400",
        None,
        None,
    );
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["entries"].as_array().unwrap().len(), 400);
    let next = first["next_after"].as_u64().expect("a next page");
    let (_, second) = hub.api(
        reqwest::Method::GET,
        &format!("/api/v1/log/publishers/alice?limit=400&after={next}"),
        None,
        None,
    );
    assert!(
        second["entries"][0]["index"].as_u64().unwrap() > next,
        "{second}"
    );
    let (s, bad) = hub.api(
        reqwest::Method::GET,
        "/api/v1/log/publishers/alice?limit=5000",
        None,
        None,
    );
    assert_eq!((s, bad["code"].as_str()), (400, Some("invalid_limit")));

    // The client: every entry, each verified.
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let v = ofc.json(&["audit", "alice"]);
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1101, "the key and 1,100 versions");
    let mut indexes: Vec<u64> = entries
        .iter()
        .map(|e| e["index"].as_u64().unwrap())
        .collect();
    let n = indexes.len();
    indexes.dedup();
    assert_eq!(indexes.len(), n, "an entry listed twice");
}
