//! The floor's MCP endpoints (seed 000), for agents that are not in process: each piece of
//! furniture is an MCP server over streamable HTTP at `/floors/{floor_id}/mcp/{name}`, and
//! `GET /floors/{floor_id}/mcp/granted` lists what an agent holds. Every request carries
//! `Authorization: Bearer <agent token>` (seed 000, "Floor Server Authentication"); the token
//! names the agent, whose [`Guard`] answers: `tools/list` shows the tools it holds, and
//! `tools/call` of any other is a tool error with the refusal. A missing or unknown token is a
//! 401, an unknown floor or furniture a 404.
//!
//! The draft's `…/mcp/<name>/execute` is covered by MCP's own `tools/call` on the same URL.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use index_schema::wire::{GrantedMcp, McpGrantedResponse};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::{FloorFurniture, Guard};
use crate::llm::Toolbox;

/// The agent a request's token names, put in the request's extensions by the auth layer.
#[derive(Debug, Clone)]
struct Caller(String);

/// token → its agent, shared by the endpoints and whoever issues tokens while they serve.
type Tokens = Arc<std::sync::RwLock<HashMap<String, TokenHolder>>>;

/// Whom a token was issued to.
#[derive(Debug, Clone)]
struct TokenHolder {
    /// The agent's handle.
    agent: String,
    /// The process group the agent runs in, once it is started: the token is then taken only
    /// on connections from a process of that group (see [`super::peer`]).
    group: Option<u32>,
}

fn issue_into(tokens: &Tokens, agent: &str) -> String {
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    tokens.write().unwrap_or_else(|e| e.into_inner()).insert(
        token.clone(),
        TokenHolder {
            agent: agent.to_owned(),
            group: None,
        },
    );
    token
}

fn path_of(floor_id: &str, name: &str) -> String {
    format!("/floors/{floor_id}/mcp/{name}")
}

/// Most connections the floor's MCP endpoints serve at once.
pub const MAX_ENDPOINT_CONNECTIONS: usize = 256;

/// The MCP endpoints of one floor.
#[derive(Debug, Clone)]
pub struct McpEndpoints {
    floor: Arc<FloorFurniture>,
    floor_id: String,
    tokens: Tokens,
    /// The address served on, which the check of a bound token needs.
    local: Option<std::net::SocketAddr>,
}

impl McpEndpoints {
    /// The endpoints of `floor`, whose id is `floor_id` in the paths; no agent has a token yet.
    pub fn new(floor: Arc<FloorFurniture>, floor_id: impl Into<String>) -> Self {
        Self {
            floor,
            floor_id: floor_id.into(),
            tokens: Tokens::default(),
            local: None,
        }
    }

    /// A new token for `agent` (32 random bytes, hex), to be given to it with its grants.
    pub fn issue(&mut self, agent: &str) -> String {
        issue_into(&self.tokens, agent)
    }

    /// The path of a piece (`/floors/{id}/mcp/{name}`), to join to the server's base URL.
    pub fn path(&self, name: &str) -> String {
        path_of(&self.floor_id, name)
    }

    /// Serves the routes on 127.0.0.1, on a port of the system's choosing, until the answer
    /// is dropped.
    pub async fn serve_loopback(mut self) -> std::io::Result<ServedEndpoints> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let local = listener.local_addr()?;
        self.local = Some(local);
        let base = format!("http://{local}");
        let secrets = SecretsDir::create(&self.floor_id)?;
        let (tokens, floor_id) = (Arc::clone(&self.tokens), self.floor_id.clone());
        let router = self.router();
        // The connection layer of ofc's servers: a cap (the floor's agents need a few
        // connections each, not thousands), header and body deadlines that end idle and slow
        // clients, and answers cut when their client stops reading.
        let limits = ofc_net::ConnLimits::new(
            MAX_ENDPOINT_CONNECTIONS,
            std::time::Duration::from_secs(10),
            std::time::Duration::from_secs(30),
        );
        let task = tokio::spawn(ofc_net::serve(
            listener,
            router,
            limits,
            std::future::pending(),
        ));
        Ok(ServedEndpoints {
            base,
            floor_id,
            tokens,
            secrets,
            task,
        })
    }

    /// The routes; serve them on loopback (the MCP service accepts `localhost`, `127.0.0.1`
    /// and `::1` as `Host` only).
    pub fn router(self) -> Router {
        let mut router = Router::new().route(
            &format!("/floors/{}/mcp/granted", self.floor_id),
            get(granted),
        );
        for piece in self.floor.pieces() {
            let name = piece.name().to_owned();
            let floor = self.floor.clone();
            let service = StreamableHttpService::new(
                move || {
                    Ok(FurnitureServer {
                        floor: floor.clone(),
                        name: name.clone(),
                    })
                },
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            router = router.nest_service(&self.path(piece.name()), service);
        }
        let state = Arc::new(self);
        router
            .fallback(|| async { (StatusCode::NOT_FOUND, "no such floor or furniture") })
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                authenticate,
            ))
            .with_state(state)
    }
}

/// The floor's MCP endpoints being served; they stop when this is dropped.
#[derive(Debug)]
pub struct ServedEndpoints {
    /// `http://127.0.0.1:PORT`, to which [`McpEndpoints::path`] is joined.
    pub base: String,
    floor_id: String,
    tokens: Tokens,
    secrets: SecretsDir,
    task: tokio::task::JoinHandle<()>,
}

/// A private directory (0700) for the agents' token files, removed with the endpoints.
#[derive(Debug)]
struct SecretsDir {
    path: std::path::PathBuf,
}

impl SecretsDir {
    fn create(floor_id: &str) -> std::io::Result<Self> {
        let path = std::env::temp_dir().join(format!(
            "ofc-floor-{}-{}",
            floor_id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>(),
            uuid::Uuid::new_v4().simple()
        ));
        private_dir(&path)?;
        Ok(Self { path })
    }
}

impl Drop for SecretsDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Creates `dir` (and its parents) and makes it 0700.
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(())
}

impl ServedEndpoints {
    /// A new token for `agent`, valid at once: for an agent that joins the running floor.
    pub fn issue(&self, agent: &str) -> String {
        issue_into(&self.tokens, agent)
    }

    /// Withdraws every token of `agent` (one that failed to start, or left).
    pub fn revoke(&self, agent: &str) {
        self.tokens
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, h| h.agent != agent);
    }

    /// Binds `token` to the process group its agent runs in: from then on, it is accepted
    /// only on connections from a process of that group, so a token another local process
    /// reads (its environment, its files) cannot be used from there.
    pub fn bind(&self, token: &str, process_group: u32) {
        if let Some(h) = self
            .tokens
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(token)
        {
            h.group = Some(process_group);
        }
    }

    /// Writes `token` for `agent` into a file only the owner may read, in a directory of its
    /// own (0700) under the endpoints' private directory; the agent is told the file's path
    /// (`OFC_AGENT_TOKEN_FILE`) instead of the token, which would be readable in its
    /// environment (`/proc/<pid>/environ`).
    pub fn token_file(&self, agent: &str, token: &str) -> std::io::Result<std::path::PathBuf> {
        let dir = self.secrets.path.join(agent.trim_start_matches('@'));
        private_dir(&dir)?;
        let path = dir.join("token");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        std::io::Write::write_all(&mut options.open(&path)?, token.as_bytes())?;
        Ok(path)
    }

    /// The URL of a piece (the endpoints' base with `name` empty).
    pub fn url(&self, name: &str) -> String {
        format!("{}{}", self.base, path_of(&self.floor_id, name))
    }
}

impl Drop for ServedEndpoints {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn authenticate(
    State(endpoints): State<Arc<McpEndpoints>>,
    mut request: Request,
    next: Next,
) -> Response {
    let holder = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| {
            endpoints
                .tokens
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(t.trim())
                .cloned()
        });
    match holder {
        Some(holder) => {
            if let Some(group) = holder.group {
                let peer = request
                    .extensions()
                    .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                    .map(|c| c.0);
                let from_agent = match (endpoints.local, peer) {
                    (Some(server), Some(peer)) => tokio::task::spawn_blocking(move || {
                        super::peer::connection_from_group(server, peer, group)
                    })
                    .await
                    .unwrap_or(false),
                    _ => false,
                };
                if !from_agent {
                    tracing::warn!(
                        agent = %holder.agent,
                        "an agent's token was sent from a process outside the agent's own; refused"
                    );
                    return (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Bearer")],
                        "this agent token belongs to another process: tokens are taken only \
                         from the processes of the agent they were issued to",
                    )
                        .into_response();
                }
            }
            request.extensions_mut().insert(Caller(holder.agent));
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "an agent token is required (Authorization: Bearer <token>)",
        )
            .into_response(),
    }
}

async fn granted(
    State(endpoints): State<Arc<McpEndpoints>>,
    axum::Extension(caller): axum::Extension<Caller>,
) -> Json<McpGrantedResponse> {
    let agent = &caller.0;
    let grants = endpoints.floor.grants();
    let granted_mcps = endpoints
        .floor
        .pieces()
        .iter()
        .filter_map(|p| {
            let classes = grants.classes(agent, p.name());
            (!classes.is_empty()).then(|| GrantedMcp {
                name: p.name().to_owned(),
                url: endpoints.path(p.name()),
                permissions: Some(classes.iter().map(|c| c.permission()).collect()),
            })
        })
        .collect();
    Json(McpGrantedResponse {
        floor_id: endpoints.floor_id.clone(),
        agent_id: agent.clone(),
        granted_mcps,
    })
}

/// One piece of furniture as an MCP server, answering as the calling agent's guard.
#[derive(Debug, Clone)]
struct FurnitureServer {
    floor: Arc<FloorFurniture>,
    name: String,
}

impl FurnitureServer {
    fn guard(&self, context: &RequestContext<RoleServer>) -> Result<Guard, ErrorData> {
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .ok_or_else(|| ErrorData::invalid_request("no agent token on the request", None))?;
        self.floor
            .guard(&caller.0, &self.name)
            .ok_or_else(|| ErrorData::invalid_request("no such furniture", None))
    }
}

impl ServerHandler for FurnitureServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let guard = self.guard(&context)?;
        let tools = guard
            .tools()
            .await
            .map_err(|e| ErrorData::internal_error(e.0, None))?
            .into_iter()
            .map(|t| {
                let schema = match t.parameters {
                    Value::Object(o) => o,
                    _ => serde_json::Map::new(),
                };
                Tool::new(t.name, t.description, schema)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let guard = self.guard(&context)?;
        let result = match guard
            .call(&request.name, request.arguments.unwrap_or_default())
            .await
        {
            Ok(Value::String(s)) => CallToolResult::success(vec![ContentBlock::text(s)]),
            Ok(other) => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.0)]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}
