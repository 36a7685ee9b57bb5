//! What the core counts as it happens (publishes, refusals, failed authentications) and
//! whether this replica is the cosigner; the
//! HTTP side adds its request counters and renders them all at `/metrics`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Process-wide counters of the core's events.
#[derive(Debug, Default)]
pub struct Counters {
    publishes: AtomicU64,
    publish_refusals: AtomicU64,
    auth_failures: AtomicU64,
    mirror_tags_repaired: AtomicU64,
    cosigning: AtomicBool,
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
    /// Records a version's tag made again in the upstream registry by the repair pass.
    pub fn mirror_tag_repaired(&self) {
        self.mirror_tags_repaired.fetch_add(1, Ordering::Relaxed);
    }
    /// Versions' tags the repair pass made again in the upstream registry.
    pub fn mirror_tags_repaired(&self) -> u64 {
        self.mirror_tags_repaired.load(Ordering::Relaxed)
    }
    /// Records whether this replica holds the cosigner lease (submits heads to witnesses).
    pub fn set_cosigning(&self, holds: bool) {
        self.cosigning.store(holds, Ordering::Relaxed);
    }
    /// Whether this replica holds the cosigner lease.
    pub fn cosigning(&self) -> bool {
        self.cosigning.load(Ordering::Relaxed)
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
