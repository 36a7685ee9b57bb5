//! What the HTTP servers of this crate share: a JSON body extractor that names the failing
//! field, and one error type mapped to a status and a `{code, message}` body.

use axum::Json;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// A stable, machine-readable code (`unauthorized`, `invalid_body`).
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
}

/// An error answer: a status and an [`ErrorBody`].
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400: the request is malformed.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401: missing or wrong credentials.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: the request conflicts with the current state.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 422: well-formed, but the content is refused.
    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    /// 500 without internals; the cause is logged here, once.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error",
        )
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                code: self.code.to_owned(),
                message: self.message,
            }),
        )
            .into_response()
    }
}

/// A JSON body whose errors say which field is wrong: 415 without a JSON content type, 400
/// for text that is not JSON, 422 for JSON of the wrong shape (`` `content`: invalid type… ``).
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        check_json_content_type(req.headers())?;
        let bytes = read_body(req, state).await?;
        parse_body(&bytes).map(Self)
    }
}

/// The largest request body a server takes, left in the request's extensions by the server
/// so that a body over it is refused naming it.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// 413 `body_too_large`, naming the limit when known.
pub fn body_too_large(limit: Option<usize>) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        match limit {
            Some(max) => format!("the request body is over this server's limit of {max} bytes"),
            None => "the request body is over this server's limit".to_owned(),
        },
    )
}

/// The body, within the server's limit: a body over it is 413 `body_too_large` (whether
/// or not it said its length), one that cannot be read 400 `unreadable_body`.
async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let limit = req.extensions().get::<BodyLimit>().map(|l| l.0);
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            body_too_large(limit)
        } else {
            ApiError::new(e.status(), "unreadable_body", e.body_text())
        }
    })
}

/// No body: for the routes that take none, a request that sends one anyway is refused (400
/// `unexpected_body`, naming its first field when it is a JSON object) rather than have it
/// ignored. An empty JSON object (`{}`, what many clients send with a POST) says nothing, and
/// is taken as no body.
#[derive(Debug, Clone, Copy)]
pub struct NoBody;

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        if bytes.is_empty() {
            return Ok(Self);
        }
        let what = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(fields)) => match fields.keys().next() {
                None => return Ok(Self),
                Some(first) => format!(
                    "`{}` (and every other field) would be ignored",
                    crate::session::shown(first)
                ),
            },
            _ => format!("this one has {} bytes", bytes.len()),
        };
        Err(ApiError::bad_request(
            "unexpected_body",
            format!("this route takes no request body: {what}"),
        ))
    }
}

/// No query: for the routes that take none, a query string is refused (400 `invalid_query`,
/// naming its first parameter) rather than have it ignored.
#[derive(Debug, Clone, Copy)]
pub struct NoQuery;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        match parts.uri.query().filter(|q| !q.is_empty()) {
            None => Ok(Self),
            Some(query) => {
                let name = query.split('&').next().unwrap_or("");
                let name = name.split('=').next().unwrap_or("");
                let name = url::form_urlencoded::parse(name.as_bytes())
                    .next()
                    .map(|(k, _)| k.into_owned())
                    .unwrap_or_default();
                Err(ApiError::bad_request(
                    "invalid_query",
                    format!(
                        "this route takes no query parameters (got `{}`)",
                        crate::session::shown(&name)
                    ),
                ))
            }
        }
    }
}

/// Parses a body read as bytes, for handlers that must check something (a token) before
/// looking at the body: the same answers as [`ApiJson`].
pub fn json_body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, ApiError> {
    check_json_content_type(headers)?;
    parse_body(bytes)
}

fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| {
            let media = media.trim().to_ascii_lowercase();
            media == "application/json" || media.ends_with("+json")
        });
    if !is_json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "expected a JSON body with `Content-Type: application/json`",
        ));
    }
    Ok(())
}

/// Parses a JSON body, naming the failing field.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::bad_request(
                "invalid_json",
                format!("the body is not valid JSON: {inner}"),
            );
        }
        let path = e.path().to_string();
        let message = if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        };
        ApiError::unprocessable("invalid_body", message)
    })?;
    de.end().map_err(|e| {
        ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}"))
    })?;
    Ok(value)
}

/// Whether a request's `Host` names one of `allowed` (the floor servers' check against DNS
/// rebinding): `name:port`, `[v6]:port` or a bare name, compared without case.
pub(crate) fn host_is_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use index_schema::wire::PostMessageRequest;

    #[test]
    fn names_the_field_and_tells_syntax_from_shape() {
        let err =
            parse_body::<PostMessageRequest>(br#"{"from": "@user", "content": 3}"#).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            err.message().starts_with("`content`: invalid type"),
            "{}",
            err.message()
        );
        let err = parse_body::<PostMessageRequest>(br#"{"from": "@user"}"#).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            err.message().contains("missing field `content`"),
            "{}",
            err.message()
        );
        let err = parse_body::<PostMessageRequest>(b"{\"from\": ").unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        let err = parse_body::<PostMessageRequest>(br#"{"from":"a","content":"b"} x"#).unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
    }
}
