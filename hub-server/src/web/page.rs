//! A page that went wrong, as a page.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hub_core::CoreError;

use super::views;
use crate::error::ApiError;

/// A page that went wrong: the status and what to do, as HTML.
#[derive(Debug)]
pub(crate) struct PageError {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError {
            status: e.status,
            message: e.message,
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let mut r = (self.status, views::error(self.status, &self.message)).into_response();
        // Every 503 is worth retrying: say when (as the JSON API does).
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(crate::error::RETRY_AFTER_SECS),
            );
        }
        r
    }
}

pub(crate) type PageResult = Result<Response, PageError>;

impl From<CoreError> for PageError {
    fn from(e: CoreError) -> Self {
        ApiError::from(e).into()
    }
}
