//! The `Auth` extractor: the authenticated caller of a JSON API request
//! (`Authorization: Bearer ofc_…`), through [`crate::auth::principal_for_token`].

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;

use crate::auth::Principal;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::store::Actor;

/// The authenticated caller of a request (`Authorization: Bearer ofc_…`).
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl Auth {
    /// The audit actor.
    pub fn actor(&self) -> Actor {
        Actor {
            user_id: Some(self.0.user_id),
            user_name: self.0.user_name.clone(),
            token_id: Some(self.0.token_id),
        }
    }
}

fn client_ip(parts: &Parts) -> Option<IpAddr> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
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
        crate::auth::principal_for_token(state, client_ip(parts), token)
            .await
            .map(Auth)
    }
}
