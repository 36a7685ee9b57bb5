//! The crate's error type. It sits below every other module (it names only the outbox's
//! opaque [`SourceError`]), so that any module can return it without importing from the crate
//! root, which imports every module.

use crate::outbox::SourceError;

/// What can go wrong in the search crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Tantivy failed (I/O, corruption, lock held by another writer).
    #[error("search index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// A file or directory could not be used.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// The index on disk is not in the format this build writes.
    #[error("search index format: {0}")]
    Format(String),
    /// The outbox source failed.
    #[error("outbox: {0}")]
    Source(#[source] SourceError),
    /// The follower's tasks stopped.
    #[error("the search follower stopped")]
    Stopped,
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
