//! The API error: a status, a stable machine `code` and a human `message`, always sent as JSON;
//! and the one mapping of the core's errors ([`CoreError`]) to it.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hub_core::publish::PublishError;
use hub_core::store::StoreError;
use hub_core::{CoreError, Kind};
pub use index_schema::hub_api::{ErrorBody, ErrorCode};

/// An error an HTTP handler returns.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// See [`ErrorBody::code`].
    pub code: ErrorCode,
    /// See [`ErrorBody::message`].
    pub message: String,
    /// See [`ErrorBody::removed`].
    pub removed: Option<Box<index_schema::hub_api::Removed>>,
}

/// The `Retry-After` of a 503 (the database unavailable, the hub not ready, a request that
/// timed out), in seconds.
pub const RETRY_AFTER_SECS: &str = "2";

/// What handlers return.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with any status.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            removed: None,
        }
    }
    /// 400.
    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    /// 401.
    pub fn unauthorized(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message)
    }
    /// 404.
    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }
    /// 409.
    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    /// 413.
    pub fn too_large(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, code, message)
    }
    /// 500, logged once here; the client sees no internals.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        ApiError::from(CoreError::internal(err))
    }
}

/// The status of each kind of core error.
pub fn status_of(kind: Kind) -> StatusCode {
    match kind {
        Kind::Invalid => StatusCode::BAD_REQUEST,
        Kind::Unauthenticated => StatusCode::UNAUTHORIZED,
        Kind::Forbidden => StatusCode::FORBIDDEN,
        Kind::NotFound => StatusCode::NOT_FOUND,
        Kind::Conflict => StatusCode::CONFLICT,
        Kind::Gone => StatusCode::GONE,
        Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Kind::TooMany => StatusCode::TOO_MANY_REQUESTS,
        Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        ApiError {
            removed: e.removed,
            ..ApiError::new(status_of(e.kind), e.code, e.message)
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        CoreError::from(e).into()
    }
}

/// The JSON API's answer to a refused publish: the service's status, code and message.
impl From<PublishError> for ApiError {
    fn from(e: PublishError) -> Self {
        CoreError::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.code,
            message: self.message,
            removed: self.removed.map(|r| *r),
        };
        let mut r = (self.status, Json(body)).into_response();
        // Every 503 is worth retrying: say when.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        r
    }
}

/// The `code` used when a framework rejection (bad path, bad JSON, body too large, unknown
/// route) is turned into an [`ErrorBody`].
pub fn code_for_status(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::BAD_REQUEST => ErrorCode::BadRequest,
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::NOT_ACCEPTABLE => ErrorCode::NotAcceptable,
        StatusCode::CONFLICT => ErrorCode::Conflict,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::UNPROCESSABLE_ENTITY => ErrorCode::InvalidBody,
        StatusCode::TOO_MANY_REQUESTS => ErrorCode::TooManyRequests,
        s if s.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::Error,
    }
}
