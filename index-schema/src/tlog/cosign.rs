//! Witnesses: cosignatures on checkpoints (C2SP `tlog-cosignature`, the Ed25519
//! `cosignature/v1` kind) and the body of a C2SP `tlog-witness` `add-checkpoint` request.
//!
//! A witness keeps, per log, the last checkpoint it cosigned, and cosigns a new one only when a
//! consistency proof shows it extends that one. A checkpoint cosigned by witnesses a client
//! trusts is one those witnesses saw too: a hub that shows this client another tree than the
//! one it showed them gets no cosignature for it.
//!
//! A cosignature is a signed-note signature line `— <witness name> <base64(key id ‖ timestamp
//! ‖ signature)>`, where the key id is that of the witness key with signature type 0x04, the
//! timestamp 8 bytes big-endian (Unix seconds), and the Ed25519 signature is over
//!
//! ```text
//! cosignature/v1
//! time <timestamp>
//! <the checkpoint's body: origin, size, root hash and any extension lines>
//! ```

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{
    Checkpoint, Hash, LogVerifier, Result, TlogError, hash_b64, key_id_of, parse_hash_b64,
    parse_secret_text, parse_verifier_text, secret_text, verifier_text,
};
use crate::envelope::{PublicKey, SecretKey};

/// The signed-note signature type of `cosignature/v1` keys.
const ALG_COSIGNATURE: u8 = 0x04;

/// At most this many consistency-proof lines in an `add-checkpoint` request (tlog-witness).
pub const MAX_PROOF_LINES: usize = 63;

/// The signed message of a cosignature at `timestamp` on a checkpoint's body.
fn message(timestamp: u64, body: &[u8]) -> Vec<u8> {
    let mut m = format!("cosignature/v1\ntime {timestamp}\n").into_bytes();
    m.extend_from_slice(body);
    m
}

/// A witness's signing key; its name is the witness's name.
pub struct WitnessSigner {
    name: String,
    key: SecretKey,
}

impl fmt::Debug for WitnessSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WitnessSigner")
            .field("verifier", &self.verifier().to_string())
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl WitnessSigner {
    /// A new key named `name` (no spaces, `+` or control characters).
    pub fn generate(name: &str, rng: &mut impl rand_core::CryptoRngCore) -> Result<Self> {
        super::check_origin(name)?;
        Ok(WitnessSigner {
            name: name.to_string(),
            key: SecretKey::generate(rng),
        })
    }

    /// Parses `PRIVATE+KEY+<name>+<key id hex>+<base64(0x04 ‖ seed)>`.
    pub fn from_secret_text(s: &str) -> Result<Self> {
        let (name, key) = parse_secret_text(s, ALG_COSIGNATURE)?;
        Ok(WitnessSigner { name, key })
    }

    /// The secret key text; whoever has it can cosign as this witness.
    pub fn to_secret_text(&self) -> String {
        secret_text(ALG_COSIGNATURE, &self.name, &self.key)
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The public half.
    pub fn verifier(&self) -> WitnessVerifier {
        let key = self.key.public_key();
        WitnessVerifier {
            id: key_id_of(ALG_COSIGNATURE, &self.name, &key),
            name: self.name.clone(),
            key,
        }
    }

    /// The cosignature line (ending in `\n`) on the checkpoint of `body` (its text up to the
    /// blank line, each line ending in `\n`), made at `timestamp` (Unix seconds).
    pub fn cosign(&self, body: &str, timestamp: u64) -> String {
        let sig = self.key.sign(&message(timestamp, body.as_bytes()));
        let mut blob = self.verifier().id.to_be_bytes().to_vec();
        blob.extend_from_slice(&timestamp.to_be_bytes());
        blob.extend_from_slice(&sig);
        format!("\u{2014} {} {}\n", self.name, STANDARD.encode(blob))
    }
}

/// A witness's verifier key, `<name>+<key id hex>+<base64(0x04 ‖ public key)>` (signed-note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessVerifier {
    name: String,
    id: u32,
    key: PublicKey,
}

impl WitnessVerifier {
    /// Parses the verifier key text.
    pub fn parse(s: &str) -> Result<Self> {
        let (name, id, key) = parse_verifier_text(s, ALG_COSIGNATURE)?;
        Ok(WitnessVerifier { name, id, key })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `other` is the same public key (under whatever name).
    pub fn same_key(&self, other: &WitnessVerifier) -> bool {
        self.key == other.key
    }

    /// The timestamp of `sig` (a signature line's bytes after the key id) when it is this
    /// witness's cosignature on the checkpoint of `body`.
    fn check(&self, body: &[u8], sig: &[u8]) -> Option<u64> {
        if sig.len() != 8 + 64 {
            return None;
        }
        let timestamp = u64::from_be_bytes(sig[..8].try_into().ok()?);
        self.key
            .verify(&message(timestamp, body), &sig[8..])
            .then_some(timestamp)
    }
}

impl fmt::Display for WitnessVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&verifier_text(
            ALG_COSIGNATURE,
            &self.name,
            self.id,
            &self.key,
        ))
    }
}

/// A valid cosignature a checkpoint carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosignature {
    /// The witness's name.
    pub witness: String,
    /// When it cosigned (Unix seconds, as the witness says).
    pub timestamp: u64,
}

impl LogVerifier {
    /// Checks a signed checkpoint note as [`LogVerifier::verify_checkpoint`] does, and returns
    /// the valid cosignatures it carries of `witnesses`: one per public key (the signed message
    /// does not hold the witness's name, so one key trusted under two names counts once).
    /// Signatures of other keys are ignored, and so is a line that names a witness key but does
    /// not verify — it counts for nothing.
    pub fn verify_cosigned(
        &self,
        note: &str,
        witnesses: &[WitnessVerifier],
    ) -> Result<(Checkpoint, Vec<Cosignature>)> {
        let (cp, parsed, others) = self.open(note)?;
        let mut found: Vec<Cosignature> = Vec::new();
        let mut keys: Vec<[u8; 32]> = Vec::new();
        for sig in &others {
            let Some(w) = witnesses
                .iter()
                .find(|w| w.name == sig.name() && w.id == sig.id())
            else {
                continue;
            };
            if keys.contains(&w.key.to_bytes()) {
                continue;
            }
            if let Some(timestamp) = w.check(parsed.text(), sig.signature()) {
                keys.push(w.key.to_bytes());
                found.push(Cosignature {
                    witness: w.name.clone(),
                    timestamp,
                });
            }
        }
        Ok((cp, found))
    }
}

/// The signature lines of a witness's `add-checkpoint` answer, each with its `\n`; an error
/// when the answer is not such lines (at most 16 of them).
pub fn cosignature_lines(body: &str) -> Result<Vec<String>> {
    let bad = |why: &str| TlogError::Checkpoint(format!("not a witness's cosignatures: {why}"));
    if !body.ends_with('\n') {
        return Err(bad("does not end with a line feed"));
    }
    let lines: Vec<String> = body.split_inclusive('\n').map(str::to_string).collect();
    if lines.is_empty() || lines.len() > 16 {
        return Err(bad("expected 1 to 16 signature lines"));
    }
    for l in &lines {
        let Some(rest) = l.strip_prefix("\u{2014} ") else {
            return Err(bad("a line does not start with `— `"));
        };
        let mut parts = rest.trim_end_matches('\n').split(' ');
        let (Some(name), Some(sig), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("a line is not `— <name> <signature>`"));
        };
        if name.is_empty() || STANDARD.decode(sig).map(|b| b.len() < 5).unwrap_or(true) {
            return Err(bad("a line's name or signature is malformed"));
        }
    }
    Ok(lines)
}

/// The body of a tlog-witness `add-checkpoint` request: the size of the checkpoint the witness
/// last cosigned (as the submitter believes), the consistency proof from it, and the new
/// checkpoint note.
#[derive(Debug, Clone, PartialEq)]
pub struct AddCheckpoint {
    /// The old size.
    pub old: u64,
    /// The RFC 6962 consistency proof from `old` to the checkpoint's size.
    pub proof: Vec<Hash>,
    /// The signed checkpoint note.
    pub checkpoint: String,
}

impl AddCheckpoint {
    /// The request body.
    pub fn to_body(&self) -> String {
        let mut s = format!("old {}\n", self.old);
        for h in &self.proof {
            s.push_str(&hash_b64(h));
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&self.checkpoint);
        s
    }

    /// Parses a request body (an error is the submitter's: 400).
    pub fn parse(body: &str) -> Result<Self> {
        let bad = |why: String| TlogError::Checkpoint(format!("malformed add-checkpoint: {why}"));
        let (first, mut rest) = body
            .split_once('\n')
            .ok_or_else(|| bad("no old size line".into()))?;
        let old = first
            .strip_prefix("old ")
            .ok_or_else(|| bad(format!("the first line `{first}` is not `old <size>`")))?;
        if old.is_empty()
            || !old.bytes().all(|b| b.is_ascii_digit())
            || (old.len() > 1 && old.starts_with('0'))
        {
            return Err(bad(format!("`{old}` is not a size")));
        }
        let old: u64 = old
            .parse()
            .map_err(|_| bad(format!("`{old}` is not a size")))?;
        let mut proof = Vec::new();
        loop {
            let (line, after) = rest
                .split_once('\n')
                .ok_or_else(|| bad("no empty line before the checkpoint".into()))?;
            rest = after;
            if line.is_empty() {
                break;
            }
            if proof.len() == MAX_PROOF_LINES {
                return Err(bad(format!("more than {MAX_PROOF_LINES} proof lines")));
            }
            proof.push(parse_hash_b64(line).map_err(|e| bad(format!("proof line: {e}")))?);
        }
        Ok(AddCheckpoint {
            old,
            proof,
            checkpoint: rest.to_string(),
        })
    }
}

/// The text of a checkpoint note (every line before the blank line, extension lines included:
/// what a cosignature signs), when the note is a well-formed signed note holding a checkpoint.
pub fn checkpoint_text(note: &str) -> Result<String> {
    let parsed = signed_note::Note::from_bytes(note.as_bytes())
        .map_err(|e| TlogError::Checkpoint(format!("not a signed note: {e}")))?;
    tlog_tiles::Checkpoint::from_bytes(parsed.text())
        .map_err(|e| TlogError::Checkpoint(format!("not a checkpoint: {e}")))?;
    String::from_utf8(parsed.text().to_vec()).map_err(|_| TlogError::Checkpoint("not UTF-8".into()))
}

/// The origin (first line) of a checkpoint note, to find the log's key by.
pub fn origin_of(note: &str) -> Option<&str> {
    note.split_once('\n')
        .map(|(o, _)| o)
        .filter(|o| !o.is_empty())
}

/// The body of a checkpoint without extension lines (origin, size, root); a note with
/// extension lines has its own ([`checkpoint_text`]).
pub fn body_of(cp: &Checkpoint) -> String {
    format!("{}\n{}\n{}\n", cp.origin, cp.size, hash_b64(&cp.root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::{LogSigner, check_consistency};

    fn log() -> LogSigner {
        LogSigner::generate("hub.example/log", &mut rand_core::OsRng).unwrap()
    }

    #[test]
    fn keys_round_trip_and_are_not_log_keys() {
        let w = WitnessSigner::generate("witness.example/w1", &mut rand_core::OsRng).unwrap();
        let again = WitnessSigner::from_secret_text(&w.to_secret_text()).unwrap();
        assert_eq!(again.verifier(), w.verifier());
        let v = WitnessVerifier::parse(&w.verifier().to_string()).unwrap();
        assert_eq!(v, w.verifier());
        assert!(w.verifier().to_string().starts_with("witness.example/w1+"));
        // A log key (type 0x01) is not a witness key, nor the other way round.
        let l = log();
        let e = WitnessVerifier::parse(&l.verifier().to_string()).unwrap_err();
        assert!(e.to_string().contains("type 0x01"), "{e}");
        LogVerifier::parse(&w.verifier().to_string()).unwrap_err();
        LogSigner::from_secret_text(&w.to_secret_text()).unwrap_err();
        // A secret key where a verifier key belongs: refused, and never repeated.
        let secret = w.to_secret_text();
        let e = WitnessVerifier::parse(&secret).unwrap_err().to_string();
        assert!(
            e.contains("secret key") && !e.contains(&secret[20..]),
            "{e}"
        );
        assert!(!crate::tlog::shown_key(&secret).contains(&secret[20..]));
        // A wrong id.
        let text = w.verifier().to_string();
        let mut parts: Vec<&str> = text.splitn(3, '+').collect();
        parts[1] = "00000000";
        WitnessVerifier::parse(&parts.join("+")).unwrap_err();
    }

    #[test]
    fn cosignatures_count_only_for_the_witnesses_given_and_only_when_valid() {
        let l = log();
        let note = l.sign_checkpoint(5, Hash([7; 32]));
        let cp = l.verifier().verify_checkpoint(&note).unwrap();
        let w1 = WitnessSigner::generate("w1.example", &mut rand_core::OsRng).unwrap();
        let w2 = WitnessSigner::generate("w2.example", &mut rand_core::OsRng).unwrap();
        let stranger = WitnessSigner::generate("w3.example", &mut rand_core::OsRng).unwrap();
        let body = body_of(&cp);
        let cosigned = format!(
            "{note}{}{}{}",
            w1.cosign(&body, 1_700_000_000),
            stranger.cosign(&body, 1_700_000_001),
            w2.cosign(&body, 1_700_000_002)
        );
        let (got, sigs) = l
            .verifier()
            .verify_cosigned(&cosigned, &[w1.verifier(), w2.verifier()])
            .unwrap();
        assert_eq!(got, cp);
        assert_eq!(
            sigs,
            vec![
                Cosignature {
                    witness: "w1.example".into(),
                    timestamp: 1_700_000_000
                },
                Cosignature {
                    witness: "w2.example".into(),
                    timestamp: 1_700_000_002
                }
            ]
        );
        // Without the log's own signature nothing verifies.
        let only_witness = note
            .split_inclusive('\n')
            .filter(|l| !l.starts_with('\u{2014}'))
            .collect::<String>()
            + &w1.cosign(&body, 1);
        l.verifier()
            .verify_cosigned(&only_witness, &[w1.verifier()])
            .unwrap_err();
        // A cosignature on another tree, moved onto this one, counts for nothing.
        let other = body_of(&Checkpoint {
            size: 6,
            ..cp.clone()
        });
        let moved = format!("{note}{}", w1.cosign(&other, 1));
        let (_, sigs) = l
            .verifier()
            .verify_cosigned(&moved, &[w1.verifier()])
            .unwrap();
        assert!(sigs.is_empty());
        // Nor does one whose timestamp was changed: it is signed.
        let line = w1.cosign(&body, 100);
        let (name, b64) = line
            .trim_end()
            .trim_start_matches("\u{2014} ")
            .split_once(' ')
            .unwrap();
        let mut blob = STANDARD.decode(b64).unwrap();
        blob[11] ^= 1;
        let forged = format!("{note}\u{2014} {name} {}\n", STANDARD.encode(blob));
        let (_, sigs) = l
            .verifier()
            .verify_cosigned(&forged, &[w1.verifier()])
            .unwrap();
        assert!(sigs.is_empty());
    }

    #[test]
    fn one_key_under_two_names_counts_once() {
        let l = log();
        let note = l.sign_checkpoint(5, Hash([7; 32]));
        let cp = l.verifier().verify_checkpoint(&note).unwrap();
        let w = WitnessSigner::generate("w1.example", &mut rand_core::OsRng).unwrap();
        // The same key renamed: another key id, the same signature over the same message.
        let renamed = WitnessSigner {
            name: "w2.example".into(),
            key: SecretKey::from_seed(&w.key.seed()),
        };
        let body = body_of(&cp);
        let cosigned = format!("{note}{}{}", w.cosign(&body, 1), renamed.cosign(&body, 1));
        let (_, sigs) = l
            .verifier()
            .verify_cosigned(&cosigned, &[w.verifier(), renamed.verifier()])
            .unwrap();
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert!(w.verifier().same_key(&renamed.verifier()));
    }

    #[test]
    fn add_checkpoint_bodies_round_trip_and_malformed_ones_are_refused() {
        let l = log();
        let note = l.sign_checkpoint(3, Hash([1; 32]));
        let req = AddCheckpoint {
            old: 2,
            proof: vec![Hash([2; 32]), Hash([3; 32])],
            checkpoint: note.clone(),
        };
        let body = req.to_body();
        assert!(body.starts_with("old 2\n"), "{body}");
        assert_eq!(AddCheckpoint::parse(&body).unwrap(), req);
        let none = AddCheckpoint {
            old: 0,
            proof: vec![],
            checkpoint: note.clone(),
        };
        assert_eq!(AddCheckpoint::parse(&none.to_body()).unwrap(), none);
        for bad in [
            String::new(),
            format!("old 02\n\n{note}"),
            format!("old -1\n\n{note}"),
            format!("new 2\n\n{note}"),
            format!("old 2\nnot base64!\n\n{note}"),
            "old 2\n".to_string(),
            format!(
                "old 2\n{}\n{note}",
                format!("{}\n", hash_b64(&Hash([0; 32]))).repeat(MAX_PROOF_LINES + 1)
            ),
        ] {
            AddCheckpoint::parse(&bad).unwrap_err();
        }
        assert_eq!(origin_of(&note), Some("hub.example/log"));
        // The proof a witness checks is an RFC 6962 one: the empty proof of equal trees.
        check_consistency(&[], 3, Hash([1; 32]), 3, Hash([1; 32])).unwrap();
    }

    #[test]
    fn answers_are_signature_lines() {
        let w = WitnessSigner::generate("w1.example", &mut rand_core::OsRng).unwrap();
        let line = w.cosign("o\n1\nAAAA\n", 1);
        assert_eq!(cosignature_lines(&line).unwrap(), vec![line.clone()]);
        cosignature_lines("").unwrap_err();
        cosignature_lines("— w1.example\n").unwrap_err();
        cosignature_lines(line.trim_end()).unwrap_err();
        cosignature_lines("hello\n").unwrap_err();
    }
}
