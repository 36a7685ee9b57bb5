//! The session file: JSON lines, read forgivingly and appended with a documented sync policy.
//!
//! **Reading** ([`read`]) never refuses a whole log for one bad line. Each line that is not
//! JSON, not a record, longer than [`MAX_LINE`], out of `seq` order, of an unknown kind or
//! payload type, or dated more than [`FUTURE_SLACK`] after now is skipped and reported as a
//! [`Problem`] with its 1-based line number; every other line is kept. A last line with no
//! line break that is not JSON is the trace of a crash mid-write: it is not a problem but a
//! [`Torn`] tail, and the log is whole up to it.
//!
//! **Writing** ([`SessionFile`]): each record is one `write(2)` of the whole line, newline
//! included, on a file opened for appending, so a crash of ofc loses nothing already appended
//! and can at worst leave the last line cut (recovered as above). Lines that carry the
//! conversation's state (`meta`, messages, compactions, `/clear`, grants, the task board) are
//! followed by `fdatasync`, as is the end of every turn and the close of the file; other lines
//! (progress events, transcript lines for `ofc floor replay`) are synced with the next of
//! those. A power cut thus loses at most progress lines written since the last message. The
//! file is locked (`flock`, exclusive) while it is open for writing, so two processes never
//! append to one session, and `ofc sessions rm` refuses a session in use.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload::{self, PayloadKind};
use super::pg::{PgSessions, PgWriter};
use super::store::LogSource;
use super::{SessionError, SessionId, SessionMeta, shown};

/// The longest line read, in bytes. A floor message is at most 256 KiB; a line longer than
/// this was not written by ofc and is skipped without being held in memory.
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// The largest `seq` an event may have (PostgreSQL's `BIGINT`): a line with a larger one was
/// not written by ofc, and is skipped, so that the next `seq` and a watcher's cursor after it
/// never overflow.
pub const MAX_SEQ: u64 = i64::MAX as u64;

/// How far past now an event's time may be (clocks of two machines differ a little).
pub const FUTURE_SLACK: Duration = Duration::from_secs(300);

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// Where the session comes from; the last one wins.
    Meta {
        /// The session (informational: the file name decides).
        session_id: String,
        /// The meta.
        meta: SessionMeta,
    },
    /// Something that happened.
    Event(StoredEvent),
}

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The session (informational: the file name decides).
    pub session_id: String,
    /// Its number in the session, from 1, increasing.
    pub seq: u64,
    /// When it was appended, RFC 3339 UTC.
    pub time: String,
    /// Its room (`#main`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub room_id: String,
    /// What it is ([`payload`]).
    pub payload_type: String,
    /// Its content.
    pub payload: Value,
}

/// A line that was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based.
    pub line: usize,
    /// Why.
    pub message: String,
}

/// The cut last line of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    /// 1-based.
    pub line: usize,
    /// Where it starts: the log is whole up to here.
    pub offset: u64,
    /// Its length.
    pub bytes: u64,
}

/// A session file as read.
#[derive(Debug, Clone, Default)]
pub struct SessionLog {
    /// The last `meta` line.
    pub meta: Option<SessionMeta>,
    /// The events kept, in `seq` order.
    pub events: Vec<StoredEvent>,
    /// Lines skipped.
    pub problems: Vec<Problem>,
    /// A cut last line.
    pub torn: Option<Torn>,
    /// The bytes of whole lines (where an append continues).
    pub whole_len: u64,
    /// Whether the last whole line lacks its line break (a writer of another program).
    pub needs_newline: bool,
}

impl SessionLog {
    /// The last `seq` (0 if none).
    pub fn last_seq(&self) -> u64 {
        self.events.last().map_or(0, |e| e.seq)
    }

    /// Every problem as `file:line: message`, then the torn tail, for a warning.
    pub fn warnings(&self, path: &Path) -> Vec<String> {
        let mut out: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("{}:{}: {}; line skipped", path.display(), p.line, p.message))
            .collect();
        if let Some(t) = &self.torn {
            out.push(format!(
                "{}:{}: the last line was cut by a crash ({} bytes); the session is recovered up to line {}",
                path.display(),
                t.line,
                t.bytes,
                t.line - 1
            ));
        }
        out
    }
}

/// Reads a session file. Fails only when the file cannot be read at all.
pub fn read(path: &Path) -> Result<SessionLog, SessionError> {
    let file = File::open(path).map_err(|e| SessionError::io(path.display(), e))?;
    read_from(BufReader::with_capacity(64 * 1024, file))
        .map_err(|e| SessionError::io(path.display(), e))
}

/// A raw line: its bytes (empty when too long), its length, whether it ended with `\n`.
struct RawLine {
    bytes: Vec<u8>,
    len: u64,
    newline: bool,
}

/// Reads one line, keeping at most [`MAX_LINE`] bytes of it; `None` at the end.
fn next_line(reader: &mut impl BufRead) -> std::io::Result<Option<RawLine>> {
    let mut line = RawLine {
        bytes: Vec::new(),
        len: 0,
        newline: false,
    };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((line.len > 0).then_some(line));
        }
        let (chunk, found) = match memchr(buf) {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        line.len += chunk.len() as u64;
        if line.len <= MAX_LINE as u64 {
            line.bytes.extend_from_slice(chunk);
        } else if !line.bytes.is_empty() {
            line.bytes = Vec::new();
        }
        let used = chunk.len() + usize::from(found);
        reader.consume(used);
        if found {
            line.newline = true;
            return Ok(Some(line));
        }
    }
}

/// A problem's message, which may quote the line (a parser's "invalid type: string …"):
/// control characters dropped, at most 240 characters.
fn bounded(message: &str) -> String {
    let mut out: String = message
        .chars()
        .filter(|c| !c.is_control())
        .take(240)
        .collect();
    if message.chars().count() > 240 {
        out.push('…');
    }
    out
}

fn memchr(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

/// Reads a session log from any reader (see [`read`]).
pub fn read_from(mut reader: impl BufRead) -> std::io::Result<SessionLog> {
    let mut log = SessionLog::default();
    let mut offset: u64 = 0;
    let mut number = 0;
    let latest = time::OffsetDateTime::now_utc() + FUTURE_SLACK;
    while let Some(raw) = next_line(&mut reader)? {
        number += 1;
        let start = offset;
        offset += raw.len + u64::from(raw.newline);
        let mut problem = |message: String| {
            log.problems.push(Problem {
                line: number,
                message: bounded(&message),
            });
        };
        if raw.len > MAX_LINE as u64 {
            if raw.newline {
                log.whole_len = offset;
            } else {
                log.torn = Some(Torn {
                    line: number,
                    offset: start,
                    bytes: raw.len,
                });
                break;
            }
            problem(format!(
                "a line of {} bytes, over the {} MiB a session line may have",
                raw.len,
                MAX_LINE / (1024 * 1024)
            ));
            continue;
        }
        let text = String::from_utf8_lossy(&raw.bytes);
        if text.trim().is_empty() {
            if raw.newline {
                log.whole_len = offset;
            }
            continue;
        }
        let value: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) if !raw.newline => {
                let _ = e;
                log.torn = Some(Torn {
                    line: number,
                    offset: start,
                    bytes: raw.len,
                });
                break;
            }
            Err(e) => {
                log.whole_len = offset;
                problem(format!("not JSON: {e}"));
                continue;
            }
        };
        log.whole_len = offset;
        log.needs_newline = !raw.newline;
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match kind.as_str() {
            "meta" | "event" => {}
            // The reference CLI's per-agent visibility and ACP cursor lines: ofc derives both.
            "ref" | "agent_state" => continue,
            "" => {
                problem("not a session record: it has no `kind`".to_owned());
                continue;
            }
            other => {
                problem(format!(
                    "unknown record kind `{}` (written by a newer ofc?)",
                    shown(other)
                ));
                continue;
            }
        }
        let record: Record = match serde_json::from_value(value) {
            Ok(r) => r,
            Err(e) => {
                problem(format!("not a `{kind}` record: {e}"));
                continue;
            }
        };
        match record {
            Record::Meta { meta, .. } => log.meta = Some(meta),
            Record::Event(event) => {
                if event.seq == 0 || event.seq > MAX_SEQ {
                    problem(format!(
                        "event seq {} is out of range (1 to {MAX_SEQ})",
                        event.seq
                    ));
                    continue;
                }
                if let Some(last) = log.events.last()
                    && event.seq <= last.seq
                {
                    problem(format!(
                        "event seq {} does not follow seq {} (edited or copied in?)",
                        event.seq, last.seq
                    ));
                    continue;
                }
                match time::OffsetDateTime::parse(
                    &event.time,
                    &time::format_description::well_known::Rfc3339,
                ) {
                    Err(e) => {
                        problem(format!(
                            "`time` `{}` is not RFC 3339: {e}",
                            shown(&event.time)
                        ));
                        continue;
                    }
                    Ok(t) if t > latest => {
                        problem(format!(
                            "event seq {} is dated {}, in the future",
                            event.seq,
                            shown(&event.time)
                        ));
                        continue;
                    }
                    Ok(_) => {}
                }
                if let Err(message) = payload::check(&event.payload_type, &event.payload) {
                    problem(format!("event seq {}: {message}", event.seq));
                    continue;
                }
                log.events.push(event);
            }
        }
    }
    Ok(log)
}

/// A session file open for appending, locked for this process (or a session in PostgreSQL,
/// locked for this connection: [`super::pg`]).
#[derive(Debug)]
pub struct SessionFile {
    id: SessionId,
    path: PathBuf,
    sink: Sink,
    next_seq: u64,
    /// Lines written since the last sync.
    unsynced: bool,
    line: Vec<u8>,
}

/// Where the lines go.
#[derive(Debug)]
enum Sink {
    File(File),
    /// The writer, the store, the session's project.
    Pg(PgWriter, PgSessions, String),
}

fn lock(file: &File, id: &SessionId) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Busy(id.clone())),
        Err(std::fs::TryLockError::Error(e)) => Err(SessionError::io("cannot lock the session", e)),
    }
}

fn open_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    no_follow(&mut options);
    options
}

/// Opening fails on a symbolic link (a session's files are never links).
fn no_follow(options: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        options,
        rustix::fs::OFlags::NOFOLLOW.bits() as i32,
    );
    #[cfg(not(unix))]
    let _ = options;
}

impl SessionFile {
    /// Creates the file of a new session and writes its `meta` line.
    pub fn create(path: &Path, id: SessionId, meta: &SessionMeta) -> Result<Self, SessionError> {
        let file = open_options()
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => SessionError::Exists(id.clone()),
                _ => SessionError::io(path.display(), e),
            })?;
        lock(&file, &id)?;
        let mut out = Self {
            id,
            path: path.to_owned(),
            sink: Sink::File(file),
            next_seq: 1,
            unsynced: false,
            line: Vec::new(),
        };
        out.write_meta(meta)?;
        Ok(out)
    }

    /// Opens an existing session to continue it: locks it, reads it, sets a cut last line
    /// aside in `<file>.torn-<seq>` and truncates it away, so that appends start on a line of
    /// their own. Answers the log as read. `accept` sees the log before anything is changed
    /// and may refuse it.
    pub fn resume(
        path: &Path,
        id: SessionId,
        accept: impl FnOnce(&SessionLog) -> Result<(), SessionError>,
    ) -> Result<(Self, SessionLog), SessionError> {
        let mut file = open_options()
            .open(path)
            .map_err(|e| SessionError::io(path.display(), e))?;
        lock(&file, &id)?;
        let log = read_from(BufReader::with_capacity(64 * 1024, &file))
            .map_err(|e| SessionError::io(path.display(), e))?;
        accept(&log)?;
        if let Some(torn) = &log.torn {
            let aside = path.with_extension(format!("jsonl.torn-{}", log.last_seq()));
            let mut cut = Vec::new();
            file.seek(SeekFrom::Start(torn.offset))
                .and_then(|_| (&file).take(torn.bytes).read_to_end(&mut cut))
                .and_then(|_| {
                    // The cut bytes are conversation too: private, as the session is.
                    let mut options = OpenOptions::new();
                    options.write(true).create(true).truncate(true);
                    #[cfg(unix)]
                    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                    // Not through a link someone left under that name.
                    no_follow(&mut options);
                    options.open(&aside)?.write_all(&cut)
                })
                .map_err(|e| SessionError::io(aside.display(), e))?;
            file.set_len(log.whole_len)
                .and_then(|()| file.sync_data())
                .map_err(|e| SessionError::io(path.display(), e))?;
        }
        if log.needs_newline {
            (&file)
                .write_all(b"\n")
                .map_err(|e| SessionError::io(path.display(), e))?;
        }
        let out = Self {
            id,
            path: path.to_owned(),
            sink: Sink::File(file),
            next_seq: log.last_seq() + 1,
            unsynced: false,
            line: Vec::new(),
        };
        Ok((out, log))
    }

    /// Creates a new session of `project` in PostgreSQL and writes its `meta` line.
    pub(crate) fn create_pg(
        store: &PgSessions,
        id: SessionId,
        project: &str,
        meta: &SessionMeta,
    ) -> Result<Self, SessionError> {
        let (writer, _, _) = store.open(&id, project, true)?;
        let mut out = Self {
            path: store.place_of(&id),
            id,
            sink: Sink::Pg(writer, store.clone(), project.to_owned()),
            next_seq: 1,
            unsynced: false,
            line: Vec::new(),
        };
        out.write_meta(meta)?;
        Ok(out)
    }

    /// Opens a session in PostgreSQL to continue it (locked for this connection), as
    /// [`SessionFile::resume`] opens a file.
    pub(crate) fn resume_pg(
        store: &PgSessions,
        id: SessionId,
        project: &str,
        accept: impl FnOnce(&SessionLog) -> Result<(), SessionError>,
    ) -> Result<(Self, SessionLog), SessionError> {
        let (writer, lines, _) = store.open(&id, project, false)?;
        let log = super::pg::parse_lines(&lines)?;
        accept(&log)?;
        let out = Self {
            path: store.place_of(&id),
            id,
            sink: Sink::Pg(writer, store.clone(), project.to_owned()),
            next_seq: log.last_seq() + 1,
            unsynced: false,
            line: Vec::new(),
        };
        Ok((out, log))
    }

    /// Where its events can be read back (by a watcher behind the in-memory feed).
    pub fn source(&self) -> LogSource {
        match &self.sink {
            Sink::File(_) => LogSource::File(self.path.clone()),
            Sink::Pg(_, store, project) => {
                LogSource::Pg(store.clone(), self.id.clone(), project.clone())
            }
        }
    }

    /// The session.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `seq` the next event gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends a `meta` line (synced).
    pub fn write_meta(&mut self, meta: &SessionMeta) -> Result<(), SessionError> {
        let record = Record::Meta {
            session_id: self.id.to_string(),
            meta: meta.clone(),
        };
        self.write_line(&record)?;
        self.sync()
    }

    /// Appends an event; answers its `seq`. Synced per the policy of its payload type
    /// ([`PayloadKind::durable`]).
    pub fn append(
        &mut self,
        room_id: &str,
        payload_type: &str,
        payload: Value,
    ) -> Result<u64, SessionError> {
        let seq = self.next_seq;
        let record = Record::Event(StoredEvent {
            session_id: self.id.to_string(),
            seq,
            time: super::now_rfc3339(),
            room_id: room_id.to_owned(),
            payload_type: payload_type.to_owned(),
            payload,
        });
        self.write_line(&record)?;
        self.next_seq += 1;
        if PayloadKind::of(payload_type).durable() {
            self.sync()?;
        }
        Ok(seq)
    }

    fn write_line(&mut self, record: &Record) -> Result<(), SessionError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record)
            .map_err(|e| SessionError::io("cannot encode a session record", e))?;
        self.line.push(b'\n');
        match &self.sink {
            // One write of the whole line: never interleaved, at worst cut at its end.
            Sink::File(file) => {
                let mut file = file;
                file.write_all(&self.line)
                    .map_err(|e| SessionError::io(self.path.display(), e))?;
            }
            Sink::Pg(writer, ..) => writer.line(&self.line[..self.line.len() - 1])?,
        }
        self.unsynced = true;
        Ok(())
    }

    /// The last line written, without its newline (what a watcher is shown of an event: see
    /// [`super::feed`]).
    pub fn last_line(&self) -> &[u8] {
        self.line.strip_suffix(b"\n").unwrap_or(&self.line)
    }

    /// Syncs what was written.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        if self.unsynced {
            match &self.sink {
                Sink::File(file) => file
                    .sync_data()
                    .map_err(|e| SessionError::io(self.path.display(), e))?,
                Sink::Pg(writer, ..) => writer.sync()?,
            }
            self.unsynced = false;
        }
        Ok(())
    }
}

impl Drop for SessionFile {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_line(seq: u64, time: &str) -> String {
        format!(
            r##"{{"kind":"event","session_id":"x","seq":{seq},"time":"{time}","room_id":"#main","payload_type":"message_posted","payload":{{"message":{{"id":"msg-{seq}","from":"@user","content":"hi {seq}","timestamp":"2026-01-01T00:00:00Z"}}}}}}"##
        )
    }

    #[test]
    fn a_bad_line_is_named_and_the_rest_kept() {
        let text = format!(
            "{}\n{{not json\n{}\n{}\n{}",
            event_line(1, "2026-01-01T00:00:00Z"),
            event_line(2, "2999-01-01T00:00:00Z"),
            event_line(3, "2026-01-01T00:00:01Z"),
            &event_line(4, "2026-01-01T00:00:02Z")[..40],
        );
        let log = read_from(text.as_bytes()).unwrap();
        assert_eq!(log.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(log.problems.len(), 2, "{:?}", log.problems);
        assert_eq!(log.problems[0].line, 2);
        assert!(log.problems[0].message.starts_with("not JSON"));
        assert_eq!(log.problems[1].line, 3);
        assert!(log.problems[1].message.contains("future"));
        let torn = log.torn.unwrap();
        assert_eq!((torn.line, torn.bytes), (5, 40));
        assert_eq!(torn.offset, log.whole_len);
    }

    #[test]
    fn a_problem_quotes_the_line_briefly_and_without_control_characters() {
        let text = format!(
            "{{\"kind\":\"event\",\"session_id\":\"x\",\"seq\":\"\\u001b[2J{}\",\"time\":\"t\",\"payload_type\":\"cleared\",\"payload\":{{}}}}\n",
            "y".repeat(100_000)
        );
        let log = read_from(text.as_bytes()).unwrap();
        assert_eq!(log.problems.len(), 1);
        let message = &log.problems[0].message;
        assert!(
            message.starts_with("not a `event` record: invalid type"),
            "{message}"
        );
        assert!(message.chars().count() <= 241, "{message}");
        assert!(!message.contains('\u{1b}'), "{message}");
    }

    /// A `seq` at the end of the range (or 0) is a bad line: resuming after it would
    /// overflow `last_seq + 1`, and `u64::MAX` is no cursor a watcher can go past.
    #[test]
    fn a_seq_out_of_range_is_a_bad_line() {
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            event_line(0, "2026-01-01T00:00:00Z"),
            event_line(1, "2026-01-01T00:00:00Z"),
            event_line(u64::MAX, "2026-01-01T00:00:00Z"),
            event_line(MAX_SEQ + 1, "2026-01-01T00:00:00Z"),
        );
        let log = read_from(text.as_bytes()).unwrap();
        assert_eq!(log.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1]);
        assert_eq!(
            log.problems.iter().map(|p| p.line).collect::<Vec<_>>(),
            [1, 3, 4]
        );
        assert!(
            log.problems[1].message.contains("out of range"),
            "{:?}",
            log.problems
        );
        // The largest allowed is kept, and the next seq after it does not overflow.
        let text = format!("{}\n", event_line(MAX_SEQ, "2026-01-01T00:00:00Z"));
        let log = read_from(text.as_bytes()).unwrap();
        assert_eq!(log.last_seq(), MAX_SEQ);
        assert_eq!(log.last_seq().checked_add(1), Some(MAX_SEQ + 1));
    }

    #[test]
    fn a_resumed_session_whose_last_line_has_the_largest_seq_is_not_continued_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::random();
        let path = dir.path().join(format!("{id}.jsonl"));
        drop(SessionFile::create(&path, id.clone(), &SessionMeta::default()).unwrap());
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&event_line(1, "2026-01-01T00:00:00Z"));
        text.push('\n');
        text.push_str(&event_line(u64::MAX, "2026-01-01T00:00:00Z"));
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        let (file, log) = SessionFile::resume(&path, id, |_| Ok(())).unwrap();
        assert_eq!(log.problems.len(), 1);
        assert_eq!(file.next_seq(), 2);
    }

    /// A link left under the name of a cut line's file is not written through: the resume
    /// fails and the file it points to is untouched.
    #[cfg(unix)]
    #[test]
    fn a_resume_does_not_write_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::random();
        let path = dir.path().join(format!("{id}.jsonl"));
        drop(SessionFile::create(&path, id.clone(), &SessionMeta::default()).unwrap());
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&event_line(1, "2026-01-01T00:00:00Z")[..30]);
        std::fs::write(&path, text).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, path.with_extension("jsonl.torn-0")).unwrap();
        assert!(SessionFile::resume(&path, id.clone(), |_| Ok(())).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // Nor is a session file that is a link opened.
        let linked = dir.path().join(format!("{}.jsonl", SessionId::random()));
        std::os::unix::fs::symlink(&path, &linked).unwrap();
        assert!(SessionFile::resume(&linked, id, |_| Ok(())).is_err());
    }

    #[test]
    fn an_overlong_line_is_skipped_without_being_held() {
        let long = format!(
            "{{\"kind\":\"event\",\"x\":\"{}\"}}",
            "a".repeat(MAX_LINE + 10)
        );
        let text = format!(
            "{}\n{long}\n{}\n",
            event_line(1, "2026-01-01T00:00:00Z"),
            event_line(2, "2026-01-01T00:00:00Z")
        );
        let log = read_from(text.as_bytes()).unwrap();
        assert_eq!(log.events.len(), 2);
        assert_eq!(log.problems.len(), 1);
        assert_eq!(log.problems[0].line, 2);
        assert!(
            log.problems[0].message.contains("MiB"),
            "{:?}",
            log.problems
        );
        assert!(log.torn.is_none());
    }
}
