//! Moving messages: the floor side's inboxes are read and each member message is delivered
//! to the floor once ([`Switchboard::run_router`]); what the floor says is passed to the
//! members it names ([`Switchboard::run_events`]).

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use index_schema::switchboard::{Action, Message, Receipt, check_id, check_name};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::journal::{Begun, Found, transcript_find};
use super::workspace::{ReadOutcome, shown};
use super::{Answer, METADATA_KEY, Pending, Switchboard, lock, now_iso};
use crate::floor::{Floor, FloorError, FloorEvent};
use crate::handle::{Handle, Speaker};
use crate::mention::{MentionKind, mentions};

/// Most message ids remembered as delivered in this run (for refusing a message that uses one
/// again). Past it the oldest are forgotten: a message reusing one of those is then refused
/// only when its archive (`archive/<inbox>/<id>.json`, or a file of its own name there)
/// holds that id — otherwise it is delivered like a new message.
pub(super) const MAX_DELIVERED_IDS: usize = 16_384;

/// The ids delivered in this run, the oldest forgotten past a bound.
#[derive(Debug)]
pub(super) struct DeliveredIds {
    order: VecDeque<String>,
    set: HashSet<String>,
    cap: usize,
}

impl DeliveredIds {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            order: VecDeque::new(),
            set: HashSet::new(),
            cap: cap.max(1),
        }
    }

    fn insert(&mut self, id: &str) {
        if self.set.insert(id.to_owned()) {
            self.order.push_back(id.to_owned());
            if self.order.len() > self.cap
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }

    fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }
}

/// Empty looks at the quick interval before the inbox reader backs off.
const QUICK_LOOKS: u32 = 8;

/// How often the inbox reader looks while an answer is awaited: every `quick` (2 ms) while
/// something comes, backing off by half again per empty look after [`QUICK_LOOKS`] of them, up
/// to `slow` (the usual interval, 25 ms); back to `quick` when something arrives or wakes it.
#[derive(Debug, Clone)]
pub(super) struct Backoff {
    quick: Duration,
    slow: Duration,
    every: Duration,
    empty: u32,
}

impl Backoff {
    pub(super) fn new(quick: Duration, slow: Duration) -> Self {
        Self {
            quick,
            slow: slow.max(quick),
            every: quick,
            empty: 0,
        }
    }

    /// The wait before the next look.
    pub(super) fn every(&self) -> Duration {
        self.every
    }

    /// A look that found nothing to do.
    pub(super) fn idle(&mut self) {
        self.empty = self.empty.saturating_add(1);
        if self.empty > QUICK_LOOKS {
            self.every = self.every.mul_f64(1.5).min(self.slow);
        }
    }

    /// Something came: quick looks again.
    pub(super) fn reset(&mut self) {
        self.every = self.quick;
        self.empty = 0;
    }
}

/// Whether the floor message `stored` (a transcript's `message`) is `message` delivered:
/// same sender, recipient and action in its Switchboard metadata, and its content the text
/// the payload became (or that text cut by the floor's reply cap, marked with `…`).
fn same_message(stored: &Value, message: &Message) -> bool {
    let sb = &stored["metadata"][METADATA_KEY];
    if sb["sender"] != message.sender.as_str()
        || sb["recipient"] != message.recipient.as_str()
        || sb["action"] != message.action.as_str()
    {
        return false;
    }
    let Some(content) = stored["content"].as_str() else {
        return false;
    };
    let payload = &message.payload;
    let r = &message.recipient;
    [
        payload.clone(),
        format!("@{r}? {payload}"),
        format!("@{r} {payload}"),
    ]
    .iter()
    .any(|text| {
        text == content
            || content
                .strip_suffix('…')
                .is_some_and(|cut| text.starts_with(cut))
    })
}

/// Why a message was not delivered this time.
enum NotDelivered {
    /// It stays in its inbox and is tried again.
    Retry(String),
    /// It is refused (moved aside).
    Refuse(String),
}

/// The floor message a member's Switchboard message becomes. A message that asks
/// (`delegate_task`, `request_review`, `execute`) requests its recipient (`@lead? …`); one
/// that tells names it (`@lead …`) — unless it answers the very agent that asked, which the
/// floor returns to anyway, or its payload already mentions the recipient that way.
pub fn floor_text(message: &Message, asker: Option<&str>) -> String {
    let recipient = &message.recipient;
    let found = mentions(&message.payload);
    let has = |kind: Option<MentionKind>| {
        found
            .iter()
            .any(|m| m.handle.as_str() == recipient && kind.is_none_or(|k| m.kind == k))
    };
    if message.action.asks() {
        if has(Some(MentionKind::Request)) {
            message.payload.clone()
        } else {
            format!("@{recipient}? {}", message.payload)
        }
    } else if asker == Some(recipient.as_str()) || has(None) {
        message.payload.clone()
    } else {
        format!("@{recipient} {}", message.payload)
    }
}

/// The floor message's metadata: `{"switchboard": {id, action, sender, recipient, replyTo?,
/// team?, persona?, metadata?, posted?}}`.
pub fn metadata_of(message: &Message, posted: bool) -> Map<String, Value> {
    let mut sb = Map::new();
    sb.insert("id".into(), json!(message.id));
    sb.insert("action".into(), json!(message.action.as_str()));
    sb.insert("sender".into(), json!(message.sender));
    sb.insert("recipient".into(), json!(message.recipient));
    if let Some(r) = &message.reply_to {
        sb.insert("replyTo".into(), json!(r));
    }
    if let Some(t) = &message.team {
        sb.insert("team".into(), json!(t));
    }
    if let Some(p) = &message.persona {
        sb.insert("persona".into(), json!(p));
    }
    if let Some(m) = &message.metadata {
        sb.insert("metadata".into(), Value::Object(m.clone()));
    }
    if posted {
        sb.insert("posted".into(), json!(true));
    }
    let mut out = Map::new();
    out.insert(METADATA_KEY.into(), Value::Object(sb));
    out
}

/// Whether a journal entry names only places of the workspace (checked names, a plain
/// `*.json` file name) and a transcript in the floor's transcript directory.
fn sane(b: &Begun, logs: Option<&std::path::Path>) -> bool {
    let name_ok = |n: &str| check_name(n).is_ok_and(|lower| lower == n);
    let file_ok = b.file.ends_with(".json")
        && !b.file.starts_with('.')
        && !b.file.contains(['/', '\\', '\0']);
    let transcript_ok = b.transcript.as_ref().is_none_or(|t| {
        logs.is_some_and(|d| t.parent() == Some(d)) && t.extension().is_some_and(|e| e == "jsonl")
    });
    check_id(&b.id).is_ok() && name_ok(&b.inbox) && name_ok(&b.sender) && file_ok && transcript_ok
}

/// The Switchboard part of a floor message's metadata.
fn switchboard_of(message: &index_schema::wire::Message) -> Option<&Map<String, Value>> {
    message.metadata.as_ref()?.get(METADATA_KEY)?.as_object()
}

impl Switchboard {
    /// Reads the floor side's inboxes until stopped or the floor closes.
    pub(super) async fn run_router(self: Arc<Self>) {
        let mut reported: BTreeSet<String> = BTreeSet::new();
        // Inboxes said to hold more entries than one look reads (said once).
        let mut crowded: BTreeSet<String> = BTreeSet::new();
        let mut backoff = Backoff::new(
            self.settings.answer_scan_interval,
            self.settings.scan_interval,
        );
        loop {
            // Quick looks while an answer is awaited (a floor turn waits on it), backing off
            // while they find nothing; slow ones else.
            let every = if self.awaiting_answer() {
                backoff.every()
            } else {
                backoff.reset();
                self.settings.scan_interval
            };
            let mut progress = tokio::select! {
                () = self.stop.cancelled() => return,
                () = self.wake.notified() => true,
                () = tokio::time::sleep(every) => false,
            };
            self.looks.fetch_add(1, Ordering::Relaxed);
            let Some(floor) = self.floor() else { return };
            self.forget_vanished();
            let names: Vec<String> = lock(&self.members).floor_side.iter().cloned().collect();
            for name in names {
                let listing = {
                    let held = lock(&self.held);
                    self.ws.list(
                        &name,
                        self.settings.batch,
                        self.settings.max_inbox_entries,
                        |file| held.contains(&(name.clone(), file.to_owned())),
                    )
                };
                let files = match listing {
                    Ok(listing) => {
                        reported.remove(&name);
                        if !listing.more {
                            crowded.remove(&name);
                        } else if crowded.insert(name.clone()) {
                            self.log(&format!(
                                "inbox/{name} holds more than {} entries; only the first {} are looked at each time (remove what is not a message)",
                                self.settings.max_inbox_entries, self.settings.max_inbox_entries
                            ));
                        }
                        listing.names
                    }
                    Err(e) => {
                        // Said once, not at every look.
                        if reported.insert(name.clone()) {
                            self.log(&format!(
                                "inbox/{name} is not read: {}",
                                shown(&e.to_string())
                            ));
                        }
                        continue;
                    }
                };
                for file in files {
                    if self.stop.is_cancelled() {
                        return;
                    }
                    progress |= self.take(&floor, &name, &file).await;
                }
            }
            if progress {
                backoff.reset();
            } else {
                backoff.idle();
            }
        }
    }

    /// Delivers one file of `inbox/<inbox>/`; whether it was settled (delivered or refused)
    /// rather than left waiting.
    async fn take(&self, floor: &Floor, inbox: &str, file: &str) -> bool {
        let key = (inbox.to_owned(), file.to_owned());
        if lock(&self.held).contains(&key) {
            return false;
        }
        let message = match self.ws.read(inbox, file, self.settings.settle) {
            ReadOutcome::Message(m) => *m,
            ReadOutcome::NotYet | ReadOutcome::Gone => return false,
            ReadOutcome::Refused(reason) => {
                self.refuse(inbox, file, None, &reason);
                return true;
            }
        };
        if let Err(reason) = self.check_sender(inbox, &message) {
            self.refuse(inbox, file, Some(&message), &reason);
            return true;
        }
        // Checked when first tried (a message waiting for the floor is its own delivery).
        if !lock(&self.retrying).contains_key(&key)
            && let Err(reason) = self.check_unique(inbox, file, &message)
        {
            self.refuse(inbox, file, Some(&message), &reason);
            return true;
        }
        let begun = Begun {
            id: message.id.clone(),
            inbox: inbox.to_owned(),
            file: file.to_owned(),
            sender: message.sender.clone(),
            transcript: self.transcript(),
        };
        if let Err(e) = self.journal.begin(&begun) {
            // Without the journal a kill could deliver it twice: not delivered now.
            self.log(&format!(
                "cannot write the journal, so inbox/{inbox}/{} waits: {e}",
                shown(file)
            ));
            return false;
        }
        let outcome = match self.take_pending(&message) {
            Some(pending) => self.answer(floor, pending, &message).await,
            None => self.post(floor, &message).await,
        };
        match outcome {
            Ok(()) => {
                self.finish(inbox, file, &message);
                true
            }
            Err(NotDelivered::Retry(reason)) => {
                // Left begun: tried again without a new journal line, and a restart in
                // between looks at the transcript (a delivery that may have reached the floor).
                if lock(&self.retrying)
                    .insert(key, message.id.clone())
                    .is_none()
                {
                    self.log(&format!("inbox/{inbox}/{} waits: {reason}", shown(file)));
                }
                false
            }
            Err(NotDelivered::Refuse(reason)) => {
                lock(&self.retrying).remove(&key);
                let _ = self.journal.undone(&message.id);
                self.refuse(inbox, file, Some(&message), &reason);
                true
            }
        }
    }

    /// A message id is used once: not one delivered in this run (the last
    /// [`MAX_DELIVERED_IDS`]), nor one being delivered from another file, nor one archived in
    /// `archive/<inbox>/` (as `<id>.json`, the seed's naming, or under this file's name —
    /// archiving keeps a file's name).
    fn check_unique(&self, inbox: &str, file: &str, message: &Message) -> Result<(), String> {
        let id = &message.id;
        if lock(&self.delivered).contains(id) {
            return Err(format!(
                "reuses the id `{id}` of a message already delivered in this run (each message needs a new id)"
            ));
        }
        if let Some(b) = self.journal.open_entry(id)
            && (b.inbox != inbox || b.file != file)
        {
            return Err(format!(
                "reuses the id `{id}` of inbox/{}/{}, which is being delivered (each message needs a new id)",
                b.inbox,
                shown(&b.file)
            ));
        }
        let by_id = format!("{id}.json");
        let names: &[&str] = if by_id == file {
            &[file]
        } else {
            &[&by_id, file]
        };
        for name in names {
            if self
                .ws
                .archived_message(inbox, name)
                .is_some_and(|m| m.id == *id)
            {
                return Err(format!(
                    "reuses the id `{id}` of archive/{inbox}/{}, delivered before (each message needs a new id)",
                    shown(name)
                ));
            }
        }
        Ok(())
    }

    /// The rules on who may write to the floor side: a member, to the inbox the message
    /// names, not to itself.
    fn check_sender(&self, inbox: &str, message: &Message) -> Result<(), String> {
        if message.recipient != inbox {
            return Err(format!(
                "is addressed to `{}` but lies in inbox/{inbox}",
                message.recipient
            ));
        }
        if message.sender == message.recipient {
            return Err("is addressed to its own sender".into());
        }
        if !self.is_member(&message.sender) {
            return Err(if self.is_floor_side(&message.sender) {
                format!(
                    "claims to come from `{}`, which is not a Switchboard agent of this floor (only file and MCP agents write messages)",
                    message.sender
                )
            } else {
                format!(
                    "claims to come from `{}`, which is no agent of this floor",
                    message.sender
                )
            });
        }
        Ok(())
    }

    /// Hands a member's message to the respond call waiting for it, and waits until the
    /// floor has stored it.
    async fn answer(
        &self,
        floor: &Floor,
        pending: Pending,
        message: &Message,
    ) -> Result<(), NotDelivered> {
        let mut events = floor.subscribe();
        let answer = Answer {
            content: floor_text(message, Some(&pending.asker)),
            metadata: metadata_of(message, false),
        };
        if pending.reply.send(answer).is_err() {
            // The call ended meanwhile (its deadline): the member speaks on its own.
            return self.post(floor, message).await;
        }
        let wait = tokio::time::sleep(self.settings.store_wait);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                () = &mut wait => {
                    return Err(NotDelivered::Retry(
                        "the floor did not store the answer (its call had ended)".into(),
                    ));
                }
                event = events.recv() => match event {
                    Ok(FloorEvent::Message { message: stored })
                        if switchboard_of(&stored)
                            .and_then(|s| s.get("id"))
                            .is_some_and(|id| *id == message.id) =>
                    {
                        return Ok(());
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        return Err(NotDelivered::Retry("the floor closed".into()));
                    }
                },
            }
        }
    }

    /// Posts a member's message on the floor in its own name.
    async fn post(&self, floor: &Floor, message: &Message) -> Result<(), NotDelivered> {
        let from = Handle::new(&message.sender).map_err(|e| NotDelivered::Refuse(e.to_string()))?;
        match floor
            .post_as(
                from,
                floor_text(message, None),
                Some(metadata_of(message, true)),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(FloorError::QueueFull(n)) => Err(NotDelivered::Retry(format!(
                "{n} messages already wait for the floor"
            ))),
            Err(FloorError::Closed) => Err(NotDelivered::Retry("the floor is closed".into())),
            Err(e) => Err(NotDelivered::Refuse(e.to_string())),
        }
    }

    /// Closes the journal entries of waiting messages whose file is gone from its inbox (taken
    /// away by someone else): they are no longer delivered, and their entries would stay open.
    fn forget_vanished(&self) {
        let waiting: Vec<((String, String), String)> = lock(&self.retrying)
            .iter()
            .map(|(k, id)| (k.clone(), id.clone()))
            .collect();
        for ((inbox, file), id) in waiting {
            if !self.ws.exists("inbox", &inbox, &file) {
                lock(&self.retrying).remove(&(inbox.clone(), file.clone()));
                let _ = self.journal.undone(&id);
                self.log(&format!(
                    "inbox/{inbox}/{} was waiting to be delivered and is gone; not delivered",
                    shown(&file)
                ));
            }
        }
    }

    /// After delivery: the receipt, the archive, the journal.
    fn finish(&self, inbox: &str, file: &str, message: &Message) {
        lock(&self.retrying).remove(&(inbox.to_owned(), file.to_owned()));
        lock(&self.delivered).insert(&message.id);
        let receipt = Receipt::delivered(&message.id, &message.recipient, now_iso());
        if let Err(e) = self.ws.write_receipt(&message.sender, &receipt) {
            self.log(&format!("cannot write the receipt of {}: {e}", message.id));
        }
        match self.ws.archive(inbox, file) {
            Ok(_) => {
                let _ = self.journal.done(&message.id);
                self.log(&format!(
                    "{} {} → {}: delivered to the floor (inbox/{inbox}/{} archived)",
                    message.action.as_str(),
                    message.sender,
                    message.recipient,
                    shown(file)
                ));
            }
            Err(e) => {
                // Left open in the journal and held: a restart finishes it without
                // delivering it again.
                lock(&self.held).insert((inbox.to_owned(), file.to_owned()));
                self.log(&format!(
                    "delivered {} but cannot archive inbox/{inbox}/{}: {e}",
                    message.id,
                    shown(file)
                ));
            }
        }
    }

    /// Moves a file aside with its reason (and tells a member sender with a `rejected`
    /// receipt).
    fn refuse(&self, inbox: &str, file: &str, message: Option<&Message>, reason: &str) {
        match self.ws.reject(inbox, file) {
            Ok(_) => self.log(&format!(
                "refused inbox/{inbox}/{}: {reason}; moved to rejected/{inbox}/",
                shown(file)
            )),
            Err(e) => {
                lock(&self.held).insert((inbox.to_owned(), file.to_owned()));
                self.log(&format!(
                    "refused inbox/{inbox}/{}: {reason}; it cannot be moved aside ({e}) and is left alone",
                    shown(file)
                ));
            }
        }
        if let Some(m) = message
            && self.is_member(&m.sender)
        {
            let receipt = Receipt::rejected(&m.id, reason.to_owned(), now_iso());
            if let Err(e) = self.ws.write_receipt(&m.sender, &receipt) {
                self.log(&format!("cannot write the receipt of {}: {e}", m.id));
            }
        }
    }

    /// Finishes what the last run began (see [`super::journal`]). The journal is a file in
    /// the workspace, which other writers share: an entry whose names would leave the
    /// workspace, or whose transcript is not one of the floor's, is ignored (and said).
    pub(super) fn recover(&self, open: Vec<Begun>) {
        let logs = self
            .transcript()
            .and_then(|t| t.parent().map(std::path::Path::to_path_buf));
        for b in open {
            if !sane(&b, logs.as_deref()) {
                let _ = self.journal.undone(&b.id);
                self.log(&format!(
                    "ignored a journal entry that names a place outside the workspace or the floor's transcripts ({})",
                    shown(&b.id)
                ));
                continue;
            }
            let still_there = self.ws.exists("inbox", &b.inbox, &b.file);
            if !still_there {
                let _ = self.journal.done(&b.id);
                continue;
            }
            // The file must still hold the message begun, and the transcript that message
            // (not only its id: an id used again by another message proves nothing).
            let message = match self.ws.read(&b.inbox, &b.file, self.settings.settle) {
                ReadOutcome::Message(m)
                    if m.id == b.id && m.sender == b.sender && m.recipient == b.inbox =>
                {
                    *m
                }
                _ => {
                    let _ = self.journal.undone(&b.id);
                    self.log(&format!(
                        "inbox/{}/{} no longer holds the message {} begun before ofc stopped; it is read as a new message",
                        b.inbox,
                        shown(&b.file),
                        b.id
                    ));
                    continue;
                }
            };
            let delivered = match &b.transcript {
                Some(t) => transcript_find(t, &b.id, |stored| same_message(stored, &message)),
                None => Ok(Found::Nothing),
            };
            match delivered {
                Ok(Found::Same) => {
                    lock(&self.delivered).insert(&b.id);
                    if !self.ws.has_receipt(&b.sender, &b.id) {
                        let receipt = Receipt::delivered(&b.id, &b.inbox, now_iso());
                        let _ = self.ws.write_receipt(&b.sender, &receipt);
                    }
                    match self.ws.archive(&b.inbox, &b.file) {
                        Ok(_) => {
                            let _ = self.journal.done(&b.id);
                            self.log(&format!(
                                "{} had reached the floor before ofc stopped; archived now, not delivered again",
                                b.id
                            ));
                        }
                        Err(e) => {
                            lock(&self.held).insert((b.inbox.clone(), b.file.clone()));
                            self.log(&format!("cannot archive {}: {e}", b.id));
                        }
                    }
                }
                Ok(Found::Other) => {
                    let _ = self.journal.undone(&b.id);
                    self.refuse(
                        &b.inbox,
                        &b.file,
                        Some(&message),
                        &format!(
                            "reuses the id `{}` of another message the floor took before ofc stopped (each message needs a new id)",
                            b.id
                        ),
                    );
                }
                Ok(Found::Nothing) => {
                    let _ = self.journal.undone(&b.id);
                    self.log(&format!(
                        "{} had not reached the floor when ofc stopped; it is delivered now",
                        b.id
                    ));
                }
                Err(e) => {
                    lock(&self.held).insert((b.inbox.clone(), b.file.clone()));
                    self.log(&format!(
                        "cannot tell whether {} reached the floor before ofc stopped (its transcript: {e}); it is left in inbox/{}/",
                        b.id, b.inbox
                    ));
                }
            }
        }
    }

    /// Passes what the floor says to the members: a message naming a member becomes a
    /// `status_update` in its inbox; an answer to a member that posted on its own becomes a
    /// `submit_result` (with `replyTo` its message). Follows roster changes.
    pub(super) async fn run_events(self: Arc<Self>, mut events: broadcast::Receiver<FloorEvent>) {
        // Posted member messages not yet started: floor message id → (member, Switchboard id).
        let mut posted: VecDeque<(String, String, String)> = VecDeque::new();
        let mut poster: Option<(String, String)> = None;
        let mut call: Option<(Handle, Option<Speaker>)> = None;
        loop {
            let event = tokio::select! {
                () = self.stop.cancelled() => return,
                event = events.recv() => match event {
                    Ok(e) => e,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        self.log(&format!("fell {n} floor events behind; some members were not told"));
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            };
            match event {
                FloorEvent::Message { message } => {
                    if let Some(sb) = switchboard_of(&message)
                        && sb.get("posted") == Some(&Value::Bool(true))
                        && let (Some(Value::String(sender)), Some(Value::String(id))) =
                            (sb.get("sender"), sb.get("id"))
                    {
                        posted.push_back((message.id.clone(), sender.clone(), id.clone()));
                        if posted.len() > 1024 {
                            posted.pop_front();
                        }
                    }
                    self.tell(&message);
                    self.answer_poster(&message, poster.as_ref(), call.as_ref());
                }
                FloorEvent::TurnStarted { message_id, .. } => {
                    poster = posted
                        .iter()
                        .position(|(m, _, _)| *m == message_id)
                        .and_then(|i| posted.remove(i))
                        .map(|(_, member, id)| (member, id));
                }
                FloorEvent::Responding {
                    agent, initiator, ..
                } => call = Some((agent, initiator)),
                FloorEvent::TurnEnded { .. } => {
                    poster = None;
                    call = None;
                }
                FloorEvent::Roster { agents } => self.set_roster(agents),
                FloorEvent::Closed => return,
                _ => {}
            }
        }
    }

    /// A `status_update` to every member the message names without asking (`@name`).
    fn tell(&self, message: &index_schema::wire::Message) {
        let author = message.from.trim_start_matches('@').to_owned();
        let mut told = BTreeSet::new();
        for m in mentions(&message.content) {
            let name = m.handle.as_str();
            if m.kind != MentionKind::Reference
                || name == author
                || !self.is_member(name)
                || !told.insert(name.to_owned())
            {
                continue;
            }
            let meta = json!({"floor": {"messageId": message.id}});
            let Value::Object(meta) = meta else { continue };
            let note = self.message_to(
                Action::StatusUpdate,
                &author,
                name,
                message.content.clone(),
                Some(meta),
            );
            if let Err(e) = self.send_to_member(&note) {
                self.log(&format!("cannot tell @{name}: {e}"));
            }
        }
    }

    /// The answer to a member's own post, into its inbox.
    fn answer_poster(
        &self,
        message: &index_schema::wire::Message,
        poster: Option<&(String, String)>,
        call: Option<&(Handle, Option<Speaker>)>,
    ) {
        let (Some((member, question)), Some((agent, Some(Speaker::Agent(initiator))))) =
            (poster, call)
        else {
            return;
        };
        let from = message.from.trim_start_matches('@');
        if initiator.as_str() != member || agent.as_str() != from || from == member {
            return;
        }
        // Asked again by the agent, the member gets it through its own respond call.
        let asks_it = mentions(&message.content)
            .iter()
            .any(|m| m.is_request() && m.handle.as_str() == member);
        if asks_it {
            return;
        }
        let meta = json!({"floor": {"messageId": message.id}});
        let Value::Object(meta) = meta else { return };
        let mut result = self.message_to(
            Action::SubmitResult,
            from,
            member,
            message.content.clone(),
            Some(meta),
        );
        result.reply_to = Some(question.clone());
        if let Err(e) = self.send_to_member(&result) {
            self.log(&format!("cannot pass the answer to @{member}: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(action: Action, recipient: &str, payload: &str) -> Message {
        Message {
            id: "msg_1".into(),
            action,
            sender: "worker".into(),
            recipient: recipient.into(),
            payload: payload.into(),
            reply_to: None,
            metadata: None,
            team: None,
            persona: None,
            created_at: "2025-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn the_reader_backs_off_while_nothing_comes() {
        let quick = Duration::from_millis(2);
        let slow = Duration::from_millis(25);
        let mut b = Backoff::new(quick, slow);
        for _ in 0..QUICK_LOOKS {
            assert_eq!(b.every(), quick);
            b.idle();
        }
        assert_eq!(b.every(), quick);
        let mut seen = vec![];
        for _ in 0..100 {
            b.idle();
            seen.push(b.every());
        }
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert!(seen[0] > quick && seen[0] < slow, "{seen:?}");
        assert_eq!(*seen.last().unwrap(), slow);
        // Reaches the slow interval within a dozen more empty looks.
        assert_eq!(seen[7], slow, "{seen:?}");
        b.reset();
        assert_eq!(b.every(), quick);
    }

    #[test]
    fn delivered_ids_are_bounded_the_oldest_forgotten() {
        let mut d = DeliveredIds::new(3);
        for id in ["a", "b", "c", "a", "d"] {
            d.insert(id);
        }
        assert!(!d.contains("a"));
        assert!(d.contains("b") && d.contains("c") && d.contains("d"));
        assert_eq!(d.order.len(), 3);
    }

    #[test]
    fn a_stored_message_is_the_same_only_with_its_sender_recipient_and_payload() {
        let m = message(Action::StatusUpdate, "lead", "first");
        let stored = |from: &str, to: &str, content: &str| {
            json!({"content": content, "metadata": {"switchboard":
                {"id": "msg_1", "action": "status_update", "sender": from, "recipient": to}}})
        };
        assert!(same_message(&stored("worker", "lead", "@lead first"), &m));
        assert!(same_message(&stored("worker", "lead", "first"), &m));
        assert!(same_message(&stored("worker", "lead", "@lead fi…"), &m));
        assert!(!same_message(&stored("worker", "lead", "@lead other"), &m));
        assert!(!same_message(&stored("w2", "lead", "@lead first"), &m));
        assert!(!same_message(&stored("worker", "user", "@lead first"), &m));
    }

    #[test]
    fn asking_requests_the_recipient_and_telling_names_it() {
        let ask = message(Action::RequestReview, "reviewer", "look at x");
        assert_eq!(floor_text(&ask, None), "@reviewer? look at x");
        let ask = message(Action::DelegateTask, "reviewer", "@reviewer? look at x");
        assert_eq!(floor_text(&ask, None), "@reviewer? look at x");
        let result = message(Action::SubmitResult, "lead", "done");
        assert_eq!(floor_text(&result, Some("lead")), "done");
        assert_eq!(floor_text(&result, None), "@lead done");
        assert_eq!(floor_text(&result, Some("user")), "@lead done");
        let note = message(Action::StatusUpdate, "lead", "as @lead said, halfway");
        assert_eq!(floor_text(&note, None), "as @lead said, halfway");
        let m = metadata_of(&result, true);
        assert_eq!(m["switchboard"]["id"], "msg_1");
        assert_eq!(m["switchboard"]["posted"], true);
        assert_eq!(m["switchboard"].get("persona"), None);
        let mut with = message(Action::StatusUpdate, "lead", "x");
        with.persona = Some("You review.".into());
        assert_eq!(
            metadata_of(&with, true)["switchboard"]["persona"],
            "You review."
        );
    }
}
