//! API tokens, scopes, namespace patterns, roles, the authorization decision and the limiter on
//! authentication failures.
//!
//! A token is `ofc_` + 43 characters of URL-safe base64 (32 random bytes); only its SHA-256 is
//! stored. What a token may do is the intersection of its scopes, its namespace patterns and
//! (for namespace operations) the user's role in that namespace; site administrators using a
//! token with the `admin` scope pass the role check.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use index_schema::hub_api::ErrorCode;
use rand::RngCore;
use sha2::{Digest as _, Sha256};

/// Every token starts with this, so secret scanners and people recognise it.
pub const TOKEN_PREFIX: &str = "ofc_";
/// Registry-API agent tokens start with this.
pub const AGENT_TOKEN_PREFIX: &str = "ofc_agent_";

/// A freshly generated secret, held as a [`secrecy::SecretString`]: zeroed on drop, and its
/// `Debug` is redacted. [`Secret::expose`] is the one way to its text.
#[derive(Clone)]
pub struct Secret(secrecy::SecretString);

impl Secret {
    /// The secret's text, for the one place it is shown or hashed.
    pub fn expose(&self) -> &str {
        secrecy::ExposeSecret::expose_secret(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A new random token with `prefix`.
pub fn generate_token(prefix: &str) -> Secret {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Secret(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)).into())
}

/// Hex SHA-256 of a token: what the database stores.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// What a token may be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Publish the first version of a new agent.
    PublishNew,
    /// Publish a new version of an existing agent.
    PublishUpdate,
    /// Yank, unyank, deprecate.
    Yank,
    /// Register and revoke publisher keys.
    ManageKeys,
    /// Add, change and remove namespace members.
    ManageMembers,
    /// List, create and revoke the user's API tokens (a token may always revoke itself).
    ManageTokens,
    /// Site administration (only effective for administrators).
    Admin,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 7] = [
        Scope::PublishNew,
        Scope::PublishUpdate,
        Scope::Yank,
        Scope::ManageKeys,
        Scope::ManageMembers,
        Scope::ManageTokens,
        Scope::Admin,
    ];

    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::PublishNew => "publish-new",
            Scope::PublishUpdate => "publish-update",
            Scope::Yank => "yank",
            Scope::ManageKeys => "manage-keys",
            Scope::ManageMembers => "manage-members",
            Scope::ManageTokens => "manage-tokens",
            Scope::Admin => "admin",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Parses a comma-separated scope list; an error names the first unknown scope.
pub fn parse_scopes(list: &[String]) -> Result<Vec<Scope>, String> {
    let mut out = Vec::new();
    for s in list {
        let s = s.trim();
        match Scope::parse(s) {
            Some(x) => {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            None => {
                return Err(format!(
                    "unknown scope `{s}`; known scopes: {}",
                    Scope::ALL.map(Scope::as_str).join(", ")
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Checks a namespace pattern: `*`, a namespace name, or a name prefix followed by `*`.
pub fn check_pattern(p: &str) -> Result<(), String> {
    let body = p.strip_suffix('*').unwrap_or(p);
    let ok = p.len() <= 65
        && body
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && (p == "*" || !body.is_empty());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "namespace pattern `{p}` must be `*`, a namespace name, or a name prefix ending in `*`"
        ))
    }
}

/// Whether a namespace pattern matches a namespace.
pub fn pattern_matches(pattern: &str, namespace: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => namespace.starts_with(prefix),
        None => pattern == namespace,
    }
}

/// Whether every namespace `inner` matches is matched by `outer` (no token mints a wider one).
pub fn pattern_covers(outer: &str, inner: &str) -> bool {
    match outer.strip_suffix('*') {
        Some(prefix) => inner.trim_end_matches('*').starts_with(prefix),
        None => outer == inner,
    }
}

/// A member's role in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything in the namespace.
    Owner,
    /// Publish (new agents and updates) and yank.
    Maintainer,
    /// Publish new versions of existing agents only.
    Publisher,
}

impl Role {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Maintainer => "maintainer",
            Role::Publisher => "publisher",
        }
    }
    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "owner" => Some(Role::Owner),
            "maintainer" => Some(Role::Maintainer),
            "publisher" => Some(Role::Publisher),
            _ => None,
        }
    }
    /// Whether this role grants `scope` in its namespace.
    pub fn grants(self, scope: Scope) -> bool {
        match self {
            Role::Owner => scope != Scope::Admin,
            Role::Maintainer => matches!(
                scope,
                Scope::PublishNew | Scope::PublishUpdate | Scope::Yank
            ),
            Role::Publisher => scope == Scope::PublishUpdate,
        }
    }
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Principal {
    /// User id.
    pub user_id: i64,
    /// User name.
    pub user_name: String,
    /// Site administrator.
    pub is_admin: bool,
    /// Token id.
    pub token_id: i64,
    /// Token scopes.
    pub scopes: Vec<Scope>,
    /// Token namespace patterns.
    pub namespaces: Vec<String>,
    /// When the token expires (ms since the epoch); a token it creates may not outlive it.
    pub expires_at: Option<i64>,
}

/// Why an authorization was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The token lacks the scope.
    Scope(Scope),
    /// The token's namespace patterns do not cover the namespace.
    Namespace(String),
    /// The user is not a member of the namespace.
    NotMember(String),
    /// The user's role does not grant the scope.
    Role(Role, Scope),
    /// Only administrators may do this.
    AdminOnly,
}

impl Principal {
    /// Whether this caller acts as a site administrator.
    pub fn acts_as_admin(&self) -> bool {
        self.is_admin && self.scopes.contains(&Scope::Admin)
    }

    /// May this caller use `scope` in `namespace`, where the user's role is `role`?
    pub fn authorize(
        &self,
        scope: Scope,
        namespace: &str,
        role: Option<Role>,
    ) -> Result<(), Denied> {
        if self.acts_as_admin() {
            return Ok(());
        }
        if !self.scopes.contains(&scope) {
            return Err(Denied::Scope(scope));
        }
        if !self
            .namespaces
            .iter()
            .any(|p| pattern_matches(p, namespace))
        {
            return Err(Denied::Namespace(namespace.to_string()));
        }
        let Some(role) = role else {
            return Err(Denied::NotMember(namespace.to_string()));
        };
        if !role.grants(scope) {
            return Err(Denied::Role(role, scope));
        }
        Ok(())
    }

    /// May this caller perform an administrator-only action?
    pub fn authorize_admin(&self) -> Result<(), Denied> {
        if self.acts_as_admin() {
            Ok(())
        } else {
            Err(Denied::AdminOnly)
        }
    }
}

/// Hashes a password (Argon2id, PHC string).
pub fn hash_password(password: &str) -> Result<String, String> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// The hash of a random password nobody knows, checked when a log-in names no account so
/// that it takes as long as one that does.
pub fn dummy_password_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let mut secret = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut secret);
        hash_password(&hex::encode(secret)).expect("hashing a random password")
    })
}

/// Checks a password against a PHC string.
pub fn verify_password(password: &str, phc: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(phc).is_ok_and(|h| {
        argon2::Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

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
    use super::*;

    #[test]
    fn patterns() {
        assert!(pattern_matches("*", "acme"));
        assert!(pattern_matches("acme", "acme"));
        assert!(!pattern_matches("acme", "acme2"));
        assert!(pattern_matches("acme-*", "acme-labs"));
        assert!(!pattern_matches("acme-*", "acme"));
        assert!(check_pattern("acme-*").is_ok());
        assert!(pattern_covers("*", "acme-*"));
        assert!(pattern_covers("acme-*", "acme-x"));
        assert!(pattern_covers("acme-*", "acme-x*"));
        assert!(!pattern_covers("acme-*", "acme*"));
        assert!(!pattern_covers("acme", "acme*"));
        assert!(pattern_covers("acme", "acme"));
        assert!(check_pattern("").is_err());
        assert!(check_pattern("Acme").is_err());
        assert!(check_pattern("a*b").is_err());
    }

    #[test]
    fn tokens_are_prefixed_and_hashed() {
        let t = generate_token(TOKEN_PREFIX);
        assert!(t.expose().starts_with("ofc_"));
        assert_eq!(t.expose().len(), 4 + 43);
        assert_eq!(hash_token(t.expose()).len(), 64);
        assert_ne!(hash_token(t.expose()), t.expose());
        assert_eq!(format!("{t:?}"), "Secret(<redacted>)");
    }

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

    #[test]
    fn passwords() {
        let h = hash_password("hunter2").unwrap();
        assert!(verify_password("hunter2", &h));
        assert!(!verify_password("hunter3", &h));
        assert!(!verify_password("x", "not a phc"));
    }
}

/// Why a token names no usable principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    /// No such token.
    Unknown,
    /// Revoked.
    Revoked,
    /// Past its expiry.
    Expired,
    /// Its user is disabled.
    UserDisabled,
}

impl TokenRefusal {
    /// The API error code and message.
    pub fn code_and_message(self) -> (ErrorCode, &'static str) {
        match self {
            TokenRefusal::Unknown => (ErrorCode::InvalidToken, "the API token is not valid"),
            TokenRefusal::Revoked => (ErrorCode::TokenRevoked, "the API token was revoked"),
            TokenRefusal::Expired => (ErrorCode::TokenExpired, "the API token has expired"),
            TokenRefusal::UserDisabled => (ErrorCode::UserDisabled, "the account is disabled"),
        }
    }
}

/// The principal of the API token whose hash is `hash` — the one place that decides whether a
/// token is usable (revocation, expiry, disabled user) and records its use (at most one write a
/// minute per token), for the JSON API and for `/v2/` (Basic, Bearer and `/v2/token` bearers).
pub async fn principal_for_hash(
    store: &crate::store::Store,
    hash: &str,
) -> Result<Result<Principal, TokenRefusal>, crate::store::StoreError> {
    let Some((t, user)) = store.token_by_hash(hash).await? else {
        return Ok(Err(TokenRefusal::Unknown));
    };
    let now = crate::store::now_ms();
    if t.revoked_at.is_some() {
        return Ok(Err(TokenRefusal::Revoked));
    }
    if t.expires_at.is_some_and(|e| e <= now) {
        return Ok(Err(TokenRefusal::Expired));
    }
    if user.disabled {
        return Ok(Err(TokenRefusal::UserDisabled));
    }
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let scopes = parse_scopes(&list(&t.scopes))
        .map_err(|e| crate::store::StoreError::Conflict(format!("stored token scopes: {e}")))?;
    // A write at most once a minute per token; the check on the row just read keeps every
    // other request a pure read.
    if t.last_used_at
        .is_none_or(|at| at <= now - crate::store::TOKEN_USE_PRECISION_MS)
    {
        store.touch_token(t.id, now).await?;
    }
    Ok(Ok(Principal {
        user_id: user.id,
        user_name: user.name,
        is_admin: user.is_admin,
        token_id: t.id,
        scopes,
        namespaces: list(&t.namespaces),
        expires_at: t.expires_at,
    }))
}

/// The principal of API token `token` presented by a client at `ip`, with the limiter:
/// invalid tokens from an address are limited (429 once blocked); a valid token is never
/// refused by the limiter (it proves itself), so failures from a shared address cannot lock it
/// out.
pub async fn principal_for_token(
    state: &crate::state::AppState,
    ip: Option<IpAddr>,
    token: &str,
) -> Result<Principal, crate::error::ApiError> {
    use crate::error::{ApiError, too_many};
    let ip_key = FailureLimiter::token_key(&FailureLimiter::ip_key(ip));
    let fail = |code: ErrorCode, msg: &str| {
        state.metrics.auth_failure();
        if let Some(secs) = state.limiter.blocked(&ip_key) {
            return too_many(secs);
        }
        state.limiter.fail(&ip_key);
        ApiError::unauthorized(code, msg.to_string())
    };
    if token.is_empty() || token.len() > 200 {
        return Err(fail(ErrorCode::InvalidToken, "the API token is malformed"));
    }
    match principal_for_hash(&state.store, &hash_token(token)).await? {
        Ok(p) => Ok(p),
        Err(r) => {
            let (code, msg) = r.code_and_message();
            Err(fail(code, msg))
        }
    }
}
