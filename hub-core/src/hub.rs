//! [`Hub`]: what every core service works with.

use std::sync::Arc;
use std::time::Duration;

use index_schema::tlog::LogSigner;

use crate::auth::FailureLimiter;
use crate::blob::{BlobStore, Blobs};
use crate::config::Config;
use crate::counters::Counters;
use crate::limits::Limiter;
use crate::log_heads::Shared;
use crate::search::Search;
use crate::store::Store;

/// The hub's core: its store, blobs, settings, limiter, counters, search and log. Cheap to
/// clone (every part is shared).
#[derive(Debug, Clone)]
pub struct Hub {
    /// The repository.
    pub store: Store,
    /// Bundle blobs.
    pub blobs: Blobs,
    /// Settings.
    pub config: Arc<Config>,
    /// Authentication-failure limiter (its windows in the database, shared by replicas).
    pub limiter: Arc<Limiter>,
    /// What the core counts (publishes, refusals, failed authentications).
    pub counters: Arc<Counters>,
    /// The search index and its follower (`None`: search is not enabled).
    pub search: Option<Arc<Search>>,
    /// The transparency log's signing key (`DATA/log-key` or `log_key_file`): signs checkpoints.
    pub log: Arc<LogSigner>,
    /// The latest checkpoints the witnesses cosigned (empty without witnesses, or before their
    /// first answer).
    pub cosigned: Shared,
}

impl Hub {
    /// A hub over a store, a blob store and the log key, without search.
    pub fn new(store: Store, blobs: Arc<dyn BlobStore>, config: Config, log: LogSigner) -> Self {
        let limiter = FailureLimiter::new(
            config.auth_failure_limit,
            Duration::from_secs(config.auth_failure_window_secs),
        );
        let limiter = Limiter::new(limiter, store.clone());
        Hub {
            store,
            blobs: Blobs::new(blobs),
            config: Arc::new(config),
            limiter: Arc::new(limiter),
            counters: Arc::default(),
            search: None,
            log: Arc::new(log),
            cosigned: Shared::default(),
        }
    }

    /// Tells search the outbox grew (after a write commits), when search runs here.
    pub fn wake_search(&self) {
        if let Some(search) = &self.search {
            search.wake();
        }
    }
}
