//! The hub's rules without HTTP: what `ofc-hub` does, below the wire.
//!
//! - the [`Store`](store::Store), which owns every SQL statement of the hub, on SQLite or
//!   PostgreSQL through one backend-generic layer ([`store::db`]);
//! - the publish service ([`publish`]): the one way a version enters the hub;
//! - blobs ([`blob`]: the store trait and the local filesystem store), their bookkeeping and
//!   claims ([`claims`]), the rules of upload sessions ([`uploads`]) and garbage collection
//!   ([`gc`]); the hub id tying a blob store to its database ([`hub_id`]);
//! - the transparency log: its key ([`log_key`]), the heads it proves against
//!   ([`log_heads`]), its proofs and views ([`tlog`]);
//! - accounts, tokens and namespaces: the rules ([`auth`]) and the services ([`accounts`],
//!   [`namespaces`]), verified namespaces and look-alike names ([`domains`], [`lookalike`]); agents and versions as the read API shows them ([`agents`]), and their
//!   life after publish: deprecate, unpublish, takedown, tombstones ([`lifecycle`]); the trust
//!   signals shown beside a version ([`trust`]);
//! - search: the glue that follows the outbox into the `hub-search` index ([`search`]), and
//!   the discovery documents read from it (AI catalog, ARD search, signed A2A cards:
//!   [`discovery`]);
//! - the outbound address policy: the addresses the hub may connect to for a user's issuer
//!   or domain ([`outbound`]);
//! - the settings ([`config`]), the operator's verbs ([`admin`], [`import`]), and opening a
//!   hub ([`start`]).
//!
//! Everything a service needs is a [`Hub`]; what it refuses is a
//! [`CoreError`] with a [`Kind`] the HTTP adapters of
//! `hub-server` map to a status, once.

pub mod accounts;
pub mod admin;
pub mod agents;
pub mod auth;
pub mod blob;
pub mod claims;
pub mod config;
pub mod counters;
pub mod discovery;
pub mod domains;
pub mod error;
pub mod gc;
pub mod hub;
pub mod hub_id;
pub mod import;
pub mod lifecycle;
pub mod limits;
pub mod log_heads;
pub mod log_key;
pub mod lookalike;
pub mod mirror_tags;
pub mod namespaces;
pub mod oci;
pub mod outbound;
pub mod private;
pub mod proxies;
pub mod publish;
pub mod search;
pub mod start;
pub mod store;
pub mod tlog;
pub mod trust;
pub mod trusted;
pub mod uploads;
pub mod web_sessions;

pub use config::Config;
pub use error::{CoreError, CoreResult, Kind};
pub use hub::Hub;
