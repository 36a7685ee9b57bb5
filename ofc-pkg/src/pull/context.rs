//! What a pull works with and hands back: its options, the context every pull task and
//! every source kind shares (hub, cache, lockfile, progress), the unpack limits, and what one
//! pulled agent is.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use anyhow::Result;
use index_schema::envelope::KeyId;
use index_schema::lockfile::{LockedSource, Lockfile};
use index_schema::name::{AgentName, Digest};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use semver::Version;

use crate::cache::Cache;
use crate::config::Paths;
use crate::hub::Hub;
use crate::output::UserError;
use crate::start::Start;
use crate::unpack::UnpackLimits;

/// Environment variable capping the entries a bundle may unpack to.
pub const MAX_ENTRIES_ENV: &str = "OFC_MAX_BUNDLE_ENTRIES";

/// Environment variable capping the bytes a bundle may unpack to.
pub const MAX_BYTES_ENV: &str = "OFC_MAX_BUNDLE_BYTES";

/// The unpack limits: the defaults, lowered or raised by [`MAX_ENTRIES_ENV`] and
/// [`MAX_BYTES_ENV`] (which caps the whole tree and so each file).
pub fn limits_from_env() -> Result<UnpackLimits> {
    let mut l = UnpackLimits::default();
    let read = |var: &str| -> Result<Option<u64>> {
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => v.parse::<u64>().map(Some).map_err(|_| {
                UserError::new(format!("{var} must be a whole number, not `{v}`")).into()
            }),
            _ => Ok(None),
        }
    };
    if let Some(n) = read(MAX_ENTRIES_ENV)? {
        l.max_entries = n;
    }
    if let Some(n) = read(MAX_BYTES_ENV)? {
        l.max_total_bytes = n;
        l.max_file_bytes = n;
    }
    Ok(l)
}

/// How to pull.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// Use the cache only; never the network.
    pub offline: bool,
    /// Refuse to change the lockfile.
    pub locked: bool,
    /// The project's lockfile; `None` outside a project.
    pub lockfile: Option<PathBuf>,
    /// Limits on what a bundle may unpack to.
    pub limits: UnpackLimits,
    /// Draw progress bars (stderr is a terminal and output is not JSON).
    pub progress: bool,
    /// pip: allow building source distributions (runs code from the package at install time).
    pub allow_sdist: bool,
    /// npm: run the packages' install scripts (off by default: they run code at install time).
    pub allow_install_scripts: bool,
    /// Take an older version when the one pulled before is now marked yanked (the flag is not
    /// signed: a hostile hub could set it to roll clients back).
    pub allow_yanked_rollback: bool,
}

/// Where a pulled agent came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Fetched from the hub now.
    Hub,
    /// Everything was in the cache already.
    Cache,
    /// A local path.
    Local,
}

/// What a pull installed.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// `publisher/agent`.
    pub name: AgentName,
    /// The exact version.
    pub version: Version,
    /// The signed manifest's digest (absent for local agents).
    pub manifest_digest: Option<Digest>,
    /// The publisher key that verified.
    pub key_id: Option<KeyId>,
    /// The key was pinned by this pull (first use).
    pub pinned_now: bool,
    /// What the source resolved to, as recorded in the lockfile.
    pub source: LockedSource,
    /// The unpacked files (bundle sources) or the local path.
    pub path: Option<PathBuf>,
    /// Where it came from.
    pub origin: Origin,
    /// Bytes downloaded.
    pub downloaded: u64,
    /// This pull unpacked the bundle (false when another pull had, or it was cached).
    pub extracted: bool,
    /// The hub it came from.
    pub hub: Option<String>,
    /// How `ofc run` starts it.
    pub start: Start,
}

/// Everything one pull task needs.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) paths: Paths,
    pub(crate) hub: Hub,
    pub(crate) cache: Cache,
    pub(crate) lock: Lockfile,
    pub(crate) opts: PullOptions,
    pub(crate) progress: Progress,
}

/// Progress bars on stderr, or nothing.
#[derive(Clone)]
pub(crate) struct Progress(Option<MultiProgress>);

impl Progress {
    pub(crate) fn new(enabled: bool) -> Self {
        if enabled && std::io::stderr().is_terminal() {
            Progress(Some(MultiProgress::with_draw_target(
                ProgressDrawTarget::stderr(),
            )))
        } else {
            Progress(None)
        }
    }

    pub(crate) fn bar(&self, total: u64, label: String) -> ProgressBar {
        match &self.0 {
            Some(m) => {
                let b = m.add(ProgressBar::new(total));
                b.set_style(
                    ProgressStyle::with_template(
                        "{msg:>30} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
                b.set_message(label);
                b
            }
            None => ProgressBar::hidden(),
        }
    }

    pub(crate) fn clear(&self) {
        if let Some(m) = &self.0 {
            let _ = m.clear();
        }
    }
}
