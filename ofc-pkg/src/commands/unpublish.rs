//! `ofc unpublish publisher/agent@1.2.3`: removes a version the publisher regrets, while the
//! hub still allows it (by default within 72 hours of its publish and below 100 counted
//! downloads; the hub's `unpublish_window_secs` and `unpublish_max_downloads`). The version
//! leaves a tombstone: its URLs answer 410, the hub's transparency log gets a `remove` entry
//! (name, version, digest, reason class `unpublished`) that `ofc audit` shows, and its number
//! can never be published again. Past the window or the limit the hub refuses, and only an
//! operator's takedown removes it; `ofc yank` and `ofc deprecate` remain.

use anyhow::Result;
use index_schema::hub_api::ErrorCode;
use serde_json::json;

use crate::commands::yank::exact_reference;
use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::output::{ExitStatus, Output};

/// Arguments of `ofc unpublish`.
#[derive(Debug, clap::Args)]
pub struct UnpublishArgs {
    /// The version: `publisher/agent@1.2.3` (an exact version).
    #[arg(value_name = "REF")]
    pub reference: String,
}

/// Runs the verb.
pub fn run(args: &UnpublishArgs, out: &mut Output) -> Result<ExitStatus> {
    let (name, version) = exact_reference(&args.reference, "unpublish")?;
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    hub.require_token("`ofc unpublish`")?;
    let v = version.to_string();
    let rt = hub::runtime()?;
    rt.block_on(hub.unpublish(&name, &v)).map_err(|e| {
        hub::refused(
            e,
            format!("cannot unpublish {name}@{version}"),
            |he| match (he.status.as_u16(), &he.code) {
                (403, Some(ErrorCode::UnpublishRefused)) => vec![
                    format!("`ofc yank {name}@{version}` keeps selectors off it"),
                    format!(
                        "`ofc deprecate {name}@{version} --message …` warns everyone who pulls it"
                    ),
                ],
                (403, _) => vec![format!(
                    "unpublishing needs the `yank` scope and the maintainer or owner role in `{}`",
                    name.publisher()
                )],
                (404, _) => vec![format!("`ofc info {name}` lists its versions")],
                _ => Vec::new(),
            },
        )
    })?;
    if out.json {
        out.json_value(&json!({
            "name": name.to_string(),
            "version": v,
            "unpublished": true,
        }));
    } else {
        out.data(&format!("unpublished {name}@{version}"));
        out.status(
            "its number can never be published again; `ofc audit` shows its tombstone in the log",
        );
    }
    Ok(ExitStatus::Success)
}
