//! The content-addressed cache.
//!
//! Its layout, entry by entry, is [`layout`].
//!
//! Every entry is built in `tmp-v1/` and renamed into place, so a reader sees a whole entry or
//! none. Writers hold an exclusive advisory lock on the entry's lock file, so concurrent installs
//! of the same bundle extract it once; they also hold `.lock` shared, so `rm`/`gc` (exclusive)
//! never delete what is being written. Digests are checked when an entry is read.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use index_schema::envelope::Envelope;
use index_schema::manifest::{Manifest, Source};
use index_schema::name::Digest;
use sha2::{Digest as _, Sha256};

use crate::unpack::{self, UnpackError, UnpackLimits};

mod installs;
pub mod layout;

use layout::{BUNDLE_FILE, CACHE_LOCK, FILES_DIR, LOCKS, TMP, TREE_FILE};

/// Why a cache operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The bytes offered do not have the expected digest.
    #[error("digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        /// What was asked for.
        expected: Digest,
        /// What the bytes hash to.
        actual: Digest,
    },
    /// A cache entry on disk is damaged.
    #[error("cache entry {digest} is corrupt: {reason}")]
    Corrupt {
        /// The entry.
        digest: Digest,
        /// What is wrong.
        reason: String,
    },
    /// The bundle was refused while unpacking.
    #[error("cannot unpack bundle {digest}")]
    Unpack {
        /// The bundle.
        digest: Digest,
        /// Why.
        #[source]
        source: UnpackError,
    },
    /// Another ofc is using the cache.
    #[error("the cache at {0} is in use by another ofc process")]
    Busy(PathBuf),
    /// File system trouble.
    #[error("cannot access {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

type Result<T, E = CacheError> = std::result::Result<T, E>;

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A bundle in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedBundle {
    /// Its digest.
    pub digest: Digest,
    /// The entry directory.
    pub dir: PathBuf,
    /// The unpacked tree.
    pub files: PathBuf,
    /// Size of the tar.gz.
    pub size: u64,
    /// True when this call unpacked it; false when it was already cached.
    pub extracted: bool,
}

/// A cached manifest (signed envelope).
#[derive(Debug, Clone)]
pub struct CachedManifest {
    /// The manifest digest.
    pub digest: Digest,
    /// The parsed manifest.
    pub manifest: Manifest,
}

/// A problem found by [`Cache::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `bundle` or `manifest`.
    pub kind: &'static str,
    /// The entry's digest as named by its directory or file name.
    pub entry: String,
    /// What is wrong.
    pub reason: String,
}

/// What [`Cache::gc`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Bundles no cached manifest refers to.
    pub bundles: Vec<Digest>,
    /// Leftover temporary entries.
    pub temporaries: usize,
    /// Installed environments (pip) and downloaded distribution files no cached manifest uses.
    pub environments: usize,
    /// Container images (OCI layouts) no cached manifest uses.
    pub images: Vec<Digest>,
    /// Bytes freed.
    pub bytes: u64,
}

/// Everything in the cache.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Manifests, sorted by name then version.
    pub manifests: Vec<CachedManifest>,
    /// Bundles, sorted by digest.
    pub bundles: Vec<CachedBundle>,
}

/// A held advisory lock; released on drop.
#[derive(Debug)]
struct Lock(#[allow(dead_code)] fs::File);

/// One install entry held exclusively (see [`Cache::lock_install`]).
#[derive(Debug)]
pub struct EntryLock(#[allow(dead_code)] Lock);

/// The cache held shared (see [`Cache::hold`]).
#[derive(Debug)]
pub struct CacheHold(#[allow(dead_code)] Lock);

/// The cache rooted at a directory.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache at `root`; directories are created when first written.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The cache's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn bundle_dir(&self, digest: &Digest) -> PathBuf {
        layout::bundle_dir(&self.root, digest)
    }

    fn manifest_file(&self, digest: &Digest) -> PathBuf {
        layout::manifest_file(&self.root, digest)
    }

    fn mkdirs(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(io_at(dir))
    }

    fn open_lock_file(&self, path: &Path) -> Result<fs::File> {
        if let Some(parent) = path.parent() {
            self.mkdirs(parent)?;
        }
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_at(path))
    }

    /// Holds the whole cache shared (writers) — `rm` and `gc` wait for none of them.
    fn lock_shared(&self) -> Result<Lock> {
        let path = self.root.join(CACHE_LOCK);
        let f = self.open_lock_file(&path)?;
        f.lock_shared().map_err(io_at(&path))?;
        Ok(Lock(f))
    }

    /// Holds the whole cache exclusively, failing at once if another process uses it.
    fn lock_exclusive(&self) -> Result<Lock> {
        let path = self.root.join(CACHE_LOCK);
        let f = self.open_lock_file(&path)?;
        match f.try_lock() {
            Ok(()) => Ok(Lock(f)),
            Err(fs::TryLockError::WouldBlock) => Err(CacheError::Busy(self.root.clone())),
            Err(fs::TryLockError::Error(e)) => Err(io_at(&path)(e)),
        }
    }

    fn lock_entry(&self, kind: &str, digest: &Digest) -> Result<Lock> {
        let path = self
            .root
            .join(LOCKS)
            .join(format!("{kind}-sha256-{}.lock", digest.hex()));
        let f = self.open_lock_file(&path)?;
        f.lock().map_err(io_at(&path))?;
        Ok(Lock(f))
    }

    fn temp_dir(&self) -> Result<tempfile::TempDir> {
        let tmp = self.root.join(TMP);
        self.mkdirs(&tmp)?;
        tempfile::Builder::new()
            .prefix("entry-")
            .tempdir_in(&tmp)
            .map_err(io_at(&tmp))
    }

    /// Holds the install entry `kind`/`key` exclusively until the guard is dropped, so that
    /// concurrent pulls of the same environment install it once (the others wait, then find it).
    pub fn lock_install(&self, kind: &str, key: &Digest) -> Result<EntryLock> {
        self.lock_entry(kind, key).map(EntryLock)
    }

    /// A fresh directory under `tmp-v1/` to stage an install in, renamed into place when it is
    /// complete. A pull killed meanwhile leaves it there, where `gc` removes it.
    pub fn staging_dir(&self) -> Result<tempfile::TempDir> {
        self.temp_dir()
    }

    /// Holds the cache shared until the guard is dropped: `rm` and `gc` (which need it
    /// exclusively) cannot remove entries while a pull reads them or installs a bundle and then
    /// its manifest.
    pub fn hold(&self) -> Result<CacheHold> {
        self.lock_shared().map(CacheHold)
    }

    /// Moves a corrupt bundle entry out of the way (into `tmp-v1/`, which `gc` empties), so
    /// that it can be installed again. Returns false when there was none.
    pub fn quarantine_bundle(&self, digest: &Digest) -> Result<bool> {
        let _entry = self.lock_entry("bundle", digest)?;
        let dir = self.bundle_dir(digest);
        if !dir.exists() {
            return Ok(false);
        }
        let tmp = self.root.join(TMP);
        self.mkdirs(&tmp)?;
        let aside = tempfile::Builder::new()
            .prefix(&format!("corrupt-{}-", digest.hex()))
            .tempdir_in(&tmp)
            .map_err(io_at(&tmp))?
            .keep();
        let target = aside.join("entry");
        fs::rename(&dir, &target).map_err(io_at(&dir))?;
        Ok(true)
    }

    /// Stores and unpacks the bundle `bytes`, which must hash to `digest`. If the bundle is
    /// already cached (and intact) nothing is written. Safe to call from many threads and
    /// processes at once: exactly one of them unpacks.
    pub fn install_bundle(
        &self,
        digest: &Digest,
        bytes: &[u8],
        limits: &UnpackLimits,
    ) -> Result<CachedBundle> {
        self.install_hashed_bundle(digest, &Digest::of(bytes), bytes, limits)
    }

    /// [`Cache::install_bundle`] for bytes the caller hashed already (while downloading them):
    /// `actual` is their SHA-256, and must equal `digest`.
    pub fn install_hashed_bundle(
        &self,
        digest: &Digest,
        actual: &Digest,
        bytes: &[u8],
        limits: &UnpackLimits,
    ) -> Result<CachedBundle> {
        let actual = *actual;
        if &actual != digest {
            return Err(CacheError::DigestMismatch {
                expected: *digest,
                actual,
            });
        }
        let _cache = self.lock_shared()?;
        let _entry = self.lock_entry("bundle", digest)?;
        let dir = self.bundle_dir(digest);
        if dir.exists() {
            let mut b = self.read_bundle(digest)?;
            b.extracted = false;
            return Ok(b);
        }
        let tmp = self.temp_dir()?;
        let blob = tmp.path().join(BUNDLE_FILE);
        let files = tmp.path().join(FILES_DIR);
        fs::create_dir(&files).map_err(io_at(&files))?;
        // The tar.gz is written while the tree is unpacked: two independent writes.
        let (written, unpacked) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| fs::write(&blob, bytes));
            let unpacked = unpack::unpack(bytes, &files, limits);
            (writer.join(), unpacked)
        });
        unpacked.map_err(|source| CacheError::Unpack {
            digest: *digest,
            source,
        })?;
        written
            .unwrap_or_else(|_| Err(io::Error::other("the bundle writer panicked")))
            .map_err(io_at(&blob))?;
        let tree = tree_digest(&files).map_err(io_at(&files))?;
        let tree_file = tmp.path().join(TREE_FILE);
        fs::write(&tree_file, format!("{tree}\n")).map_err(io_at(&tree_file))?;
        if let Some(parent) = dir.parent() {
            self.mkdirs(parent)?;
        }
        let tmp_path = tmp.keep();
        if let Err(e) = fs::rename(&tmp_path, &dir) {
            let _ = fs::remove_dir_all(&tmp_path);
            return Err(io_at(&dir)(e));
        }
        Ok(CachedBundle {
            digest: *digest,
            files: dir.join(FILES_DIR),
            dir,
            size: bytes.len() as u64,
            extracted: true,
        })
    }

    /// The cached bundle with this digest, its tar.gz re-hashed; `None` when not cached.
    pub fn bundle(&self, digest: &Digest) -> Result<Option<CachedBundle>> {
        if !self.bundle_dir(digest).exists() {
            return Ok(None);
        }
        self.read_bundle(digest).map(Some)
    }

    fn read_bundle(&self, digest: &Digest) -> Result<CachedBundle> {
        let dir = self.bundle_dir(digest);
        let blob = dir.join(BUNDLE_FILE);
        let (actual, size) = hash_file(&blob).map_err(|e| CacheError::Corrupt {
            digest: *digest,
            reason: format!("cannot read {BUNDLE_FILE}: {e}"),
        })?;
        if &actual != digest {
            return Err(CacheError::Corrupt {
                digest: *digest,
                reason: format!("{BUNDLE_FILE} hashes to {actual}"),
            });
        }
        Ok(CachedBundle {
            digest: *digest,
            files: dir.join(FILES_DIR),
            dir,
            size,
            extracted: false,
        })
    }

    /// Checks a bundle entry completely: the tar.gz and the unpacked tree.
    fn verify_bundle(&self, digest: &Digest) -> Result<CachedBundle> {
        let b = self.read_bundle(digest)?;
        let recorded =
            fs::read_to_string(b.dir.join(TREE_FILE)).map_err(|e| CacheError::Corrupt {
                digest: *digest,
                reason: format!("cannot read {TREE_FILE}: {e}"),
            })?;
        let actual = tree_digest(&b.files).map_err(|e| CacheError::Corrupt {
            digest: *digest,
            reason: format!("cannot read the unpacked files: {e}"),
        })?;
        if recorded.trim() != actual {
            return Err(CacheError::Corrupt {
                digest: *digest,
                reason: "the unpacked files were changed".into(),
            });
        }
        Ok(b)
    }

    /// Stores a signed manifest envelope under its manifest digest.
    pub fn put_manifest(&self, envelope: &Envelope) -> Result<Digest> {
        let digest = envelope.payload_digest();
        let _cache = self.lock_shared()?;
        let _entry = self.lock_entry("manifest", &digest)?;
        let file = self.manifest_file(&digest);
        if file.exists() && self.manifest(&digest).is_ok() {
            return Ok(digest);
        }
        if let Some(parent) = file.parent() {
            self.mkdirs(parent)?;
        }
        let tmp = self.root.join(TMP);
        self.mkdirs(&tmp)?;
        let mut t = tempfile::NamedTempFile::new_in(&tmp).map_err(io_at(&tmp))?;
        io::Write::write_all(&mut t, envelope.to_json().as_bytes()).map_err(io_at(&tmp))?;
        t.persist(&file).map_err(|e| io_at(&file)(e.error))?;
        Ok(digest)
    }

    /// The cached manifest with this digest, checked against it.
    pub fn manifest(&self, digest: &Digest) -> Result<CachedManifest> {
        self.manifest_envelope(digest).map(|(_, m)| m)
    }

    /// The cached signed envelope with this digest and its manifest, checked against the
    /// digest (the signature is the caller's to check: it needs the trusted keys).
    pub fn manifest_envelope(&self, digest: &Digest) -> Result<(Envelope, CachedManifest)> {
        let file = self.manifest_file(digest);
        let corrupt = |reason: String| CacheError::Corrupt {
            digest: *digest,
            reason,
        };
        let text = fs::read_to_string(&file).map_err(io_at(&file))?;
        let env = Envelope::from_json(&text)
            .map_err(|d| corrupt(format!("not a signed manifest: {d}")))?;
        let actual = env.payload_digest();
        if &actual != digest {
            return Err(corrupt(format!("payload hashes to {actual}")));
        }
        let payload = std::str::from_utf8(&env.payload)
            .map_err(|_| corrupt("payload is not UTF-8".into()))?;
        let manifest =
            Manifest::from_json(payload).map_err(|d| corrupt(format!("invalid manifest: {d}")))?;
        Ok((
            env,
            CachedManifest {
                digest: *digest,
                manifest,
            },
        ))
    }

    fn digests_in(&self, dir: &Path, suffix: &str) -> Result<Vec<(String, Option<Digest>)>> {
        let mut out = Vec::new();
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io_at(dir)(e)),
        };
        for entry in rd {
            let entry = entry.map_err(io_at(dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let digest = name
                .strip_suffix(suffix)
                .and_then(|hex| Digest::parse(&format!("sha256:{hex}")).ok());
            out.push((name, digest));
        }
        out.sort();
        Ok(out)
    }

    /// Lists the cache. Entries that cannot be read are left out (`verify` reports them).
    pub fn list(&self) -> Result<Listing> {
        let mut listing = Listing::default();
        for (_, d) in self.digests_in(&layout::manifests_dir(&self.root), ".json")? {
            if let Some(m) = d.and_then(|d| self.manifest(&d).ok()) {
                listing.manifests.push(m);
            }
        }
        listing.manifests.sort_by(|a, b| {
            (a.manifest.name.to_string(), &a.manifest.version)
                .cmp(&(b.manifest.name.to_string(), &b.manifest.version))
        });
        for (_, d) in self.digests_in(&layout::bundles_dir(&self.root), "")? {
            if let Some(b) = d.and_then(|d| self.read_bundle(&d).ok()) {
                listing.bundles.push(b);
            }
        }
        Ok(listing)
    }

    /// Re-checks every entry's digest (and every unpacked tree); returns what is wrong.
    pub fn verify(&self) -> Result<(usize, Vec<Problem>)> {
        let _cache = self.lock_shared()?;
        let mut checked = 0;
        let mut problems = Vec::new();
        for (name, d) in self.digests_in(&layout::manifests_dir(&self.root), ".json")? {
            checked += 1;
            let reason = match d {
                None => Some("not named by a sha256 digest".to_string()),
                Some(d) => self.manifest(&d).err().map(|e| reason_of(&e)),
            };
            if let Some(reason) = reason {
                problems.push(Problem {
                    kind: "manifest",
                    entry: d.map_or(name, |d| d.to_string()),
                    reason,
                });
            }
        }
        for (name, d) in self.digests_in(&layout::bundles_dir(&self.root), "")? {
            checked += 1;
            let reason = match d {
                None => Some("not named by a sha256 digest".to_string()),
                Some(d) => self.verify_bundle(&d).err().map(|e| reason_of(&e)),
            };
            if let Some(reason) = reason {
                problems.push(Problem {
                    kind: "bundle",
                    entry: d.map_or(name, |d| d.to_string()),
                    reason,
                });
            }
        }
        self.verify_environments(&mut checked, &mut problems);
        if let Ok(rd) = fs::read_dir(layout::images_dir(&self.root)) {
            for e in rd.flatten() {
                checked += 1;
                if let Err(reason) = self.verify_image(&e.path()) {
                    let name = e.file_name().to_string_lossy().into_owned();
                    problems.push(Problem {
                        kind: "image",
                        entry: Digest::parse(&format!("sha256:{name}"))
                            .map_or_else(|_| e.path().display().to_string(), |d| d.to_string()),
                        reason,
                    });
                }
            }
        }
        Ok((checked, problems))
    }

    /// Removes a manifest, and its bundle or container image when no other cached manifest
    /// uses it. Returns the bundle and the image removed, if any.
    pub fn remove_manifest(&self, digest: &Digest) -> Result<(Option<Digest>, Option<Digest>)> {
        let _cache = self.lock_exclusive()?;
        let source = self.manifest(digest).ok().map(|m| m.manifest.source);
        let bundle = match &source {
            Some(Source::Bundle(b)) => Some(b.digest),
            _ => None,
        };
        let image = match &source {
            Some(Source::Docker(d)) => d.digest(),
            _ => None,
        };
        let file = self.manifest_file(digest);
        fs::remove_file(&file).map_err(io_at(&file))?;
        if let Some(image) = image {
            let dir = self.image_dir(&image);
            if !self.referenced_images()?.contains(&image) && dir.exists() {
                remove_entry_dir(&self.root, &dir)?;
                return Ok((None, Some(image)));
            }
            return Ok((None, None));
        }
        let Some(bundle) = bundle else {
            return Ok((None, None));
        };
        if self.referenced_bundles()?.contains(&bundle) {
            return Ok((None, None));
        }
        let dir = self.bundle_dir(&bundle);
        if !dir.exists() {
            return Ok((None, None));
        }
        remove_entry_dir(&self.root, &dir)?;
        Ok((Some(bundle), None))
    }

    /// Removes a bundle entry (damaged or not).
    pub fn remove_bundle(&self, digest: &Digest) -> Result<bool> {
        let _cache = self.lock_exclusive()?;
        let dir = self.bundle_dir(digest);
        if !dir.exists() {
            return Ok(false);
        }
        remove_entry_dir(&self.root, &dir)?;
        Ok(true)
    }

    fn referenced_bundles(&self) -> Result<Vec<Digest>> {
        let mut out = Vec::new();
        for (_, d) in self.digests_in(&layout::manifests_dir(&self.root), ".json")? {
            if let Some(m) = d.and_then(|d| self.manifest(&d).ok())
                && let Source::Bundle(b) = m.manifest.source
            {
                out.push(b.digest);
            }
        }
        Ok(out)
    }

    /// Removes bundles no cached manifest refers to and leftover temporary entries. Fails with
    /// [`CacheError::Busy`] while another ofc writes to the cache.
    pub fn gc(&self) -> Result<GcReport> {
        let _cache = self.lock_exclusive()?;
        let mut report = GcReport::default();
        let referenced = self.referenced_bundles()?;
        for (_, d) in self.digests_in(&layout::bundles_dir(&self.root), "")? {
            let Some(d) = d else { continue };
            if referenced.contains(&d) {
                continue;
            }
            let dir = self.bundle_dir(&d);
            report.bytes += dir_size(&dir);
            remove_entry_dir(&self.root, &dir)?;
            report.bundles.push(d);
        }
        self.gc_pip(&mut report)?;
        self.gc_npm(&mut report)?;
        self.gc_images(&mut report)?;
        // With the cache held exclusively, nothing in tmp-v1 is in progress.
        let tmp = self.root.join(TMP);
        if let Ok(rd) = fs::read_dir(&tmp) {
            for entry in rd.flatten() {
                let p = entry.path();
                report.bytes += dir_size(&p);
                let r = if p.is_dir() {
                    fs::remove_dir_all(&p)
                } else {
                    fs::remove_file(&p)
                };
                r.map_err(io_at(&p))?;
                report.temporaries += 1;
            }
        }
        Ok(report)
    }
}

fn reason_of(e: &CacheError) -> String {
    match e {
        CacheError::Corrupt { reason, .. } => reason.clone(),
        other => {
            let mut s = other.to_string();
            let mut src = std::error::Error::source(other);
            while let Some(c) = src {
                s.push_str(": ");
                s.push_str(&c.to_string());
                src = c.source();
            }
            s
        }
    }
}

/// Removes an entry directory by renaming it into `tmp-v1` first, so no reader ever sees half
/// an entry.
fn remove_entry_dir(root: &Path, dir: &Path) -> Result<()> {
    let tmp = root.join(TMP);
    fs::create_dir_all(&tmp).map_err(io_at(&tmp))?;
    let grave = tempfile::Builder::new()
        .prefix("removed-")
        .tempdir_in(&tmp)
        .map_err(io_at(&tmp))?;
    let target = grave.path().join("entry");
    fs::rename(dir, &target).map_err(io_at(dir))?;
    // Unpacked trees may hold read-only directories; make them writable to delete.
    make_writable(&target);
    drop(grave);
    Ok(())
}

fn make_writable(dir: &Path) {
    #[cfg(unix)]
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        use std::os::unix::fs::PermissionsExt;
        if e.file_type().is_dir() {
            let _ = fs::set_permissions(e.path(), fs::Permissions::from_mode(0o755));
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn dir_size(p: &Path) -> u64 {
    walkdir::WalkDir::new(p)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn hash_file(path: &Path) -> io::Result<(Digest, u64)> {
    let mut f = fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((Digest::from_bytes(h.finalize().into()), size))
}

/// A digest of an unpacked tree, `blake3:<hex>`: one line per entry in path order —
/// `d <path>` or `f <mode> <size> <blake3> <path>` — hashed. Anything else (a symlink someone
/// added) makes it fail. BLAKE3, not SHA-256: this digest only guards the cache against changes
/// on disk (nothing outside ofc sees it), and it is computed over every unpacked byte on each
/// install and `ofc verify`, where BLAKE3 is several times faster.
pub fn tree_digest(root: &Path) -> io::Result<String> {
    let mut h = blake3::Hasher::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name().min_depth(1) {
        let e = e.map_err(io::Error::other)?;
        let rel = e
            .path()
            .strip_prefix(root)
            .map_err(io::Error::other)?
            .to_string_lossy()
            .replace('\\', "/");
        let ft = e.file_type();
        if ft.is_dir() {
            h.update(format!("d {rel}\n").as_bytes());
        } else if ft.is_file() {
            let md = e.metadata().map_err(io::Error::other)?;
            let mut fh = blake3::Hasher::new();
            fh.update_reader(fs::File::open(e.path())?)?;
            let len = md.len();
            h.update(
                format!(
                    "f {:o} {len} {} {rel}\n",
                    file_mode(&md),
                    fh.finalize().to_hex()
                )
                .as_bytes(),
            );
        } else {
            return Err(io::Error::other(format!(
                "{rel} is neither a file nor a directory"
            )));
        }
    }
    Ok(format!("blake3:{}", h.finalize().to_hex()))
}

#[cfg(unix)]
fn file_mode(md: &fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    md.permissions().mode() & 0o777
}

#[cfg(not(unix))]
fn file_mode(_md: &fs::Metadata) -> u32 {
    0o644
}
