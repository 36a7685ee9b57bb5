//! `@floor-manager`, built into every floor `ofc run` opens. It only answers when called
//! (`@floor-manager? …`) and never wakes by itself. It does three things:
//!
//! - **Finds agents** (`who can <do X>?`): it searches the configured hub (`OFC_HUB`) and
//!   lists what it found, numbered. Agent Lobby's capability routing applies (seed 001): a
//!   capability with `authorized_requesters` is only offered to those requesters, so an agent
//!   whose every capability is closed to whoever asked is left out (and the answer says how
//!   many were).
//! - **Adds an agent to the running floor** (`add 1`, `add publisher/agent[@version]`): only
//!   the user approves an addition. Asked by `@user`, the agent is pulled (verified, cached and
//!   locked in the project's `ofc.lock`, as every pull is), started like a blueprint agent, and
//!   joins the floor when the running turn ends; the other LLM agents are told it is there.
//!   Asked by an agent, the request is put to the user, who approves it with the same words.
//!   The blueprint file is never edited: the answer says which line keeps the agent for the
//!   next run.
//! - **Handles access requests** (`request write on board`, `give @code execute on sandbox`):
//!   under the blueprint's `floor_manager` policies, first match wins (`auto_approve_read`
//!   for reads). An agent asking for itself is judged under the policy for that access; an
//!   agent asking for another agent, under the `grant` policy. `approve` grants at once (the
//!   agent's guard sees it on its next tool call), `deny` refuses naming the policy, `ask` (and
//!   any request without a `floor_manager` block) is put to the user as a numbered request,
//!   answered with `approve N` / `deny N`. The user's own grants (`give @x write on board`)
//!   need no policy: the user is who policies ask.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use index_schema::blueprint::{Access, Decision, FloorManager};
use index_schema::hub_api::search::{SearchHit, SearchParams};
use index_schema::manifest::Capability;
use index_schema::name::{AgentHandle, AgentName, Reference};
use index_schema::wire::{
    Activation, AgentInfo, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use runtime::agent::{Agent, AgentError, Deltas};
use runtime::floor::WeakFloor;
use runtime::furniture::{Class, FloorFurniture};
use runtime::mention::inert;

use crate::hub::Hub;

/// The handle.
pub const HANDLE: &str = "@floor-manager";

/// How many agents an answer lists.
const LIMIT: usize = 5;

/// How many hits are looked at to find [`LIMIT`] open to the requester.
const LOOK_AT: usize = 20;

/// What brings a hub agent onto the floor: pulls it, starts it and hands it back ready to
/// join. Implemented by `ofc run` (see `super::Recruiter`).
#[async_trait]
pub trait Recruit: Send + Sync + fmt::Debug {
    /// Pulls and starts `reference`; `present` are the handles already on the floor (an agent
    /// whose handle is taken is refused before it starts). Answers the agent and what was
    /// pulled (`publisher/agent@version`).
    async fn recruit(
        &self,
        reference: &Reference,
        present: &[String],
    ) -> Result<(runtime::floor::FloorAgent, String), String>;

    /// Tells the floor's LLM agents who is on the floor now.
    fn joined(&self, agent: &runtime::floor::FloorAgent, present: &[String]);
}

/// The built-in floor manager.
pub struct FloorManagerAgent {
    hub: Result<Hub, String>,
    policies: Option<FloorManager>,
    furniture: Option<Arc<FloorFurniture>>,
    recruiter: Result<Arc<dyn Recruit>, String>,
    floor: OnceLock<WeakFloor>,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for FloorManagerAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloorManagerAgent")
            .field("policies", &self.policies)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// The agents on the floor, by handle (`@code`), to tell them of grants.
    agents: HashMap<String, Arc<dyn Agent>>,
    /// The last agents listed, numbered from 1 (`add 1`).
    proposals: Vec<String>,
    /// Access requests waiting for the user.
    requests: Vec<AccessRequest>,
    next_request: usize,
    /// What happened since the last answer that nobody was told (an approved agent that
    /// could not join after all): said at the start of the next answer.
    news: Vec<String>,
}

/// Most access requests waiting for the user at once: an agent can ask once per turn, and a
/// floor can run for many turns.
const MAX_PENDING_REQUESTS: usize = 16;
/// Most of them asked by one agent, so that one cannot fill the list for everyone.
const MAX_PENDING_PER_ASKER: usize = 4;

/// Why an access request was not queued: how many wait, of everyone's or of its asker's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    Everyone(usize),
    Asker(usize),
}

impl State {
    /// Queues `r` for the user and returns its number — the number of the same request (same
    /// agent, class and furniture) when one is waiting already. Past [`MAX_PENDING_REQUESTS`]
    /// waiting, or [`MAX_PENDING_PER_ASKER`] of its asker's, nothing is queued: the error is
    /// how many are waiting.
    fn queue(&mut self, mut r: AccessRequest) -> Result<usize, Full> {
        if let Some(same) = self
            .requests
            .iter()
            .find(|q| q.agent == r.agent && q.class == r.class && q.furniture == r.furniture)
        {
            return Ok(same.id);
        }
        if self.requests.len() >= MAX_PENDING_REQUESTS {
            return Err(Full::Everyone(self.requests.len()));
        }
        let mine = self
            .requests
            .iter()
            .filter(|q| q.asked_by == r.asked_by)
            .count();
        if mine >= MAX_PENDING_PER_ASKER {
            return Err(Full::Asker(mine));
        }
        self.next_request += 1;
        r.id = self.next_request;
        self.requests.push(r);
        Ok(self.next_request)
    }
}

/// An access request put to the user.
#[derive(Debug, Clone)]
struct AccessRequest {
    id: usize,
    /// Who would hold it.
    agent: String,
    furniture: String,
    class: Class,
    /// Who asked.
    asked_by: String,
}

impl FloorManagerAgent {
    /// A floor manager searching `hub` (or explaining why it cannot), deciding access under
    /// `policies` on `furniture`, and adding agents with `recruiter`.
    pub fn new(
        hub: Result<Hub, String>,
        policies: Option<FloorManager>,
        furniture: Option<Arc<FloorFurniture>>,
        recruiter: Result<Arc<dyn Recruit>, String>,
    ) -> Self {
        Self {
            hub,
            policies,
            furniture,
            recruiter,
            floor: OnceLock::new(),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The floor it manages (set once the floor is open).
    pub fn attach(&self, floor: WeakFloor) {
        let _ = self.floor.set(floor);
    }

    /// The agents on the floor, to tell them of grants.
    pub fn know(&self, agents: impl IntoIterator<Item = (String, Arc<dyn Agent>)>) {
        lock(&self.state).agents.extend(agents);
    }

    async fn present(&self) -> Vec<String> {
        match self.floor.get().and_then(WeakFloor::upgrade) {
            Some(floor) => match floor.snapshot().await {
                Ok(s) => s.agents.iter().map(|a| a.0.to_string()).collect(),
                Err(_) => Vec::new(),
            },
            None => lock(&self.state).agents.keys().cloned().collect(),
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// What is asked of the floor manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// Find agents that can do this.
    Find(String),
    /// Add the Nth agent listed, or this hub reference.
    Add(String),
    /// Approve or deny access request N.
    Answer { id: usize, approve: bool },
    /// Access `class` on `furniture` for `agent` (`None`: for whoever asks).
    Access {
        agent: Option<String>,
        class: Class,
        furniture: String,
    },
    /// Nothing understood.
    Help,
}

/// Reads a message to the floor manager. `furniture` are the names of the floor's furniture,
/// which an access request must name.
pub fn parse(text: &str, furniture: &[String]) -> Ask {
    let body = text
        .replace("@floor-manager?", " ")
        .replace("@floor-manager", " ");
    let body = body.trim().trim_end_matches(['?', '.', '!']).trim();
    let words: Vec<String> = body
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '`' | ',' | ';' | ':' | '"' | '\'')))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    match lower.as_slice() {
        [] => return Ask::Help,
        [verb, n] if verb == "approve" || verb == "deny" => {
            if let Ok(id) = n.trim_start_matches('#').parse() {
                return Ask::Answer {
                    id,
                    approve: verb == "approve",
                };
            }
        }
        [verb, _] if verb == "add" => return Ask::Add(words[1].clone()),
        _ => {}
    }
    // An access request names a class and a piece of furniture of this floor.
    let class = lower.iter().find_map(|w| match w.as_str() {
        "read" => Some(Class::Read),
        "write" => Some(Class::Write),
        "execute" | "exec" => Some(Class::Execute),
        _ => None,
    });
    let piece = lower.iter().enumerate().find_map(|(i, w)| {
        (i > 0 && matches!(lower[i - 1].as_str(), "on" | "to" | "for"))
            .then(|| furniture.iter().find(|f| f.to_lowercase() == *w))
            .flatten()
    });
    let asks_access = lower.iter().any(|w| {
        matches!(
            w.as_str(),
            "access" | "grant" | "give" | "request" | "need" | "permission" | "allow"
        )
    });
    if let (Some(class), Some(furniture), true) = (class, piece, asks_access) {
        let agent = words
            .iter()
            .find(|w| w.starts_with('@') && w.len() > 1 && !w.eq_ignore_ascii_case(HANDLE))
            .map(|w| w.trim_end_matches(['?', '.', '!']).to_owned());
        return Ask::Access {
            agent,
            class,
            furniture: furniture.clone(),
        };
    }
    match capability_query(body) {
        q if q.is_empty() => Ask::Help,
        q => Ask::Find(q),
    }
}

/// What is asked, without the handle, the question form and punctuation: `@floor-manager? who
/// can analyse sales data?` → `analyse sales data`.
pub fn capability_query(text: &str) -> String {
    let mut t = text
        .replace("@floor-manager?", " ")
        .replace("@floor-manager", " ");
    t = t.trim().trim_end_matches(['?', '.', '!']).trim().to_owned();
    let lower = t.to_lowercase();
    for prefix in [
        "who can help me",
        "who can help with",
        "who can",
        "who could",
        "is there an agent that can",
        "is there an agent for",
        "is there anyone who can",
        "find an agent that can",
        "find an agent for",
        "find me an agent that can",
        "find me an agent for",
        "i need an agent that can",
        "i need an agent for",
    ] {
        if lower.starts_with(prefix) {
            let rest = t[prefix.len()..].trim();
            let lower = rest.to_lowercase();
            for verb in ["do ", "help with ", "handle ", "take care of "] {
                if lower.starts_with(verb) {
                    return rest[verb.len()..].trim().to_owned();
                }
            }
            return rest.to_owned();
        }
    }
    t
}

/// Whether a query is a capability's name (`crunch_numbers`, `find.price-v2`): one word with
/// `_`, `.` or `-` inside, as capability names are written.
pub fn is_capability_name(query: &str) -> bool {
    !query.is_empty()
        && !query.contains(char::is_whitespace)
        && query.contains(['_', '.', '-'])
        && query
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Agent Lobby's rule: a capability with `authorized_requesters` may only be asked of by those;
/// absent or empty means anyone.
pub fn open_to(capability: &Capability, requester: &str) -> bool {
    match &capability.authorized_requesters {
        None => true,
        Some(list) if list.is_empty() => true,
        Some(list) => list.iter().any(|h| h.to_string() == requester),
    }
}

/// Whether an agent with these capabilities is offered to `requester`: it has none (nothing is
/// restricted), or at least one is open to it.
pub fn offered_to(capabilities: &[Capability], requester: &str) -> bool {
    capabilities.is_empty() || capabilities.iter().any(|c| open_to(c, requester))
}

impl FloorManagerAgent {
    async fn find(&self, asker: &str, query: &str) -> String {
        let hub = match &self.hub {
            Err(e) => return format!("{asker} I cannot search a hub: {}", inert(&e.to_string())),
            Ok(hub) => hub,
        };
        // A capability's name (`crunch_numbers`) is looked up as one, as Agent Lobby's
        // DISCOVER_SERVICES does; anything else, and a name no agent offers, as words.
        let by_name = is_capability_name(query).then(|| SearchParams {
            capability: Some(query.to_owned()),
            limit: Some(LOOK_AT.to_string()),
            ..SearchParams::default()
        });
        let by_words = SearchParams {
            q: Some(query.to_owned()),
            limit: Some(LOOK_AT.to_string()),
            ..SearchParams::default()
        };
        let mut page = None;
        for params in by_name.iter().chain([&by_words]) {
            match hub.search(params).await {
                Err(e) => {
                    return format!(
                        "{asker} I could not search {}: {}",
                        hub.endpoint(""),
                        inert(&format!("{e:#}"))
                    );
                }
                Ok(p) if p.hits.is_empty() => page = Some(p),
                Ok(p) => {
                    page = Some(p);
                    break;
                }
            }
        }
        let Some(page) = page else {
            return format!("{asker} I could not search {}.", hub.endpoint(""));
        };
        if page.hits.is_empty() {
            return format!(
                "{asker} no agent on {} matches \"{}\".",
                hub.endpoint(""),
                inert(query)
            );
        }
        let present = self.present().await;
        let mut listed: Vec<&SearchHit> = Vec::new();
        let mut closed = 0usize;
        for hit in &page.hits {
            if listed.len() == LIMIT {
                break;
            }
            match self.capabilities(hub, hit).await {
                Ok(caps) if !offered_to(&caps, asker) => closed += 1,
                // A version that cannot be read is listed: the pull checks it anyway.
                _ => listed.push(hit),
            }
        }
        if listed.is_empty() {
            return format!(
                "{asker} {closed} agent(s) on {} match \"{}\", but their capabilities are only for other requesters (authorized_requesters).",
                hub.endpoint(""),
                inert(query)
            );
        }
        let mut text = format!(
            "{asker} these agents on {} can help with \"{}\":\n",
            hub.endpoint(""),
            inert(query)
        );
        let mut proposals = Vec::new();
        for (i, hit) in listed.iter().enumerate() {
            let agent = hit.name.rsplit('/').next().unwrap_or(&hit.name);
            let here = present.iter().any(|h| h == &format!("@{agent}"));
            text.push_str(&format!(
                "{}. `{}@{}` — \"{}\": \"{}\"{}{}\n",
                i + 1,
                hit.name,
                hit.version,
                // What publishers wrote is data: quoted, on one line, mentioning no one.
                inert(&hit.display_name),
                inert(&hit.tagline),
                if hit.deprecated { " (deprecated)" } else { "" },
                if here { " (already on this floor)" } else { "" },
            ));
            let major = hit.version.split('.').next().unwrap_or("0");
            proposals.push(format!("{}@^{major}", hit.name));
        }
        if closed > 0 {
            text.push_str(&format!(
                "({closed} more match, but only for other requesters.)\n"
            ));
        }
        text.push_str(if asker == "@user" {
            "To bring one onto this floor now: `@floor-manager? add 1` (it is pulled and locked as usual)."
        } else {
            "@user can bring one onto this floor with `@floor-manager? add 1` (it is pulled and locked as usual)."
        });
        lock(&self.state).proposals = proposals;
        text
    }

    /// The capabilities of a hit's version, from the hub's copy of its manifest.
    async fn capabilities(&self, hub: &Hub, hit: &SearchHit) -> Result<Vec<Capability>, String> {
        let name: AgentName = hit.name.parse().map_err(|e| format!("{e}"))?;
        let version = hub
            .version(&name, &hit.version)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let caps = version
            .manifest
            .get("capabilities")
            .cloned()
            .unwrap_or(serde_json::Value::Array(Vec::new()));
        serde_json::from_value(caps).map_err(|e| e.to_string())
    }

    async fn add(&self, asker: &str, what: &str) -> String {
        let reference = match what.parse::<usize>() {
            Ok(n) => match lock(&self.state).proposals.get(n.wrapping_sub(1)) {
                Some(r) => r.clone(),
                None => {
                    return format!(
                        "{asker} there is no agent {n} in my last list; ask me `who can …?` first."
                    );
                }
            },
            Err(_) => what.to_owned(),
        };
        let parsed: Reference = match reference.parse() {
            Ok(r) => r,
            Err(e) => {
                return format!(
                    "{asker} `{reference}` is not a hub agent reference (publisher/agent[@version]): {e}"
                );
            }
        };
        if asker != "@user" {
            return format!(
                "@user {asker} asks to bring `{parsed}` onto this floor. Only you can: `@floor-manager? add {parsed}`."
            );
        }
        let recruiter = match &self.recruiter {
            Ok(r) => r,
            Err(why) => {
                return format!(
                    "{asker} I cannot bring agents onto this floor ({why}); add `{parsed}` under `agents:` in the blueprint and run again."
                );
            }
        };
        let Some(floor) = self.floor.get().and_then(WeakFloor::upgrade) else {
            return format!("{asker} the floor is closing.");
        };
        let present = self.present().await;
        let (agent, pulled) = match recruiter.recruit(&parsed, &present).await {
            Ok(x) => x,
            Err(e) => return format!("{asker} `{parsed}` cannot join: {}", inert(&e.to_string())),
        };
        let handle = agent.handle.to_string();
        let mut everyone = present.clone();
        everyone.push(handle.clone());
        recruiter.joined(&agent, &everyone);
        lock(&self.state)
            .agents
            .insert(handle.clone(), Arc::clone(&agent.agent));
        let state = Arc::clone(&self.state);
        let joining = handle.clone();
        tokio::spawn(async move {
            if let Err(e) = floor.add_agent_when_idle(agent).await {
                let mut state = lock(&state);
                state.agents.remove(&joining);
                state.news.push(format!(
                    "(earlier: {joining} could not join the floor: {})",
                    inert(&e.to_string())
                ));
            }
        });
        format!(
            "{asker} {handle} (`{pulled}`, locked in ofc.lock) is started and joins the floor when this turn ends. To keep it for the next run, add `- {parsed}` under `agents:` in the blueprint."
        )
    }

    /// Whether `asker` may have `class` on `furniture` for `agent`, under the policies.
    fn decide(
        &self,
        asker: &str,
        agent: &str,
        class: Class,
        furniture: &str,
    ) -> (Decision, String) {
        let Some(policies) = &self.policies else {
            return (
                Decision::Ask,
                "this blueprint has no floor_manager policies".to_owned(),
            );
        };
        let (access, who) = if asker == agent {
            (class.access(), asker)
        } else {
            (Access::Grant, asker)
        };
        let Ok(handle) = AgentHandle::new(who.trim_start_matches('@')) else {
            return (Decision::Deny, format!("{who} is not an agent handle"));
        };
        let (decision, rule) = policies.decide_why(access, &handle, furniture);
        let why = match rule {
            Some(i) => format!("floor_manager.policies[{i}]"),
            None if decision == Decision::Approve => "auto_approve_read".to_owned(),
            None => "no floor_manager policy matches".to_owned(),
        };
        (decision, why)
    }

    async fn grant(
        &self,
        agent: &str,
        class: Class,
        furniture: &str,
        by: &str,
    ) -> Result<(), String> {
        let Some(floor) = &self.furniture else {
            return Err("this floor has no furniture".to_owned());
        };
        let target = lock(&self.state).agents.get(agent).cloned();
        let Some(target) = target else {
            return Err(format!("{agent} is not on this floor"));
        };
        floor
            .grant_to(agent, target.as_ref(), furniture, &[class], by)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn access(
        &self,
        asker: &str,
        agent: Option<String>,
        class: Class,
        furniture: &str,
    ) -> String {
        let agent = agent.unwrap_or_else(|| asker.to_owned());
        if agent == "@user" || agent == HANDLE {
            return format!("{asker} only agents on the floor hold grants.");
        }
        if !lock(&self.state).agents.contains_key(&agent) {
            return format!("{asker} {agent} is not on this floor.");
        }
        if asker == "@user" {
            return match self.grant(&agent, class, furniture, "@user").await {
                Ok(()) => format!("{asker} granted: {agent} holds {class} on `{furniture}`."),
                Err(e) => format!("{asker} cannot grant it: {e}"),
            };
        }
        let (decision, why) = self.decide(asker, &agent, class, furniture);
        match decision {
            Decision::Approve => match self.grant(&agent, class, furniture, HANDLE).await {
                Ok(()) => {
                    format!("{asker} granted ({why}): {agent} holds {class} on `{furniture}`.")
                }
                Err(e) => format!("{asker} cannot grant it: {e}"),
            },
            Decision::Deny => format!(
                "{asker} refused: {why} denies {} for {class} on `{furniture}`.",
                if asker == agent {
                    "it"
                } else {
                    "giving access"
                }
            ),
            Decision::Ask => {
                let queued = lock(&self.state).queue(AccessRequest {
                    id: 0,
                    agent: agent.clone(),
                    furniture: furniture.to_owned(),
                    class,
                    asked_by: asker.to_owned(),
                });
                let id = match queued {
                    Ok(id) => id,
                    Err(Full::Everyone(n)) => {
                        return format!(
                            "{asker} refused for now: {n} access requests are waiting for @user already; ask again once they are answered."
                        );
                    }
                    Err(Full::Asker(n)) => {
                        return format!(
                            "{asker} refused for now: {n} of your access requests are waiting for @user already; ask again once they are answered."
                        );
                    }
                };
                format!(
                    "@user {asker} asks for {class} on `{furniture}`{} ({why}, so you decide): `@floor-manager? approve {id}` or `@floor-manager? deny {id}`.",
                    if asker == agent {
                        String::new()
                    } else {
                        format!(" for {agent}")
                    }
                )
            }
        }
    }

    async fn answer(&self, asker: &str, id: usize, approve: bool) -> String {
        if asker != "@user" {
            return format!("{asker} only @user answers access requests.");
        }
        let request = {
            let mut state = lock(&self.state);
            let at = state.requests.iter().position(|r| r.id == id);
            at.map(|i| state.requests.remove(i))
        };
        let Some(r) = request else {
            return format!("{asker} no access request {id} is waiting.");
        };
        if !approve {
            return format!(
                "{asker} denied: {} does not get {} on `{}` (asked by {}).",
                r.agent, r.class, r.furniture, r.asked_by
            );
        }
        match self.grant(&r.agent, r.class, &r.furniture, "@user").await {
            Ok(()) => format!(
                "{asker} granted: {} holds {} on `{}` (asked by {}).",
                r.agent, r.class, r.furniture, r.asked_by
            ),
            Err(e) => format!("{asker} cannot grant it: {e}"),
        }
    }
}

#[async_trait]
impl Agent for FloorManagerAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(HANDLE.to_owned()),
            name: Some("Floor manager".to_owned()),
            tagline: Some(
                "Finds agents on the hub and adds them, and decides access: ask `@floor-manager? who can …?`"
                    .to_owned(),
            ),
            activation: Some(Activation::Mention),
            capabilities: vec![
                "agent-discovery".to_owned(),
                "agent-admission".to_owned(),
                "access-requests".to_owned(),
            ],
            ..AgentInfo::default()
        })
    }

    async fn should_wake(
        &self,
        _request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        Ok(ShouldWakeResponse::sleep())
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let (asker, text) = request
            .messages
            .iter()
            .rev()
            .find(|m| m.content.contains(HANDLE))
            .or(request.messages.last())
            .map(|m| (m.from.clone(), m.content.clone()))
            .unwrap_or_default();
        let furniture: Vec<String> = self
            .furniture
            .as_ref()
            .map(|f| f.pieces().iter().map(|p| p.name().to_owned()).collect())
            .unwrap_or_default();
        let answer = match parse(&text, &furniture) {
            Ask::Help => format!(
                "{asker} ask me `@floor-manager? who can <do something>?` (I search the hub), `add N` (bring an agent onto this floor; @user approves), `request write on <furniture>` or `approve N` / `deny N`."
            ),
            Ask::Find(query) => self.find(&asker, &query).await,
            Ask::Add(what) => self.add(&asker, &what).await,
            Ask::Answer { id, approve } => self.answer(&asker, id, approve).await,
            Ask::Access {
                agent,
                class,
                furniture,
            } => self.access(&asker, agent, class, &furniture).await,
        };
        let news = std::mem::take(&mut lock(&self.state).news);
        let answer = if news.is_empty() {
            answer
        } else {
            format!("{answer}\n{}", news.join("\n"))
        };
        if let Some(d) = &deltas {
            d.send(answer.clone());
        }
        Ok(RespondResponse::reply(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_becomes_a_capability_query() {
        assert_eq!(
            capability_query("@floor-manager? who can analyse sales data?"),
            "analyse sales data"
        );
        assert_eq!(
            capability_query("@floor-manager? Is there an agent for SQL."),
            "SQL"
        );
        assert_eq!(
            capability_query("@floor-manager? summarise PDFs"),
            "summarise PDFs"
        );
        assert_eq!(capability_query("@floor-manager?"), "");
        assert_eq!(
            capability_query("@floor-manager? who can do data analysis?"),
            "data analysis"
        );
    }

    #[test]
    fn messages_are_read_as_what_they_ask() {
        let f = vec!["board".to_owned(), "sandbox".to_owned()];
        assert_eq!(parse("@floor-manager? add 2", &f), Ask::Add("2".into()));
        assert_eq!(
            parse("@floor-manager? add `acme/sql-helper@^1`", &f),
            Ask::Add("acme/sql-helper@^1".into())
        );
        assert_eq!(
            parse("@floor-manager? approve #3", &f),
            Ask::Answer {
                id: 3,
                approve: true
            }
        );
        assert_eq!(
            parse("@floor-manager? deny 1.", &f),
            Ask::Answer {
                id: 1,
                approve: false
            }
        );
        assert_eq!(
            parse("@floor-manager? I need write access to board", &f),
            Ask::Access {
                agent: None,
                class: Class::Write,
                furniture: "board".into()
            }
        );
        assert_eq!(
            parse("@floor-manager? give @code execute on `sandbox`.", &f),
            Ask::Access {
                agent: Some("@code".into()),
                class: Class::Execute,
                furniture: "sandbox".into()
            }
        );
        // Furniture this floor does not have: not an access request.
        assert_eq!(
            parse("@floor-manager? I need write access to the wiki", &f),
            Ask::Find("I need write access to the wiki".into())
        );
        assert_eq!(
            parse("@floor-manager? who can read PDFs?", &f),
            Ask::Find("read PDFs".into())
        );
        assert_eq!(parse("@floor-manager?", &f), Ask::Help);
    }

    #[test]
    fn waiting_access_requests_are_deduplicated_and_bounded() {
        let mut state = State::default();
        let req = |agent: &str, furniture: &str| AccessRequest {
            id: 0,
            agent: agent.into(),
            furniture: furniture.into(),
            class: Class::Write,
            asked_by: agent.into(),
        };
        assert_eq!(state.queue(req("@a", "board")), Ok(1));
        // The same request again: the same number, nothing new waiting.
        assert_eq!(state.queue(req("@a", "board")), Ok(1));
        assert_eq!(state.requests.len(), 1);
        // One asker: at most MAX_PENDING_PER_ASKER waiting.
        for i in 1..MAX_PENDING_PER_ASKER {
            assert_eq!(state.queue(req("@a", &format!("f{i}"))), Ok(i + 1));
        }
        assert_eq!(
            state.queue(req("@a", "one-more")),
            Err(Full::Asker(MAX_PENDING_PER_ASKER))
        );
        // Everyone: at most MAX_PENDING_REQUESTS.
        let mut n = MAX_PENDING_PER_ASKER;
        'fill: for asker in 0.. {
            for f in 0..MAX_PENDING_PER_ASKER {
                if n == MAX_PENDING_REQUESTS {
                    break 'fill;
                }
                n += 1;
                assert_eq!(
                    state.queue(req(&format!("@x{asker}"), &format!("f{f}"))),
                    Ok(n)
                );
            }
        }
        assert_eq!(
            state.queue(req("@b", "board")),
            Err(Full::Everyone(MAX_PENDING_REQUESTS)),
            "full"
        );
        assert_eq!(state.requests.len(), MAX_PENDING_REQUESTS);
        // One answered (removed): room again, with a new number.
        state.requests.remove(0);
        assert_eq!(
            state.queue(req("@b", "board")),
            Ok(MAX_PENDING_REQUESTS + 1)
        );
    }

    #[test]
    fn authorised_requesters_close_a_capability_to_everyone_else() {
        let cap = |who: Option<Vec<&str>>| Capability {
            name: "c".into(),
            description: String::new(),
            input_schema: serde_json::json!({}),
            output_schema: serde_json::json!({}),
            keywords: Vec::new(),
            authorized_requesters: who.map(|w| {
                w.into_iter()
                    .map(|h| AgentHandle::new(h).unwrap())
                    .collect()
            }),
        };
        assert!(open_to(&cap(None), "@user"));
        assert!(open_to(&cap(Some(vec![])), "@user"));
        assert!(open_to(&cap(Some(vec!["planner"])), "@planner"));
        assert!(!open_to(&cap(Some(vec!["planner"])), "@user"));
        assert!(is_capability_name("crunch_numbers"));
        assert!(!is_capability_name("crunch numbers"));
        assert!(!is_capability_name("SQL"));
        assert!(offered_to(&[], "@user"));
        assert!(!offered_to(&[cap(Some(vec!["planner"]))], "@user"));
        assert!(offered_to(
            &[cap(Some(vec!["planner"])), cap(None)],
            "@user"
        ));
    }
}
