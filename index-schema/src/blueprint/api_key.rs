//! `api_key` (agent and `defaults`): the key itself, as the reference CLI takes it. It is
//! never shown: its `Debug` and its serialized form are redacted, so no transcript, session
//! log or `--json` output built from a blueprint can carry it. Only [`ApiKey::expose`] gives it,
//! to whoever sends it to the endpoint.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What an `api_key` shows in place of the key.
pub const REDACTED: &str = "[redacted]";

/// An endpoint's API key written in a blueprint.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key, for the `Authorization` header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({REDACTED})")
    }
}

impl Serialize for ApiKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(ApiKey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_shown() {
        let k = ApiKey::new("sk-live-4711");
        assert_eq!(k.expose(), "sk-live-4711");
        assert!(!format!("{k:?}").contains("4711"));
        assert_eq!(serde_json::to_string(&k).unwrap(), "\"[redacted]\"");
        let back: ApiKey = serde_json::from_str("\"sk-x\"").unwrap();
        assert_eq!(back.expose(), "sk-x");
    }
}
