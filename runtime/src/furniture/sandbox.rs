//! The sandbox workstation (`type: sandbox`): one container per floor, run with podman (or
//! docker), and its one tool, `bash`, which runs a shell command in it.
//!
//! - **Image**: `image` as given; with a `dockerfile` (a file, or a directory holding
//!   `Dockerfile`), the image is built from it, its directory being the build context, and
//!   tagged `localhost/ofc-sandbox-<name>:<hash>` where the hash covers the Dockerfile and every
//!   file of the context: a change to either builds a new image, an unchanged one is reused.
//! - **Container**: `run -d --rm`, named `ofc-sandbox-<name>-<random>`, labelled
//!   `ofc.sandbox=<name>` and `ofc.pid=<pid of the floor's process>`; its main process is a
//!   shell that waits and exits on SIGTERM. The `mount` (`host:container[:ro|rw]`, the host side
//!   relative to the blueprint's directory, created when missing) is bound, and its container
//!   side is the working directory of every command (`/` without a mount). Each start first
//!   removes the labelled containers whose `ofc.pid` process is gone (left by a floor that was
//!   killed before anything could remove them); the [`ContainerHook`](super::ContainerHook)
//!   tells a supervisor about the container so that it is removed if the floor's process dies.
//! - **`bash`** (`execute` class): `exec` of `bash -c COMMAND` (plain `sh` when the image has no
//!   bash) in the working directory; stdout then stderr are returned, cut in the middle beyond
//!   the output cap, with the exit code when it is not 0. A command still running at its
//!   timeout is killed with its whole process group inside the container (the exec'd shell
//!   leads its own group) and the call fails with what it printed so far.
//!
//! Differences from the reference (`cli/sandbox/sandbox.go`): podman first (docker works too);
//! rebuilt on a content hash, not on the Dockerfile's mtime against the image's creation time
//! (which misses a changed `COPY`ed file), and the built image is not tagged with `image`, so a
//! built sandbox never shadows a real `python:3.11-slim`; the mount as written
//! (`./workspace:/workspace`) instead of the workspace at its host path; an output cap, and a kill
//! of the command's process group at the timeout (the reference kills only the docker client,
//! leaving the command running in the container); a label, the supervisor and the start-time reap
//! so that no sandbox outlives its floor. Not done: the ACP `fs`/`terminal` callbacks into the
//! sandbox (an ACP agent does not get the sandbox yet), resource limits (CPU, memory, network).

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::{FurnitureError, FurnitureSettings};
use crate::container::NoEngine;
pub use crate::container::{ENGINE_ENV, Engine, EngineKind};
use crate::llm::{ToolError, ToolSpec, Toolbox};

/// The label every sandbox container carries (its value: the workstation's name).
pub const LABEL: &str = "ofc.sandbox";
/// The label holding the pid of the process whose floor owns the container.
pub const PID_LABEL: &str = "ofc.pid";

/// How long one engine command (run, exec of a kill, rm) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// What the container's main process runs: wait, and exit at once on SIGTERM (a shell as
/// process 1 would otherwise ignore it and the engine wait its stop timeout).
const KEEP_ALIVE: &str = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";
/// What `bash` runs: the shell's pid first (to kill its group on timeout), then the command
/// with bash when the image has it.
const WRAPPER: &str = "echo $$; if command -v bash >/dev/null 2>&1; then exec bash -c \"$1\"; \
                       else exec /bin/sh -c \"$1\"; fi";

/// How sandboxes run commands.
#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// A command's timeout when the call gives none (the reference's 30 s).
    pub timeout: Duration,
    /// The longest timeout a call may ask for.
    pub max_timeout: Duration,
    /// How many bytes of output a call returns at most (the middle is cut).
    pub output_cap: usize,
    /// How long building an image from a Dockerfile may take.
    pub build_deadline: Duration,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            output_cap: 16 * 1024,
            build_deadline: Duration::from_secs(900),
        }
    }
}

impl Engine {
    /// `OFC_CONTAINER_ENGINE`, else podman, else docker ([`Engine::detect`]), for a sandbox.
    pub fn find() -> Result<Engine, String> {
        Engine::detect().map_err(|e| match e {
            NoEngine::NeitherOnPath => "a sandbox workstation needs podman or docker, and \
                                        neither is on PATH (install podman, e.g. `apt-get \
                                        install podman`, or name the program with \
                                        OFC_CONTAINER_ENGINE)"
                .to_string(),
            e => e.to_string(),
        })
    }

    /// Runs `engine args…` within `timeout`: stdout on success, the tail of stderr on failure.
    async fn run(&self, args: &[&str], timeout: Duration) -> Result<String, String> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let what = format!("{} {}", self.program.display(), args.first().unwrap_or(&""));
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let out = tokio::time::timeout(timeout, child.wait_with_output())
            .await
            .map_err(|_| format!("{what} took longer than {timeout:?}"))?
            .map_err(|e| format!("{what}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{what} failed ({}): {}",
                out.status,
                tail_lines(&String::from_utf8_lossy(&out.stderr), 12)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `rm -f` that does not wait for a stop timeout.
    fn rm_args(&self, name: &str) -> Vec<String> {
        match self.kind {
            EngineKind::Podman => vec![
                "rm".into(),
                "-f".into(),
                "-t".into(),
                "0".into(),
                name.into(),
            ],
            EngineKind::Docker => vec!["rm".into(), "-f".into(), name.into()],
        }
    }
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A running sandbox container.
pub struct Sandbox {
    name: String,
    engine: Engine,
    container: String,
    image: String,
    workdir: String,
    settings: SandboxSettings,
    stopped: AtomicBool,
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field("name", &self.name)
            .field("container", &self.container)
            .field("image", &self.image)
            .field("workdir", &self.workdir)
            .finish_non_exhaustive()
    }
}

/// A parsed `mount`: the host directory (absolute) and the container path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Host directory.
    pub host: PathBuf,
    /// Where it appears in the container.
    pub container: String,
    /// `:ro`.
    pub read_only: bool,
}

impl Mount {
    /// `host:container[:ro|rw]`, the host side relative to `base`.
    pub fn parse(spec: &str, base: &Path) -> Result<Mount, String> {
        let mut parts: Vec<&str> = spec.split(':').collect();
        let read_only = match parts.last().copied() {
            Some("ro") if parts.len() == 3 => {
                parts.pop();
                true
            }
            Some("rw") if parts.len() == 3 => {
                parts.pop();
                false
            }
            _ => false,
        };
        let [host, container] = parts[..] else {
            return Err(format!("`mount: {spec}` is not `host:container[:ro|rw]`"));
        };
        if host.is_empty() || !container.starts_with('/') {
            return Err(format!(
                "`mount: {spec}`: the host side must be a path and the container side absolute"
            ));
        }
        Ok(Mount {
            host: base.join(host),
            container: container.to_owned(),
            read_only,
        })
    }
}

impl Sandbox {
    /// Builds (when it has a Dockerfile) and starts the sandbox `ws` describes. Nothing is left
    /// running when it fails.
    pub async fn start(
        ws: &index_schema::blueprint::Workstation,
        settings: &FurnitureSettings,
    ) -> Result<Sandbox, FurnitureError> {
        let name = ws.effective_name().to_owned();
        let fail = |message: String| FurnitureError::Config {
            name: name.clone(),
            message,
        };
        let engine = Engine::find().map_err(fail)?;
        reap_stale(&engine).await;
        let base = settings
            .working_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        let image = match &ws.dockerfile {
            Some(dockerfile) => build_image(&engine, &name, &base.join(dockerfile), settings)
                .await
                .map_err(fail)?,
            None => ws.sandbox_image().to_owned(),
        };
        let mount = match &ws.mount {
            Some(spec) => {
                let mut m = Mount::parse(spec, &base).map_err(fail)?;
                std::fs::create_dir_all(&m.host).map_err(|e| {
                    fail(format!(
                        "cannot create the mount's directory {}: {e}",
                        m.host.display()
                    ))
                })?;
                m.host = m.host.canonicalize().unwrap_or(m.host);
                Some(m)
            }
            None => None,
        };
        let workdir = mount
            .as_ref()
            .map(|m| m.container.clone())
            .unwrap_or_else(|| "/".to_owned());
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let container = format!("ofc-sandbox-{clean}-{}", random_hex(6));
        let label = format!("{LABEL}={name}");
        let pid_label = format!("{PID_LABEL}={}", std::process::id());
        let volume = mount.as_ref().map(|m| {
            format!(
                "{}:{}{}",
                m.host.display(),
                m.container,
                if m.read_only { ":ro" } else { "" }
            )
        });
        let mut args: Vec<&str> = vec![
            "run",
            "-d",
            "--rm",
            "--name",
            &container,
            "--label",
            &label,
            "--label",
            &pid_label,
            "--stop-timeout",
            "2",
            "-w",
            &workdir,
            "--entrypoint",
            "/bin/sh",
        ];
        if let Some(v) = &volume {
            args.extend(["-v", v.as_str()]);
        }
        args.extend([image.as_str(), "-c", KEEP_ALIVE]);
        let sandbox = Sandbox {
            name: name.clone(),
            engine: engine.clone(),
            container: container.clone(),
            image: image.clone(),
            workdir: workdir.clone(),
            settings: settings.sandbox.clone(),
            stopped: AtomicBool::new(false),
        };
        // Told before the run: a floor killed while the engine starts it still has it removed.
        if let Some(hook) = &settings.on_container {
            (hook.0)(&engine.program, &container);
        }
        if let Err(e) = engine
            .run(&args, settings.start_deadline.max(STEP_TIMEOUT))
            .await
        {
            sandbox.stop().await;
            return Err(fail(format!("cannot start the image `{image}`: {e}")));
        }
        Ok(sandbox)
    }

    /// The workstation's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The container's name.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// The image it runs (the content-hash tag when built from a Dockerfile).
    pub fn image(&self) -> &str {
        &self.image
    }

    /// The engine running it.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The working directory of commands.
    pub fn workdir(&self) -> &str {
        &self.workdir
    }

    /// The `bash` tool as the model is told about it.
    pub fn bash_spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: format!(
                "Runs a shell command (bash -c, or sh -c when the image has no bash) in the \
                 sandbox container `{}` (image {}), in {}. Returns stdout then stderr (at most \
                 {} bytes; the middle of longer output is cut) and the exit code when it is \
                 not 0. The command is killed after `timeout` seconds (default {}, at most {}).",
                self.name,
                self.image,
                self.workdir,
                self.settings.output_cap,
                self.settings.timeout.as_secs(),
                self.settings.max_timeout.as_secs()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command to run."},
                    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before the command is killed."}
                },
                "required": ["command"]
            }),
        }
    }

    /// Runs `command` in the container within `timeout`.
    pub async fn exec(&self, command: &str, timeout: Duration) -> Result<String, ToolError> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(ToolError(format!("the sandbox `{}` is stopped", self.name)));
        }
        let mut cmd = tokio::process::Command::new(&self.engine.program);
        cmd.args([
            "exec",
            "-w",
            &self.workdir,
            &self.container,
            "/bin/sh",
            "-c",
            WRAPPER,
            "ofc-bash",
            command,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            ToolError(format!(
                "cannot start {} exec: {e}",
                self.engine.program.display()
            ))
        })?;
        let cap = self.settings.output_cap;
        let (pid_tx, pid_rx) = tokio::sync::oneshot::channel();
        let stdout = child
            .stdout
            .take()
            .map(|s| tokio::spawn(read_capped(s, cap, Some(pid_tx))));
        let stderr = child
            .stderr
            .take()
            .map(|s| tokio::spawn(read_capped(s, cap, None)));
        let waited = tokio::time::timeout(timeout, child.wait()).await;
        let timed_out = waited.is_err();
        if timed_out {
            if let Ok(Some(pid)) = tokio::time::timeout(Duration::from_millis(100), pid_rx)
                .await
                .map(Result::ok)
            {
                let kill = format!("kill -s KILL -- -{pid} 2>/dev/null || kill -s KILL {pid}");
                let _ = self
                    .engine
                    .run(
                        &["exec", &self.container, "/bin/sh", "-c", &kill],
                        STEP_TIMEOUT,
                    )
                    .await;
            }
            let _ = child.kill().await;
        }
        let collect = |h: Option<tokio::task::JoinHandle<Capped>>| async move {
            match h {
                Some(h) => tokio::time::timeout(Duration::from_secs(5), h)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map(Capped::into_string)
                    .unwrap_or_default(),
                None => String::new(),
            }
        };
        let (out, err) = (collect(stdout).await, collect(stderr).await);
        let mut text = out;
        if !err.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&err);
        }
        let text = cut_middle(text.trim_end(), cap);
        match waited {
            Err(_) => Err(ToolError(format!(
                "the command did not finish within {}s and was killed{}",
                timeout.as_secs(),
                if text.is_empty() {
                    String::new()
                } else {
                    format!("; its output until then:\n{text}")
                }
            ))),
            Ok(Err(e)) => Err(ToolError(format!("the sandbox exec failed: {e}"))),
            Ok(Ok(status)) => {
                let mut text = if text.is_empty() {
                    "[no output]".to_owned()
                } else {
                    text
                };
                match status.code() {
                    Some(0) => {}
                    // podman/docker exec: 125 the engine failed, 126/127 the shell was not
                    // runnable; the command's own codes otherwise.
                    Some(code) => text.push_str(&format!("\n[exit code {code}]")),
                    None => text.push_str("\n[killed by a signal]"),
                }
                Ok(text)
            }
        }
    }

    /// Stops and removes the container (once).
    pub async fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let args = self.engine.rm_args(&self.container);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = self.engine.run(&args, STEP_TIMEOUT).await;
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            let _ = std::process::Command::new(&self.engine.program)
                .args(self.engine.rm_args(&self.container))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[async_trait]
impl Toolbox for Sandbox {
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![self.bash_spec()])
    }

    async fn call(&self, tool: &str, arguments: Map<String, Value>) -> Result<Value, ToolError> {
        if tool != "bash" {
            return Err(ToolError(format!(
                "the sandbox `{}` has one tool, `bash`, not `{tool}`",
                self.name
            )));
        }
        let Some(command) = arguments.get("command").and_then(Value::as_str) else {
            return Err(ToolError("`bash` needs a string `command`".into()));
        };
        let timeout = match arguments.get("timeout") {
            None | Some(Value::Null) => self.settings.timeout,
            Some(v) => match v.as_u64() {
                Some(s) if s >= 1 => Duration::from_secs(s).min(self.settings.max_timeout),
                _ => {
                    return Err(ToolError(
                        "`timeout` must be a whole number of seconds, at least 1".into(),
                    ));
                }
            },
        };
        self.exec(command, timeout).await.map(Value::String)
    }
}

/// Output kept within a cap: the first three quarters and the last quarter, with how much was
/// left out between them.
pub(crate) struct Capped {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: usize,
    cap: usize,
}

impl Capped {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped: 0,
            cap: cap.max(16),
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let head_cap = self.cap * 3 / 4;
        if self.head.len() < head_cap {
            let n = bytes.len().min(head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        let tail_cap = self.cap - head_cap;
        for b in bytes {
            if self.tail.len() == tail_cap {
                self.tail.pop_front();
                self.dropped += 1;
            }
            self.tail.push_back(*b);
        }
    }

    pub(crate) fn into_string(self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n… [{} bytes cut] …\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

/// Reads a stream to its end into a [`Capped`]; with `pid`, the first line is the wrapper's
/// pid, sent there and not kept.
pub(crate) async fn read_capped(
    mut r: impl tokio::io::AsyncRead + Unpin,
    cap: usize,
    mut pid: Option<tokio::sync::oneshot::Sender<u32>>,
) -> Capped {
    let mut out = Capped::new(cap);
    let mut first = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut chunk = &buf[..n];
        if pid.is_some() {
            match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    first.extend_from_slice(&chunk[..i]);
                    chunk = &chunk[i + 1..];
                    if let (Some(tx), Ok(p)) = (
                        pid.take(),
                        String::from_utf8_lossy(&first).trim().parse::<u32>(),
                    ) {
                        let _ = tx.send(p);
                    }
                }
                None if first.len() < 32 => {
                    first.extend_from_slice(chunk);
                    continue;
                }
                None => {
                    pid = None;
                    out.push(&first);
                }
            }
        }
        out.push(chunk);
    }
    out
}

/// `text` within `cap` bytes (at char boundaries), its middle replaced by a marker.
fn cut_middle(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut head = cap * 3 / 4;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (cap - cap * 3 / 4);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n… [{} bytes cut] …\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

fn random_hex(n: usize) -> String {
    use rand::RngCore;
    let mut bytes = vec![0u8; n];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The content hash of a build: the Dockerfile, then every file of the context (its path,
/// size and bytes, in path order; symlinks by their target).
pub fn build_hash(dockerfile: &Path, context: &Path) -> std::io::Result<String> {
    let mut h = Sha256::new();
    h.update(b"ofc-sandbox-build-1\0");
    h.update(std::fs::read(dockerfile)?);
    let mut stack = vec![context.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                files.push((entry.path(), kind.is_symlink()));
            }
        }
    }
    files.sort();
    for (path, symlink) in files {
        let rel = path.strip_prefix(context).unwrap_or(&path);
        h.update(rel.to_string_lossy().as_bytes());
        h.update(b"\0");
        if symlink {
            h.update(b"L");
            h.update(std::fs::read_link(&path)?.to_string_lossy().as_bytes());
        } else {
            let bytes = std::fs::read(&path)?;
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(&bytes);
        }
    }
    Ok(h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Builds the image of a Dockerfile unless the engine has it under its content-hash tag;
/// returns the tag.
async fn build_image(
    engine: &Engine,
    name: &str,
    dockerfile: &Path,
    settings: &FurnitureSettings,
) -> Result<String, String> {
    let (file, context) = if dockerfile.is_dir() {
        (dockerfile.join("Dockerfile"), dockerfile.to_path_buf())
    } else {
        let context = dockerfile
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        (dockerfile.to_path_buf(), context)
    };
    if !file.is_file() {
        return Err(format!("the Dockerfile {} does not exist", file.display()));
    }
    let (f, c) = (file.clone(), context.clone());
    let hash = tokio::task::spawn_blocking(move || build_hash(&f, &c))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot read the build context {}: {e}", context.display()))?;
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let tag = format!("localhost/ofc-sandbox-{clean}:{hash}");
    let exists = match engine.kind {
        EngineKind::Podman => engine.run(&["image", "exists", &tag], STEP_TIMEOUT).await,
        EngineKind::Docker => engine.run(&["image", "inspect", &tag], STEP_TIMEOUT).await,
    };
    if exists.is_ok() {
        return Ok(tag);
    }
    let file_s = file.to_string_lossy().into_owned();
    let context_s = context.to_string_lossy().into_owned();
    let label = format!("{LABEL}={name}");
    let mut cmd = tokio::process::Command::new(&engine.program);
    cmd.args([
        "build", "-t", &tag, "--label", &label, "-f", &file_s, &context_s,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {} build: {e}", engine.program.display()))?;
    let out = tokio::time::timeout(settings.sandbox.build_deadline, child.wait_with_output())
        .await
        .map_err(|_| {
            format!(
                "building {} took longer than {:?}",
                file.display(),
                settings.sandbox.build_deadline
            )
        })?
        .map_err(|e| e.to_string())?;
    if let Some(log) = &settings.stderr_log {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            for line in String::from_utf8_lossy(&out.stdout)
                .lines()
                .chain(String::from_utf8_lossy(&out.stderr).lines())
            {
                let _ = writeln!(f, "[sandbox {name} build] {line}");
            }
        }
    }
    if !out.status.success() {
        let all = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return Err(format!(
            "building {} failed ({}):\n{}",
            file.display(),
            out.status,
            tail_lines(&all, 12)
        ));
    }
    Ok(tag)
}

/// Removes the sandbox containers whose floor's process is gone (Linux: `/proc/<pid>`). Best
/// effort: an engine that cannot list them leaves them.
pub async fn reap_stale(engine: &Engine) -> Vec<String> {
    let mut removed = Vec::new();
    if !cfg!(target_os = "linux") {
        return removed;
    }
    let filter = format!("label={LABEL}");
    let Ok(names) = engine
        .run(
            &["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"],
            STEP_TIMEOUT,
        )
        .await
    else {
        return removed;
    };
    let format = format!("{{{{index .Config.Labels \"{PID_LABEL}\"}}}}");
    for name in names.lines().map(str::trim).filter(|n| !n.is_empty()) {
        let Ok(pid) = engine
            .run(&["inspect", "--format", &format, name], STEP_TIMEOUT)
            .await
        else {
            continue;
        };
        let Ok(pid) = pid.trim().parse::<u32>() else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let args = engine.rm_args(name);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if engine.run(&args, STEP_TIMEOUT).await.is_ok() {
                removed.push(name.to_owned());
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_parse() {
        let base = Path::new("/p");
        assert_eq!(
            Mount::parse("./ws:/workspace", base).unwrap(),
            Mount {
                host: PathBuf::from("/p/./ws"),
                container: "/workspace".into(),
                read_only: false
            }
        );
        assert!(Mount::parse("/abs:/w:ro", base).unwrap().read_only);
        assert!(!Mount::parse("/abs:/w:rw", base).unwrap().read_only);
        for bad in ["ws", "ws:rel", ":/w", "a:/b:c:d", "a:/b:xx"] {
            assert!(Mount::parse(bad, base).is_err(), "{bad}");
        }
    }

    #[test]
    fn output_is_cut_in_the_middle() {
        let mut c = Capped::new(100);
        c.push(&[b'a'; 80]);
        c.push(&[b'b'; 80]);
        let s = c.into_string();
        assert!(s.starts_with(&"a".repeat(75)), "{s}");
        assert!(s.ends_with(&"b".repeat(25)), "{s}");
        assert!(s.contains("[60 bytes cut]"), "{s}");
        let short = cut_middle("héllo wörld", 100);
        assert_eq!(short, "héllo wörld");
        let cut = cut_middle(&"é".repeat(100), 41);
        assert!(cut.contains("bytes cut"), "{cut}");
    }

    #[test]
    fn the_build_hash_follows_the_context() {
        let dir = tempfile::tempdir().unwrap();
        let df = dir.path().join("Dockerfile");
        std::fs::write(&df, "FROM scratch\n").unwrap();
        let a = build_hash(&df, dir.path()).unwrap();
        assert_eq!(a, build_hash(&df, dir.path()).unwrap());
        std::fs::write(dir.path().join("x"), "1").unwrap();
        let b = build_hash(&df, dir.path()).unwrap();
        assert_ne!(a, b);
        std::fs::write(dir.path().join("x"), "2").unwrap();
        assert_ne!(b, build_hash(&df, dir.path()).unwrap());
        std::fs::write(&df, "FROM scratch\nCMD x\n").unwrap();
        assert_ne!(b, build_hash(&df, dir.path()).unwrap());
    }
}
