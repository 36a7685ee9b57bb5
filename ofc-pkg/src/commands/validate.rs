//! `ofc validate PATH...`: detects each document's kind, checks it, and prints `ok` per file or
//! one `file:line:col: field: what is wrong` line per problem. Directories are walked, skipping
//! dot-folders except fast-agent's `.fast-agent/` (its card folders hold AgentCards) and an
//! OpenAgents project's `.openagents/` (`project.json`, `tasks.jsonl`). An Agent
//! Skill (`SKILL.md`) is named as such and skipped: it is not a card, so it gets no verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use index_schema::agent_card::{FAST_AGENT_DIR, is_agent_skill};
use index_schema::{Diagnostics, FieldPath};
use serde_json::json;

use crate::cli::ValidateArgs;
use crate::detect::{DocumentKind, detect};
use crate::output::{ExitStatus, Output, UserError};

/// Largest file `ofc validate` reads.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The result of checking one file.
#[derive(Debug)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// What it was checked as.
    pub kind: DocumentKind,
    /// Problems found; empty when valid.
    pub diagnostics: Diagnostics,
    /// For AgentCards, the card's name (for the load-set uniqueness rule).
    pub card_name: Option<String>,
}

/// Runs the verb.
pub fn run(args: &ValidateArgs, out: &mut Output) -> Result<ExitStatus> {
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    for p in &args.paths {
        if !p.exists() {
            out.status(&format!(
                "error: {}: no such file or directory",
                p.display()
            ));
            return Ok(ExitStatus::Usage);
        }
        if p.is_dir() {
            let before = files.len();
            collect_dir(p, &mut files)?;
            if files.len() == before {
                out.status(&format!(
                    "warning: {}: no ofc documents found in this directory",
                    p.display()
                ));
            }
        } else {
            files.push((p.clone(), true));
        }
    }

    let mut reports = Vec::new();
    let mut skills = Vec::new();
    for (path, explicit) in files {
        if args.kind.is_none() && is_agent_skill(&path) {
            out.status(&format!(
                "note: {}: an Agent Skill (SKILL.md), not an AgentCard; skipped",
                path.display()
            ));
            skills.push(path);
            continue;
        }
        match check_file(&path, args.kind) {
            Ok(Some(r)) => reports.push(r),
            Ok(None) if explicit => {
                let e = UserError::new(format!(
                    "{}: cannot tell what kind of ofc document this is",
                    path.display()
                ))
                .hint("name it like `agent.yaml`, `*.blueprint.yaml`, `*.manifest.json`, `*.envelope.json`, `*.card.yaml`, `agent-card.json`, `server.json` or `ofc.lock`, or pass `--kind`");
                out.error(&e.into());
                return Ok(ExitStatus::Usage);
            }
            Ok(None) => {}
            Err(e) => return Err(e),
        }
    }
    check_card_sets(&mut reports);

    let invalid = reports.iter().filter(|r| !r.diagnostics.is_empty()).count();
    if out.json {
        let files: Vec<_> = reports.iter().map(report_json).collect();
        let skipped: Vec<_> = skills
            .iter()
            .map(|p| json!({"path": p.display().to_string(), "kind": "agent-skill", "reason": "an Agent Skill (SKILL.md), not an AgentCard"}))
            .collect();
        out.json_value(&json!({
            "ok": invalid == 0,
            "files": files,
            "skipped": skipped,
            "summary": {"checked": reports.len(), "valid": reports.len() - invalid, "invalid": invalid},
        }));
    } else {
        for r in &reports {
            if r.diagnostics.is_empty() {
                out.data(&format!("{}: ok ({})", r.path.display(), r.kind.label()));
            } else {
                for d in r.diagnostics.iter() {
                    out.data(&format!("{}:{d}", r.path.display()));
                }
            }
        }
        out.status(&format!(
            "checked {} file{}: {} ok, {} invalid",
            reports.len(),
            if reports.len() == 1 { "" } else { "s" },
            reports.len() - invalid,
            invalid
        ));
    }
    Ok(if invalid == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn report_json(r: &FileReport) -> serde_json::Value {
    let errors: Vec<_> = r
        .diagnostics
        .iter()
        .map(|d| {
            json!({
                "line": d.position.map(|p| p.line),
                "column": d.position.map(|p| p.col),
                "field": if d.path.is_root() { serde_json::Value::Null } else { json!(d.path.to_string()) },
                "message": d.message,
            })
        })
        .collect();
    json!({
        "path": r.path.display().to_string(),
        "kind": r.kind.id(),
        "ok": r.diagnostics.is_empty(),
        "errors": errors,
    })
}

fn collect_dir(dir: &Path, files: &mut Vec<(PathBuf, bool)>) -> Result<()> {
    let walker = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0
                || name == FAST_AGENT_DIR
                || name == index_schema::openagents::DIR
                || !(name.starts_with('.') || name == "target" || name == "node_modules")
        });
    for entry in walker {
        let entry = entry?;
        if entry.file_type().is_file() {
            files.push((entry.into_path(), false));
        }
    }
    Ok(())
}

/// Reads and checks one file; `Ok(None)` when it is not an ofc document.
pub fn check_file(path: &Path, forced: Option<DocumentKind>) -> Result<Option<FileReport>> {
    let meta = std::fs::metadata(path)?;
    let bytes = if meta.len() > MAX_FILE_BYTES {
        None
    } else {
        Some(std::fs::read(path)?)
    };
    let text = match &bytes {
        Some(b) => match std::str::from_utf8(b) {
            Ok(t) => Some(t),
            Err(e) => {
                let Some(kind) = forced.or_else(|| detect(path, "")) else {
                    return Ok(None);
                };
                return Ok(Some(FileReport {
                    path: path.to_path_buf(),
                    kind,
                    diagnostics: Diagnostics::one(
                        FieldPath::root(),
                        format!(
                            "not UTF-8 text (invalid byte at offset {})",
                            e.valid_up_to()
                        ),
                    ),
                    card_name: None,
                }));
            }
        },
        None => None,
    };
    let Some(kind) = forced.or_else(|| detect(path, text.unwrap_or(""))) else {
        return Ok(None);
    };
    let Some(text) = text else {
        return Ok(Some(FileReport {
            path: path.to_path_buf(),
            kind,
            diagnostics: Diagnostics::one(
                FieldPath::root(),
                format!(
                    "file is {} bytes, more than the limit of {MAX_FILE_BYTES}",
                    meta.len()
                ),
            ),
            card_name: None,
        }));
    };
    let (diagnostics, card_name) = match check_text(kind, path, text) {
        Ok(name) => (Diagnostics::default(), name),
        Err(d) => (d, None),
    };
    Ok(Some(FileReport {
        path: path.to_path_buf(),
        kind,
        diagnostics,
        card_name,
    }))
}

/// Checks a document's text; for cards returns the card's name.
fn check_text(kind: DocumentKind, path: &Path, text: &str) -> Result<Option<String>, Diagnostics> {
    use index_schema::{
        a2a_card, agent_card, agent_yaml, blueprint, envelope, lockfile, manifest, mcp_server_json,
        openagents,
    };
    match kind {
        DocumentKind::Manifest => manifest::Manifest::from_json(text).map(|_| None),
        DocumentKind::Envelope => envelope::Envelope::from_json(text).map(|_| None),
        DocumentKind::AgentYaml => agent_yaml::AgentYaml::from_yaml(text).map(|_| None),
        DocumentKind::Blueprint => blueprint::Blueprint::from_yaml(text).map(|_| None),
        DocumentKind::Lockfile => lockfile::Lockfile::from_toml(text).map(|_| None),
        DocumentKind::A2aCard => a2a_card::A2aCard::from_json(text).map(|_| None),
        DocumentKind::McpServerJson => mcp_server_json::ServerJson::from_json(text).map(|_| None),
        DocumentKind::OpenagentsProject => openagents::Project::from_json(text).map(|_| None),
        DocumentKind::OpenagentsTasks => openagents::parse_tasks(text).map(|_| None),
        DocumentKind::CardMd | DocumentKind::CardYaml => {
            agent_card::AgentCard::load_file(path).map(|c| Some(c.card.name.clone()))
        }
    }
}

/// AgentCards in one directory form a load-set: their names must be unique.
fn check_card_sets(reports: &mut [FileReport]) {
    let mut by_dir: BTreeMap<(PathBuf, String), Vec<usize>> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        if let (true, Some(name)) = (r.kind.is_card(), &r.card_name) {
            let dir = r.path.parent().map(Path::to_path_buf).unwrap_or_default();
            by_dir.entry((dir, name.clone())).or_default().push(i);
        }
    }
    for ((_, name), idx) in by_dir {
        if idx.len() < 2 {
            continue;
        }
        let first = reports[idx[0]].path.display().to_string();
        for &i in &idx[1..] {
            reports[i].diagnostics.push(
                FieldPath::root().key("name"),
                format!("card name `{name}` is already used by {first} in the same directory"),
            );
        }
    }
}
