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
use axum::serve::ListenerExt as _;
use tokio::net::{TcpListener, TcpStream};

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

/// What a state is built for: the serving hub, or a one-shot command beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `ofc-hub serve`: the state also runs the search follower, which holds the search index's
    /// one writer lock for the life of the process.
    Serve,
    /// A one-shot command (`ofc-hub gc`) that must work while a hub serves the same data dir and
    /// database: no search follower and no index lock (`state.search` is `None`).
    Command,
}

/// Builds the state of the serving hub: database (migrated), blob store, and the search index
/// with its follower. The same as [`build_state_for`] with [`Role::Serve`].
pub async fn build_state(config: Config) -> anyhow::Result<AppState> {
    build_state_for(config, Role::Serve).await
}

/// Builds the application state for `role`: database (migrated) and blob store, plus search
/// for [`Role::Serve`].
pub async fn build_state_for(config: Config, role: Role) -> anyhow::Result<AppState> {
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
    let search = match role {
        Role::Serve => Some(Arc::new(search::Search::start(
            store.clone(),
            &config.data_dir,
        )?)),
        Role::Command => None,
    };
    let mut state = AppState::new(store, blobs, config);
    state.search = search;
    Ok(state)
}

/// `listener` with TCP_NODELAY set on every accepted connection. Small responses (a blob GET, a
/// JSON answer) are written after their headers: without it, Nagle's algorithm and delayed ACKs
/// stall them for ~40 ms. The runtime's servers do the same.
fn nodelay(listener: TcpListener) -> axum::serve::TapIo<TcpListener, fn(&mut TcpStream)> {
    fn set(tcp: &mut TcpStream) {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
    }
    listener.tap_io(set)
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
        nodelay(listener),
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

#[cfg(test)]
mod tests {
    use axum::serve::Listener as _;

    #[tokio::test]
    async fn accepted_connections_have_tcp_nodelay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = super::nodelay(listener);
        let client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await;
        assert!(server.nodelay().unwrap(), "TCP_NODELAY is not set");
        drop(client);
    }
}
