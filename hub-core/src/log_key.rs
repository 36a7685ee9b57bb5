//! The transparency log's signing key (`DATA/log-key`): it signs every checkpoint the hub
//! serves, and its name is the log's origin.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use index_schema::tlog::LogSigner;

use crate::config::Config;
use crate::private::private_file;

/// The log key's file in the data dir.
pub const LOG_KEY_FILE: &str = "log-key";

/// Reads the log key from `DATA/log-key`, creating it (0600) on first start with the origin
/// `log_origin` (default `<registry_host>/log`). A configured origin that differs from the
/// key's name is an error: the origin is part of every checkpoint clients pinned.
pub fn open_log_key(config: &Config) -> anyhow::Result<LogSigner> {
    let path = config.data_dir.join(LOG_KEY_FILE);
    let wanted = config
        .log_origin
        .clone()
        .unwrap_or_else(|| format!("{}/log", config.registry_host));
    let key = match std::fs::read_to_string(&path) {
        Ok(text) => LogSigner::from_secret_text(&text)
            .with_context(|| format!("{} is not a log key", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key(&path, &wanted)?,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if let Some(origin) = &config.log_origin
        && origin != key.origin()
    {
        anyhow::bail!(
            "log_origin is `{origin}` but the log key {} is for `{}`; the origin cannot change \
             once clients pinned it (remove the setting, or start a new log with a new data dir)",
            path.display(),
            key.origin()
        );
    }
    Ok(key)
}

fn create_key(path: &Path, origin: &str) -> anyhow::Result<LogSigner> {
    let key = LogSigner::generate(origin, &mut rand::rngs::OsRng)
        .with_context(|| format!("cannot create the log key for origin `{origin}`"))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut f = private_file(&tmp)?;
        f.write_all(key.to_secret_text().as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    // Two hubs starting on one data dir: the first link wins, the other reads it.
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            tracing::info!(origin, key = %key.verifier(), "created the transparency log key");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path)?;
            Ok(LogSigner::from_secret_text(&text)?)
        }
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}
