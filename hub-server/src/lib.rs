//! The self-hosted ofc hub: accounts, namespaces, keys, signed publishing and the read API, on
//! SQLite or PostgreSQL. `ofc-hub` (`main.rs`) is a thin wrapper around [`serve`].

pub mod admin;
pub mod api;
pub mod auth;
pub mod blob;
pub mod config;
pub mod db;
pub mod error;
pub mod metrics;
pub mod oci;
pub mod openapi;
pub mod search;
pub mod store;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::TcpListener;

pub use api::AppState;
pub use config::Config;

/// Connects to the configured database (creating the data dir for SQLite) and migrates it.
pub async fn open_store(config: &Config) -> anyhow::Result<store::Store> {
    let url = config.effective_database_url();
    if config.database_url.is_none() {
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("cannot create data dir {}", config.data_dir.display()))?;
    }
    let db = db::Db::connect(&url, config.db_max_connections)
        .await
        .with_context(|| format!("cannot open database {}", db::redact_url(&url)))?;
    db.migrate().await.context("cannot migrate the database")?;
    Ok(store::Store::new(db))
}

/// Builds the application state: database (migrated) and blob store.
pub async fn build_state(config: Config) -> anyhow::Result<AppState> {
    let store = open_store(&config).await?;
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data dir {}", config.data_dir.display()))?;
    let blobs: Arc<dyn blob::BlobStore> = match &config.upstream_registry {
        Some(url) => Arc::new(
            oci::upstream::UpstreamBlobStore::open(
                &config.data_dir,
                url,
                config.upstream_username.as_deref(),
                config.upstream_password.as_deref(),
            )
            .context("cannot open the upstream blob store")?,
        ),
        None => Arc::new(
            blob::FsBlobStore::open(&config.data_dir).context("cannot open the blob store")?,
        ),
    };
    let search = search::Search::start(store.clone(), &config.data_dir)?;
    let mut state = AppState::new(store, blobs, config);
    state.search = Some(Arc::new(search));
    Ok(state)
}

/// Serves the hub on `listener` until `shutdown` resolves, then finishes in-flight requests
/// and closes the database.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let store = state.store.clone();
    let search = state.search.clone();
    let app = oci::router(state.clone()).merge(api::router(state));
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .context("server error")?;
    if let Some(search) = &search {
        search.shutdown().await?;
    }
    store.db().close().await;
    Ok(())
}
