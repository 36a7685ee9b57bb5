//! Content-addressed blob storage (OCI-style `sha256` blobs): the [`BlobStore`] trait, its
//! async face [`Blobs`], and the local filesystem store ([`FsBlobStore`], `fs.rs`). The hub
//! implements the trait a second time over an upstream OCI registry (`hub-server`'s
//! `oci/upstream.rs`, which speaks HTTP).

mod blobs;
mod fs;
mod store;

pub use blobs::Blobs;
pub use fs::{FsBlobStore, HUB_ID_FILE};
pub use store::{BlobError, BlobStore};
