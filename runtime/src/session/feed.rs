//! A live session's events for watchers: every event the session records, in `seq` order, to
//! any number of readers, each at its own pace, none able to miss one or see one twice.
//!
//! The floor server's SSE streams read from here (see `crate::session_server`). A
//! [`SessionFeed`] keeps the latest events in memory (a ring of [`FEED_RING`]); each reader
//! holds only its cursor, the `seq` of the last event it has, and asks for what follows
//! ([`SessionFeed::after`]). A reader fallen behind the ring — a client that stayed away for
//! longer than the ring holds — is served from the session file, which holds every event the
//! ring ever had (the line is written before the event enters the ring). So delivery never
//! blocks the floor, a slow reader costs nothing but its own reads, and resuming from any
//! `seq` gives exactly the events after it.
//!
//! An event is carried as the very line the session file holds (`{"kind":"event",…}`), so a
//! watcher sees what `ofc sessions show` and a resume read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use super::SessionError;
use super::jsonl::{self, Record};
use super::store::LogSource;

/// How many of the latest events a feed keeps in memory.
pub const FEED_RING: usize = 4096;

/// One recorded event, as its session line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEvent {
    /// Its `seq`.
    pub seq: u64,
    /// Its `payload_type` (the SSE event name).
    pub payload_type: String,
    /// The session line, without its newline.
    pub line: Arc<str>,
}

/// The live events of one session (see the module doc). Shared: `Arc<SessionFeed>`.
#[derive(Debug)]
pub struct SessionFeed {
    ring: Mutex<Ring>,
    /// The `seq` of the newest event, and whether the session has ended.
    last: watch::Sender<(u64, bool)>,
    source: LogSource,
    capacity: usize,
}

#[derive(Debug)]
struct Ring {
    events: VecDeque<FeedEvent>,
}

impl SessionFeed {
    /// A feed for the session in `source` (its file), whose newest event so far is
    /// `last_seq` (earlier events are read from the store when asked for).
    pub fn new(source: impl Into<LogSource>, last_seq: u64) -> Self {
        Self::with_capacity(source, last_seq, FEED_RING)
    }

    /// A feed keeping `capacity` events in memory (at least 1).
    pub fn with_capacity(source: impl Into<LogSource>, last_seq: u64, capacity: usize) -> Self {
        let (last, _) = watch::channel((last_seq, false));
        Self {
            ring: Mutex::new(Ring {
                events: VecDeque::new(),
            }),
            last,
            source: source.into(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the event just written to the file (called in `seq` order).
    pub fn push(&self, event: FeedEvent) {
        let seq = event.seq;
        {
            let mut ring = self.lock();
            if ring.events.len() == self.capacity {
                ring.events.pop_front();
            }
            ring.events.push_back(event);
        }
        self.last.send_modify(|(last, _)| *last = seq);
    }

    /// The session has ended: readers stop once they have everything.
    pub fn end(&self) {
        self.last.send_modify(|(_, ended)| *ended = true);
    }

    /// The `seq` of the newest event.
    pub fn last_seq(&self) -> u64 {
        self.last.borrow().0
    }

    /// Whether the session has ended.
    pub fn ended(&self) -> bool {
        self.last.borrow().1
    }

    /// Changes of (newest `seq`, ended), for a reader waiting for more.
    pub fn watch(&self) -> watch::Receiver<(u64, bool)> {
        self.last.subscribe()
    }

    /// Up to `max` events after `cursor`, oldest first; from memory, else (the reader is
    /// behind the ring) from the session file.
    pub fn after(&self, cursor: u64, max: usize) -> Result<Vec<FeedEvent>, SessionError> {
        match self.in_memory(cursor, max) {
            Ok(events) => Ok(events),
            Err(oldest) => from_log(self.source.read()?, cursor, oldest, max),
        }
    }

    /// Up to `max` events after `cursor` when memory has them (no I/O), else the `seq` of
    /// the oldest event in memory (`u64::MAX`: none), before which the file must be read.
    pub fn in_memory(&self, cursor: u64, max: usize) -> Result<Vec<FeedEvent>, u64> {
        let ring = self.lock();
        match ring.events.front() {
            Some(first) if first.seq <= cursor + 1 => {
                let skip = (cursor + 1 - first.seq) as usize;
                Ok(ring.events.iter().skip(skip).take(max).cloned().collect())
            }
            Some(first) => Err(first.seq),
            None if self.last_seq() <= cursor => Ok(Vec::new()),
            None => Err(u64::MAX),
        }
    }
}

/// Events `cursor < seq < before` of the session file, at most `max`.
pub fn from_file(
    path: &std::path::Path,
    cursor: u64,
    before: u64,
    max: usize,
) -> Result<Vec<FeedEvent>, SessionError> {
    from_log(jsonl::read(path)?, cursor, before, max)
}

/// Events `cursor < seq < before` of a session as read, at most `max`.
fn from_log(
    log: jsonl::SessionLog,
    cursor: u64,
    before: u64,
    max: usize,
) -> Result<Vec<FeedEvent>, SessionError> {
    let mut out = Vec::new();
    for event in log.events {
        if event.seq <= cursor || event.seq >= before {
            continue;
        }
        let (seq, payload_type) = (event.seq, event.payload_type.clone());
        let line = serde_json::to_string(&Record::Event(event))
            .map_err(|e| SessionError::io("cannot encode a session event", e))?;
        out.push(FeedEvent {
            seq,
            payload_type,
            line: line.into(),
        });
        if out.len() == max {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SessionFile, SessionId, SessionMeta};

    #[test]
    fn readers_behind_the_ring_are_served_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::random();
        let path = dir.path().join(format!("{id}.jsonl"));
        let mut file = SessionFile::create(&path, id, &SessionMeta::default()).unwrap();
        let feed = SessionFeed::with_capacity(path.clone(), 0, 8);
        for i in 0..50u64 {
            let seq = file
                .append("#main", "note", serde_json::json!({ "i": i }))
                .unwrap();
            feed.push(FeedEvent {
                seq,
                payload_type: "note".into(),
                line: String::from_utf8(file.last_line().to_vec()).unwrap().into(),
            });
        }
        assert_eq!(feed.last_seq(), 50);
        // Every cursor gives exactly what follows it, across the ring's edge.
        for cursor in [0u64, 1, 41, 42, 43, 49, 50] {
            let mut got = Vec::new();
            let mut at = cursor;
            loop {
                let batch = feed.after(at, 7).unwrap();
                if batch.is_empty() {
                    break;
                }
                at = batch.last().unwrap().seq;
                got.extend(batch);
            }
            let seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
            assert_eq!(seqs, ((cursor + 1)..=50).collect::<Vec<_>>(), "{cursor}");
            // The file's lines and the ring's are the same text.
            for e in &got {
                let v: serde_json::Value = serde_json::from_str(&e.line).unwrap();
                assert_eq!(v["seq"], e.seq);
                assert_eq!(v["payload"]["i"], e.seq - 1);
            }
        }
        assert!(!feed.ended());
        feed.end();
        assert!(feed.ended());
    }
}
