//! The state every handler shares: the hub's core, the request counters and the OIDC
//! issuers' keys (trusted publishing).

use std::sync::Arc;

use hub_core::Hub;
use hub_core::trusted::{Jwks, UrlRules};

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
    /// The state of a hub's core; an HTTP client that cannot be built (no TLS roots) is an
    /// error.
    pub fn new(core: Hub) -> anyhow::Result<Self> {
        let fetch = HttpFetch::new(core.config.outbound_allow_private)?;
        let oidc = Jwks::new(Arc::new(fetch), UrlRules::of(&core.config));
        Ok(AppState {
            core,
            metrics: Arc::default(),
            oidc: Arc::new(oidc),
        })
    }
}
