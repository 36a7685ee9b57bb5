//! Refusals of the account, namespace and key routes over HTTP, on SQLite and PostgreSQL, each
//! with its exact status and `code` — `key_exists`, `invalid_key`, `key_not_found`,
//! `last_owner`, `invalid_role`, `member_not_found`, `user_not_found`, `invalid_scope`,
//! `invalid_expiry`, `invalid_namespace_pattern`, `invalid_token_name`, `token_not_found` — and
//! the exact `code` of every 404 and 400 of the read and write routes. After each refusal the
//! test checks that nothing changed.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use index_schema::envelope::SecretKey;
use ofc_test_kit::{
    Backend, Case, TestHub, assert_cases, assert_refused, assert_status, remote_manifest,
    string_pairs,
};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

async fn keys(app: &TestHub, ns: &str) -> Vec<Value> {
    let k = assert_status(app.get(&format!("/api/v1/namespaces/{ns}/keys")).await, 200);
    k["keys"].as_array().unwrap().clone()
}

/// `POST /api/v1/namespaces/{ns}/keys` with `token` and `public_key`.
async fn add_key(app: &TestHub, token: &str, ns: &str, public_key: &str) -> (u16, Value) {
    let path = format!("/api/v1/namespaces/{ns}/keys");
    let body = json!({ "public_key": public_key });
    app.call(Method::POST, &path, Some(token), Some(body)).await
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn key_refusals(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    let a = alice.token.as_str();
    let alice_pub = alice.key.public_key().to_string();
    let alice_kid = alice.key.key_id().to_string();

    // A second key, added then revoked through the API.
    let k2 = SecretKey::from_seed(&[42; 32]);
    let k2_pub = k2.public_key().to_string();
    let row = assert_status(add_key(&app, a, "alice", &k2_pub).await, 201);
    assert_eq!(row["key_id"], k2.key_id().to_string());
    assert_eq!(row["public_key"], k2.public_key().to_string());
    assert_eq!(row["added_by"], "alice");
    assert_eq!(row["revoked_at"], Value::Null);
    let k2_path = format!("/api/v1/namespaces/alice/keys/{}", k2.key_id());
    let (s, _) = app.call(Method::DELETE, &k2_path, Some(a), None).await;
    assert_eq!(s, 204);
    let before = keys(&app, "alice").await;
    assert_eq!(before.len(), 2);
    let revoked_at = before[1]["revoked_at"].as_i64().expect("revoked");

    let b64 = |bytes: &[u8]| STANDARD.encode(bytes);
    // The identity point (y = 1) is a small-order, weak key.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let add = |what, key: String, status, c| {
        let body = Some(json!({ "public_key": key }));
        Case::new(
            what,
            Method::POST,
            "/api/v1/namespaces/alice/keys",
            body,
            status,
            c,
        )
    };
    let cases = vec![
        add("the same key again", alice_pub.clone(), 409, "key_exists"),
        add(
            "the same key with blanks around it",
            format!("  {alice_pub}\n"),
            409,
            "key_exists",
        ),
        add(
            "a revoked key again (it stays revoked)",
            k2.public_key().to_string(),
            409,
            "key_exists",
        ),
        add("an empty key", String::new(), 400, "invalid_key"),
        add(
            "an ssh key",
            format!("ssh-ed25519 {}", b64(&[7; 32])),
            400,
            "invalid_key",
        ),
        add("no bytes", "ed25519:".into(), 400, "invalid_key"),
        add("not base64", "ed25519:!!!!".into(), 400, "invalid_key"),
        add(
            "31 bytes",
            format!("ed25519:{}", b64(&[7; 31])),
            400,
            "invalid_key",
        ),
        add(
            "33 bytes",
            format!("ed25519:{}", b64(&[7; 33])),
            400,
            "invalid_key",
        ),
        add(
            "a weak (small-order) key",
            format!("ed25519:{}", b64(&identity)),
            400,
            "invalid_key",
        ),
        Case::new(
            "an unknown body field",
            Method::POST,
            "/api/v1/namespaces/alice/keys",
            Some(json!({"public_key": alice_pub, "trust": "full"})),
            422,
            "invalid_body",
        ),
        Case::new(
            "add to an unknown namespace",
            Method::POST,
            "/api/v1/namespaces/nobody/keys",
            Some(json!({"public_key": SecretKey::from_seed(&[5; 32]).public_key().to_string()})),
            404,
            "namespace_not_found",
        ),
        Case::new(
            "list keys of an unknown namespace",
            Method::GET,
            "/api/v1/namespaces/nobody/keys",
            None,
            404,
            "namespace_not_found",
        ),
        Case::new(
            "revoke an unknown key id",
            Method::DELETE,
            "/api/v1/namespaces/alice/keys/00112233445566778899aabbccddeeff",
            None,
            404,
            "key_not_found",
        ),
        Case::new(
            "revoke bob's key through alice's namespace",
            Method::DELETE,
            format!("/api/v1/namespaces/alice/keys/{}", bob.key.key_id()),
            None,
            404,
            "key_not_found",
        ),
        Case::new(
            "revoke a key of an unknown namespace",
            Method::DELETE,
            format!("/api/v1/namespaces/nobody/keys/{alice_kid}"),
            None,
            404,
            "namespace_not_found",
        ),
    ];
    assert_cases(&app, Some(a), &cases).await;

    // Nothing changed: the same two keys, the revoked one still revoked at the same time.
    let after = keys(&app, "alice").await;
    assert_eq!(after, before);
    assert_eq!(keys(&app, "bob").await.len(), 1);
    assert!(
        keys(&app, "bob").await[0]["revoked_at"].is_null(),
        "bob's key was not revoked through alice's namespace"
    );
    // Revoking again succeeds and keeps the first revocation time.
    let (s, _) = app.call(Method::DELETE, &k2_path, Some(a), None).await;
    assert_eq!(s, 204);
    assert_eq!(
        keys(&app, "alice").await[1]["revoked_at"].as_i64(),
        Some(revoked_at)
    );
    // The same key in another namespace is another registration.
    let row = assert_status(add_key(&app, &bob.token, "bob", &alice_pub).await, 201);
    assert_eq!(row["key_id"], alice_kid);
    app.stop().await;
}

async fn members(app: &TestHub, ns: &str) -> Vec<(String, String)> {
    let n = assert_status(app.get(&format!("/api/v1/namespaces/{ns}")).await, 200);
    let mut m = string_pairs(&n["members"], "user", "role");
    m.sort();
    m
}

/// `PUT /api/v1/namespaces/alice/members/{user}` with `token` and `role`.
async fn set_role(app: &TestHub, token: &str, user: &str, role: &str) -> (u16, Value) {
    let path = format!("/api/v1/namespaces/alice/members/{user}");
    let body = json!({ "role": role });
    app.call(Method::PUT, &path, Some(token), Some(body)).await
}

/// `DELETE /api/v1/namespaces/alice/members/{user}` with `token`.
async fn remove_member(app: &TestHub, token: &str, user: &str) -> (u16, Value) {
    let path = format!("/api/v1/namespaces/alice/members/{user}");
    app.call(Method::DELETE, &path, Some(token), None).await
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn member_refusals(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    let _carol = app.new_user("carol", false).await;
    let a = alice.token.as_str();
    let put = |what, path: &str, role: &str, status, c| {
        Case::new(
            what,
            Method::PUT,
            path,
            Some(json!({ "role": role })),
            status,
            c,
        )
    };
    let del = |what, path: &str, status, c| Case::new(what, Method::DELETE, path, None, status, c);
    let cases = vec![
        put(
            "demote the last owner",
            "/api/v1/namespaces/alice/members/alice",
            "maintainer",
            409,
            "last_owner",
        ),
        put(
            "demote the last owner, name in another case",
            "/api/v1/namespaces/alice/members/ALICE",
            "publisher",
            409,
            "last_owner",
        ),
        del(
            "remove the last owner",
            "/api/v1/namespaces/alice/members/alice",
            409,
            "last_owner",
        ),
        put(
            "unknown role",
            "/api/v1/namespaces/alice/members/bob",
            "admin",
            400,
            "invalid_role",
        ),
        put(
            "role in another case",
            "/api/v1/namespaces/alice/members/bob",
            "Owner",
            400,
            "invalid_role",
        ),
        put(
            "empty role",
            "/api/v1/namespaces/alice/members/bob",
            "",
            400,
            "invalid_role",
        ),
        put(
            "a user that does not exist",
            "/api/v1/namespaces/alice/members/ghost",
            "maintainer",
            404,
            "user_not_found",
        ),
        put(
            "a namespace that does not exist",
            "/api/v1/namespaces/nobody/members/bob",
            "maintainer",
            404,
            "namespace_not_found",
        ),
        del(
            "remove a user who is not a member",
            "/api/v1/namespaces/alice/members/bob",
            404,
            "member_not_found",
        ),
        del(
            "remove a user that does not exist",
            "/api/v1/namespaces/alice/members/ghost",
            404,
            "member_not_found",
        ),
        del(
            "remove from a namespace that does not exist",
            "/api/v1/namespaces/nobody/members/bob",
            404,
            "namespace_not_found",
        ),
        Case::new(
            "a body without a role",
            Method::PUT,
            "/api/v1/namespaces/alice/members/bob",
            Some(json!({})),
            422,
            "invalid_body",
        ),
    ];
    assert_cases(&app, Some(a), &cases).await;
    assert_eq!(members(&app, "alice").await, owned(&[("alice", "owner")]));

    // With a second owner, the first may step down and leave; then the second is the last.
    assert_status(set_role(&app, a, "Bob", "owner").await, 200);
    assert_status(set_role(&app, a, "alice", "maintainer").await, 200);
    assert_eq!(
        members(&app, "alice").await,
        owned(&[("alice", "maintainer"), ("bob", "owner")])
    );
    // Alice is a maintainer now: managing members is not hers any more.
    assert_refused(remove_member(&app, a, "bob").await, 403, "forbidden_role");
    assert_eq!(
        remove_member(&app, &bob.token, "alice").await,
        (204, Value::Null)
    );
    let cases = vec![
        del(
            "remove the new last owner",
            "/api/v1/namespaces/alice/members/bob",
            409,
            "last_owner",
        ),
        put(
            "demote the new last owner",
            "/api/v1/namespaces/alice/members/bob",
            "maintainer",
            409,
            "last_owner",
        ),
        del(
            "remove the removed member again",
            "/api/v1/namespaces/alice/members/alice",
            404,
            "member_not_found",
        ),
    ];
    assert_cases(&app, Some(&bob.token), &cases).await;
    assert_eq!(members(&app, "alice").await, owned(&[("bob", "owner")]));
    app.stop().await;
}

/// `base` with `f` applied.
fn patched(base: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut b = base.clone();
    f(&mut b);
    b
}

async fn token_ids(app: &TestHub, token: &str) -> Vec<i64> {
    let (s, l) = app
        .call(Method::GET, "/api/v1/tokens", Some(token), None)
        .await;
    assert_eq!(s, 200, "{l}");
    l["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect()
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn token_refusals(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let alice = app.user.clone();
    let a = alice.token.as_str();
    let before = token_ids(&app, a).await;
    assert_eq!(before.len(), 1);

    let mk = |what, body: Value, status, c| {
        Case::new(what, Method::POST, "/api/v1/tokens", Some(body), status, c)
    };
    let ok = json!({"name": "ci", "scopes": ["yank"], "namespaces": ["alice"]});
    let many: Vec<String> = (0..51).map(|i| format!("ns{i}")).collect();
    let login = |what, extra: Value, status, c| {
        let mut body = json!({"username": "alice", "password": "correct horse"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        Case::new(what, Method::POST, "/api/v1/login", Some(body), status, c)
    };
    let cases = vec![
        mk(
            "unknown scope",
            patched(&ok, |b| b["scopes"] = json!(["yank", "root"])),
            400,
            "invalid_scope",
        ),
        mk(
            "scope spelled with an underscore",
            patched(&ok, |b| b["scopes"] = json!(["publish_new"])),
            400,
            "invalid_scope",
        ),
        mk(
            "no scope",
            patched(&ok, |b| b["scopes"] = json!([])),
            400,
            "invalid_scope",
        ),
        mk(
            "no namespace pattern",
            patched(&ok, |b| b["namespaces"] = json!([])),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "empty pattern",
            patched(&ok, |b| b["namespaces"] = json!([""])),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "pattern with a bad character",
            patched(&ok, |b| b["namespaces"] = json!(["ali!ce"])),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "star inside a pattern",
            patched(&ok, |b| b["namespaces"] = json!(["a*b"])),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "star first",
            patched(&ok, |b| b["namespaces"] = json!(["*alice"])),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "pattern over 65 characters",
            patched(&ok, |b| {
                b["namespaces"] = json!([format!("{}*", "a".repeat(65))])
            }),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "51 patterns",
            patched(&ok, |b| b["namespaces"] = json!(many)),
            400,
            "invalid_namespace_pattern",
        ),
        mk(
            "expiry of 0 days",
            patched(&ok, |b| b["expires_in_days"] = json!(0)),
            400,
            "invalid_expiry",
        ),
        mk(
            "expiry over ten years",
            patched(&ok, |b| b["expires_in_days"] = json!(3651)),
            400,
            "invalid_expiry",
        ),
        mk(
            "negative expiry",
            patched(&ok, |b| b["expires_in_days"] = json!(-1)),
            422,
            "invalid_body",
        ),
        mk(
            "empty name",
            patched(&ok, |b| b["name"] = json!("  ")),
            400,
            "invalid_token_name",
        ),
        mk(
            "name over 100 characters",
            patched(&ok, |b| b["name"] = json!("n".repeat(101))),
            400,
            "invalid_token_name",
        ),
        mk(
            "name with a control character",
            patched(&ok, |b| b["name"] = json!("ci\u{1b}[2J")),
            400,
            "invalid_token_name",
        ),
        login(
            "login asking for an unknown scope",
            json!({"scopes": ["everything"]}),
            400,
            "invalid_scope",
        ),
        login(
            "login asking for a bad pattern",
            json!({"namespaces": ["Bad Pattern"]}),
            400,
            "invalid_namespace_pattern",
        ),
        login(
            "login asking for a zero expiry",
            json!({"expires_in_days": 0}),
            400,
            "invalid_expiry",
        ),
        login(
            "login asking for the admin scope as a non-admin",
            json!({"scopes": ["admin"]}),
            403,
            "admin_only",
        ),
        Case::new(
            "revoke a token id that does not exist",
            Method::DELETE,
            "/api/v1/tokens/987654321",
            None,
            404,
            "token_not_found",
        ),
    ];
    assert_cases(&app, Some(a), &cases).await;
    assert_eq!(
        token_ids(&app, a).await,
        before,
        "no refused request created a token"
    );

    // The limits themselves are allowed: one day, ten years, 50 patterns, a 100-character name.
    let fifty: Vec<String> = (0..50).map(|i| format!("ns{i}")).collect();
    for (days, namespaces, name) in [
        (1u32, json!(["alice"]), "n".repeat(100)),
        (3650, json!(fifty), "ten years".to_string()),
    ] {
        let (s, t) = app
            .call(
                Method::POST,
                "/api/v1/tokens",
                Some(a),
                Some(
                    json!({"name": name, "scopes": ["yank"], "namespaces": namespaces,
                            "expires_in_days": days}),
                ),
            )
            .await;
        assert_eq!(s, 201, "{days}: {t}");
        let lifetime = t["expires_at"].as_i64().unwrap() - t["created_at"].as_i64().unwrap();
        let want = i64::from(days) * 86_400_000;
        assert!(
            (lifetime - want).abs() < 60_000,
            "{days} days: lifetime {lifetime} ms, want {want} ms"
        );
        assert_eq!(t["namespaces"], namespaces);
        assert_eq!(t["name"], json!(name));
    }

    // Token management has its own scope: a narrow token cannot list, mint or revoke the
    // user's other tokens; it can revoke itself.
    let (s, narrow) = app
        .call(
            Method::POST,
            "/api/v1/tokens",
            Some(a),
            Some(json!({"name": "narrow", "scopes": ["yank"], "namespaces": ["zzz"]})),
        )
        .await;
    assert_eq!(s, 201, "{narrow}");
    let n = narrow["token"].as_str().unwrap().to_owned();
    let narrow_id = narrow["id"].as_i64().unwrap();
    let all_before = token_ids(&app, a).await;
    let (s, me) = app.call(Method::GET, "/api/v1/me", Some(a), None).await;
    assert_eq!(s, 200, "{me}");
    let alices_own = me["token"]["id"].as_i64().unwrap();
    assert_ne!(alices_own, narrow_id);
    let refused = vec![
        Case::new(
            "a narrow token lists the tokens",
            Method::GET,
            "/api/v1/tokens",
            None,
            403,
            "forbidden_scope",
        ),
        Case::new(
            "a narrow token mints a token",
            Method::POST,
            "/api/v1/tokens",
            Some(json!({"name": "x", "scopes": ["yank"], "namespaces": ["zzz"]})),
            403,
            "forbidden_scope",
        ),
        Case::new(
            "a narrow token revokes another token",
            Method::DELETE,
            format!("/api/v1/tokens/{alices_own}"),
            None,
            403,
            "forbidden_scope",
        ),
    ];
    assert_cases(&app, Some(&n), &refused).await;
    assert_eq!(
        token_ids(&app, a).await,
        all_before,
        "nothing revoked or created"
    );
    let (s, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/tokens/{narrow_id}"),
            Some(&n),
            None,
        )
        .await;
    assert_eq!(s, 204, "a token may revoke itself: {body}");
    let (s, _) = app.call(Method::GET, "/api/v1/me", Some(&n), None).await;
    assert_eq!(s, 401, "the revoked token no longer works");
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn not_found_and_bad_input_codes(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let admin = app.new_user("root-admin", true).await;
    let m = remote_manifest("alice/code", "1.0.0");
    assert_eq!(app.publish_as(&u, &m).await.0, 201);
    let get = |what, path: &str, status, c| Case::new(what, Method::GET, path, None, status, c);
    let reads = vec![
        get(
            "unknown agent",
            "/api/v1/agents/alice/nope",
            404,
            "agent_not_found",
        ),
        get(
            "agent of an unknown namespace",
            "/api/v1/agents/nobody/code",
            404,
            "agent_not_found",
        ),
        get(
            "version of an unknown agent",
            "/api/v1/agents/alice/nope/versions/1.0.0",
            404,
            "agent_not_found",
        ),
        get(
            "unknown version",
            "/api/v1/agents/alice/code/versions/9.9.9",
            404,
            "version_not_found",
        ),
        get(
            "unknown pre-release of a known version",
            "/api/v1/agents/alice/code/versions/1.0.0-rc.1",
            404,
            "version_not_found",
        ),
        get(
            "bundle of an unknown version",
            "/api/v1/agents/alice/code/versions/9.9.9/bundle",
            404,
            "version_not_found",
        ),
        get(
            "bundle of a remote agent",
            "/api/v1/agents/alice/code/versions/1.0.0/bundle",
            404,
            "no_bundle",
        ),
        get(
            "unknown namespace",
            "/api/v1/namespaces/nobody",
            404,
            "namespace_not_found",
        ),
        get(
            "keys of an unknown namespace",
            "/api/v1/namespaces/nobody/keys",
            404,
            "namespace_not_found",
        ),
        get(
            "unknown registry handle",
            "/registry/agents/@nope",
            404,
            "agent_not_found",
        ),
        get("unknown route", "/api/v1/nope", 404, "not_found"),
        get(
            "invalid version",
            "/api/v1/agents/alice/code/versions/x",
            400,
            "invalid_version",
        ),
        get(
            "version with build metadata",
            "/api/v1/agents/alice/code/versions/1.0.0+b1",
            400,
            "invalid_version",
        ),
        get(
            "invalid agent name",
            "/api/v1/agents/alice/co..de",
            400,
            "invalid_name",
        ),
        get(
            "invalid publisher name",
            "/api/v1/agents/-alice/code",
            400,
            "invalid_name",
        ),
        get("limit 0", "/api/v1/agents?limit=0", 400, "invalid_limit"),
        get(
            "limit over 1000",
            "/api/v1/agents?limit=1001",
            400,
            "invalid_limit",
        ),
        get(
            "outbox limit 0",
            "/api/v1/outbox?limit=0",
            400,
            "invalid_limit",
        ),
        get(
            "cursor without a dot",
            "/api/v1/agents?cursor=zz",
            400,
            "invalid_cursor",
        ),
        get(
            "cursor with a bad id",
            "/api/v1/agents?cursor=1.x",
            400,
            "invalid_cursor",
        ),
    ];
    assert_cases(&app, None, &reads).await;

    // Writes by an owner: the agent, version, namespace, key, token or member is missing.
    let reason = Some(json!({"reason": "x"}));
    let message = Some(json!({"message": "use 2.x"}));
    let writes = vec![
        Case::new(
            "yank an unknown version",
            Method::PUT,
            "/api/v1/agents/alice/code/versions/9.9.9/yank",
            reason.clone(),
            404,
            "version_not_found",
        ),
        Case::new(
            "yank a version of an unknown agent",
            Method::PUT,
            "/api/v1/agents/alice/nope/versions/1.0.0/yank",
            reason.clone(),
            404,
            "agent_not_found",
        ),
        Case::new(
            "yank in an unknown namespace",
            Method::PUT,
            "/api/v1/agents/nobody/code/versions/1.0.0/yank",
            reason.clone(),
            404,
            "namespace_not_found",
        ),
        Case::new(
            "unyank an unknown version",
            Method::DELETE,
            "/api/v1/agents/alice/code/versions/9.9.9/yank",
            None,
            404,
            "version_not_found",
        ),
        Case::new(
            "deprecate an unknown version",
            Method::PUT,
            "/api/v1/agents/alice/code/versions/9.9.9/deprecation",
            message.clone(),
            404,
            "version_not_found",
        ),
        Case::new(
            "deprecate an unknown agent",
            Method::PUT,
            "/api/v1/agents/alice/nope/versions/1.0.0/deprecation",
            message.clone(),
            404,
            "agent_not_found",
        ),
        Case::new(
            "undeprecate an unknown version",
            Method::DELETE,
            "/api/v1/agents/alice/code/versions/9.9.9/deprecation",
            None,
            404,
            "version_not_found",
        ),
        Case::new(
            "yank an invalid version",
            Method::PUT,
            "/api/v1/agents/alice/code/versions/latest/yank",
            reason.clone(),
            400,
            "invalid_version",
        ),
        Case::new(
            "publish into an unknown namespace",
            Method::PUT,
            "/api/v1/agents/nobody/code/versions/1.0.0",
            Some(json!({"envelope": {}})),
            404,
            "namespace_not_found",
        ),
        Case::new(
            "set a member of an unknown namespace",
            Method::PUT,
            "/api/v1/namespaces/nobody/members/alice",
            Some(json!({"role": "owner"})),
            404,
            "namespace_not_found",
        ),
        Case::new(
            "revoke an unknown key",
            Method::DELETE,
            "/api/v1/namespaces/alice/keys/ffff",
            None,
            404,
            "key_not_found",
        ),
        Case::new(
            "revoke an unknown token",
            Method::DELETE,
            "/api/v1/tokens/424242",
            None,
            404,
            "token_not_found",
        ),
        Case::new(
            "remove a non-member",
            Method::DELETE,
            "/api/v1/namespaces/alice/members/root-admin",
            None,
            404,
            "member_not_found",
        ),
    ];
    assert_cases(&app, Some(&u.token), &writes).await;

    // Administrator deletes of things that are not there.
    let admin_writes = vec![
        Case::new(
            "delete an unknown agent",
            Method::DELETE,
            "/api/v1/agents/alice/nope",
            None,
            404,
            "agent_not_found",
        ),
        Case::new(
            "delete an unknown version",
            Method::DELETE,
            "/api/v1/agents/alice/code/versions/9.9.9",
            None,
            404,
            "version_not_found",
        ),
        Case::new(
            "delete a version of an unknown agent",
            Method::DELETE,
            "/api/v1/agents/alice/nope/versions/1.0.0",
            None,
            404,
            "agent_not_found",
        ),
        Case::new(
            "delete an invalid version",
            Method::DELETE,
            "/api/v1/agents/alice/code/versions/x",
            None,
            400,
            "invalid_version",
        ),
    ];
    assert_cases(&app, Some(&admin.token), &admin_writes).await;

    // None of it changed the one published version.
    let a = assert_status(app.get("/api/v1/agents/alice/code").await, 200);
    assert_eq!(a["latest"], "1.0.0");
    assert_eq!(a["versions"].as_array().unwrap().len(), 1);
    assert_eq!(a["versions"][0]["yanked"], false);
    assert_eq!(a["versions"][0]["deprecated"], Value::Null);
    app.stop().await;
}
