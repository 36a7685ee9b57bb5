//! `ofc-hub`: serve the hub, migrate its database, and administer it.

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use hub_server::{Config, admin};
use serde_json::json;

#[derive(Parser, Debug)]
#[command(name = "ofc-hub", version, about = "The self-hosted ofc hub")]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug)]
struct Global {
    /// Data directory (SQLite file, blobs, hub.toml).
    #[arg(long = "data", global = true, value_name = "DIR")]
    data: Option<PathBuf>,
    /// `postgres://…` instead of the SQLite file under the data dir.
    #[arg(long, global = true, value_name = "URL")]
    database_url: Option<String>,
    /// Settings file (TOML); `DATA/hub.toml` when present otherwise.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
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

#[derive(Subcommand, Debug)]
enum ImportCommand {
    /// A dump of the MCP Registry's list API (`GET /v0/servers` responses, `{"servers": [...]}`):
    /// each server becomes a signed version in the namespace; broken entries are reported (index,
    /// name, field, line) and the rest imported; a rerun changes nothing.
    McpRegistry {
        /// The dump (JSON).
        file: PathBuf,
        /// The namespace to import into.
        #[arg(long, default_value = "mcp-registry")]
        namespace: String,
        /// Secret key file (as `ofc keygen` writes it) of a key registered for the namespace.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The member who publishes (default: the namespace's owner).
        #[arg(long = "as", value_name = "USER")]
        as_user: Option<String>,
        /// The registry the dump comes from; each manifest's origin points at its entry there.
        #[arg(long, default_value = hub_server::import::OFFICIAL_REGISTRY)]
        registry_url: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum LogCommand {
    /// Recompute the whole tree from the entries in the database and compare every stored
    /// hash, the head, and each version's and key's entry; exits non-zero on a difference.
    /// Safe while the hub serves.
    Verify {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the log's verifier key (`origin+id+base64`), for clients and witnesses to pin out
    /// of band. Creates the key when the data dir has none yet.
    Key,
}

#[derive(Args, Debug)]
struct WitnessKey {
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
enum WitnessCommand {
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

#[derive(Subcommand, Debug)]
enum AdminCommand {
    /// Create a user, a namespace of the same name, and print a first API token (once).
    CreateUser {
        name: String,
        /// Make the user a hub administrator.
        #[arg(long)]
        admin: bool,
        /// Read a password (for `ofc login`) from standard input.
        #[arg(long)]
        password_stdin: bool,
        /// Do not create a namespace.
        #[arg(long)]
        no_namespace: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List users.
    ListUsers {
        #[arg(long)]
        json: bool,
    },
    /// Set a user's password from standard input.
    SetPassword { name: String },
    /// Grant or take hub administration.
    SetAdmin {
        name: String,
        #[arg(action = clap::ArgAction::Set)]
        admin: bool,
    },
    /// Disable (or with --enable, re-enable) a user.
    DisableUser {
        name: String,
        #[arg(long)]
        enable: bool,
    },
    /// Create an API token for a user and print it (once).
    CreateToken {
        user: String,
        #[arg(long, default_value = "cli token")]
        name: String,
        /// Comma-separated scopes.
        #[arg(
            long,
            default_value = "publish-new,publish-update,yank,manage-keys,manage-members,manage-tokens"
        )]
        scopes: String,
        /// Comma-separated namespace patterns.
        #[arg(long, default_value = "*")]
        namespaces: String,
        #[arg(long)]
        expires_in_days: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// List a user's tokens.
    ListTokens {
        user: String,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by id.
    RevokeToken { id: i64 },
    /// Create a namespace owned by a user.
    CreateNamespace {
        name: String,
        #[arg(long)]
        owner: String,
    },
    /// Add a member to a namespace or change their role (owner, maintainer, publisher).
    SetMember {
        namespace: String,
        user: String,
        #[arg(long, default_value = "maintainer")]
        role: String,
    },
    /// Delete an agent, or one version of it.
    Delete {
        name: String,
        #[arg(long)]
        version: Option<String>,
    },
    /// Show the audit log, newest first.
    Audit {
        #[arg(long)]
        target: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
}

fn config(global: &Global, listen: Option<SocketAddr>) -> anyhow::Result<Config> {
    let mut flags = toml::Table::new();
    if let Some(d) = &global.data {
        flags.insert("data_dir".into(), d.display().to_string().into());
    }
    if let Some(u) = &global.database_url {
        flags.insert("database_url".into(), u.clone().into());
    }
    if let Some(l) = listen {
        flags.insert("listen".into(), l.to_string().into());
    }
    Config::load(global.config.as_deref(), std::env::vars(), flags).map_err(anyhow::Error::msg)
}

#[allow(clippy::print_stdout)]
fn out(s: impl std::fmt::Display) {
    println!("{s}");
}

fn read_stdin_line() -> anyhow::Result<String> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s)?;
    let s = s.trim_end_matches(['\n', '\r']).to_string();
    anyhow::ensure!(!s.is_empty(), "no password on standard input");
    Ok(s)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
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

async fn witness_cmd(global: &Global, cmd: WitnessCommand) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    match cmd {
        WitnessCommand::Key { key } => {
            hub_server::private_dir(&cfg.data_dir)?;
            out(witness_key(&cfg, &key)?.verifier());
            Ok(())
        }
        WitnessCommand::Serve {
            key,
            logs,
            state,
            listen,
        } => {
            hub_server::private_dir(&cfg.data_dir)?;
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
            let limits = ofc_net::ConnLimits::new(
                cfg.max_connections,
                std::time::Duration::from_secs(cfg.header_timeout_secs.max(1)),
                std::time::Duration::from_secs(cfg.body_timeout_secs.max(1)),
            )
            .with_write_timeout(std::time::Duration::from_secs(
                cfg.write_timeout_secs.max(1),
            ));
            ofc_net::serve(listener, witness.router(), limits, shutdown_signal()).await;
            Ok(())
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { listen } => {
            let cfg = config(&cli.global, listen)?;
            tracing::info!(config = ?cfg, "starting");
            let listen = cfg.listen;
            let state = hub_server::build_state(cfg).await?;
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let addr = listener.local_addr()?;
            tracing::info!(%addr, backend = state.store.db().backend(), "listening");
            eprintln!("ofc-hub listening on http://{addr}");
            hub_server::serve(state, listener, shutdown_signal()).await
        }
        Command::Migrate => {
            let cfg = config(&cli.global, None)?;
            let store = hub_server::open_store(&cfg).await?;
            store.db().close().await;
            eprintln!("migrations applied");
            Ok(())
        }
        Command::Gc { grace_secs, json } => {
            let cfg = config(&cli.global, None)?;
            // No search follower: it would take the index lock a serving hub holds.
            let state = hub_server::build_state_for(cfg, hub_server::Role::Command).await?;
            let r = hub_server::oci::gc::collect(
                &state,
                std::time::Duration::from_secs(grace_secs),
                std::time::Duration::from_secs(state.config.upload_ttl_secs),
            )
            .await
            .map_err(|e| anyhow::anyhow!("gc failed: {}", e.message));
            state.store.db().close().await;
            let r = r?;
            if json {
                out(serde_json::to_string(&r)?);
            } else {
                out(format!(
                    "{} blobs removed ({} bytes), {} upload sessions expired, {} blobs examined",
                    r.blobs_deleted, r.bytes_freed, r.uploads_expired, r.blobs_seen
                ));
            }
            Ok(())
        }
        Command::Reindex { check: false } => {
            let cfg = config(&cli.global, None)?;
            let store = hub_server::open_store(&cfg).await?;
            let r = hub_server::search::reindex(&store, &cfg.data_dir).await;
            store.db().close().await;
            let (seq, n) = r?;
            out(json!({"seq": seq, "documents": n}));
            Ok(())
        }
        Command::Reindex { check: true } | Command::SearchCheck => {
            let cfg = config(&cli.global, None)?;
            let store = hub_server::open_store(&cfg).await?;
            let r = hub_server::search::check(&store, &cfg.data_dir).await;
            store.db().close().await;
            let r = r?;
            out(serde_json::to_string(&r)?);
            anyhow::ensure!(
                r.is_consistent(),
                "the search index differs from the database: {} missing, {} stale, {} extra",
                r.check.missing.len(),
                r.check.stale.len(),
                r.check.extra.len()
            );
            Ok(())
        }
        Command::Import(ImportCommand::McpRegistry {
            file,
            namespace,
            key,
            as_user,
            registry_url,
            json,
        }) => {
            let text = hub_server::import::read_dump(&file)?;
            let key_text = std::fs::read_to_string(&key)
                .with_context(|| format!("cannot read {}", key.display()))?;
            let key = index_schema::envelope::SecretKey::from_secret_text(&key_text)
                .with_context(|| format!("{} is not an ofc secret key", key.display()))?;
            let cfg = config(&cli.global, None)?;
            // No search follower: a serving hub holds the index; it follows the outbox.
            let state = hub_server::build_state_for(cfg, hub_server::Role::Command).await?;
            let r = admin::import_mcp_registry(
                &state,
                &text,
                &namespace,
                &key,
                as_user.as_deref(),
                &registry_url,
            )
            .await
            .with_context(|| format!("{} cannot be imported", file.display()));
            state.store.db().close().await;
            let r = r?;
            if json {
                out(serde_json::to_string(&r)?);
            } else {
                print_import(&file, &r);
            }
            anyhow::ensure!(
                r.is_ok(),
                "{} of the entries could not be imported",
                r.failed.len()
            );
            Ok(())
        }
        Command::Log(LogCommand::Verify { json }) => {
            let cfg = config(&cli.global, None)?;
            let store = hub_server::open_store(&cfg).await?;
            let r = store.log_verify().await;
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
        Command::Log(LogCommand::Key) => {
            let cfg = config(&cli.global, None)?;
            std::fs::create_dir_all(&cfg.data_dir)?;
            let key = hub_server::tlog::open_log_key(&cfg)?;
            out(key.verifier().to_string());
            Ok(())
        }
        Command::Witness(cmd) => witness_cmd(&cli.global, cmd).await,
        Command::Admin(cmd) => {
            let cfg = config(&cli.global, None)?;
            let store = hub_server::open_store(&cfg).await?;
            let r = admin_cmd(&store, cmd).await;
            store.db().close().await;
            r
        }
    }
}

fn print_import(file: &std::path::Path, r: &hub_server::import::ImportReport) {
    // Names, reasons and messages come from the dump: escaped before they reach a terminal.
    use hub_server::import::for_terminal as t;
    for i in &r.imported {
        out(format!(
            "imported  {}@{}  ({})",
            t(&i.agent),
            t(&i.version),
            t(&i.server)
        ));
    }
    for i in &r.unchanged {
        out(format!(
            "unchanged {}@{}  ({})",
            t(&i.agent),
            t(&i.version),
            t(&i.server)
        ));
    }
    for s in &r.skipped {
        out(format!(
            "skipped   servers[{}] {}: {}",
            s.index,
            t(s.server.as_deref().unwrap_or("(no name)")),
            t(&s.reason)
        ));
    }
    for f in &r.failed {
        for p in &f.problems {
            let line = p.line.map(|l| format!("{l}:")).unwrap_or_default();
            out(format!(
                "failed    servers[{}] {}: {}:{line} {}: {}",
                f.index,
                t(f.server.as_deref().unwrap_or("(no name)")),
                t(&file.display().to_string()),
                if p.field.is_empty() {
                    "(entry)".to_owned()
                } else {
                    t(&p.field)
                },
                t(&p.message)
            ));
        }
    }
    out(format!(
        "{} imported, {} unchanged, {} skipped, {} failed",
        r.imported.len(),
        r.unchanged.len(),
        r.skipped.len(),
        r.failed.len()
    ));
}

async fn admin_cmd(store: &hub_server::store::Store, cmd: AdminCommand) -> anyhow::Result<()> {
    match cmd {
        AdminCommand::CreateUser {
            name,
            admin: is_admin,
            password_stdin,
            no_namespace,
            json,
        } => {
            let pw = if password_stdin {
                Some(read_stdin_line()?)
            } else {
                None
            };
            let c = admin::create_user(store, &name, pw.as_deref(), is_admin, no_namespace).await?;
            if json {
                out(json!({
                    "user": c.user.name, "admin": c.user.is_admin, "namespace": c.namespace,
                    "token": c.token.expose(), "token_id": c.token_row.id,
                    "scopes": c.token_row.scopes.split(',').collect::<Vec<_>>(),
                }));
            } else {
                eprintln!(
                    "created user `{}`{}; their first API token (shown once):",
                    c.user.name,
                    c.namespace
                        .as_deref()
                        .map(|n| format!(" and namespace `{n}`"))
                        .unwrap_or_default()
                );
                out(c.token.expose());
            }
        }
        AdminCommand::ListUsers { json } => {
            let users = store.list_users().await?;
            if json {
                out(serde_json::to_string(&users)?);
            } else {
                for u in users {
                    out(format!(
                        "{}{}{}",
                        u.name,
                        if u.is_admin { " (admin)" } else { "" },
                        if u.disabled { " (disabled)" } else { "" }
                    ));
                }
            }
        }
        AdminCommand::SetPassword { name } => {
            let pw = read_stdin_line()?;
            let h = hub_server::auth::hash_password(&pw).map_err(anyhow::Error::msg)?;
            store
                .update_user(
                    &hub_server::store::Actor::operator(),
                    &name.to_ascii_lowercase(),
                    Some(Some(&h)),
                    None,
                    None,
                )
                .await?;
        }
        AdminCommand::SetAdmin { name, admin: a } => {
            store
                .update_user(
                    &hub_server::store::Actor::operator(),
                    &name.to_ascii_lowercase(),
                    None,
                    Some(a),
                    None,
                )
                .await?;
        }
        AdminCommand::DisableUser { name, enable } => {
            store
                .update_user(
                    &hub_server::store::Actor::operator(),
                    &name.to_ascii_lowercase(),
                    None,
                    None,
                    Some(!enable),
                )
                .await?;
        }
        AdminCommand::CreateToken {
            user,
            name,
            scopes,
            namespaces,
            expires_in_days,
            json,
        } => {
            let u = admin::user(store, &user).await?;
            let pats: Vec<String> = namespaces
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect();
            let (secret, row) = admin::create_token(
                store,
                &u,
                &name,
                &admin::scopes(&scopes)?,
                &pats,
                expires_in_days,
            )
            .await?;
            if json {
                out(json!({"token": secret.expose(), "token_id": row.id, "user": u.name}));
            } else {
                eprintln!("token {} for `{}` (shown once):", row.id, u.name);
                out(secret.expose());
            }
        }
        AdminCommand::ListTokens { user, json } => {
            let u = admin::user(store, &user).await?;
            let tokens = store.list_tokens(u.id).await?;
            if json {
                out(serde_json::to_string(&tokens)?);
            } else {
                for t in tokens {
                    out(format!(
                        "{}\t{}\t{}\t{}{}",
                        t.id,
                        t.name,
                        t.scopes,
                        t.namespaces,
                        if t.revoked_at.is_some() {
                            "\trevoked"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        AdminCommand::RevokeToken { id } => {
            anyhow::ensure!(
                store
                    .revoke_token(&hub_server::store::Actor::operator(), None, id)
                    .await?,
                "no token {id}"
            );
        }
        AdminCommand::CreateNamespace { name, owner } => {
            admin::create_namespace(store, &name, &owner).await?;
        }
        AdminCommand::SetMember {
            namespace,
            user,
            role,
        } => {
            admin::set_member(store, &namespace, &user, &role).await?;
        }
        AdminCommand::Delete { name, version } => {
            anyhow::ensure!(
                admin::delete(store, &name, version.as_deref()).await?,
                "nothing to delete"
            );
        }
        AdminCommand::Audit {
            target,
            limit,
            json,
        } => {
            let rows = store
                .audit_log(target.as_deref(), limit.clamp(1, 10_000))
                .await?;
            if json {
                out(serde_json::to_string(&rows)?);
            } else {
                for r in rows {
                    out(format!(
                        "{}\t{}\t{}\t{}\t{}",
                        r.at,
                        r.user_name.unwrap_or_default(),
                        r.action,
                        r.target,
                        r.detail.unwrap_or_default()
                    ));
                }
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Everything the hub writes (the SQLite database with password hashes, blobs, staged
    // uploads, the search index) is for the hub alone: 0700 directories, 0600 files.
    hub_server::private_files();
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
