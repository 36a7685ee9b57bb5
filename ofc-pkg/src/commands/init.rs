//! `ofc init [DIR] [--card | --blueprint] [--name NAME]`: writes a starting `agent.yaml`, an
//! AgentCard `<name>.md`, or a `blueprint.yaml`. Never overwrites a file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use index_schema::name::AgentHandle;
use serde_json::json;

use crate::cli::InitArgs;
use crate::output::{ExitStatus, Output, UserError};

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
    let (file, text) = if args.blueprint {
        (PathBuf::from("blueprint.yaml"), blueprint(&name))
    } else if args.card {
        (PathBuf::from(format!("{name}.md")), card(&name))
    } else {
        (PathBuf::from("agent.yaml"), agent_yaml(&name))
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
    if out.json {
        out.json_value(&json!({ "created": path.display().to_string(), "name": name }));
    } else {
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

fn agent_yaml(name: &str) -> String {
    format!(
        r#"# An OFC agent. Check it with `ofc validate`, publish it with `ofc publish`.
id: "@{name}"
name: {name}
version: 0.1.0
# The hub name; or pass `ofc publish --name publisher/{name}`.
# package: your-publisher/{name}
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
