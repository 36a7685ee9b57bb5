//! Publish → read end to end on SQLite and PostgreSQL, and every publish refusal with its exact
//! status and code.

use index_schema::envelope::{Envelope, SecretKey, sign_manifest};
use index_schema::media_types::AGENT_MANIFEST_V1;
use ofc_test_kit::{Backend, Request, TestHub, bundle_manifest, remote_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn publish_then_read(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let bytes = b"not really a tarball, but bytes with a digest".to_vec();
    let m = bundle_manifest("alice/analyst", "1.0.0", &bytes);
    let (s, body) = app.publish(&u.token, &u.key, &m, Some(&bytes)).await;
    assert_eq!(s, 201, "{body}");
    assert_eq!(body["name"], "alice/analyst");
    assert_eq!(body["manifest_digest"], m.digest().to_string());
    assert_eq!(body["key_id"], u.key.key_id().to_string());

    let m2 = bundle_manifest("alice/analyst", "1.1.0-beta.1", &bytes);
    // The blob is on the hub already: no bytes needed.
    let (s, body) = app.publish(&u.token, &u.key, &m2, None).await;
    assert_eq!(s, 201, "{body}");

    let (s, a) = app.get("/api/v1/agents/Alice/Analyst").await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["name"], "alice/analyst");
    assert_eq!(a["latest"], "1.0.0", "a release beats a newer pre-release");
    assert_eq!(a["handle"], "@data");
    assert_eq!(a["versions"].as_array().unwrap().len(), 2);

    let (s, v) = app.get("/api/v1/agents/alice/analyst/versions/1.0.0").await;
    assert_eq!(s, 200);
    assert_eq!(v["manifest"]["name"], "alice/analyst");
    assert_eq!(
        v["bundle"]["digest"],
        index_schema::name::Digest::of(&bytes).to_string()
    );
    let env = Envelope::from_json(&v["envelope"].to_string()).unwrap();
    let (got, _, digest) =
        index_schema::envelope::verify_manifest(&env, &[u.key.public_key()]).unwrap();
    assert_eq!(got, m);
    assert_eq!(digest.to_string(), v["manifest_digest"]);
    assert_eq!(v["downloads"], 0, "reading metadata is not a download");
    let (_, v) = app.get("/api/v1/agents/alice/analyst/versions/1.0.0").await;
    assert_eq!(v["downloads"], 0);

    let resp = app
        .client
        .get(app.url("/api/v1/agents/alice/analyst/versions/1.0.0/bundle"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.unwrap().to_vec(), bytes);

    let (_, a) = app.get("/api/v1/agents/alice/analyst").await;
    assert_eq!(
        a["downloads"], 1,
        "the bundle download counts, metadata reads do not"
    );
    assert_eq!(a["versions"][0]["downloads"], 1);
    assert_eq!(a["versions"][1]["downloads"], 0);

    // Listing and the outbox follow.
    let (s, l) = app.get("/api/v1/agents").await;
    assert_eq!(s, 200);
    assert_eq!(l["agents"][0]["name"], "alice/analyst");
    let (_, o) = app.get("/api/v1/outbox").await;
    let seqs: Vec<i64> = o["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, vec![1, 2]);

    // A reason with control characters (terminal escapes, a second line) is refused.
    let (s, body) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/analyst/versions/1.0.0/yank",
            Some(&u.token),
            Some(json!({"reason": "bad\u{1b}[31m\nhint: run this"})),
        )
        .await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(body["code"], "invalid_message");

    // Yank moves latest; deprecate shows; unyank restores.
    let (s, _) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/analyst/versions/1.0.0/yank",
            Some(&u.token),
            Some(json!({"reason": "broken"})),
        )
        .await;
    assert_eq!(s, 204);
    let (_, a) = app.get("/api/v1/agents/alice/analyst").await;
    assert_eq!(a["latest"], "1.1.0-beta.1");
    assert_eq!(a["versions"][0]["yanked"], true);
    assert_eq!(a["versions"][0]["yank_reason"], "broken");
    let (s, _) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/analyst/versions/1.1.0-beta.1/deprecation",
            Some(&u.token),
            Some(json!({"message": "use 2.x"})),
        )
        .await;
    assert_eq!(s, 204);
    let (s, _) = app
        .call(
            Method::DELETE,
            "/api/v1/agents/alice/analyst/versions/1.0.0/yank",
            Some(&u.token),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (_, a) = app.get("/api/v1/agents/alice/analyst").await;
    assert_eq!(a["latest"], "1.0.0");
    assert_eq!(a["versions"][1]["deprecated"], "use 2.x");

    // Every write is in the audit log, with the token that made it.
    let admin = app.new_user("root-admin", true).await;
    let (s, log) = app
        .call(
            Method::GET,
            "/api/v1/audit?target=alice/analyst",
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
    assert_eq!(
        actions,
        vec![
            "version.unyank",
            "version.deprecate",
            "version.yank",
            "version.publish",
            "version.publish"
        ]
    );
    assert!(
        log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["user_name"] == "alice" && e["token_id"].is_i64())
    );
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn versions_are_immutable(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let m = remote_manifest("alice/code", "1.0.0");
    assert_eq!(app.publish(&u.token, &u.key, &m, None).await.0, 201);
    let (s, e) = app.publish(&u.token, &u.key, &m, None).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (409, "version_exists"));
    assert!(e["message"].as_str().unwrap().contains("immutable"), "{e}");
    // Different content, same version: still refused.
    let mut changed = m.clone();
    changed.tagline = "something else".into();
    let (s, e) = app.publish(&u.token, &u.key, &changed, None).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (409, "version_exists"));
    // Same version written differently in the path is the same version.
    let env = sign_manifest(&changed, &u.key);
    let (s, e) = app
        .publish_envelope(&u.token, "ALICE/code", "1.0.0", &env, None)
        .await;
    assert_eq!((s, e["code"].as_str().unwrap()), (409, "version_exists"));
    let (_, a) = app.get("/api/v1/agents/alice/code").await;
    assert_eq!(a["versions"].as_array().unwrap().len(), 1);
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn deleted_versions_are_tombstones(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let admin_token = app.new_user("root-admin", true).await.token;
    for v in ["1.0.0", "1.1.0", "2.0.0"] {
        let m = remote_manifest("alice/code", v);
        assert_eq!(app.publish(&u.token, &u.key, &m, None).await.0, 201);
    }
    let (s, e) = app
        .call(
            Method::DELETE,
            "/api/v1/agents/alice/code/versions/1.1.0",
            Some(&admin_token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{e}");
    // Gone, not missing: the version's URL says it was removed (issue 33's tombstones).
    let (s, e) = app.get("/api/v1/agents/alice/code/versions/1.1.0").await;
    assert_eq!(
        (s, e["code"].as_str()),
        (410, Some("version_removed")),
        "{e}"
    );
    // An operator's delete gives no class: `deleted`, and no digest (none was recorded).
    assert_eq!(e["removed"]["reason"], "deleted", "{e}");
    assert!(e["removed"].get("manifest_digest").is_none(), "{e}");
    // Neither the same manifest nor a different one may take the deleted version again.
    let m = remote_manifest("alice/code", "1.1.0");
    let (s, e) = app.publish(&u.token, &u.key, &m, None).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (409, "version_deleted"));
    let mut changed = m.clone();
    changed.tagline = "something else".into();
    let (s, e) = app.publish(&u.token, &u.key, &changed, None).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (409, "version_deleted"));
    // Other versions are unaffected.
    let m = remote_manifest("alice/code", "1.2.0");
    assert_eq!(app.publish(&u.token, &u.key, &m, None).await.0, 201);

    // Deleting the whole agent tombstones every version it had; new versions still publish.
    let (s, e) = app
        .call(
            Method::DELETE,
            "/api/v1/agents/alice/code",
            Some(&admin_token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{e}");
    for v in ["1.0.0", "1.1.0", "1.2.0", "2.0.0"] {
        let m = remote_manifest("alice/code", v);
        let (s, e) = app.publish(&u.token, &u.key, &m, None).await;
        assert_eq!(
            (s, e["code"].as_str().unwrap()),
            (409, "version_deleted"),
            "{v}"
        );
    }
    let m = remote_manifest("alice/code", "3.0.0");
    let (s, e) = app.publish(&u.token, &u.key, &m, None).await;
    assert_eq!(s, 201, "{e}");
    let (_, a) = app.get("/api/v1/agents/alice/code").await;
    assert_eq!(a["latest"], "3.0.0");
    assert_eq!(a["versions"].as_array().unwrap().len(), 1);
    // The same name in another namespace is another agent: no tombstone applies.
    let bob = app.new_user("bob", false).await;
    let m = remote_manifest("bob/code", "1.1.0");
    assert_eq!(app.publish(&bob.token, &bob.key, &m, None).await.0, 201);
    app.stop().await;
}

#[tokio::test]
async fn publish_refusals_have_exact_status_and_code() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let u = app.user.clone();
    let bytes = vec![7u8; 1000];
    let good = remote_manifest("alice/code", "1.0.0");

    // name/version in the path
    let env = sign_manifest(&good, &u.key);
    let cases: Vec<(&str, &str, u16, &str)> = vec![
        ("alice/other", "1.0.0", 400, "name_mismatch"),
        ("alice/code", "1.0.1", 400, "version_mismatch"),
        ("alice/code", "1.0", 400, "invalid_version"),
        ("alice/code", "v1.0.0", 400, "invalid_version"),
        ("alice/code", "1.0.0+build.5", 400, "invalid_version"),
        ("alice/co..de", "1.0.0", 400, "invalid_name"),
        ("nobody/code", "1.0.0", 404, "namespace_not_found"),
    ];
    for (name, version, status, code) in cases {
        let (s, e) = app
            .publish_envelope(&u.token, name, version, &env, None)
            .await;
        assert_eq!(
            (s, e["code"].as_str().unwrap_or("")),
            (status, code),
            "{name}@{version}: {e}"
        );
    }

    // signatures and keys
    let stranger = SecretKey::from_seed(&[9; 32]);
    let (s, e) = app.publish(&u.token, &stranger, &good, None).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (403, "untrusted_key"));
    let mut tampered = sign_manifest(&good, &u.key);
    tampered.payload = remote_manifest("alice/code", "1.0.0").to_json_bytes();
    tampered.payload.extend_from_slice(b" ");
    let (s, e) = app
        .publish_envelope(&u.token, "alice/code", "1.0.0", &tampered, None)
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "bad_signature"),
        "{e}"
    );
    let wrong_type = Envelope::sign("application/json", &good.to_json_bytes(), &u.key);
    let (s, e) = app
        .publish_envelope(&u.token, "alice/code", "1.0.0", &wrong_type, None)
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "invalid_envelope"),
        "{e}"
    );
    let not_manifest = Envelope::sign(AGENT_MANIFEST_V1, br#"{"schemaVersion":1}"#, &u.key);
    let (s, e) = app
        .publish_envelope(&u.token, "alice/code", "1.0.0", &not_manifest, None)
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "invalid_manifest"),
        "{e}"
    );
    let (s, e) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/code/versions/1.0.0",
            Some(&u.token),
            Some(json!({"envelope": {"payload": 1}})),
        )
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "invalid_envelope"),
        "{e}"
    );
    let (s, e) = app
        .call(
            Method::PUT,
            "/api/v1/agents/alice/code/versions/1.0.0",
            Some(&u.token),
            Some(json!({"nope": 1})),
        )
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (422, "invalid_body"),
        "{e}"
    );

    // bundles
    let bm = bundle_manifest("alice/bundled", "1.0.0", &bytes);
    let (s, e) = app.publish(&u.token, &u.key, &bm, None).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (400, "bundle_missing"));
    let (s, e) = app
        .publish(&u.token, &u.key, &bm, Some(&bytes[..999]))
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "bundle_size_mismatch")
    );
    let mut other = bytes.clone();
    other[0] = 8;
    let (s, e) = app.publish(&u.token, &u.key, &bm, Some(&other)).await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "bundle_digest_mismatch")
    );
    let (s, e) = app.publish(&u.token, &u.key, &good, Some(&bytes)).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (400, "unexpected_bundle"));
    let big = vec![1u8; 1024 * 1024 + 1];
    let bigm = bundle_manifest("alice/big", "1.0.0", &big);
    let (s, e) = app.publish(&u.token, &u.key, &bigm, Some(&big)).await;
    assert_eq!((s, e["code"].as_str().unwrap()), (413, "bundle_too_large"));
    let env = sign_manifest(&good, &u.key);
    let (s, e) = app
        .call(Method::PUT, "/api/v1/agents/alice/code/versions/1.0.0", Some(&u.token),
              Some(json!({"envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap(), "bundle": "%%%"})))
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "unexpected_bundle"),
        "{e}"
    );
    let (s, e) = app
        .call(Method::PUT, "/api/v1/agents/alice/bundled/versions/1.0.0", Some(&u.token),
              Some(json!({"envelope": serde_json::from_str::<Value>(&sign_manifest(&bm, &u.key).to_json()).unwrap(), "bundle": "%%%"})))
        .await;
    assert_eq!(
        (s, e["code"].as_str().unwrap()),
        (400, "invalid_bundle"),
        "{e}"
    );

    // nothing of the above was stored
    let (_, l) = app.get("/api/v1/agents").await;
    assert_eq!(l["agents"].as_array().unwrap().len(), 0, "{l}");
    let (_, o) = app.get("/api/v1/outbox").await;
    assert_eq!(o["entries"].as_array().unwrap().len(), 0);
    assert_eq!(app.publish(&u.token, &u.key, &good, None).await.0, 201);
    app.stop().await;
}

#[tokio::test]
async fn revoked_key_signs_nothing_new_but_old_versions_show_it() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let u = app.user.clone();
    assert_eq!(
        app.publish(
            &u.token,
            &u.key,
            &remote_manifest("alice/code", "1.0.0"),
            None
        )
        .await
        .0,
        201
    );
    let kid = u.key.key_id().to_string();
    let (s, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/namespaces/alice/keys/{kid}"),
            Some(&u.token),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (s, e) = app
        .publish(
            &u.token,
            &u.key,
            &remote_manifest("alice/code", "1.0.1"),
            None,
        )
        .await;
    assert_eq!((s, e["code"].as_str().unwrap()), (403, "key_revoked"));
    let (_, v) = app.get("/api/v1/agents/alice/code/versions/1.0.0").await;
    assert!(v["key"]["revoked_at"].is_i64(), "{v}");
    let env = Envelope::from_json(&v["envelope"].to_string()).unwrap();
    assert!(index_schema::envelope::verify_manifest(&env, &[u.key.public_key()]).is_ok());
    let (_, k) = app.get("/api/v1/namespaces/alice/keys").await;
    assert_eq!(k["keys"][0]["revoked_by"], "alice");
    // A new key works.
    let k2 = SecretKey::from_seed(&[42; 32]);
    let (s, _) = app
        .call(
            Method::POST,
            "/api/v1/namespaces/alice/keys",
            Some(&u.token),
            Some(json!({"public_key": k2.public_key().to_string()})),
        )
        .await;
    assert_eq!(s, 201);
    assert_eq!(
        app.publish(&u.token, &k2, &remote_manifest("alice/code", "1.0.1"), None)
            .await
            .0,
        201
    );
    app.stop().await;
}

#[tokio::test]
async fn login_me_tokens_and_brute_force_limit() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| c.auth_failure_limit = 5).await;
    let (s, t) = app
        .call(
            Method::POST,
            "/api/v1/login",
            None,
            Some(json!({"username": "Alice", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    let token = t["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("ofc_"));
    let (s, me) = app
        .call(Method::GET, "/api/v1/me", Some(&token), None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(me["user"], "alice");
    assert_eq!(
        me["namespaces"][0],
        json!({"name": "alice", "role": "owner"})
    );
    assert!(
        !me["token"]["scopes"]
            .as_array()
            .unwrap()
            .contains(&json!("admin"))
    );
    // Only the hash is stored.
    let (_, list) = app
        .call(Method::GET, "/api/v1/tokens", Some(&token), None)
        .await;
    assert!(!list.to_string().contains(&token));
    let id = t["id"].as_i64().unwrap();
    let used = list
        .as_array()
        .or_else(|| list["tokens"].as_array())
        .unwrap()
        .iter()
        .find(|x| x["id"] == id)
        .unwrap()["last_used_at"]
        .clone();
    assert!(used.is_i64(), "a used token shows when: {list}");
    assert_eq!(
        app.call(
            Method::DELETE,
            &format!("/api/v1/tokens/{id}"),
            Some(&token),
            None
        )
        .await
        .0,
        204
    );
    let (s, e) = app
        .call(Method::GET, "/api/v1/me", Some(&token), None)
        .await;
    assert_eq!((s, e["code"].as_str().unwrap()), (401, "token_revoked"));
    // The limiter (limit 5 here). Clients send from different loopback addresses, as
    // different machines would.
    let from = |ip: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(ip))
            .build()
            .unwrap()
    };
    let send = |client: reqwest::Client,
                method: Method,
                path: &str,
                token: Option<String>,
                body: Option<Value>| {
        let req = Request::new(Some(client), method, app.url(path))
            .maybe_token(token.as_deref())
            .maybe_json(body);
        async move {
            let (status, v) = req.send_lenient().await;
            (status, v["code"].as_str().unwrap_or_default().to_owned())
        }
    };
    let login = |client: reqwest::Client, password: &str| {
        send(
            client,
            Method::POST,
            "/api/v1/login",
            None,
            Some(json!({"username": "alice", "password": password})),
        )
    };
    let attacker = from([127, 0, 0, 2]);
    let victim = from([127, 0, 0, 3]);
    for _ in 0..5 {
        assert_eq!(
            login(attacker.clone(), "wrong").await,
            (401, "invalid_credentials".to_owned())
        );
    }
    // The attacker's address is blocked, even with the right password…
    assert_eq!(
        login(attacker.clone(), "correct horse").await,
        (429, "too_many_auth_failures".to_owned())
    );
    // …but alice is not locked out: her own address logs in, and her token works from
    // anywhere, the attacker's address included.
    let (s, _) = login(victim.clone(), "correct horse").await;
    assert_eq!(s, 201);
    let me = |client: reqwest::Client, token: &str| {
        send(
            client,
            Method::GET,
            "/api/v1/me",
            Some(token.to_owned()),
            None,
        )
    };
    assert_eq!(me(attacker.clone(), &app.user.token).await.0, 200);

    // Invalid tokens are limited per address, apart from logins: a valid token from that
    // address still works, and so does a password login.
    let guesser = from([127, 0, 0, 4]);
    for _ in 0..5 {
        assert_eq!(
            me(guesser.clone(), "ofc_guess").await,
            (401, "invalid_token".to_owned())
        );
    }
    assert_eq!(
        me(guesser.clone(), "ofc_guess").await,
        (429, "too_many_auth_failures".to_owned())
    );
    assert_eq!(me(guesser.clone(), &app.user.token).await.0, 200);
    assert_eq!(login(guesser.clone(), "correct horse").await.0, 201);
    app.stop().await;
}

#[tokio::test]
async fn every_error_is_json_and_ops_endpoints_answer() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    for (m, p, status) in [
        (Method::GET, "/nope", 404),
        (Method::POST, "/api/v1/agents", 405),
        (Method::GET, "/api/v1/agents?limit=abc", 400),
        (Method::GET, "/api/v1/agents?limit=0", 400),
        (Method::GET, "/api/v1/agents?cursor=zz", 400),
        (Method::DELETE, "/api/v1/tokens/notanumber", 401),
        (Method::GET, "/api/v1/agents/a/b/versions/1.0.0", 404),
        (Method::GET, "/api/v1/agents/a/b/versions/x", 404),
    ] {
        let (s, e) = app.call(m.clone(), p, None, None).await;
        assert_eq!(s, status, "{m} {p}: {e}");
        assert!(
            e["code"].is_string() && e["message"].is_string(),
            "{m} {p}: {e}"
        );
    }
    let r = app
        .client
        .post(app.url("/api/v1/login"))
        .body("{")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["code"], "bad_request");
    assert_eq!(app.get("/healthz").await.0, 200);
    assert_eq!(app.get("/readyz").await.0, 200);
    let m = app.get_text("/metrics").await;
    assert!(
        m.contains("ofc_hub_http_requests_total{group=\"api\",status=\"4xx\"}"),
        "{m}"
    );
    assert!(m.contains("backend=\"sqlite\""));
    app.stop().await;
}

/// Issue 13, point 11: a download counts once per client and day (a script fetching a bundle
/// in a loop cannot pump the numbers that feed ranking); another client counts.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn downloads_count_once_per_client_and_day(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let bytes = b"bundle bytes for the download counter".to_vec();
    let m = bundle_manifest("alice/counted", "1.0.0", &bytes);
    assert_eq!(app.publish(&u.token, &u.key, &m, Some(&bytes)).await.0, 201);
    let path = "/api/v1/agents/alice/counted/versions/1.0.0/bundle";
    let get_from = |ip: [u8; 4]| {
        let url = app.url(path);
        async move {
            let c = reqwest::Client::builder()
                .local_address(std::net::IpAddr::from(ip))
                .build()
                .unwrap();
            let r = c.get(url).send().await.unwrap();
            assert_eq!(r.status(), 200);
            assert_eq!(r.bytes().await.unwrap().len(), 37);
        }
    };
    for _ in 0..5 {
        get_from([127, 0, 0, 1]).await;
    }
    let downloads = || async {
        let (s, v) = app.get("/api/v1/agents/alice/counted/versions/1.0.0").await;
        assert_eq!(s, 200, "{v}");
        v["downloads"].as_i64().unwrap()
    };
    assert_eq!(downloads().await, 1);
    get_from([127, 0, 0, 2]).await;
    assert_eq!(downloads().await, 2);
    app.stop().await;
}

/// A web log-in past the tenth open session of a user ends the oldest one: its cookie no
/// longer opens `/account`, and the API token it acted through is revoked.
#[tokio::test]
async fn web_log_ins_past_the_cap_end_the_oldest_session() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let cookie_of = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|c| c.starts_with(&format!("{name}=")))
            .and_then(|c| c.split(';').next().map(str::to_owned))
            .unwrap_or_else(|| panic!("no {name} cookie"))
    };
    let mut sessions = Vec::new();
    for _ in 0..11 {
        let form = http.get(app.url("/login")).send().await.unwrap();
        let login_cookie = cookie_of(&form, "ofc_login_csrf");
        let html = form.text().await.unwrap();
        let csrf = html
            .split(r#"name="csrf" value=""#)
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_owned();
        let r = http
            .post(app.url("/login"))
            .header("cookie", &login_cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("username=alice&password=correct+horse&csrf={csrf}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        sessions.push(cookie_of(&r, "ofc_session"));
    }
    let account = |cookie: String| {
        let http = http.clone();
        let url = app.url("/account");
        async move {
            http.get(url)
                .header("cookie", cookie)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(account(sessions[0].clone()).await, 303, "the oldest ended");
    for s in &sessions[1..] {
        assert_eq!(account(s.clone()).await, 200);
    }
    let (s, list) = app
        .call(Method::GET, "/api/v1/tokens", Some(&app.user.token), None)
        .await;
    assert_eq!(s, 200, "{list}");
    let live = list
        .as_array()
        .or_else(|| list["tokens"].as_array())
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "web session" && t["revoked_at"].is_null())
        .count();
    assert_eq!(live, 10, "{list}");
}
