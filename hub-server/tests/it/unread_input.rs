//! What a route would not read is refused, not ignored: a query parameter it does not take is
//! 400 `invalid_parameter` naming it (as `GET /api/v1/search` answers), a body on a route that
//! takes none is 400 `invalid_body`; and nothing changes. A client that sends
//! `…/unpublish?dry_run=true` must not find its version gone.

use ofc_test_kit::{Backend, TestHub, assert_no_failures, assert_status, remote_manifest};
use reqwest::Method;
use serde_json::{Value, json};

const TOOL: &str = "/api/v1/agents/alice/tool";
const V1: &str = "/api/v1/agents/alice/tool/versions/1.0.0";

/// `method path` with `token` and `body`: a 400 with `code` whose message names `word`.
async fn refused(
    app: &TestHub,
    token: &str,
    (method, path, body): (Method, &str, Option<Value>),
    code: &str,
    word: &str,
) -> Option<String> {
    let (s, v) = app.call(method.clone(), path, Some(token), body).await;
    let named = v["message"].as_str().is_some_and(|m| m.contains(word));
    (s != 400 || v["code"] != code || !named)
        .then(|| format!("{method} {path}: expected 400 {code} naming `{word}`, got {s} {v}"))
}

/// A hub where alice has published these versions of `alice/tool`: it, her token and an
/// administrator's.
async fn hub_with_tool(versions: &[&str]) -> (TestHub, String, String) {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let (t, k) = (app.user.token.clone(), app.user.key.clone());
    let admin = app.new_user("root-admin", true).await.token;
    for v in versions {
        let (s, b) = app
            .publish(&t, &k, &remote_manifest("alice/tool", v), None)
            .await;
        assert_eq!(s, 201, "{b}");
    }
    (app, t, admin)
}

#[tokio::test]
async fn a_destructive_route_refuses_a_parameter_or_body_it_would_ignore() {
    let (app, t, admin) = hub_with_tool(&["1.0.0", "1.0.1"]).await;
    let unpublish = format!("{V1}/unpublish");

    let mut failures = Vec::new();
    for (req, code, word) in [
        (
            (Method::POST, format!("{unpublish}?dry_run=true"), None),
            "invalid_parameter",
            "dry_run",
        ),
        (
            (
                Method::POST,
                unpublish.clone(),
                Some(json!({"dry_run": true, "reason": "testing"})),
            ),
            "invalid_body",
            "`dry_run` (and every other field) would be ignored",
        ),
    ] {
        let (m, p, b) = req;
        failures.extend(refused(&app, &t, (m, &p, b), code, word).await);
    }
    failures.extend(
        refused(
            &app,
            &admin,
            (Method::DELETE, &format!("{TOOL}?version=9.9.9"), None),
            "invalid_parameter",
            "version",
        )
        .await,
    );
    failures.extend(
        refused(
            &app,
            &admin,
            (
                Method::DELETE,
                &format!("{V1}?force=true"),
                Some(json!({"why": "x"})),
            ),
            "invalid_parameter",
            "force",
        )
        .await,
    );
    assert_no_failures(&failures, 4);

    // Nothing changed: both versions are there.
    let info = assert_status(app.get(TOOL).await, 200);
    assert_eq!(info["versions"].as_array().unwrap().len(), 2, "{info}");
    assert_status(app.get(V1).await, 200);

    // Without them, the routes still work; an empty JSON object says nothing and is no body.
    let (s, v) = app
        .call(Method::POST, &unpublish, Some(&t), Some(json!({})))
        .await;
    assert_eq!(s, 204, "{v}");
    assert_eq!(app.get(V1).await.0, 410);
    let (s, v) = app.call(Method::DELETE, TOOL, Some(&admin), None).await;
    assert_eq!(s, 204, "{v}");
    assert_eq!(app.get(TOOL).await.0, 404);
    app.stop().await;
}

#[tokio::test]
async fn list_routes_refuse_a_misspelt_parameter_and_keep_their_own() {
    let (app, _, admin) = hub_with_tool(&["1.0.0"]).await;

    let mut failures = Vec::new();
    for (path, word) in [
        ("/api/v1/audit?targt=nonexistent", "targt"),
        ("/api/v1/agents?limt=1", "limt"),
        ("/api/v1/outbox?afterr=5", "afterr"),
        ("/registry/agents/search?limit=1&foo=bar", "limit"),
        ("/registry/agents/search?q=tool&foo=bar", "foo"),
        (
            "/api/v1/agents/alice/tool/versions/1.0.0?log_sise=1",
            "log_sise",
        ),
    ] {
        failures.extend(
            refused(
                &app,
                &admin,
                (Method::GET, path, None),
                "invalid_parameter",
                word,
            )
            .await,
        );
    }
    // A malformed value of a known parameter: the same code (it was the framework's
    // `bad_request`).
    failures.extend(
        refused(
            &app,
            &admin,
            (Method::GET, "/api/v1/agents?limit=many", None),
            "invalid_parameter",
            "limit",
        )
        .await,
    );
    assert_no_failures(&failures, 7);

    // Their own parameters, and an empty query string, still work.
    for path in [
        "/api/v1/audit?target=alice&limit=5",
        "/api/v1/agents?limit=1",
        "/api/v1/agents?updated_since=0",
        "/api/v1/outbox?after=0&limit=5",
        "/api/v1/agents/alice/tool/versions/1.0.0?log_size=1",
        "/api/v1/agents/alice/tool?",
    ] {
        let (s, v) = app.call(Method::GET, path, Some(&admin), None).await;
        assert_eq!(s, 200, "{path}: {v}");
    }
    let audit = assert_status(
        app.call(
            Method::GET,
            "/api/v1/audit?target=nobody",
            Some(&admin),
            None,
        )
        .await,
        200,
    );
    assert_eq!(audit["entries"], json!([]), "the filter is applied");
    app.stop().await;
}

/// Every route of the JSON API and of the registry API that takes no query string refuses one,
/// and every one that takes no body refuses one, before acting.
#[tokio::test]
async fn every_route_refuses_what_it_would_not_read() {
    let (app, t, admin) = hub_with_tool(&["1.0.0"]).await;
    let key = app.user.key.public_key().to_string();

    // Routes that take a body: only the query string is checked here.
    let with_body = [
        (Method::POST, "/api/v1/login"),
        (Method::POST, "/api/v1/tokens"),
        (Method::POST, "/api/v1/namespaces"),
        (Method::PUT, "/api/v1/namespaces/alice/members/bob"),
        (Method::POST, "/api/v1/namespaces/alice/keys"),
        (Method::PUT, "/api/v1/namespaces/alice/domain"),
        (Method::POST, "/api/v1/namespaces/alice/trusted-publishers"),
        (Method::POST, "/api/v1/trusted-publishing/exchange"),
        (Method::PUT, "/api/v1/agents/alice/tool/versions/2.0.0"),
        (Method::PUT, "/api/v1/agents/alice/tool/versions/1.0.0/yank"),
        (
            Method::PUT,
            "/api/v1/agents/alice/tool/versions/1.0.0/deprecation",
        ),
        (Method::POST, "/registry/agents"),
        (Method::PATCH, "/registry/agents/tool"),
    ];
    let key_path = format!("/api/v1/namespaces/alice/keys/{}", app.user.key.key_id());
    let without_body = [
        (Method::GET, "/api/v1/me"),
        (Method::GET, "/api/v1/tokens"),
        (Method::DELETE, "/api/v1/tokens/1"),
        (Method::GET, "/api/v1/namespaces/alice"),
        (Method::DELETE, "/api/v1/namespaces/alice/members/alice"),
        (Method::GET, "/api/v1/namespaces/alice/keys"),
        (Method::DELETE, key_path.as_str()),
        (Method::DELETE, "/api/v1/namespaces/alice/domain"),
        (Method::GET, "/api/v1/namespaces/alice/trusted-publishers"),
        (
            Method::DELETE,
            "/api/v1/namespaces/alice/trusted-publishers/1",
        ),
        (Method::GET, TOOL),
        (Method::DELETE, TOOL),
        (Method::GET, V1),
        (Method::DELETE, V1),
        (
            Method::GET,
            "/api/v1/agents/alice/tool/versions/1.0.0/bundle",
        ),
        (
            Method::DELETE,
            "/api/v1/agents/alice/tool/versions/1.0.0/yank",
        ),
        (
            Method::DELETE,
            "/api/v1/agents/alice/tool/versions/1.0.0/deprecation",
        ),
        (
            Method::POST,
            "/api/v1/agents/alice/tool/versions/1.0.0/unpublish",
        ),
        (Method::GET, "/registry/agents/tool"),
        (Method::DELETE, "/registry/agents/tool"),
    ];
    let mut failures = Vec::new();
    for (m, p) in with_body.iter().chain(&without_body) {
        let path = format!("{p}?unread_param=1");
        failures.extend(
            refused(
                &app,
                &admin,
                (m.clone(), &path, None),
                "invalid_parameter",
                "unread_param",
            )
            .await,
        );
    }
    // The routes with parameters of their own refuse a body too.
    let with_params = [
        "/api/v1/agents",
        "/api/v1/outbox",
        "/api/v1/audit",
        "/api/v1/search",
        "/registry/agents/search",
    ];
    let bodyless = without_body
        .iter()
        .cloned()
        .chain(with_params.map(|p| (Method::GET, p)));
    let mut n = with_body.len() + without_body.len();
    for (m, p) in bodyless {
        n += 1;
        failures.extend(
            refused(
                &app,
                &admin,
                (m, p, Some(json!({"unread": true}))),
                "invalid_body",
                "takes no request body: `unread`",
            )
            .await,
        );
    }
    assert_no_failures(&failures, n);

    // Nothing was done: alice is still a member with her key, the version is live, her
    // token works.
    let ns = assert_status(
        app.call(Method::GET, "/api/v1/namespaces/alice", Some(&t), None)
            .await,
        200,
    );
    assert!(ns.to_string().contains("alice"), "{ns}");
    let keys = assert_status(app.get("/api/v1/namespaces/alice/keys").await, 200);
    assert!(keys.to_string().contains(&key), "{keys}");
    let v = assert_status(app.get(V1).await, 200);
    assert_eq!(v["yanked"], json!(false), "{v}");
    assert_status(
        app.call(Method::GET, "/api/v1/me", Some(&t), None).await,
        200,
    );

    // A body that is not a JSON object is named by its size.
    let r = app
        .client
        .delete(app.url(TOOL))
        .bearer_auth(&admin)
        .body("everything")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["code"], "invalid_body", "{e}");
    assert!(e["message"].as_str().unwrap().contains("10 bytes"), "{e}");
    assert_status(app.get(TOOL).await, 200);
    app.stop().await;
}
