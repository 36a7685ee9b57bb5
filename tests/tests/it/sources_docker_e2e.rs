//! docker agents end to end, against the real `ofc-hub` and `ofc` binaries and real podman
//! (installed by `scripts/peers/oci-clients`; missing, the tests fail): an OFC agent image built
//! `FROM scratch` around a static C binary (`tests/docker-agent/agent.c`) is pushed to the hub's
//! own `/v2/`, published pinned by digest, pulled (verified into the cache), run by `ofc run` in
//! a container that answers `/ofc/info` and a respond call, and removed when the floor closes; a
//! warm pull and run with the lock and the hub stopped need no network. A tag-only image is
//! refused at publish, and at pull when a hub serves one signed with the publisher's key; a
//! registry that alters the manifest or a layer is refused at pull, with nothing installed, and
//! one that trickles them is given up on within the download rate floor's window. A pull killed
//! mid-download leaves no image, concurrent pulls install once, a killed `ofc run` leaves no
//! container, and without podman or docker a run is refused before anything starts.
//!
//! Every test has a podman store of its own (`CONTAINERS_STORAGE_CONF`, vfs driver) for the
//! image build and for `ofc`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Publishers as _;
use crate::common::{Ofc, Publisher, bin};
use crate::hostile::{HostileHub, Mode};
use index_schema::envelope::SecretKey;
use ofc_test_kit::{ProcessOptions, TestHub, oci_tool};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// podman with a store of its own.
struct Podman {
    program: String,
    conf: PathBuf,
    dir: tempfile::TempDir,
}

impl Podman {
    fn new() -> Podman {
        let program = oci_tool("podman");
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("storage.conf");
        std::fs::write(
            &conf,
            format!(
                "[storage]\ndriver = \"vfs\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                dir.path().join("root").display(),
                dir.path().join("run").display()
            ),
        )
        .unwrap();
        Podman { program, conf, dir }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new(&self.program)
            .env("CONTAINERS_STORAGE_CONF", &self.conf)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run podman: {e}"))
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "podman {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Names of the containers ofc started in this store, running or not.
    fn ofc_containers(&self) -> Vec<String> {
        self.ok(&[
            "ps",
            "-a",
            "--filter",
            "label=ofc.agent",
            "--format",
            "{{.Names}}",
        ])
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
    }

    /// Builds the FROM-scratch agent image, pushes it to `registry` (`HOST:PORT`) as
    /// `acme/dockecho-image:TAG` with `token`, and removes it from the store. Returns the
    /// pushed manifest's digest.
    fn build_and_push(&self, registry: &str, tag: &str, token: &str) -> String {
        let ctx = self.dir.path().join(format!("ctx-{tag}"));
        std::fs::create_dir_all(&ctx).unwrap();
        let out = Command::new(oci_tool("cc"))
            .args(["-static", "-O2", "-o"])
            .arg(ctx.join("agent"))
            .arg(repo().join("tests/docker-agent/agent.c"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(
            ctx.join("Containerfile"),
            format!(
                "FROM scratch\nCOPY agent /agent\nLABEL ofc.test={tag}\nEXPOSE 8080\nCMD [\"/agent\"]\n"
            ),
        )
        .unwrap();
        let image = format!("{registry}/acme/dockecho-image:{tag}");
        self.ok(&["build", "-q", "-t", &image, ctx.to_str().unwrap()]);
        let digest_file = ctx.join("digest");
        self.ok(&[
            "push",
            "-q",
            "--tls-verify=false",
            "--creds",
            &format!("acme:{token}"),
            "--digestfile",
            digest_file.to_str().unwrap(),
            &image,
        ]);
        self.ok(&["rmi", "-a", "-f"]);
        std::fs::read_to_string(digest_file)
            .unwrap()
            .trim()
            .to_string()
    }

    /// Builds the agent image and pushes it inside an image index (a one-platform manifest
    /// list) as `acme/dockecho-index:1`. Returns the index's digest.
    fn build_and_push_index(&self, registry: &str, token: &str) -> String {
        let ctx = self.dir.path().join("ctx-index");
        std::fs::create_dir_all(&ctx).unwrap();
        let out = Command::new(oci_tool("cc"))
            .args(["-static", "-O2", "-o"])
            .arg(ctx.join("agent"))
            .arg(repo().join("tests/docker-agent/agent.c"))
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::write(
            ctx.join("Containerfile"),
            "FROM scratch\nCOPY agent /agent\nCMD [\"/agent\"]\n",
        )
        .unwrap();
        self.ok(&[
            "build",
            "-q",
            "-t",
            "localhost/dockecho:index",
            ctx.to_str().unwrap(),
        ]);
        let list = format!("{registry}/acme/dockecho-index:1");
        self.ok(&["manifest", "create", &list]);
        self.ok(&[
            "manifest",
            "add",
            &list,
            "containers-storage:localhost/dockecho:index",
        ]);
        let digest_file = ctx.join("digest");
        self.ok(&[
            "manifest",
            "push",
            "-q",
            "--all",
            "--tls-verify=false",
            "--creds",
            &format!("acme:{token}"),
            "--digestfile",
            digest_file.to_str().unwrap(),
            &list,
            &format!("docker://{list}"),
        ]);
        let _ = self.run(&["manifest", "rm", &list]);
        self.ok(&["rmi", "-a", "-f"]);
        std::fs::read_to_string(digest_file)
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.run(&["rm", "-a", "-f"]);
        let _ = self.run(&["rmi", "-a", "-f"]);
    }
}

fn host(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// Publishes `acme/<agent>` 1.0.0 with a docker source for `image`.
fn publish(p: &Publisher, agent: &str, image: &str) -> crate::common::Run {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join(agent);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@dockecho\"\nname: Docker Echo\npackage: acme/{agent}\nversion: 1.0.0\n\
             tagline: Echoes from a container\ndescription: An agent in a container.\n\
             activation: mention\nsource: {{type: docker, image: \"{image}\", port: 8080}}\n"
        ),
    )
    .unwrap();
    p.ofc.run(&["publish", dir.to_str().unwrap()])
}

fn ofc_in(ofc: &Ofc, podman: &Podman, dir: &Path, args: &[&str]) -> crate::common::Run {
    Ofc::finish(
        ofc.cmd()
            .env("CONTAINERS_STORAGE_CONF", &podman.conf)
            .current_dir(dir)
            .args(args),
    )
}

fn ok_in(ofc: &Ofc, podman: &Podman, dir: &Path, args: &[&str]) -> String {
    let r = ofc_in(ofc, podman, dir, args);
    assert_eq!(
        r.code,
        Some(0),
        "ofc {args:?}\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    r.stdout
}

fn project(blueprint: &str) -> tempfile::TempDir {
    let p = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("ofc.lock"), "").unwrap();
    std::fs::write(p.path().join("blueprint.yaml"), blueprint).unwrap();
    p
}

#[test]
fn docker_agent_publish_pull_run_and_warm_run_without_the_hub() {
    let podman = Podman::new();
    let mut hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let digest = podman.build_and_push(host(&hub.url), "1", &publisher.token);
    let image = format!("{}/acme/dockecho-image@{digest}", host(&hub.url));
    let r = publish(&publisher, "dockecho", &image);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);

    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project("agents:\n  - acme/dockecho\n");
    let out: Value = serde_json::from_str(&ok_in(
        &ofc,
        &podman,
        proj.path(),
        &["--json", "pull", "acme/dockecho"],
    ))
    .unwrap();
    let p = &out["pulled"][0];
    assert_eq!(p["source"]["kind"], "docker", "{out}");
    assert_eq!(p["source"]["digest"], digest.as_str(), "{out}");
    assert_eq!(p["start"]["kind"], "container", "{out}");
    let hex = digest.trim_start_matches("sha256:");
    let layout = home.path().join("cache/docker-v1/images").join(hex);
    assert_eq!(p["start"]["layout"], layout.display().to_string(), "{out}");
    assert!(layout.join("ofc-image.json").is_file());
    assert!(layout.join("blobs/sha256").join(hex).is_file());
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains("kind = \"docker\"") && lock.contains(&digest),
        "{lock}"
    );
    // The lock edited to another image digest no longer matches the signed pin.
    let other = format!("sha256:{}", "0".repeat(64));
    std::fs::write(proj.path().join("ofc.lock"), lock.replace(&digest, &other)).unwrap();
    let r = ofc_in(
        &ofc,
        &podman,
        proj.path(),
        &["pull", "--locked", "acme/dockecho"],
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("ofc.lock no longer matches"),
        "{}",
        r.stderr
    );
    std::fs::write(proj.path().join("ofc.lock"), &lock).unwrap();
    let human = ok_in(
        &ofc,
        &podman,
        proj.path(),
        &["pull", "--locked", "acme/dockecho"],
    );
    assert!(
        human.contains(&format!("docker image {}", &digest[..19])) && human.contains("cached"),
        "{human}"
    );

    // The image is not in podman's store: the run loads it from ofc's cache.
    assert!(podman.ok(&["images", "-q"]).trim().is_empty());

    let r = ofc_in(&ofc, &podman, proj.path(), &["run", "hello container"]);
    r.assert_code(0);
    // PID 1: the agent is the first process of its own container.
    assert!(
        r.stdout
            .contains("@dockecho: container heard: hello container (pid 1)"),
        "{}",
        r.stdout
    );
    assert_eq!(
        podman.ofc_containers(),
        Vec::<String>::new(),
        "a container was left behind"
    );
    // What the container printed is in the run's agents log.
    let logs: String = std::fs::read_dir(proj.path().join(".ofc/logs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".agents.log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        logs.contains("ofc docker agent listening on 8080"),
        "{logs:?}"
    );

    // The hub (which is also the registry) is gone, and so is podman's copy of the image: the
    // lock and the cache are enough.
    hub.kill();
    podman.ok(&["rmi", "-a", "-f"]);
    let warm: Value = serde_json::from_str(&ok_in(
        &ofc,
        &podman,
        proj.path(),
        &["--json", "pull", "--locked", "acme/dockecho"],
    ))
    .unwrap();
    assert_eq!(warm["pulled"][0]["origin"], "cache", "{warm}");
    let r = ofc_in(
        &ofc,
        &podman,
        proj.path(),
        &["run", "--locked", "and again"],
    );
    r.assert_code(0);
    assert!(
        r.stdout.contains("container heard: and again (pid 1)"),
        "{}",
        r.stdout
    );
    assert_eq!(podman.ofc_containers(), Vec::<String>::new());

    // The cache verbs know the image.
    let list = ok_in(&ofc, &podman, proj.path(), &["list"]);
    assert!(
        list.contains(&format!("docker image {}", &hex[..12])),
        "{list}"
    );
    ok_in(&ofc, &podman, proj.path(), &["verify"]);
    let gc: Value =
        serde_json::from_str(&ok_in(&ofc, &podman, proj.path(), &["--json", "gc"])).unwrap();
    assert_eq!(gc["removedImages"], serde_json::json!([]), "{gc}");
    assert!(layout.is_dir(), "gc removed an image in use");
    // A damaged layer is reported by verify.
    let rec: Value =
        serde_json::from_slice(&std::fs::read(layout.join("ofc-image.json")).unwrap()).unwrap();
    let layer = rec["blobs"].as_array().unwrap().last().unwrap()[0]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let blob = layout.join("blobs/sha256").join(&layer);
    let mut bytes = std::fs::read(&blob).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&blob, bytes).unwrap();
    let r = ofc_in(&ofc, &podman, proj.path(), &["verify"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!("corrupt image {digest}")),
        "{}",
        r.stderr
    );
    // rm takes the image with the last agent that uses it.
    let rm = ok_in(&ofc, &podman, proj.path(), &["rm", "acme/dockecho"]);
    assert!(rm.contains(&format!("removed image {digest}")), "{rm}");
    assert!(!layout.exists());
}

#[test]
fn a_tag_only_image_and_an_altered_image_are_refused() {
    let podman = Podman::new();
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let digest = podman.build_and_push(host(&hub.url), "1", &publisher.token);

    // A tag alone is refused at publish.
    let r = publish(
        &publisher,
        "tagged",
        &format!("{}/acme/dockecho-image:1", host(&hub.url)),
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("must be pinned by digest"),
        "{}",
        r.stderr
    );

    // A hub that serves the same agent with a tag-only image, signed with the publisher's own
    // key (as an older client could have published it): refused at pull, nothing installed.
    let ok = publish(
        &publisher,
        "tagless",
        &format!("{}/acme/dockecho-image@{digest}", host(&hub.url)),
    );
    assert_eq!(ok.code, Some(0), "{}\n{}", ok.stdout, ok.stderr);
    let key =
        std::fs::read_to_string(publisher.ofc.home().join("config/keys/default.key")).unwrap();
    let key = std::sync::Arc::new(SecretKey::from_secret_text(key.trim()).unwrap());
    let lying = HostileHub::start(&hub.url);
    lying.set(Mode::SetImage(
        format!("{}/acme/dockecho-image:1", host(&hub.url)),
        key,
    ));
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &lying.url);
    let proj = project("agents:\n  - acme/tagless\n");
    let r = ofc_in(&ofc, &podman, proj.path(), &["pull", "acme/tagless"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("pinned by digest"), "{}", r.stderr);
    assert!(!home.path().join("cache/docker-v1").exists());
    drop(lying);

    // The image is published as served by a proxy that alters what the registry sends.
    let proxy = HostileHub::start(&hub.url);
    let image = format!("{}/acme/dockecho-image@{digest}", host(&proxy.url));
    let r = publish(&publisher, "altered", &image);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project("agents:\n  - acme/altered\n");
    let images = home.path().join("cache/docker-v1/images");

    proxy.set(Mode::CorruptOciManifest);
    let r = ofc_in(&ofc, &podman, proj.path(), &["pull", "acme/altered"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!("does not hash to {digest}"))
            && r.stderr.contains("nothing was installed"),
        "{}",
        r.stderr
    );
    assert!(!images.exists() || std::fs::read_dir(&images).unwrap().next().is_none());

    proxy.set(Mode::CorruptOciBlob);
    let r = ofc_in(&ofc, &podman, proj.path(), &["pull", "acme/altered"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("does not hash to") && r.stderr.contains("nothing was installed"),
        "{}",
        r.stderr
    );
    assert!(!images.exists() || std::fs::read_dir(&images).unwrap().next().is_none());
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(!lock.contains("altered"), "{lock}");

    // Honest again, the same pull installs it.
    proxy.set(Mode::Honest);
    ok_in(&ofc, &podman, proj.path(), &["pull", "acme/altered"]);
    assert!(images.join(digest.trim_start_matches("sha256:")).is_dir());
}

/// A registry that trickles (one byte every 100 ms: no read waits long, but the rate is 10
/// bytes/s) a manifest, then a layer: each pull gives up within the rate floor's window (2 s
/// here) with a clear error and installs nothing; honest again, the same pull installs it.
#[test]
fn a_registry_trickling_a_manifest_or_a_layer_is_given_up_on() {
    let podman = Podman::new();
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let digest = podman.build_and_push(host(&hub.url), "1", &publisher.token);
    let proxy = HostileHub::start(&hub.url);
    let image = format!("{}/acme/dockecho-image@{digest}", host(&proxy.url));
    let r = publish(&publisher, "trickled", &image);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project("agents:\n  - acme/trickled\n");
    let images = home.path().join("cache/docker-v1/images");
    let pull = || {
        let started = Instant::now();
        let r = Ofc::finish(
            ofc.cmd()
                .env("CONTAINERS_STORAGE_CONF", &podman.conf)
                .env("OFC_MIN_DOWNLOAD_RATE", "1024")
                .env("OFC_DOWNLOAD_RATE_WINDOW", "2")
                .current_dir(proj.path())
                .args(["pull", "acme/trickled"]),
        );
        (r, started.elapsed())
    };

    for (mode, needle) in [
        (
            Mode::TrickleOciManifest(Duration::from_millis(100)),
            format!("did not send the manifest {digest} within 2 s"),
        ),
        (
            Mode::TrickleOciBlob(Duration::from_millis(100)),
            "below the minimum of 1024 bytes/s".to_string(),
        ),
    ] {
        proxy.set(mode);
        let (r, took) = pull();
        assert_eq!(
            r.code,
            Some(1),
            "after {took:?}\n{}\n{}",
            r.stdout,
            r.stderr
        );
        assert!(
            r.stderr.contains(&needle)
                && r.stderr.contains("nothing was installed")
                && r.stderr.contains("OFC_MIN_DOWNLOAD_RATE"),
            "{}",
            r.stderr
        );
        assert!(took < Duration::from_secs(30), "gave up after {took:?}");
        assert!(!images.exists() || std::fs::read_dir(&images).unwrap().next().is_none());
    }
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(!lock.contains("trickled"), "{lock}");

    proxy.set(Mode::Honest);
    let (r, _) = pull();
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(images.join(digest.trim_start_matches("sha256:")).is_dir());
}

/// `ofc` as a child process (for the tests that kill it).
fn spawn_ofc(ofc: &Ofc, podman: &Podman, dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(bin("ofc"))
        .args(args)
        .current_dir(dir)
        .env("OFC_HOME", ofc.home())
        .env("OFC_HUB", ofc.hub_url())
        .env("NO_COLOR", "1")
        .env("CONTAINERS_STORAGE_CONF", &podman.conf)
        .env_remove("OFC_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Files under `dir`, recursively.
fn files_under(dir: &Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .count()
}

#[test]
fn killed_pulls_leave_nothing_concurrent_pulls_install_once_and_killed_runs_leave_no_container() {
    let podman = Podman::new();
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let digest = podman.build_and_push(host(&hub.url), "1", &publisher.token);
    let proxy = HostileHub::start(&hub.url);
    let image = format!("{}/acme/dockecho-image@{digest}", host(&proxy.url));
    let r = publish(&publisher, "dockecho", &image);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project("agents:\n  - acme/dockecho\n");
    let cache = home.path().join("cache");
    let images = cache.join("docker-v1/images");

    // A pull killed (SIGKILL) while the layers download leaves no image, and no agent.
    proxy.set(Mode::SlowOciBlob(Duration::from_millis(100)));
    let mut child = spawn_ofc(&ofc, &podman, proj.path(), &["pull", "acme/dockecho"]);
    wait_until("a layer is downloading", Duration::from_secs(60), || {
        files_under(&cache.join("tmp-v1")) >= 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!images.exists() || std::fs::read_dir(&images).unwrap().next().is_none());
    let list = ok_in(&ofc, &podman, proj.path(), &["list"]);
    assert!(!list.contains("acme/dockecho"), "{list}");
    let gc: Value =
        serde_json::from_str(&ok_in(&ofc, &podman, proj.path(), &["--json", "gc"])).unwrap();
    assert!(gc["removedTemporaries"].as_u64().unwrap() >= 1, "{gc}");

    // Two pulls at once: one downloads and installs, the other waits and finds it.
    proxy.set(Mode::SlowOciBlob(Duration::from_millis(5)));
    let pulls: Vec<_> = (0..2)
        .map(|_| {
            spawn_ofc(
                &ofc,
                &podman,
                proj.path(),
                &["--json", "pull", "acme/dockecho"],
            )
        })
        .collect();
    let mut extracted = Vec::new();
    for p in pulls {
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let p = &v["pulled"][0];
        extracted.push((
            p["extracted"].as_bool(),
            p["downloadedBytes"].as_u64().unwrap() > 0,
        ));
    }
    extracted.sort();
    assert_eq!(
        extracted,
        vec![(Some(false), false), (Some(true), true)],
        "exactly one pull installed the image"
    );
    assert_eq!(std::fs::read_dir(&images).unwrap().count(), 1);

    // `ofc run` killed (SIGKILL) with its container running: the supervisor removes it.
    let mut run = spawn_ofc(&ofc, &podman, proj.path(), &["--json", "run"]);
    let stdout = run.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("\"type\":\"ready\"") {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(90)).is_err() {
        let _ = run.kill();
        let out = run.wait_with_output().unwrap();
        panic!(
            "the floor did not become ready: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        podman.ofc_containers().len(),
        1,
        "the agent's container runs"
    );
    run.kill().unwrap();
    run.wait().unwrap();
    wait_until(
        "the supervisor removed the container",
        Duration::from_secs(30),
        || podman.ofc_containers().is_empty(),
    );
}

#[test]
fn without_podman_or_docker_a_container_agent_is_refused_before_anything_starts() {
    let podman = Podman::new();
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let digest = podman.build_and_push(host(&hub.url), "1", &publisher.token);
    let image = format!("{}/acme/dockecho-image@{digest}", host(&hub.url));
    let r = publish(&publisher, "dockecho", &image);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project("agents:\n  - acme/dockecho\n");
    ok_in(&ofc, &podman, proj.path(), &["pull", "acme/dockecho"]);
    let empty = tempfile::tempdir().unwrap();
    let r = Ofc::finish(
        ofc.cmd()
            .env("PATH", empty.path())
            .env_remove(ENGINE_ENV)
            .current_dir(proj.path())
            .args(["run", "--offline", "hello"]),
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("container agents need podman or docker")
            && r.stderr.contains("hint: install podman"),
        "{}",
        r.stderr
    );
}

const ENGINE_ENV: &str = "OFC_CONTAINER_ENGINE";

#[test]
fn an_image_index_is_resolved_to_this_platform_and_runs() {
    let podman = Podman::new();
    let hub = TestHub::process(ProcessOptions::default());
    let publisher = hub.publisher("acme", &[]);
    let index = podman.build_and_push_index(host(&hub.url), &publisher.token);
    let image = format!("{}/acme/dockecho-index@{index}", host(&hub.url));
    let r = publish(&publisher, "indexed", &image);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = project("agents:\n  - acme/indexed\n");
    ok_in(&ofc, &podman, proj.path(), &["pull", "acme/indexed"]);
    let layout = home
        .path()
        .join("cache/docker-v1/images")
        .join(index.trim_start_matches("sha256:"));
    let rec: Value =
        serde_json::from_slice(&std::fs::read(layout.join("ofc-image.json")).unwrap()).unwrap();
    assert_eq!(rec["digest"], index.as_str(), "{rec}");
    assert_ne!(
        rec["manifest"],
        index.as_str(),
        "the index was resolved: {rec}"
    );
    let lock = std::fs::read_to_string(proj.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains(&index),
        "the lock records the pinned index: {lock}"
    );
    let r = ofc_in(&ofc, &podman, proj.path(), &["run", "from an index"]);
    r.assert_code(0);
    assert!(
        r.stdout.contains("container heard: from an index (pid 1)"),
        "{}",
        r.stdout
    );
    ok_in(&ofc, &podman, proj.path(), &["verify"]);
    assert_eq!(podman.ofc_containers(), Vec::<String>::new());
}
