//! Floor handles (`@code`) and the participants of a floor.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The handle of a floor participant: `[a-z0-9][a-z0-9_-]{0,63}`, compared case-insensitively.
///
/// Stored lowercase and without the `@`; shown and serialized with it (`"@code"`), the way the
/// OFC wire format writes `from` and `initiator`. Parsing accepts both `code` and `@code`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(String);

impl Handle {
    /// The longest handle, in bytes (all handle characters are ASCII).
    pub const MAX_LEN: usize = 64;

    /// The name of the human participant (`@user`).
    pub const USER: &'static str = "user";

    /// Parses `code` or `@code`, case-insensitively.
    pub fn new(input: &str) -> Result<Self> {
        let bare = input.strip_prefix('@').unwrap_or(input);
        let invalid = |reason| Error::InvalidHandle {
            input: input.to_owned(),
            reason,
        };
        let bytes = bare.as_bytes();
        match bytes.first() {
            None => return Err(invalid("empty")),
            Some(&first) if !is_handle_start(first) => {
                return Err(invalid("must start with a letter or a digit"));
            }
            Some(_) => {}
        }
        if bytes.len() > Self::MAX_LEN {
            return Err(invalid("longer than 64 characters"));
        }
        if !bytes.iter().all(|&b| is_handle_byte(b)) {
            return Err(invalid(
                "only ASCII letters, digits, `_` and `-` are allowed",
            ));
        }
        Ok(Self(bare.to_ascii_lowercase()))
    }

    /// The handle of the human participant, `@user`.
    pub fn user() -> Self {
        Self(Self::USER.to_owned())
    }

    /// Whether this is `@user`.
    pub fn is_user(&self) -> bool {
        self.0 == Self::USER
    }

    /// The lowercase name, without the `@`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `b` may start a handle.
pub(crate) fn is_handle_start(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Whether `b` may appear in a handle.
pub(crate) fn is_handle_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.0)
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.0)
    }
}

impl FromStr for Handle {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

impl Serialize for Handle {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Handle {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Who wrote a message on the floor.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Speaker {
    /// The human participant, `@user`.
    User,
    /// An agent of the floor.
    Agent(Handle),
}

impl Speaker {
    /// The handle this speaker is mentioned by (`@user` for the user).
    pub fn handle(&self) -> Handle {
        match self {
            Self::User => Handle::user(),
            Self::Agent(handle) => handle.clone(),
        }
    }

    /// The agent, if this speaker is one.
    pub fn agent(&self) -> Option<&Handle> {
        match self {
            Self::User => None,
            Self::Agent(handle) => Some(handle),
        }
    }
}

impl From<Handle> for Speaker {
    fn from(handle: Handle) -> Self {
        if handle.is_user() {
            Self::User
        } else {
            Self::Agent(handle)
        }
    }
}

impl fmt::Display for Speaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => write!(f, "@{}", Handle::USER),
            Self::Agent(handle) => handle.fmt(f),
        }
    }
}

impl fmt::Debug for Speaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Speaker {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Speaker {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Handle::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_bare_and_at_forms_case_insensitively() {
        assert_eq!(Handle::new("@Code").unwrap(), Handle::new("code").unwrap());
        assert_eq!(
            Handle::new("Floor-Manager").unwrap().as_str(),
            "floor-manager"
        );
        assert_eq!(Handle::new("a").unwrap().to_string(), "@a");
    }

    #[test]
    fn refuses_what_the_grammar_refuses() {
        for bad in [
            "",
            "@",
            "_x",
            "-x",
            "a.b",
            "a b",
            "é",
            "@@a",
            &"a".repeat(65),
        ] {
            assert!(Handle::new(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(Handle::new(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn speaker_round_trips_through_json() {
        let user: Speaker = serde_json::from_str("\"@User\"").unwrap();
        assert_eq!(user, Speaker::User);
        let agent: Speaker = serde_json::from_str("\"code\"").unwrap();
        assert_eq!(serde_json::to_string(&agent).unwrap(), "\"@code\"");
        assert!(serde_json::from_str::<Handle>("\"no way\"").is_err());
    }
}
