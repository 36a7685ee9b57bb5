//! The OFC registry API of seed 000 (`POST/GET/PATCH/DELETE /registry/agents…`) over HTTP, on
//! SQLite and PostgreSQL: the whole register → get → patch → delete flow, the view of published
//! (signed) agents through the same endpoints, and every refusal the module emits with its exact
//! status and `code` (and proof that a refused request stored nothing).

mod common;

use common::{Backend, TestApp, bundle_manifest, remote_manifest};
use hub_server::auth::Scope;
use index_schema::manifest::Manifest;
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

const REGISTRY_HOST: &str = "registry.test.example";

async fn start(backend: Backend) -> TestApp {
    TestApp::start_with(backend, |c| c.registry_host = REGISTRY_HOST.into()).await
}

fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

/// The body of the seed's registration example.
fn registration(id: &str) -> Value {
    json!({
        "id": id,
        "endpoint": "https://code-agent.example.com/ofc",
        "public_key": "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----",
        "metadata": {
            "name": "Code Assistant",
            "tagline": "Send me anything that needs code!",
            "description": "Expert programmer. Writes scripts, runs analysis...",
            "capabilities": ["bash", "python", "sql", "visualization"],
            "examples": ["Write a script to...", "Debug this function..."],
            "pricing": {"model": "free"}
        }
    })
}

/// The actions of the audit log for `target`, oldest first.
async fn audit_actions(app: &TestApp, admin_token: &str, target: &str) -> Vec<(String, String)> {
    let (s, log) = app
        .call(
            Method::GET,
            &format!("/api/v1/audit?target={target}&limit=1000"),
            Some(admin_token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{log}");
    let mut out: Vec<(String, String)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["user_name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    out.reverse();
    out
}

async fn outbox_kinds(app: &TestApp) -> Vec<(String, String)> {
    let (s, o) = app
        .call(Method::GET, "/api/v1/outbox?limit=1000", None, None)
        .await;
    assert_eq!(s, 200, "{o}");
    o["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["agent"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn register_get_patch_delete(#[case] backend: Backend) {
    let app = start(backend).await;
    let alice = app.user.clone();
    let admin = app.new_user("root-admin", true).await;

    // Register (seed 000 `POST /registry/agents`).
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&alice.token),
            Some(registration("@code")),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    assert_eq!(r["agent_id"], "@code");
    assert_eq!(r["status"], "active");
    assert_eq!(r["registry"], REGISTRY_HOST);
    let agent_token = r["agent_token"].as_str().unwrap().to_string();
    assert!(agent_token.starts_with("ofc_agent_"), "{agent_token}");
    assert!(agent_token.len() > "ofc_agent_".len() + 30, "{agent_token}");
    assert_eq!(
        r.as_object().unwrap().len(),
        4,
        "exactly the seed's fields: {r}"
    );

    // The agent token proves the agent's identity to floors; it is no hub API token.
    let (s, e) = app
        .call(Method::GET, "/api/v1/me", Some(&agent_token), None)
        .await;
    assert_eq!((s, code(&e)), (401, "invalid_token"), "{e}");

    // Get (public), by `@code`, `code` and any ASCII case.
    let expected = json!({
        "id": "@code",
        "endpoint": "https://code-agent.example.com/ofc",
        "owner": "alice",
        "status": "active",
        "metadata": {
            "name": "Code Assistant",
            "tagline": "Send me anything that needs code!",
            "description": "Expert programmer. Writes scripts, runs analysis...",
            "capabilities": ["bash", "python", "sql", "visualization"],
            "examples": ["Write a script to...", "Debug this function..."],
            "pricing": {"model": "free"}
        }
    });
    for id in ["@code", "code", "@Code", "CODE"] {
        let (s, a) = app
            .call(Method::GET, &format!("/registry/agents/{id}"), None, None)
            .await;
        assert_eq!(s, 200, "{id}: {a}");
        assert_eq!(a, expected, "{id}");
    }

    // Register the same handle again, in any case: refused, the first one untouched.
    for id in ["@code", "@CODE", "code"] {
        let mut body = registration(id);
        body["endpoint"] = json!("https://other.example.com/ofc");
        let (s, e) = app
            .call(
                Method::POST,
                "/registry/agents",
                Some(&alice.token),
                Some(body),
            )
            .await;
        assert_eq!((s, code(&e)), (409, "agent_exists"), "{id}: {e}");
        assert!(e["message"].as_str().unwrap().contains("alice/code"), "{e}");
    }
    let (_, a) = app
        .call(Method::GET, "/registry/agents/@code", None, None)
        .await;
    assert_eq!(a, expected);

    // Patch (seed 000 `PATCH`): only the fields sent change; an unknown field set to null goes,
    // one set to a value is kept verbatim.
    let (s, a) = app
        .call(
            Method::PATCH,
            "/registry/agents/@code",
            Some(&alice.token),
            Some(json!({"metadata": {
                "tagline": "Updated tagline!",
                "examples": [],
                "pricing": null,
                "homepage": "https://code.example.com"
            }})),
        )
        .await;
    assert_eq!(s, 200, "{a}");
    let mut patched = expected.clone();
    patched["metadata"]["tagline"] = json!("Updated tagline!");
    patched["metadata"]["examples"] = json!([]);
    patched["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("pricing");
    patched["metadata"]["homepage"] = json!("https://code.example.com");
    assert_eq!(a, patched, "the PATCH answer is the agent now");
    let (s, a) = app
        .call(Method::GET, "/registry/agents/code", None, None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(a, patched, "the patch was stored");
    // An empty patch changes nothing.
    let (s, a) = app
        .call(
            Method::PATCH,
            "/registry/agents/code",
            Some(&alice.token),
            Some(json!({})),
        )
        .await;
    assert_eq!((s, &a), (200, &patched));

    // Delete (seed 000 `DELETE`), then it is gone for every verb.
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/@code",
            Some(&alice.token),
            None,
        )
        .await;
    assert_eq!((s, &e), (204, &Value::Null));
    let (s, e) = app
        .call(Method::GET, "/registry/agents/@code", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    let (s, e) = app
        .call(
            Method::PATCH,
            "/registry/agents/@code",
            Some(&alice.token),
            Some(json!({"metadata": {"tagline": "x"}})),
        )
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/@code",
            Some(&alice.token),
            None,
        )
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    let (s, e) = app
        .call(Method::GET, "/api/v1/agents/alice/code", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");

    // The handle is free again; a new registration gets a new agent token.
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&alice.token),
            Some(registration("code")),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    assert_eq!(r["agent_id"], "@code");
    assert_ne!(r["agent_token"], agent_token);

    // Every write is audited with who made it, and went to the outbox for search and mirrors.
    let who = |a: &str| (a.to_string(), "alice".to_string());
    assert_eq!(
        audit_actions(&app, &admin.token, "alice/code").await,
        vec![
            who("registry.register"),
            who("registry.update"),
            who("registry.update"),
            who("agent.delete"),
            who("registry.register"),
        ]
    );
    let entry = |k: &str| (k.to_string(), "alice/code".to_string());
    assert_eq!(
        outbox_kinds(&app).await,
        vec![
            entry("registry_update"),
            entry("registry_update"),
            entry("registry_update"),
            entry("delete_agent"),
            entry("registry_update"),
        ]
    );
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn owner_registers_for_another_namespace_and_members_manage_it(#[case] backend: Backend) {
    let app = start(backend).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    hub_server::admin::set_member(app.store(), "alice", "bob", "maintainer")
        .await
        .unwrap();
    // Bob registers into alice's namespace as its maintainer, naming the owner explicitly
    // (seed 000's `owner`), in any case.
    let mut body = registration("@helper");
    body["owner"] = json!("Alice");
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&bob.token),
            Some(body),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    let (s, a) = app
        .call(Method::GET, "/registry/agents/@helper", None, None)
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["owner"], "alice");
    let (s, a) = app
        .call(Method::GET, "/api/v1/agents/alice/helper", None, None)
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["handle"], "@helper");
    assert_eq!(a["latest"], Value::Null);
    assert_eq!(a["versions"], json!([]));
    // Alice (owner) patches it, bob (maintainer, has `yank`) deletes it.
    let (s, a) = app
        .call(
            Method::PATCH,
            "/registry/agents/helper",
            Some(&alice.token),
            Some(json!({"metadata": {"name": "Helper"}})),
        )
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["metadata"]["name"], "Helper");
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/helper",
            Some(&bob.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{e}");
    app.stop().await;
}

/// A `remote` manifest with the floor handle `id` and one capability.
fn published(name: &str, version: &str, id: &str) -> Manifest {
    let mut v = serde_json::to_value(remote_manifest(name, version)).unwrap();
    v["id"] = json!(id);
    v["capabilities"] = json!([{
        "name": "run_python",
        "description": "Runs Python",
        "inputSchema": {},
        "outputSchema": {}
    }]);
    Manifest::from_value(&v).unwrap()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn published_agents_show_through_the_registry_and_change_only_by_publishing(
    #[case] backend: Backend,
) {
    let app = start(backend).await;
    let u = app.user.clone();
    let admin = app.new_user("root-admin", true).await;
    let m = published("alice/code", "1.0.0", "@code");
    assert_eq!(app.publish(&u.token, &u.key, &m, None).await.0, 201);
    let m2 = published("alice/code", "1.1.0", "@code");
    assert_eq!(app.publish(&u.token, &u.key, &m2, None).await.0, 201);

    // GET shows the latest manifest: endpoint of the remote source, metadata from it.
    let (s, a) = app
        .call(Method::GET, "/registry/agents/@code", None, None)
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(
        a,
        json!({
            "id": "@code",
            "endpoint": "https://code-agent.example.com/ofc",
            "owner": "alice",
            "status": "active",
            "metadata": {
                "name": "Code Assistant",
                "tagline": "Send me anything that needs code!",
                "description": "Writes scripts.",
                "capabilities": ["run_python"],
                "examples": ["Write a script"]
            }
        })
    );

    // A signed agent changes only by publishing.
    let (s, e) = app
        .call(
            Method::PATCH,
            "/registry/agents/@code",
            Some(&u.token),
            Some(json!({"metadata": {"tagline": "hijacked"}})),
        )
        .await;
    assert_eq!((s, code(&e)), (409, "signed_agent"), "{e}");
    assert!(e["message"].as_str().unwrap().contains("alice/code"), "{e}");
    // Its name is taken: a registration of the same handle in the same namespace is refused.
    let (s, e) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&u.token),
            Some(registration("@code")),
        )
        .await;
    assert_eq!((s, code(&e)), (409, "agent_exists"), "{e}");
    // Removing a published agent is for hub administrators only.
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/@code",
            Some(&u.token),
            None,
        )
        .await;
    assert_eq!((s, code(&e)), (403, "admin_only"), "{e}");
    let (_, a) = app
        .call(Method::GET, "/registry/agents/@code", None, None)
        .await;
    assert_eq!(
        a["metadata"]["tagline"],
        "Send me anything that needs code!"
    );

    // A bundle agent has no endpoint.
    let bytes = b"bundle bytes".to_vec();
    let bm = bundle_manifest("alice/analyst", "1.0.0", &bytes);
    assert_eq!(
        app.publish(&u.token, &u.key, &bm, Some(&bytes)).await.0,
        201
    );
    let (s, a) = app
        .call(Method::GET, "/registry/agents/@data", None, None)
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["endpoint"], "");
    assert_eq!(a["metadata"]["name"], "Data Analyst");
    // With every version yanked, nothing is installable: the registry does not show it.
    let (s, _) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/analyst/versions/1.0.0/yank",
            Some(&u.token),
            Some(json!({"reason": "broken"})),
        )
        .await;
    assert_eq!(s, 204);
    let (s, e) = app
        .call(Method::GET, "/registry/agents/@data", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("alice/analyst"),
        "{e}"
    );

    // A registration is not a published agent: publishing onto its name is refused.
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&u.token),
            Some(registration("@helper")),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    let (s, e) = app
        .publish(
            &u.token,
            &u.key,
            &published("alice/helper", "1.0.0", "@helper"),
            None,
        )
        .await;
    assert_eq!((s, code(&e)), (409, "registry_entry"), "{e}");

    // A handle a published agent uses cannot be registered, not even by its own namespace: a
    // registration would shadow the published agent in the registry.
    let (s, _) = app
        .publish(
            &u.token,
            &u.key,
            &published("alice/writer", "1.0.0", "@scribe"),
            None,
        )
        .await;
    assert_eq!(s, 201);
    for id in ["@scribe", "@Scribe", "SCRIBE"] {
        let mut body = registration(id);
        body["endpoint"] = json!("https://scribe.example.com/ofc");
        let (s, e) = app
            .call(Method::POST, "/registry/agents", Some(&u.token), Some(body))
            .await;
        assert_eq!((s, code(&e)), (409, "agent_exists"), "{id}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains("alice/writer"),
            "{e}"
        );
    }
    let (s, a) = app
        .call(Method::GET, "/registry/agents/@scribe", None, None)
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["metadata"]["capabilities"], json!(["run_python"]), "{a}");
    let (s, e) = app
        .call(Method::GET, "/api/v1/agents/alice/scribe", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");

    // An agent published under a registration's handle later does not shadow it: the
    // registration is shown and is what PATCH changes.
    let (s, _) = app
        .publish(
            &u.token,
            &u.key,
            &published("alice/helper-two", "1.0.0", "@helper"),
            None,
        )
        .await;
    assert_eq!(s, 201);
    let (s, a) = app
        .call(
            Method::PATCH,
            "/registry/agents/@helper",
            Some(&u.token),
            Some(json!({"metadata": {"tagline": "registered"}})),
        )
        .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["metadata"]["tagline"], "registered");
    assert_eq!(a["metadata"]["pricing"], json!({"model": "free"}), "{a}");

    // An administrator removes a published agent: gone from both APIs, versions tombstoned.
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/@code",
            Some(&admin.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{e}");
    let (s, e) = app
        .call(Method::GET, "/registry/agents/@code", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    let (s, e) = app
        .call(Method::GET, "/api/v1/agents/alice/code", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    let (s, e) = app.publish(&u.token, &u.key, &m, None).await;
    assert_eq!((s, code(&e)), (409, "version_deleted"), "{e}");
    assert_eq!(
        audit_actions(&app, &admin.token, "alice/code").await,
        vec![
            ("version.publish".into(), "alice".into()),
            ("version.publish".into(), "alice".into()),
            ("agent.delete".into(), "root-admin".into()),
        ]
    );
    app.stop().await;
}

/// The registration of `@new` with `f` applied.
fn with(f: impl FnOnce(&mut Value)) -> Value {
    let mut b = registration("@new");
    f(&mut b);
    b
}

/// One request of the refusal table.
struct Case {
    what: &'static str,
    method: Method,
    path: String,
    token: Option<String>,
    body: Option<Value>,
    status: u16,
    code: &'static str,
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn every_registry_refusal_has_its_status_and_code(#[case] backend: Backend) {
    let app = start(backend).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    let carol = app.new_user("carol", false).await;
    hub_server::admin::set_member(app.store(), "alice", "carol", "publisher")
        .await
        .unwrap();
    let admin = app.new_user("root-admin", true).await;
    // What the refusals may not touch: one registration and one published agent of alice.
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&alice.token),
            Some(registration("@code")),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    let (s, _) = app
        .publish(
            &alice.token,
            &alice.key,
            &published("alice/signed", "1.0.0", "@signed"),
            None,
        )
        .await;
    assert_eq!(s, 201);

    let all: Vec<Scope> = Scope::ALL
        .into_iter()
        .filter(|s| *s != Scope::Admin)
        .collect();
    let without = |s: Scope| all.iter().copied().filter(|x| *x != s).collect::<Vec<_>>();
    let t_no_new = app
        .token("alice", &without(Scope::PublishNew), &["*"], None)
        .await;
    let t_no_update = app
        .token("alice", &without(Scope::PublishUpdate), &["*"], None)
        .await;
    let t_no_yank = app
        .token("alice", &without(Scope::Yank), &["*"], None)
        .await;
    let t_bob_only = app.token("alice", &all, &["bob"], None).await;
    let revoked = app.token("alice", &all, &["*"], None).await;
    let (s, me) = app
        .call(Method::GET, "/api/v1/me", Some(&revoked), None)
        .await;
    assert_eq!(s, 200);
    let (s, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/tokens/{}", me["token"]["id"]),
            Some(&revoked),
            None,
        )
        .await;
    assert_eq!(s, 204);

    let long_handle = format!("@{}", "h".repeat(200));
    let big_text = "x".repeat(64 * 1024);
    let t = |s: &str| Some(s.to_string());
    let a = alice.token.as_str();
    let post = |what, token: Option<String>, body: Value, status, code| Case {
        what,
        method: Method::POST,
        path: "/registry/agents".into(),
        token,
        body: Some(body),
        status,
        code,
    };
    let on = |what, method: Method, path: &str, token: Option<String>, status, code| {
        let body = (method == Method::PATCH).then(|| json!({"metadata": {"tagline": "changed"}}));
        Case {
            what,
            method,
            path: path.into(),
            token,
            body,
            status,
            code,
        }
    };
    let cases = vec![
        // --- authentication ---
        post(
            "register without a token",
            None,
            registration("@new"),
            401,
            "unauthenticated",
        ),
        post(
            "register with a wrong token",
            t("ofc_not-a-real-token"),
            registration("@new"),
            401,
            "invalid_token",
        ),
        post(
            "register with a revoked token",
            t(&revoked),
            registration("@new"),
            401,
            "token_revoked",
        ),
        on(
            "patch without a token",
            Method::PATCH,
            "/registry/agents/@code",
            None,
            401,
            "unauthenticated",
        ),
        on(
            "patch with a wrong token",
            Method::PATCH,
            "/registry/agents/@code",
            t("ofc_not-a-real-token"),
            401,
            "invalid_token",
        ),
        on(
            "delete without a token",
            Method::DELETE,
            "/registry/agents/@code",
            None,
            401,
            "unauthenticated",
        ),
        on(
            "delete with a wrong token",
            Method::DELETE,
            "/registry/agents/@code",
            t("ofc_not-a-real-token"),
            401,
            "invalid_token",
        ),
        on(
            "delete with the agent token",
            Method::DELETE,
            "/registry/agents/@code",
            t(r["agent_token"].as_str().unwrap()),
            401,
            "invalid_token",
        ),
        // --- authorization ---
        post(
            "register without publish-new",
            t(&t_no_new),
            registration("@new"),
            403,
            "forbidden_scope",
        ),
        post(
            "register with a token for another namespace",
            t(&t_bob_only),
            registration("@new"),
            403,
            "forbidden_namespace",
        ),
        post(
            "register into a namespace one is not a member of",
            t(&bob.token),
            with(|b| b["owner"] = json!("alice")),
            403,
            "not_member",
        ),
        post(
            "register as publisher role",
            t(&carol.token),
            with(|b| b["owner"] = json!("alice")),
            403,
            "forbidden_role",
        ),
        on(
            "patch without publish-update",
            Method::PATCH,
            "/registry/agents/@code",
            t(&t_no_update),
            403,
            "forbidden_scope",
        ),
        on(
            "patch by a non-member",
            Method::PATCH,
            "/registry/agents/@code",
            t(&bob.token),
            403,
            "not_member",
        ),
        on(
            "patch with a token for another namespace",
            Method::PATCH,
            "/registry/agents/@code",
            t(&t_bob_only),
            403,
            "forbidden_namespace",
        ),
        on(
            "delete without yank",
            Method::DELETE,
            "/registry/agents/@code",
            t(&t_no_yank),
            403,
            "forbidden_scope",
        ),
        on(
            "delete by a non-member",
            Method::DELETE,
            "/registry/agents/@code",
            t(&bob.token),
            403,
            "not_member",
        ),
        on(
            "delete by publisher role",
            Method::DELETE,
            "/registry/agents/@code",
            t(&carol.token),
            403,
            "forbidden_role",
        ),
        on(
            "delete a signed agent by its owner",
            Method::DELETE,
            "/registry/agents/@signed",
            t(a),
            403,
            "admin_only",
        ),
        on(
            "patch a signed agent",
            Method::PATCH,
            "/registry/agents/@signed",
            t(a),
            409,
            "signed_agent",
        ),
        // --- handles ---
        post(
            "register an empty handle",
            t(a),
            with(|b| b["id"] = json!("@")),
            400,
            "invalid_handle",
        ),
        post(
            "register a handle with a space",
            t(a),
            with(|b| b["id"] = json!("@my agent")),
            400,
            "invalid_handle",
        ),
        post(
            "register a handle with a slash",
            t(a),
            with(|b| b["id"] = json!("@alice/code")),
            400,
            "invalid_handle",
        ),
        post(
            "register a handle with a bad first character",
            t(a),
            with(|b| b["id"] = json!("@-code")),
            400,
            "invalid_handle",
        ),
        post(
            "register a handle with a bad character",
            t(a),
            with(|b| b["id"] = json!("@co.de")),
            400,
            "invalid_handle",
        ),
        post(
            "register a too long handle",
            t(a),
            with(|b| b["id"] = json!(long_handle)),
            400,
            "invalid_handle",
        ),
        post(
            "register @user (reserved)",
            t(a),
            with(|b| b["id"] = json!("@user")),
            400,
            "invalid_handle",
        ),
        post(
            "register @floor-manager (reserved)",
            t(a),
            with(|b| b["id"] = json!("@Floor-Manager")),
            400,
            "invalid_handle",
        ),
        on(
            "get an invalid handle",
            Method::GET,
            "/registry/agents/@bad!",
            None,
            400,
            "invalid_handle",
        ),
        on(
            "get an empty handle",
            Method::GET,
            "/registry/agents/@",
            None,
            400,
            "invalid_handle",
        ),
        on(
            "patch an invalid handle",
            Method::PATCH,
            "/registry/agents/-x",
            t(a),
            400,
            "invalid_handle",
        ),
        on(
            "delete an invalid handle",
            Method::DELETE,
            "/registry/agents/@a..b",
            t(a),
            400,
            "invalid_handle",
        ),
        on(
            "get an unknown handle",
            Method::GET,
            "/registry/agents/@nobody-has-this",
            None,
            404,
            "agent_not_found",
        ),
        on(
            "get the reserved @user",
            Method::GET,
            "/registry/agents/@user",
            None,
            404,
            "agent_not_found",
        ),
        on(
            "patch an unknown handle",
            Method::PATCH,
            "/registry/agents/nobody-has-this",
            t(a),
            404,
            "agent_not_found",
        ),
        on(
            "delete an unknown handle",
            Method::DELETE,
            "/registry/agents/@nobody-has-this",
            t(a),
            404,
            "agent_not_found",
        ),
        // --- endpoint ---
        post(
            "plain http to a public host",
            t(a),
            with(|b| b["endpoint"] = json!("http://code-agent.example.com/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "not a URL",
            t(a),
            with(|b| b["endpoint"] = json!("code-agent.example.com/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "another scheme",
            t(a),
            with(|b| b["endpoint"] = json!("ftp://code-agent.example.com/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "empty endpoint",
            t(a),
            with(|b| b["endpoint"] = json!("")),
            400,
            "invalid_endpoint",
        ),
        post(
            "endpoint with a space",
            t(a),
            with(|b| b["endpoint"] = json!("https://code-agent.example.com/o fc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "endpoint with a newline",
            t(a),
            with(|b| b["endpoint"] = json!("https://code-agent.example.com/ofc\nX: y")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to a host that only starts with localhost",
            t(a),
            with(|b| b["endpoint"] = json!("http://localhost.attacker.example/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to a host whose name starts with localhost",
            t(a),
            with(|b| b["endpoint"] = json!("http://localhostevil.com")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to a host that only starts with 127.0.0.1",
            t(a),
            with(|b| b["endpoint"] = json!("http://127.0.0.1.nip.io.attacker.example/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to localhost as credentials before a public host",
            t(a),
            with(|b| b["endpoint"] = json!("http://localhost@attacker.example/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to another loopback address",
            t(a),
            with(|b| b["endpoint"] = json!("http://127.0.0.2/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to localhost with a port that is not a number",
            t(a),
            with(|b| b["endpoint"] = json!("http://localhost:abc/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to localhost with a port over 65535",
            t(a),
            with(|b| b["endpoint"] = json!("http://localhost:65536/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "http to [::1] followed by text",
            t(a),
            with(|b| b["endpoint"] = json!("http://[::1]x/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "https without anything after it",
            t(a),
            with(|b| b["endpoint"] = json!("https://")),
            400,
            "invalid_endpoint",
        ),
        post(
            "https without a host",
            t(a),
            with(|b| b["endpoint"] = json!("https:///ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "https with a port and no host",
            t(a),
            with(|b| b["endpoint"] = json!("https://:443/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "https with credentials",
            t(a),
            with(|b| b["endpoint"] = json!("https://user:secret@code-agent.example.com/ofc")),
            400,
            "invalid_endpoint",
        ),
        post(
            "endpoint of 2049 characters",
            t(a),
            with(|b| b["endpoint"] = json!(format!("https://e.example/{}", "p".repeat(2049 - 18)))),
            400,
            "invalid_endpoint",
        ),
        // --- public key ---
        post(
            "empty public key",
            t(a),
            with(|b| b["public_key"] = json!("")),
            400,
            "invalid_key",
        ),
        post(
            "blank public key",
            t(a),
            with(|b| b["public_key"] = json!(" \n\t ")),
            400,
            "invalid_key",
        ),
        post(
            "public key of 8193 characters",
            t(a),
            with(|b| b["public_key"] = json!("k".repeat(8193))),
            400,
            "invalid_key",
        ),
        // --- owner / name ---
        post(
            "owner that does not exist",
            t(a),
            with(|b| b["owner"] = json!("nobody")),
            404,
            "namespace_not_found",
        ),
        post(
            "owner that is not a valid namespace name",
            t(a),
            with(|b| b["owner"] = json!("no body")),
            400,
            "invalid_name",
        ),
        post(
            "owner that is a reserved name",
            t(a),
            with(|b| b["owner"] = json!("admin")),
            400,
            "invalid_name",
        ),
        post(
            "handle that is a reserved agent name",
            t(a),
            with(|b| b["id"] = json!("@con")),
            400,
            "invalid_name",
        ),
        // --- metadata ---
        post(
            "metadata over 64 KiB",
            t(a),
            with(|b| b["metadata"] = json!({ "description": big_text.as_str() })),
            413,
            "metadata_too_large",
        ),
        Case {
            what: "patch that makes metadata over 64 KiB",
            method: Method::PATCH,
            path: "/registry/agents/@code".into(),
            token: t(a),
            body: Some(json!({"metadata": {"extra": big_text.as_str()}})),
            status: 413,
            code: "metadata_too_large",
        },
        // --- conflicts ---
        post(
            "register an existing handle",
            t(a),
            registration("@code"),
            409,
            "agent_exists",
        ),
        post(
            "register the handle of a published agent",
            t(a),
            with(|b| b["id"] = json!("@signed")),
            409,
            "agent_exists",
        ),
        // --- bodies the framework refuses, still JSON ---
        post(
            "register without an endpoint",
            t(a),
            with(|b| {
                b.as_object_mut().unwrap().remove("endpoint");
            }),
            422,
            "invalid_body",
        ),
        post(
            "register with a wrongly typed metadata field",
            t(a),
            with(|b| b["metadata"]["capabilities"] = json!("python")),
            422,
            "invalid_body",
        ),
        Case {
            what: "patch with a wrongly typed metadata field",
            method: Method::PATCH,
            path: "/registry/agents/@code".into(),
            token: t(a),
            body: Some(json!({"metadata": {"tagline": 5}})),
            status: 422,
            code: "invalid_body",
        },
    ];
    assert!(cases.len() >= 50, "{}", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let (s, e) = app
            .call(
                c.method.clone(),
                &c.path,
                c.token.as_deref(),
                c.body.clone(),
            )
            .await;
        if (s, code(&e)) != (c.status, c.code) {
            failures.push(format!(
                "{}: expected {} {:?}, got {s} {e}",
                c.what, c.status, c.code
            ));
        } else if e["message"].as_str().is_none_or(|m| m.is_empty()) {
            failures.push(format!("{}: no message: {e}", c.what));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );

    // A JSON syntax error is a 400 with a JSON body too.
    let resp = app
        .client
        .post(app.url("/registry/agents"))
        .bearer_auth(&alice.token)
        .header("content-type", "application/json")
        .body("{\"id\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_eq!(code(&e), "bad_request", "{e}");

    // Nothing refused was stored or changed: the registration is as registered, the signed
    // agent as published, no other agent exists, and the only writes are the two set-ups.
    let (_, c) = app
        .call(Method::GET, "/registry/agents/@code", None, None)
        .await;
    assert_eq!(c["metadata"], registration("@code")["metadata"]);
    assert_eq!(c["endpoint"], "https://code-agent.example.com/ofc");
    let (_, sgn) = app
        .call(Method::GET, "/registry/agents/@signed", None, None)
        .await;
    assert_eq!(
        sgn["metadata"]["tagline"],
        "Send me anything that needs code!"
    );
    let (_, l) = app.call(Method::GET, "/api/v1/agents", None, None).await;
    let mut names: Vec<&str> = l["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["alice/code", "alice/signed"], "{l}");
    let (_, log) = app
        .call(
            Method::GET,
            "/api/v1/audit?target=alice/&limit=1000",
            Some(&admin.token),
            None,
        )
        .await;
    let actions: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        vec!["version.publish", "registry.register"],
        "{log}"
    );
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn registry_limits_are_inclusive(#[case] backend: Backend) {
    let app = start(backend).await;
    let a = app.user.token.clone();
    // Metadata of exactly 64 KiB of JSON: `{"description":"…"}` is 18 bytes plus the text.
    let exact = json!({ "description": "d".repeat(64 * 1024 - 18) });
    assert_eq!(serde_json::to_string(&exact).unwrap().len(), 64 * 1024);
    let mut body = registration("@full");
    body["metadata"] = exact.clone();
    // A public key of exactly 8192 characters, an endpoint of exactly 2048.
    body["public_key"] = json!("k".repeat(8192));
    let endpoint = format!("https://e.example/{}", "p".repeat(2048 - 18));
    assert_eq!(endpoint.len(), 2048);
    body["endpoint"] = json!(endpoint);
    let (s, r) = app
        .call(Method::POST, "/registry/agents", Some(&a), Some(body))
        .await;
    assert_eq!(s, 201, "{r}");
    let (s, g) = app
        .call(Method::GET, "/registry/agents/@full", None, None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(g["metadata"], exact);
    assert_eq!(g["endpoint"], endpoint);
    // One more byte through PATCH is refused and leaves the stored metadata alone.
    let (s, e) = app
        .call(
            Method::PATCH,
            "/registry/agents/@full",
            Some(&a),
            Some(json!({"metadata": {"description": "d".repeat(64 * 1024 - 17)}})),
        )
        .await;
    assert_eq!((s, code(&e)), (413, "metadata_too_large"), "{e}");
    let (_, g) = app
        .call(Method::GET, "/registry/agents/@full", None, None)
        .await;
    assert_eq!(g["metadata"], exact);
    // http:// is allowed for local development endpoints only: host exactly `localhost`,
    // `127.0.0.1` or `[::1]`, any port.
    for (id, endpoint) in [
        ("@local", "http://localhost:8080/ofc"),
        ("@loop", "http://127.0.0.1:9000/ofc"),
        ("@local-port", "http://localhost:8080/x"),
        ("@local-upper", "http://LOCALHOST:8080/x"),
        ("@loop-no-port", "http://127.0.0.1/x"),
        ("@loop-six", "http://[::1]:9/x"),
        ("@loop-six-no-port", "http://[::1]/x"),
        ("@secure-port", "https://code-agent.example.com:8443/ofc"),
    ] {
        let mut body = registration(id);
        body["endpoint"] = json!(endpoint);
        let (s, r) = app
            .call(Method::POST, "/registry/agents", Some(&a), Some(body))
            .await;
        assert_eq!(s, 201, "{endpoint}: {r}");
        let (_, g) = app
            .call(Method::GET, &format!("/registry/agents/{id}"), None, None)
            .await;
        assert_eq!(g["endpoint"], endpoint);
    }
    app.stop().await;
}

/// The registry entry `@handle` shows: its owner and whether it is a registration (a published
/// agent's metadata has no `pricing`, the registration body's has).
async fn shown(app: &TestApp, id: &str) -> (String, bool) {
    let (s, a) = app
        .call(Method::GET, &format!("/registry/agents/{id}"), None, None)
        .await;
    assert_eq!(s, 200, "{id}: {a}");
    (
        a["owner"].as_str().unwrap().to_string(),
        a["metadata"].get("pricing").is_some(),
    )
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn a_handle_belongs_to_one_namespace(#[case] backend: Backend) {
    let app = start(backend).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    let admin = app.new_user("root-admin", true).await;
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&alice.token),
            Some(registration("@code")),
        )
        .await;
    assert_eq!(s, 201, "{r}");

    // Bob cannot register alice's handle, in any letter case, in his namespace or another he
    // manages.
    let mut bobs = Vec::new();
    for id in ["@code", "code", "@CODE", "@Code", "cOdE"] {
        let mut b = registration(id);
        b["endpoint"] = json!("https://bob.example.com/ofc");
        bobs.push(b);
    }
    let mut explicit = registration("@code");
    explicit["owner"] = json!("Bob");
    bobs.push(explicit);
    for body in bobs {
        let (s, e) = app
            .call(
                Method::POST,
                "/registry/agents",
                Some(&bob.token),
                Some(body.clone()),
            )
            .await;
        assert_eq!((s, code(&e)), (409, "agent_exists"), "{body}: {e}");
        assert!(e["message"].as_str().unwrap().contains("alice/code"), "{e}");
    }
    let (s, e) = app
        .call(Method::GET, "/api/v1/agents/bob/code", None, None)
        .await;
    assert_eq!(
        (s, code(&e)),
        (404, "agent_not_found"),
        "nothing stored: {e}"
    );

    // Alice still manages it; bob cannot.
    assert_eq!(shown(&app, "@code").await, ("alice".into(), true));
    for (method, token, status, want) in [
        (Method::PATCH, &bob.token, 403, "not_member"),
        (Method::DELETE, &bob.token, 403, "not_member"),
        (Method::PATCH, &alice.token, 200, ""),
    ] {
        let body = (method == Method::PATCH).then(|| json!({"metadata": {"tagline": "mine"}}));
        let (s, e) = app
            .call(method.clone(), "/registry/agents/@CODE", Some(token), body)
            .await;
        assert_eq!((s, code(&e)), (status, want), "{method}: {e}");
    }

    // An agent bob publishes later under the handle does not take it over, however recently
    // it was updated.
    for v in ["1.0.0", "1.1.0"] {
        let (s, e) = app
            .publish(
                &bob.token,
                &bob.key,
                &published("bob/coder", v, "@code"),
                None,
            )
            .await;
        assert_eq!(s, 201, "{e}");
    }
    assert_eq!(shown(&app, "@code").await, ("alice".into(), true));
    let (s, a) = app
        .call(
            Method::PATCH,
            "/registry/agents/@code",
            Some(&alice.token),
            Some(json!({"metadata": {"tagline": "still mine"}})),
        )
        .await;
    assert_eq!((s, &a["metadata"]["tagline"]), (200, &json!("still mine")));
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/@code",
            Some(&bob.token),
            None,
        )
        .await;
    assert_eq!((s, code(&e)), (403, "not_member"), "{e}");

    // When alice removes her registration, the handle passes to the agent using it now; a
    // registration of it is then refused, alice's included.
    let (s, e) = app
        .call(
            Method::DELETE,
            "/registry/agents/@code",
            Some(&alice.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{e}");
    assert_eq!(shown(&app, "@code").await, ("bob".into(), false));
    let (s, e) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&alice.token),
            Some(registration("@Code")),
        )
        .await;
    assert_eq!((s, code(&e)), (409, "agent_exists"), "{e}");
    assert!(e["message"].as_str().unwrap().contains("bob/coder"), "{e}");

    // Between published agents, the one that used the handle first keeps it.
    let (s, e) = app
        .publish(
            &alice.token,
            &alice.key,
            &published("alice/sql", "1.0.0", "@sql"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{e}");
    for v in ["1.0.0", "2.0.0"] {
        let (s, e) = app
            .publish(&bob.token, &bob.key, &published("bob/sql", v, "@sql"), None)
            .await;
        assert_eq!(s, 201, "{e}");
    }
    assert_eq!(shown(&app, "@sql").await, ("alice".into(), false));
    let (s, e) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&bob.token),
            Some(registration("@sql")),
        )
        .await;
    assert_eq!((s, code(&e)), (409, "agent_exists"), "{e}");
    assert!(e["message"].as_str().unwrap().contains("alice/sql"), "{e}");

    // None of bob's refused registrations was written.
    let (s, log) = app
        .call(
            Method::GET,
            "/api/v1/audit?target=bob/&limit=1000",
            Some(&admin.token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{log}");
    let actions: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(!actions.contains(&"registry.register"), "{log}");
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn concurrent_registrations_of_one_handle_give_exactly_one_201(#[case] backend: Backend) {
    let app = start(backend).await;
    let mut users = vec![app.user.clone()];
    for n in ["bob", "carol", "dave", "erin", "frank"] {
        users.push(app.new_user(n, false).await);
    }
    for round in 0..8 {
        let id = if round % 2 == 0 {
            format!("@race-{round}")
        } else {
            format!("@RACE-{round}")
        };
        let calls = users.iter().enumerate().map(|(i, u)| {
            // Each namespace sends the handle in its own letter case.
            let id = if i % 2 == 0 {
                id.clone()
            } else {
                id.to_ascii_lowercase()
            };
            let mut body = registration(&id);
            body["endpoint"] = json!(format!("https://{}.example.com/ofc", u.name));
            let app = &app;
            async move {
                let (s, e) = app
                    .call(Method::POST, "/registry/agents", Some(&u.token), Some(body))
                    .await;
                (u.name.clone(), s, e)
            }
        });
        let results = futures::future::join_all(calls).await;
        let winners: Vec<&String> = results
            .iter()
            .filter(|(_, s, _)| *s == 201)
            .map(|(n, _, _)| n)
            .collect();
        assert_eq!(winners.len(), 1, "{id}: {results:?}");
        for (n, s, e) in &results {
            if *s != 201 {
                assert_eq!((*s, code(e)), (409, "agent_exists"), "{id} by {n}: {e}");
            }
        }
        let (s, a) = app
            .call(Method::GET, &format!("/registry/agents/{id}"), None, None)
            .await;
        assert_eq!(s, 200, "{a}");
        assert_eq!(a["owner"], json!(winners[0]), "{id}");
        assert_eq!(
            a["endpoint"],
            json!(format!("https://{}.example.com/ofc", winners[0]))
        );
    }
    app.stop().await;
}

/// Inserts a row into `agents` directly, past the store's checks: a registration when
/// `endpoint` is set, else a published agent's row. `Err(true)` is a unique violation.
async fn insert_agent_row(
    store: &hub_server::store::Store,
    namespace: &str,
    name: &str,
    handle: &str,
    endpoint: Option<&str>,
    created_at: i64,
) -> Result<(), bool> {
    let ns = store.namespace(namespace).await.unwrap().unwrap().id;
    let sql = "INSERT INTO agents (namespace_id, name, handle, registry_endpoint, \
               registry_metadata, registry_key, created_at, updated_at) \
               VALUES ($1, $2, $3, $4, $5, $6, $7, $7)";
    let meta = endpoint.map(|_| "{}");
    let key = endpoint.map(|_| "key");
    let unique = |e: sqlx::Error| {
        e.as_database_error()
            .is_some_and(|d| d.is_unique_violation())
    };
    hub_server::on_db!(store.db(), |pool| {
        sqlx::query(sql)
            .bind(ns)
            .bind(name)
            .bind(handle)
            .bind(endpoint)
            .bind(meta)
            .bind(key)
            .bind(created_at)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(unique)
    })
}

async fn execute(store: &hub_server::store::Store, sql: &str) {
    hub_server::on_db!(store.db(), |pool| {
        sqlx::query(sql).execute(pool).await.unwrap();
    });
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn the_database_refuses_a_second_registration_of_a_handle(#[case] backend: Backend) {
    let app = start(backend).await;
    app.new_user("bob", false).await;
    let (s, r) = app
        .call(
            Method::POST,
            "/registry/agents",
            Some(&app.user.token),
            Some(registration("@code")),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    let store = app.store();
    // Past the handler's check, the unique index still refuses a second registration of the
    // handle, in any letter case.
    for (i, handle) in ["code", "CODE", "Code"].into_iter().enumerate() {
        let name = format!("bob/code{i}");
        assert_eq!(
            insert_agent_row(store, "bob", &name, handle, Some("https://b/ofc"), 1).await,
            Err(true),
            "{handle}"
        );
    }
    // Published agents' rows are not refused (the registration keeps the handle), nor are
    // registrations of other handles.
    insert_agent_row(store, "bob", "bob/coder", "code", None, 1)
        .await
        .unwrap();
    insert_agent_row(store, "bob", "bob/other", "other", Some("https://b/ofc"), 1)
        .await
        .unwrap();
    assert_eq!(shown(&app, "@code").await, ("alice".into(), true));
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn migration_0011_keeps_the_oldest_registration_of_a_shared_handle(#[case] backend: Backend) {
    let (store, _dir, _pg) = common::fresh_store(backend).await;
    for n in ["alice", "bob", "carol", "dave"] {
        hub_server::admin::create_user(&store, n, None, false, false)
            .await
            .unwrap();
    }
    // A database as it was before migration 0011, with registrations that took over handles
    // (possible then): alice registered `code` first, bob and carol later (carol at the same
    // millisecond as bob, in upper case); dave's published agent is older than all of them.
    execute(&store, "DROP INDEX agents_registry_handle").await;
    execute(&store, "DROP INDEX agents_handle_lower").await;
    execute(&store, "DELETE FROM _sqlx_migrations WHERE version = 11").await;
    let reg = Some("https://x.example/ofc");
    insert_agent_row(&store, "dave", "dave/code", "code", None, 500)
        .await
        .unwrap();
    insert_agent_row(&store, "bob", "bob/code", "code", reg, 2000)
        .await
        .unwrap();
    insert_agent_row(&store, "alice", "alice/code", "code", reg, 1000)
        .await
        .unwrap();
    insert_agent_row(&store, "carol", "carol/code", "CODE", reg, 2000)
        .await
        .unwrap();
    insert_agent_row(&store, "bob", "bob/data", "data", reg, 3000)
        .await
        .unwrap();

    store.db().migrate().await.unwrap();

    let handle = |n: &'static str| {
        let store = store.clone();
        async move { store.agent(n).await.unwrap().unwrap().handle }
    };
    assert_eq!(handle("alice/code").await.as_deref(), Some("code"));
    assert_eq!(handle("bob/code").await, None);
    assert_eq!(handle("carol/code").await, None);
    assert_eq!(handle("dave/code").await.as_deref(), Some("code"));
    assert_eq!(handle("bob/data").await.as_deref(), Some("data"));
    let by_handle: Vec<String> = store
        .agents_by_handle("CODE")
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(by_handle, vec!["alice/code", "dave/code"]);
    for n in ["bob/code", "carol/code"] {
        let log = store.audit_log(Some(n), 10).await.unwrap();
        assert_eq!(log.len(), 1, "{n}: {log:?}");
        assert_eq!(log[0].action, "registry.handle_released");
        assert!(
            log[0].detail.as_deref().unwrap().contains("alice/code"),
            "{log:?}"
        );
    }
    assert!(
        store
            .audit_log(Some("alice/"), 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The index is back.
    assert_eq!(
        insert_agent_row(&store, "bob", "bob/code2", "Code", reg, 4000).await,
        Err(true)
    );
}

/// The race the unique index settles, made deterministic on PostgreSQL (where registrations run
/// in parallel; SQLite has one writer): another registration of the handle is inserted but not
/// yet committed, so the hub's check does not see it and its insert waits on the index; once
/// the other commits, the insert fails and the request is a 409 like any other.
#[tokio::test]
async fn a_registration_that_loses_the_race_at_the_index_is_a_409_on_postgres() {
    let app = start(Backend::Postgres).await;
    app.new_user("bob", false).await;
    let bob_ns = app.store().namespace("bob").await.unwrap().unwrap().id;
    let hub_server::db::Db::Postgres(pool) = app.store().db() else {
        unreachable!()
    };
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO agents (namespace_id, name, handle, registry_endpoint, registry_metadata, \
         registry_key, created_at, updated_at) VALUES ($1, 'bob/held', 'held', 'https://b/ofc', \
         '{}', 'key', 1, 1)",
    )
    .bind(bob_ns)
    .execute(&mut *tx)
    .await
    .unwrap();
    let url = app.url("/registry/agents");
    let (client, token) = (app.client.clone(), app.user.token.clone());
    let post = tokio::spawn(async move {
        let r = client
            .post(url)
            .bearer_auth(token)
            .json(&registration("@HELD"))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!post.is_finished(), "{:?}", post.await);
    tx.commit().await.unwrap();
    let (s, e) = post.await.unwrap();
    assert_eq!((s, code(&e)), (409, "agent_exists"), "{e}");
    assert!(e["message"].as_str().unwrap().contains("concurrent"), "{e}");
    let (s, e) = app
        .call(Method::GET, "/api/v1/agents/alice/held", None, None)
        .await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{e}");
    app.stop().await;
}
