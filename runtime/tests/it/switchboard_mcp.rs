//! The Switchboard MCP server with a real MCP client: the official MCP Python SDK's SSE
//! client (`scripts/peers/mcp-python`, installed by `scripts/install-test-deps`; the test
//! fails without it) connects with the token of `auth_token`, registers, asks an agent of the
//! floor and reads the answer from its inbox; without the token it gets 401. Then the
//! server's HTTP rules, with plain requests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use index_schema::wire::{RespondRequest, RespondResponse};
use runtime::agent::{Agent, FnAgent};
use runtime::floor::{Floor, FloorAgent};
use runtime::switchboard::Switchboard;
use serde_json::Value;

use crate::support::handle;
use crate::switchboard::{floor_settings, read_json, sb_settings};

/// The MCP Python SDK's interpreter, installed by the project's peer script.
fn python() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers/mcp-python");
    let out = Command::new(&script)
        .output()
        .expect("scripts/peers/mcp-python runs");
    assert!(
        out.status.success(),
        "the MCP Python SDK is required (scripts/peers/mcp-python failed): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

async fn client(url: &str, token: &str, mode: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/switchboard_client.py");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(python())
            .arg(script)
            .args([url, token, mode])
            .output(),
    )
    .await
    .expect("the client finished within 60 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the client printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

async fn floor() -> (tempfile::TempDir, Arc<Switchboard>, Floor) {
    let dir = tempfile::tempdir().unwrap();
    let sb = Switchboard::open(dir.path(), sb_settings(dir.path())).unwrap();
    let helper: Arc<dyn Agent> = Arc::new(FnAgent::new("helper", |r: RespondRequest| async move {
        let asked = r
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(RespondResponse::reply(if asked.contains("2+2") {
            "4"
        } else {
            "?"
        }))
    }));
    let floor = Floor::open(
        "floor-mcp",
        None,
        vec![FloorAgent::new(handle("helper"), helper)],
        floor_settings(dir.path()),
    )
    .unwrap();
    sb.attach(&floor).await.unwrap();
    (dir, sb, floor)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_joins_the_floor_asks_and_reads_the_answer() {
    let (dir, sb, floor) = floor().await;
    let served = sb.serve().await.unwrap();
    let ws = sb.workspace().root().to_path_buf();
    let info = read_json(&ws.join("server_info.json"));
    assert_eq!(info["host"], "127.0.0.1");
    assert_eq!(info["port"], served.port);
    assert_eq!(info["sseEndpoint"], "/sse");
    assert_eq!(info["messagesEndpoint"], "/messages");
    assert_eq!(info["healthEndpoint"], "/health");
    assert_eq!(info["transport"], "sse");
    let token = std::fs::read_to_string(ws.join("auth_token")).unwrap();
    let url = format!("http://127.0.0.1:{}/sse", info["port"]);

    let denied = client(&url, "", "no-token").await;
    assert_eq!(denied["status"], 401, "{denied}");

    let got = client(&url, &token, "header").await;
    assert_eq!(
        got["tools"],
        serde_json::json!([
            "check_inbox",
            "get_team_roster",
            "join_team",
            "register_chat_agent",
            "register_terminal",
            "send_message",
            "send_team_message"
        ]),
        "{got}"
    );
    let reply = &got["reply"];
    assert_eq!(reply["payload"], "4", "{got}");
    assert_eq!(reply["sender"], "helper");
    assert_eq!(reply["recipient"], "editor");
    assert_eq!(reply["action"], "submit_result");
    // No sending as someone else: there is no such argument.
    assert_eq!(got["forged"]["isError"], true);
    assert!(
        got["forged"]["text"]
            .as_str()
            .unwrap()
            .contains("`sender` is not an argument"),
        "{got}"
    );
    // On the floor: the editor's question, from the editor, and the helper's answer.
    let messages = floor.messages(None, 10).await.unwrap();
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m.from.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(
        said[..2],
        [("@editor", "@helper? what is 2+2?"), ("@helper", "4")]
    );
    let meta = &messages[0].metadata.as_ref().unwrap()["switchboard"];
    assert_eq!(meta["id"], got["sent"]);
    // The editor is on the floor's roster, in state.json, and its message got its receipt.
    let roster = floor.snapshot().await.unwrap().agents;
    assert!(roster.iter().any(|a| a.0.as_str() == "editor"));
    let state = read_json(&ws.join("state.json"));
    assert_eq!(state["chatAgents"]["editor"]["interface"], "vscode");
    let receipt = read_json(&ws.join(format!(
        "outbox/editor/receipt_{}.json",
        got["sent"].as_str().unwrap()
    )));
    assert_eq!(receipt["summary"], "Message delivered to 'helper' inbox");

    // The query-string token works too (a CLI's way); once the editor's session is gone
    // (its stream closed), the name can be claimed again.
    let http = reqwest::Client::new();
    let start = std::time::Instant::now();
    loop {
        let h: Value = http
            .get(format!("{}/health", served.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if h["sessions"] == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the first session never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = client(&url, &token, "query").await;
    assert_eq!(again["reply"]["payload"], "4", "{again}");
    drop(served);
    assert!(!ws.join("server_info.json").exists());
    sb.stop();
    floor.close().await.unwrap();
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_keeps_its_http_rules() {
    let (_dir, sb, floor) = floor().await;
    let served = sb.serve().await.unwrap();
    let base = served.base.clone();
    let http = reqwest::Client::new();
    let token = sb.token().to_owned();

    let health = http.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.json::<Value>().await.unwrap()["status"], "ok");
    for request in [
        http.get(format!("{base}/sse")),
        http.get(format!("{base}/sse")).bearer_auth("wrong"),
        http.get(format!("{base}/sse?token=wrong")),
        http.post(format!("{base}/messages?sessionId=x")).body("{}"),
    ] {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
    }
    let r = http
        .get(format!("{base}/health"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 421);

    // A session: the endpoint event first.
    let sse = http
        .get(format!("{base}/sse"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let mut body = sse.bytes_stream();
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        text.starts_with("event: endpoint\ndata: /messages?sessionId="),
        "{text}"
    );
    let endpoint = text
        .lines()
        .nth(1)
        .unwrap()
        .strip_prefix("data: ")
        .unwrap()
        .to_owned();
    assert!(
        !endpoint.contains("token="),
        "a header client's endpoint carries no token"
    );
    let post = |body: &'static str, path: String| {
        http.post(format!("{base}{path}"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    assert_eq!(
        post("not json", endpoint.clone()).await.unwrap().status(),
        400
    );
    assert_eq!(
        post(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            "/messages?sessionId=nope".into()
        )
        .await
        .unwrap()
        .status(),
        404
    );
    let big = http
        .post(format!("{base}{endpoint}"))
        .bearer_auth(&token)
        .body(vec![b'x'; 2 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    // Its body was not read, so the connection is not offered for another request.
    assert_eq!(big.headers()["connection"], "close");
    // The session ends with its stream.
    drop(body);
    let start = std::time::Instant::now();
    loop {
        let h: Value = http
            .get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if h["sessions"] == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the session never ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(served);
    sb.stop();
    floor.close().await.unwrap();
}

/// `ofc floor serve --switchboard DIR`: every hosted floor gets its own Switchboard, and the
/// MCP Python SDK joins a floor through it and talks with an agent added over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hosted_floor_gets_a_switchboard() {
    use runtime::server::{FloorServer, ServerSettings};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("switchboards");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = FloorServer::new(ServerSettings {
        switchboard_root: Some(root.clone()),
        floor: floor_settings(dir.path()),
        ..ServerSettings::default()
    });
    tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    let helper: Arc<dyn Agent> = Arc::new(FnAgent::new("helper", |r: RespondRequest| async move {
        let asked = r
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(RespondResponse::reply(if asked.contains("2+2") {
            "4"
        } else {
            "?"
        }))
    }));
    let agent = runtime::agent::serve(helper, "127.0.0.1:0").await.unwrap();
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/floors"))
        .json(&serde_json::json!({"name": "with a switchboard"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let floor_id = created["floor_id"].as_str().unwrap().to_owned();
    let join = created["join_token"].as_str().unwrap().to_owned();
    let added = http
        .post(format!("{base}/floors/{floor_id}/agents"))
        .bearer_auth(&join)
        .json(&serde_json::json!({"agent_id": "@helper", "endpoint": agent.url()}))
        .send()
        .await
        .unwrap();
    assert!(
        added.status().is_success(),
        "{}",
        added.text().await.unwrap()
    );

    let ws = root.join(&floor_id).join(".switchboard");
    let info = read_json(&ws.join("server_info.json"));
    let token = std::fs::read_to_string(ws.join("auth_token")).unwrap();
    let got = client(
        &format!("http://127.0.0.1:{}/sse", info["port"]),
        &token,
        "header",
    )
    .await;
    assert_eq!(got["reply"]["payload"], "4", "{got}");
    let messages: Value = http
        .get(format!("{base}/floors/{floor_id}/messages"))
        .bearer_auth(&join)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(messages["messages"][0]["from"], "@editor");
    assert_eq!(messages["messages"][1]["content"], "4");

    // Closing the floor stops its Switchboard.
    let closed = http
        .delete(format!("{base}/floors/{floor_id}"))
        .bearer_auth(&join)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    assert!(!ws.join("server_info.json").exists());
    let gone = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{}/health", info["port"]))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(gone.is_err(), "the Switchboard still answers: {gone:?}");
    drop(stop);
}
