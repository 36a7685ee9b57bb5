//! The self-hosted ofc hub over HTTP: thin adapters over [`hub_core`] — the JSON API
//! ([`api`]), the OCI distribution API ([`oci`]), the web pages ([`web`]), the transparency
//! log's routes ([`tlog`]), the cosigner that asks witnesses ([`cosigner`]) and the witness
//! server ([`witness`]), and metrics. `ofc-hub` (`main.rs`, `cli/`) is a
//! thin wrapper around [`serve`] and the core's operator verbs.

pub mod api;
pub mod client;
pub mod cosigner;
pub mod error;
pub mod metrics;
pub mod oci;
pub mod oidc;
pub mod outbound;
pub mod proof;
pub mod state;
pub mod tlog;
pub mod web;
pub mod witness;

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use hub_core::blob::BlobStore;
use hub_core::start::{Role, local_blobs};
use tokio::net::TcpListener;

use crate::oci::upstream::UpstreamBlobStore;

pub use hub_core::Config;
pub use state::AppState;

/// The blob store the settings name: an upstream OCI registry (cached in `blob_dir`, else the
/// data dir), else `blob_dir` (else the data dir) itself.
pub fn blob_store(config: &Config) -> anyhow::Result<Arc<dyn BlobStore>> {
    match &config.upstream_registry {
        Some(url) => Ok(Arc::new(
            UpstreamBlobStore::open(
                config.blob_root(),
                url,
                config.upstream_username.as_deref(),
                config
                    .upstream_password
                    .as_ref()
                    .map(secrecy::ExposeSecret::expose_secret),
            )
            .context("cannot open the upstream blob store")?,
        )),
        None => local_blobs(config),
    }
}

/// Builds the state of the serving hub: database (migrated), blob store, the search index with
/// its follower, and the cosigner when witnesses are configured. The same as
/// [`build_state_for`] with [`Role::Serve`].
pub async fn build_state(config: Config) -> anyhow::Result<AppState> {
    build_state_for(config, Role::Serve).await
}

/// Builds the application state for `role` (see [`hub_core::start::open`]).
pub async fn build_state_for(config: Config, role: Role) -> anyhow::Result<AppState> {
    hub_core::outbound::check_settings(&config).map_err(anyhow::Error::msg)?;
    let witnesses = cosigner::targets(&config.log_witnesses)?;
    // A verify_ca_file that cannot be read stops the start, not the first proof.
    let prover = proof::Prover::from_config(&config)?;
    let core = hub_core::start::open(config, role, blob_store).await?;
    if role == Role::Serve {
        proof::start_rechecks(core.clone(), Arc::new(prover));
        // The upstream registry's tags of versions (nothing without one).
        hub_core::mirror_tags::start_repairs(core.clone());
    }
    if role == Role::Serve && !witnesses.is_empty() {
        cosigner::start(core.clone(), witnesses);
    }
    AppState::new(core)
}

/// The whole hub: the JSON API ([`api::router`]), the OCI API ([`oci::router`]) and the web
/// pages ([`web::router`]), every request counted in `/metrics` by route group (api, oci,
/// registry, ops).
pub fn app(state: AppState) -> axum::Router {
    oci::router(state.clone())
        .merge(web::router(state.clone()))
        .merge(api::router(state.clone()))
        .merge(tlog::router(state.clone()))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
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
        // Outermost: every layer and handler below sees the client, not the load balancer.
        .layer(axum::middleware::from_fn_with_state(
            state,
            client::forwarded_for,
        ))
}

/// The hub's log filter unless `OFC_HUB_LOG` sets one: ofc's own crates at `info`, every
/// library (tantivy's commits and merges, sqlx's statements, hyper) at `warn`. Ask for more
/// with e.g. `OFC_HUB_LOG=info,tantivy=info`.
pub const DEFAULT_LOG: &str = "warn,ofc_hub=info,hub_server=info,hub_core=info,hub_search=info,\
    index_schema=info,ofc_net=info";

/// The connection limits of the settings (the hub's and its witness's).
pub fn conn_limits(config: &Config) -> ofc_net::ConnLimits {
    ofc_net::ConnLimits::new(
        config.max_connections,
        std::time::Duration::from_secs(config.header_timeout_secs.max(1)),
        std::time::Duration::from_secs(config.body_timeout_secs.max(1)),
    )
    .with_write_timeout(std::time::Duration::from_secs(
        config.write_timeout_secs.max(1),
    ))
}

/// Serves the hub on `listener` until `shutdown` resolves, then finishes in-flight requests
/// and closes the database.
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let store = state.core.store.clone();
    let search = state.core.search.clone();
    let limits = conn_limits(&state.core.config);
    let app = app(state);
    ofc_net::serve(listener, app, limits, shutdown).await;
    if let Some(search) = &search {
        search.shutdown().await?;
    }
    store.db().close().await;
    Ok(())
}
