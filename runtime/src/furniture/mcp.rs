//! An external MCP server as furniture, through the official Rust SDK (`rmcp`): started as a
//! command and spoken to over its stdin/stdout, or reached at a URL over streamable HTTP.
//! The tools are listed once, when it starts; calls go to `tools/call`.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Map, Value};

use super::oauth::{Authorizer, CONSENT_WAIT, Consent, OAuthClient, Outcome};
use super::{FurnitureError, FurnitureSettings, FurnitureTool, Hints, classify};
use crate::llm::{ToolError, ToolSpec, Toolbox};

/// How much of a server's error output is kept for error messages.
const STDERR_TAIL: usize = 4096;
/// How long a server may take to exit when the floor closes before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// A connected MCP server.
pub struct McpToolbox {
    name: String,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    catalog: Vec<FurnitureTool>,
    stderr: Arc<Mutex<String>>,
    oauth: Option<Arc<Authorizer>>,
}

impl fmt::Debug for McpToolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolbox")
            .field("name", &self.name)
            .field("tools", &self.catalog.len())
            .finish_non_exhaustive()
    }
}

impl McpToolbox {
    /// Starts `command args…` (in `settings.working_dir`, in its own process group) and
    /// speaks MCP over its stdin/stdout; its stderr is kept for error messages and logged.
    pub async fn stdio(
        name: &str,
        command: &str,
        args: &[String],
        settings: &FurnitureSettings,
    ) -> Result<McpToolbox, FurnitureError> {
        let mut cmd = tokio::process::Command::new(command);
        for k in crate::SECRET_ENV {
            cmd.env_remove(k);
        }
        cmd.args(args)
            .envs(settings.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .kill_on_drop(true);
        if let Some(dir) = &settings.working_dir {
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        cmd.process_group(0);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|source| FurnitureError::Spawn {
                name: name.to_owned(),
                command: command.to_owned(),
                source,
            })?;
        if let (Some(hook), Some(pid)) = (&settings.on_spawn, transport.id()) {
            (hook.0)(pid);
        }
        let tail = Arc::new(Mutex::new(String::new()));
        let mut reader = None;
        if let Some(stderr) = stderr {
            let tail = tail.clone();
            let name = name.to_owned();
            let mut log = match &settings.stderr_log {
                Some(path) => tokio::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .await
                    .ok(),
                None => None,
            };
            reader = Some(tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let mut lines = crate::lines::BoundedLines::new(stderr, crate::lines::MAX_LINE);
                while let Some(line) = lines.next_line().await {
                    tracing::debug!(furniture = %name, "{line}");
                    // tokio's File buffers: flush each line so that the log is complete
                    // when the server's failure is reported.
                    if let Some(file) = &mut log {
                        let entry = format!("[furniture {name}] {line}\n");
                        if file.write_all(entry.as_bytes()).await.is_err()
                            || file.flush().await.is_err()
                        {
                            log = None;
                        }
                    }
                    let mut t = lock(&tail);
                    t.push_str(&line);
                    t.push('\n');
                    if t.len() > STDERR_TAIL {
                        let mut cut = t.len() - STDERR_TAIL;
                        while !t.is_char_boundary(cut) {
                            cut += 1;
                        }
                        t.drain(..cut);
                    }
                }
            }));
        }
        let what = format!("`{command}`");
        Self::connect(name, &what, ().serve(transport), tail, reader, settings).await
    }

    /// Connects to an MCP server at `url` over streamable HTTP.
    pub async fn http(
        name: &str,
        url: &str,
        settings: &FurnitureSettings,
    ) -> Result<McpToolbox, FurnitureError> {
        Self::http_with_token(name, url, None, settings).await
    }

    /// [`McpToolbox::http`], sending `headers` with every request (the blueprint's `headers`;
    /// a name or value HTTP cannot carry is a configuration error naming the header, never its
    /// value), and with `oauth`, the bearer token it obtains (see [`super::oauth`]).
    pub async fn http_with_headers<'h>(
        name: &str,
        url: &str,
        headers: impl IntoIterator<Item = (&'h String, &'h String)>,
        oauth: Option<&index_schema::blueprint::OAuth>,
        settings: &FurnitureSettings,
    ) -> Result<McpToolbox, FurnitureError> {
        let mut custom = std::collections::HashMap::new();
        for (key, value) in headers {
            let bad = |why: &str| FurnitureError::Config {
                name: name.to_owned(),
                message: format!("header `{key}`: {why}"),
            };
            let key = axum::http::HeaderName::from_bytes(key.as_bytes())
                .map_err(|_| bad("not a valid header name"))?;
            let mut value = axum::http::HeaderValue::from_str(value)
                .map_err(|_| bad("its value cannot be sent in a header"))?;
            value.set_sensitive(true);
            custom.insert(key, value);
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        config.custom_headers = custom;
        let what = format!("the MCP server at {url}");
        let tail = Arc::new(Mutex::new(String::new()));
        let Some(oauth) = oauth else {
            let transport = StreamableHttpClientTransport::from_config(config);
            return Self::connect(name, &what, ().serve(transport), tail, None, settings).await;
        };
        let auth = Arc::new(Authorizer::new(name, url, oauth, &settings.oauth).map_err(
            |message| FurnitureError::Config {
                name: name.to_owned(),
                message,
            },
        )?);
        // rmcp's own client, built as its default one is but following no redirect: a
        // bearer token goes to the URL the blueprint names and nowhere else.
        let inner = reqwest_mcp::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest_mcp::redirect::Policy::none())
            .build()
            .map_err(|e| FurnitureError::Config {
                name: name.to_owned(),
                message: format!("cannot make an HTTP client: {e}"),
            })?;
        let client = OAuthClient {
            inner,
            auth: auth.clone(),
        };
        let transport = StreamableHttpClientTransport::with_client(client, config);
        // A person may be asked to consent during the handshake: they get the consent's time
        // on top of the server's.
        let mut settings = settings.clone();
        if oauth.grant == index_schema::blueprint::Grant::AuthorizationCode
            && settings.oauth.consent != Consent::Nobody
        {
            settings.start_deadline += CONSENT_WAIT;
        }
        let mut toolbox = Self::connect(name, &what, ().serve(transport), tail, None, &settings)
            .await
            .map_err(|e| match auth.failure() {
                // What went wrong getting the token, rather than the transport's wrapping.
                Some(message) => FurnitureError::Mcp {
                    name: name.to_owned(),
                    message,
                },
                None => e,
            })?;
        toolbox.oauth = Some(auth);
        Ok(toolbox)
    }

    /// For a furniture with `oauth`: whether a person consented while it connected, and where
    /// its token is kept.
    pub fn oauth_outcome(&self) -> Option<Outcome> {
        self.oauth.as_ref().map(|a| a.outcome())
    }

    /// [`McpToolbox::http`], sending `Authorization: Bearer <token>` when a token is given (a
    /// floor's MCP endpoints want the agent's).
    pub async fn http_with_token(
        name: &str,
        url: &str,
        token: Option<&str>,
        settings: &FurnitureSettings,
    ) -> Result<McpToolbox, FurnitureError> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let what = format!("the MCP server at {url}");
        let tail = Arc::new(Mutex::new(String::new()));
        Self::connect(name, &what, ().serve(transport), tail, None, settings).await
    }

    async fn connect<F, E>(
        name: &str,
        what: &str,
        handshake: F,
        stderr: Arc<Mutex<String>>,
        mut reader: Option<tokio::task::JoinHandle<()>>,
        settings: &FurnitureSettings,
    ) -> Result<McpToolbox, FurnitureError>
    where
        F: Future<Output = Result<RunningService<RoleClient, ()>, E>>,
        E: fmt::Display,
    {
        let deadline = settings.start_deadline;
        let started: Result<_, String> = async {
            let service = match tokio::time::timeout(deadline, handshake).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(format!("{what}: the MCP handshake failed: {e}")),
                Err(_) => {
                    return Err(format!(
                        "{what} did not complete the MCP handshake within {deadline:?}"
                    ));
                }
            };
            let peer = service.peer().clone();
            match tokio::time::timeout(deadline, peer.list_all_tools()).await {
                Ok(Ok(tools)) => Ok((service, peer, tools)),
                Ok(Err(e)) => {
                    let _ = service.cancel().await;
                    Err(format!("{what}: listing its tools failed: {e}"))
                }
                Err(_) => {
                    let _ = service.cancel().await;
                    Err(format!("{what} did not list its tools within {deadline:?}"))
                }
            }
        }
        .await;
        let (service, peer, tools) = match started {
            Ok(s) => s,
            Err(message) => {
                // A server that failed has usually exited: let its last words arrive.
                if let Some(reader) = reader.as_mut() {
                    let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
                }
                let tail = lock(&stderr).trim().to_owned();
                return Err(FurnitureError::Mcp {
                    name: name.to_owned(),
                    message: if tail.is_empty() {
                        message
                    } else {
                        format!("{message}; its error output:\n{tail}")
                    },
                });
            }
        };
        Ok(McpToolbox {
            name: name.to_owned(),
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            catalog: tools.iter().map(furniture_tool).collect(),
            stderr,
            oauth: None,
        })
    }

    /// The tools listed at start, with their classes.
    pub fn catalog(&self) -> &[FurnitureTool] {
        &self.catalog
    }

    /// Closes the connection; a child process gets `SHUTDOWN_GRACE` to exit, then is
    /// killed.
    pub async fn shutdown(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(SHUTDOWN_GRACE).await;
        }
    }
}

fn furniture_tool(tool: &Tool) -> FurnitureTool {
    let hints = tool
        .annotations
        .as_ref()
        .map(|a| Hints {
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
        })
        .unwrap_or_default();
    FurnitureTool {
        spec: ToolSpec {
            name: tool.name.to_string(),
            description: tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_owned(),
            parameters: Value::Object((*tool.input_schema).clone()),
        },
        class: classify(hints),
    }
}

/// What the model is shown of a tool result: its text blocks joined (other blocks named), or
/// the structured content when there is no text.
fn result_value(result: CallToolResult) -> Result<Value, ToolError> {
    let mut parts = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => format!("[image: {}]", i.mime_type),
            ContentBlock::Audio(a) => format!("[audio: {}]", a.mime_type),
            ContentBlock::Resource(_) => "[embedded resource]".to_owned(),
            ContentBlock::ResourceLink(r) => format!("[resource: {}]", r.uri),
            _ => "[content of a kind ofc does not show]".to_owned(),
        });
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError(if text.is_empty() {
            "the tool reported an error without a message".to_owned()
        } else {
            text
        }));
    }
    Ok(match result.structured_content {
        Some(structured) if text.is_empty() => structured,
        _ => Value::String(text),
    })
}

#[async_trait]
impl Toolbox for McpToolbox {
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(self.catalog.iter().map(|t| t.spec.clone()).collect())
    }

    async fn call(&self, tool: &str, arguments: Map<String, Value>) -> Result<Value, ToolError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        match self.peer.call_tool(params).await {
            Ok(result) => result_value(result),
            Err(e) => {
                let tail = lock(&self.stderr).trim().to_owned();
                let mut text = format!("the MCP server `{}` failed the call: {e}", self.name);
                if !tail.is_empty() {
                    let start = tail.len().saturating_sub(500);
                    let start = (start..=tail.len())
                        .find(|i| tail.is_char_boundary(*i))
                        .unwrap_or(tail.len());
                    text.push_str("; its last error output: ");
                    text.push_str(&tail[start..]);
                }
                Err(ToolError(text))
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
