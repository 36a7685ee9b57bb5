//! The HTTP client of the OAuth requests (metadata, registration, tokens): no redirects
//! followed, a deadline on each request, answers bounded in size.

use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;

/// The most of an OAuth answer read.
const MAX_ANSWER: usize = 256 * 1024;

/// The client.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    pub(crate) client: reqwest::Client,
}

impl Http {
    pub(crate) fn new() -> Result<Http, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("ofc/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Http { client })
    }

    /// GETs `url` as JSON: `Ok(None)` when it is not there (404 and other client errors),
    /// an error when it cannot be reached or is not JSON.
    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<Option<T>, String> {
        let resp = self
            .client
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {}", e.without_url()))?;
        let status = resp.status();
        if status.is_client_error() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("{url}: HTTP {status}"));
        }
        read_json(resp)
            .await
            .map(Some)
            .map_err(|e| format!("{url}: {e}"))
    }
}

/// The body of `resp` as JSON, at most [`MAX_ANSWER`] bytes.
pub(crate) async fn read_json<T: DeserializeOwned>(resp: reqwest::Response) -> Result<T, String> {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("reading the answer: {}", e.without_url()))?;
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(format!("the answer is over {MAX_ANSWER} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("not the JSON expected: {e}"))
}
