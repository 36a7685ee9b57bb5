//! `ofc validate PATH...`: detects each document's kind, checks it, and prints `ok` per file or
//! one `file:line:col: field: what is wrong` line per problem. A valid file's fields that ofc
//! accepts but does not act on are named in `warning: file:line:col: field: …` lines (they do
//! not change the exit code). Directories are walked, skipping
//! dot-folders except fast-agent's `.fast-agent/` (its card folders hold AgentCards) and an
//! OpenAgents project's `.openagents/` (`project.json`, `tasks.jsonl`). An Agent
//! Skill (`SKILL.md`) is named as such and skipped: it is not a card, so it gets no verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use index_schema::agent_card::{FAST_AGENT_DIR, is_agent_skill};
use index_schema::{Diagnostic, Diagnostics, FieldPath};
use serde_json::json;

use crate::detect::{DocumentKind, detect};
use crate::output::{ExitStatus, Output, UserError};

/// Arguments of `ofc validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Files or directories to check; directories are searched recursively.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Treat every file given as this kind instead of detecting it.
    #[arg(long, value_enum)]
    pub kind: Option<DocumentKind>,
}

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
    /// What a valid file has that ofc accepts but does not act on.
    pub warnings: Diagnostics,
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
    let warnings: usize = reports.iter().map(|r| r.warnings.0.len()).sum();
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
            "summary": {"checked": reports.len(), "valid": reports.len() - invalid, "invalid": invalid, "warnings": warnings},
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
            for w in r.warnings.iter() {
                out.data(&warning_line(&r.path, w));
            }
        }
        out.status(&format!(
            "checked {} file{}: {} ok, {} invalid{}",
            reports.len(),
            if reports.len() == 1 { "" } else { "s" },
            reports.len() - invalid,
            invalid,
            match warnings {
                0 => String::new(),
                1 => ", 1 warning".to_string(),
                n => format!(", {n} warnings"),
            }
        ));
    }
    Ok(if invalid == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// `warning: file:line:col: field: message`: a field accepted but not acted on.
pub fn warning_line(file: &Path, w: &Diagnostic) -> String {
    format!("warning: {}:{w}", file.display())
}

fn report_json(r: &FileReport) -> serde_json::Value {
    let list = |d: &Diagnostics| -> Vec<serde_json::Value> {
        d.iter()
            .map(|d| {
                json!({
                    "line": d.position.map(|p| p.line),
                    "column": d.position.map(|p| p.col),
                    "field": if d.path.is_root() { serde_json::Value::Null } else { json!(d.path.to_string()) },
                    "message": d.message,
                })
            })
            .collect()
    };
    json!({
        "path": r.path.display().to_string(),
        "kind": r.kind.id(),
        "ok": r.diagnostics.is_empty(),
        "errors": list(&r.diagnostics),
        "warnings": list(&r.warnings),
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
                    warnings: Diagnostics::default(),
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
            warnings: Diagnostics::default(),
        }));
    };
    let (diagnostics, card_name, warnings) = match check_text(kind, path, text) {
        Ok(Checked {
            card_name,
            warnings,
        }) => (Diagnostics::default(), card_name, warnings),
        Err(d) => (d, None, Diagnostics::default()),
    };
    Ok(Some(FileReport {
        path: path.to_path_buf(),
        kind,
        diagnostics,
        card_name,
        warnings,
    }))
}

/// What checking a valid document found.
struct Checked {
    /// For AgentCards, the card's name.
    card_name: Option<String>,
    /// Fields accepted but not acted on, positioned.
    warnings: Diagnostics,
}

impl Checked {
    fn clean() -> Self {
        Self {
            card_name: None,
            warnings: Diagnostics::default(),
        }
    }

    fn warned(warnings: Diagnostics) -> Self {
        Self {
            card_name: None,
            warnings,
        }
    }
}

/// Checks a document's text.
fn check_text(kind: DocumentKind, path: &Path, text: &str) -> Result<Checked, Diagnostics> {
    use index_schema::{
        a2a_card, agent_yaml, blueprint, envelope, lockfile, manifest, mcp_server_json, openagents,
        source,
    };
    match kind {
        DocumentKind::Manifest => manifest::Manifest::from_json(text).map(|_| Checked::clean()),
        DocumentKind::Envelope => envelope::Envelope::from_json(text).map(|_| Checked::clean()),
        DocumentKind::OpenagentsProject => {
            openagents::Project::from_json(text).map(|_| Checked::clean())
        }
        DocumentKind::OpenagentsTasks => openagents::parse_tasks(text).map(|_| Checked::clean()),
        DocumentKind::AgentYaml => {
            let doc = source::parse_yaml(text)?;
            let a = agent_yaml::AgentYaml::from_doc(&doc)?;
            Ok(Checked::warned(doc.locate(a.warnings())))
        }
        DocumentKind::Blueprint => {
            let mut doc = source::parse_yaml(text)?;
            // As `ofc run` loads it: a variable that is not set here is said here.
            let literal_keys = crate::blueprint_files::literal_api_keys(&doc);
            let unset = crate::blueprint_files::expand_vars(&mut doc);
            if !unset.is_empty() {
                return Err(doc.locate(unset));
            }
            let mut bp = blueprint::Blueprint::from_doc(&doc)?;
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
            let unread =
                crate::blueprint_files::read_prompt_files(&mut bp, dir.unwrap_or(Path::new(".")));
            if !unread.is_empty() {
                return Err(doc.locate(unread));
            }
            let mut found = bp.warnings();
            found.extend(literal_keys);
            Ok(Checked::warned(doc.locate(found)))
        }
        DocumentKind::Lockfile => lockfile::Lockfile::from_toml(text).map(|_| Checked::clean()),
        DocumentKind::A2aCard => {
            a2a_card::A2aCard::from_json(text).map(|c| Checked::warned(c.warnings()))
        }
        DocumentKind::McpServerJson => {
            mcp_server_json::ServerJson::from_json(text).map(|c| Checked::warned(c.warnings()))
        }
        DocumentKind::CardMd | DocumentKind::CardYaml => {
            crate::cards::load_file(path).map(|c| Checked {
                card_name: Some(c.card.name.clone()),
                warnings: c.warnings,
            })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn fields(d: &Diagnostics) -> Vec<(String, Option<u32>)> {
        d.iter()
            .map(|d| (d.path.to_string(), d.position.map(|p| p.line)))
            .collect()
    }

    /// The newcomer's blueprint: a command on an agent without `type: acp` was dropped and the
    /// file said ok.
    #[test]
    fn a_command_on_an_llm_agent_is_refused_with_the_way_out() {
        let d = tempfile::tempdir().unwrap();
        let p = file(
            d.path(),
            "blueprint.yaml",
            "agents:\n  - id: \"@claude\"\n    command: claude-code-acp\n    args: [--verbose]\n",
        );
        let r = check_file(&p, None).unwrap().unwrap();
        assert_eq!(
            fields(&r.diagnostics),
            [
                ("agents[0].command".to_string(), Some(3)),
                ("agents[0].args".to_string(), Some(4)),
                ("agents[0].model".to_string(), Some(2)),
            ]
        );
        let m = &r.diagnostics.0[0].message;
        assert!(
            m.contains("a local agent file") && m.contains("`type: acp`"),
            "{m}"
        );
    }

    #[test]
    fn fields_ofc_does_not_act_on_are_warned_with_their_lines() {
        let d = tempfile::tempdir().unwrap();
        let bp = file(
            d.path(),
            "blueprint.yaml",
            "agents:\n  - id: \"@a\"\n    model: m\n    furniture: [b]\nfurniture:\n  - name: b\n    type: taskboard\n    config: {columns: [a]}\n",
        );
        let r = check_file(&bp, None).unwrap().unwrap();
        assert!(r.diagnostics.is_empty(), "{}", r.diagnostics);
        assert_eq!(
            fields(&r.warnings),
            [("furniture[0].config".to_string(), Some(8))]
        );
        let line = warning_line(&r.path, &r.warnings.0[0]);
        assert!(
            line.starts_with(&format!(
                "warning: {}:8:13: furniture[0].config: `config` is accepted but not used by ofc",
                bp.display()
            )),
            "{line}"
        );
        let agent = file(
            d.path(),
            "agent.yaml",
            "id: \"@a\"\nmodel: m\ntools: [bash]\n",
        );
        let r = check_file(&agent, None).unwrap().unwrap();
        assert_eq!(fields(&r.warnings), [("tools".to_string(), Some(3))]);
        let card = file(d.path(), "helper.md", "---\nname: helper\n---\n");
        let r = check_file(&card, None).unwrap().unwrap();
        assert!(r.diagnostics.is_empty(), "{}", r.diagnostics);
        // No instruction is written anywhere: the warning points at the card's first line.
        assert_eq!(fields(&r.warnings), [("instruction".to_string(), Some(1))]);
        let line = warning_line(&r.path, &r.warnings.0[0]);
        assert!(
            line.starts_with(&format!(
                "warning: {}:1:1: instruction: the card has no instruction, which the AgentCard \
                 RFC requires: fast-agent gives the agent its default instruction",
                card.display()
            )),
            "{line}"
        );
    }

    /// In fast-agent's card folders every YAML file is a card: `agent.yaml` holding an A2A card
    /// is read as the card it is, not refused as ofc's agent.yaml.
    #[test]
    fn an_agent_yaml_in_a_card_folder_is_a_card() {
        let d = tempfile::tempdir().unwrap();
        let a2a =
            "type: a2a\nurl: https://agents.example/a2a\ninstruction: Ask the remote agent.\n";
        for folder in ["agent-cards", "tool-cards"] {
            let p = file(
                d.path(),
                &format!("project/.fast-agent/{folder}/agent.yaml"),
                a2a,
            );
            let r = check_file(&p, None).unwrap().unwrap();
            assert_eq!(r.kind, DocumentKind::CardYaml);
            assert!(r.diagnostics.is_empty(), "{}", r.diagnostics);
            assert_eq!(r.card_name.as_deref(), Some("agent"));
        }
        // Publishing the folder finds that card as its one agent.
        let (entry, kind) =
            crate::package::find_entrypoint(&d.path().join("project/.fast-agent/agent-cards"))
                .unwrap();
        assert_eq!(kind, DocumentKind::CardYaml);
        assert!(entry.ends_with("agent.yaml"));
        // Outside a card folder the name keeps its meaning.
        let p = file(d.path(), "project/agent.yaml", a2a);
        let r = check_file(&p, None).unwrap().unwrap();
        assert_eq!(r.kind, DocumentKind::AgentYaml);
        assert!(!r.diagnostics.is_empty());
    }
}
