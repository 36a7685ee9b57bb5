//! Who is calling: the client's address, which the failure limiter keys on.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use hub_core::auth::FailureLimiter;

/// The client address of a request, as the limiter keys it.
pub fn ip_of(ci: Option<ConnectInfo<SocketAddr>>) -> String {
    FailureLimiter::ip_key(ci.map(|c| c.0.ip()))
}

/// The client address of a request's parts.
pub fn client_ip(parts: &Parts) -> Option<IpAddr> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}
