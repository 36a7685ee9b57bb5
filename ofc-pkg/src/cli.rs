//! Command-line definitions (clap) and dispatch. One file per verb lives in `commands/`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use secrecy::SecretString;

use crate::detect::DocumentKind;
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
    Validate(ValidateArgs),
    /// Run a blueprint's agents on a floor: one turn with MESSAGE, else an interactive session.
    Run(crate::commands::run::RunArgs),
    /// Internal: stops `ofc run`'s agents when `ofc` ends (reads process groups on stdin).
    #[command(name = "__supervise", hide = true)]
    Supervise,
    /// Run floors: agents taking turns on a conversation.
    #[command(subcommand)]
    Floor(FloorCommand),
    /// The project's sessions: every `ofc run` records one; `ofc run --resume` continues it.
    #[command(subcommand)]
    Sessions(crate::commands::sessions::SessionsCommand),
    /// Create an ed25519 signing key for publishing.
    Keygen(KeygenArgs),
    /// Create a new agent (agent.yaml or AgentCard) or blueprint in a folder.
    Init(InitArgs),
    /// Pack, sign and publish an agent folder to the hub.
    // `--version` here is the agent's version; `ofc --version` still prints ofc's.
    #[command(disable_version_flag = true)]
    Publish(PublishArgs),
    /// Store an API token for a hub (checked with the hub first).
    Login(LoginArgs),
    /// Forget the API token stored for a hub (and with --revoke, revoke it on the hub).
    Logout(LogoutArgs),
    /// Manage the publisher keys registered for a namespace on the hub.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Search the hub's agents.
    Search(SearchArgs),
    /// Show an agent on the hub: its latest (or chosen) version and every version.
    Info(InfoArgs),
    /// Yank a version (selectors skip it; it stays downloadable by exact version), or undo that.
    Yank(YankArgs),
    /// Print a shell completion script on stdout.
    Completions(CompletionsArgs),
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
    Rm(RmArgs),
    /// Remove cached bundles no cached agent uses, and leftover temporary files.
    Gc,
    /// Re-check the digest of every entry in the local cache.
    Verify,
}

/// Arguments of `ofc login`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("secret").args(["token", "token_stdin", "username"])))]
pub struct LoginArgs {
    /// The API token. Prefer --token-stdin: arguments show in the process list and shell
    /// history. Without any of --token, --token-stdin and --username, a token piped on
    /// standard input is read.
    #[arg(long, value_name = "TOKEN", value_parser = secret_arg)]
    pub token: Option<SecretString>,

    /// Read the API token from standard input.
    #[arg(long)]
    pub token_stdin: bool,

    /// Log in with a user name and password instead; the hub mints a token for ofc.
    #[arg(long, value_name = "USER", requires = "password_stdin")]
    pub username: Option<String>,

    /// Read the password from standard input (with --username).
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
}

/// A secret given as an argument, held as one from the moment it is parsed.
fn secret_arg(text: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(text))
}

impl std::fmt::Debug for LoginArgs {
    /// Never the token: a stray `{:?}` must not leak it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginArgs")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_stdin", &self.token_stdin)
            .field("username", &self.username)
            .field("password_stdin", &self.password_stdin)
            .finish()
    }
}

/// Arguments of `ofc logout`.
#[derive(Debug, clap::Args)]
pub struct LogoutArgs {
    /// Also revoke the token on the hub, so that no copy of it works any more.
    #[arg(long)]
    pub revoke: bool,
}

/// `ofc key` verbs.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Register the public half of a signing key (see `ofc keygen`) for a namespace, so that
    /// the hub accepts what it signs.
    Register(KeyRegisterArgs),
    /// List the keys of a namespace, revoked ones included.
    List(KeyListArgs),
    /// Revoke a key: it signs nothing new; versions it signed stay and show the revocation.
    Revoke(KeyRevokeArgs),
}

/// Arguments of `ofc key register`.
#[derive(Debug, clap::Args)]
pub struct KeyRegisterArgs {
    /// The local key (`<config>/keys/<NAME>.key`).
    #[arg(long, value_name = "NAME", default_value = crate::keys::DEFAULT_KEY)]
    pub key: String,

    /// The namespace (default: your own, from the hub).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

/// Arguments of `ofc key list`.
#[derive(Debug, clap::Args)]
pub struct KeyListArgs {
    /// The namespace (default: your own, from the hub).
    #[arg(value_name = "NS")]
    pub namespace: Option<String>,
}

/// Arguments of `ofc key revoke`.
#[derive(Debug, clap::Args)]
pub struct KeyRevokeArgs {
    /// The key id (32 hex digits, as `ofc key list` and `ofc keygen` show it).
    #[arg(value_name = "KEYID")]
    pub key_id: String,

    /// The namespace (default: your own, from the hub).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

/// How search hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchSort {
    /// Best match first.
    Relevance,
    /// Most downloaded first.
    Downloads,
    /// Most recently updated first.
    Updated,
}

impl SearchSort {
    /// The hub's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Relevance => "relevance",
            Self::Downloads => "downloads",
            Self::Updated => "updated",
        }
    }
}

/// Arguments of `ofc search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Free text: words of the name, tagline, description, keywords or capabilities.
    #[arg(value_name = "QUERY")]
    pub query: Option<String>,

    /// Only agents offering this capability (repeat for several: all required).
    #[arg(long, value_name = "NAME")]
    pub capability: Vec<String>,

    /// Only agents with this keyword (repeat for several: all required).
    #[arg(long, value_name = "WORD")]
    pub keyword: Vec<String>,

    /// Only agents with this source kind (bundle, pip, npm, docker, remote).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,

    /// Only agents of this publisher.
    #[arg(long, value_name = "PUBLISHER")]
    pub publisher: Option<String>,

    /// Order of the hits.
    #[arg(long, value_enum, default_value_t = SearchSort::Relevance)]
    pub sort: SearchSort,

    /// How many hits to show (1 to 100).
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub limit: u32,

    /// Also show how many matching agents have each capability, keyword, kind and publisher
    /// (over every match, the most frequent ten of each; `--json` carries them too).
    #[arg(long)]
    pub facets: bool,
}

/// Arguments of `ofc info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// `publisher/agent`, optionally `@1.2.3`, `@^1.2` or `@latest`.
    #[arg(value_name = "REF")]
    pub reference: String,
}

/// Arguments of `ofc yank`.
#[derive(Debug, clap::Args)]
pub struct YankArgs {
    /// The version: `publisher/agent@1.2.3` (an exact version).
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Why it is yanked (shown to users).
    #[arg(long, value_name = "TEXT", conflicts_with = "undo")]
    pub reason: Option<String>,

    /// Unyank the version instead.
    #[arg(long)]
    pub undo: bool,
}

/// Arguments of `ofc completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
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
    /// The agent folder, holding an `agent.yaml`, an `agent-card.json`, a `server.json` or one
    /// AgentCard; or a `server.json` or `agent-card.json` file itself.
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

    /// Return as soon as the hub has the version, without waiting until its search finds it
    /// (by default `ofc publish` waits, up to `--wait-secs`, as `cargo publish` does).
    #[arg(long, conflicts_with = "wait_secs")]
    pub no_wait: bool,

    /// How long to wait for the hub's search to find the new version.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub wait_secs: u64,
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
    /// A transcript (`.ofc/logs/<floor_id>.jsonl`), a session file
    /// (`.ofc/sessions/<id>.jsonl`), or the id of a session of this directory's project.
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

    /// Let anyone who reaches the server create floors (by default `POST /floors` wants the
    /// server token this command prints, or `OFC_FLOOR_SERVER_TOKEN` when set).
    #[arg(long)]
    pub open: bool,

    /// A host agents may live on (repeat for several; `any` for every host). Default: loopback
    /// only when listening on loopback, every host otherwise.
    #[arg(long = "agent-host", value_name = "HOST")]
    pub agent_hosts: Vec<String>,

    /// Give every floor a Switchboard (seed 004) at DIR/<floor_id>/.switchboard/, with its MCP
    /// server on 127.0.0.1: agents that work through files or MCP join floors there.
    #[arg(long, value_name = "DIR")]
    pub switchboard: Option<PathBuf>,
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
    if let Some(h) = &cli.hub {
        crate::config::set_hub_override(h);
    }
    let mut out = Output::new(cli.json);
    // These two choose their own exit codes.
    match &cli.command {
        Command::Run(args) => return crate::commands::run::run(args, &mut out),
        Command::Supervise => return crate::run::supervisor::main(),
        _ => {}
    }
    let status = match &cli.command {
        Command::Run(_) | Command::Supervise => unreachable!("dispatched above"),
        Command::Validate(args) => crate::commands::validate::run(args, &mut out),
        Command::Floor(FloorCommand::Serve(args)) => crate::commands::floor::serve(args, &mut out),
        Command::Floor(FloorCommand::Replay(args)) => {
            crate::commands::floor::replay(args, &mut out)
        }
        Command::Sessions(cmd) => crate::commands::sessions::run(cmd, &mut out),
        Command::Keygen(args) => crate::commands::keygen::run(args, &mut out),
        Command::Init(args) => crate::commands::init::run(args, &mut out),
        Command::Publish(args) => crate::commands::publish::run(args, &mut out),
        Command::Login(args) => crate::commands::login::run(args, &mut out),
        Command::Logout(args) => crate::commands::logout::run(args, &mut out),
        Command::Key(cmd) => crate::commands::key::run(cmd, &mut out),
        Command::Search(args) => crate::commands::search::run(args, &mut out),
        Command::Info(args) => crate::commands::info::run(args, &mut out),
        Command::Yank(args) => crate::commands::yank::run(args, &mut out),
        Command::Completions(args) => crate::commands::completions::run(args, &mut out),
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
