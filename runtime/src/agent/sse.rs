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
//! Parsing follows the HTML living standard's "interpreting an event stream": lines end in
//! `\r\n`, `\n` or `\r` (so a blank line written as `\n\r\n` ends an event), a blank line
//! dispatches, `data:` lines are joined with `\n`, `:` starts a comment, one space after the
//! colon is dropped, a leading byte-order mark is skipped, and an event left unfinished at the
//! end of the body is dropped. `id` and `retry` are read and ignored: ofc never reconnects, so
//! there is nothing to resume or wait for. The parser is written here rather than taken from
//! `eventsource-stream`, whose parser re-reads the unfinished line from its start on every
//! chunk and copies the rest of its buffer after every line (quadratic in a long line cut into
//! small reads); this one looks at each byte once, whatever the chunking.
//!
//! Each event is bounded: every byte read since the previous blank line (field names, comments
//! and line ends included) counts, and once they pass the limit the stream fails with
//! [`SseError::TooLarge`], so a peer that never ends an event cannot grow a buffer without end.

use std::collections::VecDeque;
use std::pin::Pin;

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
    struct State<'a, B, E> {
        body: Pin<Box<dyn Stream<Item = Result<B, E>> + Send + 'a>>,
        parser: Parser,
        ready: VecDeque<SseEvent>,
        /// The error to report once the events before it are out; then the stream ends.
        failed: Option<SseError>,
        done: bool,
    }
    let state = State {
        body: Box::pin(body),
        parser: Parser::new(limit),
        ready: VecDeque::new(),
        failed: None,
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(event) = st.ready.pop_front() {
                return Some((Ok(event), st));
            }
            if let Some(e) = st.failed.take() {
                st.done = true;
                return Some((Err(e), st));
            }
            if st.done {
                return None;
            }
            match st.body.next().await {
                // The end of the body: an unfinished event is dropped (the standard's rule).
                None => st.done = true,
                Some(Err(e)) => st.failed = Some(SseError::Transport(super::http::error_chain(&e))),
                Some(Ok(bytes)) => {
                    if let Err(e) = st.parser.feed(bytes.as_ref(), &mut st.ready) {
                        st.failed = Some(e);
                    }
                }
            }
        }
    })
    .boxed()
}

/// The incremental parser: bytes in, events out, each byte looked at once.
#[derive(Debug)]
struct Parser {
    limit: usize,
    /// Bytes read since the last blank line.
    size: usize,
    /// The unfinished line.
    line: Vec<u8>,
    /// The last line ended in `\r`: a `\n` first in the next chunk belongs to it.
    after_cr: bool,
    /// How much of a leading byte-order mark was read; `BOM.len()` once past it.
    bom_matched: usize,
    event: String,
    data: String,
    /// Bytes the line-end search has looked at (for the linear-time test).
    scanned: usize,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Parser {
    fn new(limit: usize) -> Self {
        Parser {
            limit,
            size: 0,
            line: Vec::new(),
            after_cr: false,
            bom_matched: 0,
            event: String::new(),
            data: String::new(),
            scanned: 0,
        }
    }

    /// Reads `chunk`, pushing the events it completes onto `out`.
    fn feed(&mut self, mut chunk: &[u8], out: &mut VecDeque<SseEvent>) -> Result<(), SseError> {
        // A byte-order mark at the very start is skipped; it may come cut into pieces.
        while self.bom_matched < BOM.len() && !chunk.is_empty() {
            if chunk[0] == BOM[self.bom_matched] {
                self.bom_matched += 1;
                self.count(1)?;
                chunk = &chunk[1..];
            } else {
                // Not a mark: the bytes taken for one start the first line.
                self.line.extend_from_slice(&BOM[..self.bom_matched]);
                self.bom_matched = BOM.len();
            }
        }
        while !chunk.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if chunk[0] == b'\n' {
                    self.count(1)?;
                    chunk = &chunk[1..];
                    continue;
                }
            }
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.scanned += end + 1;
                    self.count(end + 1)?;
                    self.line.extend_from_slice(&chunk[..end]);
                    self.after_cr = chunk[end] == b'\r';
                    chunk = &chunk[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out)?;
                    self.line = line;
                    self.line.clear();
                }
                None => {
                    self.scanned += chunk.len();
                    self.count(chunk.len())?;
                    self.line.extend_from_slice(chunk);
                    chunk = &[];
                }
            }
        }
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<(), SseError> {
        self.size += n;
        if self.size > self.limit {
            Err(SseError::TooLarge(self.limit))
        } else {
            Ok(())
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut VecDeque<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.size = 0;
            let event = std::mem::take(&mut self.event);
            let mut data = std::mem::take(&mut self.data);
            if !data.is_empty() {
                data.pop(); // the `\n` after the last `data:` line
                out.push_back(SseEvent {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data,
                });
            }
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|e| SseError::Invalid(e.to_string()))?;
        let (field, value) = match line.split_once(':') {
            Some(("", _)) => return Ok(()), // a comment
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            // `id`, `retry` and unknown fields: nothing for ofc to do.
            _ => {}
        }
        Ok(())
    }
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

    #[tokio::test]
    async fn every_split_point_gives_the_same_events() {
        // Every field, line end (`\r\n` cut between its bytes too) and the mark, cut at each
        // byte position, and cut into single bytes.
        const BODY: &[u8] =
            b"\xEF\xBB\xBFevent: delta\r\ndata: {\"a\"}\n\r\n: note\rid: 7\nretry: 10\ndata\n\
data:  two\r\rdata:x\r\n\r\n";
        let want = vec![
            ev("delta", "{\"a\"}"),
            ev("message", "\n two"),
            ev("message", "x"),
        ];
        for cut in 0..=BODY.len() {
            let (a, b) = BODY.split_at(cut);
            assert_eq!(all(&[a, b], 1024).await, want, "cut at {cut}");
        }
        let bytes: Vec<&'static [u8]> = BODY.chunks(1).collect();
        assert_eq!(all(&bytes, 1024).await, want);
    }

    #[tokio::test]
    async fn an_unfinished_event_at_the_end_is_dropped() {
        let got = all(&[b"data: a\n\ndata: b\n"], 1024).await;
        assert_eq!(got, vec![ev("message", "a")]);
        // A blank line without data dispatches nothing and resets the event type.
        let got = all(&[b"event: x\n\ndata: c\n\n"], 1024).await;
        assert_eq!(got, vec![ev("message", "c")]);
    }

    #[tokio::test]
    async fn the_limit_counts_the_whole_event_and_resets_after_it() {
        // `data: ` + 20 + `\n\n` = 28 bytes: fits in 28, not in 27.
        let event: &'static [u8] = b"data: aaaaaaaaaaaaaaaaaaaa\n\n";
        assert_eq!(all(&[event, event], 28).await.len(), 2);
        assert_eq!(all(&[event], 27).await, vec![Err(SseError::TooLarge(27))]);
        // Events before the one too large still come out, then the error, then nothing.
        let got = all(
            &[b"data: 1\n\ndata: 0123456789", b"0123456789\n\ndata: 2\n\n"],
            16,
        )
        .await;
        assert_eq!(got, vec![ev("message", "1"), Err(SseError::TooLarge(16))]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_refused() {
        let got = all(&[b"data: \xff\n\n"], 1024).await;
        assert!(
            matches!(got.as_slice(), [Err(SseError::Invalid(_))]),
            "{got:?}"
        );
    }

    /// Linear time, checked by count: a 2 MiB event read one byte at a time. A parser that
    /// re-reads its unfinished line on every read (as `eventsource-stream` does) would look at
    /// about 2·10¹² bytes here and not finish; this one looks at each byte once.
    #[tokio::test]
    async fn a_long_event_read_byte_by_byte_is_linear() {
        const LEN: usize = 2 * 1024 * 1024;
        let mut body = b"data: ".to_vec();
        body.resize(6 + LEN, b'a');
        body.extend_from_slice(b"\n\n");

        let mut parser = Parser::new(4 * 1024 * 1024);
        let mut out = VecDeque::new();
        for byte in body.chunks(1) {
            parser.feed(byte, &mut out).unwrap();
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data.len(), LEN);
        assert!(
            parser.scanned <= body.len(),
            "{} > {}",
            parser.scanned,
            body.len()
        );

        // The same through the stream, as the callers read it.
        let got: Vec<_> = events(
            futures::stream::iter(body.chunks(1).map(Ok::<_, std::io::Error>)),
            4 * 1024 * 1024,
        )
        .collect()
        .await;
        assert!(matches!(got.as_slice(), [Ok(e)] if e.data.len() == LEN));
    }
}
