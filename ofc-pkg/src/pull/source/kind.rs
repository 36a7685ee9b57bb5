//! What every kind of source implements ([`Source`]): the verified manifest it is given
//! ([`Job`]) and what it installed ([`Installed`]).

use std::path::PathBuf;

use anyhow::Result;
use async_trait::async_trait;
use index_schema::lockfile::LockedSource;
use index_schema::manifest::Manifest;
use index_schema::name::{AgentName, Digest};

use crate::hub::Hub;
use crate::pull::context::Ctx;
use crate::start::Start;

/// The verified manifest being pulled, and where it comes from.
pub(crate) struct Job<'a> {
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
pub(crate) struct Installed {
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
pub(crate) trait Source: Send + Sync {
    /// What the cache holds for `job`, without the network: `Ok(Err(why))` when something is
    /// missing or does not verify (the reason shows in `--offline` errors).
    fn cached(&self, cx: &Ctx, job: &Job<'_>) -> Result<Result<Installed, String>>;

    /// Fetches, verifies and installs `job`'s source. Nothing half-installed stays visible.
    async fn install(&self, cx: &Ctx, job: &Job<'_>) -> Result<Installed>;
}
