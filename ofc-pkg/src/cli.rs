//! Command-line definitions (clap) and dispatch. One file per verb lives in `commands/`.

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

use crate::output::{ExitStatus, Output};

/// ofc — an open hub and package manager for AI agents.
#[derive(Debug, Parser)]
#[command(name = "ofc", version, about, propagate_version = true)]
pub struct Cli {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// The hub to talk to (default: `OFC_HUB`, else http://127.0.0.1:8733). `OFC_TOKEN` is
    /// only sent to the `OFC_HUB` hub; other hubs get the token `ofc login --hub` stored.
    #[arg(long, global = true, value_name = "URL")]
    pub hub: Option<String>,

    /// The verb to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check documents: agent manifests, signed envelopes, agent.yaml, AgentCards, blueprints,
    /// lockfiles, or whole directories of them.
    Validate(crate::commands::validate::ValidateArgs),
    /// Run a blueprint's agents on a floor: one turn with MESSAGE, else an interactive session.
    Run(crate::commands::run::RunArgs),
    /// Internal: stops `ofc run`'s agents when `ofc` ends (reads process groups on stdin).
    #[command(name = "__supervise", hide = true)]
    Supervise,
    /// Run floors: agents taking turns on a conversation.
    #[command(subcommand)]
    Floor(crate::commands::floor::FloorCommand),
    /// Serve a blueprint's sessions over HTTP: create, resume, post, cancel, watch (SSE).
    Serve(crate::run::serve::ServeArgs),
    /// Named floors: a blueprint kept under a name, changed in place, run with `--floor`.
    #[command(subcommand)]
    Floors(crate::commands::floors::FloorsCommand),
    /// The project's sessions: every `ofc run` records one; `ofc run --resume` continues it.
    #[command(subcommand)]
    Sessions(crate::commands::sessions::SessionsCommand),
    /// Test a model endpoint (OpenAI-compatible): ping, list its models, ask one question.
    #[command(subcommand)]
    Check(crate::commands::check::CheckCommand),
    /// Authorize a furniture's OAuth (an MCP server reached by url): consent once, token kept.
    Auth(crate::commands::auth::AuthArgs),
    /// Create an ed25519 signing key for publishing.
    Keygen(crate::commands::keygen::KeygenArgs),
    /// Create a new agent (agent.yaml or AgentCard) or blueprint in a folder.
    Init(crate::commands::init::InitArgs),
    /// Pack, sign and publish an agent folder to the hub.
    // `--version` here is the agent's version; `ofc --version` still prints ofc's.
    #[command(disable_version_flag = true)]
    Publish(crate::commands::publish::PublishArgs),
    /// Store an API token for a hub (checked with the hub first).
    Login(crate::commands::login::LoginArgs),
    /// Forget the API token stored for a hub (and with --revoke, revoke it on the hub).
    Logout(crate::commands::logout::LogoutArgs),
    /// Manage the publisher keys registered for a namespace on the hub.
    #[command(subcommand)]
    Key(crate::commands::key::KeyCommand),
    /// A namespace on the hub: its trusted publishers (CI identities that may publish with
    /// `ofc publish --oidc`).
    #[command(subcommand)]
    Namespace(crate::commands::namespace::NamespaceCommand),
    /// Search the hub's agents.
    Search(crate::commands::search::SearchArgs),
    /// Show an agent on the hub: its latest (or chosen) version and every version.
    Info(crate::commands::info::InfoArgs),
    /// Yank a version (selectors skip it; it stays downloadable by exact version), or undo that.
    Yank(crate::commands::yank::YankArgs),
    /// Deprecate versions with a message and a successor (pull and run warn), or undo that.
    Deprecate(crate::commands::deprecate::DeprecateArgs),
    /// Remove a version you published recently and few pulled; it leaves a tombstone.
    Unpublish(crate::commands::unpublish::UnpublishArgs),
    /// Print a shell completion script on stdout.
    Completions(crate::commands::completions::CompletionsArgs),
    /// Resolve, verify and install agents into the cache, and record them in ofc.lock.
    Pull(crate::commands::pull::PullArgs),
    /// Show and edit the publisher keys pinned on first use.
    #[command(subcommand)]
    Trust(crate::commands::trust::TrustCommand),
    /// List every version and key event the hub's transparency log holds for a publisher (or
    /// one of its agents), each verified against the log.
    Audit(crate::commands::audit::AuditArgs),
    /// List the agents and bundles in the local cache.
    List,
    /// Remove agents or bundles from the local cache.
    Rm(crate::commands::rm::RmArgs),
    /// Remove cached bundles no cached agent uses, and leftover temporary files.
    Gc,
    /// Re-check the digest of every entry in the local cache.
    Verify,
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
    if let Some(h) = &cli.hub {
        crate::hub_url::set_override(h);
    }
    let mut out = Output::new(cli.json);
    // These two choose their own exit codes.
    match &cli.command {
        Command::Run(args) => return crate::commands::run::run(args, &mut out),
        Command::Supervise => return crate::supervisor::main(),
        _ => {}
    }
    let status = match &cli.command {
        Command::Run(_) | Command::Supervise => unreachable!("dispatched above"),
        Command::Validate(args) => crate::commands::validate::run(args, &mut out),
        Command::Floor(crate::commands::floor::FloorCommand::Serve(args)) => {
            crate::commands::floor::serve(args, &mut out)
        }
        Command::Floor(crate::commands::floor::FloorCommand::Replay(args)) => {
            crate::commands::floor::replay(args, &mut out)
        }
        Command::Serve(args) => crate::run::serve::main(args, &mut out),
        Command::Floors(cmd) => crate::commands::floors::run(cmd, &mut out),
        Command::Sessions(cmd) => crate::commands::sessions::run(cmd, &mut out),
        Command::Check(cmd) => crate::commands::check::run(cmd, &mut out),
        Command::Auth(args) => crate::commands::auth::run(args, &mut out),
        Command::Keygen(args) => crate::commands::keygen::run(args, &mut out),
        Command::Init(args) => crate::commands::init::run(args, &mut out),
        Command::Publish(args) => crate::commands::publish::run(args, &mut out),
        Command::Login(args) => crate::commands::login::run(args, &mut out),
        Command::Logout(args) => crate::commands::logout::run(args, &mut out),
        Command::Key(cmd) => crate::commands::key::run(cmd, &mut out),
        Command::Namespace(cmd) => crate::commands::namespace::run(cmd, &mut out),
        Command::Search(args) => crate::commands::search::run(args, &mut out),
        Command::Info(args) => crate::commands::info::run(args, &mut out),
        Command::Yank(args) => crate::commands::yank::run(args, &mut out),
        Command::Deprecate(args) => crate::commands::deprecate::run(args, &mut out),
        Command::Unpublish(args) => crate::commands::unpublish::run(args, &mut out),
        Command::Completions(args) => {
            crate::commands::completions::run(args, Cli::command(), &mut out)
        }
        Command::Pull(args) => crate::commands::pull::run(args, &mut out),
        Command::Trust(cmd) => crate::commands::trust::run(cmd, &mut out),
        Command::Audit(args) => crate::commands::audit::run(args, &mut out),
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
