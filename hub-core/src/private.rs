//! Files only the hub reads: the data holds password hashes, token hashes, keys and
//! unpublished uploads.

use std::path::Path;

use anyhow::Context as _;

/// Makes every file and directory this process creates private to its user (umask 077).
pub fn private_files() {
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Creates the data directory, or narrows an existing one, to 0700.
pub fn private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data dir {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir)
            .with_context(|| format!("cannot read data dir {}", dir.display()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).with_context(
                || format!("cannot make data dir {} private (0700)", dir.display()),
            )?;
            tracing::warn!(dir = %dir.display(), "the data dir was readable by others; it is now 0700");
        }
    }
    Ok(())
}

/// Creates `path` (which must not exist) for writing, readable by this user only (0600).
#[cfg(unix)]
pub fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Creates `path` (which must not exist) for writing.
#[cfg(not(unix))]
pub fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn an_open_data_dir_is_narrowed_and_a_new_one_is_private() {
        let root = tempfile::tempdir().unwrap();
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        super::private_dir(&open).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&open), 0o700);
        let fresh = root.path().join("a/b");
        super::private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
