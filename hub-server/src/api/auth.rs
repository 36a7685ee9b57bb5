//! The `Auth` extractor: the authenticated caller of a JSON API request
//! (`Authorization: Bearer ofc_…`), through the core's one token check
//! ([`hub_core::accounts::principal_for_token`]).

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use hub_core::auth::Principal;
use hub_core::store::Actor;

use crate::client::client_ip;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// The authenticated caller of a request (`Authorization: Bearer ofc_…`).
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl Auth {
    /// The audit actor.
    pub fn actor(&self) -> Actor {
        hub_core::accounts::actor(&self.0)
    }
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::unauthorized(
                ErrorCode::Unauthenticated,
                "this needs an API token: send `Authorization: Bearer ofc_…`",
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .unwrap_or("");
        Ok(Auth(
            hub_core::accounts::principal_for_token(&state.core, client_ip(parts), token).await?,
        ))
    }
}
