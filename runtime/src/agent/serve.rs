//! Exposing any [`Agent`] over the OFC agent HTTP API.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn demo(agent: Arc<dyn runtime::agent::Agent>) -> std::io::Result<()> {
//! // Bind an ephemeral loopback port and serve until the handle is dropped:
//! let server = runtime::agent::serve(agent, "127.0.0.1:0").await?;
//! println!("agent at {}", server.url());
//! # Ok(()) }
//! ```
//!
//! A process agent started by a floor reads its port from `OFC_PORT`; see
//! [`AgentServer::run_from_env`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use futures::StreamExt;
use index_schema::wire::{McpGrantRequest, RespondRequest, RespondResponse, ShouldWakeRequest};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::sse::{self, DeltaData, ErrorData};
use super::{Agent, AgentError, Deltas};
use crate::api::{ApiError, ApiJson};

/// The largest request body an agent accepts.
const MAX_REQUEST: usize = 16 * 1024 * 1024;

/// The OFC agent API for `agent`: `GET /ofc/info`, `POST /ofc/should-wake`,
/// `POST /ofc/respond`, `POST /ofc/mcp/grant`, `GET /ofc/mcp/provides`.
///
/// `/ofc/respond` answers JSON, unless the caller accepts `text/event-stream` and the agent
/// sends a delta before it finishes: then the answer is streamed (see the `sse` format in
/// this module's parent).
pub fn router(agent: Arc<dyn Agent>) -> Router {
    Router::new()
        .route("/ofc/info", get(info))
        .route("/ofc/should-wake", post(should_wake))
        .route("/ofc/respond", post(respond))
        .route("/ofc/mcp/grant", post(grant_mcp))
        .route("/ofc/mcp/provides", get(provides_mcp))
        // A respond request carries the floor's recent history.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST))
        .with_state(agent)
}

/// Serves `agent` on `addr` until the returned handle is dropped or shut down.
pub async fn serve(
    agent: Arc<dyn Agent>,
    addr: impl ToSocketAddrs,
) -> std::io::Result<AgentServer> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // Small request/response exchanges: without TCP_NODELAY, Nagle's algorithm and
        // delayed ACKs stall some of them for ~40 ms.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let served = axum::serve(listener, router(agent))
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
        if let Err(error) = served {
            tracing::error!(%error, "agent server failed");
        }
    });
    Ok(AgentServer {
        addr,
        stop: Some(stop),
        task,
    })
}

/// A running agent server.
#[derive(Debug)]
pub struct AgentServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl AgentServer {
    /// Serves `agent` on `127.0.0.1:$OFC_PORT` (the port a floor assigns a process agent)
    /// until the process is interrupted or terminated.
    pub async fn run_from_env(agent: Arc<dyn Agent>) -> std::io::Result<()> {
        let port: u16 = std::env::var("OFC_PORT")
            .map_err(|_| std::io::Error::other("OFC_PORT is not set"))?
            .parse()
            .map_err(|_| std::io::Error::other("OFC_PORT is not a port number"))?;
        let server = serve(agent, ("127.0.0.1", port)).await?;
        shutdown_signal().await;
        server.shutdown().await;
        Ok(())
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL, `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting connections and waits for the server to end. In-flight calls are
    /// given no time: a stopped agent does not finish its answers.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn agent_failed(error: AgentError) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        "agent_error",
        error.to_string(),
    )
}

async fn info(State(agent): State<Arc<dyn Agent>>) -> Result<Response, ApiError> {
    let info = agent.info().await.map_err(agent_failed)?;
    Ok(Json(info).into_response())
}

async fn should_wake(
    State(agent): State<Arc<dyn Agent>>,
    ApiJson(request): ApiJson<ShouldWakeRequest>,
) -> Result<Response, ApiError> {
    let answer = agent.should_wake(&request).await.map_err(agent_failed)?;
    Ok(Json(answer).into_response())
}

async fn grant_mcp(
    State(agent): State<Arc<dyn Agent>>,
    ApiJson(request): ApiJson<McpGrantRequest>,
) -> Result<Response, ApiError> {
    let answer = agent.grant_mcp(&request).await.map_err(agent_failed)?;
    Ok(Json(answer).into_response())
}

async fn provides_mcp(State(agent): State<Arc<dyn Agent>>) -> Result<Response, ApiError> {
    let answer = agent.provides_mcp().await.map_err(agent_failed)?;
    Ok(Json(answer).into_response())
}

/// Aborts the agent's call when the answer is dropped (the caller went away).
struct AbortOnDrop(JoinHandle<Result<RespondResponse, AgentError>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn respond(
    State(agent): State<Arc<dyn Agent>>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<RespondRequest>,
) -> Result<Response, ApiError> {
    let wants_stream = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains(sse::MEDIA_TYPE));
    if !wants_stream {
        let answer = agent.respond(&request, None).await.map_err(agent_failed)?;
        return Ok(Json(answer).into_response());
    }
    let (deltas, mut pieces) = Deltas::channel();
    let mut call = AbortOnDrop(tokio::spawn(async move {
        agent.respond(&request, Some(deltas)).await
    }));
    // Answer JSON if the agent finishes without streaming; switch to SSE at its first delta.
    let first = tokio::select! {
        biased;
        piece = pieces.recv() => piece,
        finished = &mut call.0 => {
            return match joined(finished) {
                Ok(answer) => Ok(Json(answer).into_response()),
                Err(error) => Err(agent_failed(error)),
            };
        }
    };
    let state = StreamState {
        pending: first,
        pieces,
        call,
        outcome: None,
        finished: false,
    };
    let events = futures::stream::unfold(state, next_event).map(Ok::<_, Infallible>);
    Ok(Sse::new(events).into_response())
}

struct StreamState {
    pending: Option<String>,
    pieces: mpsc::UnboundedReceiver<String>,
    call: AbortOnDrop,
    outcome: Option<Result<RespondResponse, AgentError>>,
    finished: bool,
}

enum Step {
    Piece(String),
    SendersGone,
    Finished(Result<RespondResponse, AgentError>),
}

async fn next_event(mut state: StreamState) -> Option<(Event, StreamState)> {
    if state.finished {
        return None;
    }
    if let Some(piece) = state.pending.take() {
        return Some((delta_event(piece), state));
    }
    if state.outcome.is_none() {
        let step = tokio::select! {
            biased;
            piece = state.pieces.recv() => piece.map_or(Step::SendersGone, Step::Piece),
            finished = &mut state.call.0 => Step::Finished(joined(finished)),
        };
        match step {
            Step::Piece(piece) => return Some((delta_event(piece), state)),
            Step::SendersGone => state.outcome = Some(joined((&mut state.call.0).await)),
            Step::Finished(outcome) => state.outcome = Some(outcome),
        }
    }
    // The call is over: send what it streamed before finishing, then its outcome.
    if let Ok(piece) = state.pieces.try_recv() {
        return Some((delta_event(piece), state));
    }
    state.finished = true;
    let event = match state.outcome.take()? {
        Ok(answer) => json_event(sse::DONE, &answer),
        Err(error) => json_event(
            sse::ERROR,
            &ErrorData {
                message: error.to_string(),
            },
        ),
    };
    Some((event, state))
}

fn joined(
    finished: Result<Result<RespondResponse, AgentError>, tokio::task::JoinError>,
) -> Result<RespondResponse, AgentError> {
    finished.unwrap_or_else(|e| Err(AgentError::Other(format!("the agent's call panicked: {e}"))))
}

fn delta_event(piece: String) -> Event {
    json_event(sse::DELTA, &DeltaData { content: piece })
}

fn json_event<T: serde::Serialize>(name: &str, data: &T) -> Event {
    let data = serde_json::to_string(data).unwrap_or_else(|e| {
        serde_json::json!({ "message": format!("unserializable event: {e}") }).to_string()
    });
    Event::default().event(name).data(data)
}
