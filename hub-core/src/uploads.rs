//! The rules of OCI blob upload sessions: how much an upload may hold in all, and whether a
//! user may open one more. The session rows live in the store (`oci_uploads`); the bytes are
//! staged by the HTTP adapter (`hub-server`'s `oci/uploads.rs`), which asks here before it
//! opens a session or accepts a chunk and turns a refusal into the distribution API's error.

use crate::config::Config;
use crate::store::{Result, Store};

/// How large an upload may grow, and which setting says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Most bytes the upload may hold in all.
    pub total: u64,
    /// The setting that decided `total`.
    pub setting: &'static str,
    /// That setting's value.
    pub quota: u64,
}

/// The room an upload by `user_id` into `namespace` has: the smallest of `max_blob_bytes`,
/// what the user's other live uploads leave of `max_upload_bytes_per_user`, and what the
/// namespace's blobs and other live uploads leave of `max_namespace_bytes`. `except`: the
/// session being written (its own bytes count in `total`, not against it).
pub async fn room(
    store: &Store,
    config: &Config,
    user_id: i64,
    namespace: &str,
    except: &str,
) -> Result<Room> {
    let ttl = config.upload_ttl_ms();
    let (_, user_bytes) = store.user_uploads(user_id, ttl, except).await?;
    let ns_bytes = store.namespace_bytes(namespace, ttl, except).await?;
    let limits = [
        Room {
            total: config.max_blob_bytes,
            setting: "max_blob_bytes",
            quota: config.max_blob_bytes,
        },
        Room {
            total: config.max_upload_bytes_per_user.saturating_sub(user_bytes),
            setting: "max_upload_bytes_per_user",
            quota: config.max_upload_bytes_per_user,
        },
        Room {
            total: config.max_namespace_bytes.saturating_sub(ns_bytes),
            setting: "max_namespace_bytes",
            quota: config.max_namespace_bytes,
        },
    ];
    Ok(limits
        .into_iter()
        .min_by_key(|l| l.total)
        .expect("three limits"))
}

/// What admitting a new upload of a user found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The user's sessions that had been idle past `upload_ttl_secs`, now ended: their staged
    /// bytes are the caller's to delete.
    pub expired: Vec<String>,
    /// The user's live sessions after that.
    pub open: u64,
    /// Whether one more may open (`open < max_uploads_per_user`).
    pub allowed: bool,
}

/// Before a new upload of `user_id`: ends the user's dead sessions, then counts the live ones
/// against `max_uploads_per_user`.
pub async fn admit(store: &Store, config: &Config, user_id: i64) -> Result<Admission> {
    let ttl = config.upload_ttl_ms();
    let expired = store.expire_user_uploads(user_id, ttl).await?;
    let (open, _) = store.user_uploads(user_id, ttl, "").await?;
    Ok(Admission {
        expired,
        open,
        allowed: open < config.max_uploads_per_user,
    })
}
