//! Real OCI clients against a running hub: skopeo copies a multi-layer image in and out, oras
//! (PyPI) pushes and pulls an ofc agent artifact, podman pushes, pulls and runs a FROM-scratch
//! image. The clients come from `scripts/peers/oci-clients`; a missing client fails the test.

use std::path::{Path, PathBuf};
use std::time::Duration;

use index_schema::envelope::sign_manifest;
use index_schema::media_types as mt;
use index_schema::name::Digest;
use ofc_test_kit::{Backend, TestHub, bundle_manifest, oci_tool};
use rand::RngCore;
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs a command to completion (bounded by a generous guard), panicking with its output on
/// failure; returns stdout.
async fn run(program: &str, args: &[&str]) -> String {
    let fut = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(600), fut)
        .await
        .unwrap_or_else(|_| panic!("{program} {args:?} did not finish in 600 s"))
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where the hub keeps blobs in a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// The data dir.
    Local,
    /// A real distribution registry (`scripts/peers/registry`), the data dir as cache.
    Upstream,
}

struct Hub {
    app: TestHub,
    /// `HOST:PORT/PREFIX` of the upstream backend.
    upstream: Option<String>,
}

impl Hub {
    async fn start(storage: Storage) -> Hub {
        let upstream = (storage == Storage::Upstream).then(|| {
            format!(
                "{}/ofc-test-{}",
                ofc_test_kit::registry_peer(),
                uuid::Uuid::new_v4().simple()
            )
        });
        let u = upstream.clone();
        let app = TestHub::in_process_with(Backend::Sqlite, move |c| {
            c.upstream_registry = u.map(|u| format!("http://{u}"));
        })
        .await;
        Hub { app, upstream }
    }

    /// With the upstream backend: checks the registry holds the blobs of `repo:tag` and a
    /// byte-identical mirror of its manifest, then empties the local cache so that what follows
    /// is served from upstream.
    async fn check_upstream_and_drop_cache(&self, repo: &str, tag: &str) {
        let Some(u) = &self.upstream else { return };
        let (host, prefix) = u.split_once('/').unwrap();
        for d in manifest_blobs(&self.app, repo, tag).await {
            let r = self
                .app
                .client
                .head(format!("http://{host}/v2/{prefix}/blobs/blobs/{d}"))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "upstream lacks {d}");
        }
        let ours = self
            .app
            .client
            .get(self.app.url(&format!("/v2/{repo}/manifests/{tag}")))
            .send()
            .await
            .unwrap();
        let media_type = ours.headers()["content-type"].to_str().unwrap().to_string();
        let ours = ours.bytes().await.unwrap();
        let theirs = self
            .app
            .client
            .get(format!("http://{host}/v2/{prefix}/{repo}/manifests/{tag}"))
            .header("accept", &media_type)
            .send()
            .await
            .unwrap();
        assert_eq!(
            theirs.status(),
            200,
            "upstream lacks the manifest of {repo}:{tag}"
        );
        assert_eq!(
            theirs.bytes().await.unwrap(),
            ours,
            "the upstream mirror differs"
        );
        let cache = self.app.data_dir.join("blobs-v1/sha256");
        std::fs::remove_dir_all(&cache).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
    }
}

/// Every blob the hub's manifest `reference` of `repo` names (config and layers).
async fn manifest_blobs(app: &TestHub, repo: &str, reference: &str) -> Vec<Digest> {
    let r = app
        .client
        .get(app.url(&format!("/v2/{repo}/manifests/{reference}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let m: Value = r.json().await.unwrap();
    std::iter::once(&m["config"])
        .chain(m["layers"].as_array().unwrap())
        .map(|d| Digest::parse(d["digest"].as_str().unwrap()).unwrap())
        .collect()
}

fn host(app: &TestHub) -> String {
    app.url.trim_start_matches("http://").to_string()
}

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::thread_rng().fill_bytes(&mut v);
    v
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("gzip")
        .args(["-n", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    let mut stdin = child.stdin.take().unwrap();
    let data = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// Writes an OCI image layout with `layers` (random bytes), returns the manifest digest.
fn write_layout(dir: &Path, tag: &str, layers: &[Vec<u8>]) -> Digest {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let d = Digest::of(bytes);
        std::fs::write(blobs.join(d.hex()), bytes).unwrap();
        d
    };
    let mut descs = Vec::new();
    let mut diff_ids = Vec::new();
    for l in layers {
        // Real gzip layers, as registries see them: the uncompressed digest is the diff id.
        diff_ids.push(Digest::of(l).to_string());
        let gz = gzip(l);
        let d = put(&gz);
        descs.push(json!({"mediaType": mt::OCI_IMAGE_LAYER_GZIP, "digest": d.to_string(), "size": gz.len()}));
    }
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }))
    .unwrap();
    let cd = put(&config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "config": {"mediaType": mt::OCI_IMAGE_CONFIG, "digest": cd.to_string(), "size": config.len()},
        "layers": descs,
    }))
    .unwrap();
    let md = put(&manifest);
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let index = json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": mt::OCI_IMAGE_MANIFEST, "digest": md.to_string(), "size": manifest.len(),
            "annotations": {"org.opencontainers.image.ref.name": tag},
        }],
    });
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    md
}

fn layout_manifest(dir: &Path) -> Digest {
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    Digest::parse(index["manifests"][0]["digest"].as_str().unwrap()).unwrap()
}

#[rstest]
#[case::local(Storage::Local)]
#[case::upstream(Storage::Upstream)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skopeo_copies_a_multi_layer_image_in_and_out(#[case] storage: Storage) {
    let skopeo = oci_tool("skopeo");
    let hub = Hub::start(storage).await;
    let app = &hub.app;
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let back = tmp.path().join("back");
    let layers = vec![random(3 * 1024 * 1024 + 17), random(200_000), random(10)];
    let md = write_layout(&src, "v1", &layers);

    let creds = format!("ofc:{}", app.user.token);
    let dest = format!("docker://{}/alice/multi:v1", host(app));
    run(
        &skopeo,
        &[
            "copy",
            "--dest-tls-verify=false",
            "--dest-creds",
            &creds,
            &format!("oci:{}:v1", src.display()),
            &dest,
        ],
    )
    .await;
    hub.check_upstream_and_drop_cache("alice/multi", "v1").await;
    // Out again, anonymously.
    run(
        &skopeo,
        &[
            "copy",
            "--src-tls-verify=false",
            &dest,
            &format!("oci:{}:v1", back.display()),
        ],
    )
    .await;

    assert_eq!(
        layout_manifest(&back),
        md,
        "the manifest digest survives the round trip"
    );
    for entry in std::fs::read_dir(src.join("blobs/sha256")).unwrap() {
        let entry = entry.unwrap();
        let copied = back.join("blobs/sha256").join(entry.file_name());
        assert_eq!(
            std::fs::read(entry.path()).unwrap(),
            std::fs::read(&copied).unwrap()
        );
    }
    let raw = run(&skopeo, &["inspect", "--raw", "--tls-verify=false", &dest]).await;
    assert_eq!(Digest::of(raw.as_bytes()), md);
    let tags = run(
        &skopeo,
        &[
            "list-tags",
            "--tls-verify=false",
            &format!("docker://{}/alice/multi", host(app)),
        ],
    )
    .await;
    let tags: Value = serde_json::from_str(&tags).unwrap();
    assert_eq!(tags["Tags"], json!(["v1"]));

    // A token without the namespace cannot push.
    let other = app
        .token(
            "alice",
            &[hub_core::auth::Scope::PublishNew],
            &["elsewhere"],
            None,
        )
        .await;
    let out = tokio::process::Command::new(&skopeo)
        .args([
            "copy",
            "--dest-tls-verify=false",
            "--dest-creds",
            &format!("ofc:{other}"),
            &format!("oci:{}:v1", src.display()),
            &format!("docker://{}/alice/denied:v1", host(app)),
        ])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let (s, _) = app
        .call(Method::GET, "/v2/alice/denied/tags/list", None, None)
        .await;
    assert_eq!(s, 404);
    hub.app.stop().await;
}

#[rstest]
#[case::local(Storage::Local)]
#[case::upstream(Storage::Upstream)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oras_pushes_and_pulls_agent_artifacts(#[case] storage: Storage) {
    let python = oci_tool("python");
    let script = workspace().join("hub-server/tests/oci/oras_agent.py");
    let script = script.to_str().unwrap();
    let hub = Hub::start(storage).await;
    let app = &hub.app;
    let tmp = tempfile::tempdir().unwrap();
    let h = host(app);

    // Push: the signed envelope as config, the bundle as the layer.
    let bundle = random(50_000);
    let m = bundle_manifest("alice/oras-agent", "1.2.3", &bundle);
    let env = sign_manifest(&m, &app.user.key).to_json();
    let env_path = tmp.path().join("envelope.json");
    let bundle_path = tmp.path().join("agent.tar.gz");
    std::fs::write(&env_path, &env).unwrap();
    std::fs::write(&bundle_path, &bundle).unwrap();
    let out = run(
        &python,
        &[
            script,
            "push",
            &h,
            "alice/oras-agent:1.2.3",
            &app.user.token,
            env_path.to_str().unwrap(),
            bundle_path.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.trim(), "201");
    // It is a published version.
    let (s, v) = app
        .call(
            Method::GET,
            "/api/v1/agents/alice/oras-agent/versions/1.2.3",
            None,
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["bundle"]["digest"], Digest::of(&bundle).to_string());
    let (_, outbox) = app.call(Method::GET, "/api/v1/outbox", None, None).await;
    assert!(
        outbox["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["agent"] == "alice/oras-agent")
    );

    hub.check_upstream_and_drop_cache("alice/oras-agent", "1.2.3")
        .await;
    // Pull it back.
    let pulled = tmp.path().join("pulled");
    let files = run(
        &python,
        &[
            script,
            "pull",
            &h,
            "alice/oras-agent:1.2.3",
            pulled.to_str().unwrap(),
        ],
    )
    .await;
    let files: Vec<&str> = files.lines().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::read(files[0]).unwrap(), bundle);

    // An agent published through the JSON API pulls the same way.
    let b2 = random(1234);
    let m2 = bundle_manifest("alice/json-agent", "0.9.0", &b2);
    let (s, v) = app
        .publish(&app.user.token, &app.user.key, &m2, Some(&b2))
        .await;
    assert_eq!(s, 201, "{v}");
    hub.check_upstream_and_drop_cache("alice/json-agent", "0.9.0")
        .await;
    let pulled2 = tmp.path().join("pulled2");
    let files = run(
        &python,
        &[
            script,
            "pull",
            &h,
            "alice/json-agent:0.9.0",
            pulled2.to_str().unwrap(),
        ],
    )
    .await;
    let files: Vec<&str> = files.lines().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::read(files[0]).unwrap(), b2);

    // A push that fails the publish checks (unsigned-for-this-version envelope) is refused.
    let out = tokio::process::Command::new(&python)
        .args([
            script,
            "push",
            &h,
            "alice/oras-agent:9.9.9",
            &app.user.token,
            env_path.to_str().unwrap(),
            bundle_path.to_str().unwrap(),
        ])
        .output()
        .await
        .unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (s, _) = app
        .call(
            Method::GET,
            "/api/v1/agents/alice/oras-agent/versions/9.9.9",
            None,
            None,
        )
        .await;
    assert_eq!(s, 404);
    hub.app.stop().await;
}

#[rstest]
#[case::local(Storage::Local)]
#[case::upstream(Storage::Upstream)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn podman_pushes_pulls_and_runs_a_scratch_image(#[case] storage: Storage) {
    let podman = oci_tool("podman");
    let cc = oci_tool("cc");
    let hub = Hub::start(storage).await;
    let app = &hub.app;
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    std::fs::create_dir_all(&ctx).unwrap();
    let hello = ctx.join("hello");
    let src = workspace().join("hub-server/tests/oci/hello.c");
    run(
        &cc,
        &[
            "-static",
            "-O2",
            "-o",
            hello.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    )
    .await;
    std::fs::write(
        ctx.join("Containerfile"),
        "FROM scratch\nCOPY hello /hello\nCMD [\"/hello\"]\n",
    )
    .unwrap();

    // A private podman store per test: nothing shared with the host or other tests.
    let root = tmp.path().join("root");
    let runroot = tmp.path().join("run");
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "--root",
            root.to_str().unwrap(),
            "--runroot",
            runroot.to_str().unwrap(),
            "--storage-driver",
            "vfs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let p = |extra: &[&str]| {
        let args = base(extra);
        let podman = podman.clone();
        async move {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            run(&podman, &a).await
        }
    };
    let image = format!("{}/alice/hello:1", host(app));
    p(&["build", "-q", "-t", &image, ctx.to_str().unwrap()]).await;
    p(&[
        "push",
        "--tls-verify=false",
        "--creds",
        &format!("ofc:{}", app.user.token),
        &image,
    ])
    .await;
    p(&["rmi", "-a", "-f"]).await;
    hub.check_upstream_and_drop_cache("alice/hello", "1").await;
    p(&["pull", "-q", "--tls-verify=false", &image]).await;
    let out = p(&["run", "--rm", "--network", "none", &image]).await;
    assert_eq!(out.trim(), "hello from a scratch image on the ofc hub");
    // Clean up the private store's containers' state (the tempdir goes with the test).
    p(&["rmi", "-a", "-f"]).await;
    hub.app.stop().await;
}
