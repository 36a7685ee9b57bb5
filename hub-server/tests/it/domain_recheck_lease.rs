//! The domain proofs' re-checks run on one replica (the holder of an advisory-lock lease,
//! `hub_core::domains::RECHECK_LEASE`): two `ofc-hub` processes on one PostgreSQL database,
//! each asking its own dnsmasq (through `scripts/peers/dnsmasq`) for the TXT record, re-check
//! every second. Only the first one's dnsmasq is asked while both run; once it is killed,
//! the second takes the lease and its dnsmasq is asked.

use std::time::{Duration, Instant};

use hub_core::domains::record_for;
use ofc_test_kit::domain_proof::{DnsRecord, DnsServer};
use ofc_test_kit::{Backend, HubProcess, ProcessOptions};
use reqwest::Method;
use serde_json::json;

const DOMAIN: &str = "dns.ofc.test";

/// Each replica's settings: its own resolver, the blob directory both share (one hub).
fn toml(dns: &DnsServer, blobs: &std::path::Path) -> String {
    format!(
        "verify_recheck_secs = 1\nverify_dns_server = \"{}\"\nblob_dir = {:?}\n",
        dns.addr(),
        blobs.display().to_string()
    )
}

#[test]
fn only_the_lease_holder_rechecks_and_another_takes_over() {
    let alice_key = ofc_test_kit::key_for("alice").public_key().to_string();
    let records = [DnsRecord::Txt(DOMAIN.into(), record_for(&alice_key))];
    let (dns_a, dns_b) = (DnsServer::start(&records), DnsServer::start(&records));
    let log = "warn,hub_server=info";
    let blobs = tempfile::tempdir().unwrap();
    let mut a = HubProcess::start(
        ProcessOptions::new(Backend::Postgres)
            .hub_toml(&toml(&dns_a, blobs.path()))
            .env("OFC_HUB_LOG", log),
    );
    let alice = a.new_user("alice");
    let (s, v) = a.api(
        Method::PUT,
        "/api/v1/namespaces/alice/domain",
        Some(&alice.token),
        Some(json!({"domain": DOMAIN, "method": "dns"})),
    );
    assert_eq!((s, &v["domain"]["verified"]), (200, &json!(true)), "{v}");
    let mut b = HubProcess::start(
        ProcessOptions::default()
            .database_url(a.database_url().unwrap())
            .hub_toml(&toml(&dns_b, blobs.path()))
            .env("OFC_HUB_LOG", log)
            .stopped(),
    );
    // One hub: the same log key.
    std::fs::create_dir_all(b.data_dir()).unwrap();
    std::fs::copy(
        a.data_dir().join(hub_core::log_key::LOG_KEY_FILE),
        b.data_dir().join(hub_core::log_key::LOG_KEY_FILE),
    )
    .unwrap();
    b.spawn();

    // Both run; `a` holds the lease (it started first): only its resolver is asked, again
    // and again (the claim was one question).
    let asked_a = dns_a.queries("TXT", DOMAIN);
    std::thread::sleep(Duration::from_secs(6));
    assert!(
        dns_a.queries("TXT", DOMAIN) >= asked_a + 2,
        "the lease holder did not re-check: {} questions before, {} after\n{}",
        asked_a,
        dns_a.queries("TXT", DOMAIN),
        a.log()
    );
    assert_eq!(
        dns_b.queries("TXT", DOMAIN),
        0,
        "the replica without the lease re-checked:\n{}",
        b.log()
    );
    assert!(a.log().contains("now re-checks"), "{}", a.log());
    assert!(!b.log().contains("now re-checks"), "{}", b.log());

    // The holder dies: `b` takes the lease (asked every 2 s) and re-checks through its own
    // resolver; the namespace stays verified.
    a.kill();
    let start = Instant::now();
    while dns_b.queries("TXT", DOMAIN) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the second replica did not take over the re-checks within 30 s:\n{}",
            b.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(b.log().contains("now re-checks"), "{}", b.log());
    let (s, v) = b.api(Method::GET, "/api/v1/namespaces/alice", None, None);
    assert_eq!((s, &v["domain"]["verified"]), (200, &json!(true)), "{v}");
}
