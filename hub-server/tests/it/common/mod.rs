//! `TestApp`: a real hub on an ephemeral 127.0.0.1 port, on SQLite or a fresh PostgreSQL
//! database, with a user, a namespace, a key and a token, in one line.
#![allow(dead_code)]

pub mod hub_process;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use base64::Engine as _;
use hub_server::auth::Scope;
use hub_server::store::{Actor, Store};
use hub_server::{AppState, Config, admin};
use index_schema::envelope::{Envelope, SecretKey, sign_manifest};
use index_schema::manifest::Manifest;
use index_schema::name::Digest;
use serde_json::{Value, json};

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The URL of the test PostgreSQL server: `OFC_TEST_POSTGRES_URL`, else whatever
/// `scripts/peers/postgres` starts. Panics (never skips) when there is none.
pub fn postgres_base_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(u) = std::env::var("OFC_TEST_POSTGRES_URL") {
            return u;
        }
        let script = workspace().join("scripts/peers/postgres");
        let out = Command::new(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "PostgreSQL is unavailable ({} failed): {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    })
    .clone()
}

/// A fresh database for one test; dropped with the returned guard.
pub struct PgDatabase {
    pub url: String,
    name: String,
    admin_url: String,
}

impl PgDatabase {
    pub async fn create() -> PgDatabase {
        use sqlx::Connection as _;
        let admin_url = postgres_base_url();
        let name = format!("ofc_t_{}", uuid::Uuid::new_v4().simple());
        let mut c = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("connect to test PostgreSQL");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut c)
            .await
            .expect("create test database");
        c.close().await.ok();
        let base = admin_url.rsplit_once('/').unwrap().0;
        PgDatabase {
            url: format!("{base}/{name}"),
            name,
            admin_url,
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin_url.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                use sqlx::Connection as _;
                if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut c)
                        .await;
                }
            });
        })
        .join();
    }
}

/// A user with a namespace of their name, a registered key and a full (non-admin) token.
#[derive(Debug, Clone)]
pub struct TestUser {
    pub name: String,
    pub token: String,
    pub key: SecretKey,
}

pub struct TestApp {
    pub url: String,
    pub client: reqwest::Client,
    pub state: AppState,
    pub backend: Backend,
    pub user: TestUser,
    pub data_dir: PathBuf,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
    _pg: Option<PgDatabase>,
}

/// A store on a fresh database (no server), for the storage suite.
pub async fn fresh_store(backend: Backend) -> (Store, tempfile::TempDir, Option<PgDatabase>) {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, pg) = config(backend, &dir).await;
    let store = hub_server::open_store(&cfg).await.unwrap();
    (store, dir, pg)
}

async fn config(backend: Backend, dir: &tempfile::TempDir) -> (Config, Option<PgDatabase>) {
    let pg = match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(PgDatabase::create().await),
    };
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        database_url: pg.as_ref().map(|p| p.url.clone()),
        listen: "127.0.0.1:0".parse().unwrap(),
        auth_failure_limit: 10_000,
        db_max_connections: 8,
        max_bundle_bytes: 1024 * 1024,
        ..Config::default()
    };
    (cfg, pg)
}

impl TestApp {
    /// A running hub with user `alice` (namespace `alice`, one key, a full token).
    pub async fn start(backend: Backend) -> TestApp {
        Self::start_with(backend, |_| {}).await
    }

    pub async fn start_with(backend: Backend, tweak: impl FnOnce(&mut Config)) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let (mut cfg, pg) = config(backend, &dir).await;
        tweak(&mut cfg);
        let data_dir = cfg.data_dir.clone();
        let state = hub_server::build_state(cfg).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        let server = tokio::spawn(async move {
            hub_server::serve(st, listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        let mut app = TestApp {
            url,
            client: reqwest::Client::new(),
            state,
            backend,
            user: TestUser {
                name: String::new(),
                token: String::new(),
                key: SecretKey::from_seed(&[0; 32]),
            },
            data_dir,
            shutdown: Some(tx),
            server: Some(server),
            _dir: dir,
            _pg: pg,
        };
        app.user = app.new_user("alice", false).await;
        app
    }

    pub fn store(&self) -> &Store {
        &self.state.store
    }

    /// Creates a user with a namespace, a registered key and a full token.
    pub async fn new_user(&self, name: &str, is_admin: bool) -> TestUser {
        let c = admin::create_user(self.store(), name, Some("correct horse"), is_admin, false)
            .await
            .unwrap();
        let mut seed = [0u8; 32];
        seed[..name.len().min(32)].copy_from_slice(&name.as_bytes()[..name.len().min(32)]);
        let key = SecretKey::from_seed(&seed);
        let ns = self.store().namespace(name).await.unwrap().unwrap();
        self.store()
            .add_key(
                &Actor::operator(),
                &ns,
                &key.key_id().to_string(),
                &key.public_key().to_string(),
                c.user.id,
            )
            .await
            .unwrap();
        TestUser {
            name: c.user.name,
            token: c.token.expose().to_string(),
            key,
        }
    }

    /// A token for `user` with exactly these scopes and namespace patterns.
    pub async fn token(
        &self,
        user: &str,
        scopes: &[Scope],
        namespaces: &[&str],
        expires_in_days: Option<u32>,
    ) -> String {
        let u = admin::user(self.store(), user).await.unwrap();
        let pats: Vec<String> = namespaces.iter().map(|s| s.to_string()).collect();
        admin::create_token(self.store(), &u, "test", scopes, &pats, expires_in_days)
            .await
            .unwrap()
            .0
            .expose()
            .to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Sends a request with an optional bearer token and JSON body; returns status and JSON.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = self.client.request(method, self.url(path));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let v = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("non-JSON body for {path} ({status}): {e}: {text}"))
        };
        (status, v)
    }

    /// Publishes `manifest` signed with `key`; `bundle` bytes go base64 in the body.
    pub async fn publish(
        &self,
        token: &str,
        key: &SecretKey,
        manifest: &Manifest,
        bundle: Option<&[u8]>,
    ) -> (u16, Value) {
        let env = sign_manifest(manifest, key);
        self.publish_envelope(
            token,
            &manifest.name.to_string(),
            &manifest.version.to_string(),
            &env,
            bundle,
        )
        .await
    }

    pub async fn publish_envelope(
        &self,
        token: &str,
        name: &str,
        version: &str,
        env: &Envelope,
        bundle: Option<&[u8]>,
    ) -> (u16, Value) {
        let mut body =
            json!({ "envelope": serde_json::from_str::<Value>(&env.to_json()).unwrap() });
        if let Some(b) = bundle {
            body["bundle"] = base64::engine::general_purpose::STANDARD.encode(b).into();
        }
        self.call(
            reqwest::Method::PUT,
            &format!("/api/v1/agents/{name}/versions/{version}"),
            // An empty token means: send no Authorization header.
            (!token.is_empty()).then_some(token),
            Some(body),
        )
        .await
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.server.take() {
            h.await.unwrap();
        }
    }
}

/// A valid `remote` manifest for `name` at `version`.
pub fn remote_manifest(name: &str, version: &str) -> Manifest {
    let v = json!({
        "schemaVersion": 1,
        "name": name,
        "version": version,
        "id": "@code",
        "displayName": "Code Assistant",
        "tagline": "Send me anything that needs code!",
        "description": "Writes scripts.",
        "examples": ["Write a script"],
        "capabilities": [],
        "source": { "type": "remote", "endpoint": "https://code-agent.example.com/ofc" }
    });
    Manifest::from_value(&v).unwrap()
}

/// A valid `bundle` manifest for these bytes.
pub fn bundle_manifest(name: &str, version: &str, bytes: &[u8]) -> Manifest {
    let v = json!({
        "schemaVersion": 1,
        "name": name,
        "version": version,
        "id": "@data",
        "displayName": "Data Analyst",
        "tagline": "Send me CSVs",
        "description": "Answers questions about data.",
        "source": {
            "type": "bundle",
            "digest": Digest::of(bytes).to_string(),
            "size": bytes.len(),
            "mediaType": "application/vnd.ofc.agent.bundle.v1.tar+gzip",
            "entrypoint": "agent.yaml"
        }
    });
    Manifest::from_value(&v).unwrap()
}

// ---- Shorthands for the HTTP suites: requests that recur, and assertions on their answers ----

impl TestApp {
    /// `GET path` without a token; status and JSON.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None, None).await
    }

    /// Publishes `manifest` (no bundle bytes) with `user`'s token, signed with `user`'s key.
    pub async fn publish_as(&self, user: &TestUser, manifest: &Manifest) -> (u16, Value) {
        self.publish(&user.token, &user.key, manifest, None).await
    }

    /// `PUT /api/v1/agents/{agent}/versions/{version}/yank` with `token` and `body`.
    pub async fn yank(&self, token: &str, agent: &str, version: &str, body: Value) -> (u16, Value) {
        let path = format!("/api/v1/agents/{agent}/versions/{version}/yank");
        self.call(reqwest::Method::PUT, &path, Some(token), Some(body))
            .await
    }

    /// `PUT /api/v1/agents/{agent}/versions/{version}/deprecation` with `token` and `message`.
    pub async fn deprecate(
        &self,
        token: &str,
        agent: &str,
        version: &str,
        message: &str,
    ) -> (u16, Value) {
        let path = format!("/api/v1/agents/{agent}/versions/{version}/deprecation");
        let body = json!({ "message": message });
        self.call(reqwest::Method::PUT, &path, Some(token), Some(body))
            .await
    }

    /// A token of `user` for every namespace (`*`) with every scope of [`user_scopes`] but
    /// `missing`.
    pub async fn token_without(&self, user: &str, missing: Scope) -> String {
        let scopes: Vec<Scope> = user_scopes()
            .into_iter()
            .filter(|s| *s != missing)
            .collect();
        self.token(user, &scopes, &["*"], None).await
    }
}

/// Every scope but `admin`.
pub fn user_scopes() -> Vec<Scope> {
    Scope::ALL
        .into_iter()
        .filter(|s| *s != Scope::Admin)
        .collect()
}

/// The `code` of an error body; "" when it has none.
pub fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

/// Asserts that an answer (status, body) has `status`; returns the body. The failure message
/// shows the body.
#[track_caller]
pub fn assert_status((got, body): (u16, Value), status: u16) -> Value {
    assert_eq!(got, status, "{body}");
    body
}

/// Asserts that an answer (status, body) is the refusal `status` with `code`; returns the body.
/// The failure message shows both statuses and codes, and the body.
#[track_caller]
pub fn assert_refused((got, body): (u16, Value), status: u16, code_: &str) -> Value {
    assert_eq!((got, code(&body)), (status, code_), "{body}");
    body
}

/// The string `field` of every entry of the JSON array `list`, in order.
pub fn strings<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e[field].as_str().unwrap())
        .collect()
}

/// A fresh PostgreSQL database when `backend` is PostgreSQL.
pub async fn database_for(backend: Backend) -> Option<PgDatabase> {
    match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(PgDatabase::create().await),
    }
}

/// The string fields `a` and `b` of every entry of the JSON array `list`, in order; a field that
/// is not a string is "".
pub fn string_pairs(list: &Value, a: &str, b: &str) -> Vec<(String, String)> {
    let s = |e: &Value, f: &str| e[f].as_str().unwrap_or("").to_string();
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| (s(e, a), s(e, b)))
        .collect()
}

/// One request of a table of refusals, and the answer it must get: `status` with `code`, and a
/// `message`.
pub struct Case {
    pub what: &'static str,
    pub method: reqwest::Method,
    pub path: String,
    /// The token to send; `None`: the table's (see [`assert_cases`]).
    pub token: Option<String>,
    pub body: Option<Value>,
    pub status: u16,
    pub code: &'static str,
}

impl Case {
    /// A case sent with the table's token.
    pub fn new(
        what: &'static str,
        method: reqwest::Method,
        path: impl Into<String>,
        body: Option<Value>,
        status: u16,
        code: &'static str,
    ) -> Case {
        Case {
            what,
            method,
            path: path.into(),
            token: None,
            body,
            status,
            code,
        }
    }
}

/// Sends every case, with its own token or else `token`, and asserts that each got its status
/// and `code` (and, for an error, a non-empty `message`); the failure lists every case that did
/// not, with the request and the answer.
pub async fn assert_cases(app: &TestApp, token: Option<&str>, cases: &[Case]) {
    let mut failures = Vec::new();
    for c in cases {
        let (what, method, path, status) = (c.what, &c.method, &c.path, c.status);
        let t = c.token.as_deref().or(token);
        let (s, e) = app.call(method.clone(), path, t, c.body.clone()).await;
        if (s, code(&e)) != (status, c.code) {
            failures.push(format!(
                "{what}: {method} {path}: expected {status} {:?}, got {s} {e}",
                c.code
            ));
        } else if status >= 400 && e["message"].as_str().is_none_or(|m| m.is_empty()) {
            failures.push(format!("{what}: no message: {e}"));
        }
    }
    assert_no_failures(&failures, cases.len());
}

/// Asserts that none of `total` cases failed; the message lists the `failures`.
#[track_caller]
pub fn assert_no_failures(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} cases wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
