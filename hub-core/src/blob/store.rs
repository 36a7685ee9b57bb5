//! The storage contract: [`BlobStore`] and its errors.

use std::path::{Path, PathBuf};

use index_schema::name::Digest;

/// What can go wrong in a blob store.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// Filesystem error.
    #[error("blob store i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The upstream OCI registry failed or does not answer (worth retrying).
    #[error("upstream registry: {0}")]
    Upstream(String),
    /// The upstream OCI registry answered with a refusal that retrying will not change (a
    /// 4xx other than 408 and 429: read-only, denied, unauthorized, unsupported).
    #[error("upstream registry refused: {0}")]
    Refused(String),
    /// The bytes do not hash to the digest they were stored under.
    #[error("blob digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        /// Claimed.
        expected: Digest,
        /// Computed.
        actual: Digest,
    },
}

/// Storage of immutable blobs by digest.
pub trait BlobStore: Send + Sync + std::fmt::Debug + 'static {
    /// Stores `bytes` under `digest` after checking that they hash to it. Idempotent: when the
    /// blob is there already, refreshes its time as [`touch`] does.
    ///
    /// [`touch`]: BlobStore::touch
    fn put(&self, digest: &Digest, bytes: &[u8]) -> Result<(), BlobError>;
    /// The blob's bytes, if present.
    fn get(&self, digest: &Digest) -> Result<Option<Vec<u8>>, BlobError>;
    /// The blob's size, if present.
    fn size(&self, digest: &Digest) -> Result<Option<u64>, BlobError>;
    /// A directory on the store's filesystem where uploads are staged before [`put_file`].
    ///
    /// [`put_file`]: BlobStore::put_file
    fn staging_dir(&self) -> PathBuf;
    /// Moves `file` (in [`staging_dir`], already fsynced, whose bytes its writer hashed to
    /// `digest` while they streamed in) into the store. Idempotent; `file` is gone afterwards.
    ///
    /// [`staging_dir`]: BlobStore::staging_dir
    fn put_file(&self, digest: &Digest, file: &Path) -> Result<(), BlobError>;
    /// The blob opened for reading, with its size.
    fn open(&self, digest: &Digest) -> Result<Option<(std::fs::File, u64)>, BlobError>;
    /// Marks the blob as used now, so a garbage collection running concurrently keeps it for
    /// its grace period. Whether it exists.
    fn touch(&self, digest: &Digest) -> Result<bool, BlobError>;
    /// Every blob with the time it was last stored or touched.
    fn list(&self) -> Result<Vec<(Digest, std::time::SystemTime)>, BlobError>;
    /// Removes the blob. Whether it existed.
    fn delete(&self, digest: &Digest) -> Result<bool, BlobError>;
    /// Stores `file` (in [`staging_dir`], fsynced, whose bytes hash to `digest`) as a chunk
    /// of upload session `upload`, where every replica sharing this store reads it; returns
    /// the part's name. `file` is gone afterwards, whatever the outcome.
    ///
    /// [`staging_dir`]: BlobStore::staging_dir
    fn put_part(&self, upload: &str, digest: &Digest, file: &Path) -> Result<String, BlobError>;
    /// Appends part `name` of `upload` (whose bytes hash to `digest`) to `out`.
    fn read_part(
        &self,
        upload: &str,
        name: &str,
        digest: &Digest,
        out: &mut std::fs::File,
    ) -> Result<(), BlobError>;
    /// Removes part `name` of `upload` (one no session recorded).
    fn drop_part(&self, upload: &str, name: &str) -> Result<(), BlobError>;
    /// Removes every part of `upload` (an ended session's).
    fn drop_parts(&self, upload: &str) -> Result<(), BlobError>;
    /// Removes staging files older than `age` (left by a process that died mid-upload, on any
    /// replica sharing the store). How many.
    fn sweep_staging(&self, age: std::time::Duration) -> Result<usize, BlobError>;
    /// The hub id this store is marked with ([`crate::hub_id`]), if any.
    fn hub_id(&self) -> Result<Option<String>, BlobError>;
    /// Marks the store with hub id `id` unless it is marked already; the id it holds
    /// afterwards (another writer's, when one came first).
    fn mark_hub_id(&self, id: &str) -> Result<String, BlobError>;
    /// Whether the store holds any blob (of whichever hub), as far as it can tell without
    /// naming one (an upstream registry cannot list its blobs: its local cache answers).
    fn holds_blobs(&self) -> Result<bool, BlobError>;
    /// Whether the store has `digest`, without copying it anywhere.
    fn contains(&self, digest: &Digest) -> Result<bool, BlobError> {
        Ok(self.size(digest)?.is_some())
    }
    /// Where the store is and where its hub id is kept, for messages (no credentials).
    fn location(&self) -> String;
    /// Mirrors a manifest of `repository` (tag or digest `reference`) and the `blobs` it names
    /// where this store keeps blobs, when that is an OCI registry; a local store keeps
    /// manifests in SQL only and does nothing.
    fn mirror_manifest(
        &self,
        _repository: &str,
        _reference: &str,
        _media_type: &str,
        _bytes: &[u8],
        _blobs: &[Digest],
    ) -> Result<(), BlobError> {
        Ok(())
    }
    /// Whether [`mirror_manifest`] mirrors manifests to an OCI registry (whose tags
    /// [`mirrored_tag`] reads).
    ///
    /// [`mirror_manifest`]: BlobStore::mirror_manifest
    /// [`mirrored_tag`]: BlobStore::mirrored_tag
    fn mirrors(&self) -> bool {
        false
    }
    /// The digest tag `tag` of `repository` names in the registry manifests are mirrored to;
    /// `None` when the registry has no such tag (or there is no registry).
    fn mirrored_tag(&self, _repository: &str, _tag: &str) -> Result<Option<Digest>, BlobError> {
        Ok(None)
    }
}
