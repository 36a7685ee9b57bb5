//! A fresh PostgreSQL database per test, on the server `scripts/peers/postgres` starts.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::Backend;

pub(crate) fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The URL of the test PostgreSQL server: `OFC_TEST_POSTGRES_URL` (which `scripts/test`
/// exports after starting `scripts/peers/postgres`), else whatever `scripts/peers/postgres`
/// starts when run here. Panics (never skips) when there is none, naming the script.
pub fn postgres_base_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(u) = std::env::var("OFC_TEST_POSTGRES_URL") {
            return u;
        }
        let script = workspace().join("scripts/peers/postgres");
        let out = Command::new(&script).output().unwrap_or_else(|e| {
            panic!(
                "OFC_TEST_POSTGRES_URL is not set and {} cannot run: {e}; start PostgreSQL with \
                 `export OFC_TEST_POSTGRES_URL=\"$(scripts/peers/postgres)\"`",
                script.display()
            )
        });
        assert!(
            out.status.success(),
            "OFC_TEST_POSTGRES_URL is not set and PostgreSQL is unavailable ({} failed): {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    })
    .clone()
}

/// A fresh, uniquely named database for one test; dropped (`WITH (FORCE)`) with the value.
#[derive(Debug)]
pub struct PgDatabase {
    /// The database's URL.
    pub url: String,
    name: String,
    admin_url: String,
}

impl PgDatabase {
    /// Creates the database.
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

    /// [`PgDatabase::create`] from synchronous code (also inside a runtime: it runs on a thread
    /// of its own).
    pub fn create_blocking() -> PgDatabase {
        crate::request::on_own_runtime(PgDatabase::create())
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin_url.clone(), self.name.clone());
        crate::request::on_own_runtime(async move {
            use sqlx::Connection as _;
            if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut c)
                    .await;
            }
        });
    }
}

/// A fresh PostgreSQL database when `backend` is PostgreSQL.
pub async fn database_for(backend: Backend) -> Option<PgDatabase> {
    match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(PgDatabase::create().await),
    }
}

/// A PostgreSQL server of its own — a cluster in its own directory on its own port, made by
/// `scripts/peers/postgres` — for a test that stops and starts the server without taking the
/// shared one from the other tests. Stopped and removed on drop.
#[derive(Debug)]
pub struct PrivatePostgres {
    /// `postgres://ofc:ofc@127.0.0.1:PORT/ofc`.
    pub url: String,
    dir: PathBuf,
    port: u16,
}

impl PrivatePostgres {
    /// Creates and starts the cluster (initdb takes a few seconds). Panics, with the script's
    /// stderr, when it cannot.
    pub fn start() -> PrivatePostgres {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let base = std::env::var_os("OFC_TEST_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/tmp/ofc-peers"));
        let dir = base.join(format!("private-pg-{}", uuid::Uuid::new_v4().simple()));
        let mut pg = PrivatePostgres {
            url: String::new(),
            dir,
            port,
        };
        pg.url = pg.script(None);
        pg
    }

    fn script(&self, arg: Option<&str>) -> String {
        let script = workspace().join("scripts/peers/postgres");
        let mut c = Command::new(&script);
        c.env("OFC_TEST_PEERS_DIR", &self.dir)
            .env("OFC_TEST_PG_PORT", self.port.to_string());
        if let Some(a) = arg {
            c.arg(a);
        }
        let out = c
            .output()
            .unwrap_or_else(|e| panic!("{} cannot run: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} {arg:?} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Stops the server (fast shutdown: its clients are disconnected).
    pub fn stop(&self) {
        self.script(Some("--stop"));
    }

    /// Starts the stopped server again, on the same data and port.
    pub fn start_again(&self) {
        let url = self.script(None);
        assert_eq!(url, self.url);
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let script = workspace().join("scripts/peers/postgres");
        let _ = Command::new(&script)
            .arg("--stop")
            .env("OFC_TEST_PEERS_DIR", &self.dir)
            .env("OFC_TEST_PG_PORT", self.port.to_string())
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
