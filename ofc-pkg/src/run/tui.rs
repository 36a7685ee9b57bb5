//! `ofc run --tui`: the full-screen terminal frontend.
//!
//! Three panes: the scrollback (agents' words, streamed as they arrive, each agent in its own
//! colour, and the same narration lines as the line mode), the agent list (handle, activation,
//! and a `*` on whoever is responding) and an input line. Enter posts the line or runs a
//! command (the line mode's: [`super::frontend::interpret`]); PageUp/PageDown and Up/Down
//! scroll; Left/Right/Home/End/Backspace/Delete edit the line; Ctrl-C cancels the running turn, and a second Ctrl-C within 3 s (or one when no turn
//! runs) ends the session, as does `/quit` or Ctrl-D on an empty line.
//!
//! The terminal is in raw mode on the alternate screen while the session runs (Ctrl-C arrives
//! as a key, not as SIGINT); it is restored on every way out: return, error and panic (a panic
//! hook restores it before the panic message is printed). `NO_COLOR` turns colours and other
//! text attributes off. Agents' text goes through [`clean`] like in the line mode.
//!
//! [`View`] is the pure part (floor events in, scrollback entries and agent rows out) and is
//! what the unit tests drive.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::Frame;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use runtime::CallId;
use runtime::floor::{CallOutcome, Floor, FloorEvent};
use tokio::sync::{broadcast, mpsc};
use unicode_width::UnicodeWidthChar;

use super::exit;
use super::frontend::{Input, clean, interpret, narration, room_narration};

/// The most scrollback entries kept; older ones are dropped (the transcript keeps them).
const MAX_ENTRIES: usize = 5_000;

/// How long after a Ctrl-C a second one ends the session.
const AGAIN: Duration = Duration::from_secs(3);

/// The agents' colours, in blueprint order (the line mode's, in the same order).
const COLOURS: [Color; 6] = [
    Color::Cyan,
    Color::Yellow,
    Color::Magenta,
    Color::Green,
    Color::Blue,
    Color::Red,
];

/// One item of the scrollback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A narration line (who is polled, who responds, how a turn ended, command output).
    Info(String),
    /// Words of `who` (an agent or `@user`), already cleaned.
    Said { who: String, text: String },
}

/// One row of the agent list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentRow {
    pub handle: String,
    pub activation: String,
    pub responding: bool,
}

/// What the screen shows, updated from floor events. No terminal in here.
#[derive(Debug)]
pub(crate) struct View {
    pub entries: Vec<Entry>,
    pub agents: Vec<AgentRow>,
    /// A turn is running.
    pub running: bool,
    /// Streamed calls still open: the entry their deltas go to.
    open: HashMap<CallId, usize>,
    /// Responses whose words were streamed and whose call finished before their message
    /// arrived, by message id: the entry the stored message replaces (so a streamed answer is
    /// not shown twice).
    streamed: HashMap<String, usize>,
}

impl View {
    pub fn new(agents: Vec<AgentRow>) -> Self {
        Self {
            entries: Vec::new(),
            agents,
            running: false,
            open: HashMap::new(),
            streamed: HashMap::new(),
        }
    }

    /// Adds a narration line (cleaned: it may quote an agent).
    pub fn info(&mut self, line: &str) {
        self.push(Entry::Info(clean(line)));
    }

    fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        if self.entries.len() > MAX_ENTRIES {
            let drop = self.entries.len() - MAX_ENTRIES;
            self.entries.drain(..drop);
            shift(&mut self.open, drop);
            shift(&mut self.streamed, drop);
        }
    }

    fn set_responding(&mut self, agent: &str, responding: bool) {
        for row in self.agents.iter_mut().filter(|r| r.handle == agent) {
            row.responding = responding;
        }
    }

    /// Takes one floor event into the view.
    pub fn apply(&mut self, event: &FloorEvent) {
        match event {
            FloorEvent::TurnStarted { .. } => self.running = true,
            FloorEvent::TurnEnded { .. } => {
                self.running = false;
                self.open.clear();
                self.agents.iter_mut().for_each(|r| r.responding = false);
            }
            FloorEvent::Responding { agent, .. } => self.set_responding(&agent.to_string(), true),
            FloorEvent::Delta {
                call,
                agent,
                content,
            } => {
                let piece = clean(content);
                match self.open.get(call) {
                    Some(&i) => {
                        if let Some(Entry::Said { text, .. }) = self.entries.get_mut(i) {
                            text.push_str(&piece);
                        }
                    }
                    None => {
                        self.push(Entry::Said {
                            who: agent.to_string(),
                            text: piece,
                        });
                        self.open.insert(*call, self.entries.len() - 1);
                    }
                }
                return;
            }
            FloorEvent::CallFinished {
                call,
                agent,
                outcome,
                ..
            } => {
                self.set_responding(&agent.to_string(), false);
                if let (Some(i), CallOutcome::Responded { message_id }) =
                    (self.open.remove(call), outcome)
                {
                    self.streamed.insert(message_id.clone(), i);
                }
            }
            FloorEvent::Message { message } => {
                let said = Entry::Said {
                    who: clean(&message.from),
                    text: clean(&message.content),
                };
                // The stored message is the authority on what was said: it takes the place
                // of its streamed words. The floor stores it before the call's
                // `CallFinished`, so the call is usually still open.
                let speaker_open = self
                    .open
                    .iter()
                    .filter(|(_, i)| {
                        matches!(self.entries.get(**i), Some(Entry::Said { who, .. }) if *who == message.from)
                    })
                    .map(|(call, i)| (*call, *i))
                    .min_by_key(|(_, i)| *i);
                let place = match self.streamed.remove(&message.id) {
                    Some(i) => Some(i),
                    None => speaker_open.map(|(call, i)| {
                        self.open.remove(&call);
                        i
                    }),
                };
                match place {
                    Some(i) if i < self.entries.len() => self.entries[i] = said,
                    _ => self.push(said),
                }
                return;
            }
            _ => {}
        }
        if let Some(line) = narration(event) {
            self.info(&line);
        }
    }

    /// The style of `who`'s name: its agent's colour, bold for the user; plain without colour.
    fn style_of(&self, who: &str, colour: bool) -> Style {
        if !colour {
            return Style::default();
        }
        match self.agents.iter().position(|r| r.handle == who) {
            Some(i) => Style::default().fg(COLOURS[i % COLOURS.len()]),
            None => Style::default().add_modifier(Modifier::BOLD),
        }
    }

    /// The scrollback as screen rows `width` columns wide.
    pub fn rows(&self, width: u16, colour: bool) -> Vec<Line<'static>> {
        let width = usize::from(width.max(1));
        let dim = if colour {
            Style::default().add_modifier(Modifier::DIM)
        } else {
            Style::default()
        };
        let mut rows = Vec::new();
        for entry in &self.entries {
            match entry {
                Entry::Info(text) => {
                    for line in text.split('\n') {
                        wrap(&[(line, dim)], width, &mut rows);
                    }
                }
                Entry::Said { who, text } => {
                    let name = format!("{who}: ");
                    for (n, line) in text.split('\n').enumerate() {
                        if n == 0 {
                            wrap(
                                &[
                                    (&name, self.style_of(who, colour)),
                                    (line, Style::default()),
                                ],
                                width,
                                &mut rows,
                            );
                        } else {
                            wrap(&[(line, Style::default())], width, &mut rows);
                        }
                    }
                }
            }
        }
        rows
    }
}

/// Forgets the entries before `drop` and moves the others' indices down.
fn shift<K>(map: &mut HashMap<K, usize>, drop: usize) {
    map.retain(|_, i| *i >= drop);
    map.values_mut().for_each(|i| *i -= drop);
}

/// Appends one logical line, made of styled pieces, as rows at most `width` columns wide
/// (broken at any character; tabs become spaces).
fn wrap(pieces: &[(&str, Style)], width: usize, rows: &mut Vec<Line<'static>>) {
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for (text, style) in pieces {
        let mut run = String::new();
        for c in text.chars() {
            let (c, w) = match c {
                '\t' => (' ', 1),
                c => (c, c.width().unwrap_or(0)),
            };
            if used + w > width && used > 0 {
                if !run.is_empty() {
                    row.push(Span::styled(std::mem::take(&mut run), *style));
                }
                rows.push(Line::from(std::mem::take(&mut row)));
                used = 0;
            }
            run.push(c);
            used += w;
        }
        if !run.is_empty() {
            row.push(Span::styled(run, *style));
        }
    }
    rows.push(Line::from(row));
}

/// The text of a row (for tests and width checks).
#[cfg(test)]
fn text_of(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// Screen state that is not the floor's: the input line and the scroll position.
#[derive(Debug)]
struct Screen {
    colour: bool,
    input: InputLine,
    /// Rows scrolled up from the bottom (0: following the conversation).
    scroll: usize,
    /// Rows the scrollback had at the last draw (to keep a scrolled view still).
    last_rows: usize,
    /// Rows the scrollback pane shows (for PageUp/PageDown).
    page: usize,
}

impl Screen {
    fn draw(&mut self, frame: &mut Frame<'_>, view: &View) {
        let [main, input_area] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(frame.area());
        let widest = view
            .agents
            .iter()
            .map(|r| r.handle.chars().count() + r.activation.chars().count() + 3)
            .max()
            .unwrap_or(10);
        let side_width = u16::try_from(widest + 2)
            .unwrap_or(u16::MAX)
            .min(main.width / 3);
        let [scroll_area, side] =
            Layout::horizontal([Constraint::Min(10), Constraint::Length(side_width)]).areas(main);

        // The scrollback: the rows that fit, `scroll` rows up from the bottom.
        let inner_width = scroll_area.width.saturating_sub(2);
        let height = usize::from(scroll_area.height.saturating_sub(2));
        let rows = view.rows(inner_width, self.colour);
        if self.scroll > 0 {
            self.scroll += rows.len().saturating_sub(self.last_rows);
        }
        self.last_rows = rows.len();
        self.page = height.max(1);
        self.scroll = self.scroll.min(rows.len().saturating_sub(height));
        let end = rows.len() - self.scroll;
        let start = end.saturating_sub(height);
        let title = if self.scroll > 0 {
            format!(" floor (scrolled up {} rows; PageDown) ", self.scroll)
        } else {
            " floor ".to_owned()
        };
        frame.render_widget(
            Paragraph::new(rows[start..end].to_vec()).block(Block::bordered().title(title)),
            scroll_area,
        );

        // The agents.
        let agents: Vec<Line<'static>> = view
            .agents
            .iter()
            .map(|r| {
                Line::from(vec![
                    Span::raw(if r.responding { "* " } else { "  " }),
                    Span::styled(r.handle.clone(), view.style_of(&r.handle, self.colour)),
                    Span::raw(format!(" {}", r.activation)),
                ])
            })
            .collect();
        frame.render_widget(
            Paragraph::new(agents).block(Block::bordered().title(" agents ")),
            side,
        );

        // The input line, scrolled sideways so that the cursor stays in view.
        let room = usize::from(input_area.width.saturating_sub(3));
        let (shown, cursor_x) = self.input.window(room);
        let title = if view.running {
            " message (a turn is running: Ctrl-C cancels it) "
        } else {
            " message (Enter sends; /help; Ctrl-C quits) "
        };
        frame.render_widget(
            Paragraph::new(shown).block(Block::bordered().title(title)),
            input_area,
        );
        let x = input_area.x + 1 + u16::try_from(cursor_x).unwrap_or(0);
        frame.set_cursor_position((x, input_area.y + 1));
    }
}

/// Whether the terminal is in raw mode on the alternate screen (set by [`TerminalGuard`]).
static ACTIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Leaves raw mode and the alternate screen, once: a second "leave alternate screen" would
/// move the cursor back to where it was when the session started (after a panic, the panic
/// hook restores first and the guard's drop follows).
fn restore_terminal() {
    if !ACTIVE.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// The terminal in raw mode on the alternate screen, restored when dropped.
#[derive(Debug)]
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> Result<Self> {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_terminal();
                previous(info);
            }));
        });
        crossterm::terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        ACTIVE.store(true, std::sync::atomic::Ordering::SeqCst);
        let guard = Self;
        crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen)
            .context("cannot switch to the alternate screen")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// What a key asks the session to do.
enum Key {
    Nothing,
    Submit(String),
    Interrupt,
    Quit,
}

impl Screen {
    fn key(&mut self, key: KeyEvent) -> Key {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => return Key::Interrupt,
            KeyCode::Char('d') if ctrl && self.input.chars.is_empty() => return Key::Quit,
            KeyCode::Enter => return Key::Submit(self.input.take()),
            KeyCode::Up => self.scroll += 1,
            KeyCode::Down => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageUp => self.scroll += self.page,
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(self.page),
            _ => self.input.edit(key),
        }
        Key::Nothing
    }
}

/// The line being typed, with a cursor (an index in `chars`).
#[derive(Debug, Default)]
struct InputLine {
    chars: Vec<char>,
    cursor: usize,
}

impl InputLine {
    /// Applies an editing key: characters, Backspace, Delete, Left, Right, Home, End, Esc and
    /// Ctrl-U (clear), Ctrl-A and Ctrl-E (start, end). Other keys do nothing.
    fn edit(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('u') if ctrl => *self = Self::default(),
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.chars.len(),
            KeyCode::Char(c) if !ctrl => {
                self.chars.insert(self.cursor, c);
                self.cursor += 1;
            }
            KeyCode::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.chars.remove(self.cursor);
            }
            KeyCode::Delete if self.cursor < self.chars.len() => {
                self.chars.remove(self.cursor);
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.chars.len()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.chars.len(),
            KeyCode::Esc => *self = Self::default(),
            _ => {}
        }
    }

    /// The line, leaving it empty.
    fn take(&mut self) -> String {
        let line = self.chars.iter().collect();
        *self = Self::default();
        line
    }

    /// What fits in `room` columns with the cursor in view, and the cursor's column in it.
    fn window(&self, room: usize) -> (String, usize) {
        let width = |c: &char| c.width().unwrap_or(0);
        // The first character shown: as far left as keeps the cursor (and one column for it)
        // within `room`.
        let mut start = self.cursor;
        let mut used = 1;
        while start > 0 && used + width(&self.chars[start - 1]) <= room.max(1) {
            start -= 1;
            used += width(&self.chars[start]);
        }
        let cursor_x: usize = self.chars[start..self.cursor].iter().map(width).sum();
        let mut shown = String::new();
        let mut used = 0;
        for c in &self.chars[start..] {
            if used + width(c) > room {
                break;
            }
            used += width(c);
            shown.push(*c);
        }
        (shown, cursor_x)
    }
}

/// Whether colours are wanted (`NO_COLOR` unset or empty).
fn colour_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The interactive session on the full screen; the exit code is 0 unless the floor failed.
/// `greeting` is shown first (the floor-ready line).
pub(crate) async fn session(
    floor: &Floor,
    rooms: &runtime::rooms::Rooms,
    handles: &[String],
    greeting: &str,
) -> Result<u8> {
    let mut events = floor.subscribe();
    let mut room_events = rooms.subscribe();
    let agents = match floor.snapshot().await {
        Ok(s) => s
            .agents
            .into_iter()
            .map(|(h, act, _, _)| AgentRow {
                handle: h.to_string(),
                activation: format!("{act:?}").to_lowercase(),
                responding: false,
            })
            .collect(),
        Err(_) => handles
            .iter()
            .map(|h| AgentRow {
                handle: h.clone(),
                activation: "?".to_owned(),
                responding: false,
            })
            .collect(),
    };
    let mut view = View::new(agents);
    view.info(greeting);
    view.info(
        "type a message, /help for commands; Ctrl-C cancels a turn (twice: quit); \
         PageUp/PageDown scroll",
    );

    let guard = TerminalGuard::enter()?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(std::io::stdout())).context("cannot draw")?;
    let mut screen = Screen {
        colour: colour_wanted(),
        input: InputLine::default(),
        scroll: 0,
        last_rows: 0,
        page: 1,
    };
    let mut keys = EventStream::new();
    let (notes_tx, mut notes) = mpsc::unbounded_channel::<String>();
    let mut last_interrupt: Option<Instant> = None;
    let code = loop {
        terminal
            .draw(|f| screen.draw(f, &view))
            .context("cannot draw")?;
        tokio::select! {
            ev = events.recv() => match ev {
                Ok(ev) => {
                    let mut next = Some(ev);
                    // Everything already waiting is taken before the next draw.
                    while let Some(ev) = next {
                        if matches!(ev, FloorEvent::TurnEnded { .. }) {
                            last_interrupt = None;
                        }
                        view.apply(&ev);
                        next = events.try_recv().ok();
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    view.info(&format!("· {n} floor events were not shown (the screen fell behind)"));
                }
                Err(broadcast::error::RecvError::Closed) => break exit::FAILURE,
            },
            ev = room_events.recv() => {
                if let Some(line) = ev.ok().as_ref().and_then(room_narration) {
                    view.info(&line);
                }
            }
            note = notes.recv() => {
                if let Some(note) = note {
                    view.info(&note);
                }
            }
            key = keys.next() => match key {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    match screen.key(key) {
                        Key::Nothing => {}
                        Key::Quit => break exit::ANSWERED,
                        Key::Interrupt => {
                            let again = last_interrupt.is_some_and(|t| t.elapsed() < AGAIN);
                            if !view.running || again {
                                break exit::ANSWERED;
                            }
                            last_interrupt = Some(Instant::now());
                            view.info("· cancelling the turn (Ctrl-C again to quit)");
                            let _ = floor.cancel_turn().await;
                        }
                        Key::Submit(line) => match interpret(floor, rooms, &line).await {
                            Input::Nothing => {}
                            Input::Quit => break exit::ANSWERED,
                            Input::Say(lines) => lines.iter().for_each(|l| view.info(l)),
                            Input::Post(text) => {
                                screen.scroll = 0;
                                let floor = floor.clone();
                                let notes = notes_tx.clone();
                                tokio::spawn(async move {
                                    if let Err(e) = floor.post(text).await {
                                        let _ = notes.send(format!("· not sent: {e}"));
                                    }
                                });
                            }
                        },
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e).context("cannot read the terminal"),
                None => break exit::ANSWERED,
            },
        }
    };
    drop(terminal);
    drop(guard);
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use index_schema::wire::floor::Message;
    use runtime::{Handle, TurnEndReason, TurnId, WakeReason};

    fn view() -> View {
        View::new(
            ["@a", "@b"]
                .iter()
                .map(|h| AgentRow {
                    handle: (*h).to_owned(),
                    activation: "mention".to_owned(),
                    responding: false,
                })
                .collect(),
        )
    }

    fn message(id: &str, from: &str, content: &str) -> FloorEvent {
        let m: Message = serde_json::from_value(serde_json::json!({
            "id": id, "from": from, "content": content, "timestamp": "2026-01-01T00:00:00Z",
        }))
        .unwrap();
        FloorEvent::Message { message: m }
    }

    fn delta(call: u64, agent: &str, content: &str) -> FloorEvent {
        FloorEvent::Delta {
            call: CallId(call),
            agent: Handle::new(agent).unwrap(),
            content: content.to_owned(),
        }
    }

    fn said(who: &str, text: &str) -> Entry {
        Entry::Said {
            who: who.to_owned(),
            text: text.to_owned(),
        }
    }

    #[test]
    fn streamed_words_build_one_entry_per_call_and_the_message_replaces_it() {
        let mut v = view();
        v.apply(&message("m1", "@user", "@a? @b? go"));
        v.apply(&FloorEvent::Responding {
            call: CallId(1),
            agent: Handle::new("@a").unwrap(),
            wake_reason: WakeReason::MentionedWithQuestion,
            initiator: None,
        });
        assert!(v.agents[0].responding && !v.agents[1].responding);
        v.apply(&delta(1, "@a", "one "));
        v.apply(&delta(2, "@b", "x\x1b[2J"));
        v.apply(&delta(1, "@a", "two"));
        assert_eq!(
            v.entries,
            [
                said("@user", "@a? @b? go"),
                Entry::Info("· @a responds (mentioned with question)".into()),
                said("@a", "one two"),
                said("@b", "x[2J"),
            ]
        );
        // The floor stores the message, then finishes the call: the stored message takes the
        // streamed entry's place, it is not shown twice.
        v.apply(&message("m2", "@a", "one two!"));
        v.apply(&FloorEvent::CallFinished {
            call: CallId(1),
            agent: Handle::new("@a").unwrap(),
            outcome: CallOutcome::Responded {
                message_id: "m2".into(),
            },
            elapsed_ms: 1.0,
        });
        assert!(!v.agents[0].responding);
        assert_eq!(v.entries[2], said("@a", "one two!"));
        assert_eq!(v.entries.len(), 4);
        // The other order works too.
        v.apply(&FloorEvent::CallFinished {
            call: CallId(2),
            agent: Handle::new("@b").unwrap(),
            outcome: CallOutcome::Responded {
                message_id: "m3".into(),
            },
            elapsed_ms: 1.0,
        });
        v.apply(&message("m3", "@b", "x."));
        assert_eq!(v.entries[3], said("@b", "x."));
        assert_eq!(v.entries.len(), 4);
        // A message that was not streamed is added whole.
        v.apply(&message("m4", "@b", "whole"));
        assert_eq!(v.entries[4], said("@b", "whole"));
    }

    #[test]
    fn turns_are_narrated_and_end_every_response() {
        let mut v = view();
        v.apply(&FloorEvent::TurnStarted {
            turn: TurnId(1),
            message_id: "m1".into(),
        });
        assert!(v.running);
        v.apply(&FloorEvent::Responding {
            call: CallId(3),
            agent: Handle::new("@b").unwrap(),
            wake_reason: WakeReason::Always,
            initiator: None,
        });
        v.apply(&delta(3, "@b", "half"));
        v.apply(&FloorEvent::CallFinished {
            call: CallId(4),
            agent: Handle::new("@a").unwrap(),
            outcome: CallOutcome::Passed {
                reason: Some("no\x07thing".into()),
            },
            elapsed_ms: 1.0,
        });
        v.apply(&FloorEvent::TurnEnded {
            turn: TurnId(1),
            reason: TurnEndReason::NoOneWoke,
            hops: 1,
            cancelled: true,
            elapsed_ms: 12.0,
        });
        assert!(!v.running);
        assert!(v.agents.iter().all(|r| !r.responding));
        let infos: Vec<&str> = v
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Info(s) => Some(s.as_str()),
                Entry::Said { .. } => None,
            })
            .collect();
        assert_eq!(infos[1], "· @a passed: nothing");
        assert!(
            infos[2].starts_with("— turn ended (cancelled): "),
            "{infos:?}"
        );
        // A later delta of the cancelled call starts a new entry, not the old one.
        v.apply(&delta(3, "@b", "late"));
        assert_eq!(v.entries.last(), Some(&said("@b", "late")));
    }

    #[test]
    fn rows_wrap_to_the_width_and_keep_newlines() {
        let mut v = view();
        v.apply(&message("m1", "@a", "abcdefghij\nk\tl"));
        v.info("short");
        let rows: Vec<String> = v.rows(8, false).iter().map(text_of).collect();
        assert_eq!(rows, ["@a: abcd", "efghij", "k l", "short"]);
        // Colour: the agent's name in its colour; none without.
        let coloured = v.rows(80, true);
        assert_eq!(coloured[0].spans[0].style.fg, Some(Color::Cyan));
        assert!(
            v.rows(80, false)
                .iter()
                .flat_map(|l| l.spans.iter())
                .all(|s| s.style == Style::default())
        );
    }

    fn keys(line: &mut InputLine, keys: &[KeyCode]) {
        for k in keys {
            line.edit(KeyEvent::new(*k, KeyModifiers::NONE));
        }
    }

    #[test]
    fn the_input_line_edits_at_its_cursor_and_keeps_it_in_view() {
        let mut line = InputLine::default();
        let typed: Vec<KeyCode> = "helo".chars().map(KeyCode::Char).collect();
        keys(&mut line, &typed);
        keys(
            &mut line,
            &[
                KeyCode::Left,
                KeyCode::Char('l'),
                KeyCode::End,
                KeyCode::Char('!'),
            ],
        );
        keys(
            &mut line,
            &[KeyCode::Home, KeyCode::Delete, KeyCode::Char('H')],
        );
        assert_eq!(line.window(80), ("Hello!".to_owned(), 1));
        keys(
            &mut line,
            &[KeyCode::Right, KeyCode::Backspace, KeyCode::Backspace],
        );
        assert_eq!(line.window(80), ("llo!".to_owned(), 0));
        // Narrow: the part around the cursor is shown; wide characters count double.
        let mut line = InputLine::default();
        let typed: Vec<KeyCode> = "abcdef漢字".chars().map(KeyCode::Char).collect();
        keys(&mut line, &typed);
        assert_eq!(line.window(6), ("f漢字".to_owned(), 5));
        keys(&mut line, &[KeyCode::Home]);
        assert_eq!(line.window(6), ("abcdef".to_owned(), 0));
        line.edit(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(line.take(), "");
    }

    #[test]
    fn old_entries_are_dropped_and_open_streams_follow() {
        let mut v = view();
        v.apply(&delta(1, "@a", "start"));
        for i in 0..MAX_ENTRIES {
            v.info(&format!("line {i}"));
        }
        assert_eq!(v.entries.len(), MAX_ENTRIES);
        v.apply(&delta(2, "@b", "b"));
        v.apply(&delta(2, "@b", "c"));
        assert_eq!(v.entries.last(), Some(&said("@b", "bc")));
        // The first call's entry was dropped; its deltas start a new one.
        v.apply(&delta(1, "@a", "more"));
        assert_eq!(v.entries.last(), Some(&said("@a", "more")));
    }
}
