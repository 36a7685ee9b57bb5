//! The hub's search index (in progress).
