//! Blob reads (with `Range`) and uploads: monolithic (`POST ?digest=`, or `POST` then
//! `PUT ?digest=`), chunked (`PATCH` with `Content-Range`, in order only), status, cancel and
//! cross-repository mounts.
//!
//! Bytes stream into a file in the blob store's staging directory while being hashed; a blob
//! enters the store only after its digest matched, by an fsync and an atomic rename, so a
//! partial blob is never visible. A session's hash state lives in memory; after a restart it is
//! rebuilt by reading the staged file once.
//!
//! **Quotas** (migration 0018). Per upload, `max_blob_bytes` (413 `SIZE_INVALID`, the chunk's
//! bytes dropped, the session left where it was); per user, `max_uploads_per_user` live sessions
//! (429 `TOOMANYREQUESTS` with `Retry-After`) and `max_upload_bytes_per_user` bytes staged by them
//! together; per namespace, `max_namespace_bytes` (the blobs linked to its repositories plus live
//! uploads into them) and `max_manifests_per_namespace` (403 `DENIED`, the message naming the
//! setting). An upload is cut off the moment it would pass the smallest of these, so a limit is
//! never overshot by one huge body; a `Content-Range` is checked so its length cannot wrap.
//! Sessions idle for `upload_ttl_secs` count for nothing: their owner's next upload removes them
//! and their staged files (`ofc-hub gc` removes everyone's). A monolithic upload's byte limit is
//! fixed when it starts, so concurrent monolithic uploads of one user can together pass
//! `max_upload_bytes_per_user` by at most `max_uploads_per_user × max_blob_bytes`: bounded, not
//! exact. Blobs referenced only by published versions (the envelope, a JSON publish's bundle) are
//! bounded by `max_bundle_bytes` per version instead.

use std::io::SeekFrom;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use hub_core::auth::Scope;
use hub_core::claims::{store_file, use_existing};
use hub_core::uploads::Room;
use index_schema::name::Digest;
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _, AsyncWriteExt as _};

use super::access::{Caller, authorize};
use super::error::{OciError, OciResult};
use super::names::{check_repository, hv, parse_digest, query};
use super::state::{OciState, Session};

const PUSH: [Scope; 2] = [Scope::PublishNew, Scope::PublishUpdate];

fn staged(st: &OciState, id: &str) -> PathBuf {
    st.app
        .core
        .blobs
        .staging_dir()
        .join(format!("session-{id}"))
}

fn upload_unknown() -> OciError {
    OciError::new(
        StatusCode::NOT_FOUND,
        "BLOB_UPLOAD_UNKNOWN",
        "no such upload session (it may have expired)",
    )
}

fn upload_headers(repository: &str, id: &str, offset: u64) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::LOCATION,
        hv(&format!("/v2/{repository}/blobs/uploads/{id}")),
    );
    // `Range` is inclusive; an empty upload reports `0-0` as registries do.
    h.insert(
        header::RANGE,
        hv(&format!("0-{}", offset.saturating_sub(1))),
    );
    h.insert("docker-upload-uuid", hv(id));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(0));
    h
}

fn created(repository: &str, digest: &Digest) -> Response {
    let mut h = HeaderMap::new();
    h.insert(
        header::LOCATION,
        hv(&format!("/v2/{repository}/blobs/{digest}")),
    );
    h.insert("docker-content-digest", hv(&digest.to_string()));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(0));
    (StatusCode::CREATED, h).into_response()
}

/// How large an upload may grow, and which setting says so (the core's rule).
type Limit = Room;

/// The distribution API's answer when an upload would outgrow its [`Room`].
fn refuse(limit: &Limit) -> OciError {
    if limit.setting == "max_blob_bytes" {
        return too_large(limit.quota);
    }
    OciError::denied(format!(
        "quota exceeded: {} is {} bytes on this hub and {} are in use; finish or cancel \
         other uploads, or ask the hub's operator",
        limit.setting,
        limit.quota,
        limit.quota.saturating_sub(limit.total)
    ))
}

/// The room an upload by `user_id` into `repository` has ([`hub_core::uploads::room`]).
async fn room(st: &OciState, user_id: i64, repository: &str, except: &str) -> OciResult<Limit> {
    let ns = check_repository(repository)?;
    Ok(
        hub_core::uploads::room(&st.app.core.store, &st.app.core.config, user_id, ns, except)
            .await?,
    )
}

/// Before a new upload of `user_id`: the core ends the user's dead sessions (their staged
/// bytes are deleted here) and refuses when the user has `max_uploads_per_user` live ones.
async fn admit(st: &OciState, user_id: i64) -> OciResult<()> {
    let cfg = &st.app.core.config;
    let a = hub_core::uploads::admit(&st.app.core.store, cfg, user_id).await?;
    for id in &a.expired {
        forget(st, id);
        let _ = tokio::fs::remove_file(staged(st, id)).await;
    }
    if !a.allowed {
        return Err(OciError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "TOOMANYREQUESTS",
            format!(
                "you have {} uploads open and max_uploads_per_user is {}: finish or cancel \
                 one (idle ones end after {} s)",
                a.open, cfg.max_uploads_per_user, cfg.upload_ttl_secs
            ),
        )
        .header(header::RETRY_AFTER, "10".into()));
    }
    Ok(())
}

/// Appends `body` to an upload that already holds `offset` bytes, refusing to let it grow
/// past `limit`.
async fn append(
    file: &mut tokio::fs::File,
    body: Body,
    hasher: &mut Sha256,
    offset: u64,
    limit: Limit,
) -> OciResult<u64> {
    let mut stream = body.into_data_stream();
    let mut n = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            OciError::new(
                StatusCode::BAD_REQUEST,
                "BLOB_UPLOAD_INVALID",
                format!("reading the body failed: {e}"),
            )
        })?;
        if offset.saturating_add(n).saturating_add(chunk.len() as u64) > limit.total {
            return Err(refuse(&limit));
        }
        file.write_all(&chunk).await.map_err(OciError::internal)?;
        hasher.update(&chunk);
        n += chunk.len() as u64;
    }
    file.flush().await.map_err(OciError::internal)?;
    Ok(n)
}

fn too_large(limit: u64) -> OciError {
    OciError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "SIZE_INVALID",
        format!("a blob may have at most {limit} bytes on this hub (max_blob_bytes)"),
    )
}

/// Moves a fully written, verified staged file into the blob store (registered, and present
/// whatever garbage collections run meanwhile: see [`hub_core::gc`]).
async fn commit(st: &OciState, digest: Digest, path: PathBuf) -> OciResult<()> {
    let p = path.clone();
    tokio::task::spawn_blocking(move || std::fs::File::open(&p)?.sync_all())
        .await
        .map_err(OciError::internal)?
        .map_err(OciError::internal)?;
    Ok(store_file(&st.app.core, &digest, path).await?)
}

fn mismatch(expected: &Digest, actual: &Digest) -> OciError {
    OciError::digest_invalid(format!(
        "the uploaded bytes hash to {actual}, not {expected}"
    ))
    .detail(serde_json::json!({"expected": expected.to_string(), "actual": actual.to_string()}))
}

/// `POST /v2/<name>/blobs/uploads/`.
pub(crate) async fn start(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    body: Body,
) -> OciResult<Response> {
    let user = authorize(st, parts, caller, repository, &PUSH)
        .await?
        .user_id;
    let q = query(parts);
    if let Some(m) = q.get("mount") {
        let d = parse_digest(m)?;
        // Only from a repository the blob belongs to (uploaded there, or referenced by one of
        // its manifests); everything in this hub is readable, so `from` needs no grant.
        let from = match q.get("from") {
            Some(from) => {
                check_repository(from)?;
                Some(from.as_str())
            }
            None => None,
        };
        let store = &st.app.core.store;
        let key = d.to_string();
        let visible = match from {
            Some(from) => store.blob_in_repository(from, &key).await?,
            None => store.blob_in_repository(repository, &key).await?,
        };
        // A use of the stored blob, recorded so that garbage collection keeps it; a blob
        // being collected is not mountable.
        if visible && use_existing(&st.app.core, &d).await? {
            let size = st.app.core.blobs.size(d).await?.unwrap_or(0);
            if !store.blob_in_repository(repository, &key).await? {
                let limit = room(st, user, repository, "").await?;
                if size > limit.total && limit.setting == "max_namespace_bytes" {
                    return Err(refuse(&limit));
                }
            }
            store.link_blob(repository, &key, size).await?;
            return Ok(created(repository, &d));
        }
        // Not mountable: fall through to a new session, as the spec asks.
    } else if let Some(d) = q.get("digest") {
        let d = parse_digest(d)?;
        admit(st, user).await?;
        let limit = room(st, user, repository, "").await?;
        // Counted among the user's uploads while it streams.
        let id = uuid::Uuid::new_v4().simple().to_string();
        st.app
            .core
            .store
            .create_upload(&id, repository, user)
            .await?;
        let r = monolithic(st, repository, d, body, limit).await;
        st.app.core.store.delete_upload(&id).await?;
        return r;
    }
    admit(st, user).await?;
    let limit = room(st, user, repository, "").await?;
    if limit.total == 0 {
        return Err(refuse(&limit));
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let dir = st.app.core.blobs.staging_dir();
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(OciError::internal)?;
    tokio::fs::File::create(staged(st, &id))
        .await
        .map_err(OciError::internal)?;
    st.app
        .core
        .store
        .create_upload(&id, repository, user)
        .await?;
    st.sessions.lock().expect("sessions lock").insert(
        id.clone(),
        Arc::new(tokio::sync::Mutex::new(Session {
            offset: 0,
            hasher: Some(Sha256::new()),
        })),
    );
    Ok((StatusCode::ACCEPTED, upload_headers(repository, &id, 0)).into_response())
}

/// `POST ?digest=` with the bytes: staged, verified and stored in one request.
async fn monolithic(
    st: &OciState,
    repository: &str,
    d: Digest,
    body: Body,
    limit: Limit,
) -> OciResult<Response> {
    {
        let dir = st.app.core.blobs.staging_dir();
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(OciError::internal)?;
        let path = dir.join(format!("put-{}", uuid::Uuid::new_v4().simple()));
        let mut file = tokio::fs::File::create(&path)
            .await
            .map_err(OciError::internal)?;
        let mut hasher = Sha256::new();
        let r = append(&mut file, body, &mut hasher, 0, limit).await;
        drop(file);
        let actual = Digest::from_bytes(hasher.finalize().into());
        if let Err(e) = r {
            let _ = tokio::fs::remove_file(&path).await;
            return Err(e);
        }
        if actual != d {
            let _ = tokio::fs::remove_file(&path).await;
            return Err(mismatch(&d, &actual));
        }
        let size = tokio::fs::metadata(&path)
            .await
            .map_err(OciError::internal)?
            .len();
        commit(st, d, path).await?;
        st.app
            .core
            .store
            .link_blob(repository, &d.to_string(), size)
            .await?;
        Ok(created(repository, &d))
    }
}

/// `Content-Range: <start>-<end>` (inclusive; a `bytes ` prefix is tolerated).
fn content_range(h: &HeaderMap) -> OciResult<Option<(u64, u64)>> {
    let Some(v) = h.get(header::CONTENT_RANGE) else {
        return Ok(None);
    };
    let bad = || {
        OciError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "BLOB_UPLOAD_INVALID",
            "Content-Range must be `<start>-<end>`",
        )
    };
    let s = v.to_str().map_err(|_| bad())?.trim();
    let s = s.strip_prefix("bytes ").unwrap_or(s);
    let s = s.split('/').next().unwrap_or(s);
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    // `b - a + 1` must not wrap (`0-18446744073709551615`): the range is checked here, and
    // its length is computed without overflow.
    if b < a || b == u64::MAX {
        return Err(bad());
    }
    Ok(Some((a, b)))
}

async fn load_session(
    st: &OciState,
    repository: &str,
    id: &str,
) -> OciResult<Arc<tokio::sync::Mutex<Session>>> {
    // Ids are ours (32 hex digits); anything else cannot name a session or a file.
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(upload_unknown());
    }
    match st
        .app
        .core
        .store
        .upload(id, st.app.core.config.upload_ttl_ms())
        .await?
    {
        Some(r) if r == repository => {}
        _ => return Err(upload_unknown()),
    }
    let existing = st.sessions.lock().expect("sessions lock").get(id).cloned();
    if let Some(s) = existing {
        return Ok(s);
    }
    let len = match tokio::fs::metadata(staged(st, id)).await {
        Ok(m) => m.len(),
        Err(_) => return Err(upload_unknown()),
    };
    let s = Arc::new(tokio::sync::Mutex::new(Session {
        offset: len,
        hasher: None,
    }));
    Ok(st
        .sessions
        .lock()
        .expect("sessions lock")
        .entry(id.to_string())
        .or_insert(s)
        .clone())
}

fn forget(st: &OciState, id: &str) {
    st.sessions.lock().expect("sessions lock").remove(id);
}

/// Rebuilds a session's hash state from its staged file.
async fn rehash(path: &std::path::Path, len: u64) -> OciResult<Sha256> {
    let mut f = tokio::fs::File::open(path)
        .await
        .map_err(OciError::internal)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(left as usize);
        let n = f.read(&mut buf[..want]).await.map_err(OciError::internal)?;
        if n == 0 {
            return Err(OciError::internal("staged upload is shorter than recorded"));
        }
        h.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(h)
}

/// Appends a chunk to a session: checks `Content-Range`, writes, and rolls back on failure.
async fn write_chunk(
    st: &OciState,
    parts: &Parts,
    user: i64,
    id: &str,
    s: &mut Session,
    body: Body,
    repository: &str,
) -> OciResult<()> {
    let range = content_range(&parts.headers)?;
    let out_of_order = |s: &Session| {
        OciError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "BLOB_UPLOAD_INVALID",
            format!(
                "chunks must be sent in order: the next byte is {}",
                s.offset
            ),
        )
        .header(header::RANGE, format!("0-{}", s.offset.saturating_sub(1)))
        .header(
            header::LOCATION,
            format!("/v2/{repository}/blobs/uploads/{id}"),
        )
    };
    if let Some((a, _)) = range
        && a != s.offset
    {
        return Err(out_of_order(s));
    }
    let path = staged(st, id);
    if s.hasher.is_none() {
        s.hasher = Some(rehash(&path, s.offset).await?);
    }
    let mut hasher = s.hasher.clone().expect("hasher set above");
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .await
        .map_err(|_| upload_unknown())?;
    file.seek(SeekFrom::Start(s.offset))
        .await
        .map_err(OciError::internal)?;
    let r = append(
        &mut file,
        body,
        &mut hasher,
        s.offset,
        room(st, user, repository, id).await?,
    )
    .await;
    let rollback = async |file: tokio::fs::File, offset: u64| {
        let _ = file.set_len(offset).await;
    };
    let n = match r {
        Ok(n) => n,
        Err(e) => {
            rollback(file, s.offset).await;
            return Err(e);
        }
    };
    if let Some((a, b)) = range
        && (b - a).checked_add(1) != Some(n)
    {
        rollback(file, s.offset).await;
        return Err(OciError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "BLOB_UPLOAD_INVALID",
            format!("Content-Range announced {} bytes; {n} were sent", b - a + 1),
        )
        .header(header::RANGE, format!("0-{}", s.offset.saturating_sub(1))));
    }
    s.offset += n;
    s.hasher = Some(hasher);
    st.app.core.store.touch_upload(id, s.offset).await?;
    Ok(())
}

/// `PATCH`, `PUT`, `GET` and `DELETE` on `/v2/<name>/blobs/uploads/<id>`.
pub(crate) async fn session(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    id: &str,
    body: Body,
) -> OciResult<Response> {
    let user = authorize(st, parts, caller, repository, &PUSH)
        .await?
        .user_id;
    let sess = load_session(st, repository, id).await?;
    let mut s = sess.lock().await;
    match parts.method.as_str() {
        "GET" => Ok((
            StatusCode::NO_CONTENT,
            upload_headers(repository, id, s.offset),
        )
            .into_response()),
        "PATCH" => {
            write_chunk(st, parts, user, id, &mut s, body, repository).await?;
            Ok((
                StatusCode::ACCEPTED,
                upload_headers(repository, id, s.offset),
            )
                .into_response())
        }
        "PUT" => {
            let q = query(parts);
            let Some(d) = q.get("digest") else {
                return Err(OciError::digest_invalid("PUT needs `?digest=`"));
            };
            let d = parse_digest(d)?;
            write_chunk(st, parts, user, id, &mut s, body, repository).await?;
            let hasher = s.hasher.take().expect("write_chunk sets the hasher");
            let actual = Digest::from_bytes(hasher.finalize().into());
            let path = staged(st, id);
            // The session ends either way: a client retries with a new one.
            st.app.core.store.delete_upload(id).await?;
            forget(st, id);
            if actual != d {
                let _ = tokio::fs::remove_file(&path).await;
                return Err(mismatch(&d, &actual));
            }
            commit(st, d, path).await?;
            st.app
                .core
                .store
                .link_blob(repository, &d.to_string(), s.offset)
                .await?;
            Ok(created(repository, &d))
        }
        "DELETE" => {
            st.app.core.store.delete_upload(id).await?;
            forget(st, id);
            let _ = tokio::fs::remove_file(staged(st, id)).await;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        _ => Err(OciError::unsupported()),
    }
}
