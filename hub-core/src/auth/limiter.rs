//! The limiter on authentication failures.
//!
//! Three kinds of keys, one fixed window each (`auth_failure_limit` failures per
//! `auth_failure_window_secs`): failed log-ins per client address (`login:<ip>`), failed log-ins
//! of a user per address (`login:<user>@<ip>`), and invalid API tokens per address
//! (`token:<ip>`); past the limit, 429. There is no key for a user alone, so failures from an
//! attacker's address never lock the user out of their own; the stated cost is that an attacker
//! with many addresses gets `limit × addresses` password guesses per window (passwords are
//! Argon2-hashed, and automation uses tokens). A valid token is never refused by the limiter, so
//! invalid tokens from a shared address (NAT, CI) cannot block the valid ones; token guesses and
//! log-in failures do not count against each other. The limiter is in memory, per replica.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Counts authentication failures per key (client address, or address + user name) in a fixed
/// window and refuses further attempts once the limit is reached. In memory: each replica
/// limits on its own.
///
/// A password check is slow (argon2), so an attempt is *reserved* before the check
/// ([`FailureLimiter::reserve`]) and counts against the limit while it runs: 300 concurrent
/// wrong passwords from one address get `limit` checks, not 300 (checking `blocked` first and
/// counting after let every one of them through).
#[derive(Debug)]
pub struct FailureLimiter {
    limit: u32,
    window: Duration,
    entries: Mutex<HashMap<String, LimiterEntry>>,
}

#[derive(Debug, Clone, Copy)]
struct LimiterEntry {
    /// Start of the window.
    start: Instant,
    /// Failures in the window.
    failures: u32,
    /// Attempts reserved and not yet settled.
    in_flight: u32,
}

/// An attempt reserved against one or more keys of a [`FailureLimiter`]: dropped, it is
/// released (a success); [`Attempt::failed`] turns it into a failure of every key.
#[derive(Debug)]
#[must_use = "an attempt not settled is released as a success"]
pub struct Attempt<'a> {
    limiter: &'a FailureLimiter,
    keys: Vec<String>,
}

impl Attempt<'_> {
    /// The attempt failed: a failure is counted for each of its keys.
    pub fn failed(mut self) {
        let keys = std::mem::take(&mut self.keys);
        self.limiter.settle(&keys, true);
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if !self.keys.is_empty() {
            let keys = std::mem::take(&mut self.keys);
            self.limiter.settle(&keys, false);
        }
    }
}

impl FailureLimiter {
    /// A limiter allowing `limit` failures per `window`.
    pub fn new(limit: u32, window: Duration) -> Self {
        FailureLimiter {
            limit,
            window,
            entries: Mutex::new(HashMap::new()),
        }
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LimiterEntry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entry of `key` as of `now`, a new window when the old one has passed (attempts in
    /// flight carry over: they are still running).
    fn current(&self, m: &HashMap<String, LimiterEntry>, key: &str, now: Instant) -> LimiterEntry {
        match m.get(key) {
            Some(e) if now.duration_since(e.start) < self.window => *e,
            Some(e) => LimiterEntry {
                start: now,
                failures: 0,
                in_flight: e.in_flight,
            },
            None => LimiterEntry {
                start: now,
                failures: 0,
                in_flight: 0,
            },
        }
    }

    fn seconds_left(&self, e: &LimiterEntry, now: Instant) -> u64 {
        self.window
            .saturating_sub(now.duration_since(e.start))
            .as_secs()
            .max(1)
    }

    /// Whether `key` is blocked now (failures and attempts in flight at the limit); the
    /// remaining seconds if so.
    pub fn blocked(&self, key: &str) -> Option<u64> {
        let m = self.lock();
        let now = Instant::now();
        let e = self.current(&m, key, now);
        (e.failures + e.in_flight >= self.limit).then(|| self.seconds_left(&e, now))
    }

    /// Reserves an attempt against every key at once, or refuses it (the seconds until the
    /// first blocking key's window ends) when any key has reached its limit counting the
    /// attempts in flight.
    pub fn reserve(&self, keys: &[&str]) -> Result<Attempt<'_>, u64> {
        let mut m = self.lock();
        let now = Instant::now();
        self.forget_expired(&mut m, now);
        let mut entries = Vec::with_capacity(keys.len());
        for k in keys {
            let e = self.current(&m, k, now);
            if e.failures + e.in_flight >= self.limit {
                return Err(self.seconds_left(&e, now));
            }
            entries.push(e);
        }
        for (k, mut e) in keys.iter().zip(entries) {
            e.in_flight += 1;
            m.insert((*k).to_string(), e);
        }
        Ok(Attempt {
            limiter: self,
            keys: keys.iter().map(|k| (*k).to_string()).collect(),
        })
    }

    fn settle(&self, keys: &[String], failed: bool) {
        let mut m = self.lock();
        let now = Instant::now();
        for k in keys {
            let mut e = self.current(&m, k, now);
            e.in_flight = e.in_flight.saturating_sub(1);
            if failed {
                e.failures = e.failures.saturating_add(1);
            }
            if e.failures == 0 && e.in_flight == 0 {
                m.remove(k);
            } else {
                m.insert(k.clone(), e);
            }
        }
    }

    /// Bounded memory: past 100,000 keys, windows that have ended with nothing in flight go.
    fn forget_expired(&self, m: &mut HashMap<String, LimiterEntry>, now: Instant) {
        if m.len() > 100_000 {
            let w = self.window;
            m.retain(|_, e| e.in_flight > 0 || now.duration_since(e.start) < w);
        }
    }

    /// Records a failure for `key` (a failure that needed no reservation: an invalid token is
    /// found invalid at once).
    pub fn fail(&self, key: &str) {
        let mut m = self.lock();
        let now = Instant::now();
        self.forget_expired(&mut m, now);
        let mut e = self.current(&m, key, now);
        e.failures = e.failures.saturating_add(1);
        m.insert(key.to_string(), e);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::FailureLimiter;

    #[test]
    fn limiter_blocks_after_limit() {
        let l = FailureLimiter::new(3, Duration::from_secs(600));
        for _ in 0..3 {
            assert!(l.blocked("k").is_none());
            l.fail("k");
        }
        assert!(l.blocked("k").is_some());
        assert!(l.blocked("other").is_none());
    }

    #[test]
    fn attempts_in_flight_count_against_the_limit() {
        let l = FailureLimiter::new(3, Duration::from_secs(600));
        let a = l.reserve(&["ip", "ip+user"]).unwrap();
        let b = l.reserve(&["ip"]).unwrap();
        let c = l.reserve(&["ip"]).unwrap();
        // Three checks running: a fourth is refused before it starts.
        assert!(l.reserve(&["ip"]).is_err());
        assert!(l.blocked("ip").is_some());
        // A success gives its place back; a failure keeps it.
        drop(a);
        assert!(l.blocked("ip+user").is_none());
        b.failed();
        c.failed();
        let d = l.reserve(&["ip"]).unwrap();
        d.failed();
        assert!(l.reserve(&["ip"]).is_err());
        // A refusal by one key reserves nothing on the others.
        let l = FailureLimiter::new(1, Duration::from_secs(600));
        l.fail("x");
        assert!(l.reserve(&["y", "x"]).is_err());
        assert!(l.blocked("y").is_none());
    }
}
