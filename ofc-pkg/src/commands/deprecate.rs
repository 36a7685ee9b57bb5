//! `ofc deprecate publisher/agent[@range] --message TEXT [--use other/agent]` and `--undo`:
//! deprecates every version the reference selects (no `@`: every version, pre-releases
//! included; `@^1`: the versions the requirement matches; `@1.2.3`: that one) on the hub of
//! `OFC_HUB`, one request per version. Deprecated versions stay listed and pullable; `ofc pull`
//! and `ofc run` warn when they take one, naming the successor, `ofc search` marks them (and
//! hides them with `--deprecated exclude`), and each change is a `deprecate` (or `undeprecate`)
//! entry in the hub's transparency log. Versions already in the asked-for state are left alone,
//! so a repeated command changes nothing and logs nothing.

use anyhow::Result;
use index_schema::hub_api::{DeprecateRequest, VersionSummary};
use index_schema::name::{AgentName, Reference, VersionSelector};
use semver::Version;
use serde_json::json;

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{ExitStatus, Output, UserError};

/// Arguments of `ofc deprecate`.
#[derive(Debug, clap::Args)]
pub struct DeprecateArgs {
    /// `publisher/agent` (every version), `publisher/agent@RANGE` or `publisher/agent@1.2.3`.
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Why it is deprecated and what to do (shown on pull and run, one line).
    #[arg(long, value_name = "TEXT", required_unless_present = "undo")]
    pub message: Option<String>,

    /// The agent to use instead (`publisher/agent`), named in every warning.
    #[arg(long = "use", value_name = "AGENT", conflicts_with = "undo")]
    pub successor: Option<String>,

    /// Clear the deprecation instead.
    #[arg(long, conflicts_with = "message")]
    pub undo: bool,
}

/// Longest message the hub accepts, in characters.
const MAX_MESSAGE: usize = 1000;

/// Runs the verb.
pub fn run(args: &DeprecateArgs, out: &mut Output) -> Result<ExitStatus> {
    let r = Reference::parse(&args.reference).map_err(|e| {
        UserError::new(format!("invalid reference `{}`: {e}", args.reference))
            .hint("give `publisher/agent`, `publisher/agent@^1` or `publisher/agent@1.2.3`")
    })?;
    if let Some(host) = r.host() {
        return Err(UserError::new(format!(
            "`{}` names the hub `{host}`; ofc deprecates on the hub of OFC_HUB",
            args.reference
        ))
        .hint("drop the host and set OFC_HUB to that hub")
        .into());
    }
    if let Some(m) = &args.message {
        if m.trim().is_empty() {
            return Err(UserError::new("--message is empty; say why, and what to use").into());
        }
        if m.chars().count() > MAX_MESSAGE {
            return Err(UserError::new(format!(
                "--message is {} characters long; the hub keeps at most {MAX_MESSAGE}",
                m.chars().count()
            ))
            .into());
        }
        if m.chars().any(char::is_control) {
            return Err(
                UserError::new("--message must be one line without control characters").into(),
            );
        }
    }
    let successor = match &args.successor {
        None => None,
        Some(s) => {
            let n = AgentName::parse(s).map_err(|e| {
                UserError::new(format!("invalid --use `{s}`: {e}"))
                    .hint("name the successor as `publisher/agent`, without a version")
            })?;
            if &n == r.name() {
                return Err(UserError::new(format!("--use names {n} itself")).into());
            }
            Some(n.to_string())
        }
    };
    let name = r.name().clone();
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let verb = if args.undo {
        "undeprecate"
    } else {
        "deprecate"
    };
    hub.require_token(&format!("`ofc {verb}`"))?;
    let rt = hub::runtime()?;
    let info = rt.block_on(hub.agent(&name)).map_err(|e| {
        hub::refused(e, format!("cannot {verb} {}", args.reference), |_| {
            Vec::new()
        })
    })?;
    let chosen = select(&info.versions, r.selector());
    if chosen.is_empty() {
        let listed: Vec<&str> = info.versions.iter().map(|v| v.version.as_str()).collect();
        return Err(
            UserError::new(format!("no version of {name} matches `{}`", args.reference))
                .hint(if listed.is_empty() {
                    "the agent has no versions".to_string()
                } else {
                    format!("available: {}", listed.join(", "))
                })
                .into(),
        );
    }
    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    for v in chosen {
        let already = if args.undo {
            v.deprecated.is_none()
        } else {
            v.deprecated == args.message && v.deprecated_successor == successor
        };
        if already {
            unchanged.push(v.version.clone());
            continue;
        }
        rt.block_on(async {
            if args.undo {
                hub.undeprecate(&name, &v.version).await
            } else {
                let req = DeprecateRequest {
                    message: args.message.clone().unwrap_or_default(),
                    successor: successor.clone(),
                };
                hub.deprecate(&name, &v.version, &req).await
            }
        })
        .map_err(|e| {
            let done = if changed.is_empty() {
                String::new()
            } else {
                format!(" ({} done before it: {})", verb, changed.join(", "))
            };
            hub::refused(
                e,
                format!("cannot {verb} {name}@{}{done}", v.version),
                |he| match he.status.as_u16() {
                    403 => vec![format!(
                        "deprecating needs the `yank` scope and the maintainer or owner role in `{}`",
                        name.publisher()
                    )],
                    _ => Vec::new(),
                },
            )
        })?;
        changed.push(v.version.clone());
    }
    if out.json {
        out.json_value(&json!({
            "name": name.to_string(),
            "deprecated": !args.undo,
            "message": args.message,
            "successor": successor,
            "changed": changed,
            "unchanged": unchanged,
        }));
        return Ok(ExitStatus::Success);
    }
    let past = if args.undo {
        "undeprecated"
    } else {
        "deprecated"
    };
    for v in &changed {
        out.data(&format!("{past} {name}@{v}"));
    }
    if !unchanged.is_empty() {
        out.status(&format!(
            "{} already {past}: {}",
            if unchanged.len() == 1 {
                "1 version was"
            } else {
                "these versions were"
            },
            unchanged.join(", ")
        ));
    }
    if !args.undo && !changed.is_empty() {
        out.status("pulls and runs of these versions now warn; `ofc deprecate --undo` clears it");
    }
    Ok(ExitStatus::Success)
}

/// The versions a selector names: every version for none, the matching ones for a range
/// (pre-releases only as semver requirements match them), the one for an exact version or
/// digest.
fn select<'a>(versions: &'a [VersionSummary], sel: &VersionSelector) -> Vec<&'a VersionSummary> {
    versions
        .iter()
        .filter(|v| match sel {
            VersionSelector::Latest => true,
            VersionSelector::Digest(d) => v.manifest_digest == d.to_string(),
            s => Version::parse(&v.version).is_ok_and(|p| s.matches_version(&p)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(v: &str) -> VersionSummary {
        VersionSummary {
            version: v.into(),
            manifest_digest: index_schema::name::Digest::of(v.as_bytes()).to_string(),
            published_at: 0,
            yanked: false,
            yank_reason: None,
            deprecated: None,
            deprecated_successor: None,
            key_id: String::new(),
            key_revoked_at: None,
            downloads: 0,
        }
    }

    #[test]
    fn references_select_every_matching_version() {
        let all: Vec<VersionSummary> = ["0.9.0", "1.0.0", "1.1.0", "2.0.0-rc.1", "2.0.0"]
            .iter()
            .map(|v| summary(v))
            .collect();
        let pick = |r: &str| -> Vec<String> {
            let r = Reference::parse(r).unwrap();
            select(&all, r.selector())
                .into_iter()
                .map(|v| v.version.clone())
                .collect()
        };
        assert_eq!(pick("a/b").len(), 5);
        assert_eq!(pick("a/b@^1"), ["1.0.0", "1.1.0"]);
        assert_eq!(pick("a/b@1.1.0"), ["1.1.0"]);
        assert_eq!(pick("a/b@<1"), ["0.9.0"]);
        assert_eq!(pick(&format!("a/b@{}", all[4].manifest_digest)), ["2.0.0"]);
        assert!(pick("a/b@^3").is_empty());
    }
}
