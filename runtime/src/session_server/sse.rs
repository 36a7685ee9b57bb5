//! `GET /api/v1/sessions/{id}/events`: a session's events, server-sent, resumable.
//!
//! Each event is `id: <seq>`, `event: <payload_type>`, `data: <its session line>`. The start
//! is `Last-Event-ID` (a reconnecting browser sends it) or `?last_event_id=` (both given must
//! agree), else 0 (everything). The stream reads from the session's [`SessionFeed`]: what
//! follows the cursor, from memory or from the file, then waits for more; it never holds the
//! floor up. A live session's stream ends after its last event when the floor closes; a
//! stored one's after its last event.

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
use tokio::sync::watch;

use super::routes::session_error;
use super::{CallerExt, SessionServer, Subscription};
use crate::api::{ApiError, ErrorBody};
use crate::session::{FeedEvent, SessionFeed, SessionId};

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
        (status = 200, description = "`text/event-stream`: `id: <seq>`, `event: <payload_type>`, `data: <the session line>`", content_type = "text/event-stream"),
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
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
    let id = SessionId::parse(&id)
        .map_err(|e| ApiError::bad_request("invalid_session_id", e.to_string()))?;
    caller.may(&id)?;
    let start = cursor(&headers, query.last_event_id)?;
    let keep_alive = server.inner.settings.keep_alive;
    let (feed, subscription) = match server.live(&id).await {
        Some(live) => {
            let sub = Subscription::take(Arc::clone(&live), server.inner.settings.max_subscribers)?;
            (Arc::clone(&live.feed), Some(sub))
        }
        None => {
            // A stored session: to its end, then the stream closes.
            let store = server.inner.store.clone();
            let read_id = id.clone();
            let log = tokio::task::spawn_blocking(move || store.read(&read_id))
                .await
                .map_err(ApiError::internal)?
                .map_err(session_error)?;
            let feed = SessionFeed::new(server.inner.store.source(&id), log.last_seq());
            feed.end();
            (Arc::new(feed), None)
        }
    };
    let stream = stream(feed, start, subscription).map_ok_infallible();
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response())
}

struct Reader {
    feed: Arc<SessionFeed>,
    cursor: u64,
    pending: std::collections::VecDeque<FeedEvent>,
    changes: watch::Receiver<(u64, bool)>,
    _subscription: Option<Subscription>,
}

/// The events of `feed` after `cursor`, until the feed ends and all are out.
pub fn feed_stream(
    feed: Arc<SessionFeed>,
    cursor: u64,
) -> impl Stream<Item = FeedEvent> + Send + 'static {
    stream(feed, cursor, None)
}

fn stream(
    feed: Arc<SessionFeed>,
    cursor: u64,
    subscription: Option<Subscription>,
) -> impl Stream<Item = FeedEvent> + Send + 'static {
    let changes = feed.watch();
    let reader = Reader {
        feed,
        cursor,
        pending: Default::default(),
        changes,
        _subscription: subscription,
    };
    futures::stream::unfold(reader, |mut r| async move {
        loop {
            if let Some(event) = r.pending.pop_front() {
                r.cursor = event.seq;
                return Some((event, r));
            }
            // Marked seen before the read: a change after it wakes the wait below.
            let (_, ended) = *r.changes.borrow_and_update();
            let batch = match r.feed.in_memory(r.cursor, BATCH) {
                Ok(batch) => batch,
                // Behind the ring: from the file, off the async threads.
                Err(_) => {
                    let feed = Arc::clone(&r.feed);
                    let at = r.cursor;
                    match tokio::task::spawn_blocking(move || feed.after(at, BATCH)).await {
                        Ok(Ok(batch)) => batch,
                        Ok(Err(e)) => {
                            tracing::warn!(error = %e, "cannot read the session for a watcher; its stream ends");
                            return None;
                        }
                        Err(_) => return None,
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
            // Nothing new: wait for the next event, but look again now and then.
            if tokio::time::timeout(Duration::from_secs(5), r.changes.changed())
                .await
                .is_ok_and(|changed| changed.is_err())
            {
                return None;
            }
        }
    })
}

trait IntoSse {
    fn map_ok_infallible(self) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send;
}

impl<S: Stream<Item = FeedEvent> + Send + 'static> IntoSse for S {
    fn map_ok_infallible(self) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send {
        futures::StreamExt::map(self, |e| {
            Ok(SseEvent::default()
                .id(e.seq.to_string())
                .event(e.payload_type)
                .data(&*e.line))
        })
    }
}
