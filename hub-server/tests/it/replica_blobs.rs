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
    let body = pull_ok(base, auth, repo, d, who).await;
    assert_eq!(body.len(), bytes.len());
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

// The hub id (scale-findings items 1 and 2): a blob store is tied to its database, and a
// database or replica that is not the blob store's is refused before anything is deleted or
// served.

/// The hub id the database at `url` records.
async fn db_hub_id(url: &str) -> Option<String> {
    let db = hub_core::store::db::Db::connect(url, 2).await.unwrap();
    let id = hub_core::store::Store::new(db.clone())
        .hub_id()
        .await
        .unwrap()
        .map(|r| r.id);
    db.close().await;
    id
}

/// The database URL of `hub` (its SQLite file's, on SQLite).
fn url_of(hub: &HubProcess) -> String {
    hub.database_url().map_or_else(
        || format!("sqlite://{}", hub.data_dir().join("hub.sqlite3").display()),
        str::to_string,
    )
}

/// The blob files under `dir/blobs-v1/sha256`.
fn blob_files(dir: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    for shard in std::fs::read_dir(dir.join("blobs-v1/sha256"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(shard.path()).unwrap().flatten() {
            out.insert(f.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// Pushes an image (config, layer, manifest tagged v1) to `repo`, and a blob nothing
/// references; the digests of the image's blobs.
async fn push_image(base: &str, auth: &str, repo: &str) -> Vec<Digest> {
    let (config, layer) = (content("cfg", 300), content("layer", 20_000));
    for blob in [&config, &layer, &content("litter", 700)] {
        let r = push_blob(base, auth, repo, blob).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = send(
        base,
        Method::PUT,
        &format!("/v2/{repo}/manifests/v1"),
        auth,
        &[(
            "content-type",
            "application/vnd.oci.image.manifest.v1+json".into(),
        )],
        manifest(&config, &layer),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    vec![Digest::of(&config), Digest::of(&layer)]
}

/// Pulls `d` from `base`: 200 and bytes of that digest (returned).
async fn pull_ok(base: &str, auth: &str, repo: &str, d: &Digest, who: &str) -> Vec<u8> {
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
    r.body.to_vec()
}

fn blob_dir_toml(dir: &Path) -> String {
    format!("blob_dir = {:?}\n", dir.display().to_string())
}

/// `ofc-hub … gc` of `hub`, expected to fail; its stderr.
fn gc_refused(hub: &HubProcess) -> String {
    let out = hub.run(&["gc", "--grace-secs", "0", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "gc was expected to refuse: {}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// Item 1: `ofc-hub gc` (and `serve`) with another database on a hub's blob directory refuse,
/// naming both ids and places, and delete nothing; the hub's own gc still collects.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_with_another_database_on_the_blob_dir_refuses_and_deletes_nothing(
    #[case] backend: Backend,
) {
    let shared = tempfile::tempdir().unwrap();
    let toml = blob_dir_toml(shared.path());
    let a = HubProcess::start(ProcessOptions::new(backend).hub_toml(&toml));
    let auth = basic(&a.create_user("alice"));
    let image = push_image(&a.url, &auth, "alice/img").await;
    let id = std::fs::read_to_string(shared.path().join("blobs-v1/HUB-ID")).unwrap();
    let id = id.trim();
    assert_eq!(db_hub_id(&url_of(&a)).await.as_deref(), Some(id));
    let before = blob_files(shared.path());
    assert_eq!(before.len(), 3);

    // A fresh database (as in the report: CREATE DATABASE w) on the same blob directory.
    let w = HubProcess::start(ProcessOptions::new(backend).hub_toml(&toml).stopped());
    let e = gc_refused(&w);
    let shown_db = hub_core::store::db::redact_url(&url_of(&w));
    for part in [id, &shown_db, &shared.path().display().to_string()] {
        assert!(e.contains(part), "`{part}` not in: {e}");
    }
    assert_eq!(blob_files(shared.path()), before, "gc on w deleted blobs");
    let e = w.refused_start();
    assert!(e.contains(id) && e.contains("another database"), "{e}");
    // Still nothing of its own: a later gc refuses the same way.
    assert!(gc_refused(&w).contains(id));
    assert_eq!(db_hub_id(&url_of(&w)).await, None);
    assert_eq!(blob_files(shared.path()), before);

    // The hub's own gc runs: it takes the litter, keeps the image.
    let out = a.run(&["gc", "--grace-secs", "0", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["blobs_deleted"], 1, "{r}");
    for d in &image {
        pull_ok(&a.url, &auth, "alice/img", d, "a").await;
    }
}

/// Item 2: a replica on the hub's database with a blob store of its own (its data dir, or
/// another directory) refuses to start, naming the hub id and both places; with the hub's
/// blob directory it starts and serves the hub's blobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_blob_store_is_not_the_databases_refuses_to_start() {
    let shared = tempfile::tempdir().unwrap();
    let toml = blob_dir_toml(shared.path());
    let a = HubProcess::start(ProcessOptions::new(Backend::Postgres).hub_toml(&toml));
    let auth = basic(&a.create_user("alice"));
    let image = push_image(&a.url, &auth, "alice/img").await;
    let id = db_hub_id(a.database_url().unwrap()).await.unwrap();
    let other = tempfile::tempdir().unwrap();
    for settings in [String::new(), blob_dir_toml(other.path())] {
        let b = HubProcess::start(
            ProcessOptions::default()
                .database_url(a.database_url().unwrap())
                .hub_toml(&settings)
                .stopped(),
        );
        std::fs::copy(
            a.data_dir().join(hub_core::log_key::LOG_KEY_FILE),
            b.data_dir().join(hub_core::log_key::LOG_KEY_FILE),
        )
        .unwrap();
        let e = b.refused_start();
        let store = if settings.is_empty() {
            b.data_dir().display().to_string()
        } else {
            other.path().display().to_string()
        };
        for part in [id.as_str(), "is not this hub's", &store] {
            assert!(e.contains(part), "`{part}` not in: {e}");
        }
    }
    assert!(blob_files(other.path()).is_empty());
    let b = second_replica(&a, &toml);
    for d in &image {
        pull_ok(&b.url, &auth, "alice/img", d, "b").await;
    }
}

/// An existing deployment (data in the database and the blob directory, no ids: as a hub
/// before migration 0028 left them) adopts one id on its first start, logged, and starts as
/// before afterwards. Before it does, neither a database with data on an empty blob store nor
/// a new database on the blob directory is taken for the hub's.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_deployment_adopts_a_hub_id(#[case] backend: Backend) {
    let shared = tempfile::tempdir().unwrap();
    let toml = blob_dir_toml(shared.path());
    let mut a = HubProcess::start(
        ProcessOptions::new(backend)
            .hub_toml(&toml)
            .env("OFC_HUB_LOG", "warn,hub_core::hub_id=info"),
    );
    let auth = basic(&a.create_user("alice"));
    let image = push_image(&a.url, &auth, "alice/img").await;
    a.kill();
    // What an older hub left: no ids.
    let url = url_of(&a);
    let db = hub_core::store::db::Db::connect(&url, 2).await.unwrap();
    sqlx::query("DELETE FROM hub_id")
        .execute(db.write())
        .await
        .unwrap();
    db.close().await;
    std::fs::remove_file(shared.path().join("blobs-v1/HUB-ID")).unwrap();
    let before = blob_files(shared.path());

    // A new database on the blob directory, no ids anywhere: refused, nothing deleted.
    let w = HubProcess::start(ProcessOptions::new(backend).hub_toml(&toml).stopped());
    let e = gc_refused(&w);
    assert!(e.contains("references none"), "{e}");
    assert_eq!(blob_files(shared.path()), before);
    // The database with data on an empty blob directory: refused, naming its blobs.
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(a.data_dir().join("hub.toml"), blob_dir_toml(empty.path())).unwrap();
    let e = a.refused_start();
    assert!(
        e.contains(&image[0].to_string()) || e.contains(&image[1].to_string()),
        "{e}"
    );
    assert!(!shared.path().join("blobs-v1/HUB-ID").exists());
    assert_eq!(db_hub_id(&url).await, None);

    // The hub itself adopts one id into both.
    std::fs::write(a.data_dir().join("hub.toml"), &toml).unwrap();
    a.spawn();
    let id = db_hub_id(&url).await.expect("an id in the database");
    let marker = std::fs::read_to_string(shared.path().join("blobs-v1/HUB-ID")).unwrap();
    assert_eq!(marker.trim(), id);
    assert!(a.log().contains("adopted a hub id"), "{}", a.log());
    for d in &image {
        pull_ok(&a.url, &auth, "alice/img", d, "a").await;
    }
    // Later starts and gc: fine, the same id.
    a.restart();
    let out = a.run(&["gc", "--grace-secs", "0", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(db_hub_id(&url).await, Some(id));
    for d in &image {
        pull_ok(&a.url, &auth, "alice/img", d, "a").await;
    }
}

/// The upstream registry holds the hub id too (the tag `hub-id` of `PREFIX/hub-id`): another
/// database on the hub's registry prefix is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_database_on_the_hubs_registry_prefix_is_refused() {
    let prefix = format!("ofc-hub-id-{}", uuid::Uuid::new_v4().simple());
    let toml = format!(
        "upstream_registry = \"http://{}/{prefix}\"\n",
        ofc_test_kit::registry_peer()
    );
    let mut a = HubProcess::start(ProcessOptions::new(Backend::Postgres).hub_toml(&toml));
    let id = db_hub_id(a.database_url().unwrap()).await.unwrap();
    let w = HubProcess::start(
        ProcessOptions::new(Backend::Postgres)
            .hub_toml(&toml)
            .stopped(),
    );
    let e = w.refused_start();
    for part in [id.as_str(), prefix.as_str(), "hub-id"] {
        assert!(e.contains(part), "`{part}` not in: {e}");
    }
    // The hub itself restarts on it.
    a.restart();
}
