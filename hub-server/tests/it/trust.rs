//! Trust signals (issue 33, point 5) on SQLite and PostgreSQL: the `trust` block of the agent
//! and version answers and the agent page — the signing key with its registration time and age
//! at the publish (and its revocation), the log entry proven by the hub (and not proven once a
//! stored hash is damaged), the deprecation, the last publish, downloads per week counted with
//! the downloads.

use index_schema::hub_api::trust::{day_text, week_of_day};
use ofc_test_kit::{Backend, TestHub, bundle_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

/// The text of the element with `id` in `html` (its start tag to the next `</li>`).
fn item<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page:\n{html}"));
    let end = html[start..]
        .find("</li>")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn trust_signals_in_the_api_and_on_the_page(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let (s, keys) = app
        .call(
            Method::GET,
            "/api/v1/namespaces/alice/keys",
            Some(&u.token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{keys}");
    let key_id = u.key.key_id().to_string();
    let key_added = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key_id"] == key_id.as_str())
        .unwrap_or_else(|| panic!("{keys}"))["added_at"]
        .as_i64()
        .unwrap();

    let bytes = b"bundle of 1.0.0".to_vec();
    let m = bundle_manifest("alice/data", "1.0.0", &bytes);
    let (s, b) = app.publish(&u.token, &u.key, &m, Some(&bytes)).await;
    assert_eq!(s, 201, "{b}");
    let published_at = b["published_at"].as_i64().unwrap();
    let log_index = b["log"]["index"].as_u64().unwrap();

    // The version's block: the key as registered, the entry proven, no deprecation, no
    // downloads in any of the 8 weeks, the last of which is this week.
    let (s, v) = app.get("/api/v1/agents/alice/data/versions/1.0.0").await;
    assert_eq!(s, 200, "{v}");
    let t = &v["trust"];
    assert_eq!(t["version"], "1.0.0", "{t}");
    assert_eq!(t["signed_by"]["key_id"], key_id.as_str(), "{t}");
    assert_eq!(t["signed_by"]["added_at"], key_added, "{t}");
    assert_eq!(t["signed_by"]["age_days_at_publish"], 0, "{t}");
    assert!(t["signed_by"]["revoked_at"].is_null(), "{t}");
    assert_eq!(t["log"]["index"], log_index, "{t}");
    assert_eq!(t["log"]["verified"], true, "{t}");
    assert!(
        t["log"]["checkpoint_size"].as_u64().unwrap() > log_index,
        "{t}"
    );
    assert!(t.get("deprecated").is_none(), "{t}");
    assert_eq!(t["last_published_at"], published_at, "{t}");
    let this_week = day_text(week_of_day(
        hub_core::store::now_ms().div_euclid(86_400_000),
    ));
    let weeks = t["downloads_per_week"].as_array().unwrap();
    assert_eq!(weeks.len(), 8, "{t}");
    assert_eq!(weeks[7]["week"], this_week.as_str(), "{t}");
    assert!(weeks.iter().all(|w| w["downloads"] == 0), "{t}");

    // Two downloads from one client on one day count once, in this week, as the totals do.
    for _ in 0..2 {
        let r = app
            .client
            .get(app.url("/api/v1/agents/alice/data/versions/1.0.0/bundle"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.bytes().await.unwrap(), bytes);
    }
    // A second version, deprecated with a successor; the agent's block is the latest's.
    let bytes2 = b"bundle of 1.1.0".to_vec();
    let m = bundle_manifest("alice/data", "1.1.0", &bytes2);
    let (s, b) = app.publish(&u.token, &u.key, &m, Some(&bytes2)).await;
    assert_eq!(s, 201, "{b}");
    let published_2 = b["published_at"].as_i64().unwrap();
    let (s, b) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/data/versions/1.1.0/deprecation",
            Some(&u.token),
            Some(json!({"message": "use the new one", "successor": "alice/next"})),
        )
        .await;
    assert_eq!(s, 204, "{b}");
    let (s, info) = app.get("/api/v1/agents/alice/data").await;
    assert_eq!(s, 200, "{info}");
    let t = &info["trust"];
    assert_eq!(info["downloads"], 1, "{info}");
    assert_eq!(t["version"], "1.1.0", "{t}");
    assert_eq!(t["last_published_at"], published_2, "{t}");
    assert_eq!(
        t["deprecated"],
        json!({"message": "use the new one", "successor": "alice/next"}),
        "{t}"
    );
    assert_eq!(t["log"]["verified"], true, "{t}");
    let latest_index = t["log"]["index"].as_u64().unwrap();
    assert!(latest_index > log_index, "{t}");
    let weeks = t["downloads_per_week"].as_array().unwrap();
    assert_eq!(weeks[7], json!({"week": this_week, "downloads": 1}), "{t}");
    assert!(weeks[..7].iter().all(|w| w["downloads"] == 0), "{t}");
    // The older version's own block keeps its own facts; the agent's facts are shared.
    let (_, v) = app.get("/api/v1/agents/alice/data/versions/1.0.0").await;
    assert!(v["trust"].get("deprecated").is_none(), "{v}");
    assert_eq!(v["trust"]["last_published_at"], published_2, "{v}");

    // The page shows each signal.
    let (s, html) = app.page("/agents/alice/data").await;
    assert_eq!(s, 200);
    assert!(html.contains("Trust signals"), "{html}");
    let key = item(&html, "signal-key");
    assert!(key.contains(&key_id), "{key}");
    assert!(
        key.contains("less than a day before this version was published"),
        "{key}"
    );
    let log = item(&html, "signal-log");
    assert!(
        log.contains(&format!("entry {latest_index} proven")),
        "{log}"
    );
    let dep = item(&html, "signal-deprecation");
    assert!(
        dep.contains("use the new one") && dep.contains("href=\"/agents/alice/next\""),
        "{dep}"
    );
    assert!(
        item(&html, "signal-published").contains("Last published"),
        "{html}"
    );
    let dl = item(&html, "signal-downloads");
    assert!(dl.contains(&this_week), "{dl}");

    // A revoked key shows as revoked, in the API and on the page.
    let (s, b) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/namespaces/alice/keys/{key_id}"),
            Some(&u.token),
            None,
        )
        .await;
    assert!(s == 200 || s == 204, "{s} {b}");
    let (_, v) = app.get("/api/v1/agents/alice/data/versions/1.1.0").await;
    assert!(
        v["trust"]["signed_by"]["revoked_at"].as_i64().is_some(),
        "{v}"
    );
    let (_, html) = app.page("/agents/alice/data").await;
    assert!(item(&html, "signal-key").contains("revoked"), "{html}");

    // Stored hashes damaged behind the hub's back: the entry no longer proves, and the hub
    // says so instead of vouching for it.
    {
        let pool = app.store().db().write();
        sqlx::query("UPDATE tlog_hashes SET hash = $1")
            .bind(vec![0u8; 32])
            .execute(pool)
            .await
            .unwrap();
    }
    let (s, v) = app.get("/api/v1/agents/alice/data/versions/1.0.0").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["trust"]["log"]["verified"], false, "{v}");
    assert!(
        v["trust"]["log"]["problem"]
            .as_str()
            .unwrap()
            .contains("is not proven"),
        "{v}"
    );
    let (_, html) = app.page("/agents/alice/data?version=1.0.0").await;
    assert!(item(&html, "signal-log").contains("not proven"), "{html}");
    app.stop().await;
}

/// The OpenAPI document describes the block (the snapshot test has all of it).
#[test]
fn the_openapi_document_names_the_trust_block() {
    use utoipa::OpenApi as _;
    let doc: Value = serde_json::to_value(hub_server::api::openapi::ApiDoc::openapi()).unwrap();
    let schemas = &doc["components"]["schemas"];
    for s in [
        "TrustSignals",
        "SignerSignal",
        "LogSignal",
        "WeekDownloads",
        "Removed",
    ] {
        assert!(schemas.get(s).is_some(), "no schema {s}");
    }
    assert!(
        schemas["VersionInfo"]["properties"].get("trust").is_some(),
        "{}",
        schemas["VersionInfo"]
    );
    assert!(schemas["AgentInfo"]["properties"].get("trust").is_some());
    assert!(schemas["ErrorBody"]["properties"].get("removed").is_some());
}
