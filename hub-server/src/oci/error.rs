//! The OCI error envelope: `{"errors":[{"code","message","detail"}]}`, and what the core's
//! errors become in it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::blob::BlobError;
use hub_core::oci::ManifestInvalid;
use hub_core::store::StoreError;
use hub_core::{CoreError, Kind};
use serde_json::{Value, json};

use crate::error::{ApiError, ErrorCode};

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
    pub(crate) fn detail(mut self, d: Value) -> Self {
        self.detail = Some(d);
        self
    }
    pub(crate) fn header(mut self, name: header::HeaderName, value: String) -> Self {
        self.headers.push((name, value));
        self
    }
    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        let _ = CoreError::internal(&e);
        OciError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "UNKNOWN",
            "internal server error",
        )
    }
    pub(crate) fn name_invalid(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::BAD_REQUEST, "NAME_INVALID", m)
    }
    pub(crate) fn digest_invalid(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::BAD_REQUEST, "DIGEST_INVALID", m)
    }
    pub(crate) fn manifest_invalid(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::BAD_REQUEST, "MANIFEST_INVALID", m)
    }
    pub(crate) fn denied(m: impl Into<String>) -> Self {
        OciError::new(StatusCode::FORBIDDEN, "DENIED", m)
    }
    pub(crate) fn unsupported() -> Self {
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

impl From<StoreError> for OciError {
    fn from(e: StoreError) -> Self {
        match e {
            // A commit found a blob it references gone, or being collected (see `hub_core::gc`).
            StoreError::BlobUnavailable { digest, why } => OciError::new(
                StatusCode::BAD_REQUEST,
                "MANIFEST_BLOB_UNKNOWN",
                format!("blob {digest} {why}"),
            )
            .detail(json!({ "digest": digest })),
            e if e.is_unavailable() => CoreError::from(e).into(),
            e @ StoreError::BlobBackend(_) => CoreError::from(e).into(),
            e => OciError::internal(e),
        }
    }
}

impl From<BlobError> for OciError {
    fn from(e: BlobError) -> Self {
        CoreError::from(e).into()
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
            _ if e.code == ErrorCode::BundleMissing => "MANIFEST_BLOB_UNKNOWN",
            _ => "MANIFEST_INVALID",
        };
        let err = OciError::new(e.status, code, format!("{}: {}", e.code, e.message))
            .detail(json!({"ofc_code": e.code}));
        // Every 503 is worth retrying: say when (as the JSON API does).
        if e.status == StatusCode::SERVICE_UNAVAILABLE {
            err.header(
                header::RETRY_AFTER,
                crate::error::RETRY_AFTER_SECS.to_string(),
            )
        } else {
            err
        }
    }
}

/// A core refusal in the OCI envelope: as the JSON API's error (see `From<ApiError>`), but a
/// failure of the hub is the registry's plain `UNKNOWN` (the core logged it already).
impl From<CoreError> for OciError {
    fn from(e: CoreError) -> Self {
        if e.kind == Kind::Unavailable {
            return OciError::new(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", e.message)
                .detail(json!({"ofc_code": e.code}))
                .header(
                    header::RETRY_AFTER,
                    crate::error::RETRY_AFTER_SECS.to_owned(),
                );
        }
        if e.kind == Kind::Internal && e.code != ErrorCode::BlobsRefused {
            OciError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "UNKNOWN",
                "internal server error",
            )
        } else {
            ApiError::from(e).into()
        }
    }
}

impl From<ManifestInvalid> for OciError {
    fn from(e: ManifestInvalid) -> Self {
        OciError::manifest_invalid(e.0)
    }
}

#[cfg(test)]
mod tests {
    use hub_core::blob::BlobError;
    use hub_core::{CoreError, Kind};

    use super::OciError;
    use crate::error::ErrorCode;

    /// A refusal of the upstream registry keeps its code and message in the OCI envelope (a
    /// 500 without `Retry-After`); any other failure of the hub stays a bare `UNKNOWN`.
    #[test]
    fn a_refused_blob_names_itself_and_other_failures_say_nothing() {
        let refused = OciError::from(BlobError::Refused("405 Method Not Allowed".into()));
        assert_eq!((refused.status.as_u16(), refused.code), (500, "UNKNOWN"));
        assert_eq!(
            refused.detail.as_ref().and_then(|d| d["ofc_code"].as_str()),
            Some("blobs_refused")
        );
        assert!(
            refused.message.contains("retrying will not help"),
            "{}",
            refused.message
        );
        assert!(refused.headers.is_empty(), "{:?}", refused.headers);
        let other = OciError::from(CoreError::new(
            Kind::Internal,
            ErrorCode::Internal,
            "secret",
        ));
        assert_eq!(other.message, "internal server error");
        let gone = OciError::from(BlobError::Upstream("connection refused".into()));
        assert_eq!(gone.status.as_u16(), 503);
        assert!(!gone.headers.is_empty(), "no Retry-After on a 503");
    }
}
