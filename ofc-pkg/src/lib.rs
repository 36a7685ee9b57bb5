//! The ofc client: the `ofc` command and the library behind it.
//!
//! Today it validates every document ofc reads or writes (`ofc validate`); login, publish,
//! search, pull and run build on it.

pub mod cache;
pub mod cli;
pub mod commands;
pub mod config;
pub mod detect;
pub mod keys;
pub mod output;
pub mod pack;
pub mod unpack;
