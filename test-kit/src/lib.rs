//! The one test kit of the workspace (dev-only): how a test starts a hub.
//!
//! ```text
//! let app = TestHub::in_process(Backend::Postgres).await; // hub-server library, in this runtime
//! app.publish_as(&app.user, &remote_manifest("alice/x", "1.0.0")).await;
//!
//! let mut hub = TestHub::process(ProcessOptions::new(Backend::Sqlite)); // `ofc-hub serve`
//! let p = hub.new_user("alice");       // user + namespace + token + registered key
//! hub.admin(&["create-namespace", "team", "--owner", "alice"]);
//! hub.kill(); hub.restart();           // SIGKILL; same data, same address
//! ```
//!
//! - [`TestHub::in_process`]: `hub_server::build_state` + `serve` on an ephemeral 127.0.0.1
//!   port, [`test_config`], publisher `alice` ready, the [`hub_server::AppState`] at hand;
//!   stopped on drop.
//! - [`TestHub::process`] / [`HubProcess`]: the built `ofc-hub` binary ([`bin`]) as a child
//!   process with its own data dir (and `hub.toml`), `kill`, `restart`, `admin`, `command`.
//! - [`Replicas`]: several `ofc-hub serve` processes, each with its own data dir, on one
//!   PostgreSQL database and one log key file (a hub behind a load balancer).
//! - [`PgDatabase`]: a uniquely named database per test on `OFC_TEST_POSTGRES_URL`
//!   (`scripts/peers/postgres`); PostgreSQL tests fail, never skip, without it.
//! - [`oidc::OidcIssuer`]: a real OIDC issuer on 127.0.0.1 (discovery, JWKS, its own RSA and
//!   P-256 keys) minting ID tokens, for trusted publishing.
//! - [`domain_proof`]: a real DNS server (dnsmasq) and an HTTPS server with a test CA, for
//!   the domain proofs of verified namespaces.
//! - [`Publisher`]: the publisher fixture; [`Request`]: authorized JSON requests;
//!   [`assert`]: assertions on `(status, JSON)` answers.
//!
//! It depends on `hub-server`; use it only as a dev-dependency (a dev-dependency cycle with
//! `hub-server`'s own integration tests is fine; its unit tests cannot use it).

pub mod assert;
pub mod domain_proof;
mod fixtures;
mod in_process;
pub mod oidc;
mod postgres;
mod process;
mod replicas;
mod request;

pub use assert::{
    Case, assert_cases, assert_no_failures, assert_refused, assert_status, code, string_pairs,
    strings, user_scopes,
};
pub use fixtures::{
    Publisher, bundle_manifest, key_for, manifest_saying, oci_tool, peer, publish_body,
    registry_peer, remote_manifest, search_model_dir,
};
pub use in_process::{Served, TestHub, add_publisher, fresh_store, test_config};
pub use postgres::{PgDatabase, PrivatePostgres, database_for, postgres_base_url};
pub use process::{
    COMMAND_BOUND, HubProcess, ProcessOptions, SEARCH_BOUND, START_BOUND, WitnessProcess, bin,
    hub_command,
};
pub use replicas::Replicas;
pub use request::{Request, on_own_runtime};

/// Which database a hub runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    #[default]
    Sqlite,
    Postgres,
}
