//! Search over HTTP: a publish becomes searchable (bounded wait), `/readyz` reports the lag,
//! yanking hides the version, the registry endpoint answers from the same index, and hostile
//! query strings give results or a 400, never a 5xx.

use std::time::Duration;

use index_schema::manifest::Manifest;
use ofc_test_kit::{Backend, TestHub, remote_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

/// The longest a publish may take to become searchable in these tests (the promise is 1 s).
const BOUND: Duration = Duration::from_secs(5);

fn manifest(name: &str, version: &str, tagline: &str) -> Manifest {
    let mut v = serde_json::to_value(remote_manifest(name, version)).unwrap();
    v["tagline"] = json!(tagline);
    v["description"] = json!(format!("{tagline}. Long form."));
    Manifest::from_value(&v).unwrap()
}

/// Polls `path` until `done` holds for the JSON body; panics after [`BOUND`].
async fn until(app: &TestHub, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let (s, v) = app.get(path).await;
        // `/readyz` is 503 `catching_up` until the index has caught up after the start.
        let catching_up = s == 503 && v["status"] == "catching_up";
        assert!(s == 200 || catching_up, "{path}: {s} {v}");
        if s == 200 && done(&v) {
            return v;
        }
        assert!(
            start.elapsed() < BOUND,
            "{path}: not reached within {BOUND:?}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn names(v: &Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn published_versions_become_searchable_and_yanks_hide_them(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    let (s, v) = app
        .publish(
            &t,
            &k,
            &manifest("alice/weather", "1.0.0", "Forecasts the weather"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = app
        .publish(
            &t,
            &k,
            &manifest("alice/weather", "1.1.0", "Forecasts tomorrow's weather"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{v}");

    let found = until(&app, "/api/v1/search?q=weather", |v| {
        names(v) == ["alice/weather"] && v["hits"][0]["version"] == "1.1.0"
    })
    .await;
    let hit = &found["hits"][0];
    assert_eq!(hit["tagline"], "Forecasts tomorrow's weather");
    assert!(
        hit["highlights"].as_array().is_some_and(|h| !h.is_empty()),
        "no highlights: {hit}"
    );
    let ready = until(&app, "/readyz", |v| v["search_lag"] == 0).await;
    assert_eq!(ready["status"], "ok");
    assert!(ready["search_seq"].as_u64().unwrap() >= 2, "{ready}");
    // No model: said so, and no embedding follower to report.
    assert_eq!(ready["search_model"], false, "{ready}");
    for absent in ["embedding_lag", "embedding_seq", "degraded"] {
        assert!(ready.get(absent).is_none(), "{ready}");
    }
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l == "ofc_hub_search_lag_events{follower=\"keyword\"} 0"),
        "{metrics}"
    );
    assert!(!metrics.contains("follower=\"embedding\""), "{metrics}");

    // The registry view answers from the same index, by handle.
    let (s, v) = app.get("/registry/agents/search?q=weather").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v,
        json!({"results": [{"id": "@code", "tagline": "Forecasts tomorrow's weather"}]})
    );

    // Yanking the latest shows the previous version; yanking both hides the agent.
    for (version, expect) in [("1.1.0", Some("1.0.0")), ("1.0.0", None)] {
        let (s, v) = app
            .call(
                Method::PUT,
                &format!("/api/v1/agents/alice/weather/versions/{version}/yank"),
                Some(&t),
                Some(json!({"reason": "test"})),
            )
            .await;
        assert!(s == 200 || s == 204, "{s} {v}");
        until(&app, "/api/v1/search?q=weather", |v| match expect {
            Some(e) => v["hits"][0]["version"] == e,
            None => names(v).is_empty(),
        })
        .await;
    }
    app.stop().await;
}

#[tokio::test]
async fn bad_parameters_are_a_clear_400_and_hostile_queries_never_a_5xx() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    let (s, v) = app
        .publish(
            &t,
            &k,
            &manifest("alice/parser", "1.0.0", "Parses logs"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{v}");
    until(&app, "/api/v1/search?q=parses", |v| {
        names(v) == ["alice/parser"]
    })
    .await;

    for (query, field) in [
        ("sort=sideways", "sort"),
        ("limit=0", "limit"),
        ("limit=many", "limit"),
        ("cursor=%21%21", "cursor"),
        ("color=blue", "color"),
    ] {
        let (s, v) = app.get(&format!("/api/v1/search?{query}")).await;
        assert_eq!(s, 400, "{query}: {v}");
        assert_eq!(v["code"], "invalid_parameter", "{query}: {v}");
        assert!(
            v["message"].as_str().unwrap().contains(field),
            "{query}: the message should name `{field}`: {v}"
        );
    }

    let long = "a".repeat(10 * 1024);
    let hostile = [
        "\"parses",
        "\"parses logs\"",
        "name:parser",
        "parses:",
        ":",
        "*",
        "pars*",
        "(parses",
        "parses)",
        "[logs",
        "{",
        "a AND OR NOT",
        "-parses",
        "+parses",
        "\\",
        "%",
        "'",
        "~2",
        "parses^10",
        "\u{0}",
        "日本語",
        "🙂",
        long.as_str(),
    ];
    for q in hostile {
        for path in ["/api/v1/search", "/registry/agents/search"] {
            let resp = app
                .client
                .get(app.url(path))
                .query(&[("q", q)])
                .send()
                .await
                .unwrap();
            let s = resp.status().as_u16();
            let body: Value = resp.json().await.unwrap();
            assert!(s == 200 || s == 400, "{path} q={q:.40?}: {s} {body}");
            if s == 400 {
                assert!(
                    body["message"].as_str().is_some_and(|m| m.contains('q')),
                    "{body}"
                );
            }
        }
    }
    // The 10 kB query is refused, naming `q`.
    let (s, v) = app.get(&format!("/api/v1/search?q={long}")).await;
    assert_eq!(s, 400, "{v}");
    app.stop().await;
}

/// Issue 14, point 5: `latest` (the API's and search's) is the version `ofc pull` picks
/// (`index_schema::version::select`): a pre-release never passes a release, and stands in only
/// while no release exists.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn latest_is_a_release_and_a_pre_release_only_when_nothing_else_exists(
    #[case] backend: Backend,
) {
    let app = TestHub::in_process(backend).await;
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    for (name, version) in [
        ("alice/stable", "1.0.0"),
        ("alice/stable", "2.0.0-rc.1"),
        ("alice/early", "0.1.0-alpha.1"),
    ] {
        let m = manifest(name, version, &format!("Zebra tool {version}"));
        let (s, v) = app.publish(&t, &k, &m, None).await;
        assert_eq!(s, 201, "{name}@{version}: {v}");
    }
    let (s, v) = app.get("/api/v1/agents/alice/stable").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["latest"], "1.0.0", "{v}");
    let (_, v) = app.get("/api/v1/agents/alice/early").await;
    assert_eq!(v["latest"], "0.1.0-alpha.1", "{v}");
    let found = until(&app, "/api/v1/search?q=zebra", |v| names(v).len() == 2).await;
    for hit in found["hits"].as_array().unwrap() {
        let want = match hit["name"].as_str().unwrap() {
            "alice/stable" => "1.0.0",
            _ => "0.1.0-alpha.1",
        };
        assert_eq!(hit["version"], want, "{found}");
    }
    app.stop().await;
}

/// The hub reads its synonym file at start (a mistake refuses to start, naming the line),
/// applies it to `/api/v1/search`, and re-reads it when it changes, without reindexing; a
/// query whose words no agent has together answers agents with some of them, after the full
/// matches, saying which words were dropped.
#[tokio::test]
async fn synonyms_reload_without_reindexing_and_fewer_words_are_reported() {
    let files = tempfile::tempdir().unwrap();
    let syn = files.path().join("synonyms.txt");

    // A mistake: the hub does not start, and says where.
    std::fs::write(&syn, "# ok\nchart, plot\nlonely\n").unwrap();
    let cfg = hub_core::config::Config {
        data_dir: files.path().join("data"),
        search_synonyms_file: Some(syn.clone()),
        ..Default::default()
    };
    let e = format!(
        "{:#}",
        hub_server::build_state(cfg.clone()).await.unwrap_err()
    );
    assert!(e.contains(&format!("{}:3:", syn.display())), "{e}");
    assert!(e.contains("two words or more"), "{e}");

    std::fs::write(&syn, "chart, plot\n").unwrap();
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.search_synonyms_file = Some(syn.clone());
    })
    .await;
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    for (name, tagline) in [
        ("alice/plotter", "Draws a plot of your numbers"),
        ("alice/pg", "Tunes postgres servers"),
        ("alice/prices", "Watches prices in shops"),
    ] {
        let (s, v) = app
            .publish(&t, &k, &manifest(name, "1.0.0", tagline), None)
            .await;
        assert_eq!(s, 201, "{v}");
    }
    // "chart" finds the plotter through the file's set.
    until(&app, "/api/v1/search?q=chart", |v| {
        names(v) == ["alice/plotter"]
    })
    .await;
    // Not in the file (it replaces the default set): "database" finds nothing yet.
    let (_, v) = app.get("/api/v1/search?q=database").await;
    assert!(names(&v).is_empty(), "{v}");

    // Edit the file: the running hub picks it up (bounded wait), no reindex.
    std::fs::write(&syn, "chart, plot\ndatabase => postgres\n").unwrap();
    let start = std::time::Instant::now();
    loop {
        let (_, v) = app.get("/api/v1/search?q=database").await;
        if names(&v) == ["alice/pg"] {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "not reloaded: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A broken edit keeps the set in use.
    std::fs::write(&syn, "database => postgres\n,,\n").unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, v) = app.get("/api/v1/search?q=database").await;
    assert_eq!(names(&v), ["alice/pg"], "{v}");

    // Fewer words: nobody watches postgres prices; both halves are found, each saying what
    // it lacks, and the page lists the dropped words.
    let (s, v) = app
        .get("/api/v1/search?q=watches%20postgres%20prices")
        .await;
    assert_eq!(s, 200, "{v}");
    let mut got = names(&v);
    got.sort();
    assert_eq!(got, ["alice/pg", "alice/prices"], "{v}");
    assert_eq!(
        v["dropped_words"],
        json!(["watches", "postgres", "prices"]),
        "{v}"
    );
    for h in v["hits"].as_array().unwrap() {
        assert!(!h["missing_words"].as_array().unwrap().is_empty(), "{h}");
    }
}
