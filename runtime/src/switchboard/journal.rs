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
//!
//! Bounded: a delivery is begun once however often it is tried (a message waiting for the
//! floor stays begun, which is safe: a restart looks at the transcript), and when the file
//! passes the compaction size it is rewritten with only the open entries. A journal larger
//! than [`MAX_JOURNAL_BYTES`] at start is an error rather than being read in part (a part
//! could miss the `done` of a delivery and deliver it twice).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::os::fd::{AsFd, OwnedFd};

use super::workspace::{JOURNAL, open_dir, open_file_at, stat_at, write_atomic_at};

/// The largest journal read at start (it is emptied at every start, so it holds one run,
/// and compacted while it runs).
pub const MAX_JOURNAL_BYTES: u64 = 64 * 1024 * 1024;
/// The most transcript bytes searched for one message.
const MAX_TRANSCRIPT_SCAN: u64 = 1024 * 1024 * 1024;
/// The size past which the journal is rewritten with only its open entries.
pub const COMPACT_BYTES: u64 = 1024 * 1024;

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

#[derive(Debug)]
struct Inner {
    file: File,
    /// Bytes in the file.
    bytes: u64,
    /// Bytes in it right after it was last rewritten.
    compacted: u64,
    /// The entries begun and not yet done or undone, by id.
    open: BTreeMap<String, Begun>,
}

/// The journal, open for appending.
#[derive(Debug)]
pub struct Journal {
    /// `.switchboard/`, opened once (a link put in its place later is not followed).
    root: OwnedFd,
    compact_at: u64,
    inner: Mutex<Inner>,
}

impl Journal {
    /// Reads what the last run left unresolved, empties the journal and opens it for this
    /// run, to be compacted past [`COMPACT_BYTES`]. Unreadable lines are skipped (they can only
    /// be a line cut by a kill, whose delivery had not begun).
    pub fn open(root: &Path) -> io::Result<(Journal, Vec<Begun>)> {
        Self::open_with(root, COMPACT_BYTES, MAX_JOURNAL_BYTES)
    }

    /// [`Journal::open`] with the compaction size and the largest journal read.
    pub fn open_with(
        root: &Path,
        compact_at: u64,
        max_read: u64,
    ) -> io::Result<(Journal, Vec<Begun>)> {
        let path = root.join(JOURNAL);
        let dir = open_dir(root)?;
        let mut open: Vec<Begun> = Vec::new();
        match stat_at(dir.as_fd(), JOURNAL) {
            Ok(meta) if rustix::fs::FileType::from_raw_mode(meta.st_mode).is_file() => {
                let len = meta.st_size as u64;
                if len > max_read {
                    return Err(io::Error::other(format!(
                        "{} is {len} bytes, more than the {max_read} ofc reads: reading a part could deliver a message twice. \
                         Move it aside to start (messages it names as begun and still in their inbox may then be delivered again)",
                        path.display(),
                    )));
                }
                let mut text = String::new();
                open_file_at(dir.as_fd(), JOURNAL)?
                    .take(max_read)
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
        // What was open must survive until resolved: written again into the new journal.
        let kept: BTreeMap<String, Begun> =
            open.iter().map(|b| (b.id.clone(), b.clone())).collect();
        let (file, bytes) = Self::fresh(&dir, &kept)?;
        let journal = Journal {
            root: dir,
            compact_at,
            inner: Mutex::new(Inner {
                file,
                bytes,
                compacted: bytes,
                open: kept,
            }),
        };
        Ok((journal, open))
    }

    /// A new journal holding the begin lines of `open`, opened for appending.
    fn fresh(root: &OwnedFd, open: &BTreeMap<String, Begun>) -> io::Result<(File, u64)> {
        let mut text = String::new();
        for b in open.values() {
            text.push_str(
                &serde_json::to_string(&Line::Begin(b.clone())).map_err(io::Error::other)?,
            );
            text.push('\n');
        }
        write_atomic_at(root.as_fd(), JOURNAL, text.as_bytes(), 0o600)?;
        let fd = rustix::fs::openat(
            root.as_fd(),
            JOURNAL,
            rustix::fs::OFlags::WRONLY
                | rustix::fs::OFlags::APPEND
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        Ok((File::from(fd), text.len() as u64))
    }

    fn append(&self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match line {
            Line::Begin(b) => {
                if inner.open.get(&b.id) == Some(b) {
                    // Begun already (a delivery tried again): nothing new to say.
                    return Ok(());
                }
                inner.open.insert(b.id.clone(), b.clone());
            }
            Line::Done { id } | Line::Undone { id } => {
                if inner.open.remove(id).is_none() {
                    return Ok(());
                }
            }
        }
        // One write per line: a kill leaves the line whole or cut, never interleaved.
        inner.file.write_all(text.as_bytes())?;
        inner.bytes += text.len() as u64;
        // Past the size, counted from the last rewrite: a rewrite costs what is open, so it
        // comes only after at least as many bytes were appended.
        if inner.bytes > inner.compacted.saturating_add(self.compact_at) {
            // Rewritten whole (write-then-rename): a kill leaves the old or the new journal,
            // and both hold every open entry.
            let (file, bytes) = Self::fresh(&self.root, &inner.open)?;
            inner.file = file;
            inner.bytes = bytes;
            inner.compacted = bytes;
        }
        Ok(())
    }

    /// Records that a delivery begins (once: a delivery begun already is not written again).
    pub fn begin(&self, b: &Begun) -> io::Result<()> {
        self.append(&Line::Begin(b.clone()))
    }

    /// Records that it was finished.
    pub fn done(&self, id: &str) -> io::Result<()> {
        self.append(&Line::Done { id: id.to_owned() })
    }

    /// Records that the floor did not take it and it is not tried again as it is (refused,
    /// or a journal entry that was ignored).
    pub fn undone(&self, id: &str) -> io::Result<()> {
        self.append(&Line::Undone { id: id.to_owned() })
    }

    /// The open entry of `id` (a delivery begun and not yet done or undone), if any.
    pub fn open_entry(&self, id: &str) -> Option<Begun> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .open
            .get(id)
            .cloned()
    }

    /// The journal's size now.
    pub fn bytes(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }
}

/// What a transcript holds under a Switchboard id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No message with that id.
    Nothing,
    /// The message itself (`same` said so of a message with that id).
    Same,
    /// Only other messages carrying that id (the id was used again).
    Other,
}

/// What the transcript at `path` holds among its messages whose `metadata.switchboard.id` is
/// `id`; `same` tells, from such a transcript message, whether it is the one looked for.
pub fn transcript_find(path: &Path, id: &str, same: impl Fn(&Value) -> bool) -> io::Result<Found> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(e),
    };
    let needle = format!("\"{id}\"");
    let mut found = Found::Nothing;
    for line in BufReader::new(file.take(MAX_TRANSCRIPT_SCAN)).lines() {
        let line = line?;
        if !line.contains(&needle) {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["kind"] == "message" && v["message"]["metadata"]["switchboard"]["id"] == id {
            if same(&v["message"]) {
                return Ok(Found::Same);
            }
            found = Found::Other;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::fs::{self, OpenOptions};

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

    fn lines(dir: &Path) -> usize {
        fs::read_to_string(dir.join(JOURNAL))
            .unwrap()
            .lines()
            .count()
    }

    #[test]
    fn a_delivery_tried_again_is_begun_once_and_the_journal_stays_small() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open_with(dir.path(), 4096, MAX_JOURNAL_BYTES).unwrap();
        // A message waiting for the floor is tried at every look: one line however often.
        for _ in 0..1000 {
            j.begin(&begun("waits")).unwrap();
        }
        assert_eq!(lines(dir.path()), 1);
        // Many deliveries: the journal is rewritten with what is open, never much past the
        // compaction size.
        for n in 0..2000 {
            let id = format!("m{n}");
            j.begin(&begun(&id)).unwrap();
            j.done(&id).unwrap();
            assert!(j.bytes() <= 4096 + 256, "{}", j.bytes());
        }
        assert!(fs::metadata(dir.path().join(JOURNAL)).unwrap().len() <= 4096 + 256);
        drop(j);
        let (_, open) = Journal::open(dir.path()).unwrap();
        assert_eq!(
            open,
            vec![begun("waits")],
            "the open entry survived the rewrites"
        );
    }

    #[test]
    fn a_journal_too_large_to_read_whole_is_an_error_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for n in 0..100 {
            text.push_str(&serde_json::to_string(&Line::Begin(begun(&format!("m{n}")))).unwrap());
            text.push('\n');
        }
        // The done of the last one lies past the part that would be read.
        text.push_str("{\"op\":\"done\",\"id\":\"m99\"}\n");
        fs::write(dir.path().join(JOURNAL), &text).unwrap();
        let e = Journal::open_with(dir.path(), COMPACT_BYTES, 4096).unwrap_err();
        assert!(
            e.to_string().contains("more than the 4096 ofc reads"),
            "{e}"
        );
        assert_eq!(fs::read_to_string(dir.path().join(JOURNAL)).unwrap(), text);
        let (_, open) = Journal::open_with(dir.path(), COMPACT_BYTES, 1 << 20).unwrap();
        assert_eq!(open.len(), 99);
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
        let any = |_: &Value| true;
        assert_eq!(
            transcript_find(&path, "msg_1", any).unwrap(),
            Found::Nothing
        );
        assert_eq!(transcript_find(&path, "msg_2", any).unwrap(), Found::Same);
        let from_w = |m: &Value| m["from"] == "@w";
        assert_eq!(
            transcript_find(&path, "msg_2", from_w).unwrap(),
            Found::Same
        );
        let from_v = |m: &Value| m["from"] == "@v";
        assert_eq!(
            transcript_find(&path, "msg_2", from_v).unwrap(),
            Found::Other
        );
        assert_eq!(
            transcript_find(&dir.path().join("none"), "msg_2", any).unwrap(),
            Found::Nothing
        );
    }
}
