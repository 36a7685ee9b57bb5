//! The HTTP client trusted publishing fetches OIDC discovery documents and JWKS with
//! ([`hub_core::trusted::OidcFetch`]): rustls with the built-in web roots, no redirects (an
//! issuer's documents are where it says), no proxy, 10 s per request, bodies capped at
//! 256 KiB, and held to the outbound address policy at every connection ([`crate::outbound`]:
//! unless `outbound_allow_private`, an issuer whose name resolves only to addresses that are
//! not globally routable, or whose URL names one, is refused without connecting).

use std::sync::Arc;
use std::time::Duration;

use hub_core::trusted::{BoxFuture, FetchError, OidcFetch};

use crate::outbound::{self, SystemLookup};

/// Largest discovery document or JWKS taken.
const MAX_BODY: usize = 256 * 1024;

/// The fetcher.
#[derive(Debug, Clone)]
pub struct HttpFetch {
    client: reqwest::Client,
    allow_private: bool,
}

impl HttpFetch {
    /// A fetcher with its own client; `allow_private` is the hub setting
    /// `outbound_allow_private`.
    pub fn new(allow_private: bool) -> anyhow::Result<Self> {
        let client = outbound::client_builder(Arc::new(SystemLookup), allow_private)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("ofc-hub/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the OIDC HTTP client: {e}"))?;
        Ok(HttpFetch {
            client,
            allow_private,
        })
    }
}

impl OidcFetch for HttpFetch {
    fn get<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            outbound::check_url(url, self.allow_private).map_err(|r| FetchError::Refused(r.0))?;
            let failed = |e: reqwest::Error| match outbound::refused(&e) {
                Some(r) => FetchError::Refused(r.0.clone()),
                None => FetchError::Failed(format!("cannot fetch: {e}")),
            };
            let mut resp = self
                .client
                .get(url)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(failed)?;
            if !resp.status().is_success() {
                return Err(FetchError::Failed(format!("answered {}", resp.status())));
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| FetchError::Failed(format!("reading: {e}")))?
            {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(FetchError::Failed(format!(
                        "the document is larger than {MAX_BODY} bytes"
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        })
    }
}
