//! The session server's JSON routes (the events are in [`super::sse`]).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::{CallerExt, Live, OpenError, SessionServer, Sessions, close_live, new_token};
use crate::api::{ApiError, ApiJson, ErrorBody, NoBody, NoQuery};
use crate::floor::FloorError;
use crate::llm::Toolbox;
use crate::session::{SessionError, SessionId};

/// A session as listed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SessionSummary {
    /// Its id (a UUID).
    pub id: String,
    /// Whether a floor runs it on this server now.
    pub live: bool,
    /// When it was created, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The time of its newest event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<String>,
    /// How many events it holds.
    pub event_count: usize,
    /// The blueprint's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blueprint: Option<String>,
}

/// `GET /api/v1/sessions`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SessionList {
    /// The project's sessions, the most recently active first.
    pub sessions: Vec<SessionSummary>,
}

/// A session put on a floor: its id and its token.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OpenedSession {
    /// The session.
    pub id: String,
    /// Its token: opens this session's routes and no other's. Ends with the session's floor.
    pub token: String,
    /// The `seq` of its newest event (a watcher resumes after it).
    pub last_seq: u64,
}

/// `GET /api/v1/sessions/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SessionView {
    /// The session.
    pub id: String,
    /// Whether a floor runs it on this server now.
    pub live: bool,
    /// The `seq` of its newest event.
    pub last_seq: u64,
    /// When it was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The blueprint's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blueprint: Option<String>,
    /// The agents on its floor (live sessions).
    pub agents: Vec<String>,
    /// Whether a turn runs (live sessions).
    pub turn_running: bool,
    /// How many event subscribers it has.
    pub subscribers: usize,
}

/// `POST /api/v1/sessions/{id}/messages`: the user speaks.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// What the user says.
    pub content: String,
}

/// The message stored.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PostedMessage {
    /// Its id.
    pub message_id: String,
    /// The first agent woken for it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_agent: Option<String>,
    /// Its place in the queue, when it waits for the running turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued: Option<usize>,
}

/// `POST …/cancel`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CancelResponse {
    /// Whether a turn was running (and is now cancelled).
    pub cancelled: bool,
}

/// `POST …/close`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CloseResponse {
    /// The `seq` of its last event.
    pub last_seq: u64,
}

/// `POST …/furniture/{name}/call`: a tool call made as `agent`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallRequest {
    /// The agent the call is made as (`@planner`): its grants decide.
    pub agent: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub args: Map<String, Value>,
}

/// The tool's answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CallResponse {
    /// What the tool answered.
    #[schema(value_type = Object)]
    pub result: Value,
}

fn parse_id(text: &str) -> Result<SessionId, ApiError> {
    SessionId::parse(text).map_err(|e| ApiError::bad_request("invalid_session_id", e.to_string()))
}

/// A store error as an answer; another project's session reads as a missing one.
pub(super) fn session_error(e: SessionError) -> ApiError {
    match e {
        SessionError::NotFound { id, .. } | SessionError::Foreign { id, .. } => {
            ApiError::not_found(format!("no session {id}"))
        }
        SessionError::BadId(_) => ApiError::bad_request("invalid_session_id", e.to_string()),
        SessionError::Busy(_) => ApiError::conflict("session_busy", e.to_string()),
        SessionError::Exists(_) => ApiError::conflict("session_exists", e.to_string()),
        SessionError::Io(_) => ApiError::internal(e),
    }
}

fn floor_error(e: FloorError) -> ApiError {
    match e {
        FloorError::Closed => ApiError::conflict("session_closed", "the session's floor is closed"),
        FloorError::QueueFull(_) => {
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, "queue_full", e.to_string())
        }
        FloorError::TooLarge(_) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "message_too_large",
            e.to_string(),
        ),
        other => ApiError::internal(other),
    }
}

fn not_live(id: &SessionId) -> ApiError {
    ApiError::conflict(
        "session_not_live",
        format!(
            "session {id} is not on a floor: resume it first (`POST /api/v1/sessions/{id}/resume`)"
        ),
    )
}

/// Lists the project's sessions.
#[utoipa::path(get, path = "/api/v1/sessions", tag = "sessions",
    security(("bearer" = [])),
    responses(
        (status = 200, body = SessionList),
        (status = 400, description = "a query string, or a body", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
    ))]
pub async fn list_sessions(
    State(server): State<SessionServer>,
    caller: CallerExt,
    _: NoQuery,
    _: NoBody,
) -> Result<Response, ApiError> {
    caller.server_only()?;
    let store = server.inner.store.clone();
    let infos = tokio::task::spawn_blocking(move || store.list())
        .await
        .map_err(ApiError::internal)?
        .map_err(session_error)?;
    let live = &server.sessions().live;
    let sessions = infos
        .into_iter()
        .map(|i| SessionSummary {
            live: live.contains_key(&i.id),
            id: i.id.to_string(),
            created_at: i.created_at,
            last_activity: i.last_activity,
            event_count: i.event_count,
            blueprint: i.blueprint,
        })
        .collect();
    Ok(Json(SessionList { sessions }).into_response())
}

/// A place among the live sessions, held while a session is put on a floor (outside the
/// lock, so that opening one holds up no request to another); given back when dropped,
/// unless the session went live.
struct Reservation<'a> {
    server: &'a SessionServer,
    resume: Option<SessionId>,
    held: bool,
}

impl Reservation<'_> {
    fn release(&mut self, sessions: &mut Sessions) {
        if std::mem::take(&mut self.held) {
            sessions.starting -= 1;
            if let Some(id) = &self.resume {
                sessions.resuming.remove(id);
            }
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.held {
            let server = self.server;
            self.release(&mut server.sessions());
        }
    }
}

/// Puts a session on a floor under the bound, and gives it a token.
async fn open(server: &SessionServer, resume: Option<SessionId>) -> Result<Response, ApiError> {
    if let Some(id) = &resume {
        // None, or another project's: a 404 whatever else holds.
        let store = server.inner.store.clone();
        let read_id = id.clone();
        tokio::task::spawn_blocking(move || store.read(&read_id))
            .await
            .map_err(ApiError::internal)?
            .map_err(session_error)?;
    }
    let mut reservation = {
        let mut sessions = server.sessions();
        if sessions.stopped {
            return Err(stopping());
        }
        if let Some(id) = &resume {
            if let Some(l) = sessions.live.get(id) {
                return Ok(Json(OpenedSession {
                    id: id.to_string(),
                    token: l.token.clone(),
                    last_seq: l.feed.last_seq(),
                })
                .into_response());
            }
            if sessions.resuming.contains(id) {
                return Err(ApiError::conflict(
                    "session_starting",
                    format!(
                        "session {id} is being resumed by another request: ask again once it is live"
                    ),
                ));
            }
        }
        let max = server.inner.settings.max_live_sessions;
        if sessions.live.len() + sessions.starting >= max {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_sessions",
                format!("{max} sessions are live on this server, its limit: close one first"),
            ));
        }
        sessions.starting += 1;
        if let Some(id) = &resume {
            sessions.resuming.insert(id.clone());
        }
        Reservation {
            server,
            resume: resume.clone(),
            held: true,
        }
    };
    let hosted = server
        .inner
        .host
        .open(resume.as_ref())
        .await
        .map_err(|e| match e {
            OpenError::Session(e) => session_error(e),
            OpenError::Start(why) => ApiError::new(
                StatusCode::BAD_GATEWAY,
                "floor_not_started",
                format!("the session's floor did not start: {why}"),
            ),
        })?;
    let id = hosted.live.id().clone();
    let feed = hosted.live.feed();
    let token = new_token("session");
    let entry = Arc::new(Live {
        id: id.clone(),
        token: token.clone(),
        hosted,
        feed,
        subscribers: AtomicUsize::new(0),
    });
    let last_seq = entry.feed.last_seq();
    let went_live = {
        let mut sessions = server.sessions();
        reservation.release(&mut sessions);
        if !sessions.stopped {
            sessions.live.insert(id.clone(), Arc::clone(&entry));
            server
                .inner
                .tokens
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(token.clone(), id.clone());
        }
        !sessions.stopped
    };
    if !went_live {
        // The server stopped while the floor started: it closes with the others.
        close_live(&entry).await;
        return Err(stopping());
    }
    tracing::info!(session = %id, resumed = resume.is_some(), "session live");
    let status = if resume.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        Json(OpenedSession {
            id: id.to_string(),
            token,
            last_seq,
        }),
    )
        .into_response())
}

fn stopping() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_stopping",
        "this server is stopping",
    )
}

/// Starts a new session on a new floor of the blueprint.
#[utoipa::path(post, path = "/api/v1/sessions", tag = "sessions",
    security(("bearer" = [])),
    responses(
        (status = 201, body = OpenedSession),
        (status = 400, description = "a query string, or a body", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 429, description = "too many live sessions", body = ErrorBody),
        (status = 502, description = "the floor did not start", body = ErrorBody),
    ))]
pub async fn create_session(
    State(server): State<SessionServer>,
    caller: CallerExt,
    _: NoQuery,
    _: NoBody,
) -> Result<Response, ApiError> {
    caller.server_only()?;
    open(&server, None).await
}

/// Continues a stored session on a new floor (its conversation, memories, grants and task
/// boards, no model called); a live one answers its token again.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/resume", tag = "sessions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "the session id")),
    responses(
        (status = 200, body = OpenedSession),
        (status = 400, description = "a query string, or a body", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 502, body = ErrorBody),
    ))]
pub async fn resume_session(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path(id): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> Result<Response, ApiError> {
    caller.server_only()?;
    let id = parse_id(&id)?;
    open(&server, Some(id)).await
}

/// Closes a live session's floor; its log stays, its token ends.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/close", tag = "sessions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "the session id")),
    responses(
        (status = 200, body = CloseResponse),
        (status = 400, description = "a query string, or a body", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, description = "not live", body = ErrorBody),
    ))]
pub async fn close_session(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path(id): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> Result<Response, ApiError> {
    caller.server_only()?;
    let id = parse_id(&id)?;
    let live = server
        .sessions()
        .live
        .remove(&id)
        .ok_or_else(|| not_live(&id))?;
    server
        .inner
        .tokens
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&live.token);
    close_live(&live).await;
    Ok(Json(CloseResponse {
        last_seq: live.feed.last_seq(),
    })
    .into_response())
}

/// What a session is.
#[utoipa::path(get, path = "/api/v1/sessions/{id}", tag = "sessions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "the session id")),
    responses(
        (status = 200, body = SessionView),
        (status = 400, description = "a query string, or a body", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
pub async fn get_session(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path(id): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    caller.may(&id)?;
    let store = server.inner.store.clone();
    let read_id = id.clone();
    let (info, log) = tokio::task::spawn_blocking(move || store.info(&read_id))
        .await
        .map_err(ApiError::internal)?
        .map_err(session_error)?;
    let mut view = SessionView {
        id: id.to_string(),
        live: false,
        // The newest event's seq: not the number of events, which is less when lines were
        // skipped (a watcher resuming after it would get the last ones again).
        last_seq: log.last_seq(),
        created_at: info.created_at,
        blueprint: info.blueprint,
        agents: Vec::new(),
        turn_running: false,
        subscribers: 0,
    };
    if let Some(live) = server.live(&id) {
        view.live = true;
        view.last_seq = live.feed.last_seq();
        view.subscribers = live.subscribers.load(std::sync::atomic::Ordering::SeqCst);
        if let Ok(snapshot) = live.hosted.floor.snapshot().await {
            view.agents = snapshot.agents.iter().map(|a| a.0.to_string()).collect();
            view.turn_running = snapshot.turn.is_some();
        }
    }
    Ok(Json(view).into_response())
}

async fn live_session(
    server: &SessionServer,
    caller: &CallerExt,
    id: &str,
) -> Result<Arc<Live>, ApiError> {
    let id = parse_id(id)?;
    caller.may(&id)?;
    match server.live(&id) {
        Some(l) => Ok(l),
        None => {
            // Stored, or not at all (nor another project's): said apart only to the server.
            let store = server.inner.store.clone();
            let read_id = id.clone();
            tokio::task::spawn_blocking(move || store.read(&read_id))
                .await
                .map_err(ApiError::internal)?
                .map_err(session_error)?;
            Err(not_live(&id))
        }
    }
}

/// The user posts a message on the session's floor.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/messages", tag = "sessions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "the session id")),
    request_body = PostMessage,
    responses(
        (status = 201, body = PostedMessage),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "not live", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
    ))]
pub async fn post_message(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path(id): Path<String>,
    _: NoQuery,
    ApiJson(body): ApiJson<PostMessage>,
) -> Result<Response, ApiError> {
    let live = live_session(&server, &caller, &id).await?;
    if body.content.trim().is_empty() {
        return Err(ApiError::unprocessable("invalid_body", "`content`: empty"));
    }
    let receipt = live
        .hosted
        .floor
        .post(body.content)
        .await
        .map_err(floor_error)?;
    Ok((
        StatusCode::CREATED,
        Json(PostedMessage {
            message_id: receipt.message_id,
            next_agent: receipt.next_agent.map(|h| h.to_string()),
            queued: receipt.queued,
        }),
    )
        .into_response())
}

/// Cancels the running turn.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/cancel", tag = "sessions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "the session id")),
    responses(
        (status = 200, body = CancelResponse),
        (status = 400, description = "a query string, or a body", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
    ))]
pub async fn cancel_turn(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path(id): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> Result<Response, ApiError> {
    let live = live_session(&server, &caller, &id).await?;
    let cancelled = live.hosted.floor.cancel_turn().await.map_err(floor_error)?;
    Ok(Json(CancelResponse { cancelled }).into_response())
}

/// Calls a tool of the session's furniture as one of its agents, under that agent's grants.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/furniture/{name}/call", tag = "furniture",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "the session id"),
        ("name" = String, Path, description = "the furniture's name"),
    ),
    request_body = CallRequest,
    responses(
        (status = 200, body = CallResponse),
        (status = 400, description = "a query string", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "not granted to that agent (or another session's token)", body = ErrorBody),
        (status = 404, description = "no such session, furniture or tool", body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, description = "not an agent of the floor, or the tool failed", body = ErrorBody),
    ))]
pub async fn call_furniture(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path((id, name)): Path<(String, String)>,
    _: NoQuery,
    ApiJson(body): ApiJson<CallRequest>,
) -> Result<Response, ApiError> {
    let live = live_session(&server, &caller, &id).await?;
    let snapshot = live.hosted.floor.snapshot().await.map_err(floor_error)?;
    // As the floor names it (`Keeper` and `keeper` are `@keeper`): the grants are held by
    // that name, so the membership and the grant are checked for the same agent.
    let agent = crate::Handle::new(&body.agent)
        .ok()
        .filter(|h| snapshot.agents.iter().any(|a| &a.0 == h))
        .ok_or_else(|| {
            ApiError::unprocessable(
                "invalid_body",
                format!(
                    "`agent`: {} is not an agent of this floor",
                    crate::session::shown(&body.agent)
                ),
            )
        })?
        .to_string();
    let furniture = live
        .hosted
        .furniture
        .as_ref()
        .ok_or_else(|| ApiError::not_found("this floor has no furniture"))?;
    let piece = furniture.get(&name).ok_or_else(|| {
        ApiError::not_found(format!("no furniture `{}`", crate::session::shown(&name)))
    })?;
    if piece.tool(&body.tool).is_none() {
        return Err(ApiError::not_found(format!(
            "`{name}` has no tool `{}`",
            crate::session::shown(&body.tool)
        )));
    }
    let guard = furniture
        .guard(&agent, &name)
        .ok_or_else(|| ApiError::not_found(format!("no furniture `{name}`")))?;
    if let Some(refusal) = guard.check(&body.tool) {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "not_granted", refusal));
    }
    match guard.call(&body.tool, body.args).await {
        Ok(result) => Ok(Json(CallResponse { result }).into_response()),
        Err(e) => Err(ApiError::unprocessable("tool_failed", e.0)),
    }
}
