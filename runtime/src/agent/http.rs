//! The OFC agent HTTP API, as a client.

use async_trait::async_trait;
use futures::StreamExt;
use index_schema::wire::{
    AgentCall, AgentInfo, McpGrantRequest, McpGrantResponse, McpProvidesResponse, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse, agent_url, headers,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::sse::{self, DeltaData, ErrorData, SseError};
use super::{Agent, AgentError, Deltas};

/// The largest body or streamed event accepted from an agent.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// An agent reached over the OFC HTTP API at `endpoint` (its base URL; a trailing `/ofc` is
/// allowed).
#[derive(Debug, Clone)]
pub struct HttpAgent {
    endpoint: String,
    client: reqwest::Client,
}

impl HttpAgent {
    /// An agent at `endpoint`, called with `client` (share one client between agents: it
    /// keeps connections alive).
    pub fn new(endpoint: impl Into<String>, client: reqwest::Client) -> Self {
        Self {
            endpoint: endpoint.into(),
            client,
        }
    }

    /// A client suitable for agents: no proxy for loopback, short connect timeout, and no
    /// redirects (an agent URL that redirects could send the floor's requests — and the
    /// conversation — anywhere, past the hosts a floor server allows).
    pub fn default_client() -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(5))
            .tcp_nodelay(true)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    }

    /// The base URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn request(&self, method: reqwest::Method, call: AgentCall) -> reqwest::RequestBuilder {
        self.client.request(method, agent_url(&self.endpoint, call))
    }

    async fn get<T: DeserializeOwned>(&self, call: AgentCall) -> Result<T, AgentError> {
        let response = self
            .request(reqwest::Method::GET, call)
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(transport)?;
        json_body(response).await
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        call: AgentCall,
        floor_id: &str,
        body: &B,
    ) -> Result<T, AgentError> {
        let response = self
            .request(reqwest::Method::POST, call)
            .header(ACCEPT, "application/json")
            .header(headers::FLOOR_ID, floor_id)
            .json(body)
            .send()
            .await
            .map_err(transport)?;
        json_body(response).await
    }
}

#[async_trait]
impl Agent for HttpAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        self.get(AgentCall::Info).await
    }

    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        self.post(AgentCall::ShouldWake, &request.floor_id, request)
            .await
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let Some(deltas) = deltas else {
            return self
                .post(AgentCall::Respond, &request.floor_id, request)
                .await;
        };
        let response = self
            .request(reqwest::Method::POST, AgentCall::Respond)
            .header(ACCEPT, format!("application/json, {}", sse::MEDIA_TYPE))
            .header(headers::FLOOR_ID, &request.floor_id)
            .json(request)
            .send()
            .await
            .map_err(transport)?;
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(sse::MEDIA_TYPE));
        if !streamed || !response.status().is_success() {
            return json_body(response).await;
        }
        read_stream(response, &deltas).await
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        self.post(AgentCall::McpGrant, &request.floor_id, request)
            .await
    }

    async fn provides_mcp(&self) -> Result<McpProvidesResponse, AgentError> {
        self.get(AgentCall::McpProvides).await
    }
}

/// Reads a streamed `/ofc/respond` answer, forwarding deltas, until `done` or `error`.
async fn read_stream(
    response: reqwest::Response,
    deltas: &Deltas,
) -> Result<RespondResponse, AgentError> {
    let mut events = sse::events(response.bytes_stream(), MAX_BODY);
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| match e {
            SseError::Transport(e) => AgentError::Transport(e),
            other => AgentError::InvalidBody(other.to_string()),
        })?;
        match event.event.as_str() {
            sse::DELTA => {
                let delta: DeltaData = parse_json(&event.data, "delta event")?;
                deltas.send(delta.content);
            }
            sse::DONE => return parse_json(&event.data, "done event"),
            sse::ERROR => {
                let error: ErrorData = parse_json(&event.data, "error event")?;
                return Err(AgentError::Reported(error.message));
            }
            // Unknown events are someone else's extension: ignore them.
            _ => {}
        }
    }
    Err(AgentError::StreamTruncated)
}

fn parse_json<T: DeserializeOwned>(data: &str, what: &str) -> Result<T, AgentError> {
    let mut de = serde_json::Deserializer::from_str(data);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| AgentError::InvalidBody(format!("{what}: {} at `{}`", e.inner(), e.path())))
}

async fn json_body<T: DeserializeOwned>(response: reqwest::Response) -> Result<T, AgentError> {
    let status = response.status();
    if let Some(len) = response.content_length()
        && len > MAX_BODY as u64
    {
        return Err(AgentError::InvalidBody(format!(
            "the body is larger than {MAX_BODY} bytes"
        )));
    }
    let mut bytes = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| AgentError::Transport(error_chain(&e)))?;
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(AgentError::InvalidBody(format!(
                "the body is larger than {MAX_BODY} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        let mut body: String = text.chars().take(300).collect();
        if body.len() < text.len() {
            body.push('…');
        }
        return Err(AgentError::Status {
            status: status.as_u16(),
            body,
        });
    }
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            AgentError::InvalidBody(e.inner().to_string())
        } else {
            AgentError::InvalidBody(format!("{} at `{path}`", e.inner()))
        }
    })
}

fn transport(error: reqwest::Error) -> AgentError {
    AgentError::Transport(error_chain(&error))
}

/// The error and its sources, `: `-separated (reqwest hides the useful part in the sources).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}
