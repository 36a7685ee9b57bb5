//! `ofc pull` end to end with the real `ofc-hub` and `ofc` binaries: publish → search → pull →
//! verify of the example agents, the lockfile, `--offline` with the hub stopped, `--locked`,
//! 16 concurrent pulls, `kill -9` in the middle of pulls, and remote agents (probed, and
//! refused when their endpoint redirects).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::Publishers as _;
use crate::common::{Ofc, redact};
use crate::hostile::{HostileHub, Mode};
use ofc_test_kit::{HubProcess, ProcessOptions, TestHub};
use serde_json::Value;

/// The examples whose source is a bundle (the others need the pip/npm/docker sources).
const BUNDLE_EXAMPLES: &[&str] = &[
    "ofc-examples/code-reviewer",
    "ofc-examples/code-runner",
    "ofc-examples/data-analyst",
    "ofc-examples/sql-helper",
    "ofc-examples/summarizer",
];

fn project() -> tempfile::TempDir {
    let p = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("ofc.lock"), "").unwrap();
    p
}

fn in_dir(ofc: &Ofc, dir: &Path, args: &[&str]) -> crate::common::Run {
    Ofc::finish(ofc.cmd().current_dir(dir).args(args))
}

fn ok_in(ofc: &Ofc, dir: &Path, args: &[&str]) -> String {
    let r = in_dir(ofc, dir, args);
    assert_eq!(
        r.code,
        Some(0),
        "ofc {args:?}\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    r.stdout
}

#[test]
fn publish_search_pull_verify_the_examples() {
    let hub = TestHub::process(ProcessOptions::default());
    let alice = hub.publisher("alice", &["ofc-examples"]);
    alice.publish_examples();
    hub.wait_for_search("q=data+analysis", |h| h.len() >= 2);

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let found = ofc.json(&["search", "data analysis"]);
    assert_eq!(
        found["hits"][0]["name"], "ofc-examples/data-analyst",
        "{found}"
    );

    let proj = project();
    let mut args = vec!["pull"];
    args.extend_from_slice(BUNDLE_EXAMPLES);
    let r = in_dir(&ofc, proj.path(), &args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let lock_path = proj.path().join("ofc.lock");
    let shown = |t: &str| {
        redact(
            t,
            &hub.url,
            &[(lock_path.to_str().unwrap(), "[PROJECT]/ofc.lock")],
        )
    };
    insta::assert_snapshot!("pull_examples_stdout", shown(&r.stdout));
    insta::assert_snapshot!("pull_examples_stderr", shown(&r.stderr));

    // The lockfile names every agent with the digest the hub has.
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    for name in BUNDLE_EXAMPLES {
        let (p, a) = name.split_once('/').unwrap();
        let (_, agent) = hub.api(
            reqwest::Method::GET,
            &format!("/api/v1/agents/{p}/{a}"),
            None,
            None,
        );
        let latest = agent["latest"].as_str().unwrap();
        let (_, info) = hub.api(
            reqwest::Method::GET,
            &format!("/api/v1/agents/{p}/{a}/versions/{latest}"),
            None,
            None,
        );
        let digest = info["manifest_digest"].as_str().unwrap();
        assert!(lock.contains(&format!("name = \"{name}\"")), "{lock}");
        assert!(lock.contains(digest), "{name}: {digest} not in\n{lock}");
    }
    index_schema::lockfile::Lockfile::from_toml(&lock).expect("a valid lockfile");

    // The cache verifies, and lists what was pulled.
    ofc.ok(&["verify"]);
    let list = ofc.ok(&["list"]);
    insta::assert_snapshot!("list_after_pull", shown(&list));

    // Pulled files are the published ones.
    let out = ofc.json(&["pull", "ofc-examples/data-analyst"]);
    let files = Path::new(out["pulled"][0]["path"].as_str().unwrap());
    assert_eq!(
        std::fs::read(files.join("agent.yaml")).unwrap(),
        std::fs::read(crate::common::examples_agents().join("data-analyst/agent.yaml")).unwrap()
    );

    // The pip example names a package on the public index; offline, a clear refusal and no
    // half install (pip agents themselves: tests/tests/sources_pip_e2e.rs, against pypiserver).
    let r = ofc.fails(1, &["pull", "--offline", "ofc-examples/web-scraper"]);
    assert!(
        r.stderr.contains("cannot pull ofc-examples/web-scraper")
            && r.stderr.contains("--offline forbids fetching it"),
        "{}",
        r.stderr
    );
    assert!(!ofc.home().join("cache/pip-v1/envs").exists());

    // Unknown agents and versions.
    let r = ofc.fails(1, &["pull", "ofc-examples/nope"]);
    insta::assert_snapshot!("pull_unknown_agent", shown(&r.stderr));
    let r = ofc.fails(1, &["pull", "ofc-examples/data-analyst@^9"]);
    insta::assert_snapshot!("pull_no_matching_version", shown(&r.stderr));
    let r = ofc.fails(2, &["pull"]);
    assert!(r.stderr.contains("REF"), "{}", r.stderr);
    let r = ofc.fails(1, &["pull", "not a reference"]);
    insta::assert_snapshot!("pull_bad_reference", shown(&r.stderr));
}

/// Publishes `acme/tool` at each version, with `extra` bytes of incompressible data.
fn publish_tool(hub: &HubProcess, versions: &[&str], extra: usize) -> crate::common::Publisher {
    let publisher = hub.publisher("acme", &[]);
    let work = tempfile::tempdir().unwrap();
    for v in versions {
        let dir = work.path().join(v);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("agent.yaml"),
            format!(
                "id: \"@tool\"\nname: Tool\npackage: acme/tool\nversion: {v}\n\
                 tagline: A tool\ndescription: For pull tests.\nmodel: qwen3:32b\nactivation: mention\n"
            ),
        )
        .unwrap();
        if extra > 0 {
            // xorshift: deterministic, incompressible enough for gzip.
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            let data: Vec<u8> = (0..extra)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            std::fs::write(dir.join("data.bin"), data).unwrap();
        }
        publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);
    }
    publisher
}

#[test]
fn offline_and_locked_pulls_need_no_hub() {
    let mut hub = TestHub::process(ProcessOptions::default());
    let _p = publish_tool(&hub, &["1.0.0", "1.1.0", "2.0.0-beta.1"], 0);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();

    // Requirements pick the highest match; pre-releases only when asked for.
    let out: Value = serde_json::from_str(&ok_in(
        &ofc,
        proj.path(),
        &["--json", "pull", "acme/tool@^1"],
    ))
    .unwrap();
    assert_eq!(out["pulled"][0]["version"], "1.1.0");
    assert_eq!(out["lockfileUpdated"], true);
    let out = ofc.json(&["pull", "acme/tool"]);
    assert_eq!(
        out["pulled"][0]["version"], "1.1.0",
        "latest skips the pre-release"
    );
    let out = ofc.json(&["pull", "acme/tool@2.0.0-beta.1"]);
    assert_eq!(out["pulled"][0]["version"], "2.0.0-beta.1");
    let digest = out["pulled"][0]["manifestDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let out = ofc.json(&["pull", &format!("acme/tool@{digest}")]);
    assert_eq!(out["pulled"][0]["version"], "2.0.0-beta.1", "a digest pin");

    hub.kill();
    // With the lock and a warm cache: no network at all (the hub is down).
    let out: Value = serde_json::from_str(&ok_in(
        &ofc,
        proj.path(),
        &["--json", "pull", "acme/tool@^1"],
    ))
    .unwrap();
    assert_eq!(out["pulled"][0]["origin"], "cache");
    assert_eq!(out["lockfileUpdated"], false);
    ok_in(&ofc, proj.path(), &["pull", "--locked", "acme/tool@^1"]);
    // --offline without a lock: the best cached match.
    let out = ofc.json(&["pull", "--offline", "acme/tool@^1"]);
    assert_eq!(out["pulled"][0]["version"], "1.1.0");
    // A cold cache: clear failures, with hints.
    let cold = tempfile::tempdir().unwrap();
    let cold_ofc = Ofc::new(cold.path(), &hub.url);
    let r = cold_ofc.fails(1, &["pull", "--offline", "acme/tool"]);
    let shown = redact(&r.stderr, &hub.url, &[]);
    insta::assert_snapshot!("pull_offline_cold", shown);
    let r = cold_ofc.fails(1, &["pull", "acme/tool"]);
    assert!(r.stderr.contains("cannot reach the hub at"), "{}", r.stderr);
    assert!(r.stderr.contains("--offline"), "{}", r.stderr);

    // --locked refuses what the lock does not hold, and does not touch the file.
    let before = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    hub.restart();
    let r = in_dir(
        &ofc,
        proj.path(),
        &["pull", "--locked", "acme/tool@2.0.0-beta.1"],
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("run without --locked"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap(),
        before
    );
}

#[test]
fn sixteen_concurrent_pulls_extract_once() {
    let hub = TestHub::process(ProcessOptions::default());
    let _p = publish_tool(&hub, &["1.0.0"], 256 * 1024);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();
    let children: Vec<_> = (0..16)
        .map(|_| {
            std::process::Command::new(crate::common::bin("ofc"))
                .current_dir(proj.path())
                .env("OFC_HOME", ofc.home())
                .env("OFC_HUB", &hub.url)
                .env_remove("OFC_TOKEN")
                .args(["--json", "pull", "acme/tool"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut extracted = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["pulled"][0]["extracted"] == true {
            extracted += 1;
        }
    }
    assert_eq!(extracted, 1, "exactly one process unpacks the bundle");
    ofc.ok(&["verify"]);
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert_eq!(lock.matches("name = \"acme/tool\"").count(), 1, "{lock}");
    let trust = ofc.json(&["trust", "list"]);
    assert_eq!(trust["keys"].as_array().unwrap().len(), 1, "{trust}");
}

#[test]
fn kill_9_during_pulls_then_pull_again() {
    let hub = TestHub::process(ProcessOptions::default());
    let _p = publish_tool(&hub, &["1.0.0"], 2 * 1024 * 1024);
    let proxy = HostileHub::start(&hub.url);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &proxy.url);
    // Kill while downloading (slow bundle) and at several points after it (fast bundle:
    // hashing, unpacking, renaming, writing the manifest and the trust store).
    let plan: &[(bool, u64)] = &[
        (true, 300),
        (true, 900),
        (false, 30),
        (false, 80),
        (false, 150),
        (false, 250),
        (false, 400),
    ];
    for &(slow, after_ms) in plan {
        proxy.set(if slow {
            Mode::SlowBundle(Duration::from_millis(10))
        } else {
            Mode::Honest
        });
        let mut child = std::process::Command::new(crate::common::bin("ofc"))
            .env("OFC_HOME", ofc.home())
            .env("OFC_HUB", &proxy.url)
            .env_remove("OFC_TOKEN")
            .args(["pull", "acme/tool"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Whatever state it left, the cache holds no corrupt entry.
        let r = ofc.run(&["verify"]);
        assert_eq!(
            r.code,
            Some(0),
            "after a kill at {after_ms} ms:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        if installed(ofc.home()) {
            // It finished before the kill; start over for the next point.
            std::fs::remove_dir_all(ofc.home().join("cache")).unwrap();
        }
    }
    proxy.set(Mode::Honest);
    ofc.ok(&["pull", "acme/tool"]);
    ofc.ok(&["verify"]);
    ofc.ok(&["gc"]);
    let tmp = ofc.home().join("cache/tmp-v1");
    let left = std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0);
    assert_eq!(
        left,
        0,
        "gc removes what killed pulls left in {}",
        tmp.display()
    );
}

fn installed(home: &Path) -> bool {
    std::fs::read_dir(home.join("cache/bundles-v1/sha256"))
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

/// `ofc-test-agent` (the runtime's OFC agent server) on a loopback port; killed on drop.
struct AgentProc(std::process::Child, String);

impl AgentProc {
    fn start() -> AgentProc {
        let port = crate::common::free_port();
        let child = std::process::Command::new(crate::common::bin("ofc-test-agent"))
            .args(["--name", "remote"])
            .env("OFC_PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "ofc-test-agent did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        AgentProc(child, url)
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn remote_agents_are_probed_and_local_ones_used_in_place() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let agent = AgentProc::start();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("remote");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@remote\"\nname: Remote\npackage: acme/remote\nversion: 1.0.0\n\
             tagline: Runs elsewhere\ndescription: A remote agent.\nactivation: mention\n\
             source: {{type: remote, endpoint: \"{}\"}}\n",
            agent.1
        ),
    )
    .unwrap();
    publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();
    let out: Value = serde_json::from_str(&ok_in(
        &ofc,
        proj.path(),
        &["--json", "pull", "acme/remote"],
    ))
    .unwrap();
    let src = &out["pulled"][0]["source"];
    assert_eq!(src["kind"], "remote", "{out}");
    assert_eq!(src["endpoint"], agent.1.as_str());
    // The recorded digest is that of the document the agent serves.
    let body = reqwest::blocking_get(&format!("{}/ofc/info", agent.1));
    let expected = index_schema::name::Digest::of(&body).to_string();
    assert_eq!(src["info_digest"], expected.as_str(), "{out}");
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains("kind = \"remote\"") && lock.contains(&expected),
        "{lock}"
    );

    // The agent goes away: the lock and the cache still resolve it without any request.
    drop(agent);
    ok_in(&ofc, proj.path(), &["pull", "--offline", "acme/remote"]);
    // A fresh machine cannot: the probe fails clearly.
    let cold = tempfile::tempdir().unwrap();
    let r = Ofc::new(cold.path(), &hub.url).fails(1, &["pull", "acme/remote"]);
    assert!(r.stderr.contains("does not answer"), "{}", r.stderr);
    assert!(r.stderr.contains("hint:"), "{}", r.stderr);

    // A local folder: used in place, recorded with the digest of its agent file.
    let local = crate::common::examples_agents().join("data-analyst");
    let local_arg = local.to_str().unwrap();
    let out: Value =
        serde_json::from_str(&ok_in(&ofc, proj.path(), &["--json", "pull", local_arg])).unwrap();
    assert_eq!(out["pulled"][0]["origin"], "local");
    assert_eq!(out["pulled"][0]["name"], "ofc-examples/data-analyst");
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(lock.contains("kind = \"local\""), "{lock}");
    let bytes = std::fs::read(local.join("agent.yaml")).unwrap();
    assert!(
        lock.contains(&index_schema::name::Digest::of(&bytes).to_string()),
        "{lock}"
    );
    let r = ofc.fails(1, &["pull", "./no/such/dir"]);
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
}

/// A server on 127.0.0.1 that answers every request with `status` and `Location: {to}{path}`,
/// counting the requests; stopped on drop.
struct Redirector {
    url: String,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    _rt: tokio::runtime::Runtime,
}

impl Redirector {
    fn start(status: u16, to: &str) -> Redirector {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits = std::sync::Arc::new(AtomicUsize::new(0));
        let (to, counter) = (to.to_string(), hits.clone());
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            counter.fetch_add(1, Ordering::SeqCst);
            let location = format!("{to}{}", uri.path());
            async move {
                axum::response::Response::builder()
                    .status(status)
                    .header("location", location)
                    .body(axum::body::Body::empty())
                    .unwrap()
            }
        });
        rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Redirector { url, hits, _rt: rt }
    }
}

/// A remote agent's endpoint that redirects to a real agent: the probe follows no redirect,
/// names the endpoint and where it pointed, and locks nothing (the floor, too, follows none).
#[test]
fn a_remote_agent_that_redirects_is_refused() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let agent = AgentProc::start();
    for status in [302u16, 308] {
        let redirector = Redirector::start(status, &agent.1);
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("remote");
        std::fs::create_dir_all(&dir).unwrap();
        let package = format!("acme/moved{status}");
        std::fs::write(
            dir.join("agent.yaml"),
            format!(
                "id: \"@moved\"\nname: Moved\npackage: {package}\nversion: 1.0.0\n\
                 tagline: Redirects\ndescription: A remote agent that redirects.\nactivation: mention\n\
                 source: {{type: remote, endpoint: \"{}\"}}\n",
                redirector.url
            ),
        )
        .unwrap();
        publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);

        let home = tempfile::tempdir().unwrap();
        let ofc = Ofc::new(home.path(), &hub.url);
        let proj = project();
        let r = in_dir(&ofc, proj.path(), &["pull", &package]);
        assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr
                .contains(&format!("{}/ofc/info answered {status}", redirector.url))
                && r.stderr
                    .contains(&format!("a redirect to {}/ofc/info", agent.1))
                && r.stderr.contains("follows no redirect"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("hint:"), "{}", r.stderr);
        assert_eq!(
            redirector.hits.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one probe"
        );
        let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
        assert!(!lock.contains("remote"), "{lock}");
        assert!(!home.path().join("cache/remote-info-v1").exists());
    }
}

mod reqwest {
    pub use ::reqwest::Method;

    /// A blocking GET for the test's own checks.
    pub fn blocking_get(url: &str) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            ::reqwest::get(url)
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
                .to_vec()
        })
    }
}

#[test]
fn the_hub_flag_picks_the_hub_and_ofc_token_stays_with_ofc_hub() {
    let hub = TestHub::process(ProcessOptions::default());
    let _p = publish_tool(&hub, &["1.0.0"], 0);
    let proxy = HostileHub::start(&hub.url);
    let home = tempfile::tempdir().unwrap();
    // OFC_HUB names a hub that is down; `--hub` names the live one (through the proxy, which
    // records the Authorization headers it sees).
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:1");
    let run = |args: &[&str]| Ofc::finish(ofc.cmd().env("OFC_TOKEN", "ofc_env_secret").args(args));
    let r = run(&["--hub", &proxy.url, "--json", "search", "tool"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let proj = project();
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("OFC_TOKEN", "ofc_env_secret")
            .args(["pull", "acme/tool", "--hub", &proxy.url]),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(lock.contains(&format!("hub = \"{}\"", proxy.url)), "{lock}");
    assert!(
        proxy.authorizations().is_empty(),
        "OFC_TOKEN went to a hub other than OFC_HUB: {:?}",
        proxy.authorizations()
    );
    // With OFC_HUB naming the proxy, OFC_TOKEN is its token.
    let ofc2 = Ofc::new(home.path(), &proxy.url);
    let r = Ofc::finish(
        ofc2.cmd()
            .env("OFC_TOKEN", "ofc_env_secret")
            .args(["search", "tool"]),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        proxy.authorizations(),
        vec!["Bearer ofc_env_secret".to_string()]
    );
}
