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
    /// Run floors: agents taking turns on a conversation.
    #[command(subcommand)]
    Floor(FloorCommand),
}

/// `ofc floor` verbs.
#[derive(Debug, Subcommand)]
pub enum FloorCommand {
    /// Serve the OFC floor server API (`POST /floors`, …) until interrupted.
    Serve(FloorServeArgs),
    /// Replay a floor transcript through the turn-taking controller and check that it makes
    /// the same decisions.
    Replay(FloorReplayArgs),
}

/// Arguments of `ofc floor replay`.
#[derive(Debug, clap::Args)]
pub struct FloorReplayArgs {
    /// A transcript (`.ofc/logs/<floor_id>.jsonl`).
    #[arg(value_name = "TRANSCRIPT")]
    pub transcript: PathBuf,
}

/// Arguments of `ofc floor serve`.
#[derive(Debug, clap::Args)]
pub struct FloorServeArgs {
    /// Address to listen on. Loopback by default: floors carry private conversations and the
    /// join token is the only gate.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3711")]
    pub listen: String,

    /// Directory for floor transcripts (JSON lines, one file per floor).
    #[arg(long, value_name = "DIR", default_value = ".ofc/logs")]
    pub logs: PathBuf,

    /// Deadline of each should-wake call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub should_wake_deadline_ms: u64,

    /// Deadline of each respond call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 120_000)]
    pub respond_deadline_ms: u64,
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
        Command::Floor(FloorCommand::Serve(args)) => crate::commands::floor::serve(args, &mut out),
        Command::Floor(FloorCommand::Replay(args)) => {
            crate::commands::floor::replay(args, &mut out)
        }
    };
    match status {
        Ok(s) => s.into(),
        Err(e) => {
            out.error(&e);
            ExitStatus::Failure.into()
        }
    }
}
