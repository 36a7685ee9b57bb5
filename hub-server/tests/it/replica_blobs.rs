//! Blobs with several replicas (issue 30): two real `ofc-hub serve` processes on one
//! PostgreSQL (`scripts/peers/postgres`) and one blob backend — a shared directory, or a real
//! CNCF distribution registry (`scripts/peers/registry`). A chunked upload whose requests
//! alternate between the replicas completes; concurrent writers of one digest both succeed;
//! `ofc-hub gc` on one replica while the other pushes loses nothing; with the registry down,
//! pulls answer 503 with `Retry-After` and pushes are refused before anything is recorded.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use index_schema::name::Digest;
use ofc_test_kit::{Backend, HubProcess, ProcessOptions, START_BOUND, bin, hub_command};
use reqwest::Method;
use rstest::rstest;

/// Where the replicas keep blobs.
#[derive(Debug, Clone, Copy)]
enum Shared {
    /// One directory both mount (`blob_dir`).
    Dir,
    /// A real distribution registry (`upstream_registry`), each data dir a cache.
    Registry,
}

/// A second `ofc-hub serve` on replica A's database, with a data dir of its own.
struct Replica {
    child: Child,
    url: String,
    data: PathBuf,
    database_url: String,
    _root: tempfile::TempDir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ofc-hub serve` on `data` (with `toml` as its `hub.toml`) and `database_url`; waits until
/// it listens.
fn serve(data: &Path, toml: &str, database_url: &str) -> (Child, String) {
    std::fs::create_dir_all(data).unwrap();
    std::fs::write(data.join("hub.toml"), toml).unwrap();
    let mut cmd = hub_command(&bin("ofc-hub"), data, Some(database_url));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn ofc-hub serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(a) = line.strip_prefix("ofc-hub listening on ") {
                let _ = tx.send(Ok(a.trim().to_string()));
            } else {
                let _ = tx.send(Err(line));
            }
        }
    });
    let deadline = Instant::now() + START_BOUND;
    let mut said = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(url)) => return (child, url),
            Ok(Err(line)) => said.push(line),
            Err(e) => {
                let _ = child.kill();
                panic!("the replica did not start ({e}):\n{}", said.join("\n"));
            }
        }
    }
}

/// The second replica of `a`: same database, same blob settings, same log key (one hub).
fn second_replica(a: &HubProcess, toml: &str) -> Replica {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let key = a.data_dir().join(hub_core::log_key::LOG_KEY_FILE);
    if key.exists() {
        std::fs::copy(&key, data.join(hub_core::log_key::LOG_KEY_FILE)).unwrap();
    }
    let database_url = a.database_url().expect("PostgreSQL").to_string();
    let (child, url) = serve(&data, toml, &database_url);
    Replica {
        child,
        url,
        data,
        database_url,
        _root: root,
    }
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Two replicas on one PostgreSQL and one blob backend `shared` (extra settings in `more`);
/// the directory or registry prefix they share, and a token of user `alice` for both.
fn two_replicas(
    shared: Shared,
    registry_addr: Option<&str>,
    more: &str,
) -> (HubProcess, Replica, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let toml = match shared {
        Shared::Dir => format!("blob_dir = {:?}\n{more}", dir.path().display().to_string()),
        Shared::Registry => {
            let addr = registry_addr.map_or_else(ofc_test_kit::registry_peer, str::to_string);
            let prefix = format!("ofc-replicas-{}", uuid::Uuid::new_v4().simple());
            format!("upstream_registry = \"http://{addr}/{prefix}\"\n{more}")
        }
    };
    let a = HubProcess::start(ProcessOptions::new(Backend::Postgres).hub_toml(&toml));
    let b = second_replica(&a, &toml);
    let token = a.create_user("alice");
    (a, b, dir, token)
}

fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("u:{token}"))
    )
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

async fn send(
    base: &str,
    method: Method,
    path: &str,
    auth: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> Answer {
    let client = reqwest::Client::new();
    let url = if path.starts_with("http") {
        path.to_string()
    } else {
        format!("{base}{path}")
    };
    let mut r = client
        .request(method, url)
        .header("authorization", auth)
        .timeout(Duration::from_secs(60))
        .body(body);
    for (k, v) in headers {
        r = r.header(*k, v);
    }
    let resp = r.send().await.expect("the replica answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap().to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

fn content(label: &str, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut i = 0u64;
    while v.len() < len {
        v.extend_from_slice(format!("{label}:{i};").as_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

/// Pulls `d` from `base` and checks its bytes.
async fn pull_matches(base: &str, auth: &str, repo: &str, d: &Digest, bytes: &[u8], who: &str) {
    let r = send(
        base,
        Method::GET,
        &format!("/v2/{repo}/blobs/{d}"),
        auth,
        &[],
        vec![],
    )
    .await;
    assert_eq!(r.status, 200, "{who}: GET {d}: {}", r.text());
    assert_eq!(Digest::of(&r.body), *d, "{who}: the bytes of {d} differ");
    assert_eq!(r.body.len(), bytes.len());
}

/// `POST`, then `PATCH` chunks alternating between replica A and B, `PUT` on the other one:
/// the blob is whole on both.
async fn split_upload(shared: Shared) {
    let (a, b, _dir, token) = two_replicas(shared, None, "");
    let auth = basic(&token);
    let repo = "alice/split";
    let bytes = content("split", 700_001);
    let d = Digest::of(&bytes);
    let urls = [a.url.clone(), b.url.clone()];

    let r = send(
        &urls[0],
        Method::POST,
        &format!("/v2/{repo}/blobs/uploads/"),
        &auth,
        &[],
        vec![],
    )
    .await;
    assert_eq!(r.status, 202, "POST on A: {}", r.text());
    let location = r.header("location");
    let chunks: Vec<&[u8]> = bytes.chunks(200_000).collect();
    let mut offset = 0usize;
    for (i, c) in chunks.iter().enumerate() {
        let to = &urls[(i + 1) % 2];
        let range = format!("{}-{}", offset, offset + c.len() - 1);
        let r = send(
            to,
            Method::PATCH,
            &location,
            &auth,
            &[
                ("content-range", range),
                ("content-type", "application/octet-stream".into()),
            ],
            c.to_vec(),
        )
        .await;
        assert_eq!(
            r.status,
            202,
            "PATCH chunk {i} on replica {}: {}",
            ["A", "B"][(i + 1) % 2],
            r.text()
        );
        offset += c.len();
        assert_eq!(r.header("range"), format!("0-{}", offset - 1));
        // The other replica reports the same progress.
        let s = send(&urls[i % 2], Method::GET, &location, &auth, &[], vec![]).await;
        assert_eq!(s.status, 204, "{}", s.text());
        assert_eq!(s.header("range"), format!("0-{}", offset - 1));
    }
    // Two chunks racing for the same offset on the two replicas: exactly one is appended.
    let extra = b"racing".to_vec();
    let range = format!("{offset}-{}", offset + extra.len() - 1);
    let hdrs = [("content-range", range)];
    let (r1, r2) = tokio::join!(
        send(
            &urls[0],
            Method::PATCH,
            &location,
            &auth,
            &hdrs,
            extra.clone()
        ),
        send(
            &urls[1],
            Method::PATCH,
            &location,
            &auth,
            &hdrs,
            extra.clone()
        ),
    );
    let mut statuses = [r1.status, r2.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [202, 416], "{} / {}", r1.text(), r2.text());
    let mut whole = bytes.clone();
    whole.extend_from_slice(&extra);
    let d_whole = Digest::of(&whole);
    let last = &urls[chunks.len() % 2];
    let r = send(
        last,
        Method::PUT,
        &format!("{location}?digest={d_whole}"),
        &auth,
        &[],
        vec![],
    )
    .await;
    assert_eq!(r.status, 201, "PUT: {}", r.text());
    for (u, who) in urls.iter().zip(["A", "B"]) {
        pull_matches(u, &auth, repo, &d_whole, &whole, who).await;
    }
    // The session is over on both.
    for u in &urls {
        let s = send(u, Method::GET, &location, &auth, &[], vec![]).await;
        assert_eq!(s.status, 404);
    }
    let _ = d;
    if let Shared::Dir = shared {
        let uploads = _dir.path().join("blobs-v1/uploads");
        let left: Vec<_> = std::fs::read_dir(&uploads)
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "parts left behind: {left:?}");
    }
    drop(b);
}

#[rstest]
#[case::shared_dir(Shared::Dir)]
#[case::registry(Shared::Registry)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_upload_split_across_replicas_completes(#[case] shared: Shared) {
    split_upload(shared).await;
}

/// Abandoned sessions: `ofc-hub gc` run on both replicas at once ends each exactly once, and
/// its parts go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_upload_is_cleaned_by_one_replica() {
    let (a, b, dir, token) = two_replicas(Shared::Dir, None, "upload_ttl_secs = 1\n");
    let auth = basic(&token);
    let mut locations = Vec::new();
    for i in 0..3 {
        let r = send(
            &a.url,
            Method::POST,
            "/v2/alice/left/blobs/uploads/",
            &auth,
            &[],
            vec![],
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.text());
        let loc = r.header("location");
        let r = send(
            &b.url,
            Method::PATCH,
            &loc,
            &auth,
            &[],
            content(&format!("left{i}"), 1000),
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.text());
        locations.push(loc);
    }
    let uploads = dir.path().join("blobs-v1/uploads");
    assert_eq!(std::fs::read_dir(&uploads).unwrap().count(), 3);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let gc = |data: PathBuf| {
        let url = a.database_url().unwrap().to_string();
        std::thread::spawn(move || {
            let out = hub_command(&bin("ofc-hub"), &data, Some(&url))
                .args(["gc", "--json"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            v["uploads_expired"].as_u64().unwrap()
        })
    };
    let (ga, gb) = (gc(a.data_dir().to_path_buf()), gc(b.data.clone()));
    let (na, nb) = (ga.join().unwrap(), gb.join().unwrap());
    assert_eq!(na + nb, 3, "replica A expired {na}, B {nb}");
    assert_eq!(std::fs::read_dir(&uploads).unwrap().count(), 0);
    for loc in &locations {
        let r = send(&b.url, Method::GET, loc, &auth, &[], vec![]).await;
        assert_eq!(r.status, 404);
    }
}

/// Pushes `bytes` to `repo` on `base` in one request; the status.
async fn push_blob(base: &str, auth: &str, repo: &str, bytes: &[u8]) -> Answer {
    let d = Digest::of(bytes);
    send(
        base,
        Method::POST,
        &format!("/v2/{repo}/blobs/uploads/?digest={d}"),
        auth,
        &[("content-type", "application/octet-stream".into())],
        bytes.to_vec(),
    )
    .await
}

/// Every file under the shared `sha256/` is complete: its name is the digest of its bytes.
fn no_partial_blob(dir: &Path) -> usize {
    let mut n = 0;
    for shard in std::fs::read_dir(dir.join("blobs-v1/sha256"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(f.path()).unwrap();
            assert_eq!(
                Digest::of(&bytes).hex(),
                name,
                "{} is not a whole blob",
                f.path().display()
            );
            n += 1;
        }
    }
    n
}

/// Writers on two processes at once, of the same digests and of different ones, into one
/// shared directory: every write succeeds, and only whole blobs are ever under a digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_a_shared_directory() {
    // Every push of the round at once: more than the default 16 uploads of one user.
    let (a, b, dir, token) = two_replicas(Shared::Dir, None, "max_uploads_per_user = 1000\n");
    let auth = basic(&token);
    let urls = [a.url.clone(), b.url.clone()];
    const ROUNDS: usize = 12;
    let mut tasks = Vec::new();
    for i in 0..ROUNDS {
        for (r, u) in urls.iter().enumerate() {
            // The same bytes from both replicas, and bytes of their own.
            for bytes in [
                content(&format!("same{i}"), 300_000 + i),
                content(&format!("own{i}-{r}"), 200_000),
            ] {
                let (u, auth) = (u.clone(), auth.clone());
                tasks.push(tokio::spawn(async move {
                    let ans = push_blob(&u, &auth, "alice/many", &bytes).await;
                    (ans.status, ans.text(), bytes)
                }));
            }
        }
    }
    let mut seen = HashSet::new();
    let mut pushed = Vec::new();
    for t in tasks {
        let (status, text, bytes) = t.await.unwrap();
        assert_eq!(status, 201, "{text}");
        if seen.insert(Digest::of(&bytes)) {
            pushed.push(bytes);
        }
        no_partial_blob(dir.path());
    }
    assert_eq!(pushed.len(), ROUNDS * 3);
    for bytes in &pushed {
        for (u, who) in urls.iter().zip(["A", "B"]) {
            pull_matches(u, &auth, "alice/many", &Digest::of(bytes), bytes, who).await;
        }
    }
    assert_eq!(no_partial_blob(dir.path()), ROUNDS * 3);
    drop(b);
}

fn manifest(config: &[u8], layer: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": Digest::of(config).to_string(),
            "size": config.len(),
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": Digest::of(layer).to_string(),
            "size": layer.len(),
        }],
    }))
    .unwrap()
}

/// `ofc-hub gc --grace-secs 0` on replica A, round after round, while replica B pushes images
/// (blobs, then a manifest): every manifest B acknowledged pulls whole from both replicas,
/// after the pushes and after one more collection. A push a collection overtook is refused
/// cleanly (`MANIFEST_BLOB_UNKNOWN`) and pushed again. Bounded in pushes and attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_on_one_replica_during_pushes_on_another_loses_nothing() {
    let (a, b, dir, token) = two_replicas(Shared::Dir, None, "");
    let auth = basic(&token);
    const PUSHES: usize = 10;
    const ATTEMPTS: usize = 20;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gc_loop = {
        let (data, url, done) = (
            a.data_dir().to_path_buf(),
            a.database_url().unwrap().to_string(),
            done.clone(),
        );
        std::thread::spawn(move || {
            let (mut rounds, mut deleted) = (0u64, 0u64);
            let deadline = Instant::now() + Duration::from_secs(300);
            while !done.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
                let out = hub_command(&bin("ofc-hub"), &data, Some(&url))
                    .args(["gc", "--grace-secs", "0", "--json"])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                deleted += v["blobs_deleted"].as_u64().unwrap();
                rounds += 1;
            }
            (rounds, deleted)
        })
    };
    let mut acked = Vec::new();
    let mut refused = 0;
    for i in 0..PUSHES {
        let repo = format!("alice/img{i}");
        let (config, layer) = (
            content(&format!("cfg{i}"), 2_000),
            content(&format!("layer{i}"), 400_000),
        );
        // A blob pushed and left unreferenced: what the collections may take.
        let r = push_blob(&b.url, &auth, &repo, &content(&format!("litter{i}"), 5_000)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let m = manifest(&config, &layer);
        let mut ok = false;
        for _ in 0..ATTEMPTS {
            for blob in [&config, &layer] {
                let r = push_blob(&b.url, &auth, &repo, blob).await;
                assert_eq!(r.status, 201, "{}", r.text());
            }
            let r = send(
                &b.url,
                Method::PUT,
                &format!("/v2/{repo}/manifests/v1"),
                &auth,
                &[(
                    "content-type",
                    "application/vnd.oci.image.manifest.v1+json".into(),
                )],
                m.clone(),
            )
            .await;
            if r.status == 201 {
                ok = true;
                break;
            }
            assert_eq!(r.status, 400, "{}", r.text());
            assert!(r.text().contains("MANIFEST_BLOB_UNKNOWN"), "{}", r.text());
            refused += 1;
        }
        assert!(ok, "{repo}: the manifest was refused {ATTEMPTS} times");
        acked.push((repo, config, layer));
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (rounds, deleted) = gc_loop.join().unwrap();
    let check = async |when: &str| {
        for (repo, config, layer) in &acked {
            for blob in [config, layer] {
                for (u, who) in [(&a.url, "A"), (&b.url, "B")] {
                    pull_matches(
                        u,
                        &auth,
                        repo,
                        &Digest::of(blob),
                        blob,
                        &format!("{who} {when}"),
                    )
                    .await;
                }
            }
        }
    };
    check("after the pushes").await;
    let out = b
        .command()
        .args(["gc", "--grace-secs", "0", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    check("after the last gc").await;
    eprintln!(
        "{PUSHES} images acknowledged on B, {refused} manifests refused cleanly and pushed \
         again; {rounds} gc rounds on A removed {deleted} blobs during the pushes; the last gc \
         (on B) removed {}",
        last["blobs_deleted"]
    );
    assert!(rounds >= 1, "no gc round ran during the pushes");
    // The litter is gone: gc did collect across the replicas.
    assert_eq!(no_partial_blob(dir.path()), PUSHES * 2);
}

impl Replica {
    /// `ofc-hub` on this replica's data dir and database, to add a subcommand to.
    fn command(&self) -> std::process::Command {
        hub_command(&bin("ofc-hub"), &self.data, Some(&self.database_url))
    }
}

/// A registry of this test's own (`scripts/peers/registry` on a port and directory of its
/// own, so stopping it stops no other test's), stopped on drop.
struct OwnRegistry {
    addr: String,
    pid: u32,
    _dir: tempfile::TempDir,
}

impl OwnRegistry {
    fn start() -> OwnRegistry {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = workspace().join("scripts/peers/registry");
        let out = std::process::Command::new(&script)
            .env("OFC_TEST_PEERS_DIR", dir.path())
            .env("OFC_TEST_REGISTRY_PORT", port.to_string())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "the OCI registry peer is unavailable: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pid = std::fs::read_to_string(dir.path().join("registry/pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        OwnRegistry {
            addr: String::from_utf8(out.stdout).unwrap().trim().to_string(),
            pid,
            _dir: dir,
        }
    }

    /// Stops it (SIGKILL) and waits until its port refuses connections.
    fn stop(&self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&self.addr).is_ok() {
            assert!(Instant::now() < deadline, "the registry does not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for OwnRegistry {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status();
    }
}

fn assert_retry_later(r: &Answer, what: &str) {
    assert_eq!(r.status, 503, "{what}: {}", r.text());
    let secs: u64 = r
        .header("retry-after")
        .parse()
        .unwrap_or_else(|_| panic!("{what}: no Retry-After: {:?}", r.headers));
    assert!(secs > 0, "{what}");
}

/// The blob registry down: a pull the replica cannot answer from its cache is 503 with
/// `Retry-After`; a blob push, a chunk and a manifest push are refused the same way, and none
/// of them is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_registry_down_pulls_and_pushes_answer_503_and_record_nothing() {
    let reg = OwnRegistry::start();
    let (a, b, _dir, token) = two_replicas(Shared::Registry, Some(&reg.addr), "");
    let auth = basic(&token);
    let repo = "alice/down";
    let (config, layer) = (content("cfg", 1_000), content("layer", 100_000));
    for blob in [&config, &layer] {
        let r = push_blob(&a.url, &auth, repo, blob).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    reg.stop();

    // B never cached the layer: it cannot answer.
    let d = Digest::of(&layer);
    let r = send(
        &b.url,
        Method::GET,
        &format!("/v2/{repo}/blobs/{d}"),
        &auth,
        &[],
        vec![],
    )
    .await;
    assert_retry_later(&r, "a pull through B");
    // A new blob is refused, and not recorded anywhere.
    let fresh = content("fresh", 50_000);
    let r = push_blob(&a.url, &auth, repo, &fresh).await;
    assert_retry_later(&r, "a blob push");
    for u in [&a.url, &b.url] {
        let h = send(
            u,
            Method::HEAD,
            &format!("/v2/{repo}/blobs/{}", Digest::of(&fresh)),
            &auth,
            &[],
            vec![],
        )
        .await;
        assert_eq!(h.status, 404, "the refused blob is there");
    }
    // A chunk is refused; the session still holds nothing.
    let r = send(
        &b.url,
        Method::POST,
        &format!("/v2/{repo}/blobs/uploads/"),
        &auth,
        &[],
        vec![],
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.text());
    let loc = r.header("location");
    let r = send(&b.url, Method::PATCH, &loc, &auth, &[], fresh.clone()).await;
    assert_retry_later(&r, "a chunk");
    let s = send(&a.url, Method::GET, &loc, &auth, &[], vec![]).await;
    assert_eq!(s.status, 204);
    assert_eq!(s.header("range"), "0-0");
    // A manifest (whose blobs A stored before) is refused and not recorded.
    let m = manifest(&config, &layer);
    for u in [&a.url, &b.url] {
        let r = send(
            u,
            Method::PUT,
            &format!("/v2/{repo}/manifests/v1"),
            &auth,
            &[(
                "content-type",
                "application/vnd.oci.image.manifest.v1+json".into(),
            )],
            m.clone(),
        )
        .await;
        if r.status != 503 {
            eprintln!("replica A said:\n{}", a.log());
        }
        assert_retry_later(&r, "a manifest push");
    }
    for u in [&a.url, &b.url] {
        let g = send(
            u,
            Method::GET,
            &format!("/v2/{repo}/manifests/v1"),
            &auth,
            &[],
            vec![],
        )
        .await;
        assert_eq!(g.status, 404, "the refused manifest is there: {}", g.text());
    }
}
