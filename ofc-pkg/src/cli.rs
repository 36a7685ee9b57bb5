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
    /// Create an ed25519 signing key for publishing.
    Keygen(KeygenArgs),
    /// Create a new agent (agent.yaml or AgentCard) or blueprint in a folder.
    Init(InitArgs),
    /// Pack, sign and publish an agent folder to the hub.
    // `--version` here is the agent's version; `ofc --version` still prints ofc's.
    #[command(disable_version_flag = true)]
    Publish(PublishArgs),
    /// List the agents and bundles in the local cache.
    List,
    /// Remove agents or bundles from the local cache.
    Rm(RmArgs),
    /// Remove cached bundles no cached agent uses, and leftover temporary files.
    Gc,
    /// Re-check the digest of every entry in the local cache.
    Verify,
}

/// Arguments of `ofc keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// The key's name; keys live in `<config>/keys/<NAME>.key`.
    #[arg(long, value_name = "NAME", default_value = crate::keys::DEFAULT_KEY)]
    pub name: String,

    /// Replace an existing key with the same name.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `ofc init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The folder to create the files in (created if missing).
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// Write an AgentCard (`<name>.md`) instead of `agent.yaml`.
    #[arg(long, conflicts_with = "blueprint")]
    pub card: bool,

    /// Write a `blueprint.yaml` (a floor of agents) instead of an agent.
    #[arg(long)]
    pub blueprint: bool,

    /// The agent's (or blueprint's) name; defaults to the folder's name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// Arguments of `ofc publish`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The agent folder, holding an `agent.yaml` or one AgentCard.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// Build, pack and sign, print the digests, and upload nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The hub name `publisher/agent`, when the file does not give it.
    #[arg(long, value_name = "PUBLISHER/AGENT")]
    pub name: Option<String>,

    /// The version, when the file does not give it.
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,

    /// The signing key (see `ofc keygen`).
    #[arg(long, value_name = "NAME", default_value = crate::keys::DEFAULT_KEY)]
    pub key: String,
}

/// Arguments of `ofc rm`.
#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// What to remove: `publisher/agent` (every cached version), `publisher/agent@1.2.3`, or a
    /// manifest or bundle digest `sha256:<hex>`.
    #[arg(required = true, value_name = "TARGET")]
    pub targets: Vec<String>,
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
        Command::Keygen(args) => crate::commands::keygen::run(args, &mut out),
        Command::Init(args) => crate::commands::init::run(args, &mut out),
        Command::Publish(args) => crate::commands::publish::run(args, &mut out),
        Command::List => crate::commands::list::run(&mut out),
        Command::Rm(args) => crate::commands::rm::run(args, &mut out),
        Command::Gc => crate::commands::gc::run(&mut out),
        Command::Verify => crate::commands::verify::run(&mut out),
    };
    match status {
        Ok(s) => s.into(),
        Err(e) => {
            out.error(&e);
            ExitStatus::Failure.into()
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clap_definitions_are_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
