//! hub-server
