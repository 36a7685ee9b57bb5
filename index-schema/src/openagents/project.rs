//! `.openagents/project.json`.

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::source;

/// The most commands in one of the command lists.
const MAX_COMMANDS: usize = 64;
/// The longest command, in bytes.
const MAX_COMMAND_BYTES: usize = 4096;

/// `project.json`, as the OpenAgents loop's `ProjectConfig` reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Project {
    /// The format version; 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// A human-readable id.
    pub project_id: String,
    /// The branch pushed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
    /// The loop's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The project root, relative to the directory holding `.openagents/` (default `.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_dir: Option<String>,
    /// Commands that run the tests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_commands: Vec<String>,
    /// Commands that type-check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub typecheck_commands: Vec<String>,
    /// End-to-end test commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub e2e_commands: Vec<String>,
    /// Whether the loop may push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_push: Option<bool>,
    /// Whether it may force-push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_force_push: Option<bool>,
    /// Tasks per overnight run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tasks_per_run: Option<u32>,
    /// Minutes per overnight run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runtime_minutes: Option<u32>,
    /// The prefix of generated task ids (default `oa`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<String>,
    /// The loop's session directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    /// The loop's run-log directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_log_dir: Option<String>,
    /// Claude Code settings of the loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_code: Option<ClaudeCode>,
    /// Sandboxed verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<ProjectSandbox>,
    /// The loop's parallel execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_execution: Option<ParallelExecution>,
    /// The loop's trajectory capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Trajectory>,
    /// The loop's self-healing subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healer: Option<Healer>,
    /// Cloud integration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<Cloud>,
}

/// `claudeCode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaudeCode {
    /// Whether subtasks use Claude Code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Prefer it for complex tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer_for_complex_tasks: Option<bool>,
    /// Turns per subtask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns_per_subtask: Option<u32>,
    /// `default`, `acceptEdits`, `bypassPermissions`, `plan` or `dontAsk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<PermissionMode>,
    /// Fall back to the minimal subagent on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_to_minimal: Option<bool>,
}

/// `claudeCode.permissionMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// `default`
    Default,
    /// `acceptEdits`
    AcceptEdits,
    /// `bypassPermissions`
    BypassPermissions,
    /// `plan`
    Plan,
    /// `dontAsk`
    DontAsk,
}

/// `sandbox`: where verification commands run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectSandbox {
    /// Run verification in a container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `auto`, `docker`, `podman`, `macos-container`, `seatbelt` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<SandboxBackend>,
    /// The container image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `8G`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<String>,
    /// CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit: Option<f64>,
    /// A command's timeout in milliseconds (default 300000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `sandbox.backend`: the seed's values and the loop's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxBackend {
    /// `auto`
    Auto,
    /// `docker`
    Docker,
    /// `podman`
    Podman,
    /// `macos-container`
    MacosContainer,
    /// `seatbelt`
    Seatbelt,
    /// `none`
    None,
}

/// `parallelExecution`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ParallelExecution {
    /// On or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Agents at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_agents: Option<u32>,
    /// Milliseconds per worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_timeout: Option<u64>,
    /// Milliseconds for installing dependencies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_timeout_ms: Option<u64>,
    /// Extra `bun install` arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_args: Option<Vec<String>>,
    /// Agents in containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_containers: Option<bool>,
    /// `auto`, `direct`, `queue` or `pr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_strategy: Option<MergeStrategy>,
    /// Agents before `direct` becomes `queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_threshold: Option<u32>,
    /// Agents before `queue` becomes `pr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_threshold: Option<u32>,
}

/// `parallelExecution.mergeStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MergeStrategy {
    /// `auto`
    Auto,
    /// `direct`
    Direct,
    /// `queue`
    Queue,
    /// `pr`
    Pr,
}

/// `trajectory`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Trajectory {
    /// On or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Days kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<u32>,
    /// Gigabytes kept.
    #[serde(default, rename = "maxSizeGB", skip_serializing_if = "Option::is_none")]
    pub max_size_gb: Option<f64>,
    /// Tool arguments captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_tool_args: Option<bool>,
    /// Tool results captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_tool_results: Option<bool>,
    /// Where, relative to `.openagents/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
}

/// `healer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Healer {
    /// On or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Invocations per session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_invocations_per_session: Option<u32>,
    /// Invocations per subtask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_invocations_per_subtask: Option<u32>,
    /// What triggers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenarios: Option<HealerScenarios>,
    /// Allowed and forbidden spells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spells: Option<HealerSpells>,
    /// `conservative` or `aggressive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<HealerMode>,
    /// Hours before a stuck subtask triggers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_threshold_hours: Option<f64>,
}

/// `healer.scenarios`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HealerScenarios {
    /// Init script failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_init_failure: Option<bool>,
    /// Verification failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_verification_failure: Option<bool>,
    /// Subtask failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_subtask_failure: Option<bool>,
    /// Runtime errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_runtime_error: Option<bool>,
    /// Stuck subtasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_stuck_subtask: Option<bool>,
}

/// `healer.spells`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealerSpells {
    /// Allowed (all when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// Forbidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbidden: Option<Vec<String>>,
}

/// `healer.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealerMode {
    /// `conservative`
    Conservative,
    /// `aggressive`
    Aggressive,
}

/// `cloud`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cloud {
    /// Use the OpenAgents gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_gateway: Option<bool>,
    /// Send telemetry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_telemetry: Option<bool>,
    /// A relay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_url: Option<String>,
}

impl Project {
    /// Parses and checks `project.json`'s text.
    pub fn from_json(text: &str) -> Result<Project, Diagnostics> {
        let doc = source::parse_json(text)?;
        let project: Project = doc.deserialize()?;
        project.validate().map_err(|d| doc.locate(d))?;
        Ok(project)
    }

    /// The rules serde cannot say.
    pub fn validate(&self) -> Result<(), Diagnostics> {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        if self.version.is_some_and(|v| v != 1) {
            d.push(root.key("version"), "only version 1 is known");
        }
        if self.project_id.trim().is_empty() || self.project_id.len() > 128 {
            d.push(root.key("projectId"), "must be 1 to 128 characters");
        }
        if let Some(dir) = &self.root_dir {
            check_relative(dir, &root.key("rootDir"), &mut d);
        }
        for (field, list) in [
            ("testCommands", &self.test_commands),
            ("typecheckCommands", &self.typecheck_commands),
            ("e2eCommands", &self.e2e_commands),
        ] {
            if list.len() > MAX_COMMANDS {
                d.push(
                    root.key(field),
                    format!("has {} commands, more than {MAX_COMMANDS}", list.len()),
                );
            }
            for (i, c) in list.iter().enumerate() {
                if c.trim().is_empty() {
                    d.push(root.key(field).index(i), "must not be empty");
                } else if c.len() > MAX_COMMAND_BYTES {
                    d.push(
                        root.key(field).index(i),
                        format!("is longer than {MAX_COMMAND_BYTES} bytes"),
                    );
                } else if c.contains('\0') {
                    d.push(root.key(field).index(i), "must not contain a NUL byte");
                }
            }
        }
        if let Some(p) = &self.id_prefix {
            let ok = !p.is_empty()
                && p.len() <= 32
                && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok {
                d.push(
                    root.key("idPrefix"),
                    "must be 1 to 32 ASCII letters, digits or `_` (ids are `<idPrefix>-<hex>`)",
                );
            }
        }
        if let Some(s) = &self.sandbox {
            if s.timeout_ms == Some(0) {
                d.push(root.key("sandbox").key("timeoutMs"), "must be at least 1");
            }
            if s.cpu_limit.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
                d.push(
                    root.key("sandbox").key("cpuLimit"),
                    "must be a positive number",
                );
            }
        }
        d.into_result(())
    }

    /// `idPrefix`, else `oa`.
    pub fn id_prefix(&self) -> &str {
        self.id_prefix.as_deref().unwrap_or("oa")
    }

    /// `rootDir`, else `.`.
    pub fn root_dir(&self) -> &str {
        self.root_dir.as_deref().unwrap_or(".")
    }

    /// `sandbox.timeoutMs`, else the loop's default of 300000.
    pub fn timeout_ms(&self) -> u64 {
        self.sandbox
            .as_ref()
            .and_then(|s| s.timeout_ms)
            .unwrap_or(300_000)
    }

    /// Whether `sandbox.enabled` is true.
    pub fn sandboxed(&self) -> bool {
        self.sandbox
            .as_ref()
            .and_then(|s| s.enabled)
            .unwrap_or(false)
    }
}

/// A path inside the project: relative, without `..`.
fn check_relative(dir: &str, path: &FieldPath, d: &mut Diagnostics) {
    let escapes = dir.starts_with('/')
        || dir.starts_with('\\')
        || dir.contains(':')
        || dir.split(['/', '\\']).any(|part| part == "..");
    if dir.is_empty() || escapes || dir.contains('\0') {
        d.push(
            path.clone(),
            "must be a relative path inside the project (no `/` at the start, no `..`)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"{
  "version": 1,
  "projectId": "openagents",
  "defaultBranch": "main",
  "defaultModel": "x-ai/grok-4.1-fast:free",
  "rootDir": ".",
  "testCommands": ["bun test"],
  "typecheckCommands": ["bun run typecheck"],
  "e2eCommands": [],
  "allowPush": true,
  "allowForcePush": false,
  "maxTasksPerRun": 3,
  "maxRuntimeMinutes": 240,
  "idPrefix": "oa",
  "claudeCode": {
    "enabled": true,
    "preferForComplexTasks": false,
    "maxTurnsPerSubtask": 300,
    "permissionMode": "bypassPermissions",
    "fallbackToMinimal": false
  },
  "sandbox": {
    "enabled": false,
    "backend": "auto",
    "memoryLimit": "8G",
    "timeoutMs": 300000
  },
  "cloud": {
    "useGateway": false,
    "sendTelemetry": false,
    "relayUrl": null
  }
}"#;

    #[test]
    fn the_seeds_example_is_valid() {
        let p = Project::from_json(SEED).unwrap();
        assert_eq!(p.test_commands, ["bun test"]);
        assert_eq!(p.id_prefix(), "oa");
        assert_eq!(p.timeout_ms(), 300_000);
    }

    #[test]
    fn errors_name_the_field_and_line() {
        let bad = SEED.replace(
            "\"fallbackToMinimal\": false",
            "\"fallbackToMinimal\": false, \"turbo\": 1",
        );
        let e = Project::from_json(&bad).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "claudeCode.turbo");
        assert_eq!(e.0[0].position.unwrap().line, 20);
        let bad = SEED.replace("\"rootDir\": \".\"", "\"rootDir\": \"../elsewhere\"");
        let e = Project::from_json(&bad).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "rootDir");
        assert_eq!(e.0[0].position.unwrap().line, 6);
        let bad = SEED.replace("\"bun test\"", "\"\"");
        let e = Project::from_json(&bad).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "testCommands[0]");
        let bad = SEED.replace("\"idPrefix\": \"oa\"", "\"idPrefix\": \"o-a\"");
        assert_eq!(
            Project::from_json(&bad).unwrap_err().0[0].path.to_string(),
            "idPrefix"
        );
    }
}
