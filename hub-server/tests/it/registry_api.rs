//! The OFC registry API of seed 000 (`POST/GET/PATCH/DELETE /registry/agents…`) over HTTP, on
//! SQLite and PostgreSQL: the whole register → get → patch → delete flow, the view of published
//! (signed) agents through the same endpoints, and every refusal the module emits with its exact
//! status and `code` (and proof that a refused request stored nothing).

use hub_core::auth::Scope;
use index_schema::manifest::Manifest;
use ofc_test_kit::{
    Backend, Case, TestHub, assert_cases, assert_refused, assert_status, bundle_manifest, code,
    remote_manifest, string_pairs, strings,
};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

const REGISTRY_HOST: &str = "registry.test.example";

async fn start(backend: Backend) -> TestHub {
    TestHub::in_process_with(backend, |c| c.registry_host = REGISTRY_HOST.into()).await
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

/// [`registration`] of `id` with another `endpoint`.
fn registration_at(id: &str, endpoint: &str) -> Value {
    let mut b = registration(id);
    b["endpoint"] = json!(endpoint);
    b
}

/// `POST /registry/agents` with `token`.
async fn register(app: &TestHub, token: &str, body: Value) -> (u16, Value) {
    app.call(Method::POST, "/registry/agents", Some(token), Some(body))
        .await
}

/// `GET /registry/agents/{id}` (public).
async fn entry(app: &TestHub, id: &str) -> (u16, Value) {
    app.get(&format!("/registry/agents/{id}")).await
}

/// `PATCH /registry/agents/{id}` with `token`.
async fn patch_entry(app: &TestHub, token: &str, id: &str, body: Value) -> (u16, Value) {
    let path = format!("/registry/agents/{id}");
    app.call(Method::PATCH, &path, Some(token), Some(body))
        .await
}

/// `DELETE /registry/agents/{id}` with `token`.
async fn delete_entry(app: &TestHub, token: &str, id: &str) -> (u16, Value) {
    let path = format!("/registry/agents/{id}");
    app.call(Method::DELETE, &path, Some(token), None).await
}

/// Asserts that the error body `e` has a `message` containing `text`.
#[track_caller]
fn assert_message_has(e: &Value, text: &str) {
    assert!(e["message"].as_str().unwrap().contains(text), "{e}");
}

/// Asserts that `GET /api/v1/agents/{name}` is a 404 `agent_not_found`.
async fn assert_no_agent(app: &TestHub, name: &str) {
    let (s, e) = app.get(&format!("/api/v1/agents/{name}")).await;
    assert_eq!((s, code(&e)), (404, "agent_not_found"), "{name}: {e}");
}

/// The audit log for `target` (an agent, or a prefix such as `alice/`), newest first.
async fn audit_log(app: &TestHub, admin_token: &str, target: &str) -> Value {
    let path = format!("/api/v1/audit?target={target}&limit=1000");
    assert_status(
        app.call(Method::GET, &path, Some(admin_token), None).await,
        200,
    )
}

/// The actions of the audit log for `target`, oldest first.
async fn audit_actions(app: &TestHub, admin_token: &str, target: &str) -> Vec<(String, String)> {
    let log = audit_log(app, admin_token, target).await;
    let mut out = string_pairs(&log["entries"], "action", "user_name");
    out.reverse();
    out
}

async fn outbox_kinds(app: &TestHub) -> Vec<(String, String)> {
    let o = assert_status(app.get("/api/v1/outbox?limit=1000").await, 200);
    string_pairs(&o["entries"], "kind", "agent")
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
    let r = assert_status(
        register(&app, &alice.token, registration("@code")).await,
        201,
    );
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
    assert_refused(
        app.call(Method::GET, "/api/v1/me", Some(&agent_token), None)
            .await,
        401,
        "invalid_token",
    );

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
        let (s, a) = entry(&app, id).await;
        assert_eq!(s, 200, "{id}: {a}");
        assert_eq!(a, expected, "{id}");
    }

    // Register the same handle again, in any case: refused, the first one untouched.
    for id in ["@code", "@CODE", "code"] {
        let body = registration_at(id, "https://other.example.com/ofc");
        let (s, e) = register(&app, &alice.token, body).await;
        assert_eq!((s, code(&e)), (409, "agent_exists"), "{id}: {e}");
        assert_message_has(&e, "alice/code");
    }
    let (_, a) = entry(&app, "@code").await;
    assert_eq!(a, expected);

    // Patch (seed 000 `PATCH`): only the fields sent change; an unknown field set to null goes,
    // one set to a value is kept verbatim.
    let body = json!({"metadata": {
        "tagline": "Updated tagline!",
        "examples": [],
        "pricing": null,
        "homepage": "https://code.example.com"
    }});
    let a = assert_status(patch_entry(&app, &alice.token, "@code", body).await, 200);
    let mut patched = expected.clone();
    patched["metadata"]["tagline"] = json!("Updated tagline!");
    patched["metadata"]["examples"] = json!([]);
    patched["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("pricing");
    patched["metadata"]["homepage"] = json!("https://code.example.com");
    assert_eq!(a, patched, "the PATCH answer is the agent now");
    let a = assert_status(entry(&app, "code").await, 200);
    assert_eq!(a, patched, "the patch was stored");
    // An empty patch changes nothing.
    assert_eq!(
        patch_entry(&app, &alice.token, "code", json!({})).await,
        (200, patched.clone())
    );

    // Delete (seed 000 `DELETE`), then it is gone for every verb.
    assert_eq!(
        delete_entry(&app, &alice.token, "@code").await,
        (204, Value::Null)
    );
    assert_refused(entry(&app, "@code").await, 404, "agent_not_found");
    let tagline = json!({"metadata": {"tagline": "x"}});
    assert_refused(
        patch_entry(&app, &alice.token, "@code", tagline).await,
        404,
        "agent_not_found",
    );
    assert_refused(
        delete_entry(&app, &alice.token, "@code").await,
        404,
        "agent_not_found",
    );
    assert_no_agent(&app, "alice/code").await;

    // The handle is free again; a new registration gets a new agent token.
    let r = assert_status(
        register(&app, &alice.token, registration("code")).await,
        201,
    );
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
    hub_core::admin::set_member(app.store(), "alice", "bob", "maintainer")
        .await
        .unwrap();
    // Bob registers into alice's namespace as its maintainer, naming the owner explicitly
    // (seed 000's `owner`), in any case.
    let mut body = registration("@helper");
    body["owner"] = json!("Alice");
    assert_status(register(&app, &bob.token, body).await, 201);
    let a = assert_status(entry(&app, "@helper").await, 200);
    assert_eq!(a["owner"], "alice");
    let a = assert_status(app.get("/api/v1/agents/alice/helper").await, 200);
    assert_eq!(a["handle"], "@helper");
    assert_eq!(a["latest"], Value::Null);
    assert_eq!(a["versions"], json!([]));
    // Alice (owner) patches it, bob (maintainer, has `yank`) deletes it.
    let name = json!({"metadata": {"name": "Helper"}});
    let a = assert_status(patch_entry(&app, &alice.token, "helper", name).await, 200);
    assert_eq!(a["metadata"]["name"], "Helper");
    assert_status(delete_entry(&app, &bob.token, "helper").await, 204);
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
    assert_status(app.publish_as(&u, &m).await, 201);
    let m2 = published("alice/code", "1.1.0", "@code");
    assert_status(app.publish_as(&u, &m2).await, 201);

    // GET shows the latest manifest: endpoint of the remote source, metadata from it.
    let a = assert_status(entry(&app, "@code").await, 200);
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
    let hijack = json!({"metadata": {"tagline": "hijacked"}});
    let e = assert_refused(
        patch_entry(&app, &u.token, "@code", hijack).await,
        409,
        "signed_agent",
    );
    assert_message_has(&e, "alice/code");
    // Its name is taken: a registration of the same handle in the same namespace is refused.
    assert_refused(
        register(&app, &u.token, registration("@code")).await,
        409,
        "agent_exists",
    );
    // Removing a published agent is for hub administrators only.
    assert_refused(
        delete_entry(&app, &u.token, "@code").await,
        403,
        "admin_only",
    );
    let (_, a) = entry(&app, "@code").await;
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
    let a = assert_status(entry(&app, "@data").await, 200);
    assert_eq!(a["endpoint"], "");
    assert_eq!(a["metadata"]["name"], "Data Analyst");
    // With every version yanked, nothing is installable: the registry does not show it.
    let reason = json!({"reason": "broken"});
    let (s, _) = app.yank(&u.token, "alice/analyst", "1.0.0", reason).await;
    assert_eq!(s, 204);
    let e = assert_refused(entry(&app, "@data").await, 404, "agent_not_found");
    assert_message_has(&e, "alice/analyst");

    // A registration is not a published agent: publishing onto its name is refused.
    assert_status(register(&app, &u.token, registration("@helper")).await, 201);
    let onto = published("alice/helper", "1.0.0", "@helper");
    assert_refused(app.publish_as(&u, &onto).await, 409, "registry_entry");

    // A handle a published agent uses cannot be registered, not even by its own namespace: a
    // registration would shadow the published agent in the registry.
    let writer = published("alice/writer", "1.0.0", "@scribe");
    assert_status(app.publish_as(&u, &writer).await, 201);
    for id in ["@scribe", "@Scribe", "SCRIBE"] {
        let body = registration_at(id, "https://scribe.example.com/ofc");
        let (s, e) = register(&app, &u.token, body).await;
        assert_eq!((s, code(&e)), (409, "agent_exists"), "{id}: {e}");
        assert_message_has(&e, "alice/writer");
    }
    let a = assert_status(entry(&app, "@scribe").await, 200);
    assert_eq!(a["metadata"]["capabilities"], json!(["run_python"]), "{a}");
    assert_no_agent(&app, "alice/scribe").await;

    // An agent published under a registration's handle later does not shadow it: the
    // registration is shown and is what PATCH changes.
    let later = published("alice/helper-two", "1.0.0", "@helper");
    assert_status(app.publish_as(&u, &later).await, 201);
    let tagline = json!({"metadata": {"tagline": "registered"}});
    let a = assert_status(patch_entry(&app, &u.token, "@helper", tagline).await, 200);
    assert_eq!(a["metadata"]["tagline"], "registered");
    assert_eq!(a["metadata"]["pricing"], json!({"model": "free"}), "{a}");

    // An administrator removes a published agent: gone from both APIs, versions tombstoned.
    assert_status(delete_entry(&app, &admin.token, "@code").await, 204);
    assert_refused(entry(&app, "@code").await, 404, "agent_not_found");
    assert_no_agent(&app, "alice/code").await;
    assert_refused(app.publish_as(&u, &m).await, 409, "version_deleted");
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

/// A case of the refusal table: `POST /registry/agents` with `token` and `body`.
fn post(
    what: &'static str,
    token: Option<String>,
    body: Value,
    status: u16,
    code: &'static str,
) -> Case {
    Case {
        what,
        method: Method::POST,
        path: "/registry/agents".into(),
        token,
        body: Some(body),
        status,
        code,
    }
}

/// A case of the refusal table for each `(what, value)` of `rows`: the registration of `@new`
/// with `field` set to the value, sent with `token`, refused with `status` and `code`.
fn each_value(
    token: &str,
    field: &str,
    status: u16,
    code: &'static str,
    rows: &[(&'static str, &str)],
) -> Vec<Case> {
    rows.iter()
        .map(|(what, v)| {
            let body = with(|b| b[field] = json!(v));
            post(what, Some(token.to_string()), body, status, code)
        })
        .collect()
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
    hub_core::admin::set_member(app.store(), "alice", "carol", "publisher")
        .await
        .unwrap();
    let admin = app.new_user("root-admin", true).await;
    // What the refusals may not touch: one registration and one published agent of alice.
    let r = assert_status(
        register(&app, &alice.token, registration("@code")).await,
        201,
    );
    let signed = published("alice/signed", "1.0.0", "@signed");
    assert_eq!(app.publish_as(&alice, &signed).await.0, 201);

    let all = ofc_test_kit::user_scopes();
    let t_no_new = app.token_without("alice", Scope::PublishNew).await;
    let t_no_update = app.token_without("alice", Scope::PublishUpdate).await;
    let t_no_yank = app.token_without("alice", Scope::Yank).await;
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
    let long_endpoint = format!("https://e.example/{}", "p".repeat(2049 - 18));
    let long_key = "k".repeat(8193);
    let big_text = "x".repeat(64 * 1024);
    let t = |s: &str| Some(s.to_string());
    let a = alice.token.as_str();
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
    let mut cases = vec![
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
    ];
    // --- handles ---
    cases.extend(each_value(
        a,
        "id",
        400,
        "invalid_handle",
        &[
            ("register an empty handle", "@"),
            ("register a handle with a space", "@my agent"),
            ("register a handle with a slash", "@alice/code"),
            ("register a handle with a bad first character", "@-code"),
            ("register a handle with a bad character", "@co.de"),
            ("register a too long handle", &long_handle),
            ("register @user (reserved)", "@user"),
            ("register @floor-manager (reserved)", "@Floor-Manager"),
            ("register @here (reserved)", "@here"),
            ("register @admin (reserved)", "@ADMIN"),
            ("register @tool-shell (reserved prefix)", "@tool-shell"),
        ],
    ));
    cases.extend([
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
    ]);
    // --- endpoint ---
    cases.extend(each_value(
        a,
        "endpoint",
        400,
        "invalid_endpoint",
        &[
            (
                "plain http to a public host",
                "http://code-agent.example.com/ofc",
            ),
            ("not a URL", "code-agent.example.com/ofc"),
            ("another scheme", "ftp://code-agent.example.com/ofc"),
            ("empty endpoint", ""),
            (
                "endpoint with a space",
                "https://code-agent.example.com/o fc",
            ),
            (
                "endpoint with a newline",
                "https://code-agent.example.com/ofc\nX: y",
            ),
            (
                "http to a host that only starts with localhost",
                "http://localhost.attacker.example/ofc",
            ),
            (
                "http to a host whose name starts with localhost",
                "http://localhostevil.com",
            ),
            (
                "http to a host that only starts with 127.0.0.1",
                "http://127.0.0.1.nip.io.attacker.example/ofc",
            ),
            (
                "http to localhost as credentials before a public host",
                "http://localhost@attacker.example/ofc",
            ),
            ("http to another loopback address", "http://127.0.0.2/ofc"),
            (
                "http to localhost with a port that is not a number",
                "http://localhost:abc/ofc",
            ),
            (
                "http to localhost with a port over 65535",
                "http://localhost:65536/ofc",
            ),
            ("http to [::1] followed by text", "http://[::1]x/ofc"),
            ("https without anything after it", "https://"),
            ("https without a host", "https:///ofc"),
            ("https with a port and no host", "https://:443/ofc"),
            (
                "https with credentials",
                "https://user:secret@code-agent.example.com/ofc",
            ),
            ("endpoint of 2049 characters", &long_endpoint),
        ],
    ));
    // --- public key ---
    cases.extend(each_value(
        a,
        "public_key",
        400,
        "invalid_key",
        &[
            ("empty public key", ""),
            ("blank public key", " \n\t "),
            ("public key of 8193 characters", &long_key),
        ],
    ));
    cases.extend([
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
    ]);
    assert!(cases.len() >= 50, "{}", cases.len());
    assert_cases(&app, None, &cases).await;

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
    let (_, c) = entry(&app, "@code").await;
    assert_eq!(c["metadata"], registration("@code")["metadata"]);
    assert_eq!(c["endpoint"], "https://code-agent.example.com/ofc");
    let (_, sgn) = entry(&app, "@signed").await;
    assert_eq!(
        sgn["metadata"]["tagline"],
        "Send me anything that needs code!"
    );
    let (_, l) = app.get("/api/v1/agents").await;
    let mut names = strings(&l["agents"], "name");
    names.sort();
    assert_eq!(names, vec!["alice/code", "alice/signed"], "{l}");
    let log = audit_log(&app, &admin.token, "alice/").await;
    assert_eq!(
        strings(&log["entries"], "action"),
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
    assert_status(register(&app, &a, body).await, 201);
    let g = assert_status(entry(&app, "@full").await, 200);
    assert_eq!(g["metadata"], exact);
    assert_eq!(g["endpoint"], endpoint);
    // One more byte through PATCH is refused and leaves the stored metadata alone.
    let over = json!({"metadata": {"description": "d".repeat(64 * 1024 - 17)}});
    assert_refused(
        patch_entry(&app, &a, "@full", over).await,
        413,
        "metadata_too_large",
    );
    let (_, g) = entry(&app, "@full").await;
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
        let (s, r) = register(&app, &a, registration_at(id, endpoint)).await;
        assert_eq!(s, 201, "{endpoint}: {r}");
        let (_, g) = entry(&app, id).await;
        assert_eq!(g["endpoint"], endpoint);
    }
    app.stop().await;
}

/// The registry entry `@handle` shows: its owner and whether it is a registration (a published
/// agent's metadata has no `pricing`, the registration body's has).
async fn shown(app: &TestHub, id: &str) -> (String, bool) {
    let (s, a) = entry(app, id).await;
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
    assert_status(
        register(&app, &alice.token, registration("@code")).await,
        201,
    );

    // Bob cannot register alice's handle, in any letter case, in his namespace or another he
    // manages.
    let mut bobs: Vec<Value> = ["@code", "code", "@CODE", "@Code", "cOdE"]
        .into_iter()
        .map(|id| registration_at(id, "https://bob.example.com/ofc"))
        .collect();
    let mut explicit = registration("@code");
    explicit["owner"] = json!("Bob");
    bobs.push(explicit);
    for body in bobs {
        let (s, e) = register(&app, &bob.token, body.clone()).await;
        assert_eq!((s, code(&e)), (409, "agent_exists"), "{body}: {e}");
        assert_message_has(&e, "alice/code");
    }
    let (s, e) = app.get("/api/v1/agents/bob/code").await;
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
        let m = published("bob/coder", v, "@code");
        assert_status(app.publish_as(&bob, &m).await, 201);
    }
    assert_eq!(shown(&app, "@code").await, ("alice".into(), true));
    let tagline = json!({"metadata": {"tagline": "still mine"}});
    let (s, a) = patch_entry(&app, &alice.token, "@code", tagline).await;
    assert_eq!((s, &a["metadata"]["tagline"]), (200, &json!("still mine")));
    assert_refused(
        delete_entry(&app, &bob.token, "@code").await,
        403,
        "not_member",
    );

    // When alice removes her registration, the handle passes to the agent using it now; a
    // registration of it is then refused, alice's included.
    assert_status(delete_entry(&app, &alice.token, "@code").await, 204);
    assert_eq!(shown(&app, "@code").await, ("bob".into(), false));
    let e = assert_refused(
        register(&app, &alice.token, registration("@Code")).await,
        409,
        "agent_exists",
    );
    assert_message_has(&e, "bob/coder");

    // Between published agents, the one that used the handle first keeps it.
    let m = published("alice/sql", "1.0.0", "@sql");
    assert_status(app.publish_as(&alice, &m).await, 201);
    for v in ["1.0.0", "2.0.0"] {
        let m = published("bob/sql", v, "@sql");
        assert_status(app.publish_as(&bob, &m).await, 201);
    }
    assert_eq!(shown(&app, "@sql").await, ("alice".into(), false));
    let e = assert_refused(
        register(&app, &bob.token, registration("@sql")).await,
        409,
        "agent_exists",
    );
    assert_message_has(&e, "alice/sql");

    // None of bob's refused registrations was written.
    let log = audit_log(&app, &admin.token, "bob/").await;
    let actions = strings(&log["entries"], "action");
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
            let body = registration_at(&id, &format!("https://{}.example.com/ofc", u.name));
            let app = &app;
            async move {
                let (s, e) = register(app, &u.token, body).await;
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
        let a = assert_status(entry(&app, &id).await, 200);
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
    store: &hub_core::store::Store,
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
    sqlx::query(sql)
        .bind(ns)
        .bind(name)
        .bind(handle)
        .bind(endpoint)
        .bind(meta)
        .bind(key)
        .bind(created_at)
        .execute(store.db().write())
        .await
        .map(|_| ())
        .map_err(unique)
}

async fn execute(store: &hub_core::store::Store, sql: &str) {
    sqlx::query(sql).execute(store.db().write()).await.unwrap();
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn the_database_refuses_a_second_registration_of_a_handle(#[case] backend: Backend) {
    let app = start(backend).await;
    app.new_user("bob", false).await;
    assert_status(
        register(&app, &app.user.token, registration("@code")).await,
        201,
    );
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
    let (store, _dir, _pg) = ofc_test_kit::fresh_store(backend).await;
    for n in ["alice", "bob", "carol", "dave"] {
        hub_core::admin::create_user(&store, n, None, false, false)
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
    let pool = app.store().db().write();
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
    let post = tokio::spawn(
        app.request(Method::POST, "/registry/agents")
            .token(&app.user.token)
            .json(registration("@HELD"))
            .send(),
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!post.is_finished(), "{:?}", post.await);
    tx.commit().await.unwrap();
    let e = assert_refused(post.await.unwrap(), 409, "agent_exists");
    assert_message_has(&e, "concurrent");
    assert_no_agent(&app, "alice/held").await;
    app.stop().await;
}

/// A `remote` manifest of `name` answering to `handle`.
fn manifest_with_handle(name: &str, version: &str, handle: &str) -> Manifest {
    let mut v = serde_json::to_value(remote_manifest(name, version)).unwrap();
    v["id"] = json!(handle);
    Manifest::from_value(&v).unwrap()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn an_older_agent_cannot_take_over_a_handle_by_changing_its_id(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    // alice's agent is the oldest, under another handle.
    let (s, b) = app
        .publish_as(
            &alice,
            &manifest_with_handle("alice/old", "1.0.0", "@old-timer"),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (s, b) = app
        .publish_as(
            &bob,
            &manifest_with_handle("bob/helper", "1.0.0", "@helper"),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let owner = |v: &Value| v["owner"].as_str().map(str::to_owned);
    let (s, got) = app
        .call(Method::GET, "/registry/agents/@helper", None, None)
        .await;
    assert_eq!((s, owner(&got).as_deref()), (200, Some("bob")), "{got}");

    // alice's old agent changes its id to @helper: published (ids are not unique), but the
    // handle stays bob's.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (s, b) = app
        .publish_as(
            &alice,
            &manifest_with_handle("alice/old", "1.1.0", "@helper"),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, got) = app
        .call(Method::GET, "/registry/agents/@helper", None, None)
        .await;
    assert_eq!((s, owner(&got).as_deref()), (200, Some("bob")), "{got}");

    // Keeping the handle keeps its age: a new version of bob's agent does not lose it.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (s, b) = app
        .publish_as(
            &bob,
            &manifest_with_handle("bob/helper", "1.1.0", "@helper"),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, got) = app
        .call(Method::GET, "/registry/agents/@helper", None, None)
        .await;
    assert_eq!((s, owner(&got).as_deref()), (200, Some("bob")), "{got}");
    app.stop().await;
}
