//! The issuers' keys: OIDC discovery (`{issuer}/.well-known/openid-configuration` →
//! `jwks_uri`) and the JWKS, fetched through [`OidcFetch`] (hub-core has no HTTP client; the
//! server gives it one) and cached per issuer for [`TTL`]. A `kid` the cached set lacks makes
//! one fetch again — at most one per issuer every [`REFETCH_MIN`], so tokens naming made-up
//! key ids cannot make the hub hammer an issuer — then refuses.
//!
//! Issuer and key URLs answer to the outbound address policy ([`crate::outbound`]): one
//! naming an address that is not globally routable is refused here, and the fetcher refuses a
//! name resolving only to such addresses ([`FetchError::Refused`]), unless the hub setting
//! `outbound_allow_private` is on.

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

/// Why a document could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The outbound address policy refused the address the URL names or its host resolves
    /// to: the issuer is not one the hub may reach (the message names host, address, range).
    Refused(String),
    /// No answer, a TLS failure, a status other than 2xx, too large…
    Failed(String),
}

/// GETs a JSON document: the hub server's HTTP client (bounded in time and size, and held to
/// the outbound address policy at every connection).
pub trait OidcFetch: Send + Sync + fmt::Debug {
    /// The body of `url` (2xx only), or why not.
    fn get<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FetchError>>;
}

/// The settings an issuer or key URL is checked by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlRules {
    /// `oidc_allow_http_loopback`: `http://127.0.0.1[:port]` is taken.
    pub allow_http_loopback: bool,
    /// `outbound_allow_private`: addresses that are not globally routable are taken.
    pub allow_private: bool,
}

impl UrlRules {
    /// The rules of the hub's settings.
    pub fn of(config: &crate::config::Config) -> Self {
        UrlRules {
            allow_http_loopback: config.oidc_allow_http_loopback,
            allow_private: config.outbound_allow_private,
        }
    }
}

/// Checks an issuer or JWKS URL: `https://` with a host, no user, query or fragment; or, only
/// with `allow_http_loopback`, `http://127.0.0.1[:port]` (tests and local development). A
/// host that is an IP address must be one the outbound address policy takes.
pub fn check_url(s: &str, rules: UrlRules) -> Result<(), String> {
    let u = url_shape(s, rules)?;
    address(s, &u, rules)
}

/// The outbound address policy on a URL naming an IP address.
fn address(s: &str, u: &url::Url, rules: UrlRules) -> Result<(), String> {
    crate::outbound::check_url_host(u, rules.allow_private).map_err(|e| format!("`{s}`: {e}"))
}

/// The scheme and parts of an issuer or key URL.
fn url_shape(s: &str, rules: UrlRules) -> Result<url::Url, String> {
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
        ("https", Some(_)) => {}
        ("http", Some("127.0.0.1")) if rules.allow_http_loopback => {}
        ("http", Some("127.0.0.1")) => {
            return Err(format!(
                "`{s}` is plain http: only https is taken (the hub setting \
             oidc_allow_http_loopback lets http://127.0.0.1 through, for tests)"
            ));
        }
        _ => return Err(format!("`{s}` must be an https:// URL")),
    }
    Ok(u)
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
    rules: UrlRules,
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Cached>>>>>,
}

impl Jwks {
    /// A cache fetching through `fetch`.
    pub fn new(fetch: Arc<dyn OidcFetch>, rules: UrlRules) -> Self {
        Jwks {
            fetch,
            rules,
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
        let failed = |what: String, e: FetchError| match e {
            FetchError::Refused(m) => Refusal::IssuerAddress(format!("{what}: {m}")),
            FetchError::Failed(m) => Refusal::IssuerUnavailable(format!("{what}: {m}")),
        };
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let body = self
            .fetch
            .get(&url)
            .await
            .map_err(|e| failed(format!("the issuer's discovery document {url}"), e))?;
        let d: Discovery = serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the issuer's discovery document {url}: {e}")))?;
        if d.issuer != issuer {
            return Err(unavailable(format!(
                "the discovery document {url} names issuer `{}`, not `{issuer}`",
                d.issuer
            )));
        }
        let jwks_uri = url_shape(&d.jwks_uri, self.rules)
            .map_err(|e| unavailable(format!("the issuer's jwks_uri: {e}")))?;
        address(&d.jwks_uri, &jwks_uri, self.rules)
            .map_err(|e| Refusal::IssuerAddress(format!("the issuer's jwks_uri: {e}")))?;
        let body = self
            .fetch
            .get(&d.jwks_uri)
            .await
            .map_err(|e| failed(format!("the issuer's keys {}", d.jwks_uri), e))?;
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
