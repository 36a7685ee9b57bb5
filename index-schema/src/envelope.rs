//! Signed envelopes: DSSE (Dead Simple Signing Envelope) with ed25519 signatures.
//!
//! An envelope is the JSON document
//!
//! ```json
//! {"payload":"<base64>","payloadType":"application/vnd.ofc.agent.manifest.v1+json",
//!  "signatures":[{"keyid":"<32 hex>","sig":"<base64>"}]}
//! ```
//!
//! Base64 is the standard alphabet with padding, decoded strictly (no other alphabets, no
//! non-canonical trailing bits), so one envelope has one text form. Each signature is ed25519 over
//! the DSSE pre-authentication encoding [`pae`]:
//! `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`, lengths in ASCII decimal bytes.
//! Verification uses ed25519-dalek's `verify_strict`, which refuses non-canonical signatures
//! (`S` not reduced modulo the group order) and small-order keys and `R` values.
//!
//! Keys have text forms: a public key is `ed25519:<base64 of its 32 bytes>`, a secret key
//! `ofc-ed25519-secret:<base64 of its 32-byte seed>`. A [`KeyId`] is the first 16 bytes of
//! SHA-256 over the raw 32-byte public key, as 32 lowercase hex digits; it is a hint that selects
//! which trusted key to check a signature with, and a signature whose keyid names a key that did
//! not make it fails.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use rand_core::CryptoRngCore;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::manifest::{MAX_MANIFEST_BYTES, Manifest};
use crate::media_types::AGENT_MANIFEST_V1;
use crate::name::{Digest, shown};
use crate::source;

/// Largest envelope JSON text accepted.
pub const MAX_ENVELOPE_BYTES: usize = 2 * 1024 * 1024;
/// Most signatures one envelope may carry.
pub const MAX_SIGNATURES: usize = 16;
/// Longest `payloadType`.
pub const MAX_PAYLOAD_TYPE_LEN: usize = 256;

/// Why a key or key id text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text does not start with the expected prefix.
    #[error("key must start with `{expected}`")]
    MissingPrefix {
        /// The prefix expected.
        expected: &'static str,
    },
    /// The base64 part does not decode.
    #[error("key is not valid base64: {0}")]
    Base64(String),
    /// The decoded key has the wrong length.
    #[error("key is {found} bytes, an ed25519 key is 32")]
    Length {
        /// Bytes found.
        found: usize,
    },
    /// The bytes are not a point on the curve, or not its canonical encoding.
    #[error("key is not a valid ed25519 public key")]
    InvalidPoint,
    /// A small-order point: signatures under it prove nothing.
    #[error("key is a weak ed25519 public key (a point of small order)")]
    Weak,
    /// A key id that is not 32 lowercase hex digits.
    #[error("key id `{0}` is not 32 lowercase hex digits")]
    KeyId(String),
}

/// Why an envelope did not verify.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnvelopeError {
    /// `payloadType` is not the one the caller expects.
    #[error("payloadType is `{found}`, expected `{expected}`")]
    WrongPayloadType {
        /// What the caller expects.
        expected: String,
        /// What the envelope says.
        found: String,
    },
    /// The envelope has no signatures.
    #[error("envelope has no signatures")]
    NoSignatures,
    /// No signature names a trusted key.
    #[error("no signature is by a trusted key (signed by key ids: {})", list_ids(.keyids))]
    UntrustedKey {
        /// The key ids the signatures name.
        keyids: Vec<KeyId>,
    },
    /// A signature names a trusted key but does not verify with it.
    #[error(
        "signature by key {keyid} does not verify: the payload or the signature was altered, or \
         another key made it"
    )]
    BadSignature {
        /// The key id the signature names.
        keyid: KeyId,
    },
    /// The payload is not UTF-8 JSON text.
    #[error("payload is not UTF-8 text")]
    PayloadNotUtf8,
    /// The payload is not a valid manifest.
    #[error("payload is not a valid manifest: {0}")]
    InvalidManifest(Diagnostics),
}

fn list_ids(ids: &[KeyId]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(KeyId::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Identifies a public key: the first 16 bytes of SHA-256 over its 32 raw bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId([u8; 16]);

impl KeyId {
    /// The key id of raw public key bytes.
    pub fn of(public_key: &[u8; 32]) -> Self {
        let hash = Sha256::digest(public_key);
        let mut id = [0u8; 16];
        id.copy_from_slice(&hash[..16]);
        Self(id)
    }

    /// Parses 32 lowercase hex digits.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let mut id = [0u8; 16];
        let ok = s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && hex::decode_to_slice(s, &mut id).is_ok();
        if ok {
            Ok(Self(id))
        } else {
            Err(KeyError::KeyId(shown(s)))
        }
    }

    /// The 16 raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl FromStr for KeyId {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// An ed25519 public key; never a weak (small-order) one. Text form: `ed25519:<base64>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Prefix of the text form.
    pub const PREFIX: &'static str = "ed25519:";

    /// A key from its 32 raw bytes. Refuses bytes that are not the canonical encoding of a curve
    /// point, and small-order points.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, KeyError> {
        let key = VerifyingKey::from_bytes(bytes).map_err(|_| KeyError::InvalidPoint)?;
        // dalek keeps the bytes it was given; re-encode the point to refuse y >= p aliases.
        if key.to_edwards().compress().to_bytes() != *bytes {
            return Err(KeyError::InvalidPoint);
        }
        if key.is_weak() {
            return Err(KeyError::Weak);
        }
        Ok(Self(key))
    }

    /// The 32 raw bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// This key's id.
    pub fn key_id(&self) -> KeyId {
        KeyId::of(&self.to_bytes())
    }

    /// Parses `ed25519:<base64>`.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let b64 = s
            .strip_prefix(Self::PREFIX)
            .ok_or(KeyError::MissingPrefix {
                expected: Self::PREFIX,
            })?;
        Self::from_bytes(&decode_32(b64)?)
    }

    /// Checks a signature over `message` with `verify_strict`.
    pub(crate) fn verify(&self, message: &[u8], sig: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(sig) else {
            return false;
        };
        let sig = ed25519_dalek::Signature::from_bytes(&bytes);
        self.0.verify_strict(message, &sig).is_ok()
    }
}

fn decode_32(b64: &str) -> Result<[u8; 32], KeyError> {
    let bytes = STANDARD
        .decode(b64)
        .map_err(|e| KeyError::Base64(base64_problem(&e)))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| KeyError::Length { found: bytes.len() })
}

/// A base64 decoding error in the crate's message style.
fn base64_problem(e: &base64::DecodeError) -> String {
    use base64::DecodeError as E;
    let ch = |b: u8| shown(&char::from(b).to_string());
    match *e {
        E::InvalidByte(at, b'=') => format!("misplaced `=` at offset {at}"),
        E::InvalidByte(at, b) => format!("character '{}' at offset {at} is not base64", ch(b)),
        E::InvalidLength(n) => format!("{n} base64 characters cannot encode whole bytes"),
        E::InvalidLastSymbol(at, b) => {
            format!(
                "last character '{}' at offset {at} has bits set that encode nothing",
                ch(b)
            )
        }
        E::InvalidPadding => "padding is missing or wrong".into(),
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", Self::PREFIX, STANDARD.encode(self.to_bytes()))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl FromStr for PublicKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// An ed25519 secret key. Its `Debug` shows only the public key; it has no `Display` and no
/// serde, so it is written out only through [`SecretKey::to_secret_text`]. The key material is
/// zeroed when dropped.
#[derive(Clone)]
pub struct SecretKey(SigningKey);

impl SecretKey {
    /// Prefix of the text form.
    pub const PREFIX: &'static str = "ofc-ed25519-secret:";

    /// A new random key from the caller's cryptographic RNG.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        Self(SigningKey::generate(rng))
    }

    /// The key with this 32-byte seed (RFC 8032 secret key).
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self(SigningKey::from_bytes(seed))
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// The public key's id.
    pub fn key_id(&self) -> KeyId {
        self.public_key().key_id()
    }

    /// The secret text form `ofc-ed25519-secret:<base64 seed>`, for writing a key file. Handle
    /// with care: anyone with this text can publish as the key's owner.
    pub fn to_secret_text(&self) -> String {
        format!("{}{}", Self::PREFIX, STANDARD.encode(self.0.to_bytes()))
    }

    /// Parses the secret text form (surrounding whitespace, such as a file's final newline, is
    /// ignored).
    pub fn from_secret_text(s: &str) -> Result<Self, KeyError> {
        let b64 = s
            .trim()
            .strip_prefix(Self::PREFIX)
            .ok_or(KeyError::MissingPrefix {
                expected: Self::PREFIX,
            })?;
        Ok(Self::from_seed(&decode_32(b64)?))
    }

    /// The 32-byte seed.
    pub(crate) fn seed(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    pub(crate) fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("public", &self.public_key())
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl FromStr for SecretKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_secret_text(s)
    }
}

/// The DSSE pre-authentication encoding: what each signature signs.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The signed bytes (base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub payload: Vec<u8>,
    /// What the payload is, e.g. [`AGENT_MANIFEST_V1`].
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// One or more signatures over [`pae`]`(payloadType, payload)`.
    pub signatures: Vec<Signature>,
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Which key made it.
    pub keyid: KeyId,
    /// The 64-byte ed25519 signature (base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub sig: Vec<u8>,
}

/// A payload whose signature checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPayload {
    /// The payload type that was checked.
    pub payload_type: String,
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// The trusted key whose signature verified.
    pub key_id: KeyId,
    /// SHA-256 of the payload bytes.
    pub digest: Digest,
}

mod base64_bytes {
    use super::*;

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a base64 string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<u8>, E> {
                STANDARD.decode(s).map_err(|e| {
                    E::custom(format!(
                        "is not valid base64 (standard alphabet with `=` padding): {}",
                        base64_problem(&e)
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl Envelope {
    /// Signs `payload` as `payload_type` with one key.
    pub fn sign(payload_type: &str, payload: &[u8], key: &SecretKey) -> Envelope {
        let sig = key.sign(&pae(payload_type, payload));
        Envelope {
            payload: payload.to_vec(),
            payload_type: payload_type.to_string(),
            signatures: vec![Signature {
                keyid: key.key_id(),
                sig: sig.to_vec(),
            }],
        }
    }

    /// Adds another key's signature.
    pub fn add_signature(&mut self, key: &SecretKey) {
        let sig = key.sign(&pae(&self.payload_type, &self.payload));
        self.signatures.push(Signature {
            keyid: key.key_id(),
            sig: sig.to_vec(),
        });
    }

    /// Verifies that the envelope is of `expected_payload_type` and that at least one signature
    /// is by one of the `trusted` keys (selected by keyid) and verifies strictly. Signatures by
    /// keys that are not trusted are ignored.
    pub fn verify(
        &self,
        expected_payload_type: &str,
        trusted: &[PublicKey],
    ) -> Result<VerifiedPayload, EnvelopeError> {
        if self.payload_type != expected_payload_type {
            return Err(EnvelopeError::WrongPayloadType {
                expected: expected_payload_type.to_string(),
                found: shown(&self.payload_type),
            });
        }
        if self.signatures.is_empty() {
            return Err(EnvelopeError::NoSignatures);
        }
        let message = pae(&self.payload_type, &self.payload);
        let mut bad = None;
        for s in &self.signatures {
            let Some(key) = trusted.iter().find(|k| k.key_id() == s.keyid) else {
                continue;
            };
            if key.verify(&message, &s.sig) {
                return Ok(VerifiedPayload {
                    payload_type: self.payload_type.clone(),
                    payload: self.payload.clone(),
                    key_id: s.keyid,
                    digest: Digest::of(&self.payload),
                });
            }
            bad.get_or_insert(s.keyid);
        }
        Err(match bad {
            Some(keyid) => EnvelopeError::BadSignature { keyid },
            None => EnvelopeError::UntrustedKey {
                keyids: self.signatures.iter().map(|s| s.keyid).collect(),
            },
        })
    }

    /// Parses a signed manifest envelope and checks its structure: base64 decodes, `payloadType`
    /// is [`AGENT_MANIFEST_V1`], there is at least one signature, each is 64 bytes, and the
    /// payload is a valid manifest (its problems are reported under `payload`). Signatures are not
    /// checked here; that needs trusted keys ([`verify_manifest`]).
    pub fn from_json(text: &str) -> Result<Envelope, Diagnostics> {
        let (env, doc) = Self::parse_structure(text)?;
        let mut d = env.structure_diagnostics();
        if env.payload_type != AGENT_MANIFEST_V1 {
            d.push(
                FieldPath::root().key("payloadType"),
                format!(
                    "`{}` is not the manifest payload type `{AGENT_MANIFEST_V1}`",
                    shown(&env.payload_type)
                ),
            );
        } else {
            d.extend(manifest_payload_diagnostics(&env.payload));
        }
        doc.locate(d).into_result(env)
    }

    /// Parses an envelope of any payload type, checking only the DSSE structure (base64, at least
    /// one signature of 64 bytes, size limits).
    pub fn from_json_any_type(text: &str) -> Result<Envelope, Diagnostics> {
        let (env, doc) = Self::parse_structure(text)?;
        doc.locate(env.structure_diagnostics()).into_result(env)
    }

    fn parse_structure(text: &str) -> Result<(Envelope, source::SourceDoc), Diagnostics> {
        if text.len() > MAX_ENVELOPE_BYTES {
            return Err(Diagnostics::one(
                FieldPath::root(),
                format!(
                    "envelope is {} bytes, more than the limit of {MAX_ENVELOPE_BYTES} bytes",
                    text.len()
                ),
            ));
        }
        let doc = source::parse_json(text)?;
        let env = match source::deserialize_value::<Envelope>(&doc.value) {
            Ok(env) => env,
            Err(mut d) => {
                for diag in &mut d.0 {
                    if let Some(rest) = diag.message.strip_prefix("missing field `")
                        && let Some(end) = rest.find('`')
                    {
                        diag.path = diag.path.key(&rest[..end]);
                    }
                }
                return Err(doc.locate(d));
            }
        };
        Ok((env, doc))
    }

    fn structure_diagnostics(&self) -> Diagnostics {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        if self.payload_type.is_empty() || self.payload_type.len() > MAX_PAYLOAD_TYPE_LEN {
            d.push(
                root.key("payloadType"),
                format!("must be 1 to {MAX_PAYLOAD_TYPE_LEN} bytes long"),
            );
        }
        let sigs = root.key("signatures");
        if self.signatures.is_empty() {
            d.push(
                sigs.clone(),
                "has no signatures; an envelope needs at least one",
            );
        } else if self.signatures.len() > MAX_SIGNATURES {
            d.push(
                sigs.clone(),
                format!(
                    "has {} signatures, more than the limit of {MAX_SIGNATURES}",
                    self.signatures.len()
                ),
            );
        }
        for (i, s) in self.signatures.iter().enumerate() {
            if s.sig.len() != 64 {
                d.push(
                    sigs.index(i).key("sig"),
                    format!(
                        "signature is {} bytes, an ed25519 signature is 64",
                        s.sig.len()
                    ),
                );
            }
        }
        d
    }

    /// The envelope as compact JSON (DSSE field names).
    pub fn to_json(&self) -> String {
        // Strings and lists only: serializing cannot fail.
        serde_json::to_string(self).expect("an envelope always serializes to JSON")
    }

    /// SHA-256 of the payload bytes (the manifest digest for manifest envelopes).
    pub fn payload_digest(&self) -> Digest {
        Digest::of(&self.payload)
    }
}

fn manifest_payload_diagnostics(payload: &[u8]) -> Diagnostics {
    let path = FieldPath::root().key("payload");
    if payload.len() > MAX_MANIFEST_BYTES {
        return Diagnostics::one(
            path,
            format!(
                "manifest is {} bytes, more than the limit of {MAX_MANIFEST_BYTES} bytes",
                payload.len()
            ),
        );
    }
    let Ok(text) = std::str::from_utf8(payload) else {
        return Diagnostics::one(path, "payload is not UTF-8 text, so it is not a manifest");
    };
    match Manifest::from_json(text) {
        Ok(_) => Diagnostics::default(),
        Err(inner) => {
            let mut d = Diagnostics::default();
            for m in inner.iter() {
                let at = m
                    .position
                    .map(|p| format!(" (payload {p})"))
                    .unwrap_or_default();
                d.push(
                    path.clone(),
                    format!("manifest field {}{at}: {}", m.path, m.message),
                );
            }
            d
        }
    }
}

/// Signs a manifest: the payload is [`Manifest::to_json_bytes`].
pub fn sign_manifest(manifest: &Manifest, key: &SecretKey) -> Envelope {
    Envelope::sign(AGENT_MANIFEST_V1, &manifest.to_json_bytes(), key)
}

/// Verifies a manifest envelope against trusted keys and parses the manifest. Returns the
/// manifest, the key that verified and the manifest digest (SHA-256 of the exact payload bytes).
pub fn verify_manifest(
    envelope: &Envelope,
    trusted: &[PublicKey],
) -> Result<(Manifest, KeyId, Digest), EnvelopeError> {
    let verified = envelope.verify(AGENT_MANIFEST_V1, trusted)?;
    let text = std::str::from_utf8(&verified.payload).map_err(|_| EnvelopeError::PayloadNotUtf8)?;
    let manifest = Manifest::from_json(text).map_err(EnvelopeError::InvalidManifest)?;
    Ok((manifest, verified.key_id, verified.digest))
}

use crate::name::serde_as_string;

serde_as_string!(KeyId, "a key id (32 lowercase hex digits)");
serde_as_string!(PublicKey, "a public key `ed25519:<base64>`");

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> SecretKey {
        SecretKey::from_seed(&[n; 32])
    }

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ");
    }

    #[test]
    fn sign_then_verify() {
        let k = key(7);
        let env = Envelope::sign("text/plain", b"hi", &k);
        let v = env
            .verify("text/plain", &[key(8).public_key(), k.public_key()])
            .unwrap();
        assert_eq!(v.payload, b"hi");
        assert_eq!(v.key_id, k.key_id());
        assert_eq!(v.digest, Digest::of(b"hi"));
        let back = Envelope::from_json_any_type(&env.to_json()).unwrap();
        assert_eq!(back, env);
    }

    #[test]
    fn key_text_forms_round_trip() {
        let k = key(3);
        let text = k.to_secret_text();
        assert!(text.starts_with("ofc-ed25519-secret:"));
        let back = SecretKey::from_secret_text(&format!("{text}\n")).unwrap();
        assert_eq!(back.public_key(), k.public_key());
        let p = k.public_key();
        assert_eq!(PublicKey::parse(&p.to_string()).unwrap(), p);
        assert_eq!(KeyId::parse(&p.key_id().to_string()).unwrap(), p.key_id());
        assert_eq!(p.key_id().to_string().len(), 32);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<PublicKey>(&json).unwrap(), p);
    }

    #[test]
    fn secret_key_debug_is_redacted() {
        let k = key(9);
        let dbg = format!("{k:?}");
        assert!(dbg.contains("<redacted>"), "{dbg}");
        let secret_b64 = k.to_secret_text()[SecretKey::PREFIX.len()..].to_string();
        assert!(!dbg.contains(&secret_b64), "{dbg}");
        assert!(!dbg.contains(&hex::encode([9u8; 32])), "{dbg}");
        assert!(!dbg.contains("[9, 9"), "{dbg}");
    }

    #[test]
    fn bad_key_texts() {
        assert_eq!(
            PublicKey::parse("ssh-ed25519 AAAA"),
            Err(KeyError::MissingPrefix {
                expected: "ed25519:"
            })
        );
        assert!(matches!(
            PublicKey::parse("ed25519:!!"),
            Err(KeyError::Base64(_))
        ));
        assert_eq!(
            PublicKey::parse(&format!("ed25519:{}", STANDARD.encode([1u8; 31]))),
            Err(KeyError::Length { found: 31 })
        );
        // The identity point (order 1) is a weak key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(PublicKey::from_bytes(&identity), Err(KeyError::Weak));
        // y = 2^255 - 1 is not below the field prime: not a canonical encoding.
        let mut non_canonical = [0xffu8; 32];
        non_canonical[31] = 0x7f;
        assert!(PublicKey::from_bytes(&non_canonical).is_err());
        assert!(KeyId::parse("ABCDEF0123456789abcdef0123456789").is_err());
        assert!(KeyId::parse("abc").is_err());
        assert!(SecretKey::from_secret_text("ed25519:AAAA").is_err());
    }

    #[test]
    fn small_order_key_forgery_is_refused_by_verify_strict() {
        // With the identity point as public key, R = identity and S = 0 satisfy the plain
        // (cofactorless) ed25519 equation for every message.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = VerifyingKey::from_bytes(&identity).unwrap();
        let mut sig = [0u8; 64];
        sig[0] = 1;
        let forged = ed25519_dalek::Signature::from_bytes(&sig);
        let msg = pae(AGENT_MANIFEST_V1, b"anything");
        assert!(weak.verify_strict(&msg, &forged).is_err());
        // Even if a weak key got into the trusted list, the envelope would not verify.
        let trusted = PublicKey(weak);
        let env = Envelope {
            payload: b"anything".to_vec(),
            payload_type: AGENT_MANIFEST_V1.into(),
            signatures: vec![Signature {
                keyid: trusted.key_id(),
                sig: sig.to_vec(),
            }],
        };
        assert_eq!(
            env.verify(AGENT_MANIFEST_V1, &[trusted]),
            Err(EnvelopeError::BadSignature {
                keyid: trusted.key_id()
            })
        );
    }

    #[test]
    fn generate_uses_the_callers_rng() {
        let a = SecretKey::generate(&mut rand_core::OsRng);
        let b = SecretKey::generate(&mut rand_core::OsRng);
        assert_ne!(a.public_key(), b.public_key());
        let env = Envelope::sign("t", b"p", &a);
        assert!(env.verify("t", &[a.public_key()]).is_ok());
    }
}
