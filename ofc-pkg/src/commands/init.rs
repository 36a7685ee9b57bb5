//! `ofc init [DIR] [--card | --blueprint] [--name NAME]`: writes a starting `agent.yaml`, an
//! AgentCard `<name>.md`, or a `blueprint.yaml`. Never overwrites a file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use index_schema::name::AgentHandle;
use serde_json::json;

use crate::output::{ExitStatus, Output, UserError};

/// Arguments of `ofc init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The folder to create the files in (created if missing).
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// Write an AgentCard (`<name>.md`) instead of `agent.yaml`.
    #[arg(long, conflicts_with = "blueprint")]
    pub card: bool,

    /// Write a `blueprint.yaml` (a floor of agents) instead of an agent.
    #[arg(long)]
    pub blueprint: bool,

    /// The agent's (or blueprint's) name; defaults to the folder's name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// Runs the verb.
pub fn run(args: &InitArgs, out: &mut Output) -> Result<ExitStatus> {
    let name = match &args.name {
        Some(n) => n.clone(),
        None => default_name(&args.dir)?,
    };
    if AgentHandle::new(&name).is_err() {
        bail!(
            UserError::new(format!("`{name}` cannot be used as an agent name"))
                .hint("use lowercase letters, digits and `-`, e.g. `--name my-agent`")
        );
    }
    // As cargo and npm do, the package is yours: the namespace of the hub you are logged in
    // to, when there is one to choose.
    let publisher = if args.blueprint || args.card {
        None
    } else {
        your_namespace(out)
    };
    let (file, text) = if args.blueprint {
        (PathBuf::from("blueprint.yaml"), blueprint(&name))
    } else if args.card {
        (PathBuf::from(format!("{name}.md")), card(&name))
    } else {
        (
            PathBuf::from("agent.yaml"),
            agent_yaml(&name, publisher.as_deref()),
        )
    };
    fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    let path = args.dir.join(&file);
    let mut f = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            bail!(
                UserError::new(format!("{} already exists", path.display()))
                    .hint("`ofc init` never overwrites files; pick another folder")
            );
        }
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
    };
    f.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let package = publisher.as_ref().map(|p| format!("{p}/{name}"));
    if out.json {
        out.json_value(&json!({
            "created": path.display().to_string(),
            "name": name,
            "package": package,
        }));
    } else {
        if let Some(p) = &package {
            out.status(&format!(
                "package: {p} (your namespace on {})",
                crate::hub_url::configured()
            ));
        }
        out.data(&format!("created {}", path.display()));
        if !args.blueprint {
            out.status(&format!(
                "next: edit it, check it with `ofc validate {}`, then `ofc publish --dry-run {}`",
                args.dir.display(),
                args.dir.display()
            ));
        }
    }
    Ok(ExitStatus::Success)
}

/// The folder's name, lowercased, with other characters turned into `-`.
fn default_name(dir: &Path) -> Result<String> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()?.join(dir)
    };
    let base = abs
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .next_back()
        .unwrap_or_default();
    let mut name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    name = name.trim_matches('-').to_string();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name = format!("agent-{name}").trim_end_matches('-').to_string();
    }
    Ok(name)
}

/// The namespace the logged-in user publishes to by default (see
/// [`crate::hub::default_namespace`]), asked of the hub within 5 s; `None` (with a note why)
/// when there is no token, no answer or no single choice.
fn your_namespace(out: &mut Output) -> Option<String> {
    let paths = crate::config::Paths::from_env().ok()?;
    let hub = crate::hub::Hub::from_env(&paths).ok()?;
    if !hub.has_token() {
        out.status("note: not logged in, so `package:` is left for you to fill in (`ofc login` first, or edit it)");
        return None;
    }
    let rt = crate::hub::runtime().ok()?;
    let me = rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(5), hub.me()).await
    });
    let found = match me {
        Ok(Ok(me)) => crate::hub::default_namespace(&me).map_err(|e| e.to_string()),
        Ok(Err(e)) => Err(format!("the hub did not say who you are: {e}")),
        Err(_) => Err("the hub did not answer within 5 s".to_owned()),
    };
    match found {
        Ok(ns) => Some(ns),
        Err(why) => {
            out.status(&format!(
                "note: `package:` is left for you to fill in: {}",
                crate::output::clean_line(&why)
            ));
            None
        }
    }
}

fn agent_yaml(name: &str, publisher: Option<&str>) -> String {
    let package = match publisher {
        Some(p) => format!("# The hub name (your namespace).\npackage: {p}/{name}"),
        None => format!(
            "# The hub name; or pass `ofc publish --name publisher/{name}`.\n# package: your-publisher/{name}"
        ),
    };
    format!(
        r#"# An OFC agent. Check it with `ofc validate`, publish it with `ofc publish`.
id: "@{name}"
name: {name}
version: 0.1.0
{package}
tagline: Say what to send me in one line
description: |
  What this agent does, for people browsing the hub.
model: qwen3:8b
endpoint: http://localhost:11434/v1
activation: mention
prompt: |
  You are {name}. Answer briefly and say when you are unsure.
"#
    )
}

fn card(name: &str) -> String {
    format!(
        r#"---
type: agent
name: {name}
description: What this agent does, for people browsing the hub.
model: qwen3:8b
---
You are {name}. Answer briefly and say when you are unsure.
"#
    )
}

fn blueprint(name: &str) -> String {
    format!(
        r#"# A floor of agents. Check it with `ofc validate`.
name: {name}
description: What this floor is for

defaults:
  endpoint: http://localhost:11434/v1
  model: qwen3:8b

agents:
  - id: "@helper"
    name: Helper
    type: llm
    prompt: Help with the task at hand. Be specific.
    activation: mention
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_folders() {
        assert_eq!(default_name(Path::new("/x/My Agent")).unwrap(), "my-agent");
        assert_eq!(default_name(Path::new("/x/42")).unwrap(), "agent-42");
        assert_eq!(
            default_name(Path::new("/x/web_scraper/")).unwrap(),
            "web-scraper"
        );
    }
}
