//! The task board of a project that holds `.openagents/` (seed 002): the board *is*
//! `.openagents/tasks.jsonl`, in the OpenAgents loop's own schema, so that the floor's agents
//! and an OpenAgents loop share one list of tasks.
//!
//! - **Tools**: `list_tasks` (filters, `ready`: the loop's ready rule and order — P0 first,
//!   oldest first), `get_task` (`read`); `add_task` (id `<idPrefix>-<hex>` as the loop makes
//!   them, `discoveredFrom` recorded), `update_task`, `close_task` (a reason is required and
//!   kept as `closeReason`) (`write`); and, when `project.json` has them, `run_tests` and
//!   `run_typecheck` (`execute`, see [`commands`]).
//! - **Changes** happen under the loop's lock ([`lock`]): the file is read, checked, changed
//!   and written to a temporary file that is renamed over it, so no line is ever torn and a
//!   change made meanwhile by another writer under the lock is never lost. Lines not changed
//!   are written back exactly as they were. Reads take the lock too: the loop writes the file
//!   in place, and a read in the middle could see a shorter file that still parses. So while
//!   an OpenAgents loop runs (it holds the lock for its whole run) the board waits 10 s, then
//!   says which process holds the lock; only the check when the board opens reads without it.
//! - **Bounds**: the file's size and task count ([`MAX_TASKS_FILE_BYTES`],
//!   [`MAX_TASK_LINES`]), every text argument, the answer of `list_tasks`, the commands'
//!   output and time.
//!
//! Ids are `<idPrefix>-` plus the shortest unused prefix (6 hex digits or more) of a SHA-256 over
//! the title, description, time and a random number, as the loop's `deriveUniqueId` makes them;
//! `discoveredFrom` goes into `source` and `deps` (`discovered-from`); `close_task` appends the
//! commits it is given; `update_task` cannot close, and reopening clears `closedAt` and
//! `closeReason`, as the loop does. Fields outside the loop's schema are refused with their path
//! (`index_schema::openagents`), because the loop drops unknown fields when it rewrites the file.

pub mod commands;
pub mod lock;

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use index_schema::openagents::{
    MAX_TASK_LINES, MAX_TASKS_FILE_BYTES, MAX_TITLE_CHARS, PROJECT_FILE, Project, Status,
    TASKS_FILE, Task, TaskLine, TaskType, parse_tasks, task_from_value,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{Class, FurnitureTool};
use crate::llm::{ToolError, ToolSpec, Toolbox};
use lock::AgentLock;

/// The longest description, notes or reason, in bytes.
pub const MAX_TEXT: usize = 64 * 1024;
/// The most tasks `list_tasks` answers.
pub const MAX_LISTED: usize = 500;
/// The most output kept of a command, in bytes.
pub const OUTPUT_CAP: usize = 16 * 1024;
/// The longest a command may run, whatever `project.json` says.
pub const MAX_COMMAND_TIME: Duration = Duration::from_secs(600);

/// The board over a project's `.openagents/`.
#[derive(Debug, Clone)]
pub struct OpenAgentsBoard {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    root: PathBuf,
    project: Project,
    lock_wait: Duration,
    /// One change at a time within this process (the lock file orders processes).
    changing: std::sync::Mutex<()>,
    sandbox: OnceLock<Arc<dyn Toolbox>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAgentsBoard")
            .field("dir", &self.dir)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

fn located(file: &str, d: &index_schema::Diagnostics) -> String {
    d.iter()
        .map(|d| format!("{file}:{d}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a file of `.openagents/` (bounded; not through a symbolic link).
fn read_text(path: &Path, max: usize) -> Result<Option<String>, String> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mut text = String::new();
    fs::File::open(path)
        .and_then(|f| f.take(max as u64 + 1).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() > max {
        return Err(format!("{} is larger than {max} bytes", path.display()));
    }
    Ok(Some(text))
}

impl OpenAgentsBoard {
    /// Opens the board of the `.openagents` directory `dir`: `project.json` must be valid,
    /// and `tasks.jsonl` too when it exists (errors as `tasks.jsonl:2:14: status: …`). A
    /// change waits up to `lock_wait` for the lock.
    pub fn open(dir: &Path, lock_wait: Duration) -> Result<OpenAgentsBoard, String> {
        Ok(OpenAgentsBoard {
            inner: Arc::new(Inner::open(dir, lock_wait)?),
        })
    }

    /// Runs the project's commands through this sandbox, when `sandbox.enabled` is true.
    pub fn use_sandbox(&self, sandbox: Arc<dyn Toolbox>) {
        if self.inner.project.sandboxed() {
            let _ = self.inner.sandbox.set(sandbox);
        }
    }

    /// The project.
    pub fn project(&self) -> &Project {
        &self.inner.project
    }

    /// The tasks file.
    pub fn tasks_path(&self) -> PathBuf {
        self.inner.tasks_path()
    }

    /// The tools and their classes.
    pub fn catalog(&self) -> Vec<FurnitureTool> {
        self.inner.catalog()
    }

    /// The tasks as they are now.
    pub fn tasks(&self) -> Result<Vec<Task>, String> {
        Ok(self.inner.read()?.into_iter().map(|l| l.task).collect())
    }
}

impl Inner {
    fn open(dir: &Path, lock_wait: Duration) -> Result<Inner, String> {
        let text = read_text(&dir.join(PROJECT_FILE), 1024 * 1024)?.ok_or_else(|| {
            format!(
                "{} has no {PROJECT_FILE} (seed 002: it is required)",
                dir.display()
            )
        })?;
        let project = Project::from_json(&text).map_err(|d| located(PROJECT_FILE, &d))?;
        let base = dir.parent().unwrap_or(dir);
        let root = base.join(project.root_dir());
        if !root.is_dir() {
            return Err(format!(
                "{PROJECT_FILE}: rootDir: {} is not a directory",
                root.display()
            ));
        }
        let board = Inner {
            dir: dir.to_path_buf(),
            root,
            project,
            lock_wait,
            changing: std::sync::Mutex::new(()),
            sandbox: OnceLock::new(),
        };
        board.peek()?;
        Ok(board)
    }

    fn tasks_path(&self) -> PathBuf {
        self.dir.join(TASKS_FILE)
    }

    fn catalog(&self) -> Vec<FurnitureTool> {
        let status =
            json!({"type": "string", "enum": ["open", "in_progress", "blocked", "closed"]});
        let open_status = json!({"type": "string", "enum": ["open", "in_progress", "blocked"]});
        let types = json!({"type": "string", "enum": ["task", "bug", "feature", "epic", "chore"]});
        let deps = json!({"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"},
            "type": {"type": "string", "enum": ["blocks", "related", "parent-child", "discovered-from"]}},
            "required": ["id", "type"]}});
        let strings = json!({"type": "array", "items": {"type": "string"}});
        let mut tools = vec![
            (
                "list_tasks",
                "List the project's tasks (.openagents/tasks.jsonl). `ready: true` gives the work an OpenAgents loop would pick next, in its order (P0 first, oldest first).",
                json!({"type": "object", "properties": {"status": status, "ready": {"type": "boolean"},
                    "assignee": {"type": "string"}, "label": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LISTED}}}),
                Class::Read,
            ),
            (
                "get_task",
                "Get one task by its id.",
                json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
                Class::Read,
            ),
            (
                "add_task",
                "Add a task (status open); answers it with its new id. `discoveredFrom` names the task during which this work was found.",
                json!({"type": "object", "properties": {"title": {"type": "string"},
                    "description": {"type": "string"}, "type": types,
                    "priority": {"type": "integer", "minimum": 0, "maximum": 4},
                    "labels": strings, "assignee": {"type": "string"}, "deps": deps,
                    "discoveredFrom": {"type": "string"}}, "required": ["title"]}),
                Class::Write,
            ),
            (
                "update_task",
                "Change a task: status (open, in_progress, blocked; close with close_task), assignee, title, description, priority, labels, notes, deps.",
                json!({"type": "object", "properties": {"id": {"type": "string"}, "status": open_status,
                    "assignee": {"type": "string"}, "title": {"type": "string"},
                    "description": {"type": "string"},
                    "priority": {"type": "integer", "minimum": 0, "maximum": 4},
                    "labels": strings, "notes": {"type": "string"}, "deps": deps},
                    "required": ["id"]}),
                Class::Write,
            ),
            (
                "close_task",
                "Close a task with the reason (and the commits that did it).",
                json!({"type": "object", "properties": {"id": {"type": "string"},
                    "reason": {"type": "string"}, "commits": strings}, "required": ["id", "reason"]}),
                Class::Write,
            ),
        ];
        if !self.project.test_commands.is_empty() {
            tools.push((
                "run_tests",
                "Run the project's test commands (project.json testCommands), in order until one fails.",
                json!({"type": "object", "properties": {}}),
                Class::Execute,
            ));
        }
        if !self.project.typecheck_commands.is_empty() {
            tools.push((
                "run_typecheck",
                "Run the project's type-check commands (project.json typecheckCommands), in order until one fails.",
                json!({"type": "object", "properties": {}}),
                Class::Execute,
            ));
        }
        tools
            .into_iter()
            .map(|(name, description, parameters, class)| FurnitureTool {
                spec: ToolSpec {
                    name: name.into(),
                    description: description.into(),
                    parameters,
                },
                class,
            })
            .collect()
    }

    /// The tasks, read under the lock: the loop writes the file in place, so a read without
    /// it could see a shorter file that still parses.
    fn read(&self) -> Result<Vec<TaskLine>, String> {
        let _in_process = self.changing.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = AgentLock::acquire(&self.dir, self.lock_wait)
            .map_err(|e| format!("the task board cannot be read now: {e}"))?;
        self.peek()
    }

    /// The tasks, read without the lock (the check when the board opens, which must not wait
    /// for a loop that holds the lock for its whole run); a file that does not parse is read
    /// again a few times (an in-place writer may be half-way) before the error is reported.
    fn peek(&self) -> Result<Vec<TaskLine>, String> {
        let mut last = String::new();
        for attempt in 0..5 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(30));
            }
            let Some(text) = read_text(&self.tasks_path(), MAX_TASKS_FILE_BYTES)? else {
                return Ok(Vec::new());
            };
            match parse_tasks(&text) {
                Ok(tasks) => return Ok(tasks),
                Err(d) => last = located(TASKS_FILE, &d),
            }
        }
        Err(format!(
            "{last}\nthe board changes nothing until tasks.jsonl is fixed (`ofc validate .openagents/tasks.jsonl`)"
        ))
    }

    /// One change of `tasks.jsonl` under the lock: `change` gets the tasks and may edit
    /// their objects (marking them in the set) or add new ones.
    fn change<T>(
        &self,
        change: impl FnOnce(
            &mut Vec<TaskLine>,
            &mut BTreeSet<usize>,
            &mut Vec<Map<String, Value>>,
        ) -> Result<T, String>,
    ) -> Result<T, String> {
        let _in_process = self.changing.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = AgentLock::acquire(&self.dir, self.lock_wait)
            .map_err(|e| format!("the task board cannot change now: {e}"))?;
        let text = read_text(&self.tasks_path(), MAX_TASKS_FILE_BYTES)?.unwrap_or_default();
        let mut tasks = parse_tasks(&text).map_err(|d| {
            format!(
                "{}\nthe board changes nothing until tasks.jsonl is fixed (`ofc validate .openagents/tasks.jsonl`)",
                located(TASKS_FILE, &d)
            )
        })?;
        let mut changed = BTreeSet::new();
        let mut added = Vec::new();
        let out = change(&mut tasks, &mut changed, &mut added)?;
        if tasks.len() + added.len() > MAX_TASK_LINES {
            return Err(format!("the board is full ({MAX_TASK_LINES} tasks)"));
        }
        for i in &changed {
            task_from_value(&Value::Object(tasks[*i].raw.clone())).map_err(|d| {
                format!(
                    "the change would make an invalid task: {}",
                    located("task", &d)
                )
            })?;
        }
        for a in &added {
            task_from_value(&Value::Object(a.clone()))
                .map_err(|d| format!("the new task is invalid: {}", located("task", &d)))?;
        }
        if changed.is_empty() && added.is_empty() {
            return Ok(out);
        }
        let mut rewritten = String::with_capacity(text.len() + 1024);
        let by_line: std::collections::HashMap<u32, usize> =
            tasks.iter().enumerate().map(|(i, t)| (t.line, i)).collect();
        for (n, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let number = u32::try_from(n + 1).unwrap_or(u32::MAX);
            match by_line.get(&number) {
                Some(i) if changed.contains(i) => {
                    rewritten.push_str(&Value::Object(tasks[*i].raw.clone()).to_string());
                }
                _ if line.trim().is_empty() => continue,
                _ => rewritten.push_str(line),
            }
            rewritten.push('\n');
        }
        for a in added {
            rewritten.push_str(&Value::Object(a).to_string());
            rewritten.push('\n');
        }
        if rewritten.len() > MAX_TASKS_FILE_BYTES {
            return Err(format!(
                "tasks.jsonl would pass {MAX_TASKS_FILE_BYTES} bytes"
            ));
        }
        crate::switchboard::workspace::write_atomic(
            &self.dir,
            TASKS_FILE,
            rewritten.as_bytes(),
            0o644,
        )
        .map_err(|e| format!("cannot write tasks.jsonl: {e}"))?;
        Ok(out)
    }

    fn find(tasks: &[TaskLine], id: &str) -> Result<usize, String> {
        tasks
            .iter()
            .position(|t| t.task.id == id)
            .ok_or_else(|| format!("no task `{id}`"))
    }

    /// A new id: `<idPrefix>-` and the shortest hex of a hash (6 digits and more) no task has.
    fn new_id(&self, title: &str, description: &str, now: &str, taken: &BTreeSet<&str>) -> String {
        let prefix = self.project.id_prefix();
        let mut h = Sha256::new();
        for part in [prefix, title, description, now] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(rand::random::<u64>().to_le_bytes());
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        (6..=hex.len())
            .map(|n| format!("{prefix}-{}", &hex[..n]))
            .find(|id| !taken.contains(id.as_str()))
            .unwrap_or_else(|| format!("{prefix}-{hex}-{}", taken.len()))
    }

    fn call_sync(&self, tool: &str, args: &Map<String, Value>) -> Result<Value, String> {
        match tool {
            "list_tasks" => {
                known(args, &["status", "ready", "assignee", "label", "limit"])?;
                let status = match text(args, "status", 32)? {
                    Some(s) => {
                        Some(Status::parse(&s).ok_or(format!("`status` `{s}` is not a status"))?)
                    }
                    None => None,
                };
                let ready = flag(args, "ready")?;
                let assignee = text(args, "assignee", 256)?;
                let label = text(args, "label", 256)?;
                let limit = match args.get("limit") {
                    None | Some(Value::Null) => 200,
                    Some(v) => v
                        .as_u64()
                        .filter(|n| (1..=MAX_LISTED as u64).contains(n))
                        .ok_or(format!("`limit` must be 1 to {MAX_LISTED}"))?
                        as usize,
                };
                let lines = self.read()?;
                let all: Vec<Task> = lines.iter().map(|l| l.task.clone()).collect();
                let mut picked: Vec<&TaskLine> = lines
                    .iter()
                    .filter(|l| status.is_none_or(|s| l.task.status == s))
                    .filter(|l| !ready || l.task.is_ready(&all))
                    .filter(|l| {
                        assignee
                            .as_ref()
                            .is_none_or(|a| l.task.assignee.as_ref() == Some(a))
                    })
                    .filter(|l| label.as_ref().is_none_or(|x| l.task.labels.contains(x)))
                    .collect();
                if ready {
                    picked.sort_by(|a, b| {
                        (a.task.priority, &a.task.created_at, &a.task.id).cmp(&(
                            b.task.priority,
                            &b.task.created_at,
                            &b.task.id,
                        ))
                    });
                }
                let count = picked.len();
                let tasks: Vec<Value> = picked
                    .into_iter()
                    .take(limit)
                    .map(|l| Value::Object(l.raw.clone()))
                    .collect();
                Ok(json!({"count": count, "shown": tasks.len(), "tasks": tasks}))
            }
            "get_task" => {
                known(args, &["id"])?;
                let id = required(args, "id", 128)?;
                let lines = self.read()?;
                let i = Self::find(&lines, &id)?;
                Ok(Value::Object(lines[i].raw.clone()))
            }
            "add_task" => {
                known(
                    args,
                    &[
                        "title",
                        "description",
                        "type",
                        "priority",
                        "labels",
                        "assignee",
                        "deps",
                        "discoveredFrom",
                    ],
                )?;
                let title = required(args, "title", MAX_TITLE_CHARS * 4)?;
                if title.trim().is_empty() || title.chars().count() > MAX_TITLE_CHARS {
                    return Err(format!("`title` must be 1 to {MAX_TITLE_CHARS} characters"));
                }
                let description = text(args, "description", MAX_TEXT)?.unwrap_or_default();
                let task_type = match text(args, "type", 16)? {
                    Some(t) => {
                        TaskType::parse(&t).ok_or(format!(
                            "`type` `{t}` is not task, bug, feature, epic or chore"
                        ))?;
                        t
                    }
                    None => "task".into(),
                };
                let priority = priority(args)?.unwrap_or(2);
                let labels = strings(args, "labels")?.unwrap_or_default();
                let assignee = text(args, "assignee", 256)?;
                let mut deps = deps_arg(args)?.unwrap_or_default();
                let discovered = text(args, "discoveredFrom", 128)?;
                let now = crate::switchboard::now_iso();
                self.change(|tasks, _, added| {
                    let ids: BTreeSet<&str> = tasks.iter().map(|t| t.task.id.as_str()).collect();
                    for d in &deps {
                        if let Some(id) = d["id"].as_str()
                            && !ids.contains(id)
                        {
                            return Err(format!("`deps`: no task `{id}`"));
                        }
                    }
                    let mut source = Map::new();
                    if let Some(from) = &discovered {
                        if !ids.contains(from.as_str()) {
                            return Err(format!("`discoveredFrom`: no task `{from}`"));
                        }
                        source.insert("discoveredFrom".into(), json!(from));
                        deps.push(json!({"id": from, "type": "discovered-from"}));
                    }
                    let id = self.new_id(&title, &description, &now, &ids);
                    let mut task = Map::new();
                    task.insert("id".into(), json!(id));
                    task.insert("title".into(), json!(title));
                    task.insert("description".into(), json!(description));
                    task.insert("status".into(), json!("open"));
                    task.insert("priority".into(), json!(priority));
                    task.insert("type".into(), json!(task_type));
                    if let Some(a) = &assignee {
                        task.insert("assignee".into(), json!(a));
                    }
                    task.insert("labels".into(), json!(labels));
                    task.insert("deps".into(), Value::Array(deps.clone()));
                    task.insert("commits".into(), json!([]));
                    task.insert("createdAt".into(), json!(now));
                    task.insert("updatedAt".into(), json!(now));
                    task.insert("closedAt".into(), Value::Null);
                    if !source.is_empty() {
                        task.insert("source".into(), Value::Object(source));
                    }
                    added.push(task.clone());
                    Ok(Value::Object(task))
                })
            }
            "update_task" => {
                known(
                    args,
                    &[
                        "id",
                        "status",
                        "assignee",
                        "title",
                        "description",
                        "priority",
                        "labels",
                        "notes",
                        "deps",
                    ],
                )?;
                let id = required(args, "id", 128)?;
                let status = match text(args, "status", 32)? {
                    Some(s) if s == "closed" => {
                        return Err("close a task with close_task, which records the reason".into());
                    }
                    Some(s) => Some(Status::parse(&s).ok_or(format!(
                        "`status` `{s}` is not open, in_progress or blocked"
                    ))?),
                    None => None,
                };
                let mut edits: Vec<(&str, Value)> = Vec::new();
                if let Some(t) = text(args, "title", MAX_TITLE_CHARS * 4)? {
                    if t.trim().is_empty() || t.chars().count() > MAX_TITLE_CHARS {
                        return Err(format!("`title` must be 1 to {MAX_TITLE_CHARS} characters"));
                    }
                    edits.push(("title", json!(t)));
                }
                for (field, max) in [
                    ("assignee", 256),
                    ("description", MAX_TEXT),
                    ("notes", MAX_TEXT),
                ] {
                    if let Some(v) = text(args, field, max)? {
                        edits.push((field, json!(v)));
                    }
                }
                if let Some(p) = priority(args)? {
                    edits.push(("priority", json!(p)));
                }
                if let Some(l) = strings(args, "labels")? {
                    edits.push(("labels", json!(l)));
                }
                if let Some(d) = deps_arg(args)? {
                    edits.push(("deps", Value::Array(d)));
                }
                let now = crate::switchboard::now_iso();
                self.change(|tasks, changed, _| {
                    let i = Self::find(tasks, &id)?;
                    let raw = &mut tasks[i].raw;
                    for (field, value) in edits {
                        raw.insert(field.into(), value);
                    }
                    if let Some(s) = status {
                        raw.insert("status".into(), json!(s.as_str()));
                        // Reopened: no longer closed, as the loop does.
                        raw.insert("closedAt".into(), Value::Null);
                        raw.remove("closeReason");
                    }
                    raw.insert("updatedAt".into(), json!(now));
                    changed.insert(i);
                    Ok(Value::Object(raw.clone()))
                })
            }
            "close_task" => {
                known(args, &["id", "reason", "commits"])?;
                let id = required(args, "id", 128)?;
                let reason = required(args, "reason", MAX_TEXT)?;
                if reason.trim().is_empty() {
                    return Err("`reason` must say why the task is closed".into());
                }
                let commits = strings(args, "commits")?.unwrap_or_default();
                let now = crate::switchboard::now_iso();
                self.change(|tasks, changed, _| {
                    let i = Self::find(tasks, &id)?;
                    let raw = &mut tasks[i].raw;
                    let mut all: Vec<Value> = raw
                        .get("commits")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    for c in commits {
                        if !all.iter().any(|x| x.as_str() == Some(c.as_str())) {
                            all.push(json!(c));
                        }
                    }
                    raw.insert("status".into(), json!("closed"));
                    raw.insert("closeReason".into(), json!(reason));
                    raw.insert("closedAt".into(), json!(now));
                    raw.insert("updatedAt".into(), json!(now));
                    raw.insert("commits".into(), Value::Array(all));
                    changed.insert(i);
                    Ok(Value::Object(raw.clone()))
                })
            }
            other => Err(format!("the task board has no tool `{other}`")),
        }
    }
}

#[async_trait]
impl Toolbox for OpenAgentsBoard {
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(self.catalog().into_iter().map(|t| t.spec).collect())
    }

    async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<Value, ToolError> {
        let inner = &self.inner;
        let (commands, label) = match tool {
            "run_tests" => (&inner.project.test_commands, "testCommands"),
            "run_typecheck" => (&inner.project.typecheck_commands, "typecheckCommands"),
            _ => {
                // File work (and waiting for the lock) off the async threads.
                let inner = Arc::clone(&self.inner);
                let tool = tool.to_owned();
                return tokio::task::spawn_blocking(move || inner.call_sync(&tool, &args))
                    .await
                    .map_err(|e| ToolError(format!("the task board failed: {e}")))?
                    .map_err(ToolError);
            }
        };
        known(&args, &[]).map_err(ToolError)?;
        if commands.is_empty() {
            return Err(ToolError(format!("project.json has no {label}")));
        }
        let timeout = Duration::from_millis(inner.project.timeout_ms()).min(MAX_COMMAND_TIME);
        commands::run_all(
            &inner.root,
            commands,
            timeout,
            OUTPUT_CAP,
            inner.sandbox.get(),
        )
        .await
    }
}

fn known(args: &Map<String, Value>, fields: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "`{k}` is not an argument of this tool (its arguments: {})",
            if fields.is_empty() {
                "none".to_owned()
            } else {
                fields.join(", ")
            }
        )),
        None => Ok(()),
    }
}

fn text(args: &Map<String, Value>, key: &str, max: usize) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(format!("`{key}` is longer than {max} bytes")),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn required(args: &Map<String, Value>, key: &str, max: usize) -> Result<String, String> {
    text(args, key, max)?.ok_or_else(|| format!("`{key}` is required"))
}

fn flag(args: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("`{key}` must be true or false")),
    }
}

fn priority(args: &Map<String, Value>) -> Result<Option<u64>, String> {
    match args.get("priority") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|p| *p <= 4)
            .map(Some)
            .ok_or_else(|| "`priority` must be 0 (P0) to 4".into()),
    }
}

fn strings(args: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) if a.len() <= 64 => a
            .iter()
            .map(|v| match v {
                Value::String(s) if !s.is_empty() && s.len() <= 256 => Ok(s.clone()),
                _ => Err(format!("`{key}` holds 1 to 256-byte strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` must be a list of at most 64 strings")),
    }
}

fn deps_arg(args: &Map<String, Value>) -> Result<Option<Vec<Value>>, String> {
    match args.get("deps") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) if a.len() <= 64 => {
            for d in a {
                let ok = d.as_object().is_some_and(|o| {
                    o.len() == 2
                        && o.get("id")
                            .and_then(Value::as_str)
                            .is_some_and(|s| !s.is_empty() && s.len() <= 128)
                        && o.get("type").and_then(Value::as_str).is_some_and(|t| {
                            ["blocks", "related", "parent-child", "discovered-from"].contains(&t)
                        })
                });
                if !ok {
                    return Err("`deps` holds {id, type} objects, type blocks, related, parent-child or discovered-from".into());
                }
            }
            Ok(Some(a.clone()))
        }
        Some(_) => Err("`deps` must be a list of at most 64 dependencies".into()),
    }
}
