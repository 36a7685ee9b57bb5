//! The life of a version after its publish (issue 33), on SQLite and PostgreSQL: deprecation
//! with a successor (the API, the log entry, search's marker and filter, the pages), unpublish
//! inside and outside the window and over the download limit, an operator's takedown, the
//! tombstones (410 naming the reason class against 404 for never-existed, republishing
//! refused whatever the content), checked by `ofc-hub log verify`'s check and, for the
//! `remove` entry, by aics-tlog from the tiles; `ofc-hub admin takedown` as an operator runs it.

use std::time::Duration;

use index_schema::name::AgentName;
use index_schema::tlog::{Entry, RemovalReason};
use ofc_test_kit::{Backend, TestHub, bundle_manifest, remote_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

/// The longest a change may take to reach search here (the promise is 1 s).
const BOUND: Duration = Duration::from_secs(5);

/// Polls `path` until `done` holds for its 200 JSON body; panics after [`BOUND`].
async fn until(app: &TestHub, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let (s, v) = app.get(path).await;
        if s == 200 && done(&v) {
            return v;
        }
        assert!(start.elapsed() < BOUND, "{path}: not reached: {s} {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn hit_names(v: &Value) -> Vec<&str> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect()
}

/// The publisher's log entries, as text.
async fn log_of(app: &TestHub, publisher: &str) -> Vec<String> {
    let (s, v) = app
        .get(&format!("/api/v1/log/publishers/{publisher}"))
        .await;
    assert_eq!(s, 200, "{v}");
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"].as_str().unwrap().to_string())
        .collect()
}

async fn deprecation(
    app: &TestHub,
    token: &str,
    agent: &str,
    version: &str,
    body: Value,
) -> (u16, Value) {
    let path = format!("/api/v1/agents/{agent}/versions/{version}/deprecation");
    app.call(Method::PUT, &path, Some(token), Some(body)).await
}

async fn unpublish(app: &TestHub, token: &str, agent: &str, version: &str) -> (u16, Value) {
    let path = format!("/api/v1/agents/{agent}/versions/{version}/unpublish");
    app.call(Method::POST, &path, Some(token), None).await
}

fn assert_problem_free(report: &hub_core::store::LogVerifyReport) {
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn deprecations_are_logged_marked_filtered_and_shown(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    for (a, v) in [
        ("alice/old", "1.0.0"),
        ("alice/old", "1.1.0"),
        ("alice/fresh", "1.0.0"),
    ] {
        let (s, b) = app
            .publish(&u.token, &u.key, &remote_manifest(a, v), None)
            .await;
        assert_eq!(s, 201, "{b}");
    }
    // Found by search first, undeprecated.
    until(&app, "/api/v1/search?q=code", |v| hit_names(v).len() == 2).await;

    let message = "moved: use alice/fresh — it streams";
    let (s, b) = deprecation(
        &app,
        &u.token,
        "alice/old",
        "1.1.0",
        json!({"message": message, "successor": "alice/fresh"}),
    )
    .await;
    assert_eq!(s, 204, "{b}");

    // The API: the version and the agent's list carry message and successor.
    let (s, v) = app.get("/api/v1/agents/alice/old/versions/1.1.0").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["deprecated"], message);
    assert_eq!(v["deprecated_successor"], "alice/fresh");
    let (_, info) = app.get("/api/v1/agents/alice/old").await;
    assert_eq!(
        info["versions"][1]["deprecated_successor"], "alice/fresh",
        "{info}"
    );
    assert!(info["versions"][0]["deprecated"].is_null(), "{info}");
    assert!(
        info["versions"][0].get("deprecated_successor").is_none(),
        "{info}"
    );

    // The log: one `deprecate` entry whose message decodes to the one given.
    let entries = log_of(&app, "alice").await;
    let last = entries.last().unwrap();
    assert!(
        last.starts_with("ofc-log/v1 deprecate alice/old 1.1.0 alice/fresh "),
        "{last}"
    );
    match Entry::parse(format!("{last}\n").as_bytes()).unwrap() {
        Entry::Deprecate {
            successor,
            message: m,
            ..
        } => {
            assert_eq!(m, message);
            assert_eq!(successor, Some(AgentName::parse("alice/fresh").unwrap()));
        }
        other => panic!("{other:?}"),
    }

    // Search: marked; hidden with `exclude`; alone with `only`.
    let v = until(&app, "/api/v1/search?q=code", |v| {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["deprecated"] == true)
    })
    .await;
    let old = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "alice/old")
        .unwrap();
    assert_eq!(old["deprecated"], true, "{v}");
    let (_, v) = app.get("/api/v1/search?q=code&deprecated=exclude").await;
    assert_eq!(hit_names(&v), ["alice/fresh"], "{v}");
    let (_, v) = app.get("/api/v1/search?deprecated=only").await;
    assert_eq!(hit_names(&v), ["alice/old"], "{v}");
    let (s, v) = app.get("/api/v1/search?deprecated=maybe").await;
    assert_eq!(s, 400, "{v}");
    assert!(v["message"].as_str().unwrap().contains("deprecated"), "{v}");

    // The pages: the agent page (its latest version) and the version page.
    for path in ["/agents/alice/old", "/agents/alice/old?version=1.1.0"] {
        let (s, html) = app.page(path).await;
        assert_eq!(s, 200, "{path}");
        assert!(
            html.contains("Deprecated: moved: use alice/fresh"),
            "{path}: {html}"
        );
        assert!(
            html.contains("href=\"/agents/alice/fresh\""),
            "{path}: {html}"
        );
    }
    let (_, html) = app.page("/search?q=code").await;
    assert!(html.contains("deprecated"), "{html}");

    // Refusals: a bad successor, the agent itself, another publisher.
    for (body, code) in [
        (
            json!({"message": "m", "successor": "Not A Name"}),
            "invalid_name",
        ),
        (
            json!({"message": "m", "successor": "alice/old"}),
            "invalid_name",
        ),
        (json!({"message": " "}), "invalid_message"),
        (json!({"message": "two\nlines"}), "invalid_message"),
    ] {
        let (s, b) = deprecation(&app, &u.token, "alice/old", "1.0.0", body.clone()).await;
        assert_eq!((s, b["code"].as_str().unwrap()), (400, code), "{body}: {b}");
    }
    let bob = app.new_user("bob", false).await;
    let (s, b) = deprecation(
        &app,
        &bob.token,
        "alice/old",
        "1.0.0",
        json!({"message": "mine"}),
    )
    .await;
    assert_eq!(s, 403, "{b}");

    // Undo: the marks go, an `undeprecate` entry is logged, and the log still verifies.
    let path = "/api/v1/agents/alice/old/versions/1.1.0/deprecation";
    let (s, b) = app.call(Method::DELETE, path, Some(&u.token), None).await;
    assert_eq!(s, 204, "{b}");
    let (_, v) = app.get("/api/v1/agents/alice/old/versions/1.1.0").await;
    assert!(
        v["deprecated"].is_null() && v.get("deprecated_successor").is_none(),
        "{v}"
    );
    assert_eq!(
        log_of(&app, "alice").await.last().unwrap(),
        "ofc-log/v1 undeprecate alice/old 1.1.0"
    );
    until(&app, "/api/v1/search?q=code&deprecated=exclude", |v| {
        hit_names(v).len() == 2
    })
    .await;
    assert_problem_free(&app.store().log_verify().await.unwrap());
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn unpublish_within_limits_takedown_beyond_and_tombstones_stay(#[case] backend: Backend) {
    let app = TestHub::in_process_with(backend, |c| {
        c.unpublish_window_secs = 4;
        c.unpublish_max_downloads = 1;
    })
    .await;
    let u = app.user.clone();
    let bytes = |v: &str| format!("bundle of {v}").into_bytes();
    let publish = async |v: &str, content: &[u8]| {
        let m = bundle_manifest("alice/data", v, content);
        app.publish(&u.token, &u.key, &m, Some(content)).await
    };
    for v in ["1.0.0", "1.0.1", "1.0.2"] {
        let (s, b) = publish(v, &bytes(v)).await;
        assert_eq!(s, 201, "{b}");
    }
    let (_, v) = app.get("/api/v1/agents/alice/data/versions/1.0.0").await;
    let digest = v["manifest_digest"].as_str().unwrap().to_string();

    // Inside the window, never downloaded: unpublished; another user may not.
    let bob = app.new_user("bob", false).await;
    let (s, b) = unpublish(&app, &bob.token, "alice/data", "1.0.0").await;
    assert_eq!(s, 403, "{b}");
    let before = hub_core::store::now_ms();
    let (s, b) = unpublish(&app, &u.token, "alice/data", "1.0.0").await;
    assert_eq!(s, 204, "{b}");
    let after = hub_core::store::now_ms();

    // Its URLs answer 410 naming the reason class, in the message and as fields (class, time,
    // the digest that is gone); a version that never existed, 404 without them.
    for path in [
        "/api/v1/agents/alice/data/versions/1.0.0",
        "/api/v1/agents/alice/data/versions/1.0.0/bundle",
    ] {
        let (s, b) = app.get(path).await;
        assert_eq!(
            (s, b["code"].as_str().unwrap()),
            (410, "version_removed"),
            "{path}: {b}"
        );
        assert!(
            b["message"].as_str().unwrap().contains("`unpublished`"),
            "{b}"
        );
        assert_eq!(b["removed"]["reason"], "unpublished", "{b}");
        assert_eq!(b["removed"]["manifest_digest"], digest.as_str(), "{b}");
        let at = b["removed"]["removed_at"].as_i64().unwrap();
        assert!(
            (before..=after).contains(&at),
            "{at} not in {before}..={after}"
        );
    }
    // Under /v2/ the tag is 404 MANIFEST_UNKNOWN, as the OCI distribution spec has it, with
    // the removal in the message and the error's detail; a tag that never was has no detail.
    for (tag, removed) in [("1.0.0", true), ("9.9.9", false)] {
        let path = format!("/v2/alice/data/manifests/{tag}");
        let head = app.client.head(app.url(&path)).send().await.unwrap();
        assert_eq!(head.status(), 404, "HEAD {path}");
        let r = app.client.get(app.url(&path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "GET {path}");
        let b: Value = r.json().await.unwrap();
        let e = &b["errors"][0];
        assert_eq!(e["code"], "MANIFEST_UNKNOWN", "{b}");
        if removed {
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("was removed (reason class `unpublished`)"),
                "{b}"
            );
            assert_eq!(e["detail"]["ofc_code"], "version_removed", "{b}");
            assert_eq!(e["detail"]["reason"], "unpublished", "{b}");
            assert_eq!(e["detail"]["manifest_digest"], digest.as_str(), "{b}");
            let at = e["detail"]["removed_at"].as_i64().unwrap();
            assert!((before..=after).contains(&at), "{b}");
        } else {
            assert!(e["detail"].is_null(), "{b}");
        }
    }
    let r = app
        .client
        .get(app.url("/v2/alice/data/manifests/1.0.1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "a live version's tag still answers");
    let (s, b) = app.get("/api/v1/agents/alice/data/versions/9.9.9").await;
    assert_eq!(
        (s, b["code"].as_str().unwrap()),
        (404, "version_not_found"),
        "{b}"
    );
    let (s, _) = app.page("/agents/alice/data?version=1.0.0").await;
    assert_eq!(s, 410);
    let (s, _) = app.page("/agents/alice/data?version=9.9.9").await;
    assert_eq!(s, 404);
    let (s, b) = unpublish(&app, &u.token, "alice/data", "1.0.0").await;
    assert_eq!(s, 410, "unpublished twice: {b}");

    // Never published again: not with other bytes, nor with the same ones.
    for content in [bytes("1.0.0"), b"other bytes".to_vec()] {
        let (s, b) = publish("1.0.0", &content).await;
        assert_eq!(
            (s, b["code"].as_str().unwrap()),
            (409, "version_removed"),
            "{b}"
        );
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("never be published again"),
            "{b}"
        );
    }

    // Downloaded once (the limit is 1): refused, pointing to a takedown.
    let r = app
        .client
        .get(app.url("/api/v1/agents/alice/data/versions/1.0.1/bundle"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap(), bytes("1.0.1"));
    let (s, b) = unpublish(&app, &u.token, "alice/data", "1.0.1").await;
    assert_eq!(
        (s, b["code"].as_str().unwrap()),
        (403, "unpublish_refused"),
        "{b}"
    );
    let m = b["message"].as_str().unwrap();
    assert!(
        m.contains("1 counted downloads") && m.contains("ofc-hub admin takedown alice/data@1.0.1"),
        "{m}"
    );

    // Past the window (4 s): refused.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let (s, b) = unpublish(&app, &u.token, "alice/data", "1.0.2").await;
    assert_eq!(
        (s, b["code"].as_str().unwrap()),
        (403, "unpublish_refused"),
        "{b}"
    );
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("past the hub's unpublish window"),
        "{b}"
    );
    let (s, _) = app.get("/api/v1/agents/alice/data/versions/1.0.2").await;
    assert_eq!(s, 200, "a refused unpublish leaves the version");

    // An operator's takedown: any age and downloads, a reason class but not `unpublished`.
    let store = app.store();
    for bad in ["unpublished", "because"] {
        let e = hub_core::lifecycle::takedown(store, "alice/data", "1.0.2", bad)
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("malware, legal, security, abuse, policy"),
            "{e}"
        );
    }
    hub_core::lifecycle::takedown(store, "alice/data", "1.0.2", "malware")
        .await
        .unwrap();
    let e = hub_core::lifecycle::takedown(store, "alice/data", "1.0.2", "legal")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("removed already"), "{e}");
    let (s, b) = app.get("/api/v1/agents/alice/data/versions/1.0.2").await;
    assert_eq!(s, 410, "{b}");
    assert!(b["message"].as_str().unwrap().contains("`malware`"), "{b}");
    assert_eq!(b["removed"]["reason"], "malware", "{b}");

    // The log: each removal a `remove` entry naming digest and class, after its publish.
    let entries = log_of(&app, "alice").await;
    let removes: Vec<Entry> = entries
        .iter()
        .filter(|e| e.contains(" remove "))
        .map(|e| Entry::parse(format!("{e}\n").as_bytes()).unwrap())
        .collect();
    assert_eq!(removes.len(), 2, "{entries:#?}");
    assert_eq!(
        removes[0],
        Entry::Remove {
            agent: AgentName::parse("alice/data").unwrap(),
            version: "1.0.0".into(),
            manifest_digest: digest.parse().unwrap(),
            reason: RemovalReason::Unpublished,
        }
    );
    assert!(
        matches!(&removes[1], Entry::Remove { reason: RemovalReason::Malware, version, .. } if version == "1.0.2")
    );
    let report = app.store().log_verify().await.unwrap();
    assert_problem_free(&report);

    // The check sees a tombstone changed behind the log's back, and a removed version back.
    {
        let pool = app.store().db().write();
        sqlx::query("UPDATE deleted_versions SET reason_class = 'legal' WHERE version = '1.0.2'")
            .execute(pool)
            .await
            .unwrap();
    }
    let problems = app.store().log_verify().await.unwrap().problems.join("\n");
    assert!(
        problems.contains("alice/data@1.0.2: the log's tombstone says digest"),
        "{problems}"
    );
    assert!(problems.contains("reason malware, the table"), "{problems}");
    app.stop().await;
}

/// The tombstone in the log is proven from the tiles by an implementation we did not write.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn tombstones_are_proven_by_aics_tlog(#[case] backend: Backend) {
    let bin = crate::tlog::aics_tlog();
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let (s, b) = app
        .publish(
            &u.token,
            &u.key,
            &remote_manifest("alice/code", "1.0.0"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = unpublish(&app, &u.token, "alice/code", "1.0.0").await;
    assert_eq!(s, 204, "{b}");
    let (_, log) = app.get("/api/v1/log/publishers/alice").await;
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["entry"]
            .as_str()
            .unwrap()
            .starts_with("ofc-log/v1 remove alice/code 1.0.0 sha256:"),
        "{last}"
    );
    assert!(
        last["entry"].as_str().unwrap().ends_with(" unpublished"),
        "{last}"
    );
    let entry = last["entry"].as_str().unwrap();
    let index = last["index"].as_u64().unwrap();
    let (ok, r) = crate::tlog::aics_proves(&bin, &app, entry, index).await;
    assert!(ok, "{r}");
    // A tombstone the log never held is not proven there.
    let changed = entry.replace("unpublished", "malware");
    let (ok, _) = crate::tlog::aics_proves(&bin, &app, &changed, index).await;
    assert!(!ok, "a changed tombstone must not verify");

    // The operator's verb, as run beside the serving hub: `ofc-hub admin takedown`.
    let (s, b) = app
        .publish(
            &u.token,
            &u.key,
            &remote_manifest("alice/code", "1.0.1"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let takedown = |target: &str, reason: &str| {
        app.command()
            .args(["admin", "takedown", target, "--reason", reason])
            .output()
            .unwrap()
    };
    let out = takedown("alice/code@1.0.1", "because");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown takedown reason class `because`"),
        "{stderr}"
    );
    let out = takedown("alice/code", "legal");
    assert_eq!(out.status.code(), Some(1), "no version given");
    let out = takedown("alice/code@1.0.1", "legal");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("took down alice/code@1.0.1 (legal)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (s, b) = app.get("/api/v1/agents/alice/code/versions/1.0.1").await;
    assert_eq!(s, 410, "{b}");
    assert!(b["message"].as_str().unwrap().contains("`legal`"), "{b}");
    assert_problem_free(&app.store().log_verify().await.unwrap());
    app.stop().await;
}
