//! npm agents end to end, against the real `ofc-hub` and `ofc` binaries and a real npm registry
//! (verdaccio 4, started by `scripts/peers/verdaccio`): a Node OFC agent package with a
//! dependency, published here, is pulled → started (by ofc, and its bin on its own) → answers
//! `/ofc/info` and a respond call; a warm pull with the lock and the registry stopped needs no
//! network; install scripts are refused without the opt-in (and do not run), those the
//! registry's metadata hides too; a tarball other than the signed pin and a lock that no longer
//! matches are refused; `ofc pull` killed with SIGKILL at several points of a cold install
//! leaves no half-installed prefix nor a running `npm install`, and concurrent pulls of the same
//! agent install it once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Publishers as _;
use crate::common::{Ofc, Publisher};
use ofc_test_kit::{HubProcess, ProcessOptions, TestHub};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A verdaccio with the test packages published, stopped on drop.
struct Registry {
    url: String,
    pid: u32,
    /// The test user's token.
    token: String,
    _storage: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let storage = tempfile::tempdir().unwrap();
        let out = Command::new(repo().join("scripts/peers/verdaccio"))
            .arg(storage.path())
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/peers/verdaccio runs");
        assert!(
            out.status.success(),
            "scripts/peers/verdaccio failed: a real registry is required"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let parts: Vec<&str> = text.split_whitespace().collect();
        let (url, pid, token) = (parts[0], parts[1], parts[2]);
        let host = url.trim_start_matches("http:").trim_end_matches('/');
        let npmrc = storage.path().join("npmrc");
        std::fs::write(&npmrc, format!("{host}/:_authToken={token}\n")).unwrap();
        for p in ["ofc-node-shout", "ofc-node-echo", "ofc-node-scripted"] {
            let o = Command::new("npm")
                .args([
                    "publish",
                    "--loglevel=error",
                    "--registry",
                    url,
                    "--userconfig",
                ])
                .arg(&npmrc)
                .current_dir(repo().join("tests/npm-agent").join(p))
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "npm publish {p}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Registry {
            url: url.to_string(),
            pid: pid.parse().unwrap(),
            token: token.to_string(),
            _storage: storage,
        }
    }

    /// Publishes `tests/npm-agent/ofc-node-scripted` as `name`, by hand: the tarball keeps its
    /// `package.json` with its install script, the metadata sent to the registry (and served
    /// by it) has no `scripts` — as a registry or a publisher hiding them would serve it.
    fn publish_hiding_scripts(&self, name: &str) {
        use base64::Engine as _;
        let work = tempfile::tempdir().unwrap();
        let pkg = work.path().join("pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        let src = repo().join("tests/npm-agent/ofc-node-scripted");
        std::fs::copy(src.join("index.js"), pkg.join("index.js")).unwrap();
        let mut manifest: Value =
            serde_json::from_slice(&std::fs::read(src.join("package.json")).unwrap()).unwrap();
        manifest["name"] = name.into();
        manifest["bin"] = serde_json::json!({ name: "index.js" });
        assert!(manifest["scripts"]["postinstall"].is_string());
        std::fs::write(
            pkg.join("package.json"),
            serde_json::to_vec_pretty(&manifest).unwrap(),
        )
        .unwrap();
        let o = Command::new("npm")
            .args(["pack", "--json", "--loglevel=error", "--pack-destination"])
            .arg(work.path())
            .current_dir(&pkg)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "npm pack: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let packed: Value = serde_json::from_slice(&o.stdout).unwrap();
        let packed = &packed[0];
        let file = packed["filename"].as_str().unwrap();
        let tarball = std::fs::read(work.path().join(file)).unwrap();
        let version = manifest["version"].as_str().unwrap().to_string();
        let mut shown = manifest.clone();
        shown.as_object_mut().unwrap().remove("scripts");
        shown["_id"] = format!("{name}@{version}").into();
        shown["dist"] = serde_json::json!({
            "integrity": packed["integrity"],
            "shasum": packed["shasum"],
            "tarball": format!("{}{name}/-/{file}", self.url),
        });
        let doc = serde_json::json!({
            "_id": name,
            "name": name,
            "description": manifest["description"],
            "dist-tags": { "latest": version },
            "versions": { version.clone(): shown },
            "_attachments": { file: {
                "content_type": "application/octet-stream",
                "data": base64::engine::general_purpose::STANDARD.encode(&tarball),
                "length": tarball.len(),
            }},
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let served: Value = rt.block_on(async {
            let client = reqwest::Client::new();
            let r = client
                .put(format!("{}{name}", self.url))
                .bearer_auth(&self.token)
                .json(&doc)
                .send()
                .await
                .unwrap();
            let status = r.status();
            assert!(status.is_success(), "{status}: {}", r.text().await.unwrap());
            client
                .get(format!("{}{name}", self.url))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        let v = &served["versions"][&version];
        assert_eq!(v["dist"]["integrity"], packed["integrity"], "{served}");
        assert!(
            v.get("scripts").is_none() && v.get("hasInstallScript").is_none(),
            "the registry shows the scripts: {served}"
        );
    }

    fn integrity(&self, package: &str) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let doc: Value = rt.block_on(async {
            reqwest::get(format!("{}{package}", self.url))
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        doc["versions"]["1.0.0"]["dist"]["integrity"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn stop(&mut self) {
        if self.pid != 0 {
            let _ = Command::new("kill").arg(self.pid.to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Path::new(&format!("/proc/{}", self.pid)).exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            self.pid = 0;
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Publishes `acme/<agent>` with an npm source for `package@1.0.0` on `registry`.
fn publish(p: &Publisher, agent: &str, package: &str, registry: &str, pin: Option<&str>) {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join(agent);
    std::fs::create_dir_all(&dir).unwrap();
    let pin = pin
        .map(|s| format!(", integrity: \"{s}\""))
        .unwrap_or_default();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@{agent}\"\nname: Node Echo\npackage: acme/{agent}\nversion: 1.0.0\n\
             tagline: Shouts back\ndescription: A Node agent.\nactivation: mention\n\
             source: {{type: npm, package: {package}, version: \"1.0.0\", registry: \"{registry}\", \
             bin: {package}{pin}}}\n"
        ),
    )
    .unwrap();
    p.ofc.ok(&["publish", dir.to_str().unwrap()]);
}

fn project() -> tempfile::TempDir {
    let p = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("ofc.lock"), "").unwrap();
    p
}

fn run_in(ofc: &Ofc, dir: &Path, args: &[&str]) -> crate::common::Run {
    Ofc::finish(ofc.cmd().current_dir(dir).args(args))
}

fn pull_json(ofc: &Ofc, dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json", "pull"];
    all.extend(args);
    let r = run_in(ofc, dir, &all);
    assert_eq!(r.code, Some(0), "ofc {all:?}\n{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// Starts a pulled agent and checks its answer, which its dependency upper-cases.
fn start_and_call(start: &Value, id: &str) {
    let reply = crate::common::start_and_call(start, id, "hello agent");
    // The dependency did its part.
    assert_eq!(reply["content"], "HELLO AGENT!", "{reply}");
}

#[test]
fn npm_agent_publish_pull_start_and_warm_pull_without_the_registry() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let mut registry = Registry::start();
    let pin = registry.integrity("ofc-node-echo");
    publish(
        &publisher,
        "nodeecho",
        "ofc-node-echo",
        &registry.url,
        Some(&pin),
    );

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();
    let out = pull_json(&ofc, proj.path(), &["acme/nodeecho"]);
    let p = &out["pulled"][0];
    assert_eq!(p["source"]["kind"], "npm", "{out}");
    assert_eq!(p["source"]["integrity"], pin.as_str(), "{out}");
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains("kind = \"npm\"") && lock.contains(&pin),
        "{lock}"
    );
    start_and_call(&p["start"], "@nodeecho");
    // The package's bin runs on its own, straight from the cache, without ofc.
    let prefix = Path::new(p["path"].as_str().unwrap());
    start_and_call(
        &serde_json::json!({
            "kind": "process",
            "program": prefix.join("node_modules/.bin/ofc-node-echo"),
            "args": [],
            "env": [],
            "cwd": std::env::temp_dir(),
        }),
        "@nodeecho",
    );

    // The lock edited to another integrity no longer matches what the registry serves.
    let edited = lock.replace(&pin, &format!("sha512-{}==", "A".repeat(86)));
    std::fs::write(proj.path().join("ofc.lock"), edited).unwrap();
    let r = run_in(&ofc, proj.path(), &["pull", "--locked", "acme/nodeecho"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("no longer matches"), "{}", r.stderr);
    std::fs::write(proj.path().join("ofc.lock"), &lock).unwrap();

    registry.stop();
    let warm = pull_json(&ofc, proj.path(), &["--locked", "acme/nodeecho"]);
    assert_eq!(warm["pulled"][0]["origin"], "cache", "{warm}");
    start_and_call(&warm["pulled"][0]["start"], "@nodeecho");
    ofc.ok(&["verify"]);

    // gc keeps a prefix a cached agent uses, and removes it once the agent is gone.
    let envs = home.path().join("cache/npm-v1/envs");
    let count = || std::fs::read_dir(&envs).map(|d| d.count()).unwrap_or(0);
    let gc = ofc.json(&["gc"]);
    assert_eq!(count(), 1, "{gc}");
    ofc.ok(&["rm", "acme/nodeecho"]);
    let gc = ofc.json(&["gc"]);
    assert!(gc["removedEnvironments"].as_u64().unwrap() >= 1, "{gc}");
    assert_eq!(count(), 0, "{gc}");
    assert!(
        !home.path().join("cache/npm-v1/npm-cache").exists(),
        "npm's download cache goes too"
    );
    assert_eq!(
        std::fs::read_dir(home.path().join("cache/npm-v1/by-manifest"))
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "no record of a removed agent stays"
    );
}

#[test]
fn install_scripts_need_the_opt_in_and_a_swapped_tarball_is_refused() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let registry = Registry::start();
    publish(
        &publisher,
        "scripted",
        "ofc-node-scripted",
        &registry.url,
        None,
    );
    // Signed with the integrity of another tarball than the registry serves.
    let other = registry.integrity("ofc-node-shout");
    publish(
        &publisher,
        "swapped",
        "ofc-node-echo",
        &registry.url,
        Some(&other),
    );

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let mark = home.path().join("mark");
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_TEST_MARK", &mark)
            .args(["pull", "acme/scripted"]),
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("install scripts"), "{}", r.stderr);
    assert!(r.stderr.contains("--allow-install-scripts"), "{}", r.stderr);
    assert!(!mark.exists(), "the install script ran");
    assert!(!home.path().join("cache/npm-v1/envs").exists());
    let r = Ofc::finish(ofc.cmd().env("OFC_TEST_MARK", &mark).args([
        "pull",
        "--allow-install-scripts",
        "acme/scripted",
    ]));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(mark.exists(), "with the opt-in, the install script ran");

    let r = ofc.run(&["pull", "acme/swapped"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("pins") && r.stderr.contains(&other),
        "{}",
        r.stderr
    );
}

/// A package whose registry metadata shows no install script, but whose tarball's
/// `package.json` has one: refused like a visible one (npm would run it), and it did not run;
/// with the opt-in it is accepted and runs.
#[test]
fn install_scripts_the_registry_metadata_hides_are_refused() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let registry = Registry::start();
    registry.publish_hiding_scripts("ofc-node-hidden");
    publish(&publisher, "hidden", "ofc-node-hidden", &registry.url, None);

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let mark = home.path().join("mark");
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_TEST_MARK", &mark)
            .args(["pull", "acme/hidden"]),
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("ofc-node-hidden (`postinstall` in its packed package.json")
            && r.stderr.contains("install scripts")
            && r.stderr.contains("--allow-install-scripts"),
        "{}",
        r.stderr
    );
    assert!(!mark.exists(), "the install script ran");
    assert!(!home.path().join("cache/npm-v1/envs").exists());

    let r = Ofc::finish(ofc.cmd().env("OFC_TEST_MARK", &mark).args([
        "pull",
        "--allow-install-scripts",
        "acme/hidden",
    ]));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read_to_string(&mark).unwrap(),
        "ran",
        "with the opt-in, the install script ran"
    );
}

/// The npm prefixes installed in the cache at `home`; panics on one that is not complete: its
/// marker (written before the rename into place) must list the packages npm resolved, and
/// every one of them must be there.
fn complete_prefixes(home: &Path) -> usize {
    let Ok(envs) = std::fs::read_dir(home.join("cache/npm-v1/envs")) else {
        return 0;
    };
    let mut n = 0;
    for e in envs {
        let e = e.unwrap().path();
        let marker = std::fs::read(e.join("ofc-resolution.json"))
            .unwrap_or_else(|err| panic!("{} has no marker: {err}", e.display()));
        let marker: Value = serde_json::from_slice(&marker).unwrap();
        let packages = marker["packages"].as_array().unwrap();
        let paths: Vec<&str> = packages.iter().map(|p| p[0].as_str().unwrap()).collect();
        for want in ["node_modules/ofc-node-echo", "node_modules/ofc-node-shout"] {
            assert!(paths.contains(&want), "{}: {marker}", e.display());
        }
        for p in paths {
            assert!(
                e.join(p).join("package.json").is_file(),
                "{} lacks {p}",
                e.display()
            );
        }
        assert!(e.join("node_modules/ofc-node-echo/server.js").is_file());
        n += 1;
    }
    n
}

/// Staging dirs under the cache's tmp in which ofc had begun an npm install.
fn staged_installs(home: &Path) -> usize {
    std::fs::read_dir(home.join("cache/tmp-v1"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .join("env/package.json")
                    .is_file()
            })
            .count()
        })
        .unwrap_or(0)
}

/// The processes that name `home` on their command line or in their environment (`npm
/// install` run by ofc has `npm_config_cache=<home>/cache/npm-v1/npm-cache`).
fn processes_naming(home: &Path) -> Vec<String> {
    let needle = home.to_str().unwrap().as_bytes().to_vec();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            // npm rewrites its command line (process.title); its environment names ofc's
            // npm cache under `home`.
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let environ = std::fs::read(e.path().join("environ")).ok()?;
            [&cmdline, &environ]
                .iter()
                .any(|b| b.windows(needle.len()).any(|w| w == needle.as_slice()))
                .then(|| {
                    let cmd = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                    format!("{pid}: {}", cmd.trim())
                })
        })
        .collect()
}

/// Waits (bounded by `bound`) until no process of the killed pulls runs: `ofc` killed with
/// SIGKILL runs no code, so the `npm install` it started must be stopped by its supervisor,
/// not go on orphaned in a staging dir that `ofc gc` would take for abandoned.
fn no_orphans_within(home: &Path, bound: Duration) {
    let deadline = Instant::now() + bound;
    loop {
        let alive = processes_naming(home);
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of a killed pull still run after {bound:?}: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGSTOPs a process until dropped (SIGCONT), so that what talks to it waits.
struct Frozen(u32);

impl Frozen {
    fn new(pid: u32) -> Frozen {
        assert!(
            Command::new("kill")
                .args(["-STOP", &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

fn spawn_pull(ofc: &Ofc, hub: &HubProcess, proj: &Path) -> std::process::Child {
    Command::new(crate::common::bin("ofc"))
        .env("OFC_HOME", ofc.home())
        .env("OFC_HUB", &hub.url)
        .env_remove("OFC_TOKEN")
        .current_dir(proj)
        .args(["pull", "acme/nodeecho"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_npm_pull_leaves_nothing_half_installed_and_concurrent_pulls_install_once() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let registry = Registry::start();
    publish(&publisher, "nodeecho", "ofc-node-echo", &registry.url, None);

    // How long a cold pull takes on this machine now, so that the kills land inside one.
    let probe = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    pull_json(
        &Ofc::new(probe.path(), &hub.url),
        project().path(),
        &["acme/nodeecho"],
    );
    let cold = t0.elapsed();
    eprintln!("a cold npm pull took {cold:?}");

    // kill -9 at several points of a cold install.
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();
    // First while npm waits on a registry that does not answer: the kill must take the
    // `npm install` down with it (deterministically inside the install).
    {
        let _frozen = Frozen::new(registry.pid);
        let mut child = spawn_pull(&ofc, &hub, proj.path());
        let deadline = Instant::now() + Duration::from_secs(60);
        // `ofc` itself has OFC_HOME in its environment; wait for the npm it starts.
        let pid = format!("{}: ", child.id());
        while staged_installs(home.path()) == 0
            || !processes_naming(home.path())
                .iter()
                .any(|p| !p.starts_with(&pid))
        {
            assert!(
                Instant::now() < deadline,
                "the pull did not start npm install"
            );
            assert!(child.try_wait().unwrap().is_none(), "the pull ended");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        assert_eq!(complete_prefixes(home.path()), 0);
        no_orphans_within(home.path(), Duration::from_secs(15));
    }
    let mut inside = 0;
    for frac in [0.25f64, 0.45, 0.65] {
        let staged_before = staged_installs(home.path());
        let mut child = spawn_pull(&ofc, &hub, proj.path());
        std::thread::sleep(cold.mul_f64(frac));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Any prefix in place is complete.
        let installed = complete_prefixes(home.path());
        let staged = staged_installs(home.path());
        eprintln!("killed after {frac} of a cold pull: {installed} prefix(es), {staged} staged");
        if installed == 0 && staged > staged_before {
            inside += 1;
        }
    }
    assert!(
        inside > 0,
        "no kill landed inside an npm install (a cold pull took {cold:?})"
    );
    no_orphans_within(home.path(), Duration::from_secs(15));
    let before = complete_prefixes(home.path());

    // The retry: four concurrent pulls all succeed, one prefix is installed.
    let outs: Vec<Value> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| pull_json(&ofc, proj.path(), &["acme/nodeecho"])))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let built = outs
        .iter()
        .filter(|o| o["pulled"][0]["extracted"] == true)
        .count();
    assert_eq!(built, usize::from(before == 0), "{outs:?}");
    assert_eq!(complete_prefixes(home.path()), 1);
    for o in &outs {
        assert_eq!(o["pulled"][0]["source"]["kind"], "npm", "{o}");
        assert_eq!(
            o["pulled"][0]["start"], outs[0]["pulled"][0]["start"],
            "{outs:?}"
        );
    }
    start_and_call(&outs[0]["pulled"][0]["start"], "@nodeecho");
    ofc.ok(&["verify"]);
    ofc.ok(&["gc"]);
    let tmp = home.path().join("cache/tmp-v1");
    assert_eq!(
        std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0),
        0,
        "gc removes what killed installs left"
    );
    // gc kept the installed prefix, which still starts.
    assert_eq!(complete_prefixes(home.path()), 1);
    let warm = pull_json(&ofc, proj.path(), &["acme/nodeecho"]);
    assert_eq!(warm["pulled"][0]["origin"], "cache", "{warm}");
    start_and_call(&warm["pulled"][0]["start"], "@nodeecho");
}
