//! [`TestHub`]: the hub-server library serving on an ephemeral 127.0.0.1 port inside the test's
//! runtime, on SQLite or a fresh PostgreSQL database, with publisher `alice` ready.

use std::net::SocketAddr;
use std::path::PathBuf;

use base64::Engine as _;
use hub_core::auth::Scope;
use hub_core::store::{Actor, Store};
use hub_core::{Config, admin};
use hub_server::AppState;
use index_schema::envelope::{Envelope, SecretKey, sign_manifest};
use index_schema::manifest::Manifest;
use serde_json::{Value, json};

use crate::fixtures::{Publisher, key_for};
use crate::postgres::{PgDatabase, database_for};
use crate::process::{HubProcess, ProcessOptions, hub_command};
use crate::request::Request;
use crate::{Backend, assert::user_scopes};

/// A hub served in process (see [`TestHub::in_process`]); stopped when dropped or with
/// [`TestHub::stop`].
#[derive(Debug)]
pub struct TestHub {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    /// A client for requests to it.
    pub client: reqwest::Client,
    /// The hub's state (store, blobs, search, config).
    pub state: AppState,
    pub backend: Backend,
    /// Publisher `alice`, made at the start: namespace `alice`, a registered key, a full token.
    pub user: Publisher,
    /// The data directory (SQLite file, blobs, search index).
    pub data_dir: PathBuf,
    served: Option<Served>,
    _dir: tempfile::TempDir,
    _pg: Option<PgDatabase>,
}

/// `state` served on an ephemeral 127.0.0.1 port in the current runtime until
/// [`Served::stop`] or drop: the server under [`TestHub`], and for the benchmarks and the soak
/// (`hub-server/examples/`) that build their own state.
#[derive(Debug)]
pub struct Served {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Served {
    /// Binds 127.0.0.1:0 and serves `state` on a task.
    pub async fn start(state: AppState) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            hub_server::serve(state, listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        Served {
            url: format!("http://{addr}"),
            addr,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    /// Shuts the server down gracefully and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.server.take() {
            h.await.unwrap();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// The publisher fixture on a store: user `name` (password `password`) with its namespace,
/// `key` registered for it, and its first token.
pub async fn add_publisher(
    store: &Store,
    name: &str,
    password: Option<&str>,
    is_admin: bool,
    key: SecretKey,
) -> Publisher {
    let c = admin::create_user(store, name, password, is_admin, false)
        .await
        .unwrap();
    let ns = store.namespace(name).await.unwrap().unwrap();
    store
        .add_key(
            &Actor::operator(),
            &ns,
            &key.key_id().to_string(),
            &key.public_key().to_string(),
            c.user.id,
        )
        .await
        .unwrap();
    Publisher {
        name: c.user.name,
        token: c.token.expose().to_string(),
        key,
    }
}

/// The configuration of a test hub: a data dir of its own, the database of `pg` (else SQLite),
/// an ephemeral loopback port, no practical brute-force limit (the tests' clients are many and
/// fast), 8 database connections and 1 MiB bundles.
pub fn test_config(dir: &tempfile::TempDir, pg: Option<&PgDatabase>) -> Config {
    Config {
        data_dir: dir.path().to_path_buf(),
        database_url: pg.map(|p| p.url.clone()),
        listen: "127.0.0.1:0".parse().unwrap(),
        auth_failure_limit: 10_000,
        db_max_connections: 8,
        max_bundle_bytes: 1024 * 1024,
        ..Config::default()
    }
}

/// A store on a fresh database (no server), for suites that test the store itself.
pub async fn fresh_store(backend: Backend) -> (Store, tempfile::TempDir, Option<PgDatabase>) {
    let dir = tempfile::tempdir().unwrap();
    let pg = database_for(backend).await;
    let store = hub_core::start::open_store(&test_config(&dir, pg.as_ref()))
        .await
        .unwrap();
    (store, dir, pg)
}

impl TestHub {
    /// A hub served in process on `backend` with publisher `alice` ([`TestHub::user`]).
    pub async fn in_process(backend: Backend) -> TestHub {
        Self::in_process_with(backend, |_| {}).await
    }

    /// Like [`TestHub::in_process`], searching with the real embedding model
    /// ([`crate::search_model_dir`]): hybrid search by default.
    pub async fn with_search_model(backend: Backend) -> TestHub {
        let model = crate::search_model_dir();
        Self::in_process_with(backend, |c| c.search_model_dir = Some(model)).await
    }

    /// Like [`TestHub::in_process`], with `tweak` applied to [`test_config`] first.
    pub async fn in_process_with(backend: Backend, tweak: impl FnOnce(&mut Config)) -> TestHub {
        let dir = tempfile::tempdir().unwrap();
        let pg = database_for(backend).await;
        let mut cfg = test_config(&dir, pg.as_ref());
        tweak(&mut cfg);
        let data_dir = cfg.data_dir.clone();
        let state = hub_server::build_state(cfg).await.unwrap();
        let served = Served::start(state.clone()).await;
        let mut app = TestHub {
            url: served.url.clone(),
            client: reqwest::Client::new(),
            state,
            backend,
            user: Publisher {
                name: String::new(),
                token: String::new(),
                key: SecretKey::from_seed(&[0; 32]),
            },
            data_dir,
            served: Some(served),
            _dir: dir,
            _pg: pg,
        };
        app.user = app.new_user("alice", false).await;
        app
    }

    /// `ofc-hub` as a child process: see [`HubProcess`].
    pub fn process(opts: ProcessOptions) -> HubProcess {
        HubProcess::start(opts)
    }

    pub fn store(&self) -> &Store {
        &self.state.core.store
    }

    /// The database's URL, on PostgreSQL.
    pub fn database_url(&self) -> Option<&str> {
        self._pg.as_ref().map(|p| p.url.as_str())
    }

    /// `ofc-hub --data DATA [--database-url URL]` on this hub's data, to add a subcommand to
    /// (the one-shot commands run beside a serving hub).
    pub fn command(&self) -> std::process::Command {
        hub_command(&crate::bin("ofc-hub"), &self.data_dir, self.database_url())
    }

    /// Creates a user with a namespace of the same name; returns its first token. No key.
    pub async fn create_user(&self, name: &str) -> String {
        admin::create_user(self.store(), name, None, false, false)
            .await
            .unwrap()
            .token
            .expose()
            .to_string()
    }

    /// The publisher fixture: a user with a namespace, a registered key ([`key_for`] the name)
    /// and a full token.
    pub async fn new_user(&self, name: &str, is_admin: bool) -> Publisher {
        let key = key_for(name);
        add_publisher(self.store(), name, Some("correct horse"), is_admin, key).await
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

    /// A token of `user` for every namespace (`*`) with every scope of [`user_scopes`] but
    /// `missing`.
    pub async fn token_without(&self, user: &str, missing: Scope) -> String {
        let scopes: Vec<Scope> = user_scopes()
            .into_iter()
            .filter(|s| *s != missing)
            .collect();
        self.token(user, &scopes, &["*"], None).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// A request to `path` with this hub's client.
    pub fn request(&self, method: reqwest::Method, path: &str) -> Request {
        Request::new(Some(self.client.clone()), method, self.url(path))
    }

    /// Sends a request with an optional bearer token and JSON body; returns status and JSON.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.request(method, path)
            .maybe_token(token)
            .maybe_json(body)
            .send()
            .await
    }

    /// `GET path` without a token; status and JSON.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None, None).await
    }

    /// `GET path` without a token; the body as text, whatever the status (a page, `/metrics`).
    pub async fn get_text(&self, path: &str) -> String {
        self.page(path).await.1
    }

    /// `GET path` without a token; status and the body as text (a page).
    pub async fn page(&self, path: &str) -> (u16, String) {
        let r = self.client.get(self.url(path)).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
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

    /// Publishes a signed envelope; an empty `token` means: send no Authorization header.
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
            (!token.is_empty()).then_some(token),
            Some(body),
        )
        .await
    }

    /// Publishes `manifest` (no bundle bytes) with `user`'s token, signed with `user`'s key.
    pub async fn publish_as(&self, user: &Publisher, manifest: &Manifest) -> (u16, Value) {
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

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        if let Some(s) = self.served.take() {
            s.stop().await;
        }
    }
}
