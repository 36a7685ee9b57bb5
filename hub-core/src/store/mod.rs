//! The hub's repository: every SQL statement of the hub lives under this module, written once
//! for both backends (see [`db`]). Each write that changes what search shows appends an
//! outbox row, and every write appends an audit row, in the same transaction.
//!
//! `repo.rs` holds the [`Store`] handle and its errors; `rows.rs` the rows; `tx.rs` what every
//! writing transaction does besides its change (audit, outbox, the agent's derived state); one
//! file per aggregate holds its `impl Store`: `accounts`, `namespaces`, `agents`, `registry`,
//! `outbox`, `sessions`, `search` (what the index follows), `domains` (claimed domains and
//! their re-checks), `tlog` and `tlog_check` (the
//! transparency log), `replicas` (what replicas on one database share: the log key's record,
//! cosigned checkpoints, the failure limiter), `oci` (manifests, tags, uploads, bearer tokens),
//! `upload_parts` (the chunks of uploads, in the blob backend), `hub_id` (the id tying the
//! database to its blob store), `trusted` (trusted publishers,
//! exchanged ID tokens) and `blobs` (blob rows, claims and marks, links to repositories).
//! `trust` reads what the trust signals need (downloads
//! by week, the last publish); `lifecycle` deprecations, removals and tombstones.

mod accounts;
mod agents;
mod blobs;
pub mod db;
mod domains;
mod hub_id;
mod lifecycle;
mod namespaces;
mod oci;
mod outbox;
mod registry;
mod replicas;
mod repo;
mod rows;
mod search;
mod sessions;
mod tlog;
mod tlog_check;
mod trust;
mod trusted;
mod tx;
#[cfg(feature = "upgrade-test-migration")]
pub mod upgrade_test;
mod upload_parts;

pub use blobs::{BlobClaim, Registered};
pub use domains::DueDomain;
pub use hub_id::RecordedHubId;
pub use lifecycle::{Deprecation, RemoveOutcome, Tombstone, UnpublishLimits};
pub use oci::{ManifestRow, NewManifest, PublishedTag, Unrecorded};
pub use replicas::{LimiterWindow, StoredCosigned};
pub use repo::{Actor, Result, Store, StoreError, now_ms};
pub use rows::{
    AgentRow, AuditRow, KeyRow, Member, Namespace, NewRegistryAgent, NewVersion, OutboxRow,
    TOKEN_USE_PRECISION_MS, TokenRow, User, VersionRow,
};
pub use search::{OutboxRead, VisibleAgent};
pub use sessions::WebSession;
pub use tlog::{LogAppend, LogEntryRow, delete_entry, log_error, publish_entry, yank_entry};
pub use tlog_check::LogVerifyReport;
pub use trusted::{NewExchange, TrustedPublisherRow};
pub use tx::latest_version;
pub use upload_parts::{UploadPart, UploadState};
