//! The ofc client: the `ofc` command and the library behind it.
//!
//! Config and credentials (`config`, `credentials`), the hub client (`hub`), the verified cache
//! (`cache`, `pack`, `unpack`), publisher key pins (`trust`), resolution and pulling (`pull`),
//! and one module per verb in `commands`.

pub mod blueprint_files;
pub mod cache;
pub mod cards;
pub mod cli;
pub mod commands;
pub mod config;
pub mod container;
pub mod credentials;
pub mod detect;
pub mod floors;
pub mod hub;
pub mod hub_url;
pub mod keys;
pub mod output;
pub mod pack;
pub mod package;
pub mod project;
pub mod pull;
pub mod run;
pub mod start;
pub mod supervisor;
pub mod transfer;
pub mod trust;
pub mod unpack;
