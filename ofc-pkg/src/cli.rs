//! Command-line definitions (clap) and dispatch. One file per verb lives in `commands/`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::detect::DocumentKind;
use crate::output::{ExitStatus, Output};

/// ofc — an open hub and package manager for AI agents.
#[derive(Debug, Parser)]
#[command(name = "ofc", version, about, propagate_version = true)]
pub struct Cli {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// The verb to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check documents: agent manifests, signed envelopes, agent.yaml, AgentCards, blueprints,
    /// lockfiles, or whole directories of them.
    Validate(ValidateArgs),
}

/// Arguments of `ofc validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Files or directories to check; directories are searched recursively.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Treat every file given as this kind instead of detecting it.
    #[arg(long, value_enum)]
    pub kind: Option<DocumentKind>,
}

/// Parses the command line, runs the verb and maps the outcome to an exit code: 0 success,
/// 1 failure (something invalid or an operation that failed), 2 usage error.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and usage errors with exit 2.
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let mut out = Output::new(cli.json);
    let status = match &cli.command {
        Command::Validate(args) => crate::commands::validate::run(args, &mut out),
    };
    match status {
        Ok(s) => s.into(),
        Err(e) => {
            out.error(&e);
            ExitStatus::Failure.into()
        }
    }
}
