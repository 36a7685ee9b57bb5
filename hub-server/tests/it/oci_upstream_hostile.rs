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
