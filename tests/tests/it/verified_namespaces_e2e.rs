//! Verified namespaces (issue 33, point 3) with the real `ofc` against the real `ofc-hub`, on
//! SQLite and PostgreSQL, the proofs served by real servers: dnsmasq (through
//! `scripts/peers/dnsmasq`) for the TXT record and the HTTPS server's address, and an HTTPS
//! server on 127.0.0.1 with a test CA the hub trusts (`verify_ca_file` in its `hub.toml`).
//! `ofc namespace record` prints the line to publish; `ofc namespace verify` refuses a missing
//! record (naming the record and how to check it) and verifies once it is there; `ofc search`
//! marks the agents and `--verified` keeps only them; `ofc info` shows it; the record removed,
//! the hub's re-check lapses it (`ofc namespace show`), and `--verified` finds nothing.

use std::time::{Duration, Instant};

use crate::common::Publishers as _;
use crate::common::bin;
use crate::common::run::tag;
use ofc_test_kit::domain_proof::{DnsRecord, DnsServer, HttpsProof};
use ofc_test_kit::{Backend, ProcessOptions, TestHub};

/// The longest a re-check (every second here) or a publish may take to show.
const BOUND: Duration = Duration::from_secs(20);

fn agent_dir(root: &std::path::Path, word: &str) -> std::path::PathBuf {
    let dir = root.join("prover");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@prover\"\nname: prover\npackage: acme/prover\nversion: 1.0.0\n\
             tagline: A {word} agent\ndescription: Verified namespace tests ({}).\n\
             command: {:?}\nargs: [\"--name\", \"prover\"]\n",
            tag("verified"),
            bin("ofc-test-agent").display().to_string()
        ),
    )
    .unwrap();
    dir
}

fn verified_namespace(backend: Backend) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let https = rt.block_on(HttpsProof::start("web.ofc.test"));
    let base = vec![DnsRecord::A("web.ofc.test".into(), [127, 0, 0, 1].into())];
    let mut dns = DnsServer::start(&base);
    let toml = format!(
        "verify_recheck_secs = 1\nverify_dns_server = \"{}\"\nverify_ca_file = {:?}\n\
         verify_https_port = {}\noutbound_allow_private = true\n",
        dns.addr(),
        https.ca_file().display().to_string(),
        https.port()
    );
    let hub = TestHub::process(ProcessOptions::new(backend).hub_toml(&toml));
    let acme = hub.publisher("acme", &[]);
    let work = tempfile::tempdir().unwrap();
    let word = tag("prooftest");
    acme.ofc
        .ok(&["publish", agent_dir(work.path(), &word).to_str().unwrap()]);

    // The line to publish: one per live key of the namespace.
    let record = acme.ofc.ok(&["namespace", "record", "acme"]);
    let record = record.trim().to_string();
    assert!(record.starts_with("v=ofc1; k=ed25519; p="), "{record}");

    // No record yet: refused, naming the record and how to check it.
    let r = acme.ofc.fails(
        1,
        &[
            "namespace",
            "verify",
            "acme",
            "dns.ofc.test",
            "--method",
            "dns",
        ],
    );
    assert!(
        r.stderr
            .contains("cannot verify namespace `acme` by dns.ofc.test")
            && r.stderr.contains(&record)
            && r.stderr.contains("dig +short TXT dns.ofc.test"),
        "{}",
        r.stderr
    );
    // Bad input is refused before the hub is asked.
    let r = acme.ofc.run(&[
        "namespace",
        "verify",
        "acme",
        "dns.ofc.test",
        "--method",
        "ftp",
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);

    // The record published: verified.
    let mut with_proof = base.clone();
    with_proof.push(DnsRecord::Txt("dns.ofc.test".into(), record.clone()));
    dns.restart(&with_proof);
    let out = acme.ofc.ok(&[
        "namespace",
        "verify",
        "acme",
        "dns.ofc.test",
        "--method",
        "dns",
    ]);
    assert!(
        out.starts_with("namespace acme is verified: it holds dns.ofc.test (dns proof"),
        "{out}"
    );
    let v = acme.ofc.json(&["namespace", "show", "acme"]);
    assert_eq!(v["domain"]["verified"], true, "{v}");

    // Marked in search and info; --verified keeps it.
    let start = Instant::now();
    let shown = loop {
        let s = acme.ofc.ok(&["search", &word]);
        if s.contains("acme/prover") {
            break s;
        }
        assert!(start.elapsed() < BOUND, "not found by search: {s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(shown.contains("[verified: dns.ofc.test]"), "{shown}");
    let only = acme.ofc.json(&["search", &word, "--verified"]);
    assert_eq!(only["hits"][0]["verified_domain"], "dns.ofc.test", "{only}");
    let info = acme.ofc.ok(&["info", "acme/prover"]);
    assert!(info.contains("acme holds dns.ofc.test"), "{info}");

    // HTTPS: the file served by the test server (its CA trusted by the hub) proves it too.
    https.serve(Some(&format!("{record}\n")));
    let out = acme.ofc.ok(&[
        "namespace",
        "verify",
        "acme",
        "web.ofc.test",
        "--method",
        "https",
    ]);
    assert!(out.contains("it holds web.ofc.test (https proof"), "{out}");
    assert!(https.requests() >= 1);

    // The file goes: the hub's re-check lapses the verification, visibly.
    https.serve(None);
    let start = Instant::now();
    let shown = loop {
        let s = acme.ofc.run(&["namespace", "show", "acme"]);
        if s.stdout.contains("NOT verified") {
            break s;
        }
        assert!(
            start.elapsed() < BOUND,
            "no lapse: {} {}",
            s.stdout,
            s.stderr
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(shown.stderr.contains("404"), "{}", shown.stderr);
    let only = acme.ofc.json(&["search", &word, "--verified"]);
    assert_eq!(only["hits"], serde_json::json!([]), "{only}");
    let r = acme.ofc.ok(&["search", &word, "--verified"]);
    assert!(r.is_empty(), "{r}");
    drop(rt);
}

#[test]
fn verified_namespace_on_sqlite() {
    verified_namespace(Backend::Sqlite);
}

#[test]
fn verified_namespace_on_postgres() {
    verified_namespace(Backend::Postgres);
}
