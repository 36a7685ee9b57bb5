//! ofc's delivery journal (`.switchboard/ofc-journal.jsonl`): how an inbox message reaches
//! the floor exactly once although ofc may be killed at any point.
//!
//! Delivering a message file takes three steps that cannot be one atomic act: the floor
//! stores it (its transcript gets the message, carrying the Switchboard id in `metadata`),
//! the receipt is written, the file is archived. So before the first step a `begin` line
//! names the message, its file and the transcript it is going to; after the last, a `done`
//! line (or `undone`, when the floor did not take it). A restart reads the journal: a
//! message begun but neither done nor undone whose file is still in its inbox was delivered
//! exactly when the named transcript holds it — then only the receipt and the archiving are
//! finished; otherwise it is delivered again. The journal is emptied once read.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::workspace::{JOURNAL, write_atomic};

/// The largest journal read at start (it is emptied at every start, so it holds one run).
const MAX_JOURNAL_BYTES: u64 = 64 * 1024 * 1024;
/// The most transcript bytes searched for one message.
const MAX_TRANSCRIPT_SCAN: u64 = 1024 * 1024 * 1024;

/// A delivery begun.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Begun {
    /// The message's Switchboard id.
    pub id: String,
    /// The inbox it sits in.
    pub inbox: String,
    /// Its file there.
    pub file: String,
    /// Who sent it (its receipt goes to `outbox/<sender>/`).
    pub sender: String,
    /// The transcript the floor writes it to, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<PathBuf>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Line {
    Begin(Begun),
    Done { id: String },
    Undone { id: String },
}

/// The journal, open for appending.
#[derive(Debug)]
pub struct Journal {
    file: Mutex<File>,
}

impl Journal {
    /// Reads what the last run left unresolved, empties the journal and opens it for this
    /// run. Unreadable lines are skipped (they can only be a line cut by a kill, whose
    /// delivery had not begun).
    pub fn open(root: &Path) -> io::Result<(Journal, Vec<Begun>)> {
        let path = root.join(JOURNAL);
        let mut open: Vec<Begun> = Vec::new();
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                let mut text = String::new();
                File::open(&path)?
                    .take(MAX_JOURNAL_BYTES)
                    .read_to_string(&mut text)?;
                for line in text.lines() {
                    match serde_json::from_str::<Line>(line) {
                        Ok(Line::Begin(b)) => {
                            open.retain(|o| o.id != b.id);
                            open.push(b);
                        }
                        Ok(Line::Done { id } | Line::Undone { id }) => open.retain(|o| o.id != id),
                        Err(_) => {}
                    }
                }
            }
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "{} is not a regular file",
                    path.display()
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let journal = Journal {
            file: Mutex::new(Self::fresh(root)?),
        };
        // What was open must survive until resolved: written again into the new journal.
        for b in &open {
            journal.append(&Line::Begin(b.clone()))?;
        }
        Ok((journal, open))
    }

    fn fresh(root: &Path) -> io::Result<File> {
        write_atomic(root, JOURNAL, b"", 0o600)?;
        OpenOptions::new().append(true).open(root.join(JOURNAL))
    }

    fn append(&self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        // One write per line: a kill leaves the line whole or cut, never interleaved.
        self.file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(text.as_bytes())
    }

    /// Records that a delivery begins.
    pub fn begin(&self, b: &Begun) -> io::Result<()> {
        self.append(&Line::Begin(b.clone()))
    }

    /// Records that it was finished.
    pub fn done(&self, id: &str) -> io::Result<()> {
        self.append(&Line::Done { id: id.to_owned() })
    }

    /// Records that the floor did not take it (the file stays to be delivered again).
    pub fn undone(&self, id: &str) -> io::Result<()> {
        self.append(&Line::Undone { id: id.to_owned() })
    }
}

/// Whether the transcript at `path` holds a message whose `metadata.switchboard.id` is `id`.
pub fn transcript_holds(path: &Path, id: &str) -> io::Result<bool> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let needle = format!("\"{id}\"");
    for line in BufReader::new(file.take(MAX_TRANSCRIPT_SCAN)).lines() {
        let line = line?;
        if !line.contains(&needle) {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["kind"] == "message" && v["message"]["metadata"]["switchboard"]["id"] == id {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begun(id: &str) -> Begun {
        Begun {
            id: id.into(),
            inbox: "lead".into(),
            file: format!("{id}.json"),
            sender: "worker".into(),
            transcript: None,
        }
    }

    #[test]
    fn what_was_begun_and_not_finished_survives_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let (j, open) = Journal::open(dir.path()).unwrap();
        assert!(open.is_empty());
        j.begin(&begun("a")).unwrap();
        j.begin(&begun("b")).unwrap();
        j.done("a").unwrap();
        j.begin(&begun("c")).unwrap();
        j.undone("c").unwrap();
        drop(j);
        // A line cut by a kill.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(JOURNAL))
            .unwrap();
        f.write_all(b"{\"op\":\"begin\",\"id\":\"d").unwrap();
        let (_, open) = Journal::open(dir.path()).unwrap();
        assert_eq!(open, vec![begun("b")]);
        let (_, open) = Journal::open(dir.path()).unwrap();
        assert_eq!(open, vec![begun("b")], "kept until resolved");
    }

    #[test]
    fn a_transcript_is_searched_for_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        fs::write(
            &path,
            "{\"t_ms\":1,\"kind\":\"event\",\"event\":{\"event\":\"user_message\",\"content\":\"\\\"msg_1\\\"\"}}\n\
             {\"t_ms\":2,\"kind\":\"message\",\"message\":{\"id\":\"msg-1\",\"from\":\"@w\",\"content\":\"x\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"metadata\":{\"switchboard\":{\"id\":\"msg_2\"}}}}\n",
        )
        .unwrap();
        assert!(!transcript_holds(&path, "msg_1").unwrap());
        assert!(transcript_holds(&path, "msg_2").unwrap());
        assert!(!transcript_holds(&dir.path().join("none"), "msg_2").unwrap());
    }
}
