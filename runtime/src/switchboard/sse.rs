//! The Switchboard MCP server over HTTP with the legacy SSE transport, as seed 004 names it
//! (rmcp serves streamable HTTP only, so the transport is here, over axum, with rmcp's
//! server doing the protocol):
//!
//! | method | path | auth | |
//! |---|---|---|---|
//! | `GET` | `/health` | no | `{"status": "ok", …}` |
//! | `GET` | `/sse` | yes | an SSE stream: first an `endpoint` event naming `/messages?sessionId=<id>`, then one `message` event per JSON-RPC message of the server |
//! | `POST` | `/messages?sessionId=<id>` | yes | one JSON-RPC message to the session; `202 Accepted` |
//!
//! Auth is the token of `auth_token`: `Authorization: Bearer <token>`, or `?token=<token>`
//! (a client that gave `/sse` the token in the query gets an endpoint URL carrying it too);
//! compared in constant time; 401 otherwise. The server binds 127.0.0.1, answers only to a
//! loopback `Host` (421 otherwise: no DNS rebinding), holds at most
//! [`SwitchboardSettings::max_sessions`](super::SwitchboardSettings) sessions (503 past it),
//! takes request bodies up to [`MAX_BODY_BYTES`] and queues at most [`QUEUE`] messages per
//! session (503 past it). A session ends when its SSE stream closes.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use index_schema::switchboard::ServerInfo;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};

use super::mcp::SwitchboardMcp;
use super::{Switchboard, now_iso};
use ofc_net::{ConnLimits, serve};

/// The largest POST body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Messages queued per session before a POST is turned away.
pub const QUEUE: usize = 64;
/// Connections served at once.
const MAX_CONNECTIONS: usize = 128;

type Sessions = Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>;

#[derive(Clone)]
struct AppState {
    sb: Arc<Switchboard>,
    sessions: Sessions,
}

/// The server, running; it stops (and removes `server_info.json`) when dropped.
#[derive(Debug)]
pub struct ServedSwitchboard {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The port.
    pub port: u16,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    /// The server's task: it ends once the listener is closed and its connections are.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    sessions: Sessions,
    sb: Arc<Switchboard>,
}

impl ServedSwitchboard {
    /// Ends the sessions (their streams), tells the server to stop and removes
    /// `server_info.json`; the listener closes in the background.
    fn signal_stop(&self) {
        // Dropping the sessions' senders ends their services and, with them, their streams.
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        if let Some(stop) = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = stop.send(());
        }
        self.sb.workspace().remove_server_info();
    }

    /// Stops the server and waits (at most `wait`) until it no longer listens and its
    /// connections are closed, so that whoever closed it is never answered by it again.
    pub async fn close(&self, wait: Duration) {
        self.signal_stop();
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(wait, task).await;
        }
    }
}

impl Drop for ServedSwitchboard {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

impl Switchboard {
    /// Serves the MCP server on 127.0.0.1 (an ephemeral port) and writes
    /// `server_info.json`.
    pub async fn serve(self: &Arc<Self>) -> std::io::Result<ServedSwitchboard> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let sessions = Sessions::default();
        let router = router(Arc::clone(self), Arc::clone(&sessions));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(
            listener,
            router,
            ConnLimits::new(
                MAX_CONNECTIONS,
                Duration::from_secs(10),
                Duration::from_secs(60),
            ),
            async move {
                let _ = stopped.await;
            },
        ));
        self.ws
            .write_server_info(&ServerInfo::loopback(port, std::process::id(), now_iso()))?;
        self.log(&format!("MCP server on http://127.0.0.1:{port}/sse"));
        Ok(ServedSwitchboard {
            base: format!("http://127.0.0.1:{port}"),
            port,
            stop: Mutex::new(Some(stop)),
            task: Mutex::new(Some(task)),
            sessions,
            sb: Arc::clone(self),
        })
    }
}

fn router(sb: Arc<Switchboard>, sessions: Sessions) -> Router {
    let state = AppState { sb, sessions };
    let protected = Router::new()
        .route("/sse", get(open_session))
        .route("/messages", post(post_message))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ));
    Router::new()
        .route("/health", get(health))
        .merge(protected)
        .layer(axum::middleware::from_fn(loopback_host))
        .with_state(state)
}

async fn health(State(state): State<AppState>) -> Response {
    axum::Json(serde_json::json!({
        "status": "ok",
        "server": "ofc-switchboard",
        "transport": "sse",
        "sessions": state.sb.sessions(),
    }))
    .into_response()
}

/// Only `127.0.0.1`, `localhost` or `::1` as `Host`.
async fn loopback_host(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    if !["127.0.0.1", "localhost", "::1"]
        .iter()
        .any(|a| a.eq_ignore_ascii_case(name))
    {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers to a loopback Host only",
        )
            .into_response();
    }
    next.run(request).await
}

/// How a request proved it holds the token.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Proof {
    Header,
    Query,
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn query_token(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
}

/// The token of an `Authorization` value of the `Bearer` scheme, whose name is
/// case-insensitive (RFC 7235).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

async fn authenticate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let token = state.sb.token().as_bytes();
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .map(str::to_owned);
    let proof = if header.is_some_and(|h| constant_time_eq(h.as_bytes(), token)) {
        Some(Proof::Header)
    } else if request
        .uri()
        .query()
        .and_then(query_token)
        .is_some_and(|t| constant_time_eq(t.as_bytes(), token))
    {
        Some(Proof::Query)
    } else {
        None
    };
    match proof {
        Some(p) => {
            request.extensions_mut().insert(p);
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "the Switchboard token is required: Authorization: Bearer <token from .switchboard/auth_token>, or ?token=",
        )
            .into_response(),
    }
}

/// The transport of one session: JSON-RPC messages POSTed in, server messages out to the
/// SSE stream.
struct SessionTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::Sender<ServerJsonRpcMessage>,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            outgoing
                .send(item)
                .await
                .map_err(|_| std::io::Error::other("the SSE stream closed"))
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Ends a session when its stream is dropped (the client went away).
struct SessionGuard {
    id: String,
    sessions: Sessions,
    sb: Arc<Switchboard>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        self.sb.session(&self.id, false);
    }
}

async fn open_session(
    State(state): State<AppState>,
    axum::Extension(proof): axum::Extension<Proof>,
) -> Response {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (in_tx, in_rx) = mpsc::channel(QUEUE);
    let (out_tx, out_rx) = mpsc::channel::<ServerJsonRpcMessage>(QUEUE);
    {
        let mut sessions = state.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= state.sb.settings().max_sessions {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "too many Switchboard sessions are open",
            )
                .into_response();
        }
        sessions.insert(id.clone(), in_tx);
    }
    state.sb.session(&id, true);
    let handler = SwitchboardMcp::new(Arc::clone(&state.sb), id.clone());
    let transport = SessionTransport {
        incoming: in_rx,
        outgoing: out_tx,
    };
    let sb = Arc::clone(&state.sb);
    let session = id.clone();
    tokio::spawn(async move {
        match handler.serve(transport).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => sb.log(&format!("MCP session {session} did not initialize: {e}")),
        }
    });
    let endpoint = match proof {
        Proof::Header => format!("/messages?sessionId={id}"),
        Proof::Query => format!("/messages?sessionId={id}&token={}", state.sb.token()),
    };
    let guard = SessionGuard {
        id,
        sessions: Arc::clone(&state.sessions),
        sb: Arc::clone(&state.sb),
    };
    Sse::new(events(endpoint, out_rx, guard))
        // Frequent enough that a client gone without a word is noticed (a write fails) within
        // seconds, which ends its session.
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(2)))
        .into_response()
}

fn events(
    endpoint: String,
    mut out_rx: mpsc::Receiver<ServerJsonRpcMessage>,
    guard: SessionGuard,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let _guard = guard;
        if tx
            .send(Event::default().event("endpoint").data(endpoint))
            .await
            .is_err()
        {
            return;
        }
        while let Some(message) = out_rx.recv().await {
            let data = serde_json::to_string(&message).unwrap_or_default();
            if tx
                .send(Event::default().event("message").data(data))
                .await
                .is_err()
            {
                return;
            }
        }
    })
}

/// A stream fed by a task through a small channel; the task (and what it holds) ends when
/// the stream is dropped.
fn async_stream<F, Fut>(body: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(mpsc::Sender<Event>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(8);
    let task = tokio::spawn(body(tx));
    struct Abort(tokio::task::JoinHandle<()>);
    impl Drop for Abort {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let abort = Abort(task);
    futures::stream::unfold((rx, abort), |(mut rx, abort)| async move {
        rx.recv().await.map(|e| (Ok(e), (rx, abort)))
    })
}

#[derive(Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

async fn post_message(
    State(state): State<AppState>,
    Query(query): Query<SessionQuery>,
    body: Bytes,
) -> Response {
    let Some(id) = query.session_id else {
        return (StatusCode::BAD_REQUEST, "sessionId is required").into_response();
    };
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not a JSON-RPC message: {e}"),
            )
                .into_response();
        }
    };
    let sender = state
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .cloned();
    let Some(sender) = sender else {
        return (StatusCode::NOT_FOUND, "no such session").into_response();
    };
    match sender.try_send(message) {
        Ok(()) => (StatusCode::ACCEPTED, "Accepted").into_response(),
        Err(mpsc::error::TrySendError::Full(_)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "the session's queue is full",
        )
            .into_response(),
        Err(mpsc::error::TrySendError::Closed(_)) => {
            (StatusCode::GONE, "the session has ended").into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bearer;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for v in ["Bearer abc", "bearer abc", "BEARER abc", " Bearer  abc "] {
            assert_eq!(bearer(v), Some("abc"), "{v}");
        }
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearerabc"), None);
    }
}
