//! Crash test: SIGKILL the real `ofc-hub serve` while 8 clients publish signed bundle versions,
//! restart it on the same data directory (SQLite) or database (PostgreSQL), and check that every
//! acknowledged publish is there and that nothing is half there: no version without its blob,
//! outbox row or audit row, no version listed but unreadable, no gap in the outbox.
//!
//! Bounded: each client publishes at most `MAX_PER_CLIENT` versions; waiting for the kill point
//! and for each hub start gives up after `BOUND` (a failure, not a skip).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use hub_core::store::db::Db;
use index_schema::envelope::{Envelope, SecretKey, sign_manifest, verify_manifest};
use index_schema::manifest::Source;
use index_schema::name::Digest;
use ofc_test_kit::{Backend, HubProcess as Hub, ProcessOptions, TestHub, bundle_manifest};
use rand::Rng as _;
use rstest::rstest;
use serde_json::{Value, json};

const CLIENTS: usize = 8;
const MAX_PER_CLIENT: usize = 400;
/// The hub is killed once this many publishes, plus a random 0..KILL_SPREAD, were acknowledged.
const KILL_AFTER: usize = 500;
const KILL_SPREAD: usize = 250;
/// Publishes that must be under way (sent, unanswered) when the hub is killed.
const IN_FLIGHT_AT_KILL: usize = 4;
const BOUND: Duration = Duration::from_secs(180);

fn admin(hub: &Hub, args: &[&str]) -> Value {
    serde_json::from_str(&hub.admin(args)).expect("admin --json output")
}

/// A publish the hub answered 201 to.
#[derive(Debug, Clone)]
struct Ack {
    manifest_digest: String,
    bundle_digest: String,
    seq: i64,
}

#[derive(Default)]
struct Shared {
    acks: AtomicUsize,
    in_flight: AtomicUsize,
    /// Sent, then no answer (the connection died with the hub).
    unanswered: AtomicUsize,
    acked: Mutex<BTreeMap<(String, String), Ack>>,
    /// Sent, whatever came of it.
    attempted: Mutex<BTreeSet<(String, String)>>,
    /// Answers other than 201 before the kill: the test fails on them.
    unexpected: Mutex<Vec<String>>,
}

fn agent_name(client: usize) -> String {
    format!("crash/agent-{client}")
}

async fn client_loop(
    client: usize,
    url: String,
    token: String,
    key: SecretKey,
    shared: Arc<Shared>,
    kill_at: usize,
    killed: Arc<tokio::sync::Notify>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let name = agent_name(client);
    // Every fifth publish reuses one bundle, sent only the first time (the blob is then on
    // the hub): both the upload and the "blob exists" paths run.
    let shared_bundle = format!("shared bundle of client {client}")
        .repeat(20)
        .into_bytes();
    for i in 0..MAX_PER_CLIENT {
        let version = format!("1.0.{i}");
        let (bytes, send_bytes) = if i % 5 == 4 {
            (shared_bundle.clone(), i == 4)
        } else {
            let mut b = format!("bundle {client} {i}\n").into_bytes();
            let extra = rand::thread_rng().gen_range(64..4096);
            b.extend((0..extra).map(|_| rand::random::<u8>()));
            (b, true)
        };
        let m = bundle_manifest(&name, &version, &bytes);
        let env = sign_manifest(&m, &key);
        let mut body =
            json!({ "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap() });
        if send_bytes {
            body["bundle"] = base64::engine::general_purpose::STANDARD
                .encode(&bytes)
                .into();
        }
        shared
            .attempted
            .lock()
            .unwrap()
            .insert((name.clone(), version.clone()));
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        let r = http
            .put(format!("{url}/api/v1/agents/{name}/versions/{version}"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await;
        let answer = match r {
            Ok(resp) => {
                let status = resp.status().as_u16();
                resp.text().await.map(|t| (status, t))
            }
            Err(e) => Err(e),
        };
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        match answer {
            Ok((201, text)) => {
                let v: Value = serde_json::from_str(&text).unwrap();
                shared.acked.lock().unwrap().insert(
                    (name.clone(), version.clone()),
                    Ack {
                        manifest_digest: v["manifest_digest"].as_str().unwrap().to_string(),
                        bundle_digest: v["bundle_digest"].as_str().unwrap().to_string(),
                        seq: v["seq"].as_i64().unwrap(),
                    },
                );
                assert_eq!(
                    v["manifest_digest"].as_str().unwrap(),
                    m.digest().to_string()
                );
                if shared.acks.fetch_add(1, Ordering::SeqCst) + 1 == kill_at {
                    killed.notify_one();
                }
            }
            Ok((status, text)) => {
                shared
                    .unexpected
                    .lock()
                    .unwrap()
                    .push(format!("{name}@{version}: {status} {text}"));
                return;
            }
            Err(_) => {
                // The hub is gone: this publish may or may not have committed.
                shared.unanswered.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
    }
}

async fn get_json(http: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = http.get(url).send().await.unwrap();
    let s = r.status().as_u16();
    let t = r.text().await.unwrap();
    (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
}

fn blob_path(data: &Path, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap();
    data.join("blobs-v1/sha256").join(&hex[..2]).join(hex)
}

/// Integrity checks straight on the database, independent of the API.
async fn check_database(url: &str, data: &Path, problems: &mut Vec<String>) -> i64 {
    let db = Db::connect(url, 2).await.expect("open the database");
    let scalar = |sql: &'static str| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(db.read())
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
    };
    let checks: [(&str, &'static str); 6] = [
        (
            "versions without a publish outbox row",
            "SELECT COUNT(*) FROM versions v JOIN agents a ON a.id = v.agent_id WHERE NOT EXISTS \
             (SELECT 1 FROM outbox o WHERE o.kind = 'publish' AND o.agent = a.name \
             AND o.version = v.version)",
        ),
        (
            "publish outbox rows without a version",
            "SELECT COUNT(*) FROM outbox o WHERE o.kind = 'publish' AND NOT EXISTS \
             (SELECT 1 FROM versions v JOIN agents a ON a.id = v.agent_id \
             WHERE a.name = o.agent AND v.version = o.version)",
        ),
        (
            "versions without an audit row",
            "SELECT COUNT(*) FROM versions v JOIN agents a ON a.id = v.agent_id WHERE NOT EXISTS \
             (SELECT 1 FROM audit_log l WHERE l.action = 'version.publish' \
             AND l.target = a.name || '@' || v.version)",
        ),
        (
            "agents without versions",
            "SELECT COUNT(*) FROM agents a WHERE NOT EXISTS \
             (SELECT 1 FROM versions v WHERE v.agent_id = a.id)",
        ),
        (
            "bundle versions without a bundle digest",
            "SELECT COUNT(*) FROM versions WHERE source_kind = 'bundle' \
             AND (bundle_digest IS NULL OR bundle_size IS NULL)",
        ),
        (
            "outbox rows beyond the counter",
            "SELECT COUNT(*) FROM outbox WHERE seq > (SELECT last_seq FROM outbox_counter)",
        ),
    ];
    for (what, sql) in checks {
        let n = scalar(sql).await;
        if n != 0 {
            problems.push(format!("database: {n} {what}"));
        }
    }
    let last_seq = scalar("SELECT last_seq FROM outbox_counter WHERE id = 1").await;
    let count = scalar("SELECT COUNT(*) FROM outbox").await;
    let max = scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox").await;
    if (count, max) != (last_seq, last_seq) {
        problems.push(format!(
            "database: outbox has {count} rows up to seq {max}, counter says {last_seq}"
        ));
    }
    let digests: Vec<(String, i64)> = sqlx::query_as(
        "SELECT DISTINCT bundle_digest, bundle_size FROM versions \
         WHERE bundle_digest IS NOT NULL",
    )
    .fetch_all(db.read())
    .await
    .unwrap();
    for (d, size) in digests {
        match std::fs::read(blob_path(data, &d)) {
            Ok(bytes) => {
                if Digest::of(&bytes).to_string() != d || bytes.len() as i64 != size {
                    problems.push(format!("blob store: {d} holds other bytes"));
                }
            }
            Err(e) => problems.push(format!("blob store: {d} referenced but unreadable: {e}")),
        }
    }
    let versions = scalar("SELECT COUNT(*) FROM versions").await;
    db.close().await;
    versions
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_concurrent_publishes_loses_nothing_acknowledged(#[case] backend: Backend) {
    // Stopped: the user is made before the hub starts.
    let mut hub = TestHub::process(ProcessOptions::new(backend).stopped());
    let data = hub.data_dir().to_path_buf();
    let db_url = hub.database_url().map(str::to_string);

    let created = admin(&hub, &["create-user", "crash", "--json"]);
    let token = created["token"].as_str().unwrap().to_string();
    let key = SecretKey::from_seed(&[7; 32]);

    hub.restart();
    let http = reqwest::Client::new();
    hub.register_key(&token, "crash", &key);

    let kill_at = KILL_AFTER + rand::thread_rng().gen_range(0..KILL_SPREAD);
    let shared = Arc::new(Shared::default());
    let reached = Arc::new(tokio::sync::Notify::new());
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        tasks.push(tokio::spawn(client_loop(
            c,
            hub.url.clone(),
            token.clone(),
            key.clone(),
            shared.clone(),
            kill_at,
            reached.clone(),
        )));
    }
    tokio::time::timeout(BOUND, reached.notified())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "only {} publishes acknowledged, {kill_at} needed; unexpected answers: {:?}",
                shared.acks.load(Ordering::SeqCst),
                shared.unexpected.lock().unwrap()
            )
        });
    // Kill while publishes are under way: wait (bounded) until enough are sent and unanswered.
    let mut in_flight = shared.in_flight.load(Ordering::SeqCst);
    for _ in 0..100_000 {
        if in_flight >= IN_FLIGHT_AT_KILL {
            break;
        }
        tokio::task::yield_now().await;
        in_flight = shared.in_flight.load(Ordering::SeqCst);
    }
    assert!(
        in_flight >= IN_FLIGHT_AT_KILL,
        "fewer than {IN_FLIGHT_AT_KILL} publishes under way at the kill point"
    );
    let acks_at_kill = shared.acks.load(Ordering::SeqCst);
    hub.kill();
    for t in tasks {
        t.await.unwrap();
    }
    let unexpected = shared.unexpected.lock().unwrap().clone();
    assert!(
        unexpected.is_empty(),
        "publishes refused before the kill: {unexpected:?}\nhub log:\n{}",
        hub.log()
    );
    let acked = shared.acked.lock().unwrap().clone();
    let attempted = shared.attempted.lock().unwrap().clone();
    assert!(acked.len() >= KILL_AFTER);

    // Restart on the same data and database.
    hub.restart();
    let mut problems = Vec::new();

    // The outbox: gapless from 1, one publish row per version.
    let mut outbox = Vec::new();
    let mut after = 0i64;
    for _ in 0..1000 {
        let (s, page) = get_json(
            &http,
            &format!("{}/api/v1/outbox?after={after}&limit=1000", hub.url),
        )
        .await;
        assert_eq!(s, 200, "{page}");
        let entries = page["entries"].as_array().unwrap().clone();
        if entries.is_empty() {
            break;
        }
        after = entries.last().unwrap()["seq"].as_i64().unwrap();
        outbox.extend(entries);
    }
    let mut published = BTreeMap::new();
    for (i, e) in outbox.iter().enumerate() {
        let seq = e["seq"].as_i64().unwrap();
        if seq != i as i64 + 1 {
            problems.push(format!("outbox: seq {seq} at position {}", i + 1));
        }
        if e["kind"] == "publish" {
            let k = (
                e["agent"].as_str().unwrap().to_string(),
                e["version"].as_str().unwrap().to_string(),
            );
            if published.insert(k.clone(), seq).is_some() {
                problems.push(format!("outbox: {k:?} published twice"));
            }
        }
    }

    // The transparency log's key, to check each version's entry and proof with.
    let (s, log_info) = get_json(&http, &format!("{}/api/v1/log", hub.url)).await;
    assert_eq!(s, 200, "{log_info}");
    let log_key =
        index_schema::tlog::LogVerifier::parse(log_info["key"].as_str().unwrap()).unwrap();

    // Every listed version is whole; every acknowledged one is listed, with what was acked,
    // and is in the log.
    let mut listed = BTreeSet::new();
    let mut unacked_present = 0usize;
    for c in 0..CLIENTS {
        let name = agent_name(c);
        let (s, a) = get_json(&http, &format!("{}/api/v1/agents/{name}", hub.url)).await;
        if s == 404 {
            continue;
        }
        assert_eq!(s, 200, "{a}");
        let versions = a["versions"].as_array().unwrap();
        let mut highest: Option<semver::Version> = None;
        for v in versions {
            let version = v["version"].as_str().unwrap().to_string();
            let k = (name.clone(), version.clone());
            listed.insert(k.clone());
            let parsed = semver::Version::parse(&version).unwrap();
            highest = highest.max(Some(parsed));
            if !attempted.contains(&k) {
                problems.push(format!("{name}@{version}: listed but never sent"));
            }
            if !acked.contains_key(&k) {
                unacked_present += 1;
            }
            let vurl = format!("{}/api/v1/agents/{name}/versions/{version}", hub.url);
            let (s, info) = get_json(&http, &vurl).await;
            if s != 200 {
                problems.push(format!("{name}@{version}: listed but GET is {s} {info}"));
                continue;
            }
            let env = Envelope::from_json(&info["envelope"].to_string()).unwrap();
            let (m, _, digest) = match verify_manifest(&env, &[key.public_key()]) {
                Ok(ok) => ok,
                Err(e) => {
                    problems.push(format!("{name}@{version}: envelope does not verify: {e}"));
                    continue;
                }
            };
            if m.name.to_string() != name || m.version.to_string() != version {
                problems.push(format!(
                    "{name}@{version}: manifest is {}@{}",
                    m.name, m.version
                ));
            }
            if info["manifest_digest"] != digest.to_string()
                || v["manifest_digest"] != digest.to_string()
            {
                problems.push(format!("{name}@{version}: manifest digest differs"));
            }
            if let Err(e) = logged(&log_key, &info["log"], &name, &version, &digest, &key) {
                problems.push(format!("{name}@{version}: {e}"));
            }
            let Source::Bundle(b) = &m.source else {
                problems.push(format!("{name}@{version}: not a bundle source"));
                continue;
            };
            let resp = http.get(format!("{vurl}/bundle")).send().await.unwrap();
            let status = resp.status().as_u16();
            let bytes = resp.bytes().await.unwrap();
            if status != 200 {
                problems.push(format!("{name}@{version}: bundle download is {status}"));
            } else if Digest::of(&bytes) != b.digest || bytes.len() as u64 != b.size {
                problems.push(format!(
                    "{name}@{version}: bundle bytes hash to {}, manifest says {}",
                    Digest::of(&bytes),
                    b.digest
                ));
            }
            if let Some(ack) = acked.get(&k) {
                if ack.manifest_digest != digest.to_string()
                    || ack.bundle_digest != b.digest.to_string()
                {
                    problems.push(format!("{name}@{version}: differs from what was acked"));
                }
                if published.get(&k) != Some(&ack.seq) {
                    problems.push(format!(
                        "{name}@{version}: acked with seq {}, outbox has {:?}",
                        ack.seq,
                        published.get(&k)
                    ));
                }
            }
        }
        let latest = a["latest"]
            .as_str()
            .map(|l| semver::Version::parse(l).unwrap());
        if latest != highest {
            problems.push(format!(
                "{name}: latest is {latest:?}, highest listed is {highest:?}"
            ));
        }
    }
    for k in acked.keys() {
        if !listed.contains(k) {
            problems.push(format!("{}@{}: acknowledged but gone", k.0, k.1));
        }
    }
    let outbox_set: BTreeSet<_> = published.keys().cloned().collect();
    if outbox_set != listed {
        problems.push(format!(
            "outbox publishes ({}) and listed versions ({}) differ",
            outbox_set.len(),
            listed.len()
        ));
    }

    let db_url_effective = db_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", data.join("hub.sqlite3").display()));
    let in_db = check_database(&db_url_effective, &data, &mut problems).await;
    if in_db as usize != listed.len() {
        problems.push(format!(
            "database has {in_db} versions, the API lists {}",
            listed.len()
        ));
    }

    // The log recomputed from the database matches what it stored.
    let out = hub.run(&["log", "verify", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if !out.status.success() || report["problems"] != json!([]) {
        problems.push(format!(
            "ofc-hub log verify: {} {report} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }

    // The restarted hub carries on: the next publish takes the next sequence number.
    let bytes = b"after the crash".to_vec();
    let m = bundle_manifest(&agent_name(0), "2.0.0", &bytes);
    let env = sign_manifest(&m, &key);
    let path = format!("/api/v1/agents/{}/versions/2.0.0", agent_name(0));
    let (status, v) = hub
        .request(reqwest::Method::PUT, &path)
        .token(&token)
        .json(json!({
            "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap(),
            "bundle": base64::engine::general_purpose::STANDARD.encode(&bytes),
        }))
        .send()
        .await;
    assert_eq!(status, 201);
    assert_eq!(v["seq"].as_i64().unwrap(), outbox.len() as i64 + 1);

    eprintln!(
        "crash test record: backend={backend:?} kill_at={kill_at} acks_at_kill={acks_at_kill} \
         acked={} in_flight_at_kill={in_flight} unanswered={} versions_found={} \
         committed_but_unacknowledged={unacked_present} outbox_rows={} problems={}",
        acked.len(),
        shared.unanswered.load(Ordering::SeqCst),
        listed.len(),
        outbox.len(),
        problems.len()
    );
    assert!(
        problems.is_empty(),
        "{} problems after the crash:\n{}",
        problems.len(),
        problems
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    drop(hub);
}

/// The version answer's log entry names this publish and is proven under a checkpoint the
/// log key signed.
fn logged(
    log_key: &index_schema::tlog::LogVerifier,
    log: &Value,
    name: &str,
    version: &str,
    digest: &Digest,
    key: &SecretKey,
) -> Result<(), String> {
    let want = format!(
        "ofc-log/v1 publish {name} {version} {digest} {}",
        key.key_id()
    );
    if log["entry"] != want.as_str() {
        return Err(format!("log entry is {}, expected {want}", log["entry"]));
    }
    let cp = log_key
        .verify_checkpoint(log["checkpoint"].as_str().unwrap_or(""))
        .map_err(|e| e.to_string())?;
    let proof = log["inclusion"]
        .as_array()
        .ok_or("no inclusion proof")?
        .iter()
        .map(|h| index_schema::tlog::parse_hash_b64(h.as_str().unwrap_or("")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let index = log["index"].as_u64().ok_or("no index")?;
    index_schema::tlog::check_inclusion(
        &proof,
        cp.size,
        cp.root,
        index,
        format!("{want}\n").as_bytes(),
    )
    .map_err(|e| e.to_string())
}
