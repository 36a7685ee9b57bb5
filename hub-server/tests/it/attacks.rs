//! The attacks of the third hardening pass on the hub, each bounded in count and time and run
//! against a hub on 127.0.0.1: what the attack did before, what it gets now.

use std::time::{Duration, Instant};

use ofc_test_kit::{Backend, TestHub};
use serde_json::json;

/// A client whose connections come from `ip` (a loopback address of its own, as another
/// machine would be).
fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(ip))
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// Of 300 answers to wrong passwords: at most 30 checked (401), the others refused (429).
fn assert_at_most_30_checked(statuses: Vec<u16>) {
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert!(
        checked <= 30,
        "{checked} passwords checked past the limit of 30"
    );
    assert_eq!(checked + refused, 300, "{statuses:?}");
}

/// 300 concurrent wrong passwords from one address, limit 30: the limiter counted failures
/// after the slow hash and checked before it, so every one of them was checked (300 × 401).
/// Attempts are reserved before the hash now: at most 30 are checked, the rest get 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_wrong_passwords_get_no_more_checks_than_the_limit() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| c.auth_failure_limit = 30).await;

    // The API.
    let attacker = client_from([127, 0, 0, 2]);
    let url = app.url("/api/v1/login");
    let tries = (0..300).map(|i| {
        let (c, url) = (attacker.clone(), url.clone());
        async move {
            c.post(url)
                .json(&json!({"username": "alice", "password": format!("guess {i}")}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    });
    assert_at_most_30_checked(futures::future::join_all(tries).await);

    // The web form, from another address (the limiter keys on the address).
    let web = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 3]))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let form = web.get(app.url("/login")).send().await.unwrap();
    let cookie = form
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|v| v.starts_with("ofc_login_csrf="))
        .expect("a log-in CSRF cookie");
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let html = form.text().await.unwrap();
    let csrf = html
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a csrf field")
        .to_owned();
    let tries = (0..300).map(|i| {
        let (c, url, cookie, csrf) = (web.clone(), app.url("/login"), cookie.clone(), csrf.clone());
        async move {
            c.post(url)
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!("username=alice&password=guess{i}&csrf={csrf}"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    });
    assert_at_most_30_checked(futures::future::join_all(tries).await);
    app.stop().await;
}

/// A log-in naming no account answered at once (0.7 ms against 27 ms for an account with a
/// wrong password), telling an attacker which names exist. Both check a hash now.
#[tokio::test]
async fn login_time_does_not_tell_which_users_exist() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let client = client_from([127, 0, 0, 4]);
    let time = |user: &'static str| {
        let (c, url) = (client.clone(), app.url("/api/v1/login"));
        async move {
            let started = Instant::now();
            let s = c
                .post(url)
                .json(&json!({"username": user, "password": "not it"}))
                .send()
                .await
                .unwrap()
                .status();
            assert_eq!(s, 401);
            started.elapsed()
        }
    };
    // Medians of 7 each, interleaved so that load on the machine hits both alike.
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        known.push(time("alice").await);
        unknown.push(time("nobody-here").await);
    }
    known.sort();
    unknown.sort();
    let (k, u) = (known[3], unknown[3]);
    assert!(
        u * 3 >= k,
        "a log-in of an unknown user takes {u:?}, of a known one {k:?}: the time tells"
    );
    app.stop().await;
}

/// A one-day token (every web session's) minted a token that never expired: "narrower than
/// itself" covered scopes and namespaces, not time. A token now cannot outlive its maker.
#[tokio::test]
async fn a_token_cannot_mint_one_that_outlives_it() {
    use hub_core::auth::Scope;
    let app = TestHub::in_process(Backend::Sqlite).await;
    let day = app
        .token(
            "alice",
            &[Scope::ManageTokens, Scope::Yank],
            &["*"],
            Some(1),
        )
        .await;
    let week = app
        .token(
            "alice",
            &[Scope::ManageTokens, Scope::Yank],
            &["*"],
            Some(7),
        )
        .await;
    let create = |token: String, days: Option<u32>| {
        let app = &app;
        async move {
            let mut body = json!({"name": "child", "scopes": ["yank"], "namespaces": ["*"]});
            if let Some(d) = days {
                body["expires_in_days"] = json!(d);
            }
            let (s, v) = app
                .call(
                    reqwest::Method::POST,
                    "/api/v1/tokens",
                    Some(&token),
                    Some(body),
                )
                .await;
            (s, v["code"].as_str().unwrap_or_default().to_owned(), v)
        }
    };
    for (token, days, expected) in [
        (&day, None, 403),
        (&day, Some(1), 403),
        (&day, Some(3650), 403),
        (&week, None, 403),
        (&week, Some(8), 403),
        (&week, Some(6), 201),
        (&app.user.token, None, 201),
    ] {
        let (s, code, v) = create(token.clone(), days).await;
        assert_eq!(s, expected, "{days:?}: {v}");
        if s == 403 {
            assert_eq!(code, "forbidden_expiry", "{v}");
            assert!(
                v["message"].as_str().unwrap().contains("cannot outlive"),
                "{v}"
            );
        }
    }
    // The hint names what would be accepted.
    let (_, _, v) = create(week.clone(), None).await;
    assert!(v["message"].as_str().unwrap().contains("at most 6"), "{v}");
    app.stop().await;
}

/// Per-namespace quotas (bytes, manifests) were one new namespace away: any user may create
/// namespaces. A user may create `max_namespaces_per_user` now, however many requests race.
#[rstest::rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_creates_at_most_max_namespaces_per_user(#[case] backend: Backend) {
    let app = TestHub::in_process_with(backend, |c| c.max_namespaces_per_user = 4).await;
    let token = app.user.token.clone();
    let tries = (0..12).map(|i| {
        let (app, token) = (&app, token.clone());
        async move {
            let (s, v) = app
                .call(
                    reqwest::Method::POST,
                    "/api/v1/namespaces",
                    Some(&token),
                    Some(json!({"name": format!("alice-extra-{i}")})),
                )
                .await;
            (s, v["code"].as_str().unwrap_or_default().to_owned())
        }
    });
    let answers = futures::future::join_all(tries).await;
    // `alice` itself was created for her: three more.
    let created = answers.iter().filter(|(s, _)| *s == 201).count();
    assert_eq!(created, 3, "{answers:?}");
    assert!(
        answers
            .iter()
            .filter(|(s, _)| *s != 201)
            .all(|(s, c)| *s == 403 && c == "quota_exceeded"),
        "{answers:?}"
    );
    app.stop().await;
}

/// JSON answers and 404s lacked `X-Content-Type-Options: nosniff` (only the pages had it).
/// Every answer has it now.
#[tokio::test]
async fn every_answer_says_nosniff() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    for path in [
        "/api/v1/agents",
        "/api/v1/agents/nobody/nothing",
        "/no/such/route",
        "/v2/",
        "/v2/alice/none/manifests/latest",
        "/log/checkpoint",
        "/healthz",
        "/openapi.json",
        "/",
    ] {
        let r = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(
            r.headers()
                .get("x-content-type-options")
                .map(|v| v.to_str().unwrap().to_owned()),
            Some("nosniff".to_owned()),
            "{path} ({})",
            r.status()
        );
    }
    app.stop().await;
}

/// Yank reasons (and deprecation messages) took Unicode bidirectional overrides, which make a
/// terminal show text other than what it says. Refused now, as in manifests.
#[tokio::test]
async fn yank_reasons_refuse_bidi_overrides() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let u = app.user.clone();
    let m = ofc_test_kit::remote_manifest("alice/bidi", "1.0.0");
    assert_eq!(app.publish(&u.token, &u.key, &m, None).await.0, 201);
    for (what, body) in [
        ("yank", json!({"reason": "fixed in \u{202e}1.0.1"})),
        ("yank", json!({"reason": "isolate \u{2067}x"})),
    ] {
        let (s, v) = app.yank(&u.token, "alice/bidi", "1.0.0", body).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (400, Some("invalid_message")),
            "{what}: {v}"
        );
        assert!(
            v["message"].as_str().unwrap().contains("bidirectional"),
            "{v}"
        );
    }
    let (s, v) = app
        .deprecate(&u.token, "alice/bidi", "1.0.0", "use \u{202d}other")
        .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (400, Some("invalid_message")),
        "{v}"
    );
    let (s, _) = app
        .yank(
            &u.token,
            "alice/bidi",
            "1.0.0",
            json!({"reason": "plain words"}),
        )
        .await;
    assert_eq!(s, 204);
    app.stop().await;
}

/// 320 stalled anonymous bundle downloads held the hub at its connection cap for 90 s
/// (`/healthz` 503): an answer the client takes nothing of is cut after `write_timeout_secs`
/// now, and its connection (and open file) given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_downloads_give_their_connections_back() {
    use tokio::io::AsyncWriteExt as _;
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.max_connections = 24;
        c.write_timeout_secs = 2;
        c.max_bundle_bytes = 16 << 20;
        c.max_inline_bundle_bytes = 16 << 20;
    })
    .await;
    let u = app.user.clone();
    let bytes = vec![7u8; 8 << 20];
    let m = ofc_test_kit::bundle_manifest("alice/big", "1.0.0", &bytes);
    let (s, b) = app.publish(&u.token, &u.key, &m, Some(&bytes)).await;
    assert_eq!(s, 201, "{b}");
    let addr: std::net::SocketAddr = app.url.trim_start_matches("http://").parse().unwrap();
    // Every connection the hub has, each a download nobody reads.
    let mut stalled = Vec::new();
    for _ in 0..24 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut tcp = socket.connect(addr).await.unwrap();
        tcp.write_all(
            b"GET /api/v1/agents/alice/big/versions/1.0.0/bundle HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await
        .unwrap();
        stalled.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A new connection each time (a pooled one would be one the hub holds already).
    let health = || async {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap()
            .get(app.url("/healthz"))
            .send()
            .await
            .map(|r| r.status().as_u16())
    };
    // Shed: a 503 written at once (which the client may also see as a broken exchange).
    assert_ne!(
        health().await.ok(),
        Some(200),
        "the downloads hold every connection"
    );
    // Cut after the write timeout: the hub answers again, with the stalled clients still there.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if health().await.is_ok_and(|s| s == 200) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "stalled downloads still hold the hub"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    drop(stalled);
    app.stop().await;
}
