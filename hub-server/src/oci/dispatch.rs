//! The `/v2/` router and the dispatch of a path to its handler.
//!
//! One catch-all route takes every `/v2/…` path, parsed from the end (`…/blobs/uploads/<id>`,
//! `…/manifests/<ref>`, `…/tags/list`, `…/referrers/<digest>`, `…/blobs/<digest>`), because
//! repository names have any number of segments; names are checked against the OCI grammar (no
//! `..`, no percent-encoding) and the first segment is the namespace.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};

use super::access::{Caller, authenticate, token, unauthorized};
use super::blobs::{delete_blob, get_blob};
use super::error::{OciError, OciResult};
use super::manifests::{delete_manifest, get_manifest, put_manifest, referrers, tags_list};
use super::names::check_repository;
use super::state::OciState;
use super::uploads;
use crate::state::AppState;

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
            get_blob(st, &parts, &n, d).await
        }
        Target::Blob(n, d) if m == Method::DELETE => delete_blob(st, &parts, &caller, &n, d).await,
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

#[cfg(test)]
mod tests {
    use super::{Target, target};

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
}
