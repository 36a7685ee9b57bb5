use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::{CardSigner, VerifyError, payload, signing_input, thumbprint, verify};
use crate::envelope::SecretKey;

fn rfc8037_key() -> SecretKey {
    // RFC 8037 Appendix A.1: the Ed25519 private key `d`.
    let d = URL_SAFE_NO_PAD
        .decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
        .unwrap();
    SecretKey::from_seed(&d.try_into().unwrap())
}

/// RFC 8037 A.2-A.4: the public key, its RFC 7638 thumbprint, and the JWS of its example.
#[test]
fn the_rfc_8037_key_gives_its_published_jwk_thumbprint_and_signature() {
    let signer = CardSigner::new(rfc8037_key());
    assert_eq!(
        signer.jwk()["x"],
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    );
    assert_eq!(signer.kid(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    let input = signing_input("eyJhbGciOiJFZERTQSJ9", "Example of Ed25519 signing");
    assert_eq!(
        input,
        "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
    );
    assert_eq!(
        URL_SAFE_NO_PAD.encode(signer.key.sign(input.as_bytes())),
        "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    );
}

fn card() -> Map<String, Value> {
    json!({
        "name": "Ledger Sorter",
        "description": "Sorts ledgers — in één keer",
        "url": "https://ledger.invalid/a2a",
        "version": "2.1.0",
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "sort", "name": "sort", "description": "sorts", "tags": ["ledger"]}],
        "ratio": 0.5,
    })
    .as_object()
    .unwrap()
    .clone()
}

#[test]
fn a_signed_card_verifies_and_a_changed_one_does_not() {
    let key = SecretKey::from_seed(&[7; 32]);
    let signer = CardSigner::new(key.clone());
    let mut c = card();
    let before = payload(&c);
    signer.sign(&mut c);
    // The payload leaves `signatures` out: signing does not change it.
    assert_eq!(payload(&c), before);
    let sigs = c["signatures"].as_array().unwrap();
    assert_eq!(sigs.len(), 1);
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(sigs[0]["protected"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        header,
        json!({"alg": "EdDSA", "kid": signer.kid(), "typ": "JOSE"})
    );
    assert_eq!(verify(&c, &key.public_key()), Ok(()));

    // Member order does not matter (the payload is canonical); content does.
    let mut reordered = Map::new();
    for (k, v) in c.iter().rev() {
        reordered.insert(k.clone(), v.clone());
    }
    assert_eq!(verify(&reordered, &key.public_key()), Ok(()));
    let mut changed = c.clone();
    changed["version"] = json!("2.1.1");
    assert_eq!(
        verify(&changed, &key.public_key()),
        Err(VerifyError::Mismatch(signer.kid().to_string()))
    );
    let other = SecretKey::from_seed(&[8; 32]).public_key();
    assert_eq!(
        verify(&c, &other),
        Err(VerifyError::NoSignature(thumbprint(&other)))
    );
}

#[test]
fn a_publishers_signatures_are_kept_and_still_verify() {
    let publisher = SecretKey::from_seed(&[1; 32]);
    let hub = SecretKey::from_seed(&[2; 32]);
    let mut c = card();
    CardSigner::new(publisher.clone()).sign(&mut c);
    CardSigner::new(hub.clone()).sign(&mut c);
    assert_eq!(c["signatures"].as_array().unwrap().len(), 2);
    assert_eq!(verify(&c, &publisher.public_key()), Ok(()));
    assert_eq!(verify(&c, &hub.public_key()), Ok(()));
}
