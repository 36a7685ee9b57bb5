//! The flags every verb takes, and the settings they make: defaults < file < environment <
//! flags (see [`hub_core::config`]).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use hub_core::Config;

#[derive(Args, Debug)]
pub(crate) struct Global {
    /// Data directory (SQLite file, blobs, hub.toml).
    #[arg(long = "data", global = true, value_name = "DIR")]
    pub(crate) data: Option<PathBuf>,
    /// `postgres://…` instead of the SQLite file under the data dir.
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) database_url: Option<String>,
    /// Settings file (TOML); `DATA/hub.toml` when present otherwise.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

pub(crate) fn config(global: &Global, listen: Option<SocketAddr>) -> anyhow::Result<Config> {
    let mut flags = toml::Table::new();
    if let Some(d) = &global.data {
        flags.insert("data_dir".into(), d.display().to_string().into());
    }
    if let Some(u) = &global.database_url {
        flags.insert("database_url".into(), u.clone().into());
    }
    if let Some(l) = listen {
        flags.insert("listen".into(), l.to_string().into());
    }
    Config::load(global.config.as_deref(), std::env::vars(), flags).map_err(anyhow::Error::msg)
}
