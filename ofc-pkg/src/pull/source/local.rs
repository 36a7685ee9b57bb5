//! `local`: a folder or agent file used in place. No hub and no signed manifest: the folder is
//! validated as publish would, and the lockfile records the digest of its agent file.

use std::fs;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use index_schema::lockfile::LockedSource;
use index_schema::name::Digest;

use crate::output::UserError;
use crate::pull::context::{Origin, Pulled};
use crate::start::Start;

/// A local folder (or agent file) used in place: validated, and recorded with the digest of its
/// agent file.
pub(crate) fn pull_local(path: &Path) -> Result<Pulled> {
    let (dir, file) = if path.is_dir() {
        let (f, _) = crate::package::find_entrypoint(path)?;
        (path.to_path_buf(), f)
    } else if path.is_file() {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        // The manifest is built from the folder's entrypoint: it must be this file.
        let (entry, _) = crate::package::find_entrypoint(&dir)?;
        let same = match (entry.canonicalize(), path.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            bail!(
                UserError::new(format!(
                    "{} is not the agent file of its folder ({} is)",
                    path.display(),
                    entry.display()
                ))
                .hint("give the folder, or move the agent into a folder of its own")
            );
        }
        (dir, path.to_path_buf())
    } else {
        bail!(
            UserError::new(format!("{} does not exist", path.display()))
                .hint("give a folder holding an agent.yaml or AgentCard")
        );
    };
    // Build the manifest as publish would (the signature is thrown away; nothing is uploaded).
    let throwaway = index_schema::envelope::SecretKey::from_seed(&[7; 32]);
    let prepared = crate::package::prepare(&dir, None, None, |m| {
        index_schema::envelope::sign_manifest(m, &throwaway)
    })
    .with_context(|| format!("{} is not a usable local agent", path.display()))?;
    let bytes = fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let shown = file.to_string_lossy().into_owned();
    Ok(Pulled {
        name: prepared.manifest.name.clone(),
        version: prepared.manifest.version.clone(),
        manifest_digest: None,
        key_id: None,
        pinned_now: false,
        source: LockedSource::Local {
            path: shown,
            digest: Some(Digest::of(&bytes)),
        },
        start: Start::AgentFile {
            file: file.clone(),
            dir: dir.clone(),
        },
        path: Some(dir),
        origin: Origin::Local,
        downloaded: 0,
        extracted: false,
        hub: None,
    })
}
