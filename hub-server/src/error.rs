//! The API error: a status, a stable machine `code` and a human `message`, always sent as JSON.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct ErrorBody {
    /// Stable, machine-readable (`version_exists`, `forbidden_scope`, …).
    pub code: String,
    /// For people: what went wrong and what to do.
    pub message: String,
}

/// An error an HTTP handler returns.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// See [`ErrorBody::code`].
    pub code: &'static str,
    /// See [`ErrorBody::message`].
    pub message: String,
}

/// What handlers return.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with any status.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
    /// 400.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    /// 401.
    pub fn unauthorized(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message)
    }
    /// 403.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }
    /// 404.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }
    /// 409.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    /// 413.
    pub fn too_large(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, code, message)
    }
    /// 500, logged once here; the client sees no internals.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal server error",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.code.to_string(),
            message: self.message,
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::Conflict(m) => ApiError::conflict("conflict", m),
            crate::store::StoreError::NotFound(m) => ApiError::not_found("not_found", m),
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
pub fn code_for_status(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_ACCEPTABLE => "not_acceptable",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "invalid_body",
        StatusCode::TOO_MANY_REQUESTS => "too_many_requests",
        s if s.is_server_error() => "internal",
        _ => "error",
    }
}

/// The 403 for a refusal.
pub fn denied_error(d: crate::auth::Denied) -> ApiError {
    use crate::auth::Denied;
    match d {
        Denied::Scope(s) => ApiError::forbidden(
            "forbidden_scope",
            format!("this token lacks the `{}` scope", s.as_str()),
        ),
        Denied::Namespace(n) => ApiError::forbidden(
            "forbidden_namespace",
            format!("this token is not valid for namespace `{n}`"),
        ),
        Denied::NotMember(n) => ApiError::forbidden(
            "not_member",
            format!("you are not a member of namespace `{n}`"),
        ),
        Denied::Role(r, s) => ApiError::forbidden(
            "forbidden_role",
            format!(
                "your role `{}` does not allow `{}` in this namespace",
                r.as_str(),
                s.as_str()
            ),
        ),
        Denied::AdminOnly => {
            ApiError::forbidden("admin_only", "only a hub administrator may do this")
        }
    }
}

/// 429 for a blocked client.
pub fn too_many(secs: u64) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_auth_failures",
        format!("too many failed authentications from this client; retry in {secs} s"),
    )
}
