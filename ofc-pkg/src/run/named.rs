//! `ofc run --floor X`: a named floor ([`crate::floors`]) run from its stored blueprint, and
//! changed as it runs.
//!
//! The run polls the floor's record (every 250 ms: one `stat`, and a read when it changed;
//! no file watcher) and applies a new generation as the reference's hot-reload rules say:
//!
//! - an LLM agent whose entry changed (prompt, model, endpoint, temperature, `defaults`, …) is
//!   rebuilt from the new blueprint and takes the old one's place: its next turn uses it, a
//!   turn already running finishes with the old one (each floor agent is a [`Reloadable`]
//!   whose calls take the agent current when they start). The floor's messages stay, so its
//!   context is whole; its running memory summary starts afresh;
//! - an added LLM agent joins when the floor is next between turns, with an empty context of
//!   its own (it is sent the floor's conversation like any agent);
//! - a removed agent leaves the floor (between turns) and is no longer polled; what it said
//!   stays;
//! - removed furniture is shut down (a call in flight fails with its error, which the model
//!   reads as the tool's result) and taken from every LLM agent, whose later calls to it get
//!   the clean "unknown tool" error;
//! - what cannot change in a running floor (added or changed furniture, a process, ACP or hub
//!   agent added or changed, an agent's `activation`) is said on stderr and applies on the
//!   next `ofc run --floor X`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Result;
use async_trait::async_trait;
use index_schema::blueprint::{AgentEntry, InlineAgent, InlineAgentType};
use index_schema::wire::{
    AgentInfo, McpGrantRequest, McpGrantResponse, McpProvidesResponse, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use runtime::agent::{Agent, AgentError, Deltas};
use runtime::floor::{Floor, FloorAgent, FloorError};
use runtime::furniture::FloorFurniture;
use runtime::llm::{LlmAgent, RosterEntry};
use runtime::session::LiveSession;
use runtime::{Activation, Handle};

use super::plan;
use crate::floors::{self, FloorRecord, Mutation};
use crate::output::UserError;

/// The record this run loaded (`--floor`), for its watcher.
static LOADED: std::sync::OnceLock<FloorRecord> = std::sync::OnceLock::new();

/// The named floor `name`'s stored blueprint, loaded as `ofc run` loads a file.
pub(crate) fn load(name: &str) -> Result<plan::Loaded> {
    let record = floors::read(&floors::floors_dir(), name)?;
    let loaded = plan::load_text(Path::new(&record.source), &record.blueprint).map_err(|t| {
        UserError::new(format!("the floor `{name}` cannot run:\n{t}")).hint(format!(
            "`ofc floors update {name} --from-file FILE` fixes it"
        ))
    })?;
    let _ = LOADED.set(record);
    Ok(loaded)
}

/// A floor agent that can be replaced while the floor runs: each call takes the agent
/// current when it starts.
#[derive(Debug)]
pub(crate) struct Reloadable {
    current: RwLock<Arc<dyn Agent>>,
}

impl Reloadable {
    fn get(&self) -> Arc<dyn Agent> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn set(&self, agent: Arc<dyn Agent>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = agent;
    }
}

#[async_trait]
impl Agent for Reloadable {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        self.get().info().await
    }

    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        self.get().should_wake(request).await
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        self.get().respond(request, deltas).await
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        self.get().grant_mcp(request).await
    }

    async fn provides_mcp(&self) -> Result<McpProvidesResponse, AgentError> {
        self.get().provides_mcp().await
    }

    async fn shutdown(&self) {
        self.get().shutdown().await;
    }
}

/// The replaceable agents of a named floor, by handle (`@a`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Reload {
    agents: Arc<Mutex<HashMap<String, Arc<Reloadable>>>>,
}

impl Reload {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Reloadable>>> {
        self.agents.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `agent` replaceable.
    fn wrap_one(&self, agent: FloorAgent) -> FloorAgent {
        let r = Arc::new(Reloadable {
            current: RwLock::new(agent.agent),
        });
        self.lock().insert(agent.handle.to_string(), Arc::clone(&r));
        FloorAgent { agent: r, ..agent }
    }

    /// Makes the floor's agents replaceable, when the floor is a named one (`on`).
    pub(crate) fn wrap(&self, agents: Vec<FloorAgent>, on: bool) -> Vec<FloorAgent> {
        if !on {
            return agents;
        }
        agents.into_iter().map(|a| self.wrap_one(a)).collect()
    }
}

/// What the watcher needs of the running floor.
pub(crate) struct Running {
    pub(crate) floor: Floor,
    pub(crate) reload: Reload,
    pub(crate) furniture: Option<Arc<FloorFurniture>>,
    pub(crate) live: LiveSession,
}

/// Polls the changes of the floor this run loaded (if it runs one) and applies them until the
/// floor closes.
pub(crate) fn watch(running: Running) -> Option<tokio::task::JoinHandle<()>> {
    let record = LOADED.get()?.clone();
    // The watcher does not keep the floor open: it holds it only while applying a change.
    let weak = running.floor.downgrade();
    let Running {
        reload,
        furniture,
        live,
        ..
    } = running;
    Some(tokio::spawn(async move {
        let dir = floors::floors_dir();
        let path = floors::path_of(&dir, &record.name);
        let mut stamp = stamp_of(&path);
        let mut state = State {
            name: record.name.clone(),
            generation: record.generation,
            text: record.blueprint,
            gone: HashSet::new(),
        };
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let Some(floor) = weak.upgrade() else {
                return;
            };
            if floor.snapshot().await.is_err() {
                return;
            }
            let now = stamp_of(&path);
            if now == stamp {
                continue;
            }
            let Ok(next) = floors::read(&dir, &state.name) else {
                continue;
            };
            if next.generation == state.generation {
                stamp = now;
                continue;
            }
            let running = Running {
                floor,
                reload: reload.clone(),
                furniture: furniture.clone(),
                live: live.clone(),
            };
            state.apply(&next, &running).await;
            stamp = now;
        }
    }))
}

fn stamp_of(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

struct State {
    name: String,
    generation: u64,
    text: String,
    /// Furniture removed while running.
    gone: HashSet<String>,
}

fn say(line: &str) {
    eprintln!("{}", crate::output::clean_line(line));
}

impl State {
    /// Applies `next`; what must wait for the floor to be between turns (an agent leaving or
    /// joining) is waited for, so that once it is said to be applied, the next turn has it.
    async fn apply(&mut self, next: &FloorRecord, running: &Running) {
        let name = self.name.clone();
        let loaded = match plan::load_text(Path::new(&next.source), &next.blueprint) {
            Ok(l) => l,
            Err(e) => {
                say(&format!(
                    "· floor {name}: generation {} cannot be applied; the floor goes on as it was:\n{e}",
                    next.generation
                ));
                self.generation = next.generation;
                return;
            }
        };
        let mutations = floors::diff(
            &floors::parsed(&self.text),
            &floors::parsed(&next.blueprint),
        );
        let mut rebuild: HashSet<String> = HashSet::new();
        let all_llm = mutations.iter().any(|m| {
            (m.kind == "furniture" && m.op == "remove") || (m.kind == "field" && m.id == "defaults")
        });
        for m in &mutations {
            match (m.kind, m.op) {
                ("agent", "remove") => {
                    let Ok(h) = Handle::new(&m.id) else { continue };
                    running.reload.lock().remove(&m.id);
                    // Refused during a turn: tried again until the floor is between turns.
                    while let Err(FloorError::Roster(_)) =
                        running.floor.remove_agent(h.clone()).await
                    {
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
                ("agent", _) => {
                    rebuild.insert(m.id.clone());
                }
                ("furniture", "remove") => {
                    if let Some(piece) = running.furniture.as_ref().and_then(|f| f.get(&m.id)) {
                        piece.shutdown().await;
                    }
                    self.gone.insert(m.id.clone());
                }
                _ => later(&name, m),
            }
        }
        if all_llm {
            rebuild.extend(running.reload.lock().keys().cloned());
        }
        let roster: Vec<String> = loaded
            .blueprint
            .agents
            .iter()
            .filter_map(|e| match e {
                AgentEntry::Inline(a) => Some(format!("@{}", a.id.name())),
                _ => None,
            })
            .collect();
        let mut handled: HashSet<String> = HashSet::new();
        for entry in &loaded.blueprint.agents {
            let AgentEntry::Inline(a) = entry else {
                continue;
            };
            let me = format!("@{}", a.id.name());
            if !rebuild.contains(&me) {
                continue;
            }
            handled.insert(me.clone());
            if a.agent_type() != InlineAgentType::Llm {
                later(
                    &name,
                    &Mutation {
                        op: "update",
                        kind: "agent",
                        id: me.clone(),
                        fields: Vec::new(),
                    },
                );
                continue;
            }
            let agent = match self.build(a, &loaded, &roster, running).await {
                Ok(agent) => agent,
                Err(e) => {
                    say(&format!("· floor {name}: {me} is unchanged: {e}"));
                    continue;
                }
            };
            let existing = running.reload.lock().get(&me).cloned();
            match existing {
                Some(r) => r.set(agent),
                None => {
                    let Ok(handle) = Handle::new(&me) else {
                        continue;
                    };
                    let activation = match agent.activation() {
                        index_schema::wire::Activation::Always => Activation::Always,
                        _ => Activation::Mention,
                    };
                    let joining = running.reload.wrap_one(FloorAgent {
                        handle,
                        activation,
                        agent,
                        endpoint: None,
                        info: None,
                    });
                    if let Err(e) = running.floor.add_agent_when_idle(joining).await {
                        say(&format!("· floor {name}: {me} cannot join: {e}"));
                    }
                }
            }
        }
        // Agents that are not inline (hub references, agent files) start only with a run.
        for m in &mutations {
            if m.kind == "agent" && m.op != "remove" && !handled.contains(&m.id) {
                later(&name, m);
            }
        }
        self.generation = next.generation;
        self.text = next.blueprint.clone();
        running.live.append(
            runtime::session::payload::FLOOR_UPDATED,
            serde_json::json!({
                "floor": name,
                "generation": next.generation,
                "mutations": mutations,
            }),
        );
        let shown: Vec<String> = mutations.iter().map(ToString::to_string).collect();
        say(&format!(
            "· floor {name}: generation {} applied{}",
            next.generation,
            if shown.is_empty() {
                String::new()
            } else {
                format!(": {}", shown.join("; "))
            }
        ));
    }

    /// An LLM agent from the new blueprint, equipped as `ofc run` equips one: who else is on
    /// the floor, its furniture (but what was removed), its summaries recorded.
    async fn build(
        &self,
        a: &InlineAgent,
        loaded: &plan::Loaded,
        roster: &[String],
        running: &Running,
    ) -> Result<Arc<LlmAgent>, String> {
        let me = format!("@{}", a.id.name());
        let agent =
            super::agents::llm_agent(a, loaded.blueprint.defaults.as_ref(), Some(&loaded.dir))
                .map_err(|e| e.to_string())?;
        agent.set_roster(
            roster
                .iter()
                .filter(|h| **h != me)
                .map(|h| RosterEntry {
                    handle: h.clone(),
                    about: None,
                })
                .collect(),
        );
        if let Some(f) = &running.furniture {
            for guard in f.guards(&me) {
                let piece = guard.name().to_owned();
                if self.gone.contains(&piece) {
                    continue;
                }
                agent
                    .add_toolbox(&piece, Arc::new(guard))
                    .await
                    .map_err(|e| format!("cannot give it the furniture `{piece}`: {e}"))?;
            }
        }
        let live = running.live.clone();
        let who = me.clone();
        agent.on_compaction(Arc::new(move |through, text| {
            live.record_compaction(&who, through, text);
        }));
        Ok(agent)
    }
}

/// Says that `m` applies on the next run.
fn later(name: &str, m: &Mutation) {
    say(&format!(
        "· floor {name}: {m} applies on the next `ofc run --floor {name}` (it cannot change in a running floor)"
    ));
}
