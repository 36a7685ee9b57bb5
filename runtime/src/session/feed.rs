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
    /// Every event `from < seq < before` the store holds is in `events` (an event the store
    /// lost — a line damaged or cut by hand — is in neither).
    from: u64,
    before: u64,
    events: Vec<FeedEvent>,
}

impl Older {
    /// Whether it holds every event between `cursor` and the ring, and some.
    pub fn serves(&self, cursor: u64) -> bool {
        self.from <= cursor && cursor.saturating_add(1) < self.before
    }

    /// Up to `max` of its events after `cursor`; `None` when it does not hold what follows
    /// `cursor` (it starts after it, or ends there). Empty when the store holds none of the
    /// events between `cursor` and the ring: they are lost, and the reader goes on from
    /// [`Older::last`].
    pub fn after(&self, cursor: u64, max: usize) -> Option<Vec<FeedEvent>> {
        if !self.serves(cursor) {
            return None;
        }
        let at = self.events.partition_point(|e| e.seq <= cursor);
        Some(self.events[at..].iter().take(max).cloned().collect())
    }

    /// The `seq` of the last event it covers (the ring starts after it).
    pub fn last(&self) -> u64 {
        self.before.saturating_sub(1)
    }
}

#[derive(Debug)]
struct Ring {
    events: VecDeque<FeedEvent>,
    /// Whether it holds every event of the session (a stored session's feed: nothing is
    /// ever read from the store).
    whole: bool,
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
                whole: false,
            }),
            last,
            source: source.into(),
            capacity: capacity.max(1),
            older: Mutex::new(Weak::new()),
        }
    }

    /// The feed of a stored session as read (`log`): ended, every event in memory, so that
    /// its readers share one read of the store.
    pub fn of_log(
        source: impl Into<LogSource>,
        log: jsonl::SessionLog,
    ) -> Result<Self, SessionError> {
        let feed = Self::with_capacity(source, log.last_seq(), log.events.len());
        let events = from_log(log, 0, u64::MAX, usize::MAX)?;
        {
            let mut ring = feed.lock();
            ring.events = events.into();
            ring.whole = true;
        }
        feed.end();
        Ok(feed)
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
        // Up to the ring's oldest event now (up to the newest when the ring is empty): all
        // the store holds there, which may lack events it lost.
        let (events, before) = match self.in_memory(cursor, 0) {
            Ok(_) => (Vec::new(), cursor.saturating_add(1)),
            Err(before) => (
                from_log(self.source.read()?, cursor, before, usize::MAX)?,
                before,
            ),
        };
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
        let mut at = cursor;
        loop {
            if let Ok(events) = self.in_memory(at, max) {
                return Ok(events);
            }
            let older = self.older(at)?;
            match older.after(at, max) {
                Some(events) if !events.is_empty() => return Ok(events),
                // The store lost the events up to the ring: on from there.
                Some(_) => at = older.last(),
                // The ring moved while the store was read: look again.
                None => {}
            }
        }
    }

    /// Up to `max` events after `cursor` when memory has them (no I/O), else the `seq`
    /// before which the store must be read: the oldest event in memory, or (none in memory)
    /// the one after the newest.
    pub fn in_memory(&self, cursor: u64, max: usize) -> Result<Vec<FeedEvent>, u64> {
        let ring = self.lock();
        let after = |ring: &Ring| {
            let at = ring.events.partition_point(|e| e.seq <= cursor);
            ring.events.iter().skip(at).take(max).cloned().collect()
        };
        match ring.events.front() {
            _ if ring.whole => Ok(after(&ring)),
            Some(first) if first.seq <= cursor.saturating_add(1) => Ok(after(&ring)),
            Some(first) => Err(first.seq),
            None if self.last_seq() <= cursor => Ok(Vec::new()),
            None => Err(self.last_seq().saturating_add(1)),
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
    /// The one session file `fifty_notes` wrote in `dir`.
    fn the_session_file(dir: &tempfile::TempDir) -> std::path::PathBuf {
        std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    }

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

    /// A cursor at the end of the `seq` range gives nothing, from memory or not, without
    /// overflowing (it panicked on `cursor + 1`).
    #[test]
    fn a_cursor_at_the_largest_seq_gives_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let feed = fifty_notes(&dir);
        assert_eq!(feed.in_memory(u64::MAX, 10), Ok(Vec::new()));
        assert!(feed.after(u64::MAX, 10).unwrap().is_empty());
        assert!(feed.after(u64::MAX - 1, 10).unwrap().is_empty());
        let empty = SessionFeed::with_capacity(dir.path().join("none.jsonl"), 0, 8);
        assert_eq!(empty.in_memory(u64::MAX, 10), Ok(Vec::new()));
    }

    /// Events the store lost (the file cut by hand, or lines damaged) while a reader is
    /// behind the ring are skipped: the reader goes on with the ring instead of waiting for
    /// them (it was served nothing, and read the store again, for ever).
    #[test]
    fn a_reader_behind_the_ring_goes_past_events_the_store_lost() {
        let dir = tempfile::tempdir().unwrap();
        let feed = fifty_notes(&dir);
        let path = the_session_file(&dir);
        // The meta line and events 1..=20 stay; 21..=50 are cut (the ring holds 43..=50).
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: String = text.split_inclusive('\n').take(21).collect();
        std::fs::write(&path, kept).unwrap();
        for cursor in [5u64, 20, 30] {
            let mut at = cursor;
            let mut got = Vec::new();
            loop {
                let batch = feed.after(at, 7).unwrap();
                if batch.is_empty() {
                    break;
                }
                at = batch.last().unwrap().seq;
                got.extend(batch.iter().map(|e| e.seq));
            }
            let want: Vec<u64> = ((cursor + 1)..=20).chain(43..=50).collect();
            assert_eq!(got, want, "{cursor}");
        }
    }

    /// A stored session's feed holds every event: any cursor is served from memory, the
    /// store's gaps (damaged lines) included, and nothing is read again.
    #[test]
    fn a_stored_feed_serves_every_cursor_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let feed = fifty_notes(&dir);
        drop(feed);
        let path = the_session_file(&dir);
        // Event 3 (line 4) damaged.
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let damaged: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| if i == 3 { "{oops\n" } else { l })
            .collect();
        std::fs::write(&path, damaged).unwrap();
        let log = jsonl::read(&path).unwrap();
        let stored = SessionFeed::of_log(path.clone(), log).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(stored.ended());
        assert_eq!(stored.last_seq(), 50);
        for cursor in [0u64, 2, 3, 49, 50, 51] {
            let seqs: Vec<u64> = stored
                .in_memory(cursor, 100)
                .unwrap()
                .iter()
                .map(|e| e.seq)
                .collect();
            let want: Vec<u64> = ((cursor + 1)..=50).filter(|s| *s != 3).collect();
            assert_eq!(seqs, want, "{cursor}");
        }
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
