//! hyper answers requests it cannot parse on its own (400, 414, 431); those answers carry the
//! same JSON error body as every other error of ofc's servers, and the answers of the app
//! around them pass unchanged.

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use ofc_net::{ConnLimits, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A body that looks like hyper's own error head.
const FAKE: &str = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";

async fn start() -> String {
    let app = Router::new()
        .route("/fake", get(|| async { FAKE }))
        .route("/empty", get(|| async { StatusCode::BAD_REQUEST }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(serve(
        listener,
        app,
        ConnLimits::new(16, Duration::from_secs(5), Duration::from_secs(5)),
        std::future::pending(),
    ));
    addr
}

/// Sends `request` on a new connection and reads until the server closes it.
async fn exchange(addr: &str, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    // The server may answer (and close) before it has read everything.
    let _ = tcp.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut out))
        .await
        .expect("the server kept the connection open");
    String::from_utf8(out).unwrap()
}

/// The last response of `text`: status and JSON body, checked to be complete.
fn last_json(text: &str) -> (u16, serde_json::Value) {
    let at = text.rfind("HTTP/1.1 ").unwrap();
    let (head, body) = text[at..].split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-length: {}\r\n", body.len()))
            || head
                .to_ascii_lowercase()
                .ends_with(&format!("content-length: {}", body.len())),
        "{head}"
    );
    let v: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
    assert!(v["errors"][0]["code"].is_string(), "{v}");
    assert!(v["errors"][0]["message"].is_string(), "{v}");
    (status, v)
}

#[tokio::test]
async fn hyper_s_own_answers_have_a_json_body() {
    let addr = start().await;

    let long = format!("GET /{} HTTP/1.1\r\nhost: x\r\n\r\n", "a".repeat(70 * 1024));
    let (status, v) = last_json(&exchange(&addr, long.as_bytes()).await);
    assert_eq!((status, v["code"].as_str()), (414, Some("uri_too_long")));

    let big = format!(
        "GET /fake HTTP/1.1\r\nhost: x\r\n{}\r\n",
        (0..100)
            .map(|i| format!("x-{i}: {}\r\n", "b".repeat(1024)))
            .collect::<String>()
    );
    let (status, v) = last_json(&exchange(&addr, big.as_bytes()).await);
    assert_eq!(
        (status, v["code"].as_str()),
        (431, Some("headers_too_large"))
    );

    let (status, v) = last_json(&exchange(&addr, b"\x01\x02 garbage\r\n\r\n").await);
    assert_eq!((status, v["code"].as_str()), (400, Some("bad_request")));
}

#[tokio::test]
async fn after_app_answers_on_the_same_connection_too_and_those_pass_unchanged() {
    let addr = start().await;
    // Pipelined: a body that looks like an error head, a HEAD, an app's own bodiless 400,
    // then garbage.
    let text = exchange(
        &addr,
        b"GET /fake HTTP/1.1\r\nhost: x\r\n\r\n\
          HEAD /fake HTTP/1.1\r\nhost: x\r\n\r\n\
          GET /empty HTTP/1.1\r\nhost: x\r\n\r\n\
          GET / HTTP/1.1\r\nbad header\r\n\r\n",
    )
    .await;
    let (first, rest) = text.split_once("\r\n\r\n").unwrap();
    assert!(first.starts_with("HTTP/1.1 200 "), "{text}");
    assert!(rest.starts_with(FAKE), "{text}");
    let rest = &rest[FAKE.len()..];
    let (head, rest) = rest.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 "), "{text}");
    let (empty, rest) = rest.split_once("\r\n\r\n").unwrap();
    assert!(empty.starts_with("HTTP/1.1 400 "), "{text}");
    assert!(empty.contains("content-length: 0"), "{text}");
    let (status, _) = last_json(rest);
    assert_eq!(status, 400, "{text}");
}
