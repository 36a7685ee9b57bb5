use index_schema::envelope::SecretKey;

use super::{FetchError, Method, check_domain, judge, record_for};
use crate::store::KeyRow;

fn key(byte: u8, revoked: bool) -> KeyRow {
    let public = SecretKey::from_seed(&[byte; 32]).public_key();
    KeyRow {
        key_id: public.key_id().to_string(),
        public_key: public.to_string(),
        added_by: "alice".into(),
        added_at: 1,
        revoked_at: revoked.then_some(2),
        revoked_by: revoked.then(|| "alice".into()),
    }
}

#[test]
fn domains_are_checked() {
    for (input, want) in [
        ("example.com", Some("example.com")),
        ("Example.COM.", Some("example.com")),
        (" sub.example.co.uk ", Some("sub.example.co.uk")),
        ("xn--bcher-kva.example", Some("xn--bcher-kva.example")),
        ("localhost", None),
        ("", None),
        ("exa mple.com", None),
        ("-bad.example", None),
        ("bad-.example", None),
        ("a..b", None),
        ("127.0.0.1", None),
        ("bücher.example", None),
        ("example.com/path", None),
        ("user@example.com", None),
    ] {
        match (check_domain(input), want) {
            (Ok(d), Some(w)) => assert_eq!(d, w, "{input:?}"),
            (Err(e), None) => assert_eq!(
                e.code,
                index_schema::hub_api::ErrorCode::InvalidDomain,
                "{input:?}"
            ),
            (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
        }
    }
    let long = format!("{}.com", "a".repeat(64));
    assert!(check_domain(&long).is_err());
}

#[test]
fn the_right_key_proves_and_others_are_refused_with_the_record_to_publish() {
    let live = key(1, false);
    let revoked = key(2, true);
    let stranger = key(3, false);
    let keys = [live.clone(), revoked.clone()];
    let j = |records: Vec<String>| judge("acme", "acme.example", Method::Dns, Ok(records), &keys);
    let expected = record_for(&live.public_key);
    assert!(expected.starts_with("v=ofc1; k=ed25519; p="), "{expected}");

    // Among other TXT records, in any spacing.
    let spf = "v=spf1 -all".to_string();
    assert_eq!(
        j(vec![spf.clone(), expected.clone()]),
        Ok(live.key_id.clone())
    );
    let tight = expected.replace("; ", ";");
    assert_eq!(j(vec![tight]), Ok(live.key_id.clone()));

    // A stranger's key: refused naming it, with the record to publish.
    let e = j(vec![record_for(&stranger.public_key)]).unwrap_err();
    assert!(
        e.contains(&stranger.key_id) && e.contains("not a key of `acme`"),
        "{e}"
    );
    assert!(e.contains(&expected), "{e}");
    // The revoked key proves nothing.
    let e = j(vec![record_for(&revoked.public_key)]).unwrap_err();
    assert!(e.contains("(revoked)"), "{e}");
    // No record of ours.
    let e = j(vec![spf]).unwrap_err();
    assert!(
        e.contains("no `v=ofc1` record") && e.contains(&expected),
        "{e}"
    );
    // Malformed ones are named.
    let e = j(vec!["v=ofc1; k=rsa; p=AAAA".into()]).unwrap_err();
    assert!(e.contains("only `k=ed25519`"), "{e}");
    let e = j(vec!["v=ofc1; k=ed25519; p=short".into()]).unwrap_err();
    assert!(e.contains("does not parse") && e.contains("`p=`"), "{e}");
    let e = j(vec!["v=ofc1; k=ed25519".into()]).unwrap_err();
    assert!(e.contains("no `p=` field"), "{e}");
}

#[test]
fn missing_and_unreachable_proofs_say_where_and_what() {
    let live = key(1, false);
    let keys = [live.clone()];
    let e = judge(
        "acme",
        "acme.example",
        Method::Https,
        Err(FetchError::Missing("HTTP 404".into())),
        &keys,
    )
    .unwrap_err();
    assert!(
        e.contains("https://acme.example/.well-known/ofc-namespace.txt")
            && e.contains("HTTP 404")
            && e.contains(&record_for(&live.public_key)),
        "{e}"
    );
    let e = judge(
        "acme",
        "acme.example",
        Method::Dns,
        Err(FetchError::Failed("no answer".into())),
        &keys,
    )
    .unwrap_err();
    assert!(
        e.contains("could not read the TXT records of acme.example"),
        "{e}"
    );
    // An address the outbound policy refuses: said as such, not as a proof to publish.
    let e = judge(
        "acme",
        "acme.example",
        Method::Https,
        Err(FetchError::Refused(
            "`acme.example` resolves to 10.0.0.1, a private address (10.0.0.0/8)".into(),
        )),
        &keys,
    )
    .unwrap_err();
    assert!(
        e.contains(
            "the hub does not fetch https://acme.example/.well-known/ofc-namespace.txt: \
             `acme.example` resolves to 10.0.0.1"
        ) && e.contains("--method dns")
            && !e.contains(&record_for(&live.public_key)),
        "{e}"
    );
    // Without a live key there is nothing to vouch for.
    let e = judge(
        "acme",
        "acme.example",
        Method::Dns,
        Ok(vec![record_for(&live.public_key)]),
        &[key(1, true)],
    )
    .unwrap_err();
    assert!(
        e.contains("no live publisher key") && e.contains("ofc key register"),
        "{e}"
    );
}

#[test]
fn methods_parse() {
    assert_eq!(Method::parse("HTTPS").unwrap(), Method::Https);
    assert_eq!(Method::parse("dns").unwrap(), Method::Dns);
    let e = Method::parse("smtp").unwrap_err();
    assert!(e.message.contains("`https` or `dns`"), "{e}");
}
