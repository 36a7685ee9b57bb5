//! The built-in task board: a shared list of tasks the floor's agents add, list and update.
//! In process and in memory (it lives as long as the floor). `list_tasks` and `get_task` are
//! `read` tools, `add_task` and `update_task` `write` tools.

use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Class, FurnitureTool};
use crate::llm::{ToolError, ToolSpec, Toolbox};

/// The most tasks a board holds.
pub const MAX_TASKS: usize = 10_000;
/// The longest title or description, in bytes.
pub const MAX_TEXT: usize = 4096;

const STATUSES: [&str; 3] = ["todo", "in_progress", "done"];

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Its number, from 1.
    pub id: u64,
    /// What to do.
    pub title: String,
    /// More about it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `todo`, `in_progress` or `done`.
    pub status: String,
    /// Who took it (`@coder`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub assignee: String,
}

/// The board.
#[derive(Debug, Default)]
pub struct TaskBoard {
    tasks: Mutex<Vec<Task>>,
}

impl TaskBoard {
    /// Its tools and their classes.
    pub fn catalog() -> Vec<FurnitureTool> {
        let status = json!({"type": "string", "enum": STATUSES});
        vec![
            FurnitureTool {
                spec: ToolSpec {
                    name: "list_tasks".into(),
                    description:
                        "List the tasks on the board, optionally only those with a status.".into(),
                    parameters: json!({"type": "object", "properties": {"status": status}}),
                },
                class: Class::Read,
            },
            FurnitureTool {
                spec: ToolSpec {
                    name: "get_task".into(),
                    description: "Get one task by its id.".into(),
                    parameters: json!({"type": "object", "properties": {"id": {"type": "integer"}},
                        "required": ["id"]}),
                },
                class: Class::Read,
            },
            FurnitureTool {
                spec: ToolSpec {
                    name: "add_task".into(),
                    description: "Add a task (status todo); answers the task with its id.".into(),
                    parameters: json!({"type": "object", "properties": {
                        "title": {"type": "string"}, "description": {"type": "string"}},
                        "required": ["title"]}),
                },
                class: Class::Write,
            },
            FurnitureTool {
                spec: ToolSpec {
                    name: "update_task".into(),
                    description: "Change a task's status, assignee, title or description.".into(),
                    parameters: json!({"type": "object", "properties": {
                        "id": {"type": "integer"}, "status": status,
                        "assignee": {"type": "string"}, "title": {"type": "string"},
                        "description": {"type": "string"}},
                        "required": ["id"]}),
                },
                class: Class::Write,
            },
        ]
    }

    /// The tasks, in order.
    pub fn tasks(&self) -> Vec<Task> {
        self.lock().clone()
    }

    /// Puts back the tasks of a resumed session (at most [`MAX_TASKS`]).
    pub fn restore(&self, mut tasks: Vec<Task>) {
        tasks.truncate(MAX_TASKS);
        *self.lock() = tasks;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Task>> {
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn text(args: &Map<String, Value>, key: &str) -> Result<Option<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= MAX_TEXT => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(ToolError(format!(
            "`{key}` is longer than {MAX_TEXT} bytes"
        ))),
        Some(other) => Err(ToolError(format!("`{key}` must be a string, not {other}"))),
    }
}

fn status(args: &Map<String, Value>) -> Result<Option<String>, ToolError> {
    let s = text(args, "status")?;
    match s {
        Some(s) if !STATUSES.contains(&s.as_str()) => Err(ToolError(format!(
            "`status` must be one of {STATUSES:?}, not {s:?}"
        ))),
        s => Ok(s),
    }
}

fn id(args: &Map<String, Value>) -> Result<u64, ToolError> {
    match args.get("id") {
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 1.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| ToolError(format!("`id` must be a positive integer, not {v}"))),
        None => Err(ToolError("`id` is required".into())),
    }
}

#[async_trait]
impl Toolbox for TaskBoard {
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(Self::catalog().into_iter().map(|t| t.spec).collect())
    }

    async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<Value, ToolError> {
        let to_value = |t: &Task| serde_json::to_value(t).unwrap_or(Value::Null);
        match tool {
            "list_tasks" => {
                let wanted = status(&args)?;
                let tasks: Vec<Value> = self
                    .lock()
                    .iter()
                    .filter(|t| wanted.as_ref().is_none_or(|s| &t.status == s))
                    .map(to_value)
                    .collect();
                Ok(json!({"count": tasks.len(), "tasks": tasks}))
            }
            "get_task" => {
                let id = id(&args)?;
                self.lock()
                    .iter()
                    .find(|t| t.id == id)
                    .map(to_value)
                    .ok_or_else(|| ToolError(format!("no task {id}")))
            }
            "add_task" => {
                let title = text(&args, "title")?
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| ToolError("`title` is required".into()))?;
                let description = text(&args, "description")?.unwrap_or_default();
                let mut tasks = self.lock();
                if tasks.len() >= MAX_TASKS {
                    return Err(ToolError(format!("the board is full ({MAX_TASKS} tasks)")));
                }
                let task = Task {
                    id: tasks.last().map_or(1, |t| t.id + 1),
                    title,
                    description,
                    status: "todo".into(),
                    assignee: String::new(),
                };
                tasks.push(task.clone());
                Ok(to_value(&task))
            }
            "update_task" => {
                let id = id(&args)?;
                let new_status = status(&args)?;
                let assignee = text(&args, "assignee")?;
                let title = text(&args, "title")?;
                let description = text(&args, "description")?;
                let mut tasks = self.lock();
                let task = tasks
                    .iter_mut()
                    .find(|t| t.id == id)
                    .ok_or_else(|| ToolError(format!("no task {id}")))?;
                if let Some(s) = new_status {
                    task.status = s;
                }
                if let Some(a) = assignee {
                    task.assignee = a;
                }
                if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
                    task.title = t;
                }
                if let Some(d) = description {
                    task.description = d;
                }
                Ok(to_value(task))
            }
            other => Err(ToolError(format!(
                "the task board has no tool `{other}` (its tools: list_tasks, get_task, add_task, update_task)"
            ))),
        }
    }
}
