//! Upkeep beside a serving hub: `ofc-hub gc`, `ofc-hub reindex` and `ofc-hub search-check`.

use std::time::Duration;

use hub_core::gc::collect;
use hub_core::search::{check, reindex};
use hub_core::start::{Role, open_store};
use serde_json::json;

use super::output::out;
use super::settings::{Global, config};

/// `ofc-hub gc`: removes unreferenced blobs older than `grace_secs` and expired uploads.
pub(crate) async fn gc(global: &Global, grace_secs: u64, json: bool) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    // No search follower: it would take the index lock a serving hub holds.
    let hub = hub_server::build_state_for(cfg, Role::Command).await?.core;
    let r = collect(
        &hub,
        Duration::from_secs(grace_secs),
        Duration::from_secs(hub.config.upload_ttl_secs),
    )
    .await
    .map_err(|e| anyhow::anyhow!("gc failed: {}", e.message));
    hub.store.db().close().await;
    let r = r?;
    if json {
        out(serde_json::to_string(&r)?);
    } else {
        out(format!(
            "{} blobs removed ({} bytes), {} upload sessions expired, {} blobs examined",
            r.blobs_deleted, r.bytes_freed, r.uploads_expired, r.blobs_seen
        ));
    }
    Ok(())
}

/// `ofc-hub reindex`: rebuilds the search index from the database.
pub(crate) async fn rebuild_index(global: &Global) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    let store = open_store(&cfg).await?;
    let r = reindex(&store, &cfg.data_dir).await;
    store.db().close().await;
    let (seq, n) = r?;
    out(json!({"seq": seq, "documents": n}));
    Ok(())
}

/// `ofc-hub search-check` (and `reindex --check`): compares the index with the database.
pub(crate) async fn check_index(global: &Global) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    let store = open_store(&cfg).await?;
    let r = check(&store, &cfg.data_dir).await;
    store.db().close().await;
    let r = r?;
    out(serde_json::to_string(&r)?);
    anyhow::ensure!(
        r.is_consistent(),
        "the search index differs from the database: {} missing, {} stale, {} extra",
        r.check.missing.len(),
        r.check.stale.len(),
        r.check.extra.len()
    );
    Ok(())
}
