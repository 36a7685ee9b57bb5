//! The floor server API over HTTP, with agents served by the crate's own helper.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use index_schema::wire::{
    AgentInfo, CreateFloorResponse, MessageList, RespondRequest, RespondResponse,
    ShouldWakeRequest, ShouldWakeResponse,
};
use reqwest::StatusCode;
use runtime::agent::{Agent, AgentError, AgentServer, Deltas, serve};
use runtime::server::{FloorServer, ServerSettings};
use serde_json::{Value, json};

/// An in-process agent that echoes the last message, `@` made harmless.
#[derive(Debug)]
struct Echo(&'static str);

#[async_trait]
impl Agent for Echo {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(format!("@{}", self.0)),
            ..AgentInfo::default()
        })
    }

    async fn should_wake(&self, _: &ShouldWakeRequest) -> Result<ShouldWakeResponse, AgentError> {
        Ok(ShouldWakeResponse::sleep())
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        _: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let last = request
            .messages
            .last()
            .map(|m| m.content.replace('@', ""))
            .unwrap_or_default();
        Ok(RespondResponse::reply(format!("{} heard {last}", self.0)))
    }
}

struct TestServer {
    base: String,
    client: reqwest::Client,
    _stop: tokio::sync::oneshot::Sender<()>,
    _agents: Vec<AgentServer>,
}

impl TestServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = FloorServer::new(ServerSettings {
            info_deadline: Duration::from_secs(2),
            ..ServerSettings::default()
        });
        tokio::spawn(server.serve(listener, async {
            let _ = stopped.await;
        }));
        Self {
            base,
            client: reqwest::Client::new(),
            _stop: stop,
            _agents: Vec::new(),
        }
    }

    async fn agent(&mut self, name: &'static str) -> String {
        let server = serve(Arc::new(Echo(name)), "127.0.0.1:0").await.unwrap();
        let url = server.url();
        self._agents.push(server);
        url
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn create(&self) -> (String, String) {
        let response = self
            .client
            .post(self.url("/floors"))
            .json(&json!({"name": "test floor", "config": {"history_limit": 20}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let created: CreateFloorResponse = response.json().await.unwrap();
        (created.floor_id, created.join_token.expose().to_owned())
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }
}

fn error_code(body: &Value) -> &str {
    body["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error body: {body}"))
}

/// Reads server-sent events until one named `stop` (at most 200 events, 10 s).
async fn sse_until(response: reqwest::Response, stop: &str) -> Vec<(String, Value)> {
    let mut events = runtime::agent::sse::events(response.bytes_stream(), 1 << 20);
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.len() < 200 {
        let event = tokio::time::timeout_at(deadline, events.next())
            .await
            .expect("events stopped")
            .expect("stream ended")
            .unwrap();
        let done = event.event == stop;
        seen.push((event.event, serde_json::from_str(&event.data).unwrap()));
        if done {
            return seen;
        }
    }
    panic!("no {stop} event in {seen:?}");
}

#[tokio::test]
async fn a_floor_is_created_joined_and_talked_to() {
    let mut server = TestServer::start().await;
    let echo = server.agent("echo").await;
    let other = server.agent("other").await;
    let (floor, token) = server.create().await;
    let t = Some(token.as_str());

    let (status, added) = server
        .call(
            reqwest::Method::POST,
            &format!("/floors/{floor}/agents"),
            t,
            Some(json!({"agent_id": "@echo", "endpoint": echo})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["agent_id"], "@echo");
    assert_eq!(added["status"], "added");
    // By URL alone: the handle comes from the agent's /ofc/info.
    let (status, added) = server
        .call(
            reqwest::Method::POST,
            &format!("/floors/{floor}/agents"),
            t,
            Some(json!({"agent_id": other})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["agent_id"], "@other");
    let (status, again) = server
        .call(
            reqwest::Method::POST,
            &format!("/floors/{floor}/agents"),
            t,
            Some(json!({"agent_id": other})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");

    let (status, state) = server
        .call(reqwest::Method::GET, &format!("/floors/{floor}"), t, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["name"], "test floor");
    assert_eq!(state["config"]["history_limit"], 20);
    let agents: Vec<&str> = state["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["@echo", "@other"]);

    let events = server
        .client
        .get(server.url(&format!("/floors/{floor}/events")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let (status, posted) = server
        .call(
            reqwest::Method::POST,
            &format!("/floors/{floor}/messages"),
            t,
            Some(json!({"from": "@user", "content": "@echo? hello"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(posted["message_id"], "msg-1");
    assert_eq!(posted["next_agent"], "@echo");
    let seen = sse_until(events, "turn_ended").await;
    let names: Vec<&str> = seen.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "message",
            "turn_started",
            "responding",
            "message",
            "call_finished",
            "turn_ended"
        ]
    );
    let (_, ended) = seen.last().unwrap();
    assert_eq!(ended["reason"]["reason"], "returned_to_user");

    let (status, list) = server
        .call(
            reqwest::Method::GET,
            &format!("/floors/{floor}/messages"),
            t,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let list: MessageList = serde_json::from_value(list).unwrap();
    let contents: Vec<&str> = list.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["@echo? hello", "echo heard echo? hello"]);
    let (_, since) = server
        .call(
            reqwest::Method::GET,
            &format!("/floors/{floor}/messages?since=msg-1"),
            t,
            None,
        )
        .await;
    assert_eq!(since["messages"].as_array().unwrap().len(), 1);
    assert_eq!(since["messages"][0]["from"], "@echo");
    let (_, latest) = server
        .call(
            reqwest::Method::GET,
            &format!("/floors/{floor}/messages?limit=1"),
            t,
            None,
        )
        .await;
    assert_eq!(latest["messages"][0]["id"], "msg-2");

    let (status, _) = server
        .call(
            reqwest::Method::DELETE,
            &format!("/floors/{floor}/agents/@other"),
            t,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = server
        .call(
            reqwest::Method::DELETE,
            &format!("/floors/{floor}/agents/@other"),
            t,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    let (status, _) = server
        .call(
            reqwest::Method::DELETE,
            &format!("/floors/{floor}"),
            t,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = server
        .call(reqwest::Method::GET, &format!("/floors/{floor}"), t, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn every_floor_route_wants_the_floors_join_token() {
    let server = TestServer::start().await;
    let (floor, token) = server.create().await;
    let (_, other_token) = server.create().await;
    let routes = [
        (reqwest::Method::GET, format!("/floors/{floor}"), None),
        (
            reqwest::Method::GET,
            format!("/floors/{floor}/messages"),
            None,
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/messages"),
            Some(json!({"from": "@user", "content": "hi"})),
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/agents"),
            Some(json!({"agent_id": "http://127.0.0.1:9"})),
        ),
        (
            reqwest::Method::DELETE,
            format!("/floors/{floor}/agents/@x"),
            None,
        ),
        (
            reqwest::Method::GET,
            format!("/floors/{floor}/events"),
            None,
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/cancel"),
            None,
        ),
        (reqwest::Method::DELETE, format!("/floors/{floor}"), None),
    ];
    for (method, path, body) in routes {
        for presented in [None, Some("wrong"), Some(other_token.as_str())] {
            let (status, answer) = server
                .call(method.clone(), &path, presented, body.clone())
                .await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {presented:?}: {answer}"
            );
            assert_eq!(error_code(&answer), "unauthorized");
            assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }
    // The token is checked before the body is looked at.
    let (status, _) = server
        .call(
            reqwest::Method::POST,
            &format!("/floors/{floor}/messages"),
            Some("wrong"),
            Some(json!({"nonsense": true})),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The right token still works, and an unknown floor is a 404.
    let (status, _) = server
        .call(
            reqwest::Method::GET,
            &format!("/floors/{floor}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = server
        .call(
            reqwest::Method::GET,
            "/floors/floor-nope",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_requests_get_a_clear_4xx_naming_the_problem() {
    let server = TestServer::start().await;
    let (floor, token) = server.create().await;
    let t = Some(token.as_str());

    // Not JSON at all.
    let response = server
        .client
        .post(server.url("/floors"))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(error_code(&body), "invalid_json");
    // Not declared as JSON.
    let response = server
        .client
        .post(server.url("/floors"))
        .body("{\"name\": \"x\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let cases: Vec<(reqwest::Method, String, Value, StatusCode, &str)> = vec![
        (
            reqwest::Method::POST,
            "/floors".into(),
            json!({"name": 3}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`name`",
        ),
        (
            reqwest::Method::POST,
            "/floors".into(),
            json!({}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing field `name`",
        ),
        (
            reqwest::Method::POST,
            "/floors".into(),
            json!({"name": "x", "config": {"max_agents": 0}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`config.max_agents`",
        ),
        (
            reqwest::Method::POST,
            "/floors".into(),
            json!({"name": "x", "config": {"max_agents": "many"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`config.max_agents`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/messages"),
            json!({"from": "@user"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing field `content`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/messages"),
            json!({"from": "@user", "content": ["a"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`content`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/messages"),
            json!({"from": "@code", "content": "hi"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`from`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/messages"),
            json!({"from": "@user", "content": "  "}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`content`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/agents"),
            json!({"agent_id": "@code"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`endpoint`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/agents"),
            json!({"agent_id": "@code", "endpoint": "ftp://x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`endpoint`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/agents"),
            json!({"agent_id": "@co de", "endpoint": "http://127.0.0.1:9"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`agent_id`",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/agents"),
            json!({"agent_id": "@code", "endpoint": "http://127.0.0.1:9"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "did not answer /ofc/info",
        ),
        (
            reqwest::Method::POST,
            format!("/floors/{floor}/agents"),
            json!({"agent": "@code"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing field `agent_id`",
        ),
    ];
    for (method, path, body, expected, needle) in cases {
        let (status, answer) = server
            .call(method.clone(), &path, t, Some(body.clone()))
            .await;
        assert_eq!(status, expected, "{method} {path} {body}: {answer}");
        let message = answer["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no message in {answer}"));
        assert!(
            message.contains(needle),
            "{method} {path} {body}: {message:?} lacks {needle:?}"
        );
    }
    for (query, expected) in [
        ("limit=0", StatusCode::BAD_REQUEST),
        ("limit=abc", StatusCode::BAD_REQUEST),
        ("limit=100000", StatusCode::BAD_REQUEST),
        ("since=msg-404", StatusCode::NOT_FOUND),
    ] {
        let (status, answer) = server
            .call(
                reqwest::Method::GET,
                &format!("/floors/{floor}/messages?{query}"),
                t,
                None,
            )
            .await;
        assert_eq!(status, expected, "{query}: {answer}");
        assert!(answer["message"].is_string(), "{answer}");
    }
}

#[tokio::test]
async fn the_agent_helper_serves_the_ofc_agent_api() {
    let server = serve(Arc::new(Echo("helper")), "127.0.0.1:0")
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let info: Value = client
        .get(format!("{}/ofc/info", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["id"], "@helper");
    let response = client
        .post(format!("{}/ofc/respond", server.url()))
        .json(&json!({"floor_id": "f", "messages": [{"id": "msg-1", "from": "@user", "content": "@helper? hi", "timestamp": "2024-01-15T10:30:00Z"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"content": "helper heard helper? hi"}));
    let response = client
        .post(format!("{}/ofc/should-wake", server.url()))
        .json(&json!({"floor_id": "f"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("last_message"),
        "{body}"
    );
    let provides: Value = client
        .get(format!("{}/ofc/mcp/provides", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(provides, json!({"provides": []}));
    server.shutdown().await;
}

/// A loopback web server standing for something an attacker wants the floor server to fetch:
/// a secrets file, an agent whose `/ofc/info` says more than it should, and an "agent" that
/// redirects to the secrets.
async fn bait() -> (String, tokio::task::JoinHandle<()>) {
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/admin/creds.json",
            get(|| async { axum::Json(json!({"id": "@creds", "password": "hunter2"})) }),
        )
        .route(
            "/chatty/ofc/info",
            get(|| async {
                axum::Json(json!({"id": "@chatty", "tagline": "hi", "aws_secret": "AKIA-leak"}))
            }),
        )
        .route(
            "/redirect/ofc/info",
            get(|| async { (StatusCode::FOUND, [("location", "/admin/creds.json")]) }),
        )
        .route("/notjson/ofc/info", get(|| async { "plain text" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, task)
}

/// Issue 13, point 1: the floor server is not a proxy into the machine it runs on.
#[tokio::test]
async fn the_floor_server_cannot_be_made_to_fetch_or_leak_what_it_should_not() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = FloorServer::new(ServerSettings {
        info_deadline: Duration::from_secs(2),
        create_token: Some(index_schema::wire::Token::new("server-secret")),
        allowed_host_headers: Some(vec!["localhost".into(), "127.0.0.1".into()]),
        ..ServerSettings::default()
    });
    tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let (bait, _bait) = bait().await;

    // Creating a floor wants the server token.
    let r = client
        .post(format!("{base}/floors"))
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let created: CreateFloorResponse = client
        .post(format!("{base}/floors"))
        .bearer_auth("server-secret")
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let join = created.join_token.expose().to_owned();
    let add = |body: Value| {
        let (client, url, join) = (
            client.clone(),
            format!("{base}/floors/{}/agents", created.floor_id),
            join.clone(),
        );
        async move {
            let r = client
                .post(url)
                .bearer_auth(join)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };

    // URLs that could make `/ofc/info` land elsewhere, or carry credentials.
    for (url, why) in [
        (format!("{bait}/admin/creds.json#"), "query or a fragment"),
        (format!("{bait}/admin/creds.json?x="), "query or a fragment"),
        (format!("http://user:pw@{}/x", &bait[7..]), "user info"),
        (
            "http://10.0.0.1/ofc".to_owned(),
            "does not call agents on that host",
        ),
        (
            "http://169.254.169.254/latest".to_owned(),
            "does not call agents on that host",
        ),
        ("file:///etc/passwd".to_owned(), "not an http(s) URL"),
    ] {
        let (s, b) = add(json!({"agent_id": "@x", "endpoint": url})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {b}");
        assert!(b["message"].as_str().unwrap().contains(why), "{url}: {b}");
    }

    // A redirect is not followed, and every failure reads the same (no port scanning by
    // error text): refused, redirected, not JSON.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        drop(l);
        format!("http://{a}")
    };
    for url in [
        format!("{bait}/redirect"),
        format!("{bait}/notjson"),
        closed.clone(),
    ] {
        let (s, b) = add(json!({"agent_id": "@x", "endpoint": url})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {b}");
        assert_eq!(
            b["message"].as_str().unwrap(),
            format!("{url} did not answer /ofc/info as an OFC agent"),
            "{b}"
        );
        assert!(!b.to_string().contains("hunter2"), "{b}");
    }

    // Fields an agent adds to /ofc/info are neither echoed nor kept.
    let (s, b) = add(json!({"agent_id": format!("{bait}/chatty")})).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    assert_eq!(b["agent_id"], "@chatty");
    assert!(!b.to_string().contains("AKIA"), "{b}");
    let state = client
        .get(format!("{base}/floors/{}", created.floor_id))
        .bearer_auth(&join)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!state.contains("AKIA"), "{state}");

    // DNS rebinding: a request addressed to another host name is refused.
    let r = client
        .get(format!("{base}/floors/{}", created.floor_id))
        .bearer_auth(&join)
        .header("host", format!("evil.example:{}", addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    let _ = stop.send(());
}

/// Issue 13, point 2: a floor's memory is bounded — message size (user messages refused, agent
/// replies cut), the history kept in memory (count and bytes) — and idle floors expire.
#[tokio::test]
async fn a_floor_bounds_messages_and_history_and_idle_floors_expire() {
    use runtime::floor::{Floor, FloorAgent, FloorError, FloorSettings};
    let settings = FloorSettings {
        max_message_bytes: 1000,
        max_history_messages: 10,
        max_history_bytes: 6000,
        ..FloorSettings::default()
    };
    let agent = FloorAgent::new(runtime::Handle::new("@big").unwrap(), Arc::new(Echo("big")));
    let floor = Floor::open("bounded", None, vec![agent], settings).unwrap();
    let r = floor.post("x".repeat(1001)).await;
    assert!(matches!(r, Err(FloorError::TooLarge(1000))), "{r:?}");

    // The echo of a 1000-byte message is longer than 1000 bytes: stored cut, with a marker.
    let summary = floor
        .post_and_wait(format!("@big? {}", "y".repeat(994)))
        .await
        .unwrap();
    let reply = &summary.messages[1].content;
    assert!(reply.len() < 1100, "{}", reply.len());
    assert!(reply.contains("more bytes cut"), "{reply}");

    // 30 more messages: at most 10 stay in memory, the newest among them.
    for i in 0..30 {
        floor.post(format!("note {i}")).await.unwrap();
    }
    let snapshot = floor.snapshot().await.unwrap();
    assert!(snapshot.messages <= 10, "{}", snapshot.messages);
    let kept = floor.messages(None, 100).await.unwrap();
    assert_eq!(kept.last().unwrap().content, "note 29");
    assert!(kept.iter().all(|m| !m.content.starts_with("@big?")));
    // Paging from a kept message still works.
    let after = floor.messages(Some(kept[0].id.clone()), 100).await.unwrap();
    assert_eq!(after.len(), kept.len() - 1);

    // Bytes bound the history too: five 990-byte messages exceed 6000 bytes with the rest.
    for _ in 0..8 {
        floor.post("z".repeat(990)).await.unwrap();
    }
    let kept = floor.messages(None, 100).await.unwrap();
    let bytes: usize = kept.iter().map(|m| m.content.len()).sum();
    assert!(bytes <= 6000, "{bytes}");
    floor.close().await.unwrap();

    // A server closes floors nobody has used for its idle time.
    let server = FloorServer::new(ServerSettings {
        idle_ttl: Duration::from_millis(100),
        ..ServerSettings::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.clone().serve(listener, async {
        let _ = stopped.await;
    }));
    let created = reqwest::Client::new()
        .post(format!("{base}/floors"))
        .json(&json!({"name": "idle"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: CreateFloorResponse = created.json().await.unwrap();
    assert_eq!(server.expire_idle().await, 0, "not idle yet");
    // The server's own sweeper closes it once idle (no request for 100 ms).
    let start = std::time::Instant::now();
    loop {
        let r = reqwest::Client::new()
            .get(format!("{base}/floors/{}", created.floor_id))
            .bearer_auth(created.join_token.expose())
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::NOT_FOUND {
            break;
        }
        // Each request is a use: wait longer than the idle time between them.
        assert!(start.elapsed() < Duration::from_secs(5), "never expired");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(server.expire_idle().await, 0);
    let _ = stop.send(());
}

/// Issue 13, point 3, for the floor server too: slow request heads and idle connections are
/// cut off, and past the connection cap a new connection gets a JSON 503 at once.
#[tokio::test]
async fn the_floor_server_bounds_its_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = FloorServer::new(ServerSettings {
        connections: ofc_net::ConnLimits::new(3, Duration::from_secs(1), Duration::from_secs(1)),
        ..ServerSettings::default()
    });
    tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    let read_all = |mut s: tokio::net::TcpStream| async move {
        let mut out = Vec::new();
        let r = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
        assert!(r.is_ok(), "the server kept the connection open");
        String::from_utf8_lossy(&out).into_owned()
    };
    // A slow-loris head is closed after the header timeout.
    let mut loris = tokio::net::TcpStream::connect(addr).await.unwrap();
    loris
        .write_all(b"POST /floors HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let start = std::time::Instant::now();
    read_all(loris).await;
    assert!(start.elapsed() >= Duration::from_millis(900));

    // Three idle connections fill the cap; the fourth is shed with a JSON 503.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let extra = tokio::net::TcpStream::connect(addr).await.unwrap();
    let answer = read_all(extra).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("\"overloaded\""), "{answer}");
    drop(idle);
    let _ = stop.send(());
}
