//! Seed 002's OpenAgents project: `.openagents/project.json` (the project's settings, among
//! them its `testCommands`, `typecheckCommands` and task `idPrefix`) and
//! `.openagents/tasks.jsonl` (one task per line).
//!
//! Both are read as the OpenAgents desktop loop reads them (its Effect schemas, `src/tasks/
//! schema.ts`), with the seed as the floor: the fields the seed shows plus those the loop's
//! schema adds (`closeReason`, `design`, `acceptanceCriteria`, `notes`, `estimatedMinutes`,
//! `comments`; `sessionDir`, `runLogDir`, `parallelExecution`, `trajectory`, `healer`). A field
//! outside that set is refused with its path: the loop drops fields it does not know when it
//! rewrites the file, so accepting one would only lose it later. Errors carry the line:
//! `tasks.jsonl:2:14: status: …`.

mod project;
mod tasks;

pub use project::{Project, ProjectSandbox};
pub use tasks::{
    Dependency, DependencyType, MAX_TASK_LINES, MAX_TASKS_FILE_BYTES, MAX_TITLE_CHARS, Status,
    Task, TaskComment, TaskLine, TaskSource, TaskType, parse_tasks, task_from_value,
};

/// The project directory's name.
pub const DIR: &str = ".openagents";
/// `project.json`.
pub const PROJECT_FILE: &str = "project.json";
/// `tasks.jsonl`.
pub const TASKS_FILE: &str = "tasks.jsonl";
/// `agent.lock`: the loop's lock file (`<pid>\n<ISO timestamp>[\n<session id>]`).
pub const LOCK_FILE: &str = "agent.lock";
