//! The tools a pip install runs: the Python interpreter, pip or uv, each in a supervised
//! process group, within a time limit, with the user's pip and uv settings kept out.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};

use crate::output::UserError;

/// Environment variable naming the interpreter (default `python3`).
pub(crate) const PYTHON_ENV: &str = "OFC_PYTHON";

/// Environment variable forcing the installer: `uv` or `pip` (default: uv when on PATH).
pub(crate) const INSTALLER_ENV: &str = "OFC_PIP_INSTALLER";

/// How long resolving or installing may take.
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(600);

/// Most bytes of a failing tool's stderr shown.
const MAX_STDERR_SHOWN: usize = 2000;

/// The interpreter: its real path (not a version manager's shim) and version.
pub(crate) struct Python {
    pub(crate) exe: PathBuf,
    pub(crate) version: String,
}

impl Python {
    pub(crate) async fn find() -> Result<Python> {
        let name = std::env::var(PYTHON_ENV)
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "python3".into());
        let out = run(
            tokio::process::Command::new(&name).args([
                "-I",
                "-c",
                "import platform, sys; print(platform.python_version()); print(sys.executable)",
            ]),
            &format!("{name} (to find the Python interpreter)"),
        )
        .await
        .map_err(|e| {
            e.context(
                UserError::new(format!("cannot run `{name}`: pip agents need Python 3")).hint(
                    format!("install python3, or name an interpreter in {PYTHON_ENV}"),
                ),
            )
        })?;
        let text = String::from_utf8_lossy(&out);
        let mut lines = text.lines();
        let version = lines.next().unwrap_or_default().trim().to_string();
        let exe = PathBuf::from(lines.next().unwrap_or_default().trim());
        if version.is_empty() || !exe.is_absolute() {
            bail!("`{name}` did not say its version and path");
        }
        Ok(Python { exe, version })
    }
}

/// Runs a command to completion within [`STEP_TIMEOUT`]; its stdout, or an error with the end
/// of its stderr.
pub(crate) async fn run(cmd: &mut tokio::process::Command, what: &str) -> Result<Vec<u8>> {
    // Nothing from the user's environment may add indexes or options behind ofc's back.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("PIP_") || k.starts_with("UV_") {
            cmd.env_remove(k.as_ref());
        }
    }
    // The user's pip configuration must not add indexes or options behind ofc's back.
    cmd.env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_NO_INPUT", "1")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PYTHONNOUSERSITE", "1")
        .env("UV_NO_CONFIG", "1");
    // In a process group watched by a supervisor: a SIGKILLed ofc leaves no pip running.
    let out = match crate::supervisor::output_supervised(cmd, STEP_TIMEOUT).await {
        Err(e) => return Err(anyhow!(e).context(format!("cannot start {what}"))),
        Ok(None) => bail!("{what} took longer than {}s", STEP_TIMEOUT.as_secs()),
        Ok(Some(out)) => out.with_context(|| format!("{what} failed"))?,
    };
    if !out.status.success() {
        bail!(ToolFailed {
            what: what.to_string(),
            status: out.status.to_string(),
            stderr: tail(&out.stderr),
        });
    }
    Ok(out.stdout)
}

/// A tool exited with an error.
#[derive(Debug, thiserror::Error)]
#[error("{what} failed ({status}): {stderr}")]
pub(crate) struct ToolFailed {
    pub(crate) what: String,
    pub(crate) status: String,
    pub(crate) stderr: String,
}

/// The end of a tool's stderr, printable.
fn tail(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let s = s.trim();
    let mut start = s.len().saturating_sub(MAX_STDERR_SHOWN);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..]
        .chars()
        .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
        .collect()
}
