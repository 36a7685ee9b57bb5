//! The deployment in `deploy/`, run as a self-hoster would: the image `deploy/build-image`
//! builds (FROM scratch, real podman), three replicas from it on one PostgreSQL, each with its
//! own data dir and the distribution registry (scripts/peers/registry) as their shared blob
//! backend, behind a real haproxy configured by `deploy/haproxy.cfg` unchanged; then
//! `deploy/rolling-restart` restarts each replica in turn (drain, SIGTERM, a new container,
//! back once `/readyz` passes) onto a new binary while clients search, read and publish through
//! the balancer. The new binary (`scripts/build-hub-next`) has one additive migration more: the
//! first new replica migrates the database while the two old ones go on serving it.
//! Checked: no request failed, every acknowledged publish is on every replica, `ofc pull`
//! through the balancer verifies, every replica runs the new image, and the old binary now
//! refuses to start on the newer schema. Fails (never skips) without podman, haproxy or
//! PostgreSQL.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{Ofc, free_port};
use ofc_test_kit::{Backend, HubProcess, ProcessOptions, TestHub, bin};

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `cmd`; panics with its output unless it succeeds. Returns stdout.
pub(crate) fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `scripts/peers/NAME` prints as `KEY=VALUE`.
pub(crate) fn peer(name: &str, key: &str) -> String {
    let out = run(&mut Command::new(repo().join("scripts/peers").join(name)));
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("scripts/peers/{name} printed no {key}=: {out}"))
        .to_string()
}

/// One command on haproxy's admin socket.
fn admin(socket: &Path, command: &str) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(format!("{command}\n").as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `(server, status)` of the replicas in haproxy's `show stat`.
pub(crate) fn statuses(socket: &Path) -> Vec<(String, String)> {
    admin(socket, "show stat")
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() > 17 && f[0] == "replicas" && f[1].starts_with("hub"))
        .map(|f| (f[1].to_string(), f[17].to_string()))
        .collect()
}

/// Three replicas from the image, haproxy in front; everything removed on drop.
struct Deployment {
    tag: String,
    image: String,
    /// The image of the new binary the rolling restart moves to.
    next_image: String,
    database_url: String,
    registry: String,
    dirs: Vec<PathBuf>,
    ports: Vec<u16>,
    haproxy: Child,
    socket: PathBuf,
    lb: String,
    _tmp: tempfile::TempDir,
}

impl Deployment {
    /// The podman secret holding the log key every replica signs with.
    fn secret(&self) -> String {
        format!("ofc-deploy-{}-log-key", self.tag)
    }

    fn container(&self, i: usize) -> String {
        format!("ofc-deploy-{}-hub{}", self.tag, i + 1)
    }

    /// `podman run` of replica `i` from `image` (as the README shows it).
    fn run_args(&self, i: usize, image: &str) -> Vec<String> {
        [
            "run",
            "-d",
            "--name",
            &self.container(i),
            "--network",
            "host",
            "-v",
            &format!("{}:/data:U", self.dirs[i].display()),
            "--secret",
            &format!("{},uid=10001,mode=0400", self.secret()),
            "-e",
            &format!("OFC_HUB__LOG_KEY_FILE=/run/secrets/{}", self.secret()),
            "-e",
            &format!("OFC_HUB__DATABASE_URL={}", self.database_url),
            "-e",
            &format!("OFC_HUB__LISTEN=127.0.0.1:{}", self.ports[i]),
            "-e",
            &format!("OFC_HUB__UPSTREAM_REGISTRY={}", self.registry),
            "-e",
            "OFC_HUB__TRUSTED_PROXIES=127.0.0.1",
            "-e",
            "OFC_HUB_LOG=warn",
            image,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn wait_all_up(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let s = statuses(&self.socket);
            if s.len() == 3 && s.iter().all(|(_, st)| st == "UP") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "haproxy never saw the three replicas up: {s:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn logs(&self) -> String {
        (0..3)
            .map(|i| {
                let out = Command::new("podman")
                    .args(["logs", &self.container(i)])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                    .unwrap_or_default();
                format!("--- {}:\n{out}", self.container(i))
            })
            .collect()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = self.haproxy.kill();
        let _ = self.haproxy.wait();
        for i in 0..3 {
            let _ = Command::new("podman")
                .args(["rm", "-f", "-t", "0", &self.container(i)])
                .output();
        }
        let _ = Command::new("podman")
            .args(["rmi", "-f", &self.image, &self.next_image])
            .output();
        let _ = Command::new("podman")
            .args(["secret", "rm", &self.secret()])
            .output();
    }
}

/// A thread publishing `dir` as versions `2.0.0`, `2.0.1`, … through `ofc` (at most `max`,
/// `pause` apart) until `stop`; answers the acknowledged versions and the failures.
pub(crate) fn publisher(
    stop: Arc<AtomicBool>,
    ofc: Ofc,
    dir: PathBuf,
    max: usize,
    pause: Duration,
) -> std::thread::JoinHandle<(Vec<String>, Vec<String>)> {
    std::thread::spawn(move || {
        let (mut acked, mut failed) = (Vec::new(), Vec::new());
        for n in 0..max {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let v = format!("2.0.{n}");
            let r =
                Ofc::finish(
                    ofc.cmd()
                        .args(["publish", dir.to_str().unwrap(), "--version", &v]),
                );
            if r.code == Some(0) {
                acked.push(v);
            } else {
                failed.push(format!("{v}: {}", r.stderr.trim()));
            }
            std::thread::sleep(pause);
        }
        (acked, failed)
    })
}

/// `agent.yaml` without a version (`ofc publish --version` gives it).
fn agent_dir(root: &Path, agent: &str) -> PathBuf {
    let dir = root.join(agent);
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@{agent}\"\nname: Replicated\npackage: alice/{agent}\n\
             tagline: Published through a load balancer\n\
             description: An agent of the several-replicas deployment test.\n\
             model: qwen3:32b\nactivation: mention\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("prompts/system.md"), "You are replicated.\n").unwrap();
    dir
}

#[test]
fn three_replicas_from_the_image_behind_haproxy_survive_a_rolling_restart() {
    crate::run_sandbox_e2e::podman();
    let haproxy_bin = peer("haproxy", "haproxy");
    let tmp = tempfile::tempdir().unwrap();
    let tag = uuid_tag();

    // The database (fresh, migrated) and one log key for every replica, made once.
    let seed: HubProcess = TestHub::process(ProcessOptions::new(Backend::Postgres).stopped());
    let database_url = seed.database_url().unwrap().to_string();
    run(seed.command().arg("migrate"));
    run(seed.command().args(["log", "key"]));
    let key = seed.data_dir().join("log-key");

    // The image, as deploy/build-image builds it (from the binary the tests run).
    let image = run(Command::new(repo().join("deploy/build-image"))
        .arg(format!("localhost/ofc-hub-e2e:{tag}"))
        .env("OFC_HUB_BIN", bin("ofc-hub")))
    .trim()
    .to_string();
    // … and the image of the new binary: ofc-hub with one additive migration more.
    let next_bin = std::env::var("OFC_HUB_NEXT_BIN").unwrap_or_else(|_| {
        run(&mut Command::new(repo().join("scripts/build-hub-next")))
            .trim()
            .to_string()
    });
    let next_image = run(Command::new(repo().join("deploy/build-image"))
        .arg(format!("localhost/ofc-hub-e2e-next:{tag}"))
        .env("OFC_HUB_BIN", &next_bin))
    .trim()
    .to_string();

    let dirs: Vec<PathBuf> = (1..=3)
        .map(|i| {
            let d = tmp.path().join(format!("hub{i}"));
            std::fs::create_dir_all(&d).unwrap();
            d
        })
        .collect();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let lb_port = free_port();
    let socket = tmp.path().join("lb.sock");
    let haproxy = Command::new(&haproxy_bin)
        .args(["-db", "-f"])
        .arg(repo().join("deploy/haproxy.cfg"))
        .env("OFC_LB_LISTEN", format!("127.0.0.1:{lb_port}"))
        .env("OFC_LB_ADMIN_SOCKET", &socket)
        .env("OFC_HUB_1", format!("127.0.0.1:{}", ports[0]))
        .env("OFC_HUB_2", format!("127.0.0.1:{}", ports[1]))
        .env("OFC_HUB_3", format!("127.0.0.1:{}", ports[2]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start haproxy");
    // The blob backend every replica shares: the distribution registry (README, "Blob backends
    // for several replicas").
    let registry = format!(
        "http://{}/ofc-deploy-{tag}",
        run(&mut Command::new(repo().join("scripts/peers/registry"))).trim()
    );
    let d = Deployment {
        tag,
        image,
        next_image,
        database_url,
        registry,
        dirs,
        ports,
        haproxy,
        socket,
        lb: format!("http://127.0.0.1:{lb_port}"),
        _tmp: tmp,
    };
    // The log key as a podman secret, mounted into every replica (README, "Several replicas").
    run(Command::new("podman")
        .args(["secret", "create", &d.secret()])
        .arg(&key));
    for i in 0..3 {
        run(Command::new("podman").args(d.run_args(i, &d.image)));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !d.socket.exists() {
        assert!(Instant::now() < deadline, "haproxy made no admin socket");
        std::thread::sleep(Duration::from_millis(100));
    }
    d.wait_all_up(Duration::from_secs(60));

    // A publisher, through the balancer.
    let token = seed.create_user("alice");
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &d.lb);
    ofc.cmd()
        .args(["login", "--token-stdin"])
        .write_stdin(token)
        .assert()
        .success();
    ofc.ok(&["keygen"]);
    ofc.ok(&["key", "register", "--namespace", "alice"]);
    let agents = tempfile::tempdir().unwrap();
    let dir = agent_dir(agents.path(), "replicated");
    ofc.ok(&["publish", dir.to_str().unwrap(), "--version", "1.0.0"]);

    // Readers through the balancer for the whole restart: search, the version list, a web
    // page, the OCI API. Bounded: 200 ms apart, at most 3,000 requests.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, lb) = (stop.clone(), d.lb.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let c = reqwest::Client::builder()
                    .timeout(Duration::from_secs(20))
                    .build()
                    .unwrap();
                let paths = [
                    "/api/v1/search?q=replicated",
                    "/api/v1/agents/alice/replicated",
                    "/agents/alice/replicated",
                    "/v2/alice/replicated/tags/list",
                    "/readyz",
                ];
                let (mut done, mut failed) = (0usize, Vec::new());
                while !stop.load(Ordering::Relaxed) && done < 3_000 {
                    let path = paths[done % paths.len()];
                    match c.get(format!("{lb}{path}")).send().await {
                        Ok(r) if r.status().is_success() => {}
                        Ok(r) => failed.push(format!("{path}: {}", r.status())),
                        Err(e) => failed.push(format!("{path}: {e}")),
                    }
                    done += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                (done, failed)
            })
        })
    };

    // A publisher through the balancer for the whole restart too (at most 60 versions): each
    // `ofc publish` is several requests (the bundle's upload session, its bytes, the signed
    // manifest) that haproxy spreads over the replicas.
    let writer = publisher(stop.clone(), ofc.clone(), dir.clone(), 60, Duration::ZERO);

    // Each replica in turn: drained, replaced by a container of the new binary, back when
    // ready; a publish through the balancer after each. The first new replica migrates; until
    // the last is replaced, old replicas serve the migrated database beside new ones.
    let mut published = vec!["1.0.0".to_string()];
    for i in 0..3 {
        let restart = format!(
            "podman stop -t 30 {c} >/dev/null && podman rm {c} >/dev/null && podman {args} >/dev/null",
            c = d.container(i),
            args = d.run_args(i, &d.next_image).join(" ")
        );
        let out = Command::new(repo().join("deploy/rolling-restart"))
            .args([&format!("hub{}", i + 1), "--", "sh", "-c", &restart])
            .env("OFC_LB_ADMIN_SOCKET", &d.socket)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "rolling-restart hub{}: {}\n{}",
            i + 1,
            String::from_utf8_lossy(&out.stderr),
            d.logs()
        );
        let v = format!("1.0.{}", i + 1);
        ofc.ok(&["publish", dir.to_str().unwrap(), "--version", &v]);
        published.push(v);
    }
    stop.store(true, Ordering::Relaxed);
    let (acked, failed_publishes) = writer.join().unwrap();
    eprintln!(
        "publishes during the restarts: {} acknowledged, {} failed",
        acked.len(),
        failed_publishes.len()
    );
    assert!(
        failed_publishes.is_empty(),
        "publishes through haproxy failed during the rolling restart: {failed_publishes:?}"
    );
    assert!(!acked.is_empty(), "no publish ran during the restarts");
    published.extend(acked);
    let (done, failed) = reader.join().unwrap();
    eprintln!("reads during the restarts: {done}, {} failed", failed.len());
    assert!(done > 10, "the reader made only {done} requests");
    assert!(
        failed.is_empty(),
        "{} of {done} reads through haproxy failed during the rolling restart: {failed:?}",
        failed.len()
    );

    // Every acknowledged version on every replica (asked directly, not through haproxy).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (i, port) in d.ports.iter().enumerate() {
        let url = format!("http://127.0.0.1:{port}/api/v1/agents/alice/replicated");
        let body: serde_json::Value =
            rt.block_on(async { reqwest::get(&url).await.unwrap().json().await.unwrap() });
        let text = body.to_string();
        for v in &published {
            assert!(
                text.contains(&format!("\"{v}\"")),
                "hub{} lacks {v}: {body}",
                i + 1
            );
        }
    }
    // Every replica runs the new image, the new binary migrated the database, and the old
    // binary now refuses to start on it, naming the migration it does not know.
    for i in 0..3 {
        let image = run(Command::new("podman").args([
            "inspect",
            "--format",
            "{{.ImageName}}",
            &d.container(i),
        ]));
        assert_eq!(image.trim(), d.next_image, "hub{}", i + 1);
    }
    let out = seed.command().arg("migrate").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err
                .contains("schema is at migration 9000 (upgrade test: additive columns and table)"),
        "the old binary did not refuse the newer schema: {out:?}"
    );

    // And a verified pull through the balancer, of the newest.
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("ofc.lock"), "").unwrap();
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(project.path())
            .args(["pull", "alice/replicated"]),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let newest = published
        .iter()
        .max_by_key(|v| semver::Version::parse(v).unwrap())
        .unwrap();
    let lock = std::fs::read_to_string(project.path().join("ofc.lock")).unwrap();
    assert!(
        lock.contains(&format!("\"{newest}\"")),
        "the lock does not name the newest version {newest}:\n{lock}"
    );
}

pub(crate) fn uuid_tag() -> String {
    format!(
        "{:08x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
            ^ std::process::id()
    )
}
