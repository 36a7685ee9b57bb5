//! `ofc floors create FILE --name X | ls | show X | update X --from-file FILE | rm X`: named
//! floors ([`crate::floors`]), run with `ofc run --floor X`. With `--json`, one JSON document
//! on stdout.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use crate::floors::{self, FloorRecord};
use crate::output::{ExitStatus, Output, UserError, table};

/// `ofc floors` verbs.
#[derive(Debug, Subcommand)]
pub enum FloorsCommand {
    /// Keep a blueprint as a named floor (the stored copy is what `ofc run --floor` runs).
    Create(CreateArgs),
    /// List the named floors.
    Ls,
    /// Show a named floor: where it came from, its generation and its blueprint.
    Show(NameArgs),
    /// Change a named floor to a blueprint file: prints the agents and furniture added,
    /// removed and updated; a running floor applies them.
    Update(UpdateArgs),
    /// Remove a named floor (its sessions stay).
    Rm(NameArgs),
}

/// `ofc floors create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// The blueprint.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The floor's name.
    #[arg(long, value_name = "NAME")]
    pub name: String,
}

/// A floor by name.
#[derive(Debug, clap::Args)]
pub struct NameArgs {
    /// The floor's name.
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// `ofc floors update`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The floor's name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The blueprint to change it to.
    #[arg(long = "from-file", value_name = "FILE")]
    pub from_file: PathBuf,
}

/// Runs the verb.
pub fn run(command: &FloorsCommand, out: &mut Output) -> Result<ExitStatus> {
    let dir = floors::floors_dir();
    match command {
        FloorsCommand::Create(args) => {
            floors::check_name(&args.name)?;
            if floors::path_of(&dir, &args.name).exists() {
                return Err(
                    UserError::new(format!("floor `{}` exists already", args.name))
                        .hint(format!(
                            "`ofc floors update {} --from-file FILE` changes it",
                            args.name
                        ))
                        .into(),
                );
            }
            let (source, text) = checked(&args.file)?;
            let now = runtime::session::now_rfc3339();
            let record = FloorRecord {
                name: args.name.clone(),
                generation: 1,
                created_at: now.clone(),
                updated_at: now,
                source,
                blueprint: text,
            };
            floors::write(&dir, &record)?;
            if out.json {
                out.json_value(&summary(&record));
            } else {
                out.status(&format!(
                    "floor {} created (run it with `ofc run --floor {}`)",
                    record.name, record.name
                ));
            }
        }
        FloorsCommand::Ls => {
            let all = floors::list(&dir)?;
            if out.json {
                let floors: Vec<_> = all.iter().map(summary).collect();
                out.json_value(&json!({"dir": dir.display().to_string(), "floors": floors}));
            } else if all.is_empty() {
                out.status(&format!("no floors in {}", dir.display()));
                out.hints(&["`ofc floors create blueprint.yaml --name NAME` makes one"]);
            } else {
                let rows: Vec<Vec<String>> = all
                    .iter()
                    .map(|r| {
                        vec![
                            r.name.clone(),
                            r.generation.to_string(),
                            r.updated_at.clone(),
                            r.source.clone(),
                        ]
                    })
                    .collect();
                for line in table(&["NAME", "GENERATION", "UPDATED", "FROM"], &rows) {
                    out.data(&line);
                }
            }
        }
        FloorsCommand::Show(args) => {
            let record = floors::read(&dir, &args.name)?;
            if out.json {
                let mut v = summary(&record);
                v["blueprint"] = json!(record.blueprint);
                out.json_value(&v);
            } else {
                out.data(&format!("floor      {}", record.name));
                out.data(&format!("generation {}", record.generation));
                out.data(&format!("created    {}", record.created_at));
                out.data(&format!("updated    {}", record.updated_at));
                out.data(&format!("from       {}", record.source));
                out.data("");
                for line in record.blueprint.lines() {
                    out.data(line);
                }
            }
        }
        FloorsCommand::Update(args) => {
            let mut record = floors::read(&dir, &args.name)?;
            let (source, text) = checked(&args.from_file)?;
            let mutations =
                floors::diff(&floors::parsed(&record.blueprint), &floors::parsed(&text));
            if !mutations.is_empty() || source != record.source {
                record.generation += 1;
                record.updated_at = runtime::session::now_rfc3339();
                record.source = source;
                record.blueprint = text;
                floors::write(&dir, &record)?;
            }
            if out.json {
                out.json_value(&json!({
                    "floor": record.name,
                    "generation": record.generation,
                    "mutations": mutations,
                }));
            } else if mutations.is_empty() {
                out.status(&format!("floor {}: no changes", record.name));
            } else {
                for m in &mutations {
                    out.data(&m.to_string());
                }
                out.status(&format!(
                    "floor {} is at generation {}",
                    record.name, record.generation
                ));
            }
        }
        FloorsCommand::Rm(args) => {
            floors::remove(&dir, &args.name)?;
            if out.json {
                out.json_value(&json!({"removed": args.name}));
            } else {
                out.status(&format!("floor {} removed", args.name));
            }
        }
    }
    Ok(ExitStatus::Success)
}

fn summary(r: &FloorRecord) -> serde_json::Value {
    json!({
        "name": r.name,
        "generation": r.generation,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "source": r.source,
    })
}

/// A blueprint file that loads as `ofc run` loads it: its canonical path and its text.
fn checked(file: &std::path::Path) -> Result<(String, String)> {
    if !file.is_file() {
        return Err(UserError::new(format!("{} does not exist", file.display())).into());
    }
    let loaded = crate::run::plan::load(file).map_err(|text| {
        UserError::new(format!("the blueprint is not valid:\n{text}"))
            .hint("fix the fields named above; the floor was not changed")
    })?;
    let text = std::fs::read_to_string(&loaded.path)?;
    let source = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
    Ok((source.display().to_string(), text))
}
