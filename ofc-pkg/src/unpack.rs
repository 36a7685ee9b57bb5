//! Safe unpacking of a bundle (the pull side).
//!
//! A bundle comes from the network, so every entry is checked before anything is written:
//! only regular files and directories; relative `/`-separated UTF-8 paths without `..`,
//! backslashes or NUL; no duplicate paths; no pax records that move an entry (`path`,
//! `linkpath`) or change its size (`size`), since tar readers disagree on those and a checker and
//! an extractor could then see different archives. The number of entries, the bytes written and
//! the decompression ratio are capped while reading, so a gzip bomb stops early. Files are
//! created with `create_new` (mode 0644, or 0755 when any execute bit is set); no symlink is ever
//! created, so every path stays inside the destination.
//!
//! The destination must be an empty directory the caller owns (the cache unpacks into a temp
//! directory inside the cache and renames it into place).

use std::cell::Cell;
use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use flate2::read::GzDecoder;

/// Limits on what a bundle may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackLimits {
    /// Most entries (files and directories).
    pub max_entries: u64,
    /// Most bytes written in total.
    pub max_total_bytes: u64,
    /// Largest single file.
    pub max_file_bytes: u64,
    /// Largest ratio of decompressed tar bytes to compressed bytes.
    pub max_ratio: u64,
    /// Longest path in bytes.
    pub max_path_bytes: usize,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_total_bytes: 512 * 1024 * 1024,
            max_file_bytes: 256 * 1024 * 1024,
            max_ratio: 200,
            max_path_bytes: 1024,
        }
    }
}

/// Why a bundle was refused or could not be unpacked.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    /// An entry that must not be unpacked.
    #[error("bundle entry `{entry}`: {reason}")]
    UnsafeEntry {
        /// The entry's path as written in the archive (lossy UTF-8).
        entry: String,
        /// Why it is refused.
        reason: String,
    },
    /// More entries than allowed.
    #[error("the bundle has more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: u64,
    },
    /// More bytes than allowed.
    #[error("bundle entry `{entry}`: the bundle unpacks to more than {limit} bytes")]
    TooLarge {
        /// The entry being read when the limit was reached.
        entry: String,
        /// The limit.
        limit: u64,
    },
    /// The compressed stream expands too much (a decompression bomb).
    #[error(
        "the bundle decompresses to more than {ratio} times its compressed size ({compressed} bytes); refusing a possible decompression bomb"
    )]
    Bomb {
        /// The ratio limit.
        ratio: u64,
        /// The compressed size.
        compressed: u64,
    },
    /// The destination is not an empty directory.
    #[error("{0} is not an empty directory")]
    DestinationNotEmpty(PathBuf),
    /// The archive is not a valid tar.gz.
    #[error("the bundle is not a valid tar.gz")]
    Corrupt(#[source] io::Error),
    /// Writing failed.
    #[error("cannot write {path}")]
    Io {
        /// What was being written.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// What was unpacked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unpacked {
    /// Files written.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Counts decompressed bytes and stops the stream past a budget.
struct Budget<R> {
    inner: R,
    read: Rc<Cell<u64>>,
    limit: u64,
    exceeded: Rc<Cell<bool>>,
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.read.get() + n as u64;
        self.read.set(total);
        if total > self.limit {
            self.exceeded.set(true);
            return Err(io::Error::other("decompression budget exceeded"));
        }
        Ok(n)
    }
}

/// Unpacks the tar.gz `bundle` into `dest`, an existing empty directory.
pub fn unpack(bundle: &[u8], dest: &Path, limits: &UnpackLimits) -> Result<Unpacked, UnpackError> {
    let mut rd = fs::read_dir(dest).map_err(|source| UnpackError::Io {
        path: dest.to_path_buf(),
        source,
    })?;
    if rd.next().is_some() {
        return Err(UnpackError::DestinationNotEmpty(dest.to_path_buf()));
    }
    let compressed = bundle.len() as u64;
    // Tar framing adds at most a header block and padding per entry plus the end blocks; the
    // byte limit below is on file contents, this one on the whole decompressed stream.
    let framing = limits.max_entries.saturating_add(4).saturating_mul(3 * 512);
    let by_ratio = compressed.max(1).saturating_mul(limits.max_ratio);
    let stream_limit = by_ratio.min(limits.max_total_bytes.saturating_add(framing));
    let exceeded = Rc::new(Cell::new(false));
    let budget = Budget {
        inner: GzDecoder::new(bundle),
        read: Rc::new(Cell::new(0)),
        limit: stream_limit,
        exceeded: exceeded.clone(),
    };
    let ratio_bound = by_ratio <= limits.max_total_bytes.saturating_add(framing);
    let over_budget = |entry: &str| {
        if ratio_bound {
            UnpackError::Bomb {
                ratio: limits.max_ratio,
                compressed,
            }
        } else {
            UnpackError::TooLarge {
                entry: entry.to_string(),
                limit: limits.max_total_bytes,
            }
        }
    };

    let mut archive = tar::Archive::new(budget);
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Unpacked::default();
    let mut count = 0u64;
    let mut last_entry = String::from("(start of bundle)");
    let entries = archive.entries().map_err(UnpackError::Corrupt)?;
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) if exceeded.get() => {
                let _ = e;
                return Err(over_budget(&last_entry));
            }
            Err(e) => return Err(UnpackError::Corrupt(e)),
        };
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        last_entry = raw_name.clone();
        let refuse = |reason: &str| UnpackError::UnsafeEntry {
            entry: raw_name.clone(),
            reason: reason.to_string(),
        };
        let kind = entry.header().entry_type();
        if kind == tar::EntryType::XGlobalHeader {
            // Archive-wide metadata (git archive writes a commit id here); nothing to unpack and
            // never applied to entries.
            continue;
        }
        count += 1;
        if count > limits.max_entries {
            return Err(UnpackError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        let is_dir = match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => false,
            tar::EntryType::Directory => true,
            tar::EntryType::Symlink => return Err(refuse("symlinks are not allowed in bundles")),
            tar::EntryType::Link => return Err(refuse("hardlinks are not allowed in bundles")),
            tar::EntryType::Char | tar::EntryType::Block => {
                return Err(refuse("device files are not allowed in bundles"));
            }
            tar::EntryType::Fifo => return Err(refuse("fifos are not allowed in bundles")),
            tar::EntryType::GNUSparse => {
                return Err(refuse("sparse files are not allowed in bundles"));
            }
            other => {
                return Err(refuse(&format!(
                    "entry type {:?} is not allowed in bundles",
                    other.as_byte() as char
                )));
            }
        };
        check_pax(&mut entry, &raw_name)?;
        let parts = check_path(&raw_name, limits.max_path_bytes).map_err(|r| refuse(&r))?;
        let key = parts.join("/");
        if !seen.insert(key.clone()) {
            return Err(refuse("appears twice in the bundle"));
        }
        let target = parts.iter().fold(dest.to_path_buf(), |p, c| p.join(c));
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| UnpackError::Io { path, source }
        };
        if let Some(parent) = target.parent() {
            // Parents are real directories made here: no symlink is ever created.
            create_dirs(parent).map_err(io_err(parent))?;
        }
        if is_dir {
            match fs::create_dir(&target) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && target.is_dir() => {}
                Err(e) => return Err(io_err(&target)(e)),
            }
            set_mode(&target, 0o755).map_err(io_err(&target))?;
            out.dirs += 1;
            continue;
        }
        let size = entry.size();
        if size > limits.max_file_bytes {
            return Err(refuse(&format!(
                "{size} bytes is more than the {}-byte limit for one file",
                limits.max_file_bytes
            )));
        }
        if out.bytes.saturating_add(size) > limits.max_total_bytes {
            return Err(UnpackError::TooLarge {
                entry: raw_name.clone(),
                limit: limits.max_total_bytes,
            });
        }
        let mode = if entry.header().mode().unwrap_or(0o644) & 0o111 != 0 {
            0o755
        } else {
            0o644
        };
        let mut file = open_new(&target, mode).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                refuse("collides with another entry")
            } else {
                io_err(&target)(e)
            }
        })?;
        let written = match io::copy(&mut (&mut entry).take(size), &mut file) {
            Ok(n) => n,
            Err(_) if exceeded.get() => return Err(over_budget(&raw_name)),
            Err(e) => return Err(UnpackError::Corrupt(e)),
        };
        if written != size {
            return Err(UnpackError::Corrupt(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("entry `{raw_name}` is truncated"),
            )));
        }
        out.files += 1;
        out.bytes += written;
    }
    if exceeded.get() {
        return Err(over_budget(&last_entry));
    }
    Ok(out)
}

/// Refuses pax records that change where an entry goes or how long it is.
fn check_pax<R: Read>(entry: &mut tar::Entry<'_, R>, name: &str) -> Result<(), UnpackError> {
    let header_size = entry.header().entry_size().ok();
    let exts = match entry.pax_extensions() {
        Ok(Some(exts)) => exts,
        Ok(None) => return Ok(()),
        Err(e) => return Err(UnpackError::Corrupt(e)),
    };
    for ext in exts {
        let ext = ext.map_err(UnpackError::Corrupt)?;
        let key = ext.key().unwrap_or("");
        let refuse = |reason: String| UnpackError::UnsafeEntry {
            entry: name.to_string(),
            reason,
        };
        match key {
            "path"
            | "linkpath"
            | "GNU.sparse.name"
            | "GNU.sparse.realsize"
            | "GNU.sparse.size"
            | "GNU.sparse.map"
            | "GNU.sparse.major"
            | "GNU.sparse.minor" => {
                return Err(refuse(format!(
                    "a pax `{key}` record overrides the tar header; bundles must not use it"
                )));
            }
            "size" => {
                let value = ext.value().unwrap_or("");
                if value.parse::<u64>().ok() != header_size {
                    return Err(refuse(format!(
                        "a pax `size` record ({value}) disagrees with the tar header ({})",
                        header_size.map_or("unreadable".to_string(), |s| s.to_string())
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Splits an entry path into checked components.
fn check_path(raw: &str, max_bytes: usize) -> Result<Vec<String>, String> {
    if raw.len() > max_bytes {
        return Err(format!("path longer than {max_bytes} bytes"));
    }
    if raw.contains('\0') {
        return Err("path contains NUL".into());
    }
    if raw.contains('\\') {
        return Err("path contains `\\`".into());
    }
    if raw.starts_with('/') {
        return Err("absolute paths are not allowed".into());
    }
    if raw.len() >= 2 && raw.as_bytes()[1] == b':' {
        return Err("drive-letter paths are not allowed".into());
    }
    let mut parts = Vec::new();
    for (i, c) in raw.split('/').enumerate() {
        match c {
            "" => {}
            "." if i == 0 => {}
            "." => return Err("`.` components are not allowed".into()),
            ".." => return Err("`..` escapes the bundle root".into()),
            c => parts.push(c.to_string()),
        }
    }
    if parts.is_empty() {
        return Err("empty path".into());
    }
    Ok(parts)
}

fn create_dirs(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o755);
    }
    b.create(dir)
}

fn open_new(path: &Path, mode: u32) -> io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let f = o.open(path)?;
    // The umask may have removed bits; set them exactly.
    set_mode(path, mode)?;
    Ok(f)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_path;

    #[test]
    fn paths() {
        assert_eq!(check_path("a/b.txt", 100).unwrap(), ["a", "b.txt"]);
        assert_eq!(check_path("./a/", 100).unwrap(), ["a"]);
        assert!(check_path("../x", 100).is_err());
        assert!(check_path("a/../../x", 100).is_err());
        assert!(check_path("/etc/passwd", 100).is_err());
        assert!(check_path("C:/x", 100).is_err());
        assert!(check_path("a\\..\\x", 100).is_err());
        assert!(check_path("a/./b", 100).is_err());
        assert!(check_path("", 100).is_err());
        assert!(check_path("aaaa", 3).is_err());
    }
}
