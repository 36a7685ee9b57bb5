//! Trusted publishing (issue 33, point 4) with the real `ofc` against the real `ofc-hub` and a
//! real OIDC issuer started by the test (`ofc_test_kit::oidc::OidcIssuer` on 127.0.0.1), on
//! SQLite and PostgreSQL: an owner trusts the issuer and a subject pattern with
//! `ofc namespace trust add`; a CI home with the signing key but no hub token publishes a
//! bundle agent with `ofc publish --oidc` (the ID token in `OFC_OIDC_TOKEN`); `ofc info` says
//! it was published by trusted publishing and from which subject, `ofc audit` verifies the log's
//! `trusted-publish` entry and a fresh `ofc pull` verifies the version; a replayed token and a
//! foreign subject are refused with the check that failed. With the hub's default outbound
//! address policy, `ofc namespace trust add` of an issuer URL naming 127.0.0.1 is refused, and
//! `ofc publish --oidc` with an issuer whose name resolves to 127.0.0.1 is refused without the
//! hub connecting, both saying why.

use crate::common::Publishers as _;
use crate::common::{Ofc, bin};
use ofc_test_kit::oidc::{OidcIssuer, Sign};
use ofc_test_kit::{Backend, ProcessOptions, TestHub};

const SUBJECT: &str = "repo:acme/coder:ref:refs/heads/main";

fn agent_dir(root: &std::path::Path, version: &str) -> std::path::PathBuf {
    let dir = root.join(format!("coder-{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@coder\"\nname: coder\npackage: acme/coder\nversion: {version}\n\
             tagline: A test agent\ndescription: Published from CI by trusted publishing.\n\
             command: {:?}\nargs: [\"--name\", \"coder\"]\n",
            bin("ofc-test-agent").display().to_string()
        ),
    )
    .unwrap();
    dir
}

/// Copies the signing keys of `from` into `to` (a CI holds the publisher's signing key, not a
/// hub token).
fn copy_keys(from: &Ofc, to: &Ofc) {
    let (src, dst) = (
        from.home().join("config/keys"),
        to.home().join("config/keys"),
    );
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}

fn trusted_publishing(backend: Backend) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let issuer = rt.block_on(OidcIssuer::start());
    let hub = TestHub::process(
        ProcessOptions::new(backend)
            .hub_toml("oidc_allow_http_loopback = true\noutbound_allow_private = true\n"),
    );
    let acme = hub.publisher("acme", &[]);
    let out = acme.ofc.ok(&[
        "namespace",
        "trust",
        "add",
        &issuer.url,
        "repo:acme/coder:ref:refs/heads/*",
    ]);
    assert!(out.starts_with("trusted publisher "), "{out}");
    let listed = acme.ofc.json(&["namespace", "trust", "list"]);
    let list = listed["trusted_publishers"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{listed}");
    assert_eq!(list[0]["issuer"], issuer.url.as_str());
    assert_eq!(list[0]["audience"], "ofc");

    // The CI: the signing key, no hub token.
    let ci_home = tempfile::tempdir().unwrap();
    let ci = Ofc::new(ci_home.path(), &hub.url);
    copy_keys(&acme.ofc, &ci);
    let work = tempfile::tempdir().unwrap();
    let v1 = agent_dir(work.path(), "1.0.0");
    let r = ci.fails(1, &["publish", v1.to_str().unwrap()]);
    assert!(r.stderr.contains("needs an API token"), "{}", r.stderr);

    let token = issuer.token(Sign::Rs256, issuer.claims("ofc", SUBJECT));
    let r = Ofc::finish(ci.cmd().env("OFC_OIDC_TOKEN", &token).args([
        "publish",
        v1.to_str().unwrap(),
        "--oidc",
    ]));
    r.assert_code(0);
    assert!(
        r.stderr.contains(&format!(
            "trusted publishing: publishing to acme as `{SUBJECT}`"
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(&token), "the ID token is never printed");

    // The same ID token again: refused, naming the check.
    let v2 = agent_dir(work.path(), "1.0.1");
    let mut again = ci.cmd();
    again
        .env("OFC_OIDC_TOKEN", &token)
        .args(["publish", v2.to_str().unwrap(), "--oidc"]);
    let r = Ofc::finish(&mut again);
    r.assert_code(1);
    assert!(
        r.stderr.contains("trusted publishing refused (replay)"),
        "{}",
        r.stderr
    );
    // A subject the namespace does not trust.
    let foreign = issuer.token(
        Sign::Es256,
        issuer.claims("ofc", "repo:mallory/coder:ref:refs/heads/main"),
    );
    let r = Ofc::finish(ci.cmd().env("OFC_OIDC_TOKEN", &foreign).args([
        "publish",
        v2.to_str().unwrap(),
        "--oidc",
    ]));
    r.assert_code(1);
    assert!(
        r.stderr.contains("trusted publishing refused (sub)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ofc namespace trust add"),
        "the hint says how to trust it: {}",
        r.stderr
    );
    // Without any token at all, `--oidc` says where it looks.
    let r = ci.fails(1, &["publish", v2.to_str().unwrap(), "--oidc"]);
    assert!(r.stderr.contains("OFC_OIDC_TOKEN"), "{}", r.stderr);

    // Anyone sees how it was published; the log proves it.
    let home = tempfile::tempdir().unwrap();
    let reader = Ofc::new(home.path(), &hub.url);
    let info = reader.ok(&["info", "acme/coder"]);
    assert!(
        info.contains(&format!(
            "trusted publishing from {SUBJECT} (issuer {})",
            issuer.url
        )),
        "{info}"
    );
    let audit = reader.ok(&["audit", "acme"]);
    assert!(
        audit.contains("trusted-publish acme/coder 1.0.0 sha256:")
            && audit.contains(&format!("from {SUBJECT} (issuer {})", issuer.url)),
        "{audit}"
    );
    let proj = tempfile::tempdir().unwrap();
    let mut pull = reader.cmd();
    pull.current_dir(proj.path()).args(["pull", "acme/coder"]);
    Ofc::finish(&mut pull).assert_code(0);
}

#[test]
fn trusted_publishing_on_sqlite() {
    trusted_publishing(Backend::Sqlite);
}

#[test]
fn trusted_publishing_on_postgres() {
    trusted_publishing(Backend::Postgres);
}

/// The outbound address policy through `ofc`, on a hub with the default settings: the issuer's
/// own address in an https URL is refused at `trust add`; a name resolving to 127.0.0.1
/// (`localhost`, in front of a listener that is never accepted from) registers, and the
/// `publish --oidc` that would fetch its keys is refused — the listener's queue stays empty.
#[test]
fn issuers_on_private_addresses_are_refused_through_ofc() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let issuer = rt.block_on(OidcIssuer::start());
    let hub = TestHub::process(ProcessOptions::new(Backend::Sqlite));
    let acme = hub.publisher("acme", &[]);
    let port = issuer.url.rsplit(':').next().unwrap();
    let literal = format!("https://127.0.0.1:{port}");
    let r = acme.ofc.fails(
        1,
        &["namespace", "trust", "add", &literal, "repo:acme/coder:*"],
    );
    assert!(
        r.stderr.contains(&format!("`{literal}`"))
            && r.stderr.contains("loopback")
            && r.stderr.contains("outbound address policy")
            && r.stderr.contains("outbound_allow_private"),
        "{}",
        r.stderr
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let named = format!(
        "https://localhost:{}",
        listener.local_addr().unwrap().port()
    );
    acme.ofc
        .ok(&["namespace", "trust", "add", &named, "repo:acme/coder:*"]);
    let ci_home = tempfile::tempdir().unwrap();
    let ci = Ofc::new(ci_home.path(), &hub.url);
    copy_keys(&acme.ofc, &ci);
    let work = tempfile::tempdir().unwrap();
    let v1 = agent_dir(work.path(), "1.0.0");
    let mut claims = issuer.claims("ofc", SUBJECT);
    claims["iss"] = serde_json::json!(named);
    let token = issuer.token(Sign::Rs256, claims);
    let r = Ofc::finish(ci.cmd().env("OFC_OIDC_TOKEN", &token).args([
        "publish",
        v1.to_str().unwrap(),
        "--oidc",
    ]));
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("trusted publishing refused (issuer_address)")
            && r.stderr.contains("`localhost` resolves")
            && r.stderr.contains("127.0.0.1")
            && r.stderr.contains("outbound address policy"),
        "{}",
        r.stderr
    );
    // Nothing connected: a connection would wait in the queue, accepted or not by now.
    listener.set_nonblocking(true).unwrap();
    let queued = listener.accept();
    assert!(
        matches!(&queued, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the hub connected: {queued:?}"
    );
}
