//! `ofc yank publisher/agent@1.2.3 [--reason TEXT] [--undo]`: yanks a version on the hub (or
//! unyanks it). A yanked version is skipped by selectors such as `@^1` and `@latest`, and stays
//! downloadable by its exact version, so existing lockfiles keep working.

use anyhow::Result;
use index_schema::hub_api::YankRequest;
use index_schema::name::{Reference, VersionSelector};
use serde_json::json;

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{ExitStatus, Output, UserError};

/// Arguments of `ofc yank`.
#[derive(Debug, clap::Args)]
pub struct YankArgs {
    /// The version: `publisher/agent@1.2.3` (an exact version).
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Why it is yanked (shown to users).
    #[arg(long, value_name = "TEXT", conflicts_with = "undo")]
    pub reason: Option<String>,

    /// Unyank the version instead.
    #[arg(long)]
    pub undo: bool,
}

/// Longest reason the hub accepts, in characters.
const MAX_REASON: usize = 1000;

/// Runs the verb.
pub fn run(args: &YankArgs, out: &mut Output) -> Result<ExitStatus> {
    let (name, version) = exact_reference(&args.reference, "yank")?;
    if let Some(r) = &args.reason
        && r.chars().count() > MAX_REASON
    {
        return Err(UserError::new(format!(
            "--reason is {} characters long; the hub keeps at most {MAX_REASON}",
            r.chars().count()
        ))
        .into());
    }
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let verb = if args.undo { "unyank" } else { "yank" };
    hub.require_token(&format!("`ofc {verb}`"))?;
    let v = version.to_string();
    let rt = hub::runtime()?;
    rt.block_on(async {
        if args.undo {
            hub.unyank(&name, &v).await
        } else {
            let req = YankRequest {
                reason: args.reason.clone(),
            };
            hub.yank(&name, &v, &req).await
        }
    })
    .map_err(|e| {
        hub::refused(
            e,
            format!("cannot {verb} {name}@{version}"),
            |he| match he.status.as_u16() {
                404 => vec![format!("`ofc info {name}` lists its versions")],
                403 => vec![format!(
                    "yanking needs the `yank` scope and the maintainer or owner role in `{}`",
                    name.publisher()
                )],
                _ => Vec::new(),
            },
        )
    })?;
    if out.json {
        out.json_value(&json!({
            "name": name.to_string(),
            "version": version.to_string(),
            "yanked": !args.undo,
            "reason": if args.undo { None } else { args.reason.clone() },
        }));
    } else if args.undo {
        out.data(&format!("unyanked {name}@{version}"));
    } else {
        out.data(&format!("yanked {name}@{version}"));
        out.status("selectors skip it now; it stays downloadable by its exact version");
    }
    Ok(ExitStatus::Success)
}

/// `publisher/agent@1.2.3`, refusing anything but an exact version on the hub ofc talks to;
/// `verb` (`yank`, `unpublish`) for the messages.
pub(crate) fn exact_reference(
    text: &str,
    verb: &str,
) -> Result<(index_schema::name::AgentName, semver::Version)> {
    let r = Reference::parse(text).map_err(|e| {
        UserError::new(format!("invalid reference `{text}`: {e}")).hint(format!(
            "give the version to {verb} as `publisher/agent@1.2.3`"
        ))
    })?;
    if let Some(host) = r.host() {
        return Err(UserError::new(format!(
            "`{text}` names the hub `{host}`; ofc {verb}s on the hub of OFC_HUB"
        ))
        .hint("drop the host and set OFC_HUB to that hub")
        .into());
    }
    match r.selector() {
        VersionSelector::Exact(v) => Ok((r.name().clone(), v.clone())),
        other => {
            let shown = match other {
                VersionSelector::Latest => "no version".to_string(),
                sel => format!("`@{sel}`, not one exact version"),
            };
            Err(UserError::new(format!("`{text}` gives {shown}"))
                .hint(format!(
                    "{verb} one exact version: `ofc {verb} {}@1.2.3`",
                    r.name()
                ))
                .hint(format!("`ofc info {}` lists its versions", r.name()))
                .into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_versions_can_be_yanked() {
        let (n, v) = exact_reference("acme/bot@1.2.3", "yank").unwrap();
        assert_eq!(
            (n.to_string(), v.to_string()),
            ("acme/bot".into(), "1.2.3".into())
        );
        assert_eq!(
            exact_reference("acme/bot@=2.0.0-rc.1", "yank")
                .unwrap()
                .1
                .to_string(),
            "2.0.0-rc.1"
        );
        for (bad, says) in [
            ("acme/bot", "gives no version"),
            ("acme/bot@latest", "gives no version"),
            ("acme/bot@^1.2", "not one exact version"),
            (
                "acme/bot@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                "not one exact version",
            ),
            ("bot@1.0.0", "invalid reference"),
        ] {
            let e = exact_reference(bad, "yank").unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
