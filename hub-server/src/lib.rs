//! The self-hosted ofc hub: accounts, namespaces, keys, signed publishing and the read API, on
//! SQLite or PostgreSQL. `ofc-hub` (`main.rs`) is a thin wrapper around [`serve`].

pub mod admin;
pub mod api;
pub mod auth;
pub mod blob;
pub mod config;
pub mod cosigner;
pub mod db;
pub mod error;
pub mod import;
pub mod metrics;
pub mod oci;
pub mod openapi;
pub mod publish;
pub mod search;
pub mod state;
pub mod store;
pub mod tlog;
pub mod web;
pub mod witness;

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::TcpListener;

pub use config::Config;
pub use state::AppState;

/// Makes every file and directory this process creates private to its user (umask 077): the
/// hub's data holds password hashes, token hashes and unpublished uploads.
pub fn private_files() {
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Creates the data directory, or narrows an existing one, to 0700.
pub fn private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data dir {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir)
            .with_context(|| format!("cannot read data dir {}", dir.display()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).with_context(
                || format!("cannot make data dir {} private (0700)", dir.display()),
            )?;
            tracing::warn!(dir = %dir.display(), "the data dir was readable by others; it is now 0700");
        }
    }
    Ok(())
}

/// Connects to the configured database (creating the data dir for SQLite) and migrates it.
pub async fn open_store(config: &Config) -> anyhow::Result<store::Store> {
    let url = config.effective_database_url();
    if config.database_url.is_none() {
        private_dir(&config.data_dir)?;
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
    private_dir(&config.data_dir)?;
    let blobs: Arc<dyn blob::BlobStore> = match &config.upstream_registry {
        Some(url) => Arc::new(
            oci::upstream::UpstreamBlobStore::open(
                &config.data_dir,
                url,
                config.upstream_username.as_deref(),
                config
                    .upstream_password
                    .as_ref()
                    .map(secrecy::ExposeSecret::expose_secret),
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
            std::time::Duration::from_millis(config.search_poll_ms.max(10)),
            search::TuningSource {
                synonyms_file: config.search_synonyms_file.clone(),
                fewer_words_below: config.search_fewer_words_below,
            },
        )?)),
        Role::Command => None,
    };
    let log_key = tlog::open_log_key(&config)?;
    let witnesses = cosigner::targets(&config.log_witnesses)?;
    let mut state = AppState::new(store, blobs, config, log_key);
    state.search = search;
    if role == Role::Serve {
        // Keys and versions committed before the transparency log existed.
        let n =
            state.store.log_backfill().await.map_err(|e| {
                anyhow::anyhow!("cannot log the keys and versions of older hubs: {e}")
            })?;
        if n > 0 {
            tracing::info!(
                entries = n,
                "logged the keys and versions committed before the log"
            );
        }
        // Versions published before manifests were recorded in the publish's transaction.
        let n = publish::backfill_manifests(&state)
            .await
            .map_err(|e| anyhow::anyhow!("cannot record the OCI manifests of old versions: {e}"))?;
        if n > 0 {
            tracing::info!(versions = n, "recorded the OCI manifests of older versions");
        }
        if !witnesses.is_empty() {
            cosigner::start(state.clone(), witnesses);
        }
    }
    Ok(state)
}

/// The whole hub: the JSON API ([`api::router`]), the OCI API ([`oci::router`]) and the web
/// pages ([`web::router`]), every
/// request counted in `/metrics` by route group (api, oci, registry, ops).
pub fn app(state: AppState) -> axum::Router {
    oci::router(state.clone())
        .merge(web::router(state.clone()))
        .merge(api::router(state.clone()))
        .merge(tlog::router(state.clone()))
        .layer(axum::middleware::from_fn_with_state(
            state,
            api::count_requests,
        ))
        // Every answer (JSON, errors, 404s, blobs and tiles, not only the pages) is what its
        // Content-Type says: no browser may sniff a JSON error or a blob into HTML.
        .layer(axum::middleware::map_response(
            |mut r: axum::response::Response| async move {
                r.headers_mut()
                    .entry(axum::http::header::X_CONTENT_TYPE_OPTIONS)
                    .or_insert(axum::http::HeaderValue::from_static("nosniff"));
                r
            },
        ))
}

/// The hub's log filter unless `OFC_HUB_LOG` sets one: ofc's own crates at `info`, every
/// library (tantivy's commits and merges, sqlx's statements, hyper) at `warn`. Ask for more
/// with e.g. `OFC_HUB_LOG=info,tantivy=info`.
pub const DEFAULT_LOG: &str =
    "warn,ofc_hub=info,hub_server=info,hub_search=info,index_schema=info,ofc_net=info";

/// Serves the hub on `listener` until `shutdown` resolves, then finishes in-flight requests
/// and closes the database.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let store = state.store.clone();
    let search = state.search.clone();
    let limits = ofc_net::ConnLimits::new(
        state.config.max_connections,
        std::time::Duration::from_secs(state.config.header_timeout_secs.max(1)),
        std::time::Duration::from_secs(state.config.body_timeout_secs.max(1)),
    )
    .with_write_timeout(std::time::Duration::from_secs(
        state.config.write_timeout_secs.max(1),
    ));
    let app = app(state);
    ofc_net::serve(listener, app, limits, shutdown).await;
    if let Some(search) = &search {
        search.shutdown().await?;
    }
    store.db().close().await;
    Ok(())
}

#[cfg(all(test, unix))]
mod file_mode_tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn an_open_data_dir_is_narrowed_and_a_new_one_is_private() {
        let root = tempfile::tempdir().unwrap();
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        super::private_dir(&open).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&open), 0o700);
        let fresh = root.path().join("a/b");
        super::private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
