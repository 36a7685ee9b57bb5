//! Opening a hub: the database (migrated), the blob store, the log key, and for the serving
//! hub its search follower and the start-up backfills.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::blob::{BlobStore, FsBlobStore};
use crate::config::Config;
use crate::hub::Hub;
use crate::log_key::open_log_key;
use crate::private::private_dir;
use crate::publish::backfill_manifests;
use crate::search::{Search, TuningSource};
use crate::store::Store;
use crate::store::db::{Db, redact_url};

/// Connects to the configured database (creating the data dir for SQLite) and migrates it.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let url = config.effective_database_url();
    if config.database_url.is_none() {
        private_dir(&config.data_dir)?;
    }
    let db = Db::connect(&url, config.db_max_connections)
        .await
        .with_context(|| format!("cannot open database {}", redact_url(&url)))?;
    db.migrate().await.context("cannot migrate the database")?;
    Ok(Store::new(db))
}

/// The local blob store under `blob_dir` (else the data dir).
pub fn local_blobs(config: &Config) -> anyhow::Result<Arc<dyn BlobStore>> {
    let dir = config.blob_root();
    Ok(Arc::new(FsBlobStore::open(dir).with_context(|| {
        format!("cannot open the blob store in {}", dir.display())
    })?))
}

/// What a hub is opened for: serving, or a one-shot command beside a serving hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `ofc-hub serve`: the hub also runs the search follower, which holds the search index's
    /// one writer lock for the life of the process.
    Serve,
    /// A one-shot command (`ofc-hub gc`) that must work while a hub serves the same data dir and
    /// database: no search follower and no index lock (`search` is `None`).
    Command,
}

/// Opens the hub for `role`: database (migrated), the blob store `blobs` makes (the local one,
/// [`local_blobs`], or another the caller has) — refused unless it is the database's
/// ([`crate::hub_id::check`]) — and the log key; for [`Role::Serve`] also search,
/// and the start-up backfills (log entries and OCI manifests of versions older hubs committed
/// without them).
pub async fn open(
    config: Config,
    role: Role,
    blobs: impl FnOnce(&Config) -> anyhow::Result<Arc<dyn BlobStore>>,
) -> anyhow::Result<Hub> {
    let store = open_store(&config).await?;
    private_dir(&config.data_dir)?;
    let blobs = blobs(&config)?;
    // The blob store must be this database's (gc deletes what the database does not name).
    let database = redact_url(&config.effective_database_url());
    if let Err(e) = crate::hub_id::check(&store, &blobs, &database).await {
        if !crate::hub_id::registry_failed(&e) {
            return Err(e);
        }
        // An upstream registry that fails or refuses (down, read-only) fails every push too; it
        // does not stop the start, as it did not before. gc checks again and refuses.
        tracing::warn!(
            error = format!("{e:#}"),
            "cannot check the hub id in the upstream registry; starting without the check"
        );
    }
    let search = match role {
        Role::Serve => Some(Arc::new(Search::start(
            store.clone(),
            &config.data_dir,
            Duration::from_millis(config.search_poll_ms.max(10)),
            TuningSource {
                synonyms_file: config.search_synonyms_file.clone(),
                fewer_words_below: config.search_fewer_words_below,
                model_dir: config.search_model_dir.clone(),
            },
        )?)),
        Role::Command => None,
    };
    let log_key = open_log_key(&config, &store).await?;
    let mut hub = Hub::new(store, blobs, config, log_key);
    hub.search = search;
    if role == Role::Serve {
        // Keys and versions committed before the transparency log existed.
        let n =
            hub.store.log_backfill().await.map_err(|e| {
                anyhow::anyhow!("cannot log the keys and versions of older hubs: {e}")
            })?;
        if n > 0 {
            tracing::info!(
                entries = n,
                "logged the keys and versions committed before the log"
            );
        }
        // Versions published before manifests were recorded in the publish's transaction.
        let n = backfill_manifests(&hub)
            .await
            .map_err(|e| anyhow::anyhow!("cannot record the OCI manifests of old versions: {e}"))?;
        if n > 0 {
            tracing::info!(versions = n, "recorded the OCI manifests of older versions");
        }
    }
    Ok(hub)
}
