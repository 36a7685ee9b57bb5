//! `ofc list`: the agents and bundles in the local cache.

use anyhow::Result;
use index_schema::manifest::Source;
use serde_json::json;

use crate::cache::Cache;
use crate::config::Paths;
use crate::output::{ExitStatus, Output};

/// Runs the verb.
pub fn run(out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let cache = Cache::new(&paths.cache);
    let listing = cache.list()?;
    let bundle_of = |s: &Source| match s {
        Source::Bundle(b) => Some(b.digest),
        _ => None,
    };
    let used: Vec<_> = listing
        .manifests
        .iter()
        .filter_map(|m| bundle_of(&m.manifest.source))
        .collect();
    let loose: Vec<_> = listing
        .bundles
        .iter()
        .filter(|b| !used.contains(&b.digest))
        .collect();
    if out.json {
        let agents: Vec<_> = listing
            .manifests
            .iter()
            .map(|m| {
                let bundle = bundle_of(&m.manifest.source);
                json!({
                    "name": m.manifest.name.to_string(),
                    "version": m.manifest.version.to_string(),
                    "manifestDigest": m.digest.to_string(),
                    "source": m.manifest.source.kind(),
                    "bundleDigest": bundle.map(|d| d.to_string()),
                    "bundleCached": bundle.map(|d| listing.bundles.iter().any(|b| b.digest == d)),
                    "environment": cache.environment(&m.digest).map(|(_, p, ok)| json!({
                        "path": p.display().to_string(),
                        "complete": ok,
                    })),
                })
            })
            .collect();
        let bundles: Vec<_> = listing
            .bundles
            .iter()
            .map(|b| {
                json!({
                    "digest": b.digest.to_string(),
                    "size": b.size,
                    "used": used.contains(&b.digest),
                })
            })
            .collect();
        out.json_value(&json!({ "agents": agents, "bundles": bundles }));
        return Ok(ExitStatus::Success);
    }
    if listing.manifests.is_empty() && listing.bundles.is_empty() {
        out.status(&format!("the cache at {} is empty", paths.cache.display()));
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<[String; 4]> = listing
        .manifests
        .iter()
        .map(|m| {
            let source = match bundle_of(&m.manifest.source) {
                Some(d) => {
                    let cached = listing.bundles.iter().find(|b| b.digest == d);
                    match cached {
                        Some(b) => format!("bundle {} ({})", short(&d), human_size(b.size)),
                        None => format!("bundle {} (not cached)", short(&d)),
                    }
                }
                None => match cache.environment(&m.digest) {
                    Some((kind, p, true)) => {
                        let key = p
                            .file_name()
                            .map(|n| n.to_string_lossy().chars().take(12).collect::<String>())
                            .unwrap_or_default();
                        let what = if kind == "docker" { "image" } else { "env" };
                        format!("{kind} {what} {key}")
                    }
                    Some(("docker", _, false)) => "docker (image not cached)".to_string(),
                    Some((kind, _, false)) => format!("{kind} (env incomplete)"),
                    None => m.manifest.source.kind().to_string(),
                },
            };
            [
                m.manifest.name.to_string(),
                m.manifest.version.to_string(),
                short(&m.digest),
                source,
            ]
        })
        .collect();
    if !rows.is_empty() {
        let header = [
            "NAME".to_string(),
            "VERSION".into(),
            "MANIFEST".into(),
            "SOURCE".into(),
        ];
        let widths: Vec<usize> = (0..3)
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([header[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in std::iter::once(&header).chain(&rows) {
            out.data(&format!(
                "{:w0$}  {:w1$}  {:w2$}  {}",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            ));
        }
    }
    if !loose.is_empty() {
        if !rows.is_empty() {
            out.data("");
        }
        out.data("bundles no cached agent uses (`ofc gc` removes them):");
        for b in loose {
            out.data(&format!("  {}  {}", b.digest, human_size(b.size)));
        }
    }
    Ok(ExitStatus::Success)
}

/// `sha256:` and the first 12 hex digits.
pub fn short(d: &index_schema::name::Digest) -> String {
    format!("sha256:{}", &d.hex()[..12])
}

/// Bytes as `812 B`, `1.5 KiB`, `3.2 MiB`, `1.1 GiB`.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
