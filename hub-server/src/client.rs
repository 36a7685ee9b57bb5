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

/// Rewrites a request's client address when it comes through a trusted proxy
/// (`trusted_proxies`): the address `X-Forwarded-For` names (see
/// [`hub_core::proxies::client_addr`]) replaces the proxy's in `ConnectInfo`, so everything
/// after it — the limiter, download counts, logs — sees the client.
pub async fn forwarded_for(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let trusted = &state.core.config.trusted_proxies;
    if !trusted.is_empty()
        && let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied()
    {
        let headers = req.headers().get_all("x-forwarded-for");
        let client = hub_core::proxies::client_addr(
            trusted,
            peer.ip(),
            // A value that is not text stops the walk like any entry that is not an address.
            headers.iter().map(|v| v.to_str().unwrap_or("")),
        );
        if client != peer.ip() {
            req.extensions_mut()
                .insert(ConnectInfo(SocketAddr::new(client, 0)));
        }
    }
    next.run(req).await
}
