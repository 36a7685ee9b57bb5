//! The project's `ofc.lock`: where it is, reading it, and writing it safely.
//!
//! A project is the nearest directory, from the working directory up, that holds an `ofc.lock`
//! or a `blueprint.yaml`; `--lockfile PATH` names the file directly. Outside a project, `ofc
//! pull` writes no lockfile. Writes take an exclusive lock on the lockfile's directory and
//! replace the file by rename, so concurrent pulls in one project never interleave or lose an
//! entry, and a crash leaves the old or the new file, never half of one.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use index_schema::lockfile::{LOCKFILE_NAME, Lockfile};

use crate::output::UserError;

/// Finds the project's lockfile path (which may not exist yet), from `start` upwards.
pub fn find_lockfile(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(LOCKFILE_NAME).is_file() || d.join("blueprint.yaml").is_file() {
            return Some(d.join(LOCKFILE_NAME));
        }
        dir = d.parent();
    }
    None
}

/// Reads a lockfile; a missing or empty file is an empty lock.
pub fn read(path: &Path) -> Result<Lockfile> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lockfile::default()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Lockfile::default());
    }
    Lockfile::from_toml(&text).map_err(|d| {
        let mut msg = format!("{} is not a valid lockfile:", path.display());
        for x in d.iter() {
            msg.push_str(&format!("\n  {x}"));
        }
        UserError::new(msg)
            .hint("fix it, or delete it and pull again to write a new one")
            .into()
    })
}

/// Holds the lockfile's directory exclusively while a pull reads and rewrites the lock.
#[derive(Debug)]
pub struct ProjectLock {
    _dir: fs::File,
}

/// Locks the directory of `lockfile` (waits for other pulls in the same project).
pub fn lock(lockfile: &Path) -> Result<ProjectLock> {
    let dir = parent_of(lockfile);
    let f = fs::File::open(&dir).with_context(|| format!("cannot open {}", dir.display()))?;
    f.lock()
        .with_context(|| format!("cannot lock {}", dir.display()))?;
    Ok(ProjectLock { _dir: f })
}

fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `lock` to `path` by temp file and rename.
pub fn write(path: &Path, lock: &Lockfile) -> Result<()> {
    crate::config::write_atomic(path, lock.to_toml_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_project_wins() {
        let d = tempfile::tempdir().unwrap();
        let inner = d.path().join("a/b");
        fs::create_dir_all(&inner).unwrap();
        assert_eq!(find_lockfile(&inner), None);
        fs::write(d.path().join("a/blueprint.yaml"), "name: x\n").unwrap();
        assert_eq!(find_lockfile(&inner), Some(d.path().join("a/ofc.lock")));
        fs::write(inner.join("ofc.lock"), "").unwrap();
        assert_eq!(find_lockfile(&inner), Some(inner.join("ofc.lock")));
        assert_eq!(read(&inner.join("ofc.lock")).unwrap(), Lockfile::default());
    }

    #[test]
    fn a_broken_lockfile_names_itself() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("ofc.lock");
        fs::write(&p, "version = 1\n[[agent]]\nname = 3\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("ofc.lock is not a valid lockfile"), "{e}");
    }
}
