//! Operator verbs behind `ofc-hub admin …` and `ofc-hub import …`, as library functions (the
//! CLI and the tests call them). They act as the operator (the audit log says so), with no token
//! and no namespace rules: the operator runs the hub.

use index_schema::name::{AgentName, check_publisher};

use crate::auth::{
    Principal, Role, Scope, Secret, TOKEN_PREFIX, check_pattern, generate_token, hash_password,
    hash_token, parse_scopes,
};
use crate::hub::Hub;
use crate::import::{ImportReport, mcp_registry};
use crate::store::{Actor, AuditRow, LogVerifyReport, Store, TokenRow, User, now_ms};

/// A user created by [`create_user`] and their first token (shown once).
#[derive(Debug)]
pub struct CreatedUser {
    /// The user.
    pub user: User,
    /// Whether a namespace of the same name was created.
    pub namespace: Option<String>,
    /// First token secret.
    pub token: Secret,
    /// First token.
    pub token_row: TokenRow,
}

/// Creates a user, a namespace of the same name (unless `no_namespace`) and a first token with
/// every scope (but `admin` unless the user is an administrator), valid for `*`.
pub async fn create_user(
    store: &Store,
    name: &str,
    password: Option<&str>,
    is_admin: bool,
    no_namespace: bool,
) -> anyhow::Result<CreatedUser> {
    let name = check_publisher(name)?;
    let hash = match password {
        Some(p) => Some(hash_password(p).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let actor = Actor::operator();
    let user = store
        .create_user(&actor, &name, hash.as_deref(), is_admin, !no_namespace)
        .await?;
    let scopes: Vec<Scope> = Scope::ALL
        .into_iter()
        .filter(|s| is_admin || *s != Scope::Admin)
        .collect();
    let (token, token_row) =
        create_token(store, &user, "first token", &scopes, &["*".into()], None).await?;
    Ok(CreatedUser {
        namespace: (!no_namespace).then(|| name.clone()),
        user,
        token,
        token_row,
    })
}

/// Creates an API token for a user.
pub async fn create_token(
    store: &Store,
    user: &User,
    name: &str,
    scopes: &[Scope],
    namespaces: &[String],
    expires_in_days: Option<u32>,
) -> anyhow::Result<(Secret, TokenRow)> {
    if scopes.contains(&Scope::Admin) && !user.is_admin {
        anyhow::bail!(
            "`{}` is not an administrator, so cannot have the admin scope",
            user.name
        );
    }
    for p in namespaces {
        check_pattern(p).map_err(anyhow::Error::msg)?;
    }
    let secret = generate_token(TOKEN_PREFIX);
    let row = store
        .create_token(
            &Actor::operator(),
            user.id,
            name,
            &hash_token(secret.expose()),
            &scopes
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(","),
            &namespaces.join(","),
            expires_in_days.map(|d| now_ms() + i64::from(d) * 86_400_000),
        )
        .await?;
    Ok((secret, row))
}

/// A user by name or an error saying there is none.
pub async fn user(store: &Store, name: &str) -> anyhow::Result<User> {
    let name = name.to_ascii_lowercase();
    store
        .user_by_name(&name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no user `{name}`"))
}

/// Parses `a,b,c` scopes.
pub fn scopes(list: &str) -> anyhow::Result<Vec<Scope>> {
    parse_scopes(
        &list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>(),
    )
    .map_err(anyhow::Error::msg)
}

/// Creates a namespace owned by a user.
pub async fn create_namespace(store: &Store, name: &str, owner: &str) -> anyhow::Result<()> {
    let name = check_publisher(name)?;
    let u = user(store, owner).await?;
    store
        .create_namespace(&Actor::operator(), &name, u.id, None)
        .await?;
    Ok(())
}

/// Adds a member to a namespace or changes their role.
pub async fn set_member(
    store: &Store,
    ns: &str,
    user_name: &str,
    role: &str,
) -> anyhow::Result<()> {
    let role = Role::parse(role).ok_or_else(|| anyhow::anyhow!("unknown role `{role}`"))?;
    let ns = store
        .namespace(&ns.to_ascii_lowercase())
        .await?
        .ok_or_else(|| anyhow::anyhow!("no namespace `{ns}`"))?;
    let u = user(store, user_name).await?;
    store
        .set_member(&Actor::operator(), &ns, u.id, &u.name, role.as_str())
        .await?;
    Ok(())
}

/// Deletes an agent, or one version of it.
pub async fn delete(store: &Store, name: &str, version: Option<&str>) -> anyhow::Result<bool> {
    let name = AgentName::parse(name)?;
    let actor = Actor::operator();
    match version {
        None => Ok(store.delete_agent(&actor, &name.to_string()).await?),
        Some(v) => {
            let Some(a) = store.agent(&name.to_string()).await? else {
                return Ok(false);
            };
            Ok(store.delete_version(&actor, &a, v).await?)
        }
    }
}

/// Every user, by name.
pub async fn list_users(store: &Store) -> anyhow::Result<Vec<User>> {
    Ok(store.list_users().await?)
}

/// Sets the password of user `name`.
pub async fn set_password(store: &Store, name: &str, password: &str) -> anyhow::Result<()> {
    let h = hash_password(password).map_err(anyhow::Error::msg)?;
    store
        .update_user(
            &Actor::operator(),
            &name.to_ascii_lowercase(),
            Some(Some(&h)),
            None,
            None,
        )
        .await?;
    Ok(())
}

/// Grants or takes hub administration.
pub async fn set_admin(store: &Store, name: &str, admin: bool) -> anyhow::Result<()> {
    store
        .update_user(
            &Actor::operator(),
            &name.to_ascii_lowercase(),
            None,
            Some(admin),
            None,
        )
        .await?;
    Ok(())
}

/// Disables (or re-enables) a user.
pub async fn set_disabled(store: &Store, name: &str, disabled: bool) -> anyhow::Result<()> {
    store
        .update_user(
            &Actor::operator(),
            &name.to_ascii_lowercase(),
            None,
            None,
            Some(disabled),
        )
        .await?;
    Ok(())
}

/// A user's tokens, newest first.
pub async fn list_tokens(store: &Store, user_name: &str) -> anyhow::Result<Vec<TokenRow>> {
    let u = user(store, user_name).await?;
    Ok(store.list_tokens(u.id).await?)
}

/// Revokes a token by id; false when there is none.
pub async fn revoke_token(store: &Store, id: i64) -> anyhow::Result<bool> {
    Ok(store.revoke_token(&Actor::operator(), None, id).await?)
}

/// The newest `limit` (1 to 10,000) audit entries, of targets starting with `target`.
pub async fn audit(
    store: &Store,
    target: Option<&str>,
    limit: i64,
) -> anyhow::Result<Vec<AuditRow>> {
    Ok(store.audit_log(target, limit.clamp(1, 10_000)).await?)
}

/// `ofc-hub log verify`: the whole log recomputed and compared with the tables.
pub async fn log_verify(store: &Store) -> anyhow::Result<LogVerifyReport> {
    Ok(store.log_verify().await?)
}

/// Imports a dump of the MCP Registry's list API into `namespace` (see [`crate::import`]),
/// publishing as `as_user` (by default the namespace's first owner, by name) through an API
/// token made for this import (scopes `publish-new`, `publish-update`, this namespace only, one
/// day) and revoked when it ends, and signing with `key`, which must be an active key of the
/// namespace.
pub async fn import_mcp_registry(
    hub: &Hub,
    text: &str,
    namespace: &str,
    key: &index_schema::envelope::SecretKey,
    as_user: Option<&str>,
    registry: &str,
) -> anyhow::Result<ImportReport> {
    let store = &hub.store;
    let ns_name = namespace.to_ascii_lowercase();
    let ns = store
        .namespace(&ns_name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no namespace `{ns_name}`"))?;
    let key_id = key.key_id().to_string();
    let active = store
        .keys(ns.id)
        .await?
        .into_iter()
        .any(|k| k.key_id == key_id && k.revoked_at.is_none());
    anyhow::ensure!(
        active,
        "key {key_id} is not an active key of `{ns_name}`; register its public key for the namespace first (`ofc key register`)"
    );
    let user_name = match as_user {
        Some(u) => u.to_string(),
        None => store
            .members(ns.id)
            .await?
            .into_iter()
            .find(|m| m.role == Role::Owner.as_str())
            .map(|m| m.user)
            .ok_or_else(|| anyhow::anyhow!("`{ns_name}` has no owner; name a member with --as"))?,
    };
    let u = user(store, &user_name).await?;
    let scopes = [Scope::PublishNew, Scope::PublishUpdate];
    let (_secret, row) = create_token(
        store,
        &u,
        "mcp-registry import",
        &scopes,
        std::slice::from_ref(&ns_name),
        Some(1),
    )
    .await?;
    let principal = Principal {
        user_id: u.id,
        user_name: u.name.clone(),
        is_admin: u.is_admin,
        token_id: row.id,
        scopes: scopes.to_vec(),
        namespaces: vec![ns_name.clone()],
        expires_at: row.expires_at,
        trusted: None,
    };
    let report = mcp_registry(hub, &principal, key, &ns_name, registry, text).await;
    store.revoke_token(&Actor::operator(), None, row.id).await?;
    report
}
