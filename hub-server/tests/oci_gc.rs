//! Garbage collection: unreferenced blobs older than the grace period go; referenced ones,
//! recently used ones and agent bundles stay; expired upload sessions end.

mod common;

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use common::{Backend, TestApp, bundle_manifest};
use hub_server::oci::gc;
use index_schema::media_types as mt;
use index_schema::name::Digest;
use serde_json::json;

fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("u:{token}"))
    )
}

fn blob_path(app: &TestApp, d: &Digest) -> std::path::PathBuf {
    let hex = d.hex();
    app.data_dir
        .join("blobs-v1/sha256")
        .join(&hex[..2])
        .join(hex)
}

fn age(app: &TestApp, d: &Digest) {
    let f = std::fs::File::options()
        .write(true)
        .open(blob_path(app, d))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
}

async fn push(app: &TestApp, auth: &str, bytes: &[u8]) -> Digest {
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

async fn status(app: &TestApp, method: reqwest::Method, path: &str, auth: &str) -> u16 {
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
    let app = TestApp::start(Backend::Sqlite).await;
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
    let all = app.state.blobs.list().unwrap();
    for (d, _) in &all {
        if *d != fresh {
            age(&app, d);
        }
    }
    let r = status(
        &app,
        reqwest::Method::POST,
        &format!("/v2/alice/h/blobs/uploads/?mount={mounted}&from=alice/g"),
        &auth,
    )
    .await;
    assert_eq!(r, 201);

    let report = gc::collect(&app.state, Duration::from_secs(3600), Duration::ZERO)
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
            reqwest::Method::GET,
            &format!("/v2/alice/gc-agent/blobs/{env}"),
            &auth
        )
        .await,
        200
    );
    assert_eq!(
        status(
            &app,
            reqwest::Method::GET,
            &format!("/v2/alice/g/blobs/{layer}"),
            &auth
        )
        .await,
        200
    );
    // The expired session is gone.
    assert_eq!(
        status(&app, reqwest::Method::GET, &session, &auth).await,
        404
    );

    // A second run with nothing old left to collect removes nothing.
    let report = gc::collect(
        &app.state,
        Duration::from_secs(3600),
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    assert_eq!(report.blobs_deleted, 0);
    app.stop().await;
}
