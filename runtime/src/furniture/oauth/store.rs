//! The token file of an `authorization_code` furniture: `<dir>/<floor>/<furniture>.json`
//! (directories 0700, the file 0600, replaced atomically). It is the source of truth: every
//! use reads it holding an exclusive lock on `<furniture>.lock` beside it, and a refresh
//! happens and is written back under that same lock, so that several processes share one
//! token and none uses a refresh token another has already rotated out.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::token::Token;

/// What the file holds.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Stored {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) auth_url: Option<String>,
    pub(crate) token_url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) scopes: Vec<String>,
    /// The MCP server the token is for: a file for another URL is not used.
    pub(crate) resource: String,
    pub(crate) token: Token,
}

impl fmt::Debug for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stored")
            .field("client_id", &self.client_id)
            .field("token_url", &self.token_url)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// Where one furniture's token is kept.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: PathBuf,
}

/// The file, locked: dropped, the lock is released.
#[derive(Debug)]
pub(crate) struct Locked {
    path: PathBuf,
    _lock: std::fs::File,
}

impl TokenFile {
    /// `<dir>/<floor>/<furniture>.json`; both names are made safe as one path segment.
    pub(crate) fn new(dir: &Path, floor: &str, furniture: &str) -> TokenFile {
        TokenFile {
            path: dir
                .join(segment(floor))
                .join(format!("{}.json", segment(furniture))),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the exclusive lock (waiting for another process that holds it), making the
    /// directories first.
    pub(crate) async fn lock(&self) -> Result<Locked, String> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let dir = path.parent().unwrap_or(Path::new("."));
            private_dirs(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
            let lock_path = path.with_extension("lock");
            let mut open = std::fs::OpenOptions::new();
            open.create(true).truncate(false).write(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
            let file = open
                .open(&lock_path)
                .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
            file.lock()
                .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
            Ok(Locked { path, _lock: file })
        })
        .await
        .map_err(|e| format!("the token file lock: {e}"))?
    }
}

impl Locked {
    /// What the file holds (none when there is no file).
    pub(crate) fn read(&self) -> Result<Option<Stored>, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                format!(
                    "{} is not a token file ofc wrote ({e}); remove it and run `ofc auth` again",
                    self.path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", self.path.display())),
        }
    }

    /// Replaces the file: a private temporary file beside it, synced, renamed over it.
    pub(crate) fn write(&self, stored: &Stored) -> Result<(), String> {
        let bad = |e: std::io::Error| format!("cannot write {}: {e}", self.path.display());
        let json = serde_json::to_vec_pretty(stored).map_err(|e| bad(std::io::Error::other(e)))?;
        let tmp = self
            .path
            .with_extension(format!("json.tmp{}", std::process::id()));
        let mut open = std::fs::OpenOptions::new();
        open.create(true).truncate(true).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let result = (|| {
            let mut f = open.open(&tmp)?;
            f.write_all(&json)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(bad)
    }

    /// Removes the file (a token the server no longer takes).
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A name as one path segment: anything but `[A-Za-z0-9._-]` becomes `_`, and `.`/`..` too.
fn segment(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        s.replace('.', "_") + "_"
    } else {
        s
    }
}

/// Makes `dir` and its parents; `dir` and its parent (the floor's and the oauth directory)
/// are 0700 even when they existed.
fn private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)?;
    #[cfg(unix)]
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_one_safe_segment() {
        assert_eq!(segment("docs-1.x"), "docs-1.x");
        assert_eq!(segment("../etc"), ".._etc");
        assert_eq!(segment(".."), "___");
        assert_eq!(segment("a/b c"), "a_b_c");
        assert_eq!(segment(""), "_");
    }

    #[tokio::test]
    async fn the_file_is_private_and_replaced_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let f = TokenFile::new(&tmp.path().join("oauth"), "floor", "docs");
        let locked = f.lock().await.unwrap();
        assert!(locked.read().unwrap().is_none());
        let stored = Stored {
            client_id: "c".into(),
            client_secret: None,
            auth_url: None,
            token_url: "http://127.0.0.1:9/token".into(),
            scopes: vec![],
            resource: "http://127.0.0.1:9/mcp".into(),
            token: Token {
                access_token: "at-1".into(),
                token_type: "Bearer".into(),
                refresh_token: Some("rt-1".into()),
                expiry: None,
            },
        };
        locked.write(&stored).unwrap();
        assert_eq!(locked.read().unwrap().unwrap().token.access_token, "at-1");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(f.path()), 0o600);
            assert_eq!(mode(f.path().parent().unwrap()), 0o700);
            assert_eq!(mode(&tmp.path().join("oauth")), 0o700);
        }
        assert!(!format!("{stored:?}").contains("at-1"));
        // A second locker waits for the first.
        let f2 = f.clone();
        let waiter = tokio::spawn(async move { f2.lock().await.map(|_| ()) });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!waiter.is_finished(), "the lock is exclusive");
        drop(locked);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}
