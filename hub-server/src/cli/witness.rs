//! `ofc-hub witness`: a witness of other hubs' logs ([`hub_server::witness`]).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use hub_core::Config;
use hub_core::private::private_dir;

use super::output::out;
use super::serve::shutdown_signal;
use super::settings::{Global, config};

#[derive(Args, Debug)]
pub(crate) struct WitnessKey {
    /// The witness's secret key file (created, 0600, when missing): `DATA/witness-key` by
    /// default.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// The name a new key gets (it names the witness in every cosignature): default
    /// `<registry_host>/witness`.
    #[arg(long)]
    name: Option<String>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum WitnessCommand {
    /// Serve `POST /add-checkpoint` for the logs given.
    Serve {
        #[command(flatten)]
        key: WitnessKey,
        /// A log to witness: its verifier key, as `ofc-hub log key` prints it (repeat for
        /// several logs).
        #[arg(long = "log", value_name = "KEY", required = true)]
        logs: Vec<String>,
        /// The state file (what it cosigned of each log): `DATA/witness-state.json` by default.
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// Address to listen on (127.0.0.1:8734 by default).
        #[arg(long)]
        listen: Option<SocketAddr>,
    },
    /// Print the witness's verifier key (`name+id+base64`), for hubs (`log_witnesses`) and
    /// clients (`ofc trust witness add`). Creates the key when missing.
    Key {
        #[command(flatten)]
        key: WitnessKey,
    },
}

fn witness_key(cfg: &Config, k: &WitnessKey) -> anyhow::Result<index_schema::tlog::WitnessSigner> {
    let path = k
        .key
        .clone()
        .unwrap_or_else(|| cfg.data_dir.join("witness-key"));
    let name = k
        .name
        .clone()
        .unwrap_or_else(|| format!("{}/witness", cfg.registry_host));
    let key = hub_server::witness::open_witness_key(&path, &name)?;
    if let Some(n) = &k.name
        && n != key.name()
    {
        anyhow::bail!(
            "--name is `{n}` but the witness key {} is named `{}`; a witness's name cannot \
             change once hubs and clients configured it",
            path.display(),
            key.name()
        );
    }
    Ok(key)
}

/// Runs an `ofc-hub witness` verb.
pub(crate) async fn run(global: &Global, cmd: WitnessCommand) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    match cmd {
        WitnessCommand::Key { key } => {
            private_dir(&cfg.data_dir)?;
            out(witness_key(&cfg, &key)?.verifier());
            Ok(())
        }
        WitnessCommand::Serve {
            key,
            logs,
            state,
            listen,
        } => {
            private_dir(&cfg.data_dir)?;
            let signer = witness_key(&cfg, &key)?;
            let logs = logs
                .iter()
                .map(|l| {
                    index_schema::tlog::LogVerifier::parse(l).with_context(|| {
                        format!(
                            "--log `{}` is not a log verifier key",
                            index_schema::tlog::shown_key(l)
                        )
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let state = state.unwrap_or_else(|| cfg.data_dir.join("witness-state.json"));
            let witness =
                std::sync::Arc::new(hub_server::witness::Witness::open(signer, logs, state)?);
            let listen = listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8734)));
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let addr = listener.local_addr()?;
            tracing::info!(%addr, key = %witness.verifier(), "witness listening");
            eprintln!("ofc-hub witness key {}", witness.verifier());
            eprintln!("ofc-hub witness listening on http://{addr}");
            let limits = hub_server::conn_limits(&cfg);
            ofc_net::serve(listener, witness.router(), limits, shutdown_signal()).await;
            Ok(())
        }
    }
}
