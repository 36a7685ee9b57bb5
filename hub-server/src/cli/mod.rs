//! The `ofc-hub` command line: clap definitions here, one file per verb group. Every verb
//! runs the library (`serve`) or a core service (`admin`, `import`, `log`, `gc`, search upkeep).

mod admin;
mod import;
mod log;
mod output;
mod serve;
mod settings;
mod upkeep;
mod witness;

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use self::admin::AdminCommand;
use self::import::ImportCommand;
use self::log::LogCommand;
use self::settings::Global;
use self::witness::WitnessCommand;

#[derive(Parser, Debug)]
#[command(name = "ofc-hub", version, about = "The self-hosted ofc hub")]
pub struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the hub.
    Serve {
        /// Address to listen on (127.0.0.1:8733 by default).
        #[arg(long)]
        listen: Option<SocketAddr>,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Rebuild the search index from the database (stop the hub first: the index has one
    /// writer). With --check, only compare them, like `search-check`.
    Reindex {
        /// Compare instead of rebuilding.
        #[arg(long)]
        check: bool,
    },
    /// Compare the search index with the database; exits non-zero when they differ.
    SearchCheck,
    /// Operator commands (safe while the hub serves the same data dir and database).
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Load agents from other registries (safe while the hub serves the same data dir and
    /// database).
    #[command(subcommand)]
    Import(ImportCommand),
    /// The transparency log.
    #[command(subcommand)]
    Log(LogCommand),
    /// A witness of other hubs' logs (C2SP tlog-witness): cosigns each checkpoint a hub
    /// submits when it extends the last one it cosigned. Its key and state live in the data dir
    /// (`witness-key`, `witness-state.json`) unless given.
    #[command(subcommand)]
    Witness(WitnessCommand),
    /// Remove blobs no manifest or version references and expired upload sessions. Safe while
    /// the hub serves pushes: blobs used within the grace period are kept.
    Gc {
        /// Keep blobs stored or referenced within this many seconds.
        #[arg(long, default_value_t = 3600)]
        grace_secs: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs the verb `cli` names.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let global = &cli.global;
    match cli.command {
        Command::Serve { listen } => serve::serve(global, listen).await,
        Command::Migrate => serve::migrate(global).await,
        Command::Gc { grace_secs, json } => upkeep::gc(global, grace_secs, json).await,
        Command::Reindex { check: false } => upkeep::rebuild_index(global).await,
        Command::Reindex { check: true } | Command::SearchCheck => {
            upkeep::check_index(global).await
        }
        Command::Import(cmd) => import::run(global, cmd).await,
        Command::Log(cmd) => log::run(global, cmd).await,
        Command::Witness(cmd) => witness::run(global, cmd).await,
        Command::Admin(cmd) => admin::run(global, cmd).await,
    }
}

/// The whole of `ofc-hub`'s `main` (also the `ofc-hub-next` example's, the rolling-upgrade
/// test's new binary): parse, set up logging, run the verb, print the error chain.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Everything the hub writes (the SQLite database with password hashes, blobs, staged
    // uploads, the search index) is for the hub alone: 0700 directories, 0600 files.
    hub_core::private::private_files();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OFC_HUB_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(hub_server::DEFAULT_LOG)),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal, and never when NO_COLOR is set.
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            for c in e.chain().skip(1) {
                eprintln!("  caused by: {c}");
            }
            ExitCode::FAILURE
        }
    }
}
