//! What the core counts as it happens (publishes, refusals, failed authentications); the
//! HTTP side adds its request counters and renders them all at `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Process-wide counters of the core's events.
#[derive(Debug, Default)]
pub struct Counters {
    publishes: AtomicU64,
    publish_refusals: AtomicU64,
    auth_failures: AtomicU64,
}

impl Counters {
    /// Records a stored publish.
    pub fn publish(&self) {
        self.publishes.fetch_add(1, Ordering::Relaxed);
    }
    /// Records a refused publish.
    pub fn publish_refused(&self) {
        self.publish_refusals.fetch_add(1, Ordering::Relaxed);
    }
    /// Records a failed authentication.
    pub fn auth_failure(&self) {
        self.auth_failures.fetch_add(1, Ordering::Relaxed);
    }
    /// Versions published.
    pub fn publishes(&self) -> u64 {
        self.publishes.load(Ordering::Relaxed)
    }
    /// Publishes refused.
    pub fn publish_refusals(&self) -> u64 {
        self.publish_refusals.load(Ordering::Relaxed)
    }
    /// Failed authentications.
    pub fn auth_failures(&self) -> u64 {
        self.auth_failures.load(Ordering::Relaxed)
    }
}
