//! The HTTP client trusted publishing fetches OIDC discovery documents and JWKS with
//! ([`hub_core::trusted::OidcFetch`]): rustls with the built-in web roots, no redirects (an
//! issuer's documents are where it says), 10 s per request, bodies capped at 256 KiB.

use std::time::Duration;

use hub_core::trusted::{BoxFuture, OidcFetch};

/// Largest discovery document or JWKS taken.
const MAX_BODY: usize = 256 * 1024;

/// The fetcher.
#[derive(Debug, Clone)]
pub struct HttpFetch {
    client: reqwest::Client,
}

impl HttpFetch {
    /// A fetcher with its own client.
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("ofc-hub/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        HttpFetch { client }
    }
}

impl Default for HttpFetch {
    fn default() -> Self {
        Self::new()
    }
}

impl OidcFetch for HttpFetch {
    fn get<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let mut resp = self
                .client
                .get(url)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| format!("cannot fetch: {e}"))?;
            if !resp.status().is_success() {
                return Err(format!("answered {}", resp.status()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading: {e}"))? {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(format!("the document is larger than {MAX_BODY} bytes"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        })
    }
}
