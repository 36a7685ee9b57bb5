//! Search crash test: SIGKILL the real `ofc-hub serve` while several clients publish (and the
//! follower indexes the stream), restart it on the same data directory and database, wait
//! (bounded) until search has caught up, and run `ofc-hub search-check`: the index must equal
//! the database. Then the check must notice a change the index missed (an offline delete), and
//! `ofc-hub reindex` must repair it. On SQLite and PostgreSQL.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use index_schema::envelope::{SecretKey, sign_manifest};
use index_schema::manifest::Manifest;
use ofc_test_kit::{Backend, HubProcess as Hub, ProcessOptions, TestHub, remote_manifest};
use rand::Rng as _;
use rstest::rstest;
use serde_json::{Value, json};

const CLIENTS: usize = 4;
const AGENTS_PER_CLIENT: usize = 5;
const MAX_PER_CLIENT: usize = 400;
const KILL_AFTER: usize = 150;
const KILL_SPREAD: usize = 100;
const BOUND: Duration = Duration::from_secs(180);

fn run(hub: &Hub, args: &[&str]) -> (bool, String, String) {
    let out = hub.run(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn manifest(name: &str, version: &str, i: usize) -> Manifest {
    let mut v = serde_json::to_value(remote_manifest(name, version)).unwrap();
    let topic = ["weather", "invoices", "translation", "code review", "music"][i % 5];
    v["tagline"] = json!(format!("Helps with {topic}, take {i}"));
    v["keywords"] = json!([topic.replace(' ', "-")]);
    Manifest::from_value(&v).unwrap()
}

#[derive(Default)]
struct Shared {
    acks: AtomicUsize,
    max_seq: AtomicI64,
    unexpected: std::sync::Mutex<Vec<String>>,
}

async fn client_loop(
    client: usize,
    url: String,
    token: String,
    key: SecretKey,
    shared: Arc<Shared>,
    kill_at: usize,
    reached: Arc<tokio::sync::Notify>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    for i in 0..MAX_PER_CLIENT {
        let name = format!("crash/agent-{client}-{}", i % AGENTS_PER_CLIENT);
        let version = format!("1.0.{}", i / AGENTS_PER_CLIENT);
        // Every seventh step yanks the version just published, so deletes and "previous
        // version" upserts are in the stream too.
        let env = sign_manifest(&manifest(&name, &version, i), &key);
        let body = json!({ "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap() });
        let r = http
            .put(format!("{url}/api/v1/agents/{name}/versions/{version}"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await;
        let Ok(resp) = r else { return };
        let status = resp.status().as_u16();
        let Ok(text) = resp.text().await else { return };
        if status != 201 {
            shared
                .unexpected
                .lock()
                .unwrap()
                .push(format!("{name}@{version}: {status} {text}"));
            return;
        }
        let v: Value = serde_json::from_str(&text).unwrap();
        shared
            .max_seq
            .fetch_max(v["seq"].as_i64().unwrap(), Ordering::SeqCst);
        if i % 7 == 6 {
            let r = http
                .put(format!(
                    "{url}/api/v1/agents/{name}/versions/{version}/yank"
                ))
                .bearer_auth(&token)
                .json(&json!({"reason": "crash test"}))
                .send()
                .await;
            match r {
                Ok(resp) if resp.status().as_u16() == 204 => {}
                Ok(resp) => {
                    let s = resp.status().as_u16();
                    let t = resp.text().await.unwrap_or_default();
                    shared
                        .unexpected
                        .lock()
                        .unwrap()
                        .push(format!("yank {name}@{version}: {s} {t}"));
                    return;
                }
                Err(_) => return,
            }
        }
        if shared.acks.fetch_add(1, Ordering::SeqCst) + 1 == kill_at {
            reached.notify_one();
        }
    }
}

/// Waits (bounded) until `/readyz` reports no lag at a sequence of at least `min_seq`.
async fn wait_caught_up(http: &reqwest::Client, url: &str, min_seq: u64) -> Value {
    let start = std::time::Instant::now();
    loop {
        let r = http.get(format!("{url}/readyz")).send().await.unwrap();
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        // 503 `catching_up` until the index has caught up after the start.
        assert!(
            status == 200 || (status == 503 && v["status"] == "catching_up"),
            "{status} {v}"
        );
        if status == 200 && v["search_lag"] == 0 && v["search_seq"].as_u64().unwrap() >= min_seq {
            return v;
        }
        assert!(start.elapsed() < BOUND, "search did not catch up: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `search-check` until the index has applied the whole outbox (bounded) and returns
/// whether it passed and its report.
fn search_check(hub: &Hub) -> (bool, Value) {
    let start = std::time::Instant::now();
    loop {
        let (ok, stdout, stderr) = run(hub, &["search-check"]);
        let report: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("search-check output {stdout:?} ({e}); stderr {stderr}"));
        if report["index_seq"] == report["database_seq"] {
            return (ok, report);
        }
        assert!(
            start.elapsed() < BOUND,
            "the index never reached the outbox head: {report}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_while_indexing_then_index_equals_database(#[case] backend: Backend) {
    // Stopped: the user is made before the hub starts.
    let mut hub = TestHub::process(ProcessOptions::new(backend).stopped());

    let (ok, stdout, stderr) = run(&hub, &["admin", "create-user", "crash", "--json"]);
    assert!(ok, "create-user: {stderr}");
    let created: Value = serde_json::from_str(&stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_string();
    let key = SecretKey::from_seed(&[9; 32]);

    hub.restart();
    let http = reqwest::Client::new();
    hub.register_key(&token, "crash", &key);

    let kill_at = KILL_AFTER + rand::thread_rng().gen_range(0..KILL_SPREAD);
    let shared = Arc::new(Shared::default());
    let reached = Arc::new(tokio::sync::Notify::new());
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            tokio::spawn(client_loop(
                c,
                hub.url.clone(),
                token.clone(),
                key.clone(),
                shared.clone(),
                kill_at,
                reached.clone(),
            ))
        })
        .collect();
    tokio::time::timeout(BOUND, reached.notified())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "only {} publishes acknowledged: {:?}",
                shared.acks.load(Ordering::SeqCst),
                shared.unexpected.lock().unwrap()
            )
        });
    hub.kill();
    for t in tasks {
        t.await.unwrap();
    }
    let unexpected = shared.unexpected.lock().unwrap().clone();
    assert!(
        unexpected.is_empty(),
        "refused before the kill: {unexpected:?}"
    );
    let acked_seq = u64::try_from(shared.max_seq.load(Ordering::SeqCst)).unwrap();
    assert!(acked_seq > 0);
    // The kill came while the follower was indexing: its last commit is behind the outbox
    // (it commits within 200 ms and the clients were publishing up to the kill).
    let (_, stdout, stderr) = run(&hub, &["search-check"]);
    let at_kill: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("search-check output {stdout:?} ({e}); stderr {stderr}"));
    eprintln!("at the kill: {at_kill}");
    assert!(
        at_kill["index_seq"].as_u64().unwrap() < at_kill["database_seq"].as_u64().unwrap(),
        "the index had caught up before the kill: {at_kill}"
    );

    // Restart: the follower resumes from the sequence in the last index commit.
    hub.restart();
    wait_caught_up(&http, &hub.url, acked_seq).await;
    let (ok, report) = search_check(&hub);
    assert!(
        ok,
        "index differs from the database after the crash: {report}"
    );
    assert!(report["matching"].as_u64().unwrap() > 0, "{report}");
    assert!(report["missing"].as_array().unwrap().is_empty(), "{report}");

    // A search finds a published agent.
    let r = http
        .get(format!("{}/api/v1/search?q=weather&limit=100", hub.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(!v["hits"].as_array().unwrap().is_empty(), "{v}");
    hub.kill();

    // The check notices what the index missed: an agent deleted while no hub was running.
    let (ok, _, stderr) = run(&hub, &["admin", "delete", "crash/agent-0-0"]);
    assert!(ok, "admin delete: {stderr}");
    let (ok, stdout, _) = run(&hub, &["search-check"]);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(!ok, "search-check should fail: {report}");
    assert_eq!(report["extra"], json!(["crash/agent-0-0"]), "{report}");

    // `reindex` rebuilds it from the database.
    let (ok, stdout, stderr) = run(&hub, &["reindex"]);
    assert!(ok, "reindex: {stderr}");
    let r: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(r["seq"], report["database_seq"], "{r}");
    let (ok, report) = search_check(&hub);
    assert!(ok, "index differs after reindex: {report}");
    let (ok, _, _) = run(&hub, &["reindex", "--check"]);
    assert!(ok);
}
