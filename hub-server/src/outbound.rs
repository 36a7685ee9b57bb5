//! The outbound address policy ([`hub_core::outbound`]) where the hub connects to a place a
//! user named — an OIDC issuer ([`crate::oidc`]), a claimed domain ([`crate::proof`]): their
//! HTTP clients resolve names through a [`GuardedResolver`], which drops the addresses the
//! policy refuses at every connection (a name re-pointed at 127.0.0.1 after it was registered —
//! DNS rebinding — is caught when the hub connects, not only when it was checked), and check a
//! URL naming an IP address with [`check_url`] before sending (no resolver is asked for those).
//! They use no HTTP proxy (`HTTP_PROXY`/`HTTPS_PROXY` are ignored): through a proxy, the proxy
//! would pick the address, and the hub could not hold it to the policy.

use std::error::Error;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hub_core::trusted::BoxFuture;

/// A connection the policy refused: its message names the host, the address and its range.
/// The resolver fails with it; [`refused`] finds it again in the HTTP client's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Refused {}

/// Looks up the addresses of a name.
pub trait Lookup: Send + Sync + fmt::Debug {
    /// The addresses of `host`, or why not.
    fn addrs<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, String>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn addrs<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, String>> {
        Box::pin(async move {
            let found = tokio::net::lookup_host((host, 0))
                .await
                .map_err(|e| format!("cannot resolve `{host}`: {e}"))?;
            Ok(found.map(|a| a.ip()).collect())
        })
    }
}

/// A resolver for reqwest that keeps only the addresses the policy takes, and fails with
/// [`Refused`] when none is left.
#[derive(Debug)]
pub struct GuardedResolver {
    lookup: Arc<dyn Lookup>,
    allow_private: bool,
}

impl GuardedResolver {
    /// Resolving through `lookup`; `allow_private` is the hub setting `outbound_allow_private`.
    pub fn new(lookup: Arc<dyn Lookup>, allow_private: bool) -> Self {
        GuardedResolver {
            lookup,
            allow_private,
        }
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let lookup = self.lookup.clone();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str();
            let ips = lookup.addrs(host).await?;
            let kept = hub_core::outbound::filter_addrs(host, ips, allow_private).map_err(|m| {
                tracing::warn!(%host, refusal = %m, "outbound connection refused");
                Refused(m)
            })?;
            let addrs: reqwest::dns::Addrs =
                Box::new(kept.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// An HTTP client builder held to the policy: the guarded resolver over `lookup`, no proxy.
pub fn client_builder(lookup: Arc<dyn Lookup>, allow_private: bool) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver::new(lookup, allow_private)))
}

/// Checks a URL about to be fetched when its host is an IP address (names are the
/// resolver's). A URL that does not parse passes: the HTTP client says what is wrong with it.
pub fn check_url(url: &str, allow_private: bool) -> Result<(), Refused> {
    match url::Url::parse(url) {
        Ok(u) => hub_core::outbound::check_url_host(&u, allow_private).map_err(|m| {
            tracing::warn!(%url, refusal = %m, "outbound connection refused");
            Refused(m)
        }),
        Err(_) => Ok(()),
    }
}

/// The policy's refusal in an error's chain of causes, if it is one.
pub fn refused<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a Refused> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<Refused>() {
            return Some(r);
        }
        cause = c.source();
    }
    None
}
