//! Namespaces (the `publisher` part of names), their members and their publisher keys, and
//! the authorization decision inside a namespace.

use index_schema::envelope::PublicKey;
use index_schema::hub_api::{KeyList, NamespaceInfo};
use index_schema::name::check_publisher;

use crate::accounts::actor;
use crate::auth::{Principal, Role, Scope};
use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::hub::Hub;
use crate::store::{KeyRow, Namespace, StoreError};

/// A namespace by name (any case), or 404 `namespace_not_found`.
pub async fn find(hub: &Hub, name: &str) -> CoreResult<Namespace> {
    let name = name.to_ascii_lowercase();
    hub.store.namespace(&name).await?.ok_or_else(|| {
        CoreError::not_found(
            ErrorCode::NamespaceNotFound,
            format!("no namespace `{name}`"),
        )
    })
}

/// Checks `scope` for `principal` in `ns` (its token, and its user's role there).
pub async fn authorize(
    hub: &Hub,
    principal: &Principal,
    scope: Scope,
    ns: &Namespace,
) -> CoreResult<()> {
    let role = hub
        .store
        .role(ns.id, principal.user_id)
        .await?
        .and_then(|r| Role::parse(&r));
    Ok(principal.authorize(scope, &ns.name, role)?)
}

/// A namespace, its members and its keys.
pub async fn info(hub: &Hub, name: &str) -> CoreResult<NamespaceInfo> {
    let ns = find(hub, name).await?;
    Ok(NamespaceInfo {
        members: hub.store.members(ns.id).await?,
        keys: hub.store.keys(ns.id).await?,
        domain: hub.store.domain(ns.id).await?,
        name: ns.name,
        created_at: ns.created_at,
    })
}

/// Creates namespace `name` owned by the caller. A user may create at most
/// `max_namespaces_per_user` (administrators are not limited): the quotas apply per namespace.
pub async fn create(hub: &Hub, p: &Principal, name: &str) -> CoreResult<NamespaceInfo> {
    let name = check_publisher(name)
        .map_err(|e| CoreError::invalid(ErrorCode::InvalidName, e.to_string()))?;
    if let Some(reserved) = crate::lookalike::reserved_lookalike(&name) {
        return Err(CoreError::invalid(
            ErrorCode::NamespaceLookalike,
            format!(
                "namespace `{name}` looks like the reserved name `{reserved}` (case, `-`/`_`, \
                 0/o, 1/l/i, rn/m and vv/w are read alike); choose another name"
            ),
        ));
    }
    // Creating is owning: the token must be allowed to manage members there.
    p.authorize(Scope::ManageMembers, &name, Some(Role::Owner))?;
    let limit = (!p.acts_as_admin()).then_some(hub.config.max_namespaces_per_user);
    hub.store
        .create_namespace(&actor(p), &name, p.user_id, limit)
        .await
        .map_err(|e| match e {
            StoreError::Conflict(m) => CoreError::conflict(ErrorCode::NamespaceExists, m),
            other => other.into(),
        })?;
    info(hub, &name).await
}

fn last_owner(e: StoreError) -> CoreError {
    match e {
        StoreError::Conflict(m) => CoreError::conflict(ErrorCode::LastOwner, m),
        other => other.into(),
    }
}

/// Adds `user` to namespace `namespace` with `role`, or changes their role; the namespace as
/// it is then.
pub async fn set_member(
    hub: &Hub,
    p: &Principal,
    namespace: &str,
    user: &str,
    role: &str,
) -> CoreResult<NamespaceInfo> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    let role = Role::parse(role).ok_or_else(|| {
        CoreError::invalid(
            ErrorCode::InvalidRole,
            format!("unknown role `{role}`; roles: owner, maintainer, publisher"),
        )
    })?;
    let user = user.to_ascii_lowercase();
    let u = hub.store.user_by_name(&user).await?.ok_or_else(|| {
        CoreError::not_found(ErrorCode::UserNotFound, format!("no user `{user}`"))
    })?;
    hub.store
        .set_member(&actor(p), &ns, u.id, &u.name, role.as_str())
        .await
        .map_err(last_owner)?;
    info(hub, &ns.name).await
}

/// Removes `user` from namespace `namespace`.
pub async fn remove_member(
    hub: &Hub,
    p: &Principal,
    namespace: &str,
    user: &str,
) -> CoreResult<()> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageMembers, &ns).await?;
    let user = user.to_ascii_lowercase();
    let not_member = || {
        CoreError::not_found(
            ErrorCode::MemberNotFound,
            format!("`{user}` is not a member"),
        )
    };
    let u = hub
        .store
        .user_by_name(&user)
        .await?
        .ok_or_else(not_member)?;
    if hub
        .store
        .remove_member(&actor(p), &ns, u.id, &u.name)
        .await
        .map_err(last_owner)?
    {
        Ok(())
    } else {
        Err(not_member())
    }
}

/// The namespace's publisher keys, revoked ones included.
pub async fn keys(hub: &Hub, namespace: &str) -> CoreResult<KeyList> {
    let ns = find(hub, namespace).await?;
    Ok(KeyList {
        keys: hub.store.keys(ns.id).await?,
    })
}

/// Registers the ed25519 key `public_key` for namespace `namespace`.
pub async fn add_key(
    hub: &Hub,
    p: &Principal,
    namespace: &str,
    public_key: &str,
) -> CoreResult<KeyRow> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageKeys, &ns).await?;
    let key = PublicKey::parse(public_key.trim())
        .map_err(|e| CoreError::invalid(ErrorCode::InvalidKey, e.to_string()))?;
    let key_id = key.key_id().to_string();
    hub.store
        .add_key(&actor(p), &ns, &key_id, &key.to_string(), p.user_id)
        .await
        .map_err(|e| match e {
            StoreError::Conflict(m) => CoreError::conflict(ErrorCode::KeyExists, m),
            other => other.into(),
        })?;
    hub.store
        .keys(ns.id)
        .await?
        .into_iter()
        .find(|k| k.key_id == key_id)
        .ok_or_else(|| CoreError::internal("key vanished"))
}

/// Revokes key `key_id` of namespace `namespace`: it signs nothing new; versions it signed
/// stay and show the revocation.
pub async fn revoke_key(hub: &Hub, p: &Principal, namespace: &str, key_id: &str) -> CoreResult<()> {
    let ns = find(hub, namespace).await?;
    authorize(hub, p, Scope::ManageKeys, &ns).await?;
    if hub
        .store
        .revoke_key(&actor(p), &ns, key_id, Some(p.user_id))
        .await?
    {
        Ok(())
    } else {
        Err(CoreError::not_found(
            ErrorCode::KeyNotFound,
            format!("namespace `{}` has no key `{key_id}`", ns.name),
        ))
    }
}
