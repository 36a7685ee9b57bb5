//! `ofc key register|list|revoke`: the publisher keys of a namespace on the hub
//! (`/api/v1/namespaces/{ns}/keys`). The hub accepts a publish only when an active key of the
//! namespace signed it.

use anyhow::Result;
use clap::Subcommand;
use index_schema::hub_api::{AddKeyRequest, ErrorCode};
use index_schema::name::check_publisher;
use serde_json::json;

use crate::config::Paths;
use crate::hub::{self, Hub};
use crate::keys;
use crate::output::{self, ExitStatus, Output, UserError};

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

/// Runs the verb.
pub fn run(cmd: &KeyCommand, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let hub = Hub::from_env(&paths)?;
    let rt = hub::runtime()?;
    match cmd {
        KeyCommand::Register(args) => rt.block_on(register(&paths, &hub, args, out)),
        KeyCommand::List(args) => rt.block_on(list(&hub, args, out)),
        KeyCommand::Revoke(args) => rt.block_on(revoke(&hub, args, out)),
    }
}

/// The namespace given (checked), else the caller's own.
async fn namespace(hub: &Hub, given: Option<&str>, what: &str) -> Result<String> {
    if let Some(ns) = given {
        return check_publisher(ns).map_err(|e| {
            UserError::new(format!("invalid namespace `{ns}`: {e}"))
                .hint("a namespace is a publisher name such as `acme`")
                .into()
        });
    }
    hub.require_token(what)?;
    hub::default_namespace(&hub.me().await?)
}

async fn register(
    paths: &Paths,
    hub: &Hub,
    args: &KeyRegisterArgs,
    out: &mut Output,
) -> Result<ExitStatus> {
    // The public key comes from the secret key itself, so what is registered is what signs.
    let public = keys::load(paths, &args.key)?.public_key();
    hub.require_token("registering a key")?;
    let ns = namespace(hub, args.namespace.as_deref(), "registering a key").await?;
    let req = AddKeyRequest {
        public_key: public.to_string(),
    };
    let row = match hub.add_key(&ns, &req).await {
        Ok(row) => row,
        Err(e) => {
            return Err(hub::refused(
                e,
                format!("cannot register key `{}` for `{ns}`", args.key),
                |he| match he.code {
                    Some(ErrorCode::KeyExists) => {
                        vec![format!("it is registered already; see `ofc key list {ns}`")]
                    }
                    Some(ErrorCode::NamespaceNotFound) => {
                        vec!["check the name, or pass --namespace".to_string()]
                    }
                    _ if he.status.as_u16() == 403 => vec![format!(
                        "registering keys needs the `manage-keys` scope and the owner role in `{ns}`"
                    )],
                    _ => Vec::new(),
                },
            ));
        }
    };
    if out.json {
        out.json_value(&json!({
            "namespace": ns,
            "key": args.key,
            "keyId": row.key_id,
            "publicKey": row.public_key,
            "addedAt": row.added_at,
        }));
    } else {
        out.data(&format!(
            "registered key {} (`{}`) for namespace {ns}",
            row.key_id, args.key
        ));
        out.status(&format!(
            "the hub now accepts agents of `{ns}` signed with it; publish with `ofc publish --key {}`",
            args.key
        ));
    }
    Ok(ExitStatus::Success)
}

async fn list(hub: &Hub, args: &KeyListArgs, out: &mut Output) -> Result<ExitStatus> {
    let ns = namespace(hub, args.namespace.as_deref(), "finding your namespace").await?;
    let listed = hub.keys(&ns).await.map_err(|e| {
        hub::refused(
            e,
            format!("cannot list the keys of `{ns}`"),
            |he| match he.code {
                Some(ErrorCode::NamespaceNotFound) => {
                    vec!["check the namespace's name".to_string()]
                }
                _ => Vec::new(),
            },
        )
    })?;
    if out.json {
        let keys: Vec<_> = listed
            .keys
            .iter()
            .map(|k| {
                json!({
                    "keyId": k.key_id,
                    "publicKey": k.public_key,
                    "addedBy": k.added_by,
                    "addedAt": k.added_at,
                    "revokedAt": k.revoked_at,
                    "revokedBy": k.revoked_by,
                })
            })
            .collect();
        out.json_value(&json!({ "namespace": ns, "keys": keys }));
        return Ok(ExitStatus::Success);
    }
    if listed.keys.is_empty() {
        out.status(&format!("namespace `{ns}` has no keys"));
        out.hints(&["create one with `ofc keygen`, then `ofc key register`"]);
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<Vec<String>> = listed
        .keys
        .iter()
        .map(|k| {
            vec![
                k.key_id.clone(),
                output::format_time_ms(k.added_at),
                k.revoked_at
                    .map(output::format_time_ms)
                    .unwrap_or_else(|| "-".into()),
                k.added_by.clone(),
            ]
        })
        .collect();
    for line in output::table(&["KEY ID", "CREATED", "REVOKED", "ADDED BY"], &rows) {
        out.data(&line);
    }
    Ok(ExitStatus::Success)
}

async fn revoke(hub: &Hub, args: &KeyRevokeArgs, out: &mut Output) -> Result<ExitStatus> {
    let id = args.key_id.trim().to_ascii_lowercase();
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(UserError::new(format!(
            "invalid key id `{}`: a key id is 32 hex digits",
            args.key_id
        ))
        .hint("`ofc key list` shows the ids")
        .into());
    }
    hub.require_token("revoking a key")?;
    let ns = namespace(hub, args.namespace.as_deref(), "revoking a key").await?;
    hub.revoke_key(&ns, &id).await.map_err(|e| {
        hub::refused(
            e,
            format!("cannot revoke key {id} of `{ns}`"),
            |he| match he.status.as_u16() {
                404 => vec![format!("`ofc key list {ns}` shows the namespace's keys")],
                403 => vec![format!(
                    "revoking keys needs the `manage-keys` scope and the owner role in `{ns}`"
                )],
                _ => Vec::new(),
            },
        )
    })?;
    if out.json {
        out.json_value(&json!({ "namespace": ns, "keyId": id, "revoked": true }));
    } else {
        out.data(&format!("revoked key {id} of namespace {ns}"));
        out.status("it signs nothing new; versions it signed stay and show the revocation");
    }
    Ok(ExitStatus::Success)
}
