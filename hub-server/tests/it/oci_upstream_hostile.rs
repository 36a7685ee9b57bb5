//! The upstream backend against a hostile registry that serves bytes which do not match the
//! digest asked for: nothing is cached and nothing is served.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hub_core::blob::BlobStore;
use hub_server::oci::upstream::UpstreamBlobStore;
use index_schema::name::Digest;

async fn lying_registry() -> String {
    let app = Router::new().route("/v2/", get(|| async { "{}" })).route(
        "/v2/{a}/{b}/blobs/{digest}",
        get(|| async {
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/octet-stream")],
                "not the bytes you asked for",
            )
                .into_response()
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}/prefix")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_bytes_from_upstream_are_refused() {
    let url = lying_registry().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let store = tokio::task::spawn_blocking(move || {
        Arc::new(UpstreamBlobStore::open(&path, &url, None, None).unwrap())
    })
    .await
    .unwrap();
    let d = Digest::of(b"the real content");
    let s = store.clone();
    let r = tokio::task::spawn_blocking(move || s.open(&d))
        .await
        .unwrap();
    let err = match r {
        Err(e) => e.to_string(),
        Ok(o) => panic!("served unverified bytes: {:?}", o.map(|x| x.1)),
    };
    assert!(err.to_lowercase().contains("digest"), "{err}");
    let s = store.clone();
    let cached = tokio::task::spawn_blocking(move || s.list().unwrap())
        .await
        .unwrap();
    assert!(cached.is_empty(), "cached unverified bytes: {cached:?}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("blobs-v1/tmp"))
        .unwrap()
        .collect();
    assert!(leftovers.is_empty(), "left a staging file behind");
    drop(store);
}

/// A proxy in front of the real registry `to` that passes everything but manifest `PUT`s,
/// which it answers 500 while `refuse` is set. Its address.
async fn manifest_refusing_proxy(to: String, refuse: Arc<std::sync::atomic::AtomicBool>) -> String {
    use axum::body::Body;
    use axum::extract::Request;
    let client = reqwest::Client::new();
    let app = Router::new().fallback(move |req: Request| {
        let (client, to, refuse) = (client.clone(), to.clone(), refuse.clone());
        async move {
            let (parts, body) = req.into_parts();
            let path = parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_string();
            if parts.method == axum::http::Method::PUT
                && path.contains("/manifests/")
                && refuse.load(std::sync::atomic::Ordering::SeqCst)
            {
                return (StatusCode::INTERNAL_SERVER_ERROR, "manifest store broken")
                    .into_response();
            }
            let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut out = client.request(parts.method, format!("http://{to}{path}"));
            for (k, v) in &parts.headers {
                if k != header::HOST {
                    out = out.header(k, v);
                }
            }
            let r = out.body(bytes).send().await.unwrap();
            let mut resp = axum::http::Response::builder().status(r.status().as_u16());
            for (k, v) in r.headers() {
                resp = resp.header(k, v);
            }
            resp.body(Body::from(r.bytes().await.unwrap())).unwrap()
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    addr.to_string()
}

/// A publish to the registry backend puts its manifest in the registry (so that the registry's
/// own garbage collection keeps the version's blobs) before anything is recorded: a registry
/// that refuses the manifest refuses the publish with nothing recorded. (Mirrored after the
/// commit, the publish stood with its blobs named by no registry manifest.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_refusing_the_manifest_refuses_the_publish_with_nothing_recorded() {
    let refuse = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let proxy = manifest_refusing_proxy(ofc_test_kit::registry_peer(), refuse.clone()).await;
    let prefix = format!("ofc-refuse-{}", uuid::Uuid::new_v4().simple());
    let upstream = format!("http://{proxy}/{prefix}");
    let app = ofc_test_kit::TestHub::in_process_with(ofc_test_kit::Backend::Sqlite, move |c| {
        c.upstream_registry = Some(upstream);
    })
    .await;
    let m = ofc_test_kit::remote_manifest("alice/mirrored", "1.0.0");
    let (s, v) = app.publish(&app.user.token, &app.user.key, &m, None).await;
    assert_eq!(s, 503, "{v}");
    let (s, v) = app
        .call(
            reqwest::Method::GET,
            "/api/v1/agents/alice/mirrored/versions/1.0.0",
            None,
            None,
        )
        .await;
    assert_eq!(s, 404, "a refused publish was recorded: {v}");
    let (_, log) = app
        .call(reqwest::Method::GET, "/api/v1/outbox", None, None)
        .await;
    assert!(
        !log.to_string().contains("alice/mirrored"),
        "a refused publish reached the outbox: {log}"
    );

    // The registry answering again, the same publish goes through, and the registry holds
    // its manifest under the version's tag.
    refuse.store(false, std::sync::atomic::Ordering::SeqCst);
    let (s, v) = app.publish(&app.user.token, &app.user.key, &m, None).await;
    assert_eq!(s, 201, "{v}");
    let ours = app
        .client
        .get(app.url("/v2/alice/mirrored/manifests/1.0.0"))
        .send()
        .await
        .unwrap();
    let media_type = ours.headers()["content-type"].to_str().unwrap().to_string();
    let ours = ours.bytes().await.unwrap();
    let theirs = app
        .client
        .get(format!(
            "http://{proxy}/v2/{prefix}/alice/mirrored/manifests/1.0.0"
        ))
        .header("accept", &media_type)
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 200);
    assert_eq!(theirs.bytes().await.unwrap(), ours, "the mirror differs");
}

/// The registry lost its copy of a blob the hub's cache still has (its garbage collection took
/// a blob no manifest named yet, or an operator deleted it): mirroring a manifest that names
/// it stores it again from the cache instead of failing every publish that uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_the_registry_lost_is_stored_again_from_the_cache_when_mirrored() {
    let registry = ofc_test_kit::registry_peer();
    let prefix = format!("ofc-lost-{}", uuid::Uuid::new_v4().simple());
    let url = format!("http://{registry}/{prefix}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let store = tokio::task::spawn_blocking(move || {
        Arc::new(UpstreamBlobStore::open(&path, &url, None, None).unwrap())
    })
    .await
    .unwrap();
    let bytes = format!("a config blob of {prefix}").into_bytes();
    let d = Digest::of(&bytes);
    let s = store.clone();
    let b = bytes.clone();
    tokio::task::spawn_blocking(move || s.put(&d, &b).unwrap())
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let blob_url = format!("http://{registry}/v2/{prefix}/blobs/blobs/{d}");
    assert_eq!(http.head(&blob_url).send().await.unwrap().status(), 200);
    // The registry loses it.
    let gone = http.delete(&blob_url).send().await.unwrap();
    assert_eq!(gone.status(), 202, "the registry peer allows deletes");
    assert_eq!(http.head(&blob_url).send().await.unwrap().status(), 404);

    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": d.to_string(), "size": bytes.len()},
        "layers": [],
    })
    .to_string();
    let s = store.clone();
    let m = manifest.clone();
    let r = tokio::task::spawn_blocking(move || {
        s.mirror_manifest(
            "alice/lost",
            "1.0.0",
            "application/vnd.oci.image.manifest.v1+json",
            m.as_bytes(),
            &[d],
        )
    })
    .await
    .unwrap();
    assert!(r.is_ok(), "the mirror failed: {r:?}");
    let theirs = http
        .get(format!(
            "http://{registry}/v2/{prefix}/alice/lost/manifests/1.0.0"
        ))
        .header("accept", "application/vnd.oci.image.manifest.v1+json")
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 200);
    assert_eq!(theirs.text().await.unwrap(), manifest);
    let held = http
        .head(format!(
            "http://{registry}/v2/{prefix}/alice/lost/blobs/{d}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), 200, "the agent's repository holds the blob");
}

/// A registry that refuses uploads (the distribution registry in read-only mode answers 405)
/// is a refusal that retrying will not change: the store says `Refused`, not `Upstream`, the
/// core makes it `blobs_refused` (the hub's failure, no `Retry-After`), while a registry that
/// does not answer stays `Upstream`, worth retrying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_refuses_uploads_is_not_worth_retrying() {
    use hub_core::Kind;
    use hub_core::blob::BlobError;
    use index_schema::hub_api::ErrorCode;

    let url = format!(
        "http://{}/ofc-refused",
        ofc_test_kit::peer("registry-read-only")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let store = tokio::task::spawn_blocking(move || {
        UpstreamBlobStore::open(&path, &url, None, None).unwrap()
    })
    .await
    .unwrap();
    let bytes = b"a blob a read-only registry will not take".to_vec();
    let d = Digest::of(&bytes);
    let err = tokio::task::spawn_blocking(move || store.put(&d, &bytes))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, BlobError::Refused(_)), "{err:?}");
    assert!(err.to_string().contains("405"), "{err}");
    let core = hub_core::CoreError::from(err);
    assert_eq!(
        (core.kind, core.code),
        (Kind::Internal, ErrorCode::BlobsRefused)
    );
    assert!(
        core.message.contains("retrying will not help"),
        "{}",
        core.message
    );

    // No registry at all: worth retrying.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}/ofc", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let err =
        tokio::task::spawn_blocking(move || UpstreamBlobStore::open(&path, &gone, None, None))
            .await
            .unwrap()
            .unwrap_err();
    assert!(matches!(err, BlobError::Upstream(_)), "{err:?}");
    assert_eq!(hub_core::CoreError::from(err).kind, Kind::Unavailable);
}

/// A hub whose upstream registry refuses a publish's bundle answers 500 `blobs_refused`
/// (without `Retry-After`: a client would retry forever) and records nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_publish_the_upstream_registry_refuses_is_blobs_refused() {
    let up = ofc_test_kit::peer("registry-read-only");
    let app = ofc_test_kit::TestHub::in_process_with(ofc_test_kit::Backend::Sqlite, move |c| {
        c.upstream_registry = Some(format!("http://{up}/ofc-refused-hub"));
    })
    .await;
    let u = app.user.clone();
    let bytes = b"a bundle the registry will refuse".to_vec();
    let m = ofc_test_kit::bundle_manifest("alice/refused", "1.0.0", &bytes);
    let env = index_schema::envelope::sign_manifest(&m, &u.key);
    let body = serde_json::json!({
        "envelope": serde_json::from_str::<serde_json::Value>(&env.to_json()).unwrap(),
        "bundle": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes),
    });
    let r = reqwest::Client::new()
        .put(app.url("/api/v1/agents/alice/refused/versions/1.0.0"))
        .bearer_auth(&u.token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert!(
        r.headers().get("retry-after").is_none(),
        "{:?}",
        r.headers()
    );
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["code"], "blobs_refused", "{v}");
    let (s, v) = app.get("/api/v1/agents/alice/refused").await;
    assert_eq!(s, 404, "the refused publish was recorded: {v}");
}
