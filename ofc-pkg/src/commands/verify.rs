//! `ofc verify`: re-hashes every cache entry and reports the damaged ones.

use anyhow::Result;
use serde_json::json;

use crate::cache::Cache;
use crate::config::Paths;
use crate::output::{ExitStatus, Output};

/// Runs the verb.
pub fn run(out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let cache = Cache::new(&paths.cache);
    let (checked, problems) = cache.verify()?;
    if out.json {
        let list: Vec<_> = problems
            .iter()
            .map(|p| json!({ "kind": p.kind, "entry": p.entry, "reason": p.reason }))
            .collect();
        out.json_value(&json!({ "ok": problems.is_empty(), "checked": checked, "corrupt": list }));
    } else {
        for p in &problems {
            out.status(&format!(
                "error: corrupt {} {}: {}",
                p.kind, p.entry, p.reason
            ));
        }
        if problems.is_empty() {
            out.status(&format!(
                "checked {checked} cache entr{}: all intact",
                if checked == 1 { "y" } else { "ies" }
            ));
        } else {
            out.status(&format!(
                "checked {checked} cache entr{}: {} corrupt",
                if checked == 1 { "y" } else { "ies" },
                problems.len()
            ));
            for p in &problems {
                out.status(&format!(
                    "hint: remove it with `ofc rm {}`, then pull the agent again",
                    p.entry
                ));
            }
        }
    }
    Ok(if problems.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
