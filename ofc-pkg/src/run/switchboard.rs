//! `ofc run`'s Switchboard (seed 004, `runtime::switchboard`): when the blueprint has
//! `type: switchboard` agents, or `--switchboard` is given, `.switchboard/` is kept beside
//! the blueprint — the seed's layout, a new `auth_token` (0600), `server_info.json`,
//! `state.json` — each switchboard agent is on the floor with its turns going through its
//! inbox, and the Switchboard MCP server listens on 127.0.0.1 for agents in editors, which
//! join the floor by registering. What the Switchboard does and refuses is logged to the
//! run's agents log (`[switchboard]` lines).

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use index_schema::blueprint::{Blueprint, InlineAgentType};
use runtime::floor::Floor;
use runtime::switchboard::{ServedSwitchboard, Switchboard, SwitchboardSettings};

use super::plan::{Kind, Loaded, Planned};
use crate::output::UserError;

/// Whether this run keeps a Switchboard.
pub fn wanted(bp: &Blueprint, flag: bool) -> bool {
    flag || bp.agents.iter().any(|a| {
        a.as_inline()
            .is_some_and(|a| a.agent_type() == InlineAgentType::Switchboard)
    })
}

/// Opens `.switchboard/` beside the blueprint.
pub fn open(loaded: &Loaded, agent_log: &Path) -> Result<Arc<Switchboard>> {
    let settings = SwitchboardSettings {
        log: Some(agent_log.to_path_buf()),
        ..SwitchboardSettings::default()
    };
    Switchboard::open(&loaded.dir, settings).map_err(|e| {
        UserError::new(format!(
            "cannot keep {}: {e}",
            loaded.dir.join(".switchboard").display()
        ))
        .hint("ofc keeps a real directory there (a symbolic link is not followed); remove what is in its place")
        .into()
    })
}

/// Turns each planned switchboard agent into the floor agent that stands for it.
pub fn equip(sb: &Arc<Switchboard>, planned: &mut [Planned]) -> Result<()> {
    for p in planned.iter_mut() {
        if let Kind::Switchboard(file) = &p.kind {
            let agent = sb
                .add_file_agent(
                    &p.handle,
                    file.role,
                    file.team.clone(),
                    file.persona.clone(),
                )
                .map_err(|e| {
                    anyhow::Error::from(UserError::new(format!(
                        "{} ({}): cannot make its inbox: {e}",
                        p.field, p.handle
                    )))
                })?;
            p.kind = Kind::Ready(agent);
        }
    }
    Ok(())
}

/// Starts moving messages for the open floor and serves the MCP server.
pub async fn start(sb: &Arc<Switchboard>, floor: &Floor) -> Result<ServedSwitchboard> {
    sb.attach(floor)
        .await
        .map_err(|e| anyhow::anyhow!("cannot start the Switchboard: {e}"))?;
    sb.serve()
        .await
        .map_err(|e| anyhow::anyhow!("cannot serve the Switchboard on 127.0.0.1: {e}"))
}
