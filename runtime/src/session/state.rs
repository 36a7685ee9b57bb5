//! The furniture's side of a session: its grants and the built-in task boards, recorded when
//! they changed (checked at the end of each turn and when the floor closes) and put back on a
//! resume before any agent starts.

use std::collections::BTreeMap;

use serde_json::Value;

use super::LiveSession;
use super::payload::{self, Grants, StoredGrant, Tasks};
use super::restore::Restored;
use crate::furniture::taskboard::Task;
use crate::furniture::{Class, FloorFurniture};

/// The grants of a floor, as stored.
pub fn grants_of(furniture: &FloorFurniture) -> Grants {
    Grants {
        grants: furniture
            .grants()
            .entries()
            .into_iter()
            .map(|(agent, furniture, classes)| StoredGrant {
                agent,
                furniture,
                classes: classes.iter().map(|c| c.as_str().to_owned()).collect(),
            })
            .collect(),
    }
}

/// The built-in task boards of a floor, as stored.
pub fn tasks_of(furniture: &FloorFurniture) -> Tasks {
    let boards = furniture
        .pieces()
        .iter()
        .filter_map(|f| {
            let board = f.as_taskboard()?;
            let tasks = board
                .tasks()
                .iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect();
            Some((f.name().to_owned(), tasks))
        })
        .collect::<BTreeMap<_, _>>();
    Tasks { boards }
}

/// Puts a resumed session's grants and task boards back. Answers what could not be (furniture
/// the blueprint no longer has, a task that does not read), one line each.
pub fn restore(furniture: &FloorFurniture, restored: &Restored) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(grants) = &restored.grants {
        for g in &grants.grants {
            let classes: Vec<Class> = g
                .classes
                .iter()
                .filter_map(|c| Class::ALL.into_iter().find(|k| k.as_str() == c))
                .collect();
            if !furniture.restore_grant(&g.agent, &g.furniture, &classes) {
                warnings.push(format!(
                    "the grant of `{}` to {} is not restored: the blueprint has no such furniture now",
                    g.furniture, g.agent
                ));
            }
        }
    }
    if let Some(tasks) = &restored.tasks {
        for (name, stored) in &tasks.boards {
            let Some(board) = furniture.get(name).and_then(|f| f.as_taskboard()) else {
                warnings.push(format!(
                    "the task board `{name}` is not restored: the blueprint has no such task board now"
                ));
                continue;
            };
            let mut list = Vec::new();
            for (i, t) in stored.iter().enumerate() {
                match serde_json::from_value::<Task>(t.clone()) {
                    Ok(t) => list.push(t),
                    Err(e) => {
                        warnings.push(format!("task board `{name}`, task {i}: {e}; left out"))
                    }
                }
            }
            board.restore(list);
        }
    }
    warnings
}

/// Records the furniture's state into a session when it changed since the last record.
#[derive(Debug)]
pub struct StateRecorder {
    session: LiveSession,
    last_grants: Option<Value>,
    last_tasks: Option<Value>,
}

impl StateRecorder {
    /// A recorder whose starting point is what `restored` holds (nothing is written for a
    /// state equal to the one restored).
    pub fn new(session: LiveSession, restored: &Restored) -> Self {
        Self {
            session,
            last_grants: restored
                .grants
                .as_ref()
                .and_then(|g| serde_json::to_value(g).ok()),
            last_tasks: restored
                .tasks
                .as_ref()
                .and_then(|t| serde_json::to_value(t).ok()),
        }
    }

    /// Appends `grants` and `tasks` events for what changed.
    pub fn record(&mut self, furniture: &FloorFurniture) {
        if let Ok(grants) = serde_json::to_value(grants_of(furniture))
            && self.last_grants.as_ref() != Some(&grants)
        {
            self.session.append(payload::GRANTS, grants.clone());
            self.last_grants = Some(grants);
        }
        let tasks = tasks_of(furniture);
        if let Ok(value) = serde_json::to_value(&tasks)
            && self.last_tasks.as_ref() != Some(&value)
            && !(self.last_tasks.is_none() && tasks.boards.values().all(Vec::is_empty))
        {
            self.session.append(payload::TASKS, value.clone());
            self.last_tasks = Some(value);
        }
    }
}
