//! Issue 30's end-to-end acceptance, as processes: three `ofc-hub serve` replicas on a
//! PostgreSQL of the test's own (`PrivatePostgres`, so it can be stopped), the distribution
//! registry (`scripts/peers/registry`) as their shared blob backend and one real witness, behind
//! a real haproxy configured by `deploy/haproxy.cfg` unchanged. A bounded mixed load runs
//! through haproxy (`ofc publish` of new versions; searches, version lists, a web page and the
//! log's checkpoint); mid-load one replica is SIGKILLed and later restarted, then PostgreSQL is
//! stopped and started once. Checked after: every acknowledged publish is on every replica and
//! searchable from each within 5 s, `ofc pull` through haproxy verifies; no GET failed outside
//! the database outage; `ofc-hub log verify` is clean and counts one entry per version; each
//! replica serves a checkpoint the witness cosigned and the witness refused nothing; the
//! reader's checkpoints never show two trees of one size (that they only grow fails today, see
//! (f)); failed log-ins past the limit are refused by every replica. Fails (never skips) without haproxy,
//! PostgreSQL or the registry.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use index_schema::tlog::{LogVerifier, WitnessVerifier};
use ofc_test_kit::{HubProcess, PrivatePostgres, ProcessOptions, WitnessProcess};
use serde_json::{Value, json};

use crate::common::{Ofc, free_port};
use crate::deploy_e2e::{peer, repo, run, statuses, uuid_tag};

/// One GET the reader made that did not answer 2xx.
#[derive(Debug)]
struct Failed {
    /// When the answer (or the error) came.
    at: Instant,
    path: &'static str,
    status: Option<u16>,
    retry_after: Option<String>,
    body: String,
}

/// haproxy in front of the replicas; killed on drop.
struct Balancer(Child);

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_all_up(socket: &Path, hubs: &[HubProcess], within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let s = statuses(socket);
        if s.len() == 3 && s.iter().all(|(_, st)| st == "UP") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "haproxy never saw the three replicas up: {s:?}\n{}",
            hubs.iter()
                .map(HubProcess::log)
                .collect::<Vec<_>>()
                .join("\n---\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn agent_dir(root: &Path) -> std::path::PathBuf {
    let dir = root.join("scaled");
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "id: \"@scaled\"\nname: Scaled\npackage: alice/scaled\n\
         tagline: Published to three replicas under faults\n\
         description: An agent of the several-replicas acceptance test.\n\
         model: qwen3:32b\nactivation: mention\n",
    )
    .unwrap();
    std::fs::write(dir.join("prompts/system.md"), "You are scaled out.\n").unwrap();
    dir
}

#[test]
fn three_replicas_behind_haproxy_lose_nothing_when_one_is_killed_and_postgresql_restarts() {
    let haproxy_bin = peer("haproxy", "haproxy");
    let pg = PrivatePostgres::start();
    let registry = format!(
        "http://{}/ofc-replicas-e2e-{}",
        run(&mut Command::new(repo().join("scripts/peers/registry"))).trim(),
        uuid_tag()
    );
    let tmp = tempfile::tempdir().unwrap();
    let key_file = tmp.path().join("log-key");
    let replica = |toml: &str| {
        HubProcess::start(
            ProcessOptions::default()
                .database_url(&pg.url)
                .hub_toml(toml)
                .env("OFC_HUB__UPSTREAM_REGISTRY", &registry)
                .env("OFC_HUB__TRUSTED_PROXIES", "127.0.0.1")
                .env("OFC_HUB__AUTH_FAILURE_LIMIT", "4")
                .env("OFC_HUB_LOG", "warn")
                .stopped(),
        )
    };
    // The log key (made once, shared by file) and the witness that follows it.
    let key_toml = format!("log_key_file = {:?}\n", key_file.display().to_string());
    let seed = replica(&key_toml);
    let out = seed.run(&["log", "key"]);
    assert!(out.status.success(), "ofc-hub log key: {out:?}");
    let log_key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let witness = WitnessProcess::start("witness.test/scale", &[&log_key]);
    let toml = format!(
        "{key_toml}[[log_witnesses]]\nurl = \"{}\"\nkey = \"{}\"\n",
        witness.url, witness.key
    );
    let mut hubs: Vec<HubProcess> = (0..3).map(|_| replica(&toml)).collect();
    for h in &mut hubs {
        h.spawn();
    }
    let addr = |h: &HubProcess| h.url.trim_start_matches("http://").to_string();
    let lb_port = free_port();
    let socket = tmp.path().join("lb.sock");
    let _lb = Balancer(
        Command::new(&haproxy_bin)
            .args(["-db", "-f"])
            .arg(repo().join("deploy/haproxy.cfg"))
            .env("OFC_LB_LISTEN", format!("127.0.0.1:{lb_port}"))
            .env("OFC_LB_ADMIN_SOCKET", &socket)
            .env("OFC_HUB_1", addr(&hubs[0]))
            .env("OFC_HUB_2", addr(&hubs[1]))
            .env("OFC_HUB_3", addr(&hubs[2]))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy"),
    );
    let lb = format!("http://127.0.0.1:{lb_port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "haproxy made no admin socket");
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_all_up(&socket, &hubs, Duration::from_secs(60));

    // A publisher through the balancer.
    let token = hubs[0].create_user("alice");
    hubs[0].create_user_with_password("bob", "correct horse battery");
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &lb);
    ofc.cmd()
        .args(["login", "--token-stdin"])
        .write_stdin(token)
        .assert()
        .success();
    ofc.ok(&["keygen"]);
    ofc.ok(&["key", "register", "--namespace", "alice"]);
    let agents = tempfile::tempdir().unwrap();
    let dir = agent_dir(agents.path());
    ofc.ok(&["publish", dir.to_str().unwrap(), "--version", "1.0.0"]);

    // Readers through the balancer: search, the version list, a web page, the log's
    // checkpoint (kept, to check it only grew). Bounded: 100 ms apart, at most 2,000 requests.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, lb) = (stop.clone(), lb.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let c = reqwest::Client::builder()
                    .timeout(Duration::from_secs(20))
                    .build()
                    .unwrap();
                let paths = [
                    "/api/v1/search?q=scaled",
                    "/api/v1/agents/alice/scaled",
                    "/agents/alice/scaled",
                    "/log/checkpoint",
                ];
                let (mut done, mut failed, mut notes) = (0usize, Vec::new(), Vec::new());
                while !stop.load(Ordering::Relaxed) && done < 2_000 {
                    let path = paths[done % paths.len()];
                    match c.get(format!("{lb}{path}")).send().await {
                        Ok(r) if r.status().is_success() => {
                            let text = r.text().await.unwrap_or_default();
                            if path == "/log/checkpoint" {
                                notes.push(text);
                            }
                        }
                        Ok(r) => {
                            let status = Some(r.status().as_u16());
                            let retry_after = r
                                .headers()
                                .get("retry-after")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string);
                            let body = r.text().await.unwrap_or_default();
                            failed.push(Failed {
                                at: Instant::now(),
                                path,
                                status,
                                retry_after,
                                body: body.chars().take(200).collect(),
                            });
                        }
                        Err(e) => failed.push(Failed {
                            at: Instant::now(),
                            path,
                            status: None,
                            retry_after: None,
                            body: e.to_string(),
                        }),
                    }
                    done += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                (done, failed, notes)
            })
        })
    };
    // A publisher (at most 40 versions): each `ofc publish` is several requests haproxy spreads
    // over the replicas. Those that fail are expected while a replica dies or the database is
    // down (a POST is not replayed); they must leave nothing half applied.
    let writer = crate::deploy_e2e::publisher(
        stop.clone(),
        ofc.clone(),
        dir.clone(),
        40,
        Duration::from_millis(200),
    );

    // Mid-load: SIGKILL a replica, later start it again (same data dir, same address).
    std::thread::sleep(Duration::from_secs(3));
    hubs[1].kill();
    std::thread::sleep(Duration::from_secs(4));
    hubs[1].spawn();
    wait_all_up(&socket, &hubs, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(2));
    // Then PostgreSQL stops and starts once.
    let pg_stopped = Instant::now();
    pg.stop();
    std::thread::sleep(Duration::from_secs(3));
    pg.start_again();
    wait_all_up(&socket, &hubs, Duration::from_secs(60));
    let pg_back = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let (acked, failed_publishes) = writer.join().unwrap();
    let (done, failed, notes) = reader.join().unwrap();
    eprintln!(
        "publishes: {} acknowledged, {} failed: {failed_publishes:?}\nreads: {done}, {} failed: \
         {failed:?}\ndatabase down for {:?}",
        acked.len(),
        failed_publishes.len(),
        failed.len(),
        pg_back - pg_stopped
    );
    assert!(
        acked.len() >= 3,
        "too few publishes went through: {acked:?}"
    );
    assert!(done > 50, "the reader made only {done} requests");

    // (b) No GET failed, except while the database was down. haproxy replays a GET on another
    // replica when one dies (empty response, refused connection), so the SIGKILL must cost no
    // read. With PostgreSQL down no replica can answer from the database: each is not ready and
    // answers 503 with a Retry-After (hub) or haproxy, every replica out, answers 503 itself;
    // an honest 503 is the one acceptable answer then — never another status, an error or a
    // hang — and only in that window (the stop until haproxy sees all three ready again).
    for f in &failed {
        assert!(
            f.at >= pg_stopped && f.at <= pg_back && f.status == Some(503),
            "GET {} failed outside the database outage or not with 503: {f:?}\n(all: {failed:?})",
            f.path
        );
        if f.body.contains("database_unavailable") || f.body.contains("not_ready") {
            assert!(
                f.retry_after.is_some(),
                "the hub's 503 has no Retry-After: {f:?}"
            );
        }
    }

    // (a) Every acknowledged version on every replica, asked directly.
    let mut published = vec!["1.0.0".to_string()];
    published.extend(acked);
    for (i, hub) in hubs.iter().enumerate() {
        let (s, body) = hub.api(
            reqwest::Method::GET,
            "/api/v1/agents/alice/scaled",
            None,
            None,
        );
        assert_eq!(s, 200, "{body}");
        let text = body.to_string();
        for v in &published {
            assert!(
                text.contains(&format!("\"{v}\"")),
                "hub{} lacks {v}: {body}",
                i + 1
            );
        }
    }
    // … searchable from each within 5 s (the newest version the hit shows).
    let newest = published
        .iter()
        .max_by_key(|v| semver::Version::parse(v).unwrap())
        .unwrap()
        .clone();
    for (i, hub) in hubs.iter().enumerate() {
        let start = Instant::now();
        loop {
            let (s, body) = hub.api(reqwest::Method::GET, "/api/v1/search?q=scaled", None, None);
            let found = s == 200
                && body["hits"].as_array().is_some_and(|hits| {
                    hits.iter().any(|h| {
                        h.to_string().contains("alice/scaled")
                            && h.to_string().contains(&format!("\"{newest}\""))
                    })
                });
            if found {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "hub{}: {newest} not found by search within 5 s: {s} {body}",
                i + 1
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // … and a verified pull of the newest through the balancer.
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("ofc.lock"), "").unwrap();
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(project.path())
            .args(["pull", "alice/scaled"]),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let lock = std::fs::read_to_string(project.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains(&format!("\"{newest}\"")),
        "the lock does not name the newest version {newest}:\n{lock}"
    );

    // (c) Nothing half applied: the whole tree recomputed from the entries, every version's
    // row logged where it says (`ofc-hub log verify` on the replicas' database).
    let out = seed.run(&["log", "verify", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success(), "{report}");
    assert_eq!(
        report["problems"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    // alice's key, then one entry per version the hub has (acknowledged or not).
    let (_, agent) = hubs[0].api(
        reqwest::Method::GET,
        "/api/v1/agents/alice/scaled",
        None,
        None,
    );
    let versions = agent["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("{agent}"));
    assert_eq!(
        report["size"],
        1 + versions.len() as u64,
        "{report}\n{agent}"
    );

    // (f) The reader's checkpoints through haproxy, each signed by the log key: never two
    // roots for one size (no replica showed a forked tree), and never a smaller tree than the
    // one before. (Each replica served the newest head *its* copy held, so round robin showed
    // size N from the cosigner, then N-1 from a replica whose copy trailed — "shrank from 4 to
    // 3"; `log_head_covering` now reads the stored heads per request.)
    let log = LogVerifier::parse(&log_key).unwrap();
    let mut last = 0u64;
    let mut shrinks = Vec::new();
    let mut roots = std::collections::BTreeMap::new();
    for note in &notes {
        let cp = log
            .verify_checkpoint(note)
            .unwrap_or_else(|e| panic!("{e}: {note}"));
        let root = format!("{:?}", cp.root);
        assert_eq!(
            roots.entry(cp.size).or_insert_with(|| root.clone()),
            &root,
            "two trees of size {}",
            cp.size
        );
        if cp.size < last {
            shrinks.push((last, cp.size));
        }
        last = cp.size;
    }
    eprintln!("checkpoints read through haproxy: {}", notes.len());
    assert!(
        shrinks.is_empty(),
        "a client was shown a smaller tree than before (from, to): {shrinks:?}"
    );
    assert!(notes.len() > 10, "only {} checkpoints read", notes.len());

    // (d) The witness cosigned the whole log, the same tree whichever replica serves it, and
    // refused no submission (two competing heads would be).
    let size = report["size"].as_u64().unwrap();
    let wv = WitnessVerifier::parse(&witness.key).unwrap();
    for (i, hub) in hubs.iter().enumerate() {
        let start = Instant::now();
        loop {
            let note = String::from_utf8(hub.get_bytes("/log/checkpoint")).unwrap();
            let (cp, sigs) = log
                .verify_cosigned(&note, std::slice::from_ref(&wv))
                .unwrap();
            if cp.size == size && !sigs.is_empty() {
                if let Some(seen) = roots.get(&size) {
                    assert_eq!(*seen, format!("{:?}", cp.root), "hub{}", i + 1);
                }
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "hub{}: no checkpoint of size {size} cosigned within 30 s: {note}\n{}",
                i + 1,
                witness.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert!(!witness.log().contains("another tree"), "{}", witness.log());

    // (e) Failed log-ins through the balancer: the limit (4) is the hub's, not each
    // replica's — haproxy spreads the attempts round robin, the fifth is refused, and every
    // replica asked directly refuses the same client.
    let login = |url: &str, password: &str| -> (u16, Value) {
        let url = format!("{url}/api/v1/login");
        let body = json!({ "username": "bob", "password": password });
        ofc_test_kit::on_own_runtime(async move {
            let r = reqwest::Client::new()
                .post(&url)
                .json(&body)
                .timeout(Duration::from_secs(20))
                .send()
                .await
                .unwrap();
            let s = r.status().as_u16();
            (s, r.json().await.unwrap_or(Value::Null))
        })
    };
    for i in 0..4 {
        let (s, v) = login(&lb, "wrong");
        assert_eq!(s, 401, "attempt {i}: {v}");
    }
    for i in 0..3 {
        let (s, v) = login(&lb, "wrong");
        assert_eq!(s, 429, "attempt {} through haproxy: {v}", 5 + i);
        assert_eq!(v["code"], "too_many_auth_failures", "{v}");
    }
    for hub in &hubs {
        let (s, v) = login(&hub.url, "correct horse battery");
        assert_eq!(s, 429, "{}: {v}", hub.url);
    }
}
