//! Named floors: a blueprint kept under a name, the stored record the source of truth (the
//! file it was created from is only where it started).
//!
//! One record per floor, `<dir>/<name>.json`, where `<dir>` is `$OFC_FLOORS_DIR`, else the
//! current directory's `.ofc/floors/` (0700): `{name, generation, created_at, updated_at,
//! source, blueprint}` — `blueprint` the YAML text, `source` the file it came from (relative
//! paths in it, such as `prompt_file`, are taken from that file's directory). Every change
//! rewrites the record whole: written to a temporary file (0600), synced, renamed over the
//! old one, so a reader sees the old record or the new one, never a mix. `generation` counts
//! the changes; a running floor (`ofc run --floor X`) polls the record and applies what
//! changed ([`crate::run::named`]).
//!
//! Changes are computed, not replaced: [`diff`] lists the agents and furniture added, removed
//! and updated (with the fields that changed), and the other top-level fields changed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::UserError;

/// The environment variable that moves the floors out of the project.
pub const FLOORS_DIR_ENV: &str = "OFC_FLOORS_DIR";

/// A floor as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorRecord {
    /// Its name.
    pub name: String,
    /// How many times it was written (1 when created).
    pub generation: u64,
    /// When it was created, RFC 3339.
    pub created_at: String,
    /// When it was last changed.
    pub updated_at: String,
    /// The blueprint file it was created (or last updated) from, absolute.
    pub source: String,
    /// The blueprint, as YAML text.
    pub blueprint: String,
}

/// Where the floors are.
pub fn floors_dir() -> PathBuf {
    match std::env::var_os(FLOORS_DIR_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(".ofc").join("floors"),
    }
}

/// Checks a floor name: 1–64 of `a-z`, `0-9`, `-`, `_`, starting with a letter or digit.
pub fn check_name(name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(UserError::new(format!(
            "`{}` is not a floor name: 1 to 64 of a-z, 0-9, `-`, `_`, starting with a letter or digit",
            crate::output::clean_line(&crate::output::truncate(name, 80))
        ))
        .into())
    }
}

/// The record file of floor `name` in `dir`.
pub fn path_of(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// Reads floor `name`.
pub fn read(dir: &Path, name: &str) -> Result<FloorRecord> {
    check_name(name)?;
    let path = path_of(dir, name);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(UserError::new(format!("no floor `{name}` in {}", dir.display()))
                .hint("`ofc floors ls` lists them; `ofc floors create FILE --name NAME` makes one")
                .into());
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let record: FloorRecord = serde_json::from_str(&text)
        .map_err(|e| UserError::new(format!("{} is not a floor record: {e}", path.display())))?;
    if record.name != name {
        return Err(UserError::new(format!(
            "{} holds the floor `{}`, not `{name}`",
            path.display(),
            crate::output::clean_line(&record.name)
        ))
        .into());
    }
    Ok(record)
}

/// Every floor in `dir`, by name.
pub fn list(dir: &Path) -> Result<Vec<FloorRecord>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(name) = file.to_str().and_then(|f| f.strip_suffix(".json")) else {
            continue;
        };
        if check_name(name).is_ok() {
            out.push(read(dir, name)?);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Writes `record` whole: a temporary file (0600), synced, renamed over the old one.
pub fn write(dir: &Path, record: &FloorRecord) -> Result<()> {
    check_name(&record.name)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    let path = path_of(dir, &record.name);
    let tmp = dir.join(format!(".{}.json.tmp-{}", record.name, std::process::id()));
    let text = serde_json::to_string_pretty(record)?;
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut f = options
            .open(&tmp)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Removes floor `name`.
pub fn remove(dir: &Path, name: &str) -> Result<()> {
    read(dir, name)?;
    let path = path_of(dir, name);
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))
}

/// One change between two blueprints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mutation {
    /// `add`, `remove` or `update`.
    pub op: &'static str,
    /// `agent`, `furniture`, or `field` (another top-level field).
    pub kind: &'static str,
    /// The agent's id, the furniture's name, or the field.
    pub id: String,
    /// For an update: the fields that changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
}

impl std::fmt::Display for Mutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = match self.op {
            "add" => "+",
            "remove" => "-",
            _ => "~",
        };
        write!(f, "{sign} {} {}", self.kind, self.id)?;
        if !self.fields.is_empty() {
            write!(f, ": {}", self.fields.join(", "))?;
        }
        Ok(())
    }
}

/// The entries of a list field, keyed by `key` (`id`, `name`), in order.
fn keyed<'a>(doc: &'a Value, field: &str, key: &str) -> Vec<(String, &'a Value)> {
    doc.get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| {
                    let k = v.get(key)?.as_str()?;
                    let k = if field == "agents" && !k.starts_with('@') {
                        format!("@{k}")
                    } else {
                        k.to_owned()
                    };
                    Some((k, v))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut fields: Vec<String> = o
        .keys()
        .chain(n.keys())
        .filter(|k| o.get(*k) != n.get(*k))
        .cloned()
        .collect();
    fields.sort();
    fields.dedup();
    fields
}

/// What changes from the blueprint `old` to `new` (both parsed YAML).
pub fn diff(old: &Value, new: &Value) -> Vec<Mutation> {
    let mut out = Vec::new();
    for (field, kind, key) in [
        ("agents", "agent", "id"),
        ("furniture", "furniture", "name"),
    ] {
        let (before, after) = (keyed(old, field, key), keyed(new, field, key));
        for (k, v) in &before {
            match after.iter().find(|(n, _)| n == k) {
                None => out.push(Mutation {
                    op: "remove",
                    kind,
                    id: k.clone(),
                    fields: Vec::new(),
                }),
                Some((_, w)) if v != w => out.push(Mutation {
                    op: "update",
                    kind,
                    id: k.clone(),
                    fields: changed_fields(v, w),
                }),
                Some(_) => {}
            }
        }
        for (k, _) in after
            .iter()
            .filter(|(k, _)| !before.iter().any(|(b, _)| b == k))
        {
            out.push(Mutation {
                op: "add",
                kind,
                id: k.clone(),
                fields: Vec::new(),
            });
        }
    }
    for field in changed_fields(old, new) {
        if field != "agents" && field != "furniture" {
            out.push(Mutation {
                op: "update",
                kind: "field",
                id: field,
                fields: Vec::new(),
            });
        }
    }
    out
}

/// The parsed YAML of a blueprint text (for [`diff`]).
pub fn parsed(text: &str) -> Value {
    index_schema::source::parse_yaml(text)
        .map(|d| d.value)
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["x", "blog", "data-analysis_2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-x", "X", "a/b", "../x", ".x", "a b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn records_are_written_whole_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = FloorRecord {
            name: "blog".into(),
            generation: 1,
            created_at: "t".into(),
            updated_at: "t".into(),
            source: "/x/blueprint.yaml".into(),
            blueprint: "agents: []\n".into(),
        };
        write(dir.path(), &r).unwrap();
        r.generation = 2;
        write(dir.path(), &r).unwrap();
        assert_eq!(read(dir.path(), "blog").unwrap(), r);
        assert_eq!(list(dir.path()).unwrap(), [r]);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["blog.json"], "no temporary file is left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path_of(dir.path(), "blog"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(read(dir.path(), "nope").is_err());
        remove(dir.path(), "blog").unwrap();
        assert!(list(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn the_diff_names_agents_furniture_and_fields() {
        let old = parsed(
            "name: a\nagents:\n  - {id: \"@x\", prompt: one}\n  - {id: \"@y\", prompt: y}\nfurniture:\n  - {name: board, type: taskboard}\n",
        );
        let new = parsed(
            "name: b\nagents:\n  - {id: \"@x\", prompt: two, model: m}\n  - {id: \"@z\", prompt: z}\n",
        );
        let shown: Vec<String> = diff(&old, &new).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "~ agent @x: model, prompt",
                "- agent @y",
                "+ agent @z",
                "- furniture board",
                "~ field name"
            ]
        );
        assert!(diff(&old, &old).is_empty());
    }
}
