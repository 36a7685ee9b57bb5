//! HTTP connections bounded in number and in time, for the servers of ofc (the hub and its
//! witness, the floor server and its MCP endpoints).
//!
//! - **Number**: at most [`ConnLimits::max_connections`] connections are served at once. Past
//!   that, a new connection gets an immediate `503` with a JSON body and `Retry-After: 1`, and
//!   is closed: the hub sheds load instead of running out of file descriptors (which used to
//!   stop it answering `/healthz`). The default leaves a reserve of the process's open-file
//!   limit for the database, blobs and search index, and counts two files per connection (its
//!   socket and the file a download streams from).
//! - **Answers**: an answer the client takes nothing of for [`ConnLimits::write_timeout`] is
//!   cut and its connection closed, so stalled downloads give their connections (and open
//!   files) back.
//! - **Headers**: a request's headers must arrive within [`ConnLimits::header_timeout`]; the
//!   same timer closes a keep-alive connection that stays idle that long (hyper starts it
//!   whenever the connection waits for a request head), so slow-loris and idle floods end.
//! - **Bodies**: a request body that sends nothing for [`ConnLimits::body_timeout`] fails
//!   (a declared `Content-Length` that never arrives no longer holds a task forever).
//! - **Accept errors** (`EMFILE` and the like) back off and go on; they never end the server.
//! - **hyper's own answers**: a request hyper cannot parse (bad request line or header → 400,
//!   target over 64 KiB → 414, head too large → 431) is answered by hyper itself, with an
//!   empty body. The connection's IO follows the responses it writes (by `content-length`,
//!   chunks, `HEAD`, 1xx/204/304) so that every head starts a write and is seen whole; a head
//!   that answers no request handed to the app is hyper's, and goes out with a JSON body that
//!   has both error shapes of ofc's servers ([`parse_error_body`]).

pub mod page_headers;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
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
    /// Time an answer may wait for the client to take any of it.
    pub write_timeout: Duration,
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
            write_timeout: DEFAULT_WRITE_TIMEOUT,
        }
    }

    /// These limits with answers cut after `d` without progress.
    pub fn with_write_timeout(mut self, d: Duration) -> Self {
        self.write_timeout = d.max(Duration::from_millis(100));
        self
    }
}

/// How long an answer may wait for its client by default.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Open files one connection may hold: its socket, and the blob or bundle file a download
/// streams from.
const FILES_PER_CONNECTION: u64 = 2;

impl Default for ConnLimits {
    fn default() -> Self {
        Self::new(0, Duration::from_secs(10), Duration::from_secs(60))
    }
}

/// The open-file limit minus [`FD_RESERVE`], shared by [`FILES_PER_CONNECTION`] files a
/// connection, between 64 and 16384.
pub fn default_max_connections() -> usize {
    #[cfg(unix)]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(65_536);
        let n = limit.saturating_sub(FD_RESERVE) / FILES_PER_CONNECTION;
        usize::try_from(n.clamp(64, 16_384)).unwrap_or(1024)
    }
    #[cfg(not(unix))]
    {
        1024
    }
}

/// The answer to a connection over the cap.
fn shed_response() -> Vec<u8> {
    let body = concat!(
        r#"{"code":"overloaded","message":"the server is at its connection limit; retry shortly","#,
        r#""errors":[{"code":"TOOMANYREQUESTS","message":"the server is at its connection limit; "#,
        r#"retry shortly","detail":null}]}"#
    );
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
            // Shutdown first: once it is asked for, no connection waiting in the backlog is
            // taken (the listener closes with them).
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection; backing off");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
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
        let requests = Pending::default();
        let io = TokioIo::new(JsonErrors::new(
            WriteDeadline::new(tcp, limits.write_timeout),
            requests.clone(),
        ));
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            requests
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push_back(req.method() == hyper::Method::HEAD);
            req.extensions_mut().insert(ConnectInfo(peer));
            let app = app.clone();
            async move {
                let response = app.oneshot(req.map(Body::new)).await;
                let mut r = match response {
                    Ok(r) => r,
                    Err(never) => match never {},
                };
                // A body refused as too large was not read: the connection cannot carry
                // another request, so the client is told not to reuse it (else its next
                // request on it meets a closed socket).
                if r.status() == hyper::StatusCode::PAYLOAD_TOO_LARGE {
                    r.headers_mut().insert(
                        hyper::header::CONNECTION,
                        hyper::header::HeaderValue::from_static("close"),
                    );
                }
                Ok::<_, Infallible>(r)
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .keep_alive(true)
            .serve_connection(io, service);
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

// ---- hyper's own answers (parse errors) get a JSON body ----

/// The JSON body of an answer hyper gives on its own, when it cannot parse a request (a bad
/// request line or header → 400, a target over 64 KiB → 414, a head over the buffer or with
/// too many headers → 431). The path is unknown then, so the body has both error shapes of
/// ofc's servers: `code`/`message` (the hub API, the floor server) and the OCI envelope
/// `errors: [{code, message, detail}]`.
pub fn parse_error_body(status: u16) -> String {
    let (code, oci, message) = match status {
        414 => (
            "uri_too_long",
            "UNSUPPORTED",
            "the request target is too long",
        ),
        431 => (
            "headers_too_large",
            "UNSUPPORTED",
            "the request headers are too large or too many",
        ),
        400 => (
            "bad_request",
            "UNSUPPORTED",
            "the request is not valid HTTP/1.1",
        ),
        s if s >= 500 => (
            "internal",
            "UNKNOWN",
            "the server could not read the request",
        ),
        _ => (
            "bad_request",
            "UNSUPPORTED",
            "the request could not be read",
        ),
    };
    serde_json::json!({
        "code": code,
        "message": message,
        "errors": [{"code": oci, "message": message, "detail": null}],
    })
    .to_string()
}

/// What comes next in the stream of responses a connection writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The next byte starts a response head.
    Head,
    /// The rest of a head already looked at, then `next`.
    HeadBytes { left: usize, next: AfterHead },
    /// This many body bytes, then a head.
    Body(u64),
    /// Inside a chunked body.
    Chunked(Chunk),
    /// Not followed any more (a body delimited by the close, an upgrade, a surprise): every
    /// byte passes as it is.
    Opaque,
}

/// What follows a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterHead {
    Head,
    Body(u64),
    Chunked,
    Opaque,
}

impl AfterHead {
    fn framing(self) -> Framing {
        match self {
            AfterHead::Head | AfterHead::Body(0) => Framing::Head,
            AfterHead::Body(n) => Framing::Body(n),
            AfterHead::Chunked => Framing::Chunked(Chunk::Size { size: 0, digits: 0 }),
            AfterHead::Opaque => Framing::Opaque,
        }
    }
}

/// Where a chunked body is (`<hex size>[;ext]\r\n<data>\r\n` … `0\r\n<trailers>\r\n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// The size line; `digits` counted until the first non-hex byte, after which it is
    /// extension (ignored) up to the `\n`.
    Size { size: u64, digits: u8 },
    /// Data bytes left.
    Data(u64),
    /// The `\r\n` after the data (bytes left).
    DataEnd(u8),
    /// After the last chunk: trailer lines until an empty one; `line` bytes so far.
    Trailer { line: u64 },
}

impl Framing {
    /// Goes over `bytes` (written or about to be) up to the start of the next head; answers how
    /// many it went over.
    fn advance(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        while at < bytes.len() {
            match self {
                Framing::Head => return at,
                Framing::Opaque => return bytes.len(),
                Framing::HeadBytes { left, next } => {
                    let n = (*left).min(bytes.len() - at);
                    at += n;
                    *left -= n;
                    if *left == 0 {
                        *self = next.framing();
                    }
                }
                Framing::Body(left) => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(bytes.len() - at);
                    at += n;
                    *left -= n as u64;
                    if *left == 0 {
                        *self = Framing::Head;
                    }
                }
                Framing::Chunked(chunk) => match chunk {
                    Chunk::Data(left) => {
                        let n = usize::try_from(*left)
                            .unwrap_or(usize::MAX)
                            .min(bytes.len() - at);
                        at += n;
                        *left -= n as u64;
                        if *left == 0 {
                            *chunk = Chunk::DataEnd(2);
                        }
                    }
                    Chunk::DataEnd(left) => {
                        at += 1;
                        *left -= 1;
                        if *left == 0 {
                            *chunk = Chunk::Size { size: 0, digits: 0 };
                        }
                    }
                    Chunk::Size { size, digits } => {
                        let b = bytes[at];
                        at += 1;
                        if b == b'\n' {
                            *chunk = if *size == 0 {
                                Chunk::Trailer { line: 0 }
                            } else {
                                Chunk::Data(*size)
                            };
                        } else if let Some(d) = (*digits != u8::MAX)
                            .then(|| char::from(b).to_digit(16))
                            .flatten()
                        {
                            *size = size.saturating_mul(16).saturating_add(u64::from(d));
                            *digits = digits.saturating_add(1).min(u8::MAX - 1);
                        } else {
                            // `\r`, or an extension: the size is complete.
                            *digits = u8::MAX;
                        }
                    }
                    Chunk::Trailer { line } => {
                        let b = bytes[at];
                        at += 1;
                        match b {
                            b'\n' if *line == 0 => *self = Framing::Head,
                            b'\n' => *line = 0,
                            b'\r' => {}
                            _ => *line += 1,
                        }
                    }
                },
            }
        }
        at
    }
}

/// A response head, as far as framing goes.
struct Head {
    /// Its length, up to and with the empty line.
    len: usize,
    status: u16,
    content_length: Option<u64>,
    chunked: bool,
}

fn parse_head(bytes: &[u8]) -> Option<Head> {
    let len = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&bytes[..len]).ok()?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next()?;
    if !status_line.starts_with("HTTP/1.") {
        return None;
    }
    let status = status_line.get(9..12)?.parse().ok()?;
    let (mut content_length, mut chunked) = (None, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(value.parse().ok()?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        }
    }
    Some(Head {
        len,
        status,
        content_length,
        chunked,
    })
}

/// The requests of a connection handed to the app whose answer has not been written yet,
/// oldest first: `true` for a `HEAD` (its answer has no body whatever its `content-length`).
type Pending = Arc<std::sync::Mutex<VecDeque<bool>>>;

/// A connection's IO, which follows the responses it writes (heads, then bodies by
/// `content-length` or chunks) so as to see each head whole; a head that answers no request
/// of the app is hyper's own (an error on a request it could not parse, which has an empty
/// body), and is written with [`parse_error_body`] instead.
#[derive(Debug)]
struct JsonErrors<T> {
    inner: T,
    framing: Framing,
    requests: Pending,
    /// A replacement not yet written, and how much of it is.
    replacement: Vec<u8>,
    replaced: usize,
}

impl<T> JsonErrors<T> {
    fn new(inner: T, requests: Pending) -> Self {
        JsonErrors {
            inner,
            framing: Framing::Head,
            requests,
            replacement: Vec::new(),
            replaced: 0,
        }
    }

    /// Looks at the head `bytes` start with: answers how many bytes it stands for when it is
    /// replaced (then `self.replacement` holds what goes out instead).
    fn at_head(&mut self, bytes: &[u8]) -> Option<usize> {
        let Some(head) = parse_head(bytes) else {
            self.framing = Framing::Opaque;
            return None;
        };
        if (100..200).contains(&head.status) {
            // `100 Continue`, written by hyper for a request of the app; `101` switches
            // protocols.
            self.framing = if head.status == 101 {
                Framing::Opaque
            } else {
                Framing::HeadBytes {
                    left: head.len,
                    next: AfterHead::Head,
                }
            };
            return None;
        }
        let request = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        let next = match request {
            None if head.status >= 400 && head.content_length == Some(0) && !head.chunked => {
                let body = parse_error_body(head.status);
                let text = String::from_utf8_lossy(&bytes[..head.len]);
                let mut out = String::new();
                for line in text.trim_end_matches("\r\n").split("\r\n") {
                    if !line
                        .split_once(':')
                        .is_some_and(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                    {
                        out.push_str(line);
                        out.push_str("\r\n");
                    }
                }
                out.push_str("content-type: application/json\r\n");
                out.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
                self.replacement = out.into_bytes();
                self.replaced = 0;
                self.framing = Framing::Head;
                return Some(head.len);
            }
            Some(true) => AfterHead::Head,
            _ if head.status == 204 || head.status == 304 => AfterHead::Head,
            _ if head.chunked => AfterHead::Chunked,
            _ => head
                .content_length
                .map_or(AfterHead::Opaque, AfterHead::Body),
        };
        self.framing = Framing::HeadBytes {
            left: head.len,
            next,
        };
        None
    }
}

impl<T: AsyncWrite + Unpin> JsonErrors<T> {
    /// Writes out the rest of a replacement.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.replaced < self.replacement.len() {
            let n = ready!(
                Pin::new(&mut self.inner).poll_write(cx, &self.replacement[self.replaced..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.replaced += n;
        }
        self.replacement = Vec::new();
        self.replaced = 0;
        Poll::Ready(Ok(()))
    }

    fn poll_out(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        ready!(self.poll_replacement(cx))?;
        let Some(first) = bufs.iter().find(|b| !b.is_empty()) else {
            return Poll::Ready(Ok(0));
        };
        if self.framing == Framing::Head
            && let Some(taken) = self.at_head(first)
        {
            // The replacement goes out now or on the next write, flush or shutdown.
            if let Poll::Ready(Err(e)) = self.poll_replacement(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(taken));
        }
        // Write up to the next head, which must start a write to be seen whole.
        let mut probe = self.framing;
        let mut slices = Vec::with_capacity(bufs.len().min(64));
        for b in bufs.iter().take(64) {
            let n = probe.advance(b);
            if n > 0 {
                slices.push(IoSlice::new(&b[..n]));
            }
            if n < b.len() {
                break;
            }
        }
        let written = ready!(match slices.as_slice() {
            [] => return Poll::Ready(Ok(0)),
            [one] => Pin::new(&mut self.inner).poll_write(cx, one),
            many => Pin::new(&mut self.inner).poll_write_vectored(cx, many),
        })?;
        let mut left = written;
        for s in &slices {
            let k = left.min(s.len());
            self.framing.advance(&s[..k]);
            left -= k;
            if left == 0 {
                break;
            }
        }
        Poll::Ready(Ok(written))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrors<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrors<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_out(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_out(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replacement(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replacement(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// A connection whose writes fail with `TimedOut` once one has waited `timeout` for the peer
/// to take anything (a client that stops reading an answer).
#[derive(Debug)]
struct WriteDeadline<T> {
    inner: T,
    timeout: Duration,
    /// Armed when a write, flush or shutdown waits; cleared when one makes progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteDeadline<T> {
    fn new(inner: T, timeout: Duration) -> Self {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// `poll` is what the inner IO answered: progress disarms the deadline, waiting arms it,
    /// and waiting past it fails.
    fn watch<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if sleep.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took nothing of the answer in time",
            )));
        }
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncWrite, AsyncWriteExt as _};

    use super::{JsonErrors, Pending, default_max_connections, parse_error_body, shed_response};

    #[test]
    fn the_shed_answer_is_a_complete_json_503() {
        let text = String::from_utf8(shed_response()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["code"], "overloaded");
        assert_eq!(v["errors"][0]["code"], "TOOMANYREQUESTS");
    }

    #[test]
    fn the_default_cap_leaves_a_reserve() {
        let cap = default_max_connections();
        assert!((64..=16_384).contains(&cap), "{cap}");
    }

    /// A sink that takes at most `step` bytes a write, so heads and bodies split anywhere.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let n = buf.len().min(this.step);
            this.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    const FAKE: &str = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";

    /// Writes `parts` (each a buffer hyper hands over) through the adapter; `heads` is the
    /// request queue (`true` for HEAD).
    async fn through(parts: &[&[u8]], heads: &[bool], step: usize) -> String {
        let requests = Pending::default();
        requests.lock().unwrap().extend(heads.iter().copied());
        let mut io = JsonErrors::new(
            Trickle {
                out: Vec::new(),
                step,
            },
            requests,
        );
        for part in parts {
            io.write_all(part).await.unwrap();
        }
        io.flush().await.unwrap();
        String::from_utf8(io.inner.out).unwrap()
    }

    #[tokio::test]
    async fn app_responses_pass_as_they_are_even_when_a_body_looks_like_an_error_head() {
        let sized = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{FAKE}",
            FAKE.len()
        );
        let chunked = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x};x=y\r\n{FAKE}\r\n0\r\nt: 1\r\n\r\n",
            FAKE.len()
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n";
        let empty_400 = FAKE; // an app's own bodiless 400 stays bodiless
        for step in [1, 7, 4096] {
            for parts in [
                vec![
                    sized.as_bytes(),
                    chunked.as_bytes(),
                    head.as_bytes(),
                    empty_400.as_bytes(),
                ],
                vec![(sized.clone() + &chunked + head + empty_400).as_bytes()],
            ] {
                let out = through(&parts, &[false, false, true, false], step).await;
                assert_eq!(
                    out,
                    sized.clone() + &chunked + head + empty_400,
                    "step {step}"
                );
            }
        }
    }

    #[tokio::test]
    async fn hyper_s_own_error_head_gets_a_json_body_after_app_responses() {
        let sized = "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}";
        let own = "HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: now\r\n\r\n";
        for step in [1, 5, 4096] {
            let out = through(&[(sized.to_owned() + own).as_bytes()], &[false], step).await;
            let rest = out.strip_prefix(sized).unwrap();
            let (head, body) = rest.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
            assert!(head.contains("date: now"), "{head}");
            assert!(head.contains("content-type: application/json"), "{head}");
            assert!(
                head.contains(&format!("content-length: {}", body.len())),
                "{head}"
            );
            assert!(!head.contains("content-length: 0"), "{head}");
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(v["code"], "uri_too_long");
            assert_eq!(v["errors"][0]["code"], "UNSUPPORTED");
        }
    }

    #[test]
    fn every_parse_error_body_has_both_shapes() {
        for status in [400, 414, 431, 500, 505] {
            let v: serde_json::Value = serde_json::from_str(&parse_error_body(status)).unwrap();
            assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
            assert!(v["errors"][0]["code"].is_string(), "{v}");
            assert!(v["errors"][0]["message"].is_string(), "{v}");
            assert!(v["errors"][0].get("detail").is_some(), "{v}");
        }
    }
}
