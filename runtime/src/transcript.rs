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

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use index_schema::wire::Message;
use serde::{Deserialize, Serialize};

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

/// Writes a floor's transcript.
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    out: BufWriter<File>,
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
        Ok(Self { path, out })
    }

    /// Where it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a line (buffered; see [`Self::flush`]).
    pub fn write(&mut self, line: &Line) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")
    }

    /// Writes buffered lines out.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Reads a transcript.
pub fn read(path: &Path) -> Result<Vec<Line>, ReplayError> {
    let file = File::open(path).map_err(|e| ReplayError::Io(format!("{}: {e}", path.display())))?;
    let mut lines = Vec::new();
    for (index, text) in BufReader::new(file).lines().enumerate() {
        let text = text.map_err(|e| ReplayError::Io(format!("{}: {e}", path.display())))?;
        if text.trim().is_empty() {
            continue;
        }
        let line = serde_json::from_str(&text).map_err(|e| ReplayError::Invalid {
            line: index + 1,
            message: e.to_string(),
        })?;
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
    let mut expected: std::collections::VecDeque<Action> = std::collections::VecDeque::new();
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
}
