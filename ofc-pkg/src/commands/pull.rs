//! `ofc pull REF...`: resolve, verify and install agents into the cache, and record them in
//! the project's `ofc.lock` (see [`crate::pull`]).

use std::path::PathBuf;

use anyhow::Result;
use index_schema::lockfile::LockedSource;
use serde_json::json;

use crate::config::Paths;
use crate::hub::Hub;
use crate::output::{ExitStatus, Output};
use crate::project;
use crate::pull::{self, Origin, PullOptions, Request};

/// Arguments of `ofc pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// What to pull: `publisher/agent`, `publisher/agent@^1.2`, `publisher/agent@1.2.3`,
    /// `publisher/agent@sha256:<hex>`, or a local folder (`./path`).
    #[arg(required = true, value_name = "REF")]
    pub refs: Vec<String>,

    /// Use only the cache (and the lockfile); never touch the network.
    #[arg(long)]
    pub offline: bool,

    /// Fail instead of changing ofc.lock.
    #[arg(long)]
    pub locked: bool,

    /// The lockfile to read and update (default: the project's `ofc.lock`, found from the
    /// working directory up next to an `ofc.lock` or `blueprint.yaml`).
    #[arg(long, value_name = "PATH")]
    pub lockfile: Option<PathBuf>,

    /// pip agents: allow source distributions. Building one runs code from the package at
    /// install time, so by default only wheels are installed.
    #[arg(long)]
    pub allow_sdist: bool,

    /// npm agents: run the packages' install scripts. They run code from the package at
    /// install time, so by default a package that has them is refused.
    #[arg(long)]
    pub allow_install_scripts: bool,

    /// Take an older version when the one pulled before is now marked yanked. The yanked flag
    /// is not signed, so by default this is refused as a possible rollback.
    #[arg(long)]
    pub allow_yanked_rollback: bool,
}

/// Runs the verb.
pub fn run(args: &PullArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let requests = args
        .refs
        .iter()
        .map(|r| Request::parse(r))
        .collect::<Result<Vec<_>>>()?;
    let lockfile = match &args.lockfile {
        Some(p) => Some(p.clone()),
        None => project::find_lockfile(&std::env::current_dir()?),
    };
    if let Some(p) = &lockfile {
        // Fail now, not after the downloads, when the lockfile cannot be written there.
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(d) = dir
            && !d.is_dir()
        {
            return Err(crate::output::UserError::new(format!(
                "cannot write {}: {} is not a directory",
                p.display(),
                d.display()
            ))
            .into());
        }
    }
    let hub = Hub::from_env(&paths)?;
    let opts = PullOptions {
        offline: args.offline,
        locked: args.locked,
        lockfile: lockfile.clone(),
        progress: !out.json,
        limits: pull::limits_from_env()?,
        allow_sdist: args.allow_sdist,
        allow_install_scripts: args.allow_install_scripts,
        allow_yanked_rollback: args.allow_yanked_rollback,
    };
    let report = pull::pull(&paths, &hub, &requests, &opts)?;

    if out.json {
        out.json_value(&json!({
            "pulled": report.pulled.iter().map(pull::summary).collect::<Vec<_>>(),
            "lockfile": lockfile.as_ref().map(|p| p.display().to_string()),
            "lockfileUpdated": report.lockfile_written.is_some(),
        }));
        return Ok(ExitStatus::Success);
    }
    let mut rows = Vec::new();
    for p in &report.pulled {
        if p.pinned_now
            && let (Some(k), Some(h)) = (&p.key_id, &p.hub)
        {
            out.status(&format!(
                "pinned key {k} for publisher `{}` on {h} (first use)",
                p.name.publisher()
            ));
        }
        let what = match &p.source {
            LockedSource::Bundle { digest } => format!("bundle {}", short(&digest.to_string())),
            LockedSource::Remote { endpoint, .. } => format!("remote {endpoint}"),
            LockedSource::Local { path, .. } => format!("local {path}"),
            LockedSource::Docker { digest, .. } => {
                format!("docker image {}", short(&digest.to_string()))
            }
            other => other.kind().to_string(),
        };
        let origin = match p.origin {
            Origin::Hub if p.downloaded > 0 => format!("downloaded {}", human_bytes(p.downloaded)),
            Origin::Hub => "verified; files already cached".to_string(),
            Origin::Cache => "cached".to_string(),
            Origin::Local => "used in place".to_string(),
        };
        rows.push([p.name.to_string(), p.version.to_string(), what, origin]);
    }
    let mut w = [4, 7, 6, 0];
    for r in &rows {
        for i in 0..3 {
            w[i] = w[i].max(r[i].chars().count());
        }
    }
    out.data(&format!(
        "{:<w0$}  {:<w1$}  {:<w2$}  FROM",
        "NAME",
        "VERSION",
        "SOURCE",
        w0 = w[0],
        w1 = w[1],
        w2 = w[2]
    ));
    for r in &rows {
        out.data(&format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        ));
    }
    match (&report.lockfile_written, &lockfile) {
        (Some(p), _) => out.status(&format!("updated {}", p.display())),
        (None, Some(p)) => out.status(&format!("{} is up to date", p.display())),
        (None, None) => out.status(
            "no ofc.lock written: not in a project (create one with `touch ofc.lock` or pass --lockfile)",
        ),
    }
    Ok(ExitStatus::Success)
}

fn short(digest: &str) -> String {
    digest.chars().take("sha256:".len() + 12).collect()
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(super::human_bytes(10), "10 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(10 * 1024 * 1024), "10.0 MiB");
    }
}
