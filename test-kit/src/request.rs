//! Request builders: one JSON request to a hub, with an optional bearer token, body and headers,
//! answered as `(status, JSON body)`.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

/// Runs `fut` to completion on a fresh current-thread runtime on a thread of its own, so
/// synchronous code can call async code whether or not it already runs inside a runtime.
pub fn on_own_runtime<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(fut)
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// One request under construction; see [`crate::TestHub::request`] and
/// [`crate::HubProcess::request`].
#[derive(Debug)]
pub struct Request {
    client: Option<reqwest::Client>,
    method: reqwest::Method,
    url: String,
    token: Option<String>,
    body: Option<Value>,
    headers: Vec<(String, String)>,
    timeout: Option<Duration>,
}

impl Request {
    /// `method url`; `client: None` makes a client when sent.
    pub fn new(client: Option<reqwest::Client>, method: reqwest::Method, url: String) -> Request {
        Request {
            client,
            method,
            url,
            token: None,
            body: None,
            headers: Vec::new(),
            timeout: None,
        }
    }

    /// Sends `Authorization: Bearer token`.
    pub fn token(mut self, token: &str) -> Request {
        self.token = Some(token.to_string());
        self
    }

    /// Sends the token if there is one.
    pub fn maybe_token(mut self, token: Option<&str>) -> Request {
        self.token = token.map(str::to_string);
        self
    }

    /// Sends `body` as JSON.
    pub fn json(mut self, body: Value) -> Request {
        self.body = Some(body);
        self
    }

    /// Sends the JSON body if there is one.
    pub fn maybe_json(mut self, body: Option<Value>) -> Request {
        self.body = body;
        self
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Gives up after `d`.
    pub fn timeout(mut self, d: Duration) -> Request {
        self.timeout = Some(d);
        self
    }

    async fn raw(self) -> (u16, Vec<u8>) {
        let client = self.client.unwrap_or_default();
        let mut r = client.request(self.method, &self.url);
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        if let Some(b) = &self.body {
            r = r.json(b);
        }
        for (k, v) in &self.headers {
            r = r.header(k, v);
        }
        if let Some(d) = self.timeout {
            r = r.timeout(d);
        }
        let url = self.url;
        let resp = r.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = resp.status().as_u16();
        (status, resp.bytes().await.unwrap().to_vec())
    }

    /// Sends it: status and JSON body (`Value::Null` when empty); panics on a body that is not
    /// JSON.
    pub async fn send(self) -> (u16, Value) {
        let url = self.url.clone();
        let (status, bytes) = self.raw().await;
        let v = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "non-JSON body for {url} ({status}): {e}: {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        (status, v)
    }

    /// Sends it: status and body, `Value::Null` when empty and a JSON string when not JSON.
    pub async fn send_lenient(self) -> (u16, Value) {
        let (status, bytes) = self.raw().await;
        let v = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, v)
    }

    /// [`Request::send_lenient`] from synchronous code (on a runtime and client of its own).
    pub fn send_blocking(mut self) -> (u16, Value) {
        self.client = None;
        on_own_runtime(self.send_lenient())
    }
}
