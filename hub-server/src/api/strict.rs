//! Extractors that refuse what a route would otherwise ignore: a query parameter it does not
//! take ([`Params`], [`NoQuery`]: 400 `invalid_parameter` naming it, as `GET /api/v1/search`
//! answers) and a body where it takes none ([`NoBody`]: 400 `invalid_body`). A client that
//! sends `?dry_run=true` or `{"reason": …}` to a destructive route must learn that the hub did
//! not read it, not find the version gone.

use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};

/// The largest body a route of the JSON API reads (the publish route's is set by
/// `max_inline_bundle_bytes`): 2 MiB.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The query string decoded as `T` (whose fields are the route's parameters, with
/// `deny_unknown_fields`); a parameter `T` does not take, or a malformed one, is 400
/// `invalid_parameter` with the decoder's message, which names it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(q)) => Ok(Params(q)),
            Err(e) => Err(ApiError::bad_request(
                ErrorCode::InvalidParameter,
                e.body_text(),
            )),
        }
    }
}

/// No query parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Nothing {}

/// For a route that takes no query parameters: any is 400 `invalid_parameter` naming it (an
/// empty query string, `…?`, is none).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoQuery;

impl<S: Send + Sync> FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Params::<Nothing>::from_request_parts(parts, state)
            .await
            .map(|_| NoQuery)
            .map_err(|e| ApiError {
                message: format!("this route takes no query parameters: {}", e.message),
                ..e
            })
    }
}

/// The most of a refused body read, to name its first field.
const BODY_LOOK_BYTES: usize = 16 * 1024;

/// For a route that takes no body: a body is 400 `invalid_body` (the route would have ignored
/// it), naming its first field when it is a JSON object. An empty JSON object (`{}`, what many
/// clients send with a POST or DELETE) says nothing, and is taken as no body, as `ofc serve`
/// takes it. Reads at most 16 KiB of a body.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBody;

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let length = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let method = req.method().clone();
        let what = match axum::body::to_bytes(req.into_body(), BODY_LOOK_BYTES).await {
            Ok(b) if b.is_empty() => return Ok(NoBody),
            Ok(b) => match serde_json::from_slice::<serde_json::Value>(&b) {
                Ok(serde_json::Value::Object(fields)) => match fields.keys().next() {
                    None => return Ok(NoBody),
                    Some(first) => format!(
                        "`{}` (and every other field) would be ignored",
                        first.chars().take(64).collect::<String>().escape_debug()
                    ),
                },
                _ => format!("this one has {} bytes", b.len()),
            },
            Err(_) => match length {
                Some(n) => format!("this one has {n} bytes"),
                None => format!("this one has more than {BODY_LOOK_BYTES} bytes"),
            },
        };
        Err(ApiError::bad_request(
            ErrorCode::InvalidBody,
            format!("a {method} to this route takes no request body: {what}; send none"),
        ))
    }
}
