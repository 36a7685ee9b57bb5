//! Furniture: the tools a floor provides (the built-in task board, external MCP servers), and
//! who may use which of them.
//!
//! - [`Furniture`] is one piece, started once per floor: [`taskboard`] in process, or an MCP
//!   server through the official Rust SDK ([`mcp`]: a command over stdio, or a URL over
//!   streamable HTTP). Its tools are discovered when it starts and each gets an access class
//!   ([`classify`]).
//! - [`access`] decides, per agent, which classes of which furniture it holds (the blueprint's
//!   `furniture` lists and `floor_manager` policies, later grants) and wraps each piece in a
//!   per-agent guard that refuses, with a text the model can read, any call the agent holds no
//!   grant for.
//! - [`serve`] exposes the furniture to agents that are not in process, at the floor's MCP
//!   endpoints of seed 000, each agent under its own token.
//!
//! Pieces start all at once ([`FloorFurniture::start_all`]; if one fails, the others are stopped
//! and `ofc run` reports it at its `furniture[i]` line). An MCP server started as a command runs
//! in its own process group, reported to `ofc run`'s supervisor, in the blueprint's directory;
//! the last 4 KiB of its stderr go into start and call errors. The blueprint's `access: {tool:
//! class}` on a piece overrides the class its annotations give ([`classify`]), an ofc extension;
//! naming a tool the server does not have is an error, so a typo cannot leave a tool in the wrong
//! class.
//!
//! Differences from the reference CLI (`FURNITURE.md`): per-tool access control is implemented
//! here (planned there), through classes and the `floor_manager` policies; URL-reached MCP
//! servers speak streamable HTTP only, not the legacy SSE transport; as there, an agent's
//! furniture is advertised whatever its `can_use_tools` says (that flag governs workstations);
//! the task board refuses statuses other than `todo`, `in_progress` and `done` and bounds its
//! size (10 000 tasks, 4 KiB texts); several JSON objects concatenated in one call's arguments
//! are an error result, not split into calls; `tool_context` renders a furniture call as
//! `$ name__tool {arguments}` (the reference shows `name.tool`, which hides what was asked). Not
//! done: revoking a grant in a running floor, persisting the task board, furniture on the floors
//! of `ofc floor serve`.

pub mod access;
pub mod mcp;
pub mod oauth;
pub mod openagents;
pub mod peer;
pub mod sandbox;
pub mod serve;
pub mod taskboard;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use index_schema::blueprint::{self, FurnitureType};
use index_schema::wire::Permission;
use serde_json::{Map, Value};

use crate::agent::SpawnHook;
use crate::llm::{ToolError, ToolSpec, Toolbox};

pub use access::{FloorFurniture, FurnitureConnector, Grants, Guard};
pub use mcp::McpToolbox;
pub use openagents::OpenAgentsBoard;
pub use sandbox::{Sandbox, SandboxSettings};
pub use serve::{McpEndpoints, ServedEndpoints};
pub use taskboard::TaskBoard;

/// Why a piece of furniture could not be started. Every message names the furniture.
#[derive(Debug, thiserror::Error)]
pub enum FurnitureError {
    /// The command could not be started (not found, not executable…).
    #[error("furniture `{name}`: cannot start `{command}`: {source}")]
    Spawn {
        /// The furniture.
        name: String,
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The MCP handshake or the tool listing failed.
    #[error("furniture `{name}`: {message}")]
    Mcp {
        /// The furniture.
        name: String,
        /// What went wrong, with the server's own error output when it printed any.
        message: String,
    },
    /// The blueprint entry cannot be provided (no command and no url…).
    #[error("furniture `{name}`: {message}")]
    Config {
        /// The furniture.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// How furniture is started.
#[derive(Clone)]
pub struct FurnitureSettings {
    /// How long an MCP server may take to start and list its tools.
    pub start_deadline: Duration,
    /// Directory MCP server commands run in (the blueprint's directory in `ofc run`).
    pub working_dir: Option<std::path::PathBuf>,
    /// Called with the process group id of each MCP server started, so that a supervisor can
    /// stop it if ofc dies.
    pub on_spawn: Option<SpawnHook>,
    /// A file MCP servers' error output is appended to, each line prefixed with
    /// `[furniture name]` (`ofc run`: the run's agents log); sandbox image builds too.
    pub stderr_log: Option<std::path::PathBuf>,
    /// Called with the engine and the name of each sandbox container before it starts, so
    /// that a supervisor can remove it if ofc dies.
    pub on_container: Option<ContainerHook>,
    /// How sandbox workstations run commands.
    pub sandbox: SandboxSettings,
    /// Added to the environment of every MCP server command started (`ofc run` marks its
    /// processes with the run's id, so that what they leave behind is found and stopped).
    pub env: Vec<(String, String)>,
    /// The project's `.openagents` directory, when it has one (seed 002): a `taskboard` is
    /// then its `tasks.jsonl` ([`OpenAgentsBoard`]).
    pub openagents: Option<std::path::PathBuf>,
    /// How furniture with an `oauth:` block gets its tokens.
    pub oauth: oauth::OAuthSettings,
}

/// What a [`ContainerHook`] calls: with the engine program and the container's name.
pub type ContainerCallback = dyn Fn(&std::path::Path, &str) + Send + Sync;

/// A callback receiving the engine program and the name of each sandbox container.
#[derive(Clone)]
pub struct ContainerHook(pub Arc<ContainerCallback>);

impl fmt::Debug for ContainerHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContainerHook")
    }
}

impl fmt::Debug for FurnitureSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FurnitureSettings")
            .field("start_deadline", &self.start_deadline)
            .field("working_dir", &self.working_dir)
            .finish_non_exhaustive()
    }
}

impl Default for FurnitureSettings {
    fn default() -> Self {
        Self {
            start_deadline: Duration::from_secs(30),
            working_dir: None,
            on_spawn: None,
            stderr_log: None,
            on_container: None,
            sandbox: SandboxSettings::default(),
            env: Vec::new(),
            openagents: None,
            oauth: oauth::OAuthSettings::default(),
        }
    }
}

/// One tool of a piece of furniture, with its access class.
#[derive(Debug, Clone, PartialEq)]
pub struct FurnitureTool {
    /// As the model is told about it.
    pub spec: ToolSpec,
    /// What holding it takes: `read`, `write` or `execute`.
    pub class: Class,
}

/// The MCP tool annotations that decide a tool's class (all optional hints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
}

/// A tool's access class from its MCP annotations: `readOnlyHint: true` is `read`; not
/// read-only and `destructiveHint: false` (it only adds) is `write`; everything else —
/// destructive tools and tools that say nothing — is `execute`, the class that is granted
/// least. The annotations are hints from the server the blueprint chose; the blueprint's
/// `access` map overrides them.
pub fn classify(hints: Hints) -> Class {
    match hints {
        Hints {
            read_only: Some(true),
            ..
        } => Class::Read,
        Hints {
            destructive: Some(false),
            ..
        } => Class::Write,
        _ => Class::Execute,
    }
}

/// A piece of furniture, started: its tools (discovered at start) and where calls go.
pub struct Furniture {
    name: String,
    kind: &'static str,
    tools: Vec<FurnitureTool>,
    toolbox: Arc<dyn Toolbox>,
    mcp: Option<Arc<McpToolbox>>,
    sandbox: Option<Arc<Sandbox>>,
    openagents: Option<OpenAgentsBoard>,
    taskboard: Option<Arc<TaskBoard>>,
}

impl fmt::Debug for Furniture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Furniture")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Furniture {
    /// Starts what a blueprint's `furniture[]` entry describes: a task board, or an MCP
    /// server (`command` over stdio, or `url` over streamable HTTP), whose tools are listed
    /// now. The entry's `access` map overrides the classes of the tools it names; a name that
    /// is not one of the tools is an error (a typo would otherwise leave a tool in a class
    /// the author did not mean).
    pub async fn start(
        entry: &blueprint::Furniture,
        settings: &FurnitureSettings,
    ) -> Result<Furniture, FurnitureError> {
        let name = entry.name.clone();
        let furniture = match entry.furniture_type {
            FurnitureType::Taskboard => match &settings.openagents {
                Some(dir) => {
                    let board =
                        OpenAgentsBoard::open(dir, Duration::from_secs(10)).map_err(|message| {
                            FurnitureError::Config {
                                name: name.clone(),
                                message: format!("the project's .openagents/: {message}"),
                            }
                        })?;
                    Self::from_openagents(&name, board)
                }
                None => Self::taskboard(&name),
            },
            FurnitureType::Mcp => match (&entry.command, &entry.url) {
                (Some(command), None) => {
                    let toolbox = McpToolbox::stdio(&name, command, &entry.args, settings).await?;
                    Self::from_mcp(&name, "mcp (stdio)", toolbox)
                }
                (None, Some(url)) => {
                    let toolbox = McpToolbox::http_with_headers(
                        &name,
                        url,
                        &entry.headers,
                        entry.oauth.as_ref(),
                        settings,
                    )
                    .await?;
                    Self::from_mcp(&name, "mcp (streamable HTTP)", toolbox)
                }
                _ => {
                    return Err(FurnitureError::Config {
                        name,
                        message: "an `mcp` furniture needs exactly one of `command` and `url`"
                            .into(),
                    });
                }
            },
        };
        let mut overrides = HashMap::new();
        for (tool, access) in &entry.access {
            let Some(class) = Class::from_access(*access) else {
                return Err(FurnitureError::Config {
                    name,
                    message: format!(
                        "`access.{tool}` must be read, write or execute, not {}",
                        serde_json::to_string(access).unwrap_or_default()
                    ),
                });
            };
            overrides.insert(tool.clone(), class);
        }
        furniture.with_classes(&overrides)
    }

    /// The built-in task board, in process.
    pub fn taskboard(name: &str) -> Furniture {
        let board = Arc::new(TaskBoard::default());
        Furniture {
            name: name.to_owned(),
            kind: "taskboard",
            tools: TaskBoard::catalog(),
            toolbox: board.clone(),
            mcp: None,
            sandbox: None,
            openagents: None,
            taskboard: Some(board),
        }
    }

    /// The task board of a project's `.openagents/`.
    pub fn from_openagents(name: &str, board: OpenAgentsBoard) -> Furniture {
        Furniture {
            name: name.to_owned(),
            kind: "taskboard (.openagents/tasks.jsonl)",
            tools: board.catalog(),
            toolbox: Arc::new(board.clone()),
            mcp: None,
            sandbox: None,
            openagents: Some(board),
            taskboard: None,
        }
    }

    /// For an MCP server with an `oauth:` block: whether a person consented while it started,
    /// and where its token is kept.
    pub fn oauth_outcome(&self) -> Option<oauth::Outcome> {
        self.mcp.as_ref().and_then(|m| m.oauth_outcome())
    }

    /// The built-in task board, when it is one.
    pub fn as_taskboard(&self) -> Option<&Arc<TaskBoard>> {
        self.taskboard.as_ref()
    }

    /// The OpenAgents board, when it is one.
    pub fn as_openagents(&self) -> Option<&OpenAgentsBoard> {
        self.openagents.as_ref()
    }

    /// Starts a blueprint's workstation: a `sandbox` container (see [`sandbox`]) with its
    /// `bash` tool, of the `execute` class. Other workstation types are refused.
    pub async fn workstation(
        ws: &blueprint::Workstation,
        settings: &FurnitureSettings,
    ) -> Result<Furniture, FurnitureError> {
        match ws.workstation_type {
            blueprint::WorkstationType::Sandbox => {
                let sandbox = Arc::new(Sandbox::start(ws, settings).await?);
                Ok(Self::from_sandbox(sandbox))
            }
            other => Err(FurnitureError::Config {
                name: ws.effective_name().to_owned(),
                message: format!("{} workstations are not provided yet", other.as_str()),
            }),
        }
    }

    /// A started sandbox.
    pub fn from_sandbox(sandbox: Arc<Sandbox>) -> Furniture {
        Furniture {
            name: sandbox.name().to_owned(),
            kind: "sandbox",
            tools: vec![FurnitureTool {
                spec: sandbox.bash_spec(),
                class: Class::Execute,
            }],
            toolbox: sandbox.clone(),
            mcp: None,
            sandbox: Some(sandbox),
            openagents: None,
            taskboard: None,
        }
    }

    /// A connected MCP server.
    pub fn from_mcp(name: &str, kind: &'static str, toolbox: McpToolbox) -> Furniture {
        let toolbox = Arc::new(toolbox);
        Furniture {
            name: name.to_owned(),
            kind,
            tools: toolbox.catalog().to_vec(),
            toolbox: toolbox.clone(),
            mcp: Some(toolbox),
            sandbox: None,
            openagents: None,
            taskboard: None,
        }
    }

    /// Any toolbox as furniture, with the class of each of its tools given (tests, embedders).
    pub async fn from_toolbox(
        name: &str,
        toolbox: Arc<dyn Toolbox>,
        class: impl Fn(&str) -> Class,
    ) -> Result<Furniture, ToolError> {
        let tools = toolbox
            .tools()
            .await?
            .into_iter()
            .map(|spec| FurnitureTool {
                class: class(&spec.name),
                spec,
            })
            .collect();
        Ok(Furniture {
            name: name.to_owned(),
            kind: "toolbox",
            tools,
            toolbox,
            mcp: None,
            sandbox: None,
            openagents: None,
            taskboard: None,
        })
    }

    /// Sets the class of the tools named in `overrides`; every name must be a tool.
    pub fn with_classes(
        mut self,
        overrides: &HashMap<String, Class>,
    ) -> Result<Furniture, FurnitureError> {
        for (tool, class) in overrides {
            match self.tools.iter_mut().find(|t| &t.spec.name == tool) {
                Some(t) => t.class = *class,
                None => {
                    let known: Vec<&str> =
                        self.tools.iter().map(|t| t.spec.name.as_str()).collect();
                    return Err(FurnitureError::Config {
                        name: self.name.clone(),
                        message: format!(
                            "`access` names the tool `{tool}`, which the furniture does not have (its tools: {known:?})"
                        ),
                    });
                }
            }
        }
        Ok(self)
    }

    /// Its name on the floor.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `taskboard`, `mcp (stdio)`, `mcp (streamable HTTP)`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Its tools, as discovered when it started.
    pub fn tools(&self) -> &[FurnitureTool] {
        &self.tools
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<&FurnitureTool> {
        self.tools.iter().find(|t| t.spec.name == name)
    }

    /// Calls a tool, unguarded: [`access::Guard`] is what agents get.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, ToolError> {
        self.toolbox.call(tool, arguments).await
    }

    /// The sandbox, when it is one.
    pub fn as_sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.sandbox.as_ref()
    }

    /// Stops it (an MCP server's process is asked to exit, then killed; a sandbox's
    /// container is removed).
    pub async fn shutdown(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
        if let Some(sandbox) = &self.sandbox {
            sandbox.stop().await;
        }
    }
}

/// What holding a tool takes. Ordered by how much a tool of the class can do, but a grant of
/// one class never implies another: each is granted on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Reads files or state.
    Read,
    /// Changes files or state.
    Write,
    /// Runs code, or anything the furniture did not describe.
    Execute,
}

impl Class {
    /// All three.
    pub const ALL: [Class; 3] = [Class::Read, Class::Write, Class::Execute];

    /// The spelling in blueprints and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
            Class::Execute => "execute",
        }
    }

    /// The wire permission.
    pub fn permission(self) -> Permission {
        match self {
            Class::Read => Permission::Read,
            Class::Write => Permission::Write,
            Class::Execute => Permission::Execute,
        }
    }

    /// The class a wire permission grants; a permission this version does not know grants
    /// nothing.
    pub fn from_permission(permission: &Permission) -> Option<Class> {
        match permission {
            Permission::Read => Some(Class::Read),
            Permission::Write => Some(Class::Write),
            Permission::Execute => Some(Class::Execute),
            Permission::Other(_) => None,
        }
    }

    /// The class of a blueprint access kind (`external` and `grant` are not tool classes).
    pub fn from_access(access: blueprint::Access) -> Option<Class> {
        match access {
            blueprint::Access::Read => Some(Class::Read),
            blueprint::Access::Write => Some(Class::Write),
            blueprint::Access::Execute => Some(Class::Execute),
            blueprint::Access::External | blueprint::Access::Grant => None,
        }
    }

    /// The blueprint access kind policies are written for.
    pub fn access(self) -> blueprint::Access {
        match self {
            Class::Read => blueprint::Access::Read,
            Class::Write => blueprint::Access::Write,
            Class::Execute => blueprint::Access::Execute,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
