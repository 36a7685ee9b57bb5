//! One file per kind of agent source. Each kind says, behind [`Source`], how a verified
//! manifest's source is found in the cache (no network), how it is fetched, verified and
//! installed, what the lockfile records of it and how the agent starts.
//!
//! `local` agents have no signed manifest: they are read in place by [`local::pull_local`].

use index_schema::manifest::Source as ManifestSource;

mod bundle;
mod docker;
mod kind;
pub(crate) mod local;
mod npm;
mod pip;
mod remote;

pub(crate) use kind::{Installed, Job, Source};

/// The implementation for a manifest's source.
pub(crate) fn of(s: &ManifestSource) -> Box<dyn Source> {
    match s {
        ManifestSource::Bundle(_) => Box::new(bundle::Bundle),
        ManifestSource::Remote(_) => Box::new(remote::Remote),
        ManifestSource::Pip(_) => Box::new(pip::Pip),
        ManifestSource::Npm(_) => Box::new(npm::Npm),
        ManifestSource::Docker(_) => Box::new(docker::Docker),
    }
}
