//! `GET /api/v1/sessions/{id}/events`: a session's events, server-sent, resumable.
//!
//! Each event is `id: <seq>`, `event: <payload_type>`, `data: <its session line>`. The start
//! is `Last-Event-ID` (a reconnecting browser sends it) or `?last_event_id=` (both given must
//! agree), else 0 (everything); one past the session's last event is refused (400
//! `invalid_last_event_id`, naming it). The stream reads from the session's [`SessionFeed`]: what
//! follows the cursor, from memory or from the file, then waits for more; it never holds the
//! floor up. A live session's stream ends after its last event when the floor closes; a
//! stored one's after its last event.
//!
//! **Streamed pieces.** A live session's stream also carries the pieces of the answers being
//! streamed, as `event: delta` with `data: {"type":"delta","call","agent","content"}` and no
//! `id:`. They are not stored (the message they make is, as `message_posted`), so they are
//! neither counted by `Last-Event-ID` nor replayed: a watcher gets the pieces streamed while it
//! is caught up with the stored events (pieces that come while it catches up are dropped), and
//! the pieces of an answer always reach it before that answer's `message_posted` (those it
//! gets at all: a watcher too slow for the floor's event buffer loses pieces, never events).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Deserialize;
use tokio::sync::{broadcast, watch};

use super::{CallerExt, Held, SessionServer, Subscription};
use crate::api::{ApiError, ErrorBody, NoBody};
use crate::floor::FloorEvent;
use crate::session::{FeedEvent, Older, SessionFeed, SessionId};

/// How many events one read takes from the feed.
const BATCH: usize = 256;

/// The query of `…/events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Start after this `seq` (as `Last-Event-ID`).
    pub last_event_id: Option<u64>,
}

/// Where a stream starts: `Last-Event-ID` or `?last_event_id=`.
fn cursor(headers: &HeaderMap, query: Option<u64>) -> Result<u64, ApiError> {
    let header = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_last_event_id",
                        "`Last-Event-ID`: must be the seq number of an event (0 or more)",
                    )
                })?,
        ),
    };
    match (header, query) {
        (Some(h), Some(q)) if h != q => Err(ApiError::bad_request(
            "invalid_last_event_id",
            format!("`Last-Event-ID` ({h}) and `last_event_id` ({q}) disagree"),
        )),
        (h, q) => Ok(h.or(q).unwrap_or(0)),
    }
}

/// A session's events after the cursor, server-sent.
#[utoipa::path(get, path = "/api/v1/sessions/{id}/events", tag = "sessions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "the session id"),
        ("last_event_id" = Option<u64>, Query, description = "start after this seq (as `Last-Event-ID`)"),
        ("Last-Event-ID" = Option<u64>, Header, description = "start after this seq")),
    responses(
        (status = 200, description = "`text/event-stream`: `id: <seq>`, `event: <payload_type>`, `data: <the session line>`; and, not stored and without `id:`, `event: delta`, `data: {\"type\":\"delta\",\"call\",\"agent\",\"content\"}`: a piece of an answer being streamed", content_type = "text/event-stream"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 429, description = "too many subscribers", body = ErrorBody),
    ))]
pub async fn events(
    State(server): State<SessionServer>,
    caller: CallerExt,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
    let id = SessionId::parse(&id)
        .map_err(|e| ApiError::bad_request("invalid_session_id", e.to_string()))?;
    caller.may(&id)?;
    let start = cursor(&headers, query.last_event_id)?;
    let keep_alive = server.inner.settings.keep_alive;
    let max = server.inner.settings.max_subscribers;
    let (feed, subscription, pieces) = match server.live(&id) {
        Some(live) => {
            let sub = Subscription::take(Held::Live(Arc::clone(&live)), max)?;
            // Subscribed before the feed is read: no piece of what follows is missed.
            let pieces = live.hosted.floor.subscribe();
            (Arc::clone(&live.feed), sub, Some(pieces))
        }
        None => {
            // A stored session: to its end, then the stream closes. Its readers are counted
            // as a live session's, and share one read of it.
            let stored = server.stored(&id);
            let sub = Subscription::take(Held::Stored(Arc::clone(&stored)), max)?;
            (stored.feed(&server.inner.store).await?, sub, None)
        }
    };
    // A cursor past the end would skip every event up to it once they come.
    let last = feed.last_seq();
    if start > last {
        return Err(ApiError::bad_request(
            "invalid_last_event_id",
            format!("{start} is ahead of the session: its last event is {last}"),
        ));
    }
    let stream = stream(feed, start, Some(subscription), pieces).map_ok_infallible();
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response())
}

struct Reader {
    feed: Arc<SessionFeed>,
    /// The session's events before the ring, held while this reader catches up on them.
    older: Option<Arc<Older>>,
    cursor: u64,
    pending: std::collections::VecDeque<FeedEvent>,
    changes: watch::Receiver<(u64, bool)>,
    /// The floor's live events, for the streamed pieces (live sessions).
    pieces: Option<broadcast::Receiver<FloorEvent>>,
    /// Whether the reader has been caught up with the stored events once (pieces before that
    /// are dropped: they belong to answers whose start it missed).
    caught_up: bool,
    _subscription: Option<Subscription>,
}

/// What a watcher's stream carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// A stored event.
    Stored(FeedEvent),
    /// A streamed piece of an answer (not stored): the `delta` floor event as JSON.
    Piece(Arc<str>),
}

impl Reader {
    /// The next streamed piece already waiting, if any (other floor events are stored, and
    /// come from the feed).
    fn waiting_piece(&mut self) -> Option<Arc<str>> {
        let rx = self.pieces.as_mut()?;
        loop {
            match rx.try_recv() {
                Ok(event @ FloorEvent::Delta { .. }) if self.caught_up => return piece(&event),
                Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(broadcast::error::TryRecvError::Empty) => return None,
                Err(broadcast::error::TryRecvError::Closed) => {
                    self.pieces = None;
                    return None;
                }
            }
        }
    }
}

/// Why a waiting reader woke.
enum Woke {
    /// The feed is gone.
    Ended,
    /// A streamed piece came.
    Piece(FloorEvent),
    /// The floor's events ended (its pieces with them).
    NoMorePieces,
    /// Something changed (or nothing did, for long enough): look again.
    Look,
}

fn piece(event: &FloorEvent) -> Option<Arc<str>> {
    serde_json::to_string(event).ok().map(Into::into)
}

/// The events of `feed` after `cursor`, until the feed ends and all are out.
pub fn feed_stream(
    feed: Arc<SessionFeed>,
    cursor: u64,
) -> impl Stream<Item = FeedEvent> + Send + 'static {
    futures::StreamExt::filter_map(stream(feed, cursor, None, None), |w| async move {
        match w {
            Watched::Stored(e) => Some(e),
            Watched::Piece(_) => None,
        }
    })
}

/// The events of `feed` after `cursor`, and the streamed pieces of `pieces`, until the feed
/// ends and all are out.
pub fn watch_stream(
    feed: Arc<SessionFeed>,
    cursor: u64,
    pieces: broadcast::Receiver<FloorEvent>,
) -> impl Stream<Item = Watched> + Send + 'static {
    stream(feed, cursor, None, Some(pieces))
}

fn stream(
    feed: Arc<SessionFeed>,
    cursor: u64,
    subscription: Option<Subscription>,
    pieces: Option<broadcast::Receiver<FloorEvent>>,
) -> impl Stream<Item = Watched> + Send + 'static {
    let changes = feed.watch();
    let reader = Reader {
        feed,
        older: None,
        cursor,
        pending: Default::default(),
        changes,
        pieces,
        caught_up: false,
        _subscription: subscription,
    };
    futures::stream::unfold(reader, |mut r| async move {
        loop {
            // Pieces sent before an event was stored go out before it.
            if let Some(piece) = r.waiting_piece() {
                return Some((Watched::Piece(piece), r));
            }
            if let Some(event) = r.pending.pop_front() {
                r.cursor = event.seq;
                return Some((Watched::Stored(event), r));
            }
            // Marked seen before the read: a change after it wakes the wait below.
            let (_, ended) = *r.changes.borrow_and_update();
            let batch = match r.feed.in_memory(r.cursor, BATCH) {
                Ok(batch) => {
                    r.older = None;
                    batch
                }
                // Behind the ring: from the snapshot of the older events it holds, else one
                // the feed shares or reads (off the async threads).
                Err(_) => {
                    let held = r.older.as_ref().filter(|o| o.serves(r.cursor));
                    let older = match held {
                        Some(older) => Arc::clone(older),
                        None => {
                            let feed = Arc::clone(&r.feed);
                            let at = r.cursor;
                            match tokio::task::spawn_blocking(move || feed.older(at)).await {
                                Ok(Ok(older)) => older,
                                Ok(Err(e)) => {
                                    tracing::warn!(error = %e, "cannot read the session for a watcher; its stream ends");
                                    return None;
                                }
                                Err(_) => return None,
                            }
                        }
                    };
                    let batch = older.after(r.cursor, BATCH);
                    r.older = Some(Arc::clone(&older));
                    match batch {
                        Some(batch) if !batch.is_empty() => batch,
                        // The store lost the events up to the ring (lines damaged or cut by
                        // hand): on from there, not waiting for them forever.
                        Some(_) => {
                            tracing::warn!(
                                after = r.cursor,
                                up_to = older.last(),
                                "events of the session are missing from its store; a watcher skips them"
                            );
                            r.cursor = older.last();
                            continue;
                        }
                        // The ring moved on while the store was read: look again.
                        None => continue,
                    }
                }
            };
            if !batch.is_empty() {
                r.pending.extend(batch);
                continue;
            }
            if ended {
                return None;
            }
            r.caught_up = true;
            // Nothing new: wait for the next event or piece, but look again now and then.
            let Reader {
                changes, pieces, ..
            } = &mut r;
            let wait = async {
                let Some(rx) = pieces.as_mut() else {
                    return match changes.changed().await {
                        Ok(()) => Woke::Look,
                        Err(_) => Woke::Ended,
                    };
                };
                tokio::select! {
                    changed = changes.changed() => match changed {
                        Ok(()) => Woke::Look,
                        Err(_) => Woke::Ended,
                    },
                    event = rx.recv() => match event {
                        Ok(event @ FloorEvent::Delta { .. }) => Woke::Piece(event),
                        Err(broadcast::error::RecvError::Closed) => Woke::NoMorePieces,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => Woke::Look,
                    },
                }
            };
            match tokio::time::timeout(Duration::from_secs(5), wait).await {
                Ok(Woke::Ended) => return None,
                Ok(Woke::Piece(event)) => {
                    if let Some(piece) = piece(&event) {
                        return Some((Watched::Piece(piece), r));
                    }
                }
                Ok(Woke::NoMorePieces) => r.pieces = None,
                Ok(Woke::Look) | Err(_) => {}
            }
        }
    })
}

trait IntoSse {
    fn map_ok_infallible(self) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send;
}

impl<S: Stream<Item = Watched> + Send + 'static> IntoSse for S {
    fn map_ok_infallible(self) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send {
        futures::StreamExt::map(self, |w| {
            Ok(match w {
                Watched::Stored(e) => SseEvent::default()
                    .id(e.seq.to_string())
                    .event(e.payload_type)
                    .data(&*e.line),
                // No `id:`: the client's Last-Event-ID stays the last stored event's.
                Watched::Piece(data) => SseEvent::default().event("delta").data(&*data),
            })
        })
    }
}
