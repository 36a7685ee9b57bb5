//! The terminal side of `ofc run`.
//!
//! - **Line mode** (default): agents' tokens are streamed on stdout as they arrive, each agent
//!   in its own colour (none when `NO_COLOR` is set or stdout is not a terminal); who is
//!   polled, who passes or fails and why a turn ended go to stderr. Everything an agent sends
//!   is cleaned of control characters (escape sequences) before it reaches the terminal.
//!   Interactive commands are answered here and never posted: `/agents`, `/clear`, `/room`,
//!   `/quit`, `/help`; any other `/word` is answered "unknown command". Sub-rooms' messages
//!   are shown whole, marked with their room (`[#design] @a: …`).
//! - **`--json`**: every floor event as one JSON line on stdout (the floor's own event
//!   format, `type` tagged), plus `{"type":"ready",…}` first and `{"type":"exit","code":N}`
//!   last.
//!
//! Ctrl-C cancels the running turn; a second Ctrl-C (or one when no turn runs) ends the
//! session. End of input ends it too, after the running turn.
//!
//! The `/commands` ([`interpret`]) and the narration of floor events ([`narration`]) are shared
//! with the full-screen frontend (`--tui`, [`super::tui`]).

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;

use runtime::TurnEndReason;
use runtime::floor::{CallOutcome, Floor, FloorEvent};
use runtime::rooms::{RoomEvent, Rooms};
use tokio::io::AsyncBufReadExt;
use tokio::sync::broadcast;

use super::exit;

/// The most bytes of one input line that are posted.
const MAX_INPUT: usize = 64 * 1024;

const COLOURS: [&str; 6] = ["36", "33", "35", "32", "34", "31"];

pub struct Frontend {
    json: bool,
    colour: bool,
    handles: Vec<String>,
    /// Calls whose tokens were streamed (their final message is not printed again).
    streamed: Mutex<HashSet<String>>,
    /// The agent whose tokens are being printed, to start a new line when it changes.
    speaking: Mutex<Option<String>>,
    /// The session the run records into (named in `--json`'s `ready` event).
    session: Option<String>,
}

/// Text from an agent, safe for a terminal: control characters other than newline and tab
/// are dropped, so an agent cannot move the cursor, set the title or fake ofc's own lines.
pub fn clean(s: &str) -> String {
    s.chars()
        .filter(|c| {
            (!c.is_control() || *c == '\n' || *c == '\t') && !crate::output::is_bidi_control(*c)
        })
        .collect()
}

/// Why an agent was woken, in words: `mentioned with question`, `should wake: <reason>`.
fn describe_wake(reason: &runtime::WakeReason) -> String {
    let v = serde_json::to_value(reason).unwrap_or_default();
    let kind = v
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or("woken")
        .replace('_', " ");
    let detail = ["reason", "from", "by"]
        .iter()
        .find_map(|k| v.get(*k).and_then(|x| x.as_str()).map(str::to_owned));
    clean(&match detail {
        Some(d) => format!("{kind}: {d}"),
        None => kind,
    })
}

fn colour_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// The line that says the floor is ready.
pub(crate) fn ready_line(handles: &[String], transcript: &Path, ms: f64) -> String {
    format!(
        "floor ready in {ms:.0} ms: {} (transcript {})",
        handles.join(", "),
        transcript.display()
    )
}

/// The exit code for how a turn ended; `responses`: the agents' messages in it.
///
/// A turn that went quiet after agents responded ("no one woke" for the next hop) is an
/// answered turn; a turn in which no agent responded at all — none woke, or every one that
/// was asked passed — is `NO_ONE_WOKE`.
pub fn code_of(reason: &TurnEndReason, cancelled: bool, responses: usize) -> u8 {
    if cancelled {
        return exit::CANCELLED;
    }
    match reason {
        TurnEndReason::ReturnedToUser { .. } | TurnEndReason::WaitingForUser { .. } => {
            exit::ANSWERED
        }
        TurnEndReason::NoOneWoke if responses > 0 => exit::ANSWERED,
        TurnEndReason::NoOneWoke => exit::NO_ONE_WOKE,
        TurnEndReason::AgentError { .. } => exit::AGENT_ERROR,
        _ => exit::GUARD,
    }
}

impl Frontend {
    pub fn new(json: bool, handles: &[String]) -> Self {
        Self {
            json,
            colour: !json && colour_wanted(),
            handles: handles.to_vec(),
            streamed: Mutex::new(HashSet::new()),
            speaking: Mutex::new(None),
            session: None,
        }
    }

    /// Names the run's session in the `ready` event.
    pub fn session(mut self, id: &str) -> Self {
        self.session = Some(id.to_owned());
        self
    }

    fn paint(&self, who: &str, text: &str) -> String {
        if !self.colour {
            return text.to_owned();
        }
        let i = self.handles.iter().position(|h| h == who).unwrap_or(0);
        format!("\x1b[{}m{text}\x1b[0m", COLOURS[i % COLOURS.len()])
    }

    fn dim(&self, text: &str) -> String {
        if self.colour {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn json_line(&self, value: &serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }

    fn info(&self, line: &str) {
        self.end_speech();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", self.dim(line));
    }

    fn end_speech(&self) {
        if let Ok(mut s) = self.speaking.lock()
            && s.take().is_some()
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
        }
    }

    fn speak(&self, who: &str, text: &str) {
        let mut out = std::io::stdout().lock();
        if let Ok(mut s) = self.speaking.lock()
            && s.as_deref() != Some(who)
        {
            if s.is_some() {
                let _ = writeln!(out);
            }
            let _ = write!(out, "{} ", self.paint(who, &format!("{who}:")));
            *s = Some(who.to_owned());
        }
        let _ = write!(out, "{}", clean(text));
        let _ = out.flush();
    }

    pub fn ready(&self, run: &str, handles: &[String], transcript: &Path, ms: f64) {
        if self.json {
            self.json_line(&serde_json::json!({
                "type": "ready",
                "run": run,
                "session": self.session,
                "agents": handles,
                "transcript": transcript.display().to_string(),
                "elapsed_ms": ms,
            }));
        } else {
            self.info(&ready_line(handles, transcript, ms));
        }
    }

    pub fn closed(&self, code: u8) {
        if self.json {
            self.json_line(&serde_json::json!({"type": "exit", "code": code}));
        }
    }

    /// Shows one floor event.
    fn show(&self, event: &FloorEvent) {
        if self.json {
            if let Ok(v) = serde_json::to_value(event) {
                self.json_line(&v);
            }
            return;
        }
        match event {
            FloorEvent::Delta {
                call,
                agent,
                content,
            } => {
                if let Ok(mut s) = self.streamed.lock() {
                    s.insert(format!("{call:?}"));
                }
                self.speak(&agent.to_string(), content);
            }
            FloorEvent::CallFinished {
                call,
                outcome: CallOutcome::Responded { .. },
                ..
            } => {
                let streamed = self
                    .streamed
                    .lock()
                    .map(|mut s| s.remove(&format!("{call:?}")))
                    .unwrap_or(false);
                if streamed {
                    self.end_speech();
                }
            }
            // Agents that did not stream: their message is shown whole.
            FloorEvent::Message { message }
                if message.from != "@user"
                    && self
                        .speaking
                        .lock()
                        .map(|s| s.as_deref() != Some(message.from.as_str()))
                        .unwrap_or(true) =>
            {
                self.speak(&message.from, &message.content);
                self.end_speech();
            }
            other => {
                if let Some(line) = narration(other) {
                    self.info(&line);
                }
            }
        }
    }

    /// `ofc run MESSAGE`: one turn, then the exit code of how it ended.
    pub async fn one_turn(&self, floor: &Floor, message: &str) -> u8 {
        let mut events = floor.subscribe();
        let mut interrupts = Interrupts::new();
        let post = floor.post_and_wait(message.to_owned());
        tokio::pin!(post);
        let mut cancelled_by_user = false;
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Ok(ev) => self.show(&ev),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return exit::FAILURE,
                },
                summary = &mut post => {
                    // Show what is left of the turn's events before the verdict.
                    while let Ok(ev) = events.try_recv() {
                        self.show(&ev);
                    }
                    self.end_speech();
                    return match summary {
                        // The summary's messages are the user's, then the agents'.
                        Ok(s) => code_of(
                            &s.reason,
                            s.cancelled || cancelled_by_user,
                            s.messages.len().saturating_sub(1),
                        ),
                        Err(e) => {
                            self.info(&format!("error: {e}"));
                            exit::FAILURE
                        }
                    };
                }
                () = interrupts.next() => {
                    if cancelled_by_user {
                        return exit::CANCELLED;
                    }
                    cancelled_by_user = true;
                    self.info("· cancelling the turn (Ctrl-C again to quit)");
                    let _ = floor.cancel_turn().await;
                }
            }
        }
    }

    /// Shows one event of the sub-rooms.
    fn show_room(&self, event: &RoomEvent) {
        if self.json {
            self.json_line(&room_json(event));
            return;
        }
        match event {
            RoomEvent::Floor {
                room,
                event: FloorEvent::Message { message },
            } => {
                self.end_speech();
                let mut out = std::io::stdout().lock();
                let who = self.paint(&message.from, &format!("{}:", message.from));
                let _ = writeln!(out, "[{}] {who} {}", clean(room), clean(&message.content));
                let _ = out.flush();
            }
            other => {
                if let Some(line) = room_narration(other) {
                    self.info(&line);
                }
            }
        }
    }

    /// The interactive session; the exit code is 0 unless the floor failed.
    pub async fn interactive(&self, floor: &Floor, rooms: &Rooms) -> u8 {
        let mut events = floor.subscribe();
        let mut room_events = rooms.subscribe();
        let mut interrupts = Interrupts::new();
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut running = false;
        let mut input_open = true;
        let mut last_interrupt: Option<std::time::Instant> = None;
        if !self.json {
            self.info("type a message, /help for commands, Ctrl-C to cancel a turn");
        }
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Ok(ev) => {
                        match &ev {
                            FloorEvent::TurnStarted { .. } => running = true,
                            FloorEvent::TurnEnded { .. } => {
                                running = false;
                                last_interrupt = None;
                            }
                            _ => {}
                        }
                        self.show(&ev);
                        if !running && !input_open {
                            return exit::ANSWERED;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return exit::FAILURE,
                },
                ev = room_events.recv() => {
                    if let Ok(ev) = ev {
                        self.show_room(&ev);
                    }
                }
                line = lines.next_line(), if input_open => match line {
                    Ok(Some(line)) => {
                        if let Some(done) = self.command(floor, rooms, &line).await {
                            return done;
                        }
                    }
                    Ok(None) | Err(_) => {
                        input_open = false;
                        if !running {
                            return exit::ANSWERED;
                        }
                    }
                },
                () = interrupts.next() => {
                    let again = last_interrupt.is_some_and(|t| t.elapsed().as_secs() < 3);
                    if !running || again {
                        self.info("· bye");
                        return exit::ANSWERED;
                    }
                    last_interrupt = Some(std::time::Instant::now());
                    self.info("· cancelling the turn (Ctrl-C again to quit)");
                    let _ = floor.cancel_turn().await;
                }
            }
        }
    }

    /// Handles one input line; `Some(code)` ends the session.
    async fn command(&self, floor: &Floor, rooms: &Rooms, line: &str) -> Option<u8> {
        match interpret(floor, rooms, line).await {
            Input::Nothing => {}
            Input::Quit => return Some(exit::ANSWERED),
            Input::Say(lines) => {
                for line in lines {
                    self.info(&line);
                }
            }
            // Posted from a task: the post answers only after the should-wake round, and the
            // session keeps showing events and reading Ctrl-C meanwhile.
            Input::Post(text) => {
                let floor = floor.clone();
                tokio::spawn(async move {
                    if let Err(e) = floor.post(text).await {
                        let mut err = std::io::stderr().lock();
                        let _ = writeln!(err, "· not sent: {e}");
                    }
                });
            }
        }
        None
    }
}

/// The narration line of a floor event, shared by the line mode and the TUI: who is polled,
/// who responds, passes or fails, how a turn ended… `None` for agents' words (deltas and
/// messages) and for events that are not narrated.
pub(crate) fn narration(event: &FloorEvent) -> Option<String> {
    Some(match event {
        FloorEvent::Polling { candidates, .. } => {
            let names: Vec<String> = candidates.iter().map(ToString::to_string).collect();
            format!("· asking {} whether to respond", names.join(", "))
        }
        FloorEvent::Responding {
            agent, wake_reason, ..
        } => format!("· {agent} responds ({})", describe_wake(wake_reason)),
        FloorEvent::CallFinished {
            agent,
            outcome: CallOutcome::Passed { reason },
            ..
        } => format!(
            "· {agent} passed{}",
            reason
                .as_deref()
                .map(|r| format!(": {}", clean(r)))
                .unwrap_or_default()
        ),
        FloorEvent::CallFinished {
            agent,
            outcome: CallOutcome::Failed { error },
            ..
        } => format!("· {agent} failed: {}", clean(error)),
        FloorEvent::TurnEnded {
            reason,
            hops,
            cancelled,
            elapsed_ms,
            ..
        } => format!(
            "— turn ended{}: {} ({hops} {}, {elapsed_ms:.0} ms)",
            if *cancelled { " (cancelled)" } else { "" },
            clean(&reason.to_string()),
            if *hops == 1 { "hop" } else { "hops" }
        ),
        FloorEvent::Queued { position, .. } => {
            format!("· queued behind the running turn (#{position})")
        }
        FloorEvent::Cleared { forgotten } => {
            format!("· conversation cleared ({forgotten} messages)")
        }
        FloorEvent::Note { note } => format!(
            "· {}",
            clean(&serde_json::to_string(note).unwrap_or_default())
        ),
        _ => return None,
    })
}

/// A sub-room's event as one `--json` line: its floor events with the room added, and
/// `room_opened` / `room_closed`.
fn room_json(event: &RoomEvent) -> serde_json::Value {
    match event {
        RoomEvent::Opened { room, members } => serde_json::json!({
            "type": "room_opened",
            "room": room,
            "members": members.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
        RoomEvent::Closed { room, summary } => serde_json::json!({
            "type": "room_closed",
            "room": room,
            "summary": summary,
        }),
        RoomEvent::Floor { room, event } => {
            let mut v = serde_json::to_value(event).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("room".to_owned(), serde_json::json!(room));
            }
            v
        }
    }
}

/// The narration line of a sub-room's event (its messages aside), shared with the TUI.
pub(crate) fn room_narration(event: &RoomEvent) -> Option<String> {
    Some(match event {
        RoomEvent::Opened { room, members } => {
            let names: Vec<String> = members.iter().map(ToString::to_string).collect();
            format!("· room {room} opened: {}", names.join(", "))
        }
        RoomEvent::Closed { room, .. } => format!("· room {room} closed"),
        RoomEvent::Floor {
            room,
            event: FloorEvent::Message { message },
        } => format!("[{room}] {}: {}", message.from, clean(&message.content)),
        RoomEvent::Floor { room, event } => format!("[{room}] {}", narration(event)?),
    })
}

/// What an input line asks for, shared by the line mode and the TUI.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Input {
    /// Nothing (a blank line).
    Nothing,
    /// End the session (`/quit`, `/exit`).
    Quit,
    /// Lines to show; nothing is posted (commands, and refused input).
    Say(Vec<String>),
    /// Post this message to the floor.
    Post(String),
}

/// The interactive commands, for `/help`.
pub(crate) const HELP: [&str; 5] = [
    "  /agents  list the agents",
    "  /clear   forget the conversation",
    "  /room    sub-rooms: #name @a @b [prompt] | #name text | close #name | (list)",
    "  /quit    end the session",
    "  Ctrl-C   cancel the running turn (twice: quit)",
];

/// Interprets one input line: commands are answered here and never posted; anything else
/// (up to [`MAX_INPUT`] bytes) is to be posted.
pub(crate) async fn interpret(floor: &Floor, rooms: &Rooms, line: &str) -> Input {
    let text = line.trim();
    if text.is_empty() {
        return Input::Nothing;
    }
    if text.len() > MAX_INPUT {
        return Input::Say(vec![format!(
            "· not sent: a message may have at most {MAX_INPUT} bytes"
        )]);
    }
    let Some(cmd) = text.strip_prefix('/') else {
        return Input::Post(text.to_owned());
    };
    let word = cmd.split_whitespace().next().unwrap_or("");
    Input::Say(match word {
        "quit" | "exit" => return Input::Quit,
        "agents" => match floor.snapshot().await {
            Ok(s) => s
                .agents
                .into_iter()
                .map(|(h, act, endpoint, _)| {
                    format!(
                        "  {h}  {act:?}{}",
                        endpoint
                            .map(|e| format!("  {}", clean(&e)))
                            .unwrap_or_default()
                    )
                })
                .collect(),
            Err(e) => vec![format!("· {e}")],
        },
        "clear" => match floor.clear().await {
            Ok(Some(_)) => Vec::new(),
            Ok(None) => vec!["· a turn is running; /clear when it has ended".to_owned()],
            Err(e) => vec![format!("· {e}")],
        },
        "room" | "rooms" => room_command(rooms, cmd[word.len()..].trim()).await,
        "help" => HELP.iter().map(|l| (*l).to_owned()).collect(),
        other => vec![format!(
            "· unknown command /{} (try /help); nothing was sent",
            clean(other)
        )],
    })
}

/// `/room …`: list, open, say in, or close a sub-room.
async fn room_command(rooms: &Rooms, args: &str) -> Vec<String> {
    let mut words = args.split_whitespace();
    let Some(first) = words.next() else {
        let open = rooms.list();
        if open.is_empty() {
            return vec!["· no sub-room is open (/room #name @a @b [prompt] opens one)".to_owned()];
        }
        return open
            .into_iter()
            .map(|(name, members)| {
                let names: Vec<String> = members.iter().map(ToString::to_string).collect();
                format!("  {name}  {}", names.join(", "))
            })
            .collect();
    };
    let failed = |e: runtime::rooms::RoomError| vec![format!("· {}", clean(&e.to_string()))];
    if first == "close" {
        let Some(name) = words.next() else {
            return vec!["· /room close #name: which room?".to_owned()];
        };
        return match rooms.close(name).await {
            Ok(_) => Vec::new(),
            Err(e) => failed(e),
        };
    }
    // Members: the words right after the name that are handles (`@a`); the rest is the
    // prompt (which may start with a question to one of them, `@a? …`).
    let rest: Vec<&str> = words.collect();
    let is_handle = |w: &str| w.starts_with('@') && runtime::Handle::new(w).is_ok();
    let n = rest.iter().take_while(|w| is_handle(w)).count();
    let members: Vec<String> = rest[..n].iter().map(|w| (*w).to_owned()).collect();
    let text = rest[n..].join(" ");
    let prompt = (!text.is_empty()).then_some(text);
    if members.is_empty() && rooms.floor(first).is_some() {
        let Some(text) = prompt else {
            return vec![format!("· /room {}: say what?", clean(first))];
        };
        return match rooms.post(first, text).await {
            Ok(()) => Vec::new(),
            Err(e) => failed(e),
        };
    }
    match rooms.open(first, &members, prompt).await {
        Ok(()) => Vec::new(),
        Err(e) => failed(e),
    }
}

/// Ctrl-C (SIGINT) as a stream. Once registered, SIGINT no longer ends the process.
struct Interrupts {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                signal: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Self {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        match self.signal.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::Handle;

    #[test]
    fn agent_text_cannot_drive_the_terminal() {
        let hostile = "ok\x1b]0;owned\x07 \x1b[2J\rerror: fake\u{9b}31m\nnext\tline";
        let shown = clean(hostile);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t')
        );
        assert_eq!(shown, "ok]0;owned [2Jerror: fake31m\nnext\tline");
    }

    #[test]
    fn exit_codes_follow_the_turn() {
        let a = Handle::new("@a").unwrap();
        let answered = TurnEndReason::ReturnedToUser { from: a.clone() };
        assert_eq!(code_of(&answered, false, 1), exit::ANSWERED);
        assert_eq!(code_of(&answered, true, 1), exit::CANCELLED);
        assert_eq!(
            code_of(&TurnEndReason::NoOneWoke, false, 0),
            exit::NO_ONE_WOKE
        );
        assert_eq!(code_of(&TurnEndReason::NoOneWoke, false, 2), exit::ANSWERED);
        assert_eq!(
            code_of(&TurnEndReason::HopLimit { limit: 16 }, false, 16),
            exit::GUARD
        );
        let failed = TurnEndReason::AgentError {
            agent: a,
            error: "boom".into(),
        };
        assert_eq!(code_of(&failed, false, 1), exit::AGENT_ERROR);
    }
}
