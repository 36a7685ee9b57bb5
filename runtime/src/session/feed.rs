//! A live session's events for watchers: every event the session records, in `seq` order, to
//! any number of readers, each at its own pace, none able to miss one or see one twice.
//!
//! The floor server's SSE streams read from here (see `crate::session_server`). A
//! [`SessionFeed`] keeps the latest events in memory (a ring of [`FEED_RING`]); each reader
//! holds only its cursor, the `seq` of the last event it has, and asks for what follows
//! ([`SessionFeed::after`]). A reader fallen behind the ring — a client that stayed away for
//! longer than the ring holds — is served from the session file, which holds every event the
//! ring ever had (the line is written before the event enters the ring): read once into an
//! [`Older`] snapshot that every reader catching up shares while one holds it, so catching
//! up is one read of the session, not one per batch. So delivery never blocks the floor, a
//! slow reader costs nothing but its reads, and resuming from any `seq` gives exactly the
//! events after it.
//!
//! An event is carried as the very line the session file holds (`{"kind":"event",…}`), so a
//! watcher sees what `ofc sessions show` and a resume read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

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
    /// The last snapshot of the events before the ring, while a reader holds it.
    older: Mutex<Weak<Older>>,
}

/// The events of a session before its feed's ring when it was read (`seq` order): what the
/// readers fallen behind the ring read from, one read of the store for all of them.
#[derive(Debug)]
pub struct Older {
    /// Every event `from < seq < before` is in `events`.
    from: u64,
    before: u64,
    events: Vec<FeedEvent>,
}

impl Older {
    /// Whether it holds every event between `cursor` and the ring, and some.
    fn serves(&self, cursor: u64) -> bool {
        self.from <= cursor && cursor.saturating_add(1) < self.before
    }

    /// Up to `max` of its events after `cursor`; `None` when it does not hold what follows
    /// `cursor` (it starts after it, or ends there).
    pub fn after(&self, cursor: u64, max: usize) -> Option<Vec<FeedEvent>> {
        if !self.serves(cursor) {
            return None;
        }
        let at = self.events.partition_point(|e| e.seq <= cursor);
        Some(self.events[at..].iter().take(max).cloned().collect())
    }
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
            older: Mutex::new(Weak::new()),
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

    /// The events before the ring, for a reader behind it at `cursor`: the snapshot another
    /// reader holds when it has the event after `cursor`, else one read of the store (which
    /// the feed keeps for the readers after while one holds it). Blocking: off async threads.
    pub fn older(&self, cursor: u64) -> Result<Arc<Older>, SessionError> {
        let mut cached = self.older.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(older) = cached.upgrade()
            && older.serves(cursor)
        {
            return Ok(older);
        }
        // Up to the ring's oldest event now (all of the store's when the ring is empty).
        let events = match self.in_memory(cursor, 0) {
            Ok(_) => Vec::new(),
            Err(oldest) => from_log(self.source.read()?, cursor, oldest, usize::MAX)?,
        };
        let before = events
            .last()
            .map_or(cursor.saturating_add(1), |e| e.seq + 1);
        let older = Arc::new(Older {
            from: cursor,
            before,
            events,
        });
        *cached = Arc::downgrade(&older);
        Ok(older)
    }

    /// Up to `max` events after `cursor`, oldest first; from memory, else (the reader is
    /// behind the ring) from the session's store ([`Self::older`]: a reader that holds no
    /// snapshot reads the store at each call).
    pub fn after(&self, cursor: u64, max: usize) -> Result<Vec<FeedEvent>, SessionError> {
        match self.in_memory(cursor, max) {
            Ok(events) => Ok(events),
            Err(_) => Ok(self.older(cursor)?.after(cursor, max).unwrap_or_default()),
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

    /// A session file in `dir` with 50 `note` events (`i` 0..50, `seq` 1..=50) and its feed,
    /// whose ring keeps the last 8.
    fn fifty_notes(dir: &tempfile::TempDir) -> SessionFeed {
        let id = SessionId::random();
        let path = dir.path().join(format!("{id}.jsonl"));
        let mut file = SessionFile::create(&path, id, &SessionMeta::default()).unwrap();
        let feed = SessionFeed::with_capacity(path, 0, 8);
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
        feed
    }

    #[test]
    fn readers_behind_the_ring_are_served_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let feed = fifty_notes(&dir);
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

    /// Readers behind the ring share one snapshot of the older events while one holds it (one
    /// read of the store for a whole catch-up, not one per batch), and a snapshot serves a
    /// cursor only up to the ring.
    #[test]
    fn readers_catching_up_share_one_read_of_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let feed = fifty_notes(&dir);
        // The ring holds 43..=50.
        let first = feed.older(0).unwrap();
        let seqs = |o: &Older, at: u64| -> Vec<u64> {
            o.after(at, 100).unwrap().iter().map(|e| e.seq).collect()
        };
        assert_eq!(seqs(&first, 0), (1..=42).collect::<Vec<_>>());
        // Another reader further on gets the same snapshot, not a new read.
        let second = feed.older(30).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(seqs(&second, 30), (31..=42).collect::<Vec<_>>());
        // At the ring's edge it has nothing more to give: the ring serves from there.
        assert!(first.after(42, 7).is_none());
        assert_eq!(feed.in_memory(42, 100).unwrap().len(), 8);
        drop((first, second));
        // Once nobody holds it, the next reader behind reads the store again; a reader before
        // that snapshot's start gets one of its own.
        let again = feed.older(5).unwrap();
        assert_eq!(seqs(&again, 5), (6..=42).collect::<Vec<_>>());
        let earlier = feed.older(2).unwrap();
        assert!(!Arc::ptr_eq(&again, &earlier));
        assert_eq!(seqs(&earlier, 2), (3..=42).collect::<Vec<_>>());
        // A cursor the snapshot does not reach (before its start) is refused, not misserved.
        assert!(again.after(2, 7).is_none());
        // Batches from the snapshot, then the ring, give every event after the cursor once.
        let mut at = 5;
        let mut got = Vec::new();
        loop {
            let batch = match again.after(at, 7) {
                Some(b) if !b.is_empty() => b,
                _ => feed.in_memory(at, 7).unwrap(),
            };
            if batch.is_empty() {
                break;
            }
            at = batch.last().unwrap().seq;
            got.extend(batch.iter().map(|e| e.seq));
        }
        assert_eq!(got, (6..=50).collect::<Vec<_>>());
    }
}
