//! The failure limiter as the hub counts it: the rules of [`crate::auth::FailureLimiter`] over
//! windows kept in the database (`auth_failures`, `store/replicas.rs`), so every replica sharing
//! the database counts the same failures: N replicas give an attacker the attempts of one.
//!
//! A reservation (before a slow password check) is one transaction over every key of the
//! attempt (the keys' rows are locked by the upsert on PostgreSQL, SQLite has one writer), so
//! concurrent attempts from several replicas are counted one after the other. Each attempt in
//! flight is a row with the time it was reserved (`auth_in_flight`): an attempt whose replica
//! dies before it settles stops counting after [`IN_FLIGHT_BOUND`], longer than any check
//! takes, so a killed replica cannot lock a client out for the rest of its window.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::auth::FailureLimiter;
use crate::error::{CoreError, CoreResult};
use crate::store::{Store, now_ms};

/// Every this many limiter writes, the windows that ended are deleted.
const SWEEP_EVERY: u64 = 256;

/// How long a reserved attempt counts as in flight at most. A check (a password hash, a token
/// look-up) takes well under a second, and a request is cut at `request_timeout_secs` (30 by
/// default), dropping its reservation: an older one was left by a replica that died before it
/// settled.
pub const IN_FLIGHT_BOUND: Duration = Duration::from_secs(30);

/// The shared failure limiter of a hub.
#[derive(Debug)]
pub struct Limiter {
    rules: FailureLimiter,
    store: Store,
    writes: AtomicU64,
    in_flight_ms: i64,
}

/// An attempt reserved against one or more keys: [`Reservation::failed`] counts a failure of
/// every key; [`Reservation::succeeded`] (or dropping it) gives its place back.
#[derive(Debug)]
#[must_use = "an attempt not settled is released as a success"]
pub struct Reservation {
    limiter: Arc<Limiter>,
    keys: Vec<String>,
    /// Its rows in `auth_in_flight`, one per key.
    ids: Vec<i64>,
}

impl Reservation {
    /// The attempt failed: a failure is counted for each of its keys.
    pub async fn failed(mut self) -> CoreResult<()> {
        let (ids, keys) = self.take();
        self.limiter.settle(&ids, &keys, true).await
    }

    /// The attempt succeeded: it no longer counts.
    pub async fn succeeded(mut self) -> CoreResult<()> {
        let (ids, keys) = self.take();
        self.limiter.settle(&ids, &keys, false).await
    }

    fn take(&mut self) -> (Vec<i64>, Vec<String>) {
        (
            std::mem::take(&mut self.ids),
            std::mem::take(&mut self.keys),
        )
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.ids.is_empty() {
            return;
        }
        // Dropped unsettled (the request was cancelled): released in the background.
        let (ids, keys) = self.take();
        let limiter = self.limiter.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = limiter.settle(&ids, &keys, false).await {
                    tracing::warn!(error = %e, "cannot release an attempt in the failure limiter");
                }
            });
        }
    }
}

impl Limiter {
    /// The limiter of `rules` over the windows in `store`.
    pub fn new(rules: FailureLimiter, store: Store) -> Self {
        Limiter {
            rules,
            store,
            writes: AtomicU64::new(0),
            in_flight_ms: i64::try_from(IN_FLIGHT_BOUND.as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// This limiter with another bound on attempts in flight than [`IN_FLIGHT_BOUND`] (tests).
    pub fn with_in_flight_bound(mut self, bound: Duration) -> Self {
        self.in_flight_ms = i64::try_from(bound.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// Attempts reserved at or before this (Unix ms) no longer count as in flight.
    fn stale_before(&self, now: i64) -> i64 {
        now.saturating_sub(self.in_flight_ms)
    }

    /// The rules.
    pub fn rules(&self) -> FailureLimiter {
        self.rules
    }

    async fn sweep(&self, now: i64) {
        if self.writes.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1
            && let Err(e) = self
                .store
                .limiter_forget(self.rules.expired_before(now), self.stale_before(now))
                .await
        {
            tracing::warn!(error = %e, "cannot delete the failure limiter's ended windows");
        }
    }

    /// Reserves an attempt against every key at once, or refuses it (429, with the seconds
    /// until the first blocking key's window ends) when any key has reached the limit counting
    /// the attempts in flight.
    pub async fn reserve(self: &Arc<Self>, keys: &[&str]) -> CoreResult<Reservation> {
        let now = now_ms();
        self.sweep(now).await;
        let r = self
            .store
            .limiter_reserve(
                keys,
                now,
                self.rules.expired_before(now),
                self.stale_before(now),
                i64::from(self.rules.limit),
            )
            .await?;
        match r {
            Ok(ids) => Ok(Reservation {
                limiter: self.clone(),
                keys: keys.iter().map(|k| (*k).to_string()).collect(),
                ids,
            }),
            Err(w) => Err(CoreError::too_many(self.rules.seconds_left(w.start, now))),
        }
    }

    async fn settle(&self, ids: &[i64], keys: &[String], failed: bool) -> CoreResult<()> {
        let now = now_ms();
        self.store
            .limiter_settle(ids, keys, failed, now, self.rules.expired_before(now))
            .await?;
        Ok(())
    }

    /// Whether `key` is blocked now (failures and attempts in flight at the limit); the
    /// remaining seconds if so.
    pub async fn blocked(&self, key: &str) -> CoreResult<Option<u64>> {
        let now = now_ms();
        let w = self
            .store
            .limiter_window(key, self.rules.expired_before(now), self.stale_before(now))
            .await?;
        Ok(w.filter(|w| self.rules.full(w.failures, w.in_flight))
            .map(|w| self.rules.seconds_left(w.start, now)))
    }

    /// Records a failure for `key` (a failure that needed no reservation: an invalid token is
    /// found invalid at once).
    pub async fn fail(&self, key: &str) -> CoreResult<()> {
        let now = now_ms();
        self.sweep(now).await;
        self.store
            .limiter_fail(key, now, self.rules.expired_before(now))
            .await?;
        Ok(())
    }
}
