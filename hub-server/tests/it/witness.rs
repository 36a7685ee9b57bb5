//! `ofc-hub witness serve`, the real binary, spoken to in C2SP tlog-witness by a log kept in the
//! test (its own key and Merkle tree): it cosigns only checkpoints signed by a log it follows
//! that extend the last one it cosigned, answers every other case with the status the spec
//! names, and keeps what it cosigned across a kill -9.
//!
//! Then a real hub with `log_witnesses`: its checkpoints carry the witness's cosignature, which
//! aics-tlog (an implementation we did not write) verifies with a quorum of one.

use std::time::{Duration, Instant};

use index_schema::envelope::sign_manifest;
use index_schema::tlog::{
    AddCheckpoint, Attempt, Hash, HashCache, LogSigner, LogVerifier, WitnessVerifier,
    cosignature_lines, prove_consistency, record_hash, stored_hash_index, stored_hashes_for,
    tree_hash,
};
use ofc_test_kit::{
    HubProcess, ProcessOptions, Publisher, WitnessProcess, on_own_runtime, remote_manifest,
};
use serde_json::{Value, json};

/// A log in the test: a key and a tree.
struct TestLog {
    key: LogSigner,
    stored: HashCache,
    size: u64,
}

fn done<T>(a: Attempt<T>) -> T {
    match a {
        Attempt::Done(v) => v,
        Attempt::Need(ix) => panic!("missing hashes {ix:?}"),
    }
}

impl TestLog {
    fn new(origin: &str) -> TestLog {
        TestLog {
            key: LogSigner::generate(origin, &mut rand::rngs::OsRng).unwrap(),
            stored: HashCache::new(),
            size: 0,
        }
    }

    fn grow(&mut self, n: u64, tag: &str) {
        for _ in 0..n {
            let leaf = record_hash(format!("{tag} {}\n", self.size).as_bytes());
            let hashes = done(
                self.stored
                    .attempt(|r| stored_hashes_for(self.size, leaf, r))
                    .unwrap(),
            );
            let first = stored_hash_index(0, self.size);
            for (i, h) in hashes.into_iter().enumerate() {
                self.stored.insert(first + i as u64, h);
            }
            self.size += 1;
        }
    }

    fn root(&self) -> Hash {
        done(self.stored.attempt(|r| tree_hash(self.size, r)).unwrap())
    }

    fn note(&self) -> String {
        self.key.sign_checkpoint(self.size, self.root())
    }

    fn proof_from(&self, old: u64) -> Vec<Hash> {
        if old == 0 || old == self.size {
            return Vec::new();
        }
        done(
            self.stored
                .attempt(|r| prove_consistency(self.size, old, r))
                .unwrap(),
        )
    }

    fn request(&self, old: u64) -> String {
        AddCheckpoint {
            old,
            proof: self.proof_from(old),
            checkpoint: self.note(),
        }
        .to_body()
    }
}

/// POSTs `body` to the witness; status, content type and text.
fn add(w: &WitnessProcess, body: &str) -> (u16, String, String) {
    let (url, body) = (format!("{}/add-checkpoint", w.url), body.to_string());
    on_own_runtime(async move {
        let r = reqwest::Client::new()
            .post(url)
            .body(body)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let ct = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, ct, r.text().await.unwrap())
    })
}

fn get_text(hub: &HubProcess, path: &str) -> String {
    String::from_utf8(hub.get_bytes(path)).unwrap()
}

fn get_json(hub: &HubProcess, path: &str) -> Value {
    let (s, v) = hub.api(reqwest::Method::GET, path, None, None);
    assert_eq!(s, 200, "{path}: {v}");
    v
}

fn publish(hub: &HubProcess, p: &Publisher, name: &str, version: &str) {
    let env = sign_manifest(&remote_manifest(name, version), &p.key);
    let (s, v) = hub.api(
        reqwest::Method::PUT,
        &format!("/api/v1/agents/{name}/versions/{version}"),
        Some(&p.token),
        Some(json!({ "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap() })),
    );
    assert_eq!(s, 201, "{v}");
}

/// Asserts a 200 whose line is the witness's valid cosignature on `log`'s current checkpoint.
fn assert_cosigned(w: &WitnessProcess, log: &TestLog, body: &str) {
    let (s, _, text) = add(w, body);
    assert_eq!(s, 200, "{text}");
    let lines = cosignature_lines(&text).unwrap();
    let wv = WitnessVerifier::parse(&w.key).unwrap();
    let note = format!("{}{}", log.note(), lines.concat());
    let (cp, sigs) = log.key.verifier().verify_cosigned(&note, &[wv]).unwrap();
    assert_eq!(cp.size, log.size);
    assert_eq!(sigs.len(), 1, "{text}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(sigs[0].timestamp.abs_diff(now) < 120, "{sigs:?}");
}

#[test]
fn the_witness_cosigns_only_extensions_and_answers_as_tlog_witness_says() {
    let mut log = TestLog::new("log.example/one");
    let stranger = TestLog::new("log.example/unknown");
    let mut w = WitnessProcess::start("witness.test/w1", &[&log.key.verifier().to_string()]);

    log.grow(5, "a");
    assert_cosigned(&w, &log, &log.request(0));
    // The same tree again, from its own size: cosigned again.
    assert_cosigned(&w, &log, &log.request(5));

    // A submitter that believes the witness is at another size learns its size.
    log.grow(3, "a");
    let (s, ct, text) = add(&w, &log.request(0));
    assert_eq!(
        (s, ct.as_str(), text.as_str()),
        (409, "text/x.tlog.size", "5\n")
    );
    let (s, _, text) = add(&w, &log.request(2));
    assert_eq!((s, text.as_str()), (409, "5\n"));
    // With the right size and proof: cosigned.
    assert_cosigned(&w, &log, &log.request(5));

    // A proof that does not verify: 422, and nothing changes.
    let mut bad = AddCheckpoint::parse(&log.request(8)).unwrap();
    log.grow(2, "a");
    bad.checkpoint = log.note();
    bad.proof = log.proof_from(8);
    bad.proof[0] = Hash([9; 32]);
    let (s, _, text) = add(&w, &bad.to_body());
    assert_eq!(s, 422, "{text}");
    // A fork: another tree of 10 entries whose first 8 differ, signed by the same log key.
    let mut fork = TestLog::new("log.example/one");
    fork.key = LogSigner::from_secret_text(&log.key.to_secret_text()).unwrap();
    fork.grow(10, "b");
    let (s, _, text) = add(&w, &fork.request(8));
    assert_eq!(s, 422, "a fork does not extend what was cosigned: {text}");
    // Another tree of the size cosigned: 409.
    let mut same_size = TestLog::new("log.example/one");
    same_size.key = LogSigner::from_secret_text(&log.key.to_secret_text()).unwrap();
    same_size.grow(8, "c");
    let (s, _, text) = add(&w, &same_size.request(8));
    assert_eq!((s, text.as_str()), (409, "8\n"));

    // Not the log's key: 403. An origin it does not follow: 404. Garbage: 400. An old size
    // past the checkpoint's: 400. A proof from 0: 422.
    let mut impostor = TestLog::new("log.example/one");
    impostor.grow(10, "a");
    let (s, _, _) = add(&w, &impostor.request(8));
    assert_eq!(s, 403);
    let (s, _, _) = add(&w, &stranger.request(0));
    assert_eq!(s, 404);
    let (s, _, _) = add(&w, "hello\n");
    assert_eq!(s, 400);
    let (s, _, _) = add(&w, &format!("old 0\n\n{}", "x".repeat(100 * 1024)));
    assert_eq!(s, 413, "a body past 64 KiB is not read");
    let (s, _, text) = add(&w, "old 0\n\nnot a checkpoint\n");
    assert_eq!(
        s, 400,
        "a body that is no signed note is malformed, not unsigned: {text}"
    );
    // A second witness on the same state: refused at start, the first one unharmed.
    let second = ofc_test_kit::hub_command(&ofc_test_kit::bin("ofc-hub"), w.data_dir(), None)
        .args(["witness", "serve", "--listen", "127.0.0.1:0", "--log"])
        .arg(log.key.verifier().to_string())
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another witness uses the state file"),
        "{second:?}"
    );
    let (s, _, _) = add(&w, &format!("old 11\n\n{}", log.note()));
    assert_eq!(s, 400);
    let (s, _, _) = add(
        &w,
        &AddCheckpoint {
            old: 0,
            proof: vec![Hash([1; 32])],
            checkpoint: log.note(),
        }
        .to_body(),
    );
    assert_eq!(s, 409, "the witness is at 8, not 0");

    // kill -9: what it cosigned survives; the log goes on from there.
    w.restart();
    let (s, _, text) = add(&w, &log.request(0));
    assert_eq!((s, text.as_str()), (409, "8\n"), "{}", w.log());
    assert_cosigned(&w, &log, &log.request(8));
    let state = std::fs::read_to_string(w.data_dir().join("witness-state.json")).unwrap();
    assert!(state.contains("\"size\": 10"), "{state}");
}

/// Polls `GET /log/checkpoint` until it carries a valid cosignature of `witness` over a tree
/// of at least `size` entries.
fn wait_cosigned(
    hub: &HubProcess,
    log: &LogVerifier,
    witness: &WitnessVerifier,
    size: u64,
) -> String {
    let start = Instant::now();
    loop {
        let note = get_text(hub, "/log/checkpoint");
        let (cp, sigs) = log
            .verify_cosigned(&note, std::slice::from_ref(witness))
            .unwrap();
        if cp.size >= size && !sigs.is_empty() {
            return note;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no cosigned checkpoint of size {size} within 60 s: {note}\n{}",
            hub.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_witnessed_hub_serves_cosigned_checkpoints_that_aics_tlog_verifies() {
    let (hub, w) = WitnessProcess::with_hub(ProcessOptions::default(), "witness.test/w1");
    let info = get_json(&hub, "/api/v1/log");
    let log = LogVerifier::parse(info["key"].as_str().unwrap()).unwrap();
    let wv = WitnessVerifier::parse(&w.key).unwrap();
    let p = hub.new_user("alice");
    publish(&hub, &p, "alice/code", "1.0.0");
    // Entry 0 is alice's key, 1 the version.
    let note = wait_cosigned(&hub, &log, &wv, 2);

    // The version's proof is under the cosigned checkpoint once it covers it.
    let v = get_json(&hub, "/api/v1/agents/alice/code/versions/1.0.0");
    let (_, sigs) = log
        .verify_cosigned(
            v["log"]["checkpoint"].as_str().unwrap(),
            std::slice::from_ref(&wv),
        )
        .unwrap();
    assert_eq!(sigs.len(), 1, "{v}");

    // aics-tlog: the log key's signature and the witness's cosignature, quorum 1, from the
    // tiles the hub serves; and refused with a quorum the checkpoint cannot meet.
    let bin = crate::tlog::aics_tlog();
    let dir = tempfile::tempdir().unwrap();
    let note_file = dir.path().join("checkpoint");
    std::fs::write(&note_file, &note).unwrap();
    let tiles = format!("{}/log/", hub.url);
    let vkey = log.to_string();
    let (ok, r) = crate::tlog::aics(
        &bin,
        &[
            "verify-checkpoint",
            "--note",
            note_file.to_str().unwrap(),
            "--log-key",
            &vkey,
            "--witness-key",
            &w.key,
            "--quorum",
            "1",
            "--tiles",
            &tiles,
        ],
    );
    assert!(ok, "{r}");
    let other = WitnessProcess::start("witness.test/w2", &[&vkey]);
    let (ok, r) = crate::tlog::aics(
        &bin,
        &[
            "verify-checkpoint",
            "--note",
            note_file.to_str().unwrap(),
            "--log-key",
            &vkey,
            "--witness-key",
            &w.key,
            "--witness-key",
            &other.key,
            "--quorum",
            "2",
        ],
    );
    assert!(!ok, "a quorum of 2 with one cosignature: {r}");

    // Witness down: publishing goes on, new entries are proven under the uncosigned head, and
    // the witness cosigns again once it is back (the hub retries).
    let mut w = w;
    w.kill();
    publish(&hub, &p, "alice/code", "1.0.1");
    let v = get_json(&hub, "/api/v1/agents/alice/code/versions/1.0.1");
    assert!(v["log"]["checkpoint"].is_string(), "{v}");
    w.spawn();
    wait_cosigned(&hub, &log, &wv, 3);
}

/// Two witnesses: one going down keeps the cosignatures it gave — the versions it cosigned
/// are still served under a checkpoint both cosigned — while new versions are served under
/// the checkpoint the other one cosigns.
#[test]
fn a_witness_going_down_keeps_the_cosignatures_it_gave() {
    let mut hub = HubProcess::start(
        ProcessOptions::default()
            .hub_toml("log_witness_refresh_secs = 1\n")
            .stopped(),
    );
    let out = hub.run(&["log", "key"]);
    assert!(out.status.success(), "{out:?}");
    let log_key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let w1 = WitnessProcess::start("witness.test/w1", &[&log_key]);
    let mut w2 = WitnessProcess::start("witness.test/w2", &[&log_key]);
    let toml = hub.data_dir().join("hub.toml");
    let settings = std::fs::read_to_string(&toml).unwrap() + &w1.hub_toml() + &w2.hub_toml();
    std::fs::write(&toml, settings).unwrap();
    hub.spawn();
    let log = LogVerifier::parse(&log_key).unwrap();
    let keys = [
        WitnessVerifier::parse(&w1.key).unwrap(),
        WitnessVerifier::parse(&w2.key).unwrap(),
    ];
    let p = hub.new_user("alice");
    publish(&hub, &p, "alice/code", "1.0.0");
    let cosigners = |path: &str| {
        let v = get_json(&hub, path);
        let (_, sigs) = log
            .verify_cosigned(v["log"]["checkpoint"].as_str().unwrap(), &keys)
            .unwrap();
        sigs.len()
    };
    let start = Instant::now();
    while cosigners("/api/v1/agents/alice/code/versions/1.0.0") < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "{}", hub.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    // w2 down for several refresh rounds: 1.0.0 keeps both cosignatures.
    w2.kill();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(cosigners("/api/v1/agents/alice/code/versions/1.0.0"), 2);
    // A new version: under the checkpoint w1 cosigns; 1.0.0 still under both.
    publish(&hub, &p, "alice/code", "1.0.1");
    let start = Instant::now();
    while cosigners("/api/v1/agents/alice/code/versions/1.0.1") < 1 {
        assert!(start.elapsed() < Duration::from_secs(60), "{}", hub.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(cosigners("/api/v1/agents/alice/code/versions/1.0.1"), 1);
    assert_eq!(cosigners("/api/v1/agents/alice/code/versions/1.0.0"), 2);
    // The checkpoint a tiles reader gets is the current one (the latest, cosigned by w1),
    // not the older one both cosigned.
    let note = get_text(&hub, "/log/checkpoint");
    let (cp, sigs) = log.verify_cosigned(&note, &keys).unwrap();
    assert_eq!((cp.size, sigs.len()), (3, 1), "{note}");
    drop(w1);
}

/// A witness that answers with too much, or with text meant for a terminal: the hub serves no
/// cosignature from it, keeps serving its log, and its own log shows the answer escaped.
#[test]
fn a_hostile_witness_gets_nothing_in_and_nothing_to_the_terminal() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/add-checkpoint",
                axum::routing::post(move || {
                    let n = seen.fetch_add(1, Ordering::SeqCst);
                    async move {
                        if n.is_multiple_of(2) {
                            // Far past what the hub reads of an answer.
                            (axum::http::StatusCode::OK, "\u{2014} w x\n".repeat(10_000))
                        } else {
                            (
                                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                                "\u{1b}[2J\u{1b}[31mowned\u{7}".to_string(),
                            )
                        }
                    }
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    let key = index_schema::tlog::WitnessSigner::generate("evil.test/w", &mut rand::rngs::OsRng)
        .unwrap()
        .verifier()
        .to_string();
    let hub = HubProcess::start(ProcessOptions::default().hub_toml(&format!(
        "[[log_witnesses]]\nurl = \"http://{addr}\"\nkey = \"{key}\"\n"
    )));
    let p = hub.new_user("alice");
    publish(&hub, &p, "alice/code", "1.0.0");
    // Both kinds of answer were given (the hub retries with a pause).
    let start = Instant::now();
    while calls.load(Ordering::SeqCst) < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "{}", hub.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(hub.log().contains("larger than") && hub.log().contains("owned")) {
        assert!(Instant::now() < deadline, "{}", hub.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = hub.log();
    assert!(!log.contains('\u{1b}') && !log.contains('\u{7}'), "{log:?}");
    assert!(
        log.contains("\\u{1b}[2J"),
        "the answer is shown escaped: {log}"
    );
    // The log goes on, uncosigned.
    let note = get_text(&hub, "/log/checkpoint");
    let info = get_json(&hub, "/api/v1/log");
    let v = LogVerifier::parse(info["key"].as_str().unwrap()).unwrap();
    let (cp, sigs) = v
        .verify_cosigned(&note, &[WitnessVerifier::parse(&key).unwrap()])
        .unwrap();
    assert_eq!((cp.size, sigs.len()), (2, 0), "{note}");
}

/// A witness took any first checkpoint of a log it follows, a tree of 2^64−1 entries too (no
/// proof can be asked on first sight), and was then pinned above every real checkpoint. Past
/// 2^48 entries it refuses; the log's real checkpoints are cosigned after that. And a body that
/// trickles in (a byte a second) is cut at the body deadline instead of holding a connection.
#[test]
fn the_witness_refuses_absurd_trees_and_slow_bodies() {
    let mut log = TestLog::new("log.example/huge");
    let w = WitnessProcess::start("witness.test/w9", &[&log.key.verifier().to_string()]);
    let body = AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        checkpoint: log.key.sign_checkpoint(u64::MAX, log.root()),
    }
    .to_body();
    let (s, _, text) = add(&w, &body);
    assert_eq!(s, 400, "{text}");
    assert!(text.contains("past what this witness takes"), "{text}");
    log.grow(3, "a");
    assert_cosigned(&w, &log, &log.request(0));

    // A slow body: one byte a second.
    let url = w.url.trim_start_matches("http://").to_owned();
    let started = Instant::now();
    let answer = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut tcp = std::net::TcpStream::connect(url).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
        write!(
            tcp,
            "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 1000\r\n\r\n"
        )
        .unwrap();
        for _ in 0..30 {
            if tcp.write_all(b"x").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
            let mut peek = [0u8; 1];
            tcp.set_nonblocking(true).unwrap();
            let got = tcp.peek(&mut peek);
            tcp.set_nonblocking(false).unwrap();
            if matches!(got, Ok(n) if n > 0) {
                break;
            }
        }
        let mut text = String::new();
        let _ = tcp.read_to_string(&mut text);
        text
    })
    .join()
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
}
