//! A fresh PostgreSQL database per test, on the server `scripts/peers/postgres` starts.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::Backend;

fn workspace() -> PathBuf {
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
