//! Who may use which furniture, and the per-agent guard that enforces it.
//!
//! A grant is (agent, furniture, class). They come from the blueprint at floor start
//! ([`Grants::from_blueprint`]) and later from grants the floor makes (`POST /ofc/mcp/grant`
//! of seed 000, [`FloorFurniture::grant_to`]). Every tool call an agent makes goes through its
//! [`Guard`], which looks the grant up at call time: the model is only told about tools it
//! holds, and a call to any other tool — of a class it does not hold, or of furniture it was
//! not given — is refused with a text saying why, which the model reads as the tool result and
//! which the floor's transcript records with the call.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use index_schema::blueprint::{Decision, FloorManager};
use index_schema::name::AgentHandle;
use index_schema::wire::{McpGrant, McpGrantRequest, McpGrantResponse};
use serde_json::{Map, Value};

use super::{Class, Furniture, FurnitureError, FurnitureSettings};
use crate::agent::{Agent, AgentError};
use crate::llm::{ToolConnector, ToolError, ToolSpec, Toolbox};

/// The scheme of the URL an in-process grant names (`ofc-furniture:board`): the furniture is
/// reached through the floor, not over the network.
pub const IN_PROCESS_SCHEME: &str = "ofc-furniture:";

/// Which classes of which furniture each agent holds, and why it does not hold the others.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    held: HashMap<(String, String), BTreeSet<Class>>,
    /// (agent, furniture, class) → why it is not granted, when a policy said so.
    reasons: HashMap<(String, String, Class), String>,
}

impl Grants {
    /// No grants.
    pub fn new() -> Self {
        Self::default()
    }

    /// The grants a blueprint makes: each agent gets the furniture its `furniture` list
    /// names, in the classes the `floor_manager` decides — its policies, first match wins,
    /// then `auto_approve_read` for reads; a class whose decision is `ask` or `deny` is not
    /// granted (nobody can be asked at floor start; the refusal says which policy decided).
    /// Without a `floor_manager` block every class is granted, as in the reference CLI, where
    /// an agent's `furniture` list is its access.
    pub fn from_blueprint<'a>(
        manager: Option<&FloorManager>,
        agents: impl IntoIterator<Item = (&'a AgentHandle, &'a [String])>,
    ) -> Grants {
        let mut grants = Grants::new();
        for (agent, furniture) in agents {
            for name in furniture {
                for class in Class::ALL {
                    let (decision, rule) = match manager {
                        None => (Decision::Approve, None),
                        Some(m) => m.decide_why(class.access(), agent, name),
                    };
                    let key = (agent.to_string(), name.clone());
                    let reason = match (decision, rule) {
                        (Decision::Approve, _) => None,
                        (Decision::Deny, Some(i)) => {
                            Some(format!("floor_manager.policies[{i}] denies {class} access"))
                        }
                        (Decision::Deny, None) => Some(format!("{class} access is denied")),
                        (Decision::Ask, Some(i)) => Some(format!(
                            "floor_manager.policies[{i}] wants the user asked for {class} access, and nobody has granted it"
                        )),
                        (Decision::Ask, None) => Some(format!(
                            "no floor_manager policy approves {class} access (without one only reads are approved, with auto_approve_read), and nobody has granted it"
                        )),
                    };
                    match reason {
                        None => {
                            grants.held.entry(key).or_default().insert(class);
                        }
                        Some(reason) => {
                            grants.reasons.insert((key.0, key.1, class), reason);
                        }
                    }
                }
            }
        }
        grants
    }

    /// Grants `classes` of `furniture` to `agent` (adding to what it holds).
    pub fn grant(
        &mut self,
        agent: &str,
        furniture: &str,
        classes: impl IntoIterator<Item = Class>,
    ) {
        let set = self
            .held
            .entry((agent.to_owned(), furniture.to_owned()))
            .or_default();
        for class in classes {
            set.insert(class);
            self.reasons
                .remove(&(agent.to_owned(), furniture.to_owned(), class));
        }
    }

    /// Takes every class of `furniture` from `agent`.
    pub fn revoke(&mut self, agent: &str, furniture: &str) {
        self.held.remove(&(agent.to_owned(), furniture.to_owned()));
    }

    /// Every grant: agent, furniture, classes; sorted.
    pub fn entries(&self) -> Vec<(String, String, BTreeSet<Class>)> {
        let mut out: Vec<_> = self
            .held
            .iter()
            .filter(|(_, classes)| !classes.is_empty())
            .map(|((a, f), c)| (a.clone(), f.clone(), c.clone()))
            .collect();
        out.sort();
        out
    }

    /// Whether `agent` holds `class` on `furniture`.
    pub fn holds(&self, agent: &str, furniture: &str, class: Class) -> bool {
        self.held
            .get(&(agent.to_owned(), furniture.to_owned()))
            .is_some_and(|s| s.contains(&class))
    }

    /// The classes `agent` holds on `furniture`.
    pub fn classes(&self, agent: &str, furniture: &str) -> BTreeSet<Class> {
        self.held
            .get(&(agent.to_owned(), furniture.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// Why `agent` cannot call `tool` (of `class`) on `furniture`, for the model.
    fn refusal(&self, agent: &str, furniture: &str, tool: &str, class: Class) -> String {
        let held = self.classes(agent, furniture);
        let why = self
            .reasons
            .get(&(agent.to_owned(), furniture.to_owned(), class))
            .cloned();
        let holds = if held.is_empty() {
            format!("{agent} holds no grant on `{furniture}`")
        } else {
            let list: Vec<&str> = held.iter().map(|c| c.as_str()).collect();
            format!("{agent} holds {} on `{furniture}`", list.join(", "))
        };
        let mut text = format!("refused: `{furniture}__{tool}` is a {class} tool and {holds}");
        match why {
            Some(why) => {
                text.push_str("; ");
                text.push_str(&why);
            }
            None if held.is_empty() => {
                text.push_str(" (it is not in the agent's `furniture` list)");
            }
            None => {}
        }
        text
    }
}

/// The furniture of one floor and its grants.
pub struct FloorFurniture {
    floor_id: String,
    pieces: Vec<Arc<Furniture>>,
    grants: RwLock<Grants>,
    /// Agents outside the process (HTTP agents) → where the floor's MCP endpoints are served
    /// for them (`http://127.0.0.1:PORT/floors/{id}/mcp`): their grants name URLs there.
    over_http: RwLock<HashMap<String, String>>,
}

impl fmt::Debug for FloorFurniture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloorFurniture")
            .field("floor_id", &self.floor_id)
            .field("pieces", &self.pieces)
            .finish_non_exhaustive()
    }
}

impl FloorFurniture {
    /// A floor's furniture, already started, and its grants.
    pub fn new(floor_id: impl Into<String>, pieces: Vec<Furniture>, grants: Grants) -> Arc<Self> {
        Arc::new(Self {
            floor_id: floor_id.into(),
            pieces: pieces.into_iter().map(Arc::new).collect(),
            grants: RwLock::new(grants),
            over_http: RwLock::new(HashMap::new()),
        })
    }

    /// Starts every entry at once. If one fails, those already started are stopped and the
    /// first error is returned.
    pub async fn start_all(
        entries: &[index_schema::blueprint::Furniture],
        settings: &FurnitureSettings,
    ) -> Result<Vec<Furniture>, FurnitureError> {
        Self::start_with_workstations(entries, &[], settings).await
    }

    /// [`FloorFurniture::start_all`], with the blueprint's workstations (sandboxes) started
    /// alongside, as pieces named after them.
    pub async fn start_with_workstations(
        entries: &[index_schema::blueprint::Furniture],
        workstations: &[index_schema::blueprint::Workstation],
        settings: &FurnitureSettings,
    ) -> Result<Vec<Furniture>, FurnitureError> {
        use futures::FutureExt;
        let starts = entries
            .iter()
            .map(|e| Furniture::start(e, settings).boxed())
            .chain(
                workstations
                    .iter()
                    .map(|w| Furniture::workstation(w, settings).boxed()),
            );
        let results = futures::future::join_all(starts).await;
        let mut started = Vec::new();
        let mut first_error = None;
        for r in results {
            match r {
                Ok(f) => started.push(f),
                Err(e) if first_error.is_none() => first_error = Some(e),
                Err(e) => tracing::warn!(error = %e, "furniture failed to start"),
            }
        }
        if let Some(e) = first_error {
            for f in &started {
                f.shutdown().await;
            }
            return Err(e);
        }
        // A project whose `.openagents/project.json` enables its sandbox runs its commands
        // in the floor's (first) sandbox.
        if let Some(sandbox) = started.iter().find_map(|f| f.as_sandbox().cloned()) {
            for f in &started {
                if let Some(board) = f.as_openagents() {
                    board.use_sandbox(sandbox.clone());
                }
            }
        }
        Ok(started)
    }

    /// The floor's furniture.
    pub fn pieces(&self) -> &[Arc<Furniture>] {
        &self.pieces
    }

    /// One piece by name.
    pub fn get(&self, name: &str) -> Option<&Arc<Furniture>> {
        self.pieces.iter().find(|f| f.name() == name)
    }

    /// A snapshot of the grants.
    pub fn grants(&self) -> Grants {
        read(&self.grants).clone()
    }

    /// `agent`'s guard on the furniture `name`, whatever it holds there (possibly nothing:
    /// then it lists no tools and refuses every call with the reason).
    pub fn guard(self: &Arc<Self>, agent: &str, name: &str) -> Option<Guard> {
        let furniture = self.get(name)?.clone();
        Some(Guard {
            agent: agent.to_owned(),
            furniture,
            floor: self.clone(),
        })
    }

    /// A guard for each piece of furniture, for `agent`.
    pub fn guards(self: &Arc<Self>, agent: &str) -> Vec<Guard> {
        self.pieces
            .iter()
            .map(|f| Guard {
                agent: agent.to_owned(),
                furniture: f.clone(),
                floor: self.clone(),
            })
            .collect()
    }

    /// The tools of `name` that `agent` may call, and the classes it holds there.
    fn held_tools(&self, agent: &str, name: &str) -> (Vec<String>, BTreeSet<Class>) {
        let grants = read(&self.grants);
        let classes = grants.classes(agent, name);
        let tools = self
            .get(name)
            .map(|f| {
                f.tools()
                    .iter()
                    .filter(|t| classes.contains(&t.class))
                    .map(|t| t.spec.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        (tools, classes)
    }

    /// `agent` is reached over HTTP and reaches the furniture at `mcp_base`
    /// (`http://127.0.0.1:PORT/floors/{id}/mcp`, where [`super::McpEndpoints`] serve it): the
    /// grants it is told of name URLs there instead of the in-process scheme.
    pub fn reach_over_http(&self, agent: &str, mcp_base: &str) {
        self.over_http
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(agent.to_owned(), mcp_base.trim_end_matches('/').to_owned());
    }

    /// The `POST /ofc/mcp/grant` request telling `agent` what it holds on `name`.
    pub fn grant_request(&self, agent: &str, name: &str, granted_by: &str) -> McpGrantRequest {
        let (capabilities, classes) = self.held_tools(agent, name);
        let url = match self
            .over_http
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(agent)
        {
            Some(base) => format!("{base}/{name}"),
            None => format!("{IN_PROCESS_SCHEME}{name}"),
        };
        McpGrantRequest {
            floor_id: self.floor_id.clone(),
            mcp: McpGrant {
                name: name.to_owned(),
                url,
                capabilities,
                permissions: classes.iter().map(|c| c.permission()).collect(),
            },
            granted_by: granted_by.to_owned(),
        }
    }

    /// Grants `classes` of the furniture `name` to the agent `handle` and tells the agent
    /// (`POST /ofc/mcp/grant`). The grant holds on the floor's side whatever the agent
    /// answers; an agent that declines simply does not use it.
    pub async fn grant_to(
        &self,
        handle: &str,
        agent: &dyn Agent,
        name: &str,
        classes: &[Class],
        granted_by: &str,
    ) -> Result<McpGrantResponse, AgentError> {
        if self.get(name).is_none() {
            return Err(AgentError::Other(format!(
                "the floor has no furniture `{name}`"
            )));
        }
        write(&self.grants).grant(handle, name, classes.iter().copied());
        agent
            .grant_mcp(&self.grant_request(handle, name, granted_by))
            .await
    }

    /// Grants `classes` of `name` to `handle` without telling the agent: a resumed session's
    /// grants, restored before the agents start (they learn of them as they do of the
    /// blueprint's). Answers false for furniture the floor does not have.
    pub fn restore_grant(&self, handle: &str, name: &str, classes: &[Class]) -> bool {
        if self.get(name).is_none() {
            return false;
        }
        write(&self.grants).grant(handle, name, classes.iter().copied());
        true
    }

    /// Stops every piece.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.pieces.iter().map(|f| f.shutdown())).await;
    }
}

/// One agent's access to one piece of furniture: lists the tools it holds, refuses the rest.
#[derive(Clone)]
pub struct Guard {
    agent: String,
    furniture: Arc<Furniture>,
    floor: Arc<FloorFurniture>,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("agent", &self.agent)
            .field("furniture", &self.furniture.name())
            .finish()
    }
}

impl Guard {
    /// The furniture's name.
    pub fn name(&self) -> &str {
        self.furniture.name()
    }

    /// Why the call would be refused, or `None` when the agent holds the tool's class.
    pub fn check(&self, tool: &str) -> Option<String> {
        let name = self.furniture.name();
        let Some(t) = self.furniture.tool(tool) else {
            let known: Vec<&str> = self
                .furniture
                .tools()
                .iter()
                .map(|t| t.spec.name.as_str())
                .collect();
            return Some(format!(
                "`{name}` has no tool `{tool}` (its tools: {known:?})"
            ));
        };
        let grants = read(&self.floor.grants);
        if grants.holds(&self.agent, name, t.class) {
            None
        } else {
            Some(grants.refusal(&self.agent, name, tool, t.class))
        }
    }
}

#[async_trait]
impl Toolbox for Guard {
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        let grants = read(&self.floor.grants);
        let classes = grants.classes(&self.agent, self.furniture.name());
        Ok(self
            .furniture
            .tools()
            .iter()
            .filter(|t| classes.contains(&t.class))
            .map(|t| t.spec.clone())
            .collect())
    }

    async fn call(&self, tool: &str, arguments: Map<String, Value>) -> Result<Value, ToolError> {
        if let Some(refusal) = self.check(tool) {
            tracing::warn!(
                agent = %self.agent,
                furniture = %self.furniture.name(),
                tool,
                "tool call refused: {refusal}"
            );
            return Err(ToolError(refusal));
        }
        self.furniture.call(tool, arguments).await
    }

    fn refusal(&self, tool: &str) -> Option<String> {
        self.check(tool)
    }
}

/// Connects an LLM agent's workstation grants to the floor's furniture: the grant names the
/// furniture, and the agent gets its [`Guard`] there. What the agent may call is what the
/// floor's grants say at call time, never what the grant request claims.
#[derive(Debug, Clone)]
pub struct FurnitureConnector {
    floor: Arc<FloorFurniture>,
    agent: String,
}

impl FurnitureConnector {
    /// The connector of the agent `handle`.
    pub fn new(floor: Arc<FloorFurniture>, handle: &str) -> Self {
        Self {
            floor,
            agent: handle.to_owned(),
        }
    }
}

#[async_trait]
impl ToolConnector for FurnitureConnector {
    async fn connect(&self, grant: &McpGrant) -> Result<Arc<dyn Toolbox>, ToolError> {
        let name = grant
            .url
            .strip_prefix(IN_PROCESS_SCHEME)
            .unwrap_or(&grant.name);
        if name != grant.name {
            return Err(ToolError(format!(
                "the grant names `{}` but points at `{}`",
                grant.name, grant.url
            )));
        }
        match self.floor.guard(&self.agent, name) {
            Some(g) => Ok(Arc::new(g)),
            None => Err(ToolError(format!("the floor has no furniture `{name}`"))),
        }
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}
