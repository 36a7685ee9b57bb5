//! The OCI distribution API at the protocol level, including the hostile cases: digest
//! mismatches, wrong `Content-Range`, manifests referencing missing blobs, oversize manifests,
//! path traversal in repository names and pushes without scope.

use base64::Engine as _;
use hub_core::auth::Scope;
use index_schema::envelope::sign_manifest;
use index_schema::media_types as mt;
use index_schema::name::Digest;
use ofc_test_kit::{Backend, TestHub, bundle_manifest, remote_manifest};
use reqwest::Method;
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("anyone:{token}"))
    )
}

struct Resp {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    /// The OCI error code of an error response.
    fn code(&self) -> String {
        let v = self.json();
        v["errors"][0]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("not an OCI error envelope: {v}"))
            .to_string()
    }
}

async fn req(
    app: &TestHub,
    method: Method,
    path: &str,
    auth: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    let url = if path.starts_with("http") {
        path.to_string()
    } else {
        app.url(path)
    };
    let mut r = app.client.request(method, url);
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r.body(b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap().to_vec();
    Resp {
        status,
        headers,
        body,
    }
}

/// Uploads a blob monolithically (POST then PUT) and returns its digest.
async fn push_blob(app: &TestHub, repo: &str, auth: &str, bytes: &[u8]) -> Digest {
    let r = req(
        app,
        Method::POST,
        &format!("/v2/{repo}/blobs/uploads/"),
        Some(auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let loc = r.header("location");
    let d = Digest::of(bytes);
    let sep = if loc.contains('?') { '&' } else { '?' };
    let r = req(
        app,
        Method::PUT,
        &format!("{loc}{sep}digest={d}"),
        Some(auth),
        &[("content-type", "application/octet-stream")],
        Some(bytes.to_vec()),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("docker-content-digest"), d.to_string());
    d
}

fn image_manifest(config: (&Digest, usize), layers: &[(Digest, usize)]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "config": {"mediaType": mt::OCI_IMAGE_CONFIG, "digest": config.0.to_string(), "size": config.1},
        "layers": layers.iter().map(|(d, s)| json!({
            "mediaType": mt::OCI_IMAGE_LAYER_GZIP, "digest": d.to_string(), "size": s
        })).collect::<Vec<_>>(),
    }))
    .unwrap()
}

async fn put_manifest(app: &TestHub, repo: &str, reference: &str, auth: &str, body: &[u8]) -> Resp {
    req(
        app,
        Method::PUT,
        &format!("/v2/{repo}/manifests/{reference}"),
        Some(auth),
        &[("content-type", mt::OCI_IMAGE_MANIFEST)],
        Some(body.to_vec()),
    )
    .await
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn push_and_pull_an_image(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let auth = basic(&app.user.token);

    // The base endpoint challenges anonymous callers and accepts a token.
    let r = req(&app, Method::GET, "/v2/", None, &[], None).await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .starts_with("Bearer realm=\"http://"),
        "{}",
        r.header("www-authenticate")
    );
    assert_eq!(r.code(), "UNAUTHORIZED");
    let r = req(&app, Method::GET, "/v2/", Some(&auth), &[], None).await;
    assert_eq!(r.status, 200);

    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let layer1: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let layer2 = b"second layer".to_vec();
    let c = push_blob(&app, "alice/img", &auth, &config).await;
    let l1 = push_blob(&app, "alice/img", &auth, &layer1).await;
    let l2 = push_blob(&app, "alice/img", &auth, &layer2).await;
    let manifest = image_manifest(
        (&c, config.len()),
        &[(l1, layer1.len()), (l2, layer2.len())],
    );
    let r = put_manifest(&app, "alice/img", "v1", &auth, &manifest).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let md = Digest::of(&manifest);
    assert_eq!(r.header("docker-content-digest"), md.to_string());

    // Anonymous pull, byte-exact, by tag and by digest.
    for reference in ["v1".to_string(), md.to_string()] {
        let r = req(
            &app,
            Method::GET,
            &format!("/v2/alice/img/manifests/{reference}"),
            None,
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body, manifest);
        assert_eq!(r.header("content-type"), mt::OCI_IMAGE_MANIFEST);
        assert_eq!(r.header("docker-content-digest"), md.to_string());
        let r = req(
            &app,
            Method::HEAD,
            &format!("/v2/alice/img/manifests/{reference}"),
            None,
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-length"), manifest.len().to_string());
        assert!(r.body.is_empty());
    }
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/blobs/{l1}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, layer1);
    let r = req(
        &app,
        Method::HEAD,
        &format!("/v2/alice/img/blobs/{l1}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), layer1.len().to_string());
    assert_eq!(r.header("docker-content-digest"), l1.to_string());

    // Ranges.
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/blobs/{l1}"),
        None,
        &[("range", "bytes=10-19")],
        None,
    )
    .await;
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &layer1[10..20]);
    assert_eq!(
        r.header("content-range"),
        format!("bytes 10-19/{}", layer1.len())
    );
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/blobs/{l1}"),
        None,
        &[("range", "bytes=-5")],
        None,
    )
    .await;
    assert_eq!(r.body, &layer1[layer1.len() - 5..]);
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/blobs/{l1}"),
        None,
        &[("range", "bytes=100000-")],
        None,
    )
    .await;
    assert_eq!(r.status, 416);

    // Unknown things.
    let missing = Digest::of(b"nothing");
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/blobs/{missing}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (404, "BLOB_UNKNOWN"));
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/img/manifests/nope",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (404, "MANIFEST_UNKNOWN"));

    // Delete by tag, then by digest.
    let r = req(
        &app,
        Method::DELETE,
        "/v2/alice/img/manifests/v1",
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202);
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/img/manifests/v1",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/manifests/{md}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let r = req(
        &app,
        Method::DELETE,
        &format!("/v2/alice/img/manifests/{md}"),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202);
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/img/manifests/{md}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404);

    // Blob delete: an unreferenced blob goes.
    let r = req(
        &app,
        Method::DELETE,
        &format!("/v2/alice/img/blobs/{l2}"),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let r = req(
        &app,
        Method::HEAD,
        &format!("/v2/alice/img/blobs/{l2}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    app.stop().await;
}

/// A second manifest pushed into a repository that has one already (the push checks whether
/// the repository exists to pick the scope it needs), then both pull and the tags list.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn second_manifest_in_a_repository(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let auth = basic(&app.user.token);
    let config = br#"{"os":"linux"}"#.to_vec();
    let c = push_blob(&app, "alice/two", &auth, &config).await;
    let mut digests = Vec::new();
    for (tag, layer) in [
        ("a", b"first layer".to_vec()),
        ("b", b"second layer".to_vec()),
    ] {
        let l = push_blob(&app, "alice/two", &auth, &layer).await;
        let m = image_manifest((&c, config.len()), &[(l, layer.len())]);
        let r = put_manifest(&app, "alice/two", tag, &auth, &m).await;
        assert_eq!(r.status, 201, "{tag}: {}", String::from_utf8_lossy(&r.body));
        digests.push((tag, Digest::of(&m), m));
    }
    for (tag, d, m) in &digests {
        for reference in [tag.to_string(), d.to_string()] {
            let r = req(
                &app,
                Method::GET,
                &format!("/v2/alice/two/manifests/{reference}"),
                None,
                &[],
                None,
            )
            .await;
            assert_eq!(r.status, 200, "{reference}");
            assert_eq!(&r.body, m);
        }
    }
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/two/tags/list",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["tags"], json!(["a", "b"]));
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/none/tags/list",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "NAME_UNKNOWN");
    app.stop().await;
}

#[tokio::test]
async fn bearer_token_flow() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let r = req(&app, Method::GET, "/v2/", None, &[], None).await;
    let ch = r.header("www-authenticate");
    let realm = ch
        .split("realm=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(realm, app.url("/v2/token"));

    // Anonymous tokens pull but do not push.
    let r = req(
        &app,
        Method::GET,
        &format!("{realm}?service=ofc-hub&scope=repository:alice/x:pull"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let anon = format!("Bearer {}", r.json()["token"].as_str().unwrap());
    let r = req(&app, Method::GET, "/v2/", Some(&anon), &[], None).await;
    assert_eq!(r.status, 200);
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/x/blobs/uploads/",
        Some(&anon),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .contains("scope=\"repository:alice/x:pull,push\"")
    );

    // Basic credentials (password = ofc token) get a pushing token.
    let r = req(
        &app,
        Method::GET,
        &format!("{realm}?service=ofc-hub&scope=repository:alice/x:pull,push"),
        Some(&basic(&app.user.token)),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["token"], v["access_token"]);
    let bearer = format!("Bearer {}", v["token"].as_str().unwrap());
    push_blob(&app, "alice/x", &bearer, b"via bearer").await;

    // A bearer carries what was asked for, not the API token's full rights: asked for pull
    // only (with the same credentials), it cannot push.
    let r = req(
        &app,
        Method::GET,
        &format!("{realm}?service=ofc-hub&scope=repository:alice/x:pull"),
        Some(&basic(&app.user.token)),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let pull_only = format!("Bearer {}", r.json()["token"].as_str().unwrap());
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/x/blobs/uploads/",
        Some(&pull_only),
        &[],
        None,
    )
    .await;
    assert!(matches!(r.status, 401 | 403), "{}", r.status);
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/x/tags/list",
        Some(&pull_only),
        &[],
        None,
    )
    .await;
    assert_ne!(r.status, 401, "it still pulls");

    // Wrong credentials: 401, and a made-up bearer token is refused.
    let r = req(
        &app,
        Method::GET,
        &realm,
        Some(&basic("ofc_wrong")),
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (401, "UNAUTHORIZED"));
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/x/tags/list",
        Some("Bearer ofc_oci_madeup"),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 401);
    // The API token itself works as a bearer token too.
    push_blob(
        &app,
        "alice/x",
        &format!("Bearer {}", app.user.token),
        b"direct",
    )
    .await;
    app.stop().await;
}

#[tokio::test]
async fn uploads_hostile_cases() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    let data: Vec<u8> = (0..30u8).collect();
    let d = Digest::of(&data);

    // Digest mismatch, single POST: refused and nothing stored.
    let wrong = Digest::of(b"other");
    let r = req(
        &app,
        Method::POST,
        &format!("/v2/alice/c/blobs/uploads/?digest={wrong}"),
        Some(&auth),
        &[],
        Some(data.clone()),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "DIGEST_INVALID"));
    for dd in [wrong, d] {
        let r = req(
            &app,
            Method::HEAD,
            &format!("/v2/alice/c/blobs/{dd}"),
            None,
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 404);
    }
    // Malformed digests.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/c/blobs/uploads/?digest=sha256:xyz",
        Some(&auth),
        &[],
        Some(data.clone()),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "DIGEST_INVALID"));

    // Chunked, with out-of-order and retried chunks refused with 416.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/c/blobs/uploads/",
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202);
    let loc = r.header("location");
    let patch = |range: &'static str, bytes: Vec<u8>| {
        let loc = loc.clone();
        let auth = auth.clone();
        let app = &app;
        async move {
            req(
                app,
                Method::PATCH,
                &loc,
                Some(&auth),
                &[
                    ("content-range", range),
                    ("content-type", "application/octet-stream"),
                ],
                Some(bytes),
            )
            .await
        }
    };
    let r = patch("0-9", data[0..10].to_vec()).await;
    assert_eq!(r.status, 202);
    assert_eq!(r.header("range"), "0-9");
    let r = patch("15-24", data[15..25].to_vec()).await;
    assert_eq!(r.status, 416, "a gap");
    assert_eq!(r.header("range"), "0-9");
    let r = patch("0-9", data[0..10].to_vec()).await;
    assert_eq!(r.status, 416, "a retried chunk");
    let r = patch("10-19", data[10..15].to_vec()).await;
    assert_eq!(r.status, 416, "a chunk shorter than its Content-Range");
    let r = patch("garbage", data[10..20].to_vec()).await;
    assert_eq!(r.status, 416);
    let r = req(&app, Method::GET, &loc, Some(&auth), &[], None).await;
    assert_eq!(
        (r.status, r.header("range")),
        (204, "0-9".to_string()),
        "failed chunks left no trace"
    );
    let r = patch("10-19", data[10..20].to_vec()).await;
    assert_eq!(r.status, 202);
    // The last chunk comes with the PUT.
    let r = req(
        &app,
        Method::PUT,
        &format!("{loc}?digest={d}"),
        Some(&auth),
        &[("content-range", "20-29")],
        Some(data[20..].to_vec()),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/c/blobs/{d}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.body, data);
    // The session is gone.
    let r = req(&app, Method::GET, &loc, Some(&auth), &[], None).await;
    assert_eq!((r.status, r.code().as_str()), (404, "BLOB_UPLOAD_UNKNOWN"));

    // A chunked upload whose bytes do not match the final digest.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/c/blobs/uploads/",
        Some(&auth),
        &[],
        None,
    )
    .await;
    let loc2 = r.header("location");
    let r = req(
        &app,
        Method::PATCH,
        &loc2,
        Some(&auth),
        &[],
        Some(b"abc".to_vec()),
    )
    .await;
    assert_eq!(r.status, 202);
    let r = req(
        &app,
        Method::PUT,
        &format!("{loc2}?digest={}", Digest::of(b"abd")),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "DIGEST_INVALID"));
    let r = req(
        &app,
        Method::HEAD,
        &format!("/v2/alice/c/blobs/{}", Digest::of(b"abc")),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404, "a failed upload stores nothing");

    // Cancel.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/c/blobs/uploads/",
        Some(&auth),
        &[],
        None,
    )
    .await;
    let loc3 = r.header("location");
    let r = req(&app, Method::DELETE, &loc3, Some(&auth), &[], None).await;
    assert_eq!(r.status, 204);
    let r = req(
        &app,
        Method::PATCH,
        &loc3,
        Some(&auth),
        &[],
        Some(b"x".to_vec()),
    )
    .await;
    assert_eq!(r.status, 404);
    // Made-up and path-like session ids.
    for id in [
        "0123456789abcdef0123456789abcdef",
        "x",
        "0123456789abcdef0123456789abcdeg",
    ] {
        let r = req(
            &app,
            Method::GET,
            &format!("/v2/alice/c/blobs/uploads/{id}"),
            Some(&auth),
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 404, "{id}");
    }
    // A session belongs to its repository.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/c/blobs/uploads/",
        Some(&auth),
        &[],
        None,
    )
    .await;
    let id = r.header("location").rsplit('/').next().unwrap().to_string();
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/other/blobs/uploads/{id}"),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404);

    // Single-POST monolithic upload, then mounts.
    let r = req(
        &app,
        Method::POST,
        &format!("/v2/alice/c/blobs/uploads/?digest={}", Digest::of(b"mono")),
        Some(&auth),
        &[],
        Some(b"mono".to_vec()),
    )
    .await;
    assert_eq!(r.status, 201);
    let r = req(
        &app,
        Method::POST,
        &format!(
            "/v2/alice/d/blobs/uploads/?mount={}&from=alice/c",
            Digest::of(b"mono")
        ),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(
        r.header("location"),
        format!("/v2/alice/d/blobs/{}", Digest::of(b"mono"))
    );
    let r = req(
        &app,
        Method::POST,
        &format!(
            "/v2/alice/d/blobs/uploads/?mount={}&from=alice/c",
            Digest::of(b"absent")
        ),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202, "an unmountable blob starts an upload");
    app.stop().await;
}

#[tokio::test]
async fn manifests_hostile_cases() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    let cfg = push_blob(&app, "alice/m", &auth, b"{}").await;

    // A manifest referencing a missing blob.
    let missing = Digest::of(b"missing layer");
    let m = image_manifest((&cfg, 2), &[(missing, 13)]);
    let r = put_manifest(&app, "alice/m", "t", &auth, &m).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "MANIFEST_BLOB_UNKNOWN")
    );
    assert_eq!(
        r.json()["errors"][0]["detail"]["digest"],
        missing.to_string()
    );
    // A wrong size for a present blob.
    let m = image_manifest((&cfg, 3), &[]);
    let r = put_manifest(&app, "alice/m", "t", &auth, &m).await;
    assert_eq!(r.status, 400);
    // Not JSON, wrong schema, wrong type.
    for bad in [&b"not json"[..], br#"{"schemaVersion":1}"#] {
        let r = put_manifest(&app, "alice/m", "t", &auth, bad).await;
        assert_eq!((r.status, r.code().as_str()), (400, "MANIFEST_INVALID"));
    }
    // A digest reference that does not match the body.
    let good = image_manifest((&cfg, 2), &[]);
    let r = put_manifest(&app, "alice/m", &Digest::of(b"x").to_string(), &auth, &good).await;
    assert_eq!((r.status, r.code().as_str()), (400, "DIGEST_INVALID"));
    let r = put_manifest(&app, "alice/m", "bad/tag", &auth, &good).await;
    assert_ne!(r.status, 201);

    // Large manifests: 4.1 MB is accepted byte-exact (the spec asks registries to take at
    // least 4 MB; the cap is 4 MiB), 4.3 MB is refused.
    let big = |n: usize| {
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": mt::OCI_IMAGE_MANIFEST,
            "config": {"mediaType": mt::OCI_IMAGE_CONFIG, "digest": cfg.to_string(), "size": 2},
            "layers": [],
            "annotations": {"pad": "x".repeat(n)},
        }))
        .unwrap()
    };
    let m = big(4_100_000);
    let r = put_manifest(&app, "alice/m", "big", &auth, &m).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/m/manifests/big",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.body, m);
    let r = put_manifest(&app, "alice/m", "huge", &auth, &big(4_300_000)).await;
    assert_eq!((r.status, r.code().as_str()), (413, "SIZE_INVALID"));

    // An index of the manifests pushed, and one naming an unknown manifest.
    let idx = |d: &Digest| {
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": mt::OCI_IMAGE_INDEX,
            "manifests": [{"mediaType": mt::OCI_IMAGE_MANIFEST, "digest": d.to_string(), "size": 1}],
        }))
        .unwrap()
    };
    let r = req(
        &app,
        Method::PUT,
        "/v2/alice/m/manifests/multi",
        Some(&auth),
        &[("content-type", mt::OCI_IMAGE_INDEX)],
        Some(idx(&Digest::of(&m))),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = req(
        &app,
        Method::PUT,
        "/v2/alice/m/manifests/multi2",
        Some(&auth),
        &[("content-type", mt::OCI_IMAGE_INDEX)],
        Some(idx(&missing)),
    )
    .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "MANIFEST_BLOB_UNKNOWN")
    );
    // Docker v2 manifests.
    let docker = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::DOCKER_MANIFEST_V2,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": cfg.to_string(), "size": 2},
        "layers": [],
    }))
    .unwrap();
    let r = req(
        &app,
        Method::PUT,
        "/v2/alice/m/manifests/docker",
        Some(&auth),
        &[("content-type", mt::DOCKER_MANIFEST_V2)],
        Some(docker.clone()),
    )
    .await;
    assert_eq!(r.status, 201);
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/m/manifests/docker",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(
        (r.header("content-type"), r.body),
        (mt::DOCKER_MANIFEST_V2.to_string(), docker)
    );

    // Tags list with n/last.
    let r = req(&app, Method::GET, "/v2/alice/m/tags/list", None, &[], None).await;
    assert_eq!(
        r.json(),
        json!({"name": "alice/m", "tags": ["big", "docker", "multi"]})
    );
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/m/tags/list?n=2",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.json()["tags"], json!(["big", "docker"]));
    assert_eq!(
        r.header("link"),
        "</v2/alice/m/tags/list?n=2&last=docker>; rel=\"next\""
    );
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/m/tags/list?n=2&last=docker",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.json()["tags"], json!(["multi"]));
    assert_eq!(r.header("link"), "");
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/none/tags/list",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (404, "NAME_UNKNOWN"));
    app.stop().await;
}

#[tokio::test]
async fn referrers() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    let cfg = push_blob(&app, "alice/r", &auth, b"{}").await;
    let subject = image_manifest((&cfg, 2), &[]);
    let sd = Digest::of(&subject);
    assert_eq!(
        put_manifest(&app, "alice/r", "v1", &auth, &subject)
            .await
            .status,
        201
    );
    let referrer = |atype: &str| {
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": mt::OCI_IMAGE_MANIFEST,
            "artifactType": atype,
            "config": {"mediaType": mt::OCI_EMPTY, "digest": cfg.to_string(), "size": 2},
            "layers": [],
            "subject": {"mediaType": mt::OCI_IMAGE_MANIFEST, "digest": sd.to_string(), "size": subject.len()},
            "annotations": {"kind": atype},
        }))
        .unwrap()
    };
    let sig = referrer("application/vnd.example.sig");
    let sbom = referrer("application/vnd.example.sbom");
    for m in [&sig, &sbom] {
        let r = put_manifest(&app, "alice/r", &Digest::of(m).to_string(), &auth, m).await;
        assert_eq!(r.status, 201);
        assert_eq!(r.header("oci-subject"), sd.to_string());
    }
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/r/referrers/{sd}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), mt::OCI_IMAGE_INDEX);
    let v = r.json();
    let got: Vec<&str> = v["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["artifactType"].as_str().unwrap())
        .collect();
    assert_eq!(got.len(), 2);
    assert!(
        got.contains(&"application/vnd.example.sig")
            && got.contains(&"application/vnd.example.sbom")
    );
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/r/referrers/{sd}?artifactType=application/vnd.example.sbom"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.header("oci-filters-applied"), "artifactType");
    let v = r.json();
    assert_eq!(v["manifests"].as_array().unwrap().len(), 1);
    assert_eq!(v["manifests"][0]["digest"], Digest::of(&sbom).to_string());
    assert_eq!(
        v["manifests"][0]["annotations"]["kind"],
        "application/vnd.example.sbom"
    );
    // No referrers: an empty index, not a 404.
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/r/referrers/{}", Digest::of(b"z")),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.json()["manifests"].clone()), (200, json!([])));
    app.stop().await;
}

/// Sends a raw request (so no client normalises the path) and returns status and body.
async fn raw(app: &TestHub, method: &str, path: &str, auth: &str) -> (u16, String) {
    let addr = app.url.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let msg = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(msg.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[tokio::test]
async fn repository_names_cannot_traverse() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    let d = push_blob(&app, "alice/ok", &auth, b"data").await;
    for path in [
        format!("/v2/alice/../bob/blobs/{d}"),
        format!("/v2/alice/%2e%2e/bob/blobs/{d}"),
        format!("/v2/alice/..%2fbob/blobs/{d}"),
        format!("/v2/../alice/ok/blobs/{d}"),
        "/v2/alice/../../etc/blobs/uploads/".to_string(),
        "/v2/alice//x/manifests/latest".to_string(),
        "/v2/ALICE/x/manifests/latest".to_string(),
        "/v2/alice/x/manifests/..".to_string(),
        "/v2/alice/x/blobs/sha256:..%2f..%2fetc".to_string(),
    ] {
        for method in ["GET", "POST", "PUT"] {
            let (status, body) = raw(&app, method, &path, &auth).await;
            assert!(
                (400..500).contains(&status),
                "{method} {path}: {status} {body}"
            );
            assert_ne!(status, 401, "{method} {path}");
            let v: Value =
                serde_json::from_str(&body).unwrap_or_else(|_| panic!("{method} {path}: {body}"));
            assert!(
                v["errors"][0]["code"].is_string(),
                "{method} {path}: {body}"
            );
        }
    }
    // A single-segment repository has no namespace.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/blobs/uploads/",
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "NAME_INVALID"));
    app.stop().await;
}

#[tokio::test]
async fn pushes_need_scope_and_namespace() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let bob = app.new_user("bob", false).await;
    let alice = basic(&app.user.token);
    let yank_only = basic(&app.token("alice", &[Scope::Yank], &["*"], None).await);
    let other_ns = basic(
        &app.token(
            "alice",
            &[Scope::PublishNew, Scope::PublishUpdate],
            &["bob"],
            None,
        )
        .await,
    );
    let update_only = basic(
        &app.token("alice", &[Scope::PublishUpdate], &["alice"], None)
            .await,
    );

    // Anonymous: challenged.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/p/blobs/uploads/",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (401, "UNAUTHORIZED"));
    assert!(
        r.header("www-authenticate")
            .contains("repository:alice/p:pull,push")
    );
    // No publish scope, wrong namespace pattern, not a member, no such namespace.
    for (auth, repo) in [
        (&yank_only, "alice/p"),
        (&other_ns, "alice/p"),
        (&alice, "bob/p"),
        (&alice, "nobody/p"),
    ] {
        let r = req(
            &app,
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            Some(auth),
            &[],
            None,
        )
        .await;
        assert_eq!((r.status, r.code().as_str()), (403, "DENIED"), "{repo}");
        let r = req(
            &app,
            Method::PUT,
            &format!("/v2/{repo}/manifests/t"),
            Some(auth),
            &[("content-type", mt::OCI_IMAGE_MANIFEST)],
            Some(b"{}".to_vec()),
        )
        .await;
        assert_eq!((r.status, r.code().as_str()), (403, "DENIED"), "{repo}");
    }
    // publish-update alone cannot create a repository, but can add to one.
    let cfg = push_blob(&app, "alice/p", &update_only, b"{}").await;
    let m1 = image_manifest((&cfg, 2), &[]);
    let r = put_manifest(&app, "alice/p", "v1", &update_only, &m1).await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    assert_eq!(
        put_manifest(&app, "alice/p", "v1", &alice, &m1)
            .await
            .status,
        201
    );
    assert_eq!(
        put_manifest(&app, "alice/p", "v2", &update_only, &m1)
            .await
            .status,
        201
    );
    // Deleting needs the yank scope.
    let r = req(
        &app,
        Method::DELETE,
        "/v2/alice/p/manifests/v1",
        Some(&update_only),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    // Bob pushes to his own namespace; alice's token cannot.
    push_blob(&app, "bob/q", &basic(&bob.token), b"bob's").await;
    app.stop().await;
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn agent_versions_are_oci_artifacts(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let auth = basic(&app.user.token);

    // Published through the JSON API: the OCI manifest is there, its config is the envelope
    // and its layer the bundle.
    let bundle = b"bundle bytes, pretend tar.gz".to_vec();
    let m = bundle_manifest("alice/data", "1.0.0", &bundle);
    let (s, v) = app
        .publish(&app.user.token, &app.user.key, &m, Some(&bundle))
        .await;
    assert_eq!(s, 201, "{v}");
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/data/manifests/1.0.0",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let om = r.json();
    assert_eq!(om["artifactType"], mt::AGENT_ARTIFACT_V1);
    assert_eq!(om["config"]["mediaType"], mt::AGENT_ENVELOPE_V1);
    assert_eq!(om["layers"][0]["mediaType"], mt::AGENT_BUNDLE_V1);
    assert_eq!(om["layers"][0]["digest"], Digest::of(&bundle).to_string());
    let r = req(
        &app,
        Method::GET,
        &format!(
            "/v2/alice/data/blobs/{}",
            om["config"]["digest"].as_str().unwrap()
        ),
        None,
        &[],
        None,
    )
    .await;
    let env: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(env["payloadType"], mt::AGENT_MANIFEST_V1);
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/data/blobs/{}", Digest::of(&bundle)),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.body, bundle);
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/data/tags/list",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.json()["tags"], json!(["1.0.0"]));
    // Agent versions cannot be deleted or overwritten through /v2/.
    let r = req(
        &app,
        Method::DELETE,
        "/v2/alice/data/manifests/1.0.0",
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    let cfg = push_blob(&app, "alice/data", &auth, b"{}").await;
    let r = put_manifest(
        &app,
        "alice/data",
        "1.0.0",
        &auth,
        &image_manifest((&cfg, 2), &[]),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));

    // Pushed through /v2/: a publish with the same checks.
    let push_agent = |m: index_schema::manifest::Manifest,
                      tag: &'static str,
                      bundle: Vec<u8>,
                      sign_with: index_schema::envelope::SecretKey| {
        let app = &app;
        let auth = auth.clone();
        async move {
            let env = sign_manifest(&m, &sign_with).to_json().into_bytes();
            let ed = push_blob(app, "alice/pushed", &auth, &env).await;
            let bd = push_blob(app, "alice/pushed", &auth, &bundle).await;
            let om = serde_json::to_vec(&json!({
                "schemaVersion": 2,
                "mediaType": mt::OCI_IMAGE_MANIFEST,
                "artifactType": mt::AGENT_ARTIFACT_V1,
                "config": {"mediaType": mt::AGENT_ENVELOPE_V1, "digest": ed.to_string(), "size": env.len()},
                "layers": [{"mediaType": mt::AGENT_BUNDLE_V1, "digest": bd.to_string(), "size": bundle.len()}],
            }))
            .unwrap();
            (put_manifest(app, "alice/pushed", tag, &auth, &om).await, om)
        }
    };
    let b2 = b"another bundle".to_vec();
    let (r, om) = push_agent(
        bundle_manifest("alice/pushed", "0.1.0", &b2),
        "0.1.0",
        b2.clone(),
        app.user.key.clone(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let (s, v) = app
        .call(
            Method::GET,
            "/api/v1/agents/alice/pushed/versions/0.1.0",
            None,
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["bundle"]["digest"], Digest::of(&b2).to_string());
    let (s, outbox) = app.call(Method::GET, "/api/v1/outbox", None, None).await;
    assert_eq!(s, 200);
    assert!(
        outbox["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["agent"] == "alice/pushed" && e["version"] == "0.1.0"),
        "{outbox}"
    );
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/pushed/manifests/0.1.0",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.body, om, "stored byte-exact");
    // Same version again, the same manifest: its publish again (a client's retry; see
    // `oci_mirror_tags`). Another manifest: immutable.
    let (r, same) = push_agent(
        bundle_manifest("alice/pushed", "0.1.0", &b2),
        "0.1.0",
        b2.clone(),
        app.user.key.clone(),
    )
    .await;
    assert_eq!(same, om);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let b3 = b"yet another bundle".to_vec();
    let (r, _) = push_agent(
        bundle_manifest("alice/pushed", "0.1.0", &b3),
        "0.1.0",
        b3.clone(),
        app.user.key.clone(),
    )
    .await;
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    // Tag and signed version disagree.
    let (r, _) = push_agent(
        bundle_manifest("alice/pushed", "0.2.0", &b2),
        "0.3.0",
        b2.clone(),
        app.user.key.clone(),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "MANIFEST_INVALID"));
    assert!(
        r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("version_mismatch")
    );
    // Signed by a key the namespace does not trust.
    let stranger = index_schema::envelope::SecretKey::from_seed(&[9; 32]);
    let (r, _) = push_agent(
        bundle_manifest("alice/pushed", "0.4.0", &b2),
        "0.4.0",
        b2.clone(),
        stranger,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    // The layer is not the signed bundle.
    let (r, _) = push_agent(
        bundle_manifest("alice/pushed", "0.5.0", &b2),
        "0.5.0",
        b"not it".to_vec(),
        app.user.key.clone(),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "MANIFEST_INVALID"));
    // None of the refused pushes became versions or tags.
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/pushed/tags/list",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.json()["tags"], json!(["0.1.0"]));

    // A remote source: no bundle layer, an empty one.
    let rm = remote_manifest("alice/remote", "2.0.0");
    let (s, v) = app.publish(&app.user.token, &app.user.key, &rm, None).await;
    assert_eq!(s, 201, "{v}");
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/remote/manifests/2.0.0",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.json()["layers"][0]["mediaType"], mt::OCI_EMPTY);

    // A version an administrator deletes is no longer served by tag.
    assert!(
        hub_core::admin::delete(app.store(), "alice/remote", Some("2.0.0"))
            .await
            .unwrap()
    );
    let r = req(
        &app,
        Method::GET,
        "/v2/alice/remote/manifests/2.0.0",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (404, "MANIFEST_UNKNOWN"));
    app.stop().await;
}

/// Issue 13, point 6: an upload cannot grow a blob past `max_blob_bytes` (monolithic or
/// chunked, the bytes are dropped and the session stays where it was), and a `Content-Range`
/// whose length does not fit in 64 bits is refused instead of wrapping.
#[tokio::test]
async fn uploads_are_bounded_and_content_range_cannot_wrap() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| c.max_blob_bytes = 1000).await;
    let auth = basic(&app.user.token);
    let big: Vec<u8> = (0..1500u32).map(|i| i as u8).collect();
    let d = Digest::of(&big);
    let r = req(
        &app,
        Method::POST,
        &format!("/v2/alice/c/blobs/uploads/?digest={d}"),
        Some(&auth),
        &[],
        Some(big.clone()),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (413, "SIZE_INVALID"));
    assert!(
        r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 1000 bytes")
    );
    let r = req(
        &app,
        Method::HEAD,
        &format!("/v2/alice/c/blobs/{d}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404, "nothing stored");

    // Chunked: 600 bytes fit, the next 600 do not.
    let r = req(
        &app,
        Method::POST,
        "/v2/alice/c/blobs/uploads/",
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 202);
    let loc = r.header("location");
    let patch = |range: String, bytes: Vec<u8>| {
        let (loc, auth, app) = (loc.clone(), auth.clone(), &app);
        async move {
            req(
                app,
                Method::PATCH,
                &loc,
                Some(&auth),
                &[
                    ("content-range", range.as_str()),
                    ("content-type", "application/octet-stream"),
                ],
                Some(bytes),
            )
            .await
        }
    };
    let r = patch("0-599".into(), big[..600].to_vec()).await;
    assert_eq!(r.status, 202);
    let r = patch("600-1199".into(), big[600..1200].to_vec()).await;
    assert_eq!((r.status, r.code().as_str()), (413, "SIZE_INVALID"));
    let r = req(&app, Method::GET, &loc, Some(&auth), &[], None).await;
    assert_eq!((r.status, r.header("range")), (204, "0-599".to_owned()));

    // A range whose length would wrap to 0 (or overflow) is refused; the session stays.
    for range in ["600-18446744073709551615", "0-18446744073709551615"] {
        let r = patch(range.into(), Vec::new()).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (416, "BLOB_UPLOAD_INVALID"),
            "{range}"
        );
    }
    let r = req(&app, Method::GET, &loc, Some(&auth), &[], None).await;
    assert_eq!(r.header("range"), "0-599");
    app.stop().await;
}

/// Issue 13, point 7: a blob is read, mounted, referenced and deleted only through a repository
/// it belongs to (uploaded or mounted there, or referenced by one of its manifests); a JSON
/// publish without the bundle needs it in the agent's own repository; the reference check of a
/// blob delete is an index lookup.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn blobs_belong_to_repositories(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let auth = basic(&app.user.token);
    let head = |repo: &str, d: &Digest| {
        let (app, path) = (&app, format!("/v2/{repo}/blobs/{d}"));
        async move { req(app, Method::HEAD, &path, None, &[], None).await.status }
    };
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let a = push_blob(&app, "alice/one", &auth, &config).await;
    assert_eq!(head("alice/one", &a).await, 200);
    // Stored, but not in alice/two: neither readable nor usable there.
    assert_eq!(head("alice/two", &a).await, 404);
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/two/blobs/{a}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (404, "BLOB_UNKNOWN"));
    let layer = b"layer bytes of two".to_vec();
    let l = push_blob(&app, "alice/two", &auth, &layer).await;
    let m = image_manifest((&a, config.len()), &[(l, layer.len())]);
    let r = put_manifest(&app, "alice/two", "v1", &auth, &m).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "MANIFEST_BLOB_UNKNOWN")
    );
    assert!(
        r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not in `alice/two`")
    );

    // A mount needs a `from` the blob belongs to; otherwise it is a new upload session.
    for q in [format!("mount={a}"), format!("mount={a}&from=alice/zzz")] {
        let r = req(
            &app,
            Method::POST,
            &format!("/v2/alice/two/blobs/uploads/?{q}"),
            Some(&auth),
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 202, "{q}: not mounted");
    }
    assert_eq!(head("alice/two", &a).await, 404);
    let r = req(
        &app,
        Method::POST,
        &format!("/v2/alice/two/blobs/uploads/?mount={a}&from=alice/one"),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(head("alice/two", &a).await, 200);
    let r = put_manifest(&app, "alice/two", "v1", &auth, &m).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

    // Referenced by alice/two's manifest: no repository may delete it.
    let del = |repo: &str, d: &Digest| {
        let (app, path, auth) = (&app, format!("/v2/{repo}/blobs/{d}"), auth.clone());
        async move { req(app, Method::DELETE, &path, Some(&auth), &[], None).await }
    };
    let r = del("alice/one", &a).await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    assert_eq!(
        del("alice/three", &l).await.status,
        404,
        "not in alice/three"
    );

    // In two repositories and referenced by none: a delete takes it from one only.
    let c = push_blob(&app, "alice/one", &auth, b"scratch").await;
    push_blob(&app, "alice/two", &auth, b"scratch").await;
    assert_eq!(del("alice/one", &c).await.status, 202);
    assert_eq!(head("alice/one", &c).await, 404);
    assert_eq!(head("alice/two", &c).await, 200);
    assert_eq!(del("alice/two", &c).await.status, 202);
    assert_eq!(head("alice/two", &c).await, 404);
    assert!(
        app.state.core.blobs.size(c).await.unwrap().is_none(),
        "the last link took the file"
    );

    // The JSON publish: a bundle left out must be in the agent's own repository.
    let bundle = b"bundle bytes, not really gzip".to_vec();
    let (s, _) = app
        .publish(
            &app.user.token,
            &app.user.key,
            &bundle_manifest("alice/x", "1.0.0", &bundle),
            Some(&bundle),
        )
        .await;
    assert_eq!(s, 201);
    let (s, v) = app
        .publish(
            &app.user.token,
            &app.user.key,
            &bundle_manifest("alice/y", "1.0.0", &bundle),
            None,
        )
        .await;
    assert_eq!((s, ofc_test_kit::code(&v)), (400, "bundle_missing"), "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("/v2/alice/y/blobs/uploads/"),
        "{v}"
    );
    push_blob(&app, "alice/y", &auth, &bundle).await;
    let (s, v) = app
        .publish(
            &app.user.token,
            &app.user.key,
            &bundle_manifest("alice/y", "1.0.0", &bundle),
            None,
        )
        .await;
    assert_eq!(s, 201, "{v}");
    // A later version of alice/x may leave out the bundle it published before.
    let (s, v) = app
        .publish(
            &app.user.token,
            &app.user.key,
            &bundle_manifest("alice/x", "1.0.1", &bundle),
            None,
        )
        .await;
    assert_eq!(s, 201, "{v}");
    app.stop().await;
}

/// Issue 13, point 6: per-user limits on live upload sessions and their staged bytes,
/// per-namespace limits on stored blob bytes and manifests, idle sessions ending; each refusal
/// is an OCI error naming its setting.
#[tokio::test]
async fn uploads_and_manifests_have_quotas() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.max_uploads_per_user = 3;
        c.max_upload_bytes_per_user = 1000;
        c.max_namespace_bytes = 3000;
        c.max_manifests_per_namespace = 2;
        c.upload_ttl_secs = 2;
    })
    .await;
    let auth = basic(&app.user.token);
    let open = || {
        let (app, auth) = (&app, auth.clone());
        async move {
            req(
                app,
                Method::POST,
                "/v2/alice/q/blobs/uploads/",
                Some(&auth),
                &[],
                None,
            )
            .await
        }
    };
    let patch = |loc: String, bytes: Vec<u8>| {
        let (app, auth) = (&app, auth.clone());
        async move {
            req(
                app,
                Method::PATCH,
                &loc,
                Some(&auth),
                &[("content-type", "application/octet-stream")],
                Some(bytes),
            )
            .await
        }
    };
    let message = |r: &Resp| {
        r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .to_string()
    };

    // Sessions: three at once.
    let mut locs = Vec::new();
    for _ in 0..3 {
        let r = open().await;
        assert_eq!(r.status, 202);
        locs.push(r.header("location"));
    }
    let r = open().await;
    assert_eq!((r.status, r.code().as_str()), (429, "TOOMANYREQUESTS"));
    assert!(
        message(&r).contains("max_uploads_per_user is 3"),
        "{}",
        message(&r)
    );
    assert_eq!(r.header("retry-after"), "10");
    // Staged bytes: 600 + 600 is past the user's 1000.
    assert_eq!(patch(locs[0].clone(), vec![1; 600]).await.status, 202);
    let r = patch(locs[1].clone(), vec![2; 600]).await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    assert!(
        message(&r).contains("max_upload_bytes_per_user is 1000 bytes"),
        "{}",
        message(&r)
    );
    assert_eq!(
        patch(locs[1].clone(), vec![2; 400]).await.status,
        202,
        "what is left fits"
    );
    // Cancelling one makes room for another.
    let r = req(&app, Method::DELETE, &locs[0], Some(&auth), &[], None).await;
    assert_eq!(r.status, 204);
    assert_eq!(open().await.status, 202);

    // Idle sessions end: after the TTL they neither count nor keep their bytes.
    tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
    // Their chunks are parts in the blob store (`blobs-v1/uploads/<session>/`).
    let uploads = app.data_dir.join("blobs-v1/uploads");
    let staged_before = std::fs::read_dir(&uploads).unwrap().count();
    assert!(staged_before >= 1);
    let r = open().await;
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        std::fs::read_dir(&uploads).unwrap().count(),
        0,
        "dead sessions' parts dropped"
    );
    let r = req(&app, Method::GET, &locs[1], Some(&auth), &[], None).await;
    assert_eq!((r.status, r.code().as_str()), (404, "BLOB_UPLOAD_UNKNOWN"));
    req(
        &app,
        Method::DELETE,
        &r.header("location"),
        Some(&auth),
        &[],
        None,
    )
    .await;

    // The namespace's stored bytes: three 900-byte blobs fit in 3000, a fourth does not,
    // in any repository of the namespace.
    let mut blobs = Vec::new();
    for (i, repo) in ["alice/q", "alice/q", "alice/other"].iter().enumerate() {
        blobs.push(push_blob(&app, repo, &auth, &vec![i as u8 + 10; 900]).await);
    }
    let big = vec![99u8; 900];
    let r = req(
        &app,
        Method::POST,
        &format!("/v2/alice/third/blobs/uploads/?digest={}", Digest::of(&big)),
        Some(&auth),
        &[],
        Some(big),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    assert!(
        message(&r).contains("max_namespace_bytes is 3000 bytes"),
        "{}",
        message(&r)
    );
    // A mount into another repository of the namespace counts too.
    let r = req(
        &app,
        Method::POST,
        &format!(
            "/v2/alice/third/blobs/uploads/?mount={}&from=alice/q",
            blobs[0]
        ),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));

    // Manifests: two per namespace; pushing one of them again is no new one.
    let cfg = br#"{"os":"linux"}"#.to_vec();
    let mut app_cfg = None;
    for (i, repo) in ["alice/q", "alice/other"].iter().enumerate() {
        // Every repository needs its own config blob; the namespace has no room left, so
        // make room first.
        if i == 0 {
            let r = req(
                &app,
                Method::DELETE,
                &format!("/v2/alice/q/blobs/{}", blobs[1]),
                Some(&auth),
                &[],
                None,
            )
            .await;
            assert_eq!(r.status, 202);
        }
        let c = push_blob(&app, repo, &auth, &cfg).await;
        app_cfg = Some(c);
        let m = image_manifest((&c, cfg.len()), &[(blobs[if i == 0 { 0 } else { 2 }], 900)]);
        let r = put_manifest(&app, repo, "v1", &auth, &m).await;
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let c = app_cfg.unwrap();
    let m = image_manifest((&c, cfg.len()), &[(blobs[2], 900)]);
    let r = put_manifest(
        &app,
        "alice/other",
        "v2",
        &auth,
        &serde_json::to_vec(&{
            let mut v: Value = serde_json::from_slice(&m).unwrap();
            v["annotations"] = json!({"n": "2"});
            v
        })
        .unwrap(),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    assert!(
        message(&r).contains("max_manifests_per_namespace is 2"),
        "{}",
        message(&r)
    );
    let r = put_manifest(&app, "alice/other", "again", &auth, &m).await;
    assert_eq!(
        r.status,
        201,
        "the same manifest under another tag: {}",
        String::from_utf8_lossy(&r.body)
    );
    app.stop().await;
}

/// Issue 14: one `auth::principal_for_token` for the JSON API and `/v2/`: a token used only
/// through `/v2/` (Basic, Bearer, and the bearers `/v2/token` exchanges it for) records its use
/// like one used through the API.
#[tokio::test]
async fn v2_records_token_use() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let last_used = |token: String| {
        let store = app.state.core.store.clone();
        async move {
            let (t, _) = store
                .token_by_hash(&hub_core::auth::hash_token(&token))
                .await
                .unwrap()
                .unwrap();
            t.last_used_at
        }
    };
    for how in ["basic", "bearer", "exchanged"] {
        let token = app
            .token("alice", &ofc_test_kit::user_scopes(), &["*"], None)
            .await;
        assert_eq!(last_used(token.clone()).await, None, "{how}: fresh");
        let auth = match how {
            "basic" => basic(&token),
            "bearer" => format!("Bearer {token}"),
            _ => {
                let r = req(
                    &app,
                    Method::GET,
                    "/v2/token?scope=repository:alice/u:pull,push",
                    Some(&basic(&token)),
                    &[],
                    None,
                )
                .await;
                assert_eq!(r.status, 200);
                // The exchange used the token; what is checked below is the bearer's use.
                let write = app.state.core.store.db().write();
                sqlx::query("UPDATE api_tokens SET last_used_at = NULL")
                    .execute(write)
                    .await
                    .unwrap();
                format!("Bearer {}", r.json()["token"].as_str().unwrap())
            }
        };
        let r = req(
            &app,
            Method::POST,
            "/v2/alice/u/blobs/uploads/",
            Some(&auth),
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 202, "{how}");
        assert!(last_used(token).await.is_some(), "{how}: use recorded");
    }
    app.stop().await;
}

/// Issue 14, point 5: `/v2/` requests are counted in `/metrics`, apart from the JSON API's.
#[tokio::test]
async fn v2_requests_are_counted_in_metrics_by_route_group() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let auth = basic(&app.user.token);
    push_blob(&app, "alice/counted", &auth, b"counted bytes").await;
    let missing = Digest::of(b"never uploaded");
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/counted/blobs/{missing}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        // POST (202) and PUT (201) of the upload; the GET of a missing blob.
        "ofc_hub_http_requests_total{group=\"oci\",status=\"2xx\"} 2",
        "ofc_hub_http_requests_total{group=\"oci\",status=\"4xx\"} 1",
        "ofc_hub_http_request_duration_seconds_count{group=\"oci\"} 3",
        "ofc_hub_http_requests_total{group=\"api\",status=\"2xx\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    app.stop().await;
}

/// Issue 14, point 5: a JSON API request that takes longer than `request_timeout_secs` gets
/// the hub's JSON 503 `request_timeout`; the streaming routes (a bundle download, a `/v2/` blob
/// upload) waiting just as long are not cut. The wait: another connection holds SQLite's write
/// lock (the hub's busy timeout is 10 s).
#[tokio::test]
async fn slow_json_requests_time_out_but_streaming_routes_do_not() {
    use sqlx::Connection as _;
    let app = TestHub::in_process_with(Backend::Sqlite, |c| c.request_timeout_secs = 1).await;
    let u = app.user.clone();
    let bytes = b"bundle bytes for the timeout test".to_vec();
    let m = bundle_manifest("alice/slow", "1.0.0", &bytes);
    assert_eq!(app.publish(&u.token, &u.key, &m, Some(&bytes)).await.0, 201);

    let url = format!("sqlite://{}", app.data_dir.join("hub.sqlite3").display());
    let mut lock = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut lock)
        .await
        .unwrap();

    let bundle = {
        let (c, url) = (
            app.client.clone(),
            app.url("/api/v1/agents/alice/slow/versions/1.0.0/bundle"),
        );
        tokio::spawn(async move {
            let r = c.get(url).send().await.unwrap();
            (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
        })
    };
    let blob = b"a blob uploaded while the database is busy".to_vec();
    let upload = {
        let d = Digest::of(&blob);
        let (c, url) = (
            app.client.clone(),
            app.url(&format!("/v2/alice/slow/blobs/uploads/?digest={d}")),
        );
        let (auth, blob) = (basic(&u.token), blob.clone());
        tokio::spawn(async move {
            let r = c
                .post(url)
                .header("authorization", auth)
                .header("content-type", "application/octet-stream")
                .body(blob)
                .send()
                .await
                .unwrap();
            r.status().as_u16()
        })
    };

    let start = std::time::Instant::now();
    let m2 = bundle_manifest("alice/slow", "1.1.0", &bytes);
    let (s, e) = app.publish(&u.token, &u.key, &m2, Some(&bytes)).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (503, Some("request_timeout")),
        "{e}"
    );
    assert!(e["message"].as_str().unwrap().contains("1 s"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));

    // Well past the limit, the streaming requests are still waiting, not cut.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(!bundle.is_finished() && !upload.is_finished());
    sqlx::query("ROLLBACK").execute(&mut lock).await.unwrap();
    lock.close().await.unwrap();
    let (status, got) = bundle.await.unwrap();
    assert_eq!((status, got), (200, bytes));
    assert_eq!(upload.await.unwrap(), 201);
    app.stop().await;
}

/// Issue 14, point 5: an agent pushed through `/v2/` wakes the search follower as a JSON
/// publish does. The follower's own poll is set to an hour here, so only the wake can make the
/// agent searchable within the test's bound.
#[tokio::test]
async fn an_oci_push_wakes_the_search_follower() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| c.search_poll_ms = 3_600_000).await;
    let auth = basic(&app.user.token);
    let bundle = b"bundle pushed through /v2/".to_vec();
    let m = bundle_manifest("alice/woken", "1.0.0", &bundle);
    let env = sign_manifest(&m, &app.user.key).to_json().into_bytes();
    let ed = push_blob(&app, "alice/woken", &auth, &env).await;
    let bd = push_blob(&app, "alice/woken", &auth, &bundle).await;
    let om = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "artifactType": mt::AGENT_ARTIFACT_V1,
        "config": {"mediaType": mt::AGENT_ENVELOPE_V1, "digest": ed.to_string(), "size": env.len()},
        "layers": [{"mediaType": mt::AGENT_BUNDLE_V1, "digest": bd.to_string(), "size": bundle.len()}],
    }))
    .unwrap();
    let r = put_manifest(&app, "alice/woken", "1.0.0", &auth, &om).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    // Bounded: at most 200 looks, 50 ms apart.
    for _ in 0..200 {
        let (s, v) = app.get("/api/v1/search?q=Data%20Analyst").await;
        assert_eq!(s, 200, "{v}");
        if v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["name"] == "alice/woken")
        {
            app.stop().await;
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the pushed agent never became searchable: the push did not wake the follower");
}

/// A referrer of `subject` (digest `sd`, `len` bytes) with `annotation_bytes` of annotations.
fn big_referrer(
    cfg: &Digest,
    sd: &Digest,
    len: usize,
    i: usize,
    annotation_bytes: usize,
) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": mt::OCI_IMAGE_MANIFEST,
        "artifactType": "application/vnd.example.note",
        "config": {"mediaType": mt::OCI_EMPTY, "digest": cfg.to_string(), "size": 2},
        "layers": [],
        "subject": {"mediaType": mt::OCI_IMAGE_MANIFEST, "digest": sd.to_string(), "size": len},
        "annotations": {"n": i.to_string(), "pad": "x".repeat(annotation_bytes)},
    }))
    .unwrap()
}

/// Manifests were read, kept and served whole with no cap beyond 8 MiB, and counted in no
/// byte quota; one anonymous `GET …/referrers/<digest>` built an answer of every referrer at
/// once (158 MB for 20 referrers of 7.9 MB). Now: 4 MiB per manifest, referrers in pages
/// (100 descriptors, about 1 MiB) linked with `Link: …; rel="next"`, every page read one
/// manifest at a time, and manifests count in `max_namespace_bytes`.
#[tokio::test]
async fn manifests_are_capped_referrers_are_paged_and_manifests_count_in_the_quota() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.max_namespace_bytes = 64 << 20;
    })
    .await;
    let auth = basic(&app.user.token);
    let cfg = push_blob(&app, "alice/r", &auth, b"{}").await;
    let subject = image_manifest((&cfg, 2), &[]);
    let sd = Digest::of(&subject);
    assert_eq!(
        put_manifest(&app, "alice/r", "v1", &auth, &subject)
            .await
            .status,
        201
    );

    // The cap: 4 MiB is taken, a byte more is not.
    let fits = big_referrer(&cfg, &sd, subject.len(), 0, 4 * 1024 * 1024 - 700);
    assert!(fits.len() <= 4 * 1024 * 1024, "{}", fits.len());
    let over = big_referrer(&cfg, &sd, subject.len(), 1, 4 * 1024 * 1024);
    assert!(over.len() > 4 * 1024 * 1024);
    let r = put_manifest(
        &app,
        "alice/r",
        &Digest::of(&over).to_string(),
        &auth,
        &over,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (413, "SIZE_INVALID"));

    // Six referrers of ~3.9 MiB and 150 small ones.
    let mut all = std::collections::BTreeSet::new();
    for i in 0..6 {
        let m = big_referrer(&cfg, &sd, subject.len(), 1000 + i, 4 * 1024 * 1024 - 700);
        let d = Digest::of(&m).to_string();
        assert_eq!(
            put_manifest(&app, "alice/r", &d, &auth, &m).await.status,
            201
        );
        all.insert(d);
    }
    for i in 0..150 {
        let m = big_referrer(&cfg, &sd, subject.len(), i, 10);
        let d = Digest::of(&m).to_string();
        assert_eq!(
            put_manifest(&app, "alice/r", &d, &auth, &m).await.status,
            201
        );
        all.insert(d);
    }
    // Walk the pages: each is bounded, together they list every referrer once.
    let mut seen = std::collections::BTreeSet::new();
    let mut next = Some(format!("/v2/alice/r/referrers/{sd}"));
    let mut pages = 0;
    while let Some(path) = next.take() {
        pages += 1;
        assert!(pages < 200, "the pages never end");
        let r = req(&app, Method::GET, &path, None, &[], None).await;
        assert_eq!(r.status, 200);
        assert!(
            r.body.len() <= 5 * 1024 * 1024 + 64 * 1024,
            "a page of {} bytes",
            r.body.len()
        );
        let v = r.json();
        let list = v["manifests"].as_array().unwrap();
        assert!(!list.is_empty() && list.len() <= 100, "{}", list.len());
        for m in list {
            assert!(
                seen.insert(m["digest"].as_str().unwrap().to_owned()),
                "listed twice"
            );
            assert!(m["annotations"]["n"].is_string());
        }
        let link = r.header("link");
        if !link.is_empty() {
            let target = link.trim_start_matches('<').split('>').next().unwrap();
            next = Some(target.to_owned());
        }
    }
    assert_eq!(seen, all);
    assert!(pages >= 3, "{pages} pages");

    // The quota counts manifests: the big ones hold ~23 MiB of the 64 MiB; ten more of them
    // do not fit.
    let mut refused = None;
    for i in 0..12 {
        let m = big_referrer(&cfg, &sd, subject.len(), 2000 + i, 4 * 1024 * 1024 - 700);
        let r = put_manifest(&app, "alice/r", &Digest::of(&m).to_string(), &auth, &m).await;
        if r.status != 201 {
            refused = Some(r);
            break;
        }
    }
    let r = refused.expect("manifests past max_namespace_bytes were taken");
    assert_eq!((r.status, r.code().as_str()), (403, "DENIED"));
    assert!(
        r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("max_namespace_bytes"),
        "{}",
        r.json()
    );
    app.stop().await;
}

/// 200 clients that never read an 8 MiB manifest held 1.6 GB. The bytes of manifests being
/// answered are bounded together (`manifest_memory_bytes`): past them an answer waits, then
/// gets 503 with `Retry-After`, until the stalled clients go.
#[tokio::test]
async fn clients_that_never_read_hold_bounded_manifest_memory() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.manifest_memory_bytes = 8 << 20;
    })
    .await;
    let auth = basic(&app.user.token);
    let cfg = push_blob(&app, "alice/m", &auth, b"{}").await;
    let subject = image_manifest((&cfg, 2), &[]);
    let sd = Digest::of(&subject);
    let big = big_referrer(&cfg, &sd, subject.len(), 0, 4 * 1024 * 1024 - 700);
    let d = Digest::of(&big);
    assert_eq!(
        put_manifest(&app, "alice/m", &d.to_string(), &auth, &big)
            .await
            .status,
        201
    );
    // Two clients ask for it and never read (tiny receive buffers, so the answer stays with
    // the hub).
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut tcp = socket
            .connect(app.url.trim_start_matches("http://").parse().unwrap())
            .await
            .unwrap();
        tcp.write_all(
            format!("GET /v2/alice/m/manifests/{d} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        stalled.push(tcp);
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/m/manifests/{d}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (503, "TOOMANYREQUESTS"));
    assert_eq!(r.header("retry-after"), "1");
    // They go: the memory is back.
    drop(stalled);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/alice/m/manifests/{d}"),
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, big);
    app.stop().await;
}

/// Anonymous `/v2/token` calls with a long scope list each added a database row (~1.2 MB/s
/// for one client). Anonymous tokens are not stored now, and a token may push to at most 16
/// namespaces.
#[tokio::test]
async fn token_requests_do_not_grow_the_database() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let scopes: String = (0..1500)
        .map(|i| format!("scope=repository:ns{i}/r:pull,push"))
        .collect::<Vec<_>>()
        .join("&");
    let rows = || async {
        let write = app.state.core.store.db().write();
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM oci_access_tokens")
            .fetch_one(write)
            .await
            .unwrap()
    };
    let mut anonymous = String::new();
    for _ in 0..100 {
        let r = req(
            &app,
            Method::GET,
            &format!("/v2/token?{scopes}"),
            None,
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, 200);
        anonymous = r.json()["token"].as_str().unwrap().to_owned();
    }
    assert_eq!(rows().await, 0);
    // The anonymous token pulls.
    let bearer = format!("Bearer {anonymous}");
    let r = req(&app, Method::GET, "/v2/", Some(&bearer), &[], None).await;
    assert_eq!(r.status, 200);
    // With credentials: 16 namespaces, not 17.
    let auth = basic(&app.user.token);
    let ask = |n: usize| {
        (0..n)
            .map(|i| format!("scope=repository:ns{i}/r:pull,push"))
            .collect::<Vec<_>>()
            .join("&")
    };
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/token?{}", ask(16)),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let r = req(
        &app,
        Method::GET,
        &format!("/v2/token?{}", ask(17)),
        Some(&auth),
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "DENIED"));
    assert_eq!(rows().await, 1);
    app.stop().await;
}
