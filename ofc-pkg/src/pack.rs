//! Deterministic packing of an agent folder into a bundle (a gzip-compressed tar).
//!
//! The same folder gives the same bytes, hence the same digest, on any machine running the same
//! ofc: entries sorted by path (bytewise), directories before their contents; fixed mtime (0),
//! uid/gid (0), empty user and group names; modes 0644 for files, 0755 for directories and
//! executables; GNU headers (long names as GNU long-name records); a gzip header with no mtime,
//! no file name and OS "unknown"; fixed compression level.
//!
//! Only regular files and directories are packed. Symlinks, devices, fifos and sockets are
//! refused rather than skipped, so a bundle never silently lacks a file its author expected.
//! `.git`, `target`, `node_modules` and `.ofc` are skipped at any depth, as are names listed in
//! `.ofcignore` at the folder's root (one name or relative path per line, `#` comments).

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};
use index_schema::name::Digest;

/// Names never packed, at any depth.
pub const ALWAYS_IGNORED: &[&str] = &[".git", "target", "node_modules", ".ofc"];

/// The ignore file read from the folder's root.
pub const IGNORE_FILE: &str = ".ofcignore";

/// Limits on what is packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackLimits {
    /// Most files and directories.
    pub max_entries: usize,
    /// Largest single file in bytes.
    pub max_file_bytes: u64,
    /// Largest sum of file sizes in bytes.
    pub max_total_bytes: u64,
    /// Largest compressed bundle in bytes.
    pub max_bundle_bytes: u64,
}

impl Default for PackLimits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_file_bytes: 64 * 1024 * 1024,
            max_total_bytes: 256 * 1024 * 1024,
            max_bundle_bytes: 128 * 1024 * 1024,
        }
    }
}

/// Why a folder could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The folder does not exist or is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    /// A symlink, device, fifo or socket.
    #[error("{path}: {kind} cannot be packed; bundles hold only regular files and directories")]
    Unsupported {
        /// The file, relative to the folder.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// A path that is not UTF-8 or contains a backslash.
    #[error("{path}: file names in a bundle must be UTF-8 without `\\`")]
    BadName {
        /// The path, lossily converted.
        path: String,
    },
    /// Too many entries.
    #[error("the folder has more than {limit} files and directories")]
    TooManyEntries {
        /// The limit.
        limit: usize,
    },
    /// A file over the size limit.
    #[error("{path}: {size} bytes is more than the {limit}-byte limit for one file")]
    FileTooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The files together are over the size limit.
    #[error("the files add up to more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The compressed bundle is over the size limit.
    #[error("the bundle is {size} bytes, more than the {limit}-byte limit")]
    BundleTooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file changed size while it was read.
    #[error("{path}: changed while being packed")]
    Changed {
        /// The file.
        path: String,
    },
    /// Reading the folder failed.
    #[error("cannot read {path}")]
    Io {
        /// What was being read.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// A packed bundle.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The tar.gz bytes.
    pub bytes: Vec<u8>,
    /// Their SHA-256.
    pub digest: Digest,
    /// Paths packed (files and directories), in archive order, `/`-separated; directories end
    /// with `/`.
    pub entries: Vec<String>,
    /// Sum of the file sizes.
    pub unpacked_bytes: u64,
}

struct Item {
    rel: String,
    abs: PathBuf,
    dir: bool,
    executable: bool,
    size: u64,
}

/// Packs `dir` into a bundle.
pub fn pack_dir(dir: &Path, limits: &PackLimits) -> Result<Packed, PackError> {
    let md = fs::metadata(dir).map_err(|source| PackError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    if !md.is_dir() {
        return Err(PackError::NotADirectory(dir.to_path_buf()));
    }
    let ignored = read_ignore_file(dir)?;
    let mut items = Vec::new();
    let mut total = 0u64;
    collect(dir, "", &ignored, limits, &mut items, &mut total)?;

    let gz = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::new(9));
    let mut builder = tar::Builder::new(gz);
    let io_err = |path: &str| {
        let path = path.to_string();
        move |source| PackError::Io { path, source }
    };
    let mut entries = Vec::with_capacity(items.len());
    for item in &items {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header
            .set_username("")
            .and_then(|_| header.set_groupname(""))
            .map_err(io_err(&item.rel))?;
        if item.dir {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            let name = format!("{}/", item.rel);
            builder
                .append_data(&mut header, &name, io::empty())
                .map_err(io_err(&item.rel))?;
            entries.push(name);
        } else {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if item.executable { 0o755 } else { 0o644 });
            header.set_size(item.size);
            let file = fs::File::open(&item.abs).map_err(io_err(&item.rel))?;
            // Exactly `size` bytes go in; a file that shrank or grew meanwhile is an error.
            let mut reader = ExactReader {
                inner: file.take(item.size + 1),
                left: item.size,
            };
            builder
                .append_data(&mut header, &item.rel, &mut reader)
                .map_err(io_err(&item.rel))?;
            // The `take(size + 1)` lets one extra byte through: a file that grew shows it.
            if reader.left != 0 || reader.inner.read(&mut [0u8; 1]).ok() != Some(0) {
                return Err(PackError::Changed {
                    path: item.rel.clone(),
                });
            }
            entries.push(item.rel.clone());
        }
    }
    let gz = builder.into_inner().map_err(io_err("bundle"))?;
    let bytes = gz.finish().map_err(io_err("bundle"))?;
    if bytes.len() as u64 > limits.max_bundle_bytes {
        return Err(PackError::BundleTooLarge {
            size: bytes.len() as u64,
            limit: limits.max_bundle_bytes,
        });
    }
    Ok(Packed {
        digest: Digest::of(&bytes),
        bytes,
        entries,
        unpacked_bytes: total,
    })
}

/// Reads at most `left` bytes; notes whether the file had more.
struct ExactReader<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let cap = buf.len().min(self.left as usize);
        let n = self.inner.read(&mut buf[..cap])?;
        if n == 0 {
            // The file shrank: report it after append_data fails on the short read.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shrank while being packed",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn read_ignore_file(dir: &Path) -> Result<BTreeSet<String>, PackError> {
    let path = dir.join(IGNORE_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(source) => {
            return Err(PackError::Io {
                path: IGNORE_FILE.to_string(),
                source,
            });
        }
    };
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_start_matches("./").trim_matches('/').to_string())
        .filter(|l| !l.is_empty())
        .collect())
}

fn is_ignored(name: &str, rel: &str, ignored: &BTreeSet<String>) -> bool {
    ALWAYS_IGNORED.contains(&name) || ignored.contains(rel) || ignored.contains(name)
}

fn collect(
    root: &Path,
    prefix: &str,
    ignored: &BTreeSet<String>,
    limits: &PackLimits,
    items: &mut Vec<Item>,
    total: &mut u64,
) -> Result<(), PackError> {
    let dir = if prefix.is_empty() {
        root.to_path_buf()
    } else {
        root.join(prefix)
    };
    let io_err = |path: String| move |source| PackError::Io { path, source };
    let mut children = Vec::new();
    for entry in fs::read_dir(&dir).map_err(io_err(display_rel(prefix)))? {
        let entry = entry.map_err(io_err(display_rel(prefix)))?;
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| !n.contains('\\')) else {
            return Err(PackError::BadName {
                path: join_rel(prefix, &name.to_string_lossy()),
            });
        };
        children.push(name.to_string());
    }
    // Bytewise order: independent of locale and file system.
    children.sort();
    for name in children {
        let rel = join_rel(prefix, &name);
        if is_ignored(&name, &rel, ignored) {
            continue;
        }
        let abs = root.join(&rel);
        let md = fs::symlink_metadata(&abs).map_err(io_err(rel.clone()))?;
        let ft = md.file_type();
        if items.len() >= limits.max_entries {
            return Err(PackError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        if ft.is_dir() {
            items.push(Item {
                rel: rel.clone(),
                abs,
                dir: true,
                executable: false,
                size: 0,
            });
            collect(root, &rel, ignored, limits, items, total)?;
        } else if ft.is_file() {
            let size = md.len();
            if size > limits.max_file_bytes {
                return Err(PackError::FileTooLarge {
                    path: rel,
                    size,
                    limit: limits.max_file_bytes,
                });
            }
            *total += size;
            if *total > limits.max_total_bytes {
                return Err(PackError::TooLarge {
                    limit: limits.max_total_bytes,
                });
            }
            items.push(Item {
                rel,
                abs,
                dir: false,
                executable: is_executable(&md),
                size,
            });
        } else {
            return Err(PackError::Unsupported {
                path: rel,
                kind: kind_of(&ft),
            });
        }
    }
    Ok(())
}

fn join_rel(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

fn display_rel(prefix: &str) -> String {
    if prefix.is_empty() {
        ".".to_string()
    } else {
        prefix.to_string()
    }
}

#[cfg(unix)]
fn is_executable(md: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    md.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_md: &fs::Metadata) -> bool {
    false
}

fn kind_of(ft: &fs::FileType) -> &'static str {
    if ft.is_symlink() {
        return "a symlink";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_block_device() || ft.is_char_device() {
            return "a device";
        }
        if ft.is_fifo() {
            return "a fifo";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}
