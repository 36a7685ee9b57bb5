//! Garbage collection: unreferenced blobs older than the grace period go; referenced ones,
//! recently used ones and agent bundles stay; expired upload sessions end.
//!
//! And gc while pushes continue: clients push over `/v2/` while gc runs round after round
//! (with the production grace period, and with none at all); every manifest the hub
//! acknowledged pulls whole afterwards, a push is only ever refused with a clean registry error,
//! and what nothing references goes once it is old. Agent versions published through the JSON
//! API keep their bundles the same way, and `ofc-hub gc` itself runs beside a serving hub.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use futures::StreamExt as _;
use hub_core::gc;
use index_schema::media_types as mt;
use index_schema::name::Digest;
use ofc_test_kit::{Backend, TestHub, bundle_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::json;

fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("u:{token}"))
    )
}

fn blob_file(data_dir: &Path, d: &Digest) -> PathBuf {
    let hex = d.hex();
    data_dir.join("blobs-v1/sha256").join(&hex[..2]).join(hex)
}

fn blob_path(app: &TestHub, d: &Digest) -> PathBuf {
    blob_file(&app.data_dir, d)
}

/// Makes the blob two hours old (older than the default grace period); false when it is gone.
fn try_age(data_dir: &Path, d: &Digest) -> bool {
    match std::fs::File::options()
        .write(true)
        .open(blob_file(data_dir, d))
    {
        Ok(f) => {
            f.set_modified(SystemTime::now() - AGE).unwrap();
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("cannot age {d}: {e}"),
    }
}

fn age(app: &TestHub, d: &Digest) {
    assert!(try_age(&app.data_dir, d), "{d} is not stored");
}

async fn push(app: &TestHub, auth: &str, bytes: &[u8]) -> Digest {
    let d = Digest::of(bytes);
    let r = app
        .client
        .post(app.url(&format!("/v2/alice/g/blobs/uploads/?digest={d}")))
        .header("authorization", auth)
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    d
}

async fn status(app: &TestHub, method: Method, path: &str, auth: &str) -> u16 {
    app.client
        .request(method, app.url(path))
        .header("authorization", auth)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn gc_keeps_what_is_referenced_or_recent() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    let cfg = push(&app, &auth, b"{}").await;
    let layer = push(&app, &auth, b"referenced layer").await;
    let garbage = push(&app, &auth, b"unreferenced and old").await;
    let fresh = push(&app, &auth, b"unreferenced but fresh").await;
    let mounted = push(&app, &auth, b"old, then mounted").await;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "config": {"mediaType": mt::OCI_IMAGE_CONFIG, "digest": cfg.to_string(), "size": 2},
        "layers": [{"mediaType": mt::OCI_IMAGE_LAYER_GZIP, "digest": layer.to_string(), "size": 16}],
    }))
    .unwrap();
    let r = app
        .client
        .put(app.url("/v2/alice/g/manifests/v1"))
        .header("authorization", &auth)
        .header("content-type", mt::OCI_IMAGE_MANIFEST)
        .body(manifest)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // An agent version: its bundle and envelope are referenced.
    let bundle = b"agent bundle".to_vec();
    let m = bundle_manifest("alice/gc-agent", "1.0.0", &bundle);
    let (s, v) = app
        .publish(&app.user.token, &app.user.key, &m, Some(&bundle))
        .await;
    assert_eq!(s, 201, "{v}");
    // An upload session that will expire.
    let r = app
        .client
        .post(app.url("/v2/alice/g/blobs/uploads/"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    let session = r.headers()["location"].to_str().unwrap().to_string();

    // Everything is old except `fresh`; `mounted` is used again by a mount.
    let all = app.state.core.blobs.list().await.unwrap();
    for (d, _) in &all {
        if *d != fresh {
            age(&app, d);
        }
    }
    let r = status(
        &app,
        Method::POST,
        &format!("/v2/alice/h/blobs/uploads/?mount={mounted}&from=alice/g"),
        &auth,
    )
    .await;
    assert_eq!(r, 201);

    let report = gc::collect(&app.state.core, Duration::from_secs(3600), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(report.blobs_deleted, 1, "{report:?}");
    assert_eq!(report.uploads_expired, 1);
    assert!(!blob_path(&app, &garbage).exists());
    for kept in [cfg, layer, fresh, mounted, Digest::of(&bundle)] {
        assert!(blob_path(&app, &kept).exists(), "{kept}");
    }
    // The image and the agent still pull whole.
    let r = app
        .client
        .get(app.url("/v2/alice/gc-agent/manifests/1.0.0"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let om: serde_json::Value = r.json().await.unwrap();
    let env = om["config"]["digest"].as_str().unwrap();
    assert_eq!(
        status(
            &app,
            Method::GET,
            &format!("/v2/alice/gc-agent/blobs/{env}"),
            &auth
        )
        .await,
        200
    );
    assert_eq!(
        status(
            &app,
            Method::GET,
            &format!("/v2/alice/g/blobs/{layer}"),
            &auth
        )
        .await,
        200
    );
    // The expired session is gone.
    assert_eq!(status(&app, Method::GET, &session, &auth).await, 404);

    // A second run with nothing old left to collect removes nothing.
    let report = gc::collect(
        &app.state.core,
        Duration::from_secs(3600),
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    assert_eq!(report.blobs_deleted, 0);
    app.stop().await;
}

// ---- gc while clients push ----

/// Clients pushing at once, and pushes each.
const CLIENTS: usize = 8;
const PUSHES: usize = 20;
/// The least number of gc rounds that run while they push.
const MIN_GC_ROUNDS: usize = 10;
/// The whole run (pushes, gc rounds, checks) ends within this.
const TIME_LIMIT: Duration = Duration::from_secs(300);
/// How old an aged blob is: older than the production default grace period (1 h).
const AGE: Duration = Duration::from_secs(7200);
/// The production grace period (`ofc-hub gc` without `--grace-secs`).
const DEFAULT_GRACE: Duration = Duration::from_secs(3600);
/// What a push may be refused with when gc took a blob before the push referenced it.
const CLEAN_REFUSALS: &[&str] = &["MANIFEST_BLOB_UNKNOWN", "BLOB_UNKNOWN"];

struct Resp {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    }
    /// The OCI error code, if the body is an OCI error envelope.
    fn code(&self) -> Option<String> {
        let v: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
        v["errors"][0]["code"].as_str().map(str::to_string)
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body)
            .chars()
            .take(300)
            .collect()
    }
}

/// A blob a client pushed, with its bytes and the repository it was pushed to.
#[derive(Clone)]
struct Blob {
    digest: Digest,
    bytes: Arc<[u8]>,
    repo: String,
}

/// A manifest the hub acknowledged (201), with everything it references.
struct Acked {
    repo: String,
    tag: String,
    digest: Digest,
    manifest: Vec<u8>,
    blobs: Vec<Blob>,
    /// Milliseconds since the run began: first request of the push, and its 201.
    window: (u128, u128),
}

/// One gc round: when it ran (ms since the run began) and what it removed.
#[derive(Debug, Clone, Copy)]
struct Round {
    start: u128,
    end: u128,
    deleted: usize,
}

#[derive(Default)]
struct Ledger {
    acked: Vec<Acked>,
    /// Blobs of acknowledged manifests: other clients reference or mount them.
    shared: Vec<Blob>,
    /// Aged blobs nothing references yet: other clients adopt them (as a client does that finds
    /// a layer already in the registry).
    orphans: Vec<Blob>,
    /// Aged blobs nothing ever references.
    garbage: Vec<Digest>,
    /// Pushes refused with a clean registry error.
    refused: usize,
    /// Pushes that found a blob they meant to reuse gone (a mount that fell through, HEAD then
    /// 404, or a clean refusal) and uploaded it again.
    recovered: usize,
    /// Everything that breaks the invariant.
    violations: Vec<String>,
    /// Acknowledged manifests found incomplete: their windows, to line up with gc rounds.
    broken_windows: Vec<(u128, u128)>,
}

/// How a blob is uploaded.
#[derive(Clone, Copy)]
enum Upload {
    /// `POST ?digest=` with the bytes.
    Single,
    /// `POST`, then `PUT ?digest=` with the bytes.
    Session,
    /// `POST`, two `PATCH`es with `Content-Range`, then an empty `PUT ?digest=`.
    Chunked,
}

struct Ctx {
    url: String,
    client: reqwest::Client,
    auth: String,
    data_dir: PathBuf,
    /// Whether the grace period outlasts the whole run: then every blob a push uploaded or
    /// touched is kept at least until the push ends, and such a push must be acknowledged.
    protective: bool,
    epoch: Instant,
    ledger: Mutex<Ledger>,
}

fn content(label: &str, len: usize) -> Arc<[u8]> {
    let mut v: Vec<u8> = format!("{label}\n").into_bytes();
    let mut n = 0u32;
    while v.len() < len {
        v.extend_from_slice(format!("{n:08x} ").as_bytes());
        n += 1;
    }
    v.into()
}

fn manifest_bytes(config: &Blob, layers: &[Blob]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "config": {
            "mediaType": mt::OCI_IMAGE_CONFIG,
            "digest": config.digest.to_string(),
            "size": config.bytes.len(),
        },
        "layers": layers.iter().map(|b| json!({
            "mediaType": mt::OCI_IMAGE_LAYER_GZIP,
            "digest": b.digest.to_string(),
            "size": b.bytes.len(),
        })).collect::<Vec<_>>(),
    }))
    .unwrap()
}

/// What became of a manifest push.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Acked,
    /// A clean registry error (4xx, [`CLEAN_REFUSALS`]).
    Refused,
    /// Anything else (already recorded as a violation).
    Broken,
}

impl Ctx {
    fn ms(&self) -> u128 {
        self.epoch.elapsed().as_millis()
    }

    fn violation(&self, v: String) {
        self.ledger.lock().unwrap().violations.push(v);
    }

    /// One request (authenticated unless a GET); a 5xx is a violation whatever the request.
    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Resp {
        let mut r = self
            .client
            .request(method.clone(), format!("{}{path}", self.url));
        // Pulls are anonymous, as most pullers' are.
        if method != Method::GET {
            r = r.header("authorization", &self.auth);
        }
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        if let Some(b) = body {
            r = r.body(b);
        }
        let resp = r
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.unwrap().to_vec();
        let r = Resp {
            status,
            headers,
            body,
        };
        if status >= 500 {
            self.violation(format!(
                "{method} {path} answered {status} at {} ms: {}",
                self.ms(),
                r.text()
            ));
        }
        r
    }

    fn expect(&self, r: &Resp, status: u16, what: &str) -> bool {
        if r.status == status {
            return true;
        }
        if r.status < 500 {
            self.violation(format!(
                "{what}: {} instead of {status}: {}",
                r.status,
                r.text()
            ));
        }
        false
    }

    async fn start_session(&self, repo: &str) -> String {
        let r = self
            .send(
                Method::POST,
                &format!("/v2/{repo}/blobs/uploads/"),
                &[],
                None,
            )
            .await;
        self.expect(&r, 202, "upload start");
        r.header("location")
    }

    /// Ends an upload session with the (rest of the) bytes.
    async fn finish_session(&self, location: &str, d: &Digest, bytes: Vec<u8>) {
        let sep = if location.contains('?') { '&' } else { '?' };
        let r = self
            .send(
                Method::PUT,
                &format!("{location}{sep}digest={d}"),
                &[("content-type", "application/octet-stream")],
                Some(bytes),
            )
            .await;
        self.expect(&r, 201, "upload PUT");
    }

    /// Uploads `bytes` to `repo`; uploads never fail because of gc.
    async fn upload(&self, repo: &str, bytes: Arc<[u8]>, how: Upload) -> Blob {
        let d = Digest::of(&bytes);
        match how {
            Upload::Single => {
                let r = self
                    .send(
                        Method::POST,
                        &format!("/v2/{repo}/blobs/uploads/?digest={d}"),
                        &[("content-type", "application/octet-stream")],
                        Some(bytes.to_vec()),
                    )
                    .await;
                self.expect(&r, 201, "single-POST upload");
            }
            Upload::Session => {
                let loc = self.start_session(repo).await;
                self.finish_session(&loc, &d, bytes.to_vec()).await;
            }
            Upload::Chunked => {
                let mut loc = self.start_session(repo).await;
                let half = bytes.len() / 2;
                for (a, b) in [(0, half), (half, bytes.len())] {
                    let range = format!("{a}-{}", b - 1);
                    let r = self
                        .send(
                            Method::PATCH,
                            &loc,
                            &[
                                ("content-type", "application/octet-stream"),
                                ("content-range", &range),
                            ],
                            Some(bytes[a..b].to_vec()),
                        )
                        .await;
                    self.expect(&r, 202, "upload PATCH");
                    loc = r.header("location");
                }
                self.finish_session(&loc, &d, Vec::new()).await;
            }
        }
        Blob {
            digest: d,
            bytes,
            repo: repo.to_string(),
        }
    }

    /// Mounts `b` into `repo`: true when mounted; otherwise uploads it through the session the
    /// registry opened instead (as clients do) and returns false.
    async fn mount(&self, repo: &str, b: &Blob) -> bool {
        let r = self
            .send(
                Method::POST,
                &format!(
                    "/v2/{repo}/blobs/uploads/?mount={}&from={}",
                    b.digest, b.repo
                ),
                &[],
                None,
            )
            .await;
        match r.status {
            201 => true,
            202 => {
                self.finish_session(&r.header("location"), &b.digest, b.bytes.to_vec())
                    .await;
                false
            }
            _ => {
                self.expect(&r, 201, "mount");
                false
            }
        }
    }

    async fn put_manifest(
        &self,
        repo: &str,
        tag: &str,
        config: &Blob,
        layers: &[Blob],
        started: u128,
    ) -> Outcome {
        let body = manifest_bytes(config, layers);
        let digest = Digest::of(&body);
        let r = self
            .send(
                Method::PUT,
                &format!("/v2/{repo}/manifests/{tag}"),
                &[("content-type", mt::OCI_IMAGE_MANIFEST)],
                Some(body.clone()),
            )
            .await;
        if r.status == 201 {
            if r.header("docker-content-digest") != digest.to_string() {
                self.violation(format!(
                    "{repo}:{tag} acknowledged with digest {:?}, not {digest}",
                    r.header("docker-content-digest")
                ));
            }
            let mut blobs = vec![config.clone()];
            blobs.extend(layers.iter().cloned());
            let a = Acked {
                repo: repo.to_string(),
                tag: tag.to_string(),
                digest,
                manifest: body,
                blobs,
                window: (started, self.ms()),
            };
            // Pulled at once, and again after the run.
            self.verify(&a, "just after its 201").await;
            let mut l = self.ledger.lock().unwrap();
            l.shared.extend(a.blobs.iter().cloned());
            l.acked.push(a);
            return Outcome::Acked;
        }
        if (400..500).contains(&r.status)
            && r.code()
                .is_some_and(|c| CLEAN_REFUSALS.contains(&c.as_str()))
        {
            self.ledger.lock().unwrap().refused += 1;
            return Outcome::Refused;
        }
        if r.status < 500 {
            self.violation(format!(
                "PUT {repo}:{tag}: {} is not a clean refusal: {}",
                r.status,
                r.text()
            ));
        }
        Outcome::Broken
    }

    /// Pushes the manifest; after a clean refusal uploads its blobs again and retries (twice).
    /// `must_ack`: every blob it references was uploaded or touched by this push, or belongs to
    /// an acknowledged manifest, so with a protective grace period it must be acknowledged.
    async fn push(
        &self,
        repo: &str,
        tag: &str,
        config: Blob,
        layers: Vec<Blob>,
        started: u128,
        must_ack: bool,
    ) {
        for attempt in 0..3 {
            match self
                .put_manifest(repo, tag, &config, &layers, started)
                .await
            {
                Outcome::Acked => {
                    if attempt > 0 {
                        self.ledger.lock().unwrap().recovered += 1;
                    }
                    return;
                }
                Outcome::Broken => return,
                Outcome::Refused => {
                    if self.protective && (must_ack || attempt > 0) {
                        self.violation(format!(
                            "PUT {repo}:{tag} (attempt {attempt}) refused although every blob \
                             it references was uploaded or touched by this push, within the \
                             grace period"
                        ));
                    }
                    for b in std::iter::once(&config).chain(&layers) {
                        self.upload(repo, b.bytes.clone(), Upload::Single).await;
                    }
                }
            }
        }
    }

    /// The manifest pulls byte-exact by tag and by digest, and so does every blob it references.
    async fn verify(&self, a: &Acked, when: &str) {
        let what = format!(
            "{when}: acknowledged {}:{} ({}, pushed {}..{} ms)",
            a.repo, a.tag, a.digest, a.window.0, a.window.1
        );
        for reference in [a.tag.clone(), a.digest.to_string()] {
            let r = self
                .send(
                    Method::GET,
                    &format!("/v2/{}/manifests/{reference}", a.repo),
                    &[("accept", mt::OCI_IMAGE_MANIFEST)],
                    None,
                )
                .await;
            if r.status != 200
                || r.body != a.manifest
                || r.header("docker-content-digest") != a.digest.to_string()
            {
                self.violation(format!(
                    "{what}: GET manifests/{reference} → {}: {}",
                    r.status,
                    r.text()
                ));
            }
        }
        for b in &a.blobs {
            let r = self
                .send(
                    Method::GET,
                    &format!("/v2/{}/blobs/{}", a.repo, b.digest),
                    &[],
                    None,
                )
                .await;
            let whole = r.status == 200 && Digest::of(&r.body) == b.digest && *r.body == *b.bytes;
            if !whole {
                let mut l = self.ledger.lock().unwrap();
                l.violations.push(format!(
                    "{what}: blob {} → {} ({} bytes, digest {})",
                    b.digest,
                    r.status,
                    r.body.len(),
                    Digest::of(&r.body)
                ));
                l.broken_windows.push(a.window);
            }
        }
    }

    /// Picks a blob another client pushed, from the shared list or (taking it) the orphans.
    fn pick(&self, c: usize, i: usize, orphan: bool) -> Option<Blob> {
        let own = format!("alice/c{c}");
        let mut l = self.ledger.lock().unwrap();
        let list = if orphan {
            &mut l.orphans
        } else {
            &mut l.shared
        };
        let others: Vec<usize> = (0..list.len()).filter(|&k| list[k].repo != own).collect();
        if others.is_empty() {
            return None;
        }
        let k = others[(c * 7 + i * 13) % others.len()];
        Some(if orphan {
            list.swap_remove(k)
        } else {
            list[k].clone()
        })
    }
}

/// One client's pushes, in four kinds taking turns.
async fn client(ctx: Arc<Ctx>, c: usize) {
    let repo = format!("alice/c{c}");
    for i in 0..PUSHES {
        let tag = format!("p{i}");
        let label = |role: &str| format!("client {c} push {i} {role}");
        let started = ctx.ms();
        let config = || content(&format!("{{\"created-by\": \"{}\"}}", label("config")), 0);
        match (c + i) % 4 {
            // A new image: config and two layers, each uploaded a different way.
            0 => {
                let cfg = ctx.upload(&repo, config(), Upload::Session).await;
                let l1 = ctx
                    .upload(&repo, content(&label("layer 1"), 300), Upload::Single)
                    .await;
                let l2 = ctx
                    .upload(
                        &repo,
                        content(&label("layer 2"), 48 * 1024),
                        Upload::Chunked,
                    )
                    .await;
                ctx.push(&repo, &tag, cfg, vec![l1, l2], started, true)
                    .await;
            }
            // A layer of another client's acknowledged image: mounted (blobs belong to
            // repositories: one cannot be referenced from another repository without a mount).
            1 => {
                let cfg = ctx.upload(&repo, config(), Upload::Single).await;
                let own = ctx
                    .upload(&repo, content(&label("layer"), 200), Upload::Session)
                    .await;
                let layers = match ctx.pick(c, i, false) {
                    Some(s) => {
                        if !ctx.mount(&repo, &s).await {
                            ctx.violation(format!(
                                "{repo}:{tag}: blob {} of an acknowledged manifest in {} could \
                                 not be mounted at {} ms: it is gone",
                                s.digest,
                                s.repo,
                                ctx.ms()
                            ));
                        }
                        vec![s, own]
                    }
                    None => vec![own],
                };
                ctx.push(&repo, &tag, cfg, layers, started, true).await;
            }
            // An old blob nothing references yet, pushed earlier by another client: mounted
            // (touching it), or found by HEAD and referenced without uploading (not touching it:
            // gc may take it first, and then the push is refused and retried).
            2 => {
                let cfg = ctx.upload(&repo, config(), Upload::Single).await;
                let Some(o) = ctx.pick(c, i, true) else {
                    let l = ctx
                        .upload(&repo, content(&label("layer"), 200), Upload::Single)
                        .await;
                    ctx.push(&repo, &tag, cfg, vec![l], started, true).await;
                    continue;
                };
                let must_ack = if i % 2 == 0 {
                    let mounted = ctx.mount(&repo, &o).await;
                    if !mounted {
                        ctx.ledger.lock().unwrap().recovered += 1;
                    }
                    true
                } else {
                    let r = ctx
                        .send(
                            Method::HEAD,
                            &format!("/v2/{}/blobs/{}", o.repo, o.digest),
                            &[],
                            None,
                        )
                        .await;
                    match r.status {
                        200 => false,
                        404 => {
                            ctx.ledger.lock().unwrap().recovered += 1;
                            ctx.upload(&repo, o.bytes.clone(), Upload::Single).await;
                            true
                        }
                        _ => {
                            ctx.expect(&r, 200, "HEAD blob");
                            true
                        }
                    }
                };
                ctx.push(&repo, &tag, cfg, vec![o], started, must_ack).await;
            }
            // Litter: two blobs never referenced by this push, aged as if uploaded long ago
            // (one for others to adopt, one that nothing will reference), and a manifest that
            // names a blob never uploaded.
            _ => {
                let adoptable = ctx
                    .upload(&repo, content(&label("orphan"), 500), Upload::Single)
                    .await;
                let junk = ctx
                    .upload(&repo, content(&label("garbage"), 700), Upload::Session)
                    .await;
                let adoptable_aged = try_age(&ctx.data_dir, &adoptable.digest);
                let junk_aged = try_age(&ctx.data_dir, &junk.digest);
                {
                    let mut l = ctx.ledger.lock().unwrap();
                    if adoptable_aged {
                        l.orphans.push(adoptable);
                    }
                    if junk_aged {
                        l.garbage.push(junk.digest);
                    }
                }
                let cfg = ctx.upload(&repo, config(), Upload::Single).await;
                let never = Blob {
                    digest: Digest::of(label("never uploaded").as_bytes()),
                    bytes: label("never uploaded").into_bytes().into(),
                    repo: repo.clone(),
                };
                let r = ctx
                    .send(
                        Method::PUT,
                        &format!("/v2/{repo}/manifests/{tag}"),
                        &[("content-type", mt::OCI_IMAGE_MANIFEST)],
                        Some(manifest_bytes(&cfg, &[never])),
                    )
                    .await;
                if r.status < 500
                    && (r.status != 400 || r.code().as_deref() != Some("MANIFEST_BLOB_UNKNOWN"))
                {
                    ctx.violation(format!(
                        "{repo}:{tag} names a blob never uploaded: {} {}",
                        r.status,
                        r.text()
                    ));
                }
            }
        }
    }
}

async fn verify_all(ctx: &Ctx, acked: &[Acked], when: &str) {
    futures::stream::iter(acked)
        .for_each_concurrent(CLIENTS, |a| ctx.verify(a, when))
        .await;
}

/// `CLIENTS` clients push `PUSHES` times each over `/v2/` while gc runs round after round with
/// `grace` (through [`gc::collect`], what `ofc-hub gc` runs); then checks the invariant.
async fn gc_during_pushes(backend: Backend, grace: Duration) {
    // The hub's error log (a 5xx's cause) shows with a failure.
    let _ = tracing_subscriber::fmt()
        .with_env_filter("error")
        .with_test_writer()
        .try_init();
    let app = TestHub::in_process(backend).await;
    let upload_ttl = Duration::from_secs(hub_core::config::Config::default().upload_ttl_secs);
    let ctx = Arc::new(Ctx {
        url: app.url.clone(),
        client: app.client.clone(),
        auth: basic(&app.user.token),
        data_dir: app.data_dir.clone(),
        protective: grace > TIME_LIMIT,
        epoch: Instant::now(),
        ledger: Mutex::new(Ledger::default()),
    });
    let run = async {
        let done = Arc::new(AtomicBool::new(false));
        let collector = {
            let (state, ctx, done) = (app.state.clone(), ctx.clone(), done.clone());
            tokio::spawn(async move {
                let mut rounds = Vec::new();
                while !(done.load(Ordering::SeqCst) && rounds.len() >= MIN_GC_ROUNDS) {
                    let start = ctx.ms();
                    match gc::collect(&state.core, grace, upload_ttl).await {
                        Ok(r) => rounds.push(Round {
                            start,
                            end: ctx.ms(),
                            deleted: r.blobs_deleted,
                        }),
                        Err(e) => ctx.violation(format!(
                            "gc round {} failed at {start} ms: {:?} {} {}",
                            rounds.len(),
                            e.kind,
                            e.code,
                            e.message
                        )),
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                rounds
            })
        };
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| tokio::spawn(client(ctx.clone(), c)))
            .collect();
        for c in clients {
            c.await.unwrap();
        }
        let pushed_by = ctx.ms();
        done.store(true, Ordering::SeqCst);
        let rounds = collector.await.unwrap();

        // Everything acknowledged pulls whole.
        let acked = std::mem::take(&mut ctx.ledger.lock().unwrap().acked);
        verify_all(&ctx, &acked, "after the run").await;
        // Once old, what no acknowledged manifest references goes, and nothing else.
        for (d, _) in app.state.core.blobs.list().await.unwrap() {
            try_age(&app.data_dir, &d);
        }
        let last = gc::collect(&app.state.core, grace, upload_ttl)
            .await
            .unwrap();
        let referenced: HashSet<Digest> = acked
            .iter()
            .flat_map(|a| a.blobs.iter().map(|b| b.digest))
            .collect();
        let left: HashSet<Digest> = app
            .state
            .core
            .blobs
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        for d in left.difference(&referenced) {
            ctx.violation(format!("unreferenced old blob {d} survived gc"));
        }
        verify_all(&ctx, &acked, "after the last gc").await;
        (acked, rounds, pushed_by, last)
    };
    let (acked, rounds, pushed_by, last) = tokio::time::timeout(TIME_LIMIT, run)
        .await
        .unwrap_or_else(|_| panic!("the run did not end within {TIME_LIMIT:?}"));

    let l = std::mem::take(&mut *ctx.ledger.lock().unwrap());
    let deleted: usize = rounds
        .iter()
        .filter(|r| r.start < pushed_by)
        .map(|r| r.deleted)
        .sum();
    eprintln!(
        "{backend:?}, grace {grace:?}: {} manifests acknowledged, {} pushes refused cleanly, \
         {} recovered after a blob was taken; {} gc rounds ({} while pushing) removed {deleted} \
         blobs during the pushes; the last gc removed {} of {} blobs; {} garbage blobs; \
         pushes took {pushed_by} ms",
        acked.len(),
        l.refused,
        l.recovered,
        rounds.len(),
        rounds.iter().filter(|r| r.start < pushed_by).count(),
        last.blobs_deleted,
        last.blobs_seen,
        l.garbage.len(),
    );
    if !l.violations.is_empty() {
        let overlapping: Vec<Round> = rounds
            .iter()
            .filter(|r| r.deleted > 0)
            .filter(|r| {
                l.broken_windows
                    .iter()
                    .any(|(a, b)| r.start <= *b && r.end >= *a)
            })
            .copied()
            .collect();
        let shown = 40.min(l.violations.len());
        panic!(
            "{} violations ({backend:?}, grace {grace:?}), the first {shown}:\n{}\ngc rounds \
             overlapping the pushes whose manifests were found incomplete: {overlapping:?}",
            l.violations.len(),
            l.violations[..shown].join("\n")
        );
    }
    // The run did what it is for: gc ran throughout and removed blobs while clients pushed.
    assert!(rounds.len() >= MIN_GC_ROUNDS);
    assert!(
        deleted > 0,
        "no gc round removed anything during the pushes"
    );
    assert!(!l.garbage.is_empty());
    if grace > TIME_LIMIT {
        // Every push but the litter is acknowledged when the grace period protects it.
        assert_eq!(acked.len(), CLIENTS * PUSHES * 3 / 4);
    } else {
        assert!(!acked.is_empty());
    }
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_while_clients_push(#[case] backend: Backend) {
    gc_during_pushes(backend, DEFAULT_GRACE).await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_with_no_grace_period_while_clients_push(#[case] backend: Backend) {
    gc_during_pushes(backend, Duration::ZERO).await;
}

/// `ofc-hub gc`, the operator's way to collect, run while the hub serves the same data: it
/// removes what nothing references and keeps the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_command_runs_while_the_hub_serves() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    let cfg = push(&app, &auth, b"{}").await;
    let layer = push(&app, &auth, b"a layer in use").await;
    let garbage = push(&app, &auth, b"nothing uses this").await;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "config": {"mediaType": mt::OCI_IMAGE_CONFIG, "digest": cfg.to_string(), "size": 2},
        "layers": [{"mediaType": mt::OCI_IMAGE_LAYER_GZIP, "digest": layer.to_string(), "size": 14}],
    }))
    .unwrap();
    let r = app
        .client
        .put(app.url("/v2/alice/g/manifests/v1"))
        .header("authorization", &auth)
        .header("content-type", mt::OCI_IMAGE_MANIFEST)
        .body(manifest)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    for d in [cfg, layer, garbage] {
        age(&app, &d);
    }

    let mut cmd = app.command();
    cmd.args(["gc", "--json"]);
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(
        out.status.success(),
        "`ofc-hub gc` failed while the hub serves: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["blobs_deleted"], 1, "{report}");
    assert!(!blob_path(&app, &garbage).exists());
    for d in [cfg, layer] {
        assert_eq!(
            status(&app, Method::GET, &format!("/v2/alice/g/blobs/{d}"), &auth).await,
            200
        );
    }
    app.stop().await;
}

/// Agent versions published through the JSON API, each naming a bundle already on the hub (sent
/// again, or not), while gc runs round after round with the production grace period. The
/// bundles were stored more than the grace period ago and nothing references them yet, like the
/// layers the `/v2/` clients above adopt: a publish that is acknowledged must keep its bundle.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_while_agents_are_published(#[case] backend: Backend) {
    const PUBLISHES: usize = 40;
    let app = TestHub::in_process(backend).await;
    let auth = basic(&app.user.token);
    let done = Arc::new(AtomicBool::new(false));
    let collector = {
        let (state, done) = (app.state.clone(), done.clone());
        tokio::spawn(async move {
            let upload_ttl =
                Duration::from_secs(hub_core::config::Config::default().upload_ttl_secs);
            let mut rounds = 0usize;
            while !done.load(Ordering::SeqCst) || rounds < MIN_GC_ROUNDS {
                gc::collect(&state.core, DEFAULT_GRACE, upload_ttl)
                    .await
                    .unwrap();
                rounds += 1;
                tokio::task::yield_now().await;
            }
            rounds
        })
    };
    let run = async {
        let mut published = Vec::new();
        let mut refused = 0;
        for i in 0..PUBLISHES {
            let bundle = format!("bundle {i}, pretend tar.gz").into_bytes();
            let d = push(&app, &auth, &bundle).await;
            if !try_age(&app.data_dir, &d) {
                continue;
            }
            let name = format!("alice/pub{i}");
            let m = bundle_manifest(&name, "1.0.0", &bundle);
            let sent = i % 2 == 0;
            let send = sent.then_some(bundle.as_slice());
            let (s, v) = app.publish(&app.user.token, &app.user.key, &m, send).await;
            match s {
                201 => published.push((name, d, bundle, sent)),
                // gc took the old blob before the publish looked at it: a clean refusal.
                400 if v["code"] == "bundle_missing" => refused += 1,
                _ => panic!("publish {name}: {s} {v}"),
            }
        }
        (published, refused)
    };
    let (published, refused) = tokio::time::timeout(TIME_LIMIT, run)
        .await
        .unwrap_or_else(|_| panic!("the run did not end within {TIME_LIMIT:?}"));
    done.store(true, Ordering::SeqCst);
    let rounds = collector.await.unwrap();

    let mut broken = Vec::new();
    for (name, d, bundle, sent) in &published {
        let r = app
            .client
            .get(app.url(&format!("/v2/{name}/blobs/{d}")))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.bytes().await.unwrap();
        if status != 200 || body != bundle.as_slice() || Digest::of(&body) != *d {
            broken.push(format!(
                "{name} 1.0.0 (bundle {}): bundle {d} → {status}",
                if *sent { "sent again" } else { "not sent" }
            ));
        }
    }
    // Once old, published bundles are still referenced: a last gc keeps them.
    for (d, _) in app.state.core.blobs.list().await.unwrap() {
        try_age(&app.data_dir, &d);
    }
    let upload_ttl = Duration::from_secs(hub_core::config::Config::default().upload_ttl_secs);
    gc::collect(&app.state.core, DEFAULT_GRACE, upload_ttl)
        .await
        .unwrap();
    for (name, d, _, _) in &published {
        if !broken.iter().any(|b| b.starts_with(&format!("{name} ")))
            && !blob_path(&app, d).exists()
        {
            broken.push(format!(
                "{name} 1.0.0: bundle {d} removed by a gc after the run"
            ));
        }
    }
    eprintln!(
        "{backend:?}: {} versions published, {refused} refused cleanly, {rounds} gc rounds",
        published.len()
    );
    assert!(
        broken.is_empty(),
        "{} of {} acknowledged publishes lost their bundle to a concurrent gc:\n{}",
        broken.len(),
        published.len(),
        broken.join("\n")
    );
    assert!(!published.is_empty());
    app.stop().await;
}

/// Issue 13, point 5: deleting an agent (or a version) removes what served it under `/v2/` —
/// tags and manifests at once, and the bundle blob at the next collection — so a deleted
/// agent cannot be pulled through the registry API, and its blob is not there to reuse.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn a_takedown_removes_tags_manifests_and_at_gc_the_blobs(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let admin = app.new_user("root-admin", true).await;
    let one = b"bundle one of the taken-down agent".to_vec();
    let two = b"bundle two of the taken-down agent".to_vec();
    for (v, bytes) in [("1.0.0", &one), ("1.1.0", &two)] {
        let m = bundle_manifest("alice/gone", v, bytes);
        assert_eq!(app.publish(&u.token, &u.key, &m, Some(bytes)).await.0, 201);
    }
    let status = |path: String| {
        let c = app.client.clone();
        let url = app.url(&path);
        async move {
            c.get(url)
                .header("accept", mt::OCI_IMAGE_MANIFEST)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let manifest_digest = |v: &'static str| {
        let c = app.client.clone();
        let url = app.url(&format!("/v2/alice/gone/manifests/{v}"));
        async move {
            let r = c
                .get(url)
                .header("accept", mt::OCI_IMAGE_MANIFEST)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.headers()["docker-content-digest"]
                .to_str()
                .unwrap()
                .to_owned()
        }
    };
    let d1 = manifest_digest("1.0.0").await;
    let d2 = manifest_digest("1.1.0").await;

    // One version deleted: its tag and manifest go, the other stays.
    let (s, b) = app
        .call(
            Method::DELETE,
            "/api/v1/agents/alice/gone/versions/1.0.0",
            Some(&admin.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{b}");
    assert_eq!(status("/v2/alice/gone/manifests/1.0.0".into()).await, 404);
    assert_eq!(status(format!("/v2/alice/gone/manifests/{d1}")).await, 404);
    assert_eq!(status("/v2/alice/gone/manifests/1.1.0".into()).await, 200);

    // The whole agent deleted: nothing of it answers under /v2/.
    let (s, b) = app
        .call(
            Method::DELETE,
            "/api/v1/agents/alice/gone",
            Some(&admin.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{b}");
    assert_eq!(status("/v2/alice/gone/manifests/1.1.0".into()).await, 404);
    assert_eq!(status(format!("/v2/alice/gone/manifests/{d2}")).await, 404);
    let (s, tags) = app
        .call(Method::GET, "/v2/alice/gone/tags/list", None, None)
        .await;
    assert!(
        s == 404 || tags["tags"].as_array().is_none_or(|t| t.is_empty()),
        "{s} {tags}"
    );

    // The next collection frees both bundles: nothing references them any more.
    let report = gc::collect(&app.state.core, Duration::ZERO, Duration::ZERO)
        .await
        .unwrap();
    for bytes in [&one, &two] {
        let d = Digest::of(bytes);
        assert!(!blob_path(&app, &d).exists(), "{d} survived: {report:?}");
        assert_eq!(status(format!("/v2/alice/other/blobs/{d}")).await, 404);
    }
    app.stop().await;
}

/// A removed version's bundle leaves its repository at once — unpublished (the path of a
/// takedown too) or deleted by an administrator: `GET /v2/<agent>/blobs/<bundle>` answers 404
/// without waiting for `ofc-hub gc` (it was served, `immutable`, until the next collection).
/// A bundle another version of the agent still is stays.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn a_removed_versions_bundle_leaves_the_repository_at_once(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let u = app.user.clone();
    let admin = app.new_user("root-admin", true).await;
    let one = b"bundle of the version to unpublish".to_vec();
    let two = b"bundle of two versions".to_vec();
    for (v, bytes) in [("1.0.0", &one), ("1.1.0", &two), ("1.2.0", &two)] {
        let m = bundle_manifest("alice/removed", v, bytes);
        assert_eq!(app.publish(&u.token, &u.key, &m, Some(bytes)).await.0, 201);
    }
    let blob = |bytes: &[u8]| format!("/v2/alice/removed/blobs/{}", Digest::of(bytes));
    // Anonymous, as anyone pulls a public agent.
    let status = |_: &TestHub, method: Method, path: &str, _: &str| {
        let request = app.client.request(method, app.url(path));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(&app, Method::GET, &blob(&one), "").await, 200);

    let (s, b) = app
        .call(
            Method::POST,
            "/api/v1/agents/alice/removed/versions/1.0.0/unpublish",
            Some(&u.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{b}");
    assert_eq!(status(&app, Method::GET, &blob(&one), "").await, 404);
    assert_eq!(status(&app, Method::HEAD, &blob(&one), "").await, 404);

    let delete = |v: &'static str| {
        let path = format!("/api/v1/agents/alice/removed/versions/{v}");
        let token = admin.token.clone();
        let app = &app;
        async move { app.call(Method::DELETE, &path, Some(&token), None).await }
    };
    let (s, b) = delete("1.1.0").await;
    assert_eq!(s, 204, "{b}");
    // 1.2.0 is the same bundle.
    assert_eq!(status(&app, Method::GET, &blob(&two), "").await, 200);
    let (s, b) = delete("1.2.0").await;
    assert_eq!(s, 204, "{b}");
    assert_eq!(status(&app, Method::GET, &blob(&two), "").await, 404);
    app.stop().await;
}
