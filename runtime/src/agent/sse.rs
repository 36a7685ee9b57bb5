//! Server-sent events: ofc's streamed `/ofc/respond` format, and the one bounded reader of
//! `text/event-stream` bodies that both [`super::HttpAgent`] and the LLM client use.
//!
//! The draft says an agent "can stream response back (SSE or chunked HTTP)" without a format;
//! ofc's is three events:
//!
//! - `event: delta`, `data: {"content": "piece"}` — any number, in order;
//! - `event: done`, `data: <the /ofc/respond body>` — exactly once, last; authoritative;
//! - `event: error`, `data: {"message": "…"}` — instead of `done` when the agent failed.
//!
//! A stream that ends without `done` or `error` is a failed call.
//!
//! Parsing is the `eventsource-stream` crate's (the HTML living standard's algorithm: `\n`,
//! `\r\n` and `\r` line ends, so a blank line written as `\n\r\n` ends an event too). What it
//! does not do is bound an event: [`events`] counts the bytes read since the last complete
//! event and fails once they pass the limit, so a peer that never ends an event cannot grow the
//! buffer without end. The bound is exact to within one read of the body (the bytes of the
//! read that completed the previous event are not counted again).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

/// The event carrying a piece of content.
pub const DELTA: &str = "delta";
/// The event carrying the complete response.
pub const DONE: &str = "done";
/// The event reporting a failure.
pub const ERROR: &str = "error";
/// The media type of a streamed response.
pub const MEDIA_TYPE: &str = "text/event-stream";

/// The body of a `delta` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaData {
    /// The piece of content.
    pub content: String,
}

/// The body of an `error` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorData {
    /// What went wrong.
    pub message: String,
}

/// One parsed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `message` when absent.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Why an event stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event grew past the limit.
    #[error("a server-sent event is larger than {0} bytes")]
    TooLarge(usize),
    /// The body is not UTF-8 or not an event stream.
    #[error("the event stream is not valid: {0}")]
    Invalid(String),
    /// Reading the body failed (connection reset, timeout).
    #[error("{0}")]
    Transport(String),
}

/// A stream of events.
pub type SseStream<'a> = Pin<Box<dyn Stream<Item = Result<SseEvent, SseError>> + Send + 'a>>;

/// The events of a `text/event-stream` body, refusing any event larger than `limit` bytes.
/// After an error the stream ends.
pub fn events<'a, S, B, E>(body: S, limit: usize) -> SseStream<'a>
where
    S: Stream<Item = Result<B, E>> + Send + 'a,
    B: AsRef<[u8]> + Send + 'a,
    E: std::error::Error + Send + 'a,
{
    // Bytes handed to the parser since it last completed an event. The parser pulls from the
    // body only when its buffer holds no complete event, so a count past the limit means an
    // event (or a run of blank-less lines) at least that large.
    let pending = Arc::new(AtomicUsize::new(0));
    let counted = {
        let pending = pending.clone();
        body.map(move |chunk| match chunk {
            Ok(bytes) => {
                let total = pending.fetch_add(bytes.as_ref().len(), Ordering::Relaxed)
                    + bytes.as_ref().len();
                if total > limit {
                    Err(SseError::TooLarge(limit))
                } else {
                    Ok(bytes)
                }
            }
            Err(e) => Err(SseError::Transport(super::http::error_chain(&e))),
        })
    };
    let mut failed = false;
    counted
        .eventsource()
        .map(move |item| match item {
            Ok(event) => {
                pending.store(0, Ordering::Relaxed);
                Ok(SseEvent {
                    event: event.event,
                    data: event.data,
                })
            }
            Err(EventStreamError::Transport(e)) => Err(e),
            Err(EventStreamError::Utf8(e)) => Err(SseError::Invalid(e.to_string())),
            Err(EventStreamError::Parser(e)) => Err(SseError::Invalid(e.to_string())),
        })
        // One error ends the stream: the parser's state after it is not worth reading on.
        .take_while(move |item| {
            let keep = !failed;
            failed |= item.is_err();
            futures::future::ready(keep)
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(
        parts: &[&'static [u8]],
    ) -> impl Stream<Item = Result<&'static [u8], std::io::Error>> {
        futures::stream::iter(parts.iter().map(|p| Ok(*p)).collect::<Vec<_>>())
    }

    async fn all(parts: &[&'static [u8]], limit: usize) -> Vec<Result<SseEvent, SseError>> {
        events(chunks(parts), limit).collect().await
    }

    fn ev(event: &str, data: &str) -> Result<SseEvent, SseError> {
        Ok(SseEvent {
            event: event.into(),
            data: data.into(),
        })
    }

    #[tokio::test]
    async fn splits_events_across_chunks_and_line_endings() {
        let got = all(
            &[
                b"event: delta\ndata: {\"con",
                b"tent\":\"a\"}\n\n: comment\r\n\r\nevent: done\r\ndata: x\r\ndata: y\r\n\r\n",
            ],
            1024,
        )
        .await;
        assert_eq!(
            got,
            vec![ev("delta", "{\"content\":\"a\"}"), ev("done", "x\ny")]
        );
    }

    #[tokio::test]
    async fn a_blank_line_written_as_lf_cr_lf_ends_an_event() {
        // `data: a\n` then `\r\n`: the second line is empty, so the event is complete. The old
        // hand-written parser looked only for `\n\n`, `\r\n\r\n` and `\r\r` and missed it.
        let got = all(&[b"data: a\n\r\ndata: b\n", b"\r\n"], 1024).await;
        assert_eq!(got, vec![ev("message", "a"), ev("message", "b")]);
    }

    #[tokio::test]
    async fn bare_cr_line_ends_are_lines() {
        // A `\r` at the very end of the body could be the start of `\r\n`, so the parser waits
        // for the next byte; here the next event follows.
        let got = all(&[b"event: e\rdata: 1\r\rdata: 2\n\n"], 1024).await;
        assert_eq!(got, vec![ev("e", "1"), ev("message", "2")]);
    }

    #[tokio::test]
    async fn refuses_an_endless_event_and_stops() {
        let got = all(&[b"data: ", &[b'a'; 20], &[b'a'; 20], b"\n\n"], 32).await;
        assert_eq!(got, vec![Err(SseError::TooLarge(32))]);
    }

    #[tokio::test]
    async fn the_limit_is_per_event_not_per_stream() {
        // Many small events add up to far more than the limit.
        let parts: Vec<&'static [u8]> = vec![b"data: 0123456789\n\n"; 50];
        let got = all(&parts, 32).await;
        assert_eq!(got.len(), 50);
        assert!(got.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn transport_errors_are_reported() {
        let body = futures::stream::iter(vec![
            Ok::<&'static [u8], std::io::Error>(b"data: a\n\n"),
            Err(std::io::Error::other("connection reset")),
        ]);
        let got: Vec<_> = events(body, 1024).collect().await;
        assert_eq!(
            got,
            vec![
                ev("message", "a"),
                Err(SseError::Transport("connection reset".into()))
            ]
        );
    }
}
