//! Agent versions' tags in the upstream registry (`hub_core::mirror_tags`), against a real CNCF
//! distribution registry (`scripts/peers/registry`, deletion enabled) on SQLite and PostgreSQL:
//! a push of the manifest a version already has is answered as its publish (201, the same
//! headers, nothing recorded) and tags it in the registry again; another manifest for the
//! version is still refused; a tag deleted from the registry is made again by the client's
//! retry and by the repair pass — called directly, at a hub's start, and on the replica that
//! takes the lease when its holder dies.

use std::time::{Duration, Instant};

use base64::Engine as _;
use hub_core::mirror_tags::{RepairPass, repair_pass};
use index_schema::envelope::sign_manifest;
use index_schema::media_types as mt;
use index_schema::name::Digest;
use ofc_test_kit::{
    Backend, HubProcess, ProcessOptions, Publisher, TestHub, bundle_manifest, on_own_runtime,
    publish_body,
};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

/// `HOST:PORT/PREFIX`: a prefix of this test's own in the registry peer.
fn upstream() -> String {
    format!(
        "{}/ofc-tags-{}",
        ofc_test_kit::registry_peer(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The digest tag `tag` of `repo` names in the registry under `upstream`, if any.
async fn registry_tag(upstream: &str, repo: &str, tag: &str) -> Option<String> {
    let (host, prefix) = upstream.split_once('/').unwrap();
    let r = reqwest::Client::new()
        .head(format!("http://{host}/v2/{prefix}/{repo}/manifests/{tag}"))
        .header("accept", mt::OCI_IMAGE_MANIFEST)
        .send()
        .await
        .unwrap();
    match r.status().as_u16() {
        200 => Some(
            r.headers()["docker-content-digest"]
                .to_str()
                .unwrap()
                .to_string(),
        ),
        404 => None,
        s => panic!("HEAD {repo}:{tag} in the registry answered {s}"),
    }
}

/// Deletes manifest `digest` of `repo` (and so every tag naming it) from the registry, through
/// its own API.
async fn registry_delete(upstream: &str, repo: &str, digest: &str) {
    let (host, prefix) = upstream.split_once('/').unwrap();
    let r = reqwest::Client::new()
        .delete(format!(
            "http://{host}/v2/{prefix}/{repo}/manifests/{digest}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
}

fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("anyone:{token}"))
    )
}

/// An answer: status, headers, body.
struct Answer(u16, reqwest::header::HeaderMap, Vec<u8>);

impl Answer {
    fn header(&self, name: &str) -> String {
        self.1
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.2).unwrap_or(Value::Null)
    }
}

async fn send(
    app: &TestHub,
    method: Method,
    path: &str,
    auth: &str,
    body: Vec<u8>,
    ct: &str,
) -> Answer {
    let r = app
        .client
        .request(
            method,
            if path.starts_with("http") {
                path.to_string()
            } else {
                app.url(path)
            },
        )
        .header("authorization", auth)
        .header("content-type", ct)
        .body(body)
        .send()
        .await
        .unwrap();
    let (s, h) = (r.status().as_u16(), r.headers().clone());
    Answer(s, h, r.bytes().await.unwrap().to_vec())
}

/// Uploads `bytes` as a blob of `repo` (POST, then PUT with the digest).
async fn push_blob(app: &TestHub, repo: &str, auth: &str, bytes: &[u8]) -> Digest {
    let r = send(
        app,
        Method::POST,
        &format!("/v2/{repo}/blobs/uploads/"),
        auth,
        Vec::new(),
        "application/octet-stream",
    )
    .await;
    assert_eq!(r.0, 202, "{}", String::from_utf8_lossy(&r.2));
    let loc = r.header("location");
    let d = Digest::of(bytes);
    let sep = if loc.contains('?') { '&' } else { '?' };
    let r = send(
        app,
        Method::PUT,
        &format!("{loc}{sep}digest={d}"),
        auth,
        bytes.to_vec(),
        "application/octet-stream",
    )
    .await;
    assert_eq!(r.0, 201, "{}", String::from_utf8_lossy(&r.2));
    d
}

/// The OCI manifest of `repo` version `version` with `bundle` signed by `who`, its blobs
/// uploaded: what an OCI client pushes.
async fn agent_manifest(
    app: &TestHub,
    who: &Publisher,
    repo: &str,
    version: &str,
    bundle: &[u8],
) -> Vec<u8> {
    let auth = basic(&who.token);
    let env = sign_manifest(&bundle_manifest(repo, version, bundle), &who.key)
        .to_json()
        .into_bytes();
    let ed = push_blob(app, repo, &auth, &env).await;
    let bd = push_blob(app, repo, &auth, bundle).await;
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "artifactType": mt::AGENT_ARTIFACT_V1,
        "config": {"mediaType": mt::AGENT_ENVELOPE_V1, "digest": ed.to_string(), "size": env.len()},
        "layers": [{"mediaType": mt::AGENT_BUNDLE_V1, "digest": bd.to_string(), "size": bundle.len()}],
    }))
    .unwrap()
}

async fn put_manifest(app: &TestHub, who: &Publisher, repo: &str, tag: &str, om: &[u8]) -> Answer {
    send(
        app,
        Method::PUT,
        &format!("/v2/{repo}/manifests/{tag}"),
        &basic(&who.token),
        om.to_vec(),
        mt::OCI_IMAGE_MANIFEST,
    )
    .await
}

/// What the hub holds of a version that a publish changes: the version's row (time, log
/// entry, manifest), the log's size and the outbox's length.
async fn recorded(
    app: &TestHub,
    repo: &str,
    version: &str,
) -> (i64, Option<i64>, String, u64, usize) {
    let s = app.store();
    let a = s.agent(repo).await.unwrap().unwrap();
    let v = s.version(a.id, version).await.unwrap().unwrap();
    let (size, _) = s.log_head().await.unwrap();
    let outbox = s.outbox_after(0, 10_000).await.unwrap().len();
    (v.created_at, v.log_index, v.manifest_digest, size, outbox)
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_push_is_idempotent_by_digest_and_lost_tags_are_made_again(#[case] backend: Backend) {
    let up = upstream();
    let u = up.clone();
    let app = TestHub::in_process_with(backend, move |c| {
        c.upstream_registry = Some(format!("http://{u}"));
        // The background passes stay out of the way: this test runs passes itself.
        c.mirror_repair_secs = 3600;
    })
    .await;
    let alice = app.user.clone();
    // Made first: a user's key is a log entry too.
    let bob = app.new_user("bob", false).await;
    let repo = "alice/again";

    let bundle = b"the first bundle".to_vec();
    let om = agent_manifest(&app, &alice, repo, "1.0.0", &bundle).await;
    let digest = Digest::of(&om).to_string();
    let first = put_manifest(&app, &alice, repo, "1.0.0", &om).await;
    assert_eq!(first.0, 201, "{}", String::from_utf8_lossy(&first.2));
    assert_eq!(first.header("docker-content-digest"), digest);
    assert_eq!(
        registry_tag(&up, repo, "1.0.0").await.as_deref(),
        Some(digest.as_str())
    );
    let before = recorded(&app, repo, "1.0.0").await;

    // (a) The same manifest again: 201 with the same headers, nothing recorded.
    let again = put_manifest(&app, &alice, repo, "1.0.0", &om).await;
    assert_eq!(again.0, 201, "{}", String::from_utf8_lossy(&again.2));
    for h in ["location", "docker-content-digest"] {
        assert_eq!(again.header(h), first.header(h), "{h}");
    }
    assert_eq!(
        recorded(&app, repo, "1.0.0").await,
        before,
        "a push again recorded something"
    );

    // (b) Another manifest for the version: still refused, as before.
    let other = agent_manifest(&app, &alice, repo, "1.0.0", b"another bundle").await;
    assert_ne!(Digest::of(&other), Digest::of(&om));
    let r = put_manifest(&app, &alice, repo, "1.0.0", &other).await;
    assert_eq!(r.0, 409, "{}", String::from_utf8_lossy(&r.2));
    assert_eq!(r.json()["errors"][0]["code"], "DENIED", "{}", r.json());
    assert_eq!(
        r.json()["errors"][0]["detail"]["ofc_code"],
        "version_exists",
        "{}",
        r.json()
    );
    assert_eq!(
        registry_tag(&up, repo, "1.0.0").await.as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(recorded(&app, repo, "1.0.0").await, before);
    // Someone who may not publish there gets no 201 by pushing the same bytes.
    let r = put_manifest(&app, &bob, repo, "1.0.0", &om).await;
    assert_eq!(r.0, 403, "{}", String::from_utf8_lossy(&r.2));

    // (c) The tag lost from the registry: the client's retry makes it again.
    registry_delete(&up, repo, &digest).await;
    assert_eq!(registry_tag(&up, repo, "1.0.0").await, None);
    let retry = put_manifest(&app, &alice, repo, "1.0.0", &om).await;
    assert_eq!(retry.0, 201, "{}", String::from_utf8_lossy(&retry.2));
    assert_eq!(
        registry_tag(&up, repo, "1.0.0").await.as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(recorded(&app, repo, "1.0.0").await, before);

    // … and so does a repair pass, for versions pushed or published through the JSON API.
    let b2 = b"published through the JSON API".to_vec();
    let (s, v) = app
        .publish(
            &alice.token,
            &alice.key,
            &bundle_manifest("alice/json-again", "2.0.0", &b2),
            Some(&b2),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let json_digest = registry_tag(&up, "alice/json-again", "2.0.0")
        .await
        .expect("mirrored");
    // Versions younger than the settling time are left for a later pass.
    let mut pass = RepairPass::after(0);
    repair_pass(&app.state.core, &mut pass, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(
        (pass.checked, pass.repaired, pass.cursor, pass.recent),
        (0, 0, 0, true)
    );
    // Both tags gone; one pass from the start makes both again.
    registry_delete(&up, repo, &digest).await;
    registry_delete(&up, "alice/json-again", &json_digest).await;
    let mut pass = RepairPass::after(0);
    repair_pass(&app.state.core, &mut pass, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        (pass.checked, pass.repaired, pass.recent),
        (2, 2, false),
        "{pass:?}"
    );
    assert_eq!(
        registry_tag(&up, repo, "1.0.0").await.as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(
        registry_tag(&up, "alice/json-again", "2.0.0").await,
        Some(json_digest)
    );
    // The registry serves the very bytes the hub recorded.
    let (host, prefix) = up.split_once('/').unwrap();
    let theirs = reqwest::Client::new()
        .get(format!("http://{host}/v2/{prefix}/{repo}/manifests/1.0.0"))
        .header("accept", mt::OCI_IMAGE_MANIFEST)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(theirs.as_ref(), om.as_slice());
    // A second pass finds nothing to do; one from where the first ended checks nothing.
    let mut again = RepairPass::after(0);
    repair_pass(&app.state.core, &mut again, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!((again.checked, again.repaired), (2, 0));
    let mut after = RepairPass::after(pass.cursor);
    repair_pass(&app.state.core, &mut after, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!((after.checked, after.repaired), (0, 0));
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l == "ofc_hub_mirror_tags_repaired_total 2"),
        "{metrics}"
    );
    app.stop().await;
}

/// Publishes `repo` 1.0.0 with a bundle through the JSON API of `hub` as `who`.
fn publish(hub: &HubProcess, who: &Publisher, repo: &str) {
    let bundle = format!("the bundle of {repo}").into_bytes();
    let mut body = publish_body(&bundle_manifest(repo, "1.0.0", &bundle), &who.key);
    body["bundle"] = base64::engine::general_purpose::STANDARD
        .encode(&bundle)
        .into();
    let (s, v) = hub.api(
        Method::PUT,
        &format!("/api/v1/agents/{repo}/versions/1.0.0"),
        Some(&who.token),
        Some(body),
    );
    assert_eq!(s, 201, "{v}");
}

/// Waits (at most 60 s) until the registry has `repo:1.0.0` naming `digest`.
fn wait_for_tag(up: &str, repo: &str, digest: &str, hubs: &[&HubProcess]) {
    let start = Instant::now();
    loop {
        let (u, r) = (up.to_string(), repo.to_string());
        if on_own_runtime(async move { registry_tag(&u, &r, "1.0.0").await }).as_deref()
            == Some(digest)
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{repo}:1.0.0 not made again in the registry within 60 s:\n{}",
            hubs.iter()
                .map(|h| h.log())
                .collect::<Vec<_>>()
                .join("\n---\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

const REPAIRED: &str = "made the version's tag in the upstream registry again";

/// The pass at a hub's start makes lost tags again — on SQLite, the restarted hub's; on
/// PostgreSQL, only the replica holding the lease, so a second replica waits until the first
/// dies, then takes the lease and repairs.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
fn the_repair_pass_runs_at_start_on_the_replica_holding_its_lease(#[case] backend: Backend) {
    let up = upstream();
    // Passes an hour apart: what repairs here is a process's first pass.
    let toml = format!("upstream_registry = \"http://{up}\"\nmirror_repair_secs = 3600\n");
    let log = "warn,hub_core=info";
    let mut a = HubProcess::start(
        ProcessOptions::new(backend)
            .hub_toml(&toml)
            .env("OFC_HUB_LOG", log),
    );
    let alice = a.new_user("alice");
    publish(&a, &alice, "alice/lost");
    let (u, t) = (up.clone(), "alice/lost".to_string());
    let digest =
        on_own_runtime(async move { registry_tag(&u, &t, "1.0.0").await }).expect("mirrored");
    let (u, d) = (up.clone(), digest.clone());
    on_own_runtime(async move { registry_delete(&u, "alice/lost", &d).await });

    let mut second = None;
    match backend {
        Backend::Sqlite => {
            a.restart();
            wait_for_tag(&up, "alice/lost", &digest, &[&a]);
        }
        Backend::Postgres => {
            let mut b = HubProcess::start(
                ProcessOptions::default()
                    .database_url(a.database_url().unwrap())
                    .hub_toml(&toml)
                    .env("OFC_HUB_LOG", log)
                    .stopped(),
            );
            // One hub: the same log key.
            std::fs::create_dir_all(b.data_dir()).unwrap();
            std::fs::copy(
                a.data_dir().join(hub_core::log_key::LOG_KEY_FILE),
                b.data_dir().join(hub_core::log_key::LOG_KEY_FILE),
            )
            .unwrap();
            b.spawn();
            // `a` holds the lease: `b` asks every 2 s and gets nothing to do.
            std::thread::sleep(Duration::from_secs(5));
            let (u, t) = (up.clone(), "alice/lost".to_string());
            assert_eq!(
                on_own_runtime(async move { registry_tag(&u, &t, "1.0.0").await }),
                None,
                "repaired while another replica held the lease:\n{}",
                b.log()
            );
            assert!(!b.log().contains("now checks"), "{}", b.log());
            a.kill();
            wait_for_tag(&up, "alice/lost", &digest, &[&a, &b]);
            second = Some(b);
        }
    }
    let repairer = second.as_ref().unwrap_or(&a);
    assert!(repairer.log().contains(REPAIRED), "{}", repairer.log());
    let (s, m) = repairer.api(Method::GET, "/metrics", None, None);
    assert_eq!(s, 200);
    let text = m.as_str().unwrap_or_default().to_string();
    assert!(
        text.lines()
            .any(|l| l == "ofc_hub_mirror_tags_repaired_total 1"),
        "{text}"
    );
}
