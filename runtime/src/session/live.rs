//! A session being written by a running floor: every floor event (but streamed pieces) and
//! transcript line, the agents' memory summaries, and snapshots of grants and task boards.
//!
//! One [`LiveSession`] is shared by the floor task and whatever else records into the session
//! (an LLM agent's compaction hook, the run's furniture watcher); appends are serialized by a
//! mutex and numbered in that order. If the file cannot be written (a full disk), the error is
//! logged once, recording stops, and [`LiveSession::failure`] says why: the floor goes on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};

use super::feed::{FeedEvent, SessionFeed};
use super::jsonl::SessionFile;
use super::payload::{self, Compaction};
use super::{MAIN_ROOM, SessionError, SessionId};
use crate::floor::FloorEvent;
use crate::transcript::{Entry, Line};

/// A session open for writing; cheap to clone.
#[derive(Clone)]
pub struct LiveSession {
    inner: Arc<Mutex<Inner>>,
    /// Called at the end of each turn and when the floor closes (outside the lock).
    turn_end: Arc<Mutex<Option<TurnEndHook>>>,
    id: SessionId,
    path: PathBuf,
    /// Where its events are read back from (by watchers behind the feed's memory).
    source: super::LogSource,
    /// The room its events go to (`#main`, or a sub-room's view: [`LiveSession::in_room`]).
    room: Arc<str>,
}

/// What [`LiveSession::on_turn_end`] calls.
pub type TurnEndHook = Arc<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for LiveSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSession")
            .field("id", &self.id)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Inner {
    file: Option<SessionFile>,
    failure: Option<String>,
    /// Message id → the seq of its event (for compactions' `covers_up_to_seq`).
    message_seq: HashMap<String, u64>,
    /// Watchers' feed, once asked for ([`LiveSession::feed`]).
    feed: Option<Arc<SessionFeed>>,
}

impl LiveSession {
    /// Records into `file`.
    pub fn new(file: SessionFile) -> Self {
        Self {
            id: file.id().clone(),
            path: file.path().to_owned(),
            source: file.source(),
            room: Arc::from(MAIN_ROOM),
            turn_end: Arc::new(Mutex::new(None)),
            inner: Arc::new(Mutex::new(Inner {
                file: Some(file),
                failure: None,
                message_seq: HashMap::new(),
                feed: None,
            })),
        }
    }

    /// Records on into a resumed session's `file`, knowing the messages `log` holds (for the
    /// `covers_up_to_seq` of later compactions).
    pub fn resumed(file: SessionFile, log: &super::SessionLog) -> Self {
        let live = Self::new(file);
        let known = log
            .events
            .iter()
            .filter(|e| e.payload_type == payload::MESSAGE)
            .filter_map(|e| {
                let id = e.payload.get("message")?.get("id")?.as_str()?;
                Some((id.to_owned(), e.seq))
            });
        live.lock().message_seq.extend(known);
        live
    }

    /// The same session, its events recorded in `room` (a sub-room's floor records through
    /// one).
    pub fn in_room(&self, room: &str) -> Self {
        Self {
            room: Arc::from(room),
            ..self.clone()
        }
    }

    /// The room its events go to.
    pub fn room(&self) -> &str {
        &self.room
    }

    /// The session.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Its file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `hook` at the end of each turn and when the floor closes, before the sync: for
    /// state kept outside the floor (the furniture's; see [`super::state`]).
    pub fn on_turn_end(&self, hook: TurnEndHook) {
        *self.turn_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// Why recording stopped, if it did.
    pub fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    /// The feed of this session's events for watchers (made on the first call; events
    /// recorded before are read from the file). It ends when the floor closes or recording
    /// stops.
    pub fn feed(&self) -> Arc<SessionFeed> {
        let mut inner = self.lock();
        if let Some(feed) = &inner.feed {
            return Arc::clone(feed);
        }
        let last = inner
            .file
            .as_ref()
            .map_or(0, |f| f.next_seq().saturating_sub(1));
        let feed = Arc::new(SessionFeed::new(self.source.clone(), last));
        if inner.file.is_none() {
            feed.end();
        }
        inner.feed = Some(Arc::clone(&feed));
        feed
    }

    /// Appends an event to its room; answers its seq (`None` once recording has stopped).
    pub fn append(&self, payload_type: &str, payload: Value) -> Option<u64> {
        let mut inner = self.lock();
        let watched = inner.feed.is_some();
        let file = inner.file.as_mut()?;
        let result = file.append(&self.room, payload_type, payload);
        let line = (watched && result.is_ok())
            .then(|| String::from_utf8_lossy(file.last_line()).into_owned());
        let seq = inner.settle(result)?;
        if let (Some(feed), Some(line)) = (&inner.feed, line) {
            feed.push(FeedEvent {
                seq,
                payload_type: payload_type.to_owned(),
                line: line.into(),
            });
            // A sub-room's floor closing is not the session's end.
            if payload_type == "closed" && &*self.room == MAIN_ROOM {
                feed.end();
            }
        }
        Some(seq)
    }

    /// Records a floor event (streamed pieces are not kept: the message they make is).
    pub fn record_event(&self, event: &FloorEvent) {
        match event {
            FloorEvent::Delta { .. } => {}
            FloorEvent::Message { message } => {
                let id = message.id.clone();
                if let Some(seq) = self.append(payload::MESSAGE, json!({ "message": message })) {
                    self.lock().message_seq.insert(id, seq);
                }
            }
            other => {
                let Ok(value) = serde_json::to_value(other) else {
                    return;
                };
                self.append(other.name(), value);
                if matches!(other, FloorEvent::TurnEnded { .. } | FloorEvent::Closed) {
                    let hook = {
                        let mut slot = self.turn_end.lock().unwrap_or_else(|e| e.into_inner());
                        // The floor's last call: let go of the hook, which may hold this
                        // session (a cycle that would keep the file, and its lock, open
                        // after the floor closed — `ofc serve` could not resume it).
                        if matches!(other, FloorEvent::Closed) {
                            slot.take()
                        } else {
                            slot.clone()
                        }
                    };
                    if let Some(hook) = hook {
                        hook();
                    }
                    self.sync();
                }
            }
        }
    }

    /// Records a transcript line (its `message` lines are the `message_posted` events).
    pub fn record_transcript(&self, line: &Line) {
        if matches!(line.entry, Entry::Message { .. }) {
            return;
        }
        if let Ok(value) = serde_json::to_value(line) {
            self.append(payload::TRANSCRIPT, value);
        }
    }

    /// Records that `agent`'s memory of the conversation through message `through` is now
    /// `summary`.
    pub fn record_compaction(&self, agent: &str, through: &str, summary: &str) {
        let covers_up_to_seq = self.lock().message_seq.get(through).copied();
        let c = Compaction {
            agent_id: agent.to_owned(),
            through: through.to_owned(),
            covers_up_to_seq,
            summary: summary.to_owned(),
        };
        if let Ok(value) = serde_json::to_value(&c) {
            self.append(payload::COMPACTION, value);
        }
    }

    /// Syncs what was written.
    pub fn sync(&self) {
        let mut inner = self.lock();
        let Some(file) = inner.file.as_mut() else {
            return;
        };
        let result = file.sync().map(|()| 0);
        inner.settle(result);
    }
}

impl Inner {
    fn settle(&mut self, result: Result<u64, SessionError>) -> Option<u64> {
        match result {
            Ok(seq) => Some(seq),
            Err(e) => {
                tracing::error!(error = %e, "cannot write the session; recording stops");
                self.failure = Some(e.to_string());
                self.file = None;
                if let Some(feed) = &self.feed {
                    feed.end();
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SessionMeta, SessionStore};

    #[test]
    fn a_turn_end_hook_holding_the_session_lets_it_go_when_the_floor_closes() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path(), "/p");
        let live = LiveSession::new(store.create(SessionMeta::default()).unwrap());
        let id = live.id().clone();
        // As `ofc run` records its furniture's state: the hook holds the session.
        let held = live.clone();
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        live.on_turn_end(Arc::new(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.sync();
        }));
        assert!(
            matches!(store.resume(&id), Err(SessionError::Busy(_))),
            "open for writing"
        );
        live.record_event(&FloorEvent::Closed);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(live);
        // Nothing holds the file now: another floor can take the session on.
        store.resume(&id).unwrap();
    }
}
