//! API tokens: `ofc_` + 43 characters of URL-safe base64 (32 random bytes); only their
//! SHA-256 is stored.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest as _, Sha256};

/// Every token starts with this, so secret scanners and people recognise it.
pub const TOKEN_PREFIX: &str = "ofc_";
/// Registry-API agent tokens start with this.
pub const AGENT_TOKEN_PREFIX: &str = "ofc_agent_";

/// A freshly generated secret, held as a [`secrecy::SecretString`]: zeroed on drop, and its
/// `Debug` is redacted. [`Secret::expose`] is the one way to its text.
#[derive(Clone)]
pub struct Secret(secrecy::SecretString);

impl Secret {
    /// The secret's text, for the one place it is shown or hashed.
    pub fn expose(&self) -> &str {
        secrecy::ExposeSecret::expose_secret(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A new random token with `prefix`.
pub fn generate_token(prefix: &str) -> Secret {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Secret(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)).into())
}

/// Hex SHA-256 of a token: what the database stores.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::{TOKEN_PREFIX, generate_token, hash_token};

    #[test]
    fn tokens_are_prefixed_and_hashed() {
        let t = generate_token(TOKEN_PREFIX);
        assert!(t.expose().starts_with("ofc_"));
        assert_eq!(t.expose().len(), 4 + 43);
        assert_eq!(hash_token(t.expose()).len(), 64);
        assert_ne!(hash_token(t.expose()), t.expose());
        assert_eq!(format!("{t:?}"), "Secret(<redacted>)");
    }
}
