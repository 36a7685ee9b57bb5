//! The state of the OCI routes: the hub's, and the memory manifest answers may hold.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{StatusCode, header};

use super::error::{OciError, OciResult};
use crate::state::AppState;

/// The largest manifest accepted: 4 MiB, as other registries (the distribution registry,
/// GHCR) and the spec's "at least 4 MB".
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;
/// How long an answer waits for manifest memory.
const MANIFEST_MEMORY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// State of the OCI routes: the hub's state and the manifest memory (upload sessions live in
/// the database and the blob backend, so any replica continues one).
#[derive(Debug, Clone)]
pub struct OciState {
    /// The hub.
    pub app: AppState,
    /// KiB of `manifest_memory_bytes` (the setting) not held by an answer being written: a
    /// client that never reads its answer holds its bytes, and all of them together hold at
    /// most that much (past it an answer waits [`MANIFEST_MEMORY_WAIT`], then gets 503).
    manifest_memory: Arc<tokio::sync::Semaphore>,
}

impl OciState {
    /// OCI state over the hub's.
    pub fn new(app: AppState) -> Self {
        let kib = usize::try_from(app.core.config.manifest_memory_bytes / 1024)
            .unwrap_or(usize::MAX)
            .clamp(
                MAX_MANIFEST_BYTES / 1024,
                tokio::sync::Semaphore::MAX_PERMITS,
            );
        OciState {
            app,
            manifest_memory: Arc::new(tokio::sync::Semaphore::new(kib)),
        }
    }

    /// Memory for an answer of `bytes` manifest bytes, held until the answer's body is
    /// dropped (written, or its connection gone); 503 when none frees up in time.
    pub(crate) async fn manifest_memory(
        &self,
        bytes: usize,
    ) -> OciResult<tokio::sync::OwnedSemaphorePermit> {
        let kib = u32::try_from(bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        match tokio::time::timeout(
            MANIFEST_MEMORY_WAIT,
            self.manifest_memory.clone().acquire_many_owned(kib),
        )
        .await
        {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(OciError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "TOOMANYREQUESTS",
                "the registry is answering too many manifests at once; retry shortly",
            )
            .header(header::RETRY_AFTER, "1".to_owned())),
        }
    }
}

/// `bytes` as a response body that holds `permit` until the last chunk is taken (64 KiB
/// chunks of the one buffer, so the memory is counted while a slow client reads).
pub(crate) fn held_body(bytes: Vec<u8>, permit: tokio::sync::OwnedSemaphorePermit) -> Body {
    use futures::StreamExt as _;
    let bytes = axum::body::Bytes::from(bytes);
    let chunks = (0..bytes.len().div_ceil(64 * 1024)).map(move |i| {
        let end = ((i + 1) * 64 * 1024).min(bytes.len());
        Ok::<_, std::convert::Infallible>(bytes.slice(i * 64 * 1024..end))
    });
    let mut permit = Some(permit);
    let stream = futures::stream::iter(chunks).chain(futures::stream::poll_fn(move |_| {
        drop(permit.take());
        std::task::Poll::Ready(None)
    }));
    Body::from_stream(stream)
}
