//! One file per kind of agent source. Each kind says, behind [`Source`], how a verified
//! manifest's source is found in the cache (no network), how it is fetched, verified and
//! installed, what the lockfile records of it and how the agent starts.
//!
//! `local` agents have no signed manifest: they are read in place by [`local::pull_local`].

use std::path::PathBuf;

use anyhow::Result;
use async_trait::async_trait;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::{Manifest, Source as ManifestSource};
use index_schema::name::{AgentName, Digest};

use super::Ctx;
use crate::hub::Hub;
use crate::start::Start;

mod bundle;
mod docker;
pub(super) mod local;
mod npm;
mod pip;
mod remote;

/// The verified manifest being pulled, and where it comes from.
pub(super) struct Job<'a> {
    /// The hub the manifest came from.
    pub hub: &'a Hub,
    /// The agent.
    pub name: &'a AgentName,
    /// The verified manifest.
    pub manifest: &'a Manifest,
    /// Its digest.
    pub digest: &'a Digest,
    /// What the lockfile recorded for this agent's source, if anything.
    pub locked: Option<&'a LockedSource>,
}

/// What a source installed.
pub(super) struct Installed {
    /// What the lockfile records.
    pub source: LockedSource,
    /// The installed files, when the kind has any.
    pub path: Option<PathBuf>,
    /// Bytes downloaded.
    pub downloaded: u64,
    /// This pull installed the files (false when they were there already).
    pub extracted: bool,
    /// How `ofc run` starts it.
    pub start: Start,
}

/// One kind of source: resolve → fetch → verify → install → lock entry → how to start it.
#[async_trait]
pub(super) trait Source: Send + Sync {
    /// What the cache holds for `job`, without the network: `Ok(Err(why))` when something is
    /// missing or does not verify (the reason shows in `--offline` errors).
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>>;

    /// Fetches, verifies and installs `job`'s source. Nothing half-installed stays visible.
    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed>;
}

/// The implementation for a manifest's source.
pub(super) fn of(s: &ManifestSource) -> Box<dyn Source> {
    match s {
        ManifestSource::Bundle(_) => Box::new(bundle::Bundle),
        ManifestSource::Remote(_) => Box::new(remote::Remote),
        ManifestSource::Pip(_) => Box::new(pip::Pip),
        ManifestSource::Npm(_) => Box::new(npm::Npm),
        ManifestSource::Docker(_) => Box::new(docker::Docker),
    }
}
