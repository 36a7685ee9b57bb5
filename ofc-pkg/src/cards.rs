//! AgentCard files and folders read from disk: the file access `index_schema::agent_card`
//! leaves out (it parses text only). One card file with the history files its `messages`
//! names ([`load_file`]), and a folder of cards ([`load_dir`]): every card file directly in
//! it, names unique across the folder, READMEs and Agent Skills skipped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use index_schema::agent_card::{
    AgentCard, CardFormat, LoadedCard, MAX_HISTORY_BYTES, card_format, has_front_matter,
    is_agent_skill, root_error, text_of,
};
use index_schema::{Diagnostic, Diagnostics, FieldPath, source};

/// Problems with one file of a card directory.
#[derive(Debug, Clone, PartialEq)]
pub struct FileDiagnostics {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub diagnostics: Diagnostics,
}

/// The result of loading a directory of cards.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardDir {
    /// Cards that loaded, sorted by file name; names are unique.
    pub cards: Vec<LoadedCard>,
    /// Files that did not load (or whose name repeats an earlier card's), sorted by file name.
    pub failed: Vec<FileDiagnostics>,
    /// Markdown files without front matter (a README next to the cards) and Agent Skills
    /// (`SKILL.md`), which are not cards.
    pub skipped: Vec<PathBuf>,
}

impl CardDir {
    /// True when every card file loaded.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }

    /// The cards, or every file's problems.
    pub fn into_result(self) -> Result<Vec<LoadedCard>, Vec<FileDiagnostics>> {
        if self.failed.is_empty() {
            Ok(self.cards)
        } else {
            Err(self.failed)
        }
    }
}

/// Reads and validates one card file (`.md`, `.markdown`, `.yaml`, `.yml`), including the
/// history files its `messages` name.
pub fn load_file(path: &Path) -> Result<LoadedCard, Diagnostics> {
    card_format(path)?;
    let text = read_text(path, source::MAX_DOCUMENT_BYTES as u64)?;
    AgentCard::load_text(path, &text, &mut read_history)
}

/// A history file's text, or why it cannot be had.
fn read_history(path: &Path) -> Result<String, String> {
    read_text(path, MAX_HISTORY_BYTES).map_err(|e| {
        if path.exists() {
            e.0.first().map_or(String::new(), |d| d.message.clone())
        } else {
            "the file does not exist".to_string()
        }
    })
}

/// A file's text: a regular file of at most `limit` bytes, in UTF-8.
fn read_text(path: &Path, limit: u64) -> Result<String, Diagnostics> {
    let meta =
        std::fs::metadata(path).map_err(|e| root_error(format!("cannot read the file: {e}")))?;
    if !meta.is_file() {
        return Err(root_error("not a regular file"));
    }
    if meta.len() > limit {
        return Err(root_error(format!(
            "file is {} bytes, more than the limit of {limit} bytes",
            meta.len()
        )));
    }
    let bytes =
        std::fs::read(path).map_err(|e| root_error(format!("cannot read the file: {e}")))?;
    text_of(bytes)
}

/// Loads every card file directly inside `dir` (not recursive), sorted by file name, and checks
/// that card names are unique across the directory. `Err` only when the directory itself cannot
/// be read.
pub fn load_dir(dir: &Path) -> Result<CardDir, Diagnostics> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| root_error(format!("cannot read directory `{}`: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && CardFormat::from_path(p).is_some())
        .collect();
    files.sort();

    let mut out = CardDir::default();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for path in files {
        if is_agent_skill(&path) {
            out.skipped.push(path);
            continue;
        }
        if CardFormat::from_path(&path) == Some(CardFormat::Markdown) {
            // A Markdown file without front matter is documentation, not a card (as in the
            // reference loader); one that cannot be read is reported by `load_file`.
            if let Ok(text) = read_text(&path, source::MAX_DOCUMENT_BYTES as u64)
                && !has_front_matter(&text)
            {
                out.skipped.push(path);
                continue;
            }
        }
        match load_file(&path) {
            Ok(loaded) => {
                if let Some(first) = seen.get(&loaded.card.name) {
                    let d = Diagnostic::new(
                        FieldPath::root().key("name"),
                        format!(
                            "duplicate card name `{}`: `{}` already defines it",
                            loaded.card.name,
                            first.display()
                        ),
                    )
                    .at(loaded.name_position);
                    out.failed.push(FileDiagnostics {
                        path,
                        diagnostics: d.into(),
                    });
                } else {
                    seen.insert(loaded.card.name.clone(), path);
                    out.cards.push(loaded);
                }
            }
            Err(diagnostics) => out.failed.push(FileDiagnostics { path, diagnostics }),
        }
    }
    Ok(out)
}
