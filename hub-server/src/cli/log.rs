//! `ofc-hub log`: the transparency log's verification and key.

use clap::Subcommand;
use hub_core::admin::log_verify;
use hub_core::log_key::open_log_key;
use hub_core::start::open_store;
use serde_json::json;

use super::output::out;
use super::settings::{Global, config};

#[derive(Subcommand, Debug)]
pub(crate) enum LogCommand {
    /// Recompute the whole tree from the entries in the database and compare every stored
    /// hash, the head, and each version's and key's entry; exits non-zero on a difference.
    /// Safe while the hub serves.
    Verify {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the log's verifier key (`origin+id+base64`), for clients and witnesses to pin out
    /// of band. Creates the key when the data dir has none yet (and the database names none),
    /// and records it in the database.
    Key,
}

/// Runs an `ofc-hub log` verb.
pub(crate) async fn run(global: &Global, cmd: LogCommand) -> anyhow::Result<()> {
    match cmd {
        LogCommand::Verify { json } => {
            let cfg = config(global, None)?;
            let store = open_store(&cfg).await?;
            let r = log_verify(&store).await;
            store.db().close().await;
            let r = r?;
            let root = r.root.as_ref().map(index_schema::tlog::hash_b64);
            if json {
                out(json!({"size": r.size, "root": root, "problems": r.problems}));
            } else {
                out(format!(
                    "{} entries, root {}, {} problems",
                    r.size,
                    root.as_deref().unwrap_or("-"),
                    r.problems.len()
                ));
                for p in &r.problems {
                    eprintln!("problem: {p}");
                }
            }
            anyhow::ensure!(
                r.problems.is_empty(),
                "the transparency log does not match the database ({} problems)",
                r.problems.len()
            );
            Ok(())
        }
        LogCommand::Key => {
            let cfg = config(global, None)?;
            std::fs::create_dir_all(&cfg.data_dir)?;
            let store = open_store(&cfg).await?;
            let key = open_log_key(&cfg, &store).await;
            store.db().close().await;
            let key = key?;
            out(key.verifier().to_string());
            Ok(())
        }
    }
}
