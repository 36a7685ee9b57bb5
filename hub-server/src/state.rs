//! The state every handler shares: the hub's core, the request counters and the OIDC
//! issuers' keys (trusted publishing).

use std::sync::Arc;

use hub_core::Hub;
use hub_core::trusted::Jwks;

use crate::metrics::Metrics;
use crate::oidc::HttpFetch;

/// Shared by every handler.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The hub's core: store, blobs, settings, limiter, search, log.
    pub core: Hub,
    /// Request counters for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Trusted publishing: the OIDC issuers' keys, cached.
    pub oidc: Arc<Jwks>,
}

impl AppState {
    /// The state of a hub's core.
    pub fn new(core: Hub) -> Self {
        let oidc = Jwks::new(
            Arc::new(HttpFetch::new()),
            core.config.oidc_allow_http_loopback,
        );
        AppState {
            core,
            metrics: Arc::default(),
            oidc: Arc::new(oidc),
        }
    }
}
