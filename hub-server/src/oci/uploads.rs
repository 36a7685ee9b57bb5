//! Blob reads (with `Range`) and uploads: monolithic (`POST ?digest=`, or `POST` then
//! `PUT ?digest=`), chunked (`PATCH` with `Content-Range`, in order only), status, cancel and
//! cross-repository mounts.
//!
//! Bytes stream into a file in the blob store's staging directory while being hashed; a blob
//! enters the store only after its digest matched, by an fsync and an atomic rename, so a
//! partial blob is never visible.
//!
//! **Sessions any replica continues** (issue 30). Nothing of a session lives in a process:
//! its row (repository, owner, byte count) is in the database and each chunk is stored in the
//! blob backend as a *part* (the shared directory's `uploads/<id>/`, or the upstream
//! registry's `PREFIX/uploads`), recorded with a compare-and-set on the byte count, so two
//! requests racing for one offset cannot both append. `PUT` ends the session by one `DELETE`
//! that one request wins, joins the parts into a staged file, hashes it and stores the blob.
//! Expired sessions are ended the same way, so exactly one replica removes their parts.
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

use std::path::PathBuf;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use hub_core::auth::Scope;
use hub_core::blob::BlobError;
use hub_core::claims::{store_file, use_existing};
use hub_core::store::{UploadPart, UploadState};
use hub_core::uploads::Room;
use index_schema::name::Digest;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt as _;

use super::access::{Caller, authorize};
use super::error::{OciError, OciResult};
use super::names::{check_repository, hv, parse_digest, query};
use super::state::OciState;

const PUSH: [Scope; 2] = [Scope::PublishNew, Scope::PublishUpdate];

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
        let _ = st.app.core.blobs.drop_parts(id.clone()).await;
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
    st.app
        .core
        .store
        .create_upload(&id, repository, user)
        .await?;
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

/// The live session `id` of `repository`, as the database has it now.
async fn load_session(st: &OciState, repository: &str, id: &str) -> OciResult<UploadState> {
    // Ids are ours (32 hex digits); anything else cannot name a session or a part.
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(upload_unknown());
    }
    match st
        .app
        .core
        .store
        .upload_state(id, st.app.core.config.upload_ttl_ms())
        .await?
    {
        Some(s) if s.repository == repository => Ok(s),
        _ => Err(upload_unknown()),
    }
}

fn out_of_order(repository: &str, id: &str, offset: u64) -> OciError {
    OciError::new(
        StatusCode::RANGE_NOT_SATISFIABLE,
        "BLOB_UPLOAD_INVALID",
        format!("chunks must be sent in order: the next byte is {offset}"),
    )
    .header(header::RANGE, format!("0-{}", offset.saturating_sub(1)))
    .header(
        header::LOCATION,
        format!("/v2/{repository}/blobs/uploads/{id}"),
    )
}

/// After a lost compare-and-set: the session's answer now (another request appended to it,
/// or ended it).
async fn lost_race(st: &OciState, repository: &str, id: &str) -> OciError {
    match load_session(st, repository, id).await {
        Ok(now) => out_of_order(repository, id, now.bytes),
        Err(e) => e,
    }
}

/// A new file in the blob store's staging directory.
async fn staging_file(st: &OciState, what: &str) -> OciResult<(PathBuf, tokio::fs::File)> {
    let dir = st.app.core.blobs.staging_dir();
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(OciError::internal)?;
    let path = dir.join(format!("{what}-{}", uuid::Uuid::new_v4().simple()));
    let file = tokio::fs::File::create(&path)
        .await
        .map_err(OciError::internal)?;
    Ok((path, file))
}

/// Appends a chunk to a session: checks `Content-Range`, stages the bytes, stores them in the
/// blob backend as the session's next part and records it (only if nobody appended since the
/// session was read). The session's byte count after.
async fn write_chunk(
    st: &OciState,
    parts: &Parts,
    user: i64,
    id: &str,
    s: &UploadState,
    body: Body,
    repository: &str,
) -> OciResult<u64> {
    let range = content_range(&parts.headers)?;
    if let Some((a, _)) = range
        && a != s.bytes
    {
        return Err(out_of_order(repository, id, s.bytes));
    }
    let limit = room(st, user, repository, id).await?;
    let (path, mut file) = staging_file(st, "chunk").await?;
    let mut hasher = Sha256::new();
    let r = append(&mut file, body, &mut hasher, s.bytes, limit).await;
    let r = match r {
        Ok(n) => file
            .sync_all()
            .await
            .map(|()| n)
            .map_err(OciError::internal),
        Err(e) => Err(e),
    };
    drop(file);
    let n = match r {
        Ok(n) => n,
        Err(e) => {
            let _ = tokio::fs::remove_file(&path).await;
            return Err(e);
        }
    };
    if let Some((a, b)) = range
        && (b - a).checked_add(1) != Some(n)
    {
        let _ = tokio::fs::remove_file(&path).await;
        return Err(OciError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "BLOB_UPLOAD_INVALID",
            format!("Content-Range announced {} bytes; {n} were sent", b - a + 1),
        )
        .header(header::RANGE, format!("0-{}", s.bytes.saturating_sub(1))));
    }
    if n == 0 {
        let _ = tokio::fs::remove_file(&path).await;
        return Ok(s.bytes);
    }
    let digest = Digest::from_bytes(hasher.finalize().into());
    let blobs = &st.app.core.blobs;
    let name = blobs.put_part(id.to_string(), digest, path).await?;
    let part = UploadPart {
        start: s.bytes,
        size: n,
        digest: digest.to_string(),
        name: name.clone(),
    };
    let ttl = st.app.core.config.upload_ttl_ms();
    if !st.app.core.store.append_upload_part(id, &part, ttl).await? {
        // Another request appended at this offset, or ended the session: this chunk is not
        // part of it.
        let _ = blobs.drop_part(id.to_string(), name).await;
        return Err(lost_race(st, repository, id).await);
    }
    Ok(s.bytes + n)
}

/// Joins the parts of an ended session into a staged, fsynced file; its path, digest and size.
async fn assemble(
    st: &OciState,
    id: &str,
    parts: Vec<UploadPart>,
) -> OciResult<(PathBuf, Digest, u64)> {
    let (path, file) = staging_file(st, "joined").await?;
    let mut out = file.into_std().await;
    let (store, id_, p) = (
        st.app.core.blobs.store().clone(),
        id.to_string(),
        path.clone(),
    );
    let r = tokio::task::spawn_blocking(move || -> Result<(Digest, u64), BlobError> {
        use std::io::{Read as _, Seek as _};
        let broken = |m: String| BlobError::Io(std::io::Error::other(m));
        for part in &parts {
            let d = Digest::parse(&part.digest)
                .map_err(|e| broken(format!("part at {} of upload {id_}: {e}", part.start)))?;
            store.read_part(&id_, &part.name, &d, &mut out)?;
            let len = out.stream_position()?;
            if len != part.start + part.size {
                return Err(broken(format!(
                    "part at {} of upload {id_} holds {} bytes, not {}",
                    part.start,
                    len.saturating_sub(part.start),
                    part.size
                )));
            }
        }
        out.sync_all()?;
        let mut f = std::fs::File::open(&p)?;
        let (mut h, mut buf, mut size) = (Sha256::new(), vec![0u8; 1 << 20], 0u64);
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            size += n as u64;
        }
        Ok((Digest::from_bytes(h.finalize().into()), size))
    })
    .await
    .map_err(OciError::internal)?;
    match r {
        Ok((d, size)) => Ok((path, d, size)),
        Err(e) => {
            let _ = tokio::fs::remove_file(&path).await;
            Err(e.into())
        }
    }
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
    let s = load_session(st, repository, id).await?;
    match parts.method.as_str() {
        "GET" => Ok((
            StatusCode::NO_CONTENT,
            upload_headers(repository, id, s.bytes),
        )
            .into_response()),
        "PATCH" => {
            let offset = write_chunk(st, parts, user, id, &s, body, repository).await?;
            Ok((StatusCode::ACCEPTED, upload_headers(repository, id, offset)).into_response())
        }
        "PUT" => {
            let q = query(parts);
            let Some(d) = q.get("digest") else {
                return Err(OciError::digest_invalid("PUT needs `?digest=`"));
            };
            let d = parse_digest(d)?;
            let bytes = write_chunk(st, parts, user, id, &s, body, repository).await?;
            // The session ends here either way (a client retries with a new one); one request
            // wins it, whichever replica it reached.
            let Some(chunks) = st.app.core.store.take_upload(id, bytes).await? else {
                return Err(lost_race(st, repository, id).await);
            };
            let joined = assemble(st, id, chunks).await;
            let _ = st.app.core.blobs.drop_parts(id.to_string()).await;
            let (path, actual, size) = joined?;
            if actual != d {
                let _ = tokio::fs::remove_file(&path).await;
                return Err(mismatch(&d, &actual));
            }
            commit(st, d, path).await?;
            st.app
                .core
                .store
                .link_blob(repository, &d.to_string(), size)
                .await?;
            Ok(created(repository, &d))
        }
        "DELETE" => {
            let mut s = s;
            // A chunk landing meanwhile moves the count; the cancel follows it a few times.
            for _ in 0..8 {
                if st.app.core.store.take_upload(id, s.bytes).await?.is_some() {
                    let _ = st.app.core.blobs.drop_parts(id.to_string()).await;
                    return Ok(StatusCode::NO_CONTENT.into_response());
                }
                s = load_session(st, repository, id).await?;
            }
            Err(lost_race(st, repository, id).await)
        }
        _ => Err(OciError::unsupported()),
    }
}
