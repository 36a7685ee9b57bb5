//! [`HubProcess`]: the real `ofc-hub serve` as a child process, for tests that kill it, restart
//! it on the same data, or run the one-shot commands (`admin`, `gc`, `migrate`, …) beside it.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use index_schema::envelope::SecretKey;
use serde_json::{Value, json};

use crate::Backend;
use crate::fixtures::{Publisher, key_for};
use crate::postgres::PgDatabase;
use crate::request::Request;

/// How long `ofc-hub serve` may take to listen (a loaded CI machine is slow to start tantivy).
pub const START_BOUND: Duration = Duration::from_secs(180);

/// How long one `ofc-hub admin` invocation or one request may take.
pub const COMMAND_BOUND: Duration = Duration::from_secs(90);

/// How long the search index may take to show a change.
pub const SEARCH_BOUND: Duration = Duration::from_secs(30);

/// A binary of this workspace (`ofc`, `ofc-hub`): `NEXTEST_BIN_EXE_<name>` when nextest set it
/// (a binary of the test's own crate), else the one in the profile directory the test runs from
/// (`target/<profile>/`). Panics, saying how to build it, when it is missing.
pub fn bin(name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(format!("NEXTEST_BIN_EXE_{name}")) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps");
    let path = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: build the binaries first with \
         `cargo build -p hub-server -p ofc-pkg --bins` (same profile and CARGO_TARGET_DIR as the \
         tests), or run the tests with `cargo nextest run --workspace`",
        path.display()
    );
    path
}

/// `ofc-hub --data DATA [--database-url URL]`, quiet logs and no practical brute-force limit.
pub fn hub_command(bin: &Path, data: &Path, database_url: Option<&str>) -> Command {
    let mut c = Command::new(bin);
    c.arg("--data").arg(data);
    if let Some(u) = database_url {
        c.arg("--database-url").arg(u);
    }
    c.env("OFC_HUB_LOG", "warn,sqlx=error")
        .env("OFC_HUB__AUTH_FAILURE_LIMIT", "100000");
    c
}

/// How to start a [`HubProcess`].
#[derive(Debug, Clone, Default)]
pub struct ProcessOptions {
    backend: Backend,
    hub_toml: Option<String>,
    data_dir: Option<PathBuf>,
    bin: Option<PathBuf>,
    stopped: bool,
    database_url: Option<String>,
    env: Vec<(String, String)>,
}

impl ProcessOptions {
    /// On `backend` (PostgreSQL: a fresh database, dropped with the hub).
    pub fn new(backend: Backend) -> ProcessOptions {
        ProcessOptions {
            backend,
            ..ProcessOptions::default()
        }
    }

    /// Writes `toml` to `DATA/hub.toml` first, which the hub reads at every start.
    pub fn hub_toml(mut self, toml: &str) -> ProcessOptions {
        self.hub_toml = Some(toml.to_string());
        self
    }

    /// This data directory instead of `TEMP/data` (which does not exist before the first
    /// start); a relative path is under the hub's temp dir.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> ProcessOptions {
        self.data_dir = Some(dir.into());
        self
    }

    /// This `ofc-hub` (for instance `env!("CARGO_BIN_EXE_ofc-hub")`) instead of [`bin`]'s.
    pub fn bin(mut self, bin: impl Into<PathBuf>) -> ProcessOptions {
        self.bin = Some(bin.into());
        self
    }

    /// On this existing PostgreSQL database (another hub's, for replicas sharing one database)
    /// instead of a fresh one; whoever made it drops it.
    pub fn database_url(mut self, url: &str) -> ProcessOptions {
        self.backend = Backend::Postgres;
        self.database_url = Some(url.to_string());
        self
    }

    /// Sets the environment variable `key` for every `ofc-hub` this hub runs (after the kit's
    /// own, e.g. `OFC_HUB__AUTH_FAILURE_LIMIT`, which it overrides).
    pub fn env(mut self, key: &str, value: &str) -> ProcessOptions {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Prepares data and database but starts nothing: one-shot commands first, then
    /// [`HubProcess::start`].
    pub fn stopped(mut self) -> ProcessOptions {
        self.stopped = true;
        self
    }
}

/// Spawns `cmd` (an `ofc-hub` that serves), drains its stderr into `log` for its whole life,
/// and waits until it prints the line `<prefix><address>`; the child and that address.
/// Panics, with what it wrote, when it does not within [`START_BOUND`].
fn spawn_listening(
    mut cmd: Command,
    prefix: &'static str,
    log: &Arc<Mutex<Vec<String>>>,
) -> (Child, SocketAddr) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let l = log.clone();
    // Drains stderr for the life of the process, so it never blocks writing to it.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(addr) = line.strip_prefix(prefix) {
                let _ = tx.send(addr.trim().to_string());
            }
            l.lock().unwrap().push(line);
        }
    });
    match rx.recv_timeout(START_BOUND) {
        Ok(addr) => (child, addr.parse().expect("a socket address")),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not start ({e}):\n{}",
                log.lock().unwrap().join("\n")
            );
        }
    }
}

/// A running (or stopped) `ofc-hub serve` with its own data directory and database.
#[derive(Debug)]
pub struct HubProcess {
    child: Option<Child>,
    addr: Option<SocketAddr>,
    /// `http://127.0.0.1:PORT`, no trailing slash; empty before the first start.
    pub url: String,
    log: Arc<Mutex<Vec<String>>>,
    bin: PathBuf,
    data: PathBuf,
    backend: Backend,
    _root: tempfile::TempDir,
    _pg: Option<PgDatabase>,
    /// The database's URL on PostgreSQL (the fresh database's, or the one given).
    db_url: Option<String>,
    env: Vec<(String, String)>,
}

impl HubProcess {
    /// Prepares the data (and database) and starts the hub unless `opts` says
    /// [`ProcessOptions::stopped`].
    pub fn start(opts: ProcessOptions) -> HubProcess {
        let root = tempfile::tempdir().expect("a temp dir for the hub");
        let data = root
            .path()
            .join(opts.data_dir.as_deref().unwrap_or(Path::new("data")));
        if let Some(toml) = &opts.hub_toml {
            std::fs::create_dir_all(&data).expect("create the data dir");
            std::fs::write(data.join("hub.toml"), toml).expect("write hub.toml");
        }
        let pg = match (opts.backend, &opts.database_url) {
            (Backend::Postgres, None) => Some(PgDatabase::create_blocking()),
            _ => None,
        };
        let db_url = opts
            .database_url
            .clone()
            .or_else(|| pg.as_ref().map(|p| p.url.clone()));
        let mut hub = HubProcess {
            child: None,
            addr: None,
            url: String::new(),
            log: Arc::new(Mutex::new(Vec::new())),
            bin: opts.bin.unwrap_or_else(|| bin("ofc-hub")),
            data,
            backend: opts.backend,
            _root: root,
            _pg: pg,
            db_url,
            env: opts.env,
        };
        if !opts.stopped {
            hub.spawn();
        }
        hub
    }

    /// Starts the stopped hub: on the address it had (so `url`, and credentials stored for it,
    /// stay valid), or an ephemeral loopback port the first time. Panics if it runs.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "the hub is already running");
        let listen = self
            .addr
            .map_or_else(|| "127.0.0.1:0".to_string(), |a| a.to_string());
        let mut cmd = self.command();
        cmd.args(["serve", "--listen", &listen]);
        let (child, addr) = spawn_listening(cmd, "ofc-hub listening on http://", &self.log);
        if let Some(old) = self.addr {
            assert_eq!(addr, old, "the restarted hub listens elsewhere");
        }
        self.addr = Some(addr);
        self.url = format!("http://{addr}");
        self.child = Some(child);
    }

    /// Runs `ofc-hub serve` expecting it to refuse to start: panics if it is still running
    /// after [`COMMAND_BOUND`] or exits 0; returns what it wrote to stderr.
    pub fn refused_start(&self) -> String {
        let mut c = assert_cmd::Command::from_std(self.command());
        c.args(["serve", "--listen", "127.0.0.1:0"])
            .timeout(COMMAND_BOUND);
        let out = c.output().expect("run ofc-hub serve");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success() && out.status.code().is_some(),
            "ofc-hub serve was expected to refuse to start, but: {}\n{stderr}",
            out.status
        );
        stderr
    }

    /// SIGKILL: no shutdown handler, no flush, no graceful close; waits for it. The data stays;
    /// nothing listens on `url` after.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("SIGKILL the hub");
            c.wait().expect("reap the hub");
        }
    }

    /// Kills the hub if it runs and starts it again on the same data and address.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Whether the process is running.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The hub process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Everything the hub wrote to stderr so far (over every start).
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The data directory (SQLite file, blobs, search index).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The database's URL, on PostgreSQL.
    pub fn database_url(&self) -> Option<&str> {
        self.db_url.as_deref()
    }

    /// `ofc-hub --data DATA [--database-url URL]`, to add a subcommand to.
    pub fn command(&self) -> Command {
        let mut c = hub_command(&self.bin, &self.data, self.database_url());
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// `ofc-hub ARGS…` on this hub's data, whatever the outcome.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run ofc-hub {args:?}: {e}"))
    }

    /// `ofc-hub admin ARGS…` (bounded); panics unless it succeeds. Returns stdout.
    pub fn admin(&self, args: &[&str]) -> String {
        self.admin_with_stdin(args, None)
    }

    /// [`HubProcess::admin`] with `stdin` written to the command.
    pub fn admin_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut c = assert_cmd::Command::from_std(self.command());
        c.arg("admin").args(args).timeout(COMMAND_BOUND);
        if let Some(s) = stdin {
            c.write_stdin(s.to_string());
        }
        let out = c.output().expect("run ofc-hub admin");
        assert!(
            out.status.success(),
            "ofc-hub admin {args:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 from ofc-hub admin")
    }

    /// Creates a user and a namespace of the same name; returns the user's first API token.
    pub fn create_user(&self, name: &str) -> String {
        token_of(&self.admin(&["create-user", name, "--json"]))
    }

    /// Like [`HubProcess::create_user`], with a password (for `ofc login --username`).
    pub fn create_user_with_password(&self, name: &str, password: &str) -> String {
        token_of(&self.admin_with_stdin(
            &["create-user", name, "--json", "--password-stdin"],
            Some(password),
        ))
    }

    /// Creates a namespace owned by `owner`.
    pub fn create_namespace(&self, name: &str, owner: &str) {
        self.admin(&["create-namespace", name, "--owner", owner]);
    }

    /// Registers `key` for `namespace` through the API, as a publisher would; panics unless 201.
    pub fn register_key(&self, token: &str, namespace: &str, key: &SecretKey) {
        let (status, body) = self
            .request(
                reqwest::Method::POST,
                &format!("/api/v1/namespaces/{namespace}/keys"),
            )
            .token(token)
            .json(json!({ "public_key": key.public_key().to_string() }))
            .send_blocking();
        assert_eq!(status, 201, "{body}");
    }

    /// The publisher fixture on a running hub: user and namespace `name` (admin command), its
    /// first token, and [`key_for`] the name registered through the API.
    pub fn new_user(&self, name: &str) -> Publisher {
        let token = self.create_user(name);
        let key = key_for(name);
        self.register_key(&token, name, &key);
        Publisher {
            name: name.to_string(),
            token,
            key,
        }
    }

    /// A request to `path` (bounded by [`COMMAND_BOUND`]).
    pub fn request(&self, method: reqwest::Method, path: &str) -> Request {
        Request::new(None, method, format!("{}{path}", self.url)).timeout(COMMAND_BOUND)
    }

    /// One JSON API call from synchronous code: `(status, body)`; the body is `Value::Null`
    /// when empty and a string when not JSON.
    pub fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.request(method, path)
            .maybe_token(token)
            .maybe_json(body)
            .send_blocking()
    }

    /// `GET path` as raw bytes (for bundles); panics unless 200.
    pub fn get_bytes(&self, path: &str) -> Vec<u8> {
        self.get_bytes_from(path, [127, 0, 0, 1])
    }

    /// `GET path` from the loopback address `from` (the hub counts a download once per client
    /// address and day).
    pub fn get_bytes_from(&self, path: &str, from: [u8; 4]) -> Vec<u8> {
        let url = format!("{}{path}", self.url);
        crate::request::on_own_runtime(async move {
            let resp = reqwest::Client::builder()
                .local_address(std::net::IpAddr::from(from))
                .build()
                .unwrap()
                .get(&url)
                .timeout(COMMAND_BOUND)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(resp.status().as_u16(), 200, "{url}");
            resp.bytes().await.unwrap().to_vec()
        })
    }

    /// Polls `GET /api/v1/search?{query}` until `ready(hits)`; the index follows the database
    /// asynchronously. Returns the hits; panics after [`SEARCH_BOUND`].
    pub fn wait_for_search(&self, query: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + SEARCH_BOUND;
        loop {
            let (status, body) = self.api(
                reqwest::Method::GET,
                &format!("/api/v1/search?{query}"),
                None,
                None,
            );
            let hits = body["hits"].as_array().cloned().unwrap_or_default();
            if status == 200 && ready(&hits) {
                return hits;
            }
            assert!(
                Instant::now() < deadline,
                "search `{query}` never became ready; last answer {status} {body}\nhub log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A running (or stopped) `ofc-hub witness serve`, with its own data dir (its key and its
/// state file), witnessing the logs whose verifier keys it was given.
#[derive(Debug)]
pub struct WitnessProcess {
    child: Option<Child>,
    addr: Option<SocketAddr>,
    /// `http://127.0.0.1:PORT`, its submission prefix.
    pub url: String,
    /// Its verifier key (`name+id+base64`).
    pub key: String,
    logs: Vec<String>,
    log: Arc<Mutex<Vec<String>>>,
    bin: PathBuf,
    data: PathBuf,
    _root: tempfile::TempDir,
}

impl WitnessProcess {
    /// A new witness named `name` following `logs` (verifier keys, as `ofc-hub log key`
    /// prints them), started on an ephemeral loopback port.
    pub fn start(name: &str, logs: &[&str]) -> WitnessProcess {
        let root = tempfile::tempdir().expect("a temp dir for the witness");
        let data = root.path().join("data");
        let bin = bin("ofc-hub");
        let out = hub_command(&bin, &data, None)
            .args(["witness", "key", "--name", name])
            .output()
            .expect("run ofc-hub witness key");
        assert!(
            out.status.success(),
            "ofc-hub witness key failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let mut w = WitnessProcess {
            child: None,
            addr: None,
            url: String::new(),
            key,
            logs: logs.iter().map(|l| l.to_string()).collect(),
            log: Arc::new(Mutex::new(Vec::new())),
            bin,
            data,
            _root: root,
        };
        w.spawn();
        w
    }

    /// A hub started with `opts` whose log this new witness (`name`) follows and which
    /// submits its checkpoints to it (`log_witnesses` in its `hub.toml`): the hub's log key is
    /// made first (`ofc-hub log key`), the witness started with it, then the hub.
    pub fn with_hub(opts: ProcessOptions, name: &str) -> (HubProcess, WitnessProcess) {
        let mut hub = HubProcess::start(opts.stopped());
        let out = hub.run(&["log", "key"]);
        assert!(out.status.success(), "ofc-hub log key: {out:?}");
        let log_key = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let w = WitnessProcess::start(name, &[&log_key]);
        let toml = hub.data_dir().join("hub.toml");
        let mut settings = std::fs::read_to_string(&toml).unwrap_or_default();
        settings.push_str(&w.hub_toml());
        std::fs::write(&toml, settings).expect("write hub.toml");
        hub.spawn();
        (hub, w)
    }

    /// Starts the stopped witness on the address it had (ephemeral the first time).
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "the witness is already running");
        let listen = self
            .addr
            .map_or_else(|| "127.0.0.1:0".to_string(), |a| a.to_string());
        let mut cmd = hub_command(&self.bin, &self.data, None);
        cmd.args(["witness", "serve", "--listen", &listen]);
        for l in &self.logs {
            cmd.args(["--log", l]);
        }
        let (child, addr) = spawn_listening(cmd, "ofc-hub witness listening on http://", &self.log);
        self.addr = Some(addr);
        self.url = format!("http://{addr}");
        self.child = Some(child);
    }

    /// SIGKILL, and wait for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("SIGKILL the witness");
            c.wait().expect("reap the witness");
        }
    }

    /// Kills the witness if it runs and starts it again on the same state and address.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Everything it wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Its data dir (`witness-key`, `witness-state.json`).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// `[[log_witnesses]]` for a hub's `hub.toml`.
    pub fn hub_toml(&self) -> String {
        format!(
            "[[log_witnesses]]\nurl = \"{}\"\nkey = \"{}\"\n",
            self.url, self.key
        )
    }
}

impl Drop for WitnessProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn token_of(json: &str) -> String {
    let v: Value = serde_json::from_str(json.trim()).expect("JSON from create-user");
    v["token"].as_str().expect("a token").to_string()
}
