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

/// For a route that takes no body: a body of one byte or more is 400 `invalid_body` (the
/// route would have ignored it). Never reads more than that byte.
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
        // A limit of 0 bytes: any byte of body fails the read.
        if axum::body::to_bytes(req.into_body(), 0).await.is_ok() {
            return Ok(NoBody);
        }
        let size = length
            .map(|n| format!(" (this one had {n} bytes)"))
            .unwrap_or_default();
        Err(ApiError::bad_request(
            ErrorCode::InvalidBody,
            format!(
                "a {method} to this route takes no request body and the hub would not read \
                 one: send none{size}"
            ),
        ))
    }
}
