//! Seed 004's Switchboard on a floor: agents that take part by reading and writing JSON files
//! in a shared `.switchboard/` directory, or through the Switchboard MCP server over HTTP/SSE.
//!
//! - [`workspace`]: the directory and every file operation on it (write-then-rename, no link
//!   followed, bounded reads); [`state`]: `state.json` under proper-lockfile's lock;
//!   [`journal`]: how a message reaches the floor exactly once across a kill.
//! - **Members** are the floor's Switchboard agents: those of the blueprint (`type:
//!   switchboard`, [`Switchboard::add_file_agent`]) and those that register over MCP. Each is
//!   on the floor as a [`SwitchboardAgent`]: when the floor asks it (`@name?`) its respond
//!   call writes a `delegate_task` (a `submit_result` when a delegation returns to it) into
//!   `inbox/<name>/` and waits for its answer; a floor message that only names it (`@name`)
//!   becomes a `status_update` there. Its inbox is its own: ofc writes into it and never
//!   reads it (an MCP member reads it with `check_inbox`).
//! - **The floor side** is everyone else on the floor (LLM, ACP, process agents, `user`).
//!   Their inboxes are read by ofc (the `router`): a member's message there is its answer
//!   to the call waiting on it (its `replyTo` naming the question, or none), else a message
//!   it posts to the floor on its own ([`crate::floor::Floor::post_as`]); either way with its
//!   Switchboard id, action and `replyTo` in the floor message's `metadata`. Processed files
//!   move to `archive/`, every delivery gets the seed's receipt in `outbox/<sender>/`.
//!   Refused files (invalid JSON, too large, a link, a sender that is not a member, a
//!   recipient that does not match the inbox) move to `rejected/` with a logged reason.
//! - [`mcp`] and [`sse`]: the MCP server (`/health`, `/sse`, `/messages?sessionId=`) on
//!   127.0.0.1, bearer token from `auth_token` (header or `?token=`).
//!
//! `ofc floor serve --switchboard DIR` gives every hosted floor a Switchboard of its own at
//! `DIR/<floor_id>/.switchboard/`, stopped with the floor (no file agents there, as those come
//! from blueprints: MCP agents join, and agents added over HTTP are its floor side). Not done:
//! the seed's `bridge.json` (terminal input routing: ofc injects into no terminal) and the
//! workflow tools of the Switchboard VS Code extension.

pub mod agent;
pub mod journal;
pub mod mcp;
mod router;
pub mod sse;
pub mod state;
pub mod workspace;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use index_schema::switchboard::{Action, Message, Receipt, Role};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

pub use agent::SwitchboardAgent;
pub use sse::ServedSwitchboard;
pub use workspace::Workspace;

use crate::floor::{Floor, WeakFloor};
use crate::handle::Handle;
use journal::{Begun, Journal};

/// How a Switchboard runs.
#[derive(Debug, Clone)]
pub struct SwitchboardSettings {
    /// How often the floor side's inboxes are looked at (MCP sends wake the reader at once).
    pub scan_interval: Duration,
    /// How often while a member is being asked and its answer is awaited.
    pub answer_scan_interval: Duration,
    /// How long a file that does not parse may stay unchanged before it is refused (its
    /// writer may still be writing it).
    pub settle: Duration,
    /// Most files taken from one inbox per look.
    pub batch: usize,
    /// Most entries of one inbox looked at per look (temporary files and other names
    /// included); past it, said in the log.
    pub max_inbox_entries: usize,
    /// How long to wait for the floor to store an answer handed to a waiting call.
    pub store_wait: Duration,
    /// Where log lines go (`ofc run`: the run's agents log), besides `tracing`.
    pub log: Option<PathBuf>,
    /// Most MCP sessions at once.
    pub max_sessions: usize,
    /// Most agents registered over MCP (counted: those whose session is connected or ended
    /// less than `registration_grace` ago).
    pub max_registered: usize,
    /// How long an agent registered over MCP stays registered after its session ended (a
    /// client reconnecting takes its name again); after it, a newcomer's registration
    /// removes it.
    pub registration_grace: Duration,
}

impl Default for SwitchboardSettings {
    fn default() -> Self {
        Self {
            scan_interval: Duration::from_millis(25),
            answer_scan_interval: Duration::from_millis(2),
            settle: Duration::from_secs(1),
            batch: 256,
            max_inbox_entries: workspace::MAX_INBOX_ENTRIES,
            store_wait: Duration::from_secs(10),
            log: None,
            max_sessions: 32,
            max_registered: 64,
            registration_grace: Duration::from_secs(60),
        }
    }
}

/// How a member takes part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberKind {
    /// Reads and writes files (a blueprint `type: switchboard` agent).
    File,
    /// Registered over MCP with `register_terminal`.
    Terminal,
    /// Registered over MCP with `register_chat_agent`.
    Chat,
}

/// A Switchboard agent of the floor.
#[derive(Debug, Clone)]
pub struct Member {
    /// How it takes part.
    pub kind: MemberKind,
    /// Its role, if it has one.
    pub role: Option<Role>,
    /// Its team.
    pub team: Option<String>,
    /// Persona text put into the messages it is sent.
    pub persona: Option<String>,
    /// The MCP session that registered it (none for file agents).
    pub session: Option<String>,
}

/// A member's message handed to the call waiting for it.
#[derive(Debug)]
pub(crate) struct Answer {
    pub content: String,
    pub metadata: Map<String, Value>,
}

#[derive(Debug)]
pub(crate) struct Pending {
    /// The id of the message it was sent.
    pub question: String,
    /// Who asked.
    pub asker: String,
    pub reply: oneshot::Sender<Answer>,
}

#[derive(Debug, Default)]
struct Members {
    agents: BTreeMap<String, Member>,
    /// Everyone else on the floor, by name without `@` (`user` included).
    floor_side: BTreeSet<String>,
    pending: HashMap<String, Pending>,
    teams: BTreeMap<String, BTreeSet<String>>,
}

/// One floor's Switchboard: its workspace, members and the tasks that move messages.
#[derive(Debug)]
pub struct Switchboard {
    ws: Workspace,
    settings: SwitchboardSettings,
    token: String,
    journal: Journal,
    /// Deliveries the last run began and did not finish, until [`Switchboard::attach`]
    /// resolves them.
    unresolved: Mutex<Vec<Begun>>,
    members: Mutex<Members>,
    floor: Mutex<Option<(WeakFloor, Option<PathBuf>)>>,
    log: Mutex<Option<std::fs::File>>,
    wake: Notify,
    stop: CancellationToken,
    /// The MCP sessions connected now.
    sessions: Mutex<BTreeSet<String>>,
    /// MCP sessions that ended, and when (for members they registered).
    ended: Mutex<HashMap<String, std::time::Instant>>,
    /// Inbox files left alone (delivered but not archived, or undecidable after a restart):
    /// (inbox, file).
    held: Mutex<BTreeSet<(String, String)>>,
    /// Messages waiting to be delivered again, their delivery begun in the journal (said once
    /// in the log): (inbox, file) → id.
    retrying: Mutex<BTreeMap<(String, String), String>>,
    /// The message ids delivered in this run (bounded: [`router::MAX_DELIVERED_IDS`]); a
    /// message using one again is refused.
    delivered: Mutex<router::DeliveredIds>,
    /// How many times the inbox reader has looked at the inboxes.
    looks: std::sync::atomic::AtomicU64,
    /// The inbox reader and the floor listener.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// The floor messages of the Switchboard carry `{"switchboard": {...}}` in their metadata.
pub const METADATA_KEY: &str = "switchboard";

/// Now as the seed writes times: `2025-01-01T00:00:00.000Z`.
pub fn now_iso() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format).unwrap_or_default()
}

/// A new message id, `msg_<unix ms>_<random>`.
pub fn new_message_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    index_schema::switchboard::message_id(millis, rand::random())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Switchboard {
    /// Opens `<dir>/.switchboard/` (creating the layout), writes a new `auth_token`, makes
    /// sure `state.json` exists, and reads what the last run's journal left open.
    pub fn open(dir: &Path, settings: SwitchboardSettings) -> io::Result<Arc<Switchboard>> {
        let ws = Workspace::open(dir)?;
        let token = ws.new_token()?;
        let (journal, unresolved) = Journal::open(ws.root())?;
        let log = match &settings.log {
            Some(path) => Some(OpenOptions::new().create(true).append(true).open(path)?),
            None => None,
        };
        let sb = Arc::new(Switchboard {
            ws,
            settings,
            token,
            journal,
            unresolved: Mutex::new(unresolved),
            members: Mutex::new(Members::default()),
            floor: Mutex::new(None),
            log: Mutex::new(log),
            wake: Notify::new(),
            stop: CancellationToken::new(),
            sessions: Mutex::new(BTreeSet::new()),
            ended: Mutex::new(HashMap::new()),
            held: Mutex::new(BTreeSet::new()),
            retrying: Mutex::new(BTreeMap::new()),
            delivered: Mutex::new(router::DeliveredIds::new(router::MAX_DELIVERED_IDS)),
            looks: std::sync::atomic::AtomicU64::new(0),
            tasks: Mutex::new(Vec::new()),
        });
        // Logged when it fails: the floor runs without it (file agents read it only to see who
        // is there), and a state.json that cannot be read is never replaced.
        let _ = sb.write_state();
        Ok(sb)
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    /// This run's bearer token (also in `auth_token`).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The settings.
    pub fn settings(&self) -> &SwitchboardSettings {
        &self.settings
    }

    /// Adds a blueprint Switchboard agent and answers the floor agent that stands for it.
    pub fn add_file_agent(
        self: &Arc<Self>,
        handle: &Handle,
        role: Option<Role>,
        team: Option<String>,
        persona: Option<String>,
    ) -> io::Result<Arc<SwitchboardAgent>> {
        let name = handle.as_str().to_owned();
        self.ws.dir("inbox", &name)?;
        {
            let mut m = lock(&self.members);
            if let Some(t) = &team {
                m.teams.entry(t.clone()).or_default().insert(name.clone());
            }
            m.agents.insert(
                name.clone(),
                Member {
                    kind: MemberKind::File,
                    role,
                    team,
                    persona,
                    session: None,
                },
            );
        }
        // Logged when it fails, as at start.
        let _ = self.write_state();
        Ok(Arc::new(SwitchboardAgent::new(Arc::clone(self), name)))
    }

    /// Starts moving messages for `floor`: the inboxes of everyone on it who is not a member
    /// are read, and what the floor says is passed to the members. First finishes what the
    /// last run began (see [`journal`]).
    pub async fn attach(self: &Arc<Self>, floor: &Floor) -> io::Result<()> {
        let snapshot = floor
            .snapshot()
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
        *lock(&self.floor) = Some((floor.downgrade(), snapshot.transcript.clone()));
        self.set_roster(snapshot.agents.iter().map(|a| a.0.clone()).collect());
        let unresolved = std::mem::take(&mut *lock(&self.unresolved));
        self.recover(unresolved);
        let events = floor.subscribe();
        let router = Arc::clone(self);
        let reader = tokio::spawn(async move { router.run_router().await });
        let teller = Arc::clone(self);
        let telling = tokio::spawn(async move { teller.run_events(events).await });
        lock(&self.tasks).extend([reader, telling]);
        Ok(())
    }

    /// Stops reading inboxes and telling members (what is being delivered is finished in the
    /// background).
    pub fn stop(&self) {
        self.stop.cancel();
        self.ws.remove_server_info();
    }

    /// Stops, and waits (at most `wait`) until the delivery under way is finished — receipt
    /// written, file archived — so that a run that ends leaves nothing for the next one to
    /// recover. Call it before the floor closes: the delivery may wait for the floor.
    pub async fn shutdown(&self, wait: Duration) {
        self.stop();
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        let _ = tokio::time::timeout(wait, futures::future::join_all(tasks)).await;
    }

    /// The floor, while it is open.
    fn floor(&self) -> Option<Floor> {
        lock(&self.floor).as_ref().and_then(|(f, _)| f.upgrade())
    }

    fn transcript(&self) -> Option<PathBuf> {
        lock(&self.floor).as_ref().and_then(|(_, t)| t.clone())
    }

    /// Records who is on the floor: everyone not a member is on the floor side.
    fn set_roster(&self, roster: Vec<Handle>) {
        let side: Vec<String> = {
            let mut m = lock(&self.members);
            let side: BTreeSet<String> = roster
                .into_iter()
                .map(|h| h.as_str().to_owned())
                .filter(|n| !m.agents.contains_key(n))
                .chain([Handle::USER.to_owned()])
                .collect();
            if side == m.floor_side {
                return;
            }
            m.floor_side = side.clone();
            side.into_iter().collect()
        };
        // The floor side in `state.json` too, so that a file agent can see whom it may write to.
        let written = state::update_at(self.ws.root_fd(), |s| {
            let chat = state::section(s, "chatAgents");
            for name in &side {
                chat.insert(
                    name.clone(),
                    json!({
                        "name": name, "type": "chat", "interface": "ofc-floor",
                        "status": "active", "friendlyName": name, "capabilities": ["floor"],
                    }),
                );
            }
        });
        let _ = self.said_state(written);
    }

    /// Logs what a change of `state.json` did that is worth saying: that the file was
    /// replaced (it was JSON but not an object), or that it could not be changed.
    fn said_state(&self, outcome: io::Result<bool>) -> io::Result<()> {
        match outcome {
            Ok(true) => {
                self.log("state.json was JSON but not an object; it was replaced");
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => {
                self.log(&format!("cannot write state.json: {e}"));
                Err(e)
            }
        }
    }

    /// Whether `name` is a member.
    pub fn is_member(&self, name: &str) -> bool {
        lock(&self.members).agents.contains_key(name)
    }

    /// A member.
    pub fn member(&self, name: &str) -> Option<Member> {
        lock(&self.members).agents.get(name).cloned()
    }

    /// Whether `name` is on the floor side (its inbox is read by ofc).
    pub fn is_floor_side(&self, name: &str) -> bool {
        lock(&self.members).floor_side.contains(name)
    }

    /// Every member and floor-side name, sorted.
    pub fn names(&self) -> (Vec<String>, Vec<String>) {
        let m = lock(&self.members);
        (
            m.agents.keys().cloned().collect(),
            m.floor_side.iter().cloned().collect(),
        )
    }

    /// The members of a team.
    pub fn team(&self, team: &str) -> Vec<String> {
        lock(&self.members)
            .teams
            .get(team)
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Waits for `member`'s answer to the message `question`, asked by `asker`.
    pub(crate) fn expect_answer(
        &self,
        member: &str,
        question: &str,
        asker: &str,
    ) -> oneshot::Receiver<Answer> {
        let (reply, answer) = oneshot::channel();
        lock(&self.members).pending.insert(
            member.to_owned(),
            Pending {
                question: question.to_owned(),
                asker: asker.to_owned(),
                reply,
            },
        );
        // The reader looks quickly from now on.
        self.wake.notify_one();
        answer
    }

    /// How many times the inbox reader has looked at the floor side's inboxes (to see how
    /// often it wakes).
    pub fn inbox_looks(&self) -> u64 {
        self.looks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a respond call waits for a member's answer.
    pub(crate) fn awaiting_answer(&self) -> bool {
        !lock(&self.members).pending.is_empty()
    }

    /// Forgets the wait for `member`'s answer to `question` (the call ended).
    pub(crate) fn forget_answer(&self, member: &str, question: &str) {
        let mut m = lock(&self.members);
        if m.pending
            .get(member)
            .is_some_and(|p| p.question == question)
        {
            m.pending.remove(member);
        }
    }

    /// The wait `message` answers, taken: its sender's, when it names that question in
    /// `replyTo` or names none.
    pub(crate) fn take_pending(&self, message: &Message) -> Option<Pending> {
        let mut m = lock(&self.members);
        let fits = m
            .pending
            .get(&message.sender)
            .is_some_and(|p| message.reply_to.as_ref().is_none_or(|r| *r == p.question));
        if fits {
            m.pending.remove(&message.sender)
        } else {
            None
        }
    }

    /// Writes a message into a member's inbox and the receipt into its sender's outbox.
    pub fn send_to_member(&self, message: &Message) -> io::Result<()> {
        self.ws.deliver(message)?;
        let receipt = Receipt::delivered(&message.id, &message.recipient, now_iso());
        self.ws.write_receipt(&message.sender, &receipt)?;
        self.log(&format!(
            "{} {} → {}: delivered to inbox/{}/{}",
            message.action.as_str(),
            message.sender,
            message.recipient,
            message.recipient,
            message.file_name()
        ));
        Ok(())
    }

    /// A message from `sender` to the member `recipient`, with the member's team and persona.
    pub fn message_to(
        &self,
        action: Action,
        sender: &str,
        recipient: &str,
        payload: String,
        metadata: Option<Map<String, Value>>,
    ) -> Message {
        let member = self.member(recipient);
        Message {
            id: new_message_id(),
            action,
            sender: sender.to_owned(),
            recipient: recipient.to_owned(),
            payload: bounded(payload),
            reply_to: None,
            metadata,
            team: member.as_ref().and_then(|m| m.team.clone()),
            persona: member.and_then(|m| m.persona),
            created_at: now_iso(),
        }
    }

    /// Asks the inbox reader to look now (an MCP message was written).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// A line in the log (control characters escaped by the callers' [`workspace::shown`]).
    pub fn log(&self, line: &str) {
        tracing::info!(target: "ofc::switchboard", "{line}");
        if let Some(file) = lock(&self.log).as_mut() {
            let _ = writeln!(file, "[switchboard] {} {line}", now_iso());
        }
    }

    /// Registers a member over MCP (or updates its registration), and puts it on the floor
    /// when it is new. Answers whether it is new.
    pub(crate) fn register(
        self: &Arc<Self>,
        name: &str,
        member: Member,
        record: Value,
    ) -> Result<bool, String> {
        let handle = Handle::new(name).map_err(|e| e.to_string())?;
        let reserved = index_schema::name::AgentHandle::new(name)
            .map(|h| h.is_reserved())
            .unwrap_or(true);
        if reserved {
            return Err(format!("`{name}` belongs to the floor"));
        }
        if !self.is_member(name) {
            self.expire_registrations();
        }
        let fresh = {
            let mut m = lock(&self.members);
            if m.floor_side.contains(name) {
                return Err(format!(
                    "`{name}` is already on the floor as an agent of the blueprint"
                ));
            }
            let registered = m
                .agents
                .values()
                .filter(|a| a.kind != MemberKind::File && self.session_counts(a))
                .count();
            match m.agents.get(name) {
                Some(existing) if existing.kind == MemberKind::File => {
                    return Err(format!(
                        "`{name}` is a file agent of the blueprint; register under another name"
                    ));
                }
                Some(existing)
                    if existing.session.is_some()
                        && existing.session != member.session
                        && existing
                            .session
                            .as_ref()
                            .is_some_and(|s| lock(&self.sessions).contains(s)) =>
                {
                    return Err(format!("`{name}` is registered by another live session"));
                }
                None if registered >= self.settings.max_registered => {
                    return Err(format!(
                        "{} agents are registered already (the most this floor takes)",
                        self.settings.max_registered
                    ));
                }
                _ => {}
            }
            // Registered again with another team (or none): out of the one it was in.
            let old = m.agents.get(name).and_then(|a| a.team.clone());
            if let Some(old) = old.filter(|o| member.team.as_ref() != Some(o))
                && let Some(list) = m.teams.get_mut(&old)
            {
                list.remove(name);
                if list.is_empty() {
                    m.teams.remove(&old);
                }
            }
            if let Some(t) = &member.team {
                m.teams
                    .entry(t.clone())
                    .or_default()
                    .insert(name.to_owned());
            }
            m.agents.insert(name.to_owned(), member.clone()).is_none()
        };
        self.ws.dir("inbox", name).map_err(|e| e.to_string())?;
        let section = match member.kind {
            MemberKind::Terminal => "terminals",
            _ => "chatAgents",
        };
        let key = name.to_owned();
        let written = state::update_at(self.ws.root_fd(), |s| {
            state::section(s, section).insert(key, record);
        });
        if let Err(e) = self.said_state(written) {
            // Not registered after all: a registration must be in state.json.
            if fresh {
                let mut m = lock(&self.members);
                m.agents.remove(name);
                if let Some(t) = &member.team
                    && let Some(list) = m.teams.get_mut(t)
                {
                    list.remove(name);
                    if list.is_empty() {
                        m.teams.remove(t);
                    }
                }
            }
            return Err(format!("cannot write state.json: {e}"));
        }
        if fresh && let Some(floor) = self.floor() {
            let agent = Arc::new(SwitchboardAgent::new(Arc::clone(self), name.to_owned()));
            let joining = crate::floor::FloorAgent::new(handle, agent);
            let sb = Arc::clone(self);
            let name = name.to_owned();
            tokio::spawn(async move {
                match floor.add_agent_when_idle(joining).await {
                    Ok(()) => sb.log(&format!("@{name} joined the floor over MCP")),
                    Err(e) => sb.log(&format!("@{name} could not join the floor: {e}")),
                }
            });
        }
        Ok(fresh)
    }

    /// Records an MCP session as connected (`true`) or gone.
    pub(crate) fn session(&self, id: &str, alive: bool) {
        let mut s = lock(&self.sessions);
        if alive {
            s.insert(id.to_owned());
        } else if s.remove(id) {
            lock(&self.ended).insert(id.to_owned(), std::time::Instant::now());
        }
    }

    /// Whether a member registered over MCP counts toward the most registered: its session is
    /// connected, or ended less than the grace ago.
    fn session_counts(&self, member: &Member) -> bool {
        let Some(session) = &member.session else {
            return true;
        };
        if lock(&self.sessions).contains(session) {
            return true;
        }
        // A session not known to have ended (one served otherwise than over /sse) counts.
        lock(&self.ended)
            .get(session)
            .is_none_or(|at| at.elapsed() < self.settings.registration_grace)
    }

    /// Removes the members registered over MCP that no longer count (their session ended
    /// longer than the grace ago), from the roster, `state.json` and the floor.
    fn expire_registrations(self: &Arc<Self>) {
        let expired: Vec<(String, MemberKind)> = {
            let mut m = lock(&self.members);
            let gone: Vec<(String, MemberKind)> = m
                .agents
                .iter()
                .filter(|(_, a)| a.kind != MemberKind::File && !self.session_counts(a))
                .map(|(n, a)| (n.clone(), a.kind.clone()))
                .collect();
            for (name, _) in &gone {
                if let Some(t) = m.agents.remove(name).and_then(|a| a.team)
                    && let Some(list) = m.teams.get_mut(&t)
                {
                    list.remove(name);
                    if list.is_empty() {
                        m.teams.remove(&t);
                    }
                }
                m.pending.remove(name);
            }
            gone
        };
        if expired.is_empty() {
            return;
        }
        {
            // Sessions no member names any more are forgotten (bounded).
            let m = lock(&self.members);
            let named: BTreeSet<&String> = m
                .agents
                .values()
                .filter_map(|a| a.session.as_ref())
                .collect();
            lock(&self.ended).retain(|s, _| named.contains(s));
        }
        let written = state::update_at(self.ws.root_fd(), |s| {
            for (name, kind) in &expired {
                let section = match kind {
                    MemberKind::Terminal => "terminals",
                    _ => "chatAgents",
                };
                state::section(s, section).remove(name);
            }
        });
        let _ = self.said_state(written);
        for (name, _) in expired {
            self.log(&format!(
                "@{name} is no longer registered: its MCP session ended more than {}s ago",
                self.settings.registration_grace.as_secs()
            ));
            let Some(floor) = self.floor() else { continue };
            let Ok(handle) = Handle::new(&name) else {
                continue;
            };
            let sb = Arc::clone(self);
            tokio::spawn(async move {
                // Refused during a turn: tried again when one ends (a few times at most).
                let mut events = floor.subscribe();
                for _ in 0..20 {
                    if floor.remove_agent(handle.clone()).await.is_ok() {
                        sb.log(&format!("@{name} left the floor"));
                        return;
                    }
                    let ended = async {
                        loop {
                            match events.recv().await {
                                Ok(crate::floor::FloorEvent::TurnEnded { .. }) => return true,
                                Ok(_)
                                | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                                Err(_) => return false,
                            }
                        }
                    };
                    // The floor closed: nothing to leave.
                    if let Ok(false) = tokio::time::timeout(Duration::from_secs(30), ended).await {
                        return;
                    }
                }
                sb.log(&format!("@{name} could not be taken off the floor"));
            });
        }
    }

    /// How many MCP sessions are connected.
    pub(crate) fn sessions(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Puts `member` into `team`, taking it out of the team it was in (a member is in one
    /// team; a team left empty is gone, here and in `state.json`).
    pub(crate) fn join_team(&self, member: &str, team: &str) -> io::Result<Vec<String>> {
        let (members, left) = {
            let mut m = lock(&self.members);
            let left = m
                .agents
                .get_mut(member)
                .and_then(|a| a.team.replace(team.to_owned()))
                .filter(|old| old != team);
            let left = left.map(|old| {
                let rest: Vec<String> = match m.teams.get_mut(&old) {
                    Some(list) => {
                        list.remove(member);
                        list.iter().cloned().collect()
                    }
                    None => Vec::new(),
                };
                if rest.is_empty() {
                    m.teams.remove(&old);
                }
                (old, rest)
            });
            let t = m.teams.entry(team.to_owned()).or_default();
            t.insert(member.to_owned());
            (t.iter().cloned().collect::<Vec<String>>(), left)
        };
        let list = members.clone();
        let written = state::update_at(self.ws.root_fd(), |s| {
            let teams = state::section(s, "teams");
            if let Some((old, rest)) = &left {
                if rest.is_empty() {
                    teams.remove(old);
                } else {
                    teams.insert(
                        old.clone(),
                        json!({"name": old, "members": rest, "isComposite": false}),
                    );
                }
            }
            teams.insert(
                team.to_owned(),
                json!({"name": team, "members": list, "isComposite": false}),
            );
        });
        self.said_state(written)?;
        Ok(members)
    }

    /// Writes the floor's agents and teams into `state.json`.
    fn write_state(&self) -> io::Result<()> {
        let (agents, teams) = {
            let m = lock(&self.members);
            (m.agents.clone(), m.teams.clone())
        };
        let written = state::update_at(self.ws.root_fd(), |s| {
            for (name, member) in &agents {
                if member.kind == MemberKind::File {
                    state::section(s, "chatAgents").insert(
                        name.clone(),
                        json!({
                            "name": name, "type": "chat", "interface": "file",
                            "role": member.role.map(Role::as_str), "team": member.team,
                            "status": "active", "friendlyName": name,
                            "capabilities": ["inbox"], "registeredAt": now_iso(),
                        }),
                    );
                }
            }
            for (team, list) in &teams {
                state::section(s, "teams").insert(
                    team.clone(),
                    json!({"name": team, "members": list, "isComposite": false}),
                );
            }
        });
        self.said_state(written)
    }

    /// The agents and teams, for `get_team_roster`.
    pub(crate) fn roster(&self) -> Value {
        let m = lock(&self.members);
        let mut agents = Map::new();
        for (name, a) in &m.agents {
            agents.insert(
                name.clone(),
                json!({
                    "type": match a.kind { MemberKind::File => "file", MemberKind::Terminal => "terminal", MemberKind::Chat => "chat" },
                    "role": a.role.map(Role::as_str), "team": a.team,
                }),
            );
        }
        for name in &m.floor_side {
            agents.insert(name.clone(), json!({"type": "floor"}));
        }
        let teams: Map<String, Value> = m
            .teams
            .iter()
            .map(|(t, l)| (t.clone(), json!({"members": l})))
            .collect();
        json!({"agents": agents, "teams": teams})
    }
}

/// A payload cut to what a message may hold.
fn bounded(mut payload: String) -> String {
    let max = index_schema::switchboard::MAX_PAYLOAD_BYTES;
    if payload.len() > max {
        let mut end = max - 64;
        while !payload.is_char_boundary(end) {
            end -= 1;
        }
        let cut = payload.len() - end;
        payload.truncate(end);
        payload.push_str(&format!("\n[… {cut} bytes cut]"));
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(sb: &Arc<Switchboard>, name: &str, session: &str) -> Result<bool, String> {
        let member = Member {
            kind: MemberKind::Chat,
            role: None,
            team: Some("t".into()),
            persona: None,
            session: Some(session.into()),
        };
        sb.register(name, member, json!({"name": name}))
    }

    /// Registrations whose session ended no longer count once the grace is over, and a
    /// newcomer's registration removes them; live ones keep the floor full.
    #[tokio::test]
    async fn registrations_of_ended_sessions_expire() {
        let dir = tempfile::tempdir().unwrap();
        let settings = SwitchboardSettings {
            max_registered: 2,
            registration_grace: Duration::ZERO,
            ..SwitchboardSettings::default()
        };
        let sb = Switchboard::open(dir.path(), settings).unwrap();
        for (name, session) in [("a", "s1"), ("b", "s2")] {
            sb.session(session, true);
            chat(&sb, name, session).unwrap();
        }
        sb.session("s3", true);
        let e = chat(&sb, "c", "s3").unwrap_err();
        assert!(e.contains("2 agents are registered already"), "{e}");
        sb.session("s1", false);
        assert!(chat(&sb, "c", "s3").unwrap());
        assert!(!sb.is_member("a"));
        assert!(sb.is_member("b") && sb.is_member("c"));
        assert_eq!(sb.team("t"), ["b", "c"]);
        let state = state::read(&sb.workspace().root().join(state::FILE)).unwrap();
        assert_eq!(state["chatAgents"].get("a"), None, "{state}");
        assert!(lock(&sb.ended).is_empty());
        // Within the grace, an ended session's registration still counts.
        let dir = tempfile::tempdir().unwrap();
        let settings = SwitchboardSettings {
            max_registered: 1,
            ..SwitchboardSettings::default()
        };
        let sb = Switchboard::open(dir.path(), settings).unwrap();
        sb.session("s1", true);
        chat(&sb, "a", "s1").unwrap();
        sb.session("s1", false);
        assert!(chat(&sb, "b", "s2").is_err());
        // And the agent reconnecting takes its name again.
        chat(&sb, "a", "s4").unwrap();
    }
}
