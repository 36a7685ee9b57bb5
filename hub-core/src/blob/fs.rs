//! Blobs in a local directory: a blob is written to a temporary file, fsynced, renamed into
//! `blobs-v1/sha256/ab/<hex>` and its directory fsynced, so it is either absent or complete,
//! whatever happens to the process.
//!
//! Safe for several processes sharing the directory (replicas on one NFS-style mount): every
//! writer stages under a name of its own (`tmp/upload-<uuid>`, `tmp/put-<uuid>`, … on the same
//! filesystem), fsyncs, and renames onto the digest's name — atomic, so a reader sees no blob
//! or a whole one, and two writers of one digest both succeed (the second rename replaces
//! identical bytes). Deletion is garbage collection's, arbitrated in the database
//! ([`crate::gc`]), never by file times alone. The chunks of upload sessions live in
//! `uploads/<session>/part-<uuid>`, so any replica continues a session.

use std::io::Write;
use std::path::{Path, PathBuf};

use index_schema::name::Digest;

use super::store::{BlobError, BlobStore};

/// The marker file of the hub id ([`crate::hub_id`]) in `blobs-v1`.
pub const HUB_ID_FILE: &str = "HUB-ID";

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

    /// Where the parts of upload session `upload` live (`blobs-v1/uploads/<upload>`).
    fn parts_dir(&self, upload: &str) -> Result<PathBuf, BlobError> {
        if upload.is_empty() || !upload.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(BlobError::Io(std::io::Error::other(format!(
                "`{upload}` is not an upload session id"
            ))));
        }
        Ok(self.root.join("uploads").join(upload))
    }

    /// The marker file holding the hub id (`blobs-v1/HUB-ID`).
    pub fn hub_id_path(&self) -> PathBuf {
        self.root.join(HUB_ID_FILE)
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

    fn put_part(&self, upload: &str, _digest: &Digest, file: &Path) -> Result<String, BlobError> {
        let r = (|| {
            let dir = self.parts_dir(upload)?;
            std::fs::create_dir_all(&dir)?;
            let name = format!("part-{}", uuid::Uuid::new_v4().simple());
            std::fs::rename(file, dir.join(&name))?;
            std::fs::File::open(&dir)?.sync_all()?;
            Ok(name)
        })();
        if r.is_err() {
            let _ = std::fs::remove_file(file);
        }
        r
    }

    fn read_part(
        &self,
        upload: &str,
        name: &str,
        _digest: &Digest,
        out: &mut std::fs::File,
    ) -> Result<(), BlobError> {
        let mut f = std::fs::File::open(self.parts_dir(upload)?.join(part_name(name)?))?;
        std::io::copy(&mut f, out)?;
        Ok(())
    }

    fn drop_part(&self, upload: &str, name: &str) -> Result<(), BlobError> {
        match std::fs::remove_file(self.parts_dir(upload)?.join(part_name(name)?)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    fn drop_parts(&self, upload: &str) -> Result<(), BlobError> {
        match std::fs::remove_dir_all(self.parts_dir(upload)?) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    fn sweep_staging(&self, age: std::time::Duration) -> Result<usize, BlobError> {
        let cutoff = std::time::SystemTime::now()
            .checked_sub(age)
            .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
        let mut n = 0;
        for f in std::fs::read_dir(self.root.join("tmp"))? {
            let f = f?;
            let old = match f.metadata() {
                Ok(m) => m.is_file() && m.modified()? < cutoff,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(e.into()),
            };
            if old {
                match std::fs::remove_file(f.path()) {
                    Ok(()) => n += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(n)
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

    fn hub_id(&self) -> Result<Option<String>, BlobError> {
        let path = self.hub_id_path();
        match std::fs::read_to_string(&path) {
            Ok(s) => {
                let id = s.trim();
                if id.is_empty() {
                    return Err(BlobError::Io(std::io::Error::other(format!(
                        "the hub id file {} is empty",
                        path.display()
                    ))));
                }
                Ok(Some(id.to_string()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn mark_hub_id(&self, id: &str) -> Result<String, BlobError> {
        // Written whole under a name of its own, then linked onto the marker's name: a link
        // never replaces an existing file, so of two writers the first wins (on a shared mount
        // too) and a reader sees no marker or a whole one.
        let (tmp, mut f) = tempfile_in(&self.root.join("tmp"))?;
        let r = (|| {
            f.write_all(format!("{id}\n").as_bytes())?;
            f.sync_all()?;
            if let Err(e) = std::fs::hard_link(&tmp, self.hub_id_path())
                && e.kind() != std::io::ErrorKind::AlreadyExists
            {
                return Err(e);
            }
            std::fs::File::open(&self.root)?.sync_all()
        })();
        let _ = std::fs::remove_file(&tmp);
        r?;
        self.hub_id()?.ok_or_else(|| {
            BlobError::Io(std::io::Error::other(
                "the hub id file is missing right after it was written",
            ))
        })
    }

    fn holds_blobs(&self) -> Result<bool, BlobError> {
        for shard in std::fs::read_dir(self.root.join("sha256"))? {
            let shard = shard?;
            if shard.file_type()?.is_dir() && std::fs::read_dir(shard.path())?.next().is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn location(&self) -> String {
        let dir = self.root.parent().unwrap_or(&self.root);
        format!(
            "blob directory {} (hub id in {})",
            dir.display(),
            self.hub_id_path().display()
        )
    }
}

/// `name` if it is one [`FsBlobStore::put_part`] gives.
fn part_name(name: &str) -> Result<&str, BlobError> {
    match name.strip_prefix("part-") {
        Some(rest) if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Ok(name)
        }
        _ => Err(BlobError::Io(std::io::Error::other(format!(
            "`{name}` is not the name of an upload part"
        )))),
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
