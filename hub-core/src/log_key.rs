//! The transparency log's signing key: it signs every checkpoint the hub serves, and its name
//! is the log's origin.
//!
//! **Where it lives.** The secret is a file: `log_key_file` when set, else `DATA/log-key`
//! (created, 0600, on first start when missing). Its public half and origin are recorded in the
//! database by the first hub that starts on it (`log_key` table, first writer wins), and every
//! hub — every replica sharing the database — checks its key against that record at start: a
//! replica with another key refuses to start (two keys would show clients two views of one
//! log), and a replica with no key file while the database names a key refuses rather than
//! creating a key of its own. Replicas share the secret by mounting the same file
//! (`log_key_file`). The secret is deliberately not in the database: whoever can read the
//! database (a backup, a read-only role, a dump attached to a ticket) could otherwise sign
//! checkpoints of any history, and the log exists to catch exactly a database that was
//! rewritten. ARCHITECTURE.md ("Several replicas") says the same in short.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use index_schema::tlog::LogSigner;

use crate::config::Config;
use crate::private::private_file;
use crate::store::Store;

/// The log key's file in the data dir.
pub const LOG_KEY_FILE: &str = "log-key";

/// Where this hub's log key is: `log_key_file`, else `DATA/log-key`.
pub fn log_key_path(config: &Config) -> PathBuf {
    config
        .log_key_file
        .clone()
        .unwrap_or_else(|| config.data_dir.join(LOG_KEY_FILE))
}

/// Reads the log key ([`log_key_path`]), creating it (0600) when missing and the database names
/// no key yet, with the origin `log_origin` (default `<registry_host>/log`); then records it in
/// the database, or checks it against the key recorded there. A configured origin that differs
/// from the key's name is an error: the origin is part of every checkpoint clients pinned.
pub async fn open_log_key(config: &Config, store: &Store) -> anyhow::Result<LogSigner> {
    let path = log_key_path(config);
    let wanted = config
        .log_origin
        .clone()
        .unwrap_or_else(|| format!("{}/log", config.registry_host));
    let recorded = store
        .recorded_log_key()
        .await
        .context("cannot read the log key recorded in the database")?;
    let key = match std::fs::read_to_string(&path) {
        Ok(text) => LogSigner::from_secret_text(&text)
            .with_context(|| format!("{} is not a log key", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match &recorded {
            Some((origin, verifier)) => anyhow::bail!(
                "this hub has no log key ({} does not exist), but the database's log is signed \
                 by `{verifier}` (origin `{origin}`): every replica of a hub must sign with the \
                 same key — set `log_key_file` (OFC_HUB__LOG_KEY_FILE) to a copy of the first \
                 replica's key file (its DATA/log-key)",
                path.display()
            ),
            None => create_key(&path, &wanted)?,
        },
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
    let verifier = key.verifier().to_string();
    let (origin, recorded) = store
        .record_log_key(key.origin(), &verifier)
        .await
        .context("cannot record the log key in the database")?;
    if recorded != verifier {
        anyhow::bail!(
            "the log key {} (`{verifier}`) is not the key of this database's log \
             (`{recorded}`, origin `{origin}`, recorded by the first hub that started on it): \
             every replica of a hub must sign with the same key — set `log_key_file` \
             (OFC_HUB__LOG_KEY_FILE) to a copy of that replica's key file (its DATA/log-key)",
            path.display()
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
