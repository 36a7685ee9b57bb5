//! The browser view's routes and headers, and the streamed pieces in the event stream, against
//! a real server on loopback whose sessions are real floors recording into real session files
//! (one in-process agent that streams its answer).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use index_schema::wire::{
    AgentInfo, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};

use super::web::CSP;
use super::*;
use crate::Handle;
use crate::agent::{Agent, AgentError, Deltas};
use crate::floor::{FloorAgent, FloorSettings};
use crate::session::{SessionMeta, SessionStore};

const TOKEN: &str = "ofc_serve_test-token";
const PIECES: [&str; 4] = ["Hel", "lo, ", "wor", "ld"];

/// `@s`: wakes for every user message and streams `PIECES`, 30 ms apart.
#[derive(Debug)]
struct Streamer;

#[async_trait]
impl Agent for Streamer {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some("@s".into()),
            ..AgentInfo::default()
        })
    }

    async fn should_wake(&self, r: &ShouldWakeRequest) -> Result<ShouldWakeResponse, AgentError> {
        Ok(if r.last_message.from == "@user" {
            ShouldWakeResponse::wake("the user spoke")
        } else {
            ShouldWakeResponse::sleep()
        })
    }

    async fn respond(
        &self,
        _: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        for piece in PIECES {
            tokio::time::sleep(Duration::from_millis(30)).await;
            if let Some(d) = &deltas {
                d.send(piece);
            }
        }
        Ok(RespondResponse::reply(PIECES.concat()))
    }
}

/// Opens each session on a floor with `@s`.
struct Host {
    store: SessionStore,
}

#[async_trait]
impl SessionHost for Host {
    async fn open(&self, resume: Option<&SessionId>) -> Result<HostedSession, OpenError> {
        assert!(resume.is_none(), "these tests create sessions only");
        let file = self.store.create(SessionMeta::default())?;
        let live = LiveSession::new(file);
        let agent = FloorAgent::new(Handle::new("@s").unwrap(), Arc::new(Streamer));
        let floor = Floor::open_session(
            "web-test",
            None,
            vec![agent],
            FloorSettings {
                stream: true,
                ..FloorSettings::default()
            },
            live.clone(),
            Vec::new(),
        )
        .map_err(|e| OpenError::Start(e.to_string()))?;
        Ok(HostedSession {
            live,
            floor,
            furniture: None,
            stop: Box::new(NothingElse),
        })
    }
}

struct Running {
    url: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn start() -> Running {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let host = Arc::new(Host {
        store: store.clone(),
    });
    let mut settings = SessionServerSettings::new(TOKEN);
    settings.allowed_host_headers = Some(vec!["127.0.0.1".into()]);
    let server = SessionServer::new(settings, store, host);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    Running {
        url,
        http: reqwest::Client::new(),
        _dir: dir,
        _stop: stop,
    }
}

fn assert_headers(r: &reqwest::Response, what: &str) {
    let h = r.headers();
    assert_eq!(h["content-security-policy"], CSP, "{what}");
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(h["x-frame-options"], "DENY", "{what}");
    assert_eq!(h["referrer-policy"], "no-referrer", "{what}");
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_without_a_token_under_a_strict_csp() {
    let s = start().await;
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    ] {
        assert!(CSP.split("; ").any(|d| d == directive), "{directive}");
    }
    assert!(!CSP.contains("unsafe"), "{CSP}");

    let page = s.http.get(format!("{}/", s.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_headers(&page, "/");
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script src="/assets/app.js" defer></script>"#));
    assert_eq!(html.matches("<script").count(), 1, "no inline script");
    assert!(
        !html.contains("<style") && !html.contains(" style="),
        "no inline style"
    );
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("//cdn"));

    for (file, kind) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ] {
        let r = s
            .http
            .get(format!("{}/assets/{file}", s.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{file}");
        assert_headers(&r, file);
        assert_eq!(r.headers()["content-type"], kind, "{file}");
    }
    let js = web::APP_JS;
    for banned in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "eval(",
        "new EventSource",
        "?token=",
    ] {
        assert!(!js.contains(banned), "app.js uses {banned}");
    }

    let missing = s
        .http
        .get(format!("{}/assets/other.js", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_headers(&missing, "a missing asset");

    // The data routes stay bearer-only, and carry the same headers.
    let list = s
        .http
        .get(format!("{}/api/v1/sessions", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), 401);
    assert_headers(&list, "a refused API call");
    let query = s
        .http
        .get(format!("{}/api/v1/sessions?token={TOKEN}", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(
        query.status(),
        401,
        "a token in the query string is not one"
    );

    // The page answers to loopback Host names only, like the rest.
    let rebound = s
        .http
        .get(format!("{}/", s.url))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 421);
}

/// One server-sent event: (id, event, data).
type Frame = (Option<u64>, String, String);

async fn frames_until(
    body: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    buf: &mut String,
    mut done: impl FnMut(&Frame) -> bool,
) -> Vec<Frame> {
    let mut out = Vec::new();
    loop {
        while let Some(end) = buf.find("\n\n") {
            let text: String = buf.drain(..end + 2).collect();
            let (mut id, mut event, mut data) = (None, String::new(), String::new());
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.parse().unwrap());
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            if data.is_empty() {
                continue; // a keep-alive
            }
            let frame = (id, event, data);
            let last = done(&frame);
            out.push(frame);
            if last {
                return out;
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(20), body.next())
            .await
            .expect("an event within 20 s")
            .expect("the stream goes on")
            .unwrap();
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

fn is_answer(f: &Frame) -> bool {
    f.1 == "message_posted" && f.2.contains(r#""from":"@s""#)
}

#[tokio::test]
async fn live_watchers_get_the_streamed_pieces_without_ids_and_resuming_stays_exact() {
    let s = start().await;
    let auth = format!("Bearer {TOKEN}");
    let opened: serde_json::Value = s
        .http
        .post(format!("{}/api/v1/sessions", s.url))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = opened["id"].as_str().unwrap().to_owned();
    let events = format!("{}/api/v1/sessions/{id}/events", s.url);
    let watch = s
        .http
        .get(&events)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let mut body = watch.bytes_stream();
    let mut buf = String::new();
    // Caught up with what the session holds before anything streams (pieces that come while
    // a watcher catches up are dropped).
    let held = opened["last_seq"].as_u64().unwrap();
    let mut before = Vec::new();
    if held > 0 {
        before = frames_until(&mut body, &mut buf, |f| f.0 == Some(held)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let posted = s
        .http
        .post(format!("{}/api/v1/sessions/{id}/messages", s.url))
        .header("authorization", &auth)
        .json(&serde_json::json!({"content": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 201);
    let mut frames = before;
    frames.extend(frames_until(&mut body, &mut buf, is_answer).await);

    let pieces: Vec<&Frame> = frames.iter().filter(|f| f.1 == "delta").collect();
    assert!(
        pieces.iter().all(|f| f.0.is_none()),
        "pieces carry no id: {pieces:?}"
    );
    let text: String = pieces
        .iter()
        .map(|f| {
            let v: serde_json::Value = serde_json::from_str(&f.2).unwrap();
            assert_eq!(v["type"], "delta");
            assert_eq!(v["agent"], "@s");
            v["content"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        text,
        PIECES.concat(),
        "every piece, in order, before the message"
    );
    let responding = frames.iter().position(|f| f.1 == "responding").unwrap();
    let first_piece = frames.iter().position(|f| f.1 == "delta").unwrap();
    assert!(responding < first_piece, "{frames:?}");
    // The stored events are numbered 1, 2, … with no gap: the pieces took no number.
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.0).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());

    // A second watcher resuming after any stored event gets exactly the stored events after
    // it, and no piece (nothing streams now).
    let rest = frames_until(&mut body, &mut buf, |f| f.1 == "turn_ended").await;
    let all: Vec<u64> = ids
        .iter()
        .copied()
        .chain(rest.iter().filter_map(|f| f.0))
        .collect();
    let from = all[all.len() / 2];
    let again = s
        .http
        .get(&events)
        .header("authorization", &auth)
        .header("last-event-id", from.to_string())
        .send()
        .await
        .unwrap();
    let mut body2 = again.bytes_stream();
    let mut buf2 = String::new();
    let last = *all.last().unwrap();
    let resumed = frames_until(&mut body2, &mut buf2, |f| f.0 == Some(last)).await;
    assert!(resumed.iter().all(|f| f.1 != "delta"), "{resumed:?}");
    assert_eq!(
        resumed.iter().map(|f| f.0.unwrap()).collect::<Vec<_>>(),
        (from + 1..=last).collect::<Vec<_>>()
    );
}
