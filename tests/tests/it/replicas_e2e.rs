//! Issue 30's end-to-end acceptance, as processes: three `ofc-hub serve` replicas on a
//! PostgreSQL of the test's own (`PrivatePostgres`, so it can be stopped), the distribution
//! registry (`scripts/peers/registry`) as their shared blob backend and one real witness, behind
//! a real haproxy configured by `deploy/haproxy.cfg` unchanged. A bounded mixed load runs
//! through haproxy (`ofc publish` of new versions; `ofc pull` of the newest, verified; a real
//! OCI client, oras, pushing agent artifacts over `/v2/` and pulling them back; searches,
//! version lists, a web page, the log's checkpoint and log-ins); mid-load one replica is SIGKILLed and later restarted, then
//! PostgreSQL is stopped and started once. Checked after: every acknowledged publish and push is
//! on every replica and searchable from each within 5 s, `ofc pull` and oras pull through
//! haproxy get the bytes; no GET failed outside the database outage, no POST outside a fault;
//! a log-in's token works on every replica; `ofc-hub gc` leaves every version's bundle whole and the registry
//! has every version under its tag (within 30 s: a tag a killed replica never made is made by
//! the client's retry or the repair pass);
//! `ofc-hub log verify` is clean and counts one entry per version; each
//! replica serves a checkpoint the witness cosigned and the witness refused nothing; the
//! reader's checkpoints never show two trees of one size nor a smaller tree than before (f);
//! failed log-ins past the limit are refused by every replica. Fails (never skips) without haproxy,
//! PostgreSQL or the registry.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use index_schema::envelope::sign_manifest;
use index_schema::name::Digest;
use index_schema::tlog::{LogVerifier, WitnessVerifier};
use ofc_test_kit::{
    HubProcess, PrivatePostgres, ProcessOptions, Publisher, WitnessProcess, bundle_manifest,
};
use rand::RngCore as _;
use serde_json::{Value, json};

use crate::common::{Ofc, free_port};
use crate::deploy_e2e::{peer, repo, run, statuses, uuid_tag};

/// A request of the load that did not succeed, with the time it ran.
#[derive(Debug)]
struct Miss {
    from: Instant,
    to: Instant,
    what: String,
}

impl Miss {
    /// Whether it ran (in part) between `from` and `to`.
    fn overlaps(&self, (from, to): (Instant, Instant)) -> bool {
        self.from <= to && self.to >= from
    }
}

/// What the OCI client did through the balancer: the versions it pushed and had acknowledged
/// (with their bundles), and the pushes and pulls that failed.
type OciLoad = (Vec<(String, Vec<u8>)>, Vec<Miss>, Vec<Miss>);

/// A real OCI client (oras, PyPI) through the balancer until `stop`, at most `max` rounds: each
/// round pushes a new version of `carol/oci-scaled` as an ofc agent artifact (the signed
/// envelope as config, the bundle as the one layer: a publish over `/v2/`, its chunks and
/// manifest spread by haproxy over the replicas), then, when acknowledged, pulls it back
/// anonymously and compares the bytes.
fn oci_client(
    stop: Arc<AtomicBool>,
    lb: &str,
    carol: Publisher,
    max: usize,
) -> std::thread::JoinHandle<OciLoad> {
    let python = peer("oci-clients", "python");
    let script = repo().join("hub-server/tests/oci/oras_agent.py");
    let host = lb.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        let tmp = tempfile::tempdir().unwrap();
        let (mut acked, mut failed_pushes, mut failed_pulls) = (Vec::new(), Vec::new(), Vec::new());
        for n in 0..max {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let v = format!("3.0.{n}");
            let mut bundle = vec![0u8; 20_000];
            rand::thread_rng().fill_bytes(&mut bundle);
            let m = bundle_manifest("carol/oci-scaled", &v, &bundle);
            let env = tmp.path().join(format!("envelope-{n}.json"));
            let tar = tmp.path().join(format!("bundle-{n}.tar.gz"));
            std::fs::write(&env, sign_manifest(&m, &carol.key).to_json()).unwrap();
            std::fs::write(&tar, &bundle).unwrap();
            let from = Instant::now();
            let out = Command::new(&python)
                .arg(&script)
                .args([
                    "push",
                    &host,
                    &format!("carol/oci-scaled:{v}"),
                    &carol.token,
                ])
                .args([&env, &tar])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !(out.status.success() && stdout.trim() == "201") {
                failed_pushes.push(Miss {
                    from,
                    to: Instant::now(),
                    what: format!("push {v}: {stdout} {}", tail(&out.stderr)),
                });
                continue;
            }
            acked.push((v.clone(), bundle.clone()));
            let from = Instant::now();
            let dir = tmp.path().join(format!("pulled-{n}"));
            let out = Command::new(&python)
                .arg(&script)
                .args(["pull", &host, &format!("carol/oci-scaled:{v}")])
                .arg(&dir)
                .output()
                .unwrap();
            let files = String::from_utf8_lossy(&out.stdout).into_owned();
            let same = out.status.success()
                && files.lines().count() == 1
                && std::fs::read(files.trim()).is_ok_and(|b| b == bundle);
            if !same {
                failed_pulls.push(Miss {
                    from,
                    to: Instant::now(),
                    what: format!("pull {v}: {files} {}", tail(&out.stderr)),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        (acked, failed_pushes, failed_pulls)
    })
}

/// The last lines of a client's stderr.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

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
                .env("OFC_HUB__MIRROR_REPAIR_SECS", "2")
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
    hubs[0].create_user_with_password("dave", "dave's long passphrase");
    let carol = hubs[0].new_user("carol");
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
    // checkpoint (kept, to check it only grew), and a log-in (a POST: haproxy does not replay
    // it). Bounded: 100 ms apart, at most 2,000 requests.
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
                let (mut logins, mut failed_logins) = (Vec::new(), Vec::new());
                while !stop.load(Ordering::Relaxed) && done < 2_000 {
                    if done % 5 == 4 {
                        let from = Instant::now();
                        let r = c
                            .post(format!("{lb}/api/v1/login"))
                            .json(
                                &json!({"username": "dave", "password": "dave's long passphrase"}),
                            )
                            .send()
                            .await;
                        match r {
                            Ok(r) if r.status() == 201 => {
                                let v: Value = r.json().await.unwrap_or(Value::Null);
                                logins.push(v["token"].as_str().unwrap_or_default().to_string());
                            }
                            Ok(r) => failed_logins.push(Miss {
                                from,
                                to: Instant::now(),
                                what: format!(
                                    "{}: {}",
                                    r.status(),
                                    r.text().await.unwrap_or_default()
                                ),
                            }),
                            Err(e) => failed_logins.push(Miss {
                                from,
                                to: Instant::now(),
                                what: e.to_string(),
                            }),
                        }
                        done += 1;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
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
                (done, failed, notes, logins, failed_logins)
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
    let oci = oci_client(stop.clone(), &lb, carol.clone(), 20);
    // And `ofc pull` of the newest `alice/scaled` (at most 80, 300 ms apart), each verified.
    let puller = {
        let (stop, ofc) = (stop.clone(), ofc.clone());
        std::thread::spawn(move || {
            let project = tempfile::tempdir().unwrap();
            let (mut pulled, mut failed) = (0usize, Vec::new());
            for _ in 0..80 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::fs::write(project.path().join("ofc.lock"), "").unwrap();
                let from = Instant::now();
                let r = Ofc::finish(
                    ofc.cmd()
                        .current_dir(project.path())
                        .args(["pull", "alice/scaled"]),
                );
                if r.code == Some(0) {
                    pulled += 1;
                } else {
                    failed.push(Miss {
                        from,
                        to: Instant::now(),
                        what: format!("ofc pull: {}", r.stderr.trim()),
                    });
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            (pulled, failed)
        })
    };

    // Mid-load: SIGKILL a replica, later start it again (same data dir, same address).
    std::thread::sleep(Duration::from_secs(3));
    let killed = Instant::now();
    hubs[1].kill();
    std::thread::sleep(Duration::from_secs(4));
    hubs[1].spawn();
    wait_all_up(&socket, &hubs, Duration::from_secs(60));
    let kill_window = (killed, Instant::now());
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
    let (done, failed, notes, logins, failed_logins) = reader.join().unwrap();
    let (oci_acked, failed_pushes, mut failed_pulls) = oci.join().unwrap();
    let (pulled, failed_ofc_pulls) = puller.join().unwrap();
    eprintln!(
        "ofc pulls: {pulled} verified, {} failed: {failed_ofc_pulls:?}",
        failed_ofc_pulls.len()
    );
    assert!(pulled >= 3, "too few ofc pulls went through");
    failed_pulls.extend(failed_ofc_pulls);
    let pg_window = (pg_stopped, pg_back);
    eprintln!(
        "log-ins: {} accepted, {} failed: {failed_logins:?}\nOCI pushes: {} acknowledged, {} \
         failed: {failed_pushes:?}\nOCI pulls failed: {failed_pulls:?}",
        logins.len(),
        failed_logins.len(),
        oci_acked.len(),
        failed_pushes.len(),
    );
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
    assert!(logins.len() >= 3, "too few log-ins went through");
    assert!(
        oci_acked.len() >= 3,
        "too few OCI pushes went through: {failed_pushes:?}"
    );
    // A failed log-in or push (POSTs, PATCHes, PUTs: not replayed) only while a replica died
    // under it or the database was down; a failed pull (GETs, replayed on another replica when
    // one dies) only while the database was down.
    for m in failed_logins.iter().chain(&failed_pushes) {
        assert!(
            m.overlaps(kill_window) || m.overlaps(pg_window),
            "a log-in or OCI push failed outside the faults: {}",
            m.what
        );
    }
    for m in &failed_pulls {
        assert!(
            m.overlaps(pg_window),
            "a pull (oras or ofc) failed outside the database outage: {}",
            m.what
        );
    }

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

    // … the versions pushed over `/v2/` too: on every replica with their bundle, and pulled
    // back through the balancer by the OCI client, byte for byte.
    for (v, bundle) in &oci_acked {
        for (i, hub) in hubs.iter().enumerate() {
            let (s, body) = hub.api(
                reqwest::Method::GET,
                &format!("/api/v1/agents/carol/oci-scaled/versions/{v}"),
                None,
                None,
            );
            assert_eq!(s, 200, "hub{} lacks carol/oci-scaled {v}: {body}", i + 1);
            assert_eq!(
                body["bundle"]["digest"],
                Digest::of(bundle).to_string(),
                "hub{}",
                i + 1
            );
        }
    }
    let python = peer("oci-clients", "python");
    let pulled = tempfile::tempdir().unwrap();
    let (v, bundle) = oci_acked.last().unwrap();
    let files = run(Command::new(&python)
        .arg(repo().join("hub-server/tests/oci/oras_agent.py"))
        .args([
            "pull",
            lb.trim_start_matches("http://"),
            &format!("carol/oci-scaled:{v}"),
        ])
        .arg(pulled.path()));
    assert_eq!(std::fs::read(files.trim()).unwrap(), *bundle, "{files}");
    // Log-ins take effect on every replica at once: the last token works on each.
    let last = logins.last().unwrap();
    for (i, hub) in hubs.iter().enumerate() {
        let (s, body) = hub.api(reqwest::Method::GET, "/api/v1/me", Some(last), None);
        assert_eq!(s, 200, "hub{}: {body}", i + 1);
        assert_eq!(body["user"], "dave", "{body}");
    }

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
    // carol's key and alice's, then one entry per version the hub has (acknowledged or not).
    let versions_of = |agent: &str| -> Vec<Value> {
        let (_, body) = hubs[0].api(
            reqwest::Method::GET,
            &format!("/api/v1/agents/{agent}"),
            None,
            None,
        );
        body["versions"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .clone()
    };
    let (scaled, oci_scaled) = (versions_of("alice/scaled"), versions_of("carol/oci-scaled"));
    assert_eq!(
        report["size"],
        2 + (scaled.len() + oci_scaled.len()) as u64,
        "{report}\n{scaled:?}\n{oci_scaled:?}"
    );

    // (g) No blob claimed by nothing, and no claimed blob left to a garbage collector: the
    // hub's gc with no grace takes what failed publishes and pushes left in its cache, and every
    // version's bundle is still there, whole; in the registry (the blob backend), each version's
    // manifest is under its tag in the agent's repository and that repository holds the bundle,
    // so the registry's own garbage collection (which keeps what its manifests name) keeps it.
    let out = seed.run(&["gc", "--grace-secs", "0", "--json"]);
    assert!(out.status.success(), "ofc-hub gc: {out:?}");
    eprintln!(
        "gc after the load: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut checked = 0;
    for (agent, versions) in [("alice/scaled", &scaled), ("carol/oci-scaled", &oci_scaled)] {
        for v in versions {
            let version = v["version"].as_str().unwrap_or_else(|| panic!("{v}"));
            let (s, body) = hubs[checked % 3].api(
                reqwest::Method::GET,
                &format!("/api/v1/agents/{agent}/versions/{version}"),
                None,
                None,
            );
            assert_eq!(s, 200, "{body}");
            let digest = body["bundle"]["digest"]
                .as_str()
                .unwrap_or_else(|| panic!("{body}"));
            let bytes = hubs[checked % 3].get_bytes(&format!("/v2/{agent}/blobs/{digest}"));
            assert_eq!(Digest::of(&bytes).to_string(), digest, "{agent}@{version}");
            let (host, prefix) = registry
                .trim_start_matches("http://")
                .split_once('/')
                .unwrap();
            // A tag lost with a replica killed between a publish's commit and its tag request
            // is made again by the client's retry or by the repair pass (every 2 s here, on the
            // replica holding its lease): given a bounded while.
            let fetch = || {
                let (url, d) = (format!("http://{host}/v2/{prefix}"), digest.to_string());
                let (agent_, version_) = (agent.to_string(), version.to_string());
                ofc_test_kit::on_own_runtime(async move {
                    let c = reqwest::Client::new();
                    let m = c
                        .get(format!("{url}/{agent_}/manifests/{version_}"))
                        .header("accept", "application/vnd.oci.image.manifest.v1+json")
                        .send()
                        .await
                        .unwrap();
                    let status = m.status().as_u16();
                    let text = m.text().await.unwrap_or_default();
                    let blob = c
                        .head(format!("{url}/{agent_}/blobs/{d}"))
                        .send()
                        .await
                        .unwrap()
                        .status()
                        .as_u16();
                    ((status, text), blob)
                })
            };
            let waited = Instant::now();
            let (manifest, blob) = loop {
                let got = fetch();
                if (got.0.0 == 200 && got.0.1.contains(digest))
                    || waited.elapsed() > Duration::from_secs(30)
                {
                    break got;
                }
                std::thread::sleep(Duration::from_millis(500));
            };
            assert_eq!(
                manifest.0, 200,
                "the registry lacks {agent}:{version}: {}",
                manifest.1
            );
            assert!(
                manifest.1.contains(digest),
                "{agent}:{version} in the registry: {}",
                manifest.1
            );
            assert_eq!(
                blob, 200,
                "the registry's {agent} lacks the bundle of {version}"
            );
            checked += 1;
        }
    }
    let again = seed.run(&["gc", "--grace-secs", "0", "--json"]);
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["blobs_deleted"], 0, "a second gc found more: {again}");

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
    // replica asked directly refuses the same client. The client is one of its own (its
    // address in `X-Forwarded-For`, which haproxy passes on and the replicas, trusting
    // 127.0.0.1 as a proxy, take): the load's clients, all 127.0.0.1, may have left attempts
    // in flight on the killed replica or across the outage, which count until their window
    // ends (`hub-core/src/limits.rs`: it errs on the side of refusing).
    let login = |url: &str, password: &str| -> (u16, Value) {
        let url = format!("{url}/api/v1/login");
        let body = json!({ "username": "bob", "password": password });
        ofc_test_kit::on_own_runtime(async move {
            let r = reqwest::Client::new()
                .post(&url)
                .header("x-forwarded-for", "192.0.2.77")
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
