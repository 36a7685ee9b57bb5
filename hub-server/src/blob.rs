//! Content-addressed blob storage for bundles (OCI-style `sha256` blobs).
//!
//! A small trait because the OCI issue adds an upstream-registry backend. The local backend
//! writes to a temporary file, fsyncs it, renames it into `blobs-v1/sha256/ab/<hex>` and fsyncs
//! the directory, so a blob is either absent or complete, whatever happens to the process.

use std::io::Write;
use std::path::{Path, PathBuf};

use index_schema::name::Digest;

/// What can go wrong in a blob store.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// Filesystem error.
    #[error("blob store i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The upstream OCI registry failed.
    #[error("upstream registry: {0}")]
    Upstream(String),
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
}

/// The blob store as async code uses it: every call that touches the filesystem (or, with the
/// upstream backend, the network) runs on the blocking pool, so none blocks a runtime worker.
/// Code already on the blocking pool uses [`Blobs::store`].
#[derive(Debug, Clone)]
pub struct Blobs(std::sync::Arc<dyn BlobStore>);

impl Blobs {
    /// Wraps a store.
    pub fn new(store: std::sync::Arc<dyn BlobStore>) -> Self {
        Blobs(store)
    }

    /// The synchronous store, for code on the blocking pool.
    pub fn store(&self) -> &std::sync::Arc<dyn BlobStore> {
        &self.0
    }

    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn BlobStore) -> Result<T, BlobError> + Send + 'static,
    ) -> Result<T, BlobError> {
        let s = self.0.clone();
        tokio::task::spawn_blocking(move || f(&*s))
            .await
            .map_err(|e| BlobError::Io(std::io::Error::other(e)))?
    }

    /// [`BlobStore::put`].
    pub async fn put(&self, d: Digest, bytes: std::sync::Arc<[u8]>) -> Result<(), BlobError> {
        self.run(move |s| s.put(&d, &bytes)).await
    }
    /// [`BlobStore::get`].
    pub async fn get(&self, d: Digest) -> Result<Option<Vec<u8>>, BlobError> {
        self.run(move |s| s.get(&d)).await
    }
    /// [`BlobStore::size`].
    pub async fn size(&self, d: Digest) -> Result<Option<u64>, BlobError> {
        self.run(move |s| s.size(&d)).await
    }
    /// [`BlobStore::staging_dir`] (no i/o).
    pub fn staging_dir(&self) -> PathBuf {
        self.0.staging_dir()
    }
    /// [`BlobStore::open`].
    pub async fn open(&self, d: Digest) -> Result<Option<(std::fs::File, u64)>, BlobError> {
        self.run(move |s| s.open(&d)).await
    }
    /// [`BlobStore::touch`].
    pub async fn touch(&self, d: Digest) -> Result<bool, BlobError> {
        self.run(move |s| s.touch(&d)).await
    }
    /// [`BlobStore::list`].
    pub async fn list(&self) -> Result<Vec<(Digest, std::time::SystemTime)>, BlobError> {
        self.run(|s| s.list()).await
    }
    /// [`BlobStore::delete`].
    pub async fn delete(&self, d: Digest) -> Result<bool, BlobError> {
        self.run(move |s| s.delete(&d)).await
    }
    /// [`BlobStore::mirror_manifest`].
    pub async fn mirror_manifest(
        &self,
        repository: String,
        reference: String,
        media_type: String,
        bytes: Vec<u8>,
        blobs: Vec<Digest>,
    ) -> Result<(), BlobError> {
        self.run(move |s| s.mirror_manifest(&repository, &reference, &media_type, &bytes, &blobs))
            .await
    }
}

/// Blobs in a local directory.
#[derive(Debug)]
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    /// A store under `dir` (created if missing), in `dir/blobs-v1`.
    pub fn open(dir: &Path) -> Result<Self, BlobError> {
        let root = dir.join("blobs-v1");
        std::fs::create_dir_all(root.join("sha256"))?;
        std::fs::create_dir_all(root.join("tmp"))?;
        Ok(FsBlobStore { root })
    }

    fn path(&self, d: &Digest) -> PathBuf {
        let hex = d.hex();
        self.root.join("sha256").join(&hex[..2]).join(hex)
    }
}

impl BlobStore for FsBlobStore {
    fn put(&self, digest: &Digest, bytes: &[u8]) -> Result<(), BlobError> {
        let actual = Digest::of(bytes);
        if actual != *digest {
            return Err(BlobError::DigestMismatch {
                expected: *digest,
                actual,
            });
        }
        let dest = self.path(digest);
        // Present already: storing it again is a use, which refreshes its time (garbage
        // collection's grace period counts from it).
        if self.touch(digest)? {
            return Ok(());
        }
        let dir = dest.parent().expect("blob path has a parent");
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile_in(&self.root.join("tmp"))?;
        tmp.1.write_all(bytes)?;
        tmp.1.sync_all()?;
        drop(tmp.1);
        std::fs::rename(&tmp.0, &dest)?;
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    }

    fn get(&self, digest: &Digest) -> Result<Option<Vec<u8>>, BlobError> {
        match std::fs::read(self.path(digest)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn size(&self, digest: &Digest) -> Result<Option<u64>, BlobError> {
        match std::fs::metadata(self.path(digest)) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn staging_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    fn put_file(&self, digest: &Digest, file: &Path) -> Result<(), BlobError> {
        let dest = self.path(digest);
        let dir = dest.parent().expect("blob path has a parent");
        std::fs::create_dir_all(dir)?;
        // Same filesystem, so the rename is atomic: the blob appears complete or not at all.
        std::fs::rename(file, &dest)?;
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    }

    fn open(&self, digest: &Digest) -> Result<Option<(std::fs::File, u64)>, BlobError> {
        match std::fs::File::open(self.path(digest)) {
            Ok(f) => {
                let len = f.metadata()?.len();
                Ok(Some((f, len)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn touch(&self, digest: &Digest) -> Result<bool, BlobError> {
        match std::fs::File::options().write(true).open(self.path(digest)) {
            Ok(f) => {
                f.set_modified(std::time::SystemTime::now())?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn list(&self) -> Result<Vec<(Digest, std::time::SystemTime)>, BlobError> {
        let mut out = Vec::new();
        for shard in std::fs::read_dir(self.root.join("sha256"))? {
            let shard = shard?;
            if !shard.file_type()?.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(shard.path())? {
                let f = f?;
                let name = f.file_name();
                let Some(d) = name
                    .to_str()
                    .and_then(|n| Digest::parse(&format!("sha256:{n}")).ok())
                else {
                    continue;
                };
                match f.metadata() {
                    Ok(m) => out.push((d, m.modified()?)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(out)
    }

    fn delete(&self, digest: &Digest) -> Result<bool, BlobError> {
        match std::fs::remove_file(self.path(digest)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let name = format!("upload-{}", uuid::Uuid::new_v4());
    let path = dir.join(name);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    Ok((path, f))
}
