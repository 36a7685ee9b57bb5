//! Server-sent events for streamed `/ofc/respond` answers.
//!
//! The draft says an agent "can stream response back (SSE or chunked HTTP)" without a format;
//! ofc's is three events:
//!
//! - `event: delta`, `data: {"content": "piece"}` — any number, in order;
//! - `event: done`, `data: <the /ofc/respond body>` — exactly once, last; authoritative;
//! - `event: error`, `data: {"message": "…"}` — instead of `done` when the agent failed.
//!
//! A stream that ends without `done` or `error` is a failed call.

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

/// Cuts a byte stream into events. Bounded: an event larger than the limit is an error.
#[derive(Debug)]
pub struct SseParser {
    buffer: Vec<u8>,
    limit: usize,
}

/// An event grew past the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a server-sent event is larger than {0} bytes")]
pub struct TooLarge(pub usize);

impl SseParser {
    /// A parser refusing events larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            buffer: Vec::new(),
            limit,
        }
    }

    /// Adds bytes and returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, TooLarge> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, skip)) = block_end(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + skip).take(end).collect();
            if let Some(event) = parse_block(&String::from_utf8_lossy(&block)) {
                events.push(event);
            }
        }
        if self.buffer.len() > self.limit {
            return Err(TooLarge(self.limit));
        }
        Ok(events)
    }
}

/// Where the first blank line is: the end of the block and the length of the separator.
fn block_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < buffer.len() {
        for sep in [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"] {
            if buffer[i..].starts_with(sep) {
                return Some((i, sep.len()));
            }
        }
        i += 1;
    }
    None
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data: Option<String> = None;
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    data.map(|data| SseEvent {
        event: event.unwrap_or_else(|| "message".to_owned()),
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_chunks_and_line_endings() {
        let mut parser = SseParser::new(1024);
        assert!(
            parser
                .push(b"event: delta\ndata: {\"con")
                .unwrap()
                .is_empty()
        );
        let events = parser
            .push(b"tent\":\"a\"}\n\n: comment\r\n\r\nevent: done\r\ndata: x\r\ndata: y\r\n\r\n")
            .unwrap();
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "delta".into(),
                    data: "{\"content\":\"a\"}".into()
                },
                SseEvent {
                    event: "done".into(),
                    data: "x\ny".into()
                },
            ]
        );
    }

    #[test]
    fn refuses_an_endless_event() {
        let mut parser = SseParser::new(16);
        assert_eq!(parser.push(&[b'a'; 17]), Err(TooLarge(16)));
    }
}
