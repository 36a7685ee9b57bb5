//! From a blueprint to a plan: every agent resolved and checked, nothing started yet.
//!
//! Every problem is collected with the blueprint field it comes from and reported at once,
//! `file:line:col: agents[2].type: …`, before any process starts or any floor opens.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use index_schema::agent_yaml::{AgentSource, AgentYaml};
use index_schema::blueprint::{Blueprint, InlineAgentType};
use index_schema::manifest::Activation as YamlActivation;
use index_schema::source::{self, SourceDoc};
use index_schema::switchboard::Role;
use index_schema::{Diagnostics, FieldPath};
use runtime::agent::{AcpCommand, Agent, Permissions, ProcessCommand};
use runtime::llm::LlmAgent;
use runtime::{Activation, Handle};

use super::agents;
use crate::container::{self, ContainerSpec};
use crate::start::Start;

/// The most bytes a blueprint or agent file may have.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most pieces of furniture (and workstations) a blueprint may list.
const MAX_FURNITURE: usize = 64;

/// How long a process agent may take to answer `/ofc/info` after it starts.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(15);

/// How long a container agent may take to answer `/ofc/info` once its container runs.
pub const CONTAINER_STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// One agent, ready to be started.
#[derive(Debug)]
pub struct Planned {
    /// Its handle.
    pub handle: Handle,
    /// How it is woken.
    pub activation: Activation,
    /// How it runs.
    pub kind: Kind,
    /// The blueprint field it comes from (`agents[2]`), for messages.
    pub field: String,
    /// The blueprint field a problem found when it starts is reported at (its entry; for an
    /// inline LLM agent the `endpoint` it uses).
    pub blame: FieldPath,
}

/// How a planned agent runs.
#[derive(Debug)]
pub enum Kind {
    /// A local process serving the OFC agent API on `OFC_PORT`.
    Process(ProcessCommand),
    /// An agent already running at an OFC endpoint.
    Remote(String),
    /// An agent built in-process.
    Ready(Arc<dyn Agent>),
    /// The built-in LLM agent (it is told who else is on the floor before the floor opens).
    Llm(Arc<LlmAgent>),
    /// A pulled container image, run with podman or docker.
    Container(ContainerSpec),
    /// An inline `type: acp` agent: a command spoken to over stdio with the Agent Client
    /// Protocol (its supervisor hook and log are set when it starts).
    Acp(Box<AcpCommand>),
    /// An inline `type: switchboard` agent (seed 004): its turns are files in
    /// `.switchboard/` (it becomes [`Kind::Ready`] once the Switchboard is open).
    Switchboard(FileAgent),
}

/// A loaded blueprint: the parsed document (for positions) and its directory.
#[derive(Debug)]
pub struct Loaded {
    /// What the blueprint has that ofc accepts but does not act on, one
    /// `file:line:col: field: …` line each.
    pub warnings: Vec<String>,
    /// The file.
    pub path: PathBuf,
    /// Its directory (the project).
    pub dir: PathBuf,
    /// The blueprint.
    pub blueprint: Blueprint,
    /// The parsed text, for line numbers.
    pub doc: SourceDoc,
}

/// Says what the blueprint and its agent files have that ofc accepts but does not act on (never
/// ignored silently), one `warning:` line each on stderr.
pub fn say_warnings(out: &mut crate::output::Output, warnings: &[String]) {
    for w in warnings {
        out.status(&format!("warning: {w}"));
    }
}

/// Problems with the blueprint, positioned: `file:line:col: field: message`, one per line.
pub fn report(path: &Path, doc: &SourceDoc, diags: Diagnostics) -> String {
    let diags = doc.locate(diags);
    let mut out = String::new();
    for (i, d) in diags.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match d.position {
            Some(p) => out.push_str(&format!(
                "{}:{}: {}: {}",
                path.display(),
                p,
                d.path,
                d.message
            )),
            None => out.push_str(&format!("{}: {}: {}", path.display(), d.path, d.message)),
        }
    }
    out
}

/// Reads and validates the blueprint.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} is {} bytes; a blueprint may have at most {MAX_FILE_BYTES}",
            path.display(),
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    load_text(path, &text)
}

/// Validates a blueprint's `text` as if read from `path` (a named floor's stored copy: its
/// relative paths are taken from `path`'s directory, its problems named by `path`).
pub fn load_text(path: &Path, text: &str) -> Result<Loaded, String> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{} is {} bytes; a blueprint may have at most {MAX_FILE_BYTES}",
            path.display(),
            text.len()
        ));
    }
    let mut doc = source::parse_yaml(text).map_err(|d| {
        let empty = SourceDoc::from_value(serde_json::Value::Null);
        report(path, &empty, d)
    })?;
    // The floor's limits come before any work per agent (checks and plans that compare agents
    // with each other grew with the square of their number: a 10,000-agent blueprint took
    // gigabytes before the floor refused it).
    for (field, max) in [
        (
            "agents",
            runtime::floor::FloorSettings::default().max_agents,
        ),
        ("furniture", MAX_FURNITURE),
        ("workstations", MAX_FURNITURE),
    ] {
        if let Some(n) = doc
            .value
            .get(field)
            .and_then(|v| v.as_array())
            .map(Vec::len)
            && n > max
        {
            let mut d = Diagnostics::default();
            d.push(
                FieldPath::root().key(field),
                format!("{n} entries; a floor holds at most {max}"),
            );
            return Err(report(path, &doc, d));
        }
    }
    // `${VAR}` in every string, once, from ofc's environment (before the checks: an endpoint
    // may be `${ENDPOINT:-http://…}`).
    let literal_keys = crate::blueprint_files::literal_api_keys(&doc);
    let unset = crate::blueprint_files::expand_vars(&mut doc);
    if !unset.is_empty() {
        return Err(report(path, &doc, unset));
    }
    let mut blueprint = Blueprint::from_doc(&doc).map_err(|d| report(path, &doc, d))?;
    let mut found = blueprint.warnings();
    found.extend(literal_keys);
    let warnings = if found.is_empty() {
        Vec::new()
    } else {
        report(path, &doc, found)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let dir = dir.canonicalize().unwrap_or(dir);
    let unread = crate::blueprint_files::read_prompt_files(&mut blueprint, &dir);
    if !unread.is_empty() {
        return Err(report(path, &doc, unread));
    }
    Ok(Loaded {
        warnings,
        path: path.to_path_buf(),
        dir,
        blueprint,
        doc,
    })
}

/// What the blueprint has that this build cannot run yet, as diagnostics on its fields
/// (`filesystem` workstations; sandboxes, furniture and `floor_manager` policies run).
pub fn unsupported(bp: &Blueprint) -> Diagnostics {
    let mut d = Diagnostics::default();
    let root = FieldPath::root();
    for (i, w) in bp.workstations.iter().enumerate() {
        if w.workstation_type == index_schema::blueprint::WorkstationType::Sandbox {
            continue;
        }
        d.push(
            root.key("workstations").index(i),
            format!(
                "{} workstations are not available yet in `ofc run` (`{}` cannot be \
                 provided); use a sandbox, or an MCP filesystem server as furniture",
                w.workstation_type.as_str(),
                w.effective_name()
            ),
        );
    }
    d
}

fn activation(a: Option<&YamlActivation>) -> Activation {
    match a {
        Some(YamlActivation::Always) => Activation::Always,
        _ => Activation::Mention,
    }
}

fn handle_of(h: &index_schema::name::AgentHandle) -> Result<Handle, String> {
    Handle::new(&format!("@{}", h.name())).map_err(|e| e.to_string())
}

/// How long an ACP agent may take to start and open its session.
pub const ACP_STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// An inline `type: acp` agent: its program looked up now, its `env` (already expanded, see
/// [`index_schema::blueprint::vars`]) added to ofc's environment, its permission requests
/// to be answered by the blueprint's `floor_manager`. Errors name the field under `field`, the
/// agent's entry.
pub fn acp_agent(
    a: &index_schema::blueprint::InlineAgent,
    bp: &Blueprint,
    dir: &Path,
    field: &FieldPath,
) -> Result<(Handle, Activation, Kind), (FieldPath, String)> {
    let handle = handle_of(&a.id).map_err(|e| (field.key("id"), e))?;
    let command = a.command.as_deref().ok_or_else(|| {
        (
            field.key("command"),
            "an acp agent needs a `command`".to_owned(),
        )
    })?;
    let program = resolve_program(command, dir).map_err(|e| (field.key("command"), e))?;
    // Values were `${VAR}`-expanded with the rest of the blueprint when it was loaded.
    let env: Vec<(String, String)> = a.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    // An ACP agent is given its prompt once, when it starts: a template is rendered now.
    let prompt = match a.prompt.as_deref() {
        Some(p) if index_schema::blueprint::template::is_template(p) => {
            let t = index_schema::blueprint::template::Template::parse(p)
                .map_err(|e| (field.key("prompt"), e))?;
            Some(crate::blueprint_files::render(&t, dir).map_err(|e| (field.key("prompt"), e))?)
        }
        other => other.map(str::to_owned),
    };
    let act = activation(a.activation.as_ref());
    let wire_activation = match act {
        Activation::Always => index_schema::wire::Activation::Always,
        _ => index_schema::wire::Activation::Mention,
    };
    let config = AcpCommand {
        handle: handle.to_string(),
        name: a.name.clone(),
        command: program.display().to_string(),
        args: a.args.clone(),
        env,
        working_dir: dir.to_path_buf(),
        prompt,
        activation: wire_activation,
        on_spawn: None,
        stderr_log: None,
        start_deadline: ACP_STARTUP_DEADLINE,
        permissions: Permissions::new(bp.floor_manager.clone(), a.id.clone()),
        mcp_servers: Vec::new(),
    };
    Ok((handle, act, Kind::Acp(Box::new(config))))
}

/// The program of a `command`: a path with a `/` is taken relative to `dir`; a bare name is
/// looked up in `PATH` now, so that a typo is reported before anything starts.
fn resolve_program(command: &str, dir: &Path) -> Result<PathBuf, String> {
    if command.contains('/') {
        let p = dir.join(command);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "`{command}` does not exist (looked for {})",
                p.display()
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        let p = d.join(command);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(format!("`{command}` is not found in PATH"))
}

/// An agent described by an `agent.yaml` in `dir`. What the file has that ofc accepts but does
/// not act on is added to `warnings`, one `file:line:col: field: …` line each.
pub fn from_agent_yaml(
    file: &Path,
    dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<(Handle, Activation, Kind), String> {
    let meta =
        std::fs::metadata(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes",
            file.display()
        ));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let lower = file.to_string_lossy().to_ascii_lowercase();
    // A YAML file in fast-agent's card folders is a card, whatever its name.
    if lower.ends_with(".md")
        || lower.ends_with(".json")
        || lower.ends_with(".card.yaml")
        || lower.ends_with(".card.yml")
        || crate::detect::in_fast_agent_card_folder(file)
    {
        return Err(format!(
            "{}: AgentCards are not runnable by `ofc run` in this build; use an agent.yaml",
            file.display()
        ));
    }
    let doc = source::parse_yaml(&text)
        .map_err(|d| report(file, &SourceDoc::from_value(serde_json::Value::Null), d))?;
    let y = AgentYaml::from_doc(&doc).map_err(|d| report(file, &doc, d))?;
    let found = y.warnings();
    if !found.is_empty() {
        warnings.extend(report(file, &doc, found).lines().map(str::to_owned));
    }
    let handle = handle_of(&y.id)?;
    let act = activation(y.activation.as_ref());
    if let Some(command) = &y.command {
        let program = resolve_program(command, dir)
            .map_err(|e| format!("{}: command: {e}", file.display()))?;
        let mut cmd = ProcessCommand::new(program).args(y.args.iter().cloned());
        cmd.env = y.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        cmd.cwd = Some(dir.to_path_buf());
        cmd.startup_deadline = STARTUP_DEADLINE;
        return Ok((handle, act, Kind::Process(cmd)));
    }
    match &y.source {
        Some(AgentSource::Remote { endpoint }) => {
            return Ok((handle, act, Kind::Remote(endpoint.clone())));
        }
        Some(other) => {
            return Err(format!(
                "{}: source: a {} agent must be pulled first (`ofc pull`), or list it in the \
                 blueprint by its hub name",
                file.display(),
                match other {
                    AgentSource::Pip { .. } => "pip",
                    AgentSource::Npm { .. } => "npm",
                    AgentSource::Docker { .. } => "docker",
                    _ => "packaged",
                }
            ));
        }
        None => {}
    }
    // No command and no source: a built-in LLM agent.
    use index_schema::agent_yaml::Memory as YamlMemory;
    use index_schema::blueprint::Memory;
    let inline = index_schema::blueprint::InlineAgent {
        id: y.id.clone(),
        name: y.name.clone(),
        agent_type: Some(InlineAgentType::Llm),
        model: y.model.clone(),
        endpoint: y.endpoint.clone(),
        command: None,
        args: Vec::new(),
        env: y.env.clone(),
        prompt: y.prompt.clone(),
        prompt_file: None,
        activation: y.activation,
        can_use_tools: y.can_use_tools,
        temperature: y.temperature,
        tool_context: None,
        furniture: Vec::new(),
        // agent.yaml's `context_window` counts messages (seed 001), the blueprint's tokens.
        memory: match (y.memory, y.context_window) {
            (Some(YamlMemory::Buffer), _) | (None, None) => None,
            (Some(YamlMemory::Rag), _) => {
                return Err(format!(
                    "{}: memory: `rag` is not available in this build (use `window` or `summary`)",
                    file.display()
                ));
            }
            (memory, window) => Some(Memory {
                window: window.unwrap_or(AGENT_YAML_MEMORY_WINDOW).clamp(1, 10_000),
                summary: memory == Some(YamlMemory::Summary),
            }),
        },
        context_window: None,
        api_key_env: None,
        api_key: None,
        thinking: None,
        thinking_tags: None,
        role: None,
        team: None,
        persona: None,
    };
    let agent =
        agents::llm_agent(&inline, None, None).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((handle, act, Kind::Llm(agent)))
}

/// How many of the latest messages an `agent.yaml` LLM agent with `memory: window` or
/// `memory: summary` and no `context_window` sees in full.
pub const AGENT_YAML_MEMORY_WINDOW: u32 = 20;

/// A pulled agent, by how it starts.
pub fn from_start(
    start: &Start,
    name: &str,
) -> Result<(Option<(Handle, Activation)>, Kind), String> {
    match start {
        Start::AgentFile { file, dir } => {
            // A pulled agent's file is its publisher's: `ofc publish` showed them its warnings.
            let (h, a, k) = from_agent_yaml(file, dir, &mut Vec::new())?;
            Ok((Some((h, a)), k))
        }
        Start::Process {
            program,
            args,
            env,
            cwd,
        } => {
            let mut cmd = ProcessCommand::new(program.clone()).args(args.iter().cloned());
            cmd.env = env.clone();
            cmd.cwd = Some(cwd.clone());
            cmd.startup_deadline = STARTUP_DEADLINE;
            Ok((None, Kind::Process(cmd)))
        }
        Start::Container {
            image,
            port,
            layout,
            config,
        } => {
            // No engine, no start: said now, before anything runs.
            container::find_engine().map_err(|e| format!("{name}: {e}"))?;
            Ok((
                None,
                Kind::Container(ContainerSpec {
                    image: image.clone(),
                    port: *port,
                    layout: layout.clone(),
                    config: config.clone(),
                }),
            ))
        }
        Start::Remote { endpoint } => Ok((None, Kind::Remote(endpoint.clone()))),
    }
}

/// A blueprint `type: switchboard` agent, before the Switchboard exists.
#[derive(Debug, Clone)]
pub struct FileAgent {
    /// The seed's role.
    pub role: Option<Role>,
    /// Its team.
    pub team: Option<String>,
    /// Persona text for the messages it is sent.
    pub persona: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blueprint naming `.fast-agent/agent-cards/agent.yaml` names a card (every YAML file
    /// there is one), which `ofc run` cannot run yet; it is not read as an agent.yaml.
    #[test]
    fn an_agent_yaml_in_a_card_folder_is_not_run_as_an_agent_yaml() {
        let d = tempfile::tempdir().unwrap();
        let folder = d.path().join(".fast-agent/agent-cards");
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("agent.yaml");
        std::fs::write(&file, "type: a2a\nurl: https://agents.example/a2a\n").unwrap();
        let e = from_agent_yaml(&file, &folder, &mut Vec::new()).unwrap_err();
        assert!(e.contains("AgentCards are not runnable"), "{e}");
        // The same text outside a card folder is an agent.yaml, refused as one.
        let file = d.path().join("agent.yaml");
        std::fs::write(&file, "type: a2a\nurl: https://agents.example/a2a\n").unwrap();
        let e = from_agent_yaml(&file, d.path(), &mut Vec::new()).unwrap_err();
        assert!(e.contains("unknown field `type`"), "{e}");
    }

    /// `${…}` is expanded from ofc's environment before the checks (a default endpoint passes
    /// the URL check); an unset variable names itself and its field, at its line.
    #[test]
    fn variables_are_expanded_when_the_blueprint_is_loaded() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("blueprint.yaml");
        std::fs::write(
            &file,
            "name: vars\nagents:\n  - id: \"@a\"\n    model: m\n    endpoint: \"${OFC_PLAN_TEST_UNSET_1:-http://127.0.0.1:9/v1}\"\n    prompt: \"$5 and ${OFC_PLAN_TEST_UNSET_2-}done\"\n",
        )
        .unwrap();
        let loaded = load(&file).unwrap();
        let a = loaded.blueprint.agents[0].as_inline().unwrap();
        assert_eq!(a.endpoint.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(a.prompt.as_deref(), Some("$5 and done"));
        std::fs::write(
            &file,
            "name: vars\nagents:\n  - id: \"@a\"\n    model: m\n    prompt: \"hi ${OFC_PLAN_TEST_UNSET_3}\"\n",
        )
        .unwrap();
        let e = load(&file).err().unwrap();
        assert!(
            e.contains(":5:")
                && e.contains("agents[0].prompt")
                && e.contains("OFC_PLAN_TEST_UNSET_3 is not set"),
            "{e}"
        );
    }
}
