//! `ofc floor serve [--listen ADDR]`: the OFC floor server API, with transcripts under
//! `.ofc/logs/`. Prints the server's URL on stdout (`{"url", "logs"}` with `--json`) once it
//! listens, then serves until interrupted.
//!
//! `ofc floor replay TRANSCRIPT|SESSION`: feeds a transcript's recorded events (or each run's
//! of a session; see `commands::sessions`) back through the turn-taking controller and checks
//! it returns the recorded actions.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Subcommand;
use index_schema::wire::Token;
use runtime::floor::FloorSettings;
use runtime::server::{AgentHosts, FloorServer, ServerSettings};

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

/// The environment variable that sets the server token of `ofc floor serve`.
pub const SERVER_TOKEN_ENV: &str = "OFC_FLOOR_SERVER_TOKEN";
use runtime::transcript;

use crate::output::{ExitStatus, Output, UserError};

/// Runs `ofc floor serve`.
pub fn serve(args: &FloorServeArgs, out: &mut Output) -> Result<ExitStatus> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve_async(args, out))
}

async fn serve_async(args: &FloorServeArgs, out: &mut Output) -> Result<ExitStatus> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // ofc's own crates at info; libraries (hyper, rmcp, …) only when they warn.
                .unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new("warn,ofc=info,ofc_pkg=info,runtime=info")
                }),
        )
        .with_writer(std::io::stderr)
        .try_init();
    if args.should_wake_deadline_ms == 0 || args.respond_deadline_ms == 0 {
        return Err(UserError::new("deadlines must be at least 1 ms").into());
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| {
            UserError::new(format!("cannot listen on {}: {e}", args.listen))
                .hint("pick another address with `--listen 127.0.0.1:PORT`")
        })?;
    let addr = listener.local_addr()?;
    // Transcripts are private conversations: the directory (and the `.ofc` it may be made in)
    // is the user's alone, as `ofc run`'s.
    crate::run::project_dir::private_dirs(&args.logs)
        .with_context(|| format!("cannot create {}", args.logs.display()))?;
    if !addr.ip().is_loopback() {
        out.status(&format!(
            "warning: listening on {addr}, which is not loopback: anyone who can reach it may \
             create floors"
        ));
    }
    let loopback = addr.ip().is_loopback();
    let agent_hosts = if args.agent_hosts.iter().any(|h| h == "any") {
        AgentHosts::Any
    } else if !args.agent_hosts.is_empty() {
        AgentHosts::Only(args.agent_hosts.clone())
    } else if loopback {
        AgentHosts::Loopback
    } else {
        AgentHosts::Any
    };
    let token = if args.open {
        None
    } else {
        Some(match std::env::var(SERVER_TOKEN_ENV) {
            Ok(t) if !t.trim().is_empty() => t.trim().to_owned(),
            _ => {
                let mut bytes = [0u8; 32];
                rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
                format!("ofc_floorsrv_{}", hex::encode(bytes))
            }
        })
    };
    let settings = ServerSettings {
        floor: FloorSettings {
            should_wake_deadline: Duration::from_millis(args.should_wake_deadline_ms),
            respond_deadline: Duration::from_millis(args.respond_deadline_ms),
            transcript_dir: Some(args.logs.clone()),
            ..FloorSettings::default()
        },
        create_token: token.clone().map(Token::new),
        agent_hosts,
        // On loopback, only requests addressed to loopback names (DNS rebinding).
        allowed_host_headers: loopback.then(|| {
            ["localhost", "127.0.0.1", "::1"]
                .map(str::to_owned)
                .to_vec()
        }),
        switchboard_root: args.switchboard.clone(),
        ..ServerSettings::default()
    };
    let url = format!("http://{addr}");
    if out.json {
        out.data(
            &serde_json::json!({
                "url": url,
                "logs": args.logs.display().to_string(),
                "server_token": token,
            })
            .to_string(),
        );
    } else {
        out.data(&url);
    }
    out.status(&format!(
        "serving floors on {url}, transcripts in {} (ctrl-c to stop)",
        args.logs.display()
    ));
    if let Some(dir) = &args.switchboard {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        out.status(&format!(
            "each floor's Switchboard: {}/<floor_id>/.switchboard/ (its MCP server's port in server_info.json)",
            dir.display()
        ));
    }
    match &token {
        Some(t) => out.status(&format!(
            "create floors with `Authorization: Bearer {t}` (set {SERVER_TOKEN_ENV} to choose it; --open for none)"
        )),
        None => out.status("--open: anyone who reaches this server can create floors"),
    }
    FloorServer::new(settings)
        .serve(listener, shutdown_signal())
        .await
        .context("the floor server failed")?;
    out.status("stopped");
    Ok(ExitStatus::Success)
}

/// Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Runs `ofc floor replay`.
pub fn replay(args: &FloorReplayArgs, out: &mut Output) -> Result<ExitStatus> {
    let path = &args.transcript;
    if let Some(done) = crate::commands::sessions::replay(path, out) {
        return done;
    }
    let lines = transcript::read(path).map_err(|e| UserError::new(e.to_string()))?;
    match transcript::replay(&lines) {
        Ok(report) => {
            if out.json {
                out.data(
                    &serde_json::json!({
                        "transcript": path.display().to_string(),
                        "ok": true,
                        "turns": report.turns,
                        "events": report.events,
                        "actions": report.actions,
                    })
                    .to_string(),
                );
            } else {
                out.data(&format!(
                    "{}: ok ({} turns, {} events, {} actions replayed identically)",
                    path.display(),
                    report.turns,
                    report.events,
                    report.actions
                ));
            }
            Ok(ExitStatus::Success)
        }
        Err(error) => {
            if out.json {
                out.data(
                    &serde_json::json!({
                        "transcript": path.display().to_string(),
                        "ok": false,
                        "error": error.to_string(),
                    })
                    .to_string(),
                );
            } else {
                out.data(&format!("{}: {error}", path.display()));
            }
            Ok(ExitStatus::Failure)
        }
    }
}
