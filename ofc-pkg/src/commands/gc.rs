//! `ofc gc`: removes cached bundles, environments and container images no cached agent uses,
//! and leftover temporary entries.

use anyhow::Result;
use serde_json::json;

use crate::cache::{Cache, CacheError};
use crate::commands::list::human_size;
use crate::config::Paths;
use crate::output::{ExitStatus, Output, UserError};

/// Runs the verb.
pub fn run(out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let cache = Cache::new(&paths.cache);
    let report = cache.gc().map_err(busy_hint)?;
    if out.json {
        out.json_value(&json!({
            "removedBundles": report.bundles.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "removedTemporaries": report.temporaries,
            "removedEnvironments": report.environments,
            "removedImages": report.images.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "freedBytes": report.bytes,
        }));
    } else {
        for d in &report.bundles {
            out.data(&format!("removed bundle {d}"));
        }
        for d in &report.images {
            out.data(&format!("removed image {d}"));
        }
        out.status(&format!(
            "removed {} unused bundle{}, {} unused image{}, {} unused environment entr{} and {} temporary entr{}, freed {}",
            report.bundles.len(),
            if report.bundles.len() == 1 { "" } else { "s" },
            report.images.len(),
            if report.images.len() == 1 { "" } else { "s" },
            report.environments,
            if report.environments == 1 { "y" } else { "ies" },
            report.temporaries,
            if report.temporaries == 1 { "y" } else { "ies" },
            human_size(report.bytes)
        ));
    }
    Ok(ExitStatus::Success)
}

/// Adds a hint to [`CacheError::Busy`].
pub fn busy_hint(e: CacheError) -> anyhow::Error {
    if matches!(e, CacheError::Busy(_)) {
        let msg = e.to_string();
        return UserError::new(msg)
            .hint("wait for the other `ofc` (a pull, install or run) to finish, then try again")
            .into();
    }
    e.into()
}
