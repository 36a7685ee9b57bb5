//! `ofc-hub`: serve the hub, migrate its database, and administer it (see `cli/`).

mod cli;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
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
    match rt.block_on(cli::run(cli)) {
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
