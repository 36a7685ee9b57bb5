//! The state every handler shares: the hub's core and the request counters.

use std::sync::Arc;

use hub_core::Hub;

use crate::metrics::Metrics;

/// Shared by every handler.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The hub's core: store, blobs, settings, limiter, search, log.
    pub core: Hub,
    /// Request counters for `/metrics`.
    pub metrics: Arc<Metrics>,
}

impl AppState {
    /// The state of a hub's core.
    pub fn new(core: Hub) -> Self {
        AppState {
            core,
            metrics: Arc::default(),
        }
    }
}
