//! Transcripts: every floor writes JSON lines, and a floor can be replayed from them.
//!
//! One file per floor, `<dir>/<floor_id>.jsonl`. Each line is a [`Line`]: the time since the
//! floor opened (`t_ms`) and an [`Entry`] tagged by `kind`:
//!
//! - `floor` (first line): the floor, its roster, limits and deadlines;
//! - `roster`: the roster changed (between turns);
//! - `event` / `action`: every event fed to the controller and every action it returned, in
//!   order — the part [`replay`] checks;
//! - `message`: every stored message;
//! - `should_wake`: each agent's answer to each round, with its time;
//! - `call`: each respond call's outcome, with its time;
//! - `cancelled`: the user cancelled the running turn.
//!
//! Wake decisions, passes, guard trips and errors are in the actions (`poll_should_wake`,
//! `respond`, `record` notes, `turn_ended` reasons), timings in `should_wake` and `call`.
//!
//! A message's text is written once. The same text is in several lines (a user message is
//! its `message`, its `user_message` event and its `turn_started` action; an agent's answer
//! its `agent_responded` event and its `message`): past the first, a text of
//! [`SHARED_TEXT_MIN`] bytes or more is written as `"content_at": <line>` instead of
//! `"content"`, the 1-based number of the line that holds it. [`read`] puts the text back;
//! transcripts written before this have no `content_at` and read as they are.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use std::collections::{HashMap, VecDeque};

use index_schema::wire::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::controller::{
    Action, AgentSpec, CallId, Controller, Event, Limits, RoundId, TurnId, WakeAnswer,
};
use crate::floor::CallOutcome;
use crate::handle::Handle;

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Milliseconds since the floor opened.
    pub t_ms: f64,
    /// What happened.
    #[serde(flatten)]
    pub entry: Entry,
}

/// What a transcript line records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// The floor opened.
    Floor {
        /// Its id.
        floor_id: String,
        /// When, RFC 3339.
        opened_at: String,
        /// The agents, in blueprint order.
        roster: Vec<AgentSpec>,
        /// The guards.
        limits: Limits,
        /// The should-wake deadline.
        should_wake_deadline_ms: u64,
        /// The respond deadline.
        respond_deadline_ms: u64,
    },
    /// The roster changed.
    Roster {
        /// The agents, in blueprint order.
        roster: Vec<AgentSpec>,
    },
    /// An event fed to the controller.
    Event {
        /// The event.
        event: Event,
    },
    /// An action the controller returned.
    Action {
        /// The action.
        action: Action,
    },
    /// A stored message.
    Message {
        /// The message.
        message: Message,
    },
    /// One agent's should-wake answer.
    ShouldWake {
        /// The round.
        round: RoundId,
        /// The agent.
        agent: Handle,
        /// What it answered.
        answer: WakeAnswer,
        /// How long it took.
        elapsed_ms: f64,
    },
    /// A respond call finished.
    Call {
        /// The call.
        call: CallId,
        /// The agent.
        agent: Handle,
        /// How it ended.
        #[serde(flatten)]
        outcome: CallOutcome,
        /// How long it took.
        elapsed_ms: f64,
    },
    /// The running turn was cancelled.
    Cancelled {
        /// The turn.
        turn: TurnId,
    },
}

/// The shortest text written once and referred to after (shorter ones are repeated: a
/// reference would save little and make the transcript harder to read).
pub const SHARED_TEXT_MIN: usize = 256;

/// How many recent long texts a writer remembers to refer to.
const SHARED_TEXTS_KEPT: usize = 256;

/// The object of a transcript line (as JSON) that may hold a message text in `content`:
/// the event of an `event` line, the action of an `action` line, the message of a `message`
/// line.
fn text_holder(line: &mut Value) -> Option<&mut Map<String, Value>> {
    let key = match line.get("kind")?.as_str()? {
        "event" => "event",
        "action" => "action",
        "message" => "message",
        _ => return None,
    };
    line.get_mut(key)?.as_object_mut()
}

/// Writes a floor's transcript.
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// Lines written.
    lines: u64,
    /// Recent long texts: their SHA-256 and the line that holds them.
    texts: VecDeque<([u8; 32], u64)>,
}

impl TranscriptWriter {
    /// Creates `<dir>/<floor_id>.jsonl` (and `dir`). A transcript holds the whole
    /// conversation: the file is 0600 and a directory created for it 0700.
    pub fn create(dir: &Path, floor_id: &str) -> std::io::Result<Self> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let path = dir.join(format!("{floor_id}.jsonl"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let out = BufWriter::new(options.open(&path)?);
        Ok(Self {
            path,
            out,
            lines: 0,
            texts: VecDeque::new(),
        })
    }

    /// Where it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a line (buffered; see [`Self::flush`]).
    /// A long message text already in the transcript is written as a reference to its line.
    pub fn write(&mut self, line: &Line) -> std::io::Result<()> {
        let mut value = serde_json::to_value(line)?;
        self.lines += 1;
        if let Some(holder) = text_holder(&mut value)
            && let Some(Value::String(text)) = holder.get("content")
            && text.len() >= SHARED_TEXT_MIN
        {
            let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
            if let Some(&(_, at)) = self.texts.iter().find(|(d, _)| *d == digest) {
                holder.remove("content");
                holder.insert("content_at".to_owned(), at.into());
            } else {
                if self.texts.len() == SHARED_TEXTS_KEPT {
                    self.texts.pop_front();
                }
                self.texts.push_back((digest, self.lines));
            }
        }
        serde_json::to_writer(&mut self.out, &value)?;
        self.out.write_all(b"\n")
    }

    /// Writes buffered lines out.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Reads a transcript (with its texts written once put back where they are referred to).
pub fn read(path: &Path) -> Result<Vec<Line>, ReplayError> {
    let file = File::open(path).map_err(|e| ReplayError::Io(format!("{}: {e}", path.display())))?;
    let mut lines = Vec::new();
    // Long texts by the (1-based) line that holds them.
    let mut texts: HashMap<u64, String> = HashMap::new();
    for (index, text) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        let invalid = |message: String| ReplayError::Invalid {
            line: number,
            message,
        };
        let text = text.map_err(|e| ReplayError::Io(format!("{}: {e}", path.display())))?;
        if text.trim().is_empty() {
            continue;
        }
        let mut value: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if let Some(holder) = text_holder(&mut value) {
            if let Some(at) = holder.remove("content_at") {
                let text = at
                    .as_u64()
                    .and_then(|at| texts.get(&at))
                    .ok_or_else(|| invalid(format!("`content_at` {at} names no text")))?;
                holder.insert("content".to_owned(), Value::String(text.clone()));
            } else if let Some(Value::String(text)) = holder.get("content")
                && text.len() >= SHARED_TEXT_MIN
            {
                texts.insert(number as u64, text.clone());
            }
        }
        let line = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        lines.push(line);
    }
    Ok(lines)
}

/// What a replay checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayReport {
    /// Events fed to the controller.
    pub events: usize,
    /// Actions compared.
    pub actions: usize,
    /// Turns started.
    pub turns: usize,
}

/// Why a transcript does not replay.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// It could not be read.
    #[error("cannot read the transcript: {0}")]
    Io(String),
    /// A line is not a transcript line.
    #[error("line {line}: not a transcript line: {message}")]
    Invalid {
        /// 1-based.
        line: usize,
        /// Why.
        message: String,
    },
    /// The first line is not the floor.
    #[error("the transcript does not start with a `floor` line")]
    NoFloor,
    /// The roster or limits are refused.
    #[error("entry {entry}: {message}")]
    Setup {
        /// 1-based index among the transcript's lines.
        entry: usize,
        /// Why.
        message: String,
    },
    /// The controller decided differently from the recording.
    #[error("entry {entry}: the replay diverges: recorded {recorded}, replayed {replayed}")]
    Diverged {
        /// 1-based index among the transcript's lines.
        entry: usize,
        /// What the transcript says (JSON), or `nothing`.
        recorded: String,
        /// What the controller did (JSON), or `nothing`.
        replayed: String,
    },
}

/// Replays a floor: builds its controller from the `floor` line, feeds back every recorded
/// event (the user's messages and the agents' answers, as recorded) and checks that the
/// controller returns exactly the recorded actions, in order.
pub fn replay(lines: &[Line]) -> Result<ReplayReport, ReplayError> {
    let mut entries = lines
        .iter()
        .map(|l| &l.entry)
        .enumerate()
        .map(|(i, e)| (i + 1, e));
    let Some((_, Entry::Floor { roster, limits, .. })) = entries.next() else {
        return Err(ReplayError::NoFloor);
    };
    let mut controller =
        Controller::new(roster.clone(), limits.clone()).map_err(|e| ReplayError::Setup {
            entry: 1,
            message: e.to_string(),
        })?;
    let mut report = ReplayReport {
        events: 0,
        actions: 0,
        turns: 0,
    };
    let mut expected: VecDeque<Action> = VecDeque::new();
    let show = |a: Option<&Action>| {
        a.map_or_else(
            || "nothing".to_owned(),
            |a| serde_json::to_string(a).unwrap_or_default(),
        )
    };
    for (index, entry) in entries {
        match entry {
            Entry::Event { event } => {
                if let Some(left) = expected.front() {
                    return Err(ReplayError::Diverged {
                        entry: index,
                        recorded: "nothing".to_owned(),
                        replayed: show(Some(left)),
                    });
                }
                report.events += 1;
                expected.extend(controller.handle(event.clone()));
            }
            Entry::Action { action } => {
                let replayed = expected.pop_front();
                if replayed.as_ref() != Some(action) {
                    return Err(ReplayError::Diverged {
                        entry: index,
                        recorded: show(Some(action)),
                        replayed: show(replayed.as_ref()),
                    });
                }
                report.actions += 1;
                if matches!(action, Action::TurnStarted { .. }) {
                    report.turns += 1;
                }
            }
            Entry::Roster { roster } => {
                controller
                    .set_roster(roster.clone())
                    .map_err(|e| ReplayError::Setup {
                        entry: index,
                        message: e.to_string(),
                    })?;
            }
            Entry::Floor { .. } => {
                return Err(ReplayError::Setup {
                    entry: index,
                    message: "a second `floor` line".to_owned(),
                });
            }
            Entry::Message { .. }
            | Entry::ShouldWake { .. }
            | Entry::Call { .. }
            | Entry::Cancelled { .. } => {}
        }
    }
    if let Some(left) = expected.front() {
        return Err(ReplayError::Diverged {
            entry: lines.len() + 1,
            recorded: "nothing".to_owned(),
            replayed: show(Some(left)),
        });
    }
    Ok(report)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn transcripts_are_private_whatever_the_umask() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("logs").join("floors");
        let w = TranscriptWriter::create(&dir, "f-1").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(w.path()), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&root.path().join("logs")), 0o700);
    }

    fn lines_with(text: &str) -> Vec<Line> {
        let at = |t_ms: f64, entry| Line { t_ms, entry };
        vec![
            at(
                0.0,
                Entry::Message {
                    message: Message::new(
                        "msg-1",
                        "user",
                        text,
                        index_schema::wire::Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
                    ),
                },
            ),
            at(
                1.0,
                Entry::Event {
                    event: Event::UserMessage {
                        content: text.to_owned(),
                    },
                },
            ),
            at(
                2.0,
                Entry::Action {
                    action: Action::TurnStarted {
                        turn: TurnId(1),
                        content: text.to_owned(),
                    },
                },
            ),
        ]
    }

    #[test]
    fn a_long_text_is_written_once_and_read_back_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let long = "y".repeat(SHARED_TEXT_MIN * 4);
        let lines = lines_with(&long);
        let mut w = TranscriptWriter::create(dir.path(), "f").unwrap();
        for line in &lines {
            w.write(line).unwrap();
        }
        w.flush().unwrap();
        let raw = std::fs::read_to_string(w.path()).unwrap();
        assert_eq!(raw.matches(&long).count(), 1, "{raw}");
        assert_eq!(raw.matches("\"content_at\":1").count(), 2, "{raw}");
        assert_eq!(read(w.path()).unwrap(), lines);

        // Short texts stay inline; transcripts of before (every text inline) read as they are.
        for (name, text) in [("short", "hello"), ("old", long.as_str())] {
            let lines = lines_with(text);
            let path = dir.path().join(name);
            let mut out = String::new();
            for line in &lines {
                out.push_str(&serde_json::to_string(line).unwrap());
                out.push('\n');
            }
            std::fs::write(&path, out).unwrap();
            assert_eq!(read(&path).unwrap(), lines, "{name}");
        }

        // A reference to no text is refused.
        let bad = dir.path().join("bad");
        let line = raw.lines().nth(1).unwrap();
        std::fs::write(&bad, format!("{line}\n")).unwrap();
        assert!(matches!(
            read(&bad),
            Err(ReplayError::Invalid { line: 1, .. })
        ));
    }
}
