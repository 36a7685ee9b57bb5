//! The blueprint's furniture and workstations for `ofc run`, and the grants on them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use index_schema::name::AgentHandle;
use index_schema::{Diagnostics, FieldPath};
use runtime::agent::SpawnHook;
use runtime::furniture::oauth::{Consent, OAuthSettings};
use runtime::furniture::{
    ContainerHook, FloorFurniture, FurnitureError, FurnitureSettings, Grants,
};

use super::plan;
use crate::output::UserError;
use crate::supervisor;

/// Where an `oauth:` furniture's token file is kept: `$OFC_OAUTH_DIR`, else `oauth/` in ofc's
/// config directory; under the floor's name (the blueprint's `name`, else its directory's).
pub(crate) fn oauth_settings(loaded: &plan::Loaded, consent: Consent) -> Result<OAuthSettings> {
    let dir = match std::env::var_os("OFC_OAUTH_DIR").filter(|d| !d.is_empty()) {
        Some(d) => std::path::absolute(PathBuf::from(d))?,
        None => crate::config::Paths::from_env()?.config.join("oauth"),
    };
    let floor = loaded.blueprint.name.clone().unwrap_or_else(|| {
        loaded
            .dir
            .file_name()
            .map_or_else(|| "floor".to_owned(), |n| n.to_string_lossy().into_owned())
    });
    Ok(OAuthSettings {
        floor,
        dir: Some(dir),
        consent,
        force: false,
    })
}

/// Starts the blueprint's furniture (task boards, MCP servers) and workstations (sandbox
/// containers) and decides the grants: each inline agent gets the furniture its `furniture`
/// list names, and every workstation when its `can_use_tools` is true, in the classes the
/// `floor_manager` policies approve (all of them without a `floor_manager`). A piece that does
/// not start is reported at its blueprint line, and none is left running.
pub(crate) async fn start_furniture(
    loaded: &plan::Loaded,
    supervisor: Option<&supervisor::Supervisor>,
    run_id: &str,
    agent_log: &Path,
    consent: Consent,
) -> Result<Option<Arc<FloorFurniture>>> {
    let bp = &loaded.blueprint;
    if bp.furniture.is_empty() && bp.workstations.is_empty() {
        return Ok(None);
    }
    let oauth = if bp.furniture.iter().any(|f| f.oauth.is_some()) {
        oauth_settings(loaded, consent)?
    } else {
        OAuthSettings::default()
    };
    let settings = FurnitureSettings {
        oauth,
        working_dir: Some(loaded.dir.clone()),
        stderr_log: Some(agent_log.to_path_buf()),
        on_spawn: supervisor.map(|s| {
            let s = s.clone();
            SpawnHook(Arc::new(move |pgid| s.watch(pgid)))
        }),
        on_container: supervisor.map(|s| {
            let s = s.clone();
            ContainerHook(Arc::new(move |engine, name| {
                s.watch_container(engine, name)
            }))
        }),
        // A project that holds `.openagents/` (seed 002): its task board is tasks.jsonl.
        openagents: Some(loaded.dir.join(index_schema::openagents::DIR)).filter(|d| d.is_dir()),
        env: vec![(supervisor::RUN_MARK.to_owned(), run_id.to_owned())],
        ..FurnitureSettings::default()
    };
    let pieces = match FloorFurniture::start_with_workstations(
        &bp.furniture,
        &bp.workstations,
        &settings,
    )
    .await
    {
        Ok(p) => p,
        Err(e) => {
            if let Some(s) = supervisor {
                s.finish();
            }
            let name = match &e {
                FurnitureError::Spawn { name, .. }
                | FurnitureError::Mcp { name, .. }
                | FurnitureError::Config { name, .. } => name.clone(),
            };
            let mut diags = Diagnostics::default();
            let station = bp
                .workstations
                .iter()
                .position(|w| w.effective_name() == name);
            let field = match station {
                Some(i) => FieldPath::root().key("workstations").index(i),
                None => FieldPath::root().key("furniture").index(
                    bp.furniture
                        .iter()
                        .position(|f| f.name == name)
                        .unwrap_or(0),
                ),
            };
            diags.push(field, e.to_string());
            // The hint speaks of what failed: a sandbox is a container, not an MCP server.
            let hint = if station.is_some() {
                format!(
                    "check that podman (or docker) works (`podman info`) and that the sandbox's image or Dockerfile is right; what it printed is in {}; nothing else was started",
                    agent_log.display()
                )
            } else {
                format!(
                    "check the furniture's command (or url) and that the MCP server is installed; what it printed is in {}; nothing else was started",
                    agent_log.display()
                )
            };
            return Err(UserError::new(format!(
                "{} did not start:\n{}",
                if station.is_some() {
                    "a workstation"
                } else {
                    "furniture"
                },
                plan::report(&loaded.path, &loaded.doc, diags)
            ))
            .hint(hint)
            .into());
        }
    };
    let stations: Vec<String> = bp
        .workstations
        .iter()
        .map(|w| w.effective_name().to_owned())
        .collect();
    let lists: Vec<(AgentHandle, Vec<String>)> = bp
        .agents
        .iter()
        .filter_map(|a| a.as_inline())
        .map(|a| {
            let mut names = a.furniture.clone();
            if a.can_use_tools == Some(true) {
                names.extend(stations.iter().cloned());
            }
            (a.id.clone(), names)
        })
        .collect();
    let grants = Grants::from_blueprint(
        bp.floor_manager.as_ref(),
        lists.iter().map(|(h, f)| (h, f.as_slice())),
    );
    Ok(Some(FloorFurniture::new(run_id, pieces, grants)))
}
