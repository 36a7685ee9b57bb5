//! The OpenAI-compatible chat-completions client: one streamed call, with retries on 429/5xx,
//! a deadline, and bounds on what the server may send.

use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, RETRY_AFTER};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::sse;

/// One chat message as the API takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (`null` for an assistant message that only calls tools).
    pub content: Option<String>,
    /// Who spoke, for `user` messages from other floor participants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ChatToolCall>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message with text only.
    pub fn text(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.to_owned(),
            content: Some(content.into()),
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call as the API writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatToolCall {
    /// The call's id, echoed by the `tool` message with its result.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function and its arguments (JSON text).
    pub function: FunctionCall,
}

/// The function part of a tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool.
    pub name: String,
    /// Its arguments, JSON text as the model wrote it (possibly not valid JSON).
    pub arguments: String,
}

/// The request body.
#[derive(Debug, Clone, Serialize)]
pub struct ChatRequest<'a> {
    /// The model.
    pub model: &'a str,
    /// The conversation.
    pub messages: &'a [ChatMessage],
    /// Sampling temperature.
    pub temperature: f64,
    /// Always true: ofc reads the answer as it is produced.
    pub stream: bool,
    /// The tools the model may call (`{"type":"function","function":{…}}`).
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    pub tools: &'a [Value],
}

/// What one call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatResult {
    /// The text.
    pub content: String,
    /// The tool calls, in index order.
    pub tool_calls: Vec<ChatToolCall>,
    /// `stop`, `tool_calls`, `length`, … when the server said.
    pub finish_reason: Option<String>,
}

/// Why a call failed. Never contains the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The endpoint could not be reached or the connection broke.
    #[error("could not reach the model endpoint: {0}")]
    Transport(String),
    /// The endpoint answered with an HTTP error (after the retries allowed for 429/5xx).
    #[error("the model endpoint answered HTTP {status} (after {attempts} attempt(s)): {body}")]
    Status {
        /// The status.
        status: u16,
        /// How many attempts were made.
        attempts: u32,
        /// The start of the body.
        body: String,
    },
    /// The stream is not what an OpenAI-compatible server sends.
    #[error("the model endpoint's stream is not valid: {0}")]
    Invalid(String),
    /// The server reported an error inside the stream.
    #[error("the model endpoint reported an error: {0}")]
    Reported(String),
    /// The stream ended before the model finished.
    #[error("the model's stream ended before the answer was complete ({0})")]
    Truncated(String),
    /// The call took longer than its deadline.
    #[error("the model did not finish within {0:?}; the call was cut off")]
    Deadline(Duration),
    /// The answer grew past the limit.
    #[error("the model's answer is longer than {0} bytes; the call was cut off")]
    TooLong(usize),
}

/// How calls are made.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The deadline of one call, retries included.
    pub deadline: Duration,
    /// Attempts for a call answered with 429 or 5xx (or refused at connect), at least 1.
    pub max_attempts: u32,
    /// The first backoff; each retry doubles it, up to `backoff_max`, with full jitter.
    pub backoff_base: Duration,
    /// The longest wait between attempts (a longer `Retry-After` is cut to it).
    pub backoff_max: Duration,
    /// The largest server-sent event accepted.
    pub max_event_bytes: usize,
    /// The largest answer (text plus tool-call arguments) accepted.
    pub max_answer_bytes: usize,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(300),
            max_attempts: 4,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(20),
            max_event_bytes: 1 << 20,
            max_answer_bytes: 4 << 20,
        }
    }
}

/// A client for one endpoint.
pub struct ChatClient {
    url: String,
    api_key: Option<SecretString>,
    http: reqwest::Client,
    settings: ClientSettings,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("settings", &self.settings)
            .finish()
    }
}

impl ChatClient {
    /// A client for `endpoint` (`http://127.0.0.1:11434/v1`): it posts to
    /// `{endpoint}/chat/completions`.
    pub fn new(
        endpoint: &url::Url,
        api_key: Option<SecretString>,
        http: reqwest::Client,
        settings: ClientSettings,
    ) -> Self {
        Self {
            url: format!(
                "{}/chat/completions",
                endpoint.as_str().trim_end_matches('/')
            ),
            api_key,
            http,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// Whether the endpoint answers at all, within `timeout`: `GET {endpoint}/models` (the
    /// listing OpenAI-compatible servers serve). Any HTTP answer counts, even 401 or 404 —
    /// only a server that cannot be reached (refused, unknown host, TLS failure, silence) is
    /// an error, which names the cause.
    pub async fn probe(&self, timeout: Duration) -> Result<(), String> {
        let url = format!("{}/models", self.url.trim_end_matches("/chat/completions"));
        let mut builder = self.http.get(&url).timeout(timeout);
        if let Some(key) = &self.api_key {
            builder = builder.header(AUTHORIZATION, format!("Bearer {}", key.expose_secret()));
        }
        match builder.send().await {
            Ok(_) => Ok(()),
            Err(e) if e.is_timeout() => Err(format!("no answer within {timeout:?}")),
            Err(e) => Err(chain(&e)),
        }
    }

    /// One streamed call; `on_delta` gets each piece of text as it arrives. Dropping the
    /// future closes the connection, which stops the server's generation.
    pub async fn chat(
        &self,
        request: &ChatRequest<'_>,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatResult, LlmError> {
        let deadline = self.settings.deadline;
        match tokio::time::timeout(deadline, self.chat_with_retries(request, on_delta)).await {
            Ok(result) => result,
            Err(_) => Err(LlmError::Deadline(deadline)),
        }
    }

    async fn chat_with_retries(
        &self,
        request: &ChatRequest<'_>,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatResult, LlmError> {
        let attempts = self.settings.max_attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut builder = self
                .http
                .post(&self.url)
                .header(ACCEPT, sse::MEDIA_TYPE)
                .json(request);
            if let Some(key) = &self.api_key {
                builder = builder.header(AUTHORIZATION, format!("Bearer {}", key.expose_secret()));
            }
            let response = match builder.send().await {
                Ok(response) => response,
                Err(e) if e.is_connect() && attempt < attempts => {
                    tokio::time::sleep(self.backoff(attempt, None)).await;
                    continue;
                }
                Err(e) => return Err(LlmError::Transport(chain(&e))),
            };
            let status = response.status();
            if status.is_success() {
                return self.read(response, on_delta).await;
            }
            let retry_after = retry_after(&response);
            let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            if retryable && attempt < attempts {
                tracing::debug!(
                    status = status.as_u16(),
                    attempt,
                    "model endpoint busy, retrying"
                );
                drop(response);
                tokio::time::sleep(self.backoff(attempt, retry_after)).await;
                continue;
            }
            let body = body_start(response).await;
            return Err(LlmError::Status {
                status: status.as_u16(),
                attempts: attempt,
                body,
            });
        }
    }

    /// The wait after failed attempt `attempt` (1-based): `Retry-After` when the server gave
    /// one, else exponential backoff with full jitter; never more than `backoff_max`.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let cap = self.settings.backoff_max;
        if let Some(wait) = retry_after {
            return wait.min(cap);
        }
        let exp = self
            .settings
            .backoff_base
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(cap);
        let millis = u64::try_from(exp.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::thread_rng().gen_range(millis / 2..=millis.max(1)))
    }

    async fn read(
        &self,
        response: reqwest::Response,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatResult, LlmError> {
        let mut events = sse::events(response.bytes_stream(), self.settings.max_event_bytes);
        let mut result = ChatResult::default();
        let mut size = 0usize;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| match e {
                sse::SseError::Transport(t) => LlmError::Truncated(t),
                other => LlmError::Invalid(other.to_string()),
            })?;
            let data = event.data.trim();
            if data == "[DONE]" {
                return Ok(result);
            }
            if data.is_empty() {
                continue;
            }
            let chunk: Chunk = serde_json::from_str(data)
                .map_err(|e| LlmError::Invalid(format!("{e} in an event")))?;
            if let Some(error) = chunk.error {
                return Err(LlmError::Reported(error_text(&error)));
            }
            let Some(choice) = chunk.choices.into_iter().next() else {
                continue;
            };
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                size += text.len();
                if size > self.settings.max_answer_bytes {
                    return Err(LlmError::TooLong(self.settings.max_answer_bytes));
                }
                on_delta(&text);
                result.content.push_str(&text);
            }
            for piece in choice.delta.tool_calls {
                // Pieces of one call share an index; the id, type and name come once,
                // the arguments in fragments to concatenate.
                let index = piece.index.unwrap_or(0);
                if index >= 128 {
                    return Err(LlmError::Invalid(format!("tool call index {index}")));
                }
                while result.tool_calls.len() <= index {
                    result.tool_calls.push(ChatToolCall::default());
                }
                let call = &mut result.tool_calls[index];
                if let Some(id) = piece.id.filter(|s| !s.is_empty()) {
                    call.id = id;
                }
                if let Some(kind) = piece.kind.filter(|s| !s.is_empty()) {
                    call.kind = kind;
                }
                if let Some(function) = piece.function {
                    if let Some(name) = function.name.filter(|s| !s.is_empty()) {
                        call.function.name = name;
                    }
                    if let Some(arguments) = function.arguments {
                        size += arguments.len();
                        if size > self.settings.max_answer_bytes {
                            return Err(LlmError::TooLong(self.settings.max_answer_bytes));
                        }
                        call.function.arguments.push_str(&arguments);
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                result.finish_reason = Some(reason);
            }
        }
        // Servers end with `data: [DONE]`; a stream that closes after a finish reason lost
        // nothing, one that closes before it was cut.
        if result.finish_reason.is_some() {
            Ok(result)
        } else {
            Err(LlmError::Truncated(
                "the connection closed without a finish reason or [DONE]".to_owned(),
            ))
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallPiece>,
}

#[derive(Deserialize)]
struct ToolCallPiece {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    function: Option<FunctionPiece>,
}

#[derive(Deserialize)]
struct FunctionPiece {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

fn error_text(error: &Value) -> String {
    let text = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    text.chars().take(300).collect()
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, std::time::SystemTime::now())
}

/// `Retry-After` in either form (RFC 9110 §10.2.3): delay-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`), the wait until then measured against `now` (a date in
/// the past means no wait).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

async fn body_start(response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > 4096 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut start: String = text.chars().take(300).collect();
    if start.len() < text.len() {
        start.push('…');
    }
    start
}

fn chain(error: &reqwest::Error) -> String {
    crate::agent::error_chain(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        // 2015-10-21T07:28:00Z
        let date = UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let now = date - Duration::from_secs(90);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(90))
        );
        // A date already passed: retry at once.
        assert_eq!(
            parse_retry_after(
                "Wed, 21 Oct 2015 07:28:00 GMT",
                date + Duration::from_secs(5)
            ),
            Some(Duration::ZERO)
        );
        for bad in ["soon", "-1", "", "Wed, 32 Oct 2015 07:28:00 GMT"] {
            assert_eq!(parse_retry_after(bad, SystemTime::now()), None, "{bad:?}");
        }
    }
}
