//! The OCI distribution API (spec v1.1) under `/v2/`: blobs (with `Range`), monolithic and
//! chunked uploads, cross-repository mounts, manifests stored byte-exact, tags, referrers and
//! deletes, all answering with the OCI error envelope.
//!
//! Repository paths are `namespace/…`; their first segment is an ofc namespace. Pulls are
//! anonymous; pushes authenticate with an ofc API token, sent as the password of HTTP Basic or
//! exchanged at `/v2/token` for a short-lived bearer token (the flow `docker`, podman, skopeo
//! and oras follow after the `WWW-Authenticate` challenge). An image manifest with the ofc
//! `artifactType` is an agent version: pushing it is a publish with the JSON API's checks (see
//! `artifact.rs`).
//!
//! `dispatch.rs` routes a path to its handler; `access.rs` authenticates (API tokens, the
//! `/v2/token` bearers) and authorizes; `manifests.rs`, `uploads.rs` and `blobs.rs` are the
//! handlers; `artifact.rs` the agent-artifact push; `error.rs` the OCI error envelope;
//! `names.rs` names and request parts; `state.rs` upload sessions and manifest memory;
//! `upstream.rs` the blob store over an upstream registry. Their SQL and the blob bookkeeping
//! are the core's.

mod access;
mod artifact;
mod blobs;
mod dispatch;
mod error;
mod manifests;
mod names;
mod state;
mod uploads;
pub mod upstream;

pub use access::ACCESS_TOKEN_TTL_SECS;
pub use dispatch::router;
pub use error::{OciError, OciResult};
pub use names::{check_repository, tag_ok};
pub use state::{MAX_MANIFEST_BYTES, OciState};
