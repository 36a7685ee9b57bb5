//! Container agents: a pulled image run with podman (preferred) or docker, whichever is on
//! `PATH` (`OFC_CONTAINER_ENGINE` names another program of either kind).
//!
//! The image comes from the verified OCI image layout in the cache, which the engine loads
//! (`load`, the layout streamed as a tar archive) unless it already has the image, known by its id (the digest of the image's config). The
//! container runs detached, removed when it stops (`--rm`), named `ofc-<handle>-<random>`,
//! labelled `ofc.agent=<handle>` and `ofc.pid=<pid of ofc>`, with `OFC_PORT` set to the image's
//! OFC port and that port published on 127.0.0.1 only, on a port the engine picks. The agent is
//! ready when `/ofc/info` answers; [`ContainerAgent::shutdown`] stops and removes the container,
//! and so does dropping the agent if it was not shut down.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use index_schema::wire::{
    AgentInfo, McpGrantRequest, McpGrantResponse, McpProvidesResponse, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use runtime::agent::{Agent, AgentError, Deltas, HttpAgent};
use runtime::container::NoEngine;
pub use runtime::container::{ENGINE_ENV, Engine, EngineKind};

/// How long loading an image may take.
const LOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// How long one engine command (run, port, stop) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// Seconds a container gets to stop before it is killed.
const STOP_SECONDS: u32 = 5;

/// What the runner needs to start a pulled image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// The image as the signed manifest names it (for messages).
    pub image: String,
    /// The container port serving the OFC agent API.
    pub port: u16,
    /// The OCI image layout in the cache.
    pub layout: PathBuf,
    /// The digest of the image config (`sha256:…`): the engine's image id.
    pub config: String,
}

/// The engine to run containers with: `OFC_CONTAINER_ENGINE`, else podman, else docker
/// ([`Engine::detect`]).
pub fn find_engine() -> Result<Engine, String> {
    Engine::detect().map_err(|e| match e {
        NoEngine::NeitherOnPath => "container agents need podman or docker, and neither is on \
                                    PATH\nhint: install podman (Debian/Ubuntu: `apt-get install \
                                    podman`) or docker, or name the program with \
                                    OFC_CONTAINER_ENGINE"
            .to_string(),
        e => e.to_string(),
    })
}

/// Runs `engine args…` to completion within `timeout`; stdout on success, the tail of stderr
/// on failure.
async fn engine_run(engine: &Engine, args: &[&str], timeout: Duration) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(&engine.program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let what = format!(
        "{} {}",
        engine.program.display(),
        args.first().copied().unwrap_or("")
    );
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| format!("{what} took longer than {}s", timeout.as_secs()))?
        .map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err
            .trim()
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!("{what} failed ({}): {tail}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Makes sure the engine has the image of `spec`, loading the layout when it does not.
async fn ensure_image(engine: &Engine, spec: &ContainerSpec) -> Result<(), String> {
    let id = spec.config.trim_start_matches("sha256:");
    let exists = match engine.kind {
        EngineKind::Podman => engine_run(engine, &["image", "exists", id], STEP_TIMEOUT).await,
        EngineKind::Docker => {
            engine_run(
                engine,
                &["image", "inspect", "--format", "{{.Id}}", id],
                STEP_TIMEOUT,
            )
            .await
        }
    };
    if exists.is_ok() {
        return Ok(());
    }
    if !spec.layout.join("index.json").is_file() {
        return Err(format!(
            "the image layout {} is missing; pull the agent again",
            spec.layout.display()
        ));
    }
    let engine = engine.clone();
    let layout = spec.layout.clone();
    tokio::task::spawn_blocking(move || load_layout(&engine, &layout))
        .await
        .map_err(|e| e.to_string())?
}

/// `engine load` of the layout, streamed as a tar archive (ofc's marker left out) on its
/// standard input. `load` rather than podman's `oci:` transport: podman 4 names an image pulled
/// from a layout after the layout's path, which is not always a valid reference; `load` takes
/// the name ofc wrote in the layout's `index.json` (`ofc-image-<digest hex>`).
fn load_layout(engine: &Engine, layout: &Path) -> Result<(), String> {
    let mut child = std::process::Command::new(&engine.program)
        .arg("load")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {} load: {e}", engine.program.display()))?;
    let stdin = child.stdin.take().expect("stdin is piped");
    let written = (|| {
        let mut b = tar::Builder::new(std::io::BufWriter::new(stdin));
        b.append_path_with_name(layout.join("oci-layout"), "oci-layout")?;
        b.append_path_with_name(layout.join("index.json"), "index.json")?;
        b.append_dir_all("blobs", layout.join("blobs"))?;
        b.into_inner()?.into_inner().map_err(|e| e.into_error())?;
        Ok::<(), std::io::Error>(())
    })();
    let until = Instant::now() + LOAD_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} load took longer than {}s",
                    engine.program.display(),
                    LOAD_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read as _;
        let _ = e.read_to_string(&mut err);
    }
    if !status.success() {
        let tail: Vec<&str> = err.trim().lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{} load failed ({status}): {}",
            engine.program.display(),
            tail.join("\n")
        ));
    }
    written.map_err(|e| format!("cannot read {}: {e}", layout.display()))
}

/// A running container agent.
#[derive(Debug)]
pub struct ContainerAgent {
    http: HttpAgent,
    engine: Engine,
    name: String,
    stopped: AtomicBool,
    /// `<engine> logs -f`, copying what the container prints to the agents' log; it ends when
    /// the container is removed.
    follower: std::sync::Mutex<Option<std::process::Child>>,
}

impl ContainerAgent {
    /// Starts `spec` for the agent `handle` and waits (up to `deadline`) until it answers
    /// `/ofc/info`; what the container prints is appended to `output`. On failure, nothing is
    /// left running.
    pub async fn start(
        spec: &ContainerSpec,
        handle: &str,
        client: reqwest::Client,
        deadline: Duration,
        output: Option<&Path>,
    ) -> Result<Self, String> {
        let engine = find_engine()?;
        ensure_image(&engine, spec)
            .await
            .map_err(|e| format!("cannot load the image `{}`: {e}", spec.image))?;
        let clean: String = handle
            .trim_start_matches('@')
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(40)
            .collect();
        let mut rnd = [0u8; 6];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut rnd);
        let name = format!("ofc-{clean}-{}", hex::encode(rnd));
        let port = spec.port.to_string();
        let publish = format!("127.0.0.1::{port}");
        let env = format!("OFC_PORT={port}");
        let label_agent = format!("ofc.agent={handle}");
        let label_pid = format!("ofc.pid={}", std::process::id());
        let id = spec.config.trim_start_matches("sha256:");
        let image_ref = match engine.kind {
            EngineKind::Podman => id.to_string(),
            EngineKind::Docker => spec.config.clone(),
        };
        let args = [
            "run",
            "-d",
            "--rm",
            // The image was loaded from the cache: never ask a registry.
            "--pull=never",
            "--name",
            &name,
            "--label",
            &label_agent,
            "--label",
            &label_pid,
            "-p",
            &publish,
            "-e",
            &env,
            &image_ref,
        ];
        engine_run(&engine, &args, STEP_TIMEOUT)
            .await
            .map_err(|e| format!("cannot start the image `{}`: {e}", spec.image))?;
        // From here on, dropping the agent removes the container.
        let mut agent = ContainerAgent {
            http: HttpAgent::new(String::new(), client.clone()),
            engine,
            name,
            stopped: AtomicBool::new(false),
            follower: std::sync::Mutex::new(None),
        };
        if let Some(path) = output {
            agent.follow_logs(path);
        }
        let host_port = agent.published_port(spec.port).await?;
        agent.http = HttpAgent::new(format!("http://127.0.0.1:{host_port}/ofc"), client);
        let until = Instant::now() + deadline;
        loop {
            let attempt = tokio::time::timeout(Duration::from_secs(2), agent.http.info()).await;
            if let Ok(Ok(_)) = attempt {
                return Ok(agent);
            }
            if Instant::now() >= until {
                let logs = engine_run(
                    &agent.engine,
                    &["logs", "--tail", "20", &agent.name],
                    STEP_TIMEOUT,
                )
                .await
                .unwrap_or_default();
                agent.stop().await;
                return Err(format!(
                    "the container of `{}` did not answer /ofc/info on port {} within {}s{}",
                    spec.image,
                    spec.port,
                    deadline.as_secs(),
                    if logs.trim().is_empty() {
                        String::new()
                    } else {
                        format!("; it printed:\n{}", logs.trim())
                    }
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts copying the container's output to `path` (best effort: a log that cannot be
    /// opened leaves the agent running without one).
    fn follow_logs(&self, path: &Path) {
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        else {
            return;
        };
        let Ok(copy) = file.try_clone() else { return };
        let child = std::process::Command::new(&self.engine.program)
            .args(["logs", "-f", &self.name])
            .stdin(Stdio::null())
            .stdout(copy)
            .stderr(file)
            .spawn();
        if let (Ok(child), Ok(mut slot)) = (child, self.follower.lock()) {
            *slot = Some(child);
        }
    }

    /// The log copy, taken out to be ended.
    fn take_follower(&self) -> Option<std::process::Child> {
        self.follower.lock().ok().and_then(|mut slot| slot.take())
    }

    /// The engine running it.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The container's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The OFC endpoint on 127.0.0.1.
    pub fn endpoint(&self) -> &str {
        self.http.endpoint()
    }

    /// The host port the engine published `port` on.
    async fn published_port(&self, port: u16) -> Result<u16, String> {
        let spec = format!("{port}/tcp");
        let out = engine_run(&self.engine, &["port", &self.name, &spec], STEP_TIMEOUT).await;
        let parsed = out.as_ref().ok().and_then(|o| {
            o.lines()
                .filter_map(|l| l.trim().rsplit_once(':'))
                .find(|(addr, _)| *addr == "127.0.0.1")
                .and_then(|(_, p)| p.parse::<u16>().ok())
        });
        match parsed {
            Some(p) => Ok(p),
            None => {
                self.stop().await;
                Err(format!(
                    "cannot find the port the container engine published for {port}: {}",
                    match out {
                        Ok(o) => o,
                        Err(e) => e,
                    }
                ))
            }
        }
    }

    /// Stops and removes the container (once).
    pub async fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let t = STOP_SECONDS.to_string();
        let _ = engine_run(&self.engine, &["stop", "-t", &t, &self.name], STEP_TIMEOUT).await;
        // `--rm` removes it once stopped; this covers an engine that did not.
        let _ = engine_run(&self.engine, &["rm", "-f", &self.name], STEP_TIMEOUT).await;
        if let Some(child) = self.take_follower() {
            let _ = tokio::task::spawn_blocking(move || end_follower(child)).await;
        }
    }
}

impl Drop for ContainerAgent {
    fn drop(&mut self) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            let _ = std::process::Command::new(&self.engine.program)
                .args(["rm", "-f", &self.name])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        if let Some(child) = self.take_follower() {
            end_follower(child);
        }
    }
}

/// Ends a log copy: it ends by itself once the container is removed; it is not waited for long.
fn end_follower(mut child: std::process::Child) {
    for _ in 0..50 {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[async_trait]
impl Agent for ContainerAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        self.http.info().await
    }

    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        self.http.should_wake(request).await
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        self.http.respond(request, deltas).await
    }

    async fn grant_mcp(&self, request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        self.http.grant_mcp(request).await
    }

    async fn provides_mcp(&self) -> Result<McpProvidesResponse, AgentError> {
        self.http.provides_mcp().await
    }

    async fn shutdown(&self) {
        self.stop().await;
    }
}
