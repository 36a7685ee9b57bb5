//! `.openagents/tasks.jsonl`: one task per line (blank lines are skipped, as the loop does).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Diagnostics, FieldPath, Position};
use crate::source;
use crate::wire::Timestamp;

/// The largest `tasks.jsonl` read, in bytes.
pub const MAX_TASKS_FILE_BYTES: usize = 16 * 1024 * 1024;
/// The most tasks (non-blank lines) in one file.
pub const MAX_TASK_LINES: usize = 10_000;
/// The longest title, in characters (the loop's own bound).
pub const MAX_TITLE_CHARS: usize = 500;

/// `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// `open`
    Open,
    /// `in_progress`
    InProgress,
    /// `blocked`
    Blocked,
    /// `closed`
    Closed,
}

impl Status {
    /// The spelling in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::InProgress => "in_progress",
            Status::Blocked => "blocked",
            Status::Closed => "closed",
        }
    }

    /// The status spelled `s`.
    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Open,
            Status::InProgress,
            Status::Blocked,
            Status::Closed,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    /// `task`
    Task,
    /// `bug`
    Bug,
    /// `feature`
    Feature,
    /// `epic`
    Epic,
    /// `chore`
    Chore,
}

impl TaskType {
    /// The type spelled `s`.
    pub fn parse(s: &str) -> Option<TaskType> {
        serde_json::from_value(Value::String(s.to_owned())).ok()
    }
}

/// `deps[].type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DependencyType {
    /// `blocks`: this task waits for that one.
    Blocks,
    /// `related`
    Related,
    /// `parent-child`: also waited for.
    ParentChild,
    /// `discovered-from`
    DiscoveredFrom,
}

/// One of `deps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    /// The other task.
    pub id: String,
    /// How they relate.
    #[serde(rename = "type")]
    pub dep_type: DependencyType,
}

/// `source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskSource {
    /// The repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The task during which this one was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered_from: Option<String>,
    /// An outside reference (an issue id); may be `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<Value>,
}

/// One of `comments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskComment {
    /// Its id.
    pub id: String,
    /// What was said.
    pub text: String,
    /// Who said it.
    pub author: String,
    /// When.
    pub created_at: String,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Task {
    /// `<idPrefix>-<hex>`.
    pub id: String,
    /// What to do.
    pub title: String,
    /// More about it.
    #[serde(default)]
    pub description: String,
    /// Where it stands.
    pub status: Status,
    /// 0 (P0) to 4.
    pub priority: u8,
    /// Its kind.
    #[serde(rename = "type")]
    pub task_type: TaskType,
    /// Who took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Other tasks it depends on.
    #[serde(default)]
    pub deps: Vec<Dependency>,
    /// Commits that closed it.
    #[serde(default)]
    pub commits: Vec<String>,
    /// When it was created.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// When it was closed; `null` while open.
    #[serde(default)]
    pub closed_at: Option<String>,
    /// Why it was closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_reason: Option<String>,
    /// Where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<TaskSource>,
    /// Design notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    /// Acceptance criteria.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_criteria: Option<String>,
    /// Notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// An estimate; may be `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_minutes: Option<Value>,
    /// Comments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<TaskComment>,
}

impl Task {
    /// Whether the loop would pick it: not closed or blocked, and every `blocks` and
    /// `parent-child` dependency closed (the loop's `isTaskReady`).
    pub fn is_ready(&self, all: &[Task]) -> bool {
        if matches!(self.status, Status::Closed | Status::Blocked) {
            return false;
        }
        self.deps
            .iter()
            .filter(|d| {
                matches!(
                    d.dep_type,
                    DependencyType::Blocks | DependencyType::ParentChild
                )
            })
            .all(|d| {
                all.iter()
                    .any(|t| t.id == d.id && t.status == Status::Closed)
            })
    }

    /// The rules serde cannot say.
    fn check(&self, d: &mut Diagnostics) {
        let root = FieldPath::root();
        if let Err(e) = check_task_id(&self.id) {
            d.push(root.key("id"), e);
        }
        let chars = self.title.chars().count();
        if self.title.trim().is_empty() || chars > MAX_TITLE_CHARS {
            d.push(
                root.key("title"),
                format!("must be 1 to {MAX_TITLE_CHARS} characters"),
            );
        }
        if self.priority > 4 {
            d.push(root.key("priority"), "must be 0 (P0) to 4");
        }
        for (field, t) in [
            ("createdAt", Some(&self.created_at)),
            ("updatedAt", Some(&self.updated_at)),
            ("closedAt", self.closed_at.as_ref()),
        ] {
            if let Some(t) = t
                && let Err(e) = Timestamp::parse(t)
            {
                d.push(root.key(field), e.to_string());
            }
        }
        for (i, dep) in self.deps.iter().enumerate() {
            if let Err(e) = check_task_id(&dep.id) {
                d.push(root.key("deps").index(i).key("id"), e);
            }
        }
        if !matches!(
            &self.estimated_minutes,
            None | Some(Value::Number(_) | Value::Null)
        ) {
            d.push(root.key("estimatedMinutes"), "must be a number or null");
        }
        if let Some(s) = &self.source
            && !matches!(&s.external_ref, None | Some(Value::String(_) | Value::Null))
        {
            d.push(
                root.key("source").key("externalRef"),
                "must be a string or null",
            );
        }
        for (i, c) in self.comments.iter().enumerate() {
            if let Err(e) = Timestamp::parse(&c.created_at) {
                d.push(
                    root.key("comments").index(i).key("createdAt"),
                    e.to_string(),
                );
            }
        }
    }
}

/// A task id: 1 to 128 characters, no whitespace or control characters.
pub fn check_task_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 128 {
        return Err("must be 1 to 128 characters".into());
    }
    if id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    Ok(())
}

/// A task as read from one line: its line number (1-based), the object as written (so that a
/// rewrite keeps every field as it was) and its typed form.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLine {
    /// Its line in the file.
    pub line: u32,
    /// The JSON object of the line.
    pub raw: Map<String, Value>,
    /// The task.
    pub task: Task,
}

/// Reads a task from a JSON object (a line, or a line changed in code), checking every rule.
pub fn task_from_value(value: &Value) -> Result<Task, Diagnostics> {
    if !value.is_object() {
        return Err(Diagnostics::one(
            FieldPath::root(),
            "a task is a JSON object",
        ));
    }
    let task: Task = source::deserialize_value(value)?;
    let mut d = Diagnostics::default();
    task.check(&mut d);
    d.into_result(task)
}

/// Parses `tasks.jsonl`. Every problem is reported, each with its line; an id used twice is
/// an error at its second line.
pub fn parse_tasks(text: &str) -> Result<Vec<TaskLine>, Diagnostics> {
    if text.len() > MAX_TASKS_FILE_BYTES {
        return Err(Diagnostics::one(
            FieldPath::root(),
            format!(
                "the file is {} bytes, more than {MAX_TASKS_FILE_BYTES}",
                text.len()
            ),
        ));
    }
    let text = source::strip_bom(text);
    let mut out = Vec::new();
    let mut all = Diagnostics::default();
    let mut ids: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for (i, line) in text.split('\n').enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        if out.len() + all.0.len() >= MAX_TASK_LINES {
            all.0.push(at_line(
                Diagnostic::new(
                    FieldPath::root(),
                    format!("more than {MAX_TASK_LINES} tasks"),
                ),
                line_no,
            ));
            break;
        }
        let parsed = source::parse_json(line).and_then(|doc| {
            let task = task_from_value(&doc.value).map_err(|d| doc.locate(d))?;
            let raw = doc.value.as_object().cloned().unwrap_or_default();
            Ok((doc, raw, task))
        });
        match parsed {
            Ok((doc, raw, task)) => {
                if let Some(first) = ids.insert(task.id.clone(), line_no) {
                    let d = Diagnostic::new(
                        FieldPath::root().key("id"),
                        format!("`{}` is also the id of line {first}", task.id),
                    )
                    .at(doc.position(&FieldPath::root().key("id")));
                    all.0.push(at_line(d, line_no));
                }
                out.push(TaskLine {
                    line: line_no,
                    raw,
                    task,
                });
            }
            Err(diags) => {
                for d in diags.0 {
                    all.0.push(at_line(d, line_no));
                }
            }
        }
    }
    all.into_result(out)
}

/// Moves a diagnostic found in one line's text to that line of the file.
fn at_line(mut d: Diagnostic, line: u32) -> Diagnostic {
    let col = d.position.map_or(1, |p| p.col);
    d.position = Some(Position { line, col });
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_LINE: &str = r#"{"id": "oa-1a2b3c", "title": "Add Golden Loop desktop harness", "description": "Implement Bun/Effect harness to run Golden Loop e2e locally.", "type": "task", "priority": 1, "status": "open", "labels": ["testing", "golden-loop"], "createdAt": "2025-12-02T15:46:00Z", "updatedAt": "2025-12-02T16:00:00Z", "closedAt": null, "assignee": "mechacoder", "deps": [{"id": "oa-abc123", "type": "blocks"}], "commits": ["ed3b5a9", "1baeac7"], "source": {"repo": "openagents", "discoveredFrom": "oa-abc123", "externalRef": null}}"#;

    #[test]
    fn the_seeds_task_parses() {
        let tasks = parse_tasks(&format!("{SEED_LINE}\n\n")).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].task.status, Status::Open);
        assert_eq!(tasks[0].task.deps[0].dep_type, DependencyType::Blocks);
        assert!(!tasks[0].task.is_ready(&[tasks[0].task.clone()]));
    }

    #[test]
    fn errors_carry_their_line() {
        let second = SEED_LINE
            .replace("oa-1a2b3c", "oa-000002")
            .replace("\"open\"", "\"done\"");
        let text = format!("{SEED_LINE}\n{second}\n{{\"id\": \"oa-x\", \"title\"\n");
        let e = parse_tasks(&text).unwrap_err();
        let lines: Vec<(u32, String)> =
            e.0.iter()
                .map(|d| (d.position.unwrap().line, d.path.to_string()))
                .collect();
        assert_eq!(
            lines,
            [(2, "status".to_owned()), (3, "(document)".to_owned())],
            "{e:?}"
        );
        assert!(
            e.0[1].message.starts_with("invalid JSON"),
            "{}",
            e.0[1].message
        );
        let text = format!("{SEED_LINE}\n{}", SEED_LINE.replace("\"notes\"", "x"));
        let e = parse_tasks(&text).unwrap_err();
        assert_eq!(e.0[0].position.unwrap().line, 2);
        assert!(e.0[0].message.contains("also the id of line 1"));
        let unknown = SEED_LINE.replace("\"closedAt\"", "\"pendingCommit\": {}, \"closedAt\"");
        let e = parse_tasks(&unknown).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "pendingCommit");
    }
}
