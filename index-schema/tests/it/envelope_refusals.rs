//! Everything a verifier must refuse, one test each, plus the invalid-envelope corpus used by
//! `ofc validate`.

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use index_schema::envelope::{
    Envelope, EnvelopeError, KeyError, MAX_ENVELOPE_BYTES, PublicKey, SecretKey, Signature,
    sign_manifest, verify_manifest,
};
use index_schema::manifest::Manifest;
use index_schema::media_types::AGENT_MANIFEST_V1;
use proptest::prelude::*;

fn key(n: u8) -> SecretKey {
    SecretKey::from_seed(&[n; 32])
}

fn manifest() -> Manifest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifest/full.json");
    Manifest::from_json(&fs::read_to_string(path).unwrap()).unwrap()
}

fn signed() -> (Envelope, SecretKey) {
    let k = key(1);
    (sign_manifest(&manifest(), &k), k)
}

#[test]
fn untouched_envelope_verifies() {
    let (env, k) = signed();
    let (m, keyid, digest) = verify_manifest(&env, &[k.public_key()]).unwrap();
    assert_eq!(m, manifest());
    assert_eq!(keyid, k.key_id());
    assert_eq!(digest, env.payload_digest());
}

#[test]
fn tampered_payload_is_refused() {
    let (mut env, k) = signed();
    let i = env.payload.len() / 2;
    env.payload[i] ^= 0x01;
    assert_eq!(
        env.verify(AGENT_MANIFEST_V1, &[k.public_key()]),
        Err(EnvelopeError::BadSignature { keyid: k.key_id() })
    );
}

#[test]
fn wrong_key_is_refused() {
    let (env, _) = signed();
    let other = key(2);
    assert!(matches!(
        verify_manifest(&env, &[other.public_key()]),
        Err(EnvelopeError::UntrustedKey { keyids }) if keyids == vec![key(1).key_id()]
    ));
    assert!(matches!(
        verify_manifest(&env, &[]),
        Err(EnvelopeError::UntrustedKey { .. })
    ));
}

#[test]
fn wrong_payload_type_is_refused() {
    let k = key(1);
    let env = Envelope::sign("application/json", &manifest().to_json_bytes(), &k);
    assert_eq!(
        env.verify(AGENT_MANIFEST_V1, &[k.public_key()]),
        Err(EnvelopeError::WrongPayloadType {
            expected: AGENT_MANIFEST_V1.into(),
            found: "application/json".into()
        })
    );
    // Relabelling a signed payload breaks the signature: the type is part of what is signed.
    let mut relabelled = env.clone();
    relabelled.payload_type = AGENT_MANIFEST_V1.into();
    assert_eq!(
        relabelled.verify(AGENT_MANIFEST_V1, &[k.public_key()]),
        Err(EnvelopeError::BadSignature { keyid: k.key_id() })
    );
}

/// Little-endian group order L = 2^252 + 27742317777372353535851937790883648493.
const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

#[test]
fn malleable_signature_is_refused() {
    let (mut env, k) = signed();
    let sig = &mut env.signatures[0].sig;
    // S' = S + L is the same scalar modulo L: plain verification equations accept it.
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(sig[32 + i]) + u16::from(L[i]) + carry;
        sig[32 + i] = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    assert_eq!(
        env.verify(AGENT_MANIFEST_V1, &[k.public_key()]),
        Err(EnvelopeError::BadSignature { keyid: k.key_id() })
    );
    // The envelope is still well-formed; only verification catches it.
    assert!(Envelope::from_json(&env.to_json()).is_ok());
}

#[test]
fn weak_public_key_is_refused() {
    // Small-order points: the identity and a point of order 2 (y = -1).
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let mut order2 = [0xffu8; 32];
    order2[0] = 0xec;
    order2[31] = 0x7f;
    for bytes in [identity, order2] {
        let text = format!("ed25519:{}", STANDARD.encode(bytes));
        assert_eq!(PublicKey::parse(&text), Err(KeyError::Weak), "{text}");
    }
}

#[test]
fn keyid_that_does_not_match_the_signing_key_is_refused() {
    let (a, b) = (key(1), key(2));
    let mut env = Envelope::sign(AGENT_MANIFEST_V1, &manifest().to_json_bytes(), &b);
    // The signature is B's, but it claims to be A's.
    env.signatures[0].keyid = a.key_id();
    assert_eq!(
        env.verify(AGENT_MANIFEST_V1, &[a.public_key()]),
        Err(EnvelopeError::BadSignature { keyid: a.key_id() })
    );
    // Trusting B does not help: the signature names A, so B is never tried.
    assert!(matches!(
        env.verify(AGENT_MANIFEST_V1, &[b.public_key()]),
        Err(EnvelopeError::UntrustedKey { .. })
    ));
}

#[test]
fn no_signatures_is_refused() {
    let (mut env, k) = signed();
    env.signatures.clear();
    assert_eq!(
        env.verify(AGENT_MANIFEST_V1, &[k.public_key()]),
        Err(EnvelopeError::NoSignatures)
    );
    let err = Envelope::from_json(&env.to_json()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "signatures");
}

#[test]
fn bad_base64_is_refused() {
    let (env, _) = signed();
    let mut v: serde_json::Value = serde_json::from_str(&env.to_json()).unwrap();
    v["payload"] = "abc$".into();
    let err = Envelope::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "payload");
    assert!(
        err.0[0].message.contains("'$' at offset 3 is not base64"),
        "{err}"
    );

    let mut v: serde_json::Value = serde_json::from_str(&env.to_json()).unwrap();
    // URL-safe alphabet and missing padding are both refused: one envelope, one text.
    let sig = v["signatures"][0]["sig"].as_str().unwrap().to_string();
    v["signatures"][0]["sig"] = sig.trim_end_matches('=').into();
    let err = Envelope::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "signatures[0].sig");
    let mut v: serde_json::Value = serde_json::from_str(&env.to_json()).unwrap();
    v["signatures"][0]["sig"] = sig.replace('+', "-").replace('/', "_").into();
    if v["signatures"][0]["sig"].as_str() != Some(sig.as_str()) {
        assert!(Envelope::from_json(&v.to_string()).is_err());
    }
}

#[test]
fn oversized_envelope_is_refused() {
    let text = format!("{{\"payload\":\"{}\"}}", "A".repeat(MAX_ENVELOPE_BYTES));
    let err = Envelope::from_json(&text).unwrap_err();
    assert!(err.0[0].message.contains("more than the limit"), "{err}");
    assert!(err.0[0].path.is_root());
}

#[test]
fn oversized_payload_is_refused() {
    let k = key(1);
    let env = Envelope::sign(AGENT_MANIFEST_V1, &vec![b' '; 1024 * 1024 + 1], &k);
    let err = Envelope::from_json(&env.to_json()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "payload");
    assert!(err.0[0].message.contains("more than the limit"), "{err}");
}

#[test]
fn truncated_signature_is_refused_without_panicking() {
    let (mut env, k) = signed();
    env.signatures[0].sig.truncate(63);
    assert_eq!(
        env.verify(AGENT_MANIFEST_V1, &[k.public_key()]),
        Err(EnvelopeError::BadSignature { keyid: k.key_id() })
    );
    let err = Envelope::from_json(&env.to_json()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "signatures[0].sig");
}

#[test]
fn one_good_trusted_signature_is_enough() {
    let (a, b) = (key(1), key(2));
    let mut env = Envelope::sign(AGENT_MANIFEST_V1, &manifest().to_json_bytes(), &a);
    env.add_signature(&b);
    let v = env.verify(AGENT_MANIFEST_V1, &[b.public_key()]).unwrap();
    assert_eq!(v.key_id, b.key_id());
    // A broken signature by one trusted key does not hide a good one by another.
    env.signatures[0].sig[0] ^= 1;
    let v = env
        .verify(AGENT_MANIFEST_V1, &[a.public_key(), b.public_key()])
        .unwrap();
    assert_eq!(v.key_id, b.key_id());
}

#[test]
fn signed_payload_must_still_be_a_valid_manifest() {
    let k = key(1);
    let env = Envelope::sign(AGENT_MANIFEST_V1, br#"{"schemaVersion":1}"#, &k);
    assert!(matches!(
        verify_manifest(&env, &[k.public_key()]),
        Err(EnvelopeError::InvalidManifest(_))
    ));
    let env = Envelope::sign(AGENT_MANIFEST_V1, &[0xff, 0xfe], &k);
    assert_eq!(
        verify_manifest(&env, &[k.public_key()]),
        Err(EnvelopeError::PayloadNotUtf8)
    );
    let err = Envelope::from_json(&env.to_json()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "payload");
}

#[test]
fn structure_errors_name_their_field() {
    let (env, _) = signed();
    let base: serde_json::Value = serde_json::from_str(&env.to_json()).unwrap();
    let cases = [
        (
            "/signatures/0/keyid",
            serde_json::json!("nope"),
            "signatures[0].keyid",
        ),
        ("/payloadType", serde_json::json!(5), "payloadType"),
        ("/signatures", serde_json::json!({}), "signatures"),
    ];
    for (pointer, value, path) in cases {
        let mut v = base.clone();
        *v.pointer_mut(pointer).unwrap() = value;
        let err = Envelope::from_json(&v.to_string()).unwrap_err();
        assert_eq!(err.0[0].path.to_string(), path, "{err}");
    }
    let mut v = base.clone();
    v["extra"] = 1.into();
    let err = Envelope::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.0[0].path.to_string(), "extra");
}

#[test]
fn envelope_json_uses_dsse_field_names() {
    let (env, k) = signed();
    let v: serde_json::Value = serde_json::from_str(&env.to_json()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["payload", "payloadType", "signatures"]);
    assert_eq!(v["signatures"][0]["keyid"], k.key_id().to_string());
    assert_eq!(
        STANDARD
            .decode(v["signatures"][0]["sig"].as_str().unwrap())
            .unwrap()
            .len(),
        64
    );
    let sig: Signature = serde_json::from_value(v["signatures"][0].clone()).unwrap();
    assert_eq!(sig, env.signatures[0]);
}

fn invalid_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/envelope")
}

#[test]
fn invalid_corpus_names_the_expected_field() {
    let mut docs: Vec<PathBuf> = fs::read_dir(invalid_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".envelope.json"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 4, "only {} invalid envelopes", docs.len());
    for path in docs {
        let text = fs::read_to_string(&path).unwrap();
        let expected = fs::read_to_string(format!("{}.expect", path.display())).unwrap();
        let expected = expected.trim();
        let err = match Envelope::from_json(&text) {
            Ok(_) => panic!("{} was accepted", path.display()),
            Err(e) => e,
        };
        assert!(
            err.iter().any(|d| d.path.to_string() == expected),
            "{}: wanted a diagnostic at `{expected}`, got:\n{err}",
            path.display()
        );
        assert!(err.iter().all(|d| d.position.is_some()), "{err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_payload_signs_and_any_flip_breaks_it(
        seed in any::<[u8; 32]>(),
        payload in proptest::collection::vec(any::<u8>(), 0..512),
        flip in any::<proptest::sample::Index>(),
        bit in 0u8..8,
    ) {
        let k = SecretKey::from_seed(&seed);
        let env = Envelope::sign("application/octet-stream", &payload, &k);
        let back = Envelope::from_json_any_type(&env.to_json()).unwrap();
        prop_assert_eq!(&back, &env);
        prop_assert!(back.verify("application/octet-stream", &[k.public_key()]).is_ok());
        if !payload.is_empty() {
            let mut bad = env.clone();
            let i = flip.index(payload.len());
            bad.payload[i] ^= 1 << bit;
            prop_assert!(bad.verify("application/octet-stream", &[k.public_key()]).is_err());
        }
        let mut bad = env;
        let i = flip.index(64);
        bad.signatures[0].sig[i] ^= 1 << bit;
        prop_assert!(bad.verify("application/octet-stream", &[k.public_key()]).is_err());
    }

    #[test]
    fn envelope_parser_never_panics(text in "\\PC{0,200}") {
        let _ = Envelope::from_json(&text);
        let _ = Envelope::from_json_any_type(&text);
    }
}
