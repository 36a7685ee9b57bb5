//! [`Blobs`]: the blob store as async code uses it.

use std::path::PathBuf;

use index_schema::name::Digest;

use super::store::{BlobError, BlobStore};

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
    /// [`BlobStore::put_part`].
    pub async fn put_part(
        &self,
        upload: String,
        d: Digest,
        file: PathBuf,
    ) -> Result<String, BlobError> {
        self.run(move |s| s.put_part(&upload, &d, &file)).await
    }
    /// [`BlobStore::drop_part`].
    pub async fn drop_part(&self, upload: String, name: String) -> Result<(), BlobError> {
        self.run(move |s| s.drop_part(&upload, &name)).await
    }
    /// [`BlobStore::drop_parts`].
    pub async fn drop_parts(&self, upload: String) -> Result<(), BlobError> {
        self.run(move |s| s.drop_parts(&upload)).await
    }
    /// [`BlobStore::sweep_staging`].
    pub async fn sweep_staging(&self, age: std::time::Duration) -> Result<usize, BlobError> {
        self.run(move |s| s.sweep_staging(age)).await
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
    /// [`BlobStore::mirrors`] (no i/o).
    pub fn mirrors(&self) -> bool {
        self.0.mirrors()
    }
    /// [`BlobStore::mirrored_tag`].
    pub async fn mirrored_tag(
        &self,
        repository: String,
        tag: String,
    ) -> Result<Option<Digest>, BlobError> {
        self.run(move |s| s.mirrored_tag(&repository, &tag)).await
    }
}
