//! The OFC agent HTTP client against the crate's own server helper and against hostile peers.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use index_schema::wire::{
    AgentInfo, McpGrant, McpGrantRequest, Message, RespondRequest, RespondResponse,
    ShouldWakeRequest, ShouldWakeResponse, Timestamp, WakeContext,
};
use runtime::agent::{Agent, AgentError, Deltas, FnAgent, HttpAgent, serve};

fn message(content: &str) -> Message {
    Message::new(
        "msg-1",
        "@user",
        content,
        Timestamp::parse("2024-01-15T10:30:00Z").unwrap(),
    )
}

fn respond_request(content: &str) -> RespondRequest {
    RespondRequest {
        floor_id: "floor-1".into(),
        user_id: None,
        messages: vec![message(content)],
        wake_reason: None,
        initiator: None,
        context: None,
    }
}

fn should_wake_request(mentioned_you: bool) -> ShouldWakeRequest {
    ShouldWakeRequest {
        floor_id: "floor-1".into(),
        last_message: message("hi"),
        context: WakeContext {
            mentioned_you,
            ..WakeContext::default()
        },
    }
}

/// Streams its answer in two pieces.
#[derive(Debug)]
struct Streamer;

#[async_trait]
impl Agent for Streamer {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo::default())
    }

    async fn should_wake(&self, _: &ShouldWakeRequest) -> Result<ShouldWakeResponse, AgentError> {
        Ok(ShouldWakeResponse::sleep())
    }

    async fn respond(
        &self,
        _: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        if let Some(deltas) = deltas {
            deltas.send("hel");
            tokio::time::sleep(Duration::from_millis(20)).await;
            deltas.send("lo");
        }
        Ok(RespondResponse::reply("hello"))
    }
}

#[tokio::test]
async fn the_client_speaks_every_call_of_the_agent_api() {
    let agent = FnAgent::new("echo", |request: RespondRequest| async move {
        let last = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        if last == "pass" {
            return Ok(RespondResponse::pass(Some("nothing".into())));
        }
        Ok(RespondResponse::reply(format!("you said: {last}")))
    });
    let server = serve(Arc::new(agent), "127.0.0.1:0").await.unwrap();
    // A trailing `/ofc` on the endpoint is allowed.
    let client = HttpAgent::new(format!("{}/ofc", server.url()), HttpAgent::default_client());

    assert_eq!(client.info().await.unwrap().id.as_deref(), Some("@echo"));
    assert!(
        client
            .should_wake(&should_wake_request(true))
            .await
            .unwrap()
            .wake
    );
    assert!(
        !client
            .should_wake(&should_wake_request(false))
            .await
            .unwrap()
            .wake
    );
    let answer = client.respond(&respond_request("hi"), None).await.unwrap();
    assert_eq!(answer.content(), Some("you said: hi"));
    // Offered a stream, an agent that does not stream answers JSON.
    let (deltas, mut pieces) = Deltas::channel();
    let answer = client
        .respond(&respond_request("hi"), Some(deltas))
        .await
        .unwrap();
    assert_eq!(answer.content(), Some("you said: hi"));
    assert!(pieces.try_recv().is_err());
    let answer = client
        .respond(&respond_request("pass"), None)
        .await
        .unwrap();
    assert_eq!(answer, RespondResponse::pass(Some("nothing".into())));
    let grant = client
        .grant_mcp(&McpGrantRequest {
            floor_id: "floor-1".into(),
            mcp: McpGrant {
                name: "sandbox".into(),
                url: "mcp://x".into(),
                capabilities: vec![],
                permissions: vec![],
            },
            granted_by: "@floor-manager".into(),
        })
        .await
        .unwrap();
    assert!(!grant.accepted);
    assert!(client.provides_mcp().await.unwrap().provides.is_empty());
}

#[tokio::test]
async fn a_streamed_response_is_forwarded_piece_by_piece() {
    let server = serve(Arc::new(Streamer), "127.0.0.1:0").await.unwrap();
    let client = HttpAgent::new(server.url(), HttpAgent::default_client());
    let (deltas, mut pieces) = Deltas::channel();
    let answer = client
        .respond(&respond_request("go"), Some(deltas))
        .await
        .unwrap();
    assert_eq!(answer.content(), Some("hello"));
    let mut got = Vec::new();
    while let Ok(piece) = pieces.try_recv() {
        got.push(piece);
    }
    assert_eq!(got, ["hel", "lo"]);
    // Without a sink the same agent answers plain JSON.
    let answer = client.respond(&respond_request("go"), None).await.unwrap();
    assert_eq!(answer.content(), Some("hello"));
}

/// A peer that gets the protocol wrong in every way it can.
async fn hostile() -> String {
    let sse = |body: &'static str| async move {
        ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
    };
    let router = Router::new()
        .route(
            "/bad-json/ofc/should-wake",
            post(|| async { ([(header::CONTENT_TYPE, "application/json")], "{\"wake\": ") }),
        )
        .route(
            "/wrong-shape/ofc/should-wake",
            post(|| async { axum::Json(serde_json::json!({"wake": "yes"})) }),
        )
        .route(
            "/no-content/ofc/respond",
            post(|| async { axum::Json(serde_json::json!({})) }),
        )
        .route(
            "/error/ofc/respond",
            post(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .route(
            "/truncated/ofc/respond",
            post(move || sse("event: delta\ndata: {\"content\":\"a\"}\n\n")),
        )
        .route(
            "/reported/ofc/respond",
            post(move || sse("event: error\ndata: {\"message\":\"out of tokens\"}\n\n")),
        )
        .route(
            "/slow/ofc/info",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "never"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

#[tokio::test]
async fn a_hostile_peer_gives_clear_errors() {
    let base = hostile().await;
    let client = |path: &str| HttpAgent::new(format!("{base}/{path}"), HttpAgent::default_client());

    let error = client("bad-json")
        .should_wake(&should_wake_request(false))
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::InvalidBody(_)), "{error}");
    let error = client("wrong-shape")
        .should_wake(&should_wake_request(false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("wake"), "{error}");
    let error = client("no-content")
        .respond(&respond_request("x"), None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("content"), "{error}");
    let error = client("error")
        .respond(&respond_request("x"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, AgentError::Status { status: 500, ref body } if body == "boom"),
        "{error}"
    );
    let (deltas, _pieces) = Deltas::channel();
    let error = client("truncated")
        .respond(&respond_request("x"), Some(deltas))
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::StreamTruncated), "{error}");
    let (deltas, _pieces) = Deltas::channel();
    let error = client("reported")
        .respond(&respond_request("x"), Some(deltas))
        .await
        .unwrap_err();
    assert!(
        matches!(error, AgentError::Reported(ref m) if m == "out of tokens"),
        "{error}"
    );
    // Deadlines are the caller's: dropping the call at the deadline cancels it.
    let slow = client("slow");
    let late = tokio::time::timeout(Duration::from_millis(200), slow.info()).await;
    assert!(late.is_err());
    let error = client("nothing-here").info().await.unwrap_err();
    assert!(
        matches!(error, AgentError::Status { status: 404, .. }),
        "{error}"
    );
    let refused = HttpAgent::new("http://127.0.0.1:9", HttpAgent::default_client())
        .info()
        .await
        .unwrap_err();
    assert!(matches!(refused, AgentError::Transport(_)), "{refused}");
}
