//! Discovery documents on a real hub (`TestHub::in_process`), over HTTP: the A2A card's JWS
//! checked by an independent JOSE stack (PyPI `joserfc` and `rfc8785`, the venv that
//! `scripts/peers/jose` installs; the test fails when it cannot), the AI catalog and the ARD
//! `POST /search` with its paging and refusals.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use index_schema::a2a_card::A2aCard;
use index_schema::agent_yaml::ManifestDefaults;
use index_schema::manifest::Manifest;
use index_schema::name::AgentName;
use ofc_test_kit::{Backend, TestHub, bundle_manifest, remote_manifest};
use reqwest::Method;
use serde_json::{Map, Value, json};
use utoipa::OpenApi as _;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The python of the JOSE venv, installed now when missing.
fn jose_python() -> PathBuf {
    let out = Command::new(repo().join("scripts/peers/jose"))
        .output()
        .expect("run scripts/peers/jose");
    assert!(
        out.status.success(),
        "scripts/peers/jose could not install the JOSE verifier: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `scripts/a2a-card-verify JWKS CARD`: exit code and its JSON report.
fn verify(python: &Path, jwks: &str, card: &str) -> (i32, Value) {
    let out = Command::new(python)
        .arg(repo().join("scripts/a2a-card-verify"))
        .args([jwks, card])
        .output()
        .expect("run scripts/a2a-card-verify");
    let code = out.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "a2a-card-verify failed to run ({code}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (code, serde_json::from_slice(&out.stdout).unwrap())
}

/// A card of this test's own: text outside ASCII and the BMP, names that sort differently by
/// UTF-16 and by code point, and numbers whose canonical text is not their usual one.
fn ledger_card() -> Value {
    json!({
        "name": "Ledger Sorter",
        "description": "Sorts ledgers — in één keer, ≤ 1 s 📒",
        "url": "https://ledger.invalid/a2a",
        "version": "3.1.4",
        "protocolVersion": "0.3.0",
        "capabilities": {
            "streaming": true,
            "extensions": [{
                "uri": "https://ledger.invalid/ext/rounding",
                "params": {"ratio": 0.1, "limit": 1e21, "tiny": 1e-7, "whole": 100.0,
                           "\u{fb33}": "dalet", "\u{1f600}": "grin", "\r": "cr"}
            }]
        },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [{
            "id": "sort_ledger",
            "name": "Sort a ledger",
            "description": "Puts entries in date order.",
            "tags": ["ledger", "bookkeeping"]
        }]
    })
}

fn from_card(card: &Value, name: &str) -> Manifest {
    A2aCard::from_json(&card.to_string())
        .unwrap()
        .to_manifest(
            ManifestDefaults {
                name: Some(AgentName::parse(name).unwrap()),
                ..ManifestDefaults::default()
            },
            "agent-card.json",
        )
        .unwrap()
}

/// A change made to a served card.
type Tamper = Box<dyn Fn(&mut Map<String, Value>)>;

// Two workers: the verifier is a child process fetching from the hub in this process while
// the test's thread waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signed_a2a_card_verifies_with_an_independent_jose_library() {
    let python = jose_python();
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let alice = hub.user.clone();
    let (s, b) = hub
        .publish_as(&alice, &from_card(&ledger_card(), "alice/ledger"))
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = hub
        .publish_as(&alice, &remote_manifest("alice/code", "1.0.0"))
        .await;
    assert_eq!(s, 201, "{b}");

    let (s, jwks) = hub.get("/.well-known/jwks.json").await;
    assert_eq!(s, 200, "{jwks}");
    let key = &jwks["keys"][0];
    assert_documented(&jwks, "JwkSet");
    assert_documented(key, "Jwk");
    assert_eq!(
        (&key["kty"], &key["crv"], &key["alg"]),
        (&json!("OKP"), &json!("Ed25519"), &json!("EdDSA"))
    );
    let kid = key["kid"].as_str().unwrap().to_string();
    let jwks_url = hub.url("/.well-known/jwks.json");

    for agent in ["ledger", "code"] {
        let path = format!("/api/v1/agents/alice/{agent}/agent-card.json");
        let (s, card) = hub.get(&path).await;
        assert_eq!(s, 200, "{card}");
        // Fetched and verified by the independent stack, over HTTP.
        let (code, report) = verify(&python, &jwks_url, &hub.url(&path));
        assert_eq!(code, 0, "{agent}: {report}");
        assert_eq!(report["verified"], json!([kid]), "{report}");
        // Both canonicalisations agree byte for byte.
        let card = card.as_object().unwrap();
        assert_eq!(
            report["payload"].as_str().unwrap(),
            index_schema::a2a_sign::payload(card),
            "{agent}"
        );
        let header = card["signatures"][0]["protected"].as_str().unwrap();
        let header: Value = serde_json::from_slice(
            &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, header)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header, json!({"alg": "EdDSA", "kid": kid, "typ": "JOSE"}));
    }

    // The published card comes back as it was, the signature added.
    let (_, served) = hub.get("/api/v1/agents/alice/ledger/agent-card.json").await;
    let mut unsigned = served.as_object().unwrap().clone();
    unsigned.remove("signatures");
    assert_eq!(Value::Object(unsigned), ledger_card());

    // Tampered copies fail: a changed member, a member added, the signature of another card.
    let dir = tempfile::tempdir().unwrap();
    let (_, other) = hub.get("/api/v1/agents/alice/code/agent-card.json").await;
    let tampered: [(&str, Tamper); 3] = [
        (
            "changed",
            Box::new(|c| {
                c.insert("url".into(), json!("https://attacker.invalid/a2a"));
            }),
        ),
        (
            "added",
            Box::new(|c| {
                c.insert("iconUrl".into(), json!("https://attacker.invalid/i.png"));
            }),
        ),
        (
            "moved",
            Box::new(move |c| {
                c.insert("signatures".into(), other["signatures"].clone());
            }),
        ),
    ];
    for (what, change) in tampered {
        let mut card = served.as_object().unwrap().clone();
        change(&mut card);
        let file = dir.path().join(format!("{what}.json"));
        std::fs::write(&file, serde_json::to_vec(&card).unwrap()).unwrap();
        let (code, report) = verify(&python, &jwks_url, file.to_str().unwrap());
        assert_eq!(code, 1, "{what}: {report}");
        assert_eq!(report["verified"], json!([]), "{what}: {report}");
        assert_eq!(report["failed"][0]["kid"], json!(kid), "{what}: {report}");
    }
    // Unchanged, from a file too: the file route is not what fails.
    let file = dir.path().join("same.json");
    std::fs::write(&file, serde_json::to_vec(&served).unwrap()).unwrap();
    assert_eq!(verify(&python, &jwks_url, file.to_str().unwrap()).0, 0);
    hub.stop().await;
}

/// Polls `POST /api/v1/ard/search` until `done` holds (the index follows publishes within a
/// second; 5 s at most here).
async fn search_until(hub: &TestHub, body: &Value, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let (s, v) = hub
            .call(Method::POST, "/api/v1/ard/search", None, Some(body.clone()))
            .await;
        assert_eq!(s, 200, "{v}");
        if done(&v) {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "not reached: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The property names of an OpenAPI component schema, through `allOf` and `$ref`.
fn documented(doc: &Value, schema: &Value, into: &mut Vec<String>) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap();
        return documented(doc, &doc["components"]["schemas"][name], into);
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        documented(doc, part, into);
    }
    into.extend(
        schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone()),
    );
}

/// Every member of `value` is one the OpenAPI document gives its schema `name`.
fn assert_documented(value: &Value, name: &str) {
    let doc = serde_json::to_value(hub_server::api::openapi::ApiDoc::openapi()).unwrap();
    let mut props = Vec::new();
    documented(&doc, &doc["components"]["schemas"][name], &mut props);
    assert!(!props.is_empty(), "no schema {name}");
    for key in value.as_object().unwrap().keys() {
        assert!(
            props.contains(key),
            "{name} does not document `{key}`: {value}"
        );
    }
}

fn ids(v: &Value, member: &str) -> Vec<String> {
    v[member]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["identifier"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_ai_catalog_and_ard_search_answer_over_http() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let alice = hub.user.clone();
    let mut ledger = serde_json::to_value(from_card(&ledger_card(), "alice/ledger")).unwrap();
    ledger["keywords"] = json!(["bookkeeping"]);
    ledger["examples"] = json!(["sort my ledger by date", "order these bookkeeping entries"]);
    let ledger = Manifest::from_value(&ledger).unwrap();
    let mut tally = serde_json::to_value(remote_manifest("alice/tally", "0.2.0")).unwrap();
    tally["displayName"] = json!("Tally Clerk");
    tally["tagline"] = json!("Tallies ledger columns");
    let tally = Manifest::from_value(&tally).unwrap();
    for m in [&ledger, &tally] {
        let (s, b) = hub.publish_as(&alice, m).await;
        assert_eq!(s, 201, "{b}");
    }
    let bytes = b"not really a tarball";
    let bundled = bundle_manifest("alice/books", "1.0.0", bytes);
    let (s, b) = hub
        .publish(&alice.token, &alice.key, &bundled, Some(bytes))
        .await;
    assert_eq!(s, 201, "{b}");

    // Search, once the index has the three.
    let all = search_until(&hub, &json!({"query": {"text": ""}}), |v| {
        v["results"].as_array().unwrap().len() == 3
    })
    .await;
    let host = "localhost";
    let mut got = ids(&all, "results");
    got.sort();
    assert_eq!(
        got,
        [
            format!("urn:air:{host}:alice:books"),
            format!("urn:air:{host}:alice:ledger"),
            format!("urn:air:{host}:alice:tally"),
        ]
    );
    let v = search_until(&hub, &json!({"query": {"text": "ledger"}}), |_| true).await;
    let hits = v["results"].as_array().unwrap();
    assert_eq!(
        ids(&v, "results")[0],
        format!("urn:air:{host}:alice:ledger"),
        "{v}"
    );
    let top = &hits[0];
    assert_eq!(top["type"], "application/a2a-agent-card+json");
    assert_eq!(top["displayName"], "Ledger Sorter");
    assert_eq!(top["capabilities"], json!(["sort_ledger"]));
    assert_eq!(top["tags"], json!(["bookkeeping"]));
    assert_eq!(top["version"], "3.1.4");
    assert_eq!(
        top["representativeQueries"],
        json!(["sort my ledger by date", "order these bookkeeping entries"])
    );
    assert_eq!(top["source"], hub.url("/api/v1/ard"));
    for h in hits {
        let score = h["score"].as_u64().unwrap();
        assert!((1..=100).contains(&score), "{h}");
        assert_documented(h, "ArdSearchResult");
    }
    assert_documented(&v, "ArdSearchResponse");
    // The entry's url is the signed card.
    let card_url = top["url"].as_str().unwrap();
    assert_eq!(
        card_url,
        hub.url("/api/v1/agents/alice/ledger/agent-card.json")
    );
    let card: Value = hub
        .client
        .get(card_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(card["signatures"].is_array(), "{card}");

    // Filters: the A2A type leaves the bundle agent out; a type or publisher the hub has
    // none of finds nothing; a capability narrows.
    let v = search_until(
        &hub,
        &json!({"query": {"text": "", "filter": {"type": ["application/a2a-agent-card+json"]}}}),
        |_| true,
    )
    .await;
    assert_eq!(v["results"].as_array().unwrap().len(), 2, "{v}");
    for filter in [
        json!({"type": "application/mcp-server-card+json"}),
        json!({"publisher": ["elsewhere.example"]}),
    ] {
        let v = search_until(
            &hub,
            &json!({"query": {"text": "", "filter": filter}}),
            |_| true,
        )
        .await;
        assert_eq!(v, json!({"results": []}), "{filter}");
    }
    let v = search_until(
        &hub,
        &json!({"query": {"text": "", "filter": {"capabilities": "sort_ledger", "publisher": host}},
                "federation": "none"}),
        |_| true,
    )
    .await;
    assert_eq!(ids(&v, "results"), [format!("urn:air:{host}:alice:ledger")]);

    // Paging: one per page, every agent once.
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..5 {
        let mut body = json!({"query": {"text": ""}, "pageSize": 1});
        if let Some(t) = &token {
            body["pageToken"] = json!(t);
        }
        let v = search_until(&hub, &body, |_| true).await;
        seen.extend(ids(&v, "results"));
        token = v["pageToken"].as_str().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    seen.sort();
    assert_eq!(seen, got);

    // Refusals: 400 INVALID_ARGUMENT naming what is wrong.
    for (body, words) in [
        (
            json!({"query": {"text": "x"}, "pageSize": 0}),
            "pageSize is 1 to 100",
        ),
        (
            json!({"query": {"text": "x"}, "pageSize": 101}),
            "pageSize is 1 to 100",
        ),
        (
            json!({"query": {"text": "x"}, "limit": 3}),
            "unknown field `limit`",
        ),
        (
            json!({"query": {"text": "x", "sort": "name"}}),
            "unknown field `sort`",
        ),
        (json!({"query": {}}), "missing field `text`"),
        (
            json!({"query": {"text": "x"}, "federation": "all"}),
            "federation is auto, referrals or none",
        ),
        (
            json!({"query": {"text": "x", "filter": {"owner": "a"}}}),
            "filter `owner` is not supported",
        ),
        (
            json!({"query": {"text": "x", "filter": {"tags": ["a", "b"]}}}),
            "filter `tags` takes one value",
        ),
        // One value with a comma: the index would read it as two, both required.
        (
            json!({"query": {"text": "x", "filter": {"tags": "invoice,finance"}}}),
            "holds a comma",
        ),
        (
            json!({"query": {"text": "x", "filter": {"capabilities": ["a,b"]}}}),
            "holds a comma",
        ),
        (
            json!({"query": {"text": "x"}, "pageToken": "not-a-token"}),
            "pageToken",
        ),
        (json!({"query": {"text": "x".repeat(2000)}}), "query.text"),
    ] {
        let (s, v) = hub
            .call(Method::POST, "/api/v1/ard/search", None, Some(body.clone()))
            .await;
        assert_eq!(s, 400, "{body}: {v}");
        assert_eq!(v["errorCode"], "INVALID_ARGUMENT", "{body}: {v}");
        assert_documented(&v, "ArdError");
        assert!(
            v["message"].as_str().unwrap().contains(words),
            "{body}: {v}"
        );
    }
    let resp = hub
        .client
        .post(hub.url("/api/v1/ard/search"))
        .header("content-type", "application/json")
        .body("{\"query\":")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["errorCode"], "INVALID_ARGUMENT", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("not an ARD search request"),
        "{v}"
    );

    // The catalog: the registry first, then every agent; the A2A entries' urls are cards.
    let (s, cat) = hub.get("/.well-known/ai-catalog.json").await;
    assert_eq!(s, 200, "{cat}");
    assert_documented(&cat, "AiCatalog");
    assert_documented(&cat["host"], "AiCatalogHost");
    for e in cat["entries"].as_array().unwrap() {
        assert_documented(e, "ArdEntry");
    }
    assert_eq!(cat["specVersion"], "1.0");
    assert_eq!(cat["host"]["displayName"], host);
    let entries = cat["entries"].as_array().unwrap();
    assert_eq!(entries[0]["type"], "application/ai-registry+json");
    assert_eq!(entries[0]["url"], hub.url("/api/v1/ard"));
    let mut listed = ids(&cat, "entries")[1..].to_vec();
    listed.sort();
    assert_eq!(listed, got);
    for e in &entries[1..] {
        assert!(e.get("data").is_none() && e["url"].is_string(), "{e}");
        let url = e["url"].as_str().unwrap();
        let resp = hub.client.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        let doc: Value = resp.json().await.unwrap();
        match e["type"].as_str().unwrap() {
            "application/a2a-agent-card+json" => assert!(doc["signatures"].is_array(), "{doc}"),
            "application/vnd.ofc.agent+json" => assert_eq!(doc["name"], "alice/books", "{doc}"),
            other => panic!("unexpected type {other}"),
        }
    }
    // Behind a TLS proxy the addresses are https.
    let resp = hub
        .client
        .get(hub.url("/.well-known/ai-catalog.json"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    assert!(
        v["entries"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://"),
        "{v}"
    );
    for bad in ["?page=2", "?pageToken=nope"] {
        let (s, v) = hub.get(&format!("/.well-known/ai-catalog.json{bad}")).await;
        assert_eq!(s, 400, "{bad}: {v}");
    }
    hub.stop().await;
}

/// A version removed in the moment before the search index learns of it is not listed: the
/// catalog and the ARD search read each hit's version back and leave out one that is gone (it
/// was listed, without its capabilities, until the index caught up). The index's lag is made
/// here by removing the row behind its back (no outbox row), as a stalled follower would see it.
#[tokio::test]
async fn a_version_removed_before_the_index_knows_is_not_listed() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let alice = hub.user.clone();
    for v in ["1.0.0", "1.1.0"] {
        let m = remote_manifest("alice/lagging", v);
        assert_eq!(hub.publish(&alice.token, &alice.key, &m, None).await.0, 201);
    }
    let urn = "urn:air:localhost:alice:lagging";
    let body = json!({"query": {"text": "code"}});
    let listed = |v: &Value| ids(v, "results").iter().any(|i| i.starts_with(urn));
    let v = search_until(&hub, &body, |v| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["version"] == "1.1.0")
    })
    .await;
    assert!(listed(&v), "{v}");
    {
        let pool = hub.store().db().write();
        sqlx::query(
            "DELETE FROM versions WHERE version = '1.1.0' AND agent_id = \
             (SELECT id FROM agents WHERE name = 'alice/lagging')",
        )
        .execute(pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO deleted_versions (agent, version, deleted_at) \
             VALUES ('alice/lagging', '1.1.0', 0)",
        )
        .execute(pool)
        .await
        .unwrap();
    }
    let (s, v) = hub
        .call(Method::POST, "/api/v1/ard/search", None, Some(body))
        .await;
    assert_eq!(s, 200, "{v}");
    assert!(!listed(&v), "{v}");
    let (s, v) = hub.get("/.well-known/ai-catalog.json").await;
    assert_eq!(s, 200, "{v}");
    let all = v.to_string();
    assert!(!all.contains(urn), "{v}");
    hub.stop().await;
}

/// A body past the API's limit (2 MiB) is refused in ARD's error shape, whether its length is
/// announced or it streams: the extractor's refusal was the hub's `{code, message}`.
#[tokio::test]
async fn an_ard_search_body_past_the_limit_is_refused_in_ards_shape() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let text = "x".repeat(3 * 1024 * 1024);
    let body = serde_json::to_vec(&json!({"query": {"text": text}})).unwrap();
    let half = body.len() / 2;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(body[..half].to_vec()), Ok(body[half..].to_vec())];
    for (how, b) in [
        ("with a length", reqwest::Body::from(body.clone())),
        (
            "streamed",
            reqwest::Body::wrap_stream(futures::stream::iter(chunks)),
        ),
    ] {
        let resp = hub
            .client
            .post(hub.url("/api/v1/ard/search"))
            .header("content-type", "application/json")
            .body(b)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 413, "{how}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["errorCode"], "INVALID_ARGUMENT", "{how}: {v}");
        assert_eq!(v["code"], "payload_too_large", "{how}: {v}");
        assert_documented(&v, "ArdError");
        assert!(
            v["message"].as_str().unwrap().contains("2097152 bytes"),
            "{how}: {v}"
        );
    }
    // Under the limit, a search still answers (here 400: the text is past 1024 bytes).
    let (s, v) = hub
        .call(
            Method::POST,
            "/api/v1/ard/search",
            None,
            Some(json!({"query": {"text": "x".repeat(1024 * 1024)}})),
        )
        .await;
    assert_eq!(
        (s, &v["errorCode"]),
        (400, &json!("INVALID_ARGUMENT")),
        "{v}"
    );
    hub.stop().await;
}
