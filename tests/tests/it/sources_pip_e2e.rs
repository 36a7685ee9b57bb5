//! pip agents end to end, against the real `ofc-hub` and `ofc` binaries and a real package index
//! (pypiserver, started by `scripts/peers/pypiserver`): a Python OFC agent wheel with a
//! dependency, built here, is published → pulled → started (by ofc, and its console script on
//! its own, with uv and with pip as the installer) → answers `/ofc/info` and a respond call; a
//! warm pull with the lock and the index stopped needs no network; the refusals (a file other
//! than the signed pin, an sdist without `--allow-sdist`, a lock that no longer matches, a
//! dependency that would take over the agent's entry point, an index trickling a file) and
//! `kill -9` in the middle of an install.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Publishers as _;
use crate::common::{Ofc, Publisher};
use ofc_test_kit::{ProcessOptions, TestHub};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A pypiserver serving `dir`, stopped on drop.
struct Index {
    url: String,
    pid: u32,
}

impl Index {
    fn start(dir: &Path) -> Index {
        let out = Command::new(repo().join("scripts/peers/pypiserver"))
            .arg(dir)
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/peers/pypiserver runs");
        assert!(
            out.status.success(),
            "scripts/peers/pypiserver failed: a real index is required"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let (url, pid) = text.trim().split_once(' ').expect("URL PID");
        Index {
            url: url.to_string(),
            pid: pid.parse().unwrap(),
        }
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

impl Drop for Index {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Builds a wheel of one of the test packages into `out`; its sha256.
fn wheel(out: &Path, name: &str, version: &str, pkg: &str, extra: &[&str]) -> String {
    let o = Command::new("python3")
        .arg(repo().join("tests/pip-agent/build_wheel.py"))
        .arg(out)
        .args([name, version])
        .arg(repo().join("tests/pip-agent").join(pkg))
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let path = String::from_utf8(o.stdout).unwrap();
    sha256_of(Path::new(path.trim()))
}

fn sha256_of(p: &Path) -> String {
    let o = Command::new("sha256sum").arg(p).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

/// The agent and its dependency; returns the agent wheel's sha256.
fn agent_wheels(out: &Path, salt: Option<&str>) -> String {
    wheel(out, "ofc-py-shout", "1.0.0", "ofc_py_shout", &[]);
    let mut extra = vec![
        "--requires",
        "ofc-py-shout>=1.0",
        "--script",
        "ofc-py-echo=ofc_py_echo.server:main",
    ];
    if let Some(s) = salt {
        extra.extend(["--salt", s]);
    }
    wheel(out, "ofc-py-echo", "1.0.0", "ofc_py_echo", &extra)
}

/// Publishes `acme/<agent>` with a pip source for `package==1.0.0` on `index`.
fn publish(p: &Publisher, agent: &str, package: &str, index: &str, pin: Option<&str>) {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join(agent);
    std::fs::create_dir_all(&dir).unwrap();
    let pin = pin
        .map(|s| format!(", sha256: \"{s}\""))
        .unwrap_or_default();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@{agent}\"\nname: Py Echo\npackage: acme/{agent}\nversion: 1.0.0\n\
             tagline: Shouts back\ndescription: A Python agent.\nactivation: mention\n\
             source: {{type: pip, package: {package}, version: \"1.0.0\", index: \"{index}\", \
             entry_point: ofc-py-echo{pin}}}\n"
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

/// `ofc ARGS` in `dir`, installing with `installer` (`uv` or `pip`: both are tested).
fn run_in(ofc: &Ofc, dir: &Path, installer: &str, args: &[&str]) -> crate::common::Run {
    Ofc::finish(
        ofc.cmd()
            .current_dir(dir)
            .env("OFC_PIP_INSTALLER", installer)
            .args(args),
    )
}

fn pull_json(ofc: &Ofc, dir: &Path, installer: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json", "pull"];
    all.extend(args);
    let r = run_in(ofc, dir, installer, &all);
    assert_eq!(r.code, Some(0), "ofc {all:?}\n{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// Starts a pulled agent and checks its answer, which its dependency upper-cases.
fn start_and_call(start: &Value) {
    let reply = crate::common::start_and_call(start, "@pyecho", "hello @pyecho");
    // The dependency did its part.
    assert_eq!(reply["content"], "HELLO @PYECHO!", "{reply}");
}

/// The environment at `env` works on its own, where it is: its console script runs directly
/// (not through ofc, nor its interpreter), no script names the build directory it was made in,
/// and its activation script names the environment itself.
fn works_on_its_own(env: &Path) {
    start_and_call(&serde_json::json!({
        "kind": "process",
        "program": env.join("bin/ofc-py-echo"),
        "args": [],
        "env": [],
        "cwd": std::env::temp_dir(),
    }));
    for e in std::fs::read_dir(env.join("bin")).unwrap() {
        let path = e.unwrap().path();
        if path.is_symlink() {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(!text.contains("tmp-v1"), "{}:\n{text}", path.display());
    }
    let out = Command::new("bash")
        .args([
            "-c",
            ". \"$1/bin/activate\" && printf %s \"$VIRTUAL_ENV\"",
            "bash",
        ])
        .arg(env)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), env.to_str().unwrap());
}

#[test]
fn pip_agent_publish_pull_start_and_warm_pull_without_the_index() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let pkgs = tempfile::tempdir().unwrap();
    let pin = agent_wheels(pkgs.path(), None);
    let mut index = Index::start(pkgs.path());
    publish(&publisher, "pyecho", "ofc-py-echo", &index.url, Some(&pin));
    // A second agent with the same resolution shares the environment.
    publish(&publisher, "pyecho2", "ofc-py-echo", &index.url, None);

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();
    let out = pull_json(&ofc, proj.path(), "uv", &["acme/pyecho"]);
    let p = &out["pulled"][0];
    assert_eq!(p["source"]["kind"], "pip", "{out}");
    assert_eq!(p["extracted"], true, "{out}");
    let hashes = p["source"]["hashes"].as_array().unwrap();
    assert_eq!(hashes.len(), 2, "the wheel and its dependency: {out}");
    assert!(hashes.iter().any(|h| h == pin.as_str()), "{out}");
    assert!(p["source"]["python"].as_str().unwrap().starts_with('3'));
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains("kind = \"pip\"") && lock.contains(&pin),
        "{lock}"
    );
    start_and_call(&p["start"]);
    works_on_its_own(Path::new(p["path"].as_str().unwrap()));

    let out2 = pull_json(&ofc, proj.path(), "uv", &["acme/pyecho2"]);
    let p2 = &out2["pulled"][0];
    assert_eq!(p2["path"], p["path"], "same resolution, same environment");
    assert_eq!(p2["extracted"], false, "{out2}");

    // The index stopped: the locked, warm pull needs it not.
    index.stop();
    let warm = pull_json(&ofc, proj.path(), "uv", &["--locked", "acme/pyecho"]);
    assert_eq!(warm["pulled"][0]["origin"], "cache", "{warm}");
    start_and_call(&warm["pulled"][0]["start"]);
    let offline = pull_json(
        &ofc,
        proj.path(),
        "uv",
        &["--offline", "--locked", "acme/pyecho2"],
    );
    assert_eq!(offline["pulled"][0]["origin"], "cache", "{offline}");

    // list, verify, rm and gc know the environment.
    let list = ofc.json(&["list"]);
    let agents = list["agents"].as_array().unwrap();
    assert!(
        agents
            .iter()
            .all(|a| a["environment"]["complete"] == true && a["environment"]["path"] == p["path"]),
        "{list}"
    );
    ofc.ok(&["verify"]);
    let file = std::fs::read_dir(home.path().join("cache/pip-v1/files"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let wheel = std::fs::read_dir(&file)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let good = std::fs::read(&wheel).unwrap();
    std::fs::write(&wheel, b"tampered").unwrap();
    let r = ofc.run(&["verify"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("pip file"), "{}", r.stderr);
    std::fs::write(&wheel, good).unwrap();
    ofc.ok(&["rm", "acme/pyecho"]);
    ofc.ok(&["gc"]);
    let env = PathBuf::from(p["path"].as_str().unwrap());
    assert!(env.is_dir(), "still used by acme/pyecho2");
    ofc.ok(&["rm", "acme/pyecho2"]);
    let gc = ofc.json(&["gc"]);
    assert!(gc["removedEnvironments"].as_u64().unwrap() >= 3, "{gc}");
    assert!(!env.exists());
}

#[test]
fn an_index_serving_another_wheel_than_the_signed_pin_is_refused() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let pkgs = tempfile::tempdir().unwrap();
    let signed = agent_wheels(pkgs.path(), None);
    // The index now holds another build of the same version.
    let served = agent_wheels(pkgs.path(), Some("swapped"));
    assert_ne!(signed, served);
    let index = Index::start(pkgs.path());
    publish(
        &publisher,
        "pyecho",
        "ofc-py-echo",
        &index.url,
        Some(&signed),
    );
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let r = ofc.run(&["pull", "acme/pyecho"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("pins") && r.stderr.contains(&signed) && r.stderr.contains(&served),
        "{}",
        r.stderr
    );
    assert!(!home.path().join("cache/pip-v1/envs").exists());
}

#[test]
fn an_sdist_is_refused_without_the_flag() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let pkgs = tempfile::tempdir().unwrap();
    // A source distribution whose build would leave a mark: it must never run.
    let mark = pkgs.path().join("built");
    let src = pkgs.path().join("src/ofc-py-src-1.0.0");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("setup.py"),
        format!(
            "open({:?}, 'w').write('ran')\nfrom setuptools import setup\nsetup(name='ofc-py-src', version='1.0.0')\n",
            mark.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        src.join("PKG-INFO"),
        "Metadata-Version: 2.1\nName: ofc-py-src\nVersion: 1.0.0\n",
    )
    .unwrap();
    let served = pkgs.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(served.join("ofc-py-src-1.0.0.tar.gz"))
        .arg("-C")
        .arg(pkgs.path().join("src"))
        .arg("ofc-py-src-1.0.0")
        .status()
        .unwrap();
    assert!(ok.success());
    let index = Index::start(&served);
    publish(&publisher, "pysrc", "ofc-py-src", &index.url, None);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let r = ofc.run(&["pull", "acme/pysrc"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("wheels only"), "{}", r.stderr);
    assert!(r.stderr.contains("--allow-sdist"), "{}", r.stderr);
    assert!(!mark.exists(), "the sdist's setup.py ran");
}

#[test]
fn a_lock_that_no_longer_matches_is_refused_and_a_killed_install_leaves_nothing() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let pkgs = tempfile::tempdir().unwrap();
    agent_wheels(pkgs.path(), None);
    let index = Index::start(pkgs.path());
    publish(&publisher, "pyecho", "ofc-py-echo", &index.url, None);

    // kill -9 at several points of a cold install, then a retry installs it whole.
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project();
    for after_ms in [300u64, 900, 1800] {
        let mut child = Command::new(crate::common::bin("ofc"))
            .env("OFC_HOME", ofc.home())
            .env("OFC_HUB", &hub.url)
            .env_remove("OFC_TOKEN")
            .env("OFC_PIP_INSTALLER", "pip")
            .current_dir(proj.path())
            .args(["pull", "acme/pyecho"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Any environment in place is complete (its marker is written before the rename).
        if let Ok(envs) = std::fs::read_dir(home.path().join("cache/pip-v1/envs")) {
            for e in envs {
                let e = e.unwrap().path();
                assert!(e.join("ofc-resolution.json").is_file(), "{}", e.display());
            }
        }
    }
    // Four concurrent pulls: all succeed, one environment is built.
    let outs: Vec<Value> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| pull_json(&ofc, proj.path(), "pip", &["acme/pyecho"])))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let built = outs
        .iter()
        .filter(|o| o["pulled"][0]["extracted"] == true)
        .count();
    assert!(built <= 1, "{outs:?}");
    let envs = std::fs::read_dir(home.path().join("cache/pip-v1/envs"))
        .unwrap()
        .count();
    assert_eq!(envs, 1);
    start_and_call(&outs[0]["pulled"][0]["start"]);
    works_on_its_own(Path::new(outs[0]["pulled"][0]["path"].as_str().unwrap()));
    ofc.ok(&["gc"]);
    let tmp = home.path().join("cache/tmp-v1");
    assert_eq!(
        std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0),
        0,
        "gc removes what killed installs left"
    );

    // The index changes under the lock: a new release of the dependency.
    wheel(pkgs.path(), "ofc-py-shout", "1.0.1", "ofc_py_shout", &[]);
    // This machine's environment still matches the lock: no network needed, no change.
    pull_json(&ofc, proj.path(), "pip", &["--locked", "acme/pyecho"]);
    // Another machine resolves again, gets other files, and --locked refuses.
    let home2 = tempfile::tempdir().unwrap();
    let ofc2 = Ofc::new(home2.path(), &hub.url);
    let r = run_in(
        &ofc2,
        proj.path(),
        "pip",
        &["pull", "--locked", "acme/pyecho"],
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("no longer matches"), "{}", r.stderr);
    assert!(!home2.path().join("cache/pip-v1/envs").exists());
}

/// Writes a Python package `name` (one `__init__.py` with `source`) under `root`; its folder.
fn package(root: &Path, name: &str, source: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("__init__.py"), source).unwrap();
    dir
}

/// Builds a wheel from a package folder anywhere (see [`wheel`]).
fn wheel_of(out: &Path, name: &str, pkg: &Path, extra: &[&str]) {
    let o = Command::new("python3")
        .arg(repo().join("tests/pip-agent/build_wheel.py"))
        .arg(out)
        .args([name, "1.0.0"])
        .arg(pkg)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Dependencies that would take the agent's entry point over: one declaring a console script
/// of the agent's name, one shipping the agent's own module, and a manifest naming a console
/// script only a dependency declares. Installers let the last wheel written win (which one
/// depends on their order), so ofc refuses the environment, names the dependency and installs
/// nothing; the entry point comes from the agent's own distribution only.
#[test]
fn a_dependency_cannot_take_over_the_agents_entry_point() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let pkgs = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let out = pkgs.path();
    wheel(out, "ofc-py-shout", "1.0.0", "ofc_py_shout", &[]);
    let evil = package(
        src.path(),
        "ofc_py_evil",
        "def main():\n    raise SystemExit('the dependency ran instead of the agent')\n",
    );
    // Declares the agent's console script.
    wheel_of(
        out,
        "ofc-py-evil-script",
        &evil,
        &["--script", "ofc-py-echo=ofc_py_evil:main"],
    );
    // Ships the agent's own module.
    let shadow = src.path().join("shadow/ofc_py_echo");
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(
        shadow.join("server.py"),
        "def main():\n    raise SystemExit('the dependency ran instead of the agent')\n",
    )
    .unwrap();
    wheel_of(out, "ofc-py-evil-module", &shadow, &[]);
    // Declares a console script of its own.
    wheel_of(
        out,
        "ofc-py-evil-tool",
        &evil,
        &["--script", "evil-tool=ofc_py_evil:main"],
    );
    let agent_dir = repo().join("tests/pip-agent/ofc_py_echo");
    let agent = |name: &str, dep: &str| {
        wheel_of(
            out,
            name,
            &agent_dir,
            &[
                "--requires",
                "ofc-py-shout>=1.0",
                "--requires",
                dep,
                "--script",
                "ofc-py-echo=ofc_py_echo.server:main",
            ],
        );
    };
    agent("ofc-py-echo-a", "ofc-py-evil-script");
    agent("ofc-py-echo-b", "ofc-py-evil-module");
    agent("ofc-py-echo-c", "ofc-py-evil-tool");
    let index = Index::start(out);
    publish(&publisher, "pya", "ofc-py-echo-a", &index.url, None);
    publish(&publisher, "pyb", "ofc-py-echo-b", &index.url, None);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("pyc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@pyc\"\nname: Py C\npackage: acme/pyc\nversion: 1.0.0\n\
             tagline: Names a script\ndescription: A Python agent.\nactivation: mention\n\
             source: {{type: pip, package: ofc-py-echo-c, version: \"1.0.0\", index: \"{}\", \
             entry_point: evil-tool}}\n",
            index.url
        ),
    )
    .unwrap();
    publisher.ofc.ok(&["publish", dir.to_str().unwrap()]);

    for (agent, installer, needles) in [
        (
            "acme/pya",
            "uv",
            vec![
                "1 file(s) of ofc-py-echo-a==1.0.0 itself are also installed by a dependency: bin/ofc-py-echo (ofc-py-evil-script 1.0.0)",
                "its dependency ofc-py-evil-script 1.0.0 collides with it",
            ],
        ),
        (
            "acme/pyb",
            "pip",
            vec![
                "ofc_py_echo/server.py (ofc-py-evil-module 1.0.0)",
                "its dependency ofc-py-evil-module 1.0.0 collides with it",
            ],
        ),
        (
            "acme/pyc",
            "uv",
            vec![
                "ofc-py-echo-c 1.0.0 declares no console script `evil-tool`",
                "its dependency ofc-py-evil-tool 1.0.0 declares one",
            ],
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let ofc = Ofc::new(home.path(), &hub.url);
        let proj = project();
        let r = run_in(&ofc, proj.path(), installer, &["pull", agent]);
        assert_eq!(r.code, Some(1), "{agent}\n{}\n{}", r.stdout, r.stderr);
        for n in needles {
            assert!(r.stderr.contains(n), "{agent}: `{n}` not in\n{}", r.stderr);
        }
        let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
        assert!(!lock.contains(agent), "{lock}");
        // Refused before the environment was moved into place.
        let envs = home.path().join("cache/pip-v1/envs");
        assert!(
            std::fs::read_dir(&envs).map(|d| d.count()).unwrap_or(0) == 0,
            "{agent}: an environment was installed"
        );
    }
}

/// A proxy on 127.0.0.1 in front of an index that sends the files ofc downloads itself (its
/// user agent is `ofc/…`) one byte every 100 ms; everything else (pip's own requests) whole.
struct TricklingIndex {
    url: String,
    _rt: tokio::runtime::Runtime,
}

impl TricklingIndex {
    fn start(upstream: &str) -> TricklingIndex {
        use axum::body::Body;
        use axum::extract::Request;
        use axum::response::Response;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let base = upstream.trim_end_matches("/simple").to_string();
        let http = reqwest::Client::new();
        let app = axum::Router::new().fallback(move |req: Request| {
            let (base, http) = (base.clone(), http.clone());
            async move {
                let path = req
                    .uri()
                    .path_and_query()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default();
                let ofc = req
                    .headers()
                    .get("user-agent")
                    .is_some_and(|u| u.as_bytes().starts_with(b"ofc/"));
                let r = http.get(format!("{base}{path}")).send().await.unwrap();
                let status = r.status().as_u16();
                let content_type = r.headers().get("content-type").cloned();
                let bytes = r.bytes().await.unwrap().to_vec();
                let body = if ofc && path.contains("/packages/") {
                    let chunks: Vec<Vec<u8>> = bytes.chunks(1).map(<[u8]>::to_vec).collect();
                    Body::from_stream(futures::stream::unfold(
                        chunks.into_iter(),
                        |mut it| async move {
                            let c = it.next()?;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            Some((Ok::<_, std::io::Error>(c), it))
                        },
                    ))
                } else {
                    Body::from(bytes)
                };
                let mut answer = Response::builder().status(status);
                if let Some(t) = content_type {
                    answer = answer.header("content-type", t.as_bytes());
                }
                answer.body(body).unwrap()
            }
        });
        rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
        TricklingIndex {
            url: format!("http://{addr}/simple"),
            _rt: rt,
        }
    }
}

/// An index that trickles the files ofc downloads (10 bytes/s: no read waits long) is given up
/// on within the rate floor's window (2 s here), with a clear error; nothing is installed.
#[test]
fn an_index_trickling_a_file_is_given_up_on() {
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let pkgs = tempfile::tempdir().unwrap();
    agent_wheels(pkgs.path(), None);
    let index = Index::start(pkgs.path());
    let trickling = TricklingIndex::start(&index.url);
    publish(&publisher, "pyecho", "ofc-py-echo", &trickling.url, None);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let started = Instant::now();
    let r = Ofc::finish(
        ofc.cmd()
            .env("OFC_MIN_DOWNLOAD_RATE", "1024")
            .env("OFC_DOWNLOAD_RATE_WINDOW", "2")
            .args(["pull", "acme/pyecho"]),
    );
    let took = started.elapsed();
    assert_eq!(
        r.code,
        Some(1),
        "after {took:?}\n{}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stderr.contains("ofc_py_echo-1.0.0-py3-none-any.whl at ")
            && r.stderr.contains("below the minimum of 1024 bytes/s")
            && r.stderr.contains("nothing was installed"),
        "{}",
        r.stderr
    );
    assert!(took < Duration::from_secs(60), "gave up after {took:?}");
    assert!(!home.path().join("cache/pip-v1/envs").exists());
}
