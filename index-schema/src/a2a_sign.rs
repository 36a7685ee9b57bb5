//! Signatures of A2A agent cards (A2A specification §8.4, "Agent Card Signing"): a JWS
//! (RFC 7515) with an Ed25519 key (`alg` `EdDSA`, RFC 8037) whose payload is the RFC 8785
//! canonical form ([`crate::jcs`]) of the card without its `signatures` member, kept in the
//! card's `signatures` array as `{protected, signature}` (the payload is detached: a verifier
//! rebuilds it from the card it holds).
//!
//! The protected header is `{"alg":"EdDSA","kid":…,"typ":"JOSE"}`; `kid` is the key's RFC 7638
//! JWK thumbprint, and [`CardSigner::jwks`] is the JWK Set a verifier finds the key in.
//! Signatures already in a card (its publisher's) are kept: the payload leaves the whole array
//! out, so adding one does not break the others.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::envelope::{PublicKey, SecretKey};
use crate::jcs;

/// The JWS algorithm of the signatures made here (Ed25519, RFC 8037).
pub const ALG: &str = "EdDSA";

/// Signs agent cards with one Ed25519 key.
pub struct CardSigner {
    key: SecretKey,
    kid: String,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl CardSigner {
    /// A signer with `key`.
    pub fn new(key: SecretKey) -> Self {
        let kid = thumbprint(&key.public_key());
        CardSigner { key, kid }
    }

    /// The key id in every signature's protected header: the RFC 7638 thumbprint of the
    /// public key's JWK.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as a JWK (RFC 8037 `OKP`, with `kid`, `alg` and `use`).
    pub fn jwk(&self) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.key.public_key().to_bytes()),
            "kid": self.kid,
            "alg": ALG,
            "use": "sig",
        })
    }

    /// The JWK Set holding [`CardSigner::jwk`] (RFC 7517 §5).
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk()] })
    }

    /// Adds this key's signature to `card`'s `signatures` (made an array when it is missing or
    /// is not one).
    pub fn sign(&self, card: &mut Map<String, Value>) {
        let header = json!({"alg": ALG, "kid": self.kid, "typ": "JOSE"});
        let protected = URL_SAFE_NO_PAD.encode(header.to_string());
        let input = signing_input(&protected, &payload(card));
        let signature = URL_SAFE_NO_PAD.encode(self.key.sign(input.as_bytes()));
        let sig = json!({"protected": protected, "signature": signature});
        match card.get_mut("signatures") {
            Some(Value::Array(a)) => a.push(sig),
            _ => {
                card.insert("signatures".into(), Value::Array(vec![sig]));
            }
        }
    }
}

/// What a signature of `card` signs: the RFC 8785 form of the card without `signatures`.
pub fn payload(card: &Map<String, Value>) -> String {
    let mut unsigned = card.clone();
    unsigned.remove("signatures");
    jcs::canonical(&Value::Object(unsigned))
}

/// The JWS signing input: `BASE64URL(protected header) '.' BASE64URL(payload)`.
fn signing_input(protected: &str, payload: &str) -> String {
    format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload))
}

/// The RFC 7638 thumbprint of an Ed25519 public key's JWK: SHA-256 of
/// `{"crv":"Ed25519","kty":"OKP","x":…}`, base64url.
pub fn thumbprint(key: &PublicKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.to_bytes());
    let members = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(members.as_bytes()))
}

/// Why a card's signature does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// No signature names the key.
    #[error("no signature of the card names key `{0}`")]
    NoSignature(String),
    /// A signature's parts are not what RFC 7515 makes.
    #[error("malformed signature: {0}")]
    Malformed(String),
    /// The signature does not match the card.
    #[error("the signature of key `{0}` does not match the card")]
    Mismatch(String),
}

/// Checks the signature of `card` by `key` (found by its thumbprint as `kid`, `alg` `EdDSA`).
pub fn verify(card: &Map<String, Value>, key: &PublicKey) -> Result<(), VerifyError> {
    let kid = thumbprint(key);
    let sigs = card
        .get("signatures")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for s in sigs {
        let (Some(protected), Some(signature)) = (
            s.get("protected").and_then(Value::as_str),
            s.get("signature").and_then(Value::as_str),
        ) else {
            continue;
        };
        let bad = |e: &dyn std::fmt::Display| VerifyError::Malformed(e.to_string());
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).map_err(|e| bad(&e))?)
                .map_err(|e| bad(&e))?;
        if header.get("kid").and_then(Value::as_str) != Some(kid.as_str()) {
            continue;
        }
        if header.get("alg").and_then(Value::as_str) != Some(ALG) {
            return Err(VerifyError::Malformed(format!(
                "the signature of key `{kid}` is not {ALG}"
            )));
        }
        let sig = URL_SAFE_NO_PAD.decode(signature).map_err(|e| bad(&e))?;
        let input = signing_input(protected, &payload(card));
        return if key.verify(input.as_bytes(), &sig) {
            Ok(())
        } else {
            Err(VerifyError::Mismatch(kid))
        };
    }
    Err(VerifyError::NoSignature(kid))
}

#[cfg(test)]
mod tests;
