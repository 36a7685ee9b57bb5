//! `ofc serve` end to end: the real `ofc` binary serves a blueprint's sessions over HTTP, its
//! LLM agents answered by a scripted model. Two SSE clients watch one session, one goes away
//! for over 1,000 events and comes back with `Last-Event-ID` (exactly the events it missed, in
//! order, none twice, the same lines the other saw); the furniture proxy refuses a call the
//! agent holds no grant for; hostile requests (an oversized body, one subscriber too many, a
//! bad token, another session's token, another project's session, one session too many) get
//! their clear refusals.
//!
//! Needs the binaries: `cargo build -p ofc-pkg -p hub-server --bins`.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::common::bin;
use crate::common::run::blueprint;
use crate::run_e2e::{ModelServer, pieces};

/// `@keeper` answers every message (the scripted model); `@other` only when named. Only
/// `@keeper` holds the task board.
const BLUEPRINT: &str = "name: serve-test\ndefaults:\n  endpoint: ENDPOINT\nfurniture:\n  - {name: board, type: taskboard}\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    furniture: [board]\n  - id: \"@other\"\n    model: keeper-model\n";

/// A running `ofc serve`, stopped (SIGTERM, then killed) when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) url: String,
    pub(crate) token: String,
    /// The browser view's address, the token in its fragment.
    pub(crate) browser_url: String,
    http: reqwest::Client,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(home: &Path, dir: &Path, extra: &[&str]) -> Served {
    let mut child = Command::new(bin("ofc"))
        .current_dir(dir)
        .env("OFC_HOME", home)
        .env("OFC_HUB", "http://127.0.0.1:9")
        .env("NO_COLOR", "1")
        .env_remove("OFC_SERVE_TOKEN")
        .env_remove("RUST_LOG")
        .args(["--json", "serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start ofc serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let started: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("{e}: {line:?} (did ofc serve start?)"));
    assert!(
        started["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{started}"
    );
    Served {
        url: started["url"].as_str().unwrap().to_owned(),
        token: started["server_token"].as_str().unwrap().to_owned(),
        browser_url: started["browser_url"].as_str().unwrap().to_owned(),
        child,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    }
}

impl Served {
    async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.url))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn create(&self) -> (String, String) {
        let (s, b) = self
            .call("POST", "/api/v1/sessions", &self.token, None)
            .await;
        assert_eq!(s, 201, "{b}");
        (
            b["id"].as_str().unwrap().to_owned(),
            b["token"].as_str().unwrap().to_owned(),
        )
    }

    /// Opens a session's event stream.
    async fn events(&self, id: &str, token: &str, last: Option<u64>) -> reqwest::Response {
        let mut req = self
            .http
            .get(format!("{}/api/v1/sessions/{id}/events", self.url))
            .bearer_auth(token)
            .timeout(Duration::from_secs(120));
        if let Some(last) = last {
            req = req.header("Last-Event-ID", last.to_string());
        }
        req.send().await.unwrap()
    }
}

/// One server-sent event: (id, event, data).
type Sse = (u64, String, String);

/// Reads a stream's events into `tx` until it ends (or the receiver goes).
async fn read_events(resp: reqwest::Response, tx: tokio::sync::mpsc::UnboundedSender<Sse>) {
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    while let Some(chunk) = body.next().await {
        let Ok(chunk) = chunk else { return };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let (mut id, mut event, mut data) = (None, String::new(), String::new());
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().parse::<u64>().unwrap());
                } else if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if let Some(id) = id
                && tx.send((id, event, data)).is_err()
            {
                return;
            }
        }
    }
}

/// The tests' async runtime (the scripted model has its own, made and dropped outside it).
fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn setup() -> (tempfile::TempDir, tempfile::TempDir, ModelServer) {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[("keeper-model", vec![pieces(&["ok"])])]);
    blueprint(proj.path(), &BLUEPRINT.replace("ENDPOINT", &model.endpoint));
    (home, proj, model)
}

#[test]
fn a_watcher_away_for_1000_events_resumes_with_last_event_id_exactly() {
    let (home, proj, _model) = setup();
    rt().block_on(async {
        let s = serve(home.path(), proj.path(), &[]);
        let (id, token) = s.create().await;

        let (a_tx, mut a_rx) = tokio::sync::mpsc::unbounded_channel();
        let a = tokio::spawn(read_events(s.events(&id, &token, None).await, a_tx));
        let (b_tx, mut b_rx) = tokio::sync::mpsc::unbounded_channel();
        let b = tokio::spawn(read_events(s.events(&id, &token, None).await, b_tx));

        let mut seen_a: Vec<Sse> = Vec::new();
        // Turns until A has seen `until`: a message each, waiting for its turn to end.
        let mut turns = 0;
        async fn turn(
            s: &Served,
            id: &str,
            token: &str,
            n: usize,
            rx: &mut tokio::sync::mpsc::UnboundedReceiver<Sse>,
            seen: &mut Vec<Sse>,
        ) {
            let (st, body) = s
                .call(
                    "POST",
                    &format!("/api/v1/sessions/{id}/messages"),
                    token,
                    Some(json!({"content": format!("message {n}")})),
                )
                .await;
            assert_eq!(st, 201, "{body}");
            loop {
                let e = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                    .await
                    .expect("an event within 30 s")
                    .expect("the stream goes on");
                let ended = e.1 == "turn_ended";
                seen.push(e);
                if ended {
                    return;
                }
            }
        }
        turn(&s, &id, &token, turns, &mut a_rx, &mut seen_a).await;
        turns += 1;
        // B has what A has so far, then goes away.
        let b_last = seen_a.last().unwrap().0;
        let mut seen_b: Vec<Sse> = Vec::new();
        while seen_b.last().map(|e| e.0) != Some(b_last) {
            seen_b.push(
                tokio::time::timeout(Duration::from_secs(30), b_rx.recv())
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        b.abort();
        drop(b_rx);
        while seen_a.last().unwrap().0 < b_last + 1000 {
            turn(&s, &id, &token, turns, &mut a_rx, &mut seen_a).await;
            turns += 1;
            assert!(turns < 1000, "1,000 events in under 1,000 turns");
        }
        let a_last = seen_a.last().unwrap().0;

        // B comes back: exactly what it missed.
        let (b2_tx, mut b2_rx) = tokio::sync::mpsc::unbounded_channel();
        let b2 = tokio::spawn(read_events(
            s.events(&id, &token, Some(b_last)).await,
            b2_tx,
        ));
        let mut resumed: Vec<Sse> = Vec::new();
        while resumed.last().map(|e| e.0).unwrap_or(b_last) < a_last {
            resumed.push(
                tokio::time::timeout(Duration::from_secs(30), b2_rx.recv())
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        let seqs: Vec<u64> = resumed.iter().map(|e| e.0).collect();
        assert_eq!(
            seqs,
            ((b_last + 1)..=a_last).collect::<Vec<_>>(),
            "no gap, no duplicate"
        );
        assert!(a_last - b_last >= 1000);
        // A saw every event from the first, once, in order; B's lines are A's.
        let all: Vec<u64> = seen_a.iter().map(|e| e.0).collect();
        assert_eq!(all, (1..=a_last).collect::<Vec<_>>());
        for (r, a) in resumed.iter().zip(&seen_a[b_last as usize..]) {
            assert_eq!(r, a);
            let line: Value = serde_json::from_str(&r.2).unwrap();
            assert_eq!(line["seq"], r.0);
            assert_eq!(line["payload_type"], r.1.as_str());
        }
        // The agent's answers are in the stream.
        assert!(
            seen_a
                .iter()
                .any(|e| e.1 == "message_posted" && e.2.contains("\"from\":\"@keeper\""))
        );

        // Closing the session ends both streams after the last event; its log stays readable.
        let (st, closed) = s
            .call(
                "POST",
                &format!("/api/v1/sessions/{id}/close"),
                &s.token,
                None,
            )
            .await;
        assert_eq!(st, 200, "{closed}");
        let end = closed["last_seq"].as_u64().unwrap();
        for (rx, task) in [(&mut a_rx, a), (&mut b2_rx, b2)] {
            tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .unwrap()
                .unwrap();
            while let Ok(e) = rx.try_recv() {
                assert!(e.0 <= end);
            }
        }
        // The session token ended with the floor; the server token still reads the log.
        let (st, _) = s
            .call("GET", &format!("/api/v1/sessions/{id}"), &token, None)
            .await;
        assert_eq!(st, 401);
        let (st, view) = s
            .call("GET", &format!("/api/v1/sessions/{id}"), &s.token, None)
            .await;
        assert_eq!(st, 200, "{view}");
        assert_eq!(view["live"], false);
        // A stored session streams to its end and closes.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::time::timeout(
            Duration::from_secs(30),
            read_events(s.events(&id, &s.token, Some(end - 3)).await, tx),
        )
        .await
        .unwrap();
        let tail: Vec<u64> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| e.0)
            .collect();
        assert_eq!(tail, ((end - 2)..=end).collect::<Vec<_>>());
    });
}

#[test]
fn the_furniture_proxy_holds_to_the_agents_grants() {
    let (home, proj, _model) = setup();
    rt().block_on(async {
    let s = serve(home.path(), proj.path(), &[]);
    let (id, token) = s.create().await;
    let path = format!("/api/v1/sessions/{id}/furniture/board/call");
    // @other holds no grant on the board: refused, with the reason.
    let (st, body) = s
        .call(
            "POST",
            &path,
            &token,
            Some(json!({"agent": "@other", "tool": "add_task", "args": {"title": "t"}})),
        )
        .await;
    assert_eq!(st, 403, "{body}");
    assert_eq!(body["code"], "not_granted");
    assert!(
        body["message"].as_str().unwrap().contains("@other"),
        "{body}"
    );
    // @keeper holds it.
    let (st, body) = s
        .call("POST", &path, &token, Some(json!({"agent": "@keeper", "tool": "add_task", "args": {"title": "write the report"}})))
        .await;
    assert_eq!(st, 200, "{body}");
    let (st, body) = s
        .call(
            "POST",
            &path,
            &token,
            Some(json!({"agent": "@keeper", "tool": "list_tasks"})),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    assert!(
        body["result"].to_string().contains("write the report"),
        "{body}"
    );
    // Not an agent of the floor, no such tool, no such furniture, a field that would be ignored.
    for (call, status) in [
        (json!({"agent": "@user", "tool": "list_tasks"}), 422),
        (json!({"agent": "@keeper", "tool": "drop_tables"}), 404),
        (
            json!({"agent": "@keeper", "tool": "list_tasks", "as": "@root"}),
            422,
        ),
    ] {
        let (st, body) = s.call("POST", &path, &token, Some(call.clone())).await;
        assert_eq!(st, status, "{call}: {body}");
    }
    let (st, _) = s
        .call(
            "POST",
            &format!("/api/v1/sessions/{id}/furniture/vault/call"),
            &token,
            Some(json!({"agent": "@keeper", "tool": "x"})),
        )
        .await;
    assert_eq!(st, 404);
    });
}

#[test]
fn hostile_requests_get_clear_refusals() {
    let (home, proj, _model) = setup();
    rt().block_on(async {
    let s = serve(
        home.path(),
        proj.path(),
        &[
            "--max-body",
            "1024",
            "--max-subscribers",
            "2",
            "--max-sessions",
            "2",
        ],
    );
    let (one, one_token) = s.create().await;
    let (two, two_token) = s.create().await;

    // One session too many.
    let (st, body) = s.call("POST", "/api/v1/sessions", &s.token, None).await;
    assert_eq!(st, 429, "{body}");
    assert_eq!(body["code"], "too_many_sessions");

    // An oversized body, refused by its length before it is read.
    let (st, body) = s
        .call(
            "POST",
            &format!("/api/v1/sessions/{one}/messages"),
            &one_token,
            Some(json!({"content": "x".repeat(4096)})),
        )
        .await;
    assert_eq!(st, 413, "{body}");
    assert_eq!(body["code"], "body_too_large");
    assert!(body["message"].as_str().unwrap().contains("1024"), "{body}");

    // Bad tokens: none, wrong, the server's shape with a wrong value.
    let (st, body) = s
        .call(
            "GET",
            &format!("/api/v1/sessions/{one}"),
            "ofc_session_nope",
            None,
        )
        .await;
    assert_eq!(st, 401, "{body}");
    let resp = s
        .http
        .get(format!("{}/api/v1/sessions", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    // Another session's token: no reading, no posting, no watching; nor the server's routes.
    for (method, path) in [
        ("GET", format!("/api/v1/sessions/{two}")),
        ("POST", format!("/api/v1/sessions/{two}/cancel")),
        ("GET", format!("/api/v1/sessions/{two}/events")),
    ] {
        let (st, body) = s.call(method, &path, &one_token, None).await;
        assert_eq!(st, 403, "{method} {path}: {body}");
    }
    let (st, _) = s.call("GET", "/api/v1/sessions", &one_token, None).await;
    assert_eq!(st, 403);
    let (st, _) = s
        .call("GET", &format!("/api/v1/sessions/{two}"), &two_token, None)
        .await;
    assert_eq!(st, 200);

    // One subscriber too many.
    let first = s.events(&one, &one_token, None).await;
    let second = s.events(&one, &one_token, None).await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = s.events(&one, &one_token, None).await;
    assert_eq!(third.status(), 429);
    let body: Value = third.json().await.unwrap();
    assert_eq!(body["code"], "too_many_subscribers");
    // A malformed Last-Event-ID.
    drop((first, second));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let resp = s
        .http
        .get(format!("{}/api/v1/sessions/{one}/events", s.url))
        .bearer_auth(&one_token)
        .header("Last-Event-ID", "-1; DROP")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    // Another project's session, copied into this store: as if it did not exist.
    let other = tempfile::tempdir().unwrap();
    let foreign = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
    let file = proj
        .path()
        .join(".ofc/sessions")
        .join(format!("{foreign}.jsonl"));
    std::fs::write(
        &file,
        format!(
            "{}\n",
            json!({"kind": "meta", "session_id": foreign, "meta": {"blueprint_name": "x", "project": other.path().display().to_string()}})
        ),
    )
    .unwrap();
    for (method, path) in [
        ("GET", format!("/api/v1/sessions/{foreign}")),
        ("POST", format!("/api/v1/sessions/{foreign}/resume")),
        ("GET", format!("/api/v1/sessions/{foreign}/events")),
    ] {
        let (st, body) = s.call(method, &path, &s.token, None).await;
        assert_eq!(st, 404, "{method} {path}: {body}");
    }
    let (st, list) = s.call("GET", "/api/v1/sessions", &s.token, None).await;
    assert_eq!(st, 200);
    assert!(!list.to_string().contains(foreign), "{list}");
    // A Host that is not loopback (DNS rebinding).
    let resp = s
        .http
        .get(format!("{}/api/v1/sessions", s.url))
        .bearer_auth(&s.token)
        .header("Host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 421);
    // The contract is served.
    let doc: Value = s
        .http
        .get(format!("{}/openapi.json", s.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"]["/api/v1/sessions/{id}/events"].is_object());
    });
}
