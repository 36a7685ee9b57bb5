//! The container engine: podman or docker, found once for everything that runs containers
//! (the sandbox workstation here, container agents in `ofc`). `OFC_CONTAINER_ENGINE` names a
//! program of either kind; without it podman, else docker, is looked up on `PATH`.

use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable naming the container engine (a program of podman's or docker's
/// kind); without it podman, else docker, is looked up on `PATH`.
pub const ENGINE_ENV: &str = "OFC_CONTAINER_ENGINE";

/// Which engine a program is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// podman.
    Podman,
    /// docker.
    Docker,
}

/// A container engine program.
#[derive(Debug, Clone)]
pub struct Engine {
    /// The program (an absolute path when found on `PATH`).
    pub program: PathBuf,
    /// What it is.
    pub kind: EngineKind,
}

/// Why no engine was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoEngine {
    /// `OFC_CONTAINER_ENGINE` names a program that is not there.
    NoSuchProgram(String),
    /// Neither podman nor docker is on `PATH`; each caller says what needed one.
    NeitherOnPath,
}

impl fmt::Display for NoEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchProgram(v) => write!(f, "{ENGINE_ENV}={v}: no such program"),
            Self::NeitherOnPath => f.write_str("neither podman nor docker is on PATH"),
        }
    }
}

impl std::error::Error for NoEngine {}

impl Engine {
    /// `OFC_CONTAINER_ENGINE` (its kind read from its file name), else podman, else docker.
    pub fn detect() -> Result<Engine, NoEngine> {
        if let Some(v) = std::env::var_os(ENGINE_ENV).filter(|v| !v.is_empty()) {
            let v = v.to_string_lossy().into_owned();
            let program = which(&v).ok_or(NoEngine::NoSuchProgram(v))?;
            let kind = if program
                .file_name()
                .is_some_and(|f| f.to_string_lossy().contains("docker"))
            {
                EngineKind::Docker
            } else {
                EngineKind::Podman
            };
            return Ok(Engine { program, kind });
        }
        for (name, kind) in [
            ("podman", EngineKind::Podman),
            ("docker", EngineKind::Docker),
        ] {
            if let Some(program) = which(name) {
                return Ok(Engine { program, kind });
            }
        }
        Err(NoEngine::NeitherOnPath)
    }
}

/// `name` itself when it is a path, else the first file of that name on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
