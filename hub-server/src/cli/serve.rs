//! `ofc-hub serve` and `ofc-hub migrate`.

use std::net::SocketAddr;

use anyhow::Context as _;
use hub_core::start::open_store;

use super::settings::{Global, config};

/// `ofc-hub serve`: runs the hub until SIGINT or SIGTERM.
pub(crate) async fn serve(global: &Global, listen: Option<SocketAddr>) -> anyhow::Result<()> {
    let cfg = config(global, listen)?;
    tracing::info!(config = ?cfg, "starting");
    let listen = cfg.listen;
    let state = hub_server::build_state(cfg).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, backend = state.core.store.db().backend(), "listening");
    eprintln!("ofc-hub listening on http://{addr}");
    hub_server::serve(state, listener, shutdown_signal()).await
}

/// `ofc-hub migrate`: applies the database migrations.
pub(crate) async fn migrate(global: &Global) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    let store = open_store(&cfg).await?;
    store.db().close().await;
    eprintln!("migrations applied");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
