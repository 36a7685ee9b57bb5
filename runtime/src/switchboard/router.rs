//! Moving messages: the floor side's inboxes are read and each member message is delivered
//! to the floor once ([`Switchboard::run_router`]); what the floor says is passed to the
//! members it names ([`Switchboard::run_events`]).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use index_schema::switchboard::{Action, Message, Receipt, check_id, check_name};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::journal::{Begun, transcript_holds};
use super::workspace::{ReadOutcome, shown};
use super::{Answer, METADATA_KEY, Pending, Switchboard, lock, now_iso};
use crate::floor::{Floor, FloorError, FloorEvent};
use crate::handle::{Handle, Speaker};
use crate::mention::{MentionKind, mentions};

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
        loop {
            // Quick looks while an answer is awaited (a floor turn waits on it), slow ones else.
            let every = if self.awaiting_answer() {
                self.settings.answer_scan_interval
            } else {
                self.settings.scan_interval
            };
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(every) => {}
            }
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
                    self.take(&floor, &name, &file).await;
                }
            }
        }
    }

    /// Delivers one file of `inbox/<inbox>/`.
    async fn take(&self, floor: &Floor, inbox: &str, file: &str) {
        if lock(&self.held).contains(&(inbox.to_owned(), file.to_owned())) {
            return;
        }
        let message = match self.ws.read(inbox, file, self.settings.settle) {
            ReadOutcome::Message(m) => *m,
            ReadOutcome::NotYet | ReadOutcome::Gone => return,
            ReadOutcome::Refused(reason) => return self.refuse(inbox, file, None, &reason),
        };
        if let Err(reason) = self.check_sender(inbox, &message) {
            return self.refuse(inbox, file, Some(&message), &reason);
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
            return;
        }
        let outcome = match self.take_pending(&message) {
            Some(pending) => self.answer(floor, pending, &message).await,
            None => self.post(floor, &message).await,
        };
        let key = (inbox.to_owned(), file.to_owned());
        match outcome {
            Ok(()) => self.finish(inbox, file, &message),
            Err(NotDelivered::Retry(reason)) => {
                // Left begun: tried again without a new journal line, and a restart in
                // between looks at the transcript (a delivery that may have reached the floor).
                if lock(&self.retrying)
                    .insert(key, message.id.clone())
                    .is_none()
                {
                    self.log(&format!("inbox/{inbox}/{} waits: {reason}", shown(file)));
                }
            }
            Err(NotDelivered::Refuse(reason)) => {
                lock(&self.retrying).remove(&key);
                let _ = self.journal.undone(&message.id);
                self.refuse(inbox, file, Some(&message), &reason);
            }
        }
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
            let delivered = match &b.transcript {
                Some(t) => transcript_holds(t, &b.id),
                None => Ok(false),
            };
            match delivered {
                Ok(true) => {
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
                Ok(false) => {
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
