//! Verified namespaces (issue 33, point 3), against real servers: a DNS server (Debian
//! dnsmasq, started per test through `scripts/peers/dnsmasq`) answering the TXT records of the
//! proofs and the address of the HTTPS one, and an HTTPS server on 127.0.0.1 with a
//! certificate from a test CA the hub is told to trust (`verify_ca_file`). The right key
//! verifies; a wrong key, a missing record, an untrusted certificate are refused with what to
//! publish; a record that disappears lapses the verification at the next re-check
//! (`verify_recheck_secs = 1`), and it holds again when the record is back; a revoked key ends
//! it at once. The marks: namespace info, agent info, search hits, `verified=true`, the pages.
//! On SQLite and PostgreSQL. These hubs turn on `outbound_allow_private` (the HTTPS server is
//! on 127.0.0.1); with the default outbound address policy a domain resolving to 127.0.0.1 is
//! refused at the claim and at each re-check, without a connection. Then the look-alike names
//! refused at creation, over HTTP.

use std::time::{Duration, Instant};

use hub_core::domains::record_for;
use index_schema::envelope::SecretKey;
use ofc_test_kit::domain_proof::{DnsRecord, DnsServer, HttpsProof};
use ofc_test_kit::{Backend, TestHub, remote_manifest};
use reqwest::Method;
use rstest::rstest;
use serde_json::{Value, json};

/// The longest a re-check may take to show (re-checks every 1 s here).
const BOUND: Duration = Duration::from_secs(15);

async fn until(app: &TestHub, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (s, v) = app.get(path).await;
        if s == 200 && done(&v) {
            return v;
        }
        assert!(start.elapsed() < BOUND, "{path}: not reached: {s} {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn claim(app: &TestHub, token: &str, ns: &str, domain: &str, method: &str) -> (u16, Value) {
    app.call(
        Method::PUT,
        &format!("/api/v1/namespaces/{ns}/domain"),
        Some(token),
        Some(json!({"domain": domain, "method": method})),
    )
    .await
}

fn message(v: &Value) -> &str {
    v["message"].as_str().unwrap_or_default()
}

fn hit<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == name)
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn domains_are_proved_by_dns_and_https_refused_when_wrong_and_lapse(
    #[case] backend: Backend,
) {
    let https = HttpsProof::start("web.ofc.test").await;
    let alice_key = ofc_test_kit::key_for("alice").public_key().to_string();
    let stranger = SecretKey::from_seed(&[7; 32]).public_key().to_string();
    let records = |with_proof: bool| {
        let mut r = vec![
            DnsRecord::A("web.ofc.test".into(), [127, 0, 0, 1].into()),
            DnsRecord::Txt("dns.ofc.test".into(), "v=spf1 -all".into()),
            DnsRecord::Txt("wrong.ofc.test".into(), record_for(&stranger)),
            DnsRecord::Txt("bad.ofc.test".into(), "v=ofc1; k=ed25519; p=short".into()),
        ];
        if with_proof {
            r.push(DnsRecord::Txt(
                "dns.ofc.test".into(),
                record_for(&alice_key),
            ));
        }
        r
    };
    let mut dns = DnsServer::start(&records(true));
    let (dns_addr, ca, port) = (dns.addr(), https.ca_file().to_path_buf(), https.port());
    let app = TestHub::in_process_with(backend, move |c| {
        c.verify_dns_server = Some(dns_addr);
        c.verify_ca_file = Some(ca);
        c.verify_https_port = port;
        c.verify_recheck_secs = 1;
        c.outbound_allow_private = true;
    })
    .await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    for (who, agent) in [(&alice, "alice/coder"), (&bob, "bob/coder")] {
        let (s, b) = app
            .publish(&who.token, &who.key, &remote_manifest(agent, "1.0.0"), None)
            .await;
        assert_eq!(s, 201, "{b}");
    }
    until(&app, "/api/v1/search?q=code", |v| {
        v["hits"].as_array().unwrap().len() == 2
    })
    .await;

    // A wrong key: refused naming it, with the record to publish.
    let (s, v) = claim(&app, &alice.token, "alice", "wrong.ofc.test", "dns").await;
    assert_eq!(
        (s, v["code"].as_str()),
        (400, Some("domain_proof_failed")),
        "{v}"
    );
    assert!(message(&v).contains("not a key of `alice`"), "{v}");
    assert!(message(&v).contains(&record_for(&alice_key)), "{v}");
    // A missing record (the name exists, with another TXT record; and a name that does not).
    let (s, v) = claim(&app, &alice.token, "alice", "missing.ofc.test", "dns").await;
    assert_eq!(s, 400, "{v}");
    assert!(
        message(&v).contains("no proof at the TXT records of missing.ofc.test")
            && message(&v).contains("publish a TXT record on missing.ofc.test with:")
            && message(&v).contains(&record_for(&alice_key)),
        "{v}"
    );
    let (s, v) = claim(&app, &alice.token, "alice", "web.ofc.test", "dns").await;
    assert_eq!(s, 400, "{v}");
    assert!(message(&v).contains("has no TXT record"), "{v}");
    // A malformed one is named.
    let (s, v) = claim(&app, &alice.token, "alice", "bad.ofc.test", "dns").await;
    assert_eq!(s, 400, "{v}");
    assert!(message(&v).contains("does not parse"), "{v}");
    // Only an owner of the namespace claims for it.
    let (s, v) = claim(&app, &bob.token, "alice", "dns.ofc.test", "dns").await;
    assert_eq!(s, 403, "{v}");
    // Bad input.
    let (s, v) = claim(&app, &alice.token, "alice", "127.0.0.1", "dns").await;
    assert_eq!(
        (s, v["code"].as_str()),
        (400, Some("invalid_domain")),
        "{v}"
    );
    let (s, v) = claim(&app, &alice.token, "alice", "dns.ofc.test", "smtp").await;
    assert_eq!(s, 400, "{v}");
    assert!(message(&v).contains("`https` or `dns`"), "{v}");
    let (s, _) = app.get("/api/v1/namespaces/alice").await;
    assert_eq!(s, 200);

    // The right key, among other TXT records: verified.
    let (s, v) = claim(&app, &alice.token, "alice", "dns.ofc.test", "dns").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["domain"]["domain"], "dns.ofc.test", "{v}");
    assert_eq!(v["domain"]["method"], "dns");
    assert_eq!(v["domain"]["verified"], true);
    assert_eq!(
        v["domain"]["key_id"],
        ofc_test_kit::key_for("alice")
            .public_key()
            .key_id()
            .to_string()
    );
    // Marked: the agent, the search hits, the verified filter, the pages.
    let (_, info) = app.get("/api/v1/agents/alice/coder").await;
    assert_eq!(info["verified_domain"], "dns.ofc.test", "{info}");
    let (_, info) = app.get("/api/v1/agents/bob/coder").await;
    assert!(info.get("verified_domain").is_none(), "{info}");
    let (_, page) = app.get("/api/v1/search?q=code").await;
    assert_eq!(
        hit(&page, "alice/coder").unwrap()["verified_domain"],
        "dns.ofc.test"
    );
    assert!(
        hit(&page, "bob/coder")
            .unwrap()
            .get("verified_domain")
            .is_none()
    );
    let (_, page) = app.get("/api/v1/search?q=code&verified=true").await;
    assert_eq!(page["hits"].as_array().unwrap().len(), 1, "{page}");
    assert!(hit(&page, "alice/coder").is_some(), "{page}");
    let (s, v) = app.get("/api/v1/search?q=code&verified=maybe").await;
    assert_eq!(s, 400, "{v}");
    let html = app.get_text("/agents/alice/coder").await;
    assert!(html.contains("verified: dns.ofc.test"), "{html}");
    let html = app.get_text("/search?q=code").await;
    assert!(html.contains("verified: dns.ofc.test"), "{html}");

    // The record disappears: the next re-check lapses the verification, visibly.
    dns.restart(&records(false));
    let v = until(&app, "/api/v1/namespaces/alice", |v| {
        v["domain"]["verified"] == false
    })
    .await;
    assert!(v["domain"]["lapsed_at"].as_i64().is_some(), "{v}");
    let why = v["domain"]["lapse_reason"].as_str().unwrap();
    assert!(why.contains("no `v=ofc1` record"), "{why}");
    let (_, info) = app.get("/api/v1/agents/alice/coder").await;
    assert!(info.get("verified_domain").is_none(), "{info}");
    let (_, page) = app.get("/api/v1/search?q=code&verified=true").await;
    assert!(page["hits"].as_array().unwrap().is_empty(), "{page}");
    // It comes back: verified again at a later re-check.
    dns.restart(&records(true));
    let v = until(&app, "/api/v1/namespaces/alice", |v| {
        v["domain"]["verified"] == true
    })
    .await;
    assert!(v["domain"].get("lapsed_at").is_none(), "{v}");

    // HTTPS: missing file (404) refused with what to serve where; then served: verified.
    let (s, v) = claim(&app, &alice.token, "alice", "web.ofc.test", "https").await;
    assert_eq!(s, 400, "{v}");
    assert!(
        message(&v).contains("https://web.ofc.test/.well-known/ofc-namespace.txt")
            && message(&v).contains("404")
            && message(&v).contains(&record_for(&alice_key)),
        "{v}"
    );
    https.serve(Some(&format!(
        "# ofc namespace proof\n{}\n",
        record_for(&stranger)
    )));
    let (s, v) = claim(&app, &alice.token, "alice", "web.ofc.test", "https").await;
    assert_eq!(s, 400, "{v}");
    assert!(message(&v).contains("not a key of `alice`"), "{v}");
    https.serve(Some(&format!("{}\n", record_for(&alice_key))));
    let before = https.requests();
    let (s, v) = claim(&app, &alice.token, "alice", "web.ofc.test", "https").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["domain"]["domain"], "web.ofc.test");
    assert_eq!(v["domain"]["method"], "https");
    assert!(https.requests() > before);
    let (_, info) = app.get("/api/v1/agents/alice/coder").await;
    assert_eq!(info["verified_domain"], "web.ofc.test", "{info}");
    // The file goes away: lapses.
    https.serve(None);
    let v = until(&app, "/api/v1/namespaces/alice", |v| {
        v["domain"]["verified"] == false
    })
    .await;
    assert!(
        v["domain"]["lapse_reason"]
            .as_str()
            .unwrap()
            .contains("404"),
        "{v}"
    );
    https.serve(Some(&record_for(&alice_key)));
    until(&app, "/api/v1/namespaces/alice", |v| {
        v["domain"]["verified"] == true
    })
    .await;

    // Revoking the key the proof names ends the verification at once.
    let key_id = ofc_test_kit::key_for("alice")
        .public_key()
        .key_id()
        .to_string();
    let (s, v) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/namespaces/alice/keys/{key_id}"),
            Some(&alice.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{v}");
    let (_, v) = app.get("/api/v1/namespaces/alice").await;
    assert_eq!(v["domain"]["verified"], false, "{v}");
    assert!(
        v["domain"]["lapse_reason"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{v}"
    );
    // Dropping the claim.
    let (s, v) = app
        .call(
            Method::DELETE,
            "/api/v1/namespaces/alice/domain",
            Some(&alice.token),
            None,
        )
        .await;
    assert_eq!(s, 204, "{v}");
    let (_, v) = app.get("/api/v1/namespaces/alice").await;
    assert!(v.get("domain").is_none(), "{v}");
    let (s, _) = app
        .call(
            Method::DELETE,
            "/api/v1/namespaces/alice/domain",
            Some(&alice.token),
            None,
        )
        .await;
    assert_eq!(s, 404);
}

/// A hub that does not trust the test CA refuses the HTTPS proof, saying why.
#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_certificate_proves_nothing() {
    let https = HttpsProof::start("web.ofc.test").await;
    let dns = DnsServer::start(&[DnsRecord::A("web.ofc.test".into(), [127, 0, 0, 1].into())]);
    let alice_key = ofc_test_kit::key_for("alice").public_key().to_string();
    https.serve(Some(&record_for(&alice_key)));
    let (dns_addr, port) = (dns.addr(), https.port());
    let app = TestHub::in_process_with(Backend::Sqlite, move |c| {
        c.verify_dns_server = Some(dns_addr);
        c.verify_https_port = port;
        c.outbound_allow_private = true;
    })
    .await;
    let (s, v) = claim(&app, &app.user.token, "alice", "web.ofc.test", "https").await;
    assert_eq!(s, 400, "{v}");
    assert!(
        message(&v).contains("could not read https://web.ofc.test/")
            && message(&v).to_lowercase().contains("certificate"),
        "{v}"
    );
}

/// The outbound address policy, on by default: a domain dnsmasq resolves to 127.0.0.1 is
/// refused when the hub would fetch its HTTPS proof — at the claim, and at the re-check of a
/// claim verified before (a domain re-pointed at the hub's own network: DNS rebinding) — the
/// reason naming the domain, the address and the policy, shown and kept as the lapse's
/// reason. The HTTPS server behind the address serves a valid proof under a certificate the
/// hub trusts, so a hub that connected would verify: it sees no request.
#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn domains_resolving_to_private_addresses_are_refused_at_fetch_time(
    #[case] backend: Backend,
) {
    let https = HttpsProof::start("web.ofc.test").await;
    let dns = DnsServer::start(&[DnsRecord::A("web.ofc.test".into(), [127, 0, 0, 1].into())]);
    let alice = ofc_test_kit::key_for("alice").public_key();
    https.serve(Some(&record_for(&alice.to_string())));
    let (dns_addr, ca, port) = (dns.addr(), https.ca_file().to_path_buf(), https.port());
    let app = TestHub::in_process_with(backend, move |c| {
        c.verify_dns_server = Some(dns_addr);
        c.verify_ca_file = Some(ca);
        c.verify_https_port = port;
        c.verify_recheck_secs = 1;
    })
    .await;
    let refused = |m: &str| {
        m.contains("the hub does not fetch https://web.ofc.test/.well-known/ofc-namespace.txt")
            && m.contains("`web.ofc.test` resolves to 127.0.0.1, a loopback address")
            && m.contains("outbound address policy")
            && m.contains("outbound_allow_private = true")
    };
    let (s, v) = claim(&app, &app.user.token, "alice", "web.ofc.test", "https").await;
    assert_eq!(
        (s, v["code"].as_str()),
        (400, Some("domain_proof_failed")),
        "{v}"
    );
    assert!(refused(message(&v)), "{v}");
    let (_, v) = app.get("/api/v1/namespaces/alice").await;
    assert!(v.get("domain").is_none(), "{v}");
    assert_eq!(https.requests(), 0, "the hub connected");

    // A claim verified earlier (stored as the claim would store it) is re-checked through
    // the same client: it lapses, the policy's refusal kept as the reason.
    let core = &app.state.core;
    let ns = hub_core::namespaces::find(core, "alice").await.unwrap();
    let operator = hub_core::store::Actor {
        user_id: None,
        user_name: "operator".into(),
        token_id: None,
    };
    let key_id = alice.key_id().to_string();
    let at = hub_core::store::now_ms();
    core.store
        .set_domain(&operator, &ns, "web.ofc.test", "https", &key_id, at)
        .await
        .unwrap();
    let v = until(&app, "/api/v1/namespaces/alice", |v| {
        v["domain"]["verified"] == false
    })
    .await;
    let why = v["domain"]["lapse_reason"].as_str().unwrap();
    assert!(refused(why), "{why}");
    assert_eq!(https.requests(), 0, "the hub connected");
}

/// A `verify_ca_file` the hub cannot use stops it at start.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_ca_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ofc_test_kit::test_config(&dir, None);
    cfg.verify_ca_file = Some(dir.path().join("missing.pem"));
    let e = hub_server::build_state(cfg.clone()).await.unwrap_err();
    assert!(
        format!("{e:#}").contains("verify_ca_file: cannot read"),
        "{e:#}"
    );
    std::fs::write(dir.path().join("empty.pem"), "no certificate here\n").unwrap();
    cfg.verify_ca_file = Some(dir.path().join("empty.pem"));
    let e = hub_server::build_state(cfg).await.unwrap_err();
    assert!(format!("{e:#}").contains("holds no certificate"), "{e:#}");
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test(flavor = "multi_thread")]
async fn lookalike_and_reserved_namespaces_are_refused(#[case] backend: Backend) {
    let app = TestHub::in_process(backend).await;
    let token = app.user.token.clone();
    let create = |name: &'static str| {
        let app = &app;
        let token = token.clone();
        async move {
            app.call(
                Method::POST,
                "/api/v1/namespaces",
                Some(&token),
                Some(json!({ "name": name })),
            )
            .await
        }
    };
    for name in ["acme-labs", "google", "widget"] {
        let (s, v) = create(name).await;
        assert_eq!(s, 201, "{name}: {v}");
    }
    // (name, status, code, a word of the message)
    let table: &[(&str, u16, &str, &str)] = &[
        ("acme_labs", 409, "namespace_lookalike", "`acme-labs`"),
        ("acmelabs", 409, "namespace_lookalike", "`acme-labs`"),
        ("ACME-LABS", 409, "namespace_exists", ""),
        ("Acme_Labs", 409, "namespace_lookalike", "`acme-labs`"),
        ("g00gle", 409, "namespace_lookalike", "`google`"),
        ("goog1e", 409, "namespace_lookalike", "`google`"),
        ("vvidget", 409, "namespace_lookalike", "`widget`"),
        ("a1ice", 409, "namespace_lookalike", "`alice`"),
        ("adm1n", 400, "namespace_lookalike", "reserved name `admin`"),
        ("0fc", 400, "namespace_lookalike", "reserved name `ofc`"),
        (
            "off1cial",
            400,
            "namespace_lookalike",
            "reserved name `official`",
        ),
        ("admin", 400, "invalid_name", "reserved"),
        ("acme.labs", 400, "invalid_name", ""),
        ("аcme-labs", 400, "invalid_name", ""),
        ("ｇoogle", 400, "invalid_name", ""),
    ];
    for (name, status, code, word) in table {
        let (s, v) = create(name).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (*status, Some(*code)),
            "{name}: {v}"
        );
        assert!(message(&v).contains(word), "{name}: {v}");
    }
    // Names that only share letters stay free.
    for name in ["acme-lab", "googles", "widgets"] {
        let (s, v) = create(name).await;
        assert_eq!(s, 201, "{name}: {v}");
    }
}
