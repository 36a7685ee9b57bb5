//! Blob reads (with single `Range`s) and deletes.

use std::io::SeekFrom;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::auth::Scope;
use hub_core::gc::BlobDeletion;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use super::access::{Caller, authorize};
use super::error::{OciError, OciResult};
use super::names::{hv, parse_digest};
use super::state::OciState;

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` against `len`: the inclusive range, `Err` when
/// unsatisfiable, `Ok(None)` when absent or not a single byte range.
fn byte_range(h: &HeaderMap, len: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(v) = h.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    let Some(spec) = v.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let (a, b) = spec.split_once('-').ok_or(())?;
    let (a, b) = (a.trim(), b.trim());
    let r = if a.is_empty() {
        let n: u64 = b.parse().map_err(|_| ())?;
        if n == 0 || len == 0 {
            return Err(());
        }
        (len.saturating_sub(n), len - 1)
    } else {
        let a: u64 = a.parse().map_err(|_| ())?;
        let b: u64 = if b.is_empty() {
            len.saturating_sub(1)
        } else {
            b.parse::<u64>().map_err(|_| ())?.min(len.saturating_sub(1))
        };
        if a >= len || b < a {
            return Err(());
        }
        (a, b)
    };
    Ok(Some(r))
}

/// `GET`/`HEAD /v2/<name>/blobs/<digest>`, with single `Range`s.
pub(crate) async fn get_blob(
    st: &OciState,
    parts: &Parts,
    repository: &str,
    digest: &str,
) -> OciResult<Response> {
    let d = parse_digest(digest)?;
    // A blob is read only through a repository it belongs to: no probing the whole store.
    let opened = if st
        .app
        .core
        .store
        .blob_in_repository(repository, &d.to_string())
        .await?
    {
        st.app.core.blobs.open(d).await?
    } else {
        None
    };
    let Some((file, len)) = opened else {
        return Err(OciError::new(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            format!("blob {d} is not in `{repository}`"),
        )
        .detail(serde_json::json!({"digest": d.to_string()})));
    };
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert("docker-content-digest", hv(&d.to_string()));
    h.insert(header::ETAG, hv(&format!("\"{d}\"")));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=31536000, immutable"),
    );
    let (status, start, count) = match byte_range(&parts.headers, len) {
        Ok(None) => (StatusCode::OK, 0, len),
        Ok(Some((a, b))) => {
            h.insert(header::CONTENT_RANGE, hv(&format!("bytes {a}-{b}/{len}")));
            (StatusCode::PARTIAL_CONTENT, a, b - a + 1)
        }
        Err(()) => {
            return Err(OciError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "BLOB_UNKNOWN",
                format!("the range cannot be satisfied; the blob is {len} bytes"),
            )
            .header(header::CONTENT_RANGE, format!("bytes */{len}")));
        }
    };
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(count));
    if parts.method == axum::http::Method::HEAD {
        return Ok((status, h).into_response());
    }
    let mut file = tokio::fs::File::from_std(file);
    if start > 0 {
        file.seek(SeekFrom::Start(start))
            .await
            .map_err(OciError::internal)?;
    }
    let stream = tokio_util::io::ReaderStream::with_capacity(file.take(count), 256 * 1024);
    Ok((status, h, Body::from_stream(stream)).into_response())
}

/// `DELETE /v2/<name>/blobs/<digest>`: removes a blob no manifest or version references (see
/// [`hub_core::gc::delete_blob`]).
pub(crate) async fn delete_blob(
    st: &OciState,
    parts: &Parts,
    caller: &Caller,
    repository: &str,
    digest: &str,
) -> OciResult<Response> {
    authorize(st, parts, caller, repository, &[Scope::Yank]).await?;
    let d = parse_digest(digest)?;
    match hub_core::gc::delete_blob(&st.app.core, repository, &d).await? {
        BlobDeletion::Deleted => Ok(StatusCode::ACCEPTED.into_response()),
        BlobDeletion::Unknown => Err(OciError::new(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            format!("blob {d} is not in `{repository}`"),
        )),
        BlobDeletion::Busy => Err(OciError::denied(format!(
            "blob {d} is being examined by garbage collection; retry"
        ))),
        BlobDeletion::Referenced => Err(OciError::denied(format!(
            "blob {d} is referenced by a manifest or an agent version; delete those first"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};

    use super::byte_range;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::RANGE, HeaderValue::from_str(v).unwrap());
        m
    }

    #[test]
    fn ranges() {
        assert_eq!(byte_range(&HeaderMap::new(), 10), Ok(None));
        assert_eq!(byte_range(&h("bytes=0-3"), 10), Ok(Some((0, 3))));
        assert_eq!(byte_range(&h("bytes=5-"), 10), Ok(Some((5, 9))));
        assert_eq!(byte_range(&h("bytes=-3"), 10), Ok(Some((7, 9))));
        assert_eq!(byte_range(&h("bytes=8-100"), 10), Ok(Some((8, 9))));
        assert_eq!(byte_range(&h("bytes=10-"), 10), Err(()));
        assert_eq!(byte_range(&h("bytes=4-2"), 10), Err(()));
    }
}
