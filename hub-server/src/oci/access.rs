//! Authentication and authorization of `/v2/`: ofc API tokens as the Basic password or a
//! Bearer, the `/v2/token` endpoint and its scoped bearers, the `WWW-Authenticate` challenge.
//!
//! A `/v2/token` bearer records the namespaces of the repositories the client asked to push to
//! (`scope=repository:NAME:…push…`, migration 0016); used, it carries only `publish-new` and
//! `publish-update` for those namespaces, and only where the API token's own patterns cover
//! them — nothing when only `pull` was asked. Scoping is per namespace, not per repository.

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hub_core::accounts::{principal_for_hash, principal_for_token};
use hub_core::auth::{Principal, Scope, generate_token, hash_token, pattern_covers};
use hub_core::namespaces;
use hub_core::store::now_ms;
use serde_json::json;

use super::error::{OciError, OciResult};
use super::names::check_repository;
use super::state::OciState;
use crate::client::client_ip;
use crate::error::ApiError;

/// Lifetime of a bearer token from `/v2/token`, in seconds.
pub const ACCESS_TOKEN_TTL_SECS: i64 = 300;
/// Prefix of bearer tokens issued by `/v2/token`.
const ACCESS_TOKEN_PREFIX: &str = "ofc_oci_";
/// Prefix of the anonymous (pull-only) bearer tokens `/v2/token` issues: not stored.
const ANONYMOUS_TOKEN_PREFIX: &str = "ofc_ociANON_";
/// The `service` of the bearer challenge.
const SERVICE: &str = "ofc-hub";

/// Who is calling.
#[derive(Debug, Clone)]
pub enum Caller {
    /// No credentials, or an anonymous bearer token.
    Anonymous,
    /// An ofc API token's holder.
    User(Principal),
}

pub(crate) fn challenge(parts: &Parts, repository: Option<&str>, error: Option<&str>) -> String {
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

pub(crate) fn unauthorized(
    parts: &Parts,
    repository: Option<&str>,
    message: impl Into<String>,
) -> OciError {
    let mut e = OciError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message);
    e.challenge = Some(challenge(parts, repository, None));
    e
}

/// Checks an ofc API token as the JSON API does ([`principal_for_token`]: limiter,
/// revocation, expiry, disabled users, use recorded).
pub(crate) async fn api_token(
    st: &OciState,
    parts: &Parts,
    token: &str,
) -> Result<Principal, ApiError> {
    Ok(principal_for_token(&st.app.core, client_ip(parts), token).await?)
}

pub(crate) fn basic_password(value: &str) -> Option<String> {
    let b64 = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    Some(text.split_once(':')?.1.to_string())
}

pub(crate) async fn authenticate(
    st: &OciState,
    parts: &Parts,
    repository: Option<&str>,
) -> OciResult<Caller> {
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
    if token.starts_with(ANONYMOUS_TOKEN_PREFIX) {
        // Grants nothing beyond what needs no token, so it is neither stored nor checked.
        return Ok(Caller::Anonymous);
    }
    if token.starts_with(ACCESS_TOKEN_PREFIX) {
        return match st.app.core.store.access_token(&hash_token(&token)).await? {
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
            // Limited, or the database down: not a refusal of the credentials.
            if e.status == StatusCode::TOO_MANY_REQUESTS || e.status.is_server_error() {
                OciError::from(e)
            } else {
                unauthorized(parts, repository, e.message)
            }
        })
}

/// The principal of an API token by its hash, if it is still usable.
pub(crate) async fn principal_by_hash(st: &OciState, hash: &str) -> OciResult<Option<Principal>> {
    Ok(principal_for_hash(&st.app.core.store, hash).await?.ok())
}

/// A bearer token's rights: those of its API token, narrowed to what was asked for at
/// `/v2/token` — push only to the namespaces of the repositories asked for with `push`
/// (pull needs no rights), and nothing beyond pushing.
pub(crate) fn narrow_to_bearer(mut p: Principal, push_namespaces: &str) -> Principal {
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
        .filter(|n| p.namespaces.iter().any(|pat| pattern_covers(pat, n)))
        .collect();
    p
}

/// The most namespaces one bearer token may be asked to push to.
const MAX_PUSH_NAMESPACES: usize = 16;

/// The namespaces of the repositories a `/v2/token` request asks to push to
/// (`scope=repository:NAME:pull,push`, any number of `scope` parameters); refused past
/// [`MAX_PUSH_NAMESPACES`] (or a name past 64 characters, which no namespace has).
pub(crate) fn push_namespaces_asked(query: Option<&str>) -> OciResult<String> {
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
                if ns.len() > 64 {
                    return Err(OciError::new(
                        StatusCode::BAD_REQUEST,
                        "DENIED",
                        "a scope names a namespace longer than 64 characters",
                    ));
                }
                if !out.contains(&ns) {
                    if out.len() == MAX_PUSH_NAMESPACES {
                        return Err(OciError::new(
                            StatusCode::BAD_REQUEST,
                            "DENIED",
                            format!(
                                "a token may push to at most {MAX_PUSH_NAMESPACES} namespaces; \
                                 ask for fewer repositories at a time"
                            ),
                        ));
                    }
                    out.push(ns);
                }
            }
        }
    }
    Ok(out.join(","))
}

/// `GET /v2/token`: trades Basic credentials (password = ofc API token) for a short-lived
/// bearer token; without credentials, an anonymous (pull-only) one.
pub(crate) async fn token(State(st): State<OciState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let r: OciResult<Response> = async {
        let api_hash = match parts.headers.get(header::AUTHORIZATION) {
            None => None,
            Some(v) => {
                let Some(pw) = basic_password(v.to_str().unwrap_or("")) else {
                    return Err(unauthorized(&parts, None, "send Basic credentials"));
                };
                api_token(&st, &parts, &pw).await.map_err(|e| {
                    if e.status.is_server_error() {
                        OciError::from(e)
                    } else {
                        unauthorized(&parts, None, e.message)
                    }
                })?;
                Some(hash_token(&pw))
            }
        };
        let Some(api_hash) = api_hash else {
            // Anonymous: pull only, which needs no token; what is handed out is a token of
            // that kind, never stored (anonymous calls used to add a row each, scopes and all).
            let t = generate_token(ANONYMOUS_TOKEN_PREFIX);
            return Ok(token_answer(t.expose()));
        };
        let api_hash = Some(api_hash);
        let t = generate_token(ACCESS_TOKEN_PREFIX);
        let push = push_namespaces_asked(parts.uri.query())?;
        st.app
            .core
            .store
            .put_access_token(
                &hash_token(t.expose()),
                api_hash.as_deref(),
                &push,
                now_ms() + ACCESS_TOKEN_TTL_SECS * 1000,
            )
            .await?;
        Ok(token_answer(t.expose()))
    }
    .await;
    r.unwrap_or_else(IntoResponse::into_response)
}

/// The token endpoint's answer for `token`.
fn token_answer(token: &str) -> Response {
    let issued = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    axum::Json(json!({
        "token": token,
        "access_token": token,
        "expires_in": ACCESS_TOKEN_TTL_SECS,
        "issued_at": issued,
    }))
    .into_response()
}

/// Requires a user allowed to push to `repository`: a member of its namespace whose token has
/// one of `scopes` for it.
pub(crate) async fn authorize(
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
    let ns = namespaces::find(&st.app.core, ns_name)
        .await
        .map_err(|_| OciError::denied(format!("no namespace `{ns_name}` on this hub")))?;
    let mut last = None;
    for s in scopes {
        match namespaces::authorize(&st.app.core, p, *s, &ns).await {
            Ok(()) => return Ok(p.clone()),
            Err(e) => last = Some(e),
        }
    }
    Err(last
        .map(OciError::from)
        .unwrap_or_else(|| OciError::denied("denied")))
}
