//! HTTP connections bounded in number and in time, for the servers of ofc (the hub, the floor
//! server).
//!
//! - **Number**: at most [`ConnLimits::max_connections`] connections are served at once. Past
//!   that, a new connection gets an immediate `503` with a JSON body and `Retry-After: 1`, and
//!   is closed: the hub sheds load instead of running out of file descriptors (which used to
//!   stop it answering `/healthz`). The default leaves a reserve of the process's open-file
//!   limit for the database, blobs and search index.
//! - **Headers**: a request's headers must arrive within [`ConnLimits::header_timeout`]; the
//!   same timer closes a keep-alive connection that stays idle that long (hyper starts it
//!   whenever the connection waits for a request head), so slow-loris and idle floods end.
//! - **Bodies**: a request body that sends nothing for [`ConnLimits::body_timeout`] fails
//!   (a declared `Content-Length` that never arrives no longer holds a task forever).
//! - **Accept errors** (`EMFILE` and the like) back off and go on; they never end the server.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt as _;

/// How many open files are kept for the hub itself when the connection cap is derived from
/// the open-file limit.
const FD_RESERVE: u64 = 256;

/// Limits of a server's connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Time for a request's headers, and for an idle keep-alive connection.
    pub header_timeout: Duration,
    /// Time a request body may send nothing.
    pub body_timeout: Duration,
}

impl ConnLimits {
    /// These limits; `max_connections: 0` derives the cap from the open-file limit (see
    /// [`default_max_connections`]).
    pub fn new(max_connections: usize, header_timeout: Duration, body_timeout: Duration) -> Self {
        ConnLimits {
            max_connections: if max_connections == 0 {
                default_max_connections()
            } else {
                max_connections
            },
            header_timeout: header_timeout.max(Duration::from_millis(100)),
            body_timeout: body_timeout.max(Duration::from_millis(100)),
        }
    }
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self::new(0, Duration::from_secs(10), Duration::from_secs(60))
    }
}

/// The open-file limit minus [`FD_RESERVE`], between 64 and 16384.
pub fn default_max_connections() -> usize {
    #[cfg(unix)]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(65_536);
        usize::try_from(limit.saturating_sub(FD_RESERVE).clamp(64, 16_384)).unwrap_or(1024)
    }
    #[cfg(not(unix))]
    {
        1024
    }
}

/// The answer to a connection over the cap.
fn shed_response() -> Vec<u8> {
    let body =
        r#"{"code":"overloaded","message":"the hub is at its connection limit; retry shortly"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn shed(mut tcp: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        tcp.write_all(&shed_response()).await?;
        tcp.shutdown().await
    })
    .await;
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves; then stops accepting
/// and lets in-flight requests finish (at most 30 s).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let app = app.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        limits.body_timeout,
    ));
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection; backing off");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "connection limit reached; shedding");
            tokio::spawn(shed(tcp));
            continue;
        };
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            let app = app.clone();
            async move {
                let response = app.oneshot(req.map(Body::new)).await;
                Ok::<_, Infallible>(match response {
                    Ok(r) => r,
                    Err(never) => match never {},
                })
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .keep_alive(true)
            .serve_connection(TokioIo::new(tcp), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(error) = conn.await {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(30), graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still running 30 s after shutdown; closing them");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shed_answer_is_a_complete_json_503() {
        let text = String::from_utf8(shed_response()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["code"], "overloaded");
    }

    #[test]
    fn the_default_cap_leaves_a_reserve() {
        let cap = default_max_connections();
        assert!((64..=16_384).contains(&cap), "{cap}");
    }
}
