//! The project directory `.ofc/` beside the blueprint:
//!
//! ```text
//! .ofc/                 0700
//!   run.lock            held (flock) while an `ofc run` uses this project
//!   run.json            the current or last run: pid, floor id, transcript, agents, state
//!   sessions/           0700: one `<id>.jsonl` per session (`run::session`), 0600
//!   logs/               0700
//!     <run>.jsonl       the floor's transcript (`ofc floor replay` reads it), 0600
//!     <run>.agents.log  what the run's process agents printed, 0600
//! ```
//!
//! The lock is taken without waiting: a second `ofc run` in the same project fails at once
//! with a clear error instead of sharing run state and logs with the first. It is released by
//! the kernel when the process ends, even on SIGKILL.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::output::UserError;

/// The project directory of one run, locked.
#[derive(Debug)]
pub struct ProjectDir {
    /// `.ofc/`.
    pub root: PathBuf,
    /// `.ofc/logs/`.
    pub logs: PathBuf,
    _lock: fs::File,
}

fn create_private_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot set the permissions of {}", dir.display()))?;
    }
    Ok(())
}

/// Creates `dir` and the parents it lacks, each new one 0700, and makes `dir` itself 0700.
pub fn private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Makes a file readable by its owner only.
pub fn make_private(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}

impl ProjectDir {
    /// Creates `.ofc/` in `project` and takes its run lock, or fails if another run holds it.
    pub fn open(project: &Path) -> Result<Self> {
        let root = project.join(".ofc");
        let logs = root.join("logs");
        create_private_dir(&root)?;
        create_private_dir(&logs)?;
        let lock_path = root.join("run.lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        make_private(&lock_path);
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let state = fs::read_to_string(root.join("run.json")).unwrap_or_default();
                let pid = serde_json::from_str::<serde_json::Value>(&state)
                    .ok()
                    .and_then(|v| v.get("pid").and_then(|p| p.as_u64()));
                return Err(UserError::new(format!(
                    "another `ofc run` is using this project ({}){}",
                    project.display(),
                    pid.map(|p| format!(", pid {p}")).unwrap_or_default()
                ))
                .hint("end it first, or run the blueprint from a copy of the project")
                .into());
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
            }
        }
        Ok(Self {
            root,
            logs,
            _lock: lock,
        })
    }

    /// Writes `run.json` (0600, atomically).
    pub fn write_state(&self, state: &serde_json::Value) -> Result<()> {
        let path = self.root.join("run.json");
        let mut text = serde_json::to_string_pretty(state)?;
        text.push('\n');
        crate::config::write_atomic(&path, text.as_bytes())?;
        make_private(&path);
        Ok(())
    }
}

/// A run id: UTC time, then random hex (sortable, unique, safe as a file name).
pub(crate) fn run_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    let mut bytes = [0u8; 4];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        hex::encode(bytes)
    )
}
