//! A card file's text loaded with its history files: the files `messages` names, read through
//! the caller (this crate reads no files), resolved against the card's folder and checked.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    AgentCard, CARD_EXTENSIONS, CardFormat, Parsed, parse_markdown, parse_yaml_card, root_error,
};
use crate::diagnostic::{Diagnostics, FieldPath, Position};
use crate::source;

/// The format of a history file named by `messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryFormat {
    /// `{"messages": [...]}` (`.json`).
    Json,
    /// Text with `---USER` / `---ASSISTANT` / `---RESOURCE` delimiters (any other extension).
    Text,
}

/// A history file a card's `messages` names, resolved against the card's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryFile {
    /// The path as written in the card.
    pub written: String,
    /// The resolved path.
    pub path: PathBuf,
    /// How it is read.
    pub format: HistoryFormat,
}

/// A card read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCard {
    /// The card file.
    pub path: PathBuf,
    /// Its format.
    pub format: CardFormat,
    /// The card.
    pub card: AgentCard,
    /// The checked history files, in the order of `messages`.
    pub history: Vec<HistoryFile>,
    /// Where `name` is written in the file; `None` when the name came from the file name.
    pub name_position: Option<Position>,
    /// What the card says that has no effect ([`AgentCard::warnings`]), with lines.
    pub warnings: Diagnostics,
}

impl AgentCard {
    /// Parses and validates the text of one card file (`.md`, `.markdown`, `.yaml`, `.yml`).
    /// Nothing is read here: `path` only names the file (its extension gives the format, its
    /// stem the default name, its folder the base of `messages`), and the history files
    /// `messages` names are read through `read_history`, the caller's file access, which gives
    /// a file's text (at most [`super::MAX_HISTORY_BYTES`]) or why it cannot be had.
    pub fn load_text(
        path: &Path,
        text: &str,
        read_history: &mut dyn FnMut(&Path) -> Result<String, String>,
    ) -> Result<LoadedCard, Diagnostics> {
        let format = card_format(path)?;
        let stem = path.file_stem().and_then(|s| s.to_str());
        let parsed = match format {
            CardFormat::Markdown => parse_markdown(text, stem)?,
            CardFormat::Yaml => parse_yaml_card(text, stem)?,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let (history, diags) = check_history(dir, &parsed, read_history);
        if !diags.is_empty() {
            return Err(parsed.doc.locate(diags));
        }
        let name_position = if parsed.doc.value.get("name").is_some_and(|v| !v.is_null()) {
            parsed.doc.position(&FieldPath::root().key("name"))
        } else {
            None
        };
        Ok(LoadedCard {
            path: path.to_path_buf(),
            format,
            warnings: parsed.doc.locate(parsed.card.warnings()),
            card: parsed.card,
            history,
            name_position,
        })
    }
}

/// The format of a card file, from its extension; refused when it is not a card file's.
pub fn card_format(path: &Path) -> Result<CardFormat, Diagnostics> {
    CardFormat::from_path(path).ok_or_else(|| {
        root_error(format!(
            "not an AgentCard file: the extension must be one of {}",
            CARD_EXTENSIONS.map(|e| format!(".{e}")).join(", ")
        ))
    })
}

/// A file's bytes as text, refused when they are not UTF-8.
pub fn text_of(bytes: Vec<u8>) -> Result<String, Diagnostics> {
    String::from_utf8(bytes).map_err(|e| {
        root_error(format!(
            "the file is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Resolves and lightly validates the history files of a parsed card, read through `read`.
fn check_history(
    dir: &Path,
    parsed: &Parsed,
    read: &mut dyn FnMut(&Path) -> Result<String, String>,
) -> (Vec<HistoryFile>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let mut out = Vec::new();
    let field = FieldPath::root().key("messages");
    let as_list = parsed
        .doc
        .value
        .get("messages")
        .is_some_and(Value::is_array);
    for (i, written) in parsed.card.messages.iter().enumerate() {
        let path_of_entry = if as_list {
            field.index(i)
        } else {
            field.clone()
        };
        let resolved = dir.join(written);
        let format = match resolved.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => HistoryFormat::Json,
            _ => HistoryFormat::Text,
        };
        match read(&resolved) {
            Err(why) => {
                diags.push(
                    path_of_entry,
                    format!("history file `{}`: {why}", resolved.display()),
                );
            }
            Ok(text) => {
                if format == HistoryFormat::Json
                    && let Err(why) = check_json_history(&text)
                {
                    diags.push(
                        path_of_entry,
                        format!("history file `{}`: {why}", resolved.display()),
                    );
                    continue;
                }
                out.push(HistoryFile {
                    written: written.clone(),
                    path: resolved,
                    format,
                });
            }
        }
    }
    (out, diags)
}

/// A JSON history file is `{"messages": [...]}` with an object per message.
fn check_json_history(text: &str) -> Result<(), String> {
    let doc = source::parse_json(text).map_err(|d| {
        d.0.first()
            .map_or_else(|| "invalid JSON".to_string(), ToString::to_string)
    })?;
    match doc.value.get("messages") {
        Some(Value::Array(items)) => match items.iter().position(|m| !m.is_object()) {
            Some(i) => Err(format!("messages[{i}] must be an object")),
            None => Ok(()),
        },
        Some(_) => Err("`messages` must be a list".to_string()),
        None => Err("a JSON history file must be an object with a `messages` list".to_string()),
    }
}
