//! Blob bookkeeping: storing a blob so that it is registered and present whatever garbage
//! collections run meanwhile, and using (mounting) one that is stored. Why this is safe beside
//! a running collection is told in [`crate::gc`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use index_schema::name::Digest;

use crate::error::{CoreError, CoreResult};
use crate::hub::Hub;
use crate::store::{Registered, now_ms};

/// How old a collection's mark must be before another collection takes it over, or an upload
/// waiting for it clears it (its collection died).
pub const STALE_MARK_MS: i64 = 5 * 60 * 1000;
/// How many times a store re-places a blob a collection took while it was being stored.
const STORE_ATTEMPTS: usize = 8;

/// Waits until no collection has `d` marked, then registers it (stored; `used`: used now).
pub async fn register(hub: &Hub, d: &Digest, used: bool) -> CoreResult<()> {
    let key = d.to_string();
    loop {
        match hub.store.register_blob(&key, used).await? {
            Registered::Live => return Ok(()),
            Registered::Marked { by, at } => {
                if !by.is_empty() && at < now_ms() - STALE_MARK_MS {
                    tracing::warn!(blob = %key, gc = %by, "clearing a stale garbage-collection mark");
                    hub.store.unmark_blob(&key, &by).await?;
                    continue;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Whether the blob is stored.
pub async fn present(hub: &Hub, d: &Digest) -> CoreResult<bool> {
    Ok(hub.blobs.size(*d).await?.is_some())
}

fn collected_while_stored(d: &Digest) -> CoreError {
    CoreError::internal(format!(
        "blob {d} was collected {STORE_ATTEMPTS} times while being stored"
    ))
}

/// Stores `bytes` under `d` (refreshing the blob's time when it is there already) so that it
/// is registered and present when this returns, whatever collections run meanwhile.
pub async fn store_bytes(hub: &Hub, d: &Digest, bytes: &[u8]) -> CoreResult<()> {
    let bytes: Arc<[u8]> = bytes.into();
    for _ in 0..STORE_ATTEMPTS {
        hub.blobs.put(*d, bytes.clone()).await?;
        register(hub, d, false).await?;
        if present(hub, d).await? {
            return Ok(());
        }
    }
    Err(collected_while_stored(d))
}

/// Moves the staged, verified, fsynced `file` into the store under `d`, as [`store_bytes`].
pub async fn store_file(hub: &Hub, d: &Digest, file: PathBuf) -> CoreResult<()> {
    // A second name for the bytes, to place them again if a collection takes the blob.
    let keep = PathBuf::from(format!("{}.keep", file.display()));
    let (f, k) = (file.clone(), keep.clone());
    tokio::task::spawn_blocking(move || std::fs::hard_link(&f, &k))
        .await
        .map_err(CoreError::internal)?
        .map_err(CoreError::internal)?;
    let r = async {
        for attempt in 0..STORE_ATTEMPTS {
            let (blobs, f, k, dd) = (hub.blobs.store().clone(), file.clone(), keep.clone(), *d);
            tokio::task::spawn_blocking(move || {
                if attempt > 0 {
                    std::fs::hard_link(&k, &f)?;
                }
                blobs.put_file(&dd, &f)
            })
            .await
            .map_err(CoreError::internal)??;
            register(hub, d, false).await?;
            if present(hub, d).await? {
                return Ok(());
            }
        }
        Err(collected_while_stored(d))
    }
    .await;
    let _ = tokio::fs::remove_file(&keep).await;
    r
}

/// Uses a stored blob (a mount): refreshes its time and records the use, after waiting for a
/// collection that has it marked. False when it is not stored (or was just collected).
pub async fn use_existing(hub: &Hub, d: &Digest) -> CoreResult<bool> {
    let there = hub.blobs.touch(*d).await?;
    if !there {
        return Ok(false);
    }
    // A collection examining it settles it quickly: kept (then mounted) or removed.
    register(hub, d, true).await?;
    present(hub, d).await
}
