//! `ofc sessions ls | show ID | rm ID`: the sessions of a project (every `ofc run` records
//! one; `ofc run --resume [ID]` continues it). The project is the blueprint's directory
//! (`-f`, default `blueprint.yaml`); its sessions are in `.ofc/sessions/` (or
//! `$OFC_SESSIONS_DIR`). With `--json`, one JSON document on stdout.
//!
//! Also `ofc floor replay` on a session: [`replay`].

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;
use runtime::session::{Restored, SessionId, SessionInfo, SessionLog, SessionStore, restore};
use serde_json::json;

use crate::output::{ExitStatus, Output, UserError, table};
use crate::run::session::{store_for, user_error};

/// `ofc sessions` verbs.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the project's sessions, the most recently active first.
    Ls(ProjectArgs),
    /// Show a session: where it comes from, its conversation, and any line that was skipped.
    Show(SessionArgs),
    /// Remove a session (refused while an `ofc run` has it open).
    Rm(SessionArgs),
}

/// Which project.
#[derive(Debug, clap::Args)]
pub struct ProjectArgs {
    /// The blueprint; its directory is the project whose sessions these are.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "PATH",
        default_value = "blueprint.yaml"
    )]
    pub file: PathBuf,
    /// The named floor NAME's project instead (`ofc floors ls`); `ls` lists only its sessions.
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub floor: Option<String>,
}

/// One session of a project.
#[derive(Debug, clap::Args)]
pub struct SessionArgs {
    /// The session's id (`ofc sessions ls` lists them).
    #[arg(value_name = "ID")]
    pub id: String,
    /// The project.
    #[command(flatten)]
    pub project: ProjectArgs,
}

fn project_dir(file: &Path) -> &Path {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn store(args: &ProjectArgs) -> Result<SessionStore> {
    match &args.floor {
        Some(name) => {
            let record = crate::floors::read(&crate::floors::floors_dir(), name)?;
            store_for(project_dir(Path::new(&record.source)))
        }
        None => store_for(project_dir(&args.file)),
    }
}

fn id(args: &SessionArgs, store: &SessionStore) -> Result<SessionId> {
    SessionId::parse(&args.id).map_err(|e| user_error(e, store))
}

fn say_warnings(out: &mut Output, log: &SessionLog, path: &Path) {
    for w in log.warnings(path) {
        out.status(&format!("warning: {w}"));
    }
}

/// Runs the verb.
pub fn run(command: &SessionsCommand, out: &mut Output) -> Result<ExitStatus> {
    match command {
        SessionsCommand::Ls(args) => ls(args, out),
        SessionsCommand::Show(args) => show(args, out),
        SessionsCommand::Rm(args) => rm(args, out),
    }
}

fn ls(args: &ProjectArgs, out: &mut Output) -> Result<ExitStatus> {
    let store = store(args)?;
    let mut sessions = store.list().map_err(|e| user_error(e, &store))?;
    if let Some(name) = &args.floor {
        sessions.retain(|s| {
            store.info(&s.id).is_ok_and(|(_, log)| {
                log.meta.and_then(|m| m.floor).as_deref() == Some(name.as_str())
            })
        });
    }
    if out.json {
        out.json_value(&json!({
            "dir": store.dir().display().to_string(),
            "sessions": sessions,
        }));
        return Ok(ExitStatus::Success);
    }
    if sessions.is_empty() {
        out.status(&format!("no sessions in {}", store.dir().display()));
        out.hints(&["`ofc run` records one"]);
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            let mut events = s.event_count.to_string();
            if s.problems > 0 || s.torn {
                events.push_str(" (!)");
            }
            vec![
                s.id.to_string(),
                s.created_at.clone().unwrap_or_else(|| "-".to_owned()),
                s.last_activity.clone().unwrap_or_else(|| "-".to_owned()),
                events,
                s.blueprint.clone().unwrap_or_else(|| "-".to_owned()),
            ]
        })
        .collect();
    for line in table(
        &["ID", "CREATED", "LAST ACTIVITY", "EVENTS", "BLUEPRINT"],
        &rows,
    ) {
        out.data(&line);
    }
    if sessions.iter().any(|s| s.problems > 0 || s.torn) {
        out.hints(&["(!): lines were skipped; `ofc sessions show ID` names them"]);
    }
    Ok(ExitStatus::Success)
}

fn show(args: &SessionArgs, out: &mut Output) -> Result<ExitStatus> {
    let store = store(&args.project)?;
    let id = id(args, &store)?;
    let (info, log) = store.info(&id).map_err(|e| user_error(e, &store))?;
    let path = store.path(&id);
    say_warnings(out, &log, &path);
    let restored = Restored::from_log(&log);
    let rooms = restore::room_messages(&log);
    if out.json {
        out.json_value(&json!({
            "session": info,
            "path": path.display().to_string(),
            "meta": log.meta,
            "messages": restored.messages,
            "rooms": rooms,
            "open_rooms": restored.rooms.keys().collect::<Vec<_>>(),
            "compactions": restored.compactions.values().collect::<Vec<_>>(),
            "runs": restored.segments,
            "problems": log.problems.iter().map(|p| json!({"line": p.line, "message": p.message})).collect::<Vec<_>>(),
            "torn": log.torn.as_ref().map(|t| json!({"line": t.line, "bytes": t.bytes})),
        }));
        return Ok(ExitStatus::Success);
    }
    describe(out, &info, &path, &restored);
    for (room, messages) in &rooms {
        out.data("");
        let open = if restored.rooms.contains_key(room) {
            " (open)"
        } else {
            ""
        };
        out.data(&format!("room {room}{open}: {} messages", messages.len()));
        for m in messages {
            out.data(&format!("  {} {} ({})", m.from, m.timestamp, m.id));
            for line in m.content.lines() {
                out.data(&format!("    {line}"));
            }
        }
    }
    Ok(ExitStatus::Success)
}

fn describe(out: &mut Output, info: &SessionInfo, path: &Path, restored: &Restored) {
    let or = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".to_owned());
    out.data(&format!("session    {}", info.id));
    out.data(&format!("file       {}", path.display()));
    out.data(&format!(
        "blueprint  {} ({})",
        or(&info.blueprint),
        or(&info.blueprint_path)
    ));
    out.data(&format!("created    {}", or(&info.created_at)));
    out.data(&format!("active     {}", or(&info.last_activity)));
    out.data(&format!(
        "events     {} in {} run(s); {} messages, {} memory summaries",
        info.event_count,
        restored.segments,
        restored.messages.len(),
        restored.compactions.len()
    ));
    for m in &restored.messages {
        out.data("");
        out.data(&format!("{} {} ({})", m.from, m.timestamp, m.id));
        for line in m.content.lines() {
            out.data(&format!("  {line}"));
        }
    }
}

fn rm(args: &SessionArgs, out: &mut Output) -> Result<ExitStatus> {
    let store = store(&args.project)?;
    let id = id(args, &store)?;
    store.remove(&id).map_err(|e| user_error(e, &store))?;
    if out.json {
        out.json_value(&json!({ "removed": id }));
    } else {
        out.status(&format!("removed session {id}"));
    }
    Ok(ExitStatus::Success)
}

/// `ofc floor replay` on a session: `target` is a session file, or the id of a session of the
/// project in the current directory. Answers `None` when it is neither (a transcript), else
/// replays each run of the session in turn.
pub fn replay(target: &Path, out: &mut Output) -> Option<Result<ExitStatus>> {
    let (path, log) = match session_at(target) {
        Ok(Some(found)) => found,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    say_warnings(out, &log, &path);
    let segments = match restore::transcript_segments(&log) {
        Ok(s) => s,
        Err(e) => {
            return Some(Err(UserError::new(format!("{}: {e}", path.display()))
                .hint("the session's transcript lines were edited; the rest of it still resumes")
                .into()));
        }
    };
    if segments.is_empty() {
        return Some(Err(UserError::new(format!(
            "{}: the session has no transcript to replay",
            path.display()
        ))
        .into()));
    }
    let mut runs = Vec::new();
    let mut failed = false;
    for (i, segment) in segments.iter().enumerate() {
        match runtime::transcript::replay(segment) {
            Ok(r) => runs.push(json!({"run": i + 1, "ok": true, "turns": r.turns,
                "events": r.events, "actions": r.actions})),
            Err(e) => {
                failed = true;
                runs.push(json!({"run": i + 1, "ok": false, "error": e.to_string()}));
            }
        }
    }
    if out.json {
        out.data(
            &json!({"session": path.display().to_string(), "ok": !failed, "runs": runs})
                .to_string(),
        );
    } else {
        for r in &runs {
            let line = if r["ok"] == true {
                format!(
                    "{} run {}: ok ({} turns, {} events, {} actions replayed identically)",
                    path.display(),
                    r["run"],
                    r["turns"],
                    r["events"],
                    r["actions"]
                )
            } else {
                format!(
                    "{} run {}: {}",
                    path.display(),
                    r["run"],
                    r["error"].as_str().unwrap_or("")
                )
            };
            out.data(&line);
        }
    }
    Some(Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }))
}

/// The session `target` names, read; `None` if it is not one.
fn session_at(target: &Path) -> Result<Option<(PathBuf, SessionLog)>> {
    if !target.exists() {
        let Some(id) = target.to_str().and_then(|t| SessionId::parse(t).ok()) else {
            return Ok(None);
        };
        let store = store_for(Path::new("."))?;
        let log = store.read(&id).map_err(|e| user_error(e, &store))?;
        return Ok(Some((store.path(&id), log)));
    }
    // A session's first line is a record with a `kind` of `meta` (or `event`), a
    // transcript's a `floor` line.
    let first = std::fs::File::open(target).ok().and_then(|f| {
        use std::io::BufRead;
        std::io::BufReader::new(f).lines().next()?.ok()
    });
    let kind = first
        .and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned));
    if !matches!(kind.as_deref(), Some("meta" | "event")) {
        return Ok(None);
    }
    let log = runtime::session::jsonl::read(target).map_err(|e| UserError::new(e.to_string()))?;
    Ok(Some((target.to_owned(), log)))
}
