//! Namespaces (the `publisher` part of names), their members and their publisher keys.

use serde::{Deserialize, Serialize};

/// `POST /api/v1/namespaces`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateNamespaceRequest {
    /// `[a-z0-9][a-z0-9_-]{0,63}`, compared case-insensitively, not reserved.
    pub name: String,
}

/// A member of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Member {
    /// User name.
    pub user: String,
    /// `owner`, `maintainer` or `publisher`.
    pub role: String,
    /// Unix ms.
    pub added_at: i64,
}

/// A publisher key of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Key {
    /// Key id (hex).
    pub key_id: String,
    /// `ed25519:<base64>`.
    pub public_key: String,
    /// Who registered it.
    pub added_by: String,
    /// Unix ms.
    pub added_at: i64,
    /// Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Who revoked it.
    pub revoked_by: Option<String>,
}

/// A namespace with its members and keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NamespaceInfo {
    /// Name.
    pub name: String,
    /// Unix ms.
    pub created_at: i64,
    /// Members.
    #[serde(default)]
    pub members: Vec<Member>,
    /// Keys, revoked ones included.
    #[serde(default)]
    pub keys: Vec<Key>,
}

/// `PUT /api/v1/namespaces/{namespace}/members/{user}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetMemberRequest {
    /// `owner`, `maintainer` or `publisher`.
    pub role: String,
}

/// `POST /api/v1/namespaces/{namespace}/keys`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddKeyRequest {
    /// `ed25519:<base64 of 32 bytes>`.
    pub public_key: String,
}

/// `GET /api/v1/namespaces/{namespace}/keys`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyList {
    /// Oldest first.
    #[serde(default)]
    pub keys: Vec<Key>,
}
