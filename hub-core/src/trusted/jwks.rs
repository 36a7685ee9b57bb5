//! The issuers' keys: OIDC discovery (`{issuer}/.well-known/openid-configuration` →
//! `jwks_uri`) and the JWKS, fetched through [`OidcFetch`] (hub-core has no HTTP client; the
//! server gives it one) and cached per issuer for [`TTL`]. A `kid` the cached set lacks makes
//! one fetch again — at most one per issuer every [`REFETCH_MIN`], so tokens naming made-up
//! key ids cannot make the hub hammer an issuer — then refuses.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::jwt::Jwk;
use super::refusal::Refusal;

/// How long an issuer's keys are used before they are fetched again.
pub const TTL: Duration = Duration::from_secs(600);
/// The least time between two fetches of one issuer's keys for an unknown `kid`.
pub const REFETCH_MIN: Duration = Duration::from_secs(5);
/// Most keys taken from one JWKS.
const MAX_KEYS: usize = 100;

/// A boxed future (the fetcher is a trait object).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// GETs a JSON document: the hub server's HTTP client (bounded in time and size).
pub trait OidcFetch: Send + Sync + fmt::Debug {
    /// The body of `url` (2xx only), or why not.
    fn get<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>>;
}

/// Checks an issuer or JWKS URL: `https://` with a host, no user, query or fragment; or, only
/// with `allow_http_loopback`, `http://127.0.0.1[:port]` (tests and local development).
pub fn check_url(s: &str, allow_http_loopback: bool) -> Result<(), String> {
    if s.is_empty() || s.len() > 255 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{s}` must be 1 to 255 characters without spaces or control characters"
        ));
    }
    let u = url::Url::parse(s).map_err(|e| format!("`{s}` is not a URL: {e}"))?;
    if u.query().is_some() || u.fragment().is_some() || !u.username().is_empty() {
        return Err(format!("`{s}` must have no user, query or fragment"));
    }
    match (u.scheme(), u.host_str()) {
        ("https", Some(_)) => Ok(()),
        ("http", Some("127.0.0.1")) if allow_http_loopback => Ok(()),
        ("http", Some("127.0.0.1")) => Err(format!(
            "`{s}` is plain http: only https is taken (the hub setting \
             oidc_allow_http_loopback lets http://127.0.0.1 through, for tests)"
        )),
        _ => Err(format!("`{s}` must be an https:// URL")),
    }
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

#[derive(Deserialize)]
struct KeySet {
    keys: Vec<serde_json::Value>,
}

#[derive(Debug)]
struct Cached {
    keys: Vec<Jwk>,
    fetched_at: Instant,
}

/// The issuers' keys, cached.
#[derive(Debug)]
pub struct Jwks {
    fetch: Arc<dyn OidcFetch>,
    allow_http_loopback: bool,
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Cached>>>>>,
}

impl Jwks {
    /// A cache fetching through `fetch`.
    pub fn new(fetch: Arc<dyn OidcFetch>, allow_http_loopback: bool) -> Self {
        Jwks {
            fetch,
            allow_http_loopback,
            slots: Mutex::default(),
        }
    }

    /// The key `kid` of `issuer` (a registered issuer URL).
    pub async fn key(&self, issuer: &str, kid: &str) -> Result<Jwk, Refusal> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.entry(issuer.to_string()).or_default().clone()
        };
        // One fetch per issuer at a time; other issuers are not held up.
        let mut cached = slot.lock().await;
        let find = |c: &Cached| {
            c.keys
                .iter()
                .find(|k| k.kid.as_deref() == Some(kid))
                .cloned()
        };
        if let Some(c) = cached.as_ref() {
            let age = c.fetched_at.elapsed();
            if age < TTL {
                if let Some(k) = find(c) {
                    return Ok(k);
                }
                if age < REFETCH_MIN {
                    return Err(unknown_kid(issuer, kid));
                }
            }
        }
        let keys = self.fetch_keys(issuer).await?;
        let c = cached.insert(Cached {
            keys,
            fetched_at: Instant::now(),
        });
        find(c).ok_or_else(|| unknown_kid(issuer, kid))
    }

    async fn fetch_keys(&self, issuer: &str) -> Result<Vec<Jwk>, Refusal> {
        let unavailable = |why: String| Refusal::IssuerUnavailable(why);
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let body = self
            .fetch
            .get(&url)
            .await
            .map_err(|e| unavailable(format!("the issuer's discovery document {url}: {e}")))?;
        let d: Discovery = serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the issuer's discovery document {url}: {e}")))?;
        if d.issuer != issuer {
            return Err(unavailable(format!(
                "the discovery document {url} names issuer `{}`, not `{issuer}`",
                d.issuer
            )));
        }
        check_url(&d.jwks_uri, self.allow_http_loopback)
            .map_err(|e| unavailable(format!("the issuer's jwks_uri: {e}")))?;
        let body = self
            .fetch
            .get(&d.jwks_uri)
            .await
            .map_err(|e| unavailable(format!("the issuer's keys {}: {e}", d.jwks_uri)))?;
        let set: KeySet = serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the issuer's keys {}: {e}", d.jwks_uri)))?;
        // Keys of other types (or malformed ones) are skipped, as a JWKS consumer should.
        Ok(set
            .keys
            .into_iter()
            .take(MAX_KEYS)
            .filter_map(|k| serde_json::from_value::<Jwk>(k).ok())
            .filter(|k| k.kid.is_some())
            .collect())
    }
}

fn unknown_kid(issuer: &str, kid: &str) -> Refusal {
    Refusal::Kid(format!(
        "the ID token's kid `{kid}` is not among the keys issuer {issuer} publishes"
    ))
}
