//! Trusted publishing (issue 33, point 4) against a real OIDC issuer started by the test
//! (`ofc_test_kit::oidc::OidcIssuer`: an HTTP server on 127.0.0.1 with its own RSA and P-256
//! keys, serving discovery and a JWKS), on SQLite and PostgreSQL: a namespace owner trusts the
//! issuer and a subject pattern; valid RS256 and ES256 ID tokens are exchanged for a
//! publish-only token that publishes, the version and the log record the subject (checked by
//! `ofc-hub log verify`'s check and by aics-tlog from the tiles); every bad token is refused
//! with the check it failed; the minted token can do nothing but publish to its namespace,
//! lives 15 minutes, and dies with its trusted publisher. By default the hub's outbound address
//! policy refuses issuers on addresses that are not globally routable — named in the URL at
//! registration, or resolved to when the hub connects — so these tests turn on
//! `outbound_allow_private` (with `oidc_allow_http_loopback`) for the issuer on 127.0.0.1.

use hub_core::auth::{TOKEN_PREFIX, TrustedOrigin, generate_token, hash_token};
use hub_core::store::{NewExchange, now_ms};
use index_schema::tlog::Entry;
use ofc_test_kit::oidc::{OidcIssuer, Sign, now_secs};
use ofc_test_kit::{Backend, TestHub, remote_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const SUBJECT: &str = "repo:acme/coder:ref:refs/heads/main";

async fn exchange(app: &TestHub, namespace: &str, token: &str) -> (u16, Value) {
    app.call(
        Method::POST,
        "/api/v1/trusted-publishing/exchange",
        None,
        Some(json!({"namespace": namespace, "token": token})),
    )
    .await
}

/// A refusal: 401 `oidc_token_refused` naming `check` in its message.
fn assert_refused(what: &str, (s, b): (u16, Value), check: &str) {
    assert_eq!(s, 401, "{what}: {b}");
    assert_eq!(b["code"], "oidc_token_refused", "{what}: {b}");
    let m = b["message"].as_str().unwrap();
    assert!(
        m.starts_with(&format!("trusted publishing refused ({check}): ")),
        "{what}: {m}"
    );
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn ci_tokens_are_exchanged_checked_and_publish_only(#[case] backend: Backend) {
    let issuer = OidcIssuer::start().await;
    let app = TestHub::in_process_with(backend, |c| {
        c.oidc_allow_http_loopback = true;
        c.outbound_allow_private = true;
    })
    .await;
    let u = app.user.clone();
    let trusted_path = "/api/v1/namespaces/alice/trusted-publishers";

    // Registering: owners only, patterns anchored with literal text first.
    let (s, b) = app
        .call(
            Method::POST,
            trusted_path,
            Some(&u.token),
            Some(json!({"issuer": issuer.url, "subject": "*"})),
        )
        .await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["code"], "invalid_trusted_publisher", "{b}");
    let (s, b) = app
        .call(
            Method::POST,
            trusted_path,
            Some(&u.token),
            Some(json!({"issuer": issuer.url, "subject": "repo:acme/coder:ref:refs/heads/*"})),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["audience"], "ofc");
    assert_eq!(b["added_by"], "alice");
    let publisher_id = b["id"].as_i64().unwrap();
    let bob = app.new_user("bob", false).await;
    let (s, b) = app
        .call(
            Method::POST,
            trusted_path,
            Some(&bob.token),
            Some(json!({"issuer": issuer.url, "subject": "repo:bob/x:*"})),
        )
        .await;
    assert_eq!(s, 403, "a non-member registers nothing: {b}");
    let (s, b) = app
        .call(Method::GET, trusted_path, Some(&u.token), None)
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["trusted_publishers"].as_array().unwrap().len(), 1, "{b}");

    // Every bad token, refused with the check it failed.
    let failures_before = app.state.core.counters.auth_failures();
    let now = now_secs();
    let claims = |f: &dyn Fn(&mut Value)| {
        let mut c = issuer.claims("ofc", SUBJECT);
        f(&mut c);
        c
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong audience",
            issuer.token(Sign::Rs256, issuer.claims("another-hub", SUBJECT)),
            "aud",
        ),
        (
            "expired",
            issuer.token(
                Sign::Rs256,
                claims(&|c| {
                    c["iat"] = json!(now - 600);
                    c["nbf"] = json!(now - 600);
                    c["exp"] = json!(now - 120);
                }),
            ),
            "exp",
        ),
        (
            "not yet valid",
            issuer.token(Sign::Rs256, claims(&|c| c["nbf"] = json!(now + 600))),
            "nbf",
        ),
        (
            "issued in the future",
            issuer.token(
                Sign::Rs256,
                claims(&|c| {
                    c["iat"] = json!(now + 600);
                    c["exp"] = json!(now + 900);
                }),
            ),
            "iat",
        ),
        (
            "wrong subject",
            issuer.token(
                Sign::Rs256,
                issuer.claims("ofc", "repo:evil/coder:ref:refs/heads/main"),
            ),
            "sub",
        ),
        (
            "subject outside the pattern's branch",
            issuer.token(
                Sign::Rs256,
                issuer.claims("ofc", "repo:acme/coder:ref:refs/tags/v1"),
            ),
            "sub",
        ),
        (
            "unknown kid",
            issuer.token(Sign::Rs256Kid("rotated-away".into()), claims(&|_| {})),
            "kid",
        ),
        ("alg none", issuer.token(Sign::None, claims(&|_| {})), "alg"),
        (
            "HS256 keyed with the public key",
            issuer.token(Sign::Hs256WithPublicKey, claims(&|_| {})),
            "alg",
        ),
        (
            "untrusted issuer",
            issuer.token(
                Sign::Rs256,
                claims(&|c| c["iss"] = json!("https://issuer.invalid")),
            ),
            "iss",
        ),
        ("not a JWT", "not-a-token".to_string(), "malformed"),
    ];
    let n_cases = cases.len() as u64;
    for (what, token, check) in cases {
        assert_refused(what, exchange(&app, "alice", &token).await, check);
    }
    // A valid token with its payload swapped: the signature no longer holds.
    let good = issuer.token(Sign::Rs256, claims(&|_| {}));
    let other = issuer.token(
        Sign::Rs256,
        issuer.claims("ofc", "repo:acme/coder:ref:refs/heads/dev"),
    );
    let forged: Vec<&str> = good.split('.').collect();
    let payload = other.split('.').nth(1).unwrap();
    let forged = format!("{}.{payload}.{}", forged[0], forged[2]);
    assert_refused(
        "forged payload",
        exchange(&app, "alice", &forged).await,
        "signature",
    );
    // Each refusal counted (and logged) as a failed authentication.
    assert_eq!(
        app.state.core.counters.auth_failures() - failures_before,
        n_cases + 1
    );

    // A valid RS256 token: a publish-only token for 15 minutes.
    let (s, x) = exchange(&app, "alice", &good).await;
    assert_eq!(s, 201, "{x}");
    let minted = x["token"].as_str().unwrap().to_string();
    assert!(minted.starts_with("ofc_"));
    assert_eq!(x["subject"], SUBJECT);
    assert_eq!(x["issuer"], issuer.url.as_str());
    let alice_id = app.store().user_by_name("alice").await.unwrap().unwrap().id;
    let row = app
        .store()
        .list_tokens(alice_id)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.trusted_subject.as_deref() == Some(SUBJECT))
        .unwrap();
    assert_eq!(row.expires_at, Some(row.created_at + 15 * 60 * 1000));
    assert_eq!(row.expires_at.unwrap(), x["expires_at"].as_i64().unwrap());
    assert_eq!(row.namespaces, "alice");
    // The same ID token again: a replay.
    assert_refused("replayed", exchange(&app, "alice", &good).await, "replay");
    // ES256 works as well (a new token: its own jti).
    let (s, b) = exchange(&app, "alice", &issuer.token(Sign::Es256, claims(&|_| {}))).await;
    assert_eq!(s, 201, "{b}");
    // A token without jti is remembered by its hash.
    let no_jti = issuer.token(
        Sign::Rs256,
        claims(&|c| {
            c.as_object_mut().unwrap().remove("jti");
        }),
    );
    assert_eq!(exchange(&app, "alice", &no_jti).await.0, 201);
    assert_refused(
        "replayed without jti",
        exchange(&app, "alice", &no_jti).await,
        "replay",
    );

    // It publishes, and the version and the log say how.
    let (s, b) = app
        .publish(
            &minted,
            &u.key,
            &remote_manifest("alice/coder", "1.0.0"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (_, v) = app.get("/api/v1/agents/alice/coder/versions/1.0.0").await;
    assert_eq!(
        v["trusted_publishing"],
        json!({"issuer": issuer.url, "subject": SUBJECT}),
        "{v}"
    );
    let (_, log) = app.get("/api/v1/log/publishers/alice").await;
    let entries = log["entries"].as_array().unwrap();
    let (publish, trusted) = (&entries[entries.len() - 2], &entries[entries.len() - 1]);
    assert!(
        publish["entry"]
            .as_str()
            .unwrap()
            .starts_with("ofc-log/v1 publish alice/coder 1.0.0 "),
        "{publish}"
    );
    assert_eq!(
        trusted["index"].as_u64().unwrap(),
        publish["index"].as_u64().unwrap() + 1
    );
    match Entry::parse(format!("{}\n", trusted["entry"].as_str().unwrap()).as_bytes()).unwrap() {
        Entry::TrustedPublish {
            agent,
            version,
            manifest_digest,
            issuer: iss,
            subject,
        } => {
            assert_eq!(agent.to_string(), "alice/coder");
            assert_eq!(version, "1.0.0");
            assert_eq!(
                manifest_digest.to_string(),
                v["manifest_digest"].as_str().unwrap()
            );
            assert_eq!(iss, issuer.url);
            assert_eq!(subject, SUBJECT);
        }
        other => panic!("not a trusted-publish entry: {other:?}"),
    }
    let report = app.store().log_verify().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    // The independent verifier proves the entry from the tiles.
    let bin = crate::tlog::aics_tlog();
    let (ok, r) = crate::tlog::aics_proves(
        &bin,
        &app,
        trusted["entry"].as_str().unwrap(),
        trusted["index"].as_u64().unwrap(),
    )
    .await;
    assert!(ok, "{r}");

    // Nothing but publishing to alice: not yank, deprecate, unpublish, keys, members, tokens,
    // namespaces, trusted publishers — nor publishing elsewhere, even where its user may.
    let (s, b) = app
        .call(
            Method::POST,
            "/api/v1/namespaces",
            Some(&u.token),
            Some(json!({"name": "team"})),
        )
        .await;
    assert_eq!(s, 201, "alice creates team with her own token: {b}");
    let (s, b) = app
        .call(
            Method::POST,
            "/api/v1/namespaces/team/keys",
            Some(&u.token),
            Some(json!({"public_key": u.key.public_key().to_string()})),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let other_key = index_schema::envelope::SecretKey::from_seed(&[42; 32]);
    let refused: Vec<(&str, Method, String, Option<Value>)> = vec![
        (
            "yank",
            Method::PUT,
            "/api/v1/agents/alice/coder/versions/1.0.0/yank".into(),
            Some(json!({})),
        ),
        (
            "deprecate",
            Method::PUT,
            "/api/v1/agents/alice/coder/versions/1.0.0/deprecation".into(),
            Some(json!({"message": "no"})),
        ),
        (
            "unpublish",
            Method::POST,
            "/api/v1/agents/alice/coder/versions/1.0.0/unpublish".into(),
            None,
        ),
        (
            "create namespace",
            Method::POST,
            "/api/v1/namespaces".into(),
            Some(json!({"name": "squat"})),
        ),
        (
            "add key",
            Method::POST,
            "/api/v1/namespaces/alice/keys".into(),
            Some(json!({"public_key": other_key.public_key().to_string()})),
        ),
        (
            "add member",
            Method::PUT,
            "/api/v1/namespaces/alice/members/bob".into(),
            Some(json!({"role": "owner"})),
        ),
        ("list tokens", Method::GET, "/api/v1/tokens".into(), None),
        (
            "create token",
            Method::POST,
            "/api/v1/tokens".into(),
            Some(json!({"name": "x", "scopes": ["publish-new"], "namespaces": ["alice"]})),
        ),
        (
            "add trusted publisher",
            Method::POST,
            trusted_path.into(),
            Some(json!({"issuer": issuer.url, "subject": "repo:x/y:*"})),
        ),
        (
            "list trusted publishers",
            Method::GET,
            trusted_path.into(),
            None,
        ),
    ];
    for (what, method, path, body) in refused {
        let (s, b) = app.call(method, &path, Some(&minted), body).await;
        assert_eq!(s, 403, "{what}: {b}");
        assert!(
            b["code"] == "forbidden_scope" || b["code"] == "forbidden_role",
            "{what}: {b}"
        );
    }
    let (s, b) = app
        .publish(
            &minted,
            &u.key,
            &remote_manifest("team/coder", "1.0.0"),
            None,
        )
        .await;
    assert_eq!(s, 403, "publishing to another namespace: {b}");
    assert_eq!(b["code"], "forbidden_namespace", "{b}");
    let (s, b) = app
        .publish(
            &minted,
            &bob.key,
            &remote_manifest("bob/coder", "1.0.0"),
            None,
        )
        .await;
    assert_eq!(s, 403, "publishing to bob's namespace: {b}");
    // A second version of its own namespace still goes.
    let (s, b) = app
        .publish(
            &minted,
            &u.key,
            &remote_manifest("alice/coder", "1.0.1"),
            None,
        )
        .await;
    assert_eq!(s, 201, "{b}");

    // Past its 15 minutes a minted token is refused as any expired token (the hub has no
    // clock to move: one is minted as an exchange does, already expired).
    let publisher = app
        .store()
        .trusted_publishers(app.store().namespace("alice").await.unwrap().unwrap().id)
        .await
        .unwrap()
        .remove(0);
    let stale = generate_token(TOKEN_PREFIX).expose().to_string();
    app.store()
        .record_exchange(&NewExchange {
            publisher: &publisher,
            replay_key: "stale-test-key",
            id_token_expires_at: now_ms() + 60_000,
            name: "trusted publishing: stale",
            token_hash: &hash_token(&stale),
            namespace: "alice",
            expires_at: now_ms() - 1,
            origin: &TrustedOrigin {
                issuer: issuer.url.clone(),
                subject: SUBJECT.into(),
            },
        })
        .await
        .unwrap()
        .unwrap();
    let (s, b) = app
        .publish(
            &stale,
            &u.key,
            &remote_manifest("alice/coder", "1.0.2"),
            None,
        )
        .await;
    assert_eq!(s, 401, "{b}");
    assert_eq!(b["code"], "token_expired", "{b}");

    // Removing the trusted publisher revokes the live tokens minted for it.
    let (s, b) = app
        .call(
            Method::DELETE,
            &format!("{trusted_path}/{publisher_id}"),
            Some(&u.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{b}");
    let (s, b) = app
        .publish(
            &minted,
            &u.key,
            &remote_manifest("alice/coder", "1.0.3"),
            None,
        )
        .await;
    assert_eq!(s, 401, "{b}");
    assert_eq!(b["code"], "token_revoked", "{b}");
    // And its issuer's tokens are no longer taken.
    assert_refused(
        "after removal",
        exchange(&app, "alice", &issuer.token(Sign::Rs256, claims(&|_| {}))).await,
        "iss",
    );
    let report = app.store().log_verify().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Plain-http issuers are refused unless the hub allows them on 127.0.0.1.
#[tokio::test(flavor = "multi_thread")]
async fn plain_http_issuers_need_the_loopback_setting() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let (s, b) = app
        .call(
            Method::POST,
            "/api/v1/namespaces/alice/trusted-publishers",
            Some(&app.user.token),
            Some(json!({"issuer": "http://127.0.0.1:9", "subject": "repo:a/b:*"})),
        )
        .await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["code"], "invalid_trusted_publisher", "{b}");
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("oidc_allow_http_loopback"),
        "{b}"
    );
}

/// A TCP listener on 127.0.0.1 counting the connections it accepts (and dropping them): the
/// witness of whether the hub connected.
async fn counting_listener() -> (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let n = accepted.clone();
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            n.fetch_add(1, Ordering::SeqCst);
            drop(tcp);
        }
    });
    (port, accepted, task)
}

async fn add_issuer(app: &TestHub, issuer: &str) -> (u16, Value) {
    app.call(
        Method::POST,
        "/api/v1/namespaces/alice/trusted-publishers",
        Some(&app.user.token),
        Some(json!({"issuer": issuer, "subject": "repo:acme/coder:*"})),
    )
    .await
}

/// The outbound address policy (on by default): an issuer URL naming a loopback, private or
/// link-local address is refused at registration, naming the address and the policy; an
/// issuer whose name resolves to 127.0.0.1 (`localhost`) registers, but the exchange that
/// would fetch its keys is refused without a connection (the listener behind it sees none);
/// with `outbound_allow_private` the same exchange does connect.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn issuers_on_private_addresses_are_refused_unless_allowed(#[case] backend: Backend) {
    let issuer = OidcIssuer::start().await;
    let app = TestHub::in_process(backend).await;
    // The real issuer's address, over https: named in the URL, refused at registration.
    let port = issuer.url.rsplit(':').next().unwrap();
    for (url, says) in [
        (format!("https://127.0.0.1:{port}"), "loopback"),
        ("https://10.1.2.3".to_string(), "private"),
        (
            "https://[::ffff:169.254.169.254]/".to_string(),
            "link-local",
        ),
    ] {
        let (s, b) = add_issuer(&app, &url).await;
        assert_eq!(s, 400, "{url}: {b}");
        assert_eq!(b["code"], "invalid_trusted_publisher", "{b}");
        let m = b["message"].as_str().unwrap();
        assert!(
            m.contains(&format!("`{url}`"))
                && m.contains(says)
                && m.contains("outbound address policy")
                && m.contains("outbound_allow_private = true"),
            "{url}: {m}"
        );
    }
    // A name resolving to 127.0.0.1: refused when the hub would connect.
    let (lport, accepted, _task) = counting_listener().await;
    let named = format!("https://localhost:{lport}");
    let (s, b) = add_issuer(&app, &named).await;
    assert_eq!(s, 201, "{b}");
    let mut claims = issuer.claims("ofc", SUBJECT);
    claims["iss"] = json!(named);
    let token = issuer.token(Sign::Rs256, claims.clone());
    let (s, b) = exchange(&app, "alice", &token).await;
    assert_refused("localhost issuer", (s, b.clone()), "issuer_address");
    let m = b["message"].as_str().unwrap();
    assert!(
        m.contains(&format!(
            "{named}/.well-known/openid-configuration: `localhost` resolves"
        )) && m.contains("127.0.0.1")
            && m.contains("loopback")
            && m.contains("outbound address policy"),
        "{m}"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "the hub connected");

    // Allowed: the same issuer is asked (the listener is no issuer, so the keys are
    // unavailable — but the hub did connect).
    let open = TestHub::in_process_with(backend, |c| c.outbound_allow_private = true).await;
    let (s, b) = add_issuer(&open, &named).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = add_issuer(&open, &format!("https://127.0.0.1:{port}")).await;
    assert_eq!(s, 201, "{b}");
    claims["jti"] = json!(uuid::Uuid::new_v4().to_string());
    let (s, b) = exchange(&open, "alice", &issuer.token(Sign::Rs256, claims)).await;
    assert_eq!(s, 503, "{b}");
    assert_eq!(b["code"], "oidc_issuer_unavailable", "{b}");
    assert!(
        accepted.load(Ordering::SeqCst) >= 1,
        "the hub never connected"
    );
}

/// `oidc_allow_http_loopback` without `outbound_allow_private` contradicts the policy (the
/// loopback issuer it admits would be refused): the hub does not start.
#[tokio::test(flavor = "multi_thread")]
async fn http_loopback_issuers_need_private_addresses_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ofc_test_kit::test_config(&dir, None);
    cfg.oidc_allow_http_loopback = true;
    let e = hub_server::build_state(cfg).await.unwrap_err().to_string();
    assert!(
        e.contains("oidc_allow_http_loopback") && e.contains("outbound_allow_private = true"),
        "{e}"
    );
}
