//! Seed 004's Switchboard protocol: the documents of a `.switchboard/` workspace — the message
//! every agent writes into `inbox/<recipient>/`, the delivery receipt written to
//! `outbox/<sender>/`, and `server_info.json` — and the rules on agent names.
//!
//! Messages are read as the seed's schema writes them (camelCase, `replyTo`, `createdAt`).
//! A field the schema does not have is refused with its name: `metadata` is the schema's place
//! for anything else. Names follow the seed's rule (no `..`, `/` or `\`) and, because every
//! Switchboard agent of a floor is a floor participant, the floor's handle rule
//! (`[a-z0-9][a-z0-9_-]{0,63}`, any ASCII case, kept lowercase).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::source;
use crate::wire::Timestamp;

/// The largest message file read from an inbox, in bytes. A larger file is moved aside.
pub const MAX_MESSAGE_FILE_BYTES: u64 = 1024 * 1024;
/// The largest `payload`, in bytes (a floor message's own bound).
pub const MAX_PAYLOAD_BYTES: usize = 256 * 1024;
/// The longest `persona`, in bytes.
pub const MAX_PERSONA_BYTES: usize = 16 * 1024;
/// The longest agent or team name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// The longest message id, in bytes (it names the message's file).
pub const MAX_ID_BYTES: usize = 128;

/// The path of the first key that an object in `text` (valid JSON) holds twice, compared
/// after unescaping as serde_json compares them.
fn duplicate_key(text: &str) -> Option<FieldPath> {
    use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;

    struct Walk<'a> {
        path: FieldPath,
        found: &'a RefCell<Option<FieldPath>>,
    }
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0;
            while seq
                .next_element_seed(Walk {
                    path: self.path.index(i),
                    found: self.found,
                })?
                .is_some()
            {
                i += 1;
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut keys = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                let path = self.path.key(key.clone());
                if !keys.insert(key) {
                    *self.found.borrow_mut() = Some(path);
                    return Err(A::Error::custom("duplicate key"));
                }
                map.next_value_seed(Walk {
                    path,
                    found: self.found,
                })?;
            }
            Ok(())
        }
    }

    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let _ = Walk {
        path: FieldPath::root(),
        found: &found,
    }
    .deserialize(&mut de);
    found.into_inner()
}

/// What a message asks for (`action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Lead → agent: assign work.
    DelegateTask,
    /// Agent → reviewer: ask for a review.
    RequestReview,
    /// Agent → lead: return completed work.
    SubmitResult,
    /// Any → any: a progress note.
    StatusUpdate,
    /// Lead → terminal agent: a command to run.
    Execute,
}

impl Action {
    /// Every action, in the seed's order.
    pub const ALL: [Action; 5] = [
        Action::DelegateTask,
        Action::RequestReview,
        Action::SubmitResult,
        Action::StatusUpdate,
        Action::Execute,
    ];

    /// The spelling on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::DelegateTask => "delegate_task",
            Action::RequestReview => "request_review",
            Action::SubmitResult => "submit_result",
            Action::StatusUpdate => "status_update",
            Action::Execute => "execute",
        }
    }

    /// Whether the recipient is asked to act (and answer), rather than only told.
    pub fn asks(self) -> bool {
        matches!(
            self,
            Action::DelegateTask | Action::RequestReview | Action::Execute
        )
    }

    /// The action named `s`.
    pub fn parse(s: &str) -> Option<Action> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// The roles seed 004 lists for agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// `lead`
    #[serde(rename = "lead")]
    Lead,
    /// `coder 1`
    #[serde(rename = "coder 1")]
    Coder1,
    /// `coder 2`
    #[serde(rename = "coder 2")]
    Coder2,
    /// `reviewer`
    #[serde(rename = "reviewer")]
    Reviewer,
    /// `tester`
    #[serde(rename = "tester")]
    Tester,
    /// `researcher`
    #[serde(rename = "researcher")]
    Researcher,
    /// `execution`
    #[serde(rename = "execution")]
    Execution,
}

impl Role {
    /// Every role, in the seed's order.
    pub const ALL: [Role; 7] = [
        Role::Lead,
        Role::Coder1,
        Role::Coder2,
        Role::Reviewer,
        Role::Tester,
        Role::Researcher,
        Role::Execution,
    ];

    /// The spelling in the seed.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Lead => "lead",
            Role::Coder1 => "coder 1",
            Role::Coder2 => "coder 2",
            Role::Reviewer => "reviewer",
            Role::Tester => "tester",
            Role::Researcher => "researcher",
            Role::Execution => "execution",
        }
    }

    /// The role spelled `s`.
    pub fn parse(s: &str) -> Option<Role> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// `lead, coder 1, …` for messages.
    pub fn listed() -> String {
        Self::ALL
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Checks an agent (or team) name and answers it lowercase: first the seed's rule — no `..`,
/// `/` or `\`, which would leave `inbox/` — then the floor's handle rule.
pub fn check_name(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if name.contains("..") {
        return Err("must not contain `..`".into());
    }
    if name.contains('/') || name.contains('\\') {
        return Err("must not contain `/` or `\\`".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!("is longer than {MAX_NAME_BYTES} bytes"));
    }
    let b = name.as_bytes();
    if !b[0].is_ascii_alphanumeric() {
        return Err("must start with a letter or a digit".into());
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
    {
        return Err("may hold only ASCII letters, digits, `_` and `-`".into());
    }
    Ok(name.to_ascii_lowercase())
}

/// Checks a message id: it names the message's file (`<id>.json`) and its receipt
/// (`receipt_<id>.json`), so 1 to 128 letters, digits, `_`, `-` and `.`, not starting with `.`
/// and without `..`.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("is empty".into());
    }
    if id.len() > MAX_ID_BYTES {
        return Err(format!("is longer than {MAX_ID_BYTES} bytes"));
    }
    if id.starts_with('.') || id.contains("..") {
        return Err("must not start with `.` or contain `..`".into());
    }
    if !id
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
    {
        return Err("may hold only ASCII letters, digits, `_`, `-` and `.`".into());
    }
    Ok(())
}

/// A message id as the seed writes them: `msg_<unix milliseconds>_<random>`.
pub fn message_id(unix_millis: u128, random: u64) -> String {
    format!("msg_{unix_millis}_{random:016x}")
}

/// One message, as written to `.switchboard/inbox/<recipient>/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Message {
    /// `msg_<timestamp>_<random>`.
    pub id: String,
    /// What it asks for.
    pub action: Action,
    /// Who wrote it (a name without `@`).
    pub sender: String,
    /// Whose inbox it is for (a name without `@`).
    pub recipient: String,
    /// The task, review content, result summary…
    pub payload: String,
    /// The id of the message this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// Anything else, as key-value pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// The team, for a message sent to a team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Persona text for a role-based recipient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// When it was written (ISO 8601).
    pub created_at: String,
}

impl Message {
    /// Parses and checks a message file's text. Names come back lowercase.
    pub fn from_json(text: &str) -> Result<Message, Diagnostics> {
        let doc = source::parse_json(text)?;
        // serde_json keeps the last of a key given twice (`"sender":"worker","sender":"user"`
        // reads as `user`): such a message is refused, naming the key.
        if let Some(path) = duplicate_key(text.trim_start_matches('\u{feff}')) {
            return Err(Diagnostics::one(
                path,
                "duplicate key (a key may appear once)",
            ));
        }
        let mut m: Message = doc.deserialize()?;
        let mut d = Diagnostics::default();
        m.check(&mut d);
        if d.is_empty() {
            m.sender = m.sender.to_ascii_lowercase();
            m.recipient = m.recipient.to_ascii_lowercase();
            if let Some(t) = &mut m.team {
                *t = t.to_ascii_lowercase();
            }
        }
        d.into_result(()).map_err(|d| doc.locate(d))?;
        Ok(m)
    }

    /// Every rule on the fields (for messages built in code, too).
    pub fn validate(&self) -> Result<(), Diagnostics> {
        let mut d = Diagnostics::default();
        self.check(&mut d);
        d.into_result(())
    }

    fn check(&self, d: &mut Diagnostics) {
        let root = FieldPath::root();
        if let Err(e) = check_id(&self.id) {
            d.push(root.key("id"), e);
        }
        for (field, name) in [("sender", &self.sender), ("recipient", &self.recipient)] {
            if let Err(e) = check_name(name) {
                d.push(root.key(field), format!("`{}` {e}", shown(name)));
            }
        }
        if self.payload.len() > MAX_PAYLOAD_BYTES {
            d.push(
                root.key("payload"),
                format!(
                    "is {} bytes, more than {MAX_PAYLOAD_BYTES}",
                    self.payload.len()
                ),
            );
        }
        if let Some(r) = &self.reply_to
            && let Err(e) = check_id(r)
        {
            d.push(root.key("replyTo"), e);
        }
        if let Some(t) = &self.team
            && let Err(e) = check_name(t)
        {
            d.push(root.key("team"), format!("`{}` {e}", shown(t)));
        }
        if self
            .persona
            .as_ref()
            .is_some_and(|p| p.len() > MAX_PERSONA_BYTES)
        {
            d.push(
                root.key("persona"),
                format!("is longer than {MAX_PERSONA_BYTES} bytes"),
            );
        }
        if let Err(e) = Timestamp::parse(&self.created_at) {
            d.push(root.key("createdAt"), e.to_string());
        }
    }

    /// The file name in an inbox or archive: `<id>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.id)
    }

    /// The message as its file holds it (pretty JSON, as the seed's examples).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// A name shown in an error: at most 64 characters of it, control characters escaped.
fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(64).flat_map(char::escape_debug).collect();
    if s.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// The status of a delivery receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptStatus {
    /// The message reached its recipient.
    Delivered,
    /// The message was refused; `error` says why (ofc's addition: the seed shows only
    /// `delivered`, with `error` for the failure case).
    Rejected,
}

/// A delivery receipt, written to `.switchboard/outbox/<sender>/receipt_<message id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Receipt {
    /// `receipt_<message id>`.
    pub id: String,
    /// The message's id.
    pub in_reply_to: String,
    /// `delivered` (or `rejected`).
    pub status: ReceiptStatus,
    /// `Message delivered to '<recipient>' inbox`.
    pub summary: String,
    /// When (ISO 8601).
    pub processed_at: String,
    /// Why it was not delivered; `null` when it was.
    pub error: Option<String>,
}

impl Receipt {
    /// The receipt of a delivered message.
    pub fn delivered(message_id: &str, recipient: &str, processed_at: String) -> Receipt {
        Receipt {
            id: format!("receipt_{message_id}"),
            in_reply_to: message_id.to_owned(),
            status: ReceiptStatus::Delivered,
            summary: format!("Message delivered to '{recipient}' inbox"),
            processed_at,
            error: None,
        }
    }

    /// The receipt of a refused message.
    pub fn rejected(message_id: &str, error: String, processed_at: String) -> Receipt {
        Receipt {
            id: format!("receipt_{message_id}"),
            in_reply_to: message_id.to_owned(),
            status: ReceiptStatus::Rejected,
            summary: "Message not delivered".to_owned(),
            processed_at,
            error: Some(error),
        }
    }

    /// Its file name: `receipt_<message id>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.id)
    }
}

/// `.switchboard/server_info.json`: where the HTTP/SSE server listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerInfo {
    /// Its port.
    pub port: u16,
    /// Always `127.0.0.1`.
    pub host: String,
    /// `sse`.
    pub transport: String,
    /// `/sse`.
    pub sse_endpoint: String,
    /// `/messages`.
    pub messages_endpoint: String,
    /// `/health`.
    pub health_endpoint: String,
    /// The serving process.
    pub pid: u32,
    /// When it started (ISO 8601).
    pub started_at: String,
}

impl ServerInfo {
    /// The document for a server on 127.0.0.1:`port`.
    pub fn loopback(port: u16, pid: u32, started_at: String) -> ServerInfo {
        ServerInfo {
            port,
            host: "127.0.0.1".into(),
            transport: "sse".into(),
            sse_endpoint: "/sse".into(),
            messages_endpoint: "/messages".into(),
            health_endpoint: "/health".into(),
            pid,
            started_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(extra: &str) -> String {
        format!(
            r#"{{"id": "msg_1_ab", "action": "submit_result", "sender": "Worker", "recipient": "lead",
               "payload": "done", "replyTo": "msg_0_cd", "createdAt": "2025-01-01T00:00:00.000Z"{extra}}}"#
        )
    }

    #[test]
    fn a_message_of_the_seed_parses_and_names_are_lowercased() {
        let m = Message::from_json(&message("")).unwrap();
        assert_eq!(m.action, Action::SubmitResult);
        assert_eq!(m.sender, "worker");
        assert_eq!(m.reply_to.as_deref(), Some("msg_0_cd"));
        let again = Message::from_json(&m.to_json()).unwrap();
        assert_eq!(again, m);
    }

    #[test]
    fn unknown_fields_and_bad_values_are_named() {
        let e = Message::from_json(&message(r#", "priority": 1"#)).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "priority", "{e:?}");
        let bad = message("").replace("\"lead\"", "\"../../etc\"");
        let e = Message::from_json(&bad).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "recipient");
        assert!(e.0[0].message.contains("`..`"), "{}", e.0[0].message);
        assert_eq!(e.0[0].position.unwrap().line, 1);
        let bad = message("").replace("submit_result", "explode");
        assert_eq!(
            Message::from_json(&bad).unwrap_err().0[0].path.to_string(),
            "action"
        );
        let bad = message("").replace("2025-01-01T00:00:00.000Z", "yesterday");
        assert_eq!(
            Message::from_json(&bad).unwrap_err().0[0].path.to_string(),
            "createdAt"
        );
    }

    #[test]
    fn a_key_given_twice_is_refused_with_its_name() {
        let twice = message("").replace(
            r#""sender": "Worker","#,
            r#""sender": "Worker", "sender": "user","#,
        );
        let e = Message::from_json(&twice).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "sender", "{e:?}");
        assert!(e.0[0].message.contains("duplicate key"), "{e:?}");
        // The same key however it is escaped, and deeper in `metadata`.
        let escaped = message("").replace(
            r#""payload": "done","#,
            r#""payload": "done", "p\u0061yload": "x","#,
        );
        assert_eq!(
            Message::from_json(&escaped).unwrap_err().0[0]
                .path
                .to_string(),
            "payload"
        );
        let deep = message(r#", "metadata": {"a": [{"b": 1, "b": 2}]}"#);
        assert_eq!(
            Message::from_json(&deep).unwrap_err().0[0].path.to_string(),
            "metadata.a[0].b"
        );
        // The same key in two objects is no duplicate.
        Message::from_json(&message(
            r#", "metadata": {"a": {"id": 1}, "b": {"id": 2}}"#,
        ))
        .unwrap();
    }

    #[test]
    fn names_follow_the_seed_and_the_floor() {
        for bad in [
            "",
            "..",
            "a/b",
            "a\\b",
            "../../etc",
            "-x",
            "a b",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_name("Coder_1").unwrap(), "coder_1");
        for bad in ["", ".hidden", "a..b", "a/b", &"x".repeat(129)] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        check_id(&message_id(1_700_000_000_000, 7)).unwrap();
    }

    #[test]
    fn roles_are_the_seeds() {
        assert_eq!(Role::parse("coder 1"), Some(Role::Coder1));
        assert_eq!(Role::parse("coder"), None);
        let r: Role = serde_json::from_str("\"execution\"").unwrap();
        assert_eq!(r, Role::Execution);
    }

    #[test]
    fn receipts_are_the_seeds_shape() {
        let r = Receipt::delivered("msg_1", "lead", "2025-01-01T00:00:00.000Z".into());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"id": "receipt_msg_1", "inReplyTo": "msg_1", "status": "delivered",
                "summary": "Message delivered to 'lead' inbox",
                "processedAt": "2025-01-01T00:00:00.000Z", "error": null})
        );
    }
}
