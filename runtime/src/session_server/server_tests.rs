//! The session server's bounds and refusals, against a real server on loopback whose sessions
//! are real floors recording into real session files (one agent, `@keeper`, that answers when
//! named, and a task board it holds grants on).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use index_schema::wire::RespondResponse;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::sse::{EventsQuery, events};
use super::*;
use crate::Handle;
use crate::agent::FnAgent;
use crate::api::NoBody;
use crate::floor::{FloorAgent, FloorSettings};
use crate::furniture::{Class, Furniture, Grants};
use crate::session::{SessionFile, SessionMeta};

const TOKEN: &str = "ofc_serve_test-token";

/// Opens each session on a floor with `@keeper` and a task board; held while `hold` is
/// taken for writing, failing while `fail` is set.
struct Host {
    store: SessionStore,
    hold: Arc<tokio::sync::RwLock<()>>,
    fail: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl SessionHost for Host {
    async fn open(&self, resume: Option<&SessionId>) -> Result<HostedSession, OpenError> {
        drop(self.hold.read().await);
        if self.fail.load(Ordering::SeqCst) {
            return Err(OpenError::Start("told to fail".into()));
        }
        let live = match resume {
            None => LiveSession::new(self.store.create(SessionMeta::default())?),
            Some(id) => {
                let (file, log) = self.store.resume(id)?;
                LiveSession::resumed(file, &log)
            }
        };
        let keeper = FnAgent::new("keeper", |_| async { Ok(RespondResponse::reply("noted")) });
        let agent = FloorAgent::new(Handle::new("@keeper").unwrap(), Arc::new(keeper));
        let floor = Floor::open_session(
            "server-test",
            None,
            vec![agent],
            FloorSettings::default(),
            live.clone(),
            Vec::new(),
        )
        .map_err(|e| OpenError::Start(e.to_string()))?;
        let mut grants = Grants::new();
        grants.grant("@keeper", "tasks", [Class::Read, Class::Write]);
        let furniture =
            FloorFurniture::new("server-test", vec![Furniture::taskboard("tasks")], grants);
        Ok(HostedSession {
            live,
            floor,
            furniture: Some(furniture),
            stop: Box::new(NothingElse),
        })
    }
}

struct Running {
    url: String,
    server: SessionServer,
    store: SessionStore,
    http: reqwest::Client,
    hold: Arc<tokio::sync::RwLock<()>>,
    fail: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn start(settings: impl FnOnce(&mut SessionServerSettings), floor: Option<&str>) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SessionStore::new(dir.path(), "/p");
    if let Some(floor) = floor {
        store = store.for_floor(floor);
    }
    let (hold, fail) = (Arc::default(), Arc::new(AtomicBool::new(false)));
    let host = Arc::new(Host {
        store: store.clone(),
        hold: Arc::clone(&hold),
        fail: Arc::clone(&fail),
    });
    let mut s = SessionServerSettings::new(TOKEN);
    s.allowed_host_headers = Some(vec!["127.0.0.1".into()]);
    settings(&mut s);
    let server = SessionServer::new(s, store.clone(), host);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.clone().serve(listener, async {
        let _ = stopped.await;
    }));
    Running {
        url,
        server,
        store,
        http: reqwest::Client::new(),
        hold,
        fail,
        _dir: dir,
        _stop: stop,
    }
}

impl Running {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.url))
            .bearer_auth(TOKEN);
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

    async fn create(&self) -> (String, u64) {
        let (st, body) = self.call("POST", "/api/v1/sessions", None).await;
        assert_eq!(st, 201, "{body}");
        (
            body["id"].as_str().unwrap().to_owned(),
            body["last_seq"].as_u64().unwrap(),
        )
    }

    async fn post(&self, id: &str, content: &str) {
        let (st, body) = self
            .call(
                "POST",
                &format!("/api/v1/sessions/{id}/messages"),
                Some(json!({ "content": content })),
            )
            .await;
        assert_eq!(st, 201, "{body}");
    }

    async fn close(&self, id: &str) -> u64 {
        let (st, body) = self
            .call("POST", &format!("/api/v1/sessions/{id}/close"), None)
            .await;
        assert_eq!(st, 200, "{body}");
        body["last_seq"].as_u64().unwrap()
    }

    /// The events stream of `id`, as the handler answers it (its body not read: a reader
    /// that reads nothing).
    async fn events(&self, id: &str, last: Option<u64>) -> Result<Response, ApiError> {
        events(
            State(self.server.clone()),
            Extension(Caller::Server),
            Path(id.to_owned()),
            HeaderMap::new(),
            Ok(Query(EventsQuery {
                last_event_id: last,
            })),
            NoBody,
        )
        .await
    }
}

/// The `id:`s of a whole event stream.
async fn ids(response: Response) -> Vec<u64> {
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(body.to_vec())
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:")))
        .map(|n| n.trim().parse().unwrap())
        .collect()
}

/// A cursor past the session's last event is refused, naming it (it skipped every event up
/// to the cursor once they came; `u64::MAX` panicked the stream).
#[tokio::test]
async fn a_cursor_past_the_last_event_is_refused() {
    let s = start(|_| {}, None).await;
    let (id, _) = s.create().await;
    s.post(&id, "hello").await;
    let (_, view) = s.call("GET", &format!("/api/v1/sessions/{id}"), None).await;
    let last = view["last_seq"].as_u64().unwrap();
    assert!(last >= 1, "{view}");
    let path = format!("{}/api/v1/sessions/{id}/events", s.url);
    for stored in [false, true] {
        if stored {
            s.close(&id).await;
        }
        let last = if stored {
            s.call("GET", &format!("/api/v1/sessions/{id}"), None)
                .await
                .1["last_seq"]
                .as_u64()
                .unwrap()
        } else {
            last
        };
        for bad in [u64::MAX, last + 1, last + 5] {
            let r = s
                .http
                .get(&path)
                .bearer_auth(TOKEN)
                .header("Last-Event-ID", bad.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 400, "{bad}");
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["code"], "invalid_last_event_id", "{body}");
            let message = body["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("its last event is {last}")),
                "{message}"
            );
            let r = s
                .http
                .get(format!("{path}?last_event_id={bad}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 400, "{bad}");
        }
        let r = s
            .http
            .get(&path)
            .bearer_auth(TOKEN)
            .header("Last-Event-ID", (last - 1).to_string())
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
}

/// A stored session's readers count toward `max_subscribers` as a live one's do, and share
/// one read of it; a reader after the session changed gets the change.
#[tokio::test]
async fn a_stored_sessions_readers_are_bounded_and_share_one_read() {
    let s = start(|s| s.max_subscribers = 2, None).await;
    let (id, _) = s.create().await;
    s.post(&id, "one").await;
    let last = s.close(&id).await;
    let first = s.events(&id, None).await.unwrap();
    let second = s.events(&id, Some(1)).await.unwrap();
    let third = s.events(&id, None).await.unwrap_err();
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(
        third.message().contains("2 event subscribers"),
        "{}",
        third.message()
    );
    // One feed for both: the slot's and each reader's.
    let stored = s.server.stored(&SessionId::parse(&id).unwrap());
    {
        let slot = stored.feed.lock().await;
        let (_, feed) = slot.as_ref().unwrap();
        assert_eq!(Arc::strong_count(feed), 3);
    }
    drop(stored);
    assert_eq!(ids(first).await, (1..=last).collect::<Vec<_>>());
    // The session goes on (resumed, one more message, closed) while a reader holds the old
    // feed: a new reader reads it again.
    let (st, body) = s
        .call("POST", &format!("/api/v1/sessions/{id}/resume"), None)
        .await;
    assert_eq!(st, 200, "{body}");
    s.post(&id, "two").await;
    let newer = s.close(&id).await;
    assert!(newer > last);
    let again = s.events(&id, Some(last)).await.unwrap();
    assert_eq!(ids(again).await, ((last + 1)..=newer).collect::<Vec<_>>());
    assert_eq!(ids(second).await, (2..=last).collect::<Vec<_>>());
    // Nobody reads it now: the count is back to nothing.
    let stored = s.server.stored(&SessionId::parse(&id).unwrap());
    assert_eq!(stored.subscribers.load(Ordering::SeqCst), 0);
    // Another project's session, or none, is still a 404.
    let e = s
        .events(&SessionId::random().to_string(), None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), StatusCode::NOT_FOUND);
}

/// A session being put on a floor holds up no request to another, counts toward the bound,
/// and is not resumed twice at once; a floor that fails to start gives its place back.
#[tokio::test]
async fn opening_a_session_holds_up_no_other() {
    let s = Arc::new(start(|s| s.max_live_sessions = 3, None).await);
    let (a, _) = s.create().await;
    let (b, _) = s.create().await;
    s.close(&b).await;
    let held = s.hold.write().await;
    let creating = tokio::spawn({
        let s = Arc::clone(&s);
        async move { s.call("POST", "/api/v1/sessions", None).await }
    });
    let resuming = tokio::spawn({
        let (s, b) = (Arc::clone(&s), b.clone());
        async move {
            s.call("POST", &format!("/api/v1/sessions/{b}/resume"), None)
                .await
        }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.server.sessions().starting < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the opens did not start"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let quick = Duration::from_secs(3);
    let (st, body) =
        tokio::time::timeout(quick, s.call("GET", &format!("/api/v1/sessions/{a}"), None))
            .await
            .expect("a live session's request waited for another session's floor");
    assert_eq!(st, 200, "{body}");
    tokio::time::timeout(quick, s.post(&a, "still here"))
        .await
        .expect("posting waited for another session's floor");
    let (st, _) = tokio::time::timeout(quick, s.call("GET", "/api/v1/sessions", None))
        .await
        .expect("listing waited");
    assert_eq!(st, 200);
    // One live and two starting: the bound is reached.
    let (st, body) = s.call("POST", "/api/v1/sessions", None).await;
    assert_eq!(
        (st, body["code"].as_str()),
        (429, Some("too_many_sessions")),
        "{body}"
    );
    // The same session resumed again while it starts.
    let (st, body) = s
        .call("POST", &format!("/api/v1/sessions/{b}/resume"), None)
        .await;
    assert_eq!(
        (st, body["code"].as_str()),
        (409, Some("session_starting")),
        "{body}"
    );
    drop(held);
    let (st, body) = creating.await.unwrap();
    assert_eq!(st, 201, "{body}");
    let (st, body) = resuming.await.unwrap();
    assert_eq!(st, 200, "{body}");
    assert_eq!(s.server.sessions().starting, 0);
    // A floor that does not start gives its place back.
    s.close(&a).await;
    s.fail.store(true, Ordering::SeqCst);
    let (st, body) = s.call("POST", "/api/v1/sessions", None).await;
    assert_eq!(st, 502, "{body}");
    assert_eq!(s.server.sessions().starting, 0);
    s.fail.store(false, Ordering::SeqCst);
    s.create().await;
}

/// Sends a raw HTTP/1.1 request, the body chunked (no length said); answers the status and
/// the JSON body.
async fn chunked(url: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let addr = url.strip_prefix("http://").unwrap();
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    for piece in body.chunks(8192) {
        request.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        request.extend_from_slice(piece);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer before it has read it all.
    let _ = conn.write_all(&request).await;
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer[9..12].parse().unwrap();
    let (_, json) = answer.split_once("\r\n\r\n").unwrap();
    // The body may itself be chunked: take the JSON object in it.
    let json = &json[json.find('{').unwrap()..=json.rfind('}').unwrap()];
    (status, serde_json::from_str(json).unwrap())
}

/// What would be ignored — a query string, a body on a route that takes none — is refused,
/// naming it; a body over the limit without a length is `body_too_large` too.
#[tokio::test]
async fn bodies_and_queries_that_would_be_ignored_are_refused() {
    let s = start(|_| {}, None).await;
    let (id, _) = s.create().await;
    let (st, body) = s
        .call("POST", "/api/v1/sessions?blueprint=other.yaml", None)
        .await;
    assert_eq!(
        (st, body["code"].as_str()),
        (400, Some("invalid_query")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("`blueprint`"),
        "{body}"
    );
    let (st, body) = s
        .call("GET", "/api/v1/sessions?floor=blog&limit=1", None)
        .await;
    assert_eq!(
        (st, body["code"].as_str()),
        (400, Some("invalid_query")),
        "{body}"
    );
    for (method, path) in [
        ("GET", format!("/api/v1/sessions/{id}?x=1")),
        ("POST", format!("/api/v1/sessions/{id}/messages?x=1")),
        ("POST", format!("/api/v1/sessions/{id}/cancel?x=1")),
    ] {
        let (st, body) = s.call(method, &path, Some(json!({"content": "hi"}))).await;
        assert_eq!(
            (st, body["code"].as_str()),
            (400, Some("invalid_query")),
            "{path}: {body}"
        );
    }
    let sessions_before = s.call("GET", "/api/v1/sessions", None).await.1["sessions"]
        .as_array()
        .unwrap()
        .len();
    for (method, path) in [
        ("POST", "/api/v1/sessions".to_owned()),
        ("GET", "/api/v1/sessions".to_owned()),
        ("GET", format!("/api/v1/sessions/{id}")),
        ("POST", format!("/api/v1/sessions/{id}/resume")),
        ("POST", format!("/api/v1/sessions/{id}/cancel")),
        ("POST", format!("/api/v1/sessions/{id}/close")),
        ("GET", format!("/api/v1/sessions/{id}/events")),
    ] {
        let (st, body) = s
            .call(method, &path, Some(json!({"resume": id, "floor": "x"})))
            .await;
        assert_eq!(
            (st, body["code"].as_str()),
            (400, Some("unexpected_body")),
            "{method} {path}: {body}"
        );
    }
    // An empty object says nothing: taken as no body (many clients send it with a POST).
    let (st, body) = s.call("GET", "/api/v1/sessions", Some(json!({}))).await;
    assert_eq!(st, 200, "{body}");
    let (st, body) = s
        .call("POST", "/api/v1/sessions", Some(json!({"resume": id})))
        .await;
    assert_eq!(st, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("`resume`"),
        "{body}"
    );
    // Nothing was created, and the session is still live.
    let (_, list) = s.call("GET", "/api/v1/sessions", None).await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), sessions_before);
    assert_eq!(list["sessions"][0]["live"], true, "{list}");
    // Over the limit, without a length: refused as one with a length is.
    let big = vec![b' '; 100 * 1024];
    for path in [
        format!("/api/v1/sessions/{id}/messages"),
        format!("/api/v1/sessions/{id}/close"),
    ] {
        let (st, body) = chunked(&s.url, &path, &big).await;
        assert_eq!(
            (st, body["code"].as_str()),
            (413, Some("body_too_large")),
            "{path}: {body}"
        );
        assert!(
            body["message"].as_str().unwrap().contains("65536"),
            "{body}"
        );
    }
    let (st, body) = chunked(
        &s.url,
        &format!("/api/v1/sessions/{id}/close"),
        br#"{"why":"done"}"#,
    )
    .await;
    assert_eq!(
        (st, body["code"].as_str()),
        (400, Some("unexpected_body")),
        "{body}"
    );
}

/// A session's `last_seq` is its newest event's, not its number of events (fewer when a line
/// was skipped).
#[tokio::test]
async fn last_seq_is_the_newest_events_seq() {
    let s = start(|_| {}, None).await;
    let mut file = s.store.create(SessionMeta::default()).unwrap();
    for i in 0..4 {
        file.append("#main", "note", json!({ "i": i })).unwrap();
    }
    let (id, path) = (file.id().clone(), file.path().to_owned());
    drop(file);
    // Line 3 is event 2: damaged, skipped as the reader says.
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged: String = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| if i == 2 { "{oops\n" } else { l })
        .collect();
    std::fs::write(&path, damaged).unwrap();
    let (st, view) = s.call("GET", &format!("/api/v1/sessions/{id}"), None).await;
    assert_eq!(st, 200, "{view}");
    assert_eq!(view["last_seq"], 4, "{view}");
    assert_eq!(
        ids(s.events(id.as_str(), None).await.unwrap()).await,
        [1, 3, 4]
    );
}

/// With a named floor, another floor's session (or one of no named floor) is as one that
/// does not exist: not listed, read, streamed nor continued.
#[tokio::test]
async fn another_floors_session_is_not_found() {
    let s = start(|_| {}, Some("blog")).await;
    let dir = s.store.dir().to_owned();
    let project = SessionStore::new(&dir, "/p");
    let mut others = Vec::new();
    for floor in [Some("other"), None] {
        let meta = SessionMeta {
            floor: floor.map(str::to_owned),
            ..SessionMeta::default()
        };
        let mut file = project.create(meta).unwrap();
        file.append("#main", "note", json!({})).unwrap();
        others.push(file.id().to_string());
    }
    // Created here: blog's.
    let (mine, _) = s.create().await;
    s.close(&mine).await;
    let (_, list) = s.call("GET", "/api/v1/sessions", None).await;
    let listed: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [mine.as_str()], "{list}");
    for other in &others {
        for (method, path) in [
            ("GET", format!("/api/v1/sessions/{other}")),
            ("GET", format!("/api/v1/sessions/{other}/events")),
            ("POST", format!("/api/v1/sessions/{other}/resume")),
            ("POST", format!("/api/v1/sessions/{other}/cancel")),
        ] {
            let (st, body) = s.call(method, &path, None).await;
            assert_eq!(st, 404, "{method} {path}: {body}");
        }
    }
    let (st, body) = s
        .call("POST", &format!("/api/v1/sessions/{mine}/resume"), None)
        .await;
    assert_eq!(st, 200, "{body}");
    let read = SessionFile::resume(
        &project.path(&SessionId::parse(&others[0]).unwrap()),
        SessionId::parse(&others[0]).unwrap(),
        |_| Ok(()),
    );
    assert!(read.is_ok(), "the other floor's session was left alone");
}

/// The furniture proxy checks the grants of the agent the floor knows, however the call
/// spells it (`keeper`, `@Keeper`): it was refused as `not_granted`.
#[tokio::test]
async fn the_proxy_takes_the_agents_handle_however_spelled() {
    let s = start(|_| {}, None).await;
    let (id, _) = s.create().await;
    let path = format!("/api/v1/sessions/{id}/furniture/tasks/call");
    for agent in ["keeper", "@Keeper", "@keeper"] {
        let (st, body) = s
            .call(
                "POST",
                &path,
                Some(json!({"agent": agent, "tool": "add_task", "args": {"title": agent}})),
            )
            .await;
        assert_eq!(st, 200, "{agent}: {body}");
    }
    let (st, body) = s
        .call(
            "POST",
            &path,
            Some(json!({"agent": "stranger", "tool": "list_tasks"})),
        )
        .await;
    assert_eq!(st, 422, "{body}");
}
