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

pub mod artifact;
pub mod db;
pub mod gc;
mod uploads;
pub mod upstream;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use base64::Engine as _;
use index_schema::media_types;
use index_schema::name::Digest;
use serde_json::{Value, json};

use crate::api::{AppState, Auth};
use crate::auth::{Principal, Scope, hash_token, parse_scopes};
use crate::error::ApiError;
use crate::store::now_ms;

/// The largest manifest accepted (the spec asks registries to take at least 4 MB).
pub const MAX_MANIFEST_BYTES: usize = 8 * 1024 * 1024;
/// Lifetime of a bearer token from `/v2/token`, in seconds.
pub const ACCESS_TOKEN_TTL_SECS: i64 = 300;
/// Prefix of bearer tokens issued by `/v2/token`.
const ACCESS_TOKEN_PREFIX: &str = "ofc_oci_";
/// The `service` of the bearer challenge.
const SERVICE: &str = "ofc-hub";

/// State of the OCI routes: the hub's state plus in-progress upload sessions.
#[derive(Debug, Clone)]
pub struct OciState {
    /// The hub.
    pub app: AppState,
    sessions: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<uploads::Session>>>>>,
}

impl OciState {
    /// OCI state over the hub's.
    pub fn new(app: AppState) -> Self {
        OciState {
            app,
            sessions: Arc::default(),
        }
    }
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
            _ if e.code == "bundle_missing" => "MANIFEST_BLOB_UNKNOWN",
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

// ---- authentication ----

/// Who is calling.
#[derive(Debug, Clone)]
pub enum Caller {
    /// No credentials, or an anonymous bearer token.
    Anonymous,
    /// An ofc API token's holder.
    User(Principal),
}

fn challenge(parts: &Parts, repository: Option<&str>, error: Option<&str>) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.contains('"'))
        .unwrap_or("localhost");
    let scheme = match parts
        .headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    let mut c = format!("Bearer realm=\"{scheme}://{host}/v2/token\",service=\"{SERVICE}\"");
    if let Some(r) = repository {
        c.push_str(&format!(",scope=\"repository:{r}:pull,push\""));
    }
    if let Some(e) = error {
        c.push_str(&format!(",error=\"{e}\""));
    }
    c
}

fn unauthorized(parts: &Parts, repository: Option<&str>, message: impl Into<String>) -> OciError {
    let mut e = OciError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message);
    e.challenge = Some(challenge(parts, repository, None));
    e
}

/// Checks an ofc API token through the JSON API's own authentication (limiter, revocation,
/// expiry, disabled users).
async fn api_token(st: &OciState, parts: &Parts, token: &str) -> Result<Principal, ApiError> {
    let mut req = axum::http::Request::builder()
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(())
        .map_err(|_| ApiError::unauthorized("invalid_token", "the API token is malformed"))?;
    if let Some(ci) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
        req.extensions_mut().insert(*ci);
    }
    let (mut p, ()) = req.into_parts();
    Auth::from_request_parts(&mut p, &st.app).await.map(|a| a.0)
}

fn basic_password(value: &str) -> Option<String> {
    let b64 = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    Some(text.split_once(':')?.1.to_string())
}

async fn authenticate(st: &OciState, parts: &Parts, repository: Option<&str>) -> OciResult<Caller> {
    let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
        return Ok(Caller::Anonymous);
    };
    let value = value.to_str().unwrap_or("");
    let token = if let Some(p) = basic_password(value) {
        p
    } else if let Some(b) = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
    {
        b.trim().to_string()
    } else {
        return Err(unauthorized(
            parts,
            repository,
            "unsupported authorization scheme; use Basic (password = ofc API token) or Bearer",
        ));
    };
    if token.starts_with(ACCESS_TOKEN_PREFIX) {
        return match db::access_token(st.app.store.db(), &hash_token(&token)).await? {
            Some((None, _)) => Ok(Caller::Anonymous),
            Some((Some(api_hash), push)) => principal_by_hash(st, &api_hash)
                .await?
                .map(|p| Caller::User(narrow_to_bearer(p, push.as_deref().unwrap_or(""))))
                .ok_or_else(|| unauthorized(parts, repository, "the API token is no longer valid")),
            None => Err(unauthorized(
                parts,
                repository,
                "the bearer token is invalid or expired",
            )),
        };
    }
    api_token(st, parts, &token)
        .await
        .map(Caller::User)
        .map_err(|e| {
            if e.status == StatusCode::TOO_MANY_REQUESTS {
                OciError::from(e)
            } else {
                unauthorized(parts, repository, e.message)
            }
        })
}

/// The principal of an API token by its hash, if it is still usable.
async fn principal_by_hash(st: &OciState, hash: &str) -> OciResult<Option<Principal>> {
    let Some((t, user)) = st.app.store.token_by_hash(hash).await? else {
        return Ok(None);
    };
    if t.revoked_at.is_some() || t.expires_at.is_some_and(|e| e <= now_ms()) || user.disabled {
        return Ok(None);
    }
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let scopes = parse_scopes(&list(&t.scopes)).map_err(OciError::internal)?;
    Ok(Some(Principal {
        user_id: user.id,
        user_name: user.name,
        is_admin: user.is_admin,
        token_id: t.id,
        scopes,
        namespaces: list(&t.namespaces),
    }))
}

/// A bearer token's rights: those of its API token, narrowed to what was asked for at
/// `/v2/token` — push only to the namespaces of the repositories asked for with `push`
/// (pull needs no rights), and nothing beyond pushing.
fn narrow_to_bearer(mut p: Principal, push_namespaces: &str) -> Principal {
    let asked: Vec<String> = push_namespaces
        .split(',')
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    p.scopes
        .retain(|s| !asked.is_empty() && matches!(s, Scope::PublishNew | Scope::PublishUpdate));
    // The token's own patterns still apply (`authorize` checks them): a namespace is kept
    // only if one of them covers it.
    p.namespaces = asked
        .into_iter()
        .filter(|n| {
            p.namespaces
                .iter()
                .any(|pat| crate::auth::pattern_covers(pat, n))
        })
        .collect();
    p
}

/// The namespaces of the repositories a `/v2/token` request asks to push to
/// (`scope=repository:NAME:pull,push`, any number of `scope` parameters).
fn push_namespaces_asked(query: Option<&str>) -> String {
    let mut out: Vec<String> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k != "scope" {
            continue;
        }
        for scope in v.split(' ') {
            let mut parts = scope.splitn(3, ':');
            if let (Some("repository"), Some(name), Some(actions)) =
                (parts.next(), parts.next(), parts.next())
                && actions.split(',').any(|a| a == "push" || a == "*")
                && let Some((ns, _)) = name.split_once('/')
            {
                let ns = ns.to_ascii_lowercase();
                if !out.contains(&ns) {
                    out.push(ns);
                }
            }
        }
    }
    out.join(",")
}

/// `GET /v2/token`: trades Basic credentials (password = ofc API token) for a short-lived
/// bearer token; without credentials, an anonymous (pull-only) one.
async fn token(State(st): State<OciState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let r: OciResult<Response> = async {
        let api_hash = match parts.headers.get(header::AUTHORIZATION) {
            None => None,
            Some(v) => {
                let Some(pw) = basic_password(v.to_str().unwrap_or("")) else {
                    return Err(unauthorized(&parts, None, "send Basic credentials"));
                };
                api_token(&st, &parts, &pw)
                    .await
                    .map_err(|e| unauthorized(&parts, None, e.message))?;
                Some(hash_token(&pw))
            }
        };
        let t = crate::auth::generate_token(ACCESS_TOKEN_PREFIX);
        let push = push_namespaces_asked(parts.uri.query());
        db::put_access_token(
            st.app.store.db(),
            &hash_token(&t.0),
            api_hash.as_deref(),
            &push,
            now_ms() + ACCESS_TOKEN_TTL_SECS * 1000,
        )
        .await?;
        let issued = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Ok(axum::Json(json!({
            "token": t.0,
            "access_token": t.0,
            "expires_in": ACCESS_TOKEN_TTL_SECS,
            "issued_at": issued,
        }))
        .into_response())
    }
    .await;
    r.unwrap_or_else(IntoResponse::into_response)
}

/// Requires a user allowed to push to `repository`: a member of its namespace whose token has
/// one of `scopes` for it.
async fn authorize(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    scopes: &[Scope],
) -> OciResult<Principal> {
    let Caller::User(p) = caller else {
        return Err(unauthorized(
            parts,
            Some(repository),
            "authentication required to push",
        ));
    };
    let ns_name = check_repository(repository)?;
    let ns = st
        .app
        .namespace_or_404(ns_name)
        .await
        .map_err(|_| OciError::denied(format!("no namespace `{ns_name}` on this hub")))?;
    let mut last = None;
    for s in scopes {
        match st.app.authorize(p, *s, &ns).await {
            Ok(()) => return Ok(p.clone()),
            Err(e) => last = Some(e),
        }
    }
    Err(last
        .map(OciError::from)
        .unwrap_or_else(|| OciError::denied("denied")))
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

// ---- manifests ----

/// A reference: a tag or a digest.
enum Reference {
    Tag(String),
    Digest(Digest),
}

fn parse_reference(r: &str) -> OciResult<Reference> {
    if r.contains(':') {
        Ok(Reference::Digest(parse_digest(r)?))
    } else if tag_ok(r) {
        Ok(Reference::Tag(r.to_string()))
    } else {
        Err(OciError::new(
            StatusCode::BAD_REQUEST,
            "TAG_INVALID",
            format!("invalid tag `{}`", r.escape_default()),
        ))
    }
}

async fn find_manifest(
    st: &OciState,
    repository: &str,
    reference: &Reference,
) -> OciResult<Option<db::ManifestRow>> {
    let dbh = st.app.store.db();
    match reference {
        Reference::Digest(d) => Ok(db::manifest(dbh, repository, &d.to_string()).await?),
        Reference::Tag(t) => match db::manifest_by_tag(dbh, repository, t).await? {
            // An agent version deleted by an administrator takes its tag with it.
            Some(m)
                if m.artifact_type.as_deref() == Some(media_types::AGENT_ARTIFACT_V1)
                    || m.artifact_type.as_deref() == Some(media_types::AGENT_ENVELOPE_V1) =>
            {
                let live = match st.app.store.agent(repository).await? {
                    Some(a) => st.app.store.version(a.id, t).await?.is_some(),
                    None => false,
                };
                if live {
                    Ok(Some(m))
                } else {
                    db::delete_tag(dbh, repository, t).await?;
                    Ok(None)
                }
            }
            Some(m) => Ok(Some(m)),
            // A version published before its OCI manifest was recorded (or whose recording
            // failed after the publish committed) gets it now.
            None => artifact::repair(&st.app, repository, t).await,
        },
    }
}

async fn get_manifest(
    st: &OciState,
    parts: &Parts,
    repository: &str,
    reference: &str,
) -> OciResult<Response> {
    let r = parse_reference(reference)?;
    let Some(m) = find_manifest(st, repository, &r).await? else {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            format!("manifest `{reference}` is not in `{repository}`"),
        ));
    };
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, hv(&m.media_type));
    h.insert("docker-content-digest", hv(&m.digest));
    h.insert(header::ETAG, hv(&format!("\"{}\"", m.digest)));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(m.content.len()));
    if parts.method == Method::HEAD {
        return Ok((StatusCode::OK, h).into_response());
    }
    Ok((StatusCode::OK, h, m.content).into_response())
}

/// A descriptor in a manifest.
#[derive(Debug, Clone)]
pub struct Descriptor {
    /// Media type.
    pub media_type: String,
    /// Digest.
    pub digest: Digest,
    /// Size.
    pub size: u64,
}

fn descriptor(v: &Value, what: &str) -> OciResult<Descriptor> {
    let bad = |m: &str| OciError::manifest_invalid(format!("{what}: {m}"));
    let media_type = v
        .get("mediaType")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`mediaType` is missing"))?
        .to_string();
    let digest = v
        .get("digest")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`digest` is missing"))?;
    let digest = Digest::parse(digest).map_err(|e| bad(&e.to_string()))?;
    let size = v
        .get("size")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("`size` is missing or not a non-negative integer"))?;
    Ok(Descriptor {
        media_type,
        digest,
        size,
    })
}

/// A parsed manifest: what the API checks and records.
#[derive(Debug)]
pub struct Parsed {
    /// Media type.
    pub media_type: String,
    /// `artifactType`, else the config media type of an image manifest.
    pub artifact_type: Option<String>,
    /// Whether `artifactType` was in the manifest (rather than taken from the config).
    pub artifact_type_declared: bool,
    /// Config of an image manifest.
    pub config: Option<Descriptor>,
    /// Layers of an image manifest.
    pub layers: Vec<Descriptor>,
    /// Children of an index.
    pub manifests: Vec<Descriptor>,
    /// Subject.
    pub subject: Option<Descriptor>,
}

/// Parses and checks a manifest's structure.
pub fn parse_manifest(content_type: Option<&str>, bytes: &[u8]) -> OciResult<Parsed> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| OciError::manifest_invalid(format!("not JSON: {e}")))?;
    if v.get("schemaVersion").and_then(Value::as_i64) != Some(2) {
        return Err(OciError::manifest_invalid("`schemaVersion` must be 2"));
    }
    let body_type = v.get("mediaType").and_then(Value::as_str);
    let ct = content_type.map(|c| c.split(';').next().unwrap_or("").trim());
    let media_type = match (body_type, ct) {
        (Some(b), Some(c)) if !c.is_empty() && b != c => {
            return Err(OciError::manifest_invalid(format!(
                "the body's mediaType `{b}` differs from Content-Type `{c}`"
            )));
        }
        (Some(b), _) => b.to_string(),
        (None, Some(c)) if !c.is_empty() => c.to_string(),
        _ => {
            return Err(OciError::manifest_invalid(
                "no media type: send Content-Type or `mediaType`",
            ));
        }
    };
    let mut p = Parsed {
        media_type: media_type.clone(),
        artifact_type: v
            .get("artifactType")
            .and_then(Value::as_str)
            .map(str::to_string),
        artifact_type_declared: v.get("artifactType").is_some(),
        config: None,
        layers: Vec::new(),
        manifests: Vec::new(),
        subject: v
            .get("subject")
            .map(|s| descriptor(s, "subject"))
            .transpose()?,
    };
    match media_type.as_str() {
        media_types::OCI_IMAGE_MANIFEST | media_types::DOCKER_MANIFEST_V2 => {
            let config = descriptor(
                v.get("config")
                    .ok_or_else(|| OciError::manifest_invalid("`config` is missing"))?,
                "config",
            )?;
            let layers = v
                .get("layers")
                .and_then(Value::as_array)
                .ok_or_else(|| OciError::manifest_invalid("`layers` is missing"))?;
            for (i, l) in layers.iter().enumerate() {
                p.layers.push(descriptor(l, &format!("layers[{i}]"))?);
            }
            if p.artifact_type.is_none() {
                p.artifact_type = Some(config.media_type.clone());
            }
            p.config = Some(config);
        }
        media_types::OCI_IMAGE_INDEX | media_types::DOCKER_MANIFEST_LIST_V2 => {
            let ms = v
                .get("manifests")
                .and_then(Value::as_array)
                .ok_or_else(|| OciError::manifest_invalid("`manifests` is missing"))?;
            for (i, l) in ms.iter().enumerate() {
                p.manifests.push(descriptor(l, &format!("manifests[{i}]"))?);
            }
        }
        other => {
            return Err(OciError::manifest_invalid(format!(
                "unsupported manifest media type `{other}`"
            )));
        }
    }
    Ok(p)
}

impl Parsed {
    /// Whether this is an ofc agent version.
    pub fn is_agent(&self) -> bool {
        self.artifact_type.as_deref() == Some(media_types::AGENT_ARTIFACT_V1)
            || self
                .config
                .as_ref()
                .is_some_and(|c| c.media_type == media_types::AGENT_ENVELOPE_V1)
    }
}

async fn read_limited(body: Body, limit: usize) -> OciResult<Vec<u8>> {
    axum::body::to_bytes(body, limit)
        .await
        .map(|b| b.to_vec())
        .map_err(|_| {
            OciError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "SIZE_INVALID",
                format!("the manifest is larger than {limit} bytes"),
            )
        })
}

async fn put_manifest(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    reference: &str,
    body: Body,
) -> OciResult<Response> {
    // Authenticate before reading the body; scope decided below.
    authorize(
        st,
        parts,
        caller,
        repository,
        &[Scope::PublishNew, Scope::PublishUpdate],
    )
    .await?;
    let r = parse_reference(reference)?;
    if let Some(len) = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > MAX_MANIFEST_BYTES as u64
    {
        return Err(OciError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "SIZE_INVALID",
            format!("the manifest is {len} bytes; the limit is {MAX_MANIFEST_BYTES}"),
        ));
    }
    let bytes = read_limited(body, MAX_MANIFEST_BYTES).await?;
    let digest = Digest::of(&bytes);
    if let Reference::Digest(d) = &r
        && *d != digest
    {
        return Err(OciError::digest_invalid(format!(
            "the manifest's digest is {digest}, not {d}"
        )));
    }
    let ct = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let parsed = parse_manifest(ct, &bytes)?;

    // A namespace holds at most `max_manifests_per_namespace` manifests (a manifest pushed
    // again is no new one).
    let dbh = st.app.store.db();
    let max = st.app.config.max_manifests_per_namespace;
    if db::manifest(dbh, repository, &digest.to_string())
        .await?
        .is_none()
    {
        let ns = check_repository(repository)?;
        let n = db::namespace_manifests(dbh, ns).await?;
        if n >= max {
            return Err(OciError::denied(format!(
                "quota exceeded: namespace `{ns}` holds {n} manifests and \
                 max_manifests_per_namespace is {max}; delete some, or ask the hub's operator"
            )));
        }
    }

    // Everything referenced must be here already: checked now for a prompt answer, and again
    // inside the transaction that records the manifest, after claiming the blobs (see `gc`).
    let claim = db::BlobClaim::new(
        st.app.blobs.clone(),
        parsed
            .config
            .iter()
            .chain(parsed.layers.iter())
            .map(|d| (d.digest, Some(d.size)))
            .collect(),
    );
    if let Some((d, why)) = claim.check_present().await? {
        return Err(crate::store::StoreError::BlobUnavailable { digest: d, why }.into());
    }
    // And in this repository: a manifest cannot adopt another repository's blob by naming its
    // digest (upload it here, or mount it from a repository it belongs to).
    for (d, _) in &claim.needed {
        if !db::blob_in_repository(st.app.store.db(), repository, &d.to_string()).await? {
            return Err(crate::store::StoreError::BlobUnavailable {
                digest: d.to_string(),
                why: format!("is not in `{repository}`: upload it there or mount it"),
            }
            .into());
        }
    }
    for m in &parsed.manifests {
        if db::manifest(st.app.store.db(), repository, &m.digest.to_string())
            .await?
            .is_none()
        {
            return Err(OciError::new(
                StatusCode::BAD_REQUEST,
                "MANIFEST_BLOB_UNKNOWN",
                format!("manifest {} is not in `{repository}`", m.digest),
            )
            .detail(json!({"digest": m.digest.to_string()})));
        }
    }

    let tag = match &r {
        Reference::Tag(t) => Some(t.as_str()),
        Reference::Digest(_) => None,
    };
    if parsed.is_agent() {
        let Caller::User(p) = caller else {
            return Err(unauthorized(
                parts,
                Some(repository),
                "authentication required",
            ));
        };
        artifact::publish_pushed(&st.app, p, repository, tag, &parsed, &bytes, &digest).await?;
    } else {
        let agent_repo = st.app.store.agent(repository).await?.is_some();
        if agent_repo && tag.is_some() {
            return Err(OciError::denied(format!(
                "`{repository}` is an ofc agent: its tags are versions, pushed as ofc agent \
                 artifacts (artifactType {})",
                media_types::AGENT_ARTIFACT_V1
            )));
        }
        let scope = if db::repository_exists(st.app.store.db(), repository).await? {
            Scope::PublishUpdate
        } else {
            Scope::PublishNew
        };
        authorize(st, parts, caller, repository, &[scope]).await?;
        let reference = tag.map_or_else(|| digest.to_string(), str::to_string);
        mirror(&st.app, repository, &reference, &parsed, &bytes).await?;
        db::put_manifest(
            st.app.store.db(),
            &db::NewManifest {
                repository,
                digest: &digest.to_string(),
                media_type: &parsed.media_type,
                artifact_type: parsed.artifact_type.as_deref(),
                subject: parsed
                    .subject
                    .as_ref()
                    .map(|s| s.digest.to_string())
                    .as_deref(),
                content: &bytes,
                tag,
            },
            &claim,
        )
        .await?;
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::LOCATION,
        hv(&format!("/v2/{repository}/manifests/{digest}")),
    );
    h.insert("docker-content-digest", hv(&digest.to_string()));
    if let Some(s) = &parsed.subject {
        h.insert("oci-subject", hv(&s.digest.to_string()));
    }
    Ok((StatusCode::CREATED, h).into_response())
}

/// Mirrors a manifest to the blob store's registry, if it has one (see
/// [`crate::blob::BlobStore::mirror_manifest`]).
pub async fn mirror(
    app: &AppState,
    repository: &str,
    reference: &str,
    parsed: &Parsed,
    bytes: &[u8],
) -> OciResult<()> {
    let blobs = app.blobs.clone();
    let names: Vec<Digest> = parsed
        .config
        .iter()
        .chain(parsed.layers.iter())
        .map(|d| d.digest)
        .collect();
    let (r, rf, mt, b) = (
        repository.to_string(),
        reference.to_string(),
        parsed.media_type.clone(),
        bytes.to_vec(),
    );
    tokio::task::spawn_blocking(move || blobs.mirror_manifest(&r, &rf, &mt, &b, &names))
        .await
        .map_err(OciError::internal)??;
    Ok(())
}

async fn delete_manifest(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    reference: &str,
) -> OciResult<Response> {
    authorize(st, parts, caller, repository, &[Scope::Yank]).await?;
    let r = parse_reference(reference)?;
    let immutable = || {
        OciError::denied(format!(
            "agent versions are immutable; yank `{repository}` versions through the ofc API instead"
        ))
    };
    let dbh = st.app.store.db();
    let found = match &r {
        Reference::Tag(t) => {
            if let Some(a) = st.app.store.agent(repository).await?
                && st.app.store.version(a.id, t).await?.is_some()
            {
                return Err(immutable());
            }
            db::delete_tag(dbh, repository, t).await?
        }
        Reference::Digest(d) => {
            let d = d.to_string();
            match db::manifest(dbh, repository, &d).await? {
                Some(m)
                    if m.artifact_type.as_deref() == Some(media_types::AGENT_ARTIFACT_V1)
                        || m.artifact_type.as_deref() == Some(media_types::AGENT_ENVELOPE_V1) =>
                {
                    return Err(immutable());
                }
                Some(_) => db::delete_manifest(dbh, repository, &d).await?,
                None => false,
            }
        }
    };
    if !found {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            format!("manifest `{reference}` is not in `{repository}`"),
        ));
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn tags_list(st: &OciState, parts: &Parts, repository: &str) -> OciResult<Response> {
    let q = query(parts);
    let n = match q.get("n") {
        Some(n) => Some(
            n.parse::<i64>()
                .ok()
                .filter(|n| (0..=10_000).contains(n))
                .ok_or_else(|| {
                    OciError::new(
                        StatusCode::BAD_REQUEST,
                        "PAGINATION_NUMBER_INVALID",
                        "n must be 0 to 10000",
                    )
                })?,
        ),
        None => None,
    };
    let last = q.get("last").map(String::as_str);
    let dbh = st.app.store.db();
    let tags = db::tags(dbh, repository, last, n.unwrap_or(100_000)).await?;
    if tags.is_empty() && last.is_none() && !db::repository_exists(dbh, repository).await? {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "NAME_UNKNOWN",
            format!("no repository `{repository}`"),
        ));
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let (Some(n), Some(l)) = (n, tags.last())
        && tags.len() as i64 == n
    {
        h.insert(
            header::LINK,
            hv(&format!(
                "</v2/{repository}/tags/list?n={n}&last={l}>; rel=\"next\""
            )),
        );
    }
    let body = json!({"name": repository, "tags": tags});
    Ok((StatusCode::OK, h, body.to_string()).into_response())
}

async fn referrers(
    st: &OciState,
    parts: &Parts,
    repository: &str,
    digest: &str,
) -> OciResult<Response> {
    let d = parse_digest(digest)?;
    let q = query(parts);
    let filter = q.get("artifactType");
    let rows = db::referrers(st.app.store.db(), repository, &d.to_string()).await?;
    let mut out = Vec::new();
    for m in rows {
        if filter.is_some_and(|f| m.artifact_type.as_deref() != Some(f.as_str())) {
            continue;
        }
        let v: Value = serde_json::from_slice(&m.content).unwrap_or(Value::Null);
        let mut desc = json!({
            "mediaType": m.media_type,
            "digest": m.digest,
            "size": m.content.len(),
        });
        if let Some(a) = &m.artifact_type {
            desc["artifactType"] = json!(a);
        }
        if let Some(a) = v.get("annotations") {
            desc["annotations"] = a.clone();
        }
        out.push(desc);
    }
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_types::OCI_IMAGE_INDEX),
    );
    if filter.is_some() {
        h.insert(
            "oci-filters-applied",
            HeaderValue::from_static("artifactType"),
        );
    }
    let body = json!({
        "schemaVersion": 2,
        "mediaType": media_types::OCI_IMAGE_INDEX,
        "manifests": out,
    });
    Ok((StatusCode::OK, h, body.to_string()).into_response())
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
