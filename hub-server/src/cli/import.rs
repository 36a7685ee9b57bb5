//! `ofc-hub import`: agents from other registries, through the core's importer.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Subcommand;
use hub_core::admin::import_mcp_registry;
use hub_core::import::{ImportReport, OFFICIAL_REGISTRY, for_terminal as t, read_dump};
use hub_core::start::Role;

use super::output::out;
use super::settings::{Global, config};

#[derive(Subcommand, Debug)]
pub(crate) enum ImportCommand {
    /// A dump of the MCP Registry's list API (`GET /v0/servers` responses, `{"servers": [...]}`):
    /// each server becomes a signed version in the namespace; broken entries are reported (index,
    /// name, field, line) and the rest imported; a rerun changes nothing.
    McpRegistry {
        /// The dump (JSON).
        file: PathBuf,
        /// The namespace to import into.
        #[arg(long, default_value = "mcp-registry")]
        namespace: String,
        /// Secret key file (as `ofc keygen` writes it) of a key registered for the namespace.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The member who publishes (default: the namespace's owner).
        #[arg(long = "as", value_name = "USER")]
        as_user: Option<String>,
        /// The registry the dump comes from; each manifest's origin points at its entry there.
        #[arg(long, default_value = OFFICIAL_REGISTRY)]
        registry_url: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs an `ofc-hub import` verb.
pub(crate) async fn run(global: &Global, cmd: ImportCommand) -> anyhow::Result<()> {
    let ImportCommand::McpRegistry {
        file,
        namespace,
        key,
        as_user,
        registry_url,
        json,
    } = cmd;
    let text = read_dump(&file)?;
    let key_text =
        std::fs::read_to_string(&key).with_context(|| format!("cannot read {}", key.display()))?;
    let key = index_schema::envelope::SecretKey::from_secret_text(&key_text)
        .with_context(|| format!("{} is not an ofc secret key", key.display()))?;
    let cfg = config(global, None)?;
    // No search follower: a serving hub holds the index; it follows the outbox.
    let hub = hub_server::build_state_for(cfg, Role::Command).await?.core;
    let r = import_mcp_registry(
        &hub,
        &text,
        &namespace,
        &key,
        as_user.as_deref(),
        &registry_url,
    )
    .await
    .with_context(|| format!("{} cannot be imported", file.display()));
    hub.store.db().close().await;
    let r = r?;
    if json {
        out(serde_json::to_string(&r)?);
    } else {
        print_import(&file, &r);
    }
    anyhow::ensure!(
        r.is_ok(),
        "{} of the entries could not be imported",
        r.failed.len()
    );
    Ok(())
}

fn print_import(file: &Path, r: &ImportReport) {
    // Names, reasons and messages come from the dump: escaped before they reach a terminal.
    for i in &r.imported {
        out(format!(
            "imported  {}@{}  ({})",
            t(&i.agent),
            t(&i.version),
            t(&i.server)
        ));
    }
    for i in &r.unchanged {
        out(format!(
            "unchanged {}@{}  ({})",
            t(&i.agent),
            t(&i.version),
            t(&i.server)
        ));
    }
    for s in &r.skipped {
        out(format!(
            "skipped   servers[{}] {}: {}",
            s.index,
            t(s.server.as_deref().unwrap_or("(no name)")),
            t(&s.reason)
        ));
    }
    for f in &r.failed {
        for p in &f.problems {
            let line = p.line.map(|l| format!("{l}:")).unwrap_or_default();
            out(format!(
                "failed    servers[{}] {}: {}:{line} {}: {}",
                f.index,
                t(f.server.as_deref().unwrap_or("(no name)")),
                t(&file.display().to_string()),
                if p.field.is_empty() {
                    "(entry)".to_owned()
                } else {
                    t(&p.field)
                },
                t(&p.message)
            ));
        }
    }
    out(format!(
        "{} imported, {} unchanged, {} skipped, {} failed",
        r.imported.len(),
        r.unchanged.len(),
        r.skipped.len(),
        r.failed.len()
    ));
}
