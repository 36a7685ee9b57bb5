//! The built-in LLM agent against an OpenAI-compatible server started here on loopback: a
//! scripted model (the model is not what is under test; the client, the tool loop, the
//! retries, the deadline and the pass rule are).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use index_schema::blueprint::{Blueprint, Defaults, InlineAgent};
use index_schema::wire::{Message, RespondRequest, RespondResponse, Timestamp};
use runtime::Handle;
use runtime::agent::{Agent, Deltas};
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::llm::{
    LlmAgent, LlmConfig, LlmConfigError, LlmSettings, ToolError, ToolSpec, Toolbox,
};
use serde_json::{Map, Value, json};

/// One scripted answer of the model server.
pub(crate) enum Reply {
    /// A 200 event stream made of these raw chunks, sent 2 ms apart.
    Stream(Vec<String>),
    /// An HTTP error, with an optional `Retry-After` in seconds.
    Status(u16, Option<u64>),
    /// A stream that never ends; sets the flag when the client goes away.
    Endless(Arc<AtomicBool>),
}

#[derive(Default)]
struct Model {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<(HeaderMap, Value)>>,
}

pub(crate) struct Server {
    pub(crate) endpoint: String,
    model: Arc<Model>,
}

async fn chat(State(model): State<Arc<Model>>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    model.requests.lock().unwrap().push((headers, body));
    let next = model.script.lock().unwrap().pop_front();
    match next {
        None => Response::builder()
            .status(500)
            .body(Body::from("script exhausted"))
            .unwrap(),
        Some(Reply::Status(code, retry_after)) => {
            let mut r = Response::builder().status(code);
            if let Some(s) = retry_after {
                r = r.header("retry-after", s.to_string());
            }
            r.body(Body::from("{\"error\":{\"message\":\"busy\"}}"))
                .unwrap()
        }
        Some(Reply::Stream(chunks)) => {
            let stream = futures::stream::unfold(chunks.into_iter(), |mut it| async move {
                let chunk = it.next()?;
                tokio::time::sleep(Duration::from_millis(2)).await;
                Some((Ok::<_, std::io::Error>(chunk), it))
            });
            sse(Body::from_stream(stream))
        }
        Some(Reply::Endless(gone)) => {
            struct Guard(Arc<AtomicBool>);
            impl Drop for Guard {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let guard = Guard(gone);
            let stream = futures::stream::unfold(guard, |g| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Some((Ok::<_, std::io::Error>(delta("blah ")), g))
            });
            sse(Body::from_stream(stream))
        }
    }
}

fn sse(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap()
}

fn delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}}]})
    )
}

pub(crate) fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

/// A whole answer in pieces.
pub(crate) fn answer(pieces: &[&str]) -> Reply {
    let mut chunks: Vec<String> = pieces.iter().map(|p| delta(p)).collect();
    chunks.push(finish("stop"));
    Reply::Stream(chunks)
}

pub(crate) fn tool_piece(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    )
}

impl Server {
    pub(crate) async fn start(script: Vec<Reply>) -> Self {
        let model = Arc::new(Model {
            script: Mutex::new(script.into()),
            requests: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(model.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            endpoint: format!("http://{addr}/v1"),
            model,
        }
    }

    pub(crate) fn requests(&self) -> Vec<(HeaderMap, Value)> {
        self.model.requests.lock().unwrap().clone()
    }
}

pub(crate) fn inline(yaml: &str) -> (InlineAgent, Option<Defaults>) {
    let bp = Blueprint::from_yaml(yaml).unwrap();
    (bp.agents[0].as_inline().unwrap().clone(), bp.defaults)
}

pub(crate) fn settings() -> LlmSettings {
    let mut s = LlmSettings::default();
    s.client.backoff_base = Duration::from_millis(5);
    s.client.deadline = Duration::from_secs(10);
    s
}

fn agent_for(server: &Server, extra: &str) -> LlmAgent {
    let (a, d) = inline(&format!(
        "defaults: {{endpoint: \"{}\", model: m1}}\nagents:\n  - id: \"@data\"\n    prompt: You analyse data.\n{extra}",
        server.endpoint
    ));
    let config = LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap();
    LlmAgent::new(config, settings(), reqwest::Client::new())
}

fn ts() -> Timestamp {
    Timestamp::parse("2024-01-15T10:30:00Z").unwrap()
}

fn request(content: &str) -> RespondRequest {
    RespondRequest {
        floor_id: "f".into(),
        user_id: None,
        messages: vec![Message::new("msg-1", "@user", content, ts())],
        wake_reason: None,
        initiator: None,
        context: None,
    }
}

fn reply(r: RespondResponse) -> index_schema::wire::AgentReply {
    match r {
        RespondResponse::Reply(r) => r,
        other => panic!("not a reply: {other:?}"),
    }
}

#[tokio::test]
async fn tokens_stream_as_deltas_and_the_request_is_openai_shaped() {
    let server = Server::start(vec![answer(&["Hel", "lo ", "@user"])]).await;
    let agent = agent_for(&server, "");
    let (deltas, mut rx) = Deltas::channel();
    let r = reply(agent.respond(&request("hi"), Some(deltas)).await.unwrap());
    assert_eq!(r.content, "Hello @user");
    let mut pieces = Vec::new();
    while let Ok(p) = rx.try_recv() {
        pieces.push(p);
    }
    assert_eq!(pieces, ["Hel", "lo ", "@user"]);
    let (headers, body) = &server.requests()[0];
    assert!(headers.get("authorization").is_none());
    assert_eq!(body["model"], "m1");
    assert_eq!(body["stream"], true);
    assert_eq!(body["temperature"], 0.7);
    assert!(body.get("tools").is_none());
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You analyse data.") && system.contains("[PASS]"),
        "{system}"
    );
    assert_eq!(
        messages[1],
        json!({"role": "user", "name": "user", "content": "hi"})
    );
}

#[derive(Debug, Default)]
struct Board {
    calls: Mutex<Vec<(String, Map<String, Value>)>>,
}

#[async_trait]
impl Toolbox for Board {
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![
            ToolSpec {
                name: "add".into(),
                description: "Adds a task".into(),
                parameters: json!({"type": "object", "properties": {"title": {"type": "string"}}}),
            },
            ToolSpec {
                name: "fail".into(),
                description: "Always fails".into(),
                parameters: json!({"type": "object"}),
            },
        ])
    }

    async fn call(&self, tool: &str, arguments: Map<String, Value>) -> Result<Value, ToolError> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_owned(), arguments.clone()));
        match tool {
            "add" => Ok(json!({"id": 1, "title": arguments["title"]})),
            _ => Err(ToolError("the board is on fire".into())),
        }
    }
}

#[tokio::test]
async fn a_tool_call_round_trip_with_errors_as_results() {
    let first = Reply::Stream(vec![
        tool_piece(0, Some("c1"), Some("board__add"), "{\"tit"),
        tool_piece(0, None, None, "le\": \"x\"}"),
        tool_piece(1, Some("c2"), Some("board__nope"), "{}"),
        tool_piece(2, Some("c3"), Some("board__add"), "{not json"),
        tool_piece(3, Some("c4"), Some("board__fail"), ""),
        finish("tool_calls"),
    ]);
    let server = Server::start(vec![first, answer(&["added it"])]).await;
    let agent = agent_for(&server, "    can_use_tools: true\n");
    let board = Arc::new(Board::default());
    assert_eq!(agent.add_toolbox("board", board.clone()).await.unwrap(), 2);
    let r = reply(agent.respond(&request("add x"), None).await.unwrap());
    assert_eq!(r.content, "added it");
    let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["board__add", "board__nope", "board__add", "board__fail"]
    );
    assert_eq!(r.tool_calls[0].arguments["title"], "x");
    assert_eq!(r.tool_results[0], json!({"id": 1, "title": "x"}));
    let texts: Vec<String> = r.tool_results[1..].iter().map(Value::to_string).collect();
    assert!(texts[0].contains("unknown tool `board__nope`"), "{texts:?}");
    assert!(texts[1].contains("not valid JSON"), "{texts:?}");
    assert!(texts[2].contains("the board is on fire"), "{texts:?}");
    // Only the two valid calls reached the toolbox.
    assert_eq!(board.calls.lock().unwrap().len(), 2);

    let requests = server.requests();
    let tools = requests[0].1["tools"].as_array().unwrap();
    assert_eq!(tools[0]["function"]["name"], "board__add");
    let second = requests[1].1["messages"].as_array().unwrap();
    let assistant = &second[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "c1");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"title\": \"x\"}"
    );
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "c1");
    assert_eq!(second[3]["content"], "{\"id\":1,\"title\":\"x\"}");
    assert_eq!(second.len(), 3 + 4);
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_hits_the_round_limit() {
    let call = || {
        Reply::Stream(vec![
            tool_piece(0, Some("c"), Some("board__add"), "{\"title\":\"again\"}"),
            finish("tool_calls"),
        ])
    };
    let server = Server::start((0..4).map(|_| call()).collect()).await;
    let (a, d) = inline(&format!(
        "defaults: {{endpoint: \"{}\", model: m}}\nagents:\n  - id: \"@t\"\n    can_use_tools: true\n",
        server.endpoint
    ));
    let mut s = settings();
    s.max_tool_rounds = 2;
    let agent = LlmAgent::new(
        LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap(),
        s,
        reqwest::Client::new(),
    );
    agent
        .add_toolbox("board", Arc::new(Board::default()))
        .await
        .unwrap();
    let error = agent
        .respond(&request("go"), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("still calling tools after 2 rounds"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn busy_answers_are_retried_with_retry_after_then_give_up() {
    let server = Server::start(vec![
        Reply::Status(429, Some(0)),
        Reply::Status(503, None),
        answer(&["ok"]),
    ])
    .await;
    let agent = agent_for(&server, "");
    let r = reply(agent.respond(&request("hi"), None).await.unwrap());
    assert_eq!(r.content, "ok");
    assert_eq!(server.requests().len(), 3);

    let server = Server::start((0..5).map(|_| Reply::Status(500, None)).collect()).await;
    let agent = agent_for(&server, "");
    let error = agent
        .respond(&request("hi"), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("HTTP 500 (after 4 attempt(s))") && error.contains("busy"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 4);

    // A client error is not retried.
    let server = Server::start(vec![Reply::Status(400, None), answer(&["never"])]).await;
    let agent = agent_for(&server, "");
    assert!(agent.respond(&request("hi"), None).await.is_err());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_is_a_clear_error() {
    let server = Server::start(vec![Reply::Stream(vec![delta("half an ans")])]).await;
    let agent = agent_for(&server, "");
    let error = agent
        .respond(&request("hi"), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("@data") && error.contains("ended before the answer was complete"),
        "{error}"
    );
}

#[tokio::test]
async fn passes_as_models_write_them() {
    for (pieces, reason) in [
        (vec!["[PA", "SS]"], None),
        (vec!["[pass]\n"], None),
        (vec!["Nothing to add. ", "[PASS]"], Some("Nothing to add")),
    ] {
        let server = Server::start(vec![answer(&pieces)]).await;
        let agent = agent_for(&server, "");
        let r = agent.respond(&request("hi"), None).await.unwrap();
        assert_eq!(
            r,
            RespondResponse::Pass {
                reason: reason.map(str::to_owned)
            },
            "{pieces:?}"
        );
    }
    let server = Server::start(vec![answer(&["Say [PASS] if you agree, otherwise go on"])]).await;
    let r = agent_for(&server, "")
        .respond(&request("hi"), None)
        .await
        .unwrap();
    assert!(!r.is_pass());
}

#[tokio::test]
async fn a_model_that_never_stops_is_cut_off_at_the_deadline_and_the_stream_is_closed() {
    let gone = Arc::new(AtomicBool::new(false));
    let server = Server::start(vec![Reply::Endless(gone.clone())]).await;
    let (a, d) = inline(&format!(
        "defaults: {{endpoint: \"{}\", model: m}}\nagents:\n  - id: \"@chatty\"\n",
        server.endpoint
    ));
    let mut s = settings();
    s.client.deadline = Duration::from_millis(300);
    let agent = LlmAgent::new(
        LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap(),
        s,
        reqwest::Client::new(),
    );
    let started = Instant::now();
    let error = agent
        .respond(&request("talk"), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("did not finish within 300ms"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The server sees the connection go away (its stream is dropped).
    let waited = Instant::now();
    while !gone.load(Ordering::SeqCst) && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        gone.load(Ordering::SeqCst),
        "the endless stream was not closed"
    );
}

#[tokio::test]
async fn dropping_the_respond_future_closes_the_stream() {
    let gone = Arc::new(AtomicBool::new(false));
    let server = Server::start(vec![Reply::Endless(gone.clone())]).await;
    let agent = agent_for(&server, "");
    let _ = tokio::time::timeout(
        Duration::from_millis(100),
        agent.respond(&request("x"), None),
    )
    .await;
    let waited = Instant::now();
    while !gone.load(Ordering::SeqCst) && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        gone.load(Ordering::SeqCst),
        "the stream outlived the cancelled call"
    );
}

#[tokio::test]
async fn the_api_key_is_sent_as_bearer_and_nowhere_else() {
    const KEY: &str = "sk-test-7f3a9c-secret";
    let server = Server::start(vec![answer(&["done"])]).await;
    let (a, d) = inline(&format!(
        "defaults: {{endpoint: \"{}\", model: m}}\nagents:\n  - id: \"@k\"\n    api_key_env: TEST_LLM_KEY\n",
        server.endpoint
    ));
    let agent = LlmAgent::from_blueprint(&a, d.as_ref(), |k| {
        (k == "TEST_LLM_KEY").then(|| KEY.to_owned())
    })
    .unwrap();
    assert!(!format!("{agent:?}").contains(KEY));
    assert!(!format!("{:?}", agent.config()).contains(KEY));

    // On a floor with a transcript: the key is in the request header, not in the transcript.
    let dir = tempfile::tempdir().unwrap();
    let settings = FloorSettings {
        transcript_dir: Some(dir.path().to_owned()),
        ..FloorSettings::default()
    };
    let floor = Floor::open(
        "keyed",
        None,
        vec![FloorAgent::new(Handle::new("k").unwrap(), Arc::new(agent))],
        settings,
    )
    .unwrap();
    let summary = floor.post_and_wait("@k? hello").await.unwrap();
    assert_eq!(summary.messages.last().unwrap().content, "done");
    floor.close().await.unwrap();
    let (headers, _) = &server.requests()[0];
    assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(KEY));
        assert!(text.contains("done"));
    }

    let error = LlmAgent::from_blueprint(&a, d.as_ref(), |_| None).unwrap_err();
    assert_eq!(
        error,
        LlmConfigError::MissingApiKey {
            agent: "@k".into(),
            variable: "TEST_LLM_KEY".into()
        }
    );
    assert!(error.to_string().contains("@k") && error.to_string().contains("TEST_LLM_KEY"));
}

#[test]
fn configuration_errors_name_the_agent() {
    let (a, _) = inline("agents:\n  - id: \"@x\"\n    model: m\n");
    assert_eq!(
        LlmConfig::from_blueprint(&a, None, |_| None).unwrap_err(),
        LlmConfigError::NoEndpoint { agent: "@x".into() }
    );
    let (a, d) = inline(
        "defaults: {endpoint: \"http://127.0.0.1:1/v1\"}\nagents:\n  - id: \"@x\"\n    model: m\n    temperature: 0\n    memory: 3\n    context_window: 1000\n    activation: always\n",
    );
    let c = LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap();
    assert_eq!(
        (c.temperature, c.memory, c.context_window),
        (0.0, Some(3), Some(1000))
    );
    assert_eq!(c.endpoint.as_str(), "http://127.0.0.1:1/v1");
    let (a, _) = inline("agents:\n  - id: \"@y\"\n    type: acp\n    command: c\n");
    assert!(matches!(
        LlmConfig::from_blueprint(&a, None, |_| None),
        Err(LlmConfigError::NotLlm { .. })
    ));
}

#[tokio::test]
async fn tool_activity_on_the_floor_reaches_other_agents_prompts_per_tool_context() {
    // @data calls a tool on the floor; the floor keeps the call and its result in the message.
    let server = Server::start(vec![
        Reply::Stream(vec![
            tool_piece(0, Some("c1"), Some("board__add"), "{\"title\":\"line1\"}"),
            finish("tool_calls"),
        ]),
        answer(&["added"]),
    ])
    .await;
    let data = agent_for(&server, "    can_use_tools: true\n");
    data.add_toolbox("board", Arc::new(Board::default()))
        .await
        .unwrap();
    let floor = Floor::open(
        "tools",
        None,
        vec![FloorAgent::new(
            Handle::new("data").unwrap(),
            Arc::new(data),
        )],
        FloorSettings::default(),
    )
    .unwrap();
    let summary = floor.post_and_wait("@data? add a task").await.unwrap();
    let stored = summary.messages.last().unwrap().clone();
    assert_eq!(stored.tool_calls[0].name, "board__add");
    assert_eq!(stored.tool_results[0]["title"], "line1");
    floor.close().await.unwrap();

    // Another agent sees it as its tool_context says.
    let history = vec![Message::new("m1", "@user", "go", ts()), stored];
    for (level, expect) in [
        (
            "full",
            Some("added\n\n$ board__add {\"title\":\"line1\"}\n{\"id\":1,\"title\":\"line1\"}"),
        ),
        (
            "summary",
            Some("added\n\n$ board__add {\"title\":\"line1\"}\n{\"id\":1,\"title\":\"line1\"}"),
        ),
        ("none", None),
    ] {
        let other = Server::start(vec![]).await;
        let (a, d) = inline(&format!(
            "defaults: {{endpoint: \"{}\", model: m}}\nagents:\n  - id: \"@code\"\n    tool_context: {level}\n",
            other.endpoint
        ));
        let agent = LlmAgent::new(
            LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap(),
            settings(),
            reqwest::Client::new(),
        );
        let messages = agent.build_messages(&history);
        let content = messages[2].content.clone().unwrap();
        assert_eq!(messages[2].name.as_deref(), Some("data"));
        match expect {
            Some(e) => assert_eq!(content, e, "{level}"),
            None => assert_eq!(content, "added", "{level}"),
        }
    }
}

#[test]
fn memory_and_context_window_trim_the_oldest_messages() {
    let history: Vec<Message> = (0..20)
        .map(|i| {
            Message::new(
                format!("m{i}"),
                "@user",
                format!("message {i} {}", "w".repeat(96)),
                ts(),
            )
        })
        .collect();
    let build = |extra: &str| {
        let (a, d) = inline(&format!(
            "defaults: {{endpoint: \"http://127.0.0.1:1/v1\", model: m}}\nagents:\n  - id: \"@a\"\n{extra}"
        ));
        LlmAgent::new(
            LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap(),
            settings(),
            reqwest::Client::new(),
        )
        .build_messages(&history)
    };
    assert_eq!(build("").len(), 21);
    let windowed = build("    memory: 5\n");
    assert_eq!(windowed.len(), 6);
    assert!(
        windowed[1]
            .content
            .as_deref()
            .unwrap()
            .starts_with("message 15 ")
    );
    // Each message is ~30 estimated tokens; the system prompt ~70: 300 tokens keep ~7.
    let fitted = build("    context_window: 300\n");
    let total = runtime::llm::estimate_tokens(&fitted);
    assert!(total <= 300, "{total}");
    assert!(fitted.len() > 2 && fitted.len() < 21);
    assert!(
        fitted
            .last()
            .unwrap()
            .content
            .as_deref()
            .unwrap()
            .starts_with("message 19 ")
    );
    // The newest message stays even when it alone is too large.
    let tiny = build("    context_window: 256\n    memory: 1\n");
    assert_eq!(tiny.len(), 2);
}

fn floor_of(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| Message::new(format!("m{i}"), "@user", format!("fact number {i}"), ts()))
        .collect()
}

fn respond_to(messages: Vec<Message>) -> RespondRequest {
    RespondRequest {
        messages,
        ..request("")
    }
}

fn chat_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn memory_summary_folds_older_messages_into_a_running_summary() {
    let server = Server::start(vec![
        answer(&["Facts 0 to 2 were given."]),
        answer(&["first"]),
        answer(&["second"]),
        answer(&["Facts 0 to 4 were given."]),
        answer(&["third"]),
    ])
    .await;
    let agent = agent_for(&server, "    memory: {window: 2, summary: true}\n");

    // 5 messages, window 2 (+1 slack): the 3 oldest are summarised first.
    let r = reply(agent.respond(&respond_to(floor_of(5)), None).await.unwrap());
    assert_eq!(r.content, "first");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let summary_call = chat_texts(&requests[0].1);
    assert!(
        summary_call[0].contains("memory of @data"),
        "{summary_call:?}"
    );
    let input = &summary_call[1];
    for i in 0..3 {
        assert!(
            input.contains(&format!("@user: fact number {i}")),
            "{input}"
        );
    }
    assert!(!input.contains("fact number 3"), "{input}");
    assert!(!input.contains("Summary so far"), "{input}");
    let prompt = chat_texts(&requests[1].1);
    assert_eq!(prompt.len(), 4, "system, summary, 2 messages: {prompt:?}");
    assert!(prompt[1].contains("Facts 0 to 2 were given."), "{prompt:?}");
    assert_eq!(prompt[2], "fact number 3");
    assert_eq!(prompt[3], "fact number 4");

    // One more message: within the slack, no summary call; the summary stays.
    let r = reply(agent.respond(&respond_to(floor_of(6)), None).await.unwrap());
    assert_eq!(r.content, "second");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let prompt = chat_texts(&requests[2].1);
    assert_eq!(prompt.len(), 5, "{prompt:?}");
    assert!(prompt[1].contains("Facts 0 to 2"), "{prompt:?}");
    assert_eq!(prompt[2], "fact number 3");

    // Past the slack: the old summary and messages 3 and 4 make the new one.
    let r = reply(agent.respond(&respond_to(floor_of(7)), None).await.unwrap());
    assert_eq!(r.content, "third");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let input = &chat_texts(&requests[3].1)[1];
    assert!(
        input.contains("Summary so far:\nFacts 0 to 2 were given."),
        "{input}"
    );
    assert!(
        input.contains("@user: fact number 3\n@user: fact number 4"),
        "{input}"
    );
    assert!(!input.contains("fact number 2"), "{input}");
    assert!(!input.contains("fact number 5"), "{input}");
    let prompt = chat_texts(&requests[4].1);
    assert!(prompt[1].contains("Facts 0 to 4 were given."), "{prompt:?}");
    assert_eq!(&prompt[2..], ["fact number 5", "fact number 6"]);
}

#[tokio::test]
async fn a_failed_summary_call_keeps_the_old_summary_and_a_cleared_floor_drops_it() {
    let server = Server::start(vec![
        answer(&["S1: facts 0 to 2."]),
        answer(&["a"]),
        Reply::Status(400, None),
        answer(&["windowed"]),
        answer(&["fresh"]),
    ])
    .await;
    let agent = agent_for(&server, "    memory: {window: 2, summary: true}\n");
    let r = reply(agent.respond(&respond_to(floor_of(5)), None).await.unwrap());
    assert_eq!(r.content, "a");

    // The next summary call fails: the answer still comes, from the window and the old
    // summary.
    let r = reply(agent.respond(&respond_to(floor_of(7)), None).await.unwrap());
    assert_eq!(r.content, "windowed");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let prompt = chat_texts(&requests[3].1);
    assert!(prompt[1].contains("S1: facts 0 to 2."), "{prompt:?}");
    assert_eq!(&prompt[2..], ["fact number 5", "fact number 6"]);

    // After /clear the floor starts again: the message the summary ended at is gone, and so
    // is the summary.
    let fresh = vec![Message::new("n0", "@user", "new start", ts())];
    let r = reply(agent.respond(&respond_to(fresh), None).await.unwrap());
    assert_eq!(r.content, "fresh");
    let prompt = chat_texts(&server.requests()[4].1);
    assert_eq!(&prompt[1..], ["new start"]);
}

/// A prompt source is asked before each turn; when it fails, the turn fails naming the agent
/// and the model is not called.
#[tokio::test]
async fn a_prompt_source_renders_each_turn_and_its_error_ends_the_turn() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = Server::start(vec![answer(&["one"]), answer(&["two"])]).await;
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = turns.clone();
    let agent = agent_for(&server, "").with_prompt_source(Arc::new(move || {
        match counter.fetch_add(1, Ordering::SeqCst) {
            2 => Err("`readfile \"gone.md\"`: cannot read it".to_owned()),
            n => Ok(format!("Rendered for turn {n}.")),
        }
    }));
    for n in 0..2 {
        agent.respond(&request("hi"), None).await.unwrap();
        let system = server.requests()[n].1["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            system.starts_with(&format!("Rendered for turn {n}.")),
            "{system}"
        );
    }
    let e = agent.respond(&request("hi"), None).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("@data: prompt: `readfile \"gone.md\"`"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 2);
}

/// `api_key` written in the blueprint: the agent's (unless empty) over `defaults.api_key`,
/// `api_key_env` over both, no key sends no header; the config's Debug never shows it.
#[test]
fn a_written_api_key_is_used_and_never_shown() {
    use secrecy::ExposeSecret;
    let key = |yaml: &str| {
        let (a, d) = inline(yaml);
        let c = LlmConfig::from_blueprint(&a, d.as_ref(), |v| {
            (v == "K").then(|| "sk-env-4711".to_owned())
        })
        .unwrap();
        assert!(!format!("{c:?}").contains("4711"));
        c.api_key.map(|k| k.expose_secret().to_owned())
    };
    let head = "defaults: {endpoint: \"http://127.0.0.1:1/v1\", model: m, api_key: sk-default-4711}\nagents:\n  - id: \"@x\"\n";
    assert_eq!(key(head).as_deref(), Some("sk-default-4711"));
    assert_eq!(
        key(&format!("{head}    api_key: sk-agent-4711\n")).as_deref(),
        Some("sk-agent-4711")
    );
    assert_eq!(
        key(&format!("{head}    api_key_env: K\n")).as_deref(),
        Some("sk-env-4711")
    );
    assert_eq!(
        key(&format!("{head}    api_key: \"\"\n")).as_deref(),
        Some("sk-default-4711")
    );
    assert_eq!(
        key(
            "defaults: {endpoint: \"http://127.0.0.1:1/v1\", model: m}\nagents:\n  - {id: \"@x\", api_key: \"\"}\n"
        ),
        None
    );
}
