//! The state every handler shares: the store, the blobs, the settings, the limiter, the
//! metrics and search.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{FailureLimiter, Principal, Role, Scope};
use crate::blob::BlobStore;
use crate::config::Config;
use crate::error::{ApiError, ErrorCode, denied_error};
use crate::metrics::Metrics;
use crate::store::{Namespace, Store};

/// Shared by every handler.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The repository.
    pub store: Store,
    /// Bundle blobs.
    pub blobs: crate::blob::Blobs,
    /// Settings.
    pub config: Arc<Config>,
    /// Authentication-failure limiter.
    pub limiter: Arc<FailureLimiter>,
    /// Counters for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// The search index and its follower (`None`: search answers 503).
    pub search: Option<Arc<crate::search::Search>>,
    /// The transparency log's signing key (`DATA/log-key`): signs checkpoints.
    pub log: Arc<index_schema::tlog::LogSigner>,
    /// The latest checkpoint the witnesses cosigned (`None` without witnesses, or before their
    /// first answer).
    pub cosigned: crate::cosigner::Shared,
}

impl AppState {
    /// State over a store, a blob store and the log key.
    pub fn new(
        store: Store,
        blobs: Arc<dyn BlobStore>,
        config: Config,
        log: index_schema::tlog::LogSigner,
    ) -> Self {
        let limiter = FailureLimiter::new(
            config.auth_failure_limit,
            Duration::from_secs(config.auth_failure_window_secs),
        );
        AppState {
            store,
            blobs: crate::blob::Blobs::new(blobs),
            config: Arc::new(config),
            limiter: Arc::new(limiter),
            metrics: Arc::new(Metrics::default()),
            search: None,
            log: Arc::new(log),
            cosigned: Default::default(),
        }
    }

    /// A namespace by name, or 404.
    pub async fn namespace_or_404(&self, name: &str) -> Result<Namespace, ApiError> {
        let name = name.to_ascii_lowercase();
        self.store.namespace(&name).await?.ok_or_else(|| {
            ApiError::not_found(
                ErrorCode::NamespaceNotFound,
                format!("no namespace `{name}`"),
            )
        })
    }

    /// Checks `scope` for `principal` in `ns`, mapping a refusal to its 403.
    pub async fn authorize(
        &self,
        principal: &Principal,
        scope: Scope,
        ns: &Namespace,
    ) -> Result<(), ApiError> {
        let role = self
            .store
            .role(ns.id, principal.user_id)
            .await?
            .and_then(|r| Role::parse(&r));
        principal
            .authorize(scope, &ns.name, role)
            .map_err(denied_error)
    }
}
