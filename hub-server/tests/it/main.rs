//! The integration tests of `hub-server`, in one test binary (one link of the hub, tokio,
//! axum, sqlx and tantivy instead of one per file): each file is a module. Peers (PostgreSQL,
//! registries, OCI clients) are started by `scripts/peers/*`; hubs and PostgreSQL databases by
//! the `ofc-test-kit` crate (`TestHub::in_process`, `TestHub::process`).

mod admin_while_serving;
mod ard_scores;
mod attacks;
mod authz;
mod connections;
mod crash;
mod discovery;
mod domain_recheck_lease;
mod e2e;
mod formats;
mod layout;
mod lifecycle;
mod namespace_lookalikes;
mod oci_clients;
mod oci_gc;
mod oci_mirror_tags;
mod oci_protocol;
mod oci_upstream_hostile;
mod openapi;
mod proxies;
mod read_api_pages;
mod refusal_codes;
mod registry_api;
mod replica_blobs;
mod replicas;
mod search_crash;
mod search_http;
mod search_hybrid;
mod search_model;
mod storage;
mod tlog;
mod trust;
mod trusted;
mod unread_input;
mod verified_namespaces;
mod witness;
