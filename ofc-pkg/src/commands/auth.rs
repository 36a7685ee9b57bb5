//! `ofc auth NAME [-f blueprint] [--force]`: authorizes the blueprint's furniture NAME, an MCP
//! server reached by `url` with an `oauth:` block. For `authorization_code` a person consents
//! (the URL is printed on stderr; the code arrives at a loopback callback, or as the callback
//! address pasted on stdin) and the token is kept in its file for `ofc run`; a token already
//! stored is used (and refreshed) unless `--force`. For `client_credentials` it checks that ofc
//! gets a token and the server takes it. Either way it connects and lists the server's tools.

use std::path::PathBuf;

use anyhow::Result;
use runtime::furniture::oauth::Consent;
use runtime::furniture::{Furniture, FurnitureSettings};
use serde_json::json;

use crate::output::{ExitStatus, Output, UserError};
use crate::run::furniture::oauth_settings;
use crate::run::plan;

/// Arguments of `ofc auth`.
#[derive(Debug, clap::Args)]
pub struct AuthArgs {
    /// The furniture's `name` in the blueprint.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The blueprint.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "PATH",
        default_value = "blueprint.yaml"
    )]
    pub file: PathBuf,
    /// Ask anew even when a token is stored (after a change of scopes, say).
    #[arg(long)]
    pub force: bool,
}

/// Runs `ofc auth`.
pub fn run(args: &AuthArgs, out: &mut Output) -> Result<ExitStatus> {
    let loaded = plan::load(&args.file).map_err(UserError::new)?;
    plan::say_warnings(out, &loaded.warnings);
    let bp = &loaded.blueprint;
    let Some(entry) = bp.furniture.iter().find(|f| f.name == args.name) else {
        let names: Vec<&str> = bp.furniture.iter().map(|f| f.name.as_str()).collect();
        return Err(UserError::new(format!(
            "{} has no furniture `{}`",
            args.file.display(),
            args.name
        ))
        .hint(if names.is_empty() {
            "it has no furniture".to_owned()
        } else {
            format!("its furniture: {}", names.join(", "))
        })
        .into());
    };
    let Some(oauth) = &entry.oauth else {
        return Err(UserError::new(format!(
            "furniture `{}` has no `oauth:` block: there is nothing to authorize",
            args.name
        ))
        .hint("`ofc auth` is for an MCP server reached by `url` that wants an OAuth token")
        .into());
    };
    let mut oauth_settings = oauth_settings(&loaded, Consent::PersonPasting)?;
    oauth_settings.force = args.force;
    let settings = FurnitureSettings {
        working_dir: Some(loaded.dir.clone()),
        oauth: oauth_settings,
        ..FurnitureSettings::default()
    };
    let rt = crate::hub::runtime()?;
    let (tools, outcome) = rt.block_on(async {
        let furniture = Furniture::start(entry, &settings)
            .await
            .map_err(|e| UserError::new(e.to_string()))?;
        let tools = furniture.tools().len();
        let outcome = furniture.oauth_outcome();
        furniture.shutdown().await;
        Ok::<_, UserError>((tools, outcome))
    })?;
    let consented = outcome.as_ref().is_some_and(|o| o.consented);
    let file = outcome.and_then(|o| o.token_file);
    let name = &args.name;
    if out.json {
        out.json_value(&json!({
            "furniture": name,
            "grant": oauth.grant.as_str(),
            "tools": tools,
            "authorized_now": consented,
            "token_file": file.as_ref().map(|f| f.display().to_string()),
        }));
        return Ok(ExitStatus::Success);
    }
    out.data(&match (&file, consented) {
        (Some(f), true) => format!(
            "{name} is authorized ({tools} tools); token in {}",
            f.display()
        ),
        (Some(f), false) => format!(
            "{name} is already authorized ({tools} tools; token in {}); --force asks anew",
            f.display()
        ),
        (None, _) => format!(
            "{name} is authorized ({tools} tools); with client_credentials ofc fetches the \
             token itself and keeps it in memory"
        ),
    });
    Ok(ExitStatus::Success)
}
