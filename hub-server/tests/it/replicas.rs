//! Several real `ofc-hub serve` processes, each with its own data dir, on one real PostgreSQL
//! (`ofc_test_kit::Replicas`): one log key, one log, one cosigner, one failure limiter, and
//! every change seen by every replica at once.

use std::time::{Duration, Instant};

use index_schema::envelope::sign_manifest;
use index_schema::tlog::{LogVerifier, WitnessVerifier};
use ofc_test_kit::{
    HubProcess, ProcessOptions, Publisher, Replicas, WitnessProcess, remote_manifest,
};
use serde_json::{Value, json};

pub(crate) fn get_json(hub: &HubProcess, path: &str) -> Value {
    let (s, v) = hub.api(reqwest::Method::GET, path, None, None);
    assert_eq!(s, 200, "{path}: {v}");
    v
}

/// Publishes `name@version` (a remote agent) through `hub`; the answer's status and body.
pub(crate) fn publish(hub: &HubProcess, p: &Publisher, name: &str, version: &str) -> (u16, Value) {
    let env = sign_manifest(&remote_manifest(name, version), &p.key);
    hub.api(
        reqwest::Method::PUT,
        &format!("/api/v1/agents/{name}/versions/{version}"),
        Some(&p.token),
        Some(json!({ "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap() })),
    )
}

#[test]
fn replicas_sign_one_log_with_one_key_and_a_replica_with_another_key_refuses_to_start() {
    let r = Replicas::start(2, "");
    let p = r[0].new_user("alice");
    let (s, v) = publish(&r[1], &p, "alice/one", "1.0.0");
    assert_eq!(s, 201, "{v}");
    let a = get_json(&r[0], "/api/v1/log");
    let b = get_json(&r[1], "/api/v1/log");
    assert_eq!(a["key"], b["key"]);
    // The same tree signed by the same key: the same checkpoint, whichever replica signs it.
    assert_eq!(a["checkpoint"], b["checkpoint"]);
    let log = LogVerifier::parse(a["key"].as_str().unwrap()).unwrap();
    let cp = log
        .verify_checkpoint(b["checkpoint"].as_str().unwrap())
        .unwrap();
    assert_eq!(cp.size, 2, "alice's key and her version");

    // A replica without the key file (with the hub's blobs): it must not make a key of its own.
    let lone = HubProcess::start(
        ProcessOptions::default()
            .database_url(r.database_url())
            .hub_toml(&format!(
                "blob_dir = {:?}\n",
                r.blob_dir().display().to_string()
            ))
            .stopped(),
    );
    let err = lone.refused_start();
    assert!(
        err.contains("this hub has no log key")
            && err.contains(a["key"].as_str().unwrap())
            && err.contains("log_key_file"),
        "{err}"
    );
    assert!(!lone.data_dir().join("log-key").exists());

    // A replica with another key (as a data dir of another hub has): refused, both keys named.
    let other = HubProcess::start(ProcessOptions::new(ofc_test_kit::Backend::Sqlite).stopped());
    let out = other.run(&["log", "key"]);
    assert!(out.status.success(), "{out:?}");
    let other_key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let stranger = r.stopped_replica_with(&format!(
        "log_key_file = {:?}\n",
        other.data_dir().join("log-key").display().to_string()
    ));
    let err = stranger.refused_start();
    assert!(
        err.contains(&other_key)
            && err.contains(a["key"].as_str().unwrap())
            && err.contains("is not the key of this database's log"),
        "{err}"
    );
}

#[test]
fn replicas_migrating_one_database_at_once_all_succeed() {
    let db = ofc_test_kit::PgDatabase::create_blocking();
    let hubs: Vec<HubProcess> = (0..3)
        .map(|_| HubProcess::start(ProcessOptions::default().database_url(&db.url).stopped()))
        .collect();
    // Three replicas migrate the new database at the same moment: one migrates under the
    // lock, the others wait and find nothing left to do (without the lock two would create the
    // same tables and one would fail).
    let runs: Vec<_> = hubs
        .iter()
        .map(|h| {
            let mut c = h.command();
            c.arg("migrate")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let count: i64 = ofc_test_kit::on_own_runtime({
        let url = db.url.clone();
        async move {
            use sqlx::Connection as _;
            let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
                .fetch_one(&mut c)
                .await
                .unwrap()
        }
    });
    let known = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../migrations/postgres"
    ))
    .unwrap()
    .count();
    assert_eq!(count as usize, known);
}

#[test]
fn a_replica_older_than_the_schema_refuses_to_start_naming_both_versions() {
    let r = Replicas::start(1, "");
    // A newer ofc-hub migrated the database past what this one knows.
    ofc_test_kit::on_own_runtime({
        let url = r.database_url().to_string();
        async move {
            use sqlx::Connection as _;
            let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
                 execution_time) VALUES (9999, 'from the future', TRUE, '\\x00'::bytea, 1)",
            )
            .execute(&mut c)
            .await
            .unwrap();
        }
    });
    let known = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../migrations/postgres"
    ))
    .unwrap()
    .filter_map(|e| {
        let name = e.unwrap().file_name().into_string().unwrap();
        name.split('_').next().unwrap().parse::<u32>().ok()
    })
    .max()
    .unwrap();
    let old = r.stopped_replica();
    let err = old.refused_start();
    assert!(
        err.contains("the database's schema is at migration 9999 (from the future)")
            && err.contains(&format!(
                "newer than this ofc-hub knows (migration {known},"
            )),
        "{err}"
    );
    // The running replica is not disturbed, and `ofc-hub migrate` refuses the same way.
    let out = old.run(&["migrate"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("migration 9999"),
        "{out:?}"
    );
    get_json(&r[0], "/readyz");
}

/// One `add-checkpoint` a recording proxy passed to the witness: the checkpoint's size and
/// root line, and the witness's answer.
#[derive(Debug, Clone)]
struct Submission {
    size: u64,
    root: String,
    status: u16,
}

/// A proxy in front of a witness that records every submission it passes on.
struct WitnessTap {
    url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Submission>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl WitnessTap {
    fn start(witness: &str) -> WitnessTap {
        use axum::body::Bytes;
        use axum::extract::State;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let target = format!("{witness}/add-checkpoint");
        let record = seen.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                type Tap = (
                    String,
                    reqwest::Client,
                    std::sync::Arc<std::sync::Mutex<Vec<Submission>>>,
                );
                async fn pass(
                    State((target, client, seen)): State<Tap>,
                    body: Bytes,
                ) -> (axum::http::StatusCode, String) {
                    let text = String::from_utf8_lossy(&body).to_string();
                    // `old N`, proof lines, a blank line, then the checkpoint: origin, size, root.
                    let cp: Vec<&str> = text.split("\n\n").nth(1).unwrap_or("").lines().collect();
                    let resp = client
                        .post(&target)
                        .header("content-type", "text/plain; charset=utf-8")
                        .body(body)
                        .send()
                        .await
                        .unwrap();
                    let status = resp.status();
                    seen.lock().unwrap().push(Submission {
                        size: cp.get(1).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX),
                        root: cp.get(2).unwrap_or(&"").to_string(),
                        status: status.as_u16(),
                    });
                    (
                        axum::http::StatusCode::from_u16(status.as_u16()).unwrap(),
                        resp.text().await.unwrap(),
                    )
                }
                let app = axum::Router::new()
                    .route("/add-checkpoint", axum::routing::post(pass))
                    .with_state((target, reqwest::Client::new(), record));
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        WitnessTap {
            url: format!("http://{addr}"),
            seen,
            _stop: stop,
        }
    }

    fn seen(&self) -> Vec<Submission> {
        self.seen.lock().unwrap().clone()
    }
}

/// Polls `/log/checkpoint` of `hub` until it is cosigned by `witness` over at least `size`
/// entries (bounded: 60 s).
fn wait_cosigned(hub: &HubProcess, log: &LogVerifier, witness: &WitnessVerifier, size: u64) {
    let start = Instant::now();
    loop {
        let note = String::from_utf8(hub.get_bytes("/log/checkpoint")).unwrap();
        let (cp, sigs) = log
            .verify_cosigned(&note, std::slice::from_ref(witness))
            .unwrap();
        if cp.size >= size && !sigs.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{}: no cosigned checkpoint of size {size} within 60 s: {note}\n{}",
            hub.url,
            hub.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn is_cosigner(hub: &HubProcess) -> bool {
    let text = String::from_utf8(hub.get_bytes("/metrics")).unwrap();
    text.lines().any(|l| l == "ofc_hub_cosigner 1")
}

#[test]
fn one_replica_at_a_time_submits_heads_to_the_witnesses_and_another_takes_over_when_it_dies() {
    let mut r = Replicas::new("");
    let log_key = r.log_key();
    let witness = WitnessProcess::start("witness.test/w1", &[&log_key]);
    let tap = WitnessTap::start(&witness.url);
    r.set_hub_toml(&format!(
        "log_witness_refresh_secs = 3600\n[[log_witnesses]]\nurl = \"{}\"\nkey = \"{}\"\n",
        tap.url, witness.key
    ));
    r.add();
    r.add();
    let log = LogVerifier::parse(&log_key).unwrap();
    let wv = WitnessVerifier::parse(&witness.key).unwrap();
    let p = r[0].new_user("alice");
    // Publishes through both replicas; both serve the cosigned checkpoint of the whole log.
    for (i, v) in ["1.0.0", "1.0.1", "1.0.2", "1.0.3"].iter().enumerate() {
        let (s, b) = publish(&r[i % 2], &p, "alice/tool", v);
        assert_eq!(s, 201, "{b}");
        // A round of the cosigner between publishes: each head is its own submission.
        wait_cosigned(&r[0], &log, &wv, 2 + i as u64);
    }
    wait_cosigned(&r[1], &log, &wv, 5);
    // Let a replica that also submits (today's bug) have its rounds.
    std::thread::sleep(Duration::from_secs(2));
    let seen = tap.seen();
    let mut cosigned_sizes: Vec<u64> = seen
        .iter()
        .filter(|s| s.status == 200)
        .map(|s| s.size)
        .collect();
    cosigned_sizes.sort_unstable();
    let mut distinct = cosigned_sizes.clone();
    distinct.dedup();
    assert_eq!(
        cosigned_sizes, distinct,
        "a head was cosigned more than once: two submitters ({seen:?})"
    );
    assert!(
        seen.iter().all(|s| s.status == 200),
        "the witness refused a submission: two submitters compete ({seen:?})"
    );
    // One cosigner, named in /metrics.
    let holders: Vec<usize> = (0..2).filter(|i| is_cosigner(&r[*i])).collect();
    assert_eq!(holders.len(), 1, "{holders:?}");

    // The cosigner dies; the other replica takes over within seconds.
    let holder = holders[0];
    let other = 1 - holder;
    r[holder].kill();
    let killed = Instant::now();
    let (s, b) = publish(&r[other], &p, "alice/tool", "1.0.4");
    assert_eq!(s, 201, "{b}");
    wait_cosigned(&r[other], &log, &wv, 6);
    assert!(is_cosigner(&r[other]));
    assert!(
        killed.elapsed() < Duration::from_secs(15),
        "the cosigner's successor took {:?}",
        killed.elapsed()
    );
    // Still one tree per size at the witness.
    let mut roots = std::collections::BTreeMap::new();
    for s in tap.seen() {
        let root = roots.entry(s.size).or_insert_with(|| s.root.clone());
        assert_eq!(*root, s.root, "two trees of size {} were submitted", s.size);
    }
    assert!(!witness.log().contains("another tree"), "{}", witness.log());
}

fn login(hub: &HubProcess, user: &str, password: &str) -> (u16, Value) {
    hub.api(
        reqwest::Method::POST,
        "/api/v1/login",
        None,
        Some(json!({ "username": user, "password": password })),
    )
}

#[test]
fn failed_log_ins_and_token_guesses_spread_over_replicas_are_limited_once() {
    let mut r = Replicas::new("");
    r.set_env("OFC_HUB__AUTH_FAILURE_LIMIT", "4");
    r.add();
    r.add();
    r[0].create_user_with_password("alice", "correct horse battery");
    // Four wrong passwords, two through each replica: the limit of the hub, not of each.
    for i in 0..4 {
        let (s, v) = login(&r[i % 2], "alice", "wrong");
        assert_eq!(s, 401, "attempt {i}: {v}");
    }
    for hub in &r.hubs {
        let (s, v) = login(hub, "alice", "wrong");
        assert_eq!(s, 429, "{}: {v}", hub.url);
        assert_eq!(v["code"], "too_many_auth_failures", "{v}");
        // Even the right password, from this address, waits for the window.
        let (s, v) = login(hub, "alice", "correct horse battery");
        assert_eq!(s, 429, "{v}");
    }
    // Token guesses: their own key, limited the same way.
    for i in 0..4 {
        let (s, v) = r[i % 2].api(
            reqwest::Method::GET,
            "/api/v1/me",
            Some("ofc_guess_0000000000000000"),
            None,
        );
        assert_eq!(s, 401, "guess {i}: {v}");
    }
    for hub in &r.hubs {
        let (s, v) = hub.api(
            reqwest::Method::GET,
            "/api/v1/me",
            Some("ofc_guess_0000000000000000"),
            None,
        );
        assert_eq!(s, 429, "{}: {v}", hub.url);
    }
}

/// Signs in through the web form of `hub`; the session cookie (`ofc_session=…`).
fn web_login(hub: &HubProcess, user: &str, password: &str) -> String {
    let base = hub.url.clone();
    let (user, password) = (user.to_string(), password.to_string());
    ofc_test_kit::on_own_runtime(async move {
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
        let form = http.get(format!("{base}/login")).send().await.unwrap();
        let login_cookie = cookie_of(&form, "ofc_login_csrf");
        let html = form.text().await.unwrap();
        let csrf = html
            .split(r#"name="csrf" value=""#)
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_owned();
        let r = http
            .post(format!("{base}/login"))
            .header("cookie", &login_cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .form(&[
                ("username", user.as_str()),
                ("password", password.as_str()),
                ("csrf", csrf.as_str()),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        cookie_of(&r, "ofc_session")
    })
}

/// `GET /account` of `hub` with the session cookie: 200 signed in, 303 to the log-in page.
fn account_page(hub: &HubProcess, cookie: &str) -> u16 {
    let url = format!("{}/account", hub.url);
    let cookie = cookie.to_string();
    ofc_test_kit::on_own_runtime(async move {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(url)
            .header("cookie", cookie)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    })
}

#[test]
fn tokens_sessions_revocations_and_yanks_take_effect_on_every_replica_at_once() {
    let r = Replicas::start(2, "");
    let p = r[0].new_user("alice");
    let (s, v) = publish(&r[0], &p, "alice/tool", "1.0.0");
    assert_eq!(s, 201, "{v}");

    // A token made on A works on B; revoked on A, B refuses it at the next request.
    let (s, t) = r[0].api(
        reqwest::Method::POST,
        "/api/v1/tokens",
        Some(&p.token),
        Some(json!({ "name": "ci", "scopes": ["yank"], "namespaces": ["alice"] })),
    );
    assert_eq!(s, 201, "{t}");
    let token = t["token"].as_str().unwrap().to_string();
    let (s, me) = r[1].api(reqwest::Method::GET, "/api/v1/me", Some(&token), None);
    assert_eq!(s, 200, "{me}");
    let (s, v) = r[0].api(
        reqwest::Method::DELETE,
        &format!("/api/v1/tokens/{}", t["id"]),
        Some(&p.token),
        None,
    );
    assert!(s == 200 || s == 204, "{s} {v}");
    let (s, v) = r[1].api(reqwest::Method::GET, "/api/v1/me", Some(&token), None);
    assert_eq!(s, 401, "{v}");

    // A yank on B is what A answers at once.
    let (s, v) = r[1].api(
        reqwest::Method::PUT,
        "/api/v1/agents/alice/tool/versions/1.0.0/yank",
        Some(&p.token),
        Some(json!({ "reason": "broken" })),
    );
    assert!(s == 200 || s == 204, "{s} {v}");
    let v = get_json(&r[0], "/api/v1/agents/alice/tool/versions/1.0.0");
    assert_eq!(v["yanked"], true, "{v}");

    // A web session begun on A is signed in on B; signed out on B, A no longer knows it.
    r[0].admin_with_stdin(&["set-password", "alice"], Some("pw for alice 1\n"));
    let cookie = web_login(&r[0], "alice", "pw for alice 1");
    assert_eq!(account_page(&r[1], &cookie), 200);
    let (s, tokens) = r[1].api(reqwest::Method::GET, "/api/v1/tokens", Some(&p.token), None);
    assert_eq!(s, 200, "{tokens}");
    let web = tokens
        .as_array()
        .or_else(|| tokens["tokens"].as_array())
        .unwrap()
        .iter()
        .find(|t| t["name"] == "web session" && t["revoked_at"].is_null())
        .cloned()
        .unwrap_or_else(|| panic!("no web session token: {tokens}"));
    let (s, v) = r[1].api(
        reqwest::Method::DELETE,
        &format!("/api/v1/tokens/{}", web["id"]),
        Some(&p.token),
        None,
    );
    assert!(s == 200 || s == 204, "{s} {v}");
    assert_eq!(account_page(&r[0], &cookie), 303);
}

#[test]
fn concurrent_publishes_through_three_replicas_make_one_log() {
    let r = Replicas::start(3, "");
    let publishers: Vec<Publisher> = ["ann", "bob", "cat"]
        .iter()
        .map(|n| r[0].new_user(n))
        .collect();
    // 3 publishers × 10 versions, all at once, each publisher's spread over the 3 replicas.
    const VERSIONS: usize = 10;
    std::thread::scope(|s| {
        for (pi, p) in publishers.iter().enumerate() {
            let r = &r;
            s.spawn(move || {
                for v in 0..VERSIONS {
                    let hub = &r[(pi + v) % 3];
                    let (st, b) =
                        publish(hub, p, &format!("{}/agent", p.name), &format!("1.0.{v}"));
                    assert_eq!(st, 201, "{}: {b}", hub.url);
                }
            });
        }
    });
    let entries = 3 + 3 * VERSIONS as u64;
    // Every replica shows the same tree; the log verifies: every stored hash, the head, each
    // version's and key's entry (`ofc-hub log verify` recomputes it from the entries).
    let checkpoints: Vec<Value> = r.hubs.iter().map(|h| get_json(h, "/api/v1/log")).collect();
    for c in &checkpoints {
        assert_eq!(c["checkpoint"], checkpoints[0]["checkpoint"]);
    }
    let log = LogVerifier::parse(checkpoints[0]["key"].as_str().unwrap()).unwrap();
    let cp = log
        .verify_checkpoint(checkpoints[0]["checkpoint"].as_str().unwrap())
        .unwrap();
    assert_eq!(cp.size, entries);
    let out = r[2].run(&["log", "verify", "--json"]);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert!(out.status.success(), "{report}");
    assert_eq!(report["size"], entries, "{report}");
    assert_eq!(report["problems"], json!([]), "{report}");
    // Indexes 0..entries, each once: each publisher's entries, in its own order.
    let mut all = Vec::new();
    for p in &publishers {
        let v = get_json(&r[1], &format!("/api/v1/log/publishers/{}", p.name));
        let idx: Vec<u64> = v["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|e| e["index"].as_u64().unwrap())
            .collect();
        assert_eq!(idx.len(), 1 + VERSIONS, "{v}");
        assert!(idx.windows(2).all(|w| w[0] < w[1]), "{idx:?}");
        all.extend(idx);
    }
    all.sort_unstable();
    assert_eq!(all, (0..entries).collect::<Vec<_>>());
}

/// Two first publishes of one new agent, different versions, through two replicas at once:
/// both land (the second to insert the agent's row finds the first's instead of a 409), each
/// round a new agent, a bounded number of rounds.
#[test]
fn concurrent_first_publishes_of_a_new_agent_through_two_replicas_both_land() {
    let r = Replicas::start(2, "");
    let p = r[0].new_user("alice");
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        let name = format!("alice/new-{round}");
        let go = std::sync::Barrier::new(2);
        let (a, b) = std::thread::scope(|s| {
            let one = s.spawn(|| {
                go.wait();
                publish(&r[0], &p, &name, "1.0.0")
            });
            let two = s.spawn(|| {
                go.wait();
                publish(&r[1], &p, &name, "1.1.0")
            });
            (one.join().unwrap(), two.join().unwrap())
        });
        assert_eq!(a.0, 201, "round {round}, 1.0.0: {}", a.1);
        assert_eq!(b.0, 201, "round {round}, 1.1.0: {}", b.1);
        let v = get_json(&r[1], &format!("/api/v1/agents/{name}"));
        let versions = v["versions"].as_array().unwrap_or_else(|| panic!("{v}"));
        assert_eq!(versions.len(), 2, "{v}");
    }
}

/// `method path` on `hub` with `token` and `body`: status, `Retry-After`, JSON body.
fn call_with_headers(
    hub: &HubProcess,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let url = format!("{}{path}", hub.url);
    let token = token.to_string();
    ofc_test_kit::on_own_runtime(async move {
        let mut req = reqwest::Client::new()
            .request(method, url)
            .bearer_auth(token)
            .timeout(ofc_test_kit::COMMAND_BOUND);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let retry = r
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        (status, retry, r.json().await.unwrap_or(Value::Null))
    })
}

/// Polls `/readyz` until its status is `want` (bounded: 90 s); the last body.
fn wait_ready_status(hub: &HubProcess, want: u16) -> Value {
    let start = Instant::now();
    loop {
        let (s, v) = hub.api(reqwest::Method::GET, "/readyz", None, None);
        if s == want {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "/readyz never answered {want}: {s} {v}\n{}",
            hub.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn with_postgresql_down_the_hub_is_not_ready_and_refuses_writes_with_a_retry_hint() {
    // A PostgreSQL of this test's own: stopping it disturbs no other test.
    let pg = ofc_test_kit::PrivatePostgres::start();
    let hub = HubProcess::start(ProcessOptions::default().database_url(&pg.url));
    let p = hub.new_user("alice");
    let (s, v) = publish(&hub, &p, "alice/tool", "1.0.0");
    assert_eq!(s, 201, "{v}");
    wait_ready_status(&hub, 200);

    pg.stop();
    let v = wait_ready_status(&hub, 503);
    assert_eq!(v["code"], "not_ready", "{v}");
    let env = sign_manifest(&remote_manifest("alice/tool", "1.0.1"), &p.key);
    let body = json!({ "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap() });
    let (s, retry, v) = call_with_headers(
        &hub,
        reqwest::Method::PUT,
        "/api/v1/agents/alice/tool/versions/1.0.1",
        &p.token,
        Some(body.clone()),
    );
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["code"], "database_unavailable", "{v}");
    assert!(
        retry.as_deref().is_some_and(|r| r.parse::<u64>().is_ok()),
        "{retry:?}"
    );
    let (s, retry, v) = call_with_headers(
        &hub,
        reqwest::Method::GET,
        "/api/v1/agents/alice/tool",
        &p.token,
        None,
    );
    assert_eq!(
        (s, v["code"].as_str()),
        (503, Some("database_unavailable")),
        "{v}"
    );
    assert!(retry.is_some());
    // The registry API and the web pages say the same.
    let (s, retry, v) = call_with_headers(
        &hub,
        reqwest::Method::GET,
        "/v2/alice/tool/tags/list",
        &p.token,
        None,
    );
    assert_eq!(s, 503, "{v}");
    assert!(retry.is_some(), "{v}");
    let (s, retry, _) = call_with_headers(
        &hub,
        reqwest::Method::GET,
        "/agents/alice/tool",
        &p.token,
        None,
    );
    assert_eq!(s, 503);
    assert!(retry.is_some());

    // Back: the refused publish left nothing (it is not a 409 now), and the log is whole.
    pg.start_again();
    wait_ready_status(&hub, 200);
    let (s, _, v) = call_with_headers(
        &hub,
        reqwest::Method::PUT,
        "/api/v1/agents/alice/tool/versions/1.0.1",
        &p.token,
        Some(body),
    );
    assert_eq!(s, 201, "{v}");
    let agent = get_json(&hub, "/api/v1/agents/alice/tool");
    let versions: Vec<&str> = agent["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("{agent}"))
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions.len(), 2, "{agent}");
    let out = hub.run(&["log", "verify", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(out.status.success(), "{report}");
    assert_eq!(report["size"], 3, "{report}");
}

#[test]
fn a_new_replica_is_not_ready_until_its_search_has_caught_up() {
    let mut r = Replicas::start(1, "");
    let p = r[0].new_user("alice");
    const AGENTS: usize = 40;
    for i in 0..AGENTS {
        let (s, v) = publish(&r[0], &p, &format!("alice/agent-{i}"), "1.0.0");
        assert_eq!(s, 201, "{v}");
    }
    // A new replica: its index is empty, the outbox holds 40 changes and more.
    let b = r.add();
    let start = Instant::now();
    let ready = loop {
        let (s, v) = r[b].api(reqwest::Method::GET, "/readyz", None, None);
        if s == 200 {
            break v;
        }
        assert_eq!(s, 503, "{v}");
        assert_eq!(v["status"], "catching_up", "{v}");
        assert!(v["search_lag"].as_u64().is_some(), "{v}");
        assert!(start.elapsed() < Duration::from_secs(90), "{v}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ready["status"], "ok", "{ready}");
    // Ready means its search answers as the hub's: every agent published before it started.
    let (s, v) = r[b].api(
        reqwest::Method::GET,
        "/api/v1/search?publisher=alice&limit=100",
        None,
        None,
    );
    assert_eq!(s, 200, "{v}");
    let hits = v["hits"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(hits.len(), AGENTS, "{v}");
}

#[test]
fn downloads_are_counted_once_per_client_whichever_replica_serves_them() {
    use base64::Engine as _;
    // Blobs shared through a real distribution registry (`scripts/peers/registry`).
    let registry = ofc_test_kit::registry_peer();
    let r = Replicas::start(
        2,
        &format!(
            "upstream_registry = \"http://{registry}/ofc-replicas-{}\"\n",
            uuid::Uuid::new_v4().simple()
        ),
    );
    let p = r[0].new_user("alice");
    let bytes = b"bytes of a bundle, with a digest".to_vec();
    let m = ofc_test_kit::bundle_manifest("alice/data", "1.0.0", &bytes);
    let env = sign_manifest(&m, &p.key);
    let (s, v) = r[0].api(
        reqwest::Method::PUT,
        "/api/v1/agents/alice/data/versions/1.0.0",
        Some(&p.token),
        Some(json!({
            "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap(),
            "bundle": base64::engine::general_purpose::STANDARD.encode(&bytes),
        })),
    );
    assert_eq!(s, 201, "{v}");
    let bundle = "/api/v1/agents/alice/data/versions/1.0.0/bundle";
    // One client through both replicas: one download; another client: a second.
    assert_eq!(r[0].get_bytes_from(bundle, [127, 0, 0, 1]), bytes);
    assert_eq!(r[1].get_bytes_from(bundle, [127, 0, 0, 1]), bytes);
    let a = get_json(&r[1], "/api/v1/agents/alice/data");
    assert_eq!(a["downloads"], 1, "{a}");
    assert_eq!(r[1].get_bytes_from(bundle, [127, 0, 0, 2]), bytes);
    let a = get_json(&r[0], "/api/v1/agents/alice/data");
    assert_eq!(a["downloads"], 2, "{a}");
}

/// The names of the agents `alice` has in search on `hub`, once they are `want`.
fn wait_search_names(hub: &HubProcess, want: &[String]) {
    hub.wait_for_search("publisher=alice&limit=100", |hits| {
        let mut got: Vec<String> = hits
            .iter()
            .map(|h| h["name"].as_str().unwrap_or_default().to_string())
            .collect();
        got.sort();
        got == want
    });
}

/// The database restored from a snapshot (the README's way back) under two replicas whose
/// search indexes followed it past the snapshot. The first to start finds its index ahead of
/// the outbox; the other starts after new publishes took the lost sequences again, so only the
/// outbox row at its index's position tells. Each rebuilds its index from the database, is not
/// ready until then, and then searches as the database says (`ofc-hub search-check` agrees);
/// the lost agents are gone and the new ones found.
#[test]
fn after_the_database_is_restored_from_a_snapshot_each_replica_rebuilds_its_search() {
    // With the embedding model: the vectors go back with the index.
    let model = ofc_test_kit::search_model_dir();
    let mut r = Replicas::start(
        2,
        &format!("search_model_dir = {:?}\n", model.display().to_string()),
    );
    let p = r[0].new_user("alice");
    let names = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("alice/{prefix}-{i}")).collect()
    };
    let sorted = |parts: &[&[String]]| -> Vec<String> {
        let mut v: Vec<String> = parts.concat();
        v.sort();
        v
    };
    let (kept, gone, new) = (names("kept", 3), names("gone", 3), names("new", 4));
    for n in &kept {
        let (s, v) = publish(&r[0], &p, n, "1.0.0");
        assert_eq!(s, 201, "{v}");
    }
    for h in &r.hubs {
        wait_search_names(h, &sorted(&[&kept]));
    }
    // Both stopped; the snapshot.
    let db = r.database_url().rsplit('/').next().unwrap().to_string();
    let admin = ofc_test_kit::postgres_base_url();
    let snap = format!("{db}_snap");
    let sql = |statements: Vec<String>| {
        let admin = admin.clone();
        ofc_test_kit::on_own_runtime(async move {
            use sqlx::Connection as _;
            let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
            for s in statements {
                sqlx::query(&s)
                    .execute(&mut c)
                    .await
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
            }
        })
    };
    for h in &mut r.hubs {
        h.kill();
    }
    sql(vec![format!("CREATE DATABASE {snap} TEMPLATE {db}")]);
    // Three more agents, searchable on both, then the database goes back to the snapshot.
    for h in &mut r.hubs {
        h.spawn();
    }
    for n in &gone {
        let (s, v) = publish(&r[1], &p, n, "1.0.0");
        assert_eq!(s, 201, "{v}");
    }
    for h in &r.hubs {
        wait_search_names(h, &sorted(&[&kept, &gone]));
        // And embedded: the lost agents have vectors to lose.
        let start = Instant::now();
        loop {
            let (s, v) = h.api(reqwest::Method::GET, "/readyz", None, None);
            if s == 200 && v["embedding_seq"].as_u64() >= Some(6) {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "{s} {v}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    for h in &mut r.hubs {
        h.kill();
    }
    sql(vec![
        format!("DROP DATABASE {db} WITH (FORCE)"),
        format!("CREATE DATABASE {db} TEMPLATE {snap}"),
        format!("DROP DATABASE {snap}"),
    ]);

    // Replica 1: its index is ahead of the outbox.
    r.hubs[1].spawn();
    let ready = wait_ready_status(&r[1], 200);
    assert_eq!(ready["search_lag"], 0, "{ready}");
    wait_search_names(&r[1], &sorted(&[&kept]));
    // New agents take the lost sequences again.
    for n in &new {
        let (s, v) = publish(&r[1], &p, n, "1.0.0");
        assert_eq!(s, 201, "{v}");
    }
    wait_search_names(&r[1], &sorted(&[&kept, &new]));
    // Replica 0: the outbox's head is past its index, but the row at its index's sequence is
    // another change.
    r.hubs[0].spawn();
    wait_ready_status(&r[0], 200);
    wait_search_names(&r[0], &sorted(&[&kept, &new]));
    for h in &r.hubs {
        assert!(
            h.log().contains("the index diverged from the outbox"),
            "{}",
            h.log()
        );
    }
    // The vectors replayed the outbox on both (replica 0's only because its index asked:
    // the outbox's head was past them) and dropped the three lost agents' vectors (a replica
    // may replay twice: past the outbox's end, then asked; the second removes nothing).
    for h in &r.hubs {
        let start = Instant::now();
        while !h
            .log()
            .lines()
            .any(|l| l.contains("embeddings: replay done") && l.contains("removed=3"))
        {
            assert!(start.elapsed() < Duration::from_secs(60), "{}", h.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // The committed index is the database's.
    r.hubs[0].kill();
    let out = r[0].run(&["search-check"]);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert!(out.status.success(), "{report}");
    assert_eq!(report["index_seq"], report["database_seq"], "{report}");
}
