//! The OCI distribution API (spec v1.1) under `/v2/`: blobs (with `Range`), monolithic and
//! chunked uploads, cross-repository mounts, manifests stored byte-exact, tags, referrers and
//! deletes, all answering with the OCI error envelope.
//!
//! Repository paths are `namespace/…`; their first segment is an ofc namespace. Pulls are
//! anonymous; pushes authenticate with an ofc API token, sent as the password of HTTP Basic or
//! exchanged at `/v2/token` for a short-lived bearer token (the flow `docker`, podman, skopeo
//! and oras follow after the `WWW-Authenticate` challenge). An image manifest with the ofc
//! `artifactType` is an agent version: pushing it is a publish with the JSON API's checks (see
//! [`artifact`]).

mod access;
pub mod artifact;
pub mod db;
pub mod gc;
mod manifests;
mod uploads;
pub mod upstream;

#[allow(clippy::wildcard_imports)]
use access::*;
#[allow(clippy::wildcard_imports)]
use manifests::*;
pub use manifests::{Descriptor, Parsed, mirror, parse_manifest};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use base64::Engine as _;
use index_schema::media_types;
use index_schema::name::Digest;
use serde_json::{Value, json};

use crate::auth::{Principal, Scope, hash_token};
use crate::error::ApiError;
use crate::state::AppState;
use crate::store::now_ms;

/// The largest manifest accepted: 4 MiB, as other registries (the distribution registry,
/// GHCR) and the spec's "at least 4 MB".
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;
/// How long an answer waits for manifest memory.
const MANIFEST_MEMORY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Lifetime of a bearer token from `/v2/token`, in seconds.
pub const ACCESS_TOKEN_TTL_SECS: i64 = 300;
/// Prefix of bearer tokens issued by `/v2/token`.
const ACCESS_TOKEN_PREFIX: &str = "ofc_oci_";
/// Prefix of the anonymous (pull-only) bearer tokens `/v2/token` issues: not stored.
const ANONYMOUS_TOKEN_PREFIX: &str = "ofc_ociANON_";
/// The `service` of the bearer challenge.
const SERVICE: &str = "ofc-hub";

/// State of the OCI routes: the hub's state plus in-progress upload sessions.
#[derive(Debug, Clone)]
pub struct OciState {
    /// The hub.
    pub app: AppState,
    sessions: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<uploads::Session>>>>>,
    /// KiB of `manifest_memory_bytes` (the setting) not held by an answer being written: a
    /// client that never reads its answer holds its bytes, and all of them together hold at
    /// most that much (past it an answer waits [`MANIFEST_MEMORY_WAIT`], then gets 503).
    manifest_memory: Arc<tokio::sync::Semaphore>,
}

impl OciState {
    /// OCI state over the hub's.
    pub fn new(app: AppState) -> Self {
        let kib = usize::try_from(app.config.manifest_memory_bytes / 1024)
            .unwrap_or(usize::MAX)
            .clamp(
                MAX_MANIFEST_BYTES / 1024,
                tokio::sync::Semaphore::MAX_PERMITS,
            );
        OciState {
            app,
            sessions: Arc::default(),
            manifest_memory: Arc::new(tokio::sync::Semaphore::new(kib)),
        }
    }

    /// Memory for an answer of `bytes` manifest bytes, held until the answer's body is
    /// dropped (written, or its connection gone); 503 when none frees up in time.
    pub(crate) async fn manifest_memory(
        &self,
        bytes: usize,
    ) -> OciResult<tokio::sync::OwnedSemaphorePermit> {
        let kib = u32::try_from(bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        match tokio::time::timeout(
            MANIFEST_MEMORY_WAIT,
            self.manifest_memory.clone().acquire_many_owned(kib),
        )
        .await
        {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(OciError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "TOOMANYREQUESTS",
                "the registry is answering too many manifests at once; retry shortly",
            )
            .header(header::RETRY_AFTER, "1".to_owned())),
        }
    }
}

/// `bytes` as a response body that holds `permit` until the last chunk is taken (64 KiB
/// chunks of the one buffer, so the memory is counted while a slow client reads).
pub(crate) fn held_body(bytes: Vec<u8>, permit: tokio::sync::OwnedSemaphorePermit) -> Body {
    use futures::StreamExt as _;
    let bytes = axum::body::Bytes::from(bytes);
    let chunks = (0..bytes.len().div_ceil(64 * 1024)).map(move |i| {
        let end = ((i + 1) * 64 * 1024).min(bytes.len());
        Ok::<_, std::convert::Infallible>(bytes.slice(i * 64 * 1024..end))
    });
    let mut permit = Some(permit);
    let stream = futures::stream::iter(chunks).chain(futures::stream::poll_fn(move |_| {
        drop(permit.take());
        std::task::Poll::Ready(None)
    }));
    Body::from_stream(stream)
}

/// The `/v2/` routes and the token endpoint.
pub fn router(app: AppState) -> Router {
    let st = OciState::new(app);
    Router::new()
        .route("/v2/token", get(token).post(token))
        .route("/v2", any(dispatch))
        .route("/v2/", any(dispatch))
        .route("/v2/{*rest}", any(dispatch))
        .with_state(st)
}

// ---- errors ----

/// An error in the OCI envelope: `{"errors":[{"code","message","detail"}]}`.
#[derive(Debug, Clone)]
pub struct OciError {
    /// HTTP status.
    pub status: StatusCode,
    /// OCI error code (`BLOB_UNKNOWN`, `DENIED`, …).
    pub code: &'static str,
    /// For people.
    pub message: String,
    /// Structured detail.
    pub detail: Option<Value>,
    /// `WWW-Authenticate` value, on 401.
    pub challenge: Option<String>,
    /// Extra headers (`Range` on 416).
    pub headers: Vec<(header::HeaderName, String)>,
}

/// OCI handler result.
pub type OciResult<T> = Result<T, OciError>;

impl OciError {
    /// An error.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        OciError {
            status,
            code,
            message: message.into(),
            detail: None,
            challenge: None,
            headers: Vec::new(),
        }
    }
    fn detail(mut self, d: Value) -> Self {
        self.detail = Some(d);
        self
    }
    fn header(mut self, name: header::HeaderName, value: String) -> Self {
        self.headers.push((name, value));
        self
    }
    fn internal(e: impl std::fmt::Display) -> Self {
        let _ = ApiError::internal(&e);
        OciError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "UNKNOWN",
            "internal server error",
        )
    }
    fn name_invalid(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::BAD_REQUEST, "NAME_INVALID", m)
    }
    fn digest_invalid(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::BAD_REQUEST, "DIGEST_INVALID", m)
    }
    fn manifest_invalid(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::BAD_REQUEST, "MANIFEST_INVALID", m)
    }
    fn denied(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::FORBIDDEN, "DENIED", m)
    }
    fn unsupported() -> Self {
        OciError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "UNSUPPORTED",
            "the operation is unsupported",
        )
    }
}

impl IntoResponse for OciError {
    fn into_response(self) -> Response {
        let body = json!({"errors": [{
            "code": self.code,
            "message": self.message,
            "detail": self.detail.unwrap_or(Value::Null),
        }]});
        let mut resp = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        if let Some(c) = self.challenge
            && let Ok(v) = HeaderValue::from_str(&c)
        {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        for (k, v) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&v) {
                resp.headers_mut().insert(k, v);
            }
        }
        resp
    }
}

impl From<crate::store::StoreError> for OciError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            // A commit found a blob it references gone, or being collected (see `gc`).
            crate::store::StoreError::BlobUnavailable { digest, why } => OciError::new(
                StatusCode::BAD_REQUEST,
                "MANIFEST_BLOB_UNKNOWN",
                format!("blob {digest} {why}"),
            )
            .detail(json!({ "digest": digest })),
            e => OciError::internal(e),
        }
    }
}

impl From<crate::blob::BlobError> for OciError {
    fn from(e: crate::blob::BlobError) -> Self {
        OciError::internal(e)
    }
}

/// Maps a JSON-API error (from the shared publish path) to the OCI envelope, keeping its status
/// and naming the ofc code in the message.
impl From<ApiError> for OciError {
    fn from(e: ApiError) -> Self {
        let code = match e.status {
            StatusCode::UNAUTHORIZED => "UNAUTHORIZED",
            StatusCode::FORBIDDEN => "DENIED",
            StatusCode::NOT_FOUND => "NAME_UNKNOWN",
            StatusCode::PAYLOAD_TOO_LARGE => "SIZE_INVALID",
            StatusCode::TOO_MANY_REQUESTS => "TOOMANYREQUESTS",
            s if s.is_server_error() => "UNKNOWN",
            StatusCode::CONFLICT => "DENIED",
            _ if e.code == crate::error::ErrorCode::BundleMissing => "MANIFEST_BLOB_UNKNOWN",
            _ => "MANIFEST_INVALID",
        };
        OciError::new(e.status, code, format!("{}: {}", e.code, e.message))
            .detail(json!({"ofc_code": e.code}))
    }
}

// ---- names ----

/// Checks an OCI repository name (`a/b…`, components `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`)
/// that has a namespace and a name; returns the namespace.
pub fn check_repository(name: &str) -> OciResult<&str> {
    let bad = |why: &str| OciError::name_invalid(format!("invalid repository name: {why}"));
    if name.len() > 255 {
        return Err(bad("longer than 255 characters"));
    }
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() < 2 {
        return Err(bad("it must be `namespace/name`"));
    }
    for p in &parts {
        if !component_ok(p) {
            return Err(bad(&format!(
                "component `{}` must be lowercase letters and digits separated by `.`, `_`, `__` or dashes",
                p.escape_default()
            )));
        }
    }
    Ok(parts[0])
}

fn component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let x = b[i];
        if x.is_ascii_lowercase() || x.is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && matches!(b[i], b'.' | b'_' | b'-') {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|s| s == b'-');
        if !ok || i == start {
            return false;
        }
    }
    true
}

/// A tag: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
pub fn tag_ok(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

fn parse_digest(s: &str) -> OciResult<Digest> {
    Digest::parse(s).map_err(|e| OciError::digest_invalid(e.to_string()))
}

// ---- dispatch ----

async fn dispatch(State(st): State<OciState>, req: Request) -> Response {
    match handle(&st, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// What a `/v2/…` path names.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    Base,
    Tags(String),
    UploadStart(String),
    Upload(String, &'a str),
    Blob(String, &'a str),
    Manifest(String, &'a str),
    Referrers(String, &'a str),
}

fn target(path: &str) -> Option<Target<'_>> {
    let rest = path.strip_prefix("/v2")?;
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Some(Target::Base);
    }
    let segs: Vec<&str> = rest.split('/').collect();
    let n = segs.len();
    let name = |k: usize| segs[..n - k].join("/");
    if n >= 3 && segs[n - 2] == "tags" && segs[n - 1] == "list" {
        return Some(Target::Tags(name(2)));
    }
    if n >= 4 && segs[n - 3] == "blobs" && segs[n - 2] == "uploads" {
        return Some(if segs[n - 1].is_empty() {
            Target::UploadStart(name(3))
        } else {
            Target::Upload(name(3), segs[n - 1])
        });
    }
    if n >= 3 && segs[n - 2] == "blobs" && segs[n - 1] == "uploads" {
        return Some(Target::UploadStart(name(2)));
    }
    if n >= 3 {
        let r = segs[n - 1];
        return match segs[n - 2] {
            "blobs" => Some(Target::Blob(name(2), r)),
            "manifests" => Some(Target::Manifest(name(2), r)),
            "referrers" => Some(Target::Referrers(name(2), r)),
            _ => None,
        };
    }
    None
}

/// The query parameters of a request (later values win).
fn query(parts: &Parts) -> HashMap<String, String> {
    parts.uri.query().map(query_pairs).unwrap_or_default()
}

/// `application/x-www-form-urlencoded` decoding (`+` is a space, `%XX` a byte, malformed
/// escapes kept as they are, invalid UTF-8 replaced); later values win.
fn query_pairs(q: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

async fn handle(st: &OciState, req: Request) -> OciResult<Response> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    // Percent-encoded paths are never valid OCI names: refusing them outright means no
    // decoded `..` or `/` can reach a name.
    if path.contains('%') {
        return Err(OciError::name_invalid(
            "percent-encoding is not allowed in paths",
        ));
    }
    let Some(t) = target(&path) else {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "NAME_UNKNOWN",
            "no such OCI endpoint",
        ));
    };
    let m = parts.method.clone();
    let repo = match &t {
        Target::Base => None,
        Target::Tags(n)
        | Target::UploadStart(n)
        | Target::Upload(n, _)
        | Target::Blob(n, _)
        | Target::Manifest(n, _)
        | Target::Referrers(n, _) => {
            check_repository(n)?;
            Some(n.clone())
        }
    };
    let caller = authenticate(st, &parts, repo.as_deref()).await?;
    match t {
        Target::Base => {
            if m != Method::GET && m != Method::HEAD {
                return Err(OciError::unsupported());
            }
            // Clients only send credentials after a challenge, so anonymous callers get one
            // here; everything they may read stays readable without.
            if matches!(caller, Caller::Anonymous)
                && parts.headers.get(header::AUTHORIZATION).is_none()
            {
                return Err(unauthorized(&parts, None, "authentication required"));
            }
            Ok((
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (
                        header::HeaderName::from_static("docker-distribution-api-version"),
                        "registry/2.0",
                    ),
                ],
                "{}",
            )
                .into_response())
        }
        Target::Tags(n) if m == Method::GET => tags_list(st, &parts, &n).await,
        Target::UploadStart(n) if m == Method::POST => {
            uploads::start(st, &parts, &caller, &n, body).await
        }
        Target::Upload(n, id) => uploads::session(st, &parts, &caller, &n, id, body).await,
        Target::Blob(n, d) if m == Method::GET || m == Method::HEAD => {
            uploads::get_blob(st, &parts, &n, d).await
        }
        Target::Blob(n, d) if m == Method::DELETE => {
            gc::delete_blob(st, &parts, &caller, &n, d).await
        }
        Target::Manifest(n, r) if m == Method::GET || m == Method::HEAD => {
            get_manifest(st, &parts, &n, r).await
        }
        Target::Manifest(n, r) if m == Method::PUT => {
            put_manifest(st, &parts, &caller, &n, r, body).await
        }
        Target::Manifest(n, r) if m == Method::DELETE => {
            delete_manifest(st, &parts, &caller, &n, r).await
        }
        Target::Referrers(n, d) if m == Method::GET => referrers(st, &parts, &n, d).await,
        _ => Err(OciError::unsupported()),
    }
}

fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_repository("acme/img").is_ok());
        assert!(check_repository("acme/a.b_c__d--e/f").is_ok());
        for bad in [
            "acme",
            "acme/..",
            "acme/../x",
            "../acme/x",
            "acme//x",
            "Acme/x",
            "acme/x/",
            "acme/_x",
            "acme/x.",
            "acme/a..b",
            "acme/a___b",
            "acme/a._b",
            "/acme/x",
        ] {
            assert!(check_repository(bad).is_err(), "{bad}");
        }
        assert!(tag_ok("1.0.0-rc.1"));
        assert!(tag_ok("latest"));
        assert!(!tag_ok(".x"));
        assert!(!tag_ok("a/b"));
        assert!(!tag_ok(&"a".repeat(129)));
    }

    #[test]
    fn targets() {
        assert_eq!(target("/v2/"), Some(Target::Base));
        assert_eq!(
            target("/v2/a/b/tags/list"),
            Some(Target::Tags("a/b".into()))
        );
        assert_eq!(
            target("/v2/a/b/blobs/uploads/"),
            Some(Target::UploadStart("a/b".into()))
        );
        assert_eq!(
            target("/v2/a/b/blobs/uploads/xyz"),
            Some(Target::Upload("a/b".into(), "xyz"))
        );
        assert_eq!(
            target("/v2/a/b/c/manifests/1.0"),
            Some(Target::Manifest("a/b/c".into(), "1.0"))
        );
        assert_eq!(target("/v2/a/b/other/x"), None);
    }

    #[test]
    fn queries() {
        let q = query_pairs("a=a%2Fb+c%3&digest=sha256%3Aab&&flag&x=1&x=2&end=%3A");
        assert_eq!(q["a"], "a/b c%3");
        assert_eq!(q["digest"], "sha256:ab");
        assert_eq!(q["flag"], "");
        assert_eq!(q["x"], "2");
        // The hand-written decoder this replaced left an escape at the very end undecoded.
        assert_eq!(q["end"], ":");
        assert_eq!(q.len(), 5);
        assert_eq!(
            query_pairs("%FF=%zz"),
            HashMap::from([("\u{FFFD}".into(), "%zz".into())])
        );
    }
}
