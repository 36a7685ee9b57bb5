//! Furniture against real MCP servers — PyPI `mcp-server-time` and npm
//! `@modelcontextprotocol/server-filesystem` over stdio (installed by
//! `scripts/install-test-deps`), and an rmcp streamable-HTTP server started here on loopback —
//! and an LLM agent (scripted model) calling their tools through the floor. Plus the task
//! board and the authorisation matrix.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use index_schema::blueprint::{Blueprint, Furniture as FurnitureEntry};
use index_schema::name::AgentHandle;
use index_schema::wire::{McpGrant, Permission, RespondResponse};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use runtime::Handle;
use runtime::agent::Agent;
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use runtime::furniture::{
    Class, FloorFurniture, Furniture, FurnitureConnector, FurnitureSettings, Grants, Hints,
    McpEndpoints, McpToolbox, classify,
};
use runtime::llm::{LlmAgent, LlmConfig, ToolConnector, Toolbox};
use serde_json::{Map, Value, json};

use crate::llm_agent::{Reply, Server, answer, finish, inline, settings, tool_piece};

fn peers_dir() -> PathBuf {
    std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from)
        .join("mcp")
}

/// The `mcp-server-time` executable; the test fails (never skips) without it.
pub(crate) fn time_server() -> String {
    let path = peers_dir().join("time-venv/bin/mcp-server-time");
    assert!(
        path.is_file(),
        "mcp-server-time is not installed at {}: run scripts/install-test-deps (or scripts/peers/mcp-servers)",
        path.display()
    );
    path.display().to_string()
}

/// `node` and the filesystem server's script; the test fails (never skips) without them.
fn filesystem_server() -> (String, String) {
    let path = peers_dir()
        .join("fs-pkg/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        path.is_file(),
        "@modelcontextprotocol/server-filesystem is not installed at {}: run scripts/install-test-deps (or scripts/peers/mcp-servers)",
        path.display()
    );
    ("node".to_owned(), path.display().to_string())
}

fn entry(yaml: &str) -> FurnitureEntry {
    let bp = Blueprint::from_yaml(&format!("agents: []\nfurniture:\n  - {yaml}\n"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    bp.furniture[0].clone()
}

fn time_entry() -> FurnitureEntry {
    entry(&format!(
        "{{name: time, type: mcp, command: {:?}, args: [--local-timezone, UTC]}}",
        time_server()
    ))
}

fn quick() -> FurnitureSettings {
    FurnitureSettings {
        start_deadline: Duration::from_secs(30),
        ..FurnitureSettings::default()
    }
}

fn handle(s: &str) -> AgentHandle {
    s.parse().unwrap()
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn the_time_server_over_stdio_lists_its_tools_and_answers_a_call() {
    let time = Furniture::start(&time_entry(), &quick()).await.unwrap();
    assert_eq!(time.kind(), "mcp (stdio)");
    let names: Vec<&str> = time.tools().iter().map(|t| t.spec.name.as_str()).collect();
    assert!(names.contains(&"get_current_time"), "{names:?}");
    assert!(names.contains(&"convert_time"), "{names:?}");
    let schema = &time.tool("get_current_time").unwrap().spec.parameters;
    assert_eq!(schema["type"], "object", "{schema}");
    let mut args = Map::new();
    args.insert("timezone".into(), json!("Europe/Paris"));
    let out = text_of(&time.call("get_current_time", args).await.unwrap());
    assert!(out.contains("Europe/Paris"), "{out}");
    // A failing call is a tool error with the server's message, not a panic or a success.
    let mut bad = Map::new();
    bad.insert("timezone".into(), json!("Not/AZone"));
    let err = time.call("get_current_time", bad).await.unwrap_err();
    assert!(err.0.contains("Not/AZone"), "{err}");
    time.shutdown().await;
}

#[tokio::test]
async fn a_command_that_does_not_exist_or_is_not_mcp_is_a_clear_error() {
    let missing = entry("{name: gone, type: mcp, command: /nonexistent/mcp-server}");
    let e = Furniture::start(&missing, &quick())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("furniture `gone`") && e.contains("/nonexistent/mcp-server"),
        "{e}"
    );
    // A process that prints to stderr and exits: the error carries its output.
    let liar = entry(
        "{name: liar, type: mcp, command: sh, args: [-c, 'echo not an mcp server >&2; exit 3']}",
    );
    let log = tempfile::NamedTempFile::new().unwrap();
    let settings = FurnitureSettings {
        stderr_log: Some(log.path().to_owned()),
        ..quick()
    };
    let e = Furniture::start(&liar, &settings)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("furniture `liar`"), "{e}");
    assert!(e.contains("handshake"), "{e}");
    assert!(e.contains("not an mcp server"), "{e}");
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(logged, "[furniture liar] not an mcp server\n");
}

#[tokio::test]
async fn an_access_override_must_name_a_real_tool() {
    let mut e = time_entry();
    e.access
        .insert("get_the_time".into(), index_schema::blueprint::Access::Read);
    let err = Furniture::start(&e, &quick())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("get_the_time") && err.contains("get_current_time"),
        "{err}"
    );
}

// --- streamable HTTP: an rmcp server started here -------------------------------------------

#[derive(Debug, Clone, Default)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}})
            .as_object()
            .cloned()
            .unwrap();
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Says the text back", schema.clone())
                .annotate(ToolAnnotations::new().read_only(true)),
            Tool::new("append", "Appends the text to a log", schema.clone())
                .annotate(ToolAnnotations::new().read_only(false).destructive(false)),
            Tool::new("shout", "Says the text back, loudly", schema),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let out = match request.name.as_ref() {
            "echo" | "append" => text,
            "shout" => text.to_uppercase(),
            other => {
                return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(format!("no tool {other}")),
                ])));
            }
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(out),
        ])))
    }
}

/// Serves [`Echo`] over streamable HTTP on 127.0.0.1 and answers its URL.
pub(crate) async fn echo_server() -> String {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn a_server_over_streamable_http_is_furniture_and_its_annotations_set_the_classes() {
    let url = echo_server().await;
    let echo = Furniture::start(
        &entry(&format!("{{name: echo, type: mcp, url: \"{url}\"}}")),
        &quick(),
    )
    .await
    .unwrap();
    assert_eq!(echo.kind(), "mcp (streamable HTTP)");
    let class = |t: &str| echo.tool(t).unwrap().class;
    assert_eq!(class("echo"), Class::Read);
    assert_eq!(class("append"), Class::Write);
    assert_eq!(class("shout"), Class::Execute, "no annotations: execute");
    let mut args = Map::new();
    args.insert("text".into(), json!("hi"));
    assert_eq!(echo.call("shout", args).await.unwrap(), json!("HI"));
    let err = echo.call("nope", Map::new()).await.unwrap_err();
    assert!(err.0.contains("no tool nope"), "{err}");
    echo.shutdown().await;

    // The blueprint's `access` overrides an annotation.
    let echo = Furniture::start(
        &entry(&format!(
            "{{name: echo, type: mcp, url: \"{url}\", access: {{shout: read, echo: execute}}}}"
        )),
        &quick(),
    )
    .await
    .unwrap();
    assert_eq!(echo.tool("shout").unwrap().class, Class::Read);
    assert_eq!(echo.tool("echo").unwrap().class, Class::Execute);
    echo.shutdown().await;

    // Nothing listening: a clear error naming the URL.
    let dead = entry("{name: dead, type: mcp, url: \"http://127.0.0.1:1/mcp\"}");
    let e = Furniture::start(&dead, &quick())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("furniture `dead`") && e.contains("127.0.0.1:1"),
        "{e}"
    );
}

/// [`Echo`] over streamable HTTP that answers 401 to any request without `X-Api-Key: key`.
async fn echo_server_wanting(key: &'static str) -> String {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| async move {
                if req.headers().get("x-api-key").and_then(|v| v.to_str().ok()) == Some(key) {
                    next.run(req).await
                } else {
                    axum::response::IntoResponse::into_response(
                        axum::http::StatusCode::UNAUTHORIZED,
                    )
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}

/// A furniture reached by `url` sends the blueprint's `headers` with every request; without
/// them, or with a wrong one, the server's refusal is a clear start error that never shows the
/// header's value.
#[tokio::test]
async fn a_url_furniture_sends_its_headers() {
    let url = echo_server_wanting("k-123").await;
    let keyed = Furniture::start(
        &entry(&format!(
            "{{name: keyed, type: mcp, url: \"{url}\", headers: {{X-Api-Key: k-123}}}}"
        )),
        &quick(),
    )
    .await
    .unwrap();
    let mut args = Map::new();
    args.insert("text".into(), json!("hi"));
    assert_eq!(keyed.call("shout", args).await.unwrap(), json!("HI"));
    keyed.shutdown().await;

    let without = Furniture::start(
        &entry(&format!("{{name: keyed, type: mcp, url: \"{url}\"}}")),
        &quick(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(without.contains("furniture `keyed`"), "{without}");
    let wrong = Furniture::start(
        &entry(&format!(
            "{{name: keyed, type: mcp, url: \"{url}\", headers: {{X-Api-Key: s3cret-wrong}}}}"
        )),
        &quick(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(wrong.contains("furniture `keyed`"), "{wrong}");
    assert!(
        !wrong.contains("s3cret-wrong"),
        "the header's value leaked: {wrong}"
    );
}

#[test]
fn annotations_classify_conservatively() {
    let h = |r, d| Hints {
        read_only: r,
        destructive: d,
    };
    assert_eq!(classify(h(Some(true), None)), Class::Read);
    assert_eq!(classify(h(Some(true), Some(true))), Class::Read);
    assert_eq!(classify(h(Some(false), Some(false))), Class::Write);
    assert_eq!(classify(h(None, Some(false))), Class::Write);
    assert_eq!(classify(h(Some(false), Some(true))), Class::Execute);
    assert_eq!(classify(h(Some(false), None)), Class::Execute);
    assert_eq!(classify(h(None, None)), Class::Execute);
}

// --- the task board --------------------------------------------------------------------------

#[tokio::test]
async fn the_task_board_adds_lists_and_updates_tasks() {
    let board = Furniture::taskboard("tasks");
    let call = |tool: &'static str, args: Value| {
        let board = &board;
        async move {
            board
                .call(tool, args.as_object().cloned().unwrap_or_default())
                .await
        }
    };
    let t = call("add_task", json!({"title": "parse the CSV"}))
        .await
        .unwrap();
    assert_eq!(
        t,
        json!({"id": 1, "title": "parse the CSV", "status": "todo"})
    );
    call(
        "add_task",
        json!({"title": "plot", "description": "a bar chart"}),
    )
    .await
    .unwrap();
    let t = call(
        "update_task",
        json!({"id": 1, "status": "in_progress", "assignee": "@coder"}),
    )
    .await
    .unwrap();
    assert_eq!(t["assignee"], "@coder");
    let todo = call("list_tasks", json!({"status": "todo"})).await.unwrap();
    assert_eq!(todo["count"], 1);
    assert_eq!(todo["tasks"][0]["title"], "plot");
    assert_eq!(
        call("get_task", json!({"id": 2})).await.unwrap()["description"],
        "a bar chart"
    );
    for (tool, args, expect) in [
        ("add_task", json!({}), "`title` is required"),
        ("update_task", json!({"id": 9}), "no task 9"),
        (
            "update_task",
            json!({"id": 1, "status": "later"}),
            "`status` must be one of",
        ),
        ("get_task", json!({"id": "one"}), "positive integer"),
        ("drop_table", json!({}), "no tool `drop_table`"),
    ] {
        let e = call(tool, args).await.unwrap_err();
        assert!(e.0.contains(expect), "{tool}: {e}");
    }
    let classes: HashMap<&str, Class> = board
        .tools()
        .iter()
        .map(|t| (t.spec.name.as_str(), t.class))
        .collect();
    assert_eq!(classes["list_tasks"], Class::Read);
    assert_eq!(classes["get_task"], Class::Read);
    assert_eq!(classes["add_task"], Class::Write);
    assert_eq!(classes["update_task"], Class::Write);
}

// --- an LLM agent calling furniture through the floor ----------------------------------------

fn llm(server: &Server, id: &str) -> LlmAgent {
    let (a, d) = inline(&format!(
        "defaults: {{endpoint: \"{}\", model: m}}\nagents:\n  - id: \"{id}\"\n",
        server.endpoint
    ));
    LlmAgent::new(
        LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap(),
        settings(),
        reqwest::Client::new(),
    )
}

/// Gives `agent` (handle `id`) its guard on every piece of the floor's furniture.
async fn furnish(agent: &LlmAgent, floor: &Arc<FloorFurniture>, id: &str) {
    for guard in floor.guards(id) {
        let name = guard.name().to_owned();
        agent.add_toolbox(&name, Arc::new(guard)).await.unwrap();
    }
}

#[tokio::test]
async fn an_llm_agent_calls_the_time_server_through_the_floor_and_reads_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let time = Furniture::start(&time_entry(), &quick()).await.unwrap();
    let id = handle("@clock");
    let grants = Grants::from_blueprint(None, [(&id, &["time".to_owned()][..])]);
    let furniture = FloorFurniture::new("f1", vec![time], grants);
    let model = Server::start(vec![
        Reply::Stream(vec![
            tool_piece(
                0,
                Some("c1"),
                Some("time__get_current_time"),
                "{\"timezone\": \"Asia/Tokyo\"}",
            ),
            finish("tool_calls"),
        ]),
        answer(&["It is late in Tokyo."]),
    ])
    .await;
    let agent = llm(&model, "@clock");
    furnish(&agent, &furniture, "@clock").await;
    let floor = Floor::open(
        "f1",
        None,
        vec![FloorAgent::new(
            Handle::new("clock").unwrap(),
            Arc::new(agent),
        )],
        FloorSettings {
            transcript_dir: Some(dir.path().to_owned()),
            ..FloorSettings::default()
        },
    )
    .unwrap();
    let summary = floor
        .post_and_wait("@clock? what time is it in Tokyo?")
        .await
        .unwrap();
    let stored = summary.messages.last().unwrap().clone();
    floor.close().await.unwrap();
    furniture.shutdown().await;

    assert_eq!(stored.content, "It is late in Tokyo.");
    assert_eq!(stored.tool_calls[0].name, "time__get_current_time");
    let result = text_of(&stored.tool_results[0]);
    assert!(result.contains("Asia/Tokyo"), "{result}");
    // The model was told about the tool and read its result in the second request.
    let requests = model.requests();
    let tools: Vec<&str> = requests[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"time__get_current_time"), "{tools:?}");
    let second = requests[1].1["messages"].as_array().unwrap();
    let tool_message = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains("Asia/Tokyo"),
        "{tool_message}"
    );
    // And the transcript has the call and its result.
    let transcript = std::fs::read_to_string(dir.path().join("f1.jsonl")).unwrap();
    assert!(
        transcript.contains("time__get_current_time"),
        "{transcript}"
    );
    assert!(transcript.contains("Asia/Tokyo"), "{transcript}");
}

#[tokio::test]
async fn a_filesystem_tool_cannot_leave_its_root_through_the_floor() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("inside.txt"), "the inside secret").unwrap();
    std::fs::write(outside.path().join("outside.txt"), "the outside secret").unwrap();
    let (node, script) = filesystem_server();
    let fs_entry = entry(&format!(
        "{{name: fs, type: mcp, command: {node:?}, args: [{script:?}, {:?}]}}",
        root.path().display().to_string()
    ));
    let fs = Furniture::start(&fs_entry, &quick()).await.unwrap();
    let read_tool = ["read_text_file", "read_file"]
        .into_iter()
        .find(|t| fs.tool(t).is_some())
        .expect("the filesystem server has a read tool");
    let id = handle("@files");
    let grants = Grants::from_blueprint(None, [(&id, &["fs".to_owned()][..])]);
    let furniture = FloorFurniture::new("f2", vec![fs], grants);
    let inside = root.path().join("inside.txt").display().to_string();
    let escape = format!(
        "{}/../{}/outside.txt",
        root.path().display(),
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    let absolute = outside.path().join("outside.txt").display().to_string();
    let call = |i: usize, path: &str| {
        tool_piece(
            i,
            Some(&format!("c{i}")),
            Some(&format!("fs__{read_tool}")),
            &json!({"path": path}).to_string(),
        )
    };
    let model = Server::start(vec![
        Reply::Stream(vec![
            call(0, &inside),
            call(1, &escape),
            call(2, &absolute),
            call(3, "/etc/passwd"),
            finish("tool_calls"),
        ]),
        answer(&["read what I could"]),
    ])
    .await;
    let agent = llm(&model, "@files");
    furnish(&agent, &furniture, "@files").await;
    let floor = Floor::open(
        "f2",
        None,
        vec![FloorAgent::new(
            Handle::new("files").unwrap(),
            Arc::new(agent),
        )],
        FloorSettings::default(),
    )
    .unwrap();
    let summary = floor.post_and_wait("@files? read them").await.unwrap();
    let stored = summary.messages.last().unwrap().clone();
    floor.close().await.unwrap();
    furniture.shutdown().await;

    let results: Vec<String> = stored.tool_results.iter().map(text_of).collect();
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results[0].contains("the inside secret"), "{results:?}");
    for r in &results[1..] {
        assert!(r.starts_with("[error:"), "{results:?}");
        assert!(
            !r.contains("the outside secret") && !r.contains("root:"),
            "{results:?}"
        );
    }
}

// --- grants ----------------------------------------------------------------------------------

/// A toolbox with one tool per class, counting the calls that reach it.
#[derive(Debug, Default)]
struct Bench {
    calls: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Toolbox for Bench {
    async fn tools(&self) -> Result<Vec<runtime::llm::ToolSpec>, runtime::llm::ToolError> {
        Ok(["peek", "poke", "run"]
            .into_iter()
            .map(|n| runtime::llm::ToolSpec {
                name: n.into(),
                description: n.into(),
                parameters: json!({"type": "object"}),
            })
            .collect())
    }

    async fn call(
        &self,
        tool: &str,
        _arguments: Map<String, Value>,
    ) -> Result<Value, runtime::llm::ToolError> {
        self.calls.lock().unwrap().push(tool.to_owned());
        Ok(json!(format!("{tool} done")))
    }
}

fn bench_class(tool: &str) -> Class {
    match tool {
        "peek" => Class::Read,
        "poke" => Class::Write,
        _ => Class::Execute,
    }
}

/// Two agents, two pieces (`lab` and `shop`, both the [`Bench`]), under `floor_manager`.
async fn matrix_floor(manager: &str) -> (Arc<FloorFurniture>, Arc<Bench>, Arc<Bench>) {
    let yaml = format!(
        "agents:\n  - {{id: \"@ann\", model: m, furniture: [lab, shop]}}\n  - {{id: \"@bob\", model: m, furniture: [lab]}}\nfurniture:\n  - {{name: lab, type: taskboard}}\n  - {{name: shop, type: taskboard}}\n{manager}"
    );
    let bp = Blueprint::from_yaml(&yaml).unwrap_or_else(|e| panic!("{e:?}"));
    let lists: Vec<(AgentHandle, Vec<String>)> = bp
        .agents
        .iter()
        .map(|a| {
            let a = a.as_inline().unwrap();
            (a.id.clone(), a.furniture.clone())
        })
        .collect();
    let grants = Grants::from_blueprint(
        bp.floor_manager.as_ref(),
        lists.iter().map(|(h, f)| (h, f.as_slice())),
    );
    let lab = Arc::new(Bench::default());
    let shop = Arc::new(Bench::default());
    let pieces = vec![
        Furniture::from_toolbox("lab", lab.clone(), bench_class)
            .await
            .unwrap(),
        Furniture::from_toolbox("shop", shop.clone(), bench_class)
            .await
            .unwrap(),
    ];
    (FloorFurniture::new("m", pieces, grants), lab, shop)
}

const NO_MANAGER: &str = "";
const READ_ONLY: &str = "floor_manager:\n  auto_approve_read: true\n";
const POLICIES: &str = "floor_manager:\n  auto_approve_read: true\n  policies:\n    - {access: execute, agents: [\"@ann\"], workstation: lab, decision: approve}\n    - {access: write, workstation: shop, decision: approve}\n    - {access: read, agents: [\"@bob\"], decision: deny}\n    - {access: write, decision: ask}\n";
const DENY_ALL: &str = "floor_manager:\n  auto_approve_read: true\n  policies:\n    - {access: read, decision: deny}\n    - {access: write, decision: deny}\n    - {access: execute, decision: deny}\n";
const FIRST_MATCH: &str = "floor_manager:\n  policies:\n    - {access: execute, workstation: lab, decision: deny}\n    - {access: execute, decision: approve}\n    - {access: read, decision: approve}\n";

#[rstest::rstest]
// No floor_manager: an agent's `furniture` list is its access (the reference's behaviour)…
#[case::none_ann_lab_read(NO_MANAGER, "@ann", "lab", "peek", true)]
#[case::none_ann_lab_write(NO_MANAGER, "@ann", "lab", "poke", true)]
#[case::none_ann_lab_exec(NO_MANAGER, "@ann", "lab", "run", true)]
#[case::none_bob_lab_exec(NO_MANAGER, "@bob", "lab", "run", true)]
// …and furniture not in the list is refused whatever the class.
#[case::none_bob_shop_read(NO_MANAGER, "@bob", "shop", "peek", false)]
#[case::none_bob_shop_exec(NO_MANAGER, "@bob", "shop", "run", false)]
// auto_approve_read alone: reads only.
#[case::ro_ann_lab_read(READ_ONLY, "@ann", "lab", "peek", true)]
#[case::ro_ann_lab_write(READ_ONLY, "@ann", "lab", "poke", false)]
#[case::ro_ann_lab_exec(READ_ONLY, "@ann", "lab", "run", false)]
#[case::ro_bob_lab_read(READ_ONLY, "@bob", "lab", "peek", true)]
#[case::ro_bob_shop_read(READ_ONLY, "@bob", "shop", "peek", false)]
// Policies narrowed by agent and workstation.
#[case::pol_ann_lab_exec(POLICIES, "@ann", "lab", "run", true)]
#[case::pol_ann_shop_exec(POLICIES, "@ann", "shop", "run", false)]
#[case::pol_bob_lab_exec(POLICIES, "@bob", "lab", "run", false)]
#[case::pol_ann_shop_write(POLICIES, "@ann", "shop", "poke", true)]
#[case::pol_ann_lab_write_ask(POLICIES, "@ann", "lab", "poke", false)]
#[case::pol_bob_lab_write_ask(POLICIES, "@bob", "lab", "poke", false)]
#[case::pol_bob_lab_read_denied(POLICIES, "@bob", "lab", "peek", false)]
#[case::pol_ann_lab_read(POLICIES, "@ann", "lab", "peek", true)]
#[case::pol_bob_shop_write_unlisted(POLICIES, "@bob", "shop", "poke", false)]
// Deny beats auto_approve_read.
#[case::deny_ann_lab_read(DENY_ALL, "@ann", "lab", "peek", false)]
#[case::deny_ann_shop_exec(DENY_ALL, "@ann", "shop", "run", false)]
// First match wins.
#[case::first_ann_lab_exec(FIRST_MATCH, "@ann", "lab", "run", false)]
#[case::first_ann_shop_exec(FIRST_MATCH, "@ann", "shop", "run", true)]
#[case::first_bob_lab_exec(FIRST_MATCH, "@bob", "lab", "run", false)]
#[case::first_ann_shop_read(FIRST_MATCH, "@ann", "shop", "peek", true)]
#[case::first_ann_shop_write_default_ask(FIRST_MATCH, "@ann", "shop", "poke", false)]
#[tokio::test]
async fn authorisation_matrix(
    #[case] manager: &str,
    #[case] agent: &str,
    #[case] furniture: &str,
    #[case] tool: &str,
    #[case] allowed: bool,
) {
    let (floor, lab, shop) = matrix_floor(manager).await;
    let guard = floor.guard(agent, furniture).unwrap();
    // What the model is told matches what it may call.
    let listed: Vec<String> = guard
        .tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        listed.contains(&tool.to_owned()),
        allowed,
        "listed: {listed:?}"
    );
    let result = guard.call(tool, Map::new()).await;
    let reached = |b: &Bench| b.calls.lock().unwrap().len();
    let reached = reached(&lab) + reached(&shop);
    if allowed {
        assert_eq!(result.unwrap(), json!(format!("{tool} done")));
        assert_eq!(reached, 1);
    } else {
        let refusal = result.unwrap_err().0;
        assert!(refusal.starts_with("refused:"), "{refusal}");
        assert!(
            refusal.contains(agent) && refusal.contains(furniture),
            "{refusal}"
        );
        assert!(refusal.contains(bench_class(tool).as_str()), "{refusal}");
        assert_eq!(reached, 0, "a refused call must not reach the furniture");
    }
    // No escalation: holding a class never lets through a tool of another class.
    let held = floor.grants().classes(agent, furniture);
    for t in ["peek", "poke", "run"] {
        assert_eq!(
            guard.check(t).is_none(),
            held.contains(&bench_class(t)),
            "{agent} {furniture} {t}: held {held:?}"
        );
    }
}

#[tokio::test]
async fn a_forged_grant_request_does_not_add_permissions() {
    let (floor, lab, _) = matrix_floor(READ_ONLY).await;
    let connector = FurnitureConnector::new(floor.clone(), "@bob");
    // The request claims execute; the floor's grants (read only) decide.
    let toolbox = connector
        .connect(&McpGrant {
            name: "lab".into(),
            url: "ofc-furniture:lab".into(),
            capabilities: vec!["run".into()],
            permissions: vec![Permission::Execute, Permission::Other("root".into())],
        })
        .await
        .unwrap();
    let err = toolbox.call("run", Map::new()).await.unwrap_err();
    assert!(err.0.starts_with("refused:"), "{err}");
    assert!(lab.calls.lock().unwrap().is_empty());
    // A grant naming one furniture but pointing at another is refused outright.
    let e = connector
        .connect(&McpGrant {
            name: "lab".into(),
            url: "ofc-furniture:shop".into(),
            capabilities: vec![],
            permissions: vec![],
        })
        .await
        .unwrap_err();
    assert!(e.0.contains("points at"), "{e}");
}

#[tokio::test]
async fn a_grant_through_ofc_mcp_grant_lets_an_llm_agent_call_the_tool() {
    let (floor, lab, _) = matrix_floor(READ_ONLY).await;
    let model = Server::start(vec![
        Reply::Stream(vec![
            tool_piece(0, Some("c1"), Some("lab__run"), "{}"),
            finish("tool_calls"),
        ]),
        answer(&["ran"]),
    ])
    .await;
    let (a, d) = inline(&format!(
        "defaults: {{endpoint: \"{}\", model: m}}\nagents:\n  - {{id: \"@bob\", can_use_tools: true}}\n",
        model.endpoint
    ));
    let agent = LlmAgent::new(
        LlmConfig::from_blueprint(&a, d.as_ref(), |_| None).unwrap(),
        settings(),
        reqwest::Client::new(),
    )
    .with_connector(Arc::new(FurnitureConnector::new(floor.clone(), "@bob")));
    let answer = floor
        .grant_to("@bob", &agent, "lab", &[Class::Execute], "@floor-manager")
        .await
        .unwrap();
    assert!(answer.accepted, "{answer:?}");
    assert!(floor.grants().holds("@bob", "lab", Class::Execute));
    // Execute only: write stays refused.
    assert!(floor.guard("@bob", "lab").unwrap().check("poke").is_some());
    let r = agent
        .respond(
            &index_schema::wire::RespondRequest {
                floor_id: "m".into(),
                user_id: None,
                messages: vec![index_schema::wire::Message::new(
                    "1",
                    "@user",
                    "@bob? run it",
                    index_schema::wire::Timestamp::parse("2024-01-15T10:30:00Z").unwrap(),
                )],
                wake_reason: None,
                initiator: None,
                context: None,
            },
            None,
        )
        .await
        .unwrap();
    let RespondResponse::Reply(r) = r else {
        panic!("{r:?}")
    };
    assert_eq!(r.tool_results[0], json!("run done"));
    assert_eq!(lab.calls.lock().unwrap().as_slice(), ["run"]);
}

#[tokio::test]
async fn a_refused_call_is_a_tool_error_the_model_reads_and_the_transcript_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let (floor_furniture, lab, shop) = matrix_floor(READ_ONLY).await;
    let model = Server::start(vec![
        Reply::Stream(vec![
            tool_piece(0, Some("c1"), Some("lab__poke"), "{}"),
            tool_piece(1, Some("c2"), Some("shop__peek"), "{}"),
            tool_piece(2, Some("c3"), Some("lab__peek"), "{}"),
            finish("tool_calls"),
        ]),
        answer(&["could only peek"]),
    ])
    .await;
    let agent = llm(&model, "@bob");
    furnish(&agent, &floor_furniture, "@bob").await;
    let floor = Floor::open(
        "m",
        None,
        vec![FloorAgent::new(
            Handle::new("bob").unwrap(),
            Arc::new(agent),
        )],
        FloorSettings {
            transcript_dir: Some(dir.path().to_owned()),
            ..FloorSettings::default()
        },
    )
    .unwrap();
    let summary = floor.post_and_wait("@bob? poke the lab").await.unwrap();
    let stored = summary.messages.last().unwrap().clone();
    floor.close().await.unwrap();

    // Only lab__peek was advertised.
    let requests = model.requests();
    let tools: Vec<&str> = requests[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["lab__peek"]);
    let results: Vec<String> = stored.tool_results.iter().map(text_of).collect();
    assert!(
        results[0].starts_with(
            "[error: refused: `lab__poke` is a write tool and @bob holds read on `lab`"
        ),
        "{results:?}"
    );
    assert!(results[0].contains("floor_manager"), "{results:?}");
    assert!(
        results[1].contains("refused")
            && results[1].contains("not in the agent's `furniture` list"),
        "{results:?}"
    );
    assert_eq!(results[2], "peek done");
    assert_eq!(lab.calls.lock().unwrap().as_slice(), ["peek"]);
    assert!(shop.calls.lock().unwrap().is_empty());
    // The model read the refusal.
    let second = requests[1].1["messages"].as_array().unwrap();
    assert!(
        second
            .iter()
            .any(|m| m["role"] == "tool" && m["content"].as_str().unwrap().contains("refused")),
        "{second:?}"
    );
    let transcript = std::fs::read_to_string(dir.path().join("m.jsonl")).unwrap();
    assert!(transcript.contains("refused: `lab__poke`"), "{transcript}");
}

/// Tokens issued while the endpoints serve (an agent joining the running floor) work at once,
/// and a revoked one (an agent that failed to start) no longer does.
#[tokio::test]
async fn tokens_issued_and_revoked_while_serving() {
    let (floor, _lab, _shop) = matrix_floor(READ_ONLY).await;
    let served = McpEndpoints::new(floor, "m")
        .serve_loopback()
        .await
        .unwrap();
    let granted = served.url("granted");
    let client = reqwest::Client::new();
    let status = |token: String| {
        let (client, granted) = (client.clone(), granted.clone());
        async move {
            client
                .get(granted)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let bob = served.issue("@bob");
    let carol = served.issue("@carol");
    assert_eq!(status(bob.clone()).await, 200);
    served.revoke("@bob");
    assert_eq!(status(bob).await, 401);
    assert_eq!(status(carol).await, 200, "only @bob's token went");
}

#[tokio::test]
async fn http_agents_reach_what_they_hold_at_the_floors_mcp_endpoints() {
    let (floor, lab, shop) = matrix_floor(READ_ONLY).await;
    let mut endpoints = McpEndpoints::new(floor.clone(), "m");
    let bob = endpoints.issue("@bob");
    let lab_path = endpoints.path("lab");
    let shop_path = endpoints.path("shop");
    let app = endpoints.router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // @bob holds read on `lab`: shown `peek` only; `poke` is refused, `peek` runs.
    let lab_url = format!("{base}{lab_path}");
    let as_bob = McpToolbox::http_with_token("lab", &lab_url, Some(&bob), &quick())
        .await
        .unwrap();
    let names: Vec<String> = as_bob
        .tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["peek"]);
    assert_eq!(
        as_bob.call("peek", Map::new()).await.unwrap(),
        json!("peek done")
    );
    let refused = as_bob.call("poke", Map::new()).await.unwrap_err();
    assert!(
        refused
            .0
            .starts_with("refused: `lab__poke` is a write tool and @bob holds read"),
        "{refused}"
    );
    // `shop` is not in @bob's list: nothing shown, everything refused.
    let shop_as_bob =
        McpToolbox::http_with_token("shop", &format!("{base}{shop_path}"), Some(&bob), &quick())
            .await
            .unwrap();
    assert!(shop_as_bob.tools().await.unwrap().is_empty());
    let refused = shop_as_bob.call("peek", Map::new()).await.unwrap_err();
    assert!(
        refused.0.contains("not in the agent's `furniture` list"),
        "{refused}"
    );
    assert_eq!(lab.calls.lock().unwrap().as_slice(), ["peek"]);
    assert!(shop.calls.lock().unwrap().is_empty());

    // Without a token, or with a made-up one: no session at all.
    assert!(McpToolbox::http("lab", &lab_url, &quick()).await.is_err());
    assert!(
        McpToolbox::http_with_token("lab", &lab_url, Some("not-a-token"), &quick())
            .await
            .is_err()
    );
    let client = reqwest::Client::new();
    let r = client
        .get(format!("{base}/floors/m/mcp/granted"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // GET /floors/{id}/mcp/granted: what the token's agent holds.
    let r: Value = client
        .get(format!("{base}/floors/m/mcp/granted"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        r,
        json!({"floor_id": "m", "agent_id": "@bob", "granted_mcps": [
            {"name": "lab", "url": lab_path, "permissions": ["read"]}]})
    );
    let r = client
        .get(format!("{base}/floors/other/mcp/granted"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// The floor's MCP endpoints had no connection limit: 2,500 idle sockets were all held. They
/// are served by ofc's connection layer now: past `MAX_ENDPOINT_CONNECTIONS` a connection gets
/// an immediate 503, and a bound token is refused from a process outside its group.
#[tokio::test]
async fn the_floors_mcp_endpoints_bound_their_connections_and_bind_tokens() {
    use runtime::furniture::serve::MAX_ENDPOINT_CONNECTIONS;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (floor, _lab, _shop) = matrix_floor(READ_ONLY).await;
    let served = McpEndpoints::new(floor, "m")
        .serve_loopback()
        .await
        .unwrap();
    let addr = served.base.trim_start_matches("http://").to_owned();
    let mut idle = Vec::new();
    for _ in 0..MAX_ENDPOINT_CONNECTIONS {
        idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut extra = tokio::net::TcpStream::connect(&addr).await.unwrap();
    extra
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), extra.read_to_string(&mut answer))
        .await
        .expect("an answer at once")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop(idle);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A token bound to a process group this test is not in: refused from here; unbound (or
    // bound to this test's own group), taken.
    let granted = served.url("granted");
    let client = reqwest::Client::new();
    let status = |token: String| {
        let (client, granted) = (client.clone(), granted.clone());
        async move {
            client
                .get(granted)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let bob = served.issue("@bob");
    assert_eq!(status(bob.clone()).await, 200);
    served.bind(&bob, 999_999_999);
    assert_eq!(
        status(bob).await,
        401,
        "a bound token from another process group"
    );
    let own = rustix::process::getpgrp().as_raw_nonzero().get() as u32;
    let carol = served.issue("@carol");
    served.bind(&carol, own);
    assert_eq!(status(carol).await, 200, "from the agent's own group");
}
