//! The floor server over sessions (`ofc serve`): one blueprint, many sessions, driven over
//! HTTP, watched over server-sent events.
//!
//! | Route | token | |
//! |---|---|---|
//! | `GET /api/v1/sessions` | server | the project's sessions (stored and live) |
//! | `POST /api/v1/sessions` | server | a new session on a new floor; answers its id and token |
//! | `POST /api/v1/sessions/{id}/resume` | server | a stored session continues on a new floor |
//! | `POST /api/v1/sessions/{id}/close` | server | its floor closes; the log stays |
//! | `GET /api/v1/sessions/{id}` | server or its own | what it is, live or not, its last `seq` |
//! | `POST /api/v1/sessions/{id}/messages` | server or its own | the user speaks |
//! | `POST /api/v1/sessions/{id}/cancel` | server or its own | cancels the running turn |
//! | `GET /api/v1/sessions/{id}/events` | server or its own | its events, server-sent |
//! | `POST /api/v1/sessions/{id}/furniture/{name}/call` | server or its own | a tool call as one of its agents, under that agent's grants |
//! | `GET /openapi.json` | none | this contract ([`openapi`]) |
//! | `GET /`, `GET /assets/{file}` | none | the browser view ([`web`]; it holds no data) |
//!
//! **Tokens.** The server has one token (printed by `ofc serve`, or `OFC_SERVE_TOKEN`); each
//! live session has its own, answered when the session is created or resumed. A session token
//! opens its own session's routes and nothing else (403, whether or not the other session
//! exists); only the server token lists, creates, resumes and closes. Tokens travel as
//! `Authorization: Bearer …` and are compared in constant time; a bad one is a 401 before any
//! body is read.
//!
//! **Events** ([`sse`]): every event the session records — messages, turns, calls, notes,
//! grants, transcript lines — as `id: <seq>`, `event: <payload_type>`, `data: <the session
//! line>`. A client that reconnects with `Last-Event-ID: N` (or `?last_event_id=N`) gets
//! exactly the events after `N`, from memory or from the session file: nothing missed, nothing
//! twice, however long it was away. The pieces of answers being streamed go to the live
//! watchers as `event: delta` without an `id:`: not stored (the message they make is), so
//! never counted by `Last-Event-ID` nor replayed. A stored session that is not live is
//! streamed to its end, then the stream closes.
//!
//! **Browser view** ([`web`]): a page and its assets from the binary, under a strict CSP;
//! opened as `/#token=…` (a fragment: the token reaches no server log), it sends the token as
//! a Bearer header on every call and reads the events with `fetch`.
//!
//! **Furniture proxy.** A call names the agent it is made as; it goes through that agent's
//! guard, so it is refused (403 `not_granted`, with the reason) exactly when the agent's own
//! call would be. Whoever holds a token already drives the floor's agents; the proxy gives no
//! more than they hold.
//!
//! **Bounds** ([`SessionServerSettings`]): connections (503 over the cap, from `ofc-net`),
//! request bodies (413 `body_too_large`, with or without a length), live sessions (429
//! `too_many_sessions`; a session being put on a floor counts, and a second resume of one is
//! 409 `session_starting`), SSE subscribers per session, live or stored (429
//! `too_many_subscribers`; a stored session's readers share one read of it). Nothing sent is
//! ignored: a query string (but `…/events`'s) is 400 `invalid_query`, a body on a route that
//! takes none 400 `unexpected_body`. It listens on 127.0.0.1 unless told
//! otherwise, and on loopback answers only to loopback `Host` names (421: no DNS rebinding).
//! A session of another project (a file copied into the store) is a 404, as one that does not
//! exist; so is, with a store for a named floor ([`SessionStore::for_floor`]), another
//! floor's.

pub mod openapi;
mod routes;
#[cfg(test)]
mod server_tests;
pub mod sse;
#[cfg(test)]
mod tests;
pub mod web;
#[cfg(test)]
mod web_tests;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard, Weak};
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use tokio::net::TcpListener;

use crate::api::ApiError;
use crate::floor::Floor;
use crate::furniture::FloorFurniture;
use crate::session::{LiveSession, LogStamp, SessionError, SessionFeed, SessionId, SessionStore};

pub use routes::{
    CallRequest, CallResponse, CancelResponse, CloseResponse, OpenedSession, PostMessage,
    PostedMessage, SessionList, SessionSummary, SessionView,
};

/// How a session server runs.
#[derive(Debug, Clone)]
pub struct SessionServerSettings {
    /// The server token (`Authorization: Bearer <this>`).
    pub token: String,
    /// The most sessions live at once (each one a floor with its agents).
    pub max_live_sessions: usize,
    /// The most SSE subscribers of one session at once.
    pub max_subscribers: usize,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// Bounds of the server's connections.
    pub connections: ofc_net::ConnLimits,
    /// When set, the `Host` header of every request must name one of these hosts (any port).
    pub allowed_host_headers: Option<Vec<String>>,
    /// How often an idle SSE stream carries a keep-alive comment.
    pub keep_alive: Duration,
}

impl SessionServerSettings {
    /// The defaults, with this server token.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            max_live_sessions: 16,
            max_subscribers: 32,
            max_body: 64 * 1024,
            connections: ofc_net::ConnLimits::new(
                256,
                Duration::from_secs(10),
                Duration::from_secs(30),
            ),
            allowed_host_headers: None,
            keep_alive: Duration::from_secs(15),
        }
    }
}

/// A session put on a floor by a [`SessionHost`].
pub struct HostedSession {
    /// What the floor records into.
    pub live: LiveSession,
    /// The floor.
    pub floor: Floor,
    /// Its furniture (for the proxy).
    pub furniture: Option<Arc<FloorFurniture>>,
    /// Stops what the floor needed besides itself (processes, furniture, …), after the floor
    /// has closed.
    pub stop: Box<dyn StopHosted>,
}

impl std::fmt::Debug for HostedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSession")
            .field("live", &self.live)
            .field("floor", &self.floor.id())
            .finish_non_exhaustive()
    }
}

/// What [`HostedSession::stop`] runs.
#[async_trait::async_trait]
pub trait StopHosted: Send + Sync {
    /// Stops it all.
    async fn stop(&self);
}

/// Nothing to stop besides the floor.
#[derive(Debug, Clone, Copy)]
pub struct NothingElse;

#[async_trait::async_trait]
impl StopHosted for NothingElse {
    async fn stop(&self) {}
}

/// Why a session could not be put on a floor.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The session store refused (no such session, another project's, busy, …).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The floor did not start (an agent or a piece of furniture failed).
    #[error("{0}")]
    Start(String),
}

/// Puts sessions on floors: `ofc serve` builds each from its blueprint, as `ofc run` does.
#[async_trait::async_trait]
pub trait SessionHost: Send + Sync + 'static {
    /// A floor recording into a new session (`resume: None`) or continuing `resume`.
    async fn open(&self, resume: Option<&SessionId>) -> Result<HostedSession, OpenError>;
}

/// A floor server over sessions. Clone it freely.
#[derive(Clone)]
pub struct SessionServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SessionServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionServer")
            .field("store", &self.inner.store)
            .finish_non_exhaustive()
    }
}

struct Inner {
    settings: SessionServerSettings,
    store: SessionStore,
    host: Arc<dyn SessionHost>,
    /// The live sessions and those being put on a floor. Never held across an await: a
    /// floor is opened outside it, under a reservation ([`Sessions::starting`]), so opening
    /// one session holds up no request to another, no session is opened twice and the bound
    /// is exact.
    sessions: std::sync::Mutex<Sessions>,
    /// The stored sessions being streamed: their readers, sharing one feed each.
    stored: std::sync::Mutex<HashMap<SessionId, Weak<Stored>>>,
    /// The token of each live session → its id (read on every request).
    tokens: std::sync::RwLock<HashMap<String, SessionId>>,
}

/// The sessions on this server's floors.
#[derive(Default)]
struct Sessions {
    /// The live ones.
    live: HashMap<SessionId, Arc<Live>>,
    /// How many are being put on a floor now (each counts toward `max_live_sessions`).
    starting: usize,
    /// The stored sessions among them being resumed (a second resume of one is refused).
    resuming: HashSet<SessionId>,
    /// The server stops: nothing more goes live.
    stopped: bool,
}

/// The readers of a stored session's events (counted toward `max_subscribers`), and the
/// feed they share: the session read once for all of them.
struct Stored {
    id: SessionId,
    subscribers: AtomicUsize,
    /// The feed, and the session's stamp when it was read (read again once it changed).
    feed: tokio::sync::Mutex<Option<(LogStamp, Arc<SessionFeed>)>>,
}

impl Stored {
    /// The session's feed: the one its readers share, unless the session changed since
    /// (then, as a new reader does, one read of the store). Off the async threads.
    async fn feed(&self, store: &SessionStore) -> Result<Arc<SessionFeed>, ApiError> {
        let mut slot = self.feed.lock().await;
        let source = store.source(&self.id);
        let now = {
            let source = source.clone();
            tokio::task::spawn_blocking(move || source.stamp())
                .await
                .map_err(ApiError::internal)?
        };
        if let (Ok(now), Some((then, feed))) = (&now, slot.as_ref())
            && now == then
        {
            return Ok(Arc::clone(feed));
        }
        let (store, id) = (store.clone(), self.id.clone());
        let feed = tokio::task::spawn_blocking(move || {
            let log = store.read(&id)?;
            SessionFeed::of_log(store.source(&id), log)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(routes::session_error)?;
        let feed = Arc::new(feed);
        *slot = now.ok().map(|now| (now, Arc::clone(&feed)));
        Ok(feed)
    }
}

/// One live session.
struct Live {
    id: SessionId,
    token: String,
    hosted: HostedSession,
    feed: Arc<SessionFeed>,
    subscribers: AtomicUsize,
}

/// Who a request comes from (set by the bearer check before any handler runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The server token.
    Server,
    /// A session's token.
    Session(SessionId),
}

impl Caller {
    /// May it use the routes of session `id`?
    fn may(&self, id: &SessionId) -> Result<(), ApiError> {
        match self {
            Caller::Server => Ok(()),
            Caller::Session(own) if own == id => Ok(()),
            Caller::Session(_) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "this token opens its own session only",
            )),
        }
    }

    /// Is it the server token?
    fn server_only(&self) -> Result<(), ApiError> {
        match self {
            Caller::Server => Ok(()),
            Caller::Session(_) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "listing, creating, resuming and closing sessions want the server token",
            )),
        }
    }
}

fn new_token(kind: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("ofc_{kind}_{hex}")
}

/// A fresh random server token.
pub fn new_server_token() -> String {
    new_token("serve")
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl SessionServer {
    /// A server over `store`, whose floors `host` opens.
    pub fn new(
        settings: SessionServerSettings,
        store: SessionStore,
        host: Arc<dyn SessionHost>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                store,
                host,
                sessions: std::sync::Mutex::new(Sessions::default()),
                stored: std::sync::Mutex::new(HashMap::new()),
                tokens: std::sync::RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The HTTP routes.
    pub fn router(&self) -> Router {
        let api = Router::new()
            .route(
                "/api/v1/sessions",
                get(routes::list_sessions).post(routes::create_session),
            )
            .route("/api/v1/sessions/{id}", get(routes::get_session))
            .route("/api/v1/sessions/{id}/resume", post(routes::resume_session))
            .route("/api/v1/sessions/{id}/close", post(routes::close_session))
            .route("/api/v1/sessions/{id}/messages", post(routes::post_message))
            .route("/api/v1/sessions/{id}/cancel", post(routes::cancel_turn))
            .route("/api/v1/sessions/{id}/events", get(sse::events))
            .route(
                "/api/v1/sessions/{id}/furniture/{name}/call",
                post(routes::call_furniture),
            )
            .route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                authenticate,
            ));
        Router::new()
            .merge(api)
            .route("/openapi.json", get(openapi::openapi))
            .route("/", get(web::index))
            .route("/assets/{file}", get(web::assets))
            .fallback(|| async { ApiError::not_found("no such route") })
            .layer(axum::extract::DefaultBodyLimit::max(
                self.inner.settings.max_body,
            ))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                check_request,
            ))
            .layer(axum::middleware::from_fn(web::security_headers))
            .with_state(self.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then closes every live session.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
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

    /// Closes every live session's floor (their logs stay).
    pub async fn close_all(&self) {
        let all: Vec<Arc<Live>> = {
            let mut sessions = self.sessions();
            sessions.stopped = true;
            sessions.live.drain().map(|(_, l)| l).collect()
        };
        self.inner
            .tokens
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        futures::future::join_all(all.iter().map(|l| close_live(l))).await;
    }

    /// Who the request's bearer token says it is.
    fn caller(&self, headers: &axum::http::HeaderMap) -> Result<Caller, ApiError> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| {
                ApiError::unauthorized("this server wants `Authorization: Bearer <token>`")
            })?
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header is not `Bearer <token>`")
            })?;
        if constant_time_eq(presented.as_bytes(), self.inner.settings.token.as_bytes()) {
            return Ok(Caller::Server);
        }
        let tokens = self.inner.tokens.read().unwrap_or_else(|e| e.into_inner());
        // Every live token is compared, in constant time each: how long this takes says
        // nothing of which one came close.
        let mut found = None;
        for (token, id) in tokens.iter() {
            if constant_time_eq(presented.as_bytes(), token.as_bytes()) {
                found = Some(id.clone());
            }
        }
        found.map(Caller::Session).ok_or_else(|| {
            ApiError::unauthorized("unknown token (a session's token ends with its session)")
        })
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self, id: &SessionId) -> Option<Arc<Live>> {
        self.sessions().live.get(id).cloned()
    }

    /// The readers of stored session `id` (made for the first).
    fn stored(&self, id: &SessionId) -> Arc<Stored> {
        let mut stored = self.inner.stored.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = stored.get(id).and_then(Weak::upgrade) {
            return s;
        }
        // Those nobody reads any more go.
        stored.retain(|_, s| s.strong_count() > 0);
        let s = Arc::new(Stored {
            id: id.clone(),
            subscribers: AtomicUsize::new(0),
            feed: tokio::sync::Mutex::new(None),
        });
        stored.insert(id.clone(), Arc::downgrade(&s));
        s
    }
}

async fn close_live(live: &Live) {
    let _ = live.hosted.floor.close().await;
    live.hosted.stop.stop().await;
    live.feed.end();
}

/// Turns the bearer token into a [`Caller`] before anything else is read.
async fn authenticate(
    State(server): State<SessionServer>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match server.caller(request.headers()) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

/// The `Host` check (DNS rebinding) and the body bound, named, before the body is read.
async fn check_request(
    State(server): State<SessionServer>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(allowed) = &server.inner.settings.allowed_host_headers
        && !crate::api::host_is_allowed(request.headers(), allowed)
    {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "wrong_host",
            "this server does not answer to that Host",
        )
        .into_response();
    }
    let max = server.inner.settings.max_body;
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(length) = length
        && length > max as u64
    {
        return body_too_large(max).into_response();
    }
    request.extensions_mut().insert(crate::api::BodyLimit(max));
    let response = next.run(request).await;
    // A body without a length that grew past the bound: axum's own 413, said as ours.
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_none_or(|v| v.as_bytes() != b"application/json")
    {
        return body_too_large(max).into_response();
    }
    response
}

fn body_too_large(max: usize) -> ApiError {
    crate::api::body_too_large(Some(max))
}

/// The extension [`authenticate`] leaves.
pub type CallerExt = Extension<Caller>;

/// A session whose event subscribers are counted: a live one, or a stored one's readers.
enum Held {
    Live(Arc<Live>),
    Stored(Arc<Stored>),
}

impl Held {
    fn counter(&self) -> (&SessionId, &AtomicUsize) {
        match self {
            Self::Live(l) => (&l.id, &l.subscribers),
            Self::Stored(s) => (&s.id, &s.subscribers),
        }
    }
}

/// Counts a session's subscribers, live or stored; one less when dropped.
struct Subscription {
    held: Held,
}

impl Subscription {
    /// One more subscriber of `held`, if it has fewer than `max`.
    fn take(held: Held, max: usize) -> Result<Self, ApiError> {
        let (id, count) = held.counter();
        let taken = count.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        });
        match taken {
            Ok(_) => Ok(Self { held }),
            Err(_) => Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_subscribers",
                format!("session {id} has {max} event subscribers already, this server's limit"),
            )),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.held.counter().1.fetch_sub(1, Ordering::SeqCst);
    }
}
