//! The API error: a status, a stable machine `code` and a human `message`, always sent as JSON.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
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
}

/// What handlers return.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with any status.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
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
    /// 403.
    pub fn forbidden(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
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
        tracing::error!(error = %err, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "internal server error",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.code,
            message: self.message,
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::Conflict(m) => ApiError::conflict(ErrorCode::Conflict, m),
            crate::store::StoreError::NotFound(m) => ApiError::not_found(ErrorCode::NotFound, m),
            crate::store::StoreError::Quota(m) => {
                ApiError::forbidden(ErrorCode::QuotaExceeded, format!("quota exceeded: {m}"))
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<crate::blob::BlobError> for ApiError {
    fn from(e: crate::blob::BlobError) -> Self {
        ApiError::internal(e)
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

/// The 403 for a refusal.
pub fn denied_error(d: crate::auth::Denied) -> ApiError {
    use crate::auth::Denied;
    match d {
        Denied::Scope(s) => ApiError::forbidden(
            ErrorCode::ForbiddenScope,
            format!("this token lacks the `{}` scope", s.as_str()),
        ),
        Denied::Namespace(n) => ApiError::forbidden(
            ErrorCode::ForbiddenNamespace,
            format!("this token is not valid for namespace `{n}`"),
        ),
        Denied::NotMember(n) => ApiError::forbidden(
            ErrorCode::NotMember,
            format!("you are not a member of namespace `{n}`"),
        ),
        Denied::Role(r, s) => ApiError::forbidden(
            ErrorCode::ForbiddenRole,
            format!(
                "your role `{}` does not allow `{}` in this namespace",
                r.as_str(),
                s.as_str()
            ),
        ),
        Denied::AdminOnly => {
            ApiError::forbidden(ErrorCode::AdminOnly, "only a hub administrator may do this")
        }
    }
}

/// 429 for a blocked client.
pub fn too_many(secs: u64) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::TooManyAuthFailures,
        format!("too many failed authentications from this client; retry in {secs} s"),
    )
}
