//! The hub's connections are bounded (issue 13, point 3): slow headers, idle keep-alive
//! connections and stalled bodies are cut off by timers, and past the connection cap new
//! connections get a JSON 503 at once instead of the hub running out of file descriptors.

use std::time::{Duration, Instant};

use ofc_test_kit::{Backend, TestHub};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn addr(app: &TestHub) -> String {
    app.url("").trim_start_matches("http://").to_owned()
}

/// Reads until the peer closes (or `bound` passes); what was read, and how long it took.
async fn read_to_close(stream: &mut TcpStream, bound: Duration) -> (String, Duration) {
    let start = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(bound.saturating_sub(start.elapsed()), stream.read(&mut buf))
            .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "the hub kept the connection open for {bound:?}; read so far: {}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), start.elapsed())
}

#[tokio::test]
async fn slow_headers_idle_connections_and_stalled_bodies_are_cut_off() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.header_timeout_secs = 1;
        c.body_timeout_secs = 1;
    })
    .await;
    let addr = addr(&app);

    // Slow-loris: half a request head, then nothing.
    let mut loris = TcpStream::connect(&addr).await.unwrap();
    loris
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: 1\r\n")
        .await
        .unwrap();
    let (_, took) = read_to_close(&mut loris, Duration::from_secs(10)).await;
    assert!(took >= Duration::from_millis(900), "closed early: {took:?}");

    // An idle connection that never sends anything.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    read_to_close(&mut idle, Duration::from_secs(10)).await;

    // A keep-alive connection goes idle after one answered request.
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (answer, _) = read_to_close(&mut kept, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // A login declaring a large body and sending 2 bytes of it.
    let mut stalled = TcpStream::connect(&addr).await.unwrap();
    stalled
        .write_all(
            b"POST /api/v1/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
              content-length: 1000000\r\n\r\n{\"",
        )
        .await
        .unwrap();
    let (answer, took) = read_to_close(&mut stalled, Duration::from_secs(10)).await;
    assert!(took < Duration::from_secs(5), "{took:?}");
    if !answer.is_empty() {
        assert!(!answer.starts_with("HTTP/1.1 2"), "{answer}");
    }
    // The hub still answers.
    let (status, _) = app.call(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(status, 200);
    app.stop().await;
}

#[tokio::test]
async fn past_the_connection_cap_new_connections_get_a_json_503_at_once() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.max_connections = 8;
        c.header_timeout_secs = 30;
    })
    .await;
    let addr = addr(&app);
    let mut flood = Vec::new();
    for _ in 0..8 {
        flood.push(TcpStream::connect(&addr).await.unwrap());
    }
    // The hub has accepted them all (each holds a slot).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = TcpStream::connect(&addr).await.unwrap();
    let (answer, took) = read_to_close(&mut extra, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["code"], "overloaded");

    // When the flood goes, the hub serves again.
    drop(flood);
    let start = Instant::now();
    loop {
        let r = reqwest::Client::new().get(app.url("/healthz")).send().await;
        if r.as_ref().is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the hub did not recover: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

/// Sends `request` on a new connection; the answer, checked to be one complete JSON error with
/// both shapes (the hub API's `code`/`message` and the OCI `errors` array), and its status.
async fn parse_error_answer(addr: &str, request: &[u8]) -> (u16, serde_json::Value) {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    // The hub may answer and close before reading all of it.
    let _ = tcp.write_all(request).await;
    let (answer, _) = read_to_close(&mut tcp, Duration::from_secs(10)).await;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer: {answer:?}"));
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("content-type: application/json"), "{head}");
    assert!(
        lower.contains(&format!("content-length: {}", body.len())),
        "{head}"
    );
    let v: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer:?}"));
    assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
    let oci = &v["errors"][0];
    assert!(oci["code"].is_string() && oci["message"].is_string(), "{v}");
    (head[9..12].parse().unwrap(), v)
}

#[tokio::test]
async fn requests_hyper_cannot_parse_get_a_json_error_in_both_shapes() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let addr = addr(&app);

    let long = format!(
        "GET /v2/{} HTTP/1.1\r\nhost: x\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    let (status, v) = parse_error_answer(&addr, long.as_bytes()).await;
    assert_eq!((status, v["code"].as_str()), (414, Some("uri_too_long")));

    let headers: String = (0..100)
        .map(|i| format!("x-h{i}: {}\r\n", "h".repeat(1024)))
        .collect();
    let big = format!("GET /healthz HTTP/1.1\r\nhost: x\r\n{headers}\r\n");
    let (status, v) = parse_error_answer(&addr, big.as_bytes()).await;
    assert_eq!(
        (status, v["code"].as_str()),
        (431, Some("headers_too_large"))
    );

    let (status, v) = parse_error_answer(&addr, b"BLAH \x7f\x00 nonsense\r\n\r\n").await;
    assert_eq!((status, v["code"].as_str()), (400, Some("bad_request")));

    let (status, _) = app.call(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(status, 200);
    app.stop().await;
}
