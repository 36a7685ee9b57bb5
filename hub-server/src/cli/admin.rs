//! `ofc-hub admin`: the operator's verbs, through the core's ([`hub_core::admin`]).

use std::io::Read as _;

use clap::Subcommand;
use hub_core::admin;
use hub_core::start::open_store;
use hub_core::store::Store;
use serde_json::json;

use super::output::out;
use super::settings::{Global, config};

#[derive(Subcommand, Debug)]
pub(crate) enum AdminCommand {
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
    /// Take a version down (it stays a tombstone: its URLs answer 410 naming the reason class,
    /// the log gets a `remove` entry, its number is never published again).
    Takedown {
        /// `publisher/agent@version`.
        #[arg(value_name = "NAME@VERSION")]
        target: String,
        /// The reason class: malware, legal, security, abuse or policy.
        #[arg(long, value_name = "CLASS")]
        reason: String,
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

/// Runs an `ofc-hub admin` verb (safe while the hub serves the same data).
pub(crate) async fn run(global: &Global, cmd: AdminCommand) -> anyhow::Result<()> {
    let cfg = config(global, None)?;
    let store = open_store(&cfg).await?;
    let r = admin_cmd(&store, cmd).await;
    store.db().close().await;
    r
}

fn read_stdin_line() -> anyhow::Result<String> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s)?;
    let s = s.trim_end_matches(['\n', '\r']).to_string();
    anyhow::ensure!(!s.is_empty(), "no password on standard input");
    Ok(s)
}

async fn admin_cmd(store: &Store, cmd: AdminCommand) -> anyhow::Result<()> {
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
            let users = admin::list_users(store).await?;
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
            admin::set_password(store, &name, &pw).await?;
        }
        AdminCommand::SetAdmin { name, admin: a } => {
            admin::set_admin(store, &name, a).await?;
        }
        AdminCommand::DisableUser { name, enable } => {
            admin::set_disabled(store, &name, !enable).await?;
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
            let tokens = admin::list_tokens(store, &user).await?;
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
            anyhow::ensure!(admin::revoke_token(store, id).await?, "no token {id}");
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
        AdminCommand::Takedown { target, reason } => {
            let Some((name, version)) = target.split_once('@') else {
                anyhow::bail!("`{target}`: give the version to take down as NAME@VERSION");
            };
            let index = hub_core::lifecycle::takedown(store, name, version, &reason).await?;
            out(format!(
                "took down {name}@{version} ({reason}); tombstone at log entry {index}"
            ));
        }
        AdminCommand::Audit {
            target,
            limit,
            json,
        } => {
            let rows = admin::audit(store, target.as_deref(), limit).await?;
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
