//! `ofc rm TARGET...`: removes agents (`publisher/agent[@version]`) or entries (`sha256:…`) from
//! the local cache. A bundle goes with the last cached agent that uses it.

use anyhow::{Result, bail};
use index_schema::name::{AgentName, Digest};
use serde_json::json;

use crate::cache::Cache;
use crate::commands::gc::busy_hint;
use crate::config::Paths;
use crate::output::{ExitStatus, Output, UserError};

/// Arguments of `ofc rm`.
#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// What to remove: `publisher/agent` (every cached version), `publisher/agent@1.2.3`, or a
    /// manifest or bundle digest `sha256:<hex>`.
    #[arg(required = true, value_name = "TARGET")]
    pub targets: Vec<String>,
}

/// Runs the verb.
pub fn run(args: &RmArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let cache = Cache::new(&paths.cache);
    let mut removed: Vec<serde_json::Value> = Vec::new();
    let mut lines = Vec::new();
    for target in &args.targets {
        if target.starts_with("sha256:") {
            let digest = Digest::parse(target).map_err(|e| {
                UserError::new(format!("invalid digest `{target}`: {e}"))
                    .hint("a digest looks like `sha256:` followed by 64 lowercase hex digits")
            })?;
            let manifest_cached = cache.manifest(&digest).is_ok()
                || paths
                    .cache
                    .join("manifests-v1/sha256")
                    .join(format!("{}.json", digest.hex()))
                    .exists();
            if manifest_cached {
                let with = cache.remove_manifest(&digest).map_err(busy_hint)?;
                lines.push(format!("removed manifest {digest}"));
                removed.push(json!({"kind": "manifest", "digest": digest.to_string()}));
                also_removed(with, &mut lines, &mut removed);
            } else if cache.remove_bundle(&digest).map_err(busy_hint)? {
                lines.push(format!("removed bundle {digest}"));
                removed.push(json!({"kind": "bundle", "digest": digest.to_string()}));
            } else if cache.remove_image(&digest).map_err(busy_hint)? {
                lines.push(format!("removed image {digest}"));
                removed.push(json!({"kind": "image", "digest": digest.to_string()}));
            } else {
                bail!(
                    UserError::new(format!("{digest} is not in the cache"))
                        .hint("see what is cached with `ofc list`")
                );
            }
            continue;
        }
        let (name, version) = match target.split_once('@') {
            Some((n, v)) => (n, Some(v)),
            None => (target.as_str(), None),
        };
        let name = AgentName::parse(name).map_err(|e| {
            UserError::new(format!("invalid target `{target}`: {e}"))
                .hint("give `publisher/agent`, `publisher/agent@1.2.3` or `sha256:<hex>`")
        })?;
        let matching: Vec<_> = cache
            .list()?
            .manifests
            .into_iter()
            .filter(|m| m.manifest.name == name)
            .filter(|m| version.is_none_or(|v| m.manifest.version.to_string() == v))
            .collect();
        if matching.is_empty() {
            bail!(
                UserError::new(format!("{target} is not in the cache"))
                    .hint("see what is cached with `ofc list`")
            );
        }
        for m in matching {
            let with = cache.remove_manifest(&m.digest).map_err(busy_hint)?;
            lines.push(format!(
                "removed {}@{} ({})",
                m.manifest.name, m.manifest.version, m.digest
            ));
            removed.push(json!({
                "kind": "manifest",
                "name": m.manifest.name.to_string(),
                "version": m.manifest.version.to_string(),
                "digest": m.digest.to_string(),
            }));
            also_removed(with, &mut lines, &mut removed);
        }
    }
    if out.json {
        out.json_value(&json!({ "removed": removed }));
    } else {
        for l in lines {
            out.data(&l);
        }
    }
    Ok(ExitStatus::Success)
}

/// Reports the bundle or image that went with a manifest.
fn also_removed(
    (bundle, image): (Option<Digest>, Option<Digest>),
    lines: &mut Vec<String>,
    removed: &mut Vec<serde_json::Value>,
) {
    if let Some(b) = bundle {
        lines.push(format!("removed bundle {b}"));
        removed.push(json!({"kind": "bundle", "digest": b.to_string()}));
    }
    if let Some(i) = image {
        lines.push(format!("removed image {i}"));
        removed.push(json!({"kind": "image", "digest": i.to_string()}));
    }
}
