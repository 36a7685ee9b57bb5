//! Blobs in a local directory: a blob is written to a temporary file, fsynced, renamed into
//! `blobs-v1/sha256/ab/<hex>` and its directory fsynced, so it is either absent or complete,
//! whatever happens to the process.

use std::io::Write;
use std::path::{Path, PathBuf};

use index_schema::name::Digest;

use super::store::{BlobError, BlobStore};

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
