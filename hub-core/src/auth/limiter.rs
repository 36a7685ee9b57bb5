//! The limiter on authentication failures: its rules (the counting is shared by every replica,
//! in the database: [`crate::limits`]).
//!
//! Three kinds of keys, one fixed window each (`auth_failure_limit` failures per
//! `auth_failure_window_secs`): failed log-ins per client address (`login:<ip>`), failed log-ins
//! of a user per address (`login:<user>@<ip>`), and invalid API tokens per address
//! (`token:<ip>`); past the limit, 429. There is no key for a user alone, so failures from an
//! attacker's address never lock the user out of their own; the stated cost is that an attacker
//! with many addresses gets `limit × addresses` password guesses per window (passwords are
//! Argon2-hashed, and automation uses tokens). A valid token is never refused by the limiter, so
//! invalid tokens from a shared address (NAT, CI) cannot block the valid ones; token guesses and
//! log-in failures do not count against each other. The windows live in the database, so N
//! replicas of a hub give an attacker the same attempts as one.

use std::net::IpAddr;
use std::time::Duration;

/// The limiter's rules: `limit` failures (and attempts in flight) per key in a fixed `window`.
///
/// A password check is slow (argon2), so an attempt is *reserved* before the check and counts
/// against the limit while it runs: 300 concurrent wrong passwords from one address get
/// `limit` checks, not 300 (checking first and counting after let every one of them through).
#[derive(Debug, Clone, Copy)]
pub struct FailureLimiter {
    /// Failures (and attempts in flight) allowed per window.
    pub limit: u32,
    /// The window.
    pub window: Duration,
}

impl FailureLimiter {
    /// A limiter allowing `limit` failures per `window`.
    pub fn new(limit: u32, window: Duration) -> Self {
        FailureLimiter { limit, window }
    }

    /// The window in milliseconds.
    pub fn window_ms(&self) -> i64 {
        i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX)
    }

    /// Windows that started at or before this (Unix ms) have ended at `now`.
    pub fn expired_before(&self, now: i64) -> i64 {
        now.saturating_sub(self.window_ms())
    }

    /// Whether a window of `failures` and `in_flight` attempts is at the limit.
    pub fn full(&self, failures: i64, in_flight: i64) -> bool {
        failures + in_flight >= i64::from(self.limit)
    }

    /// Whole seconds (at least 1) until the window that started at `start` ends, at `now`.
    pub fn seconds_left(&self, start: i64, now: i64) -> u64 {
        let left = (start.saturating_add(self.window_ms()) - now).max(0);
        (left as u64).div_ceil(1000).max(1)
    }

    /// Key for a client address.
    pub fn ip_key(ip: Option<IpAddr>) -> String {
        ip.map(|i| i.to_string())
            .unwrap_or_else(|| "unknown".into())
    }

    /// Key for invalid API tokens sent from a client address. Separate from logins: token
    /// guesses do not block a password login, and a valid token is never blocked.
    pub fn token_key(ip_key: &str) -> String {
        format!("token:{ip_key}")
    }

    /// Key for failed logins from a client address, whatever the user.
    pub fn login_ip_key(ip_key: &str) -> String {
        format!("login:{ip_key}")
    }

    /// Key for failed logins of one user from one client address. There is no key for a user
    /// alone: failures from an attacker's address must not lock the user out of theirs.
    pub fn login_user_key(user: &str, ip_key: &str) -> String {
        format!("login:{user}@{ip_key}")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::FailureLimiter;

    #[test]
    fn windows_end_and_say_how_long_they_last() {
        let l = FailureLimiter::new(3, Duration::from_secs(600));
        assert_eq!(l.expired_before(1_000_000), 400_000);
        assert_eq!(l.seconds_left(400_001, 1_000_000), 1);
        assert_eq!(l.seconds_left(1_000_000, 1_000_000), 600);
        assert_eq!(l.seconds_left(1_000_000, 1_000_500), 600);
        assert!(l.full(2, 1) && l.full(3, 0) && !l.full(2, 0));
    }
}
