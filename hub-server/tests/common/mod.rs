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
            token: c.token.0,
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
            .0
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
