//! The floor server API of the OFC draft, over HTTP.
//!
//! | Route | |
//! |---|---|
//! | `POST /floors` | create a floor; answers its id and join token |
//! | `GET /floors/{id}` | the floor's state |
//! | `DELETE /floors/{id}` | close it (ofc) |
//! | `POST /floors/{id}/agents` | add an agent by its OFC endpoint URL |
//! | `DELETE /floors/{id}/agents/{agent}` | remove an agent |
//! | `POST /floors/{id}/messages` | the user speaks; answers once the first agent is known |
//! | `GET /floors/{id}/messages?since=&limit=` | the conversation |
//! | `GET /floors/{id}/events` | live events, server-sent (ofc) |
//! | `POST /floors/{id}/cancel` | cancel the running turn (ofc) |
//!
//! Seed 000's floor-side MCP endpoints are not served by this server (a request to them is a
//! 404): its floors, created over HTTP, have no furniture. A floor with furniture serves
//! `GET /floors/{id}/mcp/granted` and its pieces as MCP servers with
//! [`crate::furniture::McpEndpoints`]; `POST /floors/{id}/mcp/request` belongs to the
//! `@floor-manager` work.
//!
//! Every route under `/floors/{id}` wants `Authorization: Bearer <join_token>`; a missing or
//! wrong token is a 401. Errors are `{"code", "message"}`; a malformed body is a 400 (not
//! JSON) or a 422 naming the field, never a 5xx.
//!
//! `POST /floors/{id}/agents` takes `{"agent_id": "@code", "endpoint": "http://…"}`, or
//! `{"agent_id": "http://…"}` (the handle is then the `id` of the agent's `/ofc/info`); an
//! optional `activation` overrides the agent's own. The draft's registry lookup is not the
//! runtime's business: hub references are resolved by `ofc run`.
//!
//! **Not a proxy.** Creating a floor wants the server token (`Authorization: Bearer`; `ofc floor
//! serve` prints it, or takes `OFC_FLOOR_SERVER_TOKEN`; `--open` for none). Agent URLs are
//! refused with user info, a query or a fragment (`http://host/admin/creds.json#` would swallow
//! the `/ofc/info` ofc appends) or on a host the server does not call (`AgentHosts`: loopback
//! only when it listens on loopback, else any, or the `--agent-host` list); redirects are never
//! followed. Every failure to add an agent reads the same ("did not answer /ofc/info as an OFC
//! agent"), the cause going to the server log, so a caller cannot map open ports; fields of
//! `/ofc/info` ofc does not know are neither kept nor echoed. On loopback the `Host` header must
//! be `localhost`, `127.0.0.1` or `::1` (421 otherwise: no DNS rebinding). A hosted floor nobody
//! has used for `idle_ttl` (1 h: no request with its join token) and with no turn running is
//! closed by the server's sweeper.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use index_schema::http_url;
use index_schema::wire::{
    self, AddAgentResponse, AddAgentStatus, CreateFloorRequest, CreateFloorResponse, FloorConfig,
    FloorState, MessageList, MessagesQuery, PostMessageRequest, PostMessageResponse, Token,
};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::RwLock;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::agent::{Agent, HttpAgent};
use crate::api::{ApiError, ApiJson, json_body};
use crate::controller::Activation;
use crate::floor::{Floor, FloorAgent, FloorError, FloorEvent, FloorSettings};
use crate::handle::Handle;

/// How a floor server runs.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// The settings every new floor starts from (`config` of `POST /floors` adjusts them).
    pub floor: FloorSettings,
    /// How long an agent being added may take to answer `/ofc/info`.
    pub info_deadline: Duration,
    /// The most floors at once.
    pub max_floors: usize,
    /// When set, `POST /floors` wants `Authorization: Bearer <this>` (`ofc floor serve` sets it
    /// unless `--open`): otherwise anyone who reaches the server makes it call URLs.
    pub create_token: Option<Token>,
    /// Where agents may live.
    pub agent_hosts: AgentHosts,
    /// A floor nobody has used (no request with its join token) for this long is closed,
    /// unless a turn runs on it.
    pub idle_ttl: Duration,
    /// Bounds of the server's connections (count, header/idle and body timeouts).
    pub connections: ofc_net::ConnLimits,
    /// When set, the `Host` header of every request must name one of these hosts (any port):
    /// a server on loopback accepts `localhost`, `127.0.0.1` and `[::1]` only, so a web page
    /// cannot reach it through DNS rebinding.
    pub allowed_host_headers: Option<Vec<String>>,
    /// When set, every floor gets a Switchboard (seed 004) at `<this>/<floor_id>/.switchboard/`
    /// with its MCP server on 127.0.0.1 (the port in its `server_info.json`, the token in its
    /// `auth_token`): agents that work through files or MCP join the floor there.
    pub switchboard_root: Option<std::path::PathBuf>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            floor: FloorSettings::default(),
            info_deadline: Duration::from_secs(5),
            max_floors: 256,
            create_token: None,
            agent_hosts: AgentHosts::Loopback,
            idle_ttl: Duration::from_secs(3600),
            connections: ofc_net::ConnLimits::default(),
            allowed_host_headers: None,
            switchboard_root: None,
        }
    }
}

/// Which hosts a floor server lets agents live on (the hosts it will call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentHosts {
    /// `localhost`, 127.0.0.0/8 and `::1` only (the default on a loopback server).
    Loopback,
    /// These host names or addresses only (compared in lowercase).
    Only(Vec<String>),
    /// Any host.
    Any,
}

impl AgentHosts {
    fn allows(&self, url: &reqwest::Url) -> bool {
        let host = match url.host() {
            Some(h) => h,
            None => return false,
        };
        match self {
            AgentHosts::Any => true,
            AgentHosts::Loopback => http_url::is_loopback(url),
            AgentHosts::Only(list) => {
                let name = match host {
                    url::Host::Domain(d) => d.to_ascii_lowercase(),
                    url::Host::Ipv4(ip) => ip.to_string(),
                    url::Host::Ipv6(ip) => ip.to_string(),
                };
                list.iter().any(|h| {
                    h.trim_start_matches('[')
                        .trim_end_matches(']')
                        .eq_ignore_ascii_case(&name)
                })
            }
        }
    }
}

/// An agent's OFC endpoint, checked: an http(s) URL with a host the server allows, without
/// user info, query or fragment (which could make the paths ofc appends — `/info`,
/// `/respond` — land elsewhere: `http://host/admin/creds.json#`).
fn check_endpoint(text: &str, hosts: &AgentHosts, field: &str) -> Result<String, ApiError> {
    let bad = |why: &str| ApiError::unprocessable("invalid_body", format!("`{field}`: {why}"));
    let url = http_url::parse(text, http_url::Rules::BASE).map_err(|e| {
        bad(match e {
            http_url::HttpUrlError::UserInfo => "an agent URL may not carry user info",
            http_url::HttpUrlError::QueryOrFragment => {
                "an agent URL may not have a query or a fragment"
            }
            _ => "not an http(s) URL",
        })
    })?;
    if !hosts.allows(&url) {
        return Err(bad(
            "this server does not call agents on that host (see `ofc floor serve --agent-host`)",
        ));
    }
    Ok(http_url::normal_form(&url))
}

/// The largest request body.
const MAX_BODY: usize = 1024 * 1024;
/// The most messages one `GET …/messages` returns.
const MAX_PAGE: u32 = 1000;
/// The page size without `limit`.
const DEFAULT_PAGE: u32 = 50;

/// A floor server: its floors and settings. Clone it freely.
#[derive(Debug, Clone)]
pub struct FloorServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: ServerSettings,
    client: reqwest::Client,
    floors: RwLock<HashMap<String, Hosted>>,
}

#[derive(Debug, Clone)]
struct Hosted {
    token: Token,
    floor: Floor,
    config: FloorConfig,
    /// When a request with its join token last came.
    used: Arc<std::sync::Mutex<std::time::Instant>>,
    /// Its Switchboard, with [`ServerSettings::switchboard_root`]; held so that it runs as
    /// long as the floor is hosted.
    switchboard: Option<Arc<HostedSwitchboard>>,
}

/// A floor's Switchboard and its MCP server; both stop when the floor leaves the server.
#[derive(Debug)]
struct HostedSwitchboard {
    sb: Arc<crate::switchboard::Switchboard>,
    served: crate::switchboard::ServedSwitchboard,
}

impl HostedSwitchboard {
    /// Stops it and waits (a few seconds at most) for the delivery under way and for its MCP
    /// server to stop listening.
    async fn close(&self) {
        self.sb.shutdown(Duration::from_secs(5)).await;
        self.served.close(Duration::from_secs(5)).await;
    }
}

impl Drop for HostedSwitchboard {
    fn drop(&mut self) {
        self.sb.stop();
    }
}

/// Opens a floor's Switchboard under `root` and starts it.
async fn host_switchboard(
    root: &std::path::Path,
    floor: &Floor,
    log_dir: Option<&std::path::Path>,
) -> std::io::Result<HostedSwitchboard> {
    let dir = root.join(floor.id());
    std::fs::create_dir_all(&dir)?;
    let settings = crate::switchboard::SwitchboardSettings {
        log: log_dir.map(|d| d.join(format!("{}.switchboard.log", floor.id()))),
        ..crate::switchboard::SwitchboardSettings::default()
    };
    let sb = crate::switchboard::Switchboard::open(&dir, settings)?;
    sb.attach(floor).await?;
    let served = sb.serve().await?;
    Ok(HostedSwitchboard { sb, served })
}

impl FloorServer {
    /// A server without floors.
    pub fn new(settings: ServerSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                client: HttpAgent::default_client(),
                floors: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The HTTP routes.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/floors", post(create_floor))
            .route("/floors/{floor_id}", get(floor_state).delete(close_floor))
            .route("/floors/{floor_id}/agents", post(add_agent))
            .route(
                "/floors/{floor_id}/agents/{agent_id}",
                axum::routing::delete(remove_agent),
            )
            .route(
                "/floors/{floor_id}/messages",
                post(post_message).get(list_messages),
            )
            .route("/floors/{floor_id}/events", get(events))
            .route("/floors/{floor_id}/cancel", post(cancel_turn))
            .fallback(|| async { ApiError::not_found("no such route") })
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                check_host_header,
            ))
            .with_state(self.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then closes every floor.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        // Idle floors are closed as they pass their idle time.
        let sweeper = {
            let server = self.clone();
            let every = (self.inner.settings.idle_ttl / 4)
                .clamp(Duration::from_millis(50), Duration::from_secs(60));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    server.expire_idle().await;
                }
            })
        };
        let _sweeper = AbortOnDrop(sweeper);
        ofc_net::serve(
            listener,
            self.router(),
            self.inner.settings.connections,
            shutdown,
        )
        .await;
        self.close_all().await;
        Ok(())
    }

    /// Closes every floor (stopping their process agents).
    pub async fn close_all(&self) {
        let floors: Vec<Hosted> = self
            .inner
            .floors
            .write()
            .await
            .drain()
            .map(|(_, h)| h)
            .collect();
        futures::future::join_all(floors.iter().map(|h| h.floor.close())).await;
    }

    /// The floor `id` if the request carries its join token.
    async fn authorized(&self, id: &str, headers: &HeaderMap) -> Result<Hosted, ApiError> {
        let hosted = self
            .inner
            .floors
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no floor {id}")))?;
        let presented = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| {
                ApiError::unauthorized("this floor wants `Authorization: Bearer <join_token>`")
            })?
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header is not `Bearer <join_token>`")
            })?;
        if !constant_time_eq(
            presented.trim().as_bytes(),
            hosted.token.expose().as_bytes(),
        ) {
            return Err(ApiError::unauthorized("wrong join token for this floor"));
        }
        if let Ok(mut used) = hosted.used.lock() {
            *used = std::time::Instant::now();
        }
        Ok(hosted)
    }

    /// Closes the floors idle for longer than `idle_ttl` (no request with their join token,
    /// no turn running); how many.
    pub async fn expire_idle(&self) -> usize {
        let ttl = self.inner.settings.idle_ttl;
        let candidates: Vec<(String, Hosted)> = self
            .inner
            .floors
            .read()
            .await
            .iter()
            .filter(|(_, h)| h.used.lock().map(|u| u.elapsed() > ttl).unwrap_or(false))
            .map(|(id, h)| (id.clone(), h.clone()))
            .collect();
        let mut closed = 0;
        for (id, hosted) in candidates {
            let busy = hosted
                .floor
                .snapshot()
                .await
                .map(|s| s.turn.is_some())
                .unwrap_or(false);
            if busy {
                continue;
            }
            if self.inner.floors.write().await.remove(&id).is_some() {
                let _ = hosted.floor.close().await;
                tracing::info!(floor.id = %id, "idle floor closed");
                closed += 1;
            }
        }
        closed
    }
}

/// Refuses requests whose `Host` is not one the server answers to (DNS rebinding).
async fn check_host_header(
    State(server): State<FloorServer>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(allowed) = &server.inner.settings.allowed_host_headers
        && !crate::api::host_is_allowed(request.headers(), allowed)
    {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "wrong_host",
            "this floor server does not answer to that Host",
        )
        .into_response();
    }
    next.run(request).await
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn floor_error(error: FloorError) -> ApiError {
    match error {
        FloorError::Closed => ApiError::not_found("the floor is closed"),
        FloorError::Roster(crate::Error::TurnInProgress) => {
            ApiError::conflict("turn_in_progress", error.to_string())
        }
        FloorError::Roster(crate::Error::DuplicateAgent(_)) => {
            ApiError::conflict("agent_exists", error.to_string())
        }
        FloorError::Roster(_) => ApiError::unprocessable("invalid_agent", error.to_string()),
        FloorError::UnknownAgent(_) | FloorError::UnknownMessage(_) => {
            ApiError::not_found(error.to_string())
        }
        FloorError::Full(_) => ApiError::conflict("floor_full", error.to_string()),
        FloorError::QueueFull(_) => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "queue_full",
            error.to_string(),
        ),
        FloorError::Transcript(_) => ApiError::internal(error),
        FloorError::TooLarge(_) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "message_too_large",
            error.to_string(),
        ),
    }
}

fn new_token() -> Token {
    Token::new(format!(
        "ofc_floor_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    ))
}

async fn create_floor(
    State(server): State<FloorServer>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<CreateFloorRequest>,
) -> Result<Response, ApiError> {
    if let Some(token) = &server.inner.settings.create_token {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(presented.trim().as_bytes(), token.expose().as_bytes()) {
            return Err(ApiError::unauthorized(
                "creating a floor wants `Authorization: Bearer <server token>` (printed by `ofc floor serve`)",
            ));
        }
    }
    let config = request.config.unwrap_or_default();
    let mut settings = server.inner.settings.floor.clone();
    if let Some(max) = config.max_agents {
        if !(1..=256).contains(&max) {
            return Err(ApiError::unprocessable(
                "invalid_body",
                "`config.max_agents`: must be between 1 and 256",
            ));
        }
        settings.max_agents = max as usize;
    }
    if let Some(limit) = config.history_limit {
        if !(1..=10_000).contains(&limit) {
            return Err(ApiError::unprocessable(
                "invalid_body",
                "`config.history_limit`: must be between 1 and 10000",
            ));
        }
        settings.history_limit = limit as usize;
    }
    let config = FloorConfig {
        max_agents: Some(settings.max_agents as u32),
        history_limit: Some(settings.history_limit as u32),
    };
    let mut floors = server.inner.floors.write().await;
    if floors.len() >= server.inner.settings.max_floors {
        return Err(ApiError::conflict(
            "too_many_floors",
            format!("this server hosts {} floors already", floors.len()),
        ));
    }
    let floor_id = format!("floor-{}", uuid::Uuid::new_v4().simple());
    let name = (!request.name.is_empty()).then_some(request.name);
    let log_dir = settings.transcript_dir.clone();
    let floor = Floor::open(floor_id.clone(), name, Vec::new(), settings).map_err(floor_error)?;
    let switchboard = match &server.inner.settings.switchboard_root {
        Some(root) => match host_switchboard(root, &floor, log_dir.as_deref()).await {
            Ok(hosted) => Some(Arc::new(hosted)),
            Err(error) => {
                let _ = floor.close().await;
                return Err(ApiError::internal(format!(
                    "cannot start the Switchboard of {floor_id}: {error}"
                )));
            }
        },
        None => None,
    };
    let token = new_token();
    floors.insert(
        floor_id.clone(),
        Hosted {
            token: token.clone(),
            floor,
            config,
            used: Arc::new(std::sync::Mutex::new(std::time::Instant::now())),
            switchboard,
        },
    );
    tracing::info!(floor.id = %floor_id, "floor created");
    Ok((
        StatusCode::CREATED,
        Json(CreateFloorResponse {
            floor_id,
            join_token: token,
        }),
    )
        .into_response())
}

async fn floor_state(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let snapshot = hosted.floor.snapshot().await.map_err(floor_error)?;
    Ok(Json(FloorState {
        floor_id: snapshot.floor_id,
        name: snapshot.name,
        agents: snapshot
            .agents
            .into_iter()
            .map(|(handle, _, endpoint, info)| wire::FloorAgent {
                agent_id: handle.to_string(),
                endpoint,
                info,
            })
            .collect(),
        workstations: Vec::new(),
        config: hosted.config,
    })
    .into_response())
}

async fn close_floor(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    server.inner.floors.write().await.remove(&floor_id);
    // Its Switchboard stops first (a delivery under way may wait for the floor), and no
    // longer answers once the floor's close is answered.
    if let Some(sb) = &hosted.switchboard {
        sb.close().await;
    }
    hosted.floor.close().await.map_err(floor_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /floors/{id}/agents`: the draft's `agent_id`, plus ofc's `endpoint` and
/// `activation`.
#[derive(Debug, Deserialize)]
struct AddAgentBody {
    agent_id: String,
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    activation: Option<wire::Activation>,
}

fn is_url(text: &str) -> bool {
    text.starts_with("http://") || text.starts_with("https://")
}

async fn add_agent(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let body: AddAgentBody = json_body(&headers, &body)?;
    let (named, endpoint) = match body.endpoint {
        Some(endpoint) => (Some(body.agent_id), endpoint),
        None if is_url(&body.agent_id) => (None, body.agent_id),
        None => {
            return Err(ApiError::unprocessable(
                "invalid_body",
                format!(
                    "`endpoint`: missing; agent {} must be given by its OFC endpoint URL \
                     (hub references are resolved by `ofc run`)",
                    body.agent_id
                ),
            ));
        }
    };
    let field = if named.is_some() {
        "endpoint"
    } else {
        "agent_id"
    };
    let endpoint = check_endpoint(&endpoint, &server.inner.settings.agent_hosts, field)?;
    let named = match named {
        Some(name) => Some(
            Handle::new(&name)
                .map_err(|e| ApiError::unprocessable("invalid_body", format!("`agent_id`: {e}")))?,
        ),
        None => None,
    };
    let agent = HttpAgent::new(endpoint.clone(), server.inner.client.clone());
    // One answer for every failure (refused, timed out, not JSON, an HTTP error): details would
    // tell a caller which ports are open. They go to the server's log.
    let mut info =
        match tokio::time::timeout(server.inner.settings.info_deadline, agent.info()).await {
            Ok(Ok(info)) => info,
            outcome => {
                let detail = match outcome {
                    Ok(Err(error)) => error.to_string(),
                    _ => "timed out".to_owned(),
                };
                tracing::info!(floor.id = %floor_id, %endpoint, %detail, "agent not added");
                return Err(ApiError::unprocessable(
                    "agent_unreachable",
                    format!("{endpoint} did not answer /ofc/info as an OFC agent"),
                ));
            }
        };
    // What the agent says beyond the known fields is neither kept nor echoed.
    info.extra.clear();
    let handle = match named {
        Some(handle) => handle,
        None => {
            let id = info.id.as_deref().ok_or_else(|| {
                ApiError::unprocessable(
                    "invalid_body",
                    format!("`agent_id`: {endpoint} gives no `id` in /ofc/info; name the agent with `agent_id` and give the URL as `endpoint`"),
                )
            })?;
            Handle::new(id).map_err(|e| {
                ApiError::unprocessable(
                    "invalid_agent",
                    format!("the `id` of {endpoint}/ofc/info: {e}"),
                )
            })?
        }
    };
    let activation = match body.activation.as_ref().or(info.activation.as_ref()) {
        Some(wire::Activation::Always) => Activation::Always,
        _ => Activation::Mention,
    };
    let agent: Arc<dyn Agent> = Arc::new(agent);
    hosted
        .floor
        .add_agent(FloorAgent {
            handle: handle.clone(),
            activation,
            agent,
            endpoint: Some(endpoint.clone()),
            info: Some(info.clone()),
        })
        .await
        .map_err(floor_error)?;
    tracing::info!(floor.id = %floor_id, agent = %handle, %endpoint, "agent added");
    Ok((
        StatusCode::CREATED,
        Json(AddAgentResponse {
            agent_id: handle.to_string(),
            endpoint,
            status: AddAgentStatus::Added,
            info: Some(info),
        }),
    )
        .into_response())
}

async fn remove_agent(
    State(server): State<FloorServer>,
    Path((floor_id, agent_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let handle = Handle::new(&agent_id)
        .map_err(|_| ApiError::not_found(format!("{agent_id} is not on the floor")))?;
    hosted
        .floor
        .remove_agent(handle)
        .await
        .map_err(floor_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn post_message(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let body: PostMessageRequest = json_body(&headers, &body)?;
    if !Handle::new(&body.from).is_ok_and(|h| h.is_user()) {
        return Err(ApiError::unprocessable(
            "invalid_body",
            format!(
                "`from`: only @user posts messages (got {:?}); agents answer /ofc/respond",
                body.from
            ),
        ));
    }
    if body.content.trim().is_empty() {
        return Err(ApiError::unprocessable("invalid_body", "`content`: empty"));
    }
    let receipt = hosted.floor.post(body.content).await.map_err(floor_error)?;
    Ok((
        StatusCode::CREATED,
        Json(PostMessageResponse {
            message_id: receipt.message_id,
            next_agent: receipt.next_agent.map(|h| h.to_string()),
        }),
    )
        .into_response())
}

async fn list_messages(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<MessagesQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let Query(query) = query.map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("`limit`: must be between 1 and {MAX_PAGE}"),
        ));
    }
    let messages = hosted
        .floor
        .messages(query.since, limit as usize)
        .await
        .map_err(floor_error)?;
    Ok(Json(MessageList { messages }).into_response())
}

async fn cancel_turn(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let cancelled = hosted.floor.cancel_turn().await.map_err(floor_error)?;
    Ok(Json(serde_json::json!({ "cancelled": cancelled })).into_response())
}

async fn events(
    State(server): State<FloorServer>,
    Path(floor_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosted = server.authorized(&floor_id, &headers).await?;
    let stream = BroadcastStream::new(hosted.floor.subscribe())
        .scan(false, |closed, item| {
            let out = if *closed {
                None
            } else {
                Some(match item {
                    Ok(event) => {
                        *closed = matches!(event, FloorEvent::Closed);
                        let data = serde_json::to_string(&event).unwrap_or_default();
                        SseEvent::default().event(event.name()).data(data)
                    }
                    Err(BroadcastStreamRecvError::Lagged(missed)) => SseEvent::default()
                        .event("lagged")
                        .data(serde_json::json!({ "missed": missed }).to_string()),
                })
            };
            futures::future::ready(out)
        })
        .map(Ok::<_, Infallible>);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
