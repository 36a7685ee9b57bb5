//! Committed DSSE + ed25519 test vectors (`tests/fixtures/envelope/vector-*.json`): a fixed seed
//! and payload must give exactly the committed PAE bytes, key id, signature and envelope text.
//! The vectors were checked independently with Python's `cryptography` package
//! (`tests/fixtures/envelope/crosscheck.py`).

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use index_schema::envelope::{
    Envelope, KeyId, PublicKey, SecretKey, pae, sign_manifest, verify_manifest,
};
use index_schema::manifest::Manifest;
use index_schema::media_types::AGENT_MANIFEST_V1;
use index_schema::name::Digest;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn vectors() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(fixtures().join("envelope")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("vector-") && name.ends_with(".json") {
            let v = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            out.push((name, v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 2);
    out
}

fn field<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("vector has no `{key}`"))
}

fn b64(v: &Value, key: &str) -> Vec<u8> {
    STANDARD.decode(field(v, key)).unwrap()
}

#[test]
fn seed_is_0x01_to_0x20() {
    for (name, v) in vectors() {
        let seed: Vec<u8> = (1..=32).collect();
        assert_eq!(hex::decode(field(&v, "seedHex")).unwrap(), seed, "{name}");
    }
}

#[test]
fn vectors_recompute_exactly() {
    for (name, v) in vectors() {
        let seed: [u8; 32] = hex::decode(field(&v, "seedHex"))
            .unwrap()
            .try_into()
            .unwrap();
        let key = SecretKey::from_seed(&seed);
        assert_eq!(key.to_secret_text(), field(&v, "secretKey"), "{name}");
        assert_eq!(
            key.public_key().to_string(),
            field(&v, "publicKey"),
            "{name}"
        );
        assert_eq!(key.key_id().to_string(), field(&v, "keyid"), "{name}");
        assert_eq!(
            PublicKey::parse(field(&v, "publicKey")).unwrap().key_id(),
            KeyId::parse(field(&v, "keyid")).unwrap()
        );

        let payload_type = field(&v, "payloadType");
        let payload = b64(&v, "payloadBase64");
        assert_eq!(
            pae(payload_type, &payload),
            b64(&v, "paeBase64"),
            "{name}: PAE"
        );
        assert_eq!(Digest::of(&payload).to_string(), field(&v, "payloadDigest"));

        let env = Envelope::sign(payload_type, &payload, &key);
        assert_eq!(
            env.signatures[0].sig,
            b64(&v, "sigBase64"),
            "{name}: signature"
        );
        assert_eq!(
            env.to_json(),
            field(&v, "envelope"),
            "{name}: envelope text"
        );

        let parsed = Envelope::from_json_any_type(field(&v, "envelope")).unwrap();
        assert_eq!(parsed, env);
        let verified = parsed.verify(payload_type, &[key.public_key()]).unwrap();
        assert_eq!(verified.payload, payload);
        assert_eq!(verified.key_id.to_string(), field(&v, "keyid"));
    }
}

#[test]
fn dsse_spec_pae_example() {
    let (_, v) = vectors()
        .into_iter()
        .find(|(n, _)| n == "vector-2.json")
        .unwrap();
    assert_eq!(
        b64(&v, "paeBase64"),
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    );
}

#[test]
fn manifest_vector_is_the_signed_fixture() {
    let (_, v) = vectors()
        .into_iter()
        .find(|(n, _)| n == "vector-1.json")
        .unwrap();
    assert_eq!(field(&v, "payloadType"), AGENT_MANIFEST_V1);
    let text = fs::read_to_string(fixtures().join("manifest/remote.json")).unwrap();
    let manifest = Manifest::from_json(&text).unwrap();
    let seed: [u8; 32] = hex::decode(field(&v, "seedHex"))
        .unwrap()
        .try_into()
        .unwrap();
    let key = SecretKey::from_seed(&seed);

    let env = sign_manifest(&manifest, &key);
    assert_eq!(env.to_json(), field(&v, "envelope"));
    let committed = fs::read_to_string(fixtures().join("envelope/remote.envelope.json")).unwrap();
    assert_eq!(committed.trim_end(), env.to_json());

    let parsed = Envelope::from_json(&committed).unwrap();
    let (m, keyid, digest) = verify_manifest(&parsed, &[key.public_key()]).unwrap();
    assert_eq!(m, manifest);
    assert_eq!(keyid, key.key_id());
    assert_eq!(digest.to_string(), field(&v, "payloadDigest"));
    assert_eq!(digest, manifest.digest());
}
