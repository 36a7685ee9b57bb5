//! What loading a blueprint reads besides its own text (`index_schema::blueprint` does no
//! I/O): `${VAR}` values from ofc's environment, each agent's `prompt_file`, and what prompt
//! templates read (`<% readfile %>`, `<% env %>`) before each turn. Used by `ofc run` and
//! `ofc validate` alike, so both say the same about a blueprint.
//!
//! Files a blueprint names are read under one path rule: a relative path is taken from the
//! blueprint's directory and must stay inside it, after `..` and symlinks are resolved (a
//! blueprint pulled from elsewhere cannot send `../../.ssh/id_ed25519` to a model); an absolute
//! path is the author's explicit choice and is read as written.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use index_schema::blueprint::template::{self, Call, Template};
use index_schema::blueprint::{AgentEntry, Blueprint, vars};
use index_schema::source::SourceDoc;
use index_schema::{Diagnostics, FieldPath};
use runtime::llm::PromptSource;

/// The largest prompt file read (a prompt is sent with every turn).
pub const MAX_PROMPT_FILE_BYTES: u64 = 1 << 20;

/// Expands `${VAR}`, `${VAR-default}` and `${VAR:-default}` in every string of the parsed
/// blueprint from ofc's environment; each unset variable is one diagnostic on its field.
pub fn expand_vars(doc: &mut SourceDoc) -> Diagnostics {
    vars::expand(&mut doc.value, &|name| std::env::var(name).ok())
}

/// The `api_key`s (and furniture `oauth.client_secret`s) written as the key itself rather than
/// `${VAR}` (look before [`expand_vars`]): one warning each, since anyone who can read the file
/// can read the key. The key is never part of the message.
pub fn literal_api_keys(doc: &SourceDoc) -> Diagnostics {
    let mut d = Diagnostics::default();
    let root = FieldPath::root();
    let mut at = vec![(root.key("defaults"), doc.value.get("defaults"))];
    if let Some(agents) = doc.value.get("agents").and_then(|a| a.as_array()) {
        at.extend(
            agents
                .iter()
                .enumerate()
                .map(|(i, a)| (root.key("agents").index(i), Some(a))),
        );
    }
    for (path, v) in at {
        let key = v.and_then(|v| v.get("api_key")).and_then(|k| k.as_str());
        if key.is_some_and(|k| !k.is_empty() && !k.contains("${")) {
            d.push(
                path.key("api_key"),
                "the key is written in the blueprint: anyone who can read this file can read \
                 it; prefer `api_key: ${VAR}` or `api_key_env: VAR`",
            );
        }
    }
    // The same for a furniture's OAuth client secret.
    if let Some(furniture) = doc.value.get("furniture").and_then(|f| f.as_array()) {
        for (i, f) in furniture.iter().enumerate() {
            let secret = f
                .get("oauth")
                .and_then(|o| o.get("client_secret"))
                .and_then(|s| s.as_str());
            if secret.is_some_and(|s| !s.is_empty() && !s.contains("${")) {
                d.push(
                    root.key("furniture")
                        .index(i)
                        .key("oauth")
                        .key("client_secret"),
                    "the secret is written in the blueprint: anyone who can read this file can \
                     read it; prefer `client_secret: ${VAR}`",
                );
            }
        }
    }
    d
}

/// Reads each inline agent's `prompt_file` (under the path rule above) into its `prompt`, and
/// clears `prompt_file`; the text is used as written (no `${VAR}` expansion). Then checks each
/// prompt template: its syntax, and that each `readfile` path keeps to the path rule (a file
/// not there yet is only read at the turn). Errors are on the field the prompt came from.
pub fn read_prompt_files(bp: &mut Blueprint, dir: &Path) -> Diagnostics {
    let mut d = Diagnostics::default();
    for (i, entry) in bp.agents.iter_mut().enumerate() {
        let AgentEntry::Inline(a) = entry else {
            continue;
        };
        let agent = FieldPath::root().key("agents").index(i);
        let mut field = agent.key("prompt");
        if let Some(file) = a.prompt_file.take() {
            field = agent.key("prompt_file");
            match resolve_in(dir, &file).and_then(|p| read_text(&p, &file)) {
                Ok(text) => a.prompt = Some(text),
                Err(e) => {
                    d.push(field, e);
                    a.prompt_file = Some(file);
                    continue;
                }
            }
        }
        let Some(prompt) = a.prompt.as_deref().filter(|p| template::is_template(p)) else {
            continue;
        };
        match Template::parse(prompt) {
            Ok(t) => {
                for call in t.calls() {
                    if let Call::ReadFile(path) = call
                        && let Err(e) = confined(dir, path)
                    {
                        d.push(field.clone(), format!("`{call}`: {e}"));
                    }
                }
            }
            Err(e) => d.push(field, e),
        }
    }
    d
}

/// The prompt of an agent, rendered before each turn when it is a template (`None` when it
/// is not): `readfile` under the path rule, `env` from ofc's environment at that moment.
pub fn prompt_source(prompt: Option<&str>, dir: &Path) -> Option<PromptSource> {
    let t = Template::parse(prompt.filter(|p| template::is_template(p))?).ok()?;
    let dir = dir.to_path_buf();
    Some(Arc::new(move || render(&t, &dir)))
}

/// `t` rendered now.
pub fn render(t: &Template, dir: &Path) -> Result<String, String> {
    t.render(&mut |call| match call {
        Call::ReadFile(path) => resolve_in(dir, path).and_then(|p| read_text(&p, path)),
        Call::Env { name, default } => match (std::env::var(name), default) {
            (Ok(v), _) => Ok(v),
            (Err(_), Some(d)) => Ok(d.clone()),
            (Err(_), None) => Err(format!(
                "the environment variable {name} is not set; give a default: \
                 `<% env \"{name}\" \"value\" %>`"
            )),
        },
    })
}

/// `path` as the blueprint in `dir` names it: absolute as written, relative inside `dir`.
pub fn resolve_in(dir: &Path, path: &str) -> Result<PathBuf, String> {
    let p = Path::new(path);
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    if escapes(p) {
        return Err(outside(dir, path, "leads"));
    }
    let joined = dir.join(p);
    let real = joined
        .canonicalize()
        .map_err(|e| format!("cannot read `{path}` ({}): {e}", joined.display()))?;
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if real.starts_with(&root) {
        return Ok(real);
    }
    Err(outside(&root, path, "leads through a symlink"))
}

/// Whether `path` keeps to the path rule as far as can be told before it exists: no `..` out
/// of `dir`, and, when it is there, not out of it through a symlink.
fn confined(dir: &Path, path: &str) -> Result<(), String> {
    match resolve_in(dir, path) {
        Err(e) if e.contains("outside the blueprint's directory") => Err(e),
        _ => Ok(()),
    }
}

/// Whether a relative path climbs above where it starts (`../x`, `a/../../x`).
fn escapes(path: &Path) -> bool {
    let mut depth = 0i32;
    for c in path.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

fn outside(dir: &Path, path: &str, how: &str) -> String {
    format!(
        "`{path}` {how} outside the blueprint's directory ({}); a relative path must stay \
         inside it — write an absolute path to read a file elsewhere",
        dir.display()
    )
}

/// A UTF-8 text file of at most [`MAX_PROMPT_FILE_BYTES`]; errors name it as written.
fn read_text(p: &Path, named: &str) -> Result<String, String> {
    let cannot =
        |e: &dyn std::fmt::Display| format!("cannot read `{named}` ({}): {e}", p.display());
    let f = std::fs::File::open(p).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    f.take(MAX_PROMPT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(&e))?;
    if bytes.len() as u64 > MAX_PROMPT_FILE_BYTES {
        return Err(cannot(&format!(
            "larger than {MAX_PROMPT_FILE_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| cannot(&"not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blueprint(text: &str) -> Blueprint {
        Blueprint::from_yaml(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_prompt_file_becomes_the_prompt_unexpanded() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("prompts")).unwrap();
        std::fs::write(d.path().join("prompts/a.md"), "Costs ${PRICE} and $5\n").unwrap();
        let mut bp = blueprint(
            "agents:\n  - {id: \"@a\", model: m, prompt_file: prompts/a.md}\n  - {id: \"@b\", model: m, prompt: inline}\n",
        );
        assert!(read_prompt_files(&mut bp, d.path()).is_empty());
        let a = bp.agents[0].as_inline().unwrap();
        assert_eq!(a.prompt.as_deref(), Some("Costs ${PRICE} and $5\n"));
        assert_eq!(a.prompt_file, None);
        assert_eq!(
            bp.agents[1].as_inline().unwrap().prompt.as_deref(),
            Some("inline")
        );
        assert!(bp.validate().is_ok(), "resolved, it is a plain prompt");
    }

    #[test]
    fn a_missing_file_is_named_with_its_field() {
        let d = tempfile::tempdir().unwrap();
        let mut bp = blueprint(
            "agents:\n  - {id: \"@a\", model: m}\n  - {id: \"@b\", model: m, prompt_file: nope.md}\n",
        );
        let e = read_prompt_files(&mut bp, d.path());
        let e: Vec<_> = e.iter().collect();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].path.to_string(), "agents[1].prompt_file");
        assert!(
            e[0].message.contains("cannot read `nope.md`"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn relative_paths_stay_inside_the_blueprint_directory() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("floor");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(outer.path().join("secret"), "s3cret").unwrap();
        std::fs::write(dir.join("ok.md"), "fine").unwrap();
        let e = resolve_in(&dir, "../secret").unwrap_err();
        assert!(
            e.contains("`../secret` leads outside the blueprint's directory")
                && e.contains("absolute path"),
            "{e}"
        );
        // Down and back up inside is fine.
        std::fs::create_dir(dir.join("sub")).unwrap();
        assert!(resolve_in(&dir, "sub/../ok.md").is_ok());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outer.path().join("secret"), dir.join("link.md")).unwrap();
            let e = resolve_in(&dir, "link.md").unwrap_err();
            assert!(e.contains("through a symlink"), "{e}");
        }
        // Written as an absolute path, it is the author's explicit choice.
        let abs = outer.path().join("secret");
        assert_eq!(
            read_text(&resolve_in(&dir, abs.to_str().unwrap()).unwrap(), "x").unwrap(),
            "s3cret"
        );
    }

    #[test]
    fn templates_are_checked_at_load_and_rendered_at_each_call() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("floor");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(outer.path().join("secret"), "s3cret").unwrap();
        std::fs::write(dir.join("notes.md"), "first").unwrap();
        let mut bp = blueprint(
            "agents:\n  - {id: \"@a\", model: m, prompt: \"Notes: <% readfile \\\"notes.md\\\" %>; later: <% readfile \\\"later.md\\\" %>\"}\n  - {id: \"@b\", model: m, prompt: \"<% readfile \\\"sub/../../secret\\\" %>\"}\n",
        );
        let d: Vec<_> = read_prompt_files(&mut bp, &dir).iter().cloned().collect();
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].path.to_string(), "agents[1].prompt");
        assert!(
            d[0].message.contains("`readfile \"sub/../../secret\"`")
                && d[0].message.contains("outside the blueprint's directory"),
            "{}",
            d[0].message
        );
        // Rendered on each call: a file written later is read then, and again after a change.
        let source =
            prompt_source(bp.agents[0].as_inline().unwrap().prompt.as_deref(), &dir).unwrap();
        assert!(source().unwrap_err().contains("cannot read `later.md`"));
        std::fs::write(dir.join("later.md"), "second").unwrap();
        assert_eq!(source().unwrap(), "Notes: first; later: second");
        std::fs::write(dir.join("notes.md"), "changed").unwrap();
        assert_eq!(source().unwrap(), "Notes: changed; later: second");
        assert!(prompt_source(Some("plain text"), &dir).is_none());
    }

    #[test]
    fn env_in_a_template_is_read_at_render_time() {
        let d = tempfile::tempdir().unwrap();
        let t =
            Template::parse("<% env \"PATH\" %>|<% env \"OFC_BF_TEST_UNSET\" \"dflt\" %>").unwrap();
        let out = render(&t, d.path()).unwrap();
        assert!(out.ends_with("|dflt") && out.len() > 5, "{out}");
        let t = Template::parse("<% env \"OFC_BF_TEST_UNSET\" %>").unwrap();
        let e = render(&t, d.path()).unwrap_err();
        assert!(
            e.contains("OFC_BF_TEST_UNSET is not set")
                && e.contains("<% env \"OFC_BF_TEST_UNSET\" \"value\" %>"),
            "{e}"
        );
    }
}
